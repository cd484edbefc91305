//! Benchmark P: seed 002, NetBSD's loaned pipes (Jaromír Doleček,
//! tech-kern, April 2001), `docs/benchmarks.md` section P. lmbench's
//! `bw_pipe` on both systems, through the [`PipeIo`] calls.
//!
//! The seed measured `bw_pipe` ("one process writes 64 KiB chunks into a
//! pipe, another reads them") on old pipes, new pipes and new pipes with
//! `uvm_loan()`, and checked with md5 that the data "passed through pipe"
//! did not differ. Here one figure is:
//!
//! - a writer (the measuring process) and a reader (forked once per
//!   figure), joined by a data pipe and an acknowledgement pipe;
//! - one operation is a *pass* of [`PASS_CHUNKS`] chunks of [`CHUNK_BYTES`]
//!   (4 MiB): the writer writes each chunk with one call (`write`, or
//!   Linux's `vmsplice`, [`Method`]); the reader fills its own 64 KiB
//!   buffer with `read`s, adds every byte to a [`Checksum`] and, after the
//!   pass, sends the checksum back on the second pipe; the writer compares
//!   it with the one it expects (the seed's md5 check, on every byte of
//!   every figure, cheap enough to run inside the timed section);
//! - the figure is MB/s (10^6 bytes per second) of checked data: the timed
//!   section runs from the first write of a pass to the arrival of its
//!   acknowledgement. Working out the expected checksum of an overwrite
//!   pass happens after that, untimed, while the reader waits.
//!
//! The **overwrite** variant ([`Variant::overwrite`]): right after each
//! `write` returns, the writer stamps the next chunk's number into every
//! page of its buffer (the first 16 bytes of each page: chunk and page
//! number). Every page changes, so a loan that let the reader see the
//! writer's memory after `write` returned would give a wrong checksum; on
//! a system that lends pages copy-on-write each stamp costs a page copy.
//! Without it the writer writes the same unchanged buffer every time, as
//! lmbench's `bw_pipe` does.
//!
//! Both buffers are page-aligned (as lmbench's `valloc`ed ones are), so
//! whole pages can be lent. The limit of any pipe, the byte-copy
//! bandwidth, is measured in one process with the same chunks and buffers:
//! [`copy_figure`] (`p_copy`: `memcpy` only) and with the reader's checksum
//! added (`p_copy_checksum`: what one process would do to get the bytes
//! and check them, the best a pipe on one CPU could do).
//!
//! Placement: [`PipeIo::place`] puts the writer and the reader on the
//! CPUs of a [`Placement`] (Linux pins them); Ridgeback cannot pin a
//! process, so there each boot has the CPUs the figure names.

use crate::Platform;
use crate::harness::{self, Config, Measurement, Unit, measure_sections};
use crate::r2::{Errno, Fd, Unix};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::hint::black_box;

/// lmbench's `bw_pipe` transfer size, the seed's "big enough" write.
pub const CHUNK_BYTES: usize = 64 << 10;
/// Chunks per pass (one operation of a figure): 4 MiB.
pub const PASS_CHUNKS: u64 = 64;
pub const PASS_BYTES: u64 = PASS_CHUNKS * CHUNK_BYTES as u64;
/// The page, where stamps go in the overwrite variant.
const PAGE_BYTES: usize = abi::layout::PAGE_SIZE as usize;
/// What the reader sends back after each pass: the checksum's two words.
const ACK_BYTES: usize = 16;

const _: () = assert!(CHUNK_BYTES.is_multiple_of(PAGE_BYTES));

/// How the writer puts a chunk into the pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `write`: the system copies the bytes (or, on Ridgeback in `loan`
    /// mode, serves the reader straight from the writer's buffer).
    Write,
    /// Linux's `vmsplice`: the writer's pages go into the pipe by
    /// reference; the reader's `read` copies them out (one copy). The
    /// writer must not touch them until the reader has: no overwrite
    /// variant (see `docs/benchmarks.md` P).
    Vmsplice,
}

/// One kind of figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    pub method: Method,
    /// Stamp every page of the buffer right after each write returns.
    pub overwrite: bool,
}

/// Where the two ends run: `None` leaves it to the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub writer_cpu: Option<usize>,
    pub reader_cpu: Option<usize>,
}

impl Placement {
    pub const ANYWHERE: Placement = Placement { writer_cpu: None, reader_cpu: None };
}

/// A figure's name: `p_<design>[_overwrite]_<cpus>`, e.g. `p_loan_2cpu`,
/// `p_loan_overwrite_1cpu`, `p_vmsplice_2cpu` (`design` is Ridgeback's
/// pipe design or Linux's `pipe` / `vmsplice`).
pub fn figure_name(design: &str, overwrite: bool, cpus: &str) -> String {
    let overwrite = if overwrite { "_overwrite" } else { "" };
    format!("p_{design}{overwrite}_{cpus}")
}

/// The calls P needs on top of [`Unix`]'s.
pub trait PipeIo: Unix {
    /// Keeps the calling process (and the children it forks afterwards)
    /// on `cpu`, or lets it run anywhere for `None`. Systems that cannot
    /// pin do nothing (the figure's name says how many CPUs the boot had).
    fn place(cpu: Option<usize>);
    /// Linux's `vmsplice` of `bytes` into the pipe `fd` (no flags): the
    /// bytes taken. Systems without it: `ENOSYS`.
    fn vmsplice(fd: Fd, bytes: &[u8]) -> Result<usize, Errno> {
        let _ = (fd, bytes);
        Err(protocols::unix::errno::ENOSYS)
    }
}

/// A checksum of a byte stream in 8-byte words: Fletcher's two running
/// sums, modulo 2^64. It changes when any word changes, and when two
/// different words trade places (the second sum weighs each word by its
/// distance from the end), so lost, repeated, reordered or stale pages
/// all show; two adds per word keep it cheap beside the copy it checks.
/// Not cryptographic: nobody here is adversarial.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checksum {
    sum: u64,
    sum_of_sums: u64,
}

impl Checksum {
    /// Adds `bytes`, a whole number of 8-byte words (chunks are).
    pub fn update(&mut self, bytes: &[u8]) {
        debug_assert!(bytes.len().is_multiple_of(8), "whole words only");
        let (mut a, mut b) = (self.sum, self.sum_of_sums);
        for word in bytes.chunks_exact(8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            a = a.wrapping_add(u64::from_le_bytes(w));
            b = b.wrapping_add(a);
        }
        (self.sum, self.sum_of_sums) = (a, b);
    }

    fn encode(&self) -> [u8; ACK_BYTES] {
        let mut bytes = [0u8; ACK_BYTES];
        bytes[..8].copy_from_slice(&self.sum.to_le_bytes());
        bytes[8..].copy_from_slice(&self.sum_of_sums.to_le_bytes());
        bytes
    }

    fn decode(bytes: &[u8; ACK_BYTES]) -> Checksum {
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(w)
        };
        Checksum { sum: word(0), sum_of_sums: word(8) }
    }
}

/// A [`CHUNK_BYTES`] buffer on a page boundary.
pub struct ChunkBuffer {
    storage: Vec<u8>,
    start: usize,
}

impl ChunkBuffer {
    pub fn new() -> ChunkBuffer {
        let storage = vec![0u8; CHUNK_BYTES + PAGE_BYTES];
        let start = storage.as_ptr().align_offset(PAGE_BYTES).min(PAGE_BYTES);
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

/// The writer's data before any stamp: a fixed pseudo-random pattern
/// (splitmix64), so that no two words of a chunk are alike.
pub fn fill_pattern(chunk: &mut [u8]) {
    let mut state = 0x5eed_0002_u64;
    for word in chunk.chunks_exact_mut(8) {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        word.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
}

/// The overwrite: chunk number `chunk_number` and the page's number in the
/// first 16 bytes of every page.
pub fn stamp(chunk: &mut [u8], chunk_number: u64) {
    for (page_number, page) in chunk.chunks_exact_mut(PAGE_BYTES).enumerate() {
        page[..8].copy_from_slice(&chunk_number.to_le_bytes());
        page[8..16].copy_from_slice(&(page_number as u64).to_le_bytes());
    }
}

fn describe(what: &str, errno: Errno) -> String {
    format!("{what}: {} (errno {errno})", errno.name())
}

/// Puts all of `bytes` into the pipe.
fn put_all<P: PipeIo>(fd: Fd, method: Method, mut bytes: &[u8]) -> Result<(), String> {
    while !bytes.is_empty() {
        let result = match method {
            Method::Write => P::write(fd, bytes).map_err(|e| describe("write", e)),
            Method::Vmsplice => P::vmsplice(fd, bytes).map_err(|e| describe("vmsplice", e)),
        };
        match result? {
            0 => return Err(String::from("the pipe took nothing")),
            n => bytes = &bytes[n.min(bytes.len())..],
        }
    }
    Ok(())
}

/// Reads until `buffer` is full or end of file; the bytes read.
fn read_full<P: PipeIo>(fd: Fd, buffer: &mut [u8]) -> Result<usize, Errno> {
    let mut filled = 0;
    while filled < buffer.len() {
        match P::read(fd, &mut buffer[filled..])? {
            0 => break,
            n => filled += n.min(buffer.len() - filled),
        }
    }
    Ok(filled)
}

/// How the reader ends: its exit status.
mod reader_exit {
    pub const DONE: i32 = 0;
    pub const SHORT_CHUNK: i32 = 3;
    pub const READ_FAILED: i32 = 4;
    pub const ACK_FAILED: i32 = 6;

    pub fn meaning(status: i32) -> &'static str {
        match status {
            DONE => "done",
            SHORT_CHUNK => "end of file in the middle of a pass",
            READ_FAILED => "a read failed",
            ACK_FAILED => "the acknowledgement could not be written",
            _ => "not a status the reader uses",
        }
    }
}

/// The reader, in the forked child: whole passes of chunks, each pass's
/// checksum sent back, until end of file between two passes.
fn reader<P: PipeIo>(data: Fd, ack: Fd, buffer: &mut ChunkBuffer) -> i32 {
    loop {
        let mut checksum = Checksum::default();
        for index in 0..PASS_CHUNKS {
            match read_full::<P>(data, buffer.bytes_mut()) {
                Ok(0) if index == 0 => return reader_exit::DONE,
                Ok(CHUNK_BYTES) => checksum.update(buffer.bytes()),
                Ok(_) => return reader_exit::SHORT_CHUNK,
                Err(_) => return reader_exit::READ_FAILED,
            }
        }
        if !matches!(P::write(ack, &checksum.encode()), Ok(ACK_BYTES)) {
            return reader_exit::ACK_FAILED;
        }
    }
}

/// The checksum the reader must send for the pass whose first chunk is
/// number `first_chunk`.
fn expected_pass(variant: Variant, base: &[u8], scratch: &mut ChunkBuffer, first_chunk: u64) -> Checksum {
    let mut checksum = Checksum::default();
    scratch.bytes_mut().copy_from_slice(base);
    for chunk_number in first_chunk..first_chunk + PASS_CHUNKS {
        if variant.overwrite {
            stamp(scratch.bytes_mut(), chunk_number);
        }
        checksum.update(scratch.bytes());
    }
    checksum
}

/// One bw_pipe figure: MB/s of data written, read and checked.
pub fn pipe_figure<P: PipeIo>(
    variant: Variant,
    placement: Placement,
    config: &Config,
) -> Result<Measurement, String> {
    let mut writer_buffer = ChunkBuffer::new();
    let mut reader_buffer = ChunkBuffer::new();
    let mut scratch = ChunkBuffer::new();
    fill_pattern(writer_buffer.bytes_mut());
    let base: Vec<u8> = writer_buffer.bytes().to_vec();
    if variant.overwrite {
        stamp(writer_buffer.bytes_mut(), 0);
    }
    // Without overwrite every pass is the same bytes: one checksum for all.
    let same_every_pass = expected_pass(variant, &base, &mut scratch, 0);

    let call = |what: &str, result: Result<(Fd, Fd), Errno>| result.map_err(|e| describe(what, e));
    let (data_read, data_write) = call("pipe", P::pipe())?;
    let (ack_read, ack_write) = match P::pipe() {
        Ok(ends) => ends,
        Err(errno) => {
            let _ = (P::close(data_read), P::close(data_write));
            return Err(describe("pipe", errno));
        }
    };
    // The reader inherits the placement it is forked with, then takes its own.
    P::place(placement.writer_cpu);
    let child = match P::fork() {
        Ok(0) => {
            P::place(placement.reader_cpu);
            let _ = (P::close(data_write), P::close(ack_read));
            P::exit(reader::<P>(data_read, ack_write, &mut reader_buffer))
        }
        Ok(pid) => pid,
        Err(errno) => {
            for fd in [data_read, data_write, ack_read, ack_write] {
                let _ = P::close(fd);
            }
            P::place(None);
            return Err(describe("fork", errno));
        }
    };
    let _ = (P::close(data_read), P::close(ack_write));

    let unit = Unit::MegabytesPerSecond { bytes_per_op: PASS_BYTES };
    let mut next_chunk = 0u64;
    let measured = measure_sections::<P>(unit, config, |iterations, stopwatch| {
        for _ in 0..iterations {
            let first_chunk = next_chunk;
            stopwatch.start();
            for _ in 0..PASS_CHUNKS {
                put_all::<P>(data_write, variant.method, writer_buffer.bytes())?;
                next_chunk += 1;
                if variant.overwrite {
                    stamp(writer_buffer.bytes_mut(), next_chunk);
                }
            }
            let mut ack = [0u8; ACK_BYTES];
            match read_full::<P>(ack_read, &mut ack) {
                Ok(ACK_BYTES) => {}
                Ok(_) => return Err(String::from("the reader went away")),
                Err(e) => return Err(describe("read the acknowledgement", e)),
            }
            stopwatch.stop();
            let expected = match variant.overwrite {
                true => expected_pass(variant, &base, &mut scratch, first_chunk),
                false => same_every_pass,
            };
            let got = Checksum::decode(&ack);
            if got != expected {
                return Err(format!(
                    "the reader's checksum of chunks {first_chunk}..{} is {got:x?}, the writer's {expected:x?}: \
                     the pipe delivered other bytes than were written",
                    first_chunk + PASS_CHUNKS
                ));
            }
        }
        Ok(())
    });
    // The reader sees end of file and exits.
    let _ = (P::close(data_write), P::close(ack_read));
    let ended = P::wait(child);
    P::place(None);
    let measurement = measured?;
    match ended {
        Ok(Some(0)) => Ok(measurement),
        Ok(Some(status)) => {
            Err(format!("the reader exited with {status} ({})", reader_exit::meaning(status)))
        }
        Ok(None) => Err(String::from("the reader was killed by a signal")),
        Err(errno) => Err(describe("waitpid", errno)),
    }
}

/// The limit, in one process: each pass copies [`PASS_CHUNKS`] chunks from
/// a writer's buffer into a reader's (`memcpy`), and with `checksum` also
/// adds each copied chunk to a [`Checksum`], as the pipe's reader does.
pub fn copy_figure<P: Platform>(checksum: bool, config: &Config) -> Measurement {
    let mut source = ChunkBuffer::new();
    let mut destination = ChunkBuffer::new();
    fill_pattern(source.bytes_mut());
    destination.bytes_mut().copy_from_slice(source.bytes());
    let unit = Unit::MegabytesPerSecond { bytes_per_op: PASS_BYTES };
    harness::measure::<P>(unit, config, |iterations| {
        let mut sum = Checksum::default();
        for _ in 0..iterations * PASS_CHUNKS {
            // black_box on both sides: the copy must happen every time.
            black_box(destination.bytes_mut()).copy_from_slice(black_box(source.bytes()));
            if checksum {
                sum.update(black_box(destination.bytes()));
            }
        }
        black_box(sum);
    })
}

/// The copy figures' names.
pub const COPY: &str = "p_copy";
pub const COPY_CHECKSUM: &str = "p_copy_checksum";

/// Measures and prints `name`: a pipe figure, or a `# FAILED` line; true
/// if it was measured.
pub fn report_pipe<P: PipeIo>(name: &str, variant: Variant, placement: Placement, config: &Config) -> bool {
    match pipe_figure::<P>(variant, placement, config) {
        Ok(measurement) => {
            harness::report::<P>(name, Unit::MegabytesPerSecond { bytes_per_op: PASS_BYTES }, &measurement);
            true
        }
        Err(reason) => {
            harness::failure::<P>(name, &reason);
            false
        }
    }
}

/// Measures and prints both copy figures.
pub fn report_copies<P: Platform>(config: &Config) {
    for (name, checksum) in [(COPY, false), (COPY_CHECKSUM, true)] {
        let measurement = copy_figure::<P>(checksum, config);
        harness::report::<P>(name, Unit::MegabytesPerSecond { bytes_per_op: PASS_BYTES }, &measurement);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(figure_name("loan", false, "2cpu"), "p_loan_2cpu");
        assert_eq!(figure_name("loan", true, "1cpu"), "p_loan_overwrite_1cpu");
        assert_eq!(figure_name("vmsplice", false, "2cpu"), "p_vmsplice_2cpu");
        assert_eq!(PASS_BYTES, 4 << 20);
    }

    #[test]
    fn checksum_sees_changes_swaps_and_continues_across_calls() {
        let mut chunk = vec![0u8; CHUNK_BYTES];
        fill_pattern(&mut chunk);
        let whole = {
            let mut c = Checksum::default();
            c.update(&chunk);
            c
        };
        let mut split = Checksum::default();
        split.update(&chunk[..8 * 100]);
        split.update(&chunk[8 * 100..]);
        assert_eq!(split, whole, "the same stream in any number of pieces");
        // One bit.
        chunk[12_345] ^= 4;
        let mut changed = Checksum::default();
        changed.update(&chunk);
        assert_ne!(changed, whole);
        chunk[12_345] ^= 4;
        // Two pages traded places: the plain sum stays, the second does not.
        let (first, second) = chunk.split_at_mut(PAGE_BYTES);
        first.swap_with_slice(&mut second[..PAGE_BYTES]);
        let mut swapped = Checksum::default();
        swapped.update(&chunk);
        assert_eq!(swapped.sum, whole.sum);
        assert_ne!(swapped, whole);
        assert_eq!(Checksum::decode(&whole.encode()), whole);
    }

    #[test]
    fn overwrite_passes_differ_and_stamps_touch_every_page() {
        let mut base = vec![0u8; CHUNK_BYTES];
        fill_pattern(&mut base);
        let mut stamped = base.clone();
        stamp(&mut stamped, 7);
        let changed_pages =
            base.chunks(PAGE_BYTES).zip(stamped.chunks(PAGE_BYTES)).filter(|(a, b)| a != b).count();
        assert_eq!(changed_pages, CHUNK_BYTES / PAGE_BYTES);
        let mut scratch = ChunkBuffer::new();
        let overwrite = Variant { method: Method::Write, overwrite: true };
        let plain = Variant { method: Method::Write, overwrite: false };
        let a = expected_pass(overwrite, &base, &mut scratch, 0);
        let b = expected_pass(overwrite, &base, &mut scratch, PASS_CHUNKS);
        assert_ne!(a, b);
        assert_eq!(
            expected_pass(plain, &base, &mut scratch, 0),
            expected_pass(plain, &base, &mut scratch, 64)
        );
    }
}
