//! Finding and setting up a virtio PCI function: PCI configuration space
//! through the kernel (`sys::pci_config_read`/`write`, the `devices`
//! right), the function on bus 0, its BARs (mapped; sized by the kernel),
//! bus mastering, its interrupts (an MSI-X entry the kernel routes, or
//! the INTx line), and the crate's transport on top.
//!
//! What it is not: a device (each driver makes its own on the transport)
//! or the memory ([`crate::hal`]).
//!
//! The interrupt: on QEMU's `pc` machine a PCI function's INTx pin reaches
//! an ISA line (10 or 11) through the PIIX router, and the firmware writes
//! that line into the function's configuration register 0x3C. The ACPI
//! MADT overrides those lines to level-triggered, active-high, which the
//! kernel's `claim_irq` applies (kernel/src/devices.rs `line_of`); the
//! driver also asks for a level-triggered line (`abi::irq_flags::LEVEL`)
//! for firmware whose tables say nothing.
//!
//! MSI-X ([`find_with`], docs/devices.md "MSI-X"): the kernel routes table
//! entry 0 to the driver's queue and writes the entry itself; the
//! transport tells the device to signal every queue through it.

use crate::hal::{self, RidgebackHal};
use abi::Error;
use runtime::msg::Queue;
use runtime::sys;
use virtio_drivers::transport::pci::PciTransport;
use virtio_drivers::transport::pci::bus::{Command, ConfigurationAccess, DeviceFunction, PciRoot};

/// Red Hat's virtio vendor id.
const VIRTIO_VENDOR_ID: u16 = 0x1af4;
/// Configuration register holding the interrupt line (low byte).
const INTERRUPT_LINE_OFFSET: u8 = 0x3c;
/// An interrupt line register of 0xff: not connected.
const NO_LINE: u32 = 0xff;

fn address(df: DeviceFunction) -> u64 {
    sys::pci_address(df.bus, df.device, df.function)
}

/// First BAR register and the number of BARs of a type-0 header.
const BAR0_OFFSET: u8 = 0x10;
const BAR_COUNT: usize = 6;

/// PCI configuration space through the kernel.
///
/// The kernel refuses writes to a BAR (firmware placed them outside RAM,
/// and keeping them there is what makes mapping one safe) and sizes BARs
/// itself (`map_mmio` returns the length). The crate sizes a BAR the
/// classic way (write all ones, read the mask back, restore), so those
/// writes are answered here from the lengths the kernel gave: a read of
/// a BAR register being sized returns the mask its length makes.
#[derive(Clone, Default)]
pub struct KernelConfigAccess {
    /// Per BAR register: the length of the memory BAR it belongs to
    /// (both halves of a 64-bit BAR), once mapped.
    bar_len_bytes: [Option<u64>; BAR_COUNT],
    /// Per BAR register: whether it is upper half of a 64-bit BAR.
    is_upper_half: [bool; BAR_COUNT],
    /// Per BAR register: all ones were written (it is being sized).
    sizing: [bool; BAR_COUNT],
}

fn bar_register(register_offset: u8) -> Option<usize> {
    let i = register_offset.checked_sub(BAR0_OFFSET)? as usize / 4;
    (register_offset.is_multiple_of(4) && i < BAR_COUNT).then_some(i)
}

impl ConfigurationAccess for KernelConfigAccess {
    fn read_word(&self, df: DeviceFunction, register_offset: u8) -> u32 {
        // A refused read looks like an empty slot, as on the bus.
        let value = sys::pci_config_read(address(df), register_offset as u16, 4).unwrap_or(u32::MAX);
        match bar_register(register_offset) {
            Some(i) if self.sizing[i] => match self.bar_len_bytes[i] {
                Some(len) if self.is_upper_half[i] => ((!(len - 1)) >> 32) as u32,
                // The mask, with the type bits the register holds.
                Some(len) => (!(len - 1) as u32 & !0xf) | (value & 0xf),
                None => value,
            },
            _ => value,
        }
    }

    fn write_word(&mut self, df: DeviceFunction, register_offset: u8, data: u32) {
        if let Some(i) = bar_register(register_offset) {
            // Not the kernel's to do: remember the sizing, drop the write.
            self.sizing[i] = data == u32::MAX;
            return;
        }
        let _ = sys::pci_config_write(address(df), register_offset as u16, 4, data);
    }

    // SAFETY: nothing to uphold: the access holds only the BAR lengths,
    // and the kernel does each read and write whole, so clones cannot
    // interfere.
    #[allow(unsafe_code)]
    unsafe fn unsafe_clone(&self) -> Self {
        self.clone()
    }
}

/// Map every memory BAR of the claimed function `df` (their addresses as
/// configuration space says; their lengths from the kernel), for the
/// crate's MMIO and for [`KernelConfigAccess`]'s sizing answers.
fn map_bars(df: DeviceFunction) -> Result<KernelConfigAccess, Error> {
    let mut access = KernelConfigAccess::default();
    let mut i = 0;
    while i < BAR_COUNT {
        let offset = BAR0_OFFSET + 4 * i as u8;
        let low = sys::pci_config_read(address(df), offset as u16, 4)?;
        let is_memory = low & 1 == 0;
        let is_64 = is_memory && (low >> 1) & 3 == 2 && i + 1 < BAR_COUNT;
        let high = if is_64 { sys::pci_config_read(address(df), offset as u16 + 4, 4)? } else { 0 };
        let phys = (high as u64) << 32 | (low & !0xf) as u64;
        if is_memory && phys != 0 {
            let len = hal::map_bar(address(df), i as u8, phys)?;
            access.bar_len_bytes[i] = Some(len);
            if is_64 {
                access.bar_len_bytes[i + 1] = Some(len);
                access.is_upper_half[i + 1] = true;
            }
        }
        i += if is_64 { 2 } else { 1 };
    }
    Ok(access)
}

fn why(e: Error) -> &'static str {
    e.name()
}

/// How the device's interrupts reach the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupts {
    /// MSI-X table entry `entry`, routed by the kernel to `vector`
    /// (`sys::msix_route`): edge-triggered messages, no ISR status to
    /// read, nothing to acknowledge.
    Msix { entry: u16, vector: u8 },
    /// The function's INTx pin on this I/O APIC line (ISA IRQ): read the
    /// ISR status to lower it, then `sys::ack_irq`.
    Line(u64),
}

/// The MSI-X table entry every queue of the device uses: one vector for
/// the driver's one queue of messages (configuration changes get none).
const QUEUE_MSIX_ENTRY: u16 = 0;

/// The device at `address` interrupts on its INTx line from now on.
fn claim_line(df: DeviceFunction, queue: Queue) -> Result<Interrupts, &'static str> {
    let line = KernelConfigAccess::default().read_word(df, INTERRUPT_LINE_OFFSET) & 0xff;
    if line == NO_LINE || line == 0 {
        return Err("the device has no interrupt line");
    }
    // A PCI interrupt on an ISA line: level-triggered, active-high (the
    // MADT's override, where there is one, says the same and wins).
    sys::claim_irq_with(line as u64, queue.0, abi::irq_flags::LEVEL).map_err(why)?;
    Ok(Interrupts::Line(line as u64))
}

/// Whether `pci.msix=` asks for MSI-X (the default) or for the INTx lines
/// (`off`). Another value is reported and the default kept, as the
/// kernel does with its own options.
pub fn msix_option() -> bool {
    let mut buf = [0u8; 1024];
    let n = sys::kernel_options(&mut buf).unwrap_or(0).min(buf.len());
    let line = core::str::from_utf8(&buf[..n]).unwrap_or("");
    match protocols::options::lookup(line, "pci.msix") {
        None | Some("on") => true,
        Some("off") => false,
        Some(v) => {
            runtime::println!("virtio: pci.msix={v} is not `on` or `off`; using on");
            true
        }
    }
}

/// Find the first virtio function on bus 0 whose device id is one of
/// `device_ids`, claim it, map its BARs, turn on memory decoding and bus
/// mastering, and claim its interrupt line onto `queue`; `Ok(None)` when
/// there is none. Returns the transport and the ISA line.
pub fn find(device_ids: &[u16], queue: Queue) -> Result<Option<(PciTransport, u64)>, &'static str> {
    match find_with(device_ids, queue, false)? {
        Some((transport, Interrupts::Line(line))) => Ok(Some((transport, line))),
        Some((_, Interrupts::Msix { .. })) => unreachable!("MSI-X was not asked for"),
        None => Ok(None),
    }
}

/// [`find`], with the device's queues on MSI-X table entry 0 when
/// `try_msix` and the kernel routes it (docs/devices.md, "MSI-X"); on its
/// INTx line otherwise (no MSI-X capability, the kernel's pool full). The
/// device may still refuse the entry when its queues are set up: then
/// call [`fall_back_to_line`].
pub fn find_with(
    device_ids: &[u16],
    queue: Queue,
    try_msix: bool,
) -> Result<Option<(PciTransport, Interrupts)>, &'static str> {
    let found = PciRoot::new(KernelConfigAccess::default())
        .enumerate_bus(0)
        .find(|(_, info)| info.vendor_id == VIRTIO_VENDOR_ID && device_ids.contains(&info.device_id));
    let Some((df, _)) = found else { return Ok(None) };
    sys::pci_claim(address(df)).map_err(why)?;
    let mut root = PciRoot::new(map_bars(df).map_err(why)?);
    // Memory decoding for the BARs, bus mastering for DMA (and MSI-X
    // messages, which are DMA writes); INTx stays on for the fallback.
    let (_, command) = root.get_status_command(df);
    root.set_command(
        df,
        (command | Command::MEMORY_SPACE | Command::BUS_MASTER) - Command::INTERRUPT_DISABLE,
    );
    let routed = if try_msix { sys::msix_route(address(df), QUEUE_MSIX_ENTRY, queue.0).ok() } else { None };
    let interrupts = match routed {
        Some(vector) => Interrupts::Msix { entry: QUEUE_MSIX_ENTRY, vector },
        None => claim_line(df, queue)?,
    };
    let mut transport =
        PciTransport::new::<RidgebackHal, _>(&mut root, df).map_err(|_| "no virtio PCI transport")?;
    if let Interrupts::Msix { entry, .. } = interrupts {
        transport.use_msix_entry(Some(entry));
    }
    Ok(Some((transport, interrupts)))
}

/// The device refused its MSI-X entry (`PciTransport::msix_refused`):
/// give the entry back (the kernel turns MSI-X off with it, so the device
/// goes back to INTx and its ISR status) and take the line instead.
pub fn fall_back_to_line(transport: &PciTransport, queue: Queue) -> Result<Interrupts, &'static str> {
    let df = transport.device_function();
    let _ = sys::msix_release(address(df), QUEUE_MSIX_ENTRY);
    claim_line(df, queue)
}
