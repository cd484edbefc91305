//! The kernel's state and the scheduler.
//!
//! All kernel state lives in one [`Kernel`] behind one lock, [`KERNEL`],
//! taken on every kernel entry and released on the way out. Ridge OS's
//! kernel is synchronous — interrupts off, every operation short and
//! bounded (§4) — so one lock costs little and rules out a whole class of
//! bugs; seL4 makes the same choice on multiprocessors. User programs run
//! in parallel on every CPU; only their kernel calls are serialised.
//!
//! Scheduling (Ridge OS §5): one ready list per priority, highest first,
//! FIFO within a priority ([`ReadyQueues`]), and a time slice among equal
//! priorities. A process that becomes ready runs at once on an idle CPU
//! (woken by an inter-processor interrupt) or preempts a lower-priority
//! one. An idle CPU halts.

use crate::arch::percpu;
use crate::arch::trap::TrapFrame;
use crate::arch::{apic, cpu};
use crate::devices::{IRQ_LINES, IrqLine, IrqRouting};
use crate::memory::{self, AddressSpace};
use crate::process::{Blocked, Process, State};
use abi::{COUNTER_COUNT, Counter, ExitStatus, Pid};
use alloc::vec::Vec;
use kernel_core::limits::{MAX_CPUS, MAX_PROCESSES};
use kernel_core::ready::ReadyQueues;
use spin::mutex::TicketMutex;

#[derive(Clone, Copy)]
pub struct CpuState {
    pub online: bool,
    /// The process this CPU runs (state `Running { cpu }`), if any.
    pub current: Option<usize>,
    /// The page-table root loaded in CR3. Idle CPUs keep the last one
    /// (switching costs a TLB flush); `resume` drops it if it died.
    pub loaded_root: u64,
    /// The `tlb_epoch` of that address space when it was loaded.
    pub loaded_epoch: u64,
    /// The current process has used up its slice or yielded.
    pub slice_expired: bool,
    /// The I/O ports this CPU's permission bitmap grants to user mode.
    pub ports: Option<(u16, u16)>,
    /// A reschedule interrupt is on its way to this CPU.
    pub kicked: bool,
    pub dispatched_tsc: u64,
}

/// In declaration order (`repr(C)`): what every kernel call touches
/// (`cpus`, the counters, the ready lists' summary) comes first, right
/// after the lock, and the process table last. Under QEMU each page the
/// fast path touches after a CR3 write costs a software-TLB refill.
#[repr(C)]
pub struct Kernel {
    pub cpus: [CpuState; MAX_CPUS],
    /// Read through [`Kernel::counter_values`], which adds in the fast
    /// path's counts.
    pub counters: [u64; COUNTER_COUNT],
    /// Calls and reply-waits done by the fast path (fastpath.rs): each
    /// stands for several counters, added up only when they are read.
    pub fast_calls: u64,
    pub fast_reply_waits: u64,
    pub ready: ReadyQueues<MAX_PROCESSES>,
    pub init_slot: Option<usize>,
    pub timeslice_ticks: u64,
    pub verbose: bool,
    /// Processes blocked in `sleep`.
    pub sleepers: usize,
    /// Interrupt lines and their owners (devices.rs).
    pub irqs: [IrqLine; IRQ_LINES],
    pub irq_routing: IrqRouting,
    /// Address spaces of ended processes still loaded on some CPU.
    dead_spaces: Vec<AddressSpace>,
    pub procs: [Process; MAX_PROCESSES],
}

pub static KERNEL: TicketMutex<Kernel> = TicketMutex::new(Kernel {
    procs: [const { Process::empty() }; MAX_PROCESSES],
    ready: ReadyQueues::new(),
    cpus: [CpuState {
        online: false,
        current: None,
        loaded_root: 0,
        loaded_epoch: 0,
        slice_expired: false,
        kicked: false,
        ports: None,
        dispatched_tsc: 0,
    }; MAX_CPUS],
    counters: [0; COUNTER_COUNT],
    fast_calls: 0,
    fast_reply_waits: 0,
    init_slot: None,
    timeslice_ticks: 2,
    verbose: false,
    sleepers: 0,
    irqs: [IrqLine { owner: None, pending: false }; IRQ_LINES],
    irq_routing: IrqRouting { io_apic_phys: 0, bsp_apic_id: 0, isa_override: [None; 16] },
    dead_spaces: Vec::new(),
});

impl Kernel {
    pub fn count(&mut self, c: Counter) {
        self.counters[c as usize] += 1;
    }

    /// Every counter, the fast path's included: a fast `call` is a kernel
    /// call, a message, a direct handoff, a context switch and an
    /// address-space switch; a fast `reply_wait` the same but the handoff.
    pub fn counter_values(&self) -> [u64; COUNTER_COUNT] {
        let mut c = self.counters;
        let (calls, waits) = (self.fast_calls, self.fast_reply_waits);
        c[Counter::KernelCalls as usize] += calls + waits;
        c[Counter::Messages as usize] += calls + waits;
        c[Counter::DirectHandoffs as usize] += calls;
        c[Counter::ContextSwitches as usize] += calls + waits;
        c[Counter::AddressSpaceSwitches as usize] += calls + waits;
        c
    }

    pub fn add(&mut self, c: Counter, n: u64) {
        self.counters[c as usize] += n;
    }

    /// The pid of the process in `slot`.
    pub fn pid_of(&self, slot: usize) -> Pid {
        Pid::new(slot as u32, self.procs[slot].generation)
    }

    /// The slot of a process that exists (live or zombie) with this id.
    pub fn slot_of(&self, pid: Pid) -> Option<usize> {
        let slot = pid.slot() as usize;
        let p = self.procs.get(slot)?;
        (p.generation == pid.generation() && p.state != State::Free).then_some(slot)
    }

    /// The process running on `cpu`. Kernel calls and user faults always
    /// have one.
    pub fn current(&self, cpu: usize) -> usize {
        self.cpus[cpu].current.expect("a process is running on this CPU")
    }

    /// Save the registers of the process interrupted on `cpu`.
    pub fn save(&mut self, cpu: usize, frame: &TrapFrame) {
        if let Some(slot) = self.cpus[cpu].current
            && frame.is_user()
        {
            self.procs[slot].frame = *frame;
        }
    }

    /// Put a process on its ready list and find it a CPU.
    pub fn make_ready(&mut self, slot: usize) {
        let prio = self.procs[slot].priority;
        self.procs[slot].state = State::Ready;
        self.ready.push_back(slot, prio);
        self.kick_for(prio);
    }

    /// Put a process on its ready list without interrupting another CPU:
    /// this CPU is about to choose what to run and will find it (the
    /// synchronous-call path, where the waker blocks next).
    pub fn make_ready_local(&mut self, slot: usize) {
        let prio = self.procs[slot].priority;
        self.procs[slot].state = State::Ready;
        self.ready.push_back(slot, prio);
    }

    /// Interrupt a CPU that should run a newly ready process of priority
    /// `prio`: an idle one if any, else the one running the lowest
    /// priority below `prio`. This CPU needs no interrupt: it reschedules
    /// on its way out of the kernel.
    pub fn kick_for(&mut self, prio: u8) {
        let me = percpu::current_cpu();
        let others = (0..MAX_CPUS).filter(|&c| c != me && self.cpus[c].online);
        let mut victim: Option<(usize, u8)> = None;
        for c in others {
            match self.cpus[c].current {
                None => {
                    if !self.cpus[c].kicked {
                        self.cpus[c].kicked = true;
                        apic::send_ipi(percpu::apic_id_of(c), apic::VECTOR_RESCHEDULE);
                    }
                    return;
                }
                Some(s) => {
                    let p = self.procs[s].priority;
                    if p < prio && victim.is_none_or(|(_, vp)| p < vp) {
                        victim = Some((c, p));
                    }
                }
            }
        }
        let mine = self.cpus[me].current.map(|s| self.procs[s].priority);
        if let Some((c, vp)) = victim {
            // This CPU reschedules on its way out anyway; prefer it when it
            // runs something of lower priority still.
            if mine.is_some_and(|m| m > vp) && !self.cpus[c].kicked {
                self.cpus[c].kicked = true;
                apic::send_ipi(percpu::apic_id_of(c), apic::VECTOR_RESCHEDULE);
            }
        }
    }

    /// One timer tick on `cpu`.
    pub fn tick(&mut self, cpu: usize) {
        if self.sleepers > 0 {
            let now = apic::uptime_ns();
            for slot in 0..MAX_PROCESSES {
                let p = &self.procs[slot];
                if p.state == State::Blocked(Blocked::Sleep) && p.wake_at_ns <= now {
                    self.sleepers -= 1;
                    self.procs[slot].set_return(Ok(0));
                    self.make_ready(slot);
                }
            }
        }
        if let Some(slot) = self.cpus[cpu].current {
            let p = &mut self.procs[slot];
            p.slice_ticks_left = p.slice_ticks_left.saturating_sub(1);
            if p.slice_ticks_left == 0 {
                self.cpus[cpu].slice_expired = true;
            }
        }
    }

    /// Hand `cpu` from `from` (already saved and no longer running) to
    /// `to` (made running here): the tail of `resume` when both are known,
    /// for the call fast path. Returns `to`'s saved registers to leave
    /// through. The caller counts the switch (`fast_calls`,
    /// `fast_reply_waits`).
    #[inline(always)]
    pub fn switch_to(&mut self, cpu: usize, from: usize, to: usize) -> *mut TrapFrame {
        let now_tsc = cpu::rdtsc();
        let c = &mut self.cpus[cpu];
        // Both readings come from this CPU's TSC, which never goes back.
        let ran = now_tsc.wrapping_sub(c.dispatched_tsc);
        c.dispatched_tsc = now_tsc;
        c.current = Some(to);
        c.slice_expired = false;
        self.procs[from].cpu_time_tsc += ran;
        let p = &mut self.procs[to];
        p.state = State::Running { cpu };
        if p.slice_ticks_left == 0 {
            p.slice_ticks_left = self.timeslice_ticks;
        }
        // `from` ran here, so its root is loaded, and two processes never
        // share one: the root always changes (counted with the switch, see
        // `counter_values`).
        let space = self.procs[to].space.as_ref().expect("a running process has memory");
        let (root, epoch) = (space.root(), space.tlb_epoch);
        cpu::switch_address_space(root);
        let c = &mut self.cpus[cpu];
        c.loaded_root = root;
        c.loaded_epoch = epoch;
        // Usually neither has I/O ports: two tests, no compare.
        if self.cpus[cpu].ports.is_some() || self.procs[to].io_ports.is_some() {
            self.switch_ports(cpu, to);
        }
        &raw mut self.procs[to].frame
    }

    #[inline(never)]
    fn switch_ports(&mut self, cpu: usize, to: usize) {
        let ports = self.procs[to].io_ports;
        if self.cpus[cpu].ports != ports {
            crate::arch::descriptors::switch_io_ports(cpu, self.cpus[cpu].ports, ports);
            self.cpus[cpu].ports = ports;
        }
    }

    /// Choose what `cpu` runs next and return its saved registers, for the
    /// exit code to restore (and, for a process, to save its next kernel
    /// call into). Called at the end of every kernel entry.
    pub fn resume(&mut self, cpu: usize) -> *mut TrapFrame {
        self.cpus[cpu].kicked = false;
        let now_tsc = cpu::rdtsc();
        let previous = self.cpus[cpu].current;
        if let Some(slot) = previous
            && self.procs[slot].kill_requested
            && !matches!(self.procs[slot].state, State::Free | State::Zombie)
        {
            // Asked to end while it ran here: end it even if the kernel
            // entry that brought it here has just blocked it (a read on an
            // empty pipe), or the kill would be lost.
            self.finish(slot, ExitStatus::Killed);
        }
        // Charge CPU time to the process that ran until now.
        if let Some(slot) = previous {
            self.procs[slot].cpu_time_tsc += now_tsc.saturating_sub(self.cpus[cpu].dispatched_tsc);
        }
        let keep = match self.cpus[cpu].current {
            Some(slot) if self.procs[slot].state == (State::Running { cpu }) => {
                let prio = self.procs[slot].priority;
                let expired = core::mem::take(&mut self.cpus[cpu].slice_expired);
                match self.ready.highest_priority() {
                    Some(h) if h > prio => {
                        // Preempted before its slice ended: it keeps its turn.
                        self.procs[slot].state = State::Ready;
                        self.ready.push_front(slot, prio);
                        None
                    }
                    Some(h) if h == prio && expired => {
                        self.procs[slot].state = State::Ready;
                        self.procs[slot].slice_ticks_left = self.timeslice_ticks;
                        self.ready.push_back(slot, prio);
                        None
                    }
                    _ => {
                        if expired {
                            self.procs[slot].slice_ticks_left = self.timeslice_ticks;
                        }
                        Some(slot)
                    }
                }
            }
            _ => None,
        };
        let next = keep.or_else(|| {
            let (slot, _) = self.ready.pop_highest()?;
            let p = &mut self.procs[slot];
            p.state = State::Running { cpu };
            if p.slice_ticks_left == 0 {
                p.slice_ticks_left = self.timeslice_ticks;
            }
            Some(slot)
        });
        self.cpus[cpu].current = next;
        self.cpus[cpu].dispatched_tsc = now_tsc;
        match next {
            Some(slot) => {
                if previous != Some(slot) {
                    self.count(Counter::ContextSwitches);
                }
                let space = self.procs[slot].space.as_ref().expect("a running process has memory");
                let (root, epoch) = (space.root(), space.tlb_epoch);
                self.load_root(cpu, root, epoch);
                let ports = self.procs[slot].io_ports;
                if self.cpus[cpu].ports != ports {
                    crate::arch::descriptors::switch_io_ports(cpu, self.cpus[cpu].ports, ports);
                    self.cpus[cpu].ports = ports;
                }
                self.reap_spaces();
                &raw mut self.procs[slot].frame
            }
            None => {
                let loaded = self.cpus[cpu].loaded_root;
                if self.dead_spaces.iter().any(|s| s.root() == loaded) {
                    self.load_root(cpu, memory::kernel_root(), 0);
                }
                self.reap_spaces();
                crate::arch::trap::idle_frame(cpu)
            }
        }
    }

    /// This CPU has just flushed its own TLB entries for the changed pages
    /// of `slot`'s address space (invlpg): if that space is loaded here, it
    /// is up to date, so the next dispatch need not reload CR3.
    pub fn note_local_flush(&mut self, cpu: usize, slot: usize) {
        if let Some(space) = self.procs[slot].space.as_ref()
            && self.cpus[cpu].loaded_root == space.root()
        {
            self.cpus[cpu].loaded_epoch = space.tlb_epoch;
        }
    }

    /// Load `root` on `cpu` unless it is loaded already with no rights
    /// taken away since (`epoch`); reloading also flushes the TLB.
    fn load_root(&mut self, cpu: usize, root: u64, epoch: u64) {
        let cs = &mut self.cpus[cpu];
        if cs.loaded_root != root || cs.loaded_epoch != epoch {
            cpu::switch_address_space(root);
            cs.loaded_root = root;
            cs.loaded_epoch = epoch;
            self.count(Counter::AddressSpaceSwitches);
        }
    }

    /// Free the address spaces no CPU has loaded any more.
    fn reap_spaces(&mut self) {
        if self.dead_spaces.is_empty() {
            return;
        }
        let cpus = self.cpus;
        self.dead_spaces.retain(|s| cpus.iter().any(|c| c.online && c.loaded_root == s.root()));
    }

    /// End the process in `slot` now. It must not be running on another CPU
    /// (use [`Kernel::kill`] for that).
    pub fn finish(&mut self, slot: usize, status: ExitStatus) {
        let pid = self.pid_of(slot);
        match self.procs[slot].state {
            State::Ready => {
                self.ready.remove(slot);
            }
            State::Blocked(Blocked::Sleep) => self.sleepers -= 1,
            State::Running { cpu } => {
                assert_eq!(cpu, percpu::current_cpu(), "finishing a process running elsewhere");
                self.cpus[cpu].current = None;
            }
            State::Blocked(_) | State::Stopped => {}
            State::Free | State::Zombie => return,
        }
        self.ipc_cleanup(slot, pid);
        self.devices_cleanup(slot, pid);
        self.pager_cleanup(pid);
        if let Some(space) = self.procs[slot].space.take() {
            self.retire_space(space);
        }
        if Some(slot) == self.init_slot {
            // Nothing is left to run the system: say how init ended and
            // power off, successfully only if it exited with 0.
            crate::kprintln!("init ended: {status:?}");
            crate::power_off(if status == ExitStatus::Exited(0) { 0 } else { 1 });
        }
        let p = &mut self.procs[slot];
        p.state = State::Zombie;
        p.exit_status = status.encode();
        p.kill_requested = false;
        if self.verbose {
            crate::kprintln!("process {} ({:#x}) ended: {:?}", self.procs[slot].name(), pid.0, status);
        }
        // Orphans: nobody will wait for them any more. A child still
        // stopped (made by proc_create or proc_fork and never started) can
        // never run now: it ends with its parent, or it would leak.
        for child in 0..MAX_PROCESSES {
            if self.procs[child].parent == Some(pid) {
                if self.procs[child].state == State::Stopped {
                    self.finish(child, ExitStatus::Killed);
                }
                self.procs[child].parent = None;
                if self.procs[child].state == State::Zombie {
                    self.free_slot(child);
                }
            }
        }
        let parent = self.procs[slot].parent.and_then(|pp| self.slot_of(pp));
        if let Some(ps) = parent
            && self.report_exit(ps, slot)
        {
            return;
        }
        match parent {
            Some(ps) => {
                if let State::Blocked(Blocked::Wait(target)) = self.procs[ps].state
                    && target.is_none_or(|t| t == pid)
                {
                    let status = self.procs[slot].exit_status;
                    self.free_slot(slot);
                    let pp = &mut self.procs[ps];
                    pp.frame.rax = pid.0;
                    pp.frame.rdx = status;
                    self.make_ready(ps);
                }
            }
            None => self.free_slot(slot),
        }
    }

    /// If the parent in `ps` asked for exit messages (`set_exit_queue`),
    /// send it one for the ended child in `slot` and reap the child.
    fn report_exit(&mut self, ps: usize, slot: usize) -> bool {
        let Some(queue) = self.procs[ps].exit_queue else { return false };
        let pid = self.pid_of(slot);
        let cpu_ns = tsc_to_ns(self.procs[slot].cpu_time_tsc);
        let head = crate::ipc::Head {
            words: [pid.0, self.procs[slot].exit_status, cpu_ns, 0],
            sender: Pid(0),
            kind: abi::msg::Kind::ChildExit,
        };
        // A full or closed queue: the child stays a zombie for `wait`.
        if self.deliver(ps, queue, head, crate::ipc::Payload::None, false).is_err() {
            return false;
        }
        self.free_slot(slot);
        true
    }

    /// Free an address space no process uses any more, once no CPU has it
    /// loaded (an idle CPU may still hold its root).
    pub fn retire_space(&mut self, space: AddressSpace) {
        let root = space.root();
        if self.dead_spaces.try_reserve(1).is_ok() {
            self.dead_spaces.push(space);
        } else {
            // No heap left to remember it: lose its frames rather than
            // free them under another CPU, or panic.
            crate::kprintln!("warning: kernel heap full; address space {root:#x} leaked");
            core::mem::forget(space);
        }
        // Idle CPUs still holding this root drop it when they next run.
        for c in 0..MAX_CPUS {
            let cs = self.cpus[c];
            if cs.online && cs.current.is_none() && cs.loaded_root == root && c != percpu::current_cpu() {
                self.cpus[c].kicked = true;
                apic::send_ipi(percpu::apic_id_of(c), apic::VECTOR_RESCHEDULE);
            }
        }
    }

    pub fn free_slot(&mut self, slot: usize) {
        let p = &mut self.procs[slot];
        p.state = State::Free;
        p.generation = p.generation.wrapping_add(1).max(1);
        p.forget_link();
        p.parent = None;
        p.space = None;
        p.set_name("");
    }

    /// End a process wherever it runs. A process running on another CPU is
    /// asked to end and that CPU is interrupted; it ends there, on its way
    /// out of the kernel, so its address space is never freed under it.
    pub fn kill(&mut self, slot: usize) {
        match self.procs[slot].state {
            State::Running { cpu } if cpu != percpu::current_cpu() => {
                self.procs[slot].kill_requested = true;
                apic::send_ipi(percpu::apic_id_of(cpu), apic::VECTOR_RESCHEDULE);
            }
            _ => self.finish(slot, ExitStatus::Killed),
        }
    }

    pub fn live_processes(&self) -> usize {
        self.procs.iter().filter(|p| p.state != State::Free).count()
    }
}

/// Time-stamp-counter ticks as nanoseconds.
pub fn tsc_to_ns(ticks: u64) -> u64 {
    let hz = apic::tsc_hz().max(1);
    ((ticks as u128 * 1_000_000_000) / hz as u128) as u64
}
