//! The block device under the buffer cache: `/dev/vda` through
//! `protocols::unix::block`, with several transfers in flight
//! ([`fs_ext2::BlockDevice`] over messages).
//!
//! A `call` to the driver blocks its caller until the reply, so the
//! manager hands transfers to its I/O workers (`ext2io`, one process
//! each): an idle worker waits in a call to the manager (`ext2fs::OP_WORK`)
//! whose reply is the next transfer. A write's bytes go from the cache's
//! buffers into the worker's lent receive buffer (`lease_write`) before
//! that reply; a read's come back in the worker's next call, from its
//! lent send buffer (`lease_read`). Transfers wait in order when every
//! worker is busy. Transfers larger than a worker's buffer, and the
//! device flush, the manager makes itself on its own handle. Workers and
//! manager name the offset in each request (`io::OP_PREAD`, `OP_PWRITE`:
//! one call per transfer, no seek).
//!
//! Small writes wait for company (branch `lat`): a write of at most half
//! a worker's buffer stays in the queue until the manager is about to
//! wait (a transfer the cache waits for, a flush, or its next message:
//! [`Disk::dispatch`], called from `main.rs` too), so the writes of one
//! level of the cache's write order leave together. When they are all the
//! cache waits for, the manager sends them itself in one
//! `block::OP_PWRITEV` ([`Disk::write_here`]: one call, one device
//! notification, one reply); otherwise one worker takes them together
//! (`ext2fs::WORK_WRITEV`). Reads and larger writes go at once.
//!
//! The manager serves clients and workers on one queue. While the cache
//! waits for a transfer ([`BlockDevice::complete`]) the requests of
//! clients that arrive are kept ([`Disk::stash`]) and served after the
//! operation in progress, in order (Ridge §9: the managers process a
//! request to completion before the next).
//!
//! What it is not: a cache (`fs_ext2::Cache` is) nor a driver.
//!
//! A driver that dies (issue 16; docs/reliability.md, "Restarting dead
//! servers and drivers") loses nothing: the disk holds no state in the
//! driver, so a transfer that failed because its driver ended (its call
//! failed and the driver is gone, or it went to an older driver) is not
//! given back to the cache: it is held, as is every transfer submitted
//! while the device is down, and the cache keeps its buffers (dirty ones
//! included) as in flight. When the monitor says a restarted driver is
//! ready (`ext2fs::OP_DEVICE`, with handles there) the manager links to it,
//! relinks its workers (`ext2fs::WORK_RELINK`) and sends the held
//! transfers again in the order they were first submitted (the cache
//! submits a write only once what it must follow is on the disk, so that
//! order is the declared write order). MINIX 3's file server does the same
//! for a restarted block driver.
//!
//! While the device is down, requests the cache can serve are served
//! (the manager is only blocked when an operation must wait for the
//! device). An operation that must wait, waits for the new driver (client
//! calls on handles: `read`, `write`, `fsync`), with one exception: the
//! monitor's calls, which bring the new driver's handles, cannot wait (the
//! monitor would wait for the manager and the manager for the monitor):
//! a monitor call that arrives then is answered `ERESTART` at once,
//! nothing done, and the caller's runtime sends it again after a pause (a
//! close is answered `0` and served afterwards); one already in progress
//! is answered `ERESTART` early, still completes once the device is back,
//! and its outcome answers the request when it comes again (a `Replay`,
//! [`Disk::wait_for_device`]). The wait's bound is init's: when it gives
//! the driver up, the monitor ends the manager, and every call waiting
//! gets `EIO`.
//!
//! Invariants: each transfer is returned by [`BlockDevice::complete`] or
//! [`BlockDevice::poll`] exactly once, whatever happens to its worker (a
//! worker that dies fails its transfer with `EIO` and the others go on;
//! with none left the manager makes the transfers itself), or held while
//! its driver is down and returned once a new one has made it. A failure
//! the live driver reports (`EIO` from the device, `EINVAL`) is the
//! cache's, as before: only a driver's end is retried.

use abi::Pid;
use abi::msg::Kind;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use fs_ext2::BlockDevice;
use fs_ext2::device::{Direction, SECTOR_BYTES, Transfer};
use protocols::unix::errno::{EINVAL, EIO, ENOSYS, EPERM, ERESTART};
use protocols::unix::{Errno, block, encode_result, ext2fs, io, result};
use runtime::msg::{self, Link, Page, Queue, Received, ReplyHandle};

// A worker's buffer holds the cache's largest transfer (the write-out of
// `fsync` and `sync`), so none goes the slow way (`Disk::transfer_here`:
// one driver call per block, the manager waiting).
const _: () = assert!(
    fs_ext2::cache::MAX_WRITE_OUT_PAGES * abi::layout::PAGE_SIZE as usize <= ext2fs::WORKER_TRANSFER_BYTES
);

/// A client request that came while the cache waited.
pub struct Stashed {
    pub received: Received,
    pub data: Vec<u8>,
    /// Answered already (the monitor's close while the device was down):
    /// served, but not answered again.
    pub answered: bool,
}

struct Worker {
    pid: Pid,
    /// Its `OP_WORK` call, held while it has nothing to do.
    idle: Option<ReplyHandle>,
    /// Its transfers: one, or several writes sent together
    /// (`ext2fs::WORK_WRITEV`), the first's tag naming them all.
    busy: Vec<Transfer>,
    /// Which handle of the monitor's it takes (`handles[1 + slot]`).
    slot: usize,
    /// The driver it is linked to ([`Disk::generation`] then).
    generation: u64,
}

/// `/dev/vda` as the cache sees it.
pub struct Disk {
    queue: Queue,
    driver: Link,
    handle: u64,
    sectors: u64,
    workers: Vec<Worker>,
    waiting: VecDeque<Transfer>,
    finished: VecDeque<(Transfer, Result<(), Errno>)>,
    /// Client requests received while waiting for the device.
    pub stash: VecDeque<Stashed>,
    rx: Page,
    /// Transfers each way, for the server's counters.
    pub transfers: u64,
    /// Ticks waiting for transfers and for flushes ([`BlockDevice::wait_ticks`]).
    ticks: [u64; 2],
    /// The driver answers `io::OP_PREAD` and `OP_PWRITE` (until it says
    /// `ENOSYS`).
    has_pread: bool,
    /// The driver answers `block::OP_PWRITEV` (until it says `ENOSYS`).
    has_writev: bool,
    /// The monitor: the only sender of `ext2fs::OP_DEVICE`.
    monitor: Pid,
    driver_pid: Pid,
    driver_queue: u32,
    /// Drivers this manager has been linked to, less one: 0 at mount, +1
    /// at each `OP_DEVICE`.
    generation: u64,
    /// The workers' handles at the current driver, by slot.
    worker_handles: Vec<u64>,
    /// The driver has ended and no new one has been given yet.
    down: bool,
    /// Transfers whose driver ended under them, to be sent again.
    held: Vec<Transfer>,
    /// Each transfer's place in submission order, by tag (tags are unique
    /// among transfers in flight), to send held ones again in that order.
    order: BTreeMap<u64, u64>,
    next_order: u64,
    /// The request being served (sender, reply handle, operation), set
    /// by the server around each request, and whether it was answered
    /// early ([`Disk::wait_for_device`]): the server then does not answer
    /// it.
    pub serving: Option<(Pid, ReplyHandle, u64)>,
    pub answered_early: bool,
    /// The device may lose completed writes at a power cut until a flush
    /// ([`BlockDevice::has_volatile_write_cache`]): the driver's answer to
    /// `block::OP_WRITE_CACHE` ([`Disk::ask_write_cache`]) or the boot
    /// option `blk.wcache` (`main.rs`).
    volatile_write_cache: bool,
    /// The request being served was the monitor's, answered `ERESTART`
    /// early: its outcome is kept ([`Disk::keep_for_replay`]).
    replay_wanted: bool,
    replay: Option<Replay>,
}

/// The outcome of a monitor request that was answered `ERESTART` while
/// it was in progress (it waited for a restarted driver) and then
/// completed: the same request sent again gets this answer instead of
/// being done twice (an `unlink` would say `ENOENT`, a `mkdir` `EEXIST`).
struct Replay {
    message: [u64; 4],
    data: Vec<u8>,
    words: [u64; 4],
    reply: Vec<u8>,
    done_ns: u64,
}

/// How long a [`Replay`] waits for its request to come again (the
/// runtime sends it every 10 ms).
const REPLAY_NS: u64 = 5_000_000_000;

impl Disk {
    pub fn new(
        queue: Queue,
        monitor: Pid,
        (driver_pid, driver_queue, driver): (Pid, u32, Link),
        handles: &[u64],
        device_bytes: u64,
    ) -> Disk {
        Disk {
            queue,
            driver,
            handle: handles.first().copied().unwrap_or(0),
            sectors: device_bytes / SECTOR_BYTES as u64,
            workers: Vec::new(),
            waiting: VecDeque::new(),
            finished: VecDeque::new(),
            stash: VecDeque::new(),
            rx: Page::zeroed(),
            transfers: 0,
            ticks: [0, 0],
            has_pread: true,
            has_writev: true,
            monitor,
            driver_pid,
            driver_queue,
            generation: 0,
            worker_handles: handles.get(1..).unwrap_or(&[]).to_vec(),
            down: false,
            held: Vec::new(),
            order: BTreeMap::new(),
            next_order: 0,
            serving: None,
            answered_early: false,
            replay_wanted: false,
            replay: None,
            volatile_write_cache: false,
        }
    }

    /// Asks the driver whether the device has a volatile write cache
    /// (`block::OP_WRITE_CACHE`); a driver that does not know the op
    /// (`ENOSYS`: the RAM disk) or does not answer has none.
    pub fn ask_write_cache(&mut self) -> bool {
        let answer = msg::call(self.driver, &[block::OP_WRITE_CACHE, 0, 0, 0], &[], &mut []);
        matches!(answer, Ok((w, _)) if w[0] == block::WRITE_CACHE_VOLATILE)
    }

    /// Sets what [`BlockDevice::has_volatile_write_cache`] says; before
    /// the mount (the cache asks once, when it is made).
    pub fn set_volatile_write_cache(&mut self, is_volatile: bool) {
        self.volatile_write_cache = is_volatile;
    }

    /// A worker started on handle `handles[1 + slot]`: its first
    /// `OP_WORK` call will make it idle.
    pub fn add_worker(&mut self, pid: Pid, slot: usize) {
        self.workers.push(Worker { pid, idle: None, busy: Vec::new(), slot, generation: self.generation });
    }

    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Workers whose first call has come.
    pub fn ready_workers(&self) -> usize {
        self.workers.iter().filter(|w| w.idle.is_some() || !w.busy.is_empty()).count()
    }

    pub fn is_worker(&self, pid: Pid) -> bool {
        self.workers.iter().any(|w| w.pid == pid)
    }

    /// A message for the device side: a worker's call, a child's end, or
    /// the monitor's `OP_DEVICE` (`data`: the message's bytes). Returns
    /// the message back when it is none of these (a client's).
    pub fn take(&mut self, r: Received, data: &[u8]) -> Option<Received> {
        match r.kind {
            Kind::ChildExit => {
                self.worker_ended(Pid(r.message[0]));
                None
            }
            Kind::Call if r.message[0] == ext2fs::OP_WORK && self.is_worker(r.sender) => {
                self.work_done(r);
                None
            }
            Kind::Call if r.message[0] == ext2fs::OP_DEVICE => {
                let outcome =
                    if r.sender == self.monitor { self.device_back(r.message, data) } else { Err(EPERM) };
                let _ = msg::reply(r.reply, &[encode_result(outcome.map(|()| 0)), 0, 0, 0], &[]);
                None
            }
            _ => Some(r),
        }
    }

    /// A worker ended: its transfer fails, it gets no more.
    fn worker_ended(&mut self, pid: Pid) {
        if let Some(i) = self.workers.iter().position(|w| w.pid == pid) {
            let w = self.workers.swap_remove(i);
            for t in w.busy {
                self.settle(t, Err(EIO), w.generation);
            }
        }
    }

    /// Is the driver of generation `generation` still there? An older
    /// one has ended (the monitor gives a new one only then).
    fn driver_alive(&self, generation: u64) -> bool {
        if generation != self.generation {
            return false;
        }
        match msg::open_link(self.driver_pid, Queue(self.driver_queue)) {
            Ok(l) => {
                let _ = msg::close_link(l);
                true
            }
            Err(_) => false,
        }
    }

    /// A transfer sent to the driver of `generation` has ended with
    /// `outcome`: the cache's, unless its driver ended under it (then it
    /// is held and sent again to the next driver).
    fn settle(&mut self, t: Transfer, outcome: Result<(), Errno>, generation: u64) {
        if outcome.is_err() && !self.driver_alive(generation) {
            if generation == self.generation && !self.down {
                runtime::println!("ext2fs: the block driver has ended; writes are held until it is back");
                self.down = true;
            }
            self.held.push(t);
            if !self.down {
                // It went to an older driver; the current one is here.
                self.send_held();
            }
            return;
        }
        self.order.remove(&t.tag);
        self.finished.push_back((t, outcome));
    }

    /// Send again every held transfer, and those that waited while the
    /// device was down, in the order they were first submitted.
    fn send_held(&mut self) {
        let mut all: Vec<Transfer> = self.held.drain(..).chain(self.waiting.drain(..)).collect();
        all.sort_by_key(|t| self.order.get(&t.tag).copied().unwrap_or(u64::MAX));
        for t in all {
            self.start(t);
        }
    }

    /// `ext2fs::OP_DEVICE` from the monitor: the new driver and handles.
    fn device_back(&mut self, m: [u64; 4], data: &[u8]) -> Result<(), Errno> {
        let [_, pid, queue, bytes] = m;
        if bytes / SECTOR_BYTES as u64 != self.sectors || data.is_empty() || !data.len().is_multiple_of(8) {
            return Err(EINVAL);
        }
        let queue = u32::try_from(queue).map_err(|_| EINVAL)?;
        let handles: Vec<u64> =
            data.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        let link = msg::open_link(Pid(pid), Queue(queue)).map_err(|_| EIO)?;
        let _ = msg::close_link(self.driver);
        self.driver = link;
        (self.driver_pid, self.driver_queue, self.handle) = (Pid(pid), queue, handles[0]);
        self.worker_handles = handles[1..].to_vec();
        self.generation += 1;
        self.has_pread = true;
        self.has_writev = true;
        self.down = false;
        let held = self.held.len();
        runtime::println!(
            "ext2fs: the block driver is back ({pid:#x}); {held} transfers are sent again, the cache is kept"
        );
        // Idle workers move now; busy ones when their transfer ends.
        for i in (0..self.workers.len()).rev() {
            if let Some(h) = self.workers[i].idle.take() {
                self.relink(i, h);
            }
        }
        self.send_held();
        Ok(())
    }

    /// Tell worker `i` (whose `OP_WORK` call is `h`) the current driver
    /// and its handle there; a worker with no handle there ends.
    fn relink(&mut self, i: usize, h: ReplyHandle) {
        let w = &mut self.workers[i];
        w.generation = self.generation;
        let told = match self.worker_handles.get(w.slot) {
            Some(&handle) => msg::reply(
                h,
                &[ext2fs::WORK_RELINK, self.driver_pid.0, self.driver_queue as u64, handle],
                &[],
            ),
            None => {
                let _ = msg::reply(h, &[ext2fs::WORK_EXIT, 0, 0, 0], &[]);
                self.workers.swap_remove(i);
                return;
            }
        };
        if told.is_err() {
            self.workers.swap_remove(i);
        }
    }

    /// A worker's `OP_WORK` call: the end of its transfer, if it had one.
    fn work_done(&mut self, r: Received) {
        let Some(i) = self.workers.iter().position(|w| w.pid == r.sender) else { return };
        let [_, tag, outcome, _] = r.message;
        let generation = self.workers[i].generation;
        let mut busy = core::mem::take(&mut self.workers[i].busy);
        if busy.len() > 1 {
            // Writes sent together: one outcome for all of them.
            let data_bytes: u64 = busy.iter().map(|t| t.bytes() as u64).sum();
            let moved = match result(outcome) {
                _ if busy[0].tag != tag => Err(EIO),
                Ok(n) if n == data_bytes => Ok(()),
                Ok(_) => Err(EIO),
                Err(e) => Err(e),
            };
            for t in busy {
                self.settle(t, moved, generation);
            }
        } else if let Some(mut t) = busy.pop() {
            let moved = if t.tag != tag {
                Err(EIO)
            } else {
                match result(outcome) {
                    Ok(n) if n == t.bytes() as u64 => Ok(()),
                    Ok(_) => Err(EIO),
                    Err(e) => Err(e),
                }
            };
            let moved = match (moved, t.direction) {
                (Ok(()), Direction::Read) => read_lent(r.reply, &mut t),
                (other, _) => other,
            };
            self.settle(t, moved, generation);
        }
        // `settle` may have changed the list (a transfer sent again).
        let Some(i) = self.workers.iter().position(|w| w.pid == r.sender) else { return };
        if self.workers[i].generation != self.generation {
            self.relink(i, r.reply);
        } else {
            self.workers[i].idle = Some(r.reply);
        }
        self.dispatch();
    }

    /// Give waiting transfers to idle workers (none while the device is
    /// down: they wait for the new driver). Small writes that wait next to
    /// each other go to one worker together ([`Disk::take_batch`]).
    /// Called when the manager is about to wait (for a transfer, a flush,
    /// or its next message: `main.rs`), so that the writes the cache
    /// submitted meanwhile, a level of its write order, are there.
    pub fn dispatch(&mut self) {
        while !self.waiting.is_empty() && !self.down {
            let Some(i) = self.workers.iter().position(|w| w.idle.is_some()) else { return };
            let batch = self.take_batch();
            if batch.len() > 1 {
                let handle = self.workers[i].idle.take().expect("idle");
                self.dispatch_batch(i, handle, batch);
                continue;
            }
            let Some(t) = batch.into_iter().next() else { return };
            let handle = self.workers[i].idle.take().expect("idle");
            let what = match t.direction {
                Direction::Read => ext2fs::WORK_READ,
                Direction::Write => ext2fs::WORK_WRITE,
            };
            let filled = match t.direction {
                Direction::Write => write_lent(handle, &t),
                Direction::Read => Ok(()),
            };
            let told = filled.and_then(|()| {
                msg::reply(handle, &[what, t.first_sector, t.bytes() as u64, t.tag], &[]).map_err(|_| EIO)
            });
            match told {
                Ok(()) => {
                    self.transfers += 1;
                    self.workers[i].busy.push(t);
                }
                Err(_) => {
                    // The worker is gone (its call cannot be answered):
                    // forget it and try the transfer elsewhere.
                    self.workers.swap_remove(i);
                    self.waiting.push_front(t);
                }
            }
        }
    }

    /// The transfers at the front of the queue one worker takes: the first,
    /// and the writes right behind a write while they are small enough
    /// to be held ([`is_small_write`]), at most `block::MAX_WRITEV`, and
    /// fit the worker's buffer with their headers.
    fn take_batch(&mut self) -> Vec<Transfer> {
        let mut batch: Vec<Transfer> = self.waiting.pop_front().into_iter().collect();
        if !batch.first().is_some_and(is_small_write) {
            return batch;
        }
        let mut bytes = block::WRITEV_HEADER_BYTES + batch[0].bytes();
        while batch.len() < block::MAX_WRITEV
            && let Some(next) = self.waiting.front()
            && is_small_write(next)
            && bytes + block::WRITEV_HEADER_BYTES + next.bytes() <= ext2fs::WORKER_TRANSFER_BYTES
        {
            bytes += block::WRITEV_HEADER_BYTES + next.bytes();
            batch.extend(self.waiting.pop_front());
        }
        batch
    }

    /// Whether the cache's wait is for the small writes held in the queue
    /// and nothing else (no worker busy, nothing finished, and they fit
    /// one `block::OP_PWRITEV`): the manager then sends them itself
    /// ([`Disk::write_here`]).
    fn can_write_here(&self) -> bool {
        let held_bytes: usize = self.waiting.iter().map(|t| block::WRITEV_HEADER_BYTES + t.bytes()).sum();
        self.has_writev
            && !self.down
            && self.finished.is_empty()
            && !self.waiting.is_empty()
            && self.waiting.len() <= block::MAX_WRITEV
            && held_bytes <= ext2fs::WORKER_TRANSFER_BYTES
            && self.waiting.iter().all(is_small_write)
            && self.workers.iter().all(|w| w.busy.is_empty())
    }

    /// Send every held write with one `block::OP_PWRITEV` on the manager's
    /// own handle and wait for it ([`Disk::can_write_here`] said this is
    /// all the cache waits for, so the manager would only wait anyway):
    /// the level's writes reach the driver in one call and come back in
    /// one reply, with no worker's two hops in between (branch `lat`,
    /// docs/filesystem-history.md "the time of one level"). Client requests that
    /// come meanwhile wait in the queue, as during a flush. A driver that
    /// ends under the call fails it, and the writes are held for the next
    /// one ([`Disk::settle`]); one that does not know the op (`ENOSYS`)
    /// gets them through the workers from then on.
    fn write_here(&mut self) {
        let batch: Vec<Transfer> = self.waiting.drain(..).collect();
        let data_bytes: usize = batch.iter().map(|t| t.bytes()).sum();
        let mut send = Vec::with_capacity(batch.len() * block::WRITEV_HEADER_BYTES + data_bytes);
        for t in &batch {
            send.extend_from_slice(&(t.first_sector * SECTOR_BYTES as u64).to_le_bytes());
            send.extend_from_slice(&(t.bytes() as u64).to_le_bytes());
        }
        for t in &batch {
            t.buffers.iter().for_each(|b| send.extend_from_slice(b));
        }
        let words = [block::OP_PWRITEV, self.handle, batch.len() as u64, data_bytes as u64];
        let outcome = match msg::call(self.driver, &words, &send, &mut []) {
            Ok((w, _)) => match result(w[0]) {
                Ok(n) if n == data_bytes as u64 => Ok(()),
                Ok(_) => Err(EIO),
                Err(e) => Err(e),
            },
            Err(_) => Err(EIO),
        };
        if outcome == Err(ENOSYS) {
            self.has_writev = false;
            self.waiting.extend(batch);
            return;
        }
        self.transfers += batch.len() as u64;
        let generation = self.generation;
        for t in batch {
            self.settle(t, outcome, generation);
        }
    }

    /// Give worker `i` (whose `OP_WORK` call is `handle`) several writes:
    /// `ext2fs::WORK_WRITEV`, their headers and data in its receive buffer
    /// as `block::OP_PWRITEV` wants them.
    fn dispatch_batch(&mut self, i: usize, handle: ReplyHandle, batch: Vec<Transfer>) {
        let mut headers = Vec::with_capacity(batch.len() * block::WRITEV_HEADER_BYTES);
        for t in &batch {
            headers.extend_from_slice(&(t.first_sector * SECTOR_BYTES as u64).to_le_bytes());
            headers.extend_from_slice(&(t.bytes() as u64).to_le_bytes());
        }
        let data_bytes: u64 = batch.iter().map(|t| t.bytes() as u64).sum();
        let filled = msg::lease_write(handle, 0, &headers, 0).map_err(|_| EIO).and_then(|n| {
            let mut at = n as u64;
            for t in &batch {
                write_lent_at(handle, at, t)?;
                at += t.bytes() as u64;
            }
            Ok(())
        });
        let words = [ext2fs::WORK_WRITEV, batch.len() as u64, data_bytes, batch[0].tag];
        match filled.and_then(|()| msg::reply(handle, &words, &[]).map_err(|_| EIO)) {
            Ok(()) => {
                self.transfers += batch.len() as u64;
                self.workers[i].busy = batch;
            }
            Err(_) => {
                // The worker is gone: forget it, the writes wait again in
                // their order.
                self.workers.swap_remove(i);
                for t in batch.into_iter().rev() {
                    self.waiting.push_front(t);
                }
            }
        }
    }

    /// Make a transfer with the manager's own handle (no worker can): one
    /// `OP_PREAD` or `OP_PWRITE` per buffer (a driver without them: a
    /// seek, then `OP_READ` or `OP_WRITE`).
    fn transfer_here(&mut self, t: &mut Transfer) -> Result<(), Errno> {
        self.transfers += 1;
        let mut offset = t.first_sector.checked_mul(SECTOR_BYTES as u64).ok_or(EINVAL)?;
        if !self.has_pread {
            let (w, _) =
                msg::call(self.driver, &[io::OP_SEEK, self.handle, offset, io::SEEK_SET], &[], &mut [])
                    .map_err(|_| EIO)?;
            result(w[0])?;
        }
        for buffer in &mut t.buffers {
            let bytes = buffer.len() as u64;
            let moved = match self.move_here(t.direction, offset, buffer) {
                Err(ENOSYS) if self.has_pread => {
                    self.has_pread = false;
                    let seek = [io::OP_SEEK, self.handle, offset, io::SEEK_SET];
                    let (w, _) = msg::call(self.driver, &seek, &[], &mut []).map_err(|_| EIO)?;
                    result(w[0])?;
                    self.move_here(t.direction, offset, buffer)
                }
                other => other,
            };
            if moved? != bytes {
                return Err(EIO);
            }
            offset += bytes;
        }
        Ok(())
    }

    /// One call to the driver moving `buffer` at `offset` (positional, or
    /// at the handle's offset once the driver has refused positional ones).
    fn move_here(&mut self, direction: Direction, offset: u64, buffer: &mut [u8]) -> Result<u64, Errno> {
        let bytes = buffer.len() as u64;
        let (read, write) =
            if self.has_pread { (io::OP_PREAD, io::OP_PWRITE) } else { (io::OP_READ, io::OP_WRITE) };
        let (w, _) = match direction {
            Direction::Read => msg::call(self.driver, &[read, self.handle, bytes, offset], &[], buffer),
            Direction::Write => msg::call(self.driver, &[write, self.handle, bytes, offset], buffer, &mut []),
        }
        .map_err(|_| EIO)?;
        result(w[0])
    }

    /// Wait for one message on the queue and deal with it: a worker's or
    /// a child's goes to the device side, a client's to the stash (the
    /// monitor's, while the device is down, is answered `EIO`: see
    /// [`Disk::wait_for_device`]).
    fn receive_one(&mut self) -> Result<(), Errno> {
        let r = msg::receive_data(self.queue, &mut self.rx.0).map_err(|_| EIO)?;
        let data = self.rx.0[..r.len.min(self.rx.0.len())].to_vec();
        if let Some(client) = self.take(r, &data) {
            let mut s = Stashed { received: client, data, answered: false };
            if self.down && !self.answer_monitor_now(&mut s) {
                return Ok(());
            }
            self.stash.push_back(s);
        }
        Ok(())
    }

    /// While the device is down, a monitor call is answered at once (the
    /// monitor brings the new driver and must not wait here): a close
    /// `0`, to be served later without an answer (the monitor ignores a
    /// close's answer, and the handle must go), anything else `ERESTART`
    /// (nothing done; the caller's runtime sends it again). Returns
    /// whether `s` is still to be served. A forwarded open
    /// (`fs::OP_OPEN_FORWARDED`) names the monitor as its sender but its
    /// caller is a process: it waits for the driver, as `main.rs` has the
    /// one in progress do. Answered `ERESTART` here, it reached the
    /// process, whose runtime asked again, and each time the monitor
    /// recorded a new descriptor the process never had (branch `robust`:
    /// `disktest lostopen` saw a creating process's next fd go from 3 to
    /// 63 across one driver restart).
    fn answer_monitor_now(&self, s: &mut Stashed) -> bool {
        let r = &s.received;
        if r.sender != self.monitor
            || r.kind != Kind::Call
            || s.answered
            || r.message[0] == protocols::unix::fs::OP_OPEN_FORWARDED
        {
            return true;
        }
        if r.message[0] == io::OP_CLOSE {
            let _ = msg::reply(r.reply, &[0; 4], &[]);
            s.answered = true;
            return true;
        }
        let _ = msg::reply(r.reply, &[encode_result(Err(ERESTART)), 0, 0, 0], &[]);
        false
    }

    /// The device is down and an operation needs it: wait for the
    /// monitor's `OP_DEVICE`. The monitor's own calls are answered first
    /// (the monitor brings the new driver, so it must not wait here): the
    /// one in progress `ERESTART` (a close `0`); it still completes once
    /// the device is back, and its outcome answers the same request sent
    /// again ([`Replay`]); those kept in the stash as
    /// [`Disk::answer_monitor_now`] says.
    fn wait_for_device(&mut self) -> Result<(), Errno> {
        if let Some((sender, h, op)) = self.serving
            && sender == self.monitor
            && !self.answered_early
        {
            let word = if op == io::OP_CLOSE { 0 } else { encode_result(Err(ERESTART)) };
            let _ = msg::reply(h, &[word, 0, 0, 0], &[]);
            self.answered_early = true;
            self.replay_wanted = op != io::OP_CLOSE;
        }
        let mut stash = core::mem::take(&mut self.stash);
        stash.retain_mut(|s| self.answer_monitor_now(s));
        self.stash = stash;
        while self.down {
            self.receive_one()?;
        }
        Ok(())
    }

    /// After a request: if it was the monitor's, answered `ERESTART`
    /// while in progress, keep its outcome for when it comes again.
    pub fn keep_for_replay(
        &mut self,
        message: [u64; 4],
        data: &[u8],
        answer: ([u64; 4], &[u8]),
        now_ns: u64,
    ) {
        if core::mem::take(&mut self.replay_wanted) {
            self.replay = Some(Replay {
                message,
                data: data.to_vec(),
                words: answer.0,
                reply: answer.1.to_vec(),
                done_ns: now_ns,
            });
        }
    }

    /// The kept outcome of the monitor's request `message` + `data`, if
    /// this is it coming again (within [`REPLAY_NS`]).
    pub fn replay_for(
        &mut self,
        sender: Pid,
        message: &[u64; 4],
        data: &[u8],
        now_ns: u64,
    ) -> Option<([u64; 4], Vec<u8>)> {
        let r = self.replay.as_ref()?;
        if now_ns.saturating_sub(r.done_ns) > REPLAY_NS {
            self.replay = None;
            return None;
        }
        if sender != self.monitor || r.message != *message || r.data != data {
            return None;
        }
        self.replay.take().map(|r| (r.words, r.reply))
    }

    /// Start a transfer: now on the manager's own handle when no worker
    /// can take it, else in order to the workers; held while the device
    /// is down.
    fn start(&mut self, mut transfer: Transfer) {
        if self.down {
            self.waiting.push_back(transfer);
            return;
        }
        if transfer.bytes() > ext2fs::WORKER_TRANSFER_BYTES || self.workers.is_empty() {
            let outcome = self.transfer_here(&mut transfer);
            let generation = self.generation;
            self.settle(transfer, outcome, generation);
            return;
        }
        let is_held = is_small_write(&transfer);
        self.waiting.push_back(transfer);
        if !is_held {
            self.dispatch();
        }
    }
}

/// A write small enough to wait in the queue for the writes submitted
/// after it, to go to the driver with them (`ext2fs::WORK_WRITEV`, one
/// call and one device notification for a level of the write order):
/// half a worker's buffer or less. A larger one goes at once.
fn is_small_write(t: &Transfer) -> bool {
    t.direction == Direction::Write && t.bytes() <= ext2fs::WORKER_TRANSFER_BYTES / 2
}

/// Buffers one lease call moves (`abi::lease::MAX_SEGMENTS`).
const SEGMENTS: usize = abi::lease::MAX_SEGMENTS as usize;

/// The bytes of a finished read, from the worker's lent send buffer
/// straight into the cache's buffers: one lease call per
/// [`SEGMENTS`] buffers (one for a worker's whole transfer of 1 KiB
/// blocks), not one per block.
fn read_lent(handle: ReplyHandle, t: &mut Transfer) -> Result<(), Errno> {
    let mut at = 0u64;
    for group in t.buffers.chunks_mut(SEGMENTS) {
        let mut bufs: Vec<&mut [u8]> = group.iter_mut().map(|b| &mut b[..]).collect();
        let want: usize = bufs.iter().map(|b| b.len()).sum();
        let n = msg::lease_read_segments(handle, at, &mut bufs).map_err(|_| EIO)?;
        if n != want {
            return Err(EIO);
        }
        at += n as u64;
    }
    Ok(())
}

/// A write's bytes from the cache's buffers into the worker's lent
/// receive buffer, as [`read_lent`].
fn write_lent(handle: ReplyHandle, t: &Transfer) -> Result<(), Errno> {
    write_lent_at(handle, 0, t)
}

/// As [`write_lent`], from byte `at` of the receive buffer.
fn write_lent_at(handle: ReplyHandle, mut at: u64, t: &Transfer) -> Result<(), Errno> {
    for group in t.buffers.chunks(SEGMENTS) {
        let bufs: Vec<&[u8]> = group.iter().map(|b| &b[..]).collect();
        let want: usize = bufs.iter().map(|b| b.len()).sum();
        let n = msg::lease_write_segments(handle, at, &bufs).map_err(|_| EIO)?;
        if n != want {
            return Err(EIO);
        }
        at += n as u64;
    }
    Ok(())
}

impl BlockDevice for Disk {
    fn sectors(&self) -> u64 {
        self.sectors
    }

    fn submit(&mut self, transfer: Transfer) {
        self.order.insert(transfer.tag, self.next_order);
        self.next_order += 1;
        self.start(transfer);
    }

    fn complete(&mut self) -> Option<(Transfer, Result<(), Errno>)> {
        let start = runtime::sys::rdtsc();
        let done = self.complete_untimed();
        self.ticks[0] += runtime::sys::rdtsc().wrapping_sub(start);
        done
    }

    fn poll(&mut self) -> Option<(Transfer, Result<(), Errno>)> {
        self.dispatch();
        self.finished.pop_front()
    }

    fn flush(&mut self) -> Result<(), Errno> {
        // What waits goes first (the cache flushes only once the writes it
        // must cover are done, so this is for order's sake only).
        self.dispatch();
        let start = runtime::sys::rdtsc();
        let r = loop {
            if self.down
                && let Err(e) = self.wait_for_device()
            {
                break Err(e);
            }
            match msg::call(self.driver, &[io::OP_FSYNC, self.handle, 0, 0], &[], &mut []) {
                Ok((w, _)) => break result(w[0]).map(|_| ()),
                // The driver ended: flush the next one (the writes it took
                // reached the device, which has no cache in the driver).
                Err(_) if !self.driver_alive(self.generation) => self.down = true,
                Err(_) => break Err(EIO),
            }
        };
        self.ticks[1] += runtime::sys::rdtsc().wrapping_sub(start);
        r
    }

    fn wait_ticks(&self) -> [u64; 2] {
        self.ticks
    }

    fn has_volatile_write_cache(&self) -> bool {
        self.volatile_write_cache
    }
}

impl Disk {
    fn complete_untimed(&mut self) -> Option<(Transfer, Result<(), Errno>)> {
        // The writes held for company go now: the cache waits.
        if self.can_write_here() {
            self.write_here();
        }
        self.dispatch();
        loop {
            if let Some(done) = self.finished.pop_front() {
                return Some(done);
            }
            if self.down && !(self.held.is_empty() && self.waiting.is_empty()) {
                if self.wait_for_device().is_err() {
                    // The queue itself failed: nothing will ever finish.
                    let t = self.held.pop().or_else(|| self.waiting.pop_front())?;
                    self.order.remove(&t.tag);
                    return Some((t, Err(EIO)));
                }
                continue;
            }
            let busy = self.workers.iter().any(|w| !w.busy.is_empty());
            if !busy && self.waiting.is_empty() {
                return None;
            }
            if self.workers.is_empty() {
                // Every worker is gone: the manager moves what waits.
                let mut t = self.waiting.pop_front()?;
                let outcome = self.transfer_here(&mut t);
                let generation = self.generation;
                self.settle(t, outcome, generation);
                continue;
            }
            if self.receive_one().is_err() {
                // The queue itself failed: nothing will ever finish.
                let t = self
                    .waiting
                    .pop_front()
                    .or_else(|| self.workers.iter_mut().find_map(|w| w.busy.pop()))?;
                self.order.remove(&t.tag);
                return Some((t, Err(EIO)));
            }
        }
    }
}
