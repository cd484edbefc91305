//! sync: every mounted disk file system writes what it holds and flushes
//! its device (`monitor::OP_SYNC`). With FILE operands, `fsync` of each
//! instead (`-d`: `fdatasync`), as GNU sync does.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use coreutils::io;
use protocols::unix::open_flags::O_RDONLY;
use runtime::unix;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let data_only = args.iter().nth(1) == Some("-d");
    let files: alloc::vec::Vec<&str> = args.iter().skip(if data_only { 2 } else { 1 }).collect();
    if files.is_empty() {
        return match unix::sync() {
            Ok(()) => 0,
            Err(e) => {
                io::report("sync", "sync", e);
                io::FAILURE
            }
        };
    }
    let mut status = 0;
    for f in files {
        let synced = unix::open(f, O_RDONLY, 0).and_then(|fd| {
            let r = if data_only { unix::fdatasync(fd) } else { unix::fsync(fd) };
            let _ = unix::close(fd);
            r
        });
        if let Err(e) = synced {
            io::report("sync", f, e);
            status = io::FAILURE;
        }
    }
    status
}
