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

mod platform;

use abi::InfoKey;
use alloc::format;
use alloc::vec::Vec;
use bench::harness::{self, MAX_SAMPLES};
use bench::r2::{self, Errno, Fd, Unix};
use bench::{MAX_COUNTERS, Platform};
use platform::Ridgeback;
use protocols::unix::{errno, open_flags};
use runtime::{Args, sys, unix};

runtime::entry!(main);

/// A UNIX process on Ridgeback, as the benchmarks see it.
struct UnixProcess;

impl Platform for UnixProcess {
    fn tsc_hz() -> u64 {
        Ridgeback::tsc_hz()
    }

    /// The UNIX `getpid`: one kernel call, no message (`runtime::unix`).
    fn getpid() -> u64 {
        unix::getpid()
    }

    fn yield_now() {
        sys::yield_now()
    }

    /// Standard output, as any UNIX program writes it (the console
    /// manager); the kernel's console when there is no standard output
    /// (started outside the UNIX system), so that the reason still shows.
    fn write_stdout(bytes: &[u8]) {
        if unix::write(1, bytes).is_err() {
            let _ = sys::debug_write(bytes);
        }
    }

    fn read_counters(values: &mut [u64; MAX_COUNTERS]) -> &'static [&'static str] {
        Ridgeback::read_counters(values)
    }
}

impl Unix for UnixProcess {
    fn create(path: &str) -> Result<Fd, Errno> {
        unix::creat(path, 0o644)
    }

    fn open_read(path: &str) -> Result<Fd, Errno> {
        unix::open(path, open_flags::O_RDONLY, 0)
    }

    fn read(fd: Fd, buffer: &mut [u8]) -> Result<usize, Errno> {
        unix::read(fd, buffer)
    }

    fn write(fd: Fd, bytes: &[u8]) -> Result<usize, Errno> {
        unix::write(fd, bytes)
    }

    fn close(fd: Fd) -> Result<(), Errno> {
        unix::close(fd)
    }

    fn unlink(path: &str) -> Result<(), Errno> {
        unix::unlink(path)
    }

    fn pipe() -> Result<(Fd, Fd), Errno> {
        unix::pipe()
    }

    fn fork() -> Result<u64, Errno> {
        unix::fork()
    }

    fn exit(status: i32) -> ! {
        unix::exit(status)
    }

    fn wait(pid: u64) -> Result<Option<i32>, Errno> {
        match unix::waitpid(pid as i64, false) {
            Ok(Some((_, status))) => Ok(status.exit_code().map(|code| code as i32)),
            // Only a WNOHANG wait answers "nothing yet".
            Ok(None) => Err(errno::ECHILD),
            Err(e) => Err(e),
        }
    }

    fn sbrk(increment: isize) -> Result<usize, Errno> {
        unix::sbrk(increment as i64).map(|old| old as usize)
    }
}

fn main(args: Args) -> i32 {
    // A UNIX process's argument words start with its name.
    let mut words: Vec<&str> = args.iter().skip(usize::from(args.is_unix())).collect();
    let suffix = match take_option(&mut words, "--suffix") {
        Ok(suffix) => suffix.unwrap_or(""),
        Err(message) => {
            harness::failure::<UnixProcess>("options", message);
            return 2;
        }
    };
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
        "r2bench on ridgeback: tsc_hz={} online_cpus={} samples={} min_sample_ms={} dir={} suffix={suffix:?}",
        UnixProcess::tsc_hz(),
        sys::info(InfoKey::CpusOnline),
        config.sample_count.min(MAX_SAMPLES),
        config.min_sample_ns / 1_000_000,
        r2::DIR
    ));
    let mut session = r2::Session::new(r2::DIR);
    let mut failures = 0;
    for figure in figures {
        let name = format!("{}{suffix}", r2::figure_name(figure));
        match session.measure::<UnixProcess>(figure, &config) {
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
        return Err("--suffix needs a value");
    }
    let value = words.remove(at + 1);
    words.remove(at);
    Ok(Some(value))
}
