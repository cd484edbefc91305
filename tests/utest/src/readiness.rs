//! `poll` over pipes, terminals and sockets mixed, and `SIGPIPE` (issue
//! 13): the pipe manager's and the terminal's readiness request
//! (`io::OP_POLL`), `runtime::unix::poll`, and the signal a write with no
//! reader raises (`runtime::unix::write`).
//!
//! Nothing here measures speed: a timeout's test checks only that `poll`
//! came back with nothing ready and not before the timeout; waits for a
//! child are bounded by the child's own end.

use crate::ensure;
use crate::util::{Context, TestResult, expect_errno, expect_exit, expect_signal, in_child, spawn, wait_for};
use alloc::format;
use protocols::unix::errno::*;
use protocols::unix::signal::{SIGKILL, SIGPIPE};
use runtime::unix::socket::{
    self, AF_INET, POLLERR, POLLHUP, POLLIN, POLLNVAL, POLLOUT, PollFd, SOCK_STREAM, SockAddr,
};
use runtime::unix::{self, Fd};

const LOOPBACK: [u8; 4] = [127, 0, 0, 1];

fn entry(fd: Fd, events: u16) -> PollFd {
    PollFd { fd, events, revents: 0 }
}

/// A connected TCP pair over loopback: (client, server side, listener).
fn tcp_pair() -> Result<(Fd, Fd, Fd), alloc::string::String> {
    let l = socket::socket(AF_INET, SOCK_STREAM, 0).ctx("socket")?;
    socket::bind(l, SockAddr::new(LOOPBACK, 0)).ctx("bind")?;
    socket::listen(l, 1).ctx("listen")?;
    let port = socket::getsockname(l).ctx("getsockname")?.port;
    let c = socket::socket(AF_INET, SOCK_STREAM, 0).ctx("socket")?;
    socket::connect(c, SockAddr::new(LOOPBACK, port)).ctx("connect")?;
    let (s, _) = socket::accept(l).ctx("accept")?;
    Ok((c, s, l))
}

/// An empty pipe's read end is not ready (timeout 0 returns at once); with
/// bytes in it, it is `POLLIN`; its write end is `POLLOUT`; a bad
/// descriptor is `POLLNVAL`.
pub fn poll_a_pipe_with_and_without_data() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let mut fds = [entry(r, POLLIN)];
    ensure!(unix::poll(&mut fds, Some(0)).ctx("poll")? == 0, "an empty pipe polled ready: {fds:?}");
    ensure!(fds[0].revents == 0, "revents {:#x} on an empty pipe", fds[0].revents);
    let mut fds = [entry(w, POLLOUT)];
    ensure!(unix::poll(&mut fds, Some(0)).ctx("poll")? == 1, "an empty pipe's write end is not POLLOUT");
    ensure!(fds[0].revents == POLLOUT, "write end revents {:#x}", fds[0].revents);
    unix::write(w, b"x").ctx("write")?;
    let mut fds = [entry(r, POLLIN), entry(w, POLLOUT), entry(999, POLLIN)];
    ensure!(unix::poll(&mut fds, Some(0)).ctx("poll")? == 3, "not all three have events: {fds:?}");
    ensure!(fds[0].revents == POLLIN, "read end revents {:#x}, expected POLLIN", fds[0].revents);
    ensure!(fds[2].revents == POLLNVAL, "a bad descriptor gave {:#x}", fds[2].revents);
    let mut b = [0u8; 4];
    ensure!(unix::read(r, &mut b).ctx("read")? == 1, "read");
    let mut fds = [entry(r, POLLIN)];
    ensure!(unix::poll(&mut fds, Some(0)).ctx("poll")? == 0, "a drained pipe polled ready");
    unix::close(r).ctx("close")?;
    unix::close(w).ctx("close")
}

/// The writers gone: the read end is `POLLHUP` (asked or not). The
/// readers gone: the write end is `POLLERR`.
pub fn poll_a_pipe_whose_other_end_closed() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    unix::close(w).ctx("close the write end")?;
    let mut fds = [entry(r, POLLIN)];
    ensure!(unix::poll(&mut fds, Some(0)).ctx("poll")? == 1, "no event after the writer closed");
    ensure!(fds[0].revents & POLLHUP != 0, "revents {:#x}, expected POLLHUP", fds[0].revents);
    ensure!(fds[0].revents & POLLIN == 0, "POLLIN with nothing to read: {:#x}", fds[0].revents);
    unix::close(r).ctx("close")?;
    let (r, w) = unix::pipe().ctx("pipe")?;
    unix::close(r).ctx("close the read end")?;
    let mut fds = [entry(w, POLLOUT)];
    ensure!(unix::poll(&mut fds, Some(0)).ctx("poll")? == 1, "no event after the reader closed");
    ensure!(fds[0].revents == POLLERR, "revents {:#x}, expected POLLERR", fds[0].revents);
    unix::close(w).ctx("close")
}

/// A short timeout with nothing ready: 0, and not before the timeout.
/// A pipe written by a child later: `poll` without a timeout wakes.
pub fn poll_timeouts_and_waking() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let clock = runtime::clock::Clock::new();
    let started = clock.now_ns();
    let mut fds = [entry(r, POLLIN)];
    ensure!(unix::poll(&mut fds, Some(30)).ctx("poll")? == 0, "an empty pipe polled ready: {fds:?}");
    let waited_ns = clock.now_ns() - started;
    ensure!(waited_ns >= 30_000_000, "poll with a 30 ms timeout came back after {waited_ns} ns");
    let child = spawn(move || {
        unix::sleep_ns(20_000_000);
        if unix::write(w, b"late").is_err() { 1 } else { 0 }
    })?;
    let mut fds = [entry(r, POLLIN)];
    ensure!(unix::poll(&mut fds, None).ctx("poll")? == 1, "poll without a timeout gave nothing");
    ensure!(fds[0].revents == POLLIN, "revents {:#x}", fds[0].revents);
    expect_exit(child, 0)?;
    unix::close(w).ctx("close")?;
    let mut fds = [entry(r, POLLIN)];
    // Bytes left and the writer gone: both.
    ensure!(unix::poll(&mut fds, Some(0)).ctx("poll")? == 1, "no event");
    ensure!(fds[0].revents == POLLIN | POLLHUP, "revents {:#x}, expected POLLIN|POLLHUP", fds[0].revents);
    unix::close(r).ctx("close")
}

/// A socket and a pipe in one `poll`: nothing ready (timeout 0 and a
/// short one); then the pipe alone; then the socket alone.
pub fn poll_a_socket_and_a_pipe_together() -> TestResult {
    let (c, s, l) = tcp_pair()?;
    let (r, w) = unix::pipe().ctx("pipe")?;
    let mut fds = [entry(s, POLLIN), entry(r, POLLIN)];
    ensure!(unix::poll(&mut fds, Some(0)).ctx("poll")? == 0, "ready with nothing sent: {fds:?}");
    ensure!(unix::poll(&mut fds, Some(20)).ctx("poll")? == 0, "ready with nothing sent: {fds:?}");
    let child = spawn(move || {
        unix::sleep_ns(20_000_000);
        if unix::write(w, b"p").is_err() { 1 } else { 0 }
    })?;
    let mut fds = [entry(s, POLLIN), entry(r, POLLIN)];
    ensure!(unix::poll(&mut fds, None).ctx("poll")? == 1, "not one ready: {fds:?}");
    ensure!(fds[0].revents == 0 && fds[1].revents == POLLIN, "expected the pipe alone: {fds:?}");
    expect_exit(child, 0)?;
    let mut b = [0u8; 4];
    unix::read(r, &mut b).ctx("read the pipe")?;
    socket::send(c, b"s").ctx("send")?;
    let mut fds = [entry(s, POLLIN), entry(r, POLLIN)];
    ensure!(unix::poll(&mut fds, Some(10_000)).ctx("poll")? == 1, "not one ready: {fds:?}");
    ensure!(fds[0].revents & POLLIN != 0 && fds[1].revents == 0, "expected the socket alone: {fds:?}");
    for fd in [c, s, l, r, w] {
        let _ = unix::close(fd);
    }
    Ok(())
}

/// The terminal (standard output when it is the console) is writable;
/// a `poll` on it never fails.
pub fn poll_the_terminal() -> TestResult {
    let st = unix::fstat(1).ctx("fstat 1")?;
    if !protocols::unix::mode::is_chr(st.mode) {
        // The test boots run utest with standard output on the console.
        return Err(format!("standard output is not a character device (mode {:#o})", st.mode));
    }
    let mut fds = [entry(1, POLLOUT)];
    ensure!(unix::poll(&mut fds, Some(0)).ctx("poll")? == 1, "the terminal is not POLLOUT");
    ensure!(fds[0].revents == POLLOUT, "revents {:#x}", fds[0].revents);
    Ok(())
}

/// A write to a pipe with no reader ends the writer with SIGPIPE (the
/// default action); ignored, the write fails with EPIPE.
pub fn sigpipe_on_a_pipe() -> TestResult {
    let child = spawn(|| {
        let _ = unix::signal_ignore(SIGPIPE, false);
        let Ok((r, w)) = unix::pipe() else { return 1 };
        let _ = unix::close(r);
        let _ = unix::write(w, b"nobody reads this");
        // Still here: the signal did not end us.
        2
    })?;
    expect_signal(child, SIGPIPE)?;
    in_child(|| {
        unix::signal_ignore(SIGPIPE, true).ctx("ignore SIGPIPE")?;
        let (r, w) = unix::pipe().ctx("pipe")?;
        unix::close(r).ctx("close")?;
        expect_errno(unix::write(w, b"x"), EPIPE, "write with SIGPIPE ignored")
    })
}

/// The same on a TCP connection whose peer has closed: the writer is
/// ended by SIGPIPE, or sees EPIPE (or first ECONNRESET) when it ignores
/// the signal.
pub fn sigpipe_on_a_socket() -> TestResult {
    for ignore in [false, true] {
        let (c, s, l) = tcp_pair()?;
        let writer = spawn(move || {
            // The peer's end and the listener are the parent's to close:
            // a copy held here would keep the connection open.
            let _ = unix::close(s);
            let _ = unix::close(l);
            let _ = unix::signal_ignore(SIGPIPE, ignore);
            for _ in 0..200 {
                match unix::write(c, &[3u8; 512]) {
                    Ok(_) | Err(ECONNRESET) => unix::sleep_ns(5_000_000),
                    Err(EPIPE) => return 3,
                    Err(_) => return 4,
                }
            }
            5
        })?;
        unix::close(c).ctx("close")?;
        unix::close(s).ctx("close the peer")?;
        unix::close(l).ctx("close the listener")?;
        if ignore {
            expect_exit(writer, 3)?;
        } else {
            let status = wait_for(writer)?;
            if status.signal() != Some(SIGPIPE) {
                let _ = unix::kill(writer as i64, SIGKILL);
                return Err(format!("the writer {}, expected SIGPIPE", crate::util::describe(&status)));
            }
        }
    }
    Ok(())
}
