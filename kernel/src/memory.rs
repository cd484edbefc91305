//! Physical memory and the kernel's address space.
//!
//! Layout of every address space (details in docs/memory.md):
//! - `0 ..= 0x7fff_ffff_ffff`: the process's own (user half);
//! - `0xffff_8000_0000_0000`: the direct map of all physical memory
//!   (2 MiB pages, no-execute, global);
//! - `0xffff_ffff_8000_0000`: the kernel image (4 KiB pages with the
//!   permissions of each section: text RX, rodata R, data RW).
//!
//! All 256 kernel-half PML4 slots are created at boot, so copying them into
//! a new root shares the kernel half for good: later kernel mappings show
//! up in every address space without touching any of them.

use crate::arch::paging::{self, GLOBAL, HUGE_PAGE_BYTES, KERNEL_VMA, NO_EXECUTE, PAGE_BYTES, WRITABLE};
use crate::bootinfo::BootInfo;
use alloc::collections::BTreeMap;
use kernel_core::frame_alloc::{FrameAllocator, PhysRange};
use kernel_core::limits::KERNEL_HEAP_BYTES;
use spin::Mutex;

static FRAMES: Mutex<Option<FrameAllocator<'static>>> = Mutex::new(None);
static KERNEL_ROOT: spin::Once<u64> = spin::Once::new();

/// Allocate one zeroed frame.
pub fn alloc_frame() -> Option<u64> {
    let pa = FRAMES.lock().as_mut()?.alloc()?;
    paging::zero_frame(pa);
    Some(pa)
}

/// Allocate one zeroed frame below 4 GiB.
pub fn alloc_frame_low() -> Option<u64> {
    let pa = FRAMES.lock().as_mut()?.alloc_below(1 << 32)?;
    paging::zero_frame(pa);
    Some(pa)
}

/// Return a frame. Freeing a frame twice is a kernel bug and panics.
pub fn free_frame(pa: u64) {
    if let Err(e) = FRAMES.lock().as_mut().expect("frames initialised").free(pa) {
        panic!("freeing frame {pa:#x}: {e:?}");
    }
}

pub fn free_bytes() -> u64 {
    FRAMES.lock().as_ref().map_or(0, |f| f.free_frames() as u64 * PAGE_BYTES)
}

/// The kernel's own page-table root (no user half).
pub fn kernel_root() -> u64 {
    *KERNEL_ROOT.get().expect("memory initialised")
}

/// Set up the frame allocator, build the kernel's page tables, switch to
/// them, and give the kernel its heap. Runs once, on the boot CPU.
pub fn init(boot: &BootInfo, kernel_phys: PhysRange) {
    let mut reserved = [PhysRange::new(0, 0); 2 + kernel_core::limits::MAX_BOOT_MODULES];
    // The first MiB: BIOS data, the SMP trampoline page, legacy holes.
    reserved[0] = PhysRange::new(0, 0x10_0000);
    reserved[1] = kernel_phys;
    for (i, m) in boot.modules().iter().enumerate() {
        reserved[2 + i] = PhysRange::new(m.start, m.end);
    }
    let reserved = &reserved[..2 + boot.modules().len()];
    paging::set_nx_supported(crate::arch::cpu::has_nx());
    let bitmap = crate::arch::paging::frame_bitmap();
    *FRAMES.lock() = Some(FrameAllocator::new(bitmap, boot.usable(), reserved));

    let root = alloc_frame_low().expect("a frame for the kernel root");
    let mut alloc = || alloc_frame_low();
    for slot in paging::KERNEL_PML4_FIRST..512 {
        paging::ensure_pml4_slot(root, slot, &mut alloc).expect("kernel PML4 slots");
    }
    // Direct map: all RAM, and at least the low 4 GiB so that firmware
    // tables and the APICs are reachable. The top 32 MiB below 4 GiB hold
    // the APICs and firmware: uncached.
    let direct_end = boot.ram_end.max(1 << 32).div_ceil(HUGE_PAGE_BYTES) * HUGE_PAGE_BYTES;
    let mut pa = 0;
    while pa < direct_end {
        let mmio = (0xfe00_0000..0x1_0000_0000).contains(&pa);
        let cache = if mmio { paging::CACHE_DISABLE | paging::WRITE_THROUGH } else { 0 };
        paging::map_huge_page(
            root,
            paging::DIRECT_MAP_BASE + pa,
            pa,
            WRITABLE | GLOBAL | NO_EXECUTE | cache,
            &mut alloc,
        )
        .expect("direct map");
        pa += HUGE_PAGE_BYTES;
    }
    // The kernel image, section by section.
    let image = crate::arch::boot::kernel_image();
    let (text_end, rodata_end, end) = (image.text_end, image.rodata_end, image.virt_end);
    let mut va = image.virt_start;
    while va < end {
        let flags = if va < text_end {
            GLOBAL
        } else if va < rodata_end {
            GLOBAL | NO_EXECUTE
        } else {
            GLOBAL | NO_EXECUTE | WRITABLE
        };
        if !crate::arch::percpu::is_stack_guard_page(va) {
            paging::map_page(root, va, va - KERNEL_VMA, flags, &mut alloc).expect("kernel image map");
        }
        va += PAGE_BYTES;
    }
    KERNEL_ROOT.call_once(|| root);
    crate::arch::cpu::activate_kernel_tables(root);

    let heap_frames = KERNEL_HEAP_BYTES / PAGE_BYTES as usize;
    let heap = FRAMES.lock().as_mut().and_then(|f| f.alloc_contiguous(heap_frames)).expect("kernel heap");
    crate::arch::heap::init(heap, KERNEL_HEAP_BYTES);
}

/// A process's address space: a page-table root whose kernel half is the
/// kernel's. Dropping it frees every frame of the user half.
pub struct AddressSpace {
    root: u64,
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

impl AddressSpace {
    pub fn new() -> Option<AddressSpace> {
        let root = alloc_frame_low()?;
        paging::copy_kernel_half(kernel_root(), root);
        Some(AddressSpace { root, tlb_epoch: 0 })
    }

    pub fn root(&self) -> u64 {
        self.root
    }

    /// Map a fresh zeroed frame at user page `va`; returns its physical address.
    pub fn map_new_page(&mut self, va: u64, writable: bool, executable: bool) -> Result<u64, SpaceError> {
        let frame = alloc_frame().ok_or(SpaceError::OutOfMemory)?;
        let flags =
            paging::USER | if writable { WRITABLE } else { 0 } | if executable { 0 } else { NO_EXECUTE };
        match paging::map_page(self.root, va, frame, flags, &mut || alloc_frame()) {
            Ok(()) => Ok(frame),
            Err(e) => {
                free_frame(frame);
                Err(match e {
                    paging::MapError::AlreadyMapped => SpaceError::AlreadyMapped,
                    paging::MapError::OutOfMemory => SpaceError::OutOfMemory,
                })
            }
        }
    }

    /// Physical address and access flags of user address `va`.
    pub fn translate(&self, va: u64) -> Option<(u64, u64)> {
        paging::translate(self.root, va)
    }
}

impl Drop for AddressSpace {
    fn drop(&mut self) {
        paging::free_user_half(self.root, &mut |pa| frame_unref(pa), &mut |pa| free_frame(pa));
        free_frame(self.root);
    }
}

/// Extra references to frames shared copy-on-write or held by messages,
/// beyond the first. A frame absent here has exactly one owner. Shared
/// frames are few, so a map beats a count for every frame of memory.
static SHARED_FRAMES: Mutex<BTreeMap<u64, u32>> = Mutex::new(BTreeMap::new());

/// Add a reference to `pa`.
pub fn frame_ref(pa: u64) {
    *SHARED_FRAMES.lock().entry(pa).or_insert(0) += 1;
}

/// Drop a reference to `pa`; the last one frees the frame.
pub fn frame_unref(pa: u64) {
    let mut shared = SHARED_FRAMES.lock();
    match shared.get_mut(&pa) {
        Some(1) => {
            shared.remove(&pa);
        }
        Some(n) => *n -= 1,
        None => {
            drop(shared);
            free_frame(pa);
        }
    }
}

fn frame_is_shared(pa: u64) -> bool {
    SHARED_FRAMES.lock().contains_key(&pa)
}

/// Frames currently shared (for leak checks).
pub fn shared_frame_count() -> usize {
    SHARED_FRAMES.lock().len()
}

impl AddressSpace {
    /// Lend the page at user address `va` (page-aligned, mapped) for a
    /// message: the frame gains a reference and the page becomes
    /// copy-on-write here, so later writes by this process copy it and the
    /// receiver keeps the contents as they were (NetBSD's loan, Ridge's
    /// page-table-entry copy). Returns the frame.
    pub fn loan_page(&mut self, va: u64) -> Option<u64> {
        let e = paging::leaf_entry(self.root, va);
        if e & paging::PRESENT == 0 || e & paging::USER == 0 {
            return None;
        }
        if e & WRITABLE != 0 {
            paging::set_leaf_entry(self.root, va, (e & !WRITABLE) | paging::COPY_ON_WRITE);
            self.tlb_epoch += 1;
            crate::arch::cpu::invlpg(va);
        }
        let frame = paging::entry_address(e);
        frame_ref(frame);
        Some(frame)
    }

    /// Map a lent frame (whose reference the caller hands over) at user
    /// page `va`, copy-on-write, replacing what was there.
    pub fn map_loaned(&mut self, va: u64, frame: u64) -> Result<(), SpaceError> {
        let old = paging::leaf_entry(self.root, va);
        let flags = paging::USER | paging::NO_EXECUTE | paging::COPY_ON_WRITE | paging::PRESENT;
        if old & paging::PRESENT != 0 {
            paging::set_leaf_entry(self.root, va, frame | flags);
            frame_unref(paging::entry_address(old));
        } else {
            paging::map_page(self.root, va, frame, flags, &mut || alloc_frame()).map_err(|e| match e {
                paging::MapError::AlreadyMapped => SpaceError::AlreadyMapped,
                paging::MapError::OutOfMemory => SpaceError::OutOfMemory,
            })?;
        }
        self.tlb_epoch += 1;
        crate::arch::cpu::invlpg(va);
        Ok(())
    }

    /// Map `frame` (whose reference the caller hands over) at user page
    /// `va`, replacing what was there: writable, or read-only, or shared
    /// copy-on-write; executable or not.
    pub fn map_frame(
        &mut self,
        va: u64,
        frame: u64,
        writable: bool,
        cow: bool,
        executable: bool,
    ) -> Result<(), SpaceError> {
        let old = paging::leaf_entry(self.root, va);
        let flags = paging::USER
            | if executable { 0 } else { paging::NO_EXECUTE }
            | paging::PRESENT
            | if writable { WRITABLE } else { 0 }
            | if cow { paging::COPY_ON_WRITE } else { 0 };
        if old & paging::PRESENT != 0 {
            paging::set_leaf_entry(self.root, va, frame | flags);
            frame_unref(paging::entry_address(old));
            self.tlb_epoch += 1;
        } else {
            paging::map_page(self.root, va, frame, flags, &mut || alloc_frame()).map_err(|e| match e {
                paging::MapError::AlreadyMapped => SpaceError::AlreadyMapped,
                paging::MapError::OutOfMemory => SpaceError::OutOfMemory,
            })?;
        }
        crate::arch::cpu::invlpg(va);
        Ok(())
    }

    /// Resolve a write fault at `va` if the page is copy-on-write: the last
    /// holder just gets write access back, others get a private copy.
    /// Returns false if `va` is not a copy-on-write page (a real fault), or
    /// no memory is left for the copy.
    pub fn resolve_copy_on_write(&mut self, va: u64) -> bool {
        let page = va & !(PAGE_BYTES - 1);
        let e = paging::leaf_entry(self.root, page);
        if e & paging::PRESENT == 0 || e & paging::COPY_ON_WRITE == 0 {
            return false;
        }
        let frame = paging::entry_address(e);
        let keep = e & (paging::USER | paging::NO_EXECUTE | paging::PRESENT);
        if frame_is_shared(frame) {
            let Some(copy) = alloc_frame() else { return false };
            paging::copy_frame(frame, copy);
            paging::set_leaf_entry(self.root, page, copy | keep | WRITABLE);
            frame_unref(frame);
        } else {
            paging::set_leaf_entry(self.root, page, frame | keep | WRITABLE);
        }
        // Another CPU that kept this root loaded while idle may still hold
        // the read-only translation (or the old frame).
        self.tlb_epoch += 1;
        crate::arch::cpu::invlpg(page);
        true
    }

    /// Give the empty space `dst` every user mapping of this one, as in
    /// `fork`: writable pages become copy-on-write on both sides (the frame
    /// gains a reference), read-only pages are shared as they are. Returns
    /// the pages shared.
    pub fn copy_on_write_into(&mut self, dst: &mut AddressSpace) -> Result<u64, SpaceError> {
        let mut pages = 0u64;
        let mut failed = None;
        let dst_root = dst.root;
        paging::update_user_leaves(self.root, &mut |va, e| {
            if failed.is_some() {
                return e;
            }
            let frame = paging::entry_address(e);
            let shared = if e & WRITABLE != 0 { (e & !WRITABLE) | paging::COPY_ON_WRITE } else { e };
            let flags = shared & paging::ACCESS_FLAGS;
            match paging::map_page(dst_root, va, frame, flags, &mut || alloc_frame()) {
                Ok(()) => {
                    frame_ref(frame);
                    pages += 1;
                    shared
                }
                Err(err) => {
                    failed = Some(match err {
                        paging::MapError::AlreadyMapped => SpaceError::AlreadyMapped,
                        paging::MapError::OutOfMemory => SpaceError::OutOfMemory,
                    });
                    e
                }
            }
        });
        // This space lost write access to its pages. The caller runs in
        // another space, so this CPU holds none of its translations; a CPU
        // that kept its root loaded flushes before running it again.
        self.tlb_epoch += 1;
        match failed {
            Some(e) => Err(e),
            None => Ok(pages),
        }
    }
}
