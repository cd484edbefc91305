//! The buffer cache's two indexes, each O(1) per operation whatever
//! `nbuf` is: [`BlockIndex`], block number -> buffer (a hash table with
//! chains, as UNIX's `bhash`), and [`LruList`], the pool's buffers from
//! least to most recently used (a doubly linked list through the buffer
//! numbers, as V6's `av_forw`/`av_back`).
//!
//! What it is not: the cache's policy. They hold numbers; the cache
//! decides what is evicted, busy or pinned.
//!
//! # Invariants
//! - [`BlockIndex`]: each block at most once; its table has a power of two
//!   of chains, at least as many as buffers when made.
//! - [`LruList`]: each buffer at most once; `head` is the least recently
//!   used; `prev`/`next` are [`NONE`] exactly for buffers not linked.

use alloc::vec;
use alloc::vec::Vec;

/// No buffer.
pub const NONE: usize = usize::MAX;

/// Block number -> buffer number.
pub struct BlockIndex {
    chains: Vec<Vec<(u64, usize)>>,
    shift: u32,
    len: usize,
}

impl BlockIndex {
    /// A table with a chain per expected buffer (at least 64).
    pub fn new(buffers: usize) -> BlockIndex {
        let chains = buffers.max(64).next_power_of_two();
        BlockIndex {
            chains: (0..chains).map(|_| Vec::new()).collect(),
            shift: 64 - chains.trailing_zeros(),
            len: 0,
        }
    }

    /// Fibonacci hashing: consecutive blocks land in different chains.
    fn chain(&self, block: u64) -> usize {
        (block.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    pub fn get(&self, block: &u64) -> Option<&usize> {
        self.chains[self.chain(*block)].iter().find(|(b, _)| b == block).map(|(_, i)| i)
    }

    pub fn contains_key(&self, block: &u64) -> bool {
        self.get(block).is_some()
    }

    pub fn insert(&mut self, block: u64, buffer: usize) {
        let c = self.chain(block);
        match self.chains[c].iter_mut().find(|(b, _)| *b == block) {
            Some(entry) => entry.1 = buffer,
            None => {
                self.chains[c].push((block, buffer));
                self.len += 1;
            }
        }
    }

    pub fn remove(&mut self, block: &u64) -> Option<usize> {
        let c = self.chain(*block);
        let at = self.chains[c].iter().position(|(b, _)| b == block)?;
        self.len -= 1;
        Some(self.chains[c].swap_remove(at).1)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }
}

/// Buffers `0..n` from least to most recently used.
pub struct LruList {
    prev: Vec<usize>,
    next: Vec<usize>,
    is_linked: Vec<bool>,
    head: usize,
    tail: usize,
}

impl LruList {
    /// `n` buffers, none linked.
    pub fn new(n: usize) -> LruList {
        LruList {
            prev: vec![NONE; n],
            next: vec![NONE; n],
            is_linked: vec![false; n],
            head: NONE,
            tail: NONE,
        }
    }

    /// Takes `i` out (if linked).
    pub fn remove(&mut self, i: usize) {
        if !self.is_linked[i] {
            return;
        }
        let (p, n) = (self.prev[i], self.next[i]);
        if p == NONE {
            self.head = n
        } else {
            self.next[p] = n
        }
        if n == NONE {
            self.tail = p
        } else {
            self.prev[n] = p
        }
        self.prev[i] = NONE;
        self.next[i] = NONE;
        self.is_linked[i] = false;
    }

    /// Makes `i` the most recently used.
    pub fn touch(&mut self, i: usize) {
        self.remove(i);
        self.prev[i] = self.tail;
        self.next[i] = NONE;
        if self.tail == NONE {
            self.head = i
        } else {
            self.next[self.tail] = i
        }
        self.tail = i;
        self.is_linked[i] = true;
    }

    /// The least recently used buffer.
    pub fn oldest(&self) -> Option<usize> {
        (self.head != NONE).then_some(self.head)
    }

    /// The buffer used next after `i`.
    pub fn newer(&self, i: usize) -> Option<usize> {
        let n = self.next[i];
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
        // 64 chains for 1000 blocks: every chain used, none holding most.
        assert!(index.chains.iter().all(|c| !c.is_empty() && c.len() < 64));
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
