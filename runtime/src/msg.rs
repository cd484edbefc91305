//! The message system from user space: one function per kernel call,
//! with the 32-byte message in the four message registers (see
//! `abi::msg`). Everything here is a thin, checked wrapper; the kernel
//! does all validation.
//!
//! Built on [`crate::sys`] (the `syscall` instruction, and touching
//! buffers before the kernel reads them) and on nothing else of the
//! runtime; the UNIX calls ([`crate::unix`]) are built on it.
//!
//! The wrappers are `#[inline]`: a message call is a handful of register
//! moves around one `syscall`, and inlined into its caller's loop the
//! message words go straight from the caller's registers into the message
//! registers, the result's decoding folds into the caller's checks, and
//! r12..r15 (callee-saved in the SysV ABI) are saved once per loop instead
//! of once per call. That is about half the user-side cost of a
//! call/reply_wait round trip (docs/messages.md).

use crate::sys::{raw_with_message, touch};
use abi::msg::{Kind, Message, NO_REPLY};
use abi::{Call, Error, Pid, decode_return};

pub use crate::sys::RawResult;

/// A queue of this process (a small integer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queue(pub u32);

/// A link to another process's queue (a small integer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link(pub u32);

/// The one-shot handle that answers a received call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyHandle(pub u64);

/// What `receive_data`, `reply_wait` and the like return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    pub message: Message,
    pub sender: Pid,
    pub kind: Kind,
    /// Bytes of data placed in the buffer.
    pub len: usize,
    /// For `Kind::Call`: how to answer.
    pub reply: ReplyHandle,
}

/// A message-system kernel call with six arguments and a message
/// ([`crate::sys::raw_with_message`]); public so that tests can pass
/// deliberately bad arguments.
#[inline(always)]
pub fn raw(call: u64, args: [u64; 6], words: Message) -> RawResult {
    raw_with_message(call, args, words)
}

/// `rax` as a result: the success test inline, the error's decoding out
/// of the way.
#[inline(always)]
fn result(rax: u64) -> Result<u64, Error> {
    if (rax as i64) < 0 { Err(error(rax)) } else { Ok(rax) }
}

#[cold]
#[inline(never)]
fn error(rax: u64) -> Error {
    decode_return(rax).err().unwrap_or(Error::InvalidArgument)
}

#[inline]
fn simple(call: Call, args: [u64; 6], words: Message) -> Result<u64, Error> {
    result(raw_with_message(call as u64, args, words).rax)
}

#[inline(always)]
fn received(r: RawResult) -> Result<Received, Error> {
    let len = result(r.rax)?;
    Ok(Received {
        message: r.words,
        sender: Pid(r.rdx),
        kind: Kind::from_raw(r.rsi).unwrap_or(Kind::Short),
        len: len as usize,
        reply: ReplyHandle(r.r10),
    })
}

/// Set up this process's queue segment (Ridge's InitQSeg).
pub fn init_qseg(links: u64, queues: u64, messages: u64, pages: u64) -> Result<(), Error> {
    simple(Call::InitQSeg, [links, queues, messages, pages, 0, 0], [0; 4]).map(|_| ())
}

/// Open a queue holding up to `capacity` messages; `public` queues accept
/// links from anyone, others only from processes named with `allow_sender`.
pub fn open_queue(capacity: u64, public: bool) -> Result<Queue, Error> {
    let access = if public { abi::msg::ACCESS_PUBLIC } else { abi::msg::ACCESS_PRIVATE };
    simple(Call::OpenQueue, [capacity, access, 0, 0, 0, 0], [0; 4]).map(|q| Queue(q as u32))
}

pub fn close_queue(q: Queue) -> Result<(), Error> {
    simple(Call::CloseQueue, [q.0 as u64, 0, 0, 0, 0, 0], [0; 4]).map(|_| ())
}

pub fn allow_sender(q: Queue, pid: Pid) -> Result<(), Error> {
    simple(Call::AllowSender, [q.0 as u64, pid.0, 0, 0, 0, 0], [0; 4]).map(|_| ())
}

pub fn open_link(receiver: Pid, queue: Queue) -> Result<Link, Error> {
    simple(Call::OpenLink, [receiver.0, queue.0 as u64, 0, 0, 0, 0], [0; 4]).map(|l| Link(l as u32))
}

pub fn close_link(l: Link) -> Result<(), Error> {
    simple(Call::CloseLink, [l.0 as u64, 0, 0, 0, 0, 0], [0; 4]).map(|_| ())
}

/// Queue a 32-byte message; does not wait.
#[inline]
pub fn send(l: Link, message: &Message) -> Result<(), Error> {
    simple(Call::Send, [l.0 as u64, 0, 0, 0, 0, 0], *message).map(|_| ())
}

/// Queue a message with up to `abi::msg::MAX_DATA_BYTES` bytes of data (one
/// page). One whole page-aligned page ([`Page`]) moves by copy-on-write
/// mapping instead of being copied.
pub fn send_data(l: Link, message: &Message, data: &[u8]) -> Result<(), Error> {
    touch(data);
    simple(Call::SendData, [l.0 as u64, data.as_ptr() as u64, data.len() as u64, 0, 0, 0], *message)
        .map(|_| ())
}

/// Take the next message from `q` (waiting for one), its data into `buf`.
#[inline]
pub fn receive_data(q: Queue, buf: &mut [u8]) -> Result<Received, Error> {
    touch(buf);
    received(raw(
        Call::ReceiveData as u64,
        [q.0 as u64, buf.as_mut_ptr() as u64, buf.len() as u64, 0, 0, 0],
        [0; 4],
    ))
}

/// As [`receive_data`], but `Ok(None)` instead of waiting on an empty queue.
pub fn try_receive(q: Queue, buf: &mut [u8]) -> Result<Option<Received>, Error> {
    touch(buf);
    let args = [q.0 as u64, buf.as_mut_ptr() as u64, buf.len() as u64, abi::msg::NONBLOCKING, 0, 0];
    match received(raw(Call::ReceiveData as u64, args, [0; 4])) {
        Ok(r) => Ok(Some(r)),
        Err(Error::WouldBlock) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Messages waiting in `q` (Ridge's Test).
pub fn test(q: Queue) -> Result<usize, Error> {
    simple(Call::Test, [q.0 as u64, 0, 0, 0, 0, 0], [0; 4]).map(|n| n as usize)
}

/// Include or exclude `q` from [`wait_armed`] (Ridge's Arm).
pub fn arm(q: Queue, on: bool) -> Result<(), Error> {
    simple(Call::Arm, [q.0 as u64, on as u64, 0, 0, 0, 0], [0; 4]).map(|_| ())
}

/// Wait until an armed queue has a message; returns the lowest such queue.
pub fn wait_armed() -> Result<Queue, Error> {
    simple(Call::WaitArmed, [0; 6], [0; 4]).map(|q| Queue(q as u32))
}

/// Send `message` (with `data`) and wait for the reply, whose data lands
/// in `reply_buf`: the synchronous call, two kernel entries per round trip.
///
/// Both buffers are also *lent* to the server until it replies: it may
/// read `data` ([`lease_read`]) and write `reply_buf` ([`lease_write`]) at
/// any offset, so one call moves any amount up to
/// `abi::lease::MAX_LEASE_BYTES`. `data` travels with the message only
/// when it fits one (`abi::msg::MAX_DATA_BYTES`).
#[inline]
pub fn call(
    l: Link,
    message: &Message,
    data: &[u8],
    reply_buf: &mut [u8],
) -> Result<(Message, usize), Error> {
    touch(data);
    touch(reply_buf);
    let args = [
        l.0 as u64,
        data.as_ptr() as u64,
        data.len() as u64,
        reply_buf.as_mut_ptr() as u64,
        reply_buf.len() as u64,
        0,
    ];
    let r = raw(Call::Call as u64, args, *message);
    result(r.rax).map(|len| (r.words, len as usize))
}

/// As a server holding `handle`: copy from the caller's lent send buffer,
/// at `offset`, into `buf` (flags: `abi::lease`). Returns bytes copied.
#[inline]
pub fn lease_read(handle: ReplyHandle, offset: u64, buf: &mut [u8], flags: u64) -> Result<usize, Error> {
    touch(buf);
    let args = [handle.0, offset, buf.as_mut_ptr() as u64, buf.len() as u64, flags, 0];
    simple(Call::LeaseRead, args, [0; 4]).map(|n| n as usize)
}

/// As a server holding `handle`: copy `buf` into the caller's lent
/// receive buffer at `offset` (flags: `abi::lease`). Returns bytes copied.
#[inline]
pub fn lease_write(handle: ReplyHandle, offset: u64, buf: &[u8], flags: u64) -> Result<usize, Error> {
    touch(buf);
    let args = [handle.0, offset, buf.as_ptr() as u64, buf.len() as u64, flags, 0];
    simple(Call::LeaseWrite, args, [0; 4]).map(|n| n as usize)
}

/// As a server holding `handle`: copy `bufs`, one after another, into
/// the caller's lent receive buffer from `offset` on, in one kernel entry
/// (`abi::lease::SEGMENTS`; at most `abi::lease::MAX_SEGMENTS` buffers,
/// else `InvalidArgument`). Returns bytes copied.
pub fn lease_write_segments(handle: ReplyHandle, offset: u64, bufs: &[&[u8]]) -> Result<usize, Error> {
    if bufs.len() > abi::lease::MAX_SEGMENTS as usize {
        return Err(Error::InvalidArgument);
    }
    // A short list on a short array: zeroing 64 entries for an 8 KiB
    // read's 8 showed in the disk read row's profile (`cargo xtask profile`).
    if bufs.len() <= SHORT_SEGMENTS {
        lease_write_segments_in::<SHORT_SEGMENTS>(handle, offset, bufs)
    } else {
        lease_write_segments_in::<{ abi::lease::MAX_SEGMENTS as usize }>(handle, offset, bufs)
    }
}

/// Segment lists this short are built in a short array.
const SHORT_SEGMENTS: usize = 16;

fn lease_write_segments_in<const N: usize>(
    handle: ReplyHandle,
    offset: u64,
    bufs: &[&[u8]],
) -> Result<usize, Error> {
    let mut list = [[0u64; 2]; N];
    for (segment, buf) in list.iter_mut().zip(bufs) {
        touch(buf);
        *segment = [buf.as_ptr() as u64, buf.len() as u64];
    }
    let args = [handle.0, offset, list.as_ptr() as u64, bufs.len() as u64, abi::lease::SEGMENTS, 0];
    simple(Call::LeaseWrite, args, [0; 4]).map(|n| n as usize)
}

/// As a server holding `handle`: fill `bufs`, one after another, from the
/// caller's lent send buffer from `offset` on, in one kernel entry (as
/// [`lease_write_segments`]). Returns bytes copied.
pub fn lease_read_segments(handle: ReplyHandle, offset: u64, bufs: &mut [&mut [u8]]) -> Result<usize, Error> {
    let mut list = [[0u64; 2]; abi::lease::MAX_SEGMENTS as usize];
    if bufs.len() > list.len() {
        return Err(Error::InvalidArgument);
    }
    for (segment, buf) in list.iter_mut().zip(bufs.iter_mut()) {
        touch(buf);
        *segment = [buf.as_mut_ptr() as u64, buf.len() as u64];
    }
    let args = [handle.0, offset, list.as_ptr() as u64, bufs.len() as u64, abi::lease::SEGMENTS, 0];
    simple(Call::LeaseRead, args, [0; 4]).map(|n| n as usize)
}

/// As a server holding both handles: copy `len` bytes from the send
/// buffer lent by call `src` (at `src_offset`) to the receive buffer lent
/// by call `dst` (at `dst_offset`), in one copy (flags: `abi::lease`).
#[inline]
pub fn lease_copy(
    src: ReplyHandle,
    src_offset: u64,
    dst: ReplyHandle,
    dst_offset: u64,
    len: u64,
    flags: u64,
) -> Result<usize, Error> {
    let args = [src.0, src_offset, dst.0, dst_offset, len, flags];
    simple(Call::LeaseCopy, args, [0; 4]).map(|n| n as usize)
}

/// Answer a call; does not wait.
#[inline]
pub fn reply(handle: ReplyHandle, message: &Message, data: &[u8]) -> Result<(), Error> {
    touch(data);
    let args = [handle.0, data.as_ptr() as u64, data.len() as u64, 0, 0, 0];
    simple(Call::Reply, args, *message).map(|_| ())
}

/// Answer a call (if `handle` is given) and wait for the next message on
/// `q`, in one kernel entry.
#[inline]
pub fn reply_wait(
    handle: Option<ReplyHandle>,
    message: &Message,
    data: &[u8],
    q: Queue,
    buf: &mut [u8],
) -> Result<Received, Error> {
    touch(data);
    touch(buf);
    let args = [
        handle.map_or(NO_REPLY, |h| h.0),
        data.as_ptr() as u64,
        data.len() as u64,
        q.0 as u64,
        buf.as_mut_ptr() as u64,
        buf.len() as u64,
    ];
    received(raw(Call::ReplyWait as u64, args, *message))
}

/// Pass the call held under `handle` on to the server of `link` as a call
/// of `message` and `data` (at most one message's data), and wait for the
/// next message on `q`, in one kernel entry (`abi::Call::ForwardWait`):
/// that server answers the caller directly. On an error nothing was
/// received and the handle is still this process's to answer.
#[inline]
pub fn forward_wait(
    handle: ReplyHandle,
    link: Link,
    message: &Message,
    data: &[u8],
    q: Queue,
    buf: &mut [u8],
) -> Result<Received, Error> {
    touch(data);
    touch(buf);
    let args = [
        handle.0,
        data.as_ptr() as u64,
        data.len() as u64,
        q.0 as u64 | (link.0 as u64) << 32,
        buf.as_mut_ptr() as u64,
        buf.len() as u64,
    ];
    received(raw(Call::ForwardWait as u64, args, *message))
}

/// Pass the call held under `handle` on, as [`forward_wait`], without
/// receiving anything (`abi::msg::NO_RECEIVE`).
pub fn forward(handle: ReplyHandle, link: Link, message: &Message, data: &[u8]) -> Result<(), Error> {
    touch(data);
    let args = [
        handle.0,
        data.as_ptr() as u64,
        data.len() as u64,
        abi::msg::NO_RECEIVE as u64 | (link.0 as u64) << 32,
        0,
        0,
    ];
    decode_return(raw(Call::ForwardWait as u64, args, *message).rax).map(|_| ())
}

/// Copy the process waiting in call `handle` into a stopped child that
/// will see `reply` as its call's answer (see `Call::ProcFork`): an answer
/// to a call, carried in the message registers like the others here.
pub fn proc_fork(handle: ReplyHandle, reply: &Message) -> Result<Pid, Error> {
    decode_return(raw(Call::ProcFork as u64, [handle.0, 0, 0, 0, 0, 0], *reply).rax).map(Pid)
}

/// One page-aligned page, for sending and receiving data by copy-on-write.
/// (`align` takes only a literal: the assertion below ties it to the page
/// size.)
#[repr(C, align(4096))]
pub struct Page(pub [u8; abi::layout::PAGE_SIZE as usize]);

const _: () = assert!(core::mem::align_of::<Page>() as u64 == abi::layout::PAGE_SIZE);

impl Page {
    pub const fn zeroed() -> Page {
        Page([0; abi::layout::PAGE_SIZE as usize])
    }
}
