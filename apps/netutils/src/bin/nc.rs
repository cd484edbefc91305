//! nc: a TCP connection between standard input/output and a peer, like
//! netcat. `nc HOST PORT` connects; `nc -l PORT` (or `nc -l -p PORT`)
//! listens on every address and takes one connection.
//!
//! Both directions at once, the old netcat way: a child copies standard
//! input to the socket and then shuts the socket's sending side (the
//! peer reads the end of the stream), while the parent copies the socket
//! to standard output until the peer's end; then the child is stopped
//! and `nc` exits. Exit status 0 when the connection was made and ended
//! cleanly.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use netutils::http::parse_ipv4;
use netutils::net::{FAILURE, copy, report};
use protocols::unix::signal::SIGKILL;
use runtime::eprintln;
use runtime::unix::socket::{self, AF_INET, SHUT_WR, SO_REUSEADDR, SOCK_STREAM, SOL_SOCKET, SockAddr};
use runtime::unix::{self, Fd};

runtime::entry!(main);

const USAGE: &str = "usage: nc HOST PORT | nc -l [-p] PORT";

fn main(args: runtime::Args) -> i32 {
    let words: alloc::vec::Vec<&str> = args.iter().skip(1).filter(|w| *w != "-p").collect();
    let conn = match words.as_slice() {
        ["-l", port] => match port.parse::<u16>() {
            Ok(p) => listen(p),
            Err(_) => return usage(),
        },
        [host, port] => match (parse_ipv4(host), port.parse::<u16>()) {
            (Some(h), Ok(p)) => connect(SockAddr::new(h, p)),
            _ => return usage(),
        },
        _ => return usage(),
    };
    let fd = match conn {
        Ok(fd) => fd,
        Err(()) => return FAILURE,
    };
    shuttle(fd)
}

fn usage() -> i32 {
    eprintln!("{USAGE}");
    FAILURE
}

fn connect(to: SockAddr) -> Result<Fd, ()> {
    let fd = socket::socket(AF_INET, SOCK_STREAM, 0).map_err(|e| report("nc", "socket", e))?;
    socket::connect(fd, to).map_err(|e| report("nc", &alloc::format!("{to}"), e))?;
    Ok(fd)
}

fn listen(port: u16) -> Result<Fd, ()> {
    let fd = socket::socket(AF_INET, SOCK_STREAM, 0).map_err(|e| report("nc", "socket", e))?;
    let _ = socket::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, 1);
    socket::bind(fd, SockAddr::new([0; 4], port))
        .map_err(|e| report("nc", &alloc::format!("port {port}"), e))?;
    socket::listen(fd, 1).map_err(|e| report("nc", "listen", e))?;
    let (conn, _peer) = socket::accept(fd).map_err(|e| report("nc", "accept", e))?;
    let _ = unix::close(fd);
    Ok(conn)
}

/// Standard input to the socket in a child, the socket to standard
/// output here.
fn shuttle(fd: Fd) -> i32 {
    let child = match unix::fork() {
        Ok(0) => {
            let r = copy(0, fd);
            let _ = socket::shutdown(fd, SHUT_WR);
            unix::exit(if r.is_ok() { 0 } else { 1 });
        }
        Ok(pid) => pid,
        Err(e) => {
            report("nc", "fork", e);
            return FAILURE;
        }
    };
    let received = copy(fd, 1);
    // The peer is done sending. What standard input still has goes on
    // being sent, unless it is a terminal (which ends only when the user
    // says so): then the child is stopped.
    let from_terminal = unix::fstat(0).is_ok_and(|st| protocols::unix::mode::is_chr(st.mode));
    if from_terminal {
        let _ = unix::kill(child as i64, SIGKILL);
    }
    let sent = match unix::waitpid(child as i64, false) {
        Ok(Some((_, status))) => from_terminal || status.exit_code() == Some(0),
        _ => false,
    };
    let _ = unix::close(fd);
    match received {
        Ok(_) if sent => 0,
        Ok(_) => FAILURE,
        Err(e) => {
            report("nc", "read", e);
            FAILURE
        }
    }
}
