//! Message calls (`abi::Call` 32–47 and the leases 57–59, Ridge OS §5): queue segments, queues,
//! links, the four ways to send (`send`, `send_data`, `call`, `reply`) and
//! to receive (`receive_data`, `test`, `arm`/`wait_armed`, `reply_wait`),
//! and `forward_wait`, which passes a call on to another server.

use super::{args, done, message_words};
use crate::ipc::Receive;
use crate::state::{Kernel, Next};
use abi::msg::{ACCESS_PRIVATE, ACCESS_PUBLIC, NONBLOCKING};
use abi::{Error, Pid};
use kernel_core::qseg::Limits;

/// `init_qseg(links, queues, messages, pages) -> 0`.
pub fn init_qseg(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [links, queues, messages, pages, ..] = args(k, caller);
    let limits = Limits::new(links, queues, messages, pages)?;
    done(k.init_qseg(caller, limits))
}

/// `open_queue(capacity, access) -> queue`.
pub fn open_queue(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [capacity, access, ..] = args(k, caller);
    let is_public = match access {
        ACCESS_PUBLIC => true,
        ACCESS_PRIVATE => false,
        _ => return Err(Error::InvalidArgument),
    };
    k.open_queue(caller, capacity, is_public).map(|q| Next::Return(q.into()))
}

/// `close_queue(queue) -> 0`.
pub fn close_queue(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [queue, ..] = args(k, caller);
    done(k.close_queue(caller, queue))
}

/// `allow_sender(queue, pid) -> 0`.
pub fn allow_sender(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [queue, pid, ..] = args(k, caller);
    done(k.allow_sender(caller, queue, pid))
}

/// `open_link(receiver, queue) -> link`.
pub fn open_link(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [receiver, queue, ..] = args(k, caller);
    k.open_link(caller, Pid(receiver), queue).map(|l| Next::Return(l.into()))
}

/// `close_link(link) -> 0`.
pub fn close_link(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [link, ..] = args(k, caller);
    done(k.close_link(caller, link))
}

/// `send(link; m0..m3) -> 0`.
#[inline(always)]
pub fn send(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [link, ..] = args(k, caller);
    let words = message_words(k, caller);
    done(k.send(caller, link, words))
}

/// `send_data(link, buf, len; m0..m3) -> 0`.
#[inline(always)]
pub fn send_data(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [link, buf, len, ..] = args(k, caller);
    let words = message_words(k, caller);
    done(k.send_data(caller, link, buf, len, words))
}

/// `receive_data(queue, buf, buf_len, flags) -> received`.
#[inline(always)]
pub fn receive_data(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [queue, buf, buf_len, flags, ..] = args(k, caller);
    if flags & !NONBLOCKING != 0 {
        return Err(Error::InvalidArgument);
    }
    let received = k.receive(caller, queue, buf, buf_len, flags & NONBLOCKING != 0)?;
    after_receive(k, caller, queue, received)
}

/// `test(queue) -> messages waiting`.
pub fn test(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [queue, ..] = args(k, caller);
    k.queue_len(caller, queue).map(|n| Next::Return(n as u64))
}

/// `arm(queue, on) -> 0`.
pub fn arm(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [queue, on, ..] = args(k, caller);
    if on > 1 {
        return Err(Error::InvalidArgument);
    }
    done(k.arm(caller, queue, on == 1))
}

/// `wait_armed() -> queue`.
pub fn wait_armed(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    Ok(match k.wait_armed(caller)? {
        Some(queue) => Next::Return(queue.into()),
        None => Next::AsIs,
    })
}

/// `call(link, send_buf, send_len, recv_buf, recv_len; m0..m3) -> reply`.
#[inline(always)]
pub fn call(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let frame = &k.proc(caller).frame;
    let (call_args, words) = (frame.as_call_args(), frame.message());
    k.call(caller, call_args, words)?;
    Ok(Next::AsIs)
}

/// `reply(handle, buf, len; m0..m3) -> 0`.
#[inline(always)]
pub fn reply(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [handle, buf, len, ..] = args(k, caller);
    let words = message_words(k, caller);
    done(k.reply(caller, handle, buf, len, words, false))
}

/// `reply_wait(handle, buf, len, queue, recv_buf, recv_len; m0..m3) -> received`.
#[inline(always)]
pub fn reply_wait(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let frame = &k.proc(caller).frame;
    let (reply_wait_args, words) = (frame.as_reply_wait_args(), frame.message());
    let received = k.reply_wait(caller, reply_wait_args, words)?;
    after_receive(k, caller, reply_wait_args.queue, received)
}

/// `forward_wait(handle, buf, len, queue | link << 32, recv_buf, recv_len; m0..m3) -> received`;
/// with queue `abi::msg::NO_RECEIVE`, forward only and return 0.
pub fn forward_wait(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let frame = &k.proc(caller).frame;
    let (forward_args, words) = (frame.as_reply_wait_args(), frame.message());
    let queue = forward_args.queue & 0xffff_ffff;
    match k.forward_wait(caller, forward_args, words)? {
        Some(received) => after_receive(k, caller, queue, received),
        None => Ok(Next::Return(0)),
    }
}

/// A message taken from `queue` frees a place in it: an interrupt that
/// found it full can be queued now.
#[inline(always)]
fn after_receive(k: &mut Kernel, caller: usize, queue: u64, received: Receive) -> Result<Next, Error> {
    if received == Receive::Taken {
        k.redeliver_pending_irqs(caller, queue);
    }
    Ok(Next::AsIs)
}

/// `lease_read(handle, offset, buf, len, flags) -> len`.
pub fn lease_read(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [handle, offset, buf, len, flags, _] = args(k, caller);
    k.lease_copy(caller, handle, offset, buf, len, flags, false).map(Next::Return)
}

/// `lease_write(handle, offset, buf, len, flags) -> len`.
pub fn lease_write(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [handle, offset, buf, len, flags, _] = args(k, caller);
    k.lease_copy(caller, handle, offset, buf, len, flags, true).map(Next::Return)
}

/// `lease_copy(src_handle, src_offset, dst_handle, dst_offset, len, flags) -> len`.
pub fn lease_copy(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [src, src_offset, dst, dst_offset, len, flags] = args(k, caller);
    k.lease_transfer(caller, src, src_offset, dst, dst_offset, len, flags).map(Next::Return)
}
