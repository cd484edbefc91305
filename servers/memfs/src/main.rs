//! memfs: the memory file system for `/`, one server process that is
//! Ridge's directory manager, volume and file data at once (Ridge OS §3).
//! The files live in this process's heap and are lost at power-off. The
//! tree and the decoding of every request are `unix_core::memfs` (`Fs`,
//! `Service`), host-tested; this file holds the kernel calls: queues,
//! boot modules, the clock and the receive-reply loop.
//!
//! It serves two queues (the `fs` and `io` operation numbers overlap, so
//! one queue could not tell them apart):
//! - `fs::QUEUE` (0): the directory manager (`fs::*`), and
//!   `device::OP_OPEN` for the `/dev/null` it makes and serves itself;
//! - `fs::IO_QUEUE` (1): `io::*` on the handles it gave out. The replies
//!   to `fs::OP_OPEN` and `device::OP_OPEN` say so in word 1.
//!
//! Who may ask what: `fs::OP_LOOKUP`, and `io` read, write, seek, pread,
//! pwrite (at an offset, the handle's own untouched: one request, so a
//! forked process sharing it never sees it move), fstat
//! and readdir, from anyone (a handle is the capability: sparse numbers
//! with a random check). Every other `fs` operation, `device::OP_OPEN` and
//! `io::OP_CLOSE` only from the starter or from the monitor the starter
//! names once with `fs::OP_SET_MONITOR`.
//!
//! What it is not: a permission checker (the monitor checks modes and
//! ids, Ridge §3) nor a path normaliser (the monitor sends absolute,
//! normalised paths; others get `EINVAL`).
//!
//! At start it makes `/bin`, `/etc`, `/dev`, `/tmp` (01777), `/home`,
//! `/root` (0700), copies every boot module into the tree (`etc.<name>`
//! becomes `/etc/<name>`, mode 0644; any other `/bin/<name>`, mode 0755;
//! not `abi::session::KEY_MODULE`, init's secret),
//! makes `/dev/null`, and sends its starter `[fs::READY, fs::QUEUE, 0, 0]`.
//!
//! Invariants: one reply per call; bad input (unknown operations, bad
//! handles, non-UTF-8 paths, callers without the right) gets an errno
//! reply, and messages that are not calls are dropped: nothing a client
//! sends makes it panic or exit.
//!
//! Arguments: the starter's kernel pid, in decimal.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use abi::msg::{DEFAULT_LINKS, DEFAULT_MESSAGES, DEFAULT_QUEUES, Kind};
use abi::{InfoKey, Pid};
use protocols::unix::Errno;
use protocols::unix::errno::{self, EIO};
use protocols::unix::{fs, open_flags};
use runtime::msg::{self, Link, Page, Queue, ReplyHandle};
use runtime::{Args, println, sys};
use unix_core::lease::Lent;
use unix_core::memfs::{Fs, MESSAGE_DATA_BYTES, Service, module_destination};

runtime::entry!(main);

// The most file data memfs holds is `fs::CAPACITY_BYTES`. It also takes
// at most the boot modules' bytes (the programs and `/etc` it copies at
// start, which the system cannot run without) plus a quarter of the
// memory free when it starts for the files written later, and never more
// than half of that free memory in all: its heap pages
// come from the kernel on first touch, and a touch the kernel cannot
// satisfy would end memfs, so a full file system must answer `ENOSPC`
// well before that. (Before, the modules counted against the quarter, and
// a test image 30 KiB larger than main's no longer fitted the 64 MiB
// low-memory boot: `memfs: boot module etc.shadow not copied: ENOSPC`.)
/// The part of free memory the files written after the start may take
/// (1 / this), beyond the boot modules.
const FREE_MEMORY_SHARE: u64 = 4;
/// The part of free memory all file data may take, boot modules included
/// (1 / this): in a machine too small for the boot image the copy stops
/// at `ENOSPC` with memory to spare, never at a heap page the kernel
/// cannot give (which would end memfs).
const MOST_MEMORY_SHARE: u64 = 2;
/// Messages each queue holds; a caller finding it full gets `QueueFull`.
const QUEUE_MESSAGES: u64 = 128;
/// Data pages the queue segment may hold for waiting requests.
const QUEUE_PAGES: u64 = 128;
/// Longest boot-module name copied into the tree: one name of a path.
const MAX_MODULE_NAME_BYTES: usize = protocols::unix::MAX_NAME_BYTES;

use runtime::clock::Clock;

fn main(args: Args) -> i32 {
    // Before anything else, so that the fs queue is queue 0.
    let queues = open_queues();
    let Some(starter) = args.get(0).and_then(|s| s.parse::<u64>().ok()).map(Pid) else {
        println!("memfs: no starter pid in the arguments");
        return 1;
    };
    let (fs_queue, io_queue) = match queues {
        Ok(q) => q,
        Err(why) => {
            println!("memfs: cannot open its queues: {why}");
            return 2;
        }
    };
    let me = sys::getpid();
    let clock = Clock::new();
    let capacity_bytes = match sys::info(InfoKey::FreeMemoryBytes) {
        0 => fs::CAPACITY_BYTES,
        free => (free / FREE_MEMORY_SHARE)
            .saturating_add(module_bytes())
            .min(free / MOST_MEMORY_SHARE)
            .min(fs::CAPACITY_BYTES),
    };
    let mut fs = Fs::new(sys::rdtsc() ^ me.0, capacity_bytes);
    // File times are calendar time (the CMOS clock read at boot plus uptime).
    fs.set_now(clock.realtime_ns());
    let mut service = Service::new(fs, starter.0);
    service.set_own_pid(me.0);
    if let Err(e) = service.make_standard_tree(me.0) {
        println!("memfs: cannot build the tree: {}", errno::name(e));
        return 3;
    }
    let mut buf = Page::zeroed();
    load_modules(&mut service.fs, &mut buf.0);
    let ready = msg::open_link(starter, Queue(protocols::STARTER_QUEUE)).and_then(|l| {
        let sent = msg::send(l, &[fs::READY, fs::QUEUE as u64, 0, 0]);
        let _ = msg::close_link(l);
        sent
    });
    if ready.is_err() {
        return 4;
    }
    serve(&mut service, &clock, fs_queue, io_queue)
}

/// The one queue of the protocol: `fs` and `io` requests share it (their
/// operation numbers do not overlap), so `reply_wait` serves both.
fn open_queues() -> Result<(Queue, Queue), &'static str> {
    let capacity = match msg::init_qseg(DEFAULT_LINKS, DEFAULT_QUEUES, 2 * QUEUE_MESSAGES, QUEUE_PAGES) {
        Ok(()) => 2 * QUEUE_MESSAGES,
        Err(_) => DEFAULT_MESSAGES,
    };
    let queue = msg::open_queue(capacity, true).map_err(|e| e.name())?;
    if queue.0 != fs::QUEUE || queue.0 != fs::IO_QUEUE {
        return Err("queue numbers are not the protocol's");
    }
    Ok((queue, queue))
}

/// The bytes of every boot module (index 0 up to the first error), each
/// rounded up to whole pages as the tree stores them.
fn module_bytes() -> u64 {
    let page = abi::layout::PAGE_SIZE;
    let mut name = [0u8; MAX_MODULE_NAME_BYTES + 1];
    let mut total = 0u64;
    let mut index = 0u64;
    while let Ok((size_bytes, _)) = sys::module_info(index, &mut name) {
        total = total.saturating_add(size_bytes.div_ceil(page) * page);
        index += 1;
    }
    total
}

/// Copy every boot module into the tree (index 0 up to the first error).
/// A module that cannot be copied is reported and left out, never half
/// there.
fn load_modules(fs: &mut Fs, buf: &mut [u8; MESSAGE_DATA_BYTES]) {
    let mut name_buf = [0u8; MAX_MODULE_NAME_BYTES + 1];
    let mut index = 0u64;
    while let Ok((size_bytes, name_len)) = sys::module_info(index, &mut name_buf) {
        let name = name_buf.get(..name_len).and_then(|n| core::str::from_utf8(n).ok());
        match name {
            // init's secret (abi::session), never a file: a UNIX process
            // could read it there and forge the session's end.
            Some(abi::session::KEY_MODULE) => {}
            Some(name) if name_len <= MAX_MODULE_NAME_BYTES => {
                if let Err(e) = copy_module(fs, index, name, size_bytes, buf) {
                    println!("memfs: boot module {name} not copied: {}", errno::name(e));
                }
            }
            _ => println!("memfs: boot module {index} has no usable name; not copied"),
        }
        index += 1;
    }
}

fn copy_module(fs: &mut Fs, index: u64, name: &str, size_bytes: u64, buf: &mut [u8]) -> Result<(), Errno> {
    let (file, perm) = module_destination(name)?;
    let flags = open_flags::O_CREAT | open_flags::O_EXCL | open_flags::O_WRONLY;
    let (handle, _) = fs.open(&file, flags, perm, 0, 0)?;
    let copied = copy_module_data(fs, handle, index, size_bytes, buf);
    let _ = fs.close(handle);
    if copied.is_err() {
        let _ = fs.unlink(&file);
    }
    copied
}

fn copy_module_data(
    fs: &mut Fs,
    handle: u64,
    index: u64,
    size_bytes: u64,
    buf: &mut [u8],
) -> Result<(), Errno> {
    let mut offset = 0;
    while offset < size_bytes {
        let n = sys::module_read(index, offset, buf).map_err(|_| EIO)?;
        if n == 0 {
            return Err(EIO);
        }
        fs.write(handle, &buf[..n])?;
        offset += n as u64;
    }
    Ok(())
}

/// Receive, answer, repeat: one `reply_wait` per request (the answer to
/// the last request and the wait for the next in one kernel entry).
/// A forwarded open (`fs::OP_OPEN_FORWARDED`) that failed here: its call
/// goes back to the monitor that passed it (`monitor_pid`, the reported
/// sender) with `monitor::OP_OPEN_DECLINED` (word 1 = the errno, the
/// request's data unchanged), which opens the usual way and answers.
/// Err: it could not be passed (the caller is answered with the error).
fn pass_back(
    back: &mut Option<(Pid, u64, Link)>,
    monitor_pid: Pid,
    call: ReplyHandle,
    e: Errno,
    data: &[u8],
) -> Result<(), abi::Error> {
    use protocols::unix::monitor;
    let queue = fs::Forwarded::decode(data).map_or(monitor::QUEUE as u64, |(f, _)| f.monitor_queue);
    let link = match *back {
        Some((p, q, l)) if p == monitor_pid && q == queue => l,
        _ => {
            if let Some((_, _, old)) = back.take() {
                let _ = msg::close_link(old);
            }
            let l = msg::open_link(monitor_pid, Queue(queue as u32))?;
            *back = Some((monitor_pid, queue, l));
            l
        }
    };
    let words = [monitor::OP_OPEN_DECLINED, protocols::unix::encode_result(Err(e)), 0, 0];
    msg::forward(call, link, &words, data)
}

fn serve(service: &mut Service, clock: &Clock, queue: Queue, _io_queue: Queue) -> i32 {
    let mut rx = Page::zeroed();
    let mut tx = Page::zeroed();
    let mut answer: Option<(ReplyHandle, [u64; 4], usize)> = None;
    // The link on which declined forwarded opens go back to the monitor.
    let mut back: Option<(Pid, u64, Link)> = None;
    loop {
        let received = match answer.take() {
            Some((h, words, len)) => msg::reply_wait(Some(h), &words, &tx.0[..len], queue, &mut rx.0),
            None => msg::reply_wait(None, &[0; 4], &[], queue, &mut rx.0),
        };
        let Ok(r) = received else { continue };
        // Only calls can be answered; anything else is dropped.
        if r.kind != Kind::Call {
            continue;
        }
        let data = &rx.0[..r.len.min(rx.0.len())];
        let (words, len) = if r.message[0] == protocols::heap::OP_HEAP_STATS {
            let (in_use, heap) = runtime::heap_stats();
            ([in_use, heap, 0, 0], 0)
        } else if r.message[0] < fs::OP_LOOKUP {
            let mut lent = CallLease(r.reply);
            service.io_request(r.sender.0, r.message, data, clock.realtime_ns(), &mut tx.0, &mut lent)
        } else {
            service.fs_request(r.sender.0, r.message, data, clock.realtime_ns(), &mut tx.0)
        };
        if let Some(e) = service.take_declined()
            && pass_back(&mut back, r.sender, r.reply, e, data).is_ok()
        {
            continue;
        }
        answer = Some((r.reply, words, len));
    }
}

/// The buffers a call lent, reached with `lease_read`/`lease_write` on its
/// reply handle until the reply (a read's or write's bytes go straight
/// between the file's pages and the caller's buffer).
struct CallLease(ReplyHandle);

impl Lent for CallLease {
    fn read_parts(&mut self, offset: u64, parts: &mut [&mut [u8]]) -> Result<(), Errno> {
        runtime::lease::read_parts(self.0, offset, parts, 0).map_err(lease_errno)
    }

    fn write_parts(&mut self, offset: u64, parts: &[&[u8]]) -> Result<(), Errno> {
        runtime::lease::write_parts(self.0, offset, parts, 0).map_err(lease_errno)
    }
}

/// A lease call's error as the caller's errno: its buffer not there is
/// `EFAULT`, a length past the buffer lent `EINVAL`, a caller gone `EIO`.
fn lease_errno(e: abi::Error) -> Errno {
    match e {
        abi::Error::BadAddress => errno::EFAULT,
        abi::Error::InvalidArgument => errno::EINVAL,
        _ => EIO,
    }
}
