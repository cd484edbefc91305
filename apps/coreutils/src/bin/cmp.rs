//! cmp: compare two files byte by byte (`cmp [-s] FILE1 [FILE2]`; `-` or
//! a missing FILE2 is standard input), as GNU cmp does. Identical: no
//! output, status 0. Different: `FILE1 FILE2 differ: byte N, line L` on
//! standard output, status 1; one a prefix of the other: `cmp: EOF on
//! FILE after byte N, line L` on standard error, status 1. Trouble (a
//! file that cannot be read, bad usage): a message and status 2. `-s`
//! prints nothing about the files, only the status says.
//!
//! The comparison and its messages are `coreutils::cmp` (host-tested).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use coreutils::cmp::{self, Comparison, Outcome, Side};
use coreutils::io::{self, CHUNK_BYTES, ChunkBuf};
use coreutils::text::Options;
use protocols::unix::Errno;
use protocols::unix::open_flags::O_RDONLY;
use runtime::unix::{self, Fd};
use runtime::{eprintln, println};

runtime::entry!(main);

const USAGE: &str = "[-s] file1 [file2]";
/// Exit statuses (GNU cmp's).
const SAME: i32 = 0;
const DIFFERENT: i32 = 1;
const TROUBLE: i32 = 2;

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let opts = match Options::parse(&ops, "s") {
        Ok(o) => o,
        Err(c) => {
            io::usage("cmp", Some(c), USAGE);
            return TROUBLE;
        }
    };
    let (first, second) = match opts.operands.as_slice() {
        [first] => (*first, "-"),
        [first, second] => (*first, *second),
        [] => {
            eprintln!("cmp: missing operand");
            io::usage("cmp", None, USAGE);
            return TROUBLE;
        }
        [_, _, extra, ..] => {
            eprintln!("cmp: extra operand '{extra}'");
            io::usage("cmp", None, USAGE);
            return TROUBLE;
        }
    };
    let is_silent = opts.has('s');
    let trouble = |name: &str, e: Errno| {
        if !is_silent {
            io::report("cmp", name, e);
        }
        TROUBLE
    };
    let first_fd = match open(first) {
        Ok(fd) => fd,
        Err(e) => return trouble(first, e),
    };
    let second_fd = match open(second) {
        Ok(fd) => fd,
        Err(e) => {
            close(first, first_fd);
            return trouble(second, e);
        }
    };
    let (mut first_buf, mut second_buf) = (ChunkBuf::new(), ChunkBuf::new());
    let mut comparison = Comparison::default();
    let status = loop {
        let got_first = match read_full(first_fd, first_buf.bytes_mut()) {
            Ok(n) => n,
            Err(e) => break trouble(first, e),
        };
        let got_second = match read_full(second_fd, second_buf.bytes_mut()) {
            Ok(n) => n,
            Err(e) => break trouble(second, e),
        };
        let outcome = comparison.step(
            &first_buf.bytes_mut()[..got_first],
            &second_buf.bytes_mut()[..got_second],
            CHUNK_BYTES,
        );
        match outcome {
            Outcome::Same => continue,
            Outcome::Identical => break SAME,
            Outcome::Differ { byte, line } => {
                if !is_silent {
                    println!("{}", cmp::differ_message(first, second, byte, line));
                }
                break DIFFERENT;
            }
            Outcome::Eof { side, bytes, line } => {
                if !is_silent {
                    let name = if side == Side::First { first } else { second };
                    eprintln!("{}", cmp::eof_message(name, bytes, line));
                }
                break DIFFERENT;
            }
        }
    };
    close(first, first_fd);
    close(second, second_fd);
    status
}

fn open(name: &str) -> Result<Fd, Errno> {
    if name == "-" { Ok(0) } else { unix::open(name, O_RDONLY, 0) }
}

fn close(name: &str, fd: Fd) {
    if name != "-" {
        let _ = unix::close(fd);
    }
}

/// Reads until `buffer` is full or the file ends (a pipe returns what it
/// has, so one `read` may not fill it); returns the bytes read.
fn read_full(fd: Fd, buffer: &mut [u8]) -> Result<usize, Errno> {
    let mut filled = 0;
    while filled < buffer.len() {
        match unix::read(fd, &mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}
