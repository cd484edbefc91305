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
use crate::usermem::UserSlice;
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
    fn parse(&self) -> Result<elf::Program, Error> {
        match self {
            ImageSource::Kernel(f) => elf::parse(f).map_err(|_| Error::BadExecutable),
            ImageSource::User { .. } => {
                let mut head = [0u8; PAGE_BYTES as usize];
                let n = self.len().min(PAGE_BYTES) as usize;
                self.read(0, &mut head[..n])?;
                elf::parse_headers(&head[..n], self.len()).map_err(|_| Error::BadExecutable)
            }
        }
    }
}

/// Build the address space for `program` (from `file`) with `args`.
fn build_space(file: &ImageSource, program: &elf::Program, args: &[u8]) -> Result<AddressSpace, Error> {
    let mut space = AddressSpace::new().ok_or(Error::OutOfResources)?;
    let mut buf = [0u8; PAGE_BYTES as usize];
    for seg in program.segments() {
        let mut page = seg.page_start();
        while page < seg.page_end() {
            let frame = space.map_new_page(page, seg.is_writable, seg.is_executable)?;
            // The part of the file that lands in this page.
            let lo = page.max(seg.vaddr);
            let hi = (page + PAGE_BYTES).min(seg.vaddr + seg.file_bytes);
            if lo < hi {
                let n = (hi - lo) as usize;
                file.read(seg.file_offset + (lo - seg.vaddr), &mut buf[..n])?;
                paging::copy_to_frame(frame, (lo - page) as usize, &buf[..n]);
            }
            page += PAGE_BYTES;
        }
    }
    add_stack_and_args(&mut space, args)?;
    Ok(space)
}

/// The stack and the read-only argument page every new image has.
fn add_stack_and_args(space: &mut AddressSpace, args: &[u8]) -> Result<(), Error> {
    let mut page = USER_STACK_TOP - USER_STACK_BYTES;
    while page < USER_STACK_TOP {
        space.map_new_page(page, true, false)?;
        page += PAGE_BYTES;
    }
    let args_frame = space.map_new_page(USER_ARGS_ADDR, false, false)?;
    paging::copy_to_frame(args_frame, 0, args);
    Ok(())
}

/// The registers of a program about to run its first instruction.
fn first_frame(entry: u64, args_len: usize) -> TrapFrame {
    // As if `_start` had been called: rsp + 8 is 16-byte aligned at a
    // function's first instruction (System V ABI, x86-64 §3.2.2).
    let mut frame = TrapFrame::new_user(entry, USER_STACK_TOP - 8);
    frame.rdi = USER_ARGS_ADDR;
    frame.rsi = args_len as u64;
    frame
}

impl Kernel {
    /// Start `module` as a child of `parent` (none for init).
    pub fn spawn(
        &mut self,
        parent: Option<usize>,
        module: &Module,
        args: &[u8],
        priority: u8,
        rights: u64,
    ) -> Result<Pid, Error> {
        if args.len() as u64 > abi::layout::MAX_ARGS_BYTES || priority > abi::MAX_PRIORITY {
            return Err(Error::InvalidArgument);
        }
        let file = ImageSource::Kernel(module.bytes());
        let program = file.parse()?;
        let slot = self.free_slot_index()?;
        let space = build_space(&file, &program, args)?;
        self.claim_slot(slot, parent, space, priority, module.name());
        let p = &mut self.procs[slot];
        p.rights = rights;
        p.frame = first_frame(program.entry, args.len());
        let pid = self.pid_of(slot);
        if self.verbose {
            crate::kprintln!("process {} ({:#x}) started", module.name(), pid.0);
        }
        self.make_ready(slot);
        Ok(pid)
    }

    /// A free process-table slot.
    pub fn free_slot_index(&self) -> Result<usize, Error> {
        self.procs.iter().position(|p| p.state == State::Free).ok_or(Error::OutOfResources)
    }

    /// Fill the record of free `slot` for a new child of `parent` (none for
    /// init): everything starts afresh except what a child inherits
    /// (bootstrap connections). The caller sets registers and state.
    pub fn claim_slot(
        &mut self,
        slot: usize,
        parent: Option<usize>,
        space: AddressSpace,
        priority: u8,
        name: &str,
    ) {
        let parent_pid = parent.map(|s| self.pid_of(s));
        let bootstrap = parent.map_or([(0, 0); abi::bootstrap::COUNT as usize], |s| self.procs[s].bootstrap);
        let p = &mut self.procs[slot];
        p.parent = parent_pid;
        p.priority = priority;
        p.base_priority = priority;
        p.space = Some(space);
        p.qseg = None;
        p.exit_status = 0;
        p.kill_requested = false;
        p.slice_ticks_left = 0;
        p.cpu_time_tsc = 0;
        p.set_name(name);
        p.bootstrap = bootstrap;
        p.io_ports = None;
        p.regions = [None; abi::pager::MAX_REGIONS];
        p.rights = 0;
        p.exit_queue = None;
        p.state = State::Stopped;
    }

    /// Replace the image of `slot` (stopped, or waiting in a call that its
    /// caller will never answer) with the ELF file at `addr..addr + len` in
    /// the address space of `from`; it stays stopped until `proc_start`.
    pub fn exec_from_user(
        &mut self,
        slot: usize,
        from: usize,
        addr: u64,
        len: u64,
        args: &[u8],
        name: &str,
    ) -> Result<(), Error> {
        if len > abi::layout::MAX_EXEC_BYTES || args.len() as u64 > abi::layout::MAX_ARGS_BYTES {
            return Err(Error::InvalidArgument);
        }
        let (program, space) = {
            let src = self.procs[from].space.as_ref().ok_or(Error::NoSuchProcess)?;
            let file = ImageSource::User { space: src, addr, len };
            let program = file.parse()?;
            (program, build_space(&file, &program, args)?)
        };
        self.replace_image(slot, from, space, program.entry, args.len(), name);
        Ok(())
    }

    /// As [`Kernel::exec_from_user`] with no program: the new space holds
    /// the stack and arguments only, and the registers start at `entry`;
    /// text and data come from the pager the caller then sets (`proc_image`).
    pub fn image_from_user(
        &mut self,
        slot: usize,
        from: usize,
        entry: u64,
        args: &[u8],
        name: &str,
    ) -> Result<(), Error> {
        if args.len() as u64 > abi::layout::MAX_ARGS_BYTES
            || !(abi::layout::USER_MIN..USER_STACK_TOP).contains(&entry)
        {
            return Err(Error::InvalidArgument);
        }
        let mut space = AddressSpace::new().ok_or(Error::OutOfResources)?;
        add_stack_and_args(&mut space, args)?;
        self.replace_image(slot, from, space, entry, args.len(), name);
        Ok(())
    }

    /// Give `slot` the new address space `space`, stopped at `entry`. The
    /// old image's queues, links, pager regions and calls go, as when a
    /// process ends (its call to `from` is never answered); its identity,
    /// parent and bootstrap connections stay.
    fn replace_image(
        &mut self,
        slot: usize,
        from: usize,
        space: AddressSpace,
        entry: u64,
        args_len: usize,
        name: &str,
    ) {
        let pid = self.pid_of(slot);
        self.ipc_cleanup(slot, pid);
        self.procs[from].replies.forget_caller(pid);
        self.procs[slot].regions = [None; abi::pager::MAX_REGIONS];
        let old = self.procs[slot].space.replace(space);
        if let Some(old) = old {
            self.retire_space(old);
        }
        let p = &mut self.procs[slot];
        p.qseg = None;
        p.set_name(name);
        p.frame = first_frame(entry, args_len);
        p.state = State::Stopped;
    }
}
