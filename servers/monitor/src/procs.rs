//! UNIX processes: fork, wait, the ends of the monitor's kernel children,
//! signals (kill, ignoring one, the console's ^C), process groups, user
//! ids, times, and the process list for `ps`.
//!
//! What it is not: loading a program (`exec`) or starting init's sessions
//! (`sessions`).
//!
//! Invariants: a process stays in the table after it ends (a zombie with
//! its wait status and CPU time) until its parent waits for it, unless
//! nobody will: an orphan (adopted by init) or the child of a parent that
//! has ended goes at once. Init (the starter) is never forked or
//! signalled. Every signal's default action ends the process.

use crate::state::{Answer, Monitor, err, kernel_errno, ok};
use crate::tables::FdTable;
use abi::{ExitStatus, Pid};
use alloc::vec::Vec;
use protocols::unix::{Errno, ProcInfo, errno, pid, signal, vm, wait_status};
use runtime::msg::{self, ReplyHandle};
use runtime::sys;

impl Monitor {
    /// `OP_FORK`: the kernel copies the caller (waiting in this call) into
    /// a stopped child, the VM manager its memory; the child starts as if
    /// its call had returned 0.
    pub fn fork(&mut self, me: u64, reply: ReplyHandle) -> Answer {
        if self.procs[&me].kpid == self.starter {
            return err(errno::EPERM);
        }
        if let Err(e) = self.may_fork(me) {
            return err(e);
        }
        let parent_k = self.procs[&me].kpid;
        let child_k = match msg::proc_fork(reply, &[0; 4]) {
            Ok(k) => k,
            Err(e) => return err(kernel_errno(e)),
        };
        let copied = match self.vm {
            Some(l) => self.call(l, [vm::OP_FORK, parent_k.0, child_k.0, 0], &[], &mut []).map(|_| ()),
            None => Err(errno::ENOSYS),
        };
        if let Err(e) = copied {
            let _ = sys::kill(child_k);
            return err(if e == errno::EIO { errno::ENOMEM } else { e });
        }
        let child_pid = pid::from_kernel(child_k);
        let child = self.procs[&me].forked(child_k, me);
        for i in child.fds.fds.iter().flatten() {
            self.files.retain(*i);
        }
        self.procs.insert(child_pid, child);
        if let Err(e) = sys::proc_start(child_k) {
            let _ = sys::kill(child_k);
            return err(kernel_errno(e));
        }
        self.stats[1] += 1;
        ok(child_pid)
    }

    /// `OP_WAIT`: an ended child now, or (without `NO_HANG`) the reply
    /// kept until one ends.
    pub fn wait(&mut self, me: u64, reply: ReplyHandle, target: i64, options: u64) -> Answer {
        if target == 0 || target < -1 {
            return err(errno::EINVAL);
        }
        if let Some(done) = self.reap_child(me, target) {
            return Answer::Words(done);
        }
        let has_child = self.procs.iter().any(|(&c, p)| p.ppid == me && (target == -1 || target as u64 == c));
        if !has_child {
            return err(errno::ECHILD);
        }
        if options & wait_status::NO_HANG != 0 {
            return ok(0);
        }
        self.procs.get_mut(&me).expect("caller exists").waiting = Some((reply, target));
        Answer::Later
    }

    /// Reap an ended child of `parent` matching `target`: reply words.
    fn reap_child(&mut self, parent: u64, target: i64) -> Option<[u64; 4]> {
        let (&c, _) = self.procs.iter().find(|&(&c, p)| {
            p.ppid == parent && p.zombie.is_some() && (target == -1 || target as u64 == c)
        })?;
        let child = self.procs.remove(&c)?;
        let (status, cpu_ns) = child.zombie?;
        // POSIX times(): a waited-for child's time includes the time of the
        // children it waited for.
        if let Some(p) = self.procs.get_mut(&parent) {
            p.children_cpu_ns += cpu_ns + child.children_cpu_ns;
        }
        Some([c, status, cpu_ns, 0])
    }

    /// A kernel child ended (a `ChildExit` message): a helper is forgotten;
    /// a UNIX process becomes a zombie, its descriptors are released, its
    /// children go to init, and a parent waiting for it is answered.
    pub fn child_exit(&mut self, kpid: Pid, raw_status: u64, cpu_ns: u64) {
        if self.helper_ended(kpid) {
            return;
        }
        let p = pid::from_kernel(kpid);
        let Some(proc) = self.procs.get_mut(&p) else { return };
        if proc.kpid != kpid || proc.zombie.is_some() {
            return;
        }
        let status = match ExitStatus::decode(raw_status) {
            ExitStatus::Exited(code) => wait_status::exited(code),
            ExitStatus::Killed => wait_status::signaled(proc.signal_sent.unwrap_or(signal::SIGKILL)),
            ExitStatus::Fault { vector, .. } => wait_status::signaled(match vector {
                abi::vector::DIVIDE_ERROR
                | abi::vector::X87_FLOATING_POINT
                | abi::vector::SIMD_FLOATING_POINT => signal::SIGFPE,
                abi::vector::INVALID_OPCODE => signal::SIGILL,
                _ => signal::SIGSEGV,
            }),
        };
        proc.zombie = Some((status, cpu_ns));
        // Its reply handles die with it: never answer one later.
        proc.signal_waiter = None;
        if let Some(l) = self.vm {
            let _ = msg::call(l, &[vm::OP_EXIT, kpid.0, 0, 0], &[], &mut []);
        }
        let Some(proc) = self.procs.get_mut(&p) else { return };
        let fds = core::mem::replace(&mut proc.fds, FdTable::new());
        let ppid = proc.ppid;
        // SIGCHLD, only to a parent that catches it (a Linux program's
        // handler, through servers/linux): its default action is to be
        // ignored, so nobody else needs it.
        if let Some(parent) = self.procs.get_mut(&ppid)
            && parent.caught & (1 << signal::SIGCHLD) != 0
        {
            parent.pending |= 1 << signal::SIGCHLD;
            self.signal_arrived(ppid);
        }
        for i in fds.fds.iter().flatten() {
            self.release(*i);
        }
        // Orphans go to init; ended ones nobody will wait for go at once.
        let orphans: Vec<u64> = self.procs.iter().filter(|(_, c)| c.ppid == p).map(|(&c, _)| c).collect();
        for c in orphans {
            let init = pid::from_kernel(self.starter);
            let zombie = self.procs.get(&c).is_some_and(|c| c.zombie.is_some());
            if zombie {
                self.procs.remove(&c);
            } else if let Some(c) = self.procs.get_mut(&c) {
                c.ppid = init;
                c.orphaned = true;
            }
        }
        match self.procs.get_mut(&ppid).and_then(|pp| pp.waiting.take().map(|w| (w, pp.kpid))) {
            Some(((handle, target), _)) => {
                if let Some(done) = self.reap_child(ppid, target) {
                    let _ = msg::reply(handle, &done, &[]);
                } else if let Some(pp) = self.procs.get_mut(&ppid) {
                    pp.waiting = Some((handle, target));
                }
            }
            None if !self.procs.contains_key(&ppid) => {
                self.procs.remove(&p);
            }
            None => {}
        }
        // Nobody waits for an orphan: init waits only for the processes it
        // started itself.
        if self.procs.get(&p).is_some_and(|c| c.orphaned && c.zombie.is_some()) {
            self.procs.remove(&p);
        }
    }

    pub fn getppid(&self, me: u64) -> u64 {
        self.procs[&me].ppid
    }

    /// `kill(target, sig)`: a process, or (target 0 or negative) a
    /// process group. Signal 0 only checks.
    pub fn kill(&mut self, me: u64, target: i64, sig: u64) -> Result<u64, Errno> {
        if sig > signal::MAX {
            return Err(errno::EINVAL);
        }
        let pgid = match target {
            t if t > 0 => None,
            0 => Some(self.procs[&me].pgid),
            -1 => return Err(errno::EINVAL),
            t => Some(t.unsigned_abs()),
        };
        let targets: Vec<u64> = match pgid {
            None => alloc::vec![target as u64],
            Some(g) => self
                .procs
                .iter()
                .filter(|(_, p)| p.pgid == g && p.zombie.is_none())
                .map(|(&c, _)| c)
                .collect(),
        };
        if targets.is_empty() {
            return Err(errno::ESRCH);
        }
        let uid = self.procs[&me].uid;
        let mut sent = 0;
        let mut last_error = errno::ESRCH;
        for t in targets {
            match self.procs.get(&t) {
                None => last_error = errno::ESRCH,
                Some(p) if p.zombie.is_some() => sent += 1,
                Some(p) if uid != 0 && uid != p.uid => last_error = errno::EPERM,
                Some(p) if p.kpid == self.starter => last_error = errno::EPERM,
                Some(_) => {
                    self.deliver_signal(t, sig);
                    sent += 1;
                }
            }
        }
        if sent > 0 { Ok(0) } else { Err(last_error) }
    }

    /// The default action of every signal Ridgeback knows is to end the
    /// process, unless it ignores the signal (SIGKILL cannot be ignored);
    /// but `SIGTTIN` and `SIGTTOU`, whose POSIX default is to stop, end
    /// nobody: there are no stopped processes, and the console manager
    /// holds the background read instead (`ctty`).
    fn deliver_signal(&mut self, target: u64, sig: u64) {
        let Some(p) = self.procs.get_mut(&target) else { return };
        if sig == 0 || (sig != signal::SIGKILL && p.ignored & (1 << sig) != 0) {
            return;
        }
        let stop_default = matches!(sig, signal::SIGTTIN | signal::SIGTTOU);
        if stop_default && p.caught & (1 << sig) == 0 {
            return;
        }
        if sig != signal::SIGKILL && p.caught & (1 << sig) != 0 {
            p.pending |= 1 << sig;
            self.signal_arrived(target);
            return;
        }
        p.signal_sent = Some(sig);
        let _ = sys::kill(p.kpid);
    }

    /// ^C from the console manager: signal the foreground group.
    pub fn signal_group(&mut self, pgid: u64, sig: u64) {
        let members: Vec<u64> = self
            .procs
            .iter()
            .filter(|(_, p)| p.pgid == pgid && p.zombie.is_none())
            .map(|(&c, _)| c)
            .collect();
        for m in members {
            if self.procs[&m].kpid != self.starter {
                self.deliver_signal(m, sig);
            }
        }
    }

    /// `OP_GETUID`: the (effective) uid, the gid and the real uid.
    pub fn getuid(&self, me: u64) -> Answer {
        let p = &self.procs[&me];
        Answer::Words([p.uid as u64, p.gid as u64, p.real_uid as u64, 0])
    }

    /// `setuid`/`setgid` in one (`u64::MAX` = unchanged); root only. A
    /// process leaving root gets the user limits (`limits`).
    pub fn setuid(&mut self, me: u64, uid: u64, gid: u64) -> Result<u64, Errno> {
        let p = self.procs.get_mut(&me).expect("caller exists");
        if p.uid != 0 {
            return Err(errno::EPERM);
        }
        if (uid != u64::MAX && uid > u64::from(u32::MAX - 1))
            || (gid != u64::MAX && gid > u64::from(u32::MAX - 1))
        {
            return Err(errno::EINVAL);
        }
        if uid != u64::MAX {
            p.uid = uid as u32;
            p.real_uid = uid as u32;
            if uid != 0 {
                self.apply_user_limits(me);
            }
        }
        let p = self.procs.get_mut(&me).expect("caller exists");
        if gid != u64::MAX {
            p.gid = gid as u32;
        }
        Ok(0)
    }

    /// `OP_TIMES`: the reaped children's CPU time and the uptime (the
    /// caller reads its own CPU time from the kernel).
    pub fn times(&self, me: u64) -> Answer {
        let uptime = sys::info(abi::InfoKey::UptimeNs);
        Answer::Words([0, self.procs[&me].children_cpu_ns, uptime, 0])
    }

    /// `OP_PS`: the process-table entry at `index`, and the next index.
    pub fn ps(&self, index: u64) -> Answer {
        let Some((&p, proc)) = self.procs.iter().nth(index as usize) else { return ok(0) };
        let info = ProcInfo {
            pid: p,
            ppid: proc.ppid,
            pgid: proc.pgid,
            uid: proc.uid,
            state: if proc.zombie.is_some() { b'Z' } else { b'R' },
            cpu_ns: proc.zombie.map_or(0, |z| z.1),
            name: proc.name,
        };
        let next = if (index as usize + 1) < self.procs.len() { index + 1 } else { 0 };
        Answer::WordsData([next, 0, 0, 0], info.encode().to_vec())
    }

    /// `setpgid`: the caller itself or one of its live children.
    pub fn setpgid(&mut self, me: u64, target: u64, pgid: u64) -> Result<u64, Errno> {
        let target = if target == 0 { me } else { target };
        let allowed =
            target == me || self.procs.get(&target).is_some_and(|p| p.ppid == me && p.zombie.is_none());
        if !allowed {
            return Err(errno::ESRCH);
        }
        let pgid = if pgid == 0 { target } else { pgid };
        self.may_join_group(me, target, pgid)?;
        self.procs.get_mut(&target).ok_or(errno::ESRCH)?.pgid = pgid;
        Ok(0)
    }

    pub fn getpgrp(&self, me: u64) -> u64 {
        self.procs[&me].pgid
    }

    /// Ignore (`on`) or restore the default action of `sig`; returns
    /// whether it was ignored before. SIGKILL cannot be ignored.
    pub fn signal_ignore(&mut self, me: u64, sig: u64, on: bool) -> Result<u64, Errno> {
        if sig == 0 || sig > signal::MAX || sig == signal::SIGKILL {
            return Err(errno::EINVAL);
        }
        let p = self.procs.get_mut(&me).expect("caller exists");
        let before = p.ignored & (1 << sig) != 0;
        if on {
            p.ignored |= 1 << sig;
            p.caught &= !(1 << sig);
        } else {
            p.ignored &= !(1 << sig);
        }
        Ok(before as u64)
    }

    /// Catch (`on`) or restore the default action of `sig`; returns
    /// whether it was caught before. SIGKILL cannot be caught.
    pub fn signal_catch(&mut self, me: u64, sig: u64, on: bool) -> Result<u64, Errno> {
        if sig == 0 || sig > signal::MAX || sig == signal::SIGKILL {
            return Err(errno::EINVAL);
        }
        let p = self.procs.get_mut(&me).expect("caller exists");
        let before = p.caught & (1 << sig) != 0;
        if on {
            p.caught |= 1 << sig;
            p.ignored &= !(1 << sig);
        } else {
            p.caught &= !(1 << sig);
            p.pending &= !(1 << sig);
        }
        Ok(before as u64)
    }

    /// `OP_SIGNAL_CATCH_SET`: the whole caught set at once (SIGKILL and
    /// numbers above `signal::MAX` left out), and the pending set taken.
    /// Pending signals that are no longer caught are handed over too, not
    /// dropped: the caller asked for them while it caught them.
    pub fn signal_catch_set(&mut self, me: u64, set: u64) -> Answer {
        let valid = ((1u64 << (signal::MAX + 1)) - 2) & !(1 << signal::SIGKILL);
        let set = set & valid;
        let p = self.procs.get_mut(&me).expect("caller exists");
        let before = core::mem::replace(&mut p.caught, set);
        p.ignored &= !set;
        Answer::Words([before, core::mem::take(&mut p.pending), 0, 0])
    }

    /// `OP_SIGNAL_WAIT`: the pending set now, or the reply kept until a
    /// caught signal arrives ([`Self::signal_arrived`]).
    pub fn signal_wait(&mut self, me: u64, reply: ReplyHandle) -> Answer {
        let p = self.procs.get_mut(&me).expect("caller exists");
        if p.pending != 0 {
            return ok(core::mem::take(&mut p.pending));
        }
        p.signal_waiter = Some(reply);
        Answer::Later
    }

    /// A caught signal became pending for `target`: answer its
    /// `OP_SIGNAL_WAIT`, if it is in one. (A waiter that died meanwhile
    /// has a stale handle, and the reply fails harmlessly.)
    fn signal_arrived(&mut self, target: u64) {
        let Some(p) = self.procs.get_mut(&target) else { return };
        if let Some(handle) = p.signal_waiter.take() {
            let bits = core::mem::take(&mut p.pending);
            let _ = msg::reply(handle, &[bits, 0, 0, 0], &[]);
        }
    }

    /// The caught signals received since the last call, cleared.
    pub fn signal_pending(&mut self, me: u64) -> u64 {
        let p = self.procs.get_mut(&me).expect("caller exists");
        core::mem::take(&mut p.pending)
    }

    /// `umask`: set the file-creation mask unless `read_only`; the old one.
    pub fn umask(&mut self, me: u64, mask: u64, read_only: bool) -> u64 {
        let p = self.procs.get_mut(&me).expect("caller exists");
        let old = p.umask;
        if !read_only {
            p.umask = (mask & 0o777) as u32;
        }
        old as u64
    }
}
