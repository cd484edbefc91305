//! User-level pagers (Ridge OS §3, the virtual memory manager; MINIX 3's
//! VM server): the kernel turns a page fault in a paged region into a
//! message to the region's pager and blocks the faulting process; the
//! pager answers with `page_resolve`, which maps a page (zero-filled, a
//! copy of one of the pager's pages, or the pager's page itself shared
//! copy-on-write) or fails the fault.
//!
//! Rights: a process may give regions of its own address space, or of its
//! children's, to a pager; only the pager of a region may map pages in it
//! or fail faults there. A pager that ends takes its waiting faulters with
//! it (they end with a page fault); a later fault in its regions does too.
//! The shared pages it mapped in the read-window area are zeroed then
//! ([`Kernel::zero_read_windows_of`]): a disk file manager's slot pages,
//! which must not go on looking current after it; so is the first page of
//! its regions in the device-mapping area ([`Kernel::zero_device_lock_pages_of`]):
//! a RAM disk window's lock page.

use crate::arch::frames::Frame;
use crate::memory::{AddressSpace, Pool};
use crate::message::{Head, Payload};
use crate::process::{Blocked, PagerRegion, State};
use crate::state::Kernel;
use crate::usermem::UserSlice;
use abi::layout::{PAGE_SIZE, USER_MIN};
use abi::msg::Kind;
use abi::{Counter, Error, Pid, pager, rights};

/// What `page_resolve` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// The page is mapped (and its faulter, if it waited, made ready).
    Mapped,
    /// The pager failed the fault: the process in this slot, which waited
    /// on it, is to end with a page fault at `address`.
    Failed { slot: usize, address: u64 },
    /// The pager failed a fault nobody waits on: nothing to do.
    Nothing,
}

impl Kernel {
    /// Give `start..start + len` of process `pid` to a pager (`pager_pid`,
    /// its queue `queue`).
    pub fn set_pager(
        &mut self,
        slot: usize,
        pid: u64,
        start: u64,
        len: u64,
        pager_pid: u64,
        queue: u64,
    ) -> Result<(), Error> {
        let target = self.slot_of(Pid(pid)).ok_or(Error::NoSuchProcess)?;
        let me = self.pid_of(slot);
        let may = target == slot
            || self.proc(target).parent == Some(me)
            || self.proc(slot).rights & abi::rights::MEMORY != 0;
        if !may {
            return Err(Error::PermissionDenied);
        }
        let end = start.checked_add(len).ok_or(Error::InvalidArgument)?;
        if len == 0 || !start.is_multiple_of(PAGE_SIZE) || !len.is_multiple_of(PAGE_SIZE) || start < USER_MIN
        {
            return Err(Error::InvalidArgument);
        }
        if end > kernel_core::elf::STACK_AREA_START {
            return Err(Error::BadAddress);
        }
        let p = self.slot_of(Pid(pager_pid)).ok_or(Error::NoSuchProcess)?;
        let pq = self.proc(p).qseg.as_ref().ok_or(Error::NoQueueSegment)?;
        pq.len(queue)?;
        let t = self.proc(target);
        if t.regions.iter().flatten().any(|r| r.start < end && start < r.end) {
            return Err(Error::InvalidArgument);
        }
        // The region must not cover pages the process has already.
        let space = t.space.as_ref().ok_or(Error::NoSuchProcess)?;
        let mut va = start;
        while va < end {
            if space.translate(va).is_some() {
                return Err(Error::InvalidArgument);
            }
            va += PAGE_SIZE;
        }
        let free = t.regions.iter().position(Option::is_none).ok_or(Error::LimitReached)?;
        self.proc_mut(target).regions[free] =
            Some(PagerRegion { start, end, pager: Pid(pager_pid), queue: queue as u32 });
        Ok(())
    }

    /// The kernel's default for the heap region of a process that has no
    /// pager there (system servers, and the VM manager itself, which cannot
    /// page its own memory): a zero-filled page on first touch. Returns
    /// false when `address` is outside the heap region or the page exists.
    pub fn default_heap_fault(&mut self, slot: usize, address: u64, error_code: u64) -> bool {
        if !self.is_default_heap(slot, address, error_code) {
            return false;
        }
        let Some(space) = self.proc_mut(slot).space.as_mut() else { return false };
        space.map_new_page(address & !(PAGE_SIZE - 1), true, false).is_ok()
    }

    /// Whether a fault at `address` (with `error_code`) is one the kernel
    /// answers with a zero page ([`Kernel::default_heap_fault`]): so when
    /// that answer failed, memory ran out.
    pub fn is_default_heap(&self, slot: usize, address: u64, error_code: u64) -> bool {
        use abi::layout::{USER_HEAP_BASE, USER_HEAP_MAX_BYTES};
        (USER_HEAP_BASE..USER_HEAP_BASE + USER_HEAP_MAX_BYTES).contains(&address)
            && error_code & abi::page_fault::PRESENT == 0
            // A region given to a pager stays the pager's, even after it
            // died: the process ends then (see `pager_cleanup`).
            && !self.proc(slot).regions.iter().flatten().any(|r| (r.start..r.end).contains(&address))
    }

    /// A user page fault at `address` in the process in `slot`: if a pager
    /// serves it, tell the pager and block; returns false otherwise.
    pub fn page_fault_to_pager(&mut self, slot: usize, address: u64, error_code: u64) -> bool {
        let Some(region) =
            self.proc(slot).regions.iter().flatten().find(|r| (r.start..r.end).contains(&address))
        else {
            return false;
        };
        let region = *region;
        let Some(p) = self.slot_of(region.pager) else { return false };
        let page = address & !(PAGE_SIZE - 1);
        let me = self.pid_of(slot);
        let head =
            Head { words: [me.0, address, error_code, region.start], sender: Pid(0), kind: Kind::PageFault };
        // Block first: a pager waiting on its queue runs at once.
        self.proc_mut(slot).state = State::Blocked(Blocked::PageFault { page });
        if self.deliver(p, region.queue, head, Payload::None, false).is_err() {
            self.proc_mut(slot).state = State::Running { cpu: crate::arch::percpu::current_cpu() };
            return false;
        }
        true
    }

    /// The pager in `slot` answers a fault at `addr` in process `pid`: map
    /// a page (zero-filled, a copy of its page at `src`, or that page
    /// shared), or fail the fault.
    pub fn page_resolve(
        &mut self,
        slot: usize,
        pid: u64,
        addr: u64,
        src: u64,
        flags: u64,
    ) -> Result<Resolved, Error> {
        let target = self.slot_of(Pid(pid)).ok_or(Error::NoSuchProcess)?;
        let me = self.pid_of(slot);
        let region = self
            .proc(target)
            .regions
            .iter()
            .flatten()
            .find(|r| (r.start..r.end).contains(&addr))
            .copied()
            .ok_or(Error::BadAddress)?;
        if region.pager != me {
            return Err(Error::PermissionDenied);
        }
        let page = addr & !(PAGE_SIZE - 1);
        let waiting =
            matches!(self.proc(target).state, State::Blocked(Blocked::PageFault { page: p }) if p == page);
        if flags == pager::FAIL {
            return Ok(if waiting {
                Resolved::Failed { slot: target, address: addr }
            } else {
                Resolved::Nothing
            });
        }
        let writable = flags & pager::WRITABLE != 0;
        let executable = flags & pager::EXECUTABLE != 0;
        if flags & pager::SHARED != 0 {
            if flags & !pager::WRITABLE != pager::SHARE | pager::SHARED {
                return Err(Error::InvalidArgument);
            }
            return self.resolve_shared(slot, target, page, src, writable, waiting);
        }
        // The frame is the target's: from its pool (docs/memory.md).
        let pool = self.proc(target).space.as_ref().map_or(Pool::Ordinary, AddressSpace::pool);
        let frame = match flags & !(pager::WRITABLE | pager::EXECUTABLE) {
            pager::ZERO => Frame::alloc_in(pool).ok_or(Error::OutOfResources)?,
            pager::COPY | pager::SHARE => {
                if !src.is_multiple_of(PAGE_SIZE) {
                    return Err(Error::InvalidArgument);
                }
                let space = self.space_mut(slot);
                UserSlice::new(src, PAGE_SIZE)?.check(space, false)?;
                if flags & pager::SHARE != 0 {
                    let frame = space.loan_page(src).ok_or(Error::BadAddress)?;
                    self.count(Counter::PagesLoaned);
                    frame
                } else {
                    let (original, _) = space.table().frame_at(src).ok_or(Error::BadAddress)?;
                    let frame = Frame::alloc_copy_of(&original, pool).ok_or(Error::OutOfResources)?;
                    self.add(Counter::BytesCopied, PAGE_SIZE);
                    frame
                }
            }
            _ => return Err(Error::InvalidArgument),
        };
        // A shared frame is never writable in place: copy-on-write when the
        // pager allows writes, read-only (program text) when not.
        let shared = flags & pager::SHARE != 0;
        let space = self.proc_mut(target).space.as_mut().ok_or(Error::NoSuchProcess)?;
        space.map_frame(page, frame, writable && !shared, shared && writable, executable)?;
        if waiting {
            self.make_ready(target);
        }
        Ok(Resolved::Mapped)
    }

    /// `page_resolve` with `SHARE | SHARED`: map the pager's page at `src`
    /// itself in `target`, written in place by both (a RAM disk's window).
    fn resolve_shared(
        &mut self,
        slot: usize,
        target: usize,
        page: u64,
        src: u64,
        writable: bool,
        waiting: bool,
    ) -> Result<Resolved, Error> {
        if !src.is_multiple_of(PAGE_SIZE) {
            return Err(Error::InvalidArgument);
        }
        let frame = self.space_mut(slot).share_page_writable(src).ok_or(Error::BadAddress)?;
        self.count(Counter::PagesLoaned);
        let space = self.proc_mut(target).space.as_mut().ok_or(Error::NoSuchProcess)?;
        space.map_shared(page, frame, writable)?;
        if waiting {
            self.make_ready(target);
        }
        Ok(Resolved::Mapped)
    }

    /// Pager `pager` has ended: in every process, zero the shared pages
    /// it mapped (`pager::SHARED`) in its regions of the read-window
    /// area (`abi::layout::USER_READ_WINDOW_PAGES_BASE`, one page per
    /// disk file manager). The frames stay mapped (nothing is unmapped
    /// under a process that may be running on another CPU); their
    /// contents go. A slot's generation word then reads 0, which no
    /// manager publishes, so the reader's next `read` finds its window
    /// stale and asks the dead manager, which is `EIO`, as for every other
    /// call on the dead manager's handles: without this a window served
    /// the bytes it held for as long as the reader read inside it
    /// (docs/filesystem.md, "Positional I/O and a dead manager's window").
    /// Words are zeroed from the page's end down (`zero_shared_page`): a
    /// slot's generation (the higher word) is 0 before its offset moves.
    /// A RAM disk's window: [`Kernel::zero_device_lock_pages_of`].
    pub fn zero_read_windows_of(&mut self, pager: Pid) {
        use abi::layout::{USER_READ_WINDOW_PAGES, USER_READ_WINDOW_PAGES_BASE};
        let (low, high) =
            (USER_READ_WINDOW_PAGES_BASE, USER_READ_WINDOW_PAGES_BASE + USER_READ_WINDOW_PAGES * PAGE_SIZE);
        for s in self.slots() {
            let regions = self.proc(s).regions;
            for r in regions.iter().flatten().filter(|r| r.pager == pager) {
                let mut page = r.start.max(low);
                while page < r.end.min(high) {
                    if let Some(space) = self.proc_mut(s).space.as_mut() {
                        space.zero_shared_page(page);
                    }
                    page += PAGE_SIZE;
                }
            }
        }
    }

    /// Pager `pager` has ended: in every process, zero the first page of
    /// each region it paged in the device-mapping area
    /// (`abi::layout::USER_DEVICE_MAP_BASE`), if it mapped that page
    /// shared (`pager::SHARED`). Such a region is a RAM disk window, whose
    /// first page is the driver's lock page (`protocols::unix::block::ram_lock`):
    /// its last word, `LIVE_OFFSET`, then reads 0, and the client's next
    /// transfer or seek is `EIO` instead of a copy from the dead driver's
    /// disk, whose pages stay mapped (nothing is unmapped under a process
    /// that may be running on another CPU; the frames go when the client
    /// ends). Zeroed from the page's end down, as in
    /// [`Kernel::zero_read_windows_of`]; one page per window, however big
    /// the disk (branch `drv`, docs/devices.md "A window outlives its
    /// driver").
    pub fn zero_device_lock_pages_of(&mut self, pager: Pid) {
        use abi::layout::{USER_DEVICE_MAP_BASE, USER_DEVICE_MAP_BYTES};
        let area = USER_DEVICE_MAP_BASE..USER_DEVICE_MAP_BASE + USER_DEVICE_MAP_BYTES;
        for s in self.slots() {
            let regions = self.proc(s).regions;
            for r in regions.iter().flatten().filter(|r| r.pager == pager && area.contains(&r.start)) {
                if let Some(space) = self.proc_mut(s).space.as_mut() {
                    space.zero_shared_page(r.start);
                }
            }
        }
    }

    /// A process waiting for pager `pid` to resolve its fault (the
    /// faulting page), if any: when the pager ends, each such process ends
    /// with a page fault (lifecycle.rs).
    pub fn waiting_on_pager(&self, pid: Pid) -> Option<(usize, u64)> {
        self.slots().find_map(|s| {
            let State::Blocked(Blocked::PageFault { page }) = self.proc(s).state else { return None };
            let served_by = self
                .proc(s)
                .regions
                .iter()
                .flatten()
                .any(|r| r.pager == pid && (r.start..r.end).contains(&page));
            served_by.then_some((s, page))
        })
    }

    /// Give the stopped process `dst_pid` a copy-on-write copy of the
    /// address space of `src_pid` and its pager regions (`fork`). Needs
    /// `rights::MEMORY`. Returns the pages shared.
    pub fn space_copy(&mut self, slot: usize, src_pid: u64, dst_pid: u64) -> Result<u64, Error> {
        if self.proc(slot).rights & rights::MEMORY == 0 {
            return Err(Error::PermissionDenied);
        }
        let src = self.slot_of(Pid(src_pid)).ok_or(Error::NoSuchProcess)?;
        let dst = self.slot_of(Pid(dst_pid)).ok_or(Error::NoSuchProcess)?;
        if src == dst
            || self.proc(dst).state != State::Stopped
            || matches!(self.proc(src).state, State::Running { .. })
        {
            // A running source could write a page between the copy and the
            // loss of write access on another CPU.
            return Err(Error::InUse);
        }
        let (src_proc, dst_proc) = self.two_procs_mut(src, dst);
        let dst_space = dst_proc.space.as_mut().ok_or(Error::NoSuchProcess)?;
        let pages = match src_proc.space.as_mut() {
            Some(src_space) => src_space.copy_on_write_into(dst_space)?,
            None => 0,
        };
        dst_proc.regions = src_proc.regions;
        Ok(pages)
    }
}
