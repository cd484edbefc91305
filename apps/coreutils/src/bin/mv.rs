//! mv: rename a file or directory (`mv SRC DST`), or move several into a
//! directory (`mv SRC... DIR`). One `rename` each: Ridgeback has a single
//! file system, so there is no copy across devices to fall back to.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use coreutils::io;
use coreutils::text::{self, Options};
use protocols::unix::{errno, mode};
use runtime::unix;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let opts = match Options::parse(&ops, "") {
        Ok(o) => o,
        Err(c) => return io::usage("mv", Some(c), "source dest | source... directory"),
    };
    let Some((target, sources)) = opts.operands.split_last().filter(|(_, s)| !s.is_empty()) else {
        runtime::eprintln!("mv: missing file operand");
        return io::usage("mv", None, "source dest | source... directory");
    };
    let into_dir = unix::stat(target).is_ok_and(|st| mode::is_dir(st.mode));
    if sources.len() > 1 && !into_dir {
        io::report("mv", target, errno::ENOTDIR);
        return io::FAILURE;
    }
    let mut status = 0;
    for src in sources {
        let dest = if into_dir { text::join(target, text::base_name(src)) } else { (*target).into() };
        if let Err(e) = unix::rename(src, &dest) {
            // Either name may be the one at fault, so both are shown.
            io::report("mv", &alloc::format!("{src} -> {dest}"), e);
            status = io::FAILURE;
        }
    }
    status
}
