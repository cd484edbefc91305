//! Sockets from UNIX programs (issue 13): `socket`, `bind`, `listen`,
//! `accept`, `connect`, `send`/`recv` (and `read`/`write` on a socket
//! descriptor), `sendto`/`recvfrom`, `shutdown`, `getsockname`,
//! `getpeername`, `setsockopt`/`getsockopt`, non-blocking mode and `poll`.
//!
//! A socket is a descriptor like a file or a pipe: the monitor hands it
//! out (`socket` opens `/dev/net/tcp`, `/dev/net/udp` or `/dev/net/icmp`,
//! the network server's device entry, `protocols::net`), its file type is
//! `S_IFSOCK`, `close`, `dup`, `fork` and `exec` treat it as any other
//! descriptor, and the monitor tells the server when its last descriptor
//! goes (also when the process dies). Every other call here is ONE `call`
//! to the network server with the descriptor's handle; the program's
//! buffer is lent for the call, so a read or write of any size up to
//! `abi::lease::MAX_LEASE_BYTES` is one round trip.
//!
//! `accept` takes two calls: the server answers `OP_ACCEPT` with a
//! one-time token once a connection is established, and the open of
//! `/dev/net/accepted/<token>` through the monitor makes its descriptor
//! (only the monitor hands out descriptors, and it never waits on a
//! server, so it cannot be the one that waits for a connection).
//!
//! `net=classic` (the network server says which mode it runs in when
//! asked, `OP_MAP_LOCKS`): every socket call first takes the stack's
//! global spin lock, in the server's lock page mapped at
//! `protocols::net::locks::WINDOW`, on this CPU, and holds it while the
//! server serves the call; callers on other CPUs spin meanwhile (the
//! seed's Figure 2). A call that must wait sleeps without it: the server
//! lets it go for the caller, and the caller's own release then finds it
//! no longer the owner and does nothing. `net=scalable`: no lock here.
//!
//! `net=scalable`'s receive rings (`protocols::net::ring`): the first
//! `recv`/`read` of a TCP socket asks the server for a ring
//! (`OP_RING_MAP`), makes the server the pager of the ring windows and
//! touches the window's pages, which the server answers with the ring's
//! own memory, shared. From then on a read takes what the ring holds
//! under the socket's mini lock, with no kernel entry; only with the ring
//! empty (or closed, or its lock held) is it the call, which takes what
//! the ring holds first, then what the stack holds. A `fork` child
//! inherits the windows and this table, and reads through the same ring.
//! `recvfrom` (which reports the sender) is always the call.
//!
//! What it is not: the BSD `sockaddr` ABI. Addresses are [`SockAddr`]
//! (IPv4 only); options are `(level, name)` pairs with Linux's numbers.
//! `SIGPIPE` is not raised: a write after the peer went gets `EPIPE`.

use super::{Errno, Fd, errno, fd_entry, from_kernel, manager_call, open};
use crate::msg::{self, Link};
use crate::sys;
use abi::Pid;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use protocols::net::locks::{self, LockPage};
use protocols::net::ring::{self, RingSlot};
use protocols::net::{self as n, endpoint, split_endpoint};
use protocols::unix::FdInfo;
use protocols::unix::{self as ux, open_flags};
use spin::Mutex;

pub const AF_INET: u32 = 2;
pub const SOCK_STREAM: u32 = 1;
pub const SOCK_DGRAM: u32 = 2;
/// `socket`'s type flag for a non-blocking socket (Linux's value).
pub const SOCK_NONBLOCK: u32 = 0o4000;
pub const IPPROTO_ICMP: u32 = 1;
pub const SOL_SOCKET: u32 = n::SOL_SOCKET as u32;
pub const IPPROTO_IP: u32 = 0;
pub const IPPROTO_TCP: u32 = n::IPPROTO_TCP as u32;
pub const SO_REUSEADDR: u32 = 2;
pub const SO_ERROR: u32 = 4;
pub const SO_SNDBUF: u32 = 7;
pub const SO_RCVBUF: u32 = 8;
pub const SO_KEEPALIVE: u32 = 9;
pub const TCP_NODELAY: u32 = 1;
/// Linux's `IP_LOCAL_PORT_RANGE`: the value is `low | high << 16`.
pub const IP_LOCAL_PORT_RANGE: u32 = 51;
pub use protocols::net::{POLLERR, POLLHUP, POLLIN, POLLNVAL, POLLOUT, SHUT_RD, SHUT_RDWR, SHUT_WR};

/// An IPv4 address and port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SockAddr {
    pub addr: [u8; 4],
    pub port: u16,
}

impl SockAddr {
    pub const fn new(addr: [u8; 4], port: u16) -> SockAddr {
        SockAddr { addr, port }
    }

    fn word(self) -> u64 {
        endpoint(self.addr, self.port)
    }

    fn of(word: u64) -> SockAddr {
        let (addr, port) = split_endpoint(word);
        SockAddr { addr, port }
    }

    /// `A.B.C.D` (no port).
    pub fn parse_ip(text: &str) -> Option<[u8; 4]> {
        let mut o = [0u8; 4];
        let mut parts = text.split('.');
        for b in &mut o {
            *b = parts.next()?.parse().ok()?;
        }
        parts.next().is_none().then_some(o)
    }
}

impl core::fmt::Display for SockAddr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let a = self.addr;
        write!(f, "{}.{}.{}.{}:{}", a[0], a[1], a[2], a[3], self.port)
    }
}

/// Whether this process has asked the network server for its mode.
#[derive(Clone, Copy)]
enum Locks {
    Untried,
    /// A server that answered neither mode: plain calls.
    Unlocked,
    /// `scalable`: plain calls, and TCP writes queued while credit lasts.
    Scalable,
    /// `classic`: the lock page is mapped at `locks::WINDOW`.
    Classic,
}

static LOCKS: Mutex<Locks> = Mutex::new(Locks::Untried);

/// The global lock's page when the server runs `net=classic`, mapping it
/// the first time. Kept over `fork` (the page is shared, and so is this
/// state); `exec` starts again.
fn classic_locks(link: Link, info: &FdInfo) -> Option<&'static LockPage> {
    let state = *LOCKS.lock();
    let classic = match state {
        Locks::Classic => true,
        Locks::Unlocked | Locks::Scalable => false,
        Locks::Untried => {
            let mode = msg::call(link, &[n::OP_MAP_LOCKS, info.handle, locks::WINDOW, 0], &[], &mut [])
                .ok()
                .filter(|(w, _)| w[0] == 0)
                .map(|(w, _)| w[1]);
            // Both modes map the page: classic for the lock, scalable for
            // its credit epoch.
            let known = |m: &u64| *m == locks::MODE_CLASSIC || *m == locks::MODE_SCALABLE;
            let mapped = mode.filter(known).is_some_and(|_| {
                sys::set_pager(
                    sys::getpid(),
                    locks::WINDOW,
                    abi::layout::PAGE_SIZE,
                    Pid(info.manager_pid),
                    info.manager_queue,
                )
                .is_ok()
            });
            *LOCKS.lock() = match mode {
                Some(locks::MODE_CLASSIC) if mapped => Locks::Classic,
                Some(locks::MODE_SCALABLE) if mapped => Locks::Scalable,
                _ => Locks::Unlocked,
            };
            mode == Some(locks::MODE_CLASSIC) && mapped
        }
    };
    classic.then(mapped_page)
}

/// The lock page, once `classic_locks` has mapped it (both modes map it).
fn mapped_page() -> &'static LockPage {
    // SAFETY: called only after the network server was made the pager of
    // this one page (`classic_locks`, in either mode); it maps its own
    // lock page there, shared and writable, on first touch; a pager
    // region is never given back, so the page stays for the life of the
    // process. `LockPage` is atomics only, so other processes changing it
    // at the same time is what it is made for.
    unsafe { &*(locks::WINDOW as *const LockPage) }
}

/// `net=scalable`: the bytes each socket (by handle) may still queue with
/// `OP_WRITE_QUEUED` before its next write call, as the server's last
/// answer said, and the lock page's `credit_epoch` then (the credit
/// lapses when it moves). A few sockets at a time; the oldest is
/// forgotten first (it then makes a call, which gives it credit again).
static CREDIT: Mutex<Vec<(u64, u64, u64)>> = Mutex::new(Vec::new());
const CREDIT_SOCKETS: usize = 32;

fn credit_epoch() -> u64 {
    mapped_page().credit_epoch.load(core::sync::atomic::Ordering::SeqCst)
}

/// The credit `handle` has if it was given at `epoch`.
fn credit_of(handle: u64, epoch: u64) -> u64 {
    CREDIT.lock().iter().find(|(h, _, e)| *h == handle && *e == epoch).map_or(0, |&(_, c, _)| c)
}

/// `epoch`: the lock page's `credit_epoch` read before the call whose
/// answer gave `credit`.
fn set_credit(handle: u64, credit: u64, epoch: u64) {
    let mut t = CREDIT.lock();
    match t.iter_mut().find(|(h, _, _)| *h == handle) {
        Some(entry) => *entry = (handle, credit, epoch),
        None if credit == 0 => {}
        None => {
            if t.len() >= CREDIT_SOCKETS {
                t.remove(0);
            }
            t.push((handle, credit, epoch));
        }
    }
}

/// Queue what credit allows of `bytes` on a TCP socket (`scalable`): the
/// bytes queued, 0 when there is no credit or the server's queue is full.
fn queue_write(link: Link, info: &FdInfo, bytes: &[u8]) -> usize {
    if classic_locks(link, info).is_some() || !matches!(*LOCKS.lock(), Locks::Scalable) {
        return 0;
    }
    let mut done = 0;
    // The epoch the credit is good for: read once, before sending, so a
    // drop the server makes meanwhile (moving the epoch on) ends it.
    let epoch = credit_epoch();
    let mut credit = credit_of(info.handle, epoch);
    while done < bytes.len() && credit > 0 {
        let piece = (bytes.len() - done).min(abi::msg::MAX_DATA_BYTES as usize).min(credit as usize);
        let message = [n::OP_WRITE_QUEUED, info.handle, piece as u64, 0];
        if msg::send_data(link, &message, &bytes[done..done + piece]).is_err() {
            break;
        }
        done += piece;
        credit -= piece as u64;
    }
    if done > 0 {
        set_credit(info.handle, credit, epoch);
    }
    done
}

/// `net=scalable`'s receive rings of this process: the socket (handle)
/// each window serves (0: none), the windows mapped, and the sockets the
/// server gave no ring (they read by calls). Kept over `fork` (the
/// windows are shared mappings, and a child reads the same rings).
struct Rings {
    pager_set: bool,
    mapped: u64,
    handles: [u64; ring::WINDOWS as usize],
    refused: Vec<u64>,
}

static RINGS: Mutex<Rings> = Mutex::new(Rings {
    pager_set: false,
    mapped: 0,
    handles: [0; ring::WINDOWS as usize],
    refused: Vec::new(),
});
/// Sockets remembered as refused; the oldest is asked again.
const REFUSED_SOCKETS: usize = 32;
/// Reads this process took from rings, and reads it made by calls.
static RING_READS: AtomicU64 = AtomicU64::new(0);
static CALL_READS: AtomicU64 = AtomicU64::new(0);

/// Ring window `index`, once mapped.
fn ring_at(index: u64) -> &'static RingSlot {
    // SAFETY: called only for a window this process mapped (`ring_for`
    // touched every page of it after the server gave it the window and was
    // made the pager of the region); the server maps its ring there,
    // shared, and a pager region is never given back, so the pages stay
    // for the life of the process (a `fork` child inherits them). The
    // ring is atomics only, written by other processes at the same time
    // by design; the data pages are read-only here and only read.
    unsafe { &*(ring::window(index) as *const RingSlot) }
}

/// The receive ring of a TCP socket, asking for one the first time.
fn ring_for(link: Link, info: &FdInfo) -> Option<&'static RingSlot> {
    if classic_locks(link, info).is_some() || !matches!(*LOCKS.lock(), Locks::Scalable) {
        return None;
    }
    let mapped = {
        let r = RINGS.lock();
        if let Some(i) = r.handles.iter().position(|&h| h == info.handle) {
            return Some(ring_at(i as u64));
        }
        if r.refused.contains(&info.handle) {
            return None;
        }
        r.mapped
    };
    // Not under the table's lock: the call waits at the server.
    let asked = msg::call(link, &[n::OP_RING_MAP, info.handle, mapped, 0], &[], &mut []);
    let mut r = RINGS.lock();
    let refuse = |r: &mut Rings| {
        if r.refused.len() >= REFUSED_SOCKETS {
            r.refused.remove(0);
        }
        r.refused.push(info.handle);
    };
    let index = match asked {
        Ok((w, _)) if w[0] == 0 && w[1] < ring::WINDOWS => w[1],
        // Still connecting: asked again at the next read.
        Ok((w, _)) if ux::result(w[0]) == Err(errno::EAGAIN) => return None,
        _ => {
            refuse(&mut r);
            return None;
        }
    };
    if !r.pager_set {
        let set = sys::set_pager(
            sys::getpid(),
            ring::BASE,
            ring::REGION_BYTES,
            Pid(info.manager_pid),
            info.manager_queue,
        );
        if set.is_err() {
            refuse(&mut r);
            return None;
        }
        r.pager_set = true;
    }
    if r.mapped & (1 << index) == 0 {
        for page in 0..ring::SLOT_PAGES {
            let at = ring::window(index) + page * abi::layout::PAGE_SIZE;
            // SAFETY: `at` is a page of the ring region whose pager is
            // the network server, which answers the fault with a page of
            // the ring it gave us (or ends us, if it gave none). Read
            // only, to make the mapping.
            unsafe { core::ptr::read_volatile(at as *const u64) };
        }
        r.mapped |= 1 << index;
    }
    r.handles[index as usize] = info.handle;
    Some(ring_at(index))
}

/// The mini lock's owner word for this process, and the TSC ticks after
/// which a hold is stale: read once, so that a read from the ring makes
/// no kernel call at all. A `fork` child keeps its parent's word: the
/// lock still admits one holder at a time (its compare-and-swap from 0),
/// and only a holder releases it.
static RING_WHO: AtomicU64 = AtomicU64::new(0);
static RING_STALE_TSC: AtomicU64 = AtomicU64::new(0);

/// Take bytes of `handle` from its ring: what [`ring::take`] found.
fn take_ring(slot: &RingSlot, handle: u64, buf: &mut [u8]) -> ring::Take {
    let mut me = RING_WHO.load(Ordering::Relaxed);
    if me == 0 {
        me = sys::getpid().0;
        RING_WHO.store(me, Ordering::Relaxed);
        let hz = sys::info(abi::InfoKey::TscHz);
        RING_STALE_TSC.store(hz.saturating_mul(locks::STALE_HOLD_NS / 1_000_000) / 1000, Ordering::Relaxed);
    }
    let stale_tsc = RING_STALE_TSC.load(Ordering::Relaxed);
    let lock = &slot.header.h.lock;
    ring::take(
        slot,
        handle,
        me,
        sys::rdtsc,
        |attempts| {
            if attempts % 64 == 0 {
                // A holder that died holding it (killed mid-copy) lets go.
                let holder = lock.owner();
                if holder != 0 && sys::rdtsc().saturating_sub(lock.held_since_tsc()) > stale_tsc {
                    lock.break_from(holder, sys::rdtsc());
                }
                // A holder pre-empted on this CPU gets to run.
                sys::yield_now();
            } else {
                core::hint::spin_loop();
            }
            attempts < 64 * 64
        },
        buf,
    )
}

/// Reads this process took from receive rings without a call, and reads
/// it made by calls (`recv`/`read` on sockets), since it started.
pub fn read_counts() -> (u64, u64) {
    (RING_READS.load(Ordering::Relaxed), CALL_READS.load(Ordering::Relaxed))
}

/// The header of `fd`'s receive ring, if it has one mapped here: what it
/// holds (`head - tail`) for tools and tests. The header is writable by
/// this process; writing it can only break this socket (the server then
/// answers its reads with `EIO`).
pub fn ring_header(fd: Fd) -> Option<&'static ring::RingHeader> {
    let (_, info) = fd_entry(fd).ok()?;
    let r = RINGS.lock();
    let i = r.handles.iter().position(|&h| h == info.handle)?;
    Some(&ring_at(i as u64).header.h)
}

/// A call to the network server: under the global lock in `classic`.
fn io_call(
    link: Link,
    info: &FdInfo,
    request: [u64; 4],
    data: &[u8],
    reply: &mut [u8],
) -> Result<([u64; 4], usize), abi::Error> {
    let Some(page) = classic_locks(link, info) else { return msg::call(link, &request, data, reply) };
    let me = sys::getpid().0;
    page.global.acquire(me, sys::rdtsc, |attempts| {
        // A holder pre-empted on this CPU gets it now and then.
        if attempts % 64 == 0 {
            sys::yield_now();
        } else {
            core::hint::spin_loop();
        }
        true
    });
    let r = msg::call(link, &request, data, reply);
    // Nothing if the server let it go while the call waited.
    page.global.release(me, sys::rdtsc());
    r
}

/// A word-only request on a socket: the reply's words.
fn sock_call(fd: Fd, op: u64, w2: u64, w3: u64) -> Result<[u64; 4], Errno> {
    let (link, info) = fd_entry(fd)?;
    if !ux::mode::is_sock(info.file_type) {
        return Err(errno::ENOTSOCK);
    }
    let (w, _) = io_call(link, &info, [op, info.handle, w2, w3], &[], &mut []).map_err(from_kernel)?;
    ux::result(w[0])?;
    Ok(w)
}

/// `socket(AF_INET, type, protocol)`: `SOCK_STREAM` (TCP), `SOCK_DGRAM`
/// (UDP, or with `IPPROTO_ICMP` an echo "ping" socket), optionally
/// `| SOCK_NONBLOCK`.
pub fn socket(domain: u32, ty: u32, protocol: u32) -> Result<Fd, Errno> {
    if domain != AF_INET {
        return Err(errno::EAFNOSUPPORT);
    }
    let kind = match (ty & !SOCK_NONBLOCK, protocol) {
        (SOCK_STREAM, 0 | 6) => n::KIND_TCP,
        (SOCK_DGRAM, 0 | 17) => n::KIND_UDP,
        (SOCK_DGRAM, IPPROTO_ICMP) => n::KIND_ICMP,
        (SOCK_STREAM | SOCK_DGRAM, _) => return Err(errno::EPROTONOSUPPORT),
        _ => return Err(errno::EINVAL),
    };
    let path = alloc::format!("{}/{kind}", n::DEVICE_PATH);
    let fd = open(&path, open_flags::O_RDWR, 0)
        .map_err(|e| if e == errno::ENOENT { errno::EAFNOSUPPORT } else { e })?;
    if ty & SOCK_NONBLOCK != 0
        && let Err(e) = set_nonblocking(fd, true)
    {
        let _ = super::close(fd);
        return Err(e);
    }
    Ok(fd)
}

pub fn bind(fd: Fd, addr: SockAddr) -> Result<(), Errno> {
    sock_call(fd, n::OP_BIND, addr.word(), 0).map(|_| ())
}

pub fn listen(fd: Fd, backlog: u32) -> Result<(), Errno> {
    sock_call(fd, n::OP_LISTEN, backlog as u64, 0).map(|_| ())
}

/// `accept`: the new connection's descriptor and the peer's address.
pub fn accept(fd: Fd) -> Result<(Fd, SockAddr), Errno> {
    let w = sock_call(fd, n::OP_ACCEPT, 0, 0)?;
    let path = alloc::format!("{}/{}{}", n::DEVICE_PATH, n::KIND_ACCEPTED, w[0]);
    let new = open(&path, open_flags::O_RDWR, 0)?;
    Ok((new, SockAddr::of(w[1])))
}

/// `connect`: waits until the connection is established, unless the
/// socket is non-blocking (`EINPROGRESS`; `poll` for `POLLOUT`, then
/// `SO_ERROR`).
pub fn connect(fd: Fd, addr: SockAddr) -> Result<(), Errno> {
    sock_call(fd, n::OP_CONNECT, addr.word(), 0).map(|_| ())
}

/// `recv` on a socket (`read` on a socket descriptor comes here too):
/// what the socket holds, up to `buf.len()`, in one call; 0 at the end of
/// the stream.
pub fn recv(fd: Fd, buf: &mut [u8]) -> Result<usize, Errno> {
    let (link, info) = fd_entry(fd)?;
    if !ux::mode::is_sock(info.file_type) {
        return Err(errno::ENOTSOCK);
    }
    if !buf.is_empty()
        && let Some(slot) = ring_for(link, &info)
        && let ring::Take::Got { bytes, wake } = take_ring(slot, info.handle, buf)
    {
        RING_READS.fetch_add(1, Ordering::Relaxed);
        if wake {
            // The ring was full with more in the stack: one one-way
            // message, so the server refills it and the window reopens.
            let _ = msg::send(link, &[n::OP_RING_DRAINED, info.handle, 0, 0]);
        }
        return Ok(bytes);
    }
    CALL_READS.fetch_add(1, Ordering::Relaxed);
    recvfrom(fd, buf).map(|(n, _)| n)
}

/// `recvfrom`: the bytes and who sent them (for TCP, the peer).
pub fn recvfrom(fd: Fd, buf: &mut [u8]) -> Result<(usize, SockAddr), Errno> {
    let (link, info) = fd_entry(fd)?;
    if !ux::mode::is_sock(info.file_type) {
        return Err(errno::ENOTSOCK);
    }
    let len = buf.len().min(abi::lease::MAX_LEASE_BYTES as usize);
    let request = [n::OP_RECVFROM, info.handle, len as u64, 0];
    let (w, _) = io_call(link, &info, request, &[], &mut buf[..len]).map_err(from_kernel)?;
    ux::result(w[0]).map(|got| ((got as usize).min(len), SockAddr::of(w[1])))
}

/// `send` on a socket (`write` on a socket descriptor comes here too):
/// for TCP all of `buf` (waiting for room) unless the socket is
/// non-blocking, one call per `MAX_LEASE_BYTES`.
pub fn send(fd: Fd, buf: &[u8]) -> Result<usize, Errno> {
    send_to(fd, buf, None)
}

/// `sendto`: one datagram to `to`.
pub fn sendto(fd: Fd, buf: &[u8], to: SockAddr) -> Result<usize, Errno> {
    send_to(fd, buf, Some(to))
}

fn send_to(fd: Fd, buf: &[u8], to: Option<SockAddr>) -> Result<usize, Errno> {
    let (link, info) = fd_entry(fd)?;
    if !ux::mode::is_sock(info.file_type) {
        return Err(errno::ENOTSOCK);
    }
    let op = if to.is_some() { n::OP_SENDTO } else { ux::io::OP_WRITE };
    let target = to.map_or(0, SockAddr::word);
    let mut done = 0;
    loop {
        // `scalable`: a write that fits one message completes once queued,
        // while credit lasts. A longer one is one call with the buffer
        // lent: queued, it would be a message per page, each a kernel
        // entry on both sides and two copies of every byte (into the
        // server's queue, then into the send ring) on the stack's one
        // CPU, the bottleneck of a stream, where the call costs one lease
        // copy straight into the ring (docs/network.md, benchmark N).
        if to.is_none() && buf.len() - done <= abi::msg::MAX_DATA_BYTES as usize {
            done += queue_write(link, &info, &buf[done..]);
            if done >= buf.len() {
                break;
            }
        }
        let chunk = &buf[done..buf.len().min(done + abi::lease::MAX_LEASE_BYTES as usize)];
        let request = [op, info.handle, chunk.len() as u64, target];
        let scalable = to.is_none() && matches!(*LOCKS.lock(), Locks::Scalable);
        let epoch = if scalable { credit_epoch() } else { 0 };
        let sent = io_call(link, &info, request, chunk, &mut []).map_err(from_kernel).and_then(|(w, _)| {
            if scalable {
                set_credit(info.handle, w[1], epoch);
            }
            ux::result(w[0])
        });
        match sent {
            Ok(k) => {
                let k = (k as usize).min(chunk.len());
                done += k;
                // A datagram is one call; a short write (non-blocking)
                // ends it.
                if k < chunk.len() || to.is_some() || done >= buf.len() {
                    break;
                }
            }
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(done)
}

pub fn shutdown(fd: Fd, how: u64) -> Result<(), Errno> {
    sock_call(fd, n::OP_SHUTDOWN, how, 0).map(|_| ())
}

pub fn getsockname(fd: Fd) -> Result<SockAddr, Errno> {
    sock_call(fd, n::OP_NAME, 0, 0).map(|w| SockAddr::of(w[1]))
}

pub fn getpeername(fd: Fd) -> Result<SockAddr, Errno> {
    sock_call(fd, n::OP_NAME, 1, 0).map(|w| SockAddr::of(w[1]))
}

/// `setsockopt(fd, level, name, value)` with an integer value.
pub fn setsockopt(fd: Fd, level: u32, name: u32, value: u64) -> Result<(), Errno> {
    sock_call(fd, n::OP_SETOPT, (level as u64) << 16 | name as u64, value).map(|_| ())
}

pub fn getsockopt(fd: Fd, level: u32, name: u32) -> Result<u64, Errno> {
    sock_call(fd, n::OP_GETOPT, (level as u64) << 16 | name as u64, 0).map(|w| w[1])
}

/// `fcntl(fd, F_SETFL, O_NONBLOCK)` on a socket: a property of the open
/// socket, shared by every descriptor on it.
pub fn set_nonblocking(fd: Fd, on: bool) -> Result<(), Errno> {
    sock_call(fd, n::OP_SETOPT, n::OPT_NONBLOCK, on as u64).map(|_| ())
}

/// One entry of [`poll`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollFd {
    pub fd: Fd,
    pub events: u16,
    pub revents: u16,
}

/// `poll(fds, timeout_ms)` (`None`: wait without end): how many entries
/// have events. Sockets are asked of the network server in one call,
/// which waits until one is ready; a descriptor that is not a socket is
/// reported ready at once for what it asks (right for regular files; a
/// pipe or a terminal is not waited on: issue 13 leaves that), and a bad
/// one is `POLLNVAL`.
pub fn poll(fds: &mut [PollFd], timeout_ms: Option<u64>) -> Result<usize, Errno> {
    let mut sockets: Vec<usize> = Vec::new();
    let mut link = None;
    let mut data = Vec::new();
    let mut ready = 0;
    for (i, p) in fds.iter_mut().enumerate() {
        p.revents = 0;
        match fd_entry(p.fd) {
            Ok((l, info)) if ux::mode::is_sock(info.file_type) => {
                if link.is_some_and(|x: msg::Link| x != l) {
                    return Err(errno::EINVAL);
                }
                link = Some(l);
                sockets.push(i);
                data.extend_from_slice(&n::poll_entry(info.handle, p.events));
            }
            Ok(_) => p.revents = p.events & (POLLIN | POLLOUT),
            Err(_) => p.revents = POLLNVAL,
        }
        if p.revents != 0 {
            ready += 1;
        }
    }
    let Some(link) = link else { return Ok(ready) };
    if sockets.len() > n::MAX_POLL_ENTRIES {
        return Err(errno::EINVAL);
    }
    // Something is ready already: only look, do not wait.
    let timeout = if ready > 0 { 0 } else { timeout_ms.unwrap_or(u64::MAX) };
    let mut out = alloc::vec![0u8; sockets.len() * 2];
    let (w, _) = msg::call(link, &[n::OP_POLL, 0, timeout, 0], &data, &mut out).map_err(from_kernel)?;
    ux::result(w[0])?;
    for (k, &i) in sockets.iter().enumerate() {
        let r = u16::from_le_bytes([out[2 * k], out[2 * k + 1]]);
        fds[i].revents = r;
        if r != 0 {
            ready += 1;
        }
    }
    Ok(ready)
}

/// The network server's statistics: (sockets open, bytes of socket
/// buffers, frames received, frames sent) and its socket table as text.
pub fn net_stats() -> Result<([u64; 4], alloc::string::String), Errno> {
    net_query(n::OP_STATS)
}

/// The interfaces, as `ifconfig` prints them.
pub fn ifconfig() -> Result<alloc::string::String, Errno> {
    net_query(n::OP_IFCONFIG).map(|(_, t)| t)
}

/// The network server's lock statistics (`netstat -l`): the reply words
/// (global lock acquisitions, spin ns, hold ns, interval ns) and the
/// report. `reset` zeroes them first.
pub fn lock_stats(reset: bool) -> Result<([u64; 4], alloc::string::String), Errno> {
    net_query_with(n::OP_LOCKSTAT, reset as u64)
}

fn net_query(op: u64) -> Result<([u64; 4], alloc::string::String), Errno> {
    net_query_with(op, 0)
}

fn net_query_with(op: u64, word2: u64) -> Result<([u64; 4], alloc::string::String), Errno> {
    // Any socket reaches the server; a fresh one is made and closed.
    let fd = socket(AF_INET, SOCK_DGRAM, 0)?;
    let mut buf = alloc::vec![0u8; abi::msg::MAX_DATA_BYTES as usize];
    let r = manager_call(fd, [op, 0, word2, 0], &[], &mut buf);
    let _ = super::close(fd);
    let (w, len) = r?;
    buf.truncate(len);
    Ok((w, alloc::string::String::from_utf8_lossy(&buf).into_owned()))
}
