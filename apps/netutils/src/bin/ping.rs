//! ping: ICMP echo. `ping [-c COUNT] HOST` sends COUNT (default 4) echo
//! requests of 56 bytes, one a second, through an ICMP socket of the
//! network server, and prints each reply with its round-trip time; a
//! request with no reply within a second is counted lost. Exit status 0
//! when any reply came.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use netutils::http::parse_ipv4;
use netutils::net::{FAILURE, report};
use runtime::unix::socket::{self, AF_INET, IPPROTO_ICMP, POLLIN, PollFd, SOCK_DGRAM, SockAddr};
use runtime::unix::{self};
use runtime::{eprintln, println};

runtime::entry!(main);

const PAYLOAD_BYTES: usize = 56;
const WAIT_MS: u64 = 1000;

fn main(args: runtime::Args) -> i32 {
    let words: alloc::vec::Vec<&str> = args.iter().skip(1).collect();
    let (count, host) = match words.as_slice() {
        [host] => (4, *host),
        ["-c", n, host] => match n.parse::<u16>() {
            Ok(n) if n > 0 => (n, *host),
            _ => return usage(),
        },
        _ => return usage(),
    };
    let Some(addr) = parse_ipv4(host) else {
        eprintln!("ping: {host}: not an IPv4 address");
        return FAILURE;
    };
    let fd = match socket::socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP) {
        Ok(fd) => fd,
        Err(e) => {
            report("ping", "socket", e);
            return FAILURE;
        }
    };
    println!("PING {host}: {PAYLOAD_BYTES} data bytes");
    let mut received = 0u32;
    for seq in 0..count {
        let mut payload = [0u8; PAYLOAD_BYTES];
        for (i, b) in payload.iter_mut().enumerate() {
            *b = (i as u8).wrapping_add(seq as u8);
        }
        let sent_ns = unix::clock_ns();
        if let Err(e) = socket::sendto(fd, &payload, SockAddr::new(addr, seq)) {
            report("ping", host, e);
            break;
        }
        if wait_reply(fd, seq, sent_ns, &payload) {
            received += 1;
            let left = WAIT_MS * 1_000_000 - (unix::clock_ns() - sent_ns).min(WAIT_MS * 1_000_000);
            if seq + 1 < count {
                unix::sleep_ns(left);
            }
        }
    }
    let _ = unix::close(fd);
    let lost = (count as u32 - received) * 100 / count as u32;
    println!("--- {host} ping statistics ---");
    println!("{count} packets transmitted, {received} received, {lost}% packet loss");
    if received > 0 { 0 } else { FAILURE }
}

fn usage() -> i32 {
    eprintln!("usage: ping [-c COUNT] HOST");
    FAILURE
}

/// Wait up to a second for the reply to `seq`; print it.
fn wait_reply(fd: unix::Fd, seq: u16, sent_ns: u64, payload: &[u8]) -> bool {
    let deadline = sent_ns + WAIT_MS * 1_000_000;
    loop {
        let now = unix::clock_ns();
        if now >= deadline {
            return false;
        }
        let mut p = [PollFd { fd, events: POLLIN, revents: 0 }];
        match socket::poll(&mut p, Some((deadline - now).div_ceil(1_000_000))) {
            Ok(0) => return false,
            Ok(_) => {}
            Err(_) => return false,
        }
        let mut buf = [0u8; 512];
        let Ok((n, from)) = socket::recvfrom(fd, &mut buf) else { return false };
        if from.port == seq {
            let us = (unix::clock_ns() - sent_ns) / 1000;
            let intact = &buf[..n] == payload;
            let a = from.addr;
            println!(
                "{} bytes from {}.{}.{}.{}: icmp_seq={seq} time={}.{:03} ms{}",
                n + 8,
                a[0],
                a[1],
                a[2],
                a[3],
                us / 1000,
                us % 1000,
                if intact { "" } else { " (payload differs)" }
            );
            return true;
        }
    }
}
