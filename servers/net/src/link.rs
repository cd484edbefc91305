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
//!
//! A driver that ends (issue 16; init restarts `virtio-net`, MINIX 3's
//! reincarnation): the link notices it by a frame to send that gets
//! `DeadPeer`, or by a probe of the driver's pid every [`PROBE_NS`] (a
//! card that only receives sends nothing: a host's connection to a
//! forwarded port must find the new driver too). The link is then
//! *down*: frames to send are dropped and counted, as a card without a
//! carrier drops them, and `/dev/eth0` is looked up and attached again
//! ([`EthLink::tend`]) after [`FIRST_RETRY_NS`], doubling to
//! [`MAX_RETRY_NS`] while the entry still names the dead driver or the
//! new one refuses. Once attached, the interface keeps its address when
//! the card's MAC is the same, and starts DHCP over when it is not
//! (`Net::tend_link` in stack.rs); sockets are not touched: TCP
//! retransmits what the dead driver lost.

use abi::{Error, Pid};
use alloc::collections::VecDeque;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;
use protocols::net::eth;
use runtime::msg::{self, Link, Queue};
use runtime::println;
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

/// How often a live driver's pid is probed (a driver that ended is also
/// noticed at once by the next frame sent to it).
pub const PROBE_NS: u64 = 1_000_000_000;
/// The first wait before `/dev/eth0` is looked up again after the driver
/// ended: init starts the new one 100 ms after a death
/// (`unix_core::restart::INIT_POLICY`).
pub const FIRST_RETRY_NS: u64 = 100_000_000;
/// The longest wait between two tries (init's own back-off is capped at
/// 5 s; a try costs a lookup at memfs).
pub const MAX_RETRY_NS: u64 = 2_000_000_000;
/// The interface's address before the driver first accepts the server
/// (a locally administered unicast address, IEEE 802 §8.2.2).
pub const STAND_IN_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0];

#[derive(Default, Clone, Copy)]
pub struct LinkStats {
    pub rx_frames: u64,
    pub tx_frames: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    /// Times the link was attached again to a new driver.
    pub relinks: u64,
}

/// The driver ended: when to look for the new one, and the wait after that.
#[derive(Clone, Copy)]
struct Down {
    next_try_ns: u64,
    wait_ns: u64,
}

pub struct EthLink {
    driver: Link,
    /// The driver's process: probed, and told apart from its successor.
    driver_pid: Pid,
    pub mac: [u8; 6],
    rx: VecDeque<Vec<u8>>,
    pool: Pool,
    tx_buf: Vec<u8>,
    pub stats: LinkStats,
    /// A frame sent to the driver got `DeadPeer`.
    saw_dead_peer: bool,
    /// Set while the driver is gone and not yet replaced.
    down: Option<Down>,
    /// When the driver's pid is probed next (ns on the server's clock).
    next_probe_ns: u64,
    /// Not attached yet: the driver refused the first attach (see
    /// [`EthLink::refused`]); its first success is no re-attach.
    never_attached: bool,
}

impl EthLink {
    pub fn new(driver: Link, driver_pid: Pid, mac: [u8; 6], pool: Pool) -> EthLink {
        EthLink {
            driver,
            driver_pid,
            mac,
            rx: VecDeque::new(),
            pool,
            tx_buf: alloc::vec![0; eth::MAX_FRAME_BYTES],
            stats: LinkStats::default(),
            saw_dead_peer: false,
            down: None,
            next_probe_ns: 0,
            never_attached: false,
        }
    }

    /// The driver refused this server's first attach with `EPERM`: init
    /// names the server to the driver (`eth::OP_SET_CLIENT`) right after
    /// starting it, and the server may ask first. The link starts down
    /// and is tried again as after a driver's end ([`EthLink::tend`]),
    /// with a stand-in MAC address (locally administered) until the
    /// driver gives the card's. `driver` stays open until then: its
    /// number is not freed while the link may still be named.
    pub fn refused(driver: Link, pool: Pool, now_ns: u64) -> EthLink {
        let mut l = EthLink::new(driver, Pid(0), STAND_IN_MAC, pool);
        l.down = Some(Down { next_try_ns: now_ns.saturating_add(FIRST_RETRY_NS), wait_ns: FIRST_RETRY_NS });
        l.never_attached = true;
        l
    }

    /// Whether the driver has ended and no new one is attached yet.
    pub fn is_down(&self) -> bool {
        self.down.is_some()
    }

    /// Nanoseconds from `now_ns` until [`EthLink::tend`] has something to
    /// do: the next probe, or the next try to attach.
    pub fn due_in_ns(&self, now_ns: u64) -> u64 {
        let at = self.down.map_or(self.next_probe_ns, |d| d.next_try_ns);
        if self.saw_dead_peer { 0 } else { at.saturating_sub(now_ns) }
    }

    /// Notice a driver that ended, and while it is down look for its
    /// successor; `queue` is where frames must come. The new MAC address
    /// when the link was attached again.
    pub fn tend(&mut self, now_ns: u64, queue: Queue) -> Option<[u8; 6]> {
        let down = match self.down {
            Some(d) => d,
            None => {
                let ended = self.saw_dead_peer
                    || (now_ns >= self.next_probe_ns && {
                        self.next_probe_ns = now_ns.saturating_add(PROBE_NS);
                        !is_alive(self.driver_pid)
                    });
                if !ended {
                    return None;
                }
                println!(
                    "net: the card's driver ({:#x}) ended; eth0 is down until {} names a new one",
                    self.driver_pid.0,
                    eth::DEVICE_PATH
                );
                let d = Down { next_try_ns: now_ns.saturating_add(FIRST_RETRY_NS), wait_ns: FIRST_RETRY_NS };
                self.down = Some(d);
                self.saw_dead_peer = false;
                return None;
            }
        };
        if now_ns < down.next_try_ns {
            return None;
        }
        match attach(queue) {
            Ok((link, pid, mac)) if pid != self.driver_pid => {
                // The dead driver's link goes only now: a link number
                // freed earlier could name another process by the time a
                // frame is sent on it.
                let _ = msg::close_link(core::mem::replace(&mut self.driver, link));
                self.driver_pid = pid;
                self.mac = mac;
                self.down = None;
                self.saw_dead_peer = false;
                self.next_probe_ns = now_ns.saturating_add(PROBE_NS);
                if core::mem::take(&mut self.never_attached) {
                    println!("net: eth0 attached to the card's driver ({:#x})", pid.0);
                } else {
                    self.stats.relinks += 1;
                    println!("net: eth0 attached again to the card's new driver ({:#x})", pid.0);
                }
                Some(mac)
            }
            other => {
                if let Ok((link, ..)) = other {
                    let _ = msg::close_link(link); // the same dead driver
                }
                let wait_ns = (down.wait_ns * 2).min(MAX_RETRY_NS);
                self.down = Some(Down { next_try_ns: now_ns.saturating_add(wait_ns), wait_ns });
                None
            }
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

/// Whether process `pid` exists: a link to it opens (and is closed).
fn is_alive(pid: Pid) -> bool {
    match msg::open_link(pid, Queue(eth::QUEUE)) {
        Ok(l) => {
            let _ = msg::close_link(l);
            true
        }
        Err(e) => !matches!(e, Error::DeadPeer | Error::NoSuchProcess),
    }
}

/// Look `/dev/eth0` up and attach to the driver it names, frames to
/// `queue`: the link, the driver's pid and the card's MAC address.
pub fn attach(queue: Queue) -> Result<(Link, Pid, [u8; 6]), Error> {
    let (pid, driver_queue) = crate::device::find_driver().ok_or(Error::NoSuchDevice)?;
    let link = msg::open_link(pid, Queue(driver_queue))?;
    match msg::call(link, &[eth::OP_ATTACH, queue.0 as u64, 0, 0], &[], &mut []) {
        Ok((w, _)) if protocols::unix::result(w[0]).is_ok() => Ok((link, pid, eth::mac_of(w[1]))),
        other => {
            let _ = msg::close_link(link);
            Err(other.err().unwrap_or(Error::PermissionDenied))
        }
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
    /// The link is down: the frame is dropped, nothing is sent.
    down: bool,
    saw_dead_peer: &'a mut bool,
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
        if self.down {
            self.stats.tx_dropped += 1;
            return r;
        }
        match msg::send_data(self.driver, &[eth::TX, len as u64, 0, 0], frame) {
            Ok(()) => self.stats.tx_frames += 1,
            Err(e) => {
                self.stats.tx_dropped += 1;
                *self.saw_dead_peer |= e == Error::DeadPeer;
            }
        }
        r
    }
}

impl EthLink {
    fn tx_token(&mut self) -> EthTx<'_> {
        EthTx {
            driver: self.driver,
            buf: &mut self.tx_buf,
            stats: &mut self.stats,
            down: self.down.is_some(),
            saw_dead_peer: &mut self.saw_dead_peer,
        }
    }
}

impl Device for EthLink {
    type RxToken<'a> = EthRx;
    type TxToken<'a> = EthTx<'a>;

    fn receive(&mut self, _now: Instant) -> Option<(EthRx, EthTx<'_>)> {
        let frame = self.rx.pop_front()?;
        let rx = EthRx { frame, pool: self.pool.clone() };
        Some((rx, self.tx_token()))
    }

    fn transmit(&mut self, _now: Instant) -> Option<EthTx<'_>> {
        Some(self.tx_token())
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = eth::MAX_FRAME_BYTES;
        caps.max_burst_size = None;
        caps
    }
}
