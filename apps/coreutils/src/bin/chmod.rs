//! chmod: change the permission bits of each FILE to MODE, octal (`755`)
//! or symbolic (`u+x,go-w`), as POSIX `chmod`; `-R` descends into
//! directories. Status 1 if a mode is bad or a file could not be changed.
//! Modes: `coreutils::mode` (host-tested).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::format;
use coreutils::io;
use coreutils::mode;
use coreutils::text;
use protocols::unix::mode::{PERMISSIONS, is_dir};
use runtime::unix;

runtime::entry!(main);

const PROG: &str = "chmod";

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    // Options cannot be parsed the usual way: `-w` and `-x` are modes.
    let mut recursive = false;
    let mut rest = &ops[..];
    while let Some(first) = rest.first() {
        if *first == "-R" {
            recursive = true;
            rest = &rest[1..];
        } else if *first == "--" {
            rest = &rest[1..];
            break;
        } else {
            break;
        }
    }
    let Some((spec, files)) = rest.split_first() else {
        io::complain(PROG, "missing operand");
        return io::FAILURE;
    };
    if files.is_empty() {
        io::complain(PROG, &format!("missing operand after '{spec}'"));
        return io::FAILURE;
    }
    // Symbolic modes without `ugoa` respect the creation mask (XCU chmod).
    let umask = unix::umask(None);
    if let Err(e) = mode::apply(spec, 0, false, umask) {
        io::complain(PROG, &e);
        return io::FAILURE;
    }
    let mut status = 0;
    for name in files {
        if !change(name, spec, umask, recursive) {
            status = io::FAILURE;
        }
    }
    status
}

fn change(path: &str, spec: &str, umask: u32, recursive: bool) -> bool {
    let st = match unix::stat(path) {
        Ok(st) => st,
        Err(e) => {
            io::report(PROG, path, e);
            return false;
        }
    };
    let dir = is_dir(st.mode);
    let new = match mode::apply(spec, st.mode & PERMISSIONS, dir, umask) {
        Ok(m) => m,
        Err(e) => {
            io::complain(PROG, &e);
            return false;
        }
    };
    let mut ok = true;
    if let Err(e) = unix::chmod(path, new) {
        io::report(PROG, path, e);
        ok = false;
    }
    if recursive && dir {
        match unix::read_dir(path) {
            Ok(entries) => {
                for e in entries {
                    if e.name == "." || e.name == ".." {
                        continue;
                    }
                    ok &= change(&text::join(path, &e.name), spec, umask, true);
                }
            }
            Err(e) => {
                io::report(PROG, path, e);
                ok = false;
            }
        }
    }
    ok
}
