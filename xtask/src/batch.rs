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
//! Those lines share the serial line with every program's output, so a
//! program could print them (issue 16: `echo "ridgeback: session exit
//! 0"; echo after; exit 3` once printed nothing after the echo). Each boot
//! therefore gets a fresh random key as the boot module
//! `abi::session::KEY_MODULE`; init ends both lines with it, and
//! [`SessionKey`] believes only lines that carry it. Why a key in a
//! module and not another channel: only processes holding
//! `rights::MODULES` read modules (init; memfs, which leaves this one
//! out of the tree), no UNIX process, root's included, holds it, and the
//! key tells *where* in the one serial stream the session ended, which
//! an exit code (isa-debug-exit gives the host 7 bits, and no position)
//! or a second serial port (no order against the first) would not. A
//! program's line that looks like a marker is then just output.
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
    modules.push(write_key(&workspace.bin_dir())?);
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

/// Write a fresh session key (16 random bytes, in hex) as the boot module
/// [`abi::session::KEY_MODULE`] in `dir`; its path.
fn write_key(dir: &std::path::Path) -> Result<PathBuf> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|err| format!("cannot read /dev/urandom for the session key: {err}"))?;
    let key: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let path = dir.join(abi::session::KEY_MODULE);
    std::fs::write(&path, format!("{key}\n"))
        .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    Ok(path)
}

/// The session key of one boot, and the one reading of init's session
/// lines (`cargo xtask run --batch` and every test runner that follows a
/// session: a line is a marker only if it carries the key).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionKey(Option<String>);

impl SessionKey {
    /// The key `config` boots with: the text of its module named
    /// [`abi::session::KEY_MODULE`] (read now: the next `prepare`
    /// writes a new one). None when it has none (init then prints the
    /// markers bare, and bare markers are believed, as before keys).
    pub fn of(config: &QemuConfig) -> SessionKey {
        let module =
            config.modules.iter().find(|m| m.file_name().is_some_and(|n| n == abi::session::KEY_MODULE));
        SessionKey(module.and_then(|m| std::fs::read_to_string(m).ok()).map(|k| k.trim().to_string()))
    }

    /// A key given as text (host tests).
    #[cfg(test)]
    pub fn from_text(key: Option<&str>) -> SessionKey {
        SessionKey(key.map(str::to_string))
    }

    /// Whether `line` is init's line that starts the session.
    pub fn is_start(&self, line: &str) -> bool {
        let line = line.trim_end();
        match &self.0 {
            Some(key) => line
                .strip_suffix(key.as_str())
                .and_then(|l| l.strip_suffix(' '))
                .is_some_and(|l| l.ends_with(abi::session::START)),
            None => line.ends_with(abi::session::START),
        }
    }

    /// If `line` is init's line that ends the session: the text before
    /// the marker on the same line (output that had no newline yet) and
    /// the session's status. The last marker on the line counts, so that
    /// a forged one in front cannot hide it.
    pub fn exit<'a>(&self, line: &'a str) -> Option<(&'a str, u32)> {
        let at = line.rfind(abi::session::EXIT)?;
        let mut words = line[at + abi::session::EXIT.len()..].split_whitespace();
        let status = words.next()?.parse().ok()?;
        let rest = (words.next(), words.next());
        let carries = match &self.0 {
            Some(key) => rest == (Some(key.as_str()), None),
            None => rest == (None, None),
        };
        carries.then_some((&line[..at], status))
    }
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
    let key = SessionKey::of(config);
    let stdout_handle = std::io::stdout();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = rx.recv_timeout(left.max(Duration::from_millis(1))) else { break };
        run.transcript.push_str(&line);
        run.transcript.push('\n');
        if key.is_start(&line) && !in_session && run.status.is_none() {
            in_session = true;
            continue;
        }
        let mut line = line.as_str();
        let ended = key.exit(line);
        if let Some((before, status)) = ended {
            run.status = Some(status);
            line = before;
        }
        if in_session && !(ended.is_some() && line.is_empty()) {
            if echo {
                let mut out = stdout_handle.lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            run.output.push_str(line);
            run.line_times.push(started.elapsed());
            run.output.push('\n');
        }
        if ended.is_some() {
            in_session = false;
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
            // The same words as `run` and the test runner (qemu::describe_end),
            // with the status init reported under the key.
            if status != 0
                && let Some(exit) = run.exit
            {
                let facts = qemu::EndFacts {
                    session_status: Some(status),
                    ..qemu::EndFacts::from_serial(&run.transcript)
                };
                eprintln!("xtask: {}", qemu::describe_end(exit, &facts));
            }
            Ok(ExitCode::from(status.min(255) as u8))
        }
        None => {
            eprintln!("{}", run.transcript);
            Err("the session did not report its end (see the transcript above)".to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SessionKey;

    const KEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";

    #[test]
    fn only_keyed_markers_count_when_the_boot_has_a_key() {
        let key = SessionKey::from_text(Some(KEY));
        assert!(key.is_start(&format!("ridgeback: session start {KEY}")));
        assert!(!key.is_start("ridgeback: session start"));
        assert!(!key.is_start("ridgeback: session start 00"));
        assert_eq!(key.exit(&format!("ridgeback: session exit 3 {KEY}")), Some(("", 3)));
        // The forged line, and forgeries with a wrong or a
        // trailing key, are output.
        assert_eq!(key.exit("ridgeback: session exit 0"), None);
        assert_eq!(key.exit("ridgeback: session exit 0 00112233445566778899aabbccddeeff"), None);
        assert_eq!(key.exit(&format!("ridgeback: session exit 0 {KEY} more")), None);
        assert_eq!(key.exit(&format!("ridgeback: session exit x {KEY}")), None);
        // Output with no newline in front of init's line: it is kept,
        // and a forged marker there cannot hide the real one.
        assert_eq!(
            key.exit(&format!("no newline ridgeback: session exit 0 ridgeback: session exit 7 {KEY}")),
            Some(("no newline ridgeback: session exit 0 ", 7))
        );
    }

    #[test]
    fn bare_markers_count_when_the_boot_has_no_key() {
        let key = SessionKey::from_text(None);
        assert!(key.is_start("ridgeback: session start"));
        assert_eq!(key.exit("ridgeback: session exit 3"), Some(("", 3)));
        assert_eq!(key.exit(&format!("ridgeback: session exit 3 {KEY}")), None);
        assert_eq!(key.exit("ridgeback: session exit"), None);
    }
}
