//! The write order's graph: which blocks' present contents must reach the
//! disk before which blocks' next contents ([`super::Cache::order`]),
//! kept in a topological order that is updated edge by edge.
//!
//! An edge `first -> then` closes a cycle exactly when `then` already
//! reaches `first`. Asking that by walking the graph (what the cache did
//! before) costs every edge reachable from `then`: with 8 MiB of dirty
//! data held in the cache, every allocation walked thousands of waits.
//! Here every block with an edge has a rank, and every edge goes from a
//! lower rank to a higher one (Pearce and Kelly, "A dynamic topological
//! sort algorithm for directed acyclic graphs", ACM JEA 11, 2006):
//!
//! - an edge that agrees with the ranks cannot close a cycle (every path
//!   climbs), and costs no walk at all; neither does an edge with a block
//!   new to the graph, which is given a rank below (`first`) or above
//!   (`then`) every other, where no edge can contradict it;
//! - an edge against the ranks (`rank(first) > rank(then)`) walks only
//!   the *affected region*: forward from `then` through blocks ranked
//!   below `first`, backward from `first` through blocks ranked above
//!   `then`. Reaching `first` is a cycle; otherwise the two sets swap
//!   their ranks among themselves (the backward set first). The cost is
//!   O(|δ| log |δ|) for δ the blocks and edges of the region (the paper's
//!   bound), never the whole graph.
//!
//! What it is not: the cache's policy. It knows block numbers and edges;
//! whether a block is pending, and what to do about a cycle, is the
//! cache's.
//!
//! The edges are two flat sets of pairs, not a set per block: a block's
//! edges are a range of them. In `ext2fs` the heap is a first-fit
//! free list, and a set per dirty block (8000 of them for 8 MiB, freed as
//! the blocks are written) left it full of holes that every allocation
//! walked.
//!
//! # Invariants
//! - `before` and `after` are exact mirrors: `(a, b)` is in `before`
//!   exactly when `(b, a)` is in `after` (the edge `b -> a`).
//! - A block has a rank exactly when it has an edge; for every edge
//!   `a -> b`, `rank[a] < rank[b]`. Hence the graph has no cycle.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec;
use alloc::vec::Vec;

/// What [`Order::add`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    /// The edge is in the graph (or was already).
    Added,
    /// `then` reaches `first`: the edge would close a cycle and was not
    /// added.
    Cycle,
}

#[derive(Default)]
pub struct Order {
    /// `(then, first)`: `first`'s present contents must be on the disk
    /// before `then`'s next contents (`then`'s waits).
    before: BTreeSet<(u64, u64)>,
    /// The reverse, `(first, then)`: the blocks waiting for `first`.
    after: BTreeSet<(u64, u64)>,
    rank: BTreeMap<u64, i64>,
    /// Lowest and highest rank given so far (new blocks go outside both).
    lowest: i64,
    highest: i64,
    /// Blocks the searches of edges against the ranks visited, in all
    /// (the cost the host tests bound; an agreeing edge adds nothing).
    pub visited: u64,
}

impl Order {
    pub fn new() -> Order {
        Order::default()
    }

    /// The blocks `block` waits for.
    pub fn waits(&self, block: u64) -> impl Iterator<Item = u64> + '_ {
        self.before.range((block, 0)..=(block, u64::MAX)).map(|&(_, f)| f)
    }

    /// The blocks waiting for `block`.
    pub fn waiters(&self, block: u64) -> impl Iterator<Item = u64> + '_ {
        self.after.range((block, 0)..=(block, u64::MAX)).map(|&(_, t)| t)
    }

    /// Is the edge `first -> then` in the graph?
    pub fn contains(&self, first: u64, then: u64) -> bool {
        self.before.contains(&(then, first))
    }

    pub fn has_waits(&self, block: u64) -> bool {
        self.waits(block).next().is_some()
    }

    fn has_waiters(&self, block: u64) -> bool {
        self.after.range((block, 0)..=(block, u64::MAX)).next().is_some()
    }

    /// Edges in the graph.
    #[cfg(test)]
    pub fn edges(&self) -> usize {
        self.before.len()
    }

    /// Blocks with a rank (those with an edge).
    #[cfg(test)]
    pub fn nodes(&self) -> usize {
        self.rank.len()
    }

    /// Adds `first -> then` unless it would close a cycle.
    pub fn add(&mut self, first: u64, then: u64) -> Added {
        if first == then {
            return Added::Cycle;
        }
        if self.contains(first, then) {
            return Added::Added;
        }
        match (self.rank.get(&first).copied(), self.rank.get(&then).copied()) {
            (Some(lo), Some(hi)) if lo > hi => {
                if !self.reorder(first, then, lo, hi) {
                    return Added::Cycle;
                }
            }
            (Some(_), Some(_)) => {}
            (first_rank, then_rank) => {
                // A block without edges can go anywhere: below everything
                // as a `first`, above everything as a `then`.
                if first_rank.is_none() {
                    self.lowest -= 1;
                    self.rank.insert(first, self.lowest);
                }
                if then_rank.is_none() {
                    self.highest += 1;
                    self.rank.insert(then, self.highest);
                }
            }
        }
        self.before.insert((then, first));
        self.after.insert((first, then));
        Added::Added
    }

    /// Pearce and Kelly's step for an edge `first -> then` with
    /// `rank[first] = lo > rank[then] = hi`: false if `then` reaches
    /// `first` (nothing changed), else the affected region reranked so
    /// that the edge agrees.
    fn reorder(&mut self, first: u64, then: u64, lo: i64, hi: i64) -> bool {
        // Forward from `then`, through blocks ranked below `first`'s rank.
        let mut forward = Vec::new();
        let mut seen = BTreeSet::new();
        let mut stack = vec![then];
        seen.insert(then);
        while let Some(b) = stack.pop() {
            self.visited += 1;
            forward.push(b);
            for w in self.waiters(b) {
                if w == first {
                    return false;
                }
                let r = self.rank[&w];
                if r < lo && seen.insert(w) {
                    stack.push(w);
                }
            }
        }
        // Backward from `first`, through blocks ranked above `then`'s.
        let mut backward = Vec::new();
        let mut stack = vec![first];
        seen.insert(first);
        while let Some(b) = stack.pop() {
            self.visited += 1;
            backward.push(b);
            for w in self.waits(b) {
                let r = self.rank[&w];
                // Ranks between hi and lo reached from both sides would
                // make a path then -> ... -> first: ruled out above.
                if r > hi && seen.insert(w) {
                    stack.push(w);
                }
            }
        }
        let by_rank = |order: &Order, set: &mut Vec<u64>| set.sort_unstable_by_key(|b| order.rank[b]);
        by_rank(self, &mut forward);
        by_rank(self, &mut backward);
        let mut ranks: Vec<i64> = backward.iter().chain(&forward).map(|b| self.rank[b]).collect();
        ranks.sort_unstable();
        for (b, r) in backward.iter().chain(&forward).zip(ranks) {
            self.rank.insert(*b, r);
        }
        true
    }

    /// Removes every edge into and out of `block` (its write completed, or
    /// it was freed and will never be written).
    pub fn remove(&mut self, block: u64) {
        self.remove_waits(block);
        let thens: Vec<u64> = self.waiters(block).collect();
        for t in thens {
            self.after.remove(&(block, t));
            self.before.remove(&(t, block));
            self.drop_rank_if_bare(t);
        }
        self.rank.remove(&block);
    }

    /// Removes the edges into `block` (its waits are on the disk).
    pub fn remove_waits(&mut self, block: u64) {
        let firsts: Vec<u64> = self.waits(block).collect();
        for f in firsts {
            self.before.remove(&(block, f));
            self.after.remove(&(f, block));
            self.drop_rank_if_bare(f);
        }
        self.drop_rank_if_bare(block);
    }

    fn drop_rank_if_bare(&mut self, block: u64) {
        if !self.has_waits(block) && !self.has_waiters(block) {
            self.rank.remove(&block);
        }
    }

    /// Does `from` reach `to` (a path of edges)? A walk of the graph: for
    /// tests, never on the cache's paths.
    #[cfg(test)]
    pub fn reaches(&self, from: u64, to: u64) -> bool {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(b) = stack.pop() {
            if b == to {
                return true;
            }
            if seen.insert(b) {
                stack.extend(self.waiters(b));
            }
        }
        false
    }

    /// Every invariant of the module's doc holds (tests).
    #[cfg(test)]
    pub fn check(&self) -> Result<(), &'static str> {
        if self.before.len() != self.after.len() {
            return Err("before and after differ in size");
        }
        for &(then, first) in &self.before {
            if !self.after.contains(&(first, then)) {
                return Err("before and after disagree");
            }
            match (self.rank.get(&first), self.rank.get(&then)) {
                (Some(a), Some(b)) if a < b => {}
                _ => return Err("an edge against the ranks"),
            }
        }
        for b in self.rank.keys() {
            if !self.has_waits(*b) && !self.has_waiters(*b) {
                return Err("a rank without an edge");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift64): seeded, so a failure
    /// repeats.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// The brute-force reference: a plain edge set, a cycle found by a walk.
    #[derive(Default)]
    struct Reference {
        edges: BTreeSet<(u64, u64)>,
    }
    impl Reference {
        fn reaches(&self, from: u64, to: u64) -> bool {
            let mut seen = BTreeSet::new();
            let mut stack = vec![from];
            while let Some(b) = stack.pop() {
                if b == to {
                    return true;
                }
                if seen.insert(b) {
                    stack.extend(self.edges.iter().filter(|(a, _)| *a == b).map(|(_, t)| *t));
                }
            }
            false
        }
        fn add(&mut self, first: u64, then: u64) -> Added {
            if first == then || self.reaches(then, first) {
                Added::Cycle
            } else {
                self.edges.insert((first, then));
                Added::Added
            }
        }
        fn remove(&mut self, block: u64) {
            self.edges.retain(|&(a, b)| a != block && b != block);
        }
        fn remove_waits(&mut self, block: u64) {
            self.edges.retain(|&(_, b)| b != block);
        }
    }

    #[test]
    fn random_edges_agree_with_a_brute_force_reference() {
        for seed in 1..=40u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut order = Order::new();
            let mut reference = Reference::default();
            let blocks = 4 + rng.below(40);
            for step in 0..600 {
                let a = rng.below(blocks);
                let b = rng.below(blocks);
                match rng.below(10) {
                    0 => {
                        order.remove(a);
                        reference.remove(a);
                    }
                    1 => {
                        order.remove_waits(a);
                        reference.remove_waits(a);
                    }
                    _ => {
                        assert_eq!(
                            order.add(a, b),
                            reference.add(a, b),
                            "seed {seed} step {step}: {a} -> {b}"
                        );
                    }
                }
                order.check().unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
                let edges: BTreeSet<(u64, u64)> = order.after.clone();
                assert_eq!(edges, reference.edges, "seed {seed} step {step}");
            }
        }
    }

    #[test]
    fn an_edge_that_agrees_or_brings_a_new_block_walks_nothing() {
        // The write path's edges: each new data block before its indirect
        // block, the bitmap before each indirect block, the indirect
        // blocks before the inode's block, 8 MiB of 1 KiB blocks.
        let mut order = Order::new();
        let (bitmap, inode_block) = (1u64, 2u64);
        for ind in 0..32u64 {
            let h = 1000 + ind * 300;
            for d in 1..=256u64 {
                assert_eq!(order.add(h + d, h), Added::Added);
            }
            assert_eq!(order.add(bitmap, h), Added::Added);
            assert_eq!(order.add(h, inode_block), Added::Added);
        }
        // Only `h -> inode_block` goes against the ranks (each new
        // indirect block is ranked above the inode's block, which came
        // before it): its region is the two blocks themselves, so two
        // visits per indirect block, none per data block, whatever the
        // number of blocks already in the graph.
        assert_eq!(order.visited, 2 * 31);
        assert_eq!(order.nodes(), 2 + 32 * 257);
        assert_eq!(order.edges(), 32 * 258);
        order.check().unwrap();
    }

    #[test]
    fn an_edge_against_the_ranks_walks_only_the_region_between() {
        let mut order = Order::new();
        // A long chain 0 -> 1 -> ... -> 999, ranked in that order.
        for b in 0..999u64 {
            order.add(b, b + 1);
        }
        // 900 -> 10 closes a cycle (10 reaches 900): found, nothing added.
        order.visited = 0;
        assert_eq!(order.add(900, 10), Added::Cycle);
        let cycle_cost = order.visited;
        assert!(cycle_cost <= 900, "walked {cycle_cost}");
        // 5001 -> 5002, both new: 5001 ranked below everything, 5002
        // above. Then 700 -> 5001, against the ranks: forward, 5001 only
        // (5002 is ranked above 700); backward, the chain up to 700.
        assert_eq!(order.add(5001, 5002), Added::Added);
        order.visited = 0;
        assert_eq!(order.add(700, 5001), Added::Added);
        assert_eq!(order.visited, 1 + 701);
        order.check().unwrap();
        // Two separate edges, ranked 3 < 1 < 2 < 4: 4 -> 1 walks 1 and 2
        // forward and 4 backward (3 is ranked below 1), nothing else.
        let mut order = Order::new();
        order.add(1, 2);
        order.add(3, 4);
        order.visited = 0;
        assert_eq!(order.add(4, 1), Added::Added);
        assert_eq!(order.visited, 3);
        order.check().unwrap();
        assert!(order.reaches(3, 2));
    }
}
