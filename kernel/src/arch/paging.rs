//! Four-level page tables (Intel SDM vol. 3A §4.5) and access to physical
//! memory through the direct map.
//!
//! All physical memory is mapped at [`DIRECT_MAP_BASE`] in every address
//! space, so the kernel reads page tables and user frames by physical
//! address — it never dereferences a user virtual address (Ridge OS §4:
//! "kernel mode uses only real addresses"). This module is the only code
//! that turns a physical address into a pointer.
//!
//! Layers, bottom up:
//! - raw entries and walks over tables by physical address (private);
//! - the kernel's own tables, built once at boot ([`init_kernel_tables`]);
//! - [`PageTable`], a process's tables as an owned value: every frame it
//!   maps is a [`Frame`] it holds, its user half is reached only through
//!   its methods, and its root is never freed while some CPU has it
//!   loaded (a CPU that idles keeps its last CR3; see [`PageTable::drop`]).
//!
//! Soundness (Asterinas OSTD's rule): no sequence of calls to the public
//! functions here can touch memory the kernel uses for anything else. A
//! `PageTable` maps only user addresses and only frames it owns; user
//! bytes are copied as bytes, never referenced.

use super::frames::{self, Frame, Pool};
use super::percpu;
pub use super::phys::{DIRECT_MAP_BASE, KERNEL_VMA};
use super::phys::{phys_to_virt, use_direct_map};
use abi::layout::{PAGE_SIZE, USER_END};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel_core::frame_alloc::PhysRange;
use kernel_core::limits::MAX_CPUS;
use spin::Mutex;

pub const HUGE_PAGE_BYTES: u64 = 2 * 1024 * 1024;
/// First PML4 slot of the kernel half.
const KERNEL_PML4_FIRST: usize = 256;
/// Entries of a table at any level: one page of 8-byte entries (512).
const ENTRIES_PER_TABLE: usize = PAGE_SIZE as usize / size_of::<u64>();
/// Address bits below a page's (12): the offset within a page.
const PAGE_SHIFT: u32 = PAGE_SIZE.trailing_zeros();
/// Address bits each level of tables indexes (9).
const INDEX_BITS: u32 = ENTRIES_PER_TABLE.trailing_zeros();

pub const PRESENT: u64 = 1 << 0;
pub const WRITABLE: u64 = 1 << 1;
pub const USER: u64 = 1 << 2;
const WRITE_THROUGH: u64 = 1 << 3;
const CACHE_DISABLE: u64 = 1 << 4;
const HUGE: u64 = 1 << 7;
const GLOBAL: u64 = 1 << 8;
/// Software bit of a user leaf entry: the page is shared copy-on-write
/// (read-only in hardware; the first write copies it).
pub const COPY_ON_WRITE: u64 = 1 << 9;
/// Software bit: writable *and* shared on purpose (`pager::SHARED`, a RAM
/// disk's window): every owner writes the same frame, and `fork` keeps it
/// so rather than making it copy-on-write.
pub const SHARED_PAGE: u64 = 1 << 10;
/// Software bit: device memory (a BAR), not a frame of RAM: never freed,
/// shared or copied through, only mapped by [`PageTable::map_device`].
const DEVICE: u64 = 1 << 11;
pub const NO_EXECUTE: u64 = 1 << 63;
/// The frame address bits of an entry: 12..52 (below, flags; above, NX).
const ADDRESS_MASK: u64 = 0x000f_ffff_ffff_ffff & !(PAGE_SIZE - 1);
/// Flags of a user leaf that describe access rights: all a caller may set.
pub const ACCESS_FLAGS: u64 = PRESENT | WRITABLE | USER | NO_EXECUTE | COPY_ON_WRITE | SHARED_PAGE;
/// What [`PageTable::translate`] reports: the access flags and whether the
/// page is device memory.
const REPORTED_FLAGS: u64 = ACCESS_FLAGS | DEVICE;

/// Whether translated `flags` describe device memory.
pub fn is_device(flags: u64) -> bool {
    flags & DEVICE != 0
}

// ---- raw entries ----

fn entry_ptr(table_pa: u64, index: usize) -> *mut u64 {
    (phys_to_virt(table_pa) + index as u64 * 8) as *mut u64
}

/// # Safety
/// `table_pa` is a page-table frame reached from a root this module owns.
unsafe fn read_entry(table_pa: u64, index: usize) -> u64 {
    // SAFETY: the caller's promise; the kernel lock (or boot, with one
    // CPU) serialises writers.
    unsafe { entry_ptr(table_pa, index).read_volatile() }
}

/// # Safety
/// As [`read_entry`], and the new value keeps the tables well-formed.
unsafe fn write_entry(table_pa: u64, index: usize, value: u64) {
    // SAFETY: the caller's promise.
    unsafe { entry_ptr(table_pa, index).write_volatile(value) }
}

fn index(va: u64, level: u32) -> usize {
    ((va >> (PAGE_SHIFT + INDEX_BITS * level)) & (ENTRIES_PER_TABLE as u64 - 1)) as usize
}

/// Whether EFER.NXE is on (the CPU has the no-execute bit). Without it bit
/// 63 of an entry is reserved, so it must never be set.
static NX_SUPPORTED: AtomicBool = AtomicBool::new(false);

fn entry_flags(flags: u64) -> u64 {
    if NX_SUPPORTED.load(Ordering::Relaxed) { flags } else { flags & !NO_EXECUTE }
}

/// Why a mapping could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    AlreadyMapped,
    OutOfMemory,
    /// Not a page-aligned user address.
    BadAddress,
}

/// Next-level table of `entry`, creating it if absent. Intermediate
/// entries are permissive (the leaf decides access); user-half ones carry
/// USER so user leaves are reachable.
///
/// # Safety
/// `table_pa` is a table of a hierarchy this module owns.
unsafe fn next_table(
    table_pa: u64,
    idx: usize,
    user: bool,
    alloc: &mut dyn FnMut() -> Option<u64>,
) -> Result<u64, MapError> {
    // SAFETY: the caller's promise.
    let e = unsafe { read_entry(table_pa, idx) };
    if e & PRESENT != 0 {
        if e & HUGE != 0 {
            return Err(MapError::AlreadyMapped);
        }
        return Ok(e & ADDRESS_MASK);
    }
    let frame = alloc().ok_or(MapError::OutOfMemory)?;
    // SAFETY: a fresh zeroed table frame joins the hierarchy.
    unsafe { write_entry(table_pa, idx, frame | PRESENT | WRITABLE | if user { USER } else { 0 }) };
    Ok(frame)
}

/// A zeroed frame for a table, owned by the hierarchy from now on.
fn table_frame() -> Option<u64> {
    Frame::alloc().map(Frame::into_entry)
}

/// As [`table_frame`], from `pool`.
fn table_frame_in(pool: Pool) -> Option<u64> {
    Frame::alloc_in(pool).map(Frame::into_entry)
}

/// The 4 KiB leaf slot for `va`, if every table down to it exists.
///
/// # Safety
/// `root` is a root this module owns.
unsafe fn leaf_slot(root: u64, va: u64) -> Option<(u64, usize)> {
    let mut table = root;
    for level in (1..4).rev() {
        // SAFETY: walking down from the caller's root.
        let e = unsafe { read_entry(table, index(va, level)) };
        if e & PRESENT == 0 || e & HUGE != 0 {
            return None;
        }
        table = e & ADDRESS_MASK;
    }
    Some((table, index(va, 0)))
}

/// Translate `va` under `root`: the physical address and the leaf's
/// access flags.
///
/// # Safety
/// `root` is a root this module owns.
unsafe fn translate_in(root: u64, va: u64) -> Option<(u64, u64)> {
    let mut table = root;
    for level in (1..4).rev() {
        // SAFETY: walking down from the caller's root.
        let e = unsafe { read_entry(table, index(va, level)) };
        if e & PRESENT == 0 {
            return None;
        }
        if e & HUGE != 0 {
            let size = 1u64 << (PAGE_SHIFT + INDEX_BITS * level);
            return Some(((e & ADDRESS_MASK & !(size - 1)) + (va & (size - 1)), e & REPORTED_FLAGS));
        }
        table = e & ADDRESS_MASK;
    }
    // SAFETY: as above.
    let e = unsafe { read_entry(table, index(va, 0)) };
    (e & PRESENT != 0).then(|| ((e & ADDRESS_MASK) + (va & (PAGE_SIZE - 1)), e & REPORTED_FLAGS))
}

// ---- the kernel's tables ----

static KERNEL_ROOT: spin::Once<u64> = spin::Once::new();

/// Build the kernel's page tables (every kernel-half PML4 slot, so copying
/// them shares the kernel half for good; the direct map of all RAM and at
/// least the low 4 GiB; the kernel image section by section), switch to
/// them and start using the direct map. Once, at boot, by boot.rs.
pub(super) fn init_kernel_tables(ram_end: u64, image: &KernelImage) {
    NX_SUPPORTED.store(super::cpu::has_nx(), Ordering::Relaxed);
    let mut alloc = || Frame::alloc_below_4g().map(Frame::into_entry);
    let root = alloc().expect("a frame for the kernel root");
    for slot in KERNEL_PML4_FIRST..ENTRIES_PER_TABLE {
        // SAFETY: `root` is the fresh kernel root.
        unsafe { next_table(root, slot, false, &mut alloc) }.expect("kernel PML4 slots");
    }
    // The top 32 MiB below 4 GiB hold the APICs and firmware: uncached.
    let direct_end = ram_end.max(1 << 32).div_ceil(HUGE_PAGE_BYTES) * HUGE_PAGE_BYTES;
    let mut pa = 0;
    while pa < direct_end {
        let mmio = (0xfe00_0000..0x1_0000_0000).contains(&pa);
        let cache = if mmio { CACHE_DISABLE | WRITE_THROUGH } else { 0 };
        let flags = entry_flags(WRITABLE | GLOBAL | NO_EXECUTE | cache);
        let va = DIRECT_MAP_BASE + pa;
        let mut table = root;
        for level in (2..4).rev() {
            // SAFETY: building the kernel's own tables.
            table = unsafe { next_table(table, index(va, level), false, &mut alloc) }.expect("direct map");
        }
        // SAFETY: as above; each 2 MiB slot is written once.
        unsafe { write_entry(table, index(va, 1), (pa & ADDRESS_MASK) | flags | PRESENT | HUGE) };
        pa += HUGE_PAGE_BYTES;
    }
    let mut va = image.virt_start;
    while va < image.virt_end {
        let flags = if va < image.text_end {
            GLOBAL
        } else if va < image.rodata_end {
            GLOBAL | NO_EXECUTE
        } else {
            GLOBAL | NO_EXECUTE | WRITABLE
        };
        if !percpu::is_stack_guard_page(va) {
            let mut table = root;
            for level in (1..4).rev() {
                // SAFETY: building the kernel's own tables.
                table = unsafe { next_table(table, index(va, level), false, &mut alloc) }
                    .expect("kernel image map");
            }
            // SAFETY: as above; each page written once.
            unsafe {
                write_entry(
                    table,
                    index(va, 0),
                    ((va - KERNEL_VMA) & ADDRESS_MASK) | entry_flags(flags) | PRESENT,
                )
            };
        }
        va += PAGE_SIZE;
    }
    KERNEL_ROOT.call_once(|| root);
    // SAFETY: `root` maps the kernel image at its link address and the
    // direct map, so execution and the stack continue. (No CPU record is
    // installed yet: the kernel root is never freed, so it need not be
    // recorded as loaded.)
    unsafe { super::cpu::write_cr3(root) };
    use_direct_map();
}

/// The kernel's own root (no user half); its physical address.
pub fn kernel_root() -> u64 {
    *KERNEL_ROOT.get().expect("kernel tables built")
}

unsafe extern "C" {
    /// The boot page tables' root (boot.rs's assembly).
    static boot_pml4: u8;
}

/// Physical address of the boot page tables' root (its slot 0
/// identity-maps the first GiB).
fn boot_pml4_phys() -> u64 {
    // SAFETY: only the address is taken; .boot is linked at its physical address.
    (&raw const boot_pml4) as u64
}

/// Lend the boot identity map of the first GiB to starting CPUs (slot 0 of
/// the kernel root), or take it back (`lend == false`). For smp.rs.
pub(super) fn lend_identity_map(lend: bool) {
    let value = if lend {
        // SAFETY: the boot root is arch's own, in .boot.data.
        unsafe { read_entry(boot_pml4_phys(), 0) }
    } else {
        0
    };
    // SAFETY: slot 0 of the kernel root is in the user half, which the
    // kernel root never uses otherwise; the lent table maps only the
    // first GiB, identity, for the trampoline.
    unsafe { write_entry(kernel_root(), 0, value) };
    load_kernel_root();
}

/// Load the kernel's root on this CPU (an idle CPU dropping a process's).
pub fn load_kernel_root() {
    let root = kernel_root();
    // SAFETY: the kernel root maps the kernel half like every root.
    unsafe { super::cpu::write_cr3(root) };
    percpu::set_loaded_root(root);
    reap_retired_roots();
}

// ---- roots loaded on CPUs ----

/// Roots of dropped page tables still loaded on some CPU: freed when no CPU
/// has them any more. A CPU holds one root at a time, so at most
/// `MAX_CPUS` can wait here.
static RETIRED_ROOTS: Mutex<[u64; MAX_CPUS]> = Mutex::new([0; MAX_CPUS]);

fn is_loaded_anywhere(root: u64) -> bool {
    (0..MAX_CPUS).any(|c| percpu::loaded_root_of(c) == root)
}

/// Roots waiting in [`RETIRED_ROOTS`]: reaping costs one load when none do.
static RETIRED_COUNT: AtomicU64 = AtomicU64::new(0);

/// Free the retired roots no CPU has loaded any more (done on the way out
/// of the kernel's general paths; the call fast path leaves it to them).
#[inline(always)]
pub fn reap_retired_roots() {
    if RETIRED_COUNT.load(Ordering::Relaxed) != 0 {
        reap_retired_roots_now();
    }
}

#[inline(never)]
fn reap_retired_roots_now() {
    let mut retired = RETIRED_ROOTS.lock();
    for slot in retired.iter_mut() {
        if *slot != 0 && !is_loaded_anywhere(*slot) {
            // SAFETY: the root came from `Frame::into_entry` when its table
            // was made, and no CPU uses it any more.
            drop(unsafe { Frame::from_entry(*slot) });
            *slot = 0;
            RETIRED_COUNT.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Roots of dropped tables not yet freed (a CPU still has them loaded):
/// at most one per CPU. For the memory accounting (`proc_memory`).
pub fn retired_root_count() -> u64 {
    RETIRED_COUNT.load(Ordering::Relaxed)
}

/// Whether this CPU has the root of a dropped page table loaded.
pub fn holds_retired_root() -> bool {
    if RETIRED_COUNT.load(Ordering::Relaxed) == 0 {
        return false;
    }
    let here = percpu::loaded_root();
    RETIRED_ROOTS.lock().contains(&here)
}

// ---- a process's tables ----

/// Where the linker put the kernel image (kernel.ld); boot.rs reads it.
pub struct KernelImage {
    pub phys_start: u64,
    pub phys_end: u64,
    pub virt_start: u64,
    pub text_end: u64,
    pub rodata_end: u64,
    pub virt_end: u64,
}

/// The frames one [`PageTable`] holds, by kind ([`PageTable::usage`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Page-table frames, the root included.
    pub tables: u64,
    /// User pages whose frame has no other owner.
    pub private: u64,
    /// User pages whose frame has other owners (copy-on-write after a
    /// fork or a loan, a shared window): counted in every owner.
    pub shared: u64,
    /// Device memory (BARs): not RAM, never freed.
    pub device: u64,
    /// Of `private` and `shared`, the pages in the heap region
    /// (`abi::layout::USER_HEAP_BASE`, `USER_HEAP_MAX_BYTES`).
    pub heap: u64,
}

/// A user copy failed: the address is not mapped for the access asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault;

/// A process's page tables: the user half its own, the kernel half shared
/// with every other root. Owns every frame it maps.
pub struct PageTable {
    root: u64,
    /// Where the frames this table takes come from: its tables, and the
    /// copies that break copy-on-write.
    pool: Pool,
}

impl PageTable {
    /// Empty user half, the kernel half of the kernel's root; its frames
    /// come from `pool`.
    pub fn new(pool: Pool) -> Option<PageTable> {
        let root = Frame::alloc_below_4g_in(pool)?.into_entry();
        let kernel = kernel_root();
        for slot in KERNEL_PML4_FIRST..ENTRIES_PER_TABLE {
            // SAFETY: both roots are this module's; the kernel half is
            // copied as it is, so the new root maps the kernel identically.
            unsafe { write_entry(root, slot, read_entry(kernel, slot)) };
        }
        Some(PageTable { root, pool })
    }

    /// Where this table's frames come from.
    pub fn pool(&self) -> Pool {
        self.pool
    }

    /// Take this table's frames from `pool` from now on.
    pub fn set_pool(&mut self, pool: Pool) {
        self.pool = pool;
    }

    /// The root's physical address: for comparisons (which root a CPU has
    /// loaded), never for access.
    pub fn root_pa(&self) -> u64 {
        self.root
    }

    /// Count the frames these tables hold, by kind (a walk of the user
    /// half; nothing changes). For the soak's accounting of memory.
    pub fn usage(&self) -> Usage {
        use abi::layout::{USER_HEAP_BASE, USER_HEAP_MAX_BYTES};
        let mut usage = Usage::default();
        let tables_below_root = for_each_user_leaf(self.root, &mut |va, e| {
            if e & DEVICE != 0 {
                usage.device += 1;
                return e;
            }
            if frames::owners(e & ADDRESS_MASK) > 1 {
                usage.shared += 1;
            } else {
                usage.private += 1;
            }
            if (USER_HEAP_BASE..USER_HEAP_BASE + USER_HEAP_MAX_BYTES).contains(&va) {
                usage.heap += 1;
            }
            e
        });
        usage.tables = 1 + tables_below_root;
        usage
    }

    /// Load these tables on this CPU (a TLB flush of its user entries).
    #[inline(always)]
    pub fn activate(&self) {
        // SAFETY: the root was built by `new`, so it maps the kernel half
        // exactly as every other root does, and it stays allocated while
        // loaded: it is recorded as this CPU's before anything can drop
        // the table (which needs the table itself, borrowed here), and
        // `drop` keeps a recorded root.
        unsafe { super::cpu::write_cr3(self.root) };
        percpu::set_loaded_root(self.root);
    }

    /// The physical address and access flags of user address `va`.
    pub fn translate(&self, va: u64) -> Option<(u64, u64)> {
        if va >= USER_END {
            return None;
        }
        // SAFETY: our own root.
        unsafe { translate_in(self.root, va) }
    }

    fn check_user_page(va: u64) -> Result<(), MapError> {
        if va >= USER_END || !va.is_multiple_of(PAGE_SIZE) {
            return Err(MapError::BadAddress);
        }
        Ok(())
    }

    /// Map `frame` at user page `va` with `flags` (access flags only;
    /// `USER` and `PRESENT` are added). On failure the frame comes back.
    pub fn map(&mut self, va: u64, frame: Frame, flags: u64) -> Result<(), (MapError, Frame)> {
        if let Err(e) = Self::check_user_page(va) {
            return Err((e, frame));
        }
        let flags = entry_flags((flags & ACCESS_FLAGS) | USER | PRESENT);
        let mut table = self.root;
        let pool = self.pool;
        for level in (1..4).rev() {
            // SAFETY: our own root; table frames are owned by the hierarchy.
            match unsafe { next_table(table, index(va, level), true, &mut || table_frame_in(pool)) } {
                Ok(next) => table = next,
                Err(e) => return Err((e, frame)),
            }
        }
        let i = index(va, 0);
        // SAFETY: as above.
        if unsafe { read_entry(table, i) } & PRESENT != 0 {
            return Err((MapError::AlreadyMapped, frame));
        }
        let pa = frame.into_entry();
        // SAFETY: the entry takes over the frame's ownership.
        unsafe { write_entry(table, i, pa | flags) };
        invalidate(va);
        Ok(())
    }

    /// Map device memory (a BAR) at user page `va`: physical page `pa`,
    /// uncached, with `flags` (WRITABLE, NO_EXECUTE). Refused for any
    /// address that is RAM, so a driver can never reach the kernel's or
    /// another process's memory this way (DMA is another matter:
    /// docs/devices.md).
    pub fn map_device(&mut self, va: u64, pa: u64, flags: u64) -> Result<(), MapError> {
        Self::check_user_page(va)?;
        if !pa.is_multiple_of(PAGE_SIZE)
            || pa & !ADDRESS_MASK != 0
            || frames::overlaps_managed_ram(pa, PAGE_SIZE)
        {
            return Err(MapError::BadAddress);
        }
        let flags = entry_flags(
            (flags & (WRITABLE | NO_EXECUTE)) | USER | PRESENT | DEVICE | CACHE_DISABLE | WRITE_THROUGH,
        );
        let mut table = self.root;
        for level in (1..4).rev() {
            // SAFETY: our own root; table frames are owned by the hierarchy.
            table = unsafe { next_table(table, index(va, level), true, &mut table_frame) }?;
        }
        let i = index(va, 0);
        // SAFETY: as above.
        if unsafe { read_entry(table, i) } & PRESENT != 0 {
            return Err(MapError::AlreadyMapped);
        }
        // SAFETY: the entry names device memory, not a frame; the DEVICE
        // bit keeps every other path from treating it as one.
        unsafe { write_entry(table, i, pa | flags) };
        invalidate(va);
        Ok(())
    }

    /// Take back device memory mapped at `va` by [`PageTable::map_device`]
    /// (nothing else: a frame stays).
    pub fn unmap_device(&mut self, va: u64) {
        // SAFETY: our own root.
        if let Some((table, i)) = unsafe { leaf_slot(self.root, va) }
            // SAFETY: as above.
            && unsafe { read_entry(table, i) } & DEVICE != 0
        {
            // SAFETY: a device entry owns no frame.
            unsafe { write_entry(table, i, 0) };
            invalidate(va);
        }
    }

    /// Take back the frame mapped at `va` (device memory stays).
    pub fn unmap(&mut self, va: u64) -> Option<Frame> {
        // SAFETY: our own root.
        let (table, i) = unsafe { leaf_slot(self.root, va) }?;
        // SAFETY: as above.
        let e = unsafe { read_entry(table, i) };
        if e & PRESENT == 0 || e & DEVICE != 0 {
            return None;
        }
        // SAFETY: the entry gives up its frame, which comes back.
        unsafe { write_entry(table, i, 0) };
        invalidate(va);
        // SAFETY: the entry held this frame.
        Some(unsafe { Frame::from_entry(e & ADDRESS_MASK) })
    }

    /// Map `frame` at `va` like [`PageTable::map`], replacing what was
    /// there; returns the frame it replaced (or, on failure, `frame`).
    pub fn replace(&mut self, va: u64, frame: Frame, flags: u64) -> Result<Option<Frame>, (MapError, Frame)> {
        if let Err(e) = Self::check_user_page(va) {
            return Err((e, frame));
        }
        // SAFETY: our own root.
        match unsafe { leaf_slot(self.root, va) } {
            // SAFETY: as above.
            Some((table, i)) if unsafe { read_entry(table, i) } & PRESENT != 0 => {
                // SAFETY: as above.
                let old = unsafe { read_entry(table, i) };
                if old & DEVICE != 0 {
                    return Err((MapError::AlreadyMapped, frame));
                }
                let flags = entry_flags((flags & ACCESS_FLAGS) | USER | PRESENT);
                // SAFETY: the entry takes over the new frame and gives up
                // the old one, which comes back as a `Frame`.
                unsafe { write_entry(table, i, frame.into_entry() | flags) };
                invalidate(va);
                // SAFETY: the old entry held this frame.
                Ok(Some(unsafe { Frame::from_entry(old & ADDRESS_MASK) }))
            }
            _ => self.map(va, frame, flags).map(|()| None),
        }
    }

    /// Change the access flags of the page mapped at `va`, keeping its
    /// frame. False when nothing is mapped there.
    pub fn set_flags(&mut self, va: u64, flags: u64) -> bool {
        if Self::check_user_page(va).is_err() {
            return false;
        }
        // SAFETY: our own root.
        let Some((table, i)) = (unsafe { leaf_slot(self.root, va) }) else { return false };
        // SAFETY: as above.
        let e = unsafe { read_entry(table, i) };
        if e & PRESENT == 0 {
            return false;
        }
        let flags = entry_flags((flags & ACCESS_FLAGS) | USER | PRESENT);
        // SAFETY: same frame (or device memory, still marked so), new rights.
        unsafe {
            write_entry(table, i, (e & (ADDRESS_MASK | DEVICE | CACHE_DISABLE | WRITE_THROUGH)) | flags)
        };
        invalidate(va);
        true
    }

    /// Another owner of the frame mapped at `va`, and its flags.
    pub fn frame_at(&self, va: u64) -> Option<(Frame, u64)> {
        let (pa, flags) = self.translate(va & !(PAGE_SIZE - 1))?;
        if is_device(flags) {
            return None;
        }
        // SAFETY: a present leaf of our own tables holds this frame.
        Some((unsafe { Frame::share_entry(pa) }, flags))
    }

    /// How many owners the frame mapped at user page `va` has (1 when this
    /// mapping is its only one); `None` if no user frame is mapped there
    /// (device memory included). Nothing changes.
    pub fn owners_at(&self, va: u64) -> Option<u32> {
        let (pa, flags) = self.translate(va & !(PAGE_SIZE - 1))?;
        if is_device(flags) || flags & USER == 0 {
            return None;
        }
        Some(frames::owners(pa))
    }

    /// Give this table the page at `va` for itself with access `flags`: a
    /// frame shared with other owners is replaced by a private copy, a
    /// frame it alone holds keeps its place and gets the new flags (the
    /// break of copy-on-write; which pages are copy-on-write is
    /// memory.rs's policy). One walk and one look at the share count.
    pub fn make_private(&mut self, va: u64, flags: u64) -> Result<(), MapError> {
        Self::check_user_page(va)?;
        // SAFETY: our own root.
        let (table, i) = unsafe { leaf_slot(self.root, va) }.ok_or(MapError::BadAddress)?;
        // SAFETY: as above.
        let e = unsafe { read_entry(table, i) };
        if e & PRESENT == 0 || e & DEVICE != 0 {
            return Err(MapError::BadAddress);
        }
        let pa = e & ADDRESS_MASK;
        let flags = entry_flags((flags & ACCESS_FLAGS) | USER | PRESENT);
        if frames::owners(pa) == 1 {
            // SAFETY: same frame, new rights.
            unsafe { write_entry(table, i, pa | flags) };
        } else {
            let copy = {
                // SAFETY: the entry holds `pa`; this handle is dropped
                // without freeing (ManuallyDrop) after the copy.
                let original = core::mem::ManuallyDrop::new(unsafe { Frame::from_entry(pa) });
                Frame::alloc_copy_of(&original, self.pool).ok_or(MapError::OutOfMemory)?
            };
            // SAFETY: the entry takes the copy and gives up its reference
            // to the shared frame, dropped here.
            unsafe { write_entry(table, i, copy.into_entry() | flags) };
            // SAFETY: the old entry held this reference.
            drop(unsafe { Frame::from_entry(pa) });
        }
        invalidate(va);
        Ok(())
    }

    /// Map every page of this table into the empty `dst` at the same
    /// address, as in `fork`: `rights(flags)` gives the new flags of both
    /// sides. Returns the pages shared; stops at the first failure.
    pub fn share_all_into(
        &mut self,
        dst: &mut PageTable,
        rights: impl Fn(u64) -> u64,
    ) -> Result<u64, MapError> {
        let mut pages = 0u64;
        let mut failed = None;
        let root = self.root;
        for_each_user_leaf(root, &mut |va, e| {
            // Device memory stays with its driver; a shared window stays
            // shared and writable on both sides (MAP_SHARED across fork).
            if failed.is_some() || e & DEVICE != 0 {
                return e;
            }
            let new_flags = if e & SHARED_PAGE != 0 { e & ACCESS_FLAGS } else { rights(e & ACCESS_FLAGS) };
            // SAFETY: `e` is a present leaf of our tables: it holds a frame.
            let frame = unsafe { Frame::share_entry(e & ADDRESS_MASK) };
            match dst.map(va, frame, new_flags) {
                Ok(()) => {
                    pages += 1;
                    (e & ADDRESS_MASK) | entry_flags((new_flags & ACCESS_FLAGS) | USER | PRESENT)
                }
                Err((err, _)) => {
                    failed = Some(err);
                    e
                }
            }
        });
        match failed {
            Some(e) => Err(e),
            None => Ok(pages),
        }
    }

    /// The frame of user page `page` (page-aligned) if it may be copied
    /// through: present, user, RAM (not device memory), and writable in
    /// hardware when `need_write` (copy-on-write pages are made private
    /// first, memory.rs). The one per-page check of every copy below.
    #[inline(always)]
    fn user_page(&self, page: u64, need_write: bool) -> Result<u64, Fault> {
        let (pa, flags) = self.translate(page).ok_or(Fault)?;
        if flags & USER == 0 || is_device(flags) || (need_write && flags & WRITABLE == 0) {
            return Err(Fault);
        }
        Ok(pa)
    }

    /// Walk `va..va + len` page by page, checking each page is a present
    /// user page (writable in hardware too when `need_write`): the
    /// physical piece of each page in order, or the first failure.
    fn pieces(
        &self,
        va: u64,
        len: u64,
        need_write: bool,
        mut visit: impl FnMut(u64, usize, usize),
    ) -> Result<(), Fault> {
        let end = va.checked_add(len).ok_or(Fault)?;
        if end > USER_END {
            return Err(Fault);
        }
        let mut done = 0u64;
        while done < len {
            let at = va + done;
            let pa = self.user_page(at & !(PAGE_SIZE - 1), need_write)? + at % PAGE_SIZE;
            let n = (PAGE_SIZE - at % PAGE_SIZE).min(len - done);
            visit(pa, done as usize, n as usize);
            done += n;
        }
        Ok(())
    }

    /// Copy user memory at `va` into `dst`, page by page; a fault stops the
    /// copy (the part before it is copied).
    pub fn read(&self, va: u64, dst: &mut [u8]) -> Result<(), Fault> {
        self.pieces(va, dst.len() as u64, false, |pa, at, n| {
            // SAFETY: `pa..pa + n` lies in one present user page of these
            // tables, a frame they own (RAM no kernel object uses); `dst`
            // is kernel memory. Copied as bytes: a user thread may be
            // writing them.
            unsafe {
                core::ptr::copy_nonoverlapping(phys_to_virt(pa) as *const u8, dst[at..at + n].as_mut_ptr(), n)
            }
        })
    }

    /// Copy `src` to user memory at `va`, which must be writable in
    /// hardware (copy-on-write pages made private first, memory.rs), page
    /// by page; a fault stops the copy, the part before it written. Callers
    /// that must write all or nothing check the range first (usermem.rs).
    pub fn write(&mut self, va: u64, src: &[u8]) -> Result<(), Fault> {
        self.pieces(va, src.len() as u64, true, |pa, at, n| {
            // SAFETY: as in `read`; the page is writable, so no other table
            // maps its frame, or, for a SHARED_PAGE window, every table
            // that does treats it as plain bytes too.
            unsafe {
                core::ptr::copy_nonoverlapping(src[at..at + n].as_ptr(), phys_to_virt(pa) as *mut u8, n)
            }
        })
    }

    /// Fill a page this table maps at `va` (any access rights: a new
    /// program's read-only text) with `src` at `offset` in it.
    pub fn fill(&mut self, va: u64, offset: usize, src: &[u8]) -> Result<(), Fault> {
        if offset + src.len() > PAGE_SIZE as usize {
            return Err(Fault);
        }
        let (pa, flags) = self.translate(va & !(PAGE_SIZE - 1)).ok_or(Fault)?;
        if flags & USER == 0 || flags & COPY_ON_WRITE != 0 || is_device(flags) {
            return Err(Fault);
        }
        // SAFETY: a frame these tables own and do not share (not
        // copy-on-write), reached through the direct map.
        unsafe {
            core::ptr::copy_nonoverlapping(
                src.as_ptr(),
                (phys_to_virt(pa) + offset as u64) as *mut u8,
                src.len(),
            )
        };
        Ok(())
    }

    /// The kernel's one copy between two address spaces: the pieces
    /// `(src_va, dst_va, len)` in turn (one piece for a plain copy; a
    /// gather or scatter list for `abi::lease::SEGMENTS`), page piece by
    /// page piece, frame to frame through the direct map, no bounce
    /// buffer, as `mode` says.
    ///
    /// Each page of either side is looked up (and checked: present, user,
    /// RAM, the destination writable in hardware) once for as many pieces
    /// as lie in it, not once per piece: a server's 8 KiB read of 1 KiB
    /// blocks is eight pieces into two or three pages of the caller, and
    /// the walks of the caller's table per piece were most of the kernel's
    /// share of it (`cargo xtask profile`, docs/filesystem.md); a single
    /// copy whose two sides sit at different offsets within a page walks
    /// each page once, not once per piece of it. Nothing changes a table
    /// during the copy (the kernel lock is held and nothing here maps or
    /// unmaps), so a page looked up stays valid for the whole list.
    ///
    /// A fault stops the copy, the part before it done: callers that must
    /// move all or nothing check every piece first (usermem.rs). A piece
    /// of length 0 looks at no page (its addresses may be anything, as an
    /// empty Rust slice's may).
    pub fn copy_pieces(
        src: &PageTable,
        dst: &mut PageTable,
        pieces: impl Iterator<Item = (u64, u64, u64)>,
        mode: CopyMode,
    ) -> Result<(), Fault> {
        // The last page found on each side: (page address, its frame).
        let mut src_page: Option<(u64, u64)> = None;
        let mut dst_page: Option<(u64, u64)> = None;
        for (src_va, dst_va, len) in pieces {
            let (src_end, dst_end) =
                (src_va.checked_add(len).ok_or(Fault)?, dst_va.checked_add(len).ok_or(Fault)?);
            if src_end > USER_END || dst_end > USER_END {
                return Err(Fault);
            }
            let mut done = 0;
            while done < len {
                let (s, d) = (src_va + done, dst_va + done);
                let (s_page, d_page) = (s & !(PAGE_SIZE - 1), d & !(PAGE_SIZE - 1));
                let spa = match src_page {
                    Some((va, pa)) if va == s_page => pa,
                    _ => {
                        let pa = src.user_page(s_page, false)?;
                        src_page = Some((s_page, pa));
                        pa
                    }
                };
                let dpa = match dst_page {
                    Some((va, pa)) if va == d_page => pa,
                    _ => {
                        let pa = dst.user_page(d_page, true)?;
                        dst_page = Some((d_page, pa));
                        pa
                    }
                };
                let n = (PAGE_SIZE - s % PAGE_SIZE).min(PAGE_SIZE - d % PAGE_SIZE).min(len - done);
                // Both pieces lie in user pages of the two tables (checked
                // when their page was found), frames of RAM they own; the
                // destination is writable, so private or a shared window
                // (plain bytes to every holder).
                let from = phys_to_virt(spa + s % PAGE_SIZE) as *const u8;
                let to = phys_to_virt(dpa + d % PAGE_SIZE) as *mut u8;
                match mode {
                    // SAFETY: the pieces above; `copy` allows overlap (two
                    // tables may share the source frame).
                    CopyMode::Bulk => unsafe { core::ptr::copy(from, to, n as usize) },
                    CopyMode::ByteAtATime => {
                        for i in 0..n as usize {
                            // SAFETY: byte `i` of the two pieces above;
                            // volatile so the loop stays a byte loop.
                            unsafe { to.add(i).write_volatile(from.add(i).read_volatile()) };
                        }
                    }
                }
                done += n;
            }
        }
        Ok(())
    }
}

/// How [`PageTable::copy_pieces`] moves each page piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyMode {
    /// One `core::ptr::copy` (a string move) per page piece.
    Bulk,
    /// One byte at a time (a load and a store per byte, never merged),
    /// each page piece through its own window: DEC PDDRIVER's copy (seed
    /// 000), for the RAM disk's `pddriver` mode (`abi::lease::BYTE_AT_A_TIME`,
    /// docs/devices.md).
    ByteAtATime,
}

impl Drop for PageTable {
    /// Free every frame of the user half and every table below the root.
    /// The root goes back to the allocator once no CPU has it loaded: an
    /// idle CPU keeps the last root in CR3, and the kernel half it walks
    /// there must stay intact until it loads another.
    fn drop(&mut self) {
        free_user_half(self.root);
        reap_retired_roots();
        let mut retired = RETIRED_ROOTS.lock();
        if is_loaded_anywhere(self.root)
            && let Some(slot) = retired.iter_mut().find(|s| **s == 0)
        {
            *slot = self.root;
            RETIRED_COUNT.fetch_add(1, Ordering::Relaxed);
            return;
        }
        drop(retired);
        // SAFETY: the root came from `Frame::into_entry` in `new`, and no
        // CPU has it loaded (a root loaded on more CPUs than there are
        // retirement slots cannot happen: each CPU holds one root).
        drop(unsafe { Frame::from_entry(self.root) });
    }
}

/// Drop the TLB entry for `va` on this CPU (other CPUs reload their root
/// before running the process again: memory.rs's `tlb_epoch`).
fn invalidate(va: u64) {
    super::cpu::invlpg(va);
}

/// Call `visit(va, entry)` for every present 4 KiB leaf of the user half
/// of `root`, in address order; `visit` returns the entry to store back.
/// Returns how many page tables below the root the walk went through (for
/// [`PageTable::usage`]).
fn for_each_user_leaf(root: u64, visit: &mut dyn FnMut(u64, u64) -> u64) -> u64 {
    fn walk(table: u64, level: u32, va_base: u64, visit: &mut dyn FnMut(u64, u64) -> u64, tables: &mut u64) {
        *tables += 1;
        for i in 0..ENTRIES_PER_TABLE {
            // SAFETY: a table of the caller's hierarchy.
            let e = unsafe { read_entry(table, i) };
            if e & PRESENT == 0 {
                continue;
            }
            let va = va_base | ((i as u64) << (PAGE_SHIFT + INDEX_BITS * level));
            if level > 0 {
                if e & HUGE == 0 {
                    walk(e & ADDRESS_MASK, level - 1, va, visit, tables);
                }
            } else {
                let new = visit(va, e);
                if new != e {
                    // SAFETY: `visit` keeps the same frame, new rights.
                    unsafe { write_entry(table, i, new) };
                }
            }
        }
    }
    let mut tables = 0;
    for slot in 0..KERNEL_PML4_FIRST {
        // SAFETY: `root` is a root of this module.
        let e = unsafe { read_entry(root, slot) };
        if e & PRESENT != 0 {
            walk(e & ADDRESS_MASK, 2, (slot as u64) << 39, visit, &mut tables);
        }
    }
    tables
}

/// Free every frame the user half of `root` maps and every table below it.
fn free_user_half(root: u64) {
    fn walk(table: u64, level: u32) {
        for i in 0..ENTRIES_PER_TABLE {
            // SAFETY: a table of the hierarchy being freed.
            let e = unsafe { read_entry(table, i) };
            if e & PRESENT == 0 {
                continue;
            }
            let pa = e & ADDRESS_MASK;
            if level > 0 {
                walk(pa, level - 1);
            } else if e & DEVICE != 0 {
                continue; // device memory: nothing to free
            }
            // SAFETY: the entry held this frame (a table or a user page).
            drop(unsafe { Frame::from_entry(pa) });
        }
    }
    for slot in 0..KERNEL_PML4_FIRST {
        // SAFETY: `root` is a root of this module being dropped.
        let e = unsafe { read_entry(root, slot) };
        if e & PRESENT != 0 {
            walk(e & ADDRESS_MASK, 2);
            // SAFETY: as above, for the third-level table itself.
            drop(unsafe { Frame::from_entry(e & ADDRESS_MASK) });
            // SAFETY: clearing an entry of the root being dropped.
            unsafe { write_entry(root, slot, 0) };
        }
    }
}

/// Whether firmware memory `pa..pa + len` may be read: below 4 GiB and
/// never RAM the frame allocator manages (so nothing in the kernel writes
/// it). For firmware.rs.
pub(super) fn is_firmware_memory(pa: u64, len: u64) -> bool {
    pa.checked_add(len).is_some_and(|end| end <= 1 << 32) && !frames::overlaps_managed_ram(pa, len)
}

/// The range the kernel image occupies physically.
pub(super) fn image_range(image: &KernelImage) -> PhysRange {
    PhysRange::new(image.phys_start, image.phys_end)
}
