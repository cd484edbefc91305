//! tr's sets and translation (POSIX `tr`, GNU's rules where POSIX leaves
//! room): characters, escapes (`\n`, `\t`, `\\`, `\NNN` octal), ranges
//! `a-z`, classes `[:upper:]`, repeats `[c*n]` and `[c*]` (SET2 only),
//! equivalence classes `[=c=]`; `-c` complement, `-d` delete, `-s`
//! squeeze. SET2 shorter than SET1 is padded with its last character, as
//! GNU (and BSD) do. Bytes, the C locale.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Item {
    Byte(u8),
    /// `[c*n]`; `None`: `[c*]`, as many as fill SET2 to SET1's length.
    Repeat(u8, Option<usize>),
}

fn class_bytes(name: &str) -> Option<Vec<u8>> {
    let test: fn(&u8) -> bool = match name {
        "alnum" => u8::is_ascii_alphanumeric,
        "alpha" => u8::is_ascii_alphabetic,
        "blank" => |b| *b == b' ' || *b == b'\t',
        "cntrl" => u8::is_ascii_control,
        "digit" => u8::is_ascii_digit,
        "graph" => u8::is_ascii_graphic,
        "lower" => u8::is_ascii_lowercase,
        "print" => |b| b.is_ascii_graphic() || *b == b' ',
        "punct" => u8::is_ascii_punctuation,
        "space" => |b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c),
        "upper" => u8::is_ascii_uppercase,
        "xdigit" => u8::is_ascii_hexdigit,
        _ => return None,
    };
    Some((0..=255u8).filter(test).collect())
}

/// One character of a set, with `\` escapes; the byte and the index after.
fn set_char(s: &[u8], i: usize) -> (u8, usize) {
    if s[i] != b'\\' || i + 1 >= s.len() {
        return (s[i], i + 1);
    }
    let e = s[i + 1];
    if (b'0'..=b'7').contains(&e) {
        let mut v: u32 = 0;
        let mut j = i + 1;
        while j < s.len()
            && j < i + 4
            && (b'0'..=b'7').contains(&s[j])
            && v * 8 + u32::from(s[j] - b'0') <= 255
        {
            v = v * 8 + u32::from(s[j] - b'0');
            j += 1;
        }
        return (v as u8, j);
    }
    let b = match e {
        b'n' => b'\n',
        b't' => b'\t',
        b'r' => b'\r',
        b'a' => 0x07,
        b'b' => 0x08,
        b'f' => 0x0c,
        b'v' => 0x0b,
        other => other,
    };
    (b, i + 2)
}

fn parse(set: &str, is_set2: bool) -> Result<Vec<Item>, String> {
    let s = set.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'['
            && s.get(i + 1) == Some(&b':')
            && let Some(end) = find(s, i + 2, b":]")
        {
            let name = core::str::from_utf8(&s[i + 2..end]).unwrap_or("");
            let bytes = class_bytes(name).ok_or_else(|| format!("invalid character class '{name}'"))?;
            if is_set2 && name != "upper" && name != "lower" {
                return Err("when translating, the only character classes that may appear in\nstring2 are 'upper' and 'lower'".into());
            }
            out.extend(bytes.into_iter().map(Item::Byte));
            i = end + 2;
            continue;
        }
        if s[i] == b'['
            && s.get(i + 1) == Some(&b'=')
            && s.get(i + 3) == Some(&b'=')
            && s.get(i + 4) == Some(&b']')
        {
            out.push(Item::Byte(s[i + 2]));
            i += 5;
            continue;
        }
        if s[i] == b'[' && i + 2 < s.len() {
            let (c, j) = set_char(s, i + 1);
            if s.get(j) == Some(&b'*')
                && let Some(end) = s[j + 1..].iter().position(|&b| b == b']')
            {
                let count = core::str::from_utf8(&s[j + 1..j + 1 + end]).unwrap_or("x");
                if !is_set2 {
                    return Err("the [c*] repeat construct may not appear in string1".into());
                }
                let n = if count.is_empty() {
                    None
                } else {
                    // A leading 0 means octal (POSIX).
                    let radix = if count.starts_with('0') { 8 } else { 10 };
                    let n = usize::from_str_radix(count, radix)
                        .map_err(|_| format!("invalid repeat count '{count}' in [c*n] construct"))?;
                    if n == 0 { None } else { Some(n) }
                };
                out.push(Item::Repeat(c, n));
                i = j + 2 + end;
                continue;
            }
        }
        let (lo, j) = set_char(s, i);
        if s.get(j) == Some(&b'-') && j + 1 < s.len() {
            let (hi, k) = set_char(s, j + 1);
            if hi < lo {
                return Err(format!(
                    "range-endpoints of '{}-{}' are in reverse collating sequence order",
                    lo as char, hi as char
                ));
            }
            out.extend((lo..=hi).map(Item::Byte));
            i = k;
            continue;
        }
        out.push(Item::Byte(lo));
        i = j;
    }
    Ok(out)
}

fn find(s: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    (from..s.len()).find(|&j| s[j..].starts_with(needle))
}

fn expand(items: &[Item], fill_to: usize) -> Vec<u8> {
    let fixed: usize = items
        .iter()
        .map(|i| match i {
            Item::Byte(_) => 1,
            Item::Repeat(_, Some(n)) => *n,
            Item::Repeat(_, None) => 0,
        })
        .sum();
    let mut out = Vec::new();
    for item in items {
        match *item {
            Item::Byte(b) => out.push(b),
            Item::Repeat(b, Some(n)) => out.extend(core::iter::repeat_n(b, n)),
            Item::Repeat(b, None) => out.extend(core::iter::repeat_n(b, fill_to.saturating_sub(fixed))),
        }
    }
    out
}

/// A parsed `tr` invocation.
pub struct Tr {
    /// Byte -> byte (translation; identity where nothing changes).
    map: [u8; 256],
    delete: [bool; 256],
    squeeze: [bool; 256],
    /// The last byte written, for squeezing across chunks.
    last: Option<u8>,
}

impl Tr {
    /// From the flags and operands. Errors are GNU's messages.
    pub fn new(complement: bool, delete: bool, squeeze: bool, sets: &[&str]) -> Result<Tr, String> {
        let need = if delete && squeeze {
            2
        } else if delete || (squeeze && sets.len() < 2) {
            1
        } else {
            2
        };
        if sets.is_empty() {
            return Err("missing operand".into());
        }
        if sets.len() < need {
            return Err(format!("missing operand after '{}'", sets[sets.len() - 1]));
        }
        if sets.len() > need {
            return Err(format!("extra operand '{}'", sets[need]));
        }
        let mut set1 = expand(&parse(sets[0], false)?, 0);
        if complement {
            let mut present = [false; 256];
            for &b in &set1 {
                present[usize::from(b)] = true;
            }
            set1 = (0..=255u8).filter(|&b| !present[usize::from(b)]).collect();
        }
        let set2 = match sets.get(1) {
            Some(s) => {
                let mut v = expand(&parse(s, true)?, set1.len());
                if !delete && !v.is_empty() && v.len() < set1.len() {
                    let last = v[v.len() - 1];
                    v.resize(set1.len(), last);
                }
                Some(v)
            }
            None => None,
        };
        let mut t = Tr { map: [0; 256], delete: [false; 256], squeeze: [false; 256], last: None };
        for (i, m) in t.map.iter_mut().enumerate() {
            *m = i as u8;
        }
        if delete {
            for &b in &set1 {
                t.delete[usize::from(b)] = true;
            }
        } else if let Some(s2) = &set2 {
            if s2.is_empty() && !set1.is_empty() {
                return Err("when not truncating set1, string2 must be non-empty".into());
            }
            for (i, &b) in set1.iter().enumerate() {
                t.map[usize::from(b)] = s2[i];
            }
        }
        if squeeze {
            let which = set2.as_ref().unwrap_or(&set1);
            for &b in which {
                t.squeeze[usize::from(b)] = true;
            }
        }
        Ok(t)
    }

    /// Translate `input`, appending to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &b in input {
            if self.delete[usize::from(b)] {
                continue;
            }
            let m = self.map[usize::from(b)];
            if self.squeeze[usize::from(m)] && self.last == Some(m) {
                continue;
            }
            self.last = Some(m);
            out.push(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tr(c: bool, d: bool, s: bool, sets: &[&str], input: &str) -> String {
        let mut t = Tr::new(c, d, s, sets).unwrap();
        let mut out = Vec::new();
        // Fed in two pieces: squeezing carries across.
        let (a, b) = input.split_at(input.len() / 2);
        t.feed(a.as_bytes(), &mut out);
        t.feed(b.as_bytes(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn translate() {
        assert_eq!(tr(false, false, false, &["a-z", "A-Z"], "hello, world"), "HELLO, WORLD");
        assert_eq!(tr(false, false, false, &["[:lower:]", "[:upper:]"], "abc"), "ABC");
        assert_eq!(tr(false, false, false, &["abc", "x"], "aabbcd"), "xxxxxd");
        assert_eq!(tr(false, false, false, &["a-c", "[x*]"], "abcd"), "xxxd");
        assert_eq!(tr(false, false, false, &["abcd", "[x*2]y"], "abcd"), "xxyy");
        assert_eq!(tr(false, false, false, &["\\n", " "], "a\nb\n"), "a b ");
        assert_eq!(tr(false, false, false, &["\\101", "b"], "AA"), "bb");
    }

    #[test]
    fn delete_squeeze_complement() {
        assert_eq!(tr(false, true, false, &["aeiou"], "education"), "dctn");
        assert_eq!(tr(false, false, true, &[" "], "a   b  c"), "a b c");
        assert_eq!(tr(false, false, true, &["a-z", "A-Z"], "aabbcc dd"), "ABC D");
        assert_eq!(tr(true, true, false, &["0-9\\n"], "a1b2\n"), "12\n");
        assert_eq!(tr(true, false, false, &["a-z", "_"], "ab-c d"), "ab_c_d");
        assert_eq!(tr(false, true, true, &["a", "b"], "abbba"), "b");
        assert_eq!(tr(true, false, true, &["[:alnum:]", "\\n"], "one, two;  three"), "one\ntwo\nthree");
    }

    #[test]
    fn errors() {
        assert!(Tr::new(false, false, false, &[]).is_err());
        assert!(Tr::new(false, false, false, &["a"]).is_err());
        assert!(Tr::new(false, true, false, &["a", "b"]).is_err());
        assert!(Tr::new(false, false, false, &["z-a", "b"]).is_err());
        assert!(Tr::new(false, false, false, &["[:bogus:]", "b"]).is_err());
        assert!(Tr::new(false, false, false, &["[a*]", "b"]).is_err());
        assert!(Tr::new(false, false, false, &["a", ""]).is_err());
    }
}
