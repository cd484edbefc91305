//! Devices belong to user processes (Ridge OS §3): "The kernel guarantees a
//! process exclusive access to the device by making the device manager the
//! recipient of interrupts from the device. The kernel forwards interrupts
//! in the form of messages to the device manager."
//!
//! - Interrupt lines: a driver claims a line and names one of its queues;
//!   each interrupt masks the line and becomes a [`Kind::Interrupt`]
//!   message (m0 = the line); the driver unmasks it with `ack_irq` when it
//!   has serviced the device, so a level-triggered line cannot storm. An
//!   interrupt that finds the queue full is kept pending and queued as soon
//!   as the driver takes a message from that queue.
//! - I/O ports: a driver asks for a range; the CPU's I/O permission bitmap
//!   is switched with the running process, so only the holder's port
//!   instructions work.
//! - Bootstrap connections: a few (pid, queue) pairs a process passes to
//!   its children, so a new process can find its console driver (and,
//!   later, its user monitor) without a name server in the kernel.
//!
//! Only init and init's children may claim lines and ports (Ridge starts
//! its drivers from an initialisation file read at boot, §8).

use crate::arch::apic::IRQ_BASE;
use crate::irq::IrqLine;
use crate::message::{Head, Payload};
use crate::state::Kernel;
use abi::msg::Kind;
use abi::{Error, Pid};
use kernel_core::limits::IRQ_LINES;

/// Ports the kernel keeps: the PICs, the PIT and its gate, QEMU's exit
/// device, ACPI power management, PCI configuration space.
const KERNEL_PORTS: &[(u16, u16)] =
    &[(0x20, 2), (0xa0, 2), (0x40, 4), (0x61, 1), (0xf4, 4), (0x600, 16), (0xcf8, 8)];

fn overlaps(a: (u16, u16), b: (u16, u16)) -> bool {
    let (a0, a1) = (a.0 as u32, a.0 as u32 + a.1 as u32);
    let (b0, b1) = (b.0 as u32, b.0 as u32 + b.1 as u32);
    a0 < b1 && b0 < a1
}

impl Kernel {
    fn may_drive_devices(&self, slot: usize) -> bool {
        let init = self.init_slot();
        Some(slot) == init
            || self.proc(slot).parent.is_some_and(|p| init.is_some_and(|i| self.pid_of(i) == p))
    }

    /// The I/O APIC line and trigger mode of `irq`.
    fn line_of(&self, irq: u64) -> Result<(u32, bool, bool), Error> {
        let r = &self.irqs().routing;
        let line = if irq < 16 {
            r.isa_override[irq as usize].unwrap_or((irq as u32, false, false))
        } else {
            (irq as u32, true, true) // PCI lines: level-triggered, active low
        };
        // The PIT's lines (ISA 0, and GSI 2 where QEMU wires it) stay off.
        if r.io_apic.is_none() || line.0 as usize >= IRQ_LINES || irq == 0 || line.0 == 2 {
            return Err(Error::InvalidArgument);
        }
        Ok(line)
    }

    /// Program I/O APIC line `line` (there is one whenever a line could
    /// be claimed: `line_of` refuses every line without it).
    fn route(&self, line: u32, vector: u8, apic_id: u32, level: bool, active_low: bool, masked: bool) {
        if let Some(io) = self.irqs().routing.io_apic {
            io.route(line, vector, apic_id, level, active_low, masked);
        }
    }

    pub fn claim_irq(&mut self, slot: usize, irq: u64, queue: u64) -> Result<(), Error> {
        if !self.may_drive_devices(slot) {
            return Err(Error::PermissionDenied);
        }
        let (line, level, active_low) = self.line_of(irq)?;
        let qseg = self.proc(slot).qseg.as_ref().ok_or(Error::NoQueueSegment)?;
        qseg.len(queue)?;
        let me = self.pid_of(slot);
        let l = &mut self.irqs_mut().lines[line as usize];
        if l.owner.is_some_and(|(p, _)| p != me) {
            return Err(Error::InUse);
        }
        *l = IrqLine { owner: Some((me, queue as u32)), pending: false };
        let bsp = self.irqs().routing.bsp_apic_id;
        self.route(line, IRQ_BASE + line as u8, bsp, level, active_low, false);
        Ok(())
    }

    fn owned_line(&self, slot: usize, irq: u64) -> Result<(u32, bool, bool), Error> {
        let line = self.line_of(irq)?;
        match self.irqs().lines[line.0 as usize].owner {
            Some((p, _)) if p == self.pid_of(slot) => Ok(line),
            _ => Err(Error::PermissionDenied),
        }
    }

    pub fn ack_irq(&mut self, slot: usize, irq: u64) -> Result<(), Error> {
        let (line, level, active_low) = self.owned_line(slot, irq)?;
        let bsp = self.irqs().routing.bsp_apic_id;
        self.route(line, IRQ_BASE + line as u8, bsp, level, active_low, false);
        Ok(())
    }

    pub fn release_irq(&mut self, slot: usize, irq: u64) -> Result<(), Error> {
        let (line, ..) = self.owned_line(slot, irq)?;
        self.release_line(line);
        Ok(())
    }

    fn release_line(&mut self, line: u32) {
        self.irqs_mut().lines[line as usize] = IrqLine::default();
        let bsp = self.irqs().routing.bsp_apic_id;
        self.route(line, IRQ_BASE + line as u8, bsp, false, false, true);
    }

    /// Interrupt on I/O APIC line `line`: mask it and tell its owner.
    pub fn irq_fired(&mut self, line: u32) {
        let bsp = self.irqs().routing.bsp_apic_id;
        self.route(line, IRQ_BASE + line as u8, bsp, false, false, true);
        let Some((owner, queue)) = self.irqs().lines[line as usize].owner else { return };
        let Some(slot) = self.slot_of(owner) else {
            self.release_line(line);
            return;
        };
        let head = Head { words: [line as u64, 0, 0, 0], sender: Pid(0), kind: Kind::Interrupt };
        if self.deliver(slot, queue, head, Payload::None, false) == Err(Error::QueueFull) {
            self.irqs_mut().lines[line as usize].pending = true;
        }
    }

    /// After `slot` took a message from `queue`: queue interrupts that found
    /// it full.
    pub fn redeliver_pending_irqs(&mut self, slot: usize, queue: u64) {
        let me = self.pid_of(slot);
        for line in 0..IRQ_LINES {
            let l = self.irqs().lines[line];
            if l.pending && l.owner == Some((me, queue as u32)) {
                self.irqs_mut().lines[line].pending = false;
                self.irq_fired(line as u32);
            }
        }
    }

    pub fn io_ports(&mut self, slot: usize, base: u64, count: u64) -> Result<(), Error> {
        if !self.may_drive_devices(slot) {
            return Err(Error::PermissionDenied);
        }
        if count == 0 || base.checked_add(count).is_none_or(|end| end > 0x1_0000) {
            return Err(Error::InvalidArgument);
        }
        let range = (base as u16, count as u16);
        if KERNEL_PORTS.iter().any(|&k| overlaps(k, range)) {
            return Err(Error::PermissionDenied);
        }
        let taken = self.slots().any(|i| {
            let p = self.proc(i);
            i != slot && p.io_ports.is_some_and(|r| overlaps(r, range)) && p.is_live()
        });
        if taken {
            return Err(Error::InUse);
        }
        // The CPU's bitmap follows on the way out of the kernel (resume).
        self.proc_mut(slot).io_ports = Some(range);
        Ok(())
    }

    /// A process ended: free its lines and ports.
    pub fn devices_cleanup(&mut self, slot: usize, pid: Pid) {
        for line in 0..IRQ_LINES {
            if self.irqs().lines[line].owner.is_some_and(|(p, _)| p == pid) {
                self.release_line(line as u32);
            }
        }
        self.proc_mut(slot).io_ports = None;
    }

    pub fn set_bootstrap(&mut self, slot: usize, index: u64, pid: u64, queue: u64) -> Result<(), Error> {
        if index >= abi::bootstrap::COUNT || queue > u32::MAX as u64 {
            return Err(Error::InvalidArgument);
        }
        if pid != 0 && self.slot_of(Pid(pid)).is_none() {
            return Err(Error::NoSuchProcess);
        }
        self.proc_mut(slot).bootstrap[index as usize] = (pid, queue as u32);
        Ok(())
    }

    /// Bootstrap connection `index` of the process in `slot`: (pid, queue).
    pub fn get_bootstrap(&self, slot: usize, index: u64) -> Result<(u64, u32), Error> {
        if index >= abi::bootstrap::COUNT {
            return Err(Error::InvalidArgument);
        }
        Ok(self.proc(slot).bootstrap[index as usize])
    }
}
