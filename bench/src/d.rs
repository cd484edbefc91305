//! Benchmark D: seed 000, the VMS RAMDRIVER note (Newman, Info-VAX, April
//! 1988), `docs/benchmarks.md` section D. The same program on both
//! systems, through the [`BlockIo`] calls.
//!
//! The seed's program: "uses block mode RMS to read and subsequently write
//! 64 block chunks to a 128 block contiguous file, rewinding when it hits
//! EOF ... The program makes 2000 passes through the loop", timed alone
//! and as 5 copies "bashing on the same file" at once. Here: a region of
//! [`REGION_BLOCKS`] blocks of [`BLOCK_BYTES`] at the start of a device
//! (until there is a disk file system, "the file" is a contiguous region
//! of the device, on both systems); each of [`PASSES`] passes reads a
//! chunk of [`CHUNK_BLOCKS`] blocks (32 KiB) with one `read` and writes it
//! back with one `write` at the same place, then moves to the next chunk,
//! going back to the start after the last. One transfer is one system
//! call of a whole chunk, straight to the device (`O_DIRECT` on Linux;
//! Ridgeback's block devices have no cache at all): the seed's "block
//! mode, unbuffered".
//!
//! Why read and write at the same place: the seed counts 5000 direct I/Os
//! for 2000 passes ("DIRIO: 5000"), which is 2000 reads, 2000 writes and
//! the 1000 reads that met the end of the file when each chunk is written
//! back where it was read (a write that went on to the next chunk would
//! meet the end at every pass: 6000). This program knows where the region
//! ends and rewinds without that I/O: 4000 transfers of 32 KiB per job.
//!
//! Figures, per device ([`DEVICES`]): `d_<device>_1job` (one job's elapsed
//! time: one sample per run of the job, [`harness::Config::sample_count`]
//! runs) and `d_<device>_5jobs` (five jobs started at once on the same
//! region: one sample per job, so the reported median is the median over
//! jobs), both in ms per job, and the same with `_cpu`: each job's own
//! CPU time (Linux: `CLOCK_PROCESS_CPUTIME_ID`, user and kernel time of
//! the job's process; Ridgeback: the kernel's CPU time of the job's
//! process, which excludes the drivers' and servers' time).
//!
//! How jobs run: each job is a forked child that opens the region itself
//! (its own descriptor, as each VMS process had its own channel), says it
//! is ready on a pipe of its own, waits until the parent closes a shared
//! "go" pipe (all start together), runs the passes, and sends back its
//! elapsed TSC ticks and CPU time. Before each run the parent writes the
//! whole region (untimed), so every block holds a known stamp.
//!
//! Checks, so that a broken device fails the figure instead of flattering
//! it: each transfer must move the whole chunk in one call; every block
//! carries a stamp (magic, its block number, the pass and job that wrote
//! it) and each block read is checked: with one job its pass must be the
//! one that last wrote that chunk (the device returned what was written,
//! where it was written); with several jobs the magic and block number
//! must be right (which pass and job wrote it last is a race by design,
//! the seed's "it doesn't really matter what this does to the file").

use crate::harness::{self, Config, Measurement, Unit};
use crate::r2::{Errno, Fd, Unix};
use crate::{MAX_COUNTERS, now_ticks};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// A disk block: VMS's and the virtio-blk sector.
pub const BLOCK_BYTES: usize = 512;
/// The seed's "128 block contiguous file" (64 KiB).
pub const REGION_BLOCKS: u64 = 128;
/// The seed's "64 block chunks" (32 KiB): one transfer.
pub const CHUNK_BLOCKS: u64 = 64;
pub const CHUNK_BYTES: usize = CHUNK_BLOCKS as usize * BLOCK_BYTES;
const CHUNKS_PER_REGION: u64 = REGION_BLOCKS / CHUNK_BLOCKS;
/// The seed's "2000 passes through the loop".
pub const PASSES: u64 = 2000;
/// The seed's "5 copies of the program running on it".
pub const MANY_JOBS: usize = 5;
/// Where the region starts on the device: its first block.
pub const REGION_OFFSET_BYTES: u64 = 0;

const _: () = assert!(REGION_BLOCKS.is_multiple_of(CHUNK_BLOCKS));
const _: () = assert!(MANY_JOBS <= harness::MAX_SAMPLES);

/// How a device's region is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Unbuffered: `O_DIRECT` on Linux; Ridgeback's block devices are
    /// always unbuffered.
    Direct,
    /// Through the system's file cache: for tmpfs, whose pages are the
    /// cache itself (Linux 6.1's tmpfs refuses `O_DIRECT`; 6.6 accepts
    /// it as a no-op).
    Cached,
}

/// A place the program can run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Device {
    /// The word in the figure names and on the programs' command lines.
    pub name: &'static str,
    pub path: &'static str,
    pub access: Access,
    /// A regular file the program makes (and removes), not a device node.
    pub is_file: bool,
    /// What it is, for messages.
    pub what: &'static str,
}

/// Every device of the D rows. Which system has which: [`LINUX_DEVICES`],
/// [`RIDGEBACK_DEVICES`].
pub const DEVICES: [Device; 5] = [
    Device {
        name: "virtio",
        path: "/dev/vda",
        access: Access::Direct,
        is_file: false,
        what: "the virtio-blk disk (attached by xtask; needs its driver)",
    },
    Device {
        name: "ramdriver",
        path: "/dev/ram0",
        access: Access::Direct,
        is_file: false,
        what: "the RAM disk in RAMDRIVER mode (needs drivers/ramdisk, ramdisk.mode=ramdriver)",
    },
    Device {
        name: "pddriver",
        path: "/dev/ram0",
        access: Access::Direct,
        is_file: false,
        what: "the RAM disk in PDDRIVER mode (needs drivers/ramdisk, ramdisk.mode=pddriver)",
    },
    Device {
        name: "brd",
        path: "/dev/ram0",
        access: Access::Direct,
        is_file: false,
        what: "Linux's RAM block device (module brd)",
    },
    Device {
        name: "tmpfs",
        path: "/tmp/d-region",
        access: Access::Cached,
        is_file: true,
        what: "a file on tmpfs",
    },
];

/// The devices the Linux guest measures (`bench d`).
pub const LINUX_DEVICES: [&str; 3] = ["brd", "virtio", "tmpfs"];
/// The devices Ridgeback measures (`dbench`; the RAM disk's mode is a
/// boot option, so `ramdriver` and `pddriver` come from different boots).
pub const RIDGEBACK_DEVICES: [&str; 3] = ["virtio", "ramdriver", "pddriver"];

pub fn device(name: &str) -> Option<&'static Device> {
    DEVICES.iter().find(|d| d.name == name)
}

/// A figure's name: `d_brd_1job`, `d_ramdriver_5jobs`, `d_virtio_1job_cpu`.
pub fn figure_name(device: &str, jobs: usize, is_cpu: bool) -> String {
    let plural = if jobs == 1 { "" } else { "s" };
    let cpu = if is_cpu { "_cpu" } else { "" };
    format!("d_{device}_{jobs}job{plural}{cpu}")
}

/// The calls D needs, on top of [`Unix`]'s: a region opened for
/// unbuffered block I/O, transfers at an offset, and the process's CPU
/// time.
pub trait BlockIo: Unix {
    /// Opens `device.path` for reading and writing: with `O_DIRECT` for
    /// [`Access::Direct`] where the system has it, creating it only when
    /// it is a file ([`Device::is_file`]: a missing device node must be an
    /// error, never a new regular file).
    fn open_region(device: &Device) -> Result<Fd, Errno>;
    /// Checks that `fd` is what `device` says: a block device, or a
    /// regular file for a file. The reason when it is not.
    fn check_kind(fd: Fd, device: &Device) -> Result<(), String>;
    /// One read of `buffer.len()` bytes at `offset_bytes`.
    fn read_at(fd: Fd, buffer: &mut [u8], offset_bytes: u64) -> Result<usize, Errno>;
    /// One write of `bytes` at `offset_bytes`.
    fn write_at(fd: Fd, bytes: &[u8], offset_bytes: u64) -> Result<usize, Errno>;
    /// The CPU time the calling process has used, in ns.
    fn cpu_time_ns() -> u64;
}

/// Runs `device`'s four figures and prints them (or a `# FAILED` line for
/// each that could not be measured); returns how many failed.
pub fn run<P: BlockIo>(device_name: &str, config: &Config) -> usize {
    let Some(device) = device(device_name) else {
        let names: Vec<&str> = DEVICES.iter().map(|d| d.name).collect();
        harness::failure::<P>(
            &figure_name(device_name, 1, false),
            &format!("unknown device (devices: {names:?})"),
        );
        return 1;
    };
    let mut failures = 0;
    for jobs in [1, MANY_JOBS] {
        match measure::<P>(device, jobs, config) {
            Ok((elapsed, cpu)) => {
                harness::report::<P>(
                    &figure_name(device.name, jobs, false),
                    Unit::MillisecondsPerJob,
                    &elapsed,
                );
                harness::report::<P>(&figure_name(device.name, jobs, true), Unit::MillisecondsPerJob, &cpu);
            }
            Err(reason) => {
                for is_cpu in [false, true] {
                    harness::failure::<P>(&figure_name(device.name, jobs, is_cpu), &reason);
                }
                failures += 2;
            }
        }
    }
    if device.is_file {
        let _ = P::unlink(device.path);
    }
    failures
}

/// One figure pair: each job's elapsed time and its CPU time. One job:
/// `config.sample_count` runs; several: one run, a sample per job.
pub fn measure<P: BlockIo>(
    device: &Device,
    jobs: usize,
    config: &Config,
) -> Result<(Measurement, Measurement), String> {
    let runs = if jobs == 1 { config.sample_count.clamp(1, harness::MAX_SAMPLES) } else { 1 };
    let mut elapsed_ticks = Vec::new();
    let mut cpu_ns = Vec::new();
    let mut counters = [0u64; MAX_COUNTERS];
    let mut counter_names: &'static [&'static str] = &[];
    let mut buffer = ChunkBuffer::new();
    for _ in 0..runs {
        prepare_region::<P>(device, &mut buffer)?;
        let run = run_jobs::<P>(device, jobs, &mut buffer)?;
        for report in &run.reports {
            elapsed_ticks.push(report.elapsed_ticks.max(1));
            cpu_ns.push(report.cpu_ns.max(1));
        }
        for (total, value) in counters.iter_mut().zip(&run.counters) {
            *total += value;
        }
        if !run.counter_names.is_empty() {
            counter_names = run.counter_names;
        }
    }
    let tsc_hz = P::tsc_hz();
    let to_ms = |ticks: u64, hz: u64| ticks as f64 * 1e3 / hz as f64;
    let elapsed_ms: Vec<f64> = elapsed_ticks.iter().map(|&t| to_ms(t, tsc_hz)).collect();
    let elapsed = Measurement::from_samples(&elapsed_ms, 1)
        .with_ticks(&elapsed_ticks, tsc_hz)
        .with_counters(counter_names, &counters);
    // CPU time is counted in ns: a clock of 1 GHz, one tick a nanosecond.
    const NS_HZ: u64 = 1_000_000_000;
    let cpu_ms: Vec<f64> = cpu_ns.iter().map(|&ns| to_ms(ns, NS_HZ)).collect();
    let cpu = Measurement::from_samples(&cpu_ms, 1).with_ticks(&cpu_ns, NS_HZ);
    Ok((elapsed, cpu))
}

/// A chunk-sized buffer on a page boundary (`O_DIRECT` wants alignment;
/// on Ridgeback whole pages may travel by loan).
pub struct ChunkBuffer {
    storage: Vec<u8>,
    start: usize,
}

impl ChunkBuffer {
    pub fn new() -> ChunkBuffer {
        let page = abi::layout::PAGE_SIZE as usize;
        let storage = vec![0u8; CHUNK_BYTES + page];
        let start = storage.as_ptr().align_offset(page).min(page);
        ChunkBuffer { storage, start }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.storage[self.start..self.start + CHUNK_BYTES]
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + CHUNK_BYTES]
    }
}

impl Default for ChunkBuffer {
    fn default() -> Self {
        ChunkBuffer::new()
    }
}

/// The stamp at the start of every block: "SEED000" and a zero.
const MAGIC: u64 = u64::from_le_bytes(*b"SEED000\0");
/// The pass number of the stamps [`prepare_region`] writes.
const SETUP_PASS: u64 = u64::MAX;

/// Stamps each block of the chunk starting at region block `first_block`
/// as written by `job` at `pass`: magic, block number, pass, job.
pub fn stamp_chunk(chunk: &mut [u8], first_block: u64, pass: u64, job: u64) {
    for (index, block) in chunk.chunks_exact_mut(BLOCK_BYTES).enumerate() {
        for (slot, word) in [MAGIC, first_block + index as u64, pass, job].into_iter().enumerate() {
            block[slot * 8..slot * 8 + 8].copy_from_slice(&word.to_le_bytes());
        }
    }
}

/// What a block read must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Written by this pass (one job: nobody else writes).
    Pass(u64),
    /// By some pass of some job below this count (several jobs).
    AnyOf(u64),
}

/// Checks each block of a chunk read at region block `first_block`.
pub fn check_chunk(chunk: &[u8], first_block: u64, expect: Expect) -> Result<(), String> {
    for (index, block) in chunk.chunks_exact(BLOCK_BYTES).enumerate() {
        let word = |slot: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&block[slot * 8..slot * 8 + 8]);
            u64::from_le_bytes(bytes)
        };
        let number = first_block + index as u64;
        let (magic, stamped_number, pass, job) = (word(0), word(1), word(2), word(3));
        if magic != MAGIC || stamped_number != number {
            return Err(format!(
                "block {number} of the region holds block {stamped_number:#x} (magic {magic:#x}): \
                 the device returned data from elsewhere"
            ));
        }
        let is_expected = match expect {
            Expect::Pass(wanted) => pass == wanted,
            // The setup stamp is job 0's.
            Expect::AnyOf(jobs) => job < jobs,
        };
        if !is_expected {
            return Err(format!(
                "block {number} holds pass {pass} of job {job}, expected {expect:?}: \
                 the device lost or misplaced a write"
            ));
        }
    }
    Ok(())
}

/// Where pass `pass` works: the chunk's first region block.
fn chunk_of(pass: u64) -> u64 {
    (pass % CHUNKS_PER_REGION) * CHUNK_BLOCKS
}

fn offset_of(first_block: u64) -> u64 {
    REGION_OFFSET_BYTES + first_block * BLOCK_BYTES as u64
}

/// The pass that last wrote the chunk pass `pass` reads, one job alone.
fn last_writer(pass: u64) -> u64 {
    if pass >= CHUNKS_PER_REGION { pass - CHUNKS_PER_REGION } else { SETUP_PASS }
}

fn describe(what: &str, errno: Errno) -> String {
    format!("{what}: {}", errno.name())
}

/// Opens the region and checks it is the right kind of thing.
fn open_checked<P: BlockIo>(device: &Device) -> Result<Fd, String> {
    let fd = P::open_region(device)
        .map_err(|e| format!("{}: {}", describe(&format!("open {}", device.path), e), device.what))?;
    if let Err(reason) = P::check_kind(fd, device) {
        let _ = P::close(fd);
        return Err(format!("{}: {reason}", device.path));
    }
    Ok(fd)
}

/// Writes every block of the region with a setup stamp (untimed).
fn prepare_region<P: BlockIo>(device: &Device, buffer: &mut ChunkBuffer) -> Result<(), String> {
    let fd = open_checked::<P>(device)?;
    let written = (0..CHUNKS_PER_REGION).try_for_each(|chunk| {
        let first_block = chunk * CHUNK_BLOCKS;
        stamp_chunk(buffer.bytes_mut(), first_block, SETUP_PASS, 0);
        match P::write_at(fd, buffer.bytes(), offset_of(first_block)) {
            Ok(CHUNK_BYTES) => Ok(()),
            Ok(short) => Err(format!("{}: a write of {CHUNK_BYTES} bytes wrote {short}", device.path)),
            Err(e) => Err(describe(&format!("write {}", device.path), e)),
        }
    });
    let closed = P::close(fd).map_err(|e| describe(&format!("close {}", device.path), e));
    written.and(closed)
}

/// What a job sends back, as five little-endian words on its pipe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct JobReport {
    status: u64,
    elapsed_ticks: u64,
    cpu_ns: u64,
    /// Status-dependent: an errno, a byte count, a block number.
    detail: u64,
    /// The pass it happened at.
    pass: u64,
}

const REPORT_BYTES: usize = 40;

/// [`JobReport::status`] values.
mod status {
    pub const READY: u64 = 1;
    pub const DONE: u64 = 2;
    pub const OPEN_FAILED: u64 = 3;
    pub const READ_FAILED: u64 = 4;
    pub const SHORT_READ: u64 = 5;
    pub const WRITE_FAILED: u64 = 6;
    pub const SHORT_WRITE: u64 = 7;
    pub const WRONG_DATA: u64 = 8;
    pub const GO_FAILED: u64 = 9;
}

impl JobReport {
    fn encode(&self) -> [u8; REPORT_BYTES] {
        let mut bytes = [0u8; REPORT_BYTES];
        for (slot, word) in
            [self.status, self.elapsed_ticks, self.cpu_ns, self.detail, self.pass].iter().enumerate()
        {
            bytes[slot * 8..slot * 8 + 8].copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }

    fn decode(bytes: &[u8; REPORT_BYTES]) -> JobReport {
        let word = |slot: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[slot * 8..slot * 8 + 8]);
            u64::from_le_bytes(w)
        };
        JobReport { status: word(0), elapsed_ticks: word(1), cpu_ns: word(2), detail: word(3), pass: word(4) }
    }

    fn failed(status: u64, detail: u64, pass: u64) -> JobReport {
        JobReport { status, detail, pass, ..JobReport::default() }
    }

    /// Why job `job` failed, in words.
    fn reason(&self, job: usize, device: &Device) -> String {
        let errno = || Errno(self.detail).name();
        let (pass, path) = (self.pass, device.path);
        match self.status {
            status::OPEN_FAILED => format!("job {job}: open {path}: {}", errno()),
            status::READ_FAILED => format!("job {job}: read {path} at pass {pass}: {}", errno()),
            status::SHORT_READ => {
                format!(
                    "job {job}: a read of {CHUNK_BYTES} bytes from {path} gave {} at pass {pass}",
                    self.detail
                )
            }
            status::WRITE_FAILED => format!("job {job}: write {path} at pass {pass}: {}", errno()),
            status::SHORT_WRITE => {
                format!(
                    "job {job}: a write of {CHUNK_BYTES} bytes to {path} wrote {} at pass {pass}",
                    self.detail
                )
            }
            status::WRONG_DATA => {
                format!("job {job}: pass {pass} read wrong data in block {} of {path}", self.detail)
            }
            status::GO_FAILED => format!("job {job}: waiting for the start: {}", errno()),
            other => format!("job {job}: reported status {other}"),
        }
    }
}

/// One run of `jobs` jobs at once.
struct JobsRun {
    reports: Vec<JobReport>,
    counters: [u64; MAX_COUNTERS],
    counter_names: &'static [&'static str],
}

/// Forks `jobs` jobs, starts them together and collects their reports.
fn run_jobs<P: BlockIo>(device: &Device, jobs: usize, buffer: &mut ChunkBuffer) -> Result<JobsRun, String> {
    let call = |what: &str, result: Result<_, Errno>| result.map_err(|e| describe(what, e));
    let (go_read, go_write) = call("pipe", P::pipe())?;
    let mut children: Vec<(u64, Fd)> = Vec::new();
    let mut failure = None;
    for job in 0..jobs {
        let (report_read, report_write) = match P::pipe() {
            Ok(ends) => ends,
            Err(e) => {
                failure = Some(describe("pipe", e));
                break;
            }
        };
        match P::fork() {
            Ok(0) => {
                // The job: its own ends only, so the parent sees end of
                // file if it dies and the go pipe closes when the parent
                // closes its end.
                let _ = P::close(go_write);
                let _ = P::close(report_read);
                for &(_, other) in &children {
                    let _ = P::close(other);
                }
                let report = job_main::<P>(device, job as u64, jobs as u64, go_read, report_write, buffer);
                P::exit(i32::from(report.status != status::DONE))
            }
            Ok(pid) => {
                let _ = P::close(report_write);
                children.push((pid, report_read));
            }
            Err(e) => {
                let _ = (P::close(report_read), P::close(report_write));
                failure = Some(describe("fork", e));
                break;
            }
        }
    }
    let _ = P::close(go_read);
    // Every job that started says it is ready (its region open, its buffer
    // touched) before any is let go.
    for (job, &(_, fd)) in children.iter().enumerate() {
        match read_report::<P>(fd) {
            Ok(report) if report.status == status::READY => {}
            Ok(report) => {
                failure.get_or_insert_with(|| report.reason(job, device));
            }
            Err(reason) => {
                failure.get_or_insert_with(|| format!("job {job}: {reason}"));
            }
        }
    }
    let mut before = [0u64; MAX_COUNTERS];
    P::read_counters(&mut before);
    // Closing the go pipe starts every job at once (each reads end of file).
    let _ = P::close(go_write);
    let mut reports = Vec::new();
    for (job, &(_, fd)) in children.iter().enumerate() {
        match read_report::<P>(fd) {
            Ok(report) if report.status == status::DONE => reports.push(report),
            Ok(report) => {
                failure.get_or_insert_with(|| report.reason(job, device));
            }
            Err(reason) => {
                failure.get_or_insert_with(|| format!("job {job}: {reason}"));
            }
        }
    }
    let mut after = [0u64; MAX_COUNTERS];
    let counter_names = P::read_counters(&mut after);
    for (job, &(pid, fd)) in children.iter().enumerate() {
        let _ = P::close(fd);
        match P::wait(pid) {
            Ok(Some(0)) => {}
            Ok(Some(code)) => {
                failure.get_or_insert_with(|| format!("job {job} exited with {code}"));
            }
            Ok(None) => {
                failure.get_or_insert_with(|| format!("job {job} was killed by a signal"));
            }
            Err(e) => {
                failure.get_or_insert_with(|| describe(&format!("waitpid for job {job}"), e));
            }
        }
    }
    if let Some(reason) = failure {
        return Err(reason);
    }
    let mut counters = [0u64; MAX_COUNTERS];
    for (delta, (a, b)) in counters.iter_mut().zip(after.iter().zip(&before)) {
        *delta = a.wrapping_sub(*b);
    }
    Ok(JobsRun { reports, counters, counter_names })
}

/// Reads one report: exactly [`REPORT_BYTES`], or the job went away.
fn read_report<P: BlockIo>(fd: Fd) -> Result<JobReport, String> {
    let mut bytes = [0u8; REPORT_BYTES];
    let mut filled = 0;
    while filled < REPORT_BYTES {
        match P::read(fd, &mut bytes[filled..]) {
            Ok(0) => return Err(String::from("ended without a report")),
            Ok(n) => filled += n,
            Err(e) => return Err(describe("read its report", e)),
        }
    }
    Ok(JobReport::decode(&bytes))
}

/// A job, in its forked process: open, say ready, wait for the start,
/// run the passes, report. Returns the last report it sent.
fn job_main<P: BlockIo>(
    device: &Device,
    job: u64,
    jobs: u64,
    go: Fd,
    report: Fd,
    buffer: &mut ChunkBuffer,
) -> JobReport {
    let send = |message: JobReport| {
        let _ = P::write(report, &message.encode());
        message
    };
    let fd = match P::open_region(device) {
        Ok(fd) => fd,
        Err(e) => return send(JobReport::failed(status::OPEN_FAILED, e.0, 0)),
    };
    // The buffer is the parent's, shared copy-on-write after fork: write
    // it now so no copy happens inside the timed passes.
    buffer.bytes_mut().fill(0);
    send(JobReport { status: status::READY, ..JobReport::default() });
    let mut byte = [0u8; 1];
    match P::read(go, &mut byte) {
        Ok(0) => {}
        Ok(_) => return send(JobReport::failed(status::GO_FAILED, 0, 0)),
        Err(e) => return send(JobReport::failed(status::GO_FAILED, e.0, 0)),
    }
    let result = passes::<P>(fd, job, jobs, buffer);
    let _ = P::close(fd);
    send(result)
}

/// The timed part: [`PASSES`] passes of one read and one write of a chunk.
fn passes<P: BlockIo>(fd: Fd, job: u64, jobs: u64, buffer: &mut ChunkBuffer) -> JobReport {
    let (start_ticks, start_cpu_ns) = (now_ticks(), P::cpu_time_ns());
    for pass in 0..PASSES {
        let first_block = chunk_of(pass);
        let offset = offset_of(first_block);
        match P::read_at(fd, buffer.bytes_mut(), offset) {
            Ok(CHUNK_BYTES) => {}
            Ok(short) => return JobReport::failed(status::SHORT_READ, short as u64, pass),
            Err(e) => return JobReport::failed(status::READ_FAILED, e.0, pass),
        }
        let expect = if jobs == 1 { Expect::Pass(last_writer(pass)) } else { Expect::AnyOf(jobs) };
        if check_chunk(buffer.bytes(), first_block, expect).is_err() {
            let block = first_wrong_block(buffer.bytes(), first_block, expect);
            return JobReport::failed(status::WRONG_DATA, block, pass);
        }
        stamp_chunk(buffer.bytes_mut(), first_block, pass, job);
        match P::write_at(fd, buffer.bytes(), offset) {
            Ok(CHUNK_BYTES) => {}
            Ok(short) => return JobReport::failed(status::SHORT_WRITE, short as u64, pass),
            Err(e) => return JobReport::failed(status::WRITE_FAILED, e.0, pass),
        }
    }
    JobReport {
        status: status::DONE,
        elapsed_ticks: now_ticks().wrapping_sub(start_ticks),
        cpu_ns: P::cpu_time_ns().saturating_sub(start_cpu_ns),
        detail: 0,
        pass: PASSES,
    }
}

/// The region block number of the first block of a chunk that fails its check.
fn first_wrong_block(chunk: &[u8], first_block: u64, expect: Expect) -> u64 {
    (0..CHUNK_BLOCKS)
        .find(|&index| {
            let at = index as usize * BLOCK_BYTES;
            check_chunk(&chunk[at..at + BLOCK_BYTES], first_block + index, expect).is_err()
        })
        .map_or(first_block, |index| first_block + index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_devices() {
        assert_eq!(figure_name("brd", 1, false), "d_brd_1job");
        assert_eq!(figure_name("ramdriver", 5, false), "d_ramdriver_5jobs");
        assert_eq!(figure_name("virtio", 1, true), "d_virtio_1job_cpu");
        assert_eq!(figure_name("pddriver", MANY_JOBS, true), "d_pddriver_5jobs_cpu");
        for name in LINUX_DEVICES.iter().chain(&RIDGEBACK_DEVICES) {
            assert_eq!(device(name).unwrap().name, *name);
        }
        assert!(device("ra81").is_none());
        assert!(DEVICES.iter().all(|d| d.is_file == (d.access == Access::Cached)));
        assert_eq!(CHUNK_BYTES, 32 << 10);
        assert_eq!(REGION_BLOCKS as usize * BLOCK_BYTES, 64 << 10);
    }

    #[test]
    fn passes_walk_the_region_and_rewind() {
        let chunks: Vec<u64> = (0..5).map(chunk_of).collect();
        assert_eq!(chunks, [0, 64, 0, 64, 0]);
        assert_eq!(offset_of(64), 32 << 10);
        assert_eq!(
            (last_writer(0), last_writer(1), last_writer(2), last_writer(7)),
            (SETUP_PASS, SETUP_PASS, 0, 5)
        );
    }

    #[test]
    fn stamps_are_checked_block_by_block() {
        let mut chunk = vec![0u8; CHUNK_BYTES];
        stamp_chunk(&mut chunk, 64, 7, 3);
        assert_eq!(check_chunk(&chunk, 64, Expect::Pass(7)), Ok(()));
        assert_eq!(check_chunk(&chunk, 64, Expect::AnyOf(5)), Ok(()));
        assert!(check_chunk(&chunk, 64, Expect::Pass(5)).unwrap_err().contains("lost or misplaced a write"));
        assert!(check_chunk(&chunk, 64, Expect::AnyOf(3)).is_err(), "job 3 of 3 jobs does not exist");
        assert!(check_chunk(&chunk, 0, Expect::Pass(7)).unwrap_err().contains("data from elsewhere"));
        // One block from elsewhere in the middle of the chunk.
        chunk[10 * BLOCK_BYTES + 8] ^= 1;
        assert_eq!(first_wrong_block(&chunk, 64, Expect::Pass(7)), 74);
        // The setup stamp passes the several-jobs check.
        stamp_chunk(&mut chunk, 0, SETUP_PASS, 0);
        assert_eq!(check_chunk(&chunk, 0, Expect::AnyOf(5)), Ok(()));
    }

    #[test]
    fn reports_cross_the_pipe_intact() {
        let report =
            JobReport { status: status::DONE, elapsed_ticks: 1 << 40, cpu_ns: 7, detail: 9, pass: 2000 };
        assert_eq!(JobReport::decode(&report.encode()), report);
        let device = device("brd").unwrap();
        let failed = JobReport::failed(status::SHORT_READ, 4096, 3);
        assert_eq!(
            failed.reason(2, device),
            "job 2: a read of 32768 bytes from /dev/ram0 gave 4096 at pass 3"
        );
        let open = JobReport::failed(status::OPEN_FAILED, 2, 0);
        assert!(
            open.reason(0, device).starts_with("job 0: open /dev/ram0: ENOENT"),
            "{}",
            open.reason(0, device)
        );
    }
}
