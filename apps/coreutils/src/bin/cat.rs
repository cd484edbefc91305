//! cat: copy files to standard output, in order; with no file, or for
//! `-`, standard input.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec;
use coreutils::io::{self, ChunkBuf, CopyError};
use coreutils::text::Options;
use protocols::unix::open_flags::O_RDONLY;
use runtime::unix;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let opts = match Options::parse(&ops, "") {
        Ok(o) => o,
        Err(c) => return io::usage("cat", Some(c), "[file...]"),
    };
    let files = if opts.operands.is_empty() { vec!["-"] } else { opts.operands };
    let mut buf = ChunkBuf::new();
    let mut status = 0;
    for name in files {
        let fd = if name == "-" {
            0
        } else {
            match unix::open(name, O_RDONLY, 0) {
                Ok(fd) => fd,
                Err(e) => {
                    io::report("cat", name, e);
                    status = io::FAILURE;
                    continue;
                }
            }
        };
        let result = io::copy_fd(fd, 1, &mut buf);
        if fd != 0 {
            let _ = unix::close(fd);
        }
        match result {
            Ok(_) => {}
            Err(CopyError::Read(e)) => {
                io::report("cat", name, e);
                status = io::FAILURE;
            }
            Err(CopyError::Write(e)) => {
                // Nowhere to write the rest either (a closed pipe, a full disk).
                io::report_write("cat", e);
                return io::FAILURE;
            }
        }
    }
    status
}
