//! Pipes from UNIX programs: every `read` or `write` is ONE call to the
//! pipe's manager (`protocols::unix::pipe`), whatever its size: the
//! program's buffer is lent to the manager for the call, which moves the
//! bytes with leases (through its buffer, or in `loan` mode straight from
//! the writer's buffer to the reader's), so a 64 KiB `write` is one round
//! trip, not sixteen 4 KiB messages (seed 002, NetBSD's pipes).
//!
//! A `write` returns only when the manager has taken all its bytes (into
//! its buffer, or to readers): the program may then overwrite or free the
//! buffer without changing what a reader gets. A `read` returns what the
//! pipe holds now (it waits only on an empty pipe).
//!
//! What it is not: a splitter of small requests. Only buffers longer than
//! the longest lease (`abi::lease::MAX_LEASE_BYTES`) take more than one
//! call.

use super::{Errno, Fd, errno, fd_entry, from_kernel};
use crate::msg;
use abi::lease::MAX_LEASE_BYTES;
use protocols::unix::{self as ux, io};

/// `read()` on a pipe: one call; the bytes read (0 at end of file).
pub(super) fn read(fd: Fd, buf: &mut [u8]) -> Result<usize, Errno> {
    let (link, info) = fd_entry(fd)?;
    let len = buf.len().min(MAX_LEASE_BYTES as usize);
    let buf = &mut buf[..len];
    let request = [io::OP_READ, info.handle, len as u64, 0];
    let (w, _) = msg::call(link, &request, &[], buf).map_err(from_kernel)?;
    ux::result(w[0]).map(|n| (n as usize).min(len))
}

/// `write()` on a pipe: one call per `MAX_LEASE_BYTES`; all of `buf`
/// unless an error stops it (then the bytes written before it, if any).
pub(super) fn write(fd: Fd, buf: &[u8]) -> Result<usize, Errno> {
    let (link, info) = fd_entry(fd)?;
    let mut done = 0;
    while done < buf.len() {
        let chunk = &buf[done..buf.len().min(done + MAX_LEASE_BYTES as usize)];
        let request = [io::OP_WRITE, info.handle, chunk.len() as u64, 0];
        let written = msg::call(link, &request, chunk, &mut [])
            .map_err(from_kernel)
            .and_then(|(w, _)| ux::result(w[0]));
        match written {
            Ok(n) if n > 0 => done += (n as usize).min(chunk.len()),
            Ok(_) if done == 0 => return Err(errno::EIO),
            Err(e) if done == 0 => return Err(e),
            _ => break,
        }
    }
    Ok(done)
}
