//! `lseek`'s rule, shared by memfs and the file managers: the `whence`
//! values of `io::OP_SEEK` and the offset they lead to.
//!
//! What it is not: a description. The caller keeps the offset and the
//! file's size; this only computes the new offset.
//!
//! # Invariants
//! - An offset is never negative and never above `i64::MAX` (the value
//!   travels back as a POSIX `off_t`); a seek that would leave that range
//!   is `EINVAL` and moves nothing.
//! - Seeking past the end is allowed (a later write leaves a hole).

use protocols::unix::Errno;
use protocols::unix::errno::EINVAL;

/// `whence` values of `io::OP_SEEK`, defined with the protocol.
pub use protocols::unix::io::{SEEK_CUR, SEEK_END, SEEK_SET};

/// The offset `offset` bytes from `whence` ([`SEEK_SET`]: 0, [`SEEK_CUR`]:
/// `current_bytes`, [`SEEK_END`]: `end_bytes`); `EINVAL` for another
/// `whence` or a result out of range.
pub fn seek_offset(current_bytes: u64, end_bytes: u64, offset: i64, whence: u64) -> Result<u64, Errno> {
    let base = match whence {
        SEEK_SET => 0,
        SEEK_CUR => current_bytes,
        SEEK_END => end_bytes,
        _ => return Err(EINVAL),
    };
    let new = base as i128 + offset as i128;
    if new < 0 || new > i64::MAX as i128 {
        return Err(EINVAL);
    }
    Ok(new as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whence_and_range() {
        assert_eq!(seek_offset(5, 10, 4, SEEK_SET), Ok(4));
        assert_eq!(seek_offset(5, 10, -2, SEEK_CUR), Ok(3));
        assert_eq!(seek_offset(5, 10, -3, SEEK_END), Ok(7));
        assert_eq!(seek_offset(5, 10, 100, SEEK_END), Ok(110), "past the end");
        assert_eq!(seek_offset(5, 10, -1, SEEK_SET), Err(EINVAL));
        assert_eq!(seek_offset(5, 10, -11, SEEK_END), Err(EINVAL));
        assert_eq!(seek_offset(5, 10, 0, 3), Err(EINVAL));
        assert_eq!(seek_offset(0, 0, i64::MAX, SEEK_SET), Ok(i64::MAX as u64));
        assert_eq!(seek_offset(i64::MAX as u64, 0, 1, SEEK_CUR), Err(EINVAL));
        assert_eq!(seek_offset(0, u64::MAX, 0, SEEK_END), Err(EINVAL), "an end beyond i64");
        assert_eq!(seek_offset(u64::MAX, 0, i64::MIN, SEEK_CUR), Ok(i64::MAX as u64));
    }
}
