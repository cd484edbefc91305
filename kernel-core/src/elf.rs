//! Checks that a user program is an ELF64 x86-64 executable the kernel can
//! load, and lists its loadable segments.
//!
//! The parser is written out here rather than taken from a crate because it
//! faces untrusted bytes and must never panic: every offset is bounds-checked
//! and every sum is checked for overflow (the host tests feed it truncated
//! and corrupted files). Only what loading needs is read (System V ABI,
//! ELF-64 Object File Format 1.5: the file header and program headers).

use crate::limits::MAX_LOAD_SEGMENTS;
use abi::layout::{PAGE_SIZE, USER_MIN, USER_STACK_BYTES, USER_STACK_TOP};

/// One PT_LOAD segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u64,
    pub mem_bytes: u64,
    pub file_offset: u64,
    pub file_bytes: u64,
    pub is_writable: bool,
    pub is_executable: bool,
}

impl Segment {
    /// First page address covered.
    pub fn page_start(&self) -> u64 {
        self.vaddr & !(PAGE_SIZE - 1)
    }
    /// One past the last page address covered.
    pub fn page_end(&self) -> u64 {
        (self.vaddr + self.mem_bytes).div_ceil(PAGE_SIZE) * PAGE_SIZE
    }
}

/// A checked program: entry point and segments.
#[derive(Clone, Copy, Debug)]
pub struct Program {
    pub entry: u64,
    pub segments: [Segment; MAX_LOAD_SEGMENTS],
    pub segment_count: usize,
}

impl Program {
    pub fn segments(&self) -> &[Segment] {
        &self.segments[..self.segment_count]
    }
}

/// Why a file was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfError {
    TooShort,
    NotElf,
    Not64Bit,
    NotLittleEndian,
    NotExecutable,
    NotX86_64,
    BadProgramHeaders,
    TooManySegments,
    /// A segment's file bytes lie outside the file, or file size > memory size.
    SegmentOutsideFile,
    /// A segment lies outside the user range or overlaps the stack area.
    SegmentOutsideUserSpace,
    SegmentsOverlap,
    /// The entry point is not inside an executable segment.
    BadEntry,
}

const PT_LOAD: u32 = 1;
const PF_X: u32 = 1;
const PF_W: u32 = 2;
const ET_EXEC: u16 = 2;
const EM_X86_64: u16 = 62;
const EHDR_BYTES: usize = 64;
const PHDR_BYTES: usize = 56;

fn read<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}
fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    read(b, at).map(u16::from_le_bytes)
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    read(b, at).map(u32::from_le_bytes)
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    read(b, at).map(u64::from_le_bytes)
}

/// The lowest address the user stack area (stack, its guard page, and the
/// argument page above it) may start at; program segments must end below.
pub const STACK_AREA_START: u64 = USER_STACK_TOP - USER_STACK_BYTES - PAGE_SIZE;

/// Check `file` and list its segments.
pub fn parse(file: &[u8]) -> Result<Program, ElfError> {
    parse_headers(file, file.len() as u64)
}

/// As [`parse`], from the file's first bytes `head` (which must hold the
/// ELF header and the program headers) and its whole length: for a file
/// that stays in another address space while it is loaded.
pub fn parse_headers(file: &[u8], file_len: u64) -> Result<Program, ElfError> {
    if file.len() < EHDR_BYTES {
        return Err(ElfError::TooShort);
    }
    if file[0..4] != *b"\x7fELF" {
        return Err(ElfError::NotElf);
    }
    if file[4] != 2 {
        return Err(ElfError::Not64Bit);
    }
    if file[5] != 1 {
        return Err(ElfError::NotLittleEndian);
    }
    let bad = ElfError::BadProgramHeaders;
    if u16_at(file, 16).ok_or(bad)? != ET_EXEC {
        return Err(ElfError::NotExecutable);
    }
    if u16_at(file, 18).ok_or(bad)? != EM_X86_64 {
        return Err(ElfError::NotX86_64);
    }
    let entry = u64_at(file, 24).ok_or(bad)?;
    let phoff = u64_at(file, 32).ok_or(bad)?;
    let phentsize = u16_at(file, 54).ok_or(bad)? as usize;
    let phnum = u16_at(file, 56).ok_or(bad)? as usize;
    if phentsize < PHDR_BYTES {
        return Err(bad);
    }
    let mut program = Program { entry, segments: [Segment::default(); MAX_LOAD_SEGMENTS], segment_count: 0 };
    for i in 0..phnum {
        let at =
            usize::try_from(phoff).ok().and_then(|o| o.checked_add(i.checked_mul(phentsize)?)).ok_or(bad)?;
        let ph = file.get(at..at.checked_add(PHDR_BYTES).ok_or(bad)?).ok_or(bad)?;
        if u32_at(ph, 0).ok_or(bad)? != PT_LOAD {
            continue;
        }
        let flags = u32_at(ph, 4).ok_or(bad)?;
        let seg = Segment {
            file_offset: u64_at(ph, 8).ok_or(bad)?,
            vaddr: u64_at(ph, 16).ok_or(bad)?,
            file_bytes: u64_at(ph, 32).ok_or(bad)?,
            mem_bytes: u64_at(ph, 40).ok_or(bad)?,
            is_writable: flags & PF_W != 0,
            is_executable: flags & PF_X != 0,
        };
        if seg.mem_bytes == 0 {
            continue;
        }
        let file_end = seg.file_offset.checked_add(seg.file_bytes);
        if seg.file_bytes > seg.mem_bytes || file_end.is_none_or(|e| e > file_len) {
            return Err(ElfError::SegmentOutsideFile);
        }
        let mem_end = seg.vaddr.checked_add(seg.mem_bytes);
        if seg.vaddr < USER_MIN || mem_end.is_none_or(|e| e > STACK_AREA_START) {
            return Err(ElfError::SegmentOutsideUserSpace);
        }
        if program.segment_count == MAX_LOAD_SEGMENTS {
            return Err(ElfError::TooManySegments);
        }
        // Page-granular overlap: two segments may not share a page, since
        // each page gets one set of permissions.
        if program
            .segments()
            .iter()
            .any(|s| s.page_start() < seg.page_end() && seg.page_start() < s.page_end())
        {
            return Err(ElfError::SegmentsOverlap);
        }
        program.segments[program.segment_count] = seg;
        program.segment_count += 1;
    }
    let entry_ok = program
        .segments()
        .iter()
        .any(|s| s.is_executable && (s.vaddr..s.vaddr + s.mem_bytes).contains(&entry));
    if !entry_ok {
        return Err(ElfError::BadEntry);
    }
    Ok(program)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    /// Build a minimal ELF with the given (vaddr, mem, file, flags) segments.
    fn build(entry: u64, segs: &[(u64, u64, u64, u32)]) -> Vec<u8> {
        let phoff = 64u64;
        let data_off = phoff + (segs.len() * PHDR_BYTES) as u64;
        let mut f = std::vec![0u8; data_off as usize];
        f[0..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[6] = 1;
        f[16..18].copy_from_slice(&ET_EXEC.to_le_bytes());
        f[18..20].copy_from_slice(&EM_X86_64.to_le_bytes());
        f[24..32].copy_from_slice(&entry.to_le_bytes());
        f[32..40].copy_from_slice(&phoff.to_le_bytes());
        f[54..56].copy_from_slice(&(PHDR_BYTES as u16).to_le_bytes());
        f[56..58].copy_from_slice(&(segs.len() as u16).to_le_bytes());
        let mut off = data_off;
        for (i, &(vaddr, mem, file, flags)) in segs.iter().enumerate() {
            let p = 64 + i * PHDR_BYTES;
            f[p..p + 4].copy_from_slice(&PT_LOAD.to_le_bytes());
            f[p + 4..p + 8].copy_from_slice(&flags.to_le_bytes());
            f[p + 8..p + 16].copy_from_slice(&off.to_le_bytes());
            f[p + 16..p + 24].copy_from_slice(&vaddr.to_le_bytes());
            f[p + 32..p + 40].copy_from_slice(&file.to_le_bytes());
            f[p + 40..p + 48].copy_from_slice(&mem.to_le_bytes());
            off += file;
        }
        f.resize(off as usize, 0xcc);
        f
    }

    #[test]
    fn a_good_program_parses() {
        let f = build(
            0x201000,
            &[(0x200000, 0x100, 0x100, 4), (0x201000, 0x2000, 0x1800, 5), (0x204000, 0x3000, 0x10, 6)],
        );
        let p = parse(&f).unwrap();
        assert_eq!(p.entry, 0x201000);
        assert_eq!(p.segments().len(), 3);
        assert!(p.segments()[2].is_writable);
        assert_eq!(p.segments()[1].page_end(), 0x203000);
    }

    #[test]
    fn bad_files_are_refused() {
        let ok = build(0x201000, &[(0x201000, 0x1000, 0x10, 5)]);
        assert_eq!(parse(&ok[..10]).unwrap_err(), ElfError::TooShort);
        let mut f = ok.clone();
        f[0] = 0;
        assert_eq!(parse(&f).unwrap_err(), ElfError::NotElf);
        let mut f = ok.clone();
        f[18] = 3;
        assert_eq!(parse(&f).unwrap_err(), ElfError::NotX86_64);
        let mut f = ok.clone();
        f[16] = 3;
        assert_eq!(parse(&f).unwrap_err(), ElfError::NotExecutable);
        assert_eq!(parse(&build(0x500000, &[(0x201000, 0x1000, 0x10, 5)])).unwrap_err(), ElfError::BadEntry);
        assert_eq!(parse(&build(0x201000, &[(0x201000, 0x1000, 0x10, 6)])).unwrap_err(), ElfError::BadEntry);
        assert_eq!(
            parse(&build(0x0, &[(0x0, 0x1000, 0x10, 5)])).unwrap_err(),
            ElfError::SegmentOutsideUserSpace
        );
        assert_eq!(
            parse(&build(0xffff_8000_0000_0000, &[(0xffff_8000_0000_0000, 0x1000, 0x10, 5)])).unwrap_err(),
            ElfError::SegmentOutsideUserSpace
        );
        assert_eq!(
            parse(&build(0x201000, &[(0x201000, 0x10, 0x20, 5)])).unwrap_err(),
            ElfError::SegmentOutsideFile
        );
        assert_eq!(
            parse(&build(0x201000, &[(0x201000, 0x2000, 0x10, 5), (0x202800, 0x10, 0x10, 6)])).unwrap_err(),
            ElfError::SegmentsOverlap
        );
        // A segment whose end wraps around the address space.
        assert_eq!(
            parse(&build(0x201000, &[(0x201000, u64::MAX, 0x10, 5)])).unwrap_err(),
            ElfError::SegmentOutsideUserSpace
        );
    }

    #[test]
    fn program_headers_outside_the_file_are_refused() {
        let mut f = build(0x201000, &[(0x201000, 0x1000, 0x10, 5)]);
        f[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(parse(&f).unwrap_err(), ElfError::BadProgramHeaders);
        let mut f = build(0x201000, &[(0x201000, 0x1000, 0x10, 5)]);
        f[56..58].copy_from_slice(&1000u16.to_le_bytes());
        assert_eq!(parse(&f).unwrap_err(), ElfError::BadProgramHeaders);
    }

    #[test]
    fn corrupted_files_never_panic() {
        // Flip every byte of the headers of a good file in turn, and cut the
        // file at every length: parse must return, never panic.
        let good = build(0x201000, &[(0x200000, 0x100, 0x100, 4), (0x201000, 0x2000, 0x100, 5)]);
        for i in 0..(64 + 2 * PHDR_BYTES) {
            for v in [0u8, 0xff, 0x80, 1] {
                let mut f = good.clone();
                f[i] = v;
                let _ = parse(&f);
            }
        }
        for len in 0..good.len() {
            let _ = parse(&good[..len]);
        }
    }
}
