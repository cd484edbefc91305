//! ext2fs: the manager of one mounted ext2 volume (issue 12): Ridge's
//! directory manager (names and lookups), volume manager (inodes, block
//! and inode allocation, contiguous where it can) and file-data service
//! (reads and writes through UNIX V1's buffer cache: `nbuf` buffers, LRU,
//! read-ahead and write-behind of up to 16 pages), in one process.
//! `docs/filesystem.md` says why ext2 makes them one: its inode tables,
//! bitmaps and directories share blocks, and their writes must reach the
//! disk in one order, through one cache.
//!
//! The monitor starts it for `monitor::OP_MOUNT`, with a handle at the
//! block driver for its own requests and one for each I/O worker
//! (`ext2io`, started here: several requests in flight at the driver,
//! `disk.rs`). It mounts (every check of `fs_ext2::Fs::mount`; a refused
//! volume is reported on the console and to the monitor, and this process
//! ends without writing), prints its buffer count, sends the monitor
//! `[ext2fs::READY, queue, 0 or errno, 0]` on its queue 1, and serves:
//! `fs` requests from the monitor, `io` requests from anyone holding a
//! handle, one queue; and, from the monitor, `ext2fs::OP_DEVICE` when its
//! block driver was restarted (the cache is kept: `disk.rs`). The requests themselves are `fs_ext2::service`
//! (host-tested); this file holds the kernel calls: arguments, options,
//! the workers, the clock, leases and the receive-reply loop.
//!
//! Read windows (`fs_ext2::readwin`, `protocols::unix::read_window`):
//! for `io::OP_READ_WINDOW_SLOT` this process maps a page of its own into
//! the caller, shared and writable, at the address the caller made this
//! manager the pager of (`page_resolve` with `pager::SHARED`), and answers
//! the page faults of such regions with the same page (or fails them for
//! a process it keeps none for). The boot option `ext2.readwin=off` turns
//! them off.
//!
//! Options (the mount's, comma-separated, then the kernel command line):
//! `nbuf=N` buffers (default: a share of free memory, see [`default_nbuf`]),
//! `ro`, `sync` (every metadata change written at the end of its
//! operation: Ridge's rule to the letter).
//!
//! Invariants: one reply per call; bad input gets an errno reply; nothing
//! a client sends makes it panic or exit. Requests that arrive while the
//! cache waits for the disk are served afterwards, in order.
//!
//! Arguments: `MONITOR_PID DRIVER_PID DRIVER_QUEUE DEVICE_BYTES TARGET
//! OPTIONS HANDLE…` (decimal numbers; `OPTIONS` is `-` for none); or
//! `timer MANAGER_PID` for the manager's write-back clock (`timer.rs`),
//! which a writable mount starts so that dirty blocks expire on an idle
//! volume too.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod disk;
mod timer;

use abi::layout::PAGE_SIZE;
use abi::msg::Kind;
use abi::{InfoKey, Pid, pager};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use disk::Disk;
use fs_ext2::device::{Direction, Transfer, WriteCacheOption};
use fs_ext2::layout::{SUPERBLOCK_BYTES, SUPERBLOCK_OFFSET, Superblock};
use fs_ext2::service::{Lent, MESSAGE_DATA_BYTES, Service};
use fs_ext2::{BlockDevice, Fs, MountOptions};
use protocols::unix::errno::{EFAULT, EINVAL, EIO};
use protocols::unix::{Errno, encode_result, ext2fs, fs, io, monitor, read_window};
use runtime::clock::Clock;
use runtime::msg::{self, Link, Page, Queue, ReplyHandle};
use runtime::{Args, println, sys};

runtime::entry!(main);

/// Messages the queue holds: clients' requests, the workers' calls, the
/// ends of workers.
const QUEUE_MESSAGES: u64 = 192;
const QUEUE_PAGES: u64 = 128;
/// The default cache takes 1/this of the memory free at mount (each mount:
/// a second disk gets its share of what the first left).
const FREE_MEMORY_SHARE: u64 = 16;
/// Fewest buffers of the default. There is no most: the cache's lookups
/// and victim choice cost the same for any count (`fs_ext2::cache`), so
/// only memory bounds it.
const DEFAULT_NBUF_MIN: u64 = 16;
/// Most buffers `nbuf=` may ask for (1 GiB of 1 KiB blocks; the heap's
/// limit, `abi::layout::USER_HEAP_MAX_BYTES`, refuses more anyway).
const MAX_NBUF: u64 = 1 << 20;

struct Start {
    monitor: Pid,
    driver: Pid,
    driver_queue: u32,
    device_bytes: u64,
    target: String,
    options: String,
    handles: Vec<u64>,
}

fn parse_args(args: &Args) -> Option<Start> {
    let words: Vec<&str> = args.iter().collect();
    if words.len() < 7 {
        return None;
    }
    let n = |i: usize| words[i].parse::<u64>().ok();
    Some(Start {
        monitor: Pid(n(0)?),
        driver: Pid(n(1)?),
        driver_queue: u32::try_from(n(2)?).ok()?,
        device_bytes: n(3)?,
        target: String::from(words[4]),
        options: String::from(if words[5] == "-" { "" } else { words[5] }),
        handles: words[6..].iter().map(|w| w.parse().ok()).collect::<Option<Vec<u64>>>()?,
    })
}

fn main(args: Args) -> i32 {
    if args.get(0) == Some("timer") {
        return match args.get(1).and_then(|p| p.parse::<u64>().ok()) {
            Some(manager) => timer::run(Pid(manager)),
            None => 2,
        };
    }
    let queue = msg::init_qseg(16, 4, QUEUE_MESSAGES + 8, QUEUE_PAGES)
        .and_then(|()| msg::open_queue(QUEUE_MESSAGES, true));
    let Some(a) = parse_args(&args) else {
        println!("ext2fs: arguments: MONITOR DRIVER QUEUE BYTES TARGET OPTIONS HANDLE...");
        return 2;
    };
    let queue = match queue {
        Ok(q) if q.0 == ext2fs::QUEUE => q,
        _ => {
            tell_monitor(a.monitor, Err(EIO));
            return 2;
        }
    };
    let Ok(driver) = msg::open_link(a.driver, Queue(a.driver_queue)) else {
        tell_monitor(a.monitor, Err(EIO));
        return 2;
    };
    let _ = sys::set_exit_queue(queue.0);
    let mut disk =
        Disk::new(queue, a.monitor, (a.driver, a.driver_queue, driver), &a.handles, a.device_bytes);
    start_workers(&mut disk, &a);
    let is_volatile = match write_cache_option() {
        Ok(option) => option.is_volatile(disk.ask_write_cache()),
        Err(why) => {
            println!("ext2fs: {}: {why}", a.target);
            tell_monitor(a.monitor, Err(EINVAL));
            return 1;
        }
    };
    disk.set_volatile_write_cache(is_volatile);
    let read_windows = match read_window_option() {
        Ok(on) => on,
        Err(why) => {
            println!("ext2fs: {}: {why}", a.target);
            tell_monitor(a.monitor, Err(EINVAL));
            return 1;
        }
    };
    let opts = match mount_options(&a.options, &mut disk) {
        Ok(o) => o,
        Err(why) => {
            println!("ext2fs: {}: {why}", a.target);
            tell_monitor(a.monitor, Err(EINVAL));
            return 1;
        }
    };
    let opts = match journal_option() {
        Ok(journal) => MountOptions { journal, ..opts },
        Err(why) => {
            println!("ext2fs: {}: {why}", a.target);
            tell_monitor(a.monitor, Err(EINVAL));
            return 1;
        }
    };
    let fs = match Fs::mount(disk, opts) {
        Ok(fs) => fs,
        Err((e, _)) => {
            println!("ext2fs: {}: not mounted: {e}", a.target);
            tell_monitor(a.monitor, Err(e.errno));
            return 1;
        }
    };
    let mut service = Service::new(fs, a.monitor.0, sys::rdtsc() ^ sys::getpid().0);
    service.set_own_pid(sys::getpid().0);
    service.set_read_windows(read_windows, page_shared);
    let workers = service.fs.device().workers();
    let stats = service.fs.statfs();
    println!(
        "ext2fs: {} mounted: nbuf={} ({} KiB of {}-byte blocks){}{}{}{}, {} I/O workers, {} of {} blocks free",
        a.target,
        opts.nbuf,
        opts.nbuf * service.fs.block_bytes() / 1024,
        service.fs.block_bytes(),
        if service.fs.is_read_only() { ", read-only" } else { "" },
        if opts.sync_metadata { ", sync" } else { "" },
        if service.fs.mounted_unclean() { ", not cleanly unmounted: free counts recounted" } else { "" },
        if is_volatile { ", volatile write cache: a flush between order levels" } else { "" },
        workers,
        stats.map_or(0, |s| s.free_blocks),
        stats.map_or(0, |s| s.blocks),
    );
    if let Some(r) = service.fs.journal_replayed() {
        println!(
            "ext2fs: {}: journal replayed: {} transactions, {} blocks written home ({} revoked; {})",
            a.target, r.transactions, r.blocks, r.revoked, r.end
        );
    }
    if service.fs.has_journal() {
        println!("ext2fs: {}: journal {}", a.target, service.fs.journal_state());
    }
    // A read-only volume never holds dirty blocks: no clock.
    let clock = if service.fs.is_read_only() { None } else { start_timer() };
    tell_monitor(a.monitor, Ok(()));
    serve(&mut service, queue, clock, a.monitor)
}

fn tell_monitor(monitor_pid: Pid, outcome: Result<(), Errno>) {
    let code = match outcome {
        Ok(()) => 0,
        Err(e) => e.code(),
    };
    let _ = msg::open_link(monitor_pid, Queue(monitor::START_QUEUE))
        .and_then(|l| msg::send(l, &[ext2fs::READY, ext2fs::QUEUE as u64, code, 0]));
}

/// One worker per handle after the first, each waited for until its
/// first call (or its end).
fn start_workers(disk: &mut Disk, a: &Start) {
    let me = sys::getpid().0;
    for (slot, &h) in a.handles[1..].iter().enumerate() {
        let args = alloc::format!("{me} {} {} {h}", a.driver.0, a.driver_queue);
        match sys::spawn("ext2io", &args) {
            Ok(pid) => disk.add_worker(pid, slot),
            Err(e) => println!("ext2fs: cannot start an I/O worker: {}", e.name()),
        }
    }
    let mut rx = Page::zeroed();
    while disk.ready_workers() < disk.workers() {
        match msg::receive_data(Queue(ext2fs::QUEUE), &mut rx.0) {
            // Only workers and the kernel know this manager yet.
            Ok(r) => {
                let _ = disk.take(r, &[]);
            }
            Err(_) => break,
        }
    }
}

/// The write-back clock (`timer.rs`); `None` when it cannot be started
/// (the volume then works as before it existed: dirty blocks age only
/// when requests arrive, and `sync` writes them).
fn start_timer() -> Option<Pid> {
    let me = sys::getpid().0;
    match sys::spawn("ext2fs", &alloc::format!("timer {me}")) {
        Ok(pid) => Some(pid),
        Err(e) => {
            println!("ext2fs: cannot start its write-back timer: {}", e.name());
            None
        }
    }
}

/// The manager's side of its timer: the child's pid and, while nothing is
/// dirty, its `TICK` call held unanswered (the timer unarmed).
struct Timer {
    pid: Option<Pid>,
    parked: Option<ReplyHandle>,
}

impl Timer {
    /// Whether `r` is this manager's timer's tick (the kernel stamps the
    /// sender: no one else's `TICK` is).
    fn is_tick(&self, r: &msg::Received) -> bool {
        r.kind == Kind::Call && r.message[0] == timer::TICK && self.pid == Some(r.sender)
    }

    /// Arms a parked timer when blocks are dirty (`delay_ns`, from
    /// [`writeback_delay_ns`]).
    fn arm_if_dirty(&mut self, delay_ns: Option<u64>) {
        if let Some(ns) = delay_ns
            && let Some(h) = self.parked.take()
        {
            let _ = msg::reply(h, &[timer::ARM, ns, 0, 0], &[]);
        }
    }
}

/// Shortest sleep the timer is armed with: a pass due now still lets the
/// timer's call go round once (the kernel's sleep ends at a 10 ms tick
/// anyway).
const MIN_WRITEBACK_DELAY_NS: u64 = 1_000_000;

/// How long the write-back timer sleeps before its next tick: until the
/// oldest dirty block expires, or the next pass may run
/// (`fs_ext2::cache::Cache::next_expiry_ms`), at most the timer's longest
/// sleep (`timer::MAX_DELAY_NS`, which bounds how long it outlives its
/// manager); `None` while nothing is dirty (the timer stays parked). It
/// was a fixed write-back interval (1 s): a block dirtied just after a
/// tick started up to that much after it expired.
fn writeback_delay_ns(fs: &mut fs_ext2::Fs<Disk>, now_ms: u64) -> Option<u64> {
    let ms = fs.next_expiry_ms(now_ms)?;
    Some(ms.saturating_mul(1_000_000).clamp(MIN_WRITEBACK_DELAY_NS, timer::MAX_DELAY_NS))
}

/// The mount's options, then the kernel command line's `nbuf=`, then the
/// default sized from memory for the volume's block size.
fn mount_options(options: &str, disk: &mut Disk) -> Result<MountOptions, String> {
    let mut opts = MountOptions { nbuf: 0, read_only: false, sync_metadata: false, journal: true };
    for word in options.split(',').filter(|w| !w.is_empty()) {
        match word.split_once('=') {
            None if word == "ro" => opts.read_only = true,
            None if word == "rw" => opts.read_only = false,
            None if word == "sync" => opts.sync_metadata = true,
            Some(("nbuf", n)) => opts.nbuf = parse_nbuf(n).ok_or(alloc::format!("bad nbuf={n}"))?,
            _ => return Err(alloc::format!("unknown mount option `{word}`")),
        }
    }
    if opts.nbuf == 0 {
        let mut line = vec![0u8; 1024];
        if let Ok(len) = sys::kernel_options(&mut line) {
            let text = core::str::from_utf8(&line[..len.min(line.len())]).unwrap_or("");
            if let Some(n) = protocols::options::lookup(text, "nbuf") {
                opts.nbuf = parse_nbuf(n).ok_or(alloc::format!("bad boot option nbuf={n}"))?;
            }
        }
    }
    if opts.nbuf == 0 {
        opts.nbuf = default_nbuf(block_bytes(disk).unwrap_or(1024));
    }
    Ok(opts)
}

/// The boot option `blk.wcache=auto|on|off` (default `auto`: as the
/// driver says, `block::OP_WRITE_CACHE`); anything else refuses the mount
/// with the reason, as a bad `nbuf=` does.
fn write_cache_option() -> Result<WriteCacheOption, String> {
    let mut line = vec![0u8; 1024];
    let Ok(len) = sys::kernel_options(&mut line) else { return Ok(WriteCacheOption::Auto) };
    let text = core::str::from_utf8(&line[..len.min(line.len())]).unwrap_or("");
    match protocols::options::lookup(text, "blk.wcache") {
        None => Ok(WriteCacheOption::Auto),
        Some(v) => WriteCacheOption::parse(v)
            .ok_or(alloc::format!("bad boot option blk.wcache={v} (auto, on or off)")),
    }
}

/// The boot option `ext2.readwin=on|off` (`protocols::unix::read_window`;
/// default on): off, every `io::OP_READ_WINDOW_SLOT` is `ENOSYS` and
/// readers make one call per read, as before windows. Anything else
/// refuses the mount with the reason, as a bad `blk.wcache=` does.
fn read_window_option() -> Result<bool, String> {
    let mut line = vec![0u8; 1024];
    let Ok(len) = sys::kernel_options(&mut line) else { return Ok(true) };
    let text = core::str::from_utf8(&line[..len.min(line.len())]).unwrap_or("");
    match protocols::options::lookup(text, read_window::BOOT_OPTION) {
        None | Some("on") => Ok(true),
        Some("off") => Ok(false),
        Some(v) => Err(alloc::format!("bad boot option {}={v} (on or off)", read_window::BOOT_OPTION)),
    }
}

/// The boot option `ext2.journal=on|off` (default on): on, a volume with
/// a journal (`has_journal`, ext3) has `fsync` and `sync` committed
/// through it (`fs_ext2::cache::Cache::commit`); off, the ordered writes
/// as on ext2. A volume that needs recovery is replayed either way.
/// Anything else refuses the mount with the reason.
fn journal_option() -> Result<bool, String> {
    let mut line = vec![0u8; 1024];
    let Ok(len) = sys::kernel_options(&mut line) else { return Ok(true) };
    let text = core::str::from_utf8(&line[..len.min(line.len())]).unwrap_or("");
    match protocols::options::lookup(text, "ext2.journal") {
        None | Some("on") => Ok(true),
        Some("off") => Ok(false),
        Some(v) => Err(alloc::format!("bad boot option ext2.journal={v} (on or off)")),
    }
}

/// Does a process other than this one map the page at `address` (a read
/// window's page, `fs_ext2::readwin`)? In doubt, yes: the page is then
/// not given to another process.
fn page_shared(address: u64) -> bool {
    !matches!(sys::page_owners(address, PAGE_SIZE), Ok(owners) if owners <= 1)
}

/// A fault in a client's read-window region (`abi::msg::Kind::PageFault`:
/// m0 = the process, m1 = the address): its page, shared and writable,
/// if it has one here; else the fault fails (the process ends, as for
/// any access to memory it was never given).
fn window_fault(service: &Service<Disk>, m: [u64; 4]) {
    let (pid, page) = (Pid(m[0]), m[1] & !(PAGE_SIZE - 1));
    let mapped = match service.readwin.page_address(m[0]) {
        Some(src) => sys::page_resolve(pid, page, src, WINDOW_PAGE_FLAGS).is_ok(),
        None => false,
    };
    if !mapped {
        let _ = sys::page_resolve(pid, page, 0, pager::FAIL);
    }
}

/// A read-window page as a client maps it: this process's own frame,
/// writable by both (the client moves its offsets there).
const WINDOW_PAGE_FLAGS: u64 = pager::SHARE | pager::SHARED | pager::WRITABLE;

fn parse_nbuf(text: &str) -> Option<usize> {
    text.parse::<u64>().ok().filter(|&n| (1..=MAX_NBUF).contains(&n)).map(|n| n as usize)
}

/// The default buffer count: 1/[`FREE_MEMORY_SHARE`] of the free memory
/// in buffers of the volume's block size, at least [`DEFAULT_NBUF_MIN`].
fn default_nbuf(block_bytes: u64) -> usize {
    let free = sys::info(InfoKey::FreeMemoryBytes);
    (free / FREE_MEMORY_SHARE / block_bytes.max(1)).max(DEFAULT_NBUF_MIN) as usize
}

/// The volume's block size, from its superblock (before mounting: the
/// buffers are made at mount and their size is the block's). `None`
/// when it cannot be read; the mount then says what is wrong.
fn block_bytes(disk: &mut Disk) -> Option<u64> {
    let first_sector = (SUPERBLOCK_OFFSET / fs_ext2::device::SECTOR_BYTES) as u64;
    disk.submit(Transfer {
        tag: 0,
        direction: Direction::Read,
        first_sector,
        buffers: vec![vec![0u8; SUPERBLOCK_BYTES].into()],
    });
    let (t, outcome) = disk.complete()?;
    outcome.ok()?;
    let sb = Superblock::parse(t.buffers.first()?);
    (sb.log_block_size <= 6).then(|| sb.block_bytes() as u64)
}

/// The caller's lent buffers, through the lease calls.
struct Leases(ReplyHandle);

impl Lent for Leases {
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), Errno> {
        match msg::lease_read(self.0, offset, buf, 0) {
            Ok(n) if n == buf.len() => Ok(()),
            _ => Err(EFAULT),
        }
    }

    fn write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        match msg::lease_write(self.0, offset, bytes, 0) {
            Ok(n) if n == bytes.len() => Ok(()),
            _ => Err(EFAULT),
        }
    }

    fn write_segments(&mut self, offset: u64, segments: &[&[u8]]) -> Result<(), Errno> {
        let want: usize = segments.iter().map(|s| s.len()).sum();
        match msg::lease_write_segments(self.0, offset, segments) {
            Ok(n) if n == want => Ok(()),
            _ => Err(EFAULT),
        }
    }

    fn read_segments(&mut self, offset: u64, segments: &mut [&mut [u8]]) -> Result<(), Errno> {
        let want: usize = segments.iter().map(|s| s.len()).sum();
        match msg::lease_read_segments(self.0, offset, segments) {
            Ok(n) if n == want => Ok(()),
            _ => Err(EFAULT),
        }
    }
}

/// No buffers lent: a one-way message's.
struct NoLent;

impl Lent for NoLent {
    fn read(&mut self, _offset: u64, _buf: &mut [u8]) -> Result<(), Errno> {
        Err(EFAULT)
    }

    fn write(&mut self, _offset: u64, _bytes: &[u8]) -> Result<(), Errno> {
        Err(EFAULT)
    }
}

/// A forwarded open (`fs::OP_OPEN_FORWARDED`) that failed here: its call
/// goes back to the monitor (`monitor::OP_OPEN_DECLINED`, word 1 = the
/// errno, the request's data unchanged), which opens the usual way and
/// answers. Err: it could not be passed (the caller is answered with the
/// error instead).
fn pass_back(
    back: &mut Option<(u64, Link)>,
    monitor_pid: Pid,
    call: ReplyHandle,
    e: Errno,
    data: &[u8],
) -> Result<(), abi::Error> {
    let queue = fs::Forwarded::decode(data).map_or(monitor::QUEUE as u64, |(f, _)| f.monitor_queue);
    let link = match *back {
        Some((q, l)) if q == queue => l,
        _ => {
            if let Some((_, old)) = back.take() {
                let _ = msg::close_link(old);
            }
            let l = msg::open_link(monitor_pid, Queue(queue as u32))?;
            *back = Some((queue, l));
            l
        }
    };
    msg::forward(call, link, &[monitor::OP_OPEN_DECLINED, encode_result(Err(e)), 0, 0], data)
}

/// Receive, answer, repeat. Requests kept while the cache waited for the
/// disk come first; workers' calls and their ends go to the device side.
fn serve(service: &mut Service<Disk>, queue: Queue, timer_pid: Option<Pid>, monitor_pid: Pid) -> i32 {
    let clock = Clock::new();
    // The link on which declined forwarded opens go back to the monitor
    // (its request queue, from the request).
    let mut back: Option<(u64, Link)> = None;
    let mut timer = Timer { pid: timer_pid, parked: None };
    let mut rx = Page::zeroed();
    let mut tx = Page::zeroed();
    let mut answer: Option<(ReplyHandle, [u64; 4], usize)> = None;
    loop {
        // Writes the last request left waiting to go together (write-behind
        // submits after `reap`) go before the manager waits (disk.rs).
        service.fs.device_mut().dispatch();
        let stashed = service.fs.device_mut().stash.pop_front();
        let (r, kept, answered) = match stashed {
            Some(s) => {
                if let Some((h, words, len)) = answer.take() {
                    let _ = msg::reply(h, &words, &tx.0[..len]);
                }
                (s.received, Some(s.data), s.answered)
            }
            None => {
                let received = match answer.take() {
                    Some((h, words, len)) => msg::reply_wait(Some(h), &words, &tx.0[..len], queue, &mut rx.0),
                    None => msg::reply_wait(None, &[0; 4], &[], queue, &mut rx.0),
                };
                let Ok(r) = received else { continue };
                (r, None, false)
            }
        };
        if r.kind == Kind::ChildExit && timer.pid == Some(Pid(r.message[0])) {
            // The timer ended (it should not while this runs): its held
            // call went with it; dirty blocks age at requests again.
            timer = Timer { pid: None, parked: None };
        }
        if timer.is_tick(&r) {
            // A write-back pass on an idle volume; re-armed at once while
            // anything is dirty (a block whose waits were not on the disk
            // goes at a later pass), else held until a request dirties one.
            let _ = service.fs.reap();
            let _ = service.fs.write_expired(clock.now_ns() / 1_000_000);
            match writeback_delay_ns(&mut service.fs, clock.now_ns() / 1_000_000) {
                Some(ns) => answer = Some((r.reply, [timer::ARM, ns, 0, 0], 0)),
                None => timer.parked = Some(r.reply),
            }
            continue;
        }
        if r.kind == Kind::PageFault {
            window_fault(service, r.message);
            continue;
        }
        let data = match &kept {
            Some(d) => &d[..],
            None => &rx.0[..r.len.min(rx.0.len())],
        };
        let Some(r) = service.fs.device_mut().take(r, data) else {
            let _ = service.fs.reap();
            continue;
        };
        if r.kind != Kind::Call {
            // The monitor closes disk files with a one-way message (no
            // answer is waited for); `Service::request` checks that it is
            // the monitor's. Nothing else comes one way from clients.
            if r.kind == Kind::Short && r.message[0] == io::OP_CLOSE {
                let tx_bytes: &mut [u8; MESSAGE_DATA_BYTES] = &mut tx.0;
                let _ =
                    service.request(r.sender.0, r.message, &[], clock.realtime_ns(), tx_bytes, &mut NoLent);
                let _ = service.fs.reap();
            }
            continue;
        }
        if r.message[0] == protocols::heap::OP_HEAP_STATS {
            // The soak's memory accounting (`protocols::heap`): how much,
            // never what. The buffer cache, the order's slab and the
            // block index are bounded by `nbuf` and keep their capacity,
            // so the heap's break is a high-water mark, as memfs's is.
            let (in_use, heap) = runtime::heap_stats();
            answer = Some((r.reply, [in_use, heap, 0, 0], 0));
            continue;
        }
        // One clock reading per request (each is a 128-bit division):
        // the request's time stamps, the replay's and the write-back
        // check's, where four readings were taken.
        let uptime_ns = clock.now_ns();
        let now_ns = clock.realtime_at(uptime_ns);
        let now_ms = uptime_ns / 1_000_000;
        if let Some((words, reply)) = service.fs.device_mut().replay_for(r.sender, &r.message, data, now_ns) {
            // Done already, while the device was restarted (disk.rs).
            let len = reply.len().min(tx.0.len());
            tx.0[..len].copy_from_slice(&reply[..len]);
            answer = Some((r.reply, words, len));
            continue;
        }
        let mut lent = Leases(r.reply);
        let tx_bytes: &mut [u8; MESSAGE_DATA_BYTES] = &mut tx.0;
        // The device side answers the monitor's call early if it must
        // wait for a restarted driver (disk.rs, `wait_for_device`).
        let dev = service.fs.device_mut();
        // A forwarded open's caller is a process, not the monitor: it is
        // not answered early (`ERESTART` is the monitor's to retry), it
        // waits for the restarted driver as a process's read does.
        let forwarded = r.message[0] == fs::OP_OPEN_FORWARDED;
        let asker = if forwarded { Pid(0) } else { r.sender };
        (dev.serving, dev.answered_early) = (Some((asker, r.reply, r.message[0])), answered);
        let (mut words, len) = service.request(r.sender.0, r.message, data, now_ns, tx_bytes, &mut lent);
        if let Some((pid, at, src)) = service.take_map_wanted()
            && sys::page_resolve(Pid(pid), at, src, WINDOW_PAGE_FLAGS).is_err()
        {
            // Not mapped (no region of ours there, a page there already):
            // the caller reads with plain calls.
            words = [encode_result(Err(EFAULT)), 0, 0, 0];
        }
        let _ = service.fs.reap();
        let dev = service.fs.device_mut();
        dev.serving = None;
        dev.keep_for_replay(r.message, data, (words, &tx.0[..len.min(tx.0.len())]), now_ns);
        let answered_early = core::mem::take(&mut dev.answered_early);
        // Blocks dirty too long (`fs_ext2::cache::DIRTY_EXPIRE_MS`) start
        // on their way to the disk (nothing is waited for), at most once
        // per `WRITEBACK_INTERVAL_MS`. The check runs after each request,
        // and at the timer's ticks while anything is dirty (`timer.rs`):
        // an idle volume's blocks expire too.
        let _ = service.fs.write_expired(now_ms);
        // The delay only matters to a parked timer (one already armed
        // ticks anyway): not worked out after every request.
        if timer.parked.is_some() {
            timer.arm_if_dirty(writeback_delay_ns(&mut service.fs, now_ms));
        }
        if let Some(e) = service.take_declined()
            && pass_back(&mut back, monitor_pid, r.reply, e, data).is_ok()
        {
            continue;
        }
        if !answered_early {
            answer = Some((r.reply, words, len));
        }
    }
}
