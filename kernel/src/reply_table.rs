//! A server's reply table: one-shot handles for the calls it has received
//! and not yet answered (the reply half of Ridge OS's planned synchronous
//! call, seed 001 §8).
//!
//! A handle is `index | generation << 32`; every use bumps the entry's
//! generation, so a handle works exactly once and a forged or stale one is
//! refused with [`Error::BadReplyHandle`]. The table knows nothing of
//! processes beyond the caller's pid: the message system (ipc.rs) decides
//! when to insert, answer and forget.

use abi::{Error, Pid};
use alloc::vec::Vec;

/// A server's outstanding calls. Handle = index | generation << 32; each
/// use bumps the generation, so a handle works once and a forged or stale
/// one is refused.
///
/// Entry 0 lives in the table itself (in the process slot) and the others
/// on the heap: a server answering one call at a time never reaches the
/// heap, which under QEMU is one page fewer to walk after each CR3 write.
pub struct ReplyTable {
    first: ReplyEntry,
    /// Entries 1, 2, …
    rest: Vec<ReplyEntry>,
    /// Entries with a caller: `is_empty` without a scan.
    outstanding: usize,
}

#[derive(Clone, Copy)]
struct ReplyEntry {
    caller: Option<Pid>,
    generation: u32,
    /// The generation of the handle whose caller died while the server
    /// held it ([`ReplyTable::caller_died`]), 0 for none: that handle is
    /// answered `DeadPeer`, as it was while the entry still held it,
    /// until the entry is reused.
    gone: u32,
}

const FRESH_ENTRY: ReplyEntry = ReplyEntry { caller: None, generation: 1, gone: 0 };

impl ReplyTable {
    pub const fn new() -> ReplyTable {
        ReplyTable { first: FRESH_ENTRY, rest: Vec::new(), outstanding: 0 }
    }

    #[inline(always)]
    fn entry_mut(&mut self, index: usize) -> Option<&mut ReplyEntry> {
        if index == 0 { Some(&mut self.first) } else { self.rest.get_mut(index - 1) }
    }

    fn entries_mut(&mut self) -> impl Iterator<Item = &mut ReplyEntry> {
        core::iter::once(&mut self.first).chain(self.rest.iter_mut())
    }

    pub fn insert(&mut self, caller: Pid, limit: usize) -> Result<u64, Error> {
        if let Some(handle) = self.insert_in_place(caller) {
            return Ok(handle);
        }
        if 1 + self.rest.len() >= limit {
            return Err(Error::LimitReached);
        }
        self.rest.try_reserve(1).map_err(|_| Error::OutOfResources)?;
        self.rest.push(FRESH_ENTRY);
        self.insert_in_place(caller).ok_or(Error::LimitReached)
    }

    /// [`ReplyTable::insert`] without growing the table: `None` when no
    /// slot is free (the caller then takes the general path, which grows
    /// it up to its limit).
    #[inline(always)]
    pub fn insert_in_place(&mut self, caller: Pid) -> Option<u64> {
        // The lowest free entry; entry 0 first, without a scan (the steady
        // state of a server answering one call at a time).
        let index = if self.first.caller.is_none() {
            0
        } else {
            1 + self.rest.iter().position(|e| e.caller.is_none())?
        };
        let entry = self.entry_mut(index)?;
        entry.caller = Some(caller);
        entry.gone = 0;
        let generation = entry.generation;
        self.outstanding += 1;
        Some(index as u64 | (generation as u64) << 32)
    }

    #[inline(always)]
    pub fn peek(&self, handle: u64) -> Result<Pid, Error> {
        let index = (handle & 0xffff_ffff) as usize;
        let entry = if index == 0 { Some(&self.first) } else { self.rest.get(index - 1) };
        match entry {
            Some(&ReplyEntry { caller: Some(caller), generation, .. })
                if generation as u64 == handle >> 32 =>
            {
                Ok(caller)
            }
            Some(&ReplyEntry { caller: None, gone, .. }) if gone != 0 && gone as u64 == handle >> 32 => {
                Err(Error::DeadPeer)
            }
            _ => Err(Error::BadReplyHandle),
        }
    }

    pub fn take(&mut self, handle: u64) -> Result<Pid, Error> {
        let caller = self.peek(handle)?;
        self.use_up(handle);
        Ok(caller)
    }

    /// Drop every handle of calls from `caller` (it will never read the answer).
    pub fn forget_caller(&mut self, caller: Pid) {
        let mut dropped = 0;
        for e in self.entries_mut() {
            if e.caller == Some(caller) {
                e.caller = None;
                e.generation = e.generation.wrapping_add(1).max(1);
                dropped += 1;
            }
        }
        self.outstanding -= dropped;
    }

    /// `caller` has ended: free the entries of its calls, so that they no
    /// longer count against the server's limit, and remember their handles
    /// so that an answer or a lease on one is still refused with
    /// `DeadPeer` (until the entry is reused: then `BadReplyHandle`).
    pub fn caller_died(&mut self, caller: Pid) {
        let mut dropped = 0;
        for e in self.entries_mut() {
            if e.caller == Some(caller) {
                e.caller = None;
                e.gone = e.generation;
                e.generation = e.generation.wrapping_add(1).max(1);
                dropped += 1;
            }
        }
        self.outstanding -= dropped;
    }

    /// Use up a handle that [`ReplyTable::peek`] accepted.
    #[inline(always)]
    pub fn use_up(&mut self, handle: u64) {
        if let Some(entry) = self.entry_mut((handle & 0xffff_ffff) as usize)
            && entry.caller.take().is_some()
        {
            entry.generation = entry.generation.wrapping_add(1).max(1);
            self.outstanding -= 1;
        }
    }

    /// No call is waiting for an answer.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.outstanding == 0
    }

    pub fn clear(&mut self) {
        *self = ReplyTable::new();
    }
}

impl Default for ReplyTable {
    fn default() -> Self {
        ReplyTable::new()
    }
}
