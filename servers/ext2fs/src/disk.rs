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
//! The manager serves clients and workers on one queue. While the cache
//! waits for a transfer ([`BlockDevice::complete`]) the requests of
//! clients that arrive are kept ([`Disk::stash`]) and served after the
//! operation in progress, in order (Ridge §9: the managers process a
//! request to completion before the next).
//!
//! What it is not: a cache (`fs_ext2::Cache` is) nor a driver.
//!
//! Invariants: each transfer is returned by [`BlockDevice::complete`] or
//! [`BlockDevice::poll`] exactly once, whatever happens to its worker (a
//! worker that dies fails its transfer with `EIO` and the others go on;
//! with none left the manager makes the transfers itself).

use abi::Pid;
use abi::msg::Kind;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use fs_ext2::BlockDevice;
use fs_ext2::device::{Direction, SECTOR_BYTES, Transfer};
use protocols::unix::errno::{EINVAL, EIO, ENOSYS};
use protocols::unix::{Errno, ext2fs, io, result};
use runtime::msg::{self, Link, Page, Queue, Received, ReplyHandle};

/// A client request that came while the cache waited.
pub struct Stashed {
    pub received: Received,
    pub data: Vec<u8>,
}

struct Worker {
    pid: Pid,
    /// Its `OP_WORK` call, held while it has nothing to do.
    idle: Option<ReplyHandle>,
    busy: Option<Transfer>,
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
}

impl Disk {
    pub fn new(queue: Queue, driver: Link, handle: u64, device_bytes: u64) -> Disk {
        Disk {
            queue,
            driver,
            handle,
            sectors: device_bytes / SECTOR_BYTES as u64,
            workers: Vec::new(),
            waiting: VecDeque::new(),
            finished: VecDeque::new(),
            stash: VecDeque::new(),
            rx: Page::zeroed(),
            transfers: 0,
            ticks: [0, 0],
            has_pread: true,
        }
    }

    /// A worker started: its first `OP_WORK` call will make it idle.
    pub fn add_worker(&mut self, pid: Pid) {
        self.workers.push(Worker { pid, idle: None, busy: None });
    }

    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Workers whose first call has come.
    pub fn ready_workers(&self) -> usize {
        self.workers.iter().filter(|w| w.idle.is_some() || w.busy.is_some()).count()
    }

    pub fn is_worker(&self, pid: Pid) -> bool {
        self.workers.iter().any(|w| w.pid == pid)
    }

    /// A message for the device side: a worker's call, or a child's end.
    /// Returns the message back when it is neither (a client's).
    pub fn take(&mut self, r: Received) -> Option<Received> {
        match r.kind {
            Kind::ChildExit => {
                self.worker_ended(Pid(r.message[0]));
                None
            }
            Kind::Call if r.message[0] == ext2fs::OP_WORK && self.is_worker(r.sender) => {
                self.work_done(r);
                None
            }
            _ => Some(r),
        }
    }

    /// A worker ended: its transfer fails, it gets no more.
    fn worker_ended(&mut self, pid: Pid) {
        if let Some(i) = self.workers.iter().position(|w| w.pid == pid) {
            let w = self.workers.swap_remove(i);
            if let Some(t) = w.busy {
                self.finished.push_back((t, Err(EIO)));
            }
        }
    }

    /// A worker's `OP_WORK` call: the end of its transfer, if it had one.
    fn work_done(&mut self, r: Received) {
        let Some(i) = self.workers.iter().position(|w| w.pid == r.sender) else { return };
        let [_, tag, outcome, _] = r.message;
        if let Some(mut t) = self.workers[i].busy.take() {
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
            self.finished.push_back((t, moved));
        }
        self.workers[i].idle = Some(r.reply);
        self.dispatch();
    }

    /// Give waiting transfers to idle workers.
    fn dispatch(&mut self) {
        while !self.waiting.is_empty() {
            let Some(i) = self.workers.iter().position(|w| w.idle.is_some()) else { return };
            let Some(t) = self.waiting.pop_front() else { return };
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
                    self.workers[i].busy = Some(t);
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
    /// a child's goes to the device side, a client's to the stash.
    fn receive_one(&mut self) -> Result<(), Errno> {
        let r = msg::receive_data(self.queue, &mut self.rx.0).map_err(|_| EIO)?;
        if let Some(client) = self.take(r) {
            let data = self.rx.0[..client.len.min(self.rx.0.len())].to_vec();
            self.stash.push_back(Stashed { received: client, data });
        }
        Ok(())
    }
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
    let mut at = 0u64;
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

    fn submit(&mut self, mut transfer: Transfer) {
        if transfer.bytes() > ext2fs::WORKER_TRANSFER_BYTES || self.workers.is_empty() {
            let outcome = self.transfer_here(&mut transfer);
            self.finished.push_back((transfer, outcome));
            return;
        }
        self.waiting.push_back(transfer);
        self.dispatch();
    }

    fn complete(&mut self) -> Option<(Transfer, Result<(), Errno>)> {
        let start = runtime::sys::rdtsc();
        let done = self.complete_untimed();
        self.ticks[0] += runtime::sys::rdtsc().wrapping_sub(start);
        done
    }

    fn poll(&mut self) -> Option<(Transfer, Result<(), Errno>)> {
        self.finished.pop_front()
    }

    fn flush(&mut self) -> Result<(), Errno> {
        let start = runtime::sys::rdtsc();
        let r = msg::call(self.driver, &[io::OP_FSYNC, self.handle, 0, 0], &[], &mut []).map_err(|_| EIO);
        self.ticks[1] += runtime::sys::rdtsc().wrapping_sub(start);
        result(r?.0[0]).map(|_| ())
    }

    fn wait_ticks(&self) -> [u64; 2] {
        self.ticks
    }
}

impl Disk {
    fn complete_untimed(&mut self) -> Option<(Transfer, Result<(), Errno>)> {
        loop {
            if let Some(done) = self.finished.pop_front() {
                return Some(done);
            }
            let busy = self.workers.iter().any(|w| w.busy.is_some());
            if !busy && self.waiting.is_empty() {
                return None;
            }
            if self.workers.is_empty() {
                // Every worker is gone: the manager moves what waits.
                let mut t = self.waiting.pop_front()?;
                let outcome = self.transfer_here(&mut t);
                return Some((t, outcome));
            }
            if self.receive_one().is_err() {
                // The queue itself failed: nothing will ever finish.
                let t = self
                    .waiting
                    .pop_front()
                    .or_else(|| self.workers.iter_mut().find_map(|w| w.busy.take()))?;
                return Some((t, Err(EIO)));
            }
        }
    }
}
