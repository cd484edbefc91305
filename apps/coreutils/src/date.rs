//! date's formatting (POSIX `date` and `strftime`, XBD/XSH, in the C
//! locale and UTC): the default format is GNU's, `%a %b %e %H:%M:%S %Z
//! %Y`; `+FORMAT` takes the common conversions. The calendar arithmetic
//! is `kernel_core::rtc`'s twin: the days-from-civil algorithm below is
//! Howard Hinnant's, the one the kernel uses to read the CMOS clock.
//!
//! What it is not: time-zone aware (Ridgeback keeps UTC, so `%Z` is
//! `UTC` and `%z` `+0000`), nor a parser of dates beyond `@SECONDS`.

use alloc::format;
use alloc::string::String;

const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// GNU date's default format in the C locale.
pub const DEFAULT_FORMAT: &str = "%a %b %e %H:%M:%S %Z %Y";

/// A moment broken down in UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tm {
    pub secs: i64,
    pub nanos: u32,
    pub year: i64,
    /// 1-12.
    pub month: u32,
    /// 1-31.
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    /// 0 = Sunday.
    pub weekday: u32,
    /// 0-365.
    pub yday: u32,
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
}

impl Tm {
    pub fn from_unix(secs: i64, nanos: u32) -> Tm {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400) as u32;
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Tm {
            secs,
            nanos,
            year,
            month,
            day,
            hour: rem / 3600,
            minute: rem / 60 % 60,
            second: rem % 60,
            weekday: (days + 4).rem_euclid(7) as u32,
            yday: (days - days_from_civil(year, 1, 1)) as u32,
        }
    }
}

/// Format `t` by `fmt` (strftime conversions; an unknown one is copied
/// as written, as glibc does).
pub fn format(t: &Tm, fmt: &str) -> String {
    let mut out = String::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(conv) = chars.next() else {
            out.push('%');
            break;
        };
        let hour12 = if t.hour.is_multiple_of(12) { 12 } else { t.hour % 12 };
        let s = match conv {
            'a' => String::from(&DAYS[t.weekday as usize][..3]),
            'A' => String::from(DAYS[t.weekday as usize]),
            'b' | 'h' => String::from(&MONTHS[t.month as usize - 1][..3]),
            'B' => String::from(MONTHS[t.month as usize - 1]),
            'c' => format(t, "%a %b %e %H:%M:%S %Y"),
            'C' => format!("{:02}", t.year.div_euclid(100)),
            'd' => format!("{:02}", t.day),
            'D' => format(t, "%m/%d/%y"),
            'e' => format!("{:>2}", t.day),
            'F' => format(t, "%Y-%m-%d"),
            'H' => format!("{:02}", t.hour),
            'I' => format!("{hour12:02}"),
            'j' => format!("{:03}", t.yday + 1),
            'k' => format!("{:>2}", t.hour),
            'l' => format!("{hour12:>2}"),
            'm' => format!("{:02}", t.month),
            'M' => format!("{:02}", t.minute),
            'n' => String::from("\n"),
            'N' => format!("{:09}", t.nanos),
            'p' => String::from(if t.hour < 12 { "AM" } else { "PM" }),
            'r' => format(t, "%I:%M:%S %p"),
            'R' => format(t, "%H:%M"),
            's' => format!("{}", t.secs),
            'S' => format!("{:02}", t.second),
            't' => String::from("\t"),
            'T' => format(t, "%H:%M:%S"),
            'u' => format!("{}", if t.weekday == 0 { 7 } else { t.weekday }),
            'w' => format!("{}", t.weekday),
            'x' => format(t, "%m/%d/%y"),
            'X' => format(t, "%H:%M:%S"),
            'y' => format!("{:02}", t.year.rem_euclid(100)),
            'Y' => format!("{}", t.year),
            'Z' => String::from("UTC"),
            'z' => String::from("+0000"),
            '%' => String::from("%"),
            other => format!("%{other}"),
        };
        out.push_str(&s);
    }
    out
}

/// `-d STRING`: `@SECONDS` (an optional sign, digits); other date
/// strings are not understood (`None`).
pub fn parse_date(s: &str) -> Option<i64> {
    let n = s.trim().strip_prefix('@')?.trim();
    let digits = n.strip_prefix(['-', '+']).unwrap_or(n);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_fields() {
        // `date -u -d @1795604143`
        let t = Tm::from_unix(1_795_604_143, 5);
        assert_eq!(format(&t, DEFAULT_FORMAT), "Wed Nov 25 10:55:43 UTC 2026");
        assert_eq!(
            format(&t, "%F %T %j %u %w %y %C %s %N"),
            "2026-11-25 10:55:43 329 3 3 26 20 1795604143 000000005"
        );
        assert_eq!(
            format(&t, "%A %B %D %R %I%p %l %k %%%Q %z"),
            "Wednesday November 11/25/26 10:55 10AM 10 10 %%Q +0000"
        );
        let epoch = Tm::from_unix(0, 0);
        assert_eq!(format(&epoch, DEFAULT_FORMAT), "Thu Jan  1 00:00:00 UTC 1970");
        assert_eq!(format(&epoch, "%I %p %r"), "12 AM 12:00:00 AM");
        let before = Tm::from_unix(-1, 0);
        assert_eq!(format(&before, "%F %T %a"), "1969-12-31 23:59:59 Wed");
        let leap = Tm::from_unix(951_825_600, 0);
        assert_eq!(format(&leap, "%F %j %H %p"), "2000-02-29 060 12 PM");
        assert_eq!(format(&leap, "trailing %"), "trailing %");
    }

    #[test]
    fn date_strings() {
        assert_eq!(parse_date("@0"), Some(0));
        assert_eq!(parse_date("@-86400"), Some(-86_400));
        assert_eq!(parse_date("@ 12"), Some(12));
        for bad in ["0", "@", "@x", "yesterday", "@1.5"] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }
}
