//! The only code here that touches memory by address, which safe Rust
//! cannot do: reading and writing the pages `sbrk` hands out (they belong
//! to no Rust object), touching an unmapped address on purpose, and a RAM
//! disk's lock page mapped by hand.

#![allow(unsafe_code)]

/// Index (in u64 words) of the first non-zero word of `len_bytes` at `addr`.
pub fn first_nonzero_word(addr: u64, len_bytes: usize) -> Option<usize> {
    (0..len_bytes / 8).find(|&i| {
        // SAFETY: the caller took `addr..addr + len_bytes` from sbrk for
        // this check; no Rust object lives there, and the heap region is
        // mapped on first touch by the process's pager.
        unsafe { ((addr as *const u64).add(i)).read_volatile() != 0 }
    })
}

/// Write word `i` of the range as `pattern ^ i`.
pub fn fill_words(addr: u64, len_bytes: usize, pattern: u64) {
    for i in 0..len_bytes / 8 {
        // SAFETY: as in `first_nonzero_word`.
        unsafe { ((addr as *mut u64).add(i)).write_volatile(pattern ^ i as u64) };
    }
}

/// Index of the first word that is not `pattern ^ i`.
pub fn first_wrong_word(addr: u64, len_bytes: usize, pattern: u64) -> Option<usize> {
    (0..len_bytes / 8).find(|&i| {
        // SAFETY: as in `first_nonzero_word`.
        unsafe { ((addr as *const u64).add(i)).read_volatile() != pattern ^ i as u64 }
    })
}

/// Read an address no process has mapped; the kernel ends the process
/// with a page fault, which the monitor reports as SIGSEGV.
pub fn touch_unmapped_memory() -> i32 {
    // SAFETY: deliberately faults: nothing is mapped at this user address
    // (programs are linked at 0x200000 and the heap and stack are far
    // above); the test expects this process to be ended here.
    let v = unsafe { (0xdead_0000 as *const u64).read_volatile() };
    v as i32
}

/// Compare-and-swap the u32 at `addr` (a RAM disk's lock page, mapped by
/// hand); true when it held `old`.
pub fn cas_u32(addr: u64, old: u32, new: u32) -> bool {
    // SAFETY: `addr` is the writer word of a lock page this process made
    // its window with `set_pager` (the driver maps it on first touch), 4
    // aligned; every process touches it only atomically.
    let word = unsafe { &*(addr as *const core::sync::atomic::AtomicU32) };
    word.compare_exchange(
        old,
        new,
        core::sync::atomic::Ordering::SeqCst,
        core::sync::atomic::Ordering::SeqCst,
    )
    .is_ok()
}

/// Store a byte atomically at `addr` (a reader byte of a lock page).
pub fn store_u8(addr: u64, value: u8) {
    // SAFETY: as in `cas_u32`, for a reader byte of the same page.
    let byte = unsafe { &*(addr as *const core::sync::atomic::AtomicU8) };
    byte.store(value, core::sync::atomic::Ordering::SeqCst);
}

/// `len` bytes at an address no process has mapped, as a buffer to hand
/// to a call that must answer `EFAULT`. Never read or written by this
/// process: only its address and length travel, in registers.
pub fn unmapped_buffer(len: usize) -> &'static mut [u8] {
    // SAFETY: nothing dereferences the slice in this process (the caller
    // turns the runtime's touching of buffers off first); the kernel
    // reaches it by walking the page tables and reports it unmapped.
    unsafe { core::slice::from_raw_parts_mut(0xdead_0000 as *mut u8, len) }
}

/// `len` bytes at `addr`, which may run into memory the process does not
/// have, as a buffer for a call that must answer `EFAULT`. Never read or
/// written by this process (the caller turns the runtime's touching of
/// buffers off first).
pub fn span(addr: u64, len: usize) -> &'static mut [u8] {
    // SAFETY: as in `unmapped_buffer`: only the address and length travel
    // to the kernel; this process never dereferences the slice.
    unsafe { core::slice::from_raw_parts_mut(addr as *mut u8, len) }
}

/// Load the u32 at `addr` (a word of a RAM disk's lock page).
pub fn load_u32(addr: u64) -> u32 {
    // SAFETY: as in `cas_u32`: a 4-aligned word of a lock page this
    // process mapped by hand, touched only atomically.
    let word = unsafe { &*(addr as *const core::sync::atomic::AtomicU32) };
    word.load(core::sync::atomic::Ordering::SeqCst)
}

/// Swap the u32 at `addr` (a word of a RAM disk's lock page) for `value`.
pub fn swap_u32(addr: u64, value: u32) -> u32 {
    // SAFETY: as in `load_u32`.
    let word = unsafe { &*(addr as *const core::sync::atomic::AtomicU32) };
    word.swap(value, core::sync::atomic::Ordering::SeqCst)
}

/// Load the u64 at `addr` (a handle's offset word in a RAM disk's lock
/// page).
pub fn load_u64(addr: u64) -> u64 {
    // SAFETY: as in `load_u32`, for an 8-aligned word of the same page.
    let word = unsafe { &*(addr as *const core::sync::atomic::AtomicU64) };
    word.load(core::sync::atomic::Ordering::SeqCst)
}

/// Store the u64 at `addr` (a handle's offset word in a RAM disk's lock
/// page), as a mapping client does at the end of its transfer.
pub fn store_u64(addr: u64, value: u64) {
    // SAFETY: as in `load_u64`.
    let word = unsafe { &*(addr as *const core::sync::atomic::AtomicU64) };
    word.store(value, core::sync::atomic::Ordering::SeqCst);
}

/// Write and read back a word at `addr` in the heap region, past the
/// break: the VM manager serves it if the address is inside the region it
/// pages for this process, else the process ends with SIGSEGV.
pub fn touch_heap_word(addr: u64) -> u64 {
    // SAFETY: `addr` is 8-aligned in the heap region above the break, where
    // no Rust object lives (the allocator only uses memory below the
    // break); the caller expects the touch past the region to end it.
    unsafe {
        (addr as *mut u64).write_volatile(0x5eed);
        (addr as *const u64).read_volatile()
    }
}
