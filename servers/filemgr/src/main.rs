//! filemgr: a file manager, one process per open regular file (Ridge OS
//! §3: "each open file has its own file manager process whose data space
//! is the file's contents"). The monitor starts one when a regular file is
//! opened and no manager holds it yet (boot option
//! `monitor.files=per-file`), and every open of that file shares it:
//! - `filemgr::OP_ATTACH` (monitor only, once): read the whole file through
//!   a handle open at the directory manager (memfs) into this process's
//!   memory, in big reads that memfs writes through the lease;
//! - `filemgr::OP_OPEN` (monitor only): a new handle, with its own offset
//!   and flags (`O_TRUNC` empties the contents);
//! - `io` READ, WRITE, SEEK, PREAD, PWRITE and FSTAT from whoever holds
//!   a handle, served from memory without the directory manager (PREAD
//!   and PWRITE at the offset they name, the handle's untouched, in one
//!   request: a forked sharer never sees the offset move, which the
//!   runtime's `lseek` fallback let it see before branch `robust`);
//!   READDIR is `ENOTDIR`,
//!   FOREGROUND `ENOTTY`, anything else `ENOSYS`;
//! - `io::OP_CLOSE` (monitor only): drops a handle. At the last one the
//!   changes go back to memfs (its `io::OP_TRUNCATE` when the length
//!   changed, then `OP_SEEK` + `OP_WRITE` for each run of changed pages),
//!   the reply says `[result, filemgr::CLOSED_LAST, 0, 0]`, and the manager
//!   forgets the file and waits, idle, for the monitor to attach another
//!   (an open then starts no process); when the write-back failed it exits
//!   with status 1.
//!
//! The rules themselves are `unix_core::filedata` (host-tested); this file
//! holds the kernel calls: the queue, the clock, the calls to memfs and
//! the receive-reply loop.
//!
//! What it is not: a permission checker (the monitor checks modes before
//! it opens a handle here) nor the owner of the memfs handle (the monitor
//! closes that after the last close).
//!
//! Invariants: one reply per call; bad input (unknown operations, bad
//! handles, callers without the right) gets an errno reply and messages
//! that are not calls are dropped: nothing a client sends makes it panic
//! or exit. Memory is taken fallibly and within a share of the memory free
//! when the file is attached (a page the kernel could not supply on first
//! touch would end the process and lose the file's changes).
//!
//! Arguments: the monitor's kernel pid (decimal; the last number among the
//! arguments). The monitor's queue 1 gets `[filemgr::READY, queue, 0, 0]`.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use abi::msg::{DEFAULT_LINKS, DEFAULT_MESSAGES, DEFAULT_QUEUES, Kind};
use abi::{Error, InfoKey, Pid};
use alloc::vec::Vec;
use protocols::unix::errno::{EAGAIN, EINVAL, EIO, EISDIR, ENOMEM, ESRCH};
use protocols::unix::io::SEEK_SET;
use protocols::unix::{Stat, encode_result, filemgr, fs, io, mode, result};
use runtime::msg::{self, Link, Page, Queue, ReplyHandle};
use runtime::{Args, sys};
use unix_core::filedata::{Errno, FileData, FileManager, Limits, PAGE_BYTES, Step};
use unix_core::lease::Lent;

runtime::entry!(main);

/// Messages the queue holds; a caller finding it full gets `QueueFull`.
const QUEUE_MESSAGES: u64 = 128;
/// Data pages the queue segment may hold for waiting requests (writes).
const QUEUE_PAGES: u64 = 128;
/// The largest file: memfs's own capacity, past which it could not take
/// the file back anyway.
const MAX_FILE_BYTES: u64 = fs::CAPACITY_BYTES;
/// The part of the memory free at attach time the contents may take (1 /
/// this), so the heap's pages can always be had when first touched.
const FREE_MEMORY_SHARE: u64 = 4;
/// Bytes moved per call to memfs when loading and writing back.
const TRANSFER_BYTES: usize = 256 * 1024;
/// Times a call to memfs is retried while its queue is full.
const QUEUE_FULL_RETRIES: u32 = 1000;

use runtime::clock::Clock;

fn main(args: Args) -> i32 {
    // The last number among the arguments: plain `spawn` text gives just
    // the pid, an exec block gives the program name first.
    let Some(monitor) = args.iter().filter_map(|s| s.parse::<u64>().ok()).last().map(Pid) else {
        let _ = sys::debug_write(b"filemgr: no monitor pid given\n");
        return 1;
    };
    // Room for many clients' writes at once (each holds a data page).
    let capacity = match msg::init_qseg(DEFAULT_LINKS, DEFAULT_QUEUES, QUEUE_MESSAGES, QUEUE_PAGES) {
        Ok(()) => QUEUE_MESSAGES,
        Err(_) => DEFAULT_MESSAGES,
    };
    let Ok(queue) = msg::open_queue(capacity, true) else { return 2 };
    if queue.0 != filemgr::QUEUE {
        return 2;
    }
    let ready = msg::open_link(monitor, Queue(protocols::unix::monitor::START_QUEUE)).and_then(|l| {
        let sent = msg::send(l, &[filemgr::READY, queue.0 as u64, 0, 0]);
        let _ = msg::close_link(l);
        sent
    });
    if ready.is_err() {
        return 4;
    }
    let seed = sys::rdtsc() ^ sys::getpid().0.rotate_left(17);
    let mut server = Server {
        monitor: monitor.0,
        manager: FileManager::new(monitor.0, seed),
        backing: None,
        clock: Clock::new(),
    };
    server.serve(queue)
}

/// The file at the directory manager: a link to its queue and the handle
/// the monitor opened there for reading and writing.
struct Backing {
    link: Link,
    handle: u64,
    /// The handle's offset at memfs, when known (a seek is skipped when a
    /// write goes where the last one ended).
    offset_bytes: Option<u64>,
}

impl Backing {
    /// One `io` call on the handle: reply word 0 as a result, and the bytes
    /// of reply data in `reply`.
    fn call(&self, op: u64, w2: u64, w3: u64, data: &[u8], reply: &mut [u8]) -> Result<(u64, usize), Errno> {
        let message = [op, self.handle, w2, w3];
        let mut tries = 0;
        loop {
            match msg::call(self.link, &message, data, reply) {
                Ok((words, len)) => return result(words[0]).map(|v| (v, len)),
                // memfs is busy: its queue empties as it works.
                Err(Error::QueueFull) if tries < QUEUE_FULL_RETRIES => {
                    tries += 1;
                    sys::yield_now();
                }
                Err(Error::QueueFull) => return Err(EAGAIN),
                Err(Error::DeadPeer | Error::NoSuchProcess) => return Err(ESRCH),
                Err(_) => return Err(EIO),
            }
        }
    }

    /// Write `bytes` at `offset_bytes` in one call (memfs takes them
    /// through the lease when they do not fit the message).
    fn write_at(&mut self, offset_bytes: u64, bytes: &[u8]) -> Result<(), Errno> {
        self.seek(offset_bytes)?;
        self.offset_bytes = None;
        let (n, _) = self.call(io::OP_WRITE, bytes.len() as u64, 0, bytes, &mut [])?;
        if n != bytes.len() as u64 {
            return Err(EIO);
        }
        self.offset_bytes = Some(offset_bytes + n);
        Ok(())
    }

    fn seek(&mut self, offset_bytes: u64) -> Result<(), Errno> {
        if self.offset_bytes != Some(offset_bytes) {
            self.offset_bytes = None;
            let (at, _) = self.call(io::OP_SEEK, offset_bytes, SEEK_SET, &[], &mut [])?;
            if at != offset_bytes {
                return Err(EIO);
            }
            self.offset_bytes = Some(at);
        }
        Ok(())
    }
}

struct Server {
    monitor: u64,
    manager: FileManager,
    /// Set once `OP_ATTACH` has loaded the file.
    backing: Option<Backing>,
    clock: Clock,
}

impl Server {
    /// Receive, answer, repeat: one `reply_wait` per request (the answer
    /// to the last request and the wait for the next in one kernel entry).
    /// Returns the exit status after the last close.
    fn serve(&mut self, queue: Queue) -> i32 {
        let mut rx = Page::zeroed();
        let mut tx = Page::zeroed();
        let mut answer: Option<(ReplyHandle, [u64; 4], usize)> = None;
        loop {
            let received = match answer.take() {
                Some((h, words, len)) => msg::reply_wait(Some(h), &words, &tx.0[..len], queue, &mut rx.0),
                None => msg::reply_wait(None, &[0; 4], &[], queue, &mut rx.0),
            };
            // Data always fits a page; after any other failure the message
            // is still queued or gone: receive again.
            let Ok(r) = received else { continue };
            if r.kind != Kind::Call {
                continue;
            }
            let data = &rx.0[..r.len.min(PAGE_BYTES)];
            // File times are calendar time (`Clock::realtime_ns`).
            let now_ns = self.clock.realtime_ns();
            let mut lent = CallLease(r.reply);
            match self.manager.request(r.sender.0, r.message, data, now_ns, &mut tx.0, &mut lent) {
                Step::Reply(words, len) => answer = Some((r.reply, words, len)),
                Step::Attach { fs_pid, fs_queue, fs_handle } => {
                    let loaded = self.attach(Pid(fs_pid), Queue(fs_queue), fs_handle, &mut rx);
                    answer = Some((r.reply, [encode_result(loaded), 0, 0, 0], 0));
                }
                Step::CloseLast => {
                    let written = self.write_back();
                    let words = [encode_result(written.map(|()| 0)), filemgr::CLOSED_LAST, 0, 0];
                    if written.is_err() {
                        let _ = msg::reply(r.reply, &words, &[]);
                        return 1;
                    }
                    // Idle, for the monitor to give another file: the
                    // memory the contents held stays mapped for the next.
                    self.detach();
                    answer = Some((r.reply, words, 0));
                }
            }
        }
    }

    /// Forget the file (written back): free its pages and the link to
    /// memfs, and take the next `OP_ATTACH` as a fresh manager.
    fn detach(&mut self) {
        if let Some(b) = self.backing.take() {
            let _ = msg::close_link(b.link);
        }
        let seed = sys::rdtsc() ^ sys::getpid().0.rotate_left(17);
        self.manager = FileManager::new(self.monitor, seed);
    }

    /// `OP_ATTACH`: load the file through memfs handle `handle` on
    /// `fs_queue` of `fs_pid`. Returns the bytes loaded. On failure nothing
    /// is kept, so the monitor may try again.
    fn attach(&mut self, fs_pid: Pid, fs_queue: Queue, handle: u64, buf: &mut Page) -> Result<u64, Errno> {
        let link = msg::open_link(fs_pid, fs_queue).map_err(|e| match e {
            Error::NoSuchProcess | Error::DeadPeer => ESRCH,
            Error::OutOfResources | Error::LimitReached => EAGAIN,
            _ => EINVAL,
        })?;
        let mut backing = Backing { link, handle, offset_bytes: None };
        match load(&mut backing, buf) {
            Ok((stat, data)) => {
                let size_bytes = data.size_bytes();
                self.manager.attached(stat, data);
                self.backing = Some(backing);
                Ok(size_bytes)
            }
            Err(e) => {
                let _ = msg::close_link(link);
                Err(e)
            }
        }
    }

    /// After the last close: give memfs the changes. Cut or set the length
    /// first (when it changed), then write the changed pages, each run of
    /// consecutive ones in one call (gathered into a buffer of up to
    /// [`TRANSFER_BYTES`] that memfs reads through the lease).
    fn write_back(&mut self) -> Result<(), Errno> {
        let (Some(data), Some(backing)) = (self.manager.data(), self.backing.as_mut()) else {
            return Ok(()); // never attached: nothing to give back
        };
        if !data.is_modified() {
            return Ok(());
        }
        for len_bytes in data.length_steps() {
            backing.call(io::OP_TRUNCATE, len_bytes, 0, &[], &mut [])?;
        }
        let mut run: Vec<u8> = Vec::new();
        run.try_reserve_exact(TRANSFER_BYTES).map_err(|_| ENOMEM)?;
        let mut run_at = 0u64;
        for (offset_bytes, bytes) in data.dirty_pages() {
            let follows = run_at + run.len() as u64 == offset_bytes;
            if !run.is_empty() && (!follows || run.len() + bytes.len() > TRANSFER_BYTES) {
                backing.write_at(run_at, &run)?;
                run.clear();
            }
            if run.is_empty() {
                run_at = offset_bytes;
            }
            run.extend_from_slice(bytes);
        }
        if !run.is_empty() {
            backing.write_at(run_at, &run)?;
        }
        if let Some(d) = self.manager.data_mut() {
            d.mark_clean();
        }
        Ok(())
    }
}

/// Pages the contents may take: a share of the memory free now, and no
/// more than the largest file needs.
fn page_budget() -> u64 {
    let most = MAX_FILE_BYTES / PAGE_BYTES as u64;
    match sys::info(InfoKey::FreeMemoryBytes) {
        0 => most,
        free => (free / FREE_MEMORY_SHARE / PAGE_BYTES as u64).min(most),
    }
}

/// The file's Stat and contents, read through `backing` from offset 0 to
/// its end, [`TRANSFER_BYTES`] per call (memfs writes them through the
/// lease on `buf`).
fn load(backing: &mut Backing, buf: &mut Page) -> Result<(Stat, FileData), Errno> {
    let (_, len) = backing.call(io::OP_FSTAT, 0, 0, &[], &mut buf.0)?;
    let stat = buf.0.get(..len).and_then(Stat::decode).ok_or(EIO)?;
    if !mode::is_reg(stat.mode) {
        return Err(if mode::is_dir(stat.mode) { EISDIR } else { EINVAL });
    }
    let mut data = FileData::new(Limits { max_size_bytes: MAX_FILE_BYTES, max_pages: page_budget() });
    data.reserve(stat.size_bytes)?;
    if stat.size_bytes == 0 {
        // Nothing to read: an empty (or just created) file costs no call.
        backing.offset_bytes = Some(0);
        return Ok((stat, data));
    }
    backing.seek(0)?;
    let mut chunk: Vec<u8> = Vec::new();
    let chunk_bytes = (stat.size_bytes as usize).clamp(PAGE_BYTES, TRANSFER_BYTES);
    chunk.try_reserve_exact(chunk_bytes).map_err(|_| ENOMEM)?;
    chunk.resize(chunk_bytes, 0);
    let mut offset_bytes = 0u64;
    loop {
        backing.offset_bytes = None;
        let (n, _) = backing.call(io::OP_READ, chunk.len() as u64, 0, &[], &mut chunk)?;
        if n == 0 {
            break;
        }
        let n = (n as usize).min(chunk.len());
        data.load(offset_bytes, &chunk[..n])?;
        offset_bytes += n as u64;
        backing.offset_bytes = Some(offset_bytes);
    }
    backing.offset_bytes = Some(offset_bytes);
    Ok((stat, data))
}

/// The buffers a call lent, reached with `lease_read`/`lease_write` on its
/// reply handle until the reply: a read's or write's bytes go straight
/// between this process's pages (the file) and the caller's buffer.
struct CallLease(ReplyHandle);

impl Lent for CallLease {
    fn read_parts(&mut self, offset: u64, parts: &mut [&mut [u8]]) -> Result<(), Errno> {
        runtime::lease::read_parts(self.0, offset, parts, 0).map_err(lease_errno)
    }

    fn write_parts(&mut self, offset: u64, parts: &[&[u8]]) -> Result<(), Errno> {
        runtime::lease::write_parts(self.0, offset, parts, 0).map_err(lease_errno)
    }
}

/// A lease call's error as the caller's errno (as memfs's).
fn lease_errno(e: Error) -> Errno {
    match e {
        Error::BadAddress => protocols::unix::errno::EFAULT,
        Error::InvalidArgument => EINVAL,
        _ => EIO,
    }
}
