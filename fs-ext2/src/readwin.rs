//! Read windows, the manager's side (`protocols::unix::read_window`): the
//! pages this volume's manager shares with its client processes, the slot
//! of each windowed handle in them (its offset and its file's change
//! generation), and the generations themselves.
//!
//! A reader that has a slot fetches a window of the file (`io::OP_PREAD`,
//! whose reply carries the generation) into its own memory and serves the
//! reads that follow from there with no call, for as long as the slot's
//! generation word still holds the window's generation. So every change
//! to a file's data or size must reach [`ReadWindows::changed`] before
//! the request that made it is answered (POSIX: a `read` that starts after
//! a `write` returned sees it), and the handle's offset lives in the slot
//! (one offset for every descriptor sharing the open file, dup and fork),
//! which the service takes ([`ReadWindows::take_offset`]) before and puts
//! back ([`ReadWindows::set_offset`]) after each request on the handle.
//! Taking it sets `read_window::OFFSET_BUSY` in the word in the same
//! atomic step, so a reader's compare-and-swap from the offset the
//! manager took fails until the manager has put the new one back: a
//! request and a windowed read never both start from one offset (POSIX
//! XSH 2.9.7; before, the manager's plain store after its work lost a
//! reader's move made meanwhile and both read the same bytes).
//!
//! What it is not: the mapping itself (the server maps a page with
//! `page_resolve` at the address the client names, and answers the page
//! faults of its region), nor the client's logic (`runtime::unix::readwin`).
//!
//! # Invariants
//! - The manager never leaves `OFFSET_BUSY` set: every `take_offset` is
//!   followed by a `set_offset` before the request is answered.
//! - One page per client process (kernel pid), so what a client writes in
//!   its page reaches only its own slots: an offset read from a page is
//!   clamped to `0..=i64::MAX` (the range `lseek` keeps), a generation in
//!   a page is never read back (the service answers from its own copy).
//! - A page is given to another process only when it holds no slot and no
//!   other process maps it any more (the kernel's `page_owners`, asked
//!   through the `still_mapped` the caller passes): a frame a dead client
//!   mapped is never reused while a fork child of it still maps it.
//! - A slot's generation is never 0 (the first is 1 and each change adds
//!   one): 0 is what the page reads after this manager died (the kernel
//!   zeroes a dead pager's read-window pages), and a reader never serves
//!   a window against it.
//! - At most [`MAX_PAGES`] pages and `read_window::SLOTS` slots in each:
//!   past them `ENOSPC`, and the client reads with plain calls.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use protocols::unix::Errno;
use protocols::unix::errno::{EBUSY, ENOSPC, ENOSYS};
use protocols::unix::read_window::{OFFSET_BUSY, SLOTS};

/// Most client pages one manager keeps: processes with windowed handles
/// at once (4 KiB each, allocated as they are first needed and kept).
pub const MAX_PAGES: usize = 64;

/// Largest offset a slot's word is taken to hold (`unix_core::seek`'s
/// range): a client's scribble beyond it reads as it.
pub const MAX_OFFSET_BYTES: u64 = i64::MAX as u64;

/// One shared page: `SLOTS` pairs of (offset, generation) words.
#[repr(C, align(4096))]
pub struct SlotPage {
    words: [AtomicU64; 2 * SLOTS],
}

const _: () = assert!(core::mem::size_of::<SlotPage>() == abi::layout::PAGE_SIZE as usize);
const _: () = assert!(protocols::unix::read_window::offset_word(1) == 16);
const _: () = assert!(protocols::unix::read_window::generation_word(0) == 8);

impl SlotPage {
    fn new() -> Box<SlotPage> {
        Box::new(SlotPage { words: [const { AtomicU64::new(0) }; 2 * SLOTS] })
    }

    fn offset(&self, slot: usize) -> &AtomicU64 {
        &self.words[2 * slot]
    }

    fn generation(&self, slot: usize) -> &AtomicU64 {
        &self.words[2 * slot + 1]
    }

    fn clear(&self) {
        for w in &self.words {
            w.store(0, Ordering::SeqCst);
        }
    }
}

/// A page and the process it is for.
struct ClientPage {
    owner_pid: u64,
    page: Box<SlotPage>,
    used: [bool; SLOTS],
}

impl ClientPage {
    fn address(&self) -> u64 {
        &*self.page as *const SlotPage as u64
    }

    fn slots_used(&self) -> usize {
        self.used.iter().filter(|&&u| u).count()
    }
}

/// A handle with a slot.
#[derive(Clone, Copy)]
struct Slotted {
    handle: u64,
    ino: u32,
    page: usize,
    slot: usize,
    /// The generation of the file's contents, as last published.
    generation: u64,
}

/// Counters for `kinfo` (`OP_STATS_TEXT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadWindowStats {
    pub pages: usize,
    pub slots: usize,
    /// Slot requests refused for want of a page or a slot.
    pub refused: u64,
    /// Generation bumps: changes to files with windowed handles.
    pub bumps: u64,
}

/// Every client page and slot of one manager.
pub struct ReadWindows {
    enabled: bool,
    pages: Vec<ClientPage>,
    slotted: Vec<Slotted>,
    next_generation: u64,
    refused: u64,
    bumps: u64,
}

impl ReadWindows {
    /// `enabled` false: every slot request is `ENOSYS` (the boot option
    /// `ext2.readwin=off`), and nothing else here does anything.
    pub fn new(enabled: bool) -> ReadWindows {
        ReadWindows {
            enabled,
            pages: Vec::new(),
            slotted: Vec::new(),
            next_generation: 1,
            refused: 0,
            bumps: 0,
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    pub fn stats(&self) -> ReadWindowStats {
        ReadWindowStats {
            pages: self.pages.len(),
            slots: self.slotted.len(),
            refused: self.refused,
            bumps: self.bumps,
        }
    }

    /// A slot for `handle` (open on `ino`, at `offset`) in the page of
    /// process `pid`: (slot, the page's address in this process, whether
    /// the page is new to `pid`). The same slot again for the same
    /// process; `EBUSY` when another process has it; `ENOSPC` with no page
    /// or slot left. `still_mapped(address)`: does any process but this
    /// one map that page (`page_owners` above 1)?
    pub fn assign(
        &mut self,
        pid: u64,
        handle: u64,
        ino: u32,
        offset: u64,
        still_mapped: &mut dyn FnMut(u64) -> bool,
    ) -> Result<(usize, u64), Errno> {
        if !self.enabled {
            return Err(ENOSYS);
        }
        if let Some(s) = self.slotted.iter().find(|s| s.handle == handle) {
            let p = &self.pages[s.page];
            return if p.owner_pid == pid { Ok((s.slot, p.address())) } else { Err(EBUSY) };
        }
        let Some(page) = self.page_for(pid, still_mapped) else {
            self.refused += 1;
            return Err(ENOSPC);
        };
        let p = &mut self.pages[page];
        let Some(slot) = p.used.iter().position(|&u| !u) else {
            self.refused += 1;
            return Err(ENOSPC);
        };
        if self.slotted.try_reserve(1).is_err() {
            self.refused += 1;
            return Err(ENOSPC);
        }
        p.used[slot] = true;
        // A file already windowed through another handle keeps its
        // generation; else any value: only a change moves it.
        let generation =
            self.slotted.iter().find(|s| s.ino == ino).map_or(self.next_generation, |s| s.generation);
        p.page.offset(slot).store(offset.min(MAX_OFFSET_BYTES), Ordering::SeqCst);
        p.page.generation(slot).store(generation, Ordering::SeqCst);
        let address = p.address();
        self.slotted.push(Slotted { handle, ino, page, slot, generation });
        Ok((slot, address))
    }

    /// The page of `pid`: its own, else one no one holds or maps any
    /// more (cleared), else a new one while there are fewer than
    /// [`MAX_PAGES`].
    fn page_for(&mut self, pid: u64, still_mapped: &mut dyn FnMut(u64) -> bool) -> Option<usize> {
        if let Some(i) = self.pages.iter().position(|p| p.owner_pid == pid) {
            return Some(i);
        }
        if let Some(i) = self.pages.iter().position(|p| p.slots_used() == 0 && !still_mapped(p.address())) {
            let p = &mut self.pages[i];
            p.page.clear();
            p.owner_pid = pid;
            return Some(i);
        }
        if self.pages.len() >= MAX_PAGES || self.pages.try_reserve(1).is_err() {
            return None;
        }
        self.pages.push(ClientPage { owner_pid: pid, page: SlotPage::new(), used: [false; SLOTS] });
        Some(self.pages.len() - 1)
    }

    /// The address (in this process) of the page kept for `pid`: what a
    /// page fault in its region maps.
    pub fn page_address(&self, pid: u64) -> Option<u64> {
        self.pages.iter().find(|p| p.owner_pid == pid).map(ClientPage::address)
    }

    fn find(&self, handle: u64) -> Option<&Slotted> {
        if self.slotted.is_empty() {
            return None;
        }
        self.slotted.iter().find(|s| s.handle == handle)
    }

    /// `handle`'s offset, when it has a slot: the slot's word, clamped
    /// (a word with `OFFSET_BUSY` set, only ever a client's scribble
    /// outside a request, reads as `MAX_OFFSET_BYTES`).
    pub fn offset(&self, handle: u64) -> Option<u64> {
        let s = self.find(handle)?;
        Some(self.pages[s.page].page.offset(s.slot).load(Ordering::SeqCst).min(MAX_OFFSET_BYTES))
    }

    /// `handle`'s offset, as [`Self::offset`], taken for a request: the
    /// word gets `OFFSET_BUSY` in the same atomic step, so a reader can no
    /// longer move it from this value; [`Self::set_offset`] gives it back.
    /// One atomic OR, no retry: a client that rewrites its word as fast
    /// as it can delays nothing here.
    pub fn take_offset(&self, handle: u64) -> Option<u64> {
        let s = self.find(handle)?;
        Some(
            self.pages[s.page]
                .page
                .offset(s.slot)
                .fetch_or(OFFSET_BUSY, Ordering::SeqCst)
                .min(MAX_OFFSET_BYTES),
        )
    }

    /// Publish `handle`'s new offset, when it has a slot (clearing
    /// `OFFSET_BUSY`: offsets are at most `MAX_OFFSET_BYTES`).
    pub fn set_offset(&self, handle: u64, offset: u64) {
        if let Some(s) = self.find(handle) {
            self.pages[s.page].page.offset(s.slot).store(offset, Ordering::SeqCst);
        }
    }

    /// The generation of the file open on `handle` (0 when it has no
    /// slot: no window can be checked against it).
    pub fn generation(&self, handle: u64) -> u64 {
        self.find(handle).map_or(0, |s| s.generation)
    }

    /// The data or size of file `ino` is about to change: every slot on
    /// it gets a new generation (published now, before the change's
    /// request is answered).
    pub fn changed(&mut self, ino: u32) {
        if self.slotted.is_empty() {
            return;
        }
        let mut any = false;
        let generation = self.next_generation + 1;
        for s in self.slotted.iter_mut().filter(|s| s.ino == ino) {
            s.generation = generation;
            self.pages[s.page].page.generation(s.slot).store(generation, Ordering::SeqCst);
            any = true;
        }
        if any {
            self.next_generation = generation;
            self.bumps += 1;
        }
    }

    /// `handle` is closed (its last descriptor, or its process died):
    /// its slot is free, its words cleared.
    pub fn release(&mut self, handle: u64) {
        if let Some(i) = self.slotted.iter().position(|s| s.handle == handle) {
            let s = self.slotted.swap_remove(i);
            let p = &mut self.pages[s.page];
            p.used[s.slot] = false;
            p.page.offset(s.slot).store(0, Ordering::SeqCst);
            p.page.generation(s.slot).store(0, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(w: &ReadWindows, page: usize, index: usize) -> u64 {
        w.pages[page].page.words[index].load(Ordering::SeqCst)
    }

    #[test]
    fn off_means_enosys() {
        let mut w = ReadWindows::new(false);
        assert_eq!(w.assign(7, 1, 2, 0, &mut |_| false), Err(ENOSYS));
        assert_eq!(w.offset(1), None);
    }

    #[test]
    fn a_slot_per_handle_a_page_per_process() {
        let mut w = ReadWindows::new(true);
        let (s1, a1) = w.assign(7, 100, 12, 5, &mut |_| false).unwrap();
        let (s2, a2) = w.assign(7, 101, 13, 9, &mut |_| false).unwrap();
        assert_eq!(a1, a2, "one page per process");
        assert_ne!(s1, s2);
        assert_eq!(w.assign(7, 100, 12, 0, &mut |_| false), Ok((s1, a1)), "the same slot again");
        assert_eq!(w.assign(8, 100, 12, 0, &mut |_| false), Err(EBUSY), "another process's slot");
        let (_, a3) = w.assign(8, 102, 12, 0, &mut |_| false).unwrap();
        assert_ne!(a1, a3, "another process, another page");
        assert_eq!(a1 % abi::layout::PAGE_SIZE, 0);
        assert_eq!(w.page_address(7), Some(a1));
        assert_eq!(w.page_address(9), None);
        assert_eq!(w.offset(100), Some(5));
        assert_eq!(word(&w, 0, 2 * s2), 9, "the offset is published in the page");
    }

    #[test]
    fn a_scribbled_offset_is_clamped() {
        let mut w = ReadWindows::new(true);
        let (s, _) = w.assign(7, 100, 12, 0, &mut |_| false).unwrap();
        w.pages[0].page.offset(s).store(u64::MAX, Ordering::SeqCst);
        assert_eq!(w.offset(100), Some(MAX_OFFSET_BYTES));
    }

    #[test]
    fn a_taken_offset_is_busy_until_put_back() {
        let mut w = ReadWindows::new(true);
        let (s, _) = w.assign(7, 100, 12, 40, &mut |_| false).unwrap();
        assert_eq!(w.take_offset(100), Some(40));
        assert_eq!(word(&w, 0, 2 * s), 40 | OFFSET_BUSY, "busy while the request is served");
        // A reader's compare-and-swap from the offset the manager took fails.
        let cas = w.pages[0].page.offset(s).compare_exchange(40, 48, Ordering::SeqCst, Ordering::SeqCst);
        assert!(cas.is_err());
        w.set_offset(100, 52);
        assert_eq!(word(&w, 0, 2 * s), 52, "put back: not busy");
        // A client's busy bit (a scribble) reads as the largest offset.
        w.pages[0].page.offset(s).store(3 | OFFSET_BUSY, Ordering::SeqCst);
        assert_eq!(w.take_offset(100), Some(MAX_OFFSET_BYTES));
        assert_eq!(w.take_offset(101), None, "no slot, no offset");
    }

    #[test]
    fn a_change_moves_every_slot_of_the_file_and_only_those() {
        let mut w = ReadWindows::new(true);
        let (s1, _) = w.assign(7, 100, 12, 0, &mut |_| false).unwrap();
        let (s2, _) = w.assign(8, 101, 12, 0, &mut |_| false).unwrap();
        let (s3, _) = w.assign(8, 102, 13, 0, &mut |_| false).unwrap();
        let (g1, g3) = (w.generation(100), w.generation(102));
        assert_eq!(g1, w.generation(101));
        w.changed(12);
        assert_ne!(w.generation(100), g1);
        assert_eq!(w.generation(100), w.generation(101));
        assert_eq!(w.generation(102), g3, "another file's slot is left alone");
        assert_eq!(word(&w, 0, 2 * s1 + 1), w.generation(100), "published in the page");
        assert_eq!(word(&w, 1, 2 * s2 + 1), w.generation(101));
        assert_eq!(word(&w, 1, 2 * s3 + 1), g3);
        // A client's scribble on its generation word is not read back.
        w.pages[0].page.generation(s1).store(0, Ordering::SeqCst);
        assert_ne!(w.generation(100), 0);
        // A new handle on the changed file starts at its generation.
        w.assign(9, 103, 12, 0, &mut |_| false).unwrap();
        assert_eq!(w.generation(103), w.generation(100));
        assert_eq!(w.stats().bumps, 1);
    }

    #[test]
    fn released_slots_are_cleared_and_pages_reused_only_when_unmapped() {
        let mut w = ReadWindows::new(true);
        let (s, a) = w.assign(7, 100, 12, 77, &mut |_| false).unwrap();
        w.release(100);
        assert_eq!(w.offset(100), None);
        assert_eq!(word(&w, 0, 2 * s), 0);
        // Process 7's page, with no slot, is still mapped by 7 (or a
        // fork child): process 8 gets a page of its own.
        let (_, b) = w.assign(8, 101, 12, 0, &mut |_| true).unwrap();
        assert_ne!(a, b);
        // Once no one maps it, it is reused (for a third process).
        w.pages[0].page.offset(3).store(5, Ordering::SeqCst);
        let (_, c) = w.assign(9, 102, 12, 0, &mut |addr| addr != a).unwrap();
        assert_eq!(c, a);
        assert_eq!(word(&w, 0, 6), 0, "cleared for its new process");
        assert_eq!(w.page_address(7), None);
    }

    /// 0 is what a dead manager's page reads (the kernel zeroes it): no
    /// slot is ever published with it, first or after changes.
    #[test]
    fn a_generation_is_never_zero() {
        let mut w = ReadWindows::new(true);
        let (s, _) = w.assign(7, 100, 12, 0, &mut |_| false).unwrap();
        assert_ne!(w.generation(100), 0);
        assert_ne!(word(&w, 0, 2 * s + 1), 0);
        for _ in 0..1000 {
            w.changed(12);
            assert_ne!(w.generation(100), 0);
            assert_ne!(word(&w, 0, 2 * s + 1), 0);
        }
        w.release(100);
        let (s, _) = w.assign(7, 101, 13, 0, &mut |_| false).unwrap();
        assert_ne!(word(&w, 0, 2 * s + 1), 0, "a new slot on another file");
    }

    #[test]
    fn running_out_is_enospc() {
        let mut w = ReadWindows::new(true);
        for h in 0..SLOTS as u64 {
            w.assign(7, 1000 + h, 12, 0, &mut |_| true).unwrap();
        }
        assert_eq!(w.assign(7, 5000, 12, 0, &mut |_| true), Err(ENOSPC));
        for pid in 0..MAX_PAGES as u64 - 1 {
            w.assign(100 + pid, 6000 + pid, 12, 0, &mut |_| true).unwrap();
        }
        assert_eq!(w.assign(999, 7000, 12, 0, &mut |_| true), Err(ENOSPC));
        assert_eq!(w.stats().refused, 2);
        assert_eq!(w.stats().pages, MAX_PAGES);
    }
}
