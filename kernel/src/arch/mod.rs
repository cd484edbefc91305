//! The hardware layer: the only place in the kernel with `unsafe` code.
//!
//! Layers, bottom up:
//! - [`cpu`]: single instructions (ports, MSRs, control registers, TSC).
//! - [`boot`]: the Multiboot1 header, the 32-bit path into long mode, and
//!   memory set-up ([`boot::init_memory`]); [`multiboot`]: what the loader
//!   passed; [`firmware`]: the ACPI tables.
//! - [`phys`]: reaching physical memory (the direct map); [`frames`]: physical frames as owned, counted values; [`paging`]:
//!   page tables (a process's as an owned [`paging::PageTable`]) and the
//!   direct map; [`heap`]: the kernel heap's backing allocator.
//! - [`descriptors`]: GDT, TSS, IDT; [`percpu`]: per-CPU records and
//!   stacks; [`apic`]: local APIC, I/O APIC, legacy PIC/PIT; [`smp`]:
//!   starting the other CPUs.
//! - [`trap`]: entry stubs, `syscall`, the register frame, the way out;
//!   [`regs`]: the kernel-call register convention as typed views of a
//!   frame.
//! - [`serial`]: the COM1 UART and QEMU's exit device; [`rtc`]: the CMOS
//!   calendar clock, read once at boot.
//! - [`fpu`]: the x87/SSE registers and FS base of foreign processes.
//!
//! Everything above this module is safe Rust (`#![deny(unsafe_code)]` at
//! the crate root), and the rule here is Asterinas OSTD's: no sequence of
//! calls to this module's safe public functions can cause undefined
//! behaviour. A function that trusts a raw address is an `unsafe fn`
//! private to this module, or takes a typed owner ([`frames::Frame`],
//! [`paging::PageTable`], [`apic::IoApic`]); bring-up steps run once
//! behind flags. Every `unsafe` block says why it is sound.
//!
//! The kernel is entered from here at three points, all from assembly:
//! `kernel_main` (boot.rs), `ap_main` (smp.rs), and the trap and
//! `syscall` handlers (trap.rs), which return the frame to leave through.

pub mod apic;
pub mod boot;
pub mod cpu;
pub mod descriptors;
pub mod firmware;
pub mod fpu;
pub mod frames;
pub mod heap;
pub mod multiboot;
pub mod paging;
pub mod pci;
pub mod percpu;
pub mod phys;
pub mod regs;
pub mod rtc;
pub mod serial;
pub mod smp;
pub mod trap;

use core::sync::atomic::{AtomicBool, Ordering};
use kernel_core::limits::MAX_CPUS;

/// CPUs whose descriptors and per-CPU record are set up.
static CPU_READY: [AtomicBool; MAX_CPUS] = [const { AtomicBool::new(false) }; MAX_CPUS];

/// Set up the boot CPU: the shared IDT, then this CPU's descriptors, its
/// per-CPU record, `syscall`, CR4's protections and its local APIC. Once,
/// first thing after memory is set up (later calls do nothing).
pub fn init_boot_cpu() {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::AcqRel) {
        return;
    }
    descriptors::init_idt(trap::stub_address);
    init_this_cpu(0);
}

/// Per-CPU set-up shared by the boot CPU and the others (smp.rs). Each
/// index once: a CPU's descriptors must not change under it.
fn init_this_cpu(cpu_index: usize) {
    if CPU_READY[cpu_index].swap(true, Ordering::AcqRel) {
        return;
    }
    descriptors::load(cpu_index);
    // The boot CPU's APIC is not enabled yet: its id is known after.
    let apic_id = if cpu_index == 0 { 0 } else { apic::lapic_id() };
    percpu::install(cpu_index, apic_id);
    trap::init_syscall();
    cpu::enable_protection_features();
    apic::enable_local();
    if cpu_index == 0 {
        percpu::install(0, apic::lapic_id());
    }
    percpu::CPUS_ONLINE.fetch_add(1, Ordering::AcqRel);
}
