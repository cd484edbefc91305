//! Nanoseconds since boot without a kernel entry per reading: the time-stamp
//! counter since the kernel's uptime 0, at the frequency the kernel
//! calibrated, computed exactly as the kernel computes `UptimeNs` (so a
//! stamp made here is never ahead of, or behind, another process's
//! `clock_ns`). For servers that stamp every request (file modification
//! times).

use crate::sys;
use abi::InfoKey;

pub struct Clock {
    boot_tsc: u64,
    tsc_hz: u64,
}

impl Clock {
    pub fn new() -> Clock {
        Clock { boot_tsc: sys::info(InfoKey::BootTsc), tsc_hz: sys::info(InfoKey::TscHz) }
    }

    /// Nanoseconds since boot (one kernel call if the TSC's rate is unknown).
    pub fn now_ns(&self) -> u64 {
        if self.tsc_hz == 0 {
            return sys::info(InfoKey::UptimeNs);
        }
        // The kernel's formula (arch/apic.rs `uptime_ns`), to the nanosecond.
        let ticks = sys::rdtsc().wrapping_sub(self.boot_tsc) as u128;
        (ticks * 1_000_000_000 / self.tsc_hz as u128) as u64
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}
