//! The fuzzers in CI (issue 16): one batch boot of the test image running
//! `/bin/sfuzz` for a few batches with a fixed seed and the kernel fuzzer
//! beside each batch (`--kernel`), on a fresh ext2 disk (mounted at
//! `/disk`) and QEMU's user network, so every server and driver is
//! reached. sfuzz speaks the test protocol, so the boot is judged like
//! the UNIX test boots ([`super::boot`]): its `ktest:` lines, its summary
//! and the session's status. The kernel fuzzer's blocking calls run in
//! every kernel-test boot too (`random_kernel_calls_get_answers`).
//!
//! Long runs are `cargo xtask fuzz` (`crate::fuzz`).

use std::path::Path;

use super::boot::boot;
use super::outcome::Outcome;
use crate::batch;
use crate::ext2;
use crate::image::{ImageKind, Workspace};
use crate::qemu::{AccelChoice, DiskChoice};
use crate::run::RunOptions;

/// The seed of the CI run: fixed, so a failure repeats.
pub const CI_SEED: u64 = 1;
/// Batches of the CI run: a few seconds of guest time on 2 CPUs
/// (12 batches of 400 messages: about 4,800 server messages and 24,000
/// kernel fuzz calls).
pub const CI_BATCHES: u64 = 12;

/// The guest command of the CI run. No `--ops`: sfuzz's operation set 1,
/// so seed 1 sends exactly what it sent before the positional calls were
/// added (set 2, `tests/sfuzz/src/plan.rs`); those are fuzzed by `cargo
/// xtask fuzz`, whose runs use the newest set.
pub fn command() -> String {
    format!("/bin/sfuzz --seed {CI_SEED} --batches {CI_BATCHES} --kernel")
}

/// The CI run on `smp` CPUs (default: QEMU's default, 2).
pub fn run(
    workspace: &Workspace,
    smp: Option<u32>,
    accel: AccelChoice,
    timeout_s: u64,
    log_dir: &Path,
) -> Outcome {
    let smp = smp.unwrap_or(crate::qemu::DEFAULT_SMP);
    let name = format!("fuzzers, seed {CI_SEED}");
    println!("\n==> the fuzzers: `{}` (one boot, timeout {timeout_s} s)", command());
    let disk = log_dir.join("disk-fuzz.img");
    if let Err(err) = ext2::make_image(&disk, ext2::DEFAULT_DISK_BYTES, None) {
        return Outcome::step(&name, Err(err));
    }
    let run_opts = RunOptions { smp, accel, disk: DiskChoice::Image(disk), ..RunOptions::default() };
    match batch::prepare(workspace, &run_opts, &command(), ImageKind::Test) {
        Ok(config) => boot(&name, &config, timeout_s, &log_dir.join("fuzz.log"), None),
        Err(err) => Outcome::step(&name, Err(err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ci_run_is_short_and_seeded() {
        assert_eq!(command(), "/bin/sfuzz --seed 1 --batches 12 --kernel");
    }
}
