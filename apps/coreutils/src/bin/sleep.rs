//! sleep: wait for the sum of the given durations (seconds, fractions
//! allowed, optional unit `s`, `m`, `h` or `d`).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use coreutils::{io, text};
use runtime::unix;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    if ops.is_empty() {
        runtime::eprintln!("sleep: missing operand");
        return io::usage("sleep", None, "seconds[s|m|h|d]...");
    }
    let mut total_ns = 0u64;
    for op in &ops {
        match text::parse_duration_ns(op) {
            Some(ns) => total_ns = total_ns.saturating_add(ns),
            None => {
                runtime::eprintln!("sleep: invalid time interval '{op}'");
                return io::FAILURE;
            }
        }
    }
    unix::sleep_ns(total_ns);
    0
}
