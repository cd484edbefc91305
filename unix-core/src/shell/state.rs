//! The shell's state and its contract with the host: [`Shell`]
//! (variables, positional parameters, functions, options, how the
//! commands being run unwind) and the [`Host`] trait (the process work),
//! with the small accessors every layer above uses.
//!
//! What it is not: the interpreter (`super::interp` runs commands on a
//! `Shell`) nor the builtins (`super::builtins`); both build on this.
//!
//! Invariants: a builtin's output goes through [`Shell::out`], which
//! reports a failed write; `$IFS` starts as space, tab, newline.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::syntax::{FunctionBody, List, ListItem, Pipeline, Redirection};

/// `$?` after a usage or syntax error.
pub const STATUS_USAGE: i32 = 2;
/// `$?` of a command not found.
pub const STATUS_NOT_FOUND: i32 = 127;

/// What a host knows of a path, for `test` and pathname expansion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub is_dir: bool,
    pub is_regular: bool,
    pub size_bytes: u64,
    /// Permission bits (`0o777`).
    pub mode: u32,
}

/// A command ready to run: every word expanded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expanded {
    pub assignments: Vec<(String, String)>,
    /// Empty for a command made only of assignments and redirections.
    pub argv: Vec<String>,
    pub redirections: Vec<Redirection<String>>,
}

/// The process work the interpreter leaves to its host.
pub trait Host: Sized {
    /// What [`Host::redirect`] saved, for [`Host::restore`].
    type Saved;
    /// Write all of `bytes` to descriptor `fd`; the error's name on failure.
    fn write(&mut self, fd: i32, bytes: &[u8]) -> Result<(), String>;
    /// Read from descriptor `fd` (0 bytes: end of file).
    fn read(&mut self, fd: i32, buf: &mut [u8]) -> Result<usize, String>;
    /// Apply redirections in the shell itself; `None` when one failed
    /// (it has been reported, and the others undone).
    fn redirect(&mut self, redirections: &[Redirection<String>]) -> Option<Self::Saved>;
    /// Undo what [`Host::redirect`] did.
    fn restore(&mut self, saved: Self::Saved);
    /// Run an external program (fork, redirect, exec, wait): its status.
    fn run_external(&mut self, sh: &mut Shell, cmd: &Expanded) -> i32;
    /// Replace the shell by the program (`exec`, or the last command of a
    /// pipeline stage); returns only on failure, with the status.
    fn exec(&mut self, sh: &mut Shell, cmd: &Expanded) -> i32;
    /// Run a pipeline of two or more commands, each in its own process
    /// running [`Shell::run_stage`]; the last one's status.
    fn pipeline(&mut self, sh: &mut Shell, pipeline: &Pipeline) -> i32;
    /// Run `list` in a copy of the shell; with `capture`, its standard
    /// output is returned (command substitution).
    fn subshell(&mut self, sh: &mut Shell, list: &List, capture: bool) -> (i32, String);
    /// Start `item` as a background job; the status (0 once started).
    fn background(&mut self, sh: &mut Shell, item: &ListItem) -> i32;
    /// The names in directory `dir` (without `.` and `..`).
    fn read_dir(&mut self, dir: &str) -> Option<Vec<String>>;
    fn stat(&mut self, path: &str) -> Option<FileInfo>;
    fn read_file(&mut self, path: &str) -> Result<String, String>;
    /// Is `name` a builtin the host runs (`cd`, `pwd`, `jobs`, `wait`, …)?
    fn is_host_builtin(&self, name: &str) -> bool;
    /// Run such a builtin in the shell's process.
    fn host_builtin(&mut self, sh: &mut Shell, argv: &[String]) -> i32;
    /// Real time and the reaped children's CPU time, in nanoseconds (`time`).
    fn times_ns(&mut self) -> (u64, u64);
    /// What signal `sig` does to the shell from now on (`trap`); the
    /// error says why it cannot be done.
    fn signal_action(&mut self, sig: u32, action: SignalAction) -> Result<(), String>;
    /// The caught signals that arrived since the last call (bit n: signal
    /// n), for their traps to run.
    fn take_signals(&mut self) -> u64;
    /// Set the file-creation mask (`None`: only read it); the previous one.
    fn umask(&mut self, mask: Option<u32>) -> u32;
    /// Read (`set` = None) or set the (soft, hard) limit of `resource`
    /// (`protocols::unix::rlimit`) of the shell's process (`ulimit`); the
    /// limits before. The error is the errno's name. A host with no
    /// limits says so.
    fn rlimit(&mut self, resource: u64, set: Option<(u64, u64)>) -> Result<(u64, u64), String> {
        let _ = (resource, set);
        Err(String::from("ENOSYS (limits are not kept here)"))
    }
}

/// What a signal does to the shell, as `trap` sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalAction {
    /// The system's default (`trap - SIG`).
    Default,
    /// Nothing (`trap '' SIG`).
    Ignore,
    /// Recorded, for the trap's command to run between commands.
    Catch,
}

/// The signals `trap` knows by name (Linux numbers, as `protocols`),
/// in number order; EXIT is 0.
pub const TRAP_SIGNALS: [(&str, u32); 13] = [
    ("EXIT", 0),
    ("HUP", 1),
    ("INT", 2),
    ("QUIT", 3),
    ("ILL", 4),
    ("FPE", 8),
    ("KILL", 9),
    ("USR1", 10),
    ("SEGV", 11),
    ("USR2", 12),
    ("PIPE", 13),
    ("ALRM", 14),
    ("TERM", 15),
];

/// How the commands being run unwind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Normal,
    /// `break n`: leave n loops.
    Break(u32),
    /// `continue n`: leave n-1 loops and go on with the next.
    Continue(u32),
    /// `return`: leave the function or `.` script.
    Return,
}

/// `set`'s options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `-e`: exit when a command fails (outside conditions).
    pub errexit: bool,
    /// `-u`: expanding an unset parameter is an error.
    pub nounset: bool,
    /// `-x`: print each command before running it.
    pub xtrace: bool,
    /// `-f`: no pathname expansion.
    pub noglob: bool,
    /// `-a`: every variable assigned is exported.
    pub allexport: bool,
    /// `-C`: `>` does not overwrite an existing file (`>|` does).
    pub noclobber: bool,
    /// `-n`: read commands without running them (ignored when interactive).
    pub noexec: bool,
    /// `-v`: print input lines as they are read (the host does).
    pub verbose: bool,
}

/// `set -o`'s names, in dash's order, with their letters. The options
/// this shell does not act on (`ignoreeof`, `monitor`, …) are listed by
/// `set -o` as dash does but cannot be turned on.
pub const OPTION_NAMES: [(&str, Option<char>); 18] = [
    ("errexit", Some('e')),
    ("noglob", Some('f')),
    ("ignoreeof", None),
    ("interactive", Some('i')),
    ("monitor", Some('m')),
    ("noexec", Some('n')),
    ("stdin", Some('s')),
    ("xtrace", Some('x')),
    ("verbose", Some('v')),
    ("vi", None),
    ("emacs", None),
    ("noclobber", Some('C')),
    ("allexport", Some('a')),
    ("notify", Some('b')),
    ("nounset", Some('u')),
    ("privileged", Some('p')),
    ("nolog", None),
    ("debug", None),
];

impl Options {
    /// The setting of the option with letter `c`; `None` for a letter
    /// this shell does not act on.
    pub fn flag(&mut self, c: char) -> Option<&mut bool> {
        Some(match c {
            'e' => &mut self.errexit,
            'u' => &mut self.nounset,
            'x' => &mut self.xtrace,
            'f' => &mut self.noglob,
            'a' => &mut self.allexport,
            'C' => &mut self.noclobber,
            'n' => &mut self.noexec,
            'v' => &mut self.verbose,
            _ => return None,
        })
    }
}

/// The shell's language state.
#[derive(Clone, Debug)]
pub struct Shell {
    /// Shell variables; those named in `exported` go to children.
    pub vars: BTreeMap<String, String>,
    pub exported: BTreeSet<String>,
    /// `$0`.
    pub arg0: String,
    /// `$1`, `$2`, …
    pub params: Vec<String>,
    /// `$?`.
    pub status: i32,
    /// `$$`.
    pub shell_pid: u64,
    /// `$!`.
    pub last_background: Option<u64>,
    pub functions: BTreeMap<String, Rc<FunctionBody>>,
    pub options: Options,
    /// Interactive: errors do not end the shell.
    pub interactive: bool,
    /// Set by `exit` (or a fatal error): stop, and exit with this status.
    pub exit_code: Option<i32>,
    pub flow: Flow,
    /// Loops entered in the current function (or at the top).
    pub(super) loop_depth: u32,
    /// Functions and `.` scripts being run (for `return`).
    pub(super) call_depth: u32,
    /// Inside a condition (`if`, `while`, left of `&&`/`||`, after `!`):
    /// `set -e` does not apply.
    pub(super) errexit_off: u32,
    /// The status of the last command substitution of the command being
    /// expanded (a command of assignments only takes it as its status).
    pub(super) subst_status: Option<i32>,
    /// Set by a host in a pipeline stage's process: an external command
    /// there replaces the process instead of forking again.
    pub exec_in_place: bool,
    /// `trap`'s commands by signal number (0: EXIT); an empty command
    /// means the signal is ignored.
    pub traps: BTreeMap<u32, String>,
    /// Running a trap's command (no trap runs inside another).
    pub(super) in_trap: bool,
    /// `readonly` names.
    pub readonly: BTreeSet<String>,
    /// `local`'s saved variables, one frame per function being run: the
    /// name, its value before and whether it was exported.
    pub(super) locals: Vec<Vec<(String, Option<String>, bool)>>,
    /// `getopts`: the character within `$OPTIND`'s argument to go on at.
    pub(super) optchar: usize,
    /// `getopts`: the `OPTIND` it last set (another value: start over).
    pub(super) getopts_last: Option<String>,
}

impl Shell {
    pub fn new(shell_pid: u64) -> Shell {
        // `$IFS` starts as space, tab, newline (XCU 2.5.3), visible to
        // scripts that save and restore it.
        let mut vars = BTreeMap::new();
        vars.insert("IFS".to_string(), " \t\n".to_string());
        Shell {
            vars,
            exported: BTreeSet::new(),
            arg0: "sh".to_string(),
            params: Vec::new(),
            status: 0,
            shell_pid,
            last_background: None,
            functions: BTreeMap::new(),
            options: Options::default(),
            interactive: false,
            exit_code: None,
            flow: Flow::Normal,
            loop_depth: 0,
            call_depth: 0,
            errexit_off: 0,
            subst_status: None,
            exec_in_place: false,
            traps: BTreeMap::new(),
            in_trap: false,
            readonly: BTreeSet::new(),
            locals: Vec::new(),
            optchar: 0,
            getopts_last: None,
        }
    }

    /// A parameter's value (`None`: unset).
    pub fn var(&self, name: &str) -> Option<String> {
        match name {
            "?" => Some(format!("{}", self.status)),
            "$" => Some(format!("{}", self.shell_pid)),
            "!" => self.last_background.map(|p| format!("{p}")),
            "#" => Some(format!("{}", self.params.len())),
            "-" => {
                let o = self.options;
                // dash lists them in the reverse of its option order.
                let flags = [
                    (o.nounset, 'u'),
                    (o.allexport, 'a'),
                    (o.noclobber, 'C'),
                    (o.verbose, 'v'),
                    (o.xtrace, 'x'),
                    (o.noexec, 'n'),
                    (o.noglob, 'f'),
                    (o.errexit, 'e'),
                ];
                Some(flags.iter().filter(|(on, _)| *on).map(|(_, c)| *c).collect())
            }
            "@" | "*" => Some(self.params.join(" ")),
            "0" => Some(self.arg0.clone()),
            n if n.bytes().all(|b| b.is_ascii_digit()) => {
                n.parse::<usize>().ok().filter(|&i| i > 0).and_then(|i| self.params.get(i - 1)).cloned()
            }
            n => self.vars.get(n).cloned(),
        }
    }

    /// Set a variable, whether or not it is read-only (the shell's own
    /// settings); scripts' assignments go through [`Shell::assign`].
    pub fn set_var(&mut self, name: &str, value: &str) {
        self.vars.insert(name.to_string(), value.to_string());
        if self.options.allexport {
            self.exported.insert(name.to_string());
        }
    }

    /// A script's assignment: refused for a `readonly` variable, with the
    /// message to report.
    pub fn assign(&mut self, name: &str, value: &str) -> Result<(), String> {
        if self.readonly.contains(name) {
            return Err(format!("{name}: is read only"));
        }
        self.set_var(name, value);
        Ok(())
    }

    /// Should the commands being run stop (exit, break, continue, return)?
    pub fn unwinding(&self) -> bool {
        self.exit_code.is_some() || self.flow != Flow::Normal
    }

    /// Report a message on standard error as `sh: message`.
    pub fn error<H: Host>(&mut self, h: &mut H, message: &str) {
        let _ = h.write(2, format!("sh: {message}\n").as_bytes());
    }

    /// A builtin's output: on failure, report it and give 1.
    pub fn out<H: Host>(&mut self, h: &mut H, name: &str, text: &str) -> Result<(), i32> {
        h.write(1, text.as_bytes()).map_err(|e| {
            self.error(h, &format!("{name}: write error: {e}"));
            1
        })
    }

    pub(super) fn loop_depth(&self) -> u32 {
        self.loop_depth
    }

    pub(super) fn call_depth(&self) -> u32 {
        self.call_depth
    }
}
