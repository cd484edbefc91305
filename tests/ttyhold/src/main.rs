//! ttyhold: makes the terminal manager die at every start, so that init
//! gives it up, then lets it start again (the terminal-restart step of
//! `cargo xtask test`, `xtask/src/test/terminal.rs`; docs/reliability.md,
//! "The console and the terminal").
//!
//! How: as root it asks init to end the terminal manager, and again each
//! new one as soon as it runs, until init gives it up after its back-off
//! (`unix_core::restart`); then it asks init to start the terminal
//! manager again (`service start tty`) and the session's shell goes on
//! with the new one. Meanwhile it tries to take the console's typed input
//! itself (`console::OP_SUBSCRIBE`), as any process could before issue 16
//! closed it: the driver must refuse every try with `NOT_THE_OWNER`, while
//! the manager is down, restarting or given up (docs/reliability.md,
//! "Console input goes only to the terminal manager"); one accepted try
//! fails the test.
//!
//! It writes through the kernel's log (`debug_write`), not its standard
//! output: that is the terminal it makes unusable. Each line starts with
//! `ttyhold: `. Exit status 0 when all of it happened, 1 otherwise (with
//! a line saying what did not). Every wait is bounded in count.
//!
//! What it is not: a terminal. It is in the test image only.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use abi::Pid;
use protocols::console;
use protocols::init::state;
use runtime::msg::{self, Queue};
use runtime::{Args, sys, unix};

runtime::entry!(main);

/// Looks, `SHORT_PAUSE_NS` apart, for a new terminal manager to end (each
/// with a try at taking the console's input) until init gives it up: ten
/// minutes at most.
const KILL_LOOKS: u32 = 60_000;
/// Looks at init's record while waiting for it to give the terminal up
/// or to start it again, `PAUSE_NS` apart: ten minutes at most.
const STATUS_LOOKS: u32 = 6000;
const PAUSE_NS: u64 = 100_000_000;
/// Between those looks.
const SHORT_PAUSE_NS: u64 = 10_000_000;

fn say(text: &str) {
    let _ = sys::debug_write(b"ttyhold: ");
    let _ = sys::debug_write(text.as_bytes());
    let _ = sys::debug_write(b"\n");
}

fn main(_args: Args) -> i32 {
    match hold_until_given_up() {
        Ok(()) => 0,
        Err(why) => {
            say(why);
            1
        }
    }
}

/// init's record of the terminal manager: (state, kernel pid).
fn tty_status() -> Result<(u64, u64), &'static str> {
    unix::server_status("tty").map(|w| (w[0], w[1])).map_err(|_| "service status tty failed")
}

fn hold_until_given_up() -> Result<(), &'static str> {
    let queue = msg::open_queue(16, true).map_err(|_| "cannot open a queue")?;
    // The console driver as init knows it now (this process's bootstrap
    // slot may name one that was restarted since).
    let console_pid = unix::server_status("console").map_err(|_| "service status console failed")?[1];
    let driver =
        msg::open_link(Pid(console_pid), Queue(console::QUEUE)).map_err(|_| "no link to the console")?;
    let (_, first) = tty_status()?;
    unix::server_kill("tty").map_err(|_| "service kill tty failed")?;
    let mut killed = first;
    let mut given_up = false;
    for _ in 0..KILL_LOOKS {
        match msg::call(driver, &[console::OP_SUBSCRIBE, queue.0 as u64, 0, 0], &[], &mut []) {
            Ok((reply, _)) if reply[0] == console::NOT_THE_OWNER => {}
            Ok(_) => return Err("the console driver gave its typed input to a process init did not name"),
            Err(_) => return Err("the console driver did not answer"),
        }
        let (st, pid) = tty_status()?;
        if st == state::GAVE_UP {
            given_up = true;
            break;
        }
        if st == state::RUNNING && pid != killed {
            unix::server_kill("tty").map_err(|_| "service kill tty failed")?;
            killed = pid;
        }
        sys::sleep_ns(SHORT_PAUSE_NS);
    }
    if !given_up {
        return Err("init did not give the terminal manager up");
    }
    say("the console driver refused its input to ttyhold at every try while the terminal manager was down");
    say("init gave the terminal manager up; this line reached the serial port through the kernel's log");
    // Still refused while no terminal manager runs at all.
    match msg::call(driver, &[console::OP_SUBSCRIBE, queue.0 as u64, 0, 0], &[], &mut []) {
        Ok((reply, _)) if reply[0] == console::NOT_THE_OWNER => {}
        _ => return Err("the console driver did not refuse its input once the terminal was given up"),
    }
    msg::close_queue(queue).map_err(|_| "cannot close its queue")?;
    let _ = msg::close_link(driver);
    unix::server_start("tty").map_err(|_| "service start tty failed")?;
    for _ in 0..STATUS_LOOKS {
        if tty_status()?.0 == state::RUNNING {
            say("tty started again");
            return Ok(());
        }
        sys::sleep_ns(PAUSE_NS);
    }
    Err("the terminal manager did not start again")
}
