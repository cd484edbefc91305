//! Socket requests turned into calls on the stack (seed 003: "User-level
//! I/O requests are preprocessed in the cradle and fed into the UNIX code
//! at the appropriate point").
//!
//! - A user socket ([`Sock`]) is a handle of this server. A TCP socket
//!   has no stack socket until it connects or listens (so an unused
//!   socket costs no buffers); a listener holds `backlog` stack sockets
//!   listening on its port in each interface it listens on, and moves
//!   each one that a peer connects to onto its pending list, replacing it
//!   (smoltcp's listening socket takes one connection).
//! - Data moves by the caller's leases, straight between the caller's
//!   buffer and the stack socket's ring (`send`/`recv` closures): a
//!   write's first page also arrives with the message (the kernel copies
//!   up to a page of a call's send buffer), and is used from there.
//! - Requests that cannot finish at once wait in [`Net::parked`] and are
//!   retried after every poll ([`Net::service`]); a non-blocking socket
//!   gets `EAGAIN`/`EINPROGRESS` instead.
//! - A closed socket's connection lives on as an [`Orphan`] until the
//!   stack has sent what was queued and closed it (or [`ORPHAN_LINGER_NS`]
//!   passes): `close` does not wait, as in UNIX. A close with unread
//!   received data resets the connection instead, as BSD does. A
//!   connection in TIME-WAIT is let go at once (the cradle keeps no
//!   TIME-WAIT state: a late duplicate segment meets a reset).
//!
//! Errors: `ECONNREFUSED` (a reset answers the SYN), `ETIMEDOUT` (no
//! answer within [`CONNECT_TIMEOUT_NS`], or a peer that stopped
//! acknowledging), `ECONNRESET` (a reset on an established connection),
//! `EPIPE` (writing after the connection's sending side closed),
//! `EADDRINUSE`, `EADDRNOTAVAIL`, `ENETUNREACH` (no card), `EAGAIN`.

use crate::locking::answer;
use crate::ports::{DEFAULT_EPHEMERAL, Proto};
use crate::rings::RingTake;
use crate::state::{ETH, LO, Net};
use crate::table::{Claim, Op, Orphan, Parked, Sock, State};
use abi::Error;
use abi::Pid;
use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use protocols::net::{self as n, endpoint, split_endpoint};
use protocols::unix::errno::*;
use protocols::unix::{Errno, Stat, device, encode_result, io, mode};
use runtime::msg::{self, ReplyHandle};
use smoltcp::iface::SocketHandle;
use smoltcp::socket::{icmp, tcp, udp};
use smoltcp::time::Duration;
use smoltcp::wire::{IpAddress, IpEndpoint, IpListenEndpoint, Ipv4Address};

/// Datagrams a UDP or ICMP socket holds each way, and their payload bytes.
const DGRAM_PACKETS: usize = 32;
const DGRAM_BYTES: usize = 64 * 1024;
/// Most stack sockets a listener keeps listening per interface.
const MAX_BACKLOG: usize = 16;
const CONNECT_TIMEOUT_NS: u64 = 20_000_000_000;
/// The stack aborts a connection whose peer acknowledges nothing for
/// this long while data is outstanding (a peer that vanished).
const TCP_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a closed socket's connection is kept to finish sending.
const ORPHAN_LINGER_NS: u64 = 60_000_000_000;
/// How soon a read call that found its socket's ring lock held tries
/// again (the holder is a reader on another CPU, copying).
const RING_RETRY_NS: u64 = 1_000_000;
/// Linux's `IP_LOCAL_PORT_RANGE` (level `IPPROTO_IP`): low port in the
/// low 16 bits, high in the next 16.
pub const OPT_PORT_RANGE: u64 = 51;

/// What became of a request.
enum Outcome {
    Done([u64; 4]),
    Wait,
    /// The caller has gone; nothing to answer.
    Gone,
}

fn err(e: Errno) -> Outcome {
    Outcome::Done([encode_result(Err(e)), 0, 0, 0])
}

fn ok(v: u64) -> Outcome {
    Outcome::Done([v, 0, 0, 0])
}

/// The errno for a failed lease, or `None` when the caller has gone.
fn lease_errno(e: Error) -> Option<Errno> {
    match e {
        Error::DeadPeer | Error::BadReplyHandle | Error::NoSuchCall => None,
        Error::BadAddress => Some(EFAULT),
        _ => Some(EINVAL),
    }
}

fn lease_outcome(e: Error) -> Outcome {
    match lease_errno(e) {
        Some(e) => err(e),
        None => Outcome::Gone,
    }
}

fn ip_of(addr: Ipv4Address) -> [u8; 4] {
    addr.octets()
}

fn v4(a: [u8; 4]) -> Ipv4Address {
    Ipv4Address::new(a[0], a[1], a[2], a[3])
}

fn endpoint_word(e: IpEndpoint) -> u64 {
    match e.addr {
        IpAddress::Ipv4(a) => endpoint(ip_of(a), e.port),
    }
}

fn is_loopback(a: Ipv4Address) -> bool {
    a.octets()[0] == 127
}

fn tcp_buffers(rx: usize, tx: usize) -> tcp::Socket<'static> {
    tcp::Socket::new(tcp::SocketBuffer::new(alloc::vec![0; rx]), tcp::SocketBuffer::new(alloc::vec![0; tx]))
}

impl Net {
    /// One call. Answers it, or parks it.
    pub fn request(&mut self, sender: Pid, reply: ReplyHandle, m: [u64; 4], data: &[u8]) {
        let outcome = match m[0] {
            n::OP_LOCKSTAT => return self.lockstat(reply, m[2] == 1),
            n::OP_MAP_LOCKS => return self.map_locks(reply, m[2]),
            // Only the monitor opens (for a descriptor it then closes): a
            // socket opened by anyone else has no descriptor, so nothing
            // would ever close it (found by sfuzz, seed 4: the table filled
            // and every socket() failed).
            device::OP_OPEN if self.monitor.is_some_and(|m| m != sender) => err(EPERM),
            device::OP_OPEN => self.open(sender, data),
            io::OP_CLOSE => {
                if Some(sender) != self.monitor {
                    err(EPERM)
                } else {
                    self.close(m[1])
                }
            }
            protocols::heap::OP_HEAP_STATS => {
                // Socket buffers live in the heap: its break is their cache.
                let (in_use, heap) = runtime::heap_stats();
                answer(reply, [in_use, heap, 0, 0], &[]);
                return;
            }
            n::OP_STATS => {
                // Rings of processes that are gone go first.
                self.sweep_rings();
                // The socket the question came on is not counted.
                let asking = self.socks.contains_key(&m[1]) as usize;
                let text = self.stats_text(m[1]);
                let w = [
                    (self.socket_count() - asking) as u64,
                    self.buffer_bytes,
                    self.rx_frames(),
                    self.tx_frames(),
                ];
                let len = text.len().min(abi::msg::MAX_DATA_BYTES as usize);
                answer(reply, w, &text.as_bytes()[..len]);
                return;
            }
            n::OP_IFCONFIG => {
                let text = self.ifconfig_text();
                let len = text.len().min(abi::msg::MAX_DATA_BYTES as usize);
                answer(reply, [len as u64, 0, 0, 0], &text.as_bytes()[..len]);
                return;
            }
            n::OP_POLL => self.poll_request(reply, m, data),
            _ if !self.socks.contains_key(&m[1]) => err(EBADF),
            io::OP_FSTAT => {
                let st = Stat { ino: m[1], mode: mode::S_IFSOCK | 0o777, nlink: 1, ..Stat::default() };
                answer(reply, [0; 4], &st.encode());
                return;
            }
            io::OP_SEEK => err(ESPIPE),
            io::OP_READDIR => err(ENOTDIR),
            io::OP_FOREGROUND => err(ENOTTY),
            io::OP_READ | n::OP_RECVFROM => {
                self.ring_stats.read_calls += 1;
                self.read(reply, m[1], m[2] as usize, m[0] == n::OP_RECVFROM)
            }
            n::OP_RING_MAP => {
                self.ring_map(reply, sender, m[1], m[2]);
                return;
            }
            io::OP_WRITE => {
                let outcome = self.write(reply, m[1], m[2] as usize, data, None);
                self.with_credit(m[1], outcome)
            }
            n::OP_SENDTO => self.write(reply, m[1], m[2] as usize, data, Some(m[3])),
            n::OP_BIND => self.bind(m[1], m[2]),
            n::OP_LISTEN => self.listen(m[1], m[2] as usize),
            n::OP_ACCEPT => self.accept(reply, m[1]),
            n::OP_CONNECT => self.connect(reply, m[1], m[2]),
            n::OP_SHUTDOWN => self.shutdown(m[1], m[2]),
            n::OP_NAME => self.name(m[1], m[2]),
            n::OP_SETOPT => self.setopt(m[1], m[2], m[3]),
            n::OP_GETOPT => self.getopt(m[1], m[2]),
            _ => err(ENOSYS),
        };
        self.finish(reply, m[1], outcome, Op::from_request(m));
    }

    fn finish(&mut self, reply: ReplyHandle, handle: u64, outcome: Outcome, op: Option<Op>) {
        match outcome {
            Outcome::Done(w) => answer(reply, w, &[]),
            Outcome::Gone => {}
            Outcome::Wait => match op {
                Some(op) => self.parked.push(Parked { reply, handle, op, entries: Vec::new() }),
                None => answer(reply, [encode_result(Err(EIO)), 0, 0, 0], &[]),
            },
        }
    }

    // --- opening and closing ---

    /// `device::OP_OPEN` (from the monitor, for anyone's `socket()` or
    /// the open of an accepted connection): the rest of the path says
    /// which.
    fn open(&mut self, _sender: Pid, rest: &[u8]) -> Outcome {
        let Ok(rest) = core::str::from_utf8(rest) else { return err(EINVAL) };
        let rest = rest.trim_start_matches('/');
        let sock = match rest {
            n::KIND_TCP => Sock::new(Proto::Tcp),
            n::KIND_UDP => Sock::new(Proto::Udp),
            n::KIND_ICMP => Sock::new(Proto::Icmp),
            _ => match rest.strip_prefix(n::KIND_ACCEPTED).and_then(|t| t.parse::<u64>().ok()) {
                Some(token) => match self.claims.remove(&token) {
                    Some(c) => {
                        let mut s = Sock::new(Proto::Tcp);
                        s.state = State::Conn {
                            set: c.set,
                            sh: c.sh,
                            connecting: false,
                            started_ns: self.now_ns(),
                            was_established: true,
                            peer_fin: false,
                        };
                        s.local = Some(c.local);
                        s.nodelay = c.nodelay;
                        s
                    }
                    None => return err(ENOENT),
                },
                None => return err(EPROTONOSUPPORT),
            },
        };
        let handle = self.fresh_id();
        self.socks.insert(handle, sock);
        // Word 2 tells the monitor the descriptor is a socket.
        Outcome::Done([handle, 0, mode::S_IFSOCK as u64, 0])
    }

    /// `io::OP_CLOSE` from the monitor: the last descriptor went (also
    /// when its process died).
    fn close(&mut self, handle: u64) -> Outcome {
        // Bytes its receive ring still held are unread data too.
        let unread_in_ring = self.ring_queued(handle) > 0;
        self.release_ring(handle);
        let Some(sock) = self.socks.remove(&handle) else { return err(EBADF) };
        // Requests still waiting on it (their callers have gone, or
        // share a descriptor that no longer exists) are answered.
        let mut i = 0;
        while i < self.parked.len() {
            if self.parked[i].handle == handle {
                let p = self.parked.swap_remove(i);
                answer(p.reply, [encode_result(Err(EBADF)), 0, 0, 0], &[]);
            } else {
                i += 1;
            }
        }
        let port = sock.local.map(|(_, p)| p).filter(|_| sock.holds_port);
        match sock.state {
            State::Fresh => {
                if let Some(p) = port {
                    self.ports.release(sock.proto, p);
                }
            }
            State::Dgram { set, sh } => {
                self.remove_socket(set, sh);
                if let Some(p) = port {
                    self.ports.release(sock.proto, p);
                }
            }
            State::Listening { members, pending, .. } => {
                for (set, sh) in members {
                    self.remove_socket(set, sh);
                }
                for (set, sh) in pending {
                    self.sets[set].get_mut::<tcp::Socket>(sh).abort();
                    self.orphans.push(Orphan {
                        set,
                        sh,
                        port: None,
                        deadline_ns: self.now_ns() + ORPHAN_LINGER_NS,
                    });
                }
                if let Some(p) = port {
                    self.ports.release(sock.proto, p);
                }
            }
            State::Conn { set, sh, .. } => {
                let s = self.sets[set].get_mut::<tcp::Socket>(sh);
                if s.state() == tcp::State::Closed {
                    self.remove_socket(set, sh);
                    if let Some(p) = port {
                        self.ports.release(sock.proto, p);
                    }
                } else {
                    if s.recv_queue() > 0 || unread_in_ring {
                        // Unread data: tell the peer it is lost (BSD's rule).
                        s.abort();
                    } else if self.queued.contains_key(&(set, sh)) {
                        // Bytes queued by OP_WRITE_QUEUED go first (queued.rs).
                        self.close_after.push((set, sh));
                    } else {
                        s.close();
                    }
                    if let Some(p) = port {
                        self.ports.orphan(sock.proto, p);
                    }
                    self.orphans.push(Orphan {
                        set,
                        sh,
                        port,
                        deadline_ns: self.now_ns() + ORPHAN_LINGER_NS,
                    });
                }
            }
        }
        ok(0)
    }

    /// `net=scalable`: a TCP write's answer carries the bytes its caller
    /// may queue next with `OP_WRITE_QUEUED` (queued.rs).
    fn with_credit(&self, handle: u64, outcome: Outcome) -> Outcome {
        match outcome {
            Outcome::Done(mut w) if protocols::unix::result(w[0]).is_ok() => {
                w[1] = self.write_credit(handle);
                Outcome::Done(w)
            }
            other => other,
        }
    }

    fn remove_socket(&mut self, set: usize, sh: SocketHandle) {
        self.forget_queued(set, sh);
        let freed = match self.sets[set].remove(sh) {
            smoltcp::socket::Socket::Tcp(s) => s.recv_capacity() + s.send_capacity(),
            smoltcp::socket::Socket::Udp(s) => s.payload_recv_capacity() + s.payload_send_capacity(),
            smoltcp::socket::Socket::Icmp(s) => s.payload_recv_capacity() + s.payload_send_capacity(),
            _ => 0,
        };
        self.buffer_bytes = self.buffer_bytes.saturating_sub(freed as u64);
    }

    fn add_tcp(&mut self, set: usize, rx: usize, tx: usize, nodelay: bool, keepalive: bool) -> SocketHandle {
        let mut s = tcp_buffers(rx, tx);
        s.set_congestion_control(tcp::CongestionControl::Reno);
        s.set_nagle_enabled(!nodelay);
        s.set_timeout(Some(TCP_TIMEOUT));
        if keepalive {
            s.set_keep_alive(Some(Duration::from_secs(10)));
        }
        self.buffer_bytes += (rx + tx) as u64;
        self.sets[set].add(s)
    }

    fn add_dgram(&mut self, set: usize, proto: Proto) -> SocketHandle {
        self.buffer_bytes += 2 * DGRAM_BYTES as u64;
        match proto {
            Proto::Icmp => {
                let buf = || {
                    icmp::PacketBuffer::new(
                        alloc::vec![icmp::PacketMetadata::EMPTY; DGRAM_PACKETS],
                        alloc::vec![0; DGRAM_BYTES],
                    )
                };
                self.sets[set].add(icmp::Socket::new(buf(), buf()))
            }
            _ => {
                let buf = || {
                    udp::PacketBuffer::new(
                        alloc::vec![udp::PacketMetadata::EMPTY; DGRAM_PACKETS],
                        alloc::vec![0; DGRAM_BYTES],
                    )
                };
                self.sets[set].add(udp::Socket::new(buf(), buf()))
            }
        }
    }

    // --- addresses ---

    /// The sets a socket bound to `addr` lives in.
    fn sets_for_local(&self, addr: Ipv4Address) -> Vec<usize> {
        if addr.is_unspecified() {
            if self.has_card() { alloc::vec![LO, ETH] } else { alloc::vec![LO] }
        } else if is_loopback(addr) {
            alloc::vec![LO]
        } else {
            alloc::vec![ETH]
        }
    }

    /// The set that reaches `dest`.
    fn set_for_dest(&self, dest: Ipv4Address) -> Result<usize, Errno> {
        if is_loopback(dest) || Some(dest) == self.eth_addr() && !self.has_card() {
            Ok(LO)
        } else if self.has_card() {
            Ok(ETH)
        } else {
            Err(ENETUNREACH)
        }
    }

    fn bind(&mut self, handle: u64, word: u64) -> Outcome {
        let (a, port) = split_endpoint(word);
        let addr = v4(a);
        let reachable = addr.is_unspecified() || is_loopback(addr) || Some(addr) == self.eth_addr();
        let sock = self.socks.get(&handle).expect("checked");
        if sock.local.is_some() || !matches!(sock.state, State::Fresh) {
            return err(EINVAL);
        }
        if !reachable {
            return err(EADDRNOTAVAIL);
        }
        let (proto, reuse, range) = (sock.proto, sock.reuse, sock.port_range);
        let port = if port == 0 {
            match self.ports.ephemeral(proto, range) {
                Some(p) => p,
                None => return err(EADDRINUSE),
            }
        } else {
            if let Err(e) = self.ports.hold(proto, port, reuse) {
                return err(e);
            }
            port
        };
        let sock = self.socks.get_mut(&handle).expect("checked");
        sock.local = Some((addr, port));
        sock.holds_port = true;
        // A datagram socket receives from its bind on: its stack socket
        // is made now, in the set its address belongs to (the card's for
        // the any-address when there is a card).
        if proto != Proto::Tcp
            && let Err(e) = self.dgram(handle, None)
        {
            return err(e);
        }
        ok(0)
    }

    /// Bind to an ephemeral port if not bound yet.
    fn autobind(&mut self, handle: u64) -> Result<(Ipv4Address, u16), Errno> {
        let sock = self.socks.get(&handle).expect("checked");
        if let Some(l) = sock.local {
            return Ok(l);
        }
        let port = self.ports.ephemeral(sock.proto, sock.port_range).ok_or(EADDRNOTAVAIL)?;
        let sock = self.socks.get_mut(&handle).expect("checked");
        sock.local = Some((Ipv4Address::UNSPECIFIED, port));
        sock.holds_port = true;
        Ok((Ipv4Address::UNSPECIFIED, port))
    }

    fn listen(&mut self, handle: u64, backlog: usize) -> Outcome {
        let sock = self.socks.get(&handle).expect("checked");
        if sock.proto != Proto::Tcp {
            return err(EOPNOTSUPP);
        }
        match sock.state {
            State::Fresh => {}
            State::Listening { .. } => return ok(0),
            _ => return err(EINVAL),
        }
        let (addr, port) = match self.autobind(handle) {
            Ok(l) => l,
            Err(e) => return err(e),
        };
        let backlog = backlog.clamp(1, MAX_BACKLOG);
        let sock = self.socks.get(&handle).expect("checked");
        let (rx, tx, nodelay, keepalive) = (sock.rcvbuf, sock.sndbuf, sock.nodelay, sock.keepalive);
        let mut members = Vec::new();
        for set in self.sets_for_local(addr) {
            for _ in 0..backlog {
                match self.new_listener(set, addr, port, rx, tx, nodelay, keepalive) {
                    Some(sh) => members.push((set, sh)),
                    None => {
                        for (set, sh) in members {
                            self.remove_socket(set, sh);
                        }
                        return err(EADDRINUSE);
                    }
                }
            }
        }
        let sock = self.socks.get_mut(&handle).expect("checked");
        sock.state = State::Listening { backlog, members, pending: VecDeque::new() };
        ok(0)
    }

    #[allow(clippy::too_many_arguments)]
    fn new_listener(
        &mut self,
        set: usize,
        addr: Ipv4Address,
        port: u16,
        rx: usize,
        tx: usize,
        nodelay: bool,
        keepalive: bool,
    ) -> Option<SocketHandle> {
        let sh = self.add_tcp(set, rx, tx, nodelay, keepalive);
        let at = if addr.is_unspecified() { None } else { Some(IpAddress::Ipv4(addr)) };
        match self.sets[set].get_mut::<tcp::Socket>(sh).listen(IpListenEndpoint { addr: at, port }) {
            Ok(()) => Some(sh),
            Err(_) => {
                self.remove_socket(set, sh);
                None
            }
        }
    }

    fn accept(&mut self, _reply: ReplyHandle, handle: u64) -> Outcome {
        let now = self.now_ns();
        let Some(sock) = self.socks.get_mut(&handle) else { return err(EBADF) };
        let nodelay = sock.nodelay;
        let local = sock.local.unwrap_or((Ipv4Address::UNSPECIFIED, 0));
        let nonblock = sock.nonblock;
        let State::Listening { pending, .. } = &mut sock.state else { return err(EINVAL) };
        // The oldest connection that is established (or already closing
        // with data to read); ones still in the handshake wait.
        let ready = pending.iter().position(|&(set, sh)| {
            let s = self.sets[set].get::<tcp::Socket>(sh);
            matches!(s.state(), tcp::State::Established | tcp::State::CloseWait)
        });
        let Some(i) = ready else {
            return if nonblock { err(EAGAIN) } else { Outcome::Wait };
        };
        let (set, sh) = pending.remove(i).expect("found");
        let peer = self.sets[set].get::<tcp::Socket>(sh).remote_endpoint().map_or(0, endpoint_word);
        let actual_local = self.sets[set]
            .get::<tcp::Socket>(sh)
            .local_endpoint()
            .map(|e| match e.addr {
                IpAddress::Ipv4(a) => (a, e.port),
            })
            .unwrap_or(local);
        let token = self.fresh_id();
        self.claims.insert(
            token,
            Claim { set, sh, deadline_ns: now + n::ACCEPT_CLAIM_NS, nodelay, local: actual_local },
        );
        Outcome::Done([token, peer, 0, 0])
    }

    fn connect(&mut self, _reply: ReplyHandle, handle: u64, word: u64) -> Outcome {
        let (a, port) = split_endpoint(word);
        let dest = v4(a);
        let sock = self.socks.get_mut(&handle).expect("checked");
        if sock.proto != Proto::Tcp {
            // A datagram socket's connect names its default peer.
            sock.peer = Some(IpEndpoint::new(IpAddress::Ipv4(dest), port));
            return ok(0);
        }
        match &sock.state {
            State::Fresh => {}
            State::Conn { connecting: true, .. } => return err(EALREADY),
            State::Conn { .. } => return err(EISCONN),
            _ => return err(EINVAL),
        }
        if port == 0 || dest.is_unspecified() {
            return err(ECONNREFUSED);
        }
        let set = match self.set_for_dest(dest) {
            Ok(s) => s,
            Err(e) => return err(e),
        };
        let (local_addr, local_port) = match self.autobind(handle) {
            Ok(l) => l,
            Err(e) => return err(e),
        };
        let sock = self.socks.get(&handle).expect("checked");
        let (rx, tx, nodelay, keepalive) = (sock.rcvbuf, sock.sndbuf, sock.nodelay, sock.keepalive);
        let sh = self.add_tcp(set, rx, tx, nodelay, keepalive);
        let local = IpListenEndpoint {
            addr: (!local_addr.is_unspecified()).then_some(IpAddress::Ipv4(local_addr)),
            port: local_port,
        };
        let remote = IpEndpoint::new(IpAddress::Ipv4(dest), port);
        let cx = self.ifaces[set].context();
        if self.sets[set].get_mut::<tcp::Socket>(sh).connect(cx, remote, local).is_err() {
            self.remove_socket(set, sh);
            return err(EADDRNOTAVAIL);
        }
        let now = self.now_ns();
        let sock = self.socks.get_mut(&handle).expect("checked");
        sock.state = State::Conn {
            set,
            sh,
            connecting: true,
            started_ns: now,
            was_established: false,
            peer_fin: false,
        };
        if sock.nonblock { err(EINPROGRESS) } else { Outcome::Wait }
    }

    fn shutdown(&mut self, handle: u64, how: u64) -> Outcome {
        if how > n::SHUT_RDWR {
            return err(EINVAL);
        }
        let sock = self.socks.get_mut(&handle).expect("checked");
        let State::Conn { set, sh, .. } = sock.state else {
            return if matches!(sock.state, State::Dgram { .. }) { ok(0) } else { err(ENOTCONN) };
        };
        if how != n::SHUT_WR {
            sock.shut_rd = true;
            // The ring's bytes are not to be read any more (rings.rs).
            self.close_ring(handle);
        }
        let sock = self.socks.get_mut(&handle).expect("checked");
        if how != n::SHUT_RD {
            sock.shut_wr = true;
            if self.queued.contains_key(&(set, sh)) {
                // Bytes queued by OP_WRITE_QUEUED go first (queued.rs).
                self.close_after.push((set, sh));
            } else {
                self.sets[set].get_mut::<tcp::Socket>(sh).close();
            }
        }
        ok(0)
    }

    fn name(&mut self, handle: u64, which: u64) -> Outcome {
        let sock = self.socks.get(&handle).expect("checked");
        let word = match (which, &sock.state) {
            (0, State::Conn { set, sh, .. }) => {
                self.sets[*set].get::<tcp::Socket>(*sh).local_endpoint().map_or(0, endpoint_word)
            }
            (0, _) => sock.local.map_or(0, |(a, p)| endpoint(ip_of(a), p)),
            (1, State::Conn { set, sh, .. }) => {
                match self.sets[*set].get::<tcp::Socket>(*sh).remote_endpoint() {
                    Some(e) => endpoint_word(e),
                    None => return err(ENOTCONN),
                }
            }
            (1, _) => match sock.peer {
                Some(e) => endpoint_word(e),
                None => return err(ENOTCONN),
            },
            _ => return err(EINVAL),
        };
        Outcome::Done([0, word, 0, 0])
    }

    fn setopt(&mut self, handle: u64, option: u64, value: u64) -> Outcome {
        let sock = self.socks.get_mut(&handle).expect("checked");
        let on = value != 0;
        let clamp = |v: u64| v.clamp(n::MIN_BUFFER_BYTES, n::MAX_BUFFER_BYTES) as usize;
        match option {
            n::OPT_REUSEADDR => sock.reuse = on,
            n::OPT_NONBLOCK => sock.nonblock = on,
            n::OPT_SNDBUF => sock.sndbuf = clamp(value),
            n::OPT_RCVBUF => sock.rcvbuf = clamp(value),
            n::OPT_NODELAY => sock.nodelay = on,
            n::OPT_KEEPALIVE => sock.keepalive = on,
            OPT_PORT_RANGE => {
                let (lo, hi) = (value as u16, (value >> 16) as u16);
                sock.port_range = if lo == 0 && hi == 0 {
                    DEFAULT_EPHEMERAL
                } else if lo == 0 || hi < lo {
                    return err(EINVAL);
                } else {
                    (lo, hi)
                };
            }
            _ => return err(ENOPROTOOPT),
        }
        // Options of a live connection apply at once.
        if let State::Conn { set, sh, .. } = sock.state {
            let (nodelay, keepalive) = (sock.nodelay, sock.keepalive);
            let s = self.sets[set].get_mut::<tcp::Socket>(sh);
            s.set_nagle_enabled(!nodelay);
            s.set_keep_alive(keepalive.then(|| Duration::from_secs(10)));
        }
        ok(0)
    }

    fn getopt(&mut self, handle: u64, option: u64) -> Outcome {
        let sock = self.socks.get_mut(&handle).expect("checked");
        let value = match option {
            n::OPT_REUSEADDR => sock.reuse as u64,
            n::OPT_NONBLOCK => sock.nonblock as u64,
            n::OPT_SNDBUF => sock.sndbuf as u64,
            n::OPT_RCVBUF => sock.rcvbuf as u64,
            n::OPT_NODELAY => sock.nodelay as u64,
            n::OPT_KEEPALIVE => sock.keepalive as u64,
            n::OPT_ERROR => sock.error.take().map_or(0, |e| e.0),
            OPT_PORT_RANGE => sock.port_range.0 as u64 | (sock.port_range.1 as u64) << 16,
            _ => return err(ENOPROTOOPT),
        };
        Outcome::Done([0, value, 0, 0])
    }

    // --- data ---

    /// The datagram socket of `handle`, made on first use in the set that
    /// reaches `toward` (its bound address decides when it has one).
    fn dgram(&mut self, handle: u64, toward: Option<Ipv4Address>) -> Result<(usize, SocketHandle), Errno> {
        let sock = self.socks.get(&handle).expect("checked");
        if let State::Dgram { set, sh } = sock.state {
            return Ok((set, sh));
        }
        let proto = sock.proto;
        let bound = sock.local;
        let set = match (bound, toward) {
            (Some((a, _)), _) if !a.is_unspecified() => self.sets_for_local(a)[0],
            (_, Some(dest)) => self.set_for_dest(dest)?,
            _ if self.has_card() => ETH,
            _ => LO,
        };
        let (_, port) = self.autobind(handle)?;
        let sh = self.add_dgram(set, proto);
        let bound_ok = match proto {
            Proto::Icmp => {
                self.sets[set].get_mut::<icmp::Socket>(sh).bind(icmp::Endpoint::Ident(port)).is_ok()
            }
            _ => {
                let addr = bound.map(|(a, _)| a).filter(|a| !a.is_unspecified()).map(IpAddress::Ipv4);
                self.sets[set].get_mut::<udp::Socket>(sh).bind(IpListenEndpoint { addr, port }).is_ok()
            }
        };
        if !bound_ok {
            self.remove_socket(set, sh);
            return Err(EADDRINUSE);
        }
        self.socks.get_mut(&handle).expect("checked").state = State::Dgram { set, sh };
        Ok((set, sh))
    }

    fn read(&mut self, reply: ReplyHandle, handle: u64, len: usize, from: bool) -> Outcome {
        let len = len.min(abi::lease::MAX_LEASE_BYTES as usize);
        let Some(sock) = self.socks.get_mut(&handle) else { return err(EBADF) };
        let nonblock = sock.nonblock;
        if let State::Conn { set, sh, .. } = sock.state
            && !sock.shut_rd
            && len > 0
        {
            if sock.ring_broken {
                return err(EIO);
            }
            // What the socket's receive ring holds comes before what the
            // stack holds (rings.rs): the stream stays in order.
            let sink = |at: usize, bytes: &[u8]| msg::lease_write(reply, at as u64, bytes, 0).is_ok();
            match self.take_from_ring(handle, len, sink) {
                RingTake::Bytes(0) => {}
                RingTake::Bytes(k) => {
                    let peer =
                        self.sets[set].get::<tcp::Socket>(sh).remote_endpoint().map_or(0, endpoint_word);
                    return Outcome::Done([k as u64, if from { peer } else { 0 }, 0, 0]);
                }
                RingTake::Busy if nonblock => return err(EAGAIN),
                RingTake::Busy => {
                    self.ring_retry_ns = Some(self.now_ns() + RING_RETRY_NS);
                    return Outcome::Wait;
                }
                RingTake::Broken => return err(EIO),
            }
        }
        let Some(sock) = self.socks.get_mut(&handle) else { return err(EBADF) };
        match sock.state {
            State::Conn { set, sh, was_established, peer_fin, .. } => {
                if sock.shut_rd || len == 0 {
                    return ok(0);
                }
                let s = self.sets[set].get_mut::<tcp::Socket>(sh);
                if s.can_recv() {
                    let mut done = 0;
                    // Twice at most: the ring may wrap.
                    for _ in 0..2 {
                        if done == len {
                            break;
                        }
                        let r = s.recv(|buf| {
                            let n = buf.len().min(len - done);
                            match msg::lease_write(reply, done as u64, &buf[..n], 0) {
                                Ok(w) => (w, Ok(w)),
                                Err(e) => (0, Err(e)),
                            }
                        });
                        match r {
                            Ok(Ok(0)) | Err(_) => break,
                            Ok(Ok(w)) => done += w,
                            Ok(Err(e)) if done == 0 => return lease_outcome(e),
                            Ok(Err(_)) => break,
                        }
                    }
                    let peer = s.remote_endpoint().map_or(0, endpoint_word);
                    return Outcome::Done([done as u64, if from { peer } else { 0 }, 0, 0]);
                }
                if !s.may_recv() {
                    // End of the stream: a FIN, or a reset.
                    let reset = s.state() == tcp::State::Closed && was_established && !peer_fin;
                    if reset {
                        return err(ECONNRESET);
                    }
                    return match sock.error.take() {
                        Some(e) => err(e),
                        None if !was_established && s.state() == tcp::State::Closed => err(ENOTCONN),
                        None => ok(0),
                    };
                }
                if nonblock { err(EAGAIN) } else { Outcome::Wait }
            }
            State::Fresh | State::Dgram { .. } if sock.proto != Proto::Tcp => {
                let (set, sh) = match self.dgram(handle, None) {
                    Ok(x) => x,
                    Err(e) => return err(e),
                };
                let proto = self.socks[&handle].proto;
                self.read_dgram(reply, set, sh, proto, len, nonblock)
            }
            State::Listening { .. } => err(EINVAL),
            _ => err(ENOTCONN),
        }
    }

    fn read_dgram(
        &mut self,
        reply: ReplyHandle,
        set: usize,
        sh: SocketHandle,
        proto: Proto,
        len: usize,
        nonblock: bool,
    ) -> Outcome {
        let (payload, from): (Vec<u8>, u64) = match proto {
            Proto::Icmp => {
                let s = self.sets[set].get_mut::<icmp::Socket>(sh);
                let Ok((bytes, addr)) = s.recv() else {
                    return if nonblock { err(EAGAIN) } else { Outcome::Wait };
                };
                let IpAddress::Ipv4(addr) = addr;
                match parse_echo_reply(bytes) {
                    Some((seq, data)) => (data.to_vec(), endpoint(ip_of(addr), seq)),
                    // Not an echo reply: read past it.
                    None => return Outcome::Wait,
                }
            }
            _ => {
                let s = self.sets[set].get_mut::<udp::Socket>(sh);
                let Ok((bytes, meta)) = s.recv() else {
                    return if nonblock { err(EAGAIN) } else { Outcome::Wait };
                };
                (bytes.to_vec(), endpoint_word(meta.endpoint))
            }
        };
        let n = payload.len().min(len);
        match msg::lease_write(reply, 0, &payload[..n], 0) {
            Ok(_) => Outcome::Done([n as u64, from, 0, 0]),
            Err(e) => lease_outcome(e),
        }
    }

    /// `write`/`send` (no destination) or `sendto` (`to` = an endpoint).
    /// `inline` is the part of the caller's buffer that came with the
    /// message; the rest is read through the lease.
    fn write(
        &mut self,
        reply: ReplyHandle,
        handle: u64,
        len: usize,
        inline: &[u8],
        to: Option<u64>,
    ) -> Outcome {
        let len = if len == 0 { inline.len() } else { len.min(abi::lease::MAX_LEASE_BYTES as usize) };
        let sock = self.socks.get(&handle).expect("checked");
        if sock.proto == Proto::Tcp {
            let (outcome, done) = self.write_tcp(reply, handle, len, 0, inline);
            if let Outcome::Wait = outcome {
                // The rest comes through the lease.
                self.parked.push(Parked { reply, handle, op: Op::Write { len, done }, entries: Vec::new() });
                return Outcome::Gone;
            }
            return outcome;
        }
        let dest = match to.map(|w| {
            let (a, p) = split_endpoint(w);
            IpEndpoint::new(IpAddress::Ipv4(v4(a)), p)
        }) {
            Some(d) => d,
            None => match sock.peer {
                Some(p) => p,
                None => return err(EDESTADDRREQ),
            },
        };
        let proto = sock.proto;
        let nonblock = sock.nonblock;
        let IpAddress::Ipv4(dest_addr) = dest.addr;
        let (set, sh) = match self.dgram(handle, Some(dest_addr)) {
            Ok(x) => x,
            Err(e) => return err(e),
        };
        if len > abi::msg::MAX_DATA_BYTES as usize * 16 {
            return err(EMSGSIZE);
        }
        let mut payload = alloc::vec![0u8; len];
        let have = inline.len().min(len);
        payload[..have].copy_from_slice(&inline[..have]);
        if have < len
            && let Err(e) = msg::lease_read(reply, have as u64, &mut payload[have..], 0)
        {
            return lease_outcome(e);
        }
        let sent = match proto {
            Proto::Icmp => {
                let s = self.sets[set].get_mut::<icmp::Socket>(sh);
                let ident = match self.socks[&handle].local {
                    Some((_, p)) => p,
                    None => 0,
                };
                send_echo(s, dest.addr, ident, dest.port, &payload)
            }
            _ => {
                let s = self.sets[set].get_mut::<udp::Socket>(sh);
                s.send_slice(&payload, dest).map_err(|e| match e {
                    udp::SendError::BufferFull => EAGAIN,
                    udp::SendError::Unaddressable => EDESTADDRREQ,
                })
            }
        };
        match sent {
            Ok(()) => ok(len as u64),
            Err(EAGAIN) if !nonblock => err(ENOBUFS),
            Err(e) => err(e),
        }
    }

    /// Copy what fits of the caller's bytes from `done` on into the
    /// connection's send ring; the outcome and the bytes taken so far
    /// (`Wait`: park with that progress).
    fn write_tcp(
        &mut self,
        reply: ReplyHandle,
        handle: u64,
        len: usize,
        done: usize,
        inline: &[u8],
    ) -> (Outcome, usize) {
        let Some(sock) = self.socks.get_mut(&handle) else { return (err(EBADF), done) };
        let nonblock = sock.nonblock;
        let State::Conn { set, sh, connecting, was_established, .. } = sock.state else {
            let e = if matches!(sock.state, State::Listening { .. }) { EINVAL } else { ENOTCONN };
            return (err(e), done);
        };
        if sock.shut_wr {
            return (if done > 0 { ok(done as u64) } else { err(EPIPE) }, done);
        }
        if connecting || self.queued.contains_key(&(set, sh)) {
            // Connecting; or bytes queued by OP_WRITE_QUEUED go first.
            if nonblock && done > 0 {
                return (ok(done as u64), done);
            }
            return (if nonblock { err(EAGAIN) } else { Outcome::Wait }, done);
        }
        let s = self.sets[set].get_mut::<tcp::Socket>(sh);
        if !s.may_send() {
            if done > 0 {
                return (ok(done as u64), done);
            }
            let reset = s.state() == tcp::State::Closed && was_established;
            // The reset is reported once; later writes get EPIPE (and so
            // SIGPIPE from the runtime's `write`), as on Linux: the
            // sending side is gone for good.
            sock.shut_wr = true;
            return (err(if reset { ECONNRESET } else { EPIPE }), done);
        }
        let mut done = done;
        for _ in 0..2 {
            if done == len || !s.can_send() {
                break;
            }
            let r = s.send(|buf| {
                let n = buf.len().min(len - done);
                if done < inline.len() {
                    let n = n.min(inline.len() - done);
                    buf[..n].copy_from_slice(&inline[done..done + n]);
                    return (n, Ok(n));
                }
                match msg::lease_read(reply, done as u64, &mut buf[..n], 0) {
                    Ok(got) => (got, Ok(got)),
                    Err(e) => (0, Err(e)),
                }
            });
            match r {
                Ok(Ok(0)) | Err(_) => break,
                Ok(Ok(n)) => done += n,
                Ok(Err(e)) if done == 0 => return (lease_outcome(e), done),
                Ok(Err(_)) => return (ok(done as u64), done),
            }
        }
        if done == len || (nonblock && done > 0) {
            return (ok(done as u64), done);
        }
        (if nonblock { err(EAGAIN) } else { Outcome::Wait }, done)
    }

    // --- poll ---

    fn poll_request(&mut self, reply: ReplyHandle, m: [u64; 4], data: &[u8]) -> Outcome {
        let count = data.len() / n::POLL_ENTRY_BYTES;
        if count > n::MAX_POLL_ENTRIES {
            return err(EINVAL);
        }
        let entries: Vec<(u64, u16)> = data
            .chunks_exact(n::POLL_ENTRY_BYTES)
            .map(|e| {
                let h = u64::from_le_bytes(e[..8].try_into().unwrap_or([0; 8]));
                (h, u16::from_le_bytes([e[8], e[9]]))
            })
            .collect();
        let deadline_ns =
            if m[2] == u64::MAX { u64::MAX } else { self.now_ns().saturating_add(m[2] * 1_000_000) };
        let p = Parked { reply, handle: 0, op: Op::Poll { deadline_ns }, entries };
        if !self.try_poll(&p, false) {
            self.parked.push(p);
        }
        Outcome::Gone
    }

    /// Answer a poll if any entry is ready (or `expired`); whether it was.
    fn try_poll(&mut self, p: &Parked, expired: bool) -> bool {
        let revents: Vec<u16> = p.entries.iter().map(|&(h, ev)| self.readiness(h) & (ev | 0x38)).collect();
        let ready = revents.iter().filter(|r| **r != 0).count();
        if ready == 0 && !expired {
            return false;
        }
        let mut out = Vec::with_capacity(revents.len() * 2);
        for r in revents {
            out.extend_from_slice(&r.to_le_bytes());
        }
        answer(p.reply, [ready as u64, 0, 0, 0], &out);
        true
    }

    /// The `poll` events of a socket now.
    fn readiness(&self, handle: u64) -> u16 {
        let Some(sock) = self.socks.get(&handle) else { return n::POLLNVAL };
        let err_bit = if sock.error.is_some() { n::POLLERR } else { 0 };
        match &sock.state {
            State::Fresh if sock.proto == Proto::Tcp => n::POLLOUT | n::POLLHUP,
            State::Fresh => n::POLLOUT,
            State::Listening { pending, .. } => {
                let any = pending.iter().any(|&(set, sh)| {
                    matches!(
                        self.sets[set].get::<tcp::Socket>(sh).state(),
                        tcp::State::Established | tcp::State::CloseWait
                    )
                });
                if any { n::POLLIN } else { 0 }
            }
            State::Conn { set, sh, connecting, .. } => {
                let s = self.sets[*set].get::<tcp::Socket>(*sh);
                let mut r = err_bit;
                if *connecting {
                    return r;
                }
                if s.can_recv() || !s.may_recv() || sock.shut_rd || self.ring_holds(handle) {
                    r |= n::POLLIN;
                }
                if s.can_send() || !s.may_send() {
                    r |= n::POLLOUT;
                }
                if !s.may_recv() && !s.may_send() {
                    r |= n::POLLHUP;
                }
                r
            }
            State::Dgram { set, sh } => {
                let (can_recv, can_send) = match sock.proto {
                    Proto::Icmp => {
                        let s = self.sets[*set].get::<icmp::Socket>(*sh);
                        (s.can_recv(), s.can_send())
                    }
                    _ => {
                        let s = self.sets[*set].get::<udp::Socket>(*sh);
                        (s.can_recv(), s.can_send())
                    }
                };
                err_bit | if can_recv { n::POLLIN } else { 0 } | if can_send { n::POLLOUT } else { 0 }
            }
        }
    }

    // --- after every poll ---

    /// Move connections off listeners, note connects that ended, finish
    /// waiting requests, let orphans and unclaimed connections go.
    /// Whether anything was done that the stack must see.
    pub fn service(&mut self) -> bool {
        let now = self.now_ns();
        // A parked read that still finds a ring's lock held sets it again.
        self.ring_retry_ns = None;
        self.tend_listeners();
        self.tend_connections(now);
        let mut progressed = false;
        let parked = core::mem::take(&mut self.parked);
        for p in parked {
            let outcome = match p.op {
                Op::Poll { deadline_ns, .. } => {
                    if !self.try_poll(&p, now >= deadline_ns) {
                        self.parked.push(p);
                    }
                    continue;
                }
                Op::Read { len, from } => self.read(p.reply, p.handle, len, from),
                Op::Write { len, done } => {
                    let (o, now_done) = self.write_tcp(p.reply, p.handle, len, done, &[]);
                    if now_done > done {
                        progressed = true;
                    }
                    if let Outcome::Wait = o {
                        self.parked.push(Parked { op: Op::Write { len, done: now_done }, ..p });
                        continue;
                    }
                    o
                }
                Op::Accept => self.accept(p.reply, p.handle),
                Op::Connect => self.connect_done(p.handle),
            };
            match outcome {
                Outcome::Done(w) => {
                    progressed = true;
                    answer(p.reply, w, &[]);
                }
                Outcome::Gone => {}
                Outcome::Wait => self.parked.push(p),
            }
        }
        self.tend_orphans(now);
        let expired: Vec<u64> =
            self.claims.iter().filter(|(_, c)| now >= c.deadline_ns).map(|(t, _)| *t).collect();
        for t in expired {
            if let Some(c) = self.claims.remove(&t) {
                self.sets[c.set].get_mut::<tcp::Socket>(c.sh).abort();
                self.orphans.push(Orphan {
                    set: c.set,
                    sh: c.sh,
                    port: None,
                    deadline_ns: now + ORPHAN_LINGER_NS,
                });
                progressed = true;
            }
        }
        progressed
    }

    fn connect_done(&mut self, handle: u64) -> Outcome {
        let Some(sock) = self.socks.get_mut(&handle) else { return err(EBADF) };
        match sock.state {
            State::Conn { connecting: true, .. } => Outcome::Wait,
            State::Conn { .. } => match sock.error.take() {
                Some(e) => err(e),
                None => ok(0),
            },
            _ => err(EBADF),
        }
    }

    fn tend_listeners(&mut self) {
        let mut dropped: Vec<(usize, SocketHandle)> = Vec::new();
        let mut listeners: Vec<u64> = Vec::new();
        for (&h, sock) in self.socks.iter_mut() {
            let State::Listening { members, pending, .. } = &mut sock.state else { continue };
            listeners.push(h);
            let mut i = 0;
            while i < members.len() {
                let (set, sh) = members[i];
                let s = self.sets[set].get::<tcp::Socket>(sh);
                if s.state() != tcp::State::Listen {
                    members.swap_remove(i);
                    pending.push_back((set, sh));
                } else {
                    i += 1;
                }
            }
            // Connections reset during the handshake (or whose handshake
            // timed out: a SYN flood's half-open connections, after
            // `TCP_TIMEOUT`) are dropped.
            let sets = &self.sets;
            pending.retain(|&(set, sh)| {
                let closed = sets[set].get::<tcp::Socket>(sh).state() == tcp::State::Closed;
                if closed {
                    dropped.push((set, sh));
                }
                !closed
            });
        }
        for (set, sh) in dropped {
            self.remove_socket(set, sh);
        }
        // Top every listener up to `backlog` LISTEN sockets per interface
        // while its queue of connections has room. Not only when a member
        // leaves LISTEN: after a SYN flood filled the queue with half-open
        // connections, the members must come back once those time out,
        // or the port answers every later SYN with a reset for ever (the
        // wire test's SYN flood found this).
        for h in listeners {
            let sock = &self.socks[&h];
            let State::Listening { members, pending, backlog } = &sock.state else { continue };
            if pending.len() > *backlog {
                continue;
            }
            let (addr, port) = sock.local.unwrap_or((Ipv4Address::UNSPECIFIED, 0));
            let (rx, tx, nodelay, keepalive) = (sock.rcvbuf, sock.sndbuf, sock.nodelay, sock.keepalive);
            let backlog = *backlog;
            let missing: Vec<(usize, usize)> = self
                .sets_for_local(addr)
                .into_iter()
                .map(|set| (set, backlog.saturating_sub(members.iter().filter(|m| m.0 == set).count())))
                .collect();
            for (set, count) in missing {
                for _ in 0..count {
                    let Some(sh) = self.new_listener(set, addr, port, rx, tx, nodelay, keepalive) else {
                        break;
                    };
                    if let Some(State::Listening { members, .. }) =
                        self.socks.get_mut(&h).map(|s| &mut s.state)
                    {
                        members.push((set, sh));
                    }
                }
            }
        }
    }

    fn tend_connections(&mut self, now: u64) {
        for sock in self.socks.values_mut() {
            let State::Conn { set, sh, connecting, started_ns, was_established, peer_fin } = &mut sock.state
            else {
                continue;
            };
            let s = self.sets[*set].get::<tcp::Socket>(*sh);
            match s.state() {
                tcp::State::Established => *was_established = true,
                tcp::State::CloseWait | tcp::State::LastAck | tcp::State::Closing | tcp::State::TimeWait => {
                    *was_established = true;
                    *peer_fin = true;
                }
                _ => {}
            }
            if *connecting {
                match s.state() {
                    tcp::State::SynSent | tcp::State::SynReceived => {
                        if now.saturating_sub(*started_ns) >= CONNECT_TIMEOUT_NS {
                            self.sets[*set].get_mut::<tcp::Socket>(*sh).abort();
                            sock.error = Some(ETIMEDOUT);
                            *connecting = false;
                        }
                    }
                    tcp::State::Closed => {
                        sock.error = Some(ECONNREFUSED);
                        *connecting = false;
                    }
                    _ => *connecting = false,
                }
            }
        }
    }

    fn tend_orphans(&mut self, now: u64) {
        let mut i = 0;
        while i < self.orphans.len() {
            let o = &self.orphans[i];
            let s = self.sets[o.set].get_mut::<tcp::Socket>(o.sh);
            if s.recv_queue() > 0 && s.state() != tcp::State::Closed {
                // Data for a socket nobody holds: nobody will read it.
                // Reset, as a closed BSD socket answers data; the stack
                // sends the reset at its next poll, so the socket stays
                // until then.
                s.abort();
                i += 1;
                continue;
            }
            let state = s.state();
            let done = matches!(state, tcp::State::Closed | tcp::State::TimeWait) || now >= o.deadline_ns;
            if done {
                let o = self.orphans.swap_remove(i);
                self.remove_socket(o.set, o.sh);
                if let Some(p) = o.port {
                    self.ports.orphan_gone(Proto::Tcp, p);
                }
            } else {
                i += 1;
            }
        }
    }

    /// Deadlines the timer must wake the cradle for.
    pub fn deadlines(&self) -> Vec<u64> {
        let mut d: Vec<u64> = self
            .parked
            .iter()
            .filter_map(|p| match p.op {
                Op::Poll { deadline_ns, .. } if deadline_ns != u64::MAX => Some(deadline_ns),
                _ => None,
            })
            .collect();
        d.extend(self.claims.values().map(|c| c.deadline_ns));
        d.extend(self.ring_retry_ns);
        d.extend(self.orphans.iter().map(|o| o.deadline_ns));
        for sock in self.socks.values() {
            if let State::Conn { connecting: true, started_ns, .. } = sock.state {
                d.push(started_ns + CONNECT_TIMEOUT_NS);
            }
        }
        d
    }

    // --- statistics ---

    /// User sockets, accepted connections not yet opened, and closed
    /// sockets' connections still winding down.
    pub fn socket_count(&self) -> usize {
        self.socks.len() + self.claims.len() + self.orphans.len()
    }

    fn rx_frames(&self) -> u64 {
        self.eth.as_ref().map_or(0, |e| e.stats.rx_frames)
    }

    fn tx_frames(&self) -> u64 {
        self.eth.as_ref().map_or(0, |e| e.stats.tx_frames)
    }

    /// One line per socket, for `netstat`.
    pub fn stats_text(&self, asking_handle: u64) -> String {
        let asking = self.socks.contains_key(&asking_handle) as usize;
        let mut t = String::new();
        let _ = writeln!(
            t,
            "sockets {} orphans {} unclaimed {} buffer_bytes {} ports {}",
            self.socks.len() - asking,
            self.orphans.len(),
            self.claims.len(),
            self.buffer_bytes,
            self.ports.count()
        );
        // Ring memory is not socket buffers: a ring stays with its live
        // process after its socket closed (rings.rs).
        let _ = writeln!(
            t,
            "receive rings {} (serving sockets {}, {} bytes)",
            self.rings.len(),
            self.rings.iter().filter(|r| r.socket.is_some()).count(),
            self.rings.len() as u64 * protocols::net::ring::SLOT_BYTES
        );
        for (_, sock) in self.socks.iter().filter(|(h, _)| **h != asking_handle) {
            let proto = match sock.proto {
                Proto::Tcp => "tcp",
                Proto::Udp => "udp",
                Proto::Icmp => "icmp",
            };
            let local = sock.local.map_or(String::from("*:*"), |(a, p)| alloc::format!("{a}:{p}"));
            let (peer, state) = match &sock.state {
                State::Fresh => (String::from("-"), String::from("CLOSED")),
                State::Listening { .. } => (String::from("*:*"), String::from("LISTEN")),
                State::Conn { set, sh, .. } => {
                    let s = self.sets[*set].get::<tcp::Socket>(*sh);
                    let peer = s.remote_endpoint().map_or(String::from("-"), |e| alloc::format!("{e}"));
                    (peer, alloc::format!("{}", s.state()).to_uppercase())
                }
                State::Dgram { .. } => (String::from("*:*"), String::new()),
            };
            let _ = writeln!(t, "{proto:<5} {local:<21} {peer:<21} {state}");
            if t.len() > abi::msg::MAX_DATA_BYTES as usize - 100 {
                let _ = writeln!(t, "...");
                break;
            }
        }
        t
    }
}

/// An ICMP echo reply's sequence number and payload.
fn parse_echo_reply(bytes: &[u8]) -> Option<(u16, &[u8])> {
    use smoltcp::wire::{Icmpv4Packet, Icmpv4Repr};
    let packet = Icmpv4Packet::new_checked(bytes).ok()?;
    match Icmpv4Repr::parse(&packet, &smoltcp::phy::ChecksumCapabilities::default()).ok()? {
        Icmpv4Repr::EchoReply { seq_no, data, .. } => Some((seq_no, data)),
        _ => None,
    }
}

fn send_echo(
    s: &mut icmp::Socket,
    dest: IpAddress,
    ident: u16,
    seq_no: u16,
    data: &[u8],
) -> Result<(), Errno> {
    use smoltcp::wire::{Icmpv4Packet, Icmpv4Repr};
    let repr = Icmpv4Repr::EchoRequest { ident, seq_no, data };
    let buf = s.send(repr.buffer_len(), dest).map_err(|e| match e {
        icmp::SendError::BufferFull => EAGAIN,
        icmp::SendError::Unaddressable => EDESTADDRREQ,
    })?;
    let mut packet = Icmpv4Packet::new_unchecked(buf);
    repr.emit(&mut packet, &smoltcp::phy::ChecksumCapabilities::default());
    Ok(())
}
