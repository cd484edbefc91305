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
//!   middle of a copy never leaves the lock held.
//!
//! Opens that cannot map (more than `ram_lock::SLOTS` mapped at once, a
//! second process sharing a mapped handle, a pager region the client
//! could not set) use plain READ and WRITE, which this driver serves with
//! bulk leases while holding the lock as its writer (`DRIVER_WRITER`), so
//! its copies never overlap a client's. The driver never waits for the
//! lock in a way that stops it reading its queue: a request that cannot
//! have the lock yet stays in `pending` while messages (a page fault of
//! the lock's holder, the close of a dead one) are served.
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
/// How long the driver sleeps when the front request cannot have the lock
/// yet and no message waits: a client holds it, and must run to let it go
/// (the driver's priority is above the clients', so `yield` would not).
const LOCK_WAIT_NS: u64 = 1_000_000;

/// The lock page (`block::ram_lock`), page aligned so that it is one page
/// of this process that clients map shared.
#[repr(C, align(4096))]
struct LockPage {
    writer: AtomicU32,
    _pad0: [u8; ram_lock::READERS_OFFSET - 4],
    readers: [AtomicU8; ram_lock::SLOTS],
    _pad1: [u8; ram_lock::OFFSETS_OFFSET - ram_lock::READERS_OFFSET - ram_lock::SLOTS],
    offsets: [AtomicU64; ram_lock::SLOTS],
    _pad2: [u8; ram_lock::STATS_OFFSET - ram_lock::OFFSETS_OFFSET - 8 * ram_lock::SLOTS],
    /// Requests, bytes read, bytes written, by mapping clients.
    stats: [AtomicU64; 3],
    _pad3: [u8; PAGE_BYTES - ram_lock::STATS_OFFSET - 24],
}

const _: () = assert!(core::mem::size_of::<LockPage>() == PAGE_BYTES);
const _: () = assert!(offset_of!(LockPage, writer) == ram_lock::WRITER_OFFSET);
const _: () = assert!(offset_of!(LockPage, readers) == ram_lock::READERS_OFFSET);
const _: () = assert!(offset_of!(LockPage, offsets) == ram_lock::OFFSETS_OFFSET);
const _: () = assert!(offset_of!(LockPage, stats) == ram_lock::STATS_OFFSET);

impl LockPage {
    fn new() -> Box<LockPage> {
        Box::new(LockPage {
            writer: AtomicU32::new(0),
            _pad0: [0; ram_lock::READERS_OFFSET - 4],
            readers: [const { AtomicU8::new(0) }; ram_lock::SLOTS],
            _pad1: [0; ram_lock::OFFSETS_OFFSET - ram_lock::READERS_OFFSET - ram_lock::SLOTS],
            offsets: [const { AtomicU64::new(0) }; ram_lock::SLOTS],
            _pad2: [0; ram_lock::STATS_OFFSET - ram_lock::OFFSETS_OFFSET - 8 * ram_lock::SLOTS],
            stats: [const { AtomicU64::new(0) }; 3],
            _pad3: [0; PAGE_BYTES - ram_lock::STATS_OFFSET - 24],
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
}

/// A client's window: faults at `start..` from `owner` are this disk.
#[derive(Clone, Copy)]
struct Window {
    owner: Pid,
    start: u64,
    writable: bool,
}

/// A READ or WRITE waiting for its turn (strictly in arrival order).
struct Request {
    reply: ReplyHandle,
    handle: u64,
    len_bytes: u64,
    is_write: bool,
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
    stats: Stats,
}

fn main(args: Args) -> i32 {
    let starter = args.get(0).and_then(|s| s.parse::<u64>().ok()).map(Pid);
    let (size_bytes, mode) = options();
    let Ok(queue) = msg::open_queue(64, true) else {
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
            let received = if self.pending.is_empty() {
                msg::receive_data(self.queue, &mut buf).map(Some)
            } else {
                msg::try_receive(self.queue, &mut buf)
            };
            match received {
                Ok(Some(r)) => self.handle(&r, &buf[..r.len.min(buf.len())]),
                Ok(None) => {
                    // The front request waits for the lock, and nothing
                    // else is asked of the driver: let the holder run.
                    sys::sleep_ns(LOCK_WAIT_NS);
                }
                Err(Error::BufferTooSmall) => {}
                Err(e) => {
                    println!("ramdisk: receive failed: {}", e.name());
                    return 3;
                }
            }
            self.run_pending();
        }
    }

    fn handle(&mut self, r: &msg::Received, data: &[u8]) {
        match r.kind {
            Kind::PageFault => self.page_fault(r.message),
            Kind::Call => {
                let w = r.message;
                match w[0] {
                    io::OP_READ | io::OP_WRITE => {
                        self.pending.push_back(Request {
                            reply: r.reply,
                            handle: w[1],
                            len_bytes: w[2],
                            is_write: w[0] == io::OP_WRITE,
                        });
                    }
                    device::OP_OPEN => {
                        let result = self.check_monitor(r.sender).and_then(|()| self.open(w[1], data));
                        answer(r.reply, result.map(|h| [h, 0, 0, 0]), &[]);
                    }
                    io::OP_CLOSE => {
                        let result = self.check_monitor(r.sender).and_then(|()| self.close(w[1]));
                        answer(r.reply, result.map(|()| [0; 4]), &[]);
                    }
                    io::OP_SEEK => {
                        answer(r.reply, self.seek(w[1], w[2] as i64, w[3]).map(|o| [o, 0, 0, 0]), &[])
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
                    _ => answer(r.reply, Err(errno::ENOSYS), &[]),
                }
            }
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
                self.slots[slot] = Some(Slot { owner: sender });
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

    /// Serve waiting READs and WRITEs in order while the lock allows.
    fn run_pending(&mut self) {
        while let Some(front) = self.pending.front() {
            let (reply, handle, len_bytes, is_write) =
                (front.reply, front.handle, front.len_bytes, front.is_write);
            if !self.lock.try_write_lock() {
                return;
            }
            let result = self.transfer(reply, handle, len_bytes, is_write);
            self.lock.write_unlock();
            self.pending.pop_front();
            answer(reply, result.map(|n| [n, 0, 0, 0]), &[]);
        }
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
