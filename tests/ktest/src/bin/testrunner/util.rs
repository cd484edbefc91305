//! Helpers every group of tests uses: the result type, running `tchild`
//! in a role and checking how it ended, and the runner's two queues.

use abi::ExitStatus;
use alloc::format;
use alloc::string::String;
use runtime::msg::Queue;
use runtime::sys;

pub type TestResult = Result<(), String>;

/// The runner's queue 0: every tmsg child's messages and servers' READY
/// arrive here (`main` opens it before the first test).
pub const MAIN_QUEUE: Queue = Queue(protocols::STARTER_QUEUE);
/// The runner's queue for pipe and file managers' READY (their starter,
/// the monitor, takes them on its queue 1).
pub const MANAGER_QUEUE: Queue = Queue(protocols::unix::monitor::START_QUEUE);
/// The most data one message carries, as a buffer length.
pub const MAX_DATA: usize = abi::msg::MAX_DATA_BYTES as usize;

/// Start tchild with `args` and wait for it.
pub fn run(args: &str) -> Result<ExitStatus, String> {
    run_with_rights(args, 0)
}

/// [`run`] with `abi::rights` (the runner, as init, holds them all).
pub fn run_with_rights(args: &str, rights: u64) -> Result<ExitStatus, String> {
    let pid = sys::spawn_with_rights("tchild", args, abi::PRIORITY_INHERIT, rights)
        .map_err(|e| format!("spawn tchild {args}: {}", e.name()))?;
    let (got, status) = sys::wait(Some(pid)).map_err(|e| format!("wait: {}", e.name()))?;
    if got != pid {
        return Err(format!("wait returned {:#x}, expected {:#x}", got.0, pid.0));
    }
    Ok(status)
}

pub fn expect_status(args: &str, want: ExitStatus) -> TestResult {
    expect_status_with_rights(args, 0, want)
}

/// [`expect_status`] for a tchild holding `rights`.
pub fn expect_status_with_rights(args: &str, rights: u64, want: ExitStatus) -> TestResult {
    let got = run_with_rights(args, rights)?;
    if got == want { Ok(()) } else { Err(format!("tchild {args}: ended {got:?}, expected {want:?}")) }
}

pub fn expect_fault(args: &str, want_vector: u8) -> Result<u64, String> {
    match run(args)? {
        ExitStatus::Fault { vector, address } if vector == want_vector => Ok(address),
        other => Err(format!("tchild {args}: ended {other:?}, expected fault vector {want_vector}")),
    }
}

pub fn check(cond: bool, what: &str) -> TestResult {
    if cond { Ok(()) } else { Err(String::from(what)) }
}
