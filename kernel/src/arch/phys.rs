//! Physical memory as the kernel reaches it: every frame is mapped at
//! [`DIRECT_MAP_BASE`] once the kernel's tables exist (paging.rs builds
//! them), and the first GiB at [`KERNEL_VMA`] before that. The bottom of
//! arch's memory layers: it imports nothing of arch.

use core::sync::atomic::{AtomicU64, Ordering};

/// Physical memory is mapped here (PML4 slot 256, the start of the kernel half).
pub const DIRECT_MAP_BASE: u64 = 0xffff_8000_0000_0000;
/// The kernel image is linked here (see kernel.ld).
pub const KERNEL_VMA: u64 = 0xffff_ffff_8000_0000;

/// Offset added to a physical address to reach it: the boot mapping of the
/// first GiB at KERNEL_VMA until the direct map exists, then DIRECT_MAP_BASE.
static PHYS_OFFSET: AtomicU64 = AtomicU64::new(KERNEL_VMA);

/// The kernel virtual address of physical `pa` (computing it is harmless;
/// every use of it says why the access is sound).
pub(super) fn phys_to_virt(pa: u64) -> u64 {
    pa + PHYS_OFFSET.load(Ordering::Relaxed)
}

/// Read-only view of physical memory.
///
/// # Safety
/// `pa..pa + len` must be memory that nothing writes for as long as the
/// slice is used: boot modules and the Multiboot information (reserved
/// from the frame allocator), firmware tables and the BIOS area. Before
/// the direct map exists it must lie in the first GiB.
pub(super) unsafe fn phys_slice(pa: u64, len: usize) -> &'static [u8] {
    // SAFETY: the caller's promise; the direct map (or the boot map of the
    // first GiB) maps it.
    unsafe { core::slice::from_raw_parts(phys_to_virt(pa) as *const u8, len) }
}

/// From now on physical memory is reached through the direct map (once
/// paging.rs has loaded the kernel's tables, which map it).
pub(super) fn use_direct_map() {
    PHYS_OFFSET.store(DIRECT_MAP_BASE, Ordering::Relaxed);
}
