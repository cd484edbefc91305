//! Per-socket receive rings (`net=scalable`, seed 003: "reads take data
//! already queued for the socket without waiting for the stack").
//!
//! A ring is one [`RingSlot`]: a header page ([`RingHeader`]) and
//! [`DATA_BYTES`] of data, memory of the network server that it lends,
//! shared, to the process that asked for it ([`super::OP_RING_MAP`]), at
//! window `i` of [`BASE`] in that process (the server is the pager of the
//! windows, as of the lock page). After each pass of the stack the server
//! moves what smoltcp holds for the socket into the ring (the *producer*:
//! it alone writes the data and `head`); a reader takes bytes under the
//! socket's mini lock ([`RingHeader::lock`]) and moves `tail` on, with no
//! kernel entry at all when bytes are there. With the ring empty the
//! reader makes the ordinary read call, which takes what the ring holds
//! first and then what the stack holds, so the order of the stream holds
//! whichever way a byte goes.
//!
//! What this is not: a send ring (writes go as before), nor a ring for
//! UDP or ICMP, nor for `net=classic`.
//!
//! Invariants, and whom they protect:
//! - `head` and `tail` count bytes since the ring was given to the
//!   socket; `tail <= head <= tail + DATA_BYTES` while both sides keep
//!   the rules. The server keeps its own `head` and the last `tail` it
//!   saw, and checks every `tail` it reads back ([`check_tail`]): a
//!   reader that scribbles on its header breaks its own socket (the
//!   server answers its reads with `EIO`), never the server or another
//!   socket.
//! - The data pages are lent read-only; only the header is writable by
//!   the readers.
//! - [`FLAG_CLOSED`]: the ring's bytes are no longer the socket's to read
//!   (`shutdown(SHUT_RD)`, a reset, a broken ring, a closed socket);
//!   readers use the call.
//! - A reader takes bytes only while `handle` names its socket: a ring is
//!   given to another socket of the same process only after the first
//!   socket was closed, and never to another process while any process
//!   maps it (the server asks the kernel, `page_owners`).

use super::locks::StatLock;
use core::sync::atomic::{AtomicU64, Ordering};

/// Bytes of data in one ring.
pub const DATA_BYTES: u64 = 16 * 1024;
/// Words of data in one ring.
pub const DATA_WORDS: usize = (DATA_BYTES / 8) as usize;
/// Pages of one ring: the header page and the data.
pub const SLOT_PAGES: u64 = 1 + DATA_BYTES / abi::layout::PAGE_SIZE;
/// Bytes of one ring window.
pub const SLOT_BYTES: u64 = SLOT_PAGES * abi::layout::PAGE_SIZE;
/// Ring windows one process has: its sockets past these read by calls.
pub const WINDOWS: u64 = 8;
/// All the windows, one pager region.
pub const REGION_BYTES: u64 = WINDOWS * SLOT_BYTES;
/// Where the windows are in every process: below the lock page
/// (`locks::WINDOW`), with one page between.
pub const BASE: u64 = super::locks::WINDOW - abi::layout::PAGE_SIZE - REGION_BYTES;

/// The ring's bytes are not to be taken by readers (use the call).
pub const FLAG_CLOSED: u64 = 1;

/// The header, in the ring's first page.
#[repr(C)]
#[derive(Default)]
pub struct RingHeader {
    /// The socket (its handle) the ring serves now; 0: none.
    pub handle: AtomicU64,
    /// The socket's mini lock: readers (and the server's read call) hold
    /// it while they take bytes. Its statistics join the lock page's.
    pub lock: StatLock,
    /// Bytes the server has put in (written by the server only).
    pub head: AtomicU64,
    /// Bytes readers have taken (written by readers, under the lock).
    pub tail: AtomicU64,
    /// [`FLAG_CLOSED`].
    pub flags: AtomicU64,
    /// 1: the server found the ring full with bytes left in the stack;
    /// the reader that then takes bytes sends [`super::OP_RING_DRAINED`].
    pub wake: AtomicU64,
    /// Reads served from the ring, and their bytes (readers count them;
    /// `netstat -l`).
    pub reads: AtomicU64,
    pub read_bytes: AtomicU64,
}

/// The header page.
#[repr(C, align(4096))]
#[derive(Default)]
pub struct HeaderPage {
    pub h: RingHeader,
}

/// One ring: the header page, then the data pages.
#[repr(C, align(4096))]
pub struct RingSlot {
    pub header: HeaderPage,
    pub data: [AtomicU64; DATA_WORDS],
}

const _: () = assert!(core::mem::size_of::<HeaderPage>() as u64 == abi::layout::PAGE_SIZE);
const _: () = assert!(core::mem::size_of::<RingSlot>() as u64 == SLOT_BYTES);
const _: () = assert!(BASE.is_multiple_of(abi::layout::PAGE_SIZE));
const _: () = assert!(BASE + REGION_BYTES < super::locks::WINDOW);

impl Default for RingSlot {
    fn default() -> RingSlot {
        RingSlot { header: HeaderPage::default(), data: [const { AtomicU64::new(0) }; DATA_WORDS] }
    }
}

/// Where window `index` is in a process.
pub fn window(index: u64) -> u64 {
    BASE + index * SLOT_BYTES
}

/// The window index and page within it of an address in the region.
pub fn window_of(addr: u64) -> Option<(u64, u64)> {
    let off = addr.checked_sub(BASE).filter(|o| *o < REGION_BYTES)?;
    Some((off / SLOT_BYTES, (off % SLOT_BYTES) / abi::layout::PAGE_SIZE))
}

/// Write `src` at byte `at` of the data (no wrap: `at + len <= DATA_BYTES`).
/// Words only partly covered are read, changed and written back: readers
/// never write the data, so nothing of theirs is lost.
fn write_flat(data: &[AtomicU64], at: usize, src: &[u8]) {
    let mut i = 0;
    while i < src.len() {
        let pos = at + i;
        let (w, b) = (pos / 8, pos % 8);
        let n = (8 - b).min(src.len() - i);
        let word = if n == 8 {
            u64::from_le_bytes(src[i..i + 8].try_into().unwrap_or([0; 8]))
        } else {
            let mut bytes = data[w].load(Ordering::Relaxed).to_le_bytes();
            bytes[b..b + n].copy_from_slice(&src[i..i + n]);
            u64::from_le_bytes(bytes)
        };
        data[w].store(word, Ordering::Relaxed);
        i += n;
    }
}

/// Read `dst.len()` bytes at byte `at` of the data (no wrap).
fn read_flat(data: &[AtomicU64], at: usize, dst: &mut [u8]) {
    let mut i = 0;
    while i < dst.len() {
        let pos = at + i;
        let (w, b) = (pos / 8, pos % 8);
        let n = (8 - b).min(dst.len() - i);
        let bytes = data[w].load(Ordering::Relaxed).to_le_bytes();
        dst[i..i + n].copy_from_slice(&bytes[b..b + n]);
        i += n;
    }
}

/// Write `src` at stream position `pos` (wrapping); `src.len()` at most
/// [`DATA_BYTES`].
pub fn write_at(data: &[AtomicU64], pos: u64, src: &[u8]) {
    let at = (pos % DATA_BYTES) as usize;
    let first = src.len().min(DATA_BYTES as usize - at);
    write_flat(data, at, &src[..first]);
    write_flat(data, 0, &src[first..]);
}

/// Read into `dst` from stream position `pos` (wrapping).
pub fn read_at(data: &[AtomicU64], pos: u64, dst: &mut [u8]) {
    let at = (pos % DATA_BYTES) as usize;
    let first = dst.len().min(DATA_BYTES as usize - at);
    read_flat(data, at, &mut dst[..first]);
    read_flat(data, 0, &mut dst[first..]);
}

/// The server's check of a `tail` read back from a reader's header: it
/// must lie between the last one it accepted and its own `head`.
pub fn check_tail(tail: u64, last_tail: u64, head: u64) -> Option<u64> {
    (last_tail <= tail && tail <= head && head - tail <= DATA_BYTES).then_some(tail)
}

/// What a reader's [`take`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take {
    /// Bytes taken; whether to send [`super::OP_RING_DRAINED`].
    Got { bytes: usize, wake: bool },
    /// Nothing there now: make the call.
    Empty,
    /// Not this socket's ring (any more), closed, or not consistent: make
    /// the call (which says why).
    NotUsable,
    /// The lock could not be taken (`wait` gave up).
    Busy,
}

/// Take up to `out.len()` bytes of `handle`'s stream from `slot` as `who`
/// (a pid), under the socket's mini lock. `now` reads the TSC; `wait`
/// as in [`StatLock::acquire`]. Never trusts what it reads beyond the
/// bounds of the ring: a `head` out of line is [`Take::NotUsable`].
pub fn take(
    slot: &RingSlot,
    handle: u64,
    who: u64,
    now: impl Fn() -> u64,
    wait: impl FnMut(u64) -> bool,
    out: &mut [u8],
) -> Take {
    let h = &slot.header.h;
    if h.handle.load(Ordering::Acquire) != handle || h.flags.load(Ordering::Acquire) != 0 {
        return Take::NotUsable;
    }
    if h.head.load(Ordering::Acquire) == h.tail.load(Ordering::Acquire) {
        return Take::Empty;
    }
    if !h.lock.acquire(who, &now, wait) {
        return Take::Busy;
    }
    let r = take_locked(slot, handle, out);
    h.lock.release(who, now());
    r
}

/// [`take`] with the lock held.
pub fn take_locked(slot: &RingSlot, handle: u64, out: &mut [u8]) -> Take {
    let h = &slot.header.h;
    if h.handle.load(Ordering::Acquire) != handle || h.flags.load(Ordering::Acquire) != 0 {
        return Take::NotUsable;
    }
    let head = h.head.load(Ordering::Acquire);
    let tail = h.tail.load(Ordering::Acquire);
    if tail > head || head - tail > DATA_BYTES {
        return Take::NotUsable;
    }
    let n = ((head - tail) as usize).min(out.len());
    if n == 0 {
        return Take::Empty;
    }
    read_at(&slot.data, tail, &mut out[..n]);
    h.tail.store(tail + n as u64, Ordering::Release);
    h.reads.fetch_add(1, Ordering::Relaxed);
    h.read_bytes.fetch_add(n as u64, Ordering::Relaxed);
    let wake = h.wake.swap(0, Ordering::AcqRel) != 0;
    Take::Got { bytes: n, wake }
}

/// Bytes the ring holds for its readers now (0 when closed).
pub fn queued(slot: &RingSlot) -> u64 {
    let h = &slot.header.h;
    if h.flags.load(Ordering::Acquire) != 0 {
        return 0;
    }
    h.head.load(Ordering::Acquire).saturating_sub(h.tail.load(Ordering::Acquire)).min(DATA_BYTES)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::boxed::Box;
    use std::vec::Vec;

    fn slot_for(handle: u64) -> Box<RingSlot> {
        let s = Box::<RingSlot>::default();
        s.header.h.handle.store(handle, Ordering::Release);
        s
    }

    /// The server's side of a fill: `bytes` at `head`.
    fn put(s: &RingSlot, bytes: &[u8]) {
        let head = s.header.h.head.load(Ordering::Acquire);
        write_at(&s.data, head, bytes);
        s.header.h.head.store(head + bytes.len() as u64, Ordering::Release);
    }

    fn take_now(s: &RingSlot, handle: u64, out: &mut [u8]) -> Take {
        take(s, handle, 9, || 0, |_| false, out)
    }

    #[test]
    fn windows_are_where_the_region_is() {
        assert_eq!(window_of(window(0)), Some((0, 0)));
        assert_eq!(window_of(window(3) + 2 * abi::layout::PAGE_SIZE + 5), Some((3, 2)));
        assert_eq!(window_of(BASE - 1), None);
        assert_eq!(window_of(BASE + REGION_BYTES), None);
    }

    #[test]
    fn bytes_wrap_around_the_ring_in_order() {
        let s = slot_for(5);
        let mut want: Vec<u8> = Vec::new();
        let mut got: Vec<u8> = Vec::new();
        let mut next = 0u8;
        for round in 0..40usize {
            let piece: Vec<u8> = (0..(round * 977 % 9000 + 1))
                .map(|_| {
                    next = next.wrapping_add(7);
                    next
                })
                .collect();
            let room = DATA_BYTES - queued(&s);
            let piece = &piece[..piece.len().min(room as usize)];
            put(&s, piece);
            want.extend_from_slice(piece);
            let mut out = std::vec![0u8; round * 331 % 5000 + 1];
            while let Take::Got { bytes, .. } = take_now(&s, 5, &mut out) {
                got.extend_from_slice(&out[..bytes]);
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn another_socket_or_a_closed_ring_is_not_read() {
        let s = slot_for(5);
        put(&s, b"hello");
        let mut out = [0u8; 8];
        assert_eq!(take_now(&s, 6, &mut out), Take::NotUsable);
        s.header.h.flags.store(FLAG_CLOSED, Ordering::Release);
        assert_eq!(take_now(&s, 5, &mut out), Take::NotUsable);
        assert_eq!(queued(&s), 0);
        s.header.h.flags.store(0, Ordering::Release);
        assert_eq!(take_now(&s, 5, &mut out), Take::Got { bytes: 5, wake: false });
        assert_eq!(&out[..5], b"hello");
        assert_eq!(take_now(&s, 5, &mut out), Take::Empty);
    }

    #[test]
    fn a_held_lock_is_busy_and_a_full_ring_wakes_once() {
        let s = slot_for(5);
        put(&s, &[1; 100]);
        s.header.h.wake.store(1, Ordering::Release);
        assert!(s.header.h.lock.acquire(77, || 0, |_| true));
        let mut out = [0u8; 10];
        assert_eq!(take_now(&s, 5, &mut out), Take::Busy);
        s.header.h.lock.release(77, 1);
        assert_eq!(take_now(&s, 5, &mut out), Take::Got { bytes: 10, wake: true });
        assert_eq!(take_now(&s, 5, &mut out), Take::Got { bytes: 10, wake: false });
    }

    #[test]
    fn scribbled_indices_are_caught() {
        // The server's check.
        assert_eq!(check_tail(10, 5, 20), Some(10));
        assert_eq!(check_tail(4, 5, 20), None, "tail went back");
        assert_eq!(check_tail(21, 5, 20), None, "tail passed head");
        assert_eq!(check_tail(1, 0, DATA_BYTES + 2), None, "more than a ring between them");
        // A reader that finds its own header out of line takes nothing.
        let s = slot_for(5);
        put(&s, &[3; 10]);
        s.header.h.tail.store(u64::MAX, Ordering::Release);
        let mut out = [0u8; 4];
        assert_eq!(take_now(&s, 5, &mut out), Take::NotUsable);
        s.header.h.tail.store(0, Ordering::Release);
        s.header.h.head.store(DATA_BYTES * 3, Ordering::Release);
        assert_eq!(take_now(&s, 5, &mut out), Take::NotUsable);
    }
}
