//! `cargo xtask soak --minutes N [--smp N]`: the soak (issue 16). One
//! batch boot of the test image on 4 CPUs (by default) with a fresh ext2
//! disk at `/disk` and QEMU's user network, running `/bin/soak --seconds
//! (N × 60)` (`tests/soak`): shell pipelines with checksums, fork and exec
//! churn, files on `/tmp` and `/disk`, pipes at every size and the server
//! fuzzer, in parallel, then the check that no memory, process,
//! descriptor, handle or socket leaked. Prints the guest's lines, then
//! the operations, errors and leaks; the serial log is kept in
//! `target/soak/soak.log`, and the disk is checked with `e2fsck` after.
//!
//! What it is not: part of CI (it runs for minutes to hours).

use std::fs;
use std::process::ExitCode;
use std::time::Duration;

use crate::batch;
use crate::ext2;
use crate::image::{ImageKind, Workspace};
use crate::qemu::{AccelChoice, DiskChoice};
use crate::run::RunOptions;
use crate::tools::Result;

/// Options of `cargo xtask soak`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SoakOptions {
    /// How long the load runs (`--minutes N` is N × 60).
    pub seconds: u64,
    pub smp: u32,
    pub accel: AccelChoice,
}

impl Default for SoakOptions {
    fn default() -> Self {
        SoakOptions { seconds: 600, smp: 4, accel: AccelChoice::Auto }
    }
}

/// The guest's final figures (`soak: S s: N operations, E errors, L
/// leaks; ...`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub operations: u64,
    pub errors: u64,
    pub leaks: u64,
}

fn number_before(line: &str, label: &str) -> Option<u64> {
    let at = line.find(label)?;
    line[..at].trim_end().rsplit(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// The figures of a run's output, from its final line.
pub fn figures(output: &str) -> Option<Figures> {
    let line = output.lines().rev().find(|l| l.starts_with("soak: ") && l.contains(" operations, "))?;
    Some(Figures {
        operations: number_before(line, " operations,")?,
        errors: number_before(line, " errors,")?,
        leaks: number_before(line, " leaks")?,
    })
}

pub fn run(opts: &SoakOptions) -> Result<ExitCode> {
    let workspace = Workspace::load()?;
    let dir = workspace.target_dir.join("soak");
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let disk = dir.join("disk.img");
    ext2::make_image(&disk, ext2::DEFAULT_DISK_BYTES, None)?;
    let run_opts = RunOptions {
        smp: opts.smp,
        accel: opts.accel,
        disk: DiskChoice::Image(disk.clone()),
        ..RunOptions::default()
    };
    let command = format!("/bin/soak --seconds {}", opts.seconds);
    let config = batch::prepare(&workspace, &run_opts, &command, ImageKind::Test)?;
    println!("xtask: soak for {} s on {} CPUs", opts.seconds, opts.smp);
    let run = batch::boot(&config, Duration::from_secs(opts.seconds + 1200), true)?;
    let log = dir.join("soak.log");
    fs::write(&log, &run.transcript).map_err(|e| format!("cannot write {}: {e}", log.display()))?;
    println!("\n==> soak results (serial log {})", log.display());
    let found = figures(&run.output);
    match &found {
        Some(f) => println!("  {} operations, {} errors, {} leaks", f.operations, f.errors, f.leaks),
        None => println!("  no final line: the soak did not finish (see the log)"),
    }
    for line in run.output.lines().filter(|l| l.starts_with("soak: ")) {
        println!("  {line}");
    }
    let fsck = ext2::check(&disk);
    match &fsck {
        Ok(()) => println!("  the disk passes e2fsck"),
        Err(why) => println!("  the disk fails e2fsck: {why}"),
    }
    let is_ok = run.status == Some(0)
        && fsck.is_ok()
        && found.is_some_and(|f| f.errors == 0 && f.leaks == 0 && f.operations > 0);
    println!("  {}", if is_ok { "no error, no leak" } else { "FAILED" });
    Ok(if is_ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_final_line_is_read() {
        let out = "soak: pipelines: 3 operations, 0 errors\n\
                   soak: 60 s: 1234 operations, 2 errors, 1 leaks; memory 5 bytes free before, 4 after (1 lower)\n";
        assert_eq!(figures(out), Some(Figures { operations: 1234, errors: 2, leaks: 1 }));
        assert_eq!(figures("soak: pipelines: 3 operations, 0 errors\n"), None);
    }
}
