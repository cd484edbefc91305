//! cut: select parts of each line of files (or standard input), as POSIX
//! `cut`: `-b LIST` or `-c LIST` (bytes; the C locale), or `-f LIST`
//! fields separated by `-d C` (default tab), `-s` dropping lines without
//! one. Status 1 on bad usage or an unreadable file. Lists:
//! `coreutils::cut` (host-tested).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;
use coreutils::cut::{self, List};
use coreutils::getopt;
use coreutils::io::{self, LineReader, Out};

runtime::entry!(main);

const PROG: &str = "cut";

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let p = match getopt::parse(&ops, "b:c:f:d:sn", true) {
        Ok(p) => p,
        Err(e) => {
            io::complain(PROG, &e);
            return io::FAILURE;
        }
    };
    let modes: Vec<char> = p.opts.iter().map(|&(c, _)| c).filter(|c| "bcf".contains(*c)).collect();
    let Some(&mode) = modes.first() else {
        io::complain(PROG, "you must specify a list of bytes, characters, or fields");
        return io::FAILURE;
    };
    if modes.iter().any(|&m| m != mode) {
        io::complain(PROG, "only one type of list may be specified");
        return io::FAILURE;
    }
    let list = match List::parse(p.last(mode).unwrap_or("")) {
        Ok(l) => l,
        Err(e) => {
            io::complain(PROG, &e);
            return io::FAILURE;
        }
    };
    let delim = match p.last('d') {
        None => b'\t',
        Some(d) if d.len() == 1 => d.as_bytes()[0],
        Some(_) => {
            io::complain(PROG, "the delimiter must be a single character");
            return io::FAILURE;
        }
    };
    if mode != 'f' && (p.has('d') || p.has('s')) {
        io::complain(PROG, "an input delimiter may be specified only when operating on fields");
        return io::FAILURE;
    }
    let files = if p.operands.is_empty() { vec!["-"] } else { p.operands.clone() };
    let mut out = Out::new();
    let mut status = 0;
    let mut selected = Vec::new();
    for name in &files {
        let Ok(fd) = io::open_input(PROG, name) else {
            status = io::FAILURE;
            continue;
        };
        let mut reader = LineReader::new(fd);
        loop {
            let line = match reader.next_line() {
                Ok(Some(l)) => l.strip_suffix(b"\n").unwrap_or(l),
                Ok(None) => break,
                Err(e) => {
                    io::report(PROG, io::display_name(name), e);
                    status = io::FAILURE;
                    break;
                }
            };
            selected.clear();
            if mode == 'f' {
                if cut::fields(line, &list, delim, &mut selected).is_none() {
                    if p.has('s') {
                        continue;
                    }
                    selected.extend_from_slice(line);
                }
            } else {
                cut::bytes(line, &list, &mut selected);
            }
            selected.push(b'\n');
            out.bytes(&selected);
            if out.failed() {
                // Nobody reads the rest (a closed pipe): stop.
                break;
            }
        }
        io::close_input(fd);
    }
    out.finish(PROG, status)
}
