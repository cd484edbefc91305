//! vm: the virtual-memory manager (Ridge OS §3; MINIX 3's VM server): the
//! pager of every UNIX process's memory except its stack.
//!
//! - **Program text and data** are paged in from the program file on first
//!   touch. `OP_LOAD_IMAGE` reads the loadable parts of a file (through a
//!   directory-manager handle the monitor opened) once and keeps them;
//!   `OP_NEW_IMAGE` makes this manager the pager of each segment of a new
//!   image. A text page, and a data page not yet written, is this
//!   manager's own page mapped into the process (`SHARE`: read-only for
//!   text, copy-on-write for data), so every process running a program
//!   shares its text; a page the file only partly fills gets a private
//!   copy with the rest zeroed.
//! - **The heap** (Ridge's `sbrk`): the runtime only moves a pointer; the
//!   first touch of each page is a fault here, answered with a zero page,
//!   up to the process's hard heap limit (`OP_NEW_IMAGE` word 3,
//!   `protocols::unix::rlimit`); a fault past it fails (SIGSEGV).
//! - **fork**: the child gets the parent's address space copy-on-write
//!   (`space_copy`, one kernel call) and its pager regions, so the child's
//!   faults come here too.
//!
//! What it is not: the pager of its own memory (its heap gets the kernel's
//! zero-fill default), nor of stacks (mapped by the kernel at exec).
//!
//! Only the monitor (named by init with `OP_SET_MONITOR`) may load images
//! and set up processes: `space_copy` and `set_pager` would otherwise let
//! any process read or replace another's memory.
//!
//! Arguments: the starter's kernel pid (decimal).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use abi::layout::{PAGE_SIZE, USER_HEAP_BASE, USER_HEAP_MAX_BYTES};
use abi::msg::Kind;
use abi::{Pid, pager};
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use kernel_core::elf::{self, Segment};
use protocols::unix::Errno;
use protocols::unix::{Stat, encode_result, errno, io, vm};
use runtime::msg::{self, Link, Page, Queue, ReplyHandle};
use runtime::{Args, sys};

runtime::entry!(main);

/// Program images kept; the least recently loaded one no process runs
/// goes first.
const MAX_IMAGES: usize = 16;

#[derive(Default)]
struct Stats {
    faults: u64,
    forks: u64,
    pages_shared: u64,
}

/// A program file's loadable parts.
struct Image {
    /// The kernel pid of the file's manager (inode numbers are per volume).
    manager: u64,
    ino: u64,
    mtime_ns: u64,
    size_bytes: u64,
    generation: u32,
    entry: u64,
    segments: Vec<Segment>,
    /// File pages (index = file offset / `PAGE_SIZE`) that some segment covers.
    pages: BTreeMap<u64, Box<Page>>,
    /// Processes whose regions name this image.
    users: u32,
}

/// One paged region of a process: a segment of an image.
#[derive(Clone, Copy)]
struct Region {
    start: u64,
    end: u64,
    image: usize,
    segment: usize,
}

struct Vm {
    me: Pid,
    queue: Queue,
    fs: Option<Link>,
    fs_pid: u64,
    /// Links to other file managers (disk file systems), by (pid, queue).
    links: BTreeMap<(u64, u32), Link>,
    images: Vec<Option<Image>>,
    next_generation: u32,
    processes: BTreeMap<u64, Vec<Region>>,
    /// Heap bytes served to each process that has a heap limit
    /// (`OP_NEW_IMAGE` word 3; a fork child has its parent's): a fault
    /// past it fails. The region itself stays whole, since an address
    /// in no region would get the kernel's zero-fill.
    heap_limits: BTreeMap<u64, u64>,
    stats: Stats,
    /// A page for building partly filled pages (COPY copies from it).
    scratch: Box<Page>,
}

fn main(args: Args) -> i32 {
    let starter = args.get(0).and_then(|s| s.parse::<u64>().ok()).map(Pid);
    // Faults from every UNIX process arrive here: room for one per process.
    let Ok(()) = msg::init_qseg(16, 4, 320, 16) else { return 1 };
    let Ok(queue) = msg::open_queue(300, true) else { return 1 };
    if let Some(starter) = starter {
        let ready = msg::open_link(starter, Queue(protocols::STARTER_QUEUE))
            .and_then(|l| msg::send(l, &[vm::READY, queue.0 as u64, 0, 0]));
        if ready.is_err() {
            return 2;
        }
    }
    let fs_at = sys::bootstrap(abi::bootstrap::FS);
    let fs = fs_at.and_then(|(p, q)| msg::open_link(p, Queue(q)).ok());
    let mut vm = Vm {
        me: sys::getpid(),
        queue,
        fs,
        fs_pid: fs_at.map_or(0, |(p, _)| p.0),
        links: BTreeMap::new(),
        images: Vec::new(),
        next_generation: 1,
        processes: BTreeMap::new(),
        heap_limits: BTreeMap::new(),
        stats: Stats::default(),
        scratch: Box::new(Page::zeroed()),
    };
    let mut monitor: Option<Pid> = None;
    let mut buf = Page::zeroed();
    let mut pending: Option<(ReplyHandle, [u64; 4])> = None;
    loop {
        let (handle, answer) = match pending.take() {
            Some((h, a)) => (Some(h), a),
            None => (None, [0; 4]),
        };
        let Ok(r) = msg::reply_wait(handle, &answer, &[], queue, &mut buf.0) else { continue };
        match r.kind {
            Kind::PageFault => {
                let [pid, addr, _error, start] = r.message;
                vm.stats.faults += 1;
                vm.fault(Pid(pid), addr, start);
            }
            Kind::Call => {
                let [op, a, b, c] = r.message;
                let from_monitor = monitor == Some(r.sender);
                let result = match op {
                    vm::OP_SET_MONITOR if monitor.is_none() && Some(r.sender) == starter => {
                        monitor = Some(Pid(a));
                        Ok(0)
                    }
                    vm::OP_LOAD_IMAGE if from_monitor => match Stat::decode(&buf.0[..r.len.min(buf.0.len())])
                    {
                        Some(st) => vm.load_image(a, (b, c), &st).map(|(id, entry)| {
                            pending = Some((r.reply, [id, entry, 0, 0]));
                        }),
                        None => Err(errno::EINVAL),
                    }
                    .map(|_| u64::MAX),
                    vm::OP_NEW_IMAGE if from_monitor => vm.new_image(Pid(a), b, c),
                    vm::OP_FORK if from_monitor => vm.fork(Pid(a), Pid(b)),
                    vm::OP_EXIT if from_monitor => {
                        vm.forget(a);
                        Ok(0)
                    }
                    vm::OP_STATS => {
                        let s = &vm.stats;
                        pending = Some((
                            r.reply,
                            [s.faults, s.forks, s.pages_shared, vm.images.iter().flatten().count() as u64],
                        ));
                        continue;
                    }
                    vm::OP_SET_MONITOR | vm::OP_LOAD_IMAGE | vm::OP_NEW_IMAGE | vm::OP_FORK | vm::OP_EXIT => {
                        Err(errno::EPERM)
                    }
                    _ => Err(errno::ENOSYS),
                };
                match result {
                    Ok(u64::MAX) => {} // answered above
                    other => pending = Some((r.reply, [encode_result(other), 0, 0, 0])),
                }
            }
            _ => {}
        }
    }
}

fn kernel_errno(e: abi::Error) -> Errno {
    match e {
        abi::Error::OutOfResources => errno::ENOMEM,
        abi::Error::NoSuchProcess => errno::ESRCH,
        abi::Error::PermissionDenied => errno::EPERM,
        abi::Error::InUse => errno::EBUSY,
        _ => errno::EINVAL,
    }
}

impl Vm {
    /// Read the loadable parts of the file open as `handle` at the
    /// manager `(pid, queue)` (pid 0: the directory manager), whose
    /// attributes are `st`, or find them cached. Returns (image id, entry
    /// point).
    fn load_image(
        &mut self,
        handle: u64,
        (manager, queue): (u64, u64),
        st: &Stat,
    ) -> Result<(u64, u64), Errno> {
        let (manager, fs) = match manager {
            0 => (self.fs_pid, self.fs.ok_or(errno::ENOSYS)?),
            pid => (pid, self.link_to(Pid(pid), queue as u32)?),
        };
        let found = self.images.iter().position(|m| {
            m.as_ref().is_some_and(|m| {
                m.manager == manager
                    && m.ino == st.ino
                    && m.mtime_ns == st.mtime_ns
                    && m.size_bytes == st.size_bytes
            })
        });
        if let Some(i) = found {
            let img = self.images[i].as_ref().expect("found");
            return Ok((id(i, img.generation), img.entry));
        }
        let mut head = Page::zeroed();
        let head_len = read_at(fs, handle, 0, &mut head)?;
        let program = elf::parse_headers(&head.0[..head_len], st.size_bytes).map_err(|_| errno::ENOEXEC)?;
        let segments: Vec<Segment> = program.segments().to_vec();
        let mut pages = BTreeMap::new();
        for seg in &segments {
            let first = seg.file_offset / PAGE_SIZE;
            let end = (seg.file_offset + seg.file_bytes).div_ceil(PAGE_SIZE);
            for index in first..end {
                if pages.contains_key(&index) {
                    continue;
                }
                let mut page = Box::new(Page::zeroed());
                read_at(fs, handle, index * PAGE_SIZE, &mut page)?;
                pages.insert(index, page);
            }
        }
        let slot = self.free_image_slot()?;
        let generation = self.next_generation;
        self.next_generation = self.next_generation.wrapping_add(1).max(1);
        let entry = program.entry;
        self.images[slot] = Some(Image {
            manager,
            ino: st.ino,
            mtime_ns: st.mtime_ns,
            size_bytes: st.size_bytes,
            generation,
            entry,
            segments,
            pages,
            users: 0,
        });
        Ok((id(slot, generation), entry))
    }

    /// A link to the file manager `pid`'s `queue`, kept (a dead one is
    /// opened again).
    fn link_to(&mut self, pid: Pid, queue: u32) -> Result<Link, Errno> {
        if let Some(&l) = self.links.get(&(pid.0, queue)) {
            return Ok(l);
        }
        let l = msg::open_link(pid, Queue(queue)).map_err(|_| errno::EIO)?;
        self.links.insert((pid.0, queue), l);
        Ok(l)
    }

    fn free_image_slot(&mut self) -> Result<usize, Errno> {
        if let Some(i) = self.images.iter().position(Option::is_none) {
            return Ok(i);
        }
        if self.images.len() < MAX_IMAGES {
            self.images.push(None);
            return Ok(self.images.len() - 1);
        }
        // Evict the oldest image no process runs.
        let victim = self
            .images
            .iter()
            .enumerate()
            .filter(|(_, m)| m.as_ref().is_some_and(|m| m.users == 0))
            .min_by_key(|(_, m)| m.as_ref().map_or(u32::MAX, |m| m.generation))
            .map(|(i, _)| i)
            .ok_or(errno::ENOMEM)?;
        self.images[victim] = None;
        Ok(victim)
    }

    fn image_of(&self, image_id: u64) -> Option<usize> {
        let (slot, generation) = ((image_id & 0xffff_ffff) as usize, (image_id >> 32) as u32);
        self.images.get(slot)?.as_ref().filter(|m| m.generation == generation).map(|_| slot)
    }

    /// Page the new image of `pid`: its segments and its heap, of
    /// `heap_bytes` (0: the whole heap region).
    fn new_image(&mut self, pid: Pid, image_id: u64, heap_bytes: u64) -> Result<u64, Errno> {
        self.forget(pid.0);
        let slot = self.image_of(image_id).ok_or(errno::EINVAL)?;
        let segments = self.images[slot].as_ref().expect("checked").segments.clone();
        let mut regions = Vec::with_capacity(segments.len());
        for (i, seg) in segments.iter().enumerate() {
            let (start, end) = (seg.page_start(), seg.page_end());
            sys::set_pager(pid, start, end - start, self.me, self.queue.0).map_err(kernel_errno)?;
            regions.push(Region { start, end, image: slot, segment: i });
        }
        sys::set_pager(pid, USER_HEAP_BASE, USER_HEAP_MAX_BYTES, self.me, self.queue.0)
            .map_err(kernel_errno)?;
        // The heap limit (`protocols::unix::rlimit`): past it no page is
        // served, whatever the process does with its break.
        if let Some(b) = heap_bytes.checked_next_multiple_of(PAGE_SIZE)
            && b != 0
            && b < USER_HEAP_MAX_BYTES
        {
            self.heap_limits.insert(pid.0, b);
        }
        if let Some(img) = self.images[slot].as_mut() {
            img.users += 1;
        }
        self.processes.insert(pid.0, regions);
        Ok(0)
    }

    fn fork(&mut self, parent: Pid, child: Pid) -> Result<u64, Errno> {
        let pages = sys::space_copy(parent, child).map_err(kernel_errno)?;
        self.stats.forks += 1;
        self.stats.pages_shared += pages;
        if let Some(regions) = self.processes.get(&parent.0).cloned() {
            if let Some(r) = regions.first()
                && let Some(img) = self.images[r.image].as_mut()
            {
                img.users += 1;
            }
            self.processes.insert(child.0, regions);
        }
        if let Some(&limit) = self.heap_limits.get(&parent.0) {
            self.heap_limits.insert(child.0, limit);
        }
        Ok(pages)
    }

    /// A process ended or got a new image: its regions are gone.
    fn forget(&mut self, pid: u64) {
        self.heap_limits.remove(&pid);
        if let Some(regions) = self.processes.remove(&pid)
            && let Some(r) = regions.first()
            && let Some(img) = self.images[r.image].as_mut()
        {
            img.users = img.users.saturating_sub(1);
        }
    }

    fn fault(&mut self, pid: Pid, addr: u64, region_start: u64) {
        let past_limit = self.heap_limits.get(&pid.0).is_some_and(|&l| addr >= USER_HEAP_BASE + l);
        let flags_and_src = if region_start == USER_HEAP_BASE && past_limit {
            None
        } else if region_start == USER_HEAP_BASE {
            Some((pager::ZERO | pager::WRITABLE, 0))
        } else {
            self.image_page(pid.0, addr)
        };
        let resolved = match flags_and_src {
            Some((flags, src)) => sys::page_resolve(pid, addr, src, flags),
            None => Err(abi::Error::BadAddress),
        };
        if let Err(e) = resolved {
            // Outside the image, or out of memory: the process cannot go
            // on. Out of memory is the faulting process's own request
            // refused (docs/memory.md, "Out of memory"): say so, since a
            // page fault alone would read as a bug of the program.
            if e == abi::Error::OutOfResources {
                oom_message(pid, addr);
            }
            let _ = sys::page_resolve(pid, addr, 0, pager::FAIL);
        }
    }

    /// How to map the page of `addr` in process `pid`'s image: (flags,
    /// source address in this process).
    fn image_page(&mut self, pid: u64, addr: u64) -> Option<(u64, u64)> {
        let region = *self.processes.get(&pid)?.iter().find(|r| (r.start..r.end).contains(&addr))?;
        let img = self.images[region.image].as_ref()?;
        let seg = img.segments[region.segment];
        let page = addr & !(PAGE_SIZE - 1);
        let mut flags = if seg.is_writable { pager::WRITABLE } else { 0 };
        if seg.is_executable {
            flags |= pager::EXECUTABLE;
        }
        // The file bytes that land in this page.
        let lo = page.max(seg.vaddr);
        let hi = (page + PAGE_SIZE).min(seg.vaddr + seg.file_bytes);
        let file_at = |va: u64| seg.file_offset + (va - seg.vaddr);
        if lo == page && hi == page + PAGE_SIZE && file_at(page) % PAGE_SIZE == 0 {
            // A whole file page: map this manager's copy itself.
            let src = img.pages.get(&(file_at(page) / PAGE_SIZE))?;
            self.stats.pages_shared += 1;
            return Some((flags | pager::SHARE, src.0.as_ptr() as u64));
        }
        // Partly file, partly zero (or unaligned): a private copy.
        self.scratch.0.fill(0);
        let mut va = lo;
        while va < hi {
            let off = file_at(va);
            let src = img.pages.get(&(off / PAGE_SIZE))?;
            let in_page = (off % PAGE_SIZE) as usize;
            let n = ((PAGE_SIZE as usize - in_page) as u64).min(hi - va) as usize;
            let dst = (va - page) as usize;
            self.scratch.0[dst..dst + n].copy_from_slice(&src.0[in_page..in_page + n]);
            va += n as u64;
        }
        Some((flags | pager::COPY, self.scratch.0.as_ptr() as u64))
    }
}

/// The kernel log line for a process ended because its page found no
/// free frame (formatted by hand: this server has no formatter for the
/// kernel log, and the line must not need memory).
fn oom_message(pid: Pid, addr: u64) {
    let mut line = [0u8; 128];
    let mut n = 0;
    let mut put = |bytes: &[u8]| {
        let take = bytes.len().min(line.len() - n);
        line[n..n + take].copy_from_slice(&bytes[..take]);
        n += take;
    };
    put(b"vm: process ");
    put(&hex(pid.0));
    put(b" killed: out of memory (its page at ");
    put(&hex(addr & !(PAGE_SIZE - 1)));
    put(b" found no free frame)\n");
    let _ = sys::debug_write(&line[..n]);
}

/// `0x` and `value` in hexadecimal, as 18 bytes (leading zeros kept).
fn hex(value: u64) -> [u8; 18] {
    let mut out = *b"0x0000000000000000";
    for (i, byte) in out[2..].iter_mut().enumerate() {
        let nibble = (value >> (60 - 4 * i)) & 0xf;
        *byte = b"0123456789abcdef"[nibble as usize];
    }
    out
}

fn id(slot: usize, generation: u32) -> u64 {
    slot as u64 | (generation as u64) << 32
}

/// Read the file page at `offset` through the directory manager.
fn read_at(fs: Link, handle: u64, offset: u64, page: &mut Page) -> Result<usize, Errno> {
    let sought = msg::call(fs, &[io::OP_SEEK, handle, offset, 0], &[], &mut []).map_err(|_| errno::EIO)?;
    protocols::unix::result(sought.0[0])?;
    let (w, _) =
        msg::call(fs, &[io::OP_READ, handle, PAGE_SIZE, 0], &[], &mut page.0).map_err(|_| errno::EIO)?;
    // The bytes came in the reply or through the lease on `page`
    // (`io::OP_READ`): word 0 counts them either way.
    let n = protocols::unix::result(w[0])? as usize;
    Ok(n.min(page.0.len()))
}
