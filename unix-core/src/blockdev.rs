//! The rules every block driver applies (`protocols::unix::block`): which
//! transfers are allowed, the open handles with their offsets, and what
//! `fstat` says. Shared by `drivers/virtio-blk` and `drivers/ramdisk`, so
//! both refuse the same requests with the same errors.
//!
//! What it is not: a driver. Nothing here moves data or knows a device;
//! the driver asks [`Opens::start`] for the range a READ or WRITE covers,
//! moves the bytes, then reports the end ([`Opens::finish`]).
//!
//! # Invariants
//! - A transfer is whole blocks at a whole-block offset, at most
//!   [`block::MAX_TRANSFER_BYTES`], and inside the device; anything else
//!   is `EINVAL` and changes nothing (seed 000's block-mode I/O moves
//!   whole blocks; the "never a partial silent write").
//! - A READ at exactly the end of the device is end of file (0 bytes); a
//!   WRITE there runs past the end (`EINVAL`).
//! - The offset of a handle advances when a transfer starts, so two
//!   requests in flight on one handle (descriptors shared by `fork`)
//!   cover different blocks, as consecutive `read`s would; a transfer that
//!   fails puts the offset back if nothing moved it since.

use crate::handles::HandleTable;
use protocols::unix::errno::{EBADF, EINVAL, ENFILE, ENOENT, EROFS};
use protocols::unix::{Errno, Stat, block, mode, open_flags};

/// What a READ or WRITE may do, once checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub offset_bytes: u64,
    pub len_bytes: u64,
}

impl Transfer {
    /// The first block (the device's sector number).
    pub fn first_block(&self) -> u64 {
        self.offset_bytes / block::BLOCK_BYTES
    }
}

/// Check a transfer of `len_bytes` at `offset_bytes` on a device of
/// `size_bytes`: `Ok(None)` for a READ at the end (nothing to do, 0
/// bytes), `Ok(Some)` for a transfer to do, else `EINVAL`.
pub fn check(
    offset_bytes: u64,
    len_bytes: u64,
    size_bytes: u64,
    is_write: bool,
) -> Result<Option<Transfer>, Errno> {
    let whole = |n: u64| n.is_multiple_of(block::BLOCK_BYTES);
    if !whole(offset_bytes) || !whole(len_bytes) || len_bytes > block::MAX_TRANSFER_BYTES {
        return Err(EINVAL);
    }
    if len_bytes == 0 || (!is_write && offset_bytes == size_bytes) {
        return Ok(None);
    }
    match offset_bytes.checked_add(len_bytes) {
        Some(end) if end <= size_bytes => Ok(Some(Transfer { offset_bytes, len_bytes })),
        _ => Err(EINVAL),
    }
}

/// One open of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Open {
    pub offset_bytes: u64,
    pub readable: bool,
    pub writable: bool,
}

/// The open handles of one device, and its size.
pub struct Opens {
    table: HandleTable<Open>,
    size_bytes: u64,
    read_only: bool,
}

impl Opens {
    /// No handles yet; `seed` feeds the handles' check values.
    pub fn new(seed: u64, size_bytes: u64, read_only: bool) -> Opens {
        Opens { table: HandleTable::new(seed), size_bytes, read_only }
    }

    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// Handles open.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// `device::OP_OPEN` with `flags` and the rest of the path after the
    /// device entry (`rest`, which must be empty: a block device has no
    /// names inside). Returns the handle.
    pub fn open(&mut self, flags: u64, rest: &[u8]) -> Result<u64, Errno> {
        if !rest.is_empty() {
            return Err(ENOENT);
        }
        let writable = open_flags::writable(flags);
        if writable && self.read_only {
            return Err(EROFS);
        }
        let open = Open { offset_bytes: 0, readable: open_flags::readable(flags), writable };
        self.table.insert(open, ENFILE)
    }

    pub fn get(&self, handle: u64) -> Result<Open, Errno> {
        self.table.get(handle).copied()
    }

    /// `io::OP_CLOSE`.
    pub fn close(&mut self, handle: u64) -> Result<(), Errno> {
        self.table.remove(handle).map(|_| ())
    }

    /// Start a READ or WRITE of `len_bytes` on `handle`: check it and
    /// advance the handle's offset past it. `Ok(None)`: end of the device
    /// (a READ of 0 bytes).
    pub fn start(&mut self, handle: u64, len_bytes: u64, is_write: bool) -> Result<Option<Transfer>, Errno> {
        let size_bytes = self.size_bytes;
        let open = self.table.get_mut(handle)?;
        let allowed = if is_write { open.writable } else { open.readable };
        if !allowed {
            return Err(EBADF);
        }
        let transfer = check(open.offset_bytes, len_bytes, size_bytes, is_write)?;
        if let Some(t) = transfer {
            open.offset_bytes = t.offset_bytes + t.len_bytes;
        }
        Ok(transfer)
    }

    /// Start a positional READ or WRITE (`io::OP_PREAD`, `OP_PWRITE`) of
    /// `len_bytes` at `offset_bytes` on `handle`: checked as [`Opens::start`]
    /// checks, but the handle's offset is neither used nor moved, so the
    /// transfer's end needs no [`Opens::finish`].
    pub fn start_at(
        &self,
        handle: u64,
        offset_bytes: u64,
        len_bytes: u64,
        is_write: bool,
    ) -> Result<Option<Transfer>, Errno> {
        let open = self.table.get(handle)?;
        let allowed = if is_write { open.writable } else { open.readable };
        if !allowed {
            return Err(EBADF);
        }
        check(offset_bytes, len_bytes, self.size_bytes, is_write)
    }

    /// A transfer [`Opens::start`] gave ended; when it failed, the offset
    /// goes back to where it began unless something moved it since (a
    /// seek, another transfer). A handle closed meanwhile is ignored.
    pub fn finish(&mut self, handle: u64, t: Transfer, ok: bool) {
        if let Ok(open) = self.table.get_mut(handle)
            && !ok
            && open.offset_bytes == t.offset_bytes + t.len_bytes
        {
            open.offset_bytes = t.offset_bytes;
        }
    }

    /// `io::OP_SEEK` (any offset: a later transfer checks alignment).
    pub fn seek(&mut self, handle: u64, offset: i64, whence: u64) -> Result<u64, Errno> {
        let size_bytes = self.size_bytes;
        let open = self.table.get_mut(handle)?;
        open.offset_bytes = crate::seek::seek_offset(open.offset_bytes, size_bytes, offset, whence)?;
        Ok(open.offset_bytes)
    }

    /// `io::OP_FSTAT`: a block device of the driver `pid`, `queue`.
    pub fn fstat(&self, handle: u64, pid: u64, queue: u32) -> Result<Stat, Errno> {
        self.table.get(handle)?;
        Ok(Stat {
            ino: 0,
            mode: mode::S_IFBLK | 0o660,
            nlink: 1,
            uid: 0,
            gid: 0,
            size_bytes: self.size_bytes,
            mtime_ns: 0,
            device_pid: pid,
            device_queue: queue,
        })
    }

    /// A handle that names an open, for requests that need no more
    /// (`io::OP_FSYNC`).
    pub fn check_handle(&self, handle: u64) -> Result<(), Errno> {
        self.table.get(handle).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocols::unix::open_flags::{O_RDONLY, O_RDWR, O_WRONLY};

    const MIB: u64 = 1 << 20;

    #[test]
    fn transfers_are_whole_blocks_inside_the_device() {
        assert_eq!(check(0, 512, MIB, false), Ok(Some(Transfer { offset_bytes: 0, len_bytes: 512 })));
        assert_eq!(check(1024, 64 << 10, MIB, true).unwrap().unwrap().first_block(), 2);
        assert_eq!(check(0, 511, MIB, false), Err(EINVAL), "partial block");
        assert_eq!(check(100, 512, MIB, false), Err(EINVAL), "unaligned offset");
        assert_eq!(check(0, block::MAX_TRANSFER_BYTES + 512, 4 * MIB, false), Err(EINVAL), "too long");
        assert_eq!(check(0, block::MAX_TRANSFER_BYTES, MIB, true).map(|t| t.is_some()), Ok(true));
        assert_eq!(check(MIB - 512, 1024, MIB, true), Err(EINVAL), "runs past the end");
        assert_eq!(check(MIB - 512, 1024, MIB, false), Err(EINVAL), "a read too");
        assert_eq!(check(MIB, 512, MIB, false), Ok(None), "a read at the end is end of file");
        assert_eq!(check(MIB, 512, MIB, true), Err(EINVAL), "a write at the end runs past it");
        assert_eq!(check(2 * MIB, 512, MIB, false), Err(EINVAL), "beyond the end");
        assert_eq!(check(0, 0, MIB, true), Ok(None), "nothing to do");
        assert_eq!(check(u64::MAX - 511, 512, u64::MAX, true), Err(EINVAL), "overflow");
    }

    #[test]
    fn handles_offsets_and_modes() {
        let mut o = Opens::new(7, MIB, false);
        let r = o.open(O_RDONLY, b"").unwrap();
        let w = o.open(O_WRONLY, b"").unwrap();
        assert_eq!(o.open(O_RDWR, b"x"), Err(ENOENT));
        assert_eq!(o.start(r, 512, true), Err(EBADF), "write on a read-only open");
        assert_eq!(o.start(w, 512, false), Err(EBADF), "read on a write-only open");
        let t = o.start(r, 1024, false).unwrap().unwrap();
        assert_eq!((t.offset_bytes, o.get(r).unwrap().offset_bytes), (0, 1024));
        let t2 = o.start(r, 512, false).unwrap().unwrap();
        assert_eq!(t2.offset_bytes, 1024, "a second request in flight takes the next blocks");
        o.finish(r, t2, false);
        assert_eq!(o.get(r).unwrap().offset_bytes, 1024, "a failed transfer gives its blocks back");
        o.finish(r, t, true);
        assert_eq!(o.get(r).unwrap().offset_bytes, 1024);
        let t3 = o.start(r, 512, false).unwrap().unwrap();
        assert_eq!(o.seek(r, 0, crate::seek::SEEK_SET), Ok(0));
        o.finish(r, t3, false);
        assert_eq!(o.get(r).unwrap().offset_bytes, 0, "unless something moved the offset since");
        assert_eq!(o.seek(r, 1024, crate::seek::SEEK_SET), Ok(1024));
        assert_eq!(o.start(r, 100, false), Err(EINVAL));
        assert_eq!(o.get(r).unwrap().offset_bytes, 1024, "a refused request moves nothing");
        assert_eq!(o.seek(r, 0, crate::seek::SEEK_END), Ok(MIB));
        assert_eq!(o.start(r, 512, false), Ok(None), "end of device");
        assert_eq!(o.seek(r, 3, crate::seek::SEEK_SET), Ok(3));
        assert_eq!(o.start(r, 512, false), Err(EINVAL), "unaligned offset after a seek");
        let st = o.fstat(w, 9, 0).unwrap();
        assert_eq!((st.mode, st.size_bytes, st.device_pid), (mode::S_IFBLK | 0o660, MIB, 9));
        o.close(w).unwrap();
        assert_eq!(o.fstat(w, 9, 0), Err(EBADF));
        assert_eq!(o.close(w), Err(EBADF));
        assert_eq!(o.check_handle(r ^ (1 << 40)), Err(EBADF), "a guessed handle");
    }

    #[test]
    fn positional_transfers_leave_the_offset_alone() {
        let mut o = Opens::new(3, MIB, false);
        let r = o.open(O_RDONLY, b"").unwrap();
        let w = o.open(O_WRONLY, b"").unwrap();
        assert_eq!(o.seek(r, 2048, crate::seek::SEEK_SET), Ok(2048));
        let t = o.start_at(r, 4096, 1024, false).unwrap().unwrap();
        assert_eq!((t.offset_bytes, t.len_bytes, t.first_block()), (4096, 1024, 8));
        assert_eq!(o.get(r).unwrap().offset_bytes, 2048, "the handle's offset is not moved");
        assert_eq!(o.start_at(r, 0, 512, true), Err(EBADF), "pwrite on a read-only open");
        assert_eq!(o.start_at(w, 0, 512, false), Err(EBADF), "pread on a write-only open");
        assert_eq!(o.start_at(w, 100, 512, true), Err(EINVAL), "unaligned offset");
        assert_eq!(o.start_at(w, 0, 100, true), Err(EINVAL), "partial block");
        assert_eq!(o.start_at(w, MIB - 512, 1024, true), Err(EINVAL), "past the end");
        assert_eq!(o.start_at(w, u64::MAX - 511, 512, true), Err(EINVAL), "overflow");
        assert_eq!(o.start_at(r, MIB, 512, false), Ok(None), "a pread at the end is end of file");
        assert_eq!(o.start_at(r ^ (1 << 40), 0, 512, false), Err(EBADF), "a guessed handle");
        assert_eq!(o.get(w).unwrap().offset_bytes, 0, "refused requests move nothing");
    }

    #[test]
    fn read_only_devices_refuse_writable_opens() {
        let mut o = Opens::new(1, MIB, true);
        assert_eq!(o.open(O_RDWR, b""), Err(EROFS));
        assert!(o.open(O_RDONLY, b"").is_ok());
    }
}
