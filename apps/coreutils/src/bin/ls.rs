//! ls: list directories and files, one name per line, sorted by name.
//!
//! Flags: `-l` (mode, links, owner, group, size, name), `-a` (also the
//! names starting with `.`, `.` and `..` included), `-1` (accepted; the
//! output is always one name per line). With several operands, files come
//! first, then each directory under a `name:` header.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use coreutils::io::{self, Out};
use coreutils::text::{self, LongEntry, Options};
use protocols::unix::{Stat, mode};
use runtime::unix;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let opts = match Options::parse(&ops, "la1") {
        Ok(o) => o,
        Err(c) => return io::usage("ls", Some(c), "[-la1] [file...]"),
    };
    let (long, all) = (opts.has('l'), opts.has('a'));
    let operands = if opts.operands.is_empty() { vec!["."] } else { opts.operands };
    let mut out = Out::new();
    let mut status = 0;

    let mut files: Vec<(String, Stat)> = Vec::new();
    let mut dirs: Vec<&str> = Vec::new();
    for op in &operands {
        match unix::stat(op) {
            Ok(st) if mode::is_dir(st.mode) => dirs.push(op),
            Ok(st) => files.push((op.to_string(), st)),
            Err(e) => {
                io::report("ls", op, e);
                status = io::FAILURE;
            }
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    dirs.sort();
    print_names(&mut out, &files, long);

    let headers = operands.len() > 1;
    for (i, dir) in dirs.iter().enumerate() {
        if headers {
            if i > 0 || !files.is_empty() {
                out.line("");
            }
            out.line(&alloc::format!("{dir}:"));
        }
        let mut entries = match unix::read_dir(dir) {
            Ok(e) => e,
            Err(e) => {
                io::report("ls", dir, e);
                status = io::FAILURE;
                continue;
            }
        };
        entries.retain(|e| text::is_shown(&e.name, all));
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let mut named: Vec<(String, Stat)> = Vec::with_capacity(entries.len());
        for e in entries {
            let st = if long {
                let path = text::join(dir, &e.name);
                match unix::stat(&path) {
                    Ok(st) => st,
                    Err(err) => {
                        io::report("ls", &path, err);
                        status = io::FAILURE;
                        continue;
                    }
                }
            } else {
                Stat { ino: e.ino, mode: e.mode, ..Stat::default() }
            };
            named.push((e.name, st));
        }
        print_names(&mut out, &named, long);
    }
    out.finish("ls", status)
}

fn print_names(out: &mut Out, names: &[(String, Stat)], long: bool) {
    if !long {
        for (name, _) in names {
            out.line(name);
        }
        return;
    }
    let entries: Vec<LongEntry> = names
        .iter()
        .map(|(name, st)| LongEntry {
            mode: st.mode,
            nlink: st.nlink,
            uid: st.uid,
            gid: st.gid,
            size_bytes: st.size_bytes,
            name: name.clone(),
        })
        .collect();
    for line in text::format_long(&entries) {
        out.line(&line);
    }
}
