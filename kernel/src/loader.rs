//! Starting a program from the boot image: check the ELF file, build an
//! address space with its segments, a stack and an argument page, and make
//! a ready process of it.
//!
//! Memory is filled eagerly here; demand paging by user-level pagers comes
//! with the message system.

use crate::arch::paging::{self, PAGE_BYTES};
use crate::arch::trap::TrapFrame;
use crate::bootinfo::Module;
use crate::memory::{AddressSpace, SpaceError};
use crate::process::State;
use crate::sched::Kernel;
use abi::layout::{USER_ARGS_ADDR, USER_STACK_BYTES, USER_STACK_TOP};
use abi::{Error, Pid};
use kernel_core::elf;

impl From<SpaceError> for Error {
    fn from(e: SpaceError) -> Error {
        match e {
            SpaceError::OutOfMemory => Error::OutOfResources,
            SpaceError::AlreadyMapped => Error::BadExecutable,
        }
    }
}

/// Build the address space for `program` (from `file`) with `args`.
fn build_space(file: &[u8], program: &elf::Program, args: &[u8]) -> Result<AddressSpace, Error> {
    let mut space = AddressSpace::new().ok_or(Error::OutOfResources)?;
    for seg in program.segments() {
        let mut page = seg.page_start();
        while page < seg.page_end() {
            let frame = space.map_new_page(page, seg.is_writable, seg.is_executable)?;
            // The part of the file that lands in this page.
            let lo = page.max(seg.vaddr);
            let hi = (page + PAGE_BYTES).min(seg.vaddr + seg.file_bytes);
            if lo < hi {
                let from = (seg.file_offset + (lo - seg.vaddr)) as usize;
                paging::copy_to_frame(frame, (lo - page) as usize, &file[from..from + (hi - lo) as usize]);
            }
            page += PAGE_BYTES;
        }
    }
    let mut page = USER_STACK_TOP - USER_STACK_BYTES;
    while page < USER_STACK_TOP {
        space.map_new_page(page, true, false)?;
        page += PAGE_BYTES;
    }
    let args_frame = space.map_new_page(USER_ARGS_ADDR, false, false)?;
    paging::copy_to_frame(args_frame, 0, args);
    Ok(space)
}

impl Kernel {
    /// Start `module` as a child of `parent` (none for init).
    pub fn spawn(
        &mut self,
        parent: Option<usize>,
        module: &Module,
        args: &[u8],
        priority: u8,
    ) -> Result<Pid, Error> {
        if args.len() as u64 > abi::layout::MAX_ARGS_BYTES || priority > abi::MAX_PRIORITY {
            return Err(Error::InvalidArgument);
        }
        let file = module.bytes();
        let program = elf::parse(file).map_err(|_| Error::BadExecutable)?;
        let slot = self.procs.iter().position(|p| p.state == State::Free).ok_or(Error::OutOfResources)?;
        let space = build_space(file, &program, args)?;
        let parent_pid = parent.map(|s| self.pid_of(s));
        let bootstrap = parent.map_or([(0, 0); abi::bootstrap::COUNT as usize], |s| self.procs[s].bootstrap);
        let p = &mut self.procs[slot];
        p.parent = parent_pid;
        p.priority = priority;
        p.base_priority = priority;
        p.space = Some(space);
        p.exit_status = 0;
        p.kill_requested = false;
        p.slice_ticks_left = 0;
        p.cpu_time_tsc = 0;
        p.set_name(module.name());
        p.bootstrap = bootstrap;
        p.io_ports = None;
        p.regions = [None; abi::pager::MAX_REGIONS];
        // As if `_start` had been called: rsp + 8 is 16-byte aligned at a
        // function's first instruction (System V ABI, x86-64 §3.2.2).
        let mut frame = TrapFrame::new_user(program.entry, USER_STACK_TOP - 8);
        frame.rdi = USER_ARGS_ADDR;
        frame.rsi = args.len() as u64;
        p.frame = frame;
        let pid = self.pid_of(slot);
        if self.verbose {
            crate::kprintln!("process {} ({:#x}) started", module.name(), pid.0);
        }
        self.make_ready(slot);
        Ok(pid)
    }
}
