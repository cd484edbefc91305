//! memfs's bottom layer: a regular file's bytes ([`Contents`]) and the
//! volume's space they are counted against ([`Space`]).
//!
//! What it is not: an inode. It knows no names, modes or times; the tree
//! (`super::tree`) holds a [`Contents`] in each regular file's inode and
//! stamps the time when the bytes change.
//!
//! # Invariants
//! - The bytes are a vector of optional pages of [`PAGE_BYTES`]: a hole
//!   (`None`, or past the vector's end) reads as zeros, and every byte of
//!   an allocated page at or past the size is zero, so growing a file
//!   never has to clear old bytes.
//! - Every page held is counted in [`Space::stored_bytes`], which never
//!   exceeds [`Space::capacity_bytes`]; page memory is allocated fallibly,
//!   and running out is `ENOSPC`, never a panic.

use alloc::boxed::Box;
use alloc::vec::Vec;

use protocols::unix::Errno;
use protocols::unix::errno::{EFBIG, ENOMEM, ENOSPC};

use crate::lease::{Bytes, BytesMut, Lent, ZERO_PAGE};

/// Bytes in one data page of a file: the machine's page
/// (`abi::layout::PAGE_SIZE`).
pub(super) const PAGE_BYTES: usize = abi::layout::PAGE_SIZE as usize;

type DataPage = Box<[u8; PAGE_BYTES]>;

/// The volume's room for file data.
pub(super) struct Space {
    /// Bytes of data pages held by every file together.
    pub(super) stored_bytes: u64,
    /// The most that may be held, and so also the largest file.
    pub(super) capacity_bytes: u64,
}

/// A regular file's bytes: its pages and its size.
#[derive(Default)]
pub(super) struct Contents {
    pages: Vec<Option<DataPage>>,
    size_bytes: u64,
}

/// A zero-filled page, or `None` when memory is exhausted.
fn new_page() -> Option<DataPage> {
    let mut v: Vec<u8> = Vec::new();
    v.try_reserve_exact(PAGE_BYTES).ok()?;
    v.resize(PAGE_BYTES, 0);
    v.into_boxed_slice().try_into().ok()
}

/// The pages' bytes from `offset_bytes` for `len` bytes, as parts in
/// order; every page there must be held.
fn page_parts(
    pages: &mut [Option<DataPage>],
    offset_bytes: u64,
    len: usize,
) -> Result<Vec<&mut [u8]>, Errno> {
    let mut parts: Vec<&mut [u8]> = Vec::new();
    parts.try_reserve_exact(len.div_ceil(PAGE_BYTES) + 1).map_err(|_| ENOSPC)?;
    if len == 0 {
        return Ok(parts);
    }
    let first = (offset_bytes / PAGE_BYTES as u64) as usize;
    let mut within = (offset_bytes % PAGE_BYTES as u64) as usize;
    let mut left = len;
    for slot in pages[first..].iter_mut() {
        if left == 0 {
            break;
        }
        let page = slot.as_mut().ok_or(ENOSPC)?;
        let chunk = (PAGE_BYTES - within).min(left);
        parts.push(&mut page[within..within + chunk]);
        left -= chunk;
        within = 0;
    }
    Ok(parts)
}

fn pages_for(size_bytes: u64) -> u64 {
    size_bytes.div_ceil(PAGE_BYTES as u64)
}

impl Contents {
    pub(super) fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// Bytes of the pages held (holes take none): what [`Space`] counts.
    pub(super) fn bytes_held(&self) -> u64 {
        self.pages.iter().filter(|p| p.is_some()).count() as u64 * PAGE_BYTES as u64
    }

    /// Bytes from `offset_bytes` into `buf`; 0 at or past the end. Holes
    /// read as zeros.
    pub(super) fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> usize {
        let len = buf.len() as u64;
        self.read_to(offset_bytes, len, &mut BytesMut(buf)).unwrap_or(0)
    }

    /// Up to `len` bytes from `offset_bytes` into `to` (a caller's lent
    /// buffer), straight from the pages (holes from [`ZERO_PAGE`]): the
    /// bytes moved, 0 at or past the end. `ENOMEM` when the list of parts
    /// cannot be had; the lease's errors (`EFAULT`, ...) as it gives them.
    pub(super) fn read_to(&self, offset_bytes: u64, len: u64, to: &mut dyn Lent) -> Result<usize, Errno> {
        let size_bytes = self.size_bytes;
        if offset_bytes >= size_bytes || len == 0 {
            return Ok(0);
        }
        let n = len.min(size_bytes - offset_bytes) as usize;
        let mut parts: Vec<&[u8]> = Vec::new();
        parts.try_reserve_exact(n.div_ceil(PAGE_BYTES) + 1).map_err(|_| ENOMEM)?;
        let mut done = 0;
        while done < n {
            let pos = offset_bytes + done as u64;
            let index = (pos / PAGE_BYTES as u64) as usize;
            let within = (pos % PAGE_BYTES as u64) as usize;
            let chunk = (PAGE_BYTES - within).min(n - done);
            parts.push(match self.pages.get(index).and_then(|p| p.as_ref()) {
                Some(page) => &page[within..within + chunk],
                None => &ZERO_PAGE[..chunk],
            });
            done += chunk;
        }
        to.write_parts(0, &parts)?;
        Ok(n)
    }

    /// Write `len` bytes of `from` (a caller's lent buffer, from its
    /// offset 0) at `offset_bytes`, straight into the pages; as
    /// a write must be (`EFBIG` past the largest file, `ENOSPC` when the
    /// pages cannot be had), and all or nothing also when the lease
    /// fails half-way (`EFAULT`): the bytes that would land past the old
    /// size go straight into the pages and are cleared again on failure;
    /// those that would overwrite old bytes are first read aside, so the
    /// old bytes change only once every byte has arrived.
    pub(super) fn write_from(
        &mut self,
        offset_bytes: u64,
        len: u64,
        from: &mut dyn Lent,
        space: &mut Space,
    ) -> Result<usize, Errno> {
        if len == 0 {
            return Ok(0);
        }
        let end = offset_bytes.checked_add(len).ok_or(EFBIG)?;
        let capacity = space.capacity_bytes;
        if end > capacity {
            return Err(EFBIG);
        }
        let len = usize::try_from(len).map_err(|_| EFBIG)?;
        let pages = &mut self.pages;
        let first = (offset_bytes / PAGE_BYTES as u64) as usize;
        let last = ((end - 1) / PAGE_BYTES as u64) as usize;
        let missing = (first..=last).filter(|&i| pages.get(i).is_none_or(|p| p.is_none())).count() as u64;
        let new_bytes = missing * PAGE_BYTES as u64;
        if space.stored_bytes.checked_add(new_bytes).is_none_or(|total| total > capacity) {
            return Err(ENOSPC);
        }
        if pages.len() <= last {
            pages.try_reserve(last + 1 - pages.len()).map_err(|_| ENOSPC)?;
            pages.resize_with(last + 1, || None);
        }
        // Take every page first, so a failure leaves the data unchanged.
        let mut added = 0u64;
        let mut short = false;
        for slot in &mut pages[first..=last] {
            if slot.is_none() {
                match new_page() {
                    Some(p) => {
                        *slot = Some(p);
                        added += 1;
                    }
                    None => {
                        short = true;
                        break;
                    }
                }
            }
        }
        // The pages taken hold zeros past the size, as the invariant wants;
        // they stay counted until the file shrinks or goes, also when the
        // write fails below.
        space.stored_bytes += added * PAGE_BYTES as u64;
        if short {
            return Err(ENOSPC);
        }
        // Bytes below the old size overwrite data: from a lease that may
        // fail, they are read aside first (one extra copy, only for
        // overwrites).
        let overwrite = (self.size_bytes.saturating_sub(offset_bytes)).min(len as u64) as usize;
        let mut aside: Vec<u8> = Vec::new();
        if overwrite > 0 && from.may_fail() {
            aside.try_reserve_exact(overwrite).map_err(|_| ENOSPC)?;
            aside.resize(overwrite, 0);
            from.read_parts(0, &mut [&mut aside[..]])?;
        }
        // The rest straight into the pages, in place.
        let direct_from = if aside.is_empty() { 0 } else { overwrite };
        let mut parts = page_parts(pages, offset_bytes + direct_from as u64, len - direct_from)?;
        if let Err(e) = from.read_parts(direct_from as u64, &mut parts) {
            // Only bytes at or past the old size were touched: clear them.
            for part in parts.iter_mut() {
                part.fill(0);
            }
            return Err(e);
        }
        drop(parts);
        if !aside.is_empty() {
            let mut parts = page_parts(pages, offset_bytes, overwrite)?;
            let _ = Bytes(&aside).read_parts(0, &mut parts);
        }
        self.size_bytes = self.size_bytes.max(end);
        Ok(len)
    }

    /// Set the size: shrinking frees whole pages (back to `space`) and
    /// clears the tail of the last one; growing leaves a hole. `EFBIG`
    /// past the largest file.
    pub(super) fn truncate(&mut self, size_bytes: u64, space: &mut Space) -> Result<(), Errno> {
        if size_bytes > space.capacity_bytes {
            return Err(EFBIG);
        }
        let pages = &mut self.pages;
        let mut freed = 0u64;
        if size_bytes < self.size_bytes {
            let keep = pages_for(size_bytes) as usize;
            if pages.len() > keep {
                freed = pages[keep..].iter().filter(|p| p.is_some()).count() as u64;
                pages.truncate(keep);
            }
            let within = (size_bytes % PAGE_BYTES as u64) as usize;
            if within != 0
                && let Some(Some(page)) = pages.get_mut(keep - 1)
            {
                page[within..].fill(0);
            }
        }
        self.size_bytes = size_bytes;
        space.stored_bytes -= freed * PAGE_BYTES as u64;
        Ok(())
    }
}

// The data as clients reach it: through `Fs`'s handles and its by-inode
// calls.
#[cfg(test)]
mod tests {
    use super::PAGE_BYTES;
    use crate::memfs::open::Fs;
    use crate::memfs::testing::{CAP, create, fs, read_all, stat};
    use crate::memfs::tree::ROOT_INO;
    use crate::seek::{SEEK_CUR, SEEK_SET};
    use alloc::vec::Vec;
    use protocols::unix::errno::{EFBIG, EINVAL, EISDIR, ENOENT, ENOSPC};
    use protocols::unix::open_flags::{O_CREAT, O_RDWR};
    use std::vec;

    #[test]
    fn holes_and_pages() {
        let mut f = fs();
        let (h, s) = f.open("/tmp/sparse", O_CREAT | O_RDWR, 0o644, 0, 0).unwrap();
        let far = 10 * PAGE_BYTES as u64 + 100;
        assert_eq!(f.seek(h, far as i64, SEEK_SET).unwrap(), far);
        assert_eq!(f.write(h, b"end").unwrap(), 3);
        assert_eq!(f.fstat(h).unwrap().size_bytes, far + 3);
        assert_eq!(f.stats().bytes_stored, PAGE_BYTES as u64, "only the touched page is held");
        let mut buf = vec![0xffu8; 200];
        assert_eq!(f.read_at(s.ino, far - 100, &mut buf).unwrap(), 103);
        assert!(buf[..100].iter().all(|&b| b == 0));
        assert_eq!(&buf[100..103], b"end");
        assert_eq!(f.read_at(s.ino, 5, &mut buf).unwrap(), 200);
        assert!(buf.iter().all(|&b| b == 0), "a hole reads as zeros");
        // A write across a page boundary.
        let data: Vec<u8> = (0..PAGE_BYTES as u32 + 10).map(|i| i as u8).collect();
        assert_eq!(f.write_at(s.ino, 3 * PAGE_BYTES as u64 - 5, &data).unwrap(), data.len());
        let mut back = vec![0u8; data.len()];
        assert_eq!(f.read_at(s.ino, 3 * PAGE_BYTES as u64 - 5, &mut back).unwrap(), data.len());
        assert_eq!(back, data);
        assert_eq!(f.stats().bytes_stored, 4 * PAGE_BYTES as u64);
        assert_eq!(f.write_at(s.ino, 0, b"").unwrap(), 0);
        f.close(h).unwrap();
    }

    #[test]
    fn eight_megabytes() {
        let mut f = fs();
        let (h, s) = f.open("/tmp/big", O_CREAT | O_RDWR, 0o644, 0, 0).unwrap();
        let block: Vec<u8> = (0..8192u32).map(|i| (i * 7) as u8).collect();
        for _ in 0..1024 {
            assert_eq!(f.write(h, &block).unwrap(), block.len());
        }
        assert_eq!(f.fstat(h).unwrap().size_bytes, 8 << 20);
        assert_eq!(f.stats().bytes_stored, 8 << 20);
        f.seek(h, 0, SEEK_SET).unwrap();
        let mut buf = vec![0u8; 8192];
        for _ in 0..1024 {
            assert_eq!(f.read(h, &mut buf).unwrap(), 8192);
            assert_eq!(buf, block);
        }
        assert_eq!(f.read(h, &mut buf).unwrap(), 0);
        f.close(h).unwrap();
        f.unlink("/tmp/big").unwrap();
        assert_eq!(f.stats().bytes_stored, 0);
        assert!(f.read_at(s.ino, 0, &mut buf).is_err(), "the inode is gone");
    }

    #[test]
    fn truncate_shrinks_and_grows() {
        let mut f = fs();
        let data = vec![0xabu8; 3 * PAGE_BYTES];
        let ino = create(&mut f, "/tmp/t", &data);
        assert_eq!(f.stats().bytes_stored, 3 * PAGE_BYTES as u64);
        f.truncate(ino, PAGE_BYTES as u64 + 10).unwrap();
        assert_eq!(f.stats().bytes_stored, 2 * PAGE_BYTES as u64);
        assert_eq!(stat(&f, "/tmp/t").size_bytes, PAGE_BYTES as u64 + 10);
        // Growing again shows zeros where the old bytes were.
        f.truncate(ino, 3 * PAGE_BYTES as u64).unwrap();
        let back = read_all(&mut f, "/tmp/t");
        assert_eq!(back.len(), 3 * PAGE_BYTES);
        assert!(back[..PAGE_BYTES + 10].iter().all(|&b| b == 0xab));
        assert!(back[PAGE_BYTES + 10..].iter().all(|&b| b == 0));
        // Page-aligned shrink, and to zero.
        f.truncate(ino, PAGE_BYTES as u64).unwrap();
        assert_eq!(f.stats().bytes_stored, PAGE_BYTES as u64);
        f.truncate(ino, 0).unwrap();
        assert_eq!(f.stats().bytes_stored, 0);
        assert_eq!(read_all(&mut f, "/tmp/t"), b"");
        // Errors.
        assert_eq!(f.truncate(ino, CAP + 1), Err(EFBIG));
        assert_eq!(f.truncate(ROOT_INO, 0), Err(EISDIR));
        assert_eq!(f.truncate(9999, 0), Err(ENOENT));
        let mut buf = [0u8; 1];
        assert_eq!(f.read_at(ROOT_INO, 0, &mut buf), Err(EISDIR));
        assert_eq!(f.write_at(ROOT_INO, 0, b"x"), Err(EISDIR));
        let dev = f.mkdev("/tmp/dev", 1, 0, 0o600, 0, 0).unwrap().ino;
        assert_eq!(f.read_at(dev, 0, &mut buf), Err(EINVAL));
        assert_eq!(f.write_at(dev, 0, b"x"), Err(EINVAL));
        assert_eq!(f.truncate(dev, 0), Err(EINVAL));
    }

    #[test]
    fn capacity_limits() {
        let mut f = Fs::new(1, 4 * PAGE_BYTES as u64);
        let (h, s) = f.open("/f", O_CREAT | O_RDWR, 0o644, 0, 0).unwrap();
        assert_eq!(f.write_at(s.ino, 4 * PAGE_BYTES as u64, b"x"), Err(EFBIG), "past the largest file");
        assert_eq!(f.write_at(s.ino, u64::MAX, b"xy"), Err(EFBIG), "offset overflow");
        assert_eq!(f.write(h, &vec![1u8; 3 * PAGE_BYTES]).unwrap(), 3 * PAGE_BYTES);
        let (h2, s2) = f.open("/g", O_CREAT | O_RDWR, 0o644, 0, 0).unwrap();
        assert_eq!(f.write(h2, &vec![2u8; 2 * PAGE_BYTES]).unwrap_err(), ENOSPC);
        assert_eq!(f.fstat(h2).unwrap().size_bytes, 0, "all or nothing");
        assert_eq!(f.seek(h2, 0, SEEK_CUR).unwrap(), 0);
        assert_eq!(f.write(h2, &vec![2u8; PAGE_BYTES]).unwrap(), PAGE_BYTES);
        // Overwriting held pages needs no space.
        assert_eq!(f.write_at(s.ino, 0, &vec![3u8; 3 * PAGE_BYTES]).unwrap(), 3 * PAGE_BYTES);
        assert_eq!(f.write_at(s2.ino, PAGE_BYTES as u64, b"x"), Err(ENOSPC));
        f.close(h).unwrap();
        f.unlink("/f").unwrap();
        assert_eq!(f.write_at(s2.ino, PAGE_BYTES as u64, b"x"), Ok(1), "space came back");
        f.close(h2).unwrap();
    }
}
