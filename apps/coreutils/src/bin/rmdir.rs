//! rmdir: remove empty directories.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use coreutils::io;
use coreutils::text::Options;
use runtime::unix;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let opts = match Options::parse(&ops, "") {
        Ok(o) => o,
        Err(c) => return io::usage("rmdir", Some(c), "directory..."),
    };
    if opts.operands.is_empty() {
        runtime::eprintln!("rmdir: missing operand");
        return io::usage("rmdir", None, "directory...");
    }
    let mut status = 0;
    for op in &opts.operands {
        if let Err(e) = unix::rmdir(op) {
            io::report("rmdir", op, e);
            status = io::FAILURE;
        }
    }
    status
}
