//! The manager's clock for write-behind: a child process (this same
//! program, started with the argument `timer MANAGER_PID`) that wakes the
//! manager when its dirty blocks may have expired, because the kernel has
//! no receive with a timeout (the network server's timer,
//! `servers/net/src/timer.rs`, is the same idea). Without it an idle
//! volume kept its dirty blocks until the next request or `sync`
//! (`docs/filesystem.md`, the buffer cache); with it a block dirty
//! `fs_ext2::cache::DIRTY_EXPIRE_MS` starts on its way to the disk when it
//! expires: the manager arms the timer for the oldest dirty block's
//! expiry (`Cache::next_expiry_ms`, at most [`MAX_DELAY_NS`] ahead), where
//! Linux's flusher threads wake every `dirty_writeback_centisecs`.
//!
//! Protocol (private to the manager and its timer): the timer *calls* the
//! manager with `[TICK, 0, 0, 0]` on the manager's queue. The manager
//! keeps that call unanswered while it has nothing dirty (the timer is
//! "unarmed": blocked in the call, using no CPU) and arms it by replying
//! `[ARM, delay_ns, 0, 0]`; the timer sleeps `delay_ns` and calls with
//! the next `TICK`, which the manager serves as its write-back pass.
//!
//! Why a call and not one-way messages both ways: the kernel ends a call
//! whose callee died, so the timer ends with its manager whatever ended
//! it (the monitor kills a manager whose driver died; a process count
//! after a driver restart must not find a timer left over) — within one
//! sleep (at most [`MAX_DELAY_NS`]) when it was armed, at once when it
//! was not. The I/O workers (`ext2io`) end the same way. And no one but
//! the manager can arm it: it has no queue of its own. A `TICK` from any
//! other process is not the timer's (the kernel stamps the sender) and is
//! answered as an unknown request.
//!
//! A tick that finds the manager's queue full is tried again after one
//! more sleep: the manager is busy, and runs its write-back check after
//! each request anyway.
//!
//! What it is not: precise. The kernel's sleep ends at a timer interrupt
//! (10 ms), far finer than the 1 s write-back interval needs.

use abi::Pid;
use protocols::unix::ext2fs;
use runtime::msg::{self, Queue};
use runtime::sys;

/// The timer's call to the manager: "a tick; answer when to tick next".
pub const TICK: u64 = 0x0045_5854_5449_434b;
/// The manager's answer: word 1 = how long to sleep before the next tick.
pub const ARM: u64 = 0x0045_5854_4152_4d00;
/// Longest sleep the timer accepts (a longer `delay_ns` is cut to this):
/// bounds how long it outlives a manager that died while it slept.
pub const MAX_DELAY_NS: u64 = 1_000_000_000;

/// The timer child's life: `manager` is the ext2fs manager's pid. Returns
/// when the manager has ended (its call fails for any reason but a full
/// queue) or answers something that is not [`ARM`].
pub fn run(manager: Pid) -> i32 {
    let Ok(link) = msg::open_link(manager, Queue(ext2fs::QUEUE)) else { return 3 };
    loop {
        match msg::call(link, &[TICK, 0, 0, 0], &[], &mut []) {
            Ok(([ARM, delay_ns, _, _], _)) => sys::sleep_ns(delay_ns.clamp(1, MAX_DELAY_NS)),
            Ok(_) => return 4,
            Err(abi::Error::QueueFull) => sys::sleep_ns(MAX_DELAY_NS),
            Err(_) => return 0,
        }
    }
}
