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

/// Write `width` bytes at `offset` (a read-modify-write of the dword).
pub fn config_write(address: PciAddress, offset: u64, width: u64, value: u32) -> Result<(), ConfigError> {
    let (offset, width) = check_access(offset, width)?;
    if !is_writable_register(offset, width) {
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
    if command_status & STATUS_CAPABILITIES_LIST == 0 {
        return;
    }
    let mut pointer = (read_dword(address, CAPABILITIES_POINTER) & 0xfc) as u8;
    for _ in 0..MAX_CAPABILITIES {
        if pointer < 0x40 {
            break; // the end of the list (0), or a pointer into the header
        }
        let header = read_dword(address, pointer);
        match header & 0xff {
            CAPABILITY_MSI if header & MSI_ENABLE != 0 => write_dword(address, pointer, header & !MSI_ENABLE),
            CAPABILITY_MSI_X if header & MSI_X_ENABLE != 0 => {
                write_dword(address, pointer, header & !MSI_X_ENABLE)
            }
            _ => {}
        }
        pointer = ((header >> 8) & 0xfc) as u8;
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
