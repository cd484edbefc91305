//! A file manager's state (`servers/filemgr`, Ridge OS §3: "each open
//! file has its own file manager process whose data space is the file's
//! contents"): the file's bytes as pages in memory, which of them changed
//! since they were loaded, and the open-file descriptions (handles) the
//! monitor hands out on the file.
//!
//! - [`FileData`]: the page store. `load` fills it from the directory
//!   manager without marking anything; `write_at` and `truncate` mark what
//!   changed, so that the write-back ([`FileData::length_steps`],
//!   [`FileData::dirty_pages`]) sends only that.
//! - [`FileManager`]: the handles and the decoding of every request
//!   (`protocols::unix::filemgr` and `io`), answered at once, except the
//!   two that need the directory manager: loading the file at
//!   `OP_ATTACH` and writing it back when the last handle closes. Those are
//!   returned as a [`Step`] for the server to carry out.
//!
//! What it is not: a permission checker (the monitor checks modes before
//! it opens a handle here) nor a name space (the file's name and links
//! stay at the directory manager).
//!
//! # Invariants
//! - The contents are pages of [`PAGE_BYTES`], `None` for a hole: a hole, a page
//!   past the vector's end, and every byte of a page at or past the size
//!   read as zeros.
//! - A page that is not dirty holds what the directory manager holds once
//!   it has been cut to the smallest size the file had since loading
//!   ([`FileData::length_steps`]): loaded pages are clean, a hole there is
//!   all zeros, and shrinking clears the same tail the directory manager's
//!   truncate clears.
//! - Memory is taken fallibly and within [`Limits`]: running out is an
//!   errno (`ENOMEM` while loading, `ENOSPC` for a write), never a panic,
//!   and a write either happens whole or not at all.
//! - Handles are numbered by [`crate::handles::HandleTable`]: positive as
//!   `i64`, unguessable, and `EBADF` once stale.

use alloc::boxed::Box;
use alloc::vec::Vec;

use protocols::unix::errno::{EBADF, EBUSY, EFBIG, EINVAL, ENOMEM, ENOSPC, ENOSYS, ENOTDIR, ENOTTY, EPERM};
use protocols::unix::{Stat, encode_result, filemgr, io, open_flags};

use crate::handles::HandleTable;
use crate::lease::{Bytes, BytesMut, Lent, ZERO_PAGE};
use crate::seek::seek_offset;
use protocols::unix::io::INLINE_READ_MAX_BYTES;

/// A POSIX error number (`protocols::unix::errno`).
pub use protocols::unix::Errno;

/// Bytes in one page of the contents: the machine's page
/// (`abi::layout::PAGE_SIZE`), and also one message's data, since a reply
/// sends a whole page of the contents (checked below).
pub const PAGE_BYTES: usize = abi::layout::PAGE_SIZE as usize;
const _: () = assert!(abi::msg::MAX_DATA_BYTES as usize == PAGE_BYTES);

/// One page of bytes, aligned to a page so that a whole page can be sent
/// by copy-on-write instead of being copied. (`align` takes only a
/// literal; the assertion below ties it to [`PAGE_BYTES`].)
#[repr(C, align(4096))]
pub struct PageBytes(pub [u8; PAGE_BYTES]);
const _: () = assert!(core::mem::align_of::<PageBytes>() == PAGE_BYTES);

/// A page on the heap. (A one-element boxed array: the only way to get an
/// aligned heap page fallibly without `unsafe`.)
struct Page(Box<[PageBytes; 1]>);

impl Page {
    /// A zero-filled page, or `None` when memory is exhausted.
    fn zeroed() -> Option<Page> {
        let mut v: Vec<PageBytes> = Vec::new();
        v.try_reserve_exact(1).ok()?;
        v.push(PageBytes([0; PAGE_BYTES]));
        v.into_boxed_slice().try_into().ok().map(Page)
    }

    fn bytes(&self) -> &[u8; PAGE_BYTES] {
        &self.0[0].0
    }

    fn bytes_mut(&mut self) -> &mut [u8; PAGE_BYTES] {
        &mut self.0[0].0
    }
}

struct Slot {
    page: Option<Page>,
    /// Changed since it was loaded: the write-back sends it.
    dirty: bool,
}

/// How much a file manager may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest size the file may reach (`EFBIG` past it).
    pub max_size_bytes: u64,
    /// Pages of memory the contents may take (holes take none).
    pub max_pages: u64,
}

fn pages_for(size_bytes: u64) -> u64 {
    size_bytes.div_ceil(PAGE_BYTES as u64)
}

/// The held pages' bytes from `offset_bytes` for `len` bytes, as parts in
/// order; every page there must be held.
fn slot_parts(slots: &mut [Slot], offset_bytes: u64, len: usize) -> Result<Vec<&mut [u8]>, Errno> {
    let mut parts: Vec<&mut [u8]> = Vec::new();
    parts.try_reserve_exact(len.div_ceil(PAGE_BYTES) + 1).map_err(|_| ENOSPC)?;
    if len == 0 {
        return Ok(parts);
    }
    let (first, mut within) = split(offset_bytes);
    let mut left = len;
    for slot in slots[first..].iter_mut() {
        if left == 0 {
            break;
        }
        let page = slot.page.as_mut().ok_or(ENOSPC)?;
        let chunk = (PAGE_BYTES - within).min(left);
        parts.push(&mut page.bytes_mut()[within..within + chunk]);
        left -= chunk;
        within = 0;
    }
    Ok(parts)
}

/// Which page, and where in it, byte `pos` is.
fn split(pos: u64) -> (usize, usize) {
    ((pos / PAGE_BYTES as u64) as usize, (pos % PAGE_BYTES as u64) as usize)
}

/// A file's contents in memory, with what changed since loading.
pub struct FileData {
    slots: Vec<Slot>,
    size_bytes: u64,
    /// The size the directory manager holds (what was loaded).
    backing_size_bytes: u64,
    /// The smallest size since loading: the write-back cuts the backing
    /// file to it first, so bytes dropped here are dropped there too.
    low_size_bytes: u64,
    pages_held: u64,
    /// A write or truncate happened since loading.
    modified: bool,
    limits: Limits,
}

impl FileData {
    /// An empty file.
    pub fn new(limits: Limits) -> FileData {
        FileData {
            slots: Vec::new(),
            size_bytes: 0,
            backing_size_bytes: 0,
            low_size_bytes: 0,
            pages_held: 0,
            modified: false,
            limits,
        }
    }

    /// Room for the page index of a file of `size_bytes` (loading then
    /// never grows the index). `EFBIG` past the limit, `ENOMEM` without
    /// the memory.
    pub fn reserve(&mut self, size_bytes: u64) -> Result<(), Errno> {
        if size_bytes > self.limits.max_size_bytes {
            return Err(EFBIG);
        }
        let pages = usize::try_from(pages_for(size_bytes)).map_err(|_| EFBIG)?;
        self.slots.try_reserve(pages.saturating_sub(self.slots.len())).map_err(|_| ENOMEM)
    }

    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// Pages of memory the contents take.
    pub fn pages_held(&self) -> u64 {
        self.pages_held
    }

    /// Has anything changed since loading?
    pub fn is_modified(&self) -> bool {
        self.modified
    }

    /// Bytes read from the directory manager at `offset_bytes`, before any
    /// change: they are stored clean, and a page that would hold only
    /// zeros stays a hole. The file grows to cover them. `EINVAL` once
    /// something has changed, `EFBIG` past the size limit, `ENOMEM` when
    /// the pages cannot be had (what was stored stays).
    pub fn load(&mut self, offset_bytes: u64, bytes: &[u8]) -> Result<(), Errno> {
        if self.modified {
            return Err(EINVAL);
        }
        let end = offset_bytes.checked_add(bytes.len() as u64).ok_or(EFBIG)?;
        if end > self.limits.max_size_bytes {
            return Err(EFBIG);
        }
        let mut done = 0;
        while done < bytes.len() {
            let (index, within) = split(offset_bytes + done as u64);
            let chunk = (PAGE_BYTES - within).min(bytes.len() - done);
            let part = &bytes[done..done + chunk];
            let present = self.slots.get(index).is_some_and(|s| s.page.is_some());
            if present || part.iter().any(|&b| b != 0) {
                let page = self.page_at(index, ENOMEM)?;
                page.bytes_mut()[within..within + chunk].copy_from_slice(part);
            }
            done += chunk;
        }
        self.size_bytes = self.size_bytes.max(end);
        self.backing_size_bytes = self.size_bytes;
        self.low_size_bytes = self.size_bytes;
        Ok(())
    }

    /// The page at `index`, made (zero-filled) if it is a hole; `out_of`
    /// when the limit or the memory says no.
    fn page_at(&mut self, index: usize, out_of: Errno) -> Result<&mut Page, Errno> {
        if self.slots.len() <= index {
            self.slots.try_reserve(index + 1 - self.slots.len()).map_err(|_| out_of)?;
            self.slots.resize_with(index + 1, || Slot { page: None, dirty: false });
        }
        let held = self.pages_held;
        let limit = self.limits.max_pages;
        let slot = &mut self.slots[index];
        if slot.page.is_none() {
            if held >= limit {
                return Err(out_of);
            }
            slot.page = Some(Page::zeroed().ok_or(out_of)?);
            self.pages_held += 1;
        }
        slot.page.as_mut().ok_or(out_of)
    }

    /// Bytes from `offset_bytes` into `buf`; 0 at or past the end. Holes
    /// read as zeros.
    pub fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> usize {
        let len = buf.len() as u64;
        self.read_to(offset_bytes, len, &mut BytesMut(buf)).unwrap_or(0)
    }

    /// Up to `len` bytes from `offset_bytes` into `to` (a caller's lent
    /// buffer), straight from the pages (holes from [`ZERO_PAGE`]): the
    /// bytes moved, 0 at or past the end. `ENOMEM` when the list of parts
    /// cannot be had; the lease's errors as it gives them.
    pub fn read_to(&self, offset_bytes: u64, len: u64, to: &mut dyn Lent) -> Result<usize, Errno> {
        if offset_bytes >= self.size_bytes || len == 0 {
            return Ok(0);
        }
        let n = len.min(self.size_bytes - offset_bytes) as usize;
        let mut parts: Vec<&[u8]> = Vec::new();
        parts.try_reserve_exact(n.div_ceil(PAGE_BYTES) + 1).map_err(|_| ENOMEM)?;
        let mut done = 0;
        while done < n {
            let (index, within) = split(offset_bytes + done as u64);
            let chunk = (PAGE_BYTES - within).min(n - done);
            parts.push(match self.slots.get(index).and_then(|s| s.page.as_ref()) {
                Some(page) => &page.bytes()[within..within + chunk],
                None => &ZERO_PAGE[..chunk],
            });
            done += chunk;
        }
        to.write_parts(0, &parts)?;
        Ok(n)
    }

    /// Write `data` at `offset_bytes`, growing the file (a gap becomes a
    /// hole). All or nothing: `EFBIG` past the size limit, `ENOSPC` when
    /// the pages cannot be had.
    pub fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> Result<usize, Errno> {
        self.write_from(offset_bytes, data.len() as u64, &mut Bytes(data))
    }

    /// Write `len` bytes of `from` (a caller's lent buffer, from its
    /// offset 0) at `offset_bytes`, straight into the pages; as
    /// [`FileData::write_at`], and all or nothing also when the lease fails
    /// half-way (`EFAULT`): bytes past the old size go straight into the
    /// pages and are cleared again on failure; those over old bytes are
    /// read aside first.
    pub fn write_from(&mut self, offset_bytes: u64, len: u64, from: &mut dyn Lent) -> Result<usize, Errno> {
        if len == 0 {
            return Ok(0);
        }
        let end = offset_bytes.checked_add(len).ok_or(EFBIG)?;
        if end > self.limits.max_size_bytes {
            return Err(EFBIG);
        }
        let len = usize::try_from(len).map_err(|_| EFBIG)?;
        let (first, _) = split(offset_bytes);
        let (last, _) = split(end - 1);
        let missing =
            (first..=last).filter(|&i| self.slots.get(i).is_none_or(|s| s.page.is_none())).count() as u64;
        if self.pages_held.saturating_add(missing) > self.limits.max_pages {
            return Err(ENOSPC);
        }
        // Take every page first, so a failure leaves the contents as they
        // were. Pages taken before a failure hold zeros, which is what the
        // holes they fill read as; they stay clean.
        for index in first..=last {
            self.page_at(index, ENOSPC)?;
        }
        let overwrite = self.size_bytes.saturating_sub(offset_bytes).min(len as u64) as usize;
        let mut aside: Vec<u8> = Vec::new();
        if overwrite > 0 && from.may_fail() {
            aside.try_reserve_exact(overwrite).map_err(|_| ENOSPC)?;
            aside.resize(overwrite, 0);
            from.read_parts(0, &mut [&mut aside[..]])?;
        }
        let direct_from = if aside.is_empty() { 0 } else { overwrite };
        let mut parts = slot_parts(&mut self.slots, offset_bytes + direct_from as u64, len - direct_from)?;
        if let Err(e) = from.read_parts(direct_from as u64, &mut parts) {
            // Only bytes at or past the old size were touched: clear them.
            for part in parts.iter_mut() {
                part.fill(0);
            }
            return Err(e);
        }
        drop(parts);
        if !aside.is_empty() {
            let mut parts = slot_parts(&mut self.slots, offset_bytes, overwrite)?;
            let _ = Bytes(&aside).read_parts(0, &mut parts);
        }
        for slot in &mut self.slots[first..=last] {
            slot.dirty = true;
        }
        self.size_bytes = self.size_bytes.max(end);
        self.modified = true;
        Ok(len)
    }

    /// Set the size: shrinking frees whole pages and clears the tail of
    /// the last one; growing leaves a hole. `EFBIG` past the size limit.
    pub fn truncate(&mut self, size_bytes: u64) -> Result<(), Errno> {
        if size_bytes > self.limits.max_size_bytes {
            return Err(EFBIG);
        }
        if size_bytes < self.size_bytes {
            let keep = pages_for(size_bytes) as usize;
            if self.slots.len() > keep {
                let freed = self.slots[keep..].iter().filter(|s| s.page.is_some()).count() as u64;
                self.slots.truncate(keep);
                self.pages_held -= freed;
            }
            let (_, within) = split(size_bytes);
            if within != 0
                && let Some(page) = self.slots.get_mut(keep - 1).and_then(|s| s.page.as_mut())
            {
                page.bytes_mut()[within..].fill(0);
            }
            self.low_size_bytes = self.low_size_bytes.min(size_bytes);
        }
        self.size_bytes = size_bytes;
        self.modified = true;
        Ok(())
    }

    /// The lengths to give the backing file, in order, before the dirty
    /// pages are written: first cut it to the smallest size the file had
    /// (when it shrank), then set the current size (when that differs).
    pub fn length_steps(&self) -> impl Iterator<Item = u64> {
        let cut = (self.low_size_bytes < self.backing_size_bytes).then_some(self.low_size_bytes);
        let after_cut = cut.unwrap_or(self.backing_size_bytes);
        let set = (self.size_bytes != after_cut).then_some(self.size_bytes);
        cut.into_iter().chain(set)
    }

    /// Every changed page: its offset and its bytes up to the file's end
    /// (a whole, page-aligned page except perhaps the last).
    pub fn dirty_pages(&self) -> impl Iterator<Item = (u64, &[u8])> {
        let size = self.size_bytes;
        self.slots.iter().enumerate().filter(|(_, s)| s.dirty).filter_map(move |(i, s)| {
            let offset = i as u64 * PAGE_BYTES as u64;
            let len = size.checked_sub(offset)?.min(PAGE_BYTES as u64) as usize;
            s.page.as_ref().filter(|_| len > 0).map(|p| (offset, &p.bytes()[..len]))
        })
    }

    /// The write-back succeeded: the backing file now equals this.
    pub fn mark_clean(&mut self) {
        for s in &mut self.slots {
            s.dirty = false;
        }
        self.backing_size_bytes = self.size_bytes;
        self.low_size_bytes = self.size_bytes;
        self.modified = false;
    }
}

/// One open of the file: what the monitor's descriptors point at (several
/// descriptors after `dup` or `fork` share its offset).
struct Description {
    flags: u64,
    offset_bytes: u64,
}

/// What the server does with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Answer now: these words, and this many bytes of the reply buffer.
    Reply([u64; 4], usize),
    /// `OP_ATTACH` from the monitor: load the file through the directory
    /// manager's handle `fs_handle` on `fs_queue` of `fs_pid` into a
    /// [`FileData`], hand it to [`FileManager::attached`], and answer the
    /// bytes loaded (or the errno).
    Attach { fs_pid: u64, fs_queue: u32, fs_handle: u64 },
    /// The monitor closed the last handle: write the changes back, answer
    /// `[result, filemgr::CLOSED_LAST, 0, 0]` and end.
    CloseLast,
}

fn error(e: Errno) -> Step {
    Step::Reply([encode_result(Err(e)), 0, 0, 0], 0)
}

fn value(v: u64) -> Step {
    Step::Reply([v, 0, 0, 0], 0)
}

/// The file's attributes and contents once attached.
struct Attached {
    stat: Stat,
    data: FileData,
}

/// A file manager: the file and its handles. Senders are kernel pids as
/// `u64`.
///
/// Who may ask what: `OP_ATTACH`, `OP_OPEN` and `io::OP_CLOSE` only the
/// monitor; `io` read, write, seek, pread, pwrite and fstat anyone holding a handle (the
/// handle is the capability).
pub struct FileManager {
    monitor: u64,
    file: Option<Attached>,
    handles: HandleTable<Description>,
}

impl FileManager {
    /// A manager with no file yet, obeying `monitor`; `seed` feeds the
    /// handle generator.
    pub fn new(monitor: u64, seed: u64) -> FileManager {
        FileManager { monitor, file: None, handles: HandleTable::new(seed) }
    }

    /// The file loaded for [`Step::Attach`], with its Stat from the
    /// directory manager (the size and mtime kept here from now on).
    pub fn attached(&mut self, stat: Stat, data: FileData) {
        self.file = Some(Attached { stat, data });
    }

    /// The contents, once attached (for the write-back).
    pub fn data(&self) -> Option<&FileData> {
        self.file.as_ref().map(|f| &f.data)
    }

    pub fn data_mut(&mut self) -> Option<&mut FileData> {
        self.file.as_mut().map(|f| &mut f.data)
    }

    pub fn handles_open(&self) -> usize {
        self.handles.len()
    }

    /// A handle is valid only on an attached file.
    fn file_and_description(&mut self, handle: u64) -> Result<(&mut Attached, &mut Description), Errno> {
        match (self.file.as_mut(), self.handles.get_mut(handle)) {
            (Some(f), Ok(d)) => Ok((f, d)),
            _ => Err(EBADF),
        }
    }

    /// The checks `pread` and `pwrite` share, in Linux's order: the
    /// handle (`EBADF`), an offset past `i64::MAX` (`EINVAL`), then the
    /// access mode `may` allows (`EBADF`).
    fn positional(
        &mut self,
        handle: u64,
        offset_bytes: u64,
        may: fn(u64) -> bool,
    ) -> Result<(&mut Attached, &mut Description), Errno> {
        let (f, d) = self.file_and_description(handle)?;
        if offset_bytes > i64::MAX as u64 {
            return Err(EINVAL);
        }
        if !may(d.flags) {
            return Err(EBADF);
        }
        Ok((f, d))
    }

    /// `OP_OPEN`: a new description with `flags`, at offset 0. `O_TRUNC`
    /// with write access empties the file (as memfs does).
    pub fn open(&mut self, flags: u64, now_ns: u64) -> Result<u64, Errno> {
        if flags & open_flags::O_ACCMODE == open_flags::O_ACCMODE {
            return Err(EINVAL);
        }
        if flags & open_flags::O_DIRECTORY != 0 {
            return Err(ENOTDIR);
        }
        if self.file.is_none() {
            return Err(EINVAL);
        }
        // Room first, so a failure changes nothing.
        self.handles.reserve(ENOMEM)?;
        if flags & open_flags::O_TRUNC != 0
            && open_flags::writable(flags)
            && let Some(f) = self.file.as_mut()
        {
            f.data.truncate(0)?;
            f.stat.mtime_ns = now_ns;
        }
        // Cannot fail: the room is there.
        self.handles.insert(Description { flags, offset_bytes: 0 }, ENOMEM)
    }

    /// `io::OP_CLOSE`: drop a handle. `Ok(true)` when it was the last.
    pub fn close(&mut self, handle: u64) -> Result<bool, Errno> {
        self.handles.remove(handle)?;
        Ok(self.handles.is_empty())
    }

    /// `read` at the handle's offset, which advances by the bytes read.
    pub fn read(&mut self, handle: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let len = buf.len() as u64;
        self.read_lent(handle, len, &mut BytesMut(buf))
    }

    /// `read` of up to `len` bytes into a caller's lent buffer, straight
    /// from the pages; the offset moves only when every byte arrived.
    pub fn read_lent(&mut self, handle: u64, len: u64, to: &mut dyn Lent) -> Result<usize, Errno> {
        let (f, d) = self.file_and_description(handle)?;
        if !open_flags::readable(d.flags) {
            return Err(EBADF);
        }
        let n = f.data.read_to(d.offset_bytes, len, to)?;
        d.offset_bytes += n as u64;
        Ok(n)
    }

    /// `pread` (`io::OP_PREAD`): up to `len` bytes at `offset_bytes`
    /// into `to`, the handle's offset neither used nor moved. One request
    /// does it, so a process sharing the open file (`fork`) never sees
    /// the offset move, which the runtime's fallback (`lseek`, `read`,
    /// `lseek`) let it see (branch `robust`; memfs's rule,
    /// `crate::memfs` `pread_lent`). Linux's order of checks: the handle
    /// (`EBADF`), an offset past `i64::MAX` (`EINVAL`), then the access
    /// mode (`EBADF`).
    pub fn pread_lent(
        &mut self,
        handle: u64,
        offset_bytes: u64,
        len: u64,
        to: &mut dyn Lent,
    ) -> Result<usize, Errno> {
        let (f, _) = self.positional(handle, offset_bytes, open_flags::readable)?;
        f.data.read_to(offset_bytes, len, to)
    }

    /// `pwrite` (`io::OP_PWRITE`): `len` bytes of `from` at
    /// `offset_bytes`, all or nothing as [`FileManager::write_lent`], the
    /// handle's offset neither used nor moved; on an `O_APPEND` handle at
    /// the end, as Linux's `pwrite(2)` does (POSIX says at the offset; its
    /// "BUGS" section), as memfs and `ext2fs` do. Checks in
    /// [`FileManager::pread_lent`]'s order.
    pub fn pwrite_lent(
        &mut self,
        handle: u64,
        offset_bytes: u64,
        len: u64,
        from: &mut dyn Lent,
        now_ns: u64,
    ) -> Result<usize, Errno> {
        let (f, d) = self.positional(handle, offset_bytes, open_flags::writable)?;
        let offset = if d.flags & open_flags::O_APPEND != 0 { f.data.size_bytes() } else { offset_bytes };
        let n = f.data.write_from(offset, len, from)?;
        if n > 0 {
            f.stat.mtime_ns = now_ns;
        }
        Ok(n)
    }

    /// `write` at the handle's offset (at the end with `O_APPEND`), which
    /// advances by the bytes written.
    pub fn write(&mut self, handle: u64, data: &[u8], now_ns: u64) -> Result<usize, Errno> {
        self.write_lent(handle, data.len() as u64, &mut Bytes(data), now_ns)
    }

    /// `write` of `len` bytes from a caller's lent buffer, straight into
    /// the pages: all or nothing (see [`FileData::write_from`]).
    pub fn write_lent(
        &mut self,
        handle: u64,
        len: u64,
        from: &mut dyn Lent,
        now_ns: u64,
    ) -> Result<usize, Errno> {
        let (f, d) = self.file_and_description(handle)?;
        if !open_flags::writable(d.flags) {
            return Err(EBADF);
        }
        let offset = if d.flags & open_flags::O_APPEND != 0 { f.data.size_bytes() } else { d.offset_bytes };
        let n = f.data.write_from(offset, len, from)?;
        if n > 0 {
            f.stat.mtime_ns = now_ns;
        }
        d.offset_bytes = offset + n as u64;
        Ok(n)
    }

    /// `lseek`: a new offset by [`crate::seek`]'s rule.
    pub fn seek(&mut self, handle: u64, offset: i64, whence: u64) -> Result<u64, Errno> {
        let (f, d) = self.file_and_description(handle)?;
        d.offset_bytes = seek_offset(d.offset_bytes, f.data.size_bytes(), offset, whence)?;
        Ok(d.offset_bytes)
    }

    /// `fstat`: the directory manager's Stat with the size and mtime kept
    /// here.
    pub fn fstat(&mut self, handle: u64) -> Result<Stat, Errno> {
        let (f, _) = self.file_and_description(handle)?;
        Ok(Stat { size_bytes: f.data.size_bytes(), ..f.stat })
    }

    /// Decode and answer one call: words `m` and data `data` from
    /// `sender`; reply data goes into `tx`; `lent` is the caller's buffers
    /// lent with the call, through which long reads and writes move (the
    /// rule of memfs, `crate::memfs::Service::io_request`).
    pub fn request(
        &mut self,
        sender: u64,
        m: [u64; 4],
        data: &[u8],
        now_ns: u64,
        tx: &mut [u8; PAGE_BYTES],
        lent: &mut dyn Lent,
    ) -> Step {
        let [op, w1, w2, w3] = m;
        let from_monitor = sender == self.monitor;
        let result = match op {
            filemgr::OP_ATTACH | filemgr::OP_OPEN | io::OP_CLOSE if !from_monitor => Err(EPERM),
            filemgr::OP_ATTACH if self.file.is_some() => Err(EBUSY),
            filemgr::OP_ATTACH => match u32::try_from(w2) {
                Ok(fs_queue) => return Step::Attach { fs_pid: w1, fs_queue, fs_handle: w3 },
                Err(_) => Err(EINVAL),
            },
            filemgr::OP_OPEN => self.open(w1, now_ns).map(value),
            io::OP_CLOSE => match self.close(w1) {
                Ok(true) => return Step::CloseLast,
                Ok(false) => Ok(value(0)),
                Err(e) => Err(e),
            },
            io::OP_READ if w2 <= INLINE_READ_MAX_BYTES as u64 => {
                self.read(w1, &mut tx[..w2 as usize]).map(|n| Step::Reply([n as u64, 0, 0, 0], n))
            }
            io::OP_READ => self.read_lent(w1, w2, lent).map(|n| value(n as u64)),
            io::OP_WRITE => {
                let len = if w2 == 0 { data.len() as u64 } else { w2 };
                match data.get(..usize::try_from(len).unwrap_or(usize::MAX)) {
                    Some(bytes) => self.write(w1, bytes, now_ns),
                    None => self.write_lent(w1, len, lent, now_ns),
                }
                .map(|n| value(n as u64))
            }
            io::OP_SEEK => self.seek(w1, w2 as i64, w3).map(value),
            // Positional: word 3 the offset, the handle's own untouched.
            io::OP_PREAD if w2 <= INLINE_READ_MAX_BYTES as u64 => self
                .pread_lent(w1, w3, w2, &mut BytesMut(&mut tx[..w2 as usize]))
                .map(|n| Step::Reply([n as u64, 0, 0, 0], n)),
            io::OP_PREAD => self.pread_lent(w1, w3, w2, lent).map(|n| value(n as u64)),
            io::OP_PWRITE => {
                let len = if w2 == 0 { data.len() as u64 } else { w2 };
                match data.get(..usize::try_from(len).unwrap_or(usize::MAX)) {
                    Some(bytes) => self.pwrite_lent(w1, w3, len, &mut Bytes(bytes), now_ns),
                    None => self.pwrite_lent(w1, w3, len, lent, now_ns),
                }
                .map(|n| value(n as u64))
            }
            io::OP_FSTAT => self.fstat(w1).map(|st| {
                tx[..Stat::BYTES].copy_from_slice(&st.encode());
                Step::Reply([0; 4], Stat::BYTES)
            }),
            // A regular file is neither a directory nor a terminal.
            io::OP_READDIR => self.file_and_description(w1).and(Err(ENOTDIR)),
            io::OP_FOREGROUND => self.file_and_description(w1).and(Err(ENOTTY)),
            _ => Err(ENOSYS),
        };
        result.unwrap_or_else(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handles::MAX_HANDLES;
    use crate::lease::testing::Lender;
    use crate::seek::{SEEK_CUR, SEEK_END, SEEK_SET};
    use open_flags::{O_APPEND, O_DIRECTORY, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY};
    use protocols::unix::errno::ENFILE;
    use protocols::unix::{mode, result};
    use std::vec;

    const BIG: Limits = Limits { max_size_bytes: 1 << 30, max_pages: 1 << 18 };
    const MONITOR: u64 = 7;
    const P: usize = PAGE_BYTES;

    fn loaded(bytes: &[u8]) -> FileData {
        let mut d = FileData::new(BIG);
        d.reserve(bytes.len() as u64).unwrap();
        for (i, chunk) in bytes.chunks(P).enumerate() {
            d.load((i * P) as u64, chunk).unwrap();
        }
        d
    }

    fn all(d: &FileData) -> Vec<u8> {
        let mut out = vec![0xeeu8; d.size_bytes() as usize + 10];
        let n = d.read_at(0, &mut out);
        out.truncate(n);
        out
    }

    /// Replays the write-back onto `backing` the way the directory
    /// manager's truncate and write do it.
    fn write_back(d: &FileData, backing: &mut Vec<u8>) {
        for len in d.length_steps() {
            backing.resize(len as usize, 0);
        }
        for (offset, bytes) in d.dirty_pages() {
            let end = offset as usize + bytes.len();
            if backing.len() < end {
                backing.resize(end, 0);
            }
            backing[offset as usize..end].copy_from_slice(bytes);
        }
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / P) as u8).collect()
    }

    #[test]
    fn aligned_pages() {
        let p = Page::zeroed().unwrap();
        assert_eq!(p.bytes().as_ptr() as usize % P, 0);
        assert!(p.bytes().iter().all(|&b| b == 0));
    }

    #[test]
    fn load_keeps_holes_and_is_clean() {
        let mut bytes = pattern(3 * P + 100);
        bytes[P..2 * P].fill(0);
        let d = loaded(&bytes);
        assert_eq!(d.size_bytes(), bytes.len() as u64);
        assert_eq!(d.pages_held(), 3, "the zero page is a hole");
        assert_eq!(all(&d), bytes);
        assert!(!d.is_modified());
        assert_eq!(d.length_steps().count(), 0);
        assert_eq!(d.dirty_pages().count(), 0);
    }

    #[test]
    fn load_unaligned_pieces() {
        let bytes = pattern(2 * P + 5);
        let mut d = FileData::new(BIG);
        let mut at = 0;
        for piece in bytes.chunks(1000) {
            d.load(at, piece).unwrap();
            at += piece.len() as u64;
        }
        assert_eq!(all(&d), bytes);
        assert_eq!(d.pages_held(), 3);
    }

    #[test]
    fn load_after_change_refused() {
        let mut d = loaded(b"abc");
        d.write_at(0, b"x").unwrap();
        assert_eq!(d.load(3, b"def"), Err(EINVAL));
    }

    #[test]
    fn load_limits() {
        let mut d = FileData::new(Limits { max_size_bytes: 3 * P as u64, max_pages: 2 });
        assert_eq!(d.reserve(3 * P as u64 + 1), Err(EFBIG));
        d.load(0, &pattern(P)).unwrap();
        d.load(P as u64, &pattern(P)).unwrap();
        assert_eq!(d.load(2 * P as u64, &pattern(P)), Err(ENOMEM));
        // Zeros take no page, so they still fit.
        d.load(2 * P as u64, &[0; P]).unwrap();
        assert_eq!(d.load(3 * P as u64, b"x"), Err(EFBIG));
        assert_eq!(d.size_bytes(), 3 * P as u64);
    }

    #[test]
    fn read_write_and_holes() {
        let mut d = FileData::new(BIG);
        assert_eq!(d.write_at(10, b"hello").unwrap(), 5);
        assert_eq!(d.size_bytes(), 15);
        let mut buf = [0xffu8; 20];
        assert_eq!(d.read_at(0, &mut buf), 15);
        assert_eq!(&buf[..15], b"\0\0\0\0\0\0\0\0\0\0hello");
        assert_eq!(d.read_at(15, &mut buf), 0);
        assert_eq!(d.read_at(1000, &mut buf), 0);
        // Far past the end: the gap is a hole and takes no memory.
        d.write_at(5 * P as u64 + 1, b"z").unwrap();
        assert_eq!(d.pages_held(), 2);
        assert_eq!(d.read_at(3 * P as u64, &mut buf), 20);
        assert!(buf.iter().all(|&b| b == 0));
        // Across a page boundary.
        let data = pattern(P + 10);
        d.write_at(P as u64 - 5, &data).unwrap();
        let mut back = vec![0u8; data.len()];
        assert_eq!(d.read_at(P as u64 - 5, &mut back), data.len());
        assert_eq!(back, data);
        assert_eq!(d.write_at(0, b""), Ok(0));
    }

    #[test]
    fn write_limits_are_all_or_nothing() {
        let mut d = FileData::new(Limits { max_size_bytes: 4 * P as u64, max_pages: 2 });
        d.write_at(0, b"a").unwrap();
        assert_eq!(d.write_at(P as u64 - 1, &[1u8; P + 2]), Err(ENOSPC), "needs pages 1 and 2");
        assert_eq!(d.pages_held(), 1);
        assert_eq!(d.size_bytes(), 1);
        assert_eq!(d.write_at(4 * P as u64, b"x"), Err(EFBIG));
        assert_eq!(d.write_at(u64::MAX, b"xy"), Err(EFBIG));
        assert_eq!(d.truncate(4 * P as u64 + 1), Err(EFBIG));
        d.write_at(P as u64, b"b").unwrap();
        assert_eq!(d.pages_held(), 2);
    }

    #[test]
    fn truncate_shrinks_grows_and_clears() {
        let bytes = pattern(3 * P);
        let mut d = loaded(&bytes);
        d.truncate(P as u64 + 10).unwrap();
        assert_eq!(d.pages_held(), 2);
        d.truncate(3 * P as u64).unwrap();
        let back = all(&d);
        assert_eq!(&back[..P + 10], &bytes[..P + 10]);
        assert!(back[P + 10..].iter().all(|&b| b == 0), "old bytes do not come back");
        d.truncate(0).unwrap();
        assert_eq!(d.pages_held(), 0);
        assert_eq!(all(&d), b"");
    }

    #[test]
    fn write_back_of_writes() {
        let original = pattern(3 * P + 100);
        let mut d = loaded(&original);
        d.write_at(P as u64 + 3, b"changed").unwrap();
        let mut backing = original.clone();
        // Only the page written goes back, and no length change.
        assert_eq!(d.length_steps().count(), 0);
        let dirty: Vec<u64> = d.dirty_pages().map(|(o, _)| o).collect();
        assert_eq!(dirty, [P as u64]);
        assert!(d.dirty_pages().all(|(_, b)| b.len() == P));
        write_back(&d, &mut backing);
        assert_eq!(backing, all(&d));
    }

    #[test]
    fn write_back_of_growth() {
        let original = pattern(P + 10);
        let mut d = loaded(&original);
        d.write_at(P as u64 + 10, &pattern(5000)).unwrap();
        let steps: Vec<u64> = d.length_steps().collect();
        assert_eq!(steps, [d.size_bytes()]);
        let last = d.dirty_pages().last().unwrap();
        assert_eq!(last.0 + last.1.len() as u64, d.size_bytes(), "the last page is clipped at the end");
        let mut backing = original.clone();
        write_back(&d, &mut backing);
        assert_eq!(backing, all(&d));
    }

    #[test]
    fn write_back_after_shrink_then_regrow() {
        // Shrunk to 100 bytes, then a byte written far out: the backing
        // file must lose its old bytes between, not just be cut to the
        // final size.
        let original = pattern(3 * P);
        let mut d = loaded(&original);
        d.truncate(100).unwrap();
        d.write_at(2 * P as u64 + 50, b"!").unwrap();
        let steps: Vec<u64> = d.length_steps().collect();
        assert_eq!(steps, [100, 2 * P as u64 + 51]);
        let mut backing = original.clone();
        write_back(&d, &mut backing);
        assert_eq!(backing, all(&d));
        assert!(backing[100..2 * P + 50].iter().all(|&b| b == 0));
    }

    #[test]
    fn write_back_of_o_trunc_rewrite() {
        let original = pattern(5 * P);
        let mut d = loaded(&original);
        d.truncate(0).unwrap();
        let new = pattern(P + 1);
        d.write_at(0, &new).unwrap();
        assert_eq!(d.length_steps().collect::<Vec<_>>(), [0, P as u64 + 1]);
        let mut backing = original.clone();
        write_back(&d, &mut backing);
        assert_eq!(backing, new);
        d.mark_clean();
        assert_eq!(d.length_steps().count(), 0);
        assert_eq!(d.dirty_pages().count(), 0);
        assert!(!d.is_modified());
    }

    /// Reads and writes through the lease at unaligned offsets across
    /// pages, and a lent buffer with an unmapped piece: `EFAULT`, nothing
    /// changed, nothing marked for the write-back.
    #[test]
    fn lent_reads_and_writes() {
        let original = pattern(2 * P + 5);
        let mut m = manager(&original);
        let h = open(&mut m, O_RDWR);
        let len = 3 * P + 17;
        let mut lender = Lender::new(pattern(len).iter().map(|b| !b).collect());
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, P as u64 - 3, SEEK_SET], &[]).0, Ok(P as u64 - 3));
        let (r, _) = call_lent(&mut m, 3, [io::OP_WRITE, h, len as u64, 0], &[], &mut lender);
        assert_eq!(r, Ok(len as u64));
        let mut want = original.clone();
        want.truncate(P - 3);
        want.extend(pattern(len).iter().map(|b| !b));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, 1, SEEK_SET], &[]).0, Ok(1));
        let (r, got) = call(&mut m, 3, [io::OP_READ, h, 5 * P as u64, 0], &[]);
        assert_eq!(r, Ok(want.len() as u64 - 1));
        assert_eq!(got, &want[1..]);
        // Failed writes: appending and overwriting.
        let d = m.data().unwrap();
        let dirty_before: Vec<u64> = d.dirty_pages().map(|(o, _)| o).collect();
        for at in [want.len() as u64, 2, want.len() as u64 - 3] {
            let mut bad = Lender::new(vec![1; 2 * P]);
            bad.unmapped = P + 7..P + 8;
            assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, at, SEEK_SET], &[]).0, Ok(at));
            let (r, _) = call_lent(&mut m, 3, [io::OP_WRITE, h, 2 * P as u64, 0], &[], &mut bad);
            assert_eq!(r, Err(protocols::unix::errno::EFAULT));
            assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, 0, SEEK_CUR], &[]).0, Ok(at));
            assert_eq!(all(m.data().unwrap()), want, "nothing of a failed write lands");
        }
        let dirty_after: Vec<u64> = m.data().unwrap().dirty_pages().map(|(o, _)| o).collect();
        assert_eq!(dirty_before, dirty_after, "a failed write marks nothing");
        // A read into a bad lent buffer: EFAULT, the offset stays.
        let mut bad = Lender::new(vec![0; 2 * P]);
        bad.unmapped = 0..1;
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, 0, SEEK_SET], &[]).0, Ok(0));
        let (r, _) = call_lent(&mut m, 3, [io::OP_READ, h, 2 * P as u64, 0], &[], &mut bad);
        assert_eq!(r, Err(protocols::unix::errno::EFAULT));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, 0, SEEK_CUR], &[]).0, Ok(0));
    }

    #[test]
    fn write_back_of_a_shrink_only() {
        let original = pattern(2 * P);
        let mut d = loaded(&original);
        d.truncate(10).unwrap();
        assert_eq!(d.length_steps().collect::<Vec<_>>(), [10]);
        assert_eq!(d.dirty_pages().count(), 0);
        let mut backing = original.clone();
        write_back(&d, &mut backing);
        assert_eq!(backing, &original[..10]);
    }

    fn stat() -> Stat {
        Stat {
            ino: 12,
            mode: mode::S_IFREG | 0o644,
            nlink: 1,
            uid: 3,
            gid: 4,
            size_bytes: 0,
            ..Stat::default()
        }
    }

    fn manager(contents: &[u8]) -> FileManager {
        let mut m = FileManager::new(MONITOR, 99);
        m.attached(Stat { size_bytes: contents.len() as u64, mtime_ns: 5, ..stat() }, loaded(contents));
        m
    }

    fn call(m: &mut FileManager, sender: u64, words: [u64; 4], data: &[u8]) -> (Result<u64, Errno>, Vec<u8>) {
        call_lent(m, sender, words, data, &mut Lender::new(vec![0; 16 * P]))
    }

    /// A call lending `lender`; the data is what the reply carried or, for
    /// a read answered through the lease, what went there.
    fn call_lent(
        m: &mut FileManager,
        sender: u64,
        words: [u64; 4],
        data: &[u8],
        lender: &mut Lender,
    ) -> (Result<u64, Errno>, Vec<u8>) {
        let mut tx = [0u8; P];
        match m.request(sender, words, data, 1000, &mut tx, lender) {
            Step::Reply(w, 0) if matches!(words[0], io::OP_READ | io::OP_PREAD) && result(w[0]).is_ok() => {
                (result(w[0]), lender.bytes[..w[0] as usize].to_vec())
            }
            Step::Reply(w, len) => (result(w[0]), tx[..len].to_vec()),
            other => panic!("{other:?}"),
        }
    }

    fn open(m: &mut FileManager, flags: u64) -> u64 {
        call(m, MONITOR, [filemgr::OP_OPEN, flags, 0, 0], &[]).0.unwrap()
    }

    #[test]
    fn attach_protocol() {
        let mut m = FileManager::new(MONITOR, 1);
        let mut tx = [0u8; P];
        assert_eq!(
            m.request(8, [filemgr::OP_ATTACH, 2, 0, 55], &[], 0, &mut tx, &mut Lender::new(vec![])),
            error(EPERM)
        );
        assert_eq!(
            m.request(
                MONITOR,
                [filemgr::OP_ATTACH, 2, 1 << 40, 55],
                &[],
                0,
                &mut tx,
                &mut Lender::new(vec![])
            ),
            error(EINVAL)
        );
        assert_eq!(
            m.request(MONITOR, [filemgr::OP_ATTACH, 2, 0, 55], &[], 0, &mut tx, &mut Lender::new(vec![])),
            Step::Attach { fs_pid: 2, fs_queue: 0, fs_handle: 55 }
        );
        // Opens wait for the file.
        assert_eq!(call(&mut m, MONITOR, [filemgr::OP_OPEN, O_RDONLY, 0, 0], &[]).0, Err(EINVAL));
        m.attached(stat(), loaded(b"data"));
        assert_eq!(
            m.request(MONITOR, [filemgr::OP_ATTACH, 2, 0, 55], &[], 0, &mut tx, &mut Lender::new(vec![])),
            error(EBUSY)
        );
        assert_eq!(m.data().unwrap().size_bytes(), 4);
    }

    #[test]
    fn handles_are_sparse_and_checked() {
        let mut m = manager(b"abc");
        let h = open(&mut m, O_RDONLY);
        assert!((h as i64) > 0);
        assert!(h >> 32 != 0, "a random check in the high half");
        for bad in [0, h ^ (1 << 40), h + 1, u64::MAX] {
            assert_eq!(call(&mut m, 3, [io::OP_READ, bad, 10, 0], &[]).0, Err(EBADF));
            assert_eq!(call(&mut m, 3, [io::OP_FSTAT, bad, 0, 0], &[]).0, Err(EBADF));
            assert_eq!(call(&mut m, 3, [io::OP_READDIR, bad, 0, 0], &[]).0, Err(EBADF));
            assert_eq!(call(&mut m, MONITOR, [io::OP_CLOSE, bad, 0, 0], &[]).0, Err(EBADF));
        }
        let h2 = open(&mut m, O_RDONLY);
        assert_ne!(h, h2);
        assert_eq!(call(&mut m, MONITOR, [io::OP_CLOSE, h, 0, 0], &[]).0, Ok(0));
        assert_eq!(call(&mut m, 3, [io::OP_READ, h, 10, 0], &[]).0, Err(EBADF), "stale");
        let h3 = open(&mut m, O_RDONLY);
        assert_eq!(h3 as u32, h as u32, "the slot is reused");
        assert_ne!(h3, h, "with a new check");
        assert_eq!(m.handles_open(), 2);
    }

    #[test]
    fn only_the_monitor_opens_and_closes() {
        let mut m = manager(b"abc");
        let h = open(&mut m, O_RDONLY);
        assert_eq!(call(&mut m, 3, [filemgr::OP_OPEN, O_RDONLY, 0, 0], &[]).0, Err(EPERM));
        assert_eq!(call(&mut m, 3, [io::OP_CLOSE, h, 0, 0], &[]).0, Err(EPERM));
        assert_eq!(call(&mut m, 3, [filemgr::OP_ATTACH, 1, 0, 1], &[]).0, Err(EPERM));
        // Anyone with the handle reads.
        assert_eq!(call(&mut m, 3, [io::OP_READ, h, 10, 0], &[]), (Ok(3), b"abc".to_vec()));
    }

    #[test]
    fn open_flags_checked() {
        let mut m = manager(b"abc");
        assert_eq!(call(&mut m, MONITOR, [filemgr::OP_OPEN, 3, 0, 0], &[]).0, Err(EINVAL));
        assert_eq!(call(&mut m, MONITOR, [filemgr::OP_OPEN, O_DIRECTORY, 0, 0], &[]).0, Err(ENOTDIR));
        // O_TRUNC without write access leaves the contents (as memfs).
        let r = open(&mut m, O_RDONLY | O_TRUNC);
        assert_eq!(call(&mut m, 3, [io::OP_READ, r, 10, 0], &[]).1, b"abc");
        let w = open(&mut m, O_WRONLY | O_TRUNC);
        assert_eq!(m.data().unwrap().size_bytes(), 0);
        assert_eq!(call(&mut m, 3, [io::OP_READ, r, 10, 0], &[]).0, Ok(0));
        assert_eq!(call(&mut m, 3, [io::OP_WRITE, w, 0, 0], b"xy").0, Ok(2));
        assert_eq!(m.data().unwrap().length_steps().collect::<Vec<_>>(), [0, 2]);
    }

    #[test]
    fn reads_writes_offsets() {
        let mut m = manager(b"hello world");
        let r = open(&mut m, O_RDONLY);
        let w = open(&mut m, O_WRONLY);
        let rw = open(&mut m, O_RDWR);
        assert_eq!(call(&mut m, 3, [io::OP_READ, r, 5, 0], &[]), (Ok(5), b"hello".to_vec()));
        assert_eq!(call(&mut m, 3, [io::OP_READ, r, 100, 0], &[]), (Ok(6), b" world".to_vec()));
        assert_eq!(call(&mut m, 3, [io::OP_READ, r, 100, 0], &[]), (Ok(0), vec![]));
        // Access modes.
        assert_eq!(call(&mut m, 3, [io::OP_WRITE, r, 0, 0], b"x").0, Err(EBADF));
        assert_eq!(call(&mut m, 3, [io::OP_READ, w, 10, 0], &[]).0, Err(EBADF));
        // Each handle has its own offset.
        assert_eq!(call(&mut m, 3, [io::OP_WRITE, w, 0, 0], b"J").0, Ok(1));
        assert_eq!(call(&mut m, 3, [io::OP_READ, rw, 100, 0], &[]).1, b"Jello world");
        assert_eq!(call(&mut m, 3, [io::OP_WRITE, rw, 0, 0], b"!!").0, Ok(2));
        // A read of more than a page is cut to one.
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, r, 0, SEEK_SET], &[]).0, Ok(0));
        assert_eq!(call(&mut m, 3, [io::OP_READ, r, u64::MAX, 0], &[]).1, b"Jello world!!");
        // A whole page of data, written and read back.
        let page = pattern(P);
        assert_eq!(call(&mut m, 3, [io::OP_WRITE, rw, 0, 0], &page).0, Ok(P as u64));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, r, 13, SEEK_SET], &[]).0, Ok(13));
        assert_eq!(call(&mut m, 3, [io::OP_READ, r, P as u64, 0], &[]).1, page);
    }

    #[test]
    fn append_and_holes() {
        let mut m = manager(b"ab");
        let a = open(&mut m, O_WRONLY | O_APPEND);
        let w = open(&mut m, O_WRONLY);
        assert_eq!(call(&mut m, 3, [io::OP_WRITE, w, 0, 0], b"XYZ").0, Ok(3));
        assert_eq!(call(&mut m, 3, [io::OP_WRITE, a, 0, 0], b"c").0, Ok(1));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, a, 0, SEEK_CUR], &[]).0, Ok(4));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, w, 10, SEEK_END], &[]).0, Ok(14));
        assert_eq!(call(&mut m, 3, [io::OP_WRITE, w, 0, 0], b"e").0, Ok(1));
        let r = open(&mut m, O_RDONLY);
        assert_eq!(call(&mut m, 3, [io::OP_READ, r, 100, 0], &[]).1, b"XYZc\0\0\0\0\0\0\0\0\0\0e");
    }

    /// `pread` and `pwrite` (branch `robust`): the bytes at the offset
    /// named, in the reply and through the lease, the handle's offset
    /// never moved, `O_APPEND` at the end (Linux), Linux's order of
    /// checks, and a failed lent write changes nothing. Before, the
    /// manager answered both `ENOSYS` and the runtime moved the offset.
    #[test]
    fn positional_reads_and_writes_leave_the_offset() {
        let mut m = manager(b"0123456789");
        let rw = open(&mut m, O_RDWR);
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, rw, 3, SEEK_SET], &[]).0, Ok(3));
        assert_eq!(call(&mut m, 3, [io::OP_PWRITE, rw, 2, 8], b"ab").0, Ok(2));
        assert_eq!(call(&mut m, 3, [io::OP_PREAD, rw, 4, 5], &[]), (Ok(4), b"567a".to_vec()));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, rw, 0, SEEK_CUR], &[]).0, Ok(3), "the offset stays");
        // Past the end: a hole, then the bytes; a read there is empty.
        assert_eq!(call(&mut m, 3, [io::OP_PWRITE, rw, 2, 20], b"zz").0, Ok(2));
        assert_eq!(call(&mut m, 3, [io::OP_PREAD, rw, 100, 0], &[]).1, b"01234567ab\0\0\0\0\0\0\0\0\0\0zz");
        assert_eq!(call(&mut m, 3, [io::OP_PREAD, rw, 10, 1 << 40], &[]), (Ok(0), vec![]));
        // Through the lease (more than a reply carries).
        let big = pattern(3 * P + 5);
        let mut lender = Lender::new(big.clone());
        let (r, _) = call_lent(&mut m, 3, [io::OP_PWRITE, rw, big.len() as u64, 7], &[], &mut lender);
        assert_eq!(r, Ok(big.len() as u64));
        let (r, got) = call(&mut m, 3, [io::OP_PREAD, rw, big.len() as u64, 7], &[]);
        assert_eq!((r, got), (Ok(big.len() as u64), big.clone()));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, rw, 0, SEEK_CUR], &[]).0, Ok(3));
        // A failed lent pwrite: EFAULT, nothing lands, the offset stays.
        let mut bad = Lender::new(vec![1; 2 * P]);
        bad.unmapped = P..P + 1;
        let (r, _) = call_lent(&mut m, 3, [io::OP_PWRITE, rw, 2 * P as u64, 7], &[], &mut bad);
        assert_eq!(r, Err(protocols::unix::errno::EFAULT));
        assert_eq!(call(&mut m, 3, [io::OP_PREAD, rw, big.len() as u64, 7], &[]).1, big);
        // O_APPEND: at the end whatever the offset says; the offset stays.
        let a = open(&mut m, O_WRONLY | O_APPEND);
        let end = 7 + big.len() as u64;
        assert_eq!(call(&mut m, 3, [io::OP_PWRITE, a, 4, 0], b"tail").0, Ok(4));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, a, 0, SEEK_CUR], &[]).0, Ok(0));
        assert_eq!(call(&mut m, 3, [io::OP_PREAD, rw, 4, end], &[]).1, b"tail");
        assert_eq!(call(&mut m, 3, [io::OP_PREAD, rw, 4, 0], &[]).1, b"0123");
        // Errors, in Linux's order: the handle, the offset, the mode.
        let r = open(&mut m, O_RDONLY);
        assert_eq!(call(&mut m, 3, [io::OP_PREAD, rw, 1, i64::MAX as u64 + 1], &[]).0, Err(EINVAL));
        assert_eq!(call(&mut m, 3, [io::OP_PWRITE, rw, 1, u64::MAX], b"x").0, Err(EINVAL));
        assert_eq!(call(&mut m, 3, [io::OP_PREAD, a, 1, 0], &[]).0, Err(EBADF), "write-only");
        assert_eq!(call(&mut m, 3, [io::OP_PWRITE, r, 1, 0], b"x").0, Err(EBADF), "read-only");
        assert_eq!(call(&mut m, 3, [io::OP_PREAD, a, 1, u64::MAX], &[]).0, Err(EINVAL), "offset first");
        for op in [io::OP_PREAD, io::OP_PWRITE] {
            assert_eq!(
                call(&mut m, 3, [op, rw ^ (1 << 40), 1, u64::MAX], b"x").0,
                Err(EBADF),
                "handle first"
            );
        }
        // The size and mtime follow a pwrite.
        let st = Stat::decode(&call(&mut m, 3, [io::OP_FSTAT, rw, 0, 0], &[]).1).unwrap();
        assert_eq!((st.size_bytes, st.mtime_ns), (end + 4, 1000));
    }

    #[test]
    fn seek_rules() {
        let mut m = manager(b"0123456789");
        let h = open(&mut m, O_RDONLY);
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, 4, SEEK_SET], &[]).0, Ok(4));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, 2, SEEK_CUR], &[]).0, Ok(6));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, -3i64 as u64, SEEK_END], &[]).0, Ok(7));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, -8i64 as u64, SEEK_CUR], &[]).0, Err(EINVAL));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, -1i64 as u64, SEEK_SET], &[]).0, Err(EINVAL));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, 0, 3], &[]).0, Err(EINVAL));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, i64::MAX as u64, SEEK_END], &[]).0, Err(EINVAL));
        assert_eq!(call(&mut m, 3, [io::OP_SEEK, h, 0, SEEK_CUR], &[]).0, Ok(7), "unchanged by failures");
        assert_eq!(call(&mut m, 3, [io::OP_READ, h, 10, 0], &[]).1, b"789");
    }

    #[test]
    fn fstat_keeps_size_and_mtime() {
        let mut m = manager(b"abc");
        let h = open(&mut m, O_RDWR);
        let (r, bytes) = call(&mut m, 3, [io::OP_FSTAT, h, 0, 0], &[]);
        assert_eq!(r, Ok(0));
        let st = Stat::decode(&bytes).unwrap();
        assert_eq!(st, Stat { size_bytes: 3, mtime_ns: 5, ..stat() });
        let mut tx = [0u8; P];
        assert_eq!(
            m.request(3, [io::OP_WRITE, h, 0, 0], b"defg", 777, &mut tx, &mut Lender::new(vec![])),
            value(4)
        );
        let st = Stat::decode(&call(&mut m, 3, [io::OP_FSTAT, h, 0, 0], &[]).1).unwrap();
        assert_eq!((st.size_bytes, st.mtime_ns, st.ino, st.uid), (4, 777, 12, 3));
    }

    #[test]
    fn other_requests() {
        let mut m = manager(b"abc");
        let h = open(&mut m, O_RDONLY);
        assert_eq!(call(&mut m, 3, [io::OP_READDIR, h, 0, 0], &[]).0, Err(ENOTDIR));
        assert_eq!(call(&mut m, 3, [io::OP_FOREGROUND, h, 0, 0], &[]).0, Err(ENOTTY));
        assert_eq!(call(&mut m, 3, [io::OP_TRUNCATE, h, 0, 0], &[]).0, Err(ENOSYS));
        assert_eq!(call(&mut m, 3, [999, h, 0, 0], &[]).0, Err(ENOSYS));
    }

    #[test]
    fn last_close_asks_for_write_back() {
        let mut m = manager(b"abc");
        let a = open(&mut m, O_RDWR);
        let b = open(&mut m, O_RDONLY);
        assert_eq!(call(&mut m, 3, [io::OP_WRITE, a, 0, 0], b"X").0, Ok(1));
        assert_eq!(call(&mut m, MONITOR, [io::OP_CLOSE, a, 0, 0], &[]).0, Ok(0));
        let mut tx = [0u8; P];
        assert_eq!(
            m.request(MONITOR, [io::OP_CLOSE, b, 0, 0], &[], 0, &mut tx, &mut Lender::new(vec![])),
            Step::CloseLast
        );
        let d = m.data().unwrap();
        assert_eq!(d.dirty_pages().map(|(o, b)| (o, b.to_vec())).collect::<Vec<_>>(), [(0, b"Xbc".to_vec())]);
    }

    #[test]
    fn handle_table_limit() {
        let mut m = manager(b"");
        let mut hs = Vec::new();
        for _ in 0..MAX_HANDLES {
            hs.push(open(&mut m, O_RDONLY));
        }
        assert_eq!(call(&mut m, MONITOR, [filemgr::OP_OPEN, O_RDONLY, 0, 0], &[]).0, Err(ENFILE));
        call(&mut m, MONITOR, [io::OP_CLOSE, hs[17], 0, 0], &[]).0.unwrap();
        open(&mut m, O_RDONLY);
    }
}
