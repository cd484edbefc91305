//! sfuzz: the server fuzzer (issue 16). An ordinary UNIX program (test
//! image only) that sends random and mutated messages to every server and
//! driver an unprivileged process can reach — the monitor, memfs (its
//! directory service and its handles: a file, a directory, `/dev/null`),
//! the VM manager, the terminal, the console driver, a pipe manager (both
//! ends), the disk file system (ext2fs, a file on `/disk`), the block
//! drivers (`/dev/vda`, `/dev/ram0`) and the network server (a UDP and a
//! TCP socket) — and checks after every batch that each still answers a
//! well-formed request.
//!
//! How a batch goes: the coordinator (this process, root) opens one of
//! each object afresh and forks a worker, which drops to uid 1000 in a
//! process group of its own, inherits the descriptors (as a daemon that
//! opened its devices before dropping privilege would) and sends the
//! batch's messages ([`plan::message`]: valid headers with bad fields,
//! real handles of the wrong server, forged neighbours of real handles,
//! truncated and garbage paths, buffers that are unmapped, in the kernel,
//! non-canonical, read-only, past the heap's break, running off the end
//! of its memory or longer than any lease; one-way messages where calls
//! are expected; calls from children killed while they wait, so servers
//! hold reply handles of dead callers). A worker that makes no progress
//! for [`STALL_NS`] (a call a server keeps by design, such as a read of
//! an empty pipe) is killed with its children: that is one more caller
//! dying mid-call, not a failure. With `--kernel`, each batch also runs
//! the kernel fuzzer (`tchild fuzz`, and `tchild fuzz-blocking` every
//! tenth batch) beside the worker.
//!
//! Then a checker child ([`check`]) asks every server something it must
//! answer: after every batch, or after every K with `--check-every K`
//! (long runs: the check costs as much as a few hundred messages). A
//! check that fails, or one that has not finished after
//! [`CHECK_TIMEOUT_NS`] (a server crashed or hangs), fails the run: it
//! prints the seed, the batches since the last check, and the messages
//! the last worker had sent around its last report (regenerated from the
//! seed). At the end, no process, open-file description, memfs handle,
//! socket or memfs name may be left over ([`leak`]: a failure names the
//! entries new and gone).
//!
//! With `--lanes W`, W coordinators (forked, root) run at once, lane `l`
//! taking batches `l`, `l + W`, ...: one worker keeps one CPU busy (it
//! waits for one server at a time), so more lanes use more CPUs and the
//! servers see concurrent callers. A failure found with lanes may need
//! the other lanes' messages; `--lanes 1 --check-every 1` repeats the
//! sequential run of the same seed. The final leak check is the first
//! coordinator's, after every lane has ended.
//!
//! Usage: `sfuzz [--seed S] [--batches N | --seconds T] [--size M]
//! [--check-every K] [--lanes W] [--ops N] [--kernel]`. `--ops N`: the
//! operation set (`plan`'s module note): 1, the default, is every
//! operation list as it was when the recorded seeds were found, so they
//! replay as they did; 2 adds the positional calls (`io::OP_PREAD`,
//! `OP_PWRITE`, branch `robust`). A failure's lines name the set. It prints the test
//! protocol's lines (`abi::test_protocol`) and `sfuzz:` lines with the
//! counts and where the time went; exit status 0 when nothing failed.
//!
//! What it is not: a check of the answers' contents (the servers' own
//! tests do that); blocking operations are sent only from doomed children.
//! Writes to `/dev/vda`'s blocks are left out (its file system is mounted).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod check;
mod leak;
mod plan;
mod report;
mod worker;

use abi::Counter;
use abi::test_protocol::{FAIL, OK, START, SUMMARY};
use alloc::format;
use alloc::string::String;
use protocols::unix::{errno, open_flags as of, signal};
use report::{DETAILS, DONE, DOOMED, DOOMED_ENDS, Report, TIMING};
use runtime::msg::{self, Queue};
use runtime::unix::{self, socket};
use runtime::{Args, println, sys};

runtime::entry!(main);

/// A worker that reports no progress for this long is killed (it waits
/// in a call a server keeps by design). Not a failure, so it need not be
/// generous; a slow host only makes more workers die mid-call.
const STALL_NS: u64 = 1_000_000_000;
/// A health check that has not finished after this long has found a hung
/// server. Generous: the host may be loaded (tests must not depend on speed).
const CHECK_TIMEOUT_NS: u64 = 120_000_000_000;
/// At most this many lanes (each is a coordinator, a worker, its doomed
/// child, a checker and two kernel fuzzers at a time).
const MAX_LANES: u64 = 8;
/// Kernel calls each `tchild fuzz` beside a worker makes.
const KERNEL_CALLS_PER_BATCH: u64 = 2000;

/// A batch that once made a failure, sent again at the end of every run
/// (one lane, without the kernel fuzzer, a health check after it), so
/// that the CI run repeats it and the final leak check judges it too.
struct Regression {
    seed: u64,
    batch: u64,
    /// The messages that made it, as (index, target, operation): checked
    /// against [`plan::message`] before the batch is sent, so that a change
    /// of the plan cannot turn the regression into a batch that no longer
    /// does what it did (a test that cannot fail).
    messages: &'static [(u64, usize, u64)],
    /// The operation set the seed was run with (`--ops`).
    ops: u64,
    what: &'static str,
}

const REGRESSIONS: &[Regression] = &[Regression {
    seed: 44015,
    batch: 0,
    messages: &[(59, 0, protocols::unix::monitor::OP_CHDIR), (321, 0, protocols::unix::monitor::OP_MKDIR)],
    ops: 1,
    what: "message 59 moves the worker to /tmp (`chdir`), message 321 makes the directory `x` there (a relative \
           path): /tmp/x outlived the run until the worker kept its working directory inside its own",
}];

impl Regression {
    /// Ok, or which of its messages the plan no longer sends.
    fn still_sends_its_messages(&self) -> Result<(), String> {
        for &(index, target, op) in self.messages {
            let m = plan::message(self.seed, self.batch, index, self.ops);
            if (m.target, m.op) != (target, op) {
                return Err(format!(
                    "message {index} is now {m:?}, not operation {op} to {}",
                    plan::TARGETS[target].name
                ));
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
struct Options {
    seed: u64,
    /// `--ops N`: the operation set (`plan::message`), 1 unless given.
    ops: u64,
    batches: Option<u64>,
    seconds: Option<u64>,
    size: u64,
    kernel: bool,
    /// `--check-every K`: the health check after every K batches (and
    /// after the last), not after each.
    check_every: u64,
    /// `--lanes W`: W coordinators at once, each with its own worker,
    /// kernel fuzzers and checks (lane `l` runs batches `l`, `l + W`, ...).
    lanes: u64,
    /// `--no-leak-check`: skip the final check (another load runs beside).
    leak_check: bool,
    /// The worker's directory (`%` in [`plan::PATHS`]): made by the
    /// coordinator, writable by the worker's user.
    dir: &'static str,
    /// The file on `/disk` every batch opens (removed at the end).
    disk_file: &'static str,
}

fn parse(args: &Args) -> Result<Options, String> {
    let mut o = Options {
        seed: 1,
        ops: 1,
        batches: None,
        seconds: None,
        size: 400,
        kernel: false,
        check_every: 1,
        lanes: 1,
        leak_check: true,
        dir: "/tmp",
        disk_file: "/disk/sfuzz",
    };
    // Argument 0 is the program's name.
    let mut i = 1;
    while let Some(a) = args.get(i) {
        let mut value = || {
            i += 1;
            args.get(i).and_then(|v| v.parse::<u64>().ok()).ok_or_else(|| format!("{a} needs a number"))
        };
        match a {
            "--seed" => o.seed = value()?,
            "--ops" => o.ops = value()?,
            "--batches" => o.batches = Some(value()?),
            "--seconds" => o.seconds = Some(value()?),
            "--size" => o.size = value()?,
            "--kernel" => o.kernel = true,
            "--check-every" => o.check_every = value()?,
            "--lanes" => o.lanes = value()?,
            "--no-leak-check" => o.leak_check = false,
            other => return Err(format!("unknown argument {other:?}")),
        }
        i += 1;
    }
    if o.check_every == 0 {
        return Err(String::from("--check-every needs a number above 0"));
    }
    if !(1..=plan::OP_SETS).contains(&o.ops) {
        return Err(format!("--ops needs a number from 1 to {}", plan::OP_SETS));
    }
    if !(1..=MAX_LANES).contains(&o.lanes) {
        return Err(format!("--lanes needs a number from 1 to {MAX_LANES}"));
    }
    if o.batches.is_none() && o.seconds.is_none() {
        o.batches = Some(20);
    }
    Ok(o)
}

fn kernel_calls() -> u64 {
    let mut counters = [0u64; 32];
    match sys::counters(&mut counters) {
        Ok(_) => counters[Counter::KernelCalls as usize],
        Err(_) => 0,
    }
}

/// Open one object of each kind for a batch (as root).
fn open_batch(dir: &str, disk_file: &str) -> worker::Fds {
    let open = |path: &str, flags: u64| unix::open(path, flags, 0o666).ok();
    let (pipe_read, pipe_write) = match unix::pipe() {
        Ok((r, w)) => (Some(r), Some(w)),
        Err(_) => (None, None),
    };
    worker::Fds {
        file: open(&format!("{dir}/f"), of::O_RDWR | of::O_CREAT),
        dir: open(dir, of::O_RDONLY),
        null: open("/dev/null", of::O_RDWR),
        pipe_read,
        pipe_write,
        disk_file: open(disk_file, of::O_RDWR | of::O_CREAT),
        vda: open("/dev/vda", of::O_RDONLY),
        ram0: open("/dev/ram0", of::O_RDWR),
        udp: socket::socket(socket::AF_INET, socket::SOCK_DGRAM, 0).ok(),
        tcp: socket::socket(socket::AF_INET, socket::SOCK_STREAM, 0).ok(),
    }
}

fn close_batch(fds: &worker::Fds) {
    for fd in [
        fds.file,
        fds.dir,
        fds.null,
        fds.pipe_read,
        fds.pipe_write,
        fds.disk_file,
        fds.vda,
        fds.ram0,
        fds.udp,
        fds.tcp,
    ]
    .into_iter()
    .flatten()
    {
        // The worker may have closed the handle behind the monitor's
        // back: the monitor must cope, whatever the manager answers.
        let _ = unix::close(fd);
    }
}

/// How a child the coordinator watched ended.
enum Watched {
    /// It exited or was killed; its status, and the last report's words
    /// (other than the details from [`TIMING`] on, which go to `details`).
    Ended(Option<unix::WaitStatus>, [u64; 4]),
    /// No report for the allowed time: killed, with its process group.
    Stalled([u64; 4]),
}

/// Wait for `child`, reading its reports from `queue`; kill it (and its
/// group) when no report came for `quiet_ns`.
fn watch(child: u64, queue: Queue, quiet_ns: u64, details: &mut [[u64; 4]; DETAILS]) -> Watched {
    let mut last = [0u64; 4];
    let mut last_at = unix::clock_ns();
    let mut buf = [0u8; 64];
    let mut take = |m: [u64; 4], last: &mut [u64; 4]| {
        if let Some(d) = details.get_mut((m[0] as usize).wrapping_sub(TIMING as usize)) {
            *d = m;
        } else {
            *last = m;
        }
    };
    loop {
        while let Ok(Some(r)) = msg::try_receive(queue, &mut buf) {
            take(r.message, &mut last);
            last_at = unix::clock_ns();
        }
        match unix::waitpid(child as i64, true) {
            Ok(Some((_, status))) => {
                while let Ok(Some(r)) = msg::try_receive(queue, &mut buf) {
                    take(r.message, &mut last);
                }
                return Watched::Ended(Some(status), last);
            }
            Ok(None) => {}
            Err(_) => return Watched::Ended(None, last),
        }
        if unix::clock_ns().saturating_sub(last_at) > quiet_ns {
            let _ = unix::kill(-(child as i64), signal::SIGKILL);
            let _ = unix::kill(child as i64, signal::SIGKILL);
            let _ = unix::waitpid(child as i64, false);
            return Watched::Stalled(last);
        }
        unix::sleep_ns(1_000_000);
    }
}

#[derive(Default)]
struct Totals {
    batches: u64,
    sent: u64,
    doomed: u64,
    /// Messages the kernel delivered (the rest it refused: bad buffers...).
    delivered: u64,
    stalled: u64,
    kernel_fuzz_calls: u64,
    reachable: u64,
    /// Where the time went, in ns (printed with the totals): opening the
    /// batch's objects and starting the kernel fuzzers, the worker (of
    /// which: finding its targets, doomed messages, the other messages),
    /// waiting for the kernel fuzzers after the worker, the checks.
    open_ns: u64,
    worker_ns: u64,
    resolve_ns: u64,
    doomed_ns: u64,
    other_ns: u64,
    kernel_wait_ns: u64,
    check_ns: u64,
    /// Health checks run (one after every `--check-every` batches, and
    /// one after the last).
    checks: u64,
    /// Doomed children: ns forking, ns letting them call, ns killing and
    /// reaping; how many were killed, how many had exited first.
    doomed_detail: [u64; 5],
}

/// Where `reachable` is in [`Totals::words`] (or-ed, not added).
const REACHABLE_WORD: usize = 6;

impl Totals {
    const WORDS: usize = 20;

    /// Every count, in a fixed order (a lane sends them to the first
    /// coordinator through a pipe).
    fn words(&self) -> [u64; Self::WORDS] {
        let d = self.doomed_detail;
        [
            self.batches,
            self.sent,
            self.doomed,
            self.delivered,
            self.stalled,
            self.kernel_fuzz_calls,
            self.reachable,
            self.open_ns,
            self.worker_ns,
            self.resolve_ns,
            self.doomed_ns,
            self.other_ns,
            self.kernel_wait_ns,
            self.check_ns,
            self.checks,
            d[0],
            d[1],
            d[2],
            d[3],
            d[4],
        ]
    }

    fn from_words(w: [u64; Self::WORDS]) -> Totals {
        Totals {
            batches: w[0],
            sent: w[1],
            doomed: w[2],
            delivered: w[3],
            stalled: w[4],
            kernel_fuzz_calls: w[5],
            reachable: w[REACHABLE_WORD],
            open_ns: w[7],
            worker_ns: w[8],
            resolve_ns: w[9],
            doomed_ns: w[10],
            other_ns: w[11],
            kernel_wait_ns: w[12],
            check_ns: w[13],
            checks: w[14],
            doomed_detail: [w[15], w[16], w[17], w[18], w[19]],
        }
    }

    /// Another lane's counts added in (targets reached: either's).
    fn add(&mut self, other: &Totals) {
        let mut w = self.words();
        for (i, (a, b)) in w.iter_mut().zip(other.words()).enumerate() {
            *a = if i == REACHABLE_WORD { *a | b } else { a.saturating_add(b) };
        }
        *self = Totals::from_words(w);
    }
}

/// One batch, without its check; Ok(the index of the worker's last
/// progress report), Err(the failure's report).
fn batch(o: &Options, b: u64, report: &Report, totals: &mut Totals) -> Result<u64, String> {
    let dir = o.dir;
    let t0 = unix::clock_ns();
    let fds = open_batch(dir, o.disk_file);
    let kernel_children = if o.kernel {
        let seed = o.seed ^ b.wrapping_mul(0x9e37_79b9);
        let mut pids = alloc::vec::Vec::new();
        if let Ok(p) = sys::spawn("tchild", &format!("fuzz {KERNEL_CALLS_PER_BATCH} {seed}")) {
            pids.push((p, KERNEL_CALLS_PER_BATCH));
        }
        if b.is_multiple_of(10)
            && let Ok(p) = sys::spawn("tchild", &format!("fuzz-blocking 8 {seed}"))
        {
            pids.push((p, 0));
        }
        pids
    } else {
        alloc::vec::Vec::new()
    };
    let worker = match unix::fork() {
        Ok(0) => unix::exit(worker::run(o.seed, o.ops, b, o.size, &fds, report, dir)),
        Ok(pid) => pid,
        Err(e) => return Err(format!("fork of the worker: {}", errno::name(e))),
    };
    let t1 = unix::clock_ns();
    let mut details = [[0u64; 4]; DETAILS];
    let watched = watch(worker, report.queue, STALL_NS, &mut details);
    // Whatever of its group outlived it (a doomed child, when another
    // lane's worker killed this one): it would wait for ever.
    let _ = unix::kill(-(worker as i64), signal::SIGKILL);
    let at = |tag: u64| details[(tag - TIMING) as usize];
    let timing = at(TIMING);
    for (i, v) in at(DOOMED)[1..].iter().chain(&at(DOOMED_ENDS)[1..3]).enumerate() {
        totals.doomed_detail[i] += v;
    }
    let t2 = unix::clock_ns();
    totals.open_ns += t1.saturating_sub(t0);
    totals.worker_ns += t2.saturating_sub(t1);
    totals.resolve_ns += timing[1];
    totals.doomed_ns += timing[2];
    totals.other_ns += timing[3];
    let (from, sent, counts) = match watched {
        Watched::Ended(status, last) => {
            if status.as_ref().and_then(|s| s.exit_code()).is_some_and(|c| c != 0) {
                return Err(format!(
                    "the worker of batch {b} exited {:?}",
                    status.and_then(|s| s.exit_code())
                ));
            }
            if last[0] == DONE {
                totals.reachable |= last[3];
                (o.size, last[1], last[2])
            } else {
                (last[1], last[2], last[3])
            }
        }
        Watched::Stalled(last) => {
            totals.stalled += 1;
            (last[1], last[2], last[3])
        }
    };
    totals.sent += sent;
    totals.doomed += counts & 0xffff_ffff;
    totals.delivered += counts >> 32;
    for (pid, calls) in kernel_children {
        match sys::wait(Some(pid)) {
            Ok((_, abi::ExitStatus::Exited(0))) => totals.kernel_fuzz_calls += calls,
            other => return Err(format!("the kernel fuzzer beside batch {b} ended {other:?}")),
        }
    }
    close_batch(&fds);
    let t3 = unix::clock_ns();
    totals.kernel_wait_ns += t3.saturating_sub(t2);
    totals.batches += 1;
    Ok(from)
}

/// The health check after batches `first..=last` (`from`: where the last
/// worker's last progress report was); Err(the failure's report).
fn check_after(
    o: &Options,
    first: u64,
    last: u64,
    from: u64,
    report: &Report,
    present: u64,
    totals: &mut Totals,
) -> Result<(), String> {
    let t3 = unix::clock_ns();
    let b = last;
    // The check, in a child: a hung server hangs it, not us.
    let checker = match unix::fork() {
        Ok(0) => unix::exit(check::run(present, report)),
        Ok(pid) => pid,
        Err(e) => {
            return Err(format!("fork of the checker after batch {b}: {}", errno::name(e)));
        }
    };
    let checked = watch(checker, report.queue, CHECK_TIMEOUT_NS, &mut [[0; 4]; DETAILS]);
    totals.check_ns += unix::clock_ns().saturating_sub(t3);
    let failed = match checked {
        Watched::Ended(Some(status), _) if status.exit_code() == Some(0) => None,
        Watched::Ended(status, last) => {
            let which = status
                .and_then(|s| s.exit_code())
                .map_or(last[1] as usize, |c| (c as usize).wrapping_sub(10));
            Some(format!("failed: {}", check::CHECKS.get(which).map_or("?", |c| c.0)))
        }
        Watched::Stalled(last) => Some(format!(
            "no answer within {} s: {}",
            CHECK_TIMEOUT_NS / 1_000_000_000,
            check::CHECKS.get(last[1] as usize).map_or("?", |c| c.0)
        )),
    };
    totals.checks += 1;
    match failed {
        None => Ok(()),
        Some(what) => {
            // With checks every K batches, any of them may have done it:
            // `--check-every 1` with the same seed names the batch.
            let batches = if first == last { format!("batch {b}") } else { format!("batches {first}..={b}") };
            let mut why = format!(
                "seed {} (--ops {}) {batches}: health check {what}; the last worker's (batch {b}) last messages:",
                o.seed, o.ops
            );
            let last = from.min(o.size);
            for index in last.saturating_sub(8)..(last + 8).min(o.size) {
                let m = plan::message(o.seed, b, index, o.ops);
                why.push_str(&format!("\n  message {index} to {}: {m:?}", plan::TARGETS[m.target].name));
            }
            Err(why)
        }
    }
}

/// One lane: batches `lane`, `lane + lanes`, `lane + 2 × lanes`, ...
/// (every batch when there is one lane) until the run's batches or
/// seconds are done, with a health check after every `check_every` of
/// them and after the last. Prints a failure when it happens; returns the
/// lane's counts and whether nothing failed.
fn run_lane(o: &Options, lane: u64, present: u64, started: u64) -> (Totals, bool) {
    let mut totals = Totals::default();
    let Ok(queue) = msg::open_queue(64, true) else {
        println!("sfuzz: FAIL lane {lane}: cannot open a queue");
        return (totals, false);
    };
    let report = Report { pid: sys::getpid(), queue };
    let mut result = Ok(());
    let mut last_print = started;
    // (the first batch not checked yet, the last worker's progress).
    let mut unchecked: Option<(u64, u64)> = None;
    let mut last_batch = lane;
    for i in 0.. {
        let b = lane + i * o.lanes;
        let elapsed_s = unix::clock_ns().saturating_sub(started) / 1_000_000_000;
        if o.batches.is_some_and(|n| b >= n) || o.seconds.is_some_and(|s| elapsed_s >= s) {
            break;
        }
        result = batch(o, b, &report, &mut totals).and_then(|from| {
            unchecked = Some((unchecked.map_or(b, |(first, _)| first), from));
            match unchecked {
                Some((first, from)) if (i + 1).is_multiple_of(o.check_every) => {
                    unchecked = None;
                    check_after(o, first, b, from, &report, present, &mut totals)
                }
                _ => Ok(()),
            }
        });
        if result.is_err() {
            break;
        }
        last_batch = b;
        if unix::clock_ns().saturating_sub(last_print) > 30_000_000_000 {
            last_print = unix::clock_ns();
            let which = if o.lanes == 1 { String::new() } else { format!("lane {lane}: ") };
            println!(
                "sfuzz: {elapsed_s} s: {which}{} batches, {} server messages, {} kernel fuzz calls",
                totals.batches, totals.sent, totals.kernel_fuzz_calls
            );
        }
    }
    // The last batches' check, when the run ended between two.
    if result.is_ok()
        && let Some((first, from)) = unchecked
    {
        result = check_after(o, first, last_batch, from, &report, present, &mut totals);
    }
    let _ = msg::close_queue(queue);
    match result {
        Ok(()) => (totals, true),
        Err(why) => {
            println!("sfuzz: FAIL {why}");
            (totals, false)
        }
    }
}

/// `o.lanes` lanes at once, each a forked coordinator (root) that sends
/// its counts back through a pipe when it is done; their sum, and
/// whether nothing failed. More lanes keep more CPUs busy: one worker
/// waits for one server at a time.
fn run_lanes(o: &Options, present: u64, started: u64) -> (Totals, bool) {
    let mut is_ok = true;
    let mut lanes = alloc::vec::Vec::new();
    for lane in 0..o.lanes {
        let (from_lane, to_parent) = match unix::pipe() {
            Ok(p) => p,
            Err(e) => {
                println!("sfuzz: FAIL a pipe for lane {lane}: {}", errno::name(e));
                is_ok = false;
                break;
            }
        };
        match unix::fork() {
            Ok(0) => {
                let _ = unix::close(from_lane);
                let (totals, lane_ok) = run_lane(o, lane, present, started);
                let bytes: alloc::vec::Vec<u8> =
                    totals.words().iter().flat_map(|w| w.to_le_bytes()).collect();
                let mut sent = 0;
                while sent < bytes.len() {
                    match unix::write(to_parent, &bytes[sent..]) {
                        Ok(n) if n > 0 => sent += n,
                        _ => break,
                    }
                }
                unix::exit(i32::from(!lane_ok));
            }
            Ok(pid) => {
                let _ = unix::close(to_parent);
                lanes.push((lane, pid, from_lane));
            }
            Err(e) => {
                println!("sfuzz: FAIL fork of lane {lane}: {}", errno::name(e));
                let _ = unix::close(from_lane);
                let _ = unix::close(to_parent);
                is_ok = false;
                break;
            }
        }
    }
    let mut totals = Totals::default();
    for (lane, pid, from_lane) in lanes {
        let mut bytes = [0u8; Totals::WORDS * 8];
        let mut got = 0;
        while got < bytes.len() {
            match unix::read(from_lane, &mut bytes[got..]) {
                Ok(n) if n > 0 => got += n,
                _ => break,
            }
        }
        let _ = unix::close(from_lane);
        let status = unix::waitpid(pid as i64, false);
        if got == bytes.len() {
            let mut words = [0u64; Totals::WORDS];
            for (w, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
                let mut b = [0u8; 8];
                b.copy_from_slice(chunk);
                *w = u64::from_le_bytes(b);
            }
            totals.add(&Totals::from_words(words));
        } else {
            println!("sfuzz: FAIL lane {lane} ended without its counts: {status:?}");
            is_ok = false;
        }
        match status {
            Ok(Some((_, s))) if s.exit_code() == Some(0) => {}
            // Its failure is printed already.
            Ok(Some((_, s))) if s.exit_code() == Some(1) => is_ok = false,
            other => {
                println!("sfuzz: FAIL lane {lane} ended {other:?}");
                is_ok = false;
            }
        }
    }
    (totals, is_ok)
}

fn main(args: Args) -> i32 {
    let mut o = match parse(&args) {
        Ok(o) => o,
        Err(why) => {
            println!("sfuzz: {why}");
            println!(
                "usage: sfuzz [--seed S] [--batches N | --seconds T] [--size M] [--check-every K] [--lanes W] [--ops N] [--kernel] [--no-leak-check]"
            );
            return 2;
        }
    };
    let name = "sfuzz::servers_survive_random_messages";
    println!("{START}{name}");
    // Before the run's directory is made: it must be gone at the end.
    let before = if o.leak_check { leak::settled_counts(None) } else { (0, 0, 0, 0, 0) };
    // memfs's names too, so that a leak is named (an unreadable tree is
    // the check's failure, said at the end).
    let names_before = if o.leak_check { leak::memfs_names() } else { Ok(alloc::vec::Vec::new()) };
    let dir = format!("/tmp/sfuzz.{}", unix::getpid());
    let _ = unix::mkdir(&dir, 0o777);
    let _ = unix::chmod(&dir, 0o777);
    o.dir = dir.leak();
    o.disk_file = format!("/disk/sfuzz.{}", unix::getpid()).leak();
    let present = check::present();
    let absent: alloc::vec::Vec<&str> =
        check::CHECKS.iter().enumerate().filter(|(i, _)| present & (1 << i) == 0).map(|(_, c)| c.0).collect();
    println!(
        "sfuzz: seed {}, operation set {}, batches of {} messages, {} lane(s), a health check after every {} batches of a lane and after its last; checks not run here (absent before fuzzing): {absent:?}",
        o.seed, o.ops, o.size, o.lanes, o.check_every
    );
    let calls_before = kernel_calls();
    let started = unix::clock_ns();
    let (mut totals, mut is_ok) =
        if o.lanes == 1 { run_lane(&o, 0, present, started) } else { run_lanes(&o, present, started) };
    for reg in REGRESSIONS {
        let (seed, batch) = (reg.seed, reg.batch);
        if let Err(why) = reg.still_sends_its_messages() {
            println!("sfuzz: FAIL regression batch {batch} of seed {seed} is stale: {why}");
            is_ok = false;
            continue;
        }
        // Lane `batch` of a one-lane run of one batch is that batch alone.
        let r = Options {
            seed,
            ops: reg.ops,
            batches: Some(batch + 1),
            seconds: None,
            kernel: false,
            check_every: 1,
            lanes: 1,
            ..o
        };
        let (counts, passed) = run_lane(&r, batch, present, unix::clock_ns());
        totals.add(&counts);
        is_ok &= passed;
        println!(
            "sfuzz: regression batch {batch} of seed {seed}: {}",
            if passed { "passed" } else { "FAILED" }
        );
        if !passed {
            println!("sfuzz:   (it once found: {})", reg.what);
        }
    }
    let reached: alloc::vec::Vec<&str> = plan::TARGETS
        .iter()
        .enumerate()
        .filter(|(i, _)| totals.reachable & (1 << i) != 0)
        .map(|(_, t)| t.name)
        .collect();
    println!(
        "sfuzz: seed {}: {} batches, {} server messages ({} delivered, the others refused by the kernel; {} from children killed mid-call), {} workers killed when stalled, {} health checks, {} kernel fuzz calls, {} kernel calls by every process, {} s; targets reached: {reached:?}",
        o.seed,
        totals.batches,
        totals.sent,
        totals.delivered,
        totals.doomed,
        totals.stalled,
        totals.checks,
        totals.kernel_fuzz_calls,
        kernel_calls().saturating_sub(calls_before),
        unix::clock_ns().saturating_sub(started) / 1_000_000_000
    );
    let ms = |ns: u64| ns / 1_000_000;
    println!(
        "sfuzz: time (ms): opening and starting the kernel fuzzers {}, workers {} (finding targets {}, doomed messages {}, other messages {}), waiting for the kernel fuzzers {}, checks {}",
        ms(totals.open_ns),
        ms(totals.worker_ns),
        ms(totals.resolve_ns),
        ms(totals.doomed_ns),
        ms(totals.other_ns),
        ms(totals.kernel_wait_ns),
        ms(totals.check_ns)
    );
    let d = totals.doomed_detail;
    println!(
        "sfuzz: doomed children: {} killed, {} answered before the kill; time (ms): forking {}, letting them call {}, killing and reaping {}",
        d[3],
        d[4],
        ms(d[0]),
        ms(d[1]),
        ms(d[2])
    );
    let (mut passed, mut failed) = (0, 0);
    if is_ok {
        passed += 1;
        println!("{OK}{name}");
    } else {
        failed += 1;
        println!("{FAIL}{name}: seed {} (see the sfuzz: FAIL lines)", o.seed);
    }
    let _ = unix::unlink(o.disk_file);
    // The run's directory, with whatever the workers made in it (it is
    // theirs: mode 0777). Left behind, every run kept a file in /tmp.
    if let Err(why) = leak::remove_tree(o.dir, 0) {
        println!("sfuzz: {} not removed: {why}", o.dir);
    }
    let leak_test = "sfuzz::nothing_left_over";
    if !o.leak_check {
        println!("{SUMMARY}{passed} passed, {failed} failed");
        return i32::from(failed != 0);
    }
    println!("{START}{leak_test}");
    let after = leak::settled_counts(Some(before));
    let checked = names_before.and_then(|names_before| {
        let names_after = leak::memfs_names()?;
        leak::compare((before, &names_before), (after, &names_after))
    });
    match checked {
        Ok(()) => {
            passed += 1;
            println!("{OK}{leak_test}");
        }
        Err(why) => {
            failed += 1;
            println!("{FAIL}{leak_test}: {why}");
        }
    }
    println!("{SUMMARY}{passed} passed, {failed} failed");
    i32::from(failed != 0)
}
