//! dirname: each path less its last name (POSIX `dirname`): `/a/b` is
//! `/a`, `a` is `.`, `/` is `/`. Status 1 without an operand.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use coreutils::io::{self, Out};
use coreutils::text;

runtime::entry!(main);

const PROG: &str = "dirname";

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let names: &[&str] = match ops.first() {
        Some(&"--") => &ops[1..],
        _ => &ops,
    };
    if names.is_empty() {
        io::complain(PROG, "missing operand");
        return io::FAILURE;
    }
    let mut out = Out::new();
    for name in names {
        out.line(text::dir_name(name));
    }
    out.finish(PROG, 0)
}
