//! memfs's open files: [`Fs`], the tree (`super::tree`) and the table of
//! open-file descriptions that `servers/memfs` hands out as handles.
//!
//! What it is not: a descriptor table. The monitor keeps each process's
//! descriptors and points them at these descriptions; several descriptors
//! (after `dup` or `fork`) share one description and so one offset.
//!
//! # Invariants
//! - Handles are numbered by [`crate::handles::HandleTable`]: positive as
//!   `i64`, unguessable, and `EBADF` once stale.
//! - Every description holds one count of its inode's `open_count`, given
//!   back at `close`, so an unlinked file lives until its last close.
//! - A description's offset moves only by a read or write that succeeded,
//!   or by a seek ([`crate::seek`]'s rule).

use crate::lease::{Bytes, BytesMut, Lent, ZERO_PAGE};
use alloc::string::String;
use core::ops::Bound;

use protocols::unix::errno::{EBADF, EEXIST, EINVAL, EISDIR, ENODEV, ENOENT, ENOSPC, ENOTDIR};
use protocols::unix::{Errno, Stat, mode, open_flags};

use super::data::Contents;
use super::tree::{Body, FsStats, Lookup, LookupError, Missing, Resolved, Tree, check_path, owned_name};
use crate::handles::HandleTable;
use crate::seek::seek_offset;

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

/// One directory entry from [`Fs::readdir`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirItem {
    pub ino: u64,
    pub mode: u32,
    pub name: String,
}

/// The file system: the tree of `/` and the open handles on it.
pub struct Fs {
    pub(super) tree: Tree,
    handles: HandleTable<Description>,
}

impl Fs {
    /// An empty tree: `/` (mode 0755, owned by root). `seed` feeds the
    /// handle generator; `capacity_bytes` bounds the data held (and the
    /// largest file).
    pub fn new(seed: u64, capacity_bytes: u64) -> Fs {
        Fs { tree: Tree::new(capacity_bytes), handles: HandleTable::new(seed) }
    }

    // ---- the tree's operations, passed through ----

    /// See [`Tree::set_now`].
    pub fn set_now(&mut self, now_ns: u64) {
        self.tree.set_now(now_ns)
    }

    /// See [`Tree::lookup`].
    pub fn lookup<'p>(&self, abs: &'p str) -> Result<Lookup<'p>, LookupError> {
        self.tree.lookup(abs)
    }

    /// See [`Tree::mkdir`].
    pub fn mkdir(&mut self, abs: &str, perm: u32, uid: u32, gid: u32) -> Result<Stat, Errno> {
        self.tree.mkdir(abs, perm, uid, gid)
    }

    /// See [`Tree::mkdev`].
    pub fn mkdev(
        &mut self,
        abs: &str,
        pid: u64,
        queue: u32,
        mode_bits: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Stat, Errno> {
        self.tree.mkdev(abs, pid, queue, mode_bits, uid, gid)
    }

    /// See [`Tree::make_zero_device`]; [`Fs::open_zero`] opens it.
    pub fn make_zero_device(&mut self, abs: &str, pid: u64, queue: u32) -> Result<Stat, Errno> {
        self.tree.make_zero_device(abs, pid, queue)
    }

    /// The inode of the zero device's entry, if there is one.
    pub fn zero_ino(&self) -> Option<u64> {
        self.tree.zero_ino
    }

    /// See [`Tree::make_null_device`]; [`Fs::open_null`] opens it.
    pub fn make_null_device(&mut self, abs: &str, pid: u64, queue: u32) -> Result<Stat, Errno> {
        self.tree.make_null_device(abs, pid, queue)
    }

    /// See [`Tree::unlink`].
    pub fn unlink(&mut self, abs: &str) -> Result<(), Errno> {
        self.tree.unlink(abs)
    }

    /// See [`Tree::rmdir`].
    pub fn rmdir(&mut self, abs: &str) -> Result<(), Errno> {
        self.tree.rmdir(abs)
    }

    /// See [`Tree::rename`].
    pub fn rename(&mut self, old: &str, new: &str) -> Result<(), Errno> {
        self.tree.rename(old, new)
    }

    /// See [`Tree::chmod`].
    pub fn chmod(&mut self, abs: &str, perm: u32) -> Result<Stat, Errno> {
        self.tree.chmod(abs, perm)
    }

    /// See [`Tree::chown`].
    pub fn chown(&mut self, abs: &str, uid: Option<u32>, gid: Option<u32>) -> Result<Stat, Errno> {
        self.tree.chown(abs, uid, gid)
    }

    /// See [`Tree::read_at`].
    pub fn read_at(&self, ino: u64, offset_bytes: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.tree.read_at(ino, offset_bytes, buf)
    }

    /// See [`Tree::write_at`].
    pub fn write_at(&mut self, ino: u64, offset_bytes: u64, data: &[u8]) -> Result<usize, Errno> {
        self.tree.write_at(ino, offset_bytes, data)
    }

    /// See [`Tree::truncate`].
    pub fn truncate(&mut self, ino: u64, size_bytes: u64) -> Result<(), Errno> {
        self.tree.truncate(ino, size_bytes)
    }

    /// Counts of what the file system holds.
    pub fn stats(&self) -> FsStats {
        FsStats { handles_open: self.handles.len() as u64, ..self.tree.stats() }
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
        self.tree.inode_mut(ino)?.open_count += 1;
        // Cannot fail: `handle_room` made room.
        self.handles.insert(Description { ino, flags, offset_bytes: 0, dir_cursor: None }, ENOSPC)
    }

    /// [`Fs::open`], the description kept under `handle`, a number the
    /// monitor chose for an open it passed on (`fs::OP_OPEN_FORWARDED`):
    /// `EINVAL` when it is not such a number or is held already, checked,
    /// with the room for it, before anything is made.
    pub fn open_chosen(
        &mut self,
        abs: &str,
        flags: u64,
        perm: u32,
        (uid, gid): (u32, u32),
        handle: u64,
    ) -> Result<Stat, Errno> {
        if handle & crate::handles::FORWARDED_HANDLE_BIT == 0 || self.handles.get(handle).is_ok() {
            return Err(EINVAL);
        }
        self.handles.reserve_chosen(ENOSPC)?;
        let (own, stat) = self.open(abs, flags, perm, uid, gid)?;
        let description = self.handles.remove(own)?;
        // Cannot fail: the number is not held and the room was made.
        self.handles.insert_chosen(handle, description, ENOSPC)?;
        Ok(stat)
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
        let existing = match self.tree.resolve(abs) {
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
                match &self.tree.inode(ino)?.body {
                    Body::Dir { .. } => {
                        if writable || flags & (O_TRUNC | O_CREAT) != 0 {
                            return Err(EISDIR);
                        }
                    }
                    Body::File(_) => {
                        if flags & O_DIRECTORY != 0 {
                            return Err(ENOTDIR);
                        }
                        if flags & O_TRUNC != 0 && writable {
                            self.tree.truncate(ino, 0)?;
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
                self.tree.create(abs, m, 1, uid, gid, Body::File(Contents::default()))?
            }
        };
        let handle = self.new_handle(ino, flags)?;
        Ok((handle, self.tree.stat_of(ino)?))
    }

    /// A handle on the null device made by [`Fs::make_null_device`]:
    /// reads find end of file, writes take everything.
    pub fn open_null(&mut self, flags: u64) -> Result<(u64, Stat), Errno> {
        self.open_served(self.tree.null_ino, flags)
    }

    /// A handle on the zero device made by [`Fs::make_zero_device`]:
    /// reads fill the buffer with zeros, writes take everything.
    pub fn open_zero(&mut self, flags: u64) -> Result<(u64, Stat), Errno> {
        self.open_served(self.tree.zero_ino, flags)
    }

    fn open_served(&mut self, ino: Option<u64>, flags: u64) -> Result<(u64, Stat), Errno> {
        if flags & open_flags::O_ACCMODE == open_flags::O_ACCMODE {
            return Err(EINVAL);
        }
        let ino = ino.filter(|ino| self.tree.inodes.contains_key(ino)).ok_or(ENODEV)?;
        let handle = self.new_handle(ino, flags)?;
        Ok((handle, self.tree.stat_of(ino)?))
    }

    /// Close a description; the inode goes if nothing names it any more.
    pub fn close(&mut self, handle: u64) -> Result<(), Errno> {
        let d = self.handles.remove(handle)?;
        if let Ok(n) = self.tree.inode_mut(d.ino) {
            n.open_count = n.open_count.saturating_sub(1);
        }
        self.tree.release_if_unused(d.ino);
        Ok(())
    }

    /// `read` at the handle's offset, which advances by the bytes read.
    pub fn read(&mut self, handle: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let len = buf.len() as u64;
        self.read_lent(handle, len, &mut BytesMut(buf))
    }

    /// `read` of up to `len` bytes into a caller's lent buffer, straight
    /// from the file's pages; the offset moves only when every byte
    /// arrived (a lease error, such as `EFAULT`, leaves it).
    pub fn read_lent(&mut self, handle: u64, len: u64, to: &mut dyn Lent) -> Result<usize, Errno> {
        let d = self.description(handle)?;
        if !open_flags::readable(d.flags) {
            return Err(EBADF);
        }
        let (ino, offset) = (d.ino, d.offset_bytes);
        let n = match self.tree.inode(ino)?.body {
            Body::Device { .. } if Some(ino) == self.tree.zero_ino => {
                let n = usize::try_from(len).map_err(|_| EINVAL)?;
                let mut done = 0;
                while done < n {
                    let chunk = (n - done).min(ZERO_PAGE.len());
                    to.write_parts(done as u64, &[&ZERO_PAGE[..chunk]])?;
                    done += chunk;
                }
                n
            }
            Body::Device { .. } => 0,
            _ => self.tree.read_to(ino, offset, len, to)?,
        };
        self.description_mut(handle)?.offset_bytes = offset + n as u64;
        Ok(n)
    }

    /// `write` at the handle's offset (at the end with `O_APPEND`), which
    /// advances by the bytes written.
    pub fn write(&mut self, handle: u64, data: &[u8]) -> Result<usize, Errno> {
        self.write_lent(handle, data.len() as u64, &mut Bytes(data))
    }

    /// `write` of `len` bytes from a caller's lent buffer, straight into
    /// the file's pages: all or nothing (see [`Tree::write_from`]).
    pub fn write_lent(&mut self, handle: u64, len: u64, from: &mut dyn Lent) -> Result<usize, Errno> {
        let d = self.description(handle)?;
        if !open_flags::writable(d.flags) {
            return Err(EBADF);
        }
        let (ino, flags, offset) = (d.ino, d.flags, d.offset_bytes);
        let offset = match &self.tree.inode(ino)?.body {
            Body::Device { .. } => return usize::try_from(len).map_err(|_| EINVAL),
            Body::File(contents) if flags & open_flags::O_APPEND != 0 => contents.size_bytes(),
            _ => offset,
        };
        let n = self.tree.write_from(ino, offset, len, from)?;
        self.description_mut(handle)?.offset_bytes = offset + n as u64;
        Ok(n)
    }

    /// `pread` (`io::OP_PREAD`): as [`Fs::read_lent`] at `offset_bytes`,
    /// the description's offset neither used nor moved: one request, so
    /// a process sharing the description (`fork`) never sees it moved
    /// (docs/filesystem.md, "Positional I/O and a dead manager's
    /// window"). `EINVAL` past `i64::MAX` (the offsets `lseek` keeps).
    pub fn pread_lent(
        &mut self,
        handle: u64,
        offset_bytes: u64,
        len: u64,
        to: &mut dyn Lent,
    ) -> Result<usize, Errno> {
        self.at_offset(handle, offset_bytes, |fs| fs.read_lent(handle, len, to))
    }

    /// `pwrite` (`io::OP_PWRITE`): as [`Fs::write_lent`] at
    /// `offset_bytes`, the description's offset neither used nor moved; on
    /// an `O_APPEND` description at the end, as Linux's `pwrite(2)` does
    /// (POSIX says at the offset; its "BUGS" section).
    pub fn pwrite_lent(
        &mut self,
        handle: u64,
        offset_bytes: u64,
        len: u64,
        from: &mut dyn Lent,
    ) -> Result<usize, Errno> {
        self.at_offset(handle, offset_bytes, |fs| fs.write_lent(handle, len, from))
    }

    /// Run `f` with the description's offset set to `offset_bytes`, and
    /// its own offset put back after, whatever `f` did.
    fn at_offset<T>(
        &mut self,
        handle: u64,
        offset_bytes: u64,
        f: impl FnOnce(&mut Fs) -> Result<T, Errno>,
    ) -> Result<T, Errno> {
        if offset_bytes > i64::MAX as u64 {
            // Checked after the handle: a bad handle is `EBADF` first.
            self.description(handle)?;
            return Err(EINVAL);
        }
        let own = core::mem::replace(&mut self.description_mut(handle)?.offset_bytes, offset_bytes);
        let r = f(self);
        if let Ok(d) = self.description_mut(handle) {
            d.offset_bytes = own;
        }
        r
    }

    /// `lseek`: a new offset by [`crate::seek`]'s rule; the end of
    /// anything but a regular file is 0.
    pub fn seek(&mut self, handle: u64, offset: i64, whence: u64) -> Result<u64, Errno> {
        let d = self.description(handle)?;
        let end = match &self.tree.inode(d.ino)?.body {
            Body::File(contents) => contents.size_bytes(),
            _ => 0,
        };
        let new = seek_offset(d.offset_bytes, end, offset, whence)?;
        self.description_mut(handle)?.offset_bytes = new;
        Ok(new)
    }

    /// `fstat` through a handle.
    pub fn fstat(&self, handle: u64) -> Result<Stat, Errno> {
        self.tree.stat_of(self.description(handle)?.ino)
    }

    /// `io::OP_TRUNCATE`: set the size of the file open on `handle`, which
    /// must be open for writing (`EBADF` otherwise); regular files only
    /// (`EINVAL` for a device). See [`Fs::truncate`].
    pub fn truncate_handle(&mut self, handle: u64, size_bytes: u64) -> Result<(), Errno> {
        let d = self.description(handle)?;
        if !open_flags::writable(d.flags) {
            return Err(EBADF);
        }
        self.tree.truncate(d.ino, size_bytes)
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
        let node = self.tree.inode(ino)?;
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
        let mode = self.tree.inode(child)?.mode;
        let name = owned_name(name)?;
        let item = DirItem { ino: child, mode, name };
        if index >= 2 {
            let cursor_name = owned_name(&item.name)?;
            self.description_mut(handle)?.dir_cursor = Some((index, cursor_name));
        }
        Ok(Some(item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handles::MAX_HANDLES;
    use crate::memfs::testing::{CAP, create, fs, names, read_all, stat};
    use crate::memfs::tree::ROOT_INO;
    use crate::seek::{SEEK_CUR, SEEK_END, SEEK_SET};
    use alloc::vec::Vec;
    use protocols::unix::errno::{EFBIG, ENFILE};
    use protocols::unix::open_flags::{
        O_APPEND, O_CREAT, O_DIRECTORY, O_EXCL, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY,
    };

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
    fn zero_device() {
        let mut f = fs();
        assert_eq!(f.open_zero(O_RDONLY).unwrap_err(), ENODEV, "no zero device made yet");
        f.mkdir("/dev", 0o755, 0, 0).unwrap();
        f.make_null_device("/dev/null", 9, 0).unwrap();
        let s = f.make_zero_device("/dev/zero", 9, 0).unwrap();
        assert_eq!((s.mode, f.zero_ino()), (mode::S_IFCHR | 0o666, Some(s.ino)));
        let (h, hs) = f.open_zero(O_RDWR).unwrap();
        assert_eq!(hs, s);
        let mut buf = [7u8; 100];
        assert_eq!(f.read(h, &mut buf).unwrap(), 100);
        assert!(buf.iter().all(|&b| b == 0), "reads give zeros");
        assert_eq!(f.write(h, b"swallowed").unwrap(), 9);
        assert_eq!(f.stats().bytes_stored, 0);
        let (n, _) = f.open_null(O_RDONLY).unwrap();
        buf = [7u8; 100];
        assert_eq!(f.read(n, &mut buf).unwrap(), 0, "the null device stays empty");
        f.close(h).unwrap();
        f.close(n).unwrap();
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
}
