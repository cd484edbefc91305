//! grep: print the lines of files (or standard input) that match
//! patterns, as POSIX `grep` and GNU grep: basic regular expressions by
//! default, `-E` extended, `-F` fixed strings, `-e PATTERN` (repeatable),
//! `-i` ignore case, `-v` select non-matching lines, `-x` whole lines,
//! `-c` count, `-n` line numbers, `-l` file names, `-q` quiet, `-s` no
//! messages about files, `-h`/`-H` without/with file names. Status 0 if
//! a line was selected, 1 if none, 2 on trouble (a bad pattern, an
//! unreadable file) unless `-q` found a match.
//!
//! The patterns are translated to `regex-automata`'s syntax by
//! `coreutils::grep` (host-tested); the engine matches.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::format;
use alloc::vec;
use coreutils::getopt;
use coreutils::grep::{MatchOptions, Matcher, Syntax};
use coreutils::io::{self, LineReader, Out};

runtime::entry!(main);

const PROG: &str = "grep";
const TROUBLE: i32 = 2;

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let p = match getopt::parse(&ops, "EFGe:f:iyvxcnlLqshHw", true) {
        Ok(p) => p,
        Err(e) => {
            io::complain(PROG, &e);
            io::complain(PROG, "usage: grep [-EFivxcnlqshH] [-e PATTERN]... [PATTERN] [FILE]...");
            return TROUBLE;
        }
    };
    if p.has('w') || p.has('f') || p.has('L') {
        io::complain(PROG, "-w, -f and -L are not supported");
        return TROUBLE;
    }
    let mut syntax = Syntax::Basic;
    for &(c, _) in &p.opts {
        match c {
            'E' => syntax = Syntax::Extended,
            'F' => syntax = Syntax::Fixed,
            'G' => syntax = Syntax::Basic,
            _ => {}
        }
    }
    let mut operands = p.operands.clone();
    let patterns = if p.has('e') {
        p.all('e')
    } else if operands.is_empty() {
        io::complain(PROG, "usage: grep [-EFivxcnlqshH] [-e PATTERN]... [PATTERN] [FILE]...");
        return TROUBLE;
    } else {
        vec![operands.remove(0)]
    };
    let options = MatchOptions {
        syntax,
        ignore_case: p.has('i') || p.has('y'),
        whole_line: p.has('x'),
        invert: p.has('v'),
    };
    let matcher = match Matcher::new(&patterns, options) {
        Ok(m) => m,
        Err(e) => {
            io::complain(PROG, &e);
            return TROUBLE;
        }
    };
    let files = if operands.is_empty() { vec!["-"] } else { operands };
    let with_names = (files.len() > 1 || p.has('H')) && !p.has('h');
    let (count, numbers, names_only, quiet, silent) =
        (p.has('c'), p.has('n'), p.has('l'), p.has('q'), p.has('s'));
    let mut out = Out::new();
    let mut any = false;
    let mut trouble = false;
    'files: for name in &files {
        let fd = if *name == "-" {
            0
        } else {
            match runtime::unix::open(name, protocols::unix::open_flags::O_RDONLY, 0) {
                Ok(fd) => fd,
                Err(e) => {
                    if !silent {
                        io::report(PROG, name, e);
                    }
                    trouble = true;
                    continue;
                }
            }
        };
        // GNU grep's name for standard input.
        let shown = if *name == "-" { "(standard input)" } else { name };
        let mut reader = LineReader::new(fd);
        let mut selected = 0u64;
        let mut number = 0u64;
        loop {
            let line = match reader.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    if !silent {
                        io::report(PROG, shown, e);
                    }
                    trouble = true;
                    break;
                }
            };
            number += 1;
            let text = line.strip_suffix(b"\n").unwrap_or(line);
            if !matcher.selects(text) {
                continue;
            }
            selected += 1;
            any = true;
            if quiet {
                io::close_input(fd);
                break 'files;
            }
            if names_only {
                break;
            }
            if count {
                continue;
            }
            if with_names {
                out.str(shown);
                out.str(":");
            }
            if numbers {
                out.str(&format!("{number}:"));
            }
            out.bytes(text);
            out.str("\n");
            if out.failed() {
                // Nobody reads the rest (a closed pipe): stop.
                io::close_input(fd);
                break 'files;
            }
        }
        io::close_input(fd);
        if count {
            if with_names {
                out.str(shown);
                out.str(":");
            }
            out.str(&format!("{selected}\n"));
        }
        if names_only && selected > 0 {
            out.str(shown);
            out.str("\n");
        }
    }
    let status = if quiet && any {
        0
    } else if trouble {
        TROUBLE
    } else if any {
        0
    } else {
        1
    };
    match out.flush() {
        Ok(()) => status,
        Err(e) => {
            io::report_write(PROG, e);
            TROUBLE
        }
    }
}
