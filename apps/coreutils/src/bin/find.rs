//! find: walk directory trees and print the paths that pass the tests, as
//! POSIX `find` with a subset of its expression: `find [PATH...]
//! [-maxdepth N] [-mindepth N] [!] -name PATTERN, [!] -type f|d|c|b|p|s,
//! -print`, all joined by an implicit AND (`-a` is accepted); without
//! `-print` the paths that pass are printed. Paths come in directory
//! order (as GNU's do: pipe into `sort` for a fixed order). Status 1 if a
//! path could not be read or the expression is bad. Name patterns:
//! `coreutils::fnmatch` (host-tested).
//!
//! What it is not: `-o`, parentheses, `-exec`, time or size tests; they
//! are refused with a message naming them, never ignored.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use coreutils::fnmatch;
use coreutils::io::{self, Out};
use coreutils::text;
use protocols::unix::mode::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFMT, S_IFREG, S_IFSOCK};
use runtime::unix;

runtime::entry!(main);

const PROG: &str = "find";

enum Step {
    Name(String, bool),
    Type(u32, bool),
    Print,
}

struct Walk {
    steps: Vec<Step>,
    has_print: bool,
    min_depth: usize,
    max_depth: usize,
    status: i32,
}

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let start = ops.iter().position(|a| a.starts_with('-') || *a == "!" || *a == "(").unwrap_or(ops.len());
    let mut paths: Vec<&str> = ops[..start].to_vec();
    if paths.is_empty() {
        paths.push(".");
    }
    let mut walk =
        Walk { steps: Vec::new(), has_print: false, min_depth: 0, max_depth: usize::MAX, status: 0 };
    let mut i = start;
    let mut negate = false;
    while i < ops.len() {
        let arg = ops[i];
        let value = ops.get(i + 1).copied();
        let missing = format!("missing argument to '{arg}'");
        let result: Result<usize, String> = match arg {
            "!" | "-not" => {
                negate = !negate;
                i += 1;
                continue;
            }
            "-a" | "-and" => Ok(1),
            "-print" => {
                walk.steps.push(Step::Print);
                walk.has_print = true;
                Ok(1)
            }
            "-name" => value.ok_or(missing).map(|v| {
                walk.steps.push(Step::Name(String::from(v), negate));
                2
            }),
            "-type" => value.ok_or(missing).and_then(|v| {
                let t = match v {
                    "f" => S_IFREG,
                    "d" => S_IFDIR,
                    "c" => S_IFCHR,
                    "b" => S_IFBLK,
                    "p" => S_IFIFO,
                    "s" => S_IFSOCK,
                    _ => return Err(format!("Unknown argument to -type: {v}")),
                };
                walk.steps.push(Step::Type(t, negate));
                Ok(2)
            }),
            "-maxdepth" | "-mindepth" => value.ok_or(missing).and_then(|v| {
                let n: usize = v.parse().map_err(|_| format!("invalid argument '{v}' to '{arg}'"))?;
                if arg == "-maxdepth" {
                    walk.max_depth = n;
                } else {
                    walk.min_depth = n;
                }
                Ok(2)
            }),
            other => Err(format!("unknown or unsupported predicate '{other}'")),
        };
        if negate && !matches!(arg, "-name" | "-type") {
            io::complain(PROG, &format!("'!' before '{arg}' is not supported"));
            return io::FAILURE;
        }
        negate = false;
        match result {
            Ok(n) => i += n,
            Err(e) => {
                io::complain(PROG, &e);
                return io::FAILURE;
            }
        }
    }
    let mut out = Out::new();
    for path in paths {
        match unix::stat(path) {
            Ok(st) => visit(&mut walk, path, st.mode, 0, &mut out),
            Err(e) => {
                io::report(PROG, path, e);
                walk.status = io::FAILURE;
            }
        }
    }
    out.finish(PROG, walk.status)
}

fn visit(walk: &mut Walk, path: &str, mode: u32, depth: usize, out: &mut Out) {
    if depth >= walk.min_depth {
        let mut pass = true;
        for step in &walk.steps {
            match step {
                Step::Name(pattern, negate) => {
                    let name = text::base_name(path);
                    pass = fnmatch::matches(pattern.as_bytes(), name.as_bytes()) != *negate;
                }
                Step::Type(t, negate) => pass = (mode & S_IFMT == *t) != *negate,
                Step::Print => out.line(path),
            }
            if !pass {
                break;
            }
        }
        if pass && !walk.has_print {
            out.line(path);
        }
    }
    if mode & S_IFMT != S_IFDIR || depth >= walk.max_depth {
        return;
    }
    let entries = match unix::read_dir(path) {
        Ok(e) => e,
        Err(e) => {
            io::report(PROG, path, e);
            walk.status = io::FAILURE;
            return;
        }
    };
    for e in entries {
        if e.name == "." || e.name == ".." {
            continue;
        }
        let child = text::join(path, &e.name);
        // The entry's mode may carry only the type; stat for the rest.
        let child_mode = if e.mode & S_IFMT != 0 {
            e.mode
        } else {
            match unix::stat(&child) {
                Ok(st) => st.mode,
                Err(err) => {
                    io::report(PROG, &child, err);
                    walk.status = io::FAILURE;
                    continue;
                }
            }
        };
        visit(walk, &child, child_mode, depth + 1, out);
    }
}
