//! xargs's reading of its input (POSIX `xargs`, XCU): arguments are
//! separated by blanks and newlines; `'…'` and `"…"` quote (not across a
//! newline) and `\` escapes the next character. With `-I`, each input
//! line is one argument (leading blanks dropped), as POSIX says.

use alloc::string::String;
use alloc::vec::Vec;

/// The arguments in `input`, or the error GNU reports.
pub fn split_args(input: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = input.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    out.push(core::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' | '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some('\n') | None => {
                            let kind = if c == '\'' { "single" } else { "double" };
                            return Err(alloc::format!(
                                "unmatched {kind} quote; by default quotes are special to xargs unless you use the -0 option"
                            ));
                        }
                        Some(other) => cur.push(other),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            other => {
                in_word = true;
                cur.push(other);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// `-I`: one argument per non-empty line, leading blanks dropped.
pub fn split_lines(input: &str) -> Vec<String> {
    input
        .lines()
        .map(|l| l.trim_start_matches([' ', '\t']))
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// The command `-I REPLACE` runs for `arg`: every occurrence of `replace`
/// in each initial argument replaced.
pub fn substitute(template: &[&str], replace: &str, arg: &str) -> Vec<String> {
    template.iter().map(|t| t.replace(replace, arg)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn splitting() {
        assert_eq!(split_args("a b\n\tc  ").unwrap(), vec!["a", "b", "c"]);
        assert_eq!(split_args("'a b' \"c d\"e f\\ g ''").unwrap(), vec!["a b", "c de", "f g", ""]);
        assert!(split_args("'open").is_err());
        assert!(split_args("\"a\nb\"").is_err());
        assert!(split_args("").unwrap().is_empty());
        assert_eq!(split_lines("  one two\n\nthree\n"), vec!["one two", "three"]);
        assert_eq!(substitute(&["cp", "{}", "{}.bak"], "{}", "f"), vec!["cp", "f", "f.bak"]);
    }
}
