//! virtio-blk: the disk driver, a user process (Ridge OS §3: a device
//! manager is a process that receives its device's interrupts as
//! messages). It finds the virtio-blk PCI function on bus 0, claims it,
//! drives it through the `virtio-drivers` crate (virtqueues, the PCI
//! transport) and serves the block-device protocol
//! (`protocols::unix::block`) on [`block::QUEUE`]: `device::OP_OPEN`,
//! `io` READ, WRITE, PREAD, PWRITE, SEEK, FSTAT, FSYNC and CLOSE, and
//! `block::OP_STATS`.
//!
//! How a request moves (seed 000's real disk: the driver starts the
//! transfer and waits for the device's interrupt, while everything else
//! runs):
//! - READ: the driver checks it (`unix_core::blockdev`: whole blocks,
//!   inside the disk, else `EINVAL` with nothing moved), takes a DMA
//!   buffer, hands the device one request for the whole transfer
//!   (`read_blocks_nb`) and goes back to its queue. The device's interrupt
//!   arrives as a message; the driver collects every finished request
//!   (`peek_used`, `complete_read_blocks`), copies the data into the
//!   client's lent receive buffer (`msg::lease_write`) and replies.
//! - WRITE: the data comes from the client's lent send buffer
//!   (`msg::lease_read`) into a DMA buffer, then one device request.
//! - Several requests are in flight at once, one per client call (up to
//!   [`MAX_BUFFERS`] DMA buffers and the 16-entry virtqueue; more wait in
//!   order). No polling while requests are in flight.
//! - FSYNC: a virtio flush, a request on the queue answered at the
//!   interrupt like a READ or WRITE (`flush_nb`, added to the crate by
//!   `third_party/virtio-drivers`: its own `flush` spins until the device
//!   answers, and a spinning vCPU competes with QEMU's I/O thread doing
//!   the host's `fdatasync`). A flush covers the writes the device has
//!   completed when it takes it (the virtio spec, block device
//!   operation: writes completed before the flush), so new requests
//!   wait while an FSYNC is pending until the requests in flight finish;
//!   then the flush is sent, and requests flow again while it is in
//!   flight. Every WRITE a client has been answered for has been
//!   completed by then, which is what `fsync` promises. FSYNCs that come
//!   while a flush is in flight wait for the next one (their writes may
//!   have completed after the device took it).
//!
//! A client that dies in the middle of a request: its lease and reply
//! calls fail (`DeadPeer`, `BadReplyHandle`); the driver drops the
//! request and goes on. Nothing a client sends makes the driver stop.
//!
//! Who may ask what: `device::OP_OPEN` and `io::OP_CLOSE` only from the
//! monitor (the bootstrap connection at start: init starts drivers after
//! the monitor) or, without one, from the starter; everything else from
//! anyone holding a handle (sparse numbers, `unix_core::handles`).
//!
//! Arguments: the starter's pid. At start it sends the starter
//! `[block::READY, queue, size in bytes, 0]`; with no virtio-blk device
//! (`cargo xtask run --disk none`) or one it cannot drive, the size is 0
//! and the driver ends.

#![no_std]
#![no_main]
#![deny(unsafe_code)]

extern crate alloc;

use abi::msg::Kind;
use abi::{Error, Pid};
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use protocols::unix::errno::{EBADF, EFAULT, EINVAL, EIO, ENOSYS, EPERM};
use protocols::unix::{Errno, block, device, encode_result, io};
use runtime::msg::{self, Queue, ReplyHandle};
use runtime::{Args, println, sys};
use unix_core::blockdev::{Opens, Transfer};
use virtio_drivers::device::blk::{BlkReq, BlkResp, RespStatus, SECTOR_SIZE, VirtIOBlk};
use virtio_drivers::transport::pci::PciTransport;
use virtio_hal::hal::{self, RidgebackHal};

runtime::entry!(main);

/// DMA buffers of [`block::MAX_TRANSFER_BYTES`] each, made as requests
/// need them: the most requests in flight at once.
const MAX_BUFFERS: usize = 8;
const QUEUE_CAPACITY: u64 = 128;
const QSEG_LINKS: u64 = 16;
const QSEG_QUEUES: u64 = 4;
/// Reply handles: every call in progress holds one.
const QSEG_MESSAGES: u64 = 160;
const QSEG_PAGES: u64 = 64;
/// The name `block::OP_STATS` reports.
const DEVICE_NAME: &[u8] = b"vda";

type Disk = VirtIOBlk<RidgebackHal, PciTransport>;

const _: () = assert!(SECTOR_SIZE as u64 == block::BLOCK_BYTES);

/// virtio-blk: the transitional device id (QEMU's default `virtio-blk-pci`)
/// and the modern one (virtio 1.x: 0x1040 + device type 2).
const BLK_DEVICE_IDS: [u16; 2] = [0x1001, 0x1042];

/// Find, claim and start the disk (`virtio_hal::pci::find`); `Ok(None)`
/// when there is none. Its interrupts arrive on `queue`. Returns the
/// device and its ISA line.
fn probe(queue: Queue) -> Result<Option<(Disk, u64)>, &'static str> {
    let Some((transport, line)) = virtio_hal::pci::find(&BLK_DEVICE_IDS, queue)? else { return Ok(None) };
    let mut device = Disk::new(transport).map_err(|_| "the device refused to start")?;
    device.enable_interrupts();
    Ok(Some((device, line)))
}

fn main(args: Args) -> i32 {
    let starter = args.iter().filter_map(|s| s.parse::<u64>().ok()).last().map(Pid);
    let set_up = msg::init_qseg(QSEG_LINKS, QSEG_QUEUES, QSEG_MESSAGES, QSEG_PAGES)
        .and_then(|()| msg::open_queue(QUEUE_CAPACITY, true));
    let queue = match set_up {
        Ok(q) if q.0 == block::QUEUE => q,
        _ => {
            println!("virtio-blk: cannot open its queue");
            tell_starter(starter, 0, 0);
            return 1;
        }
    };
    let (disk, irq) = match probe(queue) {
        Ok(Some(found)) => found,
        Ok(None) => {
            // No disk attached: nothing to serve.
            tell_starter(starter, queue.0, 0);
            return 0;
        }
        Err(why) => {
            println!("virtio-blk: cannot drive the disk: {why}");
            tell_starter(starter, queue.0, 0);
            return 2;
        }
    };
    let size_bytes = disk.capacity() * block::BLOCK_BYTES;
    let trusted = sys::bootstrap(abi::bootstrap::MONITOR).map(|(p, _)| p).or(starter);
    let read_only = disk.readonly();
    let mut driver = Driver {
        queue,
        irq,
        read_only,
        disk,
        opens: Opens::new(sys::rdtsc() ^ sys::getpid().0, size_bytes, read_only),
        trusted,
        // Sized once for the most there can be (MAX_BUFFERS), so that the
        // heap's bytes in use do not grow with the DMA buffers made
        // (`protocols::heap::OP_HEAP_STATS`, the soak's leak check).
        buffers: Vec::with_capacity(MAX_BUFFERS),
        buffers_made: 0,
        waiting: VecDeque::new(),
        in_flight: Vec::with_capacity(MAX_BUFFERS),
        fsyncs: Vec::new(),
        flushing: None,
        stats: Stats::default(),
    };
    tell_starter(starter, queue.0, size_bytes);
    driver.serve()
}

fn tell_starter(starter: Option<Pid>, queue: u32, size_bytes: u64) {
    if let Some(starter) = starter {
        let _ = msg::open_link(starter, Queue(protocols::STARTER_QUEUE))
            .and_then(|l| msg::send(l, &[block::READY, queue as u64, size_bytes, 0]));
    }
}

#[derive(Default)]
struct Stats {
    requests: u64,
    bytes_read: u64,
    bytes_written: u64,
}

/// A checked READ or WRITE waiting for a DMA buffer or room in the queue.
struct Waiting {
    reply: ReplyHandle,
    handle: u64,
    transfer: Transfer,
    is_write: bool,
    /// `OP_PREAD`/`OP_PWRITE`: the handle's offset was not moved, so the
    /// end gives nothing back to it.
    is_positional: bool,
}

/// A request the device holds. The header and status live on the heap
/// (boxed: their addresses must not move until the request completes;
/// `hal` bounces them), the data in `buffer`, which is DMA memory.
struct InFlight {
    token: u16,
    request: Waiting,
    buffer: &'static mut [u8],
    header: Box<BlkReq>,
    status: Box<BlkResp>,
}

/// A flush the device holds: header and status boxed as for [`InFlight`].
struct Flushing {
    token: u16,
    header: Box<BlkReq>,
    status: Box<BlkResp>,
    replies: Vec<ReplyHandle>,
}

struct Driver {
    queue: Queue,
    irq: u64,
    disk: Disk,
    read_only: bool,
    opens: Opens,
    /// Who may open and close handles.
    trusted: Option<Pid>,
    /// DMA buffers not in use.
    buffers: Vec<&'static mut [u8]>,
    buffers_made: usize,
    waiting: VecDeque<Waiting>,
    in_flight: Vec<InFlight>,
    /// FSYNC calls waiting for the requests in flight to finish.
    fsyncs: Vec<ReplyHandle>,
    /// The flush the device holds, and the FSYNC calls it answers.
    flushing: Option<Flushing>,
    stats: Stats,
}

fn answer(reply: ReplyHandle, r: Result<u64, Errno>) {
    // A client that has gone cannot be answered; nothing else to do.
    let _ = msg::reply(reply, &[encode_result(r), 0, 0, 0], &[]);
}

/// The errno for a lease call that failed, or `None` when the client has
/// gone (its call can no longer be answered).
fn lease_errno(e: Error) -> Option<Errno> {
    match e {
        Error::DeadPeer | Error::BadReplyHandle => None,
        Error::BadAddress => Some(EFAULT),
        Error::InvalidArgument => Some(EINVAL),
        _ => Some(EIO),
    }
}

impl Driver {
    fn serve(&mut self) -> i32 {
        let mut buf = [0u8; abi::msg::MAX_DATA_BYTES as usize];
        loop {
            let r = match msg::receive_data(self.queue, &mut buf) {
                Ok(r) => r,
                Err(_) => continue,
            };
            match r.kind {
                Kind::Interrupt => self.interrupt(),
                Kind::Call => self.call(r.sender, r.reply, r.message, &buf[..r.len.min(buf.len())]),
                _ => {}
            }
            self.pump();
        }
    }

    fn call(&mut self, sender: Pid, reply: ReplyHandle, m: [u64; 4], data: &[u8]) {
        let trusted = self.trusted.is_none_or(|t| t == sender);
        let r = match m[0] {
            device::OP_OPEN if !trusted => Err(EPERM),
            device::OP_OPEN => self.opens.open(m[1], data),
            io::OP_CLOSE if !trusted => Err(EPERM),
            io::OP_CLOSE => self.opens.close(m[1]).map(|()| 0),
            io::OP_READ | io::OP_WRITE | io::OP_PREAD | io::OP_PWRITE => {
                let is_write = matches!(m[0], io::OP_WRITE | io::OP_PWRITE);
                let is_positional = matches!(m[0], io::OP_PREAD | io::OP_PWRITE);
                let started = if is_positional {
                    self.opens.start_at(m[1], m[3], m[2], is_write)
                } else {
                    self.opens.start(m[1], m[2], is_write)
                };
                match started {
                    Ok(Some(transfer)) => {
                        self.stats.requests += 1;
                        let handle = m[1];
                        self.waiting.push_back(Waiting { reply, handle, transfer, is_write, is_positional });
                        return;
                    }
                    Ok(None) => {
                        self.stats.requests += 1;
                        Ok(0)
                    }
                    Err(e) => Err(e),
                }
            }
            io::OP_SEEK => self.opens.seek(m[1], m[2] as i64, m[3]),
            io::OP_FSTAT => match self.opens.fstat(m[1], sys::getpid().0, self.queue.0) {
                Ok(st) => {
                    let _ = msg::reply(reply, &[0; 4], &st.encode());
                    return;
                }
                Err(e) => Err(e),
            },
            io::OP_FSYNC => match self.opens.check_handle(m[1]) {
                Ok(()) => {
                    self.fsyncs.push(reply);
                    return;
                }
                Err(e) => Err(e),
            },
            protocols::heap::OP_HEAP_STATS => {
                // The DMA buffers are a cache outside the heap, made on
                // first need and kept: at most MAX_BUFFERS of them.
                let (in_use, heap) = runtime::heap_stats();
                let dma = (self.buffers_made as u64) * block::MAX_TRANSFER_BYTES;
                let _ = msg::reply(reply, &[in_use, heap, dma, 0], &[]);
                return;
            }
            block::OP_WRITE_CACHE => {
                // FLUSH negotiated: the device may keep completed writes
                // in a cache a power cut loses (the virtio spec, 5.2.6.3).
                let cache =
                    if self.disk.has_flush() { block::WRITE_CACHE_VOLATILE } else { block::WRITE_CACHE_NONE };
                let _ = msg::reply(reply, &[cache, 0, 0, 0], &[]);
                return;
            }
            block::OP_STATS => {
                let s = &self.stats;
                let words = [s.requests, s.bytes_read, s.bytes_written, block::MODE_VIRTIO];
                let _ = msg::reply(reply, &words, DEVICE_NAME);
                return;
            }
            io::OP_READDIR => self.opens.check_handle(m[1]).and(Err(protocols::unix::errno::ENOTDIR)),
            io::OP_TRUNCATE => self.opens.check_handle(m[1]).and(Err(EINVAL)),
            _ => Err(ENOSYS),
        };
        answer(reply, r);
    }

    /// The device's interrupt: collect every finished request, then let
    /// the line interrupt again.
    fn interrupt(&mut self) {
        // Reading the ISR status lowers the (level-triggered) line.
        let _ = self.disk.ack_interrupt();
        while let Some(token) = self.disk.peek_used() {
            if self.flushing.as_ref().is_some_and(|f| f.token == token) {
                let f = self.flushing.take().expect("checked");
                self.flushed(f);
                continue;
            }
            let Some(i) = self.in_flight.iter().position(|f| f.token == token) else {
                println!("virtio-blk: the device finished request {token}, which it was not given");
                break;
            };
            let f = self.in_flight.swap_remove(i);
            self.complete(f);
        }
        let _ = sys::ack_irq(self.irq);
    }

    fn complete(&mut self, mut f: InFlight) {
        let len = f.request.transfer.len_bytes as usize;
        let data = &mut f.buffer[..len];
        let done = if f.request.is_write {
            // SAFETY: the token, header, data and status `submit` gave
            // the device; it is done with them (`peek_used` named it).
            #[allow(unsafe_code)]
            unsafe {
                self.disk.complete_write_blocks(f.token, &f.header, data, &mut f.status)
            }
        } else {
            // SAFETY: as above.
            #[allow(unsafe_code)]
            unsafe {
                self.disk.complete_read_blocks(f.token, &f.header, data, &mut f.status)
            }
        };
        let device_ok = done.is_ok() && f.status.status() == RespStatus::OK;
        let w = &f.request;
        let result = if !device_ok {
            Some(Err(EIO))
        } else if w.is_write {
            self.stats.bytes_written += len as u64;
            Some(Ok(len as u64))
        } else {
            match msg::lease_write(w.reply, 0, &f.buffer[..len], 0) {
                Ok(_) => {
                    self.stats.bytes_read += len as u64;
                    Some(Ok(len as u64))
                }
                Err(e) => lease_errno(e).map(Err),
            }
        };
        if !w.is_positional {
            self.opens.finish(w.handle, w.transfer, matches!(result, Some(Ok(_))));
        }
        if let Some(r) = result {
            answer(w.reply, r);
        }
        self.buffers.push(f.buffer);
    }

    /// A DMA buffer for one request, made on first need.
    fn take_buffer(&mut self) -> Option<&'static mut [u8]> {
        if let Some(b) = self.buffers.pop() {
            return Some(b);
        }
        if self.buffers_made >= MAX_BUFFERS {
            return None;
        }
        match hal::dma_buffer(block::MAX_TRANSFER_BYTES as usize) {
            Ok(b) => {
                self.buffers_made += 1;
                Some(b)
            }
            Err(e) => {
                if self.buffers_made == 0 {
                    println!("virtio-blk: no DMA memory for a request: {}", e.name());
                }
                None
            }
        }
    }

    /// Start what can start: waiting requests while there are buffers and
    /// room in the queue, unless an FSYNC is pending; the flush once
    /// nothing is in flight.
    fn pump(&mut self) {
        if !self.fsyncs.is_empty() {
            if !self.in_flight.is_empty() || self.flushing.is_some() {
                // The pending FSYNCs' writes are not all complete yet, or
                // the flush in flight may have been taken before they
                // were: hold new requests until this flush can be sent.
                return;
            }
            self.start_flush();
        }
        while !self.waiting.is_empty() {
            let Some(buffer) = self.take_buffer() else { return };
            let w = self.waiting.pop_front().expect("not empty");
            if let Some(back) = self.submit(w, buffer) {
                // The queue is full: wait for a completion.
                self.waiting.push_front(back.0);
                self.buffers.push(back.1);
                return;
            }
        }
    }

    /// Give one request to the device. Returns it (and its buffer) when
    /// the virtqueue has no room.
    fn submit(&mut self, w: Waiting, buffer: &'static mut [u8]) -> Option<(Waiting, &'static mut [u8])> {
        let len = w.transfer.len_bytes as usize;
        if w.is_write {
            if self.read_only {
                self.fail(w, Some(EBADF), buffer);
                return None;
            }
            match msg::lease_read(w.reply, 0, &mut buffer[..len], 0) {
                Ok(n) if n == len => {}
                Ok(_) => {
                    self.fail(w, Some(EINVAL), buffer);
                    return None;
                }
                Err(e) => {
                    let errno = lease_errno(e);
                    self.fail(w, errno, buffer);
                    return None;
                }
            }
        }
        let mut header = Box::new(BlkReq::default());
        let mut status = Box::new(BlkResp::default());
        let sector = w.transfer.first_block() as usize;
        let token = if w.is_write {
            // SAFETY: `header` and `status` (boxed: moved into `in_flight`
            // below without their contents moving) and `buffer` (DMA
            // memory this driver owns) are not touched until `complete`
            // passes them back once the device has finished with them.
            #[allow(unsafe_code)]
            unsafe {
                self.disk.write_blocks_nb(sector, &mut header, &buffer[..len], &mut status)
            }
        } else {
            // SAFETY: as above.
            #[allow(unsafe_code)]
            unsafe {
                self.disk.read_blocks_nb(sector, &mut header, &mut buffer[..len], &mut status)
            }
        };
        match token {
            Ok(token) => {
                self.in_flight.push(InFlight { token, request: w, buffer, header, status });
                None
            }
            Err(virtio_drivers::Error::QueueFull) if !self.in_flight.is_empty() => Some((w, buffer)),
            Err(_) => {
                self.fail(w, Some(EIO), buffer);
                None
            }
        }
    }

    /// Send the flush for every pending FSYNC (nothing is in flight).
    /// Without the device's flush feature (a disk with no write cache)
    /// they are answered at once, as the crate's `flush` did.
    fn start_flush(&mut self) {
        let replies = core::mem::take(&mut self.fsyncs);
        let mut header = Box::new(BlkReq::default());
        let mut status = Box::new(BlkResp::default());
        // SAFETY: `header` and `status` are boxed (moved into `flushing`
        // without their contents moving) and not touched until `flushed`
        // passes them back once the device has finished with them.
        #[allow(unsafe_code)]
        let sent = unsafe { self.disk.flush_nb(&mut header, &mut status) };
        match sent {
            Ok(Some(token)) => self.flushing = Some(Flushing { token, header, status, replies }),
            Ok(None) => replies.into_iter().for_each(|r| answer(r, Ok(0))),
            Err(_) => replies.into_iter().for_each(|r| answer(r, Err(EIO))),
        }
    }

    /// The device has finished the flush: answer its FSYNCs.
    fn flushed(&mut self, mut f: Flushing) {
        // SAFETY: the token, header and status `flush_nb` gave the device;
        // it is done with them (`peek_used` named it).
        #[allow(unsafe_code)]
        let done = unsafe { self.disk.complete_flush(f.token, &f.header, &mut f.status) };
        let r = if done.is_ok() { Ok(0) } else { Err(EIO) };
        for reply in f.replies {
            answer(reply, r);
        }
    }

    /// A request that ends before reaching the device.
    fn fail(&mut self, w: Waiting, errno: Option<Errno>, buffer: &'static mut [u8]) {
        if !w.is_positional {
            self.opens.finish(w.handle, w.transfer, false);
        }
        if let Some(e) = errno {
            answer(w.reply, Err(e));
        }
        self.buffers.push(buffer);
    }
}
