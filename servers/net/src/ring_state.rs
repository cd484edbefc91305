//! The receive rings' data (rings.rs is their behaviour): one [`Ring`]
//! as the server holds it, and the ring statistics. Kept apart so that
//! the server's state (state.rs) can hold them without importing the
//! code that works on that state (rings.rs imports state.rs).
//!
//! What it is not: the ring's layout in memory, which is the protocol's
//! (`protocols::net::ring`).
//!
//! Invariant: a ring's memory (`mem`) is this server's heap; it is freed
//! only when no other process maps it (rings.rs says when).

use alloc::boxed::Box;
use core::sync::atomic::Ordering;
use protocols::net::ring::{self, FLAG_CLOSED, RingSlot};
use runtime::sys;

/// One ring.
pub struct Ring {
    /// The process whose window it is.
    pub pid: u64,
    /// Its window index there.
    pub index: u64,
    /// The process no longer maps the window (it said so): the ring is
    /// never mapped or used again, only freed once nobody maps it.
    pub retired: bool,
    /// The socket it serves now.
    pub socket: Option<u64>,
    /// Bytes put in since it was given to the socket (the server's own
    /// count: the header's copy is only for readers).
    pub head: u64,
    /// The last `tail` read back and found in line.
    pub tail: u64,
    pub mem: Box<RingSlot>,
}

impl Ring {
    pub(crate) fn addr(&self) -> u64 {
        &*self.mem as *const RingSlot as u64
    }

    /// The most owners any of its pages has (1: only this server).
    pub(crate) fn owners(&self) -> u64 {
        sys::page_owners(self.addr(), ring::SLOT_BYTES).unwrap_or(u64::MAX)
    }

    pub(crate) fn give_to(&mut self, handle: u64) {
        let h = &self.mem.header.h;
        h.flags.store(FLAG_CLOSED, Ordering::SeqCst);
        h.lock.clear();
        h.head.store(0, Ordering::SeqCst);
        h.tail.store(0, Ordering::SeqCst);
        h.wake.store(0, Ordering::SeqCst);
        h.reads.store(0, Ordering::SeqCst);
        h.read_bytes.store(0, Ordering::SeqCst);
        h.handle.store(handle, Ordering::SeqCst);
        h.flags.store(0, Ordering::SeqCst);
        self.socket = Some(handle);
        self.head = 0;
        self.tail = 0;
    }
}

/// Ring statistics since boot (`netstat -l`).
#[derive(Default)]
pub struct RingStats {
    /// TCP read calls (`io::OP_READ`, `OP_RECVFROM`) served.
    pub read_calls: u64,
    /// Bytes moved from the stack into rings.
    pub bytes_in: u64,
    /// Bytes readers took from rings without a call (validated tails).
    pub bytes_taken: u64,
    /// Bytes the server's read calls took from rings.
    pub bytes_by_calls: u64,
    /// Rings found scribbled on.
    pub broken: u64,
    /// `OP_RING_DRAINED` messages.
    pub drained: u64,
    /// Reads served from rings given back since (the live rings count
    /// their own).
    pub reads_closed: u64,
    pub read_bytes_closed: u64,
}
