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

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

// ---------------------------------------------------------------------------
// Syntax tree
// ---------------------------------------------------------------------------

/// A whole command line or script: items run one after the other (or, for
/// background items, without waiting).
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

/// A simple command, unexpanded. At least one of the three lists is not
/// empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Command {
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
    /// `n>&m` or `n<&m`: make `fd` a copy of descriptor `m`.
    Dup(i32),
    /// `n>&-` or `n<&-`: close `fd`.
    Close,
}

/// A word as written: literal text and parameter references, each
/// remembering whether it was quoted.
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
    /// `$name`, `${name}` or a special parameter (`?`, `$`, `!`, `#`, `0`…`9`).
    Param { name: String, quoted: bool },
    /// A leading unquoted `~` (followed by `/` or nothing): `$HOME`.
    Home,
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// `'` with no closing `'`.
    UnterminatedSingleQuote,
    /// `"` with no closing `"`.
    UnterminatedDoubleQuote,
    /// `${` with no closing `}`.
    UnterminatedBrace,
    /// `${}` or `${…}` holding something other than a parameter name.
    BadSubstitution,
    /// The input ends with a `\` (a line continuation).
    EndAfterBackslash,
    /// The input ends after `|`, `&&` or `||`.
    EndAfterOperator(&'static str),
    /// `a | | b`, `a | ;`: nothing between `|` and the next operator.
    EmptyPipelineStage,
    /// No command after `&&`, `||`, `time` or `!`.
    MissingCommand(&'static str),
    /// An operator where a command should start (`; a`, `a ;; b`, `&& a`).
    UnexpectedToken(&'static str),
    /// A redirection operator with no file name after it.
    MissingRedirectTarget(&'static str),
    /// `>&`/`<&` followed by something that is not a descriptor number or `-`.
    BadFdTarget(&'static str),
    /// A descriptor number too large (`99999999999>f`).
    BadFdNumber,
    /// Valid shell syntax that this shell does not implement.
    Unsupported(&'static str),
}

/// A syntax error and the byte offset in the input where it was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub kind: ParseErrorKind,
    pub offset: usize,
}

impl ParseError {
    /// Could more input complete the line? (An interactive shell then
    /// reads a continuation line instead of reporting the error.)
    pub fn is_incomplete(&self) -> bool {
        matches!(
            self.kind,
            ParseErrorKind::UnterminatedSingleQuote
                | ParseErrorKind::UnterminatedDoubleQuote
                | ParseErrorKind::EndAfterBackslash
                | ParseErrorKind::EndAfterOperator(_)
        )
    }
}

impl ParseError {
    /// The 1-based line of `src` (the text given to [`parse`]) where the
    /// error was found.
    pub fn line(&self, src: &str) -> usize {
        let end = self.offset.min(src.len());
        1 + src.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count()
    }
}

/// The message alone; [`ParseError::offset`] and [`ParseError::line`] say where.
impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ParseErrorKind::*;
        match self.kind {
            UnterminatedSingleQuote => write!(f, "unterminated single quote"),
            UnterminatedDoubleQuote => write!(f, "unterminated double quote"),
            UnterminatedBrace => write!(f, "unterminated '${{'"),
            BadSubstitution => write!(f, "bad substitution"),
            EndAfterBackslash => write!(f, "unexpected end of input after '\\'"),
            EndAfterOperator(op) => write!(f, "unexpected end of input after '{op}'"),
            EmptyPipelineStage => write!(f, "syntax error: empty command in pipeline"),
            MissingCommand(after) => write!(f, "syntax error: missing command after '{after}'"),
            UnexpectedToken(tok) => write!(f, "syntax error near unexpected '{tok}'"),
            MissingRedirectTarget(op) => write!(f, "syntax error: missing file name after '{op}'"),
            BadFdTarget(op) => write!(f, "syntax error: '{op}' needs a descriptor number or '-'"),
            BadFdNumber => write!(f, "bad file descriptor number"),
            Unsupported(what) => write!(f, "{what} not supported"),
        }
    }
}

/// An error found while expanding a command just before it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpandError {
    /// A redirection's file name expanded to no word or to several.
    AmbiguousRedirect { word: String },
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpandError::AmbiguousRedirect { word } => write!(f, "{word}: ambiguous redirect"),
        }
    }
}

// ---------------------------------------------------------------------------
// Expansion
// ---------------------------------------------------------------------------

/// Where expansion finds parameter values: shell variables, the
/// environment and the special parameters (`"?"`, `"$"`, `"!"`, `"#"`,
/// `"0"`…`"9"`). `None` means unset, which expands to nothing.
pub trait Vars {
    fn var(&self, name: &str) -> Option<String>;
}

impl<F: Fn(&str) -> Option<String>> Vars for F {
    fn var(&self, name: &str) -> Option<String> {
        self(name)
    }
}

/// The bytes that separate fields in unquoted expansions (POSIX's default
/// `IFS`, all of it white space).
fn is_field_separator(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n')
}

impl Word {
    /// The word's fields after parameter expansion, field splitting and
    /// quote removal (see the module's invariants).
    pub fn expand<V: Vars + ?Sized>(&self, vars: &V) -> Vec<String> {
        let mut fields = Vec::new();
        let mut field = String::new();
        // Whether `field` exists even if empty (quoted text makes it exist).
        let mut open = false;
        for part in &self.parts {
            match part {
                Part::Text { text, .. } => {
                    field.push_str(text);
                    open = true;
                }
                Part::Home => {
                    field.push_str(&vars.var("HOME").unwrap_or_else(|| "~".to_string()));
                    open = true;
                }
                Part::Param { name, quoted: true } => {
                    field.push_str(&vars.var(name).unwrap_or_default());
                    open = true;
                }
                Part::Param { name, quoted: false } => {
                    for c in vars.var(name).unwrap_or_default().chars() {
                        if is_field_separator(c) {
                            if open {
                                fields.push(core::mem::take(&mut field));
                                open = false;
                            }
                        } else {
                            field.push(c);
                            open = true;
                        }
                    }
                }
            }
        }
        if open {
            fields.push(field);
        }
        fields
    }

    /// The word expanded without field splitting, as one string (for
    /// assignment values: `X=$Y` keeps `$Y`'s blanks).
    pub fn expand_joined<V: Vars + ?Sized>(&self, vars: &V) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text { text, .. } => out.push_str(text),
                Part::Home => out.push_str(&vars.var("HOME").unwrap_or_else(|| "~".to_string())),
                Part::Param { name, .. } => out.push_str(&vars.var(name).unwrap_or_default()),
            }
        }
        out
    }

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
    fn is_bare(&self, s: &str) -> bool {
        matches!(self.parts.as_slice(), [Part::Text { text, quoted: false }] if text == s)
    }
}

/// A command ready to run: every word expanded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    pub assignments: Vec<(String, String)>,
    /// Empty for a command made only of assignments and redirections.
    pub argv: Vec<String>,
    pub redirections: Vec<Redirection<String>>,
}

impl Command {
    /// Expand every word of the command with the values `vars` has now.
    pub fn expand<V: Vars + ?Sized>(&self, vars: &V) -> Result<SimpleCommand, ExpandError> {
        let assignments =
            self.assignments.iter().map(|a| (a.name.clone(), a.value.expand_joined(vars))).collect();
        let argv = self.words.iter().flat_map(|w| w.expand(vars)).collect();
        let mut redirections = Vec::with_capacity(self.redirections.len());
        for r in &self.redirections {
            let path = |w: &Word| -> Result<String, ExpandError> {
                let mut fields = w.expand(vars);
                if fields.len() != 1 {
                    return Err(ExpandError::AmbiguousRedirect { word: w.raw.clone() });
                }
                Ok(fields.remove(0))
            };
            let kind = match &r.kind {
                RedirKind::Read(w) => RedirKind::Read(path(w)?),
                RedirKind::Write(w) => RedirKind::Write(path(w)?),
                RedirKind::Append(w) => RedirKind::Append(path(w)?),
                RedirKind::Dup(n) => RedirKind::Dup(*n),
                RedirKind::Close => RedirKind::Close,
            };
            redirections.push(Redirection { fd: r.fd, kind });
        }
        Ok(SimpleCommand { assignments, argv, redirections })
    }
}

/// Is `s` a valid variable name (`[A-Za-z_][A-Za-z0-9_]*`)?
pub fn is_valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

// ---------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RedirOp {
    Less,
    Great,
    DGreat,
    Clobber,
    LessAnd,
    GreatAnd,
}

impl RedirOp {
    fn text(self) -> &'static str {
        match self {
            RedirOp::Less => "<",
            RedirOp::Great => ">",
            RedirOp::DGreat => ">>",
            RedirOp::Clobber => ">|",
            RedirOp::LessAnd => "<&",
            RedirOp::GreatAnd => ">&",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Word(Word),
    Redir { fd: Option<i32>, op: RedirOp },
    Pipe,
    AndIf,
    OrIf,
    Semi,
    Amp,
    Newline,
    End,
}

impl Tok {
    fn text(&self) -> &'static str {
        match self {
            Tok::Word(_) => "word",
            Tok::Redir { op, .. } => op.text(),
            Tok::Pipe => "|",
            Tok::AndIf => "&&",
            Tok::OrIf => "||",
            Tok::Semi => ";",
            Tok::Amp => "&",
            Tok::Newline => "newline",
            Tok::End => "end of input",
        }
    }
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    start: usize,
    end: usize,
}

/// Accumulates a word's parts, merging neighbouring text of the same
/// quoting.
#[derive(Default)]
struct WordBuilder {
    parts: Vec<Part>,
}

impl WordBuilder {
    fn push_str(&mut self, s: &str, quoted: bool) {
        if let Some(Part::Text { text, quoted: q }) = self.parts.last_mut()
            && *q == quoted
        {
            text.push_str(s);
            return;
        }
        self.parts.push(Part::Text { text: s.to_string(), quoted });
    }

    fn push_char(&mut self, c: char, quoted: bool) {
        let mut buf = [0u8; 4];
        self.push_str(c.encode_utf8(&mut buf), quoted);
    }

    /// Only unquoted digits so far (a descriptor number before `<`/`>`)?
    fn fd_number(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Text { text, quoted: false }] if text.bytes().all(|b| b.is_ascii_digit()) => Some(text),
            _ => None,
        }
    }

    fn finish(self, raw: &str) -> Word {
        Word { parts: with_home(self.parts), raw: raw.to_string() }
    }
}

/// Turn a leading unquoted `~` followed by `/` or nothing into [`Part::Home`].
fn with_home(mut parts: Vec<Part>) -> Vec<Part> {
    let only = parts.len() == 1;
    if let Some(Part::Text { text, quoted: false }) = parts.first_mut()
        && ((text == "~" && only) || text.starts_with("~/"))
    {
        let rest = text[1..].to_string();
        if rest.is_empty() {
            parts[0] = Part::Home;
        } else {
            *text = rest;
            parts.insert(0, Part::Home);
        }
    }
    parts
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

fn err<T>(kind: ParseErrorKind, offset: usize) -> Result<T, ParseError> {
    Err(ParseError { kind, offset })
}

impl<'a> Lexer<'a> {
    fn peek_char(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn char_at(&self, pos: usize) -> Option<char> {
        self.src.get(pos..).and_then(|s| s.chars().next())
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn next_token(&mut self) -> Result<Token, ParseError> {
        // Blanks, line continuations and comments separate tokens.
        loop {
            match self.peek_char() {
                Some(' ' | '\t' | '\r') => self.pos += 1,
                Some('\\') if self.char_at(self.pos + 1) == Some('\n') => {
                    self.pos += 2;
                    if self.pos == self.src.len() {
                        return err(ParseErrorKind::EndAfterBackslash, self.pos - 2);
                    }
                }
                Some('\\') if self.pos + 1 == self.src.len() => {
                    return err(ParseErrorKind::EndAfterBackslash, self.pos);
                }
                Some('#') => {
                    while !matches!(self.peek_char(), None | Some('\n')) {
                        self.bump();
                    }
                }
                _ => break,
            }
        }
        let start = self.pos;
        let two = |l: &Lexer, c: char| l.char_at(start + 1) == Some(c);
        let (tok, len) = match self.peek_char() {
            None => (Tok::End, 0),
            Some('\n') => (Tok::Newline, 1),
            Some('|') if two(self, '|') => (Tok::OrIf, 2),
            Some('|') => (Tok::Pipe, 1),
            Some('&') if two(self, '&') => (Tok::AndIf, 2),
            Some('&') => (Tok::Amp, 1),
            Some(';') => (Tok::Semi, 1),
            Some('<' | '>') => return self.redirection(start, None),
            Some('(' | ')') => return err(ParseErrorKind::Unsupported("subshells"), start),
            Some(_) => return self.word(start),
        };
        self.pos += len;
        Ok(Token { tok, start, end: self.pos })
    }

    /// A redirection operator at `self.pos`, after the descriptor number `fd`.
    fn redirection(&mut self, start: usize, fd: Option<i32>) -> Result<Token, ParseError> {
        let at = self.pos;
        let first = self.bump();
        let second = self.peek_char();
        let op = match (first, second) {
            (Some('<'), Some('<')) => return err(ParseErrorKind::Unsupported("here-documents"), at),
            (Some('<'), Some('>')) => {
                return err(ParseErrorKind::Unsupported("read-write redirection '<>'"), at);
            }
            (Some('<'), Some('&')) => RedirOp::LessAnd,
            (Some('<'), _) => RedirOp::Less,
            (_, Some('>')) => RedirOp::DGreat,
            (_, Some('&')) => RedirOp::GreatAnd,
            (_, Some('|')) => RedirOp::Clobber,
            _ => RedirOp::Great,
        };
        if op != RedirOp::Less && op != RedirOp::Great {
            self.bump();
        }
        Ok(Token { tok: Tok::Redir { fd, op }, start, end: self.pos })
    }

    fn word(&mut self, start: usize) -> Result<Token, ParseError> {
        let mut w = WordBuilder::default();
        loop {
            let at = self.pos;
            match self.peek_char() {
                None | Some(' ' | '\t' | '\r' | '\n' | '|' | '&' | ';') => break,
                Some('<' | '>') => {
                    // `2>f`: a word of bare digits right before the
                    // operator is the descriptor it redirects.
                    if let Some(digits) = w.fd_number() {
                        let fd = digits
                            .parse::<i32>()
                            .map_err(|_| ParseError { kind: ParseErrorKind::BadFdNumber, offset: start })?;
                        return self.redirection(start, Some(fd));
                    }
                    break;
                }
                Some('(' | ')') => return err(ParseErrorKind::Unsupported("subshells"), at),
                Some('`') => return err(ParseErrorKind::Unsupported("command substitution"), at),
                Some('\'') => {
                    self.pos += 1;
                    let Some(len) = self.src[self.pos..].find('\'') else {
                        return err(ParseErrorKind::UnterminatedSingleQuote, at);
                    };
                    w.push_str(&self.src[self.pos..self.pos + len], true);
                    self.pos += len + 1;
                }
                Some('"') => self.double_quoted(&mut w)?,
                Some('\\') => {
                    self.pos += 1;
                    match self.bump() {
                        None => return err(ParseErrorKind::EndAfterBackslash, at),
                        Some('\n') if self.pos == self.src.len() => {
                            return err(ParseErrorKind::EndAfterBackslash, at);
                        }
                        Some('\n') => {}
                        Some(c) => w.push_char(c, true),
                    }
                }
                Some('$') => self.dollar(&mut w, false)?,
                Some(c) => {
                    self.pos += c.len_utf8();
                    w.push_char(c, false);
                }
            }
        }
        let raw = &self.src[start..self.pos];
        Ok(Token { tok: Tok::Word(w.finish(raw)), start, end: self.pos })
    }

    /// `"…"`: `$` expands; `\` escapes only `$ ` " \` and newline.
    fn double_quoted(&mut self, w: &mut WordBuilder) -> Result<(), ParseError> {
        let open = self.pos;
        self.pos += 1;
        // `""` must still make a (possibly empty) field.
        w.push_str("", true);
        loop {
            match self.peek_char() {
                None => return err(ParseErrorKind::UnterminatedDoubleQuote, open),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.peek_char() {
                        Some(c @ ('$' | '`' | '"' | '\\')) => {
                            self.pos += 1;
                            w.push_char(c, true);
                        }
                        Some('\n') => self.pos += 1,
                        _ => w.push_char('\\', true),
                    }
                }
                Some('$') => self.dollar(w, true)?,
                Some('`') => return err(ParseErrorKind::Unsupported("command substitution"), self.pos),
                Some(c) => {
                    self.pos += c.len_utf8();
                    w.push_char(c, true);
                }
            }
        }
    }

    /// `$…` at `self.pos`: a parameter, or a plain `$`.
    fn dollar(&mut self, w: &mut WordBuilder, quoted: bool) -> Result<(), ParseError> {
        let at = self.pos;
        self.pos += 1;
        let name_start = self.pos;
        match self.peek_char() {
            Some('{') => {
                self.pos += 1;
                let Some(len) = self.src[self.pos..].find('}') else {
                    return err(ParseErrorKind::UnterminatedBrace, at);
                };
                let name = &self.src[self.pos..self.pos + len];
                if !(is_valid_name(name) || is_special_param(name) || is_positional(name)) {
                    return err(ParseErrorKind::BadSubstitution, at);
                }
                self.pos += len + 1;
                w.parts.push(Part::Param { name: name.to_string(), quoted });
            }
            Some('(') => return err(ParseErrorKind::Unsupported("command substitution"), at),
            Some('@' | '*') => return err(ParseErrorKind::Unsupported("'$@' and '$*'"), at),
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                while matches!(self.peek_char(), Some(c) if c == '_' || c.is_ascii_alphanumeric()) {
                    self.pos += 1;
                }
                let name = &self.src[name_start..self.pos];
                w.parts.push(Part::Param { name: name.to_string(), quoted });
            }
            // POSIX: `$10` is `$1` followed by `0`.
            Some(c @ ('0'..='9' | '?' | '$' | '!' | '#')) => {
                self.pos += 1;
                w.parts.push(Part::Param { name: c.to_string(), quoted });
            }
            _ => w.push_char('$', quoted),
        }
        Ok(())
    }
}

fn is_special_param(name: &str) -> bool {
    matches!(name, "?" | "$" | "!" | "#")
}

fn is_positional(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())
}

// ---------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------

/// Parse a command line or a whole script.
pub fn parse(src: &str) -> Result<List, ParseError> {
    let mut p = Parser { lx: Lexer { src, pos: 0 }, peeked: None, last_end: 0 };
    p.list()
}

struct Parser<'a> {
    lx: Lexer<'a>,
    peeked: Option<Token>,
    /// End offset of the last token taken, for items' source text.
    last_end: usize,
}

/// What came before a command, for the error when it is missing.
#[derive(Clone, Copy)]
enum Before {
    ListStart,
    Operator(&'static str),
    Keyword(&'static str),
}

impl<'a> Parser<'a> {
    fn peek(&mut self) -> Result<&Token, ParseError> {
        let t = match self.peeked.take() {
            Some(t) => t,
            None => self.lx.next_token()?,
        };
        Ok(self.peeked.insert(t))
    }

    fn take(&mut self) -> Result<Token, ParseError> {
        let t = match self.peeked.take() {
            Some(t) => t,
            None => self.lx.next_token()?,
        };
        self.last_end = t.end;
        Ok(t)
    }

    fn skip_newlines(&mut self) -> Result<(), ParseError> {
        while self.peek()?.tok == Tok::Newline {
            self.take()?;
        }
        Ok(())
    }

    fn list(&mut self) -> Result<List, ParseError> {
        let mut items = Vec::new();
        loop {
            self.skip_newlines()?;
            let t = self.peek()?;
            if t.tok == Tok::End {
                return Ok(List { items });
            }
            let start = t.start;
            let and_or = self.and_or()?;
            let text = self.lx.src[start..self.last_end].trim().to_string();
            let next = self.peek()?;
            let background = match next.tok {
                Tok::Amp => {
                    self.take()?;
                    true
                }
                Tok::Semi => {
                    self.take()?;
                    false
                }
                Tok::Newline | Tok::End => false,
                ref other => return err(ParseErrorKind::UnexpectedToken(other.text()), next.start),
            };
            items.push(ListItem { and_or, background, text });
        }
    }

    fn and_or(&mut self) -> Result<AndOr, ParseError> {
        let first = self.pipeline(Before::ListStart)?;
        let mut rest = Vec::new();
        loop {
            let connector = match self.peek()?.tok {
                Tok::AndIf => Connector::And,
                Tok::OrIf => Connector::Or,
                _ => return Ok(AndOr { first, rest }),
            };
            let op = self.take()?.tok.text();
            self.skip_newlines()?;
            rest.push((connector, self.pipeline(Before::Operator(op))?));
        }
    }

    fn pipeline(&mut self, before: Before) -> Result<Pipeline, ParseError> {
        let mut before = before;
        let mut timed = false;
        let mut negated = false;
        if matches!(&self.peek()?.tok, Tok::Word(w) if w.is_bare("time")) {
            self.take()?;
            timed = true;
            before = Before::Keyword("time");
        }
        if matches!(&self.peek()?.tok, Tok::Word(w) if w.is_bare("!")) {
            self.take()?;
            negated = true;
            before = Before::Keyword("!");
        }
        let mut commands = alloc::vec![self.command(before)?];
        while self.peek()?.tok == Tok::Pipe {
            self.take()?;
            self.skip_newlines()?;
            commands.push(self.command(Before::Operator("|"))?);
        }
        Ok(Pipeline { commands, timed, negated })
    }

    fn command(&mut self, before: Before) -> Result<Command, ParseError> {
        let mut cmd = Command::default();
        loop {
            if !matches!(self.peek()?.tok, Tok::Word(_) | Tok::Redir { .. }) {
                break;
            }
            match self.take()?.tok {
                Tok::Word(w) => match (cmd.words.is_empty(), split_assignment(&w)) {
                    (true, Some(a)) => cmd.assignments.push(a),
                    _ => cmd.words.push(w),
                },
                Tok::Redir { fd, op } => cmd.redirections.push(self.redirection_target(fd, op)?),
                // Not reached: the token was peeked above.
                _ => break,
            }
        }
        if !cmd.words.is_empty() || !cmd.assignments.is_empty() || !cmd.redirections.is_empty() {
            return Ok(cmd);
        }
        let t = self.peek()?;
        let (offset, at_end, tok) = (t.start, t.tok == Tok::End, t.tok.text());
        let kind = match before {
            Before::Operator(op) if at_end => ParseErrorKind::EndAfterOperator(op),
            Before::Operator("|") => ParseErrorKind::EmptyPipelineStage,
            Before::Operator(op) | Before::Keyword(op) => ParseErrorKind::MissingCommand(op),
            Before::ListStart => ParseErrorKind::UnexpectedToken(tok),
        };
        err(kind, offset)
    }

    fn redirection_target(&mut self, fd: Option<i32>, op: RedirOp) -> Result<Redirection<Word>, ParseError> {
        let t = self.take()?;
        let Tok::Word(target) = t.tok else {
            return err(ParseErrorKind::MissingRedirectTarget(op.text()), t.start);
        };
        let default_fd = if matches!(op, RedirOp::Less | RedirOp::LessAnd) { 0 } else { 1 };
        let fd = fd.unwrap_or(default_fd);
        let kind = match op {
            RedirOp::Less => RedirKind::Read(target),
            RedirOp::Great | RedirOp::Clobber => RedirKind::Write(target),
            RedirOp::DGreat => RedirKind::Append(target),
            RedirOp::LessAnd | RedirOp::GreatAnd => match target.literal().as_deref() {
                Some("-") => RedirKind::Close,
                Some(n) if is_positional(n) => match n.parse::<i32>() {
                    Ok(n) => RedirKind::Dup(n),
                    Err(_) => return err(ParseErrorKind::BadFdNumber, t.start),
                },
                _ => return err(ParseErrorKind::BadFdTarget(op.text()), t.start),
            },
        };
        Ok(Redirection { fd, kind })
    }
}

/// `NAME=value` (the `NAME=` unquoted) as an assignment.
fn split_assignment(w: &Word) -> Option<Assignment> {
    let Some(Part::Text { text, quoted: false }) = w.parts.first() else { return None };
    let eq = text.find('=')?;
    let name = &text[..eq];
    if !is_valid_name(name) {
        return None;
    }
    let mut parts = Vec::with_capacity(w.parts.len());
    let rest = &text[eq + 1..];
    if !rest.is_empty() {
        parts.push(Part::Text { text: rest.to_string(), quoted: false });
    }
    parts.extend(w.parts[1..].iter().cloned());
    let raw = w.raw.get(eq + 1..).unwrap_or("").to_string();
    Some(Assignment { name: name.to_string(), value: Word { parts: with_home(parts), raw } })
}

// ---------------------------------------------------------------------------
// Statuses, signals, `time`
// ---------------------------------------------------------------------------

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Exited(u32),
    Signaled(u64),
}

impl Outcome {
    /// From the `<sys/wait.h>` halves: `Signaled` if a signal is given.
    pub fn new(exit_code: Option<u32>, signal: Option<u64>) -> Outcome {
        match signal {
            Some(s) => Outcome::Signaled(s),
            None => Outcome::Exited(exit_code.unwrap_or(0)),
        }
    }

    /// The value of `$?`: the exit code, or 128 + the signal (POSIX).
    pub fn status(self) -> i32 {
        match self {
            Outcome::Exited(code) => (code & 0xff) as i32,
            Outcome::Signaled(sig) => 128 + (sig & 0x7f) as i32,
        }
    }
}

/// The words shells print for a signal that ended a job.
pub fn signal_description(sig: u64) -> String {
    let text = match sig {
        1 => "Hangup",
        2 => "Interrupt",
        3 => "Quit",
        4 => "Illegal instruction",
        5 => "Trace/breakpoint trap",
        6 => "Aborted",
        7 => "Bus error",
        8 => "Floating point exception",
        9 => "Killed",
        10 => "User defined signal 1",
        11 => "Segmentation fault",
        12 => "User defined signal 2",
        13 => "Broken pipe",
        14 => "Alarm clock",
        15 => "Terminated",
        _ => return format!("Signal {sig}"),
    };
    text.to_string()
}

/// Nanoseconds as seconds with three decimals, e.g. `1.234s` (rounded to
/// the nearest millisecond).
pub fn format_seconds(ns: u64) -> String {
    let ms = ns.saturating_add(500_000) / 1_000_000;
    format!("{}.{:03}s", ms / 1000, ms % 1000)
}

/// The `time` keyword's report line.
pub fn format_times(real_ns: u64, user_ns: u64, sys_ns: u64) -> String {
    format!(
        "real {} user {} sys {}",
        format_seconds(real_ns),
        format_seconds(user_ns),
        format_seconds(sys_ns)
    )
}

// ---------------------------------------------------------------------------
// Jobs
// ---------------------------------------------------------------------------

/// One background job: a pipeline's processes, all in one process group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The `%n` number, from 1.
    pub id: u32,
    pub pgid: u64,
    /// Processes not yet reaped.
    pub running: Vec<u64>,
    /// The last process of the pipeline, whose outcome is the job's.
    pub last_pid: u64,
    pub outcome: Option<Outcome>,
    pub text: String,
}

impl Job {
    pub fn is_done(&self) -> bool {
        self.running.is_empty()
    }
}

/// The shell's background jobs. Numbers are the highest in use plus one,
/// as in other shells, so they restart at 1 once every job is reported.
#[derive(Clone, Debug, Default)]
pub struct Jobs {
    jobs: Vec<Job>,
}

impl Jobs {
    /// Record a job of processes `pids` (pipeline order, not empty) in
    /// group `pgid`; returns its number.
    pub fn add(&mut self, pgid: u64, pids: &[u64], text: &str) -> u32 {
        let id = self.jobs.iter().map(|j| j.id).max().unwrap_or(0) + 1;
        let last_pid = pids.last().copied().unwrap_or(pgid);
        self.jobs.push(Job {
            id,
            pgid,
            running: pids.to_vec(),
            last_pid,
            outcome: None,
            text: text.to_string(),
        });
        id
    }

    /// A reaped child: if it belongs to a job, mark it ended and return
    /// true.
    pub fn child_ended(&mut self, pid: u64, outcome: Outcome) -> bool {
        for job in &mut self.jobs {
            if let Some(i) = job.running.iter().position(|&p| p == pid) {
                job.running.swap_remove(i);
                if pid == job.last_pid {
                    job.outcome = Some(outcome);
                }
                return true;
            }
        }
        false
    }

    /// Remove the jobs whose processes have all ended, in number order.
    pub fn take_done(&mut self) -> Vec<Job> {
        let (done, running): (Vec<Job>, Vec<Job>) =
            core::mem::take(&mut self.jobs).into_iter().partition(Job::is_done);
        self.jobs = running;
        done
    }

    pub fn iter(&self) -> impl Iterator<Item = &Job> {
        self.jobs.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Is `pid` one of the jobs' processes still running?
    pub fn owns(&self, pid: u64) -> bool {
        self.jobs.iter().any(|j| j.running.contains(&pid))
    }
}

/// The report of a finished job, e.g. `[1] Done  sleep 1` or
/// `[2] Exit 3  false`.
pub fn format_job_done(job: &Job) -> String {
    let state = match job.outcome {
        None | Some(Outcome::Exited(0)) => "Done".to_string(),
        Some(Outcome::Exited(code)) => format!("Exit {code}"),
        Some(Outcome::Signaled(sig)) => signal_description(sig),
    };
    format!("[{}] {}  {}", job.id, state, job.text)
}

/// The `jobs` builtin's line for a job.
pub fn format_job(job: &Job) -> String {
    if job.is_done() {
        return format_job_done(job);
    }
    format!("[{}] Running  {}", job.id, job.text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use std::collections::HashMap;

    fn vars() -> HashMap<&'static str, &'static str> {
        HashMap::from([
            ("HOME", "/home/u"),
            ("X", "x"),
            ("SP", " a  b "),
            ("EMPTY", ""),
            ("?", "3"),
            ("$", "42"),
            ("1", "first"),
        ])
    }

    fn lookup(name: &str) -> Option<String> {
        vars().get(name).map(|s| s.to_string())
    }

    /// The argv of every command of a one-item, one-pipeline line.
    fn argvs(src: &str) -> Vec<Vec<String>> {
        let list = parse(src).unwrap_or_else(|e| panic!("{src:?}: {e}"));
        assert_eq!(list.items.len(), 1, "{src:?}");
        list.items[0].and_or.first.commands.iter().map(|c| c.expand(&lookup).unwrap().argv).collect()
    }

    fn argv(src: &str) -> Vec<String> {
        let mut a = argvs(src);
        assert_eq!(a.len(), 1, "{src:?}");
        a.remove(0)
    }

    fn simple(src: &str) -> SimpleCommand {
        let list = parse(src).unwrap();
        list.items[0].and_or.first.commands[0].expand(&lookup).unwrap()
    }

    fn kind(src: &str) -> ParseErrorKind {
        match parse(src) {
            Ok(l) => panic!("{src:?} parsed: {l:?}"),
            Err(e) => e.kind,
        }
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn plain_words() {
        assert_eq!(argv("echo hello world"), s(&["echo", "hello", "world"]));
        assert_eq!(argv("  echo\t  a   "), s(&["echo", "a"]));
        assert_eq!(argv("ls -l /bin"), s(&["ls", "-l", "/bin"]));
        assert_eq!(argv("héllo wörld"), s(&["héllo", "wörld"]));
    }

    #[test]
    fn empty_input_is_empty_list() {
        assert_eq!(parse("").unwrap().items.len(), 0);
        assert_eq!(parse("   \n\n  \t").unwrap().items.len(), 0);
        assert_eq!(parse("# just a comment").unwrap().items.len(), 0);
        assert_eq!(parse("\n# c1\n  # c2\n").unwrap().items.len(), 0);
    }

    #[test]
    fn single_quotes_are_literal() {
        assert_eq!(argv("echo 'a b'"), s(&["echo", "a b"]));
        assert_eq!(argv(r#"echo '$X \n "q"'"#), s(&["echo", r#"$X \n "q""#]));
        assert_eq!(argv("echo ''"), s(&["echo", ""]));
        assert_eq!(argv("echo a'b'c"), s(&["echo", "abc"]));
        assert_eq!(argv("echo '#not a comment'"), s(&["echo", "#not a comment"]));
        assert_eq!(argv("echo 'a;b|c&d'"), s(&["echo", "a;b|c&d"]));
    }

    #[test]
    fn double_quotes() {
        assert_eq!(argv(r#"echo "a b""#), s(&["echo", "a b"]));
        assert_eq!(argv(r#"echo """#), s(&["echo", ""]));
        assert_eq!(argv(r#"echo "$X y""#), s(&["echo", "x y"]));
        assert_eq!(argv(r#"echo "\$X \" \\ \a""#), s(&["echo", r#"$X " \ \a"#]));
        assert_eq!(argv(r#"echo "it's""#), s(&["echo", "it's"]));
        assert_eq!(argv(r#"echo "a"'b'c"#), s(&["echo", "abc"]));
        assert_eq!(argv("echo \"line1\nline2\""), s(&["echo", "line1\nline2"]));
        assert_eq!(argv("echo \"a\\\nb\""), s(&["echo", "ab"]));
    }

    #[test]
    fn backslash_escapes() {
        assert_eq!(argv(r"echo a\ b"), s(&["echo", "a b"]));
        assert_eq!(argv(r"echo \$X"), s(&["echo", "$X"]));
        assert_eq!(argv(r"echo \'"), s(&["echo", "'"]));
        assert_eq!(argv(r"echo \\"), s(&["echo", "\\"]));
        assert_eq!(argv(r"echo a\;b \| \&"), s(&["echo", "a;b", "|", "&"]));
        assert_eq!(argv(r"echo \#x"), s(&["echo", "#x"]));
        assert_eq!(argv("echo a\\\nb"), s(&["echo", "ab"]));
        assert_eq!(argv("echo a \\\n b"), s(&["echo", "a", "b"]));
        // An escaped `~` is not the home directory.
        assert_eq!(argv(r"echo \~"), s(&["echo", "~"]));
    }

    #[test]
    fn comments() {
        assert_eq!(argv("echo a # comment | not a pipe"), s(&["echo", "a"]));
        assert_eq!(argv("echo a#b"), s(&["echo", "a#b"]));
        let l = parse("echo 1 # one\necho 2").unwrap();
        assert_eq!(l.items.len(), 2);
    }

    #[test]
    fn parameters() {
        assert_eq!(argv("echo $X"), s(&["echo", "x"]));
        assert_eq!(argv("echo ${X}y $Xy"), s(&["echo", "xy"]));
        assert_eq!(argv("echo $? $$ $1"), s(&["echo", "3", "42", "first"]));
        assert_eq!(argv("echo ${?}"), s(&["echo", "3"]));
        assert_eq!(argv("echo $10"), s(&["echo", "first0"]));
        assert_eq!(argv("echo a$X-b"), s(&["echo", "ax-b"]));
        assert_eq!(argv("echo $"), s(&["echo", "$"]));
        assert_eq!(argv("echo a$ $/ \"$\""), s(&["echo", "a$", "$/", "$"]));
        assert_eq!(argv("echo $UNSET"), s(&["echo"]));
        assert_eq!(argv("echo \"$UNSET\""), s(&["echo", ""]));
        assert_eq!(argv("echo $EMPTY$UNSET x"), s(&["echo", "x"]));
        assert_eq!(argv("echo ''$UNSET"), s(&["echo", ""]));
    }

    #[test]
    fn field_splitting_only_unquoted() {
        assert_eq!(argv("echo $SP"), s(&["echo", "a", "b"]));
        assert_eq!(argv("echo \"$SP\""), s(&["echo", " a  b "]));
        assert_eq!(argv("echo x$SP"), s(&["echo", "x", "a", "b"]));
        assert_eq!(argv("echo ${SP}y"), s(&["echo", "a", "b", "y"]));
        assert_eq!(argv("echo \"q\"$SP\"r\""), s(&["echo", "q", "a", "b", "r"]));
    }

    #[test]
    fn expansion_uses_values_at_expansion_time() {
        let list = parse("echo $?").unwrap();
        let cmd = &list.items[0].and_or.first.commands[0];
        let v1 = |n: &str| (n == "?").then(|| "0".to_string());
        let v2 = |n: &str| (n == "?").then(|| "1".to_string());
        assert_eq!(cmd.expand(&v1).unwrap().argv, s(&["echo", "0"]));
        assert_eq!(cmd.expand(&v2).unwrap().argv, s(&["echo", "1"]));
    }

    #[test]
    fn tilde() {
        assert_eq!(argv("cd ~"), s(&["cd", "/home/u"]));
        assert_eq!(argv("ls ~/bin"), s(&["ls", "/home/u/bin"]));
        assert_eq!(argv("echo a~ ~x '~' \"~\""), s(&["echo", "a~", "~x", "~", "~"]));
        let none = |_: &str| None;
        let list = parse("echo ~").unwrap();
        assert_eq!(list.items[0].and_or.first.commands[0].expand(&none).unwrap().argv, s(&["echo", "~"]));
    }

    #[test]
    fn assignments() {
        let c = simple("A=1 B='x y' env");
        assert_eq!(c.assignments, vec![("A".into(), "1".into()), ("B".into(), "x y".into())]);
        assert_eq!(c.argv, s(&["env"]));
        let c = simple("A=$SP");
        assert_eq!(c.assignments, vec![("A".into(), " a  b ".into())]);
        assert!(c.argv.is_empty());
        let c = simple("E=");
        assert_eq!(c.assignments, vec![("E".into(), "".into())]);
        let c = simple("H=~/x");
        assert_eq!(c.assignments, vec![("H".into(), "/home/u/x".into())]);
        // After the command name, or with a quoted or invalid name, it is
        // an ordinary word.
        assert_eq!(simple("echo A=1").argv, s(&["echo", "A=1"]));
        assert_eq!(simple("'A'=1").argv, s(&["A=1"]));
        assert_eq!(simple("1A=1").argv, s(&["1A=1"]));
        assert_eq!(simple("=x").argv, s(&["=x"]));
        // A redirection may come between assignments.
        let c = simple("A=1 >f B=2 cmd");
        assert_eq!(c.assignments.len(), 2);
        assert_eq!(c.argv, s(&["cmd"]));
    }

    #[test]
    fn lists_and_background() {
        let l = parse("a; b & c\nd &").unwrap();
        let got: Vec<(String, bool)> = l.items.iter().map(|i| (i.text.clone(), i.background)).collect();
        assert_eq!(
            got,
            vec![("a".into(), false), ("b".into(), true), ("c".into(), false), ("d".into(), true)]
        );
        let l = parse("sleep 1 | cat  &").unwrap();
        assert_eq!(l.items[0].text, "sleep 1 | cat");
        assert!(l.items[0].background);
        let l = parse("a;").unwrap();
        assert_eq!(l.items.len(), 1);
        let l = parse("a&b").unwrap();
        assert_eq!(l.items.len(), 2);
        assert!(l.items[0].background);
    }

    #[test]
    fn and_or() {
        let l = parse("a && b || c").unwrap();
        let ao = &l.items[0].and_or;
        assert_eq!(ao.rest.len(), 2);
        assert_eq!(ao.rest[0].0, Connector::And);
        assert_eq!(ao.rest[1].0, Connector::Or);
        assert_eq!(ao.rest[1].1.commands[0].words[0].raw, "c");
        // A newline may follow `&&`, `||` and `|`.
        let l = parse("a &&\n\n b ||\n c |\n d").unwrap();
        assert_eq!(l.items.len(), 1);
        assert_eq!(l.items[0].and_or.rest[1].1.commands.len(), 2);
        assert_eq!(l.items[0].text, "a &&\n\n b ||\n c |\n d");
    }

    #[test]
    fn pipelines() {
        assert_eq!(argvs("a | b -x | c"), vec![s(&["a"]), s(&["b", "-x"]), s(&["c"])]);
        assert_eq!(argvs("a|b"), vec![s(&["a"]), s(&["b"])]);
        let l = parse("cat f | wc -l > out").unwrap();
        let p = &l.items[0].and_or.first;
        assert_eq!(p.commands.len(), 2);
        assert_eq!(p.commands[1].redirections.len(), 1);
    }

    #[test]
    fn time_and_not_keywords() {
        let l = parse("time a | b").unwrap();
        let p = &l.items[0].and_or.first;
        assert!(p.timed && !p.negated);
        assert_eq!(p.commands.len(), 2);
        let l = parse("! false && time ! true").unwrap();
        let ao = &l.items[0].and_or;
        assert!(ao.first.negated && !ao.first.timed);
        assert!(ao.rest[0].1.timed && ao.rest[0].1.negated);
        // Quoted or not first, they are ordinary words.
        assert_eq!(argv("'time' x"), s(&["time", "x"]));
        assert_eq!(argv("echo time !"), s(&["echo", "time", "!"]));
        assert!(!parse("a | time b").is_ok_and(|l| l.items[0].and_or.first.timed));
        assert_eq!(kind("time"), ParseErrorKind::MissingCommand("time"));
        assert_eq!(kind("!"), ParseErrorKind::MissingCommand("!"));
        assert_eq!(kind("time ; a"), ParseErrorKind::MissingCommand("time"));
    }

    fn redirs(src: &str) -> Vec<Redirection<String>> {
        simple(src).redirections
    }

    #[test]
    fn redirections() {
        use RedirKind::*;
        assert_eq!(redirs("cat < in"), vec![Redirection { fd: 0, kind: Read("in".into()) }]);
        assert_eq!(redirs("echo >out"), vec![Redirection { fd: 1, kind: Write("out".into()) }]);
        assert_eq!(redirs("echo >| out"), vec![Redirection { fd: 1, kind: Write("out".into()) }]);
        assert_eq!(redirs("echo >> log"), vec![Redirection { fd: 1, kind: Append("log".into()) }]);
        assert_eq!(redirs("cmd 2> err"), vec![Redirection { fd: 2, kind: Write("err".into()) }]);
        assert_eq!(redirs("cmd 2>>err"), vec![Redirection { fd: 2, kind: Append("err".into()) }]);
        assert_eq!(
            redirs("cmd >out 2>&1"),
            vec![Redirection { fd: 1, kind: Write("out".into()) }, Redirection { fd: 2, kind: Dup(1) }]
        );
        assert_eq!(redirs("cmd 2>&1 >out")[0], Redirection { fd: 2, kind: Dup(1) });
        assert_eq!(
            redirs("cmd 3<&0 <&3"),
            vec![Redirection { fd: 3, kind: Dup(0) }, Redirection { fd: 0, kind: Dup(3) }]
        );
        assert_eq!(redirs("cmd >&-"), vec![Redirection { fd: 1, kind: Close }]);
        assert_eq!(redirs("cmd 10>x"), vec![Redirection { fd: 10, kind: Write("x".into()) }]);
        assert_eq!(redirs("cmd > \"a b\""), vec![Redirection { fd: 1, kind: Write("a b".into()) }]);
        assert_eq!(redirs("cmd > $X.txt"), vec![Redirection { fd: 1, kind: Write("x.txt".into()) }]);
        // Redirections anywhere among the words; argv is unaffected.
        let c = simple("<in cmd a >out b");
        assert_eq!(c.argv, s(&["cmd", "a", "b"]));
        assert_eq!(c.redirections.len(), 2);
        // Only a bare number right before the operator is a descriptor.
        let c = simple("echo a2>f");
        assert_eq!(c.argv, s(&["echo", "a2"]));
        assert_eq!(c.redirections[0].fd, 1);
        let c = simple("echo 2 >f");
        assert_eq!(c.argv, s(&["echo", "2"]));
        assert_eq!(c.redirections[0].fd, 1);
        let c = simple("echo \\2>f");
        assert_eq!(c.argv, s(&["echo", "2"]));
        let c = simple("echo '2'>f");
        assert_eq!(c.argv, s(&["echo", "2"]));
        // A command of redirections only.
        let c = simple(">empty");
        assert!(c.argv.is_empty());
        assert_eq!(c.redirections.len(), 1);
    }

    #[test]
    fn ambiguous_redirect() {
        let list = parse("echo > $SP").unwrap();
        let e = list.items[0].and_or.first.commands[0].expand(&lookup).unwrap_err();
        assert_eq!(e, ExpandError::AmbiguousRedirect { word: "$SP".into() });
        assert_eq!(alloc::format!("{e}"), "$SP: ambiguous redirect");
        let list = parse("echo > $UNSET").unwrap();
        assert!(list.items[0].and_or.first.commands[0].expand(&lookup).is_err());
        // Quoted, it is one (empty) name: the open will fail, not the parse.
        let list = parse("echo > \"$UNSET\"").unwrap();
        assert!(list.items[0].and_or.first.commands[0].expand(&lookup).is_ok());
    }

    #[test]
    fn quote_errors() {
        use ParseErrorKind::*;
        assert_eq!(kind("echo 'abc"), UnterminatedSingleQuote);
        assert_eq!(kind("echo \"abc"), UnterminatedDoubleQuote);
        assert_eq!(kind("echo \"a\\\""), UnterminatedDoubleQuote);
        assert_eq!(kind("echo ${X"), UnterminatedBrace);
        assert_eq!(kind("echo ${}"), BadSubstitution);
        assert_eq!(kind("echo ${X:-y}"), BadSubstitution);
        assert_eq!(kind("echo a\\"), EndAfterBackslash);
        assert_eq!(kind("echo a \\\n"), EndAfterBackslash);
        assert_eq!(kind("echo a\\\n"), EndAfterBackslash);
        let e = parse("echo ok 'abc").unwrap_err();
        assert_eq!(e.offset, 8);
        assert!(e.is_incomplete());
        // A continuation line completes it.
        assert_eq!(argv("echo 'abc\ndef'"), s(&["echo", "abc\ndef"]));
    }

    #[test]
    fn syntax_errors() {
        use ParseErrorKind::*;
        assert_eq!(kind("; a"), UnexpectedToken(";"));
        assert_eq!(kind("a ;; b"), UnexpectedToken(";"));
        assert_eq!(kind("a & ; b"), UnexpectedToken(";"));
        assert_eq!(kind("&& a"), UnexpectedToken("&&"));
        assert_eq!(kind("| a"), UnexpectedToken("|"));
        assert_eq!(kind("a | | b"), EmptyPipelineStage);
        assert_eq!(kind("a | ; b"), EmptyPipelineStage);
        assert_eq!(kind("a | && b"), EmptyPipelineStage);
        assert_eq!(kind("a && ; b"), MissingCommand("&&"));
        assert_eq!(kind("a || & b"), MissingCommand("||"));
        assert_eq!(kind("a |"), EndAfterOperator("|"));
        assert_eq!(kind("a &&\n"), EndAfterOperator("&&"));
        assert_eq!(kind("a || # comment"), EndAfterOperator("||"));
        assert!(parse("a |").unwrap_err().is_incomplete());
        assert!(!parse("a | | b").unwrap_err().is_incomplete());
    }

    #[test]
    fn redirection_errors() {
        use ParseErrorKind::*;
        assert_eq!(kind("echo >"), MissingRedirectTarget(">"));
        assert_eq!(kind("echo > ; x"), MissingRedirectTarget(">"));
        assert_eq!(kind("echo >> | x"), MissingRedirectTarget(">>"));
        assert_eq!(kind("cat <\n"), MissingRedirectTarget("<"));
        assert_eq!(kind("echo > > f"), MissingRedirectTarget(">"));
        assert_eq!(kind("cmd 2>&"), MissingRedirectTarget(">&"));
        assert_eq!(kind("cmd 2>&x"), BadFdTarget(">&"));
        assert_eq!(kind("cmd 2>&$X"), BadFdTarget(">&"));
        assert_eq!(kind("cmd <&1x"), BadFdTarget("<&"));
        assert_eq!(kind("cmd 99999999999>f"), BadFdNumber);
        assert_eq!(kind("cmd >&99999999999"), BadFdNumber);
        assert!(!parse("echo >").unwrap_err().is_incomplete());
    }

    #[test]
    fn unsupported_syntax_is_reported() {
        use ParseErrorKind::*;
        assert_eq!(kind("echo $(ls)"), Unsupported("command substitution"));
        assert_eq!(kind("echo `ls`"), Unsupported("command substitution"));
        assert_eq!(kind("echo \"`ls`\""), Unsupported("command substitution"));
        assert_eq!(kind("(cd /; ls)"), Unsupported("subshells"));
        assert_eq!(kind("echo a)"), Unsupported("subshells"));
        assert_eq!(kind("cat <<EOF"), Unsupported("here-documents"));
        assert_eq!(kind("cat <> f"), Unsupported("read-write redirection '<>'"));
        assert_eq!(kind("echo $@"), Unsupported("'$@' and '$*'"));
        assert_eq!(kind("echo \"$*\""), Unsupported("'$@' and '$*'"));
        // Quoted, they are plain characters.
        assert_eq!(argv("echo '$(x)' \"(y)\" \\( \\`"), s(&["echo", "$(x)", "(y)", "(", "`"]));
    }

    #[test]
    fn error_messages() {
        let e = parse("echo 'x").unwrap_err();
        assert_eq!(alloc::format!("{e}"), "unterminated single quote");
        assert_eq!((e.offset, e.line("echo 'x")), (5, 1));
        let src = "echo a\n\na | | b";
        let e = parse(src).unwrap_err();
        assert_eq!(alloc::format!("{e}"), "syntax error: empty command in pipeline");
        assert_eq!((e.offset, e.line(src)), (12, 3));
        let e = parse("echo >").unwrap_err();
        assert_eq!(alloc::format!("{e}"), "syntax error: missing file name after '>'");
        assert_eq!(e.line(""), 1);
    }

    #[test]
    fn crlf_lines() {
        let l = parse("echo a\r\necho b\r\n").unwrap();
        assert_eq!(l.items.len(), 2);
        assert_eq!(l.items[0].and_or.first.commands[0].expand(&lookup).unwrap().argv, s(&["echo", "a"]));
    }

    #[test]
    fn literal_and_names() {
        let l = parse("'a'b\"c\" $X").unwrap();
        let words = &l.items[0].and_or.first.commands[0].words;
        assert_eq!(words[0].literal().as_deref(), Some("abc"));
        assert_eq!(words[1].literal(), None);
        assert!(is_valid_name("_a1"));
        assert!(is_valid_name("PATH"));
        assert!(!is_valid_name(""));
        assert!(!is_valid_name("1a"));
        assert!(!is_valid_name("a-b"));
    }

    #[test]
    fn never_panics_on_odd_input() {
        // Every prefix of a line full of syntax must parse or fail cleanly.
        let line = "A=1 time ! a'b'\"c$X${Y}\\\"\" 2>&1 >>f <g | h -x && i || j & k ; l # m\n'n'";
        for end in 0..=line.len() {
            if line.is_char_boundary(end) {
                let _ = parse(&line[..end]).map(|l| {
                    for item in &l.items {
                        for c in &item.and_or.first.commands {
                            let _ = c.expand(&lookup);
                        }
                    }
                });
            }
        }
        for odd in
            ["\\", "'", "\"", "$", "${", "$(", "2>", "2>&", "&", "|", "||", ";", "!", "~", "#", "\n\\\n"]
        {
            let _ = parse(odd);
        }
    }

    #[test]
    fn outcomes() {
        assert_eq!(Outcome::new(Some(0), None).status(), 0);
        assert_eq!(Outcome::new(Some(3), None).status(), 3);
        assert_eq!(Outcome::new(Some(300), None).status(), 300 & 0xff);
        assert_eq!(Outcome::new(None, Some(2)).status(), 130);
        assert_eq!(Outcome::new(None, Some(9)).status(), 137);
        assert_eq!(signal_description(2), "Interrupt");
        assert_eq!(signal_description(9), "Killed");
        assert_eq!(signal_description(15), "Terminated");
        assert_eq!(signal_description(30), "Signal 30");
    }

    #[test]
    fn times_format() {
        assert_eq!(format_seconds(0), "0.000s");
        assert_eq!(format_seconds(1_234_567_890), "1.235s");
        assert_eq!(format_seconds(999_999), "0.001s");
        assert_eq!(format_seconds(61_000_000_000), "61.000s");
        assert_eq!(format_times(1_500_000_000, 20_000_000, 0), "real 1.500s user 0.020s sys 0.000s");
        let _ = format_seconds(u64::MAX);
    }

    #[test]
    fn jobs_table() {
        let mut jobs = Jobs::default();
        assert!(jobs.is_empty());
        let a = jobs.add(10, &[10, 11], "a | b");
        let b = jobs.add(20, &[20], "sleep 5");
        assert_eq!((a, b), (1, 2));
        assert!(jobs.owns(11));
        assert!(!jobs.child_ended(99, Outcome::Exited(0)));
        // The first process ending does not end the job; the last one's
        // outcome is the job's.
        assert!(jobs.child_ended(11, Outcome::Exited(4)));
        assert!(jobs.take_done().is_empty());
        assert!(jobs.child_ended(10, Outcome::Signaled(13)));
        let done = jobs.take_done();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].outcome, Some(Outcome::Exited(4)));
        assert_eq!(format_job_done(&done[0]), "[1] Exit 4  a | b");
        // Numbers: highest in use plus one.
        assert_eq!(jobs.add(30, &[30], "x"), 3);
        assert_eq!(format_job(jobs.iter().next().unwrap()), "[2] Running  sleep 5");
        jobs.child_ended(20, Outcome::Exited(0));
        jobs.child_ended(30, Outcome::Signaled(9));
        let done = jobs.take_done();
        assert_eq!(format_job_done(&done[0]), "[2] Done  sleep 5");
        assert_eq!(format_job_done(&done[1]), "[3] Killed  x");
        assert!(jobs.is_empty());
        assert_eq!(jobs.add(40, &[40], "y"), 1);
    }
}
