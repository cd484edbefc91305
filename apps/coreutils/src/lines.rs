//! head's and tail's counts and cuts (POSIX `head`/`tail`, GNU's
//! extensions): `-n N` / `-c N`, `-n -N` (all but the last N, head),
//! `-n +N` (from the Nth on, tail), and GNU's size suffixes (`b` = 512,
//! `k`/`K` = 1024, `m`/`M` = 1024², `kB` = 1000, `MB` = 1000²).

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// A count with the sign it was written with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    pub n: u64,
    /// Written with a leading `+`.
    pub plus: bool,
    /// Written with a leading `-`.
    pub minus: bool,
}

/// What `head` or `tail` was asked, from its options (`-n N`, `-c N`,
/// `-q`, `-v`; the obsolete `-N` already rewritten as `-n N` by the caller,
/// since head and tail read it differently).
#[derive(Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// `-c`: bytes, not lines.
    pub bytes_mode: bool,
    pub count: Count,
    /// The operands, or `-` (standard input) when there are none.
    pub files: Vec<&'a str>,
    /// `==> name <==` before each file.
    pub headers: bool,
}

/// Parse head's or tail's options; the error is GNU's wording after
/// `prog: `. The last of `-n`/`-c` wins, as in GNU.
pub fn parse_request<'a>(ops: &[&'a str]) -> Result<Request<'a>, String> {
    let p = crate::getopt::parse(ops, "n:c:qv", true)?;
    let mut bytes_mode = false;
    let mut count = Count { n: 10, plus: false, minus: false };
    for &(c, v) in &p.opts {
        if c == 'n' || c == 'c' {
            count = parse_count(v.unwrap_or(""), if c == 'n' { "lines" } else { "bytes" })?;
            bytes_mode = c == 'c';
        }
    }
    let files = if p.operands.is_empty() { vec!["-"] } else { p.operands.clone() };
    let headers = p.has('v') || (files.len() > 1 && !p.has('q'));
    Ok(Request { bytes_mode, count, files, headers })
}

/// Parse a count; the error is GNU's wording after `prog: `.
pub fn parse_count(s: &str, what: &str) -> Result<Count, String> {
    let invalid = || format!("invalid number of {what}: '{s}'");
    let (plus, minus, body) = match s.as_bytes().first() {
        Some(b'+') => (true, false, &s[1..]),
        Some(b'-') => (false, true, &s[1..]),
        _ => (false, false, s),
    };
    let digits_end = body.find(|c: char| !c.is_ascii_digit()).unwrap_or(body.len());
    if digits_end == 0 {
        return Err(invalid());
    }
    let n: u64 = body[..digits_end].parse().map_err(|_| invalid())?;
    let unit: u64 = match &body[digits_end..] {
        "" => 1,
        "b" => 512,
        "k" | "K" | "KiB" => 1024,
        "kB" | "KB" => 1000,
        "m" | "M" | "MiB" => 1 << 20,
        "MB" => 1_000_000,
        "g" | "G" | "GiB" => 1 << 30,
        "GB" => 1_000_000_000,
        _ => return Err(invalid()),
    };
    Ok(Count { n: n.checked_mul(unit).ok_or_else(invalid)?, plus, minus })
}

/// Byte offset where the first `n` lines of `input` end.
pub fn after_lines(input: &[u8], n: u64) -> usize {
    if n == 0 {
        return 0;
    }
    let mut seen = 0;
    for (i, &b) in input.iter().enumerate() {
        if b == b'\n' {
            seen += 1;
            if seen == n {
                return i + 1;
            }
        }
    }
    input.len()
}

/// Byte offset where the last `n` lines of `input` start (a last line
/// without a newline counts as a line).
pub fn last_lines(input: &[u8], n: u64) -> usize {
    if n == 0 {
        return input.len();
    }
    let mut end = input.len();
    if input.last() == Some(&b'\n') {
        end -= 1;
    }
    let mut seen = 0;
    for i in (0..end).rev() {
        if input[i] == b'\n' {
            seen += 1;
            if seen == n {
                return i + 1;
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    #[test]
    fn requests_of_head_and_tail() {
        let r = super::parse_request(&["-c", "5", "-n", "3", "a", "b"]).unwrap();
        assert!(!r.bytes_mode && r.count.n == 3 && r.files == ["a", "b"] && r.headers);
        let r = super::parse_request(&["-q", "-c", "2k", "a", "b"]).unwrap();
        assert!(r.bytes_mode && r.count.n == 2048 && !r.headers);
        let r = super::parse_request(&["-v"]).unwrap();
        assert!(r.files == ["-"] && r.headers && r.count.n == 10);
        assert!(super::parse_request(&["-n", "x"]).is_err());
        assert!(super::parse_request(&["-z"]).is_err());
    }

    use super::*;

    #[test]
    fn counts() {
        assert_eq!(parse_count("10", "lines"), Ok(Count { n: 10, plus: false, minus: false }));
        assert_eq!(parse_count("+3", "lines").map(|c| (c.n, c.plus)), Ok((3, true)));
        assert_eq!(parse_count("-2", "lines").map(|c| (c.n, c.minus)), Ok((2, true)));
        assert_eq!(parse_count("2k", "bytes").map(|c| c.n), Ok(2048));
        assert_eq!(parse_count("1b", "bytes").map(|c| c.n), Ok(512));
        for bad in ["", "x", "-", "1x", "1.5", "99999999999999999999"] {
            assert!(parse_count(bad, "lines").is_err(), "{bad}");
        }
        assert_eq!(parse_count("x", "lines"), Err("invalid number of lines: 'x'".into()));
    }

    #[test]
    fn cuts() {
        let t = b"a\nb\nc\n";
        assert_eq!(after_lines(t, 0), 0);
        assert_eq!(after_lines(t, 2), 4);
        assert_eq!(after_lines(t, 9), 6);
        assert_eq!(last_lines(t, 1), 4);
        assert_eq!(last_lines(t, 3), 0);
        assert_eq!(last_lines(t, 0), 6);
        assert_eq!(last_lines(b"a\nb", 1), 2);
        assert_eq!(last_lines(b"", 2), 0);
    }
}
