//! Checks that QEMU's Multiboot1 loader will load the kernel ELF correctly.
//!
//! Why this exists: QEMU refuses to load an x86-64 ELF as a Multiboot
//! kernel ("Cannot load x86-64 image, give a 32bit one"). A 64-bit kernel
//! therefore uses the *a.out kludge* (Multiboot spec 0.6.96 §3.1.3): header
//! flag bit 16 and the address fields tell the loader to copy the file
//! *flat* — one run of bytes from the file to `load_addr` — and to ignore
//! the ELF program headers. That copy is right only if the ELF's loadable
//! segments sit in the file in the same order and at the same distances as
//! in physical memory. A linker script change that breaks this still links,
//! and the kernel then fails in strange ways at boot; this check turns that
//! into a build error.
//!
//! What QEMU does (hw/i386/multiboot.c, `load_multiboot`): it scans the first
//! 8192 bytes at 4-byte steps for the magic with a valid checksum, then
//! copies `load_end_addr - load_addr` bytes (or up to the end of the file
//! when `load_end_addr` is 0) from file offset
//! `header_offset - (header_addr - load_addr)` to `load_addr`, zeroes up to
//! `bss_end_addr`, and puts the Multiboot information and the modules right
//! after that, page-aligned.
//!
//! The parsing is by hand, on a byte slice: it is 30 lines, and a pure
//! function of the file is easy to test on synthetic headers.

use std::fmt;

/// `magic` field of a Multiboot1 header.
pub const MAGIC: u32 = 0x1BAD_B002;
/// QEMU scans offsets below `8192 - 48` (room for a full 48-byte header).
const SCAN_LIMIT_BYTES: usize = 8192 - 48;
/// Header flag: the address fields are valid (the a.out kludge).
const FLAG_ADDRESSES: u32 = 1 << 16;

const PT_LOAD: u32 = 1;
const EM_X86_64: u16 = 62;

/// A loadable ELF segment (only the fields the check needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadSegment {
    pub offset: u64,
    pub paddr: u64,
    pub file_bytes: u64,
    pub mem_bytes: u64,
}

/// A Multiboot1 header found in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Offset of the magic in the file.
    pub offset: usize,
    pub flags: u32,
    pub header_addr: u32,
    pub load_addr: u32,
    pub load_end_addr: u32,
    pub bss_end_addr: u32,
    pub entry_addr: u32,
}

/// What the check established, for the build log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub header_offset: usize,
    pub load_segments: usize,
    pub load_addr: u64,
    /// End of what QEMU copies from the file.
    pub load_end_addr: u64,
    /// End of the zeroed memory (BSS) that follows.
    pub mem_end_addr: u64,
    pub entry_addr: u32,
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "header at file offset {:#x}, {} load segments, file copied to {:#x}..{:#x}, \
             zeroed to {:#x}, entry {:#x}",
            self.header_offset,
            self.load_segments,
            self.load_addr,
            self.load_end_addr,
            self.mem_end_addr,
            self.entry_addr
        )
    }
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// The `PT_LOAD` segments of a little-endian x86-64 ELF64 file
/// (field offsets from the System V gABI, ELF-64 Object File Format §3–4).
pub fn load_segments(elf: &[u8]) -> Result<Vec<LoadSegment>, String> {
    if elf.get(0..4) != Some(b"\x7fELF".as_slice()) {
        return Err("not an ELF file".to_string());
    }
    if elf.get(4) != Some(&2) || elf.get(5) != Some(&1) {
        return Err("not a little-endian ELF64 file".to_string());
    }
    if u16_at(elf, 0x12) != Some(EM_X86_64) {
        return Err("not an x86-64 ELF file".to_string());
    }
    let truncated = || "ELF program headers run past the end of the file".to_string();
    let ph_offset = u64_at(elf, 0x20).ok_or_else(truncated)? as usize;
    let ph_entry_bytes = u16_at(elf, 0x36).ok_or_else(truncated)? as usize;
    let ph_count = u16_at(elf, 0x38).ok_or_else(truncated)? as usize;
    if ph_entry_bytes < 56 {
        return Err(format!("ELF program header size {ph_entry_bytes} is below 56"));
    }
    let mut segments = Vec::new();
    for index in 0..ph_count {
        let at = ph_offset.checked_add(index * ph_entry_bytes).ok_or_else(truncated)?;
        if u32_at(elf, at).ok_or_else(truncated)? != PT_LOAD {
            continue;
        }
        let field = |delta| u64_at(elf, at + delta).ok_or_else(truncated);
        segments.push(LoadSegment {
            offset: field(8)?,
            paddr: field(24)?,
            file_bytes: field(32)?,
            mem_bytes: field(40)?,
        });
    }
    Ok(segments)
}

/// The first Multiboot1 header QEMU would accept: the magic at a 4-byte
/// aligned offset below the scan limit, with `magic + flags + checksum == 0`.
pub fn find_header(file: &[u8]) -> Result<Header, String> {
    let mut bad_checksum_at = None;
    for offset in (0..SCAN_LIMIT_BYTES.min(file.len())).step_by(4) {
        if u32_at(file, offset) != Some(MAGIC) {
            continue;
        }
        let (Some(flags), Some(checksum)) = (u32_at(file, offset + 4), u32_at(file, offset + 8)) else {
            continue;
        };
        if MAGIC.wrapping_add(flags).wrapping_add(checksum) != 0 {
            bad_checksum_at.get_or_insert(offset);
            continue;
        }
        let field = |delta| u32_at(file, offset + delta).unwrap_or(0);
        return Ok(Header {
            offset,
            flags,
            header_addr: field(12),
            load_addr: field(16),
            load_end_addr: field(20),
            bss_end_addr: field(24),
            entry_addr: field(28),
        });
    }
    Err(match bad_checksum_at {
        Some(offset) => format!(
            "the Multiboot magic {MAGIC:#x} at file offset {offset:#x} has a wrong checksum \
             (magic + flags + checksum must be 0 mod 2^32)"
        ),
        None => format!(
            "no Multiboot1 header: the magic {MAGIC:#x} must sit 4-byte aligned in the first \
             {SCAN_LIMIT_BYTES} bytes of the file (is the .multiboot section first in the linker script?)"
        ),
    })
}

/// The whole check: see the module documentation.
pub fn check_kernel(file: &[u8]) -> Result<Layout, String> {
    let mut segments: Vec<LoadSegment> = load_segments(file)?;
    // Segments with no file bytes (pure BSS) are not part of the copy.
    let mut with_data: Vec<LoadSegment> = segments.iter().copied().filter(|s| s.file_bytes > 0).collect();
    with_data.sort_by_key(|s| s.paddr);
    let Some(&first) = with_data.first() else {
        return Err("the ELF has no PT_LOAD segment with file contents".to_string());
    };
    for segment in &with_data {
        if segment.offset.wrapping_sub(first.offset) != segment.paddr.wrapping_sub(first.paddr) {
            return Err(format!(
                "PT_LOAD segments are not laid out in the file as in physical memory: the segment \
                 at paddr {:#x} is at file offset {:#x}, but a flat copy of the file would put \
                 offset {:#x} there (the first segment is at paddr {:#x}, file offset {:#x}); \
                 keep the linker script's sections in physical-address order with no gaps \
                 between their file images",
                segment.paddr,
                segment.offset,
                first.offset + (segment.paddr - first.paddr),
                first.paddr,
                first.offset
            ));
        }
        if segment.offset.saturating_add(segment.file_bytes) > file.len() as u64 {
            return Err(format!("the segment at paddr {:#x} runs past the end of the file", segment.paddr));
        }
    }

    let header = find_header(file)?;
    if header.flags & FLAG_ADDRESSES == 0 {
        return Err(format!(
            "the Multiboot header flags {:#x} lack bit 16 (the a.out kludge); QEMU refuses to \
             load an x86-64 ELF without it",
            header.flags
        ));
    }
    if header.header_addr < header.load_addr {
        return Err("the Multiboot header's header_addr is below load_addr".to_string());
    }
    let load_addr = u64::from(header.load_addr);
    // Where QEMU starts copying from, per load_multiboot().
    let copy_offset = (header.offset as u64)
        .checked_sub(u64::from(header.header_addr - header.load_addr))
        .ok_or("the Multiboot header's header_addr - load_addr exceeds its file offset")?;
    if load_addr != first.paddr || copy_offset != first.offset {
        return Err(format!(
            "QEMU would copy the file from offset {copy_offset:#x} to {load_addr:#x}, but the \
             first segment is at file offset {:#x} with paddr {:#x}; the header's load_addr \
             and header_addr must match the linker script",
            first.offset, first.paddr
        ));
    }
    let copy_bytes = if header.load_end_addr == 0 {
        (file.len() as u64).saturating_sub(copy_offset)
    } else {
        u64::from(header.load_end_addr)
            .checked_sub(load_addr)
            .ok_or("the Multiboot header's load_end_addr is below load_addr")?
    };
    let load_end_addr = load_addr + copy_bytes;
    if copy_offset + copy_bytes > file.len() as u64 {
        return Err(format!(
            "load_end_addr {:#x} asks QEMU to copy past the end of the file",
            header.load_end_addr
        ));
    }
    if let Some(cut) = with_data.iter().find(|s| s.paddr + s.file_bytes > load_end_addr) {
        return Err(format!(
            "load_end_addr {load_end_addr:#x} cuts off the segment at paddr {:#x}..{:#x}",
            cut.paddr,
            cut.paddr + cut.file_bytes
        ));
    }
    let mem_end_addr = if header.bss_end_addr == 0 { load_end_addr } else { u64::from(header.bss_end_addr) };
    if mem_end_addr < load_end_addr {
        return Err("the Multiboot header's bss_end_addr is below load_end_addr".to_string());
    }
    // QEMU places the boot information and the modules right after
    // bss_end_addr; a BSS reaching past it would be zeroed over them.
    segments.sort_by_key(|s| s.paddr);
    if let Some(over) = segments.iter().find(|s| s.paddr + s.mem_bytes > mem_end_addr) {
        return Err(format!(
            "the segment at paddr {:#x} ends at {:#x}, past bss_end_addr {mem_end_addr:#x}; QEMU \
             puts the Multiboot information and the modules there, so the kernel's BSS would \
             overwrite them (set bss_end_addr to the end of .bss)",
            over.paddr,
            over.paddr + over.mem_bytes
        ));
    }
    if !(load_addr..load_end_addr).contains(&u64::from(header.entry_addr)) {
        return Err(format!(
            "the entry address {:#x} is outside the loaded image {load_addr:#x}..{load_end_addr:#x}",
            header.entry_addr
        ));
    }
    Ok(Layout {
        header_offset: header.offset,
        load_segments: with_data.len(),
        load_addr,
        load_end_addr,
        mem_end_addr,
        entry_addr: header.entry_addr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PHDR_BYTES: usize = 56;

    /// A synthetic kernel: an ELF64 header, program headers right after it,
    /// segment contents at their offsets, and a Multiboot header.
    struct Fake {
        segments: Vec<LoadSegment>,
        header_at: usize,
        header: [u32; 8],
        file_bytes: usize,
    }

    /// The normal layout of the Ridgeback kernel: .boot at 1 MiB (file
    /// offset 0x1000), then .text/.rodata/.data following in both the file
    /// and physical memory, then a BSS-only segment.
    fn good() -> Fake {
        let flags = 0x0001_0003;
        Fake {
            segments: vec![
                LoadSegment { offset: 0x1000, paddr: 0x10_0000, file_bytes: 0x1000, mem_bytes: 0x1000 },
                LoadSegment { offset: 0x2000, paddr: 0x10_1000, file_bytes: 0x5000, mem_bytes: 0x5000 },
                LoadSegment { offset: 0x7000, paddr: 0x10_6000, file_bytes: 0x1000, mem_bytes: 0x1000 },
                LoadSegment { offset: 0x8000, paddr: 0x10_7000, file_bytes: 0, mem_bytes: 0x4000 },
            ],
            header_at: 0x1000,
            header: [
                MAGIC,
                flags,
                0u32.wrapping_sub(MAGIC).wrapping_sub(flags),
                0x10_0000, // header_addr
                0x10_0000, // load_addr
                0x10_7000, // load_end_addr
                0x10_b000, // bss_end_addr
                0x10_0020, // entry_addr
            ],
            file_bytes: 0x8000,
        }
    }

    impl Fake {
        fn bytes(&self) -> Vec<u8> {
            let mut file = vec![0u8; self.file_bytes];
            file[0..4].copy_from_slice(b"\x7fELF");
            file[4] = 2; // ELFCLASS64
            file[5] = 1; // ELFDATA2LSB
            file[0x12..0x14].copy_from_slice(&EM_X86_64.to_le_bytes());
            file[0x20..0x28].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
            file[0x36..0x38].copy_from_slice(&(PHDR_BYTES as u16).to_le_bytes());
            file[0x38..0x3a].copy_from_slice(&(self.segments.len() as u16).to_le_bytes());
            for (i, s) in self.segments.iter().enumerate() {
                let at = 64 + i * PHDR_BYTES;
                file[at..at + 4].copy_from_slice(&PT_LOAD.to_le_bytes());
                for (delta, value) in
                    [(8, s.offset), (16, s.paddr), (24, s.paddr), (32, s.file_bytes), (40, s.mem_bytes)]
                {
                    file[at + delta..at + delta + 8].copy_from_slice(&value.to_le_bytes());
                }
            }
            for (i, word) in self.header.iter().enumerate() {
                let at = self.header_at + 4 * i;
                file[at..at + 4].copy_from_slice(&word.to_le_bytes());
            }
            file
        }

        fn set_flags(&mut self, flags: u32) {
            self.header[1] = flags;
            self.header[2] = 0u32.wrapping_sub(MAGIC).wrapping_sub(flags);
        }
    }

    #[test]
    fn accepts_the_normal_layout() {
        let layout = check_kernel(&good().bytes()).unwrap();
        assert_eq!(layout.header_offset, 0x1000);
        assert_eq!(layout.load_segments, 3);
        assert_eq!(layout.load_addr, 0x10_0000);
        assert_eq!(layout.load_end_addr, 0x10_7000);
        assert_eq!(layout.mem_end_addr, 0x10_b000);
    }

    #[test]
    fn accepts_segments_listed_out_of_order_and_load_end_zero() {
        let mut fake = good();
        fake.segments.swap(0, 2);
        fake.header[5] = 0; // load_end_addr 0: copy to the end of the file
        check_kernel(&fake.bytes()).unwrap();
    }

    #[test]
    fn rejects_a_gap_between_file_images() {
        let mut fake = good();
        // .rodata placed one page further in the file than in memory.
        fake.segments[2].offset = 0x8000;
        fake.file_bytes = 0x9000;
        let err = check_kernel(&fake.bytes()).unwrap_err();
        assert!(err.contains("not laid out in the file as in physical memory"), "{err}");
        assert!(err.contains("0x106000"), "{err}");
    }

    #[test]
    fn rejects_segments_swapped_in_the_file() {
        let mut fake = good();
        fake.segments[1].offset = 0x3000;
        fake.segments[2].offset = 0x2000;
        assert!(check_kernel(&fake.bytes()).is_err());
    }

    #[test]
    fn rejects_a_missing_or_misplaced_header() {
        let mut fake = good();
        fake.header[0] = 0;
        assert!(check_kernel(&fake.bytes()).unwrap_err().contains("no Multiboot1 header"));

        // Not 4-byte aligned: QEMU never sees it.
        let mut fake = good();
        fake.header_at = 0x1002;
        assert!(check_kernel(&fake.bytes()).unwrap_err().contains("no Multiboot1 header"));

        // Beyond the first 8 KiB.
        let mut fake = good();
        fake.header_at = 0x2000;
        assert!(check_kernel(&fake.bytes()).unwrap_err().contains("no Multiboot1 header"));
    }

    #[test]
    fn rejects_a_bad_checksum() {
        let mut fake = good();
        fake.header[2] ^= 1;
        assert!(check_kernel(&fake.bytes()).unwrap_err().contains("checksum"));
    }

    #[test]
    fn rejects_a_header_without_the_aout_kludge() {
        let mut fake = good();
        fake.set_flags(0x3);
        assert!(check_kernel(&fake.bytes()).unwrap_err().contains("bit 16"));
    }

    #[test]
    fn rejects_addresses_that_disagree_with_the_elf() {
        let mut fake = good();
        fake.header[4] = 0x20_0000; // load_addr
        fake.header[3] = 0x20_0000; // header_addr
        assert!(check_kernel(&fake.bytes()).unwrap_err().contains("linker script"));

        let mut fake = good();
        fake.header[5] = 0x10_6800; // load_end_addr cuts .data
        assert!(check_kernel(&fake.bytes()).unwrap_err().contains("cuts off"));

        let mut fake = good();
        fake.header[6] = 0x10_8000; // bss_end_addr short of the BSS segment
        assert!(check_kernel(&fake.bytes()).unwrap_err().contains("past bss_end_addr"));

        let mut fake = good();
        fake.header[7] = 0x20_0000; // entry outside the image
        assert!(check_kernel(&fake.bytes()).unwrap_err().contains("entry address"));
    }

    #[test]
    fn rejects_non_elf64_x86_64() {
        assert!(check_kernel(b"not an elf").unwrap_err().contains("not an ELF"));
        let mut bytes = good().bytes();
        bytes[4] = 1; // ELFCLASS32
        assert!(check_kernel(&bytes).unwrap_err().contains("ELF64"));
        let mut bytes = good().bytes();
        bytes[0x12] = 3; // EM_386
        assert!(check_kernel(&bytes).unwrap_err().contains("x86-64"));
    }

    #[test]
    fn rejects_truncated_program_headers() {
        let bytes = good().bytes();
        assert!(load_segments(&bytes[..100]).unwrap_err().contains("past the end"));
    }
}
