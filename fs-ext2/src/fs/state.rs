//! The volume's clean state (`s_state`) and the free counts of a volume
//! that was not cleanly unmounted (issue 16).
//!
//! ext2 marks a volume not clean (clears `state::VALID`) while it is
//! mounted read-write and clean again at a clean unmount. The free counts
//! of the superblock and the group descriptors change with every bit of
//! the bitmaps, but they are written when the cache writes their blocks,
//! so a power cut or a killed manager can leave them behind the bitmaps
//! (docs/filesystem.md, "The write order": the bitmaps are what is true).
//! A volume mounted read-write while not clean therefore gets its counts
//! recounted from the bitmaps at mount, as Linux's ext4 does
//! (`ext4_fill_super` sums the groups' counts afresh, and `e2fsck`
//! recounts them from the bitmaps), so that `statfs` and the allocator's
//! "group has free blocks" tests are right.
//!
//! What it is not: a check. The bitmaps are taken as they are (a bit set
//! for a block nothing uses stays set: `e2fsck` frees it); the
//! directory counts (`bg_used_dirs_count`) are not recounted (that would
//! read every inode).
//!
//! Invariant: the superblock marked not clean is on the disk (written and
//! flushed) before any change made while mounted.

use super::Fs;
use crate::device::BlockDevice;
use crate::layout::{self, le16, put16, put32};
use protocols::unix::Errno;

/// Clear bits among the first `bits` of `bitmap`.
fn count_clear(bitmap: &[u8], bits: u64) -> u32 {
    let whole = (bits / 8) as usize;
    let mut clear: u32 = bitmap[..whole].iter().map(|b| b.count_zeros()).sum();
    for bit in whole as u64 * 8..bits {
        if bitmap[(bit / 8) as usize] & (1 << (bit % 8)) == 0 {
            clear += 1;
        }
    }
    clear
}

impl<D: BlockDevice> Fs<D> {
    /// At a read-write mount: recount the free counts if the volume is
    /// not clean, then mark it not clean on the disk.
    pub(super) fn mark_mounted(&mut self) -> Result<(), Errno> {
        let (sb_block, at) = (self.sb_block, self.sb_offset + layout::sb::STATE);
        let state = self.cache.read(sb_block, |b| le16(b, at))?;
        if state & layout::state::VALID == 0 {
            self.recount_free()?;
            self.mounted_unclean = true;
        }
        self.cache.modify(sb_block, |b| put16(b, at, state & !layout::state::VALID))?;
        self.cache.write_block_now(sb_block)?;
        self.cache.flush()
    }

    /// Mark the volume clean (with everything else written after it, by
    /// the caller: [`Fs::unmount`]).
    pub(super) fn mark_clean(&mut self) -> Result<(), Errno> {
        let (sb_block, at) = (self.sb_block, self.sb_offset + layout::sb::STATE);
        self.cache.modify(sb_block, |b| {
            let state = le16(b, at);
            put16(b, at, state | layout::state::VALID);
        })
    }

    /// The last sync before the power goes (init's, through the
    /// monitor): everything written, then the volume marked clean, as
    /// [`Fs::unmount`] does. A change made after it would reach the disk
    /// with the volume marked clean (the power goes right after, so there
    /// is none); a later sync does not mark it not clean again.
    pub fn sync_final(&mut self) -> Result<(), Errno> {
        self.sync()?;
        if self.read_only {
            return Ok(());
        }
        // The log emptied, then everything home (`Fs::unmount`'s order):
        // the power goes with a clean journal.
        self.cache.checkpoint()?;
        self.cache.sync()?;
        self.mark_clean()?;
        self.cache.write_block_now(self.sb_block)?;
        self.cache.flush()
    }

    /// The group descriptors' and the superblock's free block and inode
    /// counts, from the bitmaps.
    fn recount_free(&mut self) -> Result<(), Errno> {
        let (mut blocks, mut inodes) = (0u32, 0u32);
        for g in 0..self.groups.len() as u32 {
            let desc = self.groups[g as usize];
            let block_bits = self.blocks_in_group(g);
            let inode_bits = self.sb.inodes_per_group as u64;
            let free_blocks = self.cache.read(desc.block_bitmap as u64, |b| count_clear(b, block_bits))?;
            let free_inodes = self.cache.read(desc.inode_bitmap as u64, |b| count_clear(b, inode_bits))?;
            let (block, offset) = self.gd_location(g);
            self.cache.modify(block, |b| {
                put16(b, offset + layout::gd::FREE_BLOCKS_COUNT, free_blocks as u16);
                put16(b, offset + layout::gd::FREE_INODES_COUNT, free_inodes as u16);
            })?;
            blocks += free_blocks;
            inodes += free_inodes;
        }
        let (sb_block, sb_offset) = (self.sb_block, self.sb_offset);
        self.cache.modify(sb_block, |b| {
            put32(b, sb_offset + layout::sb::FREE_BLOCKS_COUNT, blocks);
            put32(b, sb_offset + layout::sb::FREE_INODES_COUNT, inodes);
        })
    }

    /// The volume was not clean when mounted read-write (its free counts
    /// were recounted).
    pub fn mounted_unclean(&self) -> bool {
        self.mounted_unclean
    }
}

#[cfg(test)]
mod tests {
    use super::count_clear;

    #[test]
    fn clear_bits_are_counted_up_to_the_end() {
        assert_eq!(count_clear(&[0xff, 0x00], 16), 8);
        // 0x0f: bits 4-7 clear; 0xf0: bits 8-11 (its low four) clear.
        assert_eq!(count_clear(&[0x0f, 0xf0], 12), 8);
        // Bits past the end do not count, set or clear.
        assert_eq!(count_clear(&[0x00, 0x00], 3), 3);
        assert_eq!(count_clear(&[0b1010_1010], 8), 4);
    }
}
