//! The public operations: what the directory manager (names), the volume
//! manager (inodes and space) and the file-data service will serve.
//!
//! Each operation checks what it will touch before it changes anything,
//! then changes it in the order that keeps the disk consistent; the order
//! is stated at each operation (see also `docs/filesystem.md`):
//! - create: inode bit, then the inode, then the entry;
//! - unlink: entry, then the inode's link count, then its blocks' and its
//!   own bits;
//! - a link count goes up before a new entry and down after an entry goes
//!   (a count too high only leaks; too low would lose a file).

use super::Fs;
use super::dir::{DirEntry, Room, Scan};
use crate::cache::MAX_TRANSFER_PAGES;
use crate::device::BlockDevice;
use crate::layout::{self, Inode, MAX_NAME, ROOT_INO, dirent_len, ftype, write_dirent};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::errno::{
    EEXIST, EFBIG, EINVAL, EIO, EISDIR, EMLINK, ENAMETOOLONG, ENOENT, ENOTDIR, ENOTEMPTY, EPERM,
};
use protocols::unix::{Errno, Stat};

/// Most links an inode may have (ext2's `EXT2_LINK_MAX`).
pub const LINK_MAX: u16 = 32000;

/// Most blocks [`Fs::read_into`] hands its sink at once: what one lease
/// call moves (`abi::lease::MAX_SEGMENTS`).
pub const READ_SEGMENTS: usize = abi::lease::MAX_SEGMENTS as usize;

/// Most blocks [`Fs::write_from`] fills with one call of its source:
/// what one lease call moves (`abi::lease::MAX_SEGMENTS`).
pub const WRITE_SEGMENTS: usize = abi::lease::MAX_SEGMENTS as usize;

/// One request of [`Fs::read_into`], as noted ([`Fs::note_read`]).
#[derive(Clone, Copy)]
struct Reader {
    ino: u32,
    offset: u64,
    /// Bytes to give (within the file).
    n: usize,
    is_sequential: bool,
    /// Where the read-ahead window was last found whole.
    window_end: u64,
}

/// Where [`Fs::read_into`] hands a run of blocks' bytes.
trait SegmentSink: FnMut(&[&[u8]]) -> Result<(), Errno> {}
impl<F: FnMut(&[&[u8]]) -> Result<(), Errno>> SegmentSink for F {}

/// A hole's bytes (blocks are at most 4 KiB: `Fs::mount` refuses larger).
static ZEROS: [u8; 4096] = [0; 4096];

/// An inode's attributes (`stat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    pub ino: u32,
    /// Type and permission bits.
    pub mode: u16,
    pub links: u16,
    pub uid: u32,
    pub gid: u32,
    pub size_bytes: u64,
    /// 512-byte sectors held (indirect blocks included).
    pub sectors: u32,
    pub atime_s: u32,
    pub mtime_s: u32,
    pub ctime_s: u32,
}

impl Attr {
    /// The UNIX personality's `Stat`.
    pub fn to_stat(&self) -> Stat {
        Stat {
            ino: self.ino as u64,
            mode: self.mode as u32,
            nlink: self.links as u32,
            uid: self.uid,
            gid: self.gid,
            size_bytes: self.size_bytes,
            mtime_ns: self.mtime_s as u64 * 1_000_000_000,
            device_pid: 0,
            device_queue: 0,
        }
    }
}

/// `statfs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsStats {
    pub block_bytes: u32,
    pub blocks: u32,
    pub free_blocks: u32,
    pub inodes: u32,
    pub free_inodes: u32,
}

/// A name for a new entry: not empty, at most 255 bytes, no `/` or NUL.
fn check_name(name: &[u8]) -> Result<(), Errno> {
    if name.is_empty() {
        return Err(ENOENT);
    }
    if name.len() > MAX_NAME {
        return Err(ENAMETOOLONG);
    }
    if name.contains(&b'/') || name.contains(&0) {
        return Err(EINVAL);
    }
    Ok(())
}

fn is_dot(name: &[u8]) -> bool {
    name == b"." || name == b".."
}

impl<D: BlockDevice> Fs<D> {
    fn attr_of(ino: u32, i: &Inode) -> Attr {
        Attr {
            ino,
            mode: i.mode(),
            links: i.links(),
            uid: i.uid(),
            gid: i.gid(),
            size_bytes: i.size(),
            sectors: i.sectors(),
            atime_s: i.atime(),
            mtime_s: i.mtime(),
            ctime_s: i.ctime(),
        }
    }

    /// `stat` of inode `ino`.
    pub fn stat(&mut self, ino: u32) -> Result<Attr, Errno> {
        let i = self.inode(ino)?;
        Ok(Self::attr_of(ino, &i))
    }

    pub fn statfs(&mut self) -> Result<FsStats, Errno> {
        let (block, offset) = (self.sb_block, self.sb_offset);
        let (free_blocks, free_inodes) = self.cache.read(block, |b| {
            (
                layout::le32(b, offset + layout::sb::FREE_BLOCKS_COUNT),
                layout::le32(b, offset + layout::sb::FREE_INODES_COUNT),
            )
        })?;
        Ok(FsStats {
            block_bytes: self.block_bytes as u32,
            blocks: self.sb.blocks_count,
            free_blocks,
            inodes: self.sb.inodes_count,
            free_inodes,
        })
    }

    /// A directory inode, or `ENOTDIR`.
    fn dir_inode(&mut self, ino: u32) -> Result<Inode, Errno> {
        let d = self.inode(ino)?;
        if !d.is_dir() {
            return Err(ENOTDIR);
        }
        Ok(d)
    }

    /// The inode `name` names in directory `dir`. A directory found must
    /// name `dir` as its `..` (ext2 has one parent per directory): a second
    /// parent means a loop in the tree, `EIO`.
    pub fn lookup(&mut self, dir: u32, name: &[u8]) -> Result<u32, Errno> {
        if name.len() > MAX_NAME {
            return Err(ENAMETOOLONG);
        }
        let d = self.dir_inode(dir)?;
        let found = self.find_entry(dir, &d, name)?.ok_or(ENOENT)?;
        self.checked_child(dir, name, found.ino)
    }

    /// The inode `ino` that `name` names in directory `dir`, checked: a
    /// directory must name `dir` as its `..`.
    fn checked_child(&mut self, dir: u32, name: &[u8], ino: u32) -> Result<u32, Errno> {
        let child = self.inode(ino)?;
        // A parent checked before needs no second look at the child's
        // first block (every path walk checks each directory on it).
        if child.is_dir() && !is_dot(name) && self.parents.get(&ino) != Some(&dir) {
            let parent = self.find_entry(ino, &child, b"..")?.map(|f| f.ino);
            if parent != Some(dir) {
                return Err(self.damage(format!(
                    "directory {ino} (\"{}\" in {dir}) names {parent:?} as its parent: a loop or a second parent",
                    alloc::string::String::from_utf8_lossy(name)
                )));
            }
            if self.parents.len() >= super::MAX_KNOWN_PARENTS {
                self.parents.clear();
            }
            self.parents.insert(ino, dir);
        }
        Ok(ino)
    }

    /// `open` with `O_CREAT` of `name` in directory `dir`: the inode the
    /// name has (and `false`), else a new file made as [`Fs::create`]
    /// makes it (and `true`). One pass over the directory finds the name
    /// or, when it is free, the place for its entry: a lookup and then
    /// `create` scanned it three times (`docs/filesystem-history.md`, "The
    /// request path"). The answers are theirs, error for error.
    pub fn lookup_or_create(
        &mut self,
        dir: u32,
        name: &[u8],
        mode: u16,
        uid: u32,
        gid: u32,
    ) -> Result<(u32, bool), Errno> {
        self.lookup_or_make(dir, name, mode, uid, gid).map(|(ino, made)| (ino, made.is_some()))
    }

    /// [`Fs::lookup_or_create`] for an open: a file it makes is also held
    /// open (as [`Fs::open_inode_stat`] would) and its attributes come
    /// from the inode just written (`Some`), where the open read it back
    /// and checked it (650 host instructions of R2's creat+close,
    /// `docs/filesystem-history.md`, "the manager's work"); a name found is
    /// neither opened nor statted (`None`).
    pub fn lookup_or_create_open(
        &mut self,
        dir: u32,
        name: &[u8],
        mode: u16,
        uid: u32,
        gid: u32,
    ) -> Result<(u32, Option<Attr>), Errno> {
        let (ino, made) = self.lookup_or_make(dir, name, mode, uid, gid)?;
        let Some(inode) = made else { return Ok((ino, None)) };
        *self.open.entry(ino).or_insert(0) += 1;
        Ok((ino, Some(Self::attr_of(ino, &inode))))
    }

    /// [`Fs::lookup_or_create`], with the inode made (`None`: found).
    fn lookup_or_make(
        &mut self,
        dir: u32,
        name: &[u8],
        mode: u16,
        uid: u32,
        gid: u32,
    ) -> Result<(u32, Option<Inode>), Errno> {
        if name.len() > MAX_NAME {
            return Err(ENAMETOOLONG);
        }
        let mut d = self.dir_inode(dir)?;
        let room = match self.scan_dir(dir, &d, name, Some(dirent_len(name.len())))? {
            Scan::Found(found) => return self.checked_child(dir, name, found.ino).map(|ino| (ino, None)),
            Scan::Absent(room) => room,
        };
        self.check_writable()?;
        check_name(name)?;
        if d.links() == 0 {
            return Err(ENOENT); // removed, still open
        }
        if is_dot(name) {
            return Err(EEXIST);
        }
        self.create_at(dir, &mut d, name, mode, uid, gid, room).map(|(ino, inode)| (ino, Some(inode)))
    }

    /// The inode of an absolute path (`/`-separated; `.` and `..` are the
    /// directories' own entries). Symbolic links are not followed. A path
    /// walked lately is answered from memory (`Fs::walked`, forgotten at
    /// every entry removed or re-pointed): its directories were checked
    /// when it was walked, and nothing that could change its answer has
    /// happened since. R2's `creat` walked `/` and read `/r2`'s inode at
    /// every file.
    pub fn resolve(&mut self, path: &[u8]) -> Result<u32, Errno> {
        if path.len() > protocols::unix::MAX_PATH_BYTES {
            return Err(ENAMETOOLONG);
        }
        if let Some(&(_, ino)) = self.walked.0.iter().find(|(p, ino)| *ino != 0 && p == path) {
            return Ok(ino);
        }
        let mut ino = ROOT_INO;
        for name in path.split(|&c| c == b'/').filter(|n| !n.is_empty()) {
            ino = self.lookup(ino, name)?;
        }
        if path.len() <= super::MAX_WALKED_PATH_BYTES {
            // An empty slot, else a new one, else one in turn.
            let (paths, next) = &mut self.walked;
            let slot = match paths.iter().position(|&(_, i)| i == 0) {
                Some(empty) => empty,
                None if paths.len() < super::MAX_WALKED_PATHS => {
                    paths.push((Vec::new(), 0));
                    paths.len() - 1
                }
                None => {
                    let turn = *next;
                    *next = (turn + 1) % super::MAX_WALKED_PATHS;
                    turn
                }
            };
            let (kept, kept_ino) = &mut paths[slot];
            kept.clear();
            kept.extend_from_slice(path);
            *kept_ino = ino;
        }
        Ok(ino)
    }

    /// Forget every path [`Fs::resolve`] remembers: an entry was removed or
    /// pointed elsewhere, or an inode freed. The slots keep their vectors
    /// (inode 0: empty), so that a batch of unlinks, each walking its
    /// parent again, allocates nothing.
    pub(crate) fn forget_walks(&mut self) {
        for (path, ino) in &mut self.walked.0 {
            path.clear();
            *ino = 0;
        }
        self.walked.1 = 0;
    }

    /// The checks every new name in `dir` needs: a valid name, a live
    /// directory (checked whole), the name not taken.
    fn prepare_new_name(&mut self, dir: u32, name: &[u8]) -> Result<Inode, Errno> {
        self.check_writable()?;
        check_name(name)?;
        let d = self.dir_inode(dir)?;
        if d.links() == 0 {
            return Err(ENOENT); // removed, still open
        }
        if is_dot(name) || self.find_entry(dir, &d, name)?.is_some() {
            return Err(EEXIST);
        }
        Ok(d)
    }

    fn new_inode_fields(&mut self, mode: u16, uid: u32, gid: u32, links: u16) -> Inode {
        let mut i = Inode::zeroed();
        i.set_mode(mode);
        i.set_uid(uid);
        i.set_gid(gid);
        i.set_links(links);
        let now = self.now_s;
        i.set_times(Some(now), Some(now), Some(now));
        i.set_generation(self.next_generation);
        self.next_generation = self.next_generation.wrapping_add(1);
        i
    }

    fn touch_dir(&mut self, dir: u32, d: &mut Inode) -> Result<(), Errno> {
        let now = self.now_s;
        d.set_times(None, Some(now), Some(now));
        self.write_inode(dir, d)
    }

    /// Creates a file that is not a directory (`mode`: type and
    /// permissions; a type of 0 means a regular file).
    /// Order: inode bit and inode (either first) -> entry.
    pub fn create(&mut self, dir: u32, name: &[u8], mode: u16, uid: u32, gid: u32) -> Result<u32, Errno> {
        self.check_writable()?;
        check_name(name)?;
        let mut d = self.dir_inode(dir)?;
        if d.links() == 0 {
            return Err(ENOENT); // removed, still open
        }
        if is_dot(name) {
            return Err(EEXIST);
        }
        // One pass: the name must be free, and where its entry goes.
        let room = match self.scan_dir(dir, &d, name, Some(dirent_len(name.len())))? {
            Scan::Found(_) => return Err(EEXIST),
            Scan::Absent(room) => room,
        };
        self.create_at(dir, &mut d, name, mode, uid, gid, room).map(|(ino, _)| ino)
    }

    /// [`Fs::create`] once the name is known to be free in `dir` (whose
    /// inode is `d`) and its entry's place is found (`room`): the new
    /// inode's number and its contents as written.
    #[allow(clippy::too_many_arguments)]
    fn create_at(
        &mut self,
        dir: u32,
        d: &mut Inode,
        name: &[u8],
        mode: u16,
        uid: u32,
        gid: u32,
        room: Option<Room>,
    ) -> Result<(u32, Inode), Errno> {
        let mode = if mode & ftype::S_IFMT == 0 { mode | ftype::S_IFREG } else { mode };
        let file_type = match mode & ftype::S_IFMT {
            ftype::S_IFDIR | ftype::S_IFLNK => return Err(EINVAL),
            t => ftype::dirent_type(t).ok_or(EINVAL)?,
        };
        let ino = self.alloc_inode(dir, false)?;
        let (iblock, _) = self.inode_location(ino)?;
        let bitmap = self.inode_bitmap_of(ino);
        let inode = self.new_inode_fields(mode, uid, gid, 1);
        self.write_new_inode(ino, &inode)?;
        // The bit and the inode may reach the disk in either order (an
        // inode in use that no entry names loses nothing if its number is
        // given out again); the entry waits for both. So an `fsync` of a
        // new file sends the bitmap and the inode block together, then
        // the entry: two round trips to the device, not three.
        if let Err(e) = self.add_entry_at(dir, d, name, ino, file_type, &[iblock, bitmap], room) {
            // Nothing names the inode: give it back.
            self.discard_new_inode(ino, inode, false)?;
            return Err(e);
        }
        self.touch_dir(dir, d)?;
        self.end_op()?;
        Ok((ino, inode))
    }

    /// Undoes an inode made by this operation that no entry names.
    fn discard_new_inode(&mut self, ino: u32, mut inode: Inode, is_dir: bool) -> Result<(), Errno> {
        inode.set_links(0);
        inode.set_dtime(self.now_s.max(1));
        inode.set_size(0);
        self.cut(ino, &mut inode, 0)?;
        let (iblock, _) = self.inode_location(ino)?;
        self.cache.order(iblock, self.inode_bitmap_of(ino))?;
        self.free_inode(ino, is_dir)
    }

    /// Makes a directory. Order: parent's link count up -> inode bit,
    /// first block ('.' and '..') -> inode -> entry.
    pub fn mkdir(&mut self, dir: u32, name: &[u8], mode: u16, uid: u32, gid: u32) -> Result<u32, Errno> {
        let mut d = self.prepare_new_name(dir, name)?;
        if d.links() >= LINK_MAX {
            return Err(EMLINK);
        }
        let ino = self.alloc_inode(dir, true)?;
        let (iblock, _) = self.inode_location(ino)?;
        let (parent_block, _) = self.inode_location(dir)?;
        d.set_links(d.links() + 1);
        self.write_inode(dir, &d)?;
        self.inode_after(ino, parent_block);
        self.inode_after(ino, self.inode_bitmap_of(ino));
        let mut inode = self.new_inode_fields(ftype::S_IFDIR | (mode & 0o7777), uid, gid, 2);
        let bs = self.block_bytes;
        let goal = self.group_first_block((ino - 1) / self.sb.inodes_per_group);
        let made = self.bmap_alloc(ino, &mut inode, 0, goal, &[], &mut |b| {
            b.fill(0);
            write_dirent(b, 0, ino, 12, b".", 2);
            write_dirent(b, 12, dir, bs - 12, b"..", 2);
        });
        if let Err(e) = made {
            self.free_inode(ino, true)?;
            d.set_links(d.links() - 1);
            self.write_inode(dir, &d)?;
            return Err(e);
        }
        inode.set_size(bs as u64);
        self.write_new_inode(ino, &inode)?;
        if let Err(e) = self.add_entry(dir, &mut d, name, ino, 2, &[iblock]) {
            self.discard_new_inode(ino, inode, true)?;
            d.set_links(d.links() - 1);
            self.write_inode(dir, &d)?;
            return Err(e);
        }
        self.touch_dir(dir, &mut d)?;
        self.end_op()?;
        Ok(ino)
    }

    /// One link less on `ino` after its entry in block `entry_block` went:
    /// the count is due after the entry's block; at 0 (and not open) the
    /// inode is deleted.
    fn drop_link(
        &mut self,
        ino: u32,
        mut inode: Inode,
        entry_block: Option<u64>,
        by: u16,
    ) -> Result<(), Errno> {
        if let Some(entry_block) = entry_block {
            self.inode_after(ino, entry_block);
        }
        inode.set_links(inode.links().saturating_sub(by));
        inode.set_times(None, Some(self.now_s), None);
        if inode.links() == 0 && !self.open.contains_key(&ino) {
            self.delete_inode(ino, inode)
        } else {
            self.write_inode(ino, &inode)
        }
    }

    /// Would dropping `by` links delete inode `ino`, and if so, can it be
    /// deleted whole? Checked before the entry goes, so that a damaged
    /// file gives `EIO` with nothing changed.
    fn check_drop(&mut self, ino: u32, inode: &Inode, by: u16) -> Result<(), Errno> {
        let is_last = inode.links() <= by && !self.open.contains_key(&ino);
        let has_map = !(inode.file_type() == ftype::S_IFLNK && inode.sectors() == 0)
            && (inode.is_reg() || inode.is_dir() || inode.sectors() != 0);
        if is_last && has_map {
            self.check_cut(inode, 0)?;
        }
        Ok(())
    }

    /// Frees an inode with no links: blocks (after the inode's block),
    /// then its bit. The inode is marked deleted (dtime) as the blocks go.
    fn delete_inode(&mut self, ino: u32, mut inode: Inode) -> Result<(), Errno> {
        let is_dir = inode.is_dir();
        inode.set_links(0);
        inode.set_dtime(self.now_s.max(1));
        // Fast symbolic links and devices keep data, not pointers, in
        // i_block; only a map with blocks is cut.
        let has_map = !(inode.file_type() == ftype::S_IFLNK && inode.sectors() == 0)
            && (inode.is_reg() || is_dir || inode.sectors() != 0);
        if has_map {
            inode.set_size(0);
            self.cut(ino, &mut inode, 0)?;
        }
        self.release_xattr(ino, &mut inode)?;
        self.write_inode(ino, &inode)?;
        let (iblock, _) = self.inode_location(ino)?;
        self.cache.order(iblock, self.inode_bitmap_of(ino))?;
        self.free_inode(ino, is_dir)
    }

    /// Removes a name that is not a directory. Order: entry -> link count
    /// (-> blocks' bits -> inode bit, when it was the last).
    pub fn unlink(&mut self, dir: u32, name: &[u8]) -> Result<(), Errno> {
        self.check_writable()?;
        if is_dot(name) {
            return Err(EISDIR);
        }
        if name.len() > MAX_NAME {
            return Err(ENAMETOOLONG);
        }
        let mut d = self.dir_inode(dir)?;
        let found = self.find_entry(dir, &d, name)?.ok_or(ENOENT)?;
        let child = self.inode(found.ino)?;
        if child.is_dir() {
            return Err(EISDIR);
        }
        self.check_drop(found.ino, &child, 1)?;
        // An entry that never reached the disk needs no order before the
        // link count (`Fs::entry_never_written`).
        let entry_block =
            (!self.entry_never_written(found.ino, found.block, found.offset)).then_some(found.block);
        self.remove_entry(&found)?;
        self.touch_dir(dir, &mut d)?;
        self.drop_link(found.ino, child, entry_block, 1)?;
        self.end_op()
    }

    /// Removes an empty directory. Order: entry -> the directory's inode
    /// (deleted) -> its block's and its own bits; the parent's link count
    /// after the entry.
    pub fn rmdir(&mut self, dir: u32, name: &[u8]) -> Result<(), Errno> {
        self.check_writable()?;
        if name == b"." {
            return Err(EINVAL);
        }
        if name == b".." {
            return Err(ENOTEMPTY);
        }
        if name.len() > MAX_NAME {
            return Err(ENAMETOOLONG);
        }
        let mut d = self.dir_inode(dir)?;
        let found = self.find_entry(dir, &d, name)?.ok_or(ENOENT)?;
        let child = self.inode(found.ino)?;
        if !child.is_dir() {
            return Err(ENOTDIR);
        }
        if !self.is_empty_dir(found.ino, &child)? {
            return Err(ENOTEMPTY);
        }
        self.check_drop(found.ino, &child, 2)?;
        self.remove_entry(&found)?;
        self.drop_link(found.ino, child, Some(found.block), 2)?;
        let (child_block, _) = self.inode_location(found.ino)?;
        self.inode_after(dir, found.block);
        self.inode_after(dir, child_block);
        d.set_links(d.links().saturating_sub(1).max(2));
        self.touch_dir(dir, &mut d)?;
        self.end_op()
    }

    /// A new name for a file that is not a directory. Order: link count up
    /// -> entry.
    pub fn link(&mut self, ino: u32, dir: u32, name: &[u8]) -> Result<(), Errno> {
        let mut d = self.prepare_new_name(dir, name)?;
        let mut inode = self.inode(ino)?;
        if inode.is_dir() {
            return Err(EPERM);
        }
        if inode.links() >= LINK_MAX {
            return Err(EMLINK);
        }
        if inode.links() == 0 {
            return Err(ENOENT);
        }
        inode.set_links(inode.links() + 1);
        inode.set_times(None, Some(self.now_s), None);
        self.write_inode(ino, &inode)?;
        let (iblock, _) = self.inode_location(ino)?;
        let file_type = ftype::dirent_type(inode.mode()).unwrap_or(0);
        // The inode's bit too, as for `create`'s entry: a file created
        // just now has its bit and its inode in one level, not the bit
        // before the inode, so a new name waiting only for the inode could
        // reach the disk before the bit (found by the journal's power-cut
        // test: `Inode bitmap differences: +2051` for a hard link).
        let bitmap = self.inode_bitmap_of(ino);
        if let Err(e) = self.add_entry(dir, &mut d, name, ino, file_type, &[iblock, bitmap]) {
            inode.set_links(inode.links() - 1);
            self.write_inode(ino, &inode)?;
            return Err(e);
        }
        self.touch_dir(dir, &mut d)?;
        self.end_op()
    }

    /// Is `ancestor` on the way from `dir` up to the root? Walks `..`, at
    /// most as many steps as there are inodes: more is a loop, `EIO`.
    fn is_ancestor(&mut self, ancestor: u32, dir: u32) -> Result<bool, Errno> {
        let mut at = dir;
        for _ in 0..=self.sb.inodes_count {
            if at == ancestor {
                return Ok(true);
            }
            if at == ROOT_INO {
                return Ok(false);
            }
            let d = self.dir_inode(at)?;
            at = match self.find_entry(at, &d, b"..")? {
                Some(f) => f.ino,
                None => return Err(self.damage(format!("directory {at} has no '..'"))),
            };
        }
        Err(self.damage(format!("the '..' chain from directory {dir} never reaches the root: a loop")))
    }

    /// Renames `from_name` in `from_dir` to `to_name` in `to_dir`,
    /// replacing a file there (or an empty directory, for a directory).
    /// Order: the moved inode's link count up -> the new entry -> the old
    /// entry goes -> the count back down; a replaced inode loses its link
    /// after the new entry; a moved directory's new parent gains a link
    /// before its `..` changes and the old parent loses one after.
    pub fn rename(
        &mut self,
        from_dir: u32,
        from_name: &[u8],
        to_dir: u32,
        to_name: &[u8],
    ) -> Result<(), Errno> {
        self.check_writable()?;
        if is_dot(from_name) || is_dot(to_name) {
            return Err(EINVAL);
        }
        check_name(to_name)?;
        if from_name.len() > MAX_NAME {
            return Err(ENAMETOOLONG);
        }
        let from_d = self.dir_inode(from_dir)?;
        let mut to_d = self.dir_inode(to_dir)?;
        if to_d.links() == 0 {
            return Err(ENOENT);
        }
        let src = self.find_entry(from_dir, &from_d, from_name)?.ok_or(ENOENT)?;
        let mut src_inode = self.inode(src.ino)?;
        let victim = self.find_entry(to_dir, &to_d, to_name)?;
        if victim.is_some_and(|v| v.ino == src.ino) {
            return Ok(()); // POSIX: two names of one file, nothing to do
        }
        let is_dir = src_inode.is_dir();
        let moves_dir = is_dir && from_dir != to_dir;
        if moves_dir && self.is_ancestor(src.ino, to_dir)? {
            return Err(EINVAL);
        }
        let victim_inode = match victim {
            Some(v) => {
                let vi = self.inode(v.ino)?;
                match (is_dir, vi.is_dir()) {
                    (true, false) => return Err(ENOTDIR),
                    (false, true) => return Err(EISDIR),
                    (true, true) if !self.is_empty_dir(v.ino, &vi)? => return Err(ENOTEMPTY),
                    _ => {}
                }
                self.check_drop(v.ino, &vi, if vi.is_dir() { 2 } else { 1 })?;
                Some(vi)
            }
            None => None,
        };
        if moves_dir && victim.is_none() && to_d.links() >= LINK_MAX {
            return Err(EMLINK);
        }
        // A moved directory's '..' is checked before anything changes.
        let dotdot = if moves_dir {
            let f = self.find_entry(src.ino, &src_inode, b"..")?;
            Some(f.ok_or_else(|| self.damage(format!("directory {} has no '..'", src.ino)))?)
        } else {
            None
        };
        let (src_block, _) = self.inode_location(src.ino)?;
        let file_type = ftype::dirent_type(src_inode.mode()).unwrap_or(0);

        // 1. One more link while two entries may name it.
        src_inode.set_links(src_inode.links().saturating_add(1));
        src_inode.set_times(None, Some(self.now_s), None);
        self.write_inode(src.ino, &src_inode)?;
        // 2. The new entry.
        let new_block = match victim {
            // The moved inode's bit before its new entry too (as `link`).
            Some(v) => {
                self.cache.order(src_block, v.block)?;
                self.cache.order(self.inode_bitmap_of(src.ino), v.block)?;
                self.set_entry(&v, src.ino, file_type)?;
                v.block
            }
            None => {
                let firsts = [src_block, self.inode_bitmap_of(src.ino)];
                let block = self.add_entry(to_dir, &mut to_d, to_name, src.ino, file_type, &firsts)?;
                self.write_inode(to_dir, &to_d)?;
                block
            }
        };
        // 3. The old entry goes, found again: adding may have split the
        // entry before it.
        let from_d = self.dir_inode(from_dir)?;
        let src_now = match self.find_entry(from_dir, &from_d, from_name)? {
            Some(f) if f.ino == src.ino => f,
            _ => return Err(self.damage(format!("directory {from_dir} changed under rename"))),
        };
        self.cache.order(new_block, src_now.block)?;
        self.remove_entry(&src_now)?;
        // 4. The count back down, after the old entry went.
        self.inode_after(src.ino, src_now.block);
        src_inode.set_links(src_inode.links().saturating_sub(1));
        self.write_inode(src.ino, &src_inode)?;
        // 5. The replaced inode loses the name.
        if let (Some(v), Some(vi)) = (victim, victim_inode) {
            let victim_is_dir = vi.is_dir();
            self.drop_link(v.ino, vi, Some(new_block), if victim_is_dir { 2 } else { 1 })?;
            if victim_is_dir {
                // Its '..' no longer counts for the new parent.
                let mut td = self.dir_inode(to_dir)?;
                td.set_links(td.links().saturating_sub(1).max(2));
                self.write_inode(to_dir, &td)?;
            }
        }
        // 6. A moved directory: new parent +1 -> '..' -> old parent -1.
        if let Some(dd) = dotdot {
            let (to_block, _) = self.inode_location(to_dir)?;
            let mut td = self.dir_inode(to_dir)?;
            td.set_links(td.links().saturating_add(1));
            self.write_inode(to_dir, &td)?;
            self.cache.order(to_block, dd.block)?;
            self.set_entry(&dd, to_dir, 2)?;
            self.inode_after(from_dir, dd.block);
            let mut fd = self.dir_inode(from_dir)?;
            fd.set_links(fd.links().saturating_sub(1).max(2));
            self.write_inode(from_dir, &fd)?;
        }
        for d in [from_dir, to_dir] {
            let mut di = self.dir_inode(d)?;
            self.touch_dir(d, &mut di)?;
        }
        self.end_op()
    }

    /// `chmod`: the permission bits (the type stays).
    pub fn chmod(&mut self, ino: u32, mode: u16) -> Result<(), Errno> {
        self.check_writable()?;
        let mut i = self.inode(ino)?;
        i.set_mode((i.mode() & ftype::S_IFMT) | (mode & 0o7777));
        i.set_times(None, Some(self.now_s), None);
        self.write_inode(ino, &i)?;
        self.end_op()
    }

    /// `chown`.
    pub fn chown(&mut self, ino: u32, uid: u32, gid: u32) -> Result<(), Errno> {
        self.check_writable()?;
        let mut i = self.inode(ino)?;
        i.set_uid(uid);
        i.set_gid(gid);
        i.set_times(None, Some(self.now_s), None);
        self.write_inode(ino, &i)?;
        self.end_op()
    }

    /// A file the caller holds open: it outlives its last name until
    /// [`Fs::close_inode`].
    pub fn open_inode(&mut self, ino: u32) -> Result<(), Errno> {
        self.open_inode_stat(ino).map(|_| ())
    }

    /// [`Fs::open_inode`], answering the file's attributes as [`Fs::stat`]
    /// would: the open's answer without reading the inode again.
    pub fn open_inode_stat(&mut self, ino: u32) -> Result<Attr, Errno> {
        let i = self.inode(ino)?;
        *self.open.entry(ino).or_insert(0) += 1;
        Ok(Self::attr_of(ino, &i))
    }

    /// The last close of an unlinked file deletes it.
    pub fn close_inode(&mut self, ino: u32) -> Result<(), Errno> {
        let Some(count) = self.open.get_mut(&ino) else { return Err(EINVAL) };
        *count -= 1;
        if *count > 0 {
            return Ok(());
        }
        self.flush_inode(ino)?;
        let core = self.core_inodes.remove(&ino);
        self.open.remove(&ino);
        self.readers.retain(|&(i, _, _)| i != ino);
        // The in-core copy equals the block now: no read of the block.
        let inode = match core {
            Some(inode) => inode,
            None => self.read_inode_raw(ino)?,
        };
        if inode.links() == 0 && inode.dtime() == 0 && !self.read_only {
            self.delete_inode(ino, inode)?;
            self.end_op()?;
        }
        Ok(())
    }

    /// `truncate`: a regular file's new size. Shrinking frees the blocks
    /// past it (pointers first, then bits) and zeroes the rest of the last
    /// block, so growing again reads zeros.
    pub fn truncate(&mut self, ino: u32, size: u64) -> Result<(), Errno> {
        self.check_writable()?;
        let mut i = self.inode(ino)?;
        if i.is_dir() {
            return Err(EISDIR);
        }
        if !i.is_reg() {
            return Err(EINVAL);
        }
        self.check_size(size)?;
        let old = i.size();
        let bs = self.block_bytes as u64;
        let now = self.now_s;
        i.set_times(None, Some(now), Some(now));
        i.set_size(size);
        if size < old {
            if !size.is_multiple_of(bs) {
                let last = self.bmap(&i, size / bs)?;
                if last != 0 {
                    let from = (size % bs) as usize;
                    self.cache.modify(last as u64, |b| b[from..].fill(0))?;
                }
            }
            self.cut(ino, &mut i, size.div_ceil(bs))?;
        } else {
            self.write_inode(ino, &i)?;
        }
        self.end_op()
    }

    fn check_size(&self, size: u64) -> Result<(), Errno> {
        let limit = if self.is_large_file {
            self.max_file_bytes()
        } else {
            self.max_file_bytes().min(i32::MAX as u64)
        };
        if size > limit { Err(EFBIG) } else { Ok(()) }
    }

    /// A regular file (or a symbolic link's target) for reading.
    fn data_inode(&mut self, ino: u32) -> Result<Inode, Errno> {
        let i = self.inode(ino)?;
        if i.is_dir() {
            return Err(EISDIR);
        }
        if !i.is_reg() && i.file_type() != ftype::S_IFLNK {
            return Err(EINVAL);
        }
        Ok(i)
    }

    /// Blocks of read-ahead: 16 pages.
    fn read_ahead_blocks(&self) -> u64 {
        (MAX_TRANSFER_PAGES as u64 * abi::layout::PAGE_SIZE).div_ceil(self.block_bytes as u64)
    }

    /// Was the last read of `ino` the bytes just before `offset`? Also
    /// the logical block up to which the read-ahead window was last found
    /// whole (cached or on its way), 0 if never.
    fn note_read(&mut self, ino: u32, offset: u64, end: u64) -> (bool, u64) {
        let pos = self.readers.iter().position(|&(i, _, _)| i == ino);
        let found = pos.map(|p| self.readers.remove(p));
        let is_sequential = offset == 0 || found.is_some_and(|(_, next, _)| next == offset);
        let window_end = match found {
            Some((_, _, w)) if is_sequential => w,
            _ => 0,
        };
        if self.readers.len() >= 16 {
            self.readers.remove(0);
        }
        self.readers.push((ino, end, window_end));
        (is_sequential, window_end)
    }

    /// Reads from a regular file at `offset`; 0 at or past the end. A
    /// sequential reader gets the next 16 pages read ahead.
    pub fn read(&mut self, ino: u32, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut at = 0;
        self.read_into(ino, offset, buf.len(), |segments| {
            for s in segments {
                buf[at..at + s.len()].copy_from_slice(s);
                at += s.len();
            }
            Ok(())
        })
    }

    /// [`Fs::read`] of up to `len` bytes handed to `sink` straight from the
    /// cache's buffers, in order, as lists of byte slices (parts of
    /// blocks; zeros for holes) of up to [`READ_SEGMENTS`] blocks each: a
    /// server copies each list to its caller in one lease call
    /// (`abi::lease::SEGMENTS`), so cached data is copied once, from the
    /// buffer to the caller. A run whose blocks cannot all be in the cache
    /// at once (fewer buffers than blocks) goes a block at a time. Returns
    /// the bytes given; an error of `sink` ends the read with it.
    pub fn read_into(
        &mut self,
        ino: u32,
        offset: u64,
        len: usize,
        mut sink: impl FnMut(&[&[u8]]) -> Result<(), Errno>,
    ) -> Result<usize, Errno> {
        self.cache.begin_request();
        let i = self.data_inode(ino)?;
        let size = i.size();
        if offset >= size || len == 0 {
            return Ok(0);
        }
        let n = (len as u64).min(size - offset) as usize;
        let (is_sequential, window_end) = self.note_read(ino, offset, offset + n as u64);
        let (mut map, mut blocks) = core::mem::take(&mut self.read_scratch);
        map.clear();
        blocks.clear();
        let reader = Reader { ino, offset, n, is_sequential, window_end };
        let result = self.read_mapped(&i, &reader, &mut map, &mut blocks, &mut sink);
        self.read_scratch = (map, blocks);
        result.map(|()| n)
    }

    /// [`Fs::read_into`] once the reader is noted: `reader.n` bytes at
    /// `reader.offset` of inode `i`, with `map` and `blocks` empty buffers
    /// to use.
    fn read_mapped(
        &mut self,
        i: &Inode,
        reader: &Reader,
        map: &mut Vec<u32>,
        blocks: &mut Vec<u64>,
        sink: &mut dyn SegmentSink,
    ) -> Result<(), Errno> {
        let Reader { ino, offset, n, is_sequential, window_end } = *reader;
        let size = i.size();
        let bs = self.block_bytes as u64;
        let first = offset / bs;
        let last = (offset + n as u64 - 1) / bs;
        // The request's blocks, mapped once (for its prefetch and its copy).
        self.map_blocks_into(i, first..last + 1, map)?;
        blocks.extend(map.iter().filter(|&&b| b != 0).map(|&b| b as u64));
        // The part of logical block `first + k` the request covers.
        let range = |k: usize| {
            let start = if k == 0 { (offset % bs) as usize } else { 0 };
            let end = if first + k as u64 == last {
                ((offset + n as u64 - 1) % bs) as usize + 1
            } else {
                bs as usize
            };
            start..end
        };
        // The run's byte ranges in order, zeros for holes, as one list.
        let give = |group: &[u32], base: usize, datas: &[&[u8]], sink: &mut dyn SegmentSink| {
            let mut data = datas.iter();
            let mut segments: [&[u8]; READ_SEGMENTS] = [&[]; READ_SEGMENTS];
            for (k, &b) in group.iter().enumerate() {
                let r = range(base + k);
                let bytes: &[u8] = if b == 0 { &ZEROS[..] } else { data.next().ok_or(EIO)? };
                segments[k] = &bytes[r];
            }
            sink(&segments[..group.len()])
        };
        // A request of one run whose blocks are all cached and idle (the
        // common case of a sequential reader behind its read-ahead): the
        // prefetch below would start nothing and the run would be found
        // ready without a wait, so both are skipped and the blocks looked
        // up once, not twice (the profile's top user-side cost after the
        // block map: `BlockIndex` lookups). Anything else takes the path
        // below, untouched (benchmark B's counts do not change).
        // No hole: the cache's list of the blocks' bytes is narrowed in
        // place to the parts wanted, so no second list is made.
        let is_ready = if map.len() <= READ_SEGMENTS && blocks.len() == map.len() {
            let narrowed = |datas: &mut [&[u8]]| {
                for (k, data) in datas.iter_mut().enumerate() {
                    *data = data.get(range(k)).ok_or(EIO)?;
                }
                sink(datas)
            };
            match self.cache.read_ready(blocks, narrowed)? {
                Some(r) => {
                    r?;
                    true
                }
                None => false,
            }
        } else {
            false
        };
        if !is_ready {
            if is_sequential && last > first {
                self.cache.prefetch(blocks, false)?;
            }
            let mut at = 0;
            for (g, group) in map.chunks(READ_SEGMENTS).enumerate() {
                let base = g * READ_SEGMENTS;
                let count = group.iter().filter(|&&b| b != 0).count();
                let group_blocks = &blocks[at..at + count];
                at += count;
                // Blocks a read-ahead brought (or is bringing) are all here.
                match self.cache.read_cached(group_blocks, |d| give(group, base, d, sink))? {
                    Some(r) => r?,
                    None => {
                        // A miss: one block at a time, each read as needed.
                        for (k, &b) in group.iter().enumerate() {
                            let r = range(base + k);
                            if b == 0 {
                                sink(&[&ZEROS[r]])?;
                            } else {
                                self.cache.read(b as u64, |d| sink(&[&d[r]]))??;
                            }
                        }
                    }
                }
            }
        }
        // With one buffer there is none to read ahead into (`Cache::prefetch`
        // takes at most half the buffers): mapping the window would only
        // read the file's indirect block into the one buffer, evicting
        // the block the next read wants (benchmark B: 302 of one buffer's
        // 1959 transfers a job in `nbuf_curve.rs`'s model).
        if is_sequential && self.cache.nbuf() >= 2 {
            // After the copy, so that read-ahead never takes the buffer of
            // a block this read still needs (with two buffers it would).
            let end_of_file = size.div_ceil(bs);
            let window = self.read_ahead_blocks();
            // In a pool smaller than two windows (V1's few buffers, where
            // read-ahead may take half the pool), the window ends where the
            // map needs an indirect block this request's own mapping did
            // not read: mapping past it read that block at once, waiting,
            // into a buffer of the few read-ahead may take, which took a
            // block the job wanted next, and the window, never whole, read
            // it again at the next request (benchmark B with two to twelve
            // buffers, `nbuf_curve.rs`: 1669 -> 1586 transfers a job with
            // two, 458 -> 415 with twelve). The reader reads it itself a
            // request or two later, when its own blocks need it, and the
            // window goes on from there. A larger pool maps on, as before:
            // there the block costs no other block its buffer.
            let mut ahead_end = (last + 1 + window).min(end_of_file);
            if (self.cache.nbuf() as u64) < 2 * window {
                ahead_end = ahead_end.min(self.map_level_end(last));
            }
            // The window was found whole up to `window_end` and more than
            // half of it is still ahead: nothing to look at. (A file read
            // from the cache would otherwise map 16 pages ahead at every
            // read.)
            if window_end >= ahead_end || (window_end > last + 1 && window_end - (last + 1) > window / 2) {
                return Ok(());
            }
            // Only the part of the window not known whole is looked at
            // (the request's buffers serve again: they are done with).
            let from = window_end.max(last + 1);
            map.clear();
            self.map_blocks_into(i, from..ahead_end, map)?;
            blocks.clear();
            blocks.extend(map.iter().filter(|&&b| b != 0).map(|&b| b as u64));
            let ahead = &blocks[..];
            // Top the window up only once half of it is used: the blocks
            // newly in it then go in one long transfer, not one short one
            // per read (Ridge §8: sixteen-page transfers).
            let is_whole = if from > last + 1 {
                // Past the part known whole: due as soon as one block is
                // missing, which the prefetch itself finds (a prefetch of
                // cached blocks changes nothing); when the window is all
                // in the cache, as for a file read again, that one pass is
                // all its lookups (three passes before).
                self.cache.prefetch_whole(ahead, true)? || self.cache.cached(ahead) == ahead.len()
            } else {
                let cached = self.cache.cached(ahead);
                if cached * 2 <= ahead.len() {
                    self.cache.prefetch(ahead, true)?;
                    self.cache.cached(ahead) == ahead.len()
                } else {
                    cached == ahead.len()
                }
            };
            if is_whole {
                self.set_window_end(ino, ahead_end);
            }
        }
        Ok(())
    }

    /// The read-ahead window of reader `ino` is whole up to `lblk`.
    fn set_window_end(&mut self, ino: u32, lblk: u64) {
        if let Some(r) = self.readers.iter_mut().find(|r| r.0 == ino) {
            r.2 = lblk;
        }
    }

    /// [`Fs::write_from`] wrote nothing after allocating: blocks it took
    /// past the end of the file (`old_size`) go again, so that the inode's
    /// size still covers every block it has (e2fsck's rule); those it took
    /// inside the file stay, zeroed (a hole's bytes).
    fn give_back(&mut self, ino: u32, i: &mut Inode, allocated: bool, old_size: u64) -> Result<(), Errno> {
        if allocated {
            self.cut(ino, i, old_size.div_ceil(self.block_bytes as u64))?;
        }
        Ok(())
    }

    /// [`Fs::write`] of `len` bytes at `offset`, with the bytes brought
    /// straight into the cache's buffers: the blocks are found, or
    /// allocated (zeroed), first, then `source` fills their parts in one
    /// call (the server's one `lease_read` with `abi::lease::SEGMENTS`,
    /// at most [`WRITE_SEGMENTS`] blocks): one copy of each byte, where
    /// the server's scratch piece made two. `Ok(None)`, with no byte of
    /// the file changed, when it cannot: the blocks not all in buffers at
    /// once (fewer buffers than blocks), a block the write covers whole
    /// that is not cached (reading it only to overwrite it would cost a
    /// transfer), a damaged map, a full disk; the caller then writes
    /// through its piece ([`Fs::write`]), which says how far it got.
    /// Blocks it allocated inside the file stay, zeroed and pointed at;
    /// past the end of the file they go again when nothing is written.
    pub fn write_from(
        &mut self,
        ino: u32,
        offset: u64,
        len: usize,
        source: impl FnOnce(&mut [&mut [u8]]) -> Result<(), Errno>,
    ) -> Result<Option<usize>, Errno> {
        self.check_writable()?;
        let mut i = self.inode(ino)?;
        if i.is_dir() {
            return Err(EISDIR);
        }
        if !i.is_reg() {
            return Err(EINVAL);
        }
        if len == 0 {
            return Ok(Some(0));
        }
        let end = offset.checked_add(len as u64).ok_or(EFBIG)?;
        self.check_size(end)?;
        let bs = self.block_bytes as u64;
        let (first, last) = (offset / bs, (end - 1) / bs);
        if last - first >= WRITE_SEGMENTS as u64 {
            return Err(EINVAL);
        }
        // A write at or past the file's last block (R2's: a file written
        // from its start) finds holes only: no map to read before
        // allocating, [`Fs::alloc_run`] reads each holder's pointers as it
        // links the new blocks (and finds any block a power cut left past
        // the end of the file).
        let is_extension = first >= i.size().div_ceil(bs);
        // On the stack, as the other lists of this path: `ext2fs`'s heap
        // is a first-fit free list, slow to walk (`Cache::modify_cached`).
        let mut map = [0u32; WRITE_SEGMENTS];
        let map = &mut map[..(last - first + 1) as usize];
        if !is_extension {
            let Ok(found) = self.map_blocks(&i, first..last + 1) else { return Ok(None) };
            map.copy_from_slice(&found);
        }
        // The part of logical block `first + k` the write covers.
        let range = |k: usize| {
            let start = if k == 0 { (offset % bs) as usize } else { 0 };
            let stop = if first + k as u64 == last { ((end - 1) % bs) as usize + 1 } else { bs as usize };
            start..stop
        };
        // Nothing is changed before this check.
        for (k, &b) in map.iter().enumerate() {
            if b != 0 && range(k).len() == bs as usize && self.cache.cached(&[b as u64]) == 0 {
                return Ok(None);
            }
        }
        let goal = match first {
            0 => self.group_first_block((ino - 1) / self.sb.inodes_per_group),
            l => match self.bmap(&i, l - 1)? {
                0 => self.group_first_block((ino - 1) / self.sb.inodes_per_group),
                b => b as u64 + 1,
            },
        };
        let old_size = i.size();
        // Which of the run's blocks were holes (at most `WRITE_SEGMENTS`,
        // 64: one bit each).
        let holes = map.iter().enumerate().filter(|(_, b)| **b == 0).fold(0u64, |m, (k, _)| m | 1 << k);
        let sectors = i.sectors();
        let (allocated, found) = match self.alloc_run(ino, &mut i, first, map, goal) {
            Ok(counts) => counts,
            Err(_) => {
                // ENOSPC or damage: `Fs::write` finds it again and counts
                // what fits. What was allocated is linked (the inode says
                // so) and goes again past the end of the file.
                let allocated = i.sectors() != sectors;
                self.give_back(ino, &mut i, allocated, old_size)?;
                return Ok(None);
            }
        };
        let allocated = allocated > 0;
        for (k, &b) in map.iter().enumerate() {
            let was_there = holes & (1 << k) == 0 || found > 0;
            if was_there && range(k).len() != bs as usize && b != 0 {
                // A part of a block that is there: its other bytes stay.
                self.cache.read(b as u64, |_| ())?;
            }
        }
        let mut blocks = [0u64; WRITE_SEGMENTS];
        let blocks = &mut blocks[..map.len()];
        for (b, &m) in blocks.iter_mut().zip(map.iter()) {
            *b = m as u64;
        }
        let copied = self.cache.modify_cached(blocks, |buffers| {
            // Each buffer cut down to the part the write covers.
            for (k, b) in buffers.iter_mut().enumerate() {
                let whole = core::mem::take(b);
                *b = &mut whole[range(k)];
            }
            source(buffers)
        })?;
        match copied {
            None => {
                self.give_back(ino, &mut i, allocated, old_size)?;
                Ok(None)
            }
            Some(Err(e)) => {
                // Nothing was copied (a lease moves all or nothing).
                self.give_back(ino, &mut i, allocated, old_size)?;
                Err(e)
            }
            Some(Ok(())) => {
                for (k, &b) in blocks.iter().enumerate() {
                    if range(k).end == bs as usize {
                        self.cache.write_behind(b)?;
                    }
                }
                if end > i.size() {
                    i.set_size(end);
                }
                let now = self.now_s;
                i.set_times(None, Some(now), Some(now));
                self.write_inode_lazy(ino, &i)?;
                Ok(Some(len))
            }
        }
    }

    /// Writes to a regular file at `offset`. New blocks come from the
    /// block after the file's previous one (contiguous allocation), get
    /// their data before anything points at them, and whole blocks go out
    /// by write-behind. On a full disk, what fit is written and counted
    /// (`ENOSPC` only when nothing fit).
    pub fn write(&mut self, ino: u32, offset: u64, data: &[u8]) -> Result<usize, Errno> {
        self.check_writable()?;
        let mut i = self.inode(ino)?;
        if i.is_dir() {
            return Err(EISDIR);
        }
        if !i.is_reg() {
            return Err(EINVAL);
        }
        if data.is_empty() {
            return Ok(0);
        }
        let end = offset.checked_add(data.len() as u64).ok_or(EFBIG)?;
        self.check_size(end)?;
        let bs = self.block_bytes as u64;
        let mut goal = match offset / bs {
            0 => self.group_first_block((ino - 1) / self.sb.inodes_per_group),
            l => match self.bmap(&i, l - 1)? {
                0 => self.group_first_block((ino - 1) / self.sb.inodes_per_group),
                b => b as u64 + 1,
            },
        };
        let mut done = 0usize;
        let mut failure = None;
        // The blocks already there, mapped once (indirect blocks read once
        // for the run); on damage, block by block, so that what comes
        // before the damaged block is still written.
        let first = offset / bs;
        let premap = self.map_blocks(&i, first..(end - 1) / bs + 1).ok();
        while done < data.len() {
            let pos = offset + done as u64;
            let lblk = pos / bs;
            let in_block = (pos % bs) as usize;
            let len = (bs as usize - in_block).min(data.len() - done);
            let chunk = &data[done..done + len];
            let mapped = match &premap {
                Some(map) => Ok(map[(lblk - first) as usize]),
                None => self.bmap(&i, lblk),
            };
            let existing = match mapped {
                Ok(b) => b,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            let block = if existing != 0 {
                let copy = |b: &mut [u8]| b[in_block..in_block + len].copy_from_slice(chunk);
                let r = if len == bs as usize {
                    self.cache.overwrite(existing as u64, copy)
                } else {
                    self.cache.modify(existing as u64, copy)
                };
                if let Err(e) = r {
                    failure = Some(e);
                    break;
                }
                existing
            } else {
                let mut fill = |b: &mut [u8]| {
                    b.fill(0);
                    b[in_block..in_block + len].copy_from_slice(chunk);
                };
                match self.bmap_alloc(ino, &mut i, lblk, goal, &[], &mut fill) {
                    Ok((b, _)) => b,
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            };
            if in_block + len == bs as usize {
                self.cache.write_behind(block as u64)?;
            }
            goal = block as u64 + 1;
            done += len;
        }
        if done > 0 {
            if offset + done as u64 > i.size() {
                i.set_size(offset + done as u64);
            }
            let now = self.now_s;
            i.set_times(None, Some(now), Some(now));
            self.write_inode_lazy(ino, &i)?;
            Ok(done)
        } else {
            // Blocks taken for a map that then found no data block stay
            // (zeroed, pointed at): the inode must still say so.
            self.write_inode(ino, &i)?;
            Err(failure.unwrap_or(EIO))
        }
    }

    /// The entry at or after `pos` in directory `dir` (positions are byte
    /// offsets; start at 0), and the position after it.
    pub fn read_dir(&mut self, dir: u32, pos: u64) -> Result<Option<(DirEntry, u64)>, Errno> {
        let d = self.dir_inode(dir)?;
        self.entry_at(dir, &d, pos)
    }

    /// Every entry of directory `dir`.
    pub fn list_dir(&mut self, dir: u32) -> Result<Vec<DirEntry>, Errno> {
        let mut out = Vec::new();
        let mut pos = 0;
        while let Some((e, next)) = self.read_dir(dir, pos)? {
            out.push(e);
            pos = next;
        }
        Ok(out)
    }

    /// A symbolic link's target (short ones live in the inode itself).
    pub fn readlink(&mut self, ino: u32) -> Result<Vec<u8>, Errno> {
        let i = self.inode(ino)?;
        if i.file_type() != ftype::S_IFLNK {
            return Err(EINVAL);
        }
        let size = i.size() as usize;
        let extra = if i.file_acl() != 0 { (self.block_bytes / 512) as u32 } else { 0 };
        if i.sectors() == extra {
            if size > 60 {
                return Err(self.damage(format!("symbolic link {ino}: {size} bytes in the inode")));
            }
            return Ok(i.raw[40..40 + size].to_vec());
        }
        let mut out = vec![0u8; size];
        let n = self.read(ino, 0, &mut out)?;
        out.truncate(n);
        Ok(out)
    }
}
