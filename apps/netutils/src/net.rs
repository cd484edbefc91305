//! Socket I/O for the network programs, on top of `runtime::unix`.

use alloc::vec::Vec;
use runtime::eprintln;
use runtime::unix::{self, Errno, Fd};

/// The status every program exits with after an error.
pub const FAILURE: i32 = 1;

/// Bytes moved per read or write.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// Report `prog: what: <errno name>` on standard error.
pub fn report(prog: &str, what: &str, e: Errno) {
    eprintln!("{prog}: {what}: {}", e.name());
}

/// Write all of `buf` to `fd`.
pub fn write_all(fd: Fd, buf: &[u8]) -> Result<(), Errno> {
    let mut done = 0;
    while done < buf.len() {
        match unix::write(fd, &buf[done..])? {
            0 => return Err(protocols::unix::errno::EIO),
            n => done += n,
        }
    }
    Ok(())
}

/// Read from `fd` into `buf` (which may already hold bytes) until it
/// holds a whole head; the head's length, or `None` at the end of the
/// stream before one, or `Err(EMSGSIZE)` past `limit` bytes.
pub fn read_head(fd: Fd, buf: &mut Vec<u8>, limit: usize) -> Result<Option<usize>, Errno> {
    let mut chunk = alloc::vec![0u8; 4096];
    loop {
        if let Some(end) = crate::http::head_end(buf) {
            return Ok(Some(end));
        }
        if buf.len() > limit {
            return Err(protocols::unix::errno::EMSGSIZE);
        }
        let n = unix::read(fd, &mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Copy everything from `from` to `to` until the end of `from`; the bytes.
pub fn copy(from: Fd, to: Fd) -> Result<u64, Errno> {
    let mut buf = alloc::vec![0u8; CHUNK_BYTES];
    let mut total = 0;
    loop {
        let n = unix::read(from, &mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        write_all(to, &buf[..n])?;
        total += n as u64;
    }
}
