//! The Ridgeback microkernel.
//!
//! Design principles, from Ridge OS (seed 001, §§3–5):
//! - The kernel provides processes, memory management, message passing and
//!   interrupt handling, and nothing else; every other service is a user
//!   process reached by messages.
//! - The kernel is synchronous: it runs with interrupts off, never blocks
//!   inside, and every operation is short and bounded. One lock guards it
//!   on multiprocessors (see `sched`).
//! - Simple and clear algorithms over fast and clever ones; performance
//!   comes from doing less (fewer kernel entries, copies and locks), and is
//!   measured, not assumed.
//!
//! Map of the crate, bottom up:
//! - [`arch`]: the hardware layer, the only module with `unsafe`;
//! - [`bootinfo`]: what the boot loader passed (memory map, modules, command line);
//! - [`memory`]: physical frames, the kernel's page tables, address spaces;
//! - [`usermem`]: the one checked way to read and write user memory;
//! - [`process`], [`sched`]: the process table, the kernel lock, scheduling;
//! - [`loader`]: starting programs from the boot image;
//! - [`syscall`], [`trap`]: what each kernel entry does.
//!
//! What it is not: a place for file systems, drivers or network stacks.

#![no_std]
#![no_main]
#![deny(unsafe_code)]

extern crate alloc;

#[allow(unsafe_code)]
mod arch;
mod bootinfo;
mod console;
mod devices;
mod fastpath;
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

use arch::trap::TrapFrame;
use arch::{apic, cpu, descriptors, paging, percpu, serial, smp};
use core::sync::atomic::Ordering;
use kernel_core::acpi;
use kernel_core::frame_alloc::PhysRange;
use kernel_core::limits::MAX_CPUS;
use kernel_core::options::{self, Options};

static OPTIONS: spin::Once<Options<'static>> = spin::Once::new();

/// Entered from boot.rs on the boot CPU, on CPU 0's kernel stack.
pub extern "C" fn kernel_main(multiboot_magic: u32, multiboot_info: u32) -> ! {
    serial::init();
    kprintln!("Ridgeback kernel {} booting", env!("CARGO_PKG_VERSION"));
    if multiboot_magic != arch::boot::MULTIBOOT_BOOTLOADER_MAGIC {
        panic!("not started by a Multiboot loader (eax = {multiboot_magic:#x})");
    }
    let boot = bootinfo::init(multiboot_info as u64);
    let (kernel_words, init_args) = options::split_init_args(boot.cmdline());
    let opts = *OPTIONS.call_once(|| options::parse(kernel_words, |w| kprintln!("warning: {w}")));
    kprintln!("command line: \"{}\"", boot.cmdline());
    if boot.modules_ignored > 0 {
        kprintln!("warning: {} boot modules beyond the limit ignored", boot.modules_ignored);
    }

    let image = arch::boot::kernel_image();
    let kernel_phys = PhysRange::new(image.phys_start, image.phys_end);
    memory::init(boot, kernel_phys);
    kprintln!(
        "memory: {} MiB usable, {} MiB free after the kernel and {} boot modules",
        boot.usable().iter().map(|r| r.end - r.start).sum::<u64>() >> 20,
        memory::free_bytes() >> 20,
        boot.modules().len()
    );

    descriptors::init_idt(arch::trap::stub_address);
    bring_up_this_cpu(0);
    apic::mask_legacy_pic();
    let madt = find_madt();
    apic::calibrate();
    kprintln!("timer: TSC {} MHz", apic::tsc_hz() / 1_000_000);
    if madt.io_apic_phys != 0 {
        let io = apic::IoApic { phys: madt.io_apic_phys };
        io.mask_all();
        kprintln!("I/O APIC at {:#x}: {} lines, all masked", io.phys, io.line_count());
    }
    {
        let mut k = state::KERNEL.lock();
        k.configure(opts.timeslice_ms.div_ceil(kernel_core::limits::TICK_MS), opts.verbose);
        k.cpu_mut(0).online = true;
        k.cpu_mut(0).loaded_root = memory::kernel_root();
        k.irqs_mut().routing = irq::IrqRouting {
            io_apic_phys: madt.io_apic_phys,
            bsp_apic_id: apic::lapic_id(),
            isa_override: madt.isa_override,
        };
    }
    start_other_cpus(&madt, opts.max_cpus.unwrap_or(MAX_CPUS));
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
    apic::start_timer(kernel_core::limits::TICK_MS);
    arch::trap::enter_frame(&TrapFrame::idle_start(percpu::kernel_stack_top(0)));
}

/// Per-CPU set-up shared by the boot CPU and the others.
fn bring_up_this_cpu(cpu_index: usize) {
    descriptors::load(cpu_index);
    let apic_id = if cpu_index == 0 { 0 } else { apic::lapic_id() };
    percpu::install(cpu_index, apic_id);
    arch::trap::init_syscall();
    cpu::enable_protection_features();
    apic::enable_local();
    if cpu_index == 0 {
        percpu::install(0, apic::lapic_id());
    }
    percpu::CPUS_ONLINE.fetch_add(1, Ordering::AcqRel);
}

fn find_madt() -> acpi::Madt {
    // The RSDP is in the first KiB of the EBDA or in 0xE0000..0x100000
    // (ACPI 6.5 §5.2.5.1).
    let ebda =
        (u16::from_le_bytes([paging::phys_slice(0x40e, 2)[0], paging::phys_slice(0x40e, 2)[1]]) as u64) << 4;
    let root = [(ebda, 1024), (0xe0000, 0x20000)]
        .iter()
        .filter(|(base, _)| *base != 0)
        .find_map(|&(base, len)| acpi::find_root(paging::phys_slice(base, len)));
    let Some((root_pa, is_xsdt)) = root else {
        kprintln!("warning: no ACPI tables; running on the boot CPU only");
        return acpi::Madt::default();
    };
    let table = |pa: u64| acpi::table_len(paging::phys_slice(pa, 36)).map(|len| paging::phys_slice(pa, len));
    let madt = table(root_pa)
        .into_iter()
        .flat_map(|root| acpi::root_entries(root, is_xsdt))
        .filter_map(table)
        .find(|t| t.starts_with(b"APIC"))
        .and_then(acpi::parse_madt);
    madt.unwrap_or_else(|| {
        kprintln!("warning: no usable MADT; running on the boot CPU only");
        acpi::Madt::default()
    })
}

/// Start every other CPU the MADT lists, one at a time (INIT-SIPI-SIPI).
fn start_other_cpus(madt: &acpi::Madt, max_cpus: usize) {
    if madt.cpus_ignored > 0 {
        kprintln!("warning: {} CPUs beyond the limit of {MAX_CPUS} left halted", madt.cpus_ignored);
    }
    let my_apic = apic::lapic_id();
    let root = memory::kernel_root();
    // Lend the boot identity map of the first GiB to the starting CPUs: the
    // trampoline runs at its physical address while it turns paging on.
    paging::set_pml4_slot(root, 0, paging::pml4_slot(smp::boot_pml4_phys(), 0));
    smp::install_trampoline();
    let efer_bits = (1 << 8) | if cpu::has_nx() { cpu::EFER_NXE } else { 0 };
    let mut next_index = 1;
    for &apic_id in &madt.cpu_apic_ids[..madt.cpu_count] {
        if apic_id == my_apic {
            continue;
        }
        if next_index >= max_cpus.min(MAX_CPUS) {
            break;
        }
        let before = percpu::cpus_online();
        smp::set_parameters(
            root,
            percpu::kernel_stack_top(next_index),
            ap_main,
            next_index as u64,
            efer_bits,
        );
        apic::send_init(apic_id);
        apic::delay_us(10_000);
        for _ in 0..2 {
            apic::send_startup(apic_id, (smp::TRAMPOLINE_PHYS >> 12) as u8);
            apic::delay_us(200);
            if percpu::cpus_online() > before {
                break;
            }
        }
        // Wait up to a second for it to report in.
        let mut waited_us = 0;
        while percpu::cpus_online() == before && waited_us < 1_000_000 {
            apic::delay_us(100);
            waited_us += 100;
        }
        // The index and stack are used up either way: a CPU that reports in
        // late must not share them with the next one.
        next_index += 1;
        if percpu::cpus_online() == before {
            kprintln!("warning: CPU with APIC id {apic_id} did not start");
        }
    }
    paging::set_pml4_slot(root, 0, 0);
    cpu::switch_address_space(root);
}

/// Entered by a starting CPU from the trampoline, on its kernel stack.
extern "C" fn ap_main(cpu_index: u64) -> ! {
    let cpu_index = cpu_index as usize;
    {
        let mut k = state::KERNEL.lock();
        k.cpu_mut(cpu_index).online = true;
        k.cpu_mut(cpu_index).loaded_root = memory::kernel_root();
    }
    bring_up_this_cpu(cpu_index);
    apic::start_timer(kernel_core::limits::TICK_MS);
    let top = percpu::kernel_stack_top(cpu_index);
    arch::trap::enter_frame(&TrapFrame::idle_start(top));
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
