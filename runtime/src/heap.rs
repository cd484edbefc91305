//! The heap for `alloc`, in the heap region of the address space
//! (`abi::layout::USER_HEAP_BASE`). The break moves up with [`sbrk`], a
//! pointer bump with no kernel entry (Ridge's `sbrk`); each page arrives on
//! first touch from the process's pager: the VM manager for UNIX
//! processes, the kernel's zero-fill default for system servers.

use abi::layout::{USER_HEAP_BASE, USER_HEAP_MAX_BYTES};
use core::sync::atomic::{AtomicU64, Ordering};
use linked_list_allocator::LockedHeap;

/// How far the allocator grows the break at a time.
const GROW_BYTES: u64 = 256 * 1024;

/// Bytes of the heap region in use (the break is `USER_HEAP_BASE + BRK_BYTES`).
static BRK_BYTES: AtomicU64 = AtomicU64::new(0);

/// The most bytes the break may be above the region's start: the process's
/// heap limit (`RLIMIT_DATA`/`RLIMIT_AS`, from the exec block or its own
/// `setrlimit`), at most the region's size. A `fork` child has its
/// parent's, as the monitor does.
static LIMIT_BYTES: AtomicU64 = AtomicU64::new(USER_HEAP_MAX_BYTES);

/// Set the heap limit (`protocols::unix::rlimit`); the region's size caps it.
pub fn set_limit(limit_bytes: u64) {
    LIMIT_BYTES.store(limit_bytes.min(USER_HEAP_MAX_BYTES), Ordering::Relaxed);
}

/// Move the break; returns the old one, or `None` past the region's end,
/// past the heap limit (when growing) or below the region's start.
pub fn sbrk(increment: i64) -> Option<u64> {
    let mut old = BRK_BYTES.load(Ordering::Relaxed);
    let limit = LIMIT_BYTES.load(Ordering::Relaxed);
    loop {
        // Shrinking is always allowed, even above a limit lowered since.
        let new = old
            .checked_add_signed(increment)
            .filter(|&n| n <= USER_HEAP_MAX_BYTES && (increment <= 0 || n <= limit))?;
        match BRK_BYTES.compare_exchange(old, new, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return Some(USER_HEAP_BASE + old),
            Err(now) => old = now,
        }
    }
}

/// The heap's figures: (bytes in use by live allocations, bytes of the
/// heap region taken: the break). For `protocols::heap::OP_HEAP_STATS`.
pub fn stats() -> (u64, u64) {
    let used = HEAP.0.lock().used() as u64;
    (used, BRK_BYTES.load(Ordering::Relaxed))
}

struct Heap(LockedHeap);

#[global_allocator]
static HEAP: Heap = Heap(LockedHeap::empty());

// SAFETY: delegates to LockedHeap. The memory handed to it comes from
// `sbrk`, which gives each byte of the heap region out once, and that
// region is mapped (on demand) for the life of the process.
unsafe impl core::alloc::GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: core::alloc::Layout) -> *mut u8 {
        let mut heap = self.0.lock();
        if heap.size() == 0 {
            let Some(start) = sbrk(GROW_BYTES as i64) else { return core::ptr::null_mut() };
            // SAFETY: `start..start + GROW_BYTES` was just taken from the
            // region by sbrk and is used by nothing else.
            unsafe { heap.init(start as *mut u8, GROW_BYTES as usize) };
        }
        loop {
            if let Ok(p) = heap.allocate_first_fit(layout) {
                return p.as_ptr();
            }
            let want = (layout.size() as u64 + layout.align() as u64 + 64).max(GROW_BYTES);
            let want = want.next_multiple_of(abi::layout::PAGE_SIZE);
            // The heap can only grow in place: if the program moved the
            // break itself, the memory above the heap is the program's.
            if BRK_BYTES.load(Ordering::Relaxed) + USER_HEAP_BASE != heap.top() as u64
                || sbrk(want as i64).is_none()
            {
                return core::ptr::null_mut();
            }
            // SAFETY: the bytes just above the heap's top were taken from
            // the region by sbrk for it (checked: the break was the top).
            unsafe { heap.extend(want as usize) };
        }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: core::alloc::Layout) {
        if let Some(p) = core::ptr::NonNull::new(ptr) {
            // SAFETY: forwarded contract: `ptr` came from `alloc` with `layout`.
            unsafe { self.0.lock().deallocate(p, layout) }
        }
    }
}
