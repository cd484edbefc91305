//! The signal calls (`rt_sigaction`, `rt_sigprocmask`, `rt_sigsuspend`,
//! `pause`, `sigaltstack`, `kill` of oneself, `rt_sigreturn`, `alarm`),
//! delivery on a Linux signal frame, and the waits of blocking calls that
//! a signal interrupts (state in [`crate::signals`]).
//!
//! The frame is Linux x86-64's `rt_sigframe` (`arch/x86/kernel/signal.c`,
//! `get_sigframe`/`x64_setup_rt_frame`): below the interrupted stack
//! pointer's red zone (or at the top of the alternate stack, for
//! `SA_ONSTACK`), the 512-byte `fxsave` image of the program's x87/SSE
//! registers, 64-byte aligned (`uc_mcontext.fpstate` points at it); under
//! it the restorer's address (the handler's return address), the
//! `ucontext` (every register, the mask to restore) and the `siginfo`.
//! The handler starts with the registers Linux gives it (rdi = signal,
//! rsi = `&siginfo`, rdx = `&ucontext`, rax = 0, DF clear) and a fresh
//! x87/SSE state; `rt_sigreturn` puts back the registers, the x87/SSE
//! state and the mask from the frame.
//!
//! Blocking calls (`wait4`, `nanosleep`, `read` of a pipe or terminal,
//! `poll`, `rt_sigsuspend`) wait at their server as before when no signal
//! could need the program; otherwise they wait in rounds
//! ([`Linux::block_on`]): try the call without blocking, look for
//! signals, sleep a little longer each round (from [`FIRST_WAIT_NS`] to
//! [`LONGEST_WAIT_NS`]). A signal that needs the program ends the wait
//! with `EINTR`, or restarts the call after the handler when it has
//! `SA_RESTART` and the call is one Linux restarts. `rt_sigsuspend` and
//! `pause`, which wait for nothing but a signal, wait at the monitor
//! instead (`OP_SIGNAL_WAIT`, one message per signal) unless an alarm is
//! set, which only this server knows.

use crate::calls::{ALREADY_RESUMED, Linux, Result};
use crate::mem;
use crate::signals::{
    self, Action, Disposition, MIN_ALT_STACK_BYTES, SA_ONSTACK, SA_RESTART, SA_RESTORER, SS_DISABLE,
    SS_ONSTACK, UNBLOCKABLE, bit,
};
use abi::foreign::Regs;
use alloc::vec;
use protocols::unix::errno;
use runtime::{sys, unix};

/// The first and the longest sleep between rounds of a blocking call that
/// a signal may interrupt.
pub const FIRST_WAIT_NS: u64 = 1_000_000;
pub const LONGEST_WAIT_NS: u64 = 20_000_000;
/// A wait nothing can interrupt sleeps this long between rounds (a signal
/// that ends the program ends this server too, at the monitor).
const IDLE_WAIT_NS: u64 = 1_000_000_000;

/// Bytes below the interrupted stack pointer a signal frame leaves alone
/// (the System V red zone).
const RED_ZONE_BYTES: u64 = 128;
/// `struct ucontext` (x86-64): flags, link, stack (24 bytes), the
/// machine context (`struct sigcontext`, 256 bytes), the signal mask.
const UCONTEXT_BYTES: u64 = 8 + 8 + 24 + 256 + 8;
/// Where the stack, machine context and mask start in the `ucontext`.
const STACK_AT: usize = 16;
const MCONTEXT_AT: usize = 40;
const SIGMASK_AT: usize = MCONTEXT_AT + 256;
/// In `struct sigcontext`: the segment word (cs, gs, fs, ss) and the
/// pointer to the x87/SSE state.
const SEGMENTS_AT: usize = 18 * 8;
const FPSTATE_AT: usize = 23 * 8;
/// The restorer's address, the `ucontext`, the `siginfo` (128 bytes).
const SIGFRAME_BYTES: u64 = 8 + UCONTEXT_BYTES + 128;
/// The `fxsave` image (`struct _fpstate_64`), aligned as Linux aligns it.
const FPSTATE_BYTES: u64 = abi::foreign::FPU_BYTES as u64;
const FPSTATE_ALIGN: u64 = 64;
/// `uc_flags`: the frame has ss in sigcontext, restored strictly (what
/// Linux x86-64 sets).
const UC_SIGCONTEXT_SS: u64 = 2;
const UC_STRICT_RESTORE_SS: u64 = 4;
/// User code and stack selectors as Linux programs see them.
const USER_CS: u64 = 0x33;
const USER_SS: u64 = 0x2b;
/// `si_code`: sent by `kill` (another process, or the monitor), or by
/// `tkill`/`raise` (the program itself).
const SI_USER: i32 = 0;
const SI_TKILL: i32 = -6;
/// rflags: the direction and trap flags a handler starts without.
const RFLAGS_DF: u64 = 0x400;
const RFLAGS_TF: u64 = 0x100;
/// A `syscall` instruction's length: a restarted call resumes before it.
const SYSCALL_BYTES: u64 = 2;
/// `rt_sigprocmask` `how`.
const SIG_BLOCK: u64 = 0;
const SIG_UNBLOCK: u64 = 1;
const SIG_SETMASK: u64 = 2;
/// The size of the kernel's `sigset_t`, which the `rt_` calls must pass.
const SIGSET_BYTES: u64 = 8;

/// `struct sigcontext`'s first words, in order.
fn sigcontext_words(r: &Regs) -> [u64; 18] {
    [
        r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rdi, r.rsi, r.rbp, r.rbx, r.rdx, r.rax,
        r.rcx, r.rsp, r.rip, r.rflags,
    ]
}

fn word(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

impl Linux {
    /// `rt_sigaction(sig, act, oldact, sigsetsize)`.
    pub fn rt_sigaction(&mut self, sig: u64, act: u64, old: u64) -> Result<u64> {
        // Linux reads the new action before it checks the signal.
        let new =
            if act != 0 { Some(Action::decode(&mem::read(self.pid, act, Action::BYTES)?)) } else { None };
        let sig = signals::check(sig)?;
        if new.is_some() && bit(sig) & UNBLOCKABLE != 0 {
            return Err(errno::EINVAL);
        }
        if old != 0 {
            mem::write(self.pid, old, &self.sig.action(sig).encode())?;
        }
        if let Some(mut a) = new {
            a.mask &= !UNBLOCKABLE;
            self.sig.set_action(sig, a)?;
        }
        Ok(0)
    }

    /// `rt_sigprocmask(how, set, oldset, sigsetsize)`.
    pub fn rt_sigprocmask(&mut self, how: u64, set: u64, old: u64, size: u64) -> Result<u64> {
        if size != SIGSET_BYTES {
            return Err(errno::EINVAL);
        }
        let new = if set != 0 { Some(word(&mem::read(self.pid, set, 8)?, 0)) } else { None };
        let was = self.sig.mask;
        let mask = match (how, new) {
            (_, None) => was,
            (SIG_BLOCK, Some(s)) => was | s,
            (SIG_UNBLOCK, Some(s)) => was & !s,
            (SIG_SETMASK, Some(s)) => s,
            _ => return Err(errno::EINVAL),
        };
        if old != 0 {
            mem::write(self.pid, old, &was.to_le_bytes())?;
        }
        self.sig.mask = mask & !UNBLOCKABLE;
        self.sig.sync_monitor()?;
        if was & !self.sig.mask != 0 {
            // Unblocked: what waited at the monitor is due now.
            self.sig.collect(true);
        }
        Ok(0)
    }

    /// `rt_sigpending(set, sigsetsize)`.
    pub fn rt_sigpending(&mut self, set: u64, size: u64) -> Result<u64> {
        if size > SIGSET_BYTES {
            return Err(errno::EINVAL);
        }
        self.sig.collect(true);
        mem::write(self.pid, set, &(self.sig.pending & self.sig.mask).to_le_bytes())?;
        Ok(0)
    }

    /// `rt_sigsuspend(mask, sigsetsize)` and `pause` (`mask` None: the
    /// current one): wait with `mask` until a handler has run; always
    /// `EINTR`. The handler's return restores the mask of before.
    pub fn sigsuspend(&mut self, mask: Option<(u64, u64)>) -> Result<u64> {
        if let Some((at, size)) = mask {
            if size != SIGSET_BYTES {
                return Err(errno::EINVAL);
            }
            let m = word(&mem::read(self.pid, at, 8)?, 0);
            self.sig.suspended_mask = Some(self.sig.mask);
            self.sig.mask = m & !UNBLOCKABLE;
            self.sig.sync_monitor()?;
        }
        // One message per signal that arrives, when the monitor can keep
        // the wait (no alarm); else rounds.
        loop {
            self.sig.collect(true);
            if self.sig.needs_program() {
                return Err(errno::EINTR);
            }
            if !self.sig.wait_at_monitor() {
                break;
            }
        }
        self.block_on(None, |_| Ok(None::<u64>))?;
        Err(errno::EINTR)
    }

    /// `sigaltstack(ss, old_ss)`.
    pub fn sigaltstack(&mut self, ss: u64, old: u64) -> Result<u64> {
        let rsp = sys::foreign_regs(self.pid).map_err(|_| errno::EIO)?.rsp;
        let current = self.sig.altstack;
        let on_it = current.contains(rsp);
        let new = if ss != 0 { Some(mem::read(self.pid, ss, 24)?) } else { None };
        if old != 0 {
            let mut b = [0u8; 24];
            b[..8].copy_from_slice(&current.sp.to_le_bytes());
            let flags = if on_it { SS_ONSTACK } else { current.flags & SS_DISABLE };
            b[8..12].copy_from_slice(&flags.to_le_bytes());
            b[16..].copy_from_slice(&current.size.to_le_bytes());
            mem::write(self.pid, old, &b)?;
        }
        if let Some(b) = new {
            if on_it {
                return Err(errno::EPERM);
            }
            // SS_AUTODISARM (bit 31) is accepted and not acted on.
            let flags = u32::from_le_bytes(b[8..12].try_into().unwrap_or_default()) & !(1 << 31);
            let (sp, size) = (word(&b, 0), word(&b, 16));
            match flags {
                SS_DISABLE => self.sig.altstack = signals::AltStack { sp: 0, flags: SS_DISABLE, size: 0 },
                0 | SS_ONSTACK if size < MIN_ALT_STACK_BYTES => return Err(errno::ENOMEM),
                0 | SS_ONSTACK => self.sig.altstack = signals::AltStack { sp, flags: 0, size },
                _ => return Err(errno::EINVAL),
            }
        }
        Ok(0)
    }

    /// A signal the program sends itself (`kill(getpid())`, `tkill`,
    /// `raise`): pending now, delivered as the call returns (Linux
    /// delivers it before `kill` returns, unless it is blocked).
    pub fn raise(&mut self, sig: u64) -> Result<u64> {
        if sig == 0 {
            return Ok(0);
        }
        let sig = signals::check(sig)?;
        self.sig.pending |= bit(sig);
        self.raised_by_self |= bit(sig);
        Ok(0)
    }

    /// `alarm(seconds)`: SIGALRM after that long (0 cancels); the seconds
    /// the previous alarm had left, rounded up.
    pub fn alarm(&mut self, seconds: u64) -> Result<u64> {
        let (left_ns, _) = self.itimer_now();
        self.sig.alarm_interval_ns = 0;
        let now = self.sig.now_ns();
        self.sig.alarm_at_ns =
            (seconds != 0).then(|| now.saturating_add(seconds.saturating_mul(1_000_000_000)));
        Ok(if left_ns == 0 { 0 } else { left_ns.div_ceil(1_000_000_000).max(1) })
    }

    /// The real-time timer: (time left, interval), in ns.
    fn itimer_now(&self) -> (u64, u64) {
        let now = self.sig.now_ns();
        (self.sig.alarm_at_ns.map_or(0, |at| at.saturating_sub(now).max(1)), self.sig.alarm_interval_ns)
    }

    /// `getitimer(which, curr)` and `setitimer(which, new, old)` for
    /// `ITIMER_REAL` (the one `alarm` uses; musl's `alarm` is
    /// `setitimer`). `struct itimerval`: interval, then value, each a
    /// `timeval` (seconds, microseconds). A NULL `new` disarms, as Linux
    /// has long allowed.
    pub fn itimer(&mut self, which: u64, new: Option<u64>, old: u64) -> Result<u64> {
        const ITIMER_REAL: u64 = 0;
        if which != ITIMER_REAL {
            // ITIMER_VIRTUAL and ITIMER_PROF count CPU time, which this
            // server does not see (docs/linux-abi.md).
            return Err(errno::EINVAL);
        }
        let wanted = match new {
            Some(0) | None => None,
            Some(at) => {
                let b = mem::read(self.pid, at, 32)?;
                let tv = |i: usize| -> Result<u64> {
                    let (s, us) = (word(&b, i), word(&b, i + 8));
                    if (s as i64) < 0 || us >= 1_000_000 {
                        return Err(errno::EINVAL);
                    }
                    Ok(s.saturating_mul(1_000_000_000).saturating_add(us * 1000))
                };
                Some((tv(0)?, tv(16)?))
            }
        };
        if old != 0 {
            let (left, every) = self.itimer_now();
            let mut b = [0u8; 32];
            for (i, ns) in [every, left].iter().enumerate() {
                b[i * 16..i * 16 + 8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
                b[i * 16 + 8..i * 16 + 16].copy_from_slice(&((ns % 1_000_000_000) / 1000).to_le_bytes());
            }
            mem::write(self.pid, old, &b)?;
        }
        if new.is_some() {
            let (every, value) = wanted.unwrap_or((0, 0));
            let now = self.sig.now_ns();
            self.sig.alarm_at_ns = (value != 0).then(|| now.saturating_add(value));
            self.sig.alarm_interval_ns = if value != 0 { every } else { 0 };
        }
        Ok(0)
    }

    /// Wait until `ready` has an answer (`Ok(Some)`), the deadline (ns
    /// since boot) passes (`Ok(None)`), or a signal needs the program
    /// (`EINTR`). With nothing that could interrupt, `ready` is still
    /// asked in rounds, a long sleep apart, so callers with a server that
    /// can block for them use that instead (see the module doc).
    pub fn block_on<T>(
        &mut self,
        deadline_ns: Option<u64>,
        mut ready: impl FnMut(&mut Linux) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        let mut wait_ns = FIRST_WAIT_NS;
        loop {
            // Signals first: one sent before what the call waits for
            // happened is seen first, as on Linux, where `kill` makes it
            // pending before it returns.
            self.sig.collect(true);
            if self.sig.needs_program() {
                return Err(errno::EINTR);
            }
            if let Some(v) = ready(self)? {
                return Ok(Some(v));
            }
            let now = self.sig.now_ns();
            if deadline_ns.is_some_and(|d| now >= d) {
                return Ok(None);
            }
            let mut nap = if self.sig.interruptible() { wait_ns } else { IDLE_WAIT_NS };
            if let Some(d) = deadline_ns {
                nap = nap.min(d - now);
            }
            if let Some(a) = self.sig.alarm_at_ns {
                nap = nap.min(a.saturating_sub(now).max(1));
            }
            sys::sleep_ns(nap);
            wait_ns = (wait_ns * 2).min(LONGEST_WAIT_NS);
        }
    }

    /// Resume the program at `regs`, first delivering a pending signal
    /// that needs it: a handler runs on a new frame above `regs` (the
    /// others wait for the next call's return, usually `rt_sigreturn`);
    /// a default action that ends the process ends it here.
    /// `interrupted`: the call `regs` returns from, if Linux would restart
    /// it after a `SA_RESTART` handler.
    pub fn resume_regs(&mut self, mut regs: Regs, interrupted: Option<u64>) {
        while let Some(sig) = self.sig.take_next() {
            match self.sig.disposition(sig) {
                Disposition::Ignore => continue,
                Disposition::Terminate => self.sig.terminate(sig),
                Disposition::Handler(a) => {
                    if a.flags & SA_RESTORER == 0 {
                        // Nowhere to return to: Linux x86-64 needs the
                        // restorer, and the return would fault.
                        self.sig.terminate(signals::SIGSEGV);
                    }
                    let mut saved = regs;
                    if let Some(nr) = interrupted
                        && a.flags & SA_RESTART != 0
                        && regs.rax == (errno::EINTR.code() as i64).wrapping_neg() as u64
                    {
                        saved.rax = nr;
                        saved.rip = saved.rip.wrapping_sub(SYSCALL_BYTES);
                    }
                    match self.push_frame(sig, &a, &saved) {
                        Ok(r) => {
                            regs = r;
                            // The handler's mask (and SA_RESETHAND) may
                            // change what the monitor must catch.
                            let _ = self.sig.sync_monitor();
                        }
                        // A frame that cannot be written: Linux forces
                        // SIGSEGV.
                        Err(_) => self.sig.terminate(signals::SIGSEGV),
                    }
                    break;
                }
            }
        }
        if let Some(m) = self.sig.suspended_mask.take() {
            // `rt_sigsuspend` ended without a handler: its mask goes.
            self.sig.mask = m;
            let _ = self.sig.sync_monitor();
        }
        if sys::foreign_resume_regs(self.pid, &regs).is_err() {
            // The program is gone; its end arrives as a message.
        }
    }

    /// Write the `rt_sigframe` for `sig` above `regs` and return the
    /// registers that start its handler.
    fn push_frame(&mut self, sig: u64, a: &Action, regs: &Regs) -> Result<Regs> {
        let alt = self.sig.altstack;
        let use_alt = a.flags & SA_ONSTACK != 0 && alt.flags & SS_DISABLE == 0 && !alt.contains(regs.rsp);
        let top = if use_alt { alt.sp.wrapping_add(alt.size) } else { regs.rsp.wrapping_sub(RED_ZONE_BYTES) };
        let fp_at = top.wrapping_sub(FPSTATE_BYTES) & !(FPSTATE_ALIGN - 1);
        let frame = (fp_at.wrapping_sub(SIGFRAME_BYTES) & !15).wrapping_sub(8);
        let uc = frame + 8;
        let info = uc + UCONTEXT_BYTES;
        let fpu = sys::foreign_fpu(self.pid).map_err(|_| errno::EFAULT)?;
        let old_mask = self.sig.enter_handler(sig, a);

        let mut b = vec![0u8; SIGFRAME_BYTES as usize];
        let put = |b: &mut [u8], at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        put(&mut b, 0, a.restorer);
        let u = 8;
        put(&mut b, u, UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS);
        put(&mut b, u + STACK_AT, alt.sp);
        let ss_flags = if alt.contains(regs.rsp) { SS_ONSTACK } else { alt.flags & SS_DISABLE };
        b[u + STACK_AT + 8..u + STACK_AT + 12].copy_from_slice(&ss_flags.to_le_bytes());
        put(&mut b, u + STACK_AT + 16, alt.size);
        for (i, v) in sigcontext_words(regs).iter().enumerate() {
            put(&mut b, u + MCONTEXT_AT + i * 8, *v);
        }
        // cs, gs, fs, ss (16 bits each).
        put(&mut b, u + MCONTEXT_AT + SEGMENTS_AT, USER_CS | USER_SS << 48);
        put(&mut b, u + MCONTEXT_AT + FPSTATE_AT, fp_at);
        put(&mut b, u + SIGMASK_AT, old_mask);
        let si = 8 + UCONTEXT_BYTES as usize;
        let by_self = self.raised_by_self & bit(sig) != 0;
        self.raised_by_self &= !bit(sig);
        b[si..si + 4].copy_from_slice(&(sig as u32).to_le_bytes());
        let code = if by_self { SI_TKILL } else { SI_USER };
        b[si + 8..si + 12].copy_from_slice(&code.to_le_bytes());
        if by_self {
            // The sender is known only when it is the program itself.
            b[si + 16..si + 20].copy_from_slice(&(unix::getpid() as u32).to_le_bytes());
            b[si + 20..si + 24].copy_from_slice(&unix::getuid().to_le_bytes());
        }
        mem::write(self.pid, fp_at, &fpu)?;
        mem::write(self.pid, frame, &b)?;
        // The handler starts with a fresh x87/SSE state, as on Linux.
        sys::foreign_set_fpu(self.pid, &abi::foreign::initial_fpu()).map_err(|_| errno::EFAULT)?;
        let mut run = *regs;
        run.rip = a.handler;
        run.rsp = frame;
        run.rdi = sig;
        run.rsi = info;
        run.rdx = uc;
        run.rax = 0;
        run.rflags &= !(RFLAGS_DF | RFLAGS_TF);
        Ok(run)
    }

    /// `rt_sigreturn`: the registers, x87/SSE state and mask saved in the
    /// `ucontext` at the stack pointer (the handler's `ret` popped the
    /// restorer's address). A frame that cannot be read or restored ends
    /// the program with SIGSEGV, as on Linux.
    pub fn sigreturn(&mut self) -> Result<u64> {
        let regs = sys::foreign_regs(self.pid).map_err(|_| errno::EIO)?;
        let Ok(raw) = mem::read(self.pid, regs.rsp, UCONTEXT_BYTES as usize) else {
            self.sig.terminate(signals::SIGSEGV)
        };
        let m = |i: usize| word(&raw, MCONTEXT_AT + i * 8);
        let back = Regs {
            r8: m(0),
            r9: m(1),
            r10: m(2),
            r11: m(3),
            r12: m(4),
            r13: m(5),
            r14: m(6),
            r15: m(7),
            rdi: m(8),
            rsi: m(9),
            rbp: m(10),
            rbx: m(11),
            rdx: m(12),
            rax: m(13),
            rcx: m(14),
            rsp: m(15),
            rip: m(16),
            rflags: m(17),
            fs_base: regs.fs_base,
        };
        let fp_at = word(&raw, MCONTEXT_AT + FPSTATE_AT);
        if fp_at != 0 {
            let Ok(fpu) = mem::read(self.pid, fp_at, FPSTATE_BYTES as usize) else {
                self.sig.terminate(signals::SIGSEGV)
            };
            // The kernel keeps MXCSR's reserved bits clear itself.
            if sys::foreign_set_fpu(self.pid, &fpu).is_err() {
                self.sig.terminate(signals::SIGSEGV);
            }
        }
        self.sig.mask = word(&raw, SIGMASK_AT) & !UNBLOCKABLE;
        let _ = self.sig.sync_monitor();
        self.sig.collect(true);
        self.resume_regs(back, None);
        Err(ALREADY_RESUMED)
    }
}
