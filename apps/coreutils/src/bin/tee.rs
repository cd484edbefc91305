//! tee: copy standard input to standard output and to each FILE
//! (created or truncated; `-a` appends), as POSIX `tee`. A file that
//! cannot be opened or written is reported and dropped, the copy goes on,
//! and the status is 1.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec::Vec;
use coreutils::getopt;
use coreutils::io::{self, ChunkBuf};
use protocols::unix::open_flags::{O_APPEND, O_CREAT, O_TRUNC, O_WRONLY};
use runtime::unix::{self, Fd};

runtime::entry!(main);

const PROG: &str = "tee";

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let p = match getopt::parse(&ops, "ai", true) {
        Ok(p) => p,
        Err(e) => {
            io::complain(PROG, &e);
            return io::FAILURE;
        }
    };
    let flags = O_WRONLY | O_CREAT | if p.has('a') { O_APPEND } else { O_TRUNC };
    let mut status = 0;
    // Standard output first, then the files in order; `None`: dropped.
    let mut outputs: Vec<(Option<Fd>, &str)> = Vec::from([(Some(1), "standard output")]);
    for name in &p.operands {
        if *name == "-" {
            outputs.push((Some(1), "standard output"));
            continue;
        }
        match unix::open(name, flags, 0o666) {
            Ok(fd) => outputs.push((Some(fd), name)),
            Err(e) => {
                io::report(PROG, name, e);
                status = io::FAILURE;
            }
        }
    }
    let mut buf = ChunkBuf::new();
    loop {
        let chunk = buf.bytes_mut();
        let n = match unix::read(0, chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                io::report(PROG, "read error", e);
                status = io::FAILURE;
                break;
            }
        };
        for (fd, name) in outputs.iter_mut() {
            if let Some(f) = *fd
                && let Err(e) = io::write_all(f, &chunk[..n])
            {
                if f == 1 {
                    io::report_write(PROG, e);
                } else {
                    io::report(PROG, name, e);
                }
                *fd = None;
                status = io::FAILURE;
            }
        }
    }
    for (fd, _) in &outputs {
        if let Some(f) = *fd
            && f != 1
        {
            let _ = unix::close(f);
        }
    }
    status
}
