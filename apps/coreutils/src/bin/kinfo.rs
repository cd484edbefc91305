//! kinfo: print the kernel command line and the kernel's event counters,
//! one `name = value` per line (`options = …` first), then one line per
//! block device in `/dev`: its name, its driver's mode (`virtio`,
//! `ramdriver`, `pddriver`), requests served and bytes moved
//! (`block::OP_STATS`, asked of the driver the entry names) and, from a
//! driver that times its device (`block::OP_DEVICE_TIMES`), a second line
//! with the mean device time per request (notification to interrupt) and
//! the mean delivery time per interrupt (kernel to driver), then each
//! disk file system's counters (`/disk:hits = …`: its buffer cache's hits,
//! misses, read-ahead hits, write-behind transfers, …), then the
//! run-time limits (`pipe = loan`, `pipe.loan_min = …`).
//!
//! `kinfo -w NAME=VALUE…` sets run-time limits instead (root only, as
//! `sysctl -w`): `kinfo -w pipe.loan_min=32K pipe=big`.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use abi::{COUNTER_COUNT, COUNTER_NAMES};
use alloc::vec;
use coreutils::io::{self, Out};
use runtime::sys;

runtime::entry!(main);

/// First guess at the command line's length; the call says if it is longer.
const OPTIONS_GUESS_BYTES: usize = 512;

fn main(args: runtime::Args) -> i32 {
    if args.get(1) == Some("-w") {
        return set_limits(args);
    }
    let mut out = Out::new();
    let mut status = 0;
    let mut options = vec![0u8; OPTIONS_GUESS_BYTES];
    match sys::kernel_options(&mut options) {
        Ok(len) => {
            if len > options.len() {
                options.resize(len, 0);
                // The command line does not change; a second read gets it whole.
                let _ = sys::kernel_options(&mut options);
            }
            options.truncate(len);
            out.line(&alloc::format!("options = {}", alloc::string::String::from_utf8_lossy(&options)));
        }
        Err(e) => {
            runtime::eprintln!("kinfo: kernel options: {}", e.name());
            status = io::FAILURE;
        }
    }
    let mut counters = [0u64; COUNTER_COUNT];
    match sys::counters(&mut counters) {
        Ok(n) => {
            for (name, value) in COUNTER_NAMES.iter().zip(counters.iter()).take(n) {
                out.line(&alloc::format!("{name} = {value}"));
            }
        }
        Err(e) => {
            runtime::eprintln!("kinfo: counters: {}", e.name());
            status = io::FAILURE;
        }
    }
    for line in block_devices() {
        out.line(&line);
    }
    // Each disk file system's buffer cache (issue 12): `/disk:hits = …`.
    if let Ok(text) = runtime::unix::fs_stats() {
        for (name, value) in text.lines().filter_map(|l| l.split_once('=')) {
            out.line(&alloc::format!("{name} = {value}"));
        }
    }
    match runtime::unix::limits() {
        Ok(text) => {
            for (name, value) in text.lines().filter_map(|l| l.split_once('=')) {
                out.line(&alloc::format!("{name} = {value}"));
            }
        }
        Err(e) => {
            runtime::eprintln!("kinfo: limits: {}", e.name());
            status = io::FAILURE;
        }
    }
    out.finish("kinfo", status)
}

/// `kinfo -w NAME=VALUE…`: each setting in turn; the first refusal ends it.
fn set_limits(args: runtime::Args) -> i32 {
    let settings: alloc::vec::Vec<&str> = args.iter().skip(2).collect();
    if settings.is_empty() {
        runtime::eprintln!("usage: kinfo -w NAME=VALUE...");
        return 2;
    }
    for s in settings {
        if let Err(e) = runtime::unix::set_limit(s) {
            runtime::eprintln!("kinfo: {s}: {}", e.name());
            return io::FAILURE;
        }
    }
    0
}

/// TSC ticks as microseconds (`InfoKey::TscHz`).
fn ticks_to_us(ticks: u64) -> u64 {
    let hz = sys::info(abi::InfoKey::TscHz).max(1);
    (ticks as u128 * 1_000_000 / hz as u128) as u64
}

/// `block NAME mode=… requests=… read=… written=…` for each block device
/// entry in `/dev`; a driver that does not answer is left out.
fn block_devices() -> alloc::vec::Vec<alloc::string::String> {
    use protocols::unix::{block, mode};
    use runtime::msg::{self, Queue};
    let mut lines = alloc::vec::Vec::new();
    let Ok(entries) = runtime::unix::read_dir("/dev") else { return lines };
    for e in entries.iter().filter(|e| mode::is_blk(e.mode)) {
        let path = alloc::format!("/dev/{}", e.name);
        let Ok(st) = runtime::unix::stat(&path) else { continue };
        let Ok(link) = msg::open_link(abi::Pid(st.device_pid), Queue(st.device_queue)) else { continue };
        // The reply's data is the device's name (`block::OP_STATS`): a
        // reply with data does not fit an empty buffer.
        let mut name = [0u8; 64];
        let asked = msg::call(link, &[block::OP_STATS, 0, 0, 0], &[], &mut name);
        let times = msg::call(link, &[block::OP_DEVICE_TIMES, 0, 0, 0], &[], &mut []);
        let _ = msg::close_link(link);
        let Ok((w, _)) = asked else { continue };
        let kind = match w[3] {
            block::MODE_VIRTIO => "virtio",
            block::MODE_RAMDRIVER => "ramdriver",
            block::MODE_PDDRIVER => "pddriver",
            _ => "?",
        };
        lines.push(alloc::format!(
            "block {path} mode={kind} requests={} bytes_read={} bytes_written={}",
            w[0],
            w[1],
            w[2]
        ));
        // A driver that does not time answers ENOSYS (an errno word).
        if let Ok((t, _)) = times
            && protocols::unix::result(t[0]).is_ok()
        {
            let us = |ticks: u64, n: u64| ticks_to_us(ticks.checked_div(n).unwrap_or(0));
            lines.push(alloc::format!(
                "block {path} completions={} device_us={} interrupts={} delivery_us={}",
                t[0],
                us(t[1], t[0]),
                t[2],
                us(t[3], t[2])
            ));
        }
    }
    lines
}
