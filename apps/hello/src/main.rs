//! hello: the smallest Ridgeback program. Prints a greeting, its pid, the
//! CPU it runs on and the kernel command line.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use abi::InfoKey;
use runtime::{Args, println, sys};

runtime::entry!(main);

fn main(_args: Args) -> i32 {
    let mut options = [0u8; 256];
    let len = sys::kernel_options(&mut options).unwrap_or(0).min(options.len());
    println!(
        "hello from pid {:#x} on CPU {} of {}; kernel options: \"{}\"",
        sys::getpid().0,
        sys::info(InfoKey::CurrentCpu),
        sys::info(InfoKey::CpusOnline),
        core::str::from_utf8(&options[..len]).unwrap_or("?")
    );
    0
}
