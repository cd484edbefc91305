//! Program images: check an ELF file (from the boot image, or from a
//! server's memory for `proc_exec`) and build an address space with its
//! segments, a stack and an argument page, and the registers of its first
//! instruction. Making a process of it is lifecycle.rs's part.
//!
//! Memory is filled eagerly here; a program started with `proc_image`
//! instead gets only its stack and arguments, and its pager (the VM
//! manager) brings text and data in on demand.

use crate::arch::trap::TrapFrame;
use crate::memory::{AddressSpace, Pool, SpaceError};
use crate::usermem::UserSlice;
use abi::Error;
use abi::layout::{PAGE_SIZE, USER_ARGS_ADDR, USER_STACK_BYTES, USER_STACK_TOP};
use kernel_core::elf;

impl From<SpaceError> for Error {
    fn from(e: SpaceError) -> Error {
        match e {
            SpaceError::OutOfMemory => Error::OutOfResources,
            SpaceError::AlreadyMapped => Error::BadExecutable,
        }
    }
}

/// Where a program's file is: in the kernel (a boot module) or in another
/// process's memory (the monitor's buffer, for `proc_exec`).
pub enum ImageSource<'a> {
    Kernel(&'a [u8]),
    User { space: &'a AddressSpace, addr: u64, len: u64 },
}

impl ImageSource<'_> {
    fn len(&self) -> u64 {
        match self {
            ImageSource::Kernel(f) => f.len() as u64,
            ImageSource::User { len, .. } => *len,
        }
    }

    /// Copy file bytes `offset..offset + out.len()` (checked by the parser
    /// to lie inside the file).
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), Error> {
        match self {
            ImageSource::Kernel(f) => {
                out.copy_from_slice(&f[offset as usize..offset as usize + out.len()]);
                Ok(())
            }
            ImageSource::User { space, addr, len } => {
                UserSlice::new(*addr, *len)?.read_at(space, offset, out).map_err(|_| Error::BadAddress)
            }
        }
    }

    /// Parse the ELF headers (read from the file's first page).
    pub fn parse(&self) -> Result<elf::Program, Error> {
        match self {
            ImageSource::Kernel(f) => elf::parse(f).map_err(|_| Error::BadExecutable),
            ImageSource::User { .. } => {
                let mut head = [0u8; PAGE_SIZE as usize];
                let n = self.len().min(PAGE_SIZE) as usize;
                self.read(0, &mut head[..n])?;
                elf::parse_headers(&head[..n], self.len()).map_err(|_| Error::BadExecutable)
            }
        }
    }
}

/// Build the address space for `program` (from `file`) with `args`, its
/// frames from `pool`.
pub fn build_space(
    file: &ImageSource,
    program: &elf::Program,
    args: &[u8],
    pool: Pool,
) -> Result<AddressSpace, Error> {
    let mut space = AddressSpace::new_in(pool).ok_or(Error::OutOfResources)?;
    let mut buf = [0u8; PAGE_SIZE as usize];
    for seg in program.segments() {
        let mut page = seg.page_start();
        while page < seg.page_end() {
            space.map_new_page(page, seg.is_writable, seg.is_executable)?;
            // The part of the file that lands in this page.
            let lo = page.max(seg.vaddr);
            let hi = (page + PAGE_SIZE).min(seg.vaddr + seg.file_bytes);
            if lo < hi {
                let n = (hi - lo) as usize;
                file.read(seg.file_offset + (lo - seg.vaddr), &mut buf[..n])?;
                space.fill(page, (lo - page) as usize, &buf[..n])?;
            }
            page += PAGE_SIZE;
        }
    }
    add_stack_and_args(&mut space, args)?;
    Ok(space)
}

/// The stack and the read-only argument page every new image has.
pub fn add_stack_and_args(space: &mut AddressSpace, args: &[u8]) -> Result<(), Error> {
    let mut page = USER_STACK_TOP - USER_STACK_BYTES;
    while page < USER_STACK_TOP {
        space.map_new_page(page, true, false)?;
        page += PAGE_SIZE;
    }
    space.map_new_page(USER_ARGS_ADDR, false, false)?;
    space.fill(USER_ARGS_ADDR, 0, args)?;
    Ok(())
}

/// The registers of a program about to run its first instruction.
pub fn first_frame(entry: u64, args_len: usize) -> TrapFrame {
    // As if `_start` had been called: rsp + 8 is 16-byte aligned at a
    // function's first instruction (System V ABI, x86-64 §3.2.2).
    let mut frame = TrapFrame::new_user(entry, USER_STACK_TOP - 8);
    frame.set_start_args(USER_ARGS_ADDR, args_len as u64);
    frame
}
