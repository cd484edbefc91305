//! Block devices from UNIX programs (`/dev/vda`, `/dev/ram0`): the
//! descriptor's manager is the device's driver, which speaks
//! `protocols::unix::block`. Every `read` or `write` is ONE call to the
//! driver, whatever its size: the program's buffer is lent to the driver
//! for the call (`msg::call` lends its send and receive buffers; the
//! driver moves the bytes with `lease_read`/`lease_write`), so a 64 KiB
//! transfer is one request at the device, not sixteen 4 KiB messages
//! (seed 000: block-mode I/O, unbuffered).
//!
//! What it is not: a cache or a splitter. A length or offset that is not
//! whole 512-byte blocks, or a transfer past the end, comes back from the
//! driver as `EINVAL` with nothing moved; a buffer the kernel cannot reach
//! is `EFAULT`.

use super::{Errno, Fd, fd_entry, from_kernel};
use crate::msg;
use protocols::unix::{self as ux, io};

/// `read()` on a block device: one call; the bytes read (0 at the end).
pub(super) fn read(fd: Fd, buf: &mut [u8]) -> Result<usize, Errno> {
    let (link, info) = fd_entry(fd)?;
    let request = [io::OP_READ, info.handle, buf.len() as u64, 0];
    let (w, _) = msg::call(link, &request, &[], buf).map_err(from_kernel)?;
    ux::result(w[0]).map(|n| (n as usize).min(buf.len()))
}

/// `write()` on a block device: one call; all of `buf` or an error.
pub(super) fn write(fd: Fd, buf: &[u8]) -> Result<usize, Errno> {
    let (link, info) = fd_entry(fd)?;
    let request = [io::OP_WRITE, info.handle, buf.len() as u64, 0];
    let (w, _) = msg::call(link, &request, buf, &mut []).map_err(from_kernel)?;
    ux::result(w[0]).map(|n| (n as usize).min(buf.len()))
}

/// `fsync()` on a block device: the driver flushes the device's cache.
pub(super) fn fsync(fd: Fd) -> Result<(), Errno> {
    let (link, info) = fd_entry(fd)?;
    let (w, _) = msg::call(link, &[io::OP_FSYNC, info.handle, 0, 0], &[], &mut []).map_err(from_kernel)?;
    ux::result(w[0]).map(|_| ())
}
