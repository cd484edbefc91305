//! kinfo: print the kernel command line and the kernel's event counters,
//! one `name = value` per line (`options = …` first).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use abi::{COUNTER_COUNT, COUNTER_NAMES};
use alloc::vec;
use coreutils::io::{self, Out};
use runtime::sys;

runtime::entry!(main);

/// First guess at the command line's length; the call says if it is longer.
const OPTIONS_GUESS_BYTES: usize = 512;

fn main(_args: runtime::Args) -> i32 {
    let mut out = Out::new();
    let mut status = 0;
    let mut options = vec![0u8; OPTIONS_GUESS_BYTES];
    match sys::kernel_options(&mut options) {
        Ok(len) => {
            if len > options.len() {
                options.resize(len, 0);
                // The command line does not change; a second read gets it whole.
                let _ = sys::kernel_options(&mut options);
            }
            options.truncate(len);
            out.line(&alloc::format!("options = {}", alloc::string::String::from_utf8_lossy(&options)));
        }
        Err(e) => {
            runtime::eprintln!("kinfo: kernel options: {}", e.name());
            status = io::FAILURE;
        }
    }
    let mut counters = [0u64; COUNTER_COUNT];
    match sys::counters(&mut counters) {
        Ok(n) => {
            for (name, value) in COUNTER_NAMES.iter().zip(counters.iter()).take(n) {
                out.line(&alloc::format!("{name} = {value}"));
            }
        }
        Err(e) => {
            runtime::eprintln!("kinfo: counters: {}", e.name());
            status = io::FAILURE;
        }
    }
    out.finish("kinfo", status)
}
