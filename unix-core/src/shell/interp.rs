//! The interpreter: a parsed [`List`] run against the shell's state
//! ([`Shell`]: variables, positional parameters, functions, options),
//! with the process work (fork, exec, pipes, descriptors, files) left to a
//! [`Host`] (XCU 2.9 "Shell Commands", 2.6 "Word Expansions", 2.14
//! "Special Built-In Utilities").
//!
//! What it is not: a process manager. Nothing here forks or opens; the
//! host (`apps/sh` on Ridgeback, a fake with in-memory files in the host
//! tests) runs external programs, pipelines, subshells and background
//! jobs, calling back into [`Shell::run_command`] / [`Shell::run_list`]
//! in the processes it makes.
//!
//! # Invariants
//! - Words are expanded when their command runs, in POSIX's order: tilde
//!   and parameter expansion, command substitution and arithmetic, field
//!   splitting (unquoted results only, at `$IFS`), pathname expansion
//!   (unquoted `*`, `?`, `[` only; no match leaves the word as written),
//!   quote removal.
//! - `break`, `continue`, `return` and `exit` unwind through
//!   [`Shell::flow`] and [`Shell::exit_code`]: every loop over commands
//!   stops as soon as either is set.
//! - A builtin's output goes through [`Host::write`]; when that fails the
//!   builtin reports it on standard error and returns 1.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::arith::{self, ArithVars};
use super::builtins;
use super::errors::ExpandError;
use super::parser::parse;
use super::pattern;
use super::state::{Expanded, Flow, Host, STATUS_USAGE, Shell};

/// `$?` after a redirection that failed (dash's; POSIX says only "greater
/// than zero").
const STATUS_REDIRECT: i32 = 2;
use super::syntax::{
    AndOr, Command, Compound, Connector, FunctionBody, List, ParamOp, Part, Pipeline, RedirKind, Redirection,
    SimpleCommand, Word, is_valid_name,
};

impl Shell {
    // --- running ---

    /// Parse and run a whole text (`eval`, `.`, `sh -c`); a syntax error
    /// is reported and gives status 2.
    pub fn run_text<H: Host>(&mut self, h: &mut H, text: &str) -> i32 {
        match parse(text) {
            Ok(list) => self.run_list(h, &list),
            Err(e) => {
                self.error(h, &format!("{e}"));
                self.status = STATUS_USAGE;
                if !self.interactive {
                    self.exit_code = Some(STATUS_USAGE);
                }
                STATUS_USAGE
            }
        }
    }

    pub fn run_list<H: Host>(&mut self, h: &mut H, list: &List) -> i32 {
        for item in &list.items {
            // `set -n`: read, do not run (never in an interactive shell).
            if self.unwinding() || (self.options.noexec && !self.interactive) {
                break;
            }
            self.status =
                if item.background { h.background(self, item) } else { self.run_and_or(h, &item.and_or) };
            self.run_signal_traps(h);
        }
        self.status
    }

    /// Run the traps of the caught signals that arrived (between
    /// commands, as dash: a signal does not interrupt a command). `$?` is
    /// kept across them.
    pub fn run_signal_traps<H: Host>(&mut self, h: &mut H) {
        if self.in_trap || !self.traps.iter().any(|(sig, cmd)| *sig != 0 && !cmd.is_empty()) {
            return;
        }
        let pending = h.take_signals();
        for sig in 1..64u32 {
            if pending & (1 << sig) == 0 {
                continue;
            }
            let Some(cmd) = self.traps.get(&sig).filter(|c| !c.is_empty()).cloned() else { continue };
            let status = self.status;
            self.in_trap = true;
            self.run_text(h, &cmd);
            self.in_trap = false;
            self.status = status;
            if self.exit_code.is_some() {
                break;
            }
        }
    }

    /// The shell (or a subshell) is ending with `status` (or `exit`'s):
    /// run the EXIT trap; the status to exit with (`exit` in the trap
    /// changes it).
    pub fn finish<H: Host>(&mut self, h: &mut H, status: i32) -> i32 {
        let status = self.exit_code.unwrap_or(status);
        let Some(cmd) = self.traps.remove(&0).filter(|c| !c.is_empty()) else { return status };
        self.exit_code = None;
        self.flow = Flow::Normal;
        self.status = status;
        self.in_trap = true;
        self.run_text(h, &cmd);
        self.in_trap = false;
        self.exit_code.unwrap_or(status)
    }

    /// In a new subshell environment (`( … )`, `$(…)`, a pipeline stage,
    /// a background job): traps with commands are reset, ignored signals
    /// stay ignored (XCU 2.12).
    pub fn enter_subshell<H: Host>(&mut self, h: &mut H) {
        let caught: Vec<u32> = self.traps.iter().filter(|(_, c)| !c.is_empty()).map(|(s, _)| *s).collect();
        for sig in caught {
            self.traps.remove(&sig);
            if sig != 0 {
                let _ = h.signal_action(sig, super::state::SignalAction::Default);
            }
        }
        self.locals.clear();
    }

    fn run_and_or<H: Host>(&mut self, h: &mut H, and_or: &AndOr) -> i32 {
        // Every pipeline but the last is a condition for `set -e`.
        let conditional = !and_or.rest.is_empty();
        self.errexit_off += conditional as u32;
        let mut status = self.run_pipeline(h, &and_or.first);
        let mut last_ran = and_or.rest.is_empty();
        for (i, (connector, pipeline)) in and_or.rest.iter().enumerate() {
            if self.unwinding() {
                break;
            }
            let run = match connector {
                Connector::And => status == 0,
                Connector::Or => status != 0,
            };
            if run {
                let last = i + 1 == and_or.rest.len();
                if last {
                    self.errexit_off -= conditional as u32;
                }
                status = self.run_pipeline(h, pipeline);
                if last {
                    self.errexit_off += conditional as u32;
                    last_ran = true;
                }
            }
        }
        self.errexit_off -= conditional as u32;
        self.status = status;
        let negated =
            if last_ran { and_or.rest.last().map_or(and_or.first.negated, |(_, p)| p.negated) } else { true };
        if status != 0
            && self.options.errexit
            && self.errexit_off == 0
            && !negated
            && self.exit_code.is_none()
        {
            self.exit_code = Some(status);
        }
        status
    }

    fn run_pipeline<H: Host>(&mut self, h: &mut H, pipeline: &Pipeline) -> i32 {
        let start = if pipeline.timed { Some(h.times_ns()) } else { None };
        self.errexit_off += pipeline.negated as u32;
        let mut status = match pipeline.commands.as_slice() {
            [one] => self.run_command(h, one),
            _ => h.pipeline(self, pipeline),
        };
        self.errexit_off -= pipeline.negated as u32;
        if pipeline.negated {
            status = (status == 0) as i32;
        }
        if let Some((real0, cpu0)) = start {
            let (real1, cpu1) = h.times_ns();
            // The kernel counts one CPU time per process and cannot split
            // it into user and system time: all of it is shown as user.
            let line = super::status::format_times(real1.saturating_sub(real0), cpu1.saturating_sub(cpu0), 0);
            let _ = h.write(2, format!("{line}\n").as_bytes());
        }
        self.status = status;
        status
    }

    /// One stage of a pipeline, in the process the host made for it: an
    /// external command replaces the process.
    pub fn run_stage<H: Host>(&mut self, h: &mut H, cmd: &Command) -> i32 {
        self.interactive = false;
        self.exec_in_place = true;
        let status = self.run_command(h, cmd);
        self.exit_code.unwrap_or(status)
    }

    pub fn run_command<H: Host>(&mut self, h: &mut H, cmd: &Command) -> i32 {
        let in_place = core::mem::take(&mut self.exec_in_place);
        match cmd {
            Command::Simple(c) => self.run_simple(h, c, in_place),
            Command::Compound(c, redirections) => self.run_compound_redirected(h, c, redirections),
            Command::FunctionDef { name, body } => {
                self.functions.insert(name.clone(), body.clone());
                0
            }
        }
    }

    fn run_compound_redirected<H: Host>(
        &mut self,
        h: &mut H,
        c: &Compound,
        redirections: &[Redirection<Word>],
    ) -> i32 {
        if redirections.is_empty() {
            return self.run_compound(h, c);
        }
        let Some(redirs) = self.expand_redirections(h, redirections) else { return STATUS_REDIRECT };
        let Some(saved) = h.redirect(&redirs) else { return STATUS_REDIRECT };
        let status = self.run_compound(h, c);
        h.restore(saved);
        status
    }

    fn run_compound<H: Host>(&mut self, h: &mut H, c: &Compound) -> i32 {
        match c {
            Compound::Group(list) => self.run_list(h, list),
            Compound::Subshell(list) => h.subshell(self, list, false).0,
            Compound::If { branches, otherwise } => {
                for (condition, body) in branches {
                    let status = self.condition(h, condition);
                    if self.unwinding() {
                        return status;
                    }
                    if status == 0 {
                        return self.run_list(h, body);
                    }
                }
                match otherwise {
                    Some(list) => self.run_list(h, list),
                    None => 0,
                }
            }
            Compound::Loop { condition, body, until } => {
                let mut status = 0;
                self.loop_depth += 1;
                loop {
                    let c = self.condition(h, condition);
                    if self.loop_control() {
                        break;
                    }
                    if (c == 0) == *until {
                        break;
                    }
                    status = self.run_list(h, body);
                    if self.loop_control() {
                        break;
                    }
                }
                self.loop_depth -= 1;
                status
            }
            Compound::For { name, words, body } => {
                let values = match words {
                    Some(words) => {
                        let mut values = Vec::new();
                        for w in words {
                            match self.expand_word(h, w) {
                                Ok(fields) => values.extend(fields),
                                Err(e) => return self.expand_failed(h, e),
                            }
                        }
                        values
                    }
                    None => self.params.clone(),
                };
                let mut status = 0;
                self.loop_depth += 1;
                for v in values {
                    if let Err(e) = self.assign(name, &v) {
                        self.loop_depth -= 1;
                        return self.fatal(h, &e);
                    }
                    status = self.run_list(h, body);
                    if self.loop_control() {
                        break;
                    }
                }
                self.loop_depth -= 1;
                status
            }
            Compound::Case { word, arms } => {
                let subject = match self.expand_string(h, word) {
                    Ok(s) => s,
                    Err(e) => return self.expand_failed(h, e),
                };
                for arm in arms {
                    for p in &arm.patterns {
                        let pat = match self.expand_pattern(h, p) {
                            Ok(p) => p,
                            Err(e) => return self.expand_failed(h, e),
                        };
                        if pattern::matches(&pat, &subject) {
                            return self.run_list(h, &arm.body);
                        }
                    }
                }
                0
            }
        }
    }

    /// Run a condition list: `set -e` does not apply in it.
    fn condition<H: Host>(&mut self, h: &mut H, list: &List) -> i32 {
        self.errexit_off += 1;
        let status = self.run_list(h, list);
        self.errexit_off -= 1;
        status
    }

    /// After a loop's condition or body: handle `break`/`continue`. True
    /// when the loop must stop.
    fn loop_control(&mut self) -> bool {
        match self.flow {
            Flow::Break(n) => {
                self.flow = if n > 1 { Flow::Break(n - 1) } else { Flow::Normal };
                true
            }
            Flow::Continue(n) if n > 1 => {
                self.flow = Flow::Continue(n - 1);
                true
            }
            Flow::Continue(_) => {
                self.flow = Flow::Normal;
                false
            }
            Flow::Return => true,
            Flow::Normal => self.exit_code.is_some(),
        }
    }

    /// An error that ends a non-interactive shell (an assignment to a
    /// read-only variable, XCU 2.8.1): status 2.
    fn fatal<H: Host>(&mut self, h: &mut H, message: &str) -> i32 {
        self.error(h, message);
        if !self.interactive {
            self.exit_code = Some(STATUS_USAGE);
        }
        STATUS_USAGE
    }

    /// As [`Shell::fatal`], the error already reported.
    fn fatal_quiet(&mut self) -> i32 {
        if !self.interactive {
            self.exit_code = Some(STATUS_USAGE);
        }
        STATUS_USAGE
    }

    fn expand_failed<H: Host>(&mut self, h: &mut H, e: ExpandError) -> i32 {
        self.error(h, &format!("{e}"));
        // An expansion error ends a non-interactive shell (XCU 2.8.1).
        if !self.interactive && !matches!(e, ExpandError::AmbiguousRedirect { .. }) {
            self.exit_code = Some(STATUS_USAGE);
        }
        STATUS_USAGE
    }

    fn expand_redirections<H: Host>(
        &mut self,
        h: &mut H,
        redirections: &[Redirection<Word>],
    ) -> Option<Vec<Redirection<String>>> {
        let mut out = Vec::with_capacity(redirections.len());
        for r in redirections {
            match self.expand_redirection(h, r) {
                Ok(r) => out.push(r),
                Err(e) => {
                    self.expand_failed(h, e);
                    return None;
                }
            }
        }
        Some(out)
    }

    /// One redirection's word expanded; `>` becomes [`RedirKind::WriteNew`]
    /// under `set -C`, `>|` a plain write.
    fn expand_redirection<H: Host>(
        &mut self,
        h: &mut H,
        r: &Redirection<Word>,
    ) -> Result<Redirection<String>, ExpandError> {
        let kind = match &r.kind {
            RedirKind::Read(w) => RedirKind::Read(self.redirect_target(h, w)?),
            RedirKind::Write(w) if self.options.noclobber => RedirKind::WriteNew(self.redirect_target(h, w)?),
            RedirKind::Write(w) | RedirKind::Clobber(w) | RedirKind::WriteNew(w) => {
                RedirKind::Write(self.redirect_target(h, w)?)
            }
            RedirKind::Append(w) => RedirKind::Append(self.redirect_target(h, w)?),
            RedirKind::ReadWrite(w) => RedirKind::ReadWrite(self.redirect_target(h, w)?),
            RedirKind::HereDoc(w) => RedirKind::HereDoc(self.expand_string(h, w)?),
            RedirKind::Dup(n) => RedirKind::Dup(*n),
            RedirKind::Close => RedirKind::Close,
        };
        Ok(Redirection { fd: r.fd, kind })
    }

    /// A redirection's file name: expanded as one string, neither split
    /// nor globbed (dash's reading of XCU 2.7, which lets a
    /// non-interactive shell skip pathname expansion there).
    fn redirect_target<H: Host>(&mut self, h: &mut H, w: &Word) -> Result<String, ExpandError> {
        self.expand_string(h, w)
    }

    /// Expand a simple command's words, redirections and assignments.
    pub fn expand_command<H: Host>(&mut self, h: &mut H, c: &SimpleCommand) -> Result<Expanded, ExpandError> {
        let mut argv = Vec::new();
        for w in &c.words {
            argv.extend(self.expand_word(h, w)?);
        }
        let mut assignments = Vec::new();
        for a in &c.assignments {
            assignments.push((a.name.clone(), self.expand_string(h, &a.value)?));
        }
        let mut redirections = Vec::new();
        for r in &c.redirections {
            redirections.push(self.expand_redirection(h, r)?);
        }
        Ok(Expanded { assignments, argv, redirections })
    }

    fn run_simple<H: Host>(&mut self, h: &mut H, c: &SimpleCommand, in_place: bool) -> i32 {
        self.subst_status = None;
        if c.words.is_empty() {
            return self.assign_only(h, c);
        }
        let cmd = match self.expand_command(h, c) {
            Ok(cmd) => cmd,
            Err(e) => return self.expand_failed(h, e),
        };
        if self.options.xtrace && (!cmd.argv.is_empty() || !cmd.assignments.is_empty()) {
            let mut line = String::from("+");
            for (n, v) in &cmd.assignments {
                line.push_str(&format!(" {n}={}", builtins::quote(v)));
            }
            for a in &cmd.argv {
                line.push(' ');
                line.push_str(&builtins::quote(a));
            }
            line.push('\n');
            let _ = h.write(2, line.as_bytes());
        }
        if cmd.argv.is_empty() {
            // Words that all expanded to nothing: as a command of
            // assignments and redirections only.
            let Some(saved) = h.redirect(&cmd.redirections) else { return STATUS_REDIRECT };
            h.restore(saved);
            for (n, v) in &cmd.assignments {
                if let Err(e) = self.assign(n, v) {
                    return self.fatal(h, &e);
                }
            }
            return self.subst_status.unwrap_or(0);
        }
        if let Some(ro) = cmd.assignments.iter().find(|(n, _)| self.readonly.contains(n)) {
            let message = format!("{}: is read only", ro.0);
            return self.fatal(h, &message);
        }
        self.dispatch(h, cmd, in_place, true)
    }

    /// Run an expanded command by its name: a function (unless
    /// `functions` is false, as under `command`), a builtin, a host
    /// builtin, or a program.
    fn dispatch<H: Host>(&mut self, h: &mut H, cmd: Expanded, in_place: bool, functions: bool) -> i32 {
        let Some(name) = cmd.argv.first().cloned() else { return 0 };
        if name == "command" {
            // `command [-p] name args…` runs name, never as a function;
            // `-v`/`-V` are the builtin's.
            let mut skip = 1;
            while cmd.argv.get(skip).is_some_and(|a| a == "-p") {
                skip += 1;
            }
            if cmd.argv.get(skip).is_some_and(|a| a == "--") {
                skip += 1;
            }
            if cmd.argv.get(skip).is_some_and(|a| !a.starts_with('-')) {
                let mut rest = cmd.clone();
                rest.argv.drain(..skip);
                return self.dispatch(h, rest, in_place, false);
            }
        }
        if let Some(body) = self.functions.get(&name).cloned().filter(|_| functions) {
            return self.with_assignments(h, &cmd, true, |sh, h| sh.call_function(h, &body, &cmd.argv));
        }
        if builtins::is_builtin(&name) {
            let special = builtins::is_special(&name);
            if name == "exec" && cmd.argv.len() == 1 {
                // `exec >file`: the redirections stay.
                if h.redirect(&cmd.redirections).is_none() {
                    // A special builtin's redirection error ends a script.
                    return self.fatal_quiet();
                }
                for (n, v) in &cmd.assignments {
                    self.set_var(n, v);
                }
                return 0;
            }
            return self.with_assignments(h, &cmd, !special, |sh, h| builtins::run(sh, h, &cmd.argv, &cmd));
        }
        if h.is_host_builtin(&name) {
            return self.with_assignments(h, &cmd, true, |sh, h| h.host_builtin(sh, &cmd.argv));
        }
        if in_place {
            return h.exec(self, &cmd);
        }
        h.run_external(self, &cmd)
    }

    /// A command without a name: redirections opened and closed again,
    /// then the assignments, each seeing the ones before it (XCU 2.9.1).
    fn assign_only<H: Host>(&mut self, h: &mut H, c: &SimpleCommand) -> i32 {
        let Some(redirections) = self.expand_redirections(h, &c.redirections) else { return STATUS_REDIRECT };
        let Some(saved) = h.redirect(&redirections) else { return STATUS_REDIRECT };
        h.restore(saved);
        let mut trace = String::from("+");
        for a in &c.assignments {
            match self.expand_string(h, &a.value) {
                Ok(v) => {
                    trace.push_str(&format!(" {}={}", a.name, builtins::quote(&v)));
                    if let Err(e) = self.assign(&a.name, &v) {
                        return self.fatal(h, &e);
                    }
                }
                Err(e) => return self.expand_failed(h, e),
            }
        }
        if self.options.xtrace && !c.assignments.is_empty() {
            trace.push('\n');
            let _ = h.write(2, trace.as_bytes());
        }
        self.subst_status.unwrap_or(0)
    }

    /// Run `f` with the command's redirections applied and its
    /// assignments set (undone afterwards when `temporary`).
    fn with_assignments<H: Host>(
        &mut self,
        h: &mut H,
        cmd: &Expanded,
        temporary: bool,
        f: impl FnOnce(&mut Shell, &mut H) -> i32,
    ) -> i32 {
        let Some(saved) = h.redirect(&cmd.redirections) else {
            // A special builtin's redirection error ends a script.
            return if temporary { STATUS_REDIRECT } else { self.fatal_quiet() };
        };
        let mut old = Vec::new();
        for (n, v) in &cmd.assignments {
            old.push((n.clone(), self.vars.get(n).cloned()));
            self.set_var(n, v);
        }
        let status = f(self, h);
        if temporary {
            for (n, v) in old.into_iter().rev() {
                match v {
                    Some(v) => self.vars.insert(n, v),
                    None => self.vars.remove(&n),
                };
            }
        }
        h.restore(saved);
        status
    }

    fn call_function<H: Host>(&mut self, h: &mut H, body: &FunctionBody, argv: &[String]) -> i32 {
        let params = core::mem::replace(&mut self.params, argv[1..].to_vec());
        let loops = core::mem::take(&mut self.loop_depth);
        self.call_depth += 1;
        self.locals.push(Vec::new());
        let mut status = self.run_compound_redirected(h, &body.command, &body.redirections);
        if self.flow == Flow::Return {
            self.flow = Flow::Normal;
            status = self.status;
        }
        // `local` variables get back the values they had.
        for (name, value, exported) in self.locals.pop().unwrap_or_default().into_iter().rev() {
            match value {
                Some(v) => self.vars.insert(name.clone(), v),
                None => self.vars.remove(&name),
            };
            if exported {
                self.exported.insert(name);
            } else {
                self.exported.remove(&name);
            }
        }
        self.call_depth -= 1;
        self.loop_depth = loops;
        self.params = params;
        status
    }

    /// Run a `.` script's text as a function body (for `return`).
    pub(super) fn dot<H: Host>(&mut self, h: &mut H, text: &str) -> i32 {
        self.call_depth += 1;
        let mut status = self.run_text(h, text);
        if self.flow == Flow::Return {
            self.flow = Flow::Normal;
            status = self.status;
        }
        self.call_depth -= 1;
        status
    }

    // --- expansion ---

    /// A word's fields: expansions, field splitting, pathname expansion,
    /// quote removal.
    pub fn expand_word<H: Host>(&mut self, h: &mut H, w: &Word) -> Result<Vec<String>, ExpandError> {
        let mut f = Fields::new(self.ifs());
        self.expand_parts(h, &w.parts, false, &mut f)?;
        let fields = f.finish();
        let mut out = Vec::new();
        for field in fields {
            if field.magic && !self.options.noglob {
                let matched = glob(h, &field.pattern);
                if !matched.is_empty() {
                    out.extend(matched);
                    continue;
                }
            }
            out.push(field.text);
        }
        Ok(out)
    }

    /// A word as one string, without field splitting or pathname
    /// expansion (assignments, `case` words, here-documents).
    pub fn expand_string<H: Host>(&mut self, h: &mut H, w: &Word) -> Result<String, ExpandError> {
        let mut f = Fields::new(String::new());
        f.joining = true;
        self.expand_parts(h, &w.parts, false, &mut f)?;
        Ok(f.cur.text)
    }

    /// A word as a pattern: quoted characters escaped with `\`.
    fn expand_pattern<H: Host>(&mut self, h: &mut H, w: &Word) -> Result<String, ExpandError> {
        let mut f = Fields::new(String::new());
        f.joining = true;
        self.expand_parts(h, &w.parts, false, &mut f)?;
        Ok(f.cur.pattern)
    }

    fn ifs(&self) -> String {
        self.vars.get("IFS").cloned().unwrap_or_else(|| " \t\n".to_string())
    }

    fn expand_parts<H: Host>(
        &mut self,
        h: &mut H,
        parts: &[Part],
        in_quotes: bool,
        f: &mut Fields,
    ) -> Result<(), ExpandError> {
        for part in parts {
            match part {
                Part::Text { text, quoted } => f.literal(text, *quoted || in_quotes),
                Part::Home => {
                    let home = self.var("HOME").unwrap_or_else(|| "~".to_string());
                    f.literal(&home, true);
                }
                Part::Param { name, quoted } => {
                    let quoted = *quoted || in_quotes;
                    if name == "@" || name == "*" {
                        self.expand_all_params(name == "@", quoted, f);
                        continue;
                    }
                    let value = self.param(name)?;
                    f.value(&value.unwrap_or_default(), quoted);
                }
                Part::ParamOp { name, op, word, quoted } => {
                    let quoted = *quoted || in_quotes;
                    self.expand_param_op(h, name, *op, word, quoted, f)?;
                }
                Part::CommandSubst { list, quoted } => {
                    let (status, mut out) = h.subshell(self, list, true);
                    self.subst_status = Some(status);
                    self.status = status;
                    while out.ends_with('\n') {
                        out.pop();
                    }
                    f.value(&out, *quoted || in_quotes);
                }
                Part::Arith { expr, quoted } => {
                    let text = self.expand_string(h, expr)?;
                    let value = arith::eval(&text, &mut ArithShell(self))
                        .map_err(|why| ExpandError::Arith { expr: text.trim().to_string(), why })?;
                    f.value(&format!("{value}"), *quoted || in_quotes);
                }
            }
        }
        Ok(())
    }

    /// A parameter, checking `set -u`.
    fn param(&self, name: &str) -> Result<Option<String>, ExpandError> {
        let v = self.var(name);
        if v.is_none() && self.options.nounset && name != "@" && name != "*" {
            return Err(ExpandError::Unset { name: name.to_string() });
        }
        Ok(v)
    }

    fn expand_all_params(&self, at: bool, quoted: bool, f: &mut Fields) {
        if quoted && !at {
            let sep = self.ifs().chars().next().map(String::from).unwrap_or_default();
            f.literal(&self.params.join(&sep), true);
            return;
        }
        if quoted {
            if self.params.is_empty() {
                f.empty_at = true;
            }
            for (i, p) in self.params.iter().enumerate() {
                if i > 0 {
                    f.break_field();
                }
                f.literal(p, true);
            }
            return;
        }
        for (i, p) in self.params.iter().enumerate() {
            if i > 0 {
                f.end_field();
            }
            f.value(p, false);
        }
    }

    fn expand_param_op<H: Host>(
        &mut self,
        h: &mut H,
        name: &str,
        op: ParamOp,
        word: &Word,
        quoted: bool,
        f: &mut Fields,
    ) -> Result<(), ExpandError> {
        let value = self.var(name);
        let set = |colon: bool| match &value {
            None => false,
            Some(v) => !(colon && v.is_empty()),
        };
        match op {
            ParamOp::Default { colon } => {
                if set(colon) {
                    f.value(&value.unwrap_or_default(), quoted);
                } else {
                    self.expand_parts(h, &word.parts, quoted, f)?;
                }
            }
            ParamOp::Alternative { colon } => {
                if set(colon) {
                    self.expand_parts(h, &word.parts, quoted, f)?;
                }
            }
            ParamOp::Assign { colon } => {
                if set(colon) {
                    f.value(&value.unwrap_or_default(), quoted);
                } else {
                    if !is_valid_name(name) {
                        return Err(ExpandError::CannotAssign { name: name.to_string() });
                    }
                    let v = self.expand_string(h, word)?;
                    self.set_var(name, &v);
                    f.value(&v, quoted);
                }
            }
            ParamOp::Error { colon } => {
                if set(colon) {
                    f.value(&value.unwrap_or_default(), quoted);
                } else {
                    let mut message = self.expand_string(h, word)?;
                    if message.is_empty() {
                        message = "parameter not set".to_string();
                    }
                    return Err(ExpandError::ParamError { name: name.to_string(), message });
                }
            }
            ParamOp::Length => {
                let v = self.param(name)?.unwrap_or_default();
                f.value(&format!("{}", v.chars().count()), quoted);
            }
            ParamOp::RemovePrefix { longest } | ParamOp::RemoveSuffix { longest } => {
                let v = self.param(name)?.unwrap_or_default();
                let pat = self.expand_pattern(h, word)?;
                let prefix = matches!(op, ParamOp::RemovePrefix { .. });
                f.value(&remove_match(&v, &pat, prefix, longest), quoted);
            }
        }
        Ok(())
    }
}

/// `${v#p}`, `${v##p}`, `${v%p}`, `${v%%p}`.
fn remove_match(v: &str, pat: &str, prefix: bool, longest: bool) -> String {
    let mut cuts: Vec<usize> = v.char_indices().map(|(i, _)| i).chain([v.len()]).collect();
    if prefix != longest {
        // Shortest prefix first, or longest suffix first (from index 0).
    } else {
        cuts.reverse();
    }
    for i in cuts {
        if prefix && pattern::matches(pat, &v[..i]) {
            return v[i..].to_string();
        }
        if !prefix && pattern::matches(pat, &v[i..]) {
            return v[..i].to_string();
        }
    }
    v.to_string()
}

/// The shell's variables as arithmetic sees them.
struct ArithShell<'a>(&'a mut Shell);

impl ArithVars for ArithShell<'_> {
    fn get(&self, name: &str) -> Option<String> {
        self.0.var(name)
    }
    fn set(&mut self, name: &str, value: i64) {
        self.0.set_var(name, &format!("{value}"));
    }
}

/// One field being built: its text, the same as a pattern (quoted
/// characters escaped), and whether it holds an unquoted `*`, `?`, `[`.
#[derive(Clone, Debug, Default)]
struct Field {
    text: String,
    pattern: String,
    magic: bool,
}

/// The fields of a word being expanded.
struct Fields {
    ifs: String,
    done: Vec<Field>,
    cur: Field,
    /// `cur` exists even if empty (quoted text makes it exist).
    open: bool,
    /// One string, no splitting (assignments, `case`, patterns).
    joining: bool,
    /// `"$@"` with no parameters: the word may vanish.
    empty_at: bool,
    /// The last field ended at IFS white space (so a following
    /// non-white delimiter does not make an empty field).
    ended_at_white: bool,
}

impl Fields {
    fn new(ifs: String) -> Fields {
        Fields {
            ifs,
            done: Vec::new(),
            cur: Field::default(),
            open: false,
            joining: false,
            empty_at: false,
            ended_at_white: false,
        }
    }

    fn push(&mut self, c: char, quoted: bool) {
        self.cur.text.push(c);
        if quoted && matches!(c, '*' | '?' | '[' | ']' | '\\' | '!' | '^' | '-') {
            self.cur.pattern.push('\\');
        }
        if !quoted && matches!(c, '*' | '?' | '[') {
            self.cur.magic = true;
        }
        self.cur.pattern.push(c);
        self.open = true;
        self.ended_at_white = false;
    }

    fn literal(&mut self, s: &str, quoted: bool) {
        if quoted {
            self.open = true;
        }
        for c in s.chars() {
            self.push(c, quoted);
        }
    }

    /// An expansion's result: split at `$IFS` unless quoted.
    fn value(&mut self, s: &str, quoted: bool) {
        if quoted || self.joining {
            self.literal(s, quoted);
            return;
        }
        for c in s.chars() {
            if !self.ifs.contains(c) {
                self.push(c, false);
            } else if c == ' ' || c == '\t' || c == '\n' {
                if self.open {
                    self.end_field();
                    self.ended_at_white = true;
                }
            } else {
                if !self.ended_at_white {
                    self.open = true;
                    self.end_field();
                }
                self.ended_at_white = false;
            }
        }
    }

    /// End the current field if it exists.
    fn end_field(&mut self) {
        if self.open {
            self.done.push(core::mem::take(&mut self.cur));
            self.open = false;
        }
    }

    /// `"$@"`: the next parameter starts a new field, even after an empty one.
    fn break_field(&mut self) {
        self.open = true;
        self.end_field();
        self.open = true;
    }

    fn finish(mut self) -> Vec<Field> {
        self.end_field();
        if self.empty_at && self.done.len() == 1 && self.done[0].text.is_empty() {
            self.done.clear();
        }
        self.done
    }
}

/// Pathname expansion of `pattern` (quoted characters escaped): the
/// matching paths, sorted; empty when none match.
fn glob<H: Host>(h: &mut H, pattern: &str) -> Vec<String> {
    let absolute = pattern.starts_with('/');
    let components: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    let mut paths: Vec<String> = vec![if absolute { "/".to_string() } else { String::new() }];
    for (i, comp) in components.iter().enumerate() {
        let last = i + 1 == components.len();
        let mut next = Vec::new();
        for base in &paths {
            let join = |name: &str| {
                if base.is_empty() {
                    name.to_string()
                } else if base.ends_with('/') {
                    format!("{base}{name}")
                } else {
                    format!("{base}/{name}")
                }
            };
            if !pattern::has_magic(comp) {
                let p = join(&pattern::unescape(comp));
                if h.stat(&p).is_some_and(|s| last || s.is_dir) {
                    next.push(p);
                }
                continue;
            }
            let dir = if base.is_empty() { "." } else { base.as_str() };
            let Some(mut names) = h.read_dir(dir) else { continue };
            names.sort();
            for name in names {
                if name == "." || name == ".." {
                    continue;
                }
                // A leading `.` must be matched explicitly (XCU 2.13.3).
                if name.starts_with('.') && !comp.starts_with('.') && !comp.starts_with("\\.") {
                    continue;
                }
                if pattern::matches(comp, &name) {
                    let p = join(&name);
                    if last || h.stat(&p).is_some_and(|s| s.is_dir) {
                        next.push(p);
                    }
                }
            }
        }
        paths = next;
    }
    if pattern.ends_with('/') {
        paths = paths.into_iter().map(|p| format!("{p}/")).collect();
    }
    // Without any magic in the last component the path must exist.
    paths.retain(|p| !p.is_empty());
    paths.sort();
    paths
}
