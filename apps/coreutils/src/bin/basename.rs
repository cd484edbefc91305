//! basename: the last name of a path, less SUFFIX if given and not the
//! whole name (POSIX `basename`); GNU's `-a` (several names) and `-s
//! SUFFIX` (implies `-a`). Status 1 on bad usage.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec::Vec;
use coreutils::getopt;
use coreutils::io::{self, Out};
use coreutils::text;

runtime::entry!(main);

const PROG: &str = "basename";

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let p = match getopt::parse(&ops, "as:z", true) {
        Ok(p) => p,
        Err(e) => {
            io::complain(PROG, &e);
            return io::FAILURE;
        }
    };
    let many = p.has('a') || p.has('s');
    let (names, suffix): (Vec<&str>, Option<&str>) = match (many, p.operands.as_slice()) {
        (_, []) => {
            io::complain(PROG, "missing operand");
            return io::FAILURE;
        }
        (true, names) => (names.to_vec(), p.last('s')),
        (false, [name]) => (Vec::from([*name]), None),
        (false, [name, suffix]) => (Vec::from([*name]), Some(*suffix)),
        (false, [_, _, extra, ..]) => {
            io::complain(PROG, &alloc::format!("extra operand '{extra}'"));
            return io::FAILURE;
        }
    };
    let mut out = Out::new();
    for name in names {
        let base = text::base_name(name);
        let base = match suffix {
            Some(s) if base != s && base != "/" => base.strip_suffix(s).unwrap_or(base),
            _ => base,
        };
        out.str(base);
        out.str(if p.has('z') { "\0" } else { "\n" });
    }
    out.finish(PROG, 0)
}
