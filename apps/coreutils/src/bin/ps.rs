//! ps: list every UNIX process: pid, parent, group, user, state (R
//! running or ready, Z ended and not yet waited for), CPU time in seconds
//! and program name.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use coreutils::io::{self, Out};
use coreutils::text::{self, Options};
use runtime::unix;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    match Options::parse(&ops, "") {
        Ok(o) if o.operands.is_empty() => {}
        Ok(_) => return io::usage("ps", None, ""),
        Err(c) => return io::usage("ps", Some(c), ""),
    }
    let procs = match unix::ps() {
        Ok(p) => p,
        Err(e) => {
            io::report("ps", "process table", e);
            return io::FAILURE;
        }
    };
    let mut out = Out::new();
    for line in text::format_ps(&procs) {
        out.line(&line);
    }
    out.finish("ps", 0)
}
