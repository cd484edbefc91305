//! One function per kernel call, and the only place that executes
//! `syscall`; the register convention is documented in the `abi` crate.
//!
//! The ground floor of the runtime: it imports nothing else of it. The
//! message calls ([`crate::msg`]) are built on [`raw_with_message`] and
//! [`touch`] from here.
//!
//! The `raw` functions take integers exactly as the kernel does and are
//! public so that tests can pass deliberately bad arguments.

use abi::msg::Message;
use abi::{ANY_CHILD, Call, Error, ExitStatus, InfoKey, PRIORITY_INHERIT, Pid, decode_return};
use core::arch::asm;
use core::sync::atomic::{AtomicBool, Ordering};

/// A kernel call with up to five arguments; returns (rax, rdx).
pub fn raw(call: u64, a0: u64, a1: u64, a2: u64, a3: u64, a4: u64) -> (u64, u64) {
    let (rax, rdx): (u64, u64);
    // SAFETY: `syscall` enters the kernel, which reads only the argument
    // registers and user memory it checks itself; it preserves every
    // register except rax, rdx (results) and rcx, r11 (used by syscall).
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") call => rax,
            in("rdi") a0,
            in("rsi") a1,
            inlateout("rdx") a2 => rdx,
            in("r10") a3,
            in("r8") a4,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    (rax, rdx)
}

/// Raw registers out of a kernel call that uses the message registers.
#[derive(Clone, Copy, Debug)]
pub struct RawResult {
    pub rax: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub r10: u64,
    pub words: Message,
}

/// A kernel call with six arguments and a message in the message
/// registers (the message calls, and the calls that need a sixth
/// argument); returns every register the kernel may set.
#[inline(always)]
pub fn raw_with_message(call: u64, args: [u64; 6], words: Message) -> RawResult {
    let [mut m0, mut m1, mut m2, mut m3] = words;
    let (rax, rdx, rsi, r10): (u64, u64, u64, u64);
    // SAFETY: `syscall` enters the kernel, which reads the argument and
    // message registers and checks every user address itself; it returns
    // results in rax, rdx, rsi, r10 and the message registers, and clobbers
    // rcx and r11 (the syscall instruction). Nothing else changes.
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") call => rax,
            in("rdi") args[0],
            inlateout("rsi") args[1] => rsi,
            inlateout("rdx") args[2] => rdx,
            inlateout("r10") args[3] => r10,
            in("r8") args[4],
            in("r9") args[5],
            inout("r12") m0,
            inout("r13") m1,
            inout("r14") m2,
            inout("r15") m3,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    RawResult { rax, rdx, rsi, r10, words: [m0, m1, m2, m3] }
}

/// Whether [`touch`] touches buffers: set once, before `main`, for a
/// process whose memory arrives page by page on first touch (a UNIX
/// process, paged by the VM manager).
static TOUCH_BUFFERS: AtomicBool = AtomicBool::new(false);

/// Called by the runtime's start-up only (see [`touch`]).
#[doc(hidden)]
pub fn set_touch_buffers(on: bool) {
    TOUCH_BUFFERS.store(on, Ordering::Relaxed);
}

/// Touch every page of `buf`, so that the kernel finds it mapped. A UNIX
/// process's text, data and heap arrive page by page from the VM manager
/// on first touch; the kernel does not take page faults on a process's
/// behalf in the middle of a call (it answers `BadAddress`), so a buffer
/// the process has not touched yet (a string in read-only data, a fresh
/// heap buffer) is touched here first. A read is enough: the kernel makes
/// a copy-on-write page writable itself when it writes a reply. Processes
/// the kernel started (servers, tests) have all their memory mapped and
/// skip this, so a deliberately bad pointer still reaches the kernel.
#[inline]
pub fn touch(buf: &[u8]) {
    if !TOUCH_BUFFERS.load(Ordering::Relaxed) {
        return;
    }
    const PAGE_BYTES: usize = abi::layout::PAGE_SIZE as usize;
    let start = buf.as_ptr() as usize;
    let mut i = 0;
    while i < buf.len() {
        core::hint::black_box(buf[i]);
        i = ((start + i) / PAGE_BYTES + 1) * PAGE_BYTES - start;
    }
}

fn call(c: Call, a0: u64, a1: u64, a2: u64, a3: u64, a4: u64) -> Result<u64, Error> {
    decode_return(raw(c as u64, a0, a1, a2, a3, a4).0)
}

pub fn exit(status: u32) -> ! {
    let _ = call(Call::Exit, status as u64, 0, 0, 0, 0);
    unreachable!("exit returned")
}

/// Start a program from the boot image with the caller's priority.
pub fn spawn(name: &str, args: &str) -> Result<Pid, Error> {
    spawn_with_priority(name, args, PRIORITY_INHERIT)
}

/// Start a program with `priority` (0..=31, or `PRIORITY_INHERIT`).
pub fn spawn_with_priority(name: &str, args: &str, priority: u64) -> Result<Pid, Error> {
    spawn_with_rights(name, args, priority, 0)
}

/// Start a program with `priority` and those of `rights` (`abi::rights`)
/// the caller holds.
pub fn spawn_with_rights(name: &str, args: &str, priority: u64, rights: u64) -> Result<Pid, Error> {
    touch(name.as_bytes());
    touch(args.as_bytes());
    let a =
        [name.as_ptr() as u64, name.len() as u64, args.as_ptr() as u64, args.len() as u64, priority, rights];
    decode_return(raw_with_message(Call::Spawn as u64, a, [0; 4]).rax).map(Pid)
}

/// A stopped child with an empty address space (see `Call::ProcCreate`).
pub fn proc_create(name: &str) -> Result<Pid, Error> {
    touch(name.as_bytes());
    call(Call::ProcCreate, name.as_ptr() as u64, name.len() as u64, 0, 0, 0).map(Pid)
}

/// Give child `pid` a new image from the ELF file `elf` (see `Call::ProcExec`).
pub fn proc_exec(pid: Pid, elf: &[u8], args: &[u8], name: &[u8; 32]) -> Result<(), Error> {
    touch(elf);
    touch(args);
    let a = [
        pid.0,
        elf.as_ptr() as u64,
        elf.len() as u64,
        args.as_ptr() as u64,
        args.len() as u64,
        name.as_ptr() as u64,
    ];
    decode_return(raw_with_message(Call::ProcExec as u64, a, [0; 4]).rax).map(|_| ())
}

/// Give child `pid` a new image with only a stack and `args`, starting
/// at `entry`: its text and data come from a pager (see `Call::ProcImage`).
pub fn proc_image(pid: Pid, entry: u64, args: &[u8], name: &[u8; 32]) -> Result<(), Error> {
    touch(args);
    let a = [pid.0, entry, args.as_ptr() as u64, args.len() as u64, name.as_ptr() as u64, 0];
    decode_return(raw_with_message(Call::ProcImage as u64, a, [0; 4]).rax).map(|_| ())
}

/// Let a stopped child run.
pub fn proc_start(pid: Pid) -> Result<(), Error> {
    call(Call::ProcStart, pid.0, 0, 0, 0, 0).map(|_| ())
}

/// Children's ends arrive as `Kind::ChildExit` messages on `queue`.
pub fn set_exit_queue(queue: u32) -> Result<(), Error> {
    call(Call::SetExitQueue, queue as u64, 0, 0, 0, 0).map(|_| ())
}

/// Change the priority of this process or a child.
pub fn set_priority(pid: Pid, priority: u8) -> Result<(), Error> {
    call(Call::SetPriority, pid.0, priority as u64, 0, 0, 0).map(|_| ())
}

/// Run `pid` (`Pid(0)`: this process) only on CPU `cpu`, or on any CPU
/// again with `None` (`Call::SetAffinity`; another process than the
/// caller needs `abi::rights::DEVICES`).
pub fn set_affinity(pid: Pid, cpu: Option<u64>) -> Result<(), Error> {
    call(Call::SetAffinity, pid.0, cpu.unwrap_or(abi::ANY_CPU), 0, 0, 0).map(|_| ())
}

/// Boot module `index`: its size and name (copied into `name`; returns
/// the name's length). Needs `abi::rights::MODULES`.
pub fn module_info(index: u64, name: &mut [u8]) -> Result<(u64, usize), Error> {
    touch(name);
    let (rax, rdx) = raw(Call::ModuleInfo as u64, index, name.as_mut_ptr() as u64, name.len() as u64, 0, 0);
    decode_return(rax).map(|size| (size, rdx as usize))
}

/// Copy bytes of boot module `index` from `offset`; returns the count.
pub fn module_read(index: u64, offset: u64, buf: &mut [u8]) -> Result<usize, Error> {
    touch(buf);
    call(Call::ModuleRead, index, offset, buf.as_mut_ptr() as u64, buf.len() as u64, 0).map(|n| n as usize)
}

/// Give `dst` (empty) a copy-on-write copy of `src`'s address space and
/// pager regions. Needs `abi::rights::MEMORY`. Returns pages shared.
pub fn space_copy(src: Pid, dst: Pid) -> Result<u64, Error> {
    call(Call::SpaceCopy, src.0, dst.0, 0, 0, 0)
}

/// Wait for a child (`None`: any) to end; returns its pid and how it ended.
pub fn wait(pid: Option<Pid>) -> Result<(Pid, ExitStatus), Error> {
    let (rax, rdx) = raw(Call::Wait as u64, pid.map_or(ANY_CHILD, |p| p.0), 0, 0, 0, 0);
    decode_return(rax).map(|p| (Pid(p), ExitStatus::decode(rdx)))
}

pub fn kill(pid: Pid) -> Result<(), Error> {
    call(Call::Kill, pid.0, 0, 0, 0, 0).map(|_| ())
}

pub fn getpid() -> Pid {
    Pid(call(Call::GetPid, 0, 0, 0, 0, 0).unwrap_or(0))
}

/// The parent's pid, or `None` if it has ended.
pub fn getppid() -> Option<Pid> {
    call(Call::GetPpid, 0, 0, 0, 0, 0).ok().filter(|&p| p != 0).map(Pid)
}

pub fn yield_now() {
    let _ = call(Call::Yield, 0, 0, 0, 0, 0);
}

pub fn sleep_ns(duration_ns: u64) {
    let _ = call(Call::Sleep, duration_ns, 0, 0, 0, 0);
}

pub fn debug_write(bytes: &[u8]) -> Result<u64, Error> {
    touch(bytes);
    call(Call::DebugWrite, bytes.as_ptr() as u64, bytes.len() as u64, 0, 0, 0)
}

pub fn info(key: InfoKey) -> u64 {
    call(Call::Info, key as u64, 0, 0, 0, 0).unwrap_or(0)
}

/// Copy the kernel command line into `buf`; returns its full length.
pub fn kernel_options(buf: &mut [u8]) -> Result<usize, Error> {
    touch(buf);
    call(Call::KernelOptions, buf.as_mut_ptr() as u64, buf.len() as u64, 0, 0, 0).map(|n| n as usize)
}

/// Power off (init only). Status 0 means success.
pub fn shutdown(status: u32) -> Result<(), Error> {
    call(Call::Shutdown, status as u64, 0, 0, 0, 0).map(|_| ())
}

/// The frames the process in process-table slot `slot` holds
/// (`abi::proc_memory`): `Ok(None)` for a free slot, an error past the
/// table.
pub fn proc_memory(slot: u64) -> Result<Option<(Pid, [u8; abi::proc_memory::RECORD_BYTES])>, Error> {
    let mut record = [0u8; abi::proc_memory::RECORD_BYTES];
    touch(&record);
    let pid = call(Call::ProcMemory, slot, record.as_mut_ptr() as u64, record.len() as u64, 0, 0)?;
    Ok((pid != 0).then_some((Pid(pid), record)))
}

/// Read the kernel's event counters (`abi::Counter`) into `out`.
pub fn counters(out: &mut [u64]) -> Result<usize, Error> {
    call(Call::Counters, out.as_mut_ptr() as u64, out.len() as u64, 0, 0, 0).map(|n| n as usize)
}

/// A bootstrap connection (`abi::bootstrap`): the pid and queue, if set.
pub fn bootstrap(index: u64) -> Option<(Pid, u32)> {
    let (rax, rdx) = raw(Call::GetBootstrap as u64, index, 0, 0, 0, 0);
    match decode_return(rax) {
        Ok(pid) if pid != 0 => Some((Pid(pid), rdx as u32)),
        _ => None,
    }
}

/// Set a bootstrap connection that children started afterwards inherit.
pub fn set_bootstrap(index: u64, pid: Pid, queue: u32) -> Result<(), Error> {
    call(Call::SetBootstrap, index, pid.0, queue as u64, 0, 0).map(|_| ())
}

/// Receive interrupt line `irq` as messages on `queue` (drivers only).
pub fn claim_irq(irq: u64, queue: u32) -> Result<(), Error> {
    claim_irq_with(irq, queue, 0)
}

/// [`claim_irq`] with the trigger of an ISA line that carries a PCI
/// interrupt (`abi::irq_flags`).
pub fn claim_irq_with(irq: u64, queue: u32, flags: u64) -> Result<(), Error> {
    call(Call::ClaimIrq, irq, queue as u64, flags, 0, 0).map(|_| ())
}

/// Unmask a claimed line after servicing its device.
pub fn ack_irq(irq: u64) -> Result<(), Error> {
    call(Call::AckIrq, irq, 0, 0, 0, 0).map(|_| ())
}

pub fn release_irq(irq: u64) -> Result<(), Error> {
    call(Call::ReleaseIrq, irq, 0, 0, 0, 0).map(|_| ())
}

/// Use I/O ports `base..base + count` from user mode (drivers only).
pub fn io_ports(base: u16, count: u16) -> Result<(), Error> {
    call(Call::IoPorts, base as u64, count as u64, 0, 0, 0).map(|_| ())
}

/// Read an I/O port granted with [`io_ports`] (a fault otherwise).
pub fn inb(port: u16) -> u8 {
    let value: u8;
    // SAFETY: a user-mode port read; the CPU checks the I/O permission
    // bitmap and faults if this process was not granted the port.
    unsafe { asm!("in al, dx", in("dx") port, out("al") value, options(nomem, nostack, preserves_flags)) };
    value
}

/// Write an I/O port granted with [`io_ports`] (a fault otherwise).
pub fn outb(port: u16, value: u8) {
    // SAFETY: as in inb.
    unsafe { asm!("out dx, al", in("dx") port, in("al") value, options(nomem, nostack, preserves_flags)) };
}

/// The time-stamp counter (the clock benchmarks use; see `InfoKey::TscHz`).
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc is unprivileged unless CR4.TSD is set, which Ridgeback never does.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// A PCI function's address: bus << 8 | device << 3 | function.
pub fn pci_address(bus: u8, device: u8, function: u8) -> u64 {
    (bus as u64) << 8 | ((device & 31) as u64) << 3 | (function & 7) as u64
}

/// Read `width` (1, 2, 4) bytes of PCI configuration space (drivers only).
pub fn pci_config_read(address: u64, offset: u16, width: u8) -> Result<u32, Error> {
    call(Call::PciConfigRead, address, offset as u64, width as u64, 0, 0).map(|v| v as u32)
}

/// Write configuration space of a function this process has claimed.
pub fn pci_config_write(address: u64, offset: u16, width: u8, value: u32) -> Result<(), Error> {
    call(Call::PciConfigWrite, address, offset as u64, width as u64, value as u64, 0).map(|_| ())
}

/// Become the only driver of a PCI function.
pub fn pci_claim(address: u64) -> Result<(), Error> {
    call(Call::PciClaim, address, 0, 0, 0, 0).map(|_| ())
}

/// Map memory BAR `bar` of a claimed function at `va` (page aligned,
/// uncached); returns the BAR's length in bytes.
pub fn map_mmio(address: u64, bar: u8, va: u64) -> Result<u64, Error> {
    call(Call::MapMmio, address, bar as u64, va, 0, 0)
}

/// Map `len` bytes of zeroed, physically contiguous memory below 4 GiB at
/// `va` (page aligned); returns its physical address (drivers only).
pub fn dma_alloc(va: u64, len: u64) -> Result<u64, Error> {
    call(Call::DmaAlloc, va, len, 0, 0, 0)
}

/// Receive MSI-X table entry `entry` of a claimed function as interrupt
/// messages on `queue` (`abi::Call::MsixRoute`: the kernel picks the
/// vector and writes the entry); returns the vector.
pub fn msix_route(address: u64, entry: u16, queue: u32) -> Result<u8, Error> {
    call(Call::MsixRoute, address, entry as u64, queue as u64, 0, 0).map(|v| v as u8)
}

/// Give an MSI-X entry's vector back (`abi::Call::MsixRelease`).
pub fn msix_release(address: u64, entry: u16) -> Result<(), Error> {
    call(Call::MsixRelease, address, entry as u64, 0, 0, 0).map(|_| ())
}

/// Give faults in `start..start + len` of process `pid` (this one or a
/// child) to the pager `pager` (its queue `queue`).
pub fn set_pager(pid: Pid, start: u64, len: u64, pager: Pid, queue: u32) -> Result<(), Error> {
    call(Call::SetPager, pid.0, start, len, pager.0, queue as u64).map(|_| ())
}

/// As a pager: map a page at `addr` in process `pid` (`abi::pager` flags),
/// from this process's page at `src` for COPY and SHARE.
pub fn page_resolve(pid: Pid, addr: u64, src: u64, flags: u64) -> Result<(), Error> {
    call(Call::PageResolve, pid.0, addr, src, flags, 0).map(|_| ())
}

// ---- foreign processes (abi::foreign): the server's side ----

/// Make the stopped child `pid` foreign, its `syscall`s messages on this
/// process's `queue` (see `Call::ForeignAttach`).
pub fn foreign_attach(pid: Pid, queue: u32) -> Result<(), Error> {
    call(Call::ForeignAttach, pid.0, queue as u64, 0, 0, 0).map(|_| ())
}

/// Resume foreign process `pid` with `result` in rax, every other register
/// as it was (see `Call::ForeignResume`).
pub fn foreign_resume(pid: Pid, result: u64) -> Result<(), Error> {
    call(Call::ForeignResume, pid.0, result, 0, 0, 0).map(|_| ())
}

/// Resume foreign process `pid` with all of `regs`.
pub fn foreign_resume_regs(pid: Pid, regs: &abi::foreign::Regs) -> Result<(), Error> {
    let bytes = regs.to_bytes();
    call(Call::ForeignResume, pid.0, 0, bytes.as_ptr() as u64, 0, 0).map(|_| ())
}

/// The registers of the waiting foreign process `pid`.
pub fn foreign_regs(pid: Pid) -> Result<abi::foreign::Regs, Error> {
    let mut bytes = [0u8; abi::foreign::REGS_BYTES];
    call(Call::ForeignRegs, pid.0, bytes.as_mut_ptr() as u64, 0, 0, 0)?;
    Ok(abi::foreign::Regs::from_bytes(&bytes))
}

/// Copy `buf.len()` bytes (at most `abi::foreign::MAX_COPY_BYTES`) from
/// `addr` of foreign process `pid` into `buf`.
pub fn foreign_read(pid: Pid, addr: u64, buf: &mut [u8]) -> Result<u64, Error> {
    touch(buf);
    call(Call::ForeignRead, pid.0, addr, buf.as_mut_ptr() as u64, buf.len() as u64, 0)
}

/// Copy `buf` to `addr` of foreign process `pid`.
pub fn foreign_write(pid: Pid, addr: u64, buf: &[u8]) -> Result<u64, Error> {
    touch(buf);
    call(Call::ForeignWrite, pid.0, addr, buf.as_ptr() as u64, buf.len() as u64, 0)
}

/// A stopped copy of the waiting foreign process `pid` (Linux `fork`).
pub fn foreign_fork(pid: Pid) -> Result<Pid, Error> {
    call(Call::ForeignFork, pid.0, 0, 0, 0, 0).map(Pid)
}

/// Hand the stopped foreign process `pid` to `server` (this process's
/// twin after a UNIX `fork`), its calls on `queue`, and let it run.
pub fn foreign_give(pid: Pid, server: Pid, queue: u32) -> Result<(), Error> {
    call(Call::ForeignGive, pid.0, server.0, queue as u64, 0, 0).map(|_| ())
}

/// The x87/SSE registers (`fxsave` image) of the waiting foreign process
/// `pid` (see `Call::ForeignFpu`).
pub fn foreign_fpu(pid: Pid) -> Result<[u8; abi::foreign::FPU_BYTES], Error> {
    let mut bytes = [0u8; abi::foreign::FPU_BYTES];
    touch(&bytes);
    call(Call::ForeignFpu, pid.0, bytes.as_mut_ptr() as u64, 0, 0, 0)?;
    Ok(bytes)
}

/// Load the x87/SSE registers of the waiting foreign process `pid` from
/// an `fxsave` image (`abi::foreign::FPU_BYTES` bytes; shorter is
/// `InvalidArgument`).
pub fn foreign_set_fpu(pid: Pid, image: &[u8]) -> Result<(), Error> {
    if image.len() < abi::foreign::FPU_BYTES {
        return Err(Error::InvalidArgument);
    }
    touch(image);
    call(Call::ForeignFpu, pid.0, image.as_ptr() as u64, 1, 0, 0).map(|_| ())
}

/// Take back the pages of `addr..addr+len` (page aligned) from the
/// waiting foreign process `pid` this process serves: their memory goes
/// back to the system. Returns the pages taken (`Call::ForeignUnmap`).
pub fn foreign_unmap(pid: Pid, addr: u64, len: u64) -> Result<u64, Error> {
    call(Call::ForeignUnmap, pid.0, addr, len, 0, 0)
}

/// The most owners any frame this process maps in `addr..addr+len` (page
/// aligned, all mapped) has: 1 when no other mapping, message or loan
/// shares any of them (`Call::PageOwners`). A server that lent its pages
/// with `pager::SHARED` reuses them only at 1.
pub fn page_owners(addr: u64, len: u64) -> Result<u64, Error> {
    call(Call::PageOwners, addr, len, 0, 0, 0)
}

/// Make the pages of `addr..addr+len` (page aligned) of the waiting
/// foreign process `pid` read-only, or writable again
/// (`Call::ForeignProtect`). Returns the pages changed.
pub fn foreign_protect(pid: Pid, addr: u64, len: u64, is_writable: bool) -> Result<u64, Error> {
    call(Call::ForeignProtect, pid.0, addr, len, is_writable as u64, 0)
}
