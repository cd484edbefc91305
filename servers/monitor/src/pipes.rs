//! Pipes' settings and the system-wide loan budget (seed 002's TODOs:
//! limits on loaned memory, limits settable at run time), with the policy
//! itself in `unix_core::pipepolicy` (host-tested, where the reasoning
//! for a monitor-held budget is written down).
//!
//! - `pipe`, `pipe.loan_min`, `pipe.loan_cap` are read from the kernel
//!   command line at start ([`Pipes::from_options`]) and changed by root
//!   with `monitor::OP_SET_LIMIT` (`kinfo -w pipe.loan_min=...`): new
//!   pipes are started with the settings as arguments, running managers
//!   get `pipe::OP_SET_LOAN_MIN`, and a lowered cap reclaims budget.
//! - A manager's `monitor::OP_PIPE_LOAN` wants budget or gives it back;
//!   the answer is a `pipe::OP_GRANT` message (0 bytes: refused).
//!
//! Every message here is a one-way `send` that does not wait; one that
//! cannot be delivered (a full queue, a manager that has ended) changes
//! nothing: a grant not delivered is taken back at once.

use crate::state::{Answer, Monitor, err, ok};
use abi::Pid;
use alloc::string::String;
use protocols::unix::{errno, pipe};
use runtime::msg;
use unix_core::pipepolicy::Change;

impl Monitor {
    /// `OP_SET_LIMIT`: root only.
    pub fn set_limit(&mut self, me: u64, text: &[u8]) -> Answer {
        if self.procs[&me].uid != 0 {
            return err(errno::EPERM);
        }
        match self.pipes.settings.set_text(text) {
            Ok(Change::NewPipes) => {}
            Ok(Change::LoanMin(n)) => {
                for kpid in self.pipe_managers.clone() {
                    self.tell_pipe(kpid, [pipe::OP_SET_LOAN_MIN, n, 0, 0]);
                }
            }
            Ok(Change::LoanCap) => {
                for kpid in self.pipes.budget.over_cap(self.pipes.settings.loan_cap_bytes) {
                    self.tell_pipe(Pid(kpid), [pipe::OP_RECLAIM, 0, 0, 0]);
                }
            }
            Err(e) => return err(e),
        }
        ok(0)
    }

    /// `OP_LIMITS`: the settings and the loan accounting, as text.
    pub fn limits_text(&self) -> Answer {
        let s = &self.pipes.settings;
        let text = alloc::format!(
            "pipe={}\npipe.loan_min={}\npipe.loan_cap={}\npipe.loan_granted={}\npipe.loan_refused={}\n",
            s.mode.name(),
            s.loan_min_bytes,
            s.loan_cap_bytes,
            self.pipes.budget.granted(),
            self.pipes.budget.refused
        );
        Answer::WordsData([text.len() as u64, 0, 0, 0], text.into_bytes())
    }

    /// A pipe manager's `OP_PIPE_LOAN`: wants `want` bytes, gives `back`.
    pub fn pipe_loan(&mut self, kpid: Pid, want: u64, back: u64) {
        if !self.pipe_managers.contains(&kpid) {
            return;
        }
        self.pipes.budget.give_back(kpid.0, back);
        if want == 0 {
            return;
        }
        let cap = self.pipes.settings.loan_cap_bytes;
        let (granted, ask) = self.pipes.budget.want(kpid.0, want, cap);
        if !self.tell_pipe(kpid, [pipe::OP_GRANT, granted, 0, 0]) {
            self.pipes.budget.give_back(kpid.0, granted);
        }
        for other in ask {
            self.tell_pipe(Pid(other), [pipe::OP_RECLAIM, 0, 0, 0]);
        }
    }

    /// A pipe manager ended: its budget comes back.
    pub fn pipe_manager_gone(&mut self, kpid: Pid) {
        self.pipes.budget.forget(kpid.0);
    }

    /// The arguments of a new pipe manager.
    pub fn pipe_manager_args(&self) -> String {
        self.pipes.settings.manager_args(self.me.0)
    }

    /// A one-way message to a pipe manager; false if it was not delivered.
    fn tell_pipe(&mut self, kpid: Pid, words: [u64; 4]) -> bool {
        let Ok(link) = self.link(kpid, pipe::QUEUE) else { return false };
        msg::send(link, &words).is_ok()
    }
}
