//! Processes: one address space and one thread of control each (Ridge OS
//! §3), held in a fixed table of slots.
//!
//! A process id is (slot, generation); the generation goes up each time a
//! slot is freed, so a stale id never reaches the slot's next occupant.
//!
//! Life cycle: `Free` → (`Stopped` →) `Ready` ⇄ `Running` ⇄ `Blocked` → `Zombie` (ended,
//! waiting for its parent's `wait`) → `Free`. A process whose parent has
//! gone is freed as soon as it ends.

use crate::arch::trap::TrapFrame;
use crate::memory::AddressSpace;
use crate::message::Message;
use crate::reply_table::ReplyTable;
use abi::Pid;
use kernel_core::limits::MAX_PROCESS_NAME_BYTES;
use kernel_core::qseg::{Link, QueueSegment};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Free,
    Ready,
    Running {
        cpu: usize,
    },
    Blocked(Blocked),
    /// Made by `proc_create`/`proc_fork`; runs after `proc_exec`/`proc_start`.
    Stopped,
    Zombie,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocked {
    /// In `wait`, for this child (`None`: any child).
    Wait(Option<Pid>),
    /// In `sleep`, until uptime reaches `wake_at_ns`.
    Sleep,
    /// In `receive_data`/`reply_wait` on `queue`, with this buffer for data.
    /// `generation` is the queue's (`QueueSegment::generation`) when the
    /// process blocked; it cannot change meanwhile, since only the owner
    /// closes or reopens its queues. The call fast path compares it with a
    /// link's instead of looking the queue up.
    Receive { queue: u32, generation: u32, buf: u64, buf_len: u64 },
    /// In `wait_armed`.
    WaitArmed,
    /// In `call` to `server`, with this buffer for the reply's data. Both
    /// of the call's buffers are lent to the server until it replies
    /// (leases, ipc.rs): this one to write, the send buffer to read; the
    /// send buffer is not kept here but read from the caller's saved call
    /// arguments, which nothing touches until the reply (so the fast path
    /// pays nothing for leases).
    Call { server: Pid, buf: u64, buf_len: u64 },
    /// Faulted on the page at `page` of a paged region; its pager answers.
    PageFault { page: u64 },
    /// A foreign process in a `syscall` its server answers (foreign.rs).
    Foreign,
}

/// What makes a process foreign (foreign.rs): its server, and the state
/// only foreign processes have (Ridgeback programs use neither SSE nor FS).
pub struct Foreign {
    /// Where its `syscall`s go: this process's queue.
    pub server: Pid,
    pub queue: u32,
    pub fs_base: u64,
    pub fpu: alloc::boxed::Box<crate::arch::fpu::FpuArea>,
}

/// A region of a process's address space served by a user-level pager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagerRegion {
    pub start: u64,
    pub end: u64,
    pub pager: Pid,
    pub queue: u32,
}

/// No link number is `u64::MAX` (at most `abi::msg::MAX_LINKS`).
const NO_LINK_CACHED: (u64, Link) = (u64::MAX, Link { receiver: 0, queue: 0, generation: 0 });

/// In declaration order (`repr(C)`): the fields a kernel call's fast path
/// reads and writes first, the rest after them, so that the hot part of a
/// slot spans as few pages as possible (see `Kernel`).
#[repr(C)]
pub struct Process {
    pub state: State,
    pub generation: u32,
    /// Effective priority: `base_priority`, or a caller's while serving
    /// a call (see ipc.rs).
    pub priority: u8,
    pub base_priority: u8,
    /// Set when another CPU asked this running process to end.
    pub kill_requested: bool,
    /// I/O ports this process may use (device drivers only).
    pub io_ports: Option<(u16, u16)>,
    pub slice_ticks_left: u64,
    pub cpu_time_tsc: u64,
    pub space: Option<AddressSpace>,
    /// The link the call fast path last used and where it leads (a copy
    /// of `qseg.link(number)`), so a client calling the same server again
    /// skips the look-up. Whatever could change that link drops it:
    /// `close_link`, a new queue segment (`init_qseg`), the slot freed
    /// ([`Process::forget_link`]). `open_link` only fills free numbers.
    pub link_cache: (u64, Link),
    pub replies: ReplyTable,
    /// Saved user registers while not running; the kernel call's arguments
    /// and results while in the kernel (the `syscall` entry saves them
    /// here directly). While the process runs, this field belongs to its
    /// CPU's entry and exit code (arch/trap.rs): no other CPU may touch it.
    pub frame: TrapFrame,
    pub qseg: Option<QueueSegment<Message>>,
    pub parent: Option<Pid>,
    /// Regions whose faults go to user-level pagers.
    pub regions: [Option<PagerRegion>; abi::pager::MAX_REGIONS],
    /// Inherited connections: (pid, queue), pid 0 = unset.
    pub bootstrap: [(u64, u32); abi::bootstrap::COUNT as usize],
    pub exit_status: u64,
    pub wake_at_ns: u64,
    /// `abi::rights` held.
    pub rights: u64,
    /// Where children's ends are reported (`set_exit_queue`), if anywhere.
    pub exit_queue: Option<u32>,
    name: [u8; MAX_PROCESS_NAME_BYTES],
    name_len: usize,
    /// Set for a foreign process (`foreign_attach`): its `syscall` is a
    /// message to its server, never a kernel call.
    pub foreign: Option<Foreign>,
    /// The one CPU this process may run on (`set_affinity`), or any.
    pub pinned_cpu: Option<usize>,
    /// The built process (a UNIX process) this one is charged to, itself
    /// if it is one; `None` for init, the servers and what they spawned
    /// (charges.rs).
    pub account: Option<Pid>,
    /// The highest priority this process may give itself or a process it
    /// makes (charges.rs); a parent may raise a child's up to its own.
    pub priority_ceiling: u8,
}

impl Process {
    pub const fn empty() -> Process {
        Process {
            state: State::Free,
            generation: 1,
            parent: None,
            priority: 0,
            base_priority: 0,
            frame: TrapFrame::ZERO,
            space: None,
            qseg: None,
            io_ports: None,
            regions: [None; abi::pager::MAX_REGIONS],
            bootstrap: [(0, 0); abi::bootstrap::COUNT as usize],
            replies: ReplyTable::new(),
            link_cache: NO_LINK_CACHED,
            exit_status: 0,
            kill_requested: false,
            slice_ticks_left: 0,
            wake_at_ns: 0,
            cpu_time_tsc: 0,
            rights: 0,
            exit_queue: None,
            name: [0; MAX_PROCESS_NAME_BYTES],
            name_len: 0,
            foreign: None,
            pinned_cpu: None,
            account: None,
            priority_ceiling: 0,
        }
    }

    /// May this process run on `cpu` (its pin, if any)?
    #[inline(always)]
    pub fn may_run_on(&self, cpu: usize) -> bool {
        self.pinned_cpu.is_none_or(|c| c == cpu)
    }

    /// Drop the fast path's cached link (see `link_cache`).
    pub fn forget_link(&mut self) {
        self.link_cache = NO_LINK_CACHED;
    }

    pub fn name(&self) -> &str {
        core::str::from_utf8(&self.name[..self.name_len]).unwrap_or("?")
    }

    pub fn set_name(&mut self, name: &str) {
        let n = name.len().min(MAX_PROCESS_NAME_BYTES);
        self.name[..n].copy_from_slice(&name.as_bytes()[..n]);
        self.name_len = n;
    }

    /// Set the result of the kernel call it is in (see arch/regs.rs).
    pub fn set_return(&mut self, result: Result<u64, abi::Error>) {
        self.frame.set_result(result);
    }

    /// Neither free nor ended.
    pub fn is_live(&self) -> bool {
        !matches!(self.state, State::Free | State::Zombie)
    }
}
