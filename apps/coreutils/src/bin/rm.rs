//! rm: remove files; `-r` (or `-R`) removes directories and everything in
//! them, `-f` ignores names that do not exist and a missing operand.
//! `.`, `..` and `/` are refused, as in other systems.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use coreutils::io;
use coreutils::text::{self, Options};
use protocols::unix::{errno, mode};
use runtime::unix::{self, Errno};

runtime::entry!(main);

struct Flags {
    recursive: bool,
    force: bool,
}

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let opts = match Options::parse(&ops, "rRf") {
        Ok(o) => o,
        Err(c) => return io::usage("rm", Some(c), "[-rf] file..."),
    };
    let flags = Flags { recursive: opts.has('r') || opts.has('R'), force: opts.has('f') };
    if opts.operands.is_empty() {
        if flags.force {
            return 0;
        }
        runtime::eprintln!("rm: missing operand");
        return io::usage("rm", None, "[-rf] file...");
    }
    let mut status = 0;
    for op in &opts.operands {
        let base = text::base_name(op);
        if base == "." || base == ".." {
            runtime::eprintln!("rm: refusing to remove '.' or '..': {op}");
            status = io::FAILURE;
        } else if base == "/" {
            runtime::eprintln!("rm: refusing to remove '/'");
            status = io::FAILURE;
        } else if !remove(op, &flags) {
            status = io::FAILURE;
        }
    }
    status
}

/// Remove `path` (and, with `-r`, what a directory holds); errors are
/// reported here. Returns whether everything went.
fn remove(path: &str, flags: &Flags) -> bool {
    let ignored = |e: Errno| flags.force && e == errno::ENOENT;
    let st = match unix::stat(path) {
        Ok(st) => st,
        Err(e) if ignored(e) => return true,
        Err(e) => {
            io::report("rm", path, e);
            return false;
        }
    };
    if !mode::is_dir(st.mode) {
        return match unix::unlink(path) {
            Ok(()) => true,
            Err(e) if ignored(e) => true,
            Err(e) => {
                io::report("rm", path, e);
                false
            }
        };
    }
    if !flags.recursive {
        io::report("rm", path, errno::EISDIR);
        return false;
    }
    let entries = match unix::read_dir(path) {
        Ok(e) => e,
        Err(e) => {
            io::report("rm", path, e);
            return false;
        }
    };
    let mut ok = true;
    for e in entries.iter().filter(|e| e.name != "." && e.name != "..") {
        ok &= remove(&text::join(path, &e.name), flags);
    }
    if !ok {
        // Something inside stayed: the directory cannot go (already said).
        return false;
    }
    match unix::rmdir(path) {
        Ok(()) => true,
        Err(e) if ignored(e) => true,
        Err(e) => {
            io::report("rm", path, e);
            false
        }
    }
}
