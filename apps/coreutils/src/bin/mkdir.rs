//! mkdir: make directories (mode 0755); `-p` also makes missing parents
//! and accepts directories that exist.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use coreutils::io;
use coreutils::text::{self, Options};
use protocols::unix::{errno, mode};
use runtime::unix;

runtime::entry!(main);

/// There is no umask; this is the usual 0777 & ~022.
const DIR_MODE: u32 = 0o755;

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let opts = match Options::parse(&ops, "p") {
        Ok(o) => o,
        Err(c) => return io::usage("mkdir", Some(c), "[-p] directory..."),
    };
    if opts.operands.is_empty() {
        runtime::eprintln!("mkdir: missing operand");
        return io::usage("mkdir", None, "[-p] directory...");
    }
    let parents = opts.has('p');
    let mut status = 0;
    for op in &opts.operands {
        if parents {
            for dir in text::prefixes(op) {
                match unix::mkdir(dir, DIR_MODE) {
                    Ok(()) => {}
                    Err(e) if e == errno::EEXIST && unix::stat(dir).is_ok_and(|s| mode::is_dir(s.mode)) => {}
                    Err(e) => {
                        io::report("mkdir", dir, e);
                        status = io::FAILURE;
                        break;
                    }
                }
            }
        } else if let Err(e) = unix::mkdir(op, DIR_MODE) {
            io::report("mkdir", op, e);
            status = io::FAILURE;
        }
    }
    status
}
