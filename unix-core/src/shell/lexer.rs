//! The lexer: a script cut into tokens (words, operators, redirections,
//! newlines), each word into parts that remember their quoting (XCU 2.3
//! "Token Recognition").
//!
//! What it is not: the grammar (`super::parser` decides what may follow
//! what, and which words are keywords) nor expansion (a `$X` stays a
//! [`Part::Param`]). Command substitutions are parsed through
//! [`Lexer::subparse`], a function the parser hands in, so the lexer does
//! not import the parser.
//!
//! # Invariants
//! - Every malformed input gives a [`ParseError`] with the byte offset of
//!   the problem; syntax this shell does not implement is
//!   [`ParseErrorKind::Unsupported`], never taken literally.
//! - Blanks, comments and `\`-newline continuations between tokens are
//!   dropped (inside a word a continuation joins its two halves); a
//!   newline is a token, after which the bodies of the line's
//!   here-documents are skipped.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::errors::{ParseError, ParseErrorKind};
use super::syntax::{List, ParamOp, Part, Word};

/// A redirection operator as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RedirOp {
    Less,
    Great,
    DGreat,
    Clobber,
    LessAnd,
    GreatAnd,
    /// `<<`
    DLess,
    /// `<<-`
    DLessDash,
    /// `<>`
    LessGreat,
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
            RedirOp::DLess => "<<",
            RedirOp::DLessDash => "<<-",
            RedirOp::LessGreat => "<>",
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
    DSemi,
    Amp,
    LParen,
    RParen,
    Newline,
    End,
}

impl Tok {
    pub(super) fn text(&self) -> &'static str {
        match self {
            Tok::Word(w) => super::syntax::keyword(w).unwrap_or("word"),
            Tok::Redir { op, .. } => op.text(),
            Tok::Pipe => "|",
            Tok::AndIf => "&&",
            Tok::OrIf => "||",
            Tok::Semi => ";",
            Tok::DSemi => ";;",
            Tok::Amp => "&",
            Tok::LParen => "(",
            Tok::RParen => ")",
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

/// Parses the list of a command substitution starting at a byte offset of
/// a source text: the list and the offset of its closing `)`.
pub(super) type SubParse = fn(&str, usize) -> Result<(List, usize), ParseError>;

/// The input and how far it has been read.
pub(super) struct Lexer<'a> {
    pub(super) src: &'a str,
    pub(super) pos: usize,
    pub(super) subparse: SubParse,
    /// Where the next here-document body of the current line starts, once
    /// one has been read.
    heredoc_next: Option<usize>,
}

pub(super) fn err<T>(kind: ParseErrorKind, offset: usize) -> Result<T, ParseError> {
    Err(ParseError { kind, offset })
}

/// How `\` and the end are treated by [`Lexer::dq_body`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Body {
    /// Inside `"…"`: ends at `"`; `\` escapes `$ ` " \` and newline.
    DoubleQuote,
    /// A here-document or `$((…))`: runs to the end of the text; `\`
    /// escapes `$ ` \` and newline.
    Plain,
}

impl<'a> Lexer<'a> {
    pub(super) fn new(src: &'a str, pos: usize, subparse: SubParse) -> Lexer<'a> {
        Lexer { src, pos, subparse, heredoc_next: None }
    }

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
            Some('\n') => {
                let end = match self.heredoc_next.take() {
                    // The bodies of this line's here-documents follow the
                    // newline; the next token comes after them.
                    Some(after_bodies) => after_bodies,
                    None => start + 1,
                };
                self.pos = end;
                return Ok(Token { tok: Tok::Newline, start, end: start + 1 });
            }
            Some('|') if two(self, '|') => (Tok::OrIf, 2),
            Some('|') => (Tok::Pipe, 1),
            Some('&') if two(self, '&') => (Tok::AndIf, 2),
            Some('&') => (Tok::Amp, 1),
            Some(';') if two(self, ';') => (Tok::DSemi, 2),
            Some(';') => (Tok::Semi, 1),
            Some('(') => (Tok::LParen, 1),
            Some(')') => (Tok::RParen, 1),
            Some('<' | '>') => return self.redirection(start, None),
            Some(_) => return self.word(start),
        };
        self.pos += len;
        Ok(Token { tok, start, end: self.pos })
    }

    /// A redirection operator at `self.pos`, after the descriptor number `fd`.
    fn redirection(&mut self, start: usize, fd: Option<i32>) -> Result<Token, ParseError> {
        let first = self.bump();
        let second = self.peek_char();
        let op = match (first, second) {
            (Some('<'), Some('<')) if self.char_at(self.pos + 1) == Some('-') => {
                self.pos += 1;
                RedirOp::DLessDash
            }
            (Some('<'), Some('<')) => RedirOp::DLess,
            (Some('<'), Some('>')) => RedirOp::LessGreat,
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

    /// The body of a here-document whose operator and delimiter were just
    /// read: the lines after the current line's newline (or after the
    /// previous here-document of this line) up to the delimiter line.
    /// `quoted`: the delimiter was quoted, so the body is not expanded.
    pub(super) fn heredoc(
        &mut self,
        delimiter: &str,
        strip_tabs: bool,
        quoted: bool,
    ) -> Result<Word, ParseError> {
        let at = self.pos;
        let start = match self.heredoc_next {
            Some(p) => p,
            None => self.end_of_line(at)?,
        };
        let mut body = String::new();
        let mut pos = start;
        loop {
            if pos >= self.src.len() {
                return err(ParseErrorKind::UnterminatedHereDoc, at);
            }
            let end = self.src[pos..].find('\n').map_or(self.src.len(), |i| pos + i + 1);
            let mut line = &self.src[pos..end];
            pos = end;
            if strip_tabs {
                line = line.trim_start_matches('\t');
            }
            if line.trim_end_matches('\n') == delimiter {
                break;
            }
            if !line.ends_with('\n') {
                // The delimiter line may still come.
                return err(ParseErrorKind::UnterminatedHereDoc, at);
            }
            body.push_str(line);
        }
        self.heredoc_next = Some(pos);
        if quoted {
            return Ok(Word {
                parts: alloc::vec![Part::Text { text: body.clone(), quoted: true }],
                raw: body,
            });
        }
        let mut sub = Lexer::new(&body, 0, self.subparse);
        let mut w = WordBuilder::default();
        w.push_str("", true);
        sub.dq_body(&mut w, Body::Plain)
            .map_err(|e| ParseError { kind: e.kind, offset: start + e.offset })?;
        Ok(Word { parts: w.parts, raw: body.clone() })
    }

    /// Where the line being read ends: just after the newline token that
    /// follows `from`, found by reading the tokens on (so a newline
    /// inside quotes or a `$(…)` later on the line does not count, XCU
    /// 2.7.4).
    fn end_of_line(&self, from: usize) -> Result<usize, ParseError> {
        let mut scan = Lexer::new(self.src, from, self.subparse);
        loop {
            let t = scan.next_token()?;
            match t.tok {
                Tok::Newline => return Ok(t.end),
                Tok::End => return err(ParseErrorKind::UnterminatedHereDoc, from),
                _ => {}
            }
        }
    }

    fn word(&mut self, start: usize) -> Result<Token, ParseError> {
        let mut w = WordBuilder::default();
        loop {
            let at = self.pos;
            match self.peek_char() {
                None | Some(' ' | '\t' | '\r' | '\n' | '|' | '&' | ';' | '(' | ')') => break,
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
                Some('`') => self.backquote(&mut w, false)?,
                Some('\'') => {
                    self.pos += 1;
                    let Some(len) = self.src[self.pos..].find('\'') else {
                        return err(ParseErrorKind::UnterminatedSingleQuote, at);
                    };
                    w.push_str(&self.src[self.pos..self.pos + len], true);
                    self.pos += len + 1;
                }
                Some('"') => {
                    let open = self.pos;
                    self.pos += 1;
                    // `""` must still make a (possibly empty) field.
                    w.push_str("", true);
                    self.dq_body(&mut w, Body::DoubleQuote)?;
                    if self.peek_char() != Some('"') {
                        return err(ParseErrorKind::UnterminatedDoubleQuote, open);
                    }
                    self.pos += 1;
                }
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

    /// The inside of `"…"` (stopping before the closing `"`, which the
    /// caller checks) or a whole here-document / arithmetic text.
    fn dq_body(&mut self, w: &mut WordBuilder, body: Body) -> Result<(), ParseError> {
        let quoted = true;
        loop {
            match self.peek_char() {
                None => return Ok(()),
                Some('"') if body == Body::DoubleQuote => return Ok(()),
                Some('\\') => {
                    self.pos += 1;
                    match self.peek_char() {
                        Some(c @ ('$' | '`' | '\\')) => {
                            self.pos += 1;
                            w.push_char(c, true);
                        }
                        Some('"') if body == Body::DoubleQuote => {
                            self.pos += 1;
                            w.push_char('"', true);
                        }
                        Some('\n') => self.pos += 1,
                        _ => w.push_char('\\', true),
                    }
                }
                Some('$') => self.dollar(w, quoted)?,
                Some('`') => self.backquote(w, quoted)?,
                Some(c) => {
                    self.pos += c.len_utf8();
                    w.push_char(c, quoted);
                }
            }
        }
    }

    /// `` `…` ``: inside, `\` keeps its meaning only before `$`, `` ` ``
    /// and `\` (XCU 2.6.3); the rest is parsed as a list.
    fn backquote(&mut self, w: &mut WordBuilder, quoted: bool) -> Result<(), ParseError> {
        let at = self.pos;
        self.pos += 1;
        let mut text = String::new();
        loop {
            match self.bump() {
                None => return err(ParseErrorKind::UnterminatedBackquote, at),
                Some('`') => break,
                Some('\\') => match self.bump() {
                    Some(c @ ('$' | '`' | '\\')) => text.push(c),
                    Some('"') if quoted => text.push('"'),
                    Some(c) => {
                        text.push('\\');
                        text.push(c);
                    }
                    None => return err(ParseErrorKind::UnterminatedBackquote, at),
                },
                Some(c) => text.push(c),
            }
        }
        // Parsed as if it were `$(text\n)`: the `)` ends the list.
        text.push_str("\n)");
        let (list, end) = (self.subparse)(&text, 0).map_err(|e| ParseError { kind: e.kind, offset: at })?;
        if end + 1 != text.len() {
            return err(ParseErrorKind::UnexpectedToken(")"), at + 1 + end);
        }
        w.parts.push(Part::CommandSubst { list: Box::new(list), quoted });
        Ok(())
    }

    /// `$…` at `self.pos`: a parameter, a substitution, or a plain `$`.
    fn dollar(&mut self, w: &mut WordBuilder, quoted: bool) -> Result<(), ParseError> {
        let at = self.pos;
        self.pos += 1;
        let name_start = self.pos;
        match self.peek_char() {
            Some('{') => {
                self.pos += 1;
                let part = self.braced(at, quoted)?;
                w.parts.push(part);
            }
            Some('(') if self.char_at(self.pos + 1) == Some('(') => {
                // `$((…))`: the text up to the matching `))`.
                let start = self.pos + 2;
                let mut depth = 0usize;
                let mut i = start;
                let bytes = self.src.as_bytes();
                loop {
                    match bytes.get(i) {
                        None => return err(ParseErrorKind::UnterminatedArithmetic, at),
                        Some(b'(') => depth += 1,
                        Some(b')') if depth == 0 => {
                            if bytes.get(i + 1) == Some(&b')') {
                                break;
                            }
                            return err(ParseErrorKind::UnterminatedArithmetic, at);
                        }
                        Some(b')') => depth -= 1,
                        _ => {}
                    }
                    i += 1;
                }
                let text = &self.src[start..i];
                let mut sub = Lexer::new(text, 0, self.subparse);
                let mut expr = WordBuilder::default();
                sub.dq_body(&mut expr, Body::Plain)
                    .map_err(|e| ParseError { kind: e.kind, offset: start + e.offset })?;
                self.pos = i + 2;
                w.parts.push(Part::Arith {
                    expr: Box::new(Word { parts: expr.parts, raw: text.to_string() }),
                    quoted,
                });
            }
            Some('(') => {
                let (list, end) = (self.subparse)(self.src, self.pos + 1)?;
                self.pos = end + 1;
                w.parts.push(Part::CommandSubst { list: Box::new(list), quoted });
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                while matches!(self.peek_char(), Some(c) if c == '_' || c.is_ascii_alphanumeric()) {
                    self.pos += 1;
                }
                let name = &self.src[name_start..self.pos];
                w.parts.push(Part::Param { name: name.to_string(), quoted });
            }
            // POSIX: `$10` is `$1` followed by `0`.
            Some(c @ ('0'..='9' | '?' | '$' | '!' | '#' | '@' | '*' | '-')) => {
                self.pos += 1;
                w.parts.push(Part::Param { name: c.to_string(), quoted });
            }
            _ => w.push_char('$', quoted),
        }
        Ok(())
    }

    /// After `${`: the name, an operator and its word, and `}`.
    fn braced(&mut self, at: usize, quoted: bool) -> Result<Part, ParseError> {
        let rest = &self.src[self.pos..];
        // `${#name}` is a length; `${#}` the number of parameters.
        let length = rest.starts_with('#') && !rest.starts_with("#}") && rest.len() > 1;
        if length {
            self.pos += 1;
        }
        let name = self.param_name();
        if name.is_empty() {
            return self.bad_substitution(at);
        }
        if length {
            if self.peek_char() != Some('}') {
                return self.bad_substitution(at);
            }
            self.pos += 1;
            let word = Box::new(Word { parts: Vec::new(), raw: String::new() });
            return Ok(Part::ParamOp { name, op: ParamOp::Length, word, quoted });
        }
        let colon = self.peek_char() == Some(':');
        if colon {
            self.pos += 1;
        }
        let c = self.bump();
        let op = match c {
            Some('}') if !colon => return Ok(Part::Param { name, quoted }),
            Some('-') => ParamOp::Default { colon },
            Some('=') => ParamOp::Assign { colon },
            Some('?') => ParamOp::Error { colon },
            Some('+') => ParamOp::Alternative { colon },
            Some('%') if !colon => {
                let longest = self.peek_char() == Some('%');
                if longest {
                    self.pos += 1;
                }
                ParamOp::RemoveSuffix { longest }
            }
            Some('#') if !colon => {
                let longest = self.peek_char() == Some('#');
                if longest {
                    self.pos += 1;
                }
                ParamOp::RemovePrefix { longest }
            }
            None => return err(ParseErrorKind::UnterminatedBrace, at),
            _ => return self.bad_substitution(at),
        };
        let word = self.brace_word(at)?;
        Ok(Part::ParamOp { name, op, word: Box::new(word), quoted })
    }

    /// The reason for a bad `${…}`: unterminated, or not a parameter.
    fn bad_substitution<T>(&self, at: usize) -> Result<T, ParseError> {
        if self.src[at..].contains('}') {
            err(ParseErrorKind::BadSubstitution, at)
        } else {
            err(ParseErrorKind::UnterminatedBrace, at)
        }
    }

    fn param_name(&mut self) -> String {
        let start = self.pos;
        match self.peek_char() {
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                while matches!(self.peek_char(), Some(c) if c == '_' || c.is_ascii_alphanumeric()) {
                    self.pos += 1;
                }
            }
            Some('0'..='9') => {
                while matches!(self.peek_char(), Some('0'..='9')) {
                    self.pos += 1;
                }
            }
            Some('?' | '$' | '!' | '#' | '@' | '*' | '-') => self.pos += 1,
            _ => {}
        }
        self.src[start..self.pos].to_string()
    }

    /// The word of `${name<op>word}`, up to the unquoted `}`. Its quoting
    /// counts for patterns; blanks in it are part of it.
    fn brace_word(&mut self, at: usize) -> Result<Word, ParseError> {
        let start = self.pos;
        let mut w = WordBuilder::default();
        loop {
            let here = self.pos;
            match self.peek_char() {
                None => return err(ParseErrorKind::UnterminatedBrace, at),
                Some('}') => {
                    self.pos += 1;
                    break;
                }
                Some('\'') => {
                    self.pos += 1;
                    let Some(len) = self.src[self.pos..].find('\'') else {
                        return err(ParseErrorKind::UnterminatedSingleQuote, here);
                    };
                    w.push_str(&self.src[self.pos..self.pos + len], true);
                    self.pos += len + 1;
                }
                Some('"') => {
                    self.pos += 1;
                    w.push_str("", true);
                    self.dq_body(&mut w, Body::DoubleQuote)?;
                    if self.peek_char() != Some('"') {
                        return err(ParseErrorKind::UnterminatedDoubleQuote, here);
                    }
                    self.pos += 1;
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.bump() {
                        None => return err(ParseErrorKind::UnterminatedBrace, at),
                        Some('\n') => {}
                        Some(c) => w.push_char(c, true),
                    }
                }
                Some('$') => self.dollar(&mut w, false)?,
                Some('`') => self.backquote(&mut w, false)?,
                Some(c) => {
                    self.pos += c.len_utf8();
                    w.push_char(c, false);
                }
            }
        }
        Ok(Word { parts: w.parts, raw: self.src[start..self.pos - 1].to_string() })
    }
}

pub(super) fn is_positional(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use crate::shell::errors::ParseErrorKind;
    use crate::shell::parse;
    use crate::shell::testing::{argv, kind, s};

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
    fn substitutions_parse_and_unsupported_syntax_is_reported() {
        use ParseErrorKind::*;
        assert!(parse("echo $(ls) `ls` \"`ls`\" $((1+2)) $(echo $(x))").is_ok());
        assert_eq!(kind("echo $(ls"), EndInCompound(")"));
        assert_eq!(kind("echo `ls"), UnterminatedBackquote);
        assert_eq!(kind("echo $((1+2)"), UnterminatedArithmetic);
        assert_eq!(kind("echo a)"), UnexpectedToken(")"));
        assert_eq!(kind("echo ${X:}"), BadSubstitution);
        assert_eq!(kind("echo ${X!}"), BadSubstitution);
        assert!(parse("echo $(ls").unwrap_err().is_incomplete());
        // Quoted, they are plain characters.
        assert_eq!(argv("echo '$(x)' \"(y)\" \\( \\`"), s(&["echo", "$(x)", "(y)", "(", "`"]));
    }

    #[test]
    fn crlf_lines() {
        let l = parse("echo a\r\necho b\r\n").unwrap();
        assert_eq!(l.items.len(), 2);
        assert_eq!(argv("echo a\r"), s(&["echo", "a"]));
    }
}
