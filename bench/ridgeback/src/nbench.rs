//! nbench: seed 003's loopback TCP (`bench::n`) as a UNIX program on
//! Ridgeback: `nbench --mode classic|scalable [--samples N] [--sample-ms
//! N] [rr] [stream]`. Each workload runs with 1, 2 and 4 client
//! processes; each figure is a `BENCH {json}` line named
//! `n_<workload>_<clients>c_<N>cpu_<mode>` (`N`: the CPUs online) whose
//! counters are the network server's lock statistics over the figure
//! (`bench::n::LOCK_COUNTERS`), with a `#` line giving them as
//! `netstat -l` does; or `# FAILED <figure>: <reason>`. Exit status 1 if
//! any failed.
//!
//! What it is not: a way to switch modes. The mode is a boot option
//! (`net=`, docs/network.md); `--mode` says which one the boot was given,
//! and nbench checks it against the server's own report and fails rather
//! than name a figure after a mode it did not measure. `cargo xtask bench
//! --only n` boots the bench image once per mode and CPU count.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod platform;
mod unix_process;

use abi::InfoKey;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use bench::n::{self, NetIo, Workload};
use bench::r2::{Errno, Fd};
use bench::{Platform, harness};
use protocols::net::locks::Figures;
use runtime::unix::socket::{self, AF_INET, IPPROTO_TCP, SOCK_STREAM, SockAddr, TCP_NODELAY};
use runtime::{Args, sys, unix};
use unix_process::UnixProcess;

runtime::entry!(main);

const FIGURES: [&str; 2] = ["rr", "stream"];
const MODES: [&str; 2] = ["classic", "scalable"];
const LOOPBACK: [u8; 4] = [127, 0, 0, 1];

impl NetIo for UnixProcess {
    fn tcp_listen() -> Result<(Fd, u16), Errno> {
        let fd = socket::socket(AF_INET, SOCK_STREAM, 0)?;
        let bound = socket::bind(fd, SockAddr::new(LOOPBACK, 0))
            .and_then(|()| socket::listen(fd, 16))
            .and_then(|()| socket::getsockname(fd));
        match bound {
            Ok(addr) => Ok((fd, addr.port)),
            Err(e) => {
                let _ = unix::close(fd);
                Err(e)
            }
        }
    }

    fn tcp_accept(listener: Fd) -> Result<Fd, Errno> {
        socket::accept(listener).map(|(fd, _)| fd)
    }

    fn tcp_connect(port: u16) -> Result<Fd, Errno> {
        let fd = socket::socket(AF_INET, SOCK_STREAM, 0)?;
        match socket::connect(fd, SockAddr::new(LOOPBACK, port)) {
            Ok(()) => Ok(fd),
            Err(e) => {
                let _ = unix::close(fd);
                Err(e)
            }
        }
    }

    fn tcp_nodelay(fd: Fd) -> Result<(), Errno> {
        socket::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, 1)
    }

    fn lock_stats(reset: bool) -> Option<Figures> {
        let (w, text) = socket::lock_stats(reset).ok()?;
        let contended = text
            .lines()
            .find_map(|l| {
                l.split_once(" contended ").and_then(|(_, rest)| rest.split(' ').next()?.parse().ok())
            })
            .unwrap_or(0);
        Some(Figures {
            acquisitions: w[0],
            contended,
            spin_ns: w[1],
            hold_ns: w[2],
            elapsed_ns: w[3],
            cpus: sys::info(InfoKey::CpusOnline).max(1),
        })
    }
}

fn main(args: Args) -> i32 {
    let mut words: Vec<&str> = args.iter().skip(usize::from(args.is_unix())).collect();
    let mode = match take_mode(&mut words) {
        Ok(mode) => mode,
        Err(message) => {
            harness::failure::<UnixProcess>("options", &message);
            return 2;
        }
    };
    let (config, figures) = match harness::parse_options(words.into_iter(), &FIGURES) {
        Ok(parsed) => parsed,
        Err(message) => {
            harness::failure::<UnixProcess>("options", &message);
            return 2;
        }
    };
    let cpus = sys::info(InfoKey::CpusOnline) as usize;
    let names: Vec<(String, Workload, usize)> = figures
        .iter()
        .filter_map(|f| Workload::parse(f))
        .flat_map(|w| n::CLIENTS.map(|c| (n::figure_name(w, c, cpus, mode), w, c)))
        .collect();
    let fail_all = |reason: &str| {
        for (name, _, _) in &names {
            harness::failure::<UnixProcess>(name, reason);
        }
        1
    };
    if !unix::is_unix_process() {
        return fail_all("not a UNIX process: start it from the shell");
    }
    let report = match socket::lock_stats(false) {
        Ok((_, text)) => text,
        Err(e) => return fail_all(&format!("the network server's lock statistics: {}", e.name())),
    };
    let booted =
        report.lines().next().and_then(|l| l.strip_prefix("mode ")).and_then(|l| l.split(' ').next());
    if booted != Some(mode) {
        return fail_all(&format!(
            "the boot option net={mode} did not take effect: the server says mode {}",
            booted.unwrap_or("?")
        ));
    }
    harness::comment::<UnixProcess>(format_args!(
        "nbench on ridgeback: tsc_hz={} online_cpus={cpus} samples={} min_sample_ms={} {}",
        UnixProcess::tsc_hz(),
        config.sample_count,
        config.min_sample_ns / 1_000_000,
        report.lines().next().unwrap_or("")
    ));
    let mut failures = 0;
    for (name, workload, clients) in &names {
        let reads_before = server_reads();
        let before = KernelCounts::now();
        failures += usize::from(!n::report_figure::<UnixProcess>(name, *workload, *clients, &config));
        // What the figure cost the kernel, per second (divide by the
        // figure's rate for a transfer's share): docs/network.md explains
        // the modes with these.
        let after = KernelCounts::now();
        let secs = |v: u64| {
            v.saturating_mul(1_000_000_000) / after.uptime_ns.saturating_sub(before.uptime_ns).max(1)
        };
        let d = |i: abi::Counter| secs(after.counts[i as usize].saturating_sub(before.counts[i as usize]));
        harness::comment::<UnixProcess>(format_args!(
            "kernel {name}: calls_per_s={} interrupts_per_s={} switches_per_s={} messages_per_s={} handoffs_per_s={} copied_bytes_per_s={}",
            d(abi::Counter::KernelCalls),
            d(abi::Counter::Interrupts),
            d(abi::Counter::ContextSwitches),
            d(abi::Counter::Messages),
            d(abi::Counter::DirectHandoffs),
            d(abi::Counter::BytesCopied)
        ));
        // Reads by call against reads that took queued bytes from a
        // receive ring with no kernel entry (`net=scalable`).
        if let (Some(b), Some(a)) = (reads_before, server_reads()) {
            harness::comment::<UnixProcess>(format_args!(
                "reads {name}: calls={} ring_reads={} ring_bytes={}",
                a.0.saturating_sub(b.0),
                a.1.saturating_sub(b.1),
                a.2.saturating_sub(b.2)
            ));
        }
        if let Some(f) = UnixProcess::lock_stats(false) {
            let pct = |c: u64| format!("{}.{:02}%", c / 100, c % 100);
            harness::comment::<UnixProcess>(format_args!(
                "locks {name}: hold_all={} spin_all={} locks_per_s={} global_hold={} acquisitions={} contended={}",
                pct(f.hold_all_centi()),
                pct(f.spin_all_centi()),
                f.per_second(),
                pct(f.hold_global_centi()),
                f.acquisitions,
                f.contended
            ));
        }
    }
    i32::from(failures > 0)
}

/// The network server's read counts since boot (`netstat -l`): read
/// calls, reads served from receive rings, and their bytes.
fn server_reads() -> Option<(u64, u64, u64)> {
    let (_, text) = socket::lock_stats(false).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("reads: "))?;
    let mut numbers = line.split(|c: char| !c.is_ascii_digit()).filter(|w| !w.is_empty());
    let calls = numbers.next()?.parse().ok()?;
    let ring_reads = numbers.next()?.parse().ok()?;
    let ring_bytes = numbers.next()?.parse().ok()?;
    Some((calls, ring_reads, ring_bytes))
}

/// The kernel's event counters (all CPUs) and the time they were read.
struct KernelCounts {
    counts: [u64; abi::COUNTER_COUNT],
    uptime_ns: u64,
}

impl KernelCounts {
    fn now() -> KernelCounts {
        let mut counts = [0u64; abi::COUNTER_COUNT];
        let _ = sys::counters(&mut counts);
        KernelCounts { counts, uptime_ns: sys::info(InfoKey::UptimeNs) }
    }
}

/// Removes `--mode NAME` from `words` and returns the name.
fn take_mode(words: &mut Vec<&str>) -> Result<&'static str, String> {
    let Some(at) = words.iter().position(|w| *w == "--mode") else {
        return Err(format!("--mode is required (one of {MODES:?})"));
    };
    let value = words.get(at + 1).copied().ok_or("--mode needs a value")?;
    let mode = MODES
        .iter()
        .find(|m| **m == value)
        .ok_or_else(|| format!("--mode: {value:?} is not one of {MODES:?}"))?;
    words.drain(at..at + 2);
    Ok(mode)
}
