//! `dd`'s pure half: its operands, GNU dd's number syntax, the record
//! counts and the summary it prints on standard error. No system calls,
//! so all of it is tested on the host (`cargo test -p coreutils --lib`);
//! the copy loop is `src/bin/dd.rs`.
//!
//! What it follows: GNU coreutils 9.1's `dd` (the one Debian 12 ships),
//! for the operands it implements: `if=`, `of=`, `bs=`, `count=`,
//! `skip=`, `seek=`, `conv=notrunc` and `status=none|noxfer`. The input
//! and output block sizes are one (`bs=`, default 512), so every block
//! read is written as it came: a short read is a partial record in and,
//! once written, a partial record out (GNU dd without `ibs=`/`obs=`).
//!
//! What it is not: the rest of GNU dd (`ibs=`, `obs=`, `cbs=`, `iflag=`,
//! `oflag=`, the other conversions): those operands are refused with a
//! message, never ignored.

use alloc::format;
use alloc::string::String;
use core::fmt;

/// GNU dd's default block size.
pub const DEFAULT_BLOCK_BYTES: u64 = 512;

/// What `status=` asks to be printed at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The record counts and the transfer line.
    Full,
    /// `status=noxfer`: the record counts only.
    NoXfer,
    /// `status=none`: nothing (error messages still are).
    None,
}

/// The operands of one `dd` command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operands<'a> {
    /// `if=`: `None` is standard input.
    pub input: Option<&'a str>,
    /// `of=`: `None` is standard output.
    pub output: Option<&'a str>,
    /// `bs=`: bytes per `read` and per `write`.
    pub block_bytes: u64,
    /// `count=`: copy at most this many input blocks (full or partial).
    pub count_blocks: Option<u64>,
    /// `skip=`: input blocks to pass over before copying.
    pub skip_blocks: u64,
    /// `seek=`: output blocks to pass over before writing.
    pub seek_blocks: u64,
    /// `conv=notrunc`: leave the output file's length alone.
    pub is_notrunc: bool,
    pub status: Status,
}

/// Why the operands were refused; `Display` is GNU dd's message (after
/// the `dd: ` prefix).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperandError {
    Unrecognized(String),
    InvalidNumber(String),
    InvalidConversion(String),
    InvalidStatus(String),
}

impl fmt::Display for OperandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OperandError::Unrecognized(word) => write!(f, "unrecognized operand '{word}'"),
            OperandError::InvalidNumber(text) => write!(f, "invalid number: '{text}'"),
            OperandError::InvalidConversion(text) => write!(f, "invalid conversion: '{text}'"),
            OperandError::InvalidStatus(text) => write!(f, "invalid status level: '{text}'"),
        }
    }
}

/// Parses `dd`'s operands (the words after its name). A later operand
/// overrides an earlier one of the same name, as in GNU dd.
pub fn parse_operands<'a>(words: &[&'a str]) -> Result<Operands<'a>, OperandError> {
    let mut operands = Operands {
        input: None,
        output: None,
        block_bytes: DEFAULT_BLOCK_BYTES,
        count_blocks: None,
        skip_blocks: 0,
        seek_blocks: 0,
        is_notrunc: false,
        status: Status::Full,
    };
    for &word in words {
        let Some((name, value)) = word.split_once('=') else {
            return Err(OperandError::Unrecognized(word.into()));
        };
        let number = || parse_size(value).ok_or_else(|| OperandError::InvalidNumber(value.into()));
        match name {
            "if" => operands.input = Some(value),
            "of" => operands.output = Some(value),
            // A block of no bytes would copy nothing forever: GNU refuses it.
            "bs" => operands.block_bytes = number().and_then(|n| positive(n, value))?,
            "count" => operands.count_blocks = Some(number()?),
            "skip" => operands.skip_blocks = number()?,
            "seek" => operands.seek_blocks = number()?,
            "conv" => {
                for conversion in value.split(',') {
                    match conversion {
                        "notrunc" => operands.is_notrunc = true,
                        other => return Err(OperandError::InvalidConversion(other.into())),
                    }
                }
            }
            "status" => {
                operands.status = match value {
                    "none" => Status::None,
                    "noxfer" => Status::NoXfer,
                    other => return Err(OperandError::InvalidStatus(other.into())),
                }
            }
            _ => return Err(OperandError::Unrecognized(word.into())),
        }
    }
    Ok(operands)
}

fn positive(n: u64, text: &str) -> Result<u64, OperandError> {
    if n == 0 { Err(OperandError::InvalidNumber(text.into())) } else { Ok(n) }
}

/// A number as GNU dd reads it: decimal digits, then an optional
/// multiplier: `c` (1), `w` (2), `b` (512), `K`/`k` (1024), `M`, `G`, `T`,
/// `P`, `E` (powers of 1024), the same letters followed by `iB` (powers of
/// 1024: `KiB`) or `B` (powers of 1000: `kB`, `MB`); and `NxM` for a
/// product (`2x512`). `None` when malformed or past `u64`.
pub fn parse_size(text: &str) -> Option<u64> {
    text.split('x').try_fold(1u64, |product, factor| product.checked_mul(parse_factor(factor)?))
}

fn parse_factor(text: &str) -> Option<u64> {
    let digits_end = text.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(text.len());
    if digits_end == 0 {
        return None;
    }
    let number: u64 = text[..digits_end].parse().ok()?;
    let multiplier = match &text[digits_end..] {
        "" | "c" => 1,
        "w" => 2,
        "b" => 512,
        suffix => {
            let mut chars = suffix.chars();
            let power = match chars.next()? {
                'k' | 'K' => 1,
                'M' => 2,
                'G' => 3,
                'T' => 4,
                'P' => 5,
                'E' => 6,
                _ => return None,
            };
            let base: u64 = match chars.as_str() {
                "" | "iB" => 1024,
                "B" => 1000,
                _ => return None,
            };
            base.checked_pow(power)?
        }
    };
    number.checked_mul(multiplier)
}

/// Whole and partial records, as `N+M records in`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Records {
    pub full: u64,
    pub partial: u64,
}

impl Records {
    /// Counts one transfer of `bytes` out of a block of `block_bytes`.
    pub fn add(&mut self, bytes: u64, block_bytes: u64) {
        if bytes >= block_bytes {
            self.full += 1;
        } else {
            self.partial += 1;
        }
    }

    pub fn total(&self) -> u64 {
        self.full + self.partial
    }
}

/// What a `dd` run moved: what the summary reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub records_in: Records,
    pub records_out: Records,
    pub bytes_out: u64,
}

/// The summary on standard error: the record counts, then (unless
/// `status=noxfer`) the transfer line, e.g. `1024 bytes (1.0 kB, 1.0 KiB)
/// copied, 3.5523e-05 s, 28.8 MB/s`; nothing for `status=none`. Each line
/// ends with a newline.
pub fn summary(tally: &Tally, elapsed_ns: u64, status: Status) -> String {
    if status == Status::None {
        return String::new();
    }
    let mut text = format!(
        "{}+{} records in\n{}+{} records out\n",
        tally.records_in.full, tally.records_in.partial, tally.records_out.full, tally.records_out.partial
    );
    if status == Status::Full {
        text.push_str(&transfer_line(tally.bytes_out, elapsed_ns));
        text.push('\n');
    }
    text
}

/// GNU dd's transfer line: the bytes, with their SI and IEC sizes where
/// those have a prefix, the time as C's `%g` and the rate.
pub fn transfer_line(bytes: u64, elapsed_ns: u64) -> String {
    let seconds = format_g(elapsed_ns as f64 / 1e9);
    let rate = if elapsed_ns == 0 { String::from("Infinity B/s") } else { human_rate(bytes, elapsed_ns) };
    let si = human_size(bytes, 1000);
    let iec = human_size(bytes, 1024);
    // GNU prints a size in parentheses only when it has a prefix.
    if bytes < 1000 {
        let plural = if bytes == 1 { "" } else { "s" };
        format!("{bytes} byte{plural} copied, {seconds} s, {rate}")
    } else if bytes < 1024 {
        format!("{bytes} bytes ({si}) copied, {seconds} s, {rate}")
    } else {
        format!("{bytes} bytes ({si}, {iec}) copied, {seconds} s, {rate}")
    }
}

const SI_PREFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
const IEC_PREFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// `bytes` with a prefix of `base` (1000: `kB`, `MB`; 1024: `KiB`,
/// `MiB`), as gnulib's `human_readable` writes an exact count for dd:
/// under one unit of the base the plain count (`512 B`); under 10 of a
/// unit one decimal (`3.1 MB`), else a whole number (`33 kB`); rounded to
/// the nearest, ties to even (checked against GNU dd 9.1).
pub fn human_size(bytes: u64, base: u64) -> String {
    let prefixes = if base == 1000 { &SI_PREFIXES } else { &IEC_PREFIXES };
    if bytes < base {
        return format!("{bytes} B");
    }
    let mut exponent = 0;
    let mut scale: u128 = 1;
    while scale * u128::from(base) <= u128::from(bytes) && exponent + 1 < prefixes.len() {
        scale *= u128::from(base);
        exponent += 1;
    }
    let tenths = div_round_even(u128::from(bytes) * 10, scale);
    if tenths < 100 {
        return format!("{}.{} {}B", tenths / 10, tenths % 10, prefixes[exponent]);
    }
    let whole = div_round_even(u128::from(bytes), scale);
    if whole >= u128::from(base) && exponent + 1 < prefixes.len() {
        // 999.5 kB rounds to the next unit.
        return format!("1.0 {}B", prefixes[exponent + 1]);
    }
    format!("{whole} {}B", prefixes[exponent])
}

/// `numerator / denominator` rounded to the nearest, ties to even.
fn div_round_even(numerator: u128, denominator: u128) -> u128 {
    let (quotient, remainder) = (numerator / denominator, numerator % denominator);
    match (remainder * 2).cmp(&denominator) {
        core::cmp::Ordering::Less => quotient,
        core::cmp::Ordering::Greater => quotient + 1,
        core::cmp::Ordering::Equal => quotient + (quotient & 1),
    }
}

/// The rate `bytes` in `elapsed_ns` make, as GNU dd prints it: always
/// with an SI prefix (`0.0 kB/s` for nothing moved), one decimal below
/// 100 of the unit (`28.8 MB/s`), a whole number above (`670 MB/s`).
/// `elapsed_ns` must not be 0.
pub fn human_rate(bytes: u64, elapsed_ns: u64) -> String {
    let mut value = bytes as f64 * 1e9 / elapsed_ns as f64;
    let mut exponent = 0;
    // gnulib's floating-point path divides by the base at least once.
    loop {
        value /= 1000.0;
        exponent += 1;
        if value < 1000.0 || exponent + 1 == SI_PREFIXES.len() {
            break;
        }
    }
    let one_decimal = format!("{value:.1}");
    let shown = if one_decimal.len() > 4 { format!("{value:.0}") } else { one_decimal };
    format!("{shown} {}B/s", SI_PREFIXES[exponent])
}

/// C's `printf("%g", value)` for a finite, non-negative `value`: six
/// significant digits, in positional notation when the decimal exponent
/// is from -4 to 5, else as `1.2345e-05`; trailing zeros removed.
pub fn format_g(value: f64) -> String {
    const PRECISION: i32 = 6;
    if value == 0.0 {
        return String::from("0");
    }
    let scientific = format!("{:.*e}", (PRECISION - 1) as usize, value);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..PRECISION).contains(&exponent) {
        let positional = format!("{:.*}", (PRECISION - 1 - exponent) as usize, value);
        String::from(trim_fraction(&positional))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim_fraction(mantissa), exponent.unsigned_abs())
    }
}

/// `1.50000` → `1.5`, `2.000` → `2`, `10` → `10`.
fn trim_fraction(number: &str) -> &str {
    if number.contains('.') { number.trim_end_matches('0').trim_end_matches('.') } else { number }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn operands_and_their_defaults() {
        let o = parse_operands(&[]).unwrap();
        assert_eq!((o.input, o.output, o.block_bytes, o.count_blocks), (None, None, 512, None));
        assert_eq!((o.skip_blocks, o.seek_blocks, o.is_notrunc, o.status), (0, 0, false, Status::Full));
        let o = parse_operands(&[
            "if=/dev/ram0",
            "of=out",
            "bs=32k",
            "count=100",
            "skip=2",
            "seek=3",
            "conv=notrunc",
            "status=noxfer",
        ])
        .unwrap();
        assert_eq!((o.input, o.output, o.block_bytes), (Some("/dev/ram0"), Some("out"), 32768));
        assert_eq!((o.count_blocks, o.skip_blocks, o.seek_blocks), (Some(100), 2, 3));
        assert!(o.is_notrunc && o.status == Status::NoXfer);
        // The last of two wins; a value may hold '='.
        let o = parse_operands(&["bs=1", "bs=2", "of=a=b", "count=0", "status=none"]).unwrap();
        assert_eq!(
            (o.block_bytes, o.output, o.count_blocks, o.status),
            (2, Some("a=b"), Some(0), Status::None)
        );
    }

    #[test]
    fn bad_operands_say_what_gnu_dd_says() {
        let error = |words: &[&str]| parse_operands(words).unwrap_err().to_string();
        assert_eq!(error(&["foo=1"]), "unrecognized operand 'foo=1'");
        assert_eq!(error(&["file"]), "unrecognized operand 'file'");
        assert_eq!(error(&["iflag=direct"]), "unrecognized operand 'iflag=direct'");
        assert_eq!(error(&["bs=0"]), "invalid number: '0'");
        assert_eq!(error(&["bs=1x"]), "invalid number: '1x'");
        assert_eq!(error(&["count=-1"]), "invalid number: '-1'");
        assert_eq!(error(&["skip="]), "invalid number: ''");
        assert_eq!(error(&["conv=notrunc,sync"]), "invalid conversion: 'sync'");
        assert_eq!(error(&["status=progress"]), "invalid status level: 'progress'");
    }

    #[test]
    fn sizes_take_gnu_suffixes_and_products() {
        for (text, bytes) in [
            ("0", 0),
            ("17", 17),
            ("3c", 3),
            ("2w", 4),
            ("2b", 1024),
            ("32k", 32 << 10),
            ("32K", 32 << 10),
            ("32KiB", 32 << 10),
            ("32kB", 32_000),
            ("32KB", 32_000),
            ("1M", 1 << 20),
            ("1MiB", 1 << 20),
            ("1MB", 1_000_000),
            ("2G", 2 << 30),
            ("1T", 1 << 40),
            ("1E", 1 << 60),
            ("2x512", 1024),
            ("2x3x4k", 24 << 10),
        ] {
            assert_eq!(parse_size(text), Some(bytes), "{text}");
        }
        for bad in ["", "k", "1m", "1q", "1kiB2", "1 k", "16E", "x2", "2x", "99999999999999999999", "1Z"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn records_count_full_and_partial_blocks() {
        let mut records = Records::default();
        for bytes in [512, 512, 100, 512, 0] {
            records.add(bytes, 512);
        }
        assert_eq!((records.full, records.partial, records.total()), (3, 2, 5));
    }

    /// Sizes as GNU dd 9.1 printed them for these byte counts.
    #[test]
    fn sizes_read_like_gnu_dd() {
        for (bytes, si, iec) in [
            (6, "6 B", "6 B"),
            (1000, "1.0 kB", "1000 B"),
            (1024, "1.0 kB", "1.0 KiB"),
            (1050, "1.0 kB", "1.0 KiB"),
            (1150, "1.2 kB", "1.1 KiB"),
            (1250, "1.2 kB", "1.2 KiB"),
            (2500, "2.5 kB", "2.4 KiB"),
            (9949, "9.9 kB", "9.7 KiB"),
            (9950, "10 kB", "9.7 KiB"),
            (10500, "10 kB", "10 KiB"),
            (11500, "12 kB", "11 KiB"),
            (32768, "33 kB", "32 KiB"),
            (99500, "100 kB", "97 KiB"),
            (100000, "100 kB", "98 KiB"),
            (999500, "1.0 MB", "976 KiB"),
            (999999, "1.0 MB", "977 KiB"),
            (3145728, "3.1 MB", "3.0 MiB"),
            (10485760, "10 MB", "10 MiB"),
            (104857600, "105 MB", "100 MiB"),
            (1073741824, "1.1 GB", "1.0 GiB"),
        ] {
            assert_eq!(
                (human_size(bytes, 1000).as_str(), human_size(bytes, 1024).as_str()),
                (si, iec),
                "{bytes}"
            );
        }
    }

    #[test]
    fn rates_read_like_gnu_dd() {
        // (bytes, ns) → what GNU dd printed for the same pair.
        assert_eq!(human_rate(6, 32_438), "185 kB/s");
        assert_eq!(human_rate(1024, 35_523), "28.8 MB/s");
        assert_eq!(human_rate(1000, 101_862), "9.8 MB/s");
        assert_eq!(human_rate(3_145_728, 1_244_490), "2.5 GB/s");
        assert_eq!(human_rate(32_768, 48_913), "670 MB/s");
        assert_eq!(human_rate(1, 27_992), "35.7 kB/s");
        assert_eq!(human_rate(0, 44_216), "0.0 kB/s");
        assert_eq!(human_rate(100, 1_000_000_000), "0.1 kB/s");
    }

    #[test]
    fn times_print_as_c_percent_g() {
        for (seconds, text) in [
            (3.2438e-05, "3.2438e-05"),
            (0.000101862, "0.000101862"),
            (0.00124449, "0.00124449"),
            (2.42877, "2.42877"),
            (0.103883, "0.103883"),
            (1.5, "1.5"),
            (2.0, "2"),
            (1.234567, "1.23457"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (0.0001, "0.0001"),
            (9.9999996, "10"),
            (0.0, "0"),
        ] {
            assert_eq!(format_g(seconds), text, "{seconds}");
        }
    }

    #[test]
    fn summary_lines() {
        let tally = Tally {
            records_in: Records { full: 3, partial: 1 },
            records_out: Records { full: 3, partial: 1 },
            bytes_out: 1030,
        };
        assert_eq!(summary(&tally, 0, Status::None), "");
        assert_eq!(summary(&tally, 0, Status::NoXfer), "3+1 records in\n3+1 records out\n");
        assert_eq!(
            summary(&tally, 2_000_000_000, Status::Full),
            "3+1 records in\n3+1 records out\n1030 bytes (1.0 kB, 1.0 KiB) copied, 2 s, 0.5 kB/s\n"
        );
        assert_eq!(transfer_line(1, 1_000_000_000), "1 byte copied, 1 s, 0.0 kB/s");
        assert_eq!(transfer_line(512, 1_000_000), "512 bytes copied, 0.001 s, 512 kB/s");
        assert_eq!(transfer_line(1000, 1_000_000), "1000 bytes (1.0 kB) copied, 0.001 s, 1.0 MB/s");
        assert_eq!(transfer_line(0, 0), "0 bytes copied, 0 s, Infinity B/s");
    }
}
