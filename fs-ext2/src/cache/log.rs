//! The journal's write side in the cache: a commit at `fsync`/`sync`
//! (the dirty blocks the targets depend on, copied into the log as one
//! transaction, one device flush) and the checkpoint that empties the log
//! (issue 12, branch `jbd`; `docs/filesystem.md`, "The journal
//! (jbd2)").
//!
//! The log is jbd2's (`crate::journal`): a descriptor block, the block
//! copies (a copy whose first word is the journal's magic number is
//! written with it zeroed and tagged `ESCAPE`), a commit block with the
//! crc32 of the descriptor and the copies (`COMPAT_CHECKSUM`), and the
//! journal superblock says `ASYNC_COMMIT`: the whole transaction goes in
//! one transfer before one flush, and a transaction torn by a power cut
//! fails its checksum at replay and ends the log (`recovery.c`), so it
//! needs no flush of its own before its commit block (Linux's
//! `journal_async_commit`, which sets the same two features).
//!
//! A commit of `targets` (`Cache::commit`):
//! 1. the targets' *fresh* blocks ([`Cache::allocated`]: nothing on the
//!    disk points at them yet) go home first by the order as before, with
//!    what they wait for (ordered mode: a file's new data before the
//!    commit that makes it reachable);
//! 2. the closure: the targets and every block still pending they wait
//!    for, transitively ([`Cache::order`]); its fresh blocks go home the
//!    same way; then a flush if anything was written that a logged block
//!    waits for;
//! 3. its other dirty blocks (bitmaps, inode blocks, directory and older
//!    indirect blocks, overwritten data) whose contents are not already
//!    the log's copy go into the log, with the journal superblock
//!    (`s_start`) and the superblock's `needs_recovery` when the log was
//!    empty, then one flush;
//! 4. they stay dirty in the cache, and their waits are over (their
//!    contents are durable): they go home later with no order among
//!    themselves (the checkpoint).
//!
//! **The rule that keeps replay right**: a block with a copy in the live
//! log is written home only with exactly that copy's contents. A home
//! write of other contents (the block changed since, or was freed and
//! given out again) would be undone by a replay after a power cut while
//! the blocks written home after it stayed: so before such a write the
//! log is emptied (`Cache::checkpoint`: every logged copy not yet home
//! written, a flush, the journal superblock's `s_start` = 0 and
//! `needs_recovery` cleared, a flush). That also stands in for revoke
//! records: no freed block's old copy survives in a log that a later
//! home write could meet. A transaction that would not fit the space
//! left empties the log first; one larger than the whole log is written
//! home in order instead.
//!
//! What it is not: a wrapping log. Each transaction goes after the last
//! one; the log restarts at its first block after each checkpoint.
//!
//! Invariants:
//! - The log's live state on the disk is always a prefix of committed
//!   transactions starting at `s_start` (or empty); whatever a power cut
//!   leaves, replaying it and then taking the home copies of all other
//!   blocks gives a state the write order allows.
//! - `logged` holds, for each block of a transaction still in the live
//!   log, the latest committed copy.

use super::{Cache, State};
use crate::device::{BlockDevice, Direction, Transfer};
use crate::journal::{self, HEADER_BYTES, MAGIC, blocktype, commit as cb, feature, jsb, tag};
use crate::layout::{self, le32, put32};
use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::Errno;
use protocols::unix::errno::EIO;

/// Most bytes of committed copies kept in memory (`Log::logged`, one per
/// block in the live log): past it the log is emptied before the next
/// transaction, and a transaction larger than it goes home in order. A
/// large volume's journal (mke2fs makes up to 1 GiB) would otherwise
/// keep as much memory; 4 MiB is the whole journal of the 64 MiB
/// volumes the tests and benchmarks use.
pub const MAX_LOGGED_BYTES: usize = 4 << 20;

/// The tags of the log's own transfers (no buffer of the pool is in
/// them): above every tag the cache gives its buffers' transfers.
const LOG_TAG: u64 = 1 << 63;

/// Where the journal is, as `crate::fs` found it at mount (empty: a
/// volume that needed recovery was replayed first).
#[derive(Clone, Debug)]
pub struct JournalArea {
    /// The volume block of each journal block; `[0]` holds the journal
    /// superblock.
    pub blocks: Vec<u64>,
    /// The first log block (after the superblock).
    pub first: u32,
    /// The next transaction's sequence number.
    pub sequence: u32,
    /// The journal superblock as read.
    pub superblock: Vec<u8>,
    /// Where the volume's superblock (and its `needs_recovery` bit) is.
    pub sb_block: u64,
    pub sb_offset: usize,
}

#[derive(Debug)]
struct Logged {
    data: Box<[u8]>,
    /// A home write of exactly this copy was started since it was logged.
    is_home: bool,
}

/// The log's state in memory.
#[derive(Debug)]
pub(super) struct Log {
    area: JournalArea,
    /// The next log block a transaction goes to.
    head: u32,
    /// The disk's journal superblock says the log starts at `first`
    /// (written with the first transaction after a checkpoint).
    is_live: bool,
    sequence: u32,
    logged: BTreeMap<u64, Logged>,
    in_flight: usize,
    /// A log or checkpoint write failed since the last flush.
    has_error: bool,
    /// The time stamped on the last commit block.
    last_commit_s: u32,
}

/// Counts for `kinfo` and the tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogStats {
    /// Transactions committed, and the blocks copied into them.
    pub commits: u64,
    pub logged_blocks: u64,
    /// Log transfers (a transaction is one unless the journal's blocks
    /// are not consecutive where it falls).
    pub log_transfers: u64,
    /// Checkpoints (the log emptied), and the copies they wrote home.
    pub checkpoints: u64,
    pub checkpoint_blocks: u64,
    /// `fsync`s too large for the log, written home in order instead.
    pub too_large: u64,
    /// Home writes of a block changed since it was logged, which logged
    /// it again first (`Cache::log_before_home`).
    pub conflicts: u64,
    /// Pending blocks the commits' closure walks took in (step 2 of
    /// `Cache::commit`): after the fresh blocks went home, only what is
    /// still dirty, not an 8 MiB file's data blocks (branch `jfast`).
    pub closure_blocks: u64,
}

impl<D: BlockDevice> Cache<D> {
    /// From now on `fsync` and `sync` commit through the journal in
    /// `area` ([`Cache::commit`]); the log must be empty on the disk.
    pub fn attach_log(&mut self, area: JournalArea) {
        let first = area.first;
        let sequence = area.sequence;
        self.log = Some(Log {
            area,
            head: first,
            is_live: false,
            sequence,
            logged: BTreeMap::new(),
            in_flight: 0,
            has_error: false,
            last_commit_s: 0,
        });
    }

    pub fn has_log(&self) -> bool {
        self.log.is_some()
    }

    pub fn log_stats(&self) -> LogStats {
        self.log_stats
    }

    /// Every dirty block (`sync`'s transaction).
    pub fn dirty_list(&self) -> Vec<u64> {
        self.bufs.iter().filter(|b| b.state == State::Dirty).map(|b| b.block).collect()
    }

    /// Blocks of the log after its superblock: the most one transaction
    /// may take.
    fn log_capacity(&self) -> u32 {
        let by_memory = (MAX_LOGGED_BYTES / self.block_bytes) as u32;
        self.log.as_ref().map_or(0, |l| (l.area.blocks.len() as u32 - l.area.first).min(by_memory))
    }

    /// Tags in one descriptor block: the header, then 8 bytes a tag and 16
    /// of UUID after the first.
    fn tags_per_descriptor(&self) -> usize {
        (self.block_bytes - HEADER_BYTES - 16) / 8
    }

    /// Log blocks a transaction of `n` blocks takes: its descriptors, the
    /// copies and the commit block.
    fn transaction_blocks(&self, n: usize) -> u32 {
        (n.div_ceil(self.tags_per_descriptor()) + n + 1) as u32
    }

    /// Whether writing `block`'s present contents home breaks the rule
    /// of the module doc (a logged copy with other contents).
    pub(super) fn log_conflicts(&self, block: u64) -> bool {
        let Some(log) = &self.log else { return false };
        let Some(copy) = log.logged.get(&block) else { return false };
        match self.map.get(&block).and_then(|&i| self.bufs[i].data.as_deref()) {
            Some(data) => *copy.data != *data,
            None => true,
        }
    }

    /// `block`'s present contents, about to go home, differ from its
    /// copy in the live log: they are committed first, alone (one small
    /// transaction, one flush), so that a replay after a power cut writes
    /// them and not the older copy. Its waits are complete (and, on a
    /// volatile cache, flushed unless it is fresh: then a flush first).
    pub(super) fn log_before_home(&mut self, block: u64) -> Result<(), Errno> {
        self.log_stats.conflicts += 1;
        if self.is_volatile && (self.needs_barrier.contains(&block) || self.is_fresh(block)) {
            self.log_flush()?;
        }
        let now_s = self.log.as_ref().map_or(0, |l| l.last_commit_s);
        self.write_transaction(&[block], now_s, true)
    }

    /// A home write of `block` is starting with its logged contents.
    pub(super) fn log_note_home(&mut self, block: u64) {
        if let Some(copy) = self.log.as_mut().and_then(|l| l.logged.get_mut(&block)) {
            copy.is_home = true;
        }
    }

    /// A log transfer came back.
    pub(super) fn log_finished(
        &mut self,
        transfer: Transfer,
        result: Result<(), Errno>,
    ) -> Result<(), Errno> {
        let Some(log) = &mut self.log else { return Err(EIO) };
        if transfer.tag & LOG_TAG == 0 || log.in_flight == 0 {
            return Err(EIO);
        }
        log.in_flight -= 1;
        log.has_error |= result.is_err();
        self.has_unflushed_writes = true;
        self.finished_transfers += 1;
        Ok(())
    }

    fn log_submit(&mut self, first_block: u64, buffers: Vec<Box<[u8]>>) {
        let tag = LOG_TAG | self.next_tag;
        self.next_tag += 1;
        if let Some(log) = &mut self.log {
            log.in_flight += 1;
        }
        self.stats.write_transfers += 1;
        self.stats.blocks_written += buffers.len() as u64;
        self.dev.submit(Transfer {
            tag,
            direction: Direction::Write,
            first_sector: first_block * self.sectors_per_block,
            buffers,
        });
    }

    /// Waits for every log transfer; `EIO` if one failed.
    fn log_wait(&mut self) -> Result<(), Errno> {
        while self.log.as_ref().is_some_and(|l| l.in_flight > 0) {
            let (transfer, result) = self.dev.complete().ok_or(EIO)?;
            if transfer.tag & LOG_TAG != 0 {
                self.log_finished(transfer, result)?;
            } else {
                self.finished(transfer, result)?;
            }
        }
        let failed = self.log.as_mut().is_some_and(|log| core::mem::take(&mut log.has_error));
        if failed { Err(EIO) } else { Ok(()) }
    }

    /// A device flush that must happen (the log's order), counted as
    /// one of the cache's.
    fn log_flush(&mut self) -> Result<(), Errno> {
        self.flush_device()
    }

    /// The journal superblock with the log starting at `start` (0:
    /// empty) and the features this commit path writes.
    fn journal_superblock(&self, start: u32, sequence: u32) -> Box<[u8]> {
        let Some(log) = &self.log else { return Box::default() };
        let mut b = log.area.superblock.clone();
        b.resize(self.block_bytes, 0);
        if journal::be32(&b, 4) == blocktype::SUPERBLOCK_V1 {
            journal::put_be32(&mut b, 4, blocktype::SUPERBLOCK_V2);
        }
        journal::put_be32(&mut b, jsb::START, start);
        journal::put_be32(&mut b, jsb::SEQUENCE, sequence);
        let compat = journal::be32(&b, jsb::FEATURE_COMPAT) | feature::COMPAT_CHECKSUM;
        let incompat = journal::be32(&b, jsb::FEATURE_INCOMPAT) | feature::INCOMPAT_ASYNC_COMMIT;
        journal::put_be32(&mut b, jsb::FEATURE_COMPAT, compat);
        journal::put_be32(&mut b, jsb::FEATURE_INCOMPAT, incompat);
        b.into_boxed_slice()
    }

    /// Sets or clears `needs_recovery` in the superblock's buffer and
    /// starts its write. Not through `Cache::modify`: its write-behind
    /// could start the home write of a block changed since it was logged,
    /// which logs it first (`Cache::log_before_home`), a transaction in
    /// the middle of the one being built. The superblock is pinned and
    /// read at mount, so taking its buffer evicts nothing.
    fn set_needs_recovery(&mut self, on: bool) -> Result<(), Errno> {
        let Some(log) = &self.log else { return Ok(()) };
        let (block, at) = (log.area.sb_block, log.area.sb_offset + layout::sb::FEATURE_INCOMPAT);
        let i = self.acquire(block, true)?;
        self.mark_dirty(i);
        let b = self.data_mut(i)?;
        let v = le32(b, at);
        let bit = layout::feature::INCOMPAT_RECOVER;
        put32(b, at, if on { v | bit } else { v & !bit });
        self.write_run_of(i, false, 1)?;
        Ok(())
    }

    /// Empties the log: every logged copy not yet written home is, the
    /// writes complete, a flush; then the journal superblock says empty
    /// and `needs_recovery` is cleared, a flush. Afterwards no block has a
    /// logged copy. Nothing to do when the log is empty.
    pub fn checkpoint(&mut self) -> Result<(), Errno> {
        let Some(log) = &mut self.log else { return Ok(()) };
        if !log.is_live && log.logged.is_empty() {
            return Ok(());
        }
        let copies: Vec<(u64, Box<[u8]>)> = core::mem::take(&mut log.logged)
            .into_iter()
            .filter(|(_, c)| !c.is_home)
            .map(|(b, c)| (b, c.data))
            .collect();
        self.log_stats.checkpoints += 1;
        self.log_stats.checkpoint_blocks += copies.len() as u64;
        // Home writes of logged copies already started must be complete
        // before the flush that makes the log's emptying safe.
        while !self.in_flight.is_empty() {
            self.wait_one()?;
        }
        let mut run: Vec<Box<[u8]>> = Vec::new();
        let mut run_start = 0;
        for (block, data) in copies {
            if !run.is_empty() && (block != run_start + run.len() as u64 || run.len() >= self.max_run_blocks)
            {
                let buffers = core::mem::take(&mut run);
                self.log_submit(run_start, buffers);
            }
            if run.is_empty() {
                run_start = block;
            }
            run.push(data);
        }
        if !run.is_empty() {
            self.log_submit(run_start, run);
        }
        self.log_wait()?;
        self.log_flush()?;
        let (sequence, jsb_block) = match &self.log {
            Some(log) => (log.sequence, log.area.blocks[0]),
            None => return Ok(()),
        };
        let sb = self.journal_superblock(0, sequence);
        self.log_submit(jsb_block, vec![sb]);
        self.set_needs_recovery(false)?;
        self.log_wait()?;
        while !self.in_flight.is_empty() {
            self.wait_one()?;
        }
        self.log_flush()?;
        if let Some(log) = &mut self.log {
            log.head = log.area.first;
            log.is_live = false;
        }
        Ok(())
    }

    /// `fsync` of `targets` through the journal (the module doc's steps);
    /// without a journal, their ordered write and a flush. `now_s` is
    /// the commit block's time.
    pub fn commit(&mut self, targets: &[u64], now_s: u32) -> Result<(), Errno> {
        if self.log.is_none() {
            self.write_blocks(targets)?;
            return self.flush();
        }
        // 1. The targets' fresh blocks home first, with what they wait
        // for, before the closure is walked: the walk visits every pending
        // block a target waits for (an 8 MiB file's 8,192 data blocks
        // through its new indirect blocks), and walked first it kept the
        // device idle for most of the 16.7 million instructions before
        // an 8 MiB `fsync`'s first transfer (branch `jfast`). Once they are
        // written it meets them clean and stops.
        let fresh: Vec<u64> = targets.iter().copied().filter(|&b| self.is_fresh_unlogged(b)).collect();
        self.send_fresh_home(fresh, now_s)?;
        // 2. The closure: the targets and every pending block they wait
        // for, transitively. Its fresh blocks not among the targets (a new
        // indirect block of another file whose inode shares the target's
        // inode block) go home too, the same way.
        let mut closure = BTreeSet::new();
        let mut stack = targets.to_vec();
        while let Some(b) = stack.pop() {
            if !self.is_pending(b) || !closure.insert(b) {
                continue;
            }
            stack.extend(self.order.waits(b));
        }
        self.log_stats.closure_blocks += closure.len() as u64;
        let fresh: Vec<u64> = closure.iter().copied().filter(|&b| self.is_fresh_unlogged(b)).collect();
        self.send_fresh_home(fresh, now_s)?;
        while !self.in_flight.is_empty() {
            self.wait_one()?;
        }
        // 3. What goes into the log: dirty, not already the log's copy.
        let mut blocks: Vec<u64> = Vec::new();
        let sb_block = self.log.as_ref().map(|l| l.area.sb_block);
        for &b in &closure {
            let Some(&i) = self.map.get(&b) else { continue };
            if self.bufs[i].state != State::Dirty {
                continue;
            }
            if Some(b) == sb_block {
                // The superblock is never logged: its counts are in no
                // order (recounted after a cut), and its `needs_recovery`
                // is written home by the commit and the checkpoint, which
                // a logged copy would make a conflict every time. It goes
                // home now, within the commit's flush (`sync`).
                self.write_run_of(i, false, 1)?;
                continue;
            }
            let data = self.bufs[i].data.as_deref().ok_or(EIO)?;
            let is_logged =
                self.log.as_ref().and_then(|l| l.logged.get(&b)).is_some_and(|c| *c.data == *data);
            if !is_logged {
                blocks.push(b);
            }
        }
        if blocks.is_empty() {
            return self.flush();
        }
        if self.transaction_blocks(blocks.len()) > self.log_capacity() {
            // Larger than the log: home in order, as without a journal.
            self.log_stats.too_large += 1;
            self.write_blocks(&blocks)?;
            return self.flush();
        }
        // What the logged blocks wait for must be durable first: the
        // fresh blocks just written, and any completed write they wait
        // for, on a volatile cache (marked by `Cache::written` and
        // `Cache::order`; a fresh block among them is not marked, so
        // it counts as waiting).
        let needs_flush_first =
            self.is_volatile && blocks.iter().any(|&b| self.needs_barrier.contains(&b) || self.is_fresh(b));
        if needs_flush_first {
            self.log_flush()?;
        }
        self.write_transaction(&blocks, now_s, true)?;
        // A write error since the last sync is reported here, as
        // `Cache::flush` does.
        if core::mem::take(&mut self.has_write_error) { Err(EIO) } else { Ok(()) }
    }

    /// Whether `block` is dirty, fresh ([`Cache::allocated`]: nothing on
    /// the disk points at it) and has no copy in the live log: a commit
    /// writes it home rather than logging it (ordered mode).
    fn is_fresh_unlogged(&self, block: u64) -> bool {
        self.map.get(&block).is_some_and(|&i| self.bufs[i].state == State::Dirty && self.bufs[i].is_fresh)
            && !self.log.as_ref().is_some_and(|l| l.logged.contains_key(&block))
    }

    /// Writes the fresh blocks `fresh` home, each after the pending blocks
    /// it waits for, and waits for them all ([`Cache::write_together`]).
    ///
    /// The dirty blocks they wait for directly (the data blocks under a new
    /// indirect block) are named to the write-out first: it would reach
    /// them through `fresh` anyway, but only after looking through every
    /// fresh block's waits (an 8 MiB file's 8,192 data blocks), millions
    /// of instructions with the device idle (branch `jfast`); named
    /// first, they leave as soon as they are ready, as in the ordered
    /// writes' `fsync`.
    ///
    /// What they wait for that is logged with other contents (a bitmap
    /// logged by an earlier commit) would be logged again alone, a flush
    /// each, when the order writes it home (`Cache::log_before_home`).
    /// Those whose own waits are durable go into one transaction first,
    /// without a flush of its own: a fresh block's waits need only have
    /// completed (nothing on the disk reaches it), and the flush after the
    /// fresh blocks makes it durable with them.
    fn send_fresh_home(&mut self, fresh: Vec<u64>, now_s: u32) -> Result<(), Errno> {
        if fresh.is_empty() {
            return Ok(());
        }
        let mut early: Vec<u64> = Vec::new();
        let mut all: Vec<u64> = Vec::new();
        for &f in &fresh {
            for w in self.order.waits(f) {
                let Some(&i) = self.map.get(&w) else { continue };
                if self.bufs[i].state != State::Dirty || self.bufs[i].is_fresh {
                    // In flight (waited for at the end), clean, or fresh
                    // (in `fresh` or reached from it).
                    continue;
                }
                // The log's own check first: a block with no logged copy
                // (a new data block, nearly every wait here) is done with
                // one lookup.
                if !self.log_conflicts(w) {
                    all.push(w);
                    continue;
                }
                let is_ready =
                    !self.needs_barrier.contains(&w) && !self.order.waits(w).any(|x| self.is_pending(x));
                if is_ready && !early.contains(&w) {
                    early.push(w);
                }
            }
        }
        if !early.is_empty() && self.transaction_blocks(early.len()) <= self.log_capacity() {
            let now = self.log.as_ref().map_or(now_s, |l| l.last_commit_s.max(now_s));
            self.write_transaction(&early, now, false)?;
        }
        all.extend(fresh);
        self.write_together(all)
    }

    /// Builds and writes one transaction of `blocks` (dirty, their waits
    /// durable), with the journal superblock and `needs_recovery` when
    /// the log was empty; one flush; then they wait for nothing.
    ///
    /// Without `flush` (the blocks the fresh ones wait for, at `commit`):
    /// the transaction is written and complete but not yet durable, and
    /// its blocks keep their waiters; the flush after the fresh blocks
    /// covers it.
    fn write_transaction(&mut self, blocks: &[u64], now_s: u32, flush: bool) -> Result<(), Errno> {
        let bs = self.block_bytes;
        let tags_per_block = self.tags_per_descriptor();
        let needed = self.transaction_blocks(blocks.len());
        if needed > self.log_capacity() {
            // Every caller checks first; never index past the log.
            return Err(EIO);
        }
        let (space, kept) = {
            let log = self.log.as_ref().ok_or(EIO)?;
            (log.area.blocks.len() as u32 - log.head, log.logged.len())
        };
        if needed > space || (kept + blocks.len()) * bs > MAX_LOGGED_BYTES {
            self.checkpoint()?;
        }
        let (sequence, head, is_live) = {
            let log = self.log.as_ref().ok_or(EIO)?;
            (log.sequence, log.head, log.is_live)
        };
        // The transaction's blocks in log order, and the copies to keep.
        let mut out: Vec<Box<[u8]>> = Vec::with_capacity(needed as usize);
        let mut copies: Vec<(u64, Box<[u8]>)> = Vec::with_capacity(blocks.len());
        let mut crc = !0u32;
        for chunk in blocks.chunks(tags_per_block) {
            let mut desc = vec![0u8; bs].into_boxed_slice();
            journal::put_header(&mut desc, blocktype::DESCRIPTOR, sequence);
            let mut at = HEADER_BYTES;
            let mut data_blocks = Vec::with_capacity(chunk.len());
            for (k, &b) in chunk.iter().enumerate() {
                let &i = self.map.get(&b).ok_or(EIO)?;
                let data: Box<[u8]> = self.bufs[i].data.as_deref().ok_or(EIO)?.into();
                let mut flags = 0;
                let mut logged = data.clone();
                if journal::be32(&data, 0) == MAGIC {
                    flags |= tag::ESCAPE;
                    logged[..4].fill(0);
                }
                if k > 0 {
                    flags |= tag::SAME_UUID;
                }
                if k + 1 == chunk.len() {
                    flags |= tag::LAST_TAG;
                }
                journal::put_be32(&mut desc, at, b as u32);
                desc[at + 6..at + 8].copy_from_slice(&(flags as u16).to_be_bytes());
                at += 8;
                if k == 0 {
                    // The first tag's UUID: the journal superblock's
                    // (an internal journal's is the file system's; jbd2
                    // writes it, replay does not check it).
                    let uuid =
                        self.log.as_ref().map(|l| l.area.superblock.get(0x30..0x40).map(|u| u.to_vec()));
                    if let Some(Some(u)) = uuid {
                        desc[at..at + 16].copy_from_slice(&u);
                    }
                    at += 16;
                }
                data_blocks.push(logged);
                copies.push((b, data));
            }
            crc = journal::crc32_be(crc, &desc);
            for d in &data_blocks {
                crc = journal::crc32_be(crc, d);
            }
            out.push(desc);
            out.extend(data_blocks);
        }
        let mut commit = vec![0u8; bs].into_boxed_slice();
        journal::put_header(&mut commit, blocktype::COMMIT, sequence);
        commit[cb::CHKSUM_TYPE] = journal::CRC32_CHKSUM;
        commit[cb::CHKSUM_SIZE] = journal::CRC32_CHKSUM_SIZE;
        journal::put_be32(&mut commit, cb::CHKSUM, crc);
        commit[cb::COMMIT_SEC..cb::COMMIT_SEC + 8].copy_from_slice(&(now_s as u64).to_be_bytes());
        out.push(commit);
        // One transfer per run of consecutive volume blocks.
        let places: Vec<u64> = {
            let log = self.log.as_ref().ok_or(EIO)?;
            (head..head + needed).map(|k| log.area.blocks[k as usize]).collect()
        };
        if !is_live {
            let sb = self.journal_superblock(head, sequence);
            let jsb_block = self.log.as_ref().ok_or(EIO)?.area.blocks[0];
            self.log_submit(jsb_block, vec![sb]);
            self.set_needs_recovery(true)?;
        }
        let mut k = 0;
        let mut buffers = out.into_iter();
        while k < places.len() {
            let mut n = 1;
            while k + n < places.len() && places[k + n] == places[k] + n as u64 && n < self.max_run_blocks {
                n += 1;
            }
            let run: Vec<Box<[u8]>> = buffers.by_ref().take(n).collect();
            self.log_submit(places[k], run);
            self.log_stats.log_transfers += 1;
            k += n;
        }
        self.log_wait()?;
        while !self.in_flight.is_empty() {
            self.wait_one()?;
        }
        if flush {
            self.log_flush()?;
        }
        // Committed: the copies are durable in the log, so whatever
        // waited for these contents may go, and they wait for nothing.
        self.log_stats.commits += 1;
        self.log_stats.logged_blocks += copies.len() as u64;
        for (b, data) in copies {
            if flush {
                self.order.remove(b);
                self.needs_barrier.remove(&b);
                if let Some(&i) = self.map.get(&b) {
                    self.bufs[i].is_fresh = false;
                }
            }
            if let Some(log) = &mut self.log {
                log.logged.insert(b, Logged { data, is_home: false });
            }
        }
        if let Some(log) = &mut self.log {
            log.last_commit_s = now_s;
            log.head = head + needed;
            log.sequence = sequence.wrapping_add(1);
            log.is_live = true;
        }
        Ok(())
    }
}
