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
use crate::layout::{
    self, Dirent, INDEX_FL, Inode, dirent_len, put16, put32, walk_dir_block, walk_dir_block_from,
    write_dirent,
};
use alloc::collections::BTreeMap;
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
    /// The directory it is in.
    pub dir: u32,
    pub ino: u32,
    pub block: u64,
    pub offset: usize,
    /// The entry before it in the same block, if any.
    pub prev: Option<usize>,
}

/// Where a new entry fits: into the free space of `entry` (after its own
/// name, or all of it when unused) in block `block`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Room {
    pub block: u64,
    pub entry: Dirent,
}

/// What one pass over a directory found ([`Fs::scan_dir`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scan {
    /// The name's entry.
    Found(Found),
    /// The name is not there; the first place an entry of the size asked
    /// for fits (`None`: none does, a new block is needed).
    Absent(Option<Room>),
}

/// Most directories [`DirNames`] are kept for at once (`Fs::dir_names`),
/// and most names one may hold: past either, a directory is scanned as
/// before (the memory stays bounded whatever the volume holds).
pub(crate) const MAX_NAMED_DIRS: usize = 32;
pub(crate) const MAX_DIR_NAMES: usize = 1 << 16;

/// What a directory is known to hold, kept in memory once a scan has
/// seen all of it (Linux's dcache plays this part: it knows a name is
/// absent without reading the directory). A name whose hash is not in
/// `hashes` is not in the directory, so `creat` of a new name scans no
/// block for it; a hash that is there (the name, or another with the same
/// hash) sends the lookup to the blocks as before, so a hash never gives
/// a wrong answer, only a scan. Kept exact by the only code that adds or
/// removes entries ([`Fs::add_entry_at`], [`Fs::remove_entry`]); dropped
/// when the directory's inode is freed.
#[derive(Debug, Default)]
pub(crate) struct DirNames {
    /// Hash of each used entry's name -> how many entries have it.
    hashes: BTreeMap<u64, u32>,
    /// Logical blocks before `room_from` have no entry with `room_need`
    /// bytes free (`room_from` 0: nothing known): where the search for
    /// room starts, so that filling a directory does not walk its full
    /// blocks at every `creat`. An entry removed resets it.
    room_from: u64,
    room_need: usize,
    /// And in logical block `room_from` (device block `room_block`), the
    /// entries that start before byte `room_offset` have no `room_need`
    /// bytes free either: the search starts at that entry, not at the
    /// block's first (a 1 KiB block holds some 60 of R2's names; walking
    /// them all was a fifth of a creat+close). True while it holds because
    /// adding an entry never gives another entry more room, and an entry
    /// removed resets it (`room_offset` 0: the block's start).
    room_block: u64,
    room_offset: usize,
}

impl DirNames {
    fn may_hold(&self, name: &[u8]) -> bool {
        self.hashes.contains_key(&name_hash(name))
    }

    fn add(&mut self, hash: u64) {
        *self.hashes.entry(hash).or_insert(0) += 1;
    }

    fn remove(&mut self, hash: u64) {
        if let Some(n) = self.hashes.get_mut(&hash) {
            *n -= 1;
            if *n == 0 {
                self.hashes.remove(&hash);
            }
        }
    }
}

/// FNV-1a, 64 bits: a name's key in [`DirNames`].
pub(crate) fn name_hash(name: &[u8]) -> u64 {
    name.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

impl<D: BlockDevice> Fs<D> {
    pub(crate) fn dir_blocks(&self, dir: &Inode) -> u64 {
        dir.size() / self.block_bytes as u64
    }

    /// The block number of logical block `lblk` of directory `dir_ino`
    /// (a hole is damage: a directory has none).
    fn dir_block_number(&mut self, dir_ino: u32, dir: &Inode, lblk: u64) -> Result<u64, Errno> {
        let block = self.bmap(dir, lblk)?;
        if block == 0 {
            return Err(self.damage(format!("directory {dir_ino}: hole at block {lblk}")));
        }
        Ok(block as u64)
    }

    /// One pass over directory `dir_ino`, each block checked whole before
    /// anything in it counts (`layout::walk_dir_block`): the entry naming
    /// `name`, scanning only as far as it; or, when it is not there, the
    /// first entry with `need` bytes free (what [`Fs::add_entry`] would
    /// take), so that `creat` scans the directory once where a lookup, a
    /// check that the name is free and the search for room scanned it
    /// three times (`docs/filesystem-history.md`, "The request path").
    pub(crate) fn scan_dir(
        &mut self,
        dir_ino: u32,
        dir: &Inode,
        name: &[u8],
        need: Option<usize>,
    ) -> Result<Scan, Errno> {
        if self.dir_names.get(&dir_ino).is_some_and(|known| !known.may_hold(name)) {
            // Not there, for sure: only the room is searched for.
            let room = match need {
                Some(need) => self.find_room(dir_ino, dir, need)?,
                None => None,
            };
            return Ok(Scan::Absent(room));
        }
        let has_filetype = self.has_filetype;
        let mut room: Option<Room> = None;
        // A directory not known yet is learnt by a scan that sees it all.
        let mut names = (!self.dir_names.contains_key(&dir_ino)).then(Vec::new);
        for lblk in 0..self.dir_blocks(dir) {
            let block = self.dir_block_number(dir_ino, dir, lblk)?;
            let want_room = if room.is_none() { need } else { None };
            let walked = self.cache.read(block, |b| {
                let mut prev = None;
                let mut fits = None;
                let hit = walk_dir_block(b, has_filetype, |e| {
                    if e.ino != 0 && e.name(b) == name {
                        return true;
                    }
                    if e.ino != 0
                        && let Some(names) = &mut names
                    {
                        names.push(name_hash(e.name(b)));
                    }
                    if fits.is_none() && want_room.is_some_and(|need| e.rec_len - e.used_len() >= need) {
                        fits = Some(e);
                    }
                    prev = Some(e.offset);
                    false
                });
                hit.map(|hit| (hit.map(|h| (h, prev)), fits))
            })?;
            match walked {
                Err(what) => return Err(self.damage(format!("directory {dir_ino}, block {block}: {what}"))),
                Ok((Some((hit, prev)), _)) => {
                    return Ok(Scan::Found(Found {
                        dir: dir_ino,
                        ino: hit.ino,
                        block,
                        offset: hit.offset,
                        prev,
                    }));
                }
                Ok((None, fits)) => {
                    if room.is_none() {
                        room = fits.map(|entry| Room { block, entry });
                    }
                }
            }
        }
        if let Some(names) = names
            && names.len() <= MAX_DIR_NAMES
        {
            if self.dir_names.len() >= MAX_NAMED_DIRS {
                self.dir_names.pop_first();
            }
            let mut known = DirNames::default();
            for hash in names {
                known.add(hash);
            }
            self.dir_names.insert(dir_ino, known);
        }
        Ok(Scan::Absent(room))
    }

    /// The entries of logical block `lblk` of directory `dir_ino`, checked,
    /// with the block's number.
    pub(crate) fn dir_block(
        &mut self,
        dir_ino: u32,
        dir: &Inode,
        lblk: u64,
    ) -> Result<(u64, Vec<Dirent>), Errno> {
        let block = self.dir_block_number(dir_ino, dir, lblk)?;
        let has_filetype = self.has_filetype;
        match self.cache.read(block, |b| layout::parse_dir_block(b, has_filetype))? {
            Ok(entries) => Ok((block, entries)),
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
        match self.scan_dir(dir_ino, dir, name, None)? {
            Scan::Found(found) => Ok(Some(found)),
            Scan::Absent(_) => Ok(None),
        }
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
        let room = self.find_room(dir_ino, dir, dirent_len(name.len()))?;
        self.add_entry_at(dir_ino, dir, name, child, file_type, child_blocks, room)
    }

    /// The first entry of directory `dir_ino` with `need` bytes free
    /// (`None`: a new block is needed).
    fn find_room(&mut self, dir_ino: u32, dir: &Inode, need: usize) -> Result<Option<Room>, Errno> {
        let has_filetype = self.has_filetype;
        let (start, mut from) = match self.dir_names.get(&dir_ino) {
            Some(known) if need >= known.room_need => {
                (known.room_from, (known.room_block, known.room_offset))
            }
            _ => (0, (0, 0)),
        };
        let nblocks = self.dir_blocks(dir);
        let mut found = None;
        let mut lblk = start;
        while lblk < nblocks {
            let block = self.dir_block_number(dir_ino, dir, lblk)?;
            // Mid-block only while the block stays in the cache since it
            // was checked whole: a block read again from the device is
            // checked whole again.
            let offset =
                if from.0 == block && from.1 > 0 && self.cache.cached(&[block]) == 1 { from.1 } else { 0 };
            let walked = self.cache.read(block, |b| {
                walk_dir_block_from(b, offset, has_filetype, |e| e.rec_len - e.used_len() >= need)
            })?;
            match walked {
                Err(what) => return Err(self.damage(format!("directory {dir_ino}, block {block}: {what}"))),
                Ok(Some(entry)) => {
                    found = Some(Room { block, entry });
                    from = (block, entry.offset);
                    break;
                }
                Ok(None) => {
                    lblk += 1;
                    from = (0, 0);
                }
            }
        }
        // Blocks before `lblk`, and entries before the one found in it,
        // have no room for `need` (those before `start` had none for a
        // smaller or equal need).
        if let Some(known) = self.dir_names.get_mut(&dir_ino) {
            known.room_from = lblk;
            known.room_need = need;
            (known.room_block, known.room_offset) = from;
        }
        Ok(found)
    }

    /// [`Fs::add_entry`] at a place found before ([`Fs::find_room`] or
    /// [`Fs::scan_dir`], with nothing changed in the directory since).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add_entry_at(
        &mut self,
        dir_ino: u32,
        dir: &mut Inode,
        name: &[u8],
        child: u32,
        file_type: u8,
        child_blocks: &[u64],
        room: Option<Room>,
    ) -> Result<u64, Errno> {
        let file_type = if self.has_filetype { file_type } else { 0 };
        // Known before the entry is made: if making it fails half-way the
        // name may be there, and a hash too many only costs a scan.
        if let Some(known) = self.dir_names.get_mut(&dir_ino) {
            known.add(name_hash(name));
        }
        // ext2 keeps no hash index: a directory changed here is linear.
        if dir.flags() & INDEX_FL != 0 {
            dir.set_flags(dir.flags() & !INDEX_FL);
        }
        let nblocks = self.dir_blocks(dir);
        if let Some(Room { block, entry: e }) = room {
            for &first in child_blocks {
                if !self.cache.is_ordered(first, block) {
                    self.cache.order(first, block)?;
                }
            }
            let offset = self.cache.modify(block, |b| {
                if e.ino == 0 {
                    write_dirent(b, e.offset, child, e.rec_len, name, file_type);
                    e.offset
                } else {
                    let used = e.used_len();
                    put16(b, e.offset + 4, used as u16);
                    write_dirent(b, e.offset + used, child, e.rec_len - used, name, file_type);
                    e.offset + used
                }
            })?;
            // The entry split (or reused) has no room left: the search
            // for room may start at the new one.
            if let Some(known) = self.dir_names.get_mut(&dir_ino)
                && (known.room_block, known.room_offset) == (block, e.offset)
            {
                known.room_offset = offset;
            }
            self.note_entry(child, dir_ino, block, offset)?;
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
        self.note_entry(child, dir_ino, block as u64, 0)?;
        Ok(block as u64)
    }

    /// Removes the entry at `found` (merged into the one before it, or
    /// marked unused).
    pub(crate) fn remove_entry(&mut self, found: &Found) -> Result<(), Errno> {
        let has_filetype = self.has_filetype;
        let hash = self.cache.modify(found.block, |b| {
            let name_len = if has_filetype {
                b[found.offset + 6] as usize
            } else {
                layout::le16(b, found.offset + 6) as usize
            };
            let start = found.offset + layout::DIRENT_HEADER;
            let hash = name_hash(&b[start..start + name_len]);
            match found.prev {
                Some(prev) => {
                    let merged =
                        layout::le16(b, prev + 4) as usize + layout::le16(b, found.offset + 4) as usize;
                    put16(b, prev + 4, merged as u16);
                }
                None => put32(b, found.offset, 0),
            }
            hash
        })?;
        self.parents.remove(&found.dir);
        self.forget_walks();
        if let Some(known) = self.dir_names.get_mut(&found.dir) {
            known.remove(hash);
            // The block gained room: the search for room starts over.
            known.room_from = 0;
            known.room_offset = 0;
        }
        Ok(())
    }

    /// Points the entry at `found` to another inode (rename over an
    /// existing name, or a moved directory's `..`).
    pub(crate) fn set_entry(&mut self, found: &Found, ino: u32, file_type: u8) -> Result<(), Errno> {
        let file_type = if self.has_filetype { file_type } else { 0 };
        let has_filetype = self.has_filetype;
        // It may be the directory's `..` (a directory moved to another
        // parent): its checked parent is forgotten.
        self.parents.remove(&found.dir);
        self.forget_walks();
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
