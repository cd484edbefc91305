//! `net=scalable`'s receive rings (`protocols::net::ring`): reads that
//! take data already queued for the socket without waiting for the stack
//! (seed 003). This file is the server's side: handing rings out
//! (`OP_RING_MAP`) and mapping them (the page faults in a client's ring
//! windows), moving what smoltcp received into them after every pass of
//! the stack ([`Net::fill_rings`]), taking from them for a read call so
//! the stream stays in order, checking every index a client wrote, and
//! letting ring memory go only when no process maps it any more.
//!
//! Who may see a ring's memory, the one rule that matters here: a ring
//! belongs to one process (the one that asked, `pid`) at one window index
//! of its address space, for that process's life. It serves one socket at
//! a time, and a later socket of the *same* process only when the kernel
//! says the ring's pages have exactly two owners (this server and that
//! process: no `fork` child maps them, `page_owners`) and the process says
//! it still maps the window (word 2 of `OP_RING_MAP`; a process that lies
//! there only misleads itself). A ring is never given to another process:
//! its memory is freed once it has one owner, this server, and only then
//! can the heap reuse it. A `fork` child inherits its parent's windows
//! (the pages are `SHARED` mappings, kept shared by `fork`) and reads the
//! socket it shares through the same ring, under the same mini lock.
//!
//! What it is not: the seed's per-socket lock over the stack's socket
//! structures. The mini lock here covers only the ring's `tail` (readers
//! against readers, and the server's read call); the server alone writes
//! `head` and the data.

use crate::locking::answer;
use crate::ring_state::Ring;
use crate::state::Net;
use crate::table::State;
use abi::Pid;
use alloc::boxed::Box;
use core::sync::atomic::Ordering;
use protocols::net::locks::{self, MODE_SCALABLE};
use protocols::net::ring::{self, FLAG_CLOSED, RingSlot};
use protocols::unix::encode_result;
use protocols::unix::errno::{EAGAIN, EBUSY, ENOSPC, EOPNOTSUPP};
use runtime::msg::ReplyHandle;
use runtime::sys;
use smoltcp::socket::tcp;

/// Rings this server holds at most (their memory: `ring::SLOT_BYTES`
/// each); sockets past them read by calls.
pub const MAX_RINGS: usize = 64;
/// Tries the server makes for a socket's mini lock before its read call
/// waits for the next pass (a reader on another CPU holds it for one
/// copy).
const SERVER_LOCK_TRIES: u64 = 200;

/// What a read call got from a socket's ring.
pub enum RingTake {
    /// Bytes put in the caller's buffer (0: the ring had none).
    Bytes(usize),
    /// A reader holds the mini lock: wait for the next pass.
    Busy,
    /// The ring was scribbled on: `EIO`.
    Broken,
}

impl Net {
    fn ring_of(&self, handle: u64) -> Option<usize> {
        self.rings.iter().position(|r| r.socket == Some(handle))
    }

    /// `OP_RING_MAP` from `sender` for `handle`; `mapped`: the windows it
    /// says it maps.
    pub fn ring_map(&mut self, reply: ReplyHandle, sender: Pid, handle: u64, mapped: u64) {
        let r = self.ring_map_inner(sender.0, handle, mapped);
        let words = match r {
            Ok(index) => [0, index, ring::SLOT_BYTES, 0],
            Err(e) => [encode_result(Err(e)), 0, 0, 0],
        };
        answer(reply, words, &[]);
    }

    fn ring_map_inner(&mut self, pid: u64, handle: u64, mapped: u64) -> Result<u64, protocols::unix::Errno> {
        if self.mode != MODE_SCALABLE || !self.rings_on {
            return Err(EOPNOTSUPP);
        }
        let Some(sock) = self.socks.get(&handle) else { return Err(protocols::unix::errno::EBADF) };
        if matches!(sock.state, State::Conn { connecting: true, .. }) {
            // Not yet: ask again once connected.
            return Err(EAGAIN);
        }
        if !matches!(sock.state, State::Conn { .. }) || sock.shut_rd {
            return Err(EOPNOTSUPP);
        }
        if let Some(i) = self.ring_of(handle) {
            let r = &self.rings[i];
            // Its own ring again (a fork child of it shares it through the
            // window it inherited; it never asks); anyone else: calls.
            return if r.pid == pid && !r.retired { Ok(r.index) } else { Err(EBUSY) };
        }
        // Windows it no longer maps (it ran `exec`): their rings are
        // retired, and freed once nobody maps them.
        for r in self.rings.iter_mut().filter(|r| r.pid == pid && !r.retired) {
            if mapped & (1 << r.index) == 0 && r.socket.is_none() {
                r.retired = true;
            }
        }
        self.sweep_rings();
        // One of its own free rings that only it maps, at a window it maps.
        let reuse = self.rings.iter().position(|r| {
            r.pid == pid
                && !r.retired
                && r.socket.is_none()
                && mapped & (1 << r.index) != 0
                && r.owners() == 2
        });
        if let Some(i) = reuse {
            self.rings[i].give_to(handle);
            return Ok(self.rings[i].index);
        }
        // A new ring at a window it maps nothing at, that no ring of its
        // uses.
        // Rings it no longer uses but still maps count too: a process
        // that keeps claiming it maps nothing gets no more than this.
        let its_own = self.rings.iter().filter(|r| r.pid == pid).count() as u64;
        if self.rings.len() >= MAX_RINGS || its_own >= 2 * ring::WINDOWS {
            return Err(ENOSPC);
        }
        let taken = |i: u64| self.rings.iter().any(|r| r.pid == pid && !r.retired && r.index == i);
        let Some(index) = (0..ring::WINDOWS).find(|&i| mapped & (1 << i) == 0 && !taken(i)) else {
            return Err(ENOSPC);
        };
        let mut r = Ring {
            pid,
            index,
            retired: false,
            socket: None,
            head: 0,
            tail: 0,
            mem: Box::<RingSlot>::default(),
        };
        r.give_to(handle);
        self.rings.push(r);
        Ok(index)
    }

    /// Free the rings nobody else maps and no socket uses.
    pub fn sweep_rings(&mut self) {
        self.rings.retain(|r| r.socket.is_some() || r.owners() > 1);
    }

    /// A fault in a client's ring window: its ring's page, shared
    /// (the header writable, the data read-only). Whether it was one.
    pub fn ring_fault(&mut self, pid: Pid, addr: u64, start: u64) -> bool {
        if start != ring::BASE {
            return false;
        }
        let ok = ring::window_of(addr).and_then(|(index, page)| {
            let r = self.rings.iter().find(|r| r.pid == pid.0 && r.index == index && !r.retired)?;
            let src = r.addr() + page * abi::layout::PAGE_SIZE;
            let mut flags = abi::pager::SHARE | abi::pager::SHARED;
            if page == 0 {
                flags |= abi::pager::WRITABLE;
            }
            sys::page_resolve(pid, addr & !(abi::layout::PAGE_SIZE - 1), src, flags).ok()
        });
        if ok.is_none() {
            let _ = sys::page_resolve(pid, addr, 0, abi::pager::FAIL);
        }
        true
    }

    /// The socket's ring is no longer its to read: closed, reset, shut
    /// for reading. Its bytes are dropped.
    pub fn close_ring(&mut self, handle: u64) {
        if let Some(i) = self.ring_of(handle) {
            self.rings[i].mem.header.h.flags.store(FLAG_CLOSED, Ordering::SeqCst);
        }
    }

    /// The socket is gone: its ring is free (for its process only).
    pub fn release_ring(&mut self, handle: u64) {
        if let Some(i) = self.ring_of(handle) {
            let r = &mut self.rings[i];
            r.mem.header.h.flags.store(FLAG_CLOSED, Ordering::SeqCst);
            r.mem.header.h.handle.store(0, Ordering::SeqCst);
            r.socket = None;
            self.ring_stats.reads_closed += r.mem.header.h.reads.load(Ordering::Relaxed);
            self.ring_stats.read_bytes_closed += r.mem.header.h.read_bytes.load(Ordering::Relaxed);
        }
        self.sweep_rings();
    }

    /// Check the ring's `tail` against what the server knows; a ring
    /// scribbled on breaks its socket (reads get `EIO`, the connection is
    /// reset). Bytes the ring holds for readers, or `None` when broken
    /// or closed.
    fn ring_check(&mut self, i: usize) -> Option<u64> {
        let r = &mut self.rings[i];
        let h = &r.mem.header.h;
        if h.flags.load(Ordering::Acquire) & FLAG_CLOSED != 0 {
            return None;
        }
        match ring::check_tail(h.tail.load(Ordering::Acquire), r.tail, r.head) {
            Some(t) => {
                self.ring_stats.bytes_taken += t - r.tail;
                r.tail = t;
                Some(r.head - t)
            }
            None => {
                h.flags.store(FLAG_CLOSED, Ordering::SeqCst);
                let handle = r.socket.unwrap_or(0);
                self.ring_stats.broken += 1;
                if let Some(sock) = self.socks.get_mut(&handle) {
                    sock.ring_broken = true;
                    if let State::Conn { set, sh, .. } = sock.state {
                        self.sets[set].get_mut::<tcp::Socket>(sh).abort();
                    }
                }
                None
            }
        }
    }

    /// Bytes `handle`'s ring holds for readers (0: none, or no ring).
    pub fn ring_queued(&mut self, handle: u64) -> u64 {
        match self.ring_of(handle) {
            Some(i) => self.ring_check(i).unwrap_or(0),
            None => 0,
        }
    }

    /// After a pass of the stack: move what smoltcp holds for each socket
    /// with a ring into it. Whether any bytes moved (the stack then has a
    /// window to announce).
    pub fn fill_rings(&mut self) -> bool {
        let mut moved = false;
        for i in 0..self.rings.len() {
            let Some(handle) = self.rings[i].socket else { continue };
            let Some(sock) = self.socks.get(&handle) else { continue };
            let State::Conn { set, sh, connecting: false, was_established, peer_fin, .. } = sock.state else {
                continue;
            };
            if sock.shut_rd || sock.ring_broken {
                continue;
            }
            let s = self.sets[set].get::<tcp::Socket>(sh);
            if s.state() == tcp::State::Closed && was_established && !peer_fin {
                // A reset: what was received is lost, as with no ring.
                self.close_ring(handle);
                continue;
            }
            if !s.can_recv() {
                continue;
            }
            let Some(held) = self.ring_check(i) else { continue };
            let r = &mut self.rings[i];
            let mut room = ring::DATA_BYTES - held;
            let s = self.sets[set].get_mut::<tcp::Socket>(sh);
            let mut put = 0u64;
            for _ in 0..2 {
                if room == 0 {
                    break;
                }
                let head = r.head + put;
                let data = &r.mem.data;
                let got = s.recv(|buf| {
                    let n = buf.len().min(room as usize);
                    ring::write_at(data, head, &buf[..n]);
                    (n, n)
                });
                match got {
                    Ok(n) if n > 0 => {
                        put += n as u64;
                        room -= n as u64;
                    }
                    _ => break,
                }
            }
            let h = &r.mem.header.h;
            if s.can_recv() {
                // Full, with more in the stack: the reader that makes
                // room says so (OP_RING_DRAINED).
                h.wake.store(1, Ordering::SeqCst);
            }
            if put > 0 {
                r.head += put;
                h.head.store(r.head, Ordering::SeqCst);
                self.ring_stats.bytes_in += put;
                moved = true;
            }
        }
        moved
    }

    /// A read call on a socket with a ring: what the ring holds goes
    /// first, into the caller's buffer through `sink` (offset, bytes;
    /// false when the caller's buffer failed: those bytes stay in the
    /// ring). The bytes taken, or `None` when the ring is broken (the
    /// caller answers `EIO`) or its mini lock is held by a reader (the
    /// call waits for the next pass): [`RingTake`].
    pub fn take_from_ring(
        &mut self,
        handle: u64,
        len: usize,
        mut sink: impl FnMut(usize, &[u8]) -> bool,
    ) -> RingTake {
        let Some(i) = self.ring_of(handle) else { return RingTake::Bytes(0) };
        match self.ring_check(i) {
            None if self.socks.get(&handle).is_some_and(|s| s.ring_broken) => return RingTake::Broken,
            None | Some(0) => return RingTake::Bytes(0),
            Some(_) => {}
        }
        let me = self.me;
        let stale_tsc = self.tsc_hz.saturating_mul(locks::STALE_HOLD_NS / 1_000_000) / 1000;
        let h = &self.rings[i].mem.header.h;
        let got = h.lock.acquire(me, sys::rdtsc, |tries| {
            // A holder that died holding it (killed mid-read) lets go.
            let holder = h.lock.owner();
            if holder != 0 && sys::rdtsc().saturating_sub(h.lock.held_since_tsc()) > stale_tsc {
                h.lock.break_from(holder, sys::rdtsc());
            }
            core::hint::spin_loop();
            tries < SERVER_LOCK_TRIES
        });
        if !got || h.lock.owner() != me {
            return RingTake::Busy;
        }
        // Readers may have taken more since the check: again, locked.
        let Some(_) = self.ring_check(i) else {
            self.rings[i].mem.header.h.lock.release(me, sys::rdtsc());
            return RingTake::Broken;
        };
        let r = &mut self.rings[i];
        let (head, mut tail) = (r.head, r.tail);
        let mut done = 0usize;
        let mut chunk = [0u8; 2048];
        while done < len && tail < head {
            let n = (len - done).min(chunk.len()).min((head - tail) as usize);
            ring::read_at(&r.mem.data, tail, &mut chunk[..n]);
            if !sink(done, &chunk[..n]) {
                break;
            }
            tail += n as u64;
            done += n;
        }
        let h = &r.mem.header.h;
        h.tail.store(tail, Ordering::SeqCst);
        h.wake.store(0, Ordering::SeqCst);
        h.lock.release(me, sys::rdtsc());
        self.ring_stats.bytes_by_calls += tail - r.tail;
        r.tail = tail;
        RingTake::Bytes(done)
    }

    /// Every ring's mini lock's figures, for the lock statistics
    /// (acquisitions, contended, spin ticks, hold ticks).
    pub fn ring_lock_ticks(&self) -> (u64, u64, u64, u64) {
        let r = Ordering::Relaxed;
        self.rings.iter().fold((0, 0, 0, 0), |(a, c, s, h), ring| {
            let l = &ring.mem.header.h.lock;
            (
                a + l.acquisitions.load(r),
                c + l.contended.load(r),
                s + l.spin_tsc.load(r),
                h + l.hold_tsc.load(r),
            )
        })
    }

    /// Zero every ring lock's counters (`netstat -l -z`).
    pub fn reset_ring_locks(&self) {
        for ring in &self.rings {
            ring.mem.header.h.lock.reset();
        }
    }

    /// Reads served from rings since boot, and their bytes (the
    /// readers' own counts: a reader may lie in them, as in any count
    /// it keeps of itself).
    pub fn ring_reads(&self) -> (u64, u64) {
        let (reads, bytes) =
            self.rings.iter().filter(|r| r.socket.is_some()).fold((0u64, 0u64), |(n, b), r| {
                let h = &r.mem.header.h;
                (
                    n.saturating_add(h.reads.load(Ordering::Relaxed)),
                    b.saturating_add(h.read_bytes.load(Ordering::Relaxed)),
                )
            });
        (
            self.ring_stats.reads_closed.saturating_add(reads),
            self.ring_stats.read_bytes_closed.saturating_add(bytes),
        )
    }

    /// Whether `handle`'s ring holds bytes for its readers (nothing is
    /// changed: `poll`'s question).
    pub fn ring_holds(&self, handle: u64) -> bool {
        let Some(i) = self.ring_of(handle) else { return false };
        let r = &self.rings[i];
        let h = &r.mem.header.h;
        h.flags.load(Ordering::Acquire) == 0
            && ring::check_tail(h.tail.load(Ordering::Acquire), r.tail, r.head).is_some_and(|t| t < r.head)
    }
}
