//! The user address-space layout (x86-64, 4-level paging, 48-bit addresses).
//!
//! The lower half (`0 ..= USER_END`) belongs to the process; the upper half
//! is the kernel's and is shared by every address space.

/// Size of a page and of a physical frame.
pub const PAGE_SIZE: u64 = 4096;
/// Lowest address a user mapping may use. Page 0 stays unmapped so that
/// null-pointer dereferences fault.
pub const USER_MIN: u64 = 0x1000;
/// One past the highest user address (the end of the canonical lower half).
pub const USER_END: u64 = 0x0000_8000_0000_0000;
/// Top of the initial user stack (exclusive). One unmapped guard page sits
/// below the stack, so a stack overflow is a page fault, not corruption.
pub const USER_STACK_TOP: u64 = 0x0000_7fff_ffff_0000;
/// Size of the initial user stack.
pub const USER_STACK_BYTES: u64 = 256 * 1024;
/// Where the kernel copies a new process's argument bytes (one page, read-only).
pub const USER_ARGS_ADDR: u64 = USER_STACK_TOP + PAGE_SIZE;
/// Most argument bytes that `spawn` accepts.
pub const MAX_ARGS_BYTES: u64 = PAGE_SIZE;
/// Longest program name `spawn` accepts.
pub const MAX_PROGRAM_NAME_BYTES: u64 = 64;
/// Largest buffer `debug_write` accepts in one call.
pub const MAX_DEBUG_WRITE_BYTES: u64 = 64 * 1024;
/// The heap region of a UNIX process: the runtime's `sbrk` moves a
/// pointer up from here and the VM manager supplies each page on first
/// touch (Ridge's `sbrk`: no kernel entry until a page is used).
pub const USER_HEAP_BASE: u64 = 0x0000_1000_0000_0000;
/// Largest heap a process may have.
pub const USER_HEAP_MAX_BYTES: u64 = 1 << 30;
/// Longest program image `proc_exec` accepts.
pub const MAX_EXEC_BYTES: u64 = 16 * 1024 * 1024;
/// Where the runtime maps device memory: a driver's MMIO BARs and DMA
/// memory, a client's window onto a RAM disk. Below the stack, far above
/// the heap's largest extent.
pub const USER_DEVICE_MAP_BASE: u64 = 0x0000_2000_0000_0000;
/// Size of the device-mapping region.
pub const USER_DEVICE_MAP_BYTES: u64 = 1 << 40;
/// Where the runtime maps the read-window pages of disk file managers
/// (`protocols::unix::read_window`): one page per manager, each its own
/// pager region, just above the device-mapping region. When a pager ends,
/// the kernel zeroes the shared pages it mapped here (from each page's
/// last 8-byte word down), so a dead manager's slots read as zeros.
pub const USER_READ_WINDOW_PAGES_BASE: u64 = USER_DEVICE_MAP_BASE + USER_DEVICE_MAP_BYTES;
/// Most read-window pages (managers) one process maps.
pub const USER_READ_WINDOW_PAGES: u64 = 8;
