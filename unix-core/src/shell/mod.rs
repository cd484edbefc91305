//! The shell's command language (`apps/sh`), POSIX's (XCU chapter 2):
//! parsing a script into a syntax tree, and interpreting it — control
//! flow, functions, expansions, the builtins that need no process — with
//! the process work left to a [`Host`].
//!
//! What it is not: a process manager. Nothing here forks, opens or waits;
//! `apps/sh` implements [`Host`] with the runtime's calls, and the host
//! tests implement it with in-memory files (`testing`). What is supported
//! and what is not is listed in `docs/shell.md`; anything unsupported is
//! reported by name (a [`ParseErrorKind::Unsupported`] or a builtin's
//! error), never taken literally.
//!
//! Invariants:
//! - Parsing does not expand: a [`Word`] keeps its quoting, so that `$?` in
//!   `false; echo $?` is read when `echo` runs, not when the line is parsed.
//! - Expansion is POSIX's: unquoted expansions are split into fields at
//!   `$IFS`, quoted ones never; a word made only of unquoted expansions
//!   that come out empty yields no field, while `""` yields one empty field.
//! - Every malformed input gives a [`ParseError`] with the byte offset of
//!   the problem; [`ParseError::is_incomplete`] says when more input (a
//!   continuation line) could complete it.
//!
//! # Layers, from the bottom (each uses only those listed before it)
//! - `syntax`: the tree ([`List`] down to [`Word`]) and what a variable
//!   name and a reserved word are.
//! - `errors`: [`ParseError`] and [`ExpandError`], and their messages.
//! - `pattern`, `arith`: pattern matching (`case`, globs, `${x%p}`) and
//!   arithmetic (`$((…))`), pure functions.
//! - `lexer`: a script cut into tokens; each word into parts that remember
//!   their quoting.
//! - `parser`: the tokens built into the tree ([`parse`]).
//! - `status`: how a command ended ([`Outcome`], `$?`, `time`'s line).
//! - `state`: the [`Shell`]'s state and the [`Host`] trait.
//! - `builtins`: the builtins that need no process (`eval` and `.` call
//!   back into the interpreter through `Shell`'s methods).
//! - `interp`: the tree run against a [`Shell`] and a [`Host`], and the
//!   expansions.
//! - `jobs`: the background jobs ([`Jobs`]) and their reports.

mod arith;
mod builtins;
mod errors;
mod interp;
mod jobs;
mod lexer;
mod parser;
mod pattern;
#[cfg(test)]
mod script_tests;
mod state;
mod status;
mod syntax;
#[cfg(test)]
mod testing;
mod ulimit;

pub use builtins::quote;
pub use errors::{ExpandError, ParseError, ParseErrorKind};
pub use jobs::{Job, Jobs, format_job, format_job_done};
pub use parser::parse;
pub use state::{
    Expanded, FileInfo, Flow, Host, OPTION_NAMES, Options, STATUS_NOT_FOUND, STATUS_USAGE, Shell,
    SignalAction, TRAP_SIGNALS,
};
pub use status::{Outcome, format_seconds, format_times, signal_description};
pub use syntax::{
    AndOr, Assignment, CaseArm, Command, Compound, Connector, FunctionBody, List, ListItem, ParamOp, Part,
    Pipeline, RedirKind, Redirection, SimpleCommand, Word, is_valid_name,
};
