//! sort: sort the lines of files (or standard input) to standard output,
//! as POSIX `sort` in the C locale: `-k KEYDEF` (repeatable), `-t C`,
//! `-b -f -n -r` (global orderings), `-u` (one of each run of equal
//! keys), `-s` (stable), `-o FILE` (written after all input is read, so
//! it may be an input). Status 0, or 2 on trouble (GNU's). Keys and
//! comparisons: `coreutils::sort` (host-tested).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;
use coreutils::getopt;
use coreutils::io::{self, Out};
use coreutils::sort::{self, Key, Spec};
use protocols::unix::open_flags::{O_CREAT, O_TRUNC, O_WRONLY};
use runtime::unix;

runtime::entry!(main);

const PROG: &str = "sort";
const TROUBLE: i32 = 2;

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let p = match getopt::parse(&ops, "bfnrusk:t:o:", true) {
        Ok(p) => p,
        Err(e) => {
            io::complain(PROG, &e);
            return TROUBLE;
        }
    };
    let mut spec = Spec::default();
    for &(c, v) in &p.opts {
        match c {
            'k' => match Key::parse(v.unwrap_or("")) {
                Ok(k) => spec.keys.push(k),
                Err(e) => {
                    io::complain(PROG, &e);
                    return TROUBLE;
                }
            },
            't' => {
                let t = v.unwrap_or("").as_bytes();
                if t.len() != 1 {
                    io::complain(PROG, "the field separator must be one character");
                    return TROUBLE;
                }
                spec.separator = Some(t[0]);
            }
            'u' => spec.unique = true,
            's' => spec.stable = true,
            'o' => {}
            other => {
                spec.global.set(other);
            }
        }
    }
    let files = if p.operands.is_empty() { vec!["-"] } else { p.operands.clone() };
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for name in &files {
        let Ok(fd) = io::open_input(PROG, name) else {
            return TROUBLE;
        };
        let result = io::read_all(fd);
        io::close_input(fd);
        match result {
            Ok(bytes) => inputs.push(bytes),
            Err(e) => {
                io::report(PROG, io::display_name(name), e);
                return TROUBLE;
            }
        }
    }
    let mut lines: Vec<&[u8]> = Vec::new();
    for input in &inputs {
        lines.extend(sort::split_lines(input));
    }
    spec.sort(&mut lines);
    let mut text = Vec::new();
    for l in &lines {
        text.extend_from_slice(l);
        text.push(b'\n');
    }
    if let Some(path) = p.last('o') {
        let fd = match unix::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o666) {
            Ok(fd) => fd,
            Err(e) => {
                io::report(PROG, path, e);
                return TROUBLE;
            }
        };
        let result = io::write_all(fd, &text);
        let _ = unix::close(fd);
        if let Err(e) = result {
            io::report(PROG, path, e);
            return TROUBLE;
        }
        return 0;
    }
    let mut out = Out::new();
    out.bytes(&text);
    match out.flush() {
        Ok(()) => 0,
        Err(e) => {
            io::report_write(PROG, e);
            TROUBLE
        }
    }
}
