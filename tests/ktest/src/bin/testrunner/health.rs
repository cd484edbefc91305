//! The kernel's health after everything else: random arguments to every
//! kernel call must each get an answer, and at the very end the kernel must
//! still start programs and have every page it handed out back.
//!
//! Invariant: [`record_free_memory_at_start`] runs once, in `main`, before
//! the first test; [`kernel_healthy`] compares with it after the last.

use crate::util::{TestResult, check, expect_status};
use abi::{ExitStatus, InfoKey};
use alloc::format;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use runtime::sys;

/// Free memory before the first test, with the runner's own heap warm:
/// what the final check must find again.
static FREE_AT_START: AtomicU64 = AtomicU64::new(0);

/// Take the baseline of [`kernel_healthy`].
pub fn record_free_memory_at_start() {
    FREE_AT_START.store(settled_free_memory(), Ordering::Relaxed);
}

/// Free memory once every ended process's pages are back.
fn settled_free_memory() -> u64 {
    // Address spaces of ended processes are freed when no CPU has them
    // loaded any more; a short sleep lets every CPU pass through the kernel.
    sys::sleep_ns(SETTLE_STEP_NS);
    sys::info(InfoKey::FreeMemoryBytes)
}

/// One wait for the other CPUs to pass through the kernel.
const SETTLE_STEP_NS: u64 = 30_000_000;
/// How many such waits the final check allows for ended processes' pages
/// to come back (10 s in all). A vCPU of a loaded host may not run for
/// longer than one step, so one sleep is not proof of a leak; a page
/// that is still missing after all of them is.
const SETTLE_STEPS: u32 = 333;

/// Free memory once it is back to `start`, or, if it never comes back
/// within [`SETTLE_STEPS`], what it was at the last look.
fn free_memory_back_to(start: u64) -> u64 {
    let mut now = settled_free_memory();
    for _ in 1..SETTLE_STEPS {
        if now == start {
            break;
        }
        now = settled_free_memory();
    }
    now
}

/// Random arguments to every kernel call, from several processes at once
/// (several seeds, so on several CPUs): each must get an answer, and the
/// kernel must stay up (the next tests and the leak check run after).
/// Two of them make the blocking calls too (`tchild fuzz-blocking`: from
/// helpers it kills mid-call), so the final leak check also covers
/// processes killed while blocked in `Call`, `ReplyWait`, `WaitArmed`,
/// `Wait` and `Sleep`.
pub fn random_kernel_calls() -> TestResult {
    let mut pids = Vec::new();
    for seed in 1..=4u64 {
        pids.push(sys::spawn("tchild", &format!("fuzz 8000 {}", seed * 0x9e37_79b9)).map_err(|e| e.name())?);
    }
    for seed in 5..=6u64 {
        let args = format!("fuzz-blocking {BLOCKING_ROUNDS} {}", seed * 0x9e37_79b9);
        pids.push(sys::spawn("tchild", &args).map_err(|e| e.name())?);
    }
    for pid in pids {
        let (_, status) = sys::wait(Some(pid)).map_err(|e| e.name())?;
        check(status == ExitStatus::Exited(0), &format!("fuzzer {:#x} ended {status:?}", pid.0))?;
    }
    Ok(())
}

/// `proc_memory` (the soak's accounting) counts what a process touches:
/// a child touches 8 heap pages and checks its own counts grew by
/// exactly 8, and that the call refuses a slot past the table and a
/// buffer it cannot write.
pub fn proc_memory_counts_frames() -> TestResult {
    expect_status("proc-memory 8", ExitStatus::Exited(0))
}

/// Helpers each `fuzz-blocking` child starts and kills.
const BLOCKING_ROUNDS: u64 = 40;

pub fn kernel_healthy() -> TestResult {
    expect_status("exit 3", ExitStatus::Exited(3))?;
    // Pages come back when the ended processes' spaces are freed: wait
    // for that first, then count what is still shared.
    let start = FREE_AT_START.load(Ordering::Relaxed);
    let now = free_memory_back_to(start);
    let shared = sys::info(InfoKey::SharedFrames);
    check(shared == 0, &format!("{shared} frames still shared after every lender ended"))?;
    if now == start { Ok(()) } else { Err(format!("{start} bytes free at start, {now} now: pages leaked")) }
}
