//! `cargo xtask run --batch "<commands>"`: boot the normal image, run the
//! commands with `/bin/sh` as the first UNIX process, print what they
//! print, and exit with their exit status.
//!
//! The commands travel as the boot module `etc.batch` (so no quoting
//! reaches the kernel command line); init runs `/bin/sh /etc/batch` in
//! place of its init file's `run` line and brackets the session with the
//! `abi::session` lines, which tell the session's output from the boot
//! messages and carry its status.
//!
//! Besides the command, [`prepare`] and [`boot`] serve `cargo xtask test`
//! (the UNIX tests and the shell scenarios are batch boots). It stands on
//! `image`, `qemu` and `run`'s options; no other command is imported.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use crate::image::{self, ImageKind, Workspace};
use crate::qemu::{self, QemuConfig, SerialMode};
use crate::run::RunOptions;
use crate::tools::Result;

/// The boot module that carries the commands: init runs `/bin/sh
/// /etc/batch` when the image has it (`apps/init`, where the same name is
/// defined for its side of the contract). `cargo xtask bench` boots its
/// UNIX rows the same way.
pub const BATCH_MODULE: &str = "etc.batch";
/// How long a batch may run before QEMU is stopped.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(900);

/// What a batch boot gave.
#[derive(Debug)]
pub struct BatchRun {
    /// The session's output (lines between the session markers, `\r` removed).
    pub output: String,
    /// The session's exit status, if init reported one.
    pub status: Option<u32>,
    /// Everything the machine printed, for diagnosis.
    pub transcript: String,
    /// When each line of `output` arrived, from the start of the boot.
    pub line_times: Vec<Duration>,
    /// How QEMU ended (None: it had to be killed).
    pub exit: Option<qemu::QemuExit>,
}

/// The QEMU configuration of a batch boot of `commands` on image `kind`
/// (the test image adds the programs under `tests/`). The script is the
/// boot module `etc.batch`; callers may add further modules to the result.
pub fn prepare(
    workspace: &Workspace,
    opts: &RunOptions,
    commands: &str,
    kind: ImageKind,
) -> Result<QemuConfig> {
    let built = image::build(workspace, kind)?;
    let script = workspace.bin_dir().join(BATCH_MODULE);
    let mut text = commands.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    std::fs::write(&script, text).map_err(|err| format!("cannot write {}: {err}", script.display()))?;
    // A root volume (`root=disk`) holds the boot image, not the batch file.
    let disk = opts.disk.image(&workspace.target_dir, &opts.cmdline, &built.modules)?;
    let mut modules: Vec<PathBuf> = built.modules;
    let extra =
        crate::linux_programs::extra_modules(opts.with_busybox, &opts.add, &workspace.target_dir, &modules)?;
    modules.extend(extra);
    modules.push(script);
    Ok(QemuConfig {
        kernel: built.kernel,
        modules,
        cmdline: opts.cmdline.clone(),
        smp: opts.smp,
        mem: opts.mem.clone(),
        accel: qemu::choose_and_report_accel(opts.accel),
        serial: SerialMode::Captured,
        is_gdb: false,
        disk,
        net: opts.net.clone(),
    })
}

/// Boot `config` and follow its output until init reports the session's
/// end; `echo` prints the session's lines as they come.
pub fn boot(config: &QemuConfig, timeout: Duration, echo: bool) -> Result<BatchRun> {
    let mut command = config.to_command()?;
    command.stdout(Stdio::piped()).stderr(Stdio::piped()).stdin(Stdio::null());
    let mut child = command.spawn().map_err(|err| format!("cannot start QEMU: {err}"))?;
    let stderr = qemu::collect_stderr(&mut child);
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        while matches!(reader.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
            let line = String::from_utf8_lossy(&buf).replace('\r', "");
            if tx.send(line.trim_end_matches('\n').to_string()).is_err() {
                break;
            }
            buf.clear();
        }
    });
    let started = Instant::now();
    let deadline = started + timeout;
    let mut run = BatchRun {
        output: String::new(),
        status: None,
        transcript: String::new(),
        line_times: Vec::new(),
        exit: None,
    };
    let mut in_session = false;
    let stdout_handle = std::io::stdout();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = rx.recv_timeout(left.max(Duration::from_millis(1))) else { break };
        run.transcript.push_str(&line);
        run.transcript.push('\n');
        if line.ends_with(abi::session::START) {
            in_session = true;
            continue;
        }
        if let Some(at) = line.find(abi::session::EXIT) {
            run.status = line[at + abi::session::EXIT.len()..].trim().parse().ok();
            in_session = false;
            continue;
        }
        if in_session {
            if echo {
                let mut out = stdout_handle.lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            run.output.push_str(&line);
            run.line_times.push(started.elapsed());
            run.output.push('\n');
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    let ended = qemu::wait_until(&mut child, Instant::now() + Duration::from_secs(10));
    run.exit = ended.map(|status| qemu::classify_exit(status.code()));
    if let Ok(text) = stderr.join() {
        run.transcript.push_str(&text);
    }
    Ok(run)
}

/// `cargo xtask run --batch`.
pub fn run_command(opts: &RunOptions, commands: &str) -> Result<ExitCode> {
    qemu::ensure_qemu()?;
    let workspace = Workspace::load()?;
    let config = prepare(&workspace, opts, commands, ImageKind::Normal)?;
    let run = boot(&config, DEFAULT_TIMEOUT, true)?;
    match run.status {
        Some(status) => {
            // The same words as `run` and the test runner (qemu::describe_end).
            if status != 0
                && let Some(exit) = run.exit
            {
                eprintln!(
                    "xtask: {}",
                    qemu::describe_end(exit, &qemu::EndFacts::from_serial(&run.transcript))
                );
            }
            Ok(ExitCode::from(status.min(255) as u8))
        }
        None => {
            eprintln!("{}", run.transcript);
            Err("the session did not report its end (see the transcript above)".to_string())
        }
    }
}
