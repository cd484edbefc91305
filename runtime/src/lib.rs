//! The Ridgeback user runtime: what every user program links with.
//!
//! - `_start`: takes the argument bytes the kernel placed in the process,
//!   calls the program's `main` (declared with [`entry!`]) and exits with
//!   its status;
//! - [`sys`]: one safe function per kernel call, the only place that runs
//!   the `syscall` instruction;
//! - [`print!`]/[`println!`]: console output, through the console driver
//!   named by the process's bootstrap connection, or the kernel's debug
//!   console when there is none;
//! - a panic handler that reports and exits with status 101, and a small
//!   heap for `alloc`.
//!
//! What it is not (yet): the UNIX-style API, which the user-monitor issue
//! adds on top of the message system.

#![no_std]

extern crate alloc;

pub mod args;
mod heap;
pub mod io;
pub mod msg;
pub mod sys;

pub use args::Args;

/// Exit status used when a program panics.
pub const PANIC_EXIT_STATUS: u32 = 101;

/// Declare the program's entry point: `runtime::entry!(main);` with
/// `fn main(args: runtime::Args) -> i32` (or `u32`).
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        #[unsafe(no_mangle)]
        pub extern "C" fn _start(args_addr: u64, args_len: u64) -> ! {
            $crate::start();
            let args = $crate::args::Args::from_start(args_addr, args_len);
            let status = $main(args);
            $crate::sys::exit(status as u32)
        }
    };
}

/// Set-up before `main`: every process gets a queue segment (Ridge OS §5:
/// "When a process is created, its queue segment must be initialized"),
/// which the program may grow with `msg::init_qseg`.
#[doc(hidden)]
pub fn start() {
    use abi::msg::{DEFAULT_LINKS, DEFAULT_MESSAGES, DEFAULT_PAGES, DEFAULT_QUEUES};
    let _ = msg::init_qseg(DEFAULT_LINKS, DEFAULT_QUEUES, DEFAULT_MESSAGES, DEFAULT_PAGES);
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    println!("panic in pid {:#x}: {info}", sys::getpid().0);
    sys::exit(PANIC_EXIT_STATUS)
}
