//! PCI configuration space, through configuration mechanism #1 (the
//! address port 0xCF8 and the data port 0xCFC; PCI Local Bus 3.0 §3.2.2.3.2).
//!
//! What it is: reads of any function's configuration space, writes to the
//! registers a driver needs (command, latency, interrupt line, and the
//! device-specific space from 0x40: capabilities such as MSI and virtio's),
//! and the memory BARs of a function, sized.
//!
//! What it refuses, and why: writes to the BARs, the expansion ROM BAR and
//! the rest of the header. Firmware placed every BAR outside RAM; a BAR
//! moved over RAM would make CPU accesses to that RAM reach the device,
//! so keeping them where firmware put them is what makes mapping a BAR
//! into a driver ([`super::paging::PageTable::map_device`], which refuses
//! RAM) safe. DMA by the device itself is not bounded here: without an
//! IOMMU it reaches all of memory (docs/devices.md).
//!
//! The two ports form one operation, so every access holds [`PORTS`].

use super::cpu::{inl, outl};
use super::phys::phys_to_virt;
use spin::Mutex;

const ADDRESS_PORT: u16 = 0xcf8;
const DATA_PORT: u16 = 0xcfc;

/// Held across the address write and the data access.
static PORTS: Mutex<()> = Mutex::new(());

/// Command register bit: the function answers memory accesses to its BARs.
const COMMAND_MEMORY_SPACE: u32 = 1 << 1;
/// Command register bit: the function may master the bus, that is do DMA
/// (and send MSI messages, which are memory writes; PCI Local Bus 3.0
/// §6.2.2, §6.8).
const COMMAND_BUS_MASTER: u32 = 1 << 2;
/// Command register bit: the function may not assert its INTx pin (§6.2.2).
const COMMAND_INTERRUPT_DISABLE: u32 = 1 << 10;
/// Status register bit (bit 20 of the dword at 0x04): the function has a
/// capabilities list, whose first pointer is at 0x34 (§6.7).
const STATUS_CAPABILITIES_LIST: u32 = 1 << 20;
const CAPABILITIES_POINTER: u8 = 0x34;
/// Capability ids (§6.8.1, §6.8.2) and their enable bits in the dword of
/// the capability's header (message control is its upper half).
const CAPABILITY_MSI: u32 = 0x05;
const MSI_ENABLE: u32 = 1 << 16;
const CAPABILITY_MSI_X: u32 = 0x11;
const MSI_X_ENABLE: u32 = 1 << 31;
/// MSI-X message control's Function Mask (bit 14, so bit 30 of the
/// header dword): every entry masked at once (PCI Local Bus 3.0 §6.8.2.3).
const MSI_X_FUNCTION_MASK: u32 = 1 << 30;
/// Bytes of an MSI capability (64-bit address, per-vector masking: the
/// longest form, §6.8.1) and of an MSI-X capability (§6.8.2).
const MSI_CAPABILITY_BYTES: u8 = 24;
const MSI_X_CAPABILITY_BYTES: u8 = 12;
/// Bytes of one MSI-X table entry: message address (low, high), message
/// data, vector control (§6.8.2.6–9).
const MSI_X_ENTRY_BYTES: u64 = 16;
/// Vector control's Mask Bit (§6.8.2.9).
const MSI_X_ENTRY_MASKED: u32 = 1;
/// Class code (the top byte of the dword at 0x08) of bridges (§D).
const CLASS_BRIDGE: u32 = 0x06;
/// The most capabilities 192 bytes of device-specific space can hold (4
/// bytes each at least): bounds the walk of a list that loops.
const MAX_CAPABILITIES: usize = 48;

/// A function's address: bus << 8 | device << 3 | function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PciAddress(u16);

impl PciAddress {
    /// From the ABI's form (`abi::Call::PciConfigRead`); None when out of range.
    pub fn from_raw(raw: u64) -> Option<PciAddress> {
        (raw <= u16::MAX as u64).then_some(PciAddress(raw as u16))
    }
}

/// Why a configuration access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// Width not 1, 2 or 4, offset not aligned to it, or past 256 bytes.
    BadAccess,
    /// A register that only firmware may set (see the module doc).
    Protected,
}

fn check_access(offset: u64, width: u64) -> Result<(u8, u8), ConfigError> {
    if !matches!(width, 1 | 2 | 4) || !offset.is_multiple_of(width) || offset + width > 256 {
        return Err(ConfigError::BadAccess);
    }
    Ok((offset as u8, width as u8))
}

fn select(address: PciAddress, offset: u8) {
    let word = 0x8000_0000 | (address.0 as u32) << 8 | (offset & 0xfc) as u32;
    // SAFETY: the configuration address port; `PORTS` is held by the caller.
    unsafe { outl(ADDRESS_PORT, word) };
}

fn read_dword(address: PciAddress, offset: u8) -> u32 {
    let _ports = PORTS.lock();
    select(address, offset);
    // SAFETY: reading configuration data has no side effects on PCI.
    unsafe { inl(DATA_PORT) }
}

fn write_dword(address: PciAddress, offset: u8, value: u32) {
    let _ports = PORTS.lock();
    select(address, offset);
    // SAFETY: callers in this module write only registers that cannot
    // move a BAR (or restore a BAR's own value while sizing it).
    unsafe { outl(DATA_PORT, value) };
}

/// Read `width` bytes at `offset`. A slot with no device reads all ones.
pub fn config_read(address: PciAddress, offset: u64, width: u64) -> Result<u32, ConfigError> {
    let (offset, width) = check_access(offset, width)?;
    let dword = read_dword(address, offset);
    let shift = (offset & 3) as u32 * 8;
    Ok(match width {
        4 => dword,
        w => (dword >> shift) & ((1u32 << (w as u32 * 8)) - 1),
    })
}

/// Whether a driver may write `offset..offset + width`: the command and
/// status registers, cache line size and latency timer, interrupt line and
/// pin, and everything from 0x40 on.
fn is_writable_register(offset: u8, width: u8) -> bool {
    let end = offset + width;
    (offset >= 0x04 && end <= 0x08)
        || (offset >= 0x0c && end <= 0x0e)
        || (offset >= 0x3c && end <= 0x3e)
        || offset >= 0x40
}

/// Whether `offset..offset + width` touches the function's MSI or MSI-X
/// capability. Those are the kernel's (`msix_route`): an MSI capability
/// holds a message address and data, which a driver writing them could
/// point at any vector of any CPU (a kernel IPI); MSI-X's enable and
/// function mask are set by the kernel once it has written the entries.
fn is_interrupt_capability(address: PciAddress, offset: u8, width: u8) -> bool {
    let end = offset as u16 + width as u16;
    capabilities(address).any(|(at, id)| {
        let len = match id {
            CAPABILITY_MSI => MSI_CAPABILITY_BYTES,
            CAPABILITY_MSI_X => MSI_X_CAPABILITY_BYTES,
            _ => return false,
        };
        (offset as u16) < at as u16 + len as u16 && (at as u16) < end
    })
}

/// Write `width` bytes at `offset` (a read-modify-write of the dword).
pub fn config_write(address: PciAddress, offset: u64, width: u64, value: u32) -> Result<(), ConfigError> {
    let (offset, width) = check_access(offset, width)?;
    if !is_writable_register(offset, width) || is_interrupt_capability(address, offset, width) {
        return Err(ConfigError::Protected);
    }
    let aligned = offset & 0xfc;
    let shift = (offset & 3) as u32 * 8;
    let dword = if width == 4 {
        value
    } else {
        let mask = ((1u32 << (width as u32 * 8)) - 1) << shift;
        // The status register's bits are write-one-to-clear: writing back
        // what was read would clear them, so a command write leaves them 0.
        let old = if aligned == 0x04 {
            read_dword(address, aligned) & 0xffff
        } else {
            read_dword(address, aligned)
        };
        (old & !mask) | ((value << shift) & mask)
    };
    write_dword(address, aligned, dword);
    Ok(())
}

/// Whether a function answers at `address`, and it is an ordinary device
/// (header type 0, not a bridge).
pub fn is_device(address: PciAddress) -> bool {
    let id = read_dword(address, 0);
    let header_type = (read_dword(address, 0x0c) >> 16) & 0x7f;
    id & 0xffff != 0xffff && header_type == 0
}

/// Stop the ordinary device at `address` from reaching memory or the CPU:
/// Bus Master Enable off (no new DMA, no MSI message, which is a DMA
/// write), INTx disabled, and MSI and MSI-X off. The kernel calls it when
/// the function's driver ends, before that driver's DMA frames go back to
/// the free list (docs/reliability.md, "A dead driver's device"). The
/// next driver turns on what it needs (`drivers/virtio-hal` sets bus
/// mastering and clears INTx-disable). Configuration writes are not
/// posted (§3.2.2.3.2), so the device holds the new command when the
/// write completes; a transfer it had already put on the bus still lands,
/// which only an IOMMU could stop.
pub fn stop_function(address: PciAddress) {
    // A host bridge (class 0x06, header type 0, the ktests claim one)
    // does no DMA of its own, and its command register can gate the
    // CPU's path to memory on some chipsets: leave bridges alone.
    let class = read_dword(address, 0x08) >> 24;
    if !is_device(address) || class == CLASS_BRIDGE {
        return;
    }
    let command_status = read_dword(address, 0x04);
    // The status half is write-one-to-clear: write it as zeros.
    let command = (command_status & 0xffff & !COMMAND_BUS_MASTER) | COMMAND_INTERRUPT_DISABLE;
    write_dword(address, 0x04, command);
    for (pointer, id) in capabilities(address) {
        let header = read_dword(address, pointer);
        match id {
            CAPABILITY_MSI if header & MSI_ENABLE != 0 => write_dword(address, pointer, header & !MSI_ENABLE),
            CAPABILITY_MSI_X if header & MSI_X_ENABLE != 0 => {
                write_dword(address, pointer, header & !MSI_X_ENABLE)
            }
            _ => {}
        }
    }
}

/// The capabilities list of the function at `address`: (offset, id) of
/// each, at most [`MAX_CAPABILITIES`] (a list that loops ends there).
fn capabilities(address: PciAddress) -> impl Iterator<Item = (u8, u32)> {
    let has_list = read_dword(address, 0x04) & STATUS_CAPABILITIES_LIST != 0;
    let mut pointer = if has_list { (read_dword(address, CAPABILITIES_POINTER) & 0xfc) as u8 } else { 0 };
    core::iter::from_fn(move || {
        if pointer < 0x40 {
            return None; // the end of the list (0), or a pointer into the header
        }
        let at = pointer;
        let header = read_dword(address, at);
        pointer = ((header >> 8) & 0xfc) as u8;
        Some((at, header & 0xff))
    })
    .take(MAX_CAPABILITIES)
}

/// A function's MSI-X table, as its capability describes it (PCI Local
/// Bus 3.0 §6.8.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsixTable {
    /// Where the capability is in configuration space.
    capability: u8,
    /// Entries in the table (Table Size + 1).
    pub entries: u16,
    /// The BAR holding it (the BIR) and its offset there.
    pub bar: u8,
    pub offset: u64,
}

impl MsixTable {
    pub fn len_bytes(&self) -> u64 {
        self.entries as u64 * MSI_X_ENTRY_BYTES
    }
}

/// The MSI-X table of the ordinary device at `address`, if it has one.
pub fn msix_table(address: PciAddress) -> Option<MsixTable> {
    if !is_device(address) {
        return None;
    }
    let (capability, _) = capabilities(address).find(|&(_, id)| id == CAPABILITY_MSI_X)?;
    let control = read_dword(address, capability) >> 16;
    let table = read_dword(address, capability + 4);
    let bar = (table & 7) as u8;
    (bar <= 5).then_some(MsixTable {
        capability,
        entries: (control & 0x7ff) as u16 + 1,
        bar,
        offset: (table & !7) as u64,
    })
}

/// Where memory BAR `index` of `address` starts, read from its register
/// without sizing it: the sizing probe ([`memory_bar`]) turns memory
/// decoding off for a moment, which a running device's driver would see.
fn memory_bar_base(address: PciAddress, index: u8) -> Option<u64> {
    let offset = 0x10 + index * 4;
    let low = read_dword(address, offset);
    if low & 1 != 0 {
        return None; // I/O space
    }
    let high = if (low >> 1) & 3 == 2 && index < 5 { read_dword(address, offset + 4) } else { 0 };
    let pa = (high as u64) << 32 | (low & !0xf) as u64;
    (pa != 0).then_some(pa)
}

/// Where in the kernel the MSI-X table of `address` can be written: its
/// BAR's address plus the table's offset, through the direct map, which
/// covers the whole low 4 GiB (arch/paging.rs). None for a table in an
/// I/O BAR or above 4 GiB. The direct map's page attribute there is
/// write-back below 0xfe00_0000; firmware's MTRRs make the PCI hole
/// uncacheable, and MTRR UC wins over PAT WB (Intel SDM vol. 3A §11.5.2.2).
fn msix_table_va(address: PciAddress, table: &MsixTable) -> Option<u64> {
    let pa = memory_bar_base(address, table.bar)?.checked_add(table.offset)?;
    (pa.checked_add(table.len_bytes())? <= 1 << 32).then(|| phys_to_virt(pa))
}

/// Physical pages `start..end` holding the MSI-X table of `address`, if
/// it is in memory BAR `bar`: kept out of the driver's mapping of that
/// BAR. PCI Local Bus 3.0 §6.8.2: the table shares no naturally aligned 4
/// KiB range with other registers, so the driver loses nothing.
pub fn msix_table_pages(address: PciAddress, bar: u8) -> Option<(u64, u64)> {
    let table = msix_table(address).filter(|t| t.bar == bar)?;
    let pa = memory_bar_base(address, bar)?.checked_add(table.offset)?;
    let page = 4096;
    Some((pa & !(page - 1), (pa + table.len_bytes()).next_multiple_of(page)))
}

/// Why the kernel cannot route an MSI-X entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsixError {
    /// No MSI-X capability, or a table the kernel cannot reach.
    NoTable,
    /// The entry is past the table's end.
    BadEntry,
}

fn entry_va(address: PciAddress, entry: u16) -> Result<(MsixTable, u64), MsixError> {
    let table = msix_table(address).ok_or(MsixError::NoTable)?;
    if entry >= table.entries || entry as usize >= kernel_core::limits::MAX_MSIX_ENTRIES {
        return Err(MsixError::BadEntry);
    }
    let va = msix_table_va(address, &table).ok_or(MsixError::NoTable)?;
    Ok((table, va + entry as u64 * MSI_X_ENTRY_BYTES))
}

/// Check that `entry` of `address` can be routed, without touching it.
pub fn msix_check(address: PciAddress, entry: u16) -> Result<(), MsixError> {
    entry_va(address, entry).map(|_| ())
}

/// Point `entry` of `address` at `vector` of the CPU with `apic_id` and
/// unmask it, then turn MSI-X on (function mask off; INTx stops, §6.8.2).
/// The message is the fixed, edge-triggered, physical-destination form
/// (Intel SDM vol. 3A §10.11.1-2): address 0xFEE0_0000 | apic_id << 12,
/// data = the vector (delivery mode 000, trigger mode 0 = edge).
pub fn msix_route(address: PciAddress, entry: u16, vector: u8, apic_id: u32) -> Result<(), MsixError> {
    let (table, va) = entry_va(address, entry)?;
    let message_address = super::apic::LAPIC_PHYS as u32 | (apic_id & 0xff) << 12;
    // SAFETY: `va` is the entry's 16 bytes inside the function's MSI-X
    // table (checked against its size), in the direct map, which maps all
    // of the low 4 GiB; these are device registers nothing else holds a
    // reference to. Masked while address and data change (§6.8.2.9).
    unsafe {
        let words = va as *mut u32;
        words.add(3).write_volatile(MSI_X_ENTRY_MASKED);
        words.write_volatile(message_address);
        words.add(1).write_volatile(0);
        words.add(2).write_volatile(vector as u32);
        words.add(3).write_volatile(0);
    }
    let header = read_dword(address, table.capability);
    write_dword(address, table.capability, (header | MSI_X_ENABLE) & !MSI_X_FUNCTION_MASK);
    Ok(())
}

/// Mask `entry` of `address` (its vector is being freed); with
/// `is_last`, turn MSI-X off on the function too.
pub fn msix_unroute(address: PciAddress, entry: u16, is_last: bool) {
    let Ok((table, va)) = entry_va(address, entry) else { return };
    // SAFETY: as in msix_route.
    unsafe { (va as *mut u32).add(3).write_volatile(MSI_X_ENTRY_MASKED) };
    if is_last {
        let header = read_dword(address, table.capability);
        write_dword(address, table.capability, header & !MSI_X_ENABLE);
    }
}

/// A memory BAR: where it is and how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryBar {
    pub pa: u64,
    pub len_bytes: u64,
}

/// Memory BAR `index` (0–5) of the ordinary device at `address`, sized by
/// the standard probe (write all ones, read back the size mask, restore)
/// with memory decoding off meanwhile. None for an I/O BAR, an empty one,
/// or the upper half of a 64-bit one.
pub fn memory_bar(address: PciAddress, index: u8) -> Option<MemoryBar> {
    if index > 5 || !is_device(address) {
        return None;
    }
    let offset = 0x10 + index * 4;
    if index > 0 {
        let below = read_dword(address, offset - 4);
        if below & 1 == 0 && (below >> 1) & 3 == 2 {
            return None; // the upper half of the 64-bit BAR below
        }
    }
    let low = read_dword(address, offset);
    if low & 1 != 0 {
        return None; // I/O space
    }
    let is_64 = (low >> 1) & 3 == 2;
    if is_64 && index == 5 {
        return None;
    }
    let command = read_dword(address, 0x04) & 0xffff;
    write_dword(address, 0x04, command & !COMMAND_MEMORY_SPACE);
    write_dword(address, offset, u32::MAX);
    let low_mask = read_dword(address, offset);
    write_dword(address, offset, low);
    let (high, high_mask) = if is_64 {
        let high = read_dword(address, offset + 4);
        write_dword(address, offset + 4, u32::MAX);
        let mask = read_dword(address, offset + 4);
        write_dword(address, offset + 4, high);
        (high, mask)
    } else {
        (0, u32::MAX)
    };
    write_dword(address, 0x04, command);
    let mask = (high_mask as u64) << 32 | (low_mask & !0xf) as u64;
    let len_bytes = (!mask).wrapping_add(1);
    let pa = (high as u64) << 32 | (low & !0xf) as u64;
    (mask != 0 && len_bytes != 0 && pa != 0).then_some(MemoryBar { pa, len_bytes })
}
