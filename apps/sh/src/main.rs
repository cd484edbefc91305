//! sh: the shell of Ridgeback's UNIX personality.
//!
//! Usage: `sh` (interactive when standard input is a terminal: prompt `$ `,
//! or `# ` for uid 0), `sh -c "commands" [name [args…]]`, `sh FILE
//! [args…]` (a script; the status is the last command's). Without an
//! operand and with a non-terminal standard input, it runs the commands
//! read from standard input without prompting.
//!
//! The language is `unix_core::shell`'s (parsed and interpreted there,
//! host-tested; `docs/shell.md` lists what it supports). This program is
//! its [`shell::Host`]: `fork` + `execve` for external commands (searched
//! in `$PATH`, default `/bin`), `pipe`/`dup2`/`close` for pipelines,
//! command substitution and here-documents, `open`/`dup2` for
//! redirections, and the builtins that touch the process: `cd`, `pwd`,
//! `jobs` and `wait`.
//!
//! Job control: each pipeline runs in its own process group (the children
//! call `setpgid`, and so does the shell, so the group exists whichever
//! runs first). For a foreground pipeline on a terminal the shell hands
//! that group the terminal (`tcsetpgrp` on fd 0), so ^C reaches the job and
//! not the shell, and takes it back afterwards. The shell ignores SIGINT;
//! its children restore the default action before `exec`. Background
//! jobs (`&`) are reported when done, at the next prompt.
//!
//! What it is not: a full POSIX shell (see `docs/shell.md`); no stopped
//! jobs (the kernel has no SIGTSTP).
//!
//! Invariants: every process the shell forks is waited for (foreground
//! ones at once, background ones at the next prompt, `jobs` or `wait`);
//! every descriptor the shell opens for a child or a builtin is closed or
//! restored before the next command.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use protocols::unix::{errno, mode, open_flags, signal};
use runtime::unix::{self, Errno, Fd};
use runtime::{eprint, eprintln};
use unix_core::shell::{
    self, Command, Expanded, FileInfo, Jobs, List, ListItem, Outcome, Pipeline, RedirKind, STATUS_NOT_FOUND,
    STATUS_USAGE, Shell, SignalAction,
};

runtime::entry!(main);

/// Where commands are looked for when `PATH` is not set.
const DEFAULT_PATH: &str = "/bin";
/// Permission bits of files created by `>`, `>>` and `<>`, before the
/// process's umask (POSIX: 0666).
const CREATE_MODE: u32 = 0o666;
/// `$?` when a command was found but could not be run.
const STATUS_NOT_EXECUTABLE: i32 = 126;
/// Bytes read from standard input or a script at a time: one message's
/// data, what one request to the object's manager returns.
const READ_CHUNK_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize;
/// Descriptors a builtin's redirections save the originals in (high, so a
/// redirection such as `3>f` does not land on a saved copy).
const SAVE_FDS: core::ops::Range<Fd> = 10..unix::MAX_FDS as Fd;
/// A here-document this long or shorter is written into its pipe at once
/// (a pipe holds at least this much); a longer one by a child process.
const HEREDOC_DIRECT_BYTES: usize = protocols::unix::pipe::SMALL_CAPACITY_BYTES;

fn main(args: runtime::Args) -> i32 {
    let argv: Vec<&str> = args.iter().collect();
    let shell_pid = unix::getpid();
    let mut sh = Shell::new(shell_pid);
    for entry in unix::env() {
        if let Some((name, value)) = entry.split_once('=')
            && shell::is_valid_name(name)
        {
            sh.set_var(name, value);
            sh.exported.insert(name.to_string());
        }
    }
    let mut host = Proc {
        jobs: Jobs::default(),
        job_control: true,
        terminal: false,
        shell_pgid: unix::getpgrp().unwrap_or(shell_pid),
        source: None,
        interactive: false,
    };
    // ^C is for the foreground job, never for the shell.
    let _ = unix::signal_ignore(signal::SIGINT, true);

    let stdin_is_tty = unix::fstat(0).is_ok_and(|s| mode::is_chr(s.mode));
    host.terminal = stdin_is_tty;
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    sh.arg0 = argv.first().unwrap_or(&"sh").to_string();
    // `sh -e -x file`, `sh -eu -c …`: `set`'s options first.
    let mut argv = argv;
    while let Some(opt) =
        argv.get(1).copied().filter(|o| o.len() > 1 && (o.starts_with('-') || o.starts_with('+')))
    {
        let on = opt.starts_with('-');
        let letters = &opt[1..];
        if on && (letters == "c" || letters == "i") {
            break;
        }
        if opt == "--" {
            argv.remove(1);
            break;
        }
        for c in letters.chars() {
            match sh.options.flag(c) {
                Some(setting) => *setting = on,
                None => {
                    eprintln!(
                        "sh: {opt}: unknown option (usage: sh [-efnuvxaC] [-c commands | -i | file] [args...])"
                    );
                    return STATUS_USAGE;
                }
            }
        }
        argv.remove(1);
    }
    match argv.get(1).copied() {
        Some("-c") => {
            let Some(text) = argv.get(2) else {
                eprintln!("sh: -c: option requires an argument");
                return STATUS_USAGE;
            };
            if let Some(name) = argv.get(3) {
                sh.arg0 = name.to_string();
                sh.params = owned(&argv[4..]);
            }
            host.source = Some("-c".to_string());
            host.run_input(&mut sh, &mut Input::text(text));
        }
        Some("-i") => {
            host.start_interactive(&mut sh);
            host.run_input(&mut sh, &mut Input::stdin());
        }
        Some(opt) if opt.starts_with('-') && opt.len() > 1 => {
            eprintln!("sh: {opt}: unknown option (usage: sh [-c commands | -i | file] [args...])");
            return STATUS_USAGE;
        }
        Some(file) => {
            sh.arg0 = file.to_string();
            sh.params = owned(&argv[2..]);
            let text = match read_file(file) {
                Ok(t) => t,
                Err(ReadError::Errno(e)) => {
                    eprintln!("sh: {file}: {}", e.name());
                    return STATUS_NOT_FOUND;
                }
                Err(ReadError::NotText) => {
                    eprintln!("sh: {file}: not a text file");
                    return STATUS_NOT_EXECUTABLE;
                }
            };
            host.source = Some(file.to_string());
            host.run_input(&mut sh, &mut Input::text(&text));
        }
        None => {
            if stdin_is_tty {
                host.start_interactive(&mut sh);
            }
            host.run_input(&mut sh, &mut Input::stdin());
        }
    };
    let status = sh.status;
    sh.finish(&mut host, status)
}

// ---------------------------------------------------------------------------
// Input
// ---------------------------------------------------------------------------

enum Line {
    Text(String),
    /// A read was interrupted (^C at the prompt): drop the partial command.
    Interrupted,
    End,
}

/// Lines of a script text or of standard input.
enum Input {
    Text { text: String, pos: usize },
    Stdin { buf: Vec<u8>, eof: bool },
}

impl Input {
    fn text(s: &str) -> Input {
        Input::Text { text: s.to_string(), pos: 0 }
    }

    fn stdin() -> Input {
        Input::Stdin { buf: Vec::new(), eof: false }
    }

    /// The next line, with its `\n` (the last line may lack it).
    fn next_line(&mut self) -> Line {
        match self {
            Input::Text { text, pos } => {
                if *pos >= text.len() {
                    return Line::End;
                }
                let end = text[*pos..].find('\n').map_or(text.len(), |i| *pos + i + 1);
                let line = text[*pos..end].to_string();
                *pos = end;
                Line::Text(line)
            }
            Input::Stdin { buf, eof } => loop {
                if let Some(i) = buf.iter().position(|&b| b == b'\n') {
                    let rest = buf.split_off(i + 1);
                    let line = core::mem::replace(buf, rest);
                    return Line::Text(String::from_utf8_lossy(&line).into_owned());
                }
                if *eof {
                    if buf.is_empty() {
                        return Line::End;
                    }
                    let line = core::mem::take(buf);
                    return Line::Text(String::from_utf8_lossy(&line).into_owned());
                }
                let mut chunk = [0u8; READ_CHUNK_BYTES];
                match unix::read(0, &mut chunk) {
                    Ok(0) => *eof = true,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    Err(e) if e == errno::EINTR => {
                        buf.clear();
                        return Line::Interrupted;
                    }
                    Err(e) => {
                        eprintln!("sh: read: {}", e.name());
                        *eof = true;
                    }
                }
            },
        }
    }
}

enum ReadError {
    Errno(Errno),
    NotText,
}

/// A whole file as UTF-8 text.
fn read_file(path: &str) -> Result<String, ReadError> {
    let fd = unix::open(path, open_flags::O_RDONLY, 0).map_err(ReadError::Errno)?;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; READ_CHUNK_BYTES];
    let result = loop {
        match unix::read(fd, &mut chunk) {
            Ok(0) => break Ok(()),
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) => break Err(ReadError::Errno(e)),
        }
    };
    let _ = unix::close(fd);
    result?;
    String::from_utf8(bytes).map_err(|_| ReadError::NotText)
}

// ---------------------------------------------------------------------------
// The host: the shell's process work
// ---------------------------------------------------------------------------

/// What the shell process owns besides the language state.
struct Proc {
    jobs: Jobs,
    /// Put pipelines in their own process groups (off in background
    /// subshells, whose children stay in the job's group).
    job_control: bool,
    /// Standard input is a terminal: hand it to foreground jobs.
    terminal: bool,
    /// The group to give the terminal back to after a foreground job.
    shell_pgid: u64,
    /// What syntax errors name as their source: `-c`, the script's name,
    /// or nothing for standard input.
    source: Option<String>,
    /// An interactive shell keeps ignoring SIGINT whatever `trap` says.
    interactive: bool,
}

/// One process of a pipeline: an expanded external command, or a command
/// the child's copy of the shell runs.
enum Stage<'a> {
    External(&'a Expanded),
    Shell(&'a Command),
}

impl Proc {
    /// Become an interactive shell: lead our own process group and own the
    /// terminal while at the prompt.
    fn start_interactive(&mut self, sh: &mut Shell) {
        sh.interactive = true;
        self.interactive = true;
        let _ = unix::setpgid(0, 0);
        self.shell_pgid = unix::getpgrp().unwrap_or(sh.shell_pid);
        self.take_terminal();
    }

    fn take_terminal(&self) {
        if self.terminal {
            // Fails when standard input is not a terminal after all; then
            // there is nothing to hand over.
            let _ = unix::tcsetpgrp(0, self.shell_pgid);
        }
    }

    fn prompt(&self) -> &'static str {
        if unix::getuid() == 0 { "# " } else { "$ " }
    }

    /// Read, parse and run commands until the input ends or `exit`. A
    /// command is run as soon as it is complete (a compound command once
    /// its closing keyword is read).
    fn run_input(&mut self, sh: &mut Shell, input: &mut Input) {
        let mut pending = String::new();
        // Lines read so far, and the number of `pending`'s first line.
        let mut lines_read = 0usize;
        let mut pending_line = 1usize;
        while sh.exit_code.is_none() {
            if sh.interactive {
                if pending.is_empty() {
                    self.reap_background();
                    self.report_jobs();
                    eprint!("{}", self.prompt());
                } else {
                    eprint!("> ");
                }
            }
            let line = match input.next_line() {
                Line::Text(t) => t,
                Line::Interrupted => {
                    pending.clear();
                    eprintln!();
                    continue;
                }
                Line::End => break,
            };
            lines_read += 1;
            if sh.options.verbose {
                eprint!("{line}");
            }
            if pending.is_empty() {
                pending_line = lines_read;
            }
            pending.push_str(&line);
            match shell::parse(&pending) {
                Ok(list) => {
                    pending.clear();
                    sh.run_list(self, &list);
                    // `break`/`continue` outside a loop end nothing more.
                    sh.flow = shell::Flow::Normal;
                }
                // Wait for the rest of a quoted string, a compound
                // command, a here-document or a `|` line.
                Err(e) if e.is_incomplete() => {}
                Err(e) => {
                    self.syntax_error(sh, e, pending_line + e.line(&pending) - 1);
                    pending.clear();
                }
            }
        }
        if !pending.is_empty()
            && sh.exit_code.is_none()
            && let Err(e) = shell::parse(&pending)
        {
            self.syntax_error(sh, e, pending_line + e.line(&pending) - 1);
        }
        if sh.interactive && sh.exit_code.is_none() {
            eprintln!();
        }
    }

    fn syntax_error(&mut self, sh: &mut Shell, e: shell::ParseError, line: usize) {
        match (&self.source, sh.interactive) {
            (_, true) => eprintln!("sh: {e}"),
            (Some(source), false) => eprintln!("sh: {source}: line {line}: {e}"),
            (None, false) => eprintln!("sh: line {line}: {e}"),
        }
        sh.status = STATUS_USAGE;
        if !sh.interactive {
            sh.exit_code = Some(STATUS_USAGE);
        }
    }

    fn new_job(&mut self, sh: &mut Shell, pgid: u64, pids: &[u64], text: &str) {
        let id = self.jobs.add(pgid, pids, text);
        sh.last_background = pids.last().copied();
        if sh.interactive {
            // As other shells: the job number and `$!`.
            eprintln!("[{id}] {}", pids.last().copied().unwrap_or(pgid));
        }
    }

    /// In a forked child that runs shell code (a pipeline stage, a
    /// subshell, a background job): no job control of its own.
    fn become_child(&mut self, sh: &mut Shell) {
        sh.interactive = false;
        self.job_control = false;
        self.terminal = false;
        self.interactive = false;
        self.jobs = Jobs::default();
        sh.enter_subshell(self);
    }

    /// Fork one process per stage, joined by pipes. Returns the group and
    /// the pids, or the status to report when nothing could start.
    fn spawn(&mut self, sh: &mut Shell, stages: &[Stage], background: bool) -> Result<(u64, Vec<u64>), i32> {
        let own_group = self.job_control || background;
        let mut pids: Vec<u64> = Vec::with_capacity(stages.len());
        let mut pgid = 0u64;
        // The read end of the previous pipe: the next command's stdin.
        let mut prev_read: Option<Fd> = None;
        let mut failed = false;
        for (i, stage) in stages.iter().enumerate() {
            let pipe = if i + 1 < stages.len() {
                match unix::pipe() {
                    Ok(p) => Some(p),
                    Err(e) => {
                        eprintln!("sh: pipe: {}", e.name());
                        failed = true;
                        break;
                    }
                }
            } else {
                None
            };
            match unix::fork() {
                Ok(0) => {
                    if own_group {
                        let _ = unix::setpgid(0, pgid);
                        if !background && self.terminal && self.job_control {
                            let pgid = if pgid == 0 { unix::getpid() } else { pgid };
                            let _ = unix::tcsetpgrp(0, pgid);
                        }
                    }
                    restore_sigint(sh);
                    if let Some(r) = prev_read {
                        move_fd(r, 0);
                    }
                    if let Some((r, w)) = pipe {
                        let _ = unix::close(r);
                        move_fd(w, 1);
                    }
                    let status = match stage {
                        Stage::External(cmd) => {
                            for r in &cmd.redirections {
                                if apply_redirection(r, &mut Vec::new()).is_err() {
                                    // dash: a failed redirection gives 2.
                                    unix::exit(STATUS_USAGE);
                                }
                            }
                            self.exec_external(sh, cmd)
                        }
                        Stage::Shell(cmd) => {
                            self.become_child(sh);
                            let status = sh.run_stage(self, cmd);
                            sh.finish(self, status)
                        }
                    };
                    unix::exit(status)
                }
                Ok(pid) => {
                    if pgid == 0 {
                        pgid = pid;
                    }
                    if own_group {
                        // Also done by the child: whichever runs first
                        // creates the group before anyone relies on it.
                        let _ = unix::setpgid(pid, pgid);
                    }
                    pids.push(pid);
                }
                Err(e) => {
                    eprintln!("sh: fork: {}", e.name());
                    failed = true;
                }
            }
            if let Some(r) = prev_read.take() {
                let _ = unix::close(r);
            }
            if let Some((r, w)) = pipe {
                let _ = unix::close(w);
                prev_read = Some(r);
            }
            if failed {
                break;
            }
        }
        if let Some(r) = prev_read {
            let _ = unix::close(r);
        }
        if failed {
            // The started commands see end of file or a broken pipe and
            // end; wait for them so none is left behind.
            if !pids.is_empty() {
                self.wait_foreground(pgid, &pids, !background);
            }
            return Err(1);
        }
        Ok((pgid, pids))
    }

    /// The environment for a child: exported variables, then the
    /// command's own `NAME=value` prefixes.
    fn child_env(&self, sh: &Shell, assignments: &[(String, String)]) -> Vec<String> {
        let mut env: BTreeMap<&str, &str> = BTreeMap::new();
        for name in &sh.exported {
            if let Some(v) = sh.vars.get(name) {
                env.insert(name, v);
            }
        }
        for (name, value) in assignments {
            env.insert(name, value);
        }
        env.into_iter().map(|(n, v)| format!("{n}={v}")).collect()
    }

    /// Replace this process by the program; on failure, report and exit.
    fn exec_external(&self, sh: &Shell, cmd: &Expanded) -> ! {
        let env = self.child_env(sh, &cmd.assignments);
        let envp: Vec<&str> = env.iter().map(String::as_str).collect();
        let argv: Vec<&str> = cmd.argv.iter().map(String::as_str).collect();
        let Some(&name) = argv.first() else { unix::exit(0) };
        // `""` names no program: searching PATH would try the directories
        // themselves (`/bin/`: EACCES, 126). bash and dash say 127.
        if name.is_empty() {
            eprintln!("sh: : command not found");
            unix::exit(STATUS_NOT_FOUND);
        }
        if name.contains('/') {
            let e = unix::execve(name, &argv, &envp);
            eprintln!("sh: {name}: {}", e.name());
            unix::exit(if e == errno::ENOENT { STATUS_NOT_FOUND } else { STATUS_NOT_EXECUTABLE });
        }
        // `PATH=... cmd` searches the command's own PATH (POSIX 2.9.1).
        let own_path = env.iter().find_map(|e| e.strip_prefix("PATH="));
        let path = own_path.or_else(|| sh.vars.get("PATH").map(String::as_str)).unwrap_or(DEFAULT_PATH);
        // The first failure other than "not there" is the one to report.
        let mut failure: Option<(String, Errno)> = None;
        for dir in path.split(':') {
            let dir = if dir.is_empty() { "." } else { dir };
            let full = format!("{}/{}", dir.trim_end_matches('/'), name);
            let e = unix::execve(&full, &argv, &envp);
            if e != errno::ENOENT && e != errno::ENOTDIR && failure.is_none() {
                failure = Some((full, e));
            }
        }
        match failure {
            Some((full, e)) => {
                eprintln!("sh: {full}: {}", e.name());
                unix::exit(STATUS_NOT_EXECUTABLE)
            }
            None => {
                eprintln!("sh: {name}: command not found");
                unix::exit(STATUS_NOT_FOUND)
            }
        }
    }

    /// Wait for a pipeline's processes (handing them the terminal if
    /// `give_terminal`); the status is the last one's. Background jobs that
    /// end meanwhile are recorded.
    fn wait_foreground(&mut self, pgid: u64, pids: &[u64], give_terminal: bool) -> i32 {
        let give_terminal = give_terminal && self.job_control && self.terminal && pgid != 0;
        if give_terminal {
            let _ = unix::tcsetpgrp(0, pgid);
        }
        let last_pid = pids.last().copied().unwrap_or(0);
        let mut remaining = pids.to_vec();
        let mut outcome = Outcome::Exited(0);
        while !remaining.is_empty() {
            match unix::waitpid(-1, false) {
                Ok(Some((pid, ws))) => {
                    let o = Outcome::new(ws.exit_code(), ws.signal());
                    if let Some(i) = remaining.iter().position(|&p| p == pid) {
                        remaining.swap_remove(i);
                        if pid == last_pid {
                            outcome = o;
                        }
                    } else {
                        self.jobs.child_ended(pid, o);
                    }
                }
                Err(e) if e == errno::EINTR => {}
                Ok(None) => break,
                Err(e) => {
                    eprintln!("sh: wait: {}", e.name());
                    break;
                }
            }
        }
        if give_terminal {
            self.take_terminal();
        }
        if let Outcome::Signaled(sig) = outcome
            && sig != signal::SIGPIPE
        {
            eprintln!("{}", shell::signal_description(sig));
        }
        outcome.status()
    }

    /// Reap ended background processes without waiting.
    fn reap_background(&mut self) {
        while let Ok(Some((pid, ws))) = unix::waitpid(-1, true) {
            self.jobs.child_ended(pid, Outcome::new(ws.exit_code(), ws.signal()));
        }
    }

    /// Print and forget the finished jobs (`[1] Done  cmd`).
    fn report_jobs(&mut self) {
        for job in self.jobs.take_done() {
            eprintln!("{}", shell::format_job_done(&job));
        }
    }

    // --- builtins that touch the process ---

    fn cd(&mut self, sh: &mut Shell, args: &[&str]) -> i32 {
        // `-L`/`-P`: this shell keeps no logical path; `$PWD` is always
        // what `getcwd` says (the physical directory, as `-P`).
        let mut args = args;
        while let Some(&("-L" | "-P")) = args.first() {
            args = &args[1..];
        }
        let target = match args.first().copied() {
            None => sh.vars.get("HOME").cloned().unwrap_or_else(|| "/".to_string()),
            Some("-") => match sh.vars.get("OLDPWD").cloned() {
                Some(old) => {
                    if let Err(status) = sh.out(self, "cd", &format!("{old}\n")) {
                        return status;
                    }
                    old
                }
                None => {
                    eprintln!("sh: cd: OLDPWD not set");
                    return 1;
                }
            },
            Some(dir) => dir.to_string(),
        };
        let before = unix::getcwd().ok();
        match unix::chdir(&target) {
            Ok(()) => {
                if let Some(old) = before {
                    sh.set_var("OLDPWD", &old);
                }
                let now = unix::getcwd().unwrap_or(target);
                sh.set_var("PWD", &now);
                0
            }
            Err(e) => {
                eprintln!("sh: cd: {target}: {}", e.name());
                1
            }
        }
    }

    /// `wait`: every job; `wait PID|%N …`: those, `$?` = the last one's.
    fn wait(&mut self, args: &[&str]) -> i32 {
        if args.is_empty() {
            while self.jobs.iter().any(|j| !j.is_done()) {
                match unix::waitpid(-1, false) {
                    Ok(Some((pid, ws))) => {
                        self.jobs.child_ended(pid, Outcome::new(ws.exit_code(), ws.signal()));
                    }
                    Err(e) if e == errno::EINTR => {}
                    _ => break,
                }
            }
            return 0;
        }
        let mut status = 0;
        for arg in args {
            let id = match arg.strip_prefix('%') {
                Some(n) => n.parse::<u32>().ok().filter(|n| self.jobs.iter().any(|j| j.id == *n)),
                None => arg
                    .parse::<u64>()
                    .ok()
                    .and_then(|pid| {
                        self.jobs
                            .iter()
                            .find(|j| j.pgid == pid || j.last_pid == pid || j.running.contains(&pid))
                    })
                    .map(|j| j.id),
            };
            let Some(id) = id else {
                eprintln!("sh: wait: {arg}: no such job");
                status = STATUS_NOT_FOUND;
                continue;
            };
            while self.jobs.iter().any(|j| j.id == id && !j.is_done()) {
                match unix::waitpid(-1, false) {
                    Ok(Some((pid, ws))) => {
                        self.jobs.child_ended(pid, Outcome::new(ws.exit_code(), ws.signal()));
                    }
                    Err(e) if e == errno::EINTR => {}
                    _ => break,
                }
            }
            status = self.jobs.iter().find(|j| j.id == id).and_then(|j| j.outcome).map_or(0, Outcome::status);
        }
        status
    }
}

/// Descriptors replaced by in-shell redirections, and the here-document
/// writers to reap once the command is done.
struct Saved {
    fds: Vec<(Fd, Option<Fd>)>,
    writers: Vec<u64>,
}

impl shell::Host for Proc {
    type Saved = Saved;

    fn write(&mut self, fd: i32, bytes: &[u8]) -> Result<(), String> {
        let mut done = 0;
        while done < bytes.len() {
            match unix::write(fd as Fd, &bytes[done..]) {
                Ok(0) => return Err("EIO".to_string()),
                Ok(n) => done += n,
                Err(e) if e == errno::EINTR => {}
                Err(e) => return Err(e.name().to_string()),
            }
        }
        Ok(())
    }

    fn read(&mut self, fd: i32, buf: &mut [u8]) -> Result<usize, String> {
        loop {
            match unix::read(fd as Fd, buf) {
                Ok(n) => return Ok(n),
                Err(e) if e == errno::EINTR => {}
                Err(e) => return Err(e.name().to_string()),
            }
        }
    }

    fn redirect(&mut self, redirections: &[shell::Redirection<String>]) -> Option<Saved> {
        let mut saved = Saved { fds: Vec::new(), writers: Vec::new() };
        for r in redirections {
            saved.fds.push((r.fd as Fd, save_fd(r.fd as Fd)));
            if apply_redirection(r, &mut saved.writers).is_err() {
                self.restore(saved);
                return None;
            }
        }
        Some(saved)
    }

    fn restore(&mut self, saved: Saved) {
        restore(saved.fds);
        reap_writers(&saved.writers);
    }

    fn run_external(&mut self, sh: &mut Shell, cmd: &Expanded) -> i32 {
        match self.spawn(sh, &[Stage::External(cmd)], false) {
            Ok((pgid, pids)) => self.wait_foreground(pgid, &pids, true),
            Err(status) => status,
        }
    }

    fn exec(&mut self, sh: &mut Shell, cmd: &Expanded) -> i32 {
        let mut writers = Vec::new();
        for r in &cmd.redirections {
            if apply_redirection(r, &mut writers).is_err() {
                return STATUS_USAGE;
            }
        }
        restore_sigint(sh);
        self.exec_external(sh, cmd)
    }

    fn pipeline(&mut self, sh: &mut Shell, pipeline: &Pipeline) -> i32 {
        let stages: Vec<Stage> = pipeline.commands.iter().map(Stage::Shell).collect();
        match self.spawn(sh, &stages, false) {
            Ok((pgid, pids)) => self.wait_foreground(pgid, &pids, true),
            Err(status) => status,
        }
    }

    fn subshell(&mut self, sh: &mut Shell, list: &List, capture: bool) -> (i32, String) {
        let pipe = if capture {
            match unix::pipe() {
                Ok(p) => Some(p),
                Err(e) => {
                    eprintln!("sh: pipe: {}", e.name());
                    return (1, String::new());
                }
            }
        } else {
            None
        };
        match unix::fork() {
            Ok(0) => {
                if let Some((r, w)) = pipe {
                    let _ = unix::close(r);
                    move_fd(w, 1);
                }
                self.become_child(sh);
                let status = sh.run_list(self, list);
                unix::exit(sh.finish(self, status))
            }
            Ok(pid) => {
                let mut out = Vec::new();
                if let Some((r, w)) = pipe {
                    let _ = unix::close(w);
                    let mut chunk = [0u8; READ_CHUNK_BYTES];
                    loop {
                        match unix::read(r, &mut chunk) {
                            Ok(0) => break,
                            Ok(n) => out.extend_from_slice(&chunk[..n]),
                            Err(e) if e == errno::EINTR => {}
                            Err(_) => break,
                        }
                    }
                    let _ = unix::close(r);
                }
                let status = wait_for(pid);
                (status, String::from_utf8_lossy(&out).into_owned())
            }
            Err(e) => {
                if let Some((r, w)) = pipe {
                    let _ = unix::close(r);
                    let _ = unix::close(w);
                }
                eprintln!("sh: fork: {}", e.name());
                (1, String::new())
            }
        }
    }

    fn background(&mut self, sh: &mut Shell, item: &ListItem) -> i32 {
        let ao = &item.and_or;
        // A lone command is exec'd by the job's process itself, so `$!`
        // is the command's pid.
        let plain =
            ao.rest.is_empty() && ao.first.commands.len() == 1 && !ao.first.timed && !ao.first.negated;
        match unix::fork() {
            Ok(0) => {
                let _ = unix::setpgid(0, 0);
                restore_sigint(sh);
                self.become_child(sh);
                let list = List { items: alloc::vec![ListItem { background: false, ..item.clone() }] };
                sh.exec_in_place = plain;
                let status = sh.run_list(self, &list);
                unix::exit(sh.finish(self, status))
            }
            Ok(pid) => {
                let _ = unix::setpgid(pid, pid);
                self.new_job(sh, pid, &[pid], &item.text);
                0
            }
            Err(e) => {
                eprintln!("sh: fork: {}", e.name());
                1
            }
        }
    }

    fn read_dir(&mut self, dir: &str) -> Option<Vec<String>> {
        let entries = unix::read_dir(dir).ok()?;
        Some(entries.into_iter().map(|e| e.name).filter(|n| n != "." && n != "..").collect())
    }

    fn stat(&mut self, path: &str) -> Option<FileInfo> {
        let s = unix::stat(path).ok()?;
        Some(FileInfo {
            is_dir: mode::is_dir(s.mode),
            is_regular: mode::is_reg(s.mode),
            size_bytes: s.size_bytes,
            mode: s.mode & 0o777,
        })
    }

    fn read_file(&mut self, path: &str) -> Result<String, String> {
        read_file(path).map_err(|e| match e {
            ReadError::Errno(e) => e.name().to_string(),
            ReadError::NotText => "not a text file".to_string(),
        })
    }

    fn is_host_builtin(&self, name: &str) -> bool {
        matches!(name, "cd" | "pwd" | "jobs" | "wait")
    }

    fn host_builtin(&mut self, sh: &mut Shell, argv: &[String]) -> i32 {
        let args: Vec<&str> = argv.iter().skip(1).map(String::as_str).collect();
        match argv[0].as_str() {
            "cd" => self.cd(sh, &args),
            "pwd" if args.iter().any(|a| !matches!(*a, "-L" | "-P")) => {
                eprintln!("sh: pwd: {}: bad option", args[0]);
                STATUS_USAGE
            }
            "pwd" => match unix::getcwd() {
                Ok(cwd) => sh.out(self, "pwd", &format!("{cwd}\n")).map_or_else(|s| s, |_| 0),
                Err(e) => {
                    eprintln!("sh: pwd: {}", e.name());
                    1
                }
            },
            "jobs" => {
                self.reap_background();
                let text: String = self.jobs.iter().map(|j| format!("{}\n", shell::format_job(j))).collect();
                self.jobs.take_done();
                sh.out(self, "jobs", &text).map_or_else(|s| s, |_| 0)
            }
            "wait" => self.wait(&args),
            other => {
                eprintln!("sh: {other}: not a builtin");
                1
            }
        }
    }

    fn times_ns(&mut self) -> (u64, u64) {
        (unix::clock_ns(), unix::times().children_cpu_ns)
    }

    /// The monitor ignores or records (catches) the signal for us; a
    /// caught one is collected by [`shell::Host::take_signals`].
    fn signal_action(&mut self, sig: u32, action: SignalAction) -> Result<(), String> {
        let sig = u64::from(sig);
        let result = match action {
            SignalAction::Catch => unix::signal_catch(sig, true),
            SignalAction::Ignore => unix::signal_ignore(sig, true),
            // ^C is never for an interactive shell itself.
            SignalAction::Default if sig == signal::SIGINT && self.interactive => {
                unix::signal_catch(sig, false).and_then(|_| unix::signal_ignore(sig, true))
            }
            SignalAction::Default => {
                unix::signal_catch(sig, false).and_then(|_| unix::signal_ignore(sig, false))
            }
        };
        result.map(|_| ()).map_err(|e| e.name().to_string())
    }

    fn take_signals(&mut self) -> u64 {
        unix::signal_pending()
    }

    fn umask(&mut self, mask: Option<u32>) -> u32 {
        unix::umask(mask)
    }

    fn rlimit(&mut self, resource: u64, set: Option<(u64, u64)>) -> Result<(u64, u64), String> {
        let old = unix::getrlimit(resource).map_err(|e| String::from(e.name()))?;
        if let Some((soft, hard)) = set {
            unix::setrlimit(resource, soft, hard).map_err(|e| String::from(e.name()))?;
        }
        Ok(old)
    }
}

/// In a child about to run a command: SIGINT back to its default (the
/// shell itself ignores it), unless a script ignored it with `trap ''
/// INT`, which its commands inherit (POSIX).
fn restore_sigint(sh: &Shell) {
    let ignored_by_trap = sh.traps.get(&(signal::SIGINT as u32)).is_some_and(|c| c.is_empty());
    if !ignored_by_trap {
        let _ = unix::signal_ignore(signal::SIGINT, false);
    }
}

/// Wait for one child; its status.
fn wait_for(pid: u64) -> i32 {
    loop {
        match unix::waitpid(pid as i64, false) {
            Ok(Some((_, ws))) => return Outcome::new(ws.exit_code(), ws.signal()).status(),
            Err(e) if e == errno::EINTR => {}
            _ => return 1,
        }
    }
}

/// Reap the children that wrote here-documents.
fn reap_writers(pids: &[u64]) {
    for &pid in pids {
        wait_for(pid);
    }
}

// ---------------------------------------------------------------------------
// Descriptors
// ---------------------------------------------------------------------------

/// Make `from` descriptor `to` and close `from`.
fn move_fd(from: Fd, to: Fd) {
    if from != to {
        let _ = unix::dup2(from, to);
        let _ = unix::close(from);
    }
}

/// Apply one redirection; on failure, report it. A here-document longer
/// than a pipe surely holds is written by a child, recorded in `writers`.
fn apply_redirection(r: &shell::Redirection<String>, writers: &mut Vec<u64>) -> Result<(), ()> {
    use open_flags::*;
    let fd = r.fd as Fd;
    let (path, flags) = match &r.kind {
        RedirKind::Read(p) => (p, O_RDONLY),
        RedirKind::Write(p) | RedirKind::Clobber(p) => (p, O_WRONLY | O_CREAT | O_TRUNC),
        // `set -C`: an existing regular file is not overwritten; a device
        // (`/dev/null`) still is (XCU 2.7.2).
        RedirKind::WriteNew(p) => match unix::stat(p) {
            Ok(st) if mode::is_reg(st.mode) => {
                eprintln!("sh: cannot create {p}: {}", errno::EEXIST.name());
                return Err(());
            }
            Ok(_) => (p, O_WRONLY),
            Err(_) => (p, O_WRONLY | O_CREAT | O_EXCL),
        },
        RedirKind::Append(p) => (p, O_WRONLY | O_CREAT | O_APPEND),
        RedirKind::ReadWrite(p) => (p, O_RDWR | O_CREAT),
        RedirKind::Dup(from) => {
            if *from != r.fd
                && let Err(e) = unix::dup2(*from as Fd, fd)
            {
                eprintln!("sh: {from}: {}", e.name());
                return Err(());
            }
            return Ok(());
        }
        RedirKind::Close => {
            let _ = unix::close(fd);
            return Ok(());
        }
        RedirKind::HereDoc(text) => return here_document(fd, text, writers),
    };
    match unix::open(path, flags, CREATE_MODE) {
        Ok(opened) => {
            if opened != fd
                && let Err(e) = unix::dup2(opened, fd)
            {
                let _ = unix::close(opened);
                eprintln!("sh: {path}: {}", e.name());
                return Err(());
            }
            if opened != fd {
                let _ = unix::close(opened);
            }
            Ok(())
        }
        Err(e) => {
            eprintln!("sh: {path}: {}", e.name());
            Err(())
        }
    }
}

/// Descriptor `fd` reading `text` from a pipe.
fn here_document(fd: Fd, text: &str, writers: &mut Vec<u64>) -> Result<(), ()> {
    let (r, w) = unix::pipe().map_err(|e| eprintln!("sh: pipe: {}", e.name()))?;
    if text.len() <= HEREDOC_DIRECT_BYTES {
        let _ = unix::write(w, text.as_bytes());
    } else {
        match unix::fork() {
            Ok(0) => {
                let _ = unix::close(r);
                let mut done = 0;
                while done < text.len() {
                    match unix::write(w, &text.as_bytes()[done..]) {
                        Ok(n) if n > 0 => done += n,
                        _ => break,
                    }
                }
                unix::exit(0)
            }
            Ok(pid) => writers.push(pid),
            Err(e) => {
                let _ = unix::close(r);
                let _ = unix::close(w);
                eprintln!("sh: fork: {}", e.name());
                return Err(());
            }
        }
    }
    let _ = unix::close(w);
    move_fd(r, fd);
    Ok(())
}

/// A copy of `fd` on a free high descriptor; `None` if `fd` is not open
/// (or no high descriptor is free, then it cannot be restored).
fn save_fd(fd: Fd) -> Option<Fd> {
    let free = SAVE_FDS.rev().find(|&c| unix::fstat(c).is_err_and(|e| e == errno::EBADF))?;
    unix::dup2(fd, free).ok()
}

/// Undo in-shell redirections, last first.
fn restore(saved: Vec<(Fd, Option<Fd>)>) {
    for (fd, copy) in saved.into_iter().rev() {
        match copy {
            Some(c) => move_fd(c, fd),
            None => {
                let _ = unix::close(fd);
            }
        }
    }
}
