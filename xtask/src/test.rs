//! `cargo xtask test`: the whole test suite, exactly what CI runs.
//!
//! Steps, each under its own header:
//! 1. `cargo fmt --all -- --check`;
//! 2. clippy with `-D warnings`, for the host crates and for the target crates;
//! 3. the host crates' unit tests;
//! 4. build the test image and boot it once per configuration (1, 2 and 4
//!    CPUs) with `init=testrunner`, each boot under a timeout;
//! 5. the UNIX personality's tests: the test image booted normally (init
//!    from `etc/inittab`) with `/bin/utest` as the batch command
//!    (`tests/utest`, the same line protocol as the test runner), on 1 and
//!    2 CPUs; then one boot of the normal image running every shell
//!    scenario of `tests/unix` ([`scenarios`]);
//! 6. the benchmark smoke test, `cargo xtask bench --quick` (Ridgeback and
//!    the Linux guest; it checks that every figure is measured, never a
//!    figure's value).
//!
//! Every step runs even when an earlier one failed (except the boots, which
//! need the build), so one run reports everything that is wrong. The last
//! line of output is `N passed, M failed` alone on its line, and the exit
//! status is non-zero when M is.
//!
//! A boot passes when QEMU exits with the success status, the serial output
//! holds a `ktest: summary` line with 0 failed, and every `ktest: start` has
//! its `ktest: ok` or `ktest: FAIL`. The parser ([`SerialReport`]) and the
//! verdict ([`judge`]) are pure functions, tested below; the protocol's line
//! prefixes come from `abi::test_protocol`, shared with the test runner.
//!
//! Counting for the last line: every in-QEMU test and every host unit test
//! counts one; a step with no finer count (fmt, each clippy, the build)
//! counts one; a boot that failed without a failed test to show for it
//! (a timeout, a panic, a bad exit status, a missing summary) counts one
//! failure.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use abi::test_protocol::{FAIL, OK, START, SUMMARY};

use crate::image::{self, ImageKind, PROFILE, TARGET, Workspace};
use crate::qemu::{self, AccelChoice, QemuConfig, QemuExit, SerialMode};
use crate::{Result, RunOptions, batch, tools};

mod scenarios;

/// Default limit for one boot. TCG on two host cores is slow, and a boot
/// with 4 guest CPUs shares those cores; three boots at this limit still
/// leave most of CI's 90 minutes.
pub const DEFAULT_TIMEOUT_S: u64 = 300;
/// The kernel command line of test boots.
pub const TEST_KERNEL_CMDLINE: &str = "init=testrunner";
/// The program the test boots start as init; a `bin` target under `tests/`.
pub const TEST_RUNNER: &str = "testrunner";
/// Guest CPU counts of the test configurations: uniprocessor, the default,
/// and more CPUs than the CI host has cores.
const TEST_SMP_CONFIGS: [u32; 3] = [1, 2, 4];
/// The UNIX test program (a `bin` under `tests/`) and its CPU counts.
pub const UNIX_TEST_PROGRAM: &str = "utest";
const UNIX_SMP_CONFIGS: [u32; 2] = [1, 2];
/// What the kernel prints when it panics.
const PANIC_MARKER: &str = "KERNEL PANIC";
/// How long to wait for QEMU to exit once its output has ended, and for the
/// reader threads once QEMU was killed.
const GRACE: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parts {
    All,
    HostOnly,
    QemuOnly,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestOptions {
    pub parts: Parts,
    /// Boot only this configuration.
    pub smp: Option<u32>,
    pub timeout_s: u64,
    pub accel: AccelChoice,
}

impl Default for TestOptions {
    fn default() -> Self {
        TestOptions { parts: Parts::All, smp: None, timeout_s: DEFAULT_TIMEOUT_S, accel: AccelChoice::Auto }
    }
}

// ---------------------------------------------------------------------------
// Serial-output parsing (pure).

/// The counts of a `N passed, M failed` text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
}

/// Parses `N passed, M failed` (anything after a further comma is ignored,
/// so that a later `, K skipped` does not break old runners).
pub fn parse_counts(text: &str) -> Option<Counts> {
    let mut parts = text.trim().split(',').map(str::trim);
    let passed = parts.next()?.strip_suffix(" passed")?.parse().ok()?;
    let failed = parts.next()?.strip_suffix(" failed")?.parse().ok()?;
    Some(Counts { passed, failed })
}

/// What one boot's serial output said, fed line by line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SerialReport {
    pub passed: Vec<String>,
    /// `(name, reason)`.
    pub failed: Vec<(String, String)>,
    /// Tests started and not finished, in start order.
    pub running: Vec<String>,
    pub summary: Option<Counts>,
    /// Lines that contain the kernel's panic marker.
    pub panics: Vec<String>,
    /// `ktest: summary` lines whose counts do not parse.
    pub malformed: Vec<String>,
}

impl SerialReport {
    /// Takes one line of serial output. Protocol lines must start the line:
    /// the test runner prints each as one write, so a prefix anywhere else
    /// is someone else's text.
    pub fn feed(&mut self, line: &str) {
        let line = line.trim_end();
        if line.contains(PANIC_MARKER) {
            self.panics.push(line.to_string());
        }
        if let Some(name) = line.strip_prefix(START) {
            self.running.push(name.trim().to_string());
        } else if let Some(name) = line.strip_prefix(OK) {
            let name = name.trim();
            self.finish(name);
            self.passed.push(name.to_string());
        } else if let Some(rest) = line.strip_prefix(FAIL) {
            // Test names may contain "::", so the name ends at ": ", not ':'.
            let (name, reason) = rest.split_once(": ").unwrap_or((rest, "(no reason given)"));
            let name = name.trim();
            self.finish(name);
            self.failed.push((name.to_string(), reason.trim().to_string()));
        } else if let Some(counts) = line.strip_prefix(SUMMARY) {
            match parse_counts(counts) {
                Some(counts) => self.summary = Some(counts),
                None => self.malformed.push(line.to_string()),
            }
        }
    }

    fn finish(&mut self, name: &str) {
        if let Some(index) = self.running.iter().position(|n| n == name) {
            self.running.remove(index);
        }
    }
}

/// How a boot ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootEnd {
    Exited(QemuExit),
    TimedOut,
}

/// The judgement of one boot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    pub passed: u64,
    pub failed: u64,
    /// Why the boot failed; empty when it passed.
    pub problems: Vec<String>,
    /// Worth a look, but not failures.
    pub warnings: Vec<String>,
}

pub fn judge(report: &SerialReport, end: BootEnd, timeout_s: u64) -> Verdict {
    let mut verdict = Verdict::default();
    let problems = &mut verdict.problems;
    match end {
        BootEnd::TimedOut => problems.push(format!("timed out after {timeout_s} s; QEMU was killed")),
        BootEnd::Exited(QemuExit::Success) => {}
        BootEnd::Exited(other) => problems.push(other.to_string()),
    }
    for line in &report.panics {
        problems.push(format!("kernel panic: {line}"));
    }
    for (name, reason) in &report.failed {
        problems.push(format!("test {name} failed: {reason}"));
    }
    for name in &report.running {
        problems.push(format!("test {name} started but never finished"));
    }
    match report.summary {
        None => problems.push(format!("no summary line (`{SUMMARY}N passed, M failed`) was printed")),
        Some(summary) if summary.failed > 0 => {
            problems.push(format!("the test runner's summary reports {} failed", summary.failed))
        }
        Some(summary) => {
            if summary.passed != report.passed.len() as u64 {
                verdict.warnings.push(format!(
                    "the summary says {} passed but {} `{}` lines were seen",
                    summary.passed,
                    report.passed.len(),
                    OK.trim_end()
                ));
            }
            if summary.passed == 0 && report.passed.is_empty() {
                verdict.warnings.push("no in-QEMU test ran".to_string());
            }
        }
    }
    for line in &report.malformed {
        verdict.warnings.push(format!("malformed summary line: {line}"));
    }
    verdict.passed = report.passed.len() as u64;
    verdict.failed = (report.failed.len() + report.running.len()) as u64;
    if verdict.failed == 0 && !verdict.problems.is_empty() {
        verdict.failed = 1;
    }
    verdict
}

/// Adds up the `test result:` lines of `cargo test` output
/// (`test result: ok. 12 passed; 0 failed; 0 ignored; ...`).
pub fn parse_cargo_test_line(line: &str) -> Option<Counts> {
    let rest = line.trim().strip_prefix("test result: ")?;
    let (_, counts) = rest.split_once(". ")?;
    let mut fields = counts.split(';').map(str::trim);
    let passed = fields.next()?.strip_suffix(" passed")?.parse().ok()?;
    let failed = fields.next()?.strip_suffix(" failed")?.parse().ok()?;
    Some(Counts { passed, failed })
}

// ---------------------------------------------------------------------------
// The steps.

/// One row of the final table.
struct Outcome {
    name: String,
    passed: u64,
    failed: u64,
    problems: Vec<String>,
    warnings: Vec<String>,
}

impl Outcome {
    fn step(name: &str, result: Result<()>) -> Outcome {
        let is_ok = result.is_ok();
        Outcome {
            name: name.to_string(),
            passed: u64::from(is_ok),
            failed: u64::from(!is_ok),
            problems: result.err().into_iter().collect(),
            warnings: Vec::new(),
        }
    }

    fn is_ok(&self) -> bool {
        self.failed == 0 && self.problems.is_empty()
    }
}

/// Prints step headers as `==> [k/n] title`.
struct Headers {
    done: usize,
    total: usize,
}

impl Headers {
    fn next(&mut self, title: &str) {
        self.done += 1;
        println!("\n==> [{}/{}] {title}", self.done, self.total);
    }
}

pub fn run(opts: &TestOptions) -> Result<ExitCode> {
    let started = Instant::now();
    let workspace = Workspace::load()?;
    let is_host = opts.parts != Parts::QemuOnly;
    let is_qemu = opts.parts != Parts::HostOnly;
    let mut headers = Headers { done: 0, total: 4 * usize::from(is_host) + 5 * usize::from(is_qemu) };
    let mut outcomes = Vec::new();
    if is_host {
        outcomes.extend(host_steps(&workspace, &mut headers));
    }
    if is_qemu {
        outcomes.extend(qemu_steps(&workspace, opts, &mut headers));
    }

    println!("\n==> results ({} s)", started.elapsed().as_secs());
    let (mut passed, mut failed) = (0, 0);
    for outcome in &outcomes {
        passed += outcome.passed;
        failed += outcome.failed;
        // Counts in this table use ';' so that no row reads like the final line.
        println!(
            "  {:<4}  {} ({} passed; {} failed)",
            if outcome.is_ok() { "ok" } else { "FAIL" },
            outcome.name,
            outcome.passed,
            outcome.failed
        );
        for problem in &outcome.problems {
            println!("          - {problem}");
        }
        for warning in &outcome.warnings {
            println!("          - warning: {warning}");
        }
    }
    let is_all_ok = outcomes.iter().all(Outcome::is_ok);
    // A failed step always counts at least one failure (see Outcome::step and
    // judge), so "0 failed" and a non-zero exit can never go together.
    debug_assert_eq!(is_all_ok, failed == 0);
    println!("{passed} passed, {failed} failed");
    Ok(if is_all_ok && failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn package_args(command: &mut Command, packages: &[&str]) {
    for package in packages {
        command.args(["-p", package]);
    }
}

fn host_steps(workspace: &Workspace, headers: &mut Headers) -> Vec<Outcome> {
    let mut outcomes = Vec::new();

    headers.next("formatting: cargo fmt --all -- --check");
    let mut fmt = tools::cargo();
    fmt.args(["fmt", "--all", "--", "--check"]);
    outcomes.push(Outcome::step("formatting", tools::run(&mut fmt)));

    let host = workspace.host_packages();
    headers.next(&format!("clippy, host crates: {}", host.join(", ")));
    let mut clippy = tools::cargo();
    clippy.arg("clippy");
    package_args(&mut clippy, &host);
    clippy.args(["--all-targets", "--", "-D", "warnings"]);
    outcomes.push(Outcome::step("clippy (host crates)", tools::run(&mut clippy)));

    let target = workspace.target_packages();
    headers.next(&format!("clippy, {TARGET} crates: {}", target.join(", ")));
    let result = tools::ensure_target().and_then(|()| {
        if target.is_empty() {
            // Without -p, cargo would lint the default members instead.
            return Ok(());
        }
        let mut clippy = tools::cargo();
        clippy.args(["clippy", "--profile", PROFILE, "--target", TARGET]);
        package_args(&mut clippy, &target);
        clippy.args(["--", "-D", "warnings"]);
        tools::run(&mut clippy)
    });
    outcomes.push(Outcome::step("clippy (target crates)", result));

    headers.next(&format!("host unit tests: {}", host.join(", ")));
    outcomes.push(host_tests(&host));
    outcomes
}

/// `cargo test` on the host crates, counting its tests as they pass by.
fn host_tests(packages: &[&str]) -> Outcome {
    let mut command = tools::cargo();
    command.arg("test");
    package_args(&mut command, packages);
    let mut outcome = Outcome::step("host unit tests", Ok(()));
    outcome.passed = 0;
    let shown = tools::describe(&command);
    println!("$ {shown}");
    let result = command
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot start `{shown}`: {err}"))
        .and_then(|mut child| {
            let stdout = child.stdout.take().expect("stdout is piped");
            // Read to the end whatever the bytes are: stopping early would
            // leave cargo blocked on a full pipe and this wait() hanging.
            let mut reader = BufReader::new(stdout);
            let mut buf = Vec::new();
            while matches!(reader.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
                let line = String::from_utf8_lossy(&buf);
                let line = line.trim_end();
                println!("{line}");
                if let Some(counts) = parse_cargo_test_line(line) {
                    outcome.passed += counts.passed;
                    outcome.failed += counts.failed;
                }
                buf.clear();
            }
            child.wait().map_err(|err| format!("`{shown}`: {err}"))
        });
    match result {
        Ok(status) if status.success() => {}
        Ok(status) => outcome.problems.push(format!("`{shown}` failed ({status})")),
        Err(err) => outcome.problems.push(err),
    }
    if !outcome.problems.is_empty() && outcome.failed == 0 {
        // It failed before any test could (a build error).
        outcome.failed = 1;
    }
    outcome
}

fn qemu_steps(workspace: &Workspace, opts: &TestOptions, headers: &mut Headers) -> Vec<Outcome> {
    headers.next("build the test image");
    let built = tools::ensure_qemu().and_then(|()| image::build(workspace, ImageKind::Test));
    let built = match built {
        Ok(built) if built.has_program(TEST_RUNNER) => built,
        Ok(_) => {
            let problem = format!(
                "the test image has no program `{TEST_RUNNER}` (a bin target of a package under tests/)"
            );
            return vec![Outcome::step("build the test image", Err(problem))];
        }
        Err(err) => return vec![Outcome::step("build the test image", Err(err))],
    };
    let mut outcomes = vec![Outcome::step("build the test image", Ok(()))];

    let smp_configs: Vec<u32> = match opts.smp {
        Some(smp) => vec![smp],
        None => TEST_SMP_CONFIGS.to_vec(),
    };
    let names: Vec<String> = smp_configs.iter().map(|smp| format!("smp{smp}")).collect();
    headers.next(&format!("boot the test image: {} (timeout {} s each)", names.join(", "), opts.timeout_s));
    let accel = qemu::choose_and_report_accel(opts.accel);
    let log_dir = workspace.target_dir.join("ktest");
    if let Err(err) = fs::create_dir_all(&log_dir) {
        let problem = format!("cannot create {}: {err}", log_dir.display());
        outcomes.push(Outcome::step("boots", Err(problem)));
        return outcomes;
    }
    for (smp, name) in smp_configs.into_iter().zip(names) {
        let config = QemuConfig {
            kernel: built.kernel.clone(),
            modules: built.modules.clone(),
            cmdline: TEST_KERNEL_CMDLINE.to_string(),
            smp,
            mem: qemu::DEFAULT_MEM.to_string(),
            accel,
            serial: SerialMode::Captured,
            is_gdb: false,
        };
        let log_path = log_dir.join(format!("{name}.log"));
        outcomes.push(boot(&name, &config, opts.timeout_s, &log_path));
    }
    outcomes.extend(unix_steps(workspace, opts, headers, &built, &log_dir));
    outcomes.push(bench_smoke(opts, headers));
    outcomes
}

/// The UNIX personality: `/bin/utest` under the shell on the test image,
/// then the shell scenarios.
fn unix_steps(
    workspace: &Workspace,
    opts: &TestOptions,
    headers: &mut Headers,
    built: &image::BuiltImage,
    log_dir: &Path,
) -> Vec<Outcome> {
    let smp_configs = unix_smp_configs(opts);
    let names: Vec<String> = smp_configs.iter().map(|smp| format!("unix smp{smp}")).collect();
    headers.next(&format!(
        "UNIX tests: /bin/{UNIX_TEST_PROGRAM} on {} (timeout {} s each)",
        names.join(", "),
        opts.timeout_s
    ));
    let mut outcomes = unix_boots(workspace, opts, built, log_dir);
    headers.next(&format!("shell scenarios: {} (one boot, timeout {} s)", scenarios::DIR, opts.timeout_s));
    outcomes.push(scenarios::run(workspace, opts, log_dir));
    outcomes
}

fn unix_smp_configs(opts: &TestOptions) -> Vec<u32> {
    match opts.smp {
        Some(smp) => vec![smp],
        None => UNIX_SMP_CONFIGS.to_vec(),
    }
}

/// `/bin/utest` as the batch command, once per CPU count, judged like the
/// test runner's boots: its protocol lines, its summary, and QEMU's
/// status, which is the session's (init powers off with it).
fn unix_boots(
    workspace: &Workspace,
    opts: &TestOptions,
    built: &image::BuiltImage,
    log_dir: &Path,
) -> Vec<Outcome> {
    if !built.has_program(UNIX_TEST_PROGRAM) {
        let problem = format!("the test image has no program `{UNIX_TEST_PROGRAM}` (tests/utest)");
        return vec![Outcome::step("UNIX tests", Err(problem))];
    }
    let mut outcomes = Vec::new();
    for smp in unix_smp_configs(opts) {
        let name = format!("unix smp{smp}");
        let run_opts = RunOptions { smp, accel: opts.accel, ..RunOptions::default() };
        let command = format!("/bin/{UNIX_TEST_PROGRAM}");
        match batch::prepare(workspace, &run_opts, &command, ImageKind::Test) {
            Ok(config) => {
                let log_path = log_dir.join(format!("unix-smp{smp}.log"));
                outcomes.push(boot(&name, &config, opts.timeout_s, &log_path));
            }
            Err(err) => outcomes.push(Outcome::step(&format!("boot {name}"), Err(err))),
        }
    }
    outcomes
}

/// `cargo xtask bench --quick`, Ridgeback and the Linux guest: passes when
/// every figure was measured, whatever its value (about 15 s once the
/// guest is cached; its first preparation downloads ~100 MB of Debian
/// packages, see docs/benchmarks.md).
fn bench_smoke(opts: &TestOptions, headers: &mut Headers) -> Outcome {
    headers.next("benchmark smoke test: cargo xtask bench --quick");
    let started = Instant::now();
    let result = crate::bench::smoke(opts.accel);
    let mut outcome = Outcome::step(&format!("bench --quick, {} s", started.elapsed().as_secs()), Ok(()));
    if let Err(problems) = result {
        outcome.passed = 0;
        outcome.failed = 1;
        outcome.problems = problems;
    }
    outcome
}

/// Where a line of QEMU output came from.
enum Stream {
    Serial,
    QemuStderr,
}

/// Forwards a pipe to the channel line by line. Bytes, not UTF-8: a guest
/// may print anything, and one bad byte must not end the capture.
fn spawn_reader(pipe: impl Read + Send + 'static, stream: Stream, tx: Sender<(Stream, String)>) {
    let is_serial = matches!(stream, Stream::Serial);
    thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                    let stream = if is_serial { Stream::Serial } else { Stream::QemuStderr };
                    if tx.send((stream, line)).is_err() {
                        break;
                    }
                }
            }
        }
    });
}

/// One boot: stream its serial output (prefixed with the configuration's
/// name) to the terminal and to `log_path`, parse it, judge it.
fn boot(name: &str, config: &QemuConfig, timeout_s: u64, log_path: &Path) -> Outcome {
    let row = format!("boot {name}");
    let command_line = match config.to_shell() {
        Ok(line) => line,
        Err(err) => return Outcome::step(&row, Err(err)),
    };
    println!("\n--- {name}: {command_line}");
    let mut log = match File::create(log_path) {
        Ok(file) => file,
        Err(err) => {
            return Outcome::step(&row, Err(format!("cannot create {}: {err}", log_path.display())));
        }
    };
    let _ = writeln!(log, "$ {command_line}");
    let mut command = match config.to_command() {
        Ok(command) => command,
        Err(err) => return Outcome::step(&row, Err(err)),
    };
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            return Outcome::step(&row, Err(format!("cannot start {}: {err}", qemu::QEMU_BINARY)));
        }
    };
    let (tx, rx) = mpsc::channel();
    spawn_reader(child.stdout.take().expect("piped"), Stream::Serial, tx.clone());
    spawn_reader(child.stderr.take().expect("piped"), Stream::QemuStderr, tx);

    let mut report = SerialReport::default();
    let mut last_stderr: Option<String> = None;
    let mut take = |(stream, line): (Stream, String)| match stream {
        Stream::Serial => {
            println!("[{name}] {line}");
            let _ = writeln!(log, "{line}");
            report.feed(&line);
        }
        Stream::QemuStderr => {
            println!("[{name}] qemu: {line}");
            let _ = writeln!(log, "qemu: {line}");
            last_stderr = Some(line);
        }
    };

    let deadline = started + Duration::from_secs(timeout_s);
    let end = match pump_until(&rx, deadline, &mut take) {
        // Both pipes closed: QEMU is exiting.
        Pumped::Closed => match qemu::wait_until(&mut child, Instant::now() + GRACE) {
            Some(status) => BootEnd::Exited(qemu::classify_exit(status.code())),
            None => BootEnd::TimedOut,
        },
        Pumped::Deadline => {
            let _ = child.kill();
            let _ = child.wait();
            // Keep what QEMU printed before it died.
            pump_until(&rx, Instant::now() + GRACE, &mut take);
            BootEnd::TimedOut
        }
    };

    let mut verdict = judge(&report, end, timeout_s);
    if let (BootEnd::Exited(QemuExit::Other(1)), Some(line)) = (end, &last_stderr) {
        verdict.problems.push(format!("QEMU said: {line}"));
    }
    let seconds = started.elapsed().as_secs();
    println!(
        "--- {name}: {} after {seconds} s; log: {}",
        if verdict.problems.is_empty() { "passed" } else { "FAILED" },
        log_path.display()
    );
    if !verdict.problems.is_empty() {
        verdict.problems.push(format!("serial log: {}", log_path.display()));
    }
    Outcome {
        name: format!("{row}, {seconds} s"),
        passed: verdict.passed,
        failed: verdict.failed,
        problems: verdict.problems,
        warnings: verdict.warnings,
    }
}

enum Pumped {
    /// Every sender is gone: both pipes reached end of file.
    Closed,
    Deadline,
}

fn pump_until<T>(rx: &Receiver<T>, deadline: Instant, take: &mut impl FnMut(T)) -> Pumped {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Pumped::Deadline;
        }
        match rx.recv_timeout(left) {
            Ok(item) => take(item),
            Err(RecvTimeoutError::Timeout) => return Pumped::Deadline,
            Err(RecvTimeoutError::Disconnected) => return Pumped::Closed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl SerialReport {
        fn parse(text: &str) -> SerialReport {
            let mut report = SerialReport::default();
            text.lines().for_each(|line| report.feed(line));
            report
        }
    }

    const PASSING_RUN: &str = "\
Ridgeback booting
ktest: start ipc::round_trip
ktest: ok ipc::round_trip
ktest: start vm::fault\r
some output of the test
ktest: ok vm::fault\r
ktest: summary 2 passed, 0 failed
";

    #[test]
    fn parses_a_passing_run() {
        let report = SerialReport::parse(PASSING_RUN);
        assert_eq!(report.passed, ["ipc::round_trip", "vm::fault"]);
        assert!(report.failed.is_empty());
        assert!(report.running.is_empty());
        assert_eq!(report.summary, Some(Counts { passed: 2, failed: 0 }));
        let verdict = judge(&report, BootEnd::Exited(QemuExit::Success), 300);
        assert_eq!(verdict, Verdict { passed: 2, failed: 0, problems: vec![], warnings: vec![] });
    }

    #[test]
    fn failed_tests_keep_names_with_colons() {
        let report = SerialReport::parse(
            "ktest: start sched::smp::wake\n\
             ktest: FAIL sched::smp::wake: expected 2 wake-ups, got 1\n\
             ktest: start bare\n\
             ktest: FAIL bare\n\
             ktest: summary 0 passed, 2 failed\n",
        );
        assert_eq!(
            report.failed,
            [
                ("sched::smp::wake".to_string(), "expected 2 wake-ups, got 1".to_string()),
                ("bare".to_string(), "(no reason given)".to_string()),
            ]
        );
        assert!(report.running.is_empty());
        let verdict = judge(&report, BootEnd::Exited(QemuExit::KernelFailure), 300);
        assert_eq!((verdict.passed, verdict.failed), (0, 2));
        assert!(verdict.problems.iter().any(|p| p.contains("sched::smp::wake failed: expected 2")));
        assert!(verdict.problems.iter().any(|p| p.contains("summary reports 2 failed")));
    }

    #[test]
    fn timeout_names_unfinished_tests() {
        let report = SerialReport::parse(
            "ktest: start a\nktest: ok a\nktest: start hangs\nktest: start also_started\n",
        );
        assert_eq!(report.running, ["hangs", "also_started"]);
        let verdict = judge(&report, BootEnd::TimedOut, 120);
        assert_eq!((verdict.passed, verdict.failed), (1, 2));
        let text = verdict.problems.join("\n");
        assert!(text.contains("timed out after 120 s"), "{text}");
        assert!(text.contains("test hangs started but never finished"), "{text}");
        assert!(text.contains("test also_started started but never finished"), "{text}");
        assert!(text.contains("no summary line"), "{text}");
    }

    #[test]
    fn panic_fails_even_with_a_clean_summary() {
        let report = SerialReport::parse(
            "ktest: summary 0 passed, 0 failed\nKERNEL PANIC at kernel/src/mm.rs:10: oops\n",
        );
        assert_eq!(report.panics.len(), 1);
        let verdict = judge(&report, BootEnd::Exited(QemuExit::KernelFailure), 300);
        assert_eq!(verdict.failed, 1, "a failed boot counts one failure");
        assert!(verdict.problems.iter().any(|p| p.starts_with("kernel panic: KERNEL PANIC at")));
    }

    #[test]
    fn success_needs_the_success_status() {
        let report = SerialReport::parse(PASSING_RUN);
        for end in [
            BootEnd::Exited(QemuExit::Other(0)),
            BootEnd::Exited(QemuExit::Other(1)),
            BootEnd::Exited(QemuExit::Signal),
            BootEnd::Exited(QemuExit::KernelFailure),
        ] {
            let verdict = judge(&report, end, 300);
            assert_eq!((verdict.passed, verdict.failed), (2, 1), "{end:?}");
            assert_eq!(verdict.problems.len(), 1, "{end:?}");
        }
    }

    #[test]
    fn success_status_without_summary_fails() {
        let report = SerialReport::parse("ktest: start a\nktest: ok a\n");
        let verdict = judge(&report, BootEnd::Exited(QemuExit::Success), 300);
        assert_eq!((verdict.passed, verdict.failed), (1, 1));
        assert!(verdict.problems[0].contains("no summary line"));
    }

    #[test]
    fn protocol_lines_must_start_the_line() {
        let report = SerialReport::parse("echo ktest: ok fake\n  ktest: FAIL indented: x\n");
        assert!(report.passed.is_empty());
        assert!(report.failed.is_empty());
    }

    #[test]
    fn summary_mismatch_and_malformed_lines_warn() {
        let report = SerialReport::parse(
            "ktest: ok a\nktest: summary lots passed\nktest: summary 3 passed, 0 failed\n",
        );
        assert_eq!(report.malformed, ["ktest: summary lots passed"]);
        let verdict = judge(&report, BootEnd::Exited(QemuExit::Success), 300);
        assert!(verdict.problems.is_empty());
        assert_eq!(verdict.warnings.len(), 2, "{:?}", verdict.warnings);
    }

    /// A minimal Multiboot1 (a.out kludge) ELF64 kernel: 32-bit code that
    /// prints `text` on COM1, then writes `exit_code` to isa-debug-exit, or
    /// halts forever when there is none. It stands in for the real kernel so
    /// that the runner, the QEMU command line and the Multiboot check are
    /// exercised against QEMU itself.
    fn standin_kernel(text: &str, exit_code: Option<u32>) -> Vec<u8> {
        const BASE: u32 = 0x10_0000; // physical load address; file offset 0x1000
        const ENTRY: u32 = BASE + 0x20; // right after the Multiboot header
        const MESSAGE: u32 = BASE + 0x60;
        let mut code = vec![0x66, 0xba, 0xf8, 0x03]; // mov dx, 0x3f8
        code.push(0xbe); // mov esi, MESSAGE
        code.extend(MESSAGE.to_le_bytes());
        // lodsb; test al, al; jz +3; out dx, al; jmp back to lodsb
        code.extend([0xac, 0x84, 0xc0, 0x74, 0x03, 0xee, 0xeb, 0xf8]);
        match exit_code {
            Some(exit) => {
                code.extend([0x66, 0xba, 0xf4, 0x00, 0xb8]); // mov dx, 0xf4; mov eax, exit
                code.extend(exit.to_le_bytes());
                code.push(0xef); // out dx, eax
            }
            None => code.extend([0x90; 10]),
        }
        code.extend([0xf4, 0xeb, 0xfd]); // hlt; jmp hlt

        let mut image = vec![0u8; 0x60];
        let flags = 1u32 << 16;
        let header = [
            crate::multiboot::MAGIC,
            flags,
            0u32.wrapping_sub(crate::multiboot::MAGIC).wrapping_sub(flags),
            BASE, // header_addr
            BASE, // load_addr
            0,    // load_end_addr: to the end of the file
            0,    // bss_end_addr: no BSS
            ENTRY,
        ];
        for (i, word) in header.iter().enumerate() {
            image[4 * i..4 * i + 4].copy_from_slice(&word.to_le_bytes());
        }
        image[0x20..0x20 + code.len()].copy_from_slice(&code);
        image.extend(text.as_bytes());
        image.push(0);

        let mut elf = vec![0u8; 0x1000];
        elf[0..8].copy_from_slice(b"\x7fELF\x02\x01\x01\x00");
        elf[0x10..0x12].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        elf[0x12..0x14].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
        elf[0x14..0x18].copy_from_slice(&1u32.to_le_bytes());
        elf[0x18..0x20].copy_from_slice(&u64::from(ENTRY).to_le_bytes());
        elf[0x20..0x28].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        elf[0x34..0x36].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        elf[0x36..0x38].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
        elf[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
        let phdr = 64;
        elf[phdr..phdr + 4].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
        elf[phdr + 4..phdr + 8].copy_from_slice(&7u32.to_le_bytes()); // RWX
        let len = image.len() as u64;
        for (at, value) in
            [(8, 0x1000), (16, BASE.into()), (24, BASE.into()), (32, len), (40, len), (48, 0x1000)]
        {
            elf[phdr + at..phdr + at + 8].copy_from_slice(&u64::to_le_bytes(value));
        }
        elf.extend(image);
        elf
    }

    /// Boots a stand-in kernel through [`boot`], as `cargo xtask test` does.
    fn boot_standin(name: &str, text: &str, exit_code: Option<u32>, timeout_s: u64) -> Outcome {
        let dir = std::env::temp_dir().join(format!("xtask-boot-{}-{name}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let kernel = dir.join("kernel");
        let bytes = standin_kernel(text, exit_code);
        crate::multiboot::check_kernel(&bytes).expect("the stand-in passes the Multiboot check");
        fs::write(&kernel, bytes).unwrap();
        let module = dir.join("testrunner");
        fs::write(&module, b"module contents").unwrap();
        let config = QemuConfig {
            kernel,
            modules: vec![module],
            cmdline: TEST_KERNEL_CMDLINE.to_string(),
            smp: 1,
            mem: qemu::DEFAULT_MEM.to_string(),
            accel: qemu::Accel::Tcg,
            serial: SerialMode::Captured,
            is_gdb: false,
        };
        let outcome = boot(name, &config, timeout_s, &dir.join("serial.log"));
        let _ = fs::remove_dir_all(&dir);
        outcome
    }

    fn has_qemu() -> bool {
        let path_var = std::env::var_os("PATH").unwrap_or_default();
        let is_present = tools::find_on_path(qemu::QEMU_BINARY, &path_var).is_some();
        if !is_present {
            eprintln!("skipped: {} is not installed", qemu::QEMU_BINARY);
        }
        is_present
    }

    #[test]
    fn qemu_boot_of_a_passing_standin() {
        if !has_qemu() {
            return;
        }
        let text = "ktest: start standin\nktest: ok standin\nktest: summary 1 passed, 0 failed\n";
        let outcome = boot_standin("pass", text, Some(abi::qemu_exit::SUCCESS_CODE), 60);
        assert!(outcome.is_ok(), "{:?}", outcome.problems);
        assert_eq!((outcome.passed, outcome.failed), (1, 0));
    }

    #[test]
    fn qemu_boot_of_a_failing_standin() {
        if !has_qemu() {
            return;
        }
        let text = "ktest: start a\nktest: FAIL a: boom\nKERNEL PANIC: test\n";
        let outcome = boot_standin("fail", text, Some(abi::qemu_exit::FAILURE_CODE), 60);
        assert_eq!((outcome.passed, outcome.failed), (0, 1));
        let problems = outcome.problems.join("\n");
        assert!(problems.contains("the kernel reported failure (QEMU status 35)"), "{problems}");
        assert!(problems.contains("test a failed: boom"), "{problems}");
        assert!(problems.contains("kernel panic: KERNEL PANIC: test"), "{problems}");
        assert!(problems.contains("no summary line"), "{problems}");
    }

    #[test]
    fn qemu_boot_of_a_hanging_standin_times_out() {
        if !has_qemu() {
            return;
        }
        let started = Instant::now();
        let outcome = boot_standin("hang", "ktest: start hangs\n", None, 2);
        assert!(started.elapsed() < Duration::from_secs(15), "QEMU was not killed");
        let problems = outcome.problems.join("\n");
        assert!(problems.contains("timed out after 2 s"), "{problems}");
        assert!(problems.contains("test hangs started but never finished"), "{problems}");
        assert_eq!(outcome.failed, 1);
    }

    /// The UNIX test boot alone (slow: `cargo test -p xtask -- --ignored
    /// boot_the_unix_tests --nocapture`), on 2 CPUs.
    #[test]
    #[ignore]
    fn boot_the_unix_tests() {
        let workspace = Workspace::load().unwrap();
        let built = image::build(&workspace, ImageKind::Test).unwrap();
        let log_dir = workspace.target_dir.join("ktest");
        fs::create_dir_all(&log_dir).unwrap();
        let opts = TestOptions { smp: Some(2), ..TestOptions::default() };
        for outcome in unix_boots(&workspace, &opts, &built, &log_dir) {
            assert!(outcome.is_ok(), "{}: {:?}", outcome.name, outcome.problems);
        }
    }

    #[test]
    fn counts() {
        assert_eq!(parse_counts("3 passed, 1 failed"), Some(Counts { passed: 3, failed: 1 }));
        assert_eq!(parse_counts(" 3 passed, 0 failed, 2 skipped"), Some(Counts { passed: 3, failed: 0 }));
        assert_eq!(parse_counts("3 passed"), None);
        assert_eq!(parse_counts("x passed, 0 failed"), None);
    }

    #[test]
    fn cargo_test_result_lines() {
        assert_eq!(
            parse_cargo_test_line(
                "test result: ok. 12 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s"
            ),
            Some(Counts { passed: 12, failed: 0 })
        );
        assert_eq!(
            parse_cargo_test_line("test result: FAILED. 4 passed; 1 failed; 0 ignored; 0 measured"),
            Some(Counts { passed: 4, failed: 1 })
        );
        assert_eq!(parse_cargo_test_line("test foo ... ok"), None);
    }
}
