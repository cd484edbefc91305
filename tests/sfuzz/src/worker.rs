//! The worker: a forked child of the coordinator that drops to an
//! unprivileged user, finds every target ([`resolve`]) and sends one
//! batch of [`plan::message`]s, telling the coordinator how far it got
//! (kernel `send`s to the coordinator's queue, which never wait).
//!
//! Invariant: every fuzzed message goes through `msg::raw`, so no buffer
//! is touched by this process (a bad pointer reaches the kernel as it is)
//! and nothing here dereferences an address from a plan.

use crate::plan::{self, Buf, Fill, How, Msg, OWN_BYTES, PATHS, TARGETS, Word};
use crate::report::{DONE, DOOMED, DOOMED_ENDS, PROGRESS, Report, TIMING};
use abi::{Call, Error, Pid};
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::{FdInfo, monitor, signal};
use runtime::msg::{self, Link, Queue};
use runtime::{println, sys, unix};

/// A doomed child is killed after 0 to this many yields of the worker...
const DOOMED_YIELDS_MAX: u64 = 3;
/// ... or, one time in this many, after a sleep (to the next tick).
const DOOMED_SLEEP_ONE_IN: u64 = 16;

/// The unprivileged user the worker becomes.
pub const FUZZ_UID: u32 = 1000;
/// The monitor's place in [`TARGETS`].
const MONITOR: usize = 0;

/// The descriptors the coordinator opened for one batch (as root), which
/// the worker inherits; `None` where that object does not exist here.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fds {
    pub file: Option<i32>,
    pub dir: Option<i32>,
    pub null: Option<i32>,
    pub pipe_read: Option<i32>,
    pub pipe_write: Option<i32>,
    pub disk_file: Option<i32>,
    pub vda: Option<i32>,
    pub ram0: Option<i32>,
    pub udp: Option<i32>,
    pub tcp: Option<i32>,
}

/// A reachable target: the link to its server and the handle requests name.
#[derive(Clone, Copy, Debug)]
struct Target {
    link: u64,
    handle: u64,
}

/// The monitor's `OP_FD_INFO` for `fd`.
fn fd_info(monitor_link: Link, fd: i32) -> Option<FdInfo> {
    let (w, _) = msg::call(monitor_link, &[monitor::OP_FD_INFO, fd as u64, 0, 0], &[], &mut []).ok()?;
    protocols::unix::result(w[0]).ok()?;
    Some(FdInfo::decode([w[1], w[2], w[3]]))
}

fn bootstrap(slot: u64) -> Option<Link> {
    let (pid, queue) = sys::bootstrap(slot)?;
    msg::open_link(pid, Queue(queue)).ok()
}

fn by_fd(monitor_link: Link, fd: Option<i32>) -> Option<Target> {
    let info = fd_info(monitor_link, fd?)?;
    let link = msg::open_link(Pid(info.manager_pid), Queue(info.manager_queue)).ok()?;
    Some(Target { link: link.0 as u64, handle: info.handle })
}

/// Every target of [`TARGETS`], in its order.
fn resolve(fds: &Fds) -> Vec<Option<Target>> {
    let Some(monitor_link) = bootstrap(abi::bootstrap::MONITOR) else { return vec![None; TARGETS.len()] };
    let file = by_fd(monitor_link, fds.file);
    let plain = |slot: u64, handle: u64| bootstrap(slot).map(|l| Target { link: l.0 as u64, handle });
    // The terminal: standard output's handle when the terminal serves it.
    let tty_pid = sys::bootstrap(abi::bootstrap::TTY).map(|(p, _)| p.0);
    let tty = match fd_info(monitor_link, 1) {
        Some(info) if Some(info.manager_pid) == tty_pid => by_fd(monitor_link, Some(1)),
        _ => plain(abi::bootstrap::TTY, 0),
    };
    let targets = vec![
        Some(Target { link: monitor_link.0 as u64, handle: 0 }),
        plain(abi::bootstrap::FS, file.map_or(0, |f| f.handle)),
        by_fd(monitor_link, fds.dir),
        by_fd(monitor_link, fds.null),
        plain(abi::bootstrap::VM, 0),
        tty,
        plain(abi::bootstrap::CONSOLE, 0),
        by_fd(monitor_link, fds.pipe_read),
        by_fd(monitor_link, fds.pipe_write),
        by_fd(monitor_link, fds.disk_file),
        by_fd(monitor_link, fds.vda),
        by_fd(monitor_link, fds.ram0),
        by_fd(monitor_link, fds.udp),
        by_fd(monitor_link, fds.tcp),
        file,
    ];
    debug_assert_eq!(targets.len(), TARGETS.len());
    targets
}

/// What the worker's memory offers the plans: two buffers of its own,
/// its code and the heap's break.
struct Memory {
    send: Vec<u8>,
    recv: Vec<u8>,
    dir: &'static str,
}

impl Memory {
    /// The bytes of `fill` in the send buffer; returns their length.
    fn fill(&mut self, len: usize, fill: Fill) -> usize {
        let path = |i: usize| PATHS[i % PATHS.len()];
        match fill {
            Fill::Path(i) => self.path_into(path(i), 0, usize::MAX),
            Fill::PathCut(i, n) => {
                // A path of the worker's own is cut only after its
                // directory and at a character boundary: a cut inside
                // `/tmp/sfuzz.PID` named (and made) entries of the shared
                // `/tmp` (`/tmp/s`, `/tmp/sfuz`: the 60-minute soak found
                // them left over), and a name cut inside a character could
                // not be removed by name at the end.
                let p = path(i);
                match p.strip_prefix('%') {
                    Some(tail) => {
                        let mut cut = n.min(tail.len());
                        while !tail.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        self.path_into(&p[..1 + cut], 0, usize::MAX)
                    }
                    None => self.path_into(p, 0, n),
                }
            }
            Fill::PathPair(a, b) => {
                let end = self.path_into(path(a), 0, usize::MAX);
                let end = if end < OWN_BYTES {
                    self.send[end] = 0;
                    end + 1
                } else {
                    end
                };
                self.path_into(path(b), end, usize::MAX)
            }
            Fill::Zeros => {
                self.send[..len].fill(0);
                len
            }
            Fill::Random(seed) => {
                let mut r = plan::Rng::new(seed);
                for chunk in self.send[..len].chunks_mut(8) {
                    let bytes = r.next().to_le_bytes();
                    chunk.copy_from_slice(&bytes[..chunk.len()]);
                }
                len
            }
        }
    }

    /// `path` with `%` replaced by the worker's directory, at `at`, cut at
    /// `most` bytes; returns where it ends.
    fn path_into(&mut self, path: &str, at: usize, most: usize) -> usize {
        let mut end = at;
        for part in path.split_inclusive('%') {
            for piece in [
                part.trim_end_matches('%').as_bytes(),
                if part.ends_with('%') { self.dir.as_bytes() } else { b"" },
            ] {
                let n = piece.len().min(OWN_BYTES - end).min(most.saturating_sub(end - at));
                self.send[end..end + n].copy_from_slice(&piece[..n]);
                end += n;
            }
        }
        end
    }

    /// (address, length) of a buffer.
    fn place(&mut self, buf: Buf, is_send: bool) -> (u64, u64) {
        let own = if is_send { self.send.as_ptr() as u64 } else { self.recv.as_mut_ptr() as u64 };
        match buf {
            Buf::Empty => (0, 0),
            Buf::Own(len, fill) => {
                let len = len.min(OWN_BYTES);
                let len = if is_send { self.fill(len, fill) } else { len };
                (own, len as u64)
            }
            Buf::Unmapped(len) => (0xdead_0000, len as u64),
            Buf::Kernel(len) => (0xffff_ffff_8010_0000, len as u64),
            Buf::NonCanonical(len) => (0x8000_0000_0000_1000, len as u64),
            Buf::Text(len) => (run as *const () as u64, len as u64),
            Buf::PastBreak(len) => (unix::sbrk(0).unwrap_or(0) + (1 << 20), len as u64),
            Buf::Straddle(len) => (own + (OWN_BYTES - len / 2) as u64, len as u64),
            Buf::TooLong => (own, abi::lease::MAX_LEASE_BYTES + 1),
        }
    }
}

fn resolve_word(w: Word, target: Target, targets: &[Option<Target>]) -> u64 {
    match w {
        Word::Value(v) => v,
        Word::Handle => target.handle,
        Word::HandleXor(bits) => target.handle ^ bits,
        Word::HandleOf(i) => targets.get(i).copied().flatten().map_or(0, |t| t.handle),
    }
}

/// How the kernel answered one message.
#[derive(PartialEq, Eq)]
enum Sent {
    /// It reached the server (a call answered, a message queued).
    Delivered,
    /// The kernel refused it (a bad buffer, a full queue, ...).
    Refused,
    /// A code the kernel does not define: a kernel bug, the run fails.
    Undefined,
}

/// What became of the doomed children, and where their time went.
#[derive(Default)]
struct DoomedStats {
    fork_ns: u64,
    delay_ns: u64,
    reap_ns: u64,
    /// Ended by the kill (mid-call, or before the call was made).
    killed: u64,
    /// Their call was answered first; they exited.
    finished: u64,
}

/// Send one message.
fn send_one(
    m: &Msg,
    target: Target,
    targets: &[Option<Target>],
    mem: &mut Memory,
    r: &mut plan::Rng,
    stats: &mut DoomedStats,
) -> Sent {
    let words = [
        m.op,
        resolve_word(m.words[0], target, targets),
        resolve_word(m.words[1], target, targets),
        resolve_word(m.words[2], target, targets),
    ];
    let (send_at, send_len) = mem.place(m.send, true);
    let (recv_at, recv_len) = mem.place(m.recv, false);
    let rax = match m.how {
        How::Call => {
            msg::raw(Call::Call as u64, [target.link, send_at, send_len, recv_at, recv_len, 0], words).rax
        }
        How::Send => msg::raw(Call::Send as u64, [target.link, 0, 0, 0, 0, 0], words).rax,
        How::SendData => {
            let len = send_len.min(abi::msg::MAX_DATA_BYTES);
            msg::raw(Call::SendData as u64, [target.link, send_at, len, 0, 0, 0], words).rax
        }
        How::Doomed => {
            let started = unix::clock_ns();
            match unix::fork() {
                Ok(0) => {
                    let args = [target.link, send_at, send_len, recv_at, recv_len, 0];
                    msg::raw(Call::Call as u64, args, words);
                    unix::exit(0);
                }
                Ok(child) => {
                    // Let the call reach the server (or not), then end the
                    // caller under it. Yields, not a sleep: a sleep lasts
                    // to the next timer tick (`TICK_MS`, 10 ms), by when
                    // nine in ten calls had been answered and the child
                    // had exited (measured: 396 of 3,591 killed), at
                    // 8 ms a message. A few yields let the child reach its
                    // call, or its server, or neither; one in
                    // `DOOMED_SLEEP_ONE_IN` still sleeps a tick, so that
                    // a waiting call is parked in its server first.
                    let forked = unix::clock_ns();
                    if r.below(DOOMED_SLEEP_ONE_IN) == 0 {
                        unix::sleep_ns(r.below(2_000_000));
                    } else {
                        for _ in 0..r.below(DOOMED_YIELDS_MAX + 1) {
                            sys::yield_now();
                        }
                    }
                    let slept = unix::clock_ns();
                    let _ = unix::kill(child as i64, signal::SIGKILL);
                    let ended = unix::waitpid(child as i64, false);
                    let reaped = unix::clock_ns();
                    stats.fork_ns += forked.saturating_sub(started);
                    stats.delay_ns += slept.saturating_sub(forked);
                    stats.reap_ns += reaped.saturating_sub(slept);
                    match ended {
                        Ok(Some((_, status))) if status.signal().is_some() => stats.killed += 1,
                        _ => stats.finished += 1,
                    }
                }
                Err(_) => {}
            }
            0
        }
    };
    if (rax as i64) >= 0 {
        Sent::Delivered
    } else if Error::from_raw(rax.wrapping_neg()).is_some() {
        Sent::Refused
    } else {
        Sent::Undefined
    }
}

/// Put the worker's working directory back inside `dir` (its own) when a
/// fuzzed `chdir` took it out. The paths of [`PATHS`] are absolute or
/// start in `dir`, but a buffer of random bytes, the worker's code or the
/// bytes around its buffers can be a relative name (`x`, `U`, `Z?`), and
/// after `chdir("/tmp")` (or `%/..`) such a name was made in the shared
/// `/tmp` and outlived the run: seed 44015, batch 0 (its messages 59 and
/// 321) left `/tmp/x` (`REGRESSIONS` in `main.rs`). Called at the start
/// and after every `chdir` sent to the monitor, so that every doomed child
/// starts inside too. When `dir` is gone (the worker may remove it), `/`,
/// where the worker may make nothing.
fn stay_inside(dir: &str) {
    let is_inside =
        |cwd: &str| cwd.strip_prefix(dir).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
    match unix::getcwd() {
        Ok(cwd) if is_inside(&cwd) => {}
        _ => {
            if unix::chdir(dir).is_err() {
                let _ = unix::chdir("/");
            }
        }
    }
}

/// The worker's life: become unprivileged, send `count` messages of
/// `batch`, report, exit. Exit status 0, or 3 when the kernel gave an
/// undefined answer.
pub fn run(
    seed: u64,
    ops: u64,
    batch: u64,
    count: u64,
    fds: &Fds,
    report: &Report,
    dir: &'static str,
) -> i32 {
    // Its own process group (so a fuzzed kill of "my group" reaches only
    // it and its children) and an ordinary user (so the monitor's and the
    // servers' permission checks are what is fuzzed, not root's power).
    let _ = unix::setpgid(0, 0);
    if unix::setuid_gid(Some(FUZZ_UID), Some(FUZZ_UID)).is_err() {
        println!("sfuzz: the worker cannot become uid {FUZZ_UID}");
        return 4;
    }
    stay_inside(dir);
    let resolve_started = unix::clock_ns();
    let targets = resolve(fds);
    let resolve_ns = unix::clock_ns().saturating_sub(resolve_started);
    let (mut doomed_ns, mut other_ns) = (0u64, 0u64);
    let mut stats = DoomedStats::default();
    let Ok(to_coordinator) = msg::open_link(report.pid, report.queue) else { return 5 };
    let mut mem = Memory { send: vec![0x5a; OWN_BYTES], recv: vec![0xa5; OWN_BYTES], dir };
    let mut r = plan::Rng::new(seed ^ batch);
    // Counts, as the reports carry them: sent, and doomed | delivered << 32.
    let (mut sent, mut doomed, mut delivered) = (0u64, 0u64, 0u64);
    for index in 0..count {
        if index % 4 == 0 {
            let _ = msg::send(to_coordinator, &[PROGRESS, index, sent, doomed | delivered << 32]);
        }
        let m = plan::message(seed, batch, index, ops);
        let Some(target) = targets[m.target] else { continue };
        let send_started = unix::clock_ns();
        let sent_how = send_one(&m, target, &targets, &mut mem, &mut r, &mut stats);
        if m.target == MONITOR && m.op == monitor::OP_CHDIR {
            stay_inside(dir);
        }
        let send_ns = unix::clock_ns().saturating_sub(send_started);
        if m.how == How::Doomed {
            doomed_ns += send_ns;
        } else {
            other_ns += send_ns;
        }
        match sent_how {
            Sent::Delivered if m.how != How::Doomed => delivered += 1,
            Sent::Delivered => {}
            Sent::Refused => {}
            Sent::Undefined => {
                println!(
                    "sfuzz: the kernel answered an undefined code to message {index} of batch {batch}: {m:?}"
                );
                return 3;
            }
        }
        sent += 1;
        doomed += u64::from(m.how == How::Doomed);
    }
    let reachable = targets.iter().enumerate().fold(0u64, |bits, (i, t)| bits | (t.is_some() as u64) << i);
    let _ = msg::send(to_coordinator, &[TIMING, resolve_ns, doomed_ns, other_ns]);
    let _ = msg::send(to_coordinator, &[DOOMED, stats.fork_ns, stats.delay_ns, stats.reap_ns]);
    let _ = msg::send(to_coordinator, &[DOOMED_ENDS, stats.killed, stats.finished, 0]);
    let _ = msg::send(to_coordinator, &[DONE, sent, doomed | delivered << 32, reachable]);
    0
}
