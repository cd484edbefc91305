//! The message system's part of the contract (Ridge OS §5).
//!
//! # Registers
//! A message is 32 bytes, carried in the four *message registers*
//! `r12`, `r13`, `r14`, `r15` (m0..m3) in both directions, so the short
//! message never touches memory on the way (Ridge kept it in eight of its
//! sixteen registers). Arguments use the ordinary argument registers;
//! receiving calls return:
//! - `rax`: bytes of data received (0 for a short message) or an error;
//! - `rdx`: the sender's pid (or, with [`crate::Error::BufferTooSmall`], the
//!   bytes needed);
//! - `rsi`: the message [`Kind`];
//! - `r10`: the reply handle when the kind is [`Kind::Call`];
//! - m0..m3: the message.

/// Bytes in a short message.
pub const MESSAGE_BYTES: usize = 32;
/// Most data bytes one message carries: one page, so that a page-aligned
/// page of data can be lent (mapped copy-on-write) instead of copied.
pub const MAX_DATA_BYTES: u64 = crate::layout::PAGE_SIZE;

/// Queue access: any process may link to it.
pub const ACCESS_PUBLIC: u64 = 0;
/// Queue access: only processes named with `allow_sender` may link to it.
pub const ACCESS_PRIVATE: u64 = 1;

/// `receive_data` flag: return [`crate::Error::WouldBlock`] instead of blocking.
pub const NONBLOCKING: u64 = 1;

/// `reply_wait` handle meaning "nothing to reply to".
pub const NO_REPLY: u64 = u64::MAX;

/// `forward_wait` queue meaning "forward only, receive nothing" (returns 0).
pub const NO_RECEIVE: u32 = u32::MAX;

/// The queue segment the runtime makes for every process before `main`;
/// `init_qseg` may grow it later (never shrink it).
pub const DEFAULT_LINKS: u64 = 16;
pub const DEFAULT_QUEUES: u64 = 4;
pub const DEFAULT_MESSAGES: u64 = 64;
pub const DEFAULT_PAGES: u64 = 16;

/// The kernel's limits on `init_qseg`'s arguments (per process).
pub const MAX_LINKS: u64 = 1024;
pub const MAX_QUEUES: u64 = 64;
pub const MAX_MESSAGES: u64 = 4096;
pub const MAX_PAGES: u64 = 1024;
/// Processes one private queue can name with `allow_sender`.
pub const MAX_ALLOWED_SENDERS: usize = 16;

/// What a received message is.
#[repr(u64)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// From `send`: 32 bytes.
    Short = 0,
    /// From `send_data`: 32 bytes and data.
    Data = 1,
    /// From `call`: answer it with `reply` or `reply_wait` and the handle in `r10`.
    Call = 2,
    /// An interrupt (m0 = line, or `crate::msix::MESSAGE_TAG` | entry for
    /// an MSI-X entry, then m2 = its PCI function; m1 = the TSC of the CPU
    /// that took it, read as the kernel queued the message: a driver times
    /// its device and the delivery with it), from the kernel.
    Interrupt = 3,
    /// A page fault in a region this process pages (m0 = pid, m1 = address,
    /// m2 = access), from the kernel.
    PageFault = 4,
    /// A child of the receiver ended (see `Call::SetExitQueue`), from the kernel.
    ChildExit = 5,
    /// A `syscall` by a foreign process this process serves (sender = its
    /// pid; m0..m3 = its rax, rdi, rsi, rdx), from the kernel: see
    /// `crate::foreign`.
    Foreign = 6,
}

impl Kind {
    pub fn from_raw(raw: u64) -> Option<Kind> {
        Some(match raw {
            0 => Kind::Short,
            1 => Kind::Data,
            2 => Kind::Call,
            3 => Kind::Interrupt,
            4 => Kind::PageFault,
            5 => Kind::ChildExit,
            6 => Kind::Foreign,
            _ => return None,
        })
    }
}

/// A 32-byte message.
pub type Message = [u64; 4];
