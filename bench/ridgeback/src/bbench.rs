//! bbench: seed 004's job (`bench::b`: V1's `as u*.s`, twenty sources
//! read in 512-byte pieces with CPU work per piece, one `a.out` written) as
//! a UNIX program on Ridgeback: `bbench --nbuf N [--disk plain|rk]
//! [--samples N] [--sample-ms N]`. It prints `b_nbuf<N>` (ms per job, one
//! sample per job, each from a cold cache; `b_rk_nbuf<N>` with `--disk rk`,
//! the disk `cargo xtask bench --only brk` attaches, `bench::b::Disk`) as a
//! `BENCH {json}` line with the kernel counters over the timed jobs, or
//! `# FAILED <figure>: <reason>`; the exit status is 1 if it failed.
//! `--disk` only names the figure: the disk is the machine's, and bbench
//! cannot tell one from the other.
//!
//! What it is: the Ridgeback build of the job the Linux build runs (`bench
//! b`), on `/disk/b`, the ext2 volume the driver attaches (made on the host
//! with the job's sources) and init mounts at `/disk`. The buffer count is
//! the boot option `nbuf=N` (`docs/filesystem.md`); `--nbuf` says which
//! one the boot was given, and bbench checks it against `ext2fs`'s own
//! counters (`unix::fs_stats`) and fails rather than name a figure after a
//! count it did not measure. After each job it prints, as a comment, what
//! the job cost the cache (hits, misses, read-ahead, transfers, waits):
//! the counters that explain the curve. `--sample-ms` means nothing here:
//! a sample is one whole job.
//!
//! What it is not: a way to set `nbuf`. `cargo xtask bench --only b` boots
//! the bench image once per buffer count and starts it from a batch script.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod disk_stats;
mod platform;
mod unix_process;

use abi::InfoKey;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use bench::Platform;
use bench::b;
use bench::harness::{self, MAX_SAMPLES};
use bench::r2;
use disk_stats::{disk_stats, stat, stats_delta};
use runtime::{Args, sys, unix};
use unix_process::UnixProcess;

runtime::entry!(main);

fn main(args: Args) -> i32 {
    // A UNIX process's argument words start with its name.
    let mut words: Vec<&str> = args.iter().skip(usize::from(args.is_unix())).collect();
    let nbuf = match take_nbuf(&mut words) {
        Ok(nbuf) => nbuf,
        Err(message) => {
            harness::failure::<UnixProcess>("options", &message);
            return 2;
        }
    };
    let disk = match take_disk(&mut words) {
        Ok(disk) => disk,
        Err(message) => {
            harness::failure::<UnixProcess>("options", &message);
            return 2;
        }
    };
    let name = disk.figure_name(nbuf);
    let (config, _) = match harness::parse_options(words.into_iter(), &["b"]) {
        Ok(parsed) => parsed,
        Err(message) => {
            harness::failure::<UnixProcess>(&name, &message);
            return 2;
        }
    };
    if !unix::is_unix_process() {
        harness::failure::<UnixProcess>(&name, "not a UNIX process: start it from the shell");
        return 2;
    }
    let before = match disk_stats() {
        Ok(stats) => stats,
        Err(reason) => {
            harness::failure::<UnixProcess>(&name, &reason);
            return 1;
        }
    };
    let booted = stat(&before, "nbuf");
    if booted != Some(u64::from(nbuf)) {
        harness::failure::<UnixProcess>(
            &name,
            &format!("the boot option nbuf={nbuf} did not take effect: ext2fs says nbuf={booted:?}"),
        );
        return 1;
    }
    harness::comment::<UnixProcess>(format_args!(
        "bbench on ridgeback: tsc_hz={} online_cpus={} samples={} nbuf={nbuf} disk={} block_bytes={} \
         sources={} source_bytes={} token_bytes={} output_bytes={} record_bytes={} cpu_passes_per_block={}",
        UnixProcess::tsc_hz(),
        sys::info(InfoKey::CpusOnline),
        config.sample_count.min(MAX_SAMPLES),
        disk.name(),
        stat(&before, "block_bytes").unwrap_or(0),
        b::SOURCES.len(),
        b::SOURCE_BYTES,
        b::TOKEN_BYTES,
        b::OUTPUT_BYTES,
        b::RECORD_BYTES,
        b::CPU_PASSES_PER_BLOCK,
    ));
    let dir = format!("{}/{}", r2::DISK_DIR, b::TREE_DIR);
    // The cache's counters around each timed job (the untimed unlink,
    // sync and eviction come before the `Starts` reading).
    let mut at_start = String::new();
    let hook = |job: b::Job| match job {
        b::Job::Starts => at_start = disk_stats().unwrap_or_default(),
        b::Job::Ended { sample, ticks } => {
            let now = disk_stats().unwrap_or_default();
            harness::comment::<UnixProcess>(format_args!(
                "b job {sample}: {} ms; cache: {}",
                ticks / (UnixProcess::tsc_hz() / 1000).max(1),
                stats_delta(&at_start, &now)
            ));
        }
    };
    let measured = b::report::<UnixProcess>(&name, &dir, &config, true, hook);
    i32::from(!measured)
}

/// Removes `--nbuf N` from `words` and returns N.
fn take_nbuf(words: &mut Vec<&str>) -> Result<u32, String> {
    let Some(at) = words.iter().position(|w| *w == "--nbuf") else {
        return Err(String::from("--nbuf is required (the boot's nbuf=)"));
    };
    let value = words.get(at + 1).copied().ok_or("--nbuf needs a value")?;
    let nbuf = value.parse().map_err(|_| format!("--nbuf: {value:?} is not a number"))?;
    words.drain(at..at + 2);
    Ok(nbuf)
}

/// Removes `--disk NAME` from `words` and returns the disk it names
/// (`plain` when absent).
fn take_disk(words: &mut Vec<&str>) -> Result<b::Disk, String> {
    let Some(at) = words.iter().position(|w| *w == "--disk") else {
        return Ok(b::Disk::Plain);
    };
    let value = words.get(at + 1).copied().ok_or("--disk needs a value (plain or rk)")?;
    let disk = b::Disk::parse(value).ok_or_else(|| format!("--disk: {value:?} is not plain or rk"))?;
    words.drain(at..at + 2);
    Ok(disk)
}
