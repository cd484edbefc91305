//! Kernel calls: one function per call, of one shape,
//! `fn(&mut Kernel, caller) -> Result<Next, Error>`, dispatched by one
//! `match` in call-number order (Hubris's `sys/kern/src/syscalls.rs`).
//!
//! Each function reads its arguments through the typed register views of
//! arch/regs.rs, checks them, and calls the mechanism that does the work
//! (ipc.rs, lifecycle.rs, pager.rs, devices.rs, sched.rs) with typed
//! arguments. Every misuse is answered with the [`Error`] that names it. A
//! call that blocks returns [`Next::AsIs`]: whoever completes it writes its
//! result into the caller's saved registers.
//!
//! The calls, by group (the `abi` crate's order):
//! - [`process`]: exit … proc_image (0–15);
//! - [`system`]: debug_write … module_read (16–31);
//! - [`message`]: init_qseg … reply_wait, forward_wait (32–47);
//! - [`device`]: claim_irq … get_bootstrap (48–53), pci_config_read … msix_release (64–70);
//! - [`memory`]: set_pager … space_copy (54–56);
//! - [`foreign`]: foreign_attach … foreign_protect (80–89).
//!
//! A foreign process's `syscall` is none of these: it becomes a message
//! to its server (crate::foreign), whatever its number.
//!
//! The call fast path (fastpath.rs) takes `call` and `reply_wait` first
//! when it can; what it declines arrives here.

mod device;
mod foreign;
mod memory;
mod message;
mod process;
mod system;

use crate::state::{Kernel, Next};
use abi::{Call, Error};

/// Do the kernel call of the process running on `cpu`. Never inlined: the
/// fast path in `trap::syscall_handler` must not pay for the general
/// path's registers in its prologue, and the hot message calls are
/// inlined here instead (their `#[inline(always)]`).
#[inline(never)]
pub fn dispatch(k: &mut Kernel, cpu: usize) {
    let caller = k.current(cpu);
    if k.proc(caller).foreign.is_some() {
        k.foreign_syscall(caller);
        return;
    }
    let Some(call) = Call::from_raw(k.proc(caller).frame.call_number()) else {
        k.proc_mut(caller).frame.set_result(Err(Error::NoSuchCall));
        return;
    };
    // One arm per call, in call-number order.
    let result = match call {
        Call::Exit => process::exit(k, caller),
        Call::Spawn => process::spawn(k, caller),
        Call::Wait => process::wait(k, caller),
        Call::Kill => process::kill(k, caller),
        Call::GetPid => process::get_pid(k, caller),
        Call::GetPpid => process::get_ppid(k, caller),
        Call::Yield => process::yield_now(k, caller),
        Call::Sleep => process::sleep(k, caller),
        Call::ProcCreate => process::proc_create(k, caller),
        Call::ProcFork => process::proc_fork(k, caller),
        Call::ProcExec => process::proc_exec(k, caller),
        Call::ProcStart => process::proc_start(k, caller),
        Call::SetExitQueue => process::set_exit_queue(k, caller),
        Call::SetPriority => process::set_priority(k, caller),
        Call::ProcImage => process::proc_image(k, caller),
        Call::SetAffinity => process::set_affinity(k, caller),
        Call::DebugWrite => system::debug_write(k, caller),
        Call::Info => system::info(k, caller),
        Call::KernelOptions => system::kernel_options(k, caller),
        Call::Shutdown => system::shutdown(k, caller),
        Call::Counters => system::counters(k, caller),
        Call::ModuleInfo => system::module_info(k, caller),
        Call::ModuleRead => system::module_read(k, caller),
        Call::ProcMemory => system::proc_memory(k, caller),
        Call::InitQSeg => message::init_qseg(k, caller),
        Call::OpenQueue => message::open_queue(k, caller),
        Call::CloseQueue => message::close_queue(k, caller),
        Call::AllowSender => message::allow_sender(k, caller),
        Call::OpenLink => message::open_link(k, caller),
        Call::CloseLink => message::close_link(k, caller),
        Call::Send => message::send(k, caller),
        Call::SendData => message::send_data(k, caller),
        Call::ReceiveData => message::receive_data(k, caller),
        Call::Test => message::test(k, caller),
        Call::Arm => message::arm(k, caller),
        Call::WaitArmed => message::wait_armed(k, caller),
        Call::Call => message::call(k, caller),
        Call::Reply => message::reply(k, caller),
        Call::ReplyWait => message::reply_wait(k, caller),
        Call::ForwardWait => message::forward_wait(k, caller),
        Call::ClaimIrq => device::claim_irq(k, caller),
        Call::AckIrq => device::ack_irq(k, caller),
        Call::ReleaseIrq => device::release_irq(k, caller),
        Call::IoPorts => device::io_ports(k, caller),
        Call::SetBootstrap => device::set_bootstrap(k, caller),
        Call::GetBootstrap => device::get_bootstrap(k, caller),
        Call::SetPager => memory::set_pager(k, caller),
        Call::PageResolve => memory::page_resolve(k, caller),
        Call::SpaceCopy => memory::space_copy(k, caller),
        Call::LeaseRead => message::lease_read(k, caller),
        Call::LeaseWrite => message::lease_write(k, caller),
        Call::LeaseCopy => message::lease_copy(k, caller),
        Call::PciConfigRead => device::pci_config_read(k, caller),
        Call::PciConfigWrite => device::pci_config_write(k, caller),
        Call::PciClaim => device::pci_claim(k, caller),
        Call::MapMmio => device::map_mmio(k, caller),
        Call::DmaAlloc => device::dma_alloc(k, caller),
        Call::MsixRoute => device::msix_route(k, caller),
        Call::MsixRelease => device::msix_release(k, caller),
        Call::ForeignAttach => foreign::attach(k, caller),
        Call::ForeignResume => foreign::resume(k, caller),
        Call::ForeignRead => foreign::read(k, caller),
        Call::ForeignWrite => foreign::write(k, caller),
        Call::ForeignRegs => foreign::regs(k, caller),
        Call::ForeignFork => foreign::fork(k, caller),
        Call::ForeignGive => foreign::give(k, caller),
        Call::ForeignFpu => foreign::fpu(k, caller),
        Call::ForeignUnmap => foreign::unmap(k, caller),
        Call::ForeignProtect => foreign::protect(k, caller),
        Call::PageOwners => memory::page_owners(k, caller),
    };
    match result {
        Ok(Next::AsIs) => {}
        Ok(Next::Return(value)) => k.proc_mut(caller).frame.set_result(Ok(value)),
        Err(e) => k.proc_mut(caller).frame.set_result(Err(e)),
    }
}

/// The caller's argument registers.
fn args(k: &Kernel, caller: usize) -> [u64; 6] {
    k.proc(caller).frame.call_args()
}

/// The caller's message registers m0..m3.
fn message_words(k: &Kernel, caller: usize) -> [u64; 4] {
    k.proc(caller).frame.message()
}

/// A call done with no value to return.
fn done(r: Result<(), Error>) -> Result<Next, Error> {
    r.map(|()| Next::Return(0))
}
