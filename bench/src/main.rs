//! The Linux build of the benchmark program: `bench [options] [figure...]`.
//!
//! Figures: `getpid`, `copy` (4 KiB and 1 MiB), `yield` (two processes
//! taking turns with `sched_yield` on one vCPU), `pipe`, `unix`, `futex`
//! (32-byte ping-pong), `pipedata` (4 KiB requests, 32-byte replies, through
//! pipes), `r2` (seed 001's Table 2 rows, `bench::r2`, on the tmpfs at
//! `/tmp`), `d` (seed 000's RAM disk program, `bench::d`, on brd's
//! `/dev/ram0` and the virtio-blk `/dev/vda` with `O_DIRECT`, and on a
//! tmpfs file), `p` (seed 002's `bw_pipe`, `bench::p`: a plain pipe, the
//! same with the overwrite, and `vmsplice`, on one vCPU and on two, and
//! the copy limit), or `all` (the default). Ping-pong figures run with both ends on
//! one vCPU and, when there are two, on two. Options: `--samples N`,
//! `--sample-ms N`. Output: one `BENCH {json}` line per figure, `#` lines
//! of commentary (see `bench::harness`).
//!
//! The Ridgeback build gets its own entry point with Ridgeback's runtime;
//! everything it shares with this one is in the library.

#[cfg(not(target_os = "linux"))]
compile_error!("this is the Linux entry point; Ridgeback's build has its own");

use bench::harness;
use bench::linux::{
    Linux, MAX_REQUEST_BYTES, PipeChannel, Placement, SharedMemoryChannel, UnixSocketChannel, Wait,
    YieldPeer, online_cpus,
};
use bench::n::{self, NetIo};
use bench::{Platform, b, d, p, r2, workloads};

const FIGURES: &[&str] = &[
    "getpid", "copy", "yield", "pipe", "unix", "futex", "pipedata", "r2", "d", "p", "b", "brk", "r2disk", "n",
];
const USAGE: &str = "usage: bench [--samples N] [--sample-ms N] \
                     [all|getpid|copy|yield|pipe|unix|futex|pipedata|r2|d|p|b|brk|r2disk|n]...";

fn main() {
    let (config, selected) = match harness::parse_options(std::env::args().skip(1), FIGURES) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("bench: {message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let cpus = online_cpus();
    harness::comment::<Linux>(format_args!(
        "bench on linux: tsc_hz={} online_cpus={cpus} samples={} min_sample_ms={}",
        Linux::tsc_hz(),
        config.sample_count,
        config.min_sample_ns / 1_000_000
    ));
    let placements: &[Placement] =
        if cpus >= 2 { &[Placement::SameCpu, Placement::CrossCpu] } else { &[Placement::SameCpu] };
    if cpus < 2 {
        harness::comment::<Linux>(format_args!("one CPU online: cross-CPU figures skipped"));
    }

    let mut failures = 0;
    for figure in selected {
        match figure {
            "getpid" => {
                workloads::getpid::<Linux>(&config);
            }
            "copy" => {
                for (label, len_bytes) in [("4KiB", 4 << 10), ("1MiB", 1 << 20)] {
                    let source = vec![0xa5_u8; len_bytes];
                    let mut destination = vec![0_u8; len_bytes];
                    let name = format!("copy_{label}");
                    workloads::copy_bandwidth::<Linux>(&name, &config, &source, &mut destination);
                }
            }
            // Turn-taking by sched_yield makes sense on one CPU only: on
            // two, both ends would just spin. The same program as
            // Ridgeback's context-switch figure.
            "yield" => {
                let _peer = YieldPeer::new();
                workloads::yield_pair::<Linux>("yield_pair_1cpu", &config);
            }
            "pipe" => {
                for &placement in placements {
                    let mut channel = PipeChannel::new(placement);
                    let name = format!("pipe_pingpong_32B_{}", placement.suffix());
                    workloads::ping_pong::<Linux>(&name, &config, &mut channel);
                }
            }
            "unix" => {
                for &placement in placements {
                    let mut channel = UnixSocketChannel::new(placement);
                    let name = format!("unix_pingpong_32B_{}", placement.suffix());
                    workloads::ping_pong::<Linux>(&name, &config, &mut channel);
                }
            }
            "futex" => {
                for &placement in placements {
                    let mut channel = SharedMemoryChannel::new(placement, Wait::Futex);
                    let name = format!("futex_pingpong_32B_{}", placement.suffix());
                    workloads::ping_pong::<Linux>(&name, &config, &mut channel);
                }
            }
            "pipedata" => {
                for &placement in placements {
                    let mut channel = PipeChannel::with_request_bytes(placement, MAX_REQUEST_BYTES);
                    let mut request = vec![0x3c_u8; MAX_REQUEST_BYTES];
                    let name = format!("pipe_4KiB_{}", placement.suffix());
                    workloads::data_ping_pong::<Linux>(&name, &config, &mut channel, &mut request);
                }
            }
            // Unpinned, as the programs of seed 001's Table 2 ran: the
            // pipe's two processes go wherever the scheduler puts them.
            "r2" => {
                bench::linux::ignore_sigpipe();
                let mut session = r2::Session::new(r2::DIR);
                for figure in r2::FIGURES {
                    if let Err(reason) = session.run::<Linux>(figure, &config) {
                        harness::failure::<Linux>(r2::figure_name(figure), &reason);
                        failures += 1;
                    }
                }
                session.clean_up::<Linux>();
            }
            // Unpinned too: the seed's five jobs went wherever VMS put them.
            "d" => {
                for device in d::LINUX_DEVICES {
                    failures += d::run::<Linux>(device, &config);
                }
            }
            // Seed 003's loopback TCP (`bench::n`) on the first 2 and 4
            // CPUs (the affinity mask), as Ridgeback's `cpus=2`/`cpus=4`.
            "n" => {
                bench::linux::ignore_sigpipe();
                if let Err(e) = bench::linux::loopback_up() {
                    harness::comment::<Linux>(format_args!("bringing lo up failed: {e:?}"));
                }
                for n_cpus in [2, 4] {
                    if n_cpus > cpus {
                        harness::comment::<Linux>(format_args!(
                            "{cpus} CPUs online: no {n_cpus}-CPU N figures"
                        ));
                        continue;
                    }
                    Linux::limit_cpus(Some(n_cpus));
                    for workload in [n::Workload::Rr, n::Workload::Stream] {
                        for clients in n::CLIENTS {
                            let name = n::figure_name(workload, clients, n_cpus, "linux");
                            failures +=
                                usize::from(!n::report_figure::<Linux>(&name, workload, clients, &config));
                        }
                    }
                }
                Linux::limit_cpus(None);
            }
            // Pinned as the ping-pongs are: writer on CPU 0, reader on CPU 0
            // (`_1cpu`) or CPU 1 (`_2cpu`). The copy limit is one process.
            "p" => {
                bench::linux::ignore_sigpipe();
                for &placement in placements {
                    let cpus = p::Placement {
                        writer_cpu: Some(0),
                        reader_cpu: Some(if placement == Placement::SameCpu { 0 } else { 1 }),
                    };
                    for (design, method, overwrite) in [
                        ("pipe", p::Method::Write, false),
                        ("pipe", p::Method::Write, true),
                        ("vmsplice", p::Method::Vmsplice, false),
                    ] {
                        let name = p::figure_name(design, overwrite, placement.suffix());
                        let variant = p::Variant { method, overwrite };
                        failures += usize::from(!p::report_pipe::<Linux>(&name, variant, cpus, &config));
                    }
                }
                p::report_copies::<Linux>(&config);
            }
            // Seed 004's job on ext2 on the virtio-blk disk (mounted here
            // from /dev/vda, which the driver gives a fresh image holding
            // the job's sources), each job after a sync and drop_caches.
            // `brk`: the same on the rk disk (the driver serves the image
            // through nbdkit's delay; the guest sees the same /dev/vda).
            "b" | "brk" => {
                let dir = format!("{}/{}", r2::DISK_DIR, b::TREE_DIR);
                let disk = if figure == "brk" { b::Disk::Rk } else { b::Disk::Plain };
                let name = disk.linux_figure_name();
                match bench::linux::mount_disk(r2::DISK_DIR) {
                    Ok(()) => {
                        failures += usize::from(!b::report::<Linux>(&name, &dir, &config, false, |_| {}))
                    }
                    Err(reason) => {
                        harness::failure::<Linux>(&name, &reason);
                        failures += 1;
                    }
                }
            }
            // R2's file rows on ext2 on the virtio-blk disk, without and
            // with fsync before the clock stops.
            "r2disk" => {
                let mounted = bench::linux::mount_disk(r2::DISK_DIR);
                let dir = format!("{}/r2", r2::DISK_DIR);
                bench::linux::make_dir(&dir);
                for (figures, suffix, is_fsync) in [
                    (&r2::DISK_FIGURES[..], r2::DISK_SUFFIX, false),
                    (&r2::FSYNC_FIGURES[..], r2::FSYNC_SUFFIX, true),
                ] {
                    let mut session =
                        if is_fsync { r2::Session::with_fsync(&dir) } else { r2::Session::new(&dir) };
                    for figure in figures {
                        let name = format!("{}{suffix}", r2::figure_name(figure));
                        let measured = match &mounted {
                            Ok(()) => session.measure::<Linux>(figure, &config),
                            Err(reason) => Err(reason.clone()),
                        };
                        match measured {
                            Ok((unit, measurement)) => harness::report::<Linux>(&name, unit, &measurement),
                            Err(reason) => {
                                harness::failure::<Linux>(&name, &reason);
                                failures += 1;
                            }
                        }
                    }
                    session.clean_up::<Linux>();
                }
            }
            _ => unreachable!("parse_options accepts only FIGURES"),
        }
    }
    if failures > 0 {
        std::process::exit(1);
    }
}
