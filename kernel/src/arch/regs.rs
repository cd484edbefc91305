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
//! - A foreign process's `syscall` (`abi::foreign`): m0..m3 of the message
//!   are its `rax`, `rdi`, `rsi`, `rdx`; all its registers are an
//!   `abi::foreign::Regs`.
//!
//! Every view is `#[inline(always)]`: the call fast path reads and writes
//! registers through them at no cost (the icount benchmark checks).

use super::trap::TrapFrame;
use abi::foreign::{Regs, USER_RFLAGS};
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

/// Marks a frame whose every register a foreign process's server has set
/// (`foreign_resume` with registers): not a `syscall` frame, so the exit
/// leaves it with `iretq`, which restores `rcx` and `r11` too.
const FOREIGN_SET_VECTOR: u64 = 0x101;

impl TrapFrame {
    /// A foreign process's `syscall` as its server's message: rax (the
    /// call number), rdi, rsi, rdx.
    pub fn foreign_call_words(&self) -> Message {
        [self.rax, self.rdi, self.rsi, self.rdx]
    }

    /// Every register of a foreign process (`fs_base` is kept outside the
    /// frame; 0 here). For a frame saved by `syscall`, `rcx` and `r11` are
    /// what the process will see on its return: its `rip` and `rflags`.
    pub fn foreign_regs(&self) -> Regs {
        let is_syscall = self.vector == super::trap::SYSCALL_VECTOR;
        Regs {
            rax: self.rax,
            rbx: self.rbx,
            rcx: if is_syscall { self.rip } else { self.rcx },
            rdx: self.rdx,
            rsi: self.rsi,
            rdi: self.rdi,
            rbp: self.rbp,
            rsp: self.rsp,
            r8: self.r8,
            r9: self.r9,
            r10: self.r10,
            r11: if is_syscall { self.rflags } else { self.r11 },
            r12: self.r12,
            r13: self.r13,
            r14: self.r14,
            r15: self.r15,
            rip: self.rip,
            rflags: self.rflags,
            fs_base: 0,
        }
    }

    /// Load every register of `r` but `fs_base` (kept outside the frame).
    /// Only the flags of `USER_RFLAGS` come from `r`; interrupts stay on
    /// and the selectors stay the user ones, so the frame cannot reach
    /// ring 0; a bad `rip` or `rsp` faults in user mode, after `iretq`.
    pub fn set_foreign_regs(&mut self, r: &Regs) {
        self.rax = r.rax;
        self.rbx = r.rbx;
        self.rcx = r.rcx;
        self.rdx = r.rdx;
        self.rsi = r.rsi;
        self.rdi = r.rdi;
        self.rbp = r.rbp;
        self.rsp = r.rsp;
        self.r8 = r.r8;
        self.r9 = r.r9;
        self.r10 = r.r10;
        self.r11 = r.r11;
        self.r12 = r.r12;
        self.r13 = r.r13;
        self.r14 = r.r14;
        self.r15 = r.r15;
        self.rip = r.rip;
        self.rflags = (r.rflags & USER_RFLAGS) | super::trap::RFLAGS_USER;
        self.vector = FOREIGN_SET_VECTOR;
    }

    /// A foreign call's result: `rax` alone (every other register is
    /// preserved, as Linux promises; `sysretq` sets `rcx` and `r11`).
    pub fn set_foreign_result(&mut self, rax: u64) {
        self.rax = rax;
    }
}
