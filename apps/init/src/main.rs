//! init: the first user process.
//!
//! It starts the console driver and makes it every later process's console
//! (a bootstrap connection), then starts each program named in its
//! argument list (default: `hello`), waits for all of them, reports how
//! each ended, prints the kernel's counters and powers the machine off with
//! status 0 when every program exited with 0. The UNIX-personality issue
//! replaces this with a server starter that reads an init file (Ridge OS
//! §8).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use abi::{COUNTER_COUNT, COUNTER_NAMES, ExitStatus, InfoKey};
use runtime::msg;
use runtime::{Args, println, sys};

runtime::entry!(main);

const DEFAULT_PROGRAMS: &[&str] = &["hello"];

fn main(args: Args) -> i32 {
    start_console();
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

/// Start the console driver and wait until it has taken the line; on
/// failure, output stays on the kernel's debug console.
fn start_console() {
    let Ok(queue) = msg::open_queue(4, true) else { return };
    let me = sys::getpid();
    let driver = match sys::spawn_with_priority("console", &decimal(me.0), abi::MAX_PRIORITY as u64 - 1) {
        Ok(pid) => pid,
        Err(e) => {
            println!("init: no console driver: {}", e.name());
            return;
        }
    };
    match msg::receive_data(queue, &mut []) {
        Ok(r) if r.sender == driver && r.message[0] == protocols::console::READY => {
            let _ = sys::set_bootstrap(abi::bootstrap::CONSOLE, driver, r.message[1] as u32);
            runtime::io::reset_console();
        }
        _ => println!("init: the console driver did not start"),
    }
}

/// A pid as decimal text, without a heap.
fn decimal(pid: u64) -> DecimalText {
    let mut t = DecimalText { bytes: [0; 20], start: 20 };
    let mut n = pid;
    loop {
        t.start -= 1;
        t.bytes[t.start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return t;
        }
    }
}

struct DecimalText {
    bytes: [u8; 20],
    start: usize,
}

impl core::ops::Deref for DecimalText {
    type Target = str;
    fn deref(&self) -> &str {
        core::str::from_utf8(&self.bytes[self.start..]).unwrap_or("0")
    }
}
