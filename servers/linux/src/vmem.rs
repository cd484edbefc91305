//! The program's `mmap` region: which addresses are handed out, which
//! are free again after `munmap`, and the `MAP_SHARED` file mappings whose
//! bytes go back to their file (docs/linux-abi.md "Memory").
//!
//! What it is: the bookkeeping of the upper half of the heap region
//! (`calls::BRK_LIMIT..MMAP_END`), first fit over the ranges `munmap` gave
//! back (adjacent ones merged) and then fresh addresses above the highest
//! one used, so a program that maps and unmaps in a loop reuses its
//! addresses instead of running out of them; `munmap` and `mprotect` are
//! carried out by the kernel (`sys::foreign_unmap`, `foreign_protect`:
//! the pages' memory goes back to the system, a read-only page faults on
//! a write).
//!
//! What it is not: a page cache. A `MAP_SHARED` file mapping is a copy of
//! the file's bytes, written back to the file at `msync`, at `munmap` and
//! when the program exits; another process reading the file meanwhile sees
//! it as it was (Linux's page cache would show it the writes at once), and
//! two processes mapping one file do not see each other's writes.
//!
//! Invariants: free ranges are page aligned, inside the region, disjoint
//! and not adjacent (merged), and all below `next`.

use crate::mem;
use abi::Pid;
use abi::layout::PAGE_SIZE;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use protocols::unix::{Errno, errno};
use runtime::{sys, unix};

type Result<T> = core::result::Result<T, Errno>;

/// `mprotect`'s PROT_WRITE and the bits Linux knows on x86-64
/// (PROT_READ, PROT_WRITE, PROT_EXEC, PROT_SEM, PROT_GROWSDOWN/UP).
const PROT_WRITE: u64 = 2;
const PROT_KNOWN: u64 = 0x7 | 0x8 | 0x0100_0000 | 0x0200_0000;
/// `msync`'s flags: MS_ASYNC, MS_INVALIDATE, MS_SYNC.
const MS_KNOWN: u64 = 1 | 2 | 4;
/// Bytes written back to a file per piece.
const WRITE_BACK_PIECE_BYTES: usize = 64 * 1024;

/// A `MAP_SHARED` mapping of a file: its bytes go back to the file.
#[derive(Clone, Copy, Debug)]
struct SharedFile {
    addr: u64,
    len: u64,
    /// A duplicate of the program's descriptor, so that closing its own
    /// does not stop the write-back (Linux keeps the file open too).
    fd: i32,
    offset: u64,
}

pub struct Space {
    start: u64,
    end: u64,
    /// Lowest address never handed out.
    next: u64,
    /// Ranges given back by `munmap`: start -> length.
    free: BTreeMap<u64, u64>,
    shared: Vec<SharedFile>,
}

impl Space {
    pub fn new(start: u64, end: u64) -> Space {
        Space { start, end, next: start, free: BTreeMap::new(), shared: Vec::new() }
    }

    /// `len` bytes (page multiple) of free addresses.
    pub fn take(&mut self, len: u64) -> Result<u64> {
        if let Some((&at, &have)) = self.free.iter().find(|&(_, &have)| have >= len) {
            self.free.remove(&at);
            if have > len {
                self.free.insert(at + len, have - len);
            }
            return Ok(at);
        }
        if self.next.saturating_add(len) > self.end {
            return Err(errno::ENOMEM);
        }
        let at = self.next;
        self.next += len;
        Ok(at)
    }

    /// `MAP_FIXED`: `addr..addr+len` is in use from now on.
    pub fn claim(&mut self, addr: u64, len: u64) {
        self.cut_free(addr, len);
        self.next = self.next.max(addr + len);
    }

    /// `addr..addr+len` is free again (merged with its neighbours).
    fn give_back(&mut self, addr: u64, len: u64) {
        self.cut_free(addr, len);
        let (mut start, mut end) = (addr, addr + len);
        if let Some((&before, &n)) = self.free.range(..start).next_back()
            && before + n == start
        {
            self.free.remove(&before);
            start = before;
        }
        if let Some(&n) = self.free.get(&end) {
            self.free.remove(&end);
            end += n;
        }
        if end >= self.next {
            // The top of what was handed out: lower the mark instead.
            self.next = start.min(self.next);
        } else {
            self.free.insert(start, end - start);
        }
    }

    /// Removes `addr..addr+len` from the free ranges (splitting them).
    fn cut_free(&mut self, addr: u64, len: u64) {
        let end = addr + len;
        let overlapping: Vec<(u64, u64)> =
            self.free.range(..end).filter(|&(&s, &n)| s + n > addr).map(|(&s, &n)| (s, n)).collect();
        for (s, n) in overlapping {
            self.free.remove(&s);
            if s < addr {
                self.free.insert(s, addr - s);
            }
            if s + n > end {
                self.free.insert(end, s + n - end);
            }
        }
    }

    /// Remembers a `MAP_SHARED` mapping of descriptor `fd` at `offset`.
    pub fn add_shared(&mut self, addr: u64, len: u64, fd: i32, offset: u64) -> Result<()> {
        let copy = unix::dup(fd)?;
        self.shared.push(SharedFile { addr, len, fd: copy, offset });
        Ok(())
    }

    /// `munmap`: shared file bytes back to their files, then the pages
    /// back to the system and the addresses to the free ranges.
    pub fn unmap(&mut self, pid: Pid, addr: u64, len: u64) -> Result<u64> {
        let (addr, len) = page_range(addr, len)?;
        self.write_back(pid, addr, len)?;
        self.forget_shared(addr, len);
        sys::foreign_unmap(pid, addr, len).map_err(|_| errno::EINVAL)?;
        // Only the region's addresses are this allocator's; elsewhere
        // (the program's image, its stack) the pages are gone all the same.
        let from = addr.max(self.start);
        let to = (addr + len).min(self.end);
        if from < to {
            self.give_back(from, to - from);
        }
        Ok(0)
    }

    /// `msync`: the shared file bytes of the range back to their files.
    pub fn sync(&mut self, pid: Pid, addr: u64, len: u64, flags: u64) -> Result<u64> {
        if flags & !MS_KNOWN != 0 || flags & 1 != 0 && flags & 4 != 0 {
            return Err(errno::EINVAL);
        }
        let (addr, len) = page_range(addr, len)?;
        self.write_back(pid, addr, len).map(|()| 0)
    }

    /// Every shared file mapping back to its file (the program exits).
    pub fn sync_all(&mut self, pid: Pid) {
        for m in self.shared.clone() {
            let _ = self.write_back(pid, m.addr, m.len);
        }
    }

    /// `mprotect`: read-only, or writable again. `PROT_NONE` is read-only
    /// here (a page cannot be made unreadable: docs/linux-abi.md).
    pub fn protect(&mut self, pid: Pid, addr: u64, len: u64, prot: u64) -> Result<u64> {
        if prot & !PROT_KNOWN != 0 {
            return Err(errno::EINVAL);
        }
        if !addr.is_multiple_of(PAGE_SIZE) {
            return Err(errno::EINVAL);
        }
        if len == 0 {
            return Ok(0);
        }
        let (addr, len) = page_range(addr, len)?;
        match sys::foreign_protect(pid, addr, len, prot & PROT_WRITE != 0) {
            Ok(_) => Ok(0),
            // Linux: ENOMEM for addresses outside the process's space.
            Err(abi::Error::BadAddress) => Err(errno::ENOMEM),
            Err(abi::Error::OutOfResources) => Err(errno::EAGAIN),
            Err(_) => Err(errno::EINVAL),
        }
    }

    /// Writes the bytes of `addr..addr+len` that shared file mappings
    /// cover back to their files (not past a file's end: Linux does not
    /// grow a file through a mapping either).
    fn write_back(&mut self, pid: Pid, addr: u64, len: u64) -> Result<()> {
        let end = addr + len;
        for m in self.shared.iter().filter(|m| m.addr < end && addr < m.addr + m.len) {
            let from = m.addr.max(addr);
            let size = unix::fstat(m.fd)?.size_bytes;
            let file_end = m.addr + size.saturating_sub(m.offset).min(m.len);
            let to = (m.addr + m.len).min(end).min(file_end);
            let was = unix::lseek(m.fd, 0, unix::SEEK_CUR)?;
            let mut at = from;
            let mut result = Ok(());
            while at < to && result.is_ok() {
                let n = ((to - at) as usize).min(WRITE_BACK_PIECE_BYTES);
                result = mem::read(pid, at, n).and_then(|bytes| {
                    unix::lseek(m.fd, (m.offset + (at - m.addr)) as i64, unix::SEEK_SET)?;
                    unix::write(m.fd, &bytes).map(|_| ())
                });
                at += n as u64;
            }
            let _ = unix::lseek(m.fd, was as i64, unix::SEEK_SET);
            result?;
        }
        Ok(())
    }

    /// Drops the shared mappings inside `addr..addr+len` (a mapping cut
    /// in part keeps the rest).
    fn forget_shared(&mut self, addr: u64, len: u64) {
        let end = addr + len;
        let mut kept = Vec::new();
        for m in core::mem::take(&mut self.shared) {
            let m_end = m.addr + m.len;
            if m_end <= addr || end <= m.addr {
                kept.push(m);
                continue;
            }
            let mut still_used = false;
            if m.addr < addr {
                kept.push(SharedFile { len: addr - m.addr, ..m });
                still_used = true;
            }
            if end < m_end {
                kept.push(SharedFile { addr: end, len: m_end - end, offset: m.offset + (end - m.addr), ..m });
                still_used = true;
            }
            if !still_used {
                let _ = unix::close(m.fd);
            } else if m.addr < addr && end < m_end {
                // Cut in two: the second piece gets its own descriptor.
                if let Ok(copy) = unix::dup(m.fd)
                    && let Some(last) = kept.last_mut()
                {
                    last.fd = copy;
                }
            }
        }
        self.shared = kept;
    }
}

/// A page-aligned, non-empty range in the user half, its length rounded
/// up to whole pages (Linux's checks for `munmap` and `msync`).
fn page_range(addr: u64, len: u64) -> Result<(u64, u64)> {
    if !addr.is_multiple_of(PAGE_SIZE) || len == 0 {
        return Err(errno::EINVAL);
    }
    let len = len.checked_next_multiple_of(PAGE_SIZE).ok_or(errno::EINVAL)?;
    match addr.checked_add(len) {
        Some(end) if end <= abi::layout::USER_END => Ok((addr, len)),
        _ => Err(errno::EINVAL),
    }
}
