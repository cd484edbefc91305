//! How processes begin and end.
//!
//! Birth: init and programs of the boot image start with `spawn`; servers
//! build processes with `proc_create`, `proc_fork`, `proc_exec`/`proc_image`
//! and `proc_start` (the user monitor makes UNIX processes this way).
//! Death: `finish` ends a process here and now and tells everyone who
//! depended on it (its callers, its children, its parent, its pager's
//! faulters); `kill` asks the CPU it runs on to do so; `wait` reaps.
//!
//! The kernel keeps only mechanism here: who is a child of whom, which
//! registers and mappings a copy gets. Policy (UNIX process ids, file
//! descriptors, permissions) lives in the servers (Ridge OS §3).
//!
//! Rights: a process controls its own children; init may end anyone.

use crate::arch::multiboot::Module;
use crate::arch::{apic, percpu};
use crate::loader::{ImageSource, add_stack_and_args, build_space, first_frame};
use crate::memory::{AddressSpace, Pool};
use crate::message::{Head, Payload};
use crate::process::{Blocked, State};
use crate::sched::tsc_to_ns;
use crate::state::Kernel;
use crate::usermem::UserSlice;
use abi::layout::USER_STACK_TOP;
use abi::{Error, ExitStatus, Pid, vector};
use kernel_core::limits::{MAX_CPUS, MAX_PROCESS_NAME_BYTES};

impl Kernel {
    /// The slot of `pid` if it is a child of the process in `slot`.
    fn child_slot(&self, slot: usize, pid: u64) -> Result<usize, Error> {
        let child = self.slot_of(Pid(pid)).ok_or(Error::NoSuchProcess)?;
        if self.proc(child).parent != Some(self.pid_of(slot)) {
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
        let space = self.proc(slot).space.as_ref().ok_or(Error::NoSuchProcess)?;
        UserSlice::new(ptr, n as u64)?.read(space, &mut name[..n])?;
        let n = name[..n].iter().position(|&b| b == 0).unwrap_or(n);
        Ok((name, n))
    }

    /// `proc_create`: a stopped, empty child named by the caller.
    pub fn proc_create(&mut self, slot: usize, name_ptr: u64, name_len: u64) -> Result<Pid, Error> {
        let (name, n) = self.read_name(slot, name_ptr, name_len)?;
        let name = core::str::from_utf8(&name[..n]).map_err(|_| Error::InvalidArgument)?;
        self.check_may_make(slot)?;
        let child = self.free_slot_index().ok_or(Error::OutOfResources)?;
        let space = AddressSpace::new().ok_or(Error::OutOfResources)?;
        let priority = self.proc(slot).base_priority;
        self.claim_slot(child, Some(slot), space, priority, name);
        self.settle_new(Some(slot), child, Some(priority));
        Ok(self.pid_of(child))
    }

    /// `proc_fork`: a stopped copy of the process whose call `handle`
    /// answers, as it waits in that call (memory to be filled by a pager).
    pub fn proc_fork(&mut self, slot: usize, handle: u64, reply: [u64; 4]) -> Result<Pid, Error> {
        let caller = self.proc(slot).replies.peek(handle)?;
        let src = self.slot_of(caller).ok_or(Error::DeadPeer)?;
        let me = self.pid_of(slot);
        if !matches!(self.proc(src).state, State::Blocked(Blocked::Call { server, .. }) if server == me) {
            return Err(Error::BadReplyHandle);
        }
        self.check_may_make(slot)?;
        let child = self.free_slot_index().ok_or(Error::OutOfResources)?;
        let qseg = match self.proc(src).qseg.as_ref() {
            Some(q) => Some(q.fork_copy()?),
            None => None,
        };
        // A forked process is an ordinary one: it never takes the reserve
        // (docs/memory.md, "Out of memory").
        let space = AddressSpace::new_in(Pool::Ordinary).ok_or(Error::OutOfResources)?;
        let mut name = [0u8; MAX_PROCESS_NAME_BYTES];
        let src_name = self.proc(src).name().as_bytes();
        name[..src_name.len()].copy_from_slice(src_name);
        let name_len = src_name.len();
        let priority = self.proc(src).base_priority;
        self.claim_slot(
            child,
            Some(slot),
            space,
            priority,
            core::str::from_utf8(&name[..name_len]).unwrap_or("?"),
        );
        self.settle_new(Some(slot), child, Some(self.proc(src).priority_ceiling));
        let s = self.proc(src);
        let (bootstrap, mut frame) = (s.bootstrap, s.frame);
        // The copy returns from its `call` with no data and `reply`.
        frame.set_result(Ok(0));
        frame.set_message(reply);
        let c = self.proc_mut(child);
        c.qseg = qseg;
        c.bootstrap = bootstrap;
        c.frame = frame;
        Ok(self.pid_of(child))
    }

    /// `proc_exec` (the program is the ELF file at `elf_ptr`) and
    /// `proc_image` (`image_entry` given: no program yet, its pager brings
    /// it in).
    pub fn proc_exec(
        &mut self,
        slot: usize,
        pid: u64,
        image: ExecImage,
        args: UserRange,
        name_ptr: u64,
    ) -> Result<(), Error> {
        let UserRange { addr: args_ptr, len: args_len } = args;
        let child = self.child_slot(slot, pid)?;
        let me = self.pid_of(slot);
        let ok = match self.proc(child).state {
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
        let space = self.proc(slot).space.as_ref().ok_or(Error::NoSuchProcess)?;
        UserSlice::new(args_ptr, args_len)?.read(space, &mut args[..args_len as usize])?;
        let (name, n) = self.read_name(slot, name_ptr, MAX_PROCESS_NAME_BYTES as u64)?;
        let name = core::str::from_utf8(&name[..n]).unwrap_or("?");
        let mut name_copy = [0u8; MAX_PROCESS_NAME_BYTES];
        name_copy[..name.len()].copy_from_slice(name.as_bytes());
        let name = core::str::from_utf8(&name_copy[..n]).unwrap_or("?");
        let args = &args[..args_len as usize];
        match image {
            ExecImage::Pager { entry } => self.image_from_user(child, slot, entry, args, name),
            ExecImage::Elf(file) => self.exec_from_user(child, slot, file.addr, file.len, args, name),
        }
    }

    /// `proc_start`: let a stopped child run.
    pub fn proc_start(&mut self, slot: usize, pid: u64) -> Result<(), Error> {
        let child = self.child_slot(slot, pid)?;
        if self.proc(child).state != State::Stopped {
            return Err(Error::InUse);
        }
        self.make_ready(child);
        Ok(())
    }

    /// From now on the caller's ended children are reported on `queue`.
    pub fn set_exit_queue(&mut self, slot: usize, queue: u64) -> Result<(), Error> {
        let qseg = self.proc(slot).qseg.as_ref().ok_or(Error::NoQueueSegment)?;
        qseg.len(queue)?;
        self.proc_mut(slot).exit_queue = Some(queue as u32);
        Ok(())
    }

    /// Set the priority of the caller or of one of its children.
    pub fn set_priority(&mut self, slot: usize, pid: u64, priority: u64) -> Result<(), Error> {
        let target = if pid == self.pid_of(slot).0 { slot } else { self.child_slot(slot, pid)? };
        let priority =
            u8::try_from(priority).ok().filter(|&p| p <= abi::MAX_PRIORITY).ok_or(Error::InvalidArgument)?;
        // Not above what the caller may give (charges.rs); a child raised
        // by its parent may go back up to it later.
        self.check_priority_given(slot, priority)?;
        if target != slot {
            let c = self.proc_mut(target);
            c.priority_ceiling = c.priority_ceiling.max(priority);
        }
        let p = self.proc_mut(target);
        // Serving a call at a caller's priority: the new base applies after.
        if p.priority == p.base_priority {
            p.priority = priority;
        }
        p.base_priority = priority;
        if p.state == State::Ready {
            // Re-file it on the list of its new priority.
            self.ready_mut().remove(target);
            self.make_ready(target);
        }
        Ok(())
    }

    /// `set_affinity(pid, cpu)` (abi::Call::SetAffinity): pin `pid` (0:
    /// the caller) to one CPU, or unpin it with `abi::ANY_CPU`. Another
    /// process than the caller needs `rights::DEVICES`. A process running
    /// on another CPU than its new one moves at that CPU's next
    /// reschedule, which is asked for at once (`resume` hands it over).
    pub fn set_affinity(&mut self, slot: usize, pid: u64, cpu: u64) -> Result<(), Error> {
        let target = if pid == 0 || pid == self.pid_of(slot).0 {
            slot
        } else if self.proc(slot).rights & abi::rights::DEVICES == 0 {
            return Err(Error::PermissionDenied);
        } else {
            self.slot_of(Pid(pid)).ok_or(Error::NoSuchProcess)?
        };
        let pin = if cpu == abi::ANY_CPU {
            None
        } else {
            let c = usize::try_from(cpu).ok().filter(|&c| c < MAX_CPUS).ok_or(Error::InvalidArgument)?;
            if !self.cpu(c).online {
                return Err(Error::InvalidArgument);
            }
            Some(c)
        };
        self.proc_mut(target).pinned_cpu = pin;
        match self.proc(target).state {
            State::Running { cpu: c }
                if !self.proc(target).may_run_on(c) && c != percpu::current_cpu() && !self.cpu(c).kicked =>
            {
                self.cpu_mut(c).kicked = true;
                apic::send_ipi(percpu::apic_id_of(c), apic::VECTOR_RESCHEDULE);
            }
            State::Ready => {
                // Re-filed, so that its (new) CPU is told.
                self.ready_mut().remove(target);
                self.make_ready(target);
            }
            _ => {}
        }
        Ok(())
    }

    // ---- birth ----

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
        let slot = self.free_slot_index().ok_or(Error::OutOfResources)?;
        // The child of an ordinary process is ordinary; a server's child
        // (a pipe manager, a disk file system) may take the reserve once it
        // runs, but is built outside it unless init starts it, so that a
        // program cannot eat the reserve by making pipes (docs/memory.md).
        let is_ordinary_parent =
            parent.is_some_and(|p| self.proc(p).space.as_ref().is_some_and(|s| s.pool() == Pool::Ordinary));
        let is_init_or_boot = parent.is_none_or(|p| self.is_init(p));
        let build_pool = if is_init_or_boot { Pool::Reserve } else { Pool::Ordinary };
        let mut space = build_space(&file, &program, args, build_pool)?;
        space.set_pool(if is_ordinary_parent { Pool::Ordinary } else { Pool::Reserve });
        self.claim_slot(slot, parent, space, priority, module.name());
        self.settle_new(parent, slot, None);
        let p = self.proc_mut(slot);
        p.rights = rights;
        p.frame = first_frame(program.entry, args.len());
        let pid = self.pid_of(slot);
        if self.is_verbose() {
            crate::kprintln!("process {} ({:#x}) started", module.name(), pid.0);
        }
        self.make_ready(slot);
        Ok(pid)
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
        let bootstrap = parent.map_or([(0, 0); abi::bootstrap::COUNT as usize], |s| self.proc(s).bootstrap);
        let p = self.proc_mut(slot);
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
        p.foreign = None;
        // Until the maker settles them (charges.rs): charged to nobody, no
        // higher than it starts.
        p.account = None;
        p.priority_ceiling = priority;
        p.state = State::Stopped;
        self.note_space(slot);
    }

    /// With `profile=1`: name the page-table root of `slot`'s new address
    /// space, so that `cargo xtask profile` can tell which process a CR3
    /// it samples belongs to (xtask/src/profile.rs parses this line; a
    /// root's frame may be reused later, and the sampler takes the latest
    /// line for a root).
    fn note_space(&self, slot: usize) {
        if !self.is_profiling() {
            return;
        }
        let p = self.proc(slot);
        if let Some(space) = p.space.as_ref() {
            crate::kprintln!("profile: space {:#x} {:#x} {}", space.root(), self.pid_of(slot).0, p.name());
        }
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
            let src = self.proc(from).space.as_ref().ok_or(Error::NoSuchProcess)?;
            let file = ImageSource::User { space: src, addr, len };
            let program = file.parse()?;
            (program, build_space(&file, &program, args, self.pool_of(slot))?)
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
        let mut space = AddressSpace::new_in(self.pool_of(slot)).ok_or(Error::OutOfResources)?;
        add_stack_and_args(&mut space, args)?;
        self.replace_image(slot, from, space, entry, args.len(), name);
        Ok(())
    }

    /// Where the frames of the process in `slot` come from: a new image
    /// keeps its process's pool (ordinary unless it never had a space).
    fn pool_of(&self, slot: usize) -> Pool {
        self.proc(slot).space.as_ref().map_or(Pool::Ordinary, AddressSpace::pool)
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
        self.proc_mut(from).replies.forget_caller(pid);
        self.proc_mut(slot).regions = [None; abi::pager::MAX_REGIONS];
        // Its old image's DMA frames go with that image: a device it
        // programmed must stop first (its claims stay; the new image
        // turns bus mastering on again if it drives the device).
        self.stop_dma_of(pid);
        let old = self.proc_mut(slot).space.replace(space);
        if let Some(old) = old {
            self.retire_space(old);
        }
        let p = self.proc_mut(slot);
        p.qseg = None;
        p.foreign = None;
        p.set_name(name);
        p.frame = first_frame(entry, args_len);
        p.state = State::Stopped;
        self.note_space(slot);
    }

    // ---- death ----

    /// End the process in `slot` now. It must not be running on another CPU
    /// (use [`Kernel::kill`] for that).
    pub fn finish(&mut self, slot: usize, status: ExitStatus) {
        let pid = self.pid_of(slot);
        match self.proc(slot).state {
            State::Ready => {
                self.ready_mut().remove(slot);
            }
            State::Blocked(Blocked::Sleep) => self.sleeper_removed(),
            State::Running { cpu } => {
                assert_eq!(cpu, percpu::current_cpu(), "finishing a process running elsewhere");
                self.cpu_mut(cpu).current = None;
            }
            State::Blocked(_) | State::Stopped => {}
            State::Free | State::Zombie => return,
        }
        self.ipc_cleanup(slot, pid);
        self.devices_cleanup(slot, pid);
        // Its pager's faulters can never go on.
        while let Some((faulter, page)) = self.waiting_on_pager(pid) {
            self.finish(faulter, ExitStatus::Fault { vector: vector::PAGE_FAULT, address: page });
        }
        // Its read windows' slot pages, and its RAM disk windows' lock
        // pages, read as zeros from now (pager.rs).
        self.zero_read_windows_of(pid);
        self.zero_device_lock_pages_of(pid);
        if let Some(space) = self.proc_mut(slot).space.take() {
            self.retire_space(space);
        }
        if Some(slot) == self.init_slot() {
            // Nothing is left to run the system: say how init ended and
            // power off, successfully only if it exited with 0.
            crate::kprintln!("init ended: {status:?}");
            crate::power::power_off(if status == ExitStatus::Exited(0) { 0 } else { 1 });
        }
        let p = self.proc_mut(slot);
        p.state = State::Zombie;
        p.exit_status = status.encode();
        p.kill_requested = false;
        if self.is_verbose() {
            crate::kprintln!("process {} ({:#x}) ended: {:?}", self.proc(slot).name(), pid.0, status);
        }
        // Foreign processes it served: nobody will answer them now.
        self.foreign_cleanup(pid);
        // What it made with the kernel's calls, if it is a UNIX process:
        // they end with it (charges.rs).
        self.end_charged(pid);
        // Orphans: nobody will wait for them any more. A child still
        // stopped (made by proc_create or proc_fork and never started) can
        // never run now: it ends with its parent, or it would leak.
        for child in self.slots() {
            if self.proc(child).parent == Some(pid) {
                if self.proc(child).state == State::Stopped {
                    self.finish(child, ExitStatus::Killed);
                }
                self.proc_mut(child).parent = None;
                if self.proc(child).state == State::Zombie {
                    self.free_slot(child);
                }
            }
        }
        let parent = self.proc(slot).parent.and_then(|pp| self.slot_of(pp));
        if let Some(ps) = parent
            && self.report_exit(ps, slot)
        {
            return;
        }
        match parent {
            Some(ps) => {
                if let State::Blocked(Blocked::Wait(target)) = self.proc(ps).state
                    && target.is_none_or(|t| t == pid)
                {
                    let status = self.proc(slot).exit_status;
                    self.free_slot(slot);
                    let frame = &mut self.proc_mut(ps).frame;
                    frame.set_result(Ok(pid.0));
                    frame.set_second_result(status);
                    self.make_ready(ps);
                }
            }
            None => self.free_slot(slot),
        }
    }

    /// If the parent in `ps` asked for exit messages (`set_exit_queue`),
    /// send it one for the ended child in `slot` and reap the child.
    fn report_exit(&mut self, ps: usize, slot: usize) -> bool {
        let Some(queue) = self.proc(ps).exit_queue else { return false };
        let pid = self.pid_of(slot);
        let cpu_ns = tsc_to_ns(self.proc(slot).cpu_time_tsc);
        let head = Head {
            words: [pid.0, self.proc(slot).exit_status, cpu_ns, 0],
            sender: Pid(0),
            kind: abi::msg::Kind::ChildExit,
        };
        // A full or closed queue: the child stays a zombie for `wait`.
        if self.deliver(ps, queue, head, Payload::None, false).is_err() {
            return false;
        }
        self.free_slot(slot);
        true
    }

    pub fn free_slot(&mut self, slot: usize) {
        let p = self.proc_mut(slot);
        p.state = State::Free;
        p.generation = p.generation.wrapping_add(1).max(1);
        p.forget_link();
        p.parent = None;
        p.space = None;
        p.foreign = None;
        p.pinned_cpu = None;
        p.set_name("");
    }

    /// End a process wherever it runs. A process running on another CPU is
    /// asked to end and that CPU is interrupted; it ends there, on its way
    /// out of the kernel, so its address space is never freed under it.
    pub fn kill(&mut self, slot: usize) {
        match self.proc(slot).state {
            State::Running { cpu } if cpu != percpu::current_cpu() => {
                self.proc_mut(slot).kill_requested = true;
                apic::send_ipi(percpu::apic_id_of(cpu), apic::VECTOR_RESCHEDULE);
            }
            _ => self.finish(slot, ExitStatus::Killed),
        }
    }

    /// End the process running on `cpu` if another CPU asked it to end
    /// while it ran (see [`Kernel::kill`]): even if the kernel entry that
    /// brought it here has just blocked it (a read on an empty pipe), or
    /// the kill would be lost. Done on every way out of the kernel.
    #[inline(always)]
    pub fn finish_if_kill_requested(&mut self, cpu: usize) {
        if let Some(slot) = self.cpu(cpu).current
            && self.proc(slot).kill_requested
            && self.proc(slot).is_live()
        {
            self.finish(slot, ExitStatus::Killed);
        }
    }

    /// `wait`: reap an ended child (`target`, or any child when None): its
    /// pid and status go to the caller's registers now, or when it ends.
    pub fn wait(&mut self, slot: usize, target: Option<Pid>) -> Result<(), Error> {
        let me = self.pid_of(slot);
        let mut has_live_child = false;
        for child in self.slots() {
            let c = self.proc(child);
            if c.parent != Some(me)
                || c.state == State::Free
                || target.is_some_and(|t| t != self.pid_of(child))
            {
                continue;
            }
            if c.state == State::Zombie {
                let (pid, status) = (self.pid_of(child).0, c.exit_status);
                self.free_slot(child);
                let frame = &mut self.proc_mut(slot).frame;
                frame.set_result(Ok(pid));
                frame.set_second_result(status);
                return Ok(());
            }
            has_live_child = true;
        }
        if !has_live_child {
            return Err(Error::NoChildren);
        }
        self.proc_mut(slot).state = State::Blocked(Blocked::Wait(target));
        Ok(())
    }
}

/// Where the program of `proc_exec` comes from.
#[derive(Clone, Copy, Debug)]
pub enum ExecImage {
    /// An ELF file in the caller's memory.
    Elf(UserRange),
    /// No file: the registers start at `entry` and a pager brings the
    /// text and data in (`proc_image`).
    Pager { entry: u64 },
}

/// A range of the caller's memory, as a call names it.
#[derive(Clone, Copy, Debug)]
pub struct UserRange {
    pub addr: u64,
    pub len: u64,
}
