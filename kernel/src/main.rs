//! The Ridgeback microkernel.
//!
//! Design principles, from Ridge OS (seed 001, §§3–5):
//! - The kernel provides processes, memory management, message passing and
//!   interrupt handling, and nothing else; every other service is a user
//!   process reached by messages.
//! - The kernel is synchronous: it runs with interrupts off, never blocks
//!   inside, and every operation is short and bounded. One lock guards it
//!   on multiprocessors (`state::KERNEL`).
//! - Simple and clear algorithms over fast and clever ones; performance
//!   comes from doing less (fewer kernel entries, copies and locks), and is
//!   measured, not assumed.
//!
//! Map of the crate, bottom up (each module uses only those above it in
//! this list; the one exception is the assembly entry into [`trap`]):
//! - [`arch`]: the hardware layer, the only module with `unsafe`: boot,
//!   frames and page tables, descriptors, APICs, CPUs, the entry and exit
//!   paths, the register convention;
//! - [`console`], [`power`]: the kernel log, powering off;
//! - [`memory`]: address spaces (copy-on-write, loans) over arch's tables;
//!   [`usermem`]: the one checked way to read and write user memory;
//!   [`loader`]: program images;
//! - [`process`], [`message`], [`reply_table`], [`irq`]: the records the
//!   kernel keeps (plain data);
//! - [`state`]: the one `Kernel` behind the one lock, with accessors;
//! - [`sched`]: choosing what each CPU runs;
//! - [`ipc`]: the message system (Ridge §5) and the synchronous call;
//!   [`devices`]: interrupt lines, I/O ports, bootstrap connections;
//!   [`pager`]: user-level pagers and address-space copies;
//!   [`foreign`]: foreign (Linux) processes, whose `syscall` is a
//!   message to their server;
//!   [`fastpath`]: `call` and `reply_wait` when the peer waits;
//! - [`lifecycle`]: how processes begin and end; [`charges`]: what a
//!   UNIX process may make and ask for (charges, priority ceilings; it
//!   ends charged processes with lifecycle's `kill`, and lifecycle asks
//!   it before making one);
//! - [`syscall`]: one function per kernel call, dispatched in number order;
//! - [`trap`]: what each kernel entry does.
//!
//! Every limit is in `kernel_core::limits` (listed in docs/kernel-options.md).
//!
//! What it is not: a place for file systems, drivers or network stacks.

#![no_std]
#![no_main]
#![deny(unsafe_code)]

extern crate alloc;

#[allow(unsafe_code)]
mod arch;
mod charges;
mod console;
mod devices;
mod fastpath;
mod foreign;
mod ipc;
mod irq;
mod lifecycle;
mod loader;
mod memory;
mod message;
mod pager;
mod power;
mod process;
mod reply_table;
mod sched;
mod state;
mod syscall;
mod trap;
mod usermem;

use arch::{apic, cpu, percpu, serial};
use kernel_core::limits::{MAX_CMDLINE_BYTES, MAX_CPUS, TICK_MS};
use kernel_core::options;

/// Entered from arch's boot path on the boot CPU, on CPU 0's kernel stack.
pub fn kernel_main() -> ! {
    serial::init();
    kprintln!("Ridgeback kernel {} booting", env!("CARGO_PKG_VERSION"));
    let boot = arch::boot::init_memory().unwrap_or_else(|why| panic!("{why}"));
    let (kernel_words, init_args) = options::split_init_args(boot.cmdline());
    let opts = options::parse(kernel_words, |w| kprintln!("warning: {w}"));
    kprintln!("command line: \"{}\"", boot.cmdline());
    if boot.cmdline_dropped_bytes > 0 {
        kprintln!(
            "warning: the command line is longer than {MAX_CMDLINE_BYTES} bytes: {}{} bytes at its end were dropped (whole words; the line above is what is kept)",
            boot.cmdline_dropped_bytes,
            if boot.is_cmdline_dropped_more { " or more" } else { "" },
        );
    }
    if boot.modules_ignored > 0 {
        kprintln!("warning: {} boot modules beyond the limit ignored", boot.modules_ignored);
    }
    kprintln!(
        "memory: {} MiB usable, {} MiB free after the kernel and {} boot modules",
        boot.usable().iter().map(|r| r.end - r.start).sum::<u64>() >> 20,
        memory::free_bytes() >> 20,
        boot.modules().len()
    );
    kprintln!(
        "memory: {} KiB of it kept for the servers and the session's shell",
        memory::reserve_bytes() >> 10
    );

    arch::init_boot_cpu();
    apic::mask_legacy_pic();
    let platform = arch::firmware::discover();
    if let Some(why) = platform.warning {
        kprintln!("warning: {why}");
    }
    apic::calibrate();
    kprintln!("timer: TSC {} MHz", apic::tsc_hz() / 1_000_000);
    match arch::rtc::read_at_boot() {
        Some(secs) => kprintln!("clock: RTC says {secs} s since 1970 (UTC)"),
        None => kprintln!("warning: no usable CMOS clock; the calendar time starts at 1970"),
    }
    if let Some(io) = platform.io_apic {
        io.mask_all();
        kprintln!("I/O APIC at {:#x}: {} lines, all masked", io.phys(), io.line_count());
    }
    {
        let mut k = state::KERNEL.lock();
        k.configure(opts.timeslice_ms.div_ceil(TICK_MS), opts.verbose);
        k.set_profiling(opts.profile);
        k.cpu_mut(0).online = true;
        k.irqs_mut().routing = irq::IrqRouting {
            io_apic: platform.io_apic,
            bsp_apic_id: apic::lapic_id(),
            isa_override: platform.madt.isa_override,
        };
    }
    let warnings = arch::smp::start_other_cpus(&platform.madt, opts.max_cpus.unwrap_or(MAX_CPUS));
    for line in warnings.lines() {
        kprintln!("warning: {line}");
    }
    kprintln!("smp: {} CPUs online", percpu::cpus_online());

    let init = boot.module(opts.init).unwrap_or_else(|| {
        let names: alloc::vec::Vec<&str> = boot.modules().iter().map(|m| m.name()).collect();
        panic!("init program `{}` is not in the boot image (it has: {names:?})", opts.init)
    });
    {
        let mut k = state::KERNEL.lock();
        let pid = k
            .spawn(None, init, init_args.as_bytes(), abi::DEFAULT_PRIORITY, abi::rights::ALL)
            .expect("starting init");
        k.set_init_slot(pid.slot() as usize);
    }
    apic::start_timer(TICK_MS);
    arch::trap::enter_idle()
}

/// Entered by a started CPU (arch's smp.rs) once its descriptors and
/// per-CPU record are set up, on its kernel stack.
pub fn ap_main(cpu_index: usize) -> ! {
    {
        let mut k = state::KERNEL.lock();
        k.cpu_mut(cpu_index).online = true;
    }
    apic::start_timer(TICK_MS);
    arch::trap::enter_idle()
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    apic::send_ipi_all_others(apic::VECTOR_HALT);
    console::print_unlocked(format_args!(
        "\nKERNEL PANIC on CPU {}: {info}\n",
        percpu::current_cpu_or_zero()
    ));
    serial::qemu_exit(abi::qemu_exit::FAILURE_CODE);
    cpu::halt_forever()
}
