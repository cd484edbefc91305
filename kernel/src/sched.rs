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
use crate::arch::{apic, cpu};
use crate::memory::{self, AddressSpace};
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
        }
    }

    /// Put a process on its ready list and find it a CPU.
    pub fn make_ready(&mut self, slot: usize) {
        let prio = self.proc(slot).priority;
        self.proc_mut(slot).state = State::Ready;
        self.ready_mut().push_back(slot, prio);
        self.kick_for(prio);
    }

    /// Put a process on its ready list without interrupting another CPU:
    /// this CPU is about to choose what to run and will find it (the
    /// synchronous-call path, where the waker blocks next).
    pub fn make_ready_local(&mut self, slot: usize) {
        let prio = self.proc(slot).priority;
        self.proc_mut(slot).state = State::Ready;
        self.ready_mut().push_back(slot, prio);
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
        let c = self.cpu_mut(cpu);
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
        let (root, epoch) = (space.root(), space.tlb_epoch);
        cpu::switch_address_space(root);
        let c = self.cpu_mut(cpu);
        c.loaded_root = root;
        c.loaded_epoch = epoch;
        // Usually neither has I/O ports: two tests, no compare.
        if self.cpu(cpu).ports.is_some() || self.proc(to).io_ports.is_some() {
            self.switch_ports(cpu, to);
        }
        &raw mut self.proc_mut(to).frame
    }

    #[inline(never)]
    fn switch_ports(&mut self, cpu: usize, to: usize) {
        let ports = self.proc(to).io_ports;
        if self.cpu(cpu).ports != ports {
            crate::arch::descriptors::switch_io_ports(cpu, self.cpu(cpu).ports, ports);
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
            Some(slot) if self.proc(slot).state == (State::Running { cpu }) => {
                let prio = self.proc(slot).priority;
                let expired = core::mem::take(&mut self.cpu_mut(cpu).slice_expired);
                match self.ready().highest_priority() {
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
            let (slot, _) = self.ready_mut().pop_highest()?;
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
                let space = self.space(slot);
                let (root, epoch) = (space.root(), space.tlb_epoch);
                self.load_root(cpu, root, epoch);
                let ports = self.proc(slot).io_ports;
                if self.cpu(cpu).ports != ports {
                    crate::arch::descriptors::switch_io_ports(cpu, self.cpu(cpu).ports, ports);
                    self.cpu_mut(cpu).ports = ports;
                }
                self.reap_spaces();
                &raw mut self.proc_mut(slot).frame
            }
            None => {
                let loaded = self.cpu(cpu).loaded_root;
                if self.dead_spaces().iter().any(|s| s.root() == loaded) {
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
        if let Some(space) = self.proc(slot).space.as_ref()
            && self.cpu(cpu).loaded_root == space.root()
        {
            let epoch = space.tlb_epoch;
            self.cpu_mut(cpu).loaded_epoch = epoch;
        }
    }

    /// Load `root` on `cpu` unless it is loaded already with no rights
    /// taken away since (`epoch`); reloading also flushes the TLB.
    fn load_root(&mut self, cpu: usize, root: u64, epoch: u64) {
        let cs = self.cpu_mut(cpu);
        if cs.loaded_root != root || cs.loaded_epoch != epoch {
            cpu::switch_address_space(root);
            cs.loaded_root = root;
            cs.loaded_epoch = epoch;
            self.count(Counter::AddressSpaceSwitches);
        }
    }

    /// Free the address spaces no CPU has loaded any more.
    fn reap_spaces(&mut self) {
        if self.dead_spaces().is_empty() {
            return;
        }
        let loaded: [Option<u64>; MAX_CPUS] =
            core::array::from_fn(|c| self.cpu(c).online.then_some(self.cpu(c).loaded_root));
        self.dead_spaces_mut().retain(|s| loaded.contains(&Some(s.root())));
    }

    /// Free an address space no process uses any more, once no CPU has it
    /// loaded (an idle CPU may still hold its root).
    pub fn retire_space(&mut self, space: AddressSpace) {
        let root = space.root();
        if self.dead_spaces_mut().try_reserve(1).is_ok() {
            self.dead_spaces_mut().push(space);
        } else {
            // No heap left to remember it: lose its frames rather than
            // free them under another CPU, or panic.
            crate::kprintln!("warning: kernel heap full; address space {root:#x} leaked");
            core::mem::forget(space);
        }
        // Idle CPUs still holding this root drop it when they next run.
        for c in 0..MAX_CPUS {
            let cs = self.cpu(c);
            if cs.online && cs.current.is_none() && cs.loaded_root == root && c != percpu::current_cpu() {
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
