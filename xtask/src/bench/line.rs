//! The benchmark programs' output, parsed: `BENCH {json}` result lines and
//! `# FAILED figure: reason` lines (the format is defined once, in the
//! `bench` crate's `harness` module; both builds print it).
//!
//! Every figure is recomputed here from the raw TSC ticks, in `f64` on the
//! host: the Ridgeback build is soft-float, and one conversion in one
//! place keeps the two systems' figures comparable by construction. The
//! value each program printed is kept only to check against.

use serde_json::Value;

/// Prefix of a result line.
pub const BENCH_PREFIX: &str = "BENCH ";
/// Prefix of a line reporting a figure that could not be measured
/// (`bench::harness::FAILED_PREFIX`).
pub const FAILED_PREFIX: &str = "# FAILED ";

/// Whether a smaller or a larger figure is better, from the unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Time per operation (`ns/op`, `ns/roundtrip`).
    Lower,
    /// Bandwidth (`MB/s`).
    Higher,
}

pub fn better_for(unit: &str) -> Better {
    if unit.ends_with("/s") { Better::Higher } else { Better::Lower }
}

/// Nanoseconds in the time part of a time unit: `ns/op` 1, `ms/job` 10^6
/// (`bench::harness::Unit::MillisecondsPerJob`), `s/...` 10^9.
pub fn time_unit_ns(unit: &str) -> f64 {
    match unit.split('/').next() {
        Some("us" | "µs") => 1e3,
        Some("ms") => 1e6,
        Some("s") => 1e9,
        _ => 1.0,
    }
}

/// One `BENCH` line: one figure of one boot.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub name: String,
    pub unit: String,
    /// Workload iterations per sample.
    pub iterations: u64,
    /// TSC ticks per second in the guest.
    pub tsc_hz: u64,
    /// TSC ticks of each sample.
    pub ticks: Vec<u64>,
    /// Bytes one iteration moves (bandwidth units only).
    pub bytes_per_op: u64,
    /// The kernel's counters over all samples (empty on Linux).
    pub counters: Vec<(String, u64)>,
    /// The samples as the program computed them (`null` becomes NaN).
    pub reported_samples: Vec<f64>,
}

impl Figure {
    /// Parses the JSON after `BENCH `.
    pub fn from_json(value: &Value) -> Result<Figure, String> {
        let text =
            |key: &str| value[key].as_str().map(str::to_string).ok_or_else(|| format!("no string \"{key}\""));
        let number = |key: &str| value[key].as_u64().ok_or_else(|| format!("no whole number \"{key}\""));
        let name = text("name")?;
        let ticks: Vec<u64> = value["ticks"]
            .as_array()
            .ok_or("no \"ticks\" array")?
            .iter()
            .map(|t| t.as_u64().ok_or("a tick count is not a whole number"))
            .collect::<Result<_, _>>()?;
        let reported_samples = value["samples"]
            .as_array()
            .map(|samples| samples.iter().map(|s| s.as_f64().unwrap_or(f64::NAN)).collect())
            .unwrap_or_default();
        let counters = match &value["counters"] {
            Value::Object(map) => map.iter().filter_map(|(k, v)| Some((k.clone(), v.as_u64()?))).collect(),
            _ => Vec::new(),
        };
        let figure = Figure {
            unit: text("unit")?,
            iterations: number("iterations")?,
            tsc_hz: number("tsc_hz")?,
            ticks,
            bytes_per_op: value["bytes_per_op"].as_u64().unwrap_or(0),
            counters,
            reported_samples,
            name,
        };
        if figure.ticks.is_empty() || figure.tsc_hz == 0 || figure.iterations == 0 {
            return Err(format!("{}: no samples, no TSC rate or no iterations", figure.name));
        }
        if figure.ticks.contains(&0) {
            return Err(format!("{}: a sample took 0 ticks", figure.name));
        }
        if better_for(&figure.unit) == Better::Higher && figure.bytes_per_op == 0 {
            return Err(format!("{}: a bandwidth without bytes_per_op", figure.name));
        }
        Ok(figure)
    }

    /// Back to the JSON it was read from (less the printed samples'
    /// rounding: they are written as computed here).
    pub fn to_json(&self) -> Value {
        let counters: serde_json::Map<String, Value> =
            self.counters.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect();
        serde_json::json!({
            "name": self.name,
            "unit": self.unit,
            "iterations": self.iterations,
            "tsc_hz": self.tsc_hz,
            "ticks": self.ticks,
            "bytes_per_op": self.bytes_per_op,
            "counters": counters,
            "samples": self.values(),
        })
    }

    /// Each sample in the figure's unit, computed from its ticks.
    pub fn values(&self) -> Vec<f64> {
        self.ticks
            .iter()
            .map(|&ticks| {
                let elapsed_ns = ticks as f64 * 1e9 / self.tsc_hz as f64;
                match better_for(&self.unit) {
                    Better::Lower => elapsed_ns / self.iterations as f64 / time_unit_ns(&self.unit),
                    // bytes / (ns / 1e9) / 1e6 = bytes * 1e3 / ns
                    Better::Higher => (self.bytes_per_op * self.iterations) as f64 * 1e3 / elapsed_ns,
                }
            })
            .collect()
    }

    /// A counter's value over all samples, if the system has it.
    pub fn counter(&self, name: &str) -> Option<u64> {
        self.counters.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    /// Operations timed: every iteration of every sample.
    pub fn operations(&self) -> u64 {
        self.iterations * self.ticks.len() as u64
    }

    /// True when the program's own samples agree with [`Figure::values`]
    /// to 0.1 % (they differ only by rounding).
    pub fn agrees_with_reported(&self) -> bool {
        let values = self.values();
        values.len() == self.reported_samples.len()
            && values
                .iter()
                .zip(&self.reported_samples)
                .all(|(mine, theirs)| (mine - theirs).abs() <= 1e-3 * mine.abs().max(theirs.abs()) + 1e-3)
    }
}

/// What one boot's programs printed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    pub figures: Vec<Figure>,
    /// `(figure, reason)` from `# FAILED` lines.
    pub failures: Vec<(String, String)>,
    /// `BENCH` lines that did not parse, with why.
    pub malformed: Vec<String>,
}

/// Parses a boot's serial output. Result lines must start their line (the
/// programs write each as one write); a `\r` is ignored.
pub fn parse_output(text: &str) -> Output {
    let mut output = Output::default();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(json) = line.strip_prefix(BENCH_PREFIX) {
            let parsed = serde_json::from_str::<Value>(json)
                .map_err(|e| e.to_string())
                .and_then(|value| Figure::from_json(&value));
            match parsed {
                Ok(figure) => output.figures.push(figure),
                Err(why) => output.malformed.push(format!("{why}: {line}")),
            }
        } else if let Some(rest) = line.strip_prefix(FAILED_PREFIX) {
            let (figure, reason) = rest.split_once(": ").unwrap_or((rest, "(no reason given)"));
            output.failures.push((figure.to_string(), reason.to_string()));
        }
    }
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    const RIDGEBACK_LINE: &str = r#"BENCH {"name":"getpid","unit":"ns/op","value":776.879,"samples":[789.051,776.879,761.388],"iterations":16722,"tsc_hz":2602631200,"ticks":[34340462,33810686,33136506],"bytes_per_op":0,"counters":{"kernel_calls":50167,"interrupts":8,"context_switches":0}}"#;

    #[test]
    fn parses_a_ridgeback_line_and_recomputes_its_samples() {
        let output = parse_output(&format!("noise\n{RIDGEBACK_LINE}\r\n# a comment\n"));
        assert_eq!(output.malformed, Vec::<String>::new());
        let [figure] = output.figures.as_slice() else { panic!("one figure expected") };
        assert_eq!(figure.name, "getpid");
        assert_eq!(figure.unit, "ns/op");
        assert_eq!(figure.iterations, 16722);
        assert_eq!(figure.ticks, [34340462, 33810686, 33136506]);
        assert_eq!(figure.counter("kernel_calls"), Some(50167));
        assert_eq!(figure.counter("cow_copies"), None);
        assert_eq!(figure.operations(), 3 * 16722);
        let values = figure.values();
        assert!((values[0] - 789.051).abs() < 0.01, "{values:?}");
        assert!(figure.agrees_with_reported());
    }

    #[test]
    fn bandwidth_is_recomputed_from_bytes_and_ticks() {
        // 4096 bytes x 1000 iterations in 4096 ticks of a 1 GHz clock:
        // 4 096 000 bytes in 4.096 µs = 1e6 MB/s.
        let line = r#"BENCH {"name":"copy_4KiB","unit":"MB/s","value":1,"samples":[1],"iterations":1000,"tsc_hz":1000000000,"ticks":[4096],"bytes_per_op":4096,"counters":{}}"#;
        let figure = &parse_output(line).figures[0];
        assert!((figure.values()[0] - 1e6).abs() < 1e-6);
        assert!(!figure.agrees_with_reported());
        assert_eq!(better_for(&figure.unit), Better::Higher);
        assert_eq!(better_for("ns/roundtrip"), Better::Lower);
    }

    #[test]
    fn milliseconds_per_job_are_recomputed_in_milliseconds() {
        // One job of 250 ms at 2 GHz (500 M ticks), CPU time in ns (1 GHz).
        let line = r#"BENCH {"name":"d_brd_1job","unit":"ms/job","value":250,"samples":[250],"iterations":1,"tsc_hz":2000000000,"ticks":[500000000],"bytes_per_op":0,"counters":{}}"#;
        let figure = &parse_output(line).figures[0];
        assert_eq!(figure.values(), [250.0]);
        assert!(figure.agrees_with_reported());
        assert_eq!(better_for("ms/job"), Better::Lower);
        assert_eq!((time_unit_ns("ns/op"), time_unit_ns("ms/job"), time_unit_ns("s/x")), (1.0, 1e6, 1e9));
    }

    #[test]
    fn a_linux_line_has_no_counters() {
        let line = r#"BENCH {"name":"pipe_pingpong_32B_1cpu","unit":"ns/roundtrip","value":4569.533,"samples":[4523.472],"iterations":2679,"tsc_hz":2596090356,"ticks":[31460416],"bytes_per_op":0,"counters":{}}"#;
        let figure = &parse_output(line).figures[0];
        assert!(figure.counters.is_empty());
        assert!(figure.agrees_with_reported());
    }

    #[test]
    fn failures_and_malformed_lines_are_kept() {
        let text = "# FAILED yield: the peer did not run\n\
                    # FAILED options\n\
                    BENCH {not json\n\
                    BENCH {\"name\":\"x\",\"unit\":\"ns/op\",\"iterations\":0,\"tsc_hz\":1,\"ticks\":[1]}\n\
                    BENCH {\"name\":\"y\",\"unit\":\"MB/s\",\"iterations\":1,\"tsc_hz\":1,\"ticks\":[1]}\n\
                    BENCH {\"name\":\"z\",\"unit\":\"ns/op\",\"iterations\":1,\"tsc_hz\":1,\"ticks\":[0]}\n\
                    not BENCH {} at the start\n";
        let output = parse_output(text);
        assert!(output.figures.is_empty());
        assert_eq!(
            output.failures,
            [
                ("yield".to_string(), "the peer did not run".to_string()),
                ("options".to_string(), "(no reason given)".to_string())
            ]
        );
        assert_eq!(output.malformed.len(), 4, "{:?}", output.malformed);
        assert!(output.malformed[2].contains("bytes_per_op"));
    }

    #[test]
    fn figures_round_trip_through_json() {
        let figure = parse_output(RIDGEBACK_LINE).figures.remove(0);
        let again = Figure::from_json(&figure.to_json()).unwrap();
        assert_eq!(again.ticks, figure.ticks);
        assert_eq!(again.counters, figure.counters);
        assert_eq!(again.values(), figure.values());
    }
}
