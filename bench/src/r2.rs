//! Seed 001's Table 2 (Ridge OS on a Ridge 32 against 4.2BSD on a VAX
//! 11/780): the system-level rows, `docs/benchmarks.md` R2. The same
//! loops run on both systems through the [`Unix`] calls:
//!
//! | figure | one operation | unit |
//! |---|---|---|
//! | `write` | `creat` a new file, write 8 MiB in 8 KiB blocks, `close` | MB/s |
//! | `read` | `open` that file, read its 8 MiB in 8 KiB blocks, `close` | MB/s |
//! | `copy` | `open` it, `creat` a new file, 8 KiB `read` + `write` to the end, two `close`s | MB/s |
//! | `pipe` | 8 MiB written in 8 KiB blocks into a pipe, read by a forked child, which acknowledges each 8 MiB with 8 bytes on a second pipe | MB/s |
//! | `getpid` | one `getpid` | ns/op |
//! | `sbrk` | one `sbrk(+64)`; every 1024th operation also moves the break back by 64 KiB | ns/op |
//! | `creat` | `creat` a file of a name never used before, then `close` it | ns/op |
//! | `fork` | `fork`; the child `exit(0)`s at once; the parent `waitpid`s for it | ns/op |
//! | `sbrk_touch` | one `sbrk(+4 KiB)` and the first write to that page, never touched before (issue 16): on Ridgeback a page fault answered by the VM manager, on Linux `brk` and its page fault | ns/op |
//!
//! What is timed and what is not (a [`harness::Stopwatch`] section each): the
//! `unlink` of the previous pass's file (`write`, `copy`) and of each batch
//! of [`CREAT_BATCH`] created names (`creat`) are not timed, so each pass
//! creates a new file and the directory stays small, and freeing the old
//! file's memory is not charged to the next write; making the pipes and
//! forking the pipe's reader happen once, before the figure. Everything
//! else is.
//!
//! Checks, so that a broken system fails a figure instead of flattering
//! it: every block written carries its number in its first 8 bytes, and
//! `read` and `copy` check each one they read; the pipe's reader checks
//! every block's number and acknowledges the count it saw; `copy`'s result
//! is read back after the figure; each forked child must exit with 0; the
//! break must end where it started.
//!
//! Where: the files are in [`DIR`], the memory file system's `/tmp` on
//! Ridgeback and a tmpfs on the Linux guest; the disk rows put them under
//! [`DISK_DIR`], ext2 on the virtio-blk disk on both systems, and their
//! `_fsync` variant ([`Session::with_fsync`]) `fsync`s each file written
//! before its `close`, the clock running.

use crate::Platform;
use crate::harness::{self, Config, Measurement, Unit, measure_sections};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use core::fmt::Write;
use core::hint::black_box;

/// A file descriptor.
pub type Fd = i32;

/// An error number: POSIX numbers with Linux's values, which both systems use.
pub use protocols::unix::Errno;

/// The UNIX calls the R2 rows use, on top of [`Platform`]. Each is the
/// system's own call, one to one: on Linux the C library's system call,
/// on Ridgeback `runtime::unix` (a message to the user monitor or the
/// object's manager).
pub trait Unix: Platform {
    /// `creat(path, 0644)`: `open` with write-only, create and truncate.
    fn create(path: &str) -> Result<Fd, Errno>;
    /// `open(path, O_RDONLY)`.
    fn open_read(path: &str) -> Result<Fd, Errno>;
    /// `read`: at most `buffer.len()` bytes; 0 at end of file.
    fn read(fd: Fd, buffer: &mut [u8]) -> Result<usize, Errno>;
    /// `write`: how many bytes of `bytes` were written.
    fn write(fd: Fd, bytes: &[u8]) -> Result<usize, Errno>;
    fn close(fd: Fd) -> Result<(), Errno>;
    /// `fsync(fd)`: what was written to `fd` reaches the device (the disk
    /// rows' `_fsync` figures, and benchmark B).
    fn fsync(fd: Fd) -> Result<(), Errno>;
    /// `sync()`: every file system writes what it holds.
    fn sync() -> Result<(), Errno>;
    fn unlink(path: &str) -> Result<(), Errno>;
    /// `pipe`: (read end, write end).
    fn pipe() -> Result<(Fd, Fd), Errno>;
    /// `fork`: 0 in the child, the child's process id in the parent.
    fn fork() -> Result<u64, Errno>;
    /// Ends the calling process with `status` (`_exit`: nothing is flushed).
    fn exit(status: i32) -> !;
    /// `waitpid(pid, 0)`: the child's exit status, or `None` when a
    /// signal ended it.
    fn wait(pid: u64) -> Result<Option<i32>, Errno>;
    /// `sbrk(increment)`: moves the break; returns the old one.
    /// `sbrk(0)` asks where it is.
    fn sbrk(increment: isize) -> Result<usize, Errno>;
}

/// Where the files go: a memory file system on both systems.
pub const DIR: &str = "/tmp";
/// Where the disk rows' files go: ext2 on the virtio-blk disk, on both
/// systems (`docs/benchmarks.md` R2 on disk).
pub const DISK_DIR: &str = "/disk";
/// The figures the disk rows measure: the ones that touch files. `read`
/// has no `_fsync` variant ([`FSYNC_FIGURES`]): a read leaves nothing for
/// `fsync` to force.
pub const DISK_FIGURES: [&str; 4] = ["write", "read", "copy", "creat"];
pub const FSYNC_FIGURES: [&str; 3] = ["write", "copy", "creat"];
/// What the disk rows' names end with: `r2_write_8MB_disk`, and with
/// `fsync` before the clock stops `r2_write_8MB_disk_fsync`.
pub const DISK_SUFFIX: &str = "_disk";
pub const FSYNC_SUFFIX: &str = "_disk_fsync";
/// The file of the bandwidth rows: 8 MiB (the seed's "8 MB").
pub const FILE_BYTES: usize = 8 << 20;
/// One `read` or `write`: 8 KiB (the seed's "8 KB blocks").
pub const BLOCK_BYTES: usize = 8 << 10;
const BLOCKS: u64 = (FILE_BYTES / BLOCK_BYTES) as u64;
/// The `sbrk` row's increment: small, as a program growing its heap by
/// an object at a time would ask.
pub const SBRK_INCREMENT_BYTES: isize = 64;
/// After this many increments the break goes back where it was (one more
/// `sbrk` call, timed), so the heap stays within 64 KiB.
pub const SBRK_RESET_EVERY: u64 = 1024;
/// The `creat` row removes its files, untimed, after this many.
pub const CREAT_BATCH: u64 = 256;

/// The figures, as the programs' command lines name them.
/// `sbrk_touch` comes last: the heap it leaves mapped on Ridgeback (the
/// break goes back, its pages stay) must not weigh on `fork`.
pub const FIGURES: [&str; 9] =
    ["write", "read", "copy", "pipe", "getpid", "sbrk", "creat", "fork", "sbrk_touch"];
/// The `sbrk_touch` row: the most heap its fresh pages may span, so that a
/// fast machine's many iterations cannot take the guest's memory
/// (Ridgeback keeps every page a process touched until it ends).
pub const SBRK_TOUCH_MAX_BYTES: usize = 128 << 20;
/// The `sbrk_touch` row's samples are this much shorter than the
/// others' (1/10): each iteration needs a page never touched before.
pub const SBRK_TOUCH_SAMPLE_DIVISOR: u64 = 10;

/// The name of a figure's result line (`BENCH {"name": ...}`), for a word
/// of [`FIGURES`].
pub fn figure_name(figure: &str) -> &'static str {
    match figure {
        "write" => "r2_write_8MB",
        "read" => "r2_read_8MB",
        "copy" => "r2_copy_8MB",
        "pipe" => "r2_pipe_8MB",
        "getpid" => "r2_getpid",
        "sbrk" => "r2_sbrk",
        "creat" => "r2_creat_close",
        "fork" => "r2_fork_exit_wait",
        "sbrk_touch" => "r2_sbrk_touch",
        _ => "r2_unknown",
    }
}

/// One block of file or pipe data, on a page boundary as an I/O buffer
/// usually is (on Ridgeback a whole aligned page may travel by loan
/// instead of by copy; the kernel counters say which happened).
#[repr(C, align(4096))]
pub struct Block(pub [u8; BLOCK_BYTES]);

// `align` takes only a literal: this ties it to the page size.
const _: () = assert!(core::mem::align_of::<Block>() as u64 == abi::layout::PAGE_SIZE);

impl Block {
    fn new() -> Box<Block> {
        Box::new(Block([0x5a; BLOCK_BYTES]))
    }

    /// Writes `number` into the first 8 bytes, as a producer of new data
    /// would write each block.
    fn stamp(&mut self, number: u64) {
        self.0[..8].copy_from_slice(&number.to_le_bytes());
    }

    fn number(&self) -> u64 {
        let mut word = [0u8; 8];
        word.copy_from_slice(&self.0[..8]);
        u64::from_le_bytes(word)
    }
}

/// State kept between the figures of one program run: the buffers, the
/// file paths and whether the 8 MiB file exists.
pub struct Session {
    file_path: String,
    copy_path: String,
    dir: String,
    block: Box<Block>,
    other_block: Box<Block>,
    is_file_written: bool,
    /// The next never-used name number of the `creat` row.
    next_name: u64,
    /// `fsync` every file written before its `close`, inside the timed
    /// section (the disk rows' `_fsync` figures).
    is_fsync: bool,
}

impl Session {
    /// A session whose files go into `dir`.
    pub fn new(dir: &str) -> Session {
        Session {
            file_path: format!("{dir}/r2-file"),
            copy_path: format!("{dir}/r2-copy"),
            dir: String::from(dir),
            block: Block::new(),
            other_block: Block::new(),
            is_file_written: false,
            next_name: 0,
            is_fsync: false,
        }
    }

    /// A session whose files go into `dir` and that `fsync`s each file it
    /// writes before closing it, the clock still running.
    pub fn with_fsync(dir: &str) -> Session {
        Session { is_fsync: true, ..Session::new(dir) }
    }

    /// Measures `figure` (a word of [`FIGURES`]) and prints its result
    /// line; on failure returns the reason (the caller reports it).
    pub fn run<P: Unix>(&mut self, figure: &str, config: &Config) -> Result<(), String> {
        let (unit, measurement) = self.measure::<P>(figure, config)?;
        harness::report::<P>(figure_name(figure), unit, &measurement);
        Ok(())
    }

    /// Measures `figure` without printing it.
    pub fn measure<P: Unix>(&mut self, figure: &str, config: &Config) -> Result<(Unit, Measurement), String> {
        let file_bandwidth = Unit::MegabytesPerSecond { bytes_per_op: FILE_BYTES as u64 };
        let measurement = match figure {
            "write" => self.write_figure::<P>(config)?,
            "read" => self.read_figure::<P>(config)?,
            "copy" => self.copy_figure::<P>(config)?,
            "pipe" => self.pipe_figure::<P>(config)?,
            "getpid" => getpid_figure::<P>(config)?,
            "sbrk" => sbrk_figure::<P>(config)?,
            "creat" => self.creat_figure::<P>(config)?,
            "fork" => fork_figure::<P>(config)?,
            "sbrk_touch" => sbrk_touch_figure::<P>(config)?,
            other => return Err(format!("unknown figure {other:?} (figures: {FIGURES:?})")),
        };
        let unit = match figure {
            "write" | "read" | "copy" | "pipe" => file_bandwidth,
            _ => Unit::NanosPerOp,
        };
        Ok((unit, measurement))
    }

    /// Removes the files the figures left (the 8 MiB file and its copy).
    pub fn clean_up<P: Unix>(&mut self) {
        let _ = P::unlink(&self.file_path);
        let _ = P::unlink(&self.copy_path);
        self.is_file_written = false;
    }

    fn write_figure<P: Unix>(&mut self, config: &Config) -> Result<Measurement, String> {
        let unit = Unit::MegabytesPerSecond { bytes_per_op: FILE_BYTES as u64 };
        let (path, block, is_fsync) = (&self.file_path, &mut self.block, self.is_fsync);
        let measurement = measure_sections::<P>(unit, config, |iterations, stopwatch| {
            for _ in 0..iterations {
                // A new file each time: the old one (absent the first
                // time, hence no error check) goes untimed.
                let _ = P::unlink(path);
                stopwatch.start();
                write_file::<P>(path, block, is_fsync)?;
                stopwatch.stop();
            }
            Ok(())
        })?;
        self.is_file_written = true;
        Ok(measurement)
    }

    /// Writes the 8 MiB file, untimed, unless a figure already did.
    fn ensure_file<P: Unix>(&mut self) -> Result<(), String> {
        if !self.is_file_written {
            let _ = P::unlink(&self.file_path);
            write_file::<P>(&self.file_path, &mut self.block, false)?;
            self.is_file_written = true;
        }
        Ok(())
    }

    fn read_figure<P: Unix>(&mut self, config: &Config) -> Result<Measurement, String> {
        self.ensure_file::<P>()?;
        let unit = Unit::MegabytesPerSecond { bytes_per_op: FILE_BYTES as u64 };
        let (path, block) = (&self.file_path, &mut self.block);
        measure_sections::<P>(unit, config, |iterations, stopwatch| {
            stopwatch.start();
            for _ in 0..iterations {
                let fd = call("open", P::open_read(path))?;
                for number in 0..BLOCKS {
                    read_block::<P>(fd, block, number, path)?;
                }
                call("close", P::close(fd))?;
            }
            stopwatch.stop();
            Ok(())
        })
    }

    fn copy_figure<P: Unix>(&mut self, config: &Config) -> Result<Measurement, String> {
        self.ensure_file::<P>()?;
        let unit = Unit::MegabytesPerSecond { bytes_per_op: FILE_BYTES as u64 };
        let (from, to, block, is_fsync) = (&self.file_path, &self.copy_path, &mut self.block, self.is_fsync);
        let measurement = measure_sections::<P>(unit, config, |iterations, stopwatch| {
            for _ in 0..iterations {
                let _ = P::unlink(to);
                stopwatch.start();
                let source = call("open", P::open_read(from))?;
                let destination = call("creat", P::create(to))?;
                for number in 0..BLOCKS {
                    read_block::<P>(source, block, number, from)?;
                    write_all::<P>(destination, &block.0)?;
                }
                call("close", P::close(source))?;
                if is_fsync {
                    call("fsync", P::fsync(destination))?;
                }
                call("close", P::close(destination))?;
                stopwatch.stop();
            }
            Ok(())
        })?;
        // The copy must hold what the source holds, block by block.
        let fd = call("open the copy", P::open_read(&self.copy_path))?;
        let checked =
            (0..BLOCKS).try_for_each(|number| read_block::<P>(fd, &mut self.block, number, "the copy"));
        let _ = P::close(fd);
        checked?;
        Ok(measurement)
    }

    fn pipe_figure<P: Unix>(&mut self, config: &Config) -> Result<Measurement, String> {
        let (data_read, data_write) = call("pipe", P::pipe())?;
        let (ack_read, ack_write) = match P::pipe() {
            Ok(ends) => ends,
            Err(errno) => {
                let _ = (P::close(data_read), P::close(data_write));
                return Err(describe("pipe", errno));
            }
        };
        let child = match P::fork() {
            Ok(0) => {
                // The reader: its own ends only, so that it sees end of
                // file when the writer closes its end.
                let _ = (P::close(data_write), P::close(ack_read));
                P::exit(read_pipe::<P>(data_read, ack_write, &mut self.other_block) as i32)
            }
            Ok(pid) => pid,
            Err(errno) => {
                for fd in [data_read, data_write, ack_read, ack_write] {
                    let _ = P::close(fd);
                }
                return Err(describe("fork", errno));
            }
        };
        let _ = (P::close(data_read), P::close(ack_write));
        let unit = Unit::MegabytesPerSecond { bytes_per_op: FILE_BYTES as u64 };
        let mut sequence = 0u64;
        let block = &mut self.block;
        let measured = measure_sections::<P>(unit, config, |iterations, stopwatch| {
            stopwatch.start();
            for _ in 0..iterations {
                for _ in 0..BLOCKS {
                    block.stamp(sequence);
                    sequence += 1;
                    write_all::<P>(data_write, &block.0)?;
                }
                let mut ack = [0u8; 8];
                if read_full::<P>(ack_read, &mut ack)? != ack.len() {
                    return Err(String::from("the pipe's reader went away"));
                }
                let seen = u64::from_le_bytes(ack);
                if seen != sequence {
                    return Err(format!("the reader saw {seen} blocks, {sequence} were written"));
                }
            }
            stopwatch.stop();
            Ok(())
        });
        // The reader sees end of file and exits.
        let _ = (P::close(data_write), P::close(ack_read));
        let ended = P::wait(child);
        let measurement = measured?;
        match ended {
            Ok(Some(0)) => Ok(measurement),
            Ok(Some(status)) => {
                Err(format!("the pipe's reader exited with {status} ({})", ReaderExit::meaning(status)))
            }
            Ok(None) => Err(String::from("the pipe's reader was killed by a signal")),
            Err(errno) => Err(describe("waitpid", errno)),
        }
    }

    fn creat_figure<P: Unix>(&mut self, config: &Config) -> Result<Measurement, String> {
        let (dir, next_name, is_fsync) = (&self.dir, &mut self.next_name, self.is_fsync);
        measure_sections::<P>(Unit::NanosPerOp, config, |iterations, stopwatch| {
            let mut first_of_batch = *next_name;
            stopwatch.start();
            for _ in 0..iterations {
                let name = Name::new(dir, *next_name)?;
                *next_name += 1;
                // The name says how far the figure got (its number counts
                // from the session's first creat).
                let fd =
                    P::create(name.as_str()).map_err(|e| describe(&format!("creat {}", name.as_str()), e))?;
                if is_fsync {
                    call("fsync", P::fsync(fd))?;
                }
                call("close", P::close(fd))?;
                if *next_name - first_of_batch == CREAT_BATCH {
                    stopwatch.stop();
                    remove_names::<P>(dir, first_of_batch..*next_name)?;
                    first_of_batch = *next_name;
                    stopwatch.start();
                }
            }
            stopwatch.stop();
            remove_names::<P>(dir, first_of_batch..*next_name)
        })
    }
}

/// Adds the call's name and the error's to a failed call.
fn call<T>(what: &str, result: Result<T, Errno>) -> Result<T, String> {
    result.map_err(|errno| describe(what, errno))
}

fn describe(what: &str, errno: Errno) -> String {
    format!("{what}: {} (errno {errno})", errno.name())
}

/// `creat`s the file and writes its [`BLOCKS`] numbered blocks, then
/// `fsync`s it if asked.
fn write_file<P: Unix>(path: &str, block: &mut Block, is_fsync: bool) -> Result<(), String> {
    let fd = call("creat", P::create(path))?;
    for number in 0..BLOCKS {
        block.stamp(number);
        write_all::<P>(fd, &block.0)?;
    }
    if is_fsync {
        call("fsync", P::fsync(fd))?;
    }
    call("close", P::close(fd))
}

/// Reads block `number` of `what` and checks that it is that block.
fn read_block<P: Unix>(fd: Fd, block: &mut Block, number: u64, what: &str) -> Result<(), String> {
    let got = read_full::<P>(fd, &mut block.0)?;
    if got != BLOCK_BYTES {
        return Err(format!("{what}: block {number} has {got} bytes, not {BLOCK_BYTES}"));
    }
    if block.number() != number {
        return Err(format!("{what}: block {number} holds block {}", block.number()));
    }
    Ok(())
}

/// Writes all of `bytes`.
fn write_all<P: Unix>(fd: Fd, mut bytes: &[u8]) -> Result<(), String> {
    while !bytes.is_empty() {
        match call("write", P::write(fd, bytes))? {
            0 => return Err(String::from("write: wrote nothing")),
            written => bytes = &bytes[written.min(bytes.len())..],
        }
    }
    Ok(())
}

/// Reads until `buffer` is full or end of file; returns the bytes read.
fn read_full<P: Unix>(fd: Fd, buffer: &mut [u8]) -> Result<usize, String> {
    let mut filled = 0;
    while filled < buffer.len() {
        match call("read", P::read(fd, &mut buffer[filled..]))? {
            0 => break,
            got => filled += got.min(buffer.len() - filled),
        }
    }
    Ok(filled)
}

/// How the pipe's reader ends: its exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
enum ReaderExit {
    /// End of file between two 8 MiB passes: the writer closed its end.
    Done = 0,
    /// End of file in the middle of a pass.
    ShortPass = 3,
    ReadFailed = 4,
    /// A block out of order, lost or repeated.
    WrongBlock = 5,
    AckFailed = 6,
}

impl ReaderExit {
    fn meaning(status: i32) -> &'static str {
        match status {
            0 => "done",
            3 => "end of file in the middle of 8 MiB",
            4 => "a read failed",
            5 => "a block arrived out of order",
            6 => "the acknowledgement could not be written",
            _ => "not a status the reader uses",
        }
    }
}

/// The pipe's reader, in the forked child: reads 8 MiB passes of numbered
/// blocks from `data`, checks every block's number, and after each pass
/// writes the count of blocks seen so far to `ack`. Allocates nothing.
fn read_pipe<P: Unix>(data: Fd, ack: Fd, block: &mut Block) -> ReaderExit {
    let mut sequence = 0u64;
    loop {
        for index in 0..BLOCKS {
            match read_full::<P>(data, &mut block.0) {
                Ok(0) if index == 0 => return ReaderExit::Done,
                Ok(BLOCK_BYTES) => {}
                Ok(_) => return ReaderExit::ShortPass,
                Err(_) => return ReaderExit::ReadFailed,
            }
            if block.number() != sequence {
                return ReaderExit::WrongBlock;
            }
            sequence += 1;
        }
        let bytes = sequence.to_le_bytes();
        if !matches!(P::write(ack, &bytes), Ok(8)) {
            return ReaderExit::AckFailed;
        }
    }
}

fn getpid_figure<P: Unix>(config: &Config) -> Result<Measurement, String> {
    measure_sections::<P>(Unit::NanosPerOp, config, |iterations, stopwatch| {
        stopwatch.start();
        for _ in 0..iterations {
            black_box(P::getpid());
        }
        stopwatch.stop();
        Ok(())
    })
}

fn sbrk_figure<P: Unix>(config: &Config) -> Result<Measurement, String> {
    let start = call("sbrk(0)", P::sbrk(0))?;
    let measured = measure_sections::<P>(Unit::NanosPerOp, config, |iterations, stopwatch| {
        let mut increments = 0u64;
        stopwatch.start();
        for _ in 0..iterations {
            call("sbrk", P::sbrk(SBRK_INCREMENT_BYTES))?;
            increments += 1;
            if increments == SBRK_RESET_EVERY {
                call("sbrk", P::sbrk(-SBRK_INCREMENT_BYTES * SBRK_RESET_EVERY as isize))?;
                increments = 0;
            }
        }
        stopwatch.stop();
        call("sbrk", P::sbrk(-SBRK_INCREMENT_BYTES * increments as isize)).map(|_| ())
    });
    let end = call("sbrk(0)", P::sbrk(0))?;
    let measurement = measured?;
    if end != start {
        return Err(format!("the break ended at {end:#x}, not where it started ({start:#x})"));
    }
    Ok(measurement)
}

/// `sbrk(+4 KiB)` and a write to the new page, which no earlier
/// iteration touched: each timed section first moves the break (untimed)
/// to the highest point reached so far, since on Ridgeback a page stays
/// mapped when the break moves back below it. Ridge's `sbrk` is a pointer
/// in the process, so the `sbrk` row times no kernel at all; this row
/// times what a growing heap costs, the page fault to the VM manager,
/// against Linux's `brk` and fault.
fn sbrk_touch_figure<P: Unix>(config: &Config) -> Result<Measurement, String> {
    const PAGE: usize = abi::layout::PAGE_SIZE as usize;
    let start = call("sbrk(0)", P::sbrk(0))?;
    // Fresh pages start at the first page boundary above the break.
    let first_fresh = start.next_multiple_of(PAGE);
    let mut high_water = first_fresh;
    let config =
        Config { min_sample_ns: (config.min_sample_ns / SBRK_TOUCH_SAMPLE_DIVISOR).max(1), ..*config };
    let measured = measure_sections::<P>(Unit::NanosPerOp, &config, |iterations, stopwatch| {
        let pages = usize::try_from(iterations).map_err(|_| String::from("too many iterations"))?;
        if high_water - first_fresh + pages * PAGE > SBRK_TOUCH_MAX_BYTES {
            return Err(format!(
                "{iterations} more fresh pages would take the heap past {SBRK_TOUCH_MAX_BYTES} bytes: samples too long for this row"
            ));
        }
        call("sbrk", P::sbrk((high_water - start) as isize))?;
        stopwatch.start();
        for _ in 0..pages {
            let page = call("sbrk", P::sbrk(PAGE as isize))?;
            // SAFETY: `page .. page + PAGE` lies between the break this
            // loop found and the one it just set: heap this program owns
            // and nothing else uses (the allocator's memory ends below
            // `start`, and it does not allocate while the loop runs).
            unsafe { core::ptr::write_volatile(page as *mut u8, 1) };
        }
        stopwatch.stop();
        high_water += pages * PAGE;
        let now = call("sbrk(0)", P::sbrk(0))?;
        call("sbrk", P::sbrk(-((now - start) as isize))).map(|_| ())
    });
    let end = call("sbrk(0)", P::sbrk(0))?;
    let measurement = measured?;
    if end != start {
        return Err(format!("the break ended at {end:#x}, not where it started ({start:#x})"));
    }
    Ok(measurement)
}

fn fork_figure<P: Unix>(config: &Config) -> Result<Measurement, String> {
    measure_sections::<P>(Unit::NanosPerOp, config, |iterations, stopwatch| {
        stopwatch.start();
        for _ in 0..iterations {
            let child = call("fork", P::fork())?;
            if child == 0 {
                P::exit(0);
            }
            match call("waitpid", P::wait(child))? {
                Some(0) => {}
                Some(status) => return Err(format!("a forked child exited with {status}, not 0")),
                None => return Err(String::from("a forked child was killed by a signal")),
            }
        }
        stopwatch.stop();
        Ok(())
    })
}

/// Removes the `creat` row's files numbered `numbers`.
fn remove_names<P: Unix>(dir: &str, numbers: core::ops::Range<u64>) -> Result<(), String> {
    for number in numbers {
        let name = Name::new(dir, number)?;
        call("unlink", P::unlink(name.as_str()))?;
    }
    Ok(())
}

/// A path `<dir>/r2c<number>` built without allocating (it is made inside
/// the timed loop of the `creat` row).
struct Name {
    bytes: [u8; Name::CAPACITY],
    len: usize,
}

impl Name {
    const CAPACITY: usize = 128;

    fn new(dir: &str, number: u64) -> Result<Name, String> {
        let mut name = Name { bytes: [0; Name::CAPACITY], len: 0 };
        write!(name, "{dir}/r2c{number}").map_err(|_| format!("{dir}: directory name too long"))?;
        Ok(name)
    }

    fn as_str(&self) -> &str {
        // Only whole `str`s are ever written into it.
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl Write for Name {
    fn write_str(&mut self, text: &str) -> core::fmt::Result {
        let end = self.len + text.len();
        if end > self.bytes.len() {
            return Err(core::fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(text.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! The figures themselves run on the host's Linux in `linux`'s tests.

    use super::*;

    #[test]
    fn names_are_built_in_place() {
        assert_eq!(Name::new("/tmp", 42).unwrap().as_str(), "/tmp/r2c42");
        assert!(Name::new(&"x".repeat(200), 1).is_err());
        assert_eq!(figure_name("creat"), "r2_creat_close");
        assert!(FIGURES.iter().all(|f| figure_name(f).starts_with("r2_") && figure_name(f) != "r2_unknown"));
        assert_eq!(ReaderExit::WrongBlock as i32, 5);
        assert_eq!(ReaderExit::meaning(ReaderExit::ShortPass as i32), "end of file in the middle of 8 MiB");
        assert_eq!(ReaderExit::meaning(ReaderExit::Done as i32), "done");
        assert_eq!(ReaderExit::meaning(ReaderExit::ReadFailed as i32), "a read failed");
        assert_eq!(
            ReaderExit::meaning(ReaderExit::AckFailed as i32),
            "the acknowledgement could not be written"
        );
    }
}
