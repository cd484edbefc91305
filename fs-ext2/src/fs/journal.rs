//! The journal at mount: a volume marked `needs_recovery` (ext3 left by
//! a power cut, or by Linux without unmounting) has its committed
//! transactions written home before anything else reads it
//! (`crate::journal` reads the format and plans the replay).
//!
//! What it is not: the commit path (transactions written at `fsync`), and
//! not an external journal (refused: `s_journal_dev`, or a journal
//! superblock with more than one user).
//!
//! Invariants:
//! - Everything is read and checked before the first write: a journal
//!   this cannot read (bad magic, another block size, unknown
//!   incompatible features, a log longer than inode 8, a hole in inode 8,
//!   a tag or pointer outside the volume) refuses the mount and writes
//!   nothing.
//! - The order of the writes is `e2fsck`'s (`e2fsck/journal.c`,
//!   `recover_ext3_journal`): the replayed blocks, a flush; the journal
//!   superblock emptied (`s_start` = 0, `s_sequence` two past the last
//!   transaction, as e2fsck leaves it), a flush; `needs_recovery` cleared in the superblock,
//!   a flush. A power cut anywhere in between leaves a volume that
//!   replays again to the same result (replaying is idempotent), or an
//!   empty log with the flag still set (cleared at the next mount).

use super::{Fs, MountError, refuse};
use crate::device::BlockDevice;
use crate::journal::recover::{self, Plan};
use crate::journal::{self, JournalSuperblock, jsb};
use crate::layout::{self, feature, le32, put32};
use ::alloc::format;
use ::alloc::string::String;
use ::alloc::vec::Vec;
use protocols::unix::errno::{EINVAL, EIO};

/// What a replay at mount did (for the server's log and the tests).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// Committed transactions found in the log.
    pub transactions: u32,
    /// Blocks written home.
    pub blocks: usize,
    /// Blocks left out for a revoke record.
    pub revoked: u32,
    /// Why the scan stopped.
    pub end: String,
}

/// The journal found through inode 8: its superblock and where each of
/// its blocks is on the volume.
pub(crate) struct JournalMap {
    pub sb: JournalSuperblock,
    pub blocks: Vec<u64>,
    /// The journal superblock's bytes as read.
    pub raw: Vec<u8>,
}

impl<D: BlockDevice> Fs<D> {
    /// Whether the volume has an internal journal (`has_journal`).
    pub fn has_journal(&self) -> bool {
        self.sb.feature_compat & feature::COMPAT_HAS_JOURNAL != 0
    }

    /// Reads inode `s_journal_inum` and the journal superblock, checking
    /// both. Reads only.
    pub(crate) fn load_journal(&mut self) -> Result<JournalMap, String> {
        if self.sb.journal_dev != 0 {
            return Err(format!("external journal on device {:#x}", self.sb.journal_dev));
        }
        let ino = self.sb.journal_inum;
        if ino == 0 || ino >= self.sb.first_ino {
            return Err(format!("journal inode {ino} is not a reserved inode"));
        }
        let inode = self.read_inode_raw(ino).map_err(|_| format!("cannot read journal inode {ino}"))?;
        let bs = self.block_bytes as u64;
        if !inode.is_reg() || inode.size() < 2 * bs || !inode.size().is_multiple_of(bs) {
            return Err(format!(
                "journal inode {ino}: mode {:#o}, size {} (want a regular file of whole blocks)",
                inode.mode(),
                inode.size()
            ));
        }
        let nblocks = inode.size() / bs;
        if nblocks > self.sb.blocks_count as u64 {
            return Err(format!("journal inode {ino}: {nblocks} blocks, more than the volume"));
        }
        let map = self.map_blocks(&inode, 0..nblocks).map_err(|_| {
            format!(
                "journal inode {ino}: {}",
                self.last_damage.clone().unwrap_or_else(|| String::from("unreadable block map"))
            )
        })?;
        if let Some(hole) = map.iter().position(|&b| b == 0) {
            return Err(format!("journal inode {ino}: a hole at block {hole}"));
        }
        let blocks: Vec<u64> = map.into_iter().map(u64::from).collect();
        let raw = self
            .cache
            .read(blocks[0], |b| b.to_vec())
            .map_err(|_| String::from("cannot read the journal superblock"))?;
        let sb = JournalSuperblock::parse(&raw, self.block_bytes, nblocks)?;
        Ok(JournalMap { sb, blocks, raw })
    }

    /// At a read-write mount with `MountOptions::journal`: `fsync` and
    /// `sync` commit through the volume's journal from now on
    /// ([`crate::cache::Cache::commit`]), if it has one this can write:
    /// one whose log is empty (the mount replayed it, or it was clean).
    /// Otherwise the ordered writes stay, and why is kept for the
    /// server's log ([`Fs::journal_state`]).
    pub(crate) fn start_journal(&mut self) {
        self.journal_state = match self.load_journal() {
            Err(why) => format!("not used: {why}"),
            Ok(map) if map.sb.start != 0 => {
                String::from("not used: the log holds transactions but needs_recovery is clear")
            }
            Ok(map) => {
                let state = format!("on, {} blocks", map.blocks.len());
                self.cache.attach_log(crate::cache::JournalArea {
                    first: map.sb.first,
                    sequence: map.sb.sequence,
                    blocks: map.blocks,
                    superblock: map.raw,
                    sb_block: self.sb_block,
                    sb_offset: self.sb_offset,
                });
                state
            }
        };
    }

    /// Whether `fsync` and `sync` commit through the journal, and if not
    /// why (for the server's log): "off" when the option or the volume
    /// says so.
    pub fn journal_state(&self) -> &str {
        &self.journal_state
    }

    /// Reads block `index` of the journal.
    fn read_log_block(&mut self, map: &JournalMap, index: u32) -> Result<Vec<u8>, String> {
        let block =
            *map.blocks.get(index as usize).ok_or_else(|| format!("log block {index} past the journal"))?;
        self.cache
            .read(block, |b| b.to_vec())
            .map_err(|e| format!("cannot read log block {index}: {}", e.name()))
    }

    /// Scans the log: what a replay would write. Reads only.
    pub(crate) fn plan_replay(&mut self) -> Result<(JournalMap, Plan), String> {
        let map = self.load_journal()?;
        let fs_blocks = self.sb.blocks_count as u64;
        let jsb = map.sb.clone();
        let plan = recover::scan(&jsb, fs_blocks, |i| self.read_log_block(&map, i))?;
        // The journal's own blocks are never a replay's target (jbd2 would
        // write them; a log naming them is damaged or crafted).
        if let Some(w) = plan.writes.iter().find(|w| map.blocks.contains(&w.home)) {
            return Err(format!("a tag names block {}, which is the journal's own", w.home));
        }
        Ok((map, plan))
    }

    /// Replays the journal of a volume marked `needs_recovery`: the
    /// planned blocks home, then the log emptied, then the flag cleared,
    /// each behind a flush (the module's invariants). `Err(reason)` before
    /// any write when the journal cannot be read; a device error after
    /// the first write is `Err` too, with the volume still marked (the
    /// next mount replays again).
    pub(crate) fn replay_journal(&mut self) -> Result<ReplayReport, MountError> {
        let (map, plan) = self.plan_replay().map_err(|why| refuse(EINVAL, format!("journal: {why}")))?;
        let io = |e: protocols::unix::Errno| refuse(e, String::from("journal replay: a write failed"));
        for w in &plan.writes {
            let mut data = self.read_log_block(&map, w.log_block).map_err(|why| refuse(EIO, why))?;
            if w.escaped {
                journal::put_be32(&mut data, 0, journal::MAGIC);
            }
            self.cache.overwrite(w.home, |b| b.copy_from_slice(&data)).map_err(io)?;
        }
        self.cache.sync().map_err(io)?;
        // e2fsck and the kernel start the next log one past the sequence
        // after the last transaction (`jbd2_journal_recover`:
        // `j_transaction_sequence = ++info.end_transaction`).
        let next = plan.next_sequence.wrapping_add(1);
        self.cache
            .modify(map.blocks[0], |b| {
                journal::put_be32(b, jsb::START, 0);
                journal::put_be32(b, jsb::SEQUENCE, next);
            })
            .map_err(io)?;
        self.cache.write_block_now(map.blocks[0]).map_err(io)?;
        self.cache.flush().map_err(io)?;
        let (sb_block, at) = (self.sb_block, self.sb_offset + layout::sb::FEATURE_INCOMPAT);
        self.cache
            .modify(sb_block, |b| put32(b, at, le32(b, at) & !feature::INCOMPAT_RECOVER))
            .map_err(io)?;
        self.cache.write_block_now(sb_block).map_err(io)?;
        self.cache.flush().map_err(io)?;
        Ok(ReplayReport {
            transactions: plan.transactions,
            blocks: plan.writes.len(),
            revoked: plan.revoked,
            end: plan.end,
        })
    }
}
