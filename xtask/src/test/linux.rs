//! Linux programs on Ridgeback (issue 14, docs/linux-abi.md): the C
//! programs of `tests/linux` built with `musl-gcc -static` (Debian's
//! `musl-tools`, installed when missing) and Debian's `busybox-static`,
//! unmodified, run by the Linux server. Each script of `tests/linux` runs
//! under `busybox sh` twice: on the host (a Linux kernel) and in one
//! batch boot of Ridgeback with the programs in `/bin`; standard output
//! and exit status must be equal, the host's being the expected output.
//! The same boot checks a mixed pipeline in Ridgeback's own shell
//! (`busybox ls DIR | wc -l`, Ridgeback's `wc` reading busybox's output).
//!
//! What it is not: a check of standard error (the server's one line per
//! unsupported call goes there), nor of timing.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::outcome::Outcome;
use super::scenarios;
use crate::batch;
use crate::image::{ImageKind, Workspace};
use crate::linux_programs;
use crate::run::RunOptions;
use crate::tools::{self, Result};

/// Where the sources and scripts live, relative to the workspace root.
pub const DIR: &str = "tests/linux";
const DELIMITER: &str = "@@@SCRIPT_END";
/// How long the host may run one script.
const HOST_TIMEOUT: Duration = Duration::from_secs(30);
/// The mixed pipeline's directory holds this many files.
const MIXED_FILES: usize = 5;
/// The port of the mixed socket check: Ridgeback's `nc -l` listens on
/// it, the Linux program `lx-net client` connects to it.
const MIXED_SOCKET_PORT: u16 = 5710;

/// Build every `tests/linux/*.c` into `out_dir`; returns the programs.
fn build_programs(root: &Path, out_dir: &Path) -> Result<Vec<PathBuf>> {
    tools::ensure_program("musl-gcc", "musl-tools", "musl-gcc (builds the Linux test programs)")?;
    fs::create_dir_all(out_dir).map_err(|e| format!("creating {}: {e}", out_dir.display()))?;
    let mut sources: Vec<PathBuf> = fs::read_dir(root.join(DIR))
        .map_err(|e| format!("reading {DIR}: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    sources.sort();
    let mut out = Vec::new();
    for src in sources {
        let name = src.file_stem().and_then(|s| s.to_str()).ok_or("bad source name")?.to_string();
        let binary = out_dir.join(&name);
        let status = Command::new("musl-gcc")
            .args(["-static", "-O2", "-Wall", "-o"])
            .arg(&binary)
            .arg(&src)
            .status()
            .map_err(|e| format!("starting musl-gcc: {e}"))?;
        if !status.success() {
            return Err(format!("musl-gcc -static {} failed ({status})", src.display()));
        }
        out.push(binary);
    }
    Ok(out)
}

/// The scripts: (name, text), sorted.
fn scripts(root: &Path) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(root.join(DIR)).map_err(|e| format!("reading {DIR}: {e}"))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".sh")) else {
            continue;
        };
        let text = fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        if text.lines().any(|l| l == DELIMITER) {
            return Err(format!("{}: a line is the driver's delimiter", path.display()));
        }
        out.push((name.to_string(), text));
    }
    out.sort();
    Ok(out)
}

/// Run `text` with the host's copy of busybox in a fresh directory, with
/// `path_dirs` first on PATH: its result as the scenarios write it.
fn host_result(
    name: &str,
    text: &str,
    busybox: &Path,
    path_dirs: &[&Path],
    scratch: &Path,
) -> Result<String> {
    let dir = scratch.join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let script = scratch.join(format!("{name}.sh"));
    fs::write(&script, text).map_err(|e| format!("writing {}: {e}", script.display()))?;
    let mut path = path_dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(":");
    path.push_str(":/usr/bin:/bin");
    let mut child = Command::new(busybox)
        .arg("sh")
        .arg(&script)
        .current_dir(&dir)
        .env_clear()
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("running busybox on the host: {e}"))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::BufReader::new(stdout), &mut out);
        out
    });
    let deadline = Instant::now() + HOST_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| format!("busybox: {e}"))? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{name}: the host's busybox did not finish"));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned();
    let code = status.code().map_or_else(|| "signal".to_string(), |c| c.to_string());
    Ok(format!("{out}[exit {code}]\n"))
}

/// The batch driver: each script in a fresh directory under `busybox sh`,
/// between the scenarios' markers; then the mixed pipeline.
fn driver(scripts: &[(String, String)]) -> String {
    let mut s = String::from("# Generated by cargo xtask test: the Linux programs of tests/linux.\n");
    for (name, text) in scripts {
        let mut text = text.clone();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        s.push_str(&format!("cat > /tmp/lx.{name}.sh <<'{DELIMITER}'\n{text}{DELIMITER}\n"));
        s.push_str(&format!("mkdir /tmp/lx.{name}\ncd /tmp/lx.{name}\necho '@@@ begin {name}'\n"));
        s.push_str(&format!(
            "busybox sh /tmp/lx.{name}.sh </dev/null 2>/tmp/lx.{name}.err\necho \"@@@ end {name} $?\"\ncd /\n"
        ));
    }
    s.push_str("mkdir /tmp/lx.mixed\n");
    for i in 0..MIXED_FILES {
        s.push_str(&format!("echo {i} > /tmp/lx.mixed/f{i}\n"));
    }
    s.push_str("echo '@@@ begin mixed-pipeline'\nbusybox ls /tmp/lx.mixed | wc -l\n");
    s.push_str("busybox cat /tmp/lx.mixed/f3 | sha256sum\necho \"@@@ end mixed-pipeline $?\"\n");
    // Ridgeback's nc and a Linux program over a loopback TCP connection,
    // each sending a line to the other (the client retries while nc is
    // not listening yet).
    s.push_str(&format!(
        "echo '@@@ begin mixed-socket'\necho 'from nc' | nc -l {MIXED_SOCKET_PORT} > /tmp/lx.nc.out &\n\
         lx-net client {MIXED_SOCKET_PORT}\nwait\ncat /tmp/lx.nc.out\necho \"@@@ end mixed-socket $?\"\n"
    ));
    s.push_str("echo '@@@ all scenarios ran'\n");
    s
}

pub fn run(workspace: &Workspace, run_opts: &RunOptions, timeout_s: u64, log_dir: &Path) -> Outcome {
    let row = "Linux programs";
    let started = Instant::now();
    let out_dir = workspace.target_dir.join("linux-tests");
    let programs = match build_programs(&workspace.root, &out_dir) {
        Ok(p) => p,
        Err(err) => return Outcome::step(row, Err(err)),
    };
    let busybox = match linux_programs::busybox(&workspace.target_dir.join("linux-programs")) {
        Ok(b) => b,
        Err(err) => return Outcome::step(row, Err(err)),
    };
    let scripts = match scripts(&workspace.root) {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => return Outcome::step(row, Err(format!("no scripts in {DIR}"))),
        Err(err) => return Outcome::step(row, Err(err)),
    };
    let scratch = log_dir.join("linux-host");
    let busybox_dir = busybox.parent().unwrap_or(Path::new("/"));
    let mut expected = Vec::new();
    for (name, text) in &scripts {
        match host_result(name, text, &busybox, &[&out_dir, busybox_dir], &scratch) {
            Ok(r) => expected.push(r),
            Err(err) => return Outcome::step(row, Err(err)),
        }
    }
    // The mixed pipeline's expected output: Ridgeback's wc prints the
    // count right-aligned in 7 columns, and sha256sum of "3\n" from
    // standard input.
    let mixed = format!(
        "{MIXED_FILES:>7}\n1121cfccd5913f0a63fec40a6ffd44ea64f9dc135c66634ba001d10bcf4302a2  -\n[exit 0]\n"
    );
    // The mixed socket check: what each end read from the other.
    let mixed_socket = "linux program read: from nc\nfrom the linux program\n[exit 0]\n".to_string();
    let opts = RunOptions { add: programs, with_busybox: true, ..run_opts.clone() };
    let config = match batch::prepare(workspace, &opts, &driver(&scripts), ImageKind::Normal) {
        Ok(c) => c,
        Err(err) => return Outcome::step(row, Err(err)),
    };
    let run = match batch::boot(&config, Duration::from_secs(timeout_s), false) {
        Ok(run) => run,
        Err(err) => return Outcome::step(row, Err(err)),
    };
    let log_path = log_dir.join("linux.log");
    let _ = fs::write(&log_path, &run.transcript);
    let split = scenarios::split(&run.output);
    let mut outcome = Outcome::step(row, Ok(()));
    outcome.passed = 0;
    let names = scripts.iter().map(|(n, _)| n.as_str()).chain(["mixed-pipeline", "mixed-socket"]);
    for (name, want) in names.zip(expected.iter().chain([&mixed, &mixed_socket])) {
        let result = match (split.results.get(name), split.unfinished.get(name)) {
            (Some(text), _) => scenarios::compare(want, text).map(|diff| (diff, text.clone())),
            (None, Some(text)) => Some(("it began but did not end".to_string(), text.clone())),
            (None, None) => Some(("it never began".to_string(), String::new())),
        };
        match result {
            None => outcome.passed += 1,
            Some((why, text)) => {
                outcome.failed += 1;
                let actual = log_dir.join(format!("linux.{name}.actual"));
                let host = log_dir.join(format!("linux.{name}.host"));
                let _ = fs::write(&actual, &text);
                let _ = fs::write(&host, want);
                println!("  FAIL  {name}: {why}");
                outcome.problems.push(format!(
                    "{name}: {why} (diff {} {})",
                    host.display(),
                    actual.display()
                ));
            }
        }
    }
    if !(split.done && run.status == Some(0)) {
        outcome.problems.push(match run.status {
            None => format!("the session did not end within {timeout_s} s"),
            Some(status) => format!("the driver stopped early (status {status})"),
        });
        outcome.failed = outcome.failed.max(1);
    }
    if !outcome.problems.is_empty() {
        outcome.problems.push(format!("serial log: {}", log_path.display()));
    }
    let seconds = started.elapsed().as_secs();
    println!(
        "--- Linux programs: {} of {} checks agree with the host, after {seconds} s",
        outcome.passed,
        scripts.len() + 2
    );
    outcome.name =
        format!("{row} ({} scripts, a mixed pipeline and a mixed socket), {seconds} s", scripts.len());
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_runs_each_script_with_busybox_then_the_mixed_pipeline() {
        let text = driver(&[("a".to_string(), "echo hi".to_string())]);
        assert!(text.contains("cat > /tmp/lx.a.sh <<'@@@SCRIPT_END'\necho hi\n@@@SCRIPT_END\n"));
        assert!(text.contains("busybox sh /tmp/lx.a.sh </dev/null"));
        assert!(text.contains("busybox ls /tmp/lx.mixed | wc -l"));
        assert!(text.contains("nc -l 5710 > /tmp/lx.nc.out &\nlx-net client 5710\nwait\n"));
        assert!(text.ends_with("echo '@@@ all scenarios ran'\n"));
    }

    #[test]
    fn the_scripts_load() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        assert!(scripts(&root).unwrap().len() >= 2);
    }

    /// This step's boot alone (slow: `cargo test -p xtask -- --ignored
    /// boot_the_linux_programs --nocapture`).
    #[test]
    #[ignore]
    fn boot_the_linux_programs() {
        let workspace = Workspace::load().unwrap();
        let log_dir = workspace.target_dir.join("ktest");
        fs::create_dir_all(&log_dir).unwrap();
        let opts = RunOptions { disk: crate::qemu::DiskChoice::None, ..RunOptions::default() };
        let outcome = run(&workspace, &opts, super::super::boot::DEFAULT_TIMEOUT_S, &log_dir);
        assert!(outcome.is_ok(), "{:?}", outcome.problems);
    }
}
