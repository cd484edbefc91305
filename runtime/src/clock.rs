//! Nanoseconds since boot without a kernel entry per reading: the kernel's
//! uptime when the clock is made, advanced by the time-stamp counter (the
//! kernel calibrated its frequency at boot). For servers that stamp every
//! request (file modification times).

use crate::sys;
use abi::InfoKey;

pub struct Clock {
    base_ns: u64,
    base_tsc: u64,
    tsc_hz: u64,
}

impl Clock {
    pub fn new() -> Clock {
        let base_tsc = sys::rdtsc();
        Clock { base_ns: sys::info(InfoKey::UptimeNs), base_tsc, tsc_hz: sys::info(InfoKey::TscHz) }
    }

    /// Nanoseconds since boot (one kernel call if the TSC's rate is unknown).
    pub fn now_ns(&self) -> u64 {
        if self.tsc_hz == 0 {
            return sys::info(InfoKey::UptimeNs);
        }
        let ticks = sys::rdtsc().saturating_sub(self.base_tsc) as u128;
        let ns = ticks * 1_000_000_000 / self.tsc_hz as u128;
        self.base_ns.saturating_add(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}
