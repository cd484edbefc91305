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
//! - the pure halves of the text utilities (issue 15), each tested the
//!   same way: [`getopt`] (options with arguments), [`grep`] (POSIX BRE
//!   and ERE translated to `regex-automata`'s syntax), [`sort`] (keys and
//!   comparisons), [`tr`], [`cut`], [`lines`] (head's and tail's counts),
//!   [`date`] (strftime in UTC), [`mode`] (chmod's symbolic modes),
//!   [`seq`] (exact decimal sequences), [`fnmatch`] (`find -name`) and
//!   [`xargs`] (splitting its input);
//! - [`io`] (target only): buffered standard output, page-aligned copy
//!   buffers, line reading and the common error report `prog: path:
//!   <errno name>`.
//!
//! What it is not: a C library or a general I/O layer; everything here
//! serves the programs of this crate.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod cmp;
pub mod cut;
pub mod date;
pub mod dd;
pub mod fnmatch;
pub mod getopt;
pub mod grep;
pub mod lines;
pub mod mode;
pub mod seq;
pub mod sort;
pub mod text;
pub mod tr;
pub mod xargs;

#[cfg(target_os = "none")]
pub mod io;
