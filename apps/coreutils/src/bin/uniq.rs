//! uniq: write one line of each run of equal adjacent lines (POSIX
//! `uniq`): `-c` prefix each with its count (GNU's `%7d `), `-d` only
//! runs of more than one, `-u` only single lines; `uniq [IN [OUT]]`.
//! Status 1 if a file could not be opened.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::format;
use alloc::vec::Vec;
use coreutils::getopt;
use coreutils::io::{self, LineReader};
use protocols::unix::open_flags::{O_CREAT, O_TRUNC, O_WRONLY};
use runtime::unix;

runtime::entry!(main);

const PROG: &str = "uniq";

struct Opts {
    count: bool,
    repeated: bool,
    unique: bool,
}

fn emit(o: &Opts, line: &[u8], n: u64, text: &mut Vec<u8>) {
    if (o.repeated && n < 2) || (o.unique && n > 1) {
        return;
    }
    if o.count {
        text.extend_from_slice(format!("{n:>7} ").as_bytes());
    }
    text.extend_from_slice(line);
    text.push(b'\n');
}

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let p = match getopt::parse(&ops, "cdu", true) {
        Ok(p) => p,
        Err(e) => {
            io::complain(PROG, &e);
            return io::FAILURE;
        }
    };
    if p.operands.len() > 2 {
        io::complain(PROG, &format!("extra operand '{}'", p.operands[2]));
        return io::FAILURE;
    }
    let o = Opts { count: p.has('c'), repeated: p.has('d'), unique: p.has('u') };
    let input = p.operands.first().copied().unwrap_or("-");
    let Ok(fd) = io::open_input(PROG, input) else {
        return io::FAILURE;
    };
    let out_fd = match p.operands.get(1) {
        Some(&name) if name != "-" => match unix::open(name, O_WRONLY | O_CREAT | O_TRUNC, 0o666) {
            Ok(fd) => fd,
            Err(e) => {
                io::report(PROG, name, e);
                return io::FAILURE;
            }
        },
        _ => 1,
    };
    let mut reader = LineReader::new(fd);
    let mut text = Vec::new();
    let mut current: Option<(Vec<u8>, u64)> = None;
    let mut status = 0;
    loop {
        let line = match reader.next_line() {
            Ok(Some(l)) => l.strip_suffix(b"\n").unwrap_or(l),
            Ok(None) => break,
            Err(e) => {
                io::report(PROG, io::display_name(input), e);
                status = io::FAILURE;
                break;
            }
        };
        match &mut current {
            Some((prev, n)) if prev.as_slice() == line => *n += 1,
            _ => {
                if let Some((prev, n)) = current.take() {
                    emit(&o, &prev, n, &mut text);
                }
                current = Some((Vec::from(line), 1));
            }
        }
        if text.len() >= 16 * 1024 {
            if let Err(e) = io::write_all(out_fd, &text) {
                io::report_write(PROG, e);
                return io::FAILURE;
            }
            text.clear();
        }
    }
    if let Some((prev, n)) = current {
        emit(&o, &prev, n, &mut text);
    }
    io::close_input(fd);
    if let Err(e) = io::write_all(out_fd, &text) {
        io::report_write(PROG, e);
        return io::FAILURE;
    }
    if out_fd != 1 {
        let _ = unix::close(out_fd);
    }
    status
}
