//! head's and tail's counts and cuts (POSIX `head`/`tail`, GNU's
//! extensions): `-n N` / `-c N`, `-n -N` (all but the last N, head),
//! `-n +N` (from the Nth on, tail), and GNU's size suffixes (`b` = 512,
//! `k`/`K` = 1024, `m`/`M` = 1024², `kB` = 1000, `MB` = 1000²).

use alloc::format;
use alloc::string::String;

/// A count with the sign it was written with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    pub n: u64,
    /// Written with a leading `+`.
    pub plus: bool,
    /// Written with a leading `-`.
    pub minus: bool,
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
