//! The cradle's clock: a child process (this same program, started with
//! the argument `timer`) that turns "wake me at T" into a message, because
//! the kernel has no receive with a timeout. The seed's timers became
//! request packets to the stack's CPU (003: "When a thread running a
//! TCP/IP timer goes off, the information about the timer is packaged in
//! a KRP"); here a timer that goes off is a [`TICK`] message on the
//! server's one queue, served in order with the socket requests and the
//! frames.
//!
//! Protocol (private to the server and its timer): the server sends
//! `[ARM, deadline_ns]` (one-way) whenever it wants an earlier wake-up
//! than the one armed; the timer keeps the latest deadline it was sent,
//! sleeps towards it in steps of at most [`STEP_NS`] (looking for a newer
//! deadline between steps) and sends `[TICK]` when it passes. A tick that
//! finds the server's queue full is dropped: the server is busy and polls
//! anyway, and re-arms afterwards.
//!
//! What it is not: precise. The kernel's sleep ends at a timer interrupt
//! (10 ms), which is finer than any TCP timer needs.

use abi::Pid;
use abi::msg::Kind;
use runtime::clock::Clock;
use runtime::msg::{self, Queue};
use runtime::sys;

pub const ARM: u64 = 0x0000_5441_524d;
pub const TICK: u64 = 0x0054_5449_434b;
/// The timer's ready message to the server: word 1 = its queue.
pub const READY: u64 = 0x0000_5452_4459;
/// Longest sleep between looks at the timer's queue.
const STEP_NS: u64 = 10_000_000;

/// The timer child's life: `server` is the network server's pid.
pub fn run(server: Pid) -> i32 {
    let Ok(queue) = msg::open_queue(16, false) else { return 1 };
    if msg::allow_sender(queue, server).is_err() {
        return 2;
    }
    let Ok(link) = msg::open_link(server, Queue(protocols::net::QUEUE)) else { return 3 };
    if msg::send(link, &[READY, queue.0 as u64, 0, 0]).is_err() {
        return 4;
    }
    let clock = Clock::new();
    let mut deadline: Option<u64> = None;
    loop {
        if deadline.is_none() {
            match msg::receive_data(queue, &mut []) {
                Ok(r) if r.kind == Kind::Short && r.message[0] == ARM => deadline = Some(r.message[1]),
                Ok(_) => continue,
                Err(_) => return 5,
            }
        }
        while let Ok(Some(r)) = msg::try_receive(queue, &mut []) {
            if r.message[0] == ARM {
                deadline = Some(r.message[1]);
            }
        }
        let Some(due) = deadline else { continue };
        let now = clock.now_ns();
        if now >= due {
            deadline = None;
            if let Err(abi::Error::DeadPeer | abi::Error::NoSuchProcess) = msg::send(link, &[TICK, 0, 0, 0]) {
                return 0;
            }
            continue;
        }
        sys::sleep_ns((due - now).min(STEP_NS));
    }
}
