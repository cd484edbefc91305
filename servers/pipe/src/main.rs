//! pipe: the pipe manager, one process per pipe (Ridge OS §3: "pipes are
//! associated with pipe managers, whose data space is the contents of the
//! pipe buffer"). The monitor starts one for each `pipe()` and gets two
//! handles back, one per end; the processes holding the descriptors then
//! call this manager directly with `io` requests, one call per `read` or
//! `write` of any size (the caller's buffer is lent for the call):
//! - `OP_READ` on the read end (word 2 = bytes wanted): the bytes go into
//!   the reader's lent buffer (`lease_write` from the buffer, or
//!   `lease_copy` from a loaned writer); a read with nothing to read is
//!   kept until there is, or answered with 0 (end of file) once the write
//!   end is closed;
//! - `OP_WRITE` on the write end (word 2 = bytes): into the buffer (from
//!   the message's data, or `lease_read`), or, in `loan` mode and for at
//!   least `pipe.loan_min` bytes, kept and served straight to readers
//!   (seed 002's loaned pipes); `EPIPE` once the read end is closed;
//! - `OP_POLL` (readiness for `poll`, answered at once: `POLLIN`,
//!   `POLLOUT`, `POLLHUP` when the writers are gone, `POLLERR` when the
//!   readers are);
//! - `OP_FSTAT` (a FIFO, `rw-------`, size = bytes readable now),
//!   `OP_SEEK`, `OP_PREAD` and `OP_PWRITE` (`ESPIPE`), `OP_READDIR`
//!   (`ENOTDIR`), `OP_FOREGROUND` (`ENOTTY`);
//! - `OP_CLOSE`, from the monitor only, closes an end. When both are
//!   closed and nothing waits, the process exits with status 0;
//! - one-way messages from the monitor: `pipe::OP_SET_LOAN_MIN`,
//!   `pipe::OP_GRANT`, `pipe::OP_RECLAIM` (the system-wide loan budget:
//!   see `servers/monitor/src/pipes.rs`). This manager never calls the
//!   monitor, so neither can wait for the other.
//!
//! The rules themselves are `unix_core::pipebuf` (host-tested); this file
//! moves messages and bytes. Handles are sparse random numbers (the low
//! bit tells the end), so only the processes the monitor gave them to can
//! use them. Bad requests get a POSIX errno; nothing a client sends ends
//! this process.
//!
//! Arguments: `MONITOR_PID [MODE [LOAN_MIN]]` (decimal kernel pid,
//! `small|big|loan`, bytes). The monitor's `monitor::START_QUEUE` gets
//! `[pipe::READY, queue, read handle, write handle]`.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use abi::lease::{LOAN_MIN_BYTES, MAX_LEASE_BYTES, MAY_LOAN};
use abi::msg::{Kind, Message};
use abi::{Error, Pid};
use alloc::vec::Vec;
use protocols::net::{POLLERR, POLLHUP, POLLIN, POLLOUT};
use protocols::unix::errno::{EBADF, EFAULT, EIO, ENOSYS, ENOTDIR, ENOTTY, EPERM, ESPIPE};
use protocols::unix::pipe::Mode;
use protocols::unix::{Errno, Stat, encode_result, io, mode, monitor as mon, pipe};
use runtime::msg::{self, Link, Page, Queue, ReplyHandle};
use runtime::{Args, sys};
use unix_core::pipebuf::{End, Fault, Limits, Mover, Pipe, Side};

runtime::entry!(main);

/// Kept calls (`Limits::max_pending_calls`) plus room for the monitor's
/// messages and new requests.
const QUEUE_CAPACITY: u64 = 64;
const PAGE_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize;
/// The bounce buffer of a direct copy when the kernel cannot copy between
/// two leases itself (or to find which side of a failed one is at fault).
const BOUNCE_BYTES: usize = 64 * 1024;

fn main(args: Args) -> i32 {
    // A program name may come first (an exec block); the monitor's pid is
    // the first number, the design and `loan_min` follow it.
    let mut words = args.iter().skip_while(|w| w.parse::<u64>().is_err());
    let Some(monitor) = words.next().and_then(|w| w.parse::<u64>().ok()).map(Pid) else {
        let _ = sys::debug_write(b"pipe: no monitor pid given\n");
        return 1;
    };
    let design = words.next().and_then(Mode::parse).unwrap_or(Mode::Loan);
    let loan_min = words.next().and_then(|w| w.parse::<usize>().ok());
    let loan_min = loan_min.unwrap_or(pipe::DEFAULT_LOAN_MIN_BYTES as usize);
    let Ok(queue) = msg::open_queue(QUEUE_CAPACITY, true) else { return 2 };
    if queue.0 != pipe::QUEUE {
        return 2;
    }
    let ends = Ends::new();
    let Ok(to_monitor) = msg::open_link(monitor, Queue(mon::QUEUE)) else { return 4 };
    let ready = msg::open_link(monitor, Queue(mon::START_QUEUE))
        .and_then(|l| msg::send(l, &[pipe::READY, queue.0 as u64, ends.read, ends.write]));
    if ready.is_err() {
        return 4;
    }
    let mut manager = Manager {
        monitor,
        to_monitor,
        ends,
        pipe: Pipe::new(Limits::for_mode(design, loan_min)),
        caps: Caps { lease_copy: true, may_loan: true, bounce: Vec::new() },
        asking: false,
    };
    manager.serve(queue)
}

/// The two handles: random, positive, the low bit 0 for the read end and
/// 1 for the write end.
struct Ends {
    read: u64,
    write: u64,
}

impl Ends {
    fn new() -> Ends {
        let mut seed = sys::rdtsc() ^ sys::getpid().0.rotate_left(17);
        let mut draw = || {
            seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15) ^ sys::rdtsc();
            let mut z = seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            // Positive as i64 (replies carry errors as negative numbers)
            // and never 0 or 1.
            ((z ^ (z >> 31)) & 0x3fff_ffff_ffff_fffe).max(2)
        };
        Ends { read: draw(), write: draw() | 1 }
    }

    fn end_of(&self, handle: u64) -> Option<End> {
        if handle == self.read {
            Some(End::Read)
        } else if handle == self.write {
            Some(End::Write)
        } else {
            None
        }
    }
}

/// What the kernel turned out to offer, learnt at the first refusal.
struct Caps {
    /// `lease_copy` exists (else: a bounce copy through this process).
    lease_copy: bool,
    /// `lease_copy` takes `MAY_LOAN`.
    may_loan: bool,
    bounce: Vec<u8>,
}

/// A kernel error from a lease call, as the errno for that caller (its
/// answer is lost anyway if it has gone).
fn lease_errno(e: Error) -> Errno {
    match e {
        Error::BadAddress | Error::InvalidArgument => EFAULT,
        _ => EIO,
    }
}

/// The pipe's [`Mover`] for one request: kept calls are answered at once;
/// the request being handled (`current`) is answered by the manager's
/// next `reply_wait`, carrying up to a page of a read's bytes with it.
struct Io<'a> {
    current: ReplyHandle,
    answer: Option<Result<usize, Errno>>,
    reply_data: &'a mut [u8],
    /// A read's first bytes, in `reply_data`, for the current request.
    inline_len: usize,
    caps: &'a mut Caps,
}

impl Mover<ReplyHandle> for Io<'_> {
    fn pull(&mut self, w: ReplyHandle, offset: usize, out: &mut [u8]) -> Result<(), Errno> {
        match msg::lease_read(w, offset as u64, out, 0) {
            Ok(n) if n == out.len() => Ok(()),
            Ok(_) => Err(EFAULT),
            Err(e) => Err(lease_errno(e)),
        }
    }

    fn push(&mut self, r: ReplyHandle, offset: usize, bytes: &[u8]) -> Result<(), Errno> {
        if r == self.current && offset == self.inline_len && offset + bytes.len() <= self.reply_data.len() {
            // Travels with the answer: no kernel entry of its own.
            self.reply_data[offset..offset + bytes.len()].copy_from_slice(bytes);
            self.inline_len += bytes.len();
            return Ok(());
        }
        match msg::lease_write(r, offset as u64, bytes, 0) {
            Ok(n) if n == bytes.len() => Ok(()),
            Ok(_) => Err(EFAULT),
            Err(e) => Err(lease_errno(e)),
        }
    }

    fn direct(&mut self, w: ReplyHandle, w_offset: usize, r: ReplyHandle, len: usize) -> Result<(), Fault> {
        if self.caps.lease_copy {
            let loan = self.caps.may_loan && len as u64 >= LOAN_MIN_BYTES;
            let flags = if loan { MAY_LOAN } else { 0 };
            match msg::lease_copy(w, w_offset as u64, r, 0, len as u64, flags) {
                Ok(n) if n == len => return Ok(()),
                Err(Error::NoSuchCall) => self.caps.lease_copy = false,
                Err(Error::InvalidArgument) if loan => {
                    // A kernel without loans: copy from now on.
                    self.caps.may_loan = false;
                    if msg::lease_copy(w, w_offset as u64, r, 0, len as u64, 0) == Ok(len) {
                        return Ok(());
                    }
                }
                // Which side failed: the bounce copy below finds out.
                _ => {}
            }
        }
        self.bounce(w, w_offset, r, len)
    }

    fn reply(&mut self, token: ReplyHandle, result: Result<usize, Errno>) {
        if token == self.current {
            self.answer = Some(result);
        } else {
            let _ = msg::reply(token, &[encode_result(result.map(|n| n as u64)), 0, 0, 0], &[]);
        }
    }
}

impl Io<'_> {
    /// Writer → this process → reader, a bounce buffer at a time: two
    /// copies, and it tells which side failed.
    fn bounce(&mut self, w: ReplyHandle, w_offset: usize, r: ReplyHandle, len: usize) -> Result<(), Fault> {
        if self.caps.bounce.is_empty() {
            self.caps.bounce.resize(BOUNCE_BYTES, 0);
        }
        let mut done = 0;
        while done < len {
            let n = (len - done).min(BOUNCE_BYTES);
            let chunk = &mut self.caps.bounce[..n];
            match msg::lease_read(w, (w_offset + done) as u64, chunk, 0) {
                Ok(k) if k == n => {}
                Ok(_) => return Err(Fault { side: Side::Writer, errno: EFAULT }),
                Err(e) => return Err(Fault { side: Side::Writer, errno: lease_errno(e) }),
            }
            match msg::lease_write(r, done as u64, chunk, 0) {
                Ok(k) if k == n => {}
                Ok(_) => return Err(Fault { side: Side::Reader, errno: EFAULT }),
                Err(e) => return Err(Fault { side: Side::Reader, errno: lease_errno(e) }),
            }
            done += n;
        }
        Ok(())
    }
}

struct Manager {
    monitor: Pid,
    /// The monitor's request queue, for loan budget (one-way sends only).
    to_monitor: Link,
    ends: Ends,
    pipe: Pipe<ReplyHandle>,
    caps: Caps,
    /// A want of budget is with the monitor, not yet answered.
    asking: bool,
}

/// What to answer the request just received.
struct Answer {
    words: Message,
    data_len: usize,
}

impl Answer {
    fn result(r: Result<u64, Errno>) -> Answer {
        Answer { words: [encode_result(r), 0, 0, 0], data_len: 0 }
    }
}

impl Manager {
    /// `poll`'s events on end `end` now (`io::OP_POLL`), as POSIX and
    /// Linux give them for a pipe: the read end is `POLLIN` with bytes to
    /// read, `POLLHUP` once every writer has gone (with `POLLIN` while
    /// bytes remain); the write end is `POLLOUT` when `PIPE_BUF` bytes
    /// would go in without waiting, `POLLERR` once every reader has gone
    /// (a write would then raise `SIGPIPE`).
    fn readiness(&self, end: End, asked: u64) -> u64 {
        let asked = asked as u16;
        let bits = match end {
            End::Read => {
                let mut r = 0;
                if self.pipe.buffered() > 0 {
                    r |= POLLIN & asked;
                }
                if !self.pipe.is_open(End::Write) {
                    r |= POLLHUP;
                }
                r
            }
            End::Write if !self.pipe.is_open(End::Read) => POLLERR,
            End::Write if self.pipe.writable_now() => POLLOUT & asked,
            End::Write => 0,
        };
        u64::from(bits)
    }

    fn serve(&mut self, queue: Queue) -> i32 {
        let mut request = Page::zeroed();
        let mut reply_data = Page::zeroed();
        let mut answer: Option<(ReplyHandle, Answer)> = None;
        loop {
            let (handle, words, len) = match &answer {
                Some((h, a)) => (Some(*h), a.words, a.data_len),
                None => (None, [0; 4], 0),
            };
            let received = msg::reply_wait(handle, &words, &reply_data.0[..len], queue, &mut request.0);
            answer = None;
            // Data always fits a page; after any other failure the message
            // is still queued or gone: receive again.
            let Ok(r) = received else { continue };
            match r.kind {
                Kind::Call => {
                    let data = &request.0[..r.len.min(PAGE_BYTES)];
                    let a = self.request(r.sender, r.reply, &r.message, data, &mut reply_data.0);
                    if self.pipe.finished() {
                        // Both ends closed and nobody waits: answer the close and end.
                        if let Some(a) = a {
                            let _ = msg::reply(r.reply, &a.words, &reply_data.0[..a.data_len]);
                        }
                        return 0;
                    }
                    answer = a.map(|a| (r.reply, a));
                }
                Kind::Short if r.sender == self.monitor => self.monitor_said(&r.message),
                _ => {}
            }
            self.budget_traffic();
        }
    }

    /// A one-way message from the monitor.
    fn monitor_said(&mut self, m: &Message) {
        match m[0] {
            pipe::OP_SET_LOAN_MIN => self.pipe.set_loan_min(m[1] as usize),
            pipe::OP_GRANT => {
                self.asking = false;
                self.pipe.grant(m[1] as usize);
            }
            pipe::OP_RECLAIM => {
                let unused = self.pipe.reclaim();
                self.give_back(unused);
            }
            _ => {}
        }
    }

    /// Ask for budget a loan was refused for; give back what a reclaim
    /// freed.
    fn budget_traffic(&mut self) {
        let wanted = self.pipe.take_wanted();
        if wanted > 0 && !self.asking {
            let want = (wanted as u64).max(pipe::GRANT_BYTES);
            self.asking = msg::send(self.to_monitor, &[mon::OP_PIPE_LOAN, want, 0, 0]).is_ok();
        }
        let back = self.pipe.take_return();
        self.give_back(back);
    }

    fn give_back(&mut self, bytes: usize) {
        if bytes > 0 {
            // If the monitor's queue is full the bytes are lost to the
            // system's budget until this pipe ends (the monitor then takes
            // back all it granted): fewer loans, never more.
            let _ = msg::send(self.to_monitor, &[mon::OP_PIPE_LOAN, 0, bytes as u64, 0]);
        }
    }

    /// A call. `None`: the pipe kept it and answers it later.
    fn request(
        &mut self,
        sender: Pid,
        reply: ReplyHandle,
        m: &Message,
        data: &[u8],
        out: &mut [u8],
    ) -> Option<Answer> {
        // The end a handle names, if that end is still open.
        let end = self.ends.end_of(m[1]).filter(|&e| self.pipe.is_open(e));
        let mut io =
            Io { current: reply, answer: None, reply_data: out, inline_len: 0, caps: &mut self.caps };
        match (m[0], end) {
            (io::OP_READ, Some(End::Read)) => {
                let max_bytes = m[2].min(MAX_LEASE_BYTES) as usize;
                self.pipe.read(reply, max_bytes, &mut io);
            }
            (io::OP_WRITE, Some(End::Write)) => {
                // Word 2 = bytes; a client that sends only a message's
                // data says nothing there.
                let len = if m[2] == 0 { data.len() as u64 } else { m[2].min(MAX_LEASE_BYTES) };
                self.pipe.write(reply, len as usize, data, &mut io);
            }
            (io::OP_FSTAT, Some(_)) => {
                let stat = Stat {
                    ino: sys::getpid().0,
                    mode: mode::S_IFIFO | 0o600,
                    nlink: 1,
                    size_bytes: self.pipe.buffered() as u64,
                    ..Stat::default()
                };
                io.reply_data[..Stat::BYTES].copy_from_slice(&stat.encode());
                return Some(Answer { words: [0; 4], data_len: Stat::BYTES });
            }
            (io::OP_POLL, Some(e)) => return Some(Answer::result(Ok(self.readiness(e, m[2])))),
            (io::OP_SEEK, Some(_)) => return Some(Answer::result(Err(ESPIPE))),
            // POSIX `pread`/`pwrite`: "[ESPIPE] The file is a pipe".
            (io::OP_PREAD | io::OP_PWRITE, Some(_)) => return Some(Answer::result(Err(ESPIPE))),
            (io::OP_READDIR, Some(_)) => return Some(Answer::result(Err(ENOTDIR))),
            (io::OP_FOREGROUND, Some(_)) => return Some(Answer::result(Err(ENOTTY))),
            (io::OP_CLOSE, _) if sender != self.monitor => return Some(Answer::result(Err(EPERM))),
            (io::OP_CLOSE, Some(e)) => {
                let closed = self.pipe.close(e, &mut io).map(|()| 0);
                return Some(Answer::result(closed));
            }
            // A bad handle, or the wrong end (a read on the write end).
            (
                io::OP_READ
                | io::OP_WRITE
                | io::OP_FSTAT
                | io::OP_SEEK
                | io::OP_PREAD
                | io::OP_PWRITE
                | io::OP_READDIR
                | io::OP_FOREGROUND
                | io::OP_POLL
                | io::OP_CLOSE,
                _,
            ) => return Some(Answer::result(Err(EBADF))),
            _ => return Some(Answer::result(Err(ENOSYS))),
        }
        let inline_len = io.inline_len;
        match io.answer {
            None => None,
            Some(Ok(n)) if m[0] == io::OP_READ => {
                Some(Answer { words: [n as u64, 0, 0, 0], data_len: inline_len.min(n) })
            }
            Some(r) => Some(Answer::result(r.map(|n| n as u64))),
        }
    }
}
