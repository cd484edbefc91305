//! What the kernel does on each entry: kernel calls, timer ticks,
//! inter-processor interrupts, and faults.
//!
//! Each function takes the kernel lock, does its work and returns the
//! saved registers of whatever should run next (a slot of the process
//! table, or the CPU's idle context), which the exit code (arch/trap.rs)
//! restores. A kernel call's registers are already in the caller's slot
//! (the `syscall` entry saves them there); an interrupt's or exception's
//! are on the kernel stack, and `Kernel::save` copies them into the slot.

use crate::arch::apic::{self, VECTOR_HALT, VECTOR_RESCHEDULE, VECTOR_SPURIOUS, VECTOR_TIMER};
use crate::arch::percpu;
use crate::arch::trap::{Exit, TrapFrame};
use crate::state::{KERNEL, Kernel};
use abi::{Counter, ExitStatus};
use kernel_core::limits::{IRQ_LINES, MSIX_VECTORS};

/// `syscall` from a user process, whose registers the entry code has
/// saved in its slot of the process table. Returns, with the kernel lock
/// released, where to leave to; inlined into arch's entry wrapper, which
/// leaves and never returns (so nothing is saved around the fast path).
#[inline(always)]
pub fn syscall_handler() -> Exit {
    let cpu = percpu::current_cpu();
    let mut k = KERNEL.lock();
    if let Some(next) = k.fastpath(cpu) {
        drop(k);
        // The fast path switches only to a process blocked in a kernel
        // call: its frame was saved by the syscall entry.
        return Exit::SyscallFrame(next);
    }
    let next = general_path(&mut k, cpu);
    drop(k);
    Exit::Frame(next)
}

/// Every kernel call the fast path does not take: kept out of line so that
/// the fast path (inlined into `syscall_handler`) pays nothing for it.
#[inline(never)]
fn general_path(k: &mut Kernel, cpu: usize) -> *mut TrapFrame {
    k.count(Counter::KernelCalls);
    crate::syscall::dispatch(k, cpu);
    next_to_run(k, cpu)
}

/// The end of every kernel entry but the fast path's: a kill asked of the
/// process that ran here takes effect, then the scheduler chooses.
fn next_to_run(k: &mut Kernel, cpu: usize) -> *mut TrapFrame {
    k.finish_if_kill_requested(cpu);
    k.resume(cpu)
}

/// Every exception and interrupt. Null: go back to `frame` as it is.
pub extern "C" fn trap_handler(frame: &mut TrapFrame) -> *mut TrapFrame {
    let vector = frame.vector() as u8;
    if vector < 32 && !frame.is_user() {
        kernel_fault(frame);
    }
    match vector {
        // No EOI for spurious interrupts (SDM §10.9).
        VECTOR_SPURIOUS => return core::ptr::null_mut(),
        VECTOR_HALT => crate::arch::cpu::halt_forever(),
        _ => {}
    }
    let cpu = percpu::current_cpu();
    let mut k = KERNEL.lock();
    k.save(cpu, frame);
    match vector {
        0..32 => {
            k.count(Counter::Exceptions);
            let slot = k.current(cpu);
            // A write to a present copy-on-write page (error code: present,
            // write) is resolved here, not a fault of the program.
            const PRESENT_AND_WRITE: u64 = abi::page_fault::PRESENT | abi::page_fault::WRITE;
            if vector == abi::vector::PAGE_FAULT
                && frame.error_code() & PRESENT_AND_WRITE == PRESENT_AND_WRITE
            {
                let address = crate::arch::cpu::read_cr2();
                if k.space_mut(slot).resolve_copy_on_write(address) {
                    k.note_local_flush(cpu, slot);
                    k.count(Counter::CowCopies);
                    return next_to_run(&mut k, cpu);
                }
            }
            let address =
                if vector == abi::vector::PAGE_FAULT { crate::arch::cpu::read_cr2() } else { frame.rip() };
            if vector == abi::vector::PAGE_FAULT && k.page_fault_to_pager(slot, address, frame.error_code()) {
                return next_to_run(&mut k, cpu);
            }
            if vector == abi::vector::PAGE_FAULT && k.default_heap_fault(slot, address, frame.error_code()) {
                return next_to_run(&mut k, cpu);
            }
            let is_page_fault = vector == abi::vector::PAGE_FAULT;
            if is_page_fault && k.space_mut(slot).is_copy_on_write(address) {
                // The write was allowed; only the copy found no frame. The
                // process asking for memory is the one refused
                // (docs/memory.md, "Out of memory"): one line, no register
                // dump, since the program did nothing wrong.
                crate::kprintln!(
                    "process {} ({:#x}) killed: out of memory (a copy-on-write copy at {address:#x} found no free frame)",
                    k.proc(slot).name(),
                    k.pid_of(slot).0,
                );
            } else if is_page_fault && k.is_default_heap(slot, address, frame.error_code()) {
                // A heap page the kernel gives on first touch found no frame.
                crate::kprintln!(
                    "process {} ({:#x}) killed: out of memory (its heap page at {address:#x} found no free frame)",
                    k.proc(slot).name(),
                    k.pid_of(slot).0,
                );
            } else if k.proc(slot).foreign.is_some() {
                // A foreign (Linux) program's fault is its SIGSEGV: its
                // server reports it on the program's standard error and
                // ends with the signal (servers/linux), as Linux prints
                // nothing on the console for a program's segfault.
            } else {
                crate::kprintln!(
                    "process {} ({:#x}) killed: {} (vector {vector}) at {address:#x}, error code {:#x}\n{}",
                    k.proc(slot).name(),
                    k.pid_of(slot).0,
                    exception_name(vector),
                    frame.error_code(),
                    frame
                );
            }
            k.finish(slot, ExitStatus::Fault { vector, address });
        }
        VECTOR_TIMER => {
            k.count(Counter::Interrupts);
            apic::eoi();
            k.tick(cpu);
        }
        VECTOR_RESCHEDULE => {
            k.count(Counter::Interrupts);
            apic::eoi();
        }
        v if (apic::IRQ_BASE..apic::IRQ_BASE + IRQ_LINES as u8).contains(&v) => {
            k.count(Counter::Interrupts);
            k.irq_fired((v - apic::IRQ_BASE) as u32);
            apic::eoi();
        }
        v if (apic::MSIX_VECTOR_BASE..apic::MSIX_VECTOR_BASE + MSIX_VECTORS as u8).contains(&v) => {
            k.count(Counter::Interrupts);
            k.msix_fired((v - apic::MSIX_VECTOR_BASE) as usize);
            apic::eoi();
        }
        _ => {
            // No other vector is routed anywhere; one arriving is counted.
            k.count(Counter::Interrupts);
            apic::eoi();
        }
    }
    next_to_run(&mut k, cpu)
}

/// A fault in the kernel itself is a bug: report everything and stop.
fn kernel_fault(frame: &TrapFrame) -> ! {
    let cr2 = crate::arch::cpu::read_cr2();
    panic!(
        "{} (vector {}) in the kernel at rip {:#x}, error code {:#x}, cr2 {:#x}\n{}",
        exception_name(frame.vector() as u8),
        frame.vector(),
        frame.rip(),
        frame.error_code(),
        cr2,
        frame
    );
}

pub fn exception_name(vector: u8) -> &'static str {
    match vector {
        0 => "divide error",
        1 => "debug",
        2 => "non-maskable interrupt",
        3 => "breakpoint",
        4 => "overflow",
        5 => "bound range exceeded",
        6 => "invalid opcode",
        7 => "device not available",
        8 => "double fault",
        10 => "invalid TSS",
        11 => "segment not present",
        12 => "stack-segment fault",
        13 => "general protection fault",
        14 => "page fault",
        16 => "x87 floating-point error",
        17 => "alignment check",
        18 => "machine check",
        19 => "SIMD floating-point error",
        _ => "exception",
    }
}
