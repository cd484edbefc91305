//! pipe: the pipe manager, one process per pipe (Ridge OS §3: "pipes are
//! associated with pipe managers, whose data space is the contents of the
//! pipe buffer"). The monitor starts one for each `pipe()` and gets two
//! handles back, one per end; the processes holding the descriptors then
//! call this manager directly with `io` requests:
//! - `OP_READ` on the read end: up to word 2 bytes; on an empty pipe the
//!   call is kept until data arrives, or answered with 0 (end of file) once
//!   the write end is closed;
//! - `OP_WRITE` on the write end: into the buffer, whole (writes of at most
//!   `PIPE_BUF` are never interleaved with other writers' data), or kept
//!   with a copy of its data until readers make room; `EPIPE` once the
//!   read end is closed;
//! - `OP_FSTAT` (a FIFO, `rw-------`, size = bytes buffered), `OP_SEEK`
//!   (`ESPIPE`), `OP_READDIR` (`ENOTDIR`), `OP_FOREGROUND` (`ENOTTY`);
//! - `OP_CLOSE`, from the monitor only, closes an end. When both are
//!   closed and nothing waits, the process exits with status 0.
//!
//! The rules themselves are `unix_core::pipebuf` (host-tested); this file
//! moves messages. Handles are sparse random numbers (the low bit tells
//! the end), so only the processes the monitor gave them to can use them.
//! Bad requests get a POSIX errno; nothing a client sends ends this
//! process.
//!
//! Arguments: the monitor's kernel pid (decimal). The monitor's
//! `monitor::START_QUEUE` gets `[pipe::READY, queue, read handle, write
//! handle]`.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use abi::msg::{Kind, Message};
use abi::{Error, Pid};
use protocols::unix::Errno;
use protocols::unix::errno::{EBADF, ENOSYS, ENOTDIR, ENOTTY, EPERM, ESPIPE};
use protocols::unix::{Stat, encode_result, io, mode, pipe};
use runtime::msg::{self, Page, Queue, ReplyHandle};
use runtime::{Args, sys};
use unix_core::pipebuf::{Completion, Deliver, End, Limits, Now, Pipe};

runtime::entry!(main);

const QUEUE_CAPACITY: u64 = 16;
const MAX_DATA_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize;

fn main(args: Args) -> i32 {
    // The last number among the arguments: plain `spawn` text gives just
    // the pid, an exec block gives the program name first.
    let Some(monitor) = args.iter().filter_map(|s| s.parse::<u64>().ok()).last().map(Pid) else {
        let _ = sys::debug_write(b"pipe: no monitor pid given\n");
        return 1;
    };
    let Ok(queue) = msg::open_queue(QUEUE_CAPACITY, true) else { return 2 };
    if queue.0 != pipe::QUEUE {
        return 2;
    }
    let Ok(state) = Pipe::new(Limits::standard()) else { return 3 };
    let ends = Ends::new();
    let ready = msg::open_link(monitor, Queue(protocols::unix::monitor::START_QUEUE))
        .and_then(|l| msg::send(l, &[pipe::READY, queue.0 as u64, ends.read, ends.write]));
    if ready.is_err() {
        return 4;
    }
    let mut manager = Manager { monitor, ends, pipe: state };
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

/// Answers kept calls as the pipe completes them.
struct Replies;

impl Deliver<ReplyHandle> for Replies {
    /// False only for a read whose caller has ended: its bytes stay in
    /// the pipe for the next reader.
    fn deliver(&mut self, c: Completion<ReplyHandle>) -> bool {
        match c {
            Completion::Data { token, bytes } => {
                msg::reply(token, &[bytes.len() as u64, 0, 0, 0], &bytes) != Err(Error::DeadPeer)
            }
            Completion::Reply { token, result } => {
                let _ = msg::reply(token, &[encode_result(result.map(|n| n as u64)), 0, 0, 0], &[]);
                true
            }
        }
    }
}

struct Manager {
    monitor: Pid,
    ends: Ends,
    pipe: Pipe<ReplyHandle>,
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
            if r.kind != Kind::Call {
                continue;
            }
            let data = &request.0[..r.len.min(MAX_DATA_BYTES)];
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
        let now = match (m[0], end) {
            (io::OP_READ, Some(End::Read)) => {
                let max_bytes = (m[2] as usize).min(MAX_DATA_BYTES);
                self.pipe.read(reply, &mut out[..max_bytes], &mut Replies)
            }
            (io::OP_WRITE, Some(End::Write)) => self.pipe.write(reply, data, &mut Replies),
            (io::OP_FSTAT, Some(_)) => {
                let stat = Stat {
                    ino: sys::getpid().0,
                    mode: mode::S_IFIFO | 0o600,
                    nlink: 1,
                    size_bytes: self.pipe.buffered() as u64,
                    ..Stat::default()
                };
                out[..Stat::BYTES].copy_from_slice(&stat.encode());
                return Some(Answer { words: [0; 4], data_len: Stat::BYTES });
            }
            (io::OP_SEEK, Some(_)) => Now::Reply(Err(ESPIPE)),
            (io::OP_READDIR, Some(_)) => Now::Reply(Err(ENOTDIR)),
            (io::OP_FOREGROUND, Some(_)) => Now::Reply(Err(ENOTTY)),
            (io::OP_CLOSE, _) if sender != self.monitor => Now::Reply(Err(EPERM)),
            (io::OP_CLOSE, Some(e)) => Now::Reply(self.pipe.close(e, &mut Replies).map(|()| 0)),
            // A bad handle, or the wrong end (a read on the write end).
            (
                io::OP_READ
                | io::OP_WRITE
                | io::OP_FSTAT
                | io::OP_SEEK
                | io::OP_READDIR
                | io::OP_FOREGROUND
                | io::OP_CLOSE,
                _,
            ) => Now::Reply(Err(EBADF)),
            _ => Now::Reply(Err(ENOSYS)),
        };
        match now {
            // A read's bytes are already in `out`.
            Now::Reply(Ok(n)) if m[0] == io::OP_READ => {
                Some(Answer { words: [n as u64, 0, 0, 0], data_len: n })
            }
            Now::Reply(r) => Some(Answer::result(r.map(|n| n as u64))),
            Now::Wait => None,
        }
    }
}
