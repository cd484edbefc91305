//! The health check after each batch: every server gets a well-formed
//! request and must answer it as it should. Run by a forked child of the
//! coordinator (as root), which tells the coordinator which check it is
//! on before each, so a server that hangs is named by the check the
//! coordinator sees last.

use crate::report::{CHECKING, Report};
use alloc::format;
use alloc::string::String;
use protocols::unix::{self as ux, errno, fs, monitor, open_flags as of, vm};
use runtime::msg::{self, Link, Queue};
use runtime::{sys, unix};

type CheckResult = Result<(), String>;
/// A check: its name, and the function that makes it.
pub type Check = (&'static str, fn() -> CheckResult);

/// (name, check). The names are what a failure reports.
pub const CHECKS: &[Check] = &[
    ("monitor answers OP_STATS", monitor_stats),
    ("memfs answers fs::OP_STATS", memfs_stats),
    ("memfs writes and reads back a file in /tmp", tmp_file),
    ("vm answers OP_STATS", vm_stats),
    ("tty answers fstat of standard output", tty_fstat),
    ("console answers OP_STATS", console_stats),
    ("a new pipe carries bytes", new_pipe),
    ("ext2fs writes and reads back a file in /disk", disk_file),
    ("virtio-blk reads block 0 of /dev/vda", vda_read),
    ("ramdisk reads block 0 of /dev/ram0", ram0_read),
    ("net answers its statistics", net_stats),
    ("fork, exec /bin/true and wait", fork_exec),
];

fn bootstrap(slot: u64, what: &str) -> Result<Link, String> {
    let (pid, queue) = sys::bootstrap(slot).ok_or_else(|| format!("no bootstrap connection to {what}"))?;
    msg::open_link(pid, Queue(queue)).map_err(|e| format!("link to {what}: {}", e.name()))
}

/// One call on a fresh link; Ok(words) when the server answered, whatever
/// it answered.
fn answer(slot: u64, what: &str, request: [u64; 4]) -> Result<[u64; 4], String> {
    let link = bootstrap(slot, what)?;
    let r = msg::call(link, &request, &[], &mut [0u8; 256]);
    let _ = msg::close_link(link);
    r.map(|(w, _)| w).map_err(|e| format!("{what}: {}", e.name()))
}

fn ok_answer(slot: u64, what: &str, request: [u64; 4]) -> CheckResult {
    let w = answer(slot, what, request)?;
    ux::result(w[0]).map(|_| ()).map_err(|e| format!("{what} answered {}", errno::name(e)))
}

fn monitor_stats() -> CheckResult {
    ok_answer(abi::bootstrap::MONITOR, "the monitor", [monitor::OP_STATS, 0, 0, 0])
}

fn memfs_stats() -> CheckResult {
    ok_answer(abi::bootstrap::FS, "memfs", [fs::OP_STATS, 0, 0, 0])
}

fn vm_stats() -> CheckResult {
    // Any answer will do: who may read vm's statistics is vm's business.
    answer(abi::bootstrap::VM, "vm", [vm::OP_STATS, 0, 0, 0]).map(|_| ())
}

fn console_stats() -> CheckResult {
    answer(abi::bootstrap::CONSOLE, "the console", [protocols::console::OP_STATS, 0, 0, 0]).map(|_| ())
}

fn tty_fstat() -> CheckResult {
    unix::fstat(1).map(|_| ()).map_err(|e| format!("fstat(1): {}", errno::name(e)))
}

fn write_read(path: &str) -> CheckResult {
    let name = |e| format!("{path}: {}", errno::name(e));
    let fd = unix::open(path, of::O_RDWR | of::O_CREAT | of::O_TRUNC, 0o644).map_err(name)?;
    let bytes = b"sfuzz health check: these bytes come back";
    let result = (|| {
        if unix::write(fd, bytes).map_err(name)? != bytes.len() {
            return Err(format!("{path}: a short write"));
        }
        unix::lseek(fd, 0, unix::SEEK_SET).map_err(name)?;
        let mut back = [0u8; 64];
        let n = unix::read(fd, &mut back).map_err(name)?;
        if &back[..n] != bytes { Err(format!("{path}: read back {n} other bytes")) } else { Ok(()) }
    })();
    // The close and the unlink are checked too: ignored, a failed one left
    // the file (or its handle) for the final leak check to find.
    let closed = unix::close(fd);
    let removed = unix::unlink(path);
    result?;
    closed.map_err(|e| format!("close of {path}: {}", errno::name(e)))?;
    removed.map_err(|e| format!("unlink of {path}: {}", errno::name(e)))
}

fn tmp_file() -> CheckResult {
    write_read(&format!("/tmp/sfuzz.check.{}", unix::getpid()))
}

fn disk_file() -> CheckResult {
    write_read(&format!("/disk/sfuzz.check.{}", unix::getpid()))
}

fn new_pipe() -> CheckResult {
    let (r, w) = unix::pipe().map_err(|e| format!("pipe: {}", errno::name(e)))?;
    let result = (|| {
        unix::write(w, b"ping").map_err(|e| format!("pipe write: {}", errno::name(e)))?;
        let mut back = [0u8; 4];
        let n = unix::read(r, &mut back).map_err(|e| format!("pipe read: {}", errno::name(e)))?;
        if &back[..n] == b"ping" { Ok(()) } else { Err(format!("the pipe gave {:?}", &back[..n])) }
    })();
    let _ = unix::close(r);
    let _ = unix::close(w);
    result
}

fn block_read(path: &str) -> CheckResult {
    let fd = unix::open(path, of::O_RDONLY, 0).map_err(|e| format!("{path}: {}", errno::name(e)))?;
    let mut block = [0u8; 512];
    let r = unix::read(fd, &mut block);
    let _ = unix::close(fd);
    match r {
        Ok(512) => Ok(()),
        Ok(n) => Err(format!("{path}: read {n} bytes of 512")),
        Err(e) => Err(format!("{path}: {}", errno::name(e))),
    }
}

fn vda_read() -> CheckResult {
    block_read("/dev/vda")
}

fn ram0_read() -> CheckResult {
    block_read("/dev/ram0")
}

fn net_stats() -> CheckResult {
    unix::socket::net_stats().map(|_| ()).map_err(|e| format!("net statistics: {}", errno::name(e)))
}

fn fork_exec() -> CheckResult {
    match unix::fork() {
        Ok(0) => {
            let e = unix::execv("/bin/true", &["true"]);
            let _ = e;
            unix::exit(100);
        }
        Ok(child) => match unix::waitpid(child as i64, false) {
            Ok(Some((_, status))) if status.exit_code() == Some(0) => Ok(()),
            other => Err(format!("/bin/true ended {other:?}")),
        },
        Err(e) => Err(format!("fork: {}", errno::name(e))),
    }
}

/// Run the checks whose bit is set in `present`, telling the coordinator
/// before each; exit status 0, or 10 + the index of the check that failed
/// (after printing why).
pub fn run(present: u64, report: &Report) -> i32 {
    let Ok(to_coordinator) = msg::open_link(report.pid, report.queue) else { return 5 };
    for (i, (name, check)) in CHECKS.iter().enumerate() {
        if present & (1 << i) == 0 {
            continue;
        }
        let _ = msg::send(to_coordinator, &[CHECKING, i as u64, 0, 0]);
        if let Err(why) = check() {
            runtime::println!("sfuzz: check failed: {name}: {why}");
            return 10 + i as i32;
        }
    }
    0
}

/// Which checks pass before any fuzzing (the others test something this
/// boot does not have: no disk, no network card): their bits.
pub fn present() -> u64 {
    CHECKS
        .iter()
        .enumerate()
        .fold(0, |bits, (i, (_, check))| if check().is_ok() { bits | 1 << i } else { bits })
}
