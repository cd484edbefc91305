//! Every static limit of the kernel, with one line on why (xv6's `param.h`).
//!
//! The first part is the kernel's own: tune them here. The second part
//! bounds what a user program may ask for; a program must know them, so
//! they are defined in `abi` (one definition) and only listed here, so that
//! this file is the whole list. `docs/kernel-options.md` has a table of all
//! of them (a host test below keeps it complete).

// ---- the kernel's own limits ----

/// Process slots. Bounded so the process table is a fixed array and no
/// kernel call can exhaust kernel memory by creating processes. Set in
/// `abi` ([`abi::PROCESS_SLOTS`]) because UNIX pids are computed from it.
pub const MAX_PROCESSES: usize = abi::PROCESS_SLOTS as usize;
/// CPUs the kernel will bring up; extra CPUs in the MADT are left halted.
pub const MAX_CPUS: usize = 16;
/// Bytes of each CPU's kernel stack. The kernel is event-driven (one stack
/// per CPU, not per process) and never blocks inside, so the stack only
/// holds one kernel call's frames.
pub const KERNEL_STACK_BYTES: usize = 64 * 1024;
/// Bytes of each CPU's stack for exceptions that must not trust the
/// current stack (double fault, NMI, machine check).
pub const EMERGENCY_STACK_BYTES: usize = 16 * 1024;
/// Period of the local APIC timer interrupt.
pub const TICK_MS: u64 = 10;
/// Time slice among processes of equal priority (Ridge OS §5: "time-slicing
/// scheduling occurs every twenty milliseconds").
pub const TIME_SLICE_MS: u64 = 20;
/// Kernel heap size, carved out of physical memory at boot.
pub const KERNEL_HEAP_BYTES: usize = 8 * 1024 * 1024;
/// Free memory kept for the servers, init and the session's shell, as a
/// share of the memory free at boot (1/16): an ordinary process's request
/// that would dip into it is refused (docs/memory.md, "Out of memory").
pub const MEMORY_RESERVE_DIVISOR: usize = 16;
/// The reserve's floor: room for the shell's copy-on-write copies after
/// its forks and for the servers' tables to grow.
pub const MIN_MEMORY_RESERVE_BYTES: u64 = 2 * 1024 * 1024;
/// Most program segments (PT_LOAD headers) accepted in a user program.
pub const MAX_LOAD_SEGMENTS: usize = 8;
/// Most programs (Multiboot modules) in a boot image.
pub const MAX_BOOT_MODULES: usize = 128;
/// Longest kernel command line kept, in bytes.
pub const MAX_CMDLINE_BYTES: usize = 1024;
/// Longest process name kept (for logs and `ps`), in bytes.
pub const MAX_PROCESS_NAME_BYTES: usize = 32;
/// Lines of the I/O APIC the kernel hands out to drivers (QEMU's I/O
/// APIC has 24).
pub const IRQ_LINES: usize = 24;
/// Most physical memory the kernel manages (the bitmap is sized for it).
pub const MAX_PHYS_BYTES: u64 = 64 * 1024 * 1024 * 1024;
/// Usable RAM ranges kept from the firmware's memory map.
pub const MAX_MEMORY_RANGES: usize = 32;
/// PCI functions claimed by drivers at once (`abi::Call::PciClaim`).
pub const MAX_PCI_CLAIMS: usize = 32;
/// Largest DMA allocation in one `dma_alloc` (physically contiguous).
pub const MAX_DMA_BYTES: u64 = 4 * 1024 * 1024;
/// Interrupt vectors the kernel routes MSI-X table entries to, for all
/// drivers together (`abi::Call::MsixRoute`): a static pool, so a driver
/// cannot take the vectors of the kernel's own interrupts; one per queue
/// of each device is the common use (virtio-blk needs one).
pub const MSIX_VECTORS: usize = 32;
/// Entries of one function's MSI-X table the kernel will route (the PCI
/// spec allows 2048; a device queue each is far fewer).
pub const MAX_MSIX_ENTRIES: usize = 64;

// ---- limits on what a program asks for, defined in `abi` ----

pub use abi::MAX_CHARGED_PROCESSES;
pub use abi::MAX_PRIORITY;
pub use abi::foreign::MAX_COPY_BYTES;
pub use abi::layout::{
    MAX_ARGS_BYTES, MAX_DEBUG_WRITE_BYTES, MAX_EXEC_BYTES, MAX_PROGRAM_NAME_BYTES, USER_HEAP_MAX_BYTES,
    USER_STACK_BYTES,
};
pub use abi::msg::{MAX_ALLOWED_SENDERS, MAX_DATA_BYTES, MAX_LINKS, MAX_MESSAGES, MAX_PAGES, MAX_QUEUES};
pub use abi::pager::MAX_REGIONS;
#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::String;

    /// The names this file defines or lists, in order.
    fn names() -> std::vec::Vec<String> {
        let source = include_str!("limits.rs");
        let source = &source[..source.find("#[cfg(test)]").expect("the tests follow the limits")];
        let mut names = std::vec::Vec::new();
        let mut in_use = false;
        for line in source.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("pub const ") {
                names.push(String::from(rest.split(':').next().unwrap()));
            } else if line.starts_with("pub use ") || in_use {
                in_use = !line.ends_with(';');
                let list = line.trim_start_matches("pub use ").trim_end_matches(';');
                let list = list.rsplit("::").next().unwrap();
                for name in list.split([',', '{', '}']).map(str::trim).filter(|n| !n.is_empty()) {
                    names.push(String::from(name));
                }
            }
        }
        names
    }

    #[test]
    fn every_limit_has_a_row_in_the_docs() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/kernel-options.md"))
            .expect("docs/kernel-options.md exists");
        let names = names();
        assert!(names.len() >= 25, "the parse found the limits: {names:?}");
        for name in names {
            assert!(
                doc.contains(&std::format!("| `{name}` |")),
                "docs/kernel-options.md lacks the row for {name}"
            );
        }
    }
}
