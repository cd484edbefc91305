//! `cargo xtask fuzz --minutes N [--seed S] [--smp N] [--ops N]` (or `--seconds S`): a long run of the
//! fuzzers, outside CI (issue 16). One batch boot of the test image whose
//! command is `/bin/sfuzz --seconds (N × 60) --seed S --check-every 4
//! --lanes W --ops N --kernel` (W: one lane per CPU unless `--lanes` says;
//! N: the newest operation set, [`OP_SETS`], unless `--ops` says, so a
//! seed recorded before the positional calls were added replays with
//! `--ops 1`; `tests/sfuzz/src/plan.rs`): the server
//! fuzzer (`tests/sfuzz`) with the kernel fuzzer (`tchild fuzz` and
//! `tchild fuzz-blocking`) beside each of its batches, on a fresh ext2
//! disk (mounted at `/disk`, so the disk file system is fuzzed too) and
//! QEMU's user network. It echoes the guest's lines, then prints the seed
//! and the counts (server messages, kernel calls) and, on a failure, the
//! seed and the messages that did it, which are what a regression test
//! starts from. The serial log is kept in `target/fuzz/seed-S.log`.
//!
//! What it is not: the CI run (that is `test/fuzz.rs`, a few batches with
//! fixed seeds) or a fuzzer itself (the fuzzers run in the guest).

use std::fs;
use std::process::ExitCode;
use std::time::Duration;

use crate::batch;
use crate::ext2;
use crate::image::{ImageKind, Workspace};
use crate::qemu::{AccelChoice, DiskChoice};
use crate::run::RunOptions;
use crate::tools::Result;

/// Options of `cargo xtask fuzz`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuzzOptions {
    /// How long the guest fuzzes (`--minutes N` is N × 60).
    pub seconds: u64,
    pub seed: u64,
    pub smp: u32,
    /// `--lanes W`: sfuzz's coordinators at once (default: [`lanes_for`]).
    pub lanes: Option<u64>,
    /// `--ops N`: sfuzz's operation set (default: the newest, [`OP_SETS`]).
    pub ops: u64,
    pub accel: AccelChoice,
}

impl Default for FuzzOptions {
    fn default() -> Self {
        FuzzOptions {
            seconds: 600,
            seed: 1,
            smp: crate::qemu::DEFAULT_SMP,
            lanes: None,
            ops: OP_SETS,
            accel: AccelChoice::Auto,
        }
    }
}

/// Batches between two health checks in a long run. A check (a fork
/// and exec, a file written on each file system, a call to every server)
/// took a fifth of a run's time when it followed every batch; a failure
/// then names up to this many batches, and `--check-every 1` with the
/// same seed names the one.
pub const CHECK_EVERY: u64 = 4;

/// The most lanes sfuzz takes (its `MAX_LANES`).
pub const MAX_LANES: u64 = 8;

/// The lanes of a run on `smp` CPUs when `--lanes` is not given: one per
/// CPU (a worker keeps about one CPU busy: it waits for one server at a
/// time).
pub fn lanes_for(smp: u32) -> u64 {
    u64::from(smp).clamp(1, MAX_LANES)
}

/// `--lanes W`: 1 to [`MAX_LANES`].
pub fn parse_lanes(text: &str) -> Result<u64> {
    match text.parse::<u64>() {
        Ok(n) if (1..=MAX_LANES).contains(&n) => Ok(n),
        _ => Err(format!("--lanes wants a number from 1 to {MAX_LANES}, got `{text}`")),
    }
}

/// sfuzz's newest operation set (`plan::OP_SETS` in `tests/sfuzz`, a
/// guest program xtask does not link): 1, the lists the recorded seeds
/// were found with; 2, with `io::OP_PREAD` and `OP_PWRITE` (branch
/// `robust`).
pub const OP_SETS: u64 = 2;

/// `--ops N`: 1 to [`OP_SETS`].
pub fn parse_ops(text: &str) -> Result<u64> {
    match text.parse::<u64>() {
        Ok(n) if (1..=OP_SETS).contains(&n) => Ok(n),
        _ => Err(format!("--ops wants an operation set from 1 to {OP_SETS}, got `{text}`")),
    }
}

/// The guest command of a run.
pub fn command(seed: u64, seconds: u64, lanes: u64, ops: u64) -> String {
    format!(
        "/bin/sfuzz --seed {seed} --seconds {seconds} --check-every {CHECK_EVERY} --lanes {lanes} --ops {ops} --kernel"
    )
}

/// What the guest's summary line (`sfuzz: seed S: B batches, M server
/// messages (...), ... K kernel fuzz calls, C kernel calls by every
/// process, T s; ...`) says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub batches: u64,
    pub server_messages: u64,
    pub kernel_fuzz_calls: u64,
    pub kernel_calls: u64,
}

/// The number just before `label` in `line`.
fn number_before(line: &str, label: &str) -> Option<u64> {
    let at = line.find(label)?;
    line[..at].trim_end().rsplit(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// The summary of a run's output, from its last summary line.
pub fn summary(output: &str) -> Option<Summary> {
    let line = output.lines().rev().find(|l| l.starts_with("sfuzz: seed ") && l.contains(" batches, "))?;
    Some(Summary {
        batches: number_before(line, " batches,")?,
        server_messages: number_before(line, " server messages")?,
        kernel_fuzz_calls: number_before(line, " kernel fuzz calls")?,
        kernel_calls: number_before(line, " kernel calls by every process")?,
    })
}

pub fn run(opts: &FuzzOptions) -> Result<ExitCode> {
    let workspace = Workspace::load()?;
    let dir = workspace.target_dir.join("fuzz");
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let disk = dir.join("disk.img");
    ext2::make_image(&disk, ext2::DEFAULT_DISK_BYTES, None)?;
    let seconds = opts.seconds;
    let run_opts = RunOptions {
        smp: opts.smp,
        accel: opts.accel,
        disk: DiskChoice::Image(disk),
        ..RunOptions::default()
    };
    let lanes = opts.lanes.unwrap_or_else(|| lanes_for(opts.smp));
    let config = batch::prepare(
        &workspace,
        &run_opts,
        &command(opts.seed, seconds, lanes, opts.ops),
        ImageKind::Test,
    )?;
    println!(
        "xtask: fuzzing for {seconds} s with seed {} (operation set {}) on {} CPUs, {lanes} lane(s)",
        opts.seed, opts.ops, opts.smp
    );
    // The run stops itself after `seconds`; the rest is boot, the last
    // batch and its check, and the leak check, on a loaded host.
    let run = batch::boot(&config, Duration::from_secs(seconds + 900), true)?;
    let log = dir.join(format!("seed-{}.log", opts.seed));
    fs::write(&log, &run.transcript).map_err(|e| format!("cannot write {}: {e}", log.display()))?;
    let failures: Vec<&str> =
        run.output.lines().filter(|l| l.starts_with("sfuzz: FAIL") || l.contains("FAIL ")).collect();
    println!("\n==> fuzz results (seed {}, --ops {}, serial log {})", opts.seed, opts.ops, log.display());
    match summary(&run.output) {
        Some(s) => println!(
            "  {} batches, {} server messages, {} kernel calls by the kernel fuzzer, {} kernel calls in all",
            s.batches, s.server_messages, s.kernel_fuzz_calls, s.kernel_calls
        ),
        None => println!("  no summary line: the run did not finish (see the log)"),
    }
    for failure in &failures {
        println!("  {failure}");
    }
    let is_ok = run.status == Some(0) && failures.is_empty() && summary(&run.output).is_some();
    if is_ok {
        println!("  no failure");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("  FAILED with seed {} --ops {} (session status {:?})", opts.seed, opts.ops, run.status);
        Ok(ExitCode::FAILURE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_line_is_read() {
        let out = "sfuzz: seed 7, batches of 400 messages\n\
                   sfuzz: seed 7: 12 batches, 4711 server messages (30 from children killed mid-call), 2 workers killed when stalled, 24000 kernel fuzz calls, 99999 kernel calls by every process, 61 s; targets reached: [\"monitor\"]\n";
        assert_eq!(
            summary(out),
            Some(Summary {
                batches: 12,
                server_messages: 4711,
                kernel_fuzz_calls: 24000,
                kernel_calls: 99999
            })
        );
        assert_eq!(summary("sfuzz: seed 7, batches of 400 messages\n"), None);
    }

    #[test]
    fn the_command_names_the_seed_and_the_time() {
        assert_eq!(
            command(5, 600, 2, 2),
            "/bin/sfuzz --seed 5 --seconds 600 --check-every 4 --lanes 2 --ops 2 --kernel"
        );
        assert_eq!(FuzzOptions::default().ops, OP_SETS, "new runs use the newest operations");
        assert!(parse_ops("0").is_err() && parse_ops("3").is_err());
        assert_eq!(parse_ops("1"), Ok(1));
        assert_eq!(lanes_for(2), 2);
        assert_eq!(lanes_for(64), MAX_LANES);
        assert!(parse_lanes("0").is_err() && parse_lanes("9").is_err() && parse_lanes("x").is_err());
        assert_eq!(parse_lanes("3"), Ok(3));
    }
}
