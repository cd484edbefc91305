//! The chart: one SVG file, written by hand (no dependency), that a
//! browser or an image viewer shows. One band per row of the table:
//! - left, the benchmark, its unit and the seeds' historical figures;
//! - middle, Ridgeback's and Linux's medians as two bars scaled to the
//!   larger of the two (each row has its own unit), with the values;
//! - right, the speed ratio on a logarithmic axis centred on 1: a bar to
//!   the right (green) where Ridgeback is faster, to the left (red) where
//!   Linux is.

use std::fmt::Write;

use super::report::number;
use super::results::Results;
use crate::qemu::QEMU_BINARY;

const WIDTH: f64 = 1100.0;
const ROW_HEIGHT: f64 = 46.0;
const TOP: f64 = 136.0;
const BARS_X: f64 = 420.0;
const BARS_WIDTH: f64 = 290.0;
const RATIO_CENTRE: f64 = 930.0;
/// Pixels per doubling of the ratio; the axis spans 1/16 to 16.
const RATIO_PX_PER_OCTAVE: f64 = 18.5;
const RATIO_OCTAVES: f64 = 4.0;
const RIDGEBACK_COLOUR: &str = "#b5422d";
const LINUX_COLOUR: &str = "#2f6fa6";
const FASTER_COLOUR: &str = "#2e7d32";
const SLOWER_COLOUR: &str = "#c62828";

/// Text safe inside an SVG element or attribute.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The ratio's bar end, clamped to the axis.
fn ratio_x(ratio: f64) -> f64 {
    RATIO_CENTRE + ratio.log2().clamp(-RATIO_OCTAVES, RATIO_OCTAVES) * RATIO_PX_PER_OCTAVE * 2.0
}

/// Width of `text` at font size 11, overestimated (no font metrics in a
/// hand-written SVG): 7 px a character.
fn label_width(text: &str) -> f64 {
    7.0 * text.chars().count() as f64
}

/// Where the ratio's label goes: past the bar's end, or, when it would
/// pass the chart's edge there (the largest ratios: issue 16 saw "14.0",
/// "18." and "27." cut off), inside the bar's end in white. Returns (x,
/// anchor, fill).
fn ratio_label_place(end: f64, ratio: f64, label: &str) -> (f64, &'static str, &'static str) {
    let width = label_width(label);
    if ratio >= 1.0 {
        if end + 4.0 + width <= WIDTH - 8.0 {
            (end + 4.0, "start", "black")
        } else {
            (end - 4.0, "end", "white")
        }
    } else if end - 4.0 - width >= 8.0 {
        (end - 4.0, "end", "black")
    } else {
        (end + 4.0, "start", "white")
    }
}

pub fn chart(results: &Results) -> String {
    let rows = results.table_rows();
    let meta = &results.meta;
    let height = TOP + ROW_HEIGHT * rows.len() as f64 + 76.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let title = if meta.is_ridgeback_only {
        "Ridgeback benchmarks"
    } else {
        "Ridgeback vs Linux in the same QEMU machine"
    };
    let _ =
        writeln!(svg, r#"<text x="16" y="28" font-size="20" font-weight="bold">{}</text>"#, escape(title));
    let revision: String = meta.git_revision.chars().take(12).collect();
    let subtitle = [
        format!(
            "{QEMU_BINARY} {}{}",
            meta.machine_args.join(" "),
            if meta.is_icount { " (icount: times are instruction counts)" } else { "" }
        ),
        format!(
            "{} | {} run(s) x {} samples{}",
            meta.qemu_version,
            meta.runs,
            meta.samples,
            if meta.is_quick { " (--quick smoke test)" } else { "" }
        ),
        format!(
            "{} | rev {revision}{} | host {} ({} CPUs)",
            meta.date,
            if meta.is_git_dirty { "+dirty" } else { "" },
            meta.host_cpu,
            meta.host_cpus
        ),
    ];
    for (index, line) in subtitle.iter().enumerate() {
        let _ = writeln!(
            svg,
            r##"<text x="16" y="{}" font-size="12" fill="#444">{}</text>"##,
            48 + 17 * index,
            escape(line)
        );
    }
    // Legend and column headings.
    let _ = writeln!(svg, r#"<rect x="{BARS_X}" y="102" width="12" height="12" fill="{RIDGEBACK_COLOUR}"/>"#);
    let _ = writeln!(svg, r#"<text x="{}" y="113" font-size="12">Ridgeback</text>"#, BARS_X + 16.0);
    let _ = writeln!(
        svg,
        r#"<rect x="{}" y="102" width="12" height="12" fill="{LINUX_COLOUR}"/>"#,
        BARS_X + 100.0
    );
    let _ = writeln!(svg, r#"<text x="{}" y="113" font-size="12">Linux</text>"#, BARS_X + 116.0);
    let _ = writeln!(
        svg,
        r#"<text x="{RATIO_CENTRE}" y="113" font-size="12" text-anchor="middle">speed ratio: &#8592; Linux faster | Ridgeback faster &#8594;</text>"#
    );
    // The ratio axis: gridlines at powers of 4.
    let bottom = TOP + ROW_HEIGHT * rows.len() as f64;
    for (ratio, label) in [(1.0 / 16.0, "1/16"), (0.25, "1/4"), (1.0, "1"), (4.0, "4"), (16.0, "16")] {
        let x = ratio_x(ratio);
        let (stroke, width) = if ratio == 1.0 { ("#000", 1.2) } else { ("#ccc", 0.8) };
        let _ = writeln!(
            svg,
            r#"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{bottom}" stroke="{stroke}" stroke-width="{width}"/>"#,
            TOP - 6.0
        );
        let _ = writeln!(
            svg,
            r##"<text x="{x:.1}" y="{}" font-size="10" text-anchor="middle" fill="#666">{label}</text>"##,
            TOP - 9.0
        );
    }
    for (index, row) in rows.iter().enumerate() {
        let top = TOP + ROW_HEIGHT * index as f64;
        if index % 2 == 0 {
            let _ = writeln!(
                svg,
                r##"<rect x="8" y="{top}" width="{}" height="{ROW_HEIGHT}" fill="#f4f4f4"/>"##,
                WIDTH - 16.0
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="16" y="{}" font-size="13">{}</text>"#,
            top + 18.0,
            escape(&row.row.label)
        );
        // Kept short: the label column is narrow. The text report converts
        // the seeds' figures to the row's unit.
        let mut note = super::report::shown_unit(row.unit(), meta.is_icount);
        for (index, seed) in row.row.seeds.iter().enumerate() {
            // Under icount the row's figures are instructions; the seeds'
            // stay what they are, times, and say so.
            let times = if meta.is_icount && index == 0 { "seeds' times: " } else { "" };
            let _ = write!(note, "; {times}{}: {}", seed.source, seed.as_published);
        }
        let _ = writeln!(
            svg,
            r##"<text x="16" y="{}" font-size="11" fill="#666">{}</text>"##,
            top + 35.0,
            escape(&note)
        );
        let values = [(row.ridgeback, RIDGEBACK_COLOUR, 6.0), (row.linux, LINUX_COLOUR, 24.0)];
        // Scaled to the largest third quartile, so every whisker fits.
        let largest = values
            .iter()
            .filter_map(|(series, _, _)| series.map(|s| s.quartiles().1.max(s.median())))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        for (series, colour, offset) in values {
            let y = top + offset;
            match series.filter(|s| s.median().is_finite() && largest > 0.0) {
                Some(series) => {
                    let value = series.median();
                    let length = (value / largest * BARS_WIDTH).max(1.0);
                    let _ = writeln!(
                        svg,
                        r#"<rect x="{BARS_X}" y="{y}" width="{length:.1}" height="15" fill="{colour}"/>"#
                    );
                    // The interquartile range, as a whisker across the bar's end.
                    let (q1, q3) = series.quartiles();
                    let (from, to) = (BARS_X + q1 / largest * BARS_WIDTH, BARS_X + q3 / largest * BARS_WIDTH);
                    let _ = writeln!(
                        svg,
                        r#"<line x1="{from:.1}" y1="{mid}" x2="{to:.1}" y2="{mid}" stroke="black" stroke-width="1.5"/>"#,
                        mid = y + 7.5
                    );
                    let _ = writeln!(
                        svg,
                        r#"<text x="{:.1}" y="{}" font-size="11">{}</text>"#,
                        BARS_X + length.max(to - BARS_X) + 4.0,
                        y + 12.0,
                        escape(&number(value))
                    );
                }
                None => {
                    let why = if colour == LINUX_COLOUR && meta.is_ridgeback_only {
                        "not run"
                    } else {
                        "not measured"
                    };
                    let _ = writeln!(
                        svg,
                        r##"<text x="{BARS_X}" y="{}" font-size="11" fill="#999">{why}</text>"##,
                        y + 12.0
                    );
                }
            }
        }
        if let Some(ratio) = row.ratio().filter(|r| r.is_finite() && *r > 0.0) {
            let end = ratio_x(ratio);
            let (x, width) = if end >= RATIO_CENTRE {
                (RATIO_CENTRE, end - RATIO_CENTRE)
            } else {
                (end, RATIO_CENTRE - end)
            };
            let colour = if ratio >= 1.0 { FASTER_COLOUR } else { SLOWER_COLOUR };
            let _ = writeln!(
                svg,
                r#"<rect x="{x:.1}" y="{}" width="{:.1}" height="16" fill="{colour}"/>"#,
                top + 15.0,
                width.max(1.0)
            );
            let label = format!("{}x", number(ratio));
            let (text_x, anchor, fill) = ratio_label_place(end, ratio, &label);
            let _ = writeln!(
                svg,
                r#"<text x="{text_x:.1}" y="{}" font-size="11" text-anchor="{anchor}" fill="{fill}">{}</text>"#,
                top + 28.0,
                escape(&label)
            );
        }
    }
    let footer = [
        "speed ratio = Linux time / Ridgeback time, or Ridgeback MB/s / Linux MB/s: above 1, Ridgeback is faster.",
        "Bars in a row share that row's unit: medians over every sample of every run, whiskers from the first to the third quartile.",
        "Emulated (TCG) figures: see docs/benchmarks.md for what emulation distorts.",
    ];
    for (index, line) in footer.iter().enumerate() {
        let _ = writeln!(
            svg,
            r##"<text x="16" y="{}" font-size="11" fill="#444">{}</text>"##,
            bottom + 22.0 + 16.0 * index as f64,
            escape(line)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::super::results::tests::sample_results;
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape(r#"a<b & "c">"#), "a&lt;b &amp; &quot;c&quot;&gt;");
    }

    #[test]
    fn ratio_axis_is_logarithmic_and_clamped() {
        assert_eq!(ratio_x(1.0), RATIO_CENTRE);
        assert!((ratio_x(4.0) - RATIO_CENTRE - (RATIO_CENTRE - ratio_x(0.25))).abs() < 1e-9);
        assert_eq!(ratio_x(1e9), ratio_x(16.0));
    }

    #[test]
    fn the_largest_ratio_labels_stay_inside_the_chart() {
        for ratio in [1.0, 3.0, 14.0, 18.3, 27.0, 1e6, 0.5, 1.0 / 27.0, 1e-6] {
            let label = format!("{}x", number(ratio));
            let end = ratio_x(ratio);
            let (x, anchor, _) = ratio_label_place(end, ratio, &label);
            let (left, right) =
                if anchor == "start" { (x, x + label_width(&label)) } else { (x - label_width(&label), x) };
            assert!(left >= 0.0 && right <= WIDTH, "{label} at {left:.0}..{right:.0} of {WIDTH}");
        }
        // A small ratio keeps its label beside the bar.
        assert_eq!(ratio_label_place(ratio_x(3.0), 3.0, "3.00x").1, "start");
    }

    #[test]
    fn chart_is_one_svg_with_a_band_per_row() {
        let svg = chart(&sample_results());
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<svg").count(), 1);
        // Every element opened is closed: all tags here are self-closing or text.
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
        for label in ["getpid (one kernel entry)", "byte copy 4 KiB (memcpy)", "byte copy 1 MiB (memcpy)"] {
            assert!(svg.contains(label), "{label}");
        }
        assert!(svg.contains("ns/op; Ridge 32, 1985: 52 K/s; VAX 11/780 4.2BSD: 5 K/s"));
        assert!(svg.contains(">1.25x</text>"), "the getpid ratio");
        assert!(svg.contains("not measured"), "no Linux copy figure");
        assert!(!svg.contains("NaN") && !svg.contains("\"inf"));
    }
}
