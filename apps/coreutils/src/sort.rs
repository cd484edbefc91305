//! sort's keys and comparison (POSIX `sort`, XCU; GNU coreutils' rules
//! where POSIX leaves room): `-k F[.C][bfnr][,F[.C][bfnr]]`, `-t C`, the
//! global `-b -f -n -r`, `-u`, and the last-resort whole-line comparison.
//!
//! Fields: without `-t`, a field is a run of blanks and the non-blanks
//! after it (its leading blanks belong to it); with `-t C`, fields are
//! separated by `C`. A key runs from character C of field F (1-based) to
//! the end of its end field, or to its character C; `b` skips the
//! field's leading blanks first. Bytes compare as unsigned values (the C
//! locale).
//!
//! What it is not: locale-aware, and it has no `-M`, `-h`, `-g` or `-V`.

use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;

/// Ordering options of a key, or the global ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Order {
    pub skip_blanks: bool,
    pub fold_case: bool,
    pub numeric: bool,
    pub reverse: bool,
}

impl Order {
    fn is_default(&self) -> bool {
        *self == Order::default()
    }

    /// Apply option letter `c`; false if it is not one of ours.
    pub fn set(&mut self, c: char) -> bool {
        match c {
            'b' => self.skip_blanks = true,
            'f' => self.fold_case = true,
            'n' => self.numeric = true,
            'r' => self.reverse = true,
            _ => return false,
        }
        true
    }
}

/// One `-k` key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub start_field: usize,
    pub start_char: usize,
    /// 0: to the end of the line.
    pub end_field: usize,
    /// 0: to the end of the end field.
    pub end_char: usize,
    pub order: Order,
    /// `b` given on the end position.
    pub end_skip_blanks: bool,
}

fn position(s: &str, what: &str) -> Result<(usize, usize, String), String> {
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let field: usize = s[..digits_end]
        .parse()
        .map_err(|_| alloc::format!("invalid number at field start: invalid count at start of '{what}'"))?;
    let mut rest = &s[digits_end..];
    let mut ch = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        ch = r[..end]
            .parse()
            .map_err(|_| alloc::format!("invalid number after '.': invalid count at start of '{what}'"))?;
        rest = &r[end..];
    }
    Ok((field, ch, String::from(rest)))
}

impl Key {
    /// Parse a `-k` argument.
    pub fn parse(spec: &str) -> Result<Key, String> {
        let (start, end) = match spec.split_once(',') {
            Some((s, e)) => (s, Some(e)),
            None => (spec, None),
        };
        let (start_field, start_char, opts) = position(start, spec)?;
        if start_field == 0 {
            return Err(alloc::format!("invalid number at field start: invalid count at start of '{spec}'"));
        }
        if start_char == 0 && start.contains('.') {
            return Err(alloc::format!("character offset is zero: invalid field specification '{spec}'"));
        }
        let mut order = Order::default();
        for c in opts.chars() {
            if !order.set(c) {
                return Err(alloc::format!("invalid field specification '{spec}'"));
            }
        }
        let mut key = Key {
            start_field,
            start_char: start_char.max(1),
            end_field: 0,
            end_char: 0,
            order,
            end_skip_blanks: false,
        };
        if let Some(end) = end {
            let (f, c, opts) = position(end, spec)?;
            if f == 0 {
                return Err(alloc::format!("field number is zero: invalid field specification '{spec}'"));
            }
            key.end_field = f;
            key.end_char = c;
            for c in opts.chars() {
                if c == 'b' {
                    key.end_skip_blanks = true;
                }
                if !key.order.set(c) {
                    return Err(alloc::format!("invalid field specification '{spec}'"));
                }
            }
        }
        Ok(key)
    }
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Where each field starts and ends in `line` (byte offsets).
fn fields(line: &[u8], sep: Option<u8>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    match sep {
        Some(t) => {
            let mut start = 0;
            for (i, &b) in line.iter().enumerate() {
                if b == t {
                    out.push((start, i));
                    start = i + 1;
                }
            }
            out.push((start, line.len()));
        }
        None => {
            let mut i = 0;
            while i < line.len() {
                let start = i;
                while i < line.len() && is_blank(line[i]) {
                    i += 1;
                }
                while i < line.len() && !is_blank(line[i]) {
                    i += 1;
                }
                out.push((start, i));
            }
        }
    }
    out
}

fn skip_blanks(line: &[u8], mut at: usize, end: usize) -> usize {
    while at < end && is_blank(line[at]) {
        at += 1;
    }
    at
}

/// The bytes of `line` that `key` selects.
pub fn key_bytes<'a>(line: &'a [u8], key: &Key, sep: Option<u8>, global_blanks: bool) -> &'a [u8] {
    let f = fields(line, sep);
    let skip_start = key.order.skip_blanks || (global_blanks && key.order.is_default());
    let start = match f.get(key.start_field - 1) {
        None => line.len(),
        Some(&(s, e)) => {
            let s = if skip_start { skip_blanks(line, s, e) } else { s };
            (s + key.start_char - 1).min(e)
        }
    };
    let end = if key.end_field == 0 {
        line.len()
    } else {
        match f.get(key.end_field - 1) {
            None => line.len(),
            Some(&(s, e)) if key.end_char == 0 => {
                let _ = s;
                e
            }
            Some(&(s, e)) => {
                let skip_end = key.end_skip_blanks || (global_blanks && key.order.is_default());
                let s = if skip_end { skip_blanks(line, s, e) } else { s };
                (s + key.end_char).min(e)
            }
        }
    };
    if end <= start { &[] } else { &line[start..end] }
}

/// Compare two numbers as `-n` reads them: leading blanks, an optional
/// `-`, digits, an optional `.` and digits; anything else ends the
/// number, and no number is 0.
pub fn compare_numeric(a: &[u8], b: &[u8]) -> Ordering {
    fn parts(s: &[u8]) -> (bool, &[u8], &[u8]) {
        let mut i = skip_blanks(s, 0, s.len());
        let negative = s.get(i) == Some(&b'-');
        if negative {
            i += 1;
        }
        let int_start = i;
        while i < s.len() && s[i].is_ascii_digit() {
            i += 1;
        }
        let mut int = &s[int_start..i];
        while int.first() == Some(&b'0') {
            int = &int[1..];
        }
        let mut frac: &[u8] = &[];
        if s.get(i) == Some(&b'.') {
            let f = i + 1;
            let mut j = f;
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
            frac = &s[f..j];
            while frac.last() == Some(&b'0') {
                frac = &frac[..frac.len() - 1];
            }
        }
        let zero = int.is_empty() && frac.is_empty();
        (negative && !zero, int, frac)
    }
    let (na, ia, fa) = parts(a);
    let (nb, ib, fb) = parts(b);
    let magnitude = ia.len().cmp(&ib.len()).then_with(|| ia.cmp(ib)).then_with(|| fa.cmp(fb));
    match (na, nb) {
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
    }
}

fn compare_with(a: &[u8], b: &[u8], o: &Order) -> Ordering {
    let ord = if o.numeric {
        compare_numeric(a, b)
    } else if o.fold_case {
        a.iter().map(u8::to_ascii_uppercase).cmp(b.iter().map(u8::to_ascii_uppercase))
    } else {
        a.cmp(b)
    };
    if o.reverse { ord.reverse() } else { ord }
}

/// Everything a comparison needs.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    pub keys: Vec<Key>,
    pub global: Order,
    pub separator: Option<u8>,
    /// `-s`: no last-resort comparison (keep input order among equals).
    pub stable: bool,
    /// `-u`: equal keys are duplicates (and no last resort).
    pub unique: bool,
}

impl Spec {
    /// Compare by the keys (or the whole line with the global options
    /// when there are none); no last resort.
    pub fn compare_keys(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.keys.is_empty() {
            let (a, b) = if self.global.skip_blanks {
                (&a[skip_blanks(a, 0, a.len())..], &b[skip_blanks(b, 0, b.len())..])
            } else {
                (a, b)
            };
            return compare_with(a, b, &self.global);
        }
        for k in &self.keys {
            let order = if k.order.is_default() { self.global } else { k.order };
            let ka = key_bytes(a, k, self.separator, self.global.skip_blanks);
            let kb = key_bytes(b, k, self.separator, self.global.skip_blanks);
            let ord = compare_with(ka, kb, &order);
            if ord != Ordering::Equal {
                return ord;
            }
        }
        Ordering::Equal
    }

    /// The full comparison: keys, then (unless `-s` or `-u`) the whole
    /// lines as bytes, reversed by a global `-r`.
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let ord = self.compare_keys(a, b);
        if ord != Ordering::Equal || self.stable || self.unique {
            return ord;
        }
        let last = a.cmp(b);
        if self.global.reverse { last.reverse() } else { last }
    }

    /// Sort `lines` (without newlines), dropping duplicates with `-u`.
    pub fn sort(&self, lines: &mut Vec<&[u8]>) {
        lines.sort_by(|a, b| self.compare(a, b));
        if self.unique {
            lines.dedup_by(|b, a| self.compare_keys(a, b) == Ordering::Equal);
        }
    }
}

/// Split `input` into lines without their newlines (a last line without
/// one counts too).
pub fn split_lines(input: &[u8]) -> Vec<&[u8]> {
    let body = input.strip_suffix(b"\n").unwrap_or(input);
    if input.is_empty() {
        return Vec::new();
    }
    body.split(|&b| b == b'\n').collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn sorted(spec: &Spec, text: &str) -> String {
        let mut lines = split_lines(text.as_bytes());
        spec.sort(&mut lines);
        let mut out = String::new();
        for l in lines {
            out.push_str(core::str::from_utf8(l).unwrap());
            out.push('\n');
        }
        out
    }

    #[test]
    fn keys_parse() {
        let k = Key::parse("2,3").unwrap();
        assert_eq!((k.start_field, k.start_char, k.end_field, k.end_char), (2, 1, 3, 0));
        let k = Key::parse("1.2n,1.4r").unwrap();
        assert_eq!((k.start_field, k.start_char, k.end_field, k.end_char), (1, 2, 1, 4));
        assert!(k.order.numeric && k.order.reverse);
        assert!(Key::parse("0").is_err());
        assert!(Key::parse("1.0").is_err());
        assert!(Key::parse("x").is_err());
        assert!(Key::parse("1z").is_err());
        assert!(Key::parse("1,0").is_err());
    }

    #[test]
    fn field_selection() {
        let k = |s| Key::parse(s).unwrap();
        let line = b"  one two\tthree";
        assert_eq!(key_bytes(line, &k("2"), None, false), b" two\tthree");
        assert_eq!(key_bytes(line, &k("2,2"), None, false), b" two");
        assert_eq!(key_bytes(line, &k("2b,2"), None, false), b"two");
        assert_eq!(key_bytes(line, &k("1.3,1.5"), None, false), b"one");
        assert_eq!(key_bytes(line, &k("9"), None, false), b"");
        assert_eq!(key_bytes(b"a:b:c", &k("2,2"), Some(b':'), false), b"b");
        assert_eq!(key_bytes(b"a::c", &k("2,2"), Some(b':'), false), b"");
        assert_eq!(key_bytes(b"a:b:c", &k("2"), Some(b':'), false), b"b:c");
    }

    #[test]
    fn numbers() {
        use Ordering::*;
        assert_eq!(compare_numeric(b"10", b"9"), Greater);
        assert_eq!(compare_numeric(b"-10", b"-9"), Less);
        assert_eq!(compare_numeric(b"  3.50", b"3.5"), Equal);
        assert_eq!(compare_numeric(b"-0", b"0"), Equal);
        assert_eq!(compare_numeric(b"abc", b"0"), Equal);
        assert_eq!(compare_numeric(b"007", b"7x"), Equal);
        assert_eq!(compare_numeric(b"-1", b"x"), Less);
        assert_eq!(compare_numeric(b".5", b"0.4"), Greater);
    }

    #[test]
    fn whole_sorts() {
        let plain = Spec::default();
        assert_eq!(sorted(&plain, "b\na\nB\n\nc"), "\nB\na\nb\nc\n");
        let numeric = Spec { global: Order { numeric: true, ..Order::default() }, ..Spec::default() };
        assert_eq!(sorted(&numeric, "10\n9\n-1\nx\n010\n"), "-1\nx\n9\n010\n10\n");
        let unique = Spec { unique: true, ..numeric.clone() };
        assert_eq!(sorted(&unique, "10\n9\n010\n"), "9\n10\n");
        let reverse = Spec { global: Order { reverse: true, ..Order::default() }, ..Spec::default() };
        assert_eq!(sorted(&reverse, "a\nc\nb\n"), "c\nb\na\n");
        let by_second =
            Spec { keys: vec![Key::parse("2n,2").unwrap()], separator: Some(b':'), ..Spec::default() };
        assert_eq!(sorted(&by_second, "x:10\ny:2\na:2\n"), "a:2\ny:2\nx:10\n");
        let fold = Spec { global: Order { fold_case: true, ..Order::default() }, ..Spec::default() };
        assert_eq!(sorted(&fold, "b\nA\na\nB\n"), "A\na\nB\nb\n");
        assert!(split_lines(b"").is_empty());
        assert_eq!(split_lines(b"\n"), vec![&b""[..]]);
    }
}
