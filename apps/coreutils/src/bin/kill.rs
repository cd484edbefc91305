//! kill: send a signal to processes: `kill [-SIGNAL | -N | -s SIGNAL]
//! [--] pid...` (default SIGTERM; a pid of 0 or below names a process
//! group, as in POSIX), or `kill -l` to list the signal names.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use coreutils::io::{self, Out};
use coreutils::text;
use protocols::unix::{errno, signal};
use runtime::unix;

runtime::entry!(main);

const USAGE: &str = "[-SIGNAL | -N | -s SIGNAL] pid... | -l";

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let mut rest: &[&str] = &ops;
    let mut sig = signal::SIGTERM;
    match rest.first().copied() {
        None => return io::usage("kill", None, USAGE),
        Some("-l") => {
            let mut out = Out::new();
            for (name, number) in signal::NAMES {
                out.line(&alloc::format!("{number:>2} {name}"));
            }
            return out.finish("kill", 0);
        }
        Some("-s") => {
            let Some(spec) = rest.get(1) else { return io::usage("kill", None, USAGE) };
            match text::parse_signal(spec) {
                Some(s) => sig = s,
                None => return bad_signal(spec),
            }
            rest = &rest[2..];
        }
        Some(first) if first.starts_with('-') && first != "--" && first.len() > 1 => {
            match text::parse_signal(&first[1..]) {
                Some(s) => sig = s,
                None => return bad_signal(&first[1..]),
            }
            rest = &rest[1..];
        }
        Some(_) => {}
    }
    if rest.first() == Some(&"--") {
        rest = &rest[1..];
    }
    if rest.is_empty() {
        return io::usage("kill", None, USAGE);
    }
    let mut status = 0;
    for pid in rest {
        let Ok(number) = pid.parse::<i64>() else {
            io::report("kill", pid, errno::EINVAL);
            status = io::FAILURE;
            continue;
        };
        if let Err(e) = unix::kill(number, sig) {
            io::report("kill", pid, e);
            status = io::FAILURE;
        }
    }
    status
}

fn bad_signal(spec: &str) -> i32 {
    runtime::eprintln!("kill: {spec}: invalid signal (kill -l lists them)");
    io::FAILURE
}
