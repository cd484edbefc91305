//! The shell's command language (`apps/sh`): parsing a command line into a
//! small syntax tree, expanding a command's words just before it runs, and
//! the bookkeeping of background jobs.
//!
//! What it is not: an interpreter. Nothing here forks, opens or waits;
//! `apps/sh` walks the tree. The language is the POSIX shell's core without
//! control flow: words with `'…'`, `"…"` and `\` quoting, `$NAME`, `${NAME}`
//! and the special parameters `$? $$ $! $# $0…$9`, a leading `~`, `#`
//! comments, lists separated by `;`, `&` or newlines, `&&` and `||`,
//! pipelines `a | b`, the keywords `time` and `!` in front of a pipeline,
//! `NAME=value` prefixes, and the redirections `<`, `>`, `>>`, `>|`, `n<&m`,
//! `n>&m` and `n>&-` with an optional descriptor number in front. Command
//! substitution, subshells, here-documents, `$@`/`$*` and globbing are not
//! supported and are reported as such, never silently taken literally.
//!
//! Invariants:
//! - Parsing does not expand: a [`Word`] keeps its quoting, so that `$?` in
//!   `false; echo $?` is read when `echo` runs, not when the line is parsed.
//! - Expansion ([`Word::expand`]) is POSIX's: unquoted expansions are split
//!   into fields at blanks, quoted ones never; a word made only of
//!   unquoted expansions that come out empty yields no field, while `""`
//!   yields one empty field.
//! - Every malformed input gives a [`ParseError`] with the byte offset of
//!   the problem; [`ParseError::is_incomplete`] says when more input (a
//!   continuation line) could complete it.
//!
//! # Layers, from the bottom (each uses only those listed before it)
//! - `syntax`: the tree ([`List`] down to [`Word`]) and what a variable
//!   name is.
//! - `errors`: [`ParseError`] and [`ExpandError`], and their messages.
//! - `lexer`: a line cut into tokens; each word into parts that remember
//!   their quoting.
//! - `parser`: the tokens built into the tree ([`parse`]).
//! - `expand`: a command's words expanded just before it runs
//!   ([`Command::expand`] into a [`SimpleCommand`]).
//! - `status`: how a command ended ([`Outcome`], `$?`, the words for a
//!   signal, `time`'s line).
//! - `jobs`: the background jobs ([`Jobs`]) and their reports.
//!
//! A line goes lexer, parser, and then, command by command as `apps/sh`
//! runs them, expansion. `apps/sh` sees only the names re-exported here.

mod errors;
mod expand;
mod jobs;
mod lexer;
mod parser;
mod status;
mod syntax;
#[cfg(test)]
mod testing;

pub use errors::{ExpandError, ParseError, ParseErrorKind};
pub use expand::{SimpleCommand, Vars};
pub use jobs::{Job, Jobs, format_job, format_job_done};
pub use parser::parse;
pub use status::{Outcome, format_seconds, format_times, signal_description};
pub use syntax::{
    AndOr, Assignment, Command, Connector, List, ListItem, Part, Pipeline, RedirKind, Redirection, Word,
    is_valid_name,
};
