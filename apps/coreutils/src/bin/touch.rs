//! touch: create each FILE that does not exist (empty, mode 0666 less the
//! umask), or set the modification time of one that does to now, as
//! POSIX `touch` without a time operand; `-c` creates nothing. Status 1
//! if a file could be neither created nor touched.
//!
//! Setting the time to now goes through `ftruncate` to the file's own
//! size: both file systems stamp a truncation with the calendar clock,
//! and no UNIX call sets arbitrary times yet, so `-d`, `-t` and `-r` are
//! refused with a message rather than ignored.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use coreutils::getopt;
use coreutils::io;
use protocols::unix::errno::ENOENT;
use protocols::unix::open_flags::{O_CREAT, O_EXCL, O_WRONLY};
use runtime::unix;

runtime::entry!(main);

const PROG: &str = "touch";

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let p = match getopt::parse(&ops, "acmd:t:r:", true) {
        Ok(p) => p,
        Err(e) => {
            io::complain(PROG, &e);
            return io::FAILURE;
        }
    };
    if p.has('d') || p.has('t') || p.has('r') {
        io::complain(PROG, "-d, -t and -r are not supported (no call sets a file's times; only now)");
        return io::FAILURE;
    }
    if p.operands.is_empty() {
        io::complain(PROG, "missing file operand");
        return io::FAILURE;
    }
    let mut status = 0;
    for name in &p.operands {
        if let Err(e) = touch(name, p.has('c')) {
            io::report(PROG, name, e);
            status = io::FAILURE;
        }
    }
    status
}

fn touch(name: &str, no_create: bool) -> Result<(), unix::Errno> {
    match unix::stat(name) {
        Err(e) if e == ENOENT => {
            if no_create {
                return Ok(());
            }
            let fd = unix::open(name, O_WRONLY | O_CREAT | O_EXCL, 0o666)?;
            let _ = unix::close(fd);
            Ok(())
        }
        Err(e) => Err(e),
        Ok(st) if st.mode & protocols::unix::mode::S_IFMT == protocols::unix::mode::S_IFREG => {
            let fd = unix::open(name, O_WRONLY, 0)?;
            let result = unix::ftruncate(fd, st.size_bytes);
            let _ = unix::close(fd);
            result
        }
        // A directory or device: nothing to stamp through ftruncate.
        Ok(_) => Ok(()),
    }
}
