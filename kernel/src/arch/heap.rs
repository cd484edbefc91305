//! The kernel heap: a linked-list allocator over a physically contiguous
//! region carved out at boot and reached through the direct map.

use linked_list_allocator::LockedHeap;

#[global_allocator]
static HEAP: LockedHeap = LockedHeap::empty();

/// Give the heap its memory: `len` bytes at physical `pa`, frames taken
/// from the allocator for the heap alone (boot.rs), once.
pub(super) fn init(pa: u64, len: usize) {
    let start = super::phys::phys_to_virt(pa) as *mut u8;
    // SAFETY: the region was just allocated from the frame allocator for
    // the heap alone, is mapped by the direct map, and init runs once.
    unsafe { HEAP.lock().init(start, len) }
}
