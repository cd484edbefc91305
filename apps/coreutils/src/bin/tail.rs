//! tail: the last lines (`-n N`, default 10) or bytes (`-c N`) of each
//! file or of standard input; `-n +N`/`-c +N` from the Nth on; the
//! obsolete `-N` and `+N` are `-n N` and `-n +N`. With several files,
//! `==> name <==` headers (`-q` none, `-v` always). Status 1 if a file
//! could not be read. No `-f`. Counts: `coreutils::lines`.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use coreutils::io::{self, Out};
use coreutils::lines;

runtime::entry!(main);

const PROG: &str = "tail";

fn main(args: runtime::Args) -> i32 {
    let mut ops: Vec<&str> = io::operands(&args);
    // The obsolete forms `tail -5` and `tail +5`.
    let obsolete: String;
    if let Some(first) = ops.first()
        && first.len() > 1
        && (first.starts_with('-') || first.starts_with('+'))
        && first[1..].bytes().all(|b| b.is_ascii_digit())
    {
        obsolete = if first.starts_with('+') { String::from(*first) } else { String::from(&first[1..]) };
        ops.remove(0);
        ops.insert(0, obsolete.as_str());
        ops.insert(0, "-n");
    }
    let lines::Request { bytes_mode, count, files, headers } = match lines::parse_request(&ops) {
        Ok(r) => r,
        Err(e) => {
            io::complain(PROG, &e);
            return io::FAILURE;
        }
    };
    let mut out = Out::new();
    let mut status = 0;
    let mut first_header = true;
    for name in &files {
        let Ok(fd) = io::open_input(PROG, name) else {
            status = io::FAILURE;
            continue;
        };
        let result = io::read_all(fd);
        io::close_input(fd);
        let all = match result {
            Ok(a) => a,
            Err(e) => {
                io::report(PROG, io::display_name(name), e);
                status = io::FAILURE;
                continue;
            }
        };
        if headers {
            if !first_header {
                out.str("\n");
            }
            first_header = false;
            out.str("==> ");
            out.str(io::display_name(name));
            out.str(" <==\n");
        }
        let start = match (bytes_mode, count.plus) {
            (true, true) => (count.n.saturating_sub(1) as usize).min(all.len()),
            (true, false) => all.len().saturating_sub(count.n as usize),
            (false, true) => lines::after_lines(&all, count.n.saturating_sub(1)),
            (false, false) => lines::last_lines(&all, count.n),
        };
        out.bytes(&all[start..]);
    }
    out.finish(PROG, status)
}
