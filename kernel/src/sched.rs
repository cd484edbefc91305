//! Scheduling (Ridge OS §5): one ready list per priority, highest first,
//! FIFO within a priority ([`ReadyQueues`]), and a time slice among equal
//! priorities. A process that becomes ready runs at once on an idle CPU
//! (woken by an inter-processor interrupt) or preempts a lower-priority
//! one. An idle CPU halts.
//!
//! What this module is: choosing what each CPU runs ([`Kernel::resume`],
//! at the end of every kernel entry, and [`Kernel::switch_to`] for the call
//! fast path), the ready lists, time slices and sleeping, and loading
//! address spaces. What it is not: how processes start and end
//! (lifecycle.rs) or what blocks them (ipc.rs, the kernel calls).

use crate::arch::percpu;
use crate::arch::trap::TrapFrame;
use crate::arch::{apic, cpu, paging};
use crate::memory::AddressSpace;
use crate::process::{Blocked, State};
use crate::state::Kernel;
use abi::Counter;
use kernel_core::limits::MAX_CPUS;

impl Kernel {
    /// Save the registers of the process interrupted on `cpu` (an
    /// interrupt or exception: a kernel call's are saved in place).
    pub fn save(&mut self, cpu: usize, frame: &TrapFrame) {
        if let Some(slot) = self.cpu(cpu).current
            && frame.is_user()
        {
            self.proc_mut(slot).frame = *frame;
            self.save_foreign_fpu(slot);
        }
    }

    /// Put a process on its ready list and find it a CPU.
    pub fn make_ready(&mut self, slot: usize) {
        let prio = self.proc(slot).priority;
        self.proc_mut(slot).state = State::Ready;
        self.ready_mut().push_back(slot, prio);
        match self.proc(slot).pinned_cpu {
            Some(c) => self.kick_pinned(c, prio),
            None => self.kick_for(prio),
        }
    }

    /// A process pinned to `cpu` (`set_affinity`) of priority `prio` is
    /// ready: interrupt that CPU if it is idle or runs something of lower
    /// priority (this CPU needs none: it reschedules on its way out).
    pub fn kick_pinned(&mut self, cpu: usize, prio: u8) {
        let c = cpu % MAX_CPUS;
        if c == percpu::current_cpu() || self.cpu(c).kicked || !self.cpu(c).online {
            return;
        }
        if self.cpu(c).current.is_none_or(|s| self.proc(s).priority < prio) {
            self.cpu_mut(c).kicked = true;
            apic::send_ipi(percpu::apic_id_of(c), apic::VECTOR_RESCHEDULE);
        }
    }

    /// Put a process on its ready list without interrupting another CPU:
    /// this CPU is about to choose what to run and will find it (the
    /// synchronous-call path, where the waker blocks next).
    pub fn make_ready_local(&mut self, slot: usize) {
        let prio = self.proc(slot).priority;
        self.proc_mut(slot).state = State::Ready;
        self.ready_mut().push_back(slot, prio);
        // Unless it is pinned to another CPU, which must be told.
        if let Some(c) = self.proc(slot).pinned_cpu {
            self.kick_pinned(c, prio);
        }
    }

    /// Interrupt a CPU that should run a newly ready process of priority
    /// `prio`: an idle one if any, else the one running the lowest
    /// priority below `prio`. This CPU needs no interrupt: it reschedules
    /// on its way out of the kernel.
    pub fn kick_for(&mut self, prio: u8) {
        let me = percpu::current_cpu();
        let others = (0..MAX_CPUS).filter(|&c| c != me && self.cpu(c).online);
        let mut victim: Option<(usize, u8)> = None;
        for c in others {
            match self.cpu(c).current {
                None => {
                    if !self.cpu(c).kicked {
                        self.cpu_mut(c).kicked = true;
                        apic::send_ipi(percpu::apic_id_of(c), apic::VECTOR_RESCHEDULE);
                    }
                    return;
                }
                Some(s) => {
                    let p = self.proc(s).priority;
                    if p < prio && victim.is_none_or(|(_, vp)| p < vp) {
                        victim = Some((c, p));
                    }
                }
            }
        }
        let mine = self.cpu(me).current.map(|s| self.proc(s).priority);
        if let Some((c, vp)) = victim {
            // This CPU reschedules on its way out anyway; prefer it when it
            // runs something of lower priority still.
            if mine.is_some_and(|m| m > vp) && !self.cpu(c).kicked {
                self.cpu_mut(c).kicked = true;
                apic::send_ipi(percpu::apic_id_of(c), apic::VECTOR_RESCHEDULE);
            }
        }
    }

    /// One timer tick on `cpu`.
    pub fn tick(&mut self, cpu: usize) {
        if self.sleepers() > 0 {
            let now = apic::uptime_ns();
            for slot in self.slots() {
                let p = self.proc(slot);
                if p.state == State::Blocked(Blocked::Sleep) && p.wake_at_ns <= now {
                    self.sleeper_removed();
                    self.proc_mut(slot).set_return(Ok(0));
                    self.make_ready(slot);
                }
            }
        }
        if let Some(slot) = self.cpu(cpu).current {
            let p = self.proc_mut(slot);
            p.slice_ticks_left = p.slice_ticks_left.saturating_sub(1);
            if p.slice_ticks_left == 0 {
                self.cpu_mut(cpu).slice_expired = true;
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
        let c = self.cpu_mut(cpu % MAX_CPUS);
        // Both readings come from this CPU's TSC, which never goes back.
        let ran = now_tsc.wrapping_sub(c.dispatched_tsc);
        c.dispatched_tsc = now_tsc;
        c.current = Some(to);
        c.slice_expired = false;
        self.proc_mut(from).cpu_time_tsc += ran;
        self.proc_mut(to).state = State::Running { cpu };
        // The slice length is read only when a new slice starts: reading it
        // every time is an instruction on every fast-path switch.
        if self.proc(to).slice_ticks_left == 0 {
            let timeslice_ticks = self.timeslice_ticks();
            self.proc_mut(to).slice_ticks_left = timeslice_ticks;
        }
        // `from` ran here, so its root is loaded, and two processes never
        // share one: the root always changes (counted with the switch, see
        // `counter_values`).
        let space = self.space(to);
        let epoch = space.tlb_epoch;
        space.activate();
        self.cpu_mut(cpu % MAX_CPUS).loaded_epoch = epoch;
        // Usually neither has I/O ports: two tests, no compare.
        if self.cpu(cpu % MAX_CPUS).ports.is_some() || self.proc(to).io_ports.is_some() {
            self.switch_ports(cpu, to);
        }
        &raw mut self.proc_mut(to).frame
    }

    #[inline(never)]
    fn switch_ports(&mut self, cpu: usize, to: usize) {
        let ports = self.proc(to).io_ports;
        if self.cpu(cpu).ports != ports {
            crate::arch::descriptors::switch_io_ports(self.cpu(cpu).ports, ports);
            self.cpu_mut(cpu).ports = ports;
        }
    }

    /// Choose what `cpu` runs next and return its saved registers, for the
    /// exit code to restore (and, for a process, to save its next kernel
    /// call into). Called at the end of every kernel entry.
    pub fn resume(&mut self, cpu: usize) -> *mut TrapFrame {
        self.cpu_mut(cpu).kicked = false;
        let now_tsc = cpu::rdtsc();
        let previous = self.cpu(cpu).current;
        // Charge CPU time to the process that ran until now.
        if let Some(slot) = previous {
            let ran = now_tsc.saturating_sub(self.cpu(cpu).dispatched_tsc);
            self.proc_mut(slot).cpu_time_tsc += ran;
        }
        let timeslice_ticks = self.timeslice_ticks();
        let keep = match self.cpu(cpu).current {
            Some(slot)
                if self.proc(slot).state == (State::Running { cpu }) && !self.proc(slot).may_run_on(cpu) =>
            {
                // Pinned to another CPU since it was dispatched here
                // (`set_affinity`): hand it over.
                self.make_ready(slot);
                None
            }
            Some(slot) if self.proc(slot).state == (State::Running { cpu }) => {
                let prio = self.proc(slot).priority;
                let expired = core::mem::take(&mut self.cpu_mut(cpu).slice_expired);
                // The highest priority this CPU may run: a process pinned
                // to another CPU (`set_affinity`) must neither preempt
                // this one nor hide its equals from its time slice.
                let eligible = self.ready().first_where(|s| self.proc(s).may_run_on(cpu)).map(|(_, p)| p);
                match eligible {
                    Some(h) if h > prio => {
                        // Preempted before its slice ended: it keeps its turn.
                        self.proc_mut(slot).state = State::Ready;
                        self.ready_mut().push_front(slot, prio);
                        None
                    }
                    Some(h) if h == prio && expired => {
                        self.proc_mut(slot).state = State::Ready;
                        self.proc_mut(slot).slice_ticks_left = timeslice_ticks;
                        self.ready_mut().push_back(slot, prio);
                        None
                    }
                    _ => {
                        if expired {
                            self.proc_mut(slot).slice_ticks_left = timeslice_ticks;
                        }
                        Some(slot)
                    }
                }
            }
            _ => None,
        };
        let next = keep.or_else(|| {
            // The first ready process that may run here: a process pinned
            // to another CPU (`set_affinity`) is left for that CPU.
            let (slot, _) = self.ready().first_where(|s| self.proc(s).may_run_on(cpu))?;
            self.ready_mut().remove(slot);
            let p = self.proc_mut(slot);
            p.state = State::Running { cpu };
            if p.slice_ticks_left == 0 {
                p.slice_ticks_left = timeslice_ticks;
            }
            Some(slot)
        });
        self.cpu_mut(cpu).current = next;
        self.cpu_mut(cpu).dispatched_tsc = now_tsc;
        match next {
            Some(slot) => {
                if previous != Some(slot) {
                    self.count(Counter::ContextSwitches);
                }
                self.load_space(cpu, slot);
                // Only a switch, or a foreign process running here last
                // (SSE on), can change what the FPU and FS base must
                // hold: a kernel call that returns to its caller pays one
                // test (foreign.rs).
                if previous != Some(slot) || self.cpu(cpu).sse_on {
                    self.load_foreign_context(cpu, slot);
                }
                let ports = self.proc(slot).io_ports;
                if self.cpu(cpu).ports != ports {
                    crate::arch::descriptors::switch_io_ports(self.cpu(cpu).ports, ports);
                    self.cpu_mut(cpu).ports = ports;
                }
                paging::reap_retired_roots();
                &raw mut self.proc_mut(slot).frame
            }
            None => {
                // An idle CPU keeps its last root (switching costs a TLB
                // flush) unless that root's process has ended.
                if paging::holds_retired_root() {
                    paging::load_kernel_root();
                    self.cpu_mut(cpu).loaded_epoch = 0;
                }
                paging::reap_retired_roots();
                crate::arch::trap::idle_frame()
            }
        }
    }

    /// This CPU has just flushed its own TLB entries for the changed pages
    /// of `slot`'s address space (invlpg): if that space is loaded here, it
    /// is up to date, so the next dispatch need not reload CR3.
    pub fn note_local_flush(&mut self, cpu: usize, slot: usize) {
        if let Some(space) = self.proc(slot).space.as_ref()
            && percpu::loaded_root() == space.root()
        {
            let epoch = space.tlb_epoch;
            self.cpu_mut(cpu).loaded_epoch = epoch;
        }
    }

    /// Load the address space of `slot` on `cpu` unless it is loaded
    /// already with no rights taken away since (`tlb_epoch`); reloading
    /// also flushes the TLB.
    fn load_space(&mut self, cpu: usize, slot: usize) {
        let space = self.space(slot);
        let epoch = space.tlb_epoch;
        if percpu::loaded_root() != space.root() || self.cpu(cpu).loaded_epoch != epoch {
            space.activate();
            self.cpu_mut(cpu).loaded_epoch = epoch;
            self.count(Counter::AddressSpaceSwitches);
        }
    }

    /// Free an address space no process uses any more. Its root stays
    /// allocated while some CPU has it loaded (arch's `PageTable`); idle
    /// CPUs holding it are asked to drop it, so its memory comes back soon.
    pub fn retire_space(&mut self, space: AddressSpace) {
        let root = space.root();
        drop(space);
        let me = percpu::current_cpu();
        for c in 0..MAX_CPUS {
            let cs = *self.cpu(c);
            if cs.online && cs.current.is_none() && c != me && percpu::loaded_root_of(c) == root {
                self.cpu_mut(c).kicked = true;
                apic::send_ipi(percpu::apic_id_of(c), apic::VECTOR_RESCHEDULE);
            }
        }
    }
}

/// Time-stamp-counter ticks as nanoseconds.
pub fn tsc_to_ns(ticks: u64) -> u64 {
    let hz = apic::tsc_hz().max(1);
    ((ticks as u128 * 1_000_000_000) / hz as u128) as u64
}
