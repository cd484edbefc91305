//! [`bench::Platform`] on Ridgeback: each call is one kernel call of the
//! runtime, and the kernel's event counters explain the figures.

use abi::{COUNTER_COUNT, COUNTER_NAMES, InfoKey};
use bench::{MAX_COUNTERS, Platform};
use runtime::sys;

/// Ridgeback as the benchmarks see it.
pub struct Ridgeback;

// One array of counters must fit in what a measurement records.
const _: () = assert!(COUNTER_COUNT <= MAX_COUNTERS);

impl Platform for Ridgeback {
    /// Calibrated by the kernel at boot (`InfoKey::TscHz`).
    fn tsc_hz() -> u64 {
        sys::info(InfoKey::TscHz)
    }

    fn getpid() -> u64 {
        sys::getpid().0
    }

    fn yield_now() {
        sys::yield_now()
    }

    fn write_stdout(bytes: &[u8]) {
        // The kernel console takes at most MAX_DEBUG_WRITE_BYTES at once;
        // the harness's lines are far shorter.
        let _ = sys::debug_write(bytes);
    }

    fn read_counters(values: &mut [u64; MAX_COUNTERS]) -> &'static [&'static str] {
        match sys::counters(&mut values[..COUNTER_COUNT]) {
            Ok(count) => &COUNTER_NAMES[..count.min(COUNTER_COUNT)],
            Err(_) => &[],
        }
    }
}
