//! init: the first user process.
//!
//! For now it starts each program named in its argument list (default:
//! `hello`), waits for all of them, reports how each ended, prints the
//! kernel's counters and powers the machine off with status 0 when every
//! program exited with 0. The UNIX-personality issue replaces this with a
//! server starter that reads an init file (Ridge OS §8).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use abi::{COUNTER_COUNT, COUNTER_NAMES, ExitStatus, InfoKey};
use runtime::{Args, println, sys};

runtime::entry!(main);

const DEFAULT_PROGRAMS: &[&str] = &["hello"];

fn main(args: Args) -> i32 {
    println!(
        "init: pid {:#x}, {} CPUs online, {} MiB free",
        sys::getpid().0,
        sys::info(InfoKey::CpusOnline),
        sys::info(InfoKey::FreeMemoryBytes) >> 20
    );
    let mut failures = 0;
    let mut started = 0;
    let mut start = |name: &str| match sys::spawn(name, "") {
        Ok(pid) => {
            println!("init: started {name} as {:#x}", pid.0);
            started += 1;
        }
        Err(e) => {
            println!("init: cannot start {name}: {}", e.name());
            failures += 1;
        }
    };
    if args.iter().next().is_some() {
        args.iter().for_each(&mut start);
    } else {
        DEFAULT_PROGRAMS.iter().for_each(|n| start(n));
    }
    for _ in 0..started {
        match sys::wait(None) {
            Ok((pid, status)) => {
                println!("init: {:#x} ended: {status:?}", pid.0);
                if status != ExitStatus::Exited(0) {
                    failures += 1;
                }
            }
            Err(e) => println!("init: wait: {}", e.name()),
        }
    }
    let mut counters = [0u64; COUNTER_COUNT];
    if let Ok(n) = sys::counters(&mut counters) {
        for (name, value) in COUNTER_NAMES.iter().zip(&counters[..n]) {
            println!("init: counter {name} = {value}");
        }
    }
    let _ = sys::shutdown(if failures == 0 { 0 } else { 1 });
    1
}
