//! The disk file system's logic: the ext2 (revision 1) on-disk format, read
//! and written, and the buffer cache between it and a block device
//! (issue 12: Ridge's directory, volume and file managers, seed 001 §8;
//! UNIX V1's I/O buffers, seed 004). The e2fsprogs of the host are its
//! oracle: images made by `mke2fs -d` are read, images written here pass
//! `e2fsck -fn` (`tests/e2fsprogs.rs`).
//!
//! What it is not: a server or a transport. It sends no message and knows
//! no driver; it works over [`device::BlockDevice`] (512-byte sectors,
//! transfers that may finish later), which `servers/ext2fs` implements
//! with `protocols::unix::block` requests to the virtio-blk driver. It is not a permission checker (the monitor is, Ridge §3).
//! `no_std` + `alloc`, no `unsafe`.
//!
//! Map (each uses only those above it):
//! - [`device`]: the block-device interface and [`device::MemDisk`];
//! - [`cache`]: the buffer cache (nbuf buffers, LRU, busy while in flight,
//!   read-ahead, write-behind, write order);
//! - [`layout`]: the on-disk structures as bytes;
//! - [`journal`]: the jbd2 journal's format and recovery scan (pure
//!   logic: `fs` reads inode 8 and writes the replay home);
//! - [`fs`]: mounting with every check, allocation, block maps,
//!   directories and the operations ([`Fs`]);
//! - [`readwin`]: read windows' shared pages, slots and change
//!   generations (uses no other module);
//! - [`service`]: the server's requests (`protocols::unix::fs` and `io`)
//!   decoded and answered over an [`Fs`], everything of `servers/ext2fs`
//!   but its kernel calls.
//!
//! Invariants (details in each module and in `docs/filesystem.md`):
//! - Nothing read from the disk is trusted: a damaged structure is refused
//!   at mount or is `EIO` for the object that holds it, never a panic, and
//!   an operation checks what it touches before changing anything.
//! - The disk is consistent at every instant: every change reaches it in
//!   an order where a power cut can leak a block or an inode, never lose
//!   or cross-link a file ([`cache::Cache::order`]).
//! - Errors are POSIX numbers (`protocols::unix::Errno`).

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod cache;
pub mod device;
pub mod fs;
pub mod journal;
pub mod layout;
pub mod readwin;
pub mod service;

pub use cache::{Cache, CacheStats};
pub use device::{BlockDevice, MemDisk};
pub use fs::{Attr, DirEntry, Fs, FsStats, MountError, MountOptions};
pub use layout::ROOT_INO;
pub use protocols::unix::Errno;
