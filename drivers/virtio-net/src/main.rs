//! virtio-net: the network card's driver, a user process (Ridge OS §3: a
//! device manager is a process that receives its device's interrupts as
//! messages). It finds the virtio-net PCI function on bus 0, claims it,
//! drives it through the `virtio-drivers` crate (`VirtIONetRaw`: the
//! virtqueues and the PCI transport; the frame buffers are the driver's
//! own, in DMA memory) and moves Ethernet frames between the card and the
//! one process attached to it, the network server (`servers/net`), by the
//! link of `protocols::net::eth`.
//!
//! How a frame moves (see docs/network.md for the copies):
//! - **Receive**: [`RX_BUFFERS`] buffers of [`RX_BUFFER_BYTES`] are posted
//!   to the receive queue at start and re-posted as soon as their frame
//!   has gone on. On the card's interrupt the driver takes every finished
//!   buffer (`poll_receive`, `receive_complete`) and sends its frame to the
//!   server as the data of one `send_data` (`eth::RX`): the kernel copies
//!   it from the DMA buffer into the server's receive buffer when the
//!   server waits, else into a message frame. The driver never waits on
//!   the server: a frame the server's queue has no room for is dropped
//!   and counted, as a card drops what its ring cannot hold; TCP resends.
//! - **Transmit**: the driver receives every message straight into a free
//!   transmit buffer, just past the room for the virtio header, so a
//!   frame the server sends (`eth::TX`) lands in DMA memory with the
//!   kernel's one copy and goes to the card where it lies
//!   (`transmit_begin`). [`TX_BUFFERS`] frames may be in flight; a buffer
//!   comes back when the card has sent it (`poll_transmit`, at interrupts
//!   and whenever no buffer is free). With none free, a frame is dropped
//!   and counted.
//! - **Interrupts**: the function's INTx line, level-triggered, claimed
//!   as for virtio-blk (docs/devices.md); reading the ISR status
//!   (`ack_interrupt`) lowers it, then `ack_irq` unmasks it.
//!
//! What it is not: a protocol stack, or a server UNIX programs talk to:
//! its device entry (`/dev/eth0`, mode 0600) is how the network server
//! finds it, and an open of it is refused (`ENODEV`).
//!
//! Who may attach (issue 16): only the process its starter, init, names
//! with `eth::OP_SET_CLIENT` (the network server: the inittab's `client=`
//! word), a pid the kernel stamps on every message and never reuses.
//! Anyone else gets `EPERM` for `eth::OP_ATTACH` at every moment: before
//! a client is named, while it lives, after it ends, and after this
//! driver is started again (init names the client to the new instance
//! before it makes `/dev/eth0` name it). Frames to send are taken only
//! from the attached client. The device entry's mode keeps UNIX opens
//! out; this keeps out a process that opens a link to the queue itself.
//!
//! Invariants: a buffer is either free, or the card's (posted or in
//! flight), never both; the driver touches a buffer the card holds only
//! after the crate's `*_complete` hands it back. Nothing a client sends
//! stops the driver.
//!
//! Arguments: the starter's pid. At start it sends the starter
//! `[eth::READY, queue, present, 0]`; with no card (`cargo xtask run
//! --net none`) `present` is 0 and the driver ends. Only the starter may
//! name the client.

#![no_std]
#![no_main]
#![deny(unsafe_code)]

extern crate alloc;

use abi::msg::Kind;
use abi::{Error, Pid};
use alloc::vec::Vec;
use protocols::net::eth;
use protocols::unix::errno::{EBUSY, ENODEV, ENOSYS, EPERM};
use protocols::unix::{device, encode_result, io};
use runtime::msg::{self, Link, Queue, ReplyHandle};
use runtime::{Args, println, sys};
use virtio_drivers::device::net::VirtIONetRaw;
use virtio_drivers::transport::pci::PciTransport;
use virtio_hal::hal::{self, RidgebackHal};

runtime::entry!(main);

/// Entries of each virtqueue (QEMU's virtio-net offers 256).
const QUEUE_SIZE: usize = 64;
/// Receive buffers posted at once, and the bytes of each: a virtio header
/// and a whole frame (the crate asks for at least 1526).
const RX_BUFFERS: usize = 32;
const RX_BUFFER_BYTES: usize = 2048;
/// Transmit buffers: a message is received straight into one, whose data
/// may be a whole page, so each is a page plus the header's room.
const TX_BUFFERS: usize = 32;
const TX_BUFFER_BYTES: usize = 2 * abi::layout::PAGE_SIZE as usize;
/// Room left in front of a frame in a transmit buffer: the largest virtio
/// header (12 bytes), so the frame's start does not depend on the
/// negotiated header size.
const TX_HEADER_ROOM: usize = 16;
const QUEUE_CAPACITY: u64 = 128;

pub type Card = VirtIONetRaw<RidgebackHal, PciTransport, QUEUE_SIZE>;

/// virtio-net: the transitional device id (QEMU's default `virtio-net-pci`)
/// and the modern one (virtio 1.x: 0x1040 + device type 1).
const NET_DEVICE_IDS: [u16; 2] = [0x1000, 0x1041];

/// Find, claim and start the card (`virtio_hal::pci::find`); `Ok(None)`
/// when there is none. Its interrupts arrive on `queue`. Returns the
/// device and its ISA line.
fn probe(queue: Queue) -> Result<Option<(Card, u64)>, &'static str> {
    let Some((transport, line)) = virtio_hal::pci::find(&NET_DEVICE_IDS, queue)? else { return Ok(None) };
    let mut device = Card::new(transport).map_err(|_| "the device refused to start")?;
    device.enable_interrupts();
    Ok(Some((device, line)))
}

fn main(args: Args) -> i32 {
    let starter = args.iter().filter_map(|s| s.parse::<u64>().ok()).last().map(Pid);
    let set_up =
        msg::init_qseg(16, 4, QUEUE_CAPACITY + 32, 64).and_then(|()| msg::open_queue(QUEUE_CAPACITY, true));
    let queue = match set_up {
        Ok(q) if q.0 == eth::QUEUE => q,
        _ => {
            println!("virtio-net: cannot open its queue");
            tell_starter(starter, 0, false);
            return 1;
        }
    };
    let (card, irq) = match probe(queue) {
        Ok(Some(found)) => found,
        Ok(None) => {
            tell_starter(starter, queue.0, false);
            return 0;
        }
        Err(why) => {
            println!("virtio-net: cannot drive the card: {why}");
            tell_starter(starter, queue.0, false);
            return 2;
        }
    };
    let mut driver = match Driver::new(card, queue, irq, starter) {
        Ok(d) => d,
        Err(e) => {
            println!("virtio-net: no DMA memory for its buffers: {}", e.name());
            tell_starter(starter, queue.0, false);
            return 3;
        }
    };
    tell_starter(starter, queue.0, true);
    driver.serve()
}

fn tell_starter(starter: Option<Pid>, queue: u32, present: bool) {
    if let Some(starter) = starter {
        let _ = msg::open_link(starter, Queue(protocols::STARTER_QUEUE))
            .and_then(|l| msg::send(l, &[eth::READY, queue as u64, present as u64, 0]));
    }
}

#[derive(Default)]
struct Stats {
    received: u64,
    sent: u64,
    rx_dropped: u64,
    tx_dropped: u64,
}

struct Driver {
    card: Card,
    queue: Queue,
    irq: u64,
    /// The attached server: its pid and the link to its frame queue.
    client: Option<(Pid, Link)>,
    /// The starter (init): the only sender of `eth::OP_SET_CLIENT`.
    starter: Option<Pid>,
    /// The one process the starter named as the client: the only one
    /// `eth::OP_ATTACH` accepts (None: nobody yet).
    meant: Option<Pid>,
    rx: Vec<&'static mut [u8]>,
    /// Per receive buffer: its token while posted.
    rx_token: Vec<Option<u16>>,
    tx: Vec<&'static mut [u8]>,
    tx_free: Vec<usize>,
    /// (token, buffer, range given to the card) per frame in flight.
    tx_in_flight: Vec<(u16, usize, core::ops::Range<usize>)>,
    /// A message that arrives when no transmit buffer is free goes here.
    scratch: Vec<u8>,
    stats: Stats,
}

fn answer(reply: ReplyHandle, words: [u64; 4]) {
    let _ = msg::reply(reply, &words, &[]);
}

fn errno_words(e: protocols::unix::Errno) -> [u64; 4] {
    [encode_result(Err(e)), 0, 0, 0]
}

impl Driver {
    fn new(card: Card, queue: Queue, irq: u64, starter: Option<Pid>) -> Result<Driver, Error> {
        let mut rx = Vec::with_capacity(RX_BUFFERS);
        let rx_area = hal::dma_buffer(RX_BUFFERS * RX_BUFFER_BYTES)?;
        for chunk in rx_area.chunks_exact_mut(RX_BUFFER_BYTES) {
            rx.push(chunk);
        }
        let mut tx = Vec::with_capacity(TX_BUFFERS);
        let tx_area = hal::dma_buffer(TX_BUFFERS * TX_BUFFER_BYTES)?;
        for chunk in tx_area.chunks_exact_mut(TX_BUFFER_BYTES) {
            tx.push(chunk);
        }
        let mut d = Driver {
            card,
            queue,
            irq,
            client: None,
            starter,
            meant: None,
            rx,
            rx_token: alloc::vec![None; RX_BUFFERS],
            tx,
            tx_free: (0..TX_BUFFERS).rev().collect(),
            tx_in_flight: Vec::new(),
            scratch: alloc::vec![0; abi::msg::MAX_DATA_BYTES as usize],
            stats: Stats::default(),
        };
        for i in 0..RX_BUFFERS {
            d.post_rx(i);
        }
        Ok(d)
    }

    /// Give receive buffer `i` to the card.
    fn post_rx(&mut self, i: usize) {
        // SAFETY: buffer `i` is DMA memory this driver owns and no longer
        // touches: it is free (never posted, or handed back by
        // `receive_complete`), and stays untouched until `poll_receive`
        // names its token and `receive_complete` returns it.
        #[allow(unsafe_code)]
        let token = unsafe { self.card.receive_begin(self.rx[i]) };
        match token {
            Ok(t) => self.rx_token[i] = Some(t),
            Err(e) => println!("virtio-net: cannot post a receive buffer: {e:?}"),
        }
    }

    fn serve(&mut self) -> i32 {
        loop {
            if self.tx_free.is_empty() {
                self.reap_tx();
            }
            let slot = self.tx_free.pop();
            let received = match slot {
                Some(i) => msg::receive_data(self.queue, &mut self.tx[i][TX_HEADER_ROOM..]),
                None => msg::receive_data(self.queue, &mut self.scratch),
            };
            let r = match received {
                Ok(r) => r,
                Err(_) => {
                    self.tx_free.extend(slot);
                    continue;
                }
            };
            match r.kind {
                Kind::Data | Kind::Short
                    if r.message[0] == eth::TX && self.client.is_some_and(|(p, _)| p == r.sender) =>
                {
                    match slot {
                        Some(i) => self.transmit(i, r.len),
                        None => self.stats.tx_dropped += 1,
                    }
                }
                Kind::Short if r.message[0] == eth::OP_SET_CLIENT && self.starter == Some(r.sender) => {
                    self.tx_free.extend(slot);
                    self.set_client(r.message[1]);
                }
                Kind::Interrupt => {
                    self.tx_free.extend(slot);
                    self.interrupt();
                }
                Kind::Call => {
                    self.tx_free.extend(slot);
                    self.request(r.sender, r.reply, r.message);
                }
                _ => self.tx_free.extend(slot),
            }
        }
    }

    /// Send the `len`-byte frame that arrived in transmit buffer `i`.
    fn transmit(&mut self, i: usize, len: usize) {
        if len == 0 || len > eth::MAX_FRAME_BYTES {
            self.stats.tx_dropped += 1;
            self.tx_free.push(i);
            return;
        }
        // The virtio header goes right in front of the frame.
        let mut header = [0u8; TX_HEADER_ROOM];
        let header_len = match self.card.fill_buffer_header(&mut header) {
            Ok(n) => n,
            Err(_) => {
                self.tx_free.push(i);
                return;
            }
        };
        let start = TX_HEADER_ROOM - header_len;
        self.tx[i][start..TX_HEADER_ROOM].copy_from_slice(&header[..header_len]);
        let end = TX_HEADER_ROOM + len;
        // SAFETY: transmit buffer `i` is DMA memory this driver owns; it
        // is taken off the free list and not touched again until
        // `poll_transmit` names its token and `transmit_complete` (given
        // the same range) hands it back.
        #[allow(unsafe_code)]
        let token = unsafe { self.card.transmit_begin(&self.tx[i][start..end]) };
        match token {
            Ok(t) => {
                self.tx_in_flight.push((t, i, start..end));
                self.stats.sent += 1;
            }
            Err(_) => {
                self.stats.tx_dropped += 1;
                self.tx_free.push(i);
            }
        }
    }

    /// Take back every transmit buffer the card is done with.
    fn reap_tx(&mut self) {
        while let Some(token) = self.card.poll_transmit() {
            let Some(k) = self.tx_in_flight.iter().position(|f| f.0 == token) else {
                println!("virtio-net: the card finished frame {token}, which it was not given");
                return;
            };
            let (_, i, range) = self.tx_in_flight.swap_remove(k);
            // SAFETY: `range` of buffer `i` is the slice given to
            // `transmit_begin` with `token`, and the card has finished
            // with it (`poll_transmit` named the token).
            #[allow(unsafe_code)]
            let _ = unsafe { self.card.transmit_complete(token, &self.tx[i][range]) };
            self.tx_free.push(i);
        }
    }

    /// The card's interrupt: hand every received frame on, re-post its
    /// buffer, take back sent buffers, let the line interrupt again.
    fn interrupt(&mut self) {
        let _ = self.card.ack_interrupt();
        while let Some(token) = self.card.poll_receive() {
            let Some(i) = self.rx_token.iter().position(|t| *t == Some(token)) else {
                println!("virtio-net: the card filled buffer {token}, which it was not given");
                break;
            };
            self.rx_token[i] = None;
            // SAFETY: buffer `i` is the one posted with `token`, and the
            // card has finished with it (`poll_receive`).
            #[allow(unsafe_code)]
            let done = unsafe { self.card.receive_complete(token, self.rx[i]) };
            if let Ok((header_len, frame_len)) = done {
                self.stats.received += 1;
                let frame = &self.rx[i][header_len..header_len + frame_len];
                let sent = match self.client {
                    Some((_, link)) => msg::send_data(link, &[eth::RX, frame_len as u64, 0, 0], frame),
                    None => Err(Error::NoQueueSegment),
                };
                if sent.is_err() {
                    self.stats.rx_dropped += 1;
                }
            }
            self.post_rx(i);
        }
        self.reap_tx();
        let _ = sys::ack_irq(self.irq);
    }

    /// The starter named the client (`pid`, 0: none). An attached
    /// process that is no longer the one named is let go at once.
    fn set_client(&mut self, pid: u64) {
        self.meant = (pid != 0).then_some(Pid(pid));
        if let Some((attached, link)) = self.client
            && Some(attached) != self.meant
        {
            let _ = msg::close_link(link);
            self.client = None;
        }
    }

    fn request(&mut self, sender: Pid, reply: ReplyHandle, m: [u64; 4]) {
        match m[0] {
            eth::OP_ATTACH => {
                if self.meant != Some(sender) {
                    return answer(reply, errno_words(EPERM));
                }
                if let Some((pid, _)) = self.client
                    && pid != sender
                    && is_alive(pid)
                {
                    return answer(reply, errno_words(EBUSY));
                }
                match msg::open_link(sender, Queue(m[1] as u32)) {
                    Ok(link) => {
                        if let Some((_, old)) = self.client.replace((sender, link)) {
                            let _ = msg::close_link(old);
                        }
                        let mac = eth::mac_word(self.card.mac_address());
                        answer(reply, [0, mac, eth::MTU_BYTES as u64, 0]);
                    }
                    Err(_) => answer(reply, errno_words(protocols::unix::errno::EINVAL)),
                }
            }
            eth::OP_STATS => {
                let s = &self.stats;
                answer(reply, [s.received, s.sent, s.rx_dropped, s.tx_dropped]);
            }
            device::OP_OPEN => answer(reply, errno_words(ENODEV)),
            io::OP_CLOSE => answer(reply, [0; 4]),
            _ => answer(reply, errno_words(ENOSYS)),
        }
    }
}

/// Whether process `pid` still exists (a server that died may be
/// replaced by a new one).
fn is_alive(pid: Pid) -> bool {
    match msg::open_link(pid, Queue(0)) {
        Ok(l) => {
            let _ = msg::close_link(l);
            true
        }
        Err(Error::NoSuchProcess | Error::DeadPeer) => false,
        Err(_) => true,
    }
}
