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
//!   again, a seeded block written and read back through the new one. The
//!   drivers in turn ([`RESTARTED`]): the RAM disk (no other lane uses
//!   it) and `virtio-blk`, under `/disk`, while the `files` lane works
//!   there: its ext2 manager keeps its cache and sends what failed to the
//!   new driver (issue 16), so none of that lane's operations may fail;
//!   the check through the new driver is a file on `/disk` written,
//!   `fsync`ed and read back. Not `virtio-net`: the network server does
//!   not find a restarted one (docs/reliability.md), nor the console and
//!   the terminal, whose restart the lanes' output would straddle. Each
//!   kill comes after the driver ran past init's quick-death limit, or
//!   init would rightly give it up.
//!
//! Before the lanes start, one round of each, then the four at once for
//! a few rounds, warm the caches (memfs, ext2fs's buffers, virtio-blk's
//! DMA buffers, the servers' heaps and tables); then the baseline is
//! taken: free memory, frames shared, kernel processes, UNIX processes,
//! open-file descriptions, memfs handles, files and bytes, sockets, and
//! every process's frames by kind (`proc_memory`: page tables, private,
//! shared and heap pages) with the caches their owners count
//! (`protocols::heap::OP_HEAP_STATS`). At the end, once the lanes are
//! reaped and the figures have settled, each must be back, and memory is
//! accounted frame by frame ([`memory_leaks`]): every frame in use is a
//! process's, and a server holds more only where a cache it counts grew
//! (its heap's break, virtio-blk's DMA buffers). There is no slack. Prints `soak:` lines
//! with operations by lane and kind, errors, where memory went and leaks,
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

/// Rounds of each lane (the fuzzer's: one) run at once before the
/// baseline: every size of [`SIZES`] and most of [`PIPE_SIZES`].
const WARM_UP_ROUNDS: u64 = 12;

const LANES: [&str; 5] = ["pipelines", "churn", "files", "fuzz", "restarts"];

type OpResult = Result<(), String>;

/// What one lane did, by kind ([`KINDS`] names them): three counts.
type Kinds = [u64; 3];

/// The kinds each lane counts, in its [`Kinds`] order.
const KINDS: [[&str; 3]; 5] = [
    ["shell pipelines", "checksums compared", "bytes through pipelines"],
    ["fork+exec of /bin/true", "pipe transfers", "bytes through pipes"],
    ["files on /tmp", "files on /disk", "bytes written and read back"],
    ["sfuzz runs", "server messages", "kernel calls by every process"],
    ["drivers killed and restarted", "blocks checked through a new driver", "bytes through new drivers"],
];

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

fn pipelines(dir: &str, k: u64, kinds: &mut Kinds) -> OpResult {
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
    // Three pipelines (the shell's `;` lists), two checksums compared,
    // the input through five `cat`s, two `sha256sum`s and `wc`.
    kinds[0] += 3;
    kinds[1] += 1;
    kinds[2] += 3 * size as u64;
    Ok(())
}

fn churn(_dir: &str, k: u64, kinds: &mut Kinds) -> OpResult {
    let code = run(&["/bin/true"])?;
    if code != 0 {
        return Err(format!("/bin/true exited {code}"));
    }
    kinds[0] += 1;
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
    kinds[1] += 1;
    kinds[2] += size as u64;
    Ok(())
}

fn files(dir: &str, k: u64, kinds: &mut Kinds) -> OpResult {
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
    kinds[if root == "/tmp" { 0 } else { 1 }] += 1;
    kinds[2] += size as u64;
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

fn fuzz(dir: &str, k: u64, kinds: &mut Kinds) -> OpResult {
    with_restart_lock(false, || fuzz_once(dir, k, kinds))
}

fn fuzz_once(dir: &str, k: u64, kinds: &mut Kinds) -> OpResult {
    // Its lines go to a file: they speak the test protocol, and the soak's
    // own lines are the ones its boot is judged by.
    let seed = 1000 + k;
    let out = format!("{dir}/sfuzz.out");
    let script = format!("/bin/sfuzz --seed {seed} --batches 2 --no-leak-check > {out}");
    let code = run(&["/bin/sh", "-c", &script])?;
    let text = file_contents(&out).unwrap_or_default();
    let _ = unix::unlink(&out);
    let text = String::from_utf8_lossy(&text);
    if code == 0 {
        kinds[0] += 1;
        // sfuzz's totals line: "... N server messages (...), ... M kernel
        // calls by every process, ...".
        if let Some(line) = text.lines().find(|l| l.contains(" server messages (")) {
            kinds[1] += number_before(line, " server messages (").unwrap_or(0);
            kinds[2] += number_before(line, " kernel calls by every process").unwrap_or(0);
        }
        return Ok(());
    }
    let why: Vec<&str> = text.lines().filter(|l| l.contains("FAIL") || l.starts_with("  message")).collect();
    Err(format!("sfuzz --seed {seed} exited {code}: {}", why.join(" | ")))
}

/// The drivers the `restarts` lane kills, in turn, and how it checks the
/// new one: the RAM disk through its device (in PDDRIVER mode: a call per
/// transfer, no window of the driver's memory mapped into this process),
/// virtio-blk through a file on `/disk` (its ext2 manager's).
const RESTARTED: [(&str, &str); 2] = [("ramdisk", "/dev/ram0/pddriver"), ("virtio-blk", "/disk")];

fn restarts(dir: &str, k: u64, kinds: &mut Kinds) -> OpResult {
    use protocols::init::state;
    let (driver, device) = RESTARTED[(k % RESTARTED.len() as u64) as usize];
    let status = |what: &str| unix::server_status(driver).map_err(|e| format!("{what}: {}", name(e)));
    // Past the quick-death limit since its last start.
    unix::sleep_ns(unix_core::restart::INIT_POLICY.quick_run_ns + 500_000_000);
    with_restart_lock(true, || {
        let before = status("status before the kill")?;
        if before[0] != state::RUNNING {
            return Err(format!("{driver} is not running: {before:?}"));
        }
        unix::server_kill(driver).map_err(|e| format!("service kill {driver}: {}", name(e)))?;
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
            return Err(format!("{driver} was not started again: {before:?} then {after:?}"));
        }
        kinds[0] += 1;
        Ok(())
    })?;
    let data = bytes(k ^ 0xd15c, 65_536);
    let done = if device == "/disk" { through_disk(dir, k, &data) } else { through_device(device, k, &data) };
    if done.is_ok() {
        kinds[1] += 1;
        kinds[2] += data.len() as u64;
    }
    done
}

/// `data` written at a block of `device`, read back and compared.
fn through_device(device: &str, k: u64, data: &[u8]) -> OpResult {
    let offset = (k % 16) as i64 * 65_536;
    let fd = unix::open(device, of::O_RDWR, 0).map_err(|e| format!("{device}: {}", name(e)))?;
    let done = unix::lseek(fd, offset, unix::SEEK_SET)
        .map_err(|e| format!("lseek: {}", name(e)))
        .and_then(|_| write_all(fd, data))
        .and_then(|()| unix::lseek(fd, offset, unix::SEEK_SET).map_err(|e| format!("lseek: {}", name(e))))
        .and_then(|_| {
            let mut back = vec![0u8; data.len()];
            let n = unix::read(fd, &mut back).map_err(|e| format!("read: {}", name(e)))?;
            if n != data.len() || fnv(&back) != fnv(data) {
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

/// `data` written to a file on `/disk` and `fsync`ed (the manager's
/// writes reach the new driver), read back, compared and removed.
fn through_disk(dir: &str, k: u64, data: &[u8]) -> OpResult {
    let path = format!("/disk/soak.restart.{}.{k}", dir.rsplit('.').next().unwrap_or("x"));
    let fd = unix::open(&path, of::O_WRONLY | of::O_CREAT | of::O_TRUNC, 0o644)
        .map_err(|e| format!("{path}: {}", name(e)))?;
    let written =
        write_all(fd, data).and_then(|()| unix::fsync(fd).map_err(|e| format!("fsync {path}: {}", name(e))));
    let _ = unix::close(fd);
    written?;
    let back = file_contents(&path)?;
    unix::unlink(&path).map_err(|e| format!("unlink {path}: {}", name(e)))?;
    if back.len() != data.len() || fnv(&back) != fnv(data) {
        return Err(format!(
            "{path}: read back {} bytes through the new driver, checksum equal: {}",
            back.len(),
            back == data
        ));
    }
    Ok(())
}

/// The number just before `label` in `line`.
fn number_before(line: &str, label: &str) -> Option<u64> {
    let at = line.find(label)?;
    line[..at].trim_end().rsplit(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

const OPS: [fn(&str, u64, &mut Kinds) -> OpResult; 5] = [pipelines, churn, files, fuzz, restarts];

/// A lane: repeat its operation until `until_ns`; report (ops, errors).
fn lane(i: usize, until_ns: u64, report: (abi::Pid, Queue)) -> i32 {
    let dir = format!("/tmp/soak.lane{i}");
    let _ = unix::mkdir(&dir, 0o755);
    let Ok(link) = msg::open_link(report.0, report.1) else { return 5 };
    let (mut ops, mut errors) = (0u64, 0u64);
    let mut kinds = Kinds::default();
    let mut k = 1;
    while unix::clock_ns() < until_ns {
        if let Err(why) = OPS[i](&dir, k, &mut kinds) {
            errors += 1;
            if errors <= 10 {
                println!("soak: {} operation {k}: {why}", LANES[i]);
            }
        }
        ops += 1;
        k += 1;
    }
    // A report that cannot be sent ends the lane badly, so that it is
    // named rather than read as a lane that did nothing.
    let sent = msg::send(link, &[i as u64, ops, errors, 0])
        .and_then(|_| msg::send(link, &[(LANES.len() + i) as u64, kinds[0], kinds[1], kinds[2]]));
    match sent {
        Ok(_) => 0,
        Err(e) => {
            println!("soak: lane {} could not report its counts: {}", LANES[i], e.name());
            6
        }
    }
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
    /// memfs's files, directories and bytes stored: what the lanes and
    /// the fuzzer made and must have removed.
    memfs_tree: [u64; 3],
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
    let memfs = stats(abi::bootstrap::FS, protocols::unix::fs::OP_STATS);
    Figures {
        free_bytes: sys::info(InfoKey::FreeMemoryBytes),
        shared_frames: sys::info(InfoKey::SharedFrames),
        kernel_processes: sys::info(InfoKey::ProcessCount),
        unix_processes: unix::ps().map_or(u64::MAX, |p| p.len() as u64),
        descriptions: stats(abi::bootstrap::MONITOR, protocols::unix::monitor::OP_STATS)[3],
        memfs_handles: memfs[3],
        memfs_tree: [memfs[0], memfs[1], memfs[2]],
        sockets: unix::socket::net_stats().map_or(u64::MAX, |(w, _)| w[0]),
    }
}

/// A process's frames (`proc_memory`): [tables, private pages, shared
/// pages, of those two the heap region's].
type Frames = [u64; 4];

/// Every frame in use, by owner, taken at one instant (the free count
/// read before and after the walk agrees).
#[derive(Clone, Debug, Default)]
struct Snapshot {
    free_frames: u64,
    shared_frames: u64,
    retired_roots: u64,
    /// (kernel pid, name, frames) of every process, in slot order.
    processes: Vec<(u64, String, Frames)>,
}

impl Snapshot {
    fn take() -> Snapshot {
        let page = abi::layout::PAGE_SIZE;
        let mut last = Snapshot::default();
        for _ in 0..50 {
            let free = sys::info(InfoKey::FreeMemoryBytes) / page;
            let processes = processes();
            let (shared_frames, retired_roots) =
                (sys::info(InfoKey::SharedFrames), sys::info(InfoKey::RetiredRoots));
            last = Snapshot { free_frames: free, shared_frames, retired_roots, processes };
            if sys::info(InfoKey::FreeMemoryBytes) / page == free {
                break;
            }
        }
        last
    }

    /// The frames in use that the processes' tables account for: every
    /// table and private page, each shared frame once, the retired roots.
    fn held(&self) -> u64 {
        let own: u64 = self.processes.iter().map(|(_, _, w)| w[0] + w[1]).sum();
        own + self.shared_frames + self.retired_roots
    }

    fn of(&self, pid: u64) -> Option<Frames> {
        self.processes.iter().find(|(p, _, _)| *p == pid).map(|(_, _, w)| *w)
    }
}

fn processes() -> Vec<(u64, String, Frames)> {
    use abi::proc_memory as pm;
    let mut out = Vec::new();
    for slot in 0.. {
        match sys::proc_memory(slot) {
            Ok(Some((pid, record))) => {
                let word =
                    |i: usize| u64::from_le_bytes(record[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
                let name = &record[pm::WORDS * 8..];
                let name =
                    String::from_utf8_lossy(&name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())])
                        .into();
                out.push((
                    pid.0,
                    name,
                    [word(pm::TABLES), word(pm::PRIVATE), word(pm::SHARED), word(pm::HEAP)],
                ));
            }
            Ok(None) => {}
            Err(_) => break,
        }
    }
    out
}

/// Print where memory went: each process of both snapshots whose frames
/// changed, and the processes only in one.
fn print_memory_changes(before: &Snapshot, after: &Snapshot) {
    for (pid, name, w) in &after.processes {
        match before.of(*pid) {
            Some(b) if b != *w => println!(
                "soak: memory: {name} ({pid:#x}): tables {} -> {}, private {} -> {}, shared {} -> {}, heap {} -> {} pages",
                b[0], w[0], b[1], w[1], b[2], w[2], b[3], w[3]
            ),
            Some(_) => {}
            None => println!(
                "soak: memory: new {name} ({pid:#x}): tables {}, private {}, shared {}, heap {}",
                w[0], w[1], w[2], w[3]
            ),
        }
    }
    for (pid, name, w) in &before.processes {
        if after.of(*pid).is_none() {
            println!(
                "soak: memory: gone {name} ({pid:#x}): tables {}, private {}, shared {}, heap {}",
                w[0], w[1], w[2], w[3]
            );
        }
    }
}

/// The caches whose owners count them (`protocols::heap::OP_HEAP_STATS`):
/// (kernel pid, name, [heap bytes in use, heap bytes (the break), cache
/// bytes outside the heap]) of memfs, the monitor and virtio-blk
/// (`/dev/vda`).
type Caches = Vec<(u64, &'static str, [u64; 3])>;

fn heap_stats(pid: u64, queue: u32) -> Option<[u64; 3]> {
    let link = msg::open_link(abi::Pid(pid), Queue(queue)).ok()?;
    let r = msg::call(link, &[protocols::heap::OP_HEAP_STATS, 0, 0, 0], &[], &mut []);
    let _ = msg::close_link(link);
    r.ok().map(|(w, _)| [w[0], w[1], w[2]])
}

/// The manager (kernel pid, queue) of descriptor `fd` (the monitor's
/// `OP_FD_INFO`).
fn fd_manager(fd: Fd) -> Option<(u64, u32)> {
    let (pid, queue) = sys::bootstrap(abi::bootstrap::MONITOR)?;
    let link = msg::open_link(pid, Queue(queue)).ok()?;
    let r = msg::call(link, &[protocols::unix::monitor::OP_FD_INFO, fd as u64, 0, 0], &[], &mut []);
    let _ = msg::close_link(link);
    let (w, _) = r.ok()?;
    protocols::unix::result(w[0]).ok()?;
    let info = protocols::unix::FdInfo::decode([w[1], w[2], w[3]]);
    Some((info.manager_pid, info.manager_queue))
}

fn caches() -> Caches {
    let mut out = Vec::new();
    for (slot, name) in [(abi::bootstrap::FS, "memfs"), (abi::bootstrap::MONITOR, "monitor")] {
        if let Some((pid, queue)) = sys::bootstrap(slot)
            && let Some(h) = heap_stats(pid.0, queue)
        {
            out.push((pid.0, name, h));
        }
    }
    if let Ok(fd) = unix::socket::socket(unix::socket::AF_INET, unix::socket::SOCK_DGRAM, 0) {
        if let Some((pid, queue)) = fd_manager(fd)
            && let Some(h) = heap_stats(pid, queue)
        {
            out.push((pid, "net", h));
        }
        let _ = unix::close(fd);
    }
    if let Ok(fd) = unix::open("/dev/vda", of::O_RDONLY, 0) {
        if let Some((pid, queue)) = fd_manager(fd)
            && let Some(h) = heap_stats(pid, queue)
        {
            out.push((pid, "virtio-blk", h));
        }
        let _ = unix::close(fd);
    }
    // The disk's manager (when /disk is a volume of its own, not a
    // directory of the memory file system's).
    if let Ok(fd) = unix::open("/disk", of::O_RDONLY, 0) {
        if let Some((pid, queue)) = fd_manager(fd)
            && !out.iter().any(|&(p, _, _)| p == pid)
            && let Some(h) = heap_stats(pid, queue)
        {
            out.push((pid, "ext2fs", h));
        }
        let _ = unix::close(fd);
    }
    out
}

/// The memory leaks between two snapshots (docs/reliability.md, "Soak"):
/// - every frame in use is a process's (or a retired root's): a frame the
///   kernel kept for itself (a message's page, a queue's) is a leak;
/// - a process of both holds no more pages outside its heap than the
///   caches it counts there grew (virtio-blk's DMA buffers);
/// - its heap pages are no more than its heap's break (the cache of an
///   allocator that never gives pages back), or, for a process that does
///   not count its heap, no more than at the baseline;
/// - its page tables grew only with those pages (a table maps 512).
///
/// The heaps' bytes in use are printed, not judged: the same keys in a
/// B-tree after inserts and removals may sit in one node more or fewer
/// (memfs's heap ended 544 bytes above its baseline after 10 minutes with
/// the same files); what a server holds is checked by its own counts
/// (files, directories, bytes, handles, descriptions, sockets, processes).
///
/// The soak itself (`me`) is left out: its own code comes in from the VM
/// manager on first use, after the baseline.
fn memory_leaks(before: (&Snapshot, &Caches), after: (&Snapshot, &Caches), me: u64) -> Vec<String> {
    let page = abi::layout::PAGE_SIZE;
    let mut leaks = Vec::new();
    let (fewer_free, more_held) = (
        before.0.free_frames as i64 - after.0.free_frames as i64,
        after.0.held() as i64 - before.0.held() as i64,
    );
    if fewer_free != more_held {
        leaks.push(format!("{} frames in use that no process holds", fewer_free - more_held));
    }
    for (pid, name, w) in &after.0.processes {
        let Some(b) = before.0.of(*pid) else { continue };
        if *pid == me {
            continue;
        }
        let cache = |c: &Caches| c.iter().find(|(p, _, _)| p == pid).map(|(_, _, h)| *h);
        let (cache_before, cache_after) = (cache(before.1), cache(after.1));
        let outside = |h: Option<[u64; 3]>| h.map_or(0, |h| h[2]);
        let outside_grew_pages =
            outside(cache_after).saturating_sub(outside(cache_before)).div_ceil(page) as i64;
        let (pages_b, pages_a) = (b[1] + b[2], w[1] + w[2]);
        let other_grew = (pages_a - w[3]) as i64 - (pages_b - b[3]) as i64;
        let heap_grew = w[3] as i64 - b[3] as i64;
        if other_grew > outside_grew_pages {
            leaks.push(format!(
                "{name} ({pid:#x}): {other_grew} more pages outside its heap, its caches there grew {outside_grew_pages}"
            ));
        }
        match cache_after {
            Some(h) if w[3] > h[1].div_ceil(page) => leaks
                .push(format!("{name} ({pid:#x}): {} heap pages, its heap's break is {} bytes", w[3], h[1])),
            None if heap_grew > 0 => leaks
                .push(format!("{name} ({pid:#x}): {heap_grew} more heap pages (it does not count its heap)")),
            _ => {}
        }
        let grew = (pages_a as i64 - pages_b as i64).max(0);
        let tables_allowed = if grew > 0 { (grew + 511) / 512 + 1 } else { 0 };
        if w[0] as i64 - b[0] as i64 > tables_allowed {
            leaks.push(format!("{name} ({pid:#x}): {} more page tables for {grew} more pages", w[0] - b[0]));
        }
    }
    leaks
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
    // Warm-up: one of each, then the lanes at once for a few rounds
    // each, so that the baseline has the caches filled and the servers'
    // tables sized for four lanes at work (a table's capacity stays at
    // the most it held at once).
    for (i, op) in OPS.iter().enumerate() {
        let dir = format!("/tmp/soak.lane{i}");
        let _ = unix::mkdir(&dir, 0o755);
        if let Err(why) = op(&dir, 0, &mut Kinds::default()) {
            println!("soak: warm-up of {}: {why}", LANES[i]);
            println!("{FAIL}{test}: the warm-up failed");
            println!("{SUMMARY}0 passed, 1 failed");
            return 1;
        }
    }
    let mut warming = Vec::new();
    for (i, op) in OPS.iter().enumerate() {
        match unix::fork() {
            Ok(0) => {
                let dir = format!("/tmp/soak.lane{i}");
                // The fuzzer and the restarts: one round each (each is long).
                let rounds = if i >= 3 { 1 } else { WARM_UP_ROUNDS };
                let failed = (0..rounds).any(|k| op(&dir, k, &mut Kinds::default()).is_err());
                unix::exit(i32::from(failed));
            }
            Ok(pid) => warming.push(pid),
            Err(e) => println!("soak: fork of a warm-up lane: {}", name(e)),
        }
    }
    for pid in warming {
        let _ = unix::waitpid(pid as i64, false);
    }
    // The lanes' directories are made again by the lanes: the baseline
    // has none of the soak's files.
    for i in 0..LANES.len() {
        let _ = unix::rmdir(&format!("/tmp/soak.lane{i}"));
    }
    let before = settled();
    let snap_before = Snapshot::take();
    let caches_before = caches();
    println!("soak: baseline {before:?}");
    // Two reports from each lane (its counts, then its kinds): a queue of
    // 8 held only four lanes' worth, and the fifth lane's reports were
    // lost (it seemed to have done nothing).
    let Ok(queue) = msg::open_queue(2 * LANES.len() as u64, true) else { return 5 };
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
            let heaps: Vec<String> =
                caches().iter().map(|(_, name, h)| format!("{name} {}/{}", h[0], h[1])).collect();
            println!(
                "soak: {} s: {} bytes free, {} kernel processes; heaps in use/break: {}",
                (unix::clock_ns() - started) / 1_000_000_000,
                sys::info(InfoKey::FreeMemoryBytes),
                sys::info(InfoKey::ProcessCount),
                heaps.join(", ")
            );
        }
        unix::sleep_ns(200_000_000);
    }
    let (mut ops, mut errors, mut kinds) =
        ([0u64; LANES.len()], [0u64; LANES.len()], [Kinds::default(); LANES.len()]);
    let mut buf = [0u8; 64];
    while let Ok(Some(r)) = msg::try_receive(queue, &mut buf) {
        let i = r.message[0] as usize;
        if i < LANES.len() {
            ops[i] = r.message[1];
            errors[i] = r.message[2];
        } else if let Some(k) = kinds.get_mut(i - LANES.len()) {
            k.copy_from_slice(&r.message[1..4]);
        }
    }
    for i in 0..LANES.len() {
        let by_kind: Vec<String> =
            KINDS[i].iter().zip(kinds[i]).map(|(what, n)| format!("{n} {what}")).collect();
        println!("soak: {}: {} operations, {} errors ({})", LANES[i], ops[i], errors[i], by_kind.join(", "));
    }
    for i in 0..LANES.len() {
        let _ = unix::rmdir(&format!("/tmp/soak.lane{i}"));
    }
    let after = settled();
    let snap_after = Snapshot::take();
    let caches_after = caches();
    println!("soak: after {after:?}");
    print_memory_changes(&snap_before, &snap_after);
    for (pid, name, a) in &caches_after {
        if let Some((_, _, b)) = caches_before.iter().find(|(p, _, _)| p == pid) {
            println!(
                "soak: cache: {name}: heap in use {} -> {} bytes, heap {} -> {} bytes, outside the heap {} -> {} bytes",
                b[0], a[0], b[1], a[1], b[2], a[2]
            );
        }
    }
    let (fewer_free, more_held) = (
        snap_before.free_frames as i64 - snap_after.free_frames as i64,
        snap_after.held() as i64 - snap_before.held() as i64,
    );
    println!(
        "soak: memory: {fewer_free} fewer free frames; processes hold {more_held} more (tables, private pages, shared frames once, retired roots: {} -> {}); {} not held by any process",
        snap_before.held(),
        snap_after.held(),
        fewer_free - more_held
    );
    let lost = before.free_bytes.saturating_sub(after.free_bytes);
    let me = sys::getpid().0;
    let mut leaks = memory_leaks((&snap_before, &caches_before), (&snap_after, &caches_after), me);
    // The soak's own pages shared with the VM manager (its code, paged in
    // on first use) are not the system's.
    let own_shared = |s: &Snapshot| s.of(me).map_or(0, |w| w[2]);
    let own_new_shared = own_shared(&snap_after).saturating_sub(own_shared(&snap_before));
    let pairs = [
        ("frames shared", before.shared_frames + own_new_shared, after.shared_frames),
        ("kernel processes", before.kernel_processes, after.kernel_processes),
        ("UNIX processes", before.unix_processes, after.unix_processes),
        ("open-file descriptions", before.descriptions, after.descriptions),
        ("memfs handles", before.memfs_handles, after.memfs_handles),
        ("memfs files", before.memfs_tree[0], after.memfs_tree[0]),
        ("memfs directories", before.memfs_tree[1], after.memfs_tree[1]),
        ("memfs bytes stored", before.memfs_tree[2], after.memfs_tree[2]),
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
    if after.memfs_tree != before.memfs_tree {
        // What was left behind, by name (the boot's files are in /bin,
        // /etc and /dev).
        println!("soak: what /tmp holds now:");
        let _ = run(&["/bin/find", "/tmp"]);
    }
    let passed = lanes_ok && total_errors == 0 && leaks.is_empty() && ops.iter().all(|&n| n > 0);
    if passed {
        println!("{OK}{test}");
        println!("{SUMMARY}1 passed, 0 failed");
        0
    } else {
        let idle: Vec<&str> = LANES.iter().zip(ops).filter(|(_, n)| *n == 0).map(|(l, _)| *l).collect();
        println!(
            "{FAIL}{test}: {total_errors} errors, {} leaks, lanes ended well: {lanes_ok}, lanes with no operation: {idle:?}",
            leaks.len()
        );
        println!("{SUMMARY}0 passed, 1 failed");
        1
    }
}
