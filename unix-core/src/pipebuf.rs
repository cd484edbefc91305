//! A pipe's state, as the pipe manager (`servers/pipe`, one process per
//! pipe, Ridge §3) keeps it: a ring buffer, whether each end is still
//! open, and the reads and writes that wait.
//!
//! The manager hands every request to [`Pipe`] with a token (its reply
//! handle). A request is answered at once ([`Now::Reply`]) or kept
//! ([`Now::Wait`]); requests kept earlier are answered later through the
//! [`Completion`]s that each operation hands to a [`Deliver`], in the order
//! they must be sent.
//!
//! Rules (POSIX `read`/`write` on a pipe):
//! - a read takes up to its size from the buffer; on an empty buffer it
//!   waits while the write end is open and returns 0 (end of file) once it
//!   is closed;
//! - a write with the read end closed fails with `EPIPE`;
//! - a write of at most [`Limits::atomic_bytes`] (`PIPE_BUF`) goes
//!   into the buffer whole or waits until it fits whole, so data of
//!   different writers never interleave within such a write; a longer write
//!   takes what fits and waits for room for the rest (its reply comes when
//!   all is taken);
//! - writes are taken in the order they arrived: a new write waits behind
//!   kept ones;
//! - closing the read end fails kept writes with `EPIPE` (or answers the
//!   bytes already taken of a long one) and kept reads with `EBADF`;
//!   closing the write end answers kept reads with end of file and kept
//!   writes with `EBADF`.
//!
//! Invariants: reads wait only while the buffer is empty; writes wait only
//! while the first of them does not fit; the buffer never holds more than
//! its capacity; kept calls and the bytes copied for kept writes stay under
//! [`Limits`] (a request beyond them fails with `EAGAIN`, so the manager
//! never runs out of reply handles or heap).

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use protocols::unix::Errno;
use protocols::unix::errno::{EAGAIN, EBADF, ENOMEM, EPIPE};

/// Sizes and bounds of one pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes the buffer holds before writers wait.
    pub capacity_bytes: usize,
    /// Writes up to this size are never split (POSIX `PIPE_BUF`).
    pub atomic_bytes: usize,
    /// Reads and writes kept waiting at most (the manager's reply handles).
    pub max_pending_calls: usize,
    /// Bytes of kept writes' data copied at most (the manager's heap).
    pub max_pending_write_bytes: usize,
}

impl Limits {
    /// The pipe manager's limits: `protocols::unix::pipe::CAPACITY_BYTES`
    /// and `ATOMIC_BYTES` (`PIPE_BUF`).
    pub const fn standard() -> Limits {
        Limits {
            capacity_bytes: protocols::unix::pipe::CAPACITY_BYTES,
            atomic_bytes: protocols::unix::pipe::ATOMIC_BYTES,
            max_pending_calls: 48,
            max_pending_write_bytes: 64 * 1024,
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
        bytes.try_reserve_exact(capacity_bytes).ok()?;
        bytes.resize(capacity_bytes, 0);
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

    /// Append as much of `data` as fits; returns the bytes taken.
    pub fn push(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.free());
        if n == 0 {
            return 0;
        }
        let tail = (self.head + self.len) % self.capacity();
        let first = n.min(self.capacity() - tail);
        self.bytes[tail..tail + first].copy_from_slice(&data[..first]);
        self.bytes[..n - first].copy_from_slice(&data[first..n]);
        self.len += n;
        n
    }

    /// Move up to `out.len()` of the oldest bytes into `out`; returns the count.
    pub fn pop(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.len);
        if n == 0 {
            return 0;
        }
        let first = n.min(self.capacity() - self.head);
        out[..first].copy_from_slice(&self.bytes[self.head..self.head + first]);
        out[first..n].copy_from_slice(&self.bytes[..n - first]);
        self.head = (self.head + n) % self.capacity();
        self.len -= n;
        n
    }

    /// Give back the last `n` bytes popped, as if never taken. Only valid
    /// before anything is pushed again (the bytes are still in place).
    fn unpop(&mut self, n: usize) {
        let n = n.min(self.free());
        self.head = (self.head + self.capacity() - n) % self.capacity();
        self.len += n;
    }

    pub fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }
}

/// The answer to a request, now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Now {
    /// Reply with this: bytes read or written (0 from a read is end of
    /// file), or an errno.
    Reply(Result<usize, Errno>),
    /// The pipe kept the request; a [`Completion`] answers it later.
    Wait,
}

/// The answer to a request that was kept.
#[derive(Debug, PartialEq, Eq)]
pub enum Completion<T> {
    /// A read gets these bytes (never empty).
    Data { token: T, bytes: Vec<u8> },
    /// A read (`Ok(0)` = end of file) or write (`Ok(bytes written)`) ends,
    /// or fails with an errno.
    Reply { token: T, result: Result<usize, Errno> },
}

/// Where a pipe sends its [`Completion`]s: the manager replies to each
/// call. `deliver` returns false when a read's caller is gone (it ended
/// while waiting); the pipe then keeps the bytes for the next reader, so
/// killing a waiting reader loses no data.
pub trait Deliver<T> {
    fn deliver(&mut self, c: Completion<T>) -> bool;
}

/// Collecting completions (every caller taken as alive).
impl<T> Deliver<T> for Vec<Completion<T>> {
    fn deliver(&mut self, c: Completion<T>) -> bool {
        self.push(c);
        true
    }
}

impl<T, F: FnMut(Completion<T>) -> bool> Deliver<T> for F {
    fn deliver(&mut self, c: Completion<T>) -> bool {
        self(c)
    }
}

/// The two ends of a pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Read,
    Write,
}

#[derive(Debug)]
struct PendingRead<T> {
    token: T,
    max_bytes: usize,
}

#[derive(Debug)]
struct PendingWrite<T> {
    token: T,
    data: Vec<u8>,
    taken: usize,
}

/// One pipe. `T` is the manager's token for a kept request (its reply handle).
#[derive(Debug)]
pub struct Pipe<T> {
    limits: Limits,
    ring: Ring,
    read_open: bool,
    write_open: bool,
    readers: VecDeque<PendingRead<T>>,
    writers: VecDeque<PendingWrite<T>>,
    pending_write_bytes: usize,
}

impl<T: Copy> Pipe<T> {
    /// A pipe with both ends open; `Err(ENOMEM)` when its buffer cannot be
    /// allocated.
    pub fn new(limits: Limits) -> Result<Pipe<T>, Errno> {
        let ring = Ring::new(limits.capacity_bytes.max(1)).ok_or(ENOMEM)?;
        Ok(Pipe {
            limits,
            ring,
            read_open: true,
            write_open: true,
            readers: VecDeque::new(),
            writers: VecDeque::new(),
            pending_write_bytes: 0,
        })
    }

    /// Bytes in the buffer (what `fstat` reports as the size).
    pub fn buffered(&self) -> usize {
        self.ring.len()
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

    /// A read of up to `out.len()` bytes on the read end. Bytes read now
    /// are placed in `out`.
    pub fn read(&mut self, token: T, out: &mut [u8], done: &mut impl Deliver<T>) -> Now {
        if !self.read_open {
            return Now::Reply(Err(EBADF));
        }
        if out.is_empty() {
            return Now::Reply(Ok(0));
        }
        if !self.ring.is_empty() {
            let n = self.ring.pop(out);
            self.settle(done);
            return Now::Reply(Ok(n));
        }
        if !self.write_open {
            return Now::Reply(Ok(0));
        }
        if self.pending_calls() >= self.limits.max_pending_calls {
            return Now::Reply(Err(EAGAIN));
        }
        self.readers.push_back(PendingRead { token, max_bytes: out.len() });
        Now::Wait
    }

    /// A write of `data` on the write end.
    pub fn write(&mut self, token: T, data: &[u8], done: &mut impl Deliver<T>) -> Now {
        if !self.write_open {
            return Now::Reply(Err(EBADF));
        }
        if !self.read_open {
            return Now::Reply(Err(EPIPE));
        }
        if data.is_empty() {
            return Now::Reply(Ok(0));
        }
        let mut taken = 0;
        if self.writers.is_empty() {
            if !self.is_atomic(data.len()) || self.ring.free() >= data.len() {
                taken = self.ring.push(data);
            }
            if taken == data.len() {
                self.settle(done);
                return Now::Reply(Ok(taken));
            }
        }
        // Keep the rest, with a copy of the data (the manager's receive
        // buffer is reused for the next request).
        if self.pending_calls() >= self.limits.max_pending_calls
            || self.pending_write_bytes + data.len() > self.limits.max_pending_write_bytes
        {
            return self.refuse_write(taken, done);
        }
        let mut copy = Vec::new();
        if copy.try_reserve_exact(data.len()).is_err() {
            return self.refuse_write(taken, done);
        }
        copy.extend_from_slice(data);
        self.pending_write_bytes += copy.len();
        self.writers.push_back(PendingWrite { token, data: copy, taken });
        // Bytes taken above may complete waiting readers.
        self.settle(done);
        Now::Wait
    }

    /// The monitor closed `end`. Returns `Err(EBADF)` if it was closed.
    pub fn close(&mut self, end: End, done: &mut impl Deliver<T>) -> Result<(), Errno> {
        match end {
            End::Read if self.read_open => {
                self.read_open = false;
                // Nobody can read what is buffered.
                self.ring.clear();
                for r in self.readers.drain(..) {
                    let _ = done.deliver(Completion::Reply { token: r.token, result: Err(EBADF) });
                }
                for w in self.writers.drain(..) {
                    let result = if w.taken > 0 { Ok(w.taken) } else { Err(EPIPE) };
                    let _ = done.deliver(Completion::Reply { token: w.token, result });
                }
                self.pending_write_bytes = 0;
                Ok(())
            }
            End::Write if self.write_open => {
                self.write_open = false;
                for w in self.writers.drain(..) {
                    let result = if w.taken > 0 { Ok(w.taken) } else { Err(EBADF) };
                    let _ = done.deliver(Completion::Reply { token: w.token, result });
                }
                self.pending_write_bytes = 0;
                // Readers wait only on an empty buffer: they see end of file.
                self.settle(done);
                Ok(())
            }
            _ => Err(EBADF),
        }
    }

    fn is_atomic(&self, len: usize) -> bool {
        len <= self.limits.atomic_bytes.min(self.ring.capacity())
    }

    /// A write that cannot be kept: the bytes already taken, or `EAGAIN`.
    fn refuse_write(&mut self, taken: usize, done: &mut impl Deliver<T>) -> Now {
        if taken > 0 {
            self.settle(done);
            Now::Reply(Ok(taken))
        } else {
            Now::Reply(Err(EAGAIN))
        }
    }

    /// Move kept writes into the buffer and the buffer to kept reads for as
    /// long as either makes progress; answer reads at end of file.
    fn settle(&mut self, done: &mut impl Deliver<T>) {
        loop {
            let mut progress = false;
            while let Some(w) = self.writers.front_mut() {
                let rest = &w.data[w.taken..];
                let atomic = w.data.len() <= self.limits.atomic_bytes.min(self.ring.capacity());
                if atomic && self.ring.free() < rest.len() {
                    break;
                }
                let n = self.ring.push(rest);
                w.taken += n;
                progress |= n > 0;
                if w.taken < w.data.len() {
                    break;
                }
                let token = w.token;
                let len = w.data.len();
                self.pending_write_bytes -= len;
                self.writers.pop_front();
                let _ = done.deliver(Completion::Reply { token, result: Ok(len) });
            }
            while !self.ring.is_empty()
                && let Some(r) = self.readers.pop_front()
            {
                let mut bytes = Vec::new();
                let want = r.max_bytes.min(self.ring.len());
                if bytes.try_reserve_exact(want).is_err() {
                    let _ = done.deliver(Completion::Reply { token: r.token, result: Err(ENOMEM) });
                    continue;
                }
                bytes.resize(want, 0);
                let n = self.ring.pop(&mut bytes);
                bytes.truncate(n);
                if done.deliver(Completion::Data { token: r.token, bytes }) {
                    progress = true;
                } else {
                    // The reader has gone: the next one gets the bytes.
                    self.ring.unpop(n);
                }
            }
            if !progress {
                break;
            }
        }
        if self.ring.is_empty() && !self.write_open {
            for r in self.readers.drain(..) {
                let _ = done.deliver(Completion::Reply { token: r.token, result: Ok(0) });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    fn small(capacity: usize, atomic: usize) -> Pipe<u32> {
        Pipe::new(Limits {
            capacity_bytes: capacity,
            atomic_bytes: atomic,
            max_pending_calls: 4,
            max_pending_write_bytes: 64,
        })
        .unwrap()
    }

    fn read_now(p: &mut Pipe<u32>, max: usize, done: &mut Vec<Completion<u32>>) -> Result<Vec<u8>, Errno> {
        let mut out = vec![0u8; max];
        match p.read(0, &mut out, done) {
            Now::Reply(Ok(n)) => Ok(out[..n].to_vec()),
            Now::Reply(Err(e)) => Err(e),
            Now::Wait => panic!("read waits"),
        }
    }

    #[test]
    fn ring_wraps_around() {
        let mut r = Ring::new(8).unwrap();
        assert_eq!(r.push(b"abcdef"), 6);
        let mut out = [0u8; 4];
        assert_eq!(r.pop(&mut out), 4);
        assert_eq!(&out, b"abcd");
        // 2 held at 4..6; 6 more wrap past the end.
        assert_eq!(r.push(b"ghijklmn"), 6);
        assert_eq!(r.len(), 8);
        assert_eq!(r.free(), 0);
        assert_eq!(r.push(b"z"), 0);
        let mut out = [0u8; 8];
        assert_eq!(r.pop(&mut out), 8);
        assert_eq!(&out, b"efghijkl");
        assert!(r.is_empty());
        assert_eq!(r.pop(&mut out), 0);
    }

    #[test]
    fn ring_many_wraps_keep_order() {
        let mut r = Ring::new(7).unwrap();
        let mut next_in = 0u8;
        let mut next_out = 0u8;
        for step in 0..200usize {
            let chunk: Vec<u8> = (0..(step % 5 + 1)).map(|i| next_in.wrapping_add(i as u8)).collect();
            let n = r.push(&chunk);
            next_in = next_in.wrapping_add(n as u8);
            let mut out = vec![0u8; step % 4 + 1];
            let m = r.pop(&mut out);
            for &b in &out[..m] {
                assert_eq!(b, next_out);
                next_out = next_out.wrapping_add(1);
            }
        }
    }

    #[test]
    fn write_then_read() {
        let mut p = small(16, 8);
        let mut done = Vec::new();
        assert_eq!(p.write(1, b"hello", &mut done), Now::Reply(Ok(5)));
        assert_eq!(p.buffered(), 5);
        assert_eq!(read_now(&mut p, 3, &mut done).unwrap(), b"hel");
        assert_eq!(read_now(&mut p, 100, &mut done).unwrap(), b"lo");
        assert!(done.is_empty());
        assert_eq!(p.buffered(), 0);
    }

    #[test]
    fn empty_read_waits_until_data_arrives() {
        let mut p = small(16, 8);
        let mut done = Vec::new();
        assert_eq!(p.read(7, &mut [0; 4], &mut done), Now::Wait);
        assert_eq!(p.read(8, &mut [0; 4], &mut done), Now::Wait);
        assert_eq!(p.pending_calls(), 2);
        assert_eq!(p.write(1, b"abcdef", &mut done), Now::Reply(Ok(6)));
        // In order: the first reader gets 4 bytes, the second the rest.
        assert_eq!(
            done,
            vec![
                Completion::Data { token: 7, bytes: b"abcd".to_vec() },
                Completion::Data { token: 8, bytes: b"ef".to_vec() },
            ]
        );
        assert_eq!(p.pending_calls(), 0);
    }

    #[test]
    fn zero_byte_requests_answer_at_once() {
        let mut p = small(16, 8);
        let mut done = Vec::new();
        assert_eq!(p.read(1, &mut [], &mut done), Now::Reply(Ok(0)));
        assert_eq!(p.write(1, b"", &mut done), Now::Reply(Ok(0)));
    }

    #[test]
    fn eof_when_write_end_closed() {
        let mut p = small(16, 8);
        let mut done = Vec::new();
        p.write(1, b"last", &mut done);
        assert_eq!(p.read(5, &mut [0; 2], &mut done), Now::Reply(Ok(2)));
        p.close(End::Write, &mut done).unwrap();
        // Buffered data is still read, then end of file.
        assert_eq!(read_now(&mut p, 10, &mut done).unwrap(), b"st");
        assert_eq!(read_now(&mut p, 10, &mut done).unwrap(), b"");
        assert!(done.is_empty());
        // Writes on the closed end are refused.
        assert_eq!(p.write(1, b"x", &mut done), Now::Reply(Err(EBADF)));
    }

    #[test]
    fn waiting_readers_get_eof_when_write_end_closes() {
        let mut p = small(16, 8);
        let mut done = Vec::new();
        assert_eq!(p.read(3, &mut [0; 4], &mut done), Now::Wait);
        assert_eq!(p.read(4, &mut [0; 4], &mut done), Now::Wait);
        p.close(End::Write, &mut done).unwrap();
        assert_eq!(
            done,
            vec![
                Completion::Reply { token: 3, result: Ok(0) },
                Completion::Reply { token: 4, result: Ok(0) }
            ]
        );
        assert!(!p.finished());
        p.close(End::Read, &mut done).unwrap();
        assert!(p.finished());
    }

    #[test]
    fn epipe_when_read_end_closed() {
        let mut p = small(16, 8);
        let mut done = Vec::new();
        p.write(1, b"unread", &mut done);
        p.close(End::Read, &mut done).unwrap();
        assert_eq!(p.buffered(), 0);
        assert_eq!(p.write(2, b"more", &mut done), Now::Reply(Err(EPIPE)));
        assert_eq!(p.read(2, &mut [0; 4], &mut done), Now::Reply(Err(EBADF)));
        assert_eq!(p.close(End::Read, &mut done), Err(EBADF));
        p.close(End::Write, &mut done).unwrap();
        assert!(p.finished());
        assert!(done.is_empty());
    }

    #[test]
    fn full_buffer_keeps_the_write_with_its_data() {
        let mut p = small(8, 8);
        let mut done = Vec::new();
        assert_eq!(p.write(1, b"12345678", &mut done), Now::Reply(Ok(8)));
        assert_eq!(p.write(2, b"abc", &mut done), Now::Wait);
        assert_eq!(p.pending_calls(), 1);
        // Draining 2 bytes is not room for all 3: still waiting.
        assert_eq!(read_now(&mut p, 2, &mut done).unwrap(), b"12");
        assert!(done.is_empty());
        assert_eq!(read_now(&mut p, 1, &mut done).unwrap(), b"3");
        assert_eq!(done, vec![Completion::Reply { token: 2, result: Ok(3) }]);
        assert_eq!(read_now(&mut p, 100, &mut done).unwrap(), b"45678abc");
    }

    #[test]
    fn atomic_writes_are_not_split_or_reordered() {
        let mut p = small(8, 4);
        let mut done = Vec::new();
        assert_eq!(p.write(1, b"AAAAAA", &mut done), Now::Reply(Ok(6))); // 2 free
        assert_eq!(p.write(2, b"BBB", &mut done), Now::Wait); // atomic: not split
        // A later small write that would fit waits behind it (order).
        assert_eq!(p.write(3, b"C", &mut done), Now::Wait);
        assert_eq!(read_now(&mut p, 1, &mut done).unwrap(), b"A"); // 3 free: BBB fits, C not
        assert_eq!(done, vec![Completion::Reply { token: 2, result: Ok(3) }]);
        done.clear();
        assert_eq!(read_now(&mut p, 1, &mut done).unwrap(), b"A");
        assert_eq!(done, vec![Completion::Reply { token: 3, result: Ok(1) }]);
        assert_eq!(read_now(&mut p, 100, &mut done).unwrap(), b"AAAABBBC");
    }

    #[test]
    fn long_writes_take_what_fits_and_finish_later() {
        let mut p = small(8, 4);
        let mut done = Vec::new();
        assert_eq!(p.read(9, &mut [0; 3], &mut done), Now::Wait);
        // 12 bytes > atomic: 8 go in at once, 3 of them to the reader.
        assert_eq!(p.write(1, b"0123456789ab", &mut done), Now::Wait);
        assert_eq!(done, vec![Completion::Data { token: 9, bytes: b"012".to_vec() }]);
        done.clear();
        // The reader's 3 bytes made room: the writer moved on 3 more
        // (the buffer holds 3456789a), b still waits.
        assert_eq!(read_now(&mut p, 4, &mut done).unwrap(), b"3456");
        assert_eq!(done, vec![Completion::Reply { token: 1, result: Ok(12) }]);
        assert_eq!(read_now(&mut p, 100, &mut done).unwrap(), b"789ab");
    }

    #[test]
    fn closing_read_end_fails_kept_writes() {
        let mut p = small(4, 4);
        let mut done = Vec::new();
        p.write(1, b"full", &mut done);
        assert_eq!(p.write(2, b"xy", &mut done), Now::Wait);
        assert_eq!(p.write(3, b"0123456789", &mut done), Now::Wait);
        p.close(End::Read, &mut done).unwrap();
        assert_eq!(
            done,
            vec![
                Completion::Reply { token: 2, result: Err(EPIPE) },
                Completion::Reply { token: 3, result: Err(EPIPE) }
            ]
        );
        assert_eq!(p.pending_calls(), 0);
    }

    #[test]
    fn closing_read_end_reports_partly_taken_long_write() {
        let mut p = small(4, 2);
        let mut done = Vec::new();
        assert_eq!(p.write(1, b"0123456789", &mut done), Now::Wait);
        p.close(End::Read, &mut done).unwrap();
        assert_eq!(done, vec![Completion::Reply { token: 1, result: Ok(4) }]);
    }

    #[test]
    fn closing_write_end_fails_its_kept_writes_and_readers_drain() {
        let mut p = small(4, 4);
        let mut done = Vec::new();
        p.write(1, b"abcd", &mut done);
        assert_eq!(p.write(2, b"ef", &mut done), Now::Wait);
        p.close(End::Write, &mut done).unwrap();
        assert_eq!(done, vec![Completion::Reply { token: 2, result: Err(EBADF) }]);
        done.clear();
        assert_eq!(read_now(&mut p, 100, &mut done).unwrap(), b"abcd");
        assert_eq!(read_now(&mut p, 100, &mut done).unwrap(), b"");
        p.close(End::Read, &mut done).unwrap();
        assert!(p.finished());
    }

    /// Delivers to everyone but the readers in `gone`.
    struct SomeGone {
        gone: Vec<u32>,
        sent: Vec<Completion<u32>>,
    }

    impl Deliver<u32> for SomeGone {
        fn deliver(&mut self, c: Completion<u32>) -> bool {
            if let Completion::Data { token, .. } = &c
                && self.gone.contains(token)
            {
                return false;
            }
            self.sent.push(c);
            true
        }
    }

    #[test]
    fn bytes_for_a_reader_that_has_gone_go_to_the_next() {
        let mut p = small(8, 8);
        let mut to = SomeGone { gone: vec![1, 2], sent: Vec::new() };
        for t in 1..=3 {
            assert_eq!(p.read(t, &mut [0; 4], &mut to), Now::Wait);
        }
        // The buffer wraps: the given-back bytes must come out in order.
        assert_eq!(p.write(9, b"12345", &mut to), Now::Reply(Ok(5)));
        assert_eq!(to.sent, vec![Completion::Data { token: 3, bytes: b"1234".to_vec() }]);
        let mut done = Vec::new();
        assert_eq!(read_now(&mut p, 8, &mut done).unwrap(), b"5");
        // All readers gone: the bytes stay buffered.
        let mut to = SomeGone { gone: vec![4], sent: Vec::new() };
        assert_eq!(p.read(4, &mut [0; 4], &mut to), Now::Wait);
        assert_eq!(p.write(9, b"abcdef", &mut to), Now::Reply(Ok(6)));
        assert!(to.sent.is_empty());
        assert_eq!(p.buffered(), 6);
        assert_eq!(read_now(&mut p, 8, &mut done).unwrap(), b"abcdef");
        assert!(done.is_empty());
    }

    #[test]
    fn kept_requests_are_bounded() {
        let mut p = small(4, 4);
        let mut done = Vec::new();
        for t in 0..4 {
            assert_eq!(p.read(t, &mut [0; 1], &mut done), Now::Wait);
        }
        assert_eq!(p.read(9, &mut [0; 1], &mut done), Now::Reply(Err(EAGAIN)));

        let mut p = small(4, 4);
        p.write(1, b"full", &mut done);
        // 64 bytes of kept data at most.
        assert_eq!(p.write(2, &[b'x'; 4], &mut done), Now::Wait);
        assert_eq!(p.write(3, &[b'y'; 61], &mut done), Now::Reply(Err(EAGAIN)));
        assert_eq!(p.write(3, &[b'y'; 60], &mut done), Now::Wait);
        assert!(done.is_empty());
    }

    #[test]
    fn a_megabyte_through_a_small_pipe_arrives_in_order() {
        let mut p: Pipe<u32> = Pipe::new(Limits {
            capacity_bytes: 1000,
            atomic_bytes: 300,
            max_pending_calls: 8,
            max_pending_write_bytes: 4096,
        })
        .unwrap();
        let source: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        let mut sent = 0;
        let mut received = Vec::new();
        let mut writer_waiting = false;
        let mut done = Vec::new();
        let mut step = 0usize;
        while received.len() < source.len() {
            step += 1;
            if !writer_waiting && sent < source.len() {
                let n = (step * 37 % 700 + 1).min(source.len() - sent);
                match p.write(1, &source[sent..sent + n], &mut done) {
                    Now::Reply(Ok(k)) => assert_eq!(k, n),
                    Now::Wait => writer_waiting = true,
                    Now::Reply(Err(e)) => panic!("write failed: {e}"),
                }
                sent += n;
            }
            let mut out = vec![0u8; step * 13 % 500 + 1];
            match p.read(2, &mut out, &mut done) {
                Now::Reply(Ok(k)) => received.extend_from_slice(&out[..k]),
                Now::Wait => {}
                Now::Reply(Err(e)) => panic!("read failed: {e}"),
            }
            for c in done.drain(..) {
                match c {
                    Completion::Data { token: 2, bytes } => received.extend_from_slice(&bytes),
                    Completion::Reply { token: 1, result: Ok(_) } => writer_waiting = false,
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        assert_eq!(received, source);
        p.close(End::Write, &mut done).unwrap();
        p.close(End::Read, &mut done).unwrap();
        assert!(p.finished());
    }
}
