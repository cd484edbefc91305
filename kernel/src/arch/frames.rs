//! Physical frames of RAM as owned values.
//!
//! A [`Frame`] is the right to one 4 KiB frame of RAM that the frame
//! allocator handed out (Asterinas OSTD's rule: code outside the unsafe
//! layer never names memory by a bare physical address it could invent).
//! It is counted: [`Frame::share`] makes another owner of the same frame (a
//! page shared copy-on-write, a page lent in a message), and the frame goes
//! back to the allocator when its last owner is dropped. Page tables hold
//! their frames the same way (paging.rs turns a `Frame` into a leaf entry
//! and back).
//!
//! What this module is not: a policy. Who may write a shared frame
//! (copy-on-write) is the address space's business (memory.rs); this
//! module only guarantees that a `Frame` is RAM that no kernel object other
//! than its owners uses, so reading and writing its bytes cannot touch the
//! kernel's own memory.
//!
//! Invariants:
//! - every `Frame` value names a frame the allocator marked in use, and the
//!   number of `Frame` values (plus page-table entries holding it) equals
//!   1 + its count in [`SHARED`];
//! - frames given out are zeroed, so no data leaks from a freed frame;
//! - a request of the [`Pool::Ordinary`] pool never takes one of the last
//!   [`reserve_frames`] free frames: those are kept for the servers, init
//!   and the session's shell (docs/memory.md, "Out of memory").

use super::phys::phys_to_virt;
use abi::layout::PAGE_SIZE;
use alloc::collections::BTreeMap;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use kernel_core::frame_alloc::{FrameAllocator, PhysRange};
use kernel_core::limits::MAX_MEMORY_RANGES;
use spin::Mutex;

static FRAMES: Mutex<Option<FrameAllocator<'static>>> = Mutex::new(None);

/// Who a frame is for, which decides whether it may come out of the
/// reserve (docs/memory.md, "Out of memory").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// An ordinary UNIX process (or anything a process asks for on its
    /// behalf): refused when only the reserve is left, so the process that
    /// asks for memory is the one refused.
    Ordinary,
    /// The kernel, init, the servers and drivers, and the session's shell:
    /// may take the reserve too.
    Reserve,
}

/// Free frames kept for [`Pool::Reserve`]: fixed once at boot by
/// [`fix_reserve`].
static RESERVE_FRAMES: AtomicUsize = AtomicUsize::new(0);

/// Extra owners of frames shared by more than one, beyond the first. A
/// frame absent here has exactly one owner. Shared frames are few, so a
/// map beats a count for every frame of memory.
static SHARED: Mutex<BTreeMap<u64, u32>> = Mutex::new(BTreeMap::new());

const FRAME_BITMAP_WORDS: usize = FrameAllocator::bitmap_words_for(kernel_core::limits::MAX_PHYS_BYTES);
static mut FRAME_BITMAP: [u64; FRAME_BITMAP_WORDS] = [0; FRAME_BITMAP_WORDS];
static IS_INITIALISED: AtomicBool = AtomicBool::new(false);

/// The ranges the allocator manages (usable RAM), kept so that firmware
/// reads can prove they never touch a frame the kernel may hand out.
static USABLE: Mutex<[PhysRange; MAX_MEMORY_RANGES]> = Mutex::new([PhysRange::new(0, 0); MAX_MEMORY_RANGES]);

/// Set up the allocator over `usable` RAM minus `reserved`. Once, at boot,
/// by arch's memory set-up (boot.rs), before any frame is allocated.
pub(super) fn init(usable: &[PhysRange], reserved: &[PhysRange]) {
    assert!(!IS_INITIALISED.swap(true, Ordering::AcqRel), "frame allocator initialised twice");
    // SAFETY: the flag above makes this the only reference ever made to
    // the bitmap, which lives for ever. (A reference into a `static mut`
    // must go through a raw pointer.)
    #[allow(clippy::deref_addrof)]
    let bitmap: &'static mut [u64] = unsafe { &mut *(&raw mut FRAME_BITMAP) };
    *FRAMES.lock() = Some(FrameAllocator::new(bitmap, usable, reserved));
    let mut kept = USABLE.lock();
    for (slot, range) in kept.iter_mut().zip(usable) {
        *slot = *range;
    }
}

/// Whether `pa..pa + len` overlaps RAM the allocator manages (free or in
/// use): firmware tables must not.
pub(super) fn overlaps_managed_ram(pa: u64, len: u64) -> bool {
    let range = PhysRange::new(pa, pa.saturating_add(len));
    USABLE.lock().iter().any(|u| u.end > u.start && u.overlaps(&range))
}

/// Take `count` contiguous frames for the kernel itself (the heap), never
/// to be freed. Returns the physical address of the first.
pub(super) fn take_contiguous_for_kernel(count: usize) -> Option<u64> {
    FRAMES.lock().as_mut()?.alloc_contiguous(count)
}

/// Keep a share of the memory free now (after the kernel took its own)
/// for [`Pool::Reserve`]: `free / MEMORY_RESERVE_DIVISOR`, at least
/// `MIN_MEMORY_RESERVE_BYTES` and at most half of it. Once, at boot.
pub(super) fn fix_reserve() {
    use kernel_core::limits::{MEMORY_RESERVE_DIVISOR, MIN_MEMORY_RESERVE_BYTES};
    let free = FRAMES.lock().as_ref().map_or(0, |f| f.free_frames());
    let min = (MIN_MEMORY_RESERVE_BYTES / PAGE_SIZE) as usize;
    RESERVE_FRAMES.store((free / MEMORY_RESERVE_DIVISOR).max(min).min(free / 2), Ordering::Relaxed);
}

/// Free frames that only [`Pool::Reserve`] may take.
pub fn reserve_frames() -> usize {
    RESERVE_FRAMES.load(Ordering::Relaxed)
}

/// A free frame for `pool` (below `limit`), or None.
fn take(pool: Pool, limit: Option<u64>) -> Option<u64> {
    let mut frames = FRAMES.lock();
    let frames = frames.as_mut()?;
    if pool == Pool::Ordinary && frames.free_frames() <= reserve_frames() {
        return None;
    }
    match limit {
        Some(limit) => frames.alloc_below(limit),
        None => frames.alloc(),
    }
}

/// Free memory, in bytes.
pub fn free_bytes() -> u64 {
    FRAMES.lock().as_ref().map_or(0, |f| f.free_frames() as u64 * PAGE_SIZE)
}

/// Frames currently shared by more than one owner (for leak checks).
pub fn shared_count() -> usize {
    SHARED.lock().len()
}

/// How many owners the frame at `pa` has (1 when it is not shared).
pub(super) fn owners(pa: u64) -> u32 {
    1 + SHARED.lock().get(&pa).copied().unwrap_or(0)
}

/// One frame of RAM and the right to it (see the module doc). Not `Clone`:
/// another owner is made with [`Frame::share`].
#[derive(Debug)]
pub struct Frame {
    pa: u64,
}

impl Frame {
    /// A zeroed frame, or None when memory is exhausted (the kernel's own
    /// use: it may take the reserve).
    pub fn alloc() -> Option<Frame> {
        Frame::alloc_in(Pool::Reserve)
    }

    /// A zeroed frame for `pool`, or None.
    pub fn alloc_in(pool: Pool) -> Option<Frame> {
        Some(Frame::zeroed(take(pool, None)?))
    }

    /// A zeroed frame below 4 GiB (page-table roots, which the SMP
    /// trampoline loads with a 32-bit CR3).
    pub fn alloc_below_4g() -> Option<Frame> {
        Frame::alloc_below_4g_in(Pool::Reserve)
    }

    /// As [`Frame::alloc_below_4g`], for `pool`.
    pub fn alloc_below_4g_in(pool: Pool) -> Option<Frame> {
        Some(Frame::zeroed(take(pool, Some(1 << 32))?))
    }

    /// `count` zeroed frames, physically contiguous and below 4 GiB (DMA
    /// memory for devices), or None.
    pub fn alloc_contiguous_below_4g(count: usize) -> Option<alloc::vec::Vec<Frame>> {
        let mut list = alloc::vec::Vec::new();
        list.try_reserve_exact(count).ok()?;
        let first = FRAMES.lock().as_mut()?.alloc_contiguous(count)?;
        list.extend((0..count as u64).map(|i| Frame::zeroed(first + i * PAGE_SIZE)));
        if first + count as u64 * PAGE_SIZE > 1 << 32 {
            return None; // dropping the list frees them
        }
        Some(list)
    }

    /// The frame's physical address, for a device to reach it by DMA.
    pub fn phys_addr(&self) -> u64 {
        self.pa
    }

    /// A copy of `src` in a new frame (not zeroed first: every byte is
    /// written), or None when memory is exhausted. The break of
    /// copy-on-write.
    pub fn alloc_copy_of(src: &Frame, pool: Pool) -> Option<Frame> {
        let pa = take(pool, None)?;
        // SAFETY: the allocator just handed out `pa`, a whole frame nothing
        // else uses, and `src` is another frame of RAM owned through a
        // `Frame`; both reached through the direct map.
        unsafe {
            core::ptr::copy_nonoverlapping(
                phys_to_virt(src.pa) as *const u8,
                phys_to_virt(pa) as *mut u8,
                PAGE_SIZE as usize,
            )
        };
        Some(Frame { pa })
    }

    fn zeroed(pa: u64) -> Frame {
        let frame = Frame { pa };
        // SAFETY: the allocator just handed out `pa`: a whole frame of RAM
        // that nothing else uses, mapped by the direct map.
        unsafe { core::ptr::write_bytes(phys_to_virt(pa) as *mut u8, 0, PAGE_SIZE as usize) };
        frame
    }

    /// Another owner of the same frame.
    pub fn share(&self) -> Frame {
        *SHARED.lock().entry(self.pa).or_insert(0) += 1;
        Frame { pa: self.pa }
    }

    /// Copy `dst.len()` bytes from `offset` in the frame.
    pub fn read(&self, offset: usize, dst: &mut [u8]) {
        assert!(offset + dst.len() <= PAGE_SIZE as usize, "read past the end of a frame");
        // SAFETY: the range lies inside this frame (asserted), which is RAM
        // that no kernel object uses (module doc), reached through the
        // direct map; `dst` is kernel memory, so they do not overlap. A
        // user thread may write the frame meanwhile: the bytes are copied
        // as plain bytes and no reference to them is formed.
        unsafe {
            core::ptr::copy_nonoverlapping(
                (phys_to_virt(self.pa) + offset as u64) as *const u8,
                dst.as_mut_ptr(),
                dst.len(),
            )
        }
    }

    /// Copy `src` into the frame at `offset`.
    pub fn write(&mut self, offset: usize, src: &[u8]) {
        assert!(offset + src.len() <= PAGE_SIZE as usize, "write past the end of a frame");
        // SAFETY: as in `read`, writing.
        unsafe {
            core::ptr::copy_nonoverlapping(
                src.as_ptr(),
                (phys_to_virt(self.pa) + offset as u64) as *mut u8,
                src.len(),
            )
        }
    }

    /// Give up the frame without dropping it: a page-table entry now holds
    /// it (paging.rs), and [`Frame::from_entry`] takes it back.
    pub(super) fn into_entry(self) -> u64 {
        let pa = self.pa;
        core::mem::forget(self);
        pa
    }

    /// The frame a page-table entry held.
    ///
    /// # Safety
    /// `pa` must come from [`Frame::into_entry`] (through a page-table
    /// entry that is now being cleared or replaced), so that the number of
    /// owners stays right.
    pub(super) unsafe fn from_entry(pa: u64) -> Frame {
        Frame { pa }
    }

    /// Another owner of the frame a page-table entry holds (the entry
    /// keeps its own).
    ///
    /// # Safety
    /// `pa` must be held by a live page-table entry (as for
    /// [`Frame::from_entry`]).
    pub(super) unsafe fn share_entry(pa: u64) -> Frame {
        // SAFETY: the caller's promise: the entry owns a reference.
        let held = core::mem::ManuallyDrop::new(unsafe { Frame::from_entry(pa) });
        held.share()
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        let mut shared = SHARED.lock();
        match shared.get_mut(&self.pa) {
            Some(1) => {
                shared.remove(&self.pa);
            }
            Some(n) => *n -= 1,
            None => {
                drop(shared);
                if let Err(e) = FRAMES.lock().as_mut().expect("frames initialised").free(self.pa) {
                    panic!("freeing frame {:#x}: {e:?}", self.pa);
                }
            }
        }
    }
}
