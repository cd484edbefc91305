//! mount: with no operands, list the mount table (`source target type
//! options`, one line each, `/` first); `mount [-o OPTIONS] DEVICE DIR`
//! mounts the ext2 volume on the block device DEVICE at DIR (root only;
//! options: `ro`, `sync`, `nbuf=N`). See docs/filesystem.md.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use coreutils::io;
use runtime::unix;

runtime::entry!(main);

const USAGE: &str = "[-o OPTIONS] DEVICE DIR";

fn main(args: runtime::Args) -> i32 {
    let words: alloc::vec::Vec<&str> = args.iter().skip(1).collect();
    let (options, operands) = match words.as_slice() {
        ["-o", options, rest @ ..] => (*options, rest),
        rest => ("", rest),
    };
    match operands {
        [] if options.is_empty() => match unix::mounts() {
            Ok(text) => {
                let mut out = io::Out::new();
                for line in text.lines() {
                    out.line(line);
                }
                out.finish("mount", 0)
            }
            Err(e) => {
                io::report("mount", "the mount table", e);
                io::FAILURE
            }
        },
        [device, dir] => match unix::mount(device, dir, options) {
            Ok(()) => 0,
            Err(e) => {
                runtime::eprintln!("mount: {device} on {dir}: {}", e.name());
                io::FAILURE
            }
        },
        _ => io::usage("mount", None, USAGE),
    }
}
