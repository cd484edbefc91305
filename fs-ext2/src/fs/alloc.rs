//! Block and inode allocation from the bitmaps (the volume manager's part,
//! Ridge §8): first free bit at or after a goal, so that a file written
//! sequentially gets consecutive blocks ("contiguous disk allocation by
//! the volume manager"); counts kept in step in the group descriptor and
//! the superblock.
//!
//! Ordering is the callers': they declare, before pointing at a new block
//! or inode, that its bitmap block comes first, and before clearing a bit,
//! that the block which stopped pointing comes first.

use super::Fs;
use crate::device::BlockDevice;
use crate::layout;
use alloc::format;
use protocols::unix::Errno;
use protocols::unix::errno::ENOSPC;

/// First clear bit of `bitmap` in `from..to`. Full 64-bit words are
/// passed over whole: `alloc_inode` searches from bit 0, and a group whose
/// first few hundred inodes are in use cost a byte each at every `creat`
/// (`docs/filesystem-history.md`, "R2 on disk: creat+close, the manager's work").
fn find_clear(bitmap: &[u8], from: u64, to: u64) -> Option<u64> {
    let mut bit = from;
    while bit < to {
        if bit.is_multiple_of(64) && bit + 64 <= to {
            let at = (bit / 8) as usize;
            if let Some(word) = bitmap.get(at..at + 8)
                && word == [0xff; 8]
            {
                bit += 64;
                continue;
            }
        }
        let byte = bitmap[(bit / 8) as usize];
        if byte == 0xff && bit.is_multiple_of(8) {
            bit += 8;
            continue;
        }
        if byte & (1 << (bit % 8)) == 0 {
            return Some(bit);
        }
        bit += 1;
    }
    None
}

/// How many bits from `bit` (clear) on, before `to`, are clear.
fn clear_run(bitmap: &[u8], bit: u64, to: u64) -> u64 {
    (bit..to).take_while(|&k| bitmap[(k / 8) as usize] & (1 << (k % 8)) == 0).count() as u64
}

impl<D: BlockDevice> Fs<D> {
    /// The bitmap block that holds block `block`'s bit.
    pub(crate) fn block_bitmap_of(&self, block: u64) -> u64 {
        let group = (block - self.sb.first_data_block as u64) / self.sb.blocks_per_group as u64;
        self.groups[group as usize].block_bitmap as u64
    }

    /// The bitmap block that holds inode `ino`'s bit.
    pub(crate) fn inode_bitmap_of(&self, ino: u32) -> u64 {
        self.groups[((ino - 1) / self.sb.inodes_per_group) as usize].inode_bitmap as u64
    }

    /// Is `block` one of its group's own structures (superblock copy,
    /// descriptors, bitmaps, inode table)? A bitmap that calls one free is
    /// damaged.
    fn is_group_metadata(&self, group: u32, block: u64) -> bool {
        let d = &self.groups[group as usize];
        let first = self.group_first_block(group);
        let has_super = layout::group_has_super(group, self.is_sparse_super);
        let super_end = first + 1 + self.gdt_blocks + self.sb.reserved_gdt_blocks as u64;
        block == d.block_bitmap as u64
            || block == d.inode_bitmap as u64
            || (d.inode_table as u64..d.inode_table as u64 + self.inode_table_blocks).contains(&block)
            || (has_super && block < super_end)
    }

    /// Takes a free block, the first at or after `goal` (wrapping).
    pub(crate) fn alloc_block(&mut self, goal: u64) -> Result<u32, Errno> {
        self.alloc_blocks(goal, 1).map(|(block, _)| block)
    }

    /// Takes up to `want` (at least 1) free blocks that follow each
    /// other, the first the first free one at or after `goal` (wrapping),
    /// the run as long as the blocks after it are free in the same group:
    /// one bitmap pass and one update of the counts for the run, where a
    /// block at a time cost five cache lookups each (R2's 8 KiB write of 1
    /// KiB blocks: 40 for the 8 blocks, now 5). Returns the first block and
    /// how many.
    pub(crate) fn alloc_blocks(&mut self, goal: u64, want: usize) -> Result<(u32, usize), Errno> {
        let first_data = self.sb.first_data_block as u64;
        let goal = if (first_data..self.sb.blocks_count as u64).contains(&goal) { goal } else { first_data };
        let goal_group = ((goal - first_data) / self.sb.blocks_per_group as u64) as u32;
        let ngroups = self.group_count();
        // The goal's group from the goal, every other group, then the
        // goal's group before the goal.
        for step in 0..=ngroups {
            let group = (goal_group + step) % ngroups;
            let (from, to) = match step {
                0 => (goal - self.group_first_block(group), self.blocks_in_group(group)),
                s if s == ngroups => (0, goal - self.group_first_block(group)),
                _ => (0, self.blocks_in_group(group)),
            };
            let free = if from >= to { 0 } else { self.group_free_blocks(group)? };
            if free == 0 {
                continue;
            }
            // No more than the group's count says is free: the counts
            // stay in step with the bits even on a bitmap that disagrees.
            let want = want.clamp(1, free as usize) as u64;
            let bitmap = self.groups[group as usize].block_bitmap as u64;
            let Some((bit, n)) = self.cache.read(bitmap, |b| {
                find_clear(b, from, to).map(|bit| (bit, clear_run(b, bit, to.min(bit + want))))
            })?
            else {
                continue;
            };
            let start = self.group_first_block(group) + bit;
            if let Some(block) = (start..start + n).find(|&b| self.is_group_metadata(group, b)) {
                return Err(
                    self.damage(format!("group {group}: block bitmap calls metadata block {block} free"))
                );
            }
            self.cache
                .modify(bitmap, |b| (bit..bit + n).for_each(|k| b[(k / 8) as usize] |= 1 << (k % 8)))?;
            self.adjust_counts(group, -(n as i32), 0, 0)?;
            return Ok((start as u32, n as usize));
        }
        Err(ENOSPC)
    }

    fn group_free_blocks(&mut self, group: u32) -> Result<u16, Errno> {
        let (block, offset) = self.gd_location(group);
        self.cache.read(block, |b| layout::le16(b, offset + layout::gd::FREE_BLOCKS_COUNT))
    }

    fn group_free_inodes(&mut self, group: u32) -> Result<u16, Errno> {
        let (block, offset) = self.gd_location(group);
        self.cache.read(block, |b| layout::le16(b, offset + layout::gd::FREE_INODES_COUNT))
    }

    /// Gives block `block` back. The caller has ordered the blocks that
    /// stopped pointing at it before this bitmap.
    pub(crate) fn free_block(&mut self, block: u32) -> Result<(), Errno> {
        let block = block as u64;
        if block < self.sb.first_data_block as u64 || block >= self.sb.blocks_count as u64 {
            return Err(self.damage(format!("freeing block {block}, outside the file system")));
        }
        let group = ((block - self.sb.first_data_block as u64) / self.sb.blocks_per_group as u64) as u32;
        if self.is_group_metadata(group, block) {
            return Err(self.damage(format!("freeing metadata block {block}")));
        }
        let bit = block - self.group_first_block(group);
        let bitmap = self.groups[group as usize].block_bitmap as u64;
        let was_set = self.cache.modify(bitmap, |b| {
            let mask = 1 << (bit % 8);
            let was = b[(bit / 8) as usize] & mask != 0;
            b[(bit / 8) as usize] &= !mask;
            was
        })?;
        if !was_set {
            return Err(self.damage(format!("block {block} freed twice (bitmap says free)")));
        }
        // Its dirty contents are no file's any more: not written at all
        // (the callers cleared every pointer to it first; `Cache::discard`).
        self.cache.discard(block);
        self.adjust_counts(group, 1, 0, 0)
    }

    /// Takes a free inode: for a file in its parent's group (or the next
    /// with room), for a directory in the group with the most free inodes
    /// (spreading directories, as ext2's Orlov allocator does).
    pub(crate) fn alloc_inode(&mut self, parent: u32, is_dir: bool) -> Result<u32, Errno> {
        let ngroups = self.group_count();
        let ipg = self.sb.inodes_per_group;
        let start = if is_dir {
            let mut best = (0, 0);
            for g in 0..ngroups {
                let free = self.group_free_inodes(g)?;
                if free > best.1 {
                    best = (g, free);
                }
            }
            best.0
        } else {
            (parent.saturating_sub(1) / ipg).min(ngroups - 1)
        };
        for step in 0..ngroups {
            let group = (start + step) % ngroups;
            if self.group_free_inodes(group)? == 0 {
                continue;
            }
            let bitmap = self.groups[group as usize].inode_bitmap as u64;
            let Some(bit) = self.cache.read(bitmap, |b| find_clear(b, 0, ipg as u64))? else { continue };
            let ino = group * ipg + bit as u32 + 1;
            if ino < self.sb.first_ino {
                return Err(self.damage(format!("inode bitmap calls reserved inode {ino} free")));
            }
            self.cache.modify(bitmap, |b| b[(bit / 8) as usize] |= 1 << (bit % 8))?;
            self.adjust_counts(group, 0, -1, i32::from(is_dir))?;
            return Ok(ino);
        }
        Err(ENOSPC)
    }

    /// Gives inode `ino` back; the caller ordered the inode's block first.
    pub(crate) fn free_inode(&mut self, ino: u32, was_dir: bool) -> Result<(), Errno> {
        self.inode_deps.remove(&ino);
        // Its number may name a new directory next.
        self.dir_names.remove(&ino);
        self.parents.remove(&ino);
        self.forget_walks();
        let ipg = self.sb.inodes_per_group;
        let group = (ino - 1) / ipg;
        let bit = ((ino - 1) % ipg) as usize;
        let bitmap = self.groups[group as usize].inode_bitmap as u64;
        let was_set = self.cache.modify(bitmap, |b| {
            let was = b[bit / 8] & (1 << (bit % 8)) != 0;
            b[bit / 8] &= !(1 << (bit % 8));
            was
        })?;
        if !was_set {
            return Err(self.damage(format!("inode {ino} freed twice (bitmap says free)")));
        }
        self.adjust_counts(group, 0, 1, -i32::from(was_dir))
    }
}

#[cfg(test)]
mod tests {
    use super::{clear_run, find_clear};

    #[test]
    fn find_clear_skips_full_bytes_and_respects_bounds() {
        let b = [0xff, 0xff, 0b1110_1111, 0];
        assert_eq!(find_clear(&b, 0, 32), Some(20));
        assert_eq!(find_clear(&b, 21, 32), Some(24));
        assert_eq!(find_clear(&b, 0, 20), None);
        assert_eq!(find_clear(&b, 3, 9), None);
    }

    #[test]
    fn find_clear_passes_full_words_and_finds_what_a_bit_by_bit_search_finds() {
        let mut b = [0xffu8; 40];
        b[19] = 0b1011_1111; // bit 158
        b[33] = 0b0111_1111; // bit 271
        let by_bit =
            |b: &[u8], from: u64, to: u64| (from..to).find(|&k| b[(k / 8) as usize] & (1 << (k % 8)) == 0);
        for (from, to) in
            [(0, 320), (0, 158), (64, 320), (159, 320), (150, 200), (0, 272), (272, 320), (1, 63)]
        {
            assert_eq!(find_clear(&b, from, to), by_bit(&b, from, to), "{from}..{to}");
        }
        assert_eq!(find_clear(&b, 0, 320), Some(158));
        assert_eq!(find_clear(&b, 159, 320), Some(271));
        assert_eq!(find_clear(&[0xff; 16], 0, 128), None);
    }

    #[test]
    fn clear_run_stops_at_a_set_bit_or_the_bound() {
        let b = [0b0000_0001, 0b0001_0000, 0];
        assert_eq!(clear_run(&b, 1, 24), 11);
        assert_eq!(clear_run(&b, 1, 5), 4);
        assert_eq!(clear_run(&b, 13, 24), 11);
        assert_eq!(clear_run(&b, 13, 13), 0);
    }
}
