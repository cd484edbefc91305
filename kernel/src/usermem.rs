//! The one checked way the kernel reads and writes user memory.
//!
//! A [`UserSlice`] is an *allegation* (Hubris's word) by a user program
//! that a range of its address space holds something. Making one checks
//! only the numbers (no wrap, inside the user half); each access then walks
//! the page tables of the address space it is read against, page by page,
//! and requires a present user mapping (writable, for writes). Memory is
//! reached through the direct map by physical address, so a bad pointer
//! can only produce [`Error::BadAddress`], never a kernel fault, and the
//! target address space need not be the current one.
//!
//! [`copy_between`] moves bytes from one process's memory to another's the
//! same way, both ranges checked first: the message system's one copy.

use crate::arch::paging::{self, COPY_ON_WRITE, PAGE_BYTES, USER, WRITABLE};
use crate::memory::AddressSpace;
use abi::Error;
use abi::layout::USER_END;

#[derive(Clone, Copy, Debug)]
pub struct UserSlice {
    addr: u64,
    len: u64,
}

impl UserSlice {
    /// Check the numbers of `addr..addr+len`.
    pub fn new(addr: u64, len: u64) -> Result<UserSlice, Error> {
        let end = addr.checked_add(len).ok_or(Error::BadAddress)?;
        if end > USER_END {
            return Err(Error::BadAddress);
        }
        Ok(UserSlice { addr, len })
    }

    /// Visit the physical pieces of the range, one per page, checking access.
    fn for_each_piece(
        &self,
        space: &AddressSpace,
        need_write: bool,
        mut f: impl FnMut(u64, usize, usize),
    ) -> Result<(), Error> {
        let mut done = 0u64;
        while done < self.len {
            let va = self.addr + done;
            let (pa, flags) = space.translate(va).ok_or(Error::BadAddress)?;
            let writable = flags & (WRITABLE | COPY_ON_WRITE) != 0;
            if flags & USER == 0 || (need_write && !writable) {
                return Err(Error::BadAddress);
            }
            let in_page = (PAGE_BYTES - (va % PAGE_BYTES)).min(self.len - done);
            f(pa, done as usize, in_page as usize);
            done += in_page;
        }
        Ok(())
    }

    /// Check the whole range first, so that a failed copy changes nothing.
    pub fn check(&self, space: &AddressSpace, need_write: bool) -> Result<(), Error> {
        self.for_each_piece(space, need_write, |_, _, _| {})
    }

    /// Copy the range into `dst` (whose length must equal the range's).
    pub fn read(&self, space: &AddressSpace, dst: &mut [u8]) -> Result<(), Error> {
        assert_eq!(dst.len() as u64, self.len);
        self.check(space, false)?;
        self.for_each_piece(space, false, |pa, at, n| {
            let offset = (pa % PAGE_BYTES) as usize;
            paging::copy_from_frame(pa - offset as u64, offset, &mut dst[at..at + n]);
        })
    }

    /// Check the range for writing and give this process its own copy of
    /// every copy-on-write page in it, so the kernel can write there.
    pub fn prepare_write(&self, space: &mut AddressSpace) -> Result<(), Error> {
        self.check(space, true)?;
        let mut va = self.addr & !(PAGE_BYTES - 1);
        while va < self.addr + self.len {
            if space.translate(va).is_some_and(|(_, f)| f & COPY_ON_WRITE != 0)
                && !space.resolve_copy_on_write(va)
            {
                return Err(Error::OutOfResources);
            }
            va += PAGE_BYTES;
        }
        Ok(())
    }

    /// Copy `src` (whose length must equal the range's) into the range.
    pub fn write(&self, space: &mut AddressSpace, src: &[u8]) -> Result<(), Error> {
        assert_eq!(src.len() as u64, self.len);
        self.prepare_write(space)?;
        self.for_each_piece(space, true, |pa, at, n| {
            let offset = (pa % PAGE_BYTES) as usize;
            paging::copy_to_frame(pa - offset as u64, offset, &src[at..at + n]);
        })
    }

    /// Read a sub-range `[offset, offset + dst.len())` of this slice.
    pub fn read_at(&self, space: &AddressSpace, offset: u64, dst: &mut [u8]) -> Result<(), Error> {
        let end = offset.checked_add(dst.len() as u64).ok_or(Error::BadAddress)?;
        if end > self.len {
            return Err(Error::BadAddress);
        }
        UserSlice { addr: self.addr + offset, len: dst.len() as u64 }.read(space, dst)
    }
}

/// Copy `len` bytes from `src` in `src_space` to `dst` in `dst_space`,
/// page piece by page piece, between physical frames: one copy, no bounce
/// buffer. Both ranges are checked (and the destination's copy-on-write
/// pages made private) before a byte moves, so a failed copy changes
/// nothing.
pub fn copy_between(
    src_space: &AddressSpace,
    src: u64,
    dst_space: &mut AddressSpace,
    dst: u64,
    len: u64,
) -> Result<(), Error> {
    let src_slice = UserSlice::new(src, len)?;
    let dst_slice = UserSlice::new(dst, len)?;
    src_slice.check(src_space, false)?;
    dst_slice.prepare_write(dst_space)?;
    let mut done = 0;
    while done < len {
        let (s, d) = (src + done, dst + done);
        let (spa, _) = src_space.translate(s).ok_or(Error::BadAddress)?;
        let (dpa, _) = dst_space.translate(d).ok_or(Error::BadAddress)?;
        let n = (PAGE_BYTES - s % PAGE_BYTES).min(PAGE_BYTES - d % PAGE_BYTES).min(len - done);
        paging::copy_between_frames(
            spa & !(PAGE_BYTES - 1),
            (s % PAGE_BYTES) as usize,
            dpa & !(PAGE_BYTES - 1),
            (d % PAGE_BYTES) as usize,
            n as usize,
        );
        done += n;
    }
    Ok(())
}
