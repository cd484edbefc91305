//! `set_affinity` (abi::Call::SetAffinity): a pinned process runs on its
//! CPU only, whether it pinned itself while running elsewhere or was
//! pinned before it started; who may pin whom, and the CPUs that are
//! refused. The network server pins its stack to `net.cpu` with it (seed
//! 003's designated CPU).
//!
//! Each reading of the CPU follows a yield or a short sleep, so the
//! process is dispatched anew before it: without the pin, the wake-up
//! after a sleep goes to whichever CPU is idle.

use crate::foreign::module;
use crate::util::{TestResult, check, expect_status};
use abi::{Error, ExitStatus, InfoKey, Pid};
use alloc::format;
use runtime::sys;

/// Readings per check.
const ROUNDS: u64 = 200;

pub fn affinity_pins_a_process() -> TestResult {
    let cpus = sys::info(InfoKey::CpusOnline);
    check(
        sys::set_affinity(Pid(0), Some(cpus)) == Err(Error::InvalidArgument),
        "a CPU past the last is refused",
    )?;
    check(
        sys::set_affinity(Pid(0), Some(u64::MAX - 1)) == Err(Error::InvalidArgument),
        "CPU 2^64-2 is refused",
    )?;
    let gone = sys::spawn("tchild", "exit 0").map_err(|e| e.name())?;
    sys::wait(Some(gone)).map_err(|e| e.name())?;
    check(sys::set_affinity(gone, Some(0)) == Err(Error::NoSuchProcess), "a process that ended")?;

    // The runner itself, moved from CPU to CPU while it runs.
    for cpu in (0..cpus).rev() {
        sys::set_affinity(Pid(0), Some(cpu)).map_err(|e| format!("pin to {cpu}: {}", e.name()))?;
        for i in 0..ROUNDS {
            let now = sys::info(InfoKey::CurrentCpu);
            if now != cpu {
                let _ = sys::set_affinity(Pid(0), None);
                return Err(format!("pinned to CPU {cpu}, reading {i} was on CPU {now}"));
            }
            if i % 16 == 0 { sys::sleep_ns(100_000) } else { sys::yield_now() }
        }
    }
    sys::set_affinity(Pid(0), None).map_err(|e| e.name())?;

    // Another process, pinned (with the right) before it starts.
    let elf = module("tchild")?;
    let mut name = [0u8; 32];
    name[..6].copy_from_slice(b"tchild");
    for cpu in [0, cpus - 1] {
        let pid = sys::proc_create("tchild").map_err(|e| e.name())?;
        sys::proc_exec(pid, &elf, format!("cpus-seen {ROUNDS}").as_bytes(), &name).map_err(|e| e.name())?;
        sys::set_affinity(pid, Some(cpu)).map_err(|e| format!("pin child: {}", e.name()))?;
        sys::proc_start(pid).map_err(|e| e.name())?;
        let (_, status) = sys::wait(Some(pid)).map_err(|e| e.name())?;
        let want = ExitStatus::Exited(1 << cpu);
        check(status == want, &format!("child pinned to CPU {cpu} ended {status:?}, not {want:?}"))?;
    }

    // Without the right: itself yes, its parent no.
    expect_status("affinity-rules", ExitStatus::Exited(0))
}
