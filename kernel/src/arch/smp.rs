//! Starting the other CPUs (INIT-SIPI-SIPI, Intel SDM vol. 3A §8.4.4 and
//! the MultiProcessor Specification 1.4 appendix B.4).
//!
//! A starting CPU runs in 16-bit real mode from a page below 1 MiB, so a
//! small trampoline is copied to [`TRAMPOLINE_PHYS`]; it enters long mode
//! with the kernel's page tables (whose root must therefore lie below 4
//! GiB, and which must identity-map the trampoline page while CPUs start:
//! the caller lends slot 0 of the boot identity map for that time) and
//! jumps to [`ap_entry`] on the stack it was given, which sets the CPU up
//! and calls the kernel's `ap_main` (main.rs).

use core::arch::global_asm;

pub const TRAMPOLINE_PHYS: u64 = 0x8000;

unsafe extern "C" {
    static ap_trampoline_start: u8;
    static ap_trampoline_end: u8;
    static ap_param_cr3: u8;
    static ap_param_stack: u8;
    static ap_param_entry: u8;
    static ap_param_cpu: u8;
    static ap_param_efer: u8;
}

// SAFETY (of the whole block): this code only runs on a starting CPU, from
// the copy at TRAMPOLINE_PHYS, with parameters written by `set_parameters`.
global_asm!(
    r#"
    .section .rodata.trampoline, "a"
    .balign 16
    .global ap_trampoline_start
ap_trampoline_start:
    .code16
    cli
    cld
    xor ax, ax
    mov ds, ax
    lgdt [T_ap_gdt_pointer]
    mov eax, cr0
    or eax, 1
    mov cr0, eax
    .byte 0x66, 0xea
    .long ap_pm32 - ap_trampoline_start + {base}
    .word 0x08
    .code32
ap_pm32:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    mov eax, cr4
    or eax, 1 << 5
    mov cr4, eax
    mov eax, [T_ap_param_cr3]
    mov cr3, eax
    mov ecx, 0xC0000080
    rdmsr
    or eax, [T_ap_param_efer]
    wrmsr
    mov eax, cr0
    or eax, 0x80010001
    mov cr0, eax
    .byte 0xea
    .long ap_lm64 - ap_trampoline_start + {base}
    .word 0x18
    .code64
ap_lm64:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    mov rsp, [T_ap_param_stack]
    mov rdi, [T_ap_param_cpu]
    mov rax, [T_ap_param_entry]
    xor ebp, ebp
    call rax
3:
    hlt
    jmp 3b

    .balign 8
ap_gdt:
    .quad 0
    .quad 0x00cf9a000000ffff
    .quad 0x00cf92000000ffff
    .quad 0x00af9a000000ffff
ap_gdt_pointer:
    .word ap_gdt_pointer - ap_gdt - 1
    .long ap_gdt - ap_trampoline_start + {base}
    .balign 8
    .global ap_param_cr3
ap_param_cr3: .quad 0
    .global ap_param_stack
ap_param_stack: .quad 0
    .global ap_param_entry
ap_param_entry: .quad 0
    .global ap_param_cpu
ap_param_cpu: .quad 0
    .global ap_param_efer
ap_param_efer: .quad 0
    .global ap_trampoline_end
ap_trampoline_end:
    .set T_ap_gdt_pointer, ap_gdt_pointer - ap_trampoline_start + {base}
    .set T_ap_param_cr3, ap_param_cr3 - ap_trampoline_start + {base}
    .set T_ap_param_efer, ap_param_efer - ap_trampoline_start + {base}
    .set T_ap_param_stack, ap_param_stack - ap_trampoline_start + {base}
    .set T_ap_param_cpu, ap_param_cpu - ap_trampoline_start + {base}
    .set T_ap_param_entry, ap_param_entry - ap_trampoline_start + {base}

    .text
    "#,
    base = const TRAMPOLINE_PHYS,
);

fn offset_of(sym: *const u8) -> u64 {
    // SAFETY: only addresses of the trampoline's own symbols are compared.
    sym as u64 - (&raw const ap_trampoline_start) as u64
}

/// Write `bytes` at `offset` in the trampoline page.
fn write_trampoline(offset: u64, bytes: &[u8]) {
    assert!(offset + bytes.len() as u64 <= abi::layout::PAGE_SIZE);
    // SAFETY: the trampoline page lies in the first MiB, reserved from the
    // frame allocator for this use (boot.rs); only the boot CPU writes it,
    // while starting CPUs one at a time (`start_other_cpus` runs once).
    unsafe {
        core::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            super::phys::phys_to_virt(TRAMPOLINE_PHYS + offset) as *mut u8,
            bytes.len(),
        )
    }
}

/// Copy the trampoline into low memory.
fn install_trampoline() {
    let start = &raw const ap_trampoline_start;
    let len = offset_of(&raw const ap_trampoline_end) as usize;
    // SAFETY: the trampoline symbols bound a byte range of .rodata.
    let bytes = unsafe { core::slice::from_raw_parts(start, len) };
    write_trampoline(0, bytes);
}

/// Write the parameters for the next CPU to start.
fn set_parameters(cr3: u64, stack_top: u64, cpu: u64, efer_bits: u64) {
    let entry: extern "C" fn(u64) -> ! = ap_entry;
    for (sym, value) in [
        (&raw const ap_param_cr3, cr3),
        (&raw const ap_param_stack, stack_top),
        (&raw const ap_param_entry, entry as usize as u64),
        (&raw const ap_param_cpu, cpu),
        (&raw const ap_param_efer, efer_bits),
    ] {
        write_trampoline(offset_of(sym), &value.to_le_bytes());
    }
}

/// Where a started CPU enters Rust, on its own kernel stack: its per-CPU
/// set-up, then the kernel's `ap_main`.
extern "C" fn ap_entry(cpu_index: u64) -> ! {
    let cpu_index = cpu_index as usize;
    super::init_this_cpu(cpu_index);
    crate::ap_main(cpu_index)
}

/// Start every other CPU the MADT lists, one at a time (INIT-SIPI-SIPI),
/// at most `max_cpus` in all. Once, from the boot CPU. Returns warnings
/// to print (CPUs left halted or that did not start), one per line.
pub fn start_other_cpus(madt: &kernel_core::acpi::Madt, max_cpus: usize) -> alloc::string::String {
    use core::fmt::Write;
    use kernel_core::limits::MAX_CPUS;
    static STARTED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    let mut warnings = alloc::string::String::new();
    if STARTED.swap(true, core::sync::atomic::Ordering::AcqRel) {
        return warnings;
    }
    if madt.cpus_ignored > 0 {
        let _ = writeln!(warnings, "{} CPUs beyond the limit of {MAX_CPUS} left halted", madt.cpus_ignored);
    }
    let my_apic = super::apic::lapic_id();
    // Lend the boot identity map of the first GiB to the starting CPUs: the
    // trampoline runs at its physical address while it turns paging on.
    super::paging::lend_identity_map(true);
    install_trampoline();
    let efer_bits = (1 << 8) | if super::cpu::has_nx() { super::cpu::EFER_NXE } else { 0 };
    let mut next_index = 1;
    for &apic_id in &madt.cpu_apic_ids[..madt.cpu_count] {
        if apic_id == my_apic {
            continue;
        }
        if next_index >= max_cpus.min(MAX_CPUS) {
            break;
        }
        let before = super::percpu::cpus_online();
        set_parameters(
            super::paging::kernel_root(),
            super::percpu::kernel_stack_top(next_index),
            next_index as u64,
            efer_bits,
        );
        super::apic::send_init(apic_id);
        super::apic::delay_us(10_000);
        for _ in 0..2 {
            super::apic::send_startup(apic_id, (TRAMPOLINE_PHYS / abi::layout::PAGE_SIZE) as u8);
            super::apic::delay_us(200);
            if super::percpu::cpus_online() > before {
                break;
            }
        }
        // Wait up to a second for it to report in.
        let mut waited_us = 0;
        while super::percpu::cpus_online() == before && waited_us < 1_000_000 {
            super::apic::delay_us(100);
            waited_us += 100;
        }
        // The index and stack are used up either way: a CPU that reports in
        // late must not share them with the next one.
        next_index += 1;
        if super::percpu::cpus_online() == before {
            let _ = writeln!(warnings, "CPU with APIC id {apic_id} did not start");
        }
    }
    super::paging::lend_identity_map(false);
    warnings
}
