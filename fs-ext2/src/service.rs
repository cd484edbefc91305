//! The disk file system's requests: each message decoded, [`Fs`] asked,
//! the answer placed in the reply words and buffer ([`Service`]). This is
//! the whole of `servers/ext2fs` but its kernel calls, so that it is
//! tested on the host over a [`crate::MemDisk`].
//!
//! One service is Ridge's directory manager (names: `fs::OP_LOOKUP`,
//! `OP_OPEN`, `OP_MKDIR`, `OP_UNLINK`, `OP_RMDIR`, `OP_RENAME`), volume
//! manager (inodes and space: `OP_CHMOD`, `OP_CHOWN`, allocation inside
//! [`Fs`]) and file-data service (`io::*` on handles, through the buffer
//! cache) of one ext2 volume; `docs/filesystem.md` says why ext2 makes
//! them one process.
//!
//! What it is not: a permission checker (the monitor checks modes and
//! owners, Ridge §3), nor the server loop (`servers/ext2fs` receives,
//! calls [`Service::request`], replies). It reads no clock: the time of a
//! request comes in as `now_ns`. Buffers lent by a caller are reached
//! through [`Lent`], which the server implements with `lease_read` and
//! `lease_write`.
//!
//! # Invariants
//! - `fs` requests and `io::OP_CLOSE` are obeyed only from the monitor
//!   the service was made for; the other `io` requests from anyone
//!   holding a handle (sparse numbers, `unix_core::handles`).
//! - A reply's data never exceeds [`MESSAGE_DATA_BYTES`]; longer reads go
//!   through the caller's lent buffer ([`Lent`]).
//! - Every open handle holds its inode open in [`Fs`] (an unlinked file
//!   lives until its last handle is closed).
//! - A handle with a read-window slot (`crate::readwin`,
//!   `io::OP_READ_WINDOW_SLOT`) has its offset in the slot: taken from
//!   there (clamped) before `OP_READ`, `OP_WRITE` and `OP_SEEK`, put back
//!   after. Every change to a file's data or size bumps its generation
//!   before the reply (`write`, `OP_TRUNCATE`, an open with `O_TRUNC`).

use crate::device::BlockDevice;
use crate::fs::Fs;
use crate::fs::WRITE_SEGMENTS;
use crate::readwin::ReadWindows;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write;
use protocols::unix::errno::{
    EBADF, EBUSY, EEXIST, EFAULT, EINVAL, EISDIR, ENAMETOOLONG, ENODEV, ENOENT, ENOMEM, ENOSYS, ENOTDIR,
    ENOTTY, EPERM,
};
use protocols::unix::{DirEntry, Errno, Stat, encode_result, fs, io, mode, open_flags};
use unix_core::handles::HandleTable;

/// Bytes of one message's data (request and reply buffers).
pub const MESSAGE_DATA_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize;
/// Most bytes one read or write moves through the file system at a time
/// (a lent buffer is served in pieces of this size).
const PIECE_BYTES: usize = 64 * 1024;

/// Reply words and the bytes of reply data placed in the reply buffer.
pub type Reply = ([u64; 4], usize);

/// The buffers a caller lent with its call (`abi::Call::LeaseRead`,
/// `LeaseWrite`): the server implements it with the lease calls, the
/// tests with plain vectors.
pub trait Lent {
    /// Fill `buf` from the caller's send buffer at `offset`.
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), Errno>;
    /// Copy `bytes` into the caller's receive buffer at `offset`.
    fn write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), Errno>;
    /// Copy `segments`, one after another, into the caller's receive
    /// buffer from `offset` on (a file's blocks straight from the cache:
    /// the server makes it one lease call, `abi::lease::SEGMENTS`).
    fn write_segments(&mut self, offset: u64, segments: &[&[u8]]) -> Result<(), Errno> {
        let mut at = offset;
        for s in segments {
            self.write(at, s)?;
            at += s.len() as u64;
        }
        Ok(())
    }
    /// Fill `segments`, one after another, from the caller's send buffer
    /// from `offset` on (a write's bytes straight into the cache's
    /// blocks: the server makes it one lease call, all or nothing).
    fn read_segments(&mut self, offset: u64, segments: &mut [&mut [u8]]) -> Result<(), Errno> {
        let mut at = offset;
        for s in segments.iter_mut() {
            self.read(at, s)?;
            at += s.len() as u64;
        }
        Ok(())
    }
}

/// One open of a file or directory.
struct Open {
    ino: u32,
    flags: u64,
    offset: u64,
    /// Directories: the index of the next entry `OP_READDIR` would give
    /// with no search, and its byte position in the directory.
    dir_cursor: (u64, u64),
}

/// What the service counts beyond the cache (for `OP_STATS_TEXT`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ServiceStats {
    pub requests: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub syncs: u64,
}

/// The requests of one mounted volume.
pub struct Service<D: BlockDevice> {
    pub fs: Fs<D>,
    handles: HandleTable<Open>,
    monitor: u64,
    /// This manager's own kernel pid, for the descriptor a forwarded open
    /// answers with (`fs::OP_OPEN_FORWARDED`); 0 until set.
    me: u64,
    /// A forwarded open that failed: its errno, taken by the server loop,
    /// which passes the call back to the monitor instead of answering.
    declined: Option<Errno>,
    scratch: Vec<u8>,
    pub stats: ServiceStats,
    /// Read windows' pages and slots (`crate::readwin`).
    pub readwin: ReadWindows,
    /// Does a process other than this one map the page at this address
    /// (the server asks the kernel's `page_owners`)? Until set: no.
    page_shared: fn(u64) -> bool,
    /// A slot's page to map for the process that asked
    /// (`io::OP_READ_WINDOW_SLOT`): (pid, its address there, the page's
    /// address here), taken by the server loop, which maps it.
    map_wanted: Option<(u64, u64, u64)>,
}

fn error(e: Errno) -> Reply {
    ([encode_result(Err(e)), 0, 0, 0], 0)
}

fn value(v: u64) -> Reply {
    ([v, 0, 0, 0], 0)
}

fn with_stat(words: [u64; 4], stat: &Stat, tx: &mut [u8]) -> Reply {
    tx[..Stat::BYTES].copy_from_slice(&stat.encode());
    (words, Stat::BYTES)
}

/// `/a/b/c` -> (`/a/b`, `c`); `None` for `/` itself or a relative path.
fn split_last(path: &[u8]) -> Result<(&[u8], &[u8]), Errno> {
    if path.first() != Some(&b'/') {
        return Err(EINVAL);
    }
    let trimmed = match path.iter().rposition(|&c| c != b'/') {
        Some(end) => &path[..=end],
        None => return Err(EBUSY), // the root itself
    };
    let slash = trimmed.iter().rposition(|&c| c == b'/').ok_or(EINVAL)?;
    let parent = if slash == 0 { &trimmed[..1] } else { &trimmed[..slash] };
    Ok((parent, &trimmed[slash + 1..]))
}

fn absolute(path: &[u8]) -> Result<&[u8], Errno> {
    if path.first() == Some(&b'/') { Ok(path) } else { Err(EINVAL) }
}

/// A `chown` id word: `u64::MAX` or `u32::MAX` (-1 at either width)
/// leaves the id as it is.
fn id_word(word: u64) -> Result<Option<u32>, Errno> {
    if word == u64::MAX || word == u32::MAX as u64 {
        return Ok(None);
    }
    u32::try_from(word).map(Some).map_err(|_| EINVAL)
}

fn perm(word: u64) -> u16 {
    (word & mode::PERMISSIONS as u64) as u16
}

impl<D: BlockDevice> Service<D> {
    /// The service of a mounted `fs`, obeying `monitor_pid` (kernel pid).
    pub fn new(fs: Fs<D>, monitor_pid: u64, seed: u64) -> Service<D> {
        Service {
            fs,
            handles: HandleTable::new(seed),
            monitor: monitor_pid,
            me: 0,
            declined: None,
            scratch: Vec::new(),
            stats: Default::default(),
            readwin: ReadWindows::new(true),
            page_shared: |_| false,
            map_wanted: None,
        }
    }

    /// Read windows on or off (`ext2.readwin=`), and how to ask whether a
    /// client page is still mapped by someone else (the kernel's
    /// `page_owners`, above 1).
    pub fn set_read_windows(&mut self, enabled: bool, page_shared: fn(u64) -> bool) {
        self.readwin = ReadWindows::new(enabled);
        self.page_shared = page_shared;
    }

    /// The page the last `io::OP_READ_WINDOW_SLOT` asked to be mapped:
    /// (client pid, address there, the page's address here).
    pub fn take_map_wanted(&mut self) -> Option<(u64, u64, u64)> {
        self.map_wanted.take()
    }

    /// Set this manager's kernel pid (the descriptors of forwarded opens
    /// name it).
    pub fn set_own_pid(&mut self, pid: u64) {
        self.me = pid;
    }

    /// The errno of the forwarded open just served, when it failed: the
    /// caller's call then goes back to the monitor
    /// (`monitor::OP_OPEN_DECLINED`) instead of being answered.
    pub fn take_declined(&mut self) -> Option<Errno> {
        self.declined.take()
    }

    /// The file system back (to unmount it).
    pub fn into_fs(self) -> Fs<D> {
        self.fs
    }

    /// Handles open now.
    pub fn open_handles(&self) -> usize {
        self.handles.len()
    }

    /// One request: words `m`, data `data` (at most a message's), from
    /// kernel pid `sender` at `now_ns` since 1970 (UTC). Reply data goes into
    /// `tx`; longer reads and writes use `lent`.
    pub fn request(
        &mut self,
        sender: u64,
        m: [u64; 4],
        data: &[u8],
        now_ns: u64,
        tx: &mut [u8; MESSAGE_DATA_BYTES],
        lent: &mut impl Lent,
    ) -> Reply {
        self.stats.requests += 1;
        self.fs.set_time((now_ns / 1_000_000_000) as u32);
        let result = if m[0] < fs::OP_LOOKUP {
            self.io_request(sender, m, data, tx, lent)
        } else if sender != self.monitor && m[0] != fs::OP_STATS_TEXT {
            Err(EPERM)
        } else {
            self.fs_request(m, data, tx)
        };
        result.unwrap_or_else(error)
    }

    fn fs_request(
        &mut self,
        m: [u64; 4],
        data: &[u8],
        tx: &mut [u8; MESSAGE_DATA_BYTES],
    ) -> Result<Reply, Errno> {
        let [op, w1, w2, w3] = m;
        match op {
            fs::OP_LOOKUP => Ok(self.lookup(data, tx)),
            fs::OP_OPEN => self.open(data, w1, perm(w2), fs::owner_of(w3), tx, None),
            fs::OP_OPEN_FORWARDED => {
                let opened = self.open_forwarded(data, w1, perm(w2), fs::owner_of(w3), tx);
                if let Err(e) = opened {
                    self.declined = Some(e);
                }
                opened
            }
            fs::OP_MKDIR => {
                let (parent, name) = split_last(data)?;
                let dir = self.fs.resolve(parent)?;
                let (uid, gid) = fs::owner_of(w3);
                let ino = self.fs.mkdir(dir, name, perm(w1), uid, gid)?;
                let st = self.fs.stat(ino)?.to_stat();
                Ok(with_stat([0; 4], &st, tx))
            }
            fs::OP_UNLINK => {
                let (parent, name) = split_last(data)?;
                let dir = self.fs.resolve(parent)?;
                self.fs.unlink(dir, name).map(|()| value(0))
            }
            fs::OP_RMDIR => {
                let (parent, name) = split_last(data)?;
                let dir = self.fs.resolve(parent)?;
                self.fs.rmdir(dir, name).map(|()| value(0))
            }
            fs::OP_RENAME => {
                let nul = data.iter().position(|&b| b == 0).ok_or(EINVAL)?;
                let (old, new) = (&data[..nul], &data[nul + 1..]);
                if new.is_empty() {
                    return Err(ENOENT);
                }
                let (old_parent, old_name) = split_last(old)?;
                let (new_parent, new_name) = split_last(new)?;
                let from = self.fs.resolve(old_parent)?;
                let to = self.fs.resolve(new_parent)?;
                self.fs.rename(from, old_name, to, new_name).map(|()| value(0))
            }
            fs::OP_CHMOD => {
                let ino = self.fs.resolve(absolute(data)?)?;
                self.fs.chmod(ino, perm(w1))?;
                let st = self.fs.stat(ino)?.to_stat();
                Ok(with_stat([0; 4], &st, tx))
            }
            fs::OP_CHOWN => {
                let (uid, gid) = (id_word(w1)?, id_word(w2)?);
                let ino = self.fs.resolve(absolute(data)?)?;
                let now = self.fs.stat(ino)?;
                self.fs.chown(ino, uid.unwrap_or(now.uid), gid.unwrap_or(now.gid))?;
                let st = self.fs.stat(ino)?.to_stat();
                Ok(with_stat([0; 4], &st, tx))
            }
            // Device entries name their manager by pid, which only the
            // memory file system keeps (`/dev`).
            fs::OP_MKDEV => Err(EPERM),
            fs::OP_STATS => {
                let s = self.fs.statfs()?;
                Ok(([s.blocks as u64, s.free_blocks as u64, s.inodes as u64, s.free_inodes as u64], 0))
            }
            fs::OP_SYNC => {
                self.stats.syncs += 1;
                // The last sync before the power goes also marks the
                // volume clean (issue 16; fs/state.rs).
                let synced = if w1 == fs::SYNC_FINAL { self.fs.sync_final() } else { self.fs.sync() };
                synced.map(|()| value(0))
            }
            fs::OP_STATS_TEXT => {
                let text = self.stats_text();
                let n = text.len().min(tx.len());
                tx[..n].copy_from_slice(&text.as_bytes()[..n]);
                Ok(([0; 4], n))
            }
            _ => Err(ENOSYS),
        }
    }

    /// Counters as `name=value` lines (`fs::OP_STATS_TEXT`).
    pub fn stats_text(&mut self) -> String {
        let c = self.fs.cache_stats();
        let s = self.stats;
        let mut t = String::new();
        let _ = write!(
            t,
            "nbuf={}\nblock_bytes={}\nhits={}\nmisses={}\nread_ahead_hits={}\nread_ahead_blocks={}\n\
             read_transfers={}\nblocks_read={}\nwrite_transfers={}\nwrite_behind_transfers={}\n\
             blocks_written={}\nwaits={}\nflushes={}\nrequests={}\nbytes_read={}\nbytes_written={}\nsyncs={}\n",
            self.fs.nbuf(),
            self.fs.block_bytes(),
            c.hits,
            c.misses,
            c.read_ahead_hits,
            c.read_ahead_blocks,
            c.read_transfers,
            c.blocks_read,
            c.write_transfers,
            c.write_behind_transfers,
            c.blocks_written,
            c.waits,
            c.flushes,
            s.requests,
            s.bytes_read,
            s.bytes_written,
            s.syncs
        );
        let [wait_ticks, flush_ticks] = self.fs.device().wait_ticks();
        let _ = write!(t, "device_wait_ticks={wait_ticks}\nflush_ticks={flush_ticks}\n");
        let _ = write!(
            t,
            "dirty_blocks={}\ndiscarded_blocks={}\nexpired_transfers={}\norder_visits={}\nbarrier_flushes={}\n",
            self.fs.dirty_blocks(),
            c.discarded_blocks,
            c.expired_transfers,
            c.order_visits,
            c.barrier_flushes
        );
        let j = self.fs.log_stats();
        let _ = write!(
            t,
            "journal_commits={}\njournal_blocks={}\njournal_transfers={}\njournal_checkpoints={}\n\
             journal_checkpoint_blocks={}\njournal_too_large={}\njournal_conflicts={}\n\
             journal_closure_blocks={}\n",
            j.commits,
            j.logged_blocks,
            j.log_transfers,
            j.checkpoints,
            j.checkpoint_blocks,
            j.too_large,
            j.conflicts,
            j.closure_blocks
        );
        let w = self.readwin.stats();
        let _ = write!(
            t,
            "readwin_pages={}\nreadwin_slots={}\nreadwin_refused={}\nreadwin_bumps={}\n",
            w.pages, w.slots, w.refused, w.bumps
        );
        if let Ok(f) = self.fs.statfs() {
            let _ = write!(t, "free_blocks={}\nfree_inodes={}\n", f.free_blocks, f.free_inodes);
        }
        let _ = writeln!(t, "open_handles={}", self.handles.len());
        t
    }

    /// `fs::OP_LOOKUP`: the Stat; or the error, with word 1 = 1 and the
    /// parent's Stat when only the last name is missing.
    fn lookup(&mut self, path: &[u8], tx: &mut [u8]) -> Reply {
        let found = absolute(path).and_then(|p| self.fs.resolve(p)).and_then(|ino| self.fs.stat(ino));
        match found {
            Ok(attr) => with_stat([0; 4], &attr.to_stat(), tx),
            Err(ENOENT) => {
                let parent = split_last(path)
                    .and_then(|(parent, _)| self.fs.resolve(parent))
                    .and_then(|ino| self.fs.stat(ino));
                match parent {
                    Ok(p) if mode::is_dir(p.mode as u32) => {
                        with_stat([encode_result(Err(ENOENT)), 1, 0, 0], &p.to_stat(), tx)
                    }
                    _ => error(ENOENT),
                }
            }
            Err(e) => error(e),
        }
    }

    /// `fs::OP_OPEN_FORWARDED`: the process's `open`, passed on by the
    /// monitor, answered as the monitor would (word 0 = fd, words 1–3 =
    /// the descriptor) under the handle the monitor chose.
    fn open_forwarded(
        &mut self,
        data: &[u8],
        flags: u64,
        create_perm: u16,
        owner: (u32, u32),
        tx: &mut [u8],
    ) -> Result<Reply, Errno> {
        let (head, paths) = fs::Forwarded::decode(data).ok_or(EINVAL)?;
        let (inner, _, closes) = fs::Forwarded::parts(paths).ok_or(EINVAL)?;
        // The process's closes that rode on its open (the monitor's, as
        // `io::OP_CLOSE` from it would be): first, before anything can
        // fail, since a declined open is not sent here again.
        for handle in fs::Forwarded::handles(closes) {
            let _ = self.close(handle);
        }
        let (_, stat_len) = self.open(inner, flags, create_perm, owner, tx, Some(head.handle))?;
        let st = Stat::decode(&tx[..stat_len]).unwrap_or_default();
        let info = protocols::unix::FdInfo {
            manager_pid: self.me,
            manager_queue: fs::QUEUE,
            file_type: st.mode & mode::S_IFMT,
            flags: head.flags as u32,
            handle: head.handle,
        };
        let [a, b, c] = info.encode();
        Ok(([head.fd, a, b, c], 0))
    }

    /// `fs::OP_OPEN`: data = path, optionally followed by NUL and handles
    /// (u64 LE) to close first. `chosen`: keep it under that handle (a
    /// forwarded open's) instead of a new one.
    fn open(
        &mut self,
        data: &[u8],
        flags: u64,
        create_perm: u16,
        (uid, gid): (u32, u32),
        tx: &mut [u8],
        chosen: Option<u64>,
    ) -> Result<Reply, Errno> {
        let (path, closes) = match data.iter().position(|&b| b == 0) {
            Some(nul) => (&data[..nul], &data[nul + 1..]),
            None => (data, &[][..]),
        };
        for h in closes.chunks_exact(8) {
            let handle = u64::from_le_bytes(h.try_into().unwrap_or([0; 8]));
            let _ = self.close(handle);
        }
        if flags & open_flags::O_ACCMODE == open_flags::O_ACCMODE {
            return Err(EINVAL);
        }
        if let Some(h) = chosen
            && (h & fs::FORWARDED_HANDLE_BIT == 0 || self.handles.get(h).is_ok())
        {
            return Err(EINVAL); // before anything is made
        }
        let path = absolute(path)?;
        let writable = open_flags::writable(flags);
        let is_exclusive = flags & open_flags::O_EXCL != 0;
        let (ino, made) = match split_last(path) {
            // `O_CREAT`: the parent once, then one pass over it that finds
            // the name or makes it (`Fs::lookup_or_create_open`), where
            // resolving the path and then the parent to create in walked
            // the parent twice and scanned the directory three times.
            Ok((parent, name)) if flags & open_flags::O_CREAT != 0 => {
                if path.len() > protocols::unix::MAX_PATH_BYTES {
                    return Err(ENAMETOOLONG);
                }
                let dir = self.fs.resolve(parent)?;
                match self.fs.lookup_or_create_open(dir, name, create_perm, uid, gid)? {
                    (_, None) if is_exclusive => return Err(EEXIST),
                    found_or_made => found_or_made,
                }
            }
            // `/` itself, or no `O_CREAT`.
            _ => match self.fs.resolve(path) {
                Ok(_) if flags & open_flags::O_CREAT != 0 && is_exclusive => return Err(EEXIST),
                Ok(ino) => (ino, None),
                Err(e) => return Err(e),
            },
        };
        let attr = match made {
            // A file just made is regular, empty and held open already,
            // its attributes those of the inode written (no read of it,
            // where a creat once read it three times: two stats and the
            // open's check).
            Some(attr) => {
                if let Err(e) = self.handles.reserve(ENOMEM) {
                    let _ = self.fs.close_inode(ino);
                    return Err(e);
                }
                attr
            }
            None => self.open_found(ino, flags, writable)?,
        };
        let open = Open { ino, flags, offset: 0, dir_cursor: (0, 0) };
        let inserted = match chosen {
            Some(h) => self.handles.insert_chosen(h, open, ENOMEM).map(|()| h),
            None => self.handles.insert(open, ENOMEM),
        };
        let handle = match inserted {
            Ok(h) => h,
            Err(e) => {
                let _ = self.fs.close_inode(ino);
                return Err(e);
            }
        };
        Ok(with_stat([handle, fs::QUEUE as u64, 0, 0], &attr.to_stat(), tx))
    }

    /// The checks and the work of an open of a file that was there
    /// (`O_TRUNC`), then the file held open ([`Fs::open_inode_stat`]):
    /// its attributes.
    fn open_found(&mut self, ino: u32, flags: u64, writable: bool) -> Result<crate::Attr, Errno> {
        let attr = self.fs.stat(ino)?;
        let (m, size_bytes) = (attr.mode as u32, attr.size_bytes);
        if mode::is_dir(m) {
            if writable {
                return Err(EISDIR);
            }
        } else if flags & open_flags::O_DIRECTORY != 0 {
            return Err(ENOTDIR);
        } else if !mode::is_reg(m) {
            // Device and FIFO inodes of a disk have no manager here: the
            // device entries Ridgeback serves live in `/dev` (memfs).
            return Err(ENODEV);
        }
        self.handles.reserve(ENOMEM)?;
        if mode::is_reg(m) && writable && flags & open_flags::O_TRUNC != 0 && size_bytes != 0 {
            // Windows on the file are stale from now (`crate::readwin`).
            self.readwin.changed(ino);
            self.fs.truncate(ino, 0)?;
        }
        self.fs.open_inode_stat(ino)
    }

    fn close(&mut self, handle: u64) -> Result<(), Errno> {
        let open = self.handles.remove(handle)?;
        self.readwin.release(handle);
        self.fs.close_inode(open.ino)
    }

    fn io_request(
        &mut self,
        sender: u64,
        m: [u64; 4],
        data: &[u8],
        tx: &mut [u8; MESSAGE_DATA_BYTES],
        lent: &mut impl Lent,
    ) -> Result<Reply, Errno> {
        let [op, handle, w2, w3] = m;
        match op {
            io::OP_READ => {
                self.offset_in(handle)?;
                let r = self.read(handle, w2, tx, lent);
                self.offset_out(handle);
                r
            }
            io::OP_WRITE => {
                self.offset_in(handle)?;
                let r = self.write(handle, w2, data, lent).map(value);
                self.offset_out(handle);
                r
            }
            io::OP_SEEK => {
                self.offset_in(handle)?;
                // Put back on every path (`crate::readwin`: never left busy).
                let r = self.seek(handle, w2 as i64, w3);
                self.offset_out(handle);
                r.map(value)
            }
            io::OP_PREAD => self.pread(handle, w2, w3, tx, lent),
            io::OP_PWRITE => self.pwrite(handle, w2, w3, data, lent).map(value),
            io::OP_READ_WINDOW_SLOT => self.window_slot(sender, handle, w2),
            io::OP_FSTAT => {
                let ino = self.handles.get(handle)?.ino;
                let st = self.fs.stat(ino)?.to_stat();
                Ok(with_stat([0; 4], &st, tx))
            }
            io::OP_READDIR => self.readdir(handle, w2, tx),
            io::OP_TRUNCATE => {
                let open = self.handles.get(handle)?;
                if !open_flags::writable(open.flags) {
                    return Err(EBADF);
                }
                let ino = open.ino;
                self.readwin.changed(ino);
                self.fs.truncate(ino, w2).map(|()| value(0))
            }
            io::OP_FSYNC => {
                let ino = self.handles.get(handle)?.ino;
                self.stats.syncs += 1;
                self.fs.fsync(ino).map(|()| value(0))
            }
            io::OP_CLOSE if sender != self.monitor => Err(EPERM),
            io::OP_CLOSE => self.close(handle).map(|()| value(0)),
            io::OP_FOREGROUND => Err(ENOTTY),
            _ => Err(ENOSYS),
        }
    }

    /// The inode and offset of `handle`, if it was opened for reading
    /// (`EBADF` if not): what `OP_READ` and `OP_PREAD` both check first.
    fn readable(&self, handle: u64) -> Result<(u32, u64), Errno> {
        let open = self.handles.get(handle)?;
        if !open_flags::readable(open.flags) {
            return Err(EBADF);
        }
        Ok((open.ino, open.offset))
    }

    /// `io::OP_READ`: up to `want` bytes at the handle's offset, in the
    /// reply when they fit a message, else through the lent buffer.
    fn read(
        &mut self,
        handle: u64,
        want: u64,
        tx: &mut [u8; MESSAGE_DATA_BYTES],
        lent: &mut impl Lent,
    ) -> Result<Reply, Errno> {
        let (ino, offset) = self.readable(handle)?;
        let (n, inline) = self.read_at(ino, offset, want, tx, lent)?;
        self.advance(handle, n)?;
        Ok(([n as u64, 0, 0, 0], inline))
    }

    /// `io::OP_PREAD`: as `OP_READ` at `offset`, the handle's offset
    /// neither used nor moved; word 1 of the reply is the file's change
    /// generation (`crate::readwin`), which a read window is checked
    /// against.
    fn pread(
        &mut self,
        handle: u64,
        want: u64,
        offset: u64,
        tx: &mut [u8; MESSAGE_DATA_BYTES],
        lent: &mut impl Lent,
    ) -> Result<Reply, Errno> {
        let (ino, _) = self.readable(handle)?;
        if offset > crate::readwin::MAX_OFFSET_BYTES {
            return Err(EINVAL);
        }
        let generation = self.readwin.generation(handle);
        let (n, inline) = self.read_at(ino, offset, want, tx, lent)?;
        self.stats.bytes_read += n as u64;
        Ok(([n as u64, generation, 0, 0], inline))
    }

    /// `io::OP_PWRITE`: as `OP_WRITE` at `offset`, the handle's offset
    /// neither used nor moved (a slotted handle's offset word is not even
    /// read: the request never takes it, `crate::readwin`). On an
    /// `O_APPEND` handle the bytes go at the end, as Linux's `pwrite(2)`
    /// does ("BUGS": POSIX says at `offset`); the runtime documents the
    /// same. Windows on the file are made stale before the reply, as by
    /// `OP_WRITE` (`Self::write` moves the generation). One request, so
    /// atomic with respect to every other request on the open file.
    fn pwrite(
        &mut self,
        handle: u64,
        len: u64,
        offset: u64,
        data: &[u8],
        lent: &mut impl Lent,
    ) -> Result<u64, Errno> {
        if offset > crate::readwin::MAX_OFFSET_BYTES {
            return Err(EINVAL);
        }
        // `write` works at the handle's offset and moves it: give it
        // `offset` for this request and put the handle's own back after,
        // on every path (the manager serves one request at a time, so no
        // one sees the borrowed value).
        let own = core::mem::replace(&mut self.handles.get_mut(handle)?.offset, offset);
        let r = self.write(handle, len, data, lent);
        if let Ok(open) = self.handles.get_mut(handle) {
            open.offset = own;
        }
        r
    }

    /// `io::OP_READ_WINDOW_SLOT` from `sender`: a slot for `handle` (a
    /// regular file open for reading) in the sender's page, which the
    /// server then maps at `address` (unless 0: mapped already).
    fn window_slot(&mut self, sender: u64, handle: u64, address: u64) -> Result<Reply, Errno> {
        if !self.readwin.is_enabled() {
            return Err(ENOSYS);
        }
        let open = self.handles.get(handle)?;
        if !open_flags::readable(open.flags) {
            return Err(EBADF);
        }
        let (ino, offset) = (open.ino, open.offset);
        if !mode::is_reg(self.fs.stat(ino)?.mode as u32) {
            return Err(EINVAL);
        }
        if !address.is_multiple_of(abi::layout::PAGE_SIZE) {
            return Err(EINVAL);
        }
        let shared = self.page_shared;
        let (slot, page) = self.readwin.assign(sender, handle, ino, offset, &mut |a| shared(a))?;
        if address != 0 {
            self.map_wanted = Some((sender, address, page));
        }
        Ok(value(slot as u64))
    }

    /// `io::OP_SEEK`: the handle's new offset.
    fn seek(&mut self, handle: u64, offset: i64, whence: u64) -> Result<u64, Errno> {
        let (ino, at) = self.handles.get(handle).map(|o| (o.ino, o.offset))?;
        let size = self.fs.stat(ino)?.size_bytes;
        let new = unix_core::seek::seek_offset(at, size, offset, whence)?;
        self.handles.get_mut(handle)?.offset = new;
        Ok(new)
    }

    /// A handle with a slot: take its offset from the slot (where the
    /// client moved it), marking it busy there until [`Self::offset_out`]
    /// puts the new one back (`crate::readwin`), which the caller does
    /// whatever the request's outcome.
    fn offset_in(&mut self, handle: u64) -> Result<(), Errno> {
        if let Some(offset) = self.readwin.take_offset(handle) {
            match self.handles.get_mut(handle) {
                Ok(open) => open.offset = offset,
                Err(e) => {
                    // Not reached (a slotted handle is open), but never
                    // leave the word busy.
                    self.readwin.set_offset(handle, offset);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// A handle with a slot: publish its offset there (no longer busy).
    fn offset_out(&self, handle: u64) {
        if let Ok(open) = self.handles.get(handle) {
            self.readwin.set_offset(handle, open.offset);
        }
    }

    /// Up to `want` bytes of `ino` at `offset`: (bytes, bytes of them in
    /// `tx` for the reply; 0 when they went through the lent buffer).
    fn read_at(
        &mut self,
        ino: u32,
        offset: u64,
        want: u64,
        tx: &mut [u8; MESSAGE_DATA_BYTES],
        lent: &mut impl Lent,
    ) -> Result<(usize, usize), Errno> {
        let want = want.min(abi::lease::MAX_LEASE_BYTES) as usize;
        let done = if want <= tx.len() {
            let n = self.fs.read(ino, offset, &mut tx[..want])?;
            return Ok((n, n));
        } else {
            // Straight from the cache's buffers into the lent buffer, one
            // lease call per run of blocks (`Fs::read_into`): one copy.
            let mut done = 0;
            let result = (|| {
                while done < want {
                    let len = (want - done).min(PIECE_BYTES);
                    let n = self.fs.read_into(ino, offset + done as u64, len, |segments| {
                        lent.write_segments(done as u64, segments)?;
                        done += segments.iter().map(|s| s.len()).sum::<usize>();
                        Ok(())
                    })?;
                    if n < len {
                        break;
                    }
                }
                Ok::<(), Errno>(())
            })();
            match result {
                Err(e) if done == 0 => return Err(e),
                _ => done,
            }
        };
        Ok((done, 0))
    }

    fn advance(&mut self, handle: u64, n: usize) -> Result<(), Errno> {
        self.stats.bytes_read += n as u64;
        let open = self.handles.get_mut(handle)?;
        open.offset += n as u64;
        Ok(())
    }

    /// `io::OP_WRITE`: `len` bytes (0: the message's data is all of it),
    /// from the message when they are there, else through the lent buffer,
    /// at the handle's offset (the end, with `O_APPEND`). A write cut
    /// short (a full disk, a lent buffer that failed half-way) counts what
    /// was written.
    fn write(&mut self, handle: u64, len: u64, data: &[u8], lent: &mut impl Lent) -> Result<u64, Errno> {
        let open = self.handles.get(handle)?;
        if !open_flags::writable(open.flags) {
            return Err(EBADF);
        }
        let (ino, flags) = (open.ino, open.flags);
        let mut offset = open.offset;
        if flags & open_flags::O_APPEND != 0 {
            offset = self.fs.stat(ino)?.size_bytes;
        }
        let len = if len == 0 { data.len() } else { usize::try_from(len).map_err(|_| EINVAL)? };
        if len > abi::lease::MAX_LEASE_BYTES as usize {
            return Err(EINVAL);
        }
        // Windows on the file are stale from now (`crate::readwin`).
        self.readwin.changed(ino);
        let mut done = 0usize;
        let result = if len <= data.len() {
            self.fs.write(ino, offset, &data[..len]).map(|n| done = n)
        } else {
            let mut piece = core::mem::take(&mut self.scratch);
            let r = (|| {
                if piece.len() < PIECE_BYTES {
                    piece.try_reserve_exact(PIECE_BYTES - piece.len()).map_err(|_| ENOMEM)?;
                    piece.resize(PIECE_BYTES, 0);
                }
                let bs = self.fs.block_bytes() as u64;
                while done < len {
                    // A run of at most `WRITE_SEGMENTS` blocks (and a piece).
                    let pos = offset + done as u64;
                    let run_end = (pos / bs + WRITE_SEGMENTS as u64) * bs;
                    let n = ((len - done) as u64).min(run_end - pos).min(PIECE_BYTES as u64) as usize;
                    let at = done as u64;
                    // Straight from the lent buffer into the cache's
                    // buffers, one lease call per run: one copy.
                    let direct = self
                        .fs
                        .write_from(ino, pos, n, |parts| lent.read_segments(at, parts).map_err(|_| EFAULT))?;
                    if let Some(wrote) = direct {
                        done += wrote;
                        continue;
                    }
                    // Through the piece, a block at a time as found or
                    // allocated (few buffers, a damaged map, a full disk).
                    lent.read(at, &mut piece[..n]).map_err(|_| EFAULT)?;
                    let wrote = self.fs.write(ino, pos, &piece[..n])?;
                    done += wrote;
                    if wrote < n {
                        break;
                    }
                }
                Ok(())
            })();
            self.scratch = piece;
            r
        };
        if done == 0 {
            result?;
        }
        self.stats.bytes_written += done as u64;
        self.handles.get_mut(handle)?.offset = offset + done as u64;
        Ok(done as u64)
    }

    /// `io::OP_READDIR`: entry `index` (0 is `.`), found from the handle's
    /// cursor when reading on in order, else from the start.
    fn readdir(&mut self, handle: u64, index: u64, tx: &mut [u8]) -> Result<Reply, Errno> {
        let open = self.handles.get(handle)?;
        let ino = open.ino;
        let (mut at, mut pos) = open.dir_cursor;
        if index < at {
            (at, pos) = (0, 0);
        }
        let found = loop {
            match self.fs.read_dir(ino, pos)? {
                None => break None,
                Some((entry, next)) => {
                    if at == index {
                        break Some((entry, next));
                    }
                    at += 1;
                    pos = next;
                }
            }
        };
        let Some((entry, next)) = found else {
            self.handles.get_mut(handle)?.dir_cursor = (at, pos);
            return Ok(value(0));
        };
        self.handles.get_mut(handle)?.dir_cursor = (index + 1, next);
        let m = match entry.file_type {
            1 => mode::S_IFREG,
            2 => mode::S_IFDIR,
            3 => mode::S_IFCHR,
            4 => mode::S_IFBLK,
            5 => mode::S_IFIFO,
            6 => 0o140000,
            7 => 0o120000,
            // No file type in the entry (revision 0): ask the inode.
            _ => self.fs.stat(entry.ino).map(|a| a.mode as u32 & mode::S_IFMT).unwrap_or(0),
        };
        Ok(([1, 0, 0, 0], DirEntry::encode(entry.ino as u64, m, &entry.name, tx)))
    }
}

/// A [`Lent`] over plain buffers: the send buffer to read from, and the
/// receive buffer written to (for tests and tools).
pub struct VecLent {
    pub send: Vec<u8>,
    pub receive: Vec<u8>,
    /// Calls that wrote into `receive` (a server's `lease_write`s; one
    /// for a whole [`Lent::write_segments`]).
    pub write_calls: usize,
    /// The calls that read from `send` (a server's `lease_read`s), each
    /// with the number of buffers it filled (more than one: a
    /// [`Lent::read_segments`] straight into the cache's blocks).
    pub read_calls: Vec<usize>,
}

impl VecLent {
    pub fn new(send: Vec<u8>, receive_bytes: usize) -> VecLent {
        VecLent { send, receive: vec![0; receive_bytes], write_calls: 0, read_calls: Vec::new() }
    }

    fn put(&mut self, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        let start = usize::try_from(offset).map_err(|_| EFAULT)?;
        let dst = self.receive.get_mut(start..start + bytes.len()).ok_or(EFAULT)?;
        dst.copy_from_slice(bytes);
        Ok(())
    }
}

impl Lent for VecLent {
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), Errno> {
        self.read_calls.push(1);
        let start = usize::try_from(offset).map_err(|_| EFAULT)?;
        let src = self.send.get(start..start + buf.len()).ok_or(EFAULT)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    /// All or nothing, as the kernel's `lease::SEGMENTS`.
    fn read_segments(&mut self, offset: u64, segments: &mut [&mut [u8]]) -> Result<(), Errno> {
        self.read_calls.push(segments.len());
        let total: usize = segments.iter().map(|s| s.len()).sum();
        let start = usize::try_from(offset).map_err(|_| EFAULT)?;
        if segments.len() > abi::lease::MAX_SEGMENTS as usize || start + total > self.send.len() {
            return Err(EFAULT);
        }
        let mut at = start;
        for s in segments.iter_mut() {
            s.copy_from_slice(&self.send[at..at + s.len()]);
            at += s.len();
        }
        Ok(())
    }

    fn write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        self.write_calls += 1;
        self.put(offset, bytes)
    }

    /// All or nothing, as the kernel's `lease::SEGMENTS`.
    fn write_segments(&mut self, offset: u64, segments: &[&[u8]]) -> Result<(), Errno> {
        self.write_calls += 1;
        let total: usize = segments.iter().map(|s| s.len()).sum();
        let start = usize::try_from(offset).map_err(|_| EFAULT)?;
        if segments.len() > abi::lease::MAX_SEGMENTS as usize || start + total > self.receive.len() {
            return Err(EFAULT);
        }
        let mut at = offset;
        for s in segments {
            self.put(at, s)?;
            at += s.len() as u64;
        }
        Ok(())
    }
}
