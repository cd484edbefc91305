//! A table of handles: the numbers a server gives out for what its clients
//! have open (memfs's open-file descriptions, a file manager's opens of
//! its file), and the check that makes a guessed or stale number useless.
//!
//! What it is not: the open-file description itself. The table keeps any
//! `T` (offset, flags, ... are the user's) and says nothing about who may
//! use a handle; holding the number is the capability.
//!
//! # Invariants
//! - A handle is `check << 32 | slot`, `check` a random value in `1..2^31`
//!   drawn anew for every insertion: handles are positive as `i64` (they
//!   travel in reply word 0), never 0, and a handle whose slot was freed
//!   and reused is `EBADF`, as is any number whose check does not match.
//! - At most [`MAX_HANDLES`] entries at once (then `ENFILE`).
//! - A handle with [`FORWARDED_HANDLE_BIT`] set is one the monitor chose
//!   for an open it passed on to the manager (`fs::OP_OPEN_FORWARDED`);
//!   the table keeps those apart, under exactly that number
//!   ([`HandleTable::insert_chosen`]); its own never have the bit.
//! - Memory is taken fallibly, before anything changes: once
//!   [`HandleTable::reserve`] succeeded the next insertion cannot fail, and
//!   removing never allocates (so `close` cannot fail for want of memory).

use alloc::vec::Vec;

use protocols::unix::Errno;
use protocols::unix::errno::{EBADF, EEXIST, EINVAL, ENFILE};
pub use protocols::unix::fs::FORWARDED_HANDLE_BIT;

/// Handles one table holds at once (then `ENFILE`).
pub const MAX_HANDLES: usize = 4096;

/// A small xorshift generator for the handles' check values; the server
/// seeds it from the time-stamp counter.
struct Xorshift(u64);

impl Xorshift {
    fn new(seed: u64) -> Xorshift {
        // xorshift's one fixed point is 0.
        Xorshift(if seed == 0 { 0x9e37_79b9_7f4a_7c15 } else { seed })
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `1..2^31`.
    fn check(&mut self) -> u32 {
        loop {
            let c = (self.next() >> 33) as u32;
            if c != 0 {
                return c;
            }
        }
    }
}

struct Entry<T> {
    check: u32,
    value: T,
}

/// Values of type `T` under unguessable handle numbers.
pub struct HandleTable<T> {
    slots: Vec<Option<Entry<T>>>,
    free_slots: Vec<u32>,
    len: usize,
    rng: Xorshift,
    /// The handles chosen by the monitor, sorted by number.
    chosen: Vec<(u64, T)>,
}

impl<T> HandleTable<T> {
    /// An empty table; `seed` feeds the check values.
    pub fn new(seed: u64) -> HandleTable<T> {
        HandleTable {
            slots: Vec::new(),
            free_slots: Vec::new(),
            len: 0,
            rng: Xorshift::new(seed),
            chosen: Vec::new(),
        }
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.len + self.chosen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Make sure the next [`HandleTable::insert_chosen`] of a number not
    /// held cannot fail: `ENFILE` when the table is full, `out_of_memory`
    /// when no memory.
    pub fn reserve_chosen(&mut self, out_of_memory: Errno) -> Result<(), Errno> {
        if self.len() >= MAX_HANDLES {
            return Err(ENFILE);
        }
        self.chosen.try_reserve(1).map_err(|_| out_of_memory)
    }

    /// Keep `value` under `handle`, a number the monitor chose
    /// ([`FORWARDED_HANDLE_BIT`] set): `EINVAL` without the bit, `EEXIST`
    /// when it is held already, `ENFILE` when the table is full,
    /// `out_of_memory` when no memory; each leaves the table as it was.
    pub fn insert_chosen(&mut self, handle: u64, value: T, out_of_memory: Errno) -> Result<(), Errno> {
        if handle & FORWARDED_HANDLE_BIT == 0 {
            return Err(EINVAL);
        }
        let Err(at) = self.chosen.binary_search_by_key(&handle, |(h, _)| *h) else { return Err(EEXIST) };
        self.reserve_chosen(out_of_memory)?;
        self.chosen.insert(at, (handle, value));
        Ok(())
    }

    fn chosen_at(&self, handle: u64) -> Result<usize, Errno> {
        self.chosen.binary_search_by_key(&handle, |(h, _)| *h).map_err(|_| EBADF)
    }

    /// Make sure the next [`HandleTable::insert`] succeeds: `ENFILE` when
    /// the table is full, `out_of_memory` (the caller's errno for it) when
    /// the memory for one more slot, and for its later return to the free
    /// list, cannot be had. Changes nothing a caller can see.
    pub fn reserve(&mut self, out_of_memory: Errno) -> Result<(), Errno> {
        if !self.free_slots.is_empty() {
            return Ok(());
        }
        if self.slots.len() >= MAX_HANDLES {
            return Err(ENFILE);
        }
        self.slots.try_reserve(1).map_err(|_| out_of_memory)?;
        self.free_slots.try_reserve(self.slots.len() + 1).map_err(|_| out_of_memory)
    }

    /// Keep `value` under a new handle (see [`HandleTable::reserve`] for
    /// the errors, which leave the table as it was).
    pub fn insert(&mut self, value: T, out_of_memory: Errno) -> Result<u64, Errno> {
        self.reserve(out_of_memory)?;
        let check = self.rng.check();
        let entry = Some(Entry { check, value });
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.slots[s as usize] = entry;
                s
            }
            None => {
                self.slots.push(entry);
                (self.slots.len() - 1) as u32
            }
        };
        self.len += 1;
        Ok(((check as u64) << 32) | slot as u64)
    }

    /// The value under `handle`, or `EBADF`.
    pub fn get(&self, handle: u64) -> Result<&T, Errno> {
        if handle & FORWARDED_HANDLE_BIT != 0 {
            return self.chosen_at(handle).map(|i| &self.chosen[i].1);
        }
        let (slot, check) = split(handle);
        match self.slots.get(slot) {
            Some(Some(e)) if e.check == check => Ok(&e.value),
            _ => Err(EBADF),
        }
    }

    /// The value under `handle`, or `EBADF`.
    pub fn get_mut(&mut self, handle: u64) -> Result<&mut T, Errno> {
        if handle & FORWARDED_HANDLE_BIT != 0 {
            let i = self.chosen_at(handle)?;
            return Ok(&mut self.chosen[i].1);
        }
        let (slot, check) = split(handle);
        match self.slots.get_mut(slot) {
            Some(Some(e)) if e.check == check => Ok(&mut e.value),
            _ => Err(EBADF),
        }
    }

    /// Take the value under `handle` out; the handle is stale from now on.
    pub fn remove(&mut self, handle: u64) -> Result<T, Errno> {
        if handle & FORWARDED_HANDLE_BIT != 0 {
            // Removing from a vector never allocates.
            let i = self.chosen_at(handle)?;
            return Ok(self.chosen.remove(i).1);
        }
        self.get(handle)?;
        let (slot, _) = split(handle);
        let Some(entry) = self.slots[slot].take() else { return Err(EBADF) };
        // `reserve` made room for every slot there is.
        self.free_slots.push(slot as u32);
        self.len -= 1;
        Ok(entry.value)
    }
}

/// A handle's slot index and check value.
fn split(handle: u64) -> (usize, u32) {
    (handle as u32 as usize, (handle >> 32) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocols::unix::errno::{ENOMEM, ENOSPC};
    use std::vec;

    #[test]
    fn handles_are_positive_and_checked() {
        let mut t = HandleTable::new(0);
        for i in 0..1000u32 {
            let h = t.insert(i, ENOMEM).unwrap();
            assert!(h >> 32 != 0 && (h as i64) > 0, "{h:#x}");
            assert_eq!(t.get(h), Ok(&i));
            assert_eq!(t.remove(h), Ok(i));
        }
        assert!(t.is_empty());
    }

    #[test]
    fn seeds_give_different_checks() {
        let mut a = HandleTable::new(1);
        let mut b = HandleTable::new(2);
        assert_ne!(a.insert((), ENOMEM).unwrap(), b.insert((), ENOMEM).unwrap());
    }

    #[test]
    fn chosen_handles_are_kept_apart_under_their_own_numbers() {
        let mut t = HandleTable::new(3);
        let own = t.insert("own", ENOMEM).unwrap();
        assert_eq!(own & FORWARDED_HANDLE_BIT, 0);
        let a = FORWARDED_HANDLE_BIT | 5 << 32 | 2;
        let b = FORWARDED_HANDLE_BIT | 1;
        assert_eq!(t.insert_chosen(a, "a", ENOMEM), Ok(()));
        assert_eq!(t.insert_chosen(b, "b", ENOMEM), Ok(()));
        assert_eq!(t.insert_chosen(a, "again", ENOMEM), Err(EEXIST));
        assert_eq!(t.insert_chosen(7, "no bit", ENOMEM), Err(EINVAL));
        assert_eq!(t.len(), 3);
        assert_eq!((t.get(a), t.get(b), t.get(own)), (Ok(&"a"), Ok(&"b"), Ok(&"own")));
        assert_eq!(t.get(a ^ 1), Err(EBADF), "a number never chosen");
        *t.get_mut(b).unwrap() = "b2";
        assert_eq!(t.remove(b), Ok("b2"));
        assert_eq!(t.remove(b), Err(EBADF), "removed twice");
        assert_eq!(t.remove(a), Ok("a"));
        assert_eq!(t.remove(own), Ok("own"));
        assert!(t.is_empty());
    }

    #[test]
    fn guessed_and_stale_handles_are_ebadf() {
        let mut t = HandleTable::new(7);
        let h = t.insert("a", ENOMEM).unwrap();
        for bad in [0, h & 0xffff_ffff, h ^ (1 << 40), h + 1, u64::MAX, 1 << 62] {
            assert_eq!(t.get(bad), Err(EBADF), "{bad:#x}");
            assert_eq!(t.get_mut(bad).err(), Some(EBADF));
            assert_eq!(t.remove(bad), Err(EBADF));
        }
        *t.get_mut(h).unwrap() = "b";
        assert_eq!(t.remove(h), Ok("b"));
        assert_eq!(t.remove(h), Err(EBADF), "removed twice");
        // The slot is reused with a fresh check, so the stale handle stays bad.
        let h2 = t.insert("c", ENOMEM).unwrap();
        assert_eq!(h2 as u32, h as u32);
        assert_ne!(h2, h);
        assert_eq!(t.get(h), Err(EBADF));
        assert_eq!(t.get(h2), Ok(&"c"));
    }

    #[test]
    fn limit_and_reuse() {
        let mut t = HandleTable::new(3);
        let mut hs = vec![];
        for i in 0..MAX_HANDLES {
            hs.push(t.insert(i, ENOSPC).unwrap());
        }
        assert_eq!(t.len(), MAX_HANDLES);
        assert_eq!(t.reserve(ENOSPC), Err(ENFILE));
        assert_eq!(t.insert(0, ENOSPC), Err(ENFILE));
        assert_eq!(t.len(), MAX_HANDLES, "a refused insertion changes nothing");
        let mut sorted = hs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), MAX_HANDLES, "handles are distinct");
        assert_eq!(t.remove(hs[17]), Ok(17));
        assert_eq!(t.reserve(ENOSPC), Ok(()));
        let h = t.insert(99, ENOSPC).unwrap();
        assert_eq!(h as u32, hs[17] as u32, "the freed slot is taken again");
        assert_eq!(t.get(hs[18]), Ok(&18));
    }
}
