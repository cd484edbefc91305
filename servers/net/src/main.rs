//! net: the TCP/IP server. The stack is smoltcp, a ported stack as
//! OpenVMS's was BSD's (seed 003, Figure 1); this program is its
//! *cradle*: it "surrounds the UNIX code, creating an environment in
//! which only a small percentage of the UNIX code has to be made aware"
//! of where it runs. The cradle
//! - turns socket requests (messages from `runtime::unix`, see
//!   `protocols::net`) into calls on the stack (`sockets`), and answers
//!   them, at once or when the stack can (a read with nothing to read, an
//!   accept, a connect wait here, holding their reply handles);
//! - owns the stack's timers: a child process sends it a tick when the
//!   stack's next deadline passes (`timer`);
//! - owns its memory: socket buffers are allocated when a connection or
//!   listener needs them and counted (`OP_STATS`), and freed when the
//!   connection is gone, also after its owner's close;
//! - owns the driver link: frames from and to the card's driver are
//!   one-way messages (`link`); and a loopback interface, which never
//!   leaves this process.
//!
//! One queue ([`net::QUEUE`]) takes everything: socket calls, received
//! frames, timer ticks. The loop receives one message (waiting only when
//! the stack has nothing due), takes whatever else is queued, then runs
//! the stack until it is quiet (`Net::run_stack`): poll both interfaces,
//! finish the waiting requests the poll made possible, poll again for
//! what they queued. This is the seed's *scalable* shape on one CPU: the
//! requests, the received frames and the timers are all packets queued to
//! the one place that runs the stack, which alone touches its state, so
//! there is no lock. The `net=classic` mode (the stack run by each caller
//! under a global spin lock) and the lock statistics are issue 13's second
//! half; docs/network.md says how they fit.
//!
//! What it is not: a router (one card, one address, one default gateway),
//! IPv6, or DNS.
//!
//! Invariants: every call gets one reply (or its caller is gone); a
//! request from anyone can only touch the socket its handle names
//! (handles are sparse numbers with a random part), and a close comes
//! from the monitor only; nothing a client or the wire sends makes the
//! server panic or stop.
//!
//! Arguments: the starter's (init's) pid; or `timer <server pid>` for the
//! timer child.
//!
//! Boot options: `net.addr=A.B.C.D/P` (with `net.gw=A.B.C.D`) for a fixed
//! address instead of DHCP (QEMU's user network: 10.0.2.15/24, gateway
//! 10.0.2.2).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod device;
mod link;
mod locking;
mod ports;
mod queued;
mod ring_state;
mod rings;
mod sockets;
mod stack;
mod state;
mod table;
mod timer;

use abi::Pid;
use abi::msg::Kind;
use protocols::net;
use runtime::msg::{self, Queue};
use runtime::{Args, println, sys};

runtime::entry!(main);

/// The request queue's capacity: calls in progress hold a slot each, and
/// frames from the driver arrive in bursts.
const QUEUE_CAPACITY: u64 = 512;
/// Messages taken before the stack runs, so a flood of frames or requests
/// cannot starve the timers and the waiting requests.
const BATCH: usize = 64;

fn main(args: Args) -> i32 {
    let words: alloc::vec::Vec<&str> = args.iter().collect();
    if let ["timer", server] = words.as_slice() {
        return match server.parse::<u64>() {
            Ok(p) => timer::run(Pid(p)),
            Err(_) => 1,
        };
    }
    let starter = words.iter().rev().find_map(|s| s.parse::<u64>().ok()).map(Pid);
    // Links: clients' replies need none, but the driver, the timer and the
    // directory manager do. Messages: every call in progress holds one.
    let set_up =
        msg::init_qseg(64, 4, QUEUE_CAPACITY + 64, 512).and_then(|()| msg::open_queue(QUEUE_CAPACITY, true));
    let queue = match set_up {
        Ok(q) if q.0 == net::QUEUE => q,
        _ => {
            println!("net: cannot open its queue");
            return 1;
        }
    };
    let Some(timer) = start_timer(queue) else {
        println!("net: cannot start its timer");
        return 2;
    };
    let mut n = state::Net::new(queue, timer);
    if let Some(starter) = starter {
        let _ = msg::open_link(starter, Queue(protocols::STARTER_QUEUE))
            .and_then(|l| msg::send(l, &[net::READY, queue.0 as u64, 0, 0]));
    }
    n.serve()
}

/// Start the timer child and wait for its ready message; the link to it.
fn start_timer(queue: Queue) -> Option<msg::Link> {
    let me = sys::getpid();
    let child = sys::spawn("net", &alloc::format!("timer {}", me.0)).ok()?;
    loop {
        match msg::receive_data(queue, &mut []) {
            Ok(r) if r.sender == child && r.kind == Kind::Short && r.message[0] == timer::READY => {
                return msg::open_link(child, Queue(r.message[1] as u32)).ok();
            }
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}
