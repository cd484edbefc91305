//! Ridgeback's benchmark programs, written once and built twice: for
//! Ridgeback and for the Linux guest that the suite boots in the same QEMU
//! machine (`docs/benchmarks.md`).
//!
//! What it is: the measuring harness ([`harness`]), the workloads that need
//! nothing but the [`Platform`] calls ([`workloads`]), seed 001's Table 2
//! rows, which need the UNIX calls of [`r2::Unix`] too ([`r2`]), seed 000's
//! RAM disk experiment, which needs block I/O ([`d::BlockIo`], [`d`]), seed
//! 002's `bw_pipe`, which needs pinning and `vmsplice` ([`p::PipeIo`],
//! [`p`]), and
//! the Linux implementation of those calls plus the Linux peers of
//! Ridgeback's message benchmarks: pipe, Unix-socket, futex and
//! `sched_yield` ping-pong between two processes ([`linux`]).
//!
//! What it is not: the suite's driver. Booting the machines, collecting the
//! output and computing ratios is `xtask`'s job; this crate only prints
//! one `BENCH {json}` line per figure (see [`harness::report`]).
//!
//! Invariants:
//! - Everything outside [`linux`] uses `core` and `alloc` only and reaches
//!   the system through [`Platform`] (and [`r2::Unix`], [`d::BlockIo`],
//!   [`p::PipeIo`]), so the Ridgeback
//!   build compiles the very same benchmark code. The Ridgeback
//!   implementations of both traits and the Ridgeback programs
//!   (`ridgebench`, booted as init, `r2bench`, `dbench` and `pbench`, UNIX processes) are in
//!   `bench/ridgeback/`.
//! - Time is read from the time-stamp counter ([`now_ticks`]) and
//!   converted with [`Platform::tsc_hz`]; a sample lasts at least
//!   [`harness::Config::min_sample_ns`], so one reading of the counter is
//!   a negligible part of it.
//! - A reported figure is the median of [`harness::Config::sample_count`]
//!   samples, and every sample is reported with it, also as raw TSC ticks:
//!   the suite's driver recomputes every figure from the ticks, so nothing
//!   depends on floating point in the guest (Ridgeback's programs are
//!   built soft-float; the `value` they print is for people reading a log).

#![no_std]

extern crate alloc;

#[cfg(test)]
extern crate std;

pub mod b;
pub mod d;
pub mod harness;
pub mod n;
pub mod p;
pub mod r2;
pub mod workloads;

#[cfg(target_os = "linux")]
pub mod linux;

/// What a benchmark needs from the operating system it runs on. Both
/// builds implement it; the benchmark code is generic over it.
pub trait Platform {
    /// Time-stamp counter ticks per second.
    fn tsc_hz() -> u64;
    /// The calling process's id, through a real kernel entry (no cache):
    /// the cheapest system call, the seed's `getpid` row (seed 001, Table 2).
    fn getpid() -> u64;
    /// Gives up the processor to another runnable process, if any.
    fn yield_now();
    /// Writes all of `bytes` to standard output (the serial console).
    fn write_stdout(bytes: &[u8]);
    /// The kernel's event counters, when the system has them: fills the
    /// start of `values` and returns their names (one per value filled).
    /// Read before and after a measurement, they explain a figure (kernel
    /// entries, context switches, bytes copied per operation). The default
    /// is none: Linux offers no cheap system-wide equivalent.
    fn read_counters(values: &mut [u64; MAX_COUNTERS]) -> &'static [&'static str] {
        let _ = values;
        &[]
    }
}

/// Most kernel counters a measurement records (see [`Platform::read_counters`]).
pub const MAX_COUNTERS: usize = 16;

/// The time-stamp counter. Not serialising: samples are long enough
/// ([`harness::Config::min_sample_ns`]) that a few reordered instructions
/// at either end do not matter.
#[inline(always)]
pub fn now_ticks() -> u64 {
    // SAFETY: RDTSC reads a counter and has no memory effects; every x86_64
    // processor has it, and neither Linux nor Ridgeback sets CR4.TSD, so
    // user mode may execute it.
    unsafe { core::arch::x86_64::_rdtsc() }
}
