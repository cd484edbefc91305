//! One boot's serial output, read and judged (pure): the test protocol's
//! lines (`abi::test_protocol`, shared with the test runner and `utest`),
//! the kernel's panic marker, and how QEMU ended, turned into a
//! [`Verdict`]; also the `test result:` lines of `cargo test`.
//!
//! What it is not: the boot itself (`boot.rs` feeds these lines as they
//! come) nor the final table (`outcome.rs`).
//!
//! Invariant: a boot fails when QEMU did not exit with the success status,
//! when the kernel panicked, when a test failed or never finished, or when
//! no summary line with 0 failed was printed; a failed boot always counts
//! at least one failure.

use abi::test_protocol::{FAIL, OK, START, SUMMARY};

use crate::qemu::{self, EndFacts, QemuExit};

/// What the kernel prints when it panics.
const PANIC_MARKER: &str = "KERNEL PANIC";

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
    /// How the guest said it ended, for the words of a failed end.
    pub end: EndFacts,
}

impl SerialReport {
    /// Takes one line of serial output. Protocol lines must start the line:
    /// the test runner prints each as one write, so a prefix anywhere else
    /// is someone else's text.
    pub fn feed(&mut self, line: &str) {
        let line = line.trim_end();
        self.end.feed(line);
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
        BootEnd::Exited(other) => problems.push(qemu::describe_end(other, &report.end)),
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

/// The tests an image declares (a `declared-tests.txt` beside its test
/// program: one name per line, `#` comments) that one boot must see
/// report, `ok` or `FAIL` (issue 16: a test dropped from a runner's list
/// vanished unnoticed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared {
    /// Where the list came from, for the messages.
    pub source: String,
    pub names: Vec<String>,
}

impl Declared {
    /// Parse the text of a declared-tests file.
    pub fn parse(source: &str, text: &str) -> Declared {
        let names = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(String::from)
            .collect();
        Declared { source: source.to_string(), names }
    }

    /// Read the declared-tests file at `path`.
    pub fn load(path: &std::path::Path) -> Result<Declared, String> {
        let text =
            std::fs::read_to_string(path).map_err(|err| format!("cannot read {}: {err}", path.display()))?;
        Ok(Declared::parse(&path.display().to_string(), &text))
    }

    /// The declared tests a run of the program selects with `filters`
    /// (name prefixes, as `utest PREFIX...` takes them; none: all).
    pub fn selected_by(&self, filters: &[&str]) -> Declared {
        let names = self
            .names
            .iter()
            .filter(|n| filters.is_empty() || filters.iter().any(|f| n.starts_with(f)))
            .cloned()
            .collect();
        Declared { source: self.source.clone(), names }
    }

    /// Add to `verdict` a failure for each declared test that did not
    /// report, and a warning for each test that reported undeclared (a new
    /// test not yet in the list: worth adding, not a failure).
    pub fn check(&self, report: &SerialReport, verdict: &mut Verdict) {
        let reported = |name: &str| {
            report.passed.iter().any(|n| n == name) || report.failed.iter().any(|(n, _)| n == name)
        };
        for name in self.names.iter().filter(|n| !reported(n)) {
            verdict
                .problems
                .push(format!("declared test {name} did not report (declared in {})", self.source));
            verdict.failed += 1;
        }
        let all_reported = report.passed.iter().chain(report.failed.iter().map(|(n, _)| n));
        for name in all_reported.filter(|n| !self.names.contains(n)) {
            verdict.warnings.push(format!("test {name} reported but is not declared in {}", self.source));
        }
    }
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
    fn a_declared_test_that_did_not_report_fails_the_boot() {
        let declared = Declared::parse("list", "# comment\n\nipc::round_trip\nvm::fault\nvm::gone\n");
        assert_eq!(declared.names, ["ipc::round_trip", "vm::fault", "vm::gone"]);
        let report = SerialReport::parse(PASSING_RUN);
        let mut verdict = judge(&report, BootEnd::Exited(QemuExit::Success), 300);
        assert!(verdict.problems.is_empty(), "{:?}", verdict.problems);
        declared.check(&report, &mut verdict);
        assert_eq!(verdict.problems, ["declared test vm::gone did not report (declared in list)"]);
        assert_eq!(verdict.failed, 1);
    }

    #[test]
    fn an_undeclared_test_is_a_warning_and_filters_select_by_prefix() {
        let declared = Declared::parse("list", "ipc::round_trip\nfs::open\n");
        let report = SerialReport::parse(PASSING_RUN);
        let mut verdict = judge(&report, BootEnd::Exited(QemuExit::Success), 300);
        declared.selected_by(&["ipc::"]).check(&report, &mut verdict);
        assert!(verdict.problems.is_empty(), "{:?}", verdict.problems);
        assert_eq!(verdict.warnings, ["test vm::fault reported but is not declared in list"]);
        assert_eq!(declared.selected_by(&[]).names.len(), 2);
    }

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
