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
//! The storage: a block with edges has a [`Node`] in a slab, found through
//! a hash table ([`BlockIndex`], the cache's own, sized like the cache),
//! holding its rank and its edges each way. A block has one edge out or
//! in (a data block before its indirect block) far more often than more,
//! so the first edge each way is kept in the node and only further ones
//! in a vector, whose capacity the slab keeps when the node is freed: the
//! common block costs no allocation, and nothing is freed as thousands of
//! blocks are written (in `ext2fs` the heap is a first-fit free list, and
//! a set per dirty block left it full of holes that every allocation
//! walked). Before, the edges were two B-tree sets of pairs and a B-tree
//! of ranks: "does it wait for anything", asked of every block a
//! write-out looks at, and the removal of an edge as each write
//! completed, were range queries and removals of a B-tree of 8000 pairs;
//! `fsync` of 8 MiB held dirty spent 52 million instructions (callgrind,
//! host), most of them there (`docs/filesystem-history.md`, "R2 on disk: the
//! write-out path").
//!
//! # Invariants
//! - Edge `a -> b` is in the graph exactly when `b` is in `a`'s node's
//!   `waiters` and `a` in `b`'s node's `waits` (each at most once).
//! - A block has a node (a slot named by `index`) exactly when it has an
//!   edge; for every edge `a -> b`, `rank[a] < rank[b]`. Hence the graph
//!   has no cycle.

use super::index::BlockIndex;
use alloc::collections::BTreeSet;
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

/// One block's edges one way: the first kept inline, the rest in `more`.
#[derive(Default)]
struct Edges {
    one: Option<u64>,
    more: Vec<u64>,
}

impl Edges {
    fn is_empty(&self) -> bool {
        self.one.is_none()
    }

    fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.one.into_iter().chain(self.more.iter().copied())
    }

    fn contains(&self, b: u64) -> bool {
        self.one == Some(b) || self.more.contains(&b)
    }

    /// Adds `b` (not already there).
    fn push(&mut self, b: u64) {
        if self.one.is_none() {
            self.one = Some(b);
        } else {
            self.more.push(b);
        }
    }

    /// Takes `b` out; `one` is empty only when `more` is.
    fn remove(&mut self, b: u64) {
        if self.one == Some(b) {
            self.one = self.more.pop();
        } else if let Some(at) = self.more.iter().position(|&x| x == b) {
            self.more.swap_remove(at);
        }
    }

    /// Keeps only the blocks `keep` says.
    fn retain(&mut self, keep: impl Fn(u64) -> bool) {
        self.more.retain(|&x| keep(x));
        if self.one.is_some_and(|o| !keep(o)) {
            self.one = self.more.pop();
        }
    }

    /// Empties it, keeping `more`'s capacity.
    fn clear(&mut self) {
        self.one = None;
        self.more.clear();
    }
}

/// A block with edges: its place in the topological order and its edges.
#[derive(Default)]
struct Node {
    rank: i64,
    /// Blocks it waits for (edges `x -> block`).
    waits: Edges,
    /// Blocks waiting for it (edges `block -> x`).
    waiters: Edges,
}

pub struct Order {
    /// Block -> its node's slot.
    index: BlockIndex,
    slots: Vec<Node>,
    /// Slots not in use (their `more` vectors keep their capacity).
    free: Vec<usize>,
    /// Lowest and highest rank given so far (new blocks go outside both).
    lowest: i64,
    highest: i64,
    /// Blocks the searches of edges against the ranks visited, in all
    /// (the cost the host tests bound; an agreeing edge adds nothing).
    pub visited: u64,
}

impl Default for Order {
    fn default() -> Order {
        Order::new()
    }
}

impl Order {
    pub fn new() -> Order {
        Order::with_blocks(0)
    }

    /// A graph whose hash table is sized for about `blocks` blocks with
    /// edges (the cache's buffers: a block with edges is pending, so in a
    /// buffer); more only make its chains longer.
    pub fn with_blocks(blocks: usize) -> Order {
        Order {
            index: BlockIndex::new(blocks),
            slots: Vec::new(),
            free: Vec::new(),
            lowest: 0,
            highest: 0,
            visited: 0,
        }
    }

    fn get(&self, block: u64) -> Option<&Node> {
        self.index.get(&block).map(|&i| &self.slots[i])
    }

    /// `block`'s node, which exists (every caller has given it a rank).
    fn node(&mut self, block: u64) -> &mut Node {
        let i = *self.index.get(&block).expect("a block with an edge has a node");
        &mut self.slots[i]
    }

    /// A node for `block` (which has none) at rank `rank`.
    fn insert(&mut self, block: u64, rank: i64) {
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i].rank = rank;
                i
            }
            None => {
                self.slots.push(Node { rank, ..Node::default() });
                self.slots.len() - 1
            }
        };
        self.index.insert(block, i);
    }

    /// Frees `block`'s node if it has no edge left.
    fn drop_if_bare(&mut self, block: u64) {
        let Some(&i) = self.index.get(&block) else { return };
        let n = &mut self.slots[i];
        if n.waits.is_empty() && n.waiters.is_empty() {
            n.waits.clear();
            n.waiters.clear();
            self.index.remove(&block);
            self.free.push(i);
        }
    }

    /// The blocks `block` waits for.
    pub fn waits(&self, block: u64) -> impl Iterator<Item = u64> + '_ {
        self.get(block).into_iter().flat_map(|n| n.waits.iter())
    }

    /// The blocks waiting for `block`.
    pub fn waiters(&self, block: u64) -> impl Iterator<Item = u64> + '_ {
        self.get(block).into_iter().flat_map(|n| n.waiters.iter())
    }

    fn rank(&self, block: u64) -> Option<i64> {
        self.get(block).map(|n| n.rank)
    }

    /// Is the edge `first -> then` in the graph?
    pub fn contains(&self, first: u64, then: u64) -> bool {
        self.get(then).is_some_and(|n| n.waits.contains(first))
    }

    pub fn has_waits(&self, block: u64) -> bool {
        self.get(block).is_some_and(|n| !n.waits.is_empty())
    }

    /// Edges in the graph.
    #[cfg(test)]
    pub fn edges(&self) -> usize {
        self.edge_set().len()
    }

    /// Every edge `(first, then)` (tests).
    #[cfg(test)]
    pub fn edge_set(&self) -> BTreeSet<(u64, u64)> {
        let blocks = self.slot_blocks();
        let mut set = BTreeSet::new();
        for (&i, &block) in &blocks {
            set.extend(self.slots[i].waiters.iter().map(|t| (block, t)));
        }
        set
    }

    /// Slot -> block, for every slot in use (tests: a scan).
    #[cfg(test)]
    fn slot_blocks(&self) -> alloc::collections::BTreeMap<usize, u64> {
        let mut blocks = BTreeSet::new();
        for n in &self.slots {
            blocks.extend(n.waits.iter());
            blocks.extend(n.waiters.iter());
        }
        blocks.into_iter().filter_map(|b| self.index.get(&b).map(|&i| (i, b))).collect()
    }

    /// Blocks with a rank (those with an edge).
    #[cfg(test)]
    pub fn nodes(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Adds `first -> then` unless it would close a cycle.
    pub fn add(&mut self, first: u64, then: u64) -> Added {
        if first == then {
            return Added::Cycle;
        }
        if self.contains(first, then) {
            return Added::Added;
        }
        match (self.rank(first), self.rank(then)) {
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
                    self.insert(first, self.lowest);
                }
                if then_rank.is_none() {
                    self.highest += 1;
                    self.insert(then, self.highest);
                }
            }
        }
        self.node(first).waiters.push(then);
        self.node(then).waits.push(first);
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
                let r = self.rank(w).expect("an edge's end has a node");
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
                let r = self.rank(w).expect("an edge's end has a node");
                // Ranks between hi and lo reached from both sides would
                // make a path then -> ... -> first: ruled out above.
                if r > hi && seen.insert(w) {
                    stack.push(w);
                }
            }
        }
        let by_rank = |order: &Order, set: &mut Vec<u64>| set.sort_unstable_by_key(|&b| order.rank(b));
        by_rank(self, &mut forward);
        by_rank(self, &mut backward);
        let mut ranks: Vec<i64> = backward.iter().chain(&forward).filter_map(|&b| self.rank(b)).collect();
        ranks.sort_unstable();
        for (&b, r) in backward.iter().chain(&forward).zip(ranks) {
            self.node(b).rank = r;
        }
        true
    }

    /// Removes every edge into and out of `block` (its write completed, or
    /// it was freed and will never be written).
    pub fn remove(&mut self, block: u64) {
        let Some(&i) = self.index.get(&block) else { return };
        let firsts = core::mem::take(&mut self.slots[i].waits);
        for f in firsts.iter() {
            self.node(f).waiters.remove(block);
            self.drop_if_bare(f);
        }
        let thens = core::mem::take(&mut self.slots[i].waiters);
        for t in thens.iter() {
            self.node(t).waits.remove(block);
            self.drop_if_bare(t);
        }
        // Give the vectors' capacity back to the slot, emptied.
        let n = &mut self.slots[i];
        (n.waits, n.waiters) = (firsts, thens);
        n.waits.clear();
        n.waiters.clear();
        self.drop_if_bare(block);
    }

    /// [`Order::remove`] of every block from `first` to `first + count - 1`
    /// (the run of one completed write): a block waiting for several of
    /// them (an indirect block for its data blocks) is looked through once
    /// for the whole run, where removing edge by edge looked through its
    /// list once per edge (256 data blocks: 32,000 comparisons).
    pub fn remove_run(&mut self, first: u64, count: u64) {
        let run = first..first.saturating_add(count);
        let mut outside: Vec<u64> = Vec::new();
        for block in run.clone() {
            self.remove_waits(block);
            let Some(&i) = self.index.get(&block) else { continue };
            let mut thens = core::mem::take(&mut self.slots[i].waiters);
            for t in thens.iter() {
                if run.contains(&t) {
                    self.node(t).waits.remove(block);
                    self.drop_if_bare(t);
                } else if !outside.contains(&t) {
                    outside.push(t);
                }
            }
            thens.clear();
            self.slots[i].waiters = thens;
            self.drop_if_bare(block);
        }
        for t in outside {
            self.node(t).waits.retain(|b| !run.contains(&b));
            self.drop_if_bare(t);
        }
    }

    /// Removes the edges into `block` (its waits are on the disk).
    pub fn remove_waits(&mut self, block: u64) {
        let Some(&i) = self.index.get(&block) else { return };
        let mut firsts = core::mem::take(&mut self.slots[i].waits);
        for f in firsts.iter() {
            self.node(f).waiters.remove(block);
            self.drop_if_bare(f);
        }
        firsts.clear();
        self.slots[i].waits = firsts;
        self.drop_if_bare(block);
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
        let blocks = self.slot_blocks();
        for (i, n) in self.slots.iter().enumerate() {
            let Some(&block) = blocks.get(&i) else {
                if !n.waits.is_empty() || !n.waiters.is_empty() || !self.free.contains(&i) {
                    return Err("a slot no block names, with edges or not free");
                }
                continue;
            };
            if self.free.contains(&i) {
                return Err("a free slot in use");
            }
            if n.waits.is_empty() && n.waiters.is_empty() {
                return Err("a rank without an edge");
            }
            for t in n.waiters.iter() {
                if n.waiters.iter().filter(|&x| x == t).count() != 1 {
                    return Err("an edge twice");
                }
                let Some(other) = self.get(t) else { return Err("an edge to a block without a node") };
                if !other.waits.contains(block) {
                    return Err("waits and waiters disagree");
                }
                if n.rank >= other.rank {
                    return Err("an edge against the ranks");
                }
            }
            for f in n.waits.iter() {
                if !self.get(f).is_some_and(|o| o.waiters.contains(block)) {
                    return Err("waits and waiters disagree");
                }
            }
        }
        if blocks.len() != self.nodes() {
            return Err("slots and index disagree");
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
                    2 => {
                        // A completed transfer's run of blocks.
                        let count = 1 + rng.below(6);
                        order.remove_run(a, count);
                        for x in a..a + count {
                            reference.remove(x);
                        }
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
                let edges: BTreeSet<(u64, u64)> = order.edge_set();
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
