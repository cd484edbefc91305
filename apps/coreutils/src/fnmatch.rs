//! Shell-style name patterns for `find -name` (XCU 2.13.1, `fnmatch`
//! without flags): `*`, `?`, bracket expressions `[a-z]`, `[!x]` (and
//! `[^x]`), classes `[:digit:]`, and `\` quoting the next character. A
//! leading `.` is not special, as in `find`.

/// Does `name` match `pattern`?
pub fn matches(pattern: &[u8], name: &[u8]) -> bool {
    // Iterative with one backtrack point per `*`: the last star's
    // position, enough for `*` (no nesting in these patterns).
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    star = Some((p, n));
                    p += 1;
                    continue;
                }
                b'?' => {
                    p += 1;
                    n += 1;
                    continue;
                }
                b'[' => {
                    if let Some((hit, next)) = bracket(pattern, p + 1, name[n]) {
                        if hit {
                            p = next;
                            n += 1;
                            continue;
                        }
                    } else if name[n] == b'[' {
                        p += 1;
                        n += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pattern.len() && pattern[p + 1] == name[n] => {
                    p += 2;
                    n += 1;
                    continue;
                }
                // A quoted character that differs: no match here.
                b'\\' if p + 1 < pattern.len() => {}
                c if c == name[n] => {
                    p += 1;
                    n += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, sn)) => {
                p = sp + 1;
                n = sn + 1;
                star = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Match `c` against the bracket expression starting after `[` at `i`:
/// whether it matched and the index after `]`, or `None` if there is no
/// closing `]` (the `[` is then an ordinary character).
fn bracket(p: &[u8], mut i: usize, c: u8) -> Option<(bool, usize)> {
    let negate = matches!(p.get(i), Some(b'!') | Some(b'^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    loop {
        let &b = p.get(i)?;
        if b == b']' && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        if b == b'[' && p.get(i + 1) == Some(&b':') {
            let end = (i + 2..p.len().saturating_sub(1)).find(|&j| p[j] == b':' && p[j + 1] == b']')?;
            let test: fn(&u8) -> bool = match &p[i + 2..end] {
                b"alpha" => u8::is_ascii_alphabetic,
                b"digit" => u8::is_ascii_digit,
                b"alnum" => u8::is_ascii_alphanumeric,
                b"upper" => u8::is_ascii_uppercase,
                b"lower" => u8::is_ascii_lowercase,
                b"space" => u8::is_ascii_whitespace,
                b"punct" => u8::is_ascii_punctuation,
                b"xdigit" => u8::is_ascii_hexdigit,
                _ => |_| false,
            };
            hit |= test(&c);
            i = end + 2;
            continue;
        }
        let (lo, next) = if b == b'\\' && i + 1 < p.len() { (p[i + 1], i + 2) } else { (b, i + 1) };
        i = next;
        if p.get(i) == Some(&b'-') && p.get(i + 1).is_some_and(|&h| h != b']') {
            let hi = p[i + 1];
            i += 2;
            hit |= lo <= c && c <= hi;
        } else {
            hit |= lo == c;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn patterns() {
        let m = |p: &str, n: &str| matches(p.as_bytes(), n.as_bytes());
        assert!(m("*.txt", "a.txt") && m("*.txt", ".txt") && !m("*.txt", "a.txt.bak"));
        assert!(m("a?c", "abc") && !m("a?c", "ac"));
        assert!(m("*", "") && m("*", ".hidden") && m("**a*", "xxa"));
        assert!(m("[a-c]x", "bx") && !m("[a-c]x", "dx") && m("[!a-c]x", "dx") && m("[^a]", "b"));
        assert!(m("[]]", "]") && m("[[:digit:]]*", "1ab") && !m("[[:digit:]]", "a"));
        assert!(m("\\*", "*") && !m("\\*", "a") && m("[", "[") && m("a*b*c", "aXbYbZc"));
        assert!(!m("a*b", "aXbY") && !m("", "a") && m("", ""));
    }
}
