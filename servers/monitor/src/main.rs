//! monitor: the user monitor (Ridge OS §3): the UNIX system-call
//! interface, as a server.
//!
//! Every UNIX process reaches it through its bootstrap connection
//! `MONITOR` with `call`s (`protocols::unix::monitor`). It keeps the UNIX
//! process table (parents, process groups, user ids, working directories,
//! signal dispositions, exit statuses) and every process's descriptor
//! table, and it does all the permission checking, so the other servers
//! stay simple (Ridge §3). It makes UNIX processes with the kernel's
//! `proc_*` calls: they are its kernel children, so their ends arrive here
//! as `ChildExit` messages on the request queue.
//!
//! After `open`, a process talks to the object's manager directly: the
//! monitor gives it the manager's (pid, queue) and the handle, and hears of
//! the descriptor again only at `close`, `dup` or `fork`.
//!
//! Servers it calls: the directory manager (`fs`), the VM manager (`vm`),
//! device managers (the console manager) and one pipe manager per pipe,
//! which it starts. It never waits for a client; a `wait` that cannot be
//! answered yet keeps its reply handle until a child ends.
//!
//! Arguments: the starter's (init's) kernel pid, in decimal. Init is UNIX
//! process 1.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod files;
mod procs;

use abi::msg::Kind;
use abi::{ExitStatus, Pid};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use files::{FdTable, OpenFiles};
use procs::Proc;
use protocols::unix::{
    self as ux, FdInfo, ProcInfo, Stat, device, errno, exec_args, filemgr, fs, io, mode, monitor, open_flags,
    pid, pipe, signal, tty, vm, wait_status,
};
use runtime::msg::{self, Link, Page, Queue, ReplyHandle};
use runtime::{Args, sys};
use unix_core::path;

runtime::entry!(main);

/// The file-creation mask applied to every `open`/`mkdir` (no `umask` call yet).
const UMASK: u32 = 0o022;
/// Program images kept after an exec, so the next exec of the same file
/// does not read it again.
const IMAGE_CACHE_ENTRIES: usize = 8;
/// Paths whose lookup the monitor remembers for `open`.
const LOOKUP_CACHE_ENTRIES: usize = 128;

use protocols::unix::Errno;

/// What the monitor answers a call with.
enum Answer {
    Words([u64; 4]),
    WordsData([u64; 4], Vec<u8>),
    /// Answered later (a `wait`) or never (a successful `exec`).
    Later,
}

struct CachedImage {
    ino: u64,
    mtime_ns: u64,
    size: u64,
    bytes: Vec<u8>,
}

struct Monitor {
    me: Pid,
    starter: Pid,
    procs: BTreeMap<u64, Proc>,
    files: OpenFiles,
    fs: (Pid, Link),
    vm: Option<Link>,
    tty: Option<(Pid, u32)>,
    links: BTreeMap<(u64, u32), Link>,
    pipe_managers: Vec<Pid>,
    /// `monitor.files=per-file`: Ridge's file manager per open file.
    per_file: bool,
    /// Per-file mode: the file manager of each open file, by inode, and
    /// the handle at the directory manager it loads and writes back through.
    file_managers: BTreeMap<u64, (Pid, u64)>,
    images: Vec<CachedImage>,
    /// Recent lookups for `open` (Ridge's directory manager keeps a cache
    /// of them): path → the attributes the permission check needs. Every
    /// change to names, modes or owners passes through the monitor, which
    /// empties the cache then. Sizes and times are never read from it
    /// (writes go straight to the managers).
    lookups: BTreeMap<String, (Stat, Option<String>)>,
    devices_made: bool,
    /// Requests served, forks, execs.
    stats: [u64; 3],
}

fn main(args: Args) -> i32 {
    let Some(starter) = args.get(0).and_then(|s| s.parse::<u64>().ok()).map(Pid) else { return 1 };
    if msg::init_qseg(256, 4, 640, 64).is_err() {
        return 2;
    }
    let (Ok(requests), Ok(_starts)) = (msg::open_queue(512, true), msg::open_queue(64, true)) else {
        return 3;
    };
    if sys::set_exit_queue(requests.0).is_err() {
        return 4;
    }
    let Some(fs_at) = sys::bootstrap(abi::bootstrap::FS) else { return 5 };
    let Ok(fs_link) = msg::open_link(fs_at.0, Queue(fs_at.1)) else { return 6 };
    let vm = sys::bootstrap(abi::bootstrap::VM).and_then(|(p, q)| msg::open_link(p, Queue(q)).ok());
    let tty = sys::bootstrap(abi::bootstrap::TTY);
    let me = sys::getpid();
    // UNIX processes are made by the monitor and inherit its bootstrap
    // connections: the MONITOR one must name the monitor itself.
    if sys::set_bootstrap(abi::bootstrap::MONITOR, me, requests.0).is_err() {
        return 8;
    }
    let mut m = Monitor {
        me,
        starter,
        procs: BTreeMap::new(),
        files: OpenFiles::default(),
        fs: (fs_at.0, fs_link),
        vm,
        tty,
        links: BTreeMap::new(),
        pipe_managers: Vec::new(),
        per_file: files_option() == "per-file",
        file_managers: BTreeMap::new(),
        images: Vec::new(),
        lookups: BTreeMap::new(),
        devices_made: false,
        stats: [0; 3],
    };
    m.procs.insert(pid::from_kernel(starter), Proc::init(starter));
    if let Some((tp, tq)) = tty
        && let Ok(l) = m.link(tp, tq)
    {
        let _ = msg::call(l, &[tty::OP_SET_MONITOR, me.0, requests.0 as u64, 0], &[], &mut []);
    }
    let ready = msg::open_link(starter, Queue(0))
        .and_then(|l| msg::send(l, &[monitor::READY, requests.0 as u64, 0, 0]));
    if ready.is_err() {
        return 7;
    }
    let mut buf = Page::zeroed();
    let mut pending: Option<(ReplyHandle, [u64; 4], Vec<u8>)> = None;
    loop {
        let r = match pending.take() {
            Some((h, words, data)) => msg::reply_wait(Some(h), &words, &data, requests, &mut buf.0),
            None => msg::reply_wait(None, &[0; 4], &[], requests, &mut buf.0),
        };
        let Ok(r) = r else { continue };
        match r.kind {
            Kind::Call => {
                m.stats[0] += 1;
                let data = buf.0[..r.len.min(4096)].to_vec();
                match m.handle(r.sender, r.reply, r.message, &data) {
                    Answer::Words(w) => pending = Some((r.reply, w, Vec::new())),
                    Answer::WordsData(w, d) => pending = Some((r.reply, w, d)),
                    Answer::Later => {}
                }
            }
            Kind::ChildExit => m.child_exit(Pid(r.message[0]), r.message[1], r.message[2]),
            Kind::Short
                if r.message[0] == monitor::OP_SIGNAL_GROUP && Some(r.sender) == m.tty.map(|t| t.0) =>
            {
                m.signal_group(r.message[1], r.message[2]);
            }
            _ => {}
        }
    }
}

/// The boot option `monitor.files`: `shared` (the default: the directory
/// manager serves file data itself) or `per-file` (Ridge: a file-manager
/// process per open file).
fn files_option() -> String {
    let mut buf = [0u8; 1024];
    let n = sys::kernel_options(&mut buf).unwrap_or(0).min(buf.len());
    let line = core::str::from_utf8(&buf[..n]).unwrap_or("");
    match protocols::options::lookup(line, "monitor.files") {
        Some("per-file") => String::from("per-file"),
        Some("shared") | None => String::from("shared"),
        Some(other) => {
            runtime::println!("monitor: monitor.files={other} is not `shared` or `per-file`; using shared");
            String::from("shared")
        }
    }
}

fn err(e: Errno) -> Answer {
    Answer::Words([ux::encode_result(Err(e)), 0, 0, 0])
}

fn ok(v: u64) -> Answer {
    Answer::Words([v, 0, 0, 0])
}

fn answer(r: Result<u64, Errno>) -> Answer {
    match r {
        Ok(v) => ok(v),
        Err(e) => err(e),
    }
}

fn kernel_errno(e: abi::Error) -> Errno {
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

fn text(data: &[u8]) -> Result<&str, Errno> {
    core::str::from_utf8(data).map_err(|_| errno::EINVAL)
}

fn decimal(n: u64) -> String {
    let mut digits = Vec::new();
    let mut n = n;
    loop {
        digits.push(b'0' + (n % 10) as u8);
        n /= 10;
        if n == 0 {
            break;
        }
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

impl Monitor {
    fn link(&mut self, p: Pid, queue: u32) -> Result<Link, Errno> {
        if let Some(&l) = self.links.get(&(p.0, queue)) {
            return Ok(l);
        }
        let l = msg::open_link(p, Queue(queue)).map_err(kernel_errno)?;
        self.links.insert((p.0, queue), l);
        Ok(l)
    }

    fn drop_link(&mut self, p: Pid) {
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
    fn call(
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

    fn fs_call(&mut self, req: [u64; 4], data: &[u8], reply: &mut [u8]) -> Result<([u64; 4], usize), Errno> {
        let link = self.fs.1;
        self.call(link, req, data, reply)
    }

    /// Look `abs` up: Ok((stat, rest of path after a device entry)).
    fn lookup(&mut self, abs: &str) -> Result<(Stat, Option<String>), (Errno, Option<Stat>)> {
        let mut reply = alloc::vec![0u8; 4096];
        let link = self.fs.1;
        let (w, len) = msg::call(link, &[fs::OP_LOOKUP, 0, 0, 0], abs.as_bytes(), &mut reply)
            .map_err(|_| (errno::EIO, None))?;
        match ux::result(w[0]) {
            Ok(v) => {
                let stat = Stat::decode(&reply[..len]).ok_or((errno::EIO, None))?;
                // A path that crosses a device entry, or ends at one, goes
                // on at the device's manager (Ridge §3).
                let is_device = mode::is_chr(stat.mode) && stat.device_pid != 0;
                let rest = (v & fs::DEVICE != 0 || is_device)
                    .then(|| String::from_utf8_lossy(&reply[Stat::BYTES.min(len)..len]).into_owned());
                Ok((stat, rest))
            }
            Err(e) => {
                let parent = (w[1] == 1).then(|| Stat::decode(&reply[..len])).flatten();
                Err((e, parent))
            }
        }
    }

    fn proc_of(&self, sender: Pid) -> Option<u64> {
        let p = pid::from_kernel(sender);
        self.procs.get(&p).filter(|p| p.kpid == sender && p.zombie.is_none()).map(|_| p)
    }

    /// `data` as an absolute, normalised path, after checking that `me`
    /// may search every directory on the way to its last name (POSIX:
    /// execute permission on each directory of a path prefix).
    fn abs_path(&mut self, me: u64, data: &[u8]) -> Result<String, Errno> {
        let p = text(data)?;
        let abs = path::normalize(&self.procs[&me].cwd, p).map_err(|e| match e {
            path::PathError::Empty => errno::ENOENT,
            path::PathError::TooLong | path::PathError::NameTooLong => errno::ENAMETOOLONG,
        })?;
        if self.procs[&me].uid != 0 {
            self.check_search(me, &abs)?;
        }
        Ok(abs)
    }

    /// Search permission on `/` and every directory above the last name of
    /// `abs`. Directory attributes come from the lookup cache (emptied by
    /// every mode or owner change), so a deep path costs one lookup per
    /// directory once.
    fn check_search(&mut self, me: u64, abs: &str) -> Result<(), Errno> {
        let Some((parent, _)) = path::split_last(abs) else { return Ok(()) };
        let mut prefix = String::from("/");
        let mut names = path::components(parent).peekable();
        loop {
            let st = match self.lookups.get(&prefix) {
                Some((st, None)) => *st,
                _ => match self.lookup(&prefix) {
                    Ok((st, None)) => {
                        if self.lookups.len() >= LOOKUP_CACHE_ENTRIES {
                            self.lookups.clear();
                        }
                        self.lookups.insert(prefix.clone(), (st, None));
                        st
                    }
                    // A device entry or a missing directory: the request
                    // itself reports it.
                    _ => return Ok(()),
                },
            };
            if !mode::is_dir(st.mode) {
                return Err(errno::ENOTDIR);
            }
            if !self.permits(me, &st, 1) {
                return Err(errno::EACCES);
            }
            let Some(name) = names.next() else { return Ok(()) };
            if prefix.len() > 1 {
                prefix.push('/');
            }
            prefix.push_str(name);
        }
    }

    fn permits(&self, me: u64, st: &Stat, want: u32) -> bool {
        let p = &self.procs[&me];
        mode::permits(st.mode, st.uid, st.gid, p.uid, p.gid, want)
    }

    /// May `me` add or remove names in the parent directory of `abs`?
    fn check_parent_writable(&mut self, me: u64, abs: &str) -> Result<Stat, Errno> {
        let (parent, _) = path::split_last(abs).ok_or(errno::EBUSY)?;
        let parent = String::from(parent);
        let (st, _) = self.lookup(&parent).map_err(|(e, _)| e)?;
        if !mode::is_dir(st.mode) {
            return Err(errno::ENOTDIR);
        }
        if !self.permits(me, &st, 3) {
            return Err(errno::EACCES);
        }
        Ok(st)
    }

    fn handle(&mut self, sender: Pid, reply: ReplyHandle, w: [u64; 4], data: &[u8]) -> Answer {
        let Some(me) = self.proc_of(sender) else { return err(errno::EPERM) };
        if matches!(
            w[0],
            monitor::OP_UNLINK
                | monitor::OP_RMDIR
                | monitor::OP_RENAME
                | monitor::OP_MKDIR
                | monitor::OP_CHMOD
                | monitor::OP_CHOWN
                | monitor::OP_START
        ) {
            self.lookups.clear();
        }
        let result = match w[0] {
            monitor::OP_FORK => return self.fork(me, reply),
            monitor::OP_EXEC => return self.exec_call(me, w, data),
            monitor::OP_WAIT => return self.wait(me, reply, w[1] as i64, w[2]),
            monitor::OP_GETPPID => Ok(self.procs[&me].ppid),
            monitor::OP_KILL => self.kill(me, w[1] as i64, w[2]),
            monitor::OP_OPEN => return self.open(me, data, w[1], w[2] as u32),
            monitor::OP_CLOSE => self.close(me, w[1]),
            monitor::OP_DUP => self.dup(me, w[1], None),
            monitor::OP_DUP2 => self.dup(me, w[1], Some(w[2])),
            monitor::OP_PIPE => return self.pipe(me),
            monitor::OP_FD_INFO => {
                return match self.procs[&me].fds.get(w[1]).and_then(|i| self.files.get(i)) {
                    Some(f) => {
                        let [a, b, c] = f.info.encode();
                        Answer::Words([0, a, b, c])
                    }
                    None => err(errno::EBADF),
                };
            }
            monitor::OP_STAT => {
                return match self.abs_path(me, data).map_err(|e| (e, None)).and_then(|p| self.lookup(&p)) {
                    Ok((st, _)) => Answer::WordsData([0; 4], st.encode().to_vec()),
                    Err((e, _)) => err(e),
                };
            }
            monitor::OP_UNLINK => self.unlink(me, data),
            monitor::OP_MKDIR => self.mkdir(me, data, w[1] as u32),
            monitor::OP_RMDIR => self.abs_path(me, data).and_then(|abs| {
                self.check_parent_writable(me, &abs)?;
                self.fs_call([fs::OP_RMDIR, 0, 0, 0], abs.as_bytes(), &mut []).map(|_| 0)
            }),
            monitor::OP_RENAME => self.rename(me, data),
            monitor::OP_CHDIR => self.chdir(me, data),
            monitor::OP_GETCWD => return Answer::WordsData([0; 4], self.procs[&me].cwd.as_bytes().to_vec()),
            monitor::OP_GETUID => {
                let p = &self.procs[&me];
                return Answer::Words([p.uid as u64, p.gid as u64, 0, 0]);
            }
            monitor::OP_SETUID => {
                let p = self.procs.get_mut(&me).expect("caller exists");
                if p.uid != 0 {
                    Err(errno::EPERM)
                } else {
                    if w[1] != u64::MAX {
                        p.uid = w[1] as u32;
                    }
                    if w[2] != u64::MAX {
                        p.gid = w[2] as u32;
                    }
                    Ok(0)
                }
            }
            monitor::OP_TIMES => {
                let uptime = sys::info(abi::InfoKey::UptimeNs);
                return Answer::Words([0, self.procs[&me].children_cpu_ns, uptime, 0]);
            }
            monitor::OP_PS => return self.ps(w[1]),
            monitor::OP_SETPGID => self.setpgid(me, w[1], w[2]),
            monitor::OP_GETPGRP => Ok(self.procs[&me].pgid),
            monitor::OP_SIGNAL_IGNORE => {
                let (sig, on) = (w[1], w[2] != 0);
                if sig == 0 || sig > signal::MAX || sig == signal::SIGKILL {
                    Err(errno::EINVAL)
                } else {
                    let p = self.procs.get_mut(&me).expect("caller exists");
                    let before = p.ignored & (1 << sig) != 0;
                    if on {
                        p.ignored |= 1 << sig;
                    } else {
                        p.ignored &= !(1 << sig);
                    }
                    Ok(before as u64)
                }
            }
            monitor::OP_CHMOD => self.abs_path(me, data).and_then(|abs| {
                let (st, _) = self.lookup(&abs).map_err(|(e, _)| e)?;
                let uid = self.procs[&me].uid;
                if uid != 0 && uid != st.uid {
                    return Err(errno::EPERM);
                }
                self.fs_call([fs::OP_CHMOD, w[1] & 0o7777, 0, 0], abs.as_bytes(), &mut []).map(|_| 0)
            }),
            monitor::OP_CHOWN => self.abs_path(me, data).and_then(|abs| {
                if self.procs[&me].uid != 0 {
                    return Err(errno::EPERM);
                }
                self.fs_call([fs::OP_CHOWN, w[1], w[2], 0], abs.as_bytes(), &mut []).map(|_| 0)
            }),
            monitor::OP_START if sender == self.starter => return self.start(me, w[1], data),
            monitor::OP_STATS => {
                return Answer::Words([self.stats[0], self.stats[1], self.stats[2], self.files.in_use()]);
            }
            _ => Err(errno::ENOSYS),
        };
        answer(result)
    }

    // --- processes ---

    fn fork(&mut self, me: u64, reply: ReplyHandle) -> Answer {
        if self.procs[&me].kpid == self.starter {
            return err(errno::EPERM);
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

    fn exec_call(&mut self, me: u64, w: [u64; 4], data: &[u8]) -> Answer {
        let mut parts = data.split(|&b| b == 0);
        let Some(path_bytes) = parts.next() else { return err(errno::EINVAL) };
        let (argc, envc) = (w[1] as usize, w[2] as usize);
        let strings: Vec<&[u8]> = parts.take(argc + envc).collect();
        if strings.len() != argc + envc {
            return err(errno::EINVAL);
        }
        let abs = match self.abs_path(me, path_bytes) {
            Ok(a) => a,
            Err(e) => return err(e),
        };
        let kpid = self.procs[&me].kpid;
        if kpid == self.starter {
            return err(errno::EPERM);
        }
        match self.exec_into(me, kpid, &abs, &strings, argc) {
            Ok(()) => Answer::Later,
            Err(e) => err(e),
        }
    }

    /// Load `abs` into process `kpid` (UNIX pid `p`) and start it.
    fn exec_into(
        &mut self,
        p: u64,
        kpid: Pid,
        abs: &str,
        strings: &[&[u8]],
        argc: usize,
    ) -> Result<(), Errno> {
        let (st, rest) = self.lookup(abs).map_err(|(e, _)| e)?;
        if rest.is_some() || !mode::is_reg(st.mode) || !self.permits(p, &st, 1) {
            return Err(errno::EACCES);
        }
        let (uid, gid) = (self.procs[&p].uid, self.procs[&p].gid);
        let header = exec_args::Header { argc: argc as u32, envc: (strings.len() - argc) as u32, uid, gid };
        let mut block = exec_args::encode_header(header).to_vec();
        for s in strings {
            block.extend_from_slice(s);
            block.push(0);
        }
        if block.len() as u64 > abi::layout::MAX_ARGS_BYTES {
            return Err(errno::E2BIG);
        }
        let base = path::split_last(abs).map_or(abs, |(_, n)| n);
        let mut name = [0u8; 32];
        let n = base.len().min(31);
        name[..n].copy_from_slice(&base.as_bytes()[..n]);
        match self.vm {
            // The VM manager pages text and data in from the file.
            Some(vm_link) => {
                let (w, _) =
                    self.fs_call([fs::OP_OPEN, open_flags::O_RDONLY, 0, 0], abs.as_bytes(), &mut [])?;
                let handle = w[0];
                let loaded = self.call(vm_link, [vm::OP_LOAD_IMAGE, handle, 0, 0], &st.encode(), &mut []);
                let _ = self.fs_call([io::OP_CLOSE, handle, 0, 0], &[], &mut []);
                let (w, _) = loaded?;
                let (image, entry) = (w[0], w[1]);
                sys::proc_image(kpid, entry, &block, &name).map_err(kernel_errno)?;
                if let Err(e) = self.call(vm_link, [vm::OP_NEW_IMAGE, kpid.0, image, 0], &[], &mut []) {
                    // The old image is gone and the new one has no pager:
                    // the process cannot run.
                    let _ = sys::kill(kpid);
                    return Err(e);
                }
            }
            // No VM manager: the kernel loads the file from this buffer.
            None => {
                let image = self.image(abs, &st)?;
                let bytes = &self.images[image].bytes;
                sys::proc_exec(kpid, bytes, &block, &name).map_err(kernel_errno)?;
            }
        }
        if let Some(proc) = self.procs.get_mut(&p) {
            proc.name = name;
        }
        sys::proc_start(kpid).map_err(kernel_errno)?;
        self.stats[2] += 1;
        Ok(())
    }

    /// The program file `abs` (whose stat is `st`), from the cache or read
    /// through the directory manager. Returns its cache index.
    fn image(&mut self, abs: &str, st: &Stat) -> Result<usize, Errno> {
        if let Some(i) = self
            .images
            .iter()
            .position(|c| c.ino == st.ino && c.mtime_ns == st.mtime_ns && c.size == st.size_bytes)
        {
            return Ok(i);
        }
        if st.size_bytes > abi::layout::MAX_EXEC_BYTES {
            return Err(errno::ENOMEM);
        }
        let (w, _) = self.fs_call([fs::OP_OPEN, open_flags::O_RDONLY, 0, 0], abs.as_bytes(), &mut [])?;
        let handle = w[0];
        let mut bytes = Vec::new();
        if bytes.try_reserve_exact(st.size_bytes as usize).is_err() {
            let _ = self.fs_call([io::OP_CLOSE, handle, 0, 0], &[], &mut []);
            return Err(errno::ENOMEM);
        }
        let mut page = Page::zeroed();
        let result = loop {
            match self.fs_call([io::OP_READ, handle, 4096, 0], &[], &mut page.0) {
                Ok((w, len)) if w[0] > 0 => bytes.extend_from_slice(&page.0[..(w[0] as usize).min(len)]),
                Ok(_) => break Ok(()),
                Err(e) => break Err(e),
            }
            if bytes.len() as u64 > abi::layout::MAX_EXEC_BYTES {
                break Err(errno::ENOMEM);
            }
        };
        let _ = self.fs_call([io::OP_CLOSE, handle, 0, 0], &[], &mut []);
        result?;
        if self.images.len() == IMAGE_CACHE_ENTRIES {
            self.images.remove(0);
        }
        self.images.push(CachedImage { ino: st.ino, mtime_ns: st.mtime_ns, size: st.size_bytes, bytes });
        Ok(self.images.len() - 1)
    }

    /// Init's request: start `data` (path NUL args) as a root process whose
    /// descriptors 0–2 are the console.
    fn start(&mut self, me: u64, argc: u64, data: &[u8]) -> Answer {
        if !self.devices_made {
            self.make_devices();
        }
        let mut parts = data.split(|&b| b == 0);
        let Some(path_bytes) = parts.next() else { return err(errno::EINVAL) };
        let strings: Vec<&[u8]> = parts.take(argc as usize).collect();
        let abs = match self.abs_path(me, path_bytes) {
            Ok(a) => a,
            Err(e) => return err(e),
        };
        let kpid = match sys::proc_create("unix") {
            Ok(k) => k,
            Err(e) => return err(kernel_errno(e)),
        };
        let p = pid::from_kernel(kpid);
        let mut proc = Proc::init(kpid);
        proc.ppid = me;
        proc.pgid = p;
        self.procs.insert(p, proc);
        // Standard input, output and error: the console, if there is one.
        let console = self.open_object(p, "/dev/console", open_flags::O_RDWR, 0);
        if let Err(e) = console {
            runtime::println!("monitor: no console for {abs}: {}", errno::name(e));
        }
        if let Ok(info) = console {
            if let Some(i) = self.files.add(info) {
                self.files.retain(i);
                self.files.retain(i);
                let fds = &mut self.procs.get_mut(&p).expect("just added").fds;
                fds.fds[0] = Some(i);
                fds.fds[1] = Some(i);
                fds.fds[2] = Some(i);
            }
            if let Some((tp, tq)) = self.tty
                && let Ok(l) = self.link(tp, tq)
            {
                let _ = self.call(l, [io::OP_FOREGROUND, info.handle, 1, p], &[], &mut []);
            }
        }
        match self.exec_into(p, kpid, &abs, &strings, strings.len()) {
            Ok(()) => ok(p),
            Err(e) => {
                let _ = sys::kill(kpid);
                err(e)
            }
        }
    }

    fn make_devices(&mut self) {
        self.devices_made = true;
        if let Some((tp, tq)) = self.tty {
            for name in ["/dev/console", "/dev/tty"] {
                if let Err(e) = self.fs_call([fs::OP_MKDEV, tp.0, tq as u64, 0o620], name.as_bytes(), &mut [])
                {
                    runtime::println!("monitor: cannot make {name}: {}", errno::name(e));
                }
            }
        }
    }

    fn wait(&mut self, me: u64, reply: ReplyHandle, target: i64, options: u64) -> Answer {
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

    fn child_exit(&mut self, kpid: Pid, raw_status: u64, cpu_ns: u64) {
        if let Some(i) = self.pipe_managers.iter().position(|&p| p == kpid) {
            self.pipe_managers.swap_remove(i);
            self.drop_link(kpid);
            return;
        }
        if self.file_managers.values().any(|(p, _)| *p == kpid) {
            self.file_manager_gone(kpid);
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
        if let Some(l) = self.vm {
            let _ = msg::call(l, &[vm::OP_EXIT, kpid.0, 0, 0], &[], &mut []);
        }
        let Some(proc) = self.procs.get_mut(&p) else { return };
        let fds = core::mem::replace(&mut proc.fds, FdTable::new());
        let ppid = proc.ppid;
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

    fn kill(&mut self, me: u64, target: i64, sig: u64) -> Result<u64, Errno> {
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
    /// process, unless it ignores the signal (SIGKILL cannot be ignored).
    fn deliver_signal(&mut self, target: u64, sig: u64) {
        let Some(p) = self.procs.get_mut(&target) else { return };
        if sig == 0 || (sig != signal::SIGKILL && p.ignored & (1 << sig) != 0) {
            return;
        }
        p.signal_sent = Some(sig);
        let _ = sys::kill(p.kpid);
    }

    /// ^C from the console manager: signal the foreground group.
    fn signal_group(&mut self, pgid: u64, sig: u64) {
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

    fn setpgid(&mut self, me: u64, target: u64, pgid: u64) -> Result<u64, Errno> {
        let target = if target == 0 { me } else { target };
        let allowed =
            target == me || self.procs.get(&target).is_some_and(|p| p.ppid == me && p.zombie.is_none());
        if !allowed {
            return Err(errno::ESRCH);
        }
        let pgid = if pgid == 0 { target } else { pgid };
        self.procs.get_mut(&target).ok_or(errno::ESRCH)?.pgid = pgid;
        Ok(0)
    }

    fn ps(&self, index: u64) -> Answer {
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

    // --- descriptors ---

    /// Open `abs` at its manager after the permission checks.
    fn open_object(&mut self, me: u64, abs: &str, flags: u64, create_mode: u32) -> Result<FdInfo, Errno> {
        let want = if open_flags::readable(flags) { 4 } else { 0 }
            | if open_flags::writable(flags) || flags & open_flags::O_TRUNC != 0 { 2 } else { 0 };
        let (uid, gid) = (self.procs[&me].uid, self.procs[&me].gid);
        let found = match self.lookups.get(abs) {
            Some(hit) => Ok(hit.clone()),
            None => {
                let found = self.lookup(abs);
                if let Ok(hit) = &found {
                    if self.lookups.len() >= LOOKUP_CACHE_ENTRIES {
                        self.lookups.clear();
                    }
                    self.lookups.insert(String::from(abs), hit.clone());
                }
                found
            }
        };
        match found {
            Ok((st, Some(rest))) => {
                if !self.permits(me, &st, want) {
                    return Err(errno::EACCES);
                }
                let dev = Pid(st.device_pid);
                let l = self.link(dev, st.device_queue)?;
                let (w, _) = self.call(l, [device::OP_OPEN, flags, 0, 0], rest.as_bytes(), &mut [])?;
                Ok(FdInfo {
                    manager_pid: dev.0,
                    manager_queue: st.device_queue,
                    file_type: mode::S_IFCHR,
                    flags: flags as u32,
                    handle: w[0],
                })
            }
            Ok((st, None)) => {
                if flags & open_flags::O_CREAT != 0 && flags & open_flags::O_EXCL != 0 {
                    return Err(errno::EEXIST);
                }
                if !self.permits(me, &st, want) {
                    return Err(errno::EACCES);
                }
                self.fs_open(abs, flags, create_mode, uid, gid)
            }
            Err((errno::ENOENT, Some(parent))) if flags & open_flags::O_CREAT != 0 => {
                if !self.permits(me, &parent, 3) {
                    return Err(errno::EACCES);
                }
                self.fs_open(abs, flags, create_mode, uid, gid)
            }
            Err((e, _)) => Err(e),
        }
    }

    fn fs_open(
        &mut self,
        abs: &str,
        flags: u64,
        create_mode: u32,
        uid: u32,
        gid: u32,
    ) -> Result<FdInfo, Errno> {
        let mut reply = [0u8; Stat::BYTES];
        let owner = (uid as u64) << 32 | gid as u64;
        let create_mode = (create_mode & 0o7777 & !UMASK) as u64;
        // Per-file mode covers regular files (and files being created);
        // directories stay with the directory manager.
        let regular_or_new = match self.lookups.get(abs) {
            Some((st, _)) => mode::is_reg(st.mode),
            None => true,
        };
        if self.per_file && regular_or_new {
            // The file manager needs read and write access for loading and
            // writing back; the caller's own flags were checked above.
            let creating = flags & (open_flags::O_CREAT | open_flags::O_EXCL | open_flags::O_TRUNC);
            let at_fs = creating | open_flags::O_RDWR;
            let (w, _) =
                self.fs_call([fs::OP_OPEN, at_fs, create_mode, owner], abs.as_bytes(), &mut reply)?;
            let st = Stat::decode(&reply).unwrap_or_default();
            if mode::is_reg(st.mode) {
                return self.open_at_file_manager(st.ino, w[0], flags);
            }
            self.fs_call([io::OP_CLOSE, w[0], 0, 0], &[], &mut [])?;
        }
        let (w, _) = self.fs_call([fs::OP_OPEN, flags, create_mode, owner], abs.as_bytes(), &mut reply)?;
        let st = Stat::decode(&reply).unwrap_or_default();
        Ok(FdInfo {
            manager_pid: self.fs.0.0,
            manager_queue: fs::QUEUE,
            file_type: st.mode & mode::S_IFMT,
            flags: flags as u32,
            handle: w[0],
        })
    }

    /// Per-file mode: open inode `ino` (whose directory-manager handle is
    /// `fs_handle`) at its file manager, starting one if it has none.
    fn open_at_file_manager(&mut self, ino: u64, fs_handle: u64, flags: u64) -> Result<FdInfo, Errno> {
        let manager = match self.file_managers.get(&ino) {
            Some(&(pid, _)) => {
                // This open's directory-manager handle is not needed: the
                // manager already holds the file (an O_TRUNC was done there
                // too, and the manager cuts its copy below).
                let _ = self.fs_call([io::OP_CLOSE, fs_handle, 0, 0], &[], &mut []);
                pid
            }
            None => {
                let started = self.start_helper("filemgr", filemgr::READY);
                let (pid, queue, _, _) = match started {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = self.fs_call([io::OP_CLOSE, fs_handle, 0, 0], &[], &mut []);
                        return Err(e);
                    }
                };
                let (fs_pid, _) = self.fs;
                let attached = self.link(pid, queue).and_then(|l| {
                    self.call(l, [filemgr::OP_ATTACH, fs_pid.0, fs::QUEUE as u64, fs_handle], &[], &mut [])
                });
                if let Err(e) = attached {
                    let _ = sys::kill(pid);
                    let _ = self.fs_call([io::OP_CLOSE, fs_handle, 0, 0], &[], &mut []);
                    return Err(e);
                }
                self.file_managers.insert(ino, (pid, fs_handle));
                pid
            }
        };
        let l = self.link(manager, filemgr::QUEUE)?;
        let (w, _) = self.call(l, [filemgr::OP_OPEN, flags, 0, 0], &[], &mut [])?;
        Ok(FdInfo {
            manager_pid: manager.0,
            manager_queue: filemgr::QUEUE,
            file_type: mode::S_IFREG,
            flags: flags as u32,
            handle: w[0],
        })
    }

    /// A file manager ended (written back, or died): close its handle at
    /// the directory manager.
    fn file_manager_gone(&mut self, pid: Pid) {
        let Some((&ino, &(_, fs_handle))) = self.file_managers.iter().find(|(_, (p, _))| *p == pid) else {
            return;
        };
        self.file_managers.remove(&ino);
        let _ = self.fs_call([io::OP_CLOSE, fs_handle, 0, 0], &[], &mut []);
        self.drop_link(pid);
    }

    fn open(&mut self, me: u64, data: &[u8], flags: u64, create_mode: u32) -> Answer {
        let abs = match self.abs_path(me, data) {
            Ok(a) => a,
            Err(e) => return err(e),
        };
        let Some(fd) = self.procs[&me].fds.lowest_free(0) else { return err(errno::EMFILE) };
        let info = match self.open_object(me, &abs, flags, create_mode) {
            Ok(i) => i,
            Err(e) => return err(e),
        };
        let Some(i) = self.files.add(info) else {
            self.close_at_manager(info);
            return err(errno::ENFILE);
        };
        self.procs.get_mut(&me).expect("caller exists").fds.fds[fd] = Some(i);
        let [a, b, c] = info.encode();
        Answer::Words([fd as u64, a, b, c])
    }

    fn close_at_manager(&mut self, info: FdInfo) {
        if let Ok(l) = self.link(Pid(info.manager_pid), info.manager_queue) {
            let closed = msg::call(l, &[io::OP_CLOSE, info.handle, 0, 0], &[], &mut []);
            if let Ok((w, _)) = closed
                && w[1] == filemgr::CLOSED_LAST
                && self.file_managers.values().any(|(p, _)| p.0 == info.manager_pid)
            {
                self.file_manager_gone(Pid(info.manager_pid));
            }
        }
    }

    fn release(&mut self, i: usize) {
        if let Some(f) = self.files.release(i) {
            self.close_at_manager(f.info);
        }
    }

    fn close(&mut self, me: u64, fd: u64) -> Result<u64, Errno> {
        let fds = &mut self.procs.get_mut(&me).expect("caller exists").fds;
        let i = fds.get(fd).ok_or(errno::EBADF)?;
        fds.fds[fd as usize] = None;
        self.release(i);
        Ok(0)
    }

    fn dup(&mut self, me: u64, old: u64, new: Option<u64>) -> Result<u64, Errno> {
        let fds = &self.procs[&me].fds;
        let i = fds.get(old).ok_or(errno::EBADF)?;
        let new = match new {
            Some(n) if n as usize >= files::MAX_FDS => return Err(errno::EBADF),
            Some(n) if n == old => return Ok(n),
            Some(n) => n as usize,
            None => fds.lowest_free(0).ok_or(errno::EMFILE)?,
        };
        let previous = self.procs.get_mut(&me).expect("caller exists").fds.fds[new].replace(i);
        self.files.retain(i);
        if let Some(p) = previous {
            self.release(p);
        }
        Ok(new as u64)
    }

    fn pipe(&mut self, me: u64) -> Answer {
        let fds = &self.procs[&me].fds;
        let Some(rfd) = fds.lowest_free(0) else { return err(errno::EMFILE) };
        let Some(wfd) = fds.lowest_free(rfd + 1) else { return err(errno::EMFILE) };
        let manager = match self.start_helper("pipe", pipe::READY) {
            Ok(m) => m,
            Err(e) => return err(e),
        };
        self.pipe_managers.push(manager.0);
        let (kpid, queue, read_handle, write_handle) = manager;
        let info = |flags: u64, handle| FdInfo {
            manager_pid: kpid.0,
            manager_queue: queue,
            file_type: mode::S_IFIFO,
            flags: flags as u32,
            handle,
        };
        let (Some(r), Some(w)) = (
            self.files.add(info(open_flags::O_RDONLY, read_handle)),
            self.files.add(info(open_flags::O_WRONLY, write_handle)),
        ) else {
            let _ = sys::kill(kpid);
            return err(errno::ENFILE);
        };
        let fds = &mut self.procs.get_mut(&me).expect("caller exists").fds;
        fds.fds[rfd] = Some(r);
        fds.fds[wfd] = Some(w);
        Answer::Words([rfd as u64, wfd as u64, 0, 0])
    }

    /// Start a helper server (a pipe or file manager) and wait for its
    /// ready message `[ready, queue, a, b]` on queue 1. Children's ends are
    /// reported on that queue meanwhile, so a helper that dies before it
    /// is ready cannot leave the monitor waiting.
    fn start_helper(&mut self, program: &str, ready: u64) -> Result<(Pid, u32, u64, u64), Errno> {
        let starts = Queue(1);
        sys::set_exit_queue(starts.0).map_err(kernel_errno)?;
        let kpid = sys::spawn(program, &decimal(self.me.0));
        let mut other_exits = Vec::new();
        let result = match kpid {
            Err(e) => Err(kernel_errno(e)),
            Ok(kpid) => loop {
                match msg::receive_data(starts, &mut []) {
                    Ok(r) if r.kind == Kind::ChildExit && r.message[0] == kpid.0 => break Err(errno::EAGAIN),
                    Ok(r) if r.kind == Kind::ChildExit => other_exits.push(r.message),
                    Ok(r) if r.sender == kpid && r.message[0] == ready => {
                        break Ok((kpid, r.message[1] as u32, r.message[2], r.message[3]));
                    }
                    Ok(_) => {}
                    Err(_) => break Err(errno::EIO),
                }
            },
        };
        let _ = sys::set_exit_queue(0);
        for m in other_exits {
            self.child_exit(Pid(m[0]), m[1], m[2]);
        }
        result
    }

    // --- the name space ---

    /// The sticky bit on `dir` (/tmp): the name `abs` in it may be removed
    /// or replaced only by its file's owner, the directory's owner or root.
    fn check_sticky(&mut self, me: u64, dir: &Stat, abs: &str) -> Result<(), Errno> {
        let uid = self.procs[&me].uid;
        if dir.mode & 0o1000 == 0 || uid == 0 || uid == dir.uid {
            return Ok(());
        }
        match self.lookup(abs) {
            Ok((st, _)) if st.uid != uid => Err(errno::EPERM),
            _ => Ok(()),
        }
    }

    fn unlink(&mut self, me: u64, data: &[u8]) -> Result<u64, Errno> {
        let abs = self.abs_path(me, data)?;
        let dir = self.check_parent_writable(me, &abs)?;
        self.check_sticky(me, &dir, &abs)?;
        self.fs_call([fs::OP_UNLINK, 0, 0, 0], abs.as_bytes(), &mut []).map(|_| 0)
    }

    fn mkdir(&mut self, me: u64, data: &[u8], mode_bits: u32) -> Result<u64, Errno> {
        let abs = self.abs_path(me, data)?;
        self.check_parent_writable(me, &abs)?;
        let p = &self.procs[&me];
        let owner = (p.uid as u64) << 32 | p.gid as u64;
        let m = (mode_bits & 0o7777 & !UMASK) as u64;
        self.fs_call([fs::OP_MKDIR, m, 0, owner], abs.as_bytes(), &mut []).map(|_| 0)
    }

    fn rename(&mut self, me: u64, data: &[u8]) -> Result<u64, Errno> {
        let mut parts = data.splitn(2, |&b| b == 0);
        let (Some(old), Some(new)) = (parts.next(), parts.next()) else { return Err(errno::EINVAL) };
        let (old, new) = (self.abs_path(me, old)?, self.abs_path(me, new)?);
        let old_dir = self.check_parent_writable(me, &old)?;
        let new_dir = self.check_parent_writable(me, &new)?;
        // The sticky bit (/tmp): a name there is removed or replaced only
        // by its file's owner, the directory's owner or root.
        self.check_sticky(me, &old_dir, &old)?;
        self.check_sticky(me, &new_dir, &new)?;
        let mut both = Vec::with_capacity(old.len() + new.len() + 1);
        both.extend_from_slice(old.as_bytes());
        both.push(0);
        both.extend_from_slice(new.as_bytes());
        self.fs_call([fs::OP_RENAME, 0, 0, 0], &both, &mut []).map(|_| 0)
    }

    fn chdir(&mut self, me: u64, data: &[u8]) -> Result<u64, Errno> {
        let abs = self.abs_path(me, data)?;
        let (st, rest) = self.lookup(&abs).map_err(|(e, _)| e)?;
        if rest.is_some() || !mode::is_dir(st.mode) {
            return Err(errno::ENOTDIR);
        }
        if !self.permits(me, &st, 1) {
            return Err(errno::EACCES);
        }
        self.procs.get_mut(&me).expect("caller exists").cwd = abs;
        Ok(0)
    }
}
