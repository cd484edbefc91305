//! A small fixed heap for `alloc` in user programs. Demand-paged `sbrk`
//! growth the Ridge way comes with the VM manager (UNIX-personality issue).

use linked_list_allocator::LockedHeap;

const HEAP_BYTES: usize = 256 * 1024;

#[repr(C, align(4096))]
struct Arena {
    bytes: [u8; HEAP_BYTES],
}

static mut ARENA: Arena = Arena { bytes: [0; HEAP_BYTES] };

struct Heap(LockedHeap);

#[global_allocator]
static HEAP: Heap = Heap(LockedHeap::empty());

static INIT: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

// SAFETY: delegates to LockedHeap, initialising it on first use with the
// arena, which nothing else references.
unsafe impl core::alloc::GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: core::alloc::Layout) -> *mut u8 {
        if !INIT.swap(true, core::sync::atomic::Ordering::AcqRel) {
            // SAFETY: runs once (the flag); the arena is used by nothing else.
            unsafe { self.0.lock().init((&raw mut ARENA.bytes).cast::<u8>(), HEAP_BYTES) };
        }
        // SAFETY: forwarded contract.
        unsafe { self.0.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: core::alloc::Layout) {
        // SAFETY: forwarded contract.
        unsafe { self.0.dealloc(ptr, layout) }
    }
}
