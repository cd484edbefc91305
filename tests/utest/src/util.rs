//! Helpers shared by the tests: error checks with readable reasons,
//! fork-and-wait, whole reads and writes, scratch directories, a
//! deterministic byte stream, and the servers' statistics.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Debug;
use core::sync::atomic::{AtomicU64, Ordering};
use protocols::unix::{self as ux, errno, fs, monitor, open_flags};
use runtime::msg::{self, Link, Queue};
use runtime::sys;
use runtime::unix::{self, Errno, Fd, WaitStatus};

pub type TestResult = Result<(), String>;

/// Bytes of a page, for tests that touch memory page by page.
pub const PAGE_BYTES: usize = abi::layout::PAGE_SIZE as usize;
/// The most data one message carries: a read or write of this size is one
/// call to the object's manager.
pub const MESSAGE_DATA_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize;

/// `ensure!(cond, "format", args…)`: fail the test with the message.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(alloc::format!($($fmt)+));
        }
    };
}

/// A runtime error as a test failure that says what was being done.
pub trait Context<T> {
    fn ctx(self, what: &str) -> Result<T, String>;
}

impl<T> Context<T> for Result<T, Errno> {
    fn ctx(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what}: {}", e.name()))
    }
}

/// `r` must have failed with `want`.
pub fn expect_errno<T: Debug>(r: Result<T, Errno>, want: Errno, what: &str) -> TestResult {
    match r {
        Err(e) if e == want => Ok(()),
        Err(e) => Err(format!("{what}: got {}, expected {}", e.name(), errno::name(want))),
        Ok(v) => Err(format!("{what}: succeeded with {v:?}, expected {}", errno::name(want))),
    }
}

// --- processes ---

/// Fork; the child runs `f` and exits with what it returns. The parent
/// gets the child's pid.
pub fn spawn<F: FnOnce() -> i32>(f: F) -> Result<u64, String> {
    match unix::fork() {
        Ok(0) => {
            let code = f();
            unix::exit(code)
        }
        Ok(pid) => Ok(pid),
        Err(e) => Err(format!("fork: {}", e.name())),
    }
}

/// Wait for child `pid` (blocking).
pub fn wait_for(pid: u64) -> Result<WaitStatus, String> {
    match unix::waitpid(pid as i64, false) {
        Ok(Some((got, status))) if got == pid => Ok(status),
        Ok(Some((got, _))) => Err(format!("waitpid({pid}) returned pid {got}")),
        Ok(None) => Err(format!("waitpid({pid}) without WNOHANG returned nothing")),
        Err(e) => Err(format!("waitpid({pid}): {}", e.name())),
    }
}

pub fn describe(status: &WaitStatus) -> String {
    match (status.exit_code(), status.signal()) {
        (Some(code), _) => format!("exited with {code}"),
        (None, Some(sig)) => format!("was ended by signal {sig}"),
        _ => format!("ended with raw status {:#x}", status.raw),
    }
}

pub fn expect_exit(pid: u64, code: u32) -> TestResult {
    let status = wait_for(pid)?;
    ensure!(status.exit_code() == Some(code), "child {pid} {}, expected exit code {code}", describe(&status));
    Ok(())
}

pub fn expect_signal(pid: u64, sig: u64) -> TestResult {
    let status = wait_for(pid)?;
    ensure!(status.signal() == Some(sig), "child {pid} {}, expected signal {sig}", describe(&status));
    ensure!(status.exit_code().is_none(), "a signalled child must have no exit code");
    Ok(())
}

/// Run `f` in a forked child. A failure's text comes back through a pipe,
/// so checks that change the process (its user id, its descriptors, its
/// break) leave the test runner untouched.
pub fn in_child<F: FnOnce() -> TestResult>(f: F) -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe for the child's report")?;
    let pid = spawn(move || {
        let _ = unix::close(r);
        match f() {
            Ok(()) => 0,
            Err(why) => {
                let _ = write_all(w, why.as_bytes());
                1
            }
        }
    });
    let _ = unix::close(w);
    let pid = match pid {
        Ok(p) => p,
        Err(e) => {
            let _ = unix::close(r);
            return Err(e);
        }
    };
    let report = read_to_end(r);
    let _ = unix::close(r);
    let status = wait_for(pid)?;
    let text = match report {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => format!("(reading the child's report: {})", e.name()),
    };
    match status.exit_code() {
        Some(0) if text.is_empty() => Ok(()),
        Some(0) => Err(format!("the child passed but reported: {text}")),
        _ if !text.is_empty() => Err(text),
        _ => Err(format!("the child {}", describe(&status))),
    }
}

/// This process's children in the monitor's table, as (pid, state).
pub fn children() -> Result<Vec<(u64, u8)>, String> {
    let me = unix::getpid();
    let table = unix::ps().ctx("ps")?;
    Ok(table.iter().filter(|p| p.ppid == me).map(|p| (p.pid, p.state)).collect())
}

/// Whether `pid` is in the process table at all.
pub fn in_process_table(pid: u64) -> Result<Option<u8>, String> {
    let table = unix::ps().ctx("ps")?;
    Ok(table.iter().find(|p| p.pid == pid).map(|p| p.state))
}

/// Poll (sleeping `step_ms` between tries, at most `tries` times) until
/// `done` holds. For events another process causes asynchronously; the
/// bound only keeps a broken system from hanging the run.
pub fn poll_until(
    tries: u32,
    step_ms: u64,
    mut done: impl FnMut() -> Result<bool, String>,
) -> Result<bool, String> {
    for _ in 0..tries {
        if done()? {
            return Ok(true);
        }
        unix::sleep_ns(step_ms * 1_000_000);
    }
    done()
}

// --- descriptors ---

pub fn write_all(fd: Fd, bytes: &[u8]) -> Result<(), Errno> {
    let mut done = 0;
    while done < bytes.len() {
        let n = unix::write(fd, &bytes[done..])?;
        if n == 0 {
            return Err(errno::EIO);
        }
        done += n;
    }
    Ok(())
}

/// Read until end of file.
pub fn read_to_end(fd: Fd) -> Result<Vec<u8>, Errno> {
    let mut out = Vec::new();
    let mut buf = [0u8; MESSAGE_DATA_BYTES];
    loop {
        let n = unix::read(fd, &mut buf)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// Read exactly `buf.len()` bytes (a pipe returns what it has per call).
/// Up to `n` bytes, fewer only at end of file.
pub fn read_some(fd: Fd, n: usize) -> Result<Vec<u8>, Errno> {
    let mut out = alloc::vec![0u8; n];
    let mut filled = 0;
    while filled < n {
        match unix::read(fd, &mut out[filled..])? {
            0 => break,
            got => filled += got,
        }
    }
    out.truncate(filled);
    Ok(out)
}

pub fn read_exact(fd: Fd, buf: &mut [u8]) -> Result<(), String> {
    let mut done = 0;
    while done < buf.len() {
        let n = unix::read(fd, &mut buf[done..]).ctx("read")?;
        ensure!(n > 0, "end of file after {done} of {} bytes", buf.len());
        done += n;
    }
    Ok(())
}

/// The whole contents of the file at `path`.
pub fn file_contents(path: &str) -> Result<Vec<u8>, String> {
    let fd = unix::open(path, open_flags::O_RDONLY, 0).ctx(&format!("open {path}"))?;
    let r = read_to_end(fd).ctx(&format!("read {path}"));
    let _ = unix::close(fd);
    r
}

/// Create (or truncate) `path` with `bytes` in it.
pub fn make_file(path: &str, bytes: &[u8], mode: u32) -> TestResult {
    let fd = unix::creat(path, mode).ctx(&format!("creat {path}"))?;
    let r = write_all(fd, bytes).ctx(&format!("write {path}"));
    unix::close(fd).ctx(&format!("close {path}"))?;
    r
}

/// Text of a number, for passing through pipes and argument lists.
pub fn parse_u64(bytes: &[u8]) -> Option<u64> {
    core::str::from_utf8(bytes).ok()?.trim().parse().ok()
}

// --- scratch directories ---

/// The test runner's pid (set once at start; forked children keep it).
pub static RUNNER_PID: AtomicU64 = AtomicU64::new(0);

/// The root of this run's files: `/tmp/utest.<runner pid>`.
pub fn scratch_root() -> String {
    format!("/tmp/utest.{}", RUNNER_PID.load(Ordering::Relaxed))
}

/// A fresh directory for test `name` under the scratch root.
pub fn scratch(name: &str) -> Result<String, String> {
    let dir = format!("{}/{name}", scratch_root());
    if unix::stat(&dir).is_ok() {
        remove_tree(&dir)?;
    }
    unix::mkdir(&dir, 0o755).ctx(&format!("mkdir {dir}"))?;
    Ok(dir)
}

/// `rm -r path`.
pub fn remove_tree(path: &str) -> TestResult {
    let st = unix::stat(path).ctx(&format!("stat {path}"))?;
    if !ux::mode::is_dir(st.mode) {
        return unix::unlink(path).ctx(&format!("unlink {path}"));
    }
    for entry in unix::read_dir(path).ctx(&format!("read_dir {path}"))? {
        if entry.name == "." || entry.name == ".." {
            continue;
        }
        remove_tree(&format!("{path}/{}", entry.name))?;
    }
    unix::rmdir(path).ctx(&format!("rmdir {path}"))
}

// --- a deterministic byte stream ---

/// xorshift64*: the same seed gives the same bytes in every process.
#[derive(Clone)]
pub struct Stream(u64);

impl Stream {
    pub fn new(seed: u64) -> Stream {
        Stream(seed | 1)
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            let v = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// FNV-1a, 64 bits: the checksum of what went through a pipe.
#[derive(Clone, Copy)]
pub struct Fnv(pub u64);

impl Fnv {
    pub fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    pub fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

// --- the servers' statistics ---

fn bootstrap_link(slot: u64, what: &str) -> Result<Link, String> {
    let (pid, queue) =
        sys::bootstrap(slot).ok_or_else(|| format!("no bootstrap connection to the {what}"))?;
    msg::open_link(pid, Queue(queue)).map_err(|e| format!("link to the {what}: {}", e.name()))
}

/// The monitor's `OP_STATS`: (requests, forks, execs, open-file descriptions in use).
pub fn monitor_stats() -> Result<[u64; 4], String> {
    let link = bootstrap_link(abi::bootstrap::MONITOR, "monitor")?;
    let r = msg::call(link, &[monitor::OP_STATS, 0, 0, 0], &[], &mut []);
    let _ = msg::close_link(link);
    let (w, _) = r.map_err(|e| format!("monitor OP_STATS: {}", e.name()))?;
    ux::result(w[0]).map_err(|e| format!("monitor OP_STATS: {}", errno::name(e)))?;
    Ok(w)
}

/// Open-file descriptions the monitor holds for every process.
pub fn open_descriptions() -> Result<u64, String> {
    monitor_stats().map(|w| w[3])
}

/// memfs's `fs::OP_STATS`: (files, directories, bytes stored, handles open).
pub fn memfs_stats() -> Result<[u64; 4], String> {
    let link = bootstrap_link(abi::bootstrap::FS, "directory manager")?;
    let r = msg::call(link, &[fs::OP_STATS, 0, 0, 0], &[], &mut []);
    let _ = msg::close_link(link);
    let (w, _) = r.map_err(|e| format!("memfs OP_STATS: {}", e.name()))?;
    ux::result(w[0]).map_err(|e| format!("memfs OP_STATS refused to a UNIX program: {}", errno::name(e)))?;
    Ok(w)
}

/// Free kernel memory once it has stopped changing (the same for 300 ms):
/// pages of ended processes (pipe managers end on their own after their
/// last close) come back asynchronously. Returns early once it equals
/// `target`.
pub fn settled_free_memory(target: Option<u64>) -> u64 {
    let mut last = sys::info(abi::InfoKey::FreeMemoryBytes);
    let mut same = 0;
    for _ in 0..400 {
        unix::sleep_ns(10_000_000);
        let now = sys::info(abi::InfoKey::FreeMemoryBytes);
        if Some(now) == target {
            return now;
        }
        same = if now == last { same + 1 } else { 0 };
        last = now;
        if same >= 30 {
            break;
        }
    }
    last
}
