//! ttyhold: makes the terminal manager die at every start, so that init
//! gives it up, then lets it start again (the terminal-restart step of
//! `cargo xtask test`, `xtask/src/test/terminal.rs`; docs/reliability.md,
//! "The console and the terminal").
//!
//! How: as root it asks init to end the terminal manager and subscribes
//! to the console driver's input itself. The driver hands the input over
//! only from a subscriber that has ended, so every new terminal manager
//! is refused its subscription and ends at its start, and init gives it
//! up after its back-off (`unix_core::restart`). A new manager that
//! subscribed first is ended again. Once init reports the terminal given
//! up, ttyhold closes its queue (the driver then hands the input over
//! again) and asks init to start the terminal manager (`service start
//! tty`); the session's shell goes on with the new one.
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

/// Tries at taking the console's input (each after a kill or a pause).
const SUBSCRIBE_TRIES: u32 = 2000;
/// Looks at init's record while waiting for it to give the terminal up
/// or to start it again, `PAUSE_NS` apart: ten minutes at most.
const STATUS_LOOKS: u32 = 6000;
const PAUSE_NS: u64 = 100_000_000;
/// Between tries at the subscription.
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
    let mut held = false;
    for _ in 0..SUBSCRIBE_TRIES {
        match msg::call(driver, &[console::OP_SUBSCRIBE, queue.0 as u64, 0, 0], &[], &mut []) {
            Ok((reply, _)) if reply[0] == 0 => {
                held = true;
                break;
            }
            // Refused: the terminal manager killed last still runs (the
            // kill is on its way), or a new one subscribed first.
            Ok(_) => {}
            Err(_) => return Err("the console driver did not answer"),
        }
        let (st, pid) = tty_status()?;
        if st == state::RUNNING && pid != killed {
            unix::server_kill("tty").map_err(|_| "service kill tty failed")?;
            killed = pid;
        }
        sys::sleep_ns(SHORT_PAUSE_NS);
    }
    if !held {
        return Err("could not take the console's input");
    }
    say("holding the console's input; every new terminal manager will fail at its start");
    let mut given_up = false;
    for _ in 0..STATUS_LOOKS {
        if tty_status()?.0 == state::GAVE_UP {
            given_up = true;
            break;
        }
        sys::sleep_ns(PAUSE_NS);
    }
    if !given_up {
        return Err("init did not give the terminal manager up");
    }
    say("init gave the terminal manager up; this line reached the serial port through the kernel's log");
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
