//! soak: the soak load (issue 16), a UNIX program of the test image that
//! `cargo xtask soak --minutes N` runs on 4 CPUs. Five lanes run in
//! parallel, each a forked child repeating its operation until the time
//! is up:
//! - `pipelines`: a file of seeded bytes (sizes from 0 to 1 MiB) through
//!   `sh -c "cat F | cat | cat | sha256sum; sha256sum < F; cat F | wc -c"`:
//!   the two checksums must agree and the count must be the size;
//! - `churn`: fork and exec `/bin/true`, a child's exit code, and a pipe
//!   at each size in turn ([`PIPE_SIZES`]: empty, one byte, around a page,
//!   around the pipe's 64 KiB, 1 MiB) written by a child and checked
//!   (length and FNV-1a) by the reader;
//! - `files`: create, write, read back and compare, delete, on `/tmp`
//!   (memfs) and `/disk` (ext2fs) by turns, sizes as the pipelines';
//! - `fuzz`: `/bin/sfuzz` for two batches with a new seed each time
//!   (its health checks on, its own leak check off: the other lanes run);
//! - `restarts`: a restartable driver killed through init (`service
//!   kill`, as a fault would end it), then, once init has started it
//!   again, a seeded block written and read back through the new one.
//!   The driver is the RAM disk: no other lane uses it; `virtio-blk`
//!   holds `/disk`, whose ext2 manager does not remount, and the network
//!   server does not find a restarted `virtio-net` (docs/reliability.md).
//!   Each kill comes after the driver ran past init's quick-death limit,
//!   or init would rightly give it up.
//!
//! Before the lanes start, one round of each warms the caches (memfs,
//! ext2fs's buffers, servers' heaps); then the baseline is taken: free
//! memory, frames shared, kernel processes, UNIX processes, open-file
//! descriptions, memfs handles, sockets. At the end, once the lanes are
//! reaped and the figures have settled, each must be back: equal, except
//! free memory, which may be lower by at most [`MEMORY_SLACK_BYTES`] (the
//! caches' growth: ext2fs's buffer cache and the servers' heaps keep what
//! they took). Prints `soak:` lines with operations, errors and leaks,
//! and the test protocol's lines; exit status 0 when no operation failed
//! and nothing leaked.
//!
//! Usage: `soak --seconds S`. Only drivers init restarts are killed
//! (the `restarts` lane): the servers hold the system's state and are not
//! restarted, so a killed one would end the session.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use abi::InfoKey;
use abi::test_protocol::{FAIL, OK, START, SUMMARY};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::{errno, open_flags as of};
use runtime::msg::{self, Queue};
use runtime::unix::{self, Fd};
use runtime::{Args, println, sys};

runtime::entry!(main);

/// Sizes of files and pipeline inputs, in turn.
const SIZES: [usize; 9] = [0, 1, 511, 4096, 4097, 65_536, 100_000, 300_000, 1 << 20];
/// Sizes of pipe transfers, in turn: every edge of a page and of the
/// pipe's buffer (`protocols::unix::pipe::CAPACITY_BYTES`).
const PIPE_SIZES: [usize; 13] =
    [0, 1, 2, 511, 4095, 4096, 4097, 65_535, 65_536, 65_537, 131_072, 300_001, 1 << 20];
/// Free memory at the end may be this much below the baseline: the
/// servers' heaps (memfs's file data and tree, the monitor's tables,
/// net's socket buffers) are zero-filled by the kernel on first touch and
/// never given back, so they keep the most the run needed at once.
/// ext2fs's buffers are allocated at mount, before the baseline. A leak
/// per operation (a page per pipe or per process) is thousands of pages.
const MEMORY_SLACK_BYTES: u64 = 4 << 20;

const LANES: [&str; 5] = ["pipelines", "churn", "files", "fuzz", "restarts"];

type OpResult = Result<(), String>;

fn name(e: protocols::unix::Errno) -> &'static str {
    errno::name(e)
}

/// Seeded bytes (xorshift), the same for a (seed, size).
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

fn write_all(fd: Fd, mut data: &[u8]) -> OpResult {
    while !data.is_empty() {
        let n = unix::write(fd, data).map_err(|e| format!("write: {}", name(e)))?;
        if n == 0 {
            return Err("write wrote nothing".into());
        }
        data = &data[n..];
    }
    Ok(())
}

fn read_to_end(fd: Fd) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65_536];
    loop {
        let n = unix::read(fd, &mut buf).map_err(|e| format!("read: {}", name(e)))?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

fn make_file(path: &str, data: &[u8]) -> OpResult {
    let fd = unix::open(path, of::O_WRONLY | of::O_CREAT | of::O_TRUNC, 0o644)
        .map_err(|e| format!("{path}: {}", name(e)))?;
    let r = write_all(fd, data);
    let _ = unix::close(fd);
    r
}

fn file_contents(path: &str) -> Result<Vec<u8>, String> {
    let fd = unix::open(path, of::O_RDONLY, 0).map_err(|e| format!("{path}: {}", name(e)))?;
    let r = read_to_end(fd);
    let _ = unix::close(fd);
    r
}

/// Run `argv` (a program path and its arguments) and wait: its exit code.
fn run(argv: &[&str]) -> Result<u32, String> {
    match unix::fork() {
        Ok(0) => {
            let e = unix::execv(argv[0], argv);
            println!("soak: exec {}: {}", argv[0], name(e));
            unix::exit(127);
        }
        Ok(child) => match unix::waitpid(child as i64, false) {
            Ok(Some((_, status))) => {
                status.exit_code().ok_or_else(|| format!("{} ended by signal {:?}", argv[0], status.signal()))
            }
            other => Err(format!("wait for {}: {other:?}", argv[0])),
        },
        Err(e) => Err(format!("fork: {}", name(e))),
    }
}

fn pipelines(dir: &str, k: u64) -> OpResult {
    let size = SIZES[(k % SIZES.len() as u64) as usize];
    let input = format!("{dir}/in");
    make_file(&input, &bytes(k, size))?;
    let (a, b, c) = (format!("{dir}/a"), format!("{dir}/b"), format!("{dir}/c"));
    let script = format!(
        "cat {input} | cat | cat | sha256sum > {a}; sha256sum < {input} > {b}; cat {input} | wc -c > {c}"
    );
    let code = run(&["/bin/sh", "-c", &script])?;
    if code != 0 {
        return Err(format!("the pipelines exited {code}"));
    }
    let (sum_a, sum_b, count) = (file_contents(&a)?, file_contents(&b)?, file_contents(&c)?);
    let hex = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_hexdigit()).count();
    if hex(&sum_a) != 64 || sum_a[..64] != sum_b[..64] {
        return Err(format!(
            "{size} bytes: checksums differ: {:?} and {:?}",
            String::from_utf8_lossy(&sum_a),
            String::from_utf8_lossy(&sum_b)
        ));
    }
    let counted = core::str::from_utf8(&count).ok().and_then(|t| t.trim().parse::<usize>().ok());
    if counted != Some(size) {
        return Err(format!("wc -c counted {:?} of {size} bytes", String::from_utf8_lossy(&count)));
    }
    for p in [&input, &a, &b, &c] {
        let _ = unix::unlink(p);
    }
    Ok(())
}

fn churn(_dir: &str, k: u64) -> OpResult {
    let code = run(&["/bin/true"])?;
    if code != 0 {
        return Err(format!("/bin/true exited {code}"));
    }
    let want = (k % 200) as i32 + 1;
    match unix::fork() {
        Ok(0) => unix::exit(want),
        Ok(child) => match unix::waitpid(child as i64, false) {
            Ok(Some((_, s))) if s.exit_code() == Some(want as u32) => {}
            other => return Err(format!("a child exiting {want} gave {other:?}")),
        },
        Err(e) => return Err(format!("fork: {}", name(e))),
    }
    let size = PIPE_SIZES[(k % PIPE_SIZES.len() as u64) as usize];
    let data = bytes(k ^ 0x5eed, size);
    let (r, w) = unix::pipe().map_err(|e| format!("pipe: {}", name(e)))?;
    let writer = match unix::fork() {
        Ok(0) => {
            let _ = unix::close(r);
            let ok = write_all(w, &data).is_ok();
            unix::exit(if ok { 0 } else { 1 });
        }
        Ok(pid) => pid,
        Err(e) => return Err(format!("fork: {}", name(e))),
    };
    let _ = unix::close(w);
    let got = read_to_end(r);
    let _ = unix::close(r);
    let status = unix::waitpid(writer as i64, false);
    let got = got?;
    if !matches!(status, Ok(Some((_, s))) if s.exit_code() == Some(0)) {
        return Err(format!("the pipe's writer of {size} bytes ended {status:?}"));
    }
    if got.len() != size || fnv(&got) != fnv(&data) {
        return Err(format!(
            "a pipe of {size} bytes gave {} bytes, checksum {}",
            got.len(),
            fnv(&got) == fnv(&data)
        ));
    }
    Ok(())
}

fn files(dir: &str, k: u64) -> OpResult {
    let root = if k.is_multiple_of(2) { "/tmp" } else { "/disk" };
    let size = SIZES[((k / 2) % SIZES.len() as u64) as usize];
    let path = format!("{root}/soak.{}.{k}", dir.rsplit('.').next().unwrap_or("x"));
    let data = bytes(k ^ 0xf11e, size);
    make_file(&path, &data)?;
    let back = file_contents(&path)?;
    unix::unlink(&path).map_err(|e| format!("unlink {path}: {}", name(e)))?;
    if back.len() != size || fnv(&back) != fnv(&data) {
        return Err(format!(
            "{path}: wrote {size} bytes, read back {} (checksum equal: {})",
            back.len(),
            back == data
        ));
    }
    Ok(())
}

/// Held (an `O_EXCL` file in `/tmp`) by the `fuzz` lane while sfuzz runs
/// and by the `restarts` lane from its kill until the new driver serves:
/// sfuzz's health checks read `/dev/ram0`, which has no driver for a
/// moment while init starts the new one.
const RESTART_LOCK: &str = "/tmp/soak.restart-lock";

/// Made by the `restarts` lane while it waits for [`RESTART_LOCK`]: the
/// `fuzz` lane, which would otherwise take the lock again as soon as it
/// lets it go, waits while it is there.
const RESTART_WANTED: &str = "/tmp/soak.restart-wanted";

/// Run `f` holding [`RESTART_LOCK`]; `first`: ask the other lane to let
/// this one have it next ([`RESTART_WANTED`]).
fn with_restart_lock(first: bool, f: impl FnOnce() -> OpResult) -> OpResult {
    if first {
        let _ = unix::open(RESTART_WANTED, of::O_WRONLY | of::O_CREAT, 0o600).map(unix::close);
    } else {
        // Bounded like the lock below.
        for _ in 0..12_000 {
            if unix::stat(RESTART_WANTED).is_err() {
                break;
            }
            unix::sleep_ns(50_000_000);
        }
    }
    // Bounded (10 minutes of 50 ms waits) only so that a lane that died
    // holding the lock cannot hang the other.
    let mut taken = false;
    for _ in 0..12_000 {
        match unix::open(RESTART_LOCK, of::O_WRONLY | of::O_CREAT | of::O_EXCL, 0o600) {
            Ok(fd) => {
                let _ = unix::close(fd);
                taken = true;
                break;
            }
            Err(errno::EEXIST) => unix::sleep_ns(50_000_000),
            Err(e) => return Err(format!("{RESTART_LOCK}: {}", name(e))),
        }
    }
    if first {
        let _ = unix::unlink(RESTART_WANTED);
    }
    if !taken {
        return Err(format!("{RESTART_LOCK} was held for 10 minutes"));
    }
    let r = f();
    let _ = unix::unlink(RESTART_LOCK);
    r
}

fn fuzz(dir: &str, k: u64) -> OpResult {
    with_restart_lock(false, || fuzz_once(dir, k))
}

fn fuzz_once(dir: &str, k: u64) -> OpResult {
    // Its lines go to a file: they speak the test protocol, and the soak's
    // own lines are the ones its boot is judged by.
    let seed = 1000 + k;
    let out = format!("{dir}/sfuzz.out");
    let script = format!("/bin/sfuzz --seed {seed} --batches 2 --no-leak-check > {out}");
    let code = run(&["/bin/sh", "-c", &script])?;
    let text = file_contents(&out).unwrap_or_default();
    let _ = unix::unlink(&out);
    if code == 0 {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&text);
    let why: Vec<&str> = text.lines().filter(|l| l.contains("FAIL") || l.starts_with("  message")).collect();
    Err(format!("sfuzz --seed {seed} exited {code}: {}", why.join(" | ")))
}

/// The driver the `restarts` lane kills, and the device it serves (in
/// PDDRIVER mode: a call per transfer, no window of the driver's memory
/// mapped into this process).
const RESTARTED: (&str, &str) = ("ramdisk", "/dev/ram0/pddriver");

fn restarts(_dir: &str, k: u64) -> OpResult {
    use protocols::init::state;
    let status = |what: &str| unix::server_status(RESTARTED.0).map_err(|e| format!("{what}: {}", name(e)));
    // Past the quick-death limit since its last start.
    unix::sleep_ns(unix_core::restart::INIT_POLICY.quick_run_ns + 500_000_000);
    with_restart_lock(true, || {
        let before = status("status before the kill")?;
        if before[0] != state::RUNNING {
            return Err(format!("{} is not running: {before:?}", RESTARTED.0));
        }
        unix::server_kill(RESTARTED.0).map_err(|e| format!("service kill {}: {}", RESTARTED.0, name(e)))?;
        // Bounded only so that a broken supervisor cannot hang the lane.
        let mut after = before;
        for _ in 0..1200 {
            after = status("status after the kill")?;
            if after[0] == state::RUNNING && after[1] != before[1] && after[1] != 0 {
                break;
            }
            unix::sleep_ns(50_000_000);
        }
        if after[1] == before[1] || after[0] != state::RUNNING {
            return Err(format!("{} was not started again: {before:?} then {after:?}", RESTARTED.0));
        }
        Ok(())
    })?;
    let data = bytes(k ^ 0xd15c, 65_536);
    let offset = (k % 16) as i64 * 65_536;
    let fd = unix::open(RESTARTED.1, of::O_RDWR, 0).map_err(|e| format!("{}: {}", RESTARTED.1, name(e)))?;
    let done = unix::lseek(fd, offset, unix::SEEK_SET)
        .map_err(|e| format!("lseek: {}", name(e)))
        .and_then(|_| write_all(fd, &data))
        .and_then(|()| unix::lseek(fd, offset, unix::SEEK_SET).map_err(|e| format!("lseek: {}", name(e))))
        .and_then(|_| {
            let mut back = vec![0u8; data.len()];
            let n = unix::read(fd, &mut back).map_err(|e| format!("read: {}", name(e)))?;
            if n != data.len() || fnv(&back) != fnv(&data) {
                return Err(format!(
                    "the restarted driver gave back {n} bytes, checksum equal: {}",
                    back == data
                ));
            }
            Ok(())
        });
    let _ = unix::close(fd);
    done
}

const OPS: [fn(&str, u64) -> OpResult; 5] = [pipelines, churn, files, fuzz, restarts];

/// A lane: repeat its operation until `until_ns`; report (ops, errors).
fn lane(i: usize, until_ns: u64, report: (abi::Pid, Queue)) -> i32 {
    let dir = format!("/tmp/soak.lane{i}");
    let _ = unix::mkdir(&dir, 0o755);
    let Ok(link) = msg::open_link(report.0, report.1) else { return 5 };
    let (mut ops, mut errors) = (0u64, 0u64);
    let mut k = 1;
    while unix::clock_ns() < until_ns {
        if let Err(why) = OPS[i](&dir, k) {
            errors += 1;
            if errors <= 10 {
                println!("soak: {} operation {k}: {why}", LANES[i]);
            }
        }
        ops += 1;
        k += 1;
    }
    let _ = msg::send(link, &[i as u64, ops, errors, 0]);
    0
}

/// The figures that must come back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Figures {
    free_bytes: u64,
    shared_frames: u64,
    kernel_processes: u64,
    unix_processes: u64,
    descriptions: u64,
    memfs_handles: u64,
    sockets: u64,
}

fn stats(slot: u64, op: u64) -> [u64; 4] {
    let Some((pid, queue)) = sys::bootstrap(slot) else { return [u64::MAX; 4] };
    let Ok(link) = msg::open_link(pid, Queue(queue)) else { return [u64::MAX; 4] };
    let r = msg::call(link, &[op, 0, 0, 0], &[], &mut []);
    let _ = msg::close_link(link);
    r.map_or([u64::MAX; 4], |(w, _)| w)
}

fn figures() -> Figures {
    Figures {
        free_bytes: sys::info(InfoKey::FreeMemoryBytes),
        shared_frames: sys::info(InfoKey::SharedFrames),
        kernel_processes: sys::info(InfoKey::ProcessCount),
        unix_processes: unix::ps().map_or(u64::MAX, |p| p.len() as u64),
        descriptions: stats(abi::bootstrap::MONITOR, protocols::unix::monitor::OP_STATS)[3],
        memfs_handles: stats(abi::bootstrap::FS, protocols::unix::fs::OP_STATS)[3],
        sockets: unix::socket::net_stats().map_or(u64::MAX, |(w, _)| w[0]),
    }
}

/// The figures once they have stopped changing for 2 s (pipe managers
/// end, address spaces are freed and TCP sockets wind down after their
/// users), or after a minute.
fn settled() -> Figures {
    let mut last = figures();
    let mut same = 0;
    for _ in 0..600 {
        unix::sleep_ns(100_000_000);
        let now = figures();
        same = if now == last { same + 1 } else { 0 };
        last = now;
        if same >= 20 {
            break;
        }
    }
    last
}

fn main(args: Args) -> i32 {
    let seconds = match (args.get(1), args.get(2).and_then(|s| s.parse::<u64>().ok())) {
        (Some("--seconds"), Some(s)) => s,
        _ => {
            println!("usage: soak --seconds S");
            return 2;
        }
    };
    let test = "soak::mixed_load_without_errors_or_leaks";
    println!("{START}{test}");
    // Warm-up: one of each, so that the baseline has the caches filled.
    for (i, op) in OPS.iter().enumerate() {
        let dir = format!("/tmp/soak.lane{i}");
        let _ = unix::mkdir(&dir, 0o755);
        if let Err(why) = op(&dir, 0) {
            println!("soak: warm-up of {}: {why}", LANES[i]);
            println!("{FAIL}{test}: the warm-up failed");
            println!("{SUMMARY}0 passed, 1 failed");
            return 1;
        }
    }
    let before = settled();
    println!("soak: baseline {before:?}");
    let Ok(queue) = msg::open_queue(8, true) else { return 5 };
    let report = (sys::getpid(), queue);
    let until_ns = unix::clock_ns() + seconds * 1_000_000_000;
    let mut pids = Vec::new();
    for (i, lane_name) in LANES.iter().enumerate() {
        match unix::fork() {
            Ok(0) => unix::exit(lane(i, until_ns, report)),
            Ok(pid) => pids.push(pid),
            Err(e) => println!("soak: fork of lane {lane_name}: {}", name(e)),
        }
    }
    let mut lanes_ok = pids.len() == LANES.len();
    // Reap the lanes; each minute, the free memory and the processes, so
    // that a leak shows as a trend and a cache as a plateau.
    let started = unix::clock_ns();
    let mut next_sample = started + 60_000_000_000;
    let mut running = pids.clone();
    while !running.is_empty() {
        running.retain(|&pid| match unix::waitpid(pid as i64, true) {
            Ok(None) => true,
            Ok(Some((_, s))) if s.exit_code() == Some(0) => false,
            other => {
                lanes_ok = false;
                println!("soak: a lane ended {other:?}");
                false
            }
        });
        if unix::clock_ns() >= next_sample {
            next_sample += 60_000_000_000;
            println!(
                "soak: {} s: {} bytes free, {} kernel processes",
                (unix::clock_ns() - started) / 1_000_000_000,
                sys::info(InfoKey::FreeMemoryBytes),
                sys::info(InfoKey::ProcessCount)
            );
        }
        unix::sleep_ns(200_000_000);
    }
    let (mut ops, mut errors) = ([0u64; LANES.len()], [0u64; LANES.len()]);
    let mut buf = [0u8; 64];
    while let Ok(Some(r)) = msg::try_receive(queue, &mut buf) {
        let i = r.message[0] as usize;
        if i < LANES.len() {
            ops[i] = r.message[1];
            errors[i] = r.message[2];
        }
    }
    for i in 0..LANES.len() {
        println!("soak: {}: {} operations, {} errors", LANES[i], ops[i], errors[i]);
    }
    for i in 0..LANES.len() {
        let _ = unix::rmdir(&format!("/tmp/soak.lane{i}"));
    }
    let after = settled();
    println!("soak: after {after:?}");
    let mut leaks = Vec::new();
    let lost = before.free_bytes.saturating_sub(after.free_bytes);
    if lost > MEMORY_SLACK_BYTES {
        leaks.push(format!("{lost} bytes of memory (slack {MEMORY_SLACK_BYTES})"));
    }
    let pairs = [
        ("frames shared", before.shared_frames, after.shared_frames),
        ("kernel processes", before.kernel_processes, after.kernel_processes),
        ("UNIX processes", before.unix_processes, after.unix_processes),
        ("open-file descriptions", before.descriptions, after.descriptions),
        ("memfs handles", before.memfs_handles, after.memfs_handles),
        ("sockets", before.sockets, after.sockets),
    ];
    for (what, b, a) in pairs {
        if a != b {
            leaks.push(format!("{what}: {b} before, {a} after"));
        }
    }
    let total_ops: u64 = ops.iter().sum();
    let total_errors: u64 = errors.iter().sum();
    println!(
        "soak: {seconds} s: {total_ops} operations, {total_errors} errors, {} leaks; memory {} bytes free before, {} after ({} lower)",
        leaks.len(),
        before.free_bytes,
        after.free_bytes,
        lost
    );
    for leak in &leaks {
        println!("soak: leak: {leak}");
    }
    let passed = lanes_ok && total_errors == 0 && leaks.is_empty() && ops.iter().all(|&n| n > 0);
    if passed {
        println!("{OK}{test}");
        println!("{SUMMARY}1 passed, 0 failed");
        0
    } else {
        println!("{FAIL}{test}: {total_errors} errors, {} leaks, lanes ended well: {lanes_ok}", leaks.len());
        println!("{SUMMARY}0 passed, 1 failed");
        1
    }
}
