//! `cargo xtask test`: the whole test suite, exactly what CI runs.
//!
//! Steps, each under its own header:
//! 1. `cargo fmt --all -- --check`;
//! 2. clippy with `-D warnings`, for the host crates and for the target crates;
//! 3. the host crates' unit tests (after installing e2fsprogs, the oracle
//!    of `fs-ext2`'s tests, when it is missing), then those of the target
//!    crates whose library is pure ([`HOST_TESTED_LIBS`]: `cargo test -p
//!    NAME --lib`);
//! 4. build the test image and boot it once per configuration (1, 2 and 4
//!    CPUs) with `init=testrunner`, each boot under a timeout;
//! 5. the UNIX personality's tests: the test image booted normally (init
//!    from `etc/inittab`) with `/bin/utest` as the batch command
//!    (`tests/utest`, the same line protocol as the test runner), on 1 and
//!    2 CPUs; its RAM disk tests once more in a boot with
//!    `ramdisk.mode=pddriver` (the RAM disk's other mode), its pipe
//!    tests once more under the `small` and `big` pipe designs (one boot,
//!    `pipe=small`), and its file tests once more with
//!    `monitor.files=per-file`; then one boot of the normal image running
//!    every shell scenario of `tests/unix` ([`scenarios`]); then one boot
//!    with QEMU's user network in which the host's `curl`, a socket client
//!    and Python's `http.server` talk to Ridgeback's `httpd`, `nc` and
//!    `fetch` ([`net`]); then one boot running the scripts of `tests/sh`,
//!    whose output and status must be what the host's `dash` gives
//!    ([`shcorpus`], the shell's oracle); then one boot running the Linux
//!    programs of `tests/linux` and Debian's busybox under the Linux
//!    server, whose output must be the host's ([`linux`]);
//! 6. the disk file system's tests ([`disk`]): ext2 images made and
//!    checked on the host with e2fsprogs around batch boots of
//!    `/bin/disktest` (a workload, `nbuf=1`, a corrupt image, the disk's
//!    driver killed under writes, power cuts);
//! 7. the benchmark smoke test, `cargo xtask bench --quick` (Ridgeback and
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
//! its `ktest: ok` or `ktest: FAIL`. The parser ([`verdict::SerialReport`])
//! and the verdict ([`verdict::judge`]) are pure functions, unit-tested; the
//! protocol's line prefixes come from `abi::test_protocol`, shared with the
//! test runner.
//!
//! Counting for the last line: every in-QEMU test and every host unit test
//! counts one; a step with no finer count (fmt, each clippy, the build)
//! counts one; a boot that failed without a failed test to show for it
//! (a timeout, a panic, a bad exit status, a missing summary) counts one
//! failure.
//!
//! Map: this file is the command (its options, the steps, the final
//! table); below it, [`verdict`] (one boot's serial output, parsed and
//! judged: pure), [`boot`] (one captured boot under a timeout),
//! [`scenarios`] (the shell scenarios, one batch boot), and [`outcome`]
//! (a row of the final table), which the others produce. The submodules
//! import one another downwards only, never this file.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use crate::batch;
use crate::image::{self, ImageKind, PROFILE, TARGET, TEST_KERNEL_CMDLINE, TEST_RUNNER, Workspace};
use crate::qemu::{self, AccelChoice, DiskChoice, QemuConfig, SerialMode};
use crate::run::RunOptions;
use crate::tools::{self, Result};

mod boot;
mod disk;
mod forged;
mod fuzz;
mod linux;
mod memory;
mod net;
mod outcome;
mod scenarios;
pub(crate) mod serial;
mod shcorpus;
mod terminal;
mod verdict;
mod wire;

use boot::{DEFAULT_TIMEOUT_S, boot};
use outcome::Outcome;
use verdict::{Declared, parse_cargo_test_line};

/// Guest CPU counts of the test configurations: uniprocessor, the default,
/// and more CPUs than the CI host has cores.
const TEST_SMP_CONFIGS: [u32; 3] = [1, 2, 4];
/// The tests each test program declares (issue 16; `verdict::Declared`).
const KTEST_DECLARED: &str = "tests/ktest/declared-tests.txt";
const UTEST_DECLARED: &str = "tests/utest/declared-tests.txt";
/// The UNIX test program (a `bin` under `tests/`) and its CPU counts.
pub const UNIX_TEST_PROGRAM: &str = "utest";
const UNIX_SMP_CONFIGS: [u32; 2] = [1, 2];
/// The boot option of the extra UNIX boot, and the tests it runs.
const PDDRIVER_CMDLINE: &str = "ramdisk.mode=pddriver";
const RAMDISK_TESTS: &str = "ramdisk::";

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
    /// `--power-cuts N`: the disk's power-cut test at N cut points instead
    /// of CI's few.
    pub power_cuts: Option<usize>,
}

impl Default for TestOptions {
    fn default() -> Self {
        TestOptions {
            parts: Parts::All,
            smp: None,
            timeout_s: DEFAULT_TIMEOUT_S,
            accel: AccelChoice::Auto,
            power_cuts: None,
        }
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
    let mut headers = Headers { done: 0, total: 5 * usize::from(is_host) + 9 * usize::from(is_qemu) };
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
    let result = tools::ensure_target(TARGET).and_then(|()| {
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
    // fs-ext2's tests check images with e2fsprogs; without it they skip,
    // and the table says so.
    let e2fsprogs = tools::ensure_e2fsprogs();
    // xtask's own tests boot a stand-in kernel in QEMU; install it once
    // here rather than from tests running in parallel.
    let qemu = qemu::ensure_qemu();
    let mut host_outcome = host_tests("host unit tests", &host, &[]);
    if let Err(err) = e2fsprogs {
        host_outcome.warnings.push(format!("fs-ext2's e2fsprogs tests skipped: {err}"));
    }
    if let Err(err) = qemu {
        host_outcome.problems.push(format!("QEMU could not be installed: {err}"));
    }
    outcomes.push(host_outcome);

    let libs: Vec<&str> =
        HOST_TESTED_LIBS.iter().copied().filter(|name| workspace.target_packages().contains(name)).collect();
    headers.next(&format!("host unit tests of target crates' libraries: {}", libs.join(", ")));
    outcomes.push(if libs.is_empty() {
        // Without -p, cargo would test the default members again.
        Outcome::step("host unit tests (libraries)", Ok(()))
    } else {
        host_tests("host unit tests (libraries)", &libs, &["--lib"])
    });
    outcomes
}

/// Target crates whose library is pure and builds on the host, where its
/// unit tests run (`cargo test -p NAME --lib`); their programs do not.
/// `coreutils`: the utilities' option parsing and formats (`dd`, `cmp`,
/// `wc`, `ls -l`, ...); `netutils`: URLs and HTTP heads of `httpd` and
/// `fetch`; `login`: the user database and the password check of `id`,
/// `su` and `login`.
const HOST_TESTED_LIBS: [&str; 3] = ["coreutils", "netutils", "login"];

/// `cargo test` on `packages` (with `extra_args`), counting its tests as
/// they pass by.
fn host_tests(name: &str, packages: &[&str], extra_args: &[&str]) -> Outcome {
    let mut command = tools::cargo();
    command.arg("test");
    package_args(&mut command, packages);
    command.args(extra_args);
    let mut outcome = Outcome::step(name, Ok(()));
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
    let built = qemu::ensure_qemu().and_then(|()| image::build(workspace, ImageKind::Test));
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
            disk: None,
            // A virtio-net card no driver takes (init=testrunner starts
            // none): the MSI-X test's function (testrunner/devices.rs).
            net: qemu::NetChoice::default(),
        };
        let log_path = log_dir.join(format!("{name}.log"));
        // Every test the runner declares must report (issue 16).
        match Declared::load(&workspace.root.join(KTEST_DECLARED)) {
            Ok(declared) => outcomes.push(boot(&name, &config, opts.timeout_s, &log_path, Some(&declared))),
            Err(err) => outcomes.push(Outcome::step(&format!("boot {name}"), Err(err))),
        }
    }
    outcomes.extend(unix_steps(workspace, opts, headers, &built, &log_dir));
    outcomes.push(fuzz::run(workspace, opts.smp, opts.accel, opts.timeout_s, &log_dir));
    headers.next(&format!(
        "the disk file system: /bin/{} workloads on ext2 images, checked with e2fsck and debugfs; power cuts",
        disk::PROGRAM
    ));
    let smp = opts.smp.unwrap_or(qemu::DEFAULT_SMP);
    outcomes.extend(disk::run(workspace, opts.accel, smp, opts.timeout_s, &log_dir, opts.power_cuts));
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
        "UNIX tests: /bin/{UNIX_TEST_PROGRAM} on {}, and its {RAMDISK_TESTS} tests with {PDDRIVER_CMDLINE} (timeout {} s each)",
        names.join(", "),
        opts.timeout_s
    ));
    let mut outcomes = unix_boots(workspace, opts, built, log_dir);
    headers.next(&format!("shell scenarios: {} (one boot, timeout {} s)", scenarios::DIR, opts.timeout_s));
    // A fresh disk: the `blockdev` scenario writes /dev/vda.
    let disk = match fresh_disk(&log_dir.join("disk-scenarios.img")) {
        Ok(d) => d,
        Err(err) => {
            outcomes.push(Outcome::step("shell scenarios", Err(err)));
            return outcomes;
        }
    };
    let run_opts = RunOptions {
        smp: opts.smp.unwrap_or(qemu::DEFAULT_SMP),
        accel: opts.accel,
        disk,
        ..RunOptions::default()
    };
    outcomes.push(scenarios::run(workspace, &run_opts, opts.timeout_s, log_dir));
    headers.next(&format!(
        "network against the host's curl, socket client and Python http.server (one boot, timeout {} s)",
        opts.timeout_s
    ));
    outcomes.push(net::run(workspace, run_opts.smp, opts.accel, opts.timeout_s, log_dir));
    headers.next(&format!(
        "malformed frames from the wire, injected through a -netdev dgram peer (one boot, timeout {} s)",
        opts.timeout_s
    ));
    outcomes.push(wire::run(workspace, run_opts.smp, opts.accel, opts.timeout_s, log_dir));
    headers.next(&format!(
        "the dash oracle: {} under Ridgeback's sh and the host's dash (one boot)",
        shcorpus::DIR
    ));
    let oracle_opts = RunOptions { disk: DiskChoice::None, ..run_opts };
    outcomes.push(shcorpus::run(workspace, &oracle_opts, opts.timeout_s, log_dir));
    // The low-memory boot (issue 16): shown under the step above.
    outcomes.push(memory::run(workspace, oracle_opts.smp, &oracle_opts, opts.timeout_s, log_dir));
    // The console and the terminal restarted mid-session (issue 16): shown
    // under the same step.
    outcomes.push(terminal::run(workspace, oracle_opts.smp, opts.accel, opts.timeout_s, log_dir));
    // Forged session markers (issue 16): shown under the same step.
    outcomes.push(forged::run(workspace, &oracle_opts, opts.timeout_s, log_dir));
    headers.next(&format!(
        "Linux programs: {} (musl-gcc -static) and Debian's busybox-static under the Linux server, against the host (one boot)",
        linux::DIR
    ));
    outcomes.push(linux::run(workspace, &oracle_opts, opts.timeout_s, log_dir));
    outcomes
}

/// A zero-filled test disk image at `path`, made anew: each UNIX test and
/// scenario boot has its own (never the scratch image of `cargo xtask
/// run`, which may be open in another QEMU: QEMU locks an image against a
/// second writer). The kernel-test boots attach no disk.
fn fresh_disk(path: &Path) -> std::result::Result<DiskChoice, String> {
    let _ = fs::remove_file(path);
    qemu::ensure_disk_image(path, TEST_DISK_BYTES)?;
    Ok(DiskChoice::Image(path.to_path_buf()))
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
    // (name, CPUs, kernel options, command, whether utest writes /dev/vda)
    let mut boots: Vec<(String, u32, String, String, bool)> = unix_smp_configs(opts)
        .into_iter()
        .map(|smp| (format!("unix smp{smp}"), smp, String::new(), format!("/bin/{UNIX_TEST_PROGRAM}"), true))
        .collect();
    // The RAM disk's other mode is a boot option: its tests once more,
    // with /dev/ram0 in PDDRIVER mode, on one CPU (where "PDDRIVER holds
    // the CPU" is measured) unless --smp says otherwise.
    let smp = opts.smp.unwrap_or(1);
    boots.push((
        format!("unix smp{smp} {PDDRIVER_CMDLINE}"),
        smp,
        PDDRIVER_CMDLINE.to_string(),
        format!("/bin/{UNIX_TEST_PROGRAM} {RAMDISK_TESTS}"),
        false,
    ));
    // The other two pipe designs ([`PIPE_DESIGNS_CMDLINE`]).
    let smp = opts.smp.unwrap_or(qemu::DEFAULT_SMP);
    boots.push((
        format!("unix smp{smp} pipe=small,big"),
        smp,
        PIPE_DESIGNS_CMDLINE.to_string(),
        format!("/bin/{UNIX_TEST_PROGRAM} --modes small,big pipe::"),
        false,
    ));
    // Ridge's file manager per open file ([`PER_FILE_CMDLINE`]).
    boots.push((
        format!("unix smp{smp} per-file"),
        smp,
        PER_FILE_CMDLINE.to_string(),
        format!("/bin/{UNIX_TEST_PROGRAM} {PER_FILE_TESTS}"),
        false,
    ));
    // The network server's other mode (`net=classic`, issue 13): the
    // socket tests again with every read and write under the global
    // lock, and the bad boot options it must report ([`NET_WARNINGS`]).
    boots.push((
        format!("unix smp{smp} net=classic"),
        smp,
        NET_CLASSIC_CMDLINE.to_string(),
        format!("/bin/{UNIX_TEST_PROGRAM} net::"),
        false,
    ));
    boots.push((
        "unix smp1 net=fast".to_string(),
        1,
        NET_BAD_MODE_CMDLINE.to_string(),
        format!("/bin/{UNIX_TEST_PROGRAM} net::lock_statistics_and_queued_writes"),
        false,
    ));
    let net_warnings: Vec<(String, &str)> = vec![
        (format!("unix smp{smp} net=classic"), NET_WARNINGS[0]),
        ("unix smp1 net=fast".to_string(), NET_WARNINGS[1]),
    ];
    for (name, smp, cmdline, command, writes_disk) in boots {
        // A fresh disk for each boot that writes it: utest's `blk::`
        // tests write to /dev/vda, and the image is checked afterwards.
        let disk_path = log_dir.join(format!("disk-unix-smp{smp}.img"));
        let disk = if writes_disk {
            match fresh_disk(&disk_path) {
                Ok(d) => d,
                Err(err) => {
                    outcomes.push(Outcome::step(&format!("boot {name}"), Err(err)));
                    continue;
                }
            }
        } else {
            DiskChoice::None
        };
        let run_opts = RunOptions { smp, accel: opts.accel, disk, cmdline, ..RunOptions::default() };
        match batch::prepare(workspace, &run_opts, &command, ImageKind::Test) {
            Ok(config) => {
                let log_path = log_dir.join(format!("{}.log", name.replace([' ', '=', '.'], "-")));
                // The declared tests this command selects must report; the
                // `--modes` boot renames its tests (`[MODE] NAME`) and is
                // checked by its summary only.
                let words: Vec<&str> = command.split_whitespace().skip(1).collect();
                let declared = match Declared::load(&workspace.root.join(UTEST_DECLARED)) {
                    Ok(d) if !words.contains(&"--modes") => Some(d.selected_by(&words)),
                    Ok(_) => None,
                    Err(err) => {
                        outcomes.push(Outcome::step(&format!("boot {name}"), Err(err)));
                        continue;
                    }
                };
                outcomes.push(boot(&name, &config, opts.timeout_s, &log_path, declared.as_ref()));
                if writes_disk {
                    let check = check_disk_pattern(&disk_path);
                    outcomes.push(Outcome::step(
                        &format!("{name}: the disk image holds what utest wrote"),
                        check,
                    ));
                }
            }
            Err(err) => outcomes.push(Outcome::step(&format!("boot {name}"), Err(err))),
        }
    }
    for (name, warning) in net_warnings {
        let log_path = log_dir.join(format!("{}.log", name.replace([' ', '=', '.'], "-")));
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let check = if log.contains(warning) {
            Ok(())
        } else {
            Err(format!("the console of `{name}` never says `{warning}` (log: {})", log_path.display()))
        };
        outcomes.push(Outcome::step(&format!("{name}: the bad network option is reported"), check));
    }
    outcomes
}

/// `net=classic` with a CPU that does not exist: the server says so and
/// designates the last CPU.
const NET_CLASSIC_CMDLINE: &str = "net=classic net.cpu=99";
/// A mode that does not exist: the server says so and runs `scalable`.
const NET_BAD_MODE_CMDLINE: &str = "net=fast";
/// What the network server prints for those two command lines.
const NET_WARNINGS: [&str; 2] =
    ["net: net.cpu=99 is not a CPU", "net: net=fast is not classic or scalable; using scalable"];

/// The boot option of Ridge's file manager per open file, and the utest
/// tests that run again under it: file data through leases and the file
/// calls whose answers do not depend on when the data reaches memfs
/// (`stat` by name sees a per-file manager's writes only after the last
/// close, so the tests that compare `stat` with `fstat` stay shared-only).
const PER_FILE_CMDLINE: &str = "monitor.files=per-file";
const PER_FILE_TESTS: &str = "files:: fs::create_write_read fs::dev_null fs::o_append fs::o_trunc fs::dup fs::fork fs::bad_descriptors";

/// The pipe designs the UNIX boots do not run (they run the default,
/// `loan`): one boot with this on the command line, whose `utest --modes
/// small,big pipe::` runs every pipe test under `small`, then switches to
/// `big` at run time (seed 002's three designs, issue 11) and runs them
/// again.
const PIPE_DESIGNS_CMDLINE: &str = "pipe=small";

/// Size of the disks attached to the UNIX test and scenario boots
/// (utest's `blk::` tests need the pattern's megabyte and a few more).
const TEST_DISK_BYTES: u64 = 16 << 20;

/// The ground truth of the block tests: after the boot, the image file
/// itself must hold the pattern `utest` wrote through /dev/vda
/// (`abi::test_protocol::disk_pattern_byte`), whatever the driver said.
fn check_disk_pattern(image: &Path) -> std::result::Result<(), String> {
    let bytes = fs::read(image).map_err(|e| format!("cannot read {}: {e}", image.display()))?;
    let want_len = abi::test_protocol::DISK_PATTERN_BYTES as usize;
    if bytes.len() < want_len {
        return Err(format!("{} holds {} bytes, fewer than the pattern", image.display(), bytes.len()));
    }
    match (0..want_len).find(|&i| bytes[i] != abi::test_protocol::disk_pattern_byte(i as u64)) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{}: byte {i} (block {}) is {:#04x}, utest wrote {:#04x}",
            image.display(),
            i / 512,
            bytes[i],
            abi::test_protocol::disk_pattern_byte(i as u64)
        )),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disk_pattern_check_finds_a_wrong_byte() {
        let path = std::env::temp_dir().join(format!("xtask-pattern-{}.img", std::process::id()));
        let n = abi::test_protocol::DISK_PATTERN_BYTES as usize;
        let mut bytes: Vec<u8> = (0..n as u64).map(abi::test_protocol::disk_pattern_byte).collect();
        bytes.extend_from_slice(&[0; 512]);
        fs::write(&path, &bytes).unwrap();
        assert_eq!(check_disk_pattern(&path), Ok(()));
        bytes[3 * 512 + 9] ^= 1;
        fs::write(&path, &bytes).unwrap();
        let why = check_disk_pattern(&path).unwrap_err();
        assert!(why.contains("byte 1545 (block 3)"), "{why}");
        fs::write(&path, &bytes[..100]).unwrap();
        assert!(check_disk_pattern(&path).is_err(), "a short image");
        fs::remove_file(&path).unwrap();
    }

    /// The disk tests alone (slow: `cargo test -p xtask -- --ignored
    /// boot_the_disk_tests --nocapture`).
    #[test]
    #[ignore]
    fn boot_the_disk_tests() {
        let workspace = Workspace::load().unwrap();
        image::build(&workspace, ImageKind::Test).unwrap();
        let log_dir = workspace.target_dir.join("ktest");
        fs::create_dir_all(&log_dir).unwrap();
        for outcome in disk::run(&workspace, AccelChoice::Auto, 2, 300, &log_dir, None) {
            assert!(outcome.is_ok(), "{}: {:?}", outcome.name, outcome.problems);
        }
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
}
