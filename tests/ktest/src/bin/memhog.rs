//! memhog: a UNIX program that takes memory a MiB at a time, writing every
//! page, until it is refused; the low-memory test of `cargo xtask test`
//! (xtask/src/test/memory.rs) runs it in a small machine.
//!
//! It prints `memhog: N MiB` after each MiB it holds. Refusal comes one of
//! two ways (docs/memory.md, "Out of memory"): the heap says `ENOMEM` (its
//! region is full: it prints `memhog: the heap refused a MiB (ENOMEM)` and
//! exits 1), or,
//! the usual way, the first touch of a page finds no frame the process may
//! take, and the VM manager ends it with a kernel-log line saying so. It
//! never exits 0 unless given a limit: `memhog MIB` stops after MIB MiB
//! and exits 0.
//!
//! What it is not: a benchmark, nor a test by itself (the test is what the
//! rest of the system does while it runs).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::format;
use alloc::vec::Vec;
use runtime::unix;

runtime::entry!(main);

const MIB: usize = 1 << 20;

fn main(args: runtime::Args) -> i32 {
    let limit_mib = args.get(1).and_then(|s| s.parse::<usize>().ok()).unwrap_or(usize::MAX);
    let mut held: Vec<Vec<u8>> = Vec::new();
    while held.len() < limit_mib {
        // Ask for the room first, so that a full heap region is a clear
        // ENOMEM (from the runtime's `sbrk`) rather than the allocator's
        // abort.
        let mut chunk = Vec::new();
        if chunk.try_reserve_exact(MIB).is_err() {
            let _ = unix::write(2, b"memhog: the heap refused a MiB (ENOMEM)\n");
            return 1;
        }
        // A non-zero byte in every page: each page is touched and written.
        chunk.resize(MIB, 0xa5);
        held.push(chunk);
        let line = format!("memhog: {} MiB\n", held.len());
        let _ = unix::write(1, line.as_bytes());
    }
    0
}
