//! The ext2 on-disk structures this crate reads and writes, as byte
//! layouts: the superblock, group descriptors, inodes and directory
//! entries (revision 1, little-endian; the offsets are those of
//! `e2fsprogs`' `lib/ext2fs/ext2_fs.h`).
//!
//! What it is not: policy. Parsing here checks only what one structure can
//! tell about itself; the file system checks the rest (`crate::fs`).

use alloc::format;
use alloc::string::String;

pub const SUPERBLOCK_OFFSET: usize = 1024;
pub const SUPERBLOCK_BYTES: usize = 1024;
pub const MAGIC: u16 = 0xEF53;
pub const ROOT_INO: u32 = 2;
/// The journal's inode (`EXT2_JOURNAL_INO`) as mke2fs makes it.
pub const JOURNAL_INO: u32 = 8;
/// Inode numbers below `first_ino` are reserved; revision 0 fixes it.
pub const GOOD_OLD_FIRST_INO: u32 = 11;
pub const GOOD_OLD_INODE_SIZE: usize = 128;
pub const GROUP_DESC_BYTES: usize = 32;
/// Block pointers in an inode: 12 direct, then single, double and triple
/// indirect.
pub const N_DIRECT: usize = 12;
pub const IND: usize = 12;
pub const DIND: usize = 13;
pub const TIND: usize = 14;
pub const N_BLOCKS: usize = 15;
/// Longest name in a directory entry (also POSIX `NAME_MAX`).
pub const MAX_NAME: usize = protocols::unix::MAX_NAME_BYTES;
/// Bytes of a directory entry before its name.
pub const DIRENT_HEADER: usize = 8;

/// Feature bits this crate understands (ext2_fs.h `EXT2_FEATURE_*`).
pub mod feature {
    pub const INCOMPAT_FILETYPE: u32 = 0x0002;
    /// `needs_recovery`: the journal holds committed transactions not yet
    /// written home (ext3's `EXT3_FEATURE_INCOMPAT_RECOVER`). Mounted
    /// only after replaying them (`crate::journal`, `fs/journal.rs`).
    pub const INCOMPAT_RECOVER: u32 = 0x0004;
    /// The volume is an external journal device: never mounted.
    pub const INCOMPAT_JOURNAL_DEV: u32 = 0x0008;
    /// Incompatible features we can mount with.
    pub const INCOMPAT_SUPPORTED: u32 = INCOMPAT_FILETYPE | INCOMPAT_RECOVER;
    /// `has_journal`: inode [`super::JOURNAL_INO`] (or `s_journal_inum`)
    /// holds a jbd2 journal (ext3).
    pub const COMPAT_HAS_JOURNAL: u32 = 0x0004;
    pub const RO_COMPAT_SPARSE_SUPER: u32 = 0x0001;
    pub const RO_COMPAT_LARGE_FILE: u32 = 0x0002;
    pub const RO_COMPAT_EXTRA_ISIZE: u32 = 0x0040;
    /// Read-only-compatible features we can write with; any other makes
    /// the mount read-only.
    pub const RO_COMPAT_SUPPORTED: u32 =
        RO_COMPAT_SPARSE_SUPER | RO_COMPAT_LARGE_FILE | RO_COMPAT_EXTRA_ISIZE;
}

/// `i_mode` file types (the values are POSIX's).
pub mod ftype {
    pub const S_IFMT: u16 = 0o170000;
    pub const S_IFSOCK: u16 = 0o140000;
    pub const S_IFLNK: u16 = 0o120000;
    pub const S_IFREG: u16 = 0o100000;
    pub const S_IFBLK: u16 = 0o060000;
    pub const S_IFDIR: u16 = 0o040000;
    pub const S_IFCHR: u16 = 0o020000;
    pub const S_IFIFO: u16 = 0o010000;

    /// The directory entry's file-type byte for a mode (`EXT2_FT_*`);
    /// `None` for a mode that is no file type.
    pub fn dirent_type(mode: u16) -> Option<u8> {
        Some(match mode & S_IFMT {
            S_IFREG => 1,
            S_IFDIR => 2,
            S_IFCHR => 3,
            S_IFBLK => 4,
            S_IFIFO => 5,
            S_IFSOCK => 6,
            S_IFLNK => 7,
            _ => return None,
        })
    }
}

/// Inode flags we act on.
pub const INDEX_FL: u32 = 0x1000;

pub fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

pub fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

pub fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// The superblock's fields this crate uses, as read at mount. Counts that
/// change (free blocks and inodes) are kept on the disk block, not here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Superblock {
    pub inodes_count: u32,
    pub blocks_count: u32,
    pub free_blocks_count: u32,
    pub free_inodes_count: u32,
    pub first_data_block: u32,
    pub log_block_size: u32,
    pub blocks_per_group: u32,
    pub inodes_per_group: u32,
    pub magic: u16,
    pub rev_level: u32,
    pub first_ino: u32,
    pub inode_size: u16,
    pub feature_compat: u32,
    pub feature_incompat: u32,
    pub feature_ro_compat: u32,
    pub reserved_gdt_blocks: u16,
    pub want_extra_isize: u16,
    /// The latest of the last mount, last write and last check times
    /// (`s_mtime`, `s_wtime`, `s_lastcheck`): seconds since 1970.
    pub latest_time_s: u32,
    /// `s_journal_inum` (0 without `has_journal`).
    pub journal_inum: u32,
    /// `s_journal_dev`: nonzero for an external journal.
    pub journal_dev: u32,
}

/// Superblock field offsets that the file system updates in place.
pub mod sb {
    pub const FREE_BLOCKS_COUNT: usize = 12;
    pub const FREE_INODES_COUNT: usize = 16;
    /// `s_state`, 16 bits: [`super::state`].
    pub const STATE: usize = 58;
    pub const FEATURE_RO_COMPAT: usize = 100;
    pub const FEATURE_INCOMPAT: usize = 96;
    /// `s_journal_inum`: the journal's inode (8 as mke2fs makes it).
    pub const JOURNAL_INUM: usize = 0xE0;
    /// `s_journal_dev`: an external journal's device number (0: none).
    pub const JOURNAL_DEV: usize = 0xE4;
}

/// Bits of `s_state` (ext2's `EXT2_VALID_FS`, `EXT2_ERROR_FS`).
pub mod state {
    /// Cleanly unmounted: the counts agree with the bitmaps. Cleared while
    /// a volume is mounted read-write.
    pub const VALID: u16 = 1;
    /// Errors were detected (kept as it is).
    pub const ERROR: u16 = 2;
}

impl Superblock {
    /// Decodes the 1024 bytes at byte 1024 of the device. Checks nothing.
    pub fn parse(b: &[u8]) -> Superblock {
        let rev_level = le32(b, 76);
        let is_dynamic = rev_level >= 1;
        Superblock {
            inodes_count: le32(b, 0),
            blocks_count: le32(b, 4),
            free_blocks_count: le32(b, 12),
            free_inodes_count: le32(b, 16),
            first_data_block: le32(b, 20),
            log_block_size: le32(b, 24),
            blocks_per_group: le32(b, 32),
            inodes_per_group: le32(b, 40),
            magic: le16(b, 56),
            rev_level,
            first_ino: if is_dynamic { le32(b, 84) } else { GOOD_OLD_FIRST_INO },
            inode_size: if is_dynamic { le16(b, 88) } else { GOOD_OLD_INODE_SIZE as u16 },
            feature_compat: if is_dynamic { le32(b, 92) } else { 0 },
            feature_incompat: if is_dynamic { le32(b, 96) } else { 0 },
            feature_ro_compat: if is_dynamic { le32(b, 100) } else { 0 },
            reserved_gdt_blocks: if is_dynamic { le16(b, 206) } else { 0 },
            want_extra_isize: if is_dynamic { le16(b, 350) } else { 0 },
            latest_time_s: le32(b, 44).max(le32(b, 48)).max(le32(b, 64)),
            journal_inum: if is_dynamic { le32(b, sb::JOURNAL_INUM) } else { 0 },
            journal_dev: if is_dynamic { le32(b, sb::JOURNAL_DEV) } else { 0 },
        }
    }

    /// Block size in bytes, once `log_block_size` is checked.
    pub fn block_bytes(&self) -> usize {
        1024usize << self.log_block_size.min(6)
    }

    pub fn group_count(&self) -> u32 {
        (self.blocks_count - self.first_data_block).div_ceil(self.blocks_per_group)
    }
}

/// A group descriptor's fixed fields (where the group's bitmaps and inode
/// table are); its counts are read and written on the disk block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupDesc {
    pub block_bitmap: u32,
    pub inode_bitmap: u32,
    pub inode_table: u32,
    pub free_blocks_count: u16,
    pub free_inodes_count: u16,
    pub used_dirs_count: u16,
}

/// Group descriptor field offsets updated in place.
pub mod gd {
    pub const FREE_BLOCKS_COUNT: usize = 12;
    pub const FREE_INODES_COUNT: usize = 14;
    pub const USED_DIRS_COUNT: usize = 16;
}

impl GroupDesc {
    pub fn parse(b: &[u8]) -> GroupDesc {
        GroupDesc {
            block_bitmap: le32(b, 0),
            inode_bitmap: le32(b, 4),
            inode_table: le32(b, 8),
            free_blocks_count: le16(b, 12),
            free_inodes_count: le16(b, 14),
            used_dirs_count: le16(b, 16),
        }
    }
}

/// Does group `group` hold a copy of the superblock and descriptors?
/// (`sparse_super`: groups 0, 1 and powers of 3, 5 and 7; without it,
/// every group.)
pub fn group_has_super(group: u32, sparse: bool) -> bool {
    if !sparse || group <= 1 {
        return true;
    }
    for base in [3u32, 5, 7] {
        let mut p = base;
        while p < group {
            match p.checked_mul(base) {
                Some(next) => p = next,
                None => break,
            }
        }
        if p == group {
            return true;
        }
    }
    false
}

/// An inode's first 128 bytes, kept whole so that fields this crate does
/// not know survive a rewrite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inode {
    pub raw: [u8; GOOD_OLD_INODE_SIZE],
}

impl Inode {
    pub fn zeroed() -> Inode {
        Inode { raw: [0; GOOD_OLD_INODE_SIZE] }
    }

    pub fn from_bytes(b: &[u8]) -> Inode {
        let mut raw = [0; GOOD_OLD_INODE_SIZE];
        raw.copy_from_slice(&b[..GOOD_OLD_INODE_SIZE]);
        Inode { raw }
    }

    pub fn mode(&self) -> u16 {
        le16(&self.raw, 0)
    }
    pub fn set_mode(&mut self, v: u16) {
        put16(&mut self.raw, 0, v)
    }
    pub fn file_type(&self) -> u16 {
        self.mode() & ftype::S_IFMT
    }
    pub fn is_dir(&self) -> bool {
        self.file_type() == ftype::S_IFDIR
    }
    pub fn is_reg(&self) -> bool {
        self.file_type() == ftype::S_IFREG
    }
    pub fn uid(&self) -> u32 {
        le16(&self.raw, 2) as u32 | (le16(&self.raw, 120) as u32) << 16
    }
    pub fn set_uid(&mut self, v: u32) {
        put16(&mut self.raw, 2, v as u16);
        put16(&mut self.raw, 120, (v >> 16) as u16);
    }
    pub fn gid(&self) -> u32 {
        le16(&self.raw, 24) as u32 | (le16(&self.raw, 122) as u32) << 16
    }
    pub fn set_gid(&mut self, v: u32) {
        put16(&mut self.raw, 24, v as u16);
        put16(&mut self.raw, 122, (v >> 16) as u16);
    }
    /// Size in bytes; the high half (`i_size_high`, 108) counts for
    /// regular files only (`large_file`); for directories it is `i_dir_acl`.
    pub fn size(&self) -> u64 {
        let high = if self.is_reg() { le32(&self.raw, 108) as u64 } else { 0 };
        le32(&self.raw, 4) as u64 | high << 32
    }
    pub fn set_size(&mut self, v: u64) {
        put32(&mut self.raw, 4, v as u32);
        if self.is_reg() {
            put32(&mut self.raw, 108, (v >> 32) as u32);
        }
    }
    pub fn atime(&self) -> u32 {
        le32(&self.raw, 8)
    }
    pub fn ctime(&self) -> u32 {
        le32(&self.raw, 12)
    }
    pub fn mtime(&self) -> u32 {
        le32(&self.raw, 16)
    }
    pub fn set_times(&mut self, atime: Option<u32>, ctime: Option<u32>, mtime: Option<u32>) {
        for (at, v) in [(8, atime), (12, ctime), (16, mtime)] {
            if let Some(v) = v {
                put32(&mut self.raw, at, v);
            }
        }
    }
    pub fn dtime(&self) -> u32 {
        le32(&self.raw, 20)
    }
    pub fn set_dtime(&mut self, v: u32) {
        put32(&mut self.raw, 20, v)
    }
    pub fn links(&self) -> u16 {
        le16(&self.raw, 26)
    }
    pub fn set_links(&mut self, v: u16) {
        put16(&mut self.raw, 26, v)
    }
    /// `i_blocks`: 512-byte sectors held, indirect blocks included.
    pub fn sectors(&self) -> u32 {
        le32(&self.raw, 28)
    }
    pub fn set_sectors(&mut self, v: u32) {
        put32(&mut self.raw, 28, v)
    }
    pub fn flags(&self) -> u32 {
        le32(&self.raw, 32)
    }
    pub fn set_flags(&mut self, v: u32) {
        put32(&mut self.raw, 32, v)
    }
    pub fn block(&self, i: usize) -> u32 {
        le32(&self.raw, 40 + 4 * i)
    }
    pub fn set_block(&mut self, i: usize, v: u32) {
        put32(&mut self.raw, 40 + 4 * i, v)
    }
    pub fn generation(&self) -> u32 {
        le32(&self.raw, 100)
    }
    pub fn set_generation(&mut self, v: u32) {
        put32(&mut self.raw, 100, v)
    }
    /// The extended-attribute block (`i_file_acl`), 0 if none.
    pub fn file_acl(&self) -> u32 {
        le32(&self.raw, 104)
    }
    pub fn set_file_acl(&mut self, v: u32) {
        put32(&mut self.raw, 104, v)
    }
}

/// One directory entry as found in a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dirent {
    /// Byte offset in its block.
    pub offset: usize,
    pub ino: u32,
    pub rec_len: usize,
    pub name_len: usize,
    pub file_type: u8,
}

impl Dirent {
    pub fn name<'a>(&self, block: &'a [u8]) -> &'a [u8] {
        &block[self.offset + DIRENT_HEADER..self.offset + DIRENT_HEADER + self.name_len]
    }

    /// Bytes the entry needs for its own name (the rest of `rec_len` is
    /// free space).
    pub fn used_len(&self) -> usize {
        if self.ino == 0 { 0 } else { dirent_len(self.name_len) }
    }
}

/// Bytes a directory entry with a name of `name_len` takes (`EXT2_DIR_REC_LEN`).
pub const fn dirent_len(name_len: usize) -> usize {
    (DIRENT_HEADER + name_len + 3) & !3
}

/// The entries of one directory block, checked against the rules of
/// `rec_len` (Linux's `ext2_check_page`): each entry at least its header
/// and name, a multiple of 4, inside the block, and the last one ending
/// exactly at the block's end. A broken block is a damaged
/// directory: `Err` with what is wrong.
pub fn parse_dir_block(block: &[u8], has_filetype: bool) -> Result<alloc::vec::Vec<Dirent>, String> {
    let mut out = alloc::vec::Vec::new();
    walk_dir_block(block, has_filetype, |e| {
        out.push(e);
        false
    })?;
    Ok(out)
}

/// Visits the entries of one directory block in order, checking the
/// whole block by [`parse_dir_block`]'s rules, without gathering them
/// (a lookup or a `creat` scans every block of a directory: a vector
/// per block was most of its cost, `docs/filesystem-history.md`, "The request
/// path"). The first entry for which `visit` says `true` is returned,
/// but only once the rest of the block has been checked too: nothing is
/// found in a broken block.
pub fn walk_dir_block(
    block: &[u8],
    has_filetype: bool,
    visit: impl FnMut(Dirent) -> bool,
) -> Result<Option<Dirent>, String> {
    walk_dir_block_from(block, 0, has_filetype, visit)
}

/// [`walk_dir_block`] from the entry at byte `from` on (an entry's start,
/// found by an earlier walk of the same block): the entries before it are
/// neither visited nor checked again, those from it on are, by the same
/// rules. For a caller that remembers where it stopped in a block it
/// checked whole and has changed only through this module's writers
/// (`fs::dir`'s search for room, "R2 on disk: creat+close, the manager's
/// work" in `docs/filesystem.md`).
pub fn walk_dir_block_from(
    block: &[u8],
    from: usize,
    has_filetype: bool,
    mut visit: impl FnMut(Dirent) -> bool,
) -> Result<Option<Dirent>, String> {
    let mut hit = None;
    let mut offset = from;
    while offset < block.len() {
        if offset + DIRENT_HEADER > block.len() {
            return Err(format!("entry at byte {offset} runs past the block"));
        }
        let ino = le32(block, offset);
        let rec_len = le16(block, offset + 4) as usize;
        let (name_len, file_type) = if has_filetype {
            (block[offset + 6] as usize, block[offset + 7])
        } else {
            (le16(block, offset + 6) as usize, 0)
        };
        if rec_len < dirent_len(0) || !rec_len.is_multiple_of(4) {
            return Err(format!("entry at byte {offset}: bad rec_len {rec_len}"));
        }
        if offset + rec_len > block.len() {
            return Err(format!("entry at byte {offset}: rec_len {rec_len} runs past the block"));
        }
        if name_len > MAX_NAME || dirent_len(name_len) > rec_len {
            return Err(format!(
                "entry at byte {offset}: name of {name_len} bytes does not fit rec_len {rec_len}"
            ));
        }
        if ino != 0 && name_len == 0 {
            return Err(format!("entry at byte {offset}: empty name"));
        }
        let entry = Dirent { offset, ino, rec_len, name_len, file_type };
        if hit.is_none() && visit(entry) {
            hit = Some(entry);
        }
        offset += rec_len;
    }
    Ok(hit)
}

/// Writes an entry header and name at `offset` of `block`.
pub fn write_dirent(block: &mut [u8], offset: usize, ino: u32, rec_len: usize, name: &[u8], file_type: u8) {
    put32(block, offset, ino);
    put16(block, offset + 4, rec_len as u16);
    block[offset + 6] = name.len() as u8;
    block[offset + 7] = file_type;
    block[offset + DIRENT_HEADER..offset + DIRENT_HEADER + name.len()].copy_from_slice(name);
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn sparse_super_groups() {
        let with: alloc::vec::Vec<u32> = (0..60).filter(|&g| group_has_super(g, true)).collect();
        assert_eq!(with, vec![0, 1, 3, 5, 7, 9, 25, 27, 49]);
        assert!(group_has_super(4, false));
    }

    #[test]
    fn dir_blocks_are_checked() {
        let mut b = vec![0u8; 1024];
        write_dirent(&mut b, 0, 2, 12, b".", 2);
        write_dirent(&mut b, 12, 2, 1012, b"..", 2);
        let entries = parse_dir_block(&b, true).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].name(&b), b"..");
        put16(&mut b, 16, 1016); // past the end
        assert!(parse_dir_block(&b, true).is_err());
        put16(&mut b, 16, 1010); // not a multiple of 4
        assert!(parse_dir_block(&b, true).is_err());
        put16(&mut b, 16, 1012);
        put16(&mut b, 4, 0); // a zero rec_len would loop for ever
        assert!(parse_dir_block(&b, true).is_err());
        put16(&mut b, 4, 12);
        b[6] = 9; // name longer than the record
        assert!(parse_dir_block(&b, true).is_err());
    }

    #[test]
    fn inode_fields_round_trip_with_high_halves() {
        let mut i = Inode::zeroed();
        i.set_mode(ftype::S_IFREG | 0o644);
        i.set_uid(0x1_0002);
        i.set_gid(0x3_0004);
        i.set_size(5 << 32 | 7);
        assert_eq!((i.uid(), i.gid(), i.size()), (0x1_0002, 0x3_0004, 5 << 32 | 7));
        i.set_mode(ftype::S_IFDIR | 0o755);
        assert_eq!(i.size(), 7, "a directory's high word is i_dir_acl, not size");
    }
}
