//! Benchmark B: seed 004, UNIX V1's I/O buffer count against the time to
//! assemble the kernel (`as u*.s`), `docs/benchmarks.md` section B. The
//! same compile-like job runs on both systems, through the [`DiskFs`]
//! calls, on an ext2 volume on the virtio-blk disk.
//!
//! The seed timed V1's two-pass assembler reading the kernel's sources and
//! writing `a.out` (36,432 bytes) with `nbuf` = 1 to 6 block buffers of
//! 512 bytes, each on a freshly booted kernel. One *job* here is:
//!
//! - read [`SOURCES`] (twenty files, 2 to 28 KiB, 200 KiB in all) in
//!   order, each in `read`s of one file-system block ([`READ_BYTES`], 1 KiB,
//!   ext2's smallest): V1's `as` refilled its input one disk block (512
//!   bytes) at a time, so every `read` is one block, as in V1;
//! - after each 512-byte half, CPU work on it ([`assemble_block`]:
//!   [`CPU_PASSES_PER_BLOCK`] passes of a byte-at-a-time hash over it, the
//!   assembler's scanning and symbol lookups);
//! - write one output file, `a.out`, of [`OUTPUT_BYTES`] (the seed's
//!   `a.out`) in whole-block `write`s, interleaved with the reading in
//!   proportion: after each source block the output grows to its share of
//!   the input read so far, so reads of one file and writes of another
//!   alternate through the buffers as they did in V1 (`as` wrote its
//!   temporary files while reading its sources);
//! - `close` the output. Not `fsync`: the seed's clock stopped when `as`
//!   returned, with whatever V1's buffers still held unwritten.
//!
//! Why these proportions ([`SOURCES`]): V1's kernel sources are eleven
//! files (`u0.s` ... `u9.s`, `ux.s`) of a few to some tens of KiB; the
//! issue asks for about twenty files of a few KiB to tens of KiB, and the
//! sizes below spread 200 KiB over twenty files the same way, a few large
//! and many small, so that opening files (directory and inode blocks)
//! costs buffers as in V1. The output is the seed's `a.out` size, about
//! 18 % of the input.
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
/// V1's buffer: the unit of CPU work.
pub const BLOCK_BYTES: usize = 512;
/// One `read` or `write`: one block of the volume (xtask makes it with
/// 1 KiB blocks), as V1's `as` moved one of its disk blocks per refill.
/// Reads of half a block would put two requests on each buffer and let
/// the second find its block evicted, which V1's never did.
pub const READ_BYTES: usize = 1024;
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
// eviction file is far larger than 12 buffers and their read-ahead.
const _: () = assert!(OUTPUT_BYTES < SOURCE_BYTES / 5 && EVICT_BYTES / 1024 > 12 * 16);

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

/// One job, timed from the first `open` to the output's `close`: returns
/// the hash of the work (kept alive) or why it failed.
fn job<P: Unix>(
    dir: &str,
    block: &mut [u8; READ_BYTES],
    out_block: &mut [u8; READ_BYTES],
) -> Result<u64, String> {
    let out_path = format!("{dir}/{OUTPUT_NAME}");
    let out = P::create(&out_path).map_err(|e| describe(&format!("creat {out_path}"), e))?;
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut read_total = 0usize;
    let mut written = 0usize;
    let result = (|| {
        for (index, (name, size)) in SOURCES.iter().enumerate() {
            let path = format!("{dir}/{name}");
            let fd = P::open_read(&path).map_err(|e| describe(&format!("open {path}"), e))?;
            let mut offset = 0;
            let done = loop {
                let got = match read_full::<P>(fd, block) {
                    Ok(got) => got,
                    Err(e) => break Err(describe(&format!("read {path}"), e)),
                };
                if got == 0 {
                    break Ok(());
                }
                let mut failed = None;
                for (half, chunk) in block[..got].chunks(BLOCK_BYTES).enumerate() {
                    match assemble_block(index, offset + half * BLOCK_BYTES, chunk, hash) {
                        Ok(h) => hash = h,
                        Err(at) => {
                            failed = Some(at);
                            break;
                        }
                    }
                }
                if let Some(at) = failed {
                    break Err(format!("{path}: byte {at} is not the source's"));
                }
                offset += got;
                read_total += got;
                // The output's share of the input read so far, in whole blocks.
                let due = OUTPUT_BYTES * read_total / SOURCE_BYTES;
                while written + READ_BYTES <= due {
                    out_block[..8].copy_from_slice(&hash.to_le_bytes());
                    write_all::<P>(out, &out_block[..])?;
                    written += READ_BYTES;
                }
            };
            let _ = P::close(fd);
            done?;
            if offset != *size {
                return Err(format!("{path} has {offset} bytes, not {size}"));
            }
        }
        // The tail: what is left of the output (its last, partial block).
        write_all::<P>(out, &out_block[..OUTPUT_BYTES - written])?;
        Ok(())
    })();
    let closed = P::close(out).map_err(|e| describe("close a.out", e));
    result?;
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

fn write_all<P: Unix>(fd: Fd, mut bytes: &[u8]) -> Result<(), String> {
    while !bytes.is_empty() {
        match P::write(fd, bytes).map_err(|e| describe("write a.out", e))? {
            0 => return Err(String::from("write a.out: wrote nothing")),
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
    let mut block = [0u8; READ_BYTES];
    let mut out_block = [0x5au8; READ_BYTES];
    let mut increase = [0u64; MAX_COUNTERS];
    let mut names: &'static [&'static str] = &[];
    for (sample, sample_ticks) in ticks[..samples].iter_mut().enumerate() {
        let _ = P::unlink(&format!("{dir}/{OUTPUT_NAME}"));
        P::sync().map_err(|e| describe("sync", e))?;
        if sample > 0 || !is_cold_at_start {
            P::make_cold(dir)?;
        }
        hook(Job::Starts);
        let mut before = [0u64; MAX_COUNTERS];
        P::read_counters(&mut before);
        let start = now_ticks();
        let hash = job::<P>(dir, &mut block, &mut out_block)?;
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
