//! Finding and setting up the disk: PCI configuration space through the
//! kernel (`sys::pci_config_read`/`write`, the `devices` right), the
//! virtio-blk function on bus 0, its BARs, bus mastering, its interrupt
//! line, and the crate's transport and device on top.
//!
//! What it is not: the request path (`main`) or the memory (`hal`).
//!
//! The interrupt: on QEMU's `pc` machine a PCI function's INTx pin reaches
//! an ISA line (10 or 11) through the PIIX router, and the firmware writes
//! that line into the function's configuration register 0x3C. The ACPI
//! MADT overrides those lines to level-triggered, active-high, which the
//! kernel's `claim_irq` applies (kernel/src/devices.rs `line_of`).

use crate::Disk;
use crate::hal::{self, RidgebackHal};
use abi::Error;
use alloc::vec::Vec;
use runtime::msg::Queue;
use runtime::sys;
use virtio_drivers::device::blk::VirtIOBlk;
use virtio_drivers::transport::pci::PciTransport;
use virtio_drivers::transport::pci::bus::{BarInfo, Command, ConfigurationAccess, DeviceFunction, PciRoot};

/// Red Hat's virtio vendor id.
const VIRTIO_VENDOR_ID: u16 = 0x1af4;
/// virtio-blk: the transitional device id (QEMU's default `virtio-blk-pci`)
/// and the modern one (virtio 1.x: 0x1040 + device type 2).
const BLK_DEVICE_IDS: [u16; 2] = [0x1001, 0x1042];
/// Configuration register holding the interrupt line (low byte).
const INTERRUPT_LINE_OFFSET: u8 = 0x3c;
/// An interrupt line register of 0xff: not connected.
const NO_LINE: u32 = 0xff;

/// PCI configuration space through the kernel.
pub struct KernelConfigAccess;

fn address(df: DeviceFunction) -> u64 {
    sys::pci_address(df.bus, df.device, df.function)
}

impl ConfigurationAccess for KernelConfigAccess {
    fn read_word(&self, df: DeviceFunction, register_offset: u8) -> u32 {
        // A refused read looks like an empty slot, as on the bus.
        sys::pci_config_read(address(df), register_offset as u16, 4).unwrap_or(u32::MAX)
    }

    fn write_word(&mut self, df: DeviceFunction, register_offset: u8, data: u32) {
        let _ = sys::pci_config_write(address(df), register_offset as u16, 4, data);
    }

    // SAFETY: nothing to uphold: the access holds no state (the kernel
    // does each read and write whole), so clones cannot interfere.
    #[allow(unsafe_code)]
    unsafe fn unsafe_clone(&self) -> Self {
        KernelConfigAccess
    }
}

fn why(e: Error) -> &'static str {
    e.name()
}

/// Find, claim and start the disk; `Ok(None)` when there is none. Its
/// interrupts arrive on `queue`. Returns the device and its ISA line.
pub fn probe(queue: Queue) -> Result<Option<(Disk, u64)>, &'static str> {
    let mut root = PciRoot::new(KernelConfigAccess);
    let found = root
        .enumerate_bus(0)
        .find(|(_, info)| info.vendor_id == VIRTIO_VENDOR_ID && BLK_DEVICE_IDS.contains(&info.device_id));
    let Some((df, _)) = found else { return Ok(None) };
    let pci_address = address(df);
    sys::pci_claim(pci_address).map_err(why)?;
    let mut bars = Vec::new();
    for (index, bar) in root.bars(df).map_err(|_| "cannot read its BARs")?.iter().enumerate() {
        if let Some(BarInfo::Memory { address, size, .. }) = bar
            && *address != 0
        {
            bars.push(hal::Bar::new(index as u8, *address, *size));
        }
    }
    hal::set_device(pci_address, bars);
    // Memory decoding for the BARs, bus mastering for DMA; INTx stays on.
    let (_, command) = root.get_status_command(df);
    root.set_command(
        df,
        (command | Command::MEMORY_SPACE | Command::BUS_MASTER) - Command::INTERRUPT_DISABLE,
    );
    let line = KernelConfigAccess.read_word(df, INTERRUPT_LINE_OFFSET) & 0xff;
    if line == NO_LINE || line == 0 {
        return Err("the disk has no interrupt line");
    }
    sys::claim_irq(line as u64, queue.0).map_err(why)?;
    let transport =
        PciTransport::new::<RidgebackHal, _>(&mut root, df).map_err(|_| "no virtio PCI transport")?;
    let mut disk = VirtIOBlk::<RidgebackHal, _>::new(transport).map_err(|_| "the device refused to start")?;
    disk.enable_interrupts();
    Ok(Some((disk, line as u64)))
}
