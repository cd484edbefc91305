//! vm: the virtual-memory manager (Ridge OS §3; MINIX 3's VM server).
//!
//! - It is the pager of every UNIX process's heap region: the runtime's
//!   `sbrk` only moves a pointer, and the first touch of each page is a
//!   fault message here, answered with a zero-filled page (Ridge's `sbrk`).
//! - It does `fork`'s memory work: the child gets the parent's address
//!   space copy-on-write (`space_copy`, one kernel call for the whole
//!   space) and the parent's pager regions, so the child's heap faults come
//!   here too.
//!
//! What it is not: the owner of program text and data, which `proc_exec`
//! loads eagerly from the monitor's buffer; and it does not page its own
//! memory (its heap gets the kernel's zero-fill default).
//!
//! Only the monitor (named by init with `OP_SET_MONITOR`) may ask for
//! `OP_NEW_IMAGE` and `OP_FORK`: `space_copy` would otherwise let any
//! process read another's memory through a child of its own.
//!
//! Arguments: the starter's kernel pid (decimal).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use abi::layout::{USER_HEAP_BASE, USER_HEAP_MAX_BYTES};
use abi::msg::Kind;
use abi::{Pid, pager};
use protocols::unix::{encode_result, errno, vm};
use runtime::msg::{self, Queue, ReplyHandle};
use runtime::{Args, sys};

runtime::entry!(main);

#[derive(Default)]
struct Stats {
    faults: u64,
    forks: u64,
    pages_shared: u64,
}

fn main(args: Args) -> i32 {
    let starter = args.get(0).and_then(|s| s.parse::<u64>().ok()).map(Pid);
    // Faults from every UNIX process arrive here: room for one per process.
    let Ok(()) = msg::init_qseg(16, 4, 320, 16) else { return 1 };
    let Ok(queue) = msg::open_queue(300, true) else { return 1 };
    if let Some(starter) = starter {
        let ready =
            msg::open_link(starter, Queue(0)).and_then(|l| msg::send(l, &[vm::READY, queue.0 as u64, 0, 0]));
        if ready.is_err() {
            return 2;
        }
    }
    let me = sys::getpid();
    let mut monitor: Option<Pid> = None;
    let mut stats = Stats::default();
    let mut pending: Option<(ReplyHandle, [u64; 4])> = None;
    loop {
        let (handle, answer) = match pending.take() {
            Some((h, a)) => (Some(h), a),
            None => (None, [0; 4]),
        };
        let Ok(r) = msg::reply_wait(handle, &answer, &[], queue, &mut []) else { continue };
        match r.kind {
            Kind::PageFault => {
                let [pid, addr, _error, start] = r.message;
                stats.faults += 1;
                let flags = if start == USER_HEAP_BASE { pager::ZERO | pager::WRITABLE } else { pager::FAIL };
                if sys::page_resolve(Pid(pid), addr, 0, flags).is_err() {
                    // Out of memory: the process cannot go on.
                    let _ = sys::page_resolve(Pid(pid), addr, 0, pager::FAIL);
                }
            }
            Kind::Call => {
                let [op, a, b, _] = r.message;
                let from_monitor = monitor == Some(r.sender);
                let result = match op {
                    vm::OP_SET_MONITOR if monitor.is_none() && Some(r.sender) == starter => {
                        monitor = Some(Pid(a));
                        Ok(0)
                    }
                    vm::OP_NEW_IMAGE if from_monitor => {
                        sys::set_pager(Pid(a), USER_HEAP_BASE, USER_HEAP_MAX_BYTES, me, queue.0)
                            .map(|_| 0)
                            .map_err(kernel_errno)
                    }
                    vm::OP_FORK if from_monitor => match sys::space_copy(Pid(a), Pid(b)) {
                        Ok(pages) => {
                            stats.forks += 1;
                            stats.pages_shared += pages;
                            Ok(pages)
                        }
                        Err(e) => Err(kernel_errno(e)),
                    },
                    vm::OP_STATS => {
                        pending = Some((r.reply, [stats.faults, stats.forks, stats.pages_shared, 0]));
                        continue;
                    }
                    vm::OP_SET_MONITOR | vm::OP_NEW_IMAGE | vm::OP_FORK => Err(errno::EPERM),
                    _ => Err(errno::ENOSYS),
                };
                pending = Some((r.reply, [encode_result(result), 0, 0, 0]));
            }
            _ => {}
        }
    }
}

fn kernel_errno(e: abi::Error) -> u64 {
    match e {
        abi::Error::OutOfResources => errno::ENOMEM,
        abi::Error::NoSuchProcess => errno::ESRCH,
        abi::Error::PermissionDenied => errno::EPERM,
        abi::Error::InUse => errno::EBUSY,
        _ => errno::EINVAL,
    }
}
