//! POSIX `poll` over every kind of descriptor: sockets, pipes, terminals
//! and files, mixed in one call (issue 13).
//!
//! Each kind's readiness lives in its own server, and a Ridgeback call
//! waits on one server at a time, so:
//! - sockets are asked of the network server in one call
//!   ([`super::socket::poll`]), which can wait there;
//! - pipes and terminals answer `io::OP_POLL` at once (their managers
//!   never keep it); other managers answer `ENOSYS` and their objects
//!   (regular files, directories, block devices) are always ready for
//!   what is asked, as POSIX says of regular files;
//! - a bad descriptor is `POLLNVAL`.
//!
//! When only sockets are polled, the one call to the network server waits
//! for the whole timeout: one message. When pipes or terminals are among
//! the descriptors and none is ready, the round is repeated until the
//! timeout, with a wait between rounds that doubles from
//! [`FIRST_WAIT_NS`] to [`LONGEST_WAIT_NS`] (a sleep, or the socket call's
//! own timeout when there are sockets): one call per descriptor per
//! round, and a pipe that becomes ready is seen at most
//! `LONGEST_WAIT_NS` late. A server that could keep a poll for several
//! managers at once would remove the rounds; that is left.
//!
//! What it is not: `select`, or edge-triggered.

use super::socket::{self, PollFd};
use super::{Errno, errno, fd_entry};
use protocols::net::{POLLIN, POLLNVAL, POLLOUT};
use protocols::unix::{self as ux, io};

/// The first and the longest wait between rounds over pipes and terminals.
pub const FIRST_WAIT_NS: u64 = 1_000_000;
pub const LONGEST_WAIT_NS: u64 = 50_000_000;

/// What a descriptor of `poll` is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Socket,
    /// A pipe or a terminal: its manager answers `io::OP_POLL`.
    Asked,
    /// Always ready, or bad (`revents` set once).
    Settled,
}

/// `poll(fds, timeout_ms)` (`None`: no end): how many entries have
/// events; each entry's `revents` says which.
pub fn poll(fds: &mut [PollFd], timeout_ms: Option<u64>) -> Result<usize, Errno> {
    let clock = crate::clock::Clock::new();
    let deadline_ns = timeout_ms.map(|ms| clock.now_ns().saturating_add(ms.saturating_mul(1_000_000)));
    let mut kinds = alloc::vec![Kind::Settled; fds.len()];
    for (p, kind) in fds.iter_mut().zip(kinds.iter_mut()) {
        p.revents = 0;
        match fd_entry(p.fd) {
            Ok((_, info)) if ux::mode::is_sock(info.file_type) => *kind = Kind::Socket,
            Ok((_, info)) if ux::mode::is_fifo(info.file_type) || ux::mode::is_chr(info.file_type) => {
                *kind = Kind::Asked
            }
            Ok(_) => p.revents = p.events & (POLLIN | POLLOUT),
            Err(_) => p.revents = POLLNVAL,
        }
    }
    let settled = fds.iter().filter(|p| p.revents != 0).count();
    let has_asked = kinds.contains(&Kind::Asked);
    let socket_at: alloc::vec::Vec<usize> = (0..fds.len()).filter(|&i| kinds[i] == Kind::Socket).collect();
    let mut sockets: alloc::vec::Vec<PollFd> =
        socket_at.iter().map(|&i| PollFd { fd: fds[i].fd, events: fds[i].events, revents: 0 }).collect();
    let mut wait_ns = FIRST_WAIT_NS;
    loop {
        let mut ready = settled;
        for (p, _) in fds.iter_mut().zip(&kinds).filter(|(_, k)| **k == Kind::Asked) {
            p.revents = ask(p.fd, p.events);
            if p.revents != 0 {
                ready += 1;
            }
        }
        let left_ns = deadline_ns.map(|d| d.saturating_sub(clock.now_ns()));
        // Sockets: only look when something is ready or time is up; wait
        // the whole timeout when nothing else needs asking again; else
        // wait one round's time at the network server.
        let socket_wait_ms = if ready > 0 || left_ns == Some(0) {
            Some(0)
        } else if !has_asked {
            timeout_ms
        } else {
            Some(left_ns.unwrap_or(u64::MAX).min(wait_ns).div_ceil(1_000_000))
        };
        if !sockets.is_empty() {
            ready += socket::poll(&mut sockets, socket_wait_ms)?;
            for (k, &i) in socket_at.iter().enumerate() {
                fds[i].revents = sockets[k].revents;
            }
        }
        if ready > 0 || !has_asked || left_ns == Some(0) {
            return Ok(ready);
        }
        if sockets.is_empty() {
            crate::sys::sleep_ns(left_ns.unwrap_or(u64::MAX).min(wait_ns));
        }
        wait_ns = (wait_ns * 2).min(LONGEST_WAIT_NS);
    }
}

/// One pipe's or terminal's events now (`io::OP_POLL`); a manager that
/// does not know the request has an object that is always ready. Through
/// `manager_call`, so a terminal whose manager was restarted is asked at
/// the new one.
fn ask(fd: super::Fd, events: u16) -> u16 {
    match super::manager_call(fd, [io::OP_POLL, 0, u64::from(events), 0], &[], &mut []) {
        Ok((w, _)) => w[0] as u16,
        Err(e) if e == errno::ENOSYS => events & (POLLIN | POLLOUT),
        Err(_) => POLLNVAL,
    }
}
