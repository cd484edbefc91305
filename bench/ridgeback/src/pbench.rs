//! pbench: seed 002's `bw_pipe` (`bench::p`) as a UNIX program on
//! Ridgeback: `pbench --design small|big|loan [--samples N] [--sample-ms
//! N] [pipe] [overwrite] [copy]`. `pipe` prints `p_<design>_<N>cpu` (64
//! KiB writes into a pipe, a forked reader checksums every byte),
//! `overwrite` `p_<design>_overwrite_<N>cpu` (the writer stamps every page
//! of its buffer right after each write returns), `copy` the limit in one
//! process (`p_copy`, `p_copy_checksum`); `N` is the CPUs online. Each is a
//! `BENCH {json}` line with the kernel counters over its timed sections,
//! or `# FAILED <figure>: <reason>`; the exit status is 1 if any failed.
//!
//! What it is: the Ridgeback build of the loop the Linux build runs
//! (`bench p`), over `runtime::unix`'s `pipe`, `fork`, `read` and `write`
//! (each `read` or `write` is one call to the pipe's manager). The pipe
//! design is a boot option (`pipe=`, `docs/pipes.md`), so `--design`
//! says which one the boot was given; pbench checks it against the
//! monitor's settings (`unix::limits`) and fails rather than name a
//! figure after a design it did not measure. It prints the settings and
//! the loan accounting before and after, as comments.
//!
//! What it is not: a way to switch designs. Like `r2bench`, it needs the
//! whole UNIX system: `cargo xtask bench --only p` boots the bench image
//! once per design and CPU count and starts it from a batch script.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod platform;
mod unix_process;

use abi::InfoKey;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use bench::Platform;
use bench::harness::{self, MAX_SAMPLES};
use bench::p::{self, Method, Placement, Variant};
use runtime::{Args, sys, unix};
use unix_process::UnixProcess;

runtime::entry!(main);

const FIGURES: [&str; 3] = ["pipe", "overwrite", "copy"];
const DESIGNS: [&str; 3] = ["small", "big", "loan"];

fn main(args: Args) -> i32 {
    // A UNIX process's argument words start with its name.
    let mut words: Vec<&str> = args.iter().skip(usize::from(args.is_unix())).collect();
    let design = match take_design(&mut words) {
        Ok(design) => design,
        Err(message) => {
            harness::failure::<UnixProcess>("options", &message);
            return 2;
        }
    };
    let (config, figures) = match harness::parse_options(words.into_iter(), &FIGURES) {
        Ok(parsed) => parsed,
        Err(message) => {
            harness::failure::<UnixProcess>("options", &message);
            return 2;
        }
    };
    let cpus = format!("{}cpu", sys::info(InfoKey::CpusOnline));
    let names = |figure: &str| -> Vec<String> {
        match figure {
            "pipe" => alloc::vec![p::figure_name(design, false, &cpus)],
            "overwrite" => alloc::vec![p::figure_name(design, true, &cpus)],
            _ => alloc::vec![String::from(p::COPY), String::from(p::COPY_CHECKSUM)],
        }
    };
    let fail_all = |reason: &str| {
        for figure in &figures {
            for name in names(figure) {
                harness::failure::<UnixProcess>(&name, reason);
            }
        }
        1
    };
    if !unix::is_unix_process() {
        return fail_all("not a UNIX process: start it from the shell");
    }
    let settings = match unix::limits() {
        Ok(text) => text,
        Err(e) => return fail_all(&format!("the monitor's pipe settings: {}", e.name())),
    };
    let booted = settings.lines().find_map(|l| l.strip_prefix("pipe=")).unwrap_or("?");
    if booted != design {
        return fail_all(&format!(
            "the boot option pipe={design} did not take effect: the monitor says pipe={booted}"
        ));
    }
    harness::comment::<UnixProcess>(format_args!(
        "pbench on ridgeback: tsc_hz={} online_cpus={} samples={} min_sample_ms={} chunk_bytes={} pass_bytes={} settings: {}",
        UnixProcess::tsc_hz(),
        sys::info(InfoKey::CpusOnline),
        config.sample_count.min(MAX_SAMPLES),
        config.min_sample_ns / 1_000_000,
        p::CHUNK_BYTES,
        p::PASS_BYTES,
        settings.trim_end().replace('\n', " ")
    ));
    let mut failures = 0;
    for figure in figures {
        match figure {
            "copy" => p::report_copies::<UnixProcess>(&config),
            _ => {
                let overwrite = figure == "overwrite";
                let name = p::figure_name(design, overwrite, &cpus);
                let variant = Variant { method: Method::Write, overwrite };
                failures +=
                    usize::from(!p::report_pipe::<UnixProcess>(&name, variant, Placement::ANYWHERE, &config));
            }
        }
    }
    if let Ok(text) = unix::limits() {
        harness::comment::<UnixProcess>(format_args!("after: {}", text.trim_end().replace('\n', " ")));
    }
    i32::from(failures > 0)
}

/// Removes `--design NAME` from `words` and returns the name.
fn take_design(words: &mut Vec<&str>) -> Result<&'static str, String> {
    let Some(at) = words.iter().position(|w| *w == "--design") else {
        return Err(format!("--design is required (one of {DESIGNS:?})"));
    };
    let value = words.get(at + 1).copied().ok_or("--design needs a value")?;
    let design = DESIGNS
        .iter()
        .find(|d| **d == value)
        .ok_or_else(|| format!("--design: {value:?} is not one of {DESIGNS:?}"))?;
    words.drain(at..at + 2);
    Ok(design)
}
