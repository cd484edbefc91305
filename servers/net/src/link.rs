//! The driver link as a smoltcp `Device`: frames from the card's driver
//! (`protocols::net::eth::RX` messages, already in this process's memory)
//! wait in [`EthLink::rx`] until the stack polls; frames the stack builds
//! go to the driver as one `send_data` each (`eth::TX`).
//!
//! Copies (docs/network.md): a received frame is not copied here: the
//! receive buffer it arrived in is moved into the queue whole and a pooled
//! one takes its place. A frame to send is built by the stack in
//! [`EthLink::tx_buf`] and copied once by the kernel into a transmit
//! buffer of the driver (DMA memory) when the driver waits, twice when
//! the message must queue.
//!
//! What it is not: a buffer manager of the driver's: the driver owns its
//! DMA buffers; only frames cross, by value.

use alloc::collections::VecDeque;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;
use protocols::net::eth;
use runtime::msg::{self, Link};
use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::time::Instant;

/// Bytes of every receive buffer of the server: a message's data may be a
/// whole page.
pub const RECEIVE_BUFFER_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize;
/// Most received frames held before the stack takes them; more are
/// dropped (the stack polls after every batch of messages, so this bounds
/// only a flood).
const MAX_QUEUED_FRAMES: usize = 256;

/// Receive buffers not in use, shared with the tokens that hand them back.
pub type Pool = Rc<RefCell<Vec<Vec<u8>>>>;

#[derive(Default, Clone, Copy)]
pub struct LinkStats {
    pub rx_frames: u64,
    pub tx_frames: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
}

pub struct EthLink {
    driver: Link,
    pub mac: [u8; 6],
    rx: VecDeque<Vec<u8>>,
    pool: Pool,
    tx_buf: Vec<u8>,
    pub stats: LinkStats,
}

impl EthLink {
    pub fn new(driver: Link, mac: [u8; 6], pool: Pool) -> EthLink {
        EthLink {
            driver,
            mac,
            rx: VecDeque::new(),
            pool,
            tx_buf: alloc::vec![0; eth::MAX_FRAME_BYTES],
            stats: LinkStats::default(),
        }
    }

    /// A frame arrived in `buffer` (its first `len` bytes); the buffer is
    /// the link's until the stack has read the frame.
    pub fn push(&mut self, mut buffer: Vec<u8>, len: usize) {
        if self.rx.len() >= MAX_QUEUED_FRAMES || !(14..=eth::MAX_FRAME_BYTES).contains(&len) {
            self.stats.rx_dropped += 1;
            self.pool.borrow_mut().push(buffer);
            return;
        }
        buffer.truncate(len);
        self.stats.rx_frames += 1;
        self.rx.push_back(buffer);
    }

    pub fn has_frames(&self) -> bool {
        !self.rx.is_empty()
    }
}

/// A fresh receive buffer of [`RECEIVE_BUFFER_BYTES`], from the pool when
/// it has one.
pub fn take_buffer(pool: &Pool) -> Vec<u8> {
    let mut b = pool.borrow_mut().pop().unwrap_or_default();
    b.resize(RECEIVE_BUFFER_BYTES, 0);
    b
}

pub struct EthRx {
    frame: Vec<u8>,
    pool: Pool,
}

impl RxToken for EthRx {
    fn consume<R, F>(self, f: F) -> R
    where
        F: FnOnce(&[u8]) -> R,
    {
        let r = f(&self.frame);
        self.pool.borrow_mut().push(self.frame);
        r
    }
}

pub struct EthTx<'a> {
    driver: Link,
    buf: &'a mut Vec<u8>,
    stats: &'a mut LinkStats,
}

impl TxToken for EthTx<'_> {
    fn consume<R, F>(self, len: usize, f: F) -> R
    where
        F: FnOnce(&mut [u8]) -> R,
    {
        let len = len.min(eth::MAX_FRAME_BYTES);
        let frame = &mut self.buf[..len];
        let r = f(frame);
        // One-way: the driver never makes the stack wait. A full driver
        // queue loses the frame, as a full transmit ring would.
        match msg::send_data(self.driver, &[eth::TX, len as u64, 0, 0], frame) {
            Ok(()) => self.stats.tx_frames += 1,
            Err(_) => self.stats.tx_dropped += 1,
        }
        r
    }
}

impl Device for EthLink {
    type RxToken<'a> = EthRx;
    type TxToken<'a> = EthTx<'a>;

    fn receive(&mut self, _now: Instant) -> Option<(EthRx, EthTx<'_>)> {
        let frame = self.rx.pop_front()?;
        let rx = EthRx { frame, pool: self.pool.clone() };
        let tx = EthTx { driver: self.driver, buf: &mut self.tx_buf, stats: &mut self.stats };
        Some((rx, tx))
    }

    fn transmit(&mut self, _now: Instant) -> Option<EthTx<'_>> {
        Some(EthTx { driver: self.driver, buf: &mut self.tx_buf, stats: &mut self.stats })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = eth::MAX_FRAME_BYTES;
        caps.max_burst_size = None;
        caps
    }
}
