//! How a command ended, as the shell reports it: `$?`, the words for a
//! signal, and the `time` keyword's line.
//!
//! What it is not: waiting. `apps/sh` waits and gives the result here.

use alloc::format;
use alloc::string::{String, ToString};

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Exited(u32),
    Signaled(u64),
}

impl Outcome {
    /// From the `<sys/wait.h>` halves: `Signaled` if a signal is given.
    pub fn new(exit_code: Option<u32>, signal: Option<u64>) -> Outcome {
        match signal {
            Some(s) => Outcome::Signaled(s),
            None => Outcome::Exited(exit_code.unwrap_or(0)),
        }
    }

    /// The value of `$?`: the exit code, or 128 + the signal (POSIX).
    pub fn status(self) -> i32 {
        match self {
            Outcome::Exited(code) => (code & 0xff) as i32,
            Outcome::Signaled(sig) => 128 + (sig & 0x7f) as i32,
        }
    }
}

/// The words shells print for a signal that ended a job.
pub fn signal_description(sig: u64) -> String {
    let text = match sig {
        1 => "Hangup",
        2 => "Interrupt",
        3 => "Quit",
        4 => "Illegal instruction",
        5 => "Trace/breakpoint trap",
        6 => "Aborted",
        7 => "Bus error",
        8 => "Floating point exception",
        9 => "Killed",
        10 => "User defined signal 1",
        11 => "Segmentation fault",
        12 => "User defined signal 2",
        13 => "Broken pipe",
        14 => "Alarm clock",
        15 => "Terminated",
        _ => return format!("Signal {sig}"),
    };
    text.to_string()
}

/// Nanoseconds as seconds with three decimals, e.g. `1.234s` (rounded to
/// the nearest millisecond).
pub fn format_seconds(ns: u64) -> String {
    let ms = ns.saturating_add(500_000) / 1_000_000;
    format!("{}.{:03}s", ms / 1000, ms % 1000)
}

/// The `time` keyword's report line.
pub fn format_times(real_ns: u64, user_ns: u64, sys_ns: u64) -> String {
    format!(
        "real {} user {} sys {}",
        format_seconds(real_ns),
        format_seconds(user_ns),
        format_seconds(sys_ns)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes() {
        assert_eq!(Outcome::new(Some(0), None).status(), 0);
        assert_eq!(Outcome::new(Some(3), None).status(), 3);
        assert_eq!(Outcome::new(Some(300), None).status(), 300 & 0xff);
        assert_eq!(Outcome::new(None, Some(2)).status(), 130);
        assert_eq!(Outcome::new(None, Some(9)).status(), 137);
        assert_eq!(signal_description(2), "Interrupt");
        assert_eq!(signal_description(9), "Killed");
        assert_eq!(signal_description(15), "Terminated");
        assert_eq!(signal_description(30), "Signal 30");
    }

    #[test]
    fn times_format() {
        assert_eq!(format_seconds(0), "0.000s");
        assert_eq!(format_seconds(1_234_567_890), "1.235s");
        assert_eq!(format_seconds(999_999), "0.001s");
        assert_eq!(format_seconds(61_000_000_000), "61.000s");
        assert_eq!(format_times(1_500_000_000, 20_000_000, 0), "real 1.500s user 0.020s sys 0.000s");
        let _ = format_seconds(u64::MAX);
    }
}
