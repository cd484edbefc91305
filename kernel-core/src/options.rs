//! Kernel options: `key=value` words on the kernel command line.
//!
//! This is the one place options are defined and parsed. [`OPTIONS`] is the
//! table (name, default, meaning) that `docs/kernel-options.md` documents
//! and that a host test checks against that page. An unknown key, a word
//! without `=`, or a value that does not parse gives a [`Warning`] that the
//! kernel prints on the console; the option then keeps its default, and the
//! warning says so — never a silent default.

use crate::limits;

/// One documented kernel option.
pub struct OptionSpec {
    pub name: &'static str,
    pub default: &'static str,
    pub meaning: &'static str,
}

/// Every kernel option.
pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "init",
        default: "init",
        meaning: "Name of the boot-image program started as the first process.",
    },
    OptionSpec {
        name: "cpus",
        default: "all",
        meaning: "Most CPUs to bring up (1 or more); `all` takes every CPU the firmware lists.",
    },
    OptionSpec {
        name: "timeslice_ms",
        default: "20",
        meaning: "Time slice among processes of equal priority, in milliseconds (Ridge OS: 20).",
    },
    OptionSpec {
        name: "verbose",
        default: "0",
        meaning: "1 prints a line for every process start and end on the console.",
    },
    OptionSpec {
        name: "profile",
        default: "0",
        meaning: "1 prints `profile: space ROOT PID NAME` whenever a process gets an address space (for `cargo xtask profile`).",
    },
];

/// The parsed options. Strings borrow from the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options<'a> {
    pub init: &'a str,
    /// `None` means all CPUs.
    pub max_cpus: Option<usize>,
    pub timeslice_ms: u64,
    pub verbose: bool,
    /// `profile=1`: name each new address space's page-table root on the
    /// console, so that the host's sampler can tell processes by CR3.
    pub profile: bool,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            init: "init",
            max_cpus: None,
            timeslice_ms: limits::TIME_SLICE_MS,
            verbose: false,
            profile: false,
        }
    }
}

/// A problem found in the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Warning<'a> {
    /// `key=value` with a key no option has.
    UnknownOption(&'a str),
    /// A word without `=`.
    NotKeyValue(&'a str),
    /// A known key with a value that does not parse; the default is kept.
    BadValue { name: &'a str, value: &'a str, expected: &'static str },
}

impl core::fmt::Display for Warning<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Warning::UnknownOption(k) => write!(f, "unknown kernel option `{k}` ignored"),
            Warning::NotKeyValue(w) => write!(f, "kernel option `{w}` is not key=value; ignored"),
            Warning::BadValue { name, value, expected } => {
                write!(f, "kernel option {name}={value}: expected {expected}; default kept")
            }
        }
    }
}

/// Split a command line at a lone `--`: the words before it are kernel
/// options, the rest is the init program's argument string (Linux's rule).
pub fn split_init_args(cmdline: &str) -> (&str, &str) {
    let mut at = 0;
    for word in cmdline.split(' ') {
        if word == "--" {
            return (&cmdline[..at], cmdline[at + 2..].trim_start());
        }
        at += word.len() + 1;
    }
    (cmdline, "")
}

/// Parse kernel options (the part before `--`). Every problem is passed to
/// `warn`; later words override earlier ones.
pub fn parse<'a>(cmdline: &'a str, mut warn: impl FnMut(Warning<'a>)) -> Options<'a> {
    let mut opts = Options::default();
    for word in cmdline.split_ascii_whitespace() {
        let Some((name, value)) = word.split_once('=') else {
            warn(Warning::NotKeyValue(word));
            continue;
        };
        let mut bad = |expected| warn(Warning::BadValue { name, value, expected });
        match name {
            "init" => {
                if value.is_empty() || value.len() > abi::layout::MAX_PROGRAM_NAME_BYTES as usize {
                    bad("a program name of 1 to 64 bytes");
                } else {
                    opts.init = value;
                }
            }
            "cpus" => match value {
                "all" => opts.max_cpus = None,
                v => match v.parse::<usize>() {
                    Ok(n) if n >= 1 => opts.max_cpus = Some(n),
                    _ => bad("`all` or a whole number of 1 or more"),
                },
            },
            "timeslice_ms" => match value.parse::<u64>() {
                Ok(ms) if (1..=10_000).contains(&ms) => opts.timeslice_ms = ms,
                _ => bad("a whole number of milliseconds from 1 to 10000"),
            },
            "verbose" => match value {
                "0" => opts.verbose = false,
                "1" => opts.verbose = true,
                _ => bad("0 or 1"),
            },
            "profile" => match value {
                "0" => opts.profile = false,
                "1" => opts.profile = true,
                _ => bad("0 or 1"),
            },
            // `server.option=value`: a server's boot option (the monitor's
            // `monitor.files`, for one), read by that server with the
            // `kernel_options` call; not the kernel's business.
            n if n.contains('.') => {}
            // Seed 002's pipe design (`pipe=small|big|loan`, issue 11's
            // name for it), the monitor's too, like `pipe.loan_min`.
            "pipe" => {}
            // Issue 12's names: the disk file system's buffer count (read
            // by `ext2fs`) and where `/` lives (read by init).
            "nbuf" | "root" => {}
            _ => warn(Warning::UnknownOption(name)),
        }
    }
    opts
}

/// What the kernel keeps of a command line `text` (the loader's bytes
/// after the kernel's path) when it may not hold more than `max` bytes:
/// `text` itself when it fits, else its longest prefix that fits and ends
/// at the end of a word, so that a cut never leaves half an option
/// (`init=hel`) or half an argument. `is_more` says that the reader
/// stopped before the string's end (`text` is a prefix of it). Returns the
/// bytes kept (trailing blanks removed) and whether anything was dropped.
pub fn whole_words(text: &[u8], max: usize, is_more: bool) -> (&[u8], bool) {
    if text.len() <= max && !is_more {
        return (text, false);
    }
    let room = &text[..text.len().min(max)];
    // A cut right before a blank keeps the last word whole.
    let is_at_boundary = text.get(room.len()).is_some_and(u8::is_ascii_whitespace);
    let kept = if is_at_boundary {
        room
    } else {
        match room.iter().rposition(u8::is_ascii_whitespace) {
            Some(blank) => &room[..blank],
            None => &[],
        }
    };
    (kept.trim_ascii_end(), true)
}

#[cfg(test)]
mod tests {
    use super::whole_words;

    #[test]
    fn a_command_line_that_fits_is_kept_whole() {
        assert_eq!(whole_words(b"init=hello verbose=1", 64, false), (&b"init=hello verbose=1"[..], false));
        assert_eq!(whole_words(b"abc", 3, false), (&b"abc"[..], false));
    }

    #[test]
    fn a_long_command_line_is_cut_at_a_word_boundary() {
        // "init=hello" fits; "verbose=1" would be cut in the middle.
        assert_eq!(whole_words(b"init=hello verbose=1", 14, false), (&b"init=hello"[..], true));
        // The cut falls right before a blank: the last word is whole.
        assert_eq!(whole_words(b"init=hello verbose=1", 10, false), (&b"init=hello"[..], true));
        // A reader that stopped early: the last word may go on.
        assert_eq!(whole_words(b"a bb ccc", 8, true), (&b"a bb"[..], true));
        // One word longer than the room: nothing is kept.
        assert_eq!(whole_words(b"averyveryverylongword", 8, false), (&b""[..], true));
    }
    extern crate std;
    use super::*;
    use std::vec::Vec;

    #[test]
    fn server_options_are_left_to_servers() {
        let mut warnings = Vec::new();
        let o = parse("monitor.files=per-file pipe=small pipe.loan_min=1 cpus=2", |w| {
            warnings.push(std::format!("{w}"))
        });
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(o.max_cpus, Some(2));
    }

    fn parse_all(s: &str) -> (Options<'_>, Vec<Warning<'_>>) {
        let mut w = Vec::new();
        let o = parse(s, |x| w.push(x));
        (o, w)
    }

    #[test]
    fn empty_line_gives_defaults() {
        let (o, w) = parse_all("");
        assert_eq!(o, Options::default());
        assert!(w.is_empty());
    }

    #[test]
    fn known_options_parse() {
        let (o, w) = parse_all("init=testrunner cpus=3  timeslice_ms=5 verbose=1");
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(o.init, "testrunner");
        assert_eq!(o.max_cpus, Some(3));
        assert_eq!(o.timeslice_ms, 5);
        assert!(o.verbose);
        assert!(!o.profile);
        let (o, w) = parse_all("profile=1");
        assert!(w.is_empty(), "{w:?}");
        assert!(o.profile);
        let (o, w) = parse_all("profile=2");
        assert!(!o.profile);
        assert!(matches!(w[0], Warning::BadValue { name: "profile", .. }));
    }

    #[test]
    fn problems_warn_and_keep_defaults() {
        let (o, w) = parse_all("bogus=1 cpus=0 timeslice_ms=x lonely verbose=yes init=");
        assert_eq!(o, Options::default());
        assert_eq!(w.len(), 6);
        assert_eq!(w[0], Warning::UnknownOption("bogus"));
        assert!(matches!(w[1], Warning::BadValue { name: "cpus", .. }));
        assert!(matches!(w[2], Warning::BadValue { name: "timeslice_ms", .. }));
        assert_eq!(w[3], Warning::NotKeyValue("lonely"));
        assert!(matches!(w[4], Warning::BadValue { name: "verbose", .. }));
        assert!(matches!(w[5], Warning::BadValue { name: "init", .. }));
    }

    #[test]
    fn init_arguments_follow_a_lone_double_dash() {
        assert_eq!(split_init_args("init=bench -- getpid copy"), ("init=bench ", "getpid copy"));
        assert_eq!(split_init_args("verbose=1"), ("verbose=1", ""));
        assert_eq!(split_init_args("-- a --b"), ("", "a --b"));
        assert_eq!(split_init_args("x=--y"), ("x=--y", ""));
    }

    #[test]
    fn every_option_is_documented() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/kernel-options.md"))
            .expect("docs/kernel-options.md exists");
        for spec in OPTIONS {
            let row = std::format!("| `{}` | `{}` |", spec.name, spec.default);
            assert!(doc.contains(&row), "docs/kernel-options.md lacks the row for {}", spec.name);
        }
    }
}
