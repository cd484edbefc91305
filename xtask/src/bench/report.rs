//! The text a person reads: the table of Ridgeback against Linux, the
//! kernel counters that explain Ridgeback's figures, the seeds' historical
//! figures, and the comparison of two runs (`--compare`).

use std::fmt::Write;

use super::catalogue::{
    D_LINUX_DEVICES, Group, N_MODES, P_COPY, P_COPY_CHECKSUM, SEED_000, SEED_002, SEED_003, SEED_004,
    b_figure, b_linux_figure, b_rk_figure, b_rk_linux_figure, d_figure, n_cpu_counts, p_figure,
};
use super::line::{Better, better_for};
use super::results::{self, Results, Series, System};

/// A figure with 3–4 significant digits, no exponent.
pub fn number(value: f64) -> String {
    if !value.is_finite() {
        return "-".to_string();
    }
    let magnitude = value.abs();
    if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else if magnitude >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

/// The unit as shown: under `-icount shift=0` a guest nanosecond is one
/// instruction, so `ns/op` reads `instr/op` (and `ms/job`, `Minstr/job`).
pub fn shown_unit(unit: &str, is_icount: bool) -> String {
    match (unit.strip_prefix("ns/"), unit.strip_prefix("ms/")) {
        (Some(per), _) if is_icount => format!("instr/{per}"),
        (_, Some(per)) if is_icount => format!("Minstr/{per}"),
        _ => unit.to_string(),
    }
}

fn percent(fraction: f64) -> String {
    if fraction.is_finite() { format!("{:.1}%", fraction * 100.0) } else { "-".to_string() }
}

fn ratio(value: Option<f64>) -> String {
    match value {
        Some(r) if r.is_finite() => format!("{}x", number(r)),
        _ => "-".to_string(),
    }
}

/// The heading: what was measured, on what, and how to read the ratio.
pub fn heading(results: &Results) -> String {
    let meta = &results.meta;
    let mut text = String::new();
    let systems = if meta.is_ridgeback_only { "Ridgeback (Linux not run)" } else { "Ridgeback vs Linux" };
    let _ = writeln!(
        text,
        "{systems}, same QEMU machine: {}{}",
        meta.machine_args.join(" "),
        if meta.is_icount {
            " (icount: 1 TSC tick = 1 instruction; times are instruction counts)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        text,
        "{} run(s) x {} samples of >= {} ms each{}; {}; {}",
        meta.runs,
        meta.samples,
        meta.sample_ms,
        if meta.is_quick { " (--quick: a smoke test, not a measurement)" } else { "" },
        meta.qemu_version,
        meta.date
    );
    let _ = writeln!(
        text,
        "ratio = how many times faster Ridgeback is: Linux time / Ridgeback time, or Ridgeback MB/s / Linux MB/s \
         (>1: Ridgeback faster, <1: Linux faster)"
    );
    let _ = writeln!(text, "spread = interquartile range / median, over every sample of every run");
    let _ = writeln!(
        text,
        "Linux bin = the Linux program (the static executable the Linux guest runs) on Ridgeback, through the \
         Linux server; bin ratio = ratio for it: the same binary on Ridgeback against Linux (<1: slower on Ridgeback)"
    );
    text
}

/// The main table: one line per row of the catalogue.
pub fn table(results: &Results) -> String {
    let rows = results.table_rows();
    let label_width = rows.iter().map(|r| r.row.label.len()).max().unwrap_or(9).max(9);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{:<label_width$}  {:<15}  {:>10}  {:>6}  {:>10}  {:>6}  {:>7}  {:>10}  {:>9}",
        "benchmark", "unit", "Ridgeback", "spread", "Linux", "spread", "ratio", "Linux bin", "bin ratio"
    );
    let _ = writeln!(text, "{}", "-".repeat(label_width + 89));
    let value = |series: Option<&Series>| series.map_or("-".to_string(), |s| number(s.median()));
    let spread = |series: Option<&Series>| series.map_or("-".to_string(), |s| percent(s.spread()));
    for row in &rows {
        let _ = writeln!(
            text,
            "{:<label_width$}  {:<15}  {:>10}  {:>6}  {:>10}  {:>6}  {:>7}  {:>10}  {:>9}",
            row.row.label,
            shown_unit(row.unit(), results.meta.is_icount),
            value(row.ridgeback),
            spread(row.ridgeback),
            value(row.linux),
            spread(row.linux),
            ratio(row.ratio()),
            value(row.linuxbin),
            ratio(row.linuxbin_ratio()),
        );
    }
    text
}

/// The kernel counters per operation, for each Ridgeback figure of the
/// table, in the order of the rows.
pub fn counters(results: &Results) -> String {
    const COLUMNS: [(&str, &str); 10] = [
        ("kernel_calls", "entries"),
        ("context_switches", "switches"),
        ("address_space_switches", "CR3"),
        ("interrupts", "irqs"),
        ("exceptions", "faults"),
        ("messages", "msgs"),
        ("direct_handoffs", "handoffs"),
        ("pages_loaned", "loans"),
        ("cow_copies", "COW"),
        ("bytes_copied", "bytes"),
    ];
    let mut names: Vec<&str> = Vec::new();
    for row in results.table_rows() {
        if let Some(series) = row.ridgeback
            && !names.contains(&series.name.as_str())
        {
            names.push(&series.name);
        }
    }
    let series: Vec<&Series> = names.iter().filter_map(|n| results.series(System::Ridgeback, n)).collect();
    if series.iter().all(|s| s.counters_per_op().is_empty()) {
        return String::new();
    }
    let width = series.iter().map(|s| s.name.len()).max().unwrap_or(6).max(6);
    let mut text = String::from(
        "Ridgeback kernel counters per operation (over the timed samples; machine-wide, so timer\n\
         interrupts and the other CPUs' activity are included):\n",
    );
    let _ = write!(text, "{:<width$}", "figure");
    for (_, heading) in COLUMNS {
        let _ = write!(text, "  {heading:>8}");
    }
    text.push('\n');
    for s in series {
        let _ = write!(text, "{:<width$}", s.name);
        for (counter, _) in COLUMNS {
            let cell = s.counter_per_op(counter).map_or("-".to_string(), number);
            let _ = write!(text, "  {cell:>8}");
        }
        text.push('\n');
    }
    text
}

/// The seeds' historical figures next to today's. They are times (or
/// rates), so an `--icount` run, whose figures are instruction counts,
/// leaves them out and says so: a time converted into instructions would
/// be a figure nobody measured (issue 16).
pub fn seeds(results: &Results) -> String {
    let mut text = String::new();
    if results.meta.is_icount {
        let count: usize = results.table_rows().iter().map(|row| row.row.seeds.len()).sum();
        if count > 0 {
            let _ = writeln!(
                text,
                "Historical figures from the seeds: {count} left out of this --icount run: they are times, \
                 and its figures are instruction counts (run without --icount to compare with them)."
            );
        }
        return text;
    }
    for row in results.table_rows() {
        for seed in &row.row.seeds {
            if text.is_empty() {
                text.push_str("Historical figures from the seeds (docs/benchmarks.md):\n");
            }
            let unit = shown_unit(row.unit(), results.meta.is_icount);
            let _ = write!(
                text,
                "  {}: {} measured {} = {} {unit}",
                row.row.label,
                seed.source,
                seed.as_published,
                number(seed.value)
            );
            if let Some(series) = row.ridgeback {
                // Faster is a lower time but a higher bandwidth.
                let speed = results::speed_ratio(row.unit(), series.median(), seed.value);
                let _ = write!(text, "; Ridgeback here is {} as fast", ratio(Some(speed)));
            }
            text.push('\n');
        }
    }
    text
}

/// Everything printed after a run.
pub fn full(results: &Results) -> String {
    let mut text = heading(results);
    text.push('\n');
    text.push_str(&table(results));
    let counters = counters(results);
    if !counters.is_empty() {
        text.push('\n');
        text.push_str(&counters);
    }
    let seeds = seeds(results);
    if !seeds.is_empty() {
        text.push('\n');
        text.push_str(&seeds);
    }
    let seed_000 = seed_000(results);
    if !seed_000.is_empty() {
        text.push('\n');
        text.push_str(&seed_000);
    }
    let seed_002 = seed_002(results);
    if !seed_002.is_empty() {
        text.push('\n');
        text.push_str(&seed_002);
    }
    for section in [seed_004(results), seed_004_rk(results), r2_disk(results), seed_003(results)] {
        if !section.is_empty() {
            text.push('\n');
            text.push_str(&section);
        }
    }
    text
}

/// Seed 004's curve with this run's B figures beside it (when B was
/// measured): V1's time per `nbuf` and its speedup over one buffer fewer,
/// Ridgeback's the same, Linux's one figure; the shape the issue asks for
/// as measured facts.
pub fn seed_004(results: &Results) -> String {
    b_curve(results, Group::B, b_figure, b_linux_figure, "")
}

/// The same for the `rk` disk's figures (`--only brk`).
pub fn seed_004_rk(results: &Results) -> String {
    let disk = format!(
        "On the rk disk: nbdkit serves the image one request at a time, each after {} ms \
         (--only brk, figures b_rk_nbufN)\n",
        bench::b::RK_ACCESS_MS
    );
    b_curve(results, Group::BRk, b_rk_figure, b_rk_linux_figure, &disk)
}

/// Seed 004's table beside `group`'s figures (`figure(nbuf)`), with `disk`
/// (a line saying which disk, or nothing) after the heading.
fn b_curve(
    results: &Results,
    group: Group,
    figure: fn(u32) -> String,
    linux_figure: fn() -> String,
    disk: &str,
) -> String {
    if !results.meta.groups.iter().any(|g| g == group.name()) {
        return String::new();
    }
    let median = |system: System, name: &str| results.series(system, name).map(Series::median);
    let spread = |name: &str| results.series(System::Ridgeback, name).map(Series::spread);
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{} ms", number(v)));
    let gain = |previous: Option<f64>, now: Option<f64>| {
        previous.zip(now).map_or(String::new(), |(p, n)| format!("{:+.1}%", (p / n - 1.0) * 100.0))
    };
    let mut text = String::from(
        "B, seed 004 (UNIX V1's I/O buffers): the time to \"assemble the kernel\" (V1's two-pass as:\n\
         20 sources, 200 KiB, read 512 bytes a call with CPU work on each, an 80 KiB token file written\n\
         and read back, a 36,432-byte a.out written as two streams of 512-byte records) against nbuf,\n\
         each job from a cold cache; speedup = faster than one row up\n",
    );
    text.push_str(disk);
    let _ = writeln!(
        text,
        "{:>5}  {:>12}  {:>8}  {:>12}  {:>7}  {:>8}",
        "nbuf", "V1 as u*.s", "speedup", "Ridgeback", "spread", "speedup"
    );
    let (mut seed_before, mut ours_before) = (None, None);
    let mut ours = Vec::new();
    for (nbuf, seed) in SEED_004 {
        let seed_ms = seed.map(|s| s.value);
        let now = median(System::Ridgeback, &figure(nbuf));
        ours.push((nbuf, now));
        let _ = writeln!(
            text,
            "{nbuf:>5}  {:>12}  {:>8}  {:>12}  {:>7}  {:>8}",
            ms(seed_ms),
            gain(seed_before, seed_ms),
            ms(now),
            spread(&figure(nbuf)).map_or("-".to_string(), percent),
            gain(ours_before, now),
        );
        (seed_before, ours_before) = (seed_ms, now);
    }
    if !results.meta.is_ridgeback_only {
        let _ = writeln!(
            text,
            "Linux (ext2, its page cache, dropped before each job; {}): {}",
            linux_figure(),
            ms(median(System::Linux, &linux_figure()))
        );
    }
    let at = |n: u32| ours.iter().find(|(nbuf, _)| *nbuf == n).and_then(|(_, v)| *v);
    let times = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b);
    let shown = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{}x", number(r)));
    text.push_str("Shape (measured, not asserted):\n");
    let one_over_two = times(at(1), at(2));
    let _ = writeln!(
        text,
        "  nbuf=1 more than 2x slower than nbuf=2 (V1: 2.46x): {}, {}",
        shown(one_over_two),
        verdict(one_over_two.map(|r| r > 2.0))
    );
    let late = [times(at(4), at(5)), times(at(5), at(6))];
    let late_met = late[0].zip(late[1]).map(|(a, b)| a < 1.10 && b < 1.10);
    let _ = writeln!(
        text,
        "  gains falling off by 5-6, each under 10% (V1: 6.3%, 1.5%): {}, {}, {}",
        gain(at(4), at(5)),
        gain(at(5), at(6)),
        verdict(late_met)
    );
    text
}

/// R2 on disk against Linux, row by row, with the target (each row
/// at least 1.0x Linux) as a measured fact.
pub fn r2_disk(results: &Results) -> String {
    if !results.meta.groups.iter().any(|g| g == Group::R2Disk.name()) || results.meta.is_ridgeback_only {
        return String::new();
    }
    let mut text =
        String::from("R2 on ext2 on virtio-blk, target each row >= 1.0x Linux (measured, not asserted):\n");
    for row in results.table_rows().iter().filter(|r| r.row.group == Group::R2Disk) {
        let ratio_value = row.ratio();
        let _ = writeln!(
            text,
            "  {:<44} {:>8}, {}",
            row.row.label,
            ratio(ratio_value),
            verdict(ratio_value.map(|r| r >= 1.0))
        );
    }
    text
}

/// "met", "not met" or "not measured".
fn verdict(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "not met",
        None => "not measured",
    }
}

/// Seed 002's table with this run's P figures beside it (when P was
/// measured): MB/s of each design on one CPU and on all, Linux's plain
/// pipe and vmsplice, the copy limit; the shape as ratios; the issue's
/// targets as measured facts; and Ridgeback's kernel counters per MB moved,
/// which say why a target is missed.
pub fn seed_002(results: &Results) -> String {
    if !results.meta.groups.iter().any(|g| g == "p") {
        return String::new();
    }
    let smp = results.meta.smp;
    let multi = format!("{smp}cpu");
    let mut cpus = vec![("1cpu", "1cpu", "1 CPU".to_string())];
    if smp > 1 {
        cpus.push((multi.as_str(), "2cpu", format!("{smp} CPUs")));
    }
    let median = |system: System, name: &str| results.series(system, name).map(Series::median);
    let mbs = |value: Option<f64>| value.map_or("-".to_string(), number);
    let mut text = String::from(
        "P, seed 002 (NetBSD's loaned pipes, 2001): lmbench bw_pipe, 64 KiB writes, a forked reader\n\
         checksums every byte; MB/s\n",
    );
    let _ = writeln!(
        text,
        "{:<34}  {:>10}  {:>10}  {:>10}  {:>14}",
        "", "old pipes", "new pipes", "loan", "loan+overwrite"
    );
    for (index, machine) in ["NetBSD Pentium III/600", "NetBSD 386DX"].iter().enumerate() {
        let cells = SEED_002.map(|d| number(d.seeds[index].value));
        let _ = writeln!(
            text,
            "{machine:<34}  {:>10}  {:>10}  {:>10}  {:>14}",
            cells[0], cells[1], cells[2], "-"
        );
    }
    for (ridgeback, _, shown) in &cpus {
        let cells = SEED_002.map(|d| mbs(median(System::Ridgeback, &p_figure(d.design, false, ridgeback))));
        let overwrite = mbs(median(System::Ridgeback, &p_figure("loan", true, ridgeback)));
        let label = format!("Ridgeback pipe=small|big|loan, {shown}");
        let _ = writeln!(
            text,
            "{label:<34}  {:>10}  {:>10}  {:>10}  {overwrite:>14}",
            cells[0], cells[1], cells[2]
        );
    }
    if !results.meta.is_ridgeback_only {
        let _ = writeln!(text, "{:<34}  {:>10}  {:>10}  {:>10}", "", "pipe", "vmsplice", "pipe+overwrite");
        for (_, linux, shown) in &cpus {
            let cell = |design: &str, overwrite: bool| {
                mbs(median(System::Linux, &p_figure(design, overwrite, linux)))
            };
            let label = format!("Linux, {shown}");
            let _ = writeln!(
                text,
                "{label:<34}  {:>10}  {:>10}  {:>10}",
                cell("pipe", false),
                cell("vmsplice", false),
                cell("pipe", true)
            );
        }
    }
    let limit = |system: System| (median(system, P_COPY), median(system, P_COPY_CHECKSUM));
    let (copy, copy_checksum) = limit(System::Ridgeback);
    let _ = write!(text, "Limit, one process: byte copy {} (Ridgeback)", mbs(copy));
    let (linux_copy, linux_copy_checksum) = limit(System::Linux);
    if !results.meta.is_ridgeback_only {
        let _ = write!(text, ", {} (Linux)", mbs(linux_copy));
    }
    let _ = write!(text, "; copy + checksum {} (Ridgeback)", mbs(copy_checksum));
    if !results.meta.is_ridgeback_only {
        let _ = write!(text, ", {} (Linux)", mbs(linux_copy_checksum));
    }
    text.push('\n');

    // The shape: new pipes over old, the loan over new pipes.
    let times = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b);
    let shown = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{}x", number(r)));
    text.push_str("Shape (big/small, loan/big):");
    for (index, machine) in ["PIII", "386DX"].iter().enumerate() {
        let [small, big, loan] = SEED_002.map(|d| Some(d.seeds[index].value));
        let _ = write!(text, " {machine} {} {};", shown(times(big, small)), shown(times(loan, big)));
    }
    let design = |name: &str, ridgeback: &str| median(System::Ridgeback, &p_figure(name, false, ridgeback));
    for (ridgeback, _, label) in &cpus {
        let (small, big, loan) =
            (design("small", ridgeback), design("big", ridgeback), design("loan", ridgeback));
        let _ = write!(text, " Ridgeback {label} {} {};", shown(times(big, small)), shown(times(loan, big)));
    }
    text.pop();
    text.push('\n');

    text.push_str("Targets (measured, not asserted):\n");
    let fact = |what: String, value: Option<f64>, met: Option<bool>| {
        format!("  {what}: {}, {}\n", shown(value), verdict(met))
    };
    if smp > 1 {
        let loan = design("loan", &multi);
        if !results.meta.is_ridgeback_only {
            let pipe = median(System::Linux, &p_figure("pipe", false, "2cpu"));
            let splice = median(System::Linux, &p_figure("vmsplice", false, "2cpu"));
            let over_pipe = times(loan, pipe);
            let over_splice = times(loan, splice);
            text.push_str(&fact(
                format!("loan >= 3x Linux plain pipe, {smp} CPUs"),
                over_pipe,
                over_pipe.map(|r| r >= 3.0),
            ));
            text.push_str(&fact(
                format!("loan >= 1.5x Linux vmsplice, {smp} CPUs"),
                over_splice,
                over_splice.map(|r| r >= 1.5),
            ));
        }
    }
    for (ridgeback, _, label) in &cpus {
        let (small, big, loan) =
            (design("small", ridgeback), design("big", ridgeback), design("loan", ridgeback));
        let in_order = match (small, big, loan) {
            (Some(s), Some(b), Some(l)) => Some(s < b && b < l),
            _ => None,
        };
        let _ = writeln!(
            text,
            "  small < big < loan, {label}: {} < {} < {} MB/s, {}",
            mbs(small),
            mbs(big),
            mbs(loan),
            verdict(in_order)
        );
        let distance = times(copy, loan);
        text.push_str(&fact(
            format!("loan within 2x of the byte-copy limit (copy / loan), {label}"),
            distance,
            distance.map(|d| d <= 2.0),
        ));
    }

    // Counters per MB (10^6 bytes) moved: an operation is one pass.
    const COLUMNS: [(&str, &str); 8] = [
        ("kernel_calls", "calls"),
        ("context_switches", "switches"),
        ("address_space_switches", "CR3"),
        ("messages", "msgs"),
        ("exceptions", "faults"),
        ("pages_loaned", "loans"),
        ("cow_copies", "COW"),
        ("bytes_copied", "copied/B"),
    ];
    let mut names = Vec::new();
    for (ridgeback, _, _) in &cpus {
        for d in &SEED_002 {
            names.push(p_figure(d.design, false, ridgeback));
        }
        names.push(p_figure("loan", true, ridgeback));
    }
    let series: Vec<&Series> = names.iter().filter_map(|n| results.series(System::Ridgeback, n)).collect();
    if series.iter().any(|s| !s.counters_per_op().is_empty()) {
        text.push_str(
            "Ridgeback kernel counters per MB moved (machine-wide; copied/B = bytes the kernel copied per byte\n\
             through the pipe):\n",
        );
        let _ = write!(text, "{:<24}", "figure");
        for (_, heading) in COLUMNS {
            let _ = write!(text, "  {heading:>8}");
        }
        text.push('\n');
        for s in series {
            let bytes_per_op = s.runs.iter().map(|f| f.bytes_per_op).max().unwrap_or(0) as f64;
            if bytes_per_op == 0.0 {
                continue;
            }
            let _ = write!(text, "{:<24}", s.name);
            for (counter, heading) in COLUMNS {
                let per_op = s.counter_per_op(counter);
                let cell = match (per_op, heading) {
                    (Some(v), "copied/B") => number(v / bytes_per_op),
                    (Some(v), _) => number(v / (bytes_per_op / 1e6)),
                    (None, _) => "-".to_string(),
                };
                let _ = write!(text, "  {cell:>8}");
            }
            text.push('\n');
        }
    }
    text
}

/// A time of seed 000's table as the seed writes it, `m:ss.cc`.
fn minutes(ms: f64) -> String {
    let centiseconds = (ms / 10.0).round() as u64;
    format!("{}:{:02}.{:02}", centiseconds / 6000, centiseconds / 100 % 60, centiseconds % 100)
}

/// Seed 000's table with this run's D figures beside it (when D was
/// measured): each device's time per job, alone and as one of five jobs
/// at once, elapsed and CPU; then the shape the seed shows, as ratios.
pub fn seed_000(results: &Results) -> String {
    if !results.meta.groups.iter().any(|g| g == "d") {
        return String::new();
    }
    let jobs = ["1job", "5jobs"];
    // Medians in ms, [1 job elapsed, 1 job CPU, 5 jobs elapsed, 5 jobs CPU].
    let medians = |system: System, device: &str| -> [Option<f64>; 4] {
        let at = |index: usize| {
            let figure = d_figure(device, jobs[index / 2], index % 2 == 1);
            results.series(system, &figure).map(Series::median)
        };
        [at(0), at(1), at(2), at(3)]
    };
    let seconds = |ms: Option<f64>| ms.map_or("-".to_string(), |ms| format!("{} s", number(ms / 1e3)));
    let mut text = String::from(
        "D, seed 000 (the VMS RAMDRIVER note, 1988): time per job of the program (2000 passes of a\n\
         32 KiB read and write on a 64 KiB region); 5 jobs: five at once, the median job\n",
    );
    let _ =
        writeln!(text, "{:<36}  {:>10}  {:>10}  {:>10}  {:>10}", "device", "1 job", "CPU", "5 jobs", "CPU");
    let mut line = |label: &str, cells: [String; 4]| {
        let _ = writeln!(
            text,
            "{label:<36}  {:>10}  {:>10}  {:>10}  {:>10}",
            cells[0], cells[1], cells[2], cells[3]
        );
    };
    for device in &SEED_000 {
        let [one, one_cpu] = device.one_job;
        let [five, five_cpu] = device.five_jobs;
        line(&format!("VMS {}", device.label), [one, one_cpu, five, five_cpu].map(|s| minutes(s.value)));
    }
    let ridgeback_label = |device: &'static str| match device {
        "virtio" => "virtio-blk",
        "pddriver" => "RAM disk, PDDRIVER mode",
        "ramdriver" => "RAM disk, RAMDRIVER mode",
        other => other,
    };
    for device in &SEED_000 {
        let cells = medians(System::Ridgeback, device.ridgeback).map(seconds);
        line(&format!("Ridgeback {}", ridgeback_label(device.ridgeback)), cells);
    }
    if !results.meta.is_ridgeback_only {
        for (device, label) in D_LINUX_DEVICES {
            line(&format!("Linux {label}"), medians(System::Linux, device).map(seconds));
        }
    }
    // The shape: PDDRIVER slower than the disk, RAMDRIVER several times
    // faster than both, the gap wider with five jobs.
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => format!("{}x", number(a / b)),
        _ => "-".to_string(),
    };
    let seed = |index: usize| -> [Option<f64>; 4] {
        let device = &SEED_000[index];
        [device.one_job[0], device.one_job[1], device.five_jobs[0], device.five_jobs[1]]
            .map(|s| Some(s.value))
    };
    let shape = |disk: [Option<f64>; 4], pd: [Option<f64>; 4], ram: [Option<f64>; 4]| {
        format!(
            "PDDRIVER/disk {} and {}; PDDRIVER/RAMDRIVER {} and {}; 5 jobs/1 job: disk {}, PDDRIVER {}, RAMDRIVER {}",
            ratio(pd[0], disk[0]),
            ratio(pd[2], disk[2]),
            ratio(pd[0], ram[0]),
            ratio(pd[2], ram[2]),
            ratio(disk[2], disk[0]),
            ratio(pd[2], pd[0]),
            ratio(ram[2], ram[0]),
        )
    };
    text.push_str(
        "Shape, elapsed time per job (1 job and 5 jobs):
",
    );
    let _ = writeln!(text, "  VMS:       {}", shape(seed(0), seed(1), seed(2)));
    let _ = writeln!(
        text,
        "  Ridgeback: {}",
        shape(
            medians(System::Ridgeback, "virtio"),
            medians(System::Ridgeback, "pddriver"),
            medians(System::Ridgeback, "ramdriver")
        )
    );
    if !results.meta.is_ridgeback_only {
        let (virtio, brd, tmpfs) = (
            medians(System::Linux, "virtio"),
            medians(System::Linux, "brd"),
            medians(System::Linux, "tmpfs"),
        );
        let _ = writeln!(
            text,
            "  Linux:     virtio/brd {} and {}; tmpfs/brd {} and {}; 5 jobs/1 job: virtio {}, brd {}, tmpfs {}",
            ratio(virtio[0], brd[0]),
            ratio(virtio[2], brd[2]),
            ratio(tmpfs[0], brd[0]),
            ratio(tmpfs[2], brd[2]),
            ratio(virtio[2], virtio[0]),
            ratio(brd[2], brd[0]),
            ratio(tmpfs[2], tmpfs[0]),
        );
    }
    text.push_str(&d_targets(results, &medians));
    text
}

/// The targets for D, as measured facts ("met" or "not met"), never
/// as assertions: RAMDRIVER at least 5 times PDDRIVER with one job and more
/// with five; RAMDRIVER at least Linux's brd with O_DIRECT; five jobs on
/// two vCPUs at most 3 times one job each; Ridgeback's virtio-blk at least
/// Linux's with O_DIRECT.
fn d_targets(results: &Results, medians: &dyn Fn(System, &str) -> [Option<f64>; 4]) -> String {
    let mut text = String::from("Targets (faster = less time per job; measured, not asserted):\n");
    let speedup = |slow: Option<f64>, fast: Option<f64>| slow.zip(fast).map(|(s, f)| s / f);
    let fact = |what: String, value: Option<f64>, met: Option<bool>| {
        let measured = value.map_or("-".to_string(), |v| format!("{}x", number(v)));
        let verdict = match met {
            Some(true) => "met",
            Some(false) => "not met",
            None => "not measured",
        };
        format!("  {what}: {measured}, {verdict}\n")
    };
    let (pd, ram, virtio) = (
        medians(System::Ridgeback, "pddriver"),
        medians(System::Ridgeback, "ramdriver"),
        medians(System::Ridgeback, "virtio"),
    );
    let one = speedup(pd[0], ram[0]);
    let five = speedup(pd[2], ram[2]);
    text.push_str(&fact("RAMDRIVER >= 5x PDDRIVER, 1 job".into(), one, one.map(|r| r >= 5.0)));
    text.push_str(&fact(
        "RAMDRIVER over PDDRIVER, 5 jobs, more than with 1".into(),
        five,
        five.zip(one).map(|(f, o)| f > o),
    ));
    for (jobs, index) in [("1 job", 0), ("5 jobs", 2)] {
        if !results.meta.is_ridgeback_only {
            let brd = medians(System::Linux, "brd");
            let r = speedup(brd[index], ram[index]);
            text.push_str(&fact(
                format!("RAMDRIVER >= 1.0x Linux brd O_DIRECT, {jobs}"),
                r,
                r.map(|r| r >= 1.0),
            ));
        }
    }
    for (name, m) in [("RAMDRIVER", ram), ("PDDRIVER", pd), ("virtio-blk", virtio)] {
        let growth = speedup(m[2], m[0]);
        text.push_str(&fact(
            format!("{name}: 5 jobs each <= 3x 1 job (5 jobs / 1 job)"),
            growth,
            growth.map(|g| g <= 3.0),
        ));
    }
    if !results.meta.is_ridgeback_only {
        let linux = medians(System::Linux, "virtio");
        for (jobs, index) in [("1 job", 0), ("5 jobs", 2)] {
            let r = speedup(linux[index], virtio[index]);
            text.push_str(&fact(
                format!("virtio-blk >= 1.0x Linux O_DIRECT, {jobs}"),
                r,
                r.map(|r| r >= 1.0),
            ));
        }
    }
    text
}

/// How much faster `new` is than `old` (positive: faster), whatever the unit.
fn speed_change(unit: &str, old: f64, new: f64) -> f64 {
    match better_for(unit) {
        Better::Lower => old / new - 1.0,
        Better::Higher => new / old - 1.0,
    }
}

/// `--compare A B`: every figure present in both runs, and the ratios.
/// A change smaller than the larger of the two spreads is marked as noise.
pub fn compare(a: &Results, b: &Results, a_name: &str, b_name: &str) -> String {
    let mut text = String::new();
    for (tag, name, results) in [("A", a_name, a), ("B", b_name, b)] {
        let meta = &results.meta;
        let _ = writeln!(
            text,
            "{tag}: {name}: {} rev {}{}, {}, {}",
            meta.date,
            meta.git_revision,
            if meta.is_git_dirty { "+dirty" } else { "" },
            meta.machine_args.join(" "),
            if meta.is_quick { "quick" } else { "full" }
        );
    }
    if a.meta.machine_args != b.meta.machine_args {
        let _ = writeln!(text, "warning: the two runs used different QEMU machines; figures may not compare");
    }
    text.push_str(
        "change = how much faster B is than A (negative: slower); noise = within the larger spread\n\n",
    );
    let width = a.series.iter().chain(&b.series).map(|s| s.name.len()).max().unwrap_or(6).max(6);
    let _ = writeln!(
        text,
        "{:<9}  {:<width$}  {:<12}  {:>10}  {:>10}  {:>8}",
        "system", "figure", "unit", "A", "B", "change"
    );
    let mut only_in_one = Vec::new();
    for old in &a.series {
        let Some(new) = b.series(old.system, &old.name) else {
            only_in_one.push(format!("{} {} only in A", old.system.name(), old.name));
            continue;
        };
        let change = speed_change(&old.unit, old.median(), new.median());
        let noise = old.spread().max(new.spread());
        let verdict = if change.abs() <= noise {
            "noise"
        } else if change > 0.0 {
            "faster"
        } else {
            "slower"
        };
        let _ = writeln!(
            text,
            "{:<9}  {:<width$}  {:<12}  {:>10}  {:>10}  {:>+7.1}%  {verdict}",
            old.system.name(),
            old.name,
            old.unit,
            number(old.median()),
            number(new.median()),
            change * 100.0
        );
    }
    for new in &b.series {
        if a.series(new.system, &new.name).is_none() {
            only_in_one.push(format!("{} {} only in B", new.system.name(), new.name));
        }
    }
    let a_rows = a.table_rows();
    let b_rows = b.table_rows();
    let mut ratio_lines = String::new();
    for a_row in &a_rows {
        let Some(b_row) = b_rows.iter().find(|r| r.row.key == a_row.row.key) else { continue };
        if let (Some(old), Some(new)) = (a_row.ratio(), b_row.ratio()) {
            let _ = writeln!(
                ratio_lines,
                "  {:<48}  {:>8}  ->  {:>8}",
                a_row.row.label,
                ratio(Some(old)),
                ratio(Some(new))
            );
        }
    }
    if !ratio_lines.is_empty() {
        text.push_str("\nratio (Ridgeback speed / Linux speed), A -> B:\n");
        text.push_str(&ratio_lines);
    }
    if !only_in_one.is_empty() {
        let _ = writeln!(text, "\nnot compared: {}", only_in_one.join("; "));
    }
    text
}

/// Seed 003's table with this run's N figures beside it (when N was
/// measured): each row's throughput (transactions/s for `rr`, MB/s for
/// `stream`) in both modes and on Linux, scalable against classic, and
/// the lock statistics each Ridgeback figure carried (the mean over the
/// runs of the figure's whole interval: calibration and samples).
pub fn seed_003(results: &Results) -> String {
    if !results.meta.groups.iter().any(|g| g == Group::N.name()) {
        return String::new();
    }
    let smp = results.meta.smp;
    // Throughput, higher is better: rr figures are ns per transaction.
    let rate = |system: System, name: &str| {
        results.series(system, name).map(|s| if s.unit == "ns/op" { 1e9 / s.median() } else { s.median() })
    };
    let lock = |name: &str, counter: &str| -> Option<f64> {
        let series = results.series(System::Ridgeback, name)?;
        let values: Vec<u64> = series.runs.iter().filter_map(|f| f.counter(counter)).collect();
        (!values.is_empty()).then(|| values.iter().sum::<u64>() as f64 / values.len() as f64)
    };
    let shown = |v: Option<f64>| v.map_or("-".to_string(), number);
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |c| format!("{:.1}%", c / 100.0));
    let mut text = String::from(
        "N, seed 003 (the OpenVMS TCP/IP Scalable Kernel): TCP over loopback, rr = 32-byte\n\
         request/response in transactions/s, stream = MB/s, all clients together; lock statistics\n\
         of the stack's global lock over each figure (hold/spin % of all CPUs' time, locks/s,\n\
         the global lock's hold % of wall time):\n",
    );
    let _ = writeln!(
        text,
        "{:<28} {:>10} {:>10} {:>9} {:>8} {:>8} {:>9} {:>8}",
        "figure", "value", "Linux", "vs Linux", "hold%", "spin%", "locks/s", "global%"
    );
    let mut gains = String::new();
    for cpus in n_cpu_counts(smp) {
        for workload in ["rr", "stream"] {
            for clients in [1, 2, 4] {
                let linux_name = format!("n_{workload}_{clients}c_{cpus}cpu_linux");
                let linux = rate(System::Linux, &linux_name);
                for mode in N_MODES {
                    let name = format!("n_{workload}_{clients}c_{cpus}cpu_{mode}");
                    let value = rate(System::Ridgeback, &name);
                    let vs = value.zip(linux).map(|(r, l)| r / l);
                    let _ = writeln!(
                        text,
                        "{name:<28} {:>10} {:>10} {:>9} {:>8} {:>8} {:>9} {:>8}",
                        shown(value),
                        shown(linux),
                        ratio(vs),
                        pct(lock(&name, "lock_hold_all_centi")),
                        pct(lock(&name, "lock_spin_all_centi")),
                        shown(lock(&name, "locks_per_s")),
                        pct(lock(&name, "lock_global_hold_centi")),
                    );
                }
                let classic = rate(System::Ridgeback, &format!("n_{workload}_{clients}c_{cpus}cpu_classic"));
                let scalable =
                    rate(System::Ridgeback, &format!("n_{workload}_{clients}c_{cpus}cpu_scalable"));
                let _ = writeln!(
                    gains,
                    "  {workload} {clients}c {cpus}cpu: scalable / classic = {}",
                    ratio(scalable.zip(classic).map(|(s, c)| s / c))
                );
            }
        }
    }
    text.push_str("Scalable against classic (the seed: 30 % or more, i.e. >= 1.3x):\n");
    text.push_str(&gains);
    text.push_str("The seed's figures (classic -> scalable):\n");
    for (figure, classic, scalable) in SEED_003 {
        let _ = writeln!(text, "  {figure:<32} {classic:>10} -> {scalable}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::results::tests::{figure, sample_results};
    use super::*;

    #[test]
    fn the_rk_curve_is_its_own_section_from_its_own_figures() {
        let mut results = Results::new(super::super::results::tests::meta());
        results.meta.groups = vec!["brk".to_string()];
        let job = |name: &str, ms: u64| figure(name, "ms/job", &[ms * 1_000_000; 3], &[]);
        results.add_figures(System::Ridgeback, vec![job("b_rk_nbuf1", 3000), job("b_rk_nbuf2", 1000)]);
        assert_eq!(seed_004(&results), "", "no plain B figures were asked for");
        let text = seed_004_rk(&results);
        assert!(text.contains("On the rk disk"), "{text}");
        let row = |nbuf: &str| text.lines().find(|l| l.trim_start().starts_with(nbuf)).unwrap().to_string();
        assert!(row("1 ").contains("3215 ms") && !row("1 ").trim_end().ends_with('-'), "{text}");
        assert!(row("3 ").trim_end().ends_with('-'), "nbuf=3 was not measured: {text}");
        assert!(text.contains("nbuf=1 more than 2x slower than nbuf=2 (V1: 2.46x)"), "{text}");
    }

    #[test]
    fn numbers_keep_three_or_four_digits() {
        assert_eq!(number(19359.134), "19359");
        assert_eq!(number(123.44), "123");
        assert_eq!(number(12.345), "12.3");
        assert_eq!(number(1.2345), "1.23");
        assert_eq!(number(0.12345), "0.123");
        assert_eq!(number(f64::NAN), "-");
    }

    #[test]
    fn icount_figures_are_instructions() {
        assert_eq!(shown_unit("ns/roundtrip", true), "instr/roundtrip");
        assert_eq!(shown_unit("ns/op", false), "ns/op");
        assert_eq!(shown_unit("MB/s", true), "MB/s");
    }

    #[test]
    fn table_has_a_line_per_row_with_ratio_and_dashes_for_missing() {
        let text = table(&sample_results());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2 + 3, "{text}");
        assert!(lines[0].starts_with("benchmark") && lines[0].contains("ratio"));
        let getpid = lines[2];
        assert!(getpid.starts_with("getpid (one kernel entry)"), "{getpid}");
        assert!(getpid.contains("ns/op") && getpid.contains(" 800 ") && getpid.contains("1000"), "{getpid}");
        assert!(getpid.contains(" 1.25x ") && getpid.contains(" 4000 "), "{getpid}");
        assert!(getpid.trim_end().ends_with(" 0.250x"), "the Linux program's column: {getpid}");
        let copy: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(
            copy[copy.len() - 3..],
            ["-", "-", "-"],
            "no Linux copy figure, no third column: {}",
            lines[3]
        );
    }

    #[test]
    fn seed_000_table_shows_the_seed_beside_both_systems() {
        let mut results = sample_results();
        assert_eq!(seed_000(&results), "", "only when D was measured");
        results.meta.groups.push("d".to_string());
        // Linux brd: 100 ms and 5 ms of CPU for one job; 250 ms for five.
        let job = |name: &str, ms: &[u64]| {
            let ticks: Vec<u64> = ms.iter().map(|ms| ms * 1_000_000).collect();
            super::super::line::Figure { iterations: 1, ..figure(name, "ms/job", &ticks, &[]) }
        };
        results.add_figures(
            System::Linux,
            vec![
                job("d_brd_1job", &[100, 90, 110]),
                job("d_brd_1job_cpu", &[5, 5, 5]),
                job("d_brd_5jobs", &[240, 250, 260, 230, 270]),
                job("d_virtio_1job", &[850, 850, 850]),
            ],
        );
        let text = seed_000(&results);
        let line =
            |start: &str| text.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{text}"));
        let vms_disk = line("VMS RA81 disk on an HSC50");
        assert!(
            vms_disk.contains("6:06.84") && vms_disk.contains("0:33.54") && vms_disk.contains("20:40.20")
        );
        assert!(line("VMS RAMDRIVER").contains("6:03.99"), "{text}");
        let brd = line("Linux brd, O_DIRECT");
        assert!(brd.contains("0.100 s") && brd.contains("0.005 s") && brd.contains("0.250 s"), "{brd}");
        assert!(line("Ridgeback RAM disk, RAMDRIVER mode").trim_end().ends_with('-'), "missing: dashes");
        assert!(line("  VMS:").contains("PDDRIVER/disk 1.44x and 2.05x; PDDRIVER/RAMDRIVER 5.51x and 6.97x"));
        assert!(line("  Linux:").contains("virtio/brd 8.50x"), "{text}");
        assert!(line("  Ridgeback:").contains("PDDRIVER/disk - and -"));
        assert_eq!(minutes(527_220.0), "8:47.22");
        assert!(full(&results).contains("D, seed 000"));
    }

    #[test]
    fn seed_002_table_shows_the_seed_targets_and_counters_per_megabyte() {
        let mut results = sample_results();
        assert_eq!(seed_002(&results), "", "only when P was measured");
        results.meta.groups.push("p".to_string());
        // A pass of 4 MiB in 10 ms (1 GHz ticks): 419 MB/s; the loan twice that.
        let pass = |name: &str, ms: u64, counters: &[(&str, u64)]| super::super::line::Figure {
            iterations: 1,
            bytes_per_op: 4 << 20,
            ..figure(name, "MB/s", &[ms * 1_000_000; 3], counters)
        };
        results.add_figures(
            System::Ridgeback,
            vec![
                pass("p_small_2cpu", 40, &[]),
                pass("p_big_2cpu", 20, &[]),
                pass("p_loan_2cpu", 10, &[("pages_loaned", 3 * 1024), ("bytes_copied", 3 * (4 << 20))]),
                pass("p_copy", 4, &[]),
            ],
        );
        results
            .add_figures(System::Linux, vec![pass("p_pipe_2cpu", 40, &[]), pass("p_vmsplice_2cpu", 20, &[])]);
        let text = seed_002(&results);
        let line = |start: &str| {
            text.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{start}: {text}"))
        };
        assert!(line("NetBSD Pentium III/600").contains("487") && line("NetBSD 386DX").contains("4.70"));
        let two = line("Ridgeback pipe=small|big|loan, 2 CPUs");
        assert!(two.contains("105") && two.contains("210") && two.contains("419"), "{two}");
        assert!(line("  loan >= 3x Linux plain pipe, 2 CPUs").ends_with("4.00x, met"), "{text}");
        assert!(line("  loan >= 1.5x Linux vmsplice, 2 CPUs").ends_with("2.00x, met"), "{text}");
        assert!(line("  small < big < loan, 2 CPUs").ends_with(", met"), "{text}");
        assert!(line("  small < big < loan, 1 CPU").ends_with("not measured"), "{text}");
        assert!(
            line("  loan within 2x of the byte-copy limit (copy / loan), 2 CPUs").ends_with("2.50x, not met")
        );
        assert!(line("Shape").contains("PIII 1.00x 1.16x") && line("Shape").contains("2 CPUs 2.00x 2.00x"));
        // 1024 loans per 4 MiB pass = 244 per MB; 1 byte copied per byte.
        let cells: Vec<&str> = line("p_loan_2cpu").split_whitespace().collect();
        assert_eq!((cells[6], cells[8]), ("244", "1.00"), "{text}");
        assert!(full(&results).contains("P, seed 002"));
    }

    #[test]
    fn heading_says_which_way_the_ratio_goes() {
        let text = heading(&sample_results());
        assert!(text.contains("-m 512M -smp 2 -accel tcg -cpu max"));
        assert!(text.contains(">1: Ridgeback faster"));
    }

    #[test]
    fn counters_are_per_operation() {
        let text = counters(&sample_results());
        let getpid = text.lines().find(|l| l.starts_with("getpid")).unwrap();
        // 1.001 kernel entries, 0 switches, the rest not reported.
        let cells: Vec<&str> = getpid.split_whitespace().collect();
        assert_eq!(cells[..4], ["getpid", "1.00", "0.000", "-"]);
    }

    #[test]
    fn seeds_compare_with_today() {
        let text = seeds(&sample_results());
        assert!(
            text.contains("Ridge 32, 1985 measured 52 K/s = 19231 ns/op; Ridgeback here is 24.0x as fast"),
            "{text}"
        );
        assert!(text.contains("VAX 11/780 4.2BSD measured 5 K/s = 200000 ns/op"));
    }

    #[test]
    fn an_icount_run_leaves_the_seeds_times_out() {
        let mut results = sample_results();
        results.meta.is_icount = true;
        let text = seeds(&results);
        assert!(
            text.starts_with("Historical figures from the seeds: 2 left out of this --icount run"),
            "{text}"
        );
        assert!(!text.contains("instr/"), "{text}");
        assert!(!text.contains("measured"), "{text}");
    }

    #[test]
    fn compare_marks_changes_beyond_the_spread() {
        let a = sample_results();
        let mut b = sample_results();
        // Ridgeback's copy twice as fast: 20_000 -> 10_000 ticks.
        b.series[1].runs = vec![figure("copy_4KiB", "MB/s", &[10_000, 10_000, 10_000], &[])];
        // Linux getpid a little slower, well inside its 20 % spread.
        b.series[2].runs[0].ticks = vec![1_050_000, 1_150_000, 950_000];
        b.series.push(super::super::results::Series {
            system: System::Linux,
            name: "pipe".to_string(),
            unit: "ns/roundtrip".to_string(),
            runs: vec![figure("pipe", "ns/roundtrip", &[1], &[])],
        });
        let text = compare(&a, &b, "a.json", "b.json");
        let line = |name: &str, system: &str| {
            text.lines().find(|l| l.starts_with(system) && l.contains(name)).unwrap().to_string()
        };
        assert!(line("copy_4KiB", "ridgeback").contains("+100.0%  faster"), "{text}");
        assert!(line("getpid", "linux").ends_with("noise"), "{text}");
        assert!(line("getpid", "ridgeback").ends_with("noise"), "{text}");
        assert!(text.contains("linux pipe only in B"));
        assert!(text.contains("ratio (Ridgeback speed / Linux speed), A -> B"));
    }
}
