//! Per-CPU data, found through the GS base while in the kernel.
//!
//! Each CPU has one kernel stack (the kernel is event-driven: it never
//! blocks inside, so it needs no stack per process — seL4 and Ridge work
//! the same way), a small emergency stack for double faults and NMIs, its
//! own GDT and TSS, and a [`PerCpu`] record whose first two words the
//! `syscall` entry code reads at fixed offsets.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use kernel_core::limits::{EMERGENCY_STACK_BYTES, KERNEL_STACK_BYTES, MAX_CPUS};

/// A stack, page-aligned so that its lowest page can be left unmapped as
/// its guard ([`is_stack_guard_page`]). (`align` takes only a literal; the
/// assertion below ties it to the page size.)
#[repr(C, align(4096))]
pub struct Stack<const N: usize>(pub [u8; N]);
const _: () = assert!(core::mem::align_of::<Stack<0>>() as u64 == abi::layout::PAGE_SIZE);

/// CPU `i`'s kernel stack. CPU 0 boots on it (see boot.rs).
pub static mut BOOT_STACK: [Stack<KERNEL_STACK_BYTES>; MAX_CPUS] =
    [const { Stack([0; KERNEL_STACK_BYTES]) }; MAX_CPUS];
static mut EMERGENCY_STACKS: [Stack<EMERGENCY_STACK_BYTES>; MAX_CPUS] =
    [const { Stack([0; EMERGENCY_STACK_BYTES]) }; MAX_CPUS];

/// Offsets read by the `syscall` entry code (trap.rs).
pub const OFFSET_KERNEL_STACK_TOP: usize = core::mem::offset_of!(PerCpu, kernel_stack_top);
pub const OFFSET_SAVE_AREA_END: usize = core::mem::offset_of!(PerCpu, save_area_end);
const OFFSET_INDEX: usize = core::mem::offset_of!(PerCpu, index);
pub(super) const OFFSET_LOADED_ROOT: usize = core::mem::offset_of!(PerCpu, loaded_root);
const _: () = assert!(OFFSET_INDEX == 16, "current_cpu reads gs:[16]");

#[repr(C)]
pub struct PerCpu {
    /// Top of this CPU's kernel stack (also TSS.rsp0).
    pub kernel_stack_top: u64,
    /// Unused (the `syscall` entry keeps the user's stack pointer in
    /// `save_area_end` for a moment instead); keeps `index` at 16.
    pub reserved: u64,
    /// This CPU's index (0 = the boot CPU).
    pub index: u64,
    /// End of the `rsp` field of the register frame this CPU last left
    /// the kernel through: the saved-register slot of the process it runs,
    /// in the process table. The `syscall` entry pushes the caller's
    /// registers down from here (trap.rs), so they land in the process
    /// table with no copy. From that entry to the exit, the user's stack
    /// pointer.
    pub save_area_end: u64,
    /// Local APIC id.
    pub apic_id: AtomicU32,
    /// The page-table root this CPU has in CR3 (paging.rs keeps it, so a
    /// root is never freed while loaded somewhere).
    pub loaded_root: AtomicU64,
}

pub static mut PER_CPU: [PerCpu; MAX_CPUS] = [const {
    PerCpu {
        kernel_stack_top: 0,
        reserved: 0,
        index: 0,
        save_area_end: 0,
        apic_id: AtomicU32::new(0),
        loaded_root: AtomicU64::new(0),
    }
}; MAX_CPUS];

pub fn kernel_stack_top(cpu: usize) -> u64 {
    // SAFETY: only the address of the static is taken.
    let base = unsafe { &raw const BOOT_STACK[cpu] } as u64;
    base + KERNEL_STACK_BYTES as u64
}

pub fn emergency_stack_top(cpu: usize) -> u64 {
    // SAFETY: only the address of the static is taken.
    let base = unsafe { &raw const EMERGENCY_STACKS[cpu] } as u64;
    base + EMERGENCY_STACK_BYTES as u64
}

/// Point GS at CPU `cpu`'s record. Called by that CPU's bring-up (mod.rs).
pub(super) fn install(cpu: usize, apic_id: u32) {
    // SAFETY: each CPU writes only its own record, before it is used, and
    // the record lives for ever (a static).
    unsafe {
        let rec = &raw mut PER_CPU[cpu];
        (*rec).kernel_stack_top = kernel_stack_top(cpu);
        (*rec).index = cpu as u64;
        (*rec).apic_id.store(apic_id, Ordering::Relaxed);
        super::cpu::wrmsr(super::cpu::MSR_GS_BASE, rec as u64);
        super::cpu::wrmsr(super::cpu::MSR_KERNEL_GS_BASE, 0);
    }
}

/// Index of the CPU this code runs on. Valid in the kernel after `install`.
pub fn current_cpu() -> usize {
    let index: u64;
    // SAFETY: GS points at this CPU's PerCpu record while in the kernel;
    // `index` is at offset 16 and never changes after install.
    unsafe {
        core::arch::asm!("mov {}, gs:[16]", out(reg) index, options(nostack, readonly, preserves_flags));
    }
    index as usize
}

/// Number of CPUs that finished bring-up.
pub static CPUS_ONLINE: AtomicU64 = AtomicU64::new(0);

pub fn cpus_online() -> usize {
    CPUS_ONLINE.load(Ordering::Acquire) as usize
}

pub fn apic_id_of(cpu: usize) -> u32 {
    // SAFETY: apic_id is atomic; reading another CPU's record is fine.
    unsafe { PER_CPU[cpu].apic_id.load(Ordering::Relaxed) }
}

/// Whether `va` is the lowest page of a kernel stack, left unmapped so that
/// a kernel stack overflow faults (and is reported from the emergency
/// stack) instead of silently corrupting the stack below.
pub fn is_stack_guard_page(va: u64) -> bool {
    let base = &raw const BOOT_STACK as u64;
    let end = base + (KERNEL_STACK_BYTES * MAX_CPUS) as u64;
    (base..end).contains(&va) && (va - base).is_multiple_of(KERNEL_STACK_BYTES as u64)
}

/// `current_cpu` for the panic path, which may run before GS is set up.
pub fn current_cpu_or_zero() -> usize {
    // SAFETY: reading the GS base MSR has no side effects.
    let gs = unsafe { super::cpu::rdmsr(super::cpu::MSR_GS_BASE) };
    if gs == 0 { 0 } else { current_cpu() }
}

/// Record the root this CPU just loaded in CR3 (one store, GS-relative:
/// the call fast path does it on every switch).
#[inline(always)]
pub(super) fn set_loaded_root(root: u64) {
    // SAFETY: GS points at this CPU's record while in the kernel; the
    // field is an AtomicU64 at that offset, and a plain aligned store is a
    // relaxed atomic store on x86-64.
    unsafe {
        core::arch::asm!("mov gs:[{off}], {root}", off = const OFFSET_LOADED_ROOT, root = in(reg) root,
            options(nostack, preserves_flags))
    }
}

/// The root this CPU has loaded.
pub fn loaded_root() -> u64 {
    let root: u64;
    // SAFETY: as in `set_loaded_root`, reading.
    unsafe {
        core::arch::asm!("mov {root}, gs:[{off}]", off = const OFFSET_LOADED_ROOT, root = out(reg) root,
            options(nostack, readonly, preserves_flags))
    }
    root
}

/// The root CPU `cpu` has loaded (0: none yet, or not online).
pub fn loaded_root_of(cpu: usize) -> u64 {
    // SAFETY: an atomic field; reading another CPU's record is fine.
    unsafe { PER_CPU[cpu].loaded_root.load(Ordering::Relaxed) }
}
