//! dbench: seed 000's RAM disk program (`bench::d`) as a UNIX program on
//! Ridgeback: `dbench [--samples N] [--sample-ms N] device...`, with the
//! devices `virtio` (`/dev/vda`), `ramdriver` and `pddriver` (`/dev/ram0`,
//! the RAM disk in the mode the boot option `ramdisk.mode=` chose), or
//! `all` (the three). For each device it prints `d_<device>_1job`,
//! `d_<device>_5jobs` and their `_cpu` twins (`BENCH {json}` lines), or
//! `# FAILED <figure>: <reason>` when the device cannot be measured; the
//! exit status is 1 if any figure failed.
//!
//! What it is: the Ridgeback build of the loop the Linux build runs
//! (`bench d`), over `runtime::unix`'s `open`, `lseek`, `read` and `write`
//! on the device node (`unix_process.rs`). `--sample-ms` is accepted and
//! means nothing here: a sample is one job's whole run.
//!
//! What it is not: a driver. Until the virtio-blk and RAM disk drivers
//! make `/dev/vda` and `/dev/ram0`, every figure fails with the `open`
//! error and the device it needs (no figure is ever made up).
//!
//! Like `r2bench`, it needs the whole UNIX system: `cargo xtask bench`
//! boots the bench image normally and starts it from a batch script.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod platform;
mod unix_process;

use abi::InfoKey;
use bench::Platform;
use bench::d;
use bench::harness::{self, MAX_SAMPLES};
use runtime::{Args, sys, unix};
use unix_process::UnixProcess;

runtime::entry!(main);

fn main(args: Args) -> i32 {
    // A UNIX process's argument words start with its name.
    let words = args.iter().skip(usize::from(args.is_unix()));
    let (config, devices) = match harness::parse_options(words, &d::RIDGEBACK_DEVICES) {
        Ok(parsed) => parsed,
        Err(message) => {
            harness::failure::<UnixProcess>("options", &message);
            return 2;
        }
    };
    if !unix::is_unix_process() {
        harness::failure::<UnixProcess>("d", "not a UNIX process: start it from the shell");
        return 2;
    }
    harness::comment::<UnixProcess>(format_args!(
        "dbench on ridgeback: tsc_hz={} online_cpus={} samples={} passes={} chunk_bytes={} region_blocks={}",
        UnixProcess::tsc_hz(),
        sys::info(InfoKey::CpusOnline),
        config.sample_count.min(MAX_SAMPLES),
        d::PASSES,
        d::CHUNK_BYTES,
        d::REGION_BLOCKS
    ));
    let failures: usize = devices.into_iter().map(|device| d::run::<UnixProcess>(device, &config)).sum();
    i32::from(failures > 0)
}
