//! sh: the shell of Ridgeback's UNIX personality.
//!
//! Usage: `sh` (interactive when standard input is a terminal: prompt `$ `,
//! or `# ` for uid 0), `sh -c "commands" [name [args…]]`, `sh FILE
//! [args…]` (a script; the status is the last command's). Without an
//! operand and with a non-terminal standard input, it runs the commands
//! read from standard input without prompting.
//!
//! The language is `unix_core::shell`'s (parsed there, host-tested); this
//! program runs the tree: `fork` + `execve` for external commands (searched
//! in `$PATH`, default `/bin`), `pipe`/`dup2`/`close` for pipelines,
//! `open`/`dup2` for redirections, and the builtins `cd`, `exit`, `pwd`,
//! `export`, `unset`, `jobs` and `wait`; `time` and `!` are keywords.
//!
//! Job control: each pipeline runs in its own process group (the children
//! call `setpgid`, and so does the shell, so the group exists whichever
//! runs first). For a foreground pipeline on a terminal the shell hands
//! that group the terminal (`tcsetpgrp` on fd 0), so ^C reaches the job and
//! not the shell, and takes it back afterwards. The shell ignores SIGINT;
//! its children restore the default action before `exec`. Background
//! jobs (`&`) are reported when done, at the next prompt.
//!
//! What it is not: a full POSIX shell. No control flow (`if`, `while`,
//! functions), no command substitution, globbing or here-documents (the
//! parser reports them), no stopped jobs (the kernel has no SIGTSTP).
//!
//! Invariants: every process the shell forks is waited for (foreground
//! ones at once, background ones at the next prompt, `jobs` or `wait`);
//! every descriptor the shell opens for a child or a builtin is closed or
//! restored before the next command.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use protocols::unix::{errno, mode, open_flags, signal};
use runtime::unix::{self, Errno, Fd};
use runtime::{eprint, eprintln, println};
use unix_core::shell::{self, AndOr, Connector, Jobs, ListItem, Outcome, Pipeline, RedirKind, SimpleCommand};

runtime::entry!(main);

/// Where commands are looked for when `PATH` is not set.
const DEFAULT_PATH: &str = "/bin";
/// Permission bits of files created by `>` and `>>` (there is no umask;
/// this is the usual 0666 & ~022).
const CREATE_MODE: u32 = 0o644;
/// `$?` after a syntax error or a usage error (POSIX shells use 2).
const STATUS_USAGE: i32 = 2;
/// `$?` when a command was found but could not be run.
const STATUS_NOT_EXECUTABLE: i32 = 126;
/// `$?` when a command was not found.
const STATUS_NOT_FOUND: i32 = 127;
/// Bytes read from standard input or a script at a time: one message's
/// data, what one request to the object's manager returns.
const READ_CHUNK_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize;
/// Descriptors a builtin's redirections save the originals in (high, so a
/// redirection such as `3>f` does not land on a saved copy).
const SAVE_FDS: core::ops::Range<Fd> = 10..unix::MAX_FDS as Fd;

fn main(args: runtime::Args) -> i32 {
    let argv: Vec<&str> = args.iter().collect();
    let mut sh = Shell::new();
    // ^C is for the foreground job, never for the shell.
    let _ = unix::signal_ignore(signal::SIGINT, true);

    let stdin_is_tty = unix::fstat(0).is_ok_and(|s| mode::is_chr(s.mode));
    sh.terminal = stdin_is_tty;
    match argv.get(1).copied() {
        Some("-c") => {
            let Some(text) = argv.get(2) else {
                eprintln!("sh: -c: option requires an argument");
                return STATUS_USAGE;
            };
            sh.positional = argv.iter().skip(3).map(|s| s.to_string()).collect();
            if sh.positional.is_empty() {
                sh.positional.push("sh".to_string());
            }
            sh.source = Some("-c".to_string());
            sh.run_input(&mut Input::text(text));
        }
        Some("-i") => {
            sh.positional = argv.iter().take(1).map(|s| s.to_string()).collect();
            sh.start_interactive();
            sh.run_input(&mut Input::stdin());
        }
        Some(opt) if opt.starts_with('-') && opt.len() > 1 => {
            eprintln!("sh: {opt}: unknown option (usage: sh [-c commands | -i | file] [args...])");
            return STATUS_USAGE;
        }
        Some(file) => {
            sh.positional = argv.iter().skip(1).map(|s| s.to_string()).collect();
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
            sh.source = Some(file.to_string());
            sh.run_input(&mut Input::text(&text));
        }
        None => {
            sh.positional = argv.iter().take(1).map(|s| s.to_string()).collect();
            if stdin_is_tty {
                sh.start_interactive();
            }
            sh.run_input(&mut Input::stdin());
        }
    }
    sh.exit_code.unwrap_or(sh.status)
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
// The shell
// ---------------------------------------------------------------------------

struct Shell {
    /// Shell variables; those named in `exported` go to children.
    vars: BTreeMap<String, String>,
    exported: BTreeSet<String>,
    /// `$0`, `$1`, …
    positional: Vec<String>,
    /// `$?`.
    status: i32,
    /// `$$`: the shell's pid (a background subshell keeps its parent's).
    shell_pid: u64,
    /// `$!`.
    last_background: Option<u64>,
    jobs: Jobs,
    /// Put pipelines in their own process groups (off in background
    /// subshells, whose children stay in the job's group).
    job_control: bool,
    /// Standard input is a terminal: hand it to foreground jobs.
    terminal: bool,
    /// Prompt, report finished jobs, keep going after syntax errors.
    interactive: bool,
    /// The group to give the terminal back to after a foreground job.
    shell_pgid: u64,
    /// Set by `exit`: stop and exit with this status.
    exit_code: Option<i32>,
    /// What syntax errors name as their source: `-c`, the script's name,
    /// or nothing for standard input.
    source: Option<String>,
}

impl shell::Vars for Shell {
    fn var(&self, name: &str) -> Option<String> {
        match name {
            "?" => Some(format!("{}", self.status)),
            "$" => Some(format!("{}", self.shell_pid)),
            "!" => self.last_background.map(|p| format!("{p}")),
            "#" => Some(format!("{}", self.positional.len().saturating_sub(1))),
            n if n.bytes().all(|b| b.is_ascii_digit()) => {
                n.parse::<usize>().ok().and_then(|i| self.positional.get(i)).cloned()
            }
            n => self.vars.get(n).cloned(),
        }
    }
}

impl Shell {
    fn new() -> Shell {
        let mut vars = BTreeMap::new();
        let mut exported = BTreeSet::new();
        for entry in unix::env() {
            if let Some((name, value)) = entry.split_once('=')
                && shell::is_valid_name(name)
            {
                vars.insert(name.to_string(), value.to_string());
                exported.insert(name.to_string());
            }
        }
        let shell_pid = unix::getpid();
        Shell {
            vars,
            exported,
            positional: Vec::new(),
            status: 0,
            shell_pid,
            last_background: None,
            jobs: Jobs::default(),
            job_control: true,
            terminal: false,
            interactive: false,
            shell_pgid: unix::getpgrp().unwrap_or(shell_pid),
            exit_code: None,
            source: None,
        }
    }

    /// Become an interactive shell: lead our own process group and own the
    /// terminal while at the prompt.
    fn start_interactive(&mut self) {
        self.interactive = true;
        let _ = unix::setpgid(0, 0);
        self.shell_pgid = unix::getpgrp().unwrap_or(self.shell_pid);
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

    /// Read, parse and run commands until the input ends or `exit`.
    fn run_input(&mut self, input: &mut Input) {
        let mut pending = String::new();
        // Lines read so far, and the number of `pending`'s first line.
        let mut lines_read = 0usize;
        let mut pending_line = 1usize;
        while self.exit_code.is_none() {
            if self.interactive {
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
            if pending.is_empty() {
                pending_line = lines_read;
            }
            pending.push_str(&line);
            match shell::parse(&pending) {
                Ok(list) => {
                    pending.clear();
                    for item in &list.items {
                        self.run_item(item);
                        if self.exit_code.is_some() {
                            break;
                        }
                    }
                }
                // Wait for the rest of a quoted string or a `|` line.
                Err(e) if e.is_incomplete() => {}
                Err(e) => {
                    self.syntax_error(e, pending_line + e.line(&pending) - 1);
                    pending.clear();
                }
            }
        }
        if !pending.is_empty()
            && let Err(e) = shell::parse(&pending)
        {
            self.syntax_error(e, pending_line + e.line(&pending) - 1);
        }
        if self.interactive && self.exit_code.is_none() {
            eprintln!();
        }
    }

    fn syntax_error(&mut self, e: shell::ParseError, line: usize) {
        match (&self.source, self.interactive) {
            (_, true) => eprintln!("sh: {e}"),
            (Some(source), false) => eprintln!("sh: {source}: line {line}: {e}"),
            (None, false) => eprintln!("sh: line {line}: {e}"),
        }
        self.status = STATUS_USAGE;
        if !self.interactive {
            self.exit_code = Some(STATUS_USAGE);
        }
    }

    fn run_item(&mut self, item: &ListItem) {
        self.status =
            if item.background { self.start_background(item) } else { self.run_and_or(&item.and_or) };
    }

    fn run_and_or(&mut self, and_or: &AndOr) -> i32 {
        let mut status = self.run_pipeline(&and_or.first);
        for (connector, pipeline) in &and_or.rest {
            if self.exit_code.is_some() {
                break;
            }
            let run = match connector {
                Connector::And => status == 0,
                Connector::Or => status != 0,
            };
            if run {
                status = self.run_pipeline(pipeline);
            }
        }
        status
    }

    /// Run a pipeline in the foreground; sets and returns `$?`.
    fn run_pipeline(&mut self, pipeline: &Pipeline) -> i32 {
        let start_ns = unix::clock_ns();
        let start_children_cpu_ns = if pipeline.timed { unix::times().children_cpu_ns } else { 0 };
        let mut status = self.run_commands(pipeline);
        if pipeline.negated {
            status = (status == 0) as i32;
        }
        if pipeline.timed {
            let real_ns = unix::clock_ns().saturating_sub(start_ns);
            // CPU time of the children reaped meanwhile (the pipeline's
            // processes, and any background job that ended during it).
            // The kernel counts one CPU time per process and cannot split
            // it into user and system time, so all of it is shown as user
            // time and sys as 0.
            let cpu_ns = unix::times().children_cpu_ns.saturating_sub(start_children_cpu_ns);
            eprintln!("{}", shell::format_times(real_ns, cpu_ns, 0));
        }
        self.status = status;
        status
    }

    fn run_commands(&mut self, pipeline: &Pipeline) -> i32 {
        let Some(commands) = self.expand_all(pipeline) else { return 1 };
        if let [cmd] = commands.as_slice() {
            match cmd.argv.first() {
                None => return self.assign_and_redirect(cmd),
                Some(name) if is_builtin(name) => return self.run_builtin_here(cmd),
                Some(_) => {}
            }
        }
        match self.spawn_pipeline(&commands, false) {
            Ok((pgid, pids)) => self.wait_foreground(pgid, &pids, true),
            Err(status) => status,
        }
    }

    fn expand_all(&self, pipeline: &Pipeline) -> Option<Vec<SimpleCommand>> {
        let mut out = Vec::with_capacity(pipeline.commands.len());
        for c in &pipeline.commands {
            match c.expand(self) {
                Ok(e) => out.push(e),
                Err(e) => {
                    eprintln!("sh: {e}");
                    return None;
                }
            }
        }
        Some(out)
    }

    /// A command with no name: `X=1`, `>file`, or both.
    fn assign_and_redirect(&mut self, cmd: &SimpleCommand) -> i32 {
        let saved = match self.redirect_saving(&cmd.redirections) {
            Ok(s) => s,
            Err(status) => return status,
        };
        restore(saved);
        for (name, value) in &cmd.assignments {
            self.vars.insert(name.clone(), value.clone());
        }
        0
    }

    /// Start background item `item` as a job; `$?` is 0 once started.
    fn start_background(&mut self, item: &ListItem) -> i32 {
        let ao = &item.and_or;
        let plain = ao.rest.is_empty() && !ao.first.timed && !ao.first.negated;
        if plain {
            let Some(commands) = self.expand_all(&ao.first) else { return 1 };
            let needs_shell = commands.len() == 1 && commands[0].argv.first().is_none_or(|n| is_builtin(n));
            if !needs_shell {
                return match self.spawn_pipeline(&commands, true) {
                    Ok((pgid, pids)) => {
                        self.new_job(pgid, &pids, &item.text);
                        0
                    }
                    Err(status) => status,
                };
            }
        }
        // `a && b &`, `time a &`, `cd x &`: a copy of the shell runs the
        // item as the job.
        match unix::fork() {
            Ok(0) => {
                let _ = unix::setpgid(0, 0);
                let _ = unix::signal_ignore(signal::SIGINT, false);
                self.job_control = false;
                self.interactive = false;
                self.terminal = false;
                self.jobs = Jobs::default();
                let status = self.run_and_or(ao);
                unix::exit(self.exit_code.unwrap_or(status))
            }
            Ok(pid) => {
                let _ = unix::setpgid(pid, pid);
                self.new_job(pid, &[pid], &item.text);
                0
            }
            Err(e) => {
                eprintln!("sh: fork: {}", e.name());
                1
            }
        }
    }

    fn new_job(&mut self, pgid: u64, pids: &[u64], text: &str) {
        let id = self.jobs.add(pgid, pids, text);
        self.last_background = pids.last().copied();
        if self.interactive {
            // As other shells: the job number and `$!`.
            eprintln!("[{id}] {}", pids.last().copied().unwrap_or(pgid));
        }
    }

    /// Fork one process per command, joined by pipes. Returns the group
    /// and the pids, or the status to report when nothing could start.
    fn spawn_pipeline(
        &mut self,
        commands: &[SimpleCommand],
        background: bool,
    ) -> Result<(u64, Vec<u64>), i32> {
        let own_group = self.job_control || background;
        let mut pids: Vec<u64> = Vec::with_capacity(commands.len());
        let mut pgid = 0u64;
        // The read end of the previous pipe: the next command's stdin.
        let mut prev_read: Option<Fd> = None;
        let mut failed = false;
        for (i, cmd) in commands.iter().enumerate() {
            let pipe = if i + 1 < commands.len() {
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
                    let foreground = !background && self.terminal && self.job_control;
                    self.exec_child(cmd, prev_read, pipe, own_group.then_some(pgid), foreground)
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

    /// In a forked child: set up descriptors, then run `cmd`. Never returns.
    fn exec_child(
        &mut self,
        cmd: &SimpleCommand,
        stdin_from: Option<Fd>,
        pipe: Option<(Fd, Fd)>,
        group: Option<u64>,
        foreground: bool,
    ) -> ! {
        if let Some(pgid) = group {
            let _ = unix::setpgid(0, pgid);
            if foreground {
                let pgid = if pgid == 0 { unix::getpid() } else { pgid };
                let _ = unix::tcsetpgrp(0, pgid);
            }
        }
        let _ = unix::signal_ignore(signal::SIGINT, false);
        if let Some(r) = stdin_from {
            move_fd(r, 0);
        }
        if let Some((r, w)) = pipe {
            let _ = unix::close(r);
            move_fd(w, 1);
        }
        for r in &cmd.redirections {
            if let Err(status) = apply_redirection(r) {
                unix::exit(status);
            }
        }
        let Some(name) = cmd.argv.first() else { unix::exit(0) };
        if is_builtin(name) {
            // In a pipeline a builtin runs in its own process, as in
            // other shells: `cd` there changes nothing for the shell.
            self.interactive = false;
            let status = self.run_builtin(&cmd.argv);
            unix::exit(self.exit_code.unwrap_or(status));
        }
        self.exec_external(cmd)
    }

    /// The environment for a child: exported variables, then the
    /// command's own `NAME=value` prefixes.
    fn child_env(&self, assignments: &[(String, String)]) -> Vec<String> {
        let mut env: BTreeMap<&str, &str> = BTreeMap::new();
        for name in &self.exported {
            if let Some(v) = self.vars.get(name) {
                env.insert(name, v);
            }
        }
        for (name, value) in assignments {
            env.insert(name, value);
        }
        env.into_iter().map(|(n, v)| format!("{n}={v}")).collect()
    }

    fn exec_external(&self, cmd: &SimpleCommand) -> ! {
        let env = self.child_env(&cmd.assignments);
        let envp: Vec<&str> = env.iter().map(String::as_str).collect();
        let argv: Vec<&str> = cmd.argv.iter().map(String::as_str).collect();
        let name = argv[0];
        if name.contains('/') {
            let e = unix::execve(name, &argv, &envp);
            eprintln!("sh: {name}: {}", e.name());
            unix::exit(if e == errno::ENOENT { STATUS_NOT_FOUND } else { STATUS_NOT_EXECUTABLE });
        }
        // `PATH=... cmd` searches the command's own PATH (POSIX 2.9.1).
        let own_path = env.iter().find_map(|e| e.strip_prefix("PATH="));
        let path = own_path.or_else(|| self.vars.get("PATH").map(String::as_str)).unwrap_or(DEFAULT_PATH);
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

    // --- builtins ---

    /// A builtin in the shell itself, its redirections undone afterwards.
    fn run_builtin_here(&mut self, cmd: &SimpleCommand) -> i32 {
        let saved = match self.redirect_saving(&cmd.redirections) {
            Ok(s) => s,
            Err(status) => return status,
        };
        let status = self.run_builtin(&cmd.argv);
        restore(saved);
        status
    }

    /// Apply redirections in the shell, saving each descriptor they
    /// replace; on failure, undo what was done.
    fn redirect_saving(&self, redirections: &[shell::Redirection<String>]) -> Result<Saved, i32> {
        let mut saved = Vec::new();
        for r in redirections {
            saved.push((r.fd, save_fd(r.fd)));
            if let Err(status) = apply_redirection(r) {
                restore(saved);
                return Err(status);
            }
        }
        Ok(saved)
    }

    fn run_builtin(&mut self, argv: &[String]) -> i32 {
        let args: Vec<&str> = argv.iter().skip(1).map(String::as_str).collect();
        match argv[0].as_str() {
            "cd" => self.cd(&args),
            "exit" => self.exit(&args),
            "pwd" => match unix::getcwd() {
                Ok(cwd) => {
                    println!("{cwd}");
                    0
                }
                Err(e) => {
                    eprintln!("sh: pwd: {}", e.name());
                    1
                }
            },
            "export" => self.export(&args),
            "unset" => {
                for name in &args {
                    self.vars.remove(*name);
                    self.exported.remove(*name);
                }
                0
            }
            "jobs" => {
                self.reap_background();
                for job in self.jobs.iter() {
                    println!("{}", shell::format_job(job));
                }
                self.jobs.take_done();
                0
            }
            "wait" => self.wait(&args),
            other => {
                eprintln!("sh: {other}: not a builtin");
                1
            }
        }
    }

    fn cd(&mut self, args: &[&str]) -> i32 {
        let target = match args.first().copied() {
            None => self.vars.get("HOME").cloned().unwrap_or_else(|| "/".to_string()),
            Some("-") => match self.vars.get("OLDPWD") {
                Some(old) => {
                    println!("{old}");
                    old.clone()
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
                    self.vars.insert("OLDPWD".to_string(), old);
                }
                let now = unix::getcwd().unwrap_or(target);
                self.vars.insert("PWD".to_string(), now);
                0
            }
            Err(e) => {
                eprintln!("sh: cd: {target}: {}", e.name());
                1
            }
        }
    }

    fn exit(&mut self, args: &[&str]) -> i32 {
        let code = match args.first() {
            None => self.status,
            Some(n) => match n.parse::<i64>() {
                Ok(n) => (n & 0xff) as i32,
                Err(_) => {
                    eprintln!("sh: exit: {n}: numeric argument required");
                    STATUS_USAGE
                }
            },
        };
        self.exit_code = Some(code);
        code
    }

    fn export(&mut self, args: &[&str]) -> i32 {
        if args.is_empty() {
            for name in &self.exported {
                if let Some(v) = self.vars.get(name) {
                    println!("export {name}='{}'", v.replace('\'', "'\\''"));
                }
            }
            return 0;
        }
        let mut status = 0;
        for arg in args {
            let (name, value) = match arg.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (*arg, None),
            };
            if !shell::is_valid_name(name) {
                eprintln!("sh: export: {arg}: not a valid name");
                status = 1;
                continue;
            }
            if let Some(v) = value {
                self.vars.insert(name.to_string(), v.to_string());
            }
            self.exported.insert(name.to_string());
        }
        status
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

fn is_builtin(name: &str) -> bool {
    matches!(name, "cd" | "exit" | "pwd" | "export" | "unset" | "jobs" | "wait")
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

/// Apply one redirection; on failure, report it and return the status.
fn apply_redirection(r: &shell::Redirection<String>) -> Result<(), i32> {
    use open_flags::*;
    let (path, flags) = match &r.kind {
        RedirKind::Read(p) => (p, O_RDONLY),
        RedirKind::Write(p) => (p, O_WRONLY | O_CREAT | O_TRUNC),
        RedirKind::Append(p) => (p, O_WRONLY | O_CREAT | O_APPEND),
        RedirKind::Dup(from) => {
            if *from != r.fd
                && let Err(e) = unix::dup2(*from, r.fd)
            {
                eprintln!("sh: {from}: {}", e.name());
                return Err(1);
            }
            return Ok(());
        }
        RedirKind::Close => {
            let _ = unix::close(r.fd);
            return Ok(());
        }
    };
    match unix::open(path, flags, CREATE_MODE) {
        Ok(fd) => {
            if fd != r.fd
                && let Err(e) = unix::dup2(fd, r.fd)
            {
                let _ = unix::close(fd);
                eprintln!("sh: {path}: {}", e.name());
                return Err(1);
            }
            if fd != r.fd {
                let _ = unix::close(fd);
            }
            Ok(())
        }
        Err(e) => {
            eprintln!("sh: {path}: {}", e.name());
            Err(1)
        }
    }
}

/// Descriptors replaced by a builtin's redirections: (fd, saved copy or
/// None if it was closed).
type Saved = Vec<(Fd, Option<Fd>)>;

/// A copy of `fd` on a free high descriptor; `None` if `fd` is not open
/// (or no high descriptor is free, then it cannot be restored).
fn save_fd(fd: Fd) -> Option<Fd> {
    let free = SAVE_FDS.rev().find(|&c| unix::fstat(c).is_err_and(|e| e == errno::EBADF))?;
    unix::dup2(fd, free).ok()
}

/// Undo a builtin's redirections, last first.
fn restore(saved: Saved) {
    for (fd, copy) in saved.into_iter().rev() {
        match copy {
            Some(c) => move_fd(c, fd),
            None => {
                let _ = unix::close(fd);
            }
        }
    }
}
