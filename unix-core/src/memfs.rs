//! The memory file system's logic: the tree of `/` (Ridge's directory
//! manager and volume in one), the files' data, and the table of open-file
//! descriptions that `servers/memfs` hands out as handles.
//!
//! What it is not: a permission checker. The monitor checks user and group
//! ids and mode bits (Ridge §3) before it asks; this module only keeps
//! owners and modes so that the monitor can read them, and refuses what
//! POSIX refuses for everyone (`EISDIR`, `ENOTEMPTY`, ...). It sends no
//! message and reads no clock: the server gives it the time with
//! [`Fs::set_now`].
//!
//! # Invariants
//! - Paths given to it are absolute and normalised (`crate::path`); others
//!   are refused with `EINVAL` (or `ENAMETOOLONG` when too long).
//! - An inode lives while a directory entry names it (`nlink > 0`) or a
//!   handle is open on it (`open_count > 0`), so an unlinked file stays
//!   readable through its handles until the last one closes.
//! - File data is a vector of optional pages of [`PAGE_BYTES`]: a hole (`None`, or
//!   past the vector's end) reads as zeros, and every byte of an allocated
//!   page at or past the file's size is zero, so growing a file never has
//!   to clear old bytes.
//! - Page memory is allocated fallibly and counted against the capacity
//!   the server gives; running out is `ENOSPC`, never a panic.
//! - A directory's `nlink` is 2 plus its subdirectories while it is
//!   linked, 0 after `rmdir`.
//! - Handles are numbered by [`crate::handles::HandleTable`]: positive as
//!   `i64`, unguessable, and `EBADF` once stale.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Bound;

use protocols::unix::errno::{
    EBADF, EBUSY, EEXIST, EFBIG, EINVAL, EISDIR, ENAMETOOLONG, ENODEV, ENOENT, ENOSPC, ENOTDIR, ENOTEMPTY,
    EPERM,
};
use protocols::unix::{Stat, mode, open_flags};

use crate::handles::HandleTable;
use crate::path::{self, MAX_NAME_BYTES, MAX_PATH_BYTES};
use crate::seek::seek_offset;

/// A POSIX error number (`protocols::unix::errno`).
pub use protocols::unix::Errno;

/// Bytes in one data page of a file: the machine's page
/// (`abi::layout::PAGE_SIZE`).
pub const PAGE_BYTES: usize = abi::layout::PAGE_SIZE as usize;
/// The inode number of `/`.
pub const ROOT_INO: u64 = 1;

type DataPage = Box<[u8; PAGE_BYTES]>;

enum Body {
    File {
        pages: Vec<Option<DataPage>>,
        size_bytes: u64,
    },
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

struct Inode {
    mode: u32,
    nlink: u32,
    uid: u32,
    gid: u32,
    mtime_ns: u64,
    /// Handles open on this inode.
    open_count: u32,
    body: Body,
}

impl Inode {
    fn is_dir(&self) -> bool {
        matches!(self.body, Body::Dir { .. })
    }

    /// Pages of data held (the unit of [`Fs::stats`]' byte count).
    fn pages_held(&self) -> u64 {
        match &self.body {
            Body::File { pages, .. } => pages.iter().filter(|p| p.is_some()).count() as u64,
            _ => 0,
        }
    }
}

/// One open-file description: what the monitor's descriptors point at
/// (several descriptors after `dup` or `fork` share its offset).
struct Description {
    ino: u64,
    flags: u64,
    offset_bytes: u64,
    /// The last entry `readdir` gave (its index and name), so the next
    /// index continues from it instead of counting from the start.
    dir_cursor: Option<(u64, String)>,
}

/// What [`Fs::lookup`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup<'p> {
    /// The object the whole path names (a device entry too, when the path
    /// ends at it).
    Found(Stat),
    /// A device entry met before the path ended, and the rest of the path
    /// after it, without a leading `/` (e.g. `b/c` for `/dev/x/b/c`).
    Device { stat: Stat, rest: &'p str },
}

/// Why [`Fs::lookup`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LookupError {
    pub errno: Errno,
    /// With `ENOENT`, when only the last name is missing: the Stat of the
    /// directory that would hold it (the monitor checks `O_CREAT` against it).
    pub parent: Option<Stat>,
}

/// One directory entry from [`Fs::readdir`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirItem {
    pub ino: u64,
    pub mode: u32,
    pub name: String,
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

/// The file system: inodes, the tree, and open handles.
pub struct Fs {
    inodes: BTreeMap<u64, Inode>,
    next_ino: u64,
    handles: HandleTable<Description>,
    now_ns: u64,
    stored_bytes: u64,
    capacity_bytes: u64,
    /// The device entry [`Fs::make_null_device`] made, if any.
    null_ino: Option<u64>,
}

/// Is `abs` an absolute, normalised path of acceptable length?
fn check_path(abs: &str) -> Result<(), Errno> {
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

/// A zero-filled page, or `None` when memory is exhausted.
fn new_page() -> Option<DataPage> {
    let mut v: Vec<u8> = Vec::new();
    v.try_reserve_exact(PAGE_BYTES).ok()?;
    v.resize(PAGE_BYTES, 0);
    v.into_boxed_slice().try_into().ok()
}

/// `name` as an owned string, or `ENOSPC` when memory is exhausted.
fn owned_name(name: &str) -> Result<String, Errno> {
    let mut s = String::new();
    s.try_reserve_exact(name.len()).map_err(|_| ENOSPC)?;
    s.push_str(name);
    Ok(s)
}

fn pages_for(size_bytes: u64) -> u64 {
    size_bytes.div_ceil(PAGE_BYTES as u64)
}

/// Where a path leads.
enum Resolved<'p> {
    Node(u64),
    Device { ino: u64, rest: &'p str },
}

struct Missing {
    errno: Errno,
    parent: Option<u64>,
}

impl Fs {
    /// An empty tree: `/` (mode 0755, owned by root). `seed` feeds the
    /// handle generator; `capacity_bytes` bounds the data held (and the
    /// largest file).
    pub fn new(seed: u64, capacity_bytes: u64) -> Fs {
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
        Fs {
            inodes,
            next_ino: ROOT_INO + 1,
            handles: HandleTable::new(seed),
            now_ns: 0,
            stored_bytes: 0,
            capacity_bytes,
            null_ino: None,
        }
    }

    /// The time stamped on what changes from now on.
    pub fn set_now(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
    }

    // ---- inodes and paths ----

    fn inode(&self, ino: u64) -> Result<&Inode, Errno> {
        self.inodes.get(&ino).ok_or(ENOENT)
    }

    fn inode_mut(&mut self, ino: u64) -> Result<&mut Inode, Errno> {
        self.inodes.get_mut(&ino).ok_or(ENOENT)
    }

    fn stat_of(&self, ino: u64) -> Result<Stat, Errno> {
        let n = self.inode(ino)?;
        let (size_bytes, device_pid, device_queue) = match &n.body {
            Body::File { size_bytes, .. } => (*size_bytes, 0, 0),
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
    fn resolve<'p>(&self, abs: &'p str) -> Result<Resolved<'p>, Missing> {
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
                Body::File { .. } => return Err(Missing { errno: ENOTDIR, parent: None }),
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
    fn release_if_unused(&mut self, ino: u64) {
        let unused = self.inodes.get(&ino).is_some_and(|n| n.nlink == 0 && n.open_count == 0);
        if unused && let Some(n) = self.inodes.remove(&ino) {
            self.stored_bytes -= n.pages_held() * PAGE_BYTES as u64;
        }
    }

    /// Make a new entry `abs` (which must not exist) for a new inode with
    /// `body` (a directory's `..` is filled in here); returns its number.
    fn create(
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

    /// A device entry naming the manager `pid`, `queue`.
    pub fn mkdev(
        &mut self,
        abs: &str,
        pid: u64,
        queue: u32,
        perm: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Stat, Errno> {
        let m = mode::S_IFCHR | (perm & mode::PERMISSIONS);
        let ino = self.create(abs, m, 1, uid, gid, Body::Device { pid, queue })?;
        self.stat_of(ino)
    }

    /// The device entry for the null device this file system serves itself
    /// (`pid`, `queue` are the server's); [`Fs::open_null`] opens it.
    pub fn make_null_device(&mut self, abs: &str, pid: u64, queue: u32) -> Result<Stat, Errno> {
        let stat = self.mkdev(abs, pid, queue, 0o666, 0, 0)?;
        self.null_ino = Some(stat.ino);
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

    /// Counts of what the file system holds.
    pub fn stats(&self) -> FsStats {
        let mut s = FsStats {
            bytes_stored: self.stored_bytes,
            handles_open: self.handles.len() as u64,
            ..FsStats::default()
        };
        for n in self.inodes.values() {
            match n.body {
                Body::File { .. } => s.files += 1,
                Body::Dir { .. } => s.dirs += 1,
                Body::Device { .. } => s.devices += 1,
            }
        }
        s
    }

    // ---- file data ----

    /// Bytes of file `ino` from `offset_bytes` into `buf`; 0 at or past
    /// the end. Holes read as zeros.
    pub fn read_at(&self, ino: u64, offset_bytes: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let (pages, size_bytes) = match &self.inode(ino)?.body {
            Body::File { pages, size_bytes } => (pages, *size_bytes),
            Body::Dir { .. } => return Err(EISDIR),
            Body::Device { .. } => return Err(EINVAL),
        };
        if offset_bytes >= size_bytes {
            return Ok(0);
        }
        let n = (buf.len() as u64).min(size_bytes - offset_bytes) as usize;
        let mut done = 0;
        while done < n {
            let pos = offset_bytes + done as u64;
            let index = (pos / PAGE_BYTES as u64) as usize;
            let within = (pos % PAGE_BYTES as u64) as usize;
            let chunk = (PAGE_BYTES - within).min(n - done);
            let out = &mut buf[done..done + chunk];
            match pages.get(index).and_then(|p| p.as_ref()) {
                Some(page) => out.copy_from_slice(&page[within..within + chunk]),
                None => out.fill(0),
            }
            done += chunk;
        }
        Ok(n)
    }

    /// Write `data` into file `ino` at `offset_bytes`, growing it (a gap
    /// becomes a hole). All or nothing: `EFBIG` past the largest file,
    /// `ENOSPC` when the pages cannot be had.
    pub fn write_at(&mut self, ino: u64, offset_bytes: u64, data: &[u8]) -> Result<usize, Errno> {
        let end = offset_bytes.checked_add(data.len() as u64).ok_or(EFBIG)?;
        let capacity = self.capacity_bytes;
        let stored = self.stored_bytes;
        let now = self.now_ns;
        let n = self.inode_mut(ino)?;
        let (pages, size_bytes) = match &mut n.body {
            Body::File { pages, size_bytes } => (pages, size_bytes),
            Body::Dir { .. } => return Err(EISDIR),
            Body::Device { .. } => return Err(EINVAL),
        };
        if data.is_empty() {
            return Ok(0);
        }
        if end > capacity {
            return Err(EFBIG);
        }
        let first = (offset_bytes / PAGE_BYTES as u64) as usize;
        let last = ((end - 1) / PAGE_BYTES as u64) as usize;
        let missing = (first..=last).filter(|&i| pages.get(i).is_none_or(|p| p.is_none())).count() as u64;
        let new_bytes = missing * PAGE_BYTES as u64;
        if stored.checked_add(new_bytes).is_none_or(|total| total > capacity) {
            return Err(ENOSPC);
        }
        if pages.len() <= last {
            pages.try_reserve(last + 1 - pages.len()).map_err(|_| ENOSPC)?;
            pages.resize_with(last + 1, || None);
        }
        // Take every page first, so a failure leaves the data unchanged.
        let mut added = 0u64;
        let mut short = false;
        for slot in &mut pages[first..=last] {
            if slot.is_none() {
                match new_page() {
                    Some(p) => {
                        *slot = Some(p);
                        added += 1;
                    }
                    None => {
                        short = true;
                        break;
                    }
                }
            }
        }
        if short {
            // The pages taken hold zeros past the size, as the invariant
            // wants; they stay counted until the file shrinks or goes.
            self.stored_bytes += added * PAGE_BYTES as u64;
            return Err(ENOSPC);
        }
        let mut done = 0;
        while done < data.len() {
            let pos = offset_bytes + done as u64;
            let index = (pos / PAGE_BYTES as u64) as usize;
            let within = (pos % PAGE_BYTES as u64) as usize;
            let chunk = (PAGE_BYTES - within).min(data.len() - done);
            if let Some(page) = pages[index].as_mut() {
                page[within..within + chunk].copy_from_slice(&data[done..done + chunk]);
            }
            done += chunk;
        }
        *size_bytes = (*size_bytes).max(end);
        n.mtime_ns = now;
        self.stored_bytes += added * PAGE_BYTES as u64;
        Ok(data.len())
    }

    /// Set file `ino`'s size: shrinking frees whole pages and clears the
    /// tail of the last one; growing leaves a hole.
    pub fn truncate(&mut self, ino: u64, size_bytes: u64) -> Result<(), Errno> {
        let capacity = self.capacity_bytes;
        let now = self.now_ns;
        let n = self.inode_mut(ino)?;
        let (pages, size) = match &mut n.body {
            Body::File { pages, size_bytes } => (pages, size_bytes),
            Body::Dir { .. } => return Err(EISDIR),
            Body::Device { .. } => return Err(EINVAL),
        };
        if size_bytes > capacity {
            return Err(EFBIG);
        }
        let mut freed = 0u64;
        if size_bytes < *size {
            let keep = pages_for(size_bytes) as usize;
            if pages.len() > keep {
                freed = pages[keep..].iter().filter(|p| p.is_some()).count() as u64;
                pages.truncate(keep);
            }
            let within = (size_bytes % PAGE_BYTES as u64) as usize;
            if within != 0
                && let Some(Some(page)) = pages.get_mut(keep - 1)
            {
                page[within..].fill(0);
            }
        }
        *size = size_bytes;
        n.mtime_ns = now;
        self.stored_bytes -= freed * PAGE_BYTES as u64;
        Ok(())
    }

    // ---- handles ----

    fn description(&self, handle: u64) -> Result<&Description, Errno> {
        self.handles.get(handle)
    }

    fn description_mut(&mut self, handle: u64) -> Result<&mut Description, Errno> {
        self.handles.get_mut(handle)
    }

    /// Is there a slot for one more handle? (Running out of memory for
    /// it is `ENOSPC`, as for file data.)
    fn handle_room(&mut self) -> Result<(), Errno> {
        self.handles.reserve(ENOSPC)
    }

    /// A new description of `ino` at offset 0.
    fn new_handle(&mut self, ino: u64, flags: u64) -> Result<u64, Errno> {
        self.handle_room()?;
        self.inode_mut(ino)?.open_count += 1;
        // Cannot fail: `handle_room` made room.
        self.handles.insert(Description { ino, flags, offset_bytes: 0, dir_cursor: None }, ENOSPC)
    }

    /// `open`: a handle on `abs` with `flags` (`open_flags`), creating a
    /// regular file with permission bits `perm` and owner `uid`/`gid` for
    /// `O_CREAT`. `O_TRUNC` empties a regular file opened for writing.
    /// Device entries are opened through their manager (`ENODEV` here).
    pub fn open(
        &mut self,
        abs: &str,
        flags: u64,
        perm: u32,
        uid: u32,
        gid: u32,
    ) -> Result<(u64, Stat), Errno> {
        use open_flags::{O_ACCMODE, O_CREAT, O_DIRECTORY, O_EXCL, O_TRUNC};
        check_path(abs)?;
        if flags & O_ACCMODE == O_ACCMODE || (flags & O_CREAT != 0 && flags & O_DIRECTORY != 0) {
            return Err(EINVAL);
        }
        let writable = open_flags::writable(flags);
        let existing = match self.resolve(abs) {
            Ok(Resolved::Node(ino)) => {
                if flags & O_CREAT != 0 && flags & O_EXCL != 0 {
                    return Err(EEXIST);
                }
                Some(ino)
            }
            Ok(Resolved::Device { .. }) => return Err(ENOTDIR),
            Err(Missing { errno: ENOENT, parent: Some(_) }) if flags & O_CREAT != 0 => None,
            Err(m) => return Err(m.errno),
        };
        self.handle_room()?;
        let ino = match existing {
            Some(ino) => {
                match &self.inode(ino)?.body {
                    Body::Dir { .. } => {
                        if writable || flags & (O_TRUNC | O_CREAT) != 0 {
                            return Err(EISDIR);
                        }
                    }
                    Body::File { .. } => {
                        if flags & O_DIRECTORY != 0 {
                            return Err(ENOTDIR);
                        }
                        if flags & O_TRUNC != 0 && writable {
                            self.truncate(ino, 0)?;
                        }
                    }
                    Body::Device { .. } => {
                        return Err(if flags & O_DIRECTORY != 0 { ENOTDIR } else { ENODEV });
                    }
                }
                ino
            }
            None => {
                let m = mode::S_IFREG | (perm & mode::PERMISSIONS);
                self.create(abs, m, 1, uid, gid, Body::File { pages: Vec::new(), size_bytes: 0 })?
            }
        };
        let handle = self.new_handle(ino, flags)?;
        Ok((handle, self.stat_of(ino)?))
    }

    /// A handle on the null device made by [`Fs::make_null_device`]:
    /// reads find end of file, writes take everything.
    pub fn open_null(&mut self, flags: u64) -> Result<(u64, Stat), Errno> {
        if flags & open_flags::O_ACCMODE == open_flags::O_ACCMODE {
            return Err(EINVAL);
        }
        let ino = self.null_ino.filter(|ino| self.inodes.contains_key(ino)).ok_or(ENODEV)?;
        let handle = self.new_handle(ino, flags)?;
        Ok((handle, self.stat_of(ino)?))
    }

    /// Close a description; the inode goes if nothing names it any more.
    pub fn close(&mut self, handle: u64) -> Result<(), Errno> {
        let d = self.handles.remove(handle)?;
        if let Ok(n) = self.inode_mut(d.ino) {
            n.open_count = n.open_count.saturating_sub(1);
        }
        self.release_if_unused(d.ino);
        Ok(())
    }

    /// `read` at the handle's offset, which advances by the bytes read.
    pub fn read(&mut self, handle: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let d = self.description(handle)?;
        if !open_flags::readable(d.flags) {
            return Err(EBADF);
        }
        let (ino, offset) = (d.ino, d.offset_bytes);
        let n = match self.inode(ino)?.body {
            Body::Device { .. } => 0,
            _ => self.read_at(ino, offset, buf)?,
        };
        self.description_mut(handle)?.offset_bytes = offset + n as u64;
        Ok(n)
    }

    /// `write` at the handle's offset (at the end with `O_APPEND`), which
    /// advances by the bytes written.
    pub fn write(&mut self, handle: u64, data: &[u8]) -> Result<usize, Errno> {
        let d = self.description(handle)?;
        if !open_flags::writable(d.flags) {
            return Err(EBADF);
        }
        let (ino, flags, offset) = (d.ino, d.flags, d.offset_bytes);
        let offset = match &self.inode(ino)?.body {
            Body::Device { .. } => return Ok(data.len()),
            Body::File { size_bytes, .. } if flags & open_flags::O_APPEND != 0 => *size_bytes,
            _ => offset,
        };
        let n = self.write_at(ino, offset, data)?;
        self.description_mut(handle)?.offset_bytes = offset + n as u64;
        Ok(n)
    }

    /// `lseek`: a new offset by [`crate::seek`]'s rule; the end of
    /// anything but a regular file is 0.
    pub fn seek(&mut self, handle: u64, offset: i64, whence: u64) -> Result<u64, Errno> {
        let d = self.description(handle)?;
        let end = match &self.inode(d.ino)?.body {
            Body::File { size_bytes, .. } => *size_bytes,
            _ => 0,
        };
        let new = seek_offset(d.offset_bytes, end, offset, whence)?;
        self.description_mut(handle)?.offset_bytes = new;
        Ok(new)
    }

    /// `fstat` through a handle.
    pub fn fstat(&self, handle: u64) -> Result<Stat, Errno> {
        self.stat_of(self.description(handle)?.ino)
    }

    /// `io::OP_TRUNCATE`: set the size of the file open on `handle`, which
    /// must be open for writing (`EBADF` otherwise); regular files only
    /// (`EINVAL` for a device). See [`Fs::truncate`].
    pub fn truncate_handle(&mut self, handle: u64, size_bytes: u64) -> Result<(), Errno> {
        let d = self.description(handle)?;
        if !open_flags::writable(d.flags) {
            return Err(EBADF);
        }
        self.truncate(d.ino, size_bytes)
    }

    /// The inode a handle is open on.
    pub fn handle_ino(&self, handle: u64) -> Result<u64, Errno> {
        Ok(self.description(handle)?.ino)
    }

    /// Entry `index` of the directory open on `handle`: `.` and `..`
    /// first, then the names in byte order; `None` past the last (and for
    /// a removed directory, which has no entries at all).
    pub fn readdir(&mut self, handle: u64, index: u64) -> Result<Option<DirItem>, Errno> {
        let d = self.description(handle)?;
        let ino = d.ino;
        let node = self.inode(ino)?;
        let Body::Dir { parent, entries } = &node.body else { return Err(ENOTDIR) };
        if node.nlink == 0 {
            return Ok(None);
        }
        let (child, name) = match index {
            0 => (ino, "."),
            1 => (*parent, ".."),
            _ => {
                let next = match &d.dir_cursor {
                    Some((i, last)) if *i + 1 == index => {
                        entries.range::<str, _>((Bound::Excluded(last.as_str()), Bound::Unbounded)).next()
                    }
                    _ => usize::try_from(index - 2).ok().and_then(|i| entries.iter().nth(i)),
                };
                match next {
                    Some((name, &child)) => (child, name.as_str()),
                    None => return Ok(None),
                }
            }
        };
        let mode = self.inode(child)?.mode;
        let name = owned_name(name)?;
        let item = DirItem { ino: child, mode, name };
        if index >= 2 {
            let cursor_name = owned_name(&item.name)?;
            self.description_mut(handle)?.dir_cursor = Some((index, cursor_name));
        }
        Ok(Some(item))
    }
}

// ---- the server's requests ----

/// Reply words and the bytes of reply data placed in the reply buffer.
pub type Reply = ([u64; 4], usize);

/// Bytes of one message's data (request and reply buffers): the kernel's
/// `abi::msg::MAX_DATA_BYTES`.
pub const MESSAGE_DATA_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize;

/// The directories every boot starts with, and their modes.
pub const STANDARD_DIRS: [(&str, u32); 6] =
    [("/bin", 0o755), ("/etc", 0o755), ("/dev", 0o755), ("/tmp", 0o1777), ("/home", 0o755), ("/root", 0o700)];

/// Where boot module `name` goes and its mode: `etc.<rest>` becomes
/// `/etc/<rest>` (0644), anything else `/bin/<name>` (0755). The path is
/// checked when the file is made.
pub fn module_destination(name: &str) -> Result<(String, u32), Errno> {
    let (dir, rest, perm) = match name.strip_prefix("etc.") {
        Some(rest) => ("/etc/", rest, 0o644),
        None => ("/bin/", name, 0o755),
    };
    let mut p = String::new();
    p.try_reserve_exact(dir.len() + rest.len()).map_err(|_| ENOSPC)?;
    p.push_str(dir);
    p.push_str(rest);
    Ok((p, perm))
}

fn error(e: Errno) -> Reply {
    ([protocols::unix::encode_result(Err(e)), 0, 0, 0], 0)
}

fn value(v: u64) -> Reply {
    ([v, 0, 0, 0], 0)
}

/// Reply words `words` with a Stat as the data.
fn with_stat(words: [u64; 4], stat: &Stat, tx: &mut [u8; MESSAGE_DATA_BYTES]) -> Reply {
    tx[..Stat::BYTES].copy_from_slice(&stat.encode());
    (words, Stat::BYTES)
}

fn utf8_path(data: &[u8]) -> Result<&str, Errno> {
    core::str::from_utf8(data).map_err(|_| EINVAL)
}

fn perm_word(word: u64) -> u32 {
    (word & mode::PERMISSIONS as u64) as u32
}

/// A `chown` id word: `u64::MAX` or `u32::MAX` (-1 at either width)
/// leaves the id as it is.
fn id_word(word: u64) -> Result<Option<u32>, Errno> {
    if word == u64::MAX || word == u32::MAX as u64 {
        return Ok(None);
    }
    u32::try_from(word).map(Some).map_err(|_| EINVAL)
}

/// The owner of a created object: `uid << 32 | gid`.
fn owner_word(word: u64) -> (u32, u32) {
    ((word >> 32) as u32, word as u32)
}

/// memfs's requests decoded and answered, everything but the kernel calls
/// (`servers/memfs` receives, calls these, and replies). Senders are
/// kernel pids as `u64`.
///
/// Who may ask what: `fs::OP_LOOKUP` and `io` read, write, seek, fstat,
/// readdir and truncate (a file manager's write-back) anyone (a handle is the capability); the other `fs`
/// operations, `device::OP_OPEN` and `io::OP_CLOSE` only the starter, or
/// the monitor the starter names once with `fs::OP_SET_MONITOR`.
pub struct Service {
    pub fs: Fs,
    starter: u64,
    monitor: Option<u64>,
}

impl Service {
    pub fn new(fs: Fs, starter_pid: u64) -> Service {
        Service { fs, starter: starter_pid, monitor: None }
    }

    /// Build the standard tree: [`STANDARD_DIRS`] and `/dev/null`, served
    /// by `server_pid` on `fs::QUEUE`.
    pub fn make_standard_tree(&mut self, server_pid: u64) -> Result<(), Errno> {
        for (dir, perm) in STANDARD_DIRS {
            self.fs.mkdir(dir, perm, 0, 0)?;
        }
        self.fs.make_null_device("/dev/null", server_pid, protocols::unix::fs::QUEUE)?;
        Ok(())
    }

    fn trusts(&self, sender: u64) -> bool {
        sender == self.starter || Some(sender) == self.monitor
    }

    /// A request on `fs::QUEUE`: words `m`, data `data`, from `sender`.
    pub fn fs_request(
        &mut self,
        sender: u64,
        m: [u64; 4],
        data: &[u8],
        now_ns: u64,
        tx: &mut [u8; MESSAGE_DATA_BYTES],
    ) -> Reply {
        use protocols::unix::{device, fs};
        let [op, w1, w2, w3] = m;
        let trusted = self.trusts(sender);
        if op != fs::OP_LOOKUP {
            self.fs.set_now(now_ns);
        }
        let result = match op {
            fs::OP_LOOKUP => return self.lookup_request(data, tx),
            fs::OP_SET_MONITOR => self.set_monitor(sender, w1),
            fs::OP_OPEN
            | fs::OP_MKDIR
            | fs::OP_UNLINK
            | fs::OP_RMDIR
            | fs::OP_RENAME
            | fs::OP_MKDEV
            | fs::OP_CHMOD
            | fs::OP_CHOWN
            | device::OP_OPEN
                if !trusted =>
            {
                Err(EPERM)
            }
            fs::OP_OPEN => {
                let (uid, gid) = owner_word(w3);
                utf8_path(data)
                    .and_then(|p| self.fs.open(p, w1, perm_word(w2), uid, gid))
                    .map(|(handle, stat)| with_stat([handle, fs::IO_QUEUE as u64, 0, 0], &stat, tx))
            }
            fs::OP_MKDIR => {
                let (uid, gid) = owner_word(w3);
                utf8_path(data)
                    .and_then(|p| self.fs.mkdir(p, perm_word(w1), uid, gid))
                    .map(|st| with_stat([0; 4], &st, tx))
            }
            fs::OP_UNLINK => utf8_path(data).and_then(|p| self.fs.unlink(p)).map(|()| value(0)),
            fs::OP_RMDIR => utf8_path(data).and_then(|p| self.fs.rmdir(p)).map(|()| value(0)),
            fs::OP_RENAME => self.rename_request(data),
            fs::OP_MKDEV => u32::try_from(w2)
                .map_err(|_| EINVAL)
                .and_then(|queue| {
                    utf8_path(data).and_then(|p| self.fs.mkdev(p, w1, queue, perm_word(w3), 0, 0))
                })
                .map(|st| with_stat([0; 4], &st, tx)),
            fs::OP_CHMOD => utf8_path(data)
                .and_then(|p| self.fs.chmod(p, perm_word(w1)))
                .map(|st| with_stat([0; 4], &st, tx)),
            fs::OP_CHOWN => id_word(w1)
                .and_then(|uid| Ok((uid, id_word(w2)?)))
                .and_then(|(uid, gid)| self.fs.chown(utf8_path(data)?, uid, gid))
                .map(|st| with_stat([0; 4], &st, tx)),
            fs::OP_STATS => {
                let s = self.fs.stats();
                Ok(([s.files, s.dirs, s.bytes_stored, s.handles_open], 0))
            }
            // The null device has no names below it.
            device::OP_OPEN if !data.is_empty() => Err(ENOTDIR),
            device::OP_OPEN => self
                .fs
                .open_null(w1)
                .map(|(handle, st)| with_stat([handle, fs::IO_QUEUE as u64, 0, 0], &st, tx)),
            _ => Err(protocols::unix::errno::ENOSYS),
        };
        result.unwrap_or_else(error)
    }

    fn set_monitor(&mut self, sender: u64, pid: u64) -> Result<Reply, Errno> {
        if sender != self.starter {
            return Err(EPERM);
        }
        if self.monitor.is_some() {
            return Err(EBUSY);
        }
        if pid == 0 {
            return Err(EINVAL);
        }
        self.monitor = Some(pid);
        Ok(value(0))
    }

    /// `fs::OP_LOOKUP`: the Stat; `DEVICE` with the Stat and the rest of
    /// the path; or an error, with word 1 = 1 and the parent's Stat when
    /// only the last name is missing.
    fn lookup_request(&self, data: &[u8], tx: &mut [u8; MESSAGE_DATA_BYTES]) -> Reply {
        use protocols::unix::fs;
        let p = match utf8_path(data) {
            Ok(p) => p,
            Err(e) => return error(e),
        };
        match self.fs.lookup(p) {
            Ok(Lookup::Found(stat)) => with_stat([0; 4], &stat, tx),
            Ok(Lookup::Device { stat, rest }) => {
                let end = Stat::BYTES + rest.len();
                if end > tx.len() {
                    return error(ENAMETOOLONG);
                }
                tx[Stat::BYTES..end].copy_from_slice(rest.as_bytes());
                let (words, _) = with_stat([fs::DEVICE, 0, 0, 0], &stat, tx);
                (words, end)
            }
            Err(e) => match e.parent {
                Some(parent) => {
                    with_stat([protocols::unix::encode_result(Err(e.errno)), 1, 0, 0], &parent, tx)
                }
                None => error(e.errno),
            },
        }
    }

    /// `fs::OP_RENAME`: data = old NUL new.
    fn rename_request(&mut self, data: &[u8]) -> Result<Reply, Errno> {
        let nul = data.iter().position(|&b| b == 0).ok_or(EINVAL)?;
        let old = utf8_path(&data[..nul])?;
        let new = utf8_path(&data[nul + 1..])?;
        self.fs.rename(old, new).map(|()| value(0))
    }

    /// A request on `fs::IO_QUEUE`.
    pub fn io_request(
        &mut self,
        sender: u64,
        m: [u64; 4],
        data: &[u8],
        now_ns: u64,
        tx: &mut [u8; MESSAGE_DATA_BYTES],
    ) -> Reply {
        use protocols::unix::{DirEntry, io};
        let [op, handle, w2, w3] = m;
        let result = match op {
            io::OP_READ => {
                let max = usize::try_from(w2).unwrap_or(usize::MAX).min(tx.len());
                self.fs.read(handle, &mut tx[..max]).map(|n| ([n as u64, 0, 0, 0], n))
            }
            io::OP_WRITE => {
                self.fs.set_now(now_ns);
                self.fs.write(handle, data).map(|n| value(n as u64))
            }
            io::OP_SEEK => self.fs.seek(handle, w2 as i64, w3).map(value),
            io::OP_TRUNCATE => {
                self.fs.set_now(now_ns);
                self.fs.truncate_handle(handle, w2).map(|()| value(0))
            }
            io::OP_FSTAT => self.fs.fstat(handle).map(|st| with_stat([0; 4], &st, tx)),
            io::OP_READDIR => match self.fs.readdir(handle, w2) {
                Ok(Some(item)) => {
                    Ok(([1, 0, 0, 0], DirEntry::encode(item.ino, item.mode, item.name.as_bytes(), tx)))
                }
                Ok(None) => Ok(value(0)),
                Err(e) => Err(e),
            },
            io::OP_CLOSE if !self.trusts(sender) => Err(EPERM),
            io::OP_CLOSE => self.fs.close(handle).map(|()| value(0)),
            // Files and /dev/null are not terminals.
            io::OP_FOREGROUND => Err(protocols::unix::errno::ENOTTY),
            _ => Err(protocols::unix::errno::ENOSYS),
        };
        result.unwrap_or_else(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handles::MAX_HANDLES;
    use crate::seek::{SEEK_CUR, SEEK_END, SEEK_SET};
    use open_flags::{O_APPEND, O_CREAT, O_DIRECTORY, O_EXCL, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY};
    use protocols::unix::errno::ENFILE;
    use std::vec;

    const CAP: u64 = 64 * 1024 * 1024;

    fn fs() -> Fs {
        let mut f = Fs::new(42, CAP);
        f.mkdir("/bin", 0o755, 0, 0).unwrap();
        f.mkdir("/tmp", 0o1777, 0, 0).unwrap();
        f
    }

    fn create(f: &mut Fs, p: &str, data: &[u8]) -> u64 {
        let (h, st) = f.open(p, O_CREAT | O_WRONLY | O_TRUNC, 0o644, 1000, 100).unwrap();
        assert_eq!(f.write(h, data).unwrap(), data.len());
        f.close(h).unwrap();
        st.ino
    }

    fn read_all(f: &mut Fs, p: &str) -> Vec<u8> {
        let (h, _) = f.open(p, O_RDONLY, 0, 0, 0).unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 1000];
        loop {
            let n = f.read(h, &mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        f.close(h).unwrap();
        out
    }

    fn stat(f: &Fs, p: &str) -> Stat {
        match f.lookup(p).unwrap() {
            Lookup::Found(s) => s,
            other => panic!("{other:?}"),
        }
    }

    fn names(f: &mut Fs, p: &str) -> Vec<std::string::String> {
        let (h, _) = f.open(p, O_RDONLY | O_DIRECTORY, 0, 0, 0).unwrap();
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(e) = f.readdir(h, i).unwrap() {
            out.push(e.name);
            i += 1;
        }
        f.close(h).unwrap();
        out
    }

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
    fn null_device() {
        let mut f = fs();
        assert_eq!(f.open_null(O_RDWR).unwrap_err(), ENODEV, "no null device made yet");
        f.mkdir("/dev", 0o755, 0, 0).unwrap();
        let s = f.make_null_device("/dev/null", 9, 0).unwrap();
        assert_eq!(s.mode, mode::S_IFCHR | 0o666);
        let (h, hs) = f.open_null(O_RDWR).unwrap();
        assert_eq!(hs, s);
        assert_eq!(f.write(h, b"swallowed").unwrap(), 9);
        let mut buf = [7u8; 8];
        assert_eq!(f.read(h, &mut buf).unwrap(), 0);
        assert_eq!(f.seek(h, 0, SEEK_END).unwrap(), 0);
        assert_eq!(f.fstat(h).unwrap().ino, s.ino);
        assert_eq!(f.readdir(h, 0).unwrap_err(), ENOTDIR);
        assert_eq!(f.open_null(3).unwrap_err(), EINVAL);
        let (r, _) = f.open_null(O_RDONLY).unwrap();
        assert_eq!(f.write(r, b"x").unwrap_err(), EBADF);
        let (w, _) = f.open_null(O_WRONLY).unwrap();
        assert_eq!(f.read(w, &mut buf).unwrap_err(), EBADF);
        // Unlinked while open: the handles still work; new opens fail.
        f.unlink("/dev/null").unwrap();
        assert_eq!(f.write(h, b"more").unwrap(), 4);
        for x in [h, r, w] {
            f.close(x).unwrap();
        }
        assert_eq!(f.open_null(O_RDWR).unwrap_err(), ENODEV);
        assert_eq!(f.stats().devices, 0);
    }

    #[test]
    fn open_create_excl_trunc() {
        let mut f = fs();
        f.set_now(5);
        let (h, s) = f.open("/tmp/new", O_CREAT | O_RDWR, 0o100640, 7, 8).unwrap();
        assert_eq!(s.mode, mode::S_IFREG | 0o640);
        assert_eq!((s.uid, s.gid, s.size_bytes, s.nlink, s.mtime_ns), (7, 8, 0, 1, 5));
        assert!(h as i64 > 0, "handles are positive in reply word 0");
        assert_eq!(f.write(h, b"hello").unwrap(), 5);
        f.close(h).unwrap();
        // O_CREAT on an existing file opens it, owner unchanged.
        let (h, s2) = f.open("/tmp/new", O_CREAT | O_RDONLY, 0o600, 1, 1).unwrap();
        assert_eq!((s2.ino, s2.uid, s2.size_bytes), (s.ino, 7, 5));
        f.close(h).unwrap();
        assert_eq!(f.open("/tmp/new", O_CREAT | O_EXCL | O_WRONLY, 0o600, 0, 0).unwrap_err(), EEXIST);
        // O_EXCL without O_CREAT means nothing.
        let (h, _) = f.open("/tmp/new", O_EXCL | O_RDONLY, 0, 0, 0).unwrap();
        f.close(h).unwrap();
        // O_TRUNC on a read-only open leaves the data.
        let (h, s3) = f.open("/tmp/new", O_TRUNC | O_RDONLY, 0, 0, 0).unwrap();
        assert_eq!(s3.size_bytes, 5);
        f.close(h).unwrap();
        f.set_now(9);
        let (h, s4) = f.open("/tmp/new", O_TRUNC | O_WRONLY, 0, 0, 0).unwrap();
        assert_eq!((s4.size_bytes, s4.mtime_ns), (0, 9));
        f.close(h).unwrap();
        assert_eq!(f.stats().bytes_stored, 0);
        // Missing without O_CREAT; missing parent with it.
        assert_eq!(f.open("/tmp/none", O_RDONLY, 0, 0, 0).unwrap_err(), ENOENT);
        assert_eq!(f.open("/none/x", O_CREAT | O_WRONLY, 0o644, 0, 0).unwrap_err(), ENOENT);
        assert_eq!(f.open("/tmp/new/x", O_CREAT | O_WRONLY, 0o644, 0, 0).unwrap_err(), ENOTDIR);
        assert_eq!(f.open("/tmp/new/x", O_RDONLY, 0, 0, 0).unwrap_err(), ENOTDIR);
        // Bad flag combinations.
        assert_eq!(f.open("/tmp/new", 3, 0, 0, 0).unwrap_err(), EINVAL);
        assert_eq!(f.open("/tmp/d", O_CREAT | O_DIRECTORY | O_RDONLY, 0o755, 0, 0).unwrap_err(), EINVAL);
        assert_eq!(f.open("/tmp/new", O_DIRECTORY | O_RDONLY, 0, 0, 0).unwrap_err(), ENOTDIR);
        assert_eq!(f.stats().handles_open, 0);
    }

    #[test]
    fn open_directories() {
        let mut f = fs();
        let (h, s) = f.open("/tmp", O_RDONLY, 0, 0, 0).unwrap();
        assert!(mode::is_dir(s.mode));
        let mut buf = [0u8; 4];
        assert_eq!(f.read(h, &mut buf).unwrap_err(), EISDIR);
        f.close(h).unwrap();
        let (h, _) = f.open("/", O_RDONLY | O_DIRECTORY, 0, 0, 0).unwrap();
        f.close(h).unwrap();
        for flags in [O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC, O_RDONLY | O_CREAT] {
            assert_eq!(f.open("/tmp", flags, 0o644, 0, 0).unwrap_err(), EISDIR, "{flags:o}");
        }
        assert_eq!(f.open("/", O_WRONLY, 0, 0, 0).unwrap_err(), EISDIR);
        assert_eq!(f.open("/tmp", O_RDONLY | O_CREAT | O_EXCL, 0, 0, 0).unwrap_err(), EEXIST);
        assert_eq!(f.open("/", O_CREAT | O_EXCL | O_WRONLY, 0, 0, 0).unwrap_err(), EEXIST);
    }

    #[test]
    fn read_write_offsets() {
        let mut f = fs();
        let (h, _) = f.open("/tmp/f", O_CREAT | O_RDWR, 0o644, 0, 0).unwrap();
        assert_eq!(f.write(h, b"0123456789").unwrap(), 10);
        let mut buf = [0u8; 4];
        assert_eq!(f.read(h, &mut buf).unwrap(), 0, "offset is at the end");
        assert_eq!(f.seek(h, 2, SEEK_SET).unwrap(), 2);
        assert_eq!(f.read(h, &mut buf).unwrap(), 4);
        assert_eq!(&buf, b"2345");
        assert_eq!(f.seek(h, -1, SEEK_CUR).unwrap(), 5);
        assert_eq!(f.write(h, b"xy").unwrap(), 2);
        assert_eq!(f.seek(h, -3, SEEK_END).unwrap(), 7);
        assert_eq!(f.read(h, &mut buf).unwrap(), 3);
        assert_eq!(&buf[..3], b"789");
        assert_eq!(f.seek(h, -11, SEEK_END).unwrap_err(), EINVAL);
        assert_eq!(f.seek(h, -1, SEEK_SET).unwrap_err(), EINVAL);
        assert_eq!(f.seek(h, 0, 3).unwrap_err(), EINVAL);
        assert_eq!(f.seek(h, i64::MAX, SEEK_SET).unwrap(), i64::MAX as u64);
        assert_eq!(f.seek(h, 1, SEEK_CUR).unwrap_err(), EINVAL, "past i64::MAX");
        assert_eq!(f.seek(h, 0, SEEK_CUR).unwrap(), i64::MAX as u64, "a failed seek moves nothing");
        assert_eq!(f.read(h, &mut buf).unwrap(), 0);
        assert_eq!(f.write(h, b"z").unwrap_err(), EFBIG);
        f.close(h).unwrap();
        assert_eq!(read_all(&mut f, "/tmp/f"), b"01234xy789");
    }

    #[test]
    fn shared_description_and_append() {
        let mut f = fs();
        create(&mut f, "/tmp/log", b"start\n");
        let (a, _) = f.open("/tmp/log", O_WRONLY | O_APPEND, 0, 0, 0).unwrap();
        let (b, _) = f.open("/tmp/log", O_WRONLY, 0, 0, 0).unwrap();
        assert_eq!(f.write(b, b"S").unwrap(), 1, "plain writer at offset 0");
        assert_eq!(f.seek(a, 0, SEEK_SET).unwrap(), 0);
        assert_eq!(f.write(a, b"one\n").unwrap(), 4, "append ignores the offset");
        assert_eq!(f.seek(a, 0, SEEK_CUR).unwrap(), 10);
        assert_eq!(f.write(a, b"two\n").unwrap(), 4);
        f.close(a).unwrap();
        f.close(b).unwrap();
        assert_eq!(read_all(&mut f, "/tmp/log"), b"Start\none\ntwo\n");
    }

    #[test]
    fn access_mode_checks() {
        let mut f = fs();
        create(&mut f, "/tmp/f", b"data");
        let (r, _) = f.open("/tmp/f", O_RDONLY, 0, 0, 0).unwrap();
        let (w, _) = f.open("/tmp/f", O_WRONLY, 0, 0, 0).unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(f.write(r, b"x").unwrap_err(), EBADF);
        assert_eq!(f.read(w, &mut buf).unwrap_err(), EBADF);
        assert_eq!(f.read(r, &mut buf).unwrap(), 4);
        assert_eq!(f.write(w, b"D").unwrap(), 1);
        assert_eq!(f.readdir(r, 0).unwrap_err(), ENOTDIR);
        f.close(r).unwrap();
        f.close(w).unwrap();
    }

    #[test]
    fn bad_handles() {
        let mut f = fs();
        let (h, _) = f.open("/tmp/f", O_CREAT | O_RDWR, 0o644, 0, 0).unwrap();
        let mut buf = [0u8; 4];
        let slot_only = h & 0xffff_ffff;
        let wrong_check = h ^ (1 << 40);
        for bad in [0, slot_only, wrong_check, h + 1, u64::MAX, 1 << 62] {
            if bad == h {
                continue;
            }
            assert_eq!(f.read(bad, &mut buf).unwrap_err(), EBADF, "{bad:#x}");
            assert_eq!(f.write(bad, b"x").unwrap_err(), EBADF);
            assert_eq!(f.seek(bad, 0, SEEK_SET).unwrap_err(), EBADF);
            assert_eq!(f.fstat(bad).unwrap_err(), EBADF);
            assert_eq!(f.readdir(bad, 0).unwrap_err(), EBADF);
            assert_eq!(f.close(bad).unwrap_err(), EBADF);
            assert_eq!(f.handle_ino(bad).unwrap_err(), EBADF);
        }
        f.close(h).unwrap();
        assert_eq!(f.close(h).unwrap_err(), EBADF, "closed twice");
        assert_eq!(f.fstat(h).unwrap_err(), EBADF);
        // The slot is reused with a fresh check, so the stale handle stays bad.
        let (h2, _) = f.open("/tmp/f", O_RDONLY, 0, 0, 0).unwrap();
        assert_eq!(h2 & 0xffff_ffff, h & 0xffff_ffff);
        assert_ne!(h2, h);
        assert_eq!(f.fstat(h).unwrap_err(), EBADF);
        f.close(h2).unwrap();
    }

    #[test]
    fn handle_table_limit() {
        let mut f = fs();
        create(&mut f, "/tmp/f", b"");
        let mut hs = Vec::new();
        for _ in 0..MAX_HANDLES {
            hs.push(f.open("/tmp/f", O_RDONLY, 0, 0, 0).unwrap().0);
        }
        assert_eq!(f.open("/tmp/f", O_RDONLY, 0, 0, 0).unwrap_err(), ENFILE);
        assert_eq!(f.open("/tmp/g", O_CREAT | O_WRONLY, 0o644, 0, 0).unwrap_err(), ENFILE);
        assert!(f.lookup("/tmp/g").is_err(), "a refused O_CREAT creates nothing");
        assert_eq!(f.stats().handles_open, MAX_HANDLES as u64);
        let mut sorted = hs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), MAX_HANDLES, "handles are distinct");
        f.close(hs[17]).unwrap();
        let (h, _) = f.open("/tmp/f", O_RDONLY, 0, 0, 0).unwrap();
        hs[17] = h;
        for h in hs {
            f.close(h).unwrap();
        }
        assert_eq!(f.stats().handles_open, 0);
    }

    #[test]
    fn holes_and_pages() {
        let mut f = fs();
        let (h, s) = f.open("/tmp/sparse", O_CREAT | O_RDWR, 0o644, 0, 0).unwrap();
        let far = 10 * PAGE_BYTES as u64 + 100;
        assert_eq!(f.seek(h, far as i64, SEEK_SET).unwrap(), far);
        assert_eq!(f.write(h, b"end").unwrap(), 3);
        assert_eq!(f.fstat(h).unwrap().size_bytes, far + 3);
        assert_eq!(f.stats().bytes_stored, PAGE_BYTES as u64, "only the touched page is held");
        let mut buf = vec![0xffu8; 200];
        assert_eq!(f.read_at(s.ino, far - 100, &mut buf).unwrap(), 103);
        assert!(buf[..100].iter().all(|&b| b == 0));
        assert_eq!(&buf[100..103], b"end");
        assert_eq!(f.read_at(s.ino, 5, &mut buf).unwrap(), 200);
        assert!(buf.iter().all(|&b| b == 0), "a hole reads as zeros");
        // A write across a page boundary.
        let data: Vec<u8> = (0..PAGE_BYTES as u32 + 10).map(|i| i as u8).collect();
        assert_eq!(f.write_at(s.ino, 3 * PAGE_BYTES as u64 - 5, &data).unwrap(), data.len());
        let mut back = vec![0u8; data.len()];
        assert_eq!(f.read_at(s.ino, 3 * PAGE_BYTES as u64 - 5, &mut back).unwrap(), data.len());
        assert_eq!(back, data);
        assert_eq!(f.stats().bytes_stored, 4 * PAGE_BYTES as u64);
        assert_eq!(f.write_at(s.ino, 0, b"").unwrap(), 0);
        f.close(h).unwrap();
    }

    #[test]
    fn eight_megabytes() {
        let mut f = fs();
        let (h, s) = f.open("/tmp/big", O_CREAT | O_RDWR, 0o644, 0, 0).unwrap();
        let block: Vec<u8> = (0..8192u32).map(|i| (i * 7) as u8).collect();
        for _ in 0..1024 {
            assert_eq!(f.write(h, &block).unwrap(), block.len());
        }
        assert_eq!(f.fstat(h).unwrap().size_bytes, 8 << 20);
        assert_eq!(f.stats().bytes_stored, 8 << 20);
        f.seek(h, 0, SEEK_SET).unwrap();
        let mut buf = vec![0u8; 8192];
        for _ in 0..1024 {
            assert_eq!(f.read(h, &mut buf).unwrap(), 8192);
            assert_eq!(buf, block);
        }
        assert_eq!(f.read(h, &mut buf).unwrap(), 0);
        f.close(h).unwrap();
        f.unlink("/tmp/big").unwrap();
        assert_eq!(f.stats().bytes_stored, 0);
        assert!(f.read_at(s.ino, 0, &mut buf).is_err(), "the inode is gone");
    }

    #[test]
    fn truncate_shrinks_and_grows() {
        let mut f = fs();
        let data = vec![0xabu8; 3 * PAGE_BYTES];
        let ino = create(&mut f, "/tmp/t", &data);
        assert_eq!(f.stats().bytes_stored, 3 * PAGE_BYTES as u64);
        f.truncate(ino, PAGE_BYTES as u64 + 10).unwrap();
        assert_eq!(f.stats().bytes_stored, 2 * PAGE_BYTES as u64);
        assert_eq!(stat(&f, "/tmp/t").size_bytes, PAGE_BYTES as u64 + 10);
        // Growing again shows zeros where the old bytes were.
        f.truncate(ino, 3 * PAGE_BYTES as u64).unwrap();
        let back = read_all(&mut f, "/tmp/t");
        assert_eq!(back.len(), 3 * PAGE_BYTES);
        assert!(back[..PAGE_BYTES + 10].iter().all(|&b| b == 0xab));
        assert!(back[PAGE_BYTES + 10..].iter().all(|&b| b == 0));
        // Page-aligned shrink, and to zero.
        f.truncate(ino, PAGE_BYTES as u64).unwrap();
        assert_eq!(f.stats().bytes_stored, PAGE_BYTES as u64);
        f.truncate(ino, 0).unwrap();
        assert_eq!(f.stats().bytes_stored, 0);
        assert_eq!(read_all(&mut f, "/tmp/t"), b"");
        // Errors.
        assert_eq!(f.truncate(ino, CAP + 1), Err(EFBIG));
        assert_eq!(f.truncate(ROOT_INO, 0), Err(EISDIR));
        assert_eq!(f.truncate(9999, 0), Err(ENOENT));
        let mut buf = [0u8; 1];
        assert_eq!(f.read_at(ROOT_INO, 0, &mut buf), Err(EISDIR));
        assert_eq!(f.write_at(ROOT_INO, 0, b"x"), Err(EISDIR));
        let dev = f.mkdev("/tmp/dev", 1, 0, 0o600, 0, 0).unwrap().ino;
        assert_eq!(f.read_at(dev, 0, &mut buf), Err(EINVAL));
        assert_eq!(f.write_at(dev, 0, b"x"), Err(EINVAL));
        assert_eq!(f.truncate(dev, 0), Err(EINVAL));
    }

    #[test]
    fn capacity_limits() {
        let mut f = Fs::new(1, 4 * PAGE_BYTES as u64);
        let (h, s) = f.open("/f", O_CREAT | O_RDWR, 0o644, 0, 0).unwrap();
        assert_eq!(f.write_at(s.ino, 4 * PAGE_BYTES as u64, b"x"), Err(EFBIG), "past the largest file");
        assert_eq!(f.write_at(s.ino, u64::MAX, b"xy"), Err(EFBIG), "offset overflow");
        assert_eq!(f.write(h, &vec![1u8; 3 * PAGE_BYTES]).unwrap(), 3 * PAGE_BYTES);
        let (h2, s2) = f.open("/g", O_CREAT | O_RDWR, 0o644, 0, 0).unwrap();
        assert_eq!(f.write(h2, &vec![2u8; 2 * PAGE_BYTES]).unwrap_err(), ENOSPC);
        assert_eq!(f.fstat(h2).unwrap().size_bytes, 0, "all or nothing");
        assert_eq!(f.seek(h2, 0, SEEK_CUR).unwrap(), 0);
        assert_eq!(f.write(h2, &vec![2u8; PAGE_BYTES]).unwrap(), PAGE_BYTES);
        // Overwriting held pages needs no space.
        assert_eq!(f.write_at(s.ino, 0, &vec![3u8; 3 * PAGE_BYTES]).unwrap(), 3 * PAGE_BYTES);
        assert_eq!(f.write_at(s2.ino, PAGE_BYTES as u64, b"x"), Err(ENOSPC));
        f.close(h).unwrap();
        f.unlink("/f").unwrap();
        assert_eq!(f.write_at(s2.ino, PAGE_BYTES as u64, b"x"), Ok(1), "space came back");
        f.close(h2).unwrap();
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
    fn readdir_order_and_cursor() {
        let mut f = fs();
        for n in ["b", "a", "c"] {
            create(&mut f, &std::format!("/tmp/{n}"), b"");
        }
        f.mkdir("/tmp/sub", 0o755, 0, 0).unwrap();
        assert_eq!(names(&mut f, "/tmp"), [".", "..", "a", "b", "c", "sub"]);
        assert_eq!(names(&mut f, "/"), [".", "..", "bin", "tmp"]);
        let (h, _) = f.open("/tmp", O_RDONLY, 0, 0, 0).unwrap();
        let dot = f.readdir(h, 0).unwrap().unwrap();
        assert_eq!(dot.ino, stat(&f, "/tmp").ino);
        assert!(mode::is_dir(dot.mode));
        assert_eq!(f.readdir(h, 1).unwrap().unwrap().ino, ROOT_INO);
        // Out of order and repeated indexes work too.
        assert_eq!(f.readdir(h, 4).unwrap().unwrap().name, "c");
        let sub = f.readdir(h, 5).unwrap().unwrap();
        assert_eq!(sub.name, "sub");
        assert!(mode::is_dir(sub.mode));
        assert_eq!(f.readdir(h, 2).unwrap().unwrap().name, "a");
        assert_eq!(f.readdir(h, 2).unwrap().unwrap().name, "a");
        assert_eq!(f.readdir(h, 3).unwrap().unwrap().name, "b");
        assert_eq!(f.readdir(h, 6).unwrap(), None);
        assert_eq!(f.readdir(h, u64::MAX).unwrap(), None);
        // An entry removed after the cursor passed it does not upset it.
        assert_eq!(f.readdir(h, 3).unwrap().unwrap().name, "b");
        f.unlink("/tmp/b").unwrap();
        assert_eq!(f.readdir(h, 4).unwrap().unwrap().name, "c");
        f.close(h).unwrap();
        let (h, _) = f.open("/tmp/sub", O_RDONLY, 0, 0, 0).unwrap();
        assert_eq!(f.readdir(h, 1).unwrap().unwrap().ino, stat(&f, "/tmp").ino, ".. of a subdirectory");
        f.close(h).unwrap();
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
        assert!(!f.inodes.contains_key(&empty), "the replaced directory is freed");
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

    #[test]
    fn handle_checks_are_random_and_positive() {
        let mut a = Fs::new(1, CAP);
        let mut b = Fs::new(2, CAP);
        let ha = a.open("/", O_RDONLY, 0, 0, 0).unwrap().0;
        let hb = b.open("/", O_RDONLY, 0, 0, 0).unwrap().0;
        assert_ne!(ha, hb, "different seeds, different checks");
        let mut z = Fs::new(0, CAP);
        for _ in 0..1000 {
            let h = z.open("/", O_RDONLY, 0, 0, 0).unwrap().0;
            assert!(h >> 32 != 0 && (h as i64) > 0);
            z.close(h).unwrap();
        }
    }
    // ---- Service: the requests as the server receives them ----

    use protocols::unix::{DirEntry, device, fs as fsp, io, result};

    const STARTER: u64 = 0x1_0000_0001;
    const MONITOR: u64 = 0x1_0000_0007;
    const STRANGER: u64 = 0x1_0000_0009;
    const ME: u64 = 0x1_0000_0004;

    fn service() -> Service {
        let mut s = Service::new(Fs::new(3, CAP), STARTER);
        s.make_standard_tree(ME).unwrap();
        s
    }

    struct Call<'a> {
        s: &'a mut Service,
        tx: Box<[u8; MESSAGE_DATA_BYTES]>,
    }

    impl Call<'_> {
        fn fs(&mut self, from: u64, m: [u64; 4], data: &[u8]) -> (Result<u64, Errno>, [u64; 4], Vec<u8>) {
            let (w, len) = self.s.fs_request(from, m, data, 1234, &mut self.tx);
            (result(w[0]), w, self.tx[..len].to_vec())
        }
        fn io(&mut self, from: u64, m: [u64; 4], data: &[u8]) -> (Result<u64, Errno>, [u64; 4], Vec<u8>) {
            let (w, len) = self.s.io_request(from, m, data, 5678, &mut self.tx);
            (result(w[0]), w, self.tx[..len].to_vec())
        }
    }

    fn caller(s: &mut Service) -> Call<'_> {
        Call { s, tx: Box::new([0u8; MESSAGE_DATA_BYTES]) }
    }

    #[test]
    fn module_destinations() {
        assert_eq!(module_destination("sh").unwrap(), ("/bin/sh".into(), 0o755));
        assert_eq!(module_destination("etc.inittab").unwrap(), ("/etc/inittab".into(), 0o644));
        assert_eq!(module_destination("etcetera").unwrap(), ("/bin/etcetera".into(), 0o755));
        // Odd names give paths that `open` refuses.
        let mut f = fs();
        f.mkdir("/etc", 0o755, 0, 0).unwrap();
        for odd in ["etc.", "a/b", ".", ".."] {
            let (p, _) = module_destination(odd).unwrap();
            assert!(f.open(&p, O_CREAT | O_EXCL | O_WRONLY, 0o644, 0, 0).is_err(), "{odd}");
        }
    }

    #[test]
    fn standard_tree() {
        let s = service();
        for (dir, perm) in STANDARD_DIRS {
            let st = stat(&s.fs, dir);
            assert_eq!(st.mode, mode::S_IFDIR | perm, "{dir}");
            assert_eq!((st.uid, st.gid), (0, 0));
        }
        assert_eq!(stat(&s.fs, "/tmp").mode & 0o7777, 0o1777);
        assert_eq!(stat(&s.fs, "/root").mode & 0o7777, 0o700);
        let null = stat(&s.fs, "/dev/null");
        assert_eq!(null.mode, mode::S_IFCHR | 0o666);
        assert_eq!((null.device_pid, null.device_queue), (ME, fsp::QUEUE));
        let mut again = service();
        assert_eq!(again.make_standard_tree(ME), Err(EEXIST));
    }

    #[test]
    fn who_may_ask() {
        let mut s = service();
        let mut c = caller(&mut s);
        let path = b"/tmp/f";
        for op in [
            fsp::OP_OPEN,
            fsp::OP_MKDIR,
            fsp::OP_UNLINK,
            fsp::OP_RMDIR,
            fsp::OP_RENAME,
            fsp::OP_MKDEV,
            fsp::OP_CHMOD,
            fsp::OP_CHOWN,
            device::OP_OPEN,
        ] {
            assert_eq!(c.fs(STRANGER, [op, O_CREAT | O_WRONLY, 0o644, 0], path).0, Err(EPERM), "op {op}");
            assert_eq!(c.fs(MONITOR, [op, O_CREAT | O_WRONLY, 0o644, 0], path).0, Err(EPERM), "op {op}");
        }
        assert!(c.s.fs.lookup("/tmp/f").is_err(), "nothing was made");
        // Anyone may look up.
        assert_eq!(c.fs(STRANGER, [fsp::OP_LOOKUP, 0, 0, 0], b"/tmp").0, Ok(0));
        // Only the starter names the monitor, once, and not as pid 0.
        assert_eq!(c.fs(STRANGER, [fsp::OP_SET_MONITOR, STRANGER, 0, 0], b"").0, Err(EPERM));
        assert_eq!(c.fs(STARTER, [fsp::OP_SET_MONITOR, 0, 0, 0], b"").0, Err(EINVAL));
        assert_eq!(c.fs(STARTER, [fsp::OP_SET_MONITOR, MONITOR, 0, 0], b"").0, Ok(0));
        assert_eq!(c.fs(STARTER, [fsp::OP_SET_MONITOR, STRANGER, 0, 0], b"").0, Err(EBUSY));
        assert_eq!(c.fs(MONITOR, [fsp::OP_SET_MONITOR, STRANGER, 0, 0], b"").0, Err(EPERM));
        // Now the monitor and the starter may; the stranger still may not.
        let (r, w, data) = c.fs(MONITOR, [fsp::OP_OPEN, O_CREAT | O_RDWR, 0o640, 5 << 32 | 6], path);
        let handle = r.unwrap();
        assert_eq!(w[1], fsp::IO_QUEUE as u64);
        let st = Stat::decode(&data).unwrap();
        assert_eq!((st.mode, st.uid, st.gid, st.mtime_ns), (mode::S_IFREG | 0o640, 5, 6, 1234));
        assert_eq!(c.fs(STARTER, [fsp::OP_MKDIR, 0o755, 0, 0], b"/tmp/d").0, Ok(0));
        assert_eq!(c.fs(STRANGER, [fsp::OP_UNLINK, 0, 0, 0], path).0, Err(EPERM));
        // Handles are the capability for io, except close.
        assert_eq!(c.io(STRANGER, [io::OP_WRITE, handle, 0, 0], b"hi").0, Ok(2));
        assert_eq!(c.io(STRANGER, [io::OP_CLOSE, handle, 0, 0], b"").0, Err(EPERM));
        assert_eq!(c.io(MONITOR, [io::OP_CLOSE, handle, 0, 0], b"").0, Ok(0));
        assert_eq!(c.io(MONITOR, [io::OP_CLOSE, handle, 0, 0], b"").0, Err(EBADF));
        assert_eq!(c.s.fs.stats().handles_open, 0);
    }

    #[test]
    fn io_requests() {
        let mut s = service();
        let mut c = caller(&mut s);
        let (r, _, _) = c.fs(STARTER, [fsp::OP_OPEN, O_CREAT | O_RDWR, 0o644, 0], b"/tmp/f");
        let h = r.unwrap();
        let block = vec![9u8; 6000];
        const M: usize = MESSAGE_DATA_BYTES;
        assert_eq!(c.io(STRANGER, [io::OP_WRITE, h, 0, 0], &block[..M]).0, Ok(M as u64));
        assert_eq!(c.io(STRANGER, [io::OP_WRITE, h, 0, 0], &block[M..]).0, Ok((6000 - M) as u64));
        assert_eq!(c.io(STRANGER, [io::OP_SEEK, h, 0, SEEK_SET], b"").0, Ok(0));
        // At most one message's data per read, whatever is asked.
        let (r, _, data) = c.io(STRANGER, [io::OP_READ, h, u64::MAX, 0], b"");
        assert_eq!((r, data.len()), (Ok(M as u64), M));
        let (r, _, data) = c.io(STRANGER, [io::OP_READ, h, 10_000, 0], b"");
        assert_eq!((r, data.len()), (Ok((6000 - M) as u64), 6000 - M));
        assert!(data.iter().all(|&b| b == 9));
        assert_eq!(c.io(STRANGER, [io::OP_READ, h, 100, 0], b"").0, Ok(0), "end of file");
        assert_eq!(c.io(STRANGER, [io::OP_READ, h, 0, 0], b"").0, Ok(0));
        assert_eq!(c.io(STRANGER, [io::OP_SEEK, h, (-1i64) as u64, SEEK_SET], b"").0, Err(EINVAL));
        assert_eq!(c.io(STRANGER, [io::OP_SEEK, h, (-10i64) as u64, SEEK_END], b"").0, Ok(5990));
        let (r, _, data) = c.io(STRANGER, [io::OP_FSTAT, h, 0, 0], b"");
        assert_eq!(r, Ok(0));
        let st = Stat::decode(&data).unwrap();
        assert_eq!((st.size_bytes, st.mtime_ns), (6000, 5678));
        // Directory entries.
        let (r, _, _) = c.fs(STARTER, [fsp::OP_OPEN, O_RDONLY | O_DIRECTORY, 0, 0], b"/tmp");
        let d = r.unwrap();
        let mut seen = Vec::new();
        for i in 0.. {
            let (r, _, data) = c.io(STRANGER, [io::OP_READDIR, d, i, 0], b"");
            if r == Ok(0) {
                break;
            }
            assert_eq!(r, Ok(1));
            let (ino, m, name) = DirEntry::decode(&data).unwrap();
            seen.push((ino, m, std::string::String::from_utf8(name.to_vec()).unwrap()));
        }
        let names: Vec<&str> = seen.iter().map(|(_, _, n)| n.as_str()).collect();
        assert_eq!(names, [".", "..", "f"]);
        assert_eq!(seen[2], (st.ino, st.mode, "f".into()));
        assert_eq!(c.io(STRANGER, [io::OP_READDIR, h, 0, 0], b"").0, Err(ENOTDIR));
        assert_eq!(c.io(STRANGER, [io::OP_READ, d, 10, 0], b"").0, Err(EISDIR));
        // Bad handles, unknown operations, not a terminal.
        for op in [io::OP_READ, io::OP_WRITE, io::OP_SEEK, io::OP_FSTAT, io::OP_READDIR] {
            assert_eq!(c.io(STRANGER, [op, h ^ (1 << 33), 1, 0], b"x").0, Err(EBADF), "op {op}");
        }
        assert_eq!(c.io(STARTER, [io::OP_CLOSE, 12345, 0, 0], b"").0, Err(EBADF));
        assert_eq!(c.io(STRANGER, [io::OP_FOREGROUND, h, 0, 0], b"").0, Err(protocols::unix::errno::ENOTTY));
        assert_eq!(c.io(STRANGER, [99, h, 0, 0], b"").0, Err(protocols::unix::errno::ENOSYS));
        assert_eq!(c.io(STRANGER, [u64::MAX, h, 0, 0], b"").0, Err(protocols::unix::errno::ENOSYS));
    }

    #[test]
    fn lookup_requests() {
        let mut s = service();
        let mut c = caller(&mut s);
        c.s.fs.mkdev("/dev/tty", 77, 2, 0o620, 0, 0).unwrap();
        let (r, w, data) = c.fs(STRANGER, [fsp::OP_LOOKUP, 0, 0, 0], b"/etc");
        assert_eq!((r, w[1]), (Ok(0), 0));
        assert!(mode::is_dir(Stat::decode(&data).unwrap().mode));
        // Ending at a device entry: its Stat, as for any object.
        let (r, _, data) = c.fs(STRANGER, [fsp::OP_LOOKUP, 0, 0, 0], b"/dev/tty");
        assert_eq!(r, Ok(0));
        assert_eq!(data.len(), Stat::BYTES);
        assert_eq!(Stat::decode(&data).unwrap().device_pid, 77);
        // Crossing one: DEVICE, the Stat, then the rest of the path.
        let (r, _, data) = c.fs(STRANGER, [fsp::OP_LOOKUP, 0, 0, 0], b"/dev/tty/x/y");
        assert_eq!(r, Ok(fsp::DEVICE));
        assert_eq!(Stat::decode(&data).unwrap().device_queue, 2);
        assert_eq!(&data[Stat::BYTES..], b"x/y");
        // Missing last name: ENOENT, word 1 = 1, the parent's Stat.
        let (r, w, data) = c.fs(STRANGER, [fsp::OP_LOOKUP, 0, 0, 0], b"/tmp/none");
        assert_eq!((r, w[1]), (Err(ENOENT), 1));
        assert_eq!(Stat::decode(&data).unwrap().mode, mode::S_IFDIR | 0o1777);
        // Missing earlier: no parent.
        let (r, w, data) = c.fs(STRANGER, [fsp::OP_LOOKUP, 0, 0, 0], b"/none/x");
        assert_eq!((r, w[1], data.len()), (Err(ENOENT), 0, 0));
        // Malformed paths.
        assert_eq!(c.fs(STRANGER, [fsp::OP_LOOKUP, 0, 0, 0], b"/tmp/\xff").0, Err(EINVAL));
        assert_eq!(c.fs(STRANGER, [fsp::OP_LOOKUP, 0, 0, 0], b"relative").0, Err(EINVAL));
        assert_eq!(c.fs(STRANGER, [fsp::OP_LOOKUP, 0, 0, 0], b"").0, Err(ENOENT));
        let huge = vec![b'a'; MESSAGE_DATA_BYTES];
        assert_eq!(c.fs(STRANGER, [fsp::OP_LOOKUP, 0, 0, 0], &huge).0, Err(EINVAL));
    }

    #[test]
    fn tree_requests() {
        let mut s = service();
        let mut c = caller(&mut s);
        let (r, _, data) = c.fs(STARTER, [fsp::OP_MKDIR, 0o750, 0, 3 << 32 | 4], b"/home/u");
        assert_eq!(r, Ok(0));
        let st = Stat::decode(&data).unwrap();
        assert_eq!((st.mode, st.uid, st.gid, st.mtime_ns), (mode::S_IFDIR | 0o750, 3, 4, 1234));
        assert_eq!(c.fs(STARTER, [fsp::OP_MKDIR, 0o755, 0, 0], b"/home/u").0, Err(EEXIST));
        assert_eq!(c.fs(STARTER, [fsp::OP_MKDIR, 0o755, 0, 0], b"/home/\xc3").0, Err(EINVAL));
        // Rename: old NUL new.
        assert_eq!(c.fs(STARTER, [fsp::OP_RENAME, 0, 0, 0], b"/home/u\0/home/v").0, Ok(0));
        assert_eq!(stat(&c.s.fs, "/home/v").ino, st.ino);
        assert_eq!(c.fs(STARTER, [fsp::OP_RENAME, 0, 0, 0], b"/home/v/home/w").0, Err(EINVAL), "no NUL");
        assert_eq!(c.fs(STARTER, [fsp::OP_RENAME, 0, 0, 0], b"/home/v\0").0, Err(ENOENT), "empty new");
        assert_eq!(c.fs(STARTER, [fsp::OP_RENAME, 0, 0, 0], b"/home/v\0/a\0b").0, Err(EINVAL));
        assert_eq!(c.fs(STARTER, [fsp::OP_RENAME, 0, 0, 0], b"/home/none\0/home/x").0, Err(ENOENT));
        // chmod and chown (-1 leaves an id).
        let (r, _, data) = c.fs(STARTER, [fsp::OP_CHMOD, 0o170711, 0, 0], b"/home/v");
        assert_eq!(r, Ok(0));
        assert_eq!(
            Stat::decode(&data).unwrap().mode,
            mode::S_IFDIR | 0o711,
            "type bits in the word are ignored"
        );
        let (r, _, data) = c.fs(STARTER, [fsp::OP_CHOWN, u64::MAX, 8, 0], b"/home/v");
        assert_eq!(r, Ok(0));
        let st = Stat::decode(&data).unwrap();
        assert_eq!((st.uid, st.gid), (3, 8));
        let (_, _, data) = c.fs(STARTER, [fsp::OP_CHOWN, 9, u32::MAX as u64, 0], b"/home/v");
        let st = Stat::decode(&data).unwrap();
        assert_eq!((st.uid, st.gid), (9, 8));
        assert_eq!(c.fs(STARTER, [fsp::OP_CHOWN, 1 << 40, 0, 0], b"/home/v").0, Err(EINVAL));
        assert_eq!(c.fs(STARTER, [fsp::OP_CHOWN, 0, 1 << 40, 0], b"/home/v").0, Err(EINVAL));
        assert_eq!(c.fs(STARTER, [fsp::OP_CHMOD, 0o755, 0, 0], b"/home/none").0, Err(ENOENT));
        // Device entries.
        let (r, _, data) = c.fs(STARTER, [fsp::OP_MKDEV, 42, 3, 0o620], b"/dev/tty");
        assert_eq!(r, Ok(0));
        let st = Stat::decode(&data).unwrap();
        assert_eq!((st.mode, st.device_pid, st.device_queue), (mode::S_IFCHR | 0o620, 42, 3));
        assert_eq!(c.fs(STARTER, [fsp::OP_MKDEV, 42, 1 << 32, 0o620], b"/dev/x").0, Err(EINVAL));
        assert_eq!(c.fs(STARTER, [fsp::OP_MKDEV, 42, 3, 0o620], b"/dev/tty").0, Err(EEXIST));
        // unlink and rmdir.
        assert_eq!(c.fs(STARTER, [fsp::OP_UNLINK, 0, 0, 0], b"/dev/tty").0, Ok(0));
        assert_eq!(c.fs(STARTER, [fsp::OP_UNLINK, 0, 0, 0], b"/home/v").0, Err(EISDIR));
        assert_eq!(c.fs(STARTER, [fsp::OP_RMDIR, 0, 0, 0], b"/home").0, Err(ENOTEMPTY));
        assert_eq!(c.fs(STARTER, [fsp::OP_RMDIR, 0, 0, 0], b"/home/v").0, Ok(0));
        assert_eq!(c.fs(STARTER, [fsp::OP_RMDIR, 0, 0, 0], b"/").0, Err(EBUSY));
        // Open errors travel as errno.
        assert_eq!(c.fs(STARTER, [fsp::OP_OPEN, O_WRONLY, 0, 0], b"/tmp").0, Err(EISDIR));
        assert_eq!(c.fs(STARTER, [fsp::OP_OPEN, O_RDONLY, 0, 0], b"/tmp/none").0, Err(ENOENT));
        assert_eq!(c.fs(STARTER, [fsp::OP_OPEN, O_RDONLY, 0, 0], b"/dev/null").0, Err(ENODEV));
        // Statistics and unknown operations.
        let files_before = c.s.fs.stats().files;
        let (r, w, _) = c.fs(STARTER, [fsp::OP_OPEN, O_CREAT | O_WRONLY, 0o644, 0], b"/tmp/s");
        assert_eq!(c.io(STRANGER, [io::OP_WRITE, r.unwrap(), 0, 0], &[1u8; 10]).0, Ok(10));
        assert_eq!(w[1], fsp::IO_QUEUE as u64);
        let (r, w, _) = c.fs(STARTER, [fsp::OP_STATS, 0, 0, 0], b"");
        assert_eq!(r, Ok(files_before + 1));
        assert_eq!(w, [files_before + 1, STANDARD_DIRS.len() as u64 + 1, PAGE_BYTES as u64, 1]);
        assert_eq!(c.fs(STARTER, [0, 0, 0, 0], b"").0, Err(protocols::unix::errno::ENOSYS));
        assert_eq!(
            c.fs(STARTER, [io::OP_FOREGROUND + 100, 0, 0, 0], b"").0,
            Err(protocols::unix::errno::ENOSYS)
        );
    }

    #[test]
    fn truncate_requests() {
        let mut s = service();
        let mut c = caller(&mut s);
        let (r, _, _) = c.fs(STARTER, [fsp::OP_OPEN, O_CREAT | O_RDWR, 0o644, 0], b"/tmp/t");
        let rw = r.unwrap();
        assert_eq!(
            c.io(STRANGER, [io::OP_WRITE, rw, 0, 0], &[7u8; 3 * PAGE_BYTES]).0,
            Ok(3 * PAGE_BYTES as u64)
        );
        // Anyone with a handle open for writing (a file manager) may cut.
        assert_eq!(c.io(STRANGER, [io::OP_TRUNCATE, rw, 10, 0], b"").0, Ok(0));
        let st = Stat::decode(&c.io(STRANGER, [io::OP_FSTAT, rw, 0, 0], b"").2).unwrap();
        assert_eq!((st.size_bytes, st.mtime_ns), (10, 5678));
        assert_eq!(c.s.fs.stats().bytes_stored, PAGE_BYTES as u64);
        // Growing reads back zeros past the old end; the offset stays.
        assert_eq!(c.io(STRANGER, [io::OP_TRUNCATE, rw, 20, 0], b"").0, Ok(0));
        assert_eq!(c.io(STRANGER, [io::OP_SEEK, rw, 0, SEEK_CUR], b"").0, Ok(3 * PAGE_BYTES as u64));
        assert_eq!(c.io(STRANGER, [io::OP_SEEK, rw, 0, SEEK_SET], b"").0, Ok(0));
        let (r, _, data) = c.io(STRANGER, [io::OP_READ, rw, 100, 0], b"");
        assert_eq!(r, Ok(20));
        assert_eq!(&data[..10], &[7u8; 10]);
        assert_eq!(&data[10..], &[0u8; 10]);
        // A handle without write access, a bad handle, too large a size.
        let (r, _, _) = c.fs(STARTER, [fsp::OP_OPEN, O_RDONLY, 0, 0], b"/tmp/t");
        let ro = r.unwrap();
        assert_eq!(c.io(STRANGER, [io::OP_TRUNCATE, ro, 0, 0], b"").0, Err(EBADF));
        assert_eq!(c.io(STRANGER, [io::OP_TRUNCATE, rw ^ (1 << 40), 0, 0], b"").0, Err(EBADF));
        assert_eq!(c.io(STRANGER, [io::OP_TRUNCATE, rw, CAP + 1, 0], b"").0, Err(EFBIG));
        assert_eq!(c.io(STRANGER, [io::OP_TRUNCATE, rw, u64::MAX, 0], b"").0, Err(EFBIG));
        // Directories cannot be open for writing; the null device is no file.
        let (r, _, _) = c.fs(STARTER, [fsp::OP_OPEN, O_RDONLY | O_DIRECTORY, 0, 0], b"/tmp");
        assert_eq!(c.io(STRANGER, [io::OP_TRUNCATE, r.unwrap(), 0, 0], b"").0, Err(EBADF));
        let (r, _, _) = c.fs(STARTER, [device::OP_OPEN, O_WRONLY, 0, 0], b"");
        assert_eq!(c.io(STRANGER, [io::OP_TRUNCATE, r.unwrap(), 0, 0], b"").0, Err(EINVAL));
        // A file unlinked while open is still cut through its handle.
        assert_eq!(c.fs(STARTER, [fsp::OP_UNLINK, 0, 0, 0], b"/tmp/t").0, Ok(0));
        assert_eq!(c.io(STRANGER, [io::OP_TRUNCATE, rw, 0, 0], b"").0, Ok(0));
        assert_eq!(c.s.fs.stats().bytes_stored, 0);
    }

    #[test]
    fn null_device_requests() {
        let mut s = service();
        let mut c = caller(&mut s);
        assert_eq!(c.fs(STARTER, [device::OP_OPEN, O_RDWR, 0, 0], b"x").0, Err(ENOTDIR));
        let (r, w, data) = c.fs(STARTER, [device::OP_OPEN, O_RDWR, 0, 0], b"");
        let h = r.unwrap();
        assert_eq!(w[1], fsp::IO_QUEUE as u64);
        assert_eq!(Stat::decode(&data).unwrap().ino, stat(&c.s.fs, "/dev/null").ino);
        const M: usize = MESSAGE_DATA_BYTES;
        assert_eq!(c.io(STRANGER, [io::OP_WRITE, h, 0, 0], &[5u8; M]).0, Ok(M as u64));
        let (r, _, data) = c.io(STRANGER, [io::OP_READ, h, M as u64, 0], b"");
        assert_eq!((r, data.len()), (Ok(0), 0));
        assert_eq!(c.fs(STARTER, [device::OP_OPEN, 3, 0, 0], b"").0, Err(EINVAL));
        assert_eq!(c.io(STARTER, [io::OP_CLOSE, h, 0, 0], b"").0, Ok(0));
        assert_eq!(c.s.fs.stats().bytes_stored, 0);
    }
}
