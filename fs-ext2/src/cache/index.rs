//! The buffer cache's two indexes, each O(1) per operation whatever
//! `nbuf` is: [`BlockIndex`], block number -> buffer (a hash table, as
//! UNIX's `bhash`, with open addressing in one array), and [`LruList`], the pool's buffers from
//! least to most recently used (a doubly linked list through the buffer
//! numbers, as V6's `av_forw`/`av_back`).
//!
//! What it is not: the cache's policy. They hold numbers; the cache
//! decides what is evicted, busy or pinned.
//!
//! # Invariants
//! - [`BlockIndex`]: each block at most once; its table has a power of two
//!   of slots, at least twice as many as blocks held, and no free slot
//!   between a block's home slot and the slot holding it.
//! - [`LruList`]: each buffer at most once; `head` is the least recently
//!   used; a buffer not linked has `prev`/`next` [`NONE`].

use alloc::vec;
use alloc::vec::Vec;

/// No buffer.
pub const NONE: usize = usize::MAX;

/// Block number -> buffer number: open addressing with linear probing
/// in one array (a lookup reads one slot or a few neighbours, one cache
/// line and one page: the chains of a chained table were an allocation
/// each, a second page per lookup, which under TCG costs a page walk of
/// the emulator's after every address-space switch; the read row's
/// profile had the lookups at 14 % of `ext2fs`). At most half full: it
/// doubles before that.
pub struct BlockIndex {
    slots: Vec<(u64, usize)>,
    shift: u32,
    len: usize,
}

/// A free slot's block number (no block number reaches it: they are
/// below the device's size in blocks).
const FREE: u64 = u64::MAX;

impl BlockIndex {
    /// A table for `buffers` blocks at half load (at least 128 slots).
    pub fn new(buffers: usize) -> BlockIndex {
        Self::with_slots((buffers.max(64) * 2).next_power_of_two())
    }

    fn with_slots(n: usize) -> BlockIndex {
        BlockIndex { slots: vec![(FREE, 0); n], shift: 64 - n.trailing_zeros(), len: 0 }
    }

    /// Fibonacci hashing: consecutive blocks land in different slots.
    fn home(&self, block: u64) -> usize {
        (block.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The slot holding `block`, or the free slot where it would go.
    fn find(&self, block: u64) -> (usize, bool) {
        let mut at = self.home(block);
        loop {
            match self.slots[at].0 {
                b if b == block => return (at, true),
                FREE => return (at, false),
                _ => at = (at + 1) & self.mask(),
            }
        }
    }

    pub fn get(&self, block: &u64) -> Option<&usize> {
        match self.find(*block) {
            (at, true) => Some(&self.slots[at].1),
            _ => None,
        }
    }

    pub fn contains_key(&self, block: &u64) -> bool {
        self.find(*block).1
    }

    pub fn insert(&mut self, block: u64, buffer: usize) {
        debug_assert_ne!(block, FREE);
        if (self.len + 1) * 2 > self.slots.len() {
            let mut bigger = Self::with_slots(self.slots.len() * 2);
            for &(b, i) in self.slots.iter().filter(|s| s.0 != FREE) {
                bigger.insert(b, i);
            }
            *self = bigger;
        }
        let (at, is_there) = self.find(block);
        self.slots[at] = (block, buffer);
        if !is_there {
            self.len += 1;
        }
    }

    pub fn remove(&mut self, block: &u64) -> Option<usize> {
        let (mut hole, is_there) = self.find(*block);
        if !is_there {
            return None;
        }
        let buffer = self.slots[hole].1;
        self.slots[hole].0 = FREE;
        self.len -= 1;
        // Backward shift: an entry after the hole whose home is not
        // between the hole and it moves into the hole, so that every
        // probe from a home to its entry still crosses no free slot.
        let mut at = (hole + 1) & self.mask();
        while self.slots[at].0 != FREE {
            let home = self.home(self.slots[at].0);
            let distance_home = at.wrapping_sub(home) & self.mask();
            let distance_hole = at.wrapping_sub(hole) & self.mask();
            if distance_home >= distance_hole {
                self.slots[hole] = self.slots[at];
                self.slots[at].0 = FREE;
                hole = at;
            }
            at = (at + 1) & self.mask();
        }
        Some(buffer)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }
}

/// Buffers `0..n` from least to most recently used.
pub struct LruList {
    /// Each buffer's links, side by side: a touch changes three
    /// neighbours, and one array keeps that to few cache lines and pages
    /// (three arrays showed in the read row's profile under TCG, where a
    /// server's pages are looked up afresh after every address-space
    /// switch).
    nodes: Vec<Node>,
    head: usize,
    tail: usize,
}

#[derive(Clone, Copy)]
struct Node {
    prev: usize,
    next: usize,
    is_linked: bool,
}

impl LruList {
    /// `n` buffers, none linked.
    pub fn new(n: usize) -> LruList {
        LruList { nodes: vec![Node { prev: NONE, next: NONE, is_linked: false }; n], head: NONE, tail: NONE }
    }

    /// Takes `i` out (if linked).
    pub fn remove(&mut self, i: usize) {
        let Node { prev: p, next: n, is_linked } = self.nodes[i];
        if !is_linked {
            return;
        }
        if p == NONE {
            self.head = n
        } else {
            self.nodes[p].next = n
        }
        if n == NONE {
            self.tail = p
        } else {
            self.nodes[n].prev = p
        }
        self.nodes[i] = Node { prev: NONE, next: NONE, is_linked: false };
    }

    /// Makes `i` the most recently used.
    pub fn touch(&mut self, i: usize) {
        if self.tail == i {
            return; // already the most recent
        }
        self.remove(i);
        self.nodes[i] = Node { prev: self.tail, next: NONE, is_linked: true };
        if self.tail == NONE {
            self.head = i
        } else {
            self.nodes[self.tail].next = i
        }
        self.tail = i;
    }

    /// The least recently used buffer.
    pub fn oldest(&self) -> Option<usize> {
        (self.head != NONE).then_some(self.head)
    }

    /// The buffer used next after `i`.
    pub fn newer(&self, i: usize) -> Option<usize> {
        let n = self.nodes[i].next;
        (n != NONE).then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_finds_what_it_holds_and_nothing_else() {
        let mut index = BlockIndex::new(4);
        for b in 0..1000u64 {
            index.insert(b * 3, b as usize);
        }
        assert_eq!(index.len(), 1000);
        assert_eq!(index.get(&300), Some(&100));
        assert_eq!(index.get(&301), None);
        index.insert(300, 7);
        assert_eq!((index.get(&300), index.len()), (Some(&7), 1000));
        assert_eq!(index.remove(&300), Some(7));
        assert_eq!(index.remove(&300), None);
        assert!(!index.contains_key(&300) && index.contains_key(&303));
        // Made for 4 buffers, it grew for 1000 blocks and stays at most half full.
        assert!(index.slots.len() >= 2000);
        for b in 0..1000u64 {
            let want = if b == 100 { None } else { Some(b as usize) };
            assert_eq!(index.get(&(b * 3)).copied(), want, "block {}", b * 3);
        }
    }

    #[test]
    fn removals_keep_every_other_entry_findable() {
        // Blocks that crowd one neighbourhood (a small table, many
        // removals in every order), against a model.
        let mut index = BlockIndex::new(1);
        let mut model = std::collections::BTreeMap::new();
        let mut x = 12345u64;
        for step in 0..20_000usize {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let block = x % 300;
            if x.is_multiple_of(3) {
                assert_eq!(index.remove(&block), model.remove(&block), "step {step}");
            } else {
                index.insert(block, step);
                model.insert(block, step);
            }
            assert_eq!(index.len(), model.len());
        }
        for block in 0..300u64 {
            assert_eq!(index.get(&block).copied(), model.get(&block).copied(), "block {block}");
        }
    }

    #[test]
    fn the_list_keeps_use_order_and_unlinks() {
        let mut lru = LruList::new(4);
        assert_eq!(lru.oldest(), None);
        for i in [2, 0, 3, 1] {
            lru.touch(i);
        }
        lru.touch(0);
        let order = |lru: &LruList| {
            let mut out = Vec::new();
            let mut at = lru.oldest();
            while let Some(i) = at {
                out.push(i);
                at = lru.newer(i);
            }
            out
        };
        assert_eq!(order(&lru), [2, 3, 1, 0]);
        lru.remove(3);
        lru.remove(3);
        assert_eq!(order(&lru), [2, 1, 0]);
        lru.remove(2);
        lru.remove(0);
        assert_eq!(order(&lru), [1]);
        lru.remove(1);
        assert_eq!(order(&lru), Vec::<usize>::new());
        lru.touch(3);
        assert_eq!(order(&lru), [3]);
    }
}
