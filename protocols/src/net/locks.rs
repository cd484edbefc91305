//! The network server's lock page: the stack's global spin lock and its
//! statistics, in one page the server shares with every socket user
//! (`OP_MAP_LOCKS`), and the boot options that choose how it is used.
//!
//! Seed 003 measured the stack's locks with TSC stamps around every
//! acquire: the hold % and spin % over all locks, locks per second, and
//! the global lock's ("I/O lock 8") hold %. Here each acquire stamps the
//! TSC before it tries and when it gets the lock (spin time), and each
//! release stamps the end of the hold; the sums live in the page, so
//! callers in other processes add their own spinning and holding to the
//! same counters the server reports.
//!
//! - `net=classic`: every socket call takes the global lock in the
//!   calling process, on the caller's CPU, and holds it while the stack
//!   serves the call; callers on other CPUs spin (the seed's Figure 2).
//!   A call that must wait (a read with nothing to read) gives the lock
//!   up while it sleeps: the server lets it go on the caller's behalf,
//!   and the caller, answered later, finds it no longer holds it. The
//!   server takes the lock for its own work (frames, timers, the
//!   monitor's opens and closes) the same way.
//! - `net=scalable` (the default): callers never take it; requests are
//!   packets queued to the one server process, which alone takes the
//!   lock, once per batch of packets (the seed's Scalable Kernel).
//!
//! What this is not: a fair or sleeping lock. A waiter spins with
//! `pause` and gives its CPU up now and then (the caller's `wait`
//! closure decides), so a holder that was pre-empted gets to run.
//!
//! Invariants: `owner` is 0 or the pid of the process holding the lock;
//! only the owner releases it, except the server, which takes back a lock
//! held longer than [`STALE_HOLD_NS`] (its holder died or hangs: a hold
//! never legitimately spans more than one non-waiting call).

use core::sync::atomic::{AtomicU64, Ordering};

/// Where the runtime maps the lock page: the last page of the
/// device-mapping region (the RAM disk's windows grow up from its start).
pub const WINDOW: u64 =
    abi::layout::USER_DEVICE_MAP_BASE + abi::layout::USER_DEVICE_MAP_BYTES - abi::layout::PAGE_SIZE;
/// The page's first word once the server has set it up.
pub const MAGIC: u64 = 0x004b_434f_4c54_454e; // "NETLOCK"
/// `net=classic`.
pub const MODE_CLASSIC: u64 = 1;
/// `net=scalable`.
pub const MODE_SCALABLE: u64 = 2;
/// A hold longer than this is taken back by the server.
pub const STALE_HOLD_NS: u64 = 2_000_000_000;

/// One spin lock and its statistics (TSC ticks).
#[repr(C)]
#[derive(Default)]
pub struct StatLock {
    owner: AtomicU64,
    held_since_tsc: AtomicU64,
    /// Acquisitions since the last reset.
    pub acquisitions: AtomicU64,
    /// Acquisitions that found the lock held and spun.
    pub contended: AtomicU64,
    /// Ticks spent spinning for the lock (also by attempts given up).
    pub spin_tsc: AtomicU64,
    /// Ticks the lock was held.
    pub hold_tsc: AtomicU64,
}

impl StatLock {
    /// The holder's pid, or 0.
    pub fn owner(&self) -> u64 {
        self.owner.load(Ordering::Acquire)
    }

    /// When the current holder took it (TSC).
    pub fn held_since_tsc(&self) -> u64 {
        self.held_since_tsc.load(Ordering::Acquire)
    }

    /// Take the lock for `who` (non-zero), spinning while it is held.
    /// `now` reads the TSC; `wait(attempts)` is called after each failed
    /// attempt and returns false to give up. Returns whether the lock was
    /// taken; the time spun is counted either way.
    pub fn acquire(&self, who: u64, now: impl Fn() -> u64, mut wait: impl FnMut(u64) -> bool) -> bool {
        let start = now();
        let mut attempts = 0u64;
        loop {
            if self.owner.compare_exchange(0, who, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                let got = now();
                self.held_since_tsc.store(got, Ordering::Release);
                self.acquisitions.fetch_add(1, Ordering::Relaxed);
                if attempts > 0 {
                    self.contended.fetch_add(1, Ordering::Relaxed);
                    self.spin_tsc.fetch_add(got.saturating_sub(start), Ordering::Relaxed);
                }
                return true;
            }
            attempts += 1;
            if !wait(attempts) {
                self.spin_tsc.fetch_add(now().saturating_sub(start), Ordering::Relaxed);
                return false;
            }
        }
    }

    /// Let the lock go if `who` holds it; returns whether it did. The
    /// hold is counted.
    pub fn release(&self, who: u64, now_tsc: u64) -> bool {
        if self.owner.load(Ordering::Acquire) != who {
            return false;
        }
        let since = self.held_since_tsc.load(Ordering::Acquire);
        self.hold_tsc.fetch_add(now_tsc.saturating_sub(since), Ordering::Relaxed);
        self.owner.compare_exchange(who, 0, Ordering::Release, Ordering::Relaxed).is_ok()
    }

    /// Take the lock back from `holder` (its hold counted up to now).
    pub fn break_from(&self, holder: u64, now_tsc: u64) -> bool {
        self.release(holder, now_tsc)
    }

    /// Make the lock free whoever holds it, and zero its counters: for a
    /// lock in memory given to a new user (a receive ring handed to
    /// another socket), where the last user may have left anything.
    pub fn clear(&self) {
        self.owner.store(0, Ordering::Release);
        self.held_since_tsc.store(0, Ordering::Release);
        self.reset();
    }

    /// Zero the counters at `now_tsc`, the start of a new interval: a
    /// hold in progress then counts only from `now_tsc` on, so the hold
    /// reported for the interval never exceeds the interval (the request
    /// that resets is itself served under the lock).
    pub fn reset_at(&self, now_tsc: u64) {
        self.reset();
        if self.owner() != 0 {
            self.held_since_tsc.fetch_max(now_tsc, Ordering::AcqRel);
        }
    }

    /// Zero the counters (not the lock itself).
    pub fn reset(&self) {
        for c in [&self.acquisitions, &self.contended, &self.spin_tsc, &self.hold_tsc] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// The shared page.
#[repr(C, align(4096))]
#[derive(Default)]
pub struct LockPage {
    pub magic: AtomicU64,
    /// [`MODE_CLASSIC`] or [`MODE_SCALABLE`].
    pub mode: AtomicU64,
    /// The stack's global lock, over all of its state.
    pub global: StatLock,
    /// `net=scalable`: moves on whenever the server drops queued bytes
    /// (`OP_WRITE_QUEUED` on a connection that can no longer send). A
    /// caller's credit is good only while this is what it was when the
    /// credit came, so the write after a lost one is a call, which fails.
    pub credit_epoch: AtomicU64,
}

const _: () = assert!(core::mem::size_of::<LockPage>() as u64 == abi::layout::PAGE_SIZE);

/// The statistics over an interval, in the seed's terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub acquisitions: u64,
    pub contended: u64,
    pub spin_ns: u64,
    pub hold_ns: u64,
    pub elapsed_ns: u64,
    pub cpus: u64,
}

impl Figures {
    /// Hold % of the CPUs' time over all locks, in hundredths of a
    /// percent (the seed's "hold % all locks"; one lock so far).
    pub fn hold_all_centi(&self) -> u64 {
        ratio_centi(self.hold_ns, self.elapsed_ns.saturating_mul(self.cpus.max(1)))
    }

    /// Spin % of the CPUs' time over all locks, hundredths of a percent.
    pub fn spin_all_centi(&self) -> u64 {
        ratio_centi(self.spin_ns, self.elapsed_ns.saturating_mul(self.cpus.max(1)))
    }

    /// The global lock's hold %: of wall time (it is one lock, held on
    /// one CPU at a time), hundredths of a percent.
    pub fn hold_global_centi(&self) -> u64 {
        ratio_centi(self.hold_ns, self.elapsed_ns)
    }

    /// Acquisitions per second.
    pub fn per_second(&self) -> u64 {
        if self.elapsed_ns == 0 {
            return 0;
        }
        (self.acquisitions as u128 * 1_000_000_000 / self.elapsed_ns as u128) as u64
    }
}

fn ratio_centi(part: u64, whole: u64) -> u64 {
    if whole == 0 {
        return 0;
    }
    (part as u128 * 10_000 / whole as u128) as u64
}

/// `net=`: the mode, or `None` for a value that names none (the caller
/// says so and uses the default). Absent: scalable.
pub fn parse_mode(value: Option<&str>) -> Option<u64> {
    match value {
        None | Some("scalable") => Some(MODE_SCALABLE),
        Some("classic") => Some(MODE_CLASSIC),
        Some(_) => None,
    }
}

/// `net.cpu=N`: the designated CPU, 0-based, below `cpus`; absent: the
/// last CPU. `None` for a value that is not a number or names no CPU.
pub fn parse_cpu(value: Option<&str>, cpus: u64) -> Option<u64> {
    let last = cpus.max(1) - 1;
    match value {
        None => Some(last),
        Some(v) => v.parse::<u64>().ok().filter(|&c| c <= last),
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::sync::Arc;

    #[test]
    fn an_acquire_and_release_counts_one_hold() {
        let l = StatLock::default();
        assert!(l.acquire(7, || 100, |_| true));
        assert_eq!(l.owner(), 7);
        assert!(!l.release(8, 150), "only the owner releases");
        assert!(l.release(7, 150));
        assert_eq!(l.owner(), 0);
        assert_eq!(l.acquisitions.load(Ordering::Relaxed), 1);
        assert_eq!(l.hold_tsc.load(Ordering::Relaxed), 50);
        assert_eq!(l.spin_tsc.load(Ordering::Relaxed), 0);
        assert_eq!(l.contended.load(Ordering::Relaxed), 0);
    }

    /// Regression (utest `net::lock_statistics_and_queued_writes` failed
    /// once with "hold 29492177 ns in an interval of 29405642 ns"): a hold
    /// that began before a reset counts only from the reset on.
    #[test]
    fn a_hold_across_a_reset_counts_from_the_reset() {
        let l = StatLock::default();
        assert!(l.acquire(7, || 100, |_| true));
        l.reset_at(400);
        assert!(l.release(7, 450));
        assert_eq!(l.hold_tsc.load(Ordering::Relaxed), 50, "the hold within the interval [400, 450]");
        // A free lock: reset_at leaves nothing to move.
        l.reset_at(500);
        assert!(l.acquire(7, || 600, |_| true));
        assert!(l.release(7, 610));
        assert_eq!(l.hold_tsc.load(Ordering::Relaxed), 10);
    }

    #[test]
    fn a_held_lock_makes_others_spin_and_give_up() {
        let l = StatLock::default();
        assert!(l.acquire(1, || 0, |_| true));
        let t = core::cell::Cell::new(10u64);
        let got = l.acquire(
            2,
            || {
                t.set(t.get() + 5);
                t.get()
            },
            |n| n < 3,
        );
        assert!(!got);
        assert_eq!(l.owner(), 1);
        assert!(l.spin_tsc.load(Ordering::Relaxed) > 0, "the spinning is counted");
        assert_eq!(l.acquisitions.load(Ordering::Relaxed), 1);
        assert!(l.break_from(1, 40));
        assert!(l.acquire(2, || 50, |_| true));
    }

    #[test]
    fn threads_exclude_each_other_and_every_acquire_counts() {
        let page = Arc::new(LockPage::default());
        let inside = Arc::new(AtomicU64::new(0));
        let clock = Arc::new(AtomicU64::new(0));
        let threads: std::vec::Vec<_> = (1..=4u64)
            .map(|who| {
                let (page, inside, clock) = (page.clone(), inside.clone(), clock.clone());
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        let now = || clock.fetch_add(1, Ordering::Relaxed);
                        assert!(page.global.acquire(who, now, |_| {
                            std::thread::yield_now();
                            true
                        }));
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                        inside.fetch_sub(1, Ordering::SeqCst);
                        assert!(page.global.release(who, clock.fetch_add(1, Ordering::Relaxed)));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(page.global.acquisitions.load(Ordering::Relaxed), 8000);
        assert!(page.global.hold_tsc.load(Ordering::Relaxed) >= 8000);
    }

    #[test]
    fn figures_in_the_seeds_terms() {
        let f = Figures {
            acquisitions: 300,
            contended: 0,
            spin_ns: 250,
            hold_ns: 500,
            elapsed_ns: 1000,
            cpus: 2,
        };
        assert_eq!(f.hold_all_centi(), 2500);
        assert_eq!(f.spin_all_centi(), 1250);
        assert_eq!(f.hold_global_centi(), 5000);
        assert_eq!(f.per_second(), 300_000_000);
        assert_eq!(Figures::default().per_second(), 0);
        assert_eq!(Figures::default().hold_all_centi(), 0);
    }

    #[test]
    fn boot_options() {
        assert_eq!(parse_mode(None), Some(MODE_SCALABLE));
        assert_eq!(parse_mode(Some("scalable")), Some(MODE_SCALABLE));
        assert_eq!(parse_mode(Some("classic")), Some(MODE_CLASSIC));
        assert_eq!(parse_mode(Some("fast")), None);
        assert_eq!(parse_mode(Some("")), None);
        assert_eq!(parse_cpu(None, 4), Some(3));
        assert_eq!(parse_cpu(None, 1), Some(0));
        assert_eq!(parse_cpu(Some("1"), 2), Some(1));
        assert_eq!(parse_cpu(Some("2"), 2), None);
        assert_eq!(parse_cpu(Some("-1"), 2), None);
        assert_eq!(parse_cpu(Some("x"), 2), None);
    }
}
