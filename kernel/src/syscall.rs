//! Kernel calls: decoding the registers (see the `abi` crate's register
//! convention) and doing each call.
//!
//! Every call checks every argument and answers a misuse with the
//! [`Error`] that names it. A call that blocks leaves its process in a
//! `Blocked` state; whoever wakes it writes the result into its saved
//! registers.

use crate::arch::apic;
use crate::arch::percpu;
use crate::process::{Blocked, State};
use crate::sched::Kernel;
use crate::usermem::UserSlice;
use abi::layout::{MAX_ARGS_BYTES, MAX_DEBUG_WRITE_BYTES, MAX_PROGRAM_NAME_BYTES};
use abi::{ANY_CHILD, COUNTER_COUNT, Call, Error, ExitStatus, InfoKey, PRIORITY_INHERIT, Pid};

/// Do the kernel call of the process running on `cpu`.
pub fn dispatch(k: &mut Kernel, cpu: usize) {
    let slot = k.current(cpu);
    let f = &k.procs[slot].frame;
    let Some(call) = Call::from_raw(f.rax) else {
        k.procs[slot].set_return(Err(Error::NoSuchCall));
        return;
    };
    let (a0, a1, a2, a3, a4, a5) = (f.rdi, f.rsi, f.rdx, f.r10, f.r8, f.r9);
    let words = [f.r12, f.r13, f.r14, f.r15];
    // Calls that may block return None: the process's registers are then
    // written by whoever completes the call (or already hold the result).
    let blocking = match call {
        Call::ReceiveData => Some(k.sys_receive(slot, a0, a1, a2, a3)),
        Call::WaitArmed => Some(k.sys_wait_armed(slot)),
        Call::Call => Some(k.sys_call(slot, [a0, a1, a2, a3, a4], words)),
        Call::ReplyWait => Some(k.sys_reply_wait(slot, [a0, a1, a2, a3, a4, a5], words)),
        _ => None,
    };
    if let Some(outcome) = blocking {
        if let Some(result) = outcome {
            k.procs[slot].set_return(result);
        }
        return;
    }
    let result = match call {
        Call::Exit => {
            k.finish(slot, ExitStatus::Exited(a0 as u32));
            return;
        }
        Call::Spawn => spawn(k, slot, [a0, a1, a2, a3, a4, a5]),
        Call::ProcCreate => k.sys_proc_create(slot, a0, a1),
        Call::ProcFork => k.sys_proc_fork(slot, a0, words),
        Call::ProcExec => k.sys_proc_exec(slot, [a0, a1, a2, a3, a4, a5], None),
        // proc_image(pid, entry, args_ptr, args_len, name_ptr)
        Call::ProcImage => k.sys_proc_exec(slot, [a0, 0, 0, a2, a3, a4], Some(a1)),
        Call::ProcStart => k.sys_proc_start(slot, a0),
        Call::SetExitQueue => k.sys_set_exit_queue(slot, a0),
        Call::SetPriority => k.sys_set_priority(slot, a0, a1),
        Call::ModuleInfo => match k.sys_module_info(slot, a0, a1, a2) {
            Ok((size, name_len)) => {
                k.procs[slot].frame.rdx = name_len;
                Ok(size)
            }
            Err(e) => Err(e),
        },
        Call::ModuleRead => k.sys_module_read(slot, [a0, a1, a2, a3]),
        Call::SpaceCopy => k.sys_space_copy(slot, a0, a1),
        Call::Wait => return wait(k, slot, a0),
        Call::Kill => kill(k, slot, a0),
        Call::GetPid => Ok(k.pid_of(slot).0),
        Call::GetPpid => Ok(k.procs[slot].parent.filter(|&p| k.slot_of(p).is_some()).map_or(0, |p| p.0)),
        Call::Yield => {
            k.cpus[cpu].slice_expired = true;
            Ok(0)
        }
        Call::Sleep => {
            let p = &mut k.procs[slot];
            p.wake_at_ns = apic::uptime_ns().saturating_add(a0);
            p.state = State::Blocked(Blocked::Sleep);
            p.set_return(Ok(0));
            k.sleepers += 1;
            return;
        }
        Call::DebugWrite => debug_write(k, slot, a0, a1),
        Call::Info => info(k, slot, cpu, a0),
        Call::KernelOptions => {
            let line = crate::cmdline().as_bytes();
            copy_out(k, slot, a0, a1, line).map(|_| line.len() as u64)
        }
        Call::Shutdown => {
            if Some(slot) != k.init_slot {
                Err(Error::PermissionDenied)
            } else {
                crate::power_off(a0 as u32)
            }
        }
        Call::Counters => {
            let mut bytes = [0u8; COUNTER_COUNT * 8];
            for (i, c) in k.counter_values().iter().enumerate() {
                bytes[i * 8..i * 8 + 8].copy_from_slice(&c.to_le_bytes());
            }
            let n = (a1 as usize).min(COUNTER_COUNT);
            copy_out(k, slot, a0, (n * 8) as u64, &bytes[..n * 8]).map(|_| n as u64)
        }
        Call::InitQSeg => k.sys_init_qseg(slot, [a0, a1, a2, a3]),
        Call::OpenQueue => k.sys_open_queue(slot, a0, a1),
        Call::CloseQueue => k.sys_close_queue(slot, a0),
        Call::AllowSender => k.sys_allow_sender(slot, a0, a1),
        Call::OpenLink => k.sys_open_link(slot, a0, a1),
        Call::CloseLink => k.sys_close_link(slot, a0),
        Call::Send => k.sys_send(slot, a0, words),
        Call::SendData => k.sys_send_data(slot, a0, a1, a2, words),
        Call::Test => k.sys_test(slot, a0),
        Call::Arm => k.sys_arm(slot, a0, a1),
        Call::Reply => k.sys_reply(slot, a0, a1, a2, words),
        Call::ClaimIrq => k.sys_claim_irq(slot, a0, a1),
        Call::AckIrq => k.sys_ack_irq(slot, a0),
        Call::ReleaseIrq => k.sys_release_irq(slot, a0),
        Call::IoPorts => k.sys_io_ports(slot, a0, a1),
        Call::SetBootstrap => k.sys_set_bootstrap(slot, a0, a1, a2),
        Call::GetBootstrap => k.sys_get_bootstrap(slot, a0),
        Call::SetPager => k.sys_set_pager(slot, [a0, a1, a2, a3, a4]),
        Call::PageResolve => k.sys_page_resolve(slot, [a0, a1, a2, a3]),
        Call::ReceiveData | Call::WaitArmed | Call::Call | Call::ReplyWait => unreachable!("handled above"),
    };
    k.procs[slot].set_return(result);
}

/// Copy `data` (at most `buf_len` bytes of it) to the caller's buffer.
fn copy_out(k: &mut Kernel, slot: usize, buf: u64, buf_len: u64, data: &[u8]) -> Result<(), Error> {
    let n = (buf_len as usize).min(data.len());
    let dst = UserSlice::new(buf, n as u64)?;
    dst.write(k.procs[slot].space.as_mut().expect("live process"), &data[..n])?;
    k.add(abi::Counter::BytesCopied, n as u64);
    Ok(())
}

fn debug_write(k: &mut Kernel, slot: usize, ptr: u64, len: u64) -> Result<u64, Error> {
    if len > MAX_DEBUG_WRITE_BYTES {
        return Err(Error::InvalidArgument);
    }
    let src = UserSlice::new(ptr, len)?;
    let space = k.procs[slot].space.as_ref().expect("live process");
    // Check the whole range before printing any of it.
    let mut chunk = [0u8; 256];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(chunk.len() as u64) as usize;
        src.read_at(space, done, &mut chunk[..n])?;
        done += n as u64;
    }
    done = 0;
    while done < len {
        let n = (len - done).min(chunk.len() as u64) as usize;
        src.read_at(space, done, &mut chunk[..n])?;
        crate::console::write_bytes(&chunk[..n]);
        done += n as u64;
    }
    k.add(abi::Counter::BytesCopied, len);
    Ok(len)
}

fn spawn(k: &mut Kernel, slot: usize, a: [u64; 6]) -> Result<u64, Error> {
    let [name_ptr, name_len, args_ptr, args_len, prio, rights] = a;
    if name_len == 0 || name_len > MAX_PROGRAM_NAME_BYTES || args_len > MAX_ARGS_BYTES {
        return Err(Error::InvalidArgument);
    }
    let priority = match prio {
        PRIORITY_INHERIT => k.procs[slot].priority,
        p if p <= abi::MAX_PRIORITY as u64 => p as u8,
        _ => return Err(Error::InvalidArgument),
    };
    let space = k.procs[slot].space.as_ref().expect("live process");
    let mut name = [0u8; MAX_PROGRAM_NAME_BYTES as usize];
    UserSlice::new(name_ptr, name_len)?.read(space, &mut name[..name_len as usize])?;
    let mut args = [0u8; MAX_ARGS_BYTES as usize];
    UserSlice::new(args_ptr, args_len)?.read(space, &mut args[..args_len as usize])?;
    let name = core::str::from_utf8(&name[..name_len as usize]).map_err(|_| Error::NoSuchProgram)?;
    let module = crate::boot_info().module(name).ok_or(Error::NoSuchProgram)?;
    let rights = rights & k.procs[slot].rights;
    k.spawn(Some(slot), module, &args[..args_len as usize], priority, rights).map(|pid| pid.0)
}

fn wait(k: &mut Kernel, slot: usize, target: u64) {
    let me = k.pid_of(slot);
    let target = (target != ANY_CHILD).then_some(Pid(target));
    let mut has_live_child = false;
    for child in 0..k.procs.len() {
        let c = &k.procs[child];
        if c.parent != Some(me) || c.state == State::Free || target.is_some_and(|t| t != k.pid_of(child)) {
            continue;
        }
        if c.state == State::Zombie {
            let (pid, status) = (k.pid_of(child).0, c.exit_status);
            k.free_slot(child);
            let p = &mut k.procs[slot];
            p.frame.rax = pid;
            p.frame.rdx = status;
            return;
        }
        has_live_child = true;
    }
    if has_live_child {
        k.procs[slot].state = State::Blocked(Blocked::Wait(target));
    } else {
        k.procs[slot].set_return(Err(Error::NoChildren));
    }
}

fn kill(k: &mut Kernel, slot: usize, pid: u64) -> Result<u64, Error> {
    let target = k.slot_of(Pid(pid)).ok_or(Error::NoSuchProcess)?;
    let me = k.pid_of(slot);
    let allowed = target == slot || k.procs[target].parent == Some(me) || Some(slot) == k.init_slot;
    if !allowed {
        return Err(Error::PermissionDenied);
    }
    // Set the result first: killing oneself does not return.
    k.procs[slot].set_return(Ok(0));
    k.kill(target);
    Ok(0)
}

fn info(k: &Kernel, slot: usize, cpu: usize, key: u64) -> Result<u64, Error> {
    Ok(match InfoKey::from_raw(key).ok_or(Error::InvalidArgument)? {
        InfoKey::CpusOnline => percpu::cpus_online() as u64,
        InfoKey::CurrentCpu => cpu as u64,
        InfoKey::TscHz => apic::tsc_hz(),
        InfoKey::UptimeNs => apic::uptime_ns(),
        InfoKey::Priority => k.procs[slot].priority as u64,
        InfoKey::ProcessCount => k.live_processes() as u64,
        InfoKey::FreeMemoryBytes => crate::memory::free_bytes(),
        InfoKey::SharedFrames => crate::memory::shared_frame_count() as u64,
        InfoKey::CpuTimeNs => {
            let p = &k.procs[slot];
            let running = crate::arch::cpu::rdtsc().saturating_sub(k.cpus[cpu].dispatched_tsc);
            crate::sched::tsc_to_ns(p.cpu_time_tsc + running)
        }
    })
}
