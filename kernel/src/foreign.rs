//! Foreign processes: programs of another system (Linux) run unchanged,
//! their `syscall` instruction turned into a message to a user-level
//! server, as a page fault is turned into one to a pager (pager.rs).
//!
//! Seed 001 §8: Ridge ran UNIX programs by making each UNIX call a message
//! to a user monitor. Here the program is not even built for Ridgeback:
//! the kernel sees a `syscall` from a process marked foreign, blocks it
//! (`Blocked::Foreign`) and sends its server a `Kind::Foreign` message
//! (m0..m3 = rax, rdi, rsi, rdx). The server reads and writes the process's
//! registers (`foreign_regs`, `foreign_resume`) and memory
//! (`foreign_read`, `foreign_write`): rights only its server holds, as
//! only a region's pager may map pages there. A foreign process can never
//! make a Ridgeback kernel call: every `syscall` it makes is a message.
//!
//! Invariants:
//! - a foreign process has no queue segment (`foreign_attach` requires
//!   none, and it cannot make `init_qseg`), so the call fast path, which
//!   needs one, always declines its `syscall` before changing anything;
//! - its x87/SSE registers are saved on every kernel entry from it (here,
//!   and `Kernel::save` for interrupts and exceptions) and restored, with
//!   its FS base, each time `resume` picks it (arch/fpu.rs); Ridgeback
//!   processes run with SSE off, as before;
//! - its server is its parent: when the server ends, so does it.
//!
//! What this is not: the Linux personality. Which calls exist and what
//! they do is the server's business (servers/linux, docs/linux-abi.md).

use crate::arch::fpu::{self, FpuArea};
use crate::memory::AddressSpace;
use crate::message::{Head, Payload};
use crate::process::{Blocked, Foreign, State};
use crate::state::Kernel;
use crate::usermem::{UserSlice, copy_between};
use abi::foreign::{FPU_BYTES, MAX_COPY_BYTES, REGS_BYTES, Regs};
use abi::layout::{PAGE_SIZE, USER_END};
use abi::msg::Kind;
use abi::{Error, ExitStatus, Pid};
use alloc::boxed::Box;

impl Kernel {
    /// The slot of foreign process `pid` if the process in `slot` serves it
    /// and it is not running (waiting in a foreign call, or stopped).
    fn served_and_waiting(&self, slot: usize, pid: u64) -> Result<usize, Error> {
        let target = self.slot_of(Pid(pid)).ok_or(Error::NoSuchProcess)?;
        let t = self.proc(target);
        let Some(f) = t.foreign.as_ref() else { return Err(Error::PermissionDenied) };
        if f.server != self.pid_of(slot) {
            return Err(Error::PermissionDenied);
        }
        match t.state {
            State::Blocked(Blocked::Foreign) | State::Stopped => Ok(target),
            State::Zombie => Err(Error::NoSuchProcess),
            _ => Err(Error::InUse),
        }
    }

    /// `foreign_attach`: the caller's stopped child `pid` becomes foreign,
    /// served by the caller on `queue`.
    pub fn foreign_attach(&mut self, slot: usize, pid: u64, queue: u64) -> Result<(), Error> {
        let target = self.slot_of(Pid(pid)).ok_or(Error::NoSuchProcess)?;
        let me = self.pid_of(slot);
        let t = self.proc(target);
        if t.parent != Some(me) {
            return Err(Error::PermissionDenied);
        }
        if t.state != State::Stopped || t.qseg.is_some() || t.foreign.is_some() {
            return Err(Error::InUse);
        }
        self.proc(slot).qseg.as_ref().ok_or(Error::NoQueueSegment)?.len(queue)?;
        self.proc_mut(target).foreign =
            Some(Foreign { server: me, queue: queue as u32, fs_base: 0, fpu: Box::new(FpuArea::initial()) });
        Ok(())
    }

    /// A `syscall` by the foreign process `caller` (running here): block
    /// it and tell its server. A server that is gone, or whose queue is
    /// closed or full, cannot answer: the process ends.
    pub fn foreign_syscall(&mut self, caller: usize) {
        let p = self.proc_mut(caller);
        debug_assert!(p.qseg.is_none(), "a foreign process has no queue segment (fast path)");
        let Some(f) = p.foreign.as_mut() else { return };
        f.fpu.save();
        let (server, queue) = (f.server, f.queue);
        let words = p.frame.foreign_call_words();
        let me = self.pid_of(caller);
        let Some(server_slot) = self.slot_of(server) else {
            self.finish(caller, ExitStatus::Killed);
            return;
        };
        let head = Head { words, sender: me, kind: Kind::Foreign };
        // Block first: a server waiting on its queue runs at once.
        let running = self.proc(caller).state;
        self.proc_mut(caller).state = State::Blocked(Blocked::Foreign);
        if self.deliver(server_slot, queue, head, Payload::None, false).is_err() {
            self.proc_mut(caller).state = running;
            self.finish(caller, ExitStatus::Killed);
        }
    }

    /// `foreign_resume`: the result in `rax` (`regs_ptr` 0), or every
    /// register from the caller's memory; the process runs again.
    pub fn foreign_resume(&mut self, slot: usize, pid: u64, result: u64, regs_ptr: u64) -> Result<(), Error> {
        let target = self.served_and_waiting(slot, pid)?;
        if regs_ptr == 0 {
            if self.proc(target).state == State::Stopped {
                // A stopped process never made the call this answers.
                return Err(Error::InvalidArgument);
            }
            self.proc_mut(target).frame.set_foreign_result(result);
        } else {
            let mut bytes = [0u8; REGS_BYTES];
            UserSlice::new(regs_ptr, REGS_BYTES as u64)?.read(self.space(slot), &mut bytes)?;
            let regs = Regs::from_bytes(&bytes);
            if regs.fs_base >= USER_END {
                return Err(Error::InvalidArgument);
            }
            let t = self.proc_mut(target);
            t.frame.set_foreign_regs(&regs);
            if let Some(f) = t.foreign.as_mut() {
                f.fs_base = regs.fs_base;
            }
        }
        self.make_ready(target);
        Ok(())
    }

    /// `foreign_regs`: every register of the waiting process, to the
    /// caller's `regs_ptr`.
    pub fn foreign_regs(&mut self, slot: usize, pid: u64, regs_ptr: u64) -> Result<(), Error> {
        let target = self.served_and_waiting(slot, pid)?;
        let t = self.proc(target);
        let mut regs = t.frame.foreign_regs();
        regs.fs_base = t.foreign.as_ref().map_or(0, |f| f.fs_base);
        UserSlice::new(regs_ptr, REGS_BYTES as u64)?.write(self.space_mut(slot), &regs.to_bytes())?;
        Ok(())
    }

    /// `foreign_read` (`to_foreign` false) and `foreign_write`: copy `len`
    /// bytes between the caller's `buf` and `addr` of the waiting process.
    /// Pages of the process's heap region not touched yet are made first
    /// (zero-filled), as its own first touch would.
    pub fn foreign_copy(
        &mut self,
        slot: usize,
        pid: u64,
        addr: u64,
        buf: u64,
        len: u64,
        to_foreign: bool,
    ) -> Result<u64, Error> {
        let target = self.served_and_waiting(slot, pid)?;
        if len > MAX_COPY_BYTES {
            return Err(Error::InvalidArgument);
        }
        UserSlice::new(addr, len)?;
        UserSlice::new(buf, len)?;
        let mut va = addr & !(PAGE_SIZE - 1);
        while len > 0 && va < addr + len {
            if self.space(target).translate(va).is_none() {
                // Outside the heap region this does nothing, and the copy
                // below fails with BadAddress.
                self.default_heap_fault(target, va, 0);
            }
            va += PAGE_SIZE;
        }
        let (me, them) = self.two_procs_mut(slot, target);
        let mine: &mut AddressSpace = me.space.as_mut().ok_or(Error::NoSuchProcess)?;
        let theirs: &mut AddressSpace = them.space.as_mut().ok_or(Error::NoSuchProcess)?;
        if to_foreign {
            copy_between(mine, buf, theirs, addr, len)?;
        } else {
            copy_between(theirs, addr, mine, buf, len)?;
        }
        Ok(len)
    }

    /// `foreign_fpu`: the waiting process's `fxsave` image to the caller's
    /// `buf`, or (`write`) from it. A loaded MXCSR keeps only the bits
    /// MXCSR_MASK says the CPU has (Linux `fpu__restore_sig` does the
    /// same), so `fxrstor` cannot fault on it (arch/fpu.rs's invariant).
    pub fn foreign_fpu(&mut self, slot: usize, pid: u64, buf: u64, write: bool) -> Result<(), Error> {
        let target = self.served_and_waiting(slot, pid)?;
        let user = UserSlice::new(buf, FPU_BYTES as u64)?;
        if write {
            let mut bytes = [0u8; FPU_BYTES];
            user.read(self.space(slot), &mut bytes)?;
            let f = self.proc_mut(target).foreign.as_mut().ok_or(Error::PermissionDenied)?;
            f.fpu.load_sanitized(&bytes);
        } else {
            let bytes = self.proc(target).foreign.as_ref().ok_or(Error::PermissionDenied)?.fpu.bytes();
            user.write(self.space_mut(slot), &bytes)?;
        }
        Ok(())
    }

    /// The pages of `addr..addr+len` of foreign process `pid` the caller
    /// serves, checked: page aligned, non-empty, in the user half.
    fn foreign_range(&self, slot: usize, pid: u64, addr: u64, len: u64) -> Result<(usize, u64), Error> {
        let target = self.served_and_waiting(slot, pid)?;
        if len == 0 || !addr.is_multiple_of(PAGE_SIZE) || !len.is_multiple_of(PAGE_SIZE) {
            return Err(Error::InvalidArgument);
        }
        UserSlice::new(addr, len)?;
        Ok((target, len / PAGE_SIZE))
    }

    /// `foreign_unmap`: the pages of the range go back to the system.
    pub fn foreign_unmap(&mut self, slot: usize, pid: u64, addr: u64, len: u64) -> Result<u64, Error> {
        let (target, pages) = self.foreign_range(slot, pid, addr, len)?;
        let space = self.proc_mut(target).space.as_mut().ok_or(Error::NoSuchProcess)?;
        Ok(space.unmap_range(addr, pages))
    }

    /// `foreign_protect`: the pages of the range read-only, or writable
    /// again. Heap pages not touched yet are made first (zero-filled, as
    /// the first touch would), so a read-only range is read-only whole.
    pub fn foreign_protect(
        &mut self,
        slot: usize,
        pid: u64,
        addr: u64,
        len: u64,
        writable: u64,
    ) -> Result<u64, Error> {
        let (target, pages) = self.foreign_range(slot, pid, addr, len)?;
        if writable > 1 {
            return Err(Error::InvalidArgument);
        }
        // Every page must be the process's: mapped, or a heap page its
        // first touch would make (Linux: ENOMEM for a hole in the range).
        for i in 0..pages {
            let va = addr + i * PAGE_SIZE;
            if self.space(target).translate(va).is_none() && !self.is_default_heap(target, va, 0) {
                return Err(Error::BadAddress);
            }
        }
        if writable == 0 {
            for i in 0..pages {
                let va = addr + i * PAGE_SIZE;
                if self.space(target).translate(va).is_none() && !self.default_heap_fault(target, va, 0) {
                    return Err(Error::OutOfResources);
                }
            }
        }
        let space = self.proc_mut(target).space.as_mut().ok_or(Error::NoSuchProcess)?;
        Ok(space.protect_range(addr, pages, writable == 1))
    }

    /// `foreign_fork`: a stopped copy of the waiting process, the caller's
    /// child, foreign and served by the caller on the same queue; it
    /// returns 0 from the `syscall` its original is in.
    pub fn foreign_fork(&mut self, slot: usize, pid: u64) -> Result<Pid, Error> {
        let src = self.served_and_waiting(slot, pid)?;
        if self.proc(src).state != State::Blocked(Blocked::Foreign) {
            return Err(Error::InUse);
        }
        self.check_may_make(slot)?;
        let child = self.free_slot_index().ok_or(Error::OutOfResources)?;
        let mut space = AddressSpace::new().ok_or(Error::OutOfResources)?;
        self.space_mut(src).copy_on_write_into(&mut space)?;
        let mut name = [0u8; kernel_core::limits::MAX_PROCESS_NAME_BYTES];
        let src_name = self.proc(src).name().as_bytes();
        let name_len = src_name.len();
        name[..name_len].copy_from_slice(src_name);
        let priority = self.proc(src).base_priority;
        self.claim_slot(
            child,
            Some(slot),
            space,
            priority,
            core::str::from_utf8(&name[..name_len]).unwrap_or("?"),
        );
        let ceiling = self.proc(src).priority_ceiling;
        self.settle_new(Some(slot), child, Some(ceiling));
        let s = self.proc(src);
        let mut frame = s.frame;
        frame.set_foreign_result(0);
        let f = s.foreign.as_ref().ok_or(Error::PermissionDenied)?;
        let foreign =
            Foreign { server: f.server, queue: f.queue, fs_base: f.fs_base, fpu: Box::new((*f.fpu).clone()) };
        let c = self.proc_mut(child);
        c.frame = frame;
        c.foreign = Some(foreign);
        Ok(self.pid_of(child))
    }

    /// `foreign_give`: hand the stopped process to the caller's twin
    /// `server_pid` (same parent: the monitor's `fork` made it) and let it
    /// run; its calls go to `queue` of the new server, its new parent.
    pub fn foreign_give(&mut self, slot: usize, pid: u64, server_pid: u64, queue: u64) -> Result<(), Error> {
        let target = self.served_and_waiting(slot, pid)?;
        if self.proc(target).state != State::Stopped {
            return Err(Error::InUse);
        }
        let server = self.slot_of(Pid(server_pid)).ok_or(Error::NoSuchProcess)?;
        let my_parent = self.proc(slot).parent;
        if server == slot || my_parent.is_none() || self.proc(server).parent != my_parent {
            return Err(Error::PermissionDenied);
        }
        if !self.proc(server).is_live() {
            return Err(Error::NoSuchProcess);
        }
        self.proc(server).qseg.as_ref().ok_or(Error::NoQueueSegment)?.len(queue)?;
        self.recharge(target, server);
        let t = self.proc_mut(target);
        t.parent = Some(Pid(server_pid));
        if let Some(f) = t.foreign.as_mut() {
            f.server = Pid(server_pid);
            f.queue = queue as u32;
        }
        self.make_ready(target);
        Ok(())
    }

    /// On an interrupt or exception from the process in `slot`: keep its
    /// x87/SSE registers if it is foreign (Ridgeback programs have none).
    #[inline(always)]
    pub fn save_foreign_fpu(&mut self, slot: usize) {
        if let Some(f) = self.proc_mut(slot).foreign.as_mut() {
            f.fpu.save();
        }
    }

    /// The process in `slot` is about to run on `cpu`: a foreign one gets
    /// SSE on, its registers and its FS base; a Ridgeback one after a
    /// foreign one gets SSE off (so SSE stays an invalid opcode for it).
    #[inline(always)]
    pub fn load_foreign_context(&mut self, cpu: usize, slot: usize) {
        let sse_on = self.cpu(cpu).sse_on;
        match self.proc(slot).foreign.as_ref() {
            Some(f) => {
                if !sse_on {
                    fpu::enable();
                }
                f.fpu.restore();
                fpu::set_fs_base(f.fs_base);
                self.cpu_mut(cpu).sse_on = true;
            }
            None if sse_on => {
                fpu::disable();
                self.cpu_mut(cpu).sse_on = false;
            }
            None => {}
        }
    }

    /// The server `pid` ended: the foreign processes it served end too
    /// (nobody will answer their calls).
    pub fn foreign_cleanup(&mut self, pid: Pid) {
        for s in self.slots() {
            let served = self.proc(s).foreign.as_ref().is_some_and(|f| f.server == pid);
            if served && self.proc(s).is_live() {
                self.kill(s);
            }
        }
    }
}
