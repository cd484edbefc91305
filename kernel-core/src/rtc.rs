//! The calendar clock: turning the PC's CMOS real-time clock registers into
//! seconds since 1970-01-01 00:00 UTC.
//!
//! The kernel reads the registers once at boot (`kernel/src/arch/rtc.rs`)
//! and keeps the calendar time of uptime 0; a process's wall clock is that
//! plus the monotonic clock (`abi::InfoKey::BootRealtimeNs`). This module
//! is only the arithmetic, so it is tested on the host.
//!
//! The register layout is the MC146818's (the PC/AT's RTC, which QEMU
//! emulates): seconds 0x00, minutes 0x02, hours 0x04, day of month 0x07,
//! month 0x08, year 0x09 (two digits), status B 0x0B, and the century at
//! 0x32 (the IBM PC/AT's choice; ACPI's FADT may name another, QEMU uses
//! 0x32). Status B bit 2 set means binary values, clear means BCD; bit 1
//! set means a 24-hour clock, clear means 12-hour with bit 7 of the hour
//! marking PM. The clock is taken to run in UTC (QEMU's default
//! `-rtc base=utc`), as Linux assumes on PCs unless told otherwise.
//!
//! What it is not: a time-zone or leap-second aware calendar; days are
//! 86 400 s, as in POSIX's "seconds since the Epoch" (XBD 4.16).

/// Status B: values are binary rather than BCD.
pub const STATUS_B_BINARY: u8 = 1 << 2;
/// Status B: the hour counts 0-23 rather than 1-12 with a PM flag.
pub const STATUS_B_24_HOUR: u8 = 1 << 1;
/// The PM flag of the hour register in 12-hour mode.
const HOUR_PM: u8 = 1 << 7;

/// The raw registers as read from the chip.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtcRegisters {
    pub seconds: u8,
    pub minutes: u8,
    pub hours: u8,
    pub day: u8,
    pub month: u8,
    pub year: u8,
    /// The century register (0x32), or 0 when there is none.
    pub century: u8,
    pub status_b: u8,
}

fn from_bcd(v: u8) -> Option<u8> {
    let (hi, lo) = (v >> 4, v & 0xf);
    (hi <= 9 && lo <= 9).then_some(hi * 10 + lo)
}

/// A civil date and time in UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CivilTime {
    pub year: i64,
    /// 1-12.
    pub month: u32,
    /// 1-31.
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

impl RtcRegisters {
    /// The date and time the registers hold, or `None` when a value is out
    /// of range (a chip without a battery, garbage BCD).
    pub fn civil(&self) -> Option<CivilTime> {
        let binary = self.status_b & STATUS_B_BINARY != 0;
        let decode = |v: u8| if binary { Some(v) } else { from_bcd(v) };
        let pm = self.status_b & STATUS_B_24_HOUR == 0 && self.hours & HOUR_PM != 0;
        let mut hour = decode(self.hours & !HOUR_PM)?;
        if self.status_b & STATUS_B_24_HOUR == 0 {
            // 12-hour clock: 12 AM is 0, 12 PM is 12.
            if !(1..=12).contains(&hour) {
                return None;
            }
            hour %= 12;
            if pm {
                hour += 12;
            }
        }
        let year2 = decode(self.year)?;
        // Without a century register (or a nonsense one), two-digit years
        // below 70 are 20xx, as POSIX's strptime %y does.
        let century = match decode(self.century) {
            Some(c @ 19..=99) => c as i64,
            _ if year2 < 70 => 20,
            _ => 19,
        };
        let t = CivilTime {
            year: century * 100 + year2 as i64,
            month: decode(self.month)? as u32,
            day: decode(self.day)? as u32,
            hour: hour as u32,
            minute: decode(self.minutes)? as u32,
            second: decode(self.seconds)? as u32,
        };
        let valid = year2 <= 99
            && (1..=12).contains(&t.month)
            && (1..=days_in_month(t.year, t.month)).contains(&t.day)
            && t.hour < 24
            && t.minute < 60
            && t.second < 60;
        valid.then_some(t)
    }

    /// Seconds since 1970-01-01 00:00 UTC, or `None` as for [`Self::civil`].
    pub fn unix_seconds(&self) -> Option<i64> {
        self.civil().map(|t| t.unix_seconds())
    }
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// Days in `month` (1-12) of `year`.
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days from 1970-01-01 to `year-month-day` (proleptic Gregorian), by
/// Howard Hinnant's `days_from_civil`.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = month as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of `days` since 1970-01-01 (Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl CivilTime {
    pub fn unix_seconds(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day) * 86_400
            + (self.hour * 3600 + self.minute * 60 + self.second) as i64
    }

    pub fn from_unix_seconds(secs: i64) -> CivilTime {
        let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
        let rem = secs.rem_euclid(86_400) as u32;
        CivilTime { year, month, day, hour: rem / 3600, minute: rem / 60 % 60, second: rem % 60 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regs(bcd: [u8; 7], status_b: u8) -> RtcRegisters {
        let [century, year, month, day, hours, minutes, seconds] = bcd;
        RtcRegisters { seconds, minutes, hours, day, month, year, century, status_b }
    }

    #[test]
    fn bcd_24_hour() {
        // 2026-11-25 10:55:43, QEMU's default (BCD, 24-hour).
        let r = regs([0x20, 0x26, 0x11, 0x25, 0x10, 0x55, 0x43], STATUS_B_24_HOUR);
        // `date -u -d '2026-11-25 10:55:43' +%s`
        assert_eq!(r.unix_seconds(), Some(1_795_604_143));
    }

    #[test]
    fn binary_and_12_hour() {
        let b = STATUS_B_BINARY;
        // 12:30:00 AM is 00:30; 12 PM is noon; 1 PM is 13.
        let am = regs([20, 0, 1, 1, 12, 30, 0], b);
        assert_eq!(am.civil().map(|t| t.hour), Some(0));
        let noon = regs([20, 0, 1, 1, 12 | 0x80, 0, 0], b);
        assert_eq!(noon.civil().map(|t| t.hour), Some(12));
        let one_pm = regs([0x20, 0x00, 0x01, 0x01, 0x01 | 0x80, 0, 0], 0);
        assert_eq!(one_pm.civil().map(|t| t.hour), Some(13));
        assert_eq!(regs([20, 0, 1, 1, 0, 0, 0], b).civil(), None, "hour 0 on a 12-hour clock");
    }

    #[test]
    fn century_fallback() {
        let b = STATUS_B_BINARY | STATUS_B_24_HOUR;
        assert_eq!(regs([0, 26, 1, 1, 0, 0, 0], b).civil().map(|t| t.year), Some(2026));
        assert_eq!(regs([0, 99, 1, 1, 0, 0, 0], b).civil().map(|t| t.year), Some(1999));
        assert_eq!(regs([0, 0, 1, 1, 0, 0, 0], b).unix_seconds(), Some(946_684_800));
    }

    #[test]
    fn garbage_is_refused() {
        let h = STATUS_B_24_HOUR;
        assert_eq!(regs([0x20, 0x26, 0x13, 0x01, 0, 0, 0], h).civil(), None, "month 13");
        assert_eq!(regs([0x20, 0x26, 0x02, 0x30, 0, 0, 0], h).civil(), None, "30 February");
        assert_eq!(regs([0x20, 0x2a, 0x01, 0x01, 0, 0, 0], h).civil(), None, "bad BCD");
        assert_eq!(regs([0x20, 0x26, 0x01, 0x01, 0x24, 0, 0], h).civil(), None, "hour 24");
        assert_eq!(RtcRegisters::default().civil(), None);
    }

    #[test]
    fn civil_round_trip() {
        for secs in [0i64, 59, 86_399, 86_400, 951_782_400, 1_795_604_143, -1, 4_102_444_800] {
            assert_eq!(CivilTime::from_unix_seconds(secs).unix_seconds(), secs, "{secs}");
        }
        let t = CivilTime::from_unix_seconds(951_825_600); // 2000-02-29 12:00
        assert_eq!((t.year, t.month, t.day, t.hour), (2000, 2, 29, 12));
        assert_eq!(days_in_month(1900, 2), 28);
        assert_eq!(days_in_month(2000, 2), 29);
        assert_eq!(days_in_month(2024, 2), 29);
    }
}
