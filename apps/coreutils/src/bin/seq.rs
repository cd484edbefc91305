//! seq: print numbers from FIRST (1) by INCREMENT (1) to LAST, as GNU
//! `seq`: `seq [-s SEP] [-w] [FIRST [INCREMENT]] LAST`. Status 1 on a bad
//! number or a zero increment. Numbers: `coreutils::seq` (host-tested).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use coreutils::getopt;
use coreutils::io::{self, Out};
use coreutils::seq;

runtime::entry!(main);

const PROG: &str = "seq";

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    // Options end at the first operand, and a negative number is an
    // operand, not an option (`seq -3 -1`).
    let mut split = 0;
    while let Some(a) = ops.get(split) {
        if *a == "-s" {
            split += 2;
        } else if a.starts_with('-')
            && a.len() > 1
            && !a.as_bytes()[1].is_ascii_digit()
            && a.as_bytes()[1] != b'.'
        {
            split += 1;
        } else {
            break;
        }
    }
    let split = split.min(ops.len());
    let p = match getopt::parse(&ops[..split], "s:w", false) {
        Ok(p) => p,
        Err(e) => {
            io::complain(PROG, &e);
            return io::FAILURE;
        }
    };
    let mut operands = p.operands.clone();
    operands.extend_from_slice(&ops[split..]);
    let (first, incr, last) = match operands.as_slice() {
        [l] => ("1", "1", *l),
        [f, l] => (*f, "1", *l),
        [f, i, l] => (*f, *i, *l),
        [] => {
            io::complain(PROG, "missing operand");
            return io::FAILURE;
        }
        [_, _, _, extra, ..] => {
            io::complain(PROG, &alloc::format!("extra operand '{extra}'"));
            return io::FAILURE;
        }
    };
    let numbers = match seq::Sequence::new(first, incr, last, p.has('w')) {
        Ok(n) => n,
        Err(e) => {
            io::complain(PROG, &e);
            return io::FAILURE;
        }
    };
    let sep = p.last('s').unwrap_or("\n");
    let mut out = Out::new();
    let mut any = false;
    for n in numbers {
        if any {
            out.str(sep);
        }
        out.str(&n);
        any = true;
        // A consumer that went away (`seq 1 1000000000 | head`) ends it.
        if out.failed() {
            break;
        }
    }
    if any {
        out.str("\n");
    }
    out.finish(PROG, 0)
}
