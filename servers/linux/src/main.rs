//! linux: the Linux personality server (issue 14; seed 001 §8, UNIX calls
//! as messages to a user-level monitor).
//!
//! The monitor execs this program in place of any executable that lacks
//! Ridgeback's program note (`abi::program_note`), with argv = [`linux`,
//! the program's path, the program's argv...], the way `binfmt_misc` runs
//! an interpreter on Linux. So this process *is* the Linux program's UNIX
//! process: its pid, descriptors, working directory and ids are the
//! program's, and every Linux call is carried out with the runtime's UNIX
//! calls (messages to the monitor and the object managers). The program
//! itself runs as this process's foreign child (kernel/src/foreign.rs):
//! each `syscall` it makes arrives here as a `Kind::Foreign` message, and
//! the answer is `foreign_resume` with the result in rax.
//!
//! Map: [`start`] loads the program and builds the Linux start-up stack;
//! [`calls`] carries out the calls, with descriptor bookkeeping, `poll`
//! and `statx` in [`fscalls`]; [`net`] the sockets and CPU affinity;
//! [`vmem`] the mmap region; [`signals`] holds the program's signal
//! state and [`sigcalls`] delivers signals and makes blocking calls
//! interruptible; [`mem`] moves bytes in and out of the program's memory.
//!
//! What it is not: a Linux kernel. Unknown calls get ENOSYS and one log
//! line; the supported calls and their limits are in docs/linux-abi.md.
//! Invariant: a bad pointer or length from the program is an EFAULT or
//! EINVAL answer, never a crash of this server.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod calls;
mod fscalls;
mod mem;
mod net;
mod sigcalls;
mod signals;
mod start;
mod vmem;

use abi::msg::Kind;
use alloc::string::String;
use alloc::vec::Vec;
use runtime::msg;
use runtime::{Args, sys, unix};

runtime::entry!(main);

/// One line on the program's standard error (fd 2), where a Linux
/// program's diagnostics go, not the console: a shell's `2>` catches it.
#[macro_export]
macro_rules! log {
    ($($arg:tt)*) => {{
        let line = alloc::format!("linux: {}\n", alloc::format!($($arg)*));
        let _ = runtime::unix::write(2, line.as_bytes());
    }};
}

/// Exit status when the program dies of a fault (128 + SIGSEGV, as a
/// shell reports a Linux program killed by a signal).
const FAULT_EXIT_STATUS: i32 = 128 + 11;

fn main(_args: Args) -> i32 {
    // argv: linux, the program's path, then the program's own argv.
    let argv: Vec<String> = unix::args().map(String::from).collect();
    let env: Vec<String> = unix::env().map(String::from).collect();
    if argv.len() < 3 {
        log!("usage: linux PROGRAM ARGV0 [ARG...] (the monitor runs it for Linux programs)");
        return 2;
    }
    let queue = match msg::open_queue(4, false) {
        Ok(q) => q,
        Err(e) => {
            log!("cannot open a queue: {}", e.name());
            return 1;
        }
    };
    if let Err(e) = sys::set_exit_queue(queue.0) {
        log!("set_exit_queue: {}", e.name());
        return 1;
    }
    let program = match start::load(&argv[1], &argv[2..], &env, queue.0) {
        Ok(p) => p,
        Err(why) => {
            log!("{}: {why}", argv[1]);
            return 126;
        }
    };
    let mut linux = calls::Linux::new(program, &argv[1], queue.0);
    loop {
        let r = match msg::receive_data(queue, &mut []) {
            Ok(r) => r,
            Err(e) => {
                log!("receive: {}", e.name());
                return 1;
            }
        };
        match r.kind {
            Kind::Foreign if r.sender == linux.pid() => linux.call(r.message),
            Kind::ChildExit if r.message[0] == linux.pid().0 => {
                let status = abi::ExitStatus::decode(r.message[1]);
                log!("{} ended: {status:?}", argv[1]);
                return match status {
                    abi::ExitStatus::Exited(code) => code as i32,
                    abi::ExitStatus::Fault { vector, .. } => {
                        // Die of the signal Linux would have sent, so the
                        // parent's wait sees it (WIFSIGNALED, WTERMSIG), as
                        // the monitor reports a Ridgeback program's fault.
                        let _ = unix::kill(unix::getpid() as i64, fault_signal(vector));
                        FAULT_EXIT_STATUS
                    }
                    _ => FAULT_EXIT_STATUS,
                };
            }
            _ => {}
        }
    }
}

/// The signal a fault at `vector` means (the monitor's table for its
/// own programs, servers/monitor/src/procs.rs).
fn fault_signal(vector: u8) -> u64 {
    use protocols::unix::signal;
    match vector {
        abi::vector::DIVIDE_ERROR | abi::vector::X87_FLOATING_POINT | abi::vector::SIMD_FLOATING_POINT => {
            signal::SIGFPE
        }
        abi::vector::INVALID_OPCODE => signal::SIGILL,
        _ => signal::SIGSEGV,
    }
}
