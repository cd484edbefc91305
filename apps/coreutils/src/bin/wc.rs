//! wc: count lines (`-l`), words (`-w`) and bytes (`-c`) of files or of
//! standard input (all three when no flag is given), with a total line
//! when there are several files.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use coreutils::io::{self, ChunkBuf, Out};
use coreutils::text::{Options, WordCount};
use protocols::unix::open_flags::O_RDONLY;
use runtime::unix;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let opts = match Options::parse(&ops, "lwc") {
        Ok(o) => o,
        Err(c) => return io::usage("wc", Some(c), "[-lwc] [file...]"),
    };
    let any = opts.has('l') || opts.has('w') || opts.has('c');
    let (lines, words, bytes) =
        if any { (opts.has('l'), opts.has('w'), opts.has('c')) } else { (true, true, true) };
    let mut out = Out::new();
    let mut buf = ChunkBuf::new();
    let mut status = 0;
    let mut total = WordCount::default();
    if opts.operands.is_empty() {
        match count(0, &mut buf) {
            Ok(c) => out.line(&c.format(lines, words, bytes, None)),
            Err(e) => {
                io::report("wc", "-", e);
                status = io::FAILURE;
            }
        }
        return out.finish("wc", status);
    }
    for name in &opts.operands {
        let fd = if *name == "-" {
            0
        } else {
            match unix::open(name, O_RDONLY, 0) {
                Ok(fd) => fd,
                Err(e) => {
                    io::report("wc", name, e);
                    status = io::FAILURE;
                    continue;
                }
            }
        };
        let result = count(fd, &mut buf);
        if fd != 0 {
            let _ = unix::close(fd);
        }
        match result {
            Ok(c) => {
                out.line(&c.format(lines, words, bytes, Some(name)));
                total.add(&c);
            }
            Err(e) => {
                io::report("wc", name, e);
                status = io::FAILURE;
            }
        }
    }
    if opts.operands.len() > 1 {
        out.line(&total.format(lines, words, bytes, Some("total")));
    }
    out.finish("wc", status)
}

fn count(fd: unix::Fd, buf: &mut ChunkBuf) -> Result<WordCount, unix::Errno> {
    let mut c = WordCount::default();
    io::for_each_chunk(fd, buf, |chunk| c.feed(chunk))?;
    Ok(c)
}
