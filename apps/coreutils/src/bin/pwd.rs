//! pwd: print the working directory.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use coreutils::io;
use runtime::unix;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    if let Some(extra) = io::operands(&args).first() {
        runtime::eprintln!("pwd: unexpected argument '{extra}'");
        return io::usage("pwd", None, "");
    }
    match unix::getcwd() {
        Ok(cwd) => {
            let mut out = io::Out::new();
            out.line(&cwd);
            out.finish("pwd", 0)
        }
        Err(e) => {
            io::report("pwd", "getcwd", e);
            io::FAILURE
        }
    }
}
