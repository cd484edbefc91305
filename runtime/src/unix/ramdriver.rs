//! The RAMDRIVER client: block I/O on a RAM disk in `ramdriver` mode done
//! in this process's own context (seed 000: Newman's kernel-mode AST "in
//! the context of the issuing process ... the user's buffer is visible
//! without having to double-map it", with its MUTEX of many readers and
//! one writer). See `protocols::unix::block::OP_MAP` and `ram_lock`.
//!
//! On the first `read`, `write` or `lseek` of a block descriptor this
//! module asks the driver for `OP_MAP`. If the driver says no (`ENODEV`
//! from a virtio-blk disk or a PDDRIVER open, `EBUSY` for a handle another
//! process mapped first, `ENOSPC` when the slots are gone) the descriptor
//! uses the generic block path (one call, the buffer lent) for the rest
//! of its life. If it says yes, the driver becomes the pager of a window
//! at `abi::layout::USER_DEVICE_MAP_BASE..`: the lock page, then the
//! disk, each page mapped shared on first touch. Every transfer then takes
//! the lock (reader: own byte, then the writer word; writer: the writer
//! word, then every reader byte clear), copies with one `copy_from_slice`,
//! and lets the lock go. A waiter spins for a while ([`SPIN_NS`]), then
//! sleeps in the driver (`block::OP_LOCK_WAIT`, which the driver answers
//! when it has taken the lock for us); a release that finds the driver's
//! waiters count above 0 sends it `block::OP_LOCK_WAKE` (the protocol:
//! `ram_lock`). With no driver any more (killed), a sleep ends in `EIO`.
//! The offset is the lock page's word for the slot, which the driver uses
//! for the same handle's READ, WRITE and SEEK, so descriptors sharing the
//! handle (dup; fork, whose child uses the generic path) see one offset;
//! a transfer or seek reads and moves it with the lock held, as the
//! driver does, so the two never start from one offset (see [`transfer`]).
//!
//! A dead driver (killed, or restarted as a new process): its pages stay
//! mapped here (the frames are freed when this process ends), so nothing
//! would stop a copy from its stale disk. The kernel zeroes the first
//! page of a dead pager's regions in the device-mapping area, which is a
//! window's lock page: its last word, `ram_lock::LIVE_OFFSET`, then reads
//! 0 where the driver stored `ram_lock::LIVE`, and a transfer or seek that
//! finds it so with the lock held is `EIO`, as every call to the dead
//! driver is.
//!
//! Windows: one per (driver, writable) in a process, kept for the life of
//! the process (there is no call to give a pager region back, and a
//! process has few: `abi::pager::MAX_REGIONS`), reused by later opens, as
//! a POSIX mapping outlives the descriptor it came from. A forked child
//! starts with none ([`after_fork`]): the driver maps windows for the
//! process that asked.
//!
//! Checks are the driver's own (`unix_core::blockdev::check`): whole
//! blocks, at most `block::MAX_TRANSFER_BYTES`, inside the device, else
//! `EINVAL` with nothing moved; `EBADF` for the wrong direction.

use super::{Errno, Fd, MAX_FDS};
use crate::msg::{self, Link};
use crate::sys;
use abi::Pid;
use abi::layout::{PAGE_SIZE, USER_DEVICE_MAP_BASE, USER_DEVICE_MAP_BYTES};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use protocols::unix::block::{self, ram_lock};
use protocols::unix::{FdInfo, errno, open_flags};
use spin::Mutex;

/// How long a waiter spins before it sleeps in the driver (when there is
/// more than one CPU: on one, the holder cannot be running while the
/// waiter spins, and the waiter sleeps at once). Sleeping costs a call,
/// the driver's wake message and its reply: four address-space switches,
/// each followed under QEMU's TCG by refilling the emulated TLB for the
/// pages the process touches, tens of µs in all; a 32 KiB copy takes
/// about 10 µs, and a waiter may stand behind a writer and the readers
/// before it. Measured with benchmark D's five jobs on two CPUs
/// (docs/devices.md, "Benchmark D"): a spin of 5 µs gave 0.71 s per job,
/// 20 µs 0.48 s, 50 µs 0.24 s, 100 µs 0.20 s, 200 µs 0.18 s, 400 µs 0.26
/// s (one run each, a quiet host): 100 µs, where the curve flattens.
const SPIN_NS: u64 = 100_000;
/// Spins when the TSC's frequency is not known (`InfoKey::TscHz` 0).
const SPINS_WITHOUT_TSC: u32 = 10_000;

#[derive(Clone, Copy)]
enum State {
    /// Not asked yet.
    Untried,
    /// The driver said no: the generic path.
    Generic,
    Mapped(Mapped),
}

#[derive(Clone, Copy)]
struct Mapped {
    /// The window's start: the lock page, the disk from the next page.
    start: u64,
    size_bytes: u64,
    slot: usize,
    readable: bool,
    writable: bool,
}

/// A window this process has made (pager regions are never given back).
#[derive(Clone, Copy)]
struct Window {
    driver: u64,
    queue: u32,
    writable: bool,
    start: u64,
    len: u64,
}

struct Table {
    fds: [State; MAX_FDS],
    windows: Vec<Window>,
    /// Where the next window goes.
    next_bytes: u64,
}

static TABLE: Mutex<Table> =
    Mutex::new(Table { fds: [State::Untried; MAX_FDS], windows: Vec::new(), next_bytes: 0 });

/// `fd` is closed (or replaced): its next life starts untried.
pub(crate) fn forget(fd: Fd) {
    if let Ok(i) = usize::try_from(fd)
        && let Some(state) = TABLE.lock().fds.get_mut(i)
    {
        *state = State::Untried;
    }
}

/// In a forked child: the windows were mapped for the parent, and the
/// mapped handles' slots are the parent's; every descriptor asks again
/// (and gets `EBUSY`, so the generic path, for a handle the parent
/// mapped). New windows go above the parent's, whose pager regions the
/// child inherited.
pub(crate) fn after_fork() {
    let mut t = TABLE.lock();
    t.fds = [State::Untried; MAX_FDS];
    t.windows.clear();
}

/// The lock page's words, at a window's start, and the way to the driver
/// for sleeping and waking (`block::OP_LOCK_WAIT`, `OP_LOCK_WAKE`).
struct Lock {
    start: u64,
    slot: usize,
    driver: Link,
}

impl Lock {
    fn writer(&self) -> &AtomicU32 {
        // SAFETY: the window's first page is the lock page, mapped shared
        // and writable by the driver (its pager) on first touch for as long
        // as the process lives (after the driver's end, zeroed, still
        // mapped); WRITER_OFFSET is 4-aligned. Every process touches it
        // only atomically.
        unsafe { &*((self.start + ram_lock::WRITER_OFFSET as u64) as *const AtomicU32) }
    }

    fn waiters(&self) -> &AtomicU32 {
        // SAFETY: as in `writer`; WAITERS_OFFSET is 4-aligned, in the page.
        unsafe { &*((self.start + ram_lock::WAITERS_OFFSET as u64) as *const AtomicU32) }
    }

    fn wake_sent(&self) -> &AtomicU32 {
        // SAFETY: as in `writer`; WAKE_SENT_OFFSET is 4-aligned, in the page.
        unsafe { &*((self.start + ram_lock::WAKE_SENT_OFFSET as u64) as *const AtomicU32) }
    }

    fn reader(&self, slot: usize) -> &AtomicU8 {
        // SAFETY: as in `writer`; slot < SLOTS keeps it inside the page.
        unsafe { &*((self.start + (ram_lock::READERS_OFFSET + slot) as u64) as *const AtomicU8) }
    }

    fn offset(&self) -> &AtomicU64 {
        // SAFETY: as in `writer`; 8-aligned, inside the page for slot < SLOTS.
        unsafe { &*((self.start + (ram_lock::OFFSETS_OFFSET + 8 * self.slot) as u64) as *const AtomicU64) }
    }

    fn stat(&self, index: usize) -> &AtomicU64 {
        // SAFETY: as in `writer`; three counters at STATS_OFFSET.
        unsafe { &*((self.start + (ram_lock::STATS_OFFSET + 8 * index) as u64) as *const AtomicU64) }
    }

    /// Whether the driver still lives: the page's last word, which the
    /// kernel zeroes first when the driver ends. Load it *after* the
    /// offset word (which lies below it): if it is still `LIVE`, the
    /// offset loaded before it was not yet zeroed either.
    fn driver_lives(&self) -> bool {
        // SAFETY: as in `writer`; LIVE_OFFSET is the page's last u64.
        let live = unsafe { &*((self.start + ram_lock::LIVE_OFFSET as u64) as *const AtomicU64) };
        live.load(Ordering::SeqCst) == ram_lock::LIVE
    }

    fn no_readers(&self) -> bool {
        (0..ram_lock::SLOTS).all(|s| self.reader(s).load(Ordering::SeqCst) == 0)
    }

    /// Reader: set own byte, then copy if there is no writer; else clear
    /// the byte, spin a while for the writer to go, then sleep in the
    /// driver, which sets the byte for us. SeqCst: the store of the byte
    /// must be seen before the load of the writer word (the writer does
    /// the opposite), which x86 keeps only with a locked store.
    fn read_lock(&self) -> Result<(), Errno> {
        let mine = self.reader(self.slot);
        mine.store(1, Ordering::SeqCst);
        if self.writer().load(Ordering::SeqCst) == 0 {
            return Ok(());
        }
        self.read_release();
        loop {
            if spin_until(|| self.writer().load(Ordering::SeqCst) == 0) {
                mine.store(1, Ordering::SeqCst);
                if self.writer().load(Ordering::SeqCst) == 0 {
                    return Ok(());
                }
                self.read_release();
                continue;
            }
            // The driver answers once it has set our byte with no writer.
            return self.sleep(ram_lock::WAIT_READ);
        }
    }

    /// Clear own reader byte; a writer may be waiting for it.
    fn read_release(&self) {
        self.reader(self.slot).store(0, Ordering::SeqCst);
        // Only a writer waiting for the readers to go can be let in by a
        // reader's release, and such a writer holds the writer word.
        if self.waiters().load(Ordering::SeqCst) != 0 && self.writer().load(Ordering::SeqCst) != 0 {
            self.wake();
        }
    }

    /// Writer: the writer word from 0 to slot + 1, then every reader
    /// byte clear (readers that came after see the word and back off).
    /// Each of the two waits spins a while, then sleeps in the driver,
    /// which answers when both are done.
    fn write_lock(&self) -> Result<(), Errno> {
        let me = self.slot as u32 + 1;
        let take = || self.writer().compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst).is_ok();
        if !take() && !spin_until(take) {
            // The driver takes the word for us and waits for the readers.
            return self.sleep(ram_lock::WAIT_WRITE);
        }
        if self.no_readers() || spin_until(|| self.no_readers()) {
            return Ok(());
        }
        let slept = self.sleep(ram_lock::WAIT_WRITE);
        if slept.is_err() {
            self.write_unlock();
        }
        slept
    }

    fn write_unlock(&self) {
        self.writer().store(0, Ordering::SeqCst);
        if self.waiters().load(Ordering::SeqCst) != 0 {
            self.wake();
        }
    }

    /// Sleep in the driver until it answers that the lock is ours.
    fn sleep(&self, mode: u64) -> Result<(), Errno> {
        let request = [block::OP_LOCK_WAIT, self.slot as u64, mode, 0];
        loop {
            match msg::call(self.driver, &request, &[], &mut []) {
                Ok((w, _)) => return protocols::unix::result(w[0]).map(|_| ()),
                // The driver's queue is full for a moment (page faults,
                // other waiters): it is serving it; let it run.
                Err(abi::Error::QueueFull) => sys::yield_now(),
                // The driver is gone (killed): no lock, and no disk to
                // trust.
                Err(_) => return Err(errno::EIO),
            }
        }
    }

    /// Tell the driver the lock moved, unless a wake is already on its
    /// way (the driver clears the flag before it looks at the lock). A
    /// full queue is no loss either: the driver looks at the lock after
    /// each message it holds. A dead driver answers no one.
    fn wake(&self) {
        if self.wake_sent().swap(1, Ordering::SeqCst) == 0 {
            let _ = msg::send(self.driver, &[block::OP_LOCK_WAKE, 0, 0, 0]);
        }
    }
}

/// How long to spin, in TSC ticks, once asked: 0 not asked yet; with
/// [`SPIN_UNKNOWN`] when the TSC's rate is unknown, and 1 tick on one CPU.
static SPIN_TICKS: AtomicU64 = AtomicU64::new(0);
const SPIN_UNKNOWN: u64 = u64::MAX;

fn spin_ticks() -> u64 {
    let known = SPIN_TICKS.load(Ordering::Relaxed);
    if known != 0 {
        return known;
    }
    let hz = sys::info(abi::InfoKey::TscHz);
    let ticks = if sys::info(abi::InfoKey::CpusOnline) <= 1 {
        1
    } else if hz == 0 {
        SPIN_UNKNOWN
    } else {
        ((SPIN_NS as u128 * hz as u128 / 1_000_000_000) as u64).max(1)
    };
    SPIN_TICKS.store(ticks, Ordering::Relaxed);
    ticks
}

/// Spin with `pause` until `ready` (true) or for about [`SPIN_NS`]
/// (false): then the caller sleeps in the driver.
fn spin_until(mut ready: impl FnMut() -> bool) -> bool {
    let limit_ticks = spin_ticks();
    if limit_ticks == SPIN_UNKNOWN {
        for _ in 0..SPINS_WITHOUT_TSC {
            if ready() {
                return true;
            }
            core::hint::spin_loop();
        }
        return ready();
    }
    let started = sys::rdtsc();
    loop {
        if ready() {
            return true;
        }
        if sys::rdtsc().wrapping_sub(started) >= limit_ticks {
            return false;
        }
        core::hint::spin_loop();
    }
}

/// The state of `fd`, mapping it first if it was never tried.
fn state(fd: Fd, link: Link, info: &FdInfo) -> Option<Mapped> {
    let index = usize::try_from(fd).ok().filter(|&i| i < MAX_FDS)?;
    let current = TABLE.lock().fds[index];
    match current {
        State::Generic => None,
        State::Mapped(m) => Some(m),
        State::Untried => {
            let result = map(link, info);
            TABLE.lock().fds[index] = match result {
                Some(m) => State::Mapped(m),
                None => State::Generic,
            };
            result
        }
    }
}

/// `OP_MAP`, and the window if this process has none of its kind yet.
fn map(link: Link, info: &FdInfo) -> Option<Mapped> {
    let writable = open_flags::writable(info.flags as u64);
    let existing = TABLE
        .lock()
        .windows
        .iter()
        .find(|w| w.driver == info.manager_pid && w.queue == info.manager_queue && w.writable == writable)
        .copied();
    let start = match existing {
        Some(w) => w.start,
        None => USER_DEVICE_MAP_BASE + TABLE.lock().next_bytes,
    };
    let request = [block::OP_MAP, info.handle, start, 0];
    let (w, _) = msg::call(link, &request, &[], &mut []).ok()?;
    protocols::unix::result(w[0]).ok()?;
    let size_bytes = w[0];
    let window_len = PAGE_SIZE.checked_add(size_bytes)?;
    let may_write = w[2] != 0;
    match existing {
        Some(window) if window.len < window_len => return None,
        Some(_) => {}
        None => {
            let mut t = TABLE.lock();
            // A guard page between windows.
            let next =
                t.next_bytes.checked_add(window_len)?.checked_add(PAGE_SIZE)?.next_multiple_of(PAGE_SIZE);
            if next > USER_DEVICE_MAP_BYTES || t.windows.try_reserve(1).is_err() {
                return None;
            }
            drop(t);
            let me = sys::getpid();
            sys::set_pager(me, start, window_len, Pid(info.manager_pid), info.manager_queue).ok()?;
            let mut t = TABLE.lock();
            t.next_bytes = next;
            t.windows.push(Window {
                driver: info.manager_pid,
                queue: info.manager_queue,
                writable,
                start,
                len: window_len,
            });
        }
    }
    Some(Mapped {
        start,
        size_bytes,
        slot: usize::try_from(w[1]).ok().filter(|&s| s < ram_lock::SLOTS)?,
        readable: open_flags::readable(info.flags as u64),
        writable: writable && may_write,
    })
}

/// The disk's bytes `offset..offset + len` in the window.
fn disk_ptr(m: &Mapped, offset: u64) -> *mut u8 {
    (m.start + PAGE_SIZE + offset) as *mut u8
}

/// `read` of a block descriptor, if it is mapped: `None` means the
/// generic path.
pub(crate) fn read(fd: Fd, link: Link, info: &FdInfo, buf: &mut [u8]) -> Option<Result<usize, Errno>> {
    let m = state(fd, link, info)?;
    Some(transfer(&m, link, buf.len() as u64, false, |disk| {
        // SAFETY: `disk` points into the window's disk part, inside it
        // (checked against the size the driver gave); the read lock is
        // held, so no writer changes these bytes while they are copied,
        // and nothing else in this process refers to the window.
        let src = unsafe { core::slice::from_raw_parts(disk as *const u8, buf.len()) };
        buf.copy_from_slice(src);
    }))
}

/// `write` of a block descriptor, if it is mapped.
pub(crate) fn write(fd: Fd, link: Link, info: &FdInfo, buf: &[u8]) -> Option<Result<usize, Errno>> {
    let m = state(fd, link, info)?;
    Some(transfer(&m, link, buf.len() as u64, true, |disk| {
        // SAFETY: as in `read`, with the write lock: no other process
        // reads or writes the disk while this copy runs.
        let dst = unsafe { core::slice::from_raw_parts_mut(disk, buf.len()) };
        dst.copy_from_slice(buf);
    }))
}

/// Lock, check, copy, advance the offset, unlock. The offset word is
/// read and moved inside the lock: the driver serves a forked sharer's
/// READ, WRITE (which take and put back the same word) only with the
/// lock held as writer, so a transfer here and one there never start
/// from one offset (POSIX XSH 2.9.7). Before branch `posio` the offset
/// was read before the lock and stored after it, and a driver transfer
/// between the two read the same blocks as this one
/// (`ramdisk::shared_reads_take_each_block_once`; docs/filesystem.md,
/// "Positional I/O and a dead manager's window").
fn transfer(
    m: &Mapped,
    driver: Link,
    len_bytes: u64,
    is_write: bool,
    copy: impl FnOnce(*mut u8),
) -> Result<usize, Errno> {
    if !(if is_write { m.writable } else { m.readable }) {
        return Err(errno::EBADF);
    }
    let lock = Lock { start: m.start, slot: m.slot, driver };
    if is_write {
        lock.write_lock()?;
    } else {
        lock.read_lock()?;
    }
    let offset = lock.offset().load(Ordering::SeqCst);
    // A dead driver's disk is not served (its pages are still mapped here,
    // with what it held): `EIO`, as every call to it is.
    let checked = if lock.driver_lives() {
        unix_core::blockdev::check(offset, len_bytes, m.size_bytes, is_write)
    } else {
        Err(errno::EIO)
    };
    if let Ok(Some(t)) = &checked {
        copy(disk_ptr(m, t.offset_bytes));
        lock.offset().store(t.offset_bytes + t.len_bytes, Ordering::SeqCst);
    }
    if is_write {
        lock.write_unlock();
    } else {
        lock.read_release();
    }
    let Some(t) = checked? else { return Ok(0) };
    lock.stat(0).fetch_add(1, Ordering::Relaxed);
    lock.stat(if is_write { 2 } else { 1 }).fetch_add(t.len_bytes, Ordering::Relaxed);
    Ok(t.len_bytes as usize)
}

/// `lseek` of a block descriptor, if it is mapped (the same rule as the
/// driver's: `unix_core::seek`). The offset word is read and moved with
/// the read lock held, as in [`transfer`]: the driver moves the same word
/// for a forked sharer's READ, WRITE and SEEK only as the lock's writer,
/// so neither side's move lands inside the other's and is lost
/// (`ramdisk::mapped_seek_waits_for_the_lock`).
pub(crate) fn seek(
    fd: Fd,
    link: Link,
    info: &FdInfo,
    offset: i64,
    whence: u64,
) -> Option<Result<u64, Errno>> {
    let m = state(fd, link, info)?;
    let lock = Lock { start: m.start, slot: m.slot, driver: link };
    if let Err(e) = lock.read_lock() {
        return Some(Err(e));
    }
    let current = lock.offset().load(Ordering::SeqCst);
    let result = if lock.driver_lives() {
        unix_core::seek::seek_offset(current, m.size_bytes, offset, whence)
    } else {
        Err(errno::EIO)
    };
    if let Ok(new) = result {
        lock.offset().store(new, Ordering::SeqCst);
    }
    lock.read_release();
    Some(result)
}
