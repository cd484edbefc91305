//! netstat: the network server's sockets, one per line (protocol, local
//! and remote address, TCP state), after a summary line (sockets,
//! connections winding down, accepted connections not yet opened, socket
//! buffer bytes, ports held). `netstat -s` prints only the summary.
//! `netstat -l` prints the stack's lock statistics instead (seed 003's
//! figures: hold % and spin % over all locks, locks per second, the
//! global lock's hold %), since boot or the last `netstat -l -z`, which
//! prints them and then starts them again from zero.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use netutils::net::{FAILURE, report};
use runtime::print;
use runtime::unix::socket;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let has = |flag: &str| args.iter().skip(1).any(|a| a == flag);
    if let Some(bad) = args.iter().skip(1).find(|a| !matches!(*a, "-s" | "-l" | "-z")) {
        print!("netstat: unknown option {bad} (use -s, -l, -l -z)\n");
        return 2;
    }
    if has("-l") {
        // Print, then reset: read the figures first.
        let got = socket::lock_stats(false).and_then(|r| {
            if has("-z") {
                socket::lock_stats(true)?;
            }
            Ok(r)
        });
        return match got {
            Ok((_, text)) => {
                print!("{text}");
                0
            }
            Err(e) => {
                report("netstat", "the network server", e);
                FAILURE
            }
        };
    }
    match socket::net_stats() {
        Ok((_, text)) => {
            if has("-s") {
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
