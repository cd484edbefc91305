//! The program's Linux signals: actions, the blocked mask, the pending set,
//! the alternate stack, and what the monitor is told so that signals from
//! other processes reach the program (Linux `kernel/signal.c`,
//! `arch/x86/kernel/signal.c`; signal(7)).
//!
//! Signals from other processes arrive at the monitor, which acts on a
//! signal for this UNIX process (the server) unless it is caught, in which
//! case it records it as pending (docs/unix.md "signals"). So the monitor's
//! caught set is kept equal to the signals that must not end the process
//! at once: those the program handles, and those it blocks whose default
//! action would end it (they wait, pending, until it unblocks them). A
//! signal the program ignores is ignored at the monitor too. The server
//! collects the monitor's pending set ([`Signals::collect`]) after a call
//! at most every [`CHECK_INTERVAL_NS`] and on every round of a blocking
//! call, so a signal reaches a program when it makes a call, as Linux
//! delivers on the way back to user mode; a program that makes no call
//! sees it at its next call.
//!
//! Bits: a Linux `sigset_t` has signal n at bit n−1 ([`bit`]); the
//! monitor's sets have it at bit n ([`to_monitor`]).
//!
//! What it is not: real-time signal queueing (a pending signal is one
//! bit), `siginfo` naming another sender (the monitor does not say who
//! sent), job-control stops (stop signals are ignored).

use alloc::vec::Vec;
use protocols::unix::{Errno, errno};
use runtime::unix;

/// Signals Linux numbers: 1 to 64.
pub const NSIG: u64 = 64;
pub const SIGKILL: u64 = 9;
pub const SIGSEGV: u64 = 11;
pub const SIGALRM: u64 = 14;
pub const SIGCHLD: u64 = 17;
pub const SIGCONT: u64 = 18;
pub const SIGSTOP: u64 = 19;
pub const SIGTSTP: u64 = 20;
pub const SIGTTIN: u64 = 21;
pub const SIGTTOU: u64 = 22;
pub const SIGURG: u64 = 23;
pub const SIGWINCH: u64 = 28;
/// The highest signal the monitor knows (`protocols::unix::signal::MAX`).
const MONITOR_MAX: u64 = protocols::unix::signal::MAX;

pub const SIG_DFL: u64 = 0;
pub const SIG_IGN: u64 = 1;
/// `sa_flags` (Linux `include/uapi/asm-generic/signal-defs.h`, x86).
pub const SA_ONSTACK: u64 = 0x0800_0000;
pub const SA_RESTART: u64 = 0x1000_0000;
pub const SA_NODEFER: u64 = 0x4000_0000;
pub const SA_RESETHAND: u64 = 0x8000_0000;
pub const SA_RESTORER: u64 = 0x0400_0000;
/// `sigaltstack` flags.
pub const SS_ONSTACK: u32 = 1;
pub const SS_DISABLE: u32 = 2;
/// Smallest alternate stack Linux accepts (x86 `MINSIGSTKSZ`).
pub const MIN_ALT_STACK_BYTES: u64 = 2048;

/// How often, at most, a call's return asks the monitor for pending
/// signals (one message); blocking calls ask on every round.
pub const CHECK_INTERVAL_NS: u64 = 10_000_000;

/// Signal `sig`'s bit in a Linux `sigset_t`.
pub const fn bit(sig: u64) -> u64 {
    1 << (sig - 1)
}

/// SIGKILL and SIGSTOP cannot be blocked, handled or ignored.
pub const UNBLOCKABLE: u64 = bit(SIGKILL) | bit(SIGSTOP);

/// A Linux set as the monitor's (signals above its highest dropped).
fn to_monitor(set: u64) -> u64 {
    let known = if MONITOR_MAX >= 63 { u64::MAX } else { (1u64 << MONITOR_MAX) - 1 };
    (set & known) << 1
}

/// The monitor's set as a Linux one.
fn from_monitor(set: u64) -> u64 {
    set >> 1
}

/// `struct kernel_sigaction` as the program passes it: handler, flags,
/// restorer, mask (32 bytes).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Action {
    pub handler: u64,
    pub flags: u64,
    pub restorer: u64,
    pub mask: u64,
}

impl Action {
    pub const BYTES: usize = 32;

    pub fn decode(b: &[u8]) -> Action {
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or_default());
        Action { handler: w(0), flags: w(1), restorer: w(2), mask: w(3) }
    }

    pub fn encode(&self) -> [u8; Action::BYTES] {
        let mut b = [0u8; Action::BYTES];
        for (i, v) in [self.handler, self.flags, self.restorer, self.mask].iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    }
}

/// What a signal does when it is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    Ignore,
    /// The default action ends the process (with or without a core).
    Terminate,
    Handler(Action),
}

/// The default action of `sig` (signal(7)): ignored for SIGCHLD, SIGURG,
/// SIGWINCH and SIGCONT; stops (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) are
/// ignored too, Ridgeback having no stopped processes; every other signal
/// ends the process.
fn default_ignored(sig: u64) -> bool {
    matches!(sig, SIGCHLD | SIGURG | SIGWINCH | SIGCONT | SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU)
}

/// The alternate signal stack (`stack_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AltStack {
    pub sp: u64,
    pub flags: u32,
    pub size: u64,
}

impl AltStack {
    pub fn contains(&self, rsp: u64) -> bool {
        self.flags & SS_DISABLE == 0 && rsp > self.sp && rsp <= self.sp.saturating_add(self.size)
    }
}

pub struct Signals {
    actions: Vec<Action>,
    /// Blocked signals (Linux bits).
    pub mask: u64,
    /// Signals waiting for delivery (Linux bits).
    pub pending: u64,
    /// The mask a handler's return restores when the handler interrupted
    /// `rt_sigsuspend` or `ppoll`, which replaced the mask while waiting.
    pub suspended_mask: Option<u64>,
    pub altstack: AltStack,
    /// What the monitor was last told it catches (its bits).
    monitor_caught: u64,
    clock: runtime::clock::Clock,
    last_check_ns: u64,
    /// When `alarm`'s (or `ITIMER_REAL`'s) SIGALRM is due (ns since
    /// boot), and the interval it is then due again after (0: once).
    pub alarm_at_ns: Option<u64>,
    pub alarm_interval_ns: u64,
}

impl Signals {
    pub fn new() -> Signals {
        Signals {
            actions: alloc::vec![Action::default(); NSIG as usize + 1],
            mask: 0,
            pending: 0,
            suspended_mask: None,
            altstack: AltStack { sp: 0, flags: SS_DISABLE, size: 0 },
            monitor_caught: 0,
            clock: runtime::clock::Clock::new(),
            last_check_ns: 0,
            alarm_at_ns: None,
            alarm_interval_ns: 0,
        }
    }

    pub fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    pub fn action(&self, sig: u64) -> Action {
        self.actions[sig as usize]
    }

    pub fn disposition(&self, sig: u64) -> Disposition {
        let a = self.actions[sig as usize];
        match a.handler {
            SIG_IGN => Disposition::Ignore,
            SIG_DFL if default_ignored(sig) => Disposition::Ignore,
            SIG_DFL => Disposition::Terminate,
            _ => Disposition::Handler(a),
        }
    }

    /// `rt_sigaction`'s change: the action, and what the monitor must do
    /// with the signal from now on.
    pub fn set_action(&mut self, sig: u64, a: Action) -> Result<(), Errno> {
        let was = self.actions[sig as usize];
        self.actions[sig as usize] = a;
        if a.handler == SIG_IGN {
            // POSIX: setting SIG_IGN discards a pending instance.
            self.pending &= !bit(sig);
        }
        if sig <= MONITOR_MAX && (a.handler == SIG_IGN || was.handler == SIG_IGN || a.handler == SIG_DFL) {
            // Ignoring happens at the monitor; so does undoing an ignore
            // the program may have inherited across exec.
            let _ = unix::signal_ignore(sig, a.handler == SIG_IGN);
            if a.handler == SIG_IGN {
                self.monitor_caught &= !(1 << sig);
            }
        }
        self.sync_monitor()
    }

    /// The monitor's caught set as this state wants it: handled signals,
    /// and blocked ones whose default action ends the process.
    fn wanted_caught(&self) -> u64 {
        let mut set = 0u64;
        for sig in 1..=NSIG.min(MONITOR_MAX) {
            if bit(sig) & UNBLOCKABLE != 0 {
                continue;
            }
            match self.disposition(sig) {
                Disposition::Handler(_) => set |= bit(sig),
                Disposition::Terminate if self.mask & bit(sig) != 0 => set |= bit(sig),
                // A default-ignored signal the program blocks still waits
                // as pending on Linux; here it is simply not acted on.
                _ => {}
            }
        }
        to_monitor(set)
    }

    /// Tell the monitor the caught set if it changed (one message), taking
    /// its pending signals with it.
    pub fn sync_monitor(&mut self) -> Result<(), Errno> {
        let want = self.wanted_caught();
        if want == self.monitor_caught {
            return Ok(());
        }
        let (_, pending) = unix::signal_catch_set(want)?;
        self.monitor_caught = want;
        self.pending |= from_monitor(pending);
        Ok(())
    }

    /// Can a signal from outside need the program while this server
    /// waits? If not, a blocking call may block at its server.
    pub fn interruptible(&self) -> bool {
        self.monitor_caught != 0 || self.alarm_at_ns.is_some() || self.pending & !self.mask != 0
    }

    /// Take the monitor's pending signals (`force`, or when the last look
    /// is older than [`CHECK_INTERVAL_NS`]), and an alarm that is due.
    pub fn collect(&mut self, force: bool) {
        let now = self.clock.now_ns();
        if let Some(at) = self.alarm_at_ns
            && now >= at
        {
            self.alarm_at_ns = match self.alarm_interval_ns {
                0 => None,
                every => Some(now.saturating_add(every)),
            };
            self.pending |= bit(SIGALRM);
        }
        if self.monitor_caught == 0 || (!force && now.saturating_sub(self.last_check_ns) < CHECK_INTERVAL_NS)
        {
            return;
        }
        self.last_check_ns = now;
        self.pending |= from_monitor(unix::signal_pending());
    }

    /// Wait at the monitor until a caught signal arrives (one message,
    /// answered late): possible when only the monitor can bring one, so
    /// not with an alarm set. False if this cannot wait so.
    pub fn wait_at_monitor(&mut self) -> bool {
        if self.monitor_caught == 0 || self.alarm_at_ns.is_some() {
            return false;
        }
        match unix::signal_wait() {
            Ok(bits) => {
                self.pending |= from_monitor(bits);
                true
            }
            Err(_) => false,
        }
    }

    /// Drop pending, unblocked signals that are ignored; whether one is
    /// left that the program must see (a handler, or its end).
    pub fn needs_program(&mut self) -> bool {
        let mut due = self.pending & !self.mask;
        while due != 0 {
            let sig = due.trailing_zeros() as u64 + 1;
            due &= !bit(sig);
            if self.disposition(sig) == Disposition::Ignore {
                self.pending &= !bit(sig);
            }
        }
        self.pending & !self.mask != 0
    }

    /// The lowest pending, unblocked signal, taken from the pending set.
    pub fn take_next(&mut self) -> Option<u64> {
        let due = self.pending & !self.mask;
        if due == 0 {
            return None;
        }
        let sig = due.trailing_zeros() as u64 + 1;
        self.pending &= !bit(sig);
        Some(sig)
    }

    /// A handler for `sig` starts: the mask it runs with (Linux: the old
    /// one, its `sa_mask`, and the signal itself unless `SA_NODEFER`),
    /// `SA_RESETHAND` applied. Returns the mask to restore afterwards.
    pub fn enter_handler(&mut self, sig: u64, a: &Action) -> u64 {
        let old = self.suspended_mask.take().unwrap_or(self.mask);
        let mut mask = old | a.mask;
        if a.flags & SA_NODEFER == 0 {
            mask |= bit(sig);
        }
        self.mask = mask & !UNBLOCKABLE;
        if a.flags & SA_RESETHAND != 0 {
            self.actions[sig as usize] = Action::default();
        }
        old
    }

    /// `fork`: the child has no pending signals and its own clock check.
    pub fn forked(&mut self) {
        self.pending = 0;
        self.alarm_at_ns = None;
        self.alarm_interval_ns = 0;
    }

    /// The default action `Terminate` of `sig`: the monitor ends this
    /// process with it (so the parent's `wait` sees the signal). It must
    /// not be caught there first.
    pub fn terminate(&mut self, sig: u64) -> ! {
        let mut left = self.monitor_caught & !(1 << sig);
        if sig > MONITOR_MAX {
            left = self.monitor_caught;
        }
        let _ = unix::signal_catch_set(left);
        if sig <= MONITOR_MAX {
            // An ignore inherited across exec stays at the monitor while
            // the program's action is the default: undo it first.
            let _ = unix::signal_ignore(sig, false);
            let _ = unix::kill(unix::getpid() as i64, sig);
        }
        // Signals the monitor does not know (real-time ones) end the
        // process with the shell's status for them.
        unix::exit(128 + sig as i32)
    }
}

/// A signal number from the program: 1 to 64.
pub fn check(sig: u64) -> Result<u64, Errno> {
    if sig == 0 || sig > NSIG { Err(errno::EINVAL) } else { Ok(sig) }
}
