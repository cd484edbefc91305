//! The scheduler's ready lists (Ridge OS §5: "processes waiting to be
//! executed are placed in descending order in a ready list").
//!
//! One FIFO per priority, linked through per-slot `next`/`prev` arrays so
//! that insert, remove and "pop highest" are O(1); a bitmap of non-empty
//! priorities finds the highest in one instruction.
//!
//! Invariants: a slot is on at most one list; `contains(s)` is true exactly
//! when it is on one; `nonempty` bit `p` is set exactly when list `p` has
//! an element.

const NONE: u16 = u16::MAX;

/// Number of priority levels (0 = lowest).
pub const PRIORITY_LEVELS: usize = abi::MAX_PRIORITY as usize + 1;

pub struct ReadyQueues<const SLOTS: usize> {
    head: [u16; PRIORITY_LEVELS],
    tail: [u16; PRIORITY_LEVELS],
    next: [u16; SLOTS],
    prev: [u16; SLOTS],
    /// Priority of the list a slot is on, or `NONE` when it is on none.
    on_list: [u16; SLOTS],
    nonempty: u32,
    len: usize,
}

impl<const SLOTS: usize> Default for ReadyQueues<SLOTS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const SLOTS: usize> ReadyQueues<SLOTS> {
    pub const fn new() -> Self {
        assert!(SLOTS < NONE as usize);
        ReadyQueues {
            head: [NONE; PRIORITY_LEVELS],
            tail: [NONE; PRIORITY_LEVELS],
            next: [NONE; SLOTS],
            prev: [NONE; SLOTS],
            on_list: [NONE; SLOTS],
            nonempty: 0,
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn contains(&self, slot: usize) -> bool {
        self.on_list[slot] != NONE
    }

    /// The highest priority with a ready slot.
    pub fn highest_priority(&self) -> Option<u8> {
        (self.nonempty != 0).then(|| 31 - self.nonempty.leading_zeros() as u8)
    }

    /// Append `slot` to the back of its priority's list (it has used its
    /// slice, or it has just become ready).
    pub fn push_back(&mut self, slot: usize, priority: u8) {
        assert!(!self.contains(slot), "slot {slot} already ready");
        let p = priority as usize;
        let s = slot as u16;
        self.prev[slot] = self.tail[p];
        self.next[slot] = NONE;
        match self.tail[p] {
            NONE => self.head[p] = s,
            t => self.next[t as usize] = s,
        }
        self.tail[p] = s;
        self.finish_insert(slot, p);
    }

    /// Put `slot` at the front of its priority's list (it was preempted
    /// before its slice ended, so it keeps its turn).
    pub fn push_front(&mut self, slot: usize, priority: u8) {
        assert!(!self.contains(slot), "slot {slot} already ready");
        let p = priority as usize;
        let s = slot as u16;
        self.next[slot] = self.head[p];
        self.prev[slot] = NONE;
        match self.head[p] {
            NONE => self.tail[p] = s,
            h => self.prev[h as usize] = s,
        }
        self.head[p] = s;
        self.finish_insert(slot, p);
    }

    fn finish_insert(&mut self, slot: usize, p: usize) {
        self.on_list[slot] = p as u16;
        self.nonempty |= 1 << p;
        self.len += 1;
    }

    /// Take a slot off whichever list it is on; false if it was on none.
    pub fn remove(&mut self, slot: usize) -> bool {
        let p = self.on_list[slot];
        if p == NONE {
            return false;
        }
        let p = p as usize;
        let (n, pr) = (self.next[slot], self.prev[slot]);
        match pr {
            NONE => self.head[p] = n,
            x => self.next[x as usize] = n,
        }
        match n {
            NONE => self.tail[p] = pr,
            x => self.prev[x as usize] = pr,
        }
        if self.head[p] == NONE {
            self.nonempty &= !(1 << p);
        }
        self.on_list[slot] = NONE;
        self.len -= 1;
        true
    }

    /// The first slot, in `pop_highest`'s order (highest priority first,
    /// FIFO within one), for which `eligible` holds: the slot a CPU may
    /// take when some processes are pinned to other CPUs
    /// (`abi::Call::SetAffinity`). Walks past the ineligible ones, so it
    /// costs one step per process pinned elsewhere that is ready before it.
    pub fn first_where(&self, eligible: impl Fn(usize) -> bool) -> Option<(usize, u8)> {
        let mut priorities = self.nonempty;
        while priorities != 0 {
            let p = 31 - priorities.leading_zeros() as usize;
            priorities &= !(1 << p);
            let mut s = self.head[p];
            while s != NONE {
                if eligible(s as usize) {
                    return Some((s as usize, p as u8));
                }
                s = self.next[s as usize];
            }
        }
        None
    }

    /// Remove and return the first slot of the highest non-empty priority.
    pub fn pop_highest(&mut self) -> Option<(usize, u8)> {
        let p = self.highest_priority()?;
        let slot = self.head[p as usize] as usize;
        self.remove(slot);
        Some((slot, p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_where_skips_the_ineligible_in_order() {
        let mut q = ReadyQueues::<16>::new();
        q.push_back(1, 7);
        q.push_back(2, 7);
        q.push_back(3, 3);
        assert_eq!(q.first_where(|s| s != 1), Some((2, 7)));
        assert_eq!(q.first_where(|s| s == 3), Some((3, 3)));
        assert_eq!(q.first_where(|_| false), None);
        assert_eq!(q.first_where(|_| true), Some((1, 7)));
        // Nothing was taken off.
        assert_eq!(q.len(), 3);
    }

    #[test]
    fn highest_priority_first_fifo_within_one() {
        let mut q = ReadyQueues::<16>::new();
        q.push_back(1, 3);
        q.push_back(2, 7);
        q.push_back(3, 3);
        q.push_back(4, 7);
        assert_eq!(q.highest_priority(), Some(7));
        assert_eq!(q.pop_highest(), Some((2, 7)));
        assert_eq!(q.pop_highest(), Some((4, 7)));
        assert_eq!(q.pop_highest(), Some((1, 3)));
        assert_eq!(q.pop_highest(), Some((3, 3)));
        assert_eq!(q.pop_highest(), None);
        assert!(q.is_empty());
    }

    #[test]
    fn push_front_keeps_the_turn() {
        let mut q = ReadyQueues::<8>::new();
        q.push_back(1, 5);
        q.push_front(2, 5);
        assert_eq!(q.pop_highest(), Some((2, 5)));
    }

    #[test]
    fn remove_from_middle_and_ends() {
        let mut q = ReadyQueues::<8>::new();
        for s in 0..5 {
            q.push_back(s, 0);
        }
        assert!(q.remove(2));
        assert!(q.remove(0));
        assert!(q.remove(4));
        assert!(!q.remove(4));
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop_highest(), Some((1, 0)));
        assert_eq!(q.pop_highest(), Some((3, 0)));
        assert_eq!(q.highest_priority(), None);
    }

    #[test]
    fn priority_31_and_0_coexist() {
        let mut q = ReadyQueues::<4>::new();
        q.push_back(0, 0);
        q.push_back(1, 31);
        assert_eq!(q.highest_priority(), Some(31));
        assert!(q.contains(0) && q.contains(1));
        q.remove(1);
        assert_eq!(q.highest_priority(), Some(0));
    }

    #[test]
    #[should_panic]
    fn double_insert_is_a_bug() {
        let mut q = ReadyQueues::<4>::new();
        q.push_back(0, 1);
        q.push_back(0, 2);
    }
}
