//! Directory blocks: ext2's linked list of entries per block (each entry's
//! `rec_len` reaches the next; the last reaches the block's end).
//!
//! Adding takes the first entry with room after its own name (or an unused
//! entry big enough), else a new block at the directory's end. Removing
//! merges the entry into the one before it, or marks the first entry of a
//! block unused (inode 0), as Linux's ext2 does. Every block is checked
//! (`layout::parse_dir_block`) before it is searched or changed.

use super::Fs;
use crate::device::BlockDevice;
use crate::layout::{self, Dirent, INDEX_FL, Inode, dirent_len, put16, put32, write_dirent};
use alloc::format;
use alloc::vec::Vec;
use protocols::unix::Errno;

/// A directory entry, as `readdir` gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub ino: u32,
    pub name: Vec<u8>,
    /// `EXT2_FT_*` (0 without the filetype feature).
    pub file_type: u8,
}

/// Where a found entry lives.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    pub ino: u32,
    pub block: u64,
    pub offset: usize,
    /// The entry before it in the same block, if any.
    pub prev: Option<usize>,
}

impl<D: BlockDevice> Fs<D> {
    pub(crate) fn dir_blocks(&self, dir: &Inode) -> u64 {
        dir.size() / self.block_bytes as u64
    }

    /// The entries of logical block `lblk` of directory `dir_ino`, checked,
    /// with the block's number.
    pub(crate) fn dir_block(
        &mut self,
        dir_ino: u32,
        dir: &Inode,
        lblk: u64,
    ) -> Result<(u64, Vec<Dirent>), Errno> {
        let block = self.bmap(dir, lblk)?;
        if block == 0 {
            return Err(self.damage(format!("directory {dir_ino}: hole at block {lblk}")));
        }
        let has_filetype = self.has_filetype;
        match self.cache.read(block as u64, |b| layout::parse_dir_block(b, has_filetype))? {
            Ok(entries) => Ok((block as u64, entries)),
            Err(what) => Err(self.damage(format!("directory {dir_ino}, block {block}: {what}"))),
        }
    }

    /// Finds `name` in directory `dir_ino`. Scans the whole directory
    /// (checking every block) only as far as the name.
    pub(crate) fn find_entry(
        &mut self,
        dir_ino: u32,
        dir: &Inode,
        name: &[u8],
    ) -> Result<Option<Found>, Errno> {
        for lblk in 0..self.dir_blocks(dir) {
            let (block, entries) = self.dir_block(dir_ino, dir, lblk)?;
            let hit = self.cache.read(block, |b| {
                let mut prev = None;
                for e in &entries {
                    if e.ino != 0 && e.name(b) == name {
                        return Some(Found { ino: e.ino, block, offset: e.offset, prev });
                    }
                    prev = Some(e.offset);
                }
                None
            })?;
            if hit.is_some() {
                return Ok(hit);
            }
        }
        Ok(None)
    }

    /// Does the directory hold nothing but `.` and `..`?
    pub(crate) fn is_empty_dir(&mut self, dir_ino: u32, dir: &Inode) -> Result<bool, Errno> {
        for lblk in 0..self.dir_blocks(dir) {
            let (block, entries) = self.dir_block(dir_ino, dir, lblk)?;
            let only_dots = self.cache.read(block, |b| {
                entries.iter().all(|e| e.ino == 0 || e.name(b) == b"." || e.name(b) == b"..")
            })?;
            if !only_dots {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Adds the entry `name` -> `child` to directory `dir_ino` (whose
    /// in-memory inode grows if a block is added; the caller writes it).
    /// The entry's block is ordered after `child_blocks` (the child's inode
    /// block, and for a new inode its bitmap block): an entry never names
    /// an inode the disk does not have yet, or one whose bit is clear.
    /// Returns the block the entry went into.
    pub(crate) fn add_entry(
        &mut self,
        dir_ino: u32,
        dir: &mut Inode,
        name: &[u8],
        child: u32,
        file_type: u8,
        child_blocks: &[u64],
    ) -> Result<u64, Errno> {
        let file_type = if self.has_filetype { file_type } else { 0 };
        let need = dirent_len(name.len());
        // ext2 keeps no hash index: a directory changed here is linear.
        if dir.flags() & INDEX_FL != 0 {
            dir.set_flags(dir.flags() & !INDEX_FL);
        }
        let nblocks = self.dir_blocks(dir);
        for lblk in 0..nblocks {
            let (block, entries) = self.dir_block(dir_ino, dir, lblk)?;
            let Some(e) = entries.iter().find(|e| e.rec_len - e.used_len() >= need).copied() else {
                continue;
            };
            for &first in child_blocks {
                self.cache.order(first, block)?;
            }
            self.cache.modify(block, |b| {
                if e.ino == 0 {
                    write_dirent(b, e.offset, child, e.rec_len, name, file_type);
                } else {
                    let used = e.used_len();
                    put16(b, e.offset + 4, used as u16);
                    write_dirent(b, e.offset + used, child, e.rec_len - used, name, file_type);
                }
            })?;
            self.note_entry(child, dir_ino, block)?;
            return Ok(block);
        }
        let goal = match nblocks {
            0 => self.group_first_block((dir_ino - 1) / self.sb.inodes_per_group),
            n => self.bmap(dir, n - 1)? as u64 + 1,
        };
        let bs = self.block_bytes;
        let (block, _) = self.bmap_alloc(dir_ino, dir, nblocks, goal, child_blocks, &mut |b| {
            b.fill(0);
            write_dirent(b, 0, child, bs, name, file_type);
        })?;
        dir.set_size(dir.size() + bs as u64);
        self.note_entry(child, dir_ino, block as u64)?;
        Ok(block as u64)
    }

    /// Removes the entry at `found` (merged into the one before it, or
    /// marked unused).
    pub(crate) fn remove_entry(&mut self, found: &Found) -> Result<(), Errno> {
        self.cache.modify(found.block, |b| match found.prev {
            Some(prev) => {
                let merged = layout::le16(b, prev + 4) as usize + layout::le16(b, found.offset + 4) as usize;
                put16(b, prev + 4, merged as u16);
            }
            None => put32(b, found.offset, 0),
        })
    }

    /// Points the entry at `found` to another inode (rename over an
    /// existing name, or a moved directory's `..`).
    pub(crate) fn set_entry(&mut self, found: &Found, ino: u32, file_type: u8) -> Result<(), Errno> {
        let file_type = if self.has_filetype { file_type } else { 0 };
        let has_filetype = self.has_filetype;
        self.cache.modify(found.block, |b| {
            put32(b, found.offset, ino);
            if has_filetype {
                b[found.offset + 7] = file_type;
            }
        })
    }

    /// The directory's entry at or after byte `pos`, and the position of
    /// the next one.
    pub(crate) fn entry_at(
        &mut self,
        dir_ino: u32,
        dir: &Inode,
        pos: u64,
    ) -> Result<Option<(DirEntry, u64)>, Errno> {
        let bs = self.block_bytes as u64;
        let mut lblk = pos / bs;
        let mut offset = (pos % bs) as usize;
        while lblk < self.dir_blocks(dir) {
            let (block, entries) = self.dir_block(dir_ino, dir, lblk)?;
            let hit = self.cache.read(block, |b| {
                entries.iter().find(|e| e.offset >= offset && e.ino != 0).map(|e| {
                    (
                        DirEntry { ino: e.ino, name: e.name(b).to_vec(), file_type: e.file_type },
                        lblk * bs + (e.offset + e.rec_len) as u64,
                    )
                })
            })?;
            if hit.is_some() {
                return Ok(hit);
            }
            lblk += 1;
            offset = 0;
        }
        Ok(None)
    }
}
