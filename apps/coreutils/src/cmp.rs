//! `cmp`'s pure half: comparing two byte streams chunk by chunk, and the
//! messages GNU cmp (diffutils 3.8) prints about the outcome. Tested on
//! the host; the program is `src/bin/cmp.rs`.
//!
//! The streams arrive as pairs of chunks of one requested length; a chunk
//! shorter than requested means its stream has ended (the program reads
//! until a chunk is full or the file ends).

use alloc::format;
use alloc::string::String;

/// Which of the two files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    First,
    Second,
}

/// Where a comparison stands after a pair of chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The same so far; both streams go on.
    Same,
    /// Both ended together with the same bytes.
    Identical,
    /// The first difference: byte `byte` (counted from 1) on line `line`.
    Differ { byte: u64, line: u64 },
    /// `side` ended first, after `bytes` bytes equal in both.
    Eof { side: Side, bytes: u64, line: EofLine },
}

/// The line GNU cmp names when one file is a prefix of the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EofLine {
    /// The shorter file is empty.
    Empty,
    /// It ends with a newline: its last line is complete.
    After(u64),
    /// It ends in the middle of this line.
    In(u64),
}

/// The running comparison.
#[derive(Clone, Copy, Debug, Default)]
pub struct Comparison {
    /// Bytes found equal so far.
    bytes: u64,
    /// Newlines among them.
    newlines: u64,
    /// Whether the last of them was a newline.
    ends_with_newline: bool,
}

impl Comparison {
    /// Compares the next chunks of both streams; `requested` is the
    /// length asked of each (a shorter chunk means that stream ended).
    pub fn step(&mut self, first: &[u8], second: &[u8], requested: usize) -> Outcome {
        let common = first.len().min(second.len());
        if let Some(at) = first[..common].iter().zip(&second[..common]).position(|(a, b)| a != b) {
            let line = self.newlines + newlines(&first[..at]) + 1;
            return Outcome::Differ { byte: self.bytes + at as u64 + 1, line };
        }
        self.bytes += common as u64;
        self.newlines += newlines(&first[..common]);
        if common > 0 {
            self.ends_with_newline = first[common - 1] == b'\n';
        }
        let side = match first.len().cmp(&second.len()) {
            core::cmp::Ordering::Less => Side::First,
            core::cmp::Ordering::Greater => Side::Second,
            core::cmp::Ordering::Equal if common < requested => return Outcome::Identical,
            core::cmp::Ordering::Equal => return Outcome::Same,
        };
        let line = match (self.bytes, self.ends_with_newline) {
            (0, _) => EofLine::Empty,
            (_, true) => EofLine::After(self.newlines),
            (_, false) => EofLine::In(self.newlines + 1),
        };
        Outcome::Eof { side, bytes: self.bytes, line }
    }
}

fn newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

/// GNU cmp's line for a difference (on standard output).
pub fn differ_message(first: &str, second: &str, byte: u64, line: u64) -> String {
    format!("{first} {second} differ: byte {byte}, line {line}")
}

/// GNU cmp's line when `name` ended first (on standard error).
pub fn eof_message(name: &str, bytes: u64, line: EofLine) -> String {
    match line {
        EofLine::Empty => format!("cmp: EOF on {name} which is empty"),
        EofLine::After(line) => format!("cmp: EOF on {name} after byte {bytes}, line {line}"),
        EofLine::In(line) => format!("cmp: EOF on {name} after byte {bytes}, in line {line}"),
    }
}

/// `cmp -l`: one line per differing byte among `first` and `second`
/// (equally long pieces starting at byte `offset` counted from 0): its
/// number from 1 in `width` columns and both values in octal, as GNU cmp
/// prints them (`%*d %3o %3o`). Returns whether any differed.
pub fn list_differences(offset: u64, first: &[u8], second: &[u8], width: usize, out: &mut String) -> bool {
    let mut any = false;
    for (i, (a, b)) in first.iter().zip(second).enumerate() {
        if a != b {
            out.push_str(&format!("{:>width$} {a:>3o} {b:>3o}\n", offset + i as u64 + 1));
            any = true;
        }
    }
    any
}

/// The width of `-l`'s byte numbers: the digits of the smaller regular
/// file's size (GNU cmp's rule), 19 (the largest `off_t`) without one.
pub fn list_width(sizes: [Option<u64>; 2]) -> usize {
    let max = sizes.iter().flatten().min().copied().unwrap_or(i64::MAX as u64);
    let mut width = 1;
    let mut m = max / 10;
    while m != 0 {
        width += 1;
        m /= 10;
    }
    width
}

/// GNU cmp's end-of-file message under `-l` (no line number).
pub fn eof_message_bytes(name: &str, bytes: u64) -> String {
    if bytes == 0 {
        format!("cmp: EOF on {name} which is empty")
    } else {
        format!("cmp: EOF on {name} after byte {bytes}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    /// Compares two whole byte strings in chunks of `chunk` bytes, as the
    /// program does with files.
    fn compare(first: &[u8], second: &[u8], chunk: usize) -> Outcome {
        let mut comparison = Comparison::default();
        let (mut a, mut b) = (first, second);
        loop {
            let (take_a, take_b) = (a.len().min(chunk), b.len().min(chunk));
            let outcome = comparison.step(&a[..take_a], &b[..take_b], chunk);
            if outcome != Outcome::Same {
                return outcome;
            }
            (a, b) = (&a[take_a..], &b[take_b..]);
        }
    }

    #[test]
    fn outcomes_do_not_depend_on_the_chunk_length() {
        let long: Vec<u8> =
            (0..5000u32).map(|i| if i % 7 == 6 { b'\n' } else { b'a' + (i % 26) as u8 }).collect();
        let mut changed = long.clone();
        changed[3001] ^= 1;
        for chunk in [1, 3, 512, 4096, 8192] {
            assert_eq!(compare(&long, &long, chunk), Outcome::Identical, "chunk {chunk}");
            // 3001 bytes before it, 428 of them newlines (every 7th).
            assert_eq!(compare(&long, &changed, chunk), Outcome::Differ { byte: 3002, line: 429 });
            assert_eq!(
                compare(&long[..4000], &long, chunk),
                Outcome::Eof { side: Side::First, bytes: 4000, line: EofLine::In(572) }
            );
            assert_eq!(compare(b"", b"", chunk), Outcome::Identical);
        }
    }

    /// What GNU cmp 3.8 printed for these files.
    #[test]
    fn messages_read_like_gnu_cmp() {
        let message = |first: &[u8], second: &[u8]| match compare(first, second, 4096) {
            Outcome::Differ { byte, line } => differ_message("a", "b", byte, line),
            Outcome::Eof { side, bytes, line } => {
                eof_message(if side == Side::First { "a" } else { "b" }, bytes, line)
            }
            other => format!("{other:?}"),
        };
        assert_eq!(message(b"abc\nde", b"abX\nde"), "a b differ: byte 3, line 1");
        assert_eq!(message(b"a\nb\nc", b"a\nbX"), "a b differ: byte 4, line 2");
        assert_eq!(message(b"abc\nde", b"abc\n"), "cmp: EOF on b after byte 4, line 1");
        assert_eq!(message(b"a\nb\n", b"a\nb\nc"), "cmp: EOF on a after byte 4, line 2");
        assert_eq!(message(b"a\nb\nc", b"a\nb"), "cmp: EOF on b after byte 3, in line 2");
        assert_eq!(message(b"", b"abc"), "cmp: EOF on a which is empty");
        assert_eq!(message(b"same", b"same"), "Identical");
    }

    #[test]
    fn list_of_differences() {
        let mut out = String::new();
        assert!(list_differences(0, b"abc\n", b"aXc\n", 1, &mut out));
        assert!(list_differences(10, b"x", b"y", 2, &mut out));
        assert!(!list_differences(0, b"same", b"same", 1, &mut out));
        assert_eq!(out, "2 142 130\n11 170 171\n");
        assert_eq!(list_width([Some(4), Some(5)]), 1);
        assert_eq!(list_width([Some(12345), None]), 5);
        assert_eq!(list_width([None, None]), 19);
        assert_eq!(eof_message_bytes("x", 4), "cmp: EOF on x after byte 4");
        assert_eq!(eof_message_bytes("x", 0), "cmp: EOF on x which is empty");
    }
}
