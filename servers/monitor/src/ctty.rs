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
//! Job control at the console (POSIX.1-2017 XBD 11.1.4): the console
//! manager keeps each read until it knows the reader's group, which it
//! asks here with a one-way `OP_TTY_READER` (the kernel's stamp of the
//! reader's pid, never the reader's word); [`Monitor::tty_reader`]
//! answers with a call of `tty::OP_READER`: the group and whether the
//! reader has the console as controlling terminal, ignores or catches
//! `SIGTTIN`, or is in an orphaned group. The manager decides with its
//! foreground group of that moment, and signals `SIGTTIN` through
//! `OP_SIGNAL_GROUP` (docs/reliability.md, "The console and job control").
//! Root's `TIOCSTI` ([`Monitor::tty_type`]) types into the console.
//!
//! What it is not: more than one terminal (the console is the only one),
//! or `TIOCSCTTY` (a new session never gets a terminal back).
//!
//! Invariants: a process group's live members are all of one session;
//! a session made by `setsid` has no controlling terminal.

use crate::state::Monitor;
use abi::Pid;
use protocols::unix::{Errno, errno, io, signal, tty};

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
        self.terminal.foreground = pgid;
        Ok(0)
    }

    /// The console manager's `OP_TTY_READER`: who is the process with
    /// kernel pid `reader` that reads the console (its read kept under
    /// `token`)? Answered with a call of `tty::OP_READER` (the monitor
    /// calls the manager, never the reverse: no deadlock).
    pub fn tty_reader(&mut self, reader: Pid, token: u64) {
        use protocols::unix::monitor::reader::{NO_TERMINAL, ORPHANED, TTIN_CAUGHT, TTIN_IGNORED};
        let (pgid, flags) = match self.proc_of(reader) {
            Some(me) => {
                let p = &self.procs[&me];
                let bit = 1u64 << signal::SIGTTIN;
                let mut flags = 0;
                if !p.has_terminal {
                    flags |= NO_TERMINAL;
                }
                if p.ignored & bit != 0 {
                    flags |= TTIN_IGNORED;
                }
                if p.caught & bit != 0 {
                    flags |= TTIN_CAUGHT;
                }
                if self.group_is_orphaned(p.pgid, p.sid) {
                    flags |= ORPHANED;
                }
                (p.pgid, flags)
            }
            // No UNIX process (a server, or one that has just ended).
            None => (0, NO_TERMINAL),
        };
        let Some((tp, tq)) = self.tty else { return };
        if let Ok(l) = self.link(tp, tq) {
            // `ENOENT`: the read is gone already; nothing to do.
            let _ = self.call(l, [tty::OP_READER, token, pgid, flags], &[], &mut []);
        }
    }

    /// POSIX's orphaned process group (XBD 3.266): no live member has a
    /// live parent in another group of the same session, so no job-control
    /// shell could ever continue it.
    fn group_is_orphaned(&self, pgid: u64, sid: u64) -> bool {
        !self.procs.values().any(|q| {
            q.pgid == pgid
                && q.zombie.is_none()
                && self
                    .procs
                    .get(&q.ppid)
                    .is_some_and(|parent| parent.zombie.is_none() && parent.pgid != pgid && parent.sid == sid)
        })
    }

    /// `OP_TTY_TYPE`: root's `TIOCSTI`, `data` typed into the console open
    /// on `fd` (see `protocols::unix::monitor::OP_TTY_TYPE`).
    pub fn tty_type(&mut self, me: u64, fd: u64, data: &[u8]) -> Result<u64, Errno> {
        let caller = &self.procs[&me];
        let file = caller.fds.get(fd).and_then(|i| self.files.get(i)).ok_or(errno::EBADF)?;
        if caller.uid != 0 {
            return Err(errno::EPERM);
        }
        let tty = self.tty.ok_or(errno::ENOTTY)?;
        if file.info.manager_pid != tty.0.0 || !caller.has_terminal {
            return Err(errno::ENOTTY);
        }
        let handle = file.info.handle;
        let link = self.link(tty.0, tty.1)?;
        let (w, _) = self.call(link, [tty::OP_TYPE, handle, 0, 0], data, &mut [])?;
        Ok(w[0])
    }
}
