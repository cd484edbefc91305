//! Pure helpers of the utilities: no system calls, so they are tested on
//! the host.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::{ProcInfo, mode, signal};

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

/// Command-line flags and operands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options<'a> {
    flags: Vec<char>,
    pub operands: Vec<&'a str>,
}

impl<'a> Options<'a> {
    pub fn has(&self, flag: char) -> bool {
        self.flags.contains(&flag)
    }

    /// Parse `args` (without the program name). Single-letter flags may be
    /// grouped (`-la`) and come anywhere among the operands; `--` ends the
    /// flags; a lone `-` is an operand (standard input). Any letter not in
    /// `allowed` is returned as the error.
    pub fn parse(args: &[&'a str], allowed: &str) -> Result<Options<'a>, char> {
        let mut out = Options::default();
        let mut only_operands = false;
        for &arg in args {
            if only_operands || arg == "-" || !arg.starts_with('-') {
                out.operands.push(arg);
            } else if arg == "--" {
                only_operands = true;
            } else {
                for c in arg.chars().skip(1) {
                    if !allowed.contains(c) {
                        return Err(c);
                    }
                    if !out.flags.contains(&c) {
                        out.flags.push(c);
                    }
                }
            }
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------------------
// wc
// ---------------------------------------------------------------------------

/// Lines, words and bytes of a stream fed in chunks of any size (a word
/// split across two chunks counts once).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WordCount {
    pub lines: u64,
    pub words: u64,
    pub bytes: u64,
    in_word: bool,
}

impl WordCount {
    pub fn feed(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len() as u64;
        for &b in chunk {
            if b == b'\n' {
                self.lines += 1;
            }
            let space = matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
            if !space && !self.in_word {
                self.words += 1;
            }
            self.in_word = !space;
        }
    }

    pub fn add(&mut self, other: &WordCount) {
        self.lines += other.lines;
        self.words += other.words;
        self.bytes += other.bytes;
    }

    /// The selected counts, each right-aligned in 7 columns, then the name.
    pub fn format(&self, lines: bool, words: bool, bytes: bool, name: Option<&str>) -> String {
        let mut out = String::new();
        for (shown, n) in [(lines, self.lines), (words, self.words), (bytes, self.bytes)] {
            if shown {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(&format!("{n:>7}"));
            }
        }
        if let Some(name) = name {
            out.push(' ');
            out.push_str(name);
        }
        out
    }
}

// ---------------------------------------------------------------------------
// sleep
// ---------------------------------------------------------------------------

/// A `sleep` operand in ns: a decimal number of seconds (`1`, `0.5`,
/// `.25`) with an optional unit `s`, `m`, `h` or `d`. `None` if malformed
/// or too long to count in ns.
pub fn parse_duration_ns(s: &str) -> Option<u64> {
    let (number, unit_ns) = match s.as_bytes().last()? {
        b's' => (&s[..s.len() - 1], 1_000_000_000u64),
        b'm' => (&s[..s.len() - 1], 60_000_000_000),
        b'h' => (&s[..s.len() - 1], 3_600_000_000_000),
        b'd' => (&s[..s.len() - 1], 86_400_000_000_000),
        _ => (s, 1_000_000_000),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    if !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    let mut ns = whole.checked_mul(unit_ns)?;
    // Each fractional digit is worth a tenth of the one before; digits
    // past the ns resolution are dropped.
    let mut place = unit_ns;
    for d in fraction.bytes() {
        place /= 10;
        ns = ns.checked_add(u64::from(d - b'0') * place)?;
    }
    Some(ns)
}

// ---------------------------------------------------------------------------
// kill
// ---------------------------------------------------------------------------

/// A signal given as a number (`9`) or a name (`KILL`, `SIGKILL`, any
/// case). Numbers run from 0 (only checks the process exists) to
/// `signal::MAX`.
pub fn parse_signal(spec: &str) -> Option<u64> {
    if let Ok(n) = spec.parse::<u64>() {
        return (n <= signal::MAX).then_some(n);
    }
    let upper: String = spec.chars().map(|c| c.to_ascii_uppercase()).collect();
    signal::from_name(&upper)
}

// ---------------------------------------------------------------------------
// ls
// ---------------------------------------------------------------------------

/// What `ls -l` shows of one name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LongEntry {
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub size_bytes: u64,
    pub name: String,
}

/// `ls -l` lines, columns aligned across `entries`: mode, links, owner,
/// group, size, name (there is no calendar clock, so no date).
pub fn format_long(entries: &[LongEntry]) -> Vec<String> {
    let width = |f: &dyn Fn(&LongEntry) -> String| entries.iter().map(|e| f(e).len()).max().unwrap_or(0);
    let links_w = width(&|e| format!("{}", e.nlink));
    let uid_w = width(&|e| format!("{}", e.uid));
    let gid_w = width(&|e| format!("{}", e.gid));
    let size_w = width(&|e| format!("{}", e.size_bytes));
    entries
        .iter()
        .map(|e| {
            let perms = mode::to_text(e.mode);
            let perms = core::str::from_utf8(&perms).unwrap_or("??????????");
            format!(
                "{perms} {:>links_w$} {:<uid_w$} {:<gid_w$} {:>size_w$} {}",
                e.nlink, e.uid, e.gid, e.size_bytes, e.name
            )
        })
        .collect()
}

/// Should `ls` show `name` (without `-a`, names starting with `.` are hidden)?
pub fn is_shown(name: &str, all: bool) -> bool {
    all || !name.starts_with('.')
}

// ---------------------------------------------------------------------------
// ps
// ---------------------------------------------------------------------------

/// The `ps` table: a header, then one line per process.
pub fn format_ps(procs: &[ProcInfo]) -> Vec<String> {
    let mut out = Vec::with_capacity(procs.len() + 1);
    out.push(format!("{:>5} {:>5} {:>5} {:>5} S {:>9} COMMAND", "PID", "PPID", "PGID", "UID", "TIME"));
    for p in procs {
        let state = if p.state.is_ascii_graphic() { p.state as char } else { '?' };
        out.push(format!(
            "{:>5} {:>5} {:>5} {:>5} {} {:>9} {}",
            p.pid,
            p.ppid,
            p.pgid,
            p.uid,
            state,
            format_cpu(p.cpu_ns),
            p.name()
        ));
    }
    out
}

/// CPU time as seconds with two decimals (`12.34`).
pub fn format_cpu(ns: u64) -> String {
    let cs = ns / 10_000_000;
    format!("{}.{:02}", cs / 100, cs % 100)
}

// ---------------------------------------------------------------------------
// Paths and bytes
// ---------------------------------------------------------------------------

/// `dir/name`, with exactly one `/` between them.
pub fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') { format!("{dir}{name}") } else { format!("{dir}/{name}") }
}

/// The last name of a path (`a/b/` → `b`, `/` → `/`).
pub fn base_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.is_empty() { "" } else { "/" };
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// The directory part of a path, by POSIX `dirname`'s steps: `a/b/` →
/// `a`, `/a` → `/`, `a` → `.`, `/` and `//` → `/`, `` → `.`.
pub fn dir_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.is_empty() { "." } else { "/" };
    }
    match trimmed.rfind('/') {
        None => ".",
        Some(i) => {
            let parent = trimmed[..i].trim_end_matches('/');
            if parent.is_empty() { "/" } else { parent }
        }
    }
}

/// Every ancestor of `path` and `path` itself, shortest first, for
/// `mkdir -p` (`a/b/c` → `a`, `a/b`, `a/b/c`; `/x/y` → `/x`, `/x/y`).
pub fn prefixes(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, c) in path.char_indices() {
        if c == '/' && i > 0 && !path[..i].ends_with('/') {
            out.push(&path[..i]);
        }
    }
    let whole = path.trim_end_matches('/');
    if !whole.is_empty() && out.last() != Some(&whole) {
        out.push(whole);
    }
    out
}

/// Lower-case hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn options() {
        let o = Options::parse(&["-la", "x", "-r", "y"], "lar").unwrap();
        assert!(o.has('l') && o.has('a') && o.has('r') && !o.has('f'));
        assert_eq!(o.operands, vec!["x", "y"]);
        let o = Options::parse(&["-", "--", "-l", "--"], "l").unwrap();
        assert!(!o.has('l'));
        assert_eq!(o.operands, vec!["-", "-l", "--"]);
        assert_eq!(Options::parse(&["-lz"], "l"), Err('z'));
        assert_eq!(Options::parse(&[], "l").unwrap().operands.len(), 0);
    }

    #[test]
    fn word_count_across_chunks() {
        let text = b"hello world\n  two  words\n\nlast";
        let mut whole = WordCount::default();
        whole.feed(text);
        assert_eq!((whole.lines, whole.words, whole.bytes), (3, 5, text.len() as u64));
        // Any split gives the same counts.
        for cut in 0..text.len() {
            let mut parts = WordCount::default();
            parts.feed(&text[..cut]);
            parts.feed(&text[cut..]);
            assert_eq!((parts.lines, parts.words, parts.bytes), (3, 5, text.len() as u64), "cut {cut}");
        }
        let mut empty = WordCount::default();
        empty.feed(b"");
        assert_eq!((empty.lines, empty.words, empty.bytes), (0, 0, 0));
        let mut total = WordCount::default();
        total.add(&whole);
        total.add(&whole);
        assert_eq!(total.words, 10);
    }

    #[test]
    fn word_count_format() {
        let mut c = WordCount::default();
        c.feed(b"a b\nc\n");
        assert_eq!(c.format(true, true, true, Some("f")), "      2       3       6 f");
        assert_eq!(c.format(true, false, false, None), "      2");
        assert_eq!(c.format(false, true, true, Some("-")), "      3       6 -");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("1"), Some(1_000_000_000));
        assert_eq!(parse_duration_ns("0.5"), Some(500_000_000));
        assert_eq!(parse_duration_ns(".25"), Some(250_000_000));
        assert_eq!(parse_duration_ns("2."), Some(2_000_000_000));
        assert_eq!(parse_duration_ns("1.5s"), Some(1_500_000_000));
        assert_eq!(parse_duration_ns("2m"), Some(120_000_000_000));
        assert_eq!(parse_duration_ns("0.5h"), Some(1_800_000_000_000));
        assert_eq!(parse_duration_ns("1d"), Some(86_400_000_000_000));
        assert_eq!(parse_duration_ns("0.0000000019"), Some(1));
        assert_eq!(parse_duration_ns("0"), Some(0));
        for bad in ["", ".", "s", "-1", "1x", "1.2.3", "a", "1 ", "99999999999999999999"] {
            assert_eq!(parse_duration_ns(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn signals() {
        assert_eq!(parse_signal("9"), Some(9));
        assert_eq!(parse_signal("0"), Some(0));
        assert_eq!(parse_signal("KILL"), Some(9));
        assert_eq!(parse_signal("sigint"), Some(2));
        assert_eq!(parse_signal("SIGTERM"), Some(15));
        assert_eq!(parse_signal("32"), None);
        assert_eq!(parse_signal("BOGUS"), None);
        assert_eq!(parse_signal(""), None);
    }

    #[test]
    fn long_format_aligns() {
        let e = |m, n, size, name: &str| LongEntry {
            mode: m,
            nlink: n,
            uid: 0,
            gid: 10,
            size_bytes: size,
            name: name.to_string(),
        };
        let lines = format_long(&[e(0o040755, 2, 0, "bin"), e(0o100644, 1, 12345, "file")]);
        assert_eq!(lines, vec!["drwxr-xr-x 2 0 10     0 bin", "-rw-r--r-- 1 0 10 12345 file"]);
        assert!(format_long(&[]).is_empty());
        assert!(is_shown("a", false) && !is_shown(".a", false) && is_shown(".a", true));
    }

    #[test]
    fn ps_format() {
        let mut name = [0u8; protocols::unix::PROCESS_NAME_BYTES];
        name[..2].copy_from_slice(b"sh");
        let p = ProcInfo { pid: 7, ppid: 1, pgid: 7, uid: 0, state: b'R', cpu_ns: 1_234_000_000, name };
        let lines = format_ps(&[p]);
        assert_eq!(lines[0], "  PID  PPID  PGID   UID S      TIME COMMAND");
        assert_eq!(lines[1], "    7     1     7     0 R      1.23 sh");
        assert_eq!(format_cpu(0), "0.00");
    }

    #[test]
    fn paths() {
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/d", "a"), "/d/a");
        assert_eq!(join("d/", "a"), "d/a");
        assert_eq!(base_name("/a/b"), "b");
        assert_eq!(base_name("a/b//"), "b");
        assert_eq!(base_name("b"), "b");
        assert_eq!(base_name("/"), "/");
        assert_eq!(base_name(""), "");
        assert_eq!(dir_name("/a/b"), "/a");
        assert_eq!(dir_name("a/b//"), "a");
        assert_eq!(dir_name("a//b"), "a");
        assert_eq!(dir_name("/a"), "/");
        assert_eq!(dir_name("a"), ".");
        assert_eq!(dir_name("/"), "/");
        assert_eq!(dir_name("//"), "/");
        assert_eq!(dir_name(""), ".");
        assert_eq!(prefixes("a/b/c"), vec!["a", "a/b", "a/b/c"]);
        assert_eq!(prefixes("/x//y/"), vec!["/x", "/x//y"]);
        assert_eq!(prefixes("a"), vec!["a"]);
        assert!(prefixes("/").is_empty());
    }

    #[test]
    fn sha256_known_answer() {
        // FIPS 180-2's "abc" example, through the crate configuration
        // sha256sum uses (portable code, no SIMD), fed in two pieces.
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"a");
        h.update(b"bc");
        assert_eq!(hex(&h.finalize()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn hex_digits() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(hex(&[]), "");
    }
}
