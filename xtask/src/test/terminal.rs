//! The console and the terminal restart without ending the session (issue
//! 16; docs/reliability.md, "The console and the terminal"): one batch
//! boot whose script, as root, ends the terminal manager and the console
//! driver with `service kill` between lines it reads from the terminal,
//! while this test types those lines into the serial console (QEMU's
//! standard input), as a person at the console would.
//!
//! The script (`SCRIPT`) prints a marker before each `read`; the test
//! types a line only once it has seen the marker and init's line saying
//! that the instance killed just before has been started again
//! ([`PLAN`]), so every line is typed to the new instance. The third kill
//! comes from a background job while the shell waits in `read`: that read
//! was in flight on the old terminal manager and must be carried to the
//! new one. Then `/bin/ttyhold` (tests/ttyhold, so the test image) makes
//! the terminal manager die at every start until init gives it up (and
//! finds the console driver refusing it the typed input meanwhile), says
//! so through the kernel's log, and has it started again. It passes when every line typed was read by the same shell
//! (its pid unchanged), the output after each restart appeared, and the
//! session ended with status 0 ([`judge`]).
//!
//! What is pure here (the plan's next step and the judge) is unit-tested;
//! every wait is bounded by the step's timeout; nothing measures speed.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::outcome::Outcome;
use super::serial;
use crate::batch;
use crate::image::{ImageKind, Workspace};
use crate::qemu::{self, AccelChoice, DiskChoice, NetChoice};
use crate::run::RunOptions;

/// The session: four reads from the terminal, each after a kill (the
/// last after the terminal was given up and started again).
const SCRIPT: &str = "\
echo \"restart-test: shell $$\"
service kill tty
echo 'restart-test: type 1'
read one
echo \"restart-test: read 1 [$one]\"
service kill console
echo 'restart-test: type 2'
read two
echo \"restart-test: read 2 [$two]\"
(sleep 1; service kill tty) &
echo 'restart-test: type 3'
read three
echo \"restart-test: read 3 [$three]\"
wait
/bin/ttyhold
echo \"restart-test: ttyhold status $?\"
echo 'restart-test: type 4'
read four
echo \"restart-test: read 4 [$four]\"
service status tty
service status console
echo \"restart-test: shell $$ done\"
";

/// One line to type: after the session printed `marker` and init's log
/// said `restarted` at least `times` times.
pub struct Step {
    pub marker: &'static str,
    pub restarted: &'static str,
    pub times: usize,
    pub line: &'static str,
}

const TTY_AGAIN: &str = "init: tty started again";
const CONSOLE_AGAIN: &str = "init: console started again";

/// ttyhold's line once init has started the terminal manager it had given up.
const GIVEN_UP_AND_STARTED: &str = "ttyhold: tty started again";
/// init's words when it gives a program up (`apps/init/src/supervise.rs`).
const GIVES_UP: &str = "init gives up on it";

pub const PLAN: [Step; 4] = [
    Step { marker: "restart-test: type 1", restarted: TTY_AGAIN, times: 1, line: "first line" },
    Step { marker: "restart-test: type 2", restarted: CONSOLE_AGAIN, times: 1, line: "second line" },
    Step { marker: "restart-test: type 3", restarted: TTY_AGAIN, times: 2, line: "third line" },
    Step { marker: "restart-test: type 4", restarted: GIVEN_UP_AND_STARTED, times: 1, line: "fourth line" },
];

/// Whether step `step` of [`PLAN`] may be typed, given the lines seen so
/// far (the whole serial output: init's lines are outside the session's).
pub fn ready(step: &Step, lines: &[String]) -> bool {
    lines.iter().any(|l| l.trim_end() == step.marker)
        && lines.iter().filter(|l| l.starts_with(step.restarted)).count() >= step.times
}

/// What is wrong with a run: `lines` is the whole serial output, `status`
/// the session's exit status as init reported it.
pub fn judge(lines: &[String], status: Option<u32>) -> Vec<String> {
    let mut problems = Vec::new();
    let shell = lines.iter().find_map(|l| l.strip_prefix("restart-test: shell ")).map(str::trim);
    match shell {
        None => problems.push("the session never printed its shell's pid".to_string()),
        Some(pid) if !lines.iter().any(|l| l.trim_end() == format!("restart-test: shell {pid} done")) => {
            problems.push(format!("the shell {pid} did not reach the end of the script"))
        }
        Some(_) => {}
    }
    for (i, step) in PLAN.iter().enumerate() {
        let want = format!("restart-test: read {} [{}]", i + 1, step.line);
        if !lines.iter().any(|l| l.trim_end() == want) {
            problems.push(format!("no `{want}`: the line typed after the restart was not read"));
        }
    }
    // A terminal manager that died at every start was given up, and the
    // kernel's log still reached the serial port meanwhile.
    if !lines.iter().any(|l| l.starts_with("init: tty ") && l.contains(GIVES_UP)) {
        problems.push("init never gave up the terminal manager that died at every start".to_string());
    }
    if !lines.iter().any(|l| l.starts_with("ttyhold: init gave the terminal manager up")) {
        problems.push(
            "no line from ttyhold through the kernel's log while the terminal was given up".to_string(),
        );
    }
    // Issue 16: no other process takes the console's input while the
    // terminal manager is down (drivers/console, `OP_SET_INPUT_OWNER`).
    if !lines.iter().any(|l| l.starts_with("ttyhold: the console driver refused its input")) {
        problems.push("no line from ttyhold saying the console driver refused it the input".to_string());
    }
    if !lines.iter().any(|l| l.trim_end() == "restart-test: ttyhold status 0") {
        problems.push("ttyhold did not end with status 0 (its own line in the log says why)".to_string());
    }
    if !lines.iter().any(|l| l.starts_with("tty running pid 0x")) {
        problems.push("`service status tty` did not say running at the end".to_string());
    }
    if !lines.iter().any(|l| l.starts_with("console running pid 0x") && l.contains("restarts 1 ")) {
        problems.push("`service status console` did not say running with restarts 1".to_string());
    }
    if status != Some(0) {
        problems.push(format!("the session ended with status {status:?}, not 0"));
    }
    problems
}

/// The step: one boot on `smp` CPUs.
pub fn run(workspace: &Workspace, smp: u32, accel: AccelChoice, timeout_s: u64, log_dir: &Path) -> Outcome {
    let row = "the console and the terminal restarted in a session (typed lines read after each)";
    match boot(workspace, smp, accel, timeout_s, log_dir) {
        Ok(problems) if problems.is_empty() => Outcome::step(row, Ok(())),
        Ok(problems) => {
            let mut outcome = Outcome::step(row, Err(problems[0].clone()));
            outcome.problems.extend(problems.into_iter().skip(1));
            outcome
        }
        Err(err) => Outcome::step(row, Err(err)),
    }
}

fn boot(
    workspace: &Workspace,
    smp: u32,
    accel: AccelChoice,
    timeout_s: u64,
    log_dir: &Path,
) -> Result<Vec<String>, String> {
    let run_opts =
        RunOptions { smp, accel, disk: DiskChoice::None, net: NetChoice::None, ..RunOptions::default() };
    // The test image: it has /bin/ttyhold (tests/ttyhold).
    let config = batch::prepare(workspace, &run_opts, SCRIPT, ImageKind::Test)?;
    let key = batch::SessionKey::of(&config);
    let mut command = config.to_command()?;
    command.stdout(Stdio::piped()).stderr(Stdio::piped()).stdin(Stdio::piped());
    let mut child = command.spawn().map_err(|e| format!("cannot start QEMU: {e}"))?;
    let stderr = qemu::collect_stderr(&mut child);
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let rx = serial::lines(child.stdout.take().expect("stdout is piped"));
    let deadline = Instant::now() + Duration::from_secs(timeout_s);
    let mut lines: Vec<String> = Vec::new();
    let mut typed = 0;
    let mut status = None;
    while Instant::now() < deadline {
        let line = match serial::next(&rx, &mut child, Duration::from_millis(200)) {
            serial::Next::Line(line) => line,
            serial::Next::Quiet => continue,
            serial::Next::Ended => break,
        };
        // Only init's line, with this boot's key (batch::SessionKey).
        if let Some((_, code)) = key.exit(&line) {
            status = Some(code);
        }
        lines.push(line);
        if status.is_some() {
            break;
        }
        if let Some(step) = PLAN.get(typed)
            && ready(step, &lines)
        {
            // A person types a line and presses Enter (CR, as a terminal sends).
            stdin
                .write_all(format!("{}\r", step.line).as_bytes())
                .and_then(|()| stdin.flush())
                .map_err(|e| format!("cannot type into QEMU's serial console: {e}"))?;
            typed += 1;
        }
    }
    let _ = qemu::wait_until(&mut child, Instant::now() + Duration::from_secs(10));
    let mut transcript = lines.join("\n");
    if let Ok(text) = stderr.join() {
        transcript.push('\n');
        transcript.push_str(&text);
    }
    let log = log_dir.join("terminal-restart.log");
    let _ = std::fs::write(&log, &transcript);
    let mut problems = judge(&lines, status);
    if typed < PLAN.len() {
        problems.insert(
            0,
            format!("only {typed} of {} lines were typed (a marker or a restart never came)", PLAN.len()),
        );
    }
    if !problems.is_empty() {
        problems.push(format!("serial log: {}", log.display()));
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(String::from).collect()
    }

    const GOOD: &str = "\
restart-test: shell 7
init: tty (0x100000002) was killed (root asked); starting it again in 100 ms
restart-test: type 1
init: tty started again (0x200000002)
first line
restart-test: read 1 [first line]
init: console started again (0x200000001)
restart-test: type 2
restart-test: read 2 [second line]
restart-test: type 3
init: tty started again (0x300000002)
restart-test: read 3 [third line]
init: tty (0x300000002) was killed (root asked); starting it again in 100 ms
init: tty (0x800000002) was killed (root asked); it ended 6 times in a row within 2000 ms of its start: init gives up on it
ttyhold: the console driver refused its input to ttyhold at every try while the terminal manager was down
ttyhold: init gave the terminal manager up; this line reached the serial port through the kernel's log
init: tty started again (0x900000002)
ttyhold: tty started again
restart-test: ttyhold status 0
restart-test: type 4
fourth line
restart-test: read 4 [fourth line]
tty running pid 0x900000002 restarts 8 quick-deaths 0
console running pid 0x200000001 restarts 1 quick-deaths 0
restart-test: shell 7 done
";

    #[test]
    fn a_line_is_typed_only_after_its_marker_and_the_restart() {
        let seen = lines("restart-test: type 1\n");
        assert!(!ready(&PLAN[0], &seen), "the tty has not been started again yet");
        let seen = lines("init: tty started again (0x2)\n");
        assert!(!ready(&PLAN[0], &seen), "the shell does not read yet");
        let seen = lines("init: tty started again (0x2)\nrestart-test: type 1\n");
        assert!(ready(&PLAN[0], &seen));
        let seen = lines("init: tty started again (0x2)\nrestart-test: type 3\n");
        assert!(!ready(&PLAN[2], &seen), "the third line waits for the second restart of the tty");
        let seen = lines("init: tty started again (0x3)\nrestart-test: type 4\n");
        assert!(!ready(&PLAN[3], &seen), "the fourth line waits for ttyhold's start after the give-up");
    }

    #[test]
    fn a_good_session_passes() {
        assert_eq!(judge(&lines(GOOD), Some(0)), Vec::<String>::new());
    }

    #[test]
    fn a_lost_line_or_an_ended_session_fails() {
        let lost = GOOD.replace("restart-test: read 2 [second line]\n", "restart-test: read 2 []\n");
        let problems = judge(&lines(&lost), Some(0));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("read 2"), "{problems:?}");
        let ended = &GOOD[..GOOD.find("restart-test: read 3").unwrap()];
        let problems = judge(&lines(ended), Some(1));
        assert!(problems.iter().any(|p| p.contains("did not reach the end")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("status Some(1)")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("gave up") || p.contains("given up")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("console")), "{problems:?}");
    }

    /// This step's boot alone (slow: `cargo test -p xtask -- --ignored
    /// boot_the_terminal_restarts --nocapture`).
    #[test]
    #[ignore]
    fn boot_the_terminal_restarts() {
        let workspace = Workspace::load().unwrap();
        let log_dir = workspace.target_dir.join("ktest");
        std::fs::create_dir_all(&log_dir).unwrap();
        let outcome = run(
            &workspace,
            qemu::DEFAULT_SMP,
            AccelChoice::Auto,
            super::super::boot::DEFAULT_TIMEOUT_S,
            &log_dir,
        );
        assert!(outcome.is_ok(), "{:?}", outcome.problems);
    }

    #[test]
    fn another_shell_at_the_end_fails() {
        let other = GOOD.replace("restart-test: shell 7 done", "restart-test: shell 9 done");
        let problems = judge(&lines(&other), Some(0));
        assert!(problems.iter().any(|p| p.contains("shell 7")), "{problems:?}");
    }
}
