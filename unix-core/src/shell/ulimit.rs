//! The `ulimit` builtin (XCU `ulimit`, with the options of bash and dash
//! for the limits Ridgeback keeps): `ulimit [-H|-S] [-a|-d|-f|-n|-u|-v]
//! [LIMIT]`. It runs in the shell's own process, since limits are each
//! process's and its children inherit them.
//!
//! What it is not: the limits. The monitor keeps and checks them
//! (`protocols::unix::rlimit`); the shell reads and sets them through
//! [`Host::rlimit`].
//!
//! Invariants: `-d` and `-v` count KiB (1024 bytes), `-n` descriptors,
//! `-u` processes; `unlimited` is `rlimit::INFINITY`. Without `-H` or `-S`
//! a new value sets both limits and printing shows the soft one. `-f`
//! (file size, POSIX's default resource) is always `unlimited`: no file
//! size limit exists, and setting one is refused. A usage error gives
//! status 2, a refused change 1.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::rlimit::{self, INFINITY};

use super::state::{Host, STATUS_USAGE, Shell};

/// One limit `ulimit` knows: option letter, resource (`None`: file size,
/// not kept), description, unit and bytes per unit.
struct Resource {
    option: char,
    resource: Option<u64>,
    what: &'static str,
    unit: &'static str,
    scale: u64,
}

const RESOURCES: [Resource; 5] = [
    Resource {
        option: 'd',
        resource: Some(rlimit::RLIMIT_DATA),
        what: "data seg size",
        unit: "kbytes",
        scale: 1024,
    },
    Resource { option: 'f', resource: None, what: "file size", unit: "blocks", scale: 1 },
    Resource { option: 'n', resource: Some(rlimit::RLIMIT_NOFILE), what: "open files", unit: "", scale: 1 },
    Resource {
        option: 'u',
        resource: Some(rlimit::RLIMIT_NPROC),
        what: "max user processes",
        unit: "",
        scale: 1,
    },
    Resource {
        option: 'v',
        resource: Some(rlimit::RLIMIT_AS),
        what: "virtual memory",
        unit: "kbytes",
        scale: 1024,
    },
];

/// A limit as `ulimit` prints it.
fn shown(value: u64, scale: u64) -> String {
    if value == INFINITY { String::from("unlimited") } else { format!("{}", value / scale) }
}

pub fn ulimit<H: Host>(sh: &mut Shell, h: &mut H, args: &[&str]) -> i32 {
    let (mut hard, mut soft, mut all) = (false, false, false);
    let mut chosen: Option<&Resource> = None;
    let mut operands: Vec<&str> = Vec::new();
    for a in args {
        match a.strip_prefix('-') {
            Some(letters) if !letters.is_empty() && operands.is_empty() => {
                for c in letters.chars() {
                    match c {
                        'H' => hard = true,
                        'S' => soft = true,
                        'a' => all = true,
                        _ => match RESOURCES.iter().find(|r| r.option == c) {
                            Some(r) if chosen.is_none_or(|p| p.option == c) => chosen = Some(r),
                            Some(_) => {
                                sh.error(h, "ulimit: one limit at a time");
                                return STATUS_USAGE;
                            }
                            None => {
                                sh.error(h, &format!("ulimit: Illegal option -{c}"));
                                return STATUS_USAGE;
                            }
                        },
                    }
                }
            }
            _ => operands.push(a),
        }
    }
    if operands.len() > 1 || (all && !operands.is_empty()) {
        sh.error(h, "ulimit: too many arguments");
        return STATUS_USAGE;
    }
    let show_hard = hard && !soft;
    let read = |h: &mut H, r: &Resource| -> Result<(u64, u64), String> {
        match r.resource {
            Some(res) => h.rlimit(res, None),
            None => Ok((INFINITY, INFINITY)),
        }
    };
    if all {
        let mut text = String::new();
        for r in &RESOURCES {
            let (s, hd) = match read(h, r) {
                Ok(l) => l,
                Err(e) => {
                    sh.error(h, &format!("ulimit: -{}: {e}", r.option));
                    return 1;
                }
            };
            let unit = if r.unit.is_empty() {
                format!("(-{})", r.option)
            } else {
                format!("({}, -{})", r.unit, r.option)
            };
            let value = shown(if show_hard { hd } else { s }, r.scale);
            text.push_str(&format!("{:<24}{:>15} {value}\n", r.what, unit));
        }
        return match sh.out(h, "ulimit", &text) {
            Ok(()) => 0,
            Err(s) => s,
        };
    }
    let r = chosen.unwrap_or(&RESOURCES[1]);
    let Some(&value) = operands.first() else {
        let (s, hd) = match read(h, r) {
            Ok(l) => l,
            Err(e) => {
                sh.error(h, &format!("ulimit: -{}: {e}", r.option));
                return 1;
            }
        };
        let text = format!("{}\n", shown(if show_hard { hd } else { s }, r.scale));
        return match sh.out(h, "ulimit", &text) {
            Ok(()) => 0,
            Err(s) => s,
        };
    };
    let new = if value == "unlimited" {
        INFINITY
    } else {
        match value.parse::<u64>().ok().and_then(|v| v.checked_mul(r.scale)) {
            Some(v) => v,
            None => {
                sh.error(h, &format!("ulimit: {value}: bad number"));
                return STATUS_USAGE;
            }
        }
    };
    let Some(res) = r.resource else {
        if new == INFINITY {
            return 0;
        }
        sh.error(h, "ulimit: -f: no file size limit is kept (only unlimited)");
        return 1;
    };
    let (old_soft, old_hard) = match h.rlimit(res, None) {
        Ok(l) => l,
        Err(e) => {
            sh.error(h, &format!("ulimit: -{}: {e}", r.option));
            return 1;
        }
    };
    // -H alone also lowers the soft limit when it would pass the new hard
    // one; neither -H nor -S sets both (bash).
    let (s, hd) = match (hard, soft) {
        (true, false) => (old_soft.min(new), new),
        (false, true) => (new, old_hard),
        _ => (new, new),
    };
    match h.rlimit(res, Some((s, hd))) {
        Ok(_) => 0,
        Err(e) => {
            sh.error(h, &format!("ulimit: -{}: cannot set the limit: {e}", r.option));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{Fake, out, run_with};

    #[test]
    fn reads_every_limit() {
        assert_eq!(out("ulimit; ulimit -n; ulimit -Hv"), "unlimited\nunlimited\nunlimited\n");
        let all = out("ulimit -a");
        assert_eq!(all.lines().count(), 5, "{all}");
        assert!(all.lines().any(|l| l.starts_with("open files") && l.ends_with("(-n) unlimited")), "{all}");
        assert!(all.lines().any(|l| l.starts_with("data seg size") && l.contains("(kbytes, -d)")), "{all}");
    }

    #[test]
    fn sets_soft_and_hard_in_units() {
        // KiB for -d and -v; both limits without -H or -S.
        assert_eq!(out("ulimit -d 1024; ulimit -d; ulimit -Hd"), "1024\n1024\n");
        let (o, e, s) = run_with("ulimit -d 1024; ulimit -d 2048; echo $?", Fake::new(""));
        assert_eq!((o.as_str(), s), ("1\n", 0));
        assert!(e.contains("ulimit: -d: cannot set the limit: EPERM"), "{e}");
        // -S alone below the hard limit, and back up to it.
        assert_eq!(
            out("ulimit -Hn 10; ulimit -Sn 5; ulimit -n; ulimit -Sn 10; ulimit -Sn; ulimit -Hn"),
            "5\n10\n10\n"
        );
        // -H alone lowers the soft limit with it.
        assert_eq!(out("ulimit -u 50; ulimit -Hu 20; ulimit -u"), "20\n");
        assert_eq!(out("ulimit -Su 20; ulimit -Su unlimited; echo $?; ulimit -u"), "0\nunlimited\n");
    }

    #[test]
    fn bad_usage_is_status_2() {
        for bad in [
            "ulimit -x",
            "ulimit -n abc",
            "ulimit -n 1 2",
            "ulimit -nu 3",
            "ulimit -a 5",
            "ulimit -v 99999999999999999999",
        ] {
            let (_, e, s) = run_with(&alloc::format!("{bad}; echo $?"), Fake::new(""));
            assert!(e.contains("ulimit: "), "{bad}: {e}");
            let (o, _, _) = run_with(&alloc::format!("{bad}; echo $?"), Fake::new(""));
            assert_eq!((o.as_str(), s), ("2\n", 0), "{bad}");
        }
        // -f: only "unlimited" (no file size limit is kept).
        let (o, e, _) = run_with("ulimit -f unlimited; echo $?; ulimit -f 10; echo $?", Fake::new(""));
        assert_eq!(o, "0\n1\n");
        assert!(e.contains("ulimit: -f:"), "{e}");
    }
}
