//! kinfo: print the kernel command line, the kernel's event counters and
//! the block devices, one `name = value` per line (`options = …` first).
//!
//! Block devices: every `S_IFBLK` entry of `/dev`; its entry names its
//! driver (pid and queue, as every device entry does), which answers
//! `protocols::unix::block::OP_STATS` to anyone: one line per device,
//! `block.<entry> = <device> <mode>, N requests, B bytes moved (R read, W
//! written)`. In RAMDRIVER mode the requesters' own copies count too (they
//! add to the lock page's counters).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use abi::{COUNTER_COUNT, COUNTER_NAMES};
use alloc::vec;
use coreutils::io::{self, Out};
use runtime::{sys, unix};

runtime::entry!(main);

/// First guess at the command line's length; the call says if it is longer.
const OPTIONS_GUESS_BYTES: usize = 512;

fn main(_args: runtime::Args) -> i32 {
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
    if let Err(e) = block_devices(&mut out) {
        runtime::eprintln!("kinfo: /dev: {}", e.name());
        status = io::FAILURE;
    }
    out.finish("kinfo", status)
}

/// One line per block device in `/dev`.
fn block_devices(out: &mut Out) -> Result<(), runtime::unix::Errno> {
    use protocols::unix::{block, mode};
    for entry in unix::read_dir("/dev")? {
        if entry.mode & mode::S_IFMT != mode::S_IFBLK {
            continue;
        }
        let path = alloc::format!("/dev/{}", entry.name);
        let line = match unix::stat(&path) {
            Ok(st) => match device_stats(st.device_pid, st.device_queue) {
                Some((w, name)) => {
                    let mode_name = match w[3] {
                        block::MODE_VIRTIO => "virtio-blk",
                        block::MODE_RAMDRIVER => "ramdriver",
                        block::MODE_PDDRIVER => "pddriver",
                        _ => "unknown mode",
                    };
                    alloc::format!(
                        "block.{} = {name} {mode_name}, {} requests, {} bytes moved ({} read, {} written)",
                        entry.name,
                        w[0],
                        w[1] + w[2],
                        w[1],
                        w[2]
                    )
                }
                None => alloc::format!("block.{} = (its driver does not answer)", entry.name),
            },
            Err(e) => alloc::format!("block.{} = (stat: {})", entry.name, e.name()),
        };
        out.line(&line);
    }
    Ok(())
}

/// `block::OP_STATS` at the driver: its words and the device's name.
fn device_stats(pid: u64, queue: u32) -> Option<([u64; 4], alloc::string::String)> {
    use runtime::msg::{self, Queue};
    let link = msg::open_link(abi::Pid(pid), Queue(queue)).ok()?;
    let mut name = [0u8; 64];
    let reply = msg::call(link, &[protocols::unix::block::OP_STATS, 0, 0, 0], &[], &mut name);
    let _ = msg::close_link(link);
    let (w, len) = reply.ok()?;
    protocols::unix::result(w[0]).ok()?;
    Some((w, alloc::string::String::from_utf8_lossy(&name[..len.min(name.len())]).into_owned()))
}
