//! Starting the other CPUs (INIT-SIPI-SIPI, Intel SDM vol. 3A §8.4.4 and
//! the MultiProcessor Specification 1.4 appendix B.4).
//!
//! A starting CPU runs in 16-bit real mode from a page below 1 MiB, so a
//! small trampoline is copied to [`TRAMPOLINE_PHYS`]; it enters long mode
//! with the kernel's page tables (whose root must therefore lie below 4
//! GiB, and which must identity-map the trampoline page while CPUs start:
//! the caller lends slot 0 of the boot identity map for that time) and
//! jumps to `ap_main` (main.rs) on the stack it was given.

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
    static boot_pml4: u8;
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

/// Physical address of the boot page tables' root (its slot 0 identity-maps
/// the first GiB).
pub fn boot_pml4_phys() -> u64 {
    // SAFETY: only the address is taken; .boot is linked at its physical address.
    (&raw const boot_pml4) as u64
}

/// Copy the trampoline into low memory. The page must be reserved.
pub fn install_trampoline() {
    let start = &raw const ap_trampoline_start;
    let len = offset_of(&raw const ap_trampoline_end) as usize;
    // SAFETY: the trampoline symbols bound a byte range of .rodata.
    let bytes = unsafe { core::slice::from_raw_parts(start, len) };
    super::paging::copy_to_frame(TRAMPOLINE_PHYS, 0, bytes);
}

/// Write the parameters for the next CPU to start.
pub fn set_parameters(cr3: u64, stack_top: u64, entry: extern "C" fn(u64) -> !, cpu: u64, efer_bits: u64) {
    for (sym, value) in [
        (&raw const ap_param_cr3, cr3),
        (&raw const ap_param_stack, stack_top),
        (&raw const ap_param_entry, entry as usize as u64),
        (&raw const ap_param_cpu, cpu),
        (&raw const ap_param_efer, efer_bits),
    ] {
        super::paging::copy_to_frame(TRAMPOLINE_PHYS, offset_of(sym) as usize, &value.to_le_bytes());
    }
}
