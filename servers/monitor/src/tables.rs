//! The monitor's tables, as data: the UNIX process table's entries
//! ([`Proc`]), the open-file descriptions of the whole system
//! ([`OpenFiles`]), each process's descriptors ([`FdTable`]) and the
//! program images kept for exec ([`CachedImage`]), the mount table's
//! entries ([`Mount`], routed by `mounts`) and the pipe settings and loan
//! budget ([`Pipes`], operated on by `pipes`).
//!
//! What it is not: the operations that talk to other servers about them
//! (`files`, `procs`, `exec`); nothing here sends a message.
//!
//! Invariants: a description is what `open` made at a manager (its
//! handle; the offset lives at the manager). Its `refs` counts the
//! descriptors, of one or several processes (after `dup` and `fork`),
//! that name it; it leaves the table when the count reaches zero, and the
//! caller then closes it at its manager (`io::OP_CLOSE`).

use abi::Pid;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::FdInfo;
use protocols::unix::monitor::MAX_FDS;
use runtime::msg::{Link, ReplyHandle};
use unix_core::pipepolicy::{LoanBudget, Settings};

/// The file-creation mask a process starts with (`umask` changes its own).
pub const UMASK: u32 = 0o022;

/// Most open-file descriptions in the whole system.
pub const MAX_OPEN_FILES: usize = 1024;

/// One entry of the UNIX process table.
pub struct Proc {
    pub kpid: Pid,
    pub ppid: u64,
    pub pgid: u64,
    /// Its session (`setsid`; POSIX): the pid of the session's leader.
    pub sid: u64,
    /// Its session has the console as its controlling terminal (a
    /// session init started does; one made by `setsid` has none).
    pub has_terminal: bool,
    /// The effective uid: every permission check uses it.
    pub uid: u32,
    pub gid: u32,
    /// The real uid: who started the set-user-ID program it runs (`su`
    /// asks for a password unless it is root); `setuid` sets both.
    pub real_uid: u32,
    pub cwd: String,
    pub fds: FdTable,
    /// Bit n set: signal n is ignored.
    pub ignored: u64,
    /// Bit n set: signal n is caught (recorded in `pending`, not acted on).
    pub caught: u64,
    /// Caught signals received and not yet collected.
    pub pending: u64,
    /// The file-creation mask (`umask`).
    pub umask: u32,
    /// Ended: (wait status, CPU ns), until the parent waits.
    pub zombie: Option<(u64, u64)>,
    /// A `wait` not answered yet: its reply handle and target (-1 = any).
    pub waiting: Option<(ReplyHandle, i64)>,
    /// An `OP_SIGNAL_WAIT` not answered yet: answered when a caught
    /// signal becomes pending.
    pub signal_waiter: Option<ReplyHandle>,
    pub children_cpu_ns: u64,
    /// The signal that made the kernel end it, for the wait status.
    pub signal_sent: Option<u64>,
    pub name: [u8; protocols::unix::PROCESS_NAME_BYTES],
    /// Its parent ended and init adopted it: nobody waits for it.
    pub orphaned: bool,
    /// Its resource limits (`limits`): inherited by `fork`, kept by `exec`.
    pub limits: Limits,
    /// Its last call was an `open` passed on to a manager
    /// (`files::forward_create`): the descriptor recorded for it and the
    /// handle chosen. Taken by its next call, which, when it is
    /// `monitor::OP_OPEN_LOST`, drops that descriptor (the manager died
    /// holding the open, so the process never heard of it).
    pub forwarded: Option<(usize, u64)>,
}

/// One process's resource limits (`protocols::unix::rlimit`): (soft,
/// hard) for each of `rlimit::RESOURCES`, in that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits(pub [(u64, u64); 4]);

impl Limits {
    /// Root's at boot: none, but descriptors stop at the table's size.
    pub const fn root() -> Limits {
        use protocols::unix::rlimit::INFINITY;
        let fds = MAX_FDS as u64;
        Limits([(INFINITY, INFINITY), (INFINITY, INFINITY), (fds, fds), (INFINITY, INFINITY)])
    }

    /// Where `resource` is kept, or `None` for one the monitor does not keep.
    pub fn index(resource: u64) -> Option<usize> {
        protocols::unix::rlimit::RESOURCES.iter().position(|&r| r == resource)
    }

    /// The (soft, hard) limit of `resource`.
    pub fn get(&self, resource: u64) -> Option<(u64, u64)> {
        Limits::index(resource).map(|i| self.0[i])
    }

    /// The soft limit of `resource` (`INFINITY` for one not kept).
    pub fn soft(&self, resource: u64) -> u64 {
        self.get(resource).map_or(protocols::unix::rlimit::INFINITY, |l| l.0)
    }
}

impl Proc {
    /// A root process with no descriptors (init, and sessions init starts).
    pub fn init(kpid: Pid) -> Proc {
        let pid = protocols::unix::pid::from_kernel(kpid);
        let mut name = [0u8; protocols::unix::PROCESS_NAME_BYTES];
        name[..4].copy_from_slice(b"init");
        Proc {
            kpid,
            ppid: 0,
            pgid: pid,
            sid: pid,
            has_terminal: true,
            uid: 0,
            gid: 0,
            real_uid: 0,
            cwd: String::from("/"),
            fds: FdTable::new(),
            ignored: 0,
            caught: 0,
            pending: 0,
            umask: UMASK,
            zombie: None,
            waiting: None,
            signal_waiter: None,
            children_cpu_ns: 0,
            signal_sent: None,
            name,
            orphaned: false,
            limits: Limits::root(),
            forwarded: None,
        }
    }

    /// The child's entry after `fork`: the same ids, directory, process
    /// group, descriptors (the caller adds the references), ignored
    /// signals (POSIX) and resource limits.
    pub fn forked(&self, kpid: Pid, parent: u64) -> Proc {
        Proc {
            kpid,
            ppid: parent,
            pgid: self.pgid,
            sid: self.sid,
            has_terminal: self.has_terminal,
            uid: self.uid,
            gid: self.gid,
            real_uid: self.real_uid,
            cwd: self.cwd.clone(),
            fds: self.fds.clone(),
            ignored: self.ignored,
            caught: self.caught,
            pending: 0,
            umask: self.umask,
            zombie: None,
            waiting: None,
            signal_waiter: None,
            children_cpu_ns: 0,
            signal_sent: None,
            name: self.name,
            orphaned: false,
            limits: self.limits,
            forwarded: None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct OpenFile {
    pub info: FdInfo,
    pub refs: u32,
}

#[derive(Default)]
pub struct OpenFiles {
    slots: Vec<Option<OpenFile>>,
}

impl OpenFiles {
    pub fn add(&mut self, info: FdInfo) -> Option<usize> {
        let file = OpenFile { info, refs: 1 };
        if let Some(i) = self.slots.iter().position(Option::is_none) {
            self.slots[i] = Some(file);
            return Some(i);
        }
        if self.slots.len() >= MAX_OPEN_FILES {
            return None;
        }
        self.slots.push(Some(file));
        Some(self.slots.len() - 1)
    }

    pub fn get(&self, i: usize) -> Option<&OpenFile> {
        self.slots.get(i).and_then(Option::as_ref)
    }

    pub fn retain(&mut self, i: usize) {
        if let Some(Some(f)) = self.slots.get_mut(i) {
            f.refs += 1;
        }
    }

    /// Drop a reference; returns the description when it was the last.
    pub fn release(&mut self, i: usize) -> Option<OpenFile> {
        let f = self.slots.get_mut(i)?.as_mut()?;
        f.refs -= 1;
        if f.refs == 0 { self.slots[i].take() } else { None }
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut OpenFile> {
        self.slots.get_mut(i).and_then(Option::as_mut)
    }

    /// The descriptions whose manager is the process `manager_pid` (the
    /// terminal's, moved to a restarted manager: `terminal`).
    pub fn naming(&self, manager_pid: u64) -> Vec<usize> {
        let names = |f: &OpenFile| f.info.manager_pid == manager_pid;
        self.slots.iter().enumerate().filter(|(_, f)| f.as_ref().is_some_and(names)).map(|(i, _)| i).collect()
    }

    pub fn in_use(&self) -> u64 {
        self.slots.iter().flatten().count() as u64
    }
}

/// One process's descriptors: fd → open-file index.
#[derive(Clone)]
pub struct FdTable {
    pub fds: [Option<usize>; MAX_FDS],
}

impl FdTable {
    pub const fn new() -> FdTable {
        FdTable { fds: [None; MAX_FDS] }
    }

    pub fn get(&self, fd: u64) -> Option<usize> {
        *self.fds.get(usize::try_from(fd).ok()?)?
    }

    /// The lowest free descriptor at or above `from`.
    pub fn lowest_free(&self, from: usize) -> Option<usize> {
        (from..MAX_FDS).find(|&i| self.fds[i].is_none())
    }
}

/// A program file read for exec when there is no VM manager, kept while
/// its inode, modification time and size stay the same.
pub struct CachedImage {
    /// The kernel pid of the file's manager: inode numbers are per volume.
    pub manager: u64,
    pub ino: u64,
    pub mtime_ns: u64,
    pub size: u64,
    pub bytes: Vec<u8>,
}

/// One mounted file system.
pub struct Mount {
    /// Where it is in the name space: `/`, `/disk`.
    pub point: String,
    /// `memfs`, or the block device it is on.
    pub source: String,
    pub fstype: &'static str,
    pub options: String,
    pub manager: Pid,
    pub queue: u32,
    pub link: Link,
    /// The path inside the manager that is `point` (`/`, or memfs's
    /// `/tmp` under a disk root).
    pub inner: String,
    /// Handles at the block driver the manager holds, closed when it ends.
    pub device_handles: Vec<(Pid, u32, u64)>,
    /// Its block driver was given up (issue 16): the manager was ended, and the
    /// volume is mounted again from `source` when the driver is back
    /// (`Monitor::remount_pending`); meanwhile its calls fail.
    pub remount: bool,
}

/// The monitor's pipe settings and the budget it has granted.
#[derive(Debug, Default)]
pub struct Pipes {
    pub settings: Settings,
    pub budget: LoanBudget,
}

impl Pipes {
    /// From the kernel command line; bad values are reported on the
    /// console and keep their defaults.
    pub fn from_options(cmdline: &str) -> Pipes {
        let (settings, warnings) = Settings::from_cmdline(cmdline);
        for w in warnings {
            runtime::println!("monitor: {w}");
        }
        Pipes { settings, budget: LoanBudget::default() }
    }
}

/// The monitor's record of the terminal (a field of the monitor; its logic is in `terminal`).
#[derive(Default)]
pub struct Terminal {
    /// The terminal manager ended and init will not start another.
    pub gone_for_good: bool,
    /// `OP_FD_RELINK` calls waiting for the new manager: (reply, UNIX
    /// pid, fd).
    pub waiting: Vec<(ReplyHandle, u64, u64)>,
    /// The session's process group (init's `OP_START`), given the
    /// terminal again after a restart.
    pub session_pgid: u64,
    /// The last foreground group `tcsetpgrp` set: given the terminal
    /// again after a restart while it has a member (a `su` shell's group,
    /// whose reads would otherwise be background reads: `ctty`).
    pub foreground: u64,
}
