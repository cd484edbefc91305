//! The kernel-call register convention, written once: typed views of a
//! saved [`TrapFrame`] (Hubris's `as_send_args()`/`set_recv_result()` in
//! `task.rs`). The convention itself is `abi`'s (its crate doc and
//! `abi::msg`); this file binds it to x86-64 registers, and no other code
//! outside the entry and exit paths names a register.
//!
//! - A call: `rax` = the number; arguments in `rdi`, `rsi`, `rdx`, `r10`,
//!   `r8`, `r9`; the message registers `r12`..`r15` (m0..m3).
//! - Its result: `rax` = a value or a negated [`Error`]; `rdx` = a second
//!   value where a call has one.
//! - A received message: `rax` = data bytes, `rdx` = the sender, `rsi` =
//!   the [`Kind`], `r10` = the reply handle of a call, m0..m3 = the message.
//! - A program's first instruction: `rdi` = its argument page, `rsi` = the
//!   arguments' length.
//!
//! Every view is `#[inline(always)]`: the call fast path reads and writes
//! registers through them at no cost (the icount benchmark checks).

use super::trap::TrapFrame;
use abi::msg::{Kind, Message};
use abi::{Error, Pid};

/// The arguments of `call(link, send_buf, send_len, recv_buf, recv_len)`.
#[derive(Clone, Copy, Debug)]
pub struct CallArgs {
    pub link: u64,
    pub send_buf: u64,
    pub send_len: u64,
    pub recv_buf: u64,
    pub recv_len: u64,
}

/// The arguments of `reply_wait(handle, reply_buf, reply_len, queue,
/// recv_buf, recv_len)`.
#[derive(Clone, Copy, Debug)]
pub struct ReplyWaitArgs {
    pub handle: u64,
    pub reply_buf: u64,
    pub reply_len: u64,
    pub queue: u64,
    pub recv_buf: u64,
    pub recv_len: u64,
}

/// A message as a receiver's registers get it.
#[derive(Clone, Copy, Debug)]
pub struct Received {
    /// Bytes of data copied into the receive buffer.
    pub len_bytes: u64,
    pub sender: Pid,
    pub kind: Kind,
    /// The reply handle when `kind` is [`Kind::Call`], else 0.
    pub reply_handle: u64,
    pub message: Message,
}

impl TrapFrame {
    /// The kernel-call number.
    #[inline(always)]
    pub fn call_number(&self) -> u64 {
        self.rax
    }

    /// The six argument registers, in the convention's order.
    #[inline(always)]
    pub fn call_args(&self) -> [u64; 6] {
        [self.rdi, self.rsi, self.rdx, self.r10, self.r8, self.r9]
    }

    #[inline(always)]
    pub fn as_call_args(&self) -> CallArgs {
        CallArgs {
            link: self.rdi,
            send_buf: self.rsi,
            send_len: self.rdx,
            recv_buf: self.r10,
            recv_len: self.r8,
        }
    }

    #[inline(always)]
    pub fn as_reply_wait_args(&self) -> ReplyWaitArgs {
        ReplyWaitArgs {
            handle: self.rdi,
            reply_buf: self.rsi,
            reply_len: self.rdx,
            queue: self.r10,
            recv_buf: self.r8,
            recv_len: self.r9,
        }
    }

    /// The message registers m0..m3.
    #[inline(always)]
    pub fn message(&self) -> Message {
        [self.r12, self.r13, self.r14, self.r15]
    }

    #[inline(always)]
    pub fn set_message(&mut self, message: Message) {
        [self.r12, self.r13, self.r14, self.r15] = message;
    }

    /// The call's result: a value, or the negated error.
    #[inline(always)]
    pub fn set_result(&mut self, result: Result<u64, Error>) {
        self.rax = match result {
            Ok(value) => value,
            Err(e) => e.to_return(),
        };
    }

    /// The call's second result (`wait`'s status, `module_info`'s name
    /// length, the bytes a too-small buffer needed, ...).
    #[inline(always)]
    pub fn set_second_result(&mut self, value: u64) {
        self.rdx = value;
    }

    /// Complete a receive: the call returns `len_bytes` and the message.
    #[inline(always)]
    pub fn set_received(&mut self, r: Received) {
        self.rax = r.len_bytes;
        self.rdx = r.sender.0;
        self.rsi = r.kind as u64;
        self.r10 = r.reply_handle;
        self.set_message(r.message);
    }

    /// A program's start: where its arguments are.
    pub fn set_start_args(&mut self, args_addr: u64, args_len: u64) {
        self.rdi = args_addr;
        self.rsi = args_len;
    }
}
