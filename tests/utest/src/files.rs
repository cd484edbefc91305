//! File data through leases (issue 11): a `read` or `write` of any size
//! on a regular file is one call to the file's manager, whose bytes move
//! straight between the file's pages and this process's buffer. These
//! tests hold in both file arrangements (`monitor.files=shared`, memfs
//! serving the data, and `per-file`, a file manager per open file):
//! `cargo xtask test` runs them in both.
//!
//! What is checked: bytes at unaligned offsets and lengths across page
//! boundaries land where they should and read back (also after the file
//! is closed and opened again, which in per-file mode writes it back to
//! memfs and loads it again); a buffer running into memory the process
//! does not have is `EFAULT`, and nothing of such a write reaches the
//! file (checked by reading the file afterwards), whether it appends or
//! overwrites, and a failed read leaves the offset where it was.

use crate::ensure;
use crate::raw;
use crate::util::*;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::errno::EFAULT;
use protocols::unix::open_flags::{O_CREAT, O_EXCL, O_RDONLY, O_RDWR};
use runtime::unix::{self, SEEK_CUR, SEEK_SET};

/// Byte `i` of the test's pattern: changes within a page and from page
/// to page, so a byte in the wrong place shows.
fn pattern(i: usize, salt: u8) -> u8 {
    (i as u8).wrapping_mul(31) ^ (i >> 12) as u8 ^ salt
}

/// Write `len` pattern bytes at `at` with one `write`, into `model` too.
fn write_at(fd: unix::Fd, model: &mut Vec<u8>, at: usize, len: usize, salt: u8) -> TestResult {
    let bytes: Vec<u8> = (0..len).map(|i| pattern(at + i, salt)).collect();
    ensure!(unix::lseek(fd, at as i64, SEEK_SET).ctx("lseek")? == at as u64, "lseek to {at}");
    let n = unix::write(fd, &bytes).ctx(&format!("write {len} at {at}"))?;
    ensure!(n == len, "a write of {len} bytes at {at} wrote {n}");
    if model.len() < at + len {
        model.resize(at + len, 0);
    }
    model[at..at + len].copy_from_slice(&bytes);
    Ok(())
}

/// One `read` of `len` at `at` must give the model's bytes, whole.
fn check_read(fd: unix::Fd, model: &[u8], at: usize, len: usize) -> TestResult {
    ensure!(unix::lseek(fd, at as i64, SEEK_SET).ctx("lseek")? == at as u64, "lseek to {at}");
    // One byte of slack on each side, to see a read that spills.
    let mut buf = vec![0xa5u8; len + 2];
    let n = unix::read(fd, &mut buf[1..len + 1]).ctx(&format!("read {len} at {at}"))?;
    let want = len.min(model.len().saturating_sub(at));
    ensure!(n == want, "a read of {len} at {at} gave {n} bytes, the file holds {want} there");
    if let Some(i) = (0..n).find(|&i| buf[1 + i] != model[at + i]) {
        return Err(format!(
            "a read of {len} at {at}: byte {} is {:#x}, not {:#x}",
            at + i,
            buf[1 + i],
            model[at + i]
        ));
    }
    ensure!(buf[0] == 0xa5 && buf[len + 1] == 0xa5, "a read of {len} at {at} wrote outside its buffer");
    Ok(())
}

/// The whole file, read with one `read` from offset 0 on a fresh open.
fn check_file(path: &str, model: &[u8]) -> TestResult {
    let fd = unix::open(path, O_RDONLY, 0).ctx("open to check")?;
    let mut all = vec![0u8; model.len() + PAGE_BYTES];
    let n = unix::read(fd, &mut all).ctx("read the whole file")?;
    unix::close(fd).ctx("close")?;
    ensure!(n == model.len(), "the file holds {n} bytes, {} expected", model.len());
    if let Some(i) = (0..n).find(|&i| all[i] != model[i]) {
        return Err(format!("byte {i} of the file is {:#x}, not {:#x}", all[i], model[i]));
    }
    Ok(())
}

pub fn unaligned_reads_and_writes_across_pages() -> TestResult {
    let d = scratch("files_unaligned")?;
    let path = format!("{d}/f");
    let fd = unix::open(&path, O_RDWR | O_CREAT | O_EXCL, 0o644).ctx("open")?;
    let mut model = Vec::new();
    let p = PAGE_BYTES;
    // (offset, length): inside a page, across one boundary, over several
    // pages, a message's worth, one byte more, and over a mebibyte.
    let writes = [
        (0, 1),
        (5, p - 10),
        (p - 3, 7),
        (2 * p + 1, 3 * p + 5),
        (7, MESSAGE_DATA_BYTES),
        (p + 100, MESSAGE_DATA_BYTES + 1),
        (10 * p - 1, (1 << 20) + 13),
        (3, 2 * p),
        (9 * p + 17, 1),
    ];
    for (i, &(at, len)) in writes.iter().enumerate() {
        write_at(fd, &mut model, at, len, i as u8)?;
    }
    let size = model.len();
    ensure!(unix::fstat(fd).ctx("fstat")?.size_bytes == size as u64, "fstat's size");
    for &(at, len) in
        &[(0, size), (1, p), (p - 1, 2), (p + 1, 3 * p - 2), (size - 9, 100), (size, 10), (12345, 70_000)]
    {
        check_read(fd, &model, at, len)?;
    }
    unix::close(fd).ctx("close")?;
    check_file(&path, &model)?;
    unix::unlink(&path).ctx("unlink")
}

/// The last page of the heap region (mapped: this process touches it)
/// and the unmapped address space right after it.
fn heap_end() -> u64 {
    abi::layout::USER_HEAP_BASE + abi::layout::USER_HEAP_MAX_BYTES
}

pub fn unmapped_buffers_are_efault_and_change_nothing() -> TestResult {
    let d = scratch("files_efault")?;
    let path = format!("{d}/f");
    let old: Vec<u8> = (0..3 * PAGE_BYTES + 11).map(|i| pattern(i, 7)).collect();
    make_file(&path, &old, 0o644)?;
    in_child(|| {
        let fd = unix::open(&path, O_RDWR, 0).ctx("open")?;
        // Mapped: the last heap page, filled (which maps it); unmapped:
        // what follows the heap region.
        let last_page = heap_end() - PAGE_BYTES as u64;
        raw::fill_words(last_page, PAGE_BYTES, 0x5a5a_5a5a_5a5a_5a5a);
        let cases = [
            // (where in the file, bytes mapped before the hole, length)
            (old.len() as u64, 100, 3 * PAGE_BYTES), // appending, several pages
            (0, 5, 2 * PAGE_BYTES + 1),              // overwriting from the start
            (old.len() as u64 - 10, PAGE_BYTES, 2 * PAGE_BYTES), // both
            (4, 100, 200),                           // one message's data
        ];
        for (at, mapped, len) in cases {
            let buf = raw::span(heap_end() - mapped as u64, len);
            unix::lseek(fd, at as i64, SEEK_SET).ctx("lseek")?;
            runtime::sys::set_touch_buffers(false);
            let wrote = unix::write(fd, buf);
            runtime::sys::set_touch_buffers(true);
            expect_errno(wrote, EFAULT, &format!("a write of {len} at {at} from a buffer with a hole"))?;
            let now = unix::lseek(fd, 0, SEEK_CUR).ctx("lseek")?;
            ensure!(now == at, "a failed write moved the offset from {at} to {now}");
            ensure!(
                unix::fstat(fd).ctx("fstat")?.size_bytes == old.len() as u64,
                "a failed write changed the size"
            );
            check_read(fd, &old, 0, old.len() + 5)?;
            // The same buffer to read into: EFAULT, the offset stays.
            unix::lseek(fd, at.min(17) as i64, SEEK_SET).ctx("lseek")?;
            runtime::sys::set_touch_buffers(false);
            let read = unix::read(fd, buf);
            runtime::sys::set_touch_buffers(true);
            expect_errno(read, EFAULT, &format!("a read of {len} into a buffer with a hole"))?;
            // A long read goes through the lease and moves the offset only
            // when every byte arrived. (A short one is answered in the
            // reply, which the kernel fails to deliver after the manager
            // has moved on: POSIX leaves the offset unspecified then.)
            if len > protocols::unix::io::INLINE_READ_MAX_BYTES {
                let now = unix::lseek(fd, 0, SEEK_CUR).ctx("lseek")?;
                ensure!(now == at.min(17), "a failed read moved the offset to {now}");
            }
        }
        unix::close(fd).ctx("close")
    })?;
    // And from a fresh open (in per-file mode: what was written back).
    check_file(&path, &old)?;
    unix::unlink(&path).ctx("unlink")
}
