//! Entry from the boot loader: Multiboot1 header, 32-bit start, long mode.
//!
//! QEMU's `-kernel` loader (and GRUB's `multiboot`) enters `boot_entry32`
//! in 32-bit protected mode with paging off, `eax` = 0x2BADB002 and `ebx` =
//! the physical address of the Multiboot information (Multiboot spec 0.6.96
//! §3.2). We build boot page tables that map the first 1 GiB twice — at 0
//! (so the next instruction after enabling paging still runs) and at
//! `KERNEL_VMA` (where the kernel is linked) — enable long mode (Intel SDM
//! vol. 3A §9.8.5), and call [`boot_entry64`] on the boot stack, which
//! keeps what the loader passed and calls the kernel's `kernel_main`.
//! [`init_memory`] then parses the loader's information, sets up the frame
//! allocator, replaces these tables with the real ones and gives the
//! kernel its heap.

use abi::layout::PAGE_SIZE;
use core::arch::global_asm;
use kernel_core::frame_alloc::PhysRange;
use kernel_core::limits::{KERNEL_HEAP_BYTES, MAX_BOOT_MODULES};

/// Multiboot1 header flags: bit 0 page-align modules, bit 1 give a memory
/// map, bit 16 the a.out kludge (load addresses in the header), which is
/// what lets an ELF64 file be loaded by a Multiboot1 loader at all.
pub const MULTIBOOT_FLAGS: u32 = 0x0001_0003;
pub const MULTIBOOT_MAGIC: u32 = 0x1BAD_B002;
/// What the loader leaves in `eax`.
pub const MULTIBOOT_BOOTLOADER_MAGIC: u32 = 0x2BAD_B002;

// SAFETY (of the whole block): this is the first code that runs; nothing else
// exists yet. It only touches its own page tables in .boot.data, the boot
// stack in .bss, and control registers, then calls kernel_main, which never
// returns.
global_asm!(
    r#"
    .section .multiboot, "a"
    .balign 4
multiboot_header:
    .long {magic}
    .long {flags}
    .long -({magic} + {flags})
    .long multiboot_header
    .long __load_start_phys
    .long __load_end_phys
    .long __bss_end_phys
    .long boot_entry32

    .section .boot.text, "ax"
    .code32
    .global boot_entry32
boot_entry32:
    cli
    cld
    mov edi, eax
    mov esi, ebx

    /* Page directory: 512 x 2 MiB pages = the first 1 GiB. */
    xor ecx, ecx
2:
    mov eax, ecx
    shl eax, 21
    or eax, 0x83
    mov [boot_pd + ecx*8], eax
    mov dword ptr [boot_pd + ecx*8 + 4], 0
    inc ecx
    cmp ecx, 512
    jne 2b

    mov eax, offset boot_pd
    or eax, 3
    mov [boot_pdpt_low], eax
    mov [boot_pdpt_high + 510*8], eax
    mov eax, offset boot_pdpt_low
    or eax, 3
    mov [boot_pml4], eax
    mov eax, offset boot_pdpt_high
    or eax, 3
    mov [boot_pml4 + 511*8], eax

    /* CR4.PAE, CR3, EFER.LME (+ NXE when the CPU has NX), CR0.PG|WP. */
    mov eax, cr4
    or eax, 1 << 5
    mov cr4, eax
    mov eax, offset boot_pml4
    mov cr3, eax
    mov eax, 0x80000001
    push edi
    push esi
    cpuid
    pop esi
    pop edi
    mov ebx, 1 << 8
    test edx, 1 << 20
    jz 3f
    or ebx, 1 << 11
3:
    mov ecx, 0xC0000080
    rdmsr
    or eax, ebx
    wrmsr
    mov eax, cr0
    or eax, (1 << 31) | (1 << 16) | 1
    mov cr0, eax

    lgdt [boot_gdt_pointer]
    push 0x08
    mov eax, offset boot_entry64_low
    push eax
    retf

    .code64
boot_entry64_low:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor eax, eax
    mov fs, ax
    mov gs, ax
    mov edi, edi
    mov esi, esi
    movabs rsp, offset {stack} + {stack_bytes}
    movabs rax, offset {main}
    xor ebp, ebp
    call rax
4:
    hlt
    jmp 4b

    .section .boot.data, "aw"
    .balign {page_bytes}
    .global boot_pml4
boot_pml4:
    .fill 512, 8, 0
boot_pdpt_low:
    .fill 512, 8, 0
boot_pdpt_high:
    .fill 512, 8, 0
boot_pd:
    .fill 512, 8, 0
boot_gdt:
    .quad 0
    .quad 0x00af9a000000ffff
    .quad 0x00cf92000000ffff
boot_gdt_pointer:
    .word boot_gdt_pointer - boot_gdt - 1
    .long boot_gdt

    .text
    "#,
    magic = const MULTIBOOT_MAGIC,
    flags = const MULTIBOOT_FLAGS,
    stack = sym super::percpu::BOOT_STACK,
    stack_bytes = const kernel_core::limits::KERNEL_STACK_BYTES,
    page_bytes = const PAGE_SIZE,
    main = sym boot_entry64,
);

unsafe extern "C" {
    static __load_start_phys: u8;
    static __bss_end_phys: u8;
    static __kernel_virt_start: u8;
    static __text_end: u8;
    static __rodata_end: u8;
    static __kernel_virt_end: u8;
}

pub fn kernel_image() -> super::paging::KernelImage {
    super::paging::KernelImage {
        phys_start: &raw const __load_start_phys as u64,
        phys_end: &raw const __bss_end_phys as u64,
        virt_start: &raw const __kernel_virt_start as u64,
        text_end: &raw const __text_end as u64,
        rodata_end: &raw const __rodata_end as u64,
        virt_end: &raw const __kernel_virt_end as u64,
    }
}

/// What the loader passed in `eax` and `ebx`, kept by [`boot_entry64`].
static LOADER_ARGS: spin::Once<(u32, u32)> = spin::Once::new();

/// The first Rust code: entered once, from `boot_entry64_low` above, with
/// the loader's `eax` and `ebx`.
extern "C" fn boot_entry64(magic: u32, info_phys: u32) -> ! {
    LOADER_ARGS.call_once(|| (magic, info_phys));
    crate::kernel_main()
}

/// Parse the loader's information and set up memory: the frame allocator
/// (every usable frame but the first MiB, the kernel image and the boot
/// modules), the kernel's page tables with the direct map, and the kernel
/// heap. Runs once; later calls return the same information.
pub fn init_memory() -> Result<&'static super::multiboot::BootInfo, &'static str> {
    static DONE: spin::Once<Result<&'static super::multiboot::BootInfo, &'static str>> = spin::Once::new();
    *DONE.call_once(|| {
        let &(magic, info_phys) = LOADER_ARGS.get().ok_or("not started through boot_entry64")?;
        if magic != MULTIBOOT_BOOTLOADER_MAGIC {
            return Err("not started by a Multiboot loader");
        }
        let boot = super::multiboot::init(info_phys);
        let image = kernel_image();
        let mut reserved = [PhysRange::new(0, 0); 2 + MAX_BOOT_MODULES];
        // The first MiB: BIOS data, the SMP trampoline page, legacy holes.
        reserved[0] = PhysRange::new(0, 0x10_0000);
        reserved[1] = super::paging::image_range(&image);
        for (i, m) in boot.modules().iter().enumerate() {
            reserved[2 + i] = PhysRange::new(m.start, m.end);
        }
        super::frames::init(boot.usable(), &reserved[..2 + boot.modules().len()]);
        super::paging::init_kernel_tables(boot.ram_end, &image);
        super::cpu::enable_protection_features();
        let heap_frames = KERNEL_HEAP_BYTES / PAGE_SIZE as usize;
        let heap =
            super::frames::take_contiguous_for_kernel(heap_frames).ok_or("no memory for the kernel heap")?;
        super::heap::init(heap, KERNEL_HEAP_BYTES);
        super::frames::fix_reserve();
        Ok(boot)
    })
}
