//! `cargo xtask bench`: the benchmark suite of `shared/BENCHMARKS.md`.
//!
//! Not written yet: another engineer owns this module. It will boot
//! Ridgeback and a Linux guest in the same QEMU configuration and report
//! Ridgeback's figures next to Linux's. Until then the command says so and
//! exits with status 2, so that no script mistakes it for a passing run.
//!
//! Contract with `main.rs`: [`main`] receives every argument after `bench`
//! unparsed, and returns the process exit code.

use std::process::ExitCode;

pub fn main(_args: &[String]) -> ExitCode {
    eprintln!("xtask: bench: not yet implemented");
    ExitCode::from(2)
}
