//! Pagers: a user-level pager serving zero and copy-on-write pages, a
//! pager refusing a fault or dying under a faulting process, and the
//! rights a pager needs.

use crate::started::{Started, subject_priority};
use crate::util::{MAIN_QUEUE, TestResult, check, expect_status, run};
use abi::{ExitStatus, Pid, vector};
use alloc::format;
use alloc::string::String;
use runtime::{msg, sys};

fn start_pager() -> Result<Pid, String> {
    let me = sys::getpid();
    let pager = sys::spawn_with_priority("pager", &format!("{}", me.0), abi::DEFAULT_PRIORITY as u64 + 1)
        .map_err(|e| format!("spawn pager: {}", e.name()))?;
    let r = msg::receive_data(MAIN_QUEUE, &mut []).map_err(|e| e.name())?;
    check(r.sender == pager && r.message[0] == protocols::pager::READY, "the pager says it is ready")?;
    Ok(pager)
}

fn stop_pager(pager: Pid) -> TestResult {
    sys::kill(pager).map_err(|e| e.name())?;
    sys::wait(Some(pager)).map_err(|e| e.name())?;
    Ok(())
}

pub fn pager_serves() -> TestResult {
    let pager = start_pager()?;
    let result = expect_status(&format!("paged {}", pager.0), ExitStatus::Exited(0));
    stop_pager(pager)?;
    result
}

pub fn pager_refuses_and_dies() -> TestResult {
    let pager = start_pager()?;
    let refused = run(&format!("paged-refused {}", pager.0));
    let want = ExitStatus::Fault { vector: vector::PAGE_FAULT, address: 0x3000_0000 };
    // The child registers a region the pager never answers faults in and
    // touches it; once it waits in that fault (no sleep: until_blocked),
    // the pager dies under it, and the child must end too.
    let mut s = Started::new();
    s.hold_cpus()?;
    let stalled = s.spawn("tchild", &format!("paged-stalled {}", pager.0), subject_priority(), 0)?;
    s.until_blocked()?;
    stop_pager(pager)?;
    let status = s.wait(stalled)?;
    s.stop_hogs()?;
    check(refused? == want, "a refused fault ends the process with a page fault")?;
    check(status == want, "a process waiting on a pager that died ends with a page fault")
}

pub fn pager_rights() -> TestResult {
    // In a child, so the pages it maps do not stay with the runner.
    expect_status("pager-rights", ExitStatus::Exited(0))
}

/// A dead pager's shared pages in the read-window area read as zeros
/// (branch `posio`): the child maps two of its pager's pages, one there
/// and one elsewhere, kills the pager, and checks (`tchild rw-dead-pager`).
pub fn dead_pager_read_window_pages_read_zeros() -> TestResult {
    expect_status("rw-dead-pager", ExitStatus::Exited(0))
}
