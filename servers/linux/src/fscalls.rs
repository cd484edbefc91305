//! Descriptor bookkeeping Linux has and Ridgeback's UNIX calls do not, kept
//! by this server for its program: the path of each descriptor it opened
//! (so a directory descriptor can be the `dirfd` of the `*at` calls and of
//! `fchdir`), close-on-exec flags (`O_CLOEXEC`, `FD_CLOEXEC`, honoured at
//! `execve`); and `poll`/`ppoll`, `statx`.
//!
//! The monitor's descriptor table stays the truth for what is open; these
//! maps only add to it, and follow the program's `open`, `dup*`, `fcntl`,
//! `pipe2` and `close`. A directory descriptor the program did not open
//! itself (inherited across `execve`) has no path here: as a `dirfd` it is
//! `ENOSYS`, with one log line (docs/linux-abi.md).

use crate::calls::{AT_EMPTY_PATH, AT_FDCWD, Linux, O_CLOEXEC, Result, fd};
use crate::mem;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::net::{POLLIN, POLLOUT};
use protocols::unix::{Stat, errno, mode};
use runtime::unix;
use runtime::unix::socket::PollFd;

/// Most entries one `poll` takes; more is `EINVAL`, as Linux answers
/// beyond `RLIMIT_NOFILE` (4096 is a usual hard limit there). Entries may
/// repeat a descriptor, so the monitor's descriptor limit is not the
/// bound; this one keeps the server's copy of the array small (32 KiB).
const POLL_MAX_FDS: u64 = 4096;
/// `struct pollfd`: fd (i32), events (i16), revents (i16).
const POLLFD_BYTES: u64 = 8;
/// `struct statx` and the fields this server fills
/// (`STATX_BASIC_STATS`: type, mode, nlink, uid, gid, atime, mtime,
/// ctime, ino, size, blocks).
const STATX_BYTES: usize = 256;
const STATX_BASIC_STATS: u32 = 0x7ff;

impl Linux {
    /// `path` relative to the directory descriptor `dir` (`AT_FDCWD`: the
    /// working directory). An absolute `path` ignores `dir`, as on Linux.
    pub fn at_path(&mut self, dir: u64, path: &str) -> Result<String> {
        if path.is_empty() {
            return Err(errno::ENOENT);
        }
        if path.starts_with('/') || dir as i32 as i64 == AT_FDCWD {
            return Ok(String::from(path));
        }
        let base = self.dir_path(dir)?;
        Ok(format!("{}/{path}", base.trim_end_matches('/')))
    }

    /// The path of directory descriptor `dir`: `EBADF` if it is not open,
    /// `ENOTDIR` if it is not a directory.
    pub fn dir_path(&mut self, dir: u64) -> Result<String> {
        let f = fd(dir)?;
        let st = unix::fstat(f)?;
        if !mode::is_dir(st.mode) {
            return Err(errno::ENOTDIR);
        }
        match self.paths.get(&f) {
            Some(p) => Ok(p.clone()),
            None => {
                crate::log!("directory descriptor {f} has no known path (opened before exec): ENOSYS");
                Err(errno::ENOSYS)
            }
        }
    }

    /// An absolute spelling of `path` (the working directory asked of the
    /// monitor once per `chdir`).
    pub fn absolute(&mut self, path: &str) -> Result<String> {
        if path.starts_with('/') {
            return Ok(String::from(path));
        }
        if self.cwd.is_none() {
            self.cwd = Some(unix::getcwd()?);
        }
        let cwd = self.cwd.as_deref().unwrap_or("/");
        Ok(format!("{}/{path}", cwd.trim_end_matches('/')))
    }

    /// A descriptor was opened on `path` (absolute), with `flags`.
    pub fn opened(&mut self, f: i32, path: String, flags: u64) {
        self.paths.insert(f, path);
        self.set_cloexec(f, flags & O_CLOEXEC != 0);
    }

    /// `new` is a copy of `old` (`dup*`, `F_DUPFD*`).
    pub fn duplicated(&mut self, old: i32, new: i32, cloexec: bool) {
        self.dir_index.remove(&new);
        match self.paths.get(&old).cloned() {
            Some(p) => {
                self.paths.insert(new, p);
            }
            None => {
                self.paths.remove(&new);
            }
        }
        self.set_cloexec(new, cloexec);
    }

    /// `f` is closed.
    pub fn closed(&mut self, f: i32) {
        self.dir_index.remove(&f);
        self.paths.remove(&f);
        self.cloexec.remove(&f);
    }

    pub fn set_cloexec(&mut self, f: i32, on: bool) {
        if on {
            self.cloexec.insert(f);
        } else {
            self.cloexec.remove(&f);
        }
    }

    /// Before `execve`: close what is marked close-on-exec.
    pub fn close_on_exec(&mut self) {
        for f in core::mem::take(&mut self.cloexec) {
            let _ = unix::close(f);
        }
    }

    /// `fchdir(fd)`.
    pub fn fchdir(&mut self, f: u64) -> Result<u64> {
        let path = self.dir_path(f)?;
        unix::chdir(&path)?;
        self.cwd = Some(path);
        Ok(0)
    }

    /// `poll(fds, nfds, timeout)` (`timeout_ns` None: no end) and the
    /// waiting part of `ppoll`. A negative fd is left out (revents 0).
    pub fn poll(&mut self, at: u64, n: u64, timeout_ns: Option<u64>) -> Result<u64> {
        if n > POLL_MAX_FDS {
            return Err(errno::EINVAL);
        }
        let raw = mem::read(self.pid, at, (n * POLLFD_BYTES) as usize)?;
        let mut entries: Vec<PollFd> = raw
            .chunks_exact(POLLFD_BYTES as usize)
            .map(|e| PollFd {
                fd: i32::from_le_bytes([e[0], e[1], e[2], e[3]]),
                events: u16::from_le_bytes([e[4], e[5]]),
                revents: 0,
            })
            .collect();
        let active: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].fd >= 0).collect();
        let mut asked: Vec<PollFd> = active.iter().map(|&i| entries[i]).collect();
        let round = |asked: &mut Vec<PollFd>| -> Result<Option<usize>> {
            let ready = if asked.is_empty() { 0 } else { unix::poll(asked, Some(0))? };
            Ok((ready > 0).then_some(ready))
        };
        let ready = if timeout_ns == Some(0) {
            round(&mut asked)?.unwrap_or(0)
        } else if !self.sig.interruptible() {
            // Nothing can interrupt: the runtime's poll waits itself.
            if asked.is_empty() {
                unix::sleep_ns(timeout_ns.unwrap_or(u64::MAX));
                0
            } else {
                unix::poll(&mut asked, timeout_ns.map(|ns| ns.div_ceil(1_000_000)))?
            }
        } else {
            let deadline = timeout_ns.map(|ns| self.sig.now_ns().saturating_add(ns));
            match self.block_on(deadline, |_| round(&mut asked))? {
                Some(n) => n,
                None => {
                    asked.iter_mut().for_each(|p| p.revents = 0);
                    0
                }
            }
        };
        for (k, &i) in active.iter().enumerate() {
            // POLLIN/POLLOUT are also POLLRDNORM/POLLWRNORM to Linux.
            let mut r = asked[k].revents;
            if r & POLLIN != 0 && entries[i].events & 0x40 != 0 {
                r |= 0x40;
            }
            if r & POLLOUT != 0 && entries[i].events & 0x100 != 0 {
                r |= 0x100;
            }
            entries[i].revents = r;
        }
        let mut out = raw;
        for (i, e) in entries.iter().enumerate() {
            let at = i * POLLFD_BYTES as usize + 6;
            out[at..at + 2].copy_from_slice(&e.revents.to_le_bytes());
        }
        mem::write(self.pid, at, &out)?;
        Ok(ready as u64)
    }

    /// `ppoll(fds, nfds, tsp, sigmask, sigsetsize)`: `poll` with a
    /// timespec, and `sigmask` in force while it waits.
    pub fn ppoll(&mut self, at: u64, n: u64, tsp: u64, sigmask: u64, size: u64) -> Result<u64> {
        let timeout_ns = if tsp == 0 {
            None
        } else {
            let b = mem::read(self.pid, tsp, 16)?;
            let s = u64::from_le_bytes(b[..8].try_into().unwrap_or_default());
            let ns = u64::from_le_bytes(b[8..].try_into().unwrap_or_default());
            if (s as i64) < 0 || ns >= 1_000_000_000 {
                return Err(errno::EINVAL);
            }
            Some(s.saturating_mul(1_000_000_000).saturating_add(ns))
        };
        if sigmask != 0 {
            if size != 8 {
                return Err(errno::EINVAL);
            }
            let b = mem::read(self.pid, sigmask, 8)?;
            let m = u64::from_le_bytes(b[..8].try_into().unwrap_or_default());
            self.sig.suspended_mask = Some(self.sig.mask);
            self.sig.mask = m & !crate::signals::UNBLOCKABLE;
            self.sig.sync_monitor()?;
        }
        let r = self.poll(at, n, timeout_ns);
        if r != Err(errno::EINTR)
            && let Some(m) = self.sig.suspended_mask.take()
        {
            // Done without a handler: the mask of before, at once.
            self.sig.mask = m;
            self.sig.sync_monitor()?;
        }
        r
    }

    /// `statx(dirfd, path, flags, mask, buf)`: the basic fields.
    pub fn statx(&mut self, dir: u64, path: u64, flags: u64, buf: u64) -> Result<u64> {
        let p = mem::read_path(self.pid, path)?;
        let st = if p.is_empty() && flags & AT_EMPTY_PATH != 0 {
            unix::fstat(fd(dir)?)?
        } else {
            let full = self.at_path(dir, &p)?;
            unix::stat(&full)?
        };
        mem::write(self.pid, buf, &statx_bytes(&st))?;
        Ok(0)
    }
}

/// `struct statx` (Linux `include/uapi/linux/stat.h`) for `st`.
fn statx_bytes(st: &Stat) -> [u8; STATX_BYTES] {
    let mut b = [0u8; STATX_BYTES];
    let put32 =
        |b: &mut [u8; STATX_BYTES], at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let put64 =
        |b: &mut [u8; STATX_BYTES], at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    put32(&mut b, 0, STATX_BASIC_STATS);
    put32(&mut b, 4, abi::layout::PAGE_SIZE as u32);
    put32(&mut b, 16, st.nlink);
    put32(&mut b, 20, st.uid);
    put32(&mut b, 24, st.gid);
    b[28..30].copy_from_slice(&(st.mode as u16).to_le_bytes());
    put64(&mut b, 32, st.ino);
    put64(&mut b, 40, st.size_bytes);
    put64(&mut b, 48, st.size_bytes.div_ceil(512));
    // atime (64), ctime (96), mtime (112): the one time Ridgeback keeps.
    for at in [64, 96, 112] {
        put64(&mut b, at, st.mtime_ns / 1_000_000_000);
        put32(&mut b, at + 8, (st.mtime_ns % 1_000_000_000) as u32);
    }
    b
}
