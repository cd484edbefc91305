//! System calls (`abi::Call` 16–31): the debug console, information,
//! counters, the kernel command line, shutdown and the boot image.

use super::args;
use crate::arch::{apic, cpu, percpu};
use crate::state::{Kernel, Next};
use crate::usermem::UserSlice;
use abi::layout::MAX_DEBUG_WRITE_BYTES;
use abi::{COUNTER_COUNT, Counter, Error, InfoKey, rights};

/// Copy `data` (at most `buf_len` bytes of it) to the caller's buffer.
fn copy_out(k: &mut Kernel, caller: usize, buf: u64, buf_len: u64, data: &[u8]) -> Result<usize, Error> {
    let n = (buf_len as usize).min(data.len());
    UserSlice::new(buf, n as u64)?.write(k.space_mut(caller), &data[..n])?;
    k.add(Counter::BytesCopied, n as u64);
    Ok(n)
}

/// `debug_write(ptr, len) -> len`: bytes to the kernel console.
pub fn debug_write(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [ptr, len, ..] = args(k, caller);
    if len > MAX_DEBUG_WRITE_BYTES {
        return Err(Error::InvalidArgument);
    }
    let src = UserSlice::new(ptr, len)?;
    let space = k.space(caller);
    // Check the whole range before printing any of it.
    src.check(space, false)?;
    let mut chunk = [0u8; 256];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(chunk.len() as u64) as usize;
        src.read_at(space, done, &mut chunk[..n])?;
        crate::console::write_bytes(&chunk[..n]);
        done += n as u64;
    }
    k.add(Counter::BytesCopied, len);
    Ok(Next::Return(len))
}

/// `info(key) -> value`.
pub fn info(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [key, ..] = args(k, caller);
    let cpu = percpu::current_cpu();
    let value = match InfoKey::from_raw(key).ok_or(Error::InvalidArgument)? {
        InfoKey::CpusOnline => percpu::cpus_online() as u64,
        InfoKey::CurrentCpu => cpu as u64,
        InfoKey::TscHz => apic::tsc_hz(),
        InfoKey::UptimeNs => apic::uptime_ns(),
        InfoKey::BootTsc => apic::boot_tsc(),
        InfoKey::BootRealtimeNs => crate::arch::rtc::boot_realtime_ns(),
        InfoKey::RetiredRoots => crate::arch::paging::retired_root_count(),
        InfoKey::Priority => k.proc(caller).priority as u64,
        InfoKey::ProcessCount => k.live_processes() as u64,
        InfoKey::FreeMemoryBytes => crate::memory::free_bytes(),
        InfoKey::SharedFrames => crate::memory::shared_frame_count() as u64,
        InfoKey::CpuTimeNs => {
            let running = cpu::rdtsc().saturating_sub(k.cpu(cpu).dispatched_tsc);
            crate::sched::tsc_to_ns(k.proc(caller).cpu_time_tsc + running)
        }
    };
    Ok(Next::Return(value))
}

/// `proc_memory(slot, buf, buf_len) -> pid` (0: a free slot): the frames
/// the process in `slot` holds, by kind (`abi::proc_memory`), and its
/// name. A read-only walk of its tables: the soak accounts for every frame
/// with it (docs/reliability.md, "Soak").
pub fn proc_memory(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    use abi::proc_memory as pm;
    let [slot, buf, buf_len, ..] = args(k, caller);
    if slot >= k.slots().end as u64 {
        return Err(Error::InvalidArgument);
    }
    let slot = slot as usize;
    let p = k.proc(slot);
    if p.state == crate::process::State::Free {
        return Ok(Next::Return(0));
    }
    // A zombie, or a process between images, holds no address space.
    let usage = p.space.as_ref().map(|s| s.table().usage()).unwrap_or_default();
    let mut record = [0u8; pm::RECORD_BYTES];
    let words = [
        (pm::TABLES, usage.tables),
        (pm::PRIVATE, usage.private),
        (pm::SHARED, usage.shared),
        (pm::DEVICE, usage.device),
        (pm::HEAP, usage.heap),
    ];
    for (i, v) in words {
        record[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    copy_name(&mut record, p.name());
    let pid = k.pid_of(slot).0;
    copy_out(k, caller, buf, buf_len, &record)?;
    Ok(Next::Return(pid))
}

fn copy_name(record: &mut [u8; abi::proc_memory::RECORD_BYTES], name: &str) {
    let at = abi::proc_memory::WORDS * 8;
    let n = name.len().min(abi::proc_memory::NAME_BYTES);
    record[at..at + n].copy_from_slice(&name.as_bytes()[..n]);
}

/// `kernel_options(buf, buf_len) -> length of the whole command line`.
pub fn kernel_options(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [buf, buf_len, ..] = args(k, caller);
    let line = crate::arch::multiboot::cmdline().as_bytes();
    copy_out(k, caller, buf, buf_len, line)?;
    Ok(Next::Return(line.len() as u64))
}

/// `shutdown(status)`: init only; does not return.
pub fn shutdown(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [status, ..] = args(k, caller);
    if !k.is_init(caller) {
        return Err(Error::PermissionDenied);
    }
    crate::power::power_off(status as u32)
}

/// `counters(buf, count) -> counters copied`.
pub fn counters(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [buf, count, ..] = args(k, caller);
    let mut bytes = [0u8; COUNTER_COUNT * 8];
    for (i, c) in k.counter_values().iter().enumerate() {
        bytes[i * 8..i * 8 + 8].copy_from_slice(&c.to_le_bytes());
    }
    let n = (count as usize).min(COUNTER_COUNT);
    copy_out(k, caller, buf, (n * 8) as u64, &bytes[..n * 8])?;
    Ok(Next::Return(n as u64))
}

/// `module_info(index, name_buf, name_buf_len) -> (size, name length)`:
/// needs `rights::MODULES`.
pub fn module_info(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [index, buf, buf_len, ..] = args(k, caller);
    if k.proc(caller).rights & rights::MODULES == 0 {
        return Err(Error::PermissionDenied);
    }
    let module =
        crate::arch::multiboot::boot_info().modules().get(index as usize).ok_or(Error::InvalidArgument)?;
    let name = module.name().as_bytes();
    let n = (buf_len as usize).min(name.len());
    UserSlice::new(buf, n as u64)?.write(k.space_mut(caller), &name[..n])?;
    k.proc_mut(caller).frame.set_second_result(name.len() as u64);
    Ok(Next::Return(module.bytes().len() as u64))
}

/// `module_read(index, offset, buf, len) -> bytes read`: needs
/// `rights::MODULES`.
pub fn module_read(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [index, offset, buf, len, ..] = args(k, caller);
    if k.proc(caller).rights & rights::MODULES == 0 {
        return Err(Error::PermissionDenied);
    }
    let bytes = crate::arch::multiboot::boot_info()
        .modules()
        .get(index as usize)
        .ok_or(Error::InvalidArgument)?
        .bytes();
    let start = (offset as usize).min(bytes.len());
    let n = (len as usize).min(bytes.len() - start);
    copy_out(k, caller, buf, n as u64, &bytes[start..start + n]).map(|n| Next::Return(n as u64))
}
