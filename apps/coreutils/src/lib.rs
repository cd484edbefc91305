//! The helpers shared by the utilities of Ridgeback's UNIX personality
//! (one program per file under `src/bin/`).
//!
//! - [`text`]: pure logic (option parsing, word counts, durations, signal
//!   names, `ls -l` and `ps` layout, paths), built on the host too and
//!   tested there with `cargo test -p coreutils --lib` (a step of `cargo
//!   xtask test`);
//! - [`dd`] and [`cmp`]: the pure halves of those two programs (operands,
//!   GNU's number syntax and summary, the comparison and its messages),
//!   tested the same way;
//! - [`io`] (target only): buffered standard output, page-aligned copy
//!   buffers and the common error report `prog: path: <errno name>`.
//!
//! What it is not: a C library or a general I/O layer; everything here
//! serves the programs of this crate.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod cmp;
pub mod dd;
pub mod text;

#[cfg(target_os = "none")]
pub mod io;
