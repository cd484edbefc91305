//! grep's patterns: POSIX basic (BRE) and extended (ERE) regular
//! expressions (XBD chapter 9) and fixed strings, translated to the syntax
//! of `regex-automata` (the `regex` crate's engine), which does the
//! matching. We translate rather than match: the engine is well kept and
//! fast, the translation is small and tested here.
//!
//! The translation follows XBD 9.3 (BRE) and 9.4 (ERE) plus GNU's BRE
//! extensions `\+ \? \|` and the escapes `\< \> \b \B \w \W \s \S`.
//! Bracket expressions (XBD 9.3.5) are parsed item by item, because
//! inside them `\` is an ordinary character in POSIX and `[`, `&`, `~`
//! and `-` mean something else to the engine.
//!
//! What it is not: a matcher of back-references (`\1`; the engine has
//! none, so a pattern with one is refused with a clear error, never run
//! wrongly), nor locale-aware: bytes, ASCII classes, ASCII case folding
//! (the C locale).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use regex_automata::meta::Regex;
use regex_automata::util::syntax;

/// Which pattern language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    Basic,
    Extended,
    Fixed,
}

/// Characters the engine's syntax gives a meaning; a literal one is
/// written with a backslash.
const ENGINE_META: &str = "\\.+*?()|[]{}^$#&-~";

fn push_literal(out: &mut String, c: char) {
    if ENGINE_META.contains(c) {
        out.push('\\');
    }
    out.push(c);
}

/// Translate one pattern (no newlines) to the engine's syntax.
pub fn translate(pattern: &str, syntax: Syntax) -> Result<String, String> {
    match syntax {
        Syntax::Fixed => {
            let mut out = String::new();
            for c in pattern.chars() {
                push_literal(&mut out, c);
            }
            Ok(out)
        }
        Syntax::Basic => translate_re(pattern, false),
        Syntax::Extended => translate_re(pattern, true),
    }
}

fn translate_re(p: &str, extended: bool) -> Result<String, String> {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::new();
    // At the start of the whole pattern, of a group or of an alternative:
    // where `*` is literal and a BRE `^` is an anchor.
    let mut at_start = true;
    let mut depth = 0usize;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        let was_start = at_start;
        at_start = false;
        match c {
            '\\' => {
                let Some(&e) = chars.get(i) else {
                    return Err("trailing backslash (\\)".into());
                };
                i += 1;
                match e {
                    '(' if !extended => {
                        out.push('(');
                        depth += 1;
                        at_start = true;
                    }
                    ')' if !extended => {
                        if depth == 0 {
                            return Err("Unmatched ) or \\)".into());
                        }
                        depth -= 1;
                        out.push(')');
                    }
                    '|' if !extended => {
                        out.push('|');
                        at_start = true;
                    }
                    '{' if !extended => {
                        if was_start {
                            return Err("Invalid preceding regular expression".into());
                        }
                        i = interval(&chars, i, true, &mut out)?;
                    }
                    '+' | '?' if !extended => {
                        if was_start {
                            push_literal(&mut out, e);
                        } else {
                            out.push(e);
                        }
                    }
                    '1'..='9' => return Err("back-references (\\1 to \\9) are not supported".into()),
                    '<' => out.push_str(r"\b{start}"),
                    '>' => out.push_str(r"\b{end}"),
                    'b' | 'B' | 'w' | 'W' | 's' | 'S' => {
                        out.push('\\');
                        out.push(e);
                    }
                    _ => push_literal(&mut out, e),
                }
            }
            '[' => i = bracket(&chars, i, &mut out)?,
            '.' => out.push('.'),
            '*' if was_start => push_literal(&mut out, '*'),
            '*' => out.push('*'),
            '^' if extended || was_start => {
                out.push('^');
                at_start = true;
            }
            '$' if extended => out.push('$'),
            '$' => {
                // A BRE `$` anchors only at the end of the pattern or of a
                // group or alternative.
                let rest = &chars[i..];
                let at_end =
                    rest.is_empty() || rest.starts_with(&['\\', ')']) || rest.starts_with(&['\\', '|']);
                if at_end { out.push('$') } else { push_literal(&mut out, '$') }
            }
            '(' if extended => {
                out.push('(');
                depth += 1;
                at_start = true;
            }
            ')' if extended => {
                if depth == 0 {
                    // XBD 9.4.3: a lone `)` is undefined; GNU takes it literally.
                    push_literal(&mut out, ')');
                } else {
                    depth -= 1;
                    out.push(')');
                }
            }
            '|' if extended => {
                out.push('|');
                at_start = true;
            }
            '+' | '?' if extended => {
                if was_start {
                    push_literal(&mut out, c);
                } else {
                    out.push(c);
                }
            }
            '{' if extended => {
                // GNU: a `{` that does not start a valid interval is an
                // ordinary character in an ERE.
                let mut body = String::new();
                match interval(&chars, i, false, &mut body) {
                    Ok(next) if !was_start => {
                        out.push_str(&body);
                        i = next;
                    }
                    _ => push_literal(&mut out, '{'),
                }
            }
            _ => push_literal(&mut out, c),
        }
    }
    if depth > 0 {
        return Err("Unmatched ( or \\(".into());
    }
    Ok(out)
}

/// An interval `{m}`, `{m,}`, `{m,n}` (`{,n}` as GNU: `{0,n}`) whose `{`
/// was just read; in a BRE it ends with `\}`. Returns the index after it.
fn interval(chars: &[char], mut i: usize, basic: bool, out: &mut String) -> Result<usize, String> {
    let mut body = String::new();
    loop {
        match chars.get(i) {
            Some('\\') if basic && chars.get(i + 1) == Some(&'}') => {
                i += 2;
                break;
            }
            Some('}') if !basic => {
                i += 1;
                break;
            }
            Some(&c) if c.is_ascii_digit() || c == ',' => {
                body.push(c);
                i += 1;
            }
            Some(_) => return Err("Invalid content of \\{\\}".into()),
            None => return Err("Unmatched \\{".into()),
        }
    }
    let (lo, hi) = match body.split_once(',') {
        Some((lo, hi)) => (lo, Some(hi)),
        None => (body.as_str(), None),
    };
    if hi.is_some_and(|h| h.contains(',')) || (lo.is_empty() && hi.is_none()) {
        return Err("Invalid content of \\{\\}".into());
    }
    let lo_n: u32 = if lo.is_empty() { 0 } else { lo.parse().map_err(|_| "Regular expression too big")? };
    if let Some(h) = hi.filter(|h| !h.is_empty()) {
        let hi_n: u32 = h.parse().map_err(|_| "Regular expression too big")?;
        if hi_n < lo_n {
            return Err("Invalid content of \\{\\}".into());
        }
    }
    match hi {
        None => out.push_str(&format!("{{{lo_n}}}")),
        Some("") => out.push_str(&format!("{{{lo_n},}}")),
        Some(h) => out.push_str(&format!("{{{lo_n},{h}}}")),
    }
    Ok(i)
}

/// A bracket expression whose `[` was just read (XBD 9.3.5): `]` first is
/// literal, `^` first negates, `[:class:]`, `[=c=]` and `[.c.]` items,
/// ranges `a-z`, `-` first or last literal, `\` literal. Returns the index
/// after the closing `]`.
fn bracket(chars: &[char], mut i: usize, out: &mut String) -> Result<usize, String> {
    out.push('[');
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    let mut first = true;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err("Unmatched [, [^, [:, [., or [=".into());
        };
        if c == ']' && !first {
            out.push(']');
            return Ok(i + 1);
        }
        first = false;
        // One item: a class, or a character (possibly a collating symbol
        // or equivalence class naming one), possibly starting a range.
        if c == '[' && chars.get(i + 1) == Some(&':') {
            let close = find_close(chars, i + 2, ':').ok_or("Unmatched [, [^, [:, [., or [=")?;
            let name: String = chars[i + 2..close].iter().collect();
            const CLASSES: [&str; 12] = [
                "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space",
                "upper", "xdigit",
            ];
            if !CLASSES.contains(&name.as_str()) {
                return Err("Invalid character class name".into());
            }
            out.push_str(&format!("[:{name}:]"));
            i = close + 2;
            continue;
        }
        let (lo, next) = bracket_char(chars, i)?;
        i = next;
        if chars.get(i) == Some(&'-') && chars.get(i + 1).is_some_and(|&n| n != ']') {
            let (hi, next) = bracket_char(chars, i + 1)?;
            if hi < lo {
                return Err("Invalid range end".into());
            }
            i = next;
            push_literal(out, lo);
            out.push('-');
            push_literal(out, hi);
        } else {
            push_literal(out, lo);
        }
    }
}

/// The character at `i` in a bracket expression (`[.c.]` and `[=c=]`
/// name one character) and the index after it.
fn bracket_char(chars: &[char], i: usize) -> Result<(char, usize), String> {
    let c = chars[i];
    if c == '[' && matches!(chars.get(i + 1), Some('.') | Some('=')) {
        let kind = chars[i + 1];
        let close = find_close(chars, i + 2, kind).ok_or("Unmatched [, [^, [:, [., or [=")?;
        if close != i + 3 {
            return Err("Invalid collation character".into());
        }
        return Ok((chars[i + 2], close + 2));
    }
    Ok((c, i + 1))
}

/// The index of `kind` followed by `]` at or after `from`.
fn find_close(chars: &[char], from: usize, kind: char) -> Option<usize> {
    (from..chars.len().saturating_sub(1)).find(|&j| chars[j] == kind && chars[j + 1] == ']')
}

/// What a grep selects lines with.
pub struct Matcher {
    regex: Regex,
    invert: bool,
}

/// How to build a [`Matcher`].
#[derive(Clone, Copy, Debug)]
pub struct MatchOptions {
    pub syntax: Syntax,
    pub ignore_case: bool,
    pub whole_line: bool,
    pub invert: bool,
}

impl Matcher {
    /// One matcher for all `patterns` (each `-e`, and each line of one,
    /// is a pattern of its own; a line matching any is selected).
    pub fn new(patterns: &[&str], o: MatchOptions) -> Result<Matcher, String> {
        let mut alternatives = Vec::new();
        for p in patterns {
            for line in p.split('\n') {
                let t = translate(line, o.syntax)?;
                alternatives.push(if o.whole_line { format!("^(?:{t})$") } else { format!("(?:{t})") });
            }
        }
        let config = syntax::Config::new().unicode(false).utf8(false).case_insensitive(o.ignore_case);
        let regex = Regex::builder()
            .syntax(config)
            .build_many(&alternatives)
            .map_err(|e| format!("invalid regular expression: {e}"))?;
        Ok(Matcher { regex, invert: o.invert })
    }

    /// Is `line` (without its newline) selected?
    pub fn selects(&self, line: &[u8]) -> bool {
        self.regex.is_match(line) != self.invert
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(patterns: &[&str], syntax: Syntax) -> Matcher {
        Matcher::new(patterns, MatchOptions { syntax, ignore_case: false, whole_line: false, invert: false })
            .unwrap()
    }

    #[test]
    fn bre_translation() {
        let t = |p| translate(p, Syntax::Basic).unwrap();
        assert_eq!(t("a.c"), "a.c");
        assert_eq!(t("a+b?c|d{1}(x)"), r"a\+b\?c\|d\{1\}\(x\)");
        assert_eq!(t(r"\(ab\)*"), "(ab)*");
        assert_eq!(t(r"a\{2,3\}"), "a{2,3}");
        assert_eq!(t(r"a\{2,\}"), "a{2,}");
        assert_eq!(t(r"a\+b\?c\|d"), "a+b?c|d");
        assert_eq!(t("*a"), r"\*a");
        assert_eq!(t("^*a"), r"^\*a");
        assert_eq!(t("a^b$c"), r"a\^b\$c");
        assert_eq!(t("^ab$"), "^ab$");
        assert_eq!(t(r"\(^a$\)"), "(^a$)");
        assert_eq!(t(r"\.\*\[\\"), r"\.\*\[\\");
        assert_eq!(t("a#b&c~d-e"), r"a\#b\&c\~d\-e");
        assert_eq!(t(r"\<x\>"), r"\b{start}x\b{end}");
    }

    #[test]
    fn ere_translation() {
        let t = |p| translate(p, Syntax::Extended).unwrap();
        assert_eq!(t("a+b?(c|d){2}"), "a+b?(c|d){2}");
        assert_eq!(t("x{,3}"), "x{0,3}");
        assert_eq!(t(r"\(\)"), r"\(\)");
        assert_eq!(t("a^b"), "a^b");
        assert_eq!(t("+a"), r"\+a");
        assert_eq!(t("a)"), r"a\)");
        assert_eq!(t("a{1"), r"a\{1");
        assert_eq!(t("a{x}"), r"a\{x\}");
    }

    #[test]
    fn brackets() {
        let t = |p| translate(p, Syntax::Basic).unwrap();
        assert_eq!(t("[abc]"), "[abc]");
        assert_eq!(t("[]a]"), r"[\]a]");
        assert_eq!(t("[^]a]"), r"[^\]a]");
        assert_eq!(t("[a-z0-9]"), "[a-z0-9]");
        assert_eq!(t("[-a]"), r"[\-a]");
        assert_eq!(t("[a-]"), r"[a\-]");
        assert_eq!(t(r"[\n]"), r"[\\n]");
        assert_eq!(t("[[:upper:][:digit:]_]"), "[[:upper:][:digit:]_]");
        assert_eq!(t("[[.a.]-[=c=]]"), "[a-c]");
        assert_eq!(t("[a[b&&c]"), r"[a\[b\&\&c]");
    }

    #[test]
    fn errors() {
        let e = |p, s| translate(p, s).unwrap_err();
        assert!(e(r"\(a", Syntax::Basic).contains("Unmatched"));
        assert!(e(r"a\)", Syntax::Basic).contains("Unmatched"));
        assert!(e("(a", Syntax::Extended).contains("Unmatched"));
        assert!(e("[a", Syntax::Basic).contains("Unmatched ["));
        assert!(e("[[:bogus:]]", Syntax::Basic).contains("class"));
        assert!(e("[z-a]", Syntax::Basic).contains("range"));
        assert!(e(r"\(a\)\1", Syntax::Basic).contains("back-references"));
        assert!(e("a\\", Syntax::Basic).contains("backslash"));
        assert!(e(r"a\{2", Syntax::Basic).contains("Unmatched"));
    }

    #[test]
    fn matching() {
        assert!(m(&["a.c"], Syntax::Basic).selects(b"xabcx"));
        assert!(!m(&["a.c"], Syntax::Fixed).selects(b"abc"));
        assert!(m(&["a.c"], Syntax::Fixed).selects(b"a.c"));
        assert!(m(&["^[0-9]\\{3\\}$"], Syntax::Basic).selects(b"123"));
        assert!(!m(&["^[0-9]\\{3\\}$"], Syntax::Basic).selects(b"1234"));
        assert!(m(&["ab|cd"], Syntax::Extended).selects(b"xcd"));
        assert!(!m(&["ab|cd"], Syntax::Basic).selects(b"xcd"));
        assert!(m(&["ab|cd"], Syntax::Basic).selects(b"ab|cd"));
        assert!(m(&["one", "two"], Syntax::Basic).selects(b"two"));
        assert!(m(&["one\ntwo"], Syntax::Basic).selects(b"two"));
        assert!(m(&[""], Syntax::Basic).selects(b"anything"));
        assert!(m(&["[[:upper:]]"], Syntax::Basic).selects(b"aBc"));
        assert!(m(&["\u{e9}"], Syntax::Basic).selects("caf\u{e9}".as_bytes()));
        assert!(m(&["caf."], Syntax::Basic).selects(b"caf\xff"));
        let o = MatchOptions { syntax: Syntax::Basic, ignore_case: true, whole_line: true, invert: true };
        let i = Matcher::new(&["abc"], o).unwrap();
        assert!(!i.selects(b"ABC") && i.selects(b"ABCD"));
    }
}
