//! memfs's requests: decoding each message, asking [`Fs`], and placing
//! the answer in the reply words and buffer ([`Service`]), and the
//! standard tree every boot starts with.
//!
//! What it is not: the server loop. `servers/memfs` receives, calls
//! [`Service::fs_request`] or [`Service::io_request`], and replies; nothing
//! here makes a kernel call or reads the clock (the time of a request
//! comes in as `now_ns`).
//!
//! # Invariants
//! - Who may ask what is decided here, before `Fs` is asked (see
//!   [`Service`]); a refused request changes nothing.
//! - A reply's data never exceeds [`MESSAGE_DATA_BYTES`]: a read longer
//!   than [`INLINE_READ_MAX_BYTES`] moves its bytes through the caller's
//!   lent buffer, and so does a write whose bytes the message does not
//!   hold.

use alloc::string::String;

use protocols::unix::errno::{EBUSY, EINVAL, ENAMETOOLONG, ENOSPC, ENOTDIR, EPERM};
use protocols::unix::{Errno, Stat, mode};

use super::open::Fs;
use super::tree::Lookup;
use crate::lease::Lent;

/// Longest read answered with the bytes in the reply message
/// (`protocols::unix::io::INLINE_READ_MAX_BYTES`); longer ones go through
/// the caller's lent buffer.
pub use protocols::unix::io::INLINE_READ_MAX_BYTES;

/// Reply words and the bytes of reply data placed in the reply buffer.
pub type Reply = ([u64; 4], usize);

/// Bytes of one message's data (request and reply buffers): the kernel's
/// `abi::msg::MAX_DATA_BYTES`.
pub const MESSAGE_DATA_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize;

/// The directories every boot starts with, and their modes.
pub const STANDARD_DIRS: [(&str, u32); 6] =
    [("/bin", 0o755), ("/etc", 0o755), ("/dev", 0o755), ("/tmp", 0o1777), ("/home", 0o755), ("/root", 0o700)];

/// Files of `/etc` only root may read (mode 0600, owner root): the
/// password hashes (shadow(5); docs/reliability.md, "Users and limits").
pub const SECRET_ETC_FILES: [&str; 1] = ["shadow"];

/// Programs of `/bin` that run as their owner, root (mode 04755,
/// `mode::S_ISUID`): `su`, which reads `/etc/shadow` and changes its uid
/// after checking the caller's password.
pub const SET_USER_ID_PROGRAMS: [&str; 1] = ["su"];

/// Where boot module `name` goes and its mode: `etc.<rest>` becomes
/// `/etc/<rest>` (0644, or 0600 for the [`SECRET_ETC_FILES`]), anything
/// else `/bin/<name>` (0755, or 04755 for the [`SET_USER_ID_PROGRAMS`]). The path is checked when the file is made.
pub fn module_destination(name: &str) -> Result<(String, u32), Errno> {
    let (dir, rest, perm) = match name.strip_prefix("etc.") {
        Some(rest) if SECRET_ETC_FILES.contains(&rest) => ("/etc/", rest, 0o600),
        Some(rest) => ("/etc/", rest, 0o644),
        None if SET_USER_ID_PROGRAMS.contains(&name) => ("/bin/", name, 0o4755),
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
    /// memfs's own kernel pid, for the descriptor a forwarded open
    /// answers with (`fs::OP_OPEN_FORWARDED`); 0 until set.
    me: u64,
    /// A forwarded open that failed: its errno, taken by the server loop,
    /// which passes the call back to the monitor instead of answering.
    declined: Option<Errno>,
}

impl Service {
    pub fn new(fs: Fs, starter_pid: u64) -> Service {
        Service { fs, starter: starter_pid, monitor: None, me: 0, declined: None }
    }

    /// Set memfs's kernel pid (the descriptors of forwarded opens name it).
    pub fn set_own_pid(&mut self, pid: u64) {
        self.me = pid;
    }

    /// The errno of the forwarded open just served, when it failed: the
    /// caller's call then goes back to the monitor
    /// (`monitor::OP_OPEN_DECLINED`) instead of being answered.
    pub fn take_declined(&mut self) -> Option<Errno> {
        self.declined.take()
    }

    /// `fs::OP_OPEN_FORWARDED`: the process's `open`, passed on by the
    /// monitor, answered as the monitor would (word 0 = fd, words 1–3 =
    /// the descriptor) under the handle the monitor chose.
    fn open_forwarded(&mut self, m: [u64; 4], data: &[u8]) -> Result<Reply, Errno> {
        use protocols::unix::{FdInfo, fs};
        let (head, paths) = fs::Forwarded::decode(data).ok_or(EINVAL)?;
        let (inner, _, closes) = fs::Forwarded::parts(paths).ok_or(EINVAL)?;
        // The process's closes that rode on its open (the monitor's, as
        // `io::OP_CLOSE` from it would be): first, before anything can
        // fail, since a declined open is not sent here again.
        for handle in fs::Forwarded::handles(closes) {
            let _ = self.fs.close(handle);
        }
        let path = utf8_path(inner)?;
        let st = self.fs.open_chosen(path, m[1], perm_word(m[2]), owner_word(m[3]), head.handle)?;
        let info = FdInfo {
            manager_pid: self.me,
            manager_queue: fs::IO_QUEUE,
            file_type: st.mode & mode::S_IFMT,
            flags: head.flags as u32,
            handle: head.handle,
        };
        let [a, b, c] = info.encode();
        Ok(([head.fd, a, b, c], 0))
    }

    /// Build the standard tree: [`STANDARD_DIRS`], `/dev/null` and
    /// `/dev/zero`, served by `server_pid` on `fs::QUEUE`.
    pub fn make_standard_tree(&mut self, server_pid: u64) -> Result<(), Errno> {
        for (dir, perm) in STANDARD_DIRS {
            self.fs.mkdir(dir, perm, 0, 0)?;
        }
        self.fs.make_null_device("/dev/null", server_pid, protocols::unix::fs::QUEUE)?;
        self.fs.make_zero_device("/dev/zero", server_pid, protocols::unix::fs::QUEUE)?;
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
            | fs::OP_OPEN_FORWARDED
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
            fs::OP_OPEN_FORWARDED => {
                let opened = self.open_forwarded(m, data);
                if let Err(e) = opened {
                    self.declined = Some(e);
                }
                opened
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
                    let mode_bits = perm_word(w3) | (w3 as u32 & mode::S_IFMT);
                    utf8_path(data).and_then(|p| self.fs.mkdev(p, w1, queue, mode_bits, 0, 0))
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
            // The null and zero devices have no names below them.
            device::OP_OPEN if !data.is_empty() => Err(ENOTDIR),
            // Word 2 names the entry (its inode, from the lookup): both
            // devices are this server's, on the same queue.
            device::OP_OPEN if w2 != 0 && Some(w2) == self.fs.zero_ino() => self
                .fs
                .open_zero(w1)
                .map(|(handle, st)| with_stat([handle, fs::IO_QUEUE as u64, 0, 0], &st, tx)),
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

    /// A request on `fs::IO_QUEUE`; `lent` is the caller's buffers lent
    /// with the call (`io::OP_READ` and `io::OP_WRITE` move their bytes
    /// through it, see [`crate::lease`]).
    pub fn io_request(
        &mut self,
        sender: u64,
        m: [u64; 4],
        data: &[u8],
        now_ns: u64,
        tx: &mut [u8; MESSAGE_DATA_BYTES],
        lent: &mut dyn Lent,
    ) -> Reply {
        use protocols::unix::{DirEntry, io};
        let [op, handle, w2, w3] = m;
        let result = match op {
            // A short read goes back in the reply (two copies of a few
            // bytes cost less than a kernel entry); a longer one straight
            // from the file's pages into the lent buffer (one copy).
            io::OP_READ if w2 <= INLINE_READ_MAX_BYTES as u64 => {
                let max = w2 as usize;
                self.fs.read(handle, &mut tx[..max]).map(|n| ([n as u64, 0, 0, 0], n))
            }
            io::OP_READ => self.fs.read_lent(handle, w2, lent).map(|n| value(n as u64)),
            io::OP_WRITE => {
                self.fs.set_now(now_ns);
                // Word 2 is the length (0: the data in the message is all
                // of it, as older callers send); when the message does not
                // hold it all, it comes through the lease.
                let len = if w2 == 0 { data.len() as u64 } else { w2 };
                match data.get(..usize::try_from(len).unwrap_or(usize::MAX)) {
                    Some(bytes) => self.fs.write(handle, bytes),
                    None => self.fs.write_lent(handle, len, lent),
                }
                .map(|n| value(n as u64))
            }
            io::OP_SEEK => self.fs.seek(handle, w2 as i64, w3).map(value),
            // Positional: word 3 the offset, the description's own
            // untouched (one request, so atomic for a forked sharer).
            io::OP_PREAD if w2 <= INLINE_READ_MAX_BYTES as u64 => {
                let max = w2 as usize;
                let mut into = crate::lease::BytesMut(&mut tx[..max]);
                self.fs.pread_lent(handle, w3, w2, &mut into).map(|n| ([n as u64, 0, 0, 0], n))
            }
            io::OP_PREAD => self.fs.pread_lent(handle, w3, w2, lent).map(|n| value(n as u64)),
            io::OP_PWRITE => {
                self.fs.set_now(now_ns);
                let len = if w2 == 0 { data.len() as u64 } else { w2 };
                match data.get(..usize::try_from(len).unwrap_or(usize::MAX)) {
                    Some(bytes) => self.fs.pwrite_lent(handle, w3, len, &mut crate::lease::Bytes(bytes)),
                    None => self.fs.pwrite_lent(handle, w3, len, lent),
                }
                .map(|n| value(n as u64))
            }
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
    use crate::lease::testing::Lender;
    use crate::memfs::data::PAGE_BYTES;
    use crate::memfs::testing::{CAP, fs, stat};
    use crate::seek::{SEEK_CUR, SEEK_END, SEEK_SET};
    use alloc::boxed::Box;
    use alloc::vec::Vec;
    use protocols::unix::errno::{EBADF, EEXIST, EFAULT, EFBIG, EISDIR, ENODEV, ENOENT, ENOTEMPTY};
    use protocols::unix::open_flags::{O_CREAT, O_DIRECTORY, O_EXCL, O_RDONLY, O_RDWR, O_WRONLY};
    use protocols::unix::{DirEntry, device, fs as fsp, io, result};
    use std::vec;

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
        /// A request lending a 64 KiB buffer; the data is what the reply
        /// carried or, when it carried none, what went through the lease.
        fn io(&mut self, from: u64, m: [u64; 4], data: &[u8]) -> (Result<u64, Errno>, [u64; 4], Vec<u8>) {
            let mut lender = Lender::new(vec![0u8; 64 << 10]);
            self.io_lent(from, m, data, &mut lender)
        }
        fn io_lent(
            &mut self,
            from: u64,
            m: [u64; 4],
            data: &[u8],
            lender: &mut Lender,
        ) -> (Result<u64, Errno>, [u64; 4], Vec<u8>) {
            let (w, len) = self.s.io_request(from, m, data, 5678, &mut self.tx, lender);
            let r = result(w[0]);
            let out = match r {
                Ok(n) if len == 0 && m[0] == io::OP_READ => lender.bytes[..n as usize].to_vec(),
                _ => self.tx[..len].to_vec(),
            };
            (r, w, out)
        }
    }

    fn caller(s: &mut Service) -> Call<'_> {
        Call { s, tx: Box::new([0u8; MESSAGE_DATA_BYTES]) }
    }

    #[test]
    fn module_destinations() {
        assert_eq!(module_destination("sh").unwrap(), ("/bin/sh".into(), 0o755));
        assert_eq!(module_destination("etc.inittab").unwrap(), ("/etc/inittab".into(), 0o644));
        assert_eq!(module_destination("etc.shadow").unwrap(), ("/etc/shadow".into(), 0o600));
        assert_eq!(module_destination("etc.passwd").unwrap(), ("/etc/passwd".into(), 0o644));
        assert_eq!(module_destination("su").unwrap(), ("/bin/su".into(), 0o4755));
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

    /// `fs::OP_OPEN_FORWARDED` (the monitor's pass-on of a process's
    /// `open(O_CREAT)`): answered as the monitor answers `open`, the file
    /// then used and closed under the monitor's handle; each failure is
    /// declined with its errno and makes nothing; only the monitor (or the
    /// starter) may forward.
    #[test]
    fn forwarded_opens_answer_as_the_monitor_or_are_declined() {
        let mut s = service();
        s.set_own_pid(ME);
        let mut c = caller(&mut s);
        assert_eq!(c.fs(STARTER, [fsp::OP_SET_MONITOR, MONITOR, 0, 0], b"").0, Ok(0));
        let handle = fsp::FORWARDED_HANDLE_BIT | 77 << 32 | 1;
        let request = |handle: u64, path: &str| {
            let head = fsp::Forwarded {
                fd: 4,
                handle,
                pid: 9,
                flags: O_RDWR | O_CREAT,
                monitor_queue: 0,
                create_mode: 0o640,
            };
            let mut data = head.encode().to_vec();
            data.extend_from_slice(path.as_bytes());
            data.push(0);
            data.extend_from_slice(path.as_bytes());
            data
        };
        let words = [fsp::OP_OPEN_FORWARDED, O_RDWR | O_CREAT | O_EXCL, 0o640, 5 << 32 | 6];
        let (r, w, _) = c.fs(MONITOR, words, &request(handle, "/tmp/f"));
        assert_eq!(r, Ok(4));
        assert_eq!(c.s.take_declined(), None);
        let info = protocols::unix::FdInfo::decode([w[1], w[2], w[3]]);
        assert_eq!((info.manager_pid, info.manager_queue, info.handle), (ME, fsp::IO_QUEUE, handle));
        assert_eq!((info.file_type, info.flags as u64), (mode::S_IFREG, O_RDWR | O_CREAT));
        assert_eq!(c.io(STRANGER, [io::OP_WRITE, handle, 0, 0], b"abc").0, Ok(3));
        let st = stat(&c.s.fs, "/tmp/f");
        assert_eq!((st.size_bytes, st.mode & 0o777, st.uid, st.gid), (3, 0o640, 5, 6));
        for (h, path, want) in [
            (handle ^ 2, "/tmp/f", EEXIST),
            (handle, "/tmp/g", EINVAL),       // held already
            (77 << 32 | 2, "/tmp/g", EINVAL), // not one the monitor chose
            (handle ^ 2, "/nowhere/g", ENOENT),
        ] {
            assert_eq!(c.fs(MONITOR, words, &request(h, path)).0, Err(want), "{path}");
            assert_eq!(c.s.take_declined(), Some(want), "{path}");
        }
        assert!(c.s.fs.lookup("/tmp/g").is_err(), "nothing made by a declined open");
        assert_eq!(c.fs(MONITOR, words, &[0u8; 8]).0, Err(EINVAL), "a short header");
        assert_eq!(c.s.take_declined(), Some(EINVAL));
        assert_eq!(c.fs(STRANGER, words, &request(handle ^ 3, "/tmp/h")).0, Err(EPERM));
        assert_eq!(c.s.take_declined(), None, "a refused request is no declined open");
        assert_eq!(c.io(MONITOR, [io::OP_CLOSE, handle, 0, 0], b"").0, Ok(0));
        assert_eq!(c.io(STRANGER, [io::OP_WRITE, handle, 0, 0], b"x").0, Err(EBADF));
        assert_eq!(c.s.fs.stats().handles_open, 0);
    }

    /// Handles after a forwarded open's paths (closes that rode on the
    /// process's open) are closed first, also when the open is declined;
    /// a tail that is not whole handles declines it and closes nothing.
    #[test]
    fn closes_riding_on_a_forwarded_open_are_made_first() {
        let mut s = service();
        s.set_own_pid(ME);
        let mut c = caller(&mut s);
        assert_eq!(c.fs(STARTER, [fsp::OP_SET_MONITOR, MONITOR, 0, 0], b"").0, Ok(0));
        let request = |handle: u64, path: &str, closes: &[u64], tail: &[u8]| {
            let head = fsp::Forwarded {
                fd: 4,
                handle,
                pid: 9,
                flags: O_WRONLY,
                monitor_queue: 0,
                create_mode: 0o600,
            };
            let mut data = head.encode().to_vec();
            data.extend_from_slice(path.as_bytes());
            data.push(0);
            data.extend_from_slice(path.as_bytes());
            if !closes.is_empty() || !tail.is_empty() {
                data.push(0);
            }
            for h in closes {
                data.extend_from_slice(&h.to_le_bytes());
            }
            data.extend_from_slice(tail);
            data
        };
        let words = [fsp::OP_OPEN_FORWARDED, O_WRONLY | O_CREAT | O_EXCL, 0o600, 0];
        let h = |n: u64| fsp::FORWARDED_HANDLE_BIT | 5 << 32 | n;
        assert_eq!(c.fs(MONITOR, words, &request(h(1), "/tmp/a", &[], &[])).0, Ok(4));
        assert_eq!(c.fs(MONITOR, words, &request(h(2), "/tmp/b", &[h(1)], &[])).0, Ok(4));
        assert_eq!(c.s.fs.stats().handles_open, 1, "a's handle closed first");
        assert_eq!(c.io(STRANGER, [io::OP_WRITE, h(1), 0, 0], b"x").0, Err(EBADF));
        assert_eq!(c.fs(MONITOR, words, &request(h(3), "/tmp/a", &[h(2)], &[])).0, Err(EEXIST));
        assert_eq!(c.s.take_declined(), Some(EEXIST));
        assert_eq!(c.s.fs.stats().handles_open, 0, "closed although the open was declined");
        assert_eq!(c.fs(MONITOR, words, &request(h(4), "/tmp/c", &[], &[])).0, Ok(4));
        assert_eq!(c.fs(MONITOR, words, &request(h(5), "/tmp/d", &[h(4)], &[9])).0, Err(EINVAL));
        assert_eq!(c.s.take_declined(), Some(EINVAL));
        assert_eq!(c.s.fs.stats().handles_open, 1, "a ragged request closes nothing");
        assert!(c.s.fs.lookup("/tmp/d").is_err());
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
        // A long read goes through the lease, in one request.
        let (r, _, data) = c.io(STRANGER, [io::OP_READ, h, 10_000, 0], b"");
        assert_eq!((r, data.len()), (Ok(6000), 6000));
        assert!(data.iter().all(|&b| b == 9));
        // A short one comes back in the reply.
        assert_eq!(c.io(STRANGER, [io::OP_SEEK, h, 10, SEEK_SET], b"").0, Ok(10));
        let mut nothing_lent = Lender::new(vec![]);
        let (w, len) =
            c.s.io_request(STRANGER, [io::OP_READ, h, 100, 0], b"", 1, &mut c.tx, &mut nothing_lent);
        assert_eq!((w[0], len), (100, 100));
        assert_eq!(c.io(STRANGER, [io::OP_SEEK, h, 6000, SEEK_SET], b"").0, Ok(6000));
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

    /// Reads and writes through the lease: any length, unaligned offsets
    /// across pages, and a lender whose buffer has an unmapped piece
    /// (`EFAULT`, the file and the offset unchanged).
    #[test]
    fn lent_reads_and_writes() {
        let mut s = service();
        let mut c = caller(&mut s);
        let (r, _, _) = c.fs(STARTER, [fsp::OP_OPEN, O_CREAT | O_RDWR, 0o644, 0], b"/tmp/lent");
        let h = r.unwrap();
        let pattern = |i: usize| (i * 7 + i / 4093) as u8;
        let len = 3 * PAGE_BYTES + 123;
        let mut lender = Lender::new((0..len).map(pattern).collect());
        assert_eq!(c.io(STRANGER, [io::OP_SEEK, h, 77, SEEK_SET], b"").0, Ok(77));
        assert_eq!(c.io_lent(STRANGER, [io::OP_WRITE, h, len as u64, 0], b"", &mut lender).0, Ok(len as u64));
        let size = 77 + len;
        // Read back at every kind of offset and length, through the lease.
        for (at, want) in
            [(0usize, size), (77, len), (PAGE_BYTES - 1, 2), (100, 2 * PAGE_BYTES + 3), (size - 5, 99)]
        {
            assert_eq!(c.io(STRANGER, [io::OP_SEEK, h, at as u64, SEEK_SET], b"").0, Ok(at as u64));
            let mut to = Lender::new(vec![0xee; want]);
            let (r, _, got) = c.io_lent(STRANGER, [io::OP_READ, h, want as u64, 0], b"", &mut to);
            let n = want.min(size - at);
            assert_eq!((r, got.len()), (Ok(n as u64), n), "read {want} at {at}");
            for (k, &b) in got.iter().enumerate() {
                let i = at + k;
                assert_eq!(b, if i < 77 { 0 } else { pattern(i - 77) }, "byte {i}");
            }
        }
        let before = c.s.fs.stats().bytes_stored;
        // A write whose lent buffer is unmapped in its third page: EFAULT,
        // and nothing of it lands, neither past the end (appending) nor
        // over old bytes (overwriting), and the offset stays.
        let bad: Vec<u8> = vec![0x55; 4 * PAGE_BYTES];
        for at in [size as u64, 10, size as u64 - 100] {
            let mut lender = Lender::new(bad.clone());
            lender.unmapped = 2 * PAGE_BYTES + 10..2 * PAGE_BYTES + 11;
            assert_eq!(c.io(STRANGER, [io::OP_SEEK, h, at, SEEK_SET], b"").0, Ok(at));
            let (r, _, _) = c.io_lent(STRANGER, [io::OP_WRITE, h, bad.len() as u64, 0], b"", &mut lender);
            assert_eq!(r, Err(EFAULT), "write at {at}");
            assert_eq!(c.io(STRANGER, [io::OP_SEEK, h, 0, SEEK_CUR], b"").0, Ok(at), "the offset stays");
            let (_, _, data) = c.io(STRANGER, [io::OP_FSTAT, h, 0, 0], b"");
            assert_eq!(Stat::decode(&data).unwrap().size_bytes, size as u64, "the size stays");
            let mut back = vec![0u8; size + 4 * PAGE_BYTES];
            assert_eq!(c.s.fs.read_at(Stat::decode(&data).unwrap().ino, 0, &mut back).unwrap(), size);
            assert!(back[..77].iter().all(|&b| b == 0));
            assert!(back[77..size].iter().enumerate().all(|(k, &b)| b == pattern(k)), "old bytes kept");
        }
        assert!(c.s.fs.stats().bytes_stored >= before);
        // Past the end, the pages the failed writes took hold zeros.
        assert_eq!(c.io(STRANGER, [io::OP_TRUNCATE, h, (size + 3 * PAGE_BYTES) as u64, 0], b"").0, Ok(0));
        assert_eq!(c.io(STRANGER, [io::OP_SEEK, h, size as u64, SEEK_SET], b"").0, Ok(size as u64));
        let (r, _, data) = c.io(STRANGER, [io::OP_READ, h, (3 * PAGE_BYTES) as u64, 0], b"");
        assert_eq!(r, Ok(3 * PAGE_BYTES as u64));
        assert!(data.iter().all(|&b| b == 0), "a failed write left bytes past the end");
        // A read into a lent buffer with an unmapped piece: EFAULT, the
        // offset stays.
        assert_eq!(c.io(STRANGER, [io::OP_SEEK, h, 5, SEEK_SET], b"").0, Ok(5));
        let mut to = Lender::new(vec![0; 2 * PAGE_BYTES]);
        to.unmapped = PAGE_BYTES + 1..PAGE_BYTES + 2;
        let (r, _, _) = c.io_lent(STRANGER, [io::OP_READ, h, 2 * PAGE_BYTES as u64, 0], b"", &mut to);
        assert_eq!(r, Err(EFAULT));
        assert_eq!(c.io(STRANGER, [io::OP_SEEK, h, 0, SEEK_CUR], b"").0, Ok(5));
        // More asked than lent: the lease's bounds say no.
        let mut small = Lender::new(vec![0; 10]);
        let (r, _, _) = c.io_lent(STRANGER, [io::OP_READ, h, 5000, 0], b"", &mut small);
        assert_eq!(r, Err(EINVAL));
        // /dev/zero fills a long read through the lease.
        let (r, _, _) = c.fs(STARTER, [device::OP_OPEN, O_RDONLY, c.s.fs.zero_ino().unwrap(), 0], b"");
        let z = r.unwrap();
        let mut to = Lender::new(vec![0xff; 3 * PAGE_BYTES + 1]);
        let (r, _, _) = c.io_lent(STRANGER, [io::OP_READ, z, to.bytes.len() as u64, 0], b"", &mut to);
        assert_eq!(r, Ok(3 * PAGE_BYTES as u64 + 1));
        assert!(to.bytes.iter().all(|&b| b == 0));
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
        let blk = (mode::S_IFBLK | 0o660) as u64;
        let (r, _, data) = c.fs(STARTER, [fsp::OP_MKDEV, 43, 0, blk], b"/dev/vda");
        assert!(r.is_ok());
        let st = Stat::decode(&data).unwrap();
        assert_eq!((st.mode, st.device_pid, st.device_queue), (mode::S_IFBLK | 0o660, 43, 0));
        let (r, _, data) = c.fs(STARTER, [fsp::OP_LOOKUP, 0, 0, 0], b"/dev/vda");
        assert!(r.is_ok(), "a block device entry is looked up like a character one");
        assert!(mode::is_blk(Stat::decode(&data).unwrap().mode));
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
        // The zero device, named by its inode in word 2.
        let zero = stat(&c.s.fs, "/dev/zero");
        let (r, _, data) = c.fs(STARTER, [device::OP_OPEN, O_RDONLY, zero.ino, 0], b"");
        let z = r.unwrap();
        assert_eq!(Stat::decode(&data).unwrap().ino, zero.ino);
        let (r, _, data) = c.io(STRANGER, [io::OP_READ, z, 64, 0], b"");
        assert_eq!((r, data), (Ok(64), alloc::vec![0u8; 64]));
        assert_eq!(c.io(STARTER, [io::OP_CLOSE, z, 0, 0], b"").0, Ok(0));
    }

    /// `io::OP_PREAD` and `OP_PWRITE` (branch `posio`): the bytes at the
    /// offset named, short in the reply and long through the lease, the
    /// description's offset neither used nor moved (also on errors); an
    /// `O_APPEND` description's pwrite appends (Linux's behaviour);
    /// `/dev/null` and `/dev/zero` answer as their reads and writes do;
    /// bad input is refused with nothing moved.
    #[test]
    fn positional_reads_and_writes_leave_the_offset() {
        use protocols::unix::open_flags::O_APPEND;
        let mut s = service();
        let mut c = caller(&mut s);
        let h = c.fs(STARTER, [fsp::OP_OPEN, O_CREAT | O_RDWR, 0o644, 0], b"/tmp/p").0.unwrap();
        assert_eq!(c.io(STRANGER, [io::OP_WRITE, h, 0, 0], b"0123456789").0, Ok(10));
        assert_eq!(c.io(STRANGER, [io::OP_SEEK, h, 3, SEEK_SET], b"").0, Ok(3));
        let here = |c: &mut Call| c.io(STRANGER, [io::OP_SEEK, h, 0, SEEK_CUR], b"").0;
        let (r, _, data) = c.io(STRANGER, [io::OP_PREAD, h, 4, 5], b"");
        assert_eq!((r, &data[..]), (Ok(4), &b"5678"[..]), "a short pread, in the reply");
        assert_eq!(here(&mut c), Ok(3));
        assert_eq!(c.io(STRANGER, [io::OP_PWRITE, h, 2, 8], b"ab").0, Ok(2));
        assert_eq!(here(&mut c), Ok(3));
        // A long one through the lease, past the end: a hole of zeros.
        let big: Vec<u8> = (0..3 * PAGE_BYTES).map(|i| (i % 253) as u8).collect();
        let mut from = Lender::new(big.clone());
        let r = c.io_lent(STRANGER, [io::OP_PWRITE, h, big.len() as u64, 20], b"", &mut from).0;
        assert_eq!(r, Ok(big.len() as u64));
        assert_eq!(here(&mut c), Ok(3));
        let mut to = Lender::new(vec![0xee; 4 * PAGE_BYTES]);
        let (w, len) =
            c.s.io_request(STRANGER, [io::OP_PREAD, h, 4 * PAGE_BYTES as u64, 0], b"", 1, &mut c.tx, &mut to);
        assert_eq!((w[0], len), ((20 + big.len()) as u64, 0), "through the lease");
        assert_eq!(&to.bytes[..10], b"01234567ab");
        assert!(to.bytes[10..20].iter().all(|&b| b == 0));
        assert_eq!(&to.bytes[20..20 + big.len()], &big[..]);
        assert_eq!(c.io(STRANGER, [io::OP_PREAD, h, 10, 1 << 40], b"").0, Ok(0), "past the end");
        assert_eq!(here(&mut c), Ok(3));
        // O_APPEND: at the end, whatever the offset named.
        let a = c.fs(STARTER, [fsp::OP_OPEN, O_WRONLY | O_APPEND, 0, 0], b"/tmp/p").0.unwrap();
        assert_eq!(c.io(STRANGER, [io::OP_PWRITE, a, 4, 0], b"tail").0, Ok(4));
        let end = (20 + big.len()) as u64;
        assert_eq!(c.io(STRANGER, [io::OP_PREAD, h, 4, end], b"").2, b"tail".to_vec());
        assert_eq!(c.io(STRANGER, [io::OP_PREAD, h, 4, 0], b"").2, b"0123".to_vec());
        assert_eq!(c.io(STRANGER, [io::OP_SEEK, a, 0, SEEK_CUR], b"").0, Ok(0));
        // Errors: nothing moves.
        let mut bad = Lender::new(vec![0x55; 2 * PAGE_BYTES]);
        bad.unmapped = PAGE_BYTES + 1..PAGE_BYTES + 2;
        let r = c.io_lent(STRANGER, [io::OP_PWRITE, h, 2 * PAGE_BYTES as u64, 0], b"", &mut bad).0;
        assert_eq!(r, Err(EFAULT));
        assert_eq!(c.io(STRANGER, [io::OP_PREAD, h, 4, 0], b"").2, b"0123".to_vec());
        assert_eq!(c.io(STRANGER, [io::OP_PREAD, h, 1, i64::MAX as u64 + 1], b"").0, Err(EINVAL));
        assert_eq!(c.io(STRANGER, [io::OP_PWRITE, h, 1, u64::MAX], b"x").0, Err(EINVAL));
        assert_eq!(c.io(STRANGER, [io::OP_PREAD, a, 1, 0], b"").0, Err(EBADF), "write-only");
        let r = c.fs(STARTER, [fsp::OP_OPEN, O_RDONLY, 0, 0], b"/tmp/p").0.unwrap();
        assert_eq!(c.io(STRANGER, [io::OP_PWRITE, r, 1, 0], b"x").0, Err(EBADF), "read-only");
        for op in [io::OP_PREAD, io::OP_PWRITE] {
            assert_eq!(c.io(STRANGER, [op, h ^ (1 << 33), 1, 0], b"x").0, Err(EBADF), "op {op}");
            assert_eq!(c.io(STRANGER, [op, h ^ (1 << 33), 1, u64::MAX], b"x").0, Err(EBADF), "op {op}");
        }
        let d = c.fs(STARTER, [fsp::OP_OPEN, O_RDONLY | O_DIRECTORY, 0, 0], b"/tmp").0.unwrap();
        assert_eq!(c.io(STRANGER, [io::OP_PREAD, d, 1, 0], b"").0, Err(EISDIR));
        assert_eq!(here(&mut c), Ok(3));
        // /dev/null: nothing to read, every byte written taken.
        let (r, _, _) = c.fs(STARTER, [device::OP_OPEN, O_RDWR, 0, 0], b"");
        let null = r.unwrap();
        assert_eq!(c.io(STRANGER, [io::OP_PREAD, null, 8, 100], b"").0, Ok(0));
        assert_eq!(c.io(STRANGER, [io::OP_PWRITE, null, 3, 100], b"abc").0, Ok(3));
    }
}
