//! The monitor's pipe policy: the design of pipes made from now on
//! (`pipe=small|big|loan`), `pipe.loan_min`, and the system-wide cap on
//! bytes under loan (`pipe.loan_cap`, the seed's first TODO), with the
//! budget each pipe manager holds.
//!
//! Why the monitor hands out budget: every pipe is its own process
//! (Ridge §3), so no memory is shared where a count could live, and the
//! count must be system-wide. The monitor already starts and outlives
//! every pipe manager and hears of their ends, so it keeps the one count:
//! a manager may loan only within the budget it was granted, and the sum
//! of grants never exceeds the cap ([`LoanBudget::want`] refuses past
//! it). Hence the bytes on loan in all pipes together never exceed the
//! cap, whatever the managers do. A refused manager buffers the write (it
//! never fails); the monitor then asks the others to give back what they
//! do not use ([`LoanBudget::want`] says whom), so budget flows to pipes
//! that loan. A manager's end returns all its grant ([`LoanBudget::forget`]).
//! All messages are one-way (`send`), so no manager ever waits for the
//! monitor or the reverse.
//!
//! What it is not: the messages themselves (`servers/monitor/src/pipes.rs`).

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::Errno;
use protocols::unix::errno::EINVAL;
use protocols::unix::pipe::{self, Mode, limits};

/// The run-time limits of pipes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub mode: Mode,
    pub loan_min_bytes: u64,
    pub loan_cap_bytes: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            mode: Mode::Loan,
            loan_min_bytes: pipe::DEFAULT_LOAN_MIN_BYTES,
            loan_cap_bytes: pipe::DEFAULT_LOAN_CAP_BYTES,
        }
    }
}

/// What a change of one setting asks of the running pipes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Only pipes made from now on.
    NewPipes,
    /// Tell every manager the new `loan_min`.
    LoanMin(u64),
    /// The cap changed: reclaim if more is granted than it allows.
    LoanCap,
}

/// A byte count: decimal, with an optional `K` or `M` (binary) suffix.
pub fn parse_bytes(s: &str) -> Option<u64> {
    let (digits, unit) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1024),
        b'm' | b'M' => (&s[..s.len() - 1], 1024 * 1024),
        _ => (s, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(unit).filter(|&n| n <= limits::MAX_BYTES)
}

impl Settings {
    /// From the kernel command line; a bad value keeps the default and
    /// is named in the returned warnings.
    pub fn from_cmdline(line: &str) -> (Settings, Vec<String>) {
        let mut s = Settings::default();
        let mut warnings = Vec::new();
        for key in [limits::MODE, limits::LOAN_MIN, limits::LOAN_CAP] {
            if let Some(value) = protocols::options::lookup(line, key)
                && let Err(e) = s.set(key, value)
            {
                warnings.push(format!("{key}={value}: {}; the default is kept", e.name()));
            }
        }
        (s, warnings)
    }

    /// Set `key` to `value` (`EINVAL`: an unknown key or a bad value).
    pub fn set(&mut self, key: &str, value: &str) -> Result<Change, Errno> {
        match key {
            limits::MODE => {
                self.mode = Mode::parse(value).ok_or(EINVAL)?;
                Ok(Change::NewPipes)
            }
            limits::LOAN_MIN => {
                let n = parse_bytes(value).filter(|&n| n >= 1).ok_or(EINVAL)?;
                self.loan_min_bytes = n;
                Ok(Change::LoanMin(n))
            }
            limits::LOAN_CAP => {
                self.loan_cap_bytes = parse_bytes(value).ok_or(EINVAL)?;
                Ok(Change::LoanCap)
            }
            _ => Err(EINVAL),
        }
    }

    /// `name=value` text of a `monitor::OP_SET_LIMIT` request.
    pub fn set_text(&mut self, text: &[u8]) -> Result<Change, Errno> {
        let text = core::str::from_utf8(text).map_err(|_| EINVAL)?.trim();
        let (key, value) = text.split_once('=').ok_or(EINVAL)?;
        self.set(key.trim(), value.trim())
    }

    /// The arguments a new pipe manager is started with.
    pub fn manager_args(&self, monitor_pid: u64) -> String {
        format!("{monitor_pid} {} {}", self.mode.name(), self.loan_min_bytes)
    }
}

/// The grants of loan budget to pipe managers (by kernel pid).
#[derive(Debug, Default)]
pub struct LoanBudget {
    grants: BTreeMap<u64, u64>,
    granted_bytes: u64,
    /// Wants refused (the writes then went through a buffer).
    pub refused: u64,
}

impl LoanBudget {
    /// Bytes granted, all managers together.
    pub fn granted(&self) -> u64 {
        self.granted_bytes
    }

    /// Manager `pid` wants `bytes` more. Returns the bytes granted (all
    /// or 0), and the managers to ask for unused budget back when it was
    /// refused.
    pub fn want(&mut self, pid: u64, bytes: u64, cap_bytes: u64) -> (u64, Vec<u64>) {
        if bytes > 0 && self.granted_bytes + bytes <= cap_bytes {
            *self.grants.entry(pid).or_insert(0) += bytes;
            self.granted_bytes += bytes;
            return (bytes, Vec::new());
        }
        self.refused += 1;
        (0, self.holders_except(pid))
    }

    /// Manager `pid` gave `bytes` back (never more than it holds counts).
    pub fn give_back(&mut self, pid: u64, bytes: u64) {
        if let Some(held) = self.grants.get_mut(&pid) {
            let n = bytes.min(*held);
            *held -= n;
            self.granted_bytes -= n;
            if *held == 0 {
                self.grants.remove(&pid);
            }
        }
    }

    /// Manager `pid` ended: its grant comes back whole.
    pub fn forget(&mut self, pid: u64) {
        if let Some(held) = self.grants.remove(&pid) {
            self.granted_bytes -= held;
        }
    }

    /// Managers to reclaim from when the cap has dropped below the grants.
    pub fn over_cap(&self, cap_bytes: u64) -> Vec<u64> {
        if self.granted_bytes > cap_bytes { self.holders_except(u64::MAX) } else { Vec::new() }
    }

    fn holders_except(&self, pid: u64) -> Vec<u64> {
        self.grants.iter().filter(|&(&p, &n)| p != pid && n > 0).map(|(&p, _)| p).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_from_the_command_line_and_at_run_time() {
        let (s, w) = Settings::from_cmdline("cpus=2 pipe=small pipe.loan_min=4K pipe.loan_cap=1M");
        assert!(w.is_empty());
        assert_eq!(s, Settings { mode: Mode::Small, loan_min_bytes: 4096, loan_cap_bytes: 1 << 20 });
        let (s, w) = Settings::from_cmdline("pipe=huge pipe.loan_min=0 pipe.loan_cap=-1");
        assert_eq!(s, Settings::default());
        assert_eq!(w.len(), 3, "{w:?}");
        let mut s = Settings::default();
        assert_eq!(s.set_text(b"pipe.loan_min=100"), Ok(Change::LoanMin(100)));
        assert_eq!(s.set_text(b" pipe = big "), Ok(Change::NewPipes));
        assert_eq!(s.set_text(b"pipe.loan_cap=0"), Ok(Change::LoanCap));
        assert_eq!(s, Settings { mode: Mode::Big, loan_min_bytes: 100, loan_cap_bytes: 0 });
        for bad in
            [&b"pipe.nothing=1"[..], b"pipe.loan_min", b"pipe.loan_min=x", b"pipe.loan_min=1G", b"\xff=1"]
        {
            assert_eq!(s.set_text(bad), Err(EINVAL), "{bad:?}");
        }
        assert_eq!(s.manager_args(7), "7 big 100");
    }

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("16384"), Some(16384));
        assert_eq!(parse_bytes("16k"), Some(16384));
        assert_eq!(parse_bytes("2M"), Some(2 << 20));
        for bad in ["", "K", "1.5K", "-1", "99999999999999999999", "1025M"] {
            assert_eq!(parse_bytes(bad), None, "{bad}");
        }
    }

    #[test]
    fn grants_never_exceed_the_cap_and_come_back() {
        let mut b = LoanBudget::default();
        assert_eq!(b.want(1, 600, 1000).0, 600);
        assert_eq!(b.want(2, 300, 1000).0, 300);
        let (got, ask) = b.want(3, 200, 1000);
        assert_eq!((got, ask), (0, alloc::vec![1, 2]));
        assert_eq!(b.refused, 1);
        b.give_back(1, 500);
        assert_eq!(b.want(3, 200, 1000).0, 200);
        assert_eq!(b.granted(), 600);
        // Giving back more than held counts only what was held.
        b.give_back(2, 10_000);
        assert_eq!(b.granted(), 300);
        b.forget(3);
        b.forget(3);
        assert_eq!(b.granted(), 100);
        assert_eq!(b.over_cap(50), alloc::vec![1]);
        assert!(b.over_cap(100).is_empty());
        assert_eq!(b.want(4, 0, 1000).0, 0, "nothing asked, nothing granted");
    }
}
