//! Pattern matching notation (XCU 2.13): `*`, `?`, bracket expressions
//! `[…]` (with `!` or `^` negation, `a-z` ranges and the character
//! classes `[:alpha:]` … of the POSIX locale), and `\` quoting a
//! character. Used by `case`, `${x%p}`/`${x#p}` and pathname expansion.
//!
//! What it is not: a regular expression engine, nor locale-aware
//! (collating symbols `[.x.]` and equivalence classes `[=x=]` are not
//! recognised; the classes are ASCII's).
//!
//! The expander writes quoted characters of a word with a `\` in front, so
//! that `"*"` matches only a star; [`has_magic`] says whether any
//! unquoted special character remains.

use alloc::vec::Vec;

/// Does `text` match all of `pattern`?
pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    match_at(&p, &t)
}

fn match_at(p: &[char], t: &[char]) -> bool {
    // Iterative with one backtrack point for the last `*` (the classic
    // glob algorithm: linear in practice, never exponential).
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        let step = if pi < p.len() { single(p, pi, t[ti]) } else { None };
        match step {
            Some(Step::Star) => {
                star = Some((pi + 1, ti));
                pi += 1;
                continue;
            }
            Some(Step::Matched(next)) => {
                pi = next;
                ti += 1;
                continue;
            }
            Some(Step::Failed) | None => {}
        }
        match star {
            Some((sp, st)) => {
                pi = sp;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

enum Step {
    Star,
    /// Matched one character; the pattern continues at the index.
    Matched(usize),
    Failed,
}

fn single(p: &[char], pi: usize, c: char) -> Option<Step> {
    Some(match p[pi] {
        '*' => Step::Star,
        '?' => Step::Matched(pi + 1),
        '\\' if pi + 1 < p.len() => {
            if p[pi + 1] == c {
                Step::Matched(pi + 2)
            } else {
                Step::Failed
            }
        }
        '[' => match bracket(p, pi, c) {
            Some((true, next)) => Step::Matched(next),
            Some((false, _)) => Step::Failed,
            // No closing `]`: the `[` is an ordinary character.
            None if c == '[' => Step::Matched(pi + 1),
            None => Step::Failed,
        },
        pc if pc == c => Step::Matched(pi + 1),
        _ => Step::Failed,
    })
}

/// The bracket expression at `p[pi]` (`[`) against `c`: whether it
/// matches and the index after `]`, or `None` if there is no `]`.
fn bracket(p: &[char], pi: usize, c: char) -> Option<(bool, usize)> {
    let mut i = pi + 1;
    let negate = matches!(p.get(i), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let mut lo = *p.get(i)?;
        if lo == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        if lo == '[' && p.get(i + 1) == Some(&':') {
            // `[:name:]`: a character class (an unknown name matches
            // nothing, as dash).
            let rest: alloc::string::String = p[i + 2..].iter().collect();
            if let Some(end) = rest.find(":]") {
                let name = &rest[..end];
                matched |= in_class(name, c);
                i += 2 + name.chars().count() + 2;
                continue;
            }
        }
        if lo == '\\' {
            i += 1;
            lo = *p.get(i)?;
        }
        i += 1;
        if p.get(i) == Some(&'-') && p.get(i + 1).is_some_and(|&h| h != ']') {
            let mut hi = p[i + 1];
            i += 2;
            if hi == '\\' {
                hi = *p.get(i)?;
                i += 1;
            }
            matched |= lo <= c && c <= hi;
        } else {
            matched |= lo == c;
        }
    }
}

/// Is `c` in the POSIX locale's class `name`?
fn in_class(name: &str, c: char) -> bool {
    match name {
        "alpha" => c.is_ascii_alphabetic(),
        "digit" => c.is_ascii_digit(),
        "alnum" => c.is_ascii_alphanumeric(),
        "upper" => c.is_ascii_uppercase(),
        "lower" => c.is_ascii_lowercase(),
        "space" => matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'),
        "blank" => c == ' ' || c == '\t',
        "punct" => c.is_ascii_punctuation(),
        "print" => c.is_ascii_graphic() || c == ' ',
        "graph" => c.is_ascii_graphic(),
        "cntrl" => c.is_ascii_control(),
        "xdigit" => c.is_ascii_hexdigit(),
        _ => false,
    }
}

/// Does the pattern hold an unquoted `*`, `?` or `[`?
pub fn has_magic(pattern: &str) -> bool {
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

/// The pattern's text with its `\` quoting removed.
pub fn unescape(pattern: &str) -> alloc::string::String {
    let mut out = alloc::string::String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_and_questions() {
        assert!(matches("*", ""));
        assert!(matches("*", "abc"));
        assert!(matches("a*c", "abbbc"));
        assert!(!matches("a*c", "abbb"));
        assert!(matches("?b?", "abc"));
        assert!(!matches("?", ""));
        assert!(matches("*.txt", "x.txt"));
        assert!(!matches("*.txt", "x.txt.bak"));
        assert!(matches("a**b*", "ab"));
    }

    #[test]
    fn brackets() {
        assert!(matches("[abc]", "b"));
        assert!(!matches("[abc]", "d"));
        assert!(matches("[a-c]x", "cx"));
        assert!(matches("[!a-c]", "d"));
        assert!(!matches("[^a-c]", "a"));
        assert!(matches("[]]", "]"));
        assert!(matches("[a-]", "-"));
        assert!(matches("[", "["));
        assert!(matches("x[", "x["));
    }

    #[test]
    fn escapes() {
        assert!(matches("\\*", "*"));
        assert!(!matches("\\*", "a"));
        assert!(matches("a\\?", "a?"));
        assert!(has_magic("a*"));
        assert!(!has_magic("a\\*"));
        assert_eq!(unescape("a\\*b"), "a*b");
    }
}
