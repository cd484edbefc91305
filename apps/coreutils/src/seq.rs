//! seq's numbers (GNU `seq`): FIRST, INCREMENT and LAST as decimal
//! numbers, computed exactly in fixed point (no binary floating point, so
//! `seq 0 0.1 1` ends at 1.0), printed with as many decimals as FIRST and
//! INCREMENT have; `-w` pads with zeros to one width; `-s` separates.
//!
//! What it is not: `-f FORMAT`, exponents, `inf` or hexadecimal.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Most digits a number may have.
const MAX_DIGITS: usize = 18;

/// A decimal number as an integer scaled by `10^decimals`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decimal {
    pub scaled: i128,
    pub decimals: u32,
}

impl Decimal {
    pub fn parse(s: &str) -> Option<Decimal> {
        let body = s.strip_prefix('+').unwrap_or(s);
        let (negative, body) = match body.strip_prefix('-') {
            Some(b) => (true, b),
            None => (false, body),
        };
        let (int, frac) = body.split_once('.').unwrap_or((body, ""));
        if (int.is_empty() && frac.is_empty()) || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
        {
            return None;
        }
        // At most 18 digits, so every value rescaled to the longest
        // fraction (at most 10^36) and a step past LAST fit an i128.
        if int.len() + frac.len() > MAX_DIGITS {
            return None;
        }
        let mut scaled: i128 = 0;
        for b in int.bytes().chain(frac.bytes()) {
            scaled = scaled * 10 + i128::from(b - b'0');
        }
        Some(Decimal { scaled: if negative { -scaled } else { scaled }, decimals: frac.len() as u32 })
    }

    fn rescale(&self, decimals: u32) -> i128 {
        self.scaled * 10i128.pow(decimals - self.decimals)
    }
}

fn render(value: i128, scale: u32, decimals: u32) -> String {
    // `value` has `scale` decimals; print `decimals` of them.
    let v = value / 10i128.pow(scale - decimals);
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    if decimals == 0 {
        return format!("{sign}{a}");
    }
    let p = 10u128.pow(decimals);
    format!("{sign}{}.{:0width$}", a / p, a % p, width = decimals as usize)
}

/// The numbers from `first` by `incr` up to `last`, produced one at a
/// time (a long sequence is never held in memory).
#[derive(Clone, Debug)]
pub struct Sequence {
    next: i128,
    incr: i128,
    last: i128,
    scale: u32,
    shown: u32,
    /// With `-w`: the width every number is padded to.
    width: Option<usize>,
}

impl Sequence {
    /// Errors are GNU's messages; `incr` may not be zero.
    pub fn new(first: &str, incr: &str, last: &str, equal_width: bool) -> Result<Sequence, String> {
        let parse =
            |s: &str| Decimal::parse(s).ok_or_else(|| format!("invalid floating point argument: '{s}'"));
        let (f, i, l) = (parse(first)?, parse(incr)?, parse(last)?);
        if i.scaled == 0 {
            return Err(format!("invalid Zero increment value: '{incr}'"));
        }
        let scale = f.decimals.max(i.decimals).max(l.decimals);
        let shown = f.decimals.max(i.decimals);
        let (next, incr, last) = (f.rescale(scale), i.rescale(scale), l.rescale(scale));
        // GNU's width: the wider of FIRST and LAST as printed (LAST even
        // when the sequence stops short of it).
        let width =
            equal_width.then(|| render(next, scale, shown).len().max(render(last, scale, shown).len()));
        Ok(Sequence { next, incr, last, scale, shown, width })
    }
}

impl Iterator for Sequence {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        let v = self.next;
        if (self.incr > 0 && v > self.last) || (self.incr < 0 && v < self.last) {
            return None;
        }
        self.next = v + self.incr;
        let s = render(v, self.scale, self.shown);
        Some(match self.width {
            Some(width) if s.len() < width => {
                let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
                format!("{sign}{}{digits}", "0".repeat(width - s.len()))
            }
            _ => s,
        })
    }
}

/// The whole sequence (for tests and short runs).
pub fn sequence(first: &str, incr: &str, last: &str, equal_width: bool) -> Result<Vec<String>, String> {
    Ok(Sequence::new(first, incr, last, equal_width)?.collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn seq(f: &str, i: &str, l: &str, w: bool) -> Vec<String> {
        sequence(f, i, l, w).unwrap()
    }

    #[test]
    fn integers_and_decimals() {
        assert_eq!(seq("1", "1", "3", false), vec!["1", "2", "3"]);
        assert_eq!(seq("5", "-2", "0", false), vec!["5", "3", "1"]);
        assert_eq!(seq("3", "1", "1", false), Vec::<String>::new());
        assert_eq!(seq("0", "0.25", "1", false), vec!["0.00", "0.25", "0.50", "0.75", "1.00"]);
        assert_eq!(seq("1", "1", "2.5", false), vec!["1", "2"]);
        assert_eq!(seq("-1", "1", "1", false), vec!["-1", "0", "1"]);
        assert_eq!(seq("0", "0.1", "0.3", false), vec!["0.0", "0.1", "0.2", "0.3"]);
    }

    #[test]
    fn equal_width() {
        assert_eq!(seq("8", "1", "10", true), vec!["08", "09", "10"]);
        assert_eq!(seq("-1", "1", "1", true), vec!["-1", "00", "01"]);
        assert_eq!(seq("1", "1", "3", true), vec!["1", "2", "3"]);
    }

    #[test]
    fn errors() {
        assert!(sequence("1", "0", "3", false).unwrap_err().contains("Zero"));
        assert!(sequence("x", "1", "3", false).unwrap_err().contains("'x'"));
        assert!(sequence("1", "1", "", false).is_err());
        assert!(sequence(".", "1", "2", false).is_err());
        assert!(sequence("1", "1", "1234567890123456789", false).is_err());
        assert!(Sequence::new("0.00000000000000001", "1", "123456789012345678", false).is_ok());
        assert_eq!(Sequence::new("1", "1", "999999999999999999", false).unwrap().nth(2), Some("3".into()));
    }
}
