//! Four-level page tables (Intel SDM vol. 3A §4.5) and access to physical
//! memory through the direct map.
//!
//! All physical memory is mapped at [`DIRECT_MAP_BASE`] in every address
//! space, so the kernel reads page tables and user frames by physical
//! address — it never dereferences a user virtual address (Ridge OS §4:
//! "kernel mode uses only real addresses"). This module is the only code
//! that turns a physical address into a pointer.

use core::sync::atomic::{AtomicU64, Ordering};

pub const PAGE_BYTES: u64 = 4096;
pub const HUGE_PAGE_BYTES: u64 = 2 * 1024 * 1024;
/// Physical memory is mapped here (PML4 slot 256, the start of the kernel half).
pub const DIRECT_MAP_BASE: u64 = 0xffff_8000_0000_0000;
/// The kernel image is linked here (see kernel.ld).
pub const KERNEL_VMA: u64 = 0xffff_ffff_8000_0000;
/// First PML4 slot of the kernel half.
pub const KERNEL_PML4_FIRST: usize = 256;

pub const PRESENT: u64 = 1 << 0;
pub const WRITABLE: u64 = 1 << 1;
pub const USER: u64 = 1 << 2;
pub const WRITE_THROUGH: u64 = 1 << 3;
pub const CACHE_DISABLE: u64 = 1 << 4;
pub const HUGE: u64 = 1 << 7;
pub const GLOBAL: u64 = 1 << 8;
pub const NO_EXECUTE: u64 = 1 << 63;
const ADDRESS_MASK: u64 = 0x000f_ffff_ffff_f000;
/// Flags of a leaf entry that describe access rights.
pub const ACCESS_FLAGS: u64 = PRESENT | WRITABLE | USER | NO_EXECUTE | COPY_ON_WRITE;

/// Offset added to a physical address to reach it: the boot mapping of the
/// first GiB at KERNEL_VMA until the direct map exists, then DIRECT_MAP_BASE.
static PHYS_OFFSET: AtomicU64 = AtomicU64::new(KERNEL_VMA);

pub fn phys_to_virt(pa: u64) -> u64 {
    pa + PHYS_OFFSET.load(Ordering::Relaxed)
}

/// Switch physical access to the direct map (after `write_cr3` of tables
/// that contain it).
pub fn use_direct_map() {
    PHYS_OFFSET.store(DIRECT_MAP_BASE, Ordering::Relaxed);
}

/// Why a mapping could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    AlreadyMapped,
    OutOfMemory,
}

/// A source of zeroed frames for page tables.
pub type FrameAlloc<'a> = &'a mut dyn FnMut() -> Option<u64>;

fn entry_ptr(table_pa: u64, index: usize) -> *mut u64 {
    (phys_to_virt(table_pa) + index as u64 * 8) as *mut u64
}

fn read_entry(table_pa: u64, index: usize) -> u64 {
    // SAFETY: table_pa is a page-table frame owned by the caller's address
    // space (reached from a root by walking), reachable through the direct map.
    unsafe { entry_ptr(table_pa, index).read_volatile() }
}

fn write_entry(table_pa: u64, index: usize, value: u64) {
    // SAFETY: as in read_entry; the kernel lock serialises writers.
    unsafe { entry_ptr(table_pa, index).write_volatile(value) }
}

fn index(va: u64, level: u32) -> usize {
    ((va >> (12 + 9 * level)) & 511) as usize
}

pub fn zero_frame(pa: u64) {
    // SAFETY: pa is a whole frame the caller owns, mapped by the direct map.
    unsafe { core::ptr::write_bytes(phys_to_virt(pa) as *mut u8, 0, PAGE_BYTES as usize) }
}

/// Copy `src` into the frame at `pa`, starting `offset` bytes in.
pub fn copy_to_frame(pa: u64, offset: usize, src: &[u8]) {
    assert!(offset + src.len() <= PAGE_BYTES as usize);
    // SAFETY: the range lies inside one frame the caller owns (asserted),
    // and `src` cannot overlap it (kernel memory is not user frames).
    unsafe {
        core::ptr::copy_nonoverlapping(src.as_ptr(), (phys_to_virt(pa) + offset as u64) as *mut u8, src.len())
    }
}

/// Copy from the frame at `pa`, starting `offset` bytes in, into `dst`.
pub fn copy_from_frame(pa: u64, offset: usize, dst: &mut [u8]) {
    assert!(offset + dst.len() <= PAGE_BYTES as usize);
    // SAFETY: as in copy_to_frame, reading.
    unsafe {
        core::ptr::copy_nonoverlapping(
            (phys_to_virt(pa) + offset as u64) as *const u8,
            dst.as_mut_ptr(),
            dst.len(),
        )
    }
}

/// Read-only view of physical memory the kernel never frees or writes
/// (boot modules, firmware tables).
pub fn phys_slice(pa: u64, len: usize) -> &'static [u8] {
    // SAFETY: callers pass ranges of boot-image modules or firmware tables,
    // which are reserved in the frame allocator and never written.
    unsafe { core::slice::from_raw_parts(phys_to_virt(pa) as *const u8, len) }
}

/// Next-level table of `entry`, creating it if absent. Intermediate
/// entries are permissive (the leaf decides access); user-half ones carry
/// USER so user leaves are reachable.
fn next_table(table_pa: u64, idx: usize, user: bool, alloc: FrameAlloc) -> Result<u64, MapError> {
    let e = read_entry(table_pa, idx);
    if e & PRESENT != 0 {
        if e & HUGE != 0 {
            return Err(MapError::AlreadyMapped);
        }
        return Ok(e & ADDRESS_MASK);
    }
    let frame = alloc().ok_or(MapError::OutOfMemory)?;
    zero_frame(frame);
    write_entry(table_pa, idx, frame | PRESENT | WRITABLE | if user { USER } else { 0 });
    Ok(frame)
}

/// Whether EFER.NXE is on (the CPU has the no-execute bit). Without it bit
/// 63 of an entry is reserved, so it must never be set.
static NX_SUPPORTED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

pub fn set_nx_supported(on: bool) {
    NX_SUPPORTED.store(on, Ordering::Relaxed);
}

fn entry_flags(flags: u64) -> u64 {
    if NX_SUPPORTED.load(Ordering::Relaxed) { flags } else { flags & !NO_EXECUTE }
}

/// Map the 4 KiB page at `va` to `pa` with `flags` (PRESENT is added).
pub fn map_page(root: u64, va: u64, pa: u64, flags: u64, alloc: FrameAlloc) -> Result<(), MapError> {
    let flags = entry_flags(flags);
    let user = flags & USER != 0;
    let mut table = root;
    for level in (1..4).rev() {
        table = next_table(table, index(va, level), user, alloc)?;
    }
    let i = index(va, 0);
    if read_entry(table, i) & PRESENT != 0 {
        return Err(MapError::AlreadyMapped);
    }
    write_entry(table, i, (pa & ADDRESS_MASK) | flags | PRESENT);
    Ok(())
}

/// Map the 2 MiB page at `va` (kernel use: the direct map).
pub fn map_huge_page(root: u64, va: u64, pa: u64, flags: u64, alloc: FrameAlloc) -> Result<(), MapError> {
    let flags = entry_flags(flags);
    let mut table = root;
    for level in (2..4).rev() {
        table = next_table(table, index(va, level), false, alloc)?;
    }
    let i = index(va, 1);
    if read_entry(table, i) & PRESENT != 0 {
        return Err(MapError::AlreadyMapped);
    }
    write_entry(table, i, (pa & ADDRESS_MASK) | flags | PRESENT | HUGE);
    Ok(())
}

/// Make sure the PML4 slot exists (kernel half: shared by every root).
pub fn ensure_pml4_slot(root: u64, slot: usize, alloc: FrameAlloc) -> Result<(), MapError> {
    next_table(root, slot, false, alloc).map(|_| ())
}

/// Translate `va`: the physical address and the leaf's access flags.
pub fn translate(root: u64, va: u64) -> Option<(u64, u64)> {
    let mut table = root;
    for level in (1..4).rev() {
        let e = read_entry(table, index(va, level));
        if e & PRESENT == 0 {
            return None;
        }
        if e & HUGE != 0 {
            let size = 1u64 << (12 + 9 * level);
            return Some(((e & ADDRESS_MASK & !(size - 1)) + (va & (size - 1)), e & ACCESS_FLAGS));
        }
        table = e & ADDRESS_MASK;
    }
    let e = read_entry(table, index(va, 0));
    (e & PRESENT != 0).then(|| ((e & ADDRESS_MASK) + (va & (PAGE_BYTES - 1)), e & ACCESS_FLAGS))
}

/// Copy the kernel half of `from` into `to` (a new address space's root).
pub fn copy_kernel_half(from: u64, to: u64) {
    for slot in KERNEL_PML4_FIRST..512 {
        write_entry(to, slot, read_entry(from, slot));
    }
}

/// Set one PML4 slot (used to lend the boot identity map to starting CPUs).
pub fn set_pml4_slot(root: u64, slot: usize, value: u64) {
    write_entry(root, slot, value);
}

pub fn pml4_slot(root: u64, slot: usize) -> u64 {
    read_entry(root, slot)
}

/// Free every frame the user half of `root` maps (through `free_leaf`) and
/// every table below it (through `free_table`); the root itself is left to
/// the caller.
pub fn free_user_half(root: u64, free_leaf: &mut dyn FnMut(u64), free_table: &mut dyn FnMut(u64)) {
    fn walk(table: u64, level: u32, free_leaf: &mut dyn FnMut(u64), free_table: &mut dyn FnMut(u64)) {
        for i in 0..512 {
            let e = read_entry(table, i);
            if e & PRESENT == 0 {
                continue;
            }
            let pa = e & ADDRESS_MASK;
            if level > 0 {
                walk(pa, level - 1, free_leaf, free_table);
                free_table(pa);
            } else {
                free_leaf(pa);
            }
        }
    }
    for slot in 0..KERNEL_PML4_FIRST {
        let e = read_entry(root, slot);
        if e & PRESENT != 0 {
            walk(e & ADDRESS_MASK, 2, free_leaf, free_table);
            free_table(e & ADDRESS_MASK);
            write_entry(root, slot, 0);
        }
    }
}

/// Call `visit(va, entry)` for every present 4 KiB leaf of the user
/// half, in address order; `visit` returns the entry to store back (the
/// same value to leave it alone).
pub fn update_user_leaves(root: u64, visit: &mut dyn FnMut(u64, u64) -> u64) {
    fn walk(table: u64, level: u32, va_base: u64, visit: &mut dyn FnMut(u64, u64) -> u64) {
        for i in 0..512 {
            let e = read_entry(table, i);
            if e & PRESENT == 0 {
                continue;
            }
            let va = va_base | ((i as u64) << (12 + 9 * level));
            if level > 0 {
                if e & HUGE == 0 {
                    walk(e & ADDRESS_MASK, level - 1, va, visit);
                }
            } else {
                let new = visit(va, e);
                if new != e {
                    write_entry(table, i, new);
                }
            }
        }
    }
    for slot in 0..KERNEL_PML4_FIRST {
        let e = read_entry(root, slot);
        if e & PRESENT != 0 {
            walk(e & ADDRESS_MASK, 2, (slot as u64) << 39, visit);
        }
    }
}

/// Software bit of a user leaf entry: the page is shared copy-on-write
/// (read-only in hardware; the first write copies it).
pub const COPY_ON_WRITE: u64 = 1 << 9;

/// The 4 KiB leaf entry for `va`, if every table down to it exists.
fn leaf_slot(root: u64, va: u64) -> Option<(u64, usize)> {
    let mut table = root;
    for level in (1..4).rev() {
        let e = read_entry(table, index(va, level));
        if e & PRESENT == 0 || e & HUGE != 0 {
            return None;
        }
        table = e & ADDRESS_MASK;
    }
    Some((table, index(va, 0)))
}

/// Read the raw leaf entry for `va` (0 when absent).
pub fn leaf_entry(root: u64, va: u64) -> u64 {
    leaf_slot(root, va).map_or(0, |(t, i)| read_entry(t, i))
}

/// Replace the leaf entry for `va`, which must exist (tables and all).
/// Returns false when it does not.
pub fn set_leaf_entry(root: u64, va: u64, value: u64) -> bool {
    let value = entry_flags(value);
    match leaf_slot(root, va) {
        Some((t, i)) => {
            write_entry(t, i, value);
            true
        }
        None => false,
    }
}

/// The physical address in an entry.
pub fn entry_address(e: u64) -> u64 {
    e & ADDRESS_MASK
}

/// Copy a whole frame.
pub fn copy_frame(from: u64, to: u64) {
    // SAFETY: both are whole frames the caller owns (`to` freshly
    // allocated), distinct, and reachable through the direct map.
    unsafe {
        core::ptr::copy_nonoverlapping(
            phys_to_virt(from) as *const u8,
            phys_to_virt(to) as *mut u8,
            PAGE_BYTES as usize,
        )
    }
}

/// Copy `len` bytes between two frames (offsets within each).
pub fn copy_between_frames(from: u64, from_offset: usize, to: u64, to_offset: usize, len: usize) {
    assert!(from_offset + len <= PAGE_BYTES as usize && to_offset + len <= PAGE_BYTES as usize);
    // SAFETY: both ranges lie inside frames the caller may read and write
    // (asserted), reached through the direct map; `copy` allows overlap.
    unsafe {
        core::ptr::copy(
            (phys_to_virt(from) + from_offset as u64) as *const u8,
            (phys_to_virt(to) + to_offset as u64) as *mut u8,
            len,
        )
    }
}

const FRAME_BITMAP_WORDS: usize =
    kernel_core::frame_alloc::FrameAllocator::bitmap_words_for(kernel_core::limits::MAX_PHYS_BYTES);
static mut FRAME_BITMAP: [u64; FRAME_BITMAP_WORDS] = [0; FRAME_BITMAP_WORDS];
static FRAME_BITMAP_TAKEN: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// The frame allocator's bitmap storage, handed out once.
#[allow(clippy::deref_addrof)] // a reference to a `static mut` must go through a raw pointer
pub fn frame_bitmap() -> &'static mut [u64] {
    assert!(!FRAME_BITMAP_TAKEN.swap(true, Ordering::AcqRel), "frame bitmap taken twice");
    // SAFETY: the flag above guarantees this is the only reference ever made.
    unsafe { &mut *(&raw mut FRAME_BITMAP) }
}
