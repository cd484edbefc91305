//! date: print the date and time, as POSIX and GNU `date` in the C locale
//! and UTC: `date [-u] [-d @SECONDS] [+FORMAT]`. The default format is
//! GNU's (`Wed Nov 25 10:55:43 UTC 2026`). The time is the calendar clock
//! (`unix::clock_realtime_ns`: the CMOS clock read at boot plus uptime).
//! Ridgeback keeps UTC, so `-u` changes nothing. Status 1 on a bad date
//! or operand. Formatting: `coreutils::date` (host-tested).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use coreutils::date::{self, Tm};
use coreutils::getopt;
use coreutils::io::{self, Out};
use runtime::unix;

runtime::entry!(main);

const PROG: &str = "date";

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let p = match getopt::parse(&ops, "ud:", true) {
        Ok(p) => p,
        Err(e) => {
            io::complain(PROG, &e);
            return io::FAILURE;
        }
    };
    let mut format = date::DEFAULT_FORMAT;
    for op in &p.operands {
        match op.strip_prefix('+') {
            Some(f) if format == date::DEFAULT_FORMAT => format = f,
            _ => {
                io::complain(
                    PROG,
                    &alloc::format!("invalid date '{op}' (setting the clock is not supported)"),
                );
                return io::FAILURE;
            }
        }
    }
    let tm = match p.last('d') {
        Some(s) => match date::parse_date(s) {
            Some(secs) => Tm::from_unix(secs, 0),
            None => {
                io::complain(PROG, &alloc::format!("invalid date '{s}' (only @SECONDS is understood)"));
                return io::FAILURE;
            }
        },
        None => {
            let ns = unix::clock_realtime_ns();
            Tm::from_unix((ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as u32)
        }
    };
    let mut out = Out::new();
    out.line(&date::format(&tm, format));
    out.finish(PROG, 0)
}
