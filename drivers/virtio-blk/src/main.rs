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
//!   arrives as a message (by MSI-X unless `pci.msix=off`: docs/devices.md,
//!   "MSI-X"); the driver collects every finished request
//!   (`peek_used`, `complete_read_blocks`), copies the data into the
//!   client's lent receive buffer (`msg::lease_write`) and replies.
//! - WRITE: the data comes from the client's lent send buffer
//!   (`msg::lease_read`) into a DMA buffer, then one device request.
//! - PWRITEV (`block::OP_PWRITEV`, branch `lat`): several writes checked
//!   whole at the call (any bad one refuses them all), their data in one
//!   DMA buffer, one device request each and **one notification** for
//!   them all (the `QueueNotify` write is a VM exit, and QEMU takes every
//!   request it finds on the queue at once), one reply when the last is
//!   done. A level of the disk file system's write order (`creat` +
//!   `fsync`: the inode bitmap and the inode's block, and the like) is
//!   one call here instead of one per block, each through its own I/O
//!   worker (docs/filesystem-history.md, "the time of one level").
//! - Several requests are in flight at once, one per client call (up to
//!   [`MAX_BUFFERS`] DMA buffers, a PWRITEV's writes sharing one, and the
//!   16-entry virtqueue; more wait in order). No polling while requests are in flight.
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
use core::ops::Range;
use protocols::unix::errno::{EBADF, EFAULT, EINVAL, EIO, ENOSYS, EPERM};
use protocols::unix::{Errno, block, device, encode_result, io};
use runtime::msg::{self, Queue, ReplyHandle};
use runtime::{Args, println, sys};
use unix_core::blockdev::{Opens, Transfer};
use virtio_drivers::device::blk::{BlkReq, BlkResp, RespStatus, SECTOR_SIZE, VirtIOBlk};
use virtio_drivers::transport::pci::PciTransport;
use virtio_hal::hal::{self, RidgebackHal};
use virtio_hal::pci::Interrupts;

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

/// Find, claim and start the disk (`virtio_hal::pci::find_with`);
/// `Ok(None)` when there is none. Its interrupts arrive on `queue`, by
/// MSI-X unless `pci.msix=off` or the kernel or the device refuses it
/// (docs/devices.md, "MSI-X"). Returns the device and how its interrupts
/// come.
fn probe(queue: Queue) -> Result<Option<(Disk, Interrupts)>, &'static str> {
    let try_msix = virtio_hal::pci::msix_option();
    let Some((transport, mut interrupts)) = virtio_hal::pci::find_with(&BLK_DEVICE_IDS, queue, try_msix)?
    else {
        return Ok(None);
    };
    let mut device = Disk::new(transport).map_err(|_| "the device refused to start")?;
    if matches!(interrupts, Interrupts::Msix { .. }) && device.transport().msix_refused() {
        interrupts = virtio_hal::pci::fall_back_to_line(device.transport(), queue)?;
    }
    device.enable_interrupts();
    // Which path the disk's interrupts take: the disk tests check it
    // (xtask/src/test/disk.rs), so that a boot on the wrong one fails.
    match interrupts {
        Interrupts::Msix { entry, vector } => {
            println!("virtio-blk: /dev/vda interrupts by msix entry {entry} vector {vector}")
        }
        Interrupts::Line(line) => println!("virtio-blk: /dev/vda interrupts by line {line}"),
    }
    Ok(Some((device, interrupts)))
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
    let (disk, interrupts) = match probe(queue) {
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
        interrupts,
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
        batches: Vec::with_capacity(MAX_BUFFERS),
        fsyncs: Vec::new(),
        flushing: None,
        stats: Stats::default(),
        taken_tsc: 0,
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
    /// `block::OP_DEVICE_TIMES`: device requests completed, and their TSC
    /// ticks from notification to the kernel's taking of the interrupt
    /// that reported them; the device's interrupts, and their ticks from
    /// that taking to this driver's running. Two reads of the TSC per
    /// interrupt and one per request: cheap enough to keep on.
    completions: u64,
    device_ticks: u64,
    interrupts: u64,
    delivery_ticks: u64,
}

impl Stats {
    /// A request notified at `notified_tsc` completed, reported by an
    /// interrupt the kernel took at `taken_tsc` (on another CPU's TSC,
    /// perhaps: a reading that went back counts 0).
    fn completed(&mut self, notified_tsc: u64, taken_tsc: u64) {
        self.completions += 1;
        self.device_ticks += taken_tsc.saturating_sub(notified_tsc);
    }
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

/// A checked PWRITEV waiting for a DMA buffer or room in the queue: its
/// writes in order (their data follows the headers in the client's send
/// buffer, in the same order).
struct WaitingBatch {
    reply: ReplyHandle,
    parts: Vec<Transfer>,
    data_bytes: usize,
}

/// What waits to start, in arrival order.
enum Pending {
    One(Waiting),
    Batch(WaitingBatch),
}

/// One write of a PWRITEV the device holds: its bytes are `range` of the
/// batch's buffer.
struct Part {
    token: u16,
    range: Range<usize>,
    header: Box<BlkReq>,
    status: Box<BlkResp>,
    done: bool,
}

/// A PWRITEV the device holds (some of its writes, when the queue refused
/// the rest: it then ends `EIO`).
struct InBatch {
    notified_tsc: u64,
    reply: ReplyHandle,
    buffer: &'static mut [u8],
    parts: Vec<Part>,
    data_bytes: usize,
    failed: bool,
}

/// A request the device holds. The header and status live on the heap
/// (boxed: their addresses must not move until the request completes;
/// `hal` bounces them), the data in `buffer`, which is DMA memory.
struct InFlight {
    /// The TSC once the device was told of it.
    notified_tsc: u64,
    token: u16,
    request: Waiting,
    buffer: &'static mut [u8],
    header: Box<BlkReq>,
    status: Box<BlkResp>,
}

/// A flush the device holds: header and status boxed as for [`InFlight`].
struct Flushing {
    notified_tsc: u64,
    token: u16,
    header: Box<BlkReq>,
    status: Box<BlkResp>,
    replies: Vec<ReplyHandle>,
}

struct Driver {
    queue: Queue,
    interrupts: Interrupts,
    disk: Disk,
    read_only: bool,
    opens: Opens,
    /// Who may open and close handles.
    trusted: Option<Pid>,
    /// DMA buffers not in use.
    buffers: Vec<&'static mut [u8]>,
    buffers_made: usize,
    waiting: VecDeque<Pending>,
    in_flight: Vec<InFlight>,
    batches: Vec<InBatch>,
    /// FSYNC calls waiting for the requests in flight to finish.
    fsyncs: Vec<ReplyHandle>,
    /// The flush the device holds, and the FSYNC calls it answers.
    flushing: Option<Flushing>,
    stats: Stats,
    /// The TSC at which the kernel took the interrupt being served (word
    /// 1 of its message, `abi::msg::Kind::Interrupt`).
    taken_tsc: u64,
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
                Kind::Interrupt => {
                    self.taken_tsc = r.message[1];
                    self.stats.interrupts += 1;
                    self.stats.delivery_ticks += sys::rdtsc().saturating_sub(self.taken_tsc);
                    self.interrupt()
                }
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
                        self.waiting.push_back(Pending::One(Waiting {
                            reply,
                            handle,
                            transfer,
                            is_write,
                            is_positional,
                        }));
                        return;
                    }
                    Ok(None) => {
                        self.stats.requests += 1;
                        Ok(0)
                    }
                    Err(e) => Err(e),
                }
            }
            block::OP_PWRITEV => match self.check_writev(reply, m, data) {
                Ok(batch) => {
                    self.stats.requests += 1;
                    self.waiting.push_back(Pending::Batch(batch));
                    return;
                }
                Err(e) => Err(e),
            },
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
            block::OP_DEVICE_TIMES => {
                let s = &self.stats;
                let words = [s.completions, s.device_ticks, s.interrupts, s.delivery_ticks];
                let _ = msg::reply(reply, &words, &[]);
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
    /// the line interrupt again. An MSI-X message needs neither the ISR
    /// status read nor `ack_irq` (virtio 1.x §4.1.4.5: with MSI-X the
    /// driver should not read it): it is an edge, and the kernel masked
    /// nothing. A completion after the used ring was last read sends a
    /// new message.
    fn interrupt(&mut self) {
        // Reading the ISR status lowers the (level-triggered) line.
        if let Interrupts::Line(_) = self.interrupts {
            let _ = self.disk.ack_interrupt();
        }
        while let Some(token) = self.disk.peek_used() {
            if self.flushing.as_ref().is_some_and(|f| f.token == token) {
                let f = self.flushing.take().expect("checked");
                self.flushed(f);
                continue;
            }
            if let Some(i) = self.in_flight.iter().position(|f| f.token == token) {
                let f = self.in_flight.swap_remove(i);
                self.complete(f);
                continue;
            }
            if !self.complete_part(token) {
                println!("virtio-blk: the device finished request {token}, which it was not given");
                break;
            }
        }
        if let Interrupts::Line(line) = self.interrupts {
            let _ = sys::ack_irq(line);
        }
    }

    fn complete(&mut self, mut f: InFlight) {
        self.stats.completed(f.notified_tsc, self.taken_tsc);
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

    /// Check a PWRITEV (`m`: op, handle, count, data bytes): its headers
    /// from the send buffer (`data` holds them when the message carried
    /// them; else through the lease), each write as `OP_PWRITE` would.
    /// Nothing is started here.
    fn check_writev(&mut self, reply: ReplyHandle, m: [u64; 4], data: &[u8]) -> Result<WaitingBatch, Errno> {
        let [_, handle, count, data_bytes] = m;
        let count = usize::try_from(count).map_err(|_| EINVAL)?;
        if count == 0 || count > block::MAX_WRITEV {
            return Err(EINVAL);
        }
        let header_bytes = count * block::WRITEV_HEADER_BYTES;
        let fits = data_bytes
            .checked_add(header_bytes as u64)
            .is_some_and(|n| n <= block::MAX_TRANSFER_BYTES && data_bytes > 0);
        if !fits {
            return Err(EINVAL);
        }
        if self.read_only {
            return Err(EBADF);
        }
        let mut headers = [0u8; block::MAX_WRITEV * block::WRITEV_HEADER_BYTES];
        let headers = &mut headers[..header_bytes];
        if data.len() >= header_bytes {
            headers.copy_from_slice(&data[..header_bytes]);
        } else {
            match msg::lease_read(reply, 0, headers, 0) {
                Ok(n) if n == header_bytes => {}
                Ok(_) => return Err(EINVAL),
                Err(e) => return Err(lease_errno(e).unwrap_or(EIO)),
            }
        }
        let mut parts = Vec::with_capacity(count);
        let mut sum = 0u64;
        for h in headers.chunks_exact(block::WRITEV_HEADER_BYTES) {
            let word = |i: usize| u64::from_le_bytes(h[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            let (offset, len) = (word(0), word(1));
            // A write of nothing is no write: refused, as a count of 0.
            let t = self.opens.start_at(handle, offset, len, true)?.ok_or(EINVAL)?;
            sum = sum.checked_add(t.len_bytes).ok_or(EINVAL)?;
            parts.push(t);
        }
        if sum != data_bytes {
            return Err(EINVAL);
        }
        Ok(WaitingBatch { reply, parts, data_bytes: data_bytes as usize })
    }

    /// Requests the device holds now.
    fn requests_in_flight(&self) -> usize {
        let parts: usize = self.batches.iter().map(|b| b.parts.iter().filter(|p| !p.done).count()).sum();
        self.in_flight.len() + parts + usize::from(self.flushing.is_some())
    }

    /// Start a PWRITEV: its data into `buffer`, one request per write,
    /// then one notification. Returns it (and its buffer) when the
    /// virtqueue has no room for all its writes now.
    fn submit_batch(
        &mut self,
        b: WaitingBatch,
        buffer: &'static mut [u8],
    ) -> Option<(WaitingBatch, &'static mut [u8])> {
        if self.requests_in_flight() + b.parts.len() > self.disk.virt_queue_size() as usize {
            if self.requests_in_flight() > 0 {
                return Some((b, buffer));
            }
            // Cannot happen (at most MAX_WRITEV writes, a larger queue);
            // refused rather than waited for forever.
            answer(b.reply, Err(EIO));
            self.buffers.push(buffer);
            return None;
        }
        let header_bytes = b.parts.len() * block::WRITEV_HEADER_BYTES;
        let data = &mut buffer[..b.data_bytes];
        match msg::lease_read(b.reply, header_bytes as u64, data, 0) {
            Ok(n) if n == b.data_bytes => {}
            Ok(_) => {
                answer(b.reply, Err(EINVAL));
                self.buffers.push(buffer);
                return None;
            }
            Err(e) => {
                if let Some(errno) = lease_errno(e) {
                    answer(b.reply, Err(errno));
                }
                self.buffers.push(buffer);
                return None;
            }
        }
        let mut parts = Vec::with_capacity(b.parts.len());
        let mut failed = false;
        let mut at = 0usize;
        for t in &b.parts {
            let range = at..at + t.len_bytes as usize;
            at = range.end;
            let mut header = Box::new(BlkReq::default());
            let mut status = Box::new(BlkResp::default());
            // SAFETY: as in `submit`: `header` and `status` are boxed and
            // `buffer` is DMA memory this driver owns; none is touched
            // until `complete_part` passes them back once the device has
            // finished with them (the buffer moves into `batches` below,
            // its memory does not).
            #[allow(unsafe_code)]
            let added = unsafe {
                self.disk.write_blocks_nb_unnotified(
                    t.first_block() as usize,
                    &mut header,
                    &buffer[range.clone()],
                    &mut status,
                )
            };
            match added {
                Ok(token) => parts.push(Part { token, range, header, status, done: false }),
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        if parts.is_empty() {
            answer(b.reply, Err(EIO));
            self.buffers.push(buffer);
            return None;
        }
        self.disk.notify();
        let notified_tsc = sys::rdtsc();
        self.batches.push(InBatch {
            notified_tsc,
            reply: b.reply,
            buffer,
            parts,
            data_bytes: b.data_bytes,
            failed,
        });
        None
    }

    /// The device finished `token`, if it is one of a PWRITEV's writes:
    /// the batch is answered when its last write is done.
    fn complete_part(&mut self, token: u16) -> bool {
        let found = self
            .batches
            .iter()
            .enumerate()
            .find_map(|(i, b)| b.parts.iter().position(|p| p.token == token && !p.done).map(|j| (i, j)));
        let Some((i, j)) = found else { return false };
        self.stats.completed(self.batches[i].notified_tsc, self.taken_tsc);
        let b = &mut self.batches[i];
        let p = &mut b.parts[j];
        // SAFETY: the token, header, data and status `submit_batch` gave
        // the device; it is done with them (`peek_used` named it).
        #[allow(unsafe_code)]
        let done = unsafe {
            self.disk.complete_write_blocks(p.token, &p.header, &b.buffer[p.range.clone()], &mut p.status)
        };
        p.done = true;
        b.failed |= done.is_err() || p.status.status() != RespStatus::OK;
        if b.parts.iter().all(|p| p.done) {
            let b = self.batches.swap_remove(i);
            let r = if b.failed {
                Err(EIO)
            } else {
                self.stats.bytes_written += b.data_bytes as u64;
                Ok(b.data_bytes as u64)
            };
            answer(b.reply, r);
            self.buffers.push(b.buffer);
        }
        true
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
            if !self.in_flight.is_empty() || !self.batches.is_empty() || self.flushing.is_some() {
                // The pending FSYNCs' writes are not all complete yet, or
                // the flush in flight may have been taken before they
                // were: hold new requests until this flush can be sent.
                return;
            }
            self.start_flush();
        }
        while !self.waiting.is_empty() {
            let Some(buffer) = self.take_buffer() else { return };
            let back = match self.waiting.pop_front().expect("not empty") {
                Pending::One(w) => self.submit(w, buffer).map(|(w, b)| (Pending::One(w), b)),
                Pending::Batch(w) => self.submit_batch(w, buffer).map(|(w, b)| (Pending::Batch(w), b)),
            };
            if let Some(back) = back {
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
                let notified_tsc = sys::rdtsc();
                self.in_flight.push(InFlight { notified_tsc, token, request: w, buffer, header, status });
                None
            }
            // Full with requests of its own or of a PWRITEV's: one will
            // complete and make room.
            Err(virtio_drivers::Error::QueueFull) if self.requests_in_flight() > 0 => Some((w, buffer)),
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
            Ok(Some(token)) => {
                let notified_tsc = sys::rdtsc();
                self.flushing = Some(Flushing { notified_tsc, token, header, status, replies })
            }
            Ok(None) => replies.into_iter().for_each(|r| answer(r, Ok(0))),
            Err(_) => replies.into_iter().for_each(|r| answer(r, Err(EIO))),
        }
    }

    /// The device has finished the flush: answer its FSYNCs.
    fn flushed(&mut self, mut f: Flushing) {
        self.stats.completed(f.notified_tsc, self.taken_tsc);
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
