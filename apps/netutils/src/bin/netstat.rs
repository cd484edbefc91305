//! netstat: the network server's sockets, one per line (protocol, local
//! and remote address, TCP state), after a summary line (sockets,
//! connections winding down, accepted connections not yet opened, socket
//! buffer bytes, ports held). `netstat -s` prints only the summary.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use netutils::net::{FAILURE, report};
use runtime::print;
use runtime::unix::socket;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let summary_only = args.iter().skip(1).any(|a| a == "-s");
    match socket::net_stats() {
        Ok((_, text)) => {
            if summary_only {
                print!("{}\n", text.lines().next().unwrap_or(""));
            } else {
                print!("{text}");
            }
            0
        }
        Err(e) => {
            report("netstat", "the network server", e);
            FAILURE
        }
    }
}
