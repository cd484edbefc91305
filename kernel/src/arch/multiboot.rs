//! What the boot loader told us (Multiboot spec 0.6.96 §3.3): the memory
//! map, the command line and the boot-image modules (one user program
//! each). The map and the command line are copied into kernel memory at
//! boot; the modules stay where the loader put them, reserved from the
//! frame allocator for ever (boot.rs), so their bytes can be lent as
//! `&'static [u8]`.

use super::phys::phys_slice;
use kernel_core::frame_alloc::PhysRange;
use kernel_core::limits::{MAX_BOOT_MODULES, MAX_CMDLINE_BYTES, MAX_MEMORY_RANGES};

static BOOT_INFO: spin::Once<BootInfo> = spin::Once::new();

/// Parse the boot loader's information once, at boot (boot.rs, before the
/// frame allocator exists, while the first GiB is mapped).
pub(super) fn init(multiboot_info: u32) -> &'static BootInfo {
    // SAFETY: called once by boot.rs with the address the loader passed,
    // before any of that memory can be reused.
    BOOT_INFO.call_once(|| unsafe { parse(multiboot_info as u64) })
}

/// What the boot loader passed (after boot.rs's `init_memory`).
pub fn boot_info() -> &'static BootInfo {
    BOOT_INFO.get().expect("boot info parsed")
}

/// The kernel command line, for the `kernel_options` call.
pub fn cmdline() -> &'static str {
    boot_info().cmdline()
}

const FLAG_CMDLINE: u32 = 1 << 2;
const FLAG_MODULES: u32 = 1 << 3;
const FLAG_MEMORY_MAP: u32 = 1 << 6;
const MAX_MODULE_NAME: usize = abi::layout::MAX_PROGRAM_NAME_BYTES as usize;

#[derive(Clone, Copy)]
pub struct Module {
    pub start: u64,
    pub end: u64,
    name: [u8; MAX_MODULE_NAME],
    name_len: usize,
}

impl Module {
    pub fn name(&self) -> &str {
        core::str::from_utf8(&self.name[..self.name_len]).unwrap_or("?")
    }
    pub fn bytes(&self) -> &'static [u8] {
        // SAFETY: module memory is reserved from the frame allocator when
        // memory is set up (boot.rs) and nothing ever writes it.
        unsafe { phys_slice(self.start, (self.end - self.start) as usize) }
    }
}

pub struct BootInfo {
    pub usable: [PhysRange; MAX_MEMORY_RANGES],
    pub usable_count: usize,
    /// End of the highest usable RAM.
    pub ram_end: u64,
    cmdline: [u8; MAX_CMDLINE_BYTES],
    cmdline_len: usize,
    /// Bytes of the command line dropped because it did not fit (whole
    /// words), counted up to what was read; `is_cmdline_dropped_more`: and
    /// more beyond those.
    pub cmdline_dropped_bytes: usize,
    pub is_cmdline_dropped_more: bool,
    pub modules: [Module; MAX_BOOT_MODULES],
    pub module_count: usize,
    pub modules_ignored: usize,
}

impl BootInfo {
    pub fn cmdline(&self) -> &str {
        core::str::from_utf8(&self.cmdline[..self.cmdline_len]).unwrap_or("")
    }
    pub fn usable(&self) -> &[PhysRange] {
        &self.usable[..self.usable_count]
    }
    pub fn modules(&self) -> &[Module] {
        &self.modules[..self.module_count]
    }
    pub fn module(&self, name: &str) -> Option<&Module> {
        self.modules().iter().find(|m| m.name() == name)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Copy a NUL-terminated string at physical `pa` into `out`; returns its length.
///
/// # Safety
/// As [`parse`]: the loader's memory, before it is reused.
unsafe fn read_c_string(pa: u64, out: &mut [u8]) -> usize {
    let mut n = 0;
    while n < out.len() {
        // SAFETY: the caller's promise.
        let b = unsafe { phys_slice(pa + n as u64, 1) }[0];
        if b == 0 {
            break;
        }
        out[n] = b;
        n += 1;
    }
    n
}

/// Whether the string at physical `pa` goes on past its first `n` bytes
/// (no NUL at `pa + n`).
///
/// # Safety
/// As [`read_c_string`], which read the `n` bytes before.
unsafe fn goes_on_after(pa: u64, n: usize) -> bool {
    // SAFETY: the caller's promise: the string's next byte (its NUL, if
    // it ends there).
    let next = unsafe { phys_slice(pa + n as u64, 1) };
    next[0] != 0
}

/// Parse the Multiboot information at physical `info_pa` (reached through
/// the boot mapping of the first GiB, where QEMU and GRUB place it).
/// # Safety
/// `info_pa` is the Multiboot information the loader passed, read before
/// its memory (and that of the strings and tables it points to, all in
/// the first GiB) can be reused.
unsafe fn parse(info_pa: u64) -> BootInfo {
    // SAFETY: the caller's promise (and for every read below).
    let info = unsafe { phys_slice(info_pa, 52) };
    let flags = u32_at(info, 0);
    let mut bi = BootInfo {
        usable: [PhysRange::new(0, 0); MAX_MEMORY_RANGES],
        usable_count: 0,
        ram_end: 0,
        cmdline: [0; MAX_CMDLINE_BYTES],
        cmdline_len: 0,
        cmdline_dropped_bytes: 0,
        is_cmdline_dropped_more: false,
        modules: [Module { start: 0, end: 0, name: [0; MAX_MODULE_NAME], name_len: 0 }; MAX_BOOT_MODULES],
        module_count: 0,
        modules_ignored: 0,
    };
    if flags & FLAG_CMDLINE != 0 {
        // Room for the kernel's path as well as the options, and one byte
        // more than is kept, to see where a cut falls.
        let mut raw = [0u8; 2 * MAX_CMDLINE_BYTES + 1];
        let pa = u32_at(info, 16) as u64;
        // SAFETY: the loader's memory, read during `parse` (see its contract).
        let len = unsafe { read_c_string(pa, &mut raw) };
        // SAFETY: as above; the string's byte after those read.
        let is_more = len == raw.len() && unsafe { goes_on_after(pa, len) };
        // Multiboot loaders put the kernel's own path first (QEMU and GRUB
        // both do); the options follow it.
        let raw = &raw[..len];
        let first_end = raw.iter().position(|&b| b == b' ').unwrap_or(raw.len());
        let skip = if raw[..first_end].contains(&b'=') { 0 } else { first_end };
        let rest = raw[skip..].trim_ascii_start();
        // A line too long loses whole words only, and the kernel says so
        // (issue 16: the `-- echo ok` part was lost without a word).
        let (kept, is_cut) = kernel_core::options::whole_words(rest, MAX_CMDLINE_BYTES, is_more);
        bi.cmdline[..kept.len()].copy_from_slice(kept);
        bi.cmdline_len = kept.len();
        bi.cmdline_dropped_bytes = if is_cut { (rest.len() - kept.len()).max(1) } else { 0 };
        bi.is_cmdline_dropped_more = is_more;
    }
    if flags & FLAG_MEMORY_MAP != 0 {
        let (len, addr) = (u32_at(info, 44) as u64, u32_at(info, 48) as u64);
        // SAFETY: the loader's memory, read during `parse` (see its contract).
        let map = unsafe { phys_slice(addr, len as usize) };
        let mut at = 0usize;
        while at + 24 <= map.len() {
            let size = u32_at(map, at) as usize;
            let (base, length, kind) = (u64_at(map, at + 4), u64_at(map, at + 12), u32_at(map, at + 20));
            if kind == 1 && length > 0 && bi.usable_count < MAX_MEMORY_RANGES {
                bi.usable[bi.usable_count] = PhysRange::new(base, base + length);
                bi.usable_count += 1;
                bi.ram_end = bi.ram_end.max(base + length);
            }
            at += size + 4;
        }
    }
    if flags & FLAG_MODULES != 0 {
        let (count, addr) = (u32_at(info, 20) as usize, u32_at(info, 24) as u64);
        for i in 0..count {
            // SAFETY: the loader's memory, read during `parse` (see its contract).
            let m = unsafe { phys_slice(addr + 16 * i as u64, 16) };
            if bi.module_count == MAX_BOOT_MODULES {
                bi.modules_ignored += 1;
                continue;
            }
            let mut full = [0u8; MAX_CMDLINE_BYTES];
            // SAFETY: the loader's memory, read during `parse` (see its contract).
            let full_len = unsafe { read_c_string(u32_at(m, 8) as u64, &mut full) };
            // The module string is "path [args]"; the program's name is the
            // path's last component.
            let path = full[..full_len].split(|&b| b == b' ').next().unwrap_or(&[]);
            let base = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
            let module = &mut bi.modules[bi.module_count];
            module.start = u32_at(m, 0) as u64;
            module.end = u32_at(m, 4) as u64;
            module.name_len = base.len().min(MAX_MODULE_NAME);
            module.name[..module.name_len].copy_from_slice(&base[..module.name_len]);
            bi.module_count += 1;
        }
    }
    bi
}
