//! A caller's buffer as a file server reaches it: [`Lent`], the send
//! buffer (read) and receive buffer (write) that a `call` lends its server
//! until the reply (`abi::Call::LeaseRead`/`LeaseWrite`,
//! `docs/messages.md`). memfs and the per-file managers move a `read`'s or
//! `write`'s bytes straight between the file's pages and the lent buffer,
//! one copy, whatever the size (issue 11; Hubris's leases).
//!
//! What it is not: the kernel calls. The servers implement [`Lent`] with
//! `runtime::lease`; the host tests and the servers' own copies (boot
//! modules, a write that came inside the message) use [`Bytes`] and
//! [`BytesMut`], plain slices.
//!
//! # Invariants
//! - A transfer names parts of the server's memory that follow one another
//!   in the lent buffer, from one offset on; an implementation may copy
//!   them in any number of steps, but reports an error if any byte could
//!   not be moved. What a failed `read_parts` left in the parts is
//!   unspecified: callers that must change nothing on failure
//!   ([`Lent::may_fail`]) read into memory they can throw away or clear.

use protocols::unix::Errno;
use protocols::unix::errno::EFAULT;

/// The buffer lent with a call (or a slice standing in for it).
pub trait Lent {
    /// Fill `parts`, one after another, from the lent send buffer at
    /// `offset` on. `EFAULT`: the lender's memory is not there; `EINVAL`:
    /// out of the lease's bounds; `EIO`: the lender is gone.
    fn read_parts(&mut self, offset: u64, parts: &mut [&mut [u8]]) -> Result<(), Errno>;
    /// Copy `parts`, one after another, into the lent receive buffer at
    /// `offset` on. Errors as [`Lent::read_parts`].
    fn write_parts(&mut self, offset: u64, parts: &[&[u8]]) -> Result<(), Errno>;
    /// Can a transfer fail half-way? A slice cannot; a lease can (a page
    /// of the lender's buffer is unmapped), so a write that must be all or
    /// nothing takes care first.
    fn may_fail(&self) -> bool {
        true
    }
}

/// A slice of this process as the source of a write.
pub struct Bytes<'a>(pub &'a [u8]);

impl Lent for Bytes<'_> {
    fn read_parts(&mut self, offset: u64, parts: &mut [&mut [u8]]) -> Result<(), Errno> {
        let mut at = usize::try_from(offset).map_err(|_| EFAULT)?;
        for part in parts.iter_mut() {
            let src = self.0.get(at..at + part.len()).ok_or(EFAULT)?;
            part.copy_from_slice(src);
            at += part.len();
        }
        Ok(())
    }

    fn write_parts(&mut self, _offset: u64, _parts: &[&[u8]]) -> Result<(), Errno> {
        Err(EFAULT) // a source only
    }

    fn may_fail(&self) -> bool {
        false
    }
}

/// A slice of this process as the destination of a read.
pub struct BytesMut<'a>(pub &'a mut [u8]);

impl Lent for BytesMut<'_> {
    fn read_parts(&mut self, _offset: u64, _parts: &mut [&mut [u8]]) -> Result<(), Errno> {
        Err(EFAULT) // a destination only
    }

    fn write_parts(&mut self, offset: u64, parts: &[&[u8]]) -> Result<(), Errno> {
        let mut at = usize::try_from(offset).map_err(|_| EFAULT)?;
        for part in parts {
            let dst = self.0.get_mut(at..at + part.len()).ok_or(EFAULT)?;
            dst.copy_from_slice(part);
            at += part.len();
        }
        Ok(())
    }

    fn may_fail(&self) -> bool {
        false
    }
}

/// A page of zeros: what a hole reads as, lent out as a part.
pub static ZERO_PAGE: [u8; abi::layout::PAGE_SIZE as usize] = [0; abi::layout::PAGE_SIZE as usize];

/// Test doubles: a lender whose buffer has a hole in it.
#[cfg(test)]
pub mod testing {
    use super::Lent;
    use alloc::vec::Vec;
    use core::ops::Range;
    use protocols::unix::Errno;
    use protocols::unix::errno::{EFAULT, EINVAL};

    /// A lent buffer of `bytes` whose byte range `unmapped` cannot be
    /// reached (as a lender's unmapped page), copied in pieces so that a
    /// failure comes half-way, as the kernel's may between two runs.
    pub struct Lender {
        pub bytes: Vec<u8>,
        pub unmapped: Range<usize>,
        /// Transfers made (kernel calls, in the server).
        pub transfers: usize,
    }

    impl Lender {
        pub fn new(bytes: Vec<u8>) -> Lender {
            Lender { bytes, unmapped: 0..0, transfers: 0 }
        }

        fn check(&self, at: usize, len: usize) -> Result<(), Errno> {
            if at + len > self.bytes.len() {
                return Err(EINVAL);
            }
            if at < self.unmapped.end && self.unmapped.start < at + len {
                return Err(EFAULT);
            }
            Ok(())
        }
    }

    impl Lent for Lender {
        fn read_parts(&mut self, offset: u64, parts: &mut [&mut [u8]]) -> Result<(), Errno> {
            let mut at = offset as usize;
            for part in parts.iter_mut() {
                self.transfers += 1;
                self.check(at, part.len())?;
                part.copy_from_slice(&self.bytes[at..at + part.len()]);
                at += part.len();
            }
            Ok(())
        }

        fn write_parts(&mut self, offset: u64, parts: &[&[u8]]) -> Result<(), Errno> {
            let mut at = offset as usize;
            for part in parts {
                self.transfers += 1;
                self.check(at, part.len())?;
                self.bytes[at..at + part.len()].copy_from_slice(part);
                at += part.len();
            }
            Ok(())
        }
    }
}
