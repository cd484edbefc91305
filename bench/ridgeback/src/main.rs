//! ridgebench: the benchmark program on Ridgeback, started as init by
//! `cargo xtask bench` (`init=ridgebench -- [options] [figure...]`).
//!
//! What it is: the Ridgeback build of the `bench` library's workloads (the
//! very loops the Linux build runs) plus the message-system round trips
//! of seed 001's Table 1 ([`messages`]). It prints one `BENCH {json}` line
//! per figure (`bench::harness`), with the kernel's event counters over
//! the timed operations.
//!
//! Figures: `getpid`, `copy` (4 KiB and 1 MiB), `yield` (two processes
//! taking turns with `yield` on one CPU; only with one CPU online, since
//! Ridgeback cannot pin a process), `call` (Call + ReplyWait, 32 bytes),
//! `send` (Send + ReceiveData each way, 32 bytes), `data` (SendData of
//! 4096 bytes from an unaligned buffer, copied, and from a page-aligned
//! page, lent copy-on-write; a 32-byte reply), or `all` (the default).
//! Options: `--samples N`, `--sample-ms N`. A figure's name ends in the
//! number of CPUs online (`_1cpu`, `_2cpu`) where the placement matters.
//!
//! Roles, by the first argument word:
//! - none of the below, as init: the *supervisor*. It starts a copy of
//!   itself as the worker (`run ...`), waits for it and powers the machine
//!   off with status 0 only when the worker exited with 0. So a panic in a
//!   figure (the runtime's handler exits with 101) still ends the boot
//!   at once instead of leaving an idle machine running into the timeout;
//! - `run`: the worker, which measures (also what a non-init start does);
//! - `helper ROLE ...`: the other end of a figure: `yield`, or one of the
//!   message servers (`messages::Server`).
//!
//! A figure that cannot be measured prints `# FAILED <figure>: <reason>`
//! (`bench::harness::FAILED_PREFIX`) and the worker goes on with the next,
//! then exits with 1.

#![no_std]
#![no_main]

extern crate alloc;

mod messages;
mod platform;

use abi::{Counter, ExitStatus, InfoKey, Pid};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use bench::harness::{self, Config, Measurement};
use bench::workloads;
use core::sync::atomic::{AtomicBool, Ordering};
use messages::{Connection, Server};
use platform::Ridgeback;
use runtime::msg::{Page, Queue};
use runtime::{Args, sys};

runtime::entry!(main);

/// This program's name in the boot image: the helpers are copies of it.
pub const PROGRAM: &str = "ridgebench";
/// First argument word of a helper.
pub const HELPER: &str = "helper";
/// First argument word of the worker.
const WORKER: &str = "run";

const FIGURES: &[&str] = &["getpid", "copy", "yield", "call", "send", "data"];

fn main(args: Args) -> i32 {
    match args.get(0) {
        Some(HELPER) => helper(&args),
        Some(WORKER) => run(args.iter().skip(1)),
        // Only init has no parent.
        _ if sys::getppid().is_none() => supervise(&args),
        _ => run(args.iter()),
    }
}

/// The supervisor: runs the worker and powers off with its verdict.
fn supervise(args: &Args) -> i32 {
    let worker_args = format!("{WORKER} {}", args.as_str());
    let status = match sys::spawn(PROGRAM, &worker_args) {
        Ok(pid) => match sys::wait(Some(pid)) {
            Ok((_, ExitStatus::Exited(0))) => 0,
            Ok((_, status)) => {
                comment(format_args!("the worker ended: {status:?}"));
                1
            }
            Err(e) => {
                comment(format_args!("wait for the worker: {}", e.name()));
                1
            }
        },
        Err(e) => {
            comment(format_args!("cannot start the worker: {}", e.name()));
            1
        }
    };
    let _ = sys::shutdown(status);
    // Not init after all (shutdown refused): just end.
    status as i32
}

fn comment(args: core::fmt::Arguments<'_>) {
    harness::comment::<Ridgeback>(args);
}

fn failed(figure: &str, reason: &str) {
    harness::failure::<Ridgeback>(figure, reason);
}

/// The worker's options.
struct Options {
    config: Config,
    figures: Vec<&'static str>,
}

fn parse_options<'a>(words: impl Iterator<Item = &'a str>) -> Result<Options, String> {
    harness::parse_options(words, FIGURES).map(|(config, figures)| Options { config, figures })
}

/// The worker: measures every figure asked for.
fn run<'a>(words: impl Iterator<Item = &'a str>) -> i32 {
    let options = match parse_options(words) {
        Ok(options) => options,
        Err(message) => {
            failed("options", &message);
            return 2;
        }
    };
    let config = &options.config;
    let cpus = sys::info(InfoKey::CpusOnline);
    comment(format_args!(
        "bench on ridgeback: tsc_hz={} online_cpus={cpus} samples={} min_sample_ms={}",
        sys::info(InfoKey::TscHz),
        config.sample_count,
        config.min_sample_ns / 1_000_000
    ));
    let buffers = take_buffers();
    let mut client_queue: Option<Queue> = None;
    let mut failures = 0;
    for &figure in &options.figures {
        // Where it ran: a figure's speed under TCG can depend on the vCPU.
        comment(format_args!("{figure}: starts on cpu {}", sys::info(InfoKey::CurrentCpu)));
        let result = match figure {
            "getpid" => {
                workloads::getpid::<Ridgeback>(config);
                Ok(())
            }
            "copy" => {
                buffers.copy_source.fill(0xa5);
                for (label, len_bytes) in [("4KiB", 4 << 10), ("1MiB", 1 << 20)] {
                    let name = format!("copy_{label}");
                    let (source, destination) =
                        (&buffers.copy_source[..len_bytes], &mut buffers.copy_destination[..len_bytes]);
                    workloads::copy_bandwidth::<Ridgeback>(&name, config, source, destination);
                }
                Ok(())
            }
            "yield" => yield_pair(config, cpus),
            "call" | "send" | "data" => {
                let queue = match client_queue {
                    Some(queue) => Ok(queue),
                    None => messages::client_queue().map_err(|e| e.name()),
                };
                queue.and_then(|queue| {
                    client_queue = Some(queue);
                    message_figure(figure, config, cpus, queue, buffers)
                })
            }
            _ => unreachable!("parse_options accepts only FIGURES"),
        };
        if let Err(reason) = result {
            failed(figure, reason);
            failures += 1;
        }
    }
    i32::from(failures > 0)
}

/// Two processes taking turns with `yield` on one CPU.
fn yield_pair(config: &Config, cpus: u64) -> Result<(), &'static str> {
    if cpus != 1 {
        // Ridgeback cannot pin a process: with two CPUs, the two would run
        // side by side and `yield` would switch nothing.
        comment(format_args!("yield: needs one CPU online (boot with cpus=1); skipped on {cpus}"));
        return Ok(());
    }
    let peer = sys::spawn(PROGRAM, "helper yield").map_err(|e| e.name())?;
    let measurement = workloads::yield_pair::<Ridgeback>("yield_pair_1cpu", config);
    let _ = sys::kill(peer);
    let _ = sys::wait(Some(peer));
    // Each round trip is two switches; far fewer means the peer never ran
    // and the figure measured a bare kernel entry.
    if switches_per_op(&measurement) < 1 {
        return Err("the yielding peer did not run: fewer than one context switch per round trip");
    }
    Ok(())
}

/// Whole context switches per timed operation, from the kernel counters.
fn switches_per_op(measurement: &Measurement) -> u64 {
    let name = abi::COUNTER_NAMES[Counter::ContextSwitches as usize];
    let switches = measurement.counters().find(|(n, _)| *n == name).map_or(0, |(_, v)| v);
    let ops = measurement.iterations * measurement.samples().len() as u64;
    switches / ops.max(1)
}

/// The R1 round trips against a server started for the figure.
fn message_figure(
    figure: &str,
    config: &Config,
    cpus: u64,
    queue: Queue,
    buffers: &mut Buffers,
) -> Result<(), &'static str> {
    let server = match figure {
        "call" => Server::Call,
        "send" => Server::Send,
        _ => Server::Data,
    };
    let mut connection = Connection::start(PROGRAM, server, queue)?;
    match server {
        Server::Call | Server::Send => {
            let name = format!("msg_{figure}_32B_{cpus}cpu");
            workloads::ping_pong::<Ridgeback>(&name, config, &mut connection);
        }
        Server::Data => {
            // Off a page boundary: the kernel copies it.
            let unaligned = &mut buffers.unaligned[UNALIGNED_OFFSET..UNALIGNED_OFFSET + PAGE_BYTES];
            let name = format!("msg_senddata_4KiB_copy_{cpus}cpu");
            workloads::data_ping_pong::<Ridgeback>(&name, config, &mut connection, unaligned);
            // One whole aligned page: the kernel lends it copy-on-write.
            // The workload writes a new sequence number into it before each
            // send, as a producer of fresh data would.
            let name = format!("msg_senddata_4KiB_cow_{cpus}cpu");
            workloads::data_ping_pong::<Ridgeback>(&name, config, &mut connection, &mut buffers.lent.0);
        }
    }
    connection.stop()
}

/// A helper: the other end of a figure.
fn helper(args: &Args) -> i32 {
    let role = args.get(1).unwrap_or("");
    if role == "yield" {
        // Killed by the client when the figure is done.
        loop {
            sys::yield_now();
        }
    }
    let Some(server) = Server::from_role(role) else {
        comment(format_args!("ridgebench: unknown helper role {role:?}"));
        return 100;
    };
    let number = |i: usize| args.get(i).and_then(|word| word.parse::<u64>().ok());
    let (Some(client), Some(queue)) = (number(2), number(3)) else {
        comment(format_args!("ridgebench: {role} needs the client's pid and queue"));
        return 100;
    };
    messages::serve(server, Pid(client), Queue(queue as u32), &mut take_buffers().server)
}

const PAGE_BYTES: usize = abi::layout::PAGE_SIZE as usize;
/// Where the copied SendData buffer starts inside `Buffers::unaligned`.
const UNALIGNED_OFFSET: usize = 64;

/// Every large buffer of the program, in its BSS (the runtime's heap is
/// 256 KiB; the 1 MiB copy needs two of 1 MiB).
///
/// The small buffers sit *between* the two copy buffers on purpose: QEMU's
/// soft TLB is direct-mapped, 256 entries of 4 KiB at first, so two
/// buffers exactly 1 MiB apart map every source page and its destination
/// page to the same entry and evict each other on each access. That made
/// the copy 13 times slower under TCG (210 instead of 2800 MB/s), a figure
/// of the buffers' addresses and not of the system (see
/// docs/benchmarks.md). Four pages between them put the pairs in different
/// entries.
#[repr(C, align(4096))]
struct Buffers {
    copy_source: [u8; 1 << 20],
    /// Two pages, so that a page-sized buffer off a page boundary fits.
    unaligned: [u8; 2 * PAGE_BYTES],
    /// The page the client lends with SendData.
    lent: Page,
    /// The page a data server receives into.
    server: Page,
    copy_destination: [u8; 1 << 20],
}

// `align` takes only a literal: this ties it to the page size.
const _: () = assert!(core::mem::align_of::<Buffers>() == PAGE_BYTES);

static mut BUFFERS: Buffers = Buffers {
    copy_source: [0; 1 << 20],
    unaligned: [0; 2 * PAGE_BYTES],
    lent: Page::zeroed(),
    server: Page::zeroed(),
    copy_destination: [0; 1 << 20],
};
static BUFFERS_TAKEN: AtomicBool = AtomicBool::new(false);

/// The buffers, once per process (a second call panics).
fn take_buffers() -> &'static mut Buffers {
    assert!(!BUFFERS_TAKEN.swap(true, Ordering::AcqRel), "the buffers are taken once");
    let buffers = &raw mut BUFFERS;
    // SAFETY: the flag above lets this run once, so the returned reference
    // is the only one to BUFFERS for the life of the process (which has a
    // single thread).
    unsafe { &mut *buffers }
}
