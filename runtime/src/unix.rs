//! The UNIX interface, as library entries (Ridge OS §3: "the UNIX system
//! calls are implemented as library routines that send messages").
//!
//! Process calls, `open`, `close`, `dup`, `pipe` and name-space calls are
//! `call`s to the user monitor (`protocols::unix::monitor`), but for the
//! `close` of a regular file, which rides on the next `open` or goes
//! before the process's next other call (`State::deferred`). Once a
//! descriptor is open, `read`, `write`, `lseek`, `fstat` and `readdir` go
//! straight to the object's manager (`protocols::unix::io`) with the handle
//! the monitor gave: the monitor is bypassed, as in Ridge.
//!
//! The descriptor cache here maps an fd to (link, handle). It is only a
//! cache: the monitor's table is the truth, and an fd this process has not
//! looked up yet (after `exec`) is fetched with `OP_FD_INFO` on first use.
//! `fork` copies it with the rest of memory, and the kernel copies the
//! links it names.
//!
//! A manager that ends is not always the end of its descriptors: init
//! restarts the terminal manager (docs/reliability.md, "The console and
//! the terminal"). A call on a character device that gets `DeadPeer`
//! asks the monitor where the descriptor goes now (`OP_FD_RELINK`: for the
//! terminal the answer waits until the new manager runs), forgets every
//! cached descriptor of the ended manager, and makes the call once more.
//! A call that the old manager had half done is thus made again: a read
//! in flight reads the next line from the new manager, and a write in
//! flight may show twice.
//!
//! Errors are POSIX error numbers ([`Errno`]).

#[path = "unix_block.rs"]
mod block;
#[path = "unix_pipe.rs"]
mod pipe_io;
#[path = "unix_poll.rs"]
mod poll_io;
#[path = "unix_socket.rs"]
pub mod socket;
pub use poll_io::poll;

use crate::msg::{self, Link, Queue};
use abi::Pid;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::{self as ux, DirEntry as WireDirEntry, FdInfo, ProcInfo, Stat, errno, exec_args, io};
use spin::Mutex;

mod ramdriver;
mod readwin;

/// A file descriptor.
pub type Fd = i32;

/// The user monitor's operations (named apart from the monitor server).
use protocols::unix::monitor as monitor_ops;
/// Most descriptors a process may have open: the monitor's limit.
pub use protocols::unix::monitor::MAX_FDS;

pub use protocols::unix::Errno;

/// A kernel error on the way to a server, as the errno a UNIX program
/// expects: a dead or missing server is an I/O error.
fn from_kernel(e: abi::Error) -> Errno {
    match e {
        abi::Error::BadAddress => errno::EFAULT,
        abi::Error::InvalidArgument => errno::EINVAL,
        abi::Error::OutOfResources | abi::Error::LimitReached | abi::Error::QueueFull => errno::EAGAIN,
        _ => errno::EIO,
    }
}

#[derive(Clone, Copy)]
enum Slot {
    /// Not looked up since this image started.
    Unknown,
    Closed,
    Open {
        link: Link,
        info: FdInfo,
    },
}

struct State {
    monitor: Option<Link>,
    fds: [Slot; MAX_FDS],
    /// Links to managers (pid, queue, link), shared by every fd on the
    /// same (pid, queue) and closed when the last such fd is forgotten
    /// (but for the one kept as `idle_link`), so
    /// a process that opens many files over its life (each of its own
    /// manager, with `monitor.files=per-file`) never runs out of links.
    links: Vec<(u64, u32, u32)>,
    /// The one link kept after its last fd was forgotten (pid, queue,
    /// link), so that an open after a close of the same manager's file
    /// (R2's creat+close, a shell's redirections) costs no `open_link`
    /// and `close_link`: two of the ten kernel entries of a creat+close
    /// (`docs/filesystem-history.md`, "R2 on disk: one round trip"). One only, so
    /// it holds at most one link slot that a program's own `open_link`
    /// might want; it is given up when a link cannot be had without it.
    idle_link: Option<(u64, u32, u32)>,
    /// A regular file closed and not yet told to the monitor: it rides on
    /// the next `open` (`monitor::OP_OPEN`'s word 3), which makes R2's
    /// creat+close one round trip (docs/filesystem-history.md, "R2 on disk:
    /// creat+close again"). Before any other call to the monitor, any use
    /// of a descriptor, any sleep and another close it is sent as an
    /// `OP_CLOSE` call first ([`flush_closes`]), so a close has reached
    /// the monitor before this process next talks to anyone through this
    /// library or sleeps; at the process's end the monitor closes it if it
    /// is left, as for any descriptor.
    deferred: Option<Fd>,
}

static STATE: Mutex<State> = Mutex::new(State {
    monitor: None,
    fds: [Slot::Unknown; MAX_FDS],
    links: Vec::new(),
    idle_link: None,
    deferred: None,
});

/// The program's arguments and environment (set by `_start` from the
/// exec block, see `protocols::unix::exec_args`).
static ARGV: Mutex<(&'static [u8], u32, u32)> = Mutex::new((&[], 0, 0));

/// Set once, before `main`, for a process started by the monitor's exec.
static IS_UNIX: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Is this process a UNIX process (started by the monitor's exec)?
#[inline]
pub fn is_unix_process() -> bool {
    IS_UNIX.load(core::sync::atomic::Ordering::Relaxed)
}

#[doc(hidden)]
pub fn set_exec_block(bytes: &'static [u8]) {
    if let Some((h, strings)) = exec_args::decode(bytes) {
        *ARGV.lock() = (strings, h.argc.max(1), h.envc);
        IS_UNIX.store(true, core::sync::atomic::Ordering::Relaxed);
        // The monitor's heap limit, after the environment (`rlimit`).
        let extra = strings.split(|&b| b == 0).nth(h.argc as usize + h.envc as usize);
        let limit = extra
            .and_then(|s| core::str::from_utf8(s).ok())
            .and_then(|s| s.strip_prefix(ux::rlimit::EXEC_HEAP_LIMIT_PREFIX))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(limit) = limit {
            crate::heap::set_limit(limit);
        }
    }
}

fn strings() -> impl Iterator<Item = &'static str> {
    let (bytes, _, _) = *ARGV.lock();
    bytes.split(|&b| b == 0).map(|s| core::str::from_utf8(s).unwrap_or(""))
}

/// `argv`: the program name, then its arguments.
pub fn args() -> impl Iterator<Item = &'static str> {
    let argc = ARGV.lock().1 as usize;
    strings().take(argc)
}

/// The environment, as `NAME=value` strings.
pub fn env() -> impl Iterator<Item = &'static str> {
    let (_, argc, envc) = *ARGV.lock();
    strings().skip(argc as usize).take(envc as usize)
}

pub fn getenv(name: &str) -> Option<&'static str> {
    env().find_map(|e| e.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')))
}

fn monitor_link() -> Result<Link, Errno> {
    let mut st = STATE.lock();
    if let Some(l) = st.monitor {
        return Ok(l);
    }
    let (pid, queue) = crate::sys::bootstrap(abi::bootstrap::MONITOR).ok_or(errno::ENOSYS)?;
    let l = msg::open_link(pid, Queue(queue)).map_err(from_kernel)?;
    st.monitor = Some(l);
    Ok(l)
}

/// The pause before a request the monitor answered `ERESTART` is sent
/// again (a disk's block driver being restarted; issue 16).
const RESTART_RETRY_NS: u64 = 10_000_000;
/// Most times a request is sent again for `ERESTART` (60 s of pauses):
/// past it, `EIO`. The wait ends sooner when init gives the driver up
/// (the monitor ends the disk's manager, and calls get `EIO`).
const RESTART_RETRIES: u32 = 6_000;

/// One request to the monitor: the reply's words and data length. A
/// request answered `ERESTART` (nothing done: the disk it needs is
/// waiting for its restarted driver) is sent again after a pause. Closes
/// still deferred go first ([`flush_closes`]).
fn monitor_call(request: [u64; 4], data: &[u8], reply: &mut [u8]) -> Result<([u64; 4], usize), Errno> {
    flush_closes();
    monitor_call_now(request, data, reply)
}

/// [`monitor_call`] without the deferred closes.
fn monitor_call_now(request: [u64; 4], data: &[u8], reply: &mut [u8]) -> Result<([u64; 4], usize), Errno> {
    let link = monitor_link()?;
    for _ in 0..RESTART_RETRIES {
        let (words, len) = msg::call(link, &request, data, reply).map_err(from_kernel)?;
        match ux::result(words[0]) {
            Err(errno::ERESTART) => crate::sys::sleep_ns(RESTART_RETRY_NS),
            Err(e) => return Err(e),
            Ok(_) => return Ok((words, len)),
        }
    }
    Err(errno::EIO)
}

fn monitor_word(request: [u64; 4], data: &[u8]) -> Result<u64, Errno> {
    monitor_call(request, data, &mut []).map(|(w, _)| w[0])
}

/// Send the deferred close to the monitor, as an `OP_CLOSE` call (what
/// every close cost before it could ride on an open). One the kernel could
/// not deliver is dropped: the monitor closes the descriptor when the
/// process ends, as it would have if the process had not closed it.
fn flush_closes() {
    let deferred = STATE.lock().deferred.take();
    if let Some(fd) = deferred {
        let _ = monitor_call_now([monitor_ops::OP_CLOSE, fd as u64, 0, 0], &[], &mut []);
    }
}

/// The link for a manager, opened once per (pid, queue).
fn manager_link(st: &mut State, pid: u64, queue: u32) -> Result<Link, Errno> {
    if let Some(&(_, _, l)) = st.links.iter().find(|(p, q, _)| *p == pid && *q == queue) {
        return Ok(Link(l));
    }
    if let Some(idle) = st.idle_link
        && idle.0 == pid
        && idle.1 == queue
    {
        st.idle_link = None;
        st.links.push(idle);
        return Ok(Link(idle.2));
    }
    let l = match msg::open_link(Pid(pid), Queue(queue)) {
        // The idle link holds the slot this one needs: give it up.
        Err(abi::Error::LimitReached) if st.idle_link.is_some() => {
            drop_idle_link(st);
            msg::open_link(Pid(pid), Queue(queue))
        }
        other => other,
    }
    .map_err(from_kernel)?;
    st.links.push((pid, queue, l.0));
    Ok(l)
}

/// Close the idle link, if there is one.
fn drop_idle_link(st: &mut State) {
    if let Some((_, _, l)) = st.idle_link.take() {
        let _ = msg::close_link(Link(l));
    }
}

fn remember(fd: u64, info: FdInfo) -> Result<(Link, FdInfo), Errno> {
    let mut st = STATE.lock();
    let link = manager_link(&mut st, info.manager_pid, info.manager_queue)?;
    if let Some(slot) = st.fds.get_mut(fd as usize) {
        *slot = Slot::Open { link, info };
    }
    Ok((link, info))
}

/// Drop the cached entry of `fd`, and the link it used if no other fd
/// uses it.
fn forget(fd: Fd) {
    let mut st = STATE.lock();
    let Some(slot) = st.fds.get_mut(fd as usize) else { return };
    let old = core::mem::replace(slot, Slot::Unknown);
    if let Slot::Open { link, .. } = old {
        let still_used = st.fds.iter().any(|s| matches!(s, Slot::Open { link: l, .. } if l.0 == link.0));
        if !still_used && let Some(at) = st.links.iter().position(|&(_, _, l)| l == link.0) {
            // Kept as the idle link; the one it replaces is closed.
            let kept = st.links.swap_remove(at);
            drop_idle_link(&mut st);
            st.idle_link = Some(kept);
        }
    }
}

fn fd_entry(fd: Fd) -> Result<(Link, FdInfo), Errno> {
    flush_closes();
    let slot = *STATE.lock().fds.get(usize::try_from(fd).map_err(|_| errno::EBADF)?).ok_or(errno::EBADF)?;
    match slot {
        Slot::Open { link, info } => Ok((link, info)),
        Slot::Closed => Err(errno::EBADF),
        Slot::Unknown => match monitor_call([monitor_ops::OP_FD_INFO, fd as u64, 0, 0], &[], &mut []) {
            Ok((w, _)) => {
                let info = FdInfo::decode([w[1], w[2], w[3]]);
                match remember(fd as u64, info) {
                    // No link to its manager: a terminal manager that ended
                    // and that the monitor has not replaced yet.
                    Err(_) if ux::mode::is_chr(info.file_type) => relink(fd, info.manager_pid),
                    other => other,
                }
            }
            Err(e) => {
                if e == errno::EBADF {
                    STATE.lock().fds[fd as usize] = Slot::Closed;
                }
                Err(e)
            }
        },
    }
}

/// The kernel pid of the manager that serves `fd`. Inode numbers are per
/// manager (per volume), so (manager, `Stat::ino`) names a file as
/// (`st_dev`, `st_ino`) does: `cat`'s "input file is output file".
pub fn fd_manager(fd: Fd) -> Result<u64, Errno> {
    fd_entry(fd).map(|(_, info)| info.manager_pid)
}

fn manager_call(
    fd: Fd,
    request: [u64; 4],
    data: &[u8],
    reply: &mut [u8],
) -> Result<([u64; 4], usize), Errno> {
    let (link, info) = fd_entry(fd)?;
    let mut req = request;
    req[1] = info.handle;
    let answered = match msg::call(link, &req, data, reply) {
        // Its manager ended: a terminal's is restarted (see the top).
        Err(abi::Error::DeadPeer) if ux::mode::is_chr(info.file_type) => {
            let (link, info) = relink(fd, info.manager_pid)?;
            req[1] = info.handle;
            msg::call(link, &req, data, reply)
        }
        other => other,
    };
    let (words, len) = answered.map_err(from_kernel)?;
    ux::result(words[0])?;
    Ok((words, len))
}

/// `fd`'s manager (kernel pid `ended`) has ended: forget every cached
/// descriptor it served and ask the monitor where `fd` goes now
/// (`OP_FD_RELINK`, which for the terminal waits for its new manager).
/// `EIO` when it still names the ended one (a driver's handles died with
/// it).
fn relink(fd: Fd, ended: u64) -> Result<(Link, FdInfo), Errno> {
    forget_manager(ended);
    let (w, _) = monitor_call([monitor_ops::OP_FD_RELINK, fd as u64, ended, 0], &[], &mut [])?;
    // The monitor answers `EIO` itself when `fd` still names the ended
    // manager (and the same manager only when it found it running).
    remember(fd as u64, FdInfo::decode([w[1], w[2], w[3]]))
}

/// Forget the cached descriptors served by `manager` and close the link
/// to it: the next use of each asks the monitor again.
fn forget_manager(manager: u64) {
    let mut st = STATE.lock();
    for slot in st.fds.iter_mut() {
        if matches!(slot, Slot::Open { info, .. } if info.manager_pid == manager) {
            *slot = Slot::Unknown;
        }
    }
    let (gone, kept): (Vec<_>, Vec<_>) = st.links.iter().partition(|(p, _, _)| *p == manager);
    st.links = kept;
    if st.idle_link.is_some_and(|(p, _, _)| p == manager) {
        drop_idle_link(&mut st);
    }
    for (_, _, l) in gone {
        let _ = msg::close_link(Link(l));
    }
}

// --- processes ---

/// `fork()`: 0 in the child, the child's pid in the parent.
pub fn fork() -> Result<u64, Errno> {
    let pid = monitor_word([monitor_ops::OP_FORK, 0, 0, 0], &[])?;
    if pid == 0 {
        ramdriver::after_fork();
        readwin::after_fork();
    }
    Ok(pid)
}

/// `execve()`: returns only on failure.
pub fn execve(path: &str, argv: &[&str], envp: &[&str]) -> Errno {
    let mut block: Vec<u8> = Vec::new();
    for s in core::iter::once(&path).chain(argv).chain(envp) {
        if s.as_bytes().contains(&0) {
            return errno::EINVAL;
        }
        block.extend_from_slice(s.as_bytes());
        block.push(0);
    }
    if block.len() + exec_args::HEADER_BYTES > abi::msg::MAX_DATA_BYTES as usize {
        return errno::E2BIG;
    }
    match monitor_call([monitor_ops::OP_EXEC, argv.len() as u64, envp.len() as u64, 0], &block, &mut []) {
        Ok(_) => errno::EIO, // a successful exec does not reply
        Err(e) => e,
    }
}

/// `execv()` with this process's environment.
pub fn execv(path: &str, argv: &[&str]) -> Errno {
    let env: Vec<&str> = env().collect();
    execve(path, argv, &env)
}

pub fn exit(code: i32) -> ! {
    crate::sys::exit(code as u32)
}

/// How a child ended (`<sys/wait.h>` encoding) and the CPU time it used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitStatus {
    pub raw: u64,
    pub cpu_ns: u64,
}

impl WaitStatus {
    pub fn exit_code(&self) -> Option<u32> {
        ux::wait_status::exit_code(self.raw)
    }
    pub fn signal(&self) -> Option<u64> {
        ux::wait_status::term_signal(self.raw)
    }
}

/// `waitpid(pid, WNOHANG?)`: `pid` of -1 waits for any child. `Ok(None)`
/// with `nohang` when no child has ended yet.
pub fn waitpid(pid: i64, nohang: bool) -> Result<Option<(u64, WaitStatus)>, Errno> {
    let options = if nohang { ux::wait_status::NO_HANG } else { 0 };
    let (w, _) = monitor_call([monitor_ops::OP_WAIT, pid as u64, options, 0], &[], &mut [])?;
    Ok((w[0] != 0).then_some((w[0], WaitStatus { raw: w[1], cpu_ns: w[2] })))
}

/// `getpid()`: one kernel call, no message (Ridge Table 2).
pub fn getpid() -> u64 {
    ux::pid::from_kernel(crate::sys::getpid())
}

pub fn getppid() -> u64 {
    monitor_word([monitor_ops::OP_GETPPID, 0, 0, 0], &[]).unwrap_or(0)
}

pub fn getuid() -> u32 {
    monitor_call([monitor_ops::OP_GETUID, 0, 0, 0], &[], &mut []).map_or(0, |(w, _)| w[0] as u32)
}

/// The real uid: differs from [`getuid`] in a set-user-ID program (`su`)
/// started by another user.
pub fn getruid() -> u32 {
    monitor_call([monitor_ops::OP_GETUID, 0, 0, 0], &[], &mut []).map_or(0, |(w, _)| w[2] as u32)
}

pub fn getgid() -> u32 {
    monitor_call([monitor_ops::OP_GETUID, 0, 0, 0], &[], &mut []).map_or(0, |(w, _)| w[1] as u32)
}

/// `setuid`/`setgid` in one (None = unchanged); root only. Leaving root
/// brings the user limits (`protocols::unix::rlimit`), whose heap limit
/// this process's `sbrk` then keeps.
pub fn setuid_gid(uid: Option<u32>, gid: Option<u32>) -> Result<(), Errno> {
    let u = uid.map_or(u64::MAX, u64::from);
    let g = gid.map_or(u64::MAX, u64::from);
    monitor_word([monitor_ops::OP_SETUID, u, g, 0], &[])?;
    if uid.is_some_and(|u| u != 0) {
        let data = getrlimit(ux::rlimit::RLIMIT_DATA)?.0;
        let space = getrlimit(ux::rlimit::RLIMIT_AS)?.0;
        crate::heap::set_limit(data.min(space));
    }
    Ok(())
}

/// `kill(pid, sig)`: pid ≤ 0 names a process group, as in POSIX.
pub fn kill(pid: i64, sig: u64) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_KILL, pid as u64, sig, 0], &[]).map(|_| ())
}

/// Ignore `sig` (true) or restore its default action; returns whether it
/// was ignored before.
pub fn signal_ignore(sig: u64, ignore: bool) -> Result<bool, Errno> {
    monitor_word([monitor_ops::OP_SIGNAL_IGNORE, sig, ignore as u64, 0], &[]).map(|w| w != 0)
}

/// Catch `sig` (true: it is recorded as pending instead of acted on, for
/// [`signal_pending`]) or restore its default action; returns whether it
/// was caught before.
pub fn signal_catch(sig: u64, catch: bool) -> Result<bool, Errno> {
    monitor_word([monitor_ops::OP_SIGNAL_CATCH, sig, catch as u64, 0], &[]).map(|w| w != 0)
}

/// The caught signals received since the last call (bit n: signal n).
pub fn signal_pending() -> u64 {
    monitor_word([monitor_ops::OP_SIGNAL_PENDING, 0, 0, 0], &[]).unwrap_or(0)
}

/// Replace the whole set of caught signals (bit n: signal n) and take the
/// pending ones, in one call (`OP_SIGNAL_CATCH_SET`): (previous set,
/// pending set).
pub fn signal_catch_set(set: u64) -> Result<(u64, u64), Errno> {
    monitor_call([monitor_ops::OP_SIGNAL_CATCH_SET, set, 0, 0], &[], &mut []).map(|(w, _)| (w[0], w[1]))
}

/// The caught signals received since the last look (bit n: signal n),
/// waiting at the monitor until there is one (`OP_SIGNAL_WAIT`).
pub fn signal_wait() -> Result<u64, Errno> {
    monitor_word([monitor_ops::OP_SIGNAL_WAIT, 0, 0, 0], &[])
}

/// `umask(mask)`: the previous mask; `None` only reads it.
pub fn umask(mask: Option<u32>) -> u32 {
    let (m, read_only) = mask.map_or((0, 1), |m| (u64::from(m), 0));
    monitor_word([monitor_ops::OP_UMASK, m, read_only, 0], &[]).map_or(0o022, |w| w as u32)
}

pub fn setpgid(pid: u64, pgid: u64) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_SETPGID, pid, pgid, 0], &[]).map(|_| ())
}

pub fn getpgrp() -> Result<u64, Errno> {
    monitor_word([monitor_ops::OP_GETPGRP, 0, 0, 0], &[])
}

/// Make `pgid` the foreground group of the terminal open on `fd`, through
/// the monitor, which checks that the terminal is the caller's and the
/// group of its session (POSIX; `monitor::OP_TCSETPGRP`).
pub fn tcsetpgrp(fd: Fd, pgid: u64) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_TCSETPGRP, fd as u64, pgid, 0], &[]).map(|_| ())
}

/// The foreground group of the terminal open on `fd` (`tcgetpgrp`).
pub fn tcgetpgrp(fd: Fd) -> Result<u64, Errno> {
    manager_call(fd, [io::OP_FOREGROUND, 0, 0, 0], &[], &mut []).map(|(w, _)| w[0])
}

/// `setsid()`: a new session (and group) led by the caller, with no
/// controlling terminal. Returns the session id.
pub fn setsid() -> Result<u64, Errno> {
    monitor_word([monitor_ops::OP_SETSID, 0, 0, 0], &[])
}

/// Set the caller's kernel priority above where it started: root only
/// (`monitor::OP_SET_PRIORITY`); lowering needs no one (`sys::set_priority`).
pub fn set_priority(priority: u8) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_SET_PRIORITY, u64::from(priority), 0, 0], &[]).map(|_| ())
}

/// The next line typed on the terminal open on `fd` is not echoed (a
/// password; `protocols::unix::tty::OP_NO_ECHO_LINE`). `ENOTTY` when `fd`
/// is not a terminal (a file or pipe: its bytes are not echoed anyway).
pub fn tty_no_echo_line(fd: Fd) -> Result<(), Errno> {
    let st = fstat(fd)?;
    if st.mode & ux::mode::S_IFMT != ux::mode::S_IFCHR || st.device_queue != ux::tty::QUEUE {
        return Err(errno::ENOTTY);
    }
    manager_call(fd, [ux::tty::OP_NO_ECHO_LINE, 0, 0, 0], &[], &mut []).map(|_| ()).map_err(|_| errno::ENOTTY)
}

/// CPU and elapsed time (`times()`), in ns.
#[derive(Clone, Copy, Debug, Default)]
pub struct Times {
    pub self_cpu_ns: u64,
    pub children_cpu_ns: u64,
    pub uptime_ns: u64,
}

pub fn times() -> Times {
    match monitor_call([monitor_ops::OP_TIMES, 0, 0, 0], &[], &mut []) {
        Ok((w, _)) => Times {
            self_cpu_ns: crate::sys::info(abi::InfoKey::CpuTimeNs),
            children_cpu_ns: w[1],
            uptime_ns: w[2],
        },
        Err(_) => Times { uptime_ns: clock_ns(), ..Times::default() },
    }
}

/// Nanoseconds since boot (monotonic).
pub fn clock_ns() -> u64 {
    crate::sys::info(abi::InfoKey::UptimeNs)
}

/// `clock_gettime(CLOCK_REALTIME)`: nanoseconds since 1970-01-01 00:00
/// UTC, the calendar time the kernel read from the CMOS clock at boot plus
/// the monotonic clock (`abi::InfoKey::BootRealtimeNs`). Without a
/// calendar clock it counts from 1970 at boot.
pub fn clock_realtime_ns() -> u64 {
    crate::sys::info(abi::InfoKey::BootRealtimeNs).saturating_add(clock_ns())
}

/// `time()`: seconds since 1970-01-01 00:00 UTC.
pub fn time() -> u64 {
    clock_realtime_ns() / 1_000_000_000
}

pub fn sleep_ns(ns: u64) {
    flush_closes();
    crate::sys::sleep_ns(ns)
}

/// The process table, for `ps`.
pub fn ps() -> Result<Vec<ProcInfo>, Errno> {
    let mut out = Vec::new();
    let mut index = 0u64;
    let mut buf = [0u8; ProcInfo::BYTES];
    loop {
        let (w, len) = monitor_call([monitor_ops::OP_PS, index, 0, 0], &[], &mut buf)?;
        if len >= ProcInfo::BYTES
            && let Some(p) = ProcInfo::decode(&buf)
        {
            out.push(p);
        }
        if w[0] == 0 {
            return Ok(out);
        }
        index = w[0];
    }
}

/// Set a run-time limit, `name=value` (`pipe=loan`, `pipe.loan_min=16K`,
/// `pipe.loan_cap=8M`: `protocols::unix::pipe::limits`). Root only
/// (`EPERM`); `EINVAL` for an unknown name or a bad value.
pub fn set_limit(setting: &str) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_SET_LIMIT, 0, 0, 0], setting.as_bytes()).map(|_| ())
}

/// The run-time limits and the loan accounting, as `name=value` lines.
pub fn limits() -> Result<String, Errno> {
    let mut buf = [0u8; 512];
    let (_, len) = monitor_call([monitor_ops::OP_LIMITS, 0, 0, 0], &[], &mut buf)?;
    Ok(String::from_utf8_lossy(&buf[..len.min(buf.len())]).into_owned())
}

// --- descriptors ---

/// `open(path, flags, mode)`. The close deferred since the last call to
/// the monitor rides on it (`monitor::OP_OPEN`'s word 3): one round trip
/// for R2's creat+close. A path with a NUL in it is `EINVAL` (a C string
/// ends there).
pub fn open(path: &str, flags: u64, mode: u32) -> Result<Fd, Errno> {
    if path.as_bytes().contains(&0) {
        return Err(errno::EINVAL);
    }
    let closing = STATE.lock().deferred.take();
    let word = closing.map_or(0, |fd| fd as u64 + 1);
    let request = [monitor_ops::OP_OPEN, flags, mode as u64, word];
    let answered = match monitor_link().map(|link| msg::call(link, &request, path.as_bytes(), &mut [])) {
        // Passed on to a disk's (or memfs's) manager, which ended holding
        // it (`fs::OP_OPEN_FORWARDED`): the monitor recorded a descriptor
        // this process never heard of. Say so at once, as the next call
        // (`monitor::OP_OPEN_LOST`; branch `robust`), then answer `EIO`.
        Ok(Err(abi::Error::DeadPeer)) => {
            let _ = monitor_call_now([monitor_ops::OP_OPEN_LOST, 0, 0, 0], &[], &mut []);
            Err(errno::EIO)
        }
        // The rest as [`monitor_call_now`] does it.
        Err(e) => Err(e),
        Ok(Err(e)) => Err(from_kernel(e)),
        Ok(Ok((w, len))) => match ux::result(w[0]) {
            Err(errno::ERESTART) => {
                crate::sys::sleep_ns(RESTART_RETRY_NS);
                monitor_call_now(request, path.as_bytes(), &mut [])
            }
            Err(e) => Err(e),
            Ok(_) => Ok((w, len)),
        },
    };
    if answered.is_err()
        && let Some(fd) = closing
    {
        // Perhaps never delivered: a close of its own makes sure (`EBADF`
        // when the monitor did close it; a failed open takes no fd).
        let _ = monitor_call_now([monitor_ops::OP_CLOSE, fd as u64, 0, 0], &[], &mut []);
    }
    let (w, _) = answered?;
    remember(w[0], FdInfo::decode([w[1], w[2], w[3]]))?;
    Ok(w[0] as Fd)
}

pub fn creat(path: &str, mode: u32) -> Result<Fd, Errno> {
    use ux::open_flags::*;
    open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
}

/// `close(fd)`. A regular file this process knows open is closed at
/// once here and told to the monitor later (`State::deferred`: with the
/// next `open`, or before anything else this process asks); anything else
/// (a pipe's end, a terminal, a socket, an fd not looked up) is a call.
pub fn close(fd: Fd) -> Result<(), Errno> {
    let known = usize::try_from(fd).ok().and_then(|i| STATE.lock().fds.get(i).copied());
    if let Some(Slot::Open { info, .. }) = known
        && ux::mode::is_reg(info.file_type)
    {
        // One rides at a time: an earlier one goes as its own call.
        flush_closes();
        forget(fd);
        // Its read window (a regular file's) goes now, as at any close.
        readwin::forget(fd);
        STATE.lock().deferred = Some(fd);
        return Ok(());
    }
    let r = monitor_word([monitor_ops::OP_CLOSE, fd as u64, 0, 0], &[]);
    forget(fd);
    ramdriver::forget(fd);
    readwin::forget(fd);
    r.map(|_| ())
}

pub fn dup(fd: Fd) -> Result<Fd, Errno> {
    let new = monitor_word([monitor_ops::OP_DUP, fd as u64, 0, 0], &[]).map(|n| n as Fd)?;
    // The new fd may be cached as closed (an earlier `EBADF` on it).
    forget(new);
    Ok(new)
}

pub fn dup2(old: Fd, new: Fd) -> Result<Fd, Errno> {
    let r = monitor_word([monitor_ops::OP_DUP2, old as u64, new as u64, 0], &[]);
    forget(new);
    ramdriver::forget(new);
    readwin::forget(new);
    r.map(|n| n as Fd)
}

/// `pipe()`: (read end, write end).
pub fn pipe() -> Result<(Fd, Fd), Errno> {
    let (w, _) = monitor_call([monitor_ops::OP_PIPE, 0, 0, 0], &[], &mut [])?;
    forget(w[0] as Fd);
    forget(w[1] as Fd);
    Ok((w[0] as Fd, w[1] as Fd))
}

/// The directory manager's kernel pid (0: not asked yet; `u64::MAX`:
/// none), kept so that the question costs no kernel call after the first.
static FS_PID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Is `pid` the directory manager (memfs), from the bootstrap connection?
fn is_directory_manager(pid: u64) -> bool {
    use core::sync::atomic::Ordering::Relaxed;
    let mut fs = FS_PID.load(Relaxed);
    if fs == 0 {
        fs = crate::sys::bootstrap(abi::bootstrap::FS).map_or(u64::MAX, |(p, _)| p.0);
        FS_PID.store(fs, Relaxed);
    }
    fs == pid
}

/// Longest buffer one call lends (`abi::lease::MAX_LEASE_BYTES`).
const MAX_LENT_BYTES: usize = abi::lease::MAX_LEASE_BYTES as usize;

/// Does the manager of this descriptor take a write's bytes through the
/// lease when the message cannot hold them? memfs (files, directories,
/// its `/dev/null` and `/dev/zero`) and the per-file managers (regular
/// files) do; a block device's driver has its own entry ([`block`]); the
/// terminal and pipe managers take at most one message's data per call.
fn takes_lent_writes(info: &FdInfo) -> bool {
    ux::mode::is_reg(info.file_type) || is_directory_manager(info.manager_pid)
}

/// `read()`: up to `buf.len()` bytes; 0 at end of file. One call to the
/// object's manager lends it the whole buffer (up to
/// `abi::lease::MAX_LEASE_BYTES`, more in several calls for a regular
/// file) with word 2 = its length; the manager answers word 0 = the bytes
/// read, having put them either in the reply (at most a page) or straight
/// into the buffer through the lease (`protocols::unix::io::OP_READ`). A
/// terminal returns what it has; a pipe returns what it has in one request
/// for the whole buffer ([`pipe_io`]); a block device has its own rules
/// ([`block`]). A disk file read in order is mostly served from a window
/// of it in this process, one call per window ([`readwin`]).
pub fn read(fd: Fd, buf: &mut [u8]) -> Result<usize, Errno> {
    let (link, info) = fd_entry(fd)?;
    if ux::mode::is_blk(info.file_type) {
        if let Some(r) = ramdriver::read(fd, link, &info, buf) {
            return r;
        }
        return block::read(fd, buf);
    }
    if ux::mode::is_fifo(info.file_type) {
        return pipe_io::read(fd, buf);
    }
    if ux::mode::is_sock(info.file_type) {
        return socket::recv(fd, buf);
    }
    // A regular file, or a device the directory manager serves itself
    // (`/dev/zero`, `/dev/null`: they never wait): read until the buffer is
    // full or the manager gives less (the end).
    let is_file = ux::mode::is_reg(info.file_type) || is_directory_manager(info.manager_pid);
    // A regular file read in order: most reads from a window of it in
    // this process, with no call ([`readwin`]).
    let watch = ux::mode::is_reg(info.file_type)
        && match readwin::read(fd, link, &info, buf) {
            readwin::Attempt::Done(r) => return r,
            readwin::Attempt::Watch => true,
            readwin::Attempt::Plain => false,
        };
    let mut done = 0;
    loop {
        let want = (buf.len() - done).min(MAX_LENT_BYTES);
        let into = &mut buf[done..done + want];
        let (w, _) = manager_call(fd, [io::OP_READ, 0, want as u64, 0], &[], into)?;
        let got = (w[0] as usize).min(want);
        done += got;
        if got < want || !is_file || done == buf.len() {
            if watch && done == buf.len() {
                readwin::note_full(fd, &info);
            }
            return Ok(done);
        }
    }
}

/// `pread(fd, buf, offset_bytes)`: up to `buf.len()` bytes of the file at
/// `offset_bytes`, the descriptor's offset neither used nor moved (POSIX
/// XSH `pread`). One `io::OP_PREAD` per lent buffer's worth, at the
/// manager: `ext2fs`, memfs and the per-file managers (`filemgr`, branch
/// `robust`) answer it in one request, so it is atomic
/// with respect to the other reads and writes of the open file, which a
/// process sharing it (`fork`) relies on (docs/filesystem.md, "Positional
/// I/O and a dead manager's window"). A manager without it (`ENOSYS`: a
/// terminal) and a block device get `lseek`, `read`
/// and `lseek` back ([`pread_by_seeking`]): there another process sharing
/// the open file may see the offset moved meanwhile, and a terminal's
/// `lseek` says `ESPIPE`. A pipe, FIFO or socket is `ESPIPE` (POSIX); an
/// offset beyond `i64::MAX` is `EINVAL`.
pub fn pread(fd: Fd, buf: &mut [u8], offset_bytes: u64) -> Result<usize, Errno> {
    let info = positional_entry(fd, offset_bytes)?;
    if buf.is_empty() {
        return empty_positional(fd);
    }
    if ux::mode::is_blk(info.file_type) {
        return pread_by_seeking(fd, buf, offset_bytes);
    }
    let mut done = 0;
    while done < buf.len() {
        let want = (buf.len() - done).min(MAX_LENT_BYTES);
        let at = offset_bytes.saturating_add(done as u64);
        let into = &mut buf[done..done + want];
        let got = match manager_call(fd, [io::OP_PREAD, 0, want as u64, at], &[], into) {
            Ok((w, _)) => (w[0] as usize).min(want),
            Err(errno::ENOSYS) if done == 0 => return pread_by_seeking(fd, buf, offset_bytes),
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        };
        done += got;
        if got < want {
            break;
        }
    }
    Ok(done)
}

/// The checks [`pread`] and [`pwrite`] share, in Linux's order: the
/// descriptor (`EBADF`), a pipe, FIFO or socket (`ESPIPE`, POSIX), an
/// offset beyond `i64::MAX` (`EINVAL`); the descriptor's record when the
/// call may go on.
fn positional_entry(fd: Fd, offset_bytes: u64) -> Result<FdInfo, Errno> {
    let (_, info) = fd_entry(fd)?;
    if ux::mode::is_fifo(info.file_type) || ux::mode::is_sock(info.file_type) {
        return Err(errno::ESPIPE);
    }
    if offset_bytes > i64::MAX as u64 {
        return Err(errno::EINVAL);
    }
    Ok(info)
}

/// An empty `pread` or `pwrite`: 0 bytes, where the object has an
/// offset. A terminal's server, which answers `OP_PREAD` with `ENOSYS`,
/// was never asked when the buffer was empty, so the call read 0 bytes
/// where Linux (and POSIX) say `ESPIPE` (branch `robust`, utest
/// `posio::ttys_and_sockets_are_espipe`). The question is an `lseek` of
/// 0 from the current offset: it changes nothing at any manager (an
/// empty `OP_PWRITE` would move `ext2fs`'s change generation and make
/// every read window of the file stale for nothing).
fn empty_positional(fd: Fd) -> Result<usize, Errno> {
    lseek(fd, 0, SEEK_CUR).map(|_| 0)
}

/// `pread` where the manager has no `OP_PREAD`: the offset moved and put
/// back (see [`pread`]).
fn pread_by_seeking(fd: Fd, buf: &mut [u8], offset_bytes: u64) -> Result<usize, Errno> {
    let was = lseek(fd, 0, SEEK_CUR)?;
    lseek(fd, offset_bytes as i64, SEEK_SET)?;
    let r = read(fd, buf);
    lseek(fd, was as i64, SEEK_SET)?;
    r
}

/// `pwrite(fd, buf, offset_bytes)`: `buf` written at `offset_bytes`, the
/// descriptor's offset neither used nor moved (POSIX XSH `pwrite`); the
/// bytes written, fewer only when an error stopped it after some. One
/// `io::OP_PWRITE` per lent buffer's worth (a message's worth to a
/// manager that takes no lent writes), answered by `ext2fs` and memfs in
/// one request each, as [`pread`]; a manager without it and a block
/// device get `lseek`, `write` and `lseek` back. On a descriptor opened
/// with `O_APPEND` the bytes go at the end of the file whatever
/// `offset_bytes` says: Linux's behaviour (pwrite(2), "BUGS"), chosen so
/// that programs built for Linux (the Linux server) behave as there;
/// POSIX says they go at the offset. A read window of the file (this
/// process's or another's) is stale once it returns (the manager moves
/// the file's generation before it answers). A pipe, FIFO or socket is
/// `ESPIPE`; an offset beyond `i64::MAX` is `EINVAL`.
pub fn pwrite(fd: Fd, buf: &[u8], offset_bytes: u64) -> Result<usize, Errno> {
    let info = positional_entry(fd, offset_bytes)?;
    if buf.is_empty() {
        return empty_positional(fd);
    }
    if ux::mode::is_blk(info.file_type) {
        return pwrite_by_seeking(fd, buf, offset_bytes);
    }
    let most = if takes_lent_writes(&info) { MAX_LENT_BYTES } else { abi::msg::MAX_DATA_BYTES as usize };
    let mut done = 0;
    while done < buf.len() {
        let chunk = &buf[done..(done + most).min(buf.len())];
        let at = offset_bytes.saturating_add(done as u64);
        match manager_call(fd, [io::OP_PWRITE, 0, chunk.len() as u64, at], chunk, &mut []) {
            Ok((w, _)) if w[0] > 0 => done += (w[0] as usize).min(chunk.len()),
            Ok(_) => return Err(errno::EIO),
            Err(errno::ENOSYS) if done == 0 => return pwrite_by_seeking(fd, buf, offset_bytes),
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(done)
}

/// `pwrite` where the manager has no `OP_PWRITE`: the offset moved and
/// put back (see [`pwrite`]).
fn pwrite_by_seeking(fd: Fd, buf: &[u8], offset_bytes: u64) -> Result<usize, Errno> {
    let was = lseek(fd, 0, SEEK_CUR)?;
    lseek(fd, offset_bytes as i64, SEEK_SET)?;
    let r = write(fd, buf);
    lseek(fd, was as i64, SEEK_SET)?;
    r
}

/// `write()`: all of `buf` unless an error stops it. To a file, one call
/// lending the whole buffer (up to `abi::lease::MAX_LEASE_BYTES` a call):
/// the manager takes the bytes from the message when they fit one, else
/// through the lease, straight into the file (`protocols::unix::io::OP_WRITE`).
/// To a terminal, one message's data per call. To a block device or a
/// pipe, one request for the whole buffer ([`block`], [`pipe_io`]).
pub fn write(fd: Fd, buf: &[u8]) -> Result<usize, Errno> {
    let (link, info) = fd_entry(fd)?;
    if ux::mode::is_blk(info.file_type) {
        if let Some(r) = ramdriver::write(fd, link, &info, buf) {
            return r;
        }
        return block::write(fd, buf);
    }
    if ux::mode::is_fifo(info.file_type) && !buf.is_empty() {
        return broken_pipe_signals(pipe_io::write(fd, buf));
    }
    if ux::mode::is_sock(info.file_type) {
        return broken_pipe_signals(socket::send(fd, buf));
    }
    let most = if takes_lent_writes(&info) { MAX_LENT_BYTES } else { abi::msg::MAX_DATA_BYTES as usize };
    let mut done = 0;
    while done < buf.len() {
        let chunk = &buf[done..(done + most).min(buf.len())];
        match manager_call(fd, [io::OP_WRITE, 0, chunk.len() as u64, 0], chunk, &mut []) {
            Ok((w, _)) if w[0] > 0 => done += (w[0] as usize).min(chunk.len()),
            Ok(_) => return Err(errno::EIO),
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(done)
}

/// POSIX `write()`: "An attempt to write to a pipe or FIFO [or a
/// socket that is no longer connected] ... A SIGPIPE signal shall also be
/// sent to the thread", and the call fails with `EPIPE` only when the
/// signal does not end the process. Ridgeback's signals have only their
/// default action (end the process) and "ignore", and no mask: so a
/// write that found no reader sends SIGPIPE to its own process through
/// the monitor, which ends it there (the `kill` call never returns)
/// unless SIGPIPE is ignored, and then `EPIPE` is returned. A write that
/// moved some bytes before the reader went returns that count, as POSIX
/// says; the next write gets the signal. `socket::send` itself does not
/// signal (as with Linux's `MSG_NOSIGNAL`); `write` on a socket does.
fn broken_pipe_signals(result: Result<usize, Errno>) -> Result<usize, Errno> {
    if result == Err(errno::EPIPE) {
        let _ = kill(getpid() as i64, ux::signal::SIGPIPE);
    }
    result
}

/// `lseek`'s `whence` values, as the protocol defines them.
pub use protocols::unix::io::{SEEK_CUR, SEEK_END, SEEK_SET};

pub fn lseek(fd: Fd, offset: i64, whence: u64) -> Result<u64, Errno> {
    if let Ok((link, info)) = fd_entry(fd)
        && ux::mode::is_blk(info.file_type)
        && let Some(r) = ramdriver::seek(fd, link, &info, offset, whence)
    {
        return r;
    }
    manager_call(fd, [io::OP_SEEK, 0, offset as u64, whence], &[], &mut []).map(|(w, _)| w[0])
}

/// `ftruncate(fd, length)`: cut the regular file open on `fd` (for
/// writing) to `length_bytes`, or grow it with zeros, at its manager
/// (`io::OP_TRUNCATE`). `dd`'s `seek=` needs it, as GNU dd does.
pub fn ftruncate(fd: Fd, length_bytes: u64) -> Result<(), Errno> {
    manager_call(fd, [io::OP_TRUNCATE, 0, length_bytes, 0], &[], &mut []).map(|_| ())
}

/// `fsync(fd)`: what was written to `fd` reaches stable storage. A block
/// device's driver flushes the device's write cache; a file or directory
/// on a disk file system is written by its manager, which then flushes
/// the device (`io::OP_FSYNC`). The memory file system, pipes and
/// terminals hold nothing that could reach a disk: nothing to wait for.
pub fn fsync(fd: Fd) -> Result<(), Errno> {
    sync_fd(fd, 0)
}

/// `fdatasync(fd)`: as [`fsync`]; a manager may write only the data and
/// what is needed to read it back (`io::FSYNC_DATA`).
pub fn fdatasync(fd: Fd) -> Result<(), Errno> {
    sync_fd(fd, io::FSYNC_DATA)
}

fn sync_fd(fd: Fd, how: u64) -> Result<(), Errno> {
    let (_, info) = fd_entry(fd)?;
    if ux::mode::is_blk(info.file_type) {
        return block::fsync(fd);
    }
    if !(ux::mode::is_reg(info.file_type) || ux::mode::is_dir(info.file_type)) {
        return Ok(());
    }
    match manager_call(fd, [io::OP_FSYNC, 0, how, 0], &[], &mut []) {
        // A manager with no disk behind it.
        Err(errno::ENOSYS) => Ok(()),
        other => other.map(|_| ()),
    }
}

/// `sync()`: every mounted disk file system writes what it holds and
/// flushes its device (`monitor_ops::OP_SYNC`).
pub fn sync() -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_SYNC, 0, 0, 0], &[]).map(|_| ())
}

/// Root only: ask init to end the supervised server or driver `name`
/// as a fault would (`monitor_ops::OP_SERVER_KILL`); init starts it again
/// if its line says `restart`. `Ok` means asked: [`server_status`] tells
/// what became of it.
pub fn server_kill(name: &str) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_SERVER_KILL, 0, 0, 0], name.as_bytes()).map(|_| ())
}

/// Root only: ask init to start the boot-image program `name` as a
/// supervised driver (`monitor_ops::OP_SERVER_START`).
pub fn server_start(name: &str) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_SERVER_START, 0, 0, 0], name.as_bytes()).map(|_| ())
}

/// What init's supervisor says of `name` (`protocols::init::OP_STATUS`):
/// [state (`protocols::init::state`), kernel pid (0: not running),
/// restarts so far, quick deaths in a row]. `ENOENT`: init did not start it.
pub fn server_status(name: &str) -> Result<[u64; 4], Errno> {
    let (w, _) = monitor_call([monitor_ops::OP_SUPERVISOR, 0, 0, 0], &[], &mut [])?;
    let link = msg::open_link(abi::Pid(w[1]), msg::Queue(w[2] as u32)).map_err(from_kernel)?;
    let answered = msg::call(link, &[protocols::init::OP_STATUS, 0, 0, 0], name.as_bytes(), &mut []);
    let _ = msg::close_link(link);
    let (words, _) = answered.map_err(from_kernel)?;
    ux::result(words[0])?;
    Ok(words)
}

/// `mount(source, target, options)`: root only (`monitor_ops::OP_MOUNT`).
pub fn mount(source: &str, target: &str, options: &str) -> Result<(), Errno> {
    let mut data = Vec::new();
    for part in [source, target, options] {
        data.extend_from_slice(part.as_bytes());
        data.push(0);
    }
    monitor_word([monitor_ops::OP_MOUNT, 0, 0, 0], &data).map(|_| ())
}

/// The mount table: `source target type options` lines (`monitor_ops::OP_MOUNTS`).
pub fn mounts() -> Result<String, Errno> {
    let mut buf = alloc::vec![0u8; abi::msg::MAX_DATA_BYTES as usize];
    let (_, len) = monitor_call([monitor_ops::OP_MOUNTS, 0, 0, 0], &[], &mut buf)?;
    Ok(String::from_utf8_lossy(&buf[..len.min(buf.len())]).into_owned())
}

/// The disk file systems' counters: `point:name=value` lines
/// (`monitor_ops::OP_FS_STATS`).
pub fn fs_stats() -> Result<String, Errno> {
    let mut buf = alloc::vec![0u8; abi::msg::MAX_DATA_BYTES as usize];
    let (_, len) = monitor_call([monitor_ops::OP_FS_STATS, 0, 0, 0], &[], &mut buf)?;
    Ok(String::from_utf8_lossy(&buf[..len.min(buf.len())]).into_owned())
}

pub fn fstat(fd: Fd) -> Result<Stat, Errno> {
    let mut buf = [0u8; Stat::BYTES];
    manager_call(fd, [io::OP_FSTAT, 0, 0, 0], &[], &mut buf)?;
    Stat::decode(&buf).ok_or(errno::EIO)
}

// --- the name space ---

pub fn stat(path: &str) -> Result<Stat, Errno> {
    let mut buf = [0u8; Stat::BYTES];
    monitor_call([monitor_ops::OP_STAT, 0, 0, 0], path.as_bytes(), &mut buf)?;
    Stat::decode(&buf).ok_or(errno::EIO)
}

pub fn unlink(path: &str) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_UNLINK, 0, 0, 0], path.as_bytes()).map(|_| ())
}

pub fn mkdir(path: &str, mode: u32) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_MKDIR, mode as u64, 0, 0], path.as_bytes()).map(|_| ())
}

pub fn rmdir(path: &str) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_RMDIR, 0, 0, 0], path.as_bytes()).map(|_| ())
}

pub fn rename(old: &str, new: &str) -> Result<(), Errno> {
    let mut data = Vec::with_capacity(old.len() + new.len() + 1);
    data.extend_from_slice(old.as_bytes());
    data.push(0);
    data.extend_from_slice(new.as_bytes());
    monitor_word([monitor_ops::OP_RENAME, 0, 0, 0], &data).map(|_| ())
}

pub fn chdir(path: &str) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_CHDIR, 0, 0, 0], path.as_bytes()).map(|_| ())
}

pub fn chmod(path: &str, mode: u32) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_CHMOD, mode as u64, 0, 0], path.as_bytes()).map(|_| ())
}

pub fn chown(path: &str, uid: u32, gid: u32) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_CHOWN, uid as u64, gid as u64, 0], path.as_bytes()).map(|_| ())
}

pub fn getcwd() -> Result<String, Errno> {
    let mut buf = alloc::vec![0u8; abi::msg::MAX_DATA_BYTES as usize];
    let (_, len) = monitor_call([monitor_ops::OP_GETCWD, 0, 0, 0], &[], &mut buf)?;
    buf.truncate(len);
    String::from_utf8(buf).map_err(|_| errno::EIO)
}

/// One entry of a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub ino: u64,
    pub mode: u32,
}

/// Entry `index` of the directory open on `fd` (`None` past the end).
pub fn readdir(fd: Fd, index: u64) -> Result<Option<DirEntry>, Errno> {
    let mut buf = [0u8; 512];
    let (w, len) = manager_call(fd, [io::OP_READDIR, 0, index, 0], &[], &mut buf)?;
    if w[0] == 0 {
        return Ok(None);
    }
    let (ino, mode, name) = WireDirEntry::decode(&buf[..len]).ok_or(errno::EIO)?;
    Ok(Some(DirEntry { name: String::from_utf8_lossy(name).into_owned(), ino, mode }))
}

/// Every entry of the directory `path`, `.` and `..` included.
pub fn read_dir(path: &str) -> Result<Vec<DirEntry>, Errno> {
    use ux::open_flags::*;
    let fd = open(path, O_RDONLY | O_DIRECTORY, 0)?;
    let mut out = Vec::new();
    let mut result = Ok(());
    for index in 0.. {
        match readdir(fd, index) {
            Ok(Some(e)) => out.push(e),
            Ok(None) => break,
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let _ = close(fd);
    result.map(|_| out)
}

// --- memory ---

/// `sbrk(increment)`: the Ridge way, no message and no kernel call: the
/// break is a pointer in this process, and the VM manager supplies each
/// page of the heap region on first touch. Returns the old break.
pub fn sbrk(increment: i64) -> Result<u64, Errno> {
    crate::heap::sbrk(increment).ok_or(errno::ENOMEM)
}

/// `getrlimit(resource)`: (soft, hard), `rlimit::INFINITY` for none
/// (`protocols::unix::rlimit`).
pub fn getrlimit(resource: u64) -> Result<(u64, u64), Errno> {
    monitor_call([monitor_ops::OP_GETRLIMIT, resource, 0, 0], &[], &mut []).map(|(w, _)| (w[1], w[2]))
}

/// `setrlimit(resource, soft, hard)`. A new heap limit holds for this
/// process's next `sbrk` at once (the break moves with no message).
pub fn setrlimit(resource: u64, soft: u64, hard: u64) -> Result<(), Errno> {
    monitor_word([monitor_ops::OP_SETRLIMIT, resource, soft, hard], &[])?;
    if resource == ux::rlimit::RLIMIT_DATA || resource == ux::rlimit::RLIMIT_AS {
        let data = getrlimit(ux::rlimit::RLIMIT_DATA)?.0;
        let space = getrlimit(ux::rlimit::RLIMIT_AS)?.0;
        crate::heap::set_limit(data.min(space));
    }
    Ok(())
}

/// `brk(addr)`: set the break (see [`sbrk`]); `ENOMEM` outside the heap region.
pub fn brk(addr: u64) -> Result<(), Errno> {
    let current = crate::heap::sbrk(0).ok_or(errno::ENOMEM)?;
    let delta = addr.wrapping_sub(current) as i64;
    crate::heap::sbrk(delta).map(|_| ()).ok_or(errno::ENOMEM)
}
