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
//!
//! # Rooms, from the ground up
//! Each builds only on those listed before it.
//! - `tables`: the data: process-table entries, open-file descriptions,
//!   descriptor tables, cached program images. Sends no message.
//! - `state`: the [`state::Monitor`] that holds them, the [`state::Answer`]
//!   a call gets, links to and calls of other servers.
//! - `names`: paths, lookups and their cache, permission checks; stat,
//!   unlink, mkdir, rmdir, rename, chdir, getcwd, chmod, chown.
//! - `files`: open, close, dup, pipe, fd info; the directory, device, file
//!   and pipe managers an open reaches; starting helper servers.
//! - `mounts`: the mount table (which manager serves which names), mount,
//!   sync, the disk managers' counters.
//! - `pipes`: the pipe design, `pipe.*` limits (set by root at run time)
//!   and the system-wide loan budget of the pipe managers.
//! - `limits`: resource limits (`getrlimit`, `setrlimit`) and the checks
//!   fork, open, dup, pipe and exec make against them.
//! - `procs`: fork, wait, children's ends, signals, process groups, ids,
//!   times, ps.
//! - `exec`: loading a program into a process; the program-image cache.
//! - `sessions`: init's `OP_START` and the console's device entries.
//! - `ctty`: POSIX sessions (`setsid`) and who may set the console's
//!   foreground group (`tcsetpgrp`).
//! - `supervised`: root's requests to end or start a server, forwarded
//!   to init (the supervisor), and finding a restarted driver again.
//! - `terminal`: the terminal across restarts of its manager and of the
//!   console driver: descriptions moved to the new manager, descriptors
//!   re-linked after `DeadPeer`.
//! - here: start-up, the loop, and [`Monitor::handle`], one arm per
//!   `monitor::OP_*`.
//!
//! The one call that runs against this order: a helper's start (`files`)
//! hears of other children's ends while it waits, and hands them to
//! `procs::child_exit` through the [`state::ChildEnded`] hook set here.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod ctty;
mod exec;
mod files;
mod limits;
mod mounts;
mod names;
mod pipes;
mod procs;
mod sessions;
mod state;
mod supervised;
mod tables;
mod terminal;

use abi::Pid;
use abi::msg::Kind;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::{errno, monitor, pid, tty};
use runtime::msg::{self, Link, Page, Queue, ReplyHandle};
use runtime::{Args, sys};
use state::{Answer, Monitor, answer, err, ok};
use tables::{OpenFiles, Proc};

runtime::entry!(main);

fn main(args: Args) -> i32 {
    let Some(starter) = args.get(0).and_then(|s| s.parse::<u64>().ok()).map(Pid) else { return 1 };
    if msg::init_qseg(256, 4, 640, 64).is_err() {
        return 2;
    }
    // The second queue opened is `monitor::START_QUEUE`, where helpers
    // the monitor starts report ready (`files`).
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
        mounts: alloc::vec![tables::Mount {
            point: String::from("/"),
            source: String::from("memfs"),
            fstype: "memfs",
            options: String::from("rw"),
            manager: fs_at.0,
            queue: fs_at.1,
            link: fs_link,
            inner: String::from("/"),
            device_handles: Vec::new(),
            remount: false,
        }],
        vm,
        tty,
        links: BTreeMap::new(),
        pipe_managers: Vec::new(),
        pipes: tables::Pipes::from_options(&kernel_options()),
        per_file: files_option() == "per-file",
        file_managers: BTreeMap::new(),
        idle_file_managers: Vec::new(),
        images: Vec::new(),
        lookups: BTreeMap::new(),
        devices_made: false,
        stats: [0; 3],
        forwarded_opens: 0,
        riding: Vec::new(),
        closing: Vec::new(),
        forward_buf: Vec::new(),
        child_ended: Monitor::child_exit,
        terminal: tables::Terminal::default(),
    };
    m.procs.insert(pid::from_kernel(starter), Proc::init(starter));
    if let Some((tp, tq)) = tty
        && let Ok(l) = m.link(tp, tq)
    {
        let _ = msg::call(l, &[tty::OP_SET_MONITOR, me.0, requests.0 as u64, 0], &[], &mut []);
    }
    let ready = msg::open_link(starter, Queue(protocols::STARTER_QUEUE))
        .and_then(|l| msg::send(l, &[monitor::READY, requests.0 as u64, 0, 0]));
    if ready.is_err() {
        return 7;
    }
    let mut buf = Page::zeroed();
    let mut pending: Option<(ReplyHandle, [u64; 4], Vec<u8>)> = None;
    let mut forward: Option<(ReplyHandle, Link, [u64; 4], Vec<u8>)> = None;
    loop {
        let r = match (pending.take(), forward.take()) {
            (_, Some((h, link, words, data))) => {
                match msg::forward_wait(h, link, &words, &data, requests, &mut buf.0) {
                    Ok(r) => {
                        m.riding.clear();
                        m.forward_buf = data;
                        Ok(r)
                    }
                    Err(_) => {
                        // Not passed on (the manager ended, its queue is
                        // full): the monitor still holds the call, closes
                        // what rode on it and opens the usual way.
                        for info in core::mem::take(&mut m.riding) {
                            m.close_at_manager(info);
                        }
                        pending = match m.open_not_forwarded(&data) {
                            Answer::Words(w) => Some((h, w, Vec::new())),
                            _ => Some((
                                h,
                                [protocols::unix::encode_result(Err(errno::EIO)), 0, 0, 0],
                                Vec::new(),
                            )),
                        };
                        m.forward_buf = data;
                        continue;
                    }
                }
            }
            (Some((h, words, data)), None) => msg::reply_wait(Some(h), &words, &data, requests, &mut buf.0),
            (None, None) => msg::reply_wait(None, &[0; 4], &[], requests, &mut buf.0),
        };
        let Ok(r) = r else { continue };
        match r.kind {
            Kind::Call => {
                m.stats[0] += 1;
                // The request's data where it was received: no copy (the
                // answer owns whatever it sends back).
                let data = &buf.0[..r.len.min(buf.0.len())];
                match m.handle(r.sender, r.reply, r.message, data) {
                    Answer::Words(w) => pending = Some((r.reply, w, Vec::new())),
                    Answer::WordsData(w, d) => pending = Some((r.reply, w, d)),
                    Answer::Forward(link, w, d) => forward = Some((r.reply, link, w, d)),
                    Answer::Later => {}
                }
            }
            Kind::ChildExit => m.child_exit(Pid(r.message[0]), r.message[1], r.message[2]),
            Kind::Short
                if r.message[0] == monitor::OP_SIGNAL_GROUP && Some(r.sender) == m.tty.map(|t| t.0) =>
            {
                m.signal_group(r.message[1], r.message[2]);
            }
            Kind::Short if r.message[0] == monitor::OP_TTY_READER && Some(r.sender) == m.tty.map(|t| t.0) => {
                m.tty_reader(Pid(r.message[1]), r.message[2]);
            }
            Kind::Short if r.message[0] == monitor::OP_SERVER_ENDED && r.sender == m.starter => {
                m.server_ended(Pid(r.message[1]), r.message[2] == monitor::ENDED_FOR_GOOD);
                m.terminal_ended(Pid(r.message[1]), r.message[2] == monitor::ENDED_FOR_GOOD);
            }
            Kind::Short if r.message[0] == monitor::OP_SLOT_SERVER_STARTED && r.sender == m.starter => {
                m.slot_server_started(r.message[1], Pid(r.message[2]), r.message[3] as u32);
            }
            Kind::Short if r.message[0] == monitor::OP_SERVER_STARTED && r.sender == m.starter => {
                m.remount_pending();
            }
            Kind::Short if r.message[0] == monitor::OP_PIPE_LOAN => {
                m.pipe_loan(r.sender, r.message[1], r.message[2]);
            }
            _ => {}
        }
    }
}

/// The boot option `monitor.files`: `shared` (the default: the directory
/// manager serves file data itself) or `per-file` (Ridge: a file-manager
/// process per open file).
fn files_option() -> String {
    let line = kernel_options();
    match protocols::options::lookup(&line, "monitor.files") {
        Some("per-file") => String::from("per-file"),
        Some("shared") | None => String::from("shared"),
        Some(other) => {
            runtime::println!("monitor: monitor.files={other} is not `shared` or `per-file`; using shared");
            String::from("shared")
        }
    }
}

/// The kernel command line (the servers' options are words with a dot).
fn kernel_options() -> String {
    let mut buf = [0u8; 1024];
    let n = sys::kernel_options(&mut buf).unwrap_or(0).min(buf.len());
    String::from(core::str::from_utf8(&buf[..n]).unwrap_or(""))
}

impl Monitor {
    /// One call from a live UNIX process (anyone else gets `EPERM`): one
    /// arm per `monitor::OP_*`, in operation-number order.
    fn handle(&mut self, sender: Pid, reply: ReplyHandle, w: [u64; 4], data: &[u8]) -> Answer {
        if w[0] == monitor::OP_OPEN_DECLINED {
            // A process's open, back from a disk's manager (files.rs).
            return self.open_declined(sender, data);
        }
        let Some(me) = self.proc_of(sender) else { return err(errno::EPERM) };
        // Any call proves the last forwarded open over, one way or the
        // other (a process makes one call at a time); only the first call
        // after it may say it was lost (files.rs, `open_lost`).
        let forwarded = self.procs.get_mut(&me).and_then(|p| p.forwarded.take());
        if w[0] == monitor::OP_OPEN_LOST {
            return answer(self.open_lost(me, forwarded));
        }
        match w[0] {
            monitor::OP_FORK => self.fork(me, reply),
            monitor::OP_EXEC => self.exec(me, w, data),
            monitor::OP_WAIT => self.wait(me, reply, w[1] as i64, w[2]),
            monitor::OP_GETPPID => ok(self.getppid(me)),
            monitor::OP_KILL => answer(self.kill(me, w[1] as i64, w[2])),
            monitor::OP_OPEN => self.open(me, data, w[1], w[2] as u32, w[3]),
            monitor::OP_CLOSE => answer(self.close(me, w[1])),
            monitor::OP_DUP => answer(self.dup(me, w[1], None)),
            monitor::OP_DUP2 => answer(self.dup(me, w[1], Some(w[2]))),
            monitor::OP_PIPE => self.pipe(me),
            monitor::OP_FD_INFO => self.fd_info(me, w[1]),
            monitor::OP_STAT => self.stat(me, data),
            monitor::OP_UNLINK => answer(self.unlink(me, data)),
            monitor::OP_MKDIR => answer(self.mkdir(me, data, w[1] as u32)),
            monitor::OP_RMDIR => answer(self.rmdir(me, data)),
            monitor::OP_RENAME => answer(self.rename(me, data)),
            monitor::OP_CHDIR => answer(self.chdir(me, data)),
            monitor::OP_GETCWD => self.getcwd(me),
            monitor::OP_GETUID => self.getuid(me),
            monitor::OP_SETUID => answer(self.setuid(me, w[1], w[2])),
            monitor::OP_TIMES => self.times(me),
            monitor::OP_PS => self.ps(w[1]),
            monitor::OP_SETPGID => answer(self.setpgid(me, w[1], w[2])),
            monitor::OP_GETPGRP => ok(self.getpgrp(me)),
            monitor::OP_SIGNAL_IGNORE => answer(self.signal_ignore(me, w[1], w[2] != 0)),
            monitor::OP_CHMOD => answer(self.chmod(me, data, w[1])),
            monitor::OP_CHOWN => answer(self.chown(me, data, w[1], w[2])),
            monitor::OP_START => self.start(sender, me, w[1], data),
            monitor::OP_STATS => self.stats(),
            protocols::heap::OP_HEAP_STATS => {
                let (in_use, heap) = runtime::heap_stats();
                Answer::Words([in_use, heap, 0, 0])
            }
            monitor::OP_SET_LIMIT => self.set_limit(me, data),
            monitor::OP_LIMITS => self.limits_text(),
            monitor::OP_MOUNT => answer(self.mount(me, data)),
            monitor::OP_MOUNTS => self.mounts_text(),
            monitor::OP_SYNC => answer(self.sync(w[1] == monitor::SYNC_FINAL && sender == self.starter)),
            monitor::OP_FS_STATS => self.fs_stats(),
            monitor::OP_SIGNAL_CATCH => answer(self.signal_catch(me, w[1], w[2] != 0)),
            monitor::OP_SIGNAL_PENDING => ok(self.signal_pending(me)),
            monitor::OP_UMASK => ok(self.umask(me, w[1], w[2] != 0)),
            monitor::OP_GETRLIMIT => self.getrlimit(me, w[1]),
            monitor::OP_SETRLIMIT => answer(self.setrlimit(me, w[1], w[2], w[3])),
            monitor::OP_SERVER_KILL => self.server_request(me, protocols::init::OP_KILL, data),
            monitor::OP_SERVER_START => self.server_request(me, protocols::init::OP_START, data),
            monitor::OP_SUPERVISOR => Answer::Words([0, self.starter.0, protocols::init::QUEUE as u64, 0]),
            monitor::OP_SIGNAL_CATCH_SET => self.signal_catch_set(me, w[1]),
            monitor::OP_SIGNAL_WAIT => self.signal_wait(me, reply),
            monitor::OP_FD_RELINK => self.fd_relink(me, reply, w[1], w[2]),
            monitor::OP_SETSID => answer(self.setsid(me)),
            monitor::OP_TCSETPGRP => answer(self.tcsetpgrp(me, w[1], w[2])),
            monitor::OP_SET_PRIORITY => answer(self.set_priority(me, w[1])),
            monitor::OP_TTY_TYPE => answer(self.tty_type(me, w[1], data)),
            _ => err(errno::ENOSYS),
        }
    }
}
