//! echo: print the arguments separated by spaces, then a newline unless
//! the first arguments are `-n`. No other option and no backslash escapes
//! (POSIX leaves them to the implementation; this one prints them as they
//! are).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use coreutils::io;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let words = io::operands(&args);
    let flags = words.iter().take_while(|w| **w == "-n").count();
    let mut text = String::new();
    for (i, w) in words[flags..].iter().enumerate() {
        if i > 0 {
            text.push(' ');
        }
        text.push_str(w);
    }
    if flags == 0 {
        text.push('\n');
    }
    let mut out = io::Out::new();
    out.str(&text);
    out.finish("echo", 0)
}
