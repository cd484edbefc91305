//! cat: copy files to standard output, in order; with no file, or for
//! `-`, standard input.
//!
//! A regular file that is standard output itself (`cat a >> a`) is not
//! copied: "input file is output file", status 1, as GNU cat says, since
//! the copy would chase its own end until the disk is full. The file's
//! identity is its manager (the volume) and inode number; with
//! `monitor.files=per-file` each open has its own manager, so this check
//! cannot see it there.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec;
use coreutils::io::{self, ChunkBuf, CopyError};
use coreutils::text::Options;
use protocols::unix::open_flags::O_RDONLY;
use runtime::{eprintln, unix};

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
    let output = regular_file_id(1);
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
        if output.is_some() && regular_file_id(fd) == output {
            eprintln!("cat: {name}: input file is output file");
            if fd != 0 {
                let _ = unix::close(fd);
            }
            status = io::FAILURE;
            continue;
        }
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

/// (manager, inode) of the regular file open as `fd`; None for anything
/// else (a terminal, a pipe, a device) or when it cannot be told.
fn regular_file_id(fd: unix::Fd) -> Option<(u64, u64)> {
    let st = unix::fstat(fd).ok()?;
    if !protocols::unix::mode::is_reg(st.mode) {
        return None;
    }
    Some((unix::fd_manager(fd).ok()?, st.ino))
}
