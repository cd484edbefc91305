//! `net=scalable`'s writes that complete once queued (seed 003: "the
//! I/O completes at once"): a caller with *credit* sends its bytes as a
//! one-way message, `OP_WRITE_QUEUED` (the request packet, KRP), and
//! goes on; the cradle, in order with everything else on its queue,
//! moves them into the connection's send ring, or keeps what does not
//! fit in the connection's *queued* bytes until the ring has room.
//!
//! Credit is what the caller may queue before its next call: every TCP
//! write call's answer carries it (word 1), the room the send ring has
//! then less what is already queued, at most the ring's size. A process
//! that shares the socket with a forked child may spend the same credit
//! twice: the queued bytes then hold up to twice the ring; nothing is
//! lost, since the cradle takes every queued byte.
//!
//! Order: a write call on a connection with queued bytes waits until
//! they have gone into the ring (sockets.rs, `write_tcp`); a close lets
//! the queued bytes go first, then closes (`close_after`).
//!
//! What it is not: the seed's shared stack buffers. The caller's copy is
//! the kernel's copy of a message's data into the cradle's queue, not a
//! copy into a ring mapped in the caller; reads still take one call each
//! (docs/network.md, "What is left").
//!
//! Errors: bytes queued on a connection that can no longer send are
//! dropped, and the lock page's `credit_epoch` moves on, which ends every
//! caller's credit: the caller's next write is a call, and fails (`EPIPE`,
//! or `ECONNRESET` after a reset), as an asynchronous write's error shows
//! at the next call on a UNIX system. One write is lost that way (it had
//! completed); the seed's "I/O completes at once" has the same price.

use crate::state::Net;
use crate::table::State;
use alloc::collections::VecDeque;
use protocols::net::locks::MODE_SCALABLE;
use protocols::unix::errno::{ECONNRESET, EPIPE};
use smoltcp::iface::SocketHandle;
use smoltcp::socket::tcp;

impl Net {
    /// A queued write from a caller: `handle`'s connection takes `data`.
    pub fn queued_write(&mut self, handle: u64, data: &[u8]) {
        self.queued_writes += 1;
        self.queued_write_bytes += data.len() as u64;
        let Some(sock) = self.socks.get_mut(&handle) else { return };
        let State::Conn { set, sh, was_established, .. } = sock.state else { return };
        let s = self.sets[set].get_mut::<tcp::Socket>(sh);
        if sock.shut_wr || !s.may_send() {
            let reset = s.state() == tcp::State::Closed && was_established;
            sock.error.get_or_insert(if reset { ECONNRESET } else { EPIPE });
            // Every caller's credit lapses: its next write is a call.
            self.locks.credit_epoch.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
            return;
        }
        let key = (set, sh);
        let mut taken = 0;
        if !self.queued.contains_key(&key) {
            taken = s.send_slice(data).unwrap_or(0);
        }
        if taken < data.len() {
            self.queued.entry(key).or_default().extend(&data[taken..]);
        }
    }

    /// Move queued bytes into their send rings; close the connections
    /// whose close waited for them. Whether any moved.
    pub fn drain_queued(&mut self) -> bool {
        let mut moved = false;
        let keys: alloc::vec::Vec<(usize, SocketHandle)> = self.queued.keys().copied().collect();
        for key in keys {
            let (set, sh) = key;
            let s = self.sets[set].get_mut::<tcp::Socket>(sh);
            let Some(q) = self.queued.get_mut(&key) else { continue };
            if !s.may_send() {
                q.clear();
            }
            while !q.is_empty() && s.can_send() {
                let (front, _) = q.as_slices();
                let n = s.send_slice(front).unwrap_or(0);
                if n == 0 {
                    break;
                }
                q.drain(..n);
                moved = true;
            }
            if q.is_empty() {
                self.queued.remove(&key);
                if let Some(at) = self.close_after.iter().position(|k| *k == key) {
                    self.close_after.swap_remove(at);
                    s.close();
                }
            }
        }
        moved
    }

    /// The credit a write call's answer carries (see the module's doc).
    pub fn write_credit(&self, handle: u64) -> u64 {
        if self.mode != MODE_SCALABLE {
            return 0;
        }
        let Some(sock) = self.socks.get(&handle) else { return 0 };
        let State::Conn { set, sh, connecting: false, .. } = sock.state else { return 0 };
        let s = self.sets[set].get::<tcp::Socket>(sh);
        if !s.may_send() {
            return 0;
        }
        let queued = self.queued.get(&(set, sh)).map_or(0, VecDeque::len);
        (s.send_capacity() - s.send_queue()).saturating_sub(queued) as u64
    }

    /// A stack socket goes: its queued bytes with it.
    pub fn forget_queued(&mut self, set: usize, sh: SocketHandle) {
        self.queued.remove(&(set, sh));
        self.close_after.retain(|k| *k != (set, sh));
    }
}
