//! `cargo xtask bench`: the benchmark suite of `docs/benchmarks.md`.
//!
//! What it is: the driver that boots Ridgeback and a Linux guest in the
//! same QEMU machine (accelerator, CPU model, vCPU count, memory: taken
//! from Ridgeback's own command line, see [`boot::machine_args`]), runs
//! the same benchmark programs in both (`bench/`: the library's workloads,
//! built as `ridgebench` for Ridgeback and as a static `bench` for Linux),
//! and reports each figure for both systems with their ratio, the spread,
//! the Ridgeback kernel counters per operation and the seeds' historical
//! figures. Each run leaves `target/bench/<date>.json` (every figure with
//! its raw samples, the machine, QEMU, host and revision) and
//! `target/bench/<date>.svg` (the chart), plus `latest.json`/`latest.svg`
//! and the serial logs of every boot under `target/bench/logs/<date>/`.
//!
//! What it is not: a judge. No figure has a threshold; the command fails
//! only when a figure could not be measured (a boot failed or timed out, a
//! program reported `# FAILED`, a figure of the table is missing).
//!
//! Layers: [`catalogue`] (what is measured: groups, rows, seeds), [`line`]
//! (the programs' `BENCH` lines), [`results`] (series, statistics, the
//! JSON file), [`report`] (the text table, counters, `--compare`),
//! [`svg`] (the chart), [`boot`] (running QEMU). Everything but `boot` and
//! the orchestration at the bottom of this file is pure and unit-tested.
//!
//! Placement: Ridgeback cannot pin a process to a CPU, so figures with
//! both ends on one CPU (`_1cpu`) come from a second Ridgeback boot of the
//! same machine with the kernel option `cpus=1`; Linux pins both ends to
//! CPU 0 in its one boot. See `docs/benchmarks.md`.
//!
//! The UNIX rows (R2, seed 001's Table 2) need the whole UNIX system, so
//! they get a boot of their own: the bench image booted normally (init,
//! the servers of `etc/inittab`), with a batch script (the boot module
//! `etc.batch`, as `cargo xtask run --batch` makes) that runs
//! `/bin/r2bench`. On Linux they are the `r2` figure of the same `bench`
//! program, on the guest's tmpfs.
//!
//! The D rows (seed 000, the VMS RAMDRIVER note) run the same way with
//! `/bin/dbench`, once per RAM disk mode (the boot option
//! `ramdisk.mode=`, [`RamdiskMode`]): the `ramdriver` boot measures the
//! RAM disk and the virtio-blk disk, the `pddriver` boot the RAM disk. On
//! Linux they are the `d` figure: brd and the virtio-blk disk with
//! `O_DIRECT`, and a tmpfs file. Every boot of both systems has the same
//! disk image attached (one per run, under the run's logs).
//!
//! The P rows (seed 002, NetBSD's loaned pipes) run `/bin/pbench` the
//! same way, once per pipe design (`pipe=small|big|loan`) and CPU count
//! (all, and `cpus=1`); on Linux they are the `p` figure: a plain pipe and
//! `vmsplice`, pinned to one vCPU and to two, and the copy limit.
//!
//! The B rows (seed 004, UNIX V1's buffer count) run `/bin/bbench` once
//! per `nbuf` (the boot option), and the R2 disk rows `/bin/r2bench --dir
//! /disk/r2` twice (without and with `--fsync`) in one boot; both on a
//! fresh ext2 image made by `mke2fs -d` from B's sources before each boot
//! (instead of the raw scratch disk), checked with `e2fsck -fn` after it.
//! On Linux they are the `b` and `r2disk` figures of a second boot whose
//! disk is such an image (`bench` mounts it at `/disk`).
//!
//! The third column (issue 14): the Linux `bench` program itself, the
//! file the guest runs, is added to a UNIX boot of Ridgeback as
//! `/bin/linuxbench` and run by the Linux server
//! ([`RidgebackProgram::LinuxBin`]); its getpid, pipe and R2 figures are
//! kept as `<figure>_linuxbin` ([`catalogue::LINUXBIN_SUFFIX`]) beside the
//! rows' Ridgeback and Linux figures.
//!
//! Contract with `main.rs`: [`main`] receives every argument after `bench`
//! unparsed, and returns the process exit code.

mod boot;
mod catalogue;
mod line;
mod report;
mod results;
mod rk;
mod svg;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use catalogue::{DEFAULT_GROUPS, Group};
use results::{Boot, Meta, Results, System};

use crate::batch::BATCH_MODULE;
use crate::image::{self, ImageKind, Workspace};
use crate::linux_guest;
use crate::qemu::{self, Accel, AccelChoice, QemuConfig, QemuExit, SerialMode};
use crate::tools::{self, Result};

const USAGE: &str = "\
usage: cargo xtask bench [options]
       cargo xtask bench --compare A.json B.json
       cargo xtask bench --chart RUN.json

Boots Ridgeback and a Linux guest in the same QEMU machine, runs the same
benchmarks in both and prints Ridgeback's figure, Linux's and their ratio
(>1: Ridgeback faster). Writes target/bench/<date>.json and .svg.

options:
  --quick               smoke test: 1 run, 3 short samples per figure
  --runs N              boots of each system (default 3; --quick: 1)
  --samples N           samples per figure and boot, 1..=15 (default 7; --quick: 3)
  --sample-ms MS        shortest sample (default 50; --quick: 10)
  --only LIST           only these benchmarks: getpid, copy, switch (yield), call,
                        send, data, r1 (= call,send,data), r2 (seed 001's Table 2:
                        files, pipe, getpid, sbrk, creat, fork), d (seed 000's RAM
                        disk against a disk: not in the default set until Ridgeback
                        has its block drivers), p (seed 002's bw_pipe: three pipe
                        designs, 1 and all CPUs, six boots; not in the default set),
                        b (seed 004's nbuf curve on ext2: a boot per nbuf; not in the
                        default set), brk (the same on a disk with a time per access,
                        nbdkit's delay filter, figures b_rk_nbufN and Linux's
                        b_rk_linux; not in the default set), r2disk (R2's file rows on ext2 on virtio-blk,
                        without and with fsync; not in the default set), n (seed 003's
                        loopback TCP, net=classic and net=scalable on 2 and 4 CPUs with
                        the lock statistics: four boots; --smp 4 for the 4-CPU rows;
                        not in the default set);
                        commas or repeated
  --smp N               vCPUs of the machine (default 2); one-CPU figures always
                        come from a cpus=1 Ridgeback boot and pinned Linux processes
  --mem SIZE            guest memory (default 512M)
  --accel tcg|kvm|auto  accelerator (default auto)
  --icount              QEMU -icount shift=0 (TCG only): TSC ticks count guest
                        instructions; figures become instructions per operation.
                        Implies --smp 1 (the Linux guest hangs bringing up a
                        second vCPU under icount); with --smp N>1, Ridgeback only
  --ridgeback-only      do not boot Linux (no apt download, no ratios)
  --ext2-journal on|off r2disk's Ridgeback boots: the ext3 volume's journal used
                        (on, the default) or not (boot option ext2.journal=off:
                        the ordered writes); Linux's volume is ext2 either way
  --cmdline OPTIONS     kernel options added to every Ridgeback boot (such as
                        pci.msix=off); row keys and Linux's boots unchanged
  --timeout-s S         per-boot timeout (default 600; --quick: 120; --icount: 1800)
  --compare A B         print what changed from run file A to run file B
  --chart RUN.json      draw RUN.svg again from a run file
";

#[derive(Clone, Debug, PartialEq)]
pub struct BenchOptions {
    pub is_quick: bool,
    pub runs: u32,
    pub samples: usize,
    pub sample_ms: u64,
    pub groups: Vec<Group>,
    pub smp: u32,
    pub mem: String,
    pub accel: AccelChoice,
    pub is_icount: bool,
    pub is_ridgeback_only: bool,
    pub timeout_s: u64,
    pub compare: Option<(PathBuf, PathBuf)>,
    /// `--chart RUN.json`: draw that run's chart again (next to it, `.svg`).
    pub chart: Option<PathBuf>,
    /// `--ext2-journal on|off`: whether r2disk's Ridgeback boots commit
    /// `fsync` through the ext3 volume's journal (`ext2.journal`).
    pub ext2_journal: bool,
    /// `--cmdline "WORDS"`: kernel options put in front of every
    /// Ridgeback boot's own (such as `pci.msix=off`); Linux's boots and
    /// the rows' keys are unchanged.
    pub extra_cmdline: String,
    /// Run by `cargo xtask test` ([`smoke`]): results go to
    /// `target/bench/smoke.{json,svg}` and `latest.*` is left alone.
    pub is_smoke: bool,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            is_quick: false,
            runs: 3,
            samples: 7,
            sample_ms: 50,
            groups: DEFAULT_GROUPS.to_vec(),
            smp: qemu::DEFAULT_SMP,
            mem: qemu::DEFAULT_MEM.to_string(),
            accel: AccelChoice::Auto,
            is_icount: false,
            is_ridgeback_only: false,
            timeout_s: 600,
            compare: None,
            chart: None,
            is_smoke: false,
            ext2_journal: true,
            extra_cmdline: String::new(),
        }
    }
}

pub fn parse_args(args: &[String]) -> Result<BenchOptions> {
    let mut opts = BenchOptions::default();
    let (mut runs, mut samples, mut sample_ms, mut timeout_s, mut smp) = (None, None, None, None, None);
    let mut only = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let (flag, inline) = match word.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (word.as_str(), None),
        };
        let mut value = || -> Result<String> {
            inline.clone().or_else(|| words.next().cloned()).ok_or_else(|| format!("{flag} needs a value"))
        };
        let number = |text: String| -> Result<u64> {
            text.parse::<u64>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{flag} wants a positive number, got `{text}`"))
        };
        match flag {
            "--quick" => opts.is_quick = true,
            "--icount" => opts.is_icount = true,
            "--ridgeback-only" => opts.is_ridgeback_only = true,
            "--runs" => runs = Some(number(value()?)? as u32),
            "--samples" => {
                let count = number(value()?)? as usize;
                if count > 15 {
                    return Err("--samples must be 1..=15".to_string());
                }
                samples = Some(count);
            }
            "--sample-ms" => sample_ms = Some(number(value()?)?),
            "--timeout-s" => timeout_s = Some(number(value()?)?),
            "--only" => only.push(value()?),
            "--smp" => smp = Some(qemu::parse_smp(&value()?)?),
            "--mem" => opts.mem = qemu::parse_mem(&value()?)?,
            "--accel" => opts.accel = value()?.parse()?,
            "--compare" => {
                let a = value()?;
                let b = words.next().ok_or("--compare needs two run files")?;
                opts.compare = Some((PathBuf::from(a), PathBuf::from(b)));
            }
            "--chart" => opts.chart = Some(PathBuf::from(value()?)),
            "--ext2-journal" => {
                opts.ext2_journal = match value()?.as_str() {
                    "on" => true,
                    "off" => false,
                    other => return Err(format!("--ext2-journal wants on or off, got `{other}`")),
                }
            }
            "--cmdline" => {
                let words = value()?;
                if words.split_whitespace().any(|w| w == "--") {
                    return Err("--cmdline takes kernel options only (no `--`)".to_string());
                }
                opts.extra_cmdline = words.split_whitespace().collect::<Vec<_>>().join(" ");
            }
            "--help" | "-h" | "help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown option `{other}` for bench\n\n{USAGE}")),
        }
    }
    if opts.is_quick {
        (opts.runs, opts.samples, opts.sample_ms, opts.timeout_s) = (1, 3, 10, 120);
    }
    if opts.is_icount {
        // The Linux guest boots under icount with one vCPU (15 s) but never
        // brings up a second one (docs/benchmarks.md, "--icount"): one vCPU
        // unless asked otherwise, and then Ridgeback alone.
        opts.smp = 1;
        opts.is_ridgeback_only |= smp.is_some_and(|n| n > 1);
        opts.timeout_s = 1800;
    }
    opts.smp = smp.unwrap_or(opts.smp);
    opts.runs = runs.unwrap_or(opts.runs);
    opts.samples = samples.unwrap_or(opts.samples);
    opts.sample_ms = sample_ms.unwrap_or(opts.sample_ms);
    opts.timeout_s = timeout_s.unwrap_or(opts.timeout_s);
    if !only.is_empty() {
        opts.groups = catalogue::parse_groups(&only)?;
    }
    Ok(opts)
}

/// The program that measures in a Ridgeback boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RidgebackProgram {
    /// `ridgebench`, booted as init (`init=ridgebench -- ...`).
    Ridgebench,
    /// `r2bench`, a UNIX process: the normal init and servers, and a
    /// batch script (boot module `etc.batch`) that runs it, with the
    /// monitor serving file data as [`Files`] says.
    R2bench(Files),
    /// `dbench`, a UNIX process started the same way, with the RAM disk
    /// in the given mode.
    Dbench(RamdiskMode),
    /// `pbench`, a UNIX process started the same way, with the pipe design
    /// (`pipe=`, one of `catalogue::SEED_002`'s).
    Pbench(&'static str),
    /// `bbench`, seed 004's job on the ext2 disk, with `nbuf=` buffers,
    /// on the plain disk or the `rk` one ([`rk`]).
    Bbench(u32, bench::b::Disk),
    /// `r2bench` on the ext2 disk (`--dir /disk/r2`): R2's file rows,
    /// then the same with `fsync`.
    R2Disk,
    /// `nbench`, seed 003's loopback TCP, with the network server in the
    /// given mode (`net=`, one of `catalogue::N_MODES`).
    Nbench(&'static str),
    /// The Linux `bench` program itself, the static executable the Linux
    /// guest runs, added to the image's `/bin` as `linuxbench` (as
    /// `cargo xtask run --add` does) and run by the Linux server: the
    /// rows' third column, "the same binary on both kernels" (issue 14).
    LinuxBin,
}

impl RidgebackProgram {
    pub fn name(self) -> &'static str {
        match self {
            RidgebackProgram::Ridgebench => "ridgebench",
            RidgebackProgram::R2bench(_) => "r2bench",
            RidgebackProgram::Dbench(_) => "dbench",
            RidgebackProgram::Pbench(_) => "pbench",
            RidgebackProgram::Bbench(..) => "bbench",
            RidgebackProgram::R2Disk => "r2bench",
            RidgebackProgram::Nbench(_) => "nbench",
            RidgebackProgram::LinuxBin => LINUXBIN_PROGRAM,
        }
    }

    /// Whether the boot gets a fresh ext2 image as its disk (made on the
    /// host with B's sources) instead of the run's raw scratch disk.
    fn needs_ext2_disk(self) -> bool {
        matches!(self, RidgebackProgram::Bbench(..) | RidgebackProgram::R2Disk)
    }

    /// Whether the program is built into the bench image (the Linux
    /// program is added to it as an extra boot module).
    fn is_in_image(self) -> bool {
        !matches!(self, RidgebackProgram::LinuxBin)
    }

    /// Whether a batch script under the normal init starts it.
    fn is_unix(self) -> bool {
        !matches!(self, RidgebackProgram::Ridgebench)
    }
}

/// The RAM disk driver's mode (its boot option `ramdisk.mode=`, issue 10):
/// seed 000's two RAM disks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RamdiskMode {
    /// The author's driver: one bulk copy in the requester's context, many
    /// readers or one writer at a time.
    RamDriver,
    /// DEC's: one request at a time, a byte at a time, nothing else
    /// running on that CPU meanwhile.
    PdDriver,
}

impl RamdiskMode {
    pub fn name(self) -> &'static str {
        match self {
            RamdiskMode::RamDriver => "ramdriver",
            RamdiskMode::PdDriver => "pddriver",
        }
    }

    pub fn kernel_option(self) -> String {
        format!("ramdisk.mode={}", self.name())
    }

    /// `dbench`'s devices in a boot of this mode: the virtio-blk disk is
    /// measured once, in the RAMDRIVER boot.
    fn devices(self) -> Vec<&'static str> {
        match self {
            RamdiskMode::RamDriver => vec!["virtio", "ramdriver"],
            RamdiskMode::PdDriver => vec!["pddriver"],
        }
    }
}

/// Who serves a file's data (the monitor's `monitor.files=` boot option,
/// `docs/unix.md`). The issue asks for both to be measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Files {
    /// The directory manager (memfs) itself: the default.
    Shared,
    /// Ridge's arrangement: a file-manager process per open file, loaded
    /// at the first open and written back at the last close.
    PerFile,
}

impl Files {
    pub fn kernel_option(self) -> &'static str {
        match self {
            Files::Shared => "monitor.files=shared",
            Files::PerFile => "monitor.files=per-file",
        }
    }

    /// What `r2bench --suffix` appends to the figures' names.
    pub fn suffix(self) -> &'static str {
        match self {
            Files::Shared => "",
            Files::PerFile => catalogue::PER_FILE_SUFFIX,
        }
    }
}

/// One Ridgeback boot of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RidgebackBootPlan {
    /// `smp<N>`, `cpus=1` or `unix`.
    pub label: String,
    /// The kernel option that limits the CPUs, if any.
    pub cpus_option: Option<&'static str>,
    pub program: RidgebackProgram,
    /// The program's figures.
    pub figures: Vec<&'static str>,
}

/// What each run boots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub ridgeback: Vec<RidgebackBootPlan>,
    /// Linux `bench` figures.
    pub linux: Vec<&'static str>,
    /// Linux `bench` figures of a second boot whose disk is a fresh ext2
    /// image (B and R2 on disk), in the same machine.
    pub linux_ext2: Vec<&'static str>,
}

pub fn plan(groups: &[Group], smp: u32) -> Plan {
    let figures = |keep: &dyn Fn(Group) -> bool| -> Vec<&'static str> {
        groups.iter().copied().filter(|&g| !g.is_unix() && keep(g)).map(Group::ridgeback_figure).collect()
    };
    let mut ridgeback = Vec::new();
    let main = if smp == 1 { figures(&|_| true) } else { figures(&|g| g.has_multi_cpu_figures()) };
    if !main.is_empty() {
        ridgeback.push(RidgebackBootPlan {
            label: format!("smp{smp}"),
            cpus_option: None,
            program: RidgebackProgram::Ridgebench,
            figures: main,
        });
    }
    let one_cpu = figures(&|g| g.has_one_cpu_figures());
    if smp > 1 && !one_cpu.is_empty() {
        ridgeback.push(RidgebackBootPlan {
            label: "cpus=1".to_string(),
            cpus_option: Some("cpus=1"),
            program: RidgebackProgram::Ridgebench,
            figures: one_cpu,
        });
    }
    if groups.contains(&Group::R2) {
        // Every CPU online, nothing pinned, as on Linux; once with each
        // file arrangement (only the rows that open files differ).
        ridgeback.push(RidgebackBootPlan {
            label: "unix".to_string(),
            cpus_option: None,
            program: RidgebackProgram::R2bench(Files::Shared),
            figures: vec![Group::R2.ridgeback_figure()],
        });
        ridgeback.push(RidgebackBootPlan {
            label: "unix-perfile".to_string(),
            cpus_option: None,
            program: RidgebackProgram::R2bench(Files::PerFile),
            figures: catalogue::R2_FILE_FIGURES.to_vec(),
        });
    }
    if groups.contains(&Group::D) {
        // Every CPU online, nothing pinned, as the seed's five jobs and
        // the Linux guest's; once per RAM disk mode.
        for mode in [RamdiskMode::RamDriver, RamdiskMode::PdDriver] {
            ridgeback.push(RidgebackBootPlan {
                label: format!("d-{}", mode.name()),
                cpus_option: None,
                program: RidgebackProgram::Dbench(mode),
                figures: mode.devices(),
            });
        }
    }
    if groups.contains(&Group::P) {
        // A boot per pipe design (a boot option) and per CPU count: all
        // CPUs, then one (`cpus=1`). The loan boots also run the overwrite
        // variant; the copy limit, one process, runs once.
        for design in catalogue::SEED_002.map(|d| d.design) {
            let mut cpus: Vec<(String, Option<&'static str>)> = vec![(format!("smp{smp}"), None)];
            if smp > 1 {
                cpus.push(("cpus1".to_string(), Some("cpus=1")));
            }
            for (index, (cpus_label, cpus_option)) in cpus.into_iter().enumerate() {
                let mut figures = vec!["pipe"];
                if design == "loan" {
                    figures.push("overwrite");
                    if index == 0 {
                        figures.push("copy");
                    }
                }
                ridgeback.push(RidgebackBootPlan {
                    label: format!("p-{design}-{cpus_label}"),
                    cpus_option,
                    program: RidgebackProgram::Pbench(design),
                    figures,
                });
            }
        }
    }
    if groups.contains(&Group::R2Disk) {
        // Every CPU online, the default buffer count (sized from memory).
        ridgeback.push(RidgebackBootPlan {
            label: "r2disk".to_string(),
            cpus_option: None,
            program: RidgebackProgram::R2Disk,
            figures: bench::r2::DISK_FIGURES.to_vec(),
        });
    }
    // A boot per buffer count, as the seed booted a kernel per nbuf: the
    // first job of each boot is cold by the boot. Per disk: the plain one
    // (`b`) and the one with a time per access (`brk`, [`rk`]).
    for (group, disk, prefix) in
        [(Group::B, bench::b::Disk::Plain, "b"), (Group::BRk, bench::b::Disk::Rk, "brk")]
    {
        if groups.contains(&group) {
            for (nbuf, _) in catalogue::SEED_004 {
                ridgeback.push(RidgebackBootPlan {
                    label: format!("{prefix}-nbuf{nbuf}"),
                    cpus_option: None,
                    program: RidgebackProgram::Bbench(nbuf, disk),
                    figures: vec!["b"],
                });
            }
        }
    }
    if groups.contains(&Group::N) {
        // A boot per mode (a boot option) and CPU count (2 and 4, as the
        // machine has them); each measures both workloads.
        for cpus in catalogue::n_cpu_counts(smp) {
            for mode in catalogue::N_MODES {
                let cpus_option = match cpus {
                    2 => Some("cpus=2"),
                    _ => Some("cpus=4"),
                };
                ridgeback.push(RidgebackBootPlan {
                    label: format!("n-{mode}-{cpus}cpu"),
                    cpus_option,
                    program: RidgebackProgram::Nbench(mode),
                    figures: vec!["rr", "stream"],
                });
            }
        }
    }
    // The Linux program on Ridgeback: one UNIX boot, every CPU online, as
    // the R2 rows (its pinning is not honoured there: see
    // `catalogue::linuxbin_figures`).
    let linuxbin: Vec<&'static str> = groups.iter().flat_map(|g| g.linuxbin_figures()).copied().collect();
    if !linuxbin.is_empty() {
        ridgeback.push(RidgebackBootPlan {
            label: "linuxbin".to_string(),
            cpus_option: None,
            program: RidgebackProgram::LinuxBin,
            figures: linuxbin,
        });
    }
    let (mut linux, mut linux_ext2): (Vec<&'static str>, Vec<&'static str>) = (Vec::new(), Vec::new());
    for group in groups {
        let list = if group.needs_ext2_disk() { &mut linux_ext2 } else { &mut linux };
        for figure in group.linux_figures() {
            if !list.contains(figure) {
                list.push(figure);
            }
        }
    }
    Plan { ridgeback, linux, linux_ext2 }
}

/// The arguments both programs take: `--samples N --sample-ms M figure...`.
fn program_args(opts: &BenchOptions, figures: &[&str]) -> String {
    format!("--samples {} --sample-ms {} {}", opts.samples, opts.sample_ms, figures.join(" "))
}

/// The kernel command line of a Ridgeback boot: for `ridgebench`, it as
/// init and its arguments after the lone `--`; for `r2bench` and
/// `dbench`, the CPU option and their server's option (the normal init
/// runs the batch script).
/// `--cmdline`'s options in front of a boot's own command line (in
/// front: a `--` in the boot's own ends the options).
fn with_extra_options(opts: &BenchOptions, cmdline: String) -> String {
    match (opts.extra_cmdline.is_empty(), cmdline.is_empty()) {
        (true, _) => cmdline,
        (false, true) => opts.extra_cmdline.clone(),
        (false, false) => format!("{} {cmdline}", opts.extra_cmdline),
    }
}

fn ridgeback_cmdline(boot: &RidgebackBootPlan, opts: &BenchOptions) -> String {
    match boot.program {
        RidgebackProgram::Ridgebench => {
            let cpus = boot.cpus_option.map(|o| format!(" {o}")).unwrap_or_default();
            format!("init=ridgebench{cpus} -- {}", program_args(opts, &boot.figures))
        }
        RidgebackProgram::R2bench(files) => match boot.cpus_option {
            Some(cpus) => format!("{cpus} {}", files.kernel_option()),
            None => files.kernel_option().to_string(),
        },
        RidgebackProgram::Dbench(mode) => match boot.cpus_option {
            Some(cpus) => format!("{cpus} {}", mode.kernel_option()),
            None => mode.kernel_option(),
        },
        RidgebackProgram::Pbench(design) => match boot.cpus_option {
            Some(cpus) => format!("{cpus} pipe={design}"),
            None => format!("pipe={design}"),
        },
        // B measures seed 004's buffer count: every byte of file data the
        // job reads must pass through the `nbuf` buffers, so the reader's
        // 64 KiB read windows (`ext2.readwin`, a cache outside `nbuf`: with
        // them one buffer read each source block once instead of once per
        // 512-byte half) are off in these boots.
        RidgebackProgram::Bbench(nbuf, _) => match boot.cpus_option {
            Some(cpus) => format!("{cpus} nbuf={nbuf} ext2.readwin=off"),
            None => format!("nbuf={nbuf} ext2.readwin=off"),
        },
        RidgebackProgram::R2Disk if !opts.ext2_journal => match boot.cpus_option {
            Some(cpus) => format!("{cpus} ext2.journal=off"),
            None => "ext2.journal=off".to_string(),
        },
        RidgebackProgram::R2Disk | RidgebackProgram::LinuxBin => {
            boot.cpus_option.unwrap_or_default().to_string()
        }
        RidgebackProgram::Nbench(mode) => match boot.cpus_option {
            Some(cpus) => format!("{cpus} net={mode}"),
            None => format!("net={mode}"),
        },
    }
}

/// The batch script of an `r2bench`, `dbench` or `pbench` boot: one command line, run by the
/// shell; its exit status is the session's, and init's power-off status.
fn batch_script(boot: &RidgebackBootPlan, opts: &BenchOptions) -> String {
    let suffix = match boot.program {
        RidgebackProgram::R2bench(files) if !files.suffix().is_empty() => {
            format!(" --suffix {}", files.suffix())
        }
        RidgebackProgram::Pbench(design) => format!(" --design {design}"),
        RidgebackProgram::Bbench(nbuf, bench::b::Disk::Plain) => format!(" --nbuf {nbuf}"),
        RidgebackProgram::Bbench(nbuf, disk) => format!(" --nbuf {nbuf} --disk {}", disk.name()),
        RidgebackProgram::Nbench(mode) => format!(" --mode {mode}"),
        RidgebackProgram::R2Disk => {
            // Two runs of r2bench: the rows, then the rows with fsync.
            let dir = format!("{}/r2", bench::r2::DISK_DIR);
            return format!(
                "/bin/r2bench --dir {dir} --suffix {} {}\n/bin/r2bench --dir {dir} --suffix {} --fsync {}\n",
                bench::r2::DISK_SUFFIX,
                program_args(opts, &boot.figures),
                bench::r2::FSYNC_SUFFIX,
                program_args(opts, &bench::r2::FSYNC_FIGURES),
            );
        }
        _ => String::new(),
    };
    format!("/bin/{}{suffix} {}\n", boot.program.name(), program_args(opts, &boot.figures))
}

/// Size of the ext2 images of B and R2 on disk: room for R2's 8 MiB file,
/// its copy and the `creat` row's names, and B's 200 KiB of sources.
const EXT2_DISK_BYTES: u64 = 64 << 20;

/// The tree the ext2 images are made from (`mke2fs -d`): B's sources and
/// eviction file under `b/`, an empty `r2/` for the R2 rows.
fn write_ext2_tree(dir: &Path) -> Result<()> {
    let b_dir = dir.join(bench::b::TREE_DIR);
    for sub in [b_dir.clone(), dir.join("r2")] {
        fs::create_dir_all(&sub).map_err(|e| format!("cannot create {}: {e}", sub.display()))?;
    }
    let write = |path: PathBuf, bytes: Vec<u8>| {
        fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    for (index, (name, _)) in bench::b::SOURCES.iter().enumerate() {
        write(b_dir.join(name), bench::b::source_file(index))?;
    }
    write(b_dir.join(bench::b::EVICT_NAME), (0..bench::b::EVICT_BYTES).map(bench::b::evict_byte).collect())
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 } as u32;
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// `2025-01-02T03:04:05Z` for a time in seconds since the epoch.
fn iso_date(unix_s: u64) -> String {
    let (year, month, day) = civil_from_days((unix_s / 86_400) as i64);
    let second_of_day = unix_s % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

/// The host's CPU model from `/proc/cpuinfo`.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, model)| model.trim().to_string())
}

/// A command's first line of output, or `unknown`.
fn first_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .current_dir(tools::workspace_root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

pub fn main(args: &[String]) -> ExitCode {
    let opts = match parse_args(args) {
        Ok(opts) => opts,
        Err(message) if message == USAGE => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("xtask: bench: {message}");
            return ExitCode::from(2);
        }
    };
    let result = match (&opts.compare, &opts.chart) {
        (Some((a, b)), _) => compare_command(a, b),
        (None, Some(run)) => chart_command(run),
        (None, None) => run_suite(&opts),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("xtask: bench: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn compare_command(a: &Path, b: &Path) -> Result<ExitCode> {
    let (old, new) = (results::Results::load(a)?, results::Results::load(b)?);
    print!("{}", report::compare(&old, &new, &a.display().to_string(), &b.display().to_string()));
    Ok(ExitCode::SUCCESS)
}

fn chart_command(run: &Path) -> Result<ExitCode> {
    let results = Results::load(run)?;
    let svg_path = run.with_extension("svg");
    fs::write(&svg_path, svg::chart(&results))
        .map_err(|e| format!("cannot write {}: {e}", svg_path.display()))?;
    println!("chart: {}", svg_path.display());
    Ok(ExitCode::SUCCESS)
}

/// The Linux half, made ready once for all runs.
struct LinuxSide {
    guest: linux_guest::LinuxGuest,
    program: PathBuf,
}

fn run_suite(opts: &BenchOptions) -> Result<ExitCode> {
    let results = measure(opts)?;
    Ok(if results.problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `cargo xtask test`'s benchmark step: `bench --quick` on both systems,
/// judged on behaviour only (every figure measured, every boot clean),
/// never on a figure's value. Returns the problems.
pub fn smoke(accel: AccelChoice) -> std::result::Result<(), Vec<String>> {
    let quick = parse_args(&["--quick".to_string()]).expect("--quick parses");
    let opts = BenchOptions { accel, is_smoke: true, ..quick };
    match measure(&opts) {
        Ok(results) if results.problems.is_empty() => Ok(()),
        Ok(results) => Err(results.problems),
        Err(e) => Err(vec![e]),
    }
}

/// Runs the suite, writes its files and prints its report.
fn measure(opts: &BenchOptions) -> Result<Results> {
    let started = Instant::now();
    qemu::ensure_qemu()?;
    let workspace = Workspace::load()?;
    let built = image::build(&workspace, ImageKind::Bench)?;
    let plan = plan(&opts.groups, opts.smp);
    for boot_plan in plan.ridgeback.iter().filter(|b| b.program.is_in_image()) {
        let name = boot_plan.program.name();
        if !built.has_program(name) {
            return Err(format!("the bench image has no `{name}` program (bench/ridgeback/)"));
        }
    }
    let now_s = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let date = iso_date(now_s);
    let stamp = if opts.is_smoke { "smoke".to_string() } else { date.replace(':', "-") };
    let out_dir = workspace.target_dir.join("bench");
    let log_dir = out_dir.join("logs").join(&stamp);
    // Every boot of the run uses these copies, so a build made meanwhile
    // (by another command in the same checkout) cannot mix kernels.
    let built = snapshot(&built, &log_dir.join("image"))?;
    let accel = qemu::choose_and_report_accel(opts.accel);
    if opts.is_icount && accel != Accel::Tcg {
        return Err("--icount needs TCG (QEMU's icount does not work with KVM); add --accel tcg".to_string());
    }
    let extra_args: Vec<String> = if opts.is_icount { ICOUNT.map(String::from).to_vec() } else { Vec::new() };
    // One disk image per run, kept with its logs, attached to every boot of
    // both systems (the machine has it whether or not a figure uses it).
    let disk = log_dir.join("disk.img");
    qemu::ensure_disk_image(&disk, qemu::SCRATCH_DISK_BYTES)?;
    let config_for = |cmdline: String, extra_modules: &[PathBuf], disk: &Path| QemuConfig {
        kernel: built.kernel.clone(),
        modules: built.modules.iter().chain(extra_modules).cloned().collect(),
        cmdline,
        smp: opts.smp,
        mem: opts.mem.clone(),
        accel,
        serial: SerialMode::Captured,
        is_gdb: false,
        disk: Some(disk.to_path_buf()),
        // Benchmark N (issue 13's second half) adds the card to both systems.
        net: qemu::NetChoice::None,
    };
    let machine_for = |disk: &Path| -> Result<Vec<String>> {
        let mut probe = config_for(String::new(), &[], disk).to_args()?;
        probe.extend(extra_args.iter().cloned());
        Ok(boot::machine_args(&probe))
    };
    let machine = machine_for(&disk)?;
    // B and R2 on disk: every boot of theirs, on both systems, gets a fresh
    // ext2 image made from the same tree (one path per system, remade
    // before each boot; the last one of each is left with the logs).
    let needs_ext2 =
        !plan.linux_ext2.is_empty() || plan.ridgeback.iter().any(|b| b.program.needs_ext2_disk());
    let ext2_tree = log_dir.join("ext2-tree");
    let (ext2_ridgeback, ext2_linux) = (log_dir.join("ext2-ridgeback.img"), log_dir.join("ext2-linux.img"));
    if needs_ext2 {
        write_ext2_tree(&ext2_tree)?;
    }
    // Every benchmark volume is written whole, Ridgeback's and Linux's
    // alike (`ext2::make_whole_image`): a sparse one charges the host's
    // block allocation to whichever system first writes a hole.
    let fresh_ext2 = |image: &Path| crate::ext2::make_whole_image(image, EXT2_DISK_BYTES, Some(&ext2_tree));
    let machine_ext2 = machine_for(&ext2_linux)?;

    // The Linux program, for the Linux guest and for the third column.
    let needs_linux_program =
        !opts.is_ridgeback_only || plan.ridgeback.iter().any(|b| b.program == RidgebackProgram::LinuxBin);
    let linux_program = if needs_linux_program {
        eprintln!("xtask: bench: building the Linux benchmark program");
        Some(linux_guest::build_bench_for_linux(&workspace.root, &workspace.target_dir)?)
    } else {
        None
    };
    let linux = if opts.is_ridgeback_only {
        None
    } else {
        let linux_started = Instant::now();
        eprintln!("xtask: bench: preparing the Linux guest");
        let program = linux_program.clone().ok_or("the Linux program was not built")?;
        let guest = linux_guest::prepare(&workspace.target_dir.join("linux-guest"))?;
        eprintln!(
            "xtask: bench: Linux guest {} ready in {:.1} s",
            guest.kernel_release,
            linux_started.elapsed().as_secs_f64()
        );
        Some(LinuxSide { guest, program })
    };

    let meta = Meta {
        date: date.clone(),
        git_revision: first_line("git", &["rev-parse", "HEAD"]),
        // `status --porcelain` prints nothing for a clean tree (and
        // first_line then says "unknown", as it does when git fails).
        is_git_dirty: first_line("git", &["status", "--porcelain"]) != "unknown",
        host_cpu: fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| cpu_model(&t)).unwrap_or_default(),
        host_cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        qemu_version: first_line(qemu::QEMU_BINARY, &["--version"]),
        accel: accel.name().to_string(),
        is_icount: opts.is_icount,
        smp: opts.smp,
        mem: opts.mem.clone(),
        machine_args: machine.clone(),
        is_quick: opts.is_quick,
        runs: opts.runs,
        samples: opts.samples,
        sample_ms: opts.sample_ms,
        groups: opts.groups.iter().map(|g| g.name().to_string()).collect(),
        is_ridgeback_only: opts.is_ridgeback_only,
        linux_guest: Vec::new(),
    };

    // Each boot's own boot modules: the batch script of a UNIX program's
    // boot, in a directory of its own (the kernel names a module by its
    // file name, and init looks for `etc.batch`).
    let mut boot_modules: Vec<Vec<PathBuf>> = Vec::new();
    for boot_plan in &plan.ridgeback {
        boot_modules.push(match boot_plan.program.is_unix() {
            false => Vec::new(),
            true => {
                let dir = log_dir.join(format!("batch-{}", boot_plan.label));
                fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                let script = dir.join(BATCH_MODULE);
                fs::write(&script, batch_script(boot_plan, opts))
                    .map_err(|e| format!("cannot write {}: {e}", script.display()))?;
                let mut modules = vec![script];
                if boot_plan.program == RidgebackProgram::LinuxBin {
                    // The very file the Linux guest runs, under the name
                    // the kernel gives the boot module (its file name).
                    let from = linux_program.as_ref().ok_or("the Linux program was not built")?;
                    let to = dir.join(LINUXBIN_PROGRAM);
                    fs::copy(from, &to)
                        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))?;
                    modules.push(to);
                }
                modules
            }
        });
    }
    let timeout = Duration::from_secs(opts.timeout_s);
    let mut results = Results::new(meta);
    eprintln!("xtask: bench: machine: {}", machine.join(" "));
    for run in 1..=opts.runs {
        // Alternate which system goes first, so that a drift of the host
        // over the run does not favour one of them.
        let linux_first = run % 2 == 0;
        for system in
            if linux_first { [System::Linux, System::Ridgeback] } else { [System::Ridgeback, System::Linux] }
        {
            match (system, &linux) {
                (System::Ridgeback, _) => {
                    for (boot_plan, modules) in plan.ridgeback.iter().zip(&boot_modules) {
                        let is_ext2 = boot_plan.program.needs_ext2_disk();
                        // R2 on disk measures Ridgeback on a volume with a
                        // journal (ext3, used unless `--ext2-journal off`);
                        // B keeps ext2, and Linux's volume is ext2 for both
                        // (docs/benchmarks.md).
                        let made = if !is_ext2 {
                            Ok(())
                        } else if boot_plan.program == RidgebackProgram::R2Disk {
                            crate::ext2::make_image_with_journal(
                                &ext2_ridgeback,
                                EXT2_DISK_BYTES,
                                Some(&ext2_tree),
                            )
                        } else {
                            fresh_ext2(&ext2_ridgeback)
                        };
                        if let Err(e) = made {
                            results.problems.push(format!("run {run} ridgeback {}: {e}", boot_plan.label));
                            continue;
                        }
                        let boot_disk = if is_ext2 { &ext2_ridgeback } else { &disk };
                        let config = config_for(
                            with_extra_options(opts, ridgeback_cmdline(boot_plan, opts)),
                            modules,
                            boot_disk,
                        );
                        // The rk disk: the same image behind nbdkit, for
                        // this boot only (dropped, it ends).
                        let mut boot_args = extra_args.clone();
                        let rk_server = match boot_plan.program {
                            RidgebackProgram::Bbench(_, bench::b::Disk::Rk) => {
                                let log = log_dir.join(format!("run{run}-nbdkit-{}.log", boot_plan.label));
                                match rk::Server::start(&ext2_ridgeback, &log).and_then(|s| {
                                    boot_args.extend(s.qemu_args()?);
                                    Ok(s)
                                }) {
                                    Ok(server) => Some(server),
                                    Err(e) => {
                                        results
                                            .problems
                                            .push(format!("run {run} ridgeback {}: {e}", boot_plan.label));
                                        continue;
                                    }
                                }
                            }
                            _ => None,
                        };
                        run_ridgeback(&mut results, run, boot_plan, &config, &boot_args, timeout, &log_dir);
                        drop(rk_server);
                        if is_ext2 {
                            // What Ridgeback wrote must be a clean ext2
                            // volume (init syncs before powering off).
                            if let Err(e) = crate::ext2::check(&ext2_ridgeback) {
                                results
                                    .problems
                                    .push(format!("run {run} ridgeback {}: {e}", boot_plan.label));
                            }
                        }
                    }
                }
                (System::Linux, Some(side)) => {
                    if !plan.linux.is_empty() {
                        let args = program_args(opts, &plan.linux);
                        run_linux(&mut results, run, side, &machine, "", &args, timeout, &log_dir);
                    }
                    // The plain disk's figures in one boot; B on the rk
                    // disk (`brk`) in a boot of its own, its image behind
                    // the same nbdkit delay as Ridgeback's rk boots.
                    let rk_figure = bench::b::Disk::Rk.linux_figure();
                    let (rk_figures, plain_figures): (Vec<&str>, Vec<&str>) =
                        plan.linux_ext2.iter().partition(|f| **f == rk_figure);
                    for (figures, is_rk) in [(plain_figures, false), (rk_figures, true)] {
                        if figures.is_empty() {
                            continue;
                        }
                        let label = if is_rk { "ext2-rk" } else { "ext2" };
                        if let Err(e) = fresh_ext2(&ext2_linux) {
                            results.problems.push(format!("run {run} linux {label}: {e}"));
                            continue;
                        }
                        let mut machine = machine_ext2.clone();
                        let rk_server = if is_rk {
                            let log = log_dir.join(format!("run{run}-nbdkit-linux.log"));
                            match rk::Server::start(&ext2_linux, &log).and_then(|s| {
                                machine.extend(s.qemu_args()?);
                                Ok(s)
                            }) {
                                Ok(server) => Some(server),
                                Err(e) => {
                                    results.problems.push(format!("run {run} linux {label}: {e}"));
                                    continue;
                                }
                            }
                        } else {
                            None
                        };
                        let args = program_args(opts, &figures);
                        run_linux(&mut results, run, side, &machine, label, &args, timeout, &log_dir);
                        drop(rk_server);
                    }
                }
                (System::Linux, None) => {}
            }
        }
    }
    let missing = results.missing_figures();
    results.problems.extend(missing);

    let json_path = out_dir.join(format!("{stamp}.json"));
    let svg_path = out_dir.join(format!("{stamp}.svg"));
    let json = serde_json::to_string_pretty(&results.to_json()).map_err(|e| e.to_string())? + "\n";
    let chart = svg::chart(&results);
    let mut files = vec![(json_path.clone(), &json), (svg_path.clone(), &chart)];
    if !opts.is_smoke {
        files.extend([(out_dir.join("latest.json"), &json), (out_dir.join("latest.svg"), &chart)]);
    }
    for (path, text) in files {
        fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }

    println!();
    print!("{}", report::full(&results));
    println!();
    println!("results: {}", json_path.display());
    println!("chart:   {}", svg_path.display());
    println!("logs:    {}", log_dir.display());
    println!("time:    {:.0} s", started.elapsed().as_secs_f64());
    if !results.problems.is_empty() {
        println!("\nproblems:");
        for problem in merge_runs(&results.problems) {
            println!("  - {problem}");
        }
    }
    Ok(results)
}

/// The problems as printed: one line for the same problem in several
/// runs (`runs 1, 2, 3 ridgeback d-pddriver: ...`), in first-seen order.
/// The JSON file keeps every one.
fn merge_runs(problems: &[String]) -> Vec<String> {
    let mut merged: Vec<(Vec<&str>, &str)> = Vec::new();
    for problem in problems {
        let Some((run, rest)) = problem.strip_prefix("run ").and_then(|p| p.split_once(' ')) else {
            merged.push((Vec::new(), problem));
            continue;
        };
        match merged.iter_mut().find(|(runs, text)| !runs.is_empty() && *text == rest) {
            Some((runs, _)) => runs.push(run),
            None => merged.push((vec![run], rest)),
        }
    }
    merged
        .into_iter()
        .map(|(runs, text)| match runs.len() {
            0 => text.to_string(),
            1 => format!("run {} {text}", runs[0]),
            _ => format!("runs {} {text}", runs.join(", ")),
        })
        .collect()
}

/// Copies the kernel and the programs into `dir` (same file names: the
/// kernel names modules by their file name).
fn snapshot(built: &image::BuiltImage, dir: &Path) -> Result<image::BuiltImage> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let copy = |from: &PathBuf| -> Result<PathBuf> {
        let to = dir.join(from.file_name().ok_or_else(|| format!("{} has no file name", from.display()))?);
        fs::copy(from, &to)
            .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))?;
        Ok(to)
    };
    Ok(image::BuiltImage {
        kernel: copy(&built.kernel)?,
        modules: built.modules.iter().map(copy).collect::<Result<_>>()?,
    })
}

/// The Linux program's name in Ridgeback's `/bin`.
const LINUXBIN_PROGRAM: &str = "linuxbench";

/// `-icount shift=0`.
const ICOUNT: [&str; 2] = boot::ICOUNT_ARGS;

/// Adds a boot's parsed output to the results; returns the figure count.
fn take_output(results: &mut Results, system: System, what: &str, serial: &str) -> usize {
    take_parsed(results, system, what, line::parse_output(serial))
}

/// The Linux program's output from a Ridgeback boot: each figure named
/// with [`catalogue::LINUXBIN_SUFFIX`], and only those a row shows (the
/// others, the pinned ping-pong on several CPUs, are not the experiment
/// their name says: Ridgeback does not pin).
fn take_linuxbin_output(results: &mut Results, what: &str, serial: &str, smp: u32) -> usize {
    let mut output = line::parse_output(serial);
    let keep = catalogue::linuxbin_figures(smp);
    let renamed = |name: &str| format!("{name}{}", catalogue::LINUXBIN_SUFFIX);
    for figure in &mut output.figures {
        figure.name = renamed(&figure.name);
    }
    output.figures.retain(|f| keep.contains(&f.name));
    for (figure, _) in &mut output.failures {
        *figure = renamed(figure);
    }
    take_parsed(results, System::Ridgeback, what, output)
}

fn take_parsed(results: &mut Results, system: System, what: &str, output: line::Output) -> usize {
    for (figure, reason) in &output.failures {
        results.problems.push(format!("{what}: figure {figure} failed: {reason}"));
    }
    for malformed in &output.malformed {
        results.problems.push(format!("{what}: malformed result line: {malformed}"));
    }
    for figure in &output.figures {
        if !figure.agrees_with_reported() {
            results.problems.push(format!(
                "{what}: {} printed samples {:?} but its ticks give {:?}",
                figure.name,
                figure.reported_samples,
                figure.values()
            ));
        }
    }
    let count = output.figures.len();
    results.add_figures(system, output.figures);
    count
}

/// The guest's lines about itself: its kernel and its mitigations.
fn guest_description(serial: &str) -> Vec<String> {
    serial
        .lines()
        .filter(|l| l.starts_with("GUEST kernel ") || l.starts_with("GUEST vulnerability "))
        .map(|l| l.trim_start_matches("GUEST ").to_string())
        .collect()
}

fn write_log(log_dir: &Path, name: &str, command_line: &str, serial: &str) {
    let path = log_dir.join(name);
    let _ = fs::write(&path, format!("$ {command_line}\n{serial}"));
}

fn run_ridgeback(
    results: &mut Results,
    run: u32,
    boot_plan: &RidgebackBootPlan,
    config: &QemuConfig,
    extra_args: &[String],
    timeout: Duration,
    log_dir: &Path,
) {
    let what = format!("run {run} ridgeback {}", boot_plan.label);
    eprintln!("xtask: bench: {what}: {} {}", boot_plan.program.name(), boot_plan.figures.join(" "));
    let booted = match boot::boot_ridgeback(config, extra_args, timeout) {
        Ok(booted) => booted,
        Err(e) => {
            results.problems.push(format!("{what}: {e}"));
            return;
        }
    };
    let log_name = format!("run{run}-ridgeback-{}.log", boot_plan.label.replace('=', ""));
    write_log(log_dir, &log_name, &booted.command_line, &booted.serial_output);
    let figures = if boot_plan.program == RidgebackProgram::LinuxBin {
        take_linuxbin_output(results, &what, &booted.serial_output, results.meta.smp)
    } else {
        take_output(results, System::Ridgeback, &what, &booted.serial_output)
    };
    let is_ok = booted.exit == Some(QemuExit::Success);
    if !is_ok {
        let why = match booted.exit {
            Some(exit) => exit.to_string(),
            None => format!("timed out after {} s; QEMU was killed", timeout.as_secs()),
        };
        results.problems.push(format!("{what}: {why} (log: {})", log_dir.join(&log_name).display()));
    }
    eprintln!("xtask: bench: {what}: {figures} figures in {:.1} s", booted.elapsed.as_secs_f64());
    results.boots.push(Boot {
        system: System::Ridgeback,
        run,
        label: boot_plan.label.clone(),
        command_line: booted.command_line,
        elapsed_s: booted.elapsed.as_secs_f64(),
        figures,
        is_ok,
    });
}

/// One Linux boot; `disk_label` names a boot with another disk than the
/// run's scratch disk (`ext2`), and goes into its log's name and label.
#[allow(clippy::too_many_arguments)]
fn run_linux(
    results: &mut Results,
    run: u32,
    side: &LinuxSide,
    machine: &[String],
    disk_label: &str,
    args: &str,
    timeout: Duration,
    log_dir: &Path,
) {
    let dash = if disk_label.is_empty() { String::new() } else { format!("-{disk_label}") };
    let what = if disk_label.is_empty() {
        format!("run {run} linux")
    } else {
        format!("run {run} linux {disk_label}")
    };
    eprintln!("xtask: bench: {what}: bench {args}");
    let command_line = format!(
        "{} {} -kernel {} -initrd <initramfs with /bench/bench> (linux_guest.rs); /bench/bench {args}",
        qemu::QEMU_BINARY,
        machine.join(" "),
        side.guest.kernel_image.display()
    );
    let outcome = side.guest.run(machine, &[(side.program.clone(), args.to_string())], timeout);
    let log_name = format!("run{run}-linux{dash}.log");
    let (figures, is_ok, elapsed_s) = match outcome {
        Ok(guest_run) => {
            write_log(log_dir, &log_name, &command_line, &guest_run.serial_output);
            if results.meta.linux_guest.is_empty() {
                results.meta.linux_guest = guest_description(&guest_run.serial_output);
            }
            let figures = take_output(results, System::Linux, &what, &guest_run.serial_output);
            let is_ok = guest_run.is_success();
            if !is_ok {
                results.problems.push(format!(
                    "{what}: the guest did not finish cleanly (exits: {:?}; log: {})",
                    guest_run.exits,
                    log_dir.join(&log_name).display()
                ));
            }
            if let Some(boot_s) = guest_run.boot_to_first_program {
                eprintln!("xtask: bench: {what}: booted in {:.1} s", boot_s.as_secs_f64());
            }
            (figures, is_ok, guest_run.elapsed.as_secs_f64())
        }
        Err(e) => {
            write_log(log_dir, &log_name, &command_line, &e);
            results.problems.push(format!("{what}: {}", e.lines().next().unwrap_or("failed")));
            (0, false, 0.0)
        }
    };
    eprintln!("xtask: bench: {what}: {figures} figures in {elapsed_s:.1} s");
    results.boots.push(Boot {
        system: System::Linux,
        run,
        label: format!("smp{}{dash}", results.meta.smp),
        command_line,
        elapsed_s,
        figures,
        is_ok,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &str) -> Result<BenchOptions> {
        parse_args(&words.split_whitespace().map(str::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn defaults_and_quick() {
        let opts = parse("").unwrap();
        assert_eq!((opts.runs, opts.samples, opts.sample_ms, opts.smp), (3, 7, 50, 2));
        assert_eq!(opts.groups, DEFAULT_GROUPS);
        assert!(!parse("--quick").unwrap().groups.contains(&Group::D), "the smoke test leaves D out");
        let quick = parse("--quick").unwrap();
        assert_eq!((quick.runs, quick.samples, quick.sample_ms, quick.timeout_s), (1, 3, 10, 120));
        // Explicit values win over --quick's, whatever the order.
        let quick = parse("--samples 5 --quick --runs=2").unwrap();
        assert_eq!((quick.runs, quick.samples), (2, 5));
    }

    #[test]
    fn options() {
        assert_eq!(parse("--only r2").unwrap().groups, [Group::R2]);
        let opts =
            parse("--only getpid,r1 --smp 4 --mem 1G --accel tcg --ridgeback-only --timeout-s 9").unwrap();
        assert_eq!(opts.groups, [Group::Getpid, Group::Call, Group::Send, Group::Data]);
        assert_eq!((opts.smp, opts.mem.as_str(), opts.accel), (4, "1G", AccelChoice::Tcg));
        assert!(opts.is_ridgeback_only);
        assert_eq!(opts.timeout_s, 9);
        let icount = parse("--icount").unwrap();
        assert!(icount.is_icount && !icount.is_ridgeback_only && icount.smp == 1);
        let icount = parse("--smp 2 --icount").unwrap();
        assert!(icount.is_ridgeback_only && icount.smp == 2, "Linux cannot boot 2 vCPUs under icount");
        assert_eq!(parse("--chart r.json").unwrap().chart, Some(PathBuf::from("r.json")));
        let compare = parse("--compare a.json b.json").unwrap();
        assert_eq!(compare.compare, Some((PathBuf::from("a.json"), PathBuf::from("b.json"))));
        for bad in ["--compare a.json", "--runs 0", "--samples 16", "--only fork", "--smp", "--frob", "stray"]
        {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse("--help").unwrap_err(), USAGE);
    }

    #[test]
    fn plan_splits_one_cpu_figures_into_their_own_boot() {
        let plan = plan(&DEFAULT_GROUPS, 2);
        assert_eq!(plan.ridgeback.len(), 5);
        assert_eq!(plan.ridgeback[0].label, "smp2");
        assert_eq!(plan.ridgeback[0].figures, ["getpid", "copy", "call", "send", "data"]);
        assert_eq!(plan.ridgeback[1].cpus_option, Some("cpus=1"));
        assert_eq!(plan.ridgeback[1].figures, ["yield", "call", "send", "data"]);
        assert_eq!(plan.ridgeback[2].program, RidgebackProgram::R2bench(Files::Shared));
        assert_eq!((plan.ridgeback[2].cpus_option, &plan.ridgeback[2].figures[..]), (None, &["all"][..]));
        assert_eq!(plan.ridgeback[3].program, RidgebackProgram::R2bench(Files::PerFile));
        assert_eq!(plan.ridgeback[3].figures, ["write", "read", "copy", "creat"]);
        assert!(plan.ridgeback[..2].iter().all(|b| b.program == RidgebackProgram::Ridgebench));
        // The Linux program on Ridgeback: a UNIX boot, every CPU online.
        let linuxbin = &plan.ridgeback[4];
        assert_eq!((linuxbin.label.as_str(), linuxbin.program), ("linuxbin", RidgebackProgram::LinuxBin));
        assert_eq!((linuxbin.cpus_option, &linuxbin.figures[..]), (None, &["getpid", "pipe", "r2"][..]));
        assert!(linuxbin.program.is_unix() && !linuxbin.program.is_in_image());
        let opts = BenchOptions { samples: 3, sample_ms: 10, ..BenchOptions::default() };
        assert_eq!(
            batch_script(linuxbin, &opts),
            "/bin/linuxbench --samples 3 --sample-ms 10 getpid pipe r2\n"
        );
        assert_eq!(ridgeback_cmdline(linuxbin, &opts), "");
        assert_eq!(plan.linux, ["getpid", "copy", "yield", "futex", "pipe", "unix", "pipedata", "r2"]);

        let single = super::plan(&DEFAULT_GROUPS, 1);
        assert_eq!(single.ridgeback.len(), 4, "one CPU: one ridgebench boot, three UNIX boots");
        assert_eq!(single.ridgeback[0].figures.len(), 6);

        let r2 = super::plan(&[Group::R2], 2);
        assert_eq!(r2.ridgeback.len(), 3);
        assert_eq!(r2.ridgeback[2].figures, ["r2"]);
        assert_eq!(
            (r2.ridgeback[0].label.as_str(), r2.ridgeback[0].program),
            ("unix", RidgebackProgram::R2bench(Files::Shared))
        );
        assert_eq!(r2.ridgeback[1].label, "unix-perfile");
        assert_eq!(r2.linux, ["r2"]);

        let getpid = super::plan(&[Group::Getpid], 2);
        assert_eq!(getpid.ridgeback.len(), 2, "ridgebench's boot and the Linux program's");
        assert_eq!(getpid.ridgeback[1].figures, ["getpid"]);
        assert_eq!(getpid.linux, ["getpid"]);
        let switch = super::plan(&[Group::Switch], 2);
        assert_eq!(switch.ridgeback.len(), 1);
        assert_eq!(switch.ridgeback[0].label, "cpus=1");
    }

    #[test]
    fn ridgeback_command_line_passes_the_arguments_after_the_lone_dashes() {
        let opts = BenchOptions { samples: 3, sample_ms: 10, ..BenchOptions::default() };
        let boot = RidgebackBootPlan {
            label: "cpus=1".into(),
            cpus_option: Some("cpus=1"),
            program: RidgebackProgram::Ridgebench,
            figures: vec!["yield", "call"],
        };
        assert_eq!(
            ridgeback_cmdline(&boot, &opts),
            "init=ridgebench cpus=1 -- --samples 3 --sample-ms 10 yield call"
        );
    }

    #[test]
    fn r2bench_runs_from_a_batch_script_under_the_normal_init() {
        let opts = BenchOptions { samples: 3, sample_ms: 10, ..BenchOptions::default() };
        let shared = RidgebackBootPlan {
            label: "unix".into(),
            cpus_option: None,
            program: RidgebackProgram::R2bench(Files::Shared),
            figures: vec!["all"],
        };
        assert_eq!(ridgeback_cmdline(&shared, &opts), "monitor.files=shared", "no init=: the normal init");
        assert_eq!(batch_script(&shared, &opts), "/bin/r2bench --samples 3 --sample-ms 10 all\n");
        let per_file = RidgebackBootPlan {
            label: "unix-perfile".into(),
            cpus_option: Some("cpus=1"),
            program: RidgebackProgram::R2bench(Files::PerFile),
            figures: vec!["write", "creat"],
        };
        assert_eq!(ridgeback_cmdline(&per_file, &opts), "cpus=1 monitor.files=per-file");
        assert_eq!(
            batch_script(&per_file, &opts),
            "/bin/r2bench --suffix _perfile --samples 3 --sample-ms 10 write creat\n"
        );
    }

    #[test]
    fn d_boots_ridgeback_once_per_ramdisk_mode_and_runs_dbench_from_a_batch() {
        let opts = BenchOptions { samples: 3, sample_ms: 10, ..BenchOptions::default() };
        let plan = super::plan(&[Group::D], 2);
        assert_eq!(plan.linux, ["d"]);
        let labels: Vec<&str> = plan.ridgeback.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(labels, ["d-ramdriver", "d-pddriver"]);
        let [ramdriver, pddriver] = &plan.ridgeback[..] else { panic!("two boots") };
        assert_eq!(ramdriver.program, RidgebackProgram::Dbench(RamdiskMode::RamDriver));
        assert_eq!(ridgeback_cmdline(ramdriver, &opts), "ramdisk.mode=ramdriver");
        assert_eq!(
            batch_script(ramdriver, &opts),
            "/bin/dbench --samples 3 --sample-ms 10 virtio ramdriver\n"
        );
        assert_eq!(ridgeback_cmdline(pddriver, &opts), "ramdisk.mode=pddriver");
        assert_eq!(batch_script(pddriver, &opts), "/bin/dbench --samples 3 --sample-ms 10 pddriver\n");
        assert!(plan.ridgeback.iter().all(|b| b.program.is_unix() && b.program.name() == "dbench"));
        // With R2 as well: R2's two boots, then D's.
        let both = super::plan(&[Group::R2, Group::D], 2);
        assert_eq!(both.ridgeback.len(), 5, "R2's two boots, D's, the Linux program's");
        assert_eq!(both.linux, ["r2", "d"]);
        assert_eq!(parse("--only d").unwrap().groups, [Group::D]);
    }

    #[test]
    fn p_boots_ridgeback_per_design_and_cpu_count() {
        let opts = BenchOptions { samples: 3, sample_ms: 10, ..BenchOptions::default() };
        let plan = super::plan(&[Group::P], 2);
        assert_eq!(plan.linux, ["p"]);
        let labels: Vec<&str> = plan.ridgeback.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(
            labels,
            ["p-small-smp2", "p-small-cpus1", "p-big-smp2", "p-big-cpus1", "p-loan-smp2", "p-loan-cpus1"]
        );
        let [small, small_one, .., loan, loan_one] = &plan.ridgeback[..] else { panic!("six boots") };
        assert_eq!(ridgeback_cmdline(small, &opts), "pipe=small");
        assert_eq!(ridgeback_cmdline(small_one, &opts), "cpus=1 pipe=small");
        assert_eq!(
            batch_script(small, &opts),
            "/bin/pbench --design small --samples 3 --sample-ms 10 pipe\n"
        );
        assert_eq!(
            batch_script(loan, &opts),
            "/bin/pbench --design loan --samples 3 --sample-ms 10 pipe overwrite copy\n"
        );
        assert_eq!(loan_one.figures, ["pipe", "overwrite"], "the copy limit runs once");
        assert!(plan.ridgeback.iter().all(|b| b.program.is_unix() && b.program.name() == "pbench"));
        let single = super::plan(&[Group::P], 1);
        assert_eq!(single.ridgeback.len(), 3, "one CPU: one boot per design");
        assert_eq!(single.ridgeback[2].figures, ["pipe", "overwrite", "copy"]);
        assert!(!parse("--quick").unwrap().groups.contains(&Group::P), "the smoke test leaves P out");
    }

    #[test]
    fn b_boots_once_per_nbuf_and_disk_rows_get_their_own_linux_boot() {
        let opts = BenchOptions { samples: 3, sample_ms: 10, ..BenchOptions::default() };
        let plan = super::plan(&[Group::B, Group::R2Disk], 2);
        assert!(plan.linux.is_empty());
        assert_eq!(plan.linux_ext2, ["b", "r2disk"]);
        let labels: Vec<&str> = plan.ridgeback.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "r2disk", "b-nbuf1", "b-nbuf2", "b-nbuf3", "b-nbuf4", "b-nbuf5", "b-nbuf6", "b-nbuf8",
                "b-nbuf12"
            ]
        );
        assert!(plan.ridgeback.iter().all(|b| b.program.is_unix() && b.program.needs_ext2_disk()));
        let nbuf3 = &plan.ridgeback[3];
        assert_eq!(ridgeback_cmdline(nbuf3, &opts), "nbuf=3 ext2.readwin=off");
        assert_eq!(batch_script(nbuf3, &opts), "/bin/bbench --nbuf 3 --samples 3 --sample-ms 10 b\n");
        let disk = &plan.ridgeback[0];
        assert_eq!(ridgeback_cmdline(disk, &opts), "");
        let off = BenchOptions { ext2_journal: false, ..opts.clone() };
        assert_eq!(ridgeback_cmdline(disk, &off), "ext2.journal=off");
        assert_eq!(ridgeback_cmdline(nbuf3, &off), "nbuf=3 ext2.readwin=off", "B is ext2: no journal");
        assert!(!parse_args(&["--ext2-journal".into(), "off".into()]).unwrap().ext2_journal);
        assert!(parse_args(&["--ext2-journal=maybe".into()]).is_err());
        let msix_off = parse_args(&["--cmdline".into(), " pci.msix=off ".into()]).unwrap();
        assert_eq!(with_extra_options(&msix_off, ridgeback_cmdline(disk, &msix_off)), "pci.msix=off");
        assert_eq!(with_extra_options(&msix_off, "init=x -- a".into()), "pci.msix=off init=x -- a");
        assert!(parse_args(&["--cmdline=a -- b".into()]).is_err());
        assert_eq!(
            batch_script(disk, &opts),
            "/bin/r2bench --dir /disk/r2 --suffix _disk --samples 3 --sample-ms 10 write read copy creat\n\
             /bin/r2bench --dir /disk/r2 --suffix _disk_fsync --fsync --samples 3 --sample-ms 10 write copy creat\n"
        );
        // Mixed with a group on the scratch disk: two Linux boots.
        let mixed = super::plan(&[Group::R2, Group::B], 2);
        assert_eq!((mixed.linux, mixed.linux_ext2), (vec!["r2"], vec!["b"]));
        assert!(!super::plan(&DEFAULT_GROUPS, 2).ridgeback.iter().any(|b| b.program.needs_ext2_disk()));
    }

    #[test]
    fn brk_boots_once_per_nbuf_on_the_rk_disk_and_linux_measures_it_too() {
        let opts = BenchOptions { samples: 3, sample_ms: 10, ..BenchOptions::default() };
        let plan = super::plan(&[Group::B, Group::BRk], 2);
        // Linux: `b` on the plain disk, `brk` in a boot on the rk disk.
        assert_eq!(plan.linux_ext2, ["b", "brk"]);
        let labels: Vec<&str> = plan.ridgeback.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(labels.len(), 16);
        assert_eq!((labels[7], labels[8], labels[15]), ("b-nbuf12", "brk-nbuf1", "brk-nbuf12"));
        let rk2 = &plan.ridgeback[9];
        assert_eq!(rk2.program, RidgebackProgram::Bbench(2, bench::b::Disk::Rk));
        assert!(rk2.program.needs_ext2_disk());
        assert_eq!(ridgeback_cmdline(rk2, &opts), "nbuf=2 ext2.readwin=off");
        assert_eq!(batch_script(rk2, &opts), "/bin/bbench --nbuf 2 --disk rk --samples 3 --sample-ms 10 b\n");
        assert_eq!(parse("--only brk").unwrap().groups, [Group::BRk]);
    }

    #[test]
    fn ext2_tree_holds_the_sources_and_the_eviction_file() {
        let dir = std::env::temp_dir().join(format!("xtask-b-tree-{}", std::process::id()));
        write_ext2_tree(&dir).unwrap();
        let u0 = fs::read(dir.join("b/u0.s")).unwrap();
        assert_eq!(u0, bench::b::source_file(0));
        assert_eq!(fs::metadata(dir.join("b/evict")).unwrap().len(), bench::b::EVICT_BYTES as u64);
        assert!(dir.join("r2").is_dir());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn problems_of_several_runs_print_once() {
        let problems: Vec<String> = [
            "run 1 ridgeback d-pddriver: figure d_pddriver_1job failed: open /dev/ram0: ENOENT",
            "run 1 linux: QEMU failed",
            "run 2 ridgeback d-pddriver: figure d_pddriver_1job failed: open /dev/ram0: ENOENT",
            "ridgeback figure x (row x) is missing",
            "run 3 ridgeback d-pddriver: figure d_pddriver_1job failed: open /dev/ram0: ENOENT",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            merge_runs(&problems),
            [
                "runs 1, 2, 3 ridgeback d-pddriver: figure d_pddriver_1job failed: open /dev/ram0: ENOENT",
                "run 1 linux: QEMU failed",
                "ridgeback figure x (row x) is missing",
            ]
        );
    }

    #[test]
    fn dates_and_cpu_model() {
        assert_eq!(iso_date(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_date(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso_date(1_735_787_045), "2025-01-02T03:04:05Z");
        assert_eq!(
            cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags: x\n"),
            Some("AMD EPYC 7B13".to_string())
        );
        assert_eq!(cpu_model("processor: 0\n"), None);
    }

    #[test]
    fn guest_description_keeps_kernel_and_mitigations() {
        let serial = "Linux version 6.1\nGUEST kernel 6.1.0 cpus 2 uptime_s 2.2\n\
                      GUEST vulnerability meltdown: Not affected\nGUEST ready\nBENCH {}\n";
        assert_eq!(
            guest_description(serial),
            ["kernel 6.1.0 cpus 2 uptime_s 2.2", "vulnerability meltdown: Not affected"]
        );
    }

    #[test]
    fn output_feeds_results_and_problems() {
        let mut results = Results::new(results::tests::meta());
        let serial = "BENCH {\"name\":\"getpid\",\"unit\":\"ns/op\",\"samples\":[800.0],\"iterations\":1000,\
                      \"tsc_hz\":1000000000,\"ticks\":[800000],\"bytes_per_op\":0,\"counters\":{}}\n\
                      BENCH {\"name\":\"copy_4KiB\",\"unit\":\"MB/s\",\"samples\":[1.0],\"iterations\":1000,\
                      \"tsc_hz\":1000000000,\"ticks\":[4096],\"bytes_per_op\":4096,\"counters\":{}}\n\
                      # FAILED yield: the peer did not run\n";
        assert_eq!(take_output(&mut results, System::Ridgeback, "run 1", serial), 2);
        assert_eq!(results.series.len(), 2);
        assert_eq!(results.problems.len(), 2, "{:?}", results.problems);
        assert!(results.problems[0].contains("figure yield failed: the peer did not run"));
        assert!(results.problems[1].contains("copy_4KiB printed samples"), "1 MB/s printed, 1e6 computed");
    }
}
