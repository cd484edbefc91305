//! The kernel's state: one [`Kernel`] behind one lock, [`KERNEL`], taken on
//! every kernel entry and released on the way out.
//!
//! Ridge OS's kernel is synchronous — interrupts off, every operation short
//! and bounded (seed 001, §4) — so one lock costs little and rules out a
//! whole class of bugs; seL4 makes the same choice on multiprocessors. User
//! programs run in parallel on every CPU; only their kernel calls are
//! serialised.
//!
//! What this module is: the record and small accessors over it (a process
//! by slot, its address space, a CPU's record, the counters). What it is
//! not: any policy. Scheduling is sched.rs, messages ipc.rs, process life
//! and death lifecycle.rs, and so on up the map in main.rs; each of them
//! reaches these fields only through the accessors here.
//!
//! Invariants kept here:
//! - a process's pid is (slot, generation) and [`Kernel::slot_of`] finds
//!   only a process that exists (live or zombie) with that generation;
//! - a live process has an address space ([`Kernel::space`] relies on it);
//! - the counters of the call fast path are added in only when read
//!   ([`Kernel::counter_values`]).

use crate::irq::IrqTable;
use crate::memory::AddressSpace;
use crate::process::{Process, State};
use abi::{COUNTER_COUNT, Counter, Pid};
use kernel_core::limits::{MAX_CPUS, MAX_PROCESSES};
use kernel_core::ready::ReadyQueues;
use spin::mutex::SpinMutex;

/// What a kernel operation leaves for its caller's registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Done: this value is the call's result, and the caller goes on.
    Return(u64),
    /// Nothing more to write: the caller blocked (whoever completes the
    /// call writes its result), ended, or its registers hold the result
    /// already (a received message).
    AsIs,
}

/// One CPU's record, a cache line of its own: CPUs write their own
/// records on every kernel entry, and records sharing a line would bounce
/// it between CPUs on real hardware (and its size, a power of two, makes
/// indexing one shift).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct CpuState {
    pub online: bool,
    /// The process this CPU runs (state `Running { cpu }`), if any.
    pub current: Option<usize>,
    /// The `tlb_epoch` of the address space loaded in CR3 (arch's
    /// `paging::loaded_root`) when it was loaded. Idle CPUs keep the last
    /// one (switching costs a TLB flush); `resume` drops it if it died.
    pub loaded_epoch: u64,
    /// The current process has used up its slice or yielded.
    pub slice_expired: bool,
    /// The I/O ports this CPU's permission bitmap grants to user mode.
    pub ports: Option<(u16, u16)>,
    /// A reschedule interrupt is on its way to this CPU.
    pub kicked: bool,
    pub dispatched_tsc: u64,
    /// SSE is on (CR4.OSFXSR): the last process this CPU resumed was
    /// foreign (foreign.rs).
    pub sse_on: bool,
}

const CPU_OFFLINE: CpuState = CpuState {
    online: false,
    current: None,
    loaded_epoch: 0,
    slice_expired: false,
    kicked: false,
    ports: None,
    dispatched_tsc: 0,
    sse_on: false,
};

/// In declaration order (`repr(C)`): what every kernel call touches
/// (`cpus`, the counters, the ready lists' summary) comes first, right
/// after the lock, and the process table last. Under QEMU each page the
/// fast path touches after a CR3 write costs a software-TLB refill.
#[repr(C)]
pub struct Kernel {
    cpus: [CpuState; MAX_CPUS],
    /// Read through [`Kernel::counter_values`], which adds in the fast
    /// path's counts.
    counters: [u64; COUNTER_COUNT],
    /// Calls and reply-waits done by the fast path (fastpath.rs): each
    /// stands for several counters, added up only when they are read.
    fast_calls: u64,
    fast_reply_waits: u64,
    ready: ReadyQueues<MAX_PROCESSES>,
    init_slot: Option<usize>,
    timeslice_ticks: u64,
    is_verbose: bool,
    /// `profile=1`: name every new address space's root (lifecycle.rs).
    is_profiling: bool,
    /// Processes blocked in `sleep`.
    sleepers: usize,
    /// Interrupt lines and their owners (devices.rs).
    irqs: IrqTable,
    procs: [Process; MAX_PROCESSES],
}

/// The kernel lock: a test-and-set lock (waiters spin reading it and try
/// the atomic exchange only when it looks free), not a ticket lock, on
/// purpose. Ridgeback's CPUs are virtual (QEMU threads, KVM vCPUs) that
/// the host stops whenever it likes, and a fair lock hands the lock to the
/// next waiter *in line*, running or not: with a ticket lock, every CPU
/// that asks after a stopped waiter spins until the host runs that waiter
/// again (a host time slice), and every CPU asks at each 10 ms tick, idle
/// ones included. With more vCPUs than free host cores a handoff then
/// costs more than a tick, each CPU leaves a tick with the next one
/// already pending, all of them stay queued in `trap_handler` and programs
/// stop (a shell pipeline of 1 s ran for more than 4 minutes; see
/// docs/architecture.md). With test-and-set, whichever CPU runs when the
/// lock is free takes it, and a waiter waits only for the holder. Linux
/// makes the same choice as a guest without paravirtual spinlocks
/// (`virt_spin_lock`, arch/x86/include/asm/qspinlock.h: "fair locks have
/// horrible lock 'holder' preemption issues"). Fairness is what it gives
/// up: a CPU may lose the race several times in a row. Nothing depends on
/// the order in which CPUs enter the kernel, and every entry is short and
/// bounded with interrupts off (seed 001 §4), so that only delays it.
pub static KERNEL: SpinMutex<Kernel> = SpinMutex::new(Kernel {
    cpus: [CPU_OFFLINE; MAX_CPUS],
    counters: [0; COUNTER_COUNT],
    fast_calls: 0,
    fast_reply_waits: 0,
    ready: ReadyQueues::new(),
    init_slot: None,
    timeslice_ticks: 2,
    is_verbose: false,
    is_profiling: false,
    sleepers: 0,
    irqs: IrqTable::new(),
    procs: [const { Process::empty() }; MAX_PROCESSES],
});

impl Kernel {
    // ---- boot-time settings ----

    pub fn configure(&mut self, timeslice_ticks: u64, is_verbose: bool) {
        self.timeslice_ticks = timeslice_ticks.max(1);
        self.is_verbose = is_verbose;
    }

    #[inline(always)]
    pub fn timeslice_ticks(&self) -> u64 {
        self.timeslice_ticks
    }

    /// Name each new address space's page-table root (`profile=1`).
    pub fn set_profiling(&mut self, is_profiling: bool) {
        self.is_profiling = is_profiling;
    }

    /// Whether `profile=1` was given.
    pub fn is_profiling(&self) -> bool {
        self.is_profiling
    }

    /// Log process starts and ends (`verbose=1`).
    pub fn is_verbose(&self) -> bool {
        self.is_verbose
    }

    pub fn init_slot(&self) -> Option<usize> {
        self.init_slot
    }

    pub fn set_init_slot(&mut self, slot: usize) {
        self.init_slot = Some(slot);
    }

    pub fn is_init(&self, slot: usize) -> bool {
        self.init_slot == Some(slot)
    }

    // ---- the process table ----

    #[inline(always)]
    pub fn proc(&self, slot: usize) -> &Process {
        &self.procs[slot]
    }

    #[inline(always)]
    pub fn proc_mut(&mut self, slot: usize) -> &mut Process {
        &mut self.procs[slot]
    }

    /// The process in `slot`, or None for a slot number out of range.
    #[inline(always)]
    pub fn try_proc(&self, slot: usize) -> Option<&Process> {
        self.procs.get(slot)
    }

    /// Two different processes at once (a copy between their memories).
    pub fn two_procs_mut(&mut self, a: usize, b: usize) -> (&mut Process, &mut Process) {
        let [pa, pb] = self.procs.get_disjoint_mut([a, b]).expect("two different slots in range");
        (pa, pb)
    }

    /// Every slot number.
    pub fn slots(&self) -> core::ops::Range<usize> {
        0..MAX_PROCESSES
    }

    /// The address space of a live process.
    #[inline(always)]
    pub fn space(&self, slot: usize) -> &AddressSpace {
        self.procs[slot].space.as_ref().expect("a live process has an address space")
    }

    #[inline(always)]
    pub fn space_mut(&mut self, slot: usize) -> &mut AddressSpace {
        self.procs[slot].space.as_mut().expect("a live process has an address space")
    }

    /// The pid of the process in `slot`.
    #[inline(always)]
    pub fn pid_of(&self, slot: usize) -> Pid {
        Pid::new(slot as u32, self.procs[slot].generation)
    }

    /// The slot of a process that exists (live or zombie) with this id.
    pub fn slot_of(&self, pid: Pid) -> Option<usize> {
        let slot = pid.slot() as usize;
        let p = self.procs.get(slot)?;
        (p.generation == pid.generation() && p.state != State::Free).then_some(slot)
    }

    /// A free slot.
    pub fn free_slot_index(&self) -> Option<usize> {
        self.procs.iter().position(|p| p.state == State::Free)
    }

    pub fn live_processes(&self) -> usize {
        self.procs.iter().filter(|p| p.state != State::Free).count()
    }

    // ---- CPUs ----

    #[inline(always)]
    pub fn cpu(&self, cpu: usize) -> &CpuState {
        &self.cpus[cpu]
    }

    #[inline(always)]
    pub fn cpu_mut(&mut self, cpu: usize) -> &mut CpuState {
        &mut self.cpus[cpu]
    }

    /// The process running on `cpu`. Kernel calls and user faults always
    /// have one.
    pub fn current(&self, cpu: usize) -> usize {
        self.cpus[cpu].current.expect("a process is running on this CPU")
    }

    // ---- scheduling state (sched.rs) ----

    #[inline(always)]
    pub fn ready(&self) -> &ReadyQueues<MAX_PROCESSES> {
        &self.ready
    }

    pub fn ready_mut(&mut self) -> &mut ReadyQueues<MAX_PROCESSES> {
        &mut self.ready
    }

    pub fn sleepers(&self) -> usize {
        self.sleepers
    }

    pub fn sleeper_added(&mut self) {
        self.sleepers += 1;
    }

    pub fn sleeper_removed(&mut self) {
        self.sleepers -= 1;
    }

    // ---- interrupt lines (devices.rs) ----

    pub fn irqs(&self) -> &IrqTable {
        &self.irqs
    }

    pub fn irqs_mut(&mut self) -> &mut IrqTable {
        &mut self.irqs
    }

    // ---- counters ----

    pub fn count(&mut self, c: Counter) {
        self.counters[c as usize] += 1;
    }

    pub fn add(&mut self, c: Counter, n: u64) {
        self.counters[c as usize] += n;
    }

    /// One call done by the fast path: a kernel call, a message, a direct
    /// handoff, a context switch and an address-space switch.
    #[inline(always)]
    pub fn count_fast_call(&mut self) {
        self.fast_calls += 1;
    }

    /// One reply-wait done by the fast path: as a call, but no handoff.
    #[inline(always)]
    pub fn count_fast_reply_wait(&mut self) {
        self.fast_reply_waits += 1;
    }

    /// Every counter, the fast path's included.
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
}
