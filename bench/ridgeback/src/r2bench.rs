//! r2bench: seed 001's Table 2 rows (`bench::r2`) as a UNIX program on
//! Ridgeback: `r2bench [--samples N] [--sample-ms N] [--suffix S]
//! [figure...]`, with the figures `write`, `read`, `copy`, `pipe`,
//! `getpid`, `sbrk`, `creat`, `fork`, or `all` (the default). `--suffix`
//! is appended to every figure's name (`r2_write_8MB_perfile`), so that
//! boots of different configurations (the monitor's `monitor.files=`
//! arrangement) report different figures.
//!
//! What it is: the Ridgeback build of the very loops the Linux build runs
//! (`bench/src/main.rs`, figure `r2`), over `runtime::unix`: file calls go
//! to the memory file system (`/tmp`), pipes to a pipe manager, process
//! calls to the user monitor. Each figure prints one `BENCH {json}` line
//! on standard output with the kernel's event counters over its timed
//! sections (machine-wide, so the servers' kernel entries and messages
//! count too), or `# FAILED <figure>: <reason>`; the exit status is 1 if
//! any figure failed.
//!
//! What it is not: init. It needs the whole UNIX system (monitor, VM
//! manager, memfs, pipe managers), so `cargo xtask bench` boots the bench
//! image normally and starts it from a batch script (the boot module
//! `etc.batch`, run by `/bin/sh`). It is in the bench image only, so
//! `cargo xtask run --batch` (the normal image) cannot start it; `cargo
//! xtask bench --only r2 --ridgeback-only` runs it alone and keeps the
//! serial log (see `docs/benchmarks.md`).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod disk_stats;
mod platform;
mod unix_process;

use abi::InfoKey;
use alloc::format;
use alloc::vec::Vec;
use bench::Platform;
use bench::harness::{self, MAX_SAMPLES};
use bench::r2;
use disk_stats::{disk_stats, stats_delta};
use runtime::{Args, sys, unix};
use unix_process::UnixProcess;

runtime::entry!(main);

fn main(args: Args) -> i32 {
    // A UNIX process's argument words start with its name.
    let mut words: Vec<&str> = args.iter().skip(usize::from(args.is_unix())).collect();
    let (suffix, dir) = match (take_option(&mut words, "--suffix"), take_option(&mut words, "--dir")) {
        (Ok(suffix), Ok(dir)) => (suffix.unwrap_or(""), dir.unwrap_or(r2::DIR)),
        (Err(message), _) | (_, Err(message)) => {
            harness::failure::<UnixProcess>("options", message);
            return 2;
        }
    };
    let is_fsync = match words.iter().position(|w| *w == "--fsync") {
        Some(at) => {
            words.remove(at);
            true
        }
        None => false,
    };
    let is_disk = dir.starts_with(r2::DISK_DIR);
    let (config, figures) = match harness::parse_options(words.into_iter(), &r2::FIGURES) {
        Ok(parsed) => parsed,
        Err(message) => {
            harness::failure::<UnixProcess>("options", &message);
            return 2;
        }
    };
    if !unix::is_unix_process() {
        // Started by the kernel's spawn, it would have no monitor to talk to.
        harness::failure::<UnixProcess>("r2", "not a UNIX process: start it from the shell");
        return 2;
    }
    harness::comment::<UnixProcess>(format_args!(
        "r2bench on ridgeback: tsc_hz={} online_cpus={} samples={} min_sample_ms={} dir={dir} fsync={is_fsync} suffix={suffix:?}",
        UnixProcess::tsc_hz(),
        sys::info(InfoKey::CpusOnline),
        config.sample_count.min(MAX_SAMPLES),
        config.min_sample_ns / 1_000_000,
    ));
    if is_disk {
        // The directory of the disk rows, below the mount point.
        let _ = unix::mkdir(dir, 0o755);
    }
    let mut session = if is_fsync { r2::Session::with_fsync(dir) } else { r2::Session::new(dir) };
    let mut failures = 0;
    for figure in figures {
        let name = format!("{}{suffix}", r2::figure_name(figure));
        let stats_before = if is_disk { disk_stats().ok() } else { None };
        let measured = session.measure::<UnixProcess>(figure, &config);
        if let Some(before) = stats_before {
            // The whole measurement's (calibration and untimed parts too):
            // what the figure asked of ext2fs's cache and the disk.
            let after = disk_stats().unwrap_or_default();
            harness::comment::<UnixProcess>(format_args!("{name}: cache: {}", stats_delta(&before, &after)));
        }
        match measured {
            Ok((unit, measurement)) => harness::report::<UnixProcess>(&name, unit, &measurement),
            Err(reason) => {
                harness::failure::<UnixProcess>(&name, &reason);
                failures += 1;
            }
        }
    }
    session.clean_up::<UnixProcess>();
    i32::from(failures > 0)
}

/// Removes `option VALUE` from `words` and returns the value.
fn take_option<'a>(words: &mut Vec<&'a str>, option: &str) -> Result<Option<&'a str>, &'static str> {
    let Some(at) = words.iter().position(|w| *w == option) else { return Ok(None) };
    if at + 1 >= words.len() {
        return Err("--suffix and --dir need a value");
    }
    let value = words.remove(at + 1);
    words.remove(at);
    Ok(Some(value))
}
