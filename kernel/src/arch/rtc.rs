//! The CMOS real-time clock (MC146818, I/O ports 0x70/0x71), read once at
//! boot so the system knows the calendar time: the kernel keeps the
//! calendar time of uptime 0 ([`boot_realtime_ns`]) and processes add the
//! monotonic clock to it (`abi::InfoKey::BootRealtimeNs`). The register
//! arithmetic is `kernel_core::rtc`, tested on the host.
//!
//! What it is not: a driver that sets the clock, takes its interrupts or
//! follows it after boot; the TSC-based uptime is the one running clock.
//!
//! Invariant: only [`read_at_boot`] touches ports 0x70/0x71, once, on the
//! boot CPU before the other CPUs start.

use super::apic;
use super::cpu::{inb, outb};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel_core::rtc::RtcRegisters;

const PORT_INDEX: u16 = 0x70;
const PORT_DATA: u16 = 0x71;
const REG_STATUS_A: u8 = 0x0a;
const REG_STATUS_B: u8 = 0x0b;
/// The IBM PC/AT century register (QEMU's too).
const REG_CENTURY: u8 = 0x32;
/// Status A: an update of the time registers is under way (they may be
/// inconsistent for up to 2 ms; MC146818 data sheet, "UIP").
const STATUS_A_UPDATING: u8 = 1 << 7;
/// Reads tried before giving up on a clock that never holds still.
const MAX_TRIES: usize = 1000;

static BOOT_REALTIME_NS: AtomicU64 = AtomicU64::new(0);

fn read_reg(reg: u8) -> u8 {
    // SAFETY: ports 0x70/0x71 are the CMOS index and data ports of every
    // PC; selecting a register and reading it changes no other state, and
    // only this module uses them (see the invariant above). Bit 7 of the
    // index (NMI disable) is left clear.
    unsafe {
        outb(PORT_INDEX, reg);
        inb(PORT_DATA)
    }
}

fn read_all() -> RtcRegisters {
    RtcRegisters {
        seconds: read_reg(0x00),
        minutes: read_reg(0x02),
        hours: read_reg(0x04),
        day: read_reg(0x07),
        month: read_reg(0x08),
        year: read_reg(0x09),
        century: read_reg(REG_CENTURY),
        status_b: read_reg(REG_STATUS_B),
    }
}

/// Read the clock (waiting out an update, and reading until two readings
/// agree, as OSDev's "CMOS" page and Linux's `mc146818_get_time` do) and
/// remember the calendar time of uptime 0. Returns the Unix seconds read,
/// or `None` (the wall clock then stays at 0 = 1970, as before there was
/// one) when the chip gives nonsense.
pub fn read_at_boot() -> Option<i64> {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::AcqRel) {
        return None;
    }
    let mut previous: Option<RtcRegisters> = None;
    for _ in 0..MAX_TRIES {
        if read_reg(REG_STATUS_A) & STATUS_A_UPDATING != 0 {
            continue;
        }
        let now = read_all();
        let uptime_ns = apic::uptime_ns();
        if previous == Some(now) {
            let secs = now.unix_seconds()?;
            let ns = u64::try_from(secs).ok()?.checked_mul(1_000_000_000)?;
            BOOT_REALTIME_NS.store(ns.saturating_sub(uptime_ns), Ordering::Relaxed);
            return Some(secs);
        }
        previous = Some(now);
    }
    None
}

/// Nanoseconds since 1970-01-01 00:00 UTC at uptime 0 (whole seconds as
/// the RTC counts them), or 0 when there is no calendar clock.
pub fn boot_realtime_ns() -> u64 {
    BOOT_REALTIME_NS.load(Ordering::Relaxed)
}
