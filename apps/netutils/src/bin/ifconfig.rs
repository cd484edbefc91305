//! ifconfig: the network interfaces, as the network server reports them
//! (address, how it was got, gateway, frame counts).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use netutils::net::{FAILURE, report};
use runtime::print;
use runtime::unix::socket;

runtime::entry!(main);

fn main(_args: runtime::Args) -> i32 {
    match socket::ifconfig() {
        Ok(text) => {
            print!("{text}");
            0
        }
        Err(e) => {
            report("ifconfig", "the network server", e);
            FAILURE
        }
    }
}
