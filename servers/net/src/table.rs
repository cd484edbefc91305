//! The cradle's socket table as data: a user socket ([`Sock`]) and its
//! [`State`], a port claim, a closed socket's lingering connection
//! ([`Orphan`]) and a request kept until it can finish ([`Parked`]).
//! What it is not: the requests' handling (sockets.rs) or the stack
//! (stack.rs); both use these types, and neither is imported here.

use crate::ports::{DEFAULT_EPHEMERAL, Proto};
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use protocols::net as n;
use protocols::unix::Errno;
use protocols::unix::io;
use runtime::msg::ReplyHandle;
use smoltcp::iface::SocketHandle;
use smoltcp::wire::{IpEndpoint, Ipv4Address};

/// Socket buffers unless `SO_SNDBUF`/`SO_RCVBUF` say otherwise.
pub const DEFAULT_BUFFER_BYTES: usize = 64 * 1024;

#[derive(Debug)]
pub enum State {
    /// A socket with no stack socket yet (TCP before connect or listen;
    /// UDP and ICMP before their first use).
    Fresh,
    Listening {
        backlog: usize,
        /// Stack sockets in the LISTEN state: (set, handle).
        members: Vec<(usize, SocketHandle)>,
        /// Connections that left LISTEN, oldest first.
        pending: VecDeque<(usize, SocketHandle)>,
    },
    Conn {
        set: usize,
        sh: SocketHandle,
        /// A connect not yet established (or failed).
        connecting: bool,
        started_ns: u64,
        was_established: bool,
        peer_fin: bool,
    },
    Dgram {
        set: usize,
        sh: SocketHandle,
    },
}

#[derive(Debug)]
pub struct Sock {
    pub proto: Proto,
    pub state: State,
    /// The address and port it is bound to (address 0: any).
    pub local: Option<(Ipv4Address, u16)>,
    /// Whether `local`'s port is held in the port table by this socket
    /// (an accepted connection's is its listener's).
    pub holds_port: bool,
    /// A connected datagram socket's peer.
    pub peer: Option<IpEndpoint>,
    pub nonblock: bool,
    pub reuse: bool,
    pub nodelay: bool,
    pub keepalive: bool,
    pub rcvbuf: usize,
    pub sndbuf: usize,
    pub port_range: (u16, u16),
    /// `SO_ERROR`: a failed non-blocking connect, a reset.
    pub error: Option<Errno>,
    pub shut_rd: bool,
    pub shut_wr: bool,
    /// Its receive ring was scribbled on: reads fail with `EIO`.
    pub ring_broken: bool,
}

impl Sock {
    pub fn new(proto: Proto) -> Sock {
        Sock {
            proto,
            state: State::Fresh,
            local: None,
            holds_port: false,
            peer: None,
            nonblock: false,
            reuse: false,
            nodelay: false,
            keepalive: false,
            rcvbuf: DEFAULT_BUFFER_BYTES,
            sndbuf: DEFAULT_BUFFER_BYTES,
            port_range: DEFAULT_EPHEMERAL,
            error: None,
            shut_rd: false,
            shut_wr: false,
            ring_broken: false,
        }
    }
}

/// An accepted connection waiting for its `open`.
pub struct Claim {
    pub set: usize,
    pub sh: SocketHandle,
    pub deadline_ns: u64,
    pub nodelay: bool,
    pub local: (Ipv4Address, u16),
}

/// A closed socket's connection, winding down.
pub struct Orphan {
    pub set: usize,
    pub sh: SocketHandle,
    /// The port it holds, if it holds one.
    pub port: Option<u16>,
    pub deadline_ns: u64,
}

#[derive(Clone, Copy, Debug)]
pub enum Op {
    Read { len: usize, from: bool },
    Write { len: usize, done: usize },
    Accept,
    Connect,
    Poll { deadline_ns: u64 },
}

pub struct Parked {
    pub reply: ReplyHandle,
    pub handle: u64,
    pub op: Op,
    /// `OP_POLL`'s entries.
    pub entries: Vec<(u64, u16)>,
}

impl Op {
    /// The request a parked call repeats.
    pub fn from_request(m: [u64; 4]) -> Option<Op> {
        match m[0] {
            io::OP_READ => Some(Op::Read { len: m[2] as usize, from: false }),
            n::OP_RECVFROM => Some(Op::Read { len: m[2] as usize, from: true }),
            n::OP_ACCEPT => Some(Op::Accept),
            n::OP_CONNECT => Some(Op::Connect),
            _ => None,
        }
    }
}
