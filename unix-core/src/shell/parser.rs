//! The parser: tokens from the lexer built into a [`List`] of and-or
//! lists, pipelines, simple and compound commands and function
//! definitions ([`parse`]), after XCU 2.10 "Shell Grammar".
//!
//! What it is not: an evaluator. It neither expands nor runs. Reserved
//! words (`if`, `then`, …, `{`, `}`, `!`, and `in` after `for`/`case`
//! words) are recognised here by their unquoted text, and only where the
//! grammar allows one: as the first word of a command, so `echo if` is
//! an ordinary command.
//!
//! # Invariants
//! - The tree's source texts (`ListItem::text`) are slices of the input,
//!   so job reports show what was typed.
//! - [`ParseError::is_incomplete`] is true exactly when more input (a
//!   continuation line) could complete the script.

use alloc::rc::Rc;
use alloc::string::ToString;
use alloc::vec::Vec;

use super::errors::{ParseError, ParseErrorKind};
use super::lexer::{Lexer, RedirOp, Tok, Token, err, is_positional, with_home};
use super::syntax::{
    AndOr, Assignment, CaseArm, Command, Compound, Connector, FunctionBody, List, ListItem, Part, Pipeline,
    RedirKind, Redirection, SimpleCommand, Word, is_valid_name, keyword,
};

/// Parse a command line or a whole script.
pub fn parse(src: &str) -> Result<List, ParseError> {
    let mut p = Parser::new(src, 0);
    let list = p.list()?;
    let t = p.peek()?;
    match t.tok {
        Tok::End => Ok(list),
        ref other => err(ParseErrorKind::UnexpectedToken(other.text()), t.start),
    }
}

/// The list of a `$(…)` starting at `start` in `src`: the list and the
/// offset of its `)`.
fn parse_substitution(src: &str, start: usize) -> Result<(List, usize), ParseError> {
    let mut p = Parser::new(src, start);
    let list = p.list()?;
    let t = p.take()?;
    match t.tok {
        Tok::RParen => Ok((list, t.start)),
        Tok::End => err(ParseErrorKind::EndInCompound(")"), t.start),
        ref other => err(ParseErrorKind::UnexpectedToken(other.text()), t.start),
    }
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

/// The reserved words that end a list (the caller checks which it wants).
fn ends_list(w: &Word) -> bool {
    matches!(keyword(w), Some("then" | "else" | "elif" | "fi" | "do" | "done" | "esac" | "}"))
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, pos: usize) -> Parser<'a> {
        Parser { lx: Lexer::new(src, pos, parse_substitution), peeked: None, last_end: pos }
    }

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

    /// Is the next token the reserved word `kw`?
    fn at_keyword(&mut self, kw: &str) -> Result<bool, ParseError> {
        Ok(matches!(&self.peek()?.tok, Tok::Word(w) if w.is_bare(kw)))
    }

    /// Take the reserved word `kw` (after newlines), or fail: at the end
    /// of input the script is incomplete.
    fn expect_keyword(&mut self, kw: &'static str) -> Result<(), ParseError> {
        self.skip_newlines()?;
        if self.at_keyword(kw)? {
            self.take()?;
            return Ok(());
        }
        let t = self.peek()?;
        match &t.tok {
            Tok::End => err(ParseErrorKind::EndInCompound(kw), t.start),
            Tok::Word(w) if keyword(w).is_none() => err(ParseErrorKind::ExpectedKeyword(kw), t.start),
            other => err(ParseErrorKind::UnexpectedToken(other.text()), t.start),
        }
    }

    /// A list, up to the end, `)`, `;;` or a reserved word that closes
    /// a compound command.
    fn list(&mut self) -> Result<List, ParseError> {
        let mut items = Vec::new();
        loop {
            self.skip_newlines()?;
            let t = self.peek()?;
            match &t.tok {
                Tok::End | Tok::RParen | Tok::DSemi => return Ok(List { items }),
                Tok::Word(w) if ends_list(w) => return Ok(List { items }),
                _ => {}
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
                Tok::Newline | Tok::End | Tok::RParen | Tok::DSemi => false,
                Tok::Word(ref w) if ends_list(w) => false,
                ref other => return err(ParseErrorKind::UnexpectedToken(other.text()), next.start),
            };
            items.push(ListItem { and_or, background, text });
        }
    }

    /// A list that must hold at least one command, closed by `close`.
    fn body(&mut self, opened: &'static str, close: &'static str) -> Result<List, ParseError> {
        let list = self.list()?;
        if list.items.is_empty() {
            let t = self.peek()?;
            return match &t.tok {
                Tok::End => err(ParseErrorKind::EndInCompound(close), t.start),
                other => {
                    let _ = opened;
                    err(ParseErrorKind::UnexpectedToken(other.text()), t.start)
                }
            };
        }
        Ok(list)
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
        if self.at_keyword("time")? {
            self.take()?;
            timed = true;
            before = Before::Keyword("time");
        }
        if self.at_keyword("!")? {
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
        if let Some(compound) = self.compound()? {
            let redirections = self.redirections()?;
            return Ok(Command::Compound(compound, redirections));
        }
        let mut cmd = SimpleCommand::default();
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
            // `name()`: a function definition.
            if self.peek()?.tok == Tok::LParen
                && cmd.words.len() == 1
                && cmd.assignments.is_empty()
                && cmd.redirections.is_empty()
            {
                let open = self.take()?.start;
                let name = cmd.words[0].literal().filter(|n| is_valid_name(n));
                let Some(name) = name else {
                    return err(ParseErrorKind::UnexpectedToken("("), open);
                };
                let t = self.take()?;
                if t.tok != Tok::RParen {
                    return err(ParseErrorKind::UnexpectedToken(t.tok.text()), t.start);
                }
                self.skip_newlines()?;
                let Some(command) = self.compound()? else {
                    let t = self.peek()?;
                    if t.tok == Tok::End {
                        return err(ParseErrorKind::EndInCompound("}"), t.start);
                    }
                    return err(ParseErrorKind::BadFunctionBody, t.start);
                };
                let redirections = self.redirections()?;
                return Ok(Command::FunctionDef {
                    name,
                    body: Rc::new(FunctionBody { command, redirections }),
                });
            }
        }
        if !cmd.words.is_empty() || !cmd.assignments.is_empty() || !cmd.redirections.is_empty() {
            return Ok(Command::Simple(cmd));
        }
        let t = self.peek()?;
        let (offset, at_end, tok) = (t.start, t.tok == Tok::End, t.tok.text());
        let kind = match before {
            Before::Operator(op) if at_end => ParseErrorKind::EndAfterOperator(op),
            Before::Operator("|") => ParseErrorKind::EmptyPipelineStage,
            Before::Keyword(op) if at_end => ParseErrorKind::MissingCommand(op),
            Before::Operator(op) | Before::Keyword(op) => ParseErrorKind::MissingCommand(op),
            Before::ListStart => ParseErrorKind::UnexpectedToken(tok),
        };
        err(kind, offset)
    }

    /// Redirections after a compound command.
    fn redirections(&mut self) -> Result<Vec<Redirection<Word>>, ParseError> {
        let mut out = Vec::new();
        while let Tok::Redir { fd, op } = self.peek()?.tok {
            self.take()?;
            out.push(self.redirection_target(fd, op)?);
        }
        Ok(out)
    }

    /// A compound command, if one starts here.
    fn compound(&mut self) -> Result<Option<Compound>, ParseError> {
        let kw = match &self.peek()?.tok {
            Tok::LParen => {
                self.take()?;
                let list = self.body("(", ")")?;
                let t = self.take()?;
                return match t.tok {
                    Tok::RParen => Ok(Some(Compound::Subshell(list))),
                    Tok::End => err(ParseErrorKind::EndInCompound(")"), t.start),
                    ref other => err(ParseErrorKind::UnexpectedToken(other.text()), t.start),
                };
            }
            Tok::Word(w) => keyword(w),
            _ => None,
        };
        let Some(kw) = kw else { return Ok(None) };
        let compound = match kw {
            "{" => {
                self.take()?;
                let list = self.body("{", "}")?;
                self.expect_keyword("}")?;
                Compound::Group(list)
            }
            "if" => {
                self.take()?;
                let mut branches = Vec::new();
                let mut otherwise = None;
                loop {
                    let condition = self.body("if", "then")?;
                    self.expect_keyword("then")?;
                    let body = self.body("then", "fi")?;
                    branches.push((condition, body));
                    if self.at_keyword("elif")? {
                        self.take()?;
                        continue;
                    }
                    if self.at_keyword("else")? {
                        self.take()?;
                        otherwise = Some(self.body("else", "fi")?);
                    }
                    self.expect_keyword("fi")?;
                    break;
                }
                Compound::If { branches, otherwise }
            }
            "while" | "until" => {
                self.take()?;
                let condition = self.body(kw, "do")?;
                self.expect_keyword("do")?;
                let body = self.body("do", "done")?;
                self.expect_keyword("done")?;
                Compound::Loop { condition, body, until: kw == "until" }
            }
            "for" => {
                self.take()?;
                let t = self.take()?;
                let name = match &t.tok {
                    Tok::Word(w) => w.literal().filter(|n| is_valid_name(n)),
                    _ => None,
                };
                let Some(name) = name else {
                    return match t.tok {
                        Tok::End => err(ParseErrorKind::EndInCompound("do"), t.start),
                        _ => err(ParseErrorKind::BadForName, t.start),
                    };
                };
                // `for i; do`, `for i do`, `for i\ndo`, `for i in a b; do`.
                let mut words = None;
                if self.peek()?.tok == Tok::Semi {
                    self.take()?;
                } else {
                    self.skip_newlines()?;
                    if self.at_keyword("in")? {
                        self.take()?;
                        let mut list = Vec::new();
                        while let Tok::Word(_) = self.peek()?.tok {
                            let Tok::Word(w) = self.take()?.tok else { break };
                            list.push(w);
                        }
                        match self.peek()?.tok {
                            Tok::Semi | Tok::Newline => {
                                self.take()?;
                            }
                            Tok::End => return err(ParseErrorKind::EndInCompound("do"), self.lx.pos),
                            ref other => {
                                let t = other.text();
                                return err(ParseErrorKind::UnexpectedToken(t), self.lx.pos);
                            }
                        }
                        words = Some(list);
                    }
                }
                self.expect_keyword("do")?;
                let body = self.body("do", "done")?;
                self.expect_keyword("done")?;
                Compound::For { name, words, body }
            }
            "case" => {
                self.take()?;
                let t = self.take()?;
                let word = match t.tok {
                    Tok::Word(w) => w,
                    Tok::End => return err(ParseErrorKind::EndInCompound("in"), t.start),
                    other => return err(ParseErrorKind::UnexpectedToken(other.text()), t.start),
                };
                self.expect_keyword("in")?;
                let mut arms = Vec::new();
                loop {
                    self.skip_newlines()?;
                    if self.at_keyword("esac")? {
                        self.take()?;
                        break;
                    }
                    if self.peek()?.tok == Tok::LParen {
                        self.take()?;
                    }
                    let mut patterns = Vec::new();
                    loop {
                        let t = self.take()?;
                        match t.tok {
                            Tok::Word(w) => patterns.push(w),
                            Tok::End => return err(ParseErrorKind::EndInCompound("esac"), t.start),
                            other => return err(ParseErrorKind::UnexpectedToken(other.text()), t.start),
                        }
                        let t = self.take()?;
                        match t.tok {
                            Tok::Pipe => continue,
                            Tok::RParen => break,
                            Tok::End => return err(ParseErrorKind::EndInCompound("esac"), t.start),
                            other => return err(ParseErrorKind::UnexpectedToken(other.text()), t.start),
                        }
                    }
                    let body = self.list()?;
                    arms.push(CaseArm { patterns, body });
                    self.skip_newlines()?;
                    let t = self.peek()?;
                    match &t.tok {
                        Tok::DSemi => {
                            self.take()?;
                        }
                        Tok::Word(w) if w.is_bare("esac") => {}
                        Tok::End => return err(ParseErrorKind::EndInCompound("esac"), t.start),
                        other => return err(ParseErrorKind::UnexpectedToken(other.text()), t.start),
                    }
                }
                Compound::Case { word, arms }
            }
            _ => return Ok(None),
        };
        Ok(Some(compound))
    }

    fn redirection_target(&mut self, fd: Option<i32>, op: RedirOp) -> Result<Redirection<Word>, ParseError> {
        let t = self.take()?;
        let Tok::Word(target) = t.tok else {
            return err(ParseErrorKind::MissingRedirectTarget(op.text()), t.start);
        };
        let default_fd = if matches!(
            op,
            RedirOp::Less | RedirOp::LessAnd | RedirOp::DLess | RedirOp::DLessDash | RedirOp::LessGreat
        ) {
            0
        } else {
            1
        };
        let fd = fd.unwrap_or(default_fd);
        let kind = match op {
            RedirOp::Less => RedirKind::Read(target),
            RedirOp::Great => RedirKind::Write(target),
            RedirOp::Clobber => RedirKind::Clobber(target),
            RedirOp::LessGreat => RedirKind::ReadWrite(target),
            RedirOp::DGreat => RedirKind::Append(target),
            RedirOp::DLess | RedirOp::DLessDash => {
                // The delimiter is the word after quote removal; any
                // quoting makes the body literal (XCU 2.7.4).
                // Nothing in it is expanded: `<<$X` ends at a line `$X`,
                // as in dash.
                let mut delimiter = alloc::string::String::new();
                let mut quoted = false;
                if target.parts.iter().all(|p| matches!(p, Part::Text { .. })) {
                    for part in &target.parts {
                        if let Part::Text { text, quoted: q } = part {
                            delimiter.push_str(text);
                            quoted |= *q;
                        }
                    }
                } else {
                    delimiter = unquote_raw(&target.raw);
                }
                quoted |= target.raw.contains(['"', '\'', '\\']);
                let body = self.lx.heredoc(&delimiter, op == RedirOp::DLessDash, quoted)?;
                RedirKind::HereDoc(body)
            }
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

/// A word's source text with its quotes removed (a here-document
/// delimiter holding `$` or `` ` ``, which is never expanded).
fn unquote_raw(raw: &str) -> alloc::string::String {
    let mut out = alloc::string::String::new();
    let mut chars = raw.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '\\') | (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            _ => out.push(c),
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::testing::{argv, argvs, kind, s, simple};
    use alloc::string::String;
    use alloc::vec;

    fn redirs(src: &str) -> Vec<Redirection<String>> {
        simple(src).redirections
    }

    #[test]
    fn empty_input_is_empty_list() {
        assert_eq!(parse("").unwrap().items.len(), 0);
        assert_eq!(parse("   \n\n  \t").unwrap().items.len(), 0);
        assert_eq!(parse("# just a comment").unwrap().items.len(), 0);
        assert_eq!(parse("\n# c1\n  # c2\n").unwrap().items.len(), 0);
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
        assert!(matches!(&ao.rest[1].1.commands[0], Command::Simple(c) if c.words[0].raw == "c"));
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
        assert!(matches!(&p.commands[1], Command::Simple(c) if c.redirections.len() == 1));
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
    fn syntax_errors() {
        use ParseErrorKind::*;
        assert_eq!(kind("; a"), UnexpectedToken(";"));
        assert_eq!(kind("a ;; b"), UnexpectedToken(";;"));
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
    fn never_panics_on_odd_input() {
        // Every prefix of a line full of syntax must parse or fail cleanly.
        let lines = [
            "A=1 time ! a'b'\"c$X${Y}\\\"\" 2>&1 >>f <g | h -x && i || j & k ; l # m\n'n'",
            "if a; then b; elif c; then d; else e; fi; while f; do g; done; for i in 1 2; do h; done",
            "case $x in a|b) c;; (*) d;; esac; f() { g $((1+2)) $(h) `i` ${j:-k} ${#l}; }; cat <<E\nbody\nE\n",
        ];
        for line in lines {
            for end in 0..=line.len() {
                if line.is_char_boundary(end) && parse(&line[..end]).is_ok() {
                    let _ = crate::shell::testing::run(&line[..end]);
                }
            }
        }
        for odd in
            ["\\", "'", "\"", "$", "${", "$(", "2>", "2>&", "&", "|", "||", ";", "!", "~", "#", "\n\\\n"]
        {
            let _ = parse(odd);
        }
    }
}
