//! Nanoseconds since boot without a kernel entry per reading: the time-stamp
//! counter since the kernel's uptime 0, at the frequency the kernel
//! calibrated, computed exactly as the kernel computes `UptimeNs` (so a
//! stamp made here is never ahead of, or behind, another process's
//! `clock_ns`). For servers that stamp every request (file modification
//! times, with [`Clock::realtime_ns`], the calendar time).

use crate::sys;
use abi::InfoKey;

pub struct Clock {
    boot_tsc: u64,
    tsc_hz: u64,
    /// The calendar time of uptime 0 (`InfoKey::BootRealtimeNs`).
    boot_realtime_ns: u64,
}

impl Clock {
    pub fn new() -> Clock {
        Clock {
            boot_tsc: sys::info(InfoKey::BootTsc),
            tsc_hz: sys::info(InfoKey::TscHz),
            boot_realtime_ns: sys::info(InfoKey::BootRealtimeNs),
        }
    }

    /// Nanoseconds since 1970-01-01 00:00 UTC (the same as
    /// `unix::clock_realtime_ns`): what file times are stamped with.
    pub fn realtime_ns(&self) -> u64 {
        self.boot_realtime_ns.saturating_add(self.now_ns())
    }

    /// The calendar time (as [`Clock::realtime_ns`]) at `uptime_ns` since
    /// boot (a reading of [`Clock::now_ns`]): one reading serves both.
    pub fn realtime_at(&self, uptime_ns: u64) -> u64 {
        self.boot_realtime_ns.saturating_add(uptime_ns)
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
