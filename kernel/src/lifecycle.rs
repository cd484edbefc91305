//! Kernel calls with which servers build processes: the user monitor makes
//! UNIX processes with them (`proc_create`, `proc_fork`, `proc_exec`,
//! `proc_start`, `set_exit_queue`), the VM manager copies address spaces
//! (`space_copy`), and the directory manager reads the boot image
//! (`module_info`, `module_read`).
//!
//! The kernel keeps only mechanism here: who is a child of whom, which
//! registers and mappings a copy gets. Policy (UNIX process ids, file
//! descriptors, permissions) lives in the servers (Ridge OS §3).
//!
//! Rights: a process controls its own children; copying any address
//! space needs `abi::rights::MEMORY`, reading modules `abi::rights::MODULES`.

use crate::memory::AddressSpace;
use crate::process::{Blocked, State};
use crate::sched::Kernel;
use crate::usermem::UserSlice;
use abi::{Error, Pid, rights};
use kernel_core::limits::MAX_PROCESS_NAME_BYTES;

impl Kernel {
    /// The slot of `pid` if it is a child of the process in `slot`.
    fn child_slot(&self, slot: usize, pid: u64) -> Result<usize, Error> {
        let child = self.slot_of(Pid(pid)).ok_or(Error::NoSuchProcess)?;
        if self.procs[child].parent != Some(self.pid_of(slot)) {
            return Err(Error::PermissionDenied);
        }
        Ok(child)
    }

    fn read_name(
        &self,
        slot: usize,
        ptr: u64,
        len: u64,
    ) -> Result<([u8; MAX_PROCESS_NAME_BYTES], usize), Error> {
        let mut name = [0u8; MAX_PROCESS_NAME_BYTES];
        let n = (len as usize).min(MAX_PROCESS_NAME_BYTES);
        let space = self.procs[slot].space.as_ref().ok_or(Error::NoSuchProcess)?;
        UserSlice::new(ptr, n as u64)?.read(space, &mut name[..n])?;
        let n = name[..n].iter().position(|&b| b == 0).unwrap_or(n);
        Ok((name, n))
    }

    pub fn sys_proc_create(&mut self, slot: usize, name_ptr: u64, name_len: u64) -> Result<u64, Error> {
        let (name, n) = self.read_name(slot, name_ptr, name_len)?;
        let name = core::str::from_utf8(&name[..n]).map_err(|_| Error::InvalidArgument)?;
        let child = self.free_slot_index()?;
        let space = AddressSpace::new().ok_or(Error::OutOfResources)?;
        let priority = self.procs[slot].base_priority;
        self.claim_slot(child, Some(slot), space, priority, name);
        Ok(self.pid_of(child).0)
    }

    pub fn sys_proc_fork(&mut self, slot: usize, handle: u64, reply: [u64; 4]) -> Result<u64, Error> {
        let caller = self.procs[slot].replies.peek(handle)?;
        let src = self.slot_of(caller).ok_or(Error::DeadPeer)?;
        let me = self.pid_of(slot);
        if !matches!(self.procs[src].state, State::Blocked(Blocked::Call { server, .. }) if server == me) {
            return Err(Error::BadReplyHandle);
        }
        let child = self.free_slot_index()?;
        let qseg = match self.procs[src].qseg.as_ref() {
            Some(q) => Some(q.fork_copy()?),
            None => None,
        };
        let space = AddressSpace::new().ok_or(Error::OutOfResources)?;
        let mut name = [0u8; MAX_PROCESS_NAME_BYTES];
        let src_name = self.procs[src].name().as_bytes();
        name[..src_name.len()].copy_from_slice(src_name);
        let name_len = src_name.len();
        let priority = self.procs[src].base_priority;
        self.claim_slot(
            child,
            Some(slot),
            space,
            priority,
            core::str::from_utf8(&name[..name_len]).unwrap_or("?"),
        );
        let s = &self.procs[src];
        let (bootstrap, mut frame) = (s.bootstrap, s.frame);
        // The copy returns from its `call` with no data and `reply`.
        frame.rax = 0;
        [frame.r12, frame.r13, frame.r14, frame.r15] = reply;
        let c = &mut self.procs[child];
        c.qseg = qseg;
        c.bootstrap = bootstrap;
        c.frame = frame;
        Ok(self.pid_of(child).0)
    }

    /// `proc_exec` (`elf_len` > 0) and `proc_image` (`image_entry` given).
    pub fn sys_proc_exec(
        &mut self,
        slot: usize,
        a: [u64; 6],
        image_entry: Option<u64>,
    ) -> Result<u64, Error> {
        let [pid, elf_ptr, elf_len, args_ptr, args_len, name_ptr] = a;
        let child = self.child_slot(slot, pid)?;
        let me = self.pid_of(slot);
        let ok = match self.procs[child].state {
            State::Stopped => true,
            State::Blocked(Blocked::Call { server, .. }) => server == me,
            _ => false,
        };
        if !ok {
            return Err(Error::InUse);
        }
        if args_len > abi::layout::MAX_ARGS_BYTES {
            return Err(Error::InvalidArgument);
        }
        let mut args = [0u8; abi::layout::MAX_ARGS_BYTES as usize];
        let space = self.procs[slot].space.as_ref().ok_or(Error::NoSuchProcess)?;
        UserSlice::new(args_ptr, args_len)?.read(space, &mut args[..args_len as usize])?;
        let (name, n) = self.read_name(slot, name_ptr, MAX_PROCESS_NAME_BYTES as u64)?;
        let name = core::str::from_utf8(&name[..n]).unwrap_or("?");
        let mut name_copy = [0u8; MAX_PROCESS_NAME_BYTES];
        name_copy[..name.len()].copy_from_slice(name.as_bytes());
        let name = core::str::from_utf8(&name_copy[..n]).unwrap_or("?");
        match image_entry {
            Some(entry) => self.image_from_user(child, slot, entry, &args[..args_len as usize], name)?,
            None => self.exec_from_user(child, slot, elf_ptr, elf_len, &args[..args_len as usize], name)?,
        }
        Ok(0)
    }

    pub fn sys_proc_start(&mut self, slot: usize, pid: u64) -> Result<u64, Error> {
        let child = self.child_slot(slot, pid)?;
        if self.procs[child].state != State::Stopped {
            return Err(Error::InUse);
        }
        self.make_ready(child);
        Ok(0)
    }

    pub fn sys_set_exit_queue(&mut self, slot: usize, queue: u64) -> Result<u64, Error> {
        let qseg = self.procs[slot].qseg.as_ref().ok_or(Error::NoQueueSegment)?;
        qseg.len(queue)?;
        self.procs[slot].exit_queue = Some(queue as u32);
        Ok(0)
    }

    pub fn sys_set_priority(&mut self, slot: usize, pid: u64, priority: u64) -> Result<u64, Error> {
        let target = if pid == self.pid_of(slot).0 { slot } else { self.child_slot(slot, pid)? };
        let priority =
            u8::try_from(priority).ok().filter(|&p| p <= abi::MAX_PRIORITY).ok_or(Error::InvalidArgument)?;
        let p = &mut self.procs[target];
        // Serving a call at a caller's priority: the new base applies after.
        if p.priority == p.base_priority {
            p.priority = priority;
        }
        p.base_priority = priority;
        if p.state == State::Ready {
            // Re-file it on the list of its new priority.
            self.ready.remove(target);
            self.make_ready(target);
        }
        Ok(0)
    }

    pub fn sys_space_copy(&mut self, slot: usize, src_pid: u64, dst_pid: u64) -> Result<u64, Error> {
        if self.procs[slot].rights & rights::MEMORY == 0 {
            return Err(Error::PermissionDenied);
        }
        let src = self.slot_of(Pid(src_pid)).ok_or(Error::NoSuchProcess)?;
        let dst = self.slot_of(Pid(dst_pid)).ok_or(Error::NoSuchProcess)?;
        if src == dst
            || self.procs[dst].state != State::Stopped
            || matches!(self.procs[src].state, State::Running { .. })
        {
            // A running source could write a page between the copy and the
            // loss of write access on another CPU.
            return Err(Error::InUse);
        }
        let mut dst_space = self.procs[dst].space.take().ok_or(Error::NoSuchProcess)?;
        let result = match self.procs[src].space.as_mut() {
            Some(src_space) => src_space.copy_on_write_into(&mut dst_space),
            None => Ok(0),
        };
        self.procs[dst].space = Some(dst_space);
        let pages = result?;
        self.procs[dst].regions = self.procs[src].regions;
        Ok(pages)
    }

    pub fn sys_module_info(
        &mut self,
        slot: usize,
        index: u64,
        buf: u64,
        buf_len: u64,
    ) -> Result<(u64, u64), Error> {
        if self.procs[slot].rights & rights::MODULES == 0 {
            return Err(Error::PermissionDenied);
        }
        let module = crate::boot_info().modules().get(index as usize).ok_or(Error::InvalidArgument)?;
        let name = module.name().as_bytes();
        let n = (buf_len as usize).min(name.len());
        let space = self.procs[slot].space.as_mut().ok_or(Error::NoSuchProcess)?;
        UserSlice::new(buf, n as u64)?.write(space, &name[..n])?;
        Ok((module.bytes().len() as u64, name.len() as u64))
    }

    pub fn sys_module_read(&mut self, slot: usize, a: [u64; 4]) -> Result<u64, Error> {
        let [index, offset, buf, len] = a;
        if self.procs[slot].rights & rights::MODULES == 0 {
            return Err(Error::PermissionDenied);
        }
        let bytes = crate::boot_info().modules().get(index as usize).ok_or(Error::InvalidArgument)?.bytes();
        let start = (offset as usize).min(bytes.len());
        let n = (len as usize).min(bytes.len() - start);
        let space = self.procs[slot].space.as_mut().ok_or(Error::NoSuchProcess)?;
        UserSlice::new(buf, n as u64)?.write(space, &bytes[start..start + n])?;
        self.add(abi::Counter::BytesCopied, n as u64);
        Ok(n as u64)
    }
}
