//! The one checked way the kernel reads and writes user memory.
//!
//! A [`UserSlice`] is an *allegation* (Hubris's word) by a user program
//! that a range of its address space holds something. Making one checks
//! only the numbers (no wrap, inside the user half); each access then walks
//! the page tables of the address space it is read against, page by page,
//! and requires a present user mapping (writable, for writes). Memory is
//! reached through the direct map by physical address (arch's
//! `PageTable::read`/`write`), so a bad pointer can only produce
//! [`Error::BadAddress`], never a kernel fault, and the target address
//! space need not be the current one.
//!
//! [`copy_between`] moves bytes from one process's memory to another's the
//! same way, both ranges checked first: the message system's one copy.

use crate::arch::paging::{COPY_ON_WRITE, PageTable, USER, WRITABLE, is_device};
use crate::memory::AddressSpace;
use abi::Error;
use abi::layout::{PAGE_SIZE, USER_END};

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

    /// Check the whole range: present user pages, and writable (in
    /// hardware, or copy-on-write) when `need_write`. Used before a copy so
    /// that a failed one changes nothing.
    pub fn check(&self, space: &AddressSpace, need_write: bool) -> Result<(), Error> {
        // An empty range alleges nothing: its address may be anything (an
        // empty Rust slice's is dangling), so no page is looked at.
        let mut va = self.addr & !(PAGE_SIZE - 1);
        while self.len > 0 && va < self.addr + self.len {
            let (_, flags) = space.translate(va).ok_or(Error::BadAddress)?;
            let is_writable = flags & (WRITABLE | COPY_ON_WRITE) != 0;
            if flags & USER == 0 || is_device(flags) || (need_write && !is_writable) {
                return Err(Error::BadAddress);
            }
            va += PAGE_SIZE;
        }
        Ok(())
    }

    /// [`UserSlice::check`] for one of a list of ranges (a lease's
    /// segments, `abi::lease::SEGMENTS`): a page equal to `*last_page`,
    /// the last one checked for the list (with the same `need_write`), is
    /// not looked up again; `*last_page` is the range's last page after.
    /// Returns whether a page looked at is copy-on-write (the caller then
    /// makes the written side private; with none, there is nothing to do).
    pub fn check_in_list(
        &self,
        space: &AddressSpace,
        need_write: bool,
        last_page: &mut Option<u64>,
    ) -> Result<bool, Error> {
        let mut has_cow = false;
        let mut va = self.addr & !(PAGE_SIZE - 1);
        while self.len > 0 && va < self.addr + self.len {
            if *last_page != Some(va) {
                let (_, flags) = space.translate(va).ok_or(Error::BadAddress)?;
                let is_writable = flags & (WRITABLE | COPY_ON_WRITE) != 0;
                if flags & USER == 0 || is_device(flags) || (need_write && !is_writable) {
                    return Err(Error::BadAddress);
                }
                has_cow |= flags & COPY_ON_WRITE != 0;
                *last_page = Some(va);
            }
            va += PAGE_SIZE;
        }
        Ok(has_cow)
    }

    /// Copy the range into `dst` (whose length must equal the range's).
    pub fn read(&self, space: &AddressSpace, dst: &mut [u8]) -> Result<(), Error> {
        assert_eq!(dst.len() as u64, self.len);
        space.table().read(self.addr, dst).map_err(|_| Error::BadAddress)
    }

    /// Check the range for writing and give this process its own copy of
    /// every copy-on-write page in it, so the kernel can write there.
    pub fn prepare_write(&self, space: &mut AddressSpace) -> Result<(), Error> {
        self.check(space, true)?;
        self.make_private(space)
    }

    /// The second half of [`UserSlice::prepare_write`], for a range
    /// already checked for writing: this process's own copy of every
    /// copy-on-write page in it.
    pub fn make_private(&self, space: &mut AddressSpace) -> Result<(), Error> {
        let mut va = self.addr & !(PAGE_SIZE - 1);
        while self.len > 0 && va < self.addr + self.len {
            if space.translate(va).is_some_and(|(_, f)| f & COPY_ON_WRITE != 0)
                && !space.resolve_copy_on_write(va)
            {
                return Err(Error::OutOfResources);
            }
            va += PAGE_SIZE;
        }
        Ok(())
    }

    /// Copy `src` (whose length must equal the range's) into the range.
    pub fn write(&self, space: &mut AddressSpace, src: &[u8]) -> Result<(), Error> {
        assert_eq!(src.len() as u64, self.len);
        self.prepare_write(space)?;
        space.table_mut().write(self.addr, src).map_err(|_| Error::BadAddress)
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

/// Copy `len` bytes from `src` in `src_space` to `dst` in `dst_space`: one
/// copy, frame to frame, no bounce buffer. Both ranges are checked (and
/// the destination's copy-on-write pages made private) before a byte
/// moves, so a failed copy changes nothing.
pub fn copy_between(
    src_space: &AddressSpace,
    src: u64,
    dst_space: &mut AddressSpace,
    dst: u64,
    len: u64,
) -> Result<(), Error> {
    copy_between_as(src_space, src, dst_space, dst, len, false)
}

/// [`copy_between`], with `is_byte_at_a_time` for a PDDRIVER-style copy
/// (`abi::lease::BYTE_AT_A_TIME`).
pub fn copy_between_as(
    src_space: &AddressSpace,
    src: u64,
    dst_space: &mut AddressSpace,
    dst: u64,
    len: u64,
    is_byte_at_a_time: bool,
) -> Result<(), Error> {
    UserSlice::new(src, len)?.check(src_space, false)?;
    UserSlice::new(dst, len)?.prepare_write(dst_space)?;
    let copy = if is_byte_at_a_time { PageTable::copy_byte_at_a_time } else { PageTable::copy };
    copy(src_space.table(), src, dst_space.table_mut(), dst, len).map_err(|_| Error::BadAddress)
}

/// Move `len` bytes from `src` in `src_space` to `dst` in `dst_space` as
/// [`copy_between`] does, but lend each whole page copy-on-write instead
/// of copying it where both sides sit at the same offset within a page
/// (NetBSD's `uvm_loan`, seed 002): the destination's page is replaced by
/// the source's frame, read-only on both sides until either writes. The
/// partial pages at either end, a page of a shared window, and anything
/// that cannot be lent are copied. Both ranges are checked before a byte
/// moves. Returns (bytes copied, pages lent).
pub fn lend_between(
    src_space: &mut AddressSpace,
    src: u64,
    dst_space: &mut AddressSpace,
    dst: u64,
    len: u64,
) -> Result<(u64, u64), Error> {
    UserSlice::new(src, len)?.check(src_space, false)?;
    UserSlice::new(dst, len)?.check(dst_space, true)?;
    if src % PAGE_SIZE != dst % PAGE_SIZE {
        copy_between(src_space, src, dst_space, dst, len)?;
        return Ok((len, 0));
    }
    let head = ((PAGE_SIZE - src % PAGE_SIZE) % PAGE_SIZE).min(len);
    let pages = (len - head) / PAGE_SIZE;
    let tail = len - head - pages * PAGE_SIZE;
    let (mut copied, mut lent) = (0, 0);
    if head > 0 {
        copy_between(src_space, src, dst_space, dst, head)?;
        copied += head;
    }
    for i in 0..pages {
        let (s, d) = (src + head + i * PAGE_SIZE, dst + head + i * PAGE_SIZE);
        if let Some(frame) = src_space.loan_page(s) {
            match dst_space.map_loaned(d, frame) {
                Ok(()) => {
                    lent += 1;
                    continue;
                }
                Err((_, frame)) => drop(frame),
            }
        }
        copy_between(src_space, s, dst_space, d, PAGE_SIZE)?;
        copied += PAGE_SIZE;
    }
    if tail > 0 {
        let at = head + pages * PAGE_SIZE;
        copy_between(src_space, src + at, dst_space, dst + at, tail)?;
        copied += tail;
    }
    Ok((copied, lent))
}
