//! The results of a suite run: every figure of every boot, grouped into
//! series (one figure of one system over all runs), their statistics, the
//! rows of the table, and the JSON file that keeps all of it.
//!
//! Statistics: a series' value is the median of all its samples (every
//! sample of every run); its spread is the interquartile range of those
//! same samples over their median, `(Q3 - Q1) / median`, so it covers both
//! the noise inside one boot and the drift between boots, without letting
//! one sample slowed down by another tenant of a shared host decide it
//! (the minimum and maximum are in the JSON file). A row's ratio compares
//! the two systems' medians.

use std::path::Path;

use serde_json::{Value, json};

use super::catalogue::{self, Row};
use super::line::{Better, Figure, better_for};

/// Version of the JSON layout; `--compare` refuses other versions.
pub const FORMAT: &str = "ridgeback-bench 1";

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum System {
    Ridgeback,
    Linux,
}

impl System {
    pub fn name(self) -> &'static str {
        match self {
            System::Ridgeback => "ridgeback",
            System::Linux => "linux",
        }
    }

    fn from_name(name: &str) -> Option<System> {
        [System::Ridgeback, System::Linux].into_iter().find(|s| s.name() == name)
    }
}

pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 { sorted[middle] } else { (sorted[middle - 1] + sorted[middle]) / 2.0 }
}

/// The `q` quantile (0..=1), interpolating linearly between the two
/// nearest values (the usual "type 7" definition).
pub fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let position = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (below, fraction) = (position.floor() as usize, position.fract());
    match sorted.get(below + 1) {
        Some(above) => sorted[below] + fraction * (above - sorted[below]),
        None => sorted[below],
    }
}

/// `(Q3 - Q1) / median`; 0 for a single value.
pub fn spread(values: &[f64]) -> f64 {
    (quantile(values, 0.75) - quantile(values, 0.25)) / median(values)
}

/// How many times faster Ridgeback is: Linux time / Ridgeback time for
/// time units, Ridgeback MB/s / Linux MB/s for bandwidths. Above 1 means
/// Ridgeback is faster.
pub fn speed_ratio(unit: &str, ridgeback: f64, linux: f64) -> f64 {
    match better_for(unit) {
        Better::Lower => linux / ridgeback,
        Better::Higher => ridgeback / linux,
    }
}

/// One figure of one system, over every run that measured it.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub system: System,
    pub name: String,
    pub unit: String,
    /// One per run, in run order.
    pub runs: Vec<Figure>,
}

impl Series {
    pub fn values(&self) -> Vec<f64> {
        self.runs.iter().flat_map(Figure::values).collect()
    }

    pub fn median(&self) -> f64 {
        median(&self.values())
    }

    pub fn spread(&self) -> f64 {
        spread(&self.values())
    }

    /// The first and third quartiles of all samples.
    pub fn quartiles(&self) -> (f64, f64) {
        let values = self.values();
        (quantile(&values, 0.25), quantile(&values, 0.75))
    }

    pub fn run_medians(&self) -> Vec<f64> {
        self.runs.iter().map(|f| median(&f.values())).collect()
    }

    /// Each kernel counter's increase per timed operation, over all runs.
    pub fn counters_per_op(&self) -> Vec<(String, f64)> {
        let operations: u64 = self.runs.iter().map(Figure::operations).sum();
        let mut names: Vec<&str> = Vec::new();
        for figure in &self.runs {
            for (name, _) in &figure.counters {
                if !names.contains(&name.as_str()) {
                    names.push(name);
                }
            }
        }
        names
            .into_iter()
            .map(|name| {
                let total: u64 = self.runs.iter().filter_map(|f| f.counter(name)).sum();
                (name.to_string(), total as f64 / operations.max(1) as f64)
            })
            .collect()
    }

    pub fn counter_per_op(&self, name: &str) -> Option<f64> {
        self.counters_per_op().into_iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    fn to_json(&self) -> Value {
        let counters: serde_json::Map<String, Value> =
            self.counters_per_op().into_iter().map(|(k, v)| (k, json!(v))).collect();
        json!({
            "system": self.system.name(),
            "name": self.name,
            "unit": self.unit,
            "median": finite(self.median()),
            "spread": finite(self.spread()),
            "min": finite(self.values().into_iter().fold(f64::INFINITY, f64::min)),
            "max": finite(self.values().into_iter().fold(f64::NEG_INFINITY, f64::max)),
            "run_medians": self.run_medians().into_iter().map(finite).collect::<Vec<_>>(),
            "counters_per_op": counters,
            "runs": self.runs.iter().map(Figure::to_json).collect::<Vec<_>>(),
        })
    }

    fn from_json(value: &Value) -> Result<Series, String> {
        let system =
            value["system"].as_str().and_then(System::from_name).ok_or("a figure without a system")?;
        let name = value["name"].as_str().ok_or("a figure without a name")?.to_string();
        let runs = value["runs"]
            .as_array()
            .ok_or_else(|| format!("{name}: no runs"))?
            .iter()
            .map(Figure::from_json)
            .collect::<Result<Vec<_>, _>>()?;
        let unit = value["unit"].as_str().ok_or_else(|| format!("{name}: no unit"))?.to_string();
        Ok(Series { system, name, unit, runs })
    }
}

/// JSON has no NaN: a missing figure is `null`.
fn finite(value: f64) -> Value {
    if value.is_finite() { json!(value) } else { Value::Null }
}

/// How the run was made: everything needed to repeat it or to tell two
/// runs apart.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// UTC, ISO 8601.
    pub date: String,
    pub git_revision: String,
    /// The work tree had uncommitted changes.
    pub is_git_dirty: bool,
    pub host_cpu: String,
    pub host_cpus: usize,
    pub qemu_version: String,
    pub accel: String,
    pub is_icount: bool,
    pub smp: u32,
    pub mem: String,
    /// The machine-shaping QEMU arguments both systems booted with.
    pub machine_args: Vec<String>,
    pub is_quick: bool,
    pub runs: u32,
    pub samples: usize,
    pub sample_ms: u64,
    /// Groups measured (`--only`), by name.
    pub groups: Vec<String>,
    /// Ridgeback only (`--ridgeback-only`, or `--icount`'s restriction).
    pub is_ridgeback_only: bool,
    /// What the Linux guest said about itself (`GUEST kernel ...`,
    /// `GUEST vulnerability ...`: its release and its CPU-bug mitigations).
    pub linux_guest: Vec<String>,
}

impl Meta {
    fn to_json(&self) -> Value {
        json!({
            "date": self.date,
            "git_revision": self.git_revision,
            "git_dirty": self.is_git_dirty,
            "host_cpu": self.host_cpu,
            "host_cpus": self.host_cpus,
            "qemu_version": self.qemu_version,
            "accelerator": self.accel,
            "icount": self.is_icount,
            "smp": self.smp,
            "mem": self.mem,
            "machine_args": self.machine_args,
            "quick": self.is_quick,
            "runs": self.runs,
            "samples": self.samples,
            "sample_ms": self.sample_ms,
            "groups": self.groups,
            "ridgeback_only": self.is_ridgeback_only,
            "linux_guest": self.linux_guest,
        })
    }

    fn from_json(value: &Value) -> Meta {
        let text = |key: &str| value[key].as_str().unwrap_or("").to_string();
        let number = |key: &str| value[key].as_u64().unwrap_or(0);
        let flag = |key: &str| value[key].as_bool().unwrap_or(false);
        let words = |key: &str| -> Vec<String> {
            value[key]
                .as_array()
                .map(|a| a.iter().filter_map(|w| Some(w.as_str()?.to_string())).collect())
                .unwrap_or_default()
        };
        Meta {
            date: text("date"),
            git_revision: text("git_revision"),
            is_git_dirty: flag("git_dirty"),
            host_cpu: text("host_cpu"),
            host_cpus: number("host_cpus") as usize,
            qemu_version: text("qemu_version"),
            accel: text("accelerator"),
            is_icount: flag("icount"),
            smp: number("smp") as u32,
            mem: text("mem"),
            machine_args: words("machine_args"),
            is_quick: flag("quick"),
            runs: number("runs") as u32,
            samples: number("samples") as usize,
            sample_ms: number("sample_ms"),
            groups: words("groups"),
            is_ridgeback_only: flag("ridgeback_only"),
            linux_guest: words("linux_guest"),
        }
    }
}

/// One boot of either system.
#[derive(Clone, Debug, PartialEq)]
pub struct Boot {
    pub system: System,
    /// 1-based run number.
    pub run: u32,
    /// What the boot measured, e.g. `smp2` or `cpus=1`.
    pub label: String,
    /// The full QEMU command line.
    pub command_line: String,
    pub elapsed_s: f64,
    /// Figures it produced.
    pub figures: usize,
    pub is_ok: bool,
}

impl Boot {
    fn to_json(&self) -> Value {
        json!({
            "system": self.system.name(),
            "run": self.run,
            "label": self.label,
            "command_line": self.command_line,
            "elapsed_s": self.elapsed_s,
            "figures": self.figures,
            "ok": self.is_ok,
        })
    }

    fn from_json(value: &Value) -> Option<Boot> {
        Some(Boot {
            system: System::from_name(value["system"].as_str()?)?,
            run: value["run"].as_u64()? as u32,
            label: value["label"].as_str()?.to_string(),
            command_line: value["command_line"].as_str()?.to_string(),
            elapsed_s: value["elapsed_s"].as_f64()?,
            figures: value["figures"].as_u64()? as usize,
            is_ok: value["ok"].as_bool()?,
        })
    }
}

/// A row of the table with its figures looked up.
pub struct TableRow<'a> {
    pub row: Row,
    pub ridgeback: Option<&'a Series>,
    pub linux: Option<&'a Series>,
    /// The Linux figure measured on Ridgeback (the row's third column).
    pub linuxbin: Option<&'a Series>,
}

impl TableRow<'_> {
    pub fn unit(&self) -> &str {
        self.ridgeback.or(self.linux).map_or("", |s| s.unit.as_str())
    }

    /// How many times faster the Linux program runs on Linux than on
    /// Ridgeback (the same binary on both kernels; [`speed_ratio`] with
    /// Ridgeback's side the Linux program there).
    pub fn linuxbin_ratio(&self) -> Option<f64> {
        let (on_ridgeback, linux) = (self.linuxbin?, self.linux?);
        Some(speed_ratio(&on_ridgeback.unit, on_ridgeback.median(), linux.median()))
    }

    /// See [`speed_ratio`]; `None` unless both figures exist.
    pub fn ratio(&self) -> Option<f64> {
        let (ridgeback, linux) = (self.ridgeback?, self.linux?);
        Some(speed_ratio(&ridgeback.unit, ridgeback.median(), linux.median()))
    }
}

/// Everything a run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Results {
    pub meta: Meta,
    pub boots: Vec<Boot>,
    pub series: Vec<Series>,
    /// What went wrong: failed boots, figures that failed or are missing.
    pub problems: Vec<String>,
}

impl Results {
    pub fn new(meta: Meta) -> Results {
        Results { meta, boots: Vec::new(), series: Vec::new(), problems: Vec::new() }
    }

    /// Adds one boot's figures to their series.
    pub fn add_figures(&mut self, system: System, figures: Vec<Figure>) {
        for figure in figures {
            match self.series.iter_mut().find(|s| s.system == system && s.name == figure.name) {
                Some(series) => series.runs.push(figure),
                None => self.series.push(Series {
                    system,
                    name: figure.name.clone(),
                    unit: figure.unit.clone(),
                    runs: vec![figure],
                }),
            }
        }
    }

    pub fn series(&self, system: System, name: &str) -> Option<&Series> {
        self.series.iter().find(|s| s.system == system && s.name == name)
    }

    /// The catalogue's rows for this run's configuration and groups, with
    /// their figures (rows of groups not measured are left out).
    pub fn table_rows(&self) -> Vec<TableRow<'_>> {
        catalogue::rows(self.meta.smp.max(1))
            .into_iter()
            .filter(|row| {
                self.meta.groups.is_empty() || self.meta.groups.iter().any(|g| g == row.group.name())
            })
            .map(|row| TableRow {
                ridgeback: self.series(System::Ridgeback, &row.ridgeback),
                linux: self.series(System::Linux, &row.linux),
                linuxbin: row.linuxbin.as_ref().and_then(|name| self.series(System::Ridgeback, name)),
                row,
            })
            .collect()
    }

    /// Rows whose figure is missing on a system that was measured, except
    /// figures whose failure is already a problem (`figure X failed`).
    pub fn missing_figures(&self) -> Vec<String> {
        // Problems name their boot first: `run N ridgeback LABEL: ...`,
        // `run N linux: ...` (see `take_output`).
        let has_failed = |system: System, figure: &str| {
            let said = format!("figure {figure} failed");
            let (boot, alone) = (format!(" {} ", system.name()), format!(" {}:", system.name()));
            self.problems.iter().any(|p| p.contains(&said) && (p.contains(&boot) || p.contains(&alone)))
        };
        let mut missing = Vec::new();
        for table_row in self.table_rows() {
            if table_row.ridgeback.is_none() && !has_failed(System::Ridgeback, &table_row.row.ridgeback) {
                missing.push(format!(
                    "ridgeback figure {} (row {}) is missing",
                    table_row.row.ridgeback, table_row.row.key
                ));
            }
            if let Some(name) = &table_row.row.linuxbin
                && table_row.linuxbin.is_none()
                && !has_failed(System::Ridgeback, name)
            {
                missing.push(format!(
                    "ridgeback figure {name} (row {}, the Linux program) is missing",
                    table_row.row.key
                ));
            }
            if table_row.linux.is_none()
                && !self.meta.is_ridgeback_only
                && !has_failed(System::Linux, &table_row.row.linux)
            {
                missing.push(format!(
                    "linux figure {} (row {}) is missing",
                    table_row.row.linux, table_row.row.key
                ));
            }
        }
        missing.dedup();
        missing
    }

    pub fn to_json(&self) -> Value {
        let rows: Vec<Value> = self
            .table_rows()
            .iter()
            .map(|r| {
                json!({
                    "key": r.row.key,
                    "label": r.row.label,
                    "unit": r.unit(),
                    "ridgeback_figure": r.row.ridgeback,
                    "linux_figure": r.row.linux,
                    "ridgeback": r.ridgeback.map(|s| finite(s.median())),
                    "ridgeback_spread": r.ridgeback.map(|s| finite(s.spread())),
                    "linux": r.linux.map(|s| finite(s.median())),
                    "linux_spread": r.linux.map(|s| finite(s.spread())),
                    "speed_ratio": r.ratio().map(finite),
                    "linuxbin_figure": r.row.linuxbin,
                    "linuxbin": r.linuxbin.map(|s| finite(s.median())),
                    "linuxbin_spread": r.linuxbin.map(|s| finite(s.spread())),
                    "seeds": r.row.seeds.iter().map(|seed| json!({
                        "source": seed.source,
                        "as_published": seed.as_published,
                        "value": seed.value,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "format": FORMAT,
            "speed_ratio_means": "how many times faster Ridgeback is than Linux: Linux time / Ridgeback time, \
                                  or Ridgeback MB/s / Linux MB/s; above 1 means Ridgeback is faster",
            "spread_means": "(Q3 - Q1) / median over every sample of every run (interquartile range)",
            "meta": self.meta.to_json(),
            "rows": rows,
            "figures": self.series.iter().map(Series::to_json).collect::<Vec<_>>(),
            "boots": self.boots.iter().map(Boot::to_json).collect::<Vec<_>>(),
            "problems": self.problems,
        })
    }

    pub fn from_json(value: &Value) -> Result<Results, String> {
        if value["format"].as_str() != Some(FORMAT) {
            return Err(format!("not a `{FORMAT}` file (format: {})", value["format"]));
        }
        let series = value["figures"]
            .as_array()
            .ok_or("no figures")?
            .iter()
            .map(Series::from_json)
            .collect::<Result<Vec<_>, _>>()?;
        let boots = value["boots"]
            .as_array()
            .map(|b| b.iter().filter_map(Boot::from_json).collect())
            .unwrap_or_default();
        let problems = value["problems"]
            .as_array()
            .map(|p| p.iter().filter_map(|s| Some(s.as_str()?.to_string())).collect())
            .unwrap_or_default();
        Ok(Results { meta: Meta::from_json(&value["meta"]), boots, series, problems })
    }

    pub fn load(path: &Path) -> Result<Results, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let value: Value =
            serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        Results::from_json(&value).map_err(|e| format!("{}: {e}", path.display()))
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A figure whose samples take `ticks` at 1 GHz over 1000 iterations
    /// (so `ticks / 1000` ns per operation).
    pub fn figure(name: &str, unit: &str, ticks: &[u64], counters: &[(&str, u64)]) -> Figure {
        Figure {
            name: name.to_string(),
            unit: unit.to_string(),
            iterations: 1000,
            tsc_hz: 1_000_000_000,
            ticks: ticks.to_vec(),
            bytes_per_op: if unit == "MB/s" { 4096 } else { 0 },
            counters: counters.iter().map(|&(n, v)| (n.to_string(), v)).collect(),
            reported_samples: Vec::new(),
        }
    }

    pub fn meta() -> Meta {
        Meta {
            date: "2025-01-02T03:04:05Z".to_string(),
            git_revision: "abc123".to_string(),
            is_git_dirty: true,
            host_cpu: "AMD EPYC".to_string(),
            host_cpus: 2,
            qemu_version: "QEMU emulator version 7.2.22".to_string(),
            accel: "tcg".to_string(),
            is_icount: false,
            smp: 2,
            mem: "512M".to_string(),
            machine_args: ["-m", "512M", "-smp", "2", "-accel", "tcg", "-cpu", "max"]
                .map(String::from)
                .to_vec(),
            is_quick: false,
            runs: 2,
            samples: 3,
            sample_ms: 50,
            groups: vec!["getpid".to_string(), "copy".to_string()],
            is_ridgeback_only: false,
            linux_guest: vec!["GUEST kernel 6.1.0-56-amd64 cpus 2".to_string()],
        }
    }

    /// Two runs of getpid on both systems and one copy figure on Ridgeback.
    pub fn sample_results() -> Results {
        let mut results = Results::new(meta());
        let counters = [("kernel_calls", 3003), ("context_switches", 0)];
        results.add_figures(
            System::Ridgeback,
            vec![
                figure("getpid", "ns/op", &[800_000, 790_000, 810_000], &counters),
                figure("copy_4KiB", "MB/s", &[20_000, 20_000, 20_000], &[]),
                // The Linux program on Ridgeback: the getpid row's third column.
                figure("getpid_linuxbin", "ns/op", &[4_000_000, 4_000_000, 4_000_000], &[]),
            ],
        );
        results.add_figures(
            System::Linux,
            vec![figure("getpid", "ns/op", &[1_000_000, 1_100_000, 900_000], &[])],
        );
        results.add_figures(
            System::Ridgeback,
            vec![figure("getpid", "ns/op", &[700_000, 800_000, 900_000], &counters)],
        );
        results.add_figures(
            System::Linux,
            vec![figure("getpid", "ns/op", &[1_000_000, 1_000_000, 1_000_000], &[])],
        );
        results.boots.push(Boot {
            system: System::Ridgeback,
            run: 1,
            label: "smp2".to_string(),
            command_line: "qemu-system-x86_64 -m 512M".to_string(),
            elapsed_s: 1.5,
            figures: 2,
            is_ok: true,
        });
        results
    }

    #[test]
    fn statistics() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(quantile(&[4.0, 1.0, 3.0, 2.0], 0.25), 1.75);
        assert_eq!(quantile(&[4.0, 1.0, 3.0, 2.0], 1.0), 4.0);
        assert_eq!(spread(&[90.0, 100.0, 110.0]), 0.1);
        // One far outlier barely moves it.
        assert_eq!(spread(&[90.0, 95.0, 100.0, 105.0, 10_000.0]), 0.1);
        assert_eq!(spread(&[5.0]), 0.0);
        // Time: Linux slower means Ridgeback faster (> 1); bandwidth the other way.
        assert_eq!(speed_ratio("ns/op", 100.0, 250.0), 2.5);
        assert_eq!(speed_ratio("MB/s", 100.0, 250.0), 0.4);
    }

    #[test]
    fn series_pool_runs_and_count_per_operation() {
        let results = sample_results();
        let getpid = results.series(System::Ridgeback, "getpid").unwrap();
        assert_eq!(getpid.runs.len(), 2);
        assert_eq!(getpid.values().len(), 6);
        assert_eq!(getpid.median(), 800.0);
        assert_eq!(getpid.run_medians(), [800.0, 800.0]);
        // Samples 700 790 800 800 810 900: Q1 = 792.5, Q3 = 807.5.
        assert!((getpid.spread() - 15.0 / 800.0).abs() < 1e-12);
        // 2 x 3003 kernel calls over 2 x 3 x 1000 operations.
        assert!((getpid.counter_per_op("kernel_calls").unwrap() - 1.001).abs() < 1e-12);
        assert_eq!(getpid.counter_per_op("cow_copies"), None);
    }

    #[test]
    fn rows_pair_the_systems_and_report_what_is_missing() {
        let results = sample_results();
        let rows = results.table_rows();
        let keys: Vec<&str> = rows.iter().map(|r| r.row.key.as_str()).collect();
        assert_eq!(keys, ["getpid", "copy_4KiB", "copy_1MiB"], "only the groups measured");
        assert_eq!(rows[0].ratio(), Some(1000.0 / 800.0));
        assert_eq!(rows[0].row.linuxbin.as_deref(), Some("getpid_linuxbin"));
        assert_eq!(rows[0].linuxbin_ratio(), Some(1000.0 / 4000.0), "the same binary: Linux over Ridgeback");
        assert_eq!((rows[1].row.linuxbin.as_deref(), rows[1].linuxbin_ratio()), (None, None));
        assert_eq!(rows[1].ratio(), None);
        assert_eq!(rows[1].unit(), "MB/s");
        let missing = results.missing_figures();
        assert_eq!(missing.len(), 3, "{missing:?}");
        let mut without_linuxbin = results.clone();
        without_linuxbin.series.retain(|s| s.name != "getpid_linuxbin");
        let missing_linuxbin = without_linuxbin.missing_figures();
        assert!(missing_linuxbin[0].contains("ridgeback figure getpid_linuxbin"), "{missing_linuxbin:?}");
        assert!(missing[0].contains("linux figure copy_4KiB"));
        // A figure that failed, with its reason, is not said to be missing too.
        let mut results = results;
        results.problems.push("run 1 ridgeback smp2: figure copy_1MiB failed: no memory".to_string());
        let missing = results.missing_figures();
        assert_eq!(missing.len(), 2, "{missing:?}");
        assert!(missing.iter().all(|m| !m.contains("ridgeback figure copy_1MiB")));
    }

    #[test]
    fn results_round_trip_through_json() {
        let results = sample_results();
        let text = serde_json::to_string_pretty(&results.to_json()).unwrap();
        let again = Results::from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(again.meta, results.meta);
        assert_eq!(again.boots, results.boots);
        assert_eq!(again.series.len(), results.series.len());
        for (a, b) in again.series.iter().zip(&results.series) {
            assert_eq!((a.system, &a.name, &a.unit), (b.system, &b.name, &b.unit));
            assert_eq!(a.values(), b.values());
        }
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["rows"][0]["speed_ratio"], json!(1.25));
        assert_eq!(value["rows"][1]["linux"], Value::Null);
        assert!(Results::from_json(&json!({"format": "other"})).is_err());
    }
}
