//! The program's memory, through `foreign_read` and `foreign_write`
//! (pieces of at most `abi::foreign::MAX_COPY_BYTES`). Every failure is
//! EFAULT: the address was the program's, and so is the mistake.

use abi::Pid;
use abi::foreign::MAX_COPY_BYTES;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::{Errno, errno};
use runtime::sys;

/// Most bytes one read or write of the program's moves through this
/// server (bigger requests are cut: a short read or write, as Linux may).
pub const MAX_TRANSFER_BYTES: usize = 1 << 20;
/// Longest path or string the program may pass (Linux's PATH_MAX).
pub const PATH_MAX: usize = 4096;

pub fn read(pid: Pid, addr: u64, len: usize) -> Result<Vec<u8>, Errno> {
    let mut out = vec![0u8; len];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(MAX_COPY_BYTES as usize);
        let from = addr.checked_add(at as u64).ok_or(errno::EFAULT)?;
        sys::foreign_read(pid, from, &mut out[at..at + n]).map_err(|_| errno::EFAULT)?;
        at += n;
    }
    Ok(out)
}

pub fn write(pid: Pid, addr: u64, bytes: &[u8]) -> Result<(), Errno> {
    for (i, chunk) in bytes.chunks(MAX_COPY_BYTES as usize).enumerate() {
        let to = addr.checked_add((i * MAX_COPY_BYTES as usize) as u64).ok_or(errno::EFAULT)?;
        sys::foreign_write(pid, to, chunk).map_err(|_| errno::EFAULT)?;
    }
    Ok(())
}

/// A NUL-terminated string at `addr`, read a page at a time so that a
/// string ending just before an unmapped page is still read.
pub fn read_cstr(pid: Pid, addr: u64) -> Result<Vec<u8>, Errno> {
    let page = abi::layout::PAGE_SIZE;
    let mut out = Vec::new();
    let mut at = addr;
    loop {
        let n = (page - at % page) as usize;
        let chunk = read(pid, at, n)?;
        if let Some(end) = chunk.iter().position(|&b| b == 0) {
            out.extend_from_slice(&chunk[..end]);
            return Ok(out);
        }
        out.extend_from_slice(&chunk);
        if out.len() > PATH_MAX {
            return Err(errno::ENAMETOOLONG);
        }
        at = at.checked_add(n as u64).ok_or(errno::EFAULT)?;
    }
}

pub fn read_path(pid: Pid, addr: u64) -> Result<alloc::string::String, Errno> {
    let bytes = read_cstr(pid, addr)?;
    alloc::string::String::from_utf8(bytes).map_err(|_| errno::EINVAL)
}
