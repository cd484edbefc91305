//! The terminal across restarts of its manager and of the console driver
//! (docs/reliability.md, "The console and the terminal"; issue 16: "the
//! console and tty restart without ending the session").
//!
//! init restarts the terminal manager (`servers/tty`) and the console
//! driver when they end (`etc/inittab`: `restart`). The monitor's part:
//! - init's `OP_SLOT_SERVER_STARTED` for the `TTY` slot: register with the new
//!   manager (`tty::OP_SET_MONITOR`), give every open-file description
//!   that named the old manager a new handle at the new one (same open
//!   flags), make `/dev/console` and `/dev/tty` name it, give the
//!   session's process group (init's `OP_START`) the terminal again, and
//!   answer the `OP_FD_RELINK` calls that waited for it. For either slot
//!   the monitor takes the new server into its own bootstrap slot, which
//!   the UNIX processes it makes from then on inherit.
//! - `OP_FD_RELINK`: a process whose call on a descriptor got `DeadPeer`
//!   asks where it goes now (`runtime::unix`). For the terminal the
//!   answer waits for the new manager; init's `OP_SERVER_ENDED` with
//!   `ENDED_FOR_GOOD` (given up, or not restarted) fails the waiting calls
//!   with `EIO` instead.
//!
//! What it is not: the supervisor (init), or the terminal's state: the
//! half-typed line, the no-echo line and the foreground group lived in
//! the old manager and are gone; only the session's group is given the
//! terminal again (the shell gives it to each foreground job anyway).
//!
//! Invariants: a call waits here only while the terminal manager it names
//! has ended and init may start another; at most [`MAX_WAITING`] wait
//! (then `EAGAIN`), and every one is answered when the next instance
//! registers or init gives up.

use crate::state::{Answer, Monitor, err};
use abi::Pid;
use protocols::unix::{device, encode_result, errno, fs, io, monitor, tty};
use runtime::msg::{self, Queue, ReplyHandle};
use runtime::sys;

/// Calls that may wait for a new terminal manager at once: every UNIX
/// process's one call in flight on it, with room for a full table.
pub const MAX_WAITING: usize = 256;

impl Monitor {
    /// `OP_FD_RELINK`: descriptor `fd` of `me` got `DeadPeer` from the
    /// manager with kernel pid `dead`.
    pub fn fd_relink(&mut self, me: u64, reply: ReplyHandle, fd: u64, dead: u64) -> Answer {
        let Some(info) = self.procs[&me].fds.get(fd).and_then(|i| self.files.get(i)).map(|f| f.info) else {
            return err(errno::EBADF);
        };
        if info.manager_pid != dead {
            // Moved already: the caller uses the new manager.
            return self.fd_info(me, fd);
        }
        let is_terminal = self.tty.is_some_and(|(p, _)| p.0 == dead);
        if !is_terminal || self.terminal.gone_for_good {
            return err(errno::EIO);
        }
        if let Ok(l) = msg::open_link(Pid(dead), Queue(info.manager_queue)) {
            // It still runs: whatever failed, it was not its end.
            let _ = msg::close_link(l);
            return self.fd_info(me, fd);
        }
        if self.terminal.waiting.len() >= MAX_WAITING {
            return err(errno::EAGAIN);
        }
        self.terminal.waiting.push((reply, me, fd));
        Answer::Later
    }

    /// init's `OP_SERVER_ENDED` (after [`Monitor::server_ended`]): if the
    /// terminal manager ended for good, the calls waiting for it fail.
    pub fn terminal_ended(&mut self, pid: Pid, for_good: bool) {
        if self.tty.is_some_and(|(p, _)| p == pid) && for_good {
            self.terminal.gone_for_good = true;
            self.answer_waiting();
        }
    }

    /// init's `OP_SLOT_SERVER_STARTED`: the server of bootstrap `slot` was
    /// started again as `pid`, serving `queue`.
    pub fn slot_server_started(&mut self, slot: u64, pid: Pid, queue: u32) {
        if slot != abi::bootstrap::TTY && slot != abi::bootstrap::CONSOLE {
            return;
        }
        // The UNIX processes made from now on inherit the new one.
        let _ = sys::set_bootstrap(slot, pid, queue);
        if slot == abi::bootstrap::CONSOLE {
            // The monitor's own log goes to the new driver again.
            runtime::io::reset_console();
            return;
        }
        let old = self.tty.replace((pid, queue));
        if let Some((old_pid, _)) = old
            && old_pid != pid
        {
            self.drop_link(old_pid);
        }
        self.terminal.gone_for_good = false;
        if let Ok(l) = self.link(pid, queue) {
            let me = self.me.0;
            let _ = self.call(l, [tty::OP_SET_MONITOR, me, monitor::QUEUE as u64, 0], &[], &mut []);
            if let Some((old_pid, _)) = old {
                self.move_descriptions(old_pid, pid, queue);
            }
            self.give_the_session_the_terminal(pid);
        }
        // `/dev/console` and `/dev/tty` name the new manager.
        for name in ["/dev/console", "/dev/tty"] {
            let _ = self.fs_call([fs::OP_UNLINK, 0, 0, 0], name.as_bytes(), &mut []);
            if let Err(e) = self.fs_call([fs::OP_MKDEV, pid.0, queue as u64, 0o620], name.as_bytes(), &mut [])
            {
                runtime::println!("monitor: cannot make {name} again: {}", errno::name(e));
            }
        }
        self.forget_lookups();
        self.answer_waiting();
    }

    /// Every open-file description of the old manager gets a handle at
    /// the new one, with its open flags (a description the new manager
    /// refuses keeps the old, dead one: its calls get `EIO`).
    fn move_descriptions(&mut self, old: Pid, new: Pid, queue: u32) {
        let Ok(l) = self.link(new, queue) else { return };
        for i in self.files.naming(old.0) {
            let Some(info) = self.files.get(i).map(|f| f.info) else { continue };
            if let Ok((w, _)) = self.call(l, [device::OP_OPEN, info.flags as u64, 0, 0], &[], &mut [])
                && let Some(f) = self.files.get_mut(i)
            {
                f.info.manager_pid = new.0;
                f.info.manager_queue = queue;
                f.info.handle = w[0];
            }
        }
    }

    /// The last foreground group `tcsetpgrp` set, or else the session's
    /// process group, is the new terminal's foreground, if it still has a
    /// member: only the foreground reads the terminal (job control,
    /// `ctty`), so a `su` shell at its prompt must get it back.
    fn give_the_session_the_terminal(&mut self, tty_pid: Pid) {
        let has_member = |g: u64| g != 0 && self.procs.values().any(|p| p.pgid == g && p.zombie.is_none());
        let last = self.terminal.foreground;
        let pgid = if has_member(last) { last } else { self.terminal.session_pgid };
        let alive = has_member(pgid);
        let handle = self.files.naming(tty_pid.0).first().and_then(|&i| self.files.get(i)).map(|f| f.info);
        if let (true, Some(info)) = (alive, handle)
            && let Ok(l) = self.link(tty_pid, info.manager_queue)
        {
            let _ = self.call(l, [io::OP_FOREGROUND, info.handle, 1, pgid], &[], &mut []);
        }
    }

    /// Answer every waiting `OP_FD_RELINK` with where its descriptor goes
    /// now (`EIO` if it still names a manager that has ended).
    fn answer_waiting(&mut self) {
        for (reply, me, fd) in core::mem::take(&mut self.terminal.waiting) {
            if !self.procs.contains_key(&me) {
                continue;
            }
            let words = match self.fd_info(me, fd) {
                _ if self.terminal.gone_for_good => [encode_result(Err(errno::EIO)), 0, 0, 0],
                Answer::Words(w) => w,
                _ => [encode_result(Err(errno::EIO)), 0, 0, 0],
            };
            let _ = msg::reply(reply, &words, &[]);
        }
    }
}
