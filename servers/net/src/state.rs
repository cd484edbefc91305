//! The cradle's state: one `Net` holds the stack (its interfaces and
//! socket sets), the socket table, the ports, the lock page and the
//! queues of work, for the loop (stack.rs), the socket calls
//! (sockets.rs), the two modes' locking (locking.rs) and queued writes
//! (queued.rs) and the receive rings (rings.rs), which each add their
//! own `impl Net`.
//!
//! What this is not: behaviour. It is the one definition those files
//! share, kept apart so that none of them imports another's state
//! (locking.rs and stack.rs once imported each other for it).
//!
//! Invariant (the module graph has no circle, `farm-studio look`): this
//! file imports only data types from modules that import nothing of the
//! files that add an `impl Net`: the link (link.rs, which finds the
//! driver through the leaf device.rs), the rings' data (ring_state.rs),
//! the ports and the socket table.

use crate::link::{EthLink, Pool};
use crate::ports::Ports;
use crate::table::{Claim, Orphan, Parked, Sock};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use protocols::net::locks::LockPage;
use runtime::clock::Clock;
use runtime::msg::{self, Link, Queue};
use smoltcp::iface::{Interface, SocketHandle, SocketSet};
use smoltcp::phy::Loopback;
use smoltcp::wire::Ipv4Address;

/// Index of the loopback interface and its socket set.
pub const LO: usize = 0;
/// Index of the card's interface and its socket set.
pub const ETH: usize = 1;

/// How the card's interface got its address.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum AddrSource {
    Dhcp,
    Fixed,
}

pub struct Net {
    pub queue: Queue,
    pub(crate) timer: Link,
    /// The deadline the timer was last armed with, until its tick.
    pub(crate) armed_ns: Option<u64>,
    pub clock: Clock,
    pub ifaces: Vec<Interface>,
    pub sets: [SocketSet<'static>; 2],
    pub(crate) lo_dev: Loopback,
    pub eth: Option<EthLink>,
    pub(crate) dhcp: Option<SocketHandle>,
    pub(crate) addr_source: AddrSource,
    /// The default route's router, as set (smoltcp's routes are not
    /// readable without a mutable borrow).
    pub(crate) gateway: Option<Ipv4Address>,
    pub(crate) pool: Pool,
    pub rxbuf: Vec<u8>,
    pub monitor: Option<abi::Pid>,
    pub socks: BTreeMap<u64, Sock>,
    pub claims: BTreeMap<u64, Claim>,
    pub orphans: Vec<Orphan>,
    pub parked: Vec<Parked>,
    pub ports: Ports,
    /// Bytes of socket buffers allocated now.
    pub buffer_bytes: u64,
    /// Source of the random part of handles and tokens.
    pub(crate) seed: u64,
    /// The lock page (the global lock and its statistics), shared with
    /// the callers that map it (locking.rs).
    pub locks: alloc::boxed::Box<LockPage>,
    /// `net=`: `locks::MODE_CLASSIC` or `MODE_SCALABLE`.
    pub mode: u64,
    /// `net.cpu=`: the designated CPU.
    pub net_cpu: u64,
    /// `scalable`: the stack process is pinned to `net_cpu`.
    pub pinned: bool,
    /// This process's pid: the lock's owner word when the server holds it.
    pub me: u64,
    pub tsc_hz: u64,
    /// When the lock statistics were last reset (TSC).
    pub lock_epoch_tsc: u64,
    /// `classic`: messages kept until the server holds the lock.
    pub backlog: Vec<(msg::Received, Vec<u8>)>,
    /// `classic`: the stack has work the server could not yet do.
    pub stack_due: bool,
    /// `scalable`: bytes queued by `OP_WRITE_QUEUED` that their
    /// connection's send ring had no room for yet (queued.rs).
    pub queued: BTreeMap<(usize, SocketHandle), alloc::collections::VecDeque<u8>>,
    /// Connections closed while bytes were queued: closed once sent.
    pub close_after: Vec<(usize, SocketHandle)>,
    /// `OP_WRITE_QUEUED` messages taken, and their bytes (`netstat -l`).
    pub queued_writes: u64,
    pub queued_write_bytes: u64,
    /// `classic`: the server could not take the lock; it waits for a
    /// message or a short timer before it tries again.
    pub retry_lock: bool,
    pub(crate) next_serial: u64,
    /// `scalable`: the receive rings lent to readers (rings.rs).
    pub rings: Vec<crate::ring_state::Ring>,
    /// `net.rings=` (default on).
    pub rings_on: bool,
    pub ring_stats: crate::ring_state::RingStats,
    /// A read call found a ring's mini lock held: the stack runs again by
    /// then, so it is retried.
    pub ring_retry_ns: Option<u64>,
}
