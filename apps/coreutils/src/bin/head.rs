//! head: the first lines (`-n N`, default 10) or bytes (`-c N`) of each
//! file or of standard input; `-n -N`/`-c -N` all but the last N (GNU);
//! the obsolete `-N` is `-n N`. With several files, `==> name <==`
//! headers (`-q` none, `-v` always). Status 1 if a file could not be
//! read. Counts: `coreutils::lines`.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use coreutils::io::{self, ChunkBuf, LineReader, Out};
use coreutils::lines::{self, Count};
use runtime::unix::{self, Errno, Fd};

runtime::entry!(main);

const PROG: &str = "head";

fn main(args: runtime::Args) -> i32 {
    let mut ops: Vec<&str> = io::operands(&args);
    // The obsolete form `head -5`.
    let obsolete: String;
    if let Some(first) = ops.first()
        && first.len() > 1
        && first.starts_with('-')
        && first[1..].bytes().all(|b| b.is_ascii_digit())
    {
        obsolete = String::from(&first[1..]);
        ops.remove(0);
        ops.insert(0, obsolete.as_str());
        ops.insert(0, "-n");
    }
    let lines::Request { bytes_mode, count, files, headers } = match lines::parse_request(&ops) {
        Ok(r) => r,
        Err(e) => {
            io::complain(PROG, &e);
            return io::FAILURE;
        }
    };
    let mut out = Out::new();
    let mut status = 0;
    let mut first_header = true;
    for name in &files {
        let Ok(fd) = io::open_input(PROG, name) else {
            status = io::FAILURE;
            continue;
        };
        if headers {
            if !first_header {
                out.str("\n");
            }
            first_header = false;
            out.str("==> ");
            out.str(io::display_name(name));
            out.str(" <==\n");
        }
        let result = head(fd, count, bytes_mode, &mut out);
        io::close_input(fd);
        if let Err(e) = result {
            io::report(PROG, io::display_name(name), e);
            status = io::FAILURE;
        }
    }
    out.finish(PROG, status)
}

fn head(fd: Fd, count: Count, bytes_mode: bool, out: &mut Out) -> Result<(), Errno> {
    if count.minus {
        // All but the last N: the whole input is needed first.
        let all = io::read_all(fd)?;
        let end = if bytes_mode {
            all.len().saturating_sub(count.n as usize)
        } else {
            lines::last_lines(&all, count.n)
        };
        out.bytes(&all[..end]);
        return Ok(());
    }
    let mut left = count.n;
    if bytes_mode {
        let mut buf = ChunkBuf::new();
        while left > 0 {
            let chunk = buf.bytes_mut();
            let want = chunk.len().min(left as usize);
            let n = unix::read(fd, &mut chunk[..want])?;
            if n == 0 {
                break;
            }
            out.bytes(&chunk[..n]);
            left -= n as u64;
        }
        return Ok(());
    }
    let mut reader = LineReader::new(fd);
    while left > 0 {
        match reader.next_line()? {
            Some(line) => out.bytes(line),
            None => break,
        }
        left -= 1;
    }
    Ok(())
}
