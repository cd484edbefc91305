//! The shell's syntax tree: what [`parse`](super::parse) builds and the
//! interpreter (`super::interp`) walks, with the words still unexpanded.
//!
//! What it is not: the parser or the expander. The types here only say
//! what a script is (XCU 2.9 "Shell Commands", 2.10 "Shell Grammar"); the
//! lexer and parser make them, the interpreter reads them.
//!
//! # Invariants
//! - A [`Word`] keeps its quoting (each [`Part`] says whether it was
//!   quoted), so that expansion can happen when the command runs.
//! - A [`Pipeline`] has at least one command; a [`SimpleCommand`] has at
//!   least one assignment, word or redirection.

use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;

/// A whole command line or script, or the body of a compound command:
/// items run one after the other (or, for background items, without
/// waiting).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct List {
    pub items: Vec<ListItem>,
}

/// One `and_or` of a list, ended by `;`, `&`, a newline or the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListItem {
    pub and_or: AndOr,
    /// Ended by `&`: run without waiting, as a job.
    pub background: bool,
    /// The item's source text (without the `&`), for job reports.
    pub text: String,
}

/// Pipelines joined by `&&` and `||`, evaluated left to right.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AndOr {
    pub first: Pipeline,
    pub rest: Vec<(Connector, Pipeline)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connector {
    /// `&&`: run the next pipeline if the last status was 0.
    And,
    /// `||`: run the next pipeline if the last status was not 0.
    Or,
}

/// Commands joined by `|`; the pipeline's status is the last command's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pipeline {
    /// Never empty.
    pub commands: Vec<Command>,
    /// Preceded by the keyword `time`: report elapsed and CPU time.
    pub timed: bool,
    /// Preceded by `!`: the status is inverted (0 becomes 1, others 0).
    pub negated: bool,
}

/// One stage of a pipeline (XCU 2.9.1, 2.9.4, 2.9.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Simple(SimpleCommand),
    /// A compound command and the redirections written after it
    /// (`while …; done < file`).
    Compound(Compound, Vec<Redirection<Word>>),
    /// `name() compound-command`: defines the function when run.
    FunctionDef {
        name: String,
        body: Rc<FunctionBody>,
    },
}

/// What a function runs: its compound command and redirections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionBody {
    pub command: Compound,
    pub redirections: Vec<Redirection<Word>>,
}

/// The compound commands of XCU 2.9.4.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Compound {
    /// `{ list; }`
    Group(List),
    /// `( list )`
    Subshell(List),
    /// `if c; then b; elif c2; then b2; else e; fi`: the (condition, body)
    /// pairs in order, then the `else` part.
    If { branches: Vec<(List, List)>, otherwise: Option<List> },
    /// `while c; do b; done`, or `until` when `until` is set.
    Loop { condition: List, body: List, until: bool },
    /// `for name [in words]; do b; done`; `words` is `None` without `in`
    /// (then the positional parameters).
    For { name: String, words: Option<Vec<Word>>, body: List },
    /// `case word in pattern|pattern) list;; … esac`
    Case { word: Word, arms: Vec<CaseArm> },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseArm {
    pub patterns: Vec<Word>,
    pub body: List,
}

/// A simple command, unexpanded. At least one of the three lists is not
/// empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// `NAME=value` words before the command name.
    pub assignments: Vec<Assignment>,
    /// The command name and its arguments.
    pub words: Vec<Word>,
    /// In source order (it matters: `>f 2>&1` differs from `2>&1 >f`).
    pub redirections: Vec<Redirection<Word>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub name: String,
    pub value: Word,
}

/// A redirection of descriptor `fd`; `T` is a [`Word`] before expansion
/// and a `String` (the path) after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirection<T> {
    pub fd: i32,
    pub kind: RedirKind<T>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedirKind<T> {
    /// `<path`: open for reading.
    Read(T),
    /// `>path`: create or truncate, open for writing.
    Write(T),
    /// `>>path`: create if needed, open for appending.
    Append(T),
    /// `>|path`: as `Write`, even under `set -C`.
    Clobber(T),
    /// `>path` under `set -C` (only after expansion): create, failing if
    /// a regular file of that name exists.
    WriteNew(T),
    /// `<>path`: open for reading and writing, creating it if needed.
    ReadWrite(T),
    /// `n>&m` or `n<&m`: make `fd` a copy of descriptor `m`.
    Dup(i32),
    /// `n>&-` or `n<&-`: close `fd`.
    Close,
    /// `<<word` / `<<-word`: standard input from the text that follows
    /// (XCU 2.7.4). Before expansion `T` is the body as a [`Word`] (its
    /// parts literal when the delimiter was quoted); after, the text.
    HereDoc(T),
}

/// A word as written: literal text and expansions, each remembering
/// whether it was quoted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub parts: Vec<Part>,
    /// The source text, for messages.
    pub raw: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Literal text. `quoted` text was inside quotes or escaped.
    Text { text: String, quoted: bool },
    /// `$name`, `${name}` or a special parameter (`?`, `$`, `!`, `#`, `@`,
    /// `*`, `-`, `0`…`9`).
    Param { name: String, quoted: bool },
    /// `${name<op>word}` and `${#name}` (XCU 2.6.2).
    ParamOp { name: String, op: ParamOp, word: Box<Word>, quoted: bool },
    /// `$(…)` or `` `…` ``: the list's standard output, trailing newlines
    /// removed (XCU 2.6.3).
    CommandSubst { list: Box<List>, quoted: bool },
    /// `$((…))`: the expression, itself expanded first (XCU 2.6.4).
    Arith { expr: Box<Word>, quoted: bool },
    /// A leading unquoted `~` (followed by `/` or nothing): `$HOME`.
    Home,
}

/// The operator of a `${…}` expansion. `colon` forms treat an empty value
/// as unset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamOp {
    /// `${x-w}`/`${x:-w}`
    Default { colon: bool },
    /// `${x=w}`/`${x:=w}`
    Assign { colon: bool },
    /// `${x?w}`/`${x:?w}`
    Error { colon: bool },
    /// `${x+w}`/`${x:+w}`
    Alternative { colon: bool },
    /// `${#x}`
    Length,
    /// `${x%p}` (`longest`: `%%`)
    RemoveSuffix { longest: bool },
    /// `${x#p}` (`longest`: `##`)
    RemovePrefix { longest: bool },
}

impl Word {
    /// The word's text if it holds no expansion at all.
    pub fn literal(&self) -> Option<String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text { text, .. } => out.push_str(text),
                _ => return None,
            }
        }
        Some(out)
    }

    /// Is the word exactly `s`, unquoted (how keywords are recognised)?
    pub(super) fn is_bare(&self, s: &str) -> bool {
        matches!(self.parts.as_slice(), [Part::Text { text, quoted: false }] if text == s)
    }
}

/// The reserved words (XCU 2.4), recognised by the parser only where a
/// command or a part of a compound command may start.
pub(super) const KEYWORDS: [&str; 16] = [
    "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "{", "}", "!",
    "in",
];

/// The reserved word `w` is, if it is one unquoted.
pub(super) fn keyword(w: &Word) -> Option<&'static str> {
    KEYWORDS.iter().copied().find(|k| w.is_bare(k))
}

/// Is `s` a valid variable name (`[A-Za-z_][A-Za-z0-9_]*`)?
pub fn is_valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::parse;

    #[test]
    fn literal_and_names() {
        let l = parse("'a'b\"c\" $X").unwrap();
        let Command::Simple(c) = &l.items[0].and_or.first.commands[0] else { panic!() };
        assert_eq!(c.words[0].literal().as_deref(), Some("abc"));
        assert_eq!(c.words[1].literal(), None);
        assert!(is_valid_name("_a1"));
        assert!(is_valid_name("PATH"));
        assert!(!is_valid_name(""));
        assert!(!is_valid_name("1a"));
        assert!(!is_valid_name("a-b"));
    }
}
