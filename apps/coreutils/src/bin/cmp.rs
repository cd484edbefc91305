//! cmp: compare two files byte by byte (`cmp [-l|-s] FILE1 [FILE2]`; `-` or
//! a missing FILE2 is standard input), as GNU cmp does. Identical: no
//! output, status 0. Different: `FILE1 FILE2 differ: byte N, line L` on
//! standard output, status 1; one a prefix of the other: `cmp: EOF on
//! FILE after byte N, line L` on standard error, status 1. Trouble (a
//! file that cannot be read, bad usage): a message and status 2. `-s`
//! prints nothing about the files, only the status says; `-l` (POSIX)
//! lists every differing byte (`N OLD NEW`, octal) instead of stopping at
//! the first.
//!
//! The comparison and its messages are `coreutils::cmp` (host-tested).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use coreutils::cmp::{self, Comparison, Outcome, Side};
use coreutils::io::{self, CHUNK_BYTES, ChunkBuf, Out};
use coreutils::text::Options;
use protocols::unix::Errno;
use protocols::unix::open_flags::O_RDONLY;
use runtime::unix::{self, Fd};
use runtime::{eprintln, println};

runtime::entry!(main);

const USAGE: &str = "[-l | -s] file1 [file2]";
/// Exit statuses (GNU cmp's).
const SAME: i32 = 0;
const DIFFERENT: i32 = 1;
const TROUBLE: i32 = 2;

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let opts = match Options::parse(&ops, "ls") {
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
    if opts.has('l') && !is_silent {
        let size = |fd: Fd| {
            unix::fstat(fd).ok().filter(|st| protocols::unix::mode::is_reg(st.mode)).map(|st| st.size_bytes)
        };
        let width = cmp::list_width([size(first_fd), size(second_fd)]);
        let status = list_all(
            [(first, first_fd), (second, second_fd)],
            [first_buf.bytes_mut(), second_buf.bytes_mut()],
            width,
        );
        close(first, first_fd);
        close(second, second_fd);
        return status;
    }
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

/// `-l`: every difference on standard output, then (if one file is
/// shorter) the end-of-file message; the status.
fn list_all(files: [(&str, Fd); 2], bufs: [&mut [u8]; 2], width: usize) -> i32 {
    let [(first, first_fd), (second, second_fd)] = files;
    let [first_buf, second_buf] = bufs;
    let mut offset = 0u64;
    let mut differ = false;
    let mut out = Out::new();
    loop {
        let got_first = match read_full(first_fd, first_buf) {
            Ok(n) => n,
            Err(e) => {
                io::report("cmp", first, e);
                return TROUBLE;
            }
        };
        let got_second = match read_full(second_fd, second_buf) {
            Ok(n) => n,
            Err(e) => {
                io::report("cmp", second, e);
                return TROUBLE;
            }
        };
        let common = got_first.min(got_second);
        let mut text = alloc::string::String::new();
        differ |=
            cmp::list_differences(offset, &first_buf[..common], &second_buf[..common], width, &mut text);
        out.str(&text);
        offset += common as u64;
        if got_first != got_second {
            let status = out.finish("cmp", DIFFERENT);
            let name = if got_first < got_second { first } else { second };
            eprintln!("{}", cmp::eof_message_bytes(name, offset));
            return status.max(DIFFERENT);
        }
        if common < first_buf.len() {
            return out.finish("cmp", if differ { DIFFERENT } else { SAME });
        }
    }
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
