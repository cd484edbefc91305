//! The stack's global lock and the two modes (`net=classic|scalable`,
//! seed 003), and the lock statistics (`OP_LOCKSTAT`, `netstat -l`).
//!
//! The lock and its counters live in the lock page
//! (`protocols::net::locks::LockPage`), which this server owns and shares
//! with every process that maps it (`OP_MAP_LOCKS`, then a page fault in
//! `locks::WINDOW` that the server answers with its own page, shared, as
//! the RAM disk shares its lock page, docs/devices.md).
//!
//! - `scalable`: requests, received frames and timer ticks are packets on
//!   the one queue; the server takes the global lock once per batch of
//!   them, runs the stack, and lets it go. No caller touches the lock.
//! - `classic`: a caller takes the lock on its own CPU before a socket
//!   read or write and holds it while the server serves the call; the
//!   server serves a call from the holder at once, runs the stack, and
//!   only then answers (so the stack's work for the call is done under
//!   the caller's hold), and takes the lock itself, contending with the
//!   callers, for everything else (frames, ticks, calls made without it,
//!   waiting requests). While the lock is held by a caller whose call has
//!   not yet arrived, the server does not wait for it with its queue
//!   unread: it spins a little, then goes back to its queue (the holder's
//!   call may be there), keeping what it cannot serve yet.
//!
//! What it is not: the seed's classic kernel, where the stack's code ran
//! in the caller's own context. Here it runs in the server, while the
//! caller holds the lock and spins callers on other CPUs out; docs/
//! network.md says why.
//!
//! Invariant: the server never blocks (in `receive`) while it holds the
//! lock, and never spins without bound.

use crate::state::Net;
use abi::Pid;
use abi::msg::Kind;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use protocols::net::locks::{self, Figures, LockPage};
use protocols::unix::encode_result;
use protocols::unix::errno::EINVAL;
use runtime::msg::{self, ReplyHandle};
use runtime::{println, sys};
use spin::Mutex;

/// Attempts the server spins for the lock before it looks at its queue
/// again (each attempt a `pause`): a few microseconds, as long as a
/// holder on another CPU takes to let go after its answer.
const SERVER_SPIN_ATTEMPTS: u64 = 200;
/// How long the server waits for a lock it could not take before it
/// tries again, when no message comes first (a holder lets the lock go
/// without a message after its answer).
const RETRY_NS: u64 = 1_000_000;

/// Answers held back until the stack has run for the holder's call.
static DEFERRED: Mutex<Option<Vec<Deferred>>> = Mutex::new(None);

/// An answer held back: the reply handle, the words, the data.
type Deferred = (ReplyHandle, [u64; 4], Vec<u8>);

/// The answer to a call that cannot be answered at once is kept; the
/// others go out here. A caller that has gone cannot be answered: nothing
/// else to do.
pub fn answer(reply: ReplyHandle, words: [u64; 4], data: &[u8]) {
    if defer_answer(reply, words, data) {
        return;
    }
    let _ = msg::reply(reply, &words, data);
}

/// Send an answer now, or keep it if answers are being held back.
/// Returns whether it was kept.
pub fn defer_answer(reply: ReplyHandle, words: [u64; 4], data: &[u8]) -> bool {
    let mut d = DEFERRED.lock();
    match d.as_mut() {
        Some(list) => {
            list.push((reply, words, Vec::from(data)));
            true
        }
        None => false,
    }
}

/// Whether an answer to `reply` is among those held back.
fn answered(reply: ReplyHandle) -> bool {
    DEFERRED.lock().as_ref().is_some_and(|list| list.iter().any(|(r, _, _)| *r == reply))
}

fn hold_answers() {
    *DEFERRED.lock() = Some(Vec::new());
}

fn release_answers() {
    let list = DEFERRED.lock().take().unwrap_or_default();
    for (reply, words, data) in list {
        answer(reply, words, &data);
    }
}

/// The mode and designated CPU from the boot options, with a warning on
/// the console for a value that names neither (the defaults are used).
pub fn modes_from(options: &str) -> (u64, u64) {
    let cpus = sys::info(abi::InfoKey::CpusOnline).max(1);
    let mode_opt = protocols::options::lookup(options, "net");
    let mode = locks::parse_mode(mode_opt).unwrap_or_else(|| {
        println!("net: net={} is not classic or scalable; using scalable", mode_opt.unwrap_or(""));
        locks::MODE_SCALABLE
    });
    let cpu_opt = protocols::options::lookup(options, "net.cpu");
    let cpu = locks::parse_cpu(cpu_opt, cpus).unwrap_or_else(|| {
        println!(
            "net: net.cpu={} is not a CPU (0-{}); using the last, {}",
            cpu_opt.unwrap_or(""),
            cpus - 1,
            cpus - 1
        );
        cpus - 1
    });
    (mode, cpu)
}

pub fn mode_name(mode: u64) -> &'static str {
    if mode == locks::MODE_CLASSIC { "classic" } else { "scalable" }
}

impl Net {
    fn tsc(&self) -> u64 {
        sys::rdtsc()
    }

    /// Take the global lock for the server itself. `bounded`: give up
    /// after [`SERVER_SPIN_ATTEMPTS`] (classic: the holder's call may be
    /// waiting in the queue). A lock held for longer than
    /// `locks::STALE_HOLD_NS` is taken back (its holder died holding it).
    pub fn take_global(&mut self, bounded: bool) -> bool {
        let me = self.me;
        let page: &LockPage = &self.locks;
        let stale_tsc = self.tsc_hz.saturating_mul(locks::STALE_HOLD_NS / 1_000_000) / 1000;
        let got = page.global.acquire(me, sys::rdtsc, |attempts| {
            // At the first failed try too: the server's bounded waits
            // never reach 256, and a dead holder must not hold it forever.
            if attempts == 1 || attempts % 256 == 0 {
                let holder = page.global.owner();
                if holder != 0 && sys::rdtsc().saturating_sub(page.global.held_since_tsc()) > stale_tsc {
                    page.global.break_from(holder, sys::rdtsc());
                }
            }
            if bounded && attempts >= SERVER_SPIN_ATTEMPTS {
                return false;
            }
            core::hint::spin_loop();
            true
        });
        if got && page.global.owner() != me {
            return false;
        }
        got
    }

    pub fn drop_global(&mut self) {
        self.locks.global.release(self.me, self.tsc());
    }

    /// A fault in a client's lock window: the lock page, shared and
    /// writable (callers take the lock in it). Anything else fails.
    pub fn page_fault(&mut self, m: [u64; 4]) {
        let (pid, addr, start) = (Pid(m[0]), m[1] & !(abi::layout::PAGE_SIZE - 1), m[3]);
        let page = &*self.locks as *const LockPage as u64;
        let flags = abi::pager::SHARE | abi::pager::WRITABLE | abi::pager::SHARED;
        let ok = start == locks::WINDOW
            && addr == locks::WINDOW
            && sys::page_resolve(pid, addr, page, flags).is_ok();
        if !ok {
            let _ = sys::page_resolve(pid, addr, 0, abi::pager::FAIL);
        }
    }

    /// `OP_MAP_LOCKS`: the mode; the fault that follows maps the page.
    pub fn map_locks(&self, reply: ReplyHandle, where_: u64) {
        if where_ != locks::WINDOW {
            answer(reply, [encode_result(Err(EINVAL)), 0, 0, 0], &[]);
        } else {
            answer(reply, [0, self.mode, 0, 0], &[]);
        }
    }

    /// The figures since the last reset.
    pub fn lock_figures(&self) -> Figures {
        let g = &self.locks.global;
        let ns = |tsc: u64| (tsc as u128 * 1_000_000_000 / self.tsc_hz.max(1) as u128) as u64;
        let r = core::sync::atomic::Ordering::Relaxed;
        Figures {
            acquisitions: g.acquisitions.load(r),
            contended: g.contended.load(r),
            spin_ns: ns(g.spin_tsc.load(r)),
            hold_ns: ns(g.hold_tsc.load(r)),
            elapsed_ns: ns(sys::rdtsc().saturating_sub(self.lock_epoch_tsc)),
            cpus: sys::info(abi::InfoKey::CpusOnline).max(1),
        }
    }

    /// `OP_LOCKSTAT`: word 2 = 1 resets first.
    pub fn lockstat(&mut self, reply: ReplyHandle, reset: bool) {
        if reset {
            let now_tsc = sys::rdtsc();
            self.locks.global.reset_at(now_tsc);
            self.reset_ring_locks();
            self.lock_epoch_tsc = now_tsc;
        }
        let f = self.lock_figures();
        let text = self.lockstat_text(&f);
        answer(reply, [f.acquisitions, f.spin_ns, f.hold_ns, f.elapsed_ns], text.as_bytes());
    }

    fn lockstat_text(&self, f: &Figures) -> String {
        let pct = |c: u64| alloc::format!("{}.{:02} %", c / 100, c % 100);
        let mut t = String::new();
        let _ = writeln!(
            t,
            "mode {} designated cpu {} cpus {} interval {} ms",
            mode_name(self.mode),
            self.net_cpu,
            f.cpus,
            f.elapsed_ns / 1_000_000
        );
        // Seed 003: the Scalable Kernel's stack runs on the designated
        // CPU only (`set_affinity`); classic runs it for its callers.
        let _ = writeln!(
            t,
            "stack pinned to cpu {}: {} (served on cpu {})",
            self.net_cpu,
            if self.pinned { "yes" } else { "no" },
            sys::info(abi::InfoKey::CurrentCpu)
        );
        let _ = writeln!(t, "hold % all locks   {}", pct(f.hold_all_centi()));
        let _ = writeln!(t, "spin % all locks   {}", pct(f.spin_all_centi()));
        let _ = writeln!(t, "locks per second   {}", f.per_second());
        let _ = writeln!(t, "global lock hold   {}", pct(f.hold_global_centi()));
        let _ = writeln!(
            t,
            "global lock: acquisitions {} contended {} spin {} us hold {} us",
            f.acquisitions,
            f.contended,
            f.spin_ns / 1000,
            f.hold_ns / 1000
        );
        let _ = writeln!(
            t,
            "writes completed once queued: {} ({} bytes) since boot",
            self.queued_writes, self.queued_write_bytes
        );
        // Seed 003's per-socket locks: the receive rings' mini locks.
        let (acq, contended, spin, hold) = self.ring_lock_ticks();
        let ns = |tsc: u64| (tsc as u128 * 1_000_000_000 / self.tsc_hz.max(1) as u128) as u64;
        let _ = writeln!(
            t,
            "socket locks (receive rings): acquisitions {} contended {} spin {} us hold {} us",
            acq,
            contended,
            ns(spin) / 1000,
            ns(hold) / 1000
        );
        let s = &self.ring_stats;
        let (ring_reads, ring_bytes) = self.ring_reads();
        let _ = writeln!(
            t,
            "reads: {} calls; from receive rings without a call: {} reads {} bytes since boot",
            s.read_calls, ring_reads, ring_bytes
        );
        let _ = writeln!(
            t,
            "receive rings {}: {} now, {} bytes in, {} taken by readers (checked), {} by read calls, {} refills asked, {} broken",
            if self.rings_on && self.mode == locks::MODE_SCALABLE { "on" } else { "off" },
            self.rings.len(),
            s.bytes_in,
            s.bytes_taken,
            s.bytes_by_calls,
            s.drained,
            s.broken
        );
        t
    }

    /// `net=classic`'s loop (see the module's doc).
    pub fn serve_classic(&mut self) -> i32 {
        loop {
            let busy = !self.retry_lock && (!self.backlog.is_empty() || self.stack_due);
            let due_now = busy || (!self.retry_lock && self.next_delay_ns() == Some(0));
            if self.retry_lock {
                self.arm_timer_at(self.clock.now_ns().saturating_add(RETRY_NS));
            } else if !due_now {
                self.arm_timer();
            }
            let mut buf = core::mem::take(&mut self.rxbuf);
            let first = if due_now {
                msg::try_receive(self.queue, &mut buf).ok().flatten()
            } else {
                msg::receive_data(self.queue, &mut buf).ok()
            };
            self.rxbuf = buf;
            if let Some(r) = first {
                self.take_classic(r);
                for _ in 0..crate::BATCH {
                    let mut buf = core::mem::take(&mut self.rxbuf);
                    let next = msg::try_receive(self.queue, &mut buf);
                    self.rxbuf = buf;
                    match next {
                        Ok(Some(r)) => self.take_classic(r),
                        _ => break,
                    }
                }
            }
            // The server's own turn, under the lock it takes itself, when
            // it has something to do (a holder's call ran the stack already).
            if self.backlog.is_empty() && !self.stack_due && self.next_delay_ns() != Some(0) {
                continue;
            }
            if self.take_global(true) {
                self.retry_lock = false;
                for (r, data) in core::mem::take(&mut self.backlog) {
                    self.take_with(r, &data);
                }
                self.run_stack();
                self.stack_due = false;
                self.drop_global();
            } else {
                // The holder may be on this CPU, behind this server (which
                // runs at a higher priority): do not spin on; wait for its
                // call, or at most RETRY_NS.
                self.stack_due = true;
                self.retry_lock = true;
            }
        }
    }

    /// One message in `classic`: the holder's call at once, under its
    /// hold, with the stack run before it is answered; a page fault at
    /// once; the rest kept for the server's own turn.
    fn take_classic(&mut self, r: msg::Received) {
        let holder = self.locks.global.owner();
        match r.kind {
            Kind::PageFault => self.page_fault(r.message),
            Kind::Call if holder == r.sender.0 && holder != self.me => {
                hold_answers();
                self.take(r);
                self.run_stack();
                // A call that waits (parked) sleeps without the lock: let
                // it go for the caller, who will find it no longer holds it.
                if !answered(r.reply) {
                    self.locks.global.release(holder, sys::rdtsc());
                }
                release_answers();
            }
            Kind::Short if r.message[0] == crate::timer::TICK => {
                // The timer is free to be armed again; the stack runs at
                // the server's next turn.
                self.take(r);
                self.stack_due = true;
            }
            Kind::Data if r.message[0] == protocols::net::eth::RX => {
                // Moving the frame to the link's queue touches no stack
                // state; the stack sees it at the next run.
                self.take(r);
                self.stack_due = true;
            }
            _ => {
                let data = Vec::from(&self.rxbuf[..r.len.min(self.rxbuf.len())]);
                self.backlog.push((r, data));
            }
        }
    }

    /// Serve a kept message with its data.
    fn take_with(&mut self, r: msg::Received, data: &[u8]) {
        if r.kind == Kind::Call {
            self.request(r.sender, r.reply, r.message, data);
        } else {
            self.take(r);
        }
    }
}
