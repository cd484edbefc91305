//! The serial console of a test boot that talks with its guest while it
//! runs (the terminal restarts, the network, the wire): QEMU's standard
//! output read line by line on a thread of its own, and the next line
//! with a time limit (the session's end is `batch::SessionKey`'s). One copy of
//! what `terminal.rs`, `net.rs` and `wire.rs` each wrote out (the review
//! of issue 16 named the three loops).
//!
//! The profiler (`crate::profile`) reads its boot's console through it
//! too. What it is not: the boots that only wait for the end (`boot.rs`,
//! `crate::batch`), which read the whole output at once.
//!
//! Invariant: a line is sent without its line end and trailing blanks,
//! with every carriage return removed (the guest's terminal writes CR LF),
//! and the reader ends when QEMU closes its standard output or nobody
//! receives any more.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::Duration;

/// Read `stdout` (QEMU's serial console) on a thread; its lines arrive
/// on the receiver.
pub fn lines(stdout: ChildStdout) -> Receiver<String> {
    let (tx, rx) = mpsc::channel::<String>();
    thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        while matches!(reader.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
            if tx.send(clean(&buf)).is_err() {
                break;
            }
            buf.clear();
        }
    });
    rx
}

/// A serial line as the tests compare it.
fn clean(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).replace('\r', "").trim_end().to_string()
}

/// What [`next`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Line(String),
    /// Nothing within the wait; QEMU still runs.
    Quiet,
    /// QEMU has ended and every line it wrote was read.
    Ended,
}

/// The next line, waiting at most `wait`.
pub fn next(rx: &Receiver<String>, child: &mut Child, wait: Duration) -> Next {
    match rx.recv_timeout(wait) {
        Ok(line) => Next::Line(line),
        Err(RecvTimeoutError::Disconnected) => Next::Ended,
        Err(RecvTimeoutError::Timeout) => {
            if child.try_wait().ok().flatten().is_none() {
                return Next::Quiet;
            }
            // QEMU has ended: a line may still have come in meanwhile.
            match rx.try_recv() {
                Ok(line) => Next::Line(line),
                Err(_) => Next::Ended,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_lose_carriage_returns_and_trailing_blanks() {
        assert_eq!(clean(b"net-ready\r\n"), "net-ready");
        assert_eq!(clean(b"a\rb  \n"), "ab");
        assert_eq!(clean(b"  lead kept\n"), "  lead kept");
        assert_eq!(clean(b"\xff\n"), "\u{fffd}");
    }
}
