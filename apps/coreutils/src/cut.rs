//! cut's lists and selection (POSIX `cut`): `-b`/`-c LIST` (the same in
//! the C locale) and `-f LIST` with `-d C` and `-s`. A LIST is ranges
//! `N`, `N-M`, `N-`, `-M` separated by commas; what is selected comes out
//! in the line's order, each position once, whatever the list's order.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Ranges of 1-based positions, inclusive; `usize::MAX`: to the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct List(Vec<(usize, usize)>);

impl List {
    pub fn parse(spec: &str) -> Result<List, String> {
        let mut out = Vec::new();
        for part in spec.split([',', ' ']) {
            let num = |s: &str| -> Result<usize, String> {
                s.parse::<usize>().map_err(|_| format!("invalid field value '{s}'"))
            };
            let (lo, hi) = match part.split_once('-') {
                None => {
                    let n = num(part)?;
                    (n, n)
                }
                Some(("", "")) => return Err("invalid range with no endpoint: -".into()),
                Some(("", hi)) => (1, num(hi)?),
                Some((lo, "")) => (num(lo)?, usize::MAX),
                Some((lo, hi)) => (num(lo)?, num(hi)?),
            };
            if lo == 0 {
                return Err("fields and positions are numbered from 1".into());
            }
            if hi < lo {
                return Err("invalid decreasing range".into());
            }
            out.push((lo, hi));
        }
        Ok(List(out))
    }

    pub fn contains(&self, n: usize) -> bool {
        self.0.iter().any(|&(lo, hi)| lo <= n && n <= hi)
    }
}

/// The selected bytes of `line` (without its newline).
pub fn bytes(line: &[u8], list: &List, out: &mut Vec<u8>) {
    for (i, &b) in line.iter().enumerate() {
        if list.contains(i + 1) {
            out.push(b);
        }
    }
}

/// The selected fields of `line` joined by `delim`; `None` when the line
/// has no delimiter (printed whole, or not at all with `-s`).
pub fn fields(line: &[u8], list: &List, delim: u8, out: &mut Vec<u8>) -> Option<()> {
    if !line.contains(&delim) {
        return None;
    }
    let mut first = true;
    for (i, f) in line.split(|&b| b == delim).enumerate() {
        if list.contains(i + 1) {
            if !first {
                out.push(delim);
            }
            out.extend_from_slice(f);
            first = false;
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(line: &str, list: &str, d: u8) -> Option<String> {
        let mut out = Vec::new();
        fields(line.as_bytes(), &List::parse(list).unwrap(), d, &mut out)?;
        Some(String::from_utf8(out).unwrap())
    }

    #[test]
    fn lists() {
        let l = List::parse("1,3-4,6-").unwrap();
        assert!(l.contains(1) && !l.contains(2) && l.contains(4) && !l.contains(5) && l.contains(99));
        assert!(List::parse("-2").unwrap().contains(1));
        for bad in ["0", "", "a", "3-1", "-", "1,,2"] {
            assert!(List::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn selection() {
        assert_eq!(f("a:b:c:d", "2,4", b':'), Some("b:d".into()));
        assert_eq!(f("a:b:c:d", "4,2", b':'), Some("b:d".into()));
        assert_eq!(f("a:b", "3", b':'), Some("".into()));
        assert_eq!(f("ab", "1", b':'), None);
        assert_eq!(f("a\tb", "2-", b'\t'), Some("b".into()));
        let mut out = Vec::new();
        bytes(b"hello", &List::parse("2-3,5").unwrap(), &mut out);
        assert_eq!(out, b"elo");
    }
}
