//! Sockets over the loopback interface (issue 13): TCP between processes,
//! UDP, the socket calls' errors, and the bad-input cases: port
//! exhaustion, a thousand sockets from one process, a peer that vanishes
//! mid-stream, a client killed with data queued. After each, the network
//! server's counts of sockets and socket-buffer bytes come back to zero
//! (`netstat`'s `OP_STATS`): nothing leaks.
//!
//! Every wait is bounded (`poll_until`); nothing here measures time.

use crate::ensure;
use crate::util::{Context, Fnv, Stream, TestResult, expect_errno, expect_exit, spawn, wait_for};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::errno::*;
use protocols::unix::signal::{SIGKILL, SIGPIPE};
use runtime::unix::socket::{
    self, AF_INET, IP_LOCAL_PORT_RANGE, IPPROTO_IP, POLLIN, POLLOUT, PollFd, SO_ERROR, SO_REUSEADDR,
    SOCK_DGRAM, SOCK_NONBLOCK, SOCK_STREAM, SOL_SOCKET, SockAddr,
};
use runtime::unix::{self, Fd};

const LOOPBACK: [u8; 4] = [127, 0, 0, 1];

fn tcp() -> Result<Fd, String> {
    socket::socket(AF_INET, SOCK_STREAM, 0).ctx("socket")
}

/// A listener on 127.0.0.1 at an ephemeral port; the port.
fn listener() -> Result<(Fd, u16), String> {
    let fd = tcp()?;
    socket::bind(fd, SockAddr::new(LOOPBACK, 0)).ctx("bind")?;
    socket::listen(fd, 4).ctx("listen")?;
    let port = socket::getsockname(fd).ctx("getsockname")?.port;
    ensure!(port != 0, "bound to port 0");
    Ok((fd, port))
}

/// The network server's (sockets, buffer bytes), and its table for a
/// failure message.
fn counts() -> Result<(u64, u64, String), String> {
    let (w, text) = socket::net_stats().ctx("net stats")?;
    Ok((w[0], w[1], text))
}

/// Wait until the server holds no socket and no buffer (connections
/// closed by both sides wind down through a few segments).
fn expect_no_leaks() -> TestResult {
    let mut last = String::new();
    let clean = crate::util::poll_until(300, 20, || {
        let (sockets, bytes, text) = counts()?;
        last = text;
        Ok(sockets == 0 && bytes == 0)
    })?;
    ensure!(clean, "the network server still holds sockets or buffers:\n{last}");
    Ok(())
}

fn read_all(fd: Fd) -> Result<Vec<u8>, String> {
    crate::util::read_to_end(fd).ctx("read")
}

pub fn tcp_echo_between_processes() -> TestResult {
    let (l, port) = listener()?;
    let server = spawn(move || {
        let Ok((c, peer)) = socket::accept(l) else { return 10 };
        if peer.addr != LOOPBACK {
            return 11;
        }
        let mut buf = alloc::vec![0u8; 8192];
        loop {
            match unix::read(c, &mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if crate::util::write_all(c, &buf[..n]).is_err() {
                        return 12;
                    }
                }
                Err(_) => return 13,
            }
        }
        let _ = unix::close(c);
        0
    })?;
    let c = tcp()?;
    socket::connect(c, SockAddr::new(LOOPBACK, port)).ctx("connect")?;
    let _ = unix::close(l);
    let peer = socket::getpeername(c).ctx("getpeername")?;
    ensure!(peer == SockAddr::new(LOOPBACK, port), "getpeername: {peer}");
    let me = socket::getsockname(c).ctx("getsockname")?;
    ensure!(me.addr == LOOPBACK && me.port != 0, "getsockname: {me}");
    // A megabyte, echoed back: one side writes all of it while the other
    // reads, so the writer in a child keeps the buffers moving.
    let total = 1 << 20;
    let writer = spawn(move || {
        let mut s = Stream::new(7);
        let mut buf = alloc::vec![0u8; 48 * 1024];
        let mut left = total;
        while left > 0 {
            let n = left.min(buf.len());
            s.fill(&mut buf[..n]);
            if crate::util::write_all(c, &buf[..n]).is_err() {
                return 1;
            }
            left -= n;
        }
        if socket::shutdown(c, socket::SHUT_WR).is_err() { 2 } else { 0 }
    })?;
    let got = read_all(c)?;
    expect_exit(writer, 0)?;
    expect_exit(server, 0)?;
    let _ = unix::close(c);
    ensure!(got.len() == total, "echoed {} of {total} bytes", got.len());
    let mut want = alloc::vec![0u8; total];
    Stream::new(7).fill(&mut want);
    let (mut a, mut b) = (Fnv::new(), Fnv::new());
    a.add(&got);
    b.add(&want);
    ensure!(a.0 == b.0, "the echoed bytes differ from those sent");
    expect_no_leaks()
}

/// The two checks of issue 13's modes, one entry of the table (see each).
pub fn lock_statistics_and_queued_writes() -> TestResult {
    lock_statistics_count()?;
    writes_complete_once_queued()
}

/// The lock statistics count (seed 003's figures, `netstat -l`): after
/// a reset, ROUNDS 32-byte request/response round trips between two
/// processes add at least one acquisition of the global lock per write
/// in `scalable` (the server takes it once per batch of packets, and each
/// write is a batch of its own: the next one waits for the answer) and
/// one per read and per write in `classic` (every caller takes it).
fn lock_statistics_count() -> TestResult {
    const ROUNDS: u64 = 25;
    let (l, port) = listener()?;
    let server = spawn(move || {
        let Ok((c, _)) = socket::accept(l) else { return 10 };
        let mut buf = [0u8; 32];
        for _ in 0..ROUNDS {
            if crate::util::read_exact(c, &mut buf).is_err() || crate::util::write_all(c, &buf).is_err() {
                return 11;
            }
        }
        0
    })?;
    let c = tcp()?;
    socket::connect(c, SockAddr::new(LOOPBACK, port)).ctx("connect")?;
    let (before, _) = socket::lock_stats(true).ctx("lock stats, reset")?;
    let mut buf = [7u8; 32];
    for i in 0..ROUNDS {
        buf[0] = i as u8;
        crate::util::write_all(c, &buf).ctx("write")?;
        crate::util::read_exact(c, &mut buf)?;
        ensure!(buf[0] == i as u8, "round {i}: echoed {}", buf[0]);
    }
    let (after, text) = socket::lock_stats(false).ctx("lock stats")?;
    expect_exit(server, 0)?;
    unix::close(c).ctx("close")?;
    unix::close(l).ctx("close")?;
    let classic = text.starts_with("mode classic");
    ensure!(classic || text.starts_with("mode scalable"), "no mode in the report:\n{text}");
    // Both ends' writes; in classic also both ends' reads.
    let least = if classic { 4 * ROUNDS } else { 2 * ROUNDS };
    ensure!(
        after[0] >= least,
        "{} acquisitions for {ROUNDS} round trips (at least {least}); before the reset {}:\n{text}",
        after[0],
        before[0]
    );
    ensure!(after[2] > 0 && after[3] >= after[2], "hold {} ns in an interval of {} ns", after[2], after[3]);
    for figure in ["hold % all locks", "spin % all locks", "locks per second", "global lock hold"] {
        ensure!(text.contains(figure), "no `{figure}` in the report:\n{text}");
    }
    // `scalable`: the stack is pinned to its designated CPU and answers
    // there (`set_affinity`); `classic` pins nothing.
    let pinned = text.lines().find_map(|l| l.strip_prefix("stack pinned to cpu ")).unwrap_or("");
    let cpu = pinned.split(':').next().unwrap_or("");
    let want = if classic { format!("{cpu}: no (") } else { format!("{cpu}: yes (served on cpu {cpu})") };
    ensure!(!cpu.is_empty() && pinned.starts_with(&want), "pinning: `{pinned}`, expected `{want}`:\n{text}");
    expect_no_leaks()
}

/// `net=scalable`: once a write call has given the socket credit, the
/// next small writes complete as soon as they are queued (one-way
/// messages, `OP_WRITE_QUEUED`), and the peer still reads every byte in
/// order; `netstat -l` counts them. Under `net=classic` every write is a
/// call: the count does not move.
fn writes_complete_once_queued() -> TestResult {
    const PIECES: usize = 40;
    let queued = || -> Result<u64, String> {
        let (_, text) = socket::lock_stats(false).ctx("lock stats")?;
        text.lines()
            .find_map(|l| l.strip_prefix("writes completed once queued: "))
            .and_then(|rest| rest.split(' ').next()?.parse().ok())
            .ok_or_else(|| format!("no queued-write count in:\n{text}"))
    };
    let (_, mode_text) = socket::lock_stats(false).ctx("lock stats")?;
    let scalable = mode_text.starts_with("mode scalable");
    let (l, port) = listener()?;
    let reader = spawn(move || {
        let Ok((c, _)) = socket::accept(l) else { return 10 };
        let Ok(got) = crate::util::read_to_end(c) else { return 11 };
        let want: Vec<u8> = (0..PIECES * 100).map(|i| (i % 251) as u8).collect();
        if got != want { 12 } else { 0 }
    })?;
    let c = tcp()?;
    socket::connect(c, SockAddr::new(LOOPBACK, port)).ctx("connect")?;
    let before = queued()?;
    let all: Vec<u8> = (0..PIECES * 100).map(|i| (i % 251) as u8).collect();
    for piece in all.chunks(100) {
        crate::util::write_all(c, piece).ctx("write")?;
    }
    let after = queued()?;
    unix::close(c).ctx("close")?;
    expect_exit(reader, 0)?;
    unix::close(l).ctx("close")?;
    if scalable {
        // The first write is a call (no credit yet); the rest fit its credit.
        ensure!(after - before >= PIECES as u64 - 1, "{} of {PIECES} writes were queued", after - before);
    } else {
        ensure!(after == before, "{} writes queued under classic", after - before);
    }
    expect_no_leaks()
}

pub fn udp_datagrams() -> TestResult {
    let a = socket::socket(AF_INET, SOCK_DGRAM, 0).ctx("socket a")?;
    let b = socket::socket(AF_INET, SOCK_DGRAM, 0).ctx("socket b")?;
    socket::bind(a, SockAddr::new(LOOPBACK, 0)).ctx("bind a")?;
    socket::bind(b, SockAddr::new(LOOPBACK, 0)).ctx("bind b")?;
    let pa = socket::getsockname(a).ctx("name a")?;
    let pb = socket::getsockname(b).ctx("name b")?;
    for i in 0..5u8 {
        let msg = [i; 100];
        ensure!(socket::sendto(a, &msg, pb).ctx("sendto")? == 100, "short datagram");
    }
    for i in 0..5u8 {
        let mut buf = [0u8; 200];
        let (n, from) = socket::recvfrom(b, &mut buf).ctx("recvfrom")?;
        ensure!(n == 100 && buf[..n].iter().all(|&x| x == i), "datagram {i}: {n} bytes {:?}", &buf[..4]);
        ensure!(from == pa, "from {from}, expected {pa}");
    }
    socket::set_nonblocking(b, true).ctx("nonblocking")?;
    expect_errno(socket::recvfrom(b, &mut [0u8; 10]), EAGAIN, "recvfrom on an empty socket")?;
    let _ = unix::close(a);
    let _ = unix::close(b);
    expect_no_leaks()
}

pub fn errors() -> TestResult {
    expect_errno(socket::socket(99, SOCK_STREAM, 0), EAFNOSUPPORT, "family 99")?;
    expect_errno(socket::socket(AF_INET, SOCK_STREAM, 17), EPROTONOSUPPORT, "TCP with protocol 17")?;
    // Nobody listens: refused.
    let (l, port) = listener()?;
    let _ = unix::close(l);
    let c = tcp()?;
    expect_errno(
        socket::connect(c, SockAddr::new(LOOPBACK, port)),
        ECONNREFUSED,
        "connect to a closed port",
    )?;
    let _ = unix::close(c);
    // Two listeners on one port.
    let (l, port) = listener()?;
    let other = tcp()?;
    expect_errno(socket::bind(other, SockAddr::new(LOOPBACK, port)), EADDRINUSE, "second bind")?;
    let _ = socket::setsockopt(other, SOL_SOCKET, SO_REUSEADDR, 1);
    expect_errno(
        socket::bind(other, SockAddr::new(LOOPBACK, port)),
        EADDRINUSE,
        "second bind, SO_REUSEADDR",
    )?;
    // An address that is not this machine's.
    expect_errno(socket::bind(other, SockAddr::new([192, 0, 2, 1], 0)), EADDRNOTAVAIL, "bind to 192.0.2.1")?;
    // Not connected; not a socket; unknown option.
    let fresh = tcp()?;
    expect_errno(unix::write(fresh, b"x"), ENOTCONN, "write before connect")?;
    expect_errno(socket::getpeername(fresh), ENOTCONN, "getpeername before connect")?;
    expect_errno(socket::setsockopt(fresh, SOL_SOCKET, 12345, 1), ENOPROTOOPT, "option 12345")?;
    expect_errno(socket::listen(0, 1), ENOTSOCK, "listen on standard input")?;
    // Non-blocking accept with nobody connecting.
    socket::set_nonblocking(l, true).ctx("nonblocking")?;
    expect_errno(socket::accept(l), EAGAIN, "accept with no connection")?;
    for fd in [l, other, fresh] {
        let _ = unix::close(fd);
    }
    expect_no_leaks()
}

pub fn nonblocking_connect_and_poll() -> TestResult {
    let (l, port) = listener()?;
    let c = socket::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0).ctx("socket")?;
    expect_errno(socket::connect(c, SockAddr::new(LOOPBACK, port)), EINPROGRESS, "non-blocking connect")?;
    let mut p = [PollFd { fd: c, events: POLLOUT, revents: 0 }];
    let n = socket::poll(&mut p, Some(5000)).ctx("poll for the connection")?;
    ensure!(n == 1 && p[0].revents & POLLOUT != 0, "poll: {n}, revents {:#x}", p[0].revents);
    ensure!(socket::getsockopt(c, SOL_SOCKET, SO_ERROR).ctx("SO_ERROR")? == 0, "SO_ERROR after connecting");
    let mut p = [PollFd { fd: l, events: POLLIN, revents: 0 }];
    ensure!(socket::poll(&mut p, Some(5000)).ctx("poll the listener")? == 1, "the listener is not readable");
    let (s, _) = socket::accept(l).ctx("accept")?;
    // Nothing to read yet: EAGAIN on the non-blocking side, a poll that
    // times out on the other.
    expect_errno(unix::read(c, &mut [0u8; 4]), EAGAIN, "read with nothing sent")?;
    let mut p = [PollFd { fd: s, events: POLLIN, revents: 0 }];
    ensure!(socket::poll(&mut p, Some(50)).ctx("poll, timing out")? == 0, "poll said readable");
    crate::util::write_all(c, b"ping").ctx("write")?;
    let mut p = [PollFd { fd: s, events: POLLIN, revents: 0 }];
    ensure!(socket::poll(&mut p, Some(5000)).ctx("poll for data")? == 1, "data did not arrive");
    let mut buf = [0u8; 8];
    ensure!(unix::read(s, &mut buf).ctx("read")? == 4 && &buf[..4] == b"ping", "read {:?}", &buf[..4]);
    for fd in [l, c, s] {
        let _ = unix::close(fd);
    }
    expect_no_leaks()
}

/// `IP_LOCAL_PORT_RANGE` of eight ports: eight binds to port 0 succeed,
/// the ninth finds none free; a port comes back when its socket closes.
pub fn port_exhaustion() -> TestResult {
    let range = 50_000u64 | 50_007 << 16;
    let mut fds = Vec::new();
    let mut ports = Vec::new();
    for _ in 0..8 {
        let fd = tcp()?;
        socket::setsockopt(fd, IPPROTO_IP, IP_LOCAL_PORT_RANGE, range).ctx("IP_LOCAL_PORT_RANGE")?;
        socket::bind(fd, SockAddr::new(LOOPBACK, 0)).ctx("bind in the range")?;
        ports.push(socket::getsockname(fd).ctx("name")?.port);
        fds.push(fd);
    }
    ports.sort_unstable();
    ensure!(ports == (50_000..=50_007).collect::<Vec<u16>>(), "ports {ports:?}");
    let extra = tcp()?;
    socket::setsockopt(extra, IPPROTO_IP, IP_LOCAL_PORT_RANGE, range).ctx("range")?;
    expect_errno(socket::bind(extra, SockAddr::new(LOOPBACK, 0)), EADDRINUSE, "ninth bind")?;
    expect_errno(socket::connect(extra, SockAddr::new(LOOPBACK, 9)), EADDRNOTAVAIL, "connect, no port")?;
    let _ = unix::close(fds.pop().expect("eight"));
    socket::bind(extra, SockAddr::new(LOOPBACK, 0)).ctx("bind after a close")?;
    let _ = unix::close(extra);
    for fd in fds {
        let _ = unix::close(fd);
    }
    expect_no_leaks()
}

/// A thousand sockets from one process: opened and bound as many at a
/// time as descriptors allow (`EMFILE` past them), a thousand in all,
/// and two hundred connections made and closed over loopback.
pub fn a_thousand_sockets() -> TestResult {
    let mut opened = 0;
    while opened < 1000 {
        let mut batch = Vec::new();
        loop {
            match socket::socket(AF_INET, SOCK_STREAM, 0) {
                Ok(fd) => {
                    socket::bind(fd, SockAddr::new(LOOPBACK, 0)).ctx("bind")?;
                    batch.push(fd);
                    opened += 1;
                    if opened == 1000 {
                        break;
                    }
                }
                Err(EMFILE) => break,
                Err(e) => return Err(format!("socket {opened}: {}", e.name())),
            }
        }
        ensure!(!batch.is_empty(), "no socket could be opened");
        for fd in batch {
            unix::close(fd).ctx("close")?;
        }
    }
    let (l, port) = listener()?;
    for i in 0..200 {
        let c = tcp()?;
        socket::connect(c, SockAddr::new(LOOPBACK, port)).ctx(&format!("connect {i}"))?;
        let (s, _) = socket::accept(l).ctx("accept")?;
        crate::util::write_all(c, b"x").ctx("write")?;
        let mut b = [0u8; 1];
        ensure!(unix::read(s, &mut b).ctx("read")? == 1, "connection {i}: nothing arrived");
        unix::close(c).ctx("close client")?;
        unix::close(s).ctx("close server side")?;
    }
    let _ = unix::close(l);
    expect_no_leaks()
}

/// The peer is killed while streaming to us: we read what it sent, then
/// the end of the stream; a write to it then fails (the connection was
/// closed by its death); nothing leaks.
pub fn peer_vanishes_mid_stream() -> TestResult {
    let (l, s, writer) = connected_child(|c| {
        let buf = [0x5au8; 4096];
        loop {
            if crate::util::write_all(c, &buf).is_err() {
                return 3;
            }
        }
    })?;
    let mut buf = alloc::vec![0u8; 16 * 1024];
    let mut got = 0;
    while got < 64 * 1024 {
        got += unix::read(s, &mut buf).ctx("read")?;
    }
    unix::kill(writer as i64, SIGKILL).ctx("kill")?;
    let _ = wait_for(writer)?;
    // The rest of what it sent, then the end (its close at death).
    loop {
        match unix::read(s, &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(ECONNRESET) => break,
            Err(e) => return Err(format!("read after the peer died: {}", e.name())),
        }
    }
    let mut failed = false;
    // `write` raises SIGPIPE on a broken connection: ignored here to see
    // the errno (tests/utest/src/readiness.rs tests the signal).
    let was_ignored = unix::signal_ignore(SIGPIPE, true).ctx("ignore SIGPIPE")?;
    for _ in 0..50 {
        match unix::write(s, &[1u8; 1024]) {
            Ok(_) => unix::sleep_ns(10_000_000),
            Err(EPIPE | ECONNRESET) => {
                failed = true;
                break;
            }
            Err(e) => return Err(format!("write to a dead peer: {}", e.name())),
        }
    }
    unix::signal_ignore(SIGPIPE, was_ignored).ctx("restore SIGPIPE")?;
    let (_, _, table) = counts()?;
    ensure!(failed, "writes to a dead peer kept succeeding:\n{table}");
    let _ = unix::close(s);
    let _ = unix::close(l);
    expect_no_leaks()
}

/// A client killed while the server has data queued for it that it never
/// read, and data of its own queued to send: its socket is closed by its
/// death (reset, as unread data is lost); the server's reads and writes
/// end in an error or the end of the stream, never a hang.
pub fn client_killed_with_data_queued() -> TestResult {
    let (l, s, client) = connected_child(|c| {
        let _ = crate::util::write_all(c, &[7u8; 32 * 1024]);
        // Wait to be killed, reading nothing.
        loop {
            unix::sleep_ns(1_000_000_000);
        }
    })?;
    // The client may be gone before this ends: SIGPIPE must not end the
    // test runner.
    let was_ignored = unix::signal_ignore(SIGPIPE, true).ctx("ignore SIGPIPE")?;
    let wrote = crate::util::write_all(s, &[9u8; 16 * 1024]).ctx("write to the client");
    unix::signal_ignore(SIGPIPE, was_ignored).ctx("restore SIGPIPE")?;
    wrote?;
    let mut first = [0u8; 1024];
    ensure!(unix::read(s, &mut first).ctx("read")? > 0, "nothing from the client");
    unix::kill(client as i64, SIGKILL).ctx("kill")?;
    let _ = wait_for(client)?;
    let mut buf = alloc::vec![0u8; 16 * 1024];
    let mut ended = false;
    for _ in 0..1000 {
        match unix::read(s, &mut buf) {
            Ok(0) | Err(ECONNRESET) => {
                ended = true;
                break;
            }
            Ok(_) => {}
            Err(e) => return Err(format!("read: {}", e.name())),
        }
    }
    ensure!(ended, "the stream from a killed client never ended");
    let _ = unix::close(s);
    let _ = unix::close(l);
    expect_no_leaks()
}

/// A new UDP socket and what the monitor says of it (`OP_FD_INFO`: the
/// network server's pid and queue, the handle), for tests that speak to
/// the server directly.
fn udp_socket_and_its_manager() -> Result<(Fd, protocols::unix::FdInfo), String> {
    use protocols::unix::{FdInfo, monitor};
    use runtime::msg::{self, Queue};
    let fd = socket::socket(AF_INET, SOCK_DGRAM, 0).ctx("socket")?;
    let (pid, queue) = runtime::sys::bootstrap(abi::bootstrap::MONITOR).ok_or("no monitor")?;
    let to_monitor = msg::open_link(pid, Queue(queue)).map_err(|e| e.name())?;
    let info = msg::call(to_monitor, &[monitor::OP_FD_INFO, fd as u64, 0, 0], &[], &mut []);
    let _ = msg::close_link(to_monitor);
    let (w, _) = info.map_err(|e| e.name())?;
    Ok((fd, FdInfo::decode([w[1], w[2], w[3]])))
}

/// Issue 16 (sfuzz, seed 4): the network server opened a socket for
/// `device::OP_OPEN` from anyone, and only the monitor may close one, so
/// such sockets leaked until `socket()` failed for everybody. A process's
/// own open must be refused and leave no socket behind.
pub fn open_only_from_the_monitor() -> TestResult {
    use protocols::unix::device;
    use runtime::msg::{self, Link, Queue};
    let (fd, info) = udp_socket_and_its_manager()?;
    let net: Link =
        msg::open_link(abi::Pid(info.manager_pid), Queue(info.manager_queue)).map_err(|e| e.name())?;
    let mut answers = Vec::new();
    for kind in [protocols::net::KIND_UDP, protocols::net::KIND_TCP] {
        let r = msg::call(net, &[device::OP_OPEN, 0, 0, 0], kind.as_bytes(), &mut []);
        answers.push(r.map(|(w, _)| protocols::unix::result(w[0])));
    }
    let _ = msg::close_link(net);
    unix::close(fd).ctx("close")?;
    for answer in answers {
        ensure!(answer == Ok(Err(EPERM)), "a direct open of a socket answered {answer:?}, not EPERM");
    }
    expect_no_leaks()
}

/// Polls of no socket and no time limit (`OP_POLL` straight to the
/// server), each from a caller killed while it waits, more of them than
/// the server's queue holds (`servers/net/src/main.rs`, `QUEUE_CAPACITY`
/// 512): the server must still open sockets afterwards. sfuzz's seed 7
/// (2 CPUs, batches 1,276–1,279) ended with every `socket()` failing with
/// `EIO`; such polls, parked until a deadline that never comes, are what
/// its doomed children send.
pub fn polls_of_dead_callers_leave_room() -> TestResult {
    use runtime::msg::{self, Queue};
    const CALLERS: u32 = 700;
    let (fd, info) = udp_socket_and_its_manager()?;
    unix::close(fd).ctx("close")?;
    for i in 0..CALLERS {
        match unix::fork() {
            Ok(0) => {
                let Ok(net) = msg::open_link(abi::Pid(info.manager_pid), Queue(info.manager_queue)) else {
                    unix::exit(2)
                };
                let _ = msg::call(net, &[protocols::net::OP_POLL, 0, u64::MAX, 0], &[], &mut []);
                unix::exit(0);
            }
            Ok(child) => {
                // To the next tick: the call reaches the server, which parks it.
                unix::sleep_ns(1);
                let _ = unix::kill(child as i64, SIGKILL);
                let _ = unix::waitpid(child as i64, false);
            }
            Err(e) => return Err(format!("fork {i}: {}", protocols::unix::errno::name(e))),
        }
    }
    let fd = socket::socket(AF_INET, SOCK_DGRAM, 0).ctx("socket after the dead callers' polls")?;
    unix::close(fd).ctx("close")?;
    expect_no_leaks()
}

// --- receive rings (`net=scalable`, docs/network.md) ---

/// Whether the network server runs `net=scalable`.
fn scalable() -> Result<bool, String> {
    let (_, text) = socket::lock_stats(false).ctx("lock stats")?;
    Ok(text.starts_with("mode scalable"))
}

/// The server's count of reads served from receive rings since boot.
fn server_ring_reads() -> Result<u64, String> {
    let (_, text) = socket::lock_stats(false).ctx("lock stats")?;
    text.lines()
        .find_map(|l| l.split_once("from receive rings without a call: "))
        .and_then(|(_, rest)| rest.split(' ').next()?.parse().ok())
        .ok_or_else(|| format!("no ring read count in:\n{text}"))
}

/// Bytes `fd`'s receive ring holds now (None: no ring mapped here).
fn ring_holds(fd: Fd) -> Option<u64> {
    use core::sync::atomic::Ordering::Acquire;
    socket::ring_header(fd).map(|h| h.head.load(Acquire).saturating_sub(h.tail.load(Acquire)))
}

/// A child connected over loopback to a new listener of ours, running
/// `peer` on its socket (exit 1: no socket, 2: no connection): (the
/// listener, our accepted end, the child).
fn connected_child(peer: impl FnOnce(Fd) -> i32) -> Result<(Fd, Fd, u64), String> {
    let (l, port) = listener()?;
    let child = spawn(move || {
        let Ok(c) = socket::socket(AF_INET, SOCK_STREAM, 0) else { return 1 };
        if socket::connect(c, SockAddr::new(LOOPBACK, port)).is_err() {
            return 2;
        }
        peer(c)
    })?;
    let (s, _) = socket::accept(l).ctx("accept")?;
    Ok((l, s, child))
}

/// A connected pair on loopback: (our end, the accepted end).
fn pair() -> Result<(Fd, Fd, Fd), String> {
    let (l, port) = listener()?;
    let c = tcp()?;
    socket::connect(c, SockAddr::new(LOOPBACK, port)).ctx("connect")?;
    let (s, _) = socket::accept(l).ctx("accept")?;
    Ok((l, c, s))
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// The first read maps the socket's ring (by a call: nothing is there
/// yet); `byte` is what the peer sent for it.
fn first_read_maps_the_ring(c: Fd, s: Fd, byte: u8) -> TestResult {
    crate::util::write_all(s, &[byte]).ctx("write the first byte")?;
    let mut one = [0u8; 1];
    crate::util::read_exact(c, &mut one)?;
    ensure!(one[0] == byte, "first byte {} (sent {byte})", one[0]);
    Ok(())
}

/// Wait until `fd`'s ring holds `bytes` (the server moves what arrived
/// into it after its pass of the stack).
fn wait_for_ring(fd: Fd, bytes: u64) -> TestResult {
    let full = crate::util::poll_until(500, 10, || Ok(ring_holds(fd) == Some(bytes)))?;
    ensure!(full, "the ring holds {:?} bytes, expected {bytes}", ring_holds(fd));
    Ok(())
}

/// `net=scalable`: bytes already queued for a socket are read with no
/// call at all: the reader's own counts show every read served from the
/// ring and none by a call, and the server counts the ring reads too.
/// Under `net=classic` no ring is given and every read is a call.
pub fn reads_take_queued_data_from_the_ring() -> TestResult {
    const BYTES: usize = 8000;
    const PIECE: usize = 100;
    let scalable = scalable()?;
    let (l, c, s) = pair()?;
    first_read_maps_the_ring(c, s, 0x42)?;
    let data = pattern(BYTES, 3);
    crate::util::write_all(s, &data).ctx("write")?;
    if !scalable {
        ensure!(socket::ring_header(c).is_none(), "a receive ring under net=classic");
        let (ring_before, _) = socket::read_counts();
        let mut got = alloc::vec![0u8; BYTES];
        crate::util::read_exact(c, &mut got)?;
        ensure!(got == data, "the bytes read differ from those sent");
        ensure!(socket::read_counts().0 == ring_before, "reads from a ring under net=classic");
    } else {
        wait_for_ring(c, BYTES as u64)?;
        let (ring_before, calls_before) = socket::read_counts();
        let server_before = server_ring_reads()?;
        let mut got = Vec::new();
        let mut piece = [0u8; PIECE];
        while got.len() < BYTES {
            let n = socket::recv(c, &mut piece).ctx("recv")?;
            ensure!(n > 0, "end of stream after {} bytes", got.len());
            got.extend_from_slice(&piece[..n]);
        }
        let (ring_after, calls_after) = socket::read_counts();
        ensure!(got == data, "the bytes read from the ring differ from those sent");
        ensure!(
            calls_after == calls_before,
            "{} of {} reads were calls with every byte already in the ring",
            calls_after - calls_before,
            BYTES / PIECE
        );
        ensure!(
            ring_after - ring_before == (BYTES / PIECE) as u64,
            "{} ring reads",
            ring_after - ring_before
        );
        let server_after = server_ring_reads()?;
        ensure!(
            server_after >= server_before + (BYTES / PIECE) as u64,
            "the server counts {} ring reads, expected {}",
            server_after - server_before,
            BYTES / PIECE
        );
        ensure!(ring_holds(c) == Some(0), "the ring still holds {:?} bytes", ring_holds(c));
    }
    // More than a ring holds, in one go: the rest comes by refills (the
    // reader that empties a full ring says so) and calls, in order.
    let big = pattern(200 * 1024, 9);
    let writer = spawn(move || if crate::util::write_all(s, &big).is_err() { 1 } else { 0 })?;
    let mut got = alloc::vec![0u8; 200 * 1024];
    let mut at = 0;
    while at < got.len() {
        let n = socket::recv(c, &mut got[at..(at + 3000).min(200 * 1024)]).ctx("recv")?;
        ensure!(n > 0, "end of stream after {at} bytes");
        at += n;
    }
    expect_exit(writer, 0)?;
    ensure!(got == pattern(200 * 1024, 9), "200 KiB through the ring arrived changed");
    // The end of the stream, after what the ring held.
    crate::util::write_all(s, b"last").ctx("write")?;
    unix::close(s).ctx("close")?;
    let rest = read_all(c)?;
    ensure!(rest == b"last", "after the peer's close: {:?}", rest);
    unix::close(c).ctx("close")?;
    unix::close(l).ctx("close")?;
    expect_no_leaks()
}

/// A reader that scribbles on its ring's header breaks its own socket
/// only: its reads fail with `EIO` (and the connection is reset); the
/// server and another socket go on; nothing leaks.
pub fn a_scribbled_ring_breaks_only_its_socket() -> TestResult {
    if !scalable()? {
        return Ok(());
    }
    let (l, c, s) = pair()?;
    let (l2, c2, s2) = pair()?;
    first_read_maps_the_ring(c, s, 1)?;
    first_read_maps_the_ring(c2, s2, 2)?;
    crate::util::write_all(s, &[5u8; 500]).ctx("write")?;
    wait_for_ring(c, 500)?;
    let h = socket::ring_header(c).ok_or("no ring")?;
    let head = h.head.load(core::sync::atomic::Ordering::Acquire);
    // Past what the server put in: no reader may have taken that.
    h.tail.store(head + 1000, core::sync::atomic::Ordering::Release);
    let mut buf = [0u8; 100];
    expect_errno(unix::read(c, &mut buf), EIO, "read from a scribbled ring")?;
    expect_errno(unix::read(c, &mut buf), EIO, "the next read")?;
    // The other socket, both ways, through its own ring.
    let data = pattern(3000, 7);
    crate::util::write_all(s2, &data).ctx("write to the other socket")?;
    let mut got = alloc::vec![0u8; 3000];
    crate::util::read_exact(c2, &mut got)?;
    ensure!(got == data, "the other socket's bytes changed");
    crate::util::write_all(c2, b"back").ctx("write back")?;
    let mut back = [0u8; 4];
    crate::util::read_exact(s2, &mut back)?;
    ensure!(&back == b"back", "the other socket's answer");
    for fd in [c, s, c2, s2, l, l2] {
        unix::close(fd).ctx("close")?;
    }
    expect_no_leaks()
}

/// A `fork` child reads the socket it shares with its parent through the
/// ring it inherited (no call), then the parent reads on through it;
/// then a reader blocked in a read on the shared socket is killed, and
/// the parent still reads everything after it. Nothing leaks, and the
/// rings of the children are let go.
pub fn fork_and_killed_readers_share_the_ring() -> TestResult {
    let scalable = scalable()?;
    let (l, c, s) = pair()?;
    first_read_maps_the_ring(c, s, 9)?;
    let first = pattern(4000, 1);
    crate::util::write_all(s, &first).ctx("write")?;
    if scalable {
        wait_for_ring(c, 4000)?;
    }
    let child = spawn(move || {
        let (ring_before, calls_before) = socket::read_counts();
        let mut got = alloc::vec![0u8; 4000];
        if crate::util::read_exact(c, &mut got).is_err() {
            return 1;
        }
        if got != pattern(4000, 1) {
            return 2;
        }
        let (ring_after, calls_after) = socket::read_counts();
        if scalable && (ring_after == ring_before || calls_after != calls_before) {
            return 3;
        }
        0
    })?;
    expect_exit(child, 0)?;
    let second = pattern(5000, 2);
    crate::util::write_all(s, &second).ctx("write")?;
    let mut got = alloc::vec![0u8; 5000];
    crate::util::read_exact(c, &mut got)?;
    ensure!(got == second, "the parent's bytes after the child's read changed");
    // A reader blocked in a read (nothing to read) is killed.
    let blocked = spawn(move || {
        let mut buf = [0u8; 64];
        match unix::read(c, &mut buf) {
            Ok(_) => 1,
            Err(_) => 2,
        }
    })?;
    // Most likely parked at the server by then; killed either way (nothing
    // is sent before the kill, so its read cannot end first).
    unix::sleep_ns(50_000_000);
    unix::kill(blocked as i64, SIGKILL).ctx("kill")?;
    let status = wait_for(blocked)?;
    ensure!(status.signal() == Some(SIGKILL), "the blocked reader {}", crate::util::describe(&status));
    let third = pattern(6000, 3);
    crate::util::write_all(s, &third).ctx("write")?;
    let mut got = alloc::vec![0u8; 6000];
    crate::util::read_exact(c, &mut got)?;
    ensure!(got == third, "the bytes after the killed reader changed");
    for fd in [c, s, l] {
        unix::close(fd).ctx("close")?;
    }
    expect_no_leaks()
}
