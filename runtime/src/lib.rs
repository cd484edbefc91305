//! The Ridgeback user runtime: what every user program links with.
//!
//! - `_start`: takes the argument bytes the kernel placed in the process,
//!   calls the program's `main` (declared with [`entry!`]) and exits with
//!   its status;
//! - [`sys`]: one safe function per kernel call, the only place that runs
//!   the `syscall` instruction;
//! - [`msg`]: the message calls, on top of `sys`; [`lease`]: a server's
//!   lease copies to and from several parts of its memory;
//! - [`print!`]/[`println!`]: console output, through the console driver
//!   named by the process's bootstrap connection, or the kernel's debug
//!   console when there is none;
//! - a panic handler that reports and exits with status 101, and a small
//!   heap for `alloc`.
//!
//! - [`unix`]: the UNIX interface as library entries that send messages
//!   to the user monitor and the object managers (Ridge OS §3).
//!
//! What it is not: a C library. Programs are Rust; `unix` speaks POSIX
//! error numbers and `protocols::unix` types.
//!
//! Layers, each built only on those before it: `sys` (kernel calls) →
//! `msg` (messages) → `unix` (UNIX calls) → `io`, `args` and the entry
//! here. What a lower layer needs to know about the process (whether to
//! touch buffers before a call) the entry tells it at start-up.

#![no_std]

extern crate alloc;

pub mod args;
pub mod clock;
mod heap;
pub mod io;
pub mod lease;
pub mod msg;
pub mod sys;
pub mod unix;

#[doc(hidden)]
pub use abi as __abi;
pub use args::Args;
pub use heap::stats as heap_stats;

/// Exit status used when a program panics.
pub const PANIC_EXIT_STATUS: u32 = 101;

/// Declare the program's entry point: `runtime::entry!(main);` with
/// `fn main(args: runtime::Args) -> i32` (or `u32`).
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        /// Marks the file as a Ridgeback program (`abi::program_note`):
        /// the monitor starts any other ELF file as a foreign (Linux) one.
        #[used]
        #[unsafe(link_section = ".note.ridgeback")]
        static RIDGEBACK_PROGRAM_NOTE: [u8; $crate::__abi::program_note::BYTES] =
            $crate::__abi::program_note::NOTE;
        #[unsafe(no_mangle)]
        pub extern "C" fn _start(args_addr: u64, args_len: u64) -> ! {
            let args = $crate::args::Args::from_start(args_addr, args_len);
            $crate::start();
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
    // A UNIX process's memory arrives page by page from the VM manager, so
    // the kernel calls must touch their buffers first (`sys::touch`).
    sys::set_touch_buffers(unix::is_unix_process());
    // A UNIX process links to the monitor and to one manager per kind of
    // open object; room for a full descriptor table of distinct managers.
    let links = if unix::is_unix_process() { unix::MAX_FDS as u64 + 8 } else { DEFAULT_LINKS };
    let _ = msg::init_qseg(links, DEFAULT_QUEUES, DEFAULT_MESSAGES, DEFAULT_PAGES);
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    println!("panic in pid {:#x}: {info}", sys::getpid().0);
    sys::exit(PANIC_EXIT_STATUS)
}
