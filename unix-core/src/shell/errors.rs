//! What can go wrong with a command line: a syntax error found by the
//! lexer or parser ([`ParseError`]), or an expansion that cannot be used
//! ([`ExpandError`]), and the messages the shell prints for them.
//!
//! What it is not: a recovery strategy. The error says what and where;
//! `apps/sh` decides whether to read a continuation line or report it.

use alloc::string::String;
use core::fmt;

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
    /// `<<word` whose delimiter line never comes.
    UnterminatedHereDoc,
    /// `` ` `` with no closing `` ` ``.
    UnterminatedBackquote,
    /// `$((` with no closing `))`.
    UnterminatedArithmetic,
    /// The input ends inside a compound command or `$(`; the name is
    /// the keyword that would close it.
    EndInCompound(&'static str),
    /// A word where a keyword (the name) must come: `if a; b` without `then`.
    ExpectedKeyword(&'static str),
    /// `for` not followed by a variable name.
    BadForName,
    /// `f() x`: a function body must be a compound command.
    BadFunctionBody,
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
                | ParseErrorKind::UnterminatedHereDoc
                | ParseErrorKind::UnterminatedBackquote
                | ParseErrorKind::UnterminatedArithmetic
                | ParseErrorKind::UnterminatedBrace
                | ParseErrorKind::EndInCompound(_)
        )
    }
}

impl ParseError {
    /// The 1-based line of `src` (the text given to
    /// [`parse`](super::parse)) where the error was found.
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
            UnterminatedHereDoc => write!(f, "here-document not ended by its delimiter line"),
            UnterminatedBackquote => write!(f, "unterminated '`'"),
            UnterminatedArithmetic => write!(f, "unterminated '$(('"),
            EndInCompound(close) => write!(f, "syntax error: end of input, expected '{close}'"),
            ExpectedKeyword(kw) => write!(f, "syntax error: expected '{kw}'"),
            BadForName => write!(f, "syntax error: 'for' needs a variable name"),
            BadFunctionBody => write!(f, "syntax error: a function body must be a compound command"),
            Unsupported(what) => write!(f, "{what} not supported"),
        }
    }
}

/// An error found while expanding a command just before it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpandError {
    /// A redirection's file name expanded to no word or to several.
    AmbiguousRedirect { word: String },
    /// `${x?message}` with `x` unset (or empty, with `:`).
    ParamError { name: String, message: String },
    /// `set -u` and an unset parameter.
    Unset { name: String },
    /// `$((…))` that does not evaluate.
    Arith { expr: String, why: &'static str },
    /// `${x=w}` on a special or positional parameter.
    CannotAssign { name: String },
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpandError::AmbiguousRedirect { word } => write!(f, "{word}: ambiguous redirect"),
            ExpandError::ParamError { name, message } => write!(f, "{name}: {message}"),
            ExpandError::Unset { name } => write!(f, "{name}: parameter not set"),
            ExpandError::Arith { expr, why } => write!(f, "arithmetic expression: {why}: \"{expr}\""),
            ExpandError::CannotAssign { name } => write!(f, "{name}: cannot assign in this way"),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::shell::parse;

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
}
