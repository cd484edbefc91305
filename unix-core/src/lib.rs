//! The pure logic of Ridgeback's UNIX personality: data structures and
//! parsers that the servers (`servers/*`) and the shell (`apps/sh`) run,
//! kept free of kernel calls so that `cargo test` checks them on the host.
//!
//! What it is not: a server. Nothing here sends a message or touches a
//! device; every function is deterministic given its inputs.
//!
//! Map:
//! - [`path`]: normalising paths against a working directory;
//! - [`memfs`]: the memory file system's tree (directory manager + files);
//! - [`names`]: every name of a file system and what changed between two
//!   listings (the leak checks name what a run left behind);
//! - [`ldisc`]: the console line discipline (echo, erase, ^C, ^D);
//! - [`pipebuf`]: a pipe: its buffer, kept calls and loaned writes;
//! - [`pipepolicy`]: the monitor's pipe settings and system-wide loan budget;
//! - [`filedata`]: a file manager's pages and requests (per-file mode);
//! - [`blockdev`]: the block drivers' rules (whole blocks, handles, offsets);
//! - [`lease`]: a caller's lent buffer as the file servers reach it;
//! - [`handles`]: the handle table memfs and the file managers number
//!   their open files with;
//! - [`seek`]: `lseek`'s rule, for memfs and the file managers;
//! - [`restart`]: init's restart policy (back-off, giving up) for the
//!   servers and drivers it supervises;
//! - [`shell`]: the shell's language (lexer, parser, expansion) and its jobs.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod blockdev;
pub mod filedata;
pub mod handles;
pub mod ldisc;
pub mod lease;
pub mod memfs;
pub mod names;
pub mod path;
pub mod pipebuf;
pub mod pipepolicy;
pub mod restart;
pub mod seek;
pub mod shell;
