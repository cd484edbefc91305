//! ramdisk: the RAM disk driver, `/dev/ram0`, a user process (seed 000:
//! Newman's RAMDRIVER against DEC's PDDRIVER, Info-VAX, April 1988).
//!
//! The disk is this process's own memory: `ramdisk.size=` bytes (default
//! 64 MiB; `K`/`M`/`G` suffixes; `0`: no disk, the driver says so in its
//! READY message and ends), page aligned, allocated and touched at start.
//! It serves `device::OP_OPEN`, the `io` requests READ, WRITE, SEEK,
//! FSTAT, FSYNC and CLOSE, `block::OP_STATS` and `block::OP_MAP`, as
//! `protocols::unix::block` documents, with the rules of
//! `unix_core::blockdev` (whole blocks, `EINVAL` for anything else).
//!
//! Two modes (`ramdisk.mode=`, the default of every open; one open can ask
//! for the other with the rest of its path: `/dev/ram0/pddriver`,
//! `/dev/ram0/ramdriver`):
//! - **pddriver**: DEC's PDDRIVER. The driver moves the data itself with
//!   one `lease_read`/`lease_write` per request with
//!   `abi::lease::BYTE_AT_A_TIME`: the kernel copies a byte at a time
//!   through a one-page window, with interrupts off and the kernel held
//!   for the whole request, as IOC$MOVFRUSER/IOC$MOVTOUSER copied "a byte
//!   a time, remapping the one page window when the buffer crosses a page
//!   boundary ... at driver fork IPL, which happens to match IPL$_SYNCH".
//!   Requests are served strictly one at a time.
//! - **ramdriver** (default): Newman's RAMDRIVER. The client asks
//!   `OP_MAP` once per open, makes this driver the pager of a window in its
//!   own address space (the lock page, then the disk), and from then on
//!   copies in its own context, in bulk, under the readers-writer lock of
//!   the lock page (`block::ram_lock`): the seed's kernel-mode AST "in the
//!   context of the issuing process" with its MUTEX of "multiple read
//!   lockers, and a single write locker". This driver only grants the
//!   window (resolving its page faults with the disk's own pages, shared)
//!   and keeps the lock honest: it gives out the slots and clears a slot's
//!   reader byte and writer word when its handle is closed, which the
//!   monitor also does when the process dies, so a client killed in the
//!   middle of a copy never leaves the lock held. It is also the lock's
//!   wait queue (the seed's MUTEX put waiters to sleep): a client that
//!   spun long enough calls `OP_LOCK_WAIT`, the driver keeps the call and
//!   answers it once it has taken the lock for the caller, and releasers
//!   send `OP_LOCK_WAKE` while the lock page's waiters word (kept here)
//!   is not 0 (`ram_lock` gives the protocol and why no wake-up is lost).
//!
//! Opens that cannot map (more than `ram_lock::SLOTS` mapped at once, a
//! second process sharing a mapped handle, a pager region the client
//! could not set) use plain READ, WRITE and SEEK, which this driver
//! serves while holding the lock as its writer (`DRIVER_WRITER`), READ and
//! WRITE with bulk leases, so its copies and its moves of a handle's
//! offset word never overlap a client's. The driver never waits for the
//! lock in a way that stops it reading its queue: a request that cannot
//! have the lock yet stays in `pending` (counted in the waiters word, so
//! the release wakes the driver) while messages (a page fault of the
//! lock's holder, the close of a dead one) are served.
//!
//! What it is not: a cache or a file system; nothing here is persistent.
//!
//! Arguments: the pid of the process to tell when it is ready (init), as
//! for every driver.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use abi::layout::PAGE_SIZE;
use abi::msg::Kind;
use abi::{Error, Pid, lease, pager};
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;
use core::mem::offset_of;
use core::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use protocols::unix::block::{self, ram_lock};
use protocols::unix::{Errno, device, errno, io};
use runtime::msg::{self, Queue, ReplyHandle};
use runtime::{Args, println, sys};
use unix_core::blockdev::{Opens, Transfer};

runtime::entry!(main);

const PAGE_BYTES: usize = PAGE_SIZE as usize;
/// `ramdisk.size=` when absent: the 64 MiB.
const DEFAULT_SIZE_BYTES: u64 = 64 << 20;
/// The device's name in `OP_STATS` (its entry is `/dev/ram0`).
const NAME: &str = "ram0";
/// The writer word while this driver copies for a READ or WRITE: above
/// every slot + 1, so no client takes it for its own.
const DRIVER_WRITER: u32 = ram_lock::SLOTS as u32 + 1;
/// The capacity of the request queue.
const QUEUE_CAPACITY: u64 = 64;
/// READ, WRITE and SEEK requests held at once (beyond them: `EAGAIN`).
const MAX_PENDING: usize = 256;
/// The queue segment's message quota, which also bounds the calls this
/// driver holds unanswered (its reply handles, docs/messages.md): the
/// queue, one kept `OP_LOCK_WAIT` per slot, and the pending requests. A
/// receive that found no room for another handle would leave the call at
/// the head of the queue, in front of the wake-ups that would free one.
const QSEG_MESSAGES: u64 = QUEUE_CAPACITY + ram_lock::SLOTS as u64 + MAX_PENDING as u64;
/// How long the driver sleeps if it still cannot take a call (its reply
/// handles all used, which the quota above should prevent).
const LIMIT_RETRY_NS: u64 = 1_000_000;

/// The lock page (`block::ram_lock`), page aligned so that it is one page
/// of this process that clients map shared.
#[repr(C, align(4096))]
struct LockPage {
    writer: AtomicU32,
    _pad_w: [u8; ram_lock::WAITERS_OFFSET - 4],
    /// Kept `OP_LOCK_WAIT` calls plus pending READ/WRITE/SEEK requests: the
    /// releasers' cue to send `OP_LOCK_WAKE`. Written by this driver only.
    waiters: AtomicU32,
    /// 1 while an `OP_LOCK_WAKE` is on its way (set by releasers).
    wake_sent: AtomicU32,
    _pad0: [u8; ram_lock::READERS_OFFSET - ram_lock::WAKE_SENT_OFFSET - 4],
    readers: [AtomicU8; ram_lock::SLOTS],
    _pad1: [u8; ram_lock::OFFSETS_OFFSET - ram_lock::READERS_OFFSET - ram_lock::SLOTS],
    offsets: [AtomicU64; ram_lock::SLOTS],
    _pad2: [u8; ram_lock::STATS_OFFSET - ram_lock::OFFSETS_OFFSET - 8 * ram_lock::SLOTS],
    /// Requests, bytes read, bytes written, by mapping clients.
    stats: [AtomicU64; 3],
    _pad3: [u8; ram_lock::LIVE_OFFSET - ram_lock::STATS_OFFSET - 24],
    /// `ram_lock::LIVE` for this driver's life; the kernel zeroes it in
    /// the clients' lock-page regions when this process ends.
    live: AtomicU64,
}

const _: () = assert!(core::mem::size_of::<LockPage>() == PAGE_BYTES);
const _: () = assert!(offset_of!(LockPage, writer) == ram_lock::WRITER_OFFSET);
const _: () = assert!(offset_of!(LockPage, waiters) == ram_lock::WAITERS_OFFSET);
const _: () = assert!(offset_of!(LockPage, wake_sent) == ram_lock::WAKE_SENT_OFFSET);
const _: () = assert!(offset_of!(LockPage, readers) == ram_lock::READERS_OFFSET);
const _: () = assert!(offset_of!(LockPage, offsets) == ram_lock::OFFSETS_OFFSET);
const _: () = assert!(offset_of!(LockPage, stats) == ram_lock::STATS_OFFSET);
const _: () = assert!(offset_of!(LockPage, live) == ram_lock::LIVE_OFFSET);

impl LockPage {
    fn new() -> Box<LockPage> {
        Box::new(LockPage {
            writer: AtomicU32::new(0),
            _pad_w: [0; ram_lock::WAITERS_OFFSET - 4],
            waiters: AtomicU32::new(0),
            wake_sent: AtomicU32::new(0),
            _pad0: [0; ram_lock::READERS_OFFSET - ram_lock::WAKE_SENT_OFFSET - 4],
            readers: [const { AtomicU8::new(0) }; ram_lock::SLOTS],
            _pad1: [0; ram_lock::OFFSETS_OFFSET - ram_lock::READERS_OFFSET - ram_lock::SLOTS],
            offsets: [const { AtomicU64::new(0) }; ram_lock::SLOTS],
            _pad2: [0; ram_lock::STATS_OFFSET - ram_lock::OFFSETS_OFFSET - 8 * ram_lock::SLOTS],
            stats: [const { AtomicU64::new(0) }; 3],
            _pad3: [0; ram_lock::LIVE_OFFSET - ram_lock::STATS_OFFSET - 24],
            live: AtomicU64::new(ram_lock::LIVE),
        })
    }

    fn address(&self) -> u64 {
        self as *const LockPage as u64
    }

    /// The driver as writer: take the writer word if free (or keep it),
    /// then true once no reader is left. SeqCst on both sides: a reader
    /// stores its byte and then loads the writer word, the writer stores
    /// the word and then loads the bytes (a store-load order that x86
    /// keeps only with a locked instruction or a fence).
    fn try_write_lock(&self) -> bool {
        let held = match self.writer.compare_exchange(0, DRIVER_WRITER, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => true,
            Err(w) => w == DRIVER_WRITER,
        };
        held && self.readers.iter().all(|r| r.load(Ordering::SeqCst) == 0)
    }

    fn write_unlock(&self) {
        self.writer.store(0, Ordering::SeqCst);
    }

    fn no_readers(&self) -> bool {
        self.readers.iter().all(|r| r.load(Ordering::SeqCst) == 0)
    }

    /// Take the read lock for `slot` (a kept waiter) as a reader would:
    /// its byte, then the writer word; false (byte cleared) if a writer
    /// holds it.
    fn try_read_lock_for(&self, slot: usize) -> bool {
        if self.writer.load(Ordering::SeqCst) != 0 {
            return false;
        }
        self.readers[slot].store(1, Ordering::SeqCst);
        if self.writer.load(Ordering::SeqCst) == 0 {
            return true;
        }
        self.readers[slot].store(0, Ordering::SeqCst);
        false
    }

    /// Take the writer word for `slot` (a kept waiter) if it is free, or
    /// keep it; true once no reader is left either.
    fn try_write_lock_for(&self, slot: usize) -> Option<bool> {
        let me = slot as u32 + 1;
        let held = match self.writer.compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => true,
            Err(w) => w == me,
        };
        held.then(|| self.no_readers())
    }

    /// Give back the writer word taken for `slot`'s kept wait.
    fn write_unlock_for(&self, slot: usize) {
        let _ = self.writer.compare_exchange(slot as u32 + 1, 0, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// A slot's handle was closed (its process may have died in the
    /// middle of a copy): its reader byte and its writer word go.
    fn release(&self, slot: usize) {
        self.readers[slot].store(0, Ordering::SeqCst);
        let _ = self.writer.compare_exchange(slot as u32 + 1, 0, Ordering::SeqCst, Ordering::SeqCst);
        self.offsets[slot].store(0, Ordering::SeqCst);
    }
}

/// The disk's bytes: this process's memory, page aligned.
struct Disk {
    storage: Vec<u8>,
    start: usize,
    size: usize,
}

impl Disk {
    /// Allocates `size` bytes of zeros and so touches every page now: a
    /// page fault in the middle of serving a request, or a page the kernel
    /// cannot find when a client's window faults, would be worse.
    fn new(size: usize) -> Option<Disk> {
        let total = size.checked_add(PAGE_BYTES)?;
        let mut storage = Vec::new();
        storage.try_reserve_exact(total).ok()?;
        storage.resize(total, 0);
        let start = storage.as_ptr().align_offset(PAGE_BYTES).min(PAGE_BYTES);
        Some(Disk { storage, start, size })
    }

    fn bytes(&self, t: &Transfer) -> &[u8] {
        let at = self.start + t.offset_bytes as usize;
        &self.storage[at..at + t.len_bytes as usize]
    }

    fn bytes_mut(&mut self, t: &Transfer) -> &mut [u8] {
        let at = self.start + t.offset_bytes as usize;
        &mut self.storage[at..at + t.len_bytes as usize]
    }

    /// The address of disk page `index`, for `page_resolve`.
    fn page_address(&self, index: u64) -> u64 {
        self.storage.as_ptr() as u64 + self.start as u64 + index * PAGE_SIZE
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    RamDriver,
    PdDriver,
}

impl Mode {
    fn parse(word: &str) -> Option<Mode> {
        match word {
            "ramdriver" => Some(Mode::RamDriver),
            "pddriver" => Some(Mode::PdDriver),
            _ => None,
        }
    }

    fn stats_word(self) -> u64 {
        match self {
            Mode::RamDriver => block::MODE_RAMDRIVER,
            Mode::PdDriver => block::MODE_PDDRIVER,
        }
    }
}

/// What the driver keeps per handle besides `Opens`' record.
struct Extra {
    handle: u64,
    mode: Mode,
    /// The lock-page slot, once the handle is mapped.
    slot: Option<usize>,
}

/// A lock-page slot: the process that mapped its handle.
#[derive(Clone, Copy)]
struct Slot {
    owner: Pid,
    /// The handle may write (so may wait for the write lock).
    writable: bool,
}

/// An `OP_LOCK_WAIT` call this driver keeps until the lock is the
/// caller's (kept in arrival order).
#[derive(Clone, Copy)]
struct Wait {
    reply: ReplyHandle,
    slot: usize,
    write: bool,
}

/// A client's window: faults at `start..` from `owner` are this disk.
#[derive(Clone, Copy)]
struct Window {
    owner: Pid,
    start: u64,
    writable: bool,
}

/// A READ, WRITE or SEEK waiting for its turn (strictly in arrival
/// order), each served with the lock held as [`DRIVER_WRITER`].
struct Request {
    reply: ReplyHandle,
    handle: u64,
    op: Op,
}

#[derive(Clone, Copy)]
enum Op {
    Read {
        len_bytes: u64,
    },
    Write {
        len_bytes: u64,
    },
    /// A SEEK moves the handle's offset word, which the mapping process
    /// moves under the lock (`runtime/src/unix/ramdriver.rs`): taken and
    /// put back without it, a forked sharer's `lseek` could land between
    /// that process's load and store and be lost, or its own move be
    /// undone (`ramdisk::driver_seek_waits_for_the_lock`).
    Seek {
        offset: i64,
        whence: u64,
    },
}

#[derive(Default)]
struct Stats {
    requests: u64,
    bytes_read: u64,
    bytes_written: u64,
}

struct Driver {
    me: Pid,
    queue: Queue,
    monitor: Option<Pid>,
    default_mode: Mode,
    opens: Opens,
    extras: Vec<Extra>,
    slots: Vec<Option<Slot>>,
    windows: Vec<Window>,
    lock: Box<LockPage>,
    disk: Disk,
    pending: VecDeque<Request>,
    /// Kept `OP_LOCK_WAIT` calls, oldest first.
    waits: VecDeque<Wait>,
    stats: Stats,
}

fn main(args: Args) -> i32 {
    let starter = args.get(0).and_then(|s| s.parse::<u64>().ok()).map(Pid);
    let (size_bytes, mode) = options();
    let _ = msg::init_qseg(
        abi::msg::DEFAULT_LINKS,
        abi::msg::DEFAULT_QUEUES,
        QSEG_MESSAGES,
        abi::msg::DEFAULT_PAGES,
    );
    let Ok(queue) = msg::open_queue(QUEUE_CAPACITY, true) else {
        println!("ramdisk: cannot open a queue");
        return 1;
    };
    let disk = if size_bytes == 0 {
        None
    } else {
        match usize::try_from(size_bytes).ok().and_then(Disk::new) {
            Some(d) => Some(d),
            None => {
                println!("ramdisk: cannot allocate {size_bytes} bytes; no RAM disk");
                None
            }
        }
    };
    let device_bytes = disk.as_ref().map_or(0, |d| d.size as u64);
    if let Some(starter) = starter {
        let ready = msg::open_link(starter, Queue(protocols::STARTER_QUEUE))
            .and_then(|l| msg::send(l, &[block::READY, queue.0 as u64, device_bytes, 0]));
        if ready.is_err() {
            return 2;
        }
    }
    let Some(disk) = disk else { return 0 };
    let mut driver = Driver {
        me: sys::getpid(),
        queue,
        monitor: sys::bootstrap(abi::bootstrap::MONITOR).map(|(pid, _)| pid),
        default_mode: mode,
        opens: Opens::new(sys::rdtsc(), device_bytes, false),
        extras: Vec::new(),
        slots: vec![None; ram_lock::SLOTS],
        windows: Vec::new(),
        lock: LockPage::new(),
        disk,
        pending: VecDeque::new(),
        waits: VecDeque::new(),
        stats: Stats::default(),
    };
    driver.serve()
}

/// `ramdisk.size=` and `ramdisk.mode=`; a bad value is reported and the
/// default kept (as for the kernel's own options).
fn options() -> (u64, Mode) {
    let mut buf = [0u8; 1024];
    let n = sys::kernel_options(&mut buf).unwrap_or(0).min(buf.len());
    let line = core::str::from_utf8(&buf[..n]).unwrap_or("");
    let size = match protocols::options::lookup(line, "ramdisk.size") {
        None => DEFAULT_SIZE_BYTES,
        Some(v) => match protocols::options::parse_size_bytes(v) {
            Some(bytes) if bytes.is_multiple_of(PAGE_SIZE) => bytes,
            _ => {
                println!(
                    "ramdisk: ramdisk.size={v} is not a whole number of pages (e.g. 64M, 512K, 0); using 64M"
                );
                DEFAULT_SIZE_BYTES
            }
        },
    };
    let mode = match protocols::options::lookup(line, "ramdisk.mode") {
        None => Mode::RamDriver,
        Some(v) => Mode::parse(v).unwrap_or_else(|| {
            println!("ramdisk: ramdisk.mode={v} is not `ramdriver` or `pddriver`; using ramdriver");
            Mode::RamDriver
        }),
    };
    (size, mode)
}

fn answer(reply: ReplyHandle, result: Result<[u64; 4], Errno>, data: &[u8]) {
    let words = match result {
        Ok(w) => w,
        Err(e) => [protocols::unix::encode_result(Err(e)), 0, 0, 0],
    };
    let _ = msg::reply(reply, &words, data);
}

fn lease_errno(e: Error) -> Errno {
    match e {
        Error::BadAddress => errno::EFAULT,
        Error::InvalidArgument => errno::EINVAL,
        _ => errno::EIO,
    }
}

impl Driver {
    fn serve(&mut self) -> i32 {
        let mut buf = vec![0u8; abi::msg::MAX_DATA_BYTES as usize];
        loop {
            // Waiting in the receive is safe with requests and waiters
            // held: the waiters word is published, so whoever lets the
            // lock go sends OP_LOCK_WAKE (`ram_lock`'s protocol).
            match msg::receive_data(self.queue, &mut buf) {
                Ok(r) => self.handle(&r, &buf[..r.len.min(buf.len())]),
                Err(Error::BufferTooSmall) => {}
                Err(Error::LimitReached) => {
                    // No reply handle left for the call at the head: the
                    // lock can still move; look at it now and then.
                    sys::sleep_ns(LIMIT_RETRY_NS);
                }
                Err(e) => {
                    println!("ramdisk: receive failed: {}", e.name());
                    return 3;
                }
            }
            self.run();
        }
    }

    fn handle(&mut self, r: &msg::Received, data: &[u8]) {
        match r.kind {
            Kind::PageFault => self.page_fault(r.message),
            Kind::Call => {
                let w = r.message;
                match w[0] {
                    io::OP_READ | io::OP_WRITE | io::OP_SEEK if self.pending.len() >= MAX_PENDING => {
                        answer(r.reply, Err(errno::EAGAIN), &[]);
                    }
                    io::OP_READ | io::OP_WRITE | io::OP_SEEK => {
                        let op = match w[0] {
                            io::OP_READ => Op::Read { len_bytes: w[2] },
                            io::OP_WRITE => Op::Write { len_bytes: w[2] },
                            _ => Op::Seek { offset: w[2] as i64, whence: w[3] },
                        };
                        self.pending.push_back(Request { reply: r.reply, handle: w[1], op });
                    }
                    device::OP_OPEN => {
                        let result = self.check_monitor(r.sender).and_then(|()| self.open(w[1], data));
                        answer(r.reply, result.map(|h| [h, 0, 0, 0]), &[]);
                    }
                    io::OP_CLOSE => {
                        let result = self.check_monitor(r.sender).and_then(|()| self.close(w[1]));
                        answer(r.reply, result.map(|()| [0; 4]), &[]);
                    }
                    io::OP_FSTAT => match self.opens.fstat(w[1], self.me.0, self.queue.0) {
                        Ok(st) => answer(r.reply, Ok([0; 4]), &st.encode()),
                        Err(e) => answer(r.reply, Err(e), &[]),
                    },
                    io::OP_FSYNC => answer(r.reply, self.opens.check_handle(w[1]).map(|()| [0; 4]), &[]),
                    block::OP_STATS => {
                        let l = &self.lock.stats;
                        let words = [
                            self.stats.requests + l[0].load(Ordering::Relaxed),
                            self.stats.bytes_read + l[1].load(Ordering::Relaxed),
                            self.stats.bytes_written + l[2].load(Ordering::Relaxed),
                            self.default_mode.stats_word(),
                        ];
                        answer(r.reply, Ok(words), NAME.as_bytes());
                    }
                    block::OP_MAP => answer(r.reply, self.map(r.sender, w[1], w[2]), &[]),
                    block::OP_LOCK_WAIT => {
                        if let Err(e) = self.lock_wait(r.sender, r.reply, w[1], w[2]) {
                            answer(r.reply, Err(e), &[]);
                        }
                    }
                    _ => answer(r.reply, Err(errno::ENOSYS), &[]),
                }
            }
            // OP_LOCK_WAKE (or any plain message): `run` looks at the lock
            // after every message anyway.
            _ => {}
        }
    }

    /// Opens and closes come from the monitor, which checked permissions
    /// (a driver started before the monitor takes them from anyone).
    fn check_monitor(&self, sender: Pid) -> Result<(), Errno> {
        match self.monitor {
            Some(m) if m != sender => Err(errno::EPERM),
            _ => Ok(()),
        }
    }

    fn extra(&self, handle: u64) -> Result<&Extra, Errno> {
        self.extras.iter().find(|e| e.handle == handle).ok_or(errno::EBADF)
    }

    /// `device::OP_OPEN`: the rest of the path may name a mode.
    fn open(&mut self, flags: u64, rest: &[u8]) -> Result<u64, Errno> {
        let rest = core::str::from_utf8(rest).map_err(|_| errno::ENOENT)?.trim_matches('/');
        let mode =
            if rest.is_empty() { self.default_mode } else { Mode::parse(rest).ok_or(errno::ENOENT)? };
        self.extras.try_reserve(1).map_err(|_| errno::ENFILE)?;
        let handle = self.opens.open(flags, b"")?;
        self.extras.push(Extra { handle, mode, slot: None });
        Ok(handle)
    }

    /// `io::OP_CLOSE`, from the monitor when the last descriptor goes,
    /// also when a process dies: the slot's lock state is cleared.
    fn close(&mut self, handle: u64) -> Result<(), Errno> {
        self.opens.close(handle)?;
        let Some(i) = self.extras.iter().position(|e| e.handle == handle) else { return Ok(()) };
        let extra = self.extras.swap_remove(i);
        if let Some(slot) = extra.slot {
            let owner = self.slots[slot].map(|s| s.owner);
            // A kept wait of the slot goes first (its caller is dead, or
            // will not be answered with a lock it no longer has a handle
            // for); then the slot's part of the lock. `run` then lets in
            // whoever that release lets in.
            if let Some(k) = self.waits.iter().position(|w| w.slot == slot)
                && let Some(wait) = self.waits.remove(k)
            {
                answer(wait.reply, Err(errno::EBADF), &[]);
            }
            self.lock.release(slot);
            self.slots[slot] = None;
            // A window lives while its process holds a mapped slot.
            if let Some(owner) = owner
                && !self.slots.iter().flatten().any(|s| s.owner == owner)
            {
                self.windows.retain(|w| w.owner != owner);
            }
        }
        Ok(())
    }

    /// A mapped handle's offset is the lock page's word: bring `Opens`
    /// up to date with it before using the handle's offset.
    fn sync_offset_in(&mut self, handle: u64) -> Result<Option<usize>, Errno> {
        let slot = self.extra(handle)?.slot;
        if let Some(slot) = slot {
            let offset = self.lock.offsets[slot].load(Ordering::SeqCst);
            let offset = i64::try_from(offset).map_err(|_| errno::EINVAL)?;
            self.opens.seek(handle, offset, unix_core::seek::SEEK_SET)?;
        }
        Ok(slot)
    }

    fn sync_offset_out(&self, handle: u64, slot: Option<usize>) {
        if let (Some(slot), Ok(open)) = (slot, self.opens.get(handle)) {
            self.lock.offsets[slot].store(open.offset_bytes, Ordering::SeqCst);
        }
    }

    fn seek(&mut self, handle: u64, offset: i64, whence: u64) -> Result<u64, Errno> {
        let slot = self.sync_offset_in(handle)?;
        let result = self.opens.seek(handle, offset, whence);
        self.sync_offset_out(handle, slot);
        result
    }

    /// `block::OP_MAP` from `sender` for `handle`, window at `start`.
    fn map(&mut self, sender: Pid, handle: u64, start: u64) -> Result<[u64; 4], Errno> {
        let open = self.opens.get(handle)?;
        let extra = self.extra(handle)?;
        if extra.mode == Mode::PdDriver {
            return Err(errno::ENODEV);
        }
        let window_bytes = PAGE_SIZE + self.disk.size as u64;
        if start == 0 || !start.is_multiple_of(PAGE_SIZE) || start.checked_add(window_bytes).is_none() {
            return Err(errno::EINVAL);
        }
        let writable = open.writable;
        if let Some(w) = self.windows.iter().find(|w| w.owner == sender && w.start == start)
            && w.writable != writable
        {
            // One window, one kind of page: the client keeps a window per
            // kind (read-only, writable).
            return Err(errno::EINVAL);
        }
        let slot = match extra.slot {
            Some(slot) => match self.slots[slot] {
                Some(s) if s.owner == sender => slot,
                // Shared with the process that mapped it first (fork):
                // two processes must not share one reader byte.
                _ => return Err(errno::EBUSY),
            },
            None => {
                let slot = self.slots.iter().position(Option::is_none).ok_or(errno::ENOSPC)?;
                self.windows.try_reserve(1).map_err(|_| errno::ENOMEM)?;
                self.slots[slot] = Some(Slot { owner: sender, writable });
                self.lock.readers[slot].store(0, Ordering::SeqCst);
                self.lock.offsets[slot].store(open.offset_bytes, Ordering::SeqCst);
                if let Some(e) = self.extras.iter_mut().find(|e| e.handle == handle) {
                    e.slot = Some(slot);
                }
                slot
            }
        };
        if !self.windows.iter().any(|w| w.owner == sender && w.start == start) {
            self.windows.push(Window { owner: sender, start, writable });
        }
        Ok([self.disk.size as u64, slot as u64, writable as u64, 0])
    }

    /// A fault in a client's window: m0 = pid, m1 = address, m3 = the
    /// region's start. Page 0 is the lock page (always writable: readers
    /// write their byte), the disk follows (writable only in a writable
    /// window). Anything else fails the fault (the process ends with a
    /// page fault, as for any bad address).
    fn page_fault(&mut self, m: [u64; 4]) {
        let (pid, addr, start) = (Pid(m[0]), m[1] & !(PAGE_SIZE - 1), m[3]);
        let window = self.windows.iter().find(|w| w.owner == pid && w.start == start).copied();
        let disk_pages = self.disk.size as u64 / PAGE_SIZE;
        let resolution = window.and_then(|w| {
            let page = addr.checked_sub(w.start)? / PAGE_SIZE;
            if page == 0 {
                Some((self.lock.address(), pager::SHARE | pager::WRITABLE | pager::SHARED))
            } else if page <= disk_pages {
                // Read-only is still SHARED: the frame itself, which
                // writable windows change in place (a plain SHARE would
                // lend it copy-on-write and part it from the disk).
                let flags = if w.writable {
                    pager::SHARE | pager::WRITABLE | pager::SHARED
                } else {
                    pager::SHARE | pager::SHARED
                };
                Some((self.disk.page_address(page - 1), flags))
            } else {
                None
            }
        });
        let resolved = match resolution {
            Some((src, flags)) => sys::page_resolve(pid, addr, src, flags),
            None => Err(Error::InvalidArgument),
        };
        if resolved.is_err() {
            let _ = sys::page_resolve(pid, addr, 0, pager::FAIL);
        }
    }

    /// `block::OP_LOCK_WAIT` from `sender`: check it and keep the call;
    /// `run`, next, answers it at once if the lock is free.
    fn lock_wait(&mut self, sender: Pid, reply: ReplyHandle, slot: u64, mode: u64) -> Result<(), Errno> {
        let slot = usize::try_from(slot).ok().filter(|&s| s < ram_lock::SLOTS).ok_or(errno::EINVAL)?;
        let write = match mode {
            ram_lock::WAIT_READ => false,
            ram_lock::WAIT_WRITE => true,
            _ => return Err(errno::EINVAL),
        };
        match self.slots[slot] {
            None => return Err(errno::EINVAL),
            Some(s) if s.owner != sender => return Err(errno::EPERM),
            Some(s) if write && !s.writable => return Err(errno::EBADF),
            Some(_) => {}
        }
        if self.waits.iter().any(|w| w.slot == slot) {
            return Err(errno::EBUSY);
        }
        self.waits.try_reserve(1).map_err(|_| errno::ENOMEM)?;
        self.waits.push_back(Wait { reply, slot, write });
        Ok(())
    }

    /// After every message: publish the number of waiters, then serve
    /// the pending READs, WRITEs and SEEKs and answer the kept waits while the
    /// lock allows, until nothing moves.
    fn run(&mut self) {
        // Any wake sent so far is this one (or still queued, and then
        // harmless): later releases must send another.
        self.lock.wake_sent.store(0, Ordering::SeqCst);
        loop {
            // Before looking at the lock (`ram_lock`: a releaser that
            // stored its release before this sees the release here; one
            // that stores it after sees this count and wakes the driver).
            self.publish_waiters();
            let served = self.run_pending();
            let answered = self.run_waits();
            if !served && !answered {
                break;
            }
        }
        // A kept wait lends the driver no priority: the kernel gives a
        // server its own back when it blocks for, or takes, a plain
        // message (docs/messages.md), so an OP_LOCK_WAKE runs at once.
        self.publish_waiters();
    }

    fn publish_waiters(&self) {
        let count = self.waits.len() + usize::from(!self.pending.is_empty());
        self.lock.waiters.store(count as u32, Ordering::SeqCst);
    }

    /// Answer the kept waits the lock lets in, oldest first: a writer
    /// takes the writer word; while a writer waits (for the word or for
    /// readers), the readers after it wait too. True if any was answered.
    fn run_waits(&mut self) -> bool {
        let mut answered = false;
        let mut writer_waits = false;
        let mut i = 0;
        while i < self.waits.len() {
            let w = self.waits[i];
            let holds_word = w.write && self.lock.writer.load(Ordering::SeqCst) == w.slot as u32 + 1;
            let granted = if holds_word {
                // A writer that took the word itself and waits for the
                // readers to go: whatever is ahead of it, it goes first.
                let drained = self.lock.no_readers();
                writer_waits |= !drained;
                drained
            } else if writer_waits {
                false
            } else if w.write {
                match self.lock.try_write_lock_for(w.slot) {
                    Some(true) => true,
                    // Holding the word, or not: a writer waits.
                    _ => {
                        writer_waits = true;
                        false
                    }
                }
            } else {
                self.lock.try_read_lock_for(w.slot)
            };
            if !granted {
                i += 1;
                continue;
            }
            self.waits.remove(i);
            answered = true;
            if msg::reply(w.reply, &[0; 4], &[]).is_err() {
                // The caller died while kept: give back what was taken
                // for it (its close will also come, and finds nothing).
                if w.write {
                    self.lock.write_unlock_for(w.slot);
                } else {
                    self.lock.readers[w.slot].store(0, Ordering::SeqCst);
                }
            }
        }
        answered
    }

    /// Serve waiting READs, WRITEs and SEEKs in order while the lock
    /// allows. True if any was served.
    fn run_pending(&mut self) -> bool {
        let mut served = false;
        while let Some(front) = self.pending.front() {
            let (reply, handle, op) = (front.reply, front.handle, front.op);
            if !self.lock.try_write_lock() {
                return served;
            }
            let result = match op {
                Op::Read { len_bytes } => self.transfer(reply, handle, len_bytes, false),
                Op::Write { len_bytes } => self.transfer(reply, handle, len_bytes, true),
                Op::Seek { offset, whence } => self.seek(handle, offset, whence),
            };
            self.lock.write_unlock();
            self.pending.pop_front();
            answer(reply, result.map(|n| [n, 0, 0, 0]), &[]);
            served = true;
        }
        served
    }

    /// One READ or WRITE, the driver copying (the lock held as writer).
    fn transfer(
        &mut self,
        reply: ReplyHandle,
        handle: u64,
        len_bytes: u64,
        is_write: bool,
    ) -> Result<u64, Errno> {
        let mode = self.extra(handle)?.mode;
        let slot = self.sync_offset_in(handle)?;
        let started = self.opens.start(handle, len_bytes, is_write);
        self.sync_offset_out(handle, slot);
        let Some(t) = started? else { return Ok(0) };
        let flags = if mode == Mode::PdDriver { lease::BYTE_AT_A_TIME } else { 0 };
        let moved = if is_write {
            msg::lease_read(reply, 0, self.disk.bytes_mut(&t), flags)
        } else {
            msg::lease_write(reply, 0, self.disk.bytes(&t), flags)
        };
        let ok = matches!(moved, Ok(n) if n as u64 == t.len_bytes);
        self.opens.finish(handle, t, ok);
        self.sync_offset_out(handle, slot);
        match moved {
            Ok(n) if n as u64 == t.len_bytes => {
                self.stats.requests += 1;
                if is_write {
                    self.stats.bytes_written += t.len_bytes;
                } else {
                    self.stats.bytes_read += t.len_bytes;
                }
                Ok(t.len_bytes)
            }
            Ok(_) => Err(errno::EIO),
            Err(e) => Err(lease_errno(e)),
        }
    }
}
