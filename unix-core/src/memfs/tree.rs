//! memfs's tree: the inodes, the directories and the names in them, and
//! a regular file's data reached by inode number ([`Tree`]).
//!
//! What it is not: an open file. Handles and their offsets are the layer
//! above (`super::open`); the tree only counts, per inode, the handles open
//! on it (`open_count`) so that it knows when an inode may go. Nor does it
//! hold bytes itself: a regular file's inode holds its
//! [`Contents`].
//!
//! # Invariants
//! - Paths given to it are absolute and normalised (`crate::path`); others
//!   are refused with `EINVAL` (or `ENAMETOOLONG` when too long).
//! - An inode lives while a directory entry names it (`nlink > 0`) or a
//!   handle is open on it (`open_count > 0`), so an unlinked file stays
//!   readable through its handles until the last one closes.
//! - A directory's `nlink` is 2 plus its subdirectories while it is
//!   linked, 0 after `rmdir`.
//! - What changes is stamped with the time last given to
//!   [`Tree::set_now`]; nothing here reads a clock.

use crate::lease::{Bytes, Lent};
use alloc::collections::BTreeMap;
use alloc::string::String;

use protocols::unix::errno::{
    EBUSY, EEXIST, EFBIG, EINVAL, EISDIR, ENAMETOOLONG, ENOENT, ENOSPC, ENOTDIR, ENOTEMPTY,
};
use protocols::unix::{Errno, Stat, mode};

use super::data::{Contents, Space};
use crate::path::{self, MAX_NAME_BYTES, MAX_PATH_BYTES};

/// The inode number of `/`.
pub const ROOT_INO: u64 = 1;

pub(super) enum Body {
    File(Contents),
    /// `parent` is the directory's `..` (itself for `/`).
    Dir {
        parent: u64,
        entries: BTreeMap<String, u64>,
    },
    /// A device entry: the device manager's kernel pid and queue.
    Device {
        pid: u64,
        queue: u32,
    },
}

pub(super) struct Inode {
    pub(super) mode: u32,
    pub(super) nlink: u32,
    uid: u32,
    gid: u32,
    mtime_ns: u64,
    /// Handles open on this inode (kept by `super::open`).
    pub(super) open_count: u32,
    pub(super) body: Body,
}

impl Inode {
    fn is_dir(&self) -> bool {
        matches!(self.body, Body::Dir { .. })
    }

    /// Bytes of data pages held (what [`Space`] counts).
    fn bytes_held(&self) -> u64 {
        match &self.body {
            Body::File(contents) => contents.bytes_held(),
            _ => 0,
        }
    }
}

/// What [`Tree::lookup`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup<'p> {
    /// The object the whole path names (a device entry too, when the path
    /// ends at it).
    Found(Stat),
    /// A device entry met before the path ended, and the rest of the path
    /// after it, without a leading `/` (e.g. `b/c` for `/dev/x/b/c`).
    Device { stat: Stat, rest: &'p str },
}

/// Why [`Tree::lookup`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LookupError {
    pub errno: Errno,
    /// With `ENOENT`, when only the last name is missing: the Stat of the
    /// directory that would hold it (the monitor checks `O_CREAT` against it).
    pub parent: Option<Stat>,
}

/// Counts for `fs::OP_STATS`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsStats {
    /// Regular files, including unlinked ones still open.
    pub files: u64,
    pub dirs: u64,
    pub devices: u64,
    /// Bytes of data pages held (holes take none).
    pub bytes_stored: u64,
    pub handles_open: u64,
}

/// Is `abs` an absolute, normalised path of acceptable length?
pub(super) fn check_path(abs: &str) -> Result<(), Errno> {
    if abs.len() > MAX_PATH_BYTES {
        return Err(ENAMETOOLONG);
    }
    if abs.is_empty() {
        return Err(ENOENT);
    }
    if !abs.starts_with('/') {
        return Err(EINVAL);
    }
    if abs == "/" {
        return Ok(());
    }
    for name in abs[1..].split('/') {
        if name.len() > MAX_NAME_BYTES {
            return Err(ENAMETOOLONG);
        }
        if name.is_empty() || name == "." || name == ".." || name.contains('\0') {
            return Err(EINVAL);
        }
    }
    Ok(())
}

/// `name` as an owned string, or `ENOSPC` when memory is exhausted.
pub(super) fn owned_name(name: &str) -> Result<String, Errno> {
    let mut s = String::new();
    s.try_reserve_exact(name.len()).map_err(|_| ENOSPC)?;
    s.push_str(name);
    Ok(s)
}

/// Where a path leads.
pub(super) enum Resolved<'p> {
    Node(u64),
    Device { ino: u64, rest: &'p str },
}

pub(super) struct Missing {
    pub(super) errno: Errno,
    pub(super) parent: Option<u64>,
}

/// The tree of `/`: every inode, by number, and the volume's space.
pub struct Tree {
    pub(super) inodes: BTreeMap<u64, Inode>,
    next_ino: u64,
    now_ns: u64,
    space: Space,
    /// The device entry [`Tree::make_null_device`] made, if any.
    pub(super) null_ino: Option<u64>,
    /// The device entry [`Tree::make_zero_device`] made, if any.
    pub(super) zero_ino: Option<u64>,
}

impl Tree {
    /// An empty tree: `/` (mode 0755, owned by root). `capacity_bytes`
    /// bounds the data held (and the largest file).
    pub fn new(capacity_bytes: u64) -> Tree {
        let mut inodes = BTreeMap::new();
        inodes.insert(
            ROOT_INO,
            Inode {
                mode: mode::S_IFDIR | 0o755,
                nlink: 2,
                uid: 0,
                gid: 0,
                mtime_ns: 0,
                open_count: 0,
                body: Body::Dir { parent: ROOT_INO, entries: BTreeMap::new() },
            },
        );
        Tree {
            inodes,
            next_ino: ROOT_INO + 1,
            now_ns: 0,
            space: Space { stored_bytes: 0, capacity_bytes },
            null_ino: None,
            zero_ino: None,
        }
    }

    /// The time stamped on what changes from now on.
    pub fn set_now(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
    }

    // ---- inodes and paths ----

    pub(super) fn inode(&self, ino: u64) -> Result<&Inode, Errno> {
        self.inodes.get(&ino).ok_or(ENOENT)
    }

    pub(super) fn inode_mut(&mut self, ino: u64) -> Result<&mut Inode, Errno> {
        self.inodes.get_mut(&ino).ok_or(ENOENT)
    }

    pub(super) fn stat_of(&self, ino: u64) -> Result<Stat, Errno> {
        let n = self.inode(ino)?;
        let (size_bytes, device_pid, device_queue) = match &n.body {
            Body::File(contents) => (contents.size_bytes(), 0, 0),
            // A directory's size is its number of entries, `.` and `..`
            // included (POSIX leaves it to the file system).
            Body::Dir { entries, .. } => (entries.len() as u64 + 2, 0, 0),
            Body::Device { pid, queue } => (0, *pid, *queue),
        };
        Ok(Stat {
            ino,
            mode: n.mode,
            nlink: n.nlink,
            uid: n.uid,
            gid: n.gid,
            size_bytes,
            mtime_ns: n.mtime_ns,
            device_pid,
            device_queue,
        })
    }

    /// Walk a checked path from `/`.
    pub(super) fn resolve<'p>(&self, abs: &'p str) -> Result<Resolved<'p>, Missing> {
        let mut ino = ROOT_INO;
        let mut remaining = &abs[1..];
        while !remaining.is_empty() {
            let (name, after) = match remaining.find('/') {
                Some(i) => (&remaining[..i], &remaining[i + 1..]),
                None => (remaining, ""),
            };
            let node = self.inode(ino).map_err(|e| Missing { errno: e, parent: None })?;
            match &node.body {
                Body::Dir { entries, .. } => match entries.get(name) {
                    Some(&child) => ino = child,
                    None => {
                        return Err(Missing { errno: ENOENT, parent: after.is_empty().then_some(ino) });
                    }
                },
                Body::Device { .. } => return Ok(Resolved::Device { ino, rest: remaining }),
                Body::File(_) => return Err(Missing { errno: ENOTDIR, parent: None }),
            }
            remaining = after;
        }
        Ok(Resolved::Node(ino))
    }

    /// The inode a checked path names; crossing a device entry is
    /// `ENOTDIR` (only lookup hands the rest to a device manager).
    fn resolve_node(&self, abs: &str) -> Result<u64, Errno> {
        match self.resolve(abs) {
            Ok(Resolved::Node(ino)) => Ok(ino),
            Ok(Resolved::Device { .. }) => Err(ENOTDIR),
            Err(m) => Err(m.errno),
        }
    }

    /// The directory that holds the last name of a checked path other
    /// than `/`, and that name.
    fn parent_dir<'p>(&self, abs: &'p str) -> Result<(u64, &'p str), Errno> {
        let (parent, name) = path::split_last(abs).ok_or(EINVAL)?;
        let ino = self.resolve_node(parent)?;
        if !self.inode(ino)?.is_dir() {
            return Err(ENOTDIR);
        }
        Ok((ino, name))
    }

    fn entries(&self, dir: u64) -> Result<&BTreeMap<String, u64>, Errno> {
        match &self.inode(dir)?.body {
            Body::Dir { entries, .. } => Ok(entries),
            _ => Err(ENOTDIR),
        }
    }

    fn entries_mut(&mut self, dir: u64) -> Result<&mut BTreeMap<String, u64>, Errno> {
        match &mut self.inode_mut(dir)?.body {
            Body::Dir { entries, .. } => Ok(entries),
            _ => Err(ENOTDIR),
        }
    }

    fn touch(&mut self, ino: u64) {
        let now = self.now_ns;
        if let Ok(n) = self.inode_mut(ino) {
            n.mtime_ns = now;
        }
    }

    fn add_inode(&mut self, mode: u32, nlink: u32, uid: u32, gid: u32, body: Body) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        let n = Inode { mode, nlink, uid, gid, mtime_ns: self.now_ns, open_count: 0, body };
        self.inodes.insert(ino, n);
        ino
    }

    /// Free an inode no entry names and no handle holds.
    pub(super) fn release_if_unused(&mut self, ino: u64) {
        let unused = self.inodes.get(&ino).is_some_and(|n| n.nlink == 0 && n.open_count == 0);
        if unused && let Some(n) = self.inodes.remove(&ino) {
            self.space.stored_bytes -= n.bytes_held();
        }
    }

    /// Make a new entry `abs` (which must not exist) for a new inode with
    /// `body` (a directory's `..` is filled in here); returns its number.
    pub(super) fn create(
        &mut self,
        abs: &str,
        mode: u32,
        nlink: u32,
        uid: u32,
        gid: u32,
        mut body: Body,
    ) -> Result<u64, Errno> {
        check_path(abs)?;
        if abs == "/" {
            return Err(EEXIST);
        }
        let (parent, name) = self.parent_dir(abs)?;
        if self.entries(parent)?.contains_key(name) {
            return Err(EEXIST);
        }
        let name = owned_name(name)?;
        let is_dir = match &mut body {
            Body::Dir { parent: p, .. } => {
                *p = parent;
                true
            }
            _ => false,
        };
        let ino = self.add_inode(mode, nlink, uid, gid, body);
        self.entries_mut(parent)?.insert(name, ino);
        let p = self.inode_mut(parent)?;
        if is_dir {
            p.nlink += 1;
        }
        self.touch(parent);
        Ok(ino)
    }

    // ---- name-space operations ----

    /// `stat` of a path, or where a device entry takes over.
    pub fn lookup<'p>(&self, abs: &'p str) -> Result<Lookup<'p>, LookupError> {
        check_path(abs).map_err(|errno| LookupError { errno, parent: None })?;
        let stat = |ino| self.stat_of(ino).map_err(|errno| LookupError { errno, parent: None });
        match self.resolve(abs) {
            Ok(Resolved::Node(ino)) => Ok(Lookup::Found(stat(ino)?)),
            Ok(Resolved::Device { ino, rest }) => Ok(Lookup::Device { stat: stat(ino)?, rest }),
            Err(m) => {
                Err(LookupError { errno: m.errno, parent: m.parent.and_then(|p| self.stat_of(p).ok()) })
            }
        }
    }

    /// `mkdir`: a directory with permission bits `perm` owned by `uid`/`gid`.
    pub fn mkdir(&mut self, abs: &str, perm: u32, uid: u32, gid: u32) -> Result<Stat, Errno> {
        let m = mode::S_IFDIR | (perm & mode::PERMISSIONS);
        let ino = self.create(abs, m, 2, uid, gid, Body::Dir { parent: 0, entries: BTreeMap::new() })?;
        self.stat_of(ino)
    }

    /// A device entry naming the manager `pid`, `queue`: a block device
    /// when `mode_bits` has the type `S_IFBLK`, else a character device;
    /// its permissions are those of `mode_bits`.
    pub fn mkdev(
        &mut self,
        abs: &str,
        pid: u64,
        queue: u32,
        mode_bits: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Stat, Errno> {
        let kind = if mode::is_blk(mode_bits) { mode::S_IFBLK } else { mode::S_IFCHR };
        let m = kind | (mode_bits & mode::PERMISSIONS);
        let ino = self.create(abs, m, 1, uid, gid, Body::Device { pid, queue })?;
        self.stat_of(ino)
    }

    /// The device entry for the null device this file system serves itself
    /// (`pid`, `queue` are the server's); `Fs::open_null` opens it.
    pub fn make_null_device(&mut self, abs: &str, pid: u64, queue: u32) -> Result<Stat, Errno> {
        let stat = self.mkdev(abs, pid, queue, 0o666, 0, 0)?;
        self.null_ino = Some(stat.ino);
        Ok(stat)
    }

    /// The device entry for the zero device (reads give zeros, writes are
    /// swallowed), served like the null device; `Fs::open_zero` opens it.
    pub fn make_zero_device(&mut self, abs: &str, pid: u64, queue: u32) -> Result<Stat, Errno> {
        let stat = self.mkdev(abs, pid, queue, 0o666, 0, 0)?;
        self.zero_ino = Some(stat.ino);
        Ok(stat)
    }

    /// `unlink`: remove a file or device entry (directories: `EISDIR`).
    pub fn unlink(&mut self, abs: &str) -> Result<(), Errno> {
        check_path(abs)?;
        if abs == "/" {
            return Err(EISDIR);
        }
        let (parent, name) = self.parent_dir(abs)?;
        let ino = *self.entries(parent)?.get(name).ok_or(ENOENT)?;
        if self.inode(ino)?.is_dir() {
            return Err(EISDIR);
        }
        self.entries_mut(parent)?.remove(name);
        let n = self.inode_mut(ino)?;
        n.nlink = n.nlink.saturating_sub(1);
        self.touch(parent);
        self.release_if_unused(ino);
        Ok(())
    }

    /// `rmdir`: remove an empty directory.
    pub fn rmdir(&mut self, abs: &str) -> Result<(), Errno> {
        check_path(abs)?;
        if abs == "/" {
            return Err(EBUSY);
        }
        let (parent, name) = self.parent_dir(abs)?;
        let ino = *self.entries(parent)?.get(name).ok_or(ENOENT)?;
        match &self.inode(ino)?.body {
            Body::Dir { entries, .. } if !entries.is_empty() => return Err(ENOTEMPTY),
            Body::Dir { .. } => {}
            _ => return Err(ENOTDIR),
        }
        self.entries_mut(parent)?.remove(name);
        self.inode_mut(ino)?.nlink = 0;
        let p = self.inode_mut(parent)?;
        p.nlink = p.nlink.saturating_sub(1);
        self.touch(parent);
        self.release_if_unused(ino);
        Ok(())
    }

    /// `rename`: move `old` to `new`, replacing a file there, or an empty
    /// directory when `old` is a directory.
    pub fn rename(&mut self, old: &str, new: &str) -> Result<(), Errno> {
        check_path(old)?;
        check_path(new)?;
        if old == "/" || new == "/" {
            return Err(EBUSY);
        }
        let (old_parent, old_name) = self.parent_dir(old)?;
        let src = *self.entries(old_parent)?.get(old_name).ok_or(ENOENT)?;
        let (new_parent, new_name) = self.parent_dir(new)?;
        if old == new {
            return Ok(());
        }
        let src_is_dir = self.inode(src)?.is_dir();
        if src_is_dir && path::is_within(new, old) {
            return Err(EINVAL);
        }
        let target = self.entries(new_parent)?.get(new_name).copied();
        if let Some(t) = target {
            if t == src {
                // Two names of one file: POSIX says do nothing.
                return Ok(());
            }
            match (&self.inode(t)?.body, src_is_dir) {
                (Body::Dir { entries, .. }, true) if !entries.is_empty() => return Err(ENOTEMPTY),
                (Body::Dir { .. }, true) => {}
                (_, true) => return Err(ENOTDIR),
                (Body::Dir { .. }, false) => return Err(EISDIR),
                (_, false) => {}
            }
        }
        let owned = owned_name(new_name)?;
        // From here on nothing fails: every inode involved exists.
        self.entries_mut(old_parent)?.remove(old_name);
        if let Some(t) = target {
            let t_node = self.inode_mut(t)?;
            if t_node.is_dir() {
                t_node.nlink = 0;
                let p = self.inode_mut(new_parent)?;
                p.nlink = p.nlink.saturating_sub(1);
            } else {
                t_node.nlink = t_node.nlink.saturating_sub(1);
            }
        }
        self.entries_mut(new_parent)?.insert(owned, src);
        if src_is_dir && old_parent != new_parent {
            if let Body::Dir { parent, .. } = &mut self.inode_mut(src)?.body {
                *parent = new_parent;
            }
            let op = self.inode_mut(old_parent)?;
            op.nlink = op.nlink.saturating_sub(1);
            self.inode_mut(new_parent)?.nlink += 1;
        }
        self.touch(old_parent);
        self.touch(new_parent);
        if let Some(t) = target {
            self.release_if_unused(t);
        }
        Ok(())
    }

    /// `chmod`: set the permission bits (the type bits stay).
    pub fn chmod(&mut self, abs: &str, perm: u32) -> Result<Stat, Errno> {
        check_path(abs)?;
        let ino = self.resolve_node(abs)?;
        let n = self.inode_mut(ino)?;
        n.mode = (n.mode & mode::S_IFMT) | (perm & mode::PERMISSIONS);
        self.stat_of(ino)
    }

    /// `chown`: set the owner and/or group (`None` leaves it).
    pub fn chown(&mut self, abs: &str, uid: Option<u32>, gid: Option<u32>) -> Result<Stat, Errno> {
        check_path(abs)?;
        let ino = self.resolve_node(abs)?;
        let n = self.inode_mut(ino)?;
        if let Some(u) = uid {
            n.uid = u;
        }
        if let Some(g) = gid {
            n.gid = g;
        }
        self.stat_of(ino)
    }

    /// Counts of what the tree holds (`handles_open` is the caller's to
    /// fill in).
    pub fn stats(&self) -> FsStats {
        let mut s = FsStats { bytes_stored: self.space.stored_bytes, ..FsStats::default() };
        for n in self.inodes.values() {
            match n.body {
                Body::File(_) => s.files += 1,
                Body::Dir { .. } => s.dirs += 1,
                Body::Device { .. } => s.devices += 1,
            }
        }
        s
    }

    // ---- a regular file's data, by inode number ----

    /// Bytes of file `ino` from `offset_bytes` into `buf`; 0 at or past
    /// the end. Holes read as zeros.
    pub fn read_at(&self, ino: u64, offset_bytes: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        match &self.inode(ino)?.body {
            Body::File(contents) => Ok(contents.read_at(offset_bytes, buf)),
            Body::Dir { .. } => Err(EISDIR),
            Body::Device { .. } => Err(EINVAL),
        }
    }

    /// As [`Tree::read_at`], up to `len` bytes into a caller's lent
    /// buffer, straight from the file's pages.
    pub fn read_to(&self, ino: u64, offset_bytes: u64, len: u64, to: &mut dyn Lent) -> Result<usize, Errno> {
        match &self.inode(ino)?.body {
            Body::File(contents) => contents.read_to(offset_bytes, len, to),
            Body::Dir { .. } => Err(EISDIR),
            Body::Device { .. } => Err(EINVAL),
        }
    }

    /// Write `data` into file `ino` at `offset_bytes`, growing it (a gap
    /// becomes a hole). All or nothing: `EFBIG` past the largest file,
    /// `ENOSPC` when the pages cannot be had.
    pub fn write_at(&mut self, ino: u64, offset_bytes: u64, data: &[u8]) -> Result<usize, Errno> {
        self.write_from(ino, offset_bytes, data.len() as u64, &mut Bytes(data))
    }

    /// As [`Tree::write_at`], `len` bytes from a caller's lent buffer,
    /// straight into the file's pages; all or nothing also when the lease
    /// fails half-way.
    pub fn write_from(
        &mut self,
        ino: u64,
        offset_bytes: u64,
        len: u64,
        from: &mut dyn Lent,
    ) -> Result<usize, Errno> {
        // An end past `u64` is `EFBIG` before anything else is looked at.
        offset_bytes.checked_add(len).ok_or(EFBIG)?;
        let n = self.inodes.get_mut(&ino).ok_or(ENOENT)?;
        let contents = match &mut n.body {
            Body::File(contents) => contents,
            Body::Dir { .. } => return Err(EISDIR),
            Body::Device { .. } => return Err(EINVAL),
        };
        let written = contents.write_from(offset_bytes, len, from, &mut self.space)?;
        if written > 0 {
            n.mtime_ns = self.now_ns;
        }
        Ok(written)
    }

    /// Set file `ino`'s size: shrinking frees whole pages and clears the
    /// tail of the last one; growing leaves a hole.
    pub fn truncate(&mut self, ino: u64, size_bytes: u64) -> Result<(), Errno> {
        let n = self.inodes.get_mut(&ino).ok_or(ENOENT)?;
        match &mut n.body {
            Body::File(contents) => contents.truncate(size_bytes, &mut self.space)?,
            Body::Dir { .. } => return Err(EISDIR),
            Body::Device { .. } => return Err(EINVAL),
        }
        n.mtime_ns = self.now_ns;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memfs::data::PAGE_BYTES;
    use crate::memfs::testing::{create, fs, names, read_all, stat};
    use protocols::unix::errno::ENODEV;
    use protocols::unix::open_flags::{O_CREAT, O_DIRECTORY, O_EXCL, O_RDONLY, O_RDWR, O_WRONLY};
    use std::vec;

    #[test]
    fn root_and_mkdir() {
        let mut f = fs();
        let root = stat(&f, "/");
        assert_eq!(root.ino, ROOT_INO);
        assert!(mode::is_dir(root.mode));
        assert_eq!(root.nlink, 4); // 2 + bin + tmp
        let tmp = stat(&f, "/tmp");
        assert_eq!(tmp.mode, mode::S_IFDIR | 0o1777);
        assert_eq!(tmp.nlink, 2);
        f.set_now(77);
        let s = f.mkdir("/tmp/a", 0o40750, 5, 6).unwrap();
        assert_eq!(s.mode, mode::S_IFDIR | 0o750, "type bits in the argument are ignored");
        assert_eq!((s.uid, s.gid, s.mtime_ns), (5, 6, 77));
        assert_eq!(stat(&f, "/tmp").nlink, 3);
        assert_eq!(stat(&f, "/tmp").mtime_ns, 77);
        assert_eq!(f.mkdir("/tmp/a", 0o755, 0, 0), Err(EEXIST));
        assert_eq!(f.mkdir("/", 0o755, 0, 0), Err(EEXIST));
        assert_eq!(f.mkdir("/nope/a", 0o755, 0, 0), Err(ENOENT));
        create(&mut f, "/tmp/file", b"x");
        assert_eq!(f.mkdir("/tmp/file/a", 0o755, 0, 0), Err(ENOTDIR));
        assert_eq!(f.mkdir("/tmp/file", 0o755, 0, 0), Err(EEXIST));
        assert_eq!(f.mkdir("tmp/x", 0o755, 0, 0), Err(EINVAL));
    }

    #[test]
    fn path_checks() {
        let mut f = fs();
        for bad in ["tmp", "/tmp/", "//tmp", "/tmp/./a", "/tmp/../a", "/a\0b"] {
            assert_eq!(f.lookup(bad).unwrap_err().errno, EINVAL, "{bad:?}");
            assert_eq!(f.open(bad, O_CREAT | O_WRONLY, 0o644, 0, 0).unwrap_err(), EINVAL);
        }
        assert_eq!(f.lookup("").unwrap_err().errno, ENOENT);
        let long_name = std::format!("/tmp/{}", "n".repeat(MAX_NAME_BYTES + 1));
        assert_eq!(f.lookup(&long_name).unwrap_err().errno, ENAMETOOLONG);
        assert_eq!(f.open(&long_name, O_CREAT | O_WRONLY, 0o644, 0, 0).unwrap_err(), ENAMETOOLONG);
        assert_eq!(f.mkdir(&long_name, 0o755, 0, 0), Err(ENAMETOOLONG));
        let ok_name = std::format!("/tmp/{}", "n".repeat(MAX_NAME_BYTES));
        f.mkdir(&ok_name, 0o755, 0, 0).unwrap();
        let long_path = "/a".repeat(MAX_PATH_BYTES / 2 + 1);
        assert_eq!(f.lookup(&long_path).unwrap_err().errno, ENAMETOOLONG);
        assert_eq!(f.unlink(&long_path), Err(ENAMETOOLONG));
        assert_eq!(f.rename("/tmp", &long_path), Err(ENAMETOOLONG));
    }

    #[test]
    fn lookup_results() {
        let mut f = fs();
        create(&mut f, "/tmp/f", b"abc");
        let s = stat(&f, "/tmp/f");
        assert!(mode::is_reg(s.mode));
        assert_eq!((s.size_bytes, s.nlink, s.uid, s.gid), (3, 1, 1000, 100));
        // Missing last name: the parent's Stat comes back.
        let e = f.lookup("/tmp/g").unwrap_err();
        assert_eq!(e.errno, ENOENT);
        assert_eq!(e.parent.unwrap().ino, stat(&f, "/tmp").ino);
        // Missing in the middle: no parent.
        assert_eq!(f.lookup("/nope/g").unwrap_err(), LookupError { errno: ENOENT, parent: None });
        // A file used as a directory.
        assert_eq!(f.lookup("/tmp/f/g").unwrap_err(), LookupError { errno: ENOTDIR, parent: None });
        assert_eq!(f.lookup("/tmp/f/g/h").unwrap_err().errno, ENOTDIR);
        // The root, and a missing name in it.
        assert_eq!(stat(&f, "/").ino, ROOT_INO);
        assert_eq!(f.lookup("/x").unwrap_err().parent.unwrap().ino, ROOT_INO);
    }

    #[test]
    fn device_entries() {
        let mut f = fs();
        f.mkdir("/dev", 0o755, 0, 0).unwrap();
        let s = f.mkdev("/dev/tty", 0x1_0000_0005, 3, 0o620, 0, 5).unwrap();
        assert!(mode::is_chr(s.mode));
        assert_eq!(s.mode & mode::PERMISSIONS, 0o620);
        assert_eq!((s.device_pid, s.device_queue), (0x1_0000_0005, 3));
        assert_eq!(f.lookup("/dev/tty"), Ok(Lookup::Found(s)));
        assert_eq!(f.lookup("/dev/tty/a/b"), Ok(Lookup::Device { stat: s, rest: "a/b" }));
        assert_eq!(f.lookup("/dev/tty/x"), Ok(Lookup::Device { stat: s, rest: "x" }));
        assert_eq!(f.mkdev("/dev/tty", 1, 1, 0o600, 0, 0), Err(EEXIST));
        assert_eq!(f.mkdev("/nodir/tty", 1, 1, 0o600, 0, 0), Err(ENOENT));
        // Other operations do not cross a device entry.
        assert_eq!(f.mkdir("/dev/tty/x", 0o755, 0, 0), Err(ENOTDIR));
        assert_eq!(f.open("/dev/tty/x", O_RDONLY, 0, 0, 0).unwrap_err(), ENOTDIR);
        assert_eq!(f.open("/dev/tty/x", O_CREAT | O_WRONLY, 0o644, 0, 0).unwrap_err(), ENOTDIR);
        assert_eq!(f.chmod("/dev/tty/x", 0o600), Err(ENOTDIR));
        // A device entry is opened through its manager.
        assert_eq!(f.open("/dev/tty", O_RDWR, 0, 0, 0).unwrap_err(), ENODEV);
        assert_eq!(f.open("/dev/tty", O_RDONLY | O_DIRECTORY, 0, 0, 0).unwrap_err(), ENOTDIR);
        assert_eq!(f.open("/dev/tty", O_CREAT | O_EXCL | O_WRONLY, 0, 0, 0).unwrap_err(), EEXIST);
        // chmod keeps the type; unlink removes it; rename moves it.
        assert!(mode::is_chr(f.chmod("/dev/tty", 0o666).unwrap().mode));
        f.rename("/dev/tty", "/dev/console").unwrap();
        assert_eq!(stat(&f, "/dev/console").device_pid, 0x1_0000_0005);
        f.unlink("/dev/console").unwrap();
        assert_eq!(f.lookup("/dev/console").unwrap_err().errno, ENOENT);
        assert_eq!(f.stats().devices, 0);
    }

    #[test]
    fn unlink_and_open_files() {
        let mut f = fs();
        let data = vec![5u8; 10_000];
        create(&mut f, "/tmp/f", &data);
        let (h, s) = f.open("/tmp/f", O_RDWR, 0, 0, 0).unwrap();
        f.set_now(50);
        f.unlink("/tmp/f").unwrap();
        assert_eq!(stat(&f, "/tmp").mtime_ns, 50);
        assert_eq!(f.lookup("/tmp/f").unwrap_err().errno, ENOENT);
        assert_eq!(f.fstat(h).unwrap().nlink, 0);
        let mut buf = vec![0u8; 20_000];
        assert_eq!(f.read(h, &mut buf).unwrap(), 10_000);
        assert_eq!(&buf[..10_000], &data[..]);
        assert_eq!(f.write(h, b"more").unwrap(), 4);
        assert_eq!(f.stats().files, 1);
        assert!(f.stats().bytes_stored > 0);
        // A new file of the same name is a different inode.
        let ino2 = create(&mut f, "/tmp/f", b"new");
        assert_ne!(ino2, s.ino);
        f.close(h).unwrap();
        assert_eq!(f.stats().files, 1);
        assert_eq!(f.stats().bytes_stored, PAGE_BYTES as u64);
        assert_eq!(read_all(&mut f, "/tmp/f"), b"new");
        // Errors.
        assert_eq!(f.unlink("/tmp/f/x"), Err(ENOTDIR));
        assert_eq!(f.unlink("/tmp/none"), Err(ENOENT));
        assert_eq!(f.unlink("/none/x"), Err(ENOENT));
        assert_eq!(f.unlink("/tmp"), Err(EISDIR));
        assert_eq!(f.unlink("/"), Err(EISDIR));
        assert_eq!(f.unlink("tmp/f"), Err(EINVAL));
    }

    #[test]
    fn rmdir_rules() {
        let mut f = fs();
        f.mkdir("/tmp/d", 0o755, 0, 0).unwrap();
        f.mkdir("/tmp/d/e", 0o755, 0, 0).unwrap();
        assert_eq!(stat(&f, "/tmp/d").nlink, 3);
        assert_eq!(f.rmdir("/tmp/d"), Err(ENOTEMPTY));
        assert_eq!(f.rmdir("/"), Err(EBUSY));
        assert_eq!(f.rmdir("/tmp/none"), Err(ENOENT));
        create(&mut f, "/tmp/file", b"");
        assert_eq!(f.rmdir("/tmp/file"), Err(ENOTDIR));
        assert_eq!(f.rmdir("/tmp/file/x"), Err(ENOTDIR));
        // An open directory that is removed reads as empty.
        let (h, _) = f.open("/tmp/d/e", O_RDONLY, 0, 0, 0).unwrap();
        f.rmdir("/tmp/d/e").unwrap();
        assert_eq!(f.readdir(h, 0).unwrap(), None);
        assert_eq!(f.fstat(h).unwrap().nlink, 0);
        assert_eq!(stat(&f, "/tmp/d").nlink, 2);
        let dirs_before = f.stats().dirs;
        f.close(h).unwrap();
        assert_eq!(f.stats().dirs, dirs_before - 1);
        f.rmdir("/tmp/d").unwrap();
        assert_eq!(stat(&f, "/tmp").nlink, 2);
        assert_eq!(f.lookup("/tmp/d").unwrap_err().errno, ENOENT);
    }

    #[test]
    fn rename_files() {
        let mut f = fs();
        let ino = create(&mut f, "/tmp/a", b"A");
        f.set_now(100);
        f.rename("/tmp/a", "/bin/b").unwrap();
        assert_eq!(stat(&f, "/bin/b").ino, ino);
        assert_eq!(f.lookup("/tmp/a").unwrap_err().errno, ENOENT);
        assert_eq!(stat(&f, "/tmp").mtime_ns, 100);
        assert_eq!(stat(&f, "/bin").mtime_ns, 100);
        // Replace an existing file; the replaced one lives on while open.
        let old = create(&mut f, "/bin/c", b"C");
        let (h, _) = f.open("/bin/c", O_RDONLY, 0, 0, 0).unwrap();
        f.rename("/bin/b", "/bin/c").unwrap();
        assert_eq!(stat(&f, "/bin/c").ino, ino);
        assert_eq!(f.fstat(h).unwrap().ino, old);
        assert_eq!(f.fstat(h).unwrap().nlink, 0);
        let mut buf = [0u8; 2];
        assert_eq!(f.read(h, &mut buf).unwrap(), 1);
        assert_eq!(buf[0], b'C');
        f.close(h).unwrap();
        assert_eq!(f.stats().files, 1);
        // Same name: nothing happens.
        f.rename("/bin/c", "/bin/c").unwrap();
        assert_eq!(stat(&f, "/bin/c").ino, ino);
        // Errors.
        assert_eq!(f.rename("/bin/none", "/bin/x"), Err(ENOENT));
        assert_eq!(f.rename("/bin/c", "/none/x"), Err(ENOENT));
        assert_eq!(f.rename("/bin/c", "/bin/c/x"), Err(ENOTDIR));
        assert_eq!(f.rename("/bin/c", "/tmp"), Err(EISDIR));
        assert_eq!(f.rename("/bin/c", "/"), Err(EBUSY));
        assert_eq!(f.rename("/", "/x"), Err(EBUSY));
        assert_eq!(f.rename("/bin/c", "bin/d"), Err(EINVAL));
        assert_eq!(stat(&f, "/bin/c").ino, ino, "failed renames change nothing");
    }

    #[test]
    fn rename_directories() {
        let mut f = fs();
        f.mkdir("/tmp/d", 0o755, 0, 0).unwrap();
        f.mkdir("/tmp/d/inner", 0o755, 0, 0).unwrap();
        create(&mut f, "/tmp/d/inner/file", b"deep");
        let d = stat(&f, "/tmp/d").ino;
        // Into its own subtree, or onto itself below: EINVAL.
        assert_eq!(f.rename("/tmp/d", "/tmp/d/inner/d2"), Err(EINVAL));
        assert_eq!(f.rename("/tmp/d", "/tmp/d/x"), Err(EINVAL));
        assert_eq!(f.rename("/tmp", "/tmp/d/inner/t"), Err(EINVAL));
        // Onto its own ancestor: that directory is not empty.
        assert_eq!(f.rename("/tmp/d/inner", "/tmp/d"), Err(ENOTEMPTY));
        // Through a missing directory or a file.
        assert_eq!(f.rename("/none/d", "/tmp/x"), Err(ENOENT));
        assert_eq!(f.rename("/tmp/d/inner/file/x", "/tmp/x"), Err(ENOTDIR));
        assert_eq!(f.rename("/tmp/d", "/tmp/d"), Ok(()), "onto itself: nothing happens");
        // Onto a file: ENOTDIR; onto a non-empty directory: ENOTEMPTY.
        create(&mut f, "/bin/file", b"");
        assert_eq!(f.rename("/tmp/d", "/bin/file"), Err(ENOTDIR));
        f.mkdir("/bin/full", 0o755, 0, 0).unwrap();
        create(&mut f, "/bin/full/x", b"");
        assert_eq!(f.rename("/tmp/d", "/bin/full"), Err(ENOTEMPTY));
        // Move across parents: link counts and `..` follow.
        assert_eq!(stat(&f, "/tmp").nlink, 3);
        let bin_links = stat(&f, "/bin").nlink;
        f.rename("/tmp/d", "/bin/d").unwrap();
        assert_eq!(stat(&f, "/tmp").nlink, 2);
        assert_eq!(stat(&f, "/bin").nlink, bin_links + 1);
        assert_eq!(stat(&f, "/bin/d").ino, d);
        assert_eq!(read_all(&mut f, "/bin/d/inner/file"), b"deep");
        let (h, _) = f.open("/bin/d", O_RDONLY, 0, 0, 0).unwrap();
        assert_eq!(f.readdir(h, 1).unwrap().unwrap().ino, stat(&f, "/bin").ino);
        f.close(h).unwrap();
        // Replace an empty directory.
        f.mkdir("/bin/empty", 0o755, 0, 0).unwrap();
        let empty = stat(&f, "/bin/empty").ino;
        let bin_links = stat(&f, "/bin").nlink;
        f.rename("/bin/d", "/bin/empty").unwrap();
        assert_eq!(stat(&f, "/bin/empty").ino, d);
        assert_eq!(stat(&f, "/bin").nlink, bin_links - 1);
        assert!(!f.tree.inodes.contains_key(&empty), "the replaced directory is freed");
        // Replace an empty directory in another parent.
        f.mkdir("/tmp/e", 0o755, 0, 0).unwrap();
        f.rename("/bin/empty", "/tmp/e").unwrap();
        assert_eq!(stat(&f, "/tmp").nlink, 3);
        assert_eq!(stat(&f, "/bin").nlink, bin_links - 2);
        assert_eq!(stat(&f, "/tmp/e").ino, d);
        // A file onto a directory: EISDIR.
        assert_eq!(f.rename("/bin/file", "/tmp/e"), Err(EISDIR));
        // Renaming within one directory keeps the counts.
        f.rename("/tmp/e", "/tmp/f").unwrap();
        assert_eq!(stat(&f, "/tmp").nlink, 3);
        assert_eq!(names(&mut f, "/tmp/f"), [".", "..", "inner"]);
    }

    #[test]
    fn chmod_chown() {
        let mut f = fs();
        create(&mut f, "/tmp/f", b"");
        let s = f.chmod("/tmp/f", 0o104755).unwrap();
        assert_eq!(s.mode, mode::S_IFREG | 0o4755);
        assert_eq!(f.chmod("/tmp", 0o700).unwrap().mode, mode::S_IFDIR | 0o700);
        let s = f.chown("/tmp/f", Some(3), None).unwrap();
        assert_eq!((s.uid, s.gid), (3, 100));
        let s = f.chown("/tmp/f", None, Some(4)).unwrap();
        assert_eq!((s.uid, s.gid), (3, 4));
        assert_eq!(f.chmod("/tmp/none", 0o600), Err(ENOENT));
        assert_eq!(f.chown("/tmp/f/x", Some(1), Some(1)), Err(ENOTDIR));
        assert_eq!(f.chown("rel", None, None), Err(EINVAL));
    }

    #[test]
    fn stats_count_everything() {
        let mut f = fs();
        let base = f.stats();
        assert_eq!((base.files, base.dirs, base.devices), (0, 3, 0));
        create(&mut f, "/tmp/a", &[1u8; 5000]);
        f.mkdev("/tmp/dev", 1, 2, 0o600, 0, 0).unwrap();
        let (h, _) = f.open("/tmp/a", O_RDONLY, 0, 0, 0).unwrap();
        let s = f.stats();
        assert_eq!(
            s,
            FsStats { files: 1, dirs: 3, devices: 1, bytes_stored: 2 * PAGE_BYTES as u64, handles_open: 1 }
        );
        f.close(h).unwrap();
    }
}
