//! Process calls (`abi::Call` 0–15): exit, spawn, wait, kill, ids, yield,
//! sleep, and the calls servers build processes with.

use super::{args, done, message_words};
use crate::arch::{apic, percpu};
use crate::lifecycle::{ExecImage, UserRange};
use crate::process::{Blocked, State};
use crate::state::{Kernel, Next};
use crate::usermem::UserSlice;
use abi::layout::{MAX_ARGS_BYTES, MAX_PROGRAM_NAME_BYTES};
use abi::{ANY_CHILD, Error, ExitStatus, PRIORITY_INHERIT, Pid};

/// `exit(code)`: does not return.
pub fn exit(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [code, ..] = args(k, caller);
    k.finish(caller, ExitStatus::Exited(code as u32));
    Ok(Next::AsIs)
}

/// `spawn(name_ptr, name_len, args_ptr, args_len, priority, rights) -> pid`.
pub fn spawn(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [name_ptr, name_len, args_ptr, args_len, prio, rights] = args(k, caller);
    if name_len == 0 || name_len > MAX_PROGRAM_NAME_BYTES || args_len > MAX_ARGS_BYTES {
        return Err(Error::InvalidArgument);
    }
    let priority = match prio {
        // Its own, but never above its ceiling (it may be serving a call
        // at a higher caller's priority): charges.rs.
        PRIORITY_INHERIT => k.proc(caller).priority.min(k.proc(caller).priority_ceiling),
        p if p <= abi::MAX_PRIORITY as u64 => p as u8,
        _ => return Err(Error::InvalidArgument),
    };
    k.check_priority_given(caller, priority)?;
    k.check_may_make(caller)?;
    let space = k.space(caller);
    let mut name = [0u8; MAX_PROGRAM_NAME_BYTES as usize];
    UserSlice::new(name_ptr, name_len)?.read(space, &mut name[..name_len as usize])?;
    let mut arg_bytes = [0u8; MAX_ARGS_BYTES as usize];
    UserSlice::new(args_ptr, args_len)?.read(space, &mut arg_bytes[..args_len as usize])?;
    let name = core::str::from_utf8(&name[..name_len as usize]).map_err(|_| Error::NoSuchProgram)?;
    let module = crate::arch::multiboot::boot_info().module(name).ok_or(Error::NoSuchProgram)?;
    // A child gets only rights its parent has.
    let rights = rights & k.proc(caller).rights;
    let pid = k.spawn(Some(caller), module, &arg_bytes[..args_len as usize], priority, rights)?;
    Ok(Next::Return(pid.0))
}

/// `wait(pid) -> (pid, status)`.
pub fn wait(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [target, ..] = args(k, caller);
    let target = (target != ANY_CHILD).then_some(Pid(target));
    k.wait(caller, target)?;
    Ok(Next::AsIs)
}

/// `kill(pid) -> 0`: a child of the caller, itself, or anyone for init.
pub fn kill(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, ..] = args(k, caller);
    let target = k.slot_of(Pid(pid)).ok_or(Error::NoSuchProcess)?;
    let me = k.pid_of(caller);
    let is_allowed = target == caller || k.proc(target).parent == Some(me) || k.is_init(caller);
    if !is_allowed {
        return Err(Error::PermissionDenied);
    }
    // The result first: killing oneself does not return.
    k.proc_mut(caller).set_return(Ok(0));
    k.kill(target);
    Ok(Next::AsIs)
}

/// `getpid() -> pid`: answered by the kernel alone (Ridge Table 2).
pub fn get_pid(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    Ok(Next::Return(k.pid_of(caller).0))
}

/// `getppid() -> pid`, or 0 when the parent is gone.
pub fn get_ppid(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let parent = k.proc(caller).parent.filter(|&p| k.slot_of(p).is_some());
    Ok(Next::Return(parent.map_or(0, |p| p.0)))
}

/// `yield() -> 0`: give up the rest of the time slice.
pub fn yield_now(k: &mut Kernel, _caller: usize) -> Result<Next, Error> {
    k.cpu_mut(percpu::current_cpu()).slice_expired = true;
    Ok(Next::Return(0))
}

/// `sleep(duration_ns) -> 0`.
pub fn sleep(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [duration_ns, ..] = args(k, caller);
    let p = k.proc_mut(caller);
    p.wake_at_ns = apic::uptime_ns().saturating_add(duration_ns);
    p.state = State::Blocked(Blocked::Sleep);
    k.sleeper_added();
    Ok(Next::Return(0))
}

/// `proc_create(name_ptr, name_len) -> pid`.
pub fn proc_create(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [name_ptr, name_len, ..] = args(k, caller);
    k.proc_create(caller, name_ptr, name_len).map(|pid| Next::Return(pid.0))
}

/// `proc_fork(reply_handle; m0..m3) -> pid`.
pub fn proc_fork(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [handle, ..] = args(k, caller);
    let reply = message_words(k, caller);
    k.proc_fork(caller, handle, reply).map(|pid| Next::Return(pid.0))
}

/// `proc_exec(pid, elf_ptr, elf_len, args_ptr, args_len, name_ptr) -> 0`.
pub fn proc_exec(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, elf_ptr, elf_len, args_ptr, args_len, name_ptr] = args(k, caller);
    let image = ExecImage::Elf(UserRange { addr: elf_ptr, len: elf_len });
    done(k.proc_exec(caller, pid, image, UserRange { addr: args_ptr, len: args_len }, name_ptr))
}

/// `proc_start(pid) -> 0`.
pub fn proc_start(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, ..] = args(k, caller);
    done(k.proc_start(caller, pid))
}

/// `set_exit_queue(queue) -> 0`.
pub fn set_exit_queue(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [queue, ..] = args(k, caller);
    done(k.set_exit_queue(caller, queue))
}

/// `set_priority(pid, priority) -> 0`.
pub fn set_priority(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, priority, ..] = args(k, caller);
    done(k.set_priority(caller, pid, priority))
}

/// `set_affinity(pid, cpu) -> 0`.
pub fn set_affinity(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, cpu, ..] = args(k, caller);
    done(k.set_affinity(caller, pid, cpu))
}

/// `proc_image(pid, entry, args_ptr, args_len, name_ptr) -> 0`.
pub fn proc_image(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, entry, args_ptr, args_len, name_ptr, _] = args(k, caller);
    let image = ExecImage::Pager { entry };
    done(k.proc_exec(caller, pid, image, UserRange { addr: args_ptr, len: args_len }, name_ptr))
}
