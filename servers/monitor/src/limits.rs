//! Resource limits (`getrlimit`/`setrlimit`, the shell's `ulimit`): the
//! processes of a uid, each process's descriptors, its heap and address
//! space (`protocols::unix::rlimit`). Root starts with none (descriptors
//! stop at the table's `MAX_FDS`); a root process that takes a non-root
//! uid gets the user defaults, as `pam_limits` applies `limits.conf` at
//! login (docs/reliability.md, "Users and limits").
//!
//! What it is not: the checks' call sites. `procs::fork` asks
//! [`Monitor::may_fork`], `files` takes descriptors through
//! [`Monitor::free_fd`], `exec` asks [`Monitor::may_exec`] and puts
//! [`Monitor::heap_limit_string`] in the exec block, where the runtime's
//! `sbrk` finds the heap limit (it moves the break with no message, Ridge's
//! design, so the check is in the process).
//!
//! Invariants: soft ≤ hard for every resource of every process; only root
//! raises a hard limit; limits change only by the process's own
//! `setrlimit` or its change of uid, and are copied by `fork`.

use crate::state::{Answer, Monitor, err};
use crate::tables::Limits;
use alloc::format;
use alloc::string::String;
use protocols::unix::monitor::MAX_FDS;
use protocols::unix::rlimit::{self, INFINITY, RLIMIT_AS, RLIMIT_DATA, RLIMIT_NOFILE, RLIMIT_NPROC};
use protocols::unix::{Errno, errno};

impl Monitor {
    /// `OP_GETRLIMIT`: [0, soft, hard, 0].
    pub fn getrlimit(&self, me: u64, resource: u64) -> Answer {
        match self.procs[&me].limits.get(resource) {
            Some((soft, hard)) => Answer::Words([0, soft, hard, 0]),
            None => err(errno::EINVAL),
        }
    }

    /// `OP_SETRLIMIT`: POSIX's rules; a non-root process may lower its
    /// hard limit but never raise it.
    pub fn setrlimit(&mut self, me: u64, resource: u64, soft: u64, hard: u64) -> Result<u64, Errno> {
        let i = Limits::index(resource).ok_or(errno::EINVAL)?;
        if soft > hard || (resource == RLIMIT_NOFILE && hard != INFINITY && hard > MAX_FDS as u64) {
            return Err(errno::EINVAL);
        }
        // The table holds MAX_FDS descriptors: "no limit" is that many.
        let (soft, hard) = if resource == RLIMIT_NOFILE {
            (soft.min(MAX_FDS as u64), hard.min(MAX_FDS as u64))
        } else {
            (soft, hard)
        };
        let p = self.procs.get_mut(&me).expect("caller exists");
        if p.uid != 0 && hard > p.limits.0[i].1 {
            return Err(errno::EPERM);
        }
        p.limits.0[i] = (soft, hard);
        Ok(0)
    }

    /// `OP_SET_PRIORITY`: root's way above the priority a process started
    /// at. The monitor made every UNIX process, so the kernel lets it give
    /// them up to its own ceiling (kernel/src/charges.rs); anyone else
    /// only lowers its own with the kernel's `set_priority`.
    pub fn set_priority(&mut self, me: u64, priority: u64) -> Result<u64, Errno> {
        let priority =
            u8::try_from(priority).ok().filter(|&p| p <= abi::MAX_PRIORITY).ok_or(errno::EINVAL)?;
        let p = &self.procs[&me];
        if p.uid != 0 {
            return Err(errno::EPERM);
        }
        runtime::sys::set_priority(p.kpid, priority).map_err(crate::state::kernel_errno)?;
        Ok(0)
    }

    /// A process of `me`'s uid may start (`fork`): `EAGAIN` when its uid
    /// already has `RLIMIT_NPROC` live processes.
    pub fn may_fork(&self, me: u64) -> Result<(), Errno> {
        let p = &self.procs[&me];
        let max = p.limits.soft(RLIMIT_NPROC);
        if max == INFINITY {
            return Ok(());
        }
        let live = self.procs.values().filter(|q| q.uid == p.uid && q.zombie.is_none()).count() as u64;
        if live >= max { Err(errno::EAGAIN) } else { Ok(()) }
    }

    /// The lowest free descriptor of `me` at or above `from` and below its
    /// `RLIMIT_NOFILE`: `EMFILE` when there is none.
    pub fn free_fd(&self, me: u64, from: usize) -> Result<usize, Errno> {
        let p = &self.procs[&me];
        let max = p.limits.soft(RLIMIT_NOFILE).min(MAX_FDS as u64) as usize;
        p.fds.lowest_free(from).filter(|&fd| fd < max).ok_or(errno::EMFILE)
    }

    /// May `dup2` make descriptor `fd` of `me`? (`EBADF` at or past the
    /// limit, as POSIX says for `dup2`.)
    pub fn fd_allowed(&self, me: u64, fd: u64) -> Result<(), Errno> {
        let max = self.procs[&me].limits.soft(RLIMIT_NOFILE).min(MAX_FDS as u64);
        if fd >= max { Err(errno::EBADF) } else { Ok(()) }
    }

    /// May `me` run a program file of `size_bytes`? `ENOMEM` when it is
    /// larger than its address-space limit.
    pub fn may_exec(&self, me: u64, size_bytes: u64) -> Result<(), Errno> {
        if size_bytes > self.procs[&me].limits.soft(RLIMIT_AS) { Err(errno::ENOMEM) } else { Ok(()) }
    }

    /// The exec block's last string: the heap limit for the runtime's
    /// `sbrk` (`rlimit::EXEC_HEAP_LIMIT_PREFIX`), or `None` with no limit.
    pub fn heap_limit_string(&self, me: u64) -> Option<String> {
        let l = &self.procs[&me].limits;
        let heap = l.soft(RLIMIT_DATA).min(l.soft(RLIMIT_AS));
        (heap != INFINITY).then(|| format!("{}{heap}", rlimit::EXEC_HEAP_LIMIT_PREFIX))
    }

    /// The heap region the VM manager pages for `me`'s next image: its
    /// hard heap limit (0: the whole region). The hard limit, not the
    /// soft one, since the process may raise its soft limit up to it with
    /// no exec; only root raises a hard one, and a raise counts from the
    /// next exec.
    pub fn heap_region_bytes(&self, me: u64) -> u64 {
        let l = &self.procs[&me].limits;
        let hard = |r| l.get(r).map_or(INFINITY, |(_, h)| h);
        match hard(RLIMIT_DATA).min(hard(RLIMIT_AS)) {
            INFINITY => 0,
            // At least a page: 0 would mean the whole region.
            bytes => bytes.max(abi::layout::PAGE_SIZE),
        }
    }

    /// `me` left root for a user: each limit becomes the smaller of its
    /// own and the user default (`rlimit::user_default`).
    pub fn apply_user_limits(&mut self, me: u64) {
        let p = self.procs.get_mut(&me).expect("caller exists");
        for (i, &resource) in rlimit::RESOURCES.iter().enumerate() {
            let default = rlimit::user_default(resource);
            let (soft, hard) = p.limits.0[i];
            p.limits.0[i] = (soft.min(default), hard.min(default));
        }
    }
}
