//! Devices belong to user processes (Ridge OS §3): "The kernel guarantees a
//! process exclusive access to the device by making the device manager the
//! recipient of interrupts from the device. The kernel forwards interrupts
//! in the form of messages to the device manager."
//!
//! - Interrupt lines: a driver claims a line and names one of its queues;
//!   each interrupt masks the line and becomes a [`Kind::Interrupt`]
//!   message (m0 = the line, m1 = this CPU's TSC then: the driver times
//!   its device and the delivery with it); the driver unmasks it with
//!   `ack_irq` when it has serviced the device, so a level-triggered line cannot storm. An
//!   interrupt that finds the queue full is kept pending and queued as soon
//!   as the driver takes a message from that queue.
//! - MSI-X entries (docs/devices.md, "MSI-X"): a driver asks for an entry
//!   of a function it holds to come to one of its queues; the kernel takes
//!   a vector from its pool (kernel_core::msix) and writes the entry's
//!   address and data itself, so that no driver can make a device send a
//!   vector of its choosing. The messages are edge-triggered: nothing is
//!   masked, nothing is acknowledged; one that finds the queue full is
//!   kept pending as a line's is.
//! - I/O ports: a driver asks for a range; the CPU's I/O permission bitmap
//!   is switched with the running process, so only the holder's port
//!   instructions work.
//! - Bootstrap connections: a few (pid, queue) pairs a process passes to
//!   its children, so a new process can find its console driver (and,
//!   later, its user monitor) without a name server in the kernel.
//!
//! - PCI functions: a driver reads any function's configuration space,
//!   claims the one it drives (one driver per function), writes the
//!   registers arch/pci.rs allows, and maps the function's memory BARs
//!   into its own address space, uncached.
//! - DMA memory: physically contiguous, zeroed frames mapped into the
//!   driver, which learns their physical address for the device.
//!
//! Every one of these needs `abi::rights::DEVICES`, which init grants only
//! to the drivers its init file names (Ridge starts its drivers from an
//! initialisation file read at boot, §8). With no IOMMU, a device told a
//! physical address writes there whatever it is: the right is the whole
//! machine (docs/devices.md).

use crate::arch::apic::{IRQ_BASE, MSIX_VECTOR_BASE};
use crate::arch::frames::Frame;
use crate::arch::pci::{self, ConfigError, MemoryBar, MsixError, PciAddress};
use crate::irq::IrqLine;
use crate::memory::SpaceError;
use crate::message::{Head, Payload};
use crate::state::Kernel;
use abi::layout::{PAGE_SIZE, USER_END};
use abi::msg::Kind;
use abi::{Error, Pid};
use abi::{irq_flags, rights};
use kernel_core::limits::IRQ_LINES;
use kernel_core::limits::MAX_DMA_BYTES;
use kernel_core::msix::{PoolError, Routed};

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
        self.proc(slot).rights & rights::DEVICES != 0
    }

    fn require_devices_right(&self, slot: usize) -> Result<(), Error> {
        if self.may_drive_devices(slot) { Ok(()) } else { Err(Error::PermissionDenied) }
    }

    /// The I/O APIC line and trigger mode of `irq`; `flags`
    /// (`abi::irq_flags`) give the trigger of an ISA line the firmware
    /// did not describe (a PCI interrupt routed to it).
    fn line_of(&self, irq: u64, flags: u64) -> Result<(u32, bool, bool), Error> {
        let r = &self.irqs().routing;
        let (level, active_low) = (flags & irq_flags::LEVEL != 0, flags & irq_flags::ACTIVE_LOW != 0);
        let line = if irq < 16 {
            r.isa_override[irq as usize].unwrap_or((irq as u32, level, active_low))
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

    pub fn claim_irq(&mut self, slot: usize, irq: u64, queue: u64, flags: u64) -> Result<(), Error> {
        self.require_devices_right(slot)?;
        if flags & !(irq_flags::LEVEL | irq_flags::ACTIVE_LOW) != 0 {
            return Err(Error::InvalidArgument);
        }
        let (line, level, active_low) = self.line_of(irq, flags)?;
        let qseg = self.proc(slot).qseg.as_ref().ok_or(Error::NoQueueSegment)?;
        qseg.len(queue)?;
        let me = self.pid_of(slot);
        let l = &mut self.irqs_mut().lines[line as usize];
        if l.owner.is_some_and(|(p, _)| p != me) {
            return Err(Error::InUse);
        }
        *l = IrqLine { owner: Some((me, queue as u32)), pending: false, level, active_low };
        let bsp = self.irqs().routing.bsp_apic_id;
        self.route(line, IRQ_BASE + line as u8, bsp, level, active_low, false);
        Ok(())
    }

    /// The line of `irq` if the process in `slot` holds it, with the
    /// trigger it was claimed with.
    fn owned_line(&self, slot: usize, irq: u64) -> Result<(u32, bool, bool), Error> {
        let (line, ..) = self.line_of(irq, 0)?;
        let l = self.irqs().lines[line as usize];
        match l.owner {
            Some((p, _)) if p == self.pid_of(slot) => Ok((line, l.level, l.active_low)),
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
        // Masked with the trigger it was claimed with: a level line's
        // polarity must not flip while it is asserted.
        let l = self.irqs().lines[line as usize];
        self.route(line, IRQ_BASE + line as u8, bsp, l.level, l.active_low, true);
        let Some((owner, queue)) = self.irqs().lines[line as usize].owner else { return };
        let Some(slot) = self.slot_of(owner) else {
            self.release_line(line);
            return;
        };
        let head = Head {
            // The TSC now: when the interrupt was taken, for the driver's
            // timing (abi::msg::Kind::Interrupt).
            words: [line as u64, crate::arch::cpu::rdtsc(), 0, 0],
            sender: Pid(0),
            kind: Kind::Interrupt,
        };
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
        // One each: a delivery that finds the queue full again sets its
        // route pending again, and must not be retried in this loop.
        if let Some(first) = self.irqs().msix.first_pending(me, queue as u32) {
            self.irqs_mut().msix.set_pending(first, false);
            self.msix_fired(first);
        }
    }

    // ---- MSI-X ----

    /// `msix_route`: send `entry` of the claimed function `raw` to `queue`
    /// as interrupt messages; returns the vector.
    pub fn msix_route(&mut self, slot: usize, raw: u64, entry: u64, queue: u64) -> Result<u8, Error> {
        let address = self.claimed_function(slot, raw)?;
        let entry = u16::try_from(entry).map_err(|_| Error::InvalidArgument)?;
        let qseg = self.proc(slot).qseg.as_ref().ok_or(Error::NoQueueSegment)?;
        qseg.len(queue)?;
        pci::msix_check(address, entry).map_err(msix_error)?;
        let me = self.pid_of(slot);
        // LimitReached, not InUse: no vector in particular was asked for
        // and none is held by a process the caller could wait for; the
        // kernel's static pool is full (kernel-core/src/limits.rs), as
        // `pci_claim` says at MAX_PCI_CLAIMS.
        let routed = self
            .irqs_mut()
            .msix
            .route(raw as u16, entry, me, queue as u32)
            .map_err(|PoolError::Exhausted| Error::LimitReached)?;
        let vector = MSIX_VECTOR_BASE + routed.slot() as u8;
        // Written and enabled again for a route that moved too: the
        // entry is the same, but MSI-X may have been turned off since
        // (`stop_function` when the image was replaced).
        let bsp = self.irqs().routing.bsp_apic_id;
        if let Err(e) = pci::msix_route(address, entry, vector, bsp) {
            if let Routed::New(slot) = routed {
                self.irqs_mut().msix.release(slot);
            }
            return Err(msix_error(e));
        }
        Ok(vector)
    }

    /// `msix_release`: mask the entry and free its vector.
    pub fn msix_release(&mut self, slot: usize, raw: u64, entry: u64) -> Result<(), Error> {
        self.claimed_function(slot, raw)?;
        let entry = u16::try_from(entry).map_err(|_| Error::InvalidArgument)?;
        let routed = self.irqs().msix.find(raw as u16, entry).ok_or(Error::InvalidArgument)?;
        self.free_msix(routed);
        Ok(())
    }

    /// Free pool slot `slot`: its entry masked, and MSI-X off on the
    /// function once none of its entries is routed.
    fn free_msix(&mut self, slot: usize) {
        let Some(route) = self.irqs_mut().msix.release(slot) else { return };
        let is_last = !self.irqs().msix.has_function(route.function);
        if let Some(address) = PciAddress::from_raw(route.function as u64) {
            pci::msix_unroute(address, route.entry, is_last);
        }
    }

    /// The vector of pool slot `slot` arrived: tell its route's owner.
    /// Nothing to mask: an MSI is an edge, sent once per event.
    pub fn msix_fired(&mut self, slot: usize) {
        let Some(route) = self.irqs().msix.get(slot) else { return };
        let Some(owner) = self.slot_of(route.owner) else {
            self.free_msix(slot);
            return;
        };
        let head = Head {
            // As a line's (abi::msg::Kind::Interrupt), with the entry
            // tagged and the function in word 2.
            words: [
                abi::msix::MESSAGE_TAG | route.entry as u64,
                crate::arch::cpu::rdtsc(),
                route.function as u64,
                0,
            ],
            sender: Pid(0),
            kind: Kind::Interrupt,
        };
        if self.deliver(owner, route.queue, head, Payload::None, false) == Err(Error::QueueFull) {
            self.irqs_mut().msix.set_pending(slot, true);
        }
    }

    pub fn io_ports(&mut self, slot: usize, base: u64, count: u64) -> Result<(), Error> {
        self.require_devices_right(slot)?;
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

    /// A process ended: stop its PCI functions, free its lines and ports.
    /// Called before its address space (and so its DMA frames) is retired
    /// (`Kernel::finish`), so that no device it programmed can still write
    /// into frames that another process may get next.
    pub fn devices_cleanup(&mut self, slot: usize, pid: Pid) {
        self.stop_dma_of(pid);
        for line in 0..IRQ_LINES {
            if self.irqs().lines[line].owner.is_some_and(|(p, _)| p == pid) {
                self.release_line(line as u32);
            }
        }
        self.proc_mut(slot).io_ports = None;
        for claim in self.irqs_mut().pci_claims.iter_mut() {
            if claim.is_some_and(|(_, p)| p == pid) {
                *claim = None;
            }
        }
    }

    /// Turn off bus mastering, INTx and MSI/MSI-X of every PCI function
    /// `pid` has claimed ([`pci::stop_function`]) and free its MSI-X
    /// vectors (entries masked): its DMA memory is about
    /// to be freed (it ended, or its image is being replaced). Without an
    /// IOMMU this is the only thing between a dead driver's device and
    /// the free list (docs/reliability.md).
    pub fn stop_dma_of(&mut self, pid: Pid) {
        for (raw, _) in self.irqs().pci_claims.iter().flatten().filter(|(_, p)| *p == pid) {
            if let Some(address) = PciAddress::from_raw(*raw as u64) {
                pci::stop_function(address);
            }
        }
        // Its MSI-X entries go with it: the queues they name are gone (a
        // new image starts with no queue segment), and a vector held for
        // nobody would be lost to the pool.
        while let Some(route) = self.irqs().msix.first_of(pid) {
            self.free_msix(route);
        }
    }

    // ---- PCI functions, device memory, DMA memory ----

    fn pci_address(&self, slot: usize, raw: u64) -> Result<PciAddress, Error> {
        self.require_devices_right(slot)?;
        PciAddress::from_raw(raw).ok_or(Error::InvalidArgument)
    }

    fn pci_holder(&self, address: PciAddress) -> Option<Pid> {
        self.irqs()
            .pci_claims
            .iter()
            .flatten()
            .find(|(a, _)| PciAddress::from_raw(*a as u64) == Some(address))
            .map(|&(_, p)| p)
    }

    /// The function at `raw`, if the process in `slot` has claimed it.
    fn claimed_function(&self, slot: usize, raw: u64) -> Result<PciAddress, Error> {
        let address = self.pci_address(slot, raw)?;
        if self.pci_holder(address) != Some(self.pid_of(slot)) {
            return Err(Error::PermissionDenied);
        }
        Ok(address)
    }

    pub fn pci_config_read(&mut self, slot: usize, raw: u64, offset: u64, width: u64) -> Result<u64, Error> {
        let address = self.pci_address(slot, raw)?;
        pci::config_read(address, offset, width).map(u64::from).map_err(|_| Error::InvalidArgument)
    }

    pub fn pci_config_write(
        &mut self,
        slot: usize,
        raw: u64,
        offset: u64,
        width: u64,
        value: u64,
    ) -> Result<(), Error> {
        let address = self.claimed_function(slot, raw)?;
        let value = u32::try_from(value).map_err(|_| Error::InvalidArgument)?;
        pci::config_write(address, offset, width, value).map_err(|e| match e {
            ConfigError::BadAccess => Error::InvalidArgument,
            ConfigError::Protected => Error::PermissionDenied,
        })
    }

    pub fn pci_claim(&mut self, slot: usize, raw: u64) -> Result<(), Error> {
        let address = self.pci_address(slot, raw)?;
        if !pci::is_device(address) {
            return Err(Error::NoSuchDevice);
        }
        let me = self.pid_of(slot);
        match self.pci_holder(address) {
            Some(p) if p == me => return Ok(()),
            Some(p) if self.slot_of(p).is_some() => return Err(Error::InUse),
            _ => {}
        }
        let claims = &mut self.irqs_mut().pci_claims;
        claims.iter_mut().for_each(|c| {
            if c.is_some_and(|(a, _)| PciAddress::from_raw(a as u64) == Some(address)) {
                *c = None; // a holder that has ended
            }
        });
        let free = claims.iter_mut().find(|c| c.is_none()).ok_or(Error::LimitReached)?;
        *free = Some((raw as u16, me));
        Ok(())
    }

    /// `map_mmio`: map memory BAR `bar` of a claimed function at `va`.
    pub fn map_mmio(&mut self, slot: usize, raw: u64, bar: u64, va: u64) -> Result<u64, Error> {
        let address = self.claimed_function(slot, raw)?;
        let bar = u8::try_from(bar).map_err(|_| Error::InvalidArgument)?;
        let MemoryBar { pa, len_bytes } = pci::memory_bar(address, bar).ok_or(Error::InvalidArgument)?;
        // BARs are naturally aligned and at least 16 bytes; map whole pages.
        let (first, end) = (pa & !(PAGE_SIZE - 1), (pa + len_bytes).next_multiple_of(PAGE_SIZE));
        if !va.is_multiple_of(PAGE_SIZE) || va.checked_add(end - first).is_none_or(|e| e > USER_END) {
            return Err(Error::BadAddress);
        }
        // The pages of the MSI-X table, if this BAR holds it, stay the
        // kernel's (`msix_route` writes them): a hole in the mapping.
        let hole = pci::msix_table_pages(address, bar).map(|(s, e)| (s.max(first), e.min(end)));
        self.space_mut(slot).map_device_except(va, first, end - first, hole).map_err(|e| match e {
            SpaceError::OutOfMemory => Error::OutOfResources,
            SpaceError::AlreadyMapped => Error::InvalidArgument,
        })?;
        Ok(len_bytes)
    }

    /// `dma_alloc`: `len` bytes of contiguous memory below 4 GiB at `va`.
    pub fn dma_alloc(&mut self, slot: usize, va: u64, len: u64) -> Result<u64, Error> {
        self.require_devices_right(slot)?;
        if len == 0 || len > MAX_DMA_BYTES || !len.is_multiple_of(PAGE_SIZE) {
            return Err(Error::InvalidArgument);
        }
        if !va.is_multiple_of(PAGE_SIZE) || va.checked_add(len).is_none_or(|e| e > USER_END) {
            return Err(Error::BadAddress);
        }
        let frames =
            Frame::alloc_contiguous_below_4g((len / PAGE_SIZE) as usize).ok_or(Error::OutOfResources)?;
        let pa = frames[0].phys_addr();
        self.space_mut(slot).map_frames(va, frames).map_err(|e| match e {
            SpaceError::OutOfMemory => Error::OutOfResources,
            SpaceError::AlreadyMapped => Error::InvalidArgument,
        })?;
        Ok(pa)
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

fn msix_error(e: MsixError) -> Error {
    match e {
        MsixError::NoTable => Error::NoSuchDevice,
        MsixError::BadEntry => Error::InvalidArgument,
    }
}
