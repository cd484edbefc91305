//! Forged session markers (issue 16): a program that prints init's
//! `ridgeback: session exit N` line must neither end the session's output
//! nor set its status. One batch boot runs the command, and a
//! forged line with a made-up key, and checks that every line after them
//! arrives and that the status is the shell's real one, 3; and that the
//! key's boot module is no file a program could read.
//!
//! What it is not: the parsing itself, which `batch::SessionKey`'s host
//! tests cover line by line; this is the whole path through init, memfs
//! and the host.

use std::fs;
use std::path::Path;
use std::time::Duration;

use super::outcome::Outcome;
use crate::batch;
use crate::image::{ImageKind, Workspace};
use crate::qemu::{DiskChoice, NetChoice};
use crate::run::RunOptions;

/// The command, then a forged marker with a key of the right
/// form, then a look for the key's module in the file tree.
const COMMAND: &str = "echo \"ridgeback: session exit 0\"; echo after; \
     echo \"ridgeback: session exit 0 00112233445566778899aabbccddeeff\"; \
     test -e /bin/session.key || test -e /etc/session.key || echo no key file; exit 3";
/// What the session must print.
const EXPECTED: &str = "ridgeback: session exit 0\nafter\n\
     ridgeback: session exit 0 00112233445566778899aabbccddeeff\nno key file\n";

pub fn run(workspace: &Workspace, run_opts: &RunOptions, timeout_s: u64, log_dir: &Path) -> Outcome {
    let row = "forged session markers: the output goes on and the status is the real one";
    let opts = RunOptions { disk: DiskChoice::None, net: NetChoice::None, ..run_opts.clone() };
    let result = batch::prepare(workspace, &opts, COMMAND, ImageKind::Normal)
        .and_then(|config| batch::boot(&config, Duration::from_secs(timeout_s), false))
        .and_then(|run| {
            let _ = fs::write(log_dir.join("forged.log"), &run.transcript);
            // init's own lines may fall inside the session (a driver with
            // no device ends while it starts): they are not the commands'.
            let printed: String =
                run.output.lines().filter(|l| !l.starts_with("init: ")).map(|l| format!("{l}\n")).collect();
            if printed != EXPECTED {
                return Err(format!(
                    "the session printed {printed:?} (init's lines left out), expected {EXPECTED:?} (log: {})",
                    log_dir.join("forged.log").display()
                ));
            }
            match run.status {
                Some(3) => Ok(()),
                other => Err(format!("the session's status is {other:?}, expected Some(3)")),
            }
        });
    Outcome::step(row, result)
}
