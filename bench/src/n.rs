//! Benchmark N: seed 003, the OpenVMS TCP/IP Scalable Kernel,
//! `docs/benchmarks.md` section N. TCP over the loopback interface with
//! 1, 2 and 4 client processes, on both systems, through the [`NetIo`]
//! calls.
//!
//! One figure is:
//!
//! - `clients` client processes and as many server processes (forked
//!   once per figure), each pair joined by one TCP connection over
//!   127.0.0.1 (`TCP_NODELAY` on both ends, so a 32-byte request is not
//!   held back by Nagle's rule on either system);
//! - the measuring process hands each client its share of an operation
//!   count through a pipe and waits for every client's "done" byte on
//!   another: the timed section covers all clients working at once;
//! - `rr` ([`Workload::Rr`]): one operation is one *transaction*, a
//!   [`RR_BYTES`]-byte request and the server's [`RR_BYTES`]-byte answer;
//!   the figure is nanoseconds per transaction over all clients together
//!   (transactions per second = 10^9 / figure);
//! - `stream` ([`Workload::Stream`]): one operation is one
//!   [`STREAM_CHUNK_BYTES`] write; a client announces its chunk count,
//!   writes them, and waits for the server's one-byte acknowledgement
//!   after the server has read them all; the figure is MB/s (10^6 bytes
//!   per second) over all clients together.
//!
//! Lock statistics (Ridgeback only, [`NetIo::lock_stats`]): reset before
//! each figure and read after it, so they cover the figure's calibration
//! and samples; they travel in the `BENCH` line as the figure's counters
//! ([`LOCK_COUNTERS`]), not per operation but for the whole interval.
//!
//! CPUs: the figure's name says how many CPUs the processes could use;
//! Linux restricts them with its affinity mask ([`NetIo::limit_cpus`]),
//! Ridgeback boots with `cpus=N`.

use crate::harness::{self, Config, Measurement, Unit};
use crate::r2::{Errno, Fd, Unix};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// The request and the answer of one `rr` transaction.
pub const RR_BYTES: usize = 32;
/// One `stream` write.
pub const STREAM_CHUNK_BYTES: usize = 64 << 10;
/// The client counts measured.
pub const CLIENTS: [usize; 3] = [1, 2, 4];
/// The go-pipe word that ends a client.
const STOP: u64 = u64::MAX;

/// What a figure measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    Rr,
    Stream,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Rr => "rr",
            Workload::Stream => "stream",
        }
    }

    pub fn unit(self) -> Unit {
        match self {
            Workload::Rr => Unit::NanosPerOp,
            Workload::Stream => Unit::MegabytesPerSecond { bytes_per_op: STREAM_CHUNK_BYTES as u64 },
        }
    }

    pub fn parse(word: &str) -> Option<Workload> {
        match word {
            "rr" => Some(Workload::Rr),
            "stream" => Some(Workload::Stream),
            _ => None,
        }
    }
}

/// `n_<workload>_<clients>c_<cpus>cpu_<system>`: `system` is Ridgeback's
/// mode (`classic`, `scalable`) or `linux`.
pub fn figure_name(workload: Workload, clients: usize, cpus: usize, system: &str) -> String {
    format!("n_{}_{clients}c_{cpus}cpu_{system}", workload.name())
}

/// The names of a figure's lock counters, in the order of
/// [`lock_counter_values`]: hold % and spin % over all locks and the
/// global lock's hold %, in hundredths of a percent; acquisitions per
/// second; acquisitions that spun; all acquisitions.
pub const LOCK_COUNTERS: [&str; 6] = [
    "lock_hold_all_centi",
    "lock_spin_all_centi",
    "lock_global_hold_centi",
    "locks_per_s",
    "lock_contended",
    "locks",
];

/// The counters' values for `f`.
pub fn lock_counter_values(f: &protocols::net::locks::Figures) -> [u64; 6] {
    [
        f.hold_all_centi(),
        f.spin_all_centi(),
        f.hold_global_centi(),
        f.per_second(),
        f.contended,
        f.acquisitions,
    ]
}

/// The calls N needs on top of [`Unix`]'s.
pub trait NetIo: Unix {
    /// A TCP socket listening on 127.0.0.1 at a free port: (socket, port).
    fn tcp_listen() -> Result<(Fd, u16), Errno>;
    /// The next connection of a listener.
    fn tcp_accept(listener: Fd) -> Result<Fd, Errno>;
    /// A connection to 127.0.0.1:`port`.
    fn tcp_connect(port: u16) -> Result<Fd, Errno>;
    /// `TCP_NODELAY` on a connection.
    fn tcp_nodelay(fd: Fd) -> Result<(), Errno>;
    /// Keep the calling process (and what it forks afterwards) on the
    /// first `cpus` CPUs, or on all of them for `None`. Systems that
    /// cannot do nothing (their boot has the CPUs the figure names).
    fn limit_cpus(cpus: Option<usize>) {
        let _ = cpus;
    }
    /// The network stack's lock statistics since the last reset (and
    /// then, when `reset`, start them again). `None`: the system keeps
    /// none.
    fn lock_stats(reset: bool) -> Option<protocols::net::locks::Figures> {
        let _ = reset;
        None
    }
}

fn write_all<P: NetIo>(fd: Fd, mut bytes: &[u8]) -> Result<(), Errno> {
    while !bytes.is_empty() {
        let n = P::write(fd, bytes)?;
        if n == 0 {
            return Err(protocols::unix::errno::EPIPE);
        }
        bytes = &bytes[n..];
    }
    Ok(())
}

/// Fills `buf`; `Ok(false)` at the end of the stream before any byte.
fn read_exact<P: NetIo>(fd: Fd, buf: &mut [u8]) -> Result<bool, Errno> {
    let mut done = 0;
    while done < buf.len() {
        let n = P::read(fd, &mut buf[done..])?;
        if n == 0 {
            return if done == 0 { Ok(false) } else { Err(protocols::unix::errno::ECONNRESET) };
        }
        done += n;
    }
    Ok(true)
}

/// A server process: answer one connection until its end. Exit status 0
/// when the client ended it cleanly.
fn serve<P: NetIo>(listener: Fd, workload: Workload) -> i32 {
    let Ok(c) = P::tcp_accept(listener) else { return 20 };
    let _ = P::close(listener);
    let _ = P::tcp_nodelay(c);
    let mut buf = alloc::vec![0u8; STREAM_CHUNK_BYTES];
    loop {
        match workload {
            Workload::Rr => match read_exact::<P>(c, &mut buf[..RR_BYTES]) {
                Ok(true) => {
                    if write_all::<P>(c, &buf[..RR_BYTES]).is_err() {
                        return 21;
                    }
                }
                Ok(false) => return 0,
                Err(_) => return 22,
            },
            Workload::Stream => {
                let mut header = [0u8; 8];
                match read_exact::<P>(c, &mut header) {
                    Ok(true) => {}
                    Ok(false) => return 0,
                    Err(_) => return 23,
                }
                let mut left = u64::from_le_bytes(header) * STREAM_CHUNK_BYTES as u64;
                while left > 0 {
                    let want = (left as usize).min(buf.len());
                    match P::read(c, &mut buf[..want]) {
                        Ok(0) | Err(_) => return 24,
                        Ok(n) => left -= n as u64,
                    }
                }
                if write_all::<P>(c, &[1]).is_err() {
                    return 25;
                }
            }
        }
    }
}

/// A client process: connect, then do each count the go pipe brings and
/// say so on the done pipe (byte 1), until [`STOP`]. A client that fails
/// says so too (byte 0), so the measuring process never waits for it.
fn client<P: NetIo>(port: u16, go: Fd, done: Fd, workload: Workload) -> i32 {
    let code = client_loop::<P>(port, go, done, workload);
    if code != 0 {
        let _ = write_all::<P>(done, &[0]);
    }
    code
}

fn client_loop<P: NetIo>(port: u16, go: Fd, done: Fd, workload: Workload) -> i32 {
    let Ok(c) = P::tcp_connect(port) else { return 30 };
    let _ = P::tcp_nodelay(c);
    let mut buf = alloc::vec![0x5au8; STREAM_CHUNK_BYTES];
    loop {
        let mut word = [0u8; 8];
        if !matches!(read_exact::<P>(go, &mut word), Ok(true)) {
            return 31;
        }
        let count = u64::from_le_bytes(word);
        if count == STOP {
            let _ = P::close(c);
            return 0;
        }
        for i in 0..count {
            match workload {
                Workload::Rr => {
                    buf[0] = i as u8;
                    if write_all::<P>(c, &buf[..RR_BYTES]).is_err() {
                        return 32;
                    }
                    if !matches!(read_exact::<P>(c, &mut buf[..RR_BYTES]), Ok(true)) || buf[0] != i as u8 {
                        return 33;
                    }
                }
                Workload::Stream => {
                    if i == 0 && write_all::<P>(c, &count.to_le_bytes()).is_err() {
                        return 34;
                    }
                    if write_all::<P>(c, &buf).is_err() {
                        return 35;
                    }
                }
            }
        }
        if workload == Workload::Stream && count > 0 && !matches!(read_exact::<P>(c, &mut buf[..1]), Ok(true))
        {
            return 36;
        }
        if write_all::<P>(done, &[1]).is_err() {
            return 37;
        }
    }
}

/// Measures one figure and prints its `BENCH` line (with the lock
/// statistics as its counters when the system keeps them) or a `#
/// FAILED` line. Returns whether it was measured.
pub fn report_figure<P: NetIo>(name: &str, workload: Workload, clients: usize, config: &Config) -> bool {
    match measure::<P>(workload, clients, config) {
        Ok(m) => {
            harness::report::<P>(name, workload.unit(), &m);
            true
        }
        Err(reason) => {
            harness::failure::<P>(name, &reason);
            false
        }
    }
}

fn measure<P: NetIo>(workload: Workload, clients: usize, config: &Config) -> Result<Measurement, String> {
    let (listener, port) = P::tcp_listen().map_err(|e| format!("listen: {e:?}"))?;
    let mut children: Vec<u64> = Vec::new();
    let mut gos: Vec<Fd> = Vec::new();
    let (done_r, done_w) = P::pipe().map_err(|e| format!("pipe: {e:?}"))?;
    let mut failed: Option<String> = None;
    for _ in 0..clients {
        match P::fork() {
            Ok(0) => {
                // Only the listener: a server holding the other ends would
                // keep a dead client's pipes from reporting its end.
                let _ = P::close(done_r);
                let _ = P::close(done_w);
                for &go in &gos {
                    let _ = P::close(go);
                }
                P::exit(serve::<P>(listener, workload))
            }
            Ok(pid) => children.push(pid),
            Err(e) => {
                failed = Some(format!("fork: {e:?}"));
                break;
            }
        }
        let (go_r, go_w) = match P::pipe() {
            Ok(p) => p,
            Err(e) => {
                failed = Some(format!("pipe: {e:?}"));
                break;
            }
        };
        match P::fork() {
            Ok(0) => {
                let _ = P::close(go_w);
                let _ = P::close(done_r);
                let _ = P::close(listener);
                for &go in &gos {
                    let _ = P::close(go);
                }
                P::exit(client::<P>(port, go_r, done_w, workload))
            }
            Ok(pid) => children.push(pid),
            Err(e) => {
                failed = Some(format!("fork: {e:?}"));
                break;
            }
        }
        let _ = P::close(go_r);
        gos.push(go_w);
    }
    let _ = P::close(listener);
    let _ = P::close(done_w);
    let mut broken = false;
    let mut measurement = None;
    if failed.is_none() {
        // One untimed round first (connections warm, every process has
        // run), so the harness does not calibrate on a cold first round.
        let mut byte = [0u8; 1];
        for &go in &gos {
            broken |= write_all::<P>(go, &4u64.to_le_bytes()).is_err();
        }
        for _ in 0..gos.len() {
            broken |= broken || !matches!(read_exact::<P>(done_r, &mut byte), Ok(true)) || byte[0] != 1;
        }
        let _ = P::lock_stats(true);
        let m = harness::measure::<P>(workload.unit(), config, |iterations| {
            if broken {
                return;
            }
            let n = gos.len() as u64;
            for (i, &go) in gos.iter().enumerate() {
                let share = iterations / n + u64::from((i as u64) < iterations % n);
                broken |= write_all::<P>(go, &share.to_le_bytes()).is_err();
            }
            // Every client that took a count answers, or has ended (its
            // done pipe's end then closes, and the read sees the end).
            let mut byte = [0u8; 1];
            for _ in 0..gos.len() {
                if broken {
                    break;
                }
                broken |= !matches!(read_exact::<P>(done_r, &mut byte), Ok(true)) || byte[0] != 1;
            }
        });
        measurement = Some(match P::lock_stats(false) {
            Some(f) => m.with_counters(&LOCK_COUNTERS, &lock_counter_values(&f)),
            None => m,
        });
    }
    for &go in &gos {
        let _ = write_all::<P>(go, &STOP.to_le_bytes());
        let _ = P::close(go);
    }
    let _ = P::close(done_r);
    let mut statuses = Vec::new();
    for pid in children {
        statuses.push(P::wait(pid));
    }
    if let Some(reason) = failed {
        return Err(reason);
    }
    if broken {
        return Err(format!("a client or server stopped; exit statuses {statuses:?}"));
    }
    if let Some(bad) = statuses.iter().find(|s| !matches!(s, Ok(Some(0)))) {
        return Err(format!("a client or server failed: {bad:?} (all: {statuses:?})"));
    }
    measurement.ok_or_else(|| String::from("not measured"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_workload_clients_cpus_and_system() {
        assert_eq!(figure_name(Workload::Rr, 2, 2, "scalable"), "n_rr_2c_2cpu_scalable");
        assert_eq!(figure_name(Workload::Stream, 4, 4, "classic"), "n_stream_4c_4cpu_classic");
        assert_eq!(figure_name(Workload::Rr, 1, 2, "linux"), "n_rr_1c_2cpu_linux");
        assert_eq!(Workload::parse("rr"), Some(Workload::Rr));
        assert_eq!(Workload::parse("stream"), Some(Workload::Stream));
        assert_eq!(Workload::parse("x"), None);
    }

    #[test]
    fn lock_counters_in_the_seeds_terms() {
        let f = protocols::net::locks::Figures {
            acquisitions: 1000,
            contended: 10,
            spin_ns: 100,
            hold_ns: 500,
            elapsed_ns: 1000,
            cpus: 2,
        };
        assert_eq!(lock_counter_values(&f), [2500, 500, 5000, 1_000_000_000, 10, 1000]);
    }
}
