//! A pipe's state, as the pipe manager (`servers/pipe`, one process per
//! pipe, Ridge §3) keeps it: a ring buffer (allocated at the first
//! buffered write), whether each end is still open, the reads and writes
//! that wait, and the pipe's share of the system's loan budget.
//!
//! Seed 002 (NetBSD's pipes) has three designs, all here, chosen by
//! [`Limits`]: a 4 KiB buffer (old pipes), a 64 KiB buffer (new pipes),
//! and the 64 KiB buffer plus *loaned* writes (new pipes with
//! `uvm_loan`): a write of at least [`Limits::loan_min_bytes`] is lent:
//! the manager keeps the writer's call and serves readers straight from
//! the writer's lent buffer ([`Mover::direct`]: one copy, or whole pages
//! lent copy-on-write), and answers the writer once readers have taken all
//! of it. It is kept only while a reader waits for it or the buffer has no
//! room for its rest; otherwise the rest goes into the buffer and the
//! writer is answered, so a writer never waits longer than with the big
//! buffer alone (docs/pipes.md).
//!
//! Nothing is copied into the manager to keep a call: the caller's buffer
//! is lent to the manager until the answer (a lease), so a kept write is
//! read from the writer's memory when there is room ([`Mover::pull`]) and
//! a kept read is written into the reader's memory when there is data
//! ([`Mover::push`]). Every request is answered exactly once, through
//! [`Mover::reply`], possibly while it is being made.
//!
//! Rules (POSIX `read`/`write` on a pipe):
//! - a read takes up to its size from one source, the buffer or the
//!   loaned write at the head of the queue; with neither it waits while
//!   the write end is open and returns 0 (end of file) once it is closed;
//! - a write with the read end closed fails with `EPIPE`;
//! - a buffered write of at most [`Limits::atomic_bytes`] (`PIPE_BUF`)
//!   goes into the buffer whole or waits until it fits whole; a longer
//!   one takes what fits and waits for room for the rest; a loaned write
//!   is read out whole before anything after it, so no write, of any
//!   size, is ever interleaved with another writer's bytes within a loan;
//! - ONE queue of writes, in arrival order, loaned and buffered alike:
//!   the buffer only ever holds bytes older than every kept write, so
//!   switching between the two paths keeps the order;
//! - a copy that fails because its caller has gone (or its buffer is
//!   bad) ends that call only: a gone reader's bytes stay for the next
//!   reader; a gone writer's untaken bytes are dropped (its `write` never
//!   returned, so nobody was told they were written) and readers go on
//!   with the next write — they never see bytes that were not written;
//! - closing the read end fails kept writes with `EPIPE` (or answers the
//!   bytes already taken) and kept reads with `EBADF`; closing the write
//!   end answers kept reads with end of file once the buffer is empty.
//!
//! Invariants (checked by [`Pipe::check`] in the tests after every step):
//! after every operation, a read waits only when the buffer is empty and
//! no write is kept (so nothing can hang with data available, the
//! failure that made NetBSD drop loaned pipes); a kept buffered write at
//! the head waits only while the buffer lacks room for it, and so only
//! while the buffer holds bytes; the bytes on loan never exceed the
//! budget the monitor granted.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use protocols::unix::Errno;
use protocols::unix::errno::{EAGAIN, EBADF, EPIPE};
use protocols::unix::pipe::Mode;

/// Sizes and bounds of one pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes the buffer holds before writers wait.
    pub capacity_bytes: usize,
    /// Writes up to this size are never split (POSIX `PIPE_BUF`).
    pub atomic_bytes: usize,
    /// Reads and writes kept waiting at most (the manager's reply handles).
    pub max_pending_calls: usize,
    /// Writes of at least this many bytes are loaned (`loan` mode);
    /// `None`: never (`small`, `big`).
    pub loan_min_bytes: Option<usize>,
}

impl Limits {
    /// The pipe manager's limits for `mode`: the buffer of
    /// `protocols::unix::pipe::Mode::capacity_bytes`, `PIPE_BUF` =
    /// `protocols::unix::pipe::ATOMIC_BYTES`.
    pub fn for_mode(mode: Mode, loan_min_bytes: usize) -> Limits {
        Limits {
            capacity_bytes: mode.capacity_bytes(),
            atomic_bytes: protocols::unix::pipe::ATOMIC_BYTES,
            max_pending_calls: 48,
            loan_min_bytes: (mode == Mode::Loan).then_some(loan_min_bytes.max(1)),
        }
    }
}

/// A fixed-size ring buffer of bytes.
#[derive(Debug)]
pub struct Ring {
    bytes: Vec<u8>,
    /// Index of the oldest byte.
    head: usize,
    len: usize,
}

impl Ring {
    /// `None` when the memory cannot be had.
    pub fn new(capacity_bytes: usize) -> Option<Ring> {
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(capacity_bytes.max(1)).ok()?;
        bytes.resize(capacity_bytes.max(1), 0);
        Some(Ring { bytes, head: 0, len: 0 })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.bytes.len()
    }

    pub fn free(&self) -> usize {
        self.capacity() - self.len
    }

    /// The oldest bytes, in at most two runs (the second after the wrap).
    pub fn readable(&self) -> (&[u8], &[u8]) {
        let first = self.len.min(self.capacity() - self.head);
        (&self.bytes[self.head..self.head + first], &self.bytes[..self.len - first])
    }

    /// Forget the `n` oldest bytes (after they were copied out).
    pub fn consume(&mut self, n: usize) {
        let n = n.min(self.len);
        self.head = (self.head + n) % self.capacity();
        self.len -= n;
    }

    /// The free space after the newest byte, in at most two runs.
    pub fn writable(&mut self) -> (&mut [u8], &mut [u8]) {
        let cap = self.capacity();
        let tail = (self.head + self.len) % cap;
        let free = cap - self.len;
        let first = free.min(cap - tail);
        let (low, high) = self.bytes.split_at_mut(tail);
        (&mut high[..first], &mut low[..free - first])
    }

    /// Take the first `n` bytes of [`Ring::writable`] as written.
    pub fn commit(&mut self, n: usize) {
        self.len += n.min(self.free());
    }

    /// Append as much of `data` as fits; returns the bytes taken.
    pub fn push(&mut self, data: &[u8]) -> usize {
        let (a, b) = self.writable();
        let n1 = data.len().min(a.len());
        a[..n1].copy_from_slice(&data[..n1]);
        let n2 = (data.len() - n1).min(b.len());
        b[..n2].copy_from_slice(&data[n1..n1 + n2]);
        self.commit(n1 + n2);
        n1 + n2
    }

    /// Move up to `out.len()` of the oldest bytes into `out`; returns the count.
    pub fn pop(&mut self, out: &mut [u8]) -> usize {
        let (a, b) = self.readable();
        let n1 = out.len().min(a.len());
        out[..n1].copy_from_slice(&a[..n1]);
        let n2 = (out.len() - n1).min(b.len());
        out[n1..n1 + n2].copy_from_slice(&b[..n2]);
        self.consume(n1 + n2);
        n1 + n2
    }
}

/// Which call of a [`Mover::direct`] copy failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Reader,
    Writer,
}

/// A direct copy that failed: whose lease, and the errno to answer that
/// call with (lost if its caller has ended).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub side: Side,
    pub errno: Errno,
}

/// How the manager moves bytes and answers calls (`T`: its reply
/// handles). Every copy either happens whole or fails with an errno and
/// moves nothing the pipe relies on.
pub trait Mover<T> {
    /// Copy `out.len()` bytes of write `w`'s buffer, from `offset`
    /// (`lease_read`).
    fn pull(&mut self, w: T, offset: usize, out: &mut [u8]) -> Result<(), Errno>;
    /// Copy `bytes` into read `r`'s buffer at `offset` (`lease_write`).
    fn push(&mut self, r: T, offset: usize, bytes: &[u8]) -> Result<(), Errno>;
    /// Copy `len` bytes from write `w`'s buffer at `w_offset` straight to
    /// the start of read `r`'s buffer (`lease_copy`, one copy, or a loan
    /// of whole pages).
    fn direct(&mut self, w: T, w_offset: usize, r: T, len: usize) -> Result<(), Fault>;
    /// Answer a call: bytes read (0: end of file) or written, or an errno.
    fn reply(&mut self, token: T, result: Result<usize, Errno>);
}

/// The two ends of a pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Read,
    Write,
}

#[derive(Clone, Copy, Debug)]
struct PendingRead<T> {
    token: T,
    max_bytes: usize,
}

#[derive(Clone, Copy, Debug)]
struct PendingWrite<T> {
    token: T,
    len: usize,
    /// Bytes already moved (into the buffer, or to readers).
    taken: usize,
    /// Served straight to readers, never through the buffer.
    loaned: bool,
    /// Loan budget this write holds (0 for a buffered write, and for a
    /// write served directly only because the buffer could not be had).
    budget: usize,
}

/// What one pipe has done, for `fstat` and the tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Writes served from the writer's pages.
    pub loaned_writes: u64,
    /// Writes of loan size that went through the buffer for want of budget.
    pub fallback_writes: u64,
    /// Loaned writes put into the buffer after all because no reader was
    /// there and the buffer had room (the writer must not wait for one).
    pub unloaned_writes: u64,
    /// Bytes moved straight from a writer to a reader.
    pub direct_bytes: u64,
    /// Bytes moved through the buffer.
    pub buffered_bytes: u64,
}

/// One pipe. `T` is the manager's token for a call (its reply handle).
#[derive(Debug)]
pub struct Pipe<T> {
    limits: Limits,
    /// `None` until the first buffered write (the seed's TODO: no buffer
    /// for a pipe that does not need one).
    ring: Option<Ring>,
    read_open: bool,
    write_open: bool,
    readers: VecDeque<PendingRead<T>>,
    writers: VecDeque<PendingWrite<T>>,
    /// Loan budget granted by the monitor, and the part writes hold.
    grant_bytes: usize,
    loaned_bytes: usize,
    /// After a reclaim: give budget back as loans end.
    returning: bool,
    to_return_bytes: usize,
    /// Budget a refused loan wanted, not yet asked for.
    wanted_bytes: usize,
    stats: Stats,
}

impl<T: Copy> Pipe<T> {
    /// A pipe with both ends open and no buffer yet.
    pub fn new(limits: Limits) -> Pipe<T> {
        Pipe {
            limits,
            ring: None,
            read_open: true,
            write_open: true,
            readers: VecDeque::new(),
            writers: VecDeque::new(),
            grant_bytes: 0,
            loaned_bytes: 0,
            returning: false,
            to_return_bytes: 0,
            wanted_bytes: 0,
            stats: Stats::default(),
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// `pipe.loan_min` changed (only in `loan` mode; at least 1 byte).
    pub fn set_loan_min(&mut self, bytes: usize) {
        if self.limits.loan_min_bytes.is_some() {
            self.limits.loan_min_bytes = Some(bytes.max(1));
        }
    }

    /// Bytes readers can have now: the buffer's and the loaned writes'
    /// (what `fstat` reports as the size).
    pub fn buffered(&self) -> usize {
        let ring = self.ring.as_ref().map_or(0, Ring::len);
        ring + self.writers.iter().filter(|w| w.loaned).map(|w| w.len - w.taken).sum::<usize>()
    }

    /// Could a write go in now without waiting: the read end is open, no
    /// write is kept ahead of it, and the buffer (made at the first
    /// buffered write) has room for `PIPE_BUF` bytes — POSIX's test for
    /// `POLLOUT` on a pipe.
    pub fn writable_now(&self) -> bool {
        let room = self.ring.as_ref().map_or(self.limits.capacity_bytes, Ring::free);
        self.read_open
            && self.writers.is_empty()
            && room >= self.limits.atomic_bytes.min(self.limits.capacity_bytes)
    }

    /// Has the buffer been allocated?
    pub fn has_buffer(&self) -> bool {
        self.ring.is_some()
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    pub fn is_open(&self, end: End) -> bool {
        match end {
            End::Read => self.read_open,
            End::Write => self.write_open,
        }
    }

    /// Reads and writes kept waiting.
    pub fn pending_calls(&self) -> usize {
        self.readers.len() + self.writers.len()
    }

    /// Both ends are closed and no request waits: the manager may end.
    pub fn finished(&self) -> bool {
        !self.read_open && !self.write_open && self.pending_calls() == 0
    }

    // --- the loan budget (see the manager and the monitor) ---

    /// The monitor granted `bytes` more.
    pub fn grant(&mut self, bytes: usize) {
        self.grant_bytes += bytes;
        self.returning = false;
    }

    /// The monitor wants budget back: returns what is not in use now;
    /// the rest is given back as its loans end ([`Pipe::take_return`]).
    pub fn reclaim(&mut self) -> usize {
        let unused = self.grant_bytes - self.loaned_bytes;
        self.grant_bytes = self.loaned_bytes;
        self.returning = true;
        self.wanted_bytes = 0;
        unused
    }

    /// Budget freed since a reclaim, to send back.
    pub fn take_return(&mut self) -> usize {
        core::mem::take(&mut self.to_return_bytes)
    }

    /// Budget a loan was refused for (0: none), to ask the monitor for.
    pub fn take_wanted(&mut self) -> usize {
        core::mem::take(&mut self.wanted_bytes)
    }

    /// Budget held (granted and not given back).
    pub fn granted(&self) -> usize {
        self.grant_bytes
    }

    /// Bytes of writes on loan now.
    pub fn loaned(&self) -> usize {
        self.loaned_bytes
    }

    // --- requests ---

    /// A read of up to `max_bytes` on the read end.
    pub fn read(&mut self, token: T, max_bytes: usize, mv: &mut impl Mover<T>) {
        if !self.read_open {
            return mv.reply(token, Err(EBADF));
        }
        if max_bytes == 0 {
            return mv.reply(token, Ok(0));
        }
        if !self.readers.is_empty() || (self.ring_len() == 0 && self.writers.is_empty()) {
            // Nothing to read now (readers wait only then).
            if !self.write_open && self.ring_len() == 0 && self.writers.is_empty() {
                return mv.reply(token, Ok(0));
            }
            if self.pending_calls() >= self.limits.max_pending_calls {
                return mv.reply(token, Err(EAGAIN));
            }
        }
        self.readers.push_back(PendingRead { token, max_bytes });
        self.settle(mv);
    }

    /// A write of `len` bytes on the write end. `inline`: the first bytes
    /// of the data, when they came with the message (all of them, or
    /// none: a longer write's bytes are pulled from its lease).
    pub fn write(&mut self, token: T, len: usize, inline: &[u8], mv: &mut impl Mover<T>) {
        if !self.write_open {
            return mv.reply(token, Err(EBADF));
        }
        if !self.read_open {
            return mv.reply(token, Err(EPIPE));
        }
        if len == 0 {
            return mv.reply(token, Ok(0));
        }
        let inline = if inline.len() == len { inline } else { &[] };
        let mut w = PendingWrite { token, len, taken: 0, loaned: false, budget: 0 };
        if self.limits.loan_min_bytes.is_some_and(|min| len >= min) {
            if self.grant_bytes - self.loaned_bytes >= len {
                w.loaned = true;
                w.budget = len;
                self.loaned_bytes += len;
                self.stats.loaned_writes += 1;
            } else {
                // Past the budget: through the buffer, and ask for more.
                self.stats.fallback_writes += 1;
                if !self.returning {
                    self.wanted_bytes = self.wanted_bytes.max(len);
                }
            }
        }
        if !w.loaned && self.writers.is_empty() && self.ensure_ring() {
            let atomic = self.is_atomic(len);
            if !atomic || self.ring_free() >= len {
                match self.fill(&mut w, inline, mv) {
                    Ok(_) => {}
                    Err(e) => return self.end_write(w, Err(e), mv),
                }
            }
            if w.taken == len {
                self.end_write(w, Ok(len), mv);
                return self.settle(mv);
            }
        }
        if self.pending_calls() >= self.limits.max_pending_calls {
            let result = if w.taken > 0 { Ok(w.taken) } else { Err(EAGAIN) };
            self.end_write(w, result, mv);
            return self.settle(mv);
        }
        self.writers.push_back(w);
        self.settle(mv);
    }

    /// The monitor closed `end`. Returns `Err(EBADF)` if it was closed.
    pub fn close(&mut self, end: End, mv: &mut impl Mover<T>) -> Result<(), Errno> {
        match end {
            End::Read if self.read_open => {
                self.read_open = false;
                // Nobody can read what is buffered: the memory goes too.
                self.ring = None;
                for r in core::mem::take(&mut self.readers) {
                    mv.reply(r.token, Err(EBADF));
                }
                for w in core::mem::take(&mut self.writers) {
                    let result = if w.taken > 0 { Ok(w.taken) } else { Err(EPIPE) };
                    self.end_write(w, result, mv);
                }
                Ok(())
            }
            End::Write if self.write_open => {
                self.write_open = false;
                // Kept writes belong to callers that have ended (a
                // process blocked in `write` holds the descriptor):
                // readers still get what they can take of them.
                self.settle(mv);
                Ok(())
            }
            _ => Err(EBADF),
        }
    }

    fn ring_len(&self) -> usize {
        self.ring.as_ref().map_or(0, Ring::len)
    }

    fn ring_free(&self) -> usize {
        self.ring.as_ref().map_or(0, Ring::free)
    }

    /// Allocate the buffer if it is not yet; false when it cannot be had.
    fn ensure_ring(&mut self) -> bool {
        if self.ring.is_none() {
            self.ring = Ring::new(self.limits.capacity_bytes);
        }
        self.ring.is_some()
    }

    fn is_atomic(&self, len: usize) -> bool {
        len <= self.limits.atomic_bytes.min(self.limits.capacity_bytes)
    }

    /// Move as much of `w` into the buffer as fits: from `inline` where
    /// it holds the bytes, else from the writer's lease.
    fn fill(
        &mut self,
        w: &mut PendingWrite<T>,
        inline: &[u8],
        mv: &mut impl Mover<T>,
    ) -> Result<usize, Errno> {
        let Some(ring) = self.ring.as_mut() else { return Ok(0) };
        let (a, b) = ring.writable();
        let mut moved = 0;
        for run in [a, b] {
            let n = run.len().min(w.len - w.taken - moved);
            if n == 0 {
                break;
            }
            let from = w.taken + moved;
            if inline.len() >= from + n {
                run[..n].copy_from_slice(&inline[from..from + n]);
            } else {
                mv.pull(w.token, from, &mut run[..n])?;
            }
            moved += n;
        }
        ring.commit(moved);
        w.taken += moved;
        self.stats.buffered_bytes += moved as u64;
        Ok(moved)
    }

    /// A write is answered: its loan budget comes back.
    fn end_write(&mut self, w: PendingWrite<T>, result: Result<usize, Errno>, mv: &mut impl Mover<T>) {
        self.give_back_budget(w.budget);
        mv.reply(w.token, result);
    }

    /// A write no longer holds `budget` bytes of loan.
    fn give_back_budget(&mut self, budget: usize) {
        self.loaned_bytes -= budget;
        if self.returning {
            self.grant_bytes -= budget;
            self.to_return_bytes += budget;
        }
    }

    /// Serve the head reader from the buffer; false if the buffer is empty.
    fn read_from_ring(&mut self, mv: &mut impl Mover<T>) -> bool {
        let (Some(ring), Some(&r)) = (self.ring.as_mut(), self.readers.front()) else { return false };
        if ring.is_empty() {
            return false;
        }
        let (a, b) = ring.readable();
        let n1 = r.max_bytes.min(a.len());
        let n2 = (r.max_bytes - n1).min(b.len());
        let mut result = mv.push(r.token, 0, &a[..n1]);
        if result.is_ok() && n2 > 0 {
            result = mv.push(r.token, n1, &b[..n2]);
        }
        self.readers.pop_front();
        match result {
            Ok(()) => {
                ring.consume(n1 + n2);
                mv.reply(r.token, Ok(n1 + n2));
            }
            // The bytes stay for the next reader.
            Err(e) => mv.reply(r.token, Err(e)),
        }
        true
    }

    /// Serve the head reader straight from the head write if it is
    /// loaned; false if it is not.
    fn read_from_loan(&mut self, mv: &mut impl Mover<T>) -> bool {
        let (Some(&r), Some(&w)) = (self.readers.front(), self.writers.front()) else { return false };
        if !w.loaned {
            return false;
        }
        let n = r.max_bytes.min(w.len - w.taken);
        match mv.direct(w.token, w.taken, r.token, n) {
            Ok(()) => {
                self.readers.pop_front();
                self.stats.direct_bytes += n as u64;
                mv.reply(r.token, Ok(n));
                let head = self.writers.front_mut().expect("the head write is there");
                head.taken += n;
                if head.taken == head.len {
                    let done = self.writers.pop_front().expect("the head write is there");
                    self.end_write(done, Ok(done.len), mv);
                }
            }
            Err(Fault { side: Side::Reader, errno }) => {
                self.readers.pop_front();
                mv.reply(r.token, Err(errno));
            }
            Err(Fault { side: Side::Writer, errno }) => {
                // The writer has gone (or lent a bad buffer): its untaken
                // bytes are dropped; the reader stays for what follows.
                let done = self.writers.pop_front().expect("the head write is there");
                let result = if done.taken > 0 { Ok(done.taken) } else { Err(errno) };
                self.end_write(done, result, mv);
            }
        }
        true
    }

    /// Move kept writes into the buffer and bytes to kept reads for as
    /// long as either makes progress; answer reads at end of file.
    fn settle(&mut self, mv: &mut impl Mover<T>) {
        loop {
            let mut progress = false;
            while let Some(&head) = self.writers.front() {
                if head.loaned {
                    // A loaned write is kept only while a reader is there
                    // to take it straight from the writer, or the buffer
                    // has no room for the rest of it: a writer never waits
                    // longer than in the `big` design (a 32 KiB write to a
                    // pipe nobody reads yet returns, as POSIX programs
                    // expect; kept, it hung a test whose child wrote one).
                    let rest = head.len - head.taken;
                    let free =
                        if self.ring.is_some() { self.ring_free() } else { self.limits.capacity_bytes };
                    if !self.readers.is_empty() || free < rest || !self.ensure_ring() {
                        break;
                    }
                    let h = self.writers.front_mut().expect("the head write is there");
                    let budget = core::mem::take(&mut h.budget);
                    h.loaned = false;
                    self.give_back_budget(budget);
                    self.stats.unloaned_writes += 1;
                    progress = true;
                    continue;
                }
                if !self.ensure_ring() {
                    // No memory for a buffer: serve this write directly
                    // (it holds no budget; it never fails for want of one).
                    if let Some(h) = self.writers.front_mut() {
                        h.loaned = true;
                    }
                    progress = true;
                    break;
                }
                let rest = head.len - head.taken;
                let free = self.ring_free();
                if free == 0 || (self.is_atomic(head.len) && free < rest) {
                    break;
                }
                let mut w = head;
                let filled = self.fill(&mut w, &[], mv);
                self.writers.pop_front();
                progress = true;
                match filled {
                    Err(e) => {
                        let result = if w.taken > 0 { Ok(w.taken) } else { Err(e) };
                        self.end_write(w, result, mv);
                    }
                    Ok(_) if w.taken == w.len => self.end_write(w, Ok(w.len), mv),
                    Ok(_) => {
                        self.writers.push_front(w);
                        break;
                    }
                }
            }
            while !self.readers.is_empty() {
                if self.read_from_ring(mv) || self.read_from_loan(mv) {
                    progress = true;
                } else {
                    break;
                }
            }
            if !progress {
                break;
            }
        }
        if !self.write_open && self.ring_len() == 0 && self.writers.is_empty() {
            for r in core::mem::take(&mut self.readers) {
                mv.reply(r.token, Ok(0));
            }
        }
    }

    /// The invariants of the module doc; `Err` names the one broken.
    pub fn check(&self) -> Result<(), &'static str> {
        if !self.readers.is_empty() && (self.ring_len() > 0 || !self.writers.is_empty()) {
            return Err("a read waits while there are bytes to read");
        }
        if let Some(h) = self.writers.front()
            && !h.loaned
        {
            let free = self.ring_free();
            let fits = free > 0 && (!self.is_atomic(h.len) || free >= h.len - h.taken);
            if self.ring.is_some() && fits {
                return Err("a buffered write waits while the buffer has room for it");
            }
        }
        let free = if self.ring.is_some() { self.ring_free() } else { self.limits.capacity_bytes };
        if let Some(h) = self.writers.front()
            && h.loaned
            && self.readers.is_empty()
            && free >= h.len - h.taken
        {
            return Err("a loaned write waits with no reader while the buffer has room for it");
        }
        if self.loaned_bytes > self.grant_bytes {
            return Err("more bytes on loan than the budget granted");
        }
        let held: usize = self.writers.iter().map(|w| w.budget).sum();
        if held != self.loaned_bytes {
            return Err("the loan count differs from the writes holding budget");
        }
        if self.limits.loan_min_bytes.is_none() && self.writers.iter().any(|w| w.budget > 0) {
            return Err("a loan in a pipe without loans");
        }
        if !self.read_open && (self.ring_len() > 0 || self.pending_calls() > 0) {
            return Err("bytes or calls kept with the read end closed");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
