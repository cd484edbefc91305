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
//! [`copy_segments`] moves bytes from one process's memory to another's
//! the same way, both sides checked first: the message system's one copy,
//! whether of one range ([`copy_between`]: a message's data, a reply, a
//! lease), of a lease's segments, a byte at a time (PDDRIVER's,
//! `abi::lease::BYTE_AT_A_TIME`) or with whole pages lent
//! ([`lend_between`]). One check of a range (`check_in_list`), one walk
//! that copies (`PageTable::copy_pieces`).
//!
//! What it is not: a way to reach user memory by its virtual address (the
//! kernel never dereferences one), or a copy that takes page faults (a
//! page not mapped for the access is `BadAddress`, never a fault served on
//! the process's behalf).

use crate::arch::paging::{COPY_ON_WRITE, CopyMode, PageTable, USER, WRITABLE, is_device};
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
        self.check_in_list(space, need_write, &mut None).map(|_| ())
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
        // An empty range alleges nothing: its address may be anything (an
        // empty Rust slice's is dangling), so no page is looked at.
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

/// Which side of a copy is a list of segments; the other is one range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListSide {
    /// Gather: the segments are read, the range written.
    Source,
    /// Scatter: the range is read, the segments written.
    Destination,
}

/// The shape of a copy between two address spaces: `segments` (address,
/// length) in turn on `side`, and on the other side one range from
/// `range`, as long as the segments add up to. A plain copy is one
/// segment ([`copy_between`]); a lease's segments (`abi::lease::SEGMENTS`)
/// are many on the server's side, the lent buffer the range.
#[derive(Clone, Copy, Debug)]
pub struct Segments<I> {
    pub segments: I,
    pub side: ListSide,
    pub range: u64,
}

/// What [`check_copy`] found: the bytes to move, and whether a page of
/// the destination is copy-on-write (to be made private first).
#[derive(Clone, Copy, Debug)]
struct Checked {
    total: u64,
    dst_has_cow: bool,
}

/// Copy `len` bytes from `src` in `src_space` to `dst` in `dst_space`: one
/// copy, frame to frame, no bounce buffer. Both ranges are checked (and
/// the destination's copy-on-write pages made private) before a byte
/// moves, so a failed copy changes nothing. The one-segment case of
/// [`copy_segments`].
pub fn copy_between(
    src_space: &AddressSpace,
    src: u64,
    dst_space: &mut AddressSpace,
    dst: u64,
    len: u64,
) -> Result<(), Error> {
    copy_between_blaming(src_space, src, dst_space, dst, len).map_err(|(e, _)| e)
}

/// Whose memory refused a copy: the side an error belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blame {
    /// The range read from (its numbers or its pages).
    Source,
    /// The range written to, or the frames its copy-on-write pages needed.
    Destination,
}

/// [`copy_between`], telling which side an error belongs to, so that a
/// caller who must answer the two sides differently (the direct handoff
/// of `Kernel::deliver`: a bad source buffer is the sender's error, a bad
/// receive buffer the receiver's) needs no check of its own before the
/// copy's. The same checks in the same order as [`copy_segments`] with
/// one segment: the source range, then the destination range, each page
/// looked at once; then the destination's copy-on-write pages made
/// private (only when one was seen); then the one pass.
pub fn copy_between_blaming(
    src_space: &AddressSpace,
    src: u64,
    dst_space: &mut AddressSpace,
    dst: u64,
    len: u64,
) -> Result<(), (Error, Blame)> {
    let blame = |side| move |e| (e, side);
    UserSlice::new(src, len)
        .and_then(|s| s.check_in_list(src_space, false, &mut None))
        .map_err(blame(Blame::Source))?;
    let dst_has_cow = UserSlice::new(dst, len)
        .and_then(|d| d.check_in_list(dst_space, true, &mut None))
        .map_err(blame(Blame::Destination))?;
    let one = Segments { segments: core::iter::once((src, len)), side: ListSide::Source, range: dst };
    copy_checked(src_space, dst_space, one, Checked { total: len, dst_has_cow }, CopyMode::Bulk)
        .map_err(blame(Blame::Destination))
}

/// The kernel's one way to move bytes between two processes (a message's
/// data, a reply, a lease in bulk or a byte at a time, a lease's segments,
/// a foreign process's memory; [`lend_between`] uses its two halves):
/// copy `s` from `src_space` to `dst_space` as `mode` says, and return
/// the bytes moved. The range side may be at most `range_max` bytes long
/// (a lease's lent length past the offset), else `InvalidArgument`.
///
/// Every segment, then the range, is checked before a byte moves
/// (present user pages, RAM; the destination writable or copy-on-write;
/// each page looked at once for as many segments as lie in it); then the
/// destination's copy-on-write pages are made its own, only when a page
/// looked at was one; then one pass copies, each page of either side
/// looked up once ([`PageTable::copy_pieces`]). So bad input changes
/// nothing; only running out of frames while making pages private
/// (`OutOfResources`) can stop it part way, and before the pass. A
/// segment of length 0 alleges nothing: no page of it is looked at.
pub fn copy_segments<I: Iterator<Item = (u64, u64)> + Clone>(
    src_space: &AddressSpace,
    dst_space: &mut AddressSpace,
    s: Segments<I>,
    range_max: u64,
    mode: CopyMode,
) -> Result<u64, Error> {
    let checked = check_copy(src_space, dst_space, s.clone(), range_max)?;
    copy_checked(src_space, dst_space, s, checked, mode)?;
    Ok(checked.total)
}

/// The checks of [`copy_segments`], in this order: each segment (the
/// server's side of a lease: `BadAddress` for its own bad memory), their
/// sum against `range_max` (`InvalidArgument`), then the range.
fn check_copy<I: Iterator<Item = (u64, u64)>>(
    src_space: &AddressSpace,
    dst_space: &AddressSpace,
    s: Segments<I>,
    range_max: u64,
) -> Result<Checked, Error> {
    let is_scatter = s.side == ListSide::Destination;
    let (list_space, range_space) = if is_scatter { (dst_space, src_space) } else { (src_space, dst_space) };
    let (mut total, mut last_page, mut list_cow) = (0u64, None, false);
    for (addr, len) in s.segments {
        list_cow |= UserSlice::new(addr, len)?.check_in_list(list_space, is_scatter, &mut last_page)?;
        total = total.checked_add(len).ok_or(Error::InvalidArgument)?;
    }
    if total > range_max {
        return Err(Error::InvalidArgument);
    }
    let range_cow = UserSlice::new(s.range, total)?.check_in_list(range_space, !is_scatter, &mut None)?;
    Ok(Checked { total, dst_has_cow: if is_scatter { list_cow } else { range_cow } })
}

/// The rest of [`copy_segments`], for a copy [`check_copy`] passed: the
/// destination's copy-on-write pages made private when it found one, then
/// the one pass.
fn copy_checked<I: Iterator<Item = (u64, u64)> + Clone>(
    src_space: &AddressSpace,
    dst_space: &mut AddressSpace,
    s: Segments<I>,
    checked: Checked,
    mode: CopyMode,
) -> Result<(), Error> {
    let is_scatter = s.side == ListSide::Destination;
    if checked.dst_has_cow {
        if is_scatter {
            for (addr, len) in s.segments.clone() {
                UserSlice { addr, len }.make_private(dst_space)?;
            }
        } else {
            UserSlice { addr: s.range, len: checked.total }.make_private(dst_space)?;
        }
    }
    let pieces = s.segments.scan(s.range, |at, (addr, len)| {
        let piece = if is_scatter { (*at, addr, len) } else { (addr, *at, len) };
        *at += len;
        Some(piece)
    });
    // Checked above, and nothing has changed a page since but the
    // destination's copy-on-write ones, now private and writable: a fault
    // here would be a kernel bug, reported as the address it is.
    PageTable::copy_pieces(src_space.table(), dst_space.table_mut(), pieces, mode)
        .map_err(|_| Error::BadAddress)
}

/// Move `len` bytes from `src` in `src_space` to `dst` in `dst_space` as
/// [`copy_between`] does, but lend each whole page copy-on-write instead
/// of copying it where both sides sit at the same offset within a page
/// (NetBSD's `uvm_loan`, seed 002): the destination's page is replaced by
/// the source's frame, read-only on both sides until either writes. The
/// partial pages at either end, a page of a shared window, and anything
/// that cannot be lent are copied. Both ranges are checked once, before a
/// byte moves or a page is lent. Returns (bytes copied, pages lent).
pub fn lend_between(
    src_space: &mut AddressSpace,
    src: u64,
    dst_space: &mut AddressSpace,
    dst: u64,
    len: u64,
) -> Result<(u64, u64), Error> {
    // The copy of `n` bytes at `at` into the range: one segment.
    let part = |at: u64, n: u64| {
        let one =
            Segments { segments: core::iter::once((src + at, n)), side: ListSide::Source, range: dst + at };
        (one, n)
    };
    let (whole, _) = part(0, len);
    let dst_has_cow = check_copy(src_space, dst_space, whole, len)?.dst_has_cow;
    let copy = |src_space: &AddressSpace, dst_space: &mut AddressSpace, at: u64, n: u64| {
        let (one, total) = part(at, n);
        copy_checked(src_space, dst_space, one, Checked { total, dst_has_cow }, CopyMode::Bulk)
    };
    if src % PAGE_SIZE != dst % PAGE_SIZE {
        copy(&*src_space, dst_space, 0, len)?;
        return Ok((len, 0));
    }
    let head = ((PAGE_SIZE - src % PAGE_SIZE) % PAGE_SIZE).min(len);
    let pages = (len - head) / PAGE_SIZE;
    let tail = len - head - pages * PAGE_SIZE;
    // The partial pages at either end first (an empty end moves nothing):
    // before any loan, so a page made private here is never one about to
    // be replaced by a lent frame.
    copy(src_space, dst_space, 0, head)?;
    copy(src_space, dst_space, head + pages * PAGE_SIZE, tail)?;
    let (mut copied, mut lent) = (head + tail, 0);
    for i in 0..pages {
        let at = head + i * PAGE_SIZE;
        if let Some(frame) = src_space.loan_page(src + at) {
            match dst_space.map_loaned(dst + at, frame) {
                Ok(()) => {
                    lent += 1;
                    continue;
                }
                Err((_, frame)) => drop(frame),
            }
        }
        copy(&*src_space, dst_space, at, PAGE_SIZE)?;
        copied += PAGE_SIZE;
    }
    Ok((copied, lent))
}
