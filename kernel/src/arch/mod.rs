//! The hardware layer: the only place in the kernel with `unsafe` code.
//!
//! Layers, bottom up:
//! - [`cpu`]: single instructions (ports, MSRs, control registers, TSC).
//! - [`boot`]: the Multiboot1 header and the 32-bit path into long mode.
//! - [`paging`]: page tables and physical memory through the direct map.
//! - [`descriptors`]: GDT, TSS, IDT.
//! - [`trap`]: entry stubs, `syscall`, the register frame, the way out.
//! - [`regs`]: the kernel-call register convention as typed views of a frame.
//! - [`percpu`]: per-CPU records and stacks.
//! - [`apic`]: local APIC, I/O APIC, legacy PIC/PIT.
//! - [`smp`]: the real-mode trampoline for starting CPUs.
//! - [`serial`]: the COM1 UART and QEMU's exit device.
//! - [`heap`]: the kernel heap's backing allocator.
//!
//! Everything above this module is safe Rust (`#![deny(unsafe_code)]` at
//! the crate root); every `unsafe` block here says why it is sound.

pub mod apic;
pub mod boot;
pub mod cpu;
pub mod descriptors;
pub mod heap;
pub mod paging;
pub mod percpu;
pub mod regs;
pub mod serial;
pub mod smp;
pub mod trap;
