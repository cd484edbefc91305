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

use crate::ipc::{Head, Payload};
use crate::memory;
use crate::process::{Blocked, PagerRegion, State};
use crate::sched::Kernel;
use crate::usermem::UserSlice;
use abi::layout::{PAGE_SIZE, USER_MIN};
use abi::msg::Kind;
use abi::{Counter, Error, ExitStatus, Pid, pager, vector};

impl Kernel {
    pub fn sys_set_pager(&mut self, slot: usize, a: [u64; 5]) -> Result<u64, Error> {
        let [pid, start, len, pager_pid, queue] = a;
        let target = self.slot_of(Pid(pid)).ok_or(Error::NoSuchProcess)?;
        let me = self.pid_of(slot);
        let may = target == slot
            || self.procs[target].parent == Some(me)
            || self.procs[slot].rights & abi::rights::MEMORY != 0;
        if !may {
            return Err(Error::PermissionDenied);
        }
        let end = start.checked_add(len).ok_or(Error::InvalidArgument)?;
        if len == 0 || start % PAGE_SIZE != 0 || len % PAGE_SIZE != 0 || start < USER_MIN {
            return Err(Error::InvalidArgument);
        }
        if end > kernel_core::elf::STACK_AREA_START {
            return Err(Error::BadAddress);
        }
        let p = self.slot_of(Pid(pager_pid)).ok_or(Error::NoSuchProcess)?;
        let pq = self.procs[p].qseg.as_ref().ok_or(Error::NoQueueSegment)?;
        pq.len(queue)?;
        let t = &self.procs[target];
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
        self.procs[target].regions[free] =
            Some(PagerRegion { start, end, pager: Pid(pager_pid), queue: queue as u32 });
        Ok(0)
    }

    /// The kernel's default for the heap region of a process that has no
    /// pager there (system servers, and the VM manager itself, which cannot
    /// page its own memory): a zero-filled page on first touch. Returns
    /// false when `address` is outside the heap region or the page exists.
    pub fn default_heap_fault(&mut self, slot: usize, address: u64, error_code: u64) -> bool {
        use abi::layout::{USER_HEAP_BASE, USER_HEAP_MAX_BYTES};
        const PRESENT: u64 = 1;
        if !(USER_HEAP_BASE..USER_HEAP_BASE + USER_HEAP_MAX_BYTES).contains(&address)
            || error_code & PRESENT != 0
        {
            return false;
        }
        // A region given to a pager stays the pager's, even after it died:
        // the process ends then (see `pager_cleanup`).
        if self.procs[slot].regions.iter().flatten().any(|r| (r.start..r.end).contains(&address)) {
            return false;
        }
        let Some(space) = self.procs[slot].space.as_mut() else { return false };
        space.map_new_page(address & !(PAGE_SIZE - 1), true, false).is_ok()
    }

    /// A user page fault at `address` in the process in `slot`: if a pager
    /// serves it, tell the pager and block; returns false otherwise.
    pub fn page_fault_to_pager(&mut self, slot: usize, address: u64, error_code: u64) -> bool {
        let Some(region) =
            self.procs[slot].regions.iter().flatten().find(|r| (r.start..r.end).contains(&address))
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
        self.procs[slot].state = State::Blocked(Blocked::PageFault { page });
        if self.deliver(p, region.queue, head, Payload::None, false).is_err() {
            self.procs[slot].state = State::Running { cpu: crate::arch::percpu::current_cpu() };
            return false;
        }
        true
    }

    pub fn sys_page_resolve(&mut self, slot: usize, a: [u64; 4]) -> Result<u64, Error> {
        let [pid, addr, src, flags] = a;
        let target = self.slot_of(Pid(pid)).ok_or(Error::NoSuchProcess)?;
        let me = self.pid_of(slot);
        let region = self.procs[target]
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
            matches!(self.procs[target].state, State::Blocked(Blocked::PageFault { page: p }) if p == page);
        if flags == pager::FAIL {
            if waiting {
                self.finish(target, ExitStatus::Fault { vector: vector::PAGE_FAULT, address: addr });
            }
            return Ok(0);
        }
        let writable = flags & pager::WRITABLE != 0;
        let executable = flags & pager::EXECUTABLE != 0;
        let frame = match flags & !(pager::WRITABLE | pager::EXECUTABLE) {
            pager::ZERO => memory::alloc_frame().ok_or(Error::OutOfResources)?,
            pager::COPY | pager::SHARE => {
                if src % PAGE_SIZE != 0 {
                    return Err(Error::InvalidArgument);
                }
                let space = self.procs[slot].space.as_mut().expect("live process");
                UserSlice::new(src, PAGE_SIZE)?.check(space, false)?;
                if flags & pager::SHARE != 0 {
                    let frame = space.loan_page(src).ok_or(Error::BadAddress)?;
                    self.count(Counter::PagesLoaned);
                    frame
                } else {
                    let (src_pa, _) = space.translate(src).ok_or(Error::BadAddress)?;
                    let frame = memory::alloc_frame().ok_or(Error::OutOfResources)?;
                    crate::arch::paging::copy_frame(src_pa & !(PAGE_SIZE - 1), frame);
                    self.add(Counter::BytesCopied, PAGE_SIZE);
                    frame
                }
            }
            _ => return Err(Error::InvalidArgument),
        };
        // A shared frame is never writable in place: copy-on-write when the
        // pager allows writes, read-only (program text) when not.
        let shared = flags & pager::SHARE != 0;
        let space = self.procs[target].space.as_mut().ok_or(Error::NoSuchProcess)?;
        if let Err(e) = space.map_frame(page, frame, writable && !shared, shared && writable, executable) {
            memory::frame_unref(frame);
            return Err(e.into());
        }
        if waiting {
            self.make_ready(target);
        }
        Ok(0)
    }

    /// A pager ended: processes waiting on it end with a page fault.
    pub fn pager_cleanup(&mut self, pid: Pid) {
        for s in 0..self.procs.len() {
            if let State::Blocked(Blocked::PageFault { page }) = self.procs[s].state {
                let served_by_dead = self.procs[s]
                    .regions
                    .iter()
                    .flatten()
                    .any(|r| r.pager == pid && (r.start..r.end).contains(&page));
                if served_by_dead {
                    self.finish(s, ExitStatus::Fault { vector: vector::PAGE_FAULT, address: page });
                }
            }
        }
    }
}
