//! service: the supervisor's command line (docs/reliability.md,
//! "Restarting dead servers and drivers").
//!
//! - `service status NAME`: what init says of the server or driver NAME:
//!   `NAME running pid 0x… restarts N`, `waiting`, `gave-up` or
//!   `stopped`, with its restarts and quick deaths in a row;
//! - `service kill NAME` (root only): init ends NAME as a fault would
//!   (only a program whose init-file line says `restart`); it is started
//!   again after its back-off;
//! - `service start NAME` (root only): init starts the boot-image program
//!   NAME as a supervised driver with no rights (or starts a given-up one
//!   again).
//!
//! What it is not: a way around init's rules. The monitor checks that the
//! caller is root and init decides what may be ended; `kill` returns once
//! init is asked, not when the program has ended.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use protocols::init::state;
use protocols::unix::errno;
use runtime::{Args, eprintln, println, unix};

runtime::entry!(main);

fn main(args: Args) -> i32 {
    let (Some(verb), Some(name), None) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("usage: service kill|start|status NAME");
        return 2;
    };
    let done = match verb {
        "kill" => unix::server_kill(name),
        "start" => unix::server_start(name),
        "status" => unix::server_status(name).map(|w| {
            let what = match w[0] {
                state::RUNNING => "running",
                state::WAITING => "waiting",
                state::GAVE_UP => "gave-up",
                _ => "stopped",
            };
            println!("{name} {what} pid {:#x} restarts {} quick-deaths {}", w[1], w[2], w[3]);
        }),
        _ => {
            eprintln!("service: unknown command `{verb}` (kill, start or status)");
            return 2;
        }
    };
    match done {
        Ok(()) => 0,
        Err(e) => {
            let why = match e {
                errno::ENOENT => "init did not start it",
                errno::EPERM => "only root may",
                _ => errno::name(e),
            };
            eprintln!("service: {verb} {name}: {why}");
            1
        }
    }
}
