//! Sessions and the console's foreground group (POSIX.1, "General
//! Terminal Interface": the controlling terminal, `setsid`, `tcsetpgrp`).
//!
//! ^C signals the console's foreground group, whoever owns it, so who may
//! set that group is a matter of security (docs/reliability.md, "Users and
//! limits"). The console manager (tty) takes the setting from the monitor
//! alone, and the monitor applies POSIX's rule: the caller's controlling
//! terminal must be the console (its session is one init started, not one
//! of its own from `setsid`), and the group must be one of its session.
//! `setpgid` keeps groups inside sessions ([`Monitor::may_join_group`]),
//! so a process cannot lend itself a group of another session either.
//!
//! What it is not: more than one terminal (the console is the only one),
//! or `TIOCSCTTY` (a new session never gets a terminal back).
//!
//! Invariants: a process group's live members are all of one session;
//! a session made by `setsid` has no controlling terminal.

use crate::state::Monitor;
use protocols::unix::{Errno, errno, io};

impl Monitor {
    /// `OP_SETSID`: a new session and group led by the caller, with no
    /// controlling terminal. `EPERM` for a group leader (POSIX: its group
    /// would then straddle two sessions).
    pub fn setsid(&mut self, me: u64) -> Result<u64, Errno> {
        if self.procs.values().any(|q| q.pgid == me) {
            return Err(errno::EPERM);
        }
        let p = self.procs.get_mut(&me).expect("caller exists");
        p.sid = me;
        p.pgid = me;
        p.has_terminal = false;
        Ok(me)
    }

    /// May `target` (the caller `me` or its child) join group `pgid`? Both
    /// must be of one session, and a group that has members must be of
    /// that session (POSIX `setpgid`: `EPERM`). A group with no member
    /// left is let be, as before: a pipeline's first stage may have been
    /// reaped before the last joins its group.
    pub fn may_join_group(&self, me: u64, target: u64, pgid: u64) -> Result<(), Errno> {
        let sid = self.procs.get(&me).ok_or(errno::ESRCH)?.sid;
        let target_sid = self.procs.get(&target).ok_or(errno::ESRCH)?.sid;
        let other_session = self.procs.values().any(|q| q.pgid == pgid && q.zombie.is_none() && q.sid != sid);
        if target_sid != sid || other_session {
            return Err(errno::EPERM);
        }
        Ok(())
    }

    /// `OP_TCSETPGRP`: see `protocols::unix::monitor::OP_TCSETPGRP`.
    pub fn tcsetpgrp(&mut self, me: u64, fd: u64, pgid: u64) -> Result<u64, Errno> {
        let caller = &self.procs[&me];
        let file = caller.fds.get(fd).and_then(|i| self.files.get(i)).ok_or(errno::EBADF)?;
        let tty = self.tty.ok_or(errno::ENOTTY)?;
        if file.info.manager_pid != tty.0.0 || !caller.has_terminal {
            return Err(errno::ENOTTY);
        }
        let sid = caller.sid;
        let in_session = self.procs.values().any(|q| q.pgid == pgid && q.sid == sid);
        let elsewhere = self.procs.values().any(|q| q.pgid == pgid && q.zombie.is_none() && q.sid != sid);
        if pgid == 0 || !in_session || elsewhere {
            return Err(errno::EPERM);
        }
        let handle = file.info.handle;
        let link = self.link(tty.0, tty.1)?;
        self.call(link, [io::OP_FOREGROUND, handle, 1, pgid], &[], &mut [])?;
        Ok(0)
    }
}
