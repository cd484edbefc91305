//! tr: copy standard input to standard output translating, deleting
//! (`-d`) or squeezing (`-s`) bytes of SET1 (`-c`: of its complement),
//! as POSIX `tr` in the C locale. Status 1 on bad sets. Sets and
//! translation: `coreutils::tr` (host-tested).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec::Vec;
use coreutils::getopt;
use coreutils::io::{self, ChunkBuf, CopyError};
use coreutils::tr::Tr;
use runtime::unix;

runtime::entry!(main);

const PROG: &str = "tr";

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let p = match getopt::parse(&ops, "cCds", true) {
        Ok(p) => p,
        Err(e) => {
            io::complain(PROG, &e);
            return io::FAILURE;
        }
    };
    let mut tr = match Tr::new(p.has('c') || p.has('C'), p.has('d'), p.has('s'), &p.operands) {
        Ok(t) => t,
        Err(e) => {
            io::complain(PROG, &e);
            return io::FAILURE;
        }
    };
    let mut buf = ChunkBuf::new();
    let mut out = Vec::new();
    let result: Result<(), CopyError> = (|| loop {
        let chunk = buf.bytes_mut();
        let n = unix::read(0, chunk).map_err(CopyError::Read)?;
        if n == 0 {
            return Ok(());
        }
        out.clear();
        tr.feed(&chunk[..n], &mut out);
        io::write_all(1, &out).map_err(CopyError::Write)?;
    })();
    match result {
        Ok(()) => 0,
        Err(CopyError::Read(e)) => {
            io::report(PROG, "read error", e);
            io::FAILURE
        }
        Err(CopyError::Write(e)) => {
            io::report_write(PROG, e);
            io::FAILURE
        }
    }
}
