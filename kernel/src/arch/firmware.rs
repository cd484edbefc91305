//! What the firmware says about the machine: the ACPI MADT (ACPI 6.5
//! §5.2.12) gives the CPUs, the I/O APIC and the ISA interrupt overrides.
//!
//! The tables are parsed by `kernel_core::acpi` (pure code, host-tested);
//! this module only finds and reads them, and it reads only memory that
//! is firmware's: the BIOS data area and ROM window below 1 MiB, and
//! tables outside the RAM the frame allocator manages
//! ([`super::paging::is_firmware_memory`]), so no read can race a write
//! of the kernel's.

use super::apic::IoApic;
use super::paging::is_firmware_memory;
use super::phys::phys_slice;
use kernel_core::acpi::{self, Madt};

/// The machine as the firmware describes it.
pub struct Platform {
    pub madt: Madt,
    /// The I/O APIC, when there is one at an address that is not RAM.
    pub io_apic: Option<IoApic>,
    /// Why the tables could not be used, when they could not.
    pub warning: Option<&'static str>,
}

/// The BIOS data area's word at 0x40e: the EBDA's segment.
const EBDA_POINTER_PHYS: u64 = 0x40e;
/// The read-only BIOS ROM window searched for the RSDP (ACPI 6.5 §5.2.5.1).
const BIOS_ROM: (u64, usize) = (0xe0000, 0x20000);

/// A firmware table's bytes, or None when the range is not firmware's.
fn firmware_slice(pa: u64, len: usize) -> Option<&'static [u8]> {
    if !is_firmware_memory(pa, len as u64) {
        return None;
    }
    // SAFETY: outside every frame the allocator may hand out (checked
    // above) and below 4 GiB, so mapped by the direct map and never written
    // by the kernel.
    Some(unsafe { phys_slice(pa, len) })
}

/// Find the MADT and, from it, the I/O APIC. Runs once at boot; a machine
/// without usable tables runs on the boot CPU with no device interrupts.
pub fn discover() -> Platform {
    let (madt, warning) = match find_madt() {
        Ok(madt) => (madt, None),
        Err(why) => (Madt::default(), Some(why)),
    };
    let io_apic = (madt.io_apic_phys != 0 && is_firmware_memory(madt.io_apic_phys, 0x20))
        .then(|| IoApic::at(madt.io_apic_phys));
    Platform { madt, io_apic, warning }
}

fn find_madt() -> Result<Madt, &'static str> {
    // The RSDP is in the first KiB of the EBDA or in the BIOS ROM window
    // (ACPI 6.5 §5.2.5.1).
    // SAFETY: the BIOS data area below 1 MiB is reserved from the frame
    // allocator (boot.rs) and only the firmware wrote it.
    let ebda_segment = unsafe { phys_slice(EBDA_POINTER_PHYS, 2) };
    let ebda = (u16::from_le_bytes([ebda_segment[0], ebda_segment[1]]) as u64) << 4;
    let root = [(ebda, 1024), BIOS_ROM]
        .iter()
        .filter(|(base, _)| *base != 0)
        .filter_map(|&(base, len)| low_bios_slice(base, len))
        .find_map(acpi::find_root);
    let (root_pa, is_xsdt) = root.ok_or("no ACPI tables; running on the boot CPU only")?;
    let table = |pa: u64| {
        let header = firmware_slice(pa, 36)?;
        firmware_slice(pa, acpi::table_len(header)?)
    };
    table(root_pa)
        .into_iter()
        .flat_map(|root| acpi::root_entries(root, is_xsdt))
        .filter_map(table)
        .find(|t| t.starts_with(b"APIC"))
        .and_then(acpi::parse_madt)
        .ok_or("no usable MADT; running on the boot CPU only")
}

/// A range of the BIOS area below 1 MiB (the EBDA or the ROM window), which
/// the frame allocator never hands out, and which holds no page the kernel
/// writes (the SMP trampoline's page is below it).
fn low_bios_slice(base: u64, len: usize) -> Option<&'static [u8]> {
    let end = base.checked_add(len as u64)?;
    if base < 0x8_0000 || end > 0x10_0000 {
        return None;
    }
    // SAFETY: inside 512 KiB..1 MiB, reserved from the allocator (boot.rs)
    // and written by nobody but the firmware.
    Some(unsafe { phys_slice(base, len) })
}
