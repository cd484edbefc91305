//! Just enough ACPI to find the CPUs and I/O APICs: the RSDP, the RSDT or
//! XSDT, and the MADT (ACPI 6.5 §5.2.5, §5.2.7, §5.2.8, §5.2.12).
//!
//! The caller supplies a function that reads physical memory; everything
//! here checks lengths and checksums and returns `None` rather than
//! trusting firmware bytes.

use crate::limits::MAX_CPUS;

/// What the MADT says about the machine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Madt {
    pub local_apic_phys: u64,
    pub cpu_apic_ids: [u32; MAX_CPUS],
    pub cpu_count: usize,
    /// CPUs listed but not kept because of MAX_CPUS.
    pub cpus_ignored: usize,
    pub io_apic_phys: u64,
    pub io_apic_gsi_base: u32,
    /// Interrupt source overrides for the 16 ISA lines: (gsi, level, active_low).
    pub isa_override: [Option<(u32, bool, bool)>; 16],
}

fn checksum_ok(bytes: &[u8]) -> bool {
    bytes.iter().fold(0u8, |a, b| a.wrapping_add(*b)) == 0
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Find the RSDP in a memory area (the EBDA's first KiB or 0xE0000..0x100000)
/// and return the physical address of the root table and whether it is an
/// XSDT (64-bit entries).
pub fn find_root(area: &[u8]) -> Option<(u64, bool)> {
    let mut at = 0;
    while at + 20 <= area.len() {
        let c = &area[at..];
        if c.starts_with(b"RSD PTR ") && checksum_ok(&c[..20]) {
            let revision = c[15];
            if revision >= 2 && c.len() >= 36 && checksum_ok(&c[..36]) {
                let xsdt = u64_at(c, 24)?;
                if xsdt != 0 {
                    return Some((xsdt, true));
                }
            }
            return Some((u32_at(c, 16)? as u64, false));
        }
        at += 16;
    }
    None
}

/// Validate a table header and return its full length.
pub fn table_len(header: &[u8]) -> Option<usize> {
    let len = u32_at(header, 4)? as usize;
    (len >= 36).then_some(len)
}

/// Given the root table's bytes, list the physical addresses of its tables.
pub fn root_entries(root: &[u8], is_xsdt: bool) -> impl Iterator<Item = u64> + '_ {
    let ok = checksum_ok(root) && root.len() >= 36;
    let width = if is_xsdt { 8 } else { 4 };
    let count = if ok { (root.len() - 36) / width } else { 0 };
    (0..count).filter_map(move |i| {
        let at = 36 + i * width;
        if is_xsdt { u64_at(root, at) } else { u32_at(root, at).map(u64::from) }
    })
}

/// Parse a MADT ("APIC" table) whose full bytes are given.
pub fn parse_madt(table: &[u8]) -> Option<Madt> {
    if !table.starts_with(b"APIC") || table.len() < 44 || !checksum_ok(table) {
        return None;
    }
    let mut madt = Madt { local_apic_phys: u32_at(table, 36)? as u64, ..Madt::default() };
    let mut at = 44;
    while at + 2 <= table.len() {
        let kind = table[at];
        let len = table[at + 1] as usize;
        if len < 2 || at + len > table.len() {
            break;
        }
        let e = &table[at..at + len];
        match (kind, len) {
            // Processor local APIC: enabled (bit 0) or online-capable (bit 1).
            (0, 8..) => {
                let flags = u32_at(e, 4)?;
                if flags & 3 != 0 {
                    if madt.cpu_count < MAX_CPUS {
                        madt.cpu_apic_ids[madt.cpu_count] = e[3] as u32;
                        madt.cpu_count += 1;
                    } else {
                        madt.cpus_ignored += 1;
                    }
                }
            }
            // I/O APIC: keep the first (QEMU has one).
            (1, 12..) if madt.io_apic_phys == 0 => {
                madt.io_apic_phys = u32_at(e, 4)? as u64;
                madt.io_apic_gsi_base = u32_at(e, 8)?;
            }
            // Interrupt source override.
            (2, 10..) => {
                let source = e[3] as usize;
                let gsi = u32_at(e, 4)?;
                let flags = u16::from_le_bytes([e[8], e[9]]);
                let active_low = flags & 3 == 3;
                let level = (flags >> 2) & 3 == 3;
                if source < 16 {
                    madt.isa_override[source] = Some((gsi, level, active_low));
                }
            }
            // Local APIC address override.
            (5, 12..) => madt.local_apic_phys = u64_at(e, 4)?,
            _ => {}
        }
        at += len;
    }
    Some(madt)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    fn fix_checksum(t: &mut [u8], at: usize) {
        t[at] = 0;
        let sum = t.iter().fold(0u8, |a, b| a.wrapping_add(*b));
        t[at] = 0u8.wrapping_sub(sum);
    }

    fn madt(entries: &[&[u8]]) -> Vec<u8> {
        let mut t = std::vec![0u8; 44];
        t[0..4].copy_from_slice(b"APIC");
        t[36..40].copy_from_slice(&0xfee0_0000u32.to_le_bytes());
        for e in entries {
            t.extend_from_slice(e);
        }
        let len = t.len() as u32;
        t[4..8].copy_from_slice(&len.to_le_bytes());
        fix_checksum(&mut t, 9);
        t
    }

    #[test]
    fn cpus_ioapic_and_overrides() {
        let t = madt(&[
            &[0, 8, 0, 0, 1, 0, 0, 0],
            &[0, 8, 1, 1, 1, 0, 0, 0],
            &[0, 8, 2, 5, 0, 0, 0, 0], // disabled
            &[1, 12, 0, 0, 0, 0, 0xc0, 0xfe, 0, 0, 0, 0],
            &[2, 10, 0, 0, 2, 0, 0, 0, 0, 0],
            &[2, 10, 0, 9, 9, 0, 0, 0, 0x0f, 0],
        ]);
        let m = parse_madt(&t).unwrap();
        assert_eq!(m.cpu_count, 2);
        assert_eq!(&m.cpu_apic_ids[..2], &[0, 1]);
        assert_eq!(m.io_apic_phys, 0xfec0_0000);
        assert_eq!(m.isa_override[0], Some((2, false, false)));
        assert_eq!(m.isa_override[9], Some((9, true, true)));
    }

    #[test]
    fn bad_tables_are_refused_or_cut_short() {
        let mut t = madt(&[&[0, 8, 0, 0, 1, 0, 0, 0]]);
        t[20] ^= 1;
        assert!(parse_madt(&t).is_none(), "bad checksum");
        // An entry claiming to run past the end stops the walk.
        let t = madt(&[&[0, 8, 0, 0, 1, 0, 0, 0], &[0, 200, 1, 1, 1, 0, 0, 0]]);
        assert_eq!(parse_madt(&t).unwrap().cpu_count, 1);
        // A zero-length entry does not loop for ever.
        let t = madt(&[&[0, 0, 0, 0]]);
        assert_eq!(parse_madt(&t).unwrap().cpu_count, 0);
    }

    #[test]
    fn rsdp_is_found_on_a_16_byte_boundary() {
        let mut area = std::vec![0u8; 256];
        let r = &mut area[32..52];
        r[0..8].copy_from_slice(b"RSD PTR ");
        r[16..20].copy_from_slice(&0x07fe_1000u32.to_le_bytes());
        fix_checksum(&mut area[32..52], 8);
        assert_eq!(find_root(&area), Some((0x07fe_1000, false)));
        assert_eq!(find_root(&[0u8; 64]), None);
    }
}
