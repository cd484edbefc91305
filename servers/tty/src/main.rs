//! tty: the console device manager of the UNIX personality (Ridge OS §3:
//! device managers are processes). It sits in front of the console driver
//! (`drivers/console`), takes all typed input from it (`OP_SUBSCRIBE`),
//! runs the line discipline (`unix_core::ldisc`: echo, erase, kill, ^C,
//! ^D) and serves the console to UNIX processes through handles:
//! - `device::OP_OPEN` gives a handle (with the open flags);
//! - `io::OP_READ` answers one line per read, or keeps the call until a
//!   line is typed (several readers wait in order); ^D on an empty line is
//!   end of file (0 bytes) for one read. Only the foreground process
//!   group reads (job control, below);
//! - `io::OP_WRITE` writes through the driver with NL → CR NL;
//! - `io::OP_POLL`: `POLLIN` when a line (or an end of file) is ready,
//!   `POLLOUT` always (writes never wait);
//! - `io::OP_FSTAT` (a character device, `rw--w----`), `io::OP_SEEK`
//!   (`ESPIPE`), `io::OP_READDIR` (`ENOTDIR`), `io::OP_FOREGROUND` (the
//!   foreground process group, which ^C signals: anyone with a handle
//!   reads it, only the monitor sets it), `tty::OP_NO_ECHO_LINE`
//!   (the next line typed is not echoed: a password);
//! - `io::OP_CLOSE` from the monitor only; reads kept on the handle fail
//!   with `EBADF`.
//!
//! ^C is reported to the monitor with a one-way `send` of
//! `monitor::OP_SIGNAL_GROUP`, never a `call`: the monitor calls this
//! manager, so a call back could deadlock them.
//!
//! Job control (POSIX.1-2017 XBD 11.1.4, "Terminal Access Control";
//! docs/reliability.md, "The console and job control"): a read is served
//! only once the manager knows the reader's process group. The kernel
//! stamps each message with its sender's pid, which no process can forge;
//! the manager asks the monitor who that is with a one-way `send` of
//! `monitor::OP_TTY_READER` and keeps the read meanwhile; the monitor
//! answers with a call of `tty::OP_READER` (group and flags). Then:
//! no controlling terminal (not a UNIX process, or a session of its own):
//! `EIO`; the foreground group (or no foreground set yet): served in
//! order; a background group that ignores `SIGTTIN` or is orphaned: `EIO`;
//! one that catches it: `SIGTTIN` to the group and `EINTR`; otherwise
//! `SIGTTIN` to the group (whose default action ends nobody: Ridgeback has
//! no stopped processes) and the read is held, taking no line, until its
//! group is given the terminal (`tcsetpgrp`: the shell's `fg`). Typed
//! lines go only to reads of the foreground group, oldest first.
//!
//! Restarts (docs/reliability.md, "The console and the terminal"): init
//! starts this manager again when it ends (`etc/inittab`: `restart`). A
//! new instance subscribes to the console driver, which gives the input
//! only to the manager init named to it; the monitor registers with it
//! and moves the open descriptions to new handles here. Lost with the old
//! instance: the half-typed line, reads in flight (their callers ask the
//! monitor where the terminal went and read again), the no-echo line and
//! the foreground group (the monitor gives it back to the last group
//! `tcsetpgrp` set, or the session's). When the console driver ends, writes are kept (up to
//! `tty::DOWN_OUTPUT_BYTES`, the rest dropped) until init names the new
//! driver (`tty::OP_SET_CONSOLE`, a one-way message from the starter
//! only); then this manager subscribes to it and writes what it kept.
//!
//! Trust: the monitor registers itself once (`tty::OP_SET_MONITOR`); from
//! then on only it may open and close handles, set the foreground, answer
//! who a reader is and type (`tty::OP_TYPE`, root's `TIOCSTI`). The
//! console driver hands its input to the manager init named to it, so
//! this manager tries its subscription again while it is refused
//! (`console::NOT_THE_OWNER`: init names it just after starting it).
//! Handles are sparse (slot and a random check), so a process cannot use
//! one it was not given.
//! Bad requests get a POSIX errno; nothing a client sends ends this
//! process.
//!
//! What it is not: a terminal with modes (no raw mode, no `termios`), or
//! a manager of more than one line.
//!
//! Arguments: the starter's kernel pid (decimal); its queue 0 gets
//! `[tty::READY, queue, 0, 0]` once input is subscribed.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use abi::msg::{Kind, Message};
use abi::{Error, Pid};
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use protocols::console;
use protocols::net::{POLLIN, POLLOUT};
use protocols::unix::Errno;
use protocols::unix::errno::{
    EAGAIN, EBADF, EBUSY, EINTR, EINVAL, EIO, ENFILE, ENOENT, ENOSYS, ENOTDIR, EPERM, ESPIPE, ESRCH,
};
use protocols::unix::{Stat, device, encode_result, io, mode, monitor, open_flags, signal, tty};
use runtime::msg::{self, Link, Page, Queue, ReplyHandle};
use runtime::{Args, sys};
use unix_core::ldisc::{self, Event, LineDiscipline, Read};

runtime::entry!(main);

/// Handles open at once (all descriptors of all processes share a few:
/// the monitor opens the console once per `OP_START` and `dup`s it).
const MAX_HANDLES: usize = 64;
/// Reads kept waiting at most; the kernel gives this process
/// `QSEG_MESSAGES` reply handles, and one must stay free to receive.
const MAX_PENDING_READS: usize = 64;
const QUEUE_CAPACITY: u64 = 64;
const QSEG_LINKS: u64 = 16;
const QSEG_QUEUES: u64 = 4;
const QSEG_MESSAGES: u64 = 160;
const QSEG_PAGES: u64 = 64;
/// Most bytes one message carries.
const MAX_DATA_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize;
/// Tries at the console driver's subscription, `SUBSCRIBE_PAUSE_NS`
/// apart, while it answers `NOT_THE_OWNER` (init names this manager to
/// the driver just after starting it): a minute at most, however slow
/// the machine is.
const SUBSCRIBE_TRIES: u32 = 6000;
const SUBSCRIBE_PAUSE_NS: u64 = 10_000_000;
/// Tries at a restarted driver's subscription (`tty::OP_SET_CONSOLE`),
/// made while this manager serves nobody else.
const SET_CONSOLE_TRIES: u32 = 100;

fn main(args: Args) -> i32 {
    // The last number among the arguments (plain `spawn` text is just the
    // pid; an exec block would put the program name first).
    let starter = args.iter().filter_map(|s| s.parse::<u64>().ok()).last().map(Pid);
    match start(starter) {
        Ok(mut t) => t.serve(),
        Err(why) => {
            let _ = sys::debug_write(b"tty: cannot start: ");
            let _ = sys::debug_write(why.as_bytes());
            let _ = sys::debug_write(b"\n");
            1
        }
    }
}

/// Set up, subscribe to the driver's input and tell the starter.
fn start(starter: Option<Pid>) -> Result<Tty, &'static str> {
    msg::init_qseg(QSEG_LINKS, QSEG_QUEUES, QSEG_MESSAGES, QSEG_PAGES).map_err(|_| "queue segment")?;
    let queue = msg::open_queue(QUEUE_CAPACITY, true).map_err(|_| "open queue")?;
    if queue.0 != tty::QUEUE {
        return Err("queue is not tty::QUEUE");
    }
    let (driver_pid, driver_queue) = sys::bootstrap(abi::bootstrap::CONSOLE).ok_or("no console driver")?;
    let driver = msg::open_link(driver_pid, Queue(driver_queue)).map_err(|_| "no link to the driver")?;
    subscribe(driver, queue, SUBSCRIBE_TRIES)?;
    if let Some(starter) = starter {
        msg::open_link(starter, Queue(protocols::STARTER_QUEUE))
            .and_then(|l| msg::send(l, &[tty::READY, queue.0 as u64, 0, 0]))
            .map_err(|_| "cannot tell the starter")?;
    }
    Ok(Tty {
        queue,
        driver,
        driver_pid,
        starter,
        down_output: Vec::new(),
        driver_gone: false,
        ldisc: LineDiscipline::new(),
        handles: Handles::new(),
        readers: VecDeque::new(),
        monitor: None,
        foreground: 0,
        quiet_line: false,
        next_token: 1,
    })
}

/// Subscribe to the console driver's input on `queue`, trying again while
/// the driver says this process is not (yet) the one init named.
fn subscribe(driver: Link, queue: Queue, tries: u32) -> Result<(), &'static str> {
    for _ in 0..tries {
        let (reply, _) = msg::call(driver, &[console::OP_SUBSCRIBE, queue.0 as u64, 0, 0], &[], &mut [])
            .map_err(|_| "subscribe call failed")?;
        match reply[0] {
            0 => return Ok(()),
            console::NOT_THE_OWNER => sys::sleep_ns(SUBSCRIBE_PAUSE_NS),
            _ => return Err("the driver refused the subscription"),
        }
    }
    Err("the driver never took this process as the input's owner")
}

/// The monitor, once registered.
#[derive(Clone, Copy)]
struct Monitor {
    pid: Pid,
    link: Link,
}

/// A read kept until a line is typed.
struct PendingRead {
    reply: ReplyHandle,
    handle: u64,
    max_bytes: usize,
    gate: Gate,
    /// The caller, as the kernel stamped it.
    reader: Pid,
}

/// Whose turn a kept read waits for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Gate {
    /// The monitor has not said yet who the reader is: served to nobody.
    Asking { token: u64 },
    /// A reader in this process group: served while it is the foreground.
    Group(u64),
    /// No monitor registered (a test image): anyone, as before job control.
    Anyone,
}

/// What to answer the request just received.
struct Answer {
    words: Message,
    data_len: usize,
}

impl Answer {
    fn result(r: Result<u64, Errno>) -> Answer {
        Answer { words: [encode_result(r), 0, 0, 0], data_len: 0 }
    }
}

struct Tty {
    queue: Queue,
    driver: Link,
    driver_pid: Pid,
    /// init, which names a restarted console driver (`OP_SET_CONSOLE`).
    starter: Option<Pid>,
    /// Output written while the driver did not answer (it ended): kept,
    /// up to `tty::DOWN_OUTPUT_BYTES`, for the next driver.
    down_output: Vec<u8>,
    /// The driver did not answer a write: it has ended.
    driver_gone: bool,
    ldisc: LineDiscipline,
    handles: Handles,
    readers: VecDeque<PendingRead>,
    monitor: Option<Monitor>,
    /// The foreground process group (0 = none set).
    foreground: u64,
    /// `tty::OP_NO_ECHO_LINE`: echo nothing until the line being typed
    /// ends, then CR NL.
    quiet_line: bool,
    /// The token of the next read the monitor is asked about.
    next_token: u64,
}

impl Tty {
    fn serve(&mut self) -> i32 {
        let mut request = Page::zeroed();
        let mut reply_data = Page::zeroed();
        let mut answer: Option<(ReplyHandle, Answer)> = None;
        loop {
            let (handle, words, len) = match &answer {
                Some((h, a)) => (Some(*h), a.words, a.data_len),
                None => (None, [0; 4], 0),
            };
            let received = msg::reply_wait(handle, &words, &reply_data.0[..len], self.queue, &mut request.0);
            answer = None;
            // Data always fits a page; after any other failure the message
            // is still queued or gone: receive again.
            let Ok(r) = received else { continue };
            match r.kind {
                Kind::Short if r.sender == self.driver_pid && r.message[0] == console::INPUT => {
                    self.input(&r.message, &mut reply_data.0);
                }
                Kind::Short if Some(r.sender) == self.starter && r.message[0] == tty::OP_SET_CONSOLE => {
                    self.set_console(Pid(r.message[1]), r.message[2] as u32);
                }
                Kind::Call => {
                    let data = &request.0[..r.len.min(MAX_DATA_BYTES)];
                    let a = self.request(r.sender, r.reply, &r.message, data, &mut reply_data.0);
                    answer = a.map(|a| (r.reply, a));
                }
                // Messages of other kinds, or input not from the driver.
                _ => {}
            }
        }
    }

    /// Typed bytes from the driver.
    fn input(&mut self, m: &Message, scratch: &mut [u8]) {
        let count = (m[1] as usize).min(console::INPUT_BYTES_PER_MESSAGE);
        let mut bytes = [0u8; console::INPUT_BYTES_PER_MESSAGE];
        bytes[..8].copy_from_slice(&m[2].to_le_bytes());
        bytes[8..].copy_from_slice(&m[3].to_le_bytes());
        self.typed(&bytes[..count], scratch);
    }

    /// Bytes typed (from the driver, or root's `TIOCSTI`).
    fn typed(&mut self, bytes: &[u8], scratch: &mut [u8]) {
        let mut echo = Vec::new();
        let mut this_echo = Vec::new();
        for &b in bytes {
            this_echo.clear();
            let event = self.ldisc.input(b, &mut this_echo);
            if !self.quiet_line {
                echo.extend_from_slice(&this_echo);
            } else if matches!(b, b'\r' | b'\n' | ldisc::EOF | ldisc::INTR) {
                self.quiet_line = false;
                echo.extend_from_slice(b"\r\n");
            }
            // A finished line goes to a waiting reader before a later ^C
            // in the same batch could flush it.
            self.complete_reads(scratch);
            if event == Some(Event::Interrupt) {
                self.interrupt();
            }
        }
        if !echo.is_empty() {
            let _ = self.write_to_driver(&echo);
        }
    }

    /// ^C: signal the foreground group through the monitor. Readers keep
    /// waiting (the foreground job, not the reader, is interrupted).
    fn interrupt(&mut self) {
        if let Some(m) = self.monitor
            && self.foreground != 0
        {
            let _ = msg::send(m.link, &[monitor::OP_SIGNAL_GROUP, self.foreground, signal::SIGINT, 0]);
        }
    }

    /// May a kept read behind `gate` take input now? Only the foreground
    /// group's (any group's while no foreground is set: before the first
    /// session, as a terminal without job control).
    fn may_take_input(&self, gate: Gate) -> bool {
        match gate {
            Gate::Anyone => true,
            Gate::Group(g) => self.foreground == 0 || g == self.foreground,
            Gate::Asking { .. } => false,
        }
    }

    /// Answer waiting readers that may take input, oldest first, while
    /// there is input for them. Input is taken only when its reader was
    /// still there: a reader killed while waiting (^C on `cat`) does not
    /// swallow the next line.
    fn complete_reads(&mut self, scratch: &mut [u8]) {
        while self.ldisc.readable()
            && let Some(i) = self.readers.iter().position(|p| self.may_take_input(p.gate))
            && let Some(p) = self.readers.remove(i)
        {
            let peeked = self.ldisc.peek(&mut scratch[..p.max_bytes]);
            let n = match peeked {
                Read::Bytes(n) => n,
                Read::EndOfFile | Read::Nothing => 0,
            };
            // A reader that died is `DeadPeer`, or `BadReplyHandle` once
            // the kernel has given its freed entry to another call.
            let sent = msg::reply(p.reply, &[n as u64, 0, 0, 0], &scratch[..n]);
            if !matches!(sent, Err(Error::DeadPeer | Error::BadReplyHandle)) {
                self.ldisc.consume(peeked);
            }
        }
    }

    /// May the sender of an `io::OP_FOREGROUND` set change the foreground
    /// group (which ^C signals, whoever owns it)? Only the monitor, which
    /// checked the caller's session as POSIX's `tcsetpgrp` does
    /// (`monitor::OP_TCSETPGRP`); before a monitor registers (a test
    /// image), anyone, as for opens.
    fn may_set_foreground(&self, from_monitor: bool) -> Result<(), protocols::unix::Errno> {
        if self.monitor.is_some() && !from_monitor { Err(EPERM) } else { Ok(()) }
    }

    /// A call. `None`: the call is kept and answered later.
    fn request(
        &mut self,
        sender: Pid,
        reply: ReplyHandle,
        m: &Message,
        data: &[u8],
        out: &mut [u8],
    ) -> Option<Answer> {
        let from_monitor = self.monitor.is_some_and(|mon| mon.pid == sender);
        let result = match m[0] {
            tty::OP_SET_MONITOR => self.set_monitor(Pid(m[1]), m[2] as u32),
            device::OP_OPEN => {
                if self.monitor.is_some() && !from_monitor {
                    Err(EPERM)
                } else if !data.is_empty() && data != b"/" {
                    // Nothing lies below the console's device entry.
                    Err(ENOENT)
                } else {
                    self.handles.open(m[1]).ok_or(ENFILE)
                }
            }
            io::OP_READ => return self.read(sender, reply, m[1], m[2], out),
            tty::OP_READER if from_monitor => {
                if self.reader_known(m[1], m[2], m[3], out) {
                    Ok(0)
                } else {
                    Err(ENOENT)
                }
            }
            tty::OP_TYPE if from_monitor => match self.handles.get(m[1]) {
                Some(_) => {
                    self.typed(data, out);
                    Ok(data.len() as u64)
                }
                None => Err(EBADF),
            },
            tty::OP_READER | tty::OP_TYPE => Err(EPERM),
            io::OP_WRITE => match self.handles.get(m[1]) {
                Some(flags) if open_flags::writable(flags) => self.write(data),
                _ => Err(EBADF),
            },
            io::OP_FSTAT => match self.handles.get(m[1]) {
                Some(_) => {
                    let stat = Stat {
                        ino: 1,
                        mode: mode::S_IFCHR | 0o620,
                        nlink: 1,
                        uid: 0,
                        gid: 0,
                        size_bytes: 0,
                        mtime_ns: 0,
                        device_pid: sys::getpid().0,
                        device_queue: tty::QUEUE,
                    };
                    out[..Stat::BYTES].copy_from_slice(&stat.encode());
                    return Some(Answer { words: [0; 4], data_len: Stat::BYTES });
                }
                None => Err(EBADF),
            },
            // `poll`: readable when the line discipline has a line (or an
            // end of file) to hand out; writes never wait.
            io::OP_POLL => match self.handles.get(m[1]) {
                Some(flags) => {
                    let mut r = 0;
                    if open_flags::readable(flags) && self.ldisc.readable() {
                        r |= POLLIN;
                    }
                    if open_flags::writable(flags) {
                        r |= POLLOUT;
                    }
                    Ok(u64::from(r & m[2] as u16))
                }
                None => Err(EBADF),
            },
            io::OP_SEEK => self.handles.get(m[1]).map_or(Err(EBADF), |_| Err(ESPIPE)),
            io::OP_READDIR => self.handles.get(m[1]).map_or(Err(EBADF), |_| Err(ENOTDIR)),
            io::OP_FOREGROUND => match (self.handles.get(m[1]), m[2]) {
                (None, _) => Err(EBADF),
                (Some(_), 0) => Ok(self.foreground),
                (Some(_), 1) => self.may_set_foreground(from_monitor).map(|()| {
                    self.foreground = m[3];
                    // Reads held for the new foreground's turn take
                    // what was typed already.
                    self.complete_reads(out);
                    0
                }),
                (Some(_), _) => Err(EINVAL),
            },
            tty::OP_NO_ECHO_LINE => match self.handles.get(m[1]) {
                Some(_) => {
                    self.quiet_line = true;
                    Ok(0)
                }
                None => Err(EBADF),
            },
            io::OP_CLOSE => {
                if !from_monitor {
                    Err(EPERM)
                } else if self.handles.close(m[1]) {
                    self.fail_reads_on(m[1]);
                    Ok(0)
                } else {
                    Err(EBADF)
                }
            }
            _ => Err(ENOSYS),
        };
        Some(Answer::result(result))
    }

    fn set_monitor(&mut self, pid: Pid, queue: u32) -> Result<u64, Errno> {
        if self.monitor.is_some() {
            return Err(EBUSY);
        }
        match msg::open_link(pid, Queue(queue)) {
            Ok(link) => {
                self.monitor = Some(Monitor { pid, link });
                Ok(0)
            }
            Err(Error::NoSuchProcess | Error::DeadPeer) => Err(ESRCH),
            Err(_) => Err(EINVAL),
        }
    }

    fn read(
        &mut self,
        sender: Pid,
        reply: ReplyHandle,
        handle: u64,
        max: u64,
        out: &mut [u8],
    ) -> Option<Answer> {
        match self.handles.get(handle) {
            Some(flags) if open_flags::readable(flags) => {}
            _ => return Some(Answer::result(Err(EBADF))),
        }
        let max_bytes = (max as usize).min(MAX_DATA_BYTES);
        if max_bytes == 0 {
            return Some(Answer::result(Ok(0)));
        }
        let Some(monitor) = self.monitor else {
            // No monitor (a test image): no job control, as before.
            if self.readers.is_empty() && self.ldisc.readable() {
                let n = match self.ldisc.read(&mut out[..max_bytes]) {
                    Read::Bytes(n) => n,
                    Read::EndOfFile | Read::Nothing => 0,
                };
                return Some(Answer { words: [n as u64, 0, 0, 0], data_len: n });
            }
            if self.readers.len() >= MAX_PENDING_READS {
                return Some(Answer::result(Err(EAGAIN)));
            }
            self.readers.push_back(PendingRead {
                reply,
                handle,
                max_bytes,
                gate: Gate::Anyone,
                reader: sender,
            });
            return None;
        };
        if self.readers.len() >= MAX_PENDING_READS {
            return Some(Answer::result(Err(EAGAIN)));
        }
        // Who is reading: the monitor knows the kernel pid the kernel
        // stamped on this call. Asked one way; the read waits meanwhile.
        let token = self.next_token;
        self.next_token += 1;
        if msg::send(monitor.link, &[monitor::OP_TTY_READER, sender.0, token, 0]).is_err() {
            // The monitor's queue is full: try again.
            return Some(Answer::result(Err(EAGAIN)));
        }
        self.readers.push_back(PendingRead {
            reply,
            handle,
            max_bytes,
            gate: Gate::Asking { token },
            reader: sender,
        });
        None
    }

    /// The monitor's `tty::OP_READER`: the read kept under `token` is by a
    /// process of group `pgid` with `flags` (`monitor::reader`). Serve it
    /// (in turn), hold it for its group's turn, or fail it (XBD 11.1.4).
    /// False when no read waits under `token` (it was closed meanwhile).
    fn reader_known(&mut self, token: u64, pgid: u64, flags: u64, scratch: &mut [u8]) -> bool {
        use monitor::reader::{NO_TERMINAL, ORPHANED, TTIN_CAUGHT, TTIN_IGNORED};
        let Some(i) = self.readers.iter().position(|p| p.gate == Gate::Asking { token }) else {
            return false;
        };
        let fail = |p: &PendingRead, e: Errno| {
            let _ = msg::reply(p.reply, &[encode_result(Err(e)), 0, 0, 0], &[]);
        };
        if flags & NO_TERMINAL != 0 {
            // Not its controlling terminal (or no UNIX process at all).
            if let Some(p) = self.readers.remove(i) {
                fail(&p, EIO);
            }
            return true;
        }
        if self.foreground == 0 || pgid == self.foreground {
            self.readers[i].gate = Gate::Group(pgid);
            self.complete_reads(scratch);
            return true;
        }
        // A background group's read.
        let mut held = self.held_reads();
        if held >= tty::MAX_HELD_READS {
            // Reads whose callers ended (killed while held) make room.
            self.readers.retain(|p| !(matches!(p.gate, Gate::Group(_)) && has_ended(p.reader)));
            held = self.held_reads();
        }
        let Some(i) = self.readers.iter().position(|p| p.gate == Gate::Asking { token }) else { return true };
        if flags & (TTIN_IGNORED | ORPHANED) != 0 || (flags & TTIN_CAUGHT == 0 && held >= tty::MAX_HELD_READS)
        {
            if let Some(p) = self.readers.remove(i) {
                fail(&p, EIO);
            }
            return true;
        }
        if let Some(m) = self.monitor {
            let _ = msg::send(m.link, &[monitor::OP_SIGNAL_GROUP, pgid, signal::SIGTTIN, 0]);
        }
        if flags & TTIN_CAUGHT != 0 {
            if let Some(p) = self.readers.remove(i) {
                fail(&p, EINTR);
            }
        } else {
            // As if stopped: it waits for its group's turn.
            self.readers[i].gate = Gate::Group(pgid);
        }
        true
    }

    /// Reads held for a group that is not the foreground.
    fn held_reads(&self) -> usize {
        self.readers.iter().filter(|p| matches!(p.gate, Gate::Group(g) if g != self.foreground)).count()
    }

    /// Output-process `data` and write it; the reply counts `data`'s bytes.
    fn write(&mut self, data: &[u8]) -> Result<u64, Errno> {
        let mut processed = Vec::new();
        self.ldisc.output(data, &mut processed);
        self.write_to_driver(&processed)?;
        Ok(data.len() as u64)
    }

    fn write_to_driver(&mut self, bytes: &[u8]) -> Result<(), Errno> {
        if self.driver_gone {
            // Keep the order: wait for the next driver.
            self.keep_while_down(bytes);
            return Ok(());
        }
        for (i, chunk) in bytes.chunks(MAX_DATA_BYTES).enumerate() {
            match msg::call(self.driver, &[console::OP_WRITE, 0, 0, 0], chunk, &mut []) {
                Ok((reply, _)) if reply[0] == chunk.len() as u64 => {}
                // The driver has ended (init starts another): what was not
                // written waits for it, and the writer carries on.
                Err(Error::DeadPeer | Error::NoSuchProcess | Error::BadLink) => {
                    self.driver_gone = true;
                    self.keep_while_down(&bytes[i * MAX_DATA_BYTES..]);
                    return Ok(());
                }
                _ => return Err(EIO),
            }
        }
        Ok(())
    }

    /// Keep output for the next driver, up to `tty::DOWN_OUTPUT_BYTES`;
    /// the rest is dropped (as a serial line with nobody at it drops it).
    fn keep_while_down(&mut self, bytes: &[u8]) {
        let room = tty::DOWN_OUTPUT_BYTES.saturating_sub(self.down_output.len());
        self.down_output.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// init's `tty::OP_SET_CONSOLE`: the console driver was started again.
    /// Subscribe to its input, write through it, and write what was kept.
    fn set_console(&mut self, pid: Pid, queue: u32) {
        let Ok(link) = msg::open_link(pid, Queue(queue)) else { return };
        // init named this manager to the new driver before telling it here,
        // so the first try normally succeeds; a few more cover a reorder.
        if subscribe(link, self.queue, SET_CONSOLE_TRIES).is_err() {
            let _ = msg::close_link(link);
            return;
        }
        let _ = msg::close_link(self.driver);
        self.driver = link;
        self.driver_pid = pid;
        self.driver_gone = false;
        let kept = core::mem::take(&mut self.down_output);
        let _ = self.write_to_driver(&kept);
    }

    /// The monitor closed `handle`: reads kept on it fail.
    fn fail_reads_on(&mut self, handle: u64) {
        let err = encode_result(Err(EBADF));
        self.readers.retain(|p| {
            if p.handle == handle {
                let _ = msg::reply(p.reply, &[err, 0, 0, 0], &[]);
                false
            } else {
                true
            }
        });
    }
}

/// Whether process `pid` has ended (a link to it is refused as to a
/// process that is gone).
fn has_ended(pid: Pid) -> bool {
    match msg::open_link(pid, Queue(0)) {
        Ok(l) => {
            let _ = msg::close_link(l);
            false
        }
        Err(e) => matches!(e, Error::NoSuchProcess | Error::DeadPeer),
    }
}

/// Open handles: `slot | check << SLOT_BITS`, the check random and never 0.
struct Handles {
    slots: [Option<(u32, u64)>; MAX_HANDLES],
    random: Random,
}

const SLOT_BITS: u32 = 8;

impl Handles {
    fn new() -> Handles {
        Handles { slots: [None; MAX_HANDLES], random: Random::new() }
    }

    /// A new handle with open `flags`; `None` when the table is full.
    fn open(&mut self, flags: u64) -> Option<u64> {
        let slot = self.slots.iter().position(Option::is_none)?;
        let check = (self.random.next() as u32).max(1);
        self.slots[slot] = Some((check, flags));
        Some(slot as u64 | (check as u64) << SLOT_BITS)
    }

    fn slot_of(&self, handle: u64) -> Option<usize> {
        let slot = (handle & ((1 << SLOT_BITS) - 1)) as usize;
        let check = handle >> SLOT_BITS;
        match self.slots.get(slot) {
            Some(Some((c, _))) if *c as u64 == check => Some(slot),
            _ => None,
        }
    }

    /// The open flags of `handle`, if it is open.
    fn get(&self, handle: u64) -> Option<u64> {
        self.slot_of(handle).and_then(|s| self.slots[s]).map(|(_, flags)| flags)
    }

    fn close(&mut self, handle: u64) -> bool {
        match self.slot_of(handle) {
            Some(s) => {
                self.slots[s] = None;
                true
            }
            None => false,
        }
    }
}

/// splitmix64, seeded from the time-stamp counter and the pid: handle
/// checks need to be unguessable by other processes, not cryptographic.
struct Random(u64);

impl Random {
    fn new() -> Random {
        Random(sys::rdtsc() ^ sys::getpid().0.rotate_left(29))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15) ^ sys::rdtsc();
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
