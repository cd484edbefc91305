//! The memory file system's logic: the tree of `/` (Ridge's directory
//! manager and volume in one), the files' data, and the table of open-file
//! descriptions that `servers/memfs` hands out as handles.
//!
//! What it is not: a permission checker. The monitor checks user and group
//! ids and mode bits (Ridge §3) before it asks; this module only keeps
//! owners and modes so that the monitor can read them, and refuses what
//! POSIX refuses for everyone (`EISDIR`, `ENOTEMPTY`, ...). It sends no
//! message and reads no clock: the server gives it the time with
//! [`Fs::set_now`].
//!
//! # Layers, from the bottom (each uses only those below it)
//! - `data`: a regular file's bytes (pages, holes, size) and the volume's
//!   space they are counted against. Knows no inodes.
//! - `tree`: inodes, directories and names ([`Tree`]): checking and
//!   walking paths, the name-space operations (`mkdir`, `unlink`,
//!   `rename`, ...), and a file's data by inode number. Knows no handles.
//! - `open`: [`Fs`], the tree and the open-file descriptions on it
//!   (numbered by `crate::handles`): `open`, `read`, `write`, `seek`,
//!   `readdir`, `close`. What servers and tests hold.
//! - `service`: [`Service`], every request decoded and answered (and who
//!   may ask what), everything the server does but its kernel calls.
//!
//! # Invariants
//! - Paths given to it are absolute and normalised (`crate::path`); others
//!   are refused with `EINVAL` (or `ENAMETOOLONG` when too long).
//! - An inode lives while a directory entry names it (`nlink > 0`) or a
//!   handle is open on it (`open_count > 0`), so an unlinked file stays
//!   readable through its handles until the last one closes.
//! - File data is a vector of optional pages (`abi::layout::PAGE_SIZE`
//!   each): a hole (`None`, or past the vector's end) reads as zeros, and
//!   every byte of an allocated page at or past the file's size is zero, so
//!   growing a file never has to clear old bytes.
//! - Page memory is allocated fallibly and counted against the capacity
//!   the server gives; running out is `ENOSPC`, never a panic.
//! - A directory's `nlink` is 2 plus its subdirectories while it is
//!   linked, 0 after `rmdir`.
//! - Handles are numbered by [`crate::handles::HandleTable`]: positive as
//!   `i64`, unguessable, and `EBADF` once stale.

mod data;
mod open;
mod service;
#[cfg(test)]
mod testing;
mod tree;

pub use open::{DirItem, Fs};
/// A POSIX error number (`protocols::unix::errno`).
pub use protocols::unix::Errno;
pub use service::{
    INLINE_READ_MAX_BYTES, MESSAGE_DATA_BYTES, Reply, STANDARD_DIRS, Service, module_destination,
};
pub use tree::{FsStats, Lookup, LookupError, ROOT_INO, Tree};
