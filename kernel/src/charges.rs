//! Charges and priority ceilings: what a process that another process
//! built for itself (a UNIX process) may make and ask for with the
//! kernel's own calls.
//!
//! The kernel knows no users (Ridge OS §3: policy lives in the servers);
//! the monitor counts UNIX processes (`RLIMIT_NPROC`) and makes each with
//! `proc_create`/`proc_fork`. A process it built could still make
//! processes of its own with `spawn`, `proc_create`, `proc_fork` or
//! `foreign_fork`, which the monitor never sees, and give itself or them
//! the highest priority. Two rules close that (docs/reliability.md,
//! "Users and limits"):
//!
//! - **Charges.** A process built by `proc_create`, `proc_fork` or
//!   `foreign_fork` for a maker that is charged to nobody (the monitor,
//!   a server, init) is its own *account*; everything it or its charged
//!   processes make is charged to that account. At most
//!   `MAX_CHARGED_PROCESSES` are charged to one account at once (the
//!   call fails with `OutOfResources`), and they end when the account's
//!   process ends, as a POSIX thread ends with its process, so none
//!   outlives what the monitor counted. Processes spawned by init, the
//!   servers and their helpers are charged to nobody.
//! - **Priority ceilings.** Each process has a ceiling, the highest
//!   priority it may give itself (`set_priority`) or a process it makes
//!   (`spawn`): init's is `MAX_PRIORITY`; a spawned process inherits its
//!   spawner's; a built process's is the priority it was built with (a
//!   forked copy keeps its original's). Lowering is free and raising
//!   back up to the ceiling too, as Linux's `nice` within
//!   `RLIMIT_NICE`; a parent may raise a child up to its own ceiling,
//!   which then becomes the child's (how the monitor lets root raise a
//!   UNIX process: `monitor::OP_SET_PRIORITY`).
//!
//! What it is not: a user model. The monitor decides who may ask it to
//! raise a priority; the kernel only keeps what a process was given.
//!
//! Invariant: a process's base priority never exceeds its ceiling.

use crate::process::State;
use crate::state::Kernel;
use abi::{Error, Pid};
use kernel_core::limits::MAX_CHARGED_PROCESSES;

impl Kernel {
    /// May the process in `slot` make one more process? Its account's
    /// charged processes must number fewer than `MAX_CHARGED_PROCESSES`.
    pub fn check_may_make(&self, slot: usize) -> Result<(), Error> {
        let Some(account) = self.proc(slot).account else { return Ok(()) };
        let charged = self
            .slots()
            .filter(|&s| {
                let p = self.proc(s);
                p.state != State::Free && p.account == Some(account) && self.pid_of(s) != account
            })
            .count();
        if charged >= MAX_CHARGED_PROCESSES { Err(Error::OutOfResources) } else { Ok(()) }
    }

    /// Record the account and ceiling of `child`, just made by `maker`
    /// (none: init, made by the kernel). `built`: made by `proc_create`
    /// (with the ceiling it starts at) or by `proc_fork`/`foreign_fork`
    /// (with its original's); `None`: by `spawn`.
    pub fn settle_new(&mut self, maker: Option<usize>, child: usize, built: Option<u8>) {
        let maker_account = maker.and_then(|m| self.proc(m).account);
        let maker_ceiling = maker.map_or(abi::MAX_PRIORITY, |m| self.proc(m).priority_ceiling);
        let child_pid = self.pid_of(child);
        let (account, ceiling) = match built {
            None => (maker_account, maker_ceiling),
            Some(ceiling) => (maker_account.or(Some(child_pid)), ceiling),
        };
        let c = self.proc_mut(child);
        c.account = account;
        c.priority_ceiling = ceiling.max(c.base_priority);
    }

    /// The priority the process in `slot` asks to give (`spawn`,
    /// `set_priority`): refused above its ceiling.
    pub fn check_priority_given(&self, slot: usize, priority: u8) -> Result<(), Error> {
        if priority > self.proc(slot).priority_ceiling { Err(Error::PermissionDenied) } else { Ok(()) }
    }

    /// `foreign_give` moved the process in `slot` to `server`: from now
    /// on it is charged to the server's account.
    pub fn recharge(&mut self, slot: usize, server: usize) {
        self.proc_mut(slot).account = self.proc(server).account;
    }

    /// The process `pid` has ended: end what was charged to it, if it was
    /// an account (see the module's doc).
    pub fn end_charged(&mut self, pid: Pid) {
        for s in self.slots() {
            if self.proc(s).account == Some(pid) && self.proc(s).is_live() && self.pid_of(s) != pid {
                self.kill(s);
            }
        }
    }
}
