//! sha256sum: print the SHA-256 digest of files (or standard input, also
//! named `-`) as `<hex>  <name>`, the format of GNU coreutils.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec;
use coreutils::io::{self, ChunkBuf, Out};
use coreutils::text::{self, Options};
use protocols::unix::open_flags::O_RDONLY;
use runtime::unix;
use sha2::{Digest, Sha256};

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let opts = match Options::parse(&ops, "") {
        Ok(o) => o,
        Err(c) => return io::usage("sha256sum", Some(c), "[file...]"),
    };
    let files = if opts.operands.is_empty() { vec!["-"] } else { opts.operands };
    let mut out = Out::new();
    let mut buf = ChunkBuf::new();
    let mut status = 0;
    for name in files {
        let fd = if name == "-" {
            0
        } else {
            match unix::open(name, O_RDONLY, 0) {
                Ok(fd) => fd,
                Err(e) => {
                    io::report("sha256sum", name, e);
                    status = io::FAILURE;
                    continue;
                }
            }
        };
        let mut hasher = Sha256::new();
        let result = io::for_each_chunk(fd, &mut buf, |chunk| hasher.update(chunk));
        if fd != 0 {
            let _ = unix::close(fd);
        }
        match result {
            Ok(()) => out.line(&alloc::format!("{}  {name}", text::hex(&hasher.finalize()))),
            Err(e) => {
                io::report("sha256sum", name, e);
                status = io::FAILURE;
            }
        }
    }
    out.finish("sha256sum", status)
}
