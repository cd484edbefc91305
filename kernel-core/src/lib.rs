//! Pure data structures and algorithms of the Ridgeback kernel.
//!
//! Everything here is plain, `unsafe`-free Rust that runs the same on the
//! host as in the kernel, so it is tested with `cargo test` on the host
//! (Hubris keeps its `kerncore` for the same reason). The kernel crate wraps
//! these structures with locks and hardware access; nothing in this crate
//! touches hardware, allocates, or knows which CPU it runs on.
//!
//! - [`limits`]: every static limit of the kernel, in one place.
//! - [`frame_alloc`]: the physical frame allocator (a bitmap).
//! - [`msix`]: the pool of MSI-X vectors and the entries they serve.
//! - [`options`]: the kernel command line (`key=value` words).
//! - [`qseg`]: a process's queue segment: links, queues, waiting messages.
//! - [`ready`]: the scheduler's ready lists (descending priority, FIFO within one).
//! - [`acpi`]: finding CPUs and interrupt controllers in the firmware tables.
//! - [`elf`]: checks that a user program is an ELF64 x86-64 executable we can load.
//! - [`rtc`]: the CMOS real-time clock's registers as calendar time.

#![no_std]
#![forbid(unsafe_code)]

pub mod acpi;
pub mod elf;
pub mod frame_alloc;
pub mod limits;
pub mod msix;
pub mod options;
pub mod qseg;
pub mod ready;
pub mod rtc;
