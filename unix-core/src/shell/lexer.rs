//! The lexer: a command line cut into tokens (words, operators,
//! redirections, newlines), each word into parts that remember their
//! quoting.
//!
//! What it is not: the grammar (`super::parser` decides what may follow
//! what) nor expansion (a `$X` stays a [`Part::Param`]).
//!
//! # Invariants
//! - Every malformed input gives a [`ParseError`] with the byte offset of
//!   the problem; syntax this shell does not implement is
//!   [`ParseErrorKind::Unsupported`], never taken literally.
//! - Blanks, comments and `\`-newline continuations between tokens are
//!   dropped (inside a word a continuation joins its two halves); a
//!   newline is a token.

use alloc::string::ToString;
use alloc::vec::Vec;

use super::errors::{ParseError, ParseErrorKind};
use super::syntax::{Part, Word, is_valid_name};

/// A redirection operator as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RedirOp {
    Less,
    Great,
    DGreat,
    Clobber,
    LessAnd,
    GreatAnd,
}

impl RedirOp {
    pub(super) fn text(self) -> &'static str {
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

/// What a token is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Tok {
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
    pub(super) fn text(&self) -> &'static str {
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

/// A token and the byte offsets of its source text.
#[derive(Clone, Debug)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) start: usize,
    pub(super) end: usize,
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
pub(super) fn with_home(mut parts: Vec<Part>) -> Vec<Part> {
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

/// The input and how far it has been read.
pub(super) struct Lexer<'a> {
    pub(super) src: &'a str,
    pub(super) pos: usize,
}

pub(super) fn err<T>(kind: ParseErrorKind, offset: usize) -> Result<T, ParseError> {
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

    pub(super) fn next_token(&mut self) -> Result<Token, ParseError> {
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

pub(super) fn is_positional(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use crate::shell::errors::ParseErrorKind;
    use crate::shell::parse;
    use crate::shell::testing::{argv, kind, lookup, s};

    #[test]
    fn plain_words() {
        assert_eq!(argv("echo hello world"), s(&["echo", "hello", "world"]));
        assert_eq!(argv("  echo\t  a   "), s(&["echo", "a"]));
        assert_eq!(argv("ls -l /bin"), s(&["ls", "-l", "/bin"]));
        assert_eq!(argv("héllo wörld"), s(&["héllo", "wörld"]));
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
    fn crlf_lines() {
        let l = parse("echo a\r\necho b\r\n").unwrap();
        assert_eq!(l.items.len(), 2);
        assert_eq!(l.items[0].and_or.first.commands[0].expand(&lookup).unwrap().argv, s(&["echo", "a"]));
    }
}
