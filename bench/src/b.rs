//! Benchmark B: seed 004, UNIX V1's I/O buffer count against the time to
//! assemble the kernel (`as u*.s`), `docs/benchmarks.md` section B. The
//! same compile-like job runs on both systems, through the [`DiskFs`]
//! calls, on an ext2 volume on the virtio-blk disk.
//!
//! The seed timed V1's two-pass assembler reading the kernel's sources and
//! writing `a.out` (36,432 bytes) with `nbuf` = 1 to 6 block buffers of
//! 512 bytes, each on a freshly booted kernel. One *job* here does what
//! that assembler did, call for call, as the early assembler's sources
//! show it (`cmd/a1.s`, pass 1, and `cmd/as8.s`, pass 2, in the Unix
//! history repository's first-edition-era `cmd/`; the V6 assembler,
//! `as1?.s`/`as2?.s`, is the same design):
//!
//! - **Pass 1** reads [`SOURCES`] (twenty files, 2 to 28 KiB, 200 KiB in
//!   all) in order, in `read`s of [`RECORD_BYTES`] (512: V1's `as` read
//!   through a 512-byte `inbuf`), does CPU work on each record
//!   ([`assemble_block`]: [`CPU_PASSES_PER_BLOCK`] passes of a
//!   byte-at-a-time hash, the scanning and symbol lookups), and writes
//!   its token file ([`TOKENS_NAME`], V1's `/tmp/atm1a`) in writes of 512
//!   (`sys write; outbuf; 512.`) as the tokens of the input read so far
//!   fill them ([`TOKEN_BYTES`], 40 % of the input). At its end it writes
//!   the symbol table file ([`SYMBOLS_NAME`], V1's `atm3a`: one `write`
//!   of [`SYMBOL_BYTES`]).
//! - **Pass 2** reads the token file back, 512 bytes a `read` (`as8.s`'s
//!   `inbuf`), with the same CPU work per 512 bytes, and writes `a.out`
//!   as V1's pass 2 did: two streams, the text and its relocation bits
//!   (V1's `a.out` carries a relocation word per text word, so the two
//!   are the same size, [`TEXT_BYTES`]), each through its own 512-byte
//!   buffer (`txtp`, `relp`) written with a `seek` to the stream's
//!   position and a `write` of 512. The text starts after the 16-byte
//!   header (`txtseek: 20`, octal), so every record ends partway into a
//!   block (16 bytes into one of V1's; 16 or 528 into ext2's 1 KiB) that
//!   the next record continues: a partial write of a block written before, which V1's `dskw` could only do by reading the
//!   block again if it had left the buffers (`dskw`, seed 004's listing:
//!   "if there is not enough data to fill an entire block ... read
//!   block"). Then the symbol table is read and copied to the end of
//!   `a.out`, and the header written at offset 0.
//! - `close`, no `fsync` (the seed's clock stopped when `as` returned).
//!
//! What differs from V1, and why: the file system's block is 1 KiB
//! (ext2's smallest), two of V1's, so a 512-byte `read` or `write` is half
//! a block and a block's two halves are two calls, between which, with
//! one buffer, another file's block can take the buffer (what V1's
//! one-buffer kernel did to the pair of blocks a large file's data and
//! its indirect block were). ext2 maps a file's first 12 KiB directly
//! where V1 put every block of a file over 4 KiB behind an indirect
//! block; the token file (80 KiB), `a.out` and the larger sources are
//! past 12 KiB, so their reads and writes need the indirect block too.
//! V1's pass 1 also wrote a file of forward references (`atm2a`); its
//! records are not known here, so it is left out. The sizes of the token
//! file (40 % of the source) and of the text are chosen, not V1's (not
//! known): the text and relocation with the header and the symbol table
//! make the seed's `a.out` exactly.
//!
//! Cold cache (the seed booted a new kernel for each run): every job is
//! preceded, untimed, by the previous job's `a.out` removed, `sync`, and
//! [`DiskFs::make_cold`]: on Linux `echo 3 > /proc/sys/vm/drop_caches`; on
//! Ridgeback the first job of a boot is cold by the boot itself (the
//! driver boots once per `nbuf`), and later ones by reading an eviction
//! file ([`EVICT_NAME`], [`EVICT_BYTES`]) larger than any buffer count the
//! benchmark uses, so that no block of the job is left in the cache.
//!
//! Checks, so that a broken file system fails the figure instead of
//! flattering it: every source file must have its size and its content
//! ([`source_byte`]: the content is a function of file and offset, which
//! the host used to make the image and the job checks byte for byte as
//! part of its CPU work), and `a.out` must have its size afterwards.

use crate::harness::{self, Config, Measurement, Unit};
use crate::r2::{Errno, Fd, Unix};
use crate::{MAX_COUNTERS, now_ticks};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use core::hint::black_box;

/// The directory of the job's files inside the disk file system.
pub const TREE_DIR: &str = "b";
/// The sources: name and size in bytes.
pub const SOURCES: [(&str, usize); 20] = [
    ("u0.s", 28_160),
    ("u1.s", 14_336),
    ("u2.s", 19_968),
    ("u3.s", 6_144),
    ("u4.s", 11_264),
    ("u5.s", 8_704),
    ("u6.s", 13_824),
    ("u7.s", 9_728),
    ("u8.s", 16_896),
    ("u9.s", 4_096),
    ("ua.s", 7_680),
    ("ub.s", 2_560),
    ("uc.s", 10_752),
    ("ud.s", 3_584),
    ("ue.s", 5_632),
    ("uf.s", 12_800),
    ("ug.s", 2_048),
    ("uh.s", 4_608),
    ("ui.s", 3_072),
    ("ux.s", 18_944),
];
/// Everything the job reads.
pub const SOURCE_BYTES: usize = {
    let mut total = 0;
    let mut i = 0;
    while i < SOURCES.len() {
        total += SOURCES[i].1;
        i += 1;
    }
    total
};
/// The output: the seed's `a.out` (`ls -l`: 36432).
pub const OUTPUT_NAME: &str = "a.out";
pub const OUTPUT_BYTES: usize = 36_432;
/// V1's buffer: the unit of CPU work, and of every `read` and `write`
/// of the job (`as`'s `inbuf`, `outbuf`, `txtp` and `relp` are 512
/// bytes).
pub const BLOCK_BYTES: usize = 512;
pub const RECORD_BYTES: usize = BLOCK_BYTES;
/// Pass 1's token file (V1's `/tmp/atm1a`), read back by pass 2: 40 % of
/// the sources, in whole records.
pub const TOKENS_NAME: &str = "atm1a";
pub const TOKEN_BYTES: usize = SOURCE_BYTES * 2 / 5 / RECORD_BYTES * RECORD_BYTES;
/// Pass 1's symbol table (V1's `/tmp/atm3a`), written once at the end of
/// pass 1 and copied to the end of `a.out` by pass 2.
pub const SYMBOLS_NAME: &str = "atm3a";
/// `a.out`: its header (V1's `txtseek: 20`, octal), its text and data,
/// the same size again of relocation bits, and the symbol table.
pub const HEADER_BYTES: usize = 16;
pub const TEXT_BYTES: usize = 16 << 10;
pub const SYMBOL_BYTES: usize = OUTPUT_BYTES - HEADER_BYTES - 2 * TEXT_BYTES;
/// The contents of the token file and the symbol table, as [`source_byte`]
/// of these indexes, so that pass 2 checks what it reads back.
pub const TOKENS_INDEX: usize = 100;
pub const SYMBOLS_INDEX: usize = 101;
/// Passes of the per-byte hash over each 512-byte block: the CPU share of
/// the job. Chosen so that a disk transfer costs about three blocks' CPU
/// work, so that with one buffer the job is mostly waiting (as V1's:
/// 3.2 s against 0.72 s with six) and with enough buffers the CPU and
/// the opens remain (`docs/filesystem.md`, "Benchmarks", for the split).
pub const CPU_PASSES_PER_BLOCK: u32 = 8;
/// The file read between jobs on Ridgeback to push the job's blocks out of
/// the cache (far more than the 12 buffers of the largest `nbuf` measured).
pub const EVICT_NAME: &str = "evict";
pub const EVICT_BYTES: usize = 256 << 10;
// The output is about a fifth of the input, as V1's a.out was; the
// eviction file is far larger than 12 buffers and their read-ahead; the
// token file is in whole records; a.out's relocation is past its 12
// direct blocks, behind its indirect block.
const _: () = assert!(
    OUTPUT_BYTES < SOURCE_BYTES / 5
        && EVICT_BYTES / 1024 > 12 * 16
        && SYMBOL_BYTES < OUTPUT_BYTES
        && TOKEN_BYTES.is_multiple_of(RECORD_BYTES)
        && TEXT_BYTES > 12 << 10
);

/// A figure's name: `b_nbuf<N>` (Ridgeback), `b_linux` (Linux, its own cache).
pub fn figure_name(nbuf: Option<u32>) -> String {
    match nbuf {
        Some(n) => format!("b_nbuf{n}"),
        None => String::from("b_linux"),
    }
}

/// The disk under B's volume. The figures of each keep their own names,
/// so a published `b_nbuf<N>` always means the plain disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disk {
    /// QEMU's virtio-blk on the image file: a transfer costs QEMU's
    /// request path and the host's page cache, a few tens of
    /// microseconds, far less than the guest's own path through `ext2fs`,
    /// an I/O worker and the driver.
    Plain,
    /// The same virtio-blk disk served by `nbdkit` with its `delay` filter
    /// ([`RK_ACCESS_MS`] before every read and write) under its
    /// `noparallel` filter (one request at a time): a single-arm disk
    /// whose every access costs a fixed time, spent asleep on the host,
    /// during which the guest's vCPU is free. Seed 004's point is a disk
    /// slow against the CPU (V1 on an RK05-era disk); this is that, and
    /// not QEMU's own `throttling.*` options, which are a rate limit (a
    /// leaky bucket holding a tenth of a second of requests, served at
    /// once) rather than a time per access (`docs/benchmarks.md`, "B").
    Rk,
}

/// The `rk` disk's time per access (read or write, any length), in ms:
/// the order of a disk of V1's era, without seeks (V1's fixed-head RS11
/// on its RF11 controller turned at 1800 rpm and averaged 16.9 ms an
/// access; 10 ms keeps a run of eight boots near ten minutes). It is about forty
/// times the job's CPU work per 1 KiB block under TCG on a quiet host
/// (0.26 ms, `docs/filesystem.md`) and some ten times the guest's own
/// path per transfer on a loaded one, so that the disk, whose time does
/// not depend on the host's load, is most of every job. (2 ms was tried
/// first: at a host load of 15, the path's 0.5 to 1.5 ms per transfer
/// still moved whole rows by 30 %.)
pub const RK_ACCESS_MS: u32 = 10;

impl Disk {
    /// As `bbench --disk` and the figure names spell it.
    pub fn name(self) -> &'static str {
        match self {
            Disk::Plain => "plain",
            Disk::Rk => "rk",
        }
    }

    pub fn parse(word: &str) -> Option<Disk> {
        [Disk::Plain, Disk::Rk].into_iter().find(|d| d.name() == word)
    }

    /// Linux's figure on this disk: `b_linux` on the plain disk (the
    /// published name), `b_rk_linux` on `rk` (the same image behind the
    /// same `nbdkit` delay, `drop_caches` before each job).
    pub fn linux_figure_name(self) -> String {
        match self {
            Disk::Plain => figure_name(None),
            Disk::Rk => String::from("b_rk_linux"),
        }
    }

    /// As the Linux `bench` program's figure list names it.
    pub fn linux_figure(self) -> &'static str {
        match self {
            Disk::Plain => "b",
            Disk::Rk => "brk",
        }
    }

    /// Ridgeback's figure with `nbuf` buffers on this disk: `b_nbuf<N>`
    /// on the plain disk (the published name), `b_rk_nbuf<N>` on `rk`.
    pub fn figure_name(self, nbuf: u32) -> String {
        match self {
            Disk::Plain => figure_name(Some(nbuf)),
            Disk::Rk => format!("b_rk_nbuf{nbuf}"),
        }
    }
}

/// Byte `offset` of source file `index`: assembly-like text (lines of
/// printable characters ending in newlines), a pure function of the two,
/// so the host writes the files and the job checks them without a table.
pub fn source_byte(index: usize, offset: usize) -> u8 {
    const LINE_BYTES: usize = 32;
    if offset % LINE_BYTES == LINE_BYTES - 1 {
        return b'\n';
    }
    let mut z = ((index as u64) << 32 | offset as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z ^= z >> 29;
    b' ' + (z % 94) as u8
}

/// The whole of source file `index` (for the host, which makes the image).
pub fn source_file(index: usize) -> alloc::vec::Vec<u8> {
    (0..SOURCES[index].1).map(|offset| source_byte(index, offset)).collect()
}

/// The eviction file's bytes (any content: it is only read).
pub fn evict_byte(offset: usize) -> u8 {
    (offset % 251) as u8
}

/// The assembler's work on one block: [`CPU_PASSES_PER_BLOCK`] passes of a
/// byte-at-a-time hash (FNV-1a), the first of which also checks each byte
/// against [`source_byte`]. Returns the hash, or the first wrong offset.
pub fn assemble_block(index: usize, offset: usize, block: &[u8], state: u64) -> Result<u64, usize> {
    for (i, &byte) in block.iter().enumerate() {
        if byte != source_byte(index, offset + i) {
            return Err(offset + i);
        }
    }
    let mut hash = state;
    for pass in 0..CPU_PASSES_PER_BLOCK {
        hash ^= u64::from(pass);
        for &byte in black_box(block) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    Ok(hash)
}

/// Where [`measure`] is when it calls its hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// The cache is cold; the clock starts next.
    Starts,
    /// Job number `sample` took `ticks`.
    Ended { sample: usize, ticks: u64 },
}

/// What B needs on top of [`Unix`] (whose `fsync` and `sync` it uses).
pub trait DiskFs: Unix {
    /// Empties the caches that hold the disk file system's blocks, so that
    /// the next job reads from the device; `dir` is the job's directory.
    /// Says how, for the log.
    fn make_cold(dir: &str) -> Result<&'static str, String>;
    /// Moves `fd`'s offset to `offset` bytes from the start (`lseek` with
    /// `SEEK_SET`, V1's `sys seek`): pass 2 writes `a.out`'s two streams.
    fn seek(fd: Fd, offset: u64) -> Result<(), Errno>;
}

/// Reads the eviction file in `dir` through (Ridgeback's way of emptying
/// a cache of a few buffers, [`DiskFs::make_cold`]).
pub fn read_evict_file<P: Unix>(dir: &str) -> Result<(), String> {
    let path = format!("{dir}/{EVICT_NAME}");
    let fd = P::open_read(&path).map_err(|e| describe(&format!("open {path}"), e))?;
    let mut buffer = vec![0u8; 16 << 10];
    let mut total = 0;
    let result = loop {
        match P::read(fd, &mut buffer) {
            Ok(0) => break Ok(()),
            Ok(n) => total += n,
            Err(e) => break Err(describe(&format!("read {path}"), e)),
        }
    };
    let _ = P::close(fd);
    result?;
    if total != EVICT_BYTES {
        return Err(format!("{path} has {total} bytes, not {EVICT_BYTES}"));
    }
    Ok(())
}

fn describe(what: &str, errno: Errno) -> String {
    format!("{what}: {} (errno {errno})", errno.name())
}

/// Reads `fd` (file `path`, whose content is [`source_byte`] of `index`)
/// to its end in records, checking and hashing each ([`assemble_block`]),
/// and calls `after(bytes read so far)` after each record. Returns the
/// bytes read.
fn read_checked<P: Unix>(
    fd: Fd,
    path: &str,
    index: usize,
    record: &mut [u8; RECORD_BYTES],
    hash: &mut u64,
    mut after: impl FnMut(usize, u64) -> Result<(), String>,
) -> Result<usize, String> {
    let mut offset = 0;
    loop {
        let got = read_full::<P>(fd, record).map_err(|e| describe(&format!("read {path}"), e))?;
        if got == 0 {
            return Ok(offset);
        }
        *hash = assemble_block(index, offset, &record[..got], *hash)
            .map_err(|at| format!("{path}: byte {at} is not what was written"))?;
        offset += got;
        after(got, *hash)?;
    }
}

/// Writes `bytes` at `offset` of `fd`: V1's `sys seek` and `sys write`.
fn write_at<P: DiskFs>(fd: Fd, offset: usize, bytes: &[u8], what: &str) -> Result<(), String> {
    P::seek(fd, offset as u64).map_err(|e| describe(&format!("seek {what}"), e))?;
    write_all::<P>(fd, bytes, what)
}

/// One job (module doc: V1's two passes), timed from the first `creat` to
/// `a.out`'s `close`: returns the hash of the work (kept alive) or why it
/// failed.
fn job<P: DiskFs>(dir: &str, record: &mut [u8; RECORD_BYTES]) -> Result<u64, String> {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    // Pass 1: the sources in, the token file out as it fills.
    let tokens_path = format!("{dir}/{TOKENS_NAME}");
    let tokens = P::create(&tokens_path).map_err(|e| describe(&format!("creat {tokens_path}"), e))?;
    let mut tokens_written = 0usize;
    let mut read_total = 0usize;
    let mut out_record = [0u8; RECORD_BYTES];
    let pass1 = (|| {
        for (index, (name, size)) in SOURCES.iter().enumerate() {
            let path = format!("{dir}/{name}");
            let fd = P::open_read(&path).map_err(|e| describe(&format!("open {path}"), e))?;
            let read = read_checked::<P>(fd, &path, index, record, &mut hash, |got, _| {
                read_total += got;
                // The tokens of the input read so far, in whole records.
                while tokens_written + RECORD_BYTES <= TOKEN_BYTES * read_total / SOURCE_BYTES {
                    for (i, byte) in out_record.iter_mut().enumerate() {
                        *byte = source_byte(TOKENS_INDEX, tokens_written + i);
                    }
                    write_all::<P>(tokens, &out_record, "write the token file")?;
                    tokens_written += RECORD_BYTES;
                }
                Ok(())
            });
            let _ = P::close(fd);
            if read? != *size {
                return Err(format!("{path} does not have {size} bytes"));
            }
        }
        Ok(())
    })();
    let closed = P::close(tokens).map_err(|e| describe("close the token file", e));
    pass1?;
    closed?;
    if tokens_written != TOKEN_BYTES {
        return Err(format!("the token file has {tokens_written} bytes, not {TOKEN_BYTES}"));
    }
    let symbols_path = format!("{dir}/{SYMBOLS_NAME}");
    let symbols = P::create(&symbols_path).map_err(|e| describe(&format!("creat {symbols_path}"), e))?;
    let table: alloc::vec::Vec<u8> = (0..SYMBOL_BYTES).map(|o| source_byte(SYMBOLS_INDEX, o)).collect();
    let wrote = write_all::<P>(symbols, &table, "write the symbol table");
    let closed = P::close(symbols).map_err(|e| describe("close the symbol table", e));
    wrote?;
    closed?;

    // Pass 2: the tokens back in, a.out's text and relocation out.
    let out_path = format!("{dir}/{OUTPUT_NAME}");
    let out = P::create(&out_path).map_err(|e| describe(&format!("creat {out_path}"), e))?;
    let pass2 = (|| {
        let tokens = P::open_read(&tokens_path).map_err(|e| describe(&format!("open {tokens_path}"), e))?;
        let mut back = 0usize;
        let mut text_written = 0usize;
        let read = read_checked::<P>(tokens, &tokens_path, TOKENS_INDEX, record, &mut hash, |got, hash| {
            back += got;
            while text_written < TEXT_BYTES * back / TOKEN_BYTES {
                let n = RECORD_BYTES.min(TEXT_BYTES - text_written);
                out_record[..8].copy_from_slice(&hash.to_le_bytes());
                write_at::<P>(out, HEADER_BYTES + text_written, &out_record[..n], "write a.out's text")?;
                write_at::<P>(
                    out,
                    HEADER_BYTES + TEXT_BYTES + text_written,
                    &out_record[..n],
                    "write a.out's relocation",
                )?;
                text_written += n;
            }
            Ok(())
        });
        let _ = P::close(tokens);
        if read? != TOKEN_BYTES {
            return Err(format!("{tokens_path} does not have {TOKEN_BYTES} bytes"));
        }
        let symbols =
            P::open_read(&symbols_path).map_err(|e| describe(&format!("open {symbols_path}"), e))?;
        let mut table = vec![0u8; SYMBOL_BYTES + 1];
        let got = read_full::<P>(symbols, &mut table);
        let _ = P::close(symbols);
        let got = got.map_err(|e| describe(&format!("read {symbols_path}"), e))?;
        if got != SYMBOL_BYTES
            || table[..got].iter().enumerate().any(|(o, &b)| b != source_byte(SYMBOLS_INDEX, o))
        {
            return Err(format!("{symbols_path} is not the {SYMBOL_BYTES} bytes written"));
        }
        write_at::<P>(out, HEADER_BYTES + 2 * TEXT_BYTES, &table[..got], "write a.out's symbols")?;
        write_at::<P>(out, 0, &[0x07; HEADER_BYTES], "write a.out's header")
    })();
    let closed = P::close(out).map_err(|e| describe("close a.out", e));
    pass2?;
    closed?;
    Ok(hash)
}

fn read_full<P: Unix>(fd: Fd, buffer: &mut [u8]) -> Result<usize, Errno> {
    let mut filled = 0;
    while filled < buffer.len() {
        match P::read(fd, &mut buffer[filled..])? {
            0 => break,
            n => filled += n.min(buffer.len() - filled),
        }
    }
    Ok(filled)
}

fn write_all<P: Unix>(fd: Fd, mut bytes: &[u8], what: &str) -> Result<(), String> {
    while !bytes.is_empty() {
        match P::write(fd, bytes).map_err(|e| describe(what, e))? {
            0 => return Err(format!("{what}: wrote nothing")),
            n => bytes = &bytes[n.min(bytes.len())..],
        }
    }
    Ok(())
}

/// Measures `config.sample_count` jobs in `dir` (the tree's directory on
/// the disk), each from a cold cache, one sample each, in ms per job:
/// before each job [`DiskFs::make_cold`] empties the cache, except before
/// the first when `is_cold_at_start` (a fresh boot). The kernel counters
/// cover the timed jobs only. `hook` runs untimed just before each job
/// (`Job::Starts`) and after it (`Job::Ended`): the Ridgeback program reads
/// the cache's counters there.
pub fn measure<P: DiskFs>(
    dir: &str,
    config: &Config,
    is_cold_at_start: bool,
    mut hook: impl FnMut(Job),
) -> Result<Measurement, String> {
    let samples = config.sample_count.clamp(1, harness::MAX_SAMPLES);
    let mut ticks = [0u64; harness::MAX_SAMPLES];
    let mut record = [0u8; RECORD_BYTES];
    let mut increase = [0u64; MAX_COUNTERS];
    let mut names: &'static [&'static str] = &[];
    for (sample, sample_ticks) in ticks[..samples].iter_mut().enumerate() {
        for name in [OUTPUT_NAME, TOKENS_NAME, SYMBOLS_NAME] {
            let _ = P::unlink(&format!("{dir}/{name}"));
        }
        P::sync().map_err(|e| describe("sync", e))?;
        if sample > 0 || !is_cold_at_start {
            P::make_cold(dir)?;
        }
        hook(Job::Starts);
        let mut before = [0u64; MAX_COUNTERS];
        P::read_counters(&mut before);
        let start = now_ticks();
        let hash = job::<P>(dir, &mut record)?;
        *sample_ticks = now_ticks().wrapping_sub(start).max(1);
        let mut after = [0u64; MAX_COUNTERS];
        names = P::read_counters(&mut after);
        for (total, (a, b)) in increase.iter_mut().zip(after.iter().zip(&before)) {
            *total += a.wrapping_sub(*b);
        }
        black_box(hash);
        hook(Job::Ended { sample, ticks: *sample_ticks });
    }
    // The output must be all there.
    let out_path = format!("{dir}/{OUTPUT_NAME}");
    let fd = P::open_read(&out_path).map_err(|e| describe(&format!("open {out_path}"), e))?;
    let mut buffer = vec![0u8; 8 << 10];
    let mut total = 0;
    let read = loop {
        match P::read(fd, &mut buffer) {
            Ok(0) => break Ok(()),
            Ok(n) => total += n,
            Err(e) => break Err(describe("read a.out", e)),
        }
    };
    let _ = P::close(fd);
    read?;
    if total != OUTPUT_BYTES {
        return Err(format!("a.out has {total} bytes, not {OUTPUT_BYTES}"));
    }
    let tsc_hz = P::tsc_hz();
    let mut values = [0.0; harness::MAX_SAMPLES];
    for (value, &t) in values.iter_mut().zip(&ticks[..samples]) {
        *value = Unit::MillisecondsPerJob.value(t as f64 * 1e9 / tsc_hz as f64, 1);
    }
    Ok(Measurement::from_samples(&values[..samples], 1)
        .with_ticks(&ticks[..samples], tsc_hz)
        .with_counters(names, &increase))
}

/// Measures and prints B's figure `name`, or a `# FAILED` line; true if
/// it was measured.
pub fn report<P: DiskFs>(
    name: &str,
    dir: &str,
    config: &Config,
    is_cold_at_start: bool,
    hook: impl FnMut(Job),
) -> bool {
    match measure::<P>(dir, config, is_cold_at_start, hook) {
        Ok(measurement) => {
            harness::report::<P>(name, Unit::MillisecondsPerJob, &measurement);
            true
        }
        Err(reason) => {
            harness::failure::<P>(name, &reason);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportions() {
        assert_eq!(SOURCE_BYTES, 204_800, "200 KiB of sources");
        assert_eq!(TOKEN_BYTES, 81_920, "a token file of 80 KiB, past ext2's 12 direct blocks");
        assert_eq!(HEADER_BYTES + 2 * TEXT_BYTES + SYMBOL_BYTES, 36_432, "the seed's a.out");
        assert!(SOURCES.iter().all(|(_, size)| (2 << 10..=28 << 10).contains(size)));
        assert_eq!(figure_name(Some(12)), "b_nbuf12");
        assert_eq!(figure_name(None), "b_linux");
    }

    #[test]
    fn each_disk_has_its_own_figures_and_plain_keeps_the_published_ones() {
        assert_eq!(Disk::Plain.figure_name(3), "b_nbuf3");
        assert_eq!(Disk::Rk.figure_name(3), "b_rk_nbuf3");
        assert_eq!(Disk::parse("rk"), Some(Disk::Rk));
        assert_eq!(Disk::parse("plain"), Some(Disk::Plain));
        assert_eq!(Disk::parse("RK"), None);
        assert_eq!(Disk::Plain.linux_figure_name(), "b_linux");
        assert_eq!(Disk::Rk.linux_figure_name(), "b_rk_linux");
        assert_eq!((Disk::Plain.linux_figure(), Disk::Rk.linux_figure()), ("b", "brk"));
        assert_eq!(Disk::parse(""), None);
    }

    #[test]
    fn sources_are_text_and_checked() {
        let block: std::vec::Vec<u8> = (0..BLOCK_BYTES).map(|o| source_byte(3, 512 + o)).collect();
        assert!(block.iter().all(|&b| b == b'\n' || (b' '..=b'~').contains(&b)));
        assert_eq!(block.iter().filter(|&&b| b == b'\n').count(), BLOCK_BYTES / 32);
        let hash = assemble_block(3, 512, &block, 1).unwrap();
        assert_ne!(hash, assemble_block(3, 512, &block, 2).unwrap());
        assert!(assemble_block(4, 512, &block, 1).is_err());
        let mut broken = block.clone();
        broken[100] ^= 1;
        assert_eq!(assemble_block(3, 512, &broken, 1), Err(612));
        assert_ne!(source_file(0)[..512], source_file(1)[..512]);
    }
}
