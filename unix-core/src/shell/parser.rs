//! The parser: tokens from the lexer built into a [`List`] of and-or
//! lists, pipelines and commands ([`parse`]).
//!
//! What it is not: an evaluator. It neither expands nor runs; keywords
//! (`time`, `!`) and `NAME=value` prefixes are recognised here, by their
//! unquoted text.
//!
//! # Invariants
//! - The tree's source texts (`ListItem::text`) are slices of the input,
//!   so job reports show what was typed.
//! - [`ParseError::is_incomplete`] is true exactly when more input (a
//!   continuation line) could complete the line.

use alloc::string::ToString;
use alloc::vec::Vec;

use super::errors::{ParseError, ParseErrorKind};
use super::lexer::{Lexer, RedirOp, Tok, Token, err, is_positional, with_home};
use super::syntax::{
    AndOr, Assignment, Command, Connector, List, ListItem, Part, Pipeline, RedirKind, Redirection, Word,
    is_valid_name,
};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::testing::{argv, argvs, kind, lookup, s, simple};
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
}
