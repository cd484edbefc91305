//! Interrupt lines as the kernel's state records them: who owns each line
//! of the I/O APIC, which MSI-X entries the kernel's vectors serve, and
//! what the firmware said about routing. Plain data;
//! the kernel calls that claim, acknowledge and release lines, and the
//! delivery of an interrupt as a message, are in devices.rs.

use crate::arch::apic::IoApic;
use abi::Pid;
use kernel_core::limits::{IRQ_LINES, MAX_PCI_CLAIMS, MSIX_VECTORS};
use kernel_core::msix::VectorPool;

#[derive(Clone, Copy, Debug, Default)]
pub struct IrqLine {
    /// The driver that claimed the line and the queue its interrupts go to.
    pub owner: Option<(Pid, u32)>,
    /// An interrupt arrived while the owner's queue was full.
    pub pending: bool,
    /// The trigger the line was claimed with.
    pub level: bool,
    pub active_low: bool,
}

/// What the kernel learned about interrupt routing at boot.
#[derive(Clone, Copy, Debug, Default)]
pub struct IrqRouting {
    /// None on a machine without one: no device interrupts.
    pub io_apic: Option<IoApic>,
    pub bsp_apic_id: u32,
    /// ISA IRQ → (GSI, level-triggered, active-low), from the MADT.
    pub isa_override: [Option<(u32, bool, bool)>; 16],
}

/// Every line, the routing facts, and the PCI functions drivers hold.
pub struct IrqTable {
    pub lines: [IrqLine; IRQ_LINES],
    pub routing: IrqRouting,
    /// (function address, driver): one driver per function.
    pub pci_claims: [Option<(u16, Pid)>; MAX_PCI_CLAIMS],
    /// MSI-X entries routed to drivers' queues; slot `i` is vector
    /// `arch::apic::MSIX_VECTOR_BASE + i`.
    pub msix: VectorPool<MSIX_VECTORS>,
}

impl IrqTable {
    pub const fn new() -> IrqTable {
        IrqTable {
            lines: [IrqLine { owner: None, pending: false, level: false, active_low: false }; IRQ_LINES],
            routing: IrqRouting { io_apic: None, bsp_apic_id: 0, isa_override: [None; 16] },
            pci_claims: [None; MAX_PCI_CLAIMS],
            msix: VectorPool::new(),
        }
    }
}
