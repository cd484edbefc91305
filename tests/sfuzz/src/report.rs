//! How the worker and the checker tell the coordinator how far they got:
//! one-way kernel messages (`send`, which never waits) to a queue of the
//! coordinator, word 0 one of the tags below. Here, apart from the three,
//! so that they import it and not each other.

use abi::Pid;
use runtime::msg::Queue;

/// `[PROGRESS, index of the next message, messages sent, doomed | delivered << 32]`.
pub const PROGRESS: u64 = 1;
/// `[DONE, messages sent, doomed | delivered << 32, targets reached (bits)]`.
pub const DONE: u64 = 2;
/// `[CHECKING, index of the check in check::CHECKS, 0, 0]`.
pub const CHECKING: u64 = 3;
/// `[TIMING, ns finding the targets, ns in doomed messages, ns in the
/// others]`, sent by the worker just before [`DONE`]: where a batch's
/// time goes (printed with the totals).
pub const TIMING: u64 = 4;
/// `[DOOMED, ns forking doomed children, ns letting them call, ns killing
/// and reaping them]`, sent by the worker just before [`DONE`].
pub const DOOMED: u64 = 5;
/// `[DOOMED_ENDS, doomed children killed, doomed children whose call
/// ended before the kill (they exited), 0]`, sent just before [`DONE`].
pub const DOOMED_ENDS: u64 = 6;
/// How many tags carry a batch's details (from [`TIMING`] on).
pub const DETAILS: usize = 3;

/// Where reports go: the coordinator's kernel pid and queue.
#[derive(Clone, Copy)]
pub struct Report {
    pub pid: Pid,
    pub queue: Queue,
}
