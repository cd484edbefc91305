//! false: do nothing, unsuccessfully (exit status 1).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

runtime::entry!(main);

fn main(_args: runtime::Args) -> i32 {
    1
}
