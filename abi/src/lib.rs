//! The Ridgeback kernel–user contract, in one place.
//!
//! Everything that crosses the boundary between the kernel and a user
//! program is defined here and nowhere else: kernel-call numbers, the
//! register convention, error codes, how an exit status is encoded, and the
//! user address-space layout. Both the kernel and the user runtime depend on
//! this crate, so the two sides cannot disagree (seL4's rule: one definition
//! of every boundary layout).
//!
//! What this crate is not: an implementation. It holds no logic beyond
//! encoding and decoding, and it is `#![no_std]` and free of `unsafe`.
//!
//! # Register convention (`syscall` instruction)
//! - `rax`: the kernel-call number ([`Call`]).
//! - arguments in `rdi`, `rsi`, `rdx`, `r10`, `r8`, `r9` (the Linux order;
//!   `rcx` and `r11` are taken by `syscall` itself).
//! - result in `rax`: a non-negative value, or the negated [`Error`] code.
//!   A second result, where a call has one, comes back in `rdx`.
//! - every other register is preserved.

#![no_std]
#![forbid(unsafe_code)]

pub mod layout;
pub mod msg;

/// Kernel-call numbers. Ridge OS (seed 001, §5) gives the kernel only three
/// services: processes, memory and messages. The numbers are grouped that way.
#[repr(u64)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    // --- processes ---
    /// `exit(code)`: end the calling process. Does not return.
    Exit = 0,
    /// `spawn(name_ptr, name_len, args_ptr, args_len, priority, rights) -> pid`:
    /// start a program bundled in the boot image. `priority` of
    /// [`PRIORITY_INHERIT`] means "the caller's". The child gets the
    /// [`rights`] in `rights` that the caller has.
    Spawn = 1,
    /// `wait(pid) -> (pid, status)`: wait for a child to end and reap it.
    /// `pid` of [`ANY_CHILD`] takes whichever child ends first.
    Wait = 2,
    /// `kill(pid) -> 0`: end a process (a child of the caller, or any
    /// process when the caller is init).
    Kill = 3,
    /// `getpid() -> pid`: answered by the kernel alone (Ridge Table 2).
    GetPid = 4,
    /// `getppid() -> pid` of the parent, or 0 when the parent is gone.
    GetPpid = 5,
    /// `yield() -> 0`: give up the rest of the time slice.
    Yield = 6,
    /// `sleep(duration_ns) -> 0`: block for at least this long.
    Sleep = 7,
    /// `proc_create(name_ptr, name_len) -> pid`: a new child of the caller
    /// with an empty address space, stopped until `proc_exec`. It inherits
    /// the caller's bootstrap connections and priority, no rights.
    ProcCreate = 8,
    /// `proc_fork(reply_handle; m0..m3) -> pid`: the caller (a server)
    /// holds a call from process P; make a stopped child of the caller
    /// that is a copy of P as it waits in that call: its registers, its
    /// queue segment's links and (empty) queues, bootstrap connections,
    /// priority and name, with an empty address space (a pager fills it,
    /// see [`Call::SpaceCopy`]). When started, the copy returns from its
    /// call with length 0 and reply m0..m3. The call itself stays pending.
    ProcFork = 9,
    /// `proc_exec(pid, elf_ptr, elf_len, args_ptr, args_len, name_ptr) ->
    /// 0`: give `pid` (a child of the caller, stopped or waiting in a call
    /// to the caller) a new address space built from the ELF file in the
    /// caller's buffer, with `args` in its argument page, starting at the
    /// entry point when `proc_start` lets it run (so its pager can be set
    /// first). Its queue segment, pager regions and pending call are
    /// dropped. `name_ptr` points to a 32-byte, NUL-padded name.
    ProcExec = 10,
    /// `proc_start(pid) -> 0`: let a stopped child run.
    ProcStart = 11,
    /// `set_exit_queue(queue) -> 0`: from now on, when a child of the
    /// caller ends, it is reaped at once and a [`msg::Kind::ChildExit`]
    /// message (m0 = pid, m1 = encoded [`ExitStatus`], m2 = CPU time in ns)
    /// arrives on `queue` instead of waiting for `wait`.
    SetExitQueue = 12,
    /// `set_priority(pid, priority) -> 0`: of the caller or a child.
    SetPriority = 13,
    /// `proc_image(pid, entry, args_ptr, args_len, name_ptr) -> 0`: as
    /// `proc_exec`, but the new address space holds only the stack and the
    /// argument page and the registers start at `entry`: the program's
    /// text and data arrive from a pager (the VM manager), which sets its
    /// regions with `set_pager` before `proc_start`.
    ProcImage = 14,
    /// `set_affinity(pid, cpu) -> 0`: run `pid` (0 = the caller) only on
    /// CPU `cpu` (0-based, below [`InfoKey::CpusOnline`]), or on any CPU
    /// again when `cpu` is [`ANY_CPU`]. A process may pin itself; pinning
    /// another needs [`rights::DEVICES`] (the whole machine). A CPU that is
    /// not online: [`Error::InvalidArgument`]. A process pinned elsewhere
    /// than where it runs moves at once (the network server's designated
    /// CPU, seed 003: "the stack process pinned to the designated CPU").
    SetAffinity = 15,
    // --- machine ---
    /// `debug_write(ptr, len) -> len`: write bytes to the kernel console.
    DebugWrite = 16,
    /// `info(key) -> value`: a fact about the machine ([`InfoKey`]).
    Info = 17,
    /// `kernel_options(buf_ptr, buf_len) -> len`: copy the kernel command
    /// line into the buffer; returns its full length (which may exceed
    /// `buf_len`, in which case the copy is truncated).
    KernelOptions = 18,
    /// `shutdown(code) -> !`: power the machine off. Only the init
    /// process may do this; `code` reaches the host through QEMU's
    /// isa-debug-exit device when present.
    Shutdown = 19,
    /// `counters(buf_ptr, buf_len) -> count`: copy the kernel's event
    /// counters ([`Counter`]) as an array of `u64`.
    Counters = 20,
    /// `module_info(index, name_buf, name_len) -> size; rdx = name length`:
    /// a boot-image module (needs [`rights::MODULES`]).
    ModuleInfo = 21,
    /// `module_read(index, offset, buf, len) -> bytes copied`.
    ModuleRead = 22,
    /// `proc_memory(slot, buf_ptr, buf_len) -> pid`: the frames held by
    /// the process in process-table slot `slot`, as [`proc_memory`]'s
    /// words and name, copied to the buffer (at most `buf_len` bytes);
    /// returns its pid, or 0 for a free slot. A slot past the table:
    /// [`Error::InvalidArgument`]. For leak accounting (the soak).
    ProcMemory = 31,
    // --- messages (Ridge OS §5; see the `msg` module for registers) ---
    /// `init_qseg(num_links, num_queues, num_messages, num_pages) -> 0`:
    /// make the caller's queue segment, or grow it (no maximum may shrink).
    InitQSeg = 32,
    /// `open_queue(num_messages, access) -> queue` ([`msg::ACCESS_PUBLIC`] or
    /// [`msg::ACCESS_PRIVATE`]).
    OpenQueue = 33,
    /// `close_queue(queue) -> 0`: queued messages are dropped; blocked
    /// callers get [`Error::DeadPeer`].
    CloseQueue = 34,
    /// `allow_sender(queue, pid) -> 0`: let `pid` link to a private queue.
    AllowSender = 35,
    /// `open_link(receiver_pid, receiver_queue) -> link`.
    OpenLink = 36,
    /// `close_link(link) -> 0`.
    CloseLink = 37,
    /// `send(link; m0..m3) -> 0`: queue a 32-byte message; do not wait.
    Send = 38,
    /// `send_data(link, addr, len; m0..m3) -> 0`: a message plus up to
    /// 4096 bytes; one whole aligned page moves by copy-on-write mapping.
    SendData = 39,
    /// `receive_data(queue, buf, buf_len, flags) -> len; rdx = sender,
    /// rsi = kind, r10 = reply handle, m0..m3 = message`. Blocks on an empty
    /// queue unless `flags` has [`msg::NONBLOCKING`].
    ReceiveData = 40,
    /// `test(queue) -> count`: messages waiting; never blocks.
    Test = 41,
    /// `arm(queue, on) -> 0`: include (on = 1) or exclude (0) a queue from `wait_armed`.
    Arm = 42,
    /// `wait_armed() -> queue`: Ridge's Wait: block until an armed queue
    /// has a message; returns the lowest-numbered such queue.
    WaitArmed = 43,
    /// `call(link, send_buf, send_len, recv_buf, recv_len; m0..m3) -> len;
    /// m0..m3 = reply`: send and wait for the reply in one kernel entry.
    Call = 44,
    /// `reply(handle, buf, len; m0..m3) -> 0`: answer a call; do not wait.
    Reply = 45,
    /// `reply_wait(handle, buf, len, queue, recv_buf, recv_len; m0..m3)`:
    /// reply (unless handle is [`msg::NO_REPLY`]) and receive the next
    /// message, in one kernel entry. Results as `receive_data`.
    ReplyWait = 46,
    /// `forward_wait(handle, buf, len, queue | link << 32, recv_buf,
    /// recv_len; m0..m3)`: pass the call held under `handle` on to the
    /// queue of `link` as a call of `m0..m3` and `len` bytes at `buf`; its
    /// caller then waits for, and lends its buffers to, that server, which
    /// answers it directly and is told of the forwarding server as the
    /// sender. Then receive on `queue`, as `reply_wait` (with `queue` =
    /// [`msg::NO_RECEIVE`], nothing: the result is 0). On any error of
    /// the forward nothing is received, the handle is still held and the
    /// caller still waits on the forwarding server (docs/messages.md).
    ForwardWait = 47,
    // --- devices (Ridge OS §3: interrupts are messages to device managers) ---
    /// `claim_irq(irq, queue, flags) -> 0`: receive interrupt line `irq`
    /// (an ISA IRQ 0..15, or a GSI from 16) as [`msg::Kind::Interrupt`]
    /// messages on `queue`. One holder per line. The line stays masked
    /// after each interrupt until `ack_irq`. `flags` ([`irq_flags`]) give
    /// the trigger of an ISA line the firmware's tables do not describe.
    ClaimIrq = 48,
    /// `ack_irq(irq) -> 0`: unmask the line again (holder only).
    AckIrq = 49,
    /// `release_irq(irq) -> 0`: give the line up (holder only).
    ReleaseIrq = 50,
    /// `io_ports(base, count) -> 0`: use I/O ports `base..base+count` from
    /// user mode. One holder per port; the kernel's own ports are refused.
    IoPorts = 51,
    /// `set_bootstrap(index, pid, queue) -> 0`: set one of the caller's
    /// bootstrap connections, which `spawn` copies to children (how a new
    /// process finds its console and, later, its user monitor).
    SetBootstrap = 52,
    /// `get_bootstrap(index) -> pid; rdx = queue`: 0 when unset.
    GetBootstrap = 53,
    // --- memory: user-level pagers (Ridge's virtual memory manager) ---
    /// `set_pager(pid, start, len, pager_pid, pager_queue) -> 0`: faults in
    /// `start..start+len` of process `pid` (the caller or its child; page
    /// aligned, not yet mapped) become [`msg::Kind::PageFault`] messages to
    /// the pager's queue (m0 = faulting pid, m1 = address, m2 = the CPU's
    /// page-fault error code, m3 = region start). See [`pager`].
    SetPager = 54,
    /// `page_resolve(pid, addr, src_addr, flags) -> 0`: the pager of the
    /// region holding `addr` maps a page there ([`pager`] flags) or fails
    /// the fault; a process waiting on that page goes on.
    PageResolve = 55,
    /// `space_copy(src_pid, dst_pid) -> pages`: give `dst` (whose address
    /// space must be empty) every mapping of `src`, copy-on-write, and
    /// `src`'s pager regions. Needs [`rights::MEMORY`]. The VM manager's
    /// fork (Ridge's virtual memory manager).
    SpaceCopy = 56,
    // --- leases: the caller's buffers, lent to the server for one call ---
    /// `lease_read(handle, offset, buf, len, flags) -> len`: copy `len`
    /// bytes at `offset` of the *send* buffer of the pending call `handle`
    /// (a reply handle the caller holds) into the caller's `buf`. The send
    /// buffer is lent for the whole call, however long it is (only up to
    /// [`msg::MAX_DATA_BYTES`] of it also travels with the message). Out of
    /// bounds: [`Error::InvalidArgument`]; stale handle or the lender gone:
    /// [`Error::BadReplyHandle`]/[`Error::DeadPeer`]; memory not mapped on
    /// either side: [`Error::BadAddress`]. Flags: [`lease`].
    LeaseRead = 57,
    /// `lease_write(handle, offset, buf, len, flags) -> len`: copy the
    /// caller's `buf` into the *receive* buffer of the pending call
    /// `handle` at `offset`. Errors as [`Call::LeaseRead`].
    LeaseWrite = 58,
    /// `lease_copy(src_handle, src_offset, dst_handle, dst_offset, len) ->
    /// len`: copy from the send buffer lent by call `src_handle` to the
    /// receive buffer lent by call `dst_handle` (two callers of this
    /// server): one copy, straight from one client to the other (a pipe's
    /// writer to its reader). Errors as [`Call::LeaseRead`]; `flags` as
    /// there, in the sixth argument register.
    LeaseCopy = 59,
    // --- device access for user-level drivers (needs [`rights::DEVICES`]) ---
    /// `pci_config_read(address, offset, width) -> value`: read PCI
    /// configuration space (`address` = bus << 8 | device << 3 | function,
    /// `width` 1, 2 or 4 bytes, `offset` aligned to it, below 256). A slot
    /// with no device reads all ones, as on the bus.
    PciConfigRead = 64,
    /// `pci_config_write(address, offset, width, value) -> 0`: only on a
    /// function the caller has claimed ([`Call::PciClaim`]).
    PciConfigWrite = 65,
    /// `pci_claim(address) -> 0`: the caller becomes the function's only
    /// driver (until it ends); [`Error::InUse`] if another holds it,
    /// [`Error::NoSuchDevice`] if there is none.
    PciClaim = 66,
    /// `map_mmio(address, bar, va) -> len`: map memory BAR `bar` (0–5) of
    /// a claimed function at the caller's page-aligned `va`, uncached;
    /// returns the BAR's length in bytes. An I/O-port BAR, an empty one or
    /// one that overlaps RAM is refused ([`Error::InvalidArgument`]).
    MapMmio = 67,
    /// `dma_alloc(va, len) -> physical address`: map `len` bytes (whole
    /// pages) of zeroed, physically contiguous memory below 4 GiB at the
    /// caller's page-aligned `va` and return where it is in physical
    /// memory, for a device to reach by DMA. Freed when unmapped with the
    /// address space (at exit).
    DmaAlloc = 68,
    /// `msix_route(address, entry, queue) -> vector`: deliver MSI-X table
    /// entry `entry` of a claimed function as [`msg::Kind::Interrupt`]
    /// messages on `queue` (m0 = [`msix::MESSAGE_TAG`] | entry, m1 = the
    /// TSC, m2 = `address`). The *kernel* allocates the vector and writes
    /// the entry's address and data, so no driver can make a device send
    /// an interrupt of its choosing; it enables MSI-X on the function.
    /// Edge-triggered: nothing to acknowledge (no `ack_irq`). Routing an
    /// entry again moves it to `queue`, keeping its vector. Errors:
    /// [`Error::PermissionDenied`] (no [`rights::DEVICES`], or the function
    /// is not the caller's), [`Error::InvalidArgument`] (`entry` past the
    /// function's table), [`Error::NoSuchDevice`] (no MSI-X capability, or
    /// a table the kernel cannot reach), [`Error::LimitReached`] (every
    /// vector of the kernel's pool is routed), [`Error::BadQueue`].
    MsixRoute = 69,
    /// `msix_release(address, entry) -> 0`: mask the entry and free its
    /// vector; MSI-X goes off on the function with its last entry
    /// (holder only; an entry not routed: [`Error::InvalidArgument`]).
    MsixRelease = 70,
    // --- foreign processes: another system's programs (seed 001 §8) ---
    /// `foreign_attach(pid, queue) -> 0`: make the caller's stopped child
    /// `pid` (with no queue segment) a *foreign* process served by the
    /// caller: from now on its `syscall` instruction is no kernel call but
    /// a [`msg::Kind::Foreign`] message on the caller's `queue` (see
    /// [`foreign`]), and it waits until the caller answers with
    /// [`Call::ForeignResume`]. It can never make a kernel call again.
    ForeignAttach = 80,
    /// `foreign_resume(pid, result, regs_ptr) -> 0`: let the foreign
    /// process `pid` (served by the caller, waiting in a foreign call or
    /// stopped) go on. `regs_ptr` 0: its `rax` becomes `result`, every
    /// other register stays (`rcx` and `r11` as `syscall` defines them);
    /// otherwise it resumes with the whole [`foreign::Regs`] at `regs_ptr`
    /// (a signal handler, `rt_sigreturn`, a new program's first
    /// instruction) and `result` is ignored.
    ForeignResume = 81,
    /// `foreign_read(pid, addr, buf, len) -> len`: copy `len` bytes (at
    /// most [`foreign::MAX_COPY_BYTES`]) at `addr` of the waiting foreign
    /// process `pid` (served by the caller) into the caller's `buf`. Only
    /// its server may: others get [`Error::PermissionDenied`]. An address
    /// the process has not mapped: [`Error::BadAddress`], except in its
    /// heap region ([`layout::USER_HEAP_BASE`]), whose pages appear
    /// zero-filled on first touch as they do for the process itself.
    ForeignRead = 82,
    /// `foreign_write(pid, addr, buf, len) -> len`: the other way.
    ForeignWrite = 83,
    /// `foreign_regs(pid, regs_ptr) -> 0`: write the registers of the
    /// waiting foreign process `pid` (served by the caller) to `regs_ptr`
    /// as a [`foreign::Regs`].
    ForeignRegs = 84,
    /// `foreign_fork(pid) -> child pid`: a stopped copy of the waiting
    /// foreign process `pid` (served by the caller): its address space
    /// copy-on-write, its registers (with `rax` = 0, as `fork` returns in
    /// the child), its FPU state and FS base. The copy is the caller's
    /// child and foreign, served by the caller on the same queue; start it
    /// with [`Call::ForeignResume`] or hand it on with
    /// [`Call::ForeignGive`].
    ForeignFork = 85,
    /// `foreign_give(pid, server_pid, queue) -> 0`: hand the stopped
    /// foreign process `pid` (served by the caller) to `server_pid`, which
    /// must be the caller's UNIX twin: a process whose parent is the
    /// caller's parent (the monitor made both, `fork`), and let it run:
    /// its first foreign call goes to `server_pid`'s `queue`. How a Linux
    /// `fork` gives the child's copy to the child's server.
    ForeignGive = 86,
    /// `foreign_fpu(pid, buf, write) -> 0`: the x87/SSE registers of the
    /// waiting foreign process `pid` (served by the caller) as the
    /// [`foreign::FPU_BYTES`]-byte `fxsave` image (SDM vol. 1 table 10-2)
    /// at `buf`: copied out (`write` 0) or loaded from it (`write` 1;
    /// MXCSR bits the CPU does not support are cleared, as Linux does, so
    /// the load cannot fault). A signal frame's `fpstate` (servers/linux).
    ForeignFpu = 87,
    /// `foreign_unmap(pid, addr, len) -> pages`: take back the pages of
    /// `addr..addr+len` (page aligned, in the user half) from the waiting
    /// foreign process `pid` the caller serves; their frames go back to
    /// the system (or lose one owner, if shared). Pages not mapped are
    /// skipped; a page of the heap region touched again later comes back
    /// zero-filled, as a fresh one. Returns the pages taken: Linux's
    /// `munmap` (docs/linux-abi.md).
    ForeignUnmap = 88,
    /// `foreign_protect(pid, addr, len, writable) -> pages`: make the
    /// pages of `addr..addr+len` (page aligned, user half) of the waiting
    /// foreign process `pid` the caller serves read-only (`writable` 0) or
    /// writable again (1, copy-on-write where the frame is shared). Heap
    /// pages not touched yet are made (zero-filled) first, so that the
    /// protection holds for them too. A write to a read-only page is a
    /// page fault the process does not survive. A page neither mapped nor
    /// in the heap region: [`Error::BadAddress`], nothing changed; no
    /// memory for an untouched page: [`Error::OutOfResources`]. Linux's
    /// `mprotect`.
    ForeignProtect = 89,
    /// `page_owners(addr, len) -> owners`: the most owners any frame the
    /// caller maps in `addr..addr+len` (page aligned, user half, every
    /// page mapped) has: 1 when none is shared with another mapping, a
    /// message or a loan. How a server that lent pages (`pager::SHARED`)
    /// learns that no process, nor any `fork` child of one, maps them any
    /// more before it reuses them (docs/network.md, receive rings). Not
    /// mapped: [`Error::BadAddress`]; a bad range:
    /// [`Error::InvalidArgument`].
    PageOwners = 90,
}

impl Call {
    /// Decode a raw call number; `None` for numbers that name no call.
    pub fn from_raw(raw: u64) -> Option<Call> {
        use self::Call as C;
        use C::*;
        Some(match raw {
            0 => Exit,
            1 => Spawn,
            2 => Wait,
            3 => Kill,
            4 => GetPid,
            5 => GetPpid,
            6 => Yield,
            7 => Sleep,
            8 => ProcCreate,
            9 => ProcFork,
            10 => ProcExec,
            11 => ProcStart,
            12 => SetExitQueue,
            13 => SetPriority,
            14 => ProcImage,
            15 => SetAffinity,
            16 => DebugWrite,
            17 => Info,
            18 => KernelOptions,
            19 => Shutdown,
            20 => Counters,
            21 => ModuleInfo,
            22 => ModuleRead,
            31 => ProcMemory,
            32 => InitQSeg,
            33 => OpenQueue,
            34 => CloseQueue,
            35 => AllowSender,
            36 => OpenLink,
            37 => CloseLink,
            38 => Send,
            39 => SendData,
            40 => ReceiveData,
            41 => Test,
            42 => Arm,
            43 => WaitArmed,
            44 => C::Call,
            45 => Reply,
            46 => ReplyWait,
            47 => ForwardWait,
            48 => ClaimIrq,
            49 => AckIrq,
            50 => ReleaseIrq,
            51 => IoPorts,
            52 => SetBootstrap,
            53 => GetBootstrap,
            54 => SetPager,
            55 => PageResolve,
            56 => SpaceCopy,
            57 => LeaseRead,
            58 => LeaseWrite,
            59 => LeaseCopy,
            64 => PciConfigRead,
            65 => PciConfigWrite,
            66 => PciClaim,
            67 => MapMmio,
            68 => DmaAlloc,
            69 => MsixRoute,
            70 => MsixRelease,
            80 => ForeignAttach,
            81 => ForeignResume,
            82 => ForeignRead,
            83 => ForeignWrite,
            84 => ForeignRegs,
            85 => ForeignFork,
            86 => ForeignGive,
            87 => ForeignFpu,
            88 => ForeignUnmap,
            89 => ForeignProtect,
            90 => PageOwners,
            _ => return None,
        })
    }
}

/// What [`Call::ProcMemory`] writes: [`proc_memory::WORDS`] little-endian
/// `u64`s, then the process's name in [`proc_memory::NAME_BYTES`] bytes,
/// NUL-padded.
pub mod proc_memory {
    /// Page-table frames, the root included.
    pub const TABLES: usize = 0;
    /// User pages whose frame has no other owner.
    pub const PRIVATE: usize = 1;
    /// User pages whose frame has other owners (counted in each).
    pub const SHARED: usize = 2;
    /// Device memory pages (not RAM).
    pub const DEVICE: usize = 3;
    /// Of the private and shared pages, those in the heap region
    /// ([`super::layout::USER_HEAP_BASE`]).
    pub const HEAP: usize = 4;
    /// Number of words before the name.
    pub const WORDS: usize = 5;
    pub const NAME_BYTES: usize = 32;
    /// The whole record, in bytes.
    pub const RECORD_BYTES: usize = WORDS * 8 + NAME_BYTES;
}

/// Bootstrap connections a process inherits (see [`Call::SetBootstrap`]).
pub mod bootstrap {
    /// How many a process has.
    pub const COUNT: u64 = 8;
    /// The console driver's request queue.
    pub const CONSOLE: u64 = 0;
    /// The user monitor (UNIX system calls).
    pub const MONITOR: u64 = 1;
    /// The virtual-memory manager.
    pub const VM: u64 = 2;
    /// The directory manager (root file system).
    pub const FS: u64 = 3;
    /// The console device manager (line discipline).
    pub const TTY: u64 = 4;
}

/// Rights a process may hold beyond those every process has. A child gets
/// only rights its parent holds and names in `spawn`; init holds all.
pub mod rights {
    /// Act as pager for, and copy the address space of, any process
    /// (`set_pager` on any pid, [`super::Call::SpaceCopy`]).
    pub const MEMORY: u64 = 1;
    /// Read the boot image's modules ([`super::Call::ModuleRead`]).
    pub const MODULES: u64 = 2;
    /// Drive devices: interrupt lines, I/O ports, PCI configuration
    /// space, device memory (MMIO) and DMA memory. With no IOMMU, DMA can
    /// reach all of physical memory, so this right is the whole machine:
    /// init grants it only to drivers (see docs/devices.md).
    pub const DEVICES: u64 = 4;
    pub const ALL: u64 = MEMORY | MODULES | DEVICES;
}

/// User-level pagers (see [`Call::SetPager`], [`Call::PageResolve`]).
pub mod pager {
    /// Map a fresh zero-filled page.
    pub const ZERO: u64 = 1;
    /// Map a copy of the pager's page at `src_addr`.
    pub const COPY: u64 = 2;
    /// Map the pager's page at `src_addr` itself. With WRITABLE it is
    /// copy-on-write (both see the same frame until either writes; the
    /// writer gets a copy); without, it is read-only (program text).
    pub const SHARE: u64 = 4;
    /// The page is writable (else read-only); with SHARE, copy-on-write.
    pub const WRITABLE: u64 = 8;
    /// Refuse: the faulting process ends with a page fault.
    pub const FAIL: u64 = 16;
    /// With ZERO, COPY or SHARE: the page may be executed (else it is
    /// mapped no-execute).
    pub const EXECUTABLE: u64 = 32;
    /// With SHARE and WRITABLE: the pager's page itself, writable by both
    /// (a shared mapping, no copy-on-write): how a RAM disk lends its
    /// memory to the processes that opened it.
    pub const SHARED: u64 = 64;
    /// Regions one process can have.
    pub const MAX_REGIONS: usize = 8;
}

/// Flags of [`Call::ClaimIrq`]: how an ISA line carries a PCI function's
/// interrupt (QEMU's `pc` machine routes PCI INTx to ISA IRQs 10 and 11,
/// level-triggered, active-high). GSIs from 16 are always level and
/// active-low, as PCI lines are.
pub mod irq_flags {
    pub const LEVEL: u64 = 1;
    pub const ACTIVE_LOW: u64 = 2;
}

/// MSI-X interrupts ([`Call::MsixRoute`]).
pub mod msix {
    /// Set in word 0 of an [`crate::msg::Kind::Interrupt`] message that
    /// an MSI-X entry sent (its low 16 bits are the entry's index); a line
    /// interrupt's word 0 is the line, always below it.
    pub const MESSAGE_TAG: u64 = 1 << 32;
}

/// Flags of [`Call::LeaseRead`] and [`Call::LeaseWrite`].
pub mod lease {
    /// Copy one byte at a time through a one-page window, with
    /// interrupts off and the kernel held for the whole copy: DEC's
    /// PDDRIVER at IPL$_SYNCH (seed 000), for the RAM disk's `pddriver`
    /// mode. Nothing else runs on this CPU, and no other CPU enters the
    /// kernel, until the copy ends.
    pub const BYTE_AT_A_TIME: u64 = 1;
    /// Whole pages at the same offset within a page on both sides may be
    /// lent copy-on-write instead of copied (NetBSD's `uvm_loan`): the
    /// destination's pages then share the source's frames until either
    /// side writes. Only for copies of at least [`LOAN_MIN_BYTES`].
    pub const MAY_LOAN: u64 = 2;
    /// Shortest copy [`MAY_LOAN`] lends pages for: below it, mapping costs
    /// more than copying.
    pub const LOAN_MIN_BYTES: u64 = 16 * 1024;
    /// Longest send or receive buffer a call may lend.
    pub const MAX_LEASE_BYTES: u64 = 16 * 1024 * 1024;
    /// The server's side is several buffers (`lease_read` and
    /// `lease_write` only, no other flag): `buf` is a list of `len`
    /// segments in the caller's memory, each two `u64`s (address, length),
    /// and their bytes are copied in order to (or from) the lent buffer
    /// from `offset` on, contiguously; the call returns their total. One
    /// kernel entry and one copy for data that lies in several buffers (a
    /// disk cache's blocks, `fs-ext2`): without it, a copy into one buffer
    /// first or a kernel entry per buffer. At most [`MAX_SEGMENTS`]
    /// segments, else [`crate::Error::InvalidArgument`]; every segment is
    /// checked before a byte moves (one that is not mapped for the access:
    /// [`crate::Error::BadAddress`], and nothing has moved on either
    /// side). A segment of length 0 moves nothing and is not looked at,
    /// whatever its address.
    pub const SEGMENTS: u64 = 4;
    /// Most segments one [`SEGMENTS`] call takes: a 64 KiB transfer of
    /// 1 KiB blocks (`ext2fs`'s I/O workers').
    pub const MAX_SEGMENTS: u64 = 64;
}

/// Foreign processes: programs of another system (Linux) whose `syscall`
/// instruction becomes a message to a user-level server, as a page fault
/// becomes one to a pager (seed 001 §8: UNIX calls as messages to the user
/// monitor). See [`Call::ForeignAttach`] and docs/linux-abi.md.
///
/// The message ([`crate::msg::Kind::Foreign`]): the sender is the foreign
/// process; m0 = its `rax` (the call number), m1 = `rdi`, m2 = `rsi`,
/// m3 = `rdx` (the first three arguments). The rest of its registers:
/// [`Call::ForeignRegs`].
pub mod foreign {
    /// Most bytes one `foreign_read` or `foreign_write` moves: the kernel
    /// runs with interrupts off, so every call is bounded.
    pub const MAX_COPY_BYTES: u64 = 64 * 1024;
    /// Words in [`Regs`].
    pub const REGS_WORDS: usize = 19;
    /// Bytes of [`Regs`] in memory (little-endian words in field order).
    pub const REGS_BYTES: usize = REGS_WORDS * 8;
    /// The flags a foreign process may set in `rflags` (CF, PF, AF, ZF,
    /// SF, DF, OF); IF is always on, and TF, IOPL and the rest are the
    /// kernel's (as Linux's `FIX_EFLAGS`).
    pub const USER_RFLAGS: u64 = 0x0cd5;
    /// Bytes of the x87/SSE image `foreign_fpu` moves (`fxsave`'s).
    pub const FPU_BYTES: usize = 512;
    /// Where MXCSR and MXCSR_MASK sit in that image.
    pub const FPU_MXCSR_AT: usize = 24;
    pub const FPU_MXCSR_MASK_AT: usize = 28;

    /// The x87/SSE state a new program (and a signal handler) starts
    /// with: `fninit`'s control word 0x37f, MXCSR 0x1f80, all else 0.
    pub fn initial_fpu() -> [u8; FPU_BYTES] {
        let mut a = [0u8; FPU_BYTES];
        a[0..2].copy_from_slice(&0x037fu16.to_le_bytes());
        a[FPU_MXCSR_AT..FPU_MXCSR_AT + 4].copy_from_slice(&0x1f80u32.to_le_bytes());
        a
    }

    /// A foreign process's registers, as `foreign_regs` writes them and
    /// `foreign_resume` reads them. `fs_base` is the FS segment base
    /// (Linux `arch_prctl(ARCH_SET_FS)`, thread-local storage); it must be
    /// a user address.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Regs {
        pub rax: u64,
        pub rbx: u64,
        pub rcx: u64,
        pub rdx: u64,
        pub rsi: u64,
        pub rdi: u64,
        pub rbp: u64,
        pub rsp: u64,
        pub r8: u64,
        pub r9: u64,
        pub r10: u64,
        pub r11: u64,
        pub r12: u64,
        pub r13: u64,
        pub r14: u64,
        pub r15: u64,
        pub rip: u64,
        pub rflags: u64,
        pub fs_base: u64,
    }

    impl Regs {
        pub fn to_words(&self) -> [u64; REGS_WORDS] {
            let r = self;
            [
                r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8, r.r9, r.r10, r.r11, r.r12,
                r.r13, r.r14, r.r15, r.rip, r.rflags, r.fs_base,
            ]
        }

        pub fn from_words(w: &[u64; REGS_WORDS]) -> Regs {
            let [
                rax,
                rbx,
                rcx,
                rdx,
                rsi,
                rdi,
                rbp,
                rsp,
                r8,
                r9,
                r10,
                r11,
                r12,
                r13,
                r14,
                r15,
                rip,
                rflags,
                fs_base,
            ] = *w;
            Regs {
                rax,
                rbx,
                rcx,
                rdx,
                rsi,
                rdi,
                rbp,
                rsp,
                r8,
                r9,
                r10,
                r11,
                r12,
                r13,
                r14,
                r15,
                rip,
                rflags,
                fs_base,
            }
        }

        pub fn to_bytes(&self) -> [u8; REGS_BYTES] {
            let mut out = [0u8; REGS_BYTES];
            for (chunk, w) in out.chunks_exact_mut(8).zip(self.to_words()) {
                chunk.copy_from_slice(&w.to_le_bytes());
            }
            out
        }

        pub fn from_bytes(b: &[u8; REGS_BYTES]) -> Regs {
            let mut w = [0u64; REGS_WORDS];
            for (word, chunk) in w.iter_mut().zip(b.chunks_exact(8)) {
                let mut le = [0u8; 8];
                le.copy_from_slice(chunk);
                *word = u64::from_le_bytes(le);
            }
            Regs::from_words(&w)
        }
    }
}

/// The ELF note that marks a Ridgeback program (the runtime's `entry!`
/// puts it in every program, in a `PT_NOTE` segment): an executable
/// without it is started as a foreign (Linux) program by the monitor
/// (docs/linux-abi.md). Layout: namesz, descsz, type (little-endian
/// u32s), the name "Ridgeback\0" padded to 4 bytes, then 4 bytes of
/// description (the note's version).
pub mod program_note {
    /// The note's name, with its terminating zero.
    pub const NAME: &[u8] = b"Ridgeback\0";
    /// The note's type.
    pub const TYPE: u32 = 1;
    /// Bytes of the whole note.
    pub const BYTES: usize = 12 + 12 + 4;
    /// The note itself.
    pub const NOTE: [u8; BYTES] = [
        10, 0, 0, 0, // namesz
        4, 0, 0, 0, // descsz
        1, 0, 0, 0, // type
        b'R', b'i', b'd', b'g', b'e', b'b', b'a', b'c', b'k', 0, 0, 0, // name, padded
        1, 0, 0, 0, // version
    ];

    /// Whether `notes` (the bytes of one PT_NOTE segment) hold the note.
    pub fn is_in(notes: &[u8]) -> bool {
        let mut at = 0usize;
        while at + 12 <= notes.len() {
            let word =
                |i: usize| u32::from_le_bytes([notes[i], notes[i + 1], notes[i + 2], notes[i + 3]]) as usize;
            let (namesz, descsz, kind) = (word(at), word(at + 4), word(at + 8) as u32);
            let name_at = at + 12;
            let desc_at = name_at + namesz.div_ceil(4) * 4;
            let Some(end) = desc_at.checked_add(descsz.div_ceil(4) * 4) else { return false };
            if end > notes.len() {
                return false;
            }
            if kind == TYPE && &notes[name_at..name_at + namesz] == NAME {
                return true;
            }
            at = end;
        }
        false
    }
}

/// `spawn` priority meaning "the same as the caller".
pub const PRIORITY_INHERIT: u64 = u64::MAX;
/// `wait` pid meaning "any child".
pub const ANY_CHILD: u64 = u64::MAX;
/// [`Call::SetAffinity`]'s CPU that means "any CPU" (no pin).
pub const ANY_CPU: u64 = u64::MAX;
/// Scheduling priorities run from 0 (lowest) to `MAX_PRIORITY` (highest).
pub const MAX_PRIORITY: u8 = 31;
/// The priority of init and, by inheritance, of ordinary programs.
pub const DEFAULT_PRIORITY: u8 = 8;
/// Processes a built process (a UNIX process: made by `proc_create`,
/// `proc_fork` or `foreign_fork`, and counted by its maker) and what it
/// made may have made with the kernel's own calls (`spawn`,
/// `proc_create`, `proc_fork`, `foreign_fork`) at once; past it the call
/// fails with `OutOfResources`, and they all end with it (kernel
/// charges.rs). Its maker never sees them, so without a bound they would
/// escape the monitor's `RLIMIT_NPROC` (a fork bomb by `spawn`). The
/// server fuzzer's kernel children and the Linux server's program (two
/// during a `fork`) fit well inside it.
pub const MAX_CHARGED_PROCESSES: usize = 16;

/// Keys for [`Call::Info`].
#[repr(u64)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InfoKey {
    /// Number of CPUs online.
    CpusOnline = 0,
    /// Index of the CPU the caller is running on (0-based).
    CurrentCpu = 1,
    /// Time-stamp counter frequency in Hz, calibrated at boot.
    TscHz = 2,
    /// Nanoseconds since boot.
    UptimeNs = 3,
    /// Scheduling priority of the caller.
    Priority = 4,
    /// Number of live processes.
    ProcessCount = 5,
    /// Free physical memory in bytes.
    FreeMemoryBytes = 6,
    /// Frames shared by more than one owner (copy-on-write pages, lent
    /// message pages).
    SharedFrames = 7,
    /// CPU time the caller has used, in ns.
    CpuTimeNs = 8,
    /// The time-stamp counter's value at uptime 0: with [`InfoKey::TscHz`],
    /// a process computes `UptimeNs` exactly as the kernel does
    /// (`(rdtsc - boot) * 10^9 / hz`), with no kernel entry and no skew.
    BootTsc = 9,
    /// Nanoseconds since 1970-01-01 00:00 UTC at uptime 0, from the CMOS
    /// real-time clock read at boot (0: no calendar clock). The calendar
    /// time (`CLOCK_REALTIME`) is this plus [`InfoKey::UptimeNs`].
    BootRealtimeNs = 10,
    /// Page-table roots of ended processes not yet freed because a CPU
    /// still has them loaded (at most one per CPU): frames no process
    /// holds, for leak accounting.
    RetiredRoots = 11,
}

impl InfoKey {
    pub fn from_raw(raw: u64) -> Option<InfoKey> {
        use InfoKey::*;
        Some(match raw {
            0 => CpusOnline,
            1 => CurrentCpu,
            2 => TscHz,
            3 => UptimeNs,
            4 => Priority,
            5 => ProcessCount,
            6 => FreeMemoryBytes,
            7 => SharedFrames,
            8 => CpuTimeNs,
            9 => BootTsc,
            10 => BootRealtimeNs,
            11 => RetiredRoots,
            _ => return None,
        })
    }
}

/// Kernel event counters, in the order [`Call::Counters`] returns them.
/// They explain benchmark figures the way the seeds' DIRIO/BUFIO/CPU
/// columns do.
#[repr(usize)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// Entries into the kernel by `syscall`.
    KernelCalls = 0,
    /// Interrupts taken (timer, devices, inter-processor).
    Interrupts = 1,
    /// Exceptions taken (faults of any kind).
    Exceptions = 2,
    /// Switches from one process to a different one.
    ContextSwitches = 3,
    /// Bytes copied between user memory and the kernel.
    BytesCopied = 4,
    /// Page-table roots loaded (CR3 writes).
    AddressSpaceSwitches = 5,
    /// Messages sent (Send, SendData, Call, Reply, interrupts, faults).
    Messages = 6,
    /// Messages handed straight to a blocked receiver (no queueing).
    DirectHandoffs = 7,
    /// Pages moved by copy-on-write mapping instead of copying.
    PagesLoaned = 8,
    /// Copy-on-write write faults resolved by the kernel (a private copy
    /// made, or write access given back to the last holder).
    CowCopies = 9,
}

/// Number of counters; the length of the array [`Call::Counters`] fills.
pub const COUNTER_COUNT: usize = 10;
/// Names of the counters, indexed by [`Counter`].
pub const COUNTER_NAMES: [&str; COUNTER_COUNT] = [
    "kernel_calls",
    "interrupts",
    "exceptions",
    "context_switches",
    "bytes_copied",
    "address_space_switches",
    "messages",
    "direct_handoffs",
    "pages_loaned",
    "cow_copies",
];

/// Error codes. A kernel call that fails returns `-(code as i64)` in `rax`.
/// Every misuse has its own code so that the caller learns what was wrong.
#[repr(u64)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The call number names no kernel call.
    NoSuchCall = 1,
    /// A pointer argument does not point into mapped user memory with
    /// the needed access, or the range wraps or reaches the kernel half.
    BadAddress = 2,
    /// An argument is out of range (a length too large, an unknown key).
    InvalidArgument = 3,
    /// No process has this id (or it has ended and been reaped: generation
    /// numbers keep a stale id from reaching a new process).
    NoSuchProcess = 4,
    /// The caller may not do this to that process.
    PermissionDenied = 5,
    /// The named program is not in the boot image.
    NoSuchProgram = 6,
    /// The program is not a valid ELF64 x86-64 executable for user space.
    BadExecutable = 7,
    /// The kernel ran out of a bounded resource (process slots, memory).
    OutOfResources = 8,
    /// `wait` was asked for a child, but the caller has none (or not that one).
    NoChildren = 9,
    /// The operation would block and the caller asked not to.
    WouldBlock = 10,
    /// The process has no queue segment (`init_qseg` first).
    NoQueueSegment = 11,
    /// The link number names no open link.
    BadLink = 12,
    /// The queue number names no open queue (of the caller, or of the
    /// receiver a link points to: it was closed).
    BadQueue = 13,
    /// The receiving queue is full (its message count or the receiver's
    /// page quota); nothing was sent.
    QueueFull = 14,
    /// The peer process has ended.
    DeadPeer = 15,
    /// A table of the queue segment is full (links, queues, messages, pages,
    /// pending calls), or a requested size exceeds the kernel's limits.
    LimitReached = 16,
    /// The receive buffer is too small for the message's data; the message
    /// stays queued and `rdx` says how many bytes it needs.
    BufferTooSmall = 17,
    /// The reply handle is not one this process was given, or was used.
    BadReplyHandle = 18,
    /// `wait_armed` with no armed queue.
    NothingArmed = 19,
    /// The interrupt line or I/O port is held by another process.
    InUse = 20,
    /// No device answers at that PCI address (or, from `msix_route`, the
    /// function has no MSI-X capability the kernel can use).
    NoSuchDevice = 21,
}

impl Error {
    pub fn from_raw(raw: u64) -> Option<Error> {
        use Error::*;
        Some(match raw {
            1 => NoSuchCall,
            2 => BadAddress,
            3 => InvalidArgument,
            4 => NoSuchProcess,
            5 => PermissionDenied,
            6 => NoSuchProgram,
            7 => BadExecutable,
            8 => OutOfResources,
            9 => NoChildren,
            10 => WouldBlock,
            11 => NoQueueSegment,
            12 => BadLink,
            13 => BadQueue,
            14 => QueueFull,
            15 => DeadPeer,
            16 => LimitReached,
            17 => BufferTooSmall,
            18 => BadReplyHandle,
            19 => NothingArmed,
            20 => InUse,
            21 => NoSuchDevice,
            _ => return None,
        })
    }

    /// Short name of the error, as printed in logs.
    pub fn name(self) -> &'static str {
        match self {
            Error::NoSuchCall => "no such kernel call",
            Error::BadAddress => "bad address",
            Error::InvalidArgument => "invalid argument",
            Error::NoSuchProcess => "no such process",
            Error::PermissionDenied => "permission denied",
            Error::NoSuchProgram => "no such program",
            Error::BadExecutable => "bad executable",
            Error::OutOfResources => "out of resources",
            Error::NoChildren => "no children",
            Error::WouldBlock => "would block",
            Error::NoQueueSegment => "no queue segment",
            Error::BadLink => "bad link",
            Error::BadQueue => "bad queue",
            Error::QueueFull => "queue full",
            Error::DeadPeer => "peer process has ended",
            Error::LimitReached => "limit reached",
            Error::BufferTooSmall => "buffer too small",
            Error::BadReplyHandle => "bad reply handle",
            Error::NothingArmed => "no queue armed",
            Error::InUse => "in use by another process",
            Error::NoSuchDevice => "no such device",
        }
    }

    /// The value placed in `rax` for this error.
    pub fn to_return(self) -> u64 {
        (self as u64).wrapping_neg()
    }
}

/// Decode a raw `rax` return value into a result.
pub fn decode_return(raw: u64) -> Result<u64, Error> {
    if (raw as i64) < 0 {
        Err(Error::from_raw(raw.wrapping_neg()).unwrap_or(Error::InvalidArgument))
    } else {
        Ok(raw)
    }
}

/// How a process ended, as reported by `wait`.
///
/// Encoding in one `u64`: bits 63..56 are the kind; for `Exited` the low 32
/// bits are the code; for `Fault` bits 7..0 are the CPU exception vector and
/// bits 55..8 the low 48 bits of the faulting address (CR2 for page faults,
/// RIP otherwise); for `Killed` the low 32 bits are the killer's slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// The process called `exit(code)`.
    Exited(u32),
    /// The CPU raised exception `vector` in the process at `address`.
    Fault { vector: u8, address: u64 },
    /// Another process (or the kernel) ended it with `kill`.
    Killed,
}

const STATUS_EXITED: u64 = 0;
const STATUS_FAULT: u64 = 1;
const STATUS_KILLED: u64 = 2;

impl ExitStatus {
    pub fn encode(self) -> u64 {
        match self {
            ExitStatus::Exited(code) => (STATUS_EXITED << 56) | code as u64,
            ExitStatus::Fault { vector, address } => {
                (STATUS_FAULT << 56) | ((address & 0xffff_ffff_ffff) << 8) | vector as u64
            }
            ExitStatus::Killed => STATUS_KILLED << 56,
        }
    }

    pub fn decode(raw: u64) -> ExitStatus {
        match raw >> 56 {
            STATUS_EXITED => ExitStatus::Exited(raw as u32),
            STATUS_FAULT => ExitStatus::Fault { vector: raw as u8, address: (raw >> 8) & 0xffff_ffff_ffff },
            _ => ExitStatus::Killed,
        }
    }
}

/// CPU exception vectors that user programs can cause, for reading
/// [`ExitStatus::Fault`] (Intel SDM vol. 3A §6.3.1, table 6-1).
pub mod vector {
    pub const DIVIDE_ERROR: u8 = 0;
    pub const DEBUG: u8 = 1;
    pub const BREAKPOINT: u8 = 3;
    pub const OVERFLOW: u8 = 4;
    pub const BOUND_RANGE: u8 = 5;
    pub const INVALID_OPCODE: u8 = 6;
    pub const DEVICE_NOT_AVAILABLE: u8 = 7;
    pub const GENERAL_PROTECTION: u8 = 13;
    pub const PAGE_FAULT: u8 = 14;
    pub const X87_FLOATING_POINT: u8 = 16;
    pub const ALIGNMENT_CHECK: u8 = 17;
    pub const SIMD_FLOATING_POINT: u8 = 19;
}

/// Bits of the CPU's page-fault error code, as the kernel reads it and as
/// a pager gets it in m2 of a [`msg::Kind::PageFault`] message (Intel SDM
/// vol. 3A §4.7).
pub mod page_fault {
    /// The page was present (a protection fault); clear: not mapped.
    pub const PRESENT: u64 = 1 << 0;
    /// The access was a write.
    pub const WRITE: u64 = 1 << 1;
}

/// Slots of the kernel's process table: a live pid's slot is below this.
/// A boundary constant, not only a kernel limit: UNIX pids are computed
/// from kernel pids with it (`protocols::unix::pid`), so it is defined
/// here; `kernel_core::limits::MAX_PROCESSES` is this value.
pub const PROCESS_SLOTS: u32 = 256;

/// Process ids carry a generation number so that a stale id never reaches
/// a process that later reuses the same slot.
///
/// Layout: bits 31..0 are the slot index, bits 63..32 the generation.
/// Generations start at 1, so no valid pid is 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pid(pub u64);

impl Pid {
    pub const fn new(slot: u32, generation: u32) -> Pid {
        Pid(((generation as u64) << 32) | slot as u64)
    }
    pub const fn slot(self) -> u32 {
        self.0 as u32
    }
    pub const fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn exit_status_round_trips() {
        for s in [
            ExitStatus::Exited(0),
            ExitStatus::Exited(u32::MAX),
            ExitStatus::Fault { vector: 14, address: 0xdead_b000 },
            ExitStatus::Fault { vector: 0, address: 0x7fff_ffff_f000 },
            ExitStatus::Killed,
        ] {
            assert_eq!(ExitStatus::decode(s.encode()), s);
        }
    }

    #[test]
    fn errors_round_trip_through_rax() {
        for code in 1..=20 {
            let e = Error::from_raw(code).unwrap();
            assert_eq!(decode_return(e.to_return()), Err(e));
        }
        assert_eq!(decode_return(42), Ok(42));
    }

    #[test]
    fn call_numbers_round_trip() {
        for raw in 0..128 {
            if let Some(c) = Call::from_raw(raw) {
                assert_eq!(c as u64, raw);
            }
        }
        assert_eq!(Call::from_raw(99), None);
    }

    #[test]
    fn foreign_regs_round_trip_through_bytes() {
        let mut w = [0u64; foreign::REGS_WORDS];
        for (i, x) in w.iter_mut().enumerate() {
            *x = 0x0101_0101_0101_0101 * (i as u64 + 1);
        }
        let r = foreign::Regs::from_words(&w);
        assert_eq!(r.rax, w[0]);
        assert_eq!(r.fs_base, w[foreign::REGS_WORDS - 1]);
        assert_eq!(foreign::Regs::from_bytes(&r.to_bytes()), r);
        assert_eq!(msg::Kind::from_raw(msg::Kind::Foreign as u64), Some(msg::Kind::Foreign));
    }

    #[test]
    fn program_note_is_found() {
        assert!(program_note::is_in(&program_note::NOTE));
        let mut two = std::vec::Vec::from(&b"\x04\0\0\0\x10\0\0\0\x03\0\0\0GNU\0"[..]);
        two.extend_from_slice(&[0; 16]);
        assert!(!program_note::is_in(&two));
        two.extend_from_slice(&program_note::NOTE);
        assert!(program_note::is_in(&two));
        assert!(!program_note::is_in(&program_note::NOTE[..20]));
        assert!(!program_note::is_in(&[0xff; 40]));
    }

    #[test]
    fn pid_fields() {
        let p = Pid::new(7, 3);
        assert_eq!(p.slot(), 7);
        assert_eq!(p.generation(), 3);
        assert_ne!(Pid::new(7, 4), p);
    }
}

/// The contract between the kernel and the host-side runner (`xtask`) for
/// leaving QEMU: the kernel writes a code to QEMU's `isa-debug-exit` device
/// and QEMU exits with status `(code << 1) | 1`. The codes are chosen so that
/// neither status can be confused with QEMU's own exit status 1.
pub mod qemu_exit {
    /// I/O port of the `isa-debug-exit` device (`-device isa-debug-exit,iobase=0xf4,iosize=0x04`).
    pub const PORT: u16 = 0xf4;
    /// Code written for "everything passed / clean power-off".
    pub const SUCCESS_CODE: u32 = 0x10;
    /// Code written for "a test failed" or a kernel panic.
    pub const FAILURE_CODE: u32 = 0x11;
    /// QEMU's process exit status for a code.
    pub const fn host_status(code: u32) -> i32 {
        ((code << 1) | 1) as i32
    }
}

/// Lines init prints around the first UNIX process, so that a host tool
/// (`cargo xtask run --batch`) can tell its output from boot messages and
/// learn its exit status.
///
/// Every process's output reaches the same serial line, so a program can
/// print these lines too (issue 16). When the boot image carries the
/// module [`KEY_MODULE`] (a per-boot secret the host made), init ends
/// both lines with a space and its text, and the host believes only the
/// lines that carry it: only processes with `rights::MODULES` (init and
/// memfs, which leaves this module out of the file tree) can read it, and
/// no UNIX process, root's included, holds that right.
pub mod session {
    /// Printed before the session starts.
    pub const START: &str = "ridgeback: session start";
    /// `ridgeback: session exit N`, printed when it ended with status N.
    pub const EXIT: &str = "ridgeback: session exit ";
    /// The boot module holding the session key (one line of hex digits).
    pub const KEY_MODULE: &str = "session.key";
}

/// The serial-line protocol of in-QEMU test runs: the test runner prints one
/// line per event and the host (`cargo xtask test`) parses them.
pub mod test_protocol {
    /// `ktest: start NAME`
    pub const START: &str = "ktest: start ";
    /// `ktest: ok NAME`
    pub const OK: &str = "ktest: ok ";
    /// `ktest: FAIL NAME: reason`
    pub const FAIL: &str = "ktest: FAIL ";
    /// `ktest: summary N passed, M failed` — the last line of a run.
    pub const SUMMARY: &str = "ktest: summary ";

    /// The disk pattern: `utest` writes it to the first
    /// [`DISK_PATTERN_BYTES`] of `/dev/vda`, and after the boot `cargo
    /// xtask test` reads the host's image file and checks it there (the
    /// image is the ground truth, not what the driver says).
    pub const DISK_PATTERN_BYTES: u64 = 1 << 20;

    /// Byte `offset` of the disk pattern: every 512-byte block different
    /// (its number in its first 8 bytes) and no byte value periodic in a
    /// power of two, so a block written at the wrong place, or a page
    /// dropped, shows.
    pub fn disk_pattern_byte(offset: u64) -> u8 {
        let block = offset / 512;
        let within = offset % 512;
        if within < 8 {
            return (block >> (8 * within)) as u8;
        }
        (block.wrapping_mul(131).wrapping_add(within.wrapping_mul(7)) % 251) as u8
    }
}
