//! Measuring and reporting: picks an iteration count, takes samples, and
//! prints each figure as one machine-readable line.
//!
//! The output format is the contract with the suite's driver (`cargo xtask
//! bench` parses it in `xtask/src/bench/line.rs`):
//!
//! ```text
//! BENCH {"name":"getpid","unit":"ns/op","value":123.400,"samples":[...],
//!        "iterations":1000,"tsc_hz":2000000000,"ticks":[...],
//!        "bytes_per_op":0,"counters":{"kernel_calls":7001,...}}
//! ```
//!
//! on one line. Each sample ran the workload `iterations` times and took
//! `ticks[i]` TSC ticks at `tsc_hz`; `samples[i]` is that converted to the
//! unit and `value` is their median. `bytes_per_op` is non-zero for
//! bandwidth units. `counters` are the kernel's event counters added up
//! over all the timed samples (`samples.len() * iterations` operations),
//! present only where the system has them. Any other line a program prints
//! is commentary and starts with `#`.

use crate::{MAX_COUNTERS, Platform, now_ticks};
use alloc::format;
use alloc::string::String;
use core::fmt::{self, Write};

/// Most samples one measurement can hold (no allocator in `core`).
pub const MAX_SAMPLES: usize = 15;

/// How long and how often to measure.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Samples per figure; odd, so the median is one of them.
    pub sample_count: usize,
    /// Each sample lasts at least this long, so the clock's own cost and
    /// granularity are a negligible part of it.
    pub min_sample_ns: u64,
}

impl Default for Config {
    fn default() -> Self {
        // 7 samples of >= 50 ms: about half a second per figure, which
        // keeps a whole run under TCG to tens of seconds.
        Config { sample_count: 7, min_sample_ns: 50_000_000 }
    }
}

/// What a figure counts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    /// Nanoseconds per iteration of the workload.
    NanosPerOp,
    /// Nanoseconds per round trip (a request and its reply).
    NanosPerRoundTrip,
    /// 10^6 bytes per second, each iteration moving `bytes_per_op`.
    MegabytesPerSecond { bytes_per_op: u64 },
    /// Milliseconds per job: one iteration is one whole run of a program
    /// (seed 000's 2000 passes), a sample one job's time.
    MillisecondsPerJob,
}

impl Unit {
    pub fn label(self) -> &'static str {
        match self {
            Unit::NanosPerOp => "ns/op",
            Unit::NanosPerRoundTrip => "ns/roundtrip",
            Unit::MegabytesPerSecond { .. } => "MB/s",
            Unit::MillisecondsPerJob => "ms/job",
        }
    }

    /// The figure for `iterations` iterations that took `elapsed_ns`.
    pub fn value(self, elapsed_ns: f64, iterations: u64) -> f64 {
        match self {
            Unit::NanosPerOp | Unit::NanosPerRoundTrip => elapsed_ns / iterations as f64,
            // bytes / (ns / 1e9) / 1e6 = bytes * 1e3 / ns
            Unit::MegabytesPerSecond { bytes_per_op } => {
                (bytes_per_op * iterations) as f64 * 1e3 / elapsed_ns
            }
            Unit::MillisecondsPerJob => elapsed_ns / iterations as f64 / 1e6,
        }
    }

    /// Bytes one iteration moves (0 for units that are not bandwidths).
    pub fn bytes_per_op(self) -> u64 {
        match self {
            Unit::MegabytesPerSecond { bytes_per_op } => bytes_per_op,
            _ => 0,
        }
    }
}

/// One figure: its median and all its samples, in the unit and as ticks.
#[derive(Clone, Copy, Debug)]
pub struct Measurement {
    pub median: f64,
    samples: [f64; MAX_SAMPLES],
    ticks: [u64; MAX_SAMPLES],
    sample_count: usize,
    pub iterations: u64,
    /// The rate `ticks` were counted at.
    pub tsc_hz: u64,
    counters: [u64; MAX_COUNTERS],
    counter_names: &'static [&'static str],
}

impl Measurement {
    pub fn samples(&self) -> &[f64] {
        &self.samples[..self.sample_count]
    }

    /// TSC ticks each sample took (0 for measurements built by
    /// [`Measurement::from_samples`]).
    pub fn ticks(&self) -> &[u64] {
        &self.ticks[..self.sample_count]
    }

    /// The kernel counters over all samples, with their names.
    pub fn counters(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.counter_names.iter().copied().zip(self.counters.iter().copied())
    }

    /// Builds a measurement from samples already taken (the median is
    /// computed here). Panics on no samples or more than [`MAX_SAMPLES`].
    pub fn from_samples(samples: &[f64], iterations: u64) -> Self {
        assert!(!samples.is_empty() && samples.len() <= MAX_SAMPLES, "1..={MAX_SAMPLES} samples");
        let mut all = [0.0; MAX_SAMPLES];
        all[..samples.len()].copy_from_slice(samples);
        Measurement {
            median: median(samples),
            samples: all,
            ticks: [0; MAX_SAMPLES],
            sample_count: samples.len(),
            iterations,
            tsc_hz: 0,
            counters: [0; MAX_COUNTERS],
            counter_names: &[],
        }
    }

    /// Adds the raw timings: `ticks[i]` for sample `i` at `tsc_hz`.
    pub fn with_ticks(mut self, ticks: &[u64], tsc_hz: u64) -> Self {
        assert_eq!(ticks.len(), self.sample_count, "one tick count per sample");
        self.ticks[..ticks.len()].copy_from_slice(ticks);
        self.tsc_hz = tsc_hz;
        self
    }

    /// Adds the kernel counters' increase over the samples.
    pub fn with_counters(mut self, names: &'static [&'static str], values: &[u64]) -> Self {
        let count = names.len().min(values.len()).min(MAX_COUNTERS);
        self.counter_names = &names[..count];
        self.counters[..count].copy_from_slice(&values[..count]);
        self
    }
}

/// The median; for an even count, the mean of the middle two.
pub fn median(samples: &[f64]) -> f64 {
    let mut sorted = [0.0; MAX_SAMPLES];
    let sorted = &mut sorted[..samples.len()];
    sorted.copy_from_slice(samples);
    sorted.sort_unstable_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if !sorted.len().is_multiple_of(2) { sorted[middle] } else { (sorted[middle - 1] + sorted[middle]) / 2.0 }
}

/// Runs `workload(iterations)` until one call lasts at least
/// `config.min_sample_ns`, then takes `config.sample_count` timed samples
/// of that many iterations. The calibration runs double as a warm-up
/// (caches, TLB, page faults on first touch, the peer process started).
/// The kernel counters are read just before the first timed sample and
/// just after the last, so they cover exactly the timed operations (and
/// the one counter read between them).
pub fn measure<P: Platform>(unit: Unit, config: &Config, mut workload: impl FnMut(u64)) -> Measurement {
    let tsc_hz = P::tsc_hz();
    let min_sample_ticks = min_sample_ticks(config, tsc_hz);
    let time = |workload: &mut dyn FnMut(u64), iterations: u64| {
        let start = now_ticks();
        workload(iterations);
        now_ticks().wrapping_sub(start)
    };

    let mut iterations = 1u64;
    loop {
        let ticks = time(&mut workload, iterations);
        if ticks >= min_sample_ticks {
            break;
        }
        iterations = next_iterations(iterations, ticks, min_sample_ticks);
    }

    let sample_count = config.sample_count.clamp(1, MAX_SAMPLES);
    let mut ticks = [0u64; MAX_SAMPLES];
    let mut counters_before = [0u64; MAX_COUNTERS];
    P::read_counters(&mut counters_before);
    for sample_ticks in &mut ticks[..sample_count] {
        *sample_ticks = time(&mut workload, iterations);
    }
    let mut counters_after = [0u64; MAX_COUNTERS];
    let counter_names = P::read_counters(&mut counters_after);
    let mut increase = [0u64; MAX_COUNTERS];
    for (delta, (after, before)) in increase.iter_mut().zip(counters_after.iter().zip(&counters_before)) {
        *delta = after.wrapping_sub(*before);
    }
    finish(unit, tsc_hz, iterations, &ticks[..sample_count], counter_names, &increase)
}

/// The shortest sample, in TSC ticks.
fn min_sample_ticks(config: &Config, tsc_hz: u64) -> u64 {
    ((config.min_sample_ns as u128 * tsc_hz as u128) / 1_000_000_000).max(1) as u64
}

/// The next calibration run's iterations after `iterations` took `ticks`,
/// short of `min_sample_ticks`.
fn next_iterations(iterations: u64, ticks: u64, min_sample_ticks: u64) -> u64 {
    // Aim straight for the target once a run is long enough to tell,
    // instead of doubling all the way (each doubling costs a run).
    if ticks > min_sample_ticks / 16 {
        (iterations as u128 * min_sample_ticks as u128 * 5 / 4 / ticks as u128) as u64 + 1
    } else {
        iterations * 2
    }
}

/// The measurement of samples of `iterations` iterations that took
/// `ticks`, with the counters' increase over them.
fn finish(
    unit: Unit,
    tsc_hz: u64,
    iterations: u64,
    ticks: &[u64],
    counter_names: &'static [&'static str],
    increase: &[u64; MAX_COUNTERS],
) -> Measurement {
    // Floating point only after the timed part: on a soft-float build it
    // is slow, and the driver recomputes everything from the ticks anyway.
    let mut samples = [0.0; MAX_SAMPLES];
    for (sample, &sample_ticks) in samples.iter_mut().zip(ticks) {
        let elapsed_ns = sample_ticks as f64 * 1e9 / tsc_hz as f64;
        *sample = unit.value(elapsed_ns, iterations);
    }
    Measurement::from_samples(&samples[..ticks.len()], iterations)
        .with_ticks(ticks, tsc_hz)
        .with_counters(counter_names, increase)
}

/// The clock of a workload that times only part of what it does (see
/// [`measure_sections`]): what runs between [`Stopwatch::start`] and
/// [`Stopwatch::stop`] is timed, the rest (setting up, cleaning up:
/// removing the files a pass made, say) is not. During the timed samples
/// the kernel counters are read at each start and stop too, so they cover
/// the timed sections only, plus one counter read per section.
pub struct Stopwatch<P: Platform> {
    elapsed_ticks: u64,
    /// When the running section started; `None` when stopped.
    started_ticks: Option<u64>,
    /// Whether to read the counters (timed samples only, not calibration).
    is_counting: bool,
    counters_at_start: [u64; MAX_COUNTERS],
    increase: [u64; MAX_COUNTERS],
    counter_names: &'static [&'static str],
    platform: core::marker::PhantomData<P>,
}

impl<P: Platform> Stopwatch<P> {
    fn new(is_counting: bool) -> Self {
        Stopwatch {
            elapsed_ticks: 0,
            started_ticks: None,
            is_counting,
            counters_at_start: [0; MAX_COUNTERS],
            increase: [0; MAX_COUNTERS],
            counter_names: &[],
            platform: core::marker::PhantomData,
        }
    }

    /// Starts a timed section (a no-op if one is running).
    pub fn start(&mut self) {
        if self.started_ticks.is_some() {
            return;
        }
        if self.is_counting {
            P::read_counters(&mut self.counters_at_start);
        }
        self.started_ticks = Some(now_ticks());
    }

    /// Ends the timed section (a no-op if none is running).
    pub fn stop(&mut self) {
        let now = now_ticks();
        let Some(started) = self.started_ticks.take() else { return };
        self.elapsed_ticks += now.wrapping_sub(started);
        if self.is_counting {
            let mut after = [0u64; MAX_COUNTERS];
            self.counter_names = P::read_counters(&mut after);
            for (total, (after, before)) in
                self.increase.iter_mut().zip(after.iter().zip(&self.counters_at_start))
            {
                *total += after.wrapping_sub(*before);
            }
        }
    }
}

/// Most iterations a calibration tries before deciding that the workload
/// times nothing (it never starts its stopwatch, say).
const MAX_CALIBRATION_ITERATIONS: u64 = 1 << 40;

/// [`measure`] for a workload that may fail and that times only part of
/// each call, with the [`Stopwatch`] it is given. `workload(iterations,
/// stopwatch)` does `iterations` operations; a section still running when
/// it returns is stopped then. The first error ends the measurement and is
/// returned.
pub fn measure_sections<P: Platform>(
    unit: Unit,
    config: &Config,
    mut workload: impl FnMut(u64, &mut Stopwatch<P>) -> Result<(), String>,
) -> Result<Measurement, String> {
    let tsc_hz = P::tsc_hz();
    let min_sample_ticks = min_sample_ticks(config, tsc_hz);
    let mut time = |iterations: u64, is_counting: bool| -> Result<Stopwatch<P>, String> {
        let mut stopwatch = Stopwatch::new(is_counting);
        let result = workload(iterations, &mut stopwatch);
        stopwatch.stop();
        result.map(|()| stopwatch)
    };

    let mut iterations = 1u64;
    loop {
        let ticks = time(iterations, false)?.elapsed_ticks;
        if ticks >= min_sample_ticks {
            break;
        }
        if iterations >= MAX_CALIBRATION_ITERATIONS {
            return Err(format!("{iterations} iterations took {ticks} ticks: the workload times nothing"));
        }
        iterations = next_iterations(iterations, ticks, min_sample_ticks);
    }

    let sample_count = config.sample_count.clamp(1, MAX_SAMPLES);
    let mut ticks = [0u64; MAX_SAMPLES];
    let mut increase = [0u64; MAX_COUNTERS];
    let mut counter_names: &'static [&'static str] = &[];
    for sample_ticks in &mut ticks[..sample_count] {
        let stopwatch = time(iterations, true)?;
        *sample_ticks = stopwatch.elapsed_ticks.max(1);
        for (total, value) in increase.iter_mut().zip(&stopwatch.increase) {
            *total += value;
        }
        if !stopwatch.counter_names.is_empty() {
            counter_names = stopwatch.counter_names;
        }
    }
    Ok(finish(unit, tsc_hz, iterations, &ticks[..sample_count], counter_names, &increase))
}

/// Measures and prints one figure.
pub fn run<P: Platform>(name: &str, unit: Unit, config: &Config, workload: impl FnMut(u64)) -> Measurement {
    let measurement = measure::<P>(unit, config, workload);
    report::<P>(name, unit, &measurement);
    measurement
}

/// Prints the figure's `BENCH {...}` line.
pub fn report<P: Platform>(name: &str, unit: Unit, measurement: &Measurement) {
    let mut line = LineWriter::<P>::new();
    // A LineWriter never fails: it flushes instead.
    let _ = write_result_line(&mut line, name, unit, measurement);
    line.flush();
}

/// How a line reporting a figure that could not be measured starts:
/// `# FAILED <figure>: <reason>`. A comment to anything else, the suite's
/// driver reports it as a failure.
pub const FAILED_PREFIX: &str = "# FAILED ";

/// Prints a [`FAILED_PREFIX`] line.
pub fn failure<P: Platform>(figure: &str, reason: &str) {
    let mut line = LineWriter::<P>::new();
    let _ = writeln!(line, "{FAILED_PREFIX}{figure}: {reason}");
    line.flush();
}

/// Prints a `#` commentary line (not parsed by the suite).
pub fn comment<P: Platform>(args: fmt::Arguments<'_>) {
    let mut line = LineWriter::<P>::new();
    let _ = line.write_str("# ");
    let _ = line.write_fmt(args);
    let _ = line.write_str("\n");
    line.flush();
}

/// The result line, newline included.
pub fn write_result_line(
    out: &mut impl Write,
    name: &str,
    unit: Unit,
    measurement: &Measurement,
) -> fmt::Result {
    out.write_str("BENCH {\"name\":")?;
    write_json_string(out, name)?;
    out.write_str(",\"unit\":")?;
    write_json_string(out, unit.label())?;
    out.write_str(",\"value\":")?;
    write_json_number(out, measurement.median)?;
    out.write_str(",\"samples\":[")?;
    for (i, sample) in measurement.samples().iter().enumerate() {
        if i > 0 {
            out.write_str(",")?;
        }
        write_json_number(out, *sample)?;
    }
    write!(out, "],\"iterations\":{},\"tsc_hz\":{},\"ticks\":[", measurement.iterations, measurement.tsc_hz)?;
    for (i, ticks) in measurement.ticks().iter().enumerate() {
        if i > 0 {
            out.write_str(",")?;
        }
        write!(out, "{ticks}")?;
    }
    write!(out, "],\"bytes_per_op\":{},\"counters\":{{", unit.bytes_per_op())?;
    for (i, (name, value)) in measurement.counters().enumerate() {
        if i > 0 {
            out.write_str(",")?;
        }
        write_json_string(out, name)?;
        write!(out, ":{value}")?;
    }
    out.write_str("}}\n")
}

fn write_json_string(out: &mut impl Write, text: &str) -> fmt::Result {
    out.write_char('"')?;
    for c in text.chars() {
        match c {
            '"' => out.write_str("\\\"")?,
            '\\' => out.write_str("\\\\")?,
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32)?,
            c => out.write_char(c)?,
        }
    }
    out.write_char('"')
}

/// JSON has no NaN or infinity; those become `null`. Three decimals keep
/// nanosecond figures of cheap operations meaningful.
fn write_json_number(out: &mut impl Write, value: f64) -> fmt::Result {
    if value.is_finite() { write!(out, "{value:.3}") } else { out.write_str("null") }
}

/// Collects a line and writes it with one `write_stdout`, so a line from
/// this process is not interleaved with another's on the console. A line
/// longer than the buffer goes out in pieces.
struct LineWriter<P: Platform> {
    buffer: [u8; 1024],
    len_bytes: usize,
    platform: core::marker::PhantomData<P>,
}

impl<P: Platform> LineWriter<P> {
    fn new() -> Self {
        LineWriter { buffer: [0; 1024], len_bytes: 0, platform: core::marker::PhantomData }
    }

    fn flush(&mut self) {
        if self.len_bytes > 0 {
            P::write_stdout(&self.buffer[..self.len_bytes]);
            self.len_bytes = 0;
        }
    }
}

impl<P: Platform> Write for LineWriter<P> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        for &byte in text.as_bytes() {
            if self.len_bytes == self.buffer.len() {
                self.flush();
            }
            self.buffer[self.len_bytes] = byte;
            self.len_bytes += 1;
        }
        Ok(())
    }
}

/// Parse a benchmark program's options, the same on both systems:
/// `--samples N`, `--sample-ms N`, figure names out of `figures`, or `all`
/// (also the default). Returns the configuration and the chosen figures.
pub fn parse_options<'a, S: AsRef<str> + 'a>(
    mut words: impl Iterator<Item = S>,
    figures: &[&'static str],
) -> Result<(Config, alloc::vec::Vec<&'static str>), alloc::string::String> {
    let mut config = Config::default();
    let mut chosen = alloc::vec::Vec::new();
    while let Some(word) = words.next() {
        let mut number = |option: &str| -> Result<u64, alloc::string::String> {
            let value = words.next().ok_or_else(|| format!("{option} needs a value"))?;
            let value = value.as_ref();
            value.parse().map_err(|_| format!("{option}: {value:?} is not a number"))
        };
        match word.as_ref() {
            "--samples" => {
                let count = number("--samples")? as usize;
                if !(1..=MAX_SAMPLES).contains(&count) {
                    return Err(format!("--samples must be 1..={MAX_SAMPLES}"));
                }
                config.sample_count = count;
            }
            "--sample-ms" => config.min_sample_ns = number("--sample-ms")? * 1_000_000,
            "all" => chosen.extend_from_slice(figures),
            name => match figures.iter().find(|figure| **figure == name) {
                Some(figure) => chosen.push(*figure),
                None => return Err(format!("unknown figure {name:?} (figures: {figures:?})")),
            },
        }
    }
    if chosen.is_empty() {
        chosen.extend_from_slice(figures);
    }
    Ok((config, chosen))
}

#[cfg(test)]
mod tests {

    #[test]
    fn options_parse_the_same_on_both_systems() {
        let figures = ["getpid", "copy"];
        let (config, chosen) =
            super::parse_options(["--samples", "3", "copy"].into_iter(), &figures).unwrap();
        assert_eq!((config.sample_count, chosen.as_slice()), (3, &["copy"][..]));
        let (_, all) = super::parse_options(core::iter::empty::<&str>(), &figures).unwrap();
        assert_eq!(all.as_slice(), &figures[..]);
        assert!(super::parse_options(["--samples", "0"].into_iter(), &figures).is_err());
        assert!(super::parse_options(["--sample-ms"].into_iter(), &figures).is_err());
        assert!(super::parse_options(["nope"].into_iter(), &figures).is_err());
    }

    use super::*;
    use std::string::String;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
    }

    #[test]
    fn result_line_is_one_line_of_json_after_the_prefix() {
        let measurement = Measurement::from_samples(&[10.0, 12.5, 11.0], 1000);
        let mut line = String::new();
        write_result_line(&mut line, "pipe \"x\"", Unit::NanosPerRoundTrip, &measurement).unwrap();
        assert_eq!(
            line,
            "BENCH {\"name\":\"pipe \\\"x\\\"\",\"unit\":\"ns/roundtrip\",\"value\":11.000,\
             \"samples\":[10.000,12.500,11.000],\"iterations\":1000,\"tsc_hz\":0,\"ticks\":[0,0,0],\
             \"bytes_per_op\":0,\"counters\":{}}\n"
        );
    }

    #[test]
    fn result_line_carries_ticks_bytes_and_counters() {
        let measurement = Measurement::from_samples(&[2.0, 1.0], 10)
            .with_ticks(&[200, 100], 1_000_000_000)
            .with_counters(&["kernel_calls", "context_switches"], &[20, 4]);
        let mut line = String::new();
        let unit = Unit::MegabytesPerSecond { bytes_per_op: 4096 };
        write_result_line(&mut line, "copy", unit, &measurement).unwrap();
        assert!(line.ends_with(
            "\"iterations\":10,\"tsc_hz\":1000000000,\"ticks\":[200,100],\"bytes_per_op\":4096,\
             \"counters\":{\"kernel_calls\":20,\"context_switches\":4}}\n"
        ));
        assert!(line.starts_with("BENCH {") && line.matches('\n').count() == 1);
    }

    #[test]
    fn non_finite_numbers_become_null() {
        let measurement = Measurement::from_samples(&[f64::NAN], 1);
        let mut line = String::new();
        write_result_line(&mut line, "x", Unit::NanosPerOp, &measurement).unwrap();
        assert!(line.contains("\"value\":null,\"samples\":[null]"), "{line}");
    }

    #[test]
    fn units_convert_elapsed_time() {
        assert_eq!(Unit::NanosPerOp.value(1000.0, 10), 100.0);
        assert_eq!(Unit::MillisecondsPerJob.value(3e9, 2), 1500.0);
        assert_eq!(
            (Unit::MillisecondsPerJob.label(), Unit::MillisecondsPerJob.bytes_per_op()),
            ("ms/job", 0)
        );
        // 1 MiB 1000 times in one second.
        let mb_per_s = Unit::MegabytesPerSecond { bytes_per_op: 1 << 20 }.value(1e9, 1000);
        assert!((mb_per_s - 1048.576).abs() < 1e-9);
    }

    /// A fake platform whose clock is the TSC at 1 GHz, so a tick is a
    /// nanosecond; output is discarded.
    struct Fake;
    impl Platform for Fake {
        fn tsc_hz() -> u64 {
            1_000_000_000
        }
        fn getpid() -> u64 {
            1
        }
        fn yield_now() {}
        fn write_stdout(_: &[u8]) {}
    }

    /// [`Fake`] with one kernel counter that goes up by 5 at every read
    /// (used by one test only: the count is global).
    struct Counting;
    impl Platform for Counting {
        fn tsc_hz() -> u64 {
            1_000_000_000
        }
        fn getpid() -> u64 {
            1
        }
        fn yield_now() {}
        fn write_stdout(_: &[u8]) {}
        fn read_counters(values: &mut [u64; MAX_COUNTERS]) -> &'static [&'static str] {
            static READS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
            values[0] = 5 * READS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            &["reads"]
        }
    }

    #[test]
    fn measure_records_ticks_and_the_counters_increase() {
        let config = Config { sample_count: 3, min_sample_ns: 100_000 };
        let measurement = measure::<Counting>(Unit::NanosPerOp, &config, |iterations| {
            for i in 0..iterations {
                core::hint::black_box(i);
            }
        });
        assert_eq!(measurement.ticks().len(), 3);
        assert!(measurement.ticks().iter().all(|&t| t > 0));
        assert_eq!(measurement.tsc_hz, 1_000_000_000);
        let counters: std::vec::Vec<_> = measurement.counters().collect();
        assert_eq!(counters, [("reads", 5)]);
    }

    #[test]
    fn measure_grows_iterations_until_a_sample_is_long_enough() {
        let config = Config { sample_count: 3, min_sample_ns: 1_000_000 };
        let mut calls = 0u32;
        let measurement = measure::<Fake>(Unit::NanosPerOp, &config, |iterations| {
            calls += 1;
            for i in 0..iterations {
                core::hint::black_box(i);
            }
        });
        assert_eq!(measurement.samples().len(), 3);
        assert!(measurement.iterations > 1);
        assert!(measurement.median > 0.0);
        assert!(calls >= 4);
    }

    #[test]
    fn sections_count_only_the_timed_parts() {
        /// Its own counter (tests run in parallel): up by 5 at every read.
        struct CountingSections;
        impl Platform for CountingSections {
            fn tsc_hz() -> u64 {
                1_000_000_000
            }
            fn getpid() -> u64 {
                1
            }
            fn yield_now() {}
            fn write_stdout(_: &[u8]) {}
            fn read_counters(values: &mut [u64; MAX_COUNTERS]) -> &'static [&'static str] {
                static READS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
                values[0] = 5 * READS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
                &["reads"]
            }
        }
        let config = Config { sample_count: 3, min_sample_ns: 200_000 };
        let mut calls = 0u64;
        let measurement =
            measure_sections::<CountingSections>(Unit::NanosPerOp, &config, |iterations, stopwatch| {
                calls += 1;
                for half in 0..2 {
                    // Untimed: a counter read here must not be counted.
                    CountingSections::read_counters(&mut [0; MAX_COUNTERS]);
                    stopwatch.start();
                    for i in 0..iterations / 2 + half {
                        core::hint::black_box(i);
                    }
                    stopwatch.stop();
                }
                Ok(())
            })
            .unwrap();
        assert!(calls >= 4, "calibration and samples each call the workload");
        assert!(measurement.iterations > 1 && measurement.ticks().iter().all(|&t| t > 0));
        // Two sections per sample, each the increase between its own two
        // reads (5); the untimed reads in between are left out.
        let counters: std::vec::Vec<_> = measurement.counters().collect();
        assert_eq!(counters, [("reads", 3 * 2 * 5)]);
    }

    #[test]
    fn sections_stop_at_the_first_error() {
        let config = Config { sample_count: 3, min_sample_ns: 100_000 };
        let mut calls = 0;
        let result = measure_sections::<Fake>(Unit::NanosPerOp, &config, |_, _| {
            calls += 1;
            Err(String::from("broken"))
        });
        assert_eq!(result.unwrap_err(), "broken");
        assert_eq!(calls, 1);
    }

    #[test]
    fn sections_that_time_nothing_are_an_error_not_a_hang() {
        let config = Config { sample_count: 1, min_sample_ns: 1_000_000 };
        let result = measure_sections::<Fake>(Unit::NanosPerOp, &config, |_, _| Ok(()));
        assert!(result.unwrap_err().contains("times nothing"));
    }
}
