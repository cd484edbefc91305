//! Read windows, the reader's side (`protocols::unix::read_window`;
//! docs/filesystem-history.md, "R2 on disk: a read window in the reader"): most
//! sequential `read`s of a disk file served from a copy of the file in
//! this process, with no kernel entry.
//!
//! A regular file's descriptor starts watched: its reads are plain calls
//! ([`Attempt::Watch`]) until one of them fills the buffer (a file read
//! in order past its first buffer). The next read smaller than a window
//! asks the manager for a slot (`io::OP_READ_WINDOW_SLOT`), once per
//! descriptor, having first made the manager the pager of this process's
//! page for it (one page per manager, at `USER_READ_WINDOW_PAGES_BASE`).
//! A manager that says `ENOSYS` (memfs, the file managers, ext2fs with
//! `ext2.readwin=off`) is not asked again; any other refusal leaves that
//! descriptor to plain calls for its life.
//!
//! A descriptor with a slot reads from its window: up to [`WINDOW_BYTES`]
//! of the file fetched with one `io::OP_PREAD` at the slot's offset,
//! whose reply carries the file's generation. A read is served from the
//! window, with no call, when the slot's generation word still holds the
//! window's (the manager moves it before it answers any change to the
//! file, by anyone: POSIX's read-after-write) and the whole read lies in
//! the window; else one `OP_PREAD` fetches a new window at the offset.
//! A manager that ends takes its windows with it: the kernel zeroes the
//! pages a dead pager shared in the read-window area, and a generation
//! of 0 (which no manager publishes) is never a window's, so the next
//! read calls and gets the dead manager's `EIO` (docs/filesystem.md,
//! "Positional I/O and a dead manager's window").
//! The end of the file is never cached: a window holds only bytes the
//! file had, and a read past them calls. The offset is the slot's word,
//! moved with a compare-and-swap (a fork child sharing the open file moves
//! it through the manager, which marks the word busy while it serves the
//! request, `read_window::OFFSET_BUSY`: a read that finds the mark makes
//! a plain call, and a compare-and-swap from the value the manager took
//! fails, so a byte is never read by both); the manager takes it from there for every
//! `read`, `write` and `lseek` on the handle, so every descriptor sharing
//! the open file sees one offset. A write or truncate through this very
//! descriptor moves the generation too, so its window is not used again.
//!
//! What it is not: a cache shared between descriptors (each has its own
//! window, 64 KiB of heap while it has one, given back at `close`), nor
//! a way round the manager's checks (a window holds what a call read).
//! A forked child starts with none and never makes one ([`after_fork`]):
//! its pages would be the parent's; it reads with plain calls, its
//! `exec`'d image afresh.

use super::{Errno, Fd, MAX_FDS, from_kernel};
use crate::msg::{self, Link};
use crate::sys;
use abi::Pid;
use abi::layout::{PAGE_SIZE, USER_READ_WINDOW_PAGES, USER_READ_WINDOW_PAGES_BASE};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use protocols::unix::{FdInfo, errno, io, open_flags, read_window};
use spin::Mutex;

/// Bytes one window holds: one call per this many bytes of a file read
/// in order (eight of R2's 8 KiB reads). Reads this long or longer go
/// straight into the caller's buffer with one call, as without windows.
pub(crate) const WINDOW_BYTES: usize = 64 * 1024;
/// Tries of a read whose offset moved under it (another process sharing
/// the open file) before it is left to a plain call.
const OFFSET_RACE_TRIES: u32 = 3;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Plain calls until one fills its buffer.
    Watched,
    /// A read filled its buffer: the next asks for a slot.
    Sequential,
    /// Plain calls for the descriptor's life.
    Plain,
    /// A slot in the page at `page`.
    Slotted { page: u64, slot: usize },
}

/// What is known of a descriptor, for the open file `handle`: a
/// descriptor number reused for another open starts again.
#[derive(Clone, Copy)]
struct FdState {
    handle: u64,
    kind: Kind,
}

/// The file's bytes `start..start + len`, of generation `generation`.
struct Window {
    bytes: Vec<u8>,
    start: u64,
    len: usize,
    generation: u64,
}

/// A manager's page in this image: made its pager region at `address`;
/// `mapped` once the manager said it mapped it; `refused` when the
/// manager has no read windows.
#[derive(Clone, Copy)]
struct ManagerPage {
    manager: u64,
    address: u64,
    mapped: bool,
    refused: bool,
}

struct Table {
    fds: [Option<FdState>; MAX_FDS],
    windows: Vec<Option<Window>>,
    pages: Vec<ManagerPage>,
    /// A forked child: no windows, ever (see the top).
    is_fork_child: bool,
}

static TABLE: Mutex<Table> =
    Mutex::new(Table { fds: [None; MAX_FDS], windows: Vec::new(), pages: Vec::new(), is_fork_child: false });

/// `fd` is closed or replaced: its state and window go.
pub(crate) fn forget(fd: Fd) {
    let Ok(i) = usize::try_from(fd) else { return };
    let mut t = TABLE.lock();
    if let Some(state) = t.fds.get_mut(i) {
        *state = None;
    }
    if let Some(w) = t.windows.get_mut(i) {
        *w = None;
    }
}

/// In a forked child: the slots and pages are the parent's (the child
/// maps the parent's pages, as the parent's other memory, until it
/// `exec`s); this process reads with plain calls from now on.
pub(crate) fn after_fork() {
    let mut t = TABLE.lock();
    t.fds = [None; MAX_FDS];
    t.windows = Vec::new();
    t.pages.clear();
    t.is_fork_child = true;
}

/// What `read` should do.
pub(crate) enum Attempt {
    /// Served here (or failed here).
    Done(Result<usize, Errno>),
    /// A plain call; then [`note_full`] if it filled the buffer.
    Watch,
    /// A plain call.
    Plain,
}

/// `read` of a regular file's descriptor, if a window can serve it.
pub(crate) fn read(fd: Fd, link: Link, info: &FdInfo, buf: &mut [u8]) -> Attempt {
    let Some(index) = usize::try_from(fd).ok().filter(|&i| i < MAX_FDS) else { return Attempt::Plain };
    if buf.is_empty() || buf.len() >= WINDOW_BYTES || !open_flags::readable(info.flags as u64) {
        return Attempt::Plain;
    }
    let kind = {
        let mut t = TABLE.lock();
        if t.is_fork_child {
            return Attempt::Plain;
        }
        match t.fds[index] {
            Some(s) if s.handle == info.handle => s.kind,
            _ => {
                t.fds[index] = Some(FdState { handle: info.handle, kind: Kind::Watched });
                if let Some(w) = t.windows.get_mut(index) {
                    *w = None;
                }
                Kind::Watched
            }
        }
    };
    match kind {
        Kind::Watched => Attempt::Watch,
        Kind::Plain => Attempt::Plain,
        Kind::Sequential => match ask_slot(link, info) {
            Some((page, slot)) => {
                set_kind(index, info.handle, Kind::Slotted { page, slot });
                windowed(index, link, info.handle, page, slot, buf)
            }
            None => {
                set_kind(index, info.handle, Kind::Plain);
                Attempt::Plain
            }
        },
        Kind::Slotted { page, slot } => windowed(index, link, info.handle, page, slot, buf),
    }
}

/// A plain read of `fd` filled its buffer: the file is being read in
/// order, so the next read asks for a window.
pub(crate) fn note_full(fd: Fd, info: &FdInfo) {
    let Some(index) = usize::try_from(fd).ok().filter(|&i| i < MAX_FDS) else { return };
    let mut t = TABLE.lock();
    if let Some(s) = t.fds[index].as_mut()
        && s.handle == info.handle
        && s.kind == Kind::Watched
    {
        s.kind = Kind::Sequential;
    }
}

fn set_kind(index: usize, handle: u64, kind: Kind) {
    TABLE.lock().fds[index] = Some(FdState { handle, kind });
}

/// The manager's page (made its pager region first if new), then a slot
/// for the descriptor's open file: (page address, slot), or `None` for
/// plain calls.
fn ask_slot(link: Link, info: &FdInfo) -> Option<(u64, usize)> {
    let manager = info.manager_pid;
    // memfs has no windows (its reads are cheap calls): not even asked.
    if super::is_directory_manager(manager) {
        return None;
    }
    let known = TABLE.lock().pages.iter().find(|p| p.manager == manager).copied();
    let page = match known {
        Some(p) if p.refused => return None,
        Some(p) => p,
        None => {
            let mut t = TABLE.lock();
            let n = t.pages.len() as u64;
            if n >= USER_READ_WINDOW_PAGES || t.pages.try_reserve(1).is_err() {
                return None;
            }
            let address = USER_READ_WINDOW_PAGES_BASE + n * PAGE_SIZE;
            drop(t);
            sys::set_pager(sys::getpid(), address, PAGE_SIZE, Pid(manager), info.manager_queue).ok()?;
            let p = ManagerPage { manager, address, mapped: false, refused: false };
            TABLE.lock().pages.push(p);
            p
        }
    };
    let map_at = if page.mapped { 0 } else { page.address };
    let answer = msg::call(link, &[io::OP_READ_WINDOW_SLOT, info.handle, map_at, 0], &[], &mut []);
    let words = answer.ok()?.0;
    let outcome = protocols::unix::result(words[0]);
    let mut t = TABLE.lock();
    let p = t.pages.iter_mut().find(|p| p.manager == manager)?;
    match outcome {
        Ok(slot) => {
            p.mapped = true;
            usize::try_from(slot).ok().filter(|&s| s < read_window::SLOTS).map(|s| (p.address, s))
        }
        Err(errno::ENOSYS) => {
            p.refused = true;
            None
        }
        Err(_) => None,
    }
}

/// A slot's two words in its page.
struct Slot {
    page: u64,
    slot: usize,
}

impl Slot {
    fn offset(&self) -> &AtomicU64 {
        // SAFETY: `page` is this process's page for the manager, mapped
        // shared and writable by the manager (its pager) before it gave
        // the slot, for as long as this image lives (a pager region is
        // never given back); `slot < read_window::SLOTS` keeps the word,
        // 8-aligned, inside the page. The manager and this process touch
        // it only atomically.
        unsafe { &*((self.page + read_window::offset_word(self.slot) as u64) as *const AtomicU64) }
    }

    fn generation(&self) -> &AtomicU64 {
        // SAFETY: as in `offset`.
        unsafe { &*((self.page + read_window::generation_word(self.slot) as u64) as *const AtomicU64) }
    }
}

/// A read through the descriptor's window (fetching one if the read does
/// not lie in a current one).
fn windowed(index: usize, link: Link, handle: u64, page: u64, slot: usize, buf: &mut [u8]) -> Attempt {
    let mut window = {
        let mut t = TABLE.lock();
        let have = t.windows.len();
        if have < MAX_FDS {
            if t.windows.try_reserve(MAX_FDS - have).is_err() {
                return Attempt::Plain;
            }
            t.windows.resize_with(MAX_FDS, || None);
        }
        t.windows[index].take()
    };
    if window.is_none() {
        // No memory for a window (the heap's limit): a plain call, which
        // needs none.
        let mut bytes = Vec::new();
        if bytes.try_reserve_exact(WINDOW_BYTES).is_err() {
            return Attempt::Plain;
        }
        bytes.resize(WINDOW_BYTES, 0);
        window = Some(Window { bytes, start: 0, len: 0, generation: 0 });
    }
    let s = Slot { page, slot };
    let want = buf.len();
    let mut outcome = Attempt::Plain;
    for _ in 0..OFFSET_RACE_TRIES {
        let offset = s.offset().load(Ordering::SeqCst);
        if offset & read_window::OFFSET_BUSY != 0 {
            // The manager is serving a request on the open file (a fork
            // child's read, write or lseek): the offset is its until it
            // answers; a plain call waits behind that request.
            break;
        }
        let generation = s.generation().load(Ordering::SeqCst);
        // Generation 0 is never a manager's: it is what a dead manager's
        // page reads (the kernel zeroes it, `Kernel::zero_read_windows_of`),
        // so a window is never served from one; the call that follows
        // gets the dead manager's `EIO`.
        let inside = window.as_ref().and_then(|w| {
            let at = usize::try_from(offset.checked_sub(w.start)?).ok()?;
            (generation != 0 && w.generation == generation && at.checked_add(want)? <= w.len).then_some(at)
        });
        let (at, n) = match inside {
            Some(at) => (at, want),
            None => match fetch(link, handle, offset, &mut window) {
                Ok(got) => (0, want.min(got)),
                Err(e) => {
                    outcome = Attempt::Done(Err(e));
                    break;
                }
            },
        };
        if n == 0 {
            outcome = Attempt::Done(Ok(0));
            break;
        }
        let Some(w) = window.as_ref() else { break };
        buf[..n].copy_from_slice(&w.bytes[at..at + n]);
        if s.offset().compare_exchange(offset, offset + n as u64, Ordering::SeqCst, Ordering::SeqCst).is_ok()
        {
            outcome = Attempt::Done(Ok(n));
            break;
        }
    }
    TABLE.lock().windows[index] = window;
    outcome
}

/// One `io::OP_PREAD` of a window at `offset` into `window`: the bytes
/// it holds now.
fn fetch(link: Link, handle: u64, offset: u64, window: &mut Option<Window>) -> Result<usize, Errno> {
    let w = window.as_mut().ok_or(errno::ENOMEM)?;
    w.len = 0;
    let request = [io::OP_PREAD, handle, WINDOW_BYTES as u64, offset];
    let (words, _) = msg::call(link, &request, &[], &mut w.bytes).map_err(from_kernel)?;
    let got = protocols::unix::result(words[0])? as usize;
    *w = Window {
        bytes: core::mem::take(&mut w.bytes),
        start: offset,
        len: got.min(WINDOW_BYTES),
        generation: words[1],
    };
    Ok(w.len)
}
