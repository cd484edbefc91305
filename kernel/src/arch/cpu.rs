//! Single instructions: port I/O, MSRs, control registers, TSC, halting.
//!
//! Each function is a thin wrapper whose safety contract is stated on it.

use core::arch::asm;

pub const MSR_EFER: u32 = 0xC000_0080;
pub const MSR_STAR: u32 = 0xC000_0081;
pub const MSR_LSTAR: u32 = 0xC000_0082;
pub const MSR_FMASK: u32 = 0xC000_0084;
pub const MSR_FS_BASE: u32 = 0xC000_0100;
pub const MSR_GS_BASE: u32 = 0xC000_0101;
pub const MSR_KERNEL_GS_BASE: u32 = 0xC000_0102;
pub const EFER_SCE: u64 = 1 << 0;
pub const EFER_NXE: u64 = 1 << 11;
pub const CR4_SMEP: u64 = 1 << 20;
pub const CR4_SMAP: u64 = 1 << 21;
pub const CR4_PGE: u64 = 1 << 7;

/// # Safety
/// Writing to an I/O port can reconfigure hardware; the caller owns the device.
pub unsafe fn outb(port: u16, value: u8) {
    // SAFETY: the caller guarantees the write is meaningful for the device.
    unsafe { asm!("out dx, al", in("dx") port, in("al") value, options(nomem, nostack, preserves_flags)) }
}

/// # Safety
/// Reading some ports has side effects; the caller owns the device.
pub unsafe fn inb(port: u16) -> u8 {
    let value: u8;
    // SAFETY: the caller guarantees the read is meaningful for the device.
    unsafe { asm!("in al, dx", in("dx") port, out("al") value, options(nomem, nostack, preserves_flags)) }
    value
}

/// # Safety
/// As [`outb`], 32 bits.
pub unsafe fn outl(port: u16, value: u32) {
    // SAFETY: the caller guarantees the write is meaningful for the device.
    unsafe { asm!("out dx, eax", in("dx") port, in("eax") value, options(nomem, nostack, preserves_flags)) }
}

/// # Safety
/// As [`inb`], 32 bits.
pub unsafe fn inl(port: u16) -> u32 {
    let value: u32;
    // SAFETY: the caller guarantees the read is meaningful for the device.
    unsafe { asm!("in eax, dx", in("dx") port, out("eax") value, options(nomem, nostack, preserves_flags)) }
    value
}

/// # Safety
/// `msr` must exist on this CPU.
pub unsafe fn rdmsr(msr: u32) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: the caller guarantees the MSR exists.
    unsafe {
        asm!("rdmsr", in("ecx") msr, out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags))
    }
    ((hi as u64) << 32) | lo as u64
}

/// # Safety
/// `msr` must exist and the value must keep the kernel's invariants.
pub unsafe fn wrmsr(msr: u32, value: u64) {
    // SAFETY: the caller guarantees the write is valid.
    unsafe {
        asm!("wrmsr", in("ecx") msr, in("eax") value as u32, in("edx") (value >> 32) as u32,
             options(nostack, preserves_flags))
    }
}

pub fn read_cr2() -> u64 {
    let v: u64;
    // SAFETY: reading CR2 has no side effects.
    unsafe { asm!("mov {}, cr2", out(reg) v, options(nomem, nostack, preserves_flags)) }
    v
}

/// # Safety
/// `root` must be the physical address of a valid PML4 that maps the
/// kernel half exactly as every other root does, and stay allocated while
/// loaded (paging.rs keeps both promises).
#[inline(always)]
pub(super) unsafe fn write_cr3(root: u64) {
    // SAFETY: the caller guarantees the tables are valid.
    unsafe { asm!("mov cr3, {}", in(reg) root, options(nostack, preserves_flags)) }
}

pub fn read_cr4() -> u64 {
    let v: u64;
    // SAFETY: reading CR4 has no side effects.
    unsafe { asm!("mov {}, cr4", out(reg) v, options(nomem, nostack, preserves_flags)) }
    v
}

/// # Safety
/// The new CR4 must be valid for this CPU and keep the kernel running.
pub unsafe fn write_cr4(v: u64) {
    // SAFETY: the caller guarantees the value is valid.
    unsafe { asm!("mov cr4, {}", in(reg) v, options(nostack, preserves_flags)) }
}

/// Invalidate one page's TLB entry on this CPU.
pub fn invlpg(addr: u64) {
    // SAFETY: invlpg only drops a cached translation.
    unsafe { asm!("invlpg [{}]", in(reg) addr, options(nostack, preserves_flags)) }
}

#[inline(always)]
pub fn rdtsc() -> u64 {
    let tsc: u64;
    // SAFETY: rdtsc has no side effects; it zeroes the upper halves of rax
    // and rdx, so the halves combine without the compiler's extra
    // zero-extension.
    unsafe {
        asm!("rdtsc", "shl rdx, 32", "or rax, rdx", out("rax") tsc, out("rdx") _, options(nomem, nostack))
    }
    tsc
}

pub struct CpuidResult {
    pub ebx: u32,
    pub edx: u32,
}

pub fn cpuid(leaf: u32, subleaf: u32) -> CpuidResult {
    let r = core::arch::x86_64::__cpuid_count(leaf, subleaf);
    CpuidResult { ebx: r.ebx, edx: r.edx }
}

/// Wait for the next interrupt with interrupts disabled: used only to park
/// a CPU for good.
pub fn halt_forever() -> ! {
    loop {
        // SAFETY: cli; hlt stops this CPU; nothing else depends on it.
        unsafe { asm!("cli; hlt", options(nomem, nostack)) }
    }
}

/// CR4: PGE, and SMEP/SMAP when CPUID leaf 7 reports them. The kernel never
/// touches user pages through user addresses, so SMAP never needs lifting.
pub(super) fn enable_protection_features() {
    let leaf7 = cpuid(7, 0);
    let mut cr4 = read_cr4() | CR4_PGE;
    if leaf7.ebx & (1 << 7) != 0 {
        cr4 |= CR4_SMEP;
    }
    if leaf7.ebx & (1 << 20) != 0 {
        cr4 |= CR4_SMAP;
    }
    // SAFETY: only features the CPU reports are enabled.
    unsafe { write_cr4(cr4) };
}

/// Whether the CPU has the no-execute bit (CPUID 0x8000_0001 EDX bit 20).
pub fn has_nx() -> bool {
    cpuid(0x8000_0001, 0).edx & (1 << 20) != 0
}

/// ACPI power-off on QEMU's PC machine (PIIX4 PM1a control at 0x604,
/// SLP_TYP 0 | SLP_EN). Harmless elsewhere.
pub fn acpi_power_off() {
    // SAFETY: a 16-bit write to an I/O port; on machines without the PIIX4
    // PM block nothing listens there.
    unsafe { core::arch::asm!("out dx, ax", in("dx") 0x604u16, in("ax") 0x2000u16, options(nomem, nostack)) }
}
