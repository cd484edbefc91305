//! The monitor's state and plumbing: the [`Monitor`] (its tables, its
//! links to other servers, its caches and counters), the [`Answer`] a call
//! gets, and how the monitor calls other servers.
//!
//! What it is not: any UNIX call. Those are the rooms above, each an
//! `impl Monitor` block of one concern (`names`, `files`, `procs`, `exec`,
//! `sessions`), dispatched by `main`.
//!
//! Invariants: a link to a (pid, queue) is opened once and kept until
//! that process ends (`drop_link`). A call to another server that fails in
//! the kernel is `EIO` to the caller; an error reply is passed on as it is.

use crate::tables::{CachedImage, OpenFiles, Proc};
use abi::Pid;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::{self as ux, Errno, Stat, errno, pid};
use runtime::msg::{self, Link, Queue};

/// What the monitor answers a call with.
pub enum Answer {
    Words([u64; 4]),
    WordsData([u64; 4], Vec<u8>),
    /// Answered later (a `wait`) or never (a successful `exec`).
    Later,
    /// Passed on to another server, which answers the caller
    /// (`forward_wait`: an `open` at a disk's manager, `files`): its link,
    /// the request's words and data.
    Forward(Link, [u64; 4], Vec<u8>),
}

/// What to do with the end of a kernel child (kernel pid, raw exit
/// status, CPU ns). The main loop hears of ends on the request queue; a
/// helper's start (`files`) hears of others' ends meanwhile and hands them
/// here, so both take the same path (`procs::child_exit`, set by `main`).
pub type ChildEnded = fn(&mut Monitor, Pid, u64, u64);

pub struct Monitor {
    pub me: Pid,
    pub starter: Pid,
    pub procs: BTreeMap<u64, Proc>,
    pub files: OpenFiles,
    /// The memory file system (the directory manager of the bootstrap
    /// connection `fs`), which holds `/dev` and, without a disk root, `/`.
    pub fs: (Pid, Link),
    /// The mount table (`mounts`): `/` first.
    pub mounts: Vec<crate::tables::Mount>,
    pub vm: Option<Link>,
    pub tty: Option<(Pid, u32)>,
    pub links: BTreeMap<(u64, u32), Link>,
    pub pipe_managers: Vec<Pid>,
    /// Pipes' design, `pipe.*` limits and the loan budget (`pipes`).
    pub pipes: crate::tables::Pipes,
    /// `monitor.files=per-file`: Ridge's file manager per open file.
    pub per_file: bool,
    /// Per-file mode: the file manager of each open file, by inode, and
    /// the handle at the directory manager it loads and writes back through.
    pub file_managers: BTreeMap<u64, (Pid, u64)>,
    /// File managers whose file was closed for the last time, kept to
    /// serve the next file (at most `files::IDLE_FILE_MANAGERS`): an open
    /// then starts no process, and their memory is already mapped.
    pub idle_file_managers: Vec<Pid>,
    pub images: Vec<CachedImage>,
    /// Recent lookups for `open` (Ridge's directory manager keeps a cache
    /// of them): path → the attributes the permission check needs. Every
    /// change to names, modes or owners passes through the monitor, which
    /// empties the cache then. Sizes and times are never read from it
    /// (writes go straight to the managers).
    pub lookups: BTreeMap<String, (Stat, Option<String>)>,
    pub devices_made: bool,
    /// Requests served, forks, execs.
    pub stats: [u64; 3],
    /// Opens passed on to a disk's manager so far: the low half of the
    /// handles the monitor chooses for them (`files`, `forward_create`).
    pub forwarded_opens: u64,
    /// The closes riding on the forwarded open being passed on (their
    /// handles are in its data, `files::forward_create`): closed the usual
    /// way if the kernel refuses the forward, forgotten once it is passed.
    pub riding: Vec<ux::FdInfo>,
    /// The descriptions an open closes first (`files::open`), kept so
    /// that its capacity is reused.
    pub closing: Vec<ux::FdInfo>,
    /// The data of the last forwarded open, given back by the main loop
    /// once passed on: the next one is built in it, one allocation and
    /// free fewer per open in the first-fit heap.
    pub forward_buf: Vec<u8>,
    pub child_ended: ChildEnded,
    /// The terminal across restarts (`terminal`).
    pub terminal: crate::tables::Terminal,
}

pub fn err(e: Errno) -> Answer {
    Answer::Words([ux::encode_result(Err(e)), 0, 0, 0])
}

pub fn ok(v: u64) -> Answer {
    Answer::Words([v, 0, 0, 0])
}

pub fn answer(r: Result<u64, Errno>) -> Answer {
    match r {
        Ok(v) => ok(v),
        Err(e) => err(e),
    }
}

pub fn kernel_errno(e: abi::Error) -> Errno {
    match e {
        abi::Error::OutOfResources | abi::Error::LimitReached => errno::EAGAIN,
        abi::Error::BadExecutable => errno::ENOEXEC,
        abi::Error::NoSuchProcess | abi::Error::DeadPeer => errno::ESRCH,
        abi::Error::PermissionDenied => errno::EPERM,
        abi::Error::BadAddress => errno::EFAULT,
        abi::Error::QueueFull => errno::EAGAIN,
        _ => errno::EIO,
    }
}

pub fn text(data: &[u8]) -> Result<&str, Errno> {
    core::str::from_utf8(data).map_err(|_| errno::EINVAL)
}

impl Monitor {
    pub fn link(&mut self, p: Pid, queue: u32) -> Result<Link, Errno> {
        if let Some(&l) = self.links.get(&(p.0, queue)) {
            return Ok(l);
        }
        let l = msg::open_link(p, Queue(queue)).map_err(kernel_errno)?;
        self.links.insert((p.0, queue), l);
        Ok(l)
    }

    pub fn drop_link(&mut self, p: Pid) {
        let keys: Vec<(u64, u32)> = self.links.keys().filter(|k| k.0 == p.0).copied().collect();
        for k in keys {
            if let Some(l) = self.links.remove(&k) {
                let _ = msg::close_link(l);
            }
        }
    }

    /// A call to a manager; `Err` for a kernel failure or an error reply.
    /// Replies may carry data the caller does not need (a Stat after
    /// `mkdir`); a call with no reply buffer gets a scratch one.
    pub fn call(
        &mut self,
        link: Link,
        req: [u64; 4],
        data: &[u8],
        reply: &mut [u8],
    ) -> Result<([u64; 4], usize), Errno> {
        let mut scratch = [0u8; 256];
        let reply = if reply.is_empty() { &mut scratch[..] } else { reply };
        let (w, len) = msg::call(link, &req, data, reply).map_err(|_| errno::EIO)?;
        ux::result(w[0])?;
        Ok((w, len))
    }

    /// A call to the memory file system (memfs), the directory manager
    /// of `/dev` and of the per-file managers' files.
    pub fn fs_call(
        &mut self,
        req: [u64; 4],
        data: &[u8],
        reply: &mut [u8],
    ) -> Result<([u64; 4], usize), Errno> {
        let link = self.fs.1;
        self.call(link, req, data, reply)
    }

    /// The UNIX pid of a live process with kernel pid `sender`.
    pub fn proc_of(&self, sender: Pid) -> Option<u64> {
        let p = pid::from_kernel(sender);
        self.procs.get(&p).filter(|p| p.kpid == sender && p.zombie.is_none()).map(|_| p)
    }

    /// `OP_STATS`: requests served, forks, execs, open-file descriptions.
    pub fn stats(&self) -> Answer {
        Answer::Words([self.stats[0], self.stats[1], self.stats[2], self.files.in_use()])
    }
}
