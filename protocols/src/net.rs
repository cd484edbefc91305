//! The network (issue 13, seed 003): the TCP/IP server (`servers/net`, the
//! ported stack in its cradle) and the network card's driver
//! (`drivers/virtio-net`), and the link between them.
//!
//! - **Sockets** are descriptors whose manager is the network server. A
//!   program opens one through the monitor like a device: the device
//!   entry [`DEVICE_PATH`] (made by init from the server's [`READY`]) with
//!   the rest of the path naming the kind, `/dev/net/tcp`, `/dev/net/udp`,
//!   `/dev/net/icmp` ([`KIND_TCP`]…). The server's `device::OP_OPEN` reply
//!   carries `mode::S_IFSOCK` in word 2, so the descriptor's file type says
//!   "socket" and `runtime::unix` sends it the requests below.
//! - **Accepting** makes a second descriptor in two steps, because only
//!   the monitor hands out descriptors and the monitor never waits on a
//!   server: [`OP_ACCEPT`] on the listener waits at the server until a
//!   connection is established and answers with a one-time token, then
//!   the program opens `/dev/net/accepted/<token>` through the monitor,
//!   which the server answers at once with the connection's handle. A
//!   token not claimed within [`ACCEPT_CLAIM_NS`] is aborted.
//! - **The driver link** ([`eth`]): Ethernet frames by one-way messages,
//!   each frame the data of one `send_data` (a frame is at most
//!   [`eth::MAX_FRAME_BYTES`], under a page).
//!
//! Every request is a `call` to [`QUEUE`] with word 0 = the operation and
//! word 1 = the socket's handle; the reply's word 0 is the result (bytes or
//! 0) or a negated errno (`crate::unix::encode_result`). Data moves through
//! the call's leases: a write's bytes are the call's send buffer, a read's
//! go into its receive buffer.
//!
//! An address travels as one word, [`endpoint`]: the IPv4 address in the
//! high 32 bits of the low 48, the port in the low 16.

/// The server's request queue: calls from sockets, frames from the driver
/// and its timer's ticks all arrive here.
pub const QUEUE: u32 = 0;
/// Word 0 of the server's ready message to its starter (init): word 1 =
/// the queue. Init makes the device entry (a character device, mode 0666:
/// anyone may open a socket) at the path its `driver` line names.
pub const READY: u64 = 0x004e_4554_5244;
/// Where init makes the server's device entry (`etc/inittab`).
pub const DEVICE_PATH: &str = "/dev/net";
/// The rest of the path after [`DEVICE_PATH`] that opens each kind.
pub const KIND_TCP: &str = "tcp";
pub const KIND_UDP: &str = "udp";
/// An ICMP echo ("ping") socket: `OP_SENDTO` sends an echo request whose
/// payload is the data and whose sequence number is the endpoint's port
/// field; `OP_RECVFROM` returns an echo reply's payload, with the sender's
/// address and the reply's sequence number as the port.
pub const KIND_ICMP: &str = "icmp";
/// The prefix of an accepted connection's path: `accepted/<token>`.
pub const KIND_ACCEPTED: &str = "accepted/";
/// How long an accepted connection waits for its open.
pub const ACCEPT_CLAIM_NS: u64 = 10_000_000_000;

/// `io::OP_READ`, `io::OP_WRITE` (word 2 = bytes), `io::OP_FSTAT`,
/// `io::OP_CLOSE` (from the monitor) are served as for any descriptor; a
/// socket's read waits for data unless it is non-blocking ([`OPT_NONBLOCK`]).
///
/// Word 2 = the local [`endpoint`] (address 0: any; port 0: a free
/// ephemeral port).
pub const OP_BIND: u64 = 128;
/// Word 2 = the backlog (connections completed but not yet accepted).
pub const OP_LISTEN: u64 = 129;
/// Wait for a connection. Reply: word 0 = the token for
/// `/dev/net/accepted/<token>`, word 1 = the peer's endpoint.
pub const OP_ACCEPT: u64 = 130;
/// Word 2 = the peer's endpoint. Waits until the connection is
/// established (`EINPROGRESS` at once when non-blocking).
pub const OP_CONNECT: u64 = 131;
/// Word 2 = bytes, word 3 = the destination's endpoint (UDP, ICMP).
pub const OP_SENDTO: u64 = 132;
/// Word 2 = bytes. Reply: word 0 = bytes, word 1 = the sender's endpoint.
pub const OP_RECVFROM: u64 = 133;
/// Word 2 = [`SHUT_RD`], [`SHUT_WR`] or [`SHUT_RDWR`].
pub const OP_SHUTDOWN: u64 = 134;
/// Word 2 = 0 for the local address (`getsockname`), 1 for the peer's
/// (`getpeername`). Reply: word 1 = the endpoint.
pub const OP_NAME: u64 = 135;
/// Word 2 = an option (`OPT_*`), word 3 = its value.
pub const OP_SETOPT: u64 = 136;
/// Word 2 = an option. Reply: word 1 = its value.
pub const OP_GETOPT: u64 = 137;
/// `poll`: data = [`poll_entry`] per socket (handle, events), at most
/// [`MAX_POLL_ENTRIES`]; word 2 = timeout in ms (`u64::MAX`: none).
/// Reply: word 0 = how many are ready, data = the `revents` per entry
/// (one u16 each, little-endian). Handles not of this server are
/// `POLLNVAL`.
pub const OP_POLL: u64 = 138;
/// Statistics, to anyone (no handle). Reply words: sockets open (user
/// handles and connections the stack still winds down), bytes of socket
/// buffers allocated, frames received, frames sent; data = the socket
/// table as text, one line per socket (`netstat`).
pub const OP_STATS: u64 = 139;
/// The interfaces, to anyone (no handle). Reply data: text, as
/// `ifconfig` prints it.
pub const OP_IFCONFIG: u64 = 140;

/// The lock statistics, to anyone (no handle): word 2 = 1 to reset them
/// first (a benchmark measures from its start). Reply words: the global
/// lock's acquisitions, the nanoseconds spent spinning for it, the
/// nanoseconds it was held, the nanoseconds since the statistics were
/// reset; data = the report as text (`netstat -l`).
pub const OP_LOCKSTAT: u64 = 141;
/// Map the server's lock page ([`locks::LockPage`]) into the caller: word
/// 2 = where (page-aligned; the runtime uses [`locks::WINDOW`]). Reply:
/// word 0 = 0 or an errno, word 1 = the mode ([`locks::MODE_CLASSIC`] or
/// [`locks::MODE_SCALABLE`]). The caller then makes the server the pager
/// of that page (`set_pager`), and the server answers its fault with its
/// own page, shared.
pub const OP_MAP_LOCKS: u64 = 142;

/// `net=scalable`: a write that completes once queued (seed 003's
/// request packet). A one-way `send_data` from a socket user, not a call:
/// word 1 = the handle, word 2 = bytes, the data = the bytes (at most
/// `abi::msg::MAX_DATA_BYTES`). The caller may queue as many bytes as the
/// *credit* the answer of its last `io::OP_WRITE` call gave (its word 1);
/// with none left it makes a call. The server takes every byte, in order
/// with the socket's other requests; a connection that can no longer send
/// drops them, and the socket's next call fails (`EPIPE`, `ECONNRESET`).
pub const OP_WRITE_QUEUED: u64 = 143;

/// `net=scalable`: give the caller a receive ring for the TCP socket in
/// word 1 ([`ring`]): word 2 = the caller's mask of ring windows it has
/// mapped already (bit `i`: window `i` of [`ring::BASE`]; a `fork` child
/// inherits its parent's). Reply: word 0 = 0 or an errno (`EOPNOTSUPP`:
/// not a TCP connection or not `scalable`; `EAGAIN`: still connecting;
/// `ENOSPC`: no ring free;
/// `EBUSY`: another process's ring serves the socket), word 1 = the
/// window index. The caller makes the server the pager of
/// [`ring::BASE`]`..+`[`ring::REGION_BYTES`] and touches the window's
/// pages; the server answers with the ring's own pages, shared.
pub const OP_RING_MAP: u64 = 144;
/// A one-way `send` from a reader that took bytes from a ring the server
/// had found full ([`ring::RingHeader::wake`]): word 1 = the handle. The
/// server moves what the stack holds for the socket into the ring at its
/// next pass, so the TCP window reopens.
pub const OP_RING_DRAINED: u64 = 145;

/// `shutdown`'s `how`.
pub const SHUT_RD: u64 = 0;
pub const SHUT_WR: u64 = 1;
pub const SHUT_RDWR: u64 = 2;

/// Options: `level << 16 | name` with Linux's numbers, so the runtime's
/// `setsockopt(fd, level, name, value)` passes them through.
pub const SOL_SOCKET: u64 = 1;
pub const IPPROTO_TCP: u64 = 6;
pub const OPT_REUSEADDR: u64 = SOL_SOCKET << 16 | 2;
pub const OPT_ERROR: u64 = SOL_SOCKET << 16 | 4;
pub const OPT_SNDBUF: u64 = SOL_SOCKET << 16 | 7;
pub const OPT_RCVBUF: u64 = SOL_SOCKET << 16 | 8;
pub const OPT_KEEPALIVE: u64 = SOL_SOCKET << 16 | 9;
pub const OPT_NODELAY: u64 = IPPROTO_TCP << 16 | 1;
/// Not a socket option but the handle's `O_NONBLOCK` (`fcntl`), kept by
/// the server because it is a property of the open socket, shared by
/// every descriptor on it, as POSIX has it.
pub const OPT_NONBLOCK: u64 = 0xffff << 16 | 1;

/// Smallest and largest socket buffer `OPT_SNDBUF`/`OPT_RCVBUF` accept.
pub const MIN_BUFFER_BYTES: u64 = 1024;
pub const MAX_BUFFER_BYTES: u64 = 1024 * 1024;

/// `poll` events (Linux's values).
pub const POLLIN: u16 = 0x001;
pub const POLLOUT: u16 = 0x004;
pub const POLLERR: u16 = 0x008;
pub const POLLHUP: u16 = 0x010;
pub const POLLNVAL: u16 = 0x020;
/// Most sockets one `OP_POLL` names: 16 bytes each in one page.
pub const MAX_POLL_ENTRIES: usize = 256;
/// Bytes of one entry of `OP_POLL`'s request data.
pub const POLL_ENTRY_BYTES: usize = 16;

/// One entry of `OP_POLL`'s data: the handle, then the events.
pub fn poll_entry(handle: u64, events: u16) -> [u8; POLL_ENTRY_BYTES] {
    let mut b = [0u8; POLL_ENTRY_BYTES];
    b[..8].copy_from_slice(&handle.to_le_bytes());
    b[8..10].copy_from_slice(&events.to_le_bytes());
    b
}

/// An IPv4 address and a port as one word.
pub fn endpoint(addr: [u8; 4], port: u16) -> u64 {
    (u32::from_be_bytes(addr) as u64) << 16 | port as u64
}

/// The address and port of an [`endpoint`] word.
pub fn split_endpoint(word: u64) -> ([u8; 4], u16) {
    (((word >> 16) as u32).to_be_bytes(), word as u16)
}

pub mod locks;
pub mod ring;

/// The link between the server and the network card's driver.
///
/// - At start the driver sends its starter (init) `[READY, queue,
///   present, 0]`; init makes [`DEVICE_PATH`] (mode 0600) naming it when
///   `present` is 1 (a card was found). The server finds the driver by
///   looking that entry up at the directory manager.
/// - The server `call`s [`OP_ATTACH`] once; from then on the driver sends
///   every received frame to the server's queue and takes frames to send
///   from it, both as one-way `send_data` messages whose data is the
///   frame (no virtio header). The driver never waits on the server: a
///   frame the server's queue has no room for is dropped and counted, as
///   a card drops what its ring cannot hold.
pub mod eth {
    /// The driver's queue.
    pub const QUEUE: u32 = 0;
    pub const READY: u64 = 0x0045_5448_5244;
    pub const DEVICE_PATH: &str = "/dev/eth0";
    /// From the server: word 1 = the queue frames go to. Reply: word 0 =
    /// 0 or an errno (`EPERM`: the caller is not the process init named
    /// with [`OP_SET_CLIENT`], or none is named yet; `EBUSY`: another
    /// process is attached), word 1 = the MAC address (6 bytes,
    /// little-endian in the word), word 2 = the MTU.
    pub const OP_ATTACH: u64 = 1;
    /// One-way, from the driver's starter (init) only: word 1 = the pid
    /// of the one process that may attach (the network server; 0: none).
    /// Sent when that process is started and when the driver is started
    /// again (the inittab's `client=` word); from anyone else, ignored.
    pub const OP_SET_CLIENT: u64 = 5;
    /// Server to driver: send the message's data as one frame.
    pub const TX: u64 = 2;
    /// Driver to server: the message's data is one received frame.
    pub const RX: u64 = 3;
    /// Statistics, to anyone. Reply words: frames received, frames sent,
    /// received frames dropped (the server's queue was full), frames to
    /// send dropped (no transmit buffer).
    pub const OP_STATS: u64 = 4;
    /// An Ethernet frame without its checksum: 14-byte header + 1500.
    pub const MAX_FRAME_BYTES: usize = 1514;
    pub const MTU_BYTES: usize = 1500;

    /// A MAC address as word 1 of `OP_ATTACH`'s reply.
    pub fn mac_word(mac: [u8; 6]) -> u64 {
        let mut b = [0u8; 8];
        b[..6].copy_from_slice(&mac);
        u64::from_le_bytes(b)
    }

    pub fn mac_of(word: u64) -> [u8; 6] {
        let b = word.to_le_bytes();
        [b[0], b[1], b[2], b[3], b[4], b[5]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_round_trip() {
        let w = endpoint([10, 0, 2, 15], 8080);
        assert_eq!(split_endpoint(w), ([10, 0, 2, 15], 8080));
        assert_eq!(split_endpoint(endpoint([255, 255, 255, 255], 65535)), ([255; 4], 65535));
        assert_eq!(endpoint([0; 4], 0), 0);
    }

    #[test]
    fn macs_round_trip() {
        let mac = [0x52, 0x54, 0, 0x12, 0x34, 0x56];
        assert_eq!(eth::mac_of(eth::mac_word(mac)), mac);
    }
}
