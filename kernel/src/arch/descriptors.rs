//! GDT, TSS and IDT (Intel SDM vol. 3A §3.4.5, §7.2.1, §6.10).
//!
//! Selector layout, fixed by `sysret` (SDM vol. 2B, SYSRET): user data must
//! sit 8 bytes above the STAR user base and user code 16 bytes above it.

use super::percpu;
use core::mem::size_of;
use kernel_core::limits::MAX_CPUS;

pub const KERNEL_CODE: u16 = 0x08;
pub const KERNEL_DATA: u16 = 0x10;
pub const USER_DATA: u16 = 0x18 | 3;
pub const USER_CODE: u16 = 0x20 | 3;
const TSS_SELECTOR: u16 = 0x28;
/// STAR[63:48]: sysret loads CS from +16 and SS from +8 of this.
pub const STAR_USER_BASE: u16 = 0x10;

/// IST slots (1-based in the IDT) for exceptions that must not use the
/// current stack.
pub const IST_DOUBLE_FAULT: u8 = 1;

#[repr(C, packed(4))]
pub struct Tss {
    _reserved0: u32,
    pub rsp: [u64; 3],
    _reserved1: u64,
    pub ist: [u64; 7],
    _reserved2: u64,
    _reserved3: u16,
    pub iomap_base: u16,
}

/// A TSS followed by its I/O permission bitmap (SDM vol. 1 §19.5.2): one
/// bit per port, 1 = no access from user mode, and a final all-ones byte.
#[repr(C, align(16))]
struct TssWithPorts {
    tss: Tss,
    io_bitmap: [u8; IO_BITMAP_BYTES + 1],
}

const IO_BITMAP_BYTES: usize = 65536 / 8;

#[repr(C, align(16))]
struct Gdt([u64; 7]);

static mut GDTS: [Gdt; MAX_CPUS] = [const { Gdt([0; 7]) }; MAX_CPUS];
static mut TSSES: [TssWithPorts; MAX_CPUS] = [const {
    TssWithPorts {
        tss: Tss {
            _reserved0: 0,
            rsp: [0; 3],
            _reserved1: 0,
            ist: [0; 7],
            _reserved2: 0,
            _reserved3: 0,
            iomap_base: 0,
        },
        io_bitmap: [0xff; IO_BITMAP_BYTES + 1],
    }
}; MAX_CPUS];

/// Give user code on this CPU access to ports `grant` (base, count) and
/// take it away from `revoke`. Called when the running process changes and
/// the two processes' port grants differ (only device drivers have any).
#[allow(clippy::deref_addrof)] // a reference into a `static mut` must go through a raw pointer
pub fn switch_io_ports(revoke: Option<(u16, u16)>, grant: Option<(u16, u16)>) {
    let cpu = percpu::current_cpu();
    // SAFETY: each CPU changes only its own TSS's bitmap (`cpu` is this
    // one), with interrupts off, while it is in the kernel (the CPU reads
    // the bitmap only for user-mode port instructions); no reference to it
    // outlives this call.
    let bitmap = unsafe { &mut *(&raw mut TSSES[cpu].io_bitmap) };
    let mut set = |range: Option<(u16, u16)>, allow: bool| {
        if let Some((base, count)) = range {
            for port in base as usize..(base as usize + count as usize).min(65536) {
                if allow {
                    bitmap[port / 8] &= !(1 << (port % 8));
                } else {
                    bitmap[port / 8] |= 1 << (port % 8);
                }
            }
        }
    };
    set(revoke, false);
    set(grant, true);
}

#[repr(C, packed)]
struct DescriptorPointer {
    limit: u16,
    base: u64,
}

/// One IDT gate: 16 bytes.
#[repr(C)]
#[derive(Clone, Copy)]
struct Gate {
    offset_low: u16,
    selector: u16,
    ist: u8,
    type_attr: u8,
    offset_mid: u16,
    offset_high: u32,
    _zero: u32,
}

#[repr(C, align(16))]
struct Idt([Gate; 256]);

static mut IDT: Idt =
    Idt([Gate { offset_low: 0, selector: 0, ist: 0, type_attr: 0, offset_mid: 0, offset_high: 0, _zero: 0 };
        256]);

/// Build the shared IDT: every vector goes to its entry stub
/// (`stub_address(vector)`, trap.rs's). Interrupt gates (type 0xE) clear
/// IF, so the kernel runs with interrupts off (Ridge OS §4: a synchronous,
/// non-interruptible kernel).
pub(super) fn init_idt(stub_address: fn(usize) -> u64) {
    for vector in 0..256 {
        let handler = stub_address(vector);
        let ist = if vector == 8 || vector == 2 || vector == 18 { IST_DOUBLE_FAULT } else { 0 };
        let gate = Gate {
            offset_low: handler as u16,
            selector: KERNEL_CODE,
            ist,
            type_attr: 0x8E,
            offset_mid: (handler >> 16) as u16,
            offset_high: (handler >> 32) as u32,
            _zero: 0,
        };
        // SAFETY: the IDT is written once by the boot CPU before any CPU
        // loads it.
        unsafe { IDT.0[vector] = gate };
    }
}

/// Load this CPU's GDT (with its TSS) and the shared IDT. Once per CPU,
/// by its own bring-up (mod.rs), after `init_idt`.
pub(super) fn load(cpu: usize) {
    // SAFETY: each CPU fills only its own GDT and TSS before loading them;
    // both are statics, so they outlive every use.
    unsafe {
        let tss = &raw mut TSSES[cpu].tss;
        (*tss).rsp[0] = percpu::kernel_stack_top(cpu);
        (*tss).ist[(IST_DOUBLE_FAULT - 1) as usize] = percpu::emergency_stack_top(cpu);
        (*tss).iomap_base = size_of::<Tss>() as u16;
        let tss_addr = tss as u64;
        let tss_limit = (size_of::<Tss>() + IO_BITMAP_BYTES) as u64;
        let gdt = &raw mut GDTS[cpu];
        (*gdt).0 = [
            0,
            0x00af_9a00_0000_ffff, // kernel code, 64-bit
            0x00cf_9200_0000_ffff, // kernel data
            0x00cf_f200_0000_ffff, // user data (DPL 3)
            0x00af_fa00_0000_ffff, // user code, 64-bit (DPL 3)
            // 64-bit TSS descriptor, available (type 9), present.
            (tss_limit & 0xffff)
                | ((tss_addr & 0xff_ffff) << 16)
                | (0x89 << 40)
                | (((tss_limit >> 16) & 0xf) << 48)
                | (((tss_addr >> 24) & 0xff) << 56),
            tss_addr >> 32,
        ];
        let gdtr = DescriptorPointer { limit: (size_of::<Gdt>() - 1) as u16, base: gdt as u64 };
        let idtr = DescriptorPointer { limit: (size_of::<Idt>() - 1) as u16, base: &raw const IDT as u64 };
        core::arch::asm!(
            "lgdt [{gdtr}]",
            "push {kcode}",
            "lea {tmp}, [rip + 2f]",
            "push {tmp}",
            "retfq",
            "2:",
            "mov ds, {kdata:x}",
            "mov es, {kdata:x}",
            "mov ss, {kdata:x}",
            "ltr {tss:x}",
            "lidt [{idtr}]",
            gdtr = in(reg) &gdtr,
            idtr = in(reg) &idtr,
            kcode = const KERNEL_CODE as u64,
            kdata = in(reg) KERNEL_DATA as u64,
            tss = in(reg) TSS_SELECTOR as u64,
            tmp = out(reg) _,
        );
    }
}
