//! Address spaces: the policy over arch's page tables and frames.
//!
//! Layout of every address space (details in docs/memory.md):
//! - `0 ..= 0x7fff_ffff_ffff`: the process's own (user half);
//! - `0xffff_8000_0000_0000`: the direct map of all physical memory
//!   (2 MiB pages, no-execute, global);
//! - `0xffff_ffff_8000_0000`: the kernel image (4 KiB pages with the
//!   permissions of each section: text RX, rodata R, data RW).
//!
//! What this module decides: copy-on-write (a page lent in a message or
//! shared by `fork` is read-only in every space that holds it, and the
//! first write copies it unless the writer is its last holder), lending
//! pages, and when a CPU must flush its TLB (`tlb_epoch`). What it does
//! not do: touch memory. Frames and tables are arch's ([`Frame`],
//! [`PageTable`]), whose safe interface cannot reach kernel memory.

pub use crate::arch::frames::Pool;
use crate::arch::frames::{self, Frame};
use crate::arch::paging::{COPY_ON_WRITE, MapError, NO_EXECUTE, PageTable, SHARED_PAGE, USER, WRITABLE};
use abi::layout::PAGE_SIZE;

/// Free physical memory, in bytes.
pub fn free_bytes() -> u64 {
    frames::free_bytes()
}

/// Free memory only the reserve pool may take, in bytes (docs/memory.md,
/// "Out of memory").
pub fn reserve_bytes() -> u64 {
    frames::reserve_frames() as u64 * PAGE_SIZE
}

/// Frames currently shared by more than one owner (for leak checks).
pub fn shared_frame_count() -> usize {
    frames::shared_count()
}

/// A process's address space: page tables whose kernel half is the
/// kernel's. Dropping it frees every frame of the user half.
pub struct AddressSpace {
    table: PageTable,
    /// Goes up whenever a mapping loses rights (a page lent copy-on-write,
    /// a page replaced), so a CPU that kept this root loaded while idle
    /// knows to flush its TLB before running the process again.
    pub tlb_epoch: u64,
}

/// Why a user mapping failed.
#[derive(Debug)]
pub enum SpaceError {
    OutOfMemory,
    AlreadyMapped,
}

impl From<MapError> for SpaceError {
    fn from(e: MapError) -> SpaceError {
        match e {
            MapError::OutOfMemory => SpaceError::OutOfMemory,
            MapError::AlreadyMapped | MapError::BadAddress => SpaceError::AlreadyMapped,
        }
    }
}

/// The flags of a user page with these rights.
fn user_flags(is_writable: bool, is_executable: bool) -> u64 {
    USER | if is_writable { WRITABLE } else { 0 } | if is_executable { 0 } else { NO_EXECUTE }
}

impl AddressSpace {
    /// An empty space whose frames may come out of the reserve (the
    /// kernel's own processes: servers, drivers, init).
    pub fn new() -> Option<AddressSpace> {
        AddressSpace::new_in(Pool::Reserve)
    }

    /// An empty space whose frames come from `pool`.
    pub fn new_in(pool: Pool) -> Option<AddressSpace> {
        Some(AddressSpace { table: PageTable::new(pool)?, tlb_epoch: 0 })
    }

    /// Where this space's frames come from.
    pub fn pool(&self) -> Pool {
        self.table.pool()
    }

    /// Take this space's frames from `pool` from now on.
    pub fn set_pool(&mut self, pool: Pool) {
        self.table.set_pool(pool);
    }

    /// The root's physical address, to compare with what a CPU has loaded.
    pub fn root(&self) -> u64 {
        self.table.root_pa()
    }

    /// The page tables, for the user-memory copies of usermem.rs.
    pub fn table(&self) -> &PageTable {
        &self.table
    }

    pub fn table_mut(&mut self) -> &mut PageTable {
        &mut self.table
    }

    /// Load this space on this CPU.
    pub fn activate(&self) {
        self.table.activate();
    }

    /// Map a fresh zeroed page at user page `va`.
    pub fn map_new_page(
        &mut self,
        va: u64,
        is_writable: bool,
        is_executable: bool,
    ) -> Result<(), SpaceError> {
        let frame = Frame::alloc_in(self.table.pool()).ok_or(SpaceError::OutOfMemory)?;
        self.table.map(va, frame, user_flags(is_writable, is_executable)).map_err(|(e, _)| e)?;
        Ok(())
    }

    /// Physical address and access flags of user address `va`.
    pub fn translate(&self, va: u64) -> Option<(u64, u64)> {
        self.table.translate(va)
    }

    /// Lend the page at user address `va` (page-aligned, mapped) for a
    /// message: the page becomes copy-on-write here, so later writes by
    /// this process copy it and the receiver keeps the contents as they
    /// were (NetBSD's loan, Ridge's page-table-entry copy). Returns the
    /// receiver's reference to the frame.
    /// A page of a shared window (`SHARED_PAGE`) cannot be lent: others
    /// write it in place, so the receiver would not keep the contents as
    /// they were (None: the caller copies instead).
    pub fn loan_page(&mut self, va: u64) -> Option<Frame> {
        let (frame, flags) = self.table.frame_at(va)?;
        if flags & USER == 0 || flags & SHARED_PAGE != 0 {
            return None;
        }
        if flags & WRITABLE != 0 {
            self.table.set_flags(va, (flags & !WRITABLE) | COPY_ON_WRITE);
            self.tlb_epoch += 1;
        }
        Some(frame)
    }

    /// Map a lent frame at user page `va`, copy-on-write, replacing what
    /// was there. On failure the frame comes back (the message keeps it).
    /// A page of a shared window is not replaced (it stays shared).
    pub fn map_loaned(&mut self, va: u64, frame: Frame) -> Result<(), (SpaceError, Frame)> {
        if self.table.translate(va).is_some_and(|(_, flags)| flags & SHARED_PAGE != 0) {
            return Err((SpaceError::AlreadyMapped, frame));
        }
        let replaced = self.table.replace(va, frame, USER | NO_EXECUTE | COPY_ON_WRITE);
        let replaced = replaced.map_err(|(e, frame)| (SpaceError::from(e), frame))?;
        drop(replaced);
        self.tlb_epoch += 1;
        Ok(())
    }

    /// Make the writable page at `va` a shared window page and return
    /// another owner of its frame, for `pager::SHARED`: from now on every
    /// holder writes the same frame (no copy-on-write, here or at `fork`).
    /// A copy-on-write page is made private first. None if `va` is not a
    /// writable user page or memory ran out.
    pub fn share_page_writable(&mut self, va: u64) -> Option<Frame> {
        let (_, flags) = self.table.translate(va)?;
        if flags & SHARED_PAGE == 0 {
            if flags & COPY_ON_WRITE != 0 && !self.resolve_copy_on_write(va) {
                return None;
            }
            let (_, flags) = self.table.translate(va)?;
            if flags & (USER | WRITABLE) != USER | WRITABLE {
                return None;
            }
            self.table.set_flags(va, flags | SHARED_PAGE);
        }
        self.table.frame_at(va).map(|(frame, _)| frame)
    }

    /// Map the frame of a shared window at `va`, replacing what was there:
    /// writable in place, or read-only; never executable.
    pub fn map_shared(&mut self, va: u64, frame: Frame, is_writable: bool) -> Result<(), SpaceError> {
        let flags = user_flags(is_writable, false) | if is_writable { SHARED_PAGE } else { 0 };
        if self.table.replace(va, frame, flags).map_err(|(e, _)| e)?.is_some() {
            self.tlb_epoch += 1;
        }
        Ok(())
    }

    /// Map device memory `pa..pa + len` (page aligned) at `va`, uncached
    /// and writable, never executable. Nothing is mapped on failure
    /// (pages mapped before it are taken back).
    pub fn map_device(&mut self, va: u64, pa: u64, len: u64) -> Result<(), SpaceError> {
        let pages = len / PAGE_SIZE;
        for i in 0..pages {
            let at = i * PAGE_SIZE;
            if let Err(e) = self.table.map_device(va + at, pa + at, WRITABLE | NO_EXECUTE) {
                self.unmap_device(va, i);
                return Err(e.into());
            }
        }
        Ok(())
    }

    /// [`AddressSpace::map_device`], leaving the physical pages
    /// `hole.0..hole.1` (page aligned, inside the range) unmapped: the
    /// kernel's part of a BAR (an MSI-X table, devices.rs `map_mmio`).
    pub fn map_device_except(
        &mut self,
        va: u64,
        pa: u64,
        len: u64,
        hole: Option<(u64, u64)>,
    ) -> Result<(), SpaceError> {
        let Some((start, end)) = hole.filter(|(s, e)| s < e) else { return self.map_device(va, pa, len) };
        self.map_device(va, pa, start - pa)?;
        let after = end - pa;
        if let Err(e) = self.map_device(va + after, end, len - after) {
            self.unmap_device(va, (start - pa) / PAGE_SIZE);
            return Err(e);
        }
        Ok(())
    }

    fn unmap_device(&mut self, va: u64, pages: u64) {
        for i in 0..pages {
            self.table.unmap_device(va + i * PAGE_SIZE);
        }
        self.tlb_epoch += 1;
    }

    /// Map `frames` one after another from `va`, writable, not executable
    /// (DMA memory). Nothing is mapped on failure.
    pub fn map_frames(&mut self, va: u64, frames: alloc::vec::Vec<Frame>) -> Result<(), SpaceError> {
        for (i, frame) in frames.into_iter().enumerate() {
            let at = va + i as u64 * PAGE_SIZE;
            if let Err((e, _)) = self.table.map(at, frame, user_flags(true, false)) {
                for j in 0..i as u64 {
                    self.table.unmap(va + j * PAGE_SIZE);
                }
                self.tlb_epoch += 1;
                return Err(e.into());
            }
        }
        Ok(())
    }

    /// Map `frame` at user page `va`, replacing what was there: writable,
    /// or read-only, or shared copy-on-write; executable or not.
    pub fn map_frame(
        &mut self,
        va: u64,
        frame: Frame,
        is_writable: bool,
        is_cow: bool,
        is_executable: bool,
    ) -> Result<(), SpaceError> {
        let flags = user_flags(is_writable, is_executable) | if is_cow { COPY_ON_WRITE } else { 0 };
        if self.table.replace(va, frame, flags).map_err(|(e, _)| e)?.is_some() {
            self.tlb_epoch += 1;
        }
        Ok(())
    }

    /// Resolve a write fault at `va` if the page is copy-on-write: the last
    /// holder just gets write access back, others get a private copy.
    /// Returns false if `va` is not a copy-on-write page (a real fault), or
    /// no memory is left for the copy.
    pub fn resolve_copy_on_write(&mut self, va: u64) -> bool {
        let page = va & !(PAGE_SIZE - 1);
        let Some((_, flags)) = self.table.translate(page) else { return false };
        if flags & COPY_ON_WRITE == 0 {
            return false;
        }
        // Its own copy if others hold the frame; else write access back.
        if self.table.make_private(page, (flags & (USER | NO_EXECUTE)) | WRITABLE).is_err() {
            return false;
        }
        // Another CPU that kept this root loaded while idle may still hold
        // the read-only translation (or the old frame).
        self.tlb_epoch += 1;
        true
    }

    /// Whether the page of `va` is copy-on-write (a write fault there that
    /// [`AddressSpace::resolve_copy_on_write`] could not resolve found no
    /// frame for the copy).
    pub fn is_copy_on_write(&self, va: u64) -> bool {
        self.table.translate(va & !(PAGE_SIZE - 1)).is_some_and(|(_, flags)| flags & COPY_ON_WRITE != 0)
    }

    /// Give the empty space `dst` every user mapping of this one, as in
    /// `fork`: writable pages become copy-on-write on both sides, read-only
    /// pages are shared as they are. Returns the pages shared.
    pub fn copy_on_write_into(&mut self, dst: &mut AddressSpace) -> Result<u64, SpaceError> {
        let shared = self.table.share_all_into(&mut dst.table, |flags| {
            if flags & WRITABLE != 0 { (flags & !WRITABLE) | COPY_ON_WRITE } else { flags }
        });
        // This space lost write access to its pages. The caller runs in
        // another space, so this CPU holds none of its translations; a CPU
        // that kept its root loaded flushes before running it again.
        self.tlb_epoch += 1;
        Ok(shared?)
    }

    /// Take back the frames mapped at the `pages` pages from `va` (device
    /// memory and unmapped pages are skipped): each goes back to the
    /// system, or loses one owner if shared. Returns the pages taken.
    pub fn unmap_range(&mut self, va: u64, pages: u64) -> u64 {
        let mut taken = 0;
        for i in 0..pages {
            if let Some(frame) = self.table.unmap(va + i * PAGE_SIZE) {
                drop(frame);
                taken += 1;
            }
        }
        if taken > 0 {
            // A CPU that kept this root loaded may still translate them.
            self.tlb_epoch += 1;
        }
        taken
    }

    /// Make the mapped pages of `pages` pages from `va` read-only, or
    /// writable again: as copy-on-write, so that the first write makes
    /// the page private if its frame is shared (after a fork) and only
    /// gives write access back otherwise. Shared window pages and device
    /// memory are left alone. Returns the pages changed.
    pub fn protect_range(&mut self, va: u64, pages: u64, is_writable: bool) -> u64 {
        let mut changed = 0;
        for i in 0..pages {
            let page = va + i * PAGE_SIZE;
            let Some((_, flags)) = self.table.translate(page) else { continue };
            if flags & USER == 0 || flags & SHARED_PAGE != 0 || crate::arch::paging::is_device(flags) {
                continue;
            }
            let keep = flags & (USER | NO_EXECUTE);
            let new = match (is_writable, flags & (WRITABLE | COPY_ON_WRITE) != 0) {
                (false, true) => keep,
                (true, false) => keep | COPY_ON_WRITE,
                _ => continue,
            };
            if self.table.set_flags(page, new) {
                changed += 1;
            }
        }
        if changed > 0 {
            self.tlb_epoch += 1;
        }
        changed
    }

    /// Zero the shared window page at `va` (`SHARED_PAGE`: one frame that
    /// every holder writes in place) from its last 8-byte word down to
    /// its first, each word's stores finished (in program order, x86's
    /// TSO) before the next word's start: a process reading the page on
    /// another CPU that sees a word changed sees every higher word zero.
    /// The read-window slots rely on it (`Kernel::zero_read_windows_of`).
    /// False, and nothing written, when `va` is not such a page.
    pub fn zero_shared_page(&mut self, va: u64) -> bool {
        if self.table.translate(va).is_none_or(|(_, flags)| flags & SHARED_PAGE == 0) {
            return false;
        }
        const WORD: usize = 8;
        for word in (0..PAGE_SIZE as usize / WORD).rev() {
            if self.table.fill(va, word * WORD, &[0; WORD]).is_err() {
                return false;
            }
            // The compiler keeps the words' order too.
            core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        }
        true
    }

    /// Fill the page at `va` (mapped here, any rights) at `offset` with
    /// `bytes`: a new image's segments and arguments.
    pub fn fill(&mut self, va: u64, offset: usize, bytes: &[u8]) -> Result<(), SpaceError> {
        self.table.fill(va, offset, bytes).map_err(|_| SpaceError::AlreadyMapped)
    }
}
