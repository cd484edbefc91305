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
use protocols::unix::errno::{EFBIG, ENOSPC};

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
        let size_bytes = self.size_bytes;
        if offset_bytes >= size_bytes {
            return 0;
        }
        let n = (buf.len() as u64).min(size_bytes - offset_bytes) as usize;
        let mut done = 0;
        while done < n {
            let pos = offset_bytes + done as u64;
            let index = (pos / PAGE_BYTES as u64) as usize;
            let within = (pos % PAGE_BYTES as u64) as usize;
            let chunk = (PAGE_BYTES - within).min(n - done);
            let out = &mut buf[done..done + chunk];
            match self.pages.get(index).and_then(|p| p.as_ref()) {
                Some(page) => out.copy_from_slice(&page[within..within + chunk]),
                None => out.fill(0),
            }
            done += chunk;
        }
        n
    }

    /// Write `data` at `offset_bytes`, growing the file (a gap becomes a
    /// hole), with new pages taken from `space`. All or nothing: `EFBIG`
    /// past the largest file, `ENOSPC` when the pages cannot be had.
    pub(super) fn write_at(
        &mut self,
        offset_bytes: u64,
        data: &[u8],
        space: &mut Space,
    ) -> Result<usize, Errno> {
        if data.is_empty() {
            return Ok(0);
        }
        let end = offset_bytes.checked_add(data.len() as u64).ok_or(EFBIG)?;
        let capacity = space.capacity_bytes;
        if end > capacity {
            return Err(EFBIG);
        }
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
        if short {
            // The pages taken hold zeros past the size, as the invariant
            // wants; they stay counted until the file shrinks or goes.
            space.stored_bytes += added * PAGE_BYTES as u64;
            return Err(ENOSPC);
        }
        let mut done = 0;
        while done < data.len() {
            let pos = offset_bytes + done as u64;
            let index = (pos / PAGE_BYTES as u64) as usize;
            let within = (pos % PAGE_BYTES as u64) as usize;
            let chunk = (PAGE_BYTES - within).min(data.len() - done);
            if let Some(page) = pages[index].as_mut() {
                page[within..within + chunk].copy_from_slice(&data[done..done + chunk]);
            }
            done += chunk;
        }
        self.size_bytes = self.size_bytes.max(end);
        space.stored_bytes += added * PAGE_BYTES as u64;
        Ok(data.len())
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
