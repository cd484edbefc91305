//! Sockets and CPU affinity for Linux programs (issue 14 part B,
//! docs/linux-abi.md "Sockets").
//!
//! What it is: the Linux socket calls (`socket`, `bind`, `listen`,
//! `accept`/`accept4`, `connect`, `sendto`/`recvfrom`,
//! `sendmsg`/`recvmsg`, `shutdown`, `getsockname`/`getpeername`,
//! `setsockopt`/`getsockopt`, `socketpair` refused), each carried out
//! with the runtime's UNIX sockets (`runtime::unix::socket`, one call to
//! the network server per call, issue 13) after the program's
//! `struct sockaddr_in`, `msghdr` and option words are read from its
//! memory; and `sched_getaffinity`/`sched_setaffinity`, which musl's
//! `sysconf(_SC_NPROCESSORS_ONLN)` and the benchmark program use.
//!
//! What it is not: AF_UNIX or IPv6 (`EAFNOSUPPORT`), ancillary data
//! (`msg_control` is ignored and reported empty), `MSG_PEEK`/`MSG_OOB`
//! (`EOPNOTSUPP`), or CPU pinning: Ridgeback places processes itself, so
//! `sched_setaffinity` checks the mask names an online CPU and changes
//! nothing (docs/linux-abi.md says so).
//!
//! Invariants: every pointer and length from the program is checked by
//! the copy that uses it (`mem`, EFAULT) or here (EINVAL), so bad input is
//! an errno, never a crash of the server; the errno values are Linux's
//! (protocols::unix).

use crate::mem;
use abi::Pid;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::{Errno, errno};
use runtime::unix::socket::{self as sk, SockAddr};
use runtime::{sys, unix};

type Result<T> = core::result::Result<T, Errno>;

/// Linux x86-64 call numbers of this module.
pub mod nr {
    pub const SOCKET: u64 = 41;
    pub const CONNECT: u64 = 42;
    pub const ACCEPT: u64 = 43;
    pub const SENDTO: u64 = 44;
    pub const RECVFROM: u64 = 45;
    pub const SENDMSG: u64 = 46;
    pub const RECVMSG: u64 = 47;
    pub const SHUTDOWN: u64 = 48;
    pub const BIND: u64 = 49;
    pub const LISTEN: u64 = 50;
    pub const GETSOCKNAME: u64 = 51;
    pub const GETPEERNAME: u64 = 52;
    pub const SOCKETPAIR: u64 = 53;
    pub const SETSOCKOPT: u64 = 54;
    pub const GETSOCKOPT: u64 = 55;
    pub const SCHED_SETAFFINITY: u64 = 203;
    pub const SCHED_GETAFFINITY: u64 = 204;
    pub const ACCEPT4: u64 = 288;
}

/// Whether [`call`] carries out call `number`.
pub fn handles(number: u64) -> bool {
    matches!(
        number,
        nr::SOCKET..=nr::GETSOCKOPT | nr::ACCEPT4 | nr::SCHED_SETAFFINITY | nr::SCHED_GETAFFINITY
    )
}

/// `struct sockaddr_in`: family (2 bytes), port (big-endian), address,
/// 8 bytes of zeros.
const SOCKADDR_IN_BYTES: usize = 16;
const AF_INET: u16 = 2;
/// `socket`'s type flags (Linux's values).
const SOCK_NONBLOCK: u64 = 0o4000;
const SOCK_CLOEXEC: u64 = 0o2_000_000;
/// The socket types this server knows (the low bits of `type`).
const SOCK_TYPE_MASK: u64 = 0xf;
/// `send`/`recv` flags taken: `MSG_DONTWAIT` (this call only, as if
/// non-blocking) and `MSG_NOSIGNAL` (no `SIGPIPE`: the runtime never
/// raises it for a socket the server writes, so it changes nothing).
const MSG_DONTWAIT: u64 = 0x40;
const MSG_NOSIGNAL: u64 = 0x4000;
/// `struct msghdr` (x86-64): name, namelen (+4 padding), iov, iovlen,
/// control, controllen, flags (+4 padding).
const MSGHDR_BYTES: usize = 56;
/// Most iovec entries one `sendmsg`/`recvmsg` takes (UIO_MAXIOV).
const IOV_MAX: u64 = 1024;
/// Bytes of the affinity mask Linux writes on x86-64 with up to 64
/// CPUs: one `unsigned long` (`cpumask_size()` rounded to a long).
const AFFINITY_MASK_BYTES: u64 = 8;
/// Longest mask `sched_setaffinity` reads (Linux reads `len` bytes but
/// only the first `nr_cpu_ids` bits matter).
const MAX_AFFINITY_READ_BYTES: u64 = 128;
/// Linux's "socket type not supported" (asm-generic/errno.h), which
/// Ridgeback's own calls never answer.
const ESOCKTNOSUPPORT: Errno = Errno(94);
/// The network server's `O_NONBLOCK` pseudo-option
/// (`protocols::net::OPT_NONBLOCK`) as the runtime's (level, name).
const NONBLOCK_OPTION: (u32, u32) = (0xffff, 1);

/// Carries out call `number` with arguments `a` (rdi, rsi, rdx, then
/// r10, r8, r9 read with one `foreign_regs` only by the calls that take
/// more than three).
pub fn call(pid: Pid, number: u64, a0: u64, a1: u64, a2: u64) -> Result<u64> {
    let more = || -> Result<[u64; 3]> {
        let r = sys::foreign_regs(pid).map_err(|_| errno::EIO)?;
        Ok([r.r10, r.r8, r.r9])
    };
    match number {
        nr::SOCKET => socket(a0, a1, a2),
        nr::SOCKETPAIR => Err(errno::EOPNOTSUPP),
        nr::BIND => sk::bind(fd(a0)?, read_sockaddr(pid, a1, a2)?).map(|()| 0),
        nr::CONNECT => sk::connect(fd(a0)?, read_sockaddr(pid, a1, a2)?).map(|()| 0),
        nr::LISTEN => sk::listen(fd(a0)?, (a1 as i32).clamp(0, i32::MAX) as u32).map(|()| 0),
        nr::ACCEPT => accept(pid, a0, a1, a2, 0),
        nr::ACCEPT4 => {
            let [flags, ..] = more()?;
            accept(pid, a0, a1, a2, flags)
        }
        nr::SHUTDOWN => {
            if a1 > 2 {
                return Err(errno::EINVAL);
            }
            sk::shutdown(fd(a0)?, a1).map(|()| 0)
        }
        nr::GETSOCKNAME => {
            let name = sk::getsockname(fd(a0)?)?;
            put_sockaddr(pid, a1, a2, name).map(|()| 0)
        }
        nr::GETPEERNAME => {
            let name = sk::getpeername(fd(a0)?)?;
            put_sockaddr(pid, a1, a2, name).map(|()| 0)
        }
        nr::SETSOCKOPT => {
            let [value, len, _] = more()?;
            setsockopt(pid, a0, a1, a2, value, len)
        }
        nr::GETSOCKOPT => {
            let [value, len, _] = more()?;
            getsockopt(pid, a0, a1, a2, value, len)
        }
        nr::SENDTO => {
            let [flags, to, to_len] = more()?;
            let f = fd(a0)?;
            let bytes = read_buffer(pid, a1, a2)?;
            let to = if to == 0 { None } else { Some(read_sockaddr(pid, to, to_len)?) };
            with_flags(f, flags, || send(f, &bytes, to))
        }
        nr::RECVFROM => {
            let [flags, from, from_len] = more()?;
            let f = fd(a0)?;
            let len = (a2 as usize).min(mem::MAX_TRANSFER_BYTES);
            check_range(a1, len as u64)?;
            let mut buf = vec![0u8; len];
            let (n, peer) = with_flags(f, flags, || sk::recvfrom(f, &mut buf))?;
            mem::write(pid, a1, &buf[..n])?;
            if from != 0 {
                put_sockaddr(pid, from, from_len, peer)?;
            }
            Ok(n as u64)
        }
        nr::SENDMSG => sendmsg(pid, a0, a1, a2),
        nr::RECVMSG => recvmsg(pid, a0, a1, a2),
        nr::SCHED_GETAFFINITY => getaffinity(pid, a0, a1, a2),
        nr::SCHED_SETAFFINITY => setaffinity(pid, a0, a1, a2),
        _ => Err(errno::ENOSYS),
    }
}

/// Whether `raw` is a socket descriptor of this process (for `fcntl`'s
/// `O_NONBLOCK`, which on a socket is the network server's to keep).
pub fn is_socket(raw: u64) -> bool {
    let Ok(f) = fd(raw) else { return false };
    unix::fstat(f).is_ok_and(|st| st.mode & protocols::unix::mode::S_IFMT == protocols::unix::mode::S_IFSOCK)
}

/// `fcntl(F_SETFL)` on a socket: `O_NONBLOCK` (Linux's 0o4000) is the
/// network server's to keep; the other status flags change nothing.
pub fn set_status_flags(raw: u64, flags: u64) -> Result<u64> {
    sk::set_nonblocking(fd(raw)?, flags & SOCK_NONBLOCK != 0).map(|()| 0)
}

/// `fcntl(F_GETFL)` on a socket: `O_RDWR`, and `O_NONBLOCK` if set.
pub fn status_flags(raw: u64) -> Result<u64> {
    let on = sk::getsockopt(fd(raw)?, NONBLOCK_OPTION.0, NONBLOCK_OPTION.1)?;
    Ok(2 | if on != 0 { SOCK_NONBLOCK } else { 0 })
}

fn socket(domain: u64, ty: u64, protocol: u64) -> Result<u64> {
    if domain != AF_INET as u64 {
        return Err(errno::EAFNOSUPPORT);
    }
    // O_CLOEXEC has nothing to do: descriptors stay open over execve
    // (docs/linux-abi.md); any other unknown bit is EINVAL, as Linux.
    if ty & !(SOCK_TYPE_MASK | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(errno::EINVAL);
    }
    let kind = (ty & SOCK_TYPE_MASK) as u32;
    if kind != sk::SOCK_STREAM && kind != sk::SOCK_DGRAM {
        // SOCK_RAW, SOCK_SEQPACKET...: Linux says ESOCKTNOSUPPORT for
        // the kinds it knows on AF_INET without a protocol for them.
        return Err(ESOCKTNOSUPPORT);
    }
    let nonblock = if ty & SOCK_NONBLOCK != 0 { sk::SOCK_NONBLOCK } else { 0 };
    sk::socket(sk::AF_INET, kind | nonblock, protocol as u32).map(|f| f as u64)
}

fn accept(pid: Pid, listener: u64, addr: u64, len_at: u64, flags: u64) -> Result<u64> {
    if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(errno::EINVAL);
    }
    // Linux reads the length before it waits: a bad pointer fails at once.
    if addr != 0 {
        read_len(pid, len_at)?;
    }
    let (new, peer) = sk::accept(fd(listener)?)?;
    if flags & SOCK_NONBLOCK != 0
        && let Err(e) = sk::set_nonblocking(new, true)
    {
        let _ = unix::close(new);
        return Err(e);
    }
    if addr != 0
        && let Err(e) = put_sockaddr(pid, addr, len_at, peer)
    {
        let _ = unix::close(new);
        return Err(e);
    }
    Ok(new as u64)
}

/// Runs `f` on socket `sock`, non-blocking for this call if `flags` has
/// `MSG_DONTWAIT` (the socket's own mode is put back after).
fn with_flags<T>(sock: i32, flags: u64, f: impl FnOnce() -> Result<T>) -> Result<T> {
    if flags & !(MSG_DONTWAIT | MSG_NOSIGNAL) != 0 {
        return Err(errno::EOPNOTSUPP);
    }
    if flags & MSG_DONTWAIT == 0 {
        return f();
    }
    let was = sk::getsockopt(sock, NONBLOCK_OPTION.0, NONBLOCK_OPTION.1)?;
    if was == 0 {
        sk::set_nonblocking(sock, true)?;
    }
    let r = f();
    if was == 0 {
        let _ = sk::set_nonblocking(sock, false);
    }
    r
}

fn send(sock: i32, bytes: &[u8], to: Option<SockAddr>) -> Result<u64> {
    match to {
        Some(to) => sk::sendto(sock, bytes, to),
        None => sk::send(sock, bytes),
    }
    .map(|n| n as u64)
}

/// The iovec array of a `msghdr`: (base, len) pairs.
fn read_iovecs(pid: Pid, iov: u64, count: u64) -> Result<Vec<(u64, u64)>> {
    if count > IOV_MAX {
        return Err(errno::EMSGSIZE);
    }
    let raw = mem::read(pid, iov, (count * 16) as usize)?;
    Ok(raw.chunks_exact(16).map(|e| (word(&e[..8]), word(&e[8..]))).collect())
}

fn sendmsg(pid: Pid, sock: u64, header: u64, flags: u64) -> Result<u64> {
    let f = fd(sock)?;
    let h = mem::read(pid, header, MSGHDR_BYTES)?;
    let (name, name_len) = (word(&h[0..8]), word(&h[8..12]));
    let (iov, iov_len) = (word(&h[16..24]), word(&h[24..32]));
    let mut bytes = Vec::new();
    for (base, len) in read_iovecs(pid, iov, iov_len)? {
        if bytes.len() as u64 + len > mem::MAX_TRANSFER_BYTES as u64 {
            return Err(errno::EMSGSIZE);
        }
        bytes.extend_from_slice(&read_buffer(pid, base, len)?);
    }
    let to = if name == 0 { None } else { Some(read_sockaddr(pid, name, name_len)?) };
    with_flags(f, flags, || send(f, &bytes, to))
}

fn recvmsg(pid: Pid, sock: u64, header: u64, flags: u64) -> Result<u64> {
    let f = fd(sock)?;
    let h = mem::read(pid, header, MSGHDR_BYTES)?;
    let name = word(&h[0..8]);
    let (iov, iov_len) = (word(&h[16..24]), word(&h[24..32]));
    let iovecs = read_iovecs(pid, iov, iov_len)?;
    let mut total = 0u64;
    for &(base, len) in &iovecs {
        check_range(base, len)?;
        total = total.saturating_add(len);
    }
    let mut buf = vec![0u8; total.min(mem::MAX_TRANSFER_BYTES as u64) as usize];
    let (n, peer) = with_flags(f, flags, || sk::recvfrom(f, &mut buf))?;
    let mut at = 0usize;
    for (base, len) in iovecs {
        if at >= n {
            break;
        }
        let k = (len as usize).min(n - at);
        mem::write(pid, base, &buf[at..at + k])?;
        at += k;
    }
    if name != 0 {
        put_sockaddr(pid, name, header + 8, peer)?;
    }
    // No ancillary data, no flags (MSG_TRUNC...): controllen and flags 0.
    mem::write(pid, header + 40, &0u64.to_le_bytes())?;
    mem::write(pid, header + 48, &0u32.to_le_bytes())?;
    Ok(n as u64)
}

/// The options Ridgeback's network server keeps (`protocols::net`
/// `OPT_*`); any other is `ENOPROTOOPT`, as Linux says of one it lacks.
fn known_option(level: u64, name: u64) -> Result<(u32, u32)> {
    let known = matches!(
        (level as u32, name as u32),
        (sk::SOL_SOCKET, sk::SO_REUSEADDR | sk::SO_ERROR | sk::SO_SNDBUF | sk::SO_RCVBUF | sk::SO_KEEPALIVE)
            | (sk::IPPROTO_TCP, sk::TCP_NODELAY)
    );
    if known { Ok((level as u32, name as u32)) } else { Err(errno::ENOPROTOOPT) }
}

fn setsockopt(pid: Pid, sock: u64, level: u64, name: u64, value: u64, len: u64) -> Result<u64> {
    let f = fd(sock)?;
    let (level, name) = known_option(level, name)?;
    if (len as u32) < 4 {
        return Err(errno::EINVAL);
    }
    let v = u32::from_le_bytes(mem::read(pid, value, 4)?.try_into().map_err(|_| errno::EFAULT)?);
    if name == sk::SO_ERROR && level == sk::SOL_SOCKET {
        // Read-only on Linux.
        return Err(errno::ENOPROTOOPT);
    }
    sk::setsockopt(f, level, name, v as u64).map(|()| 0)
}

fn getsockopt(pid: Pid, sock: u64, level: u64, name: u64, value: u64, len_at: u64) -> Result<u64> {
    let f = fd(sock)?;
    let (level, name) = known_option(level, name)?;
    let len = read_len(pid, len_at)?;
    let v = sk::getsockopt(f, level, name)? as u32;
    let n = (len as usize).min(4);
    mem::write(pid, value, &v.to_le_bytes()[..n])?;
    mem::write(pid, len_at, &(n as u32).to_le_bytes())?;
    Ok(0)
}

fn getaffinity(pid: Pid, who: u64, len: u64, mask: u64) -> Result<u64> {
    check_self(who)?;
    // Linux: the buffer must hold the kernel's mask, in whole longs.
    if len < AFFINITY_MASK_BYTES || !len.is_multiple_of(8) {
        return Err(errno::EINVAL);
    }
    let cpus = sys::info(abi::InfoKey::CpusOnline).clamp(1, 64);
    let bits = if cpus >= 64 { u64::MAX } else { (1u64 << cpus) - 1 };
    mem::write(pid, mask, &bits.to_le_bytes())?;
    Ok(AFFINITY_MASK_BYTES)
}

/// Accepted when the mask names an online CPU, but not honoured:
/// Ridgeback's scheduler places processes itself (docs/linux-abi.md).
fn setaffinity(pid: Pid, who: u64, len: u64, mask: u64) -> Result<u64> {
    check_self(who)?;
    let bytes = mem::read(pid, mask, len.min(MAX_AFFINITY_READ_BYTES) as usize)?;
    let cpus = sys::info(abi::InfoKey::CpusOnline).clamp(1, 64) as usize;
    let names_online = (0..cpus).any(|c| bytes.get(c / 8).is_some_and(|b| b & (1 << (c % 8)) != 0));
    if names_online { Ok(0) } else { Err(errno::EINVAL) }
}

/// Affinity calls name this process (0, or its pid): one thread each.
fn check_self(who: u64) -> Result<()> {
    let who = who as i32 as i64;
    if who == 0 || who == unix::getpid() as i64 {
        Ok(())
    } else if who < 0 {
        Err(errno::EINVAL)
    } else {
        Err(errno::ESRCH)
    }
}

/// A `struct sockaddr_in` of `len` bytes at `addr`.
fn read_sockaddr(pid: Pid, addr: u64, len: u64) -> Result<SockAddr> {
    let len = len as u32 as usize;
    if len < 2 {
        return Err(errno::EINVAL);
    }
    let b = mem::read(pid, addr, len.min(SOCKADDR_IN_BYTES))?;
    if u16::from_le_bytes([b[0], b[1]]) != AF_INET {
        return Err(errno::EAFNOSUPPORT);
    }
    if len < SOCKADDR_IN_BYTES {
        return Err(errno::EINVAL);
    }
    Ok(SockAddr::new([b[4], b[5], b[6], b[7]], u16::from_be_bytes([b[2], b[3]])))
}

/// Writes `name` at `addr`, cut to the `socklen_t` at `len_at`, and the
/// full length back there (Linux's convention: the caller sees how long
/// the address really was).
fn put_sockaddr(pid: Pid, addr: u64, len_at: u64, name: SockAddr) -> Result<()> {
    let len = read_len(pid, len_at)? as usize;
    let mut b = [0u8; SOCKADDR_IN_BYTES];
    b[0..2].copy_from_slice(&AF_INET.to_le_bytes());
    b[2..4].copy_from_slice(&name.port.to_be_bytes());
    b[4..8].copy_from_slice(&name.addr);
    let n = len.min(SOCKADDR_IN_BYTES);
    if n > 0 {
        mem::write(pid, addr, &b[..n])?;
    }
    mem::write(pid, len_at, &(SOCKADDR_IN_BYTES as u32).to_le_bytes())
}

/// A `socklen_t` (int) at `at`; negative is EINVAL.
fn read_len(pid: Pid, at: u64) -> Result<u64> {
    let b = mem::read(pid, at, 4)?;
    let v = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    if v < 0 { Err(errno::EINVAL) } else { Ok(v as u64) }
}

/// The program's bytes to send, at most one transfer (a short count
/// beyond, as `write`).
fn read_buffer(pid: Pid, addr: u64, len: u64) -> Result<Vec<u8>> {
    let len = (len as usize).min(mem::MAX_TRANSFER_BYTES);
    check_range(addr, len as u64)?;
    mem::read(pid, addr, len)
}

fn check_range(addr: u64, len: u64) -> Result<()> {
    match addr.checked_add(len) {
        Some(end) if end <= abi::layout::USER_END => Ok(()),
        _ => Err(errno::EFAULT),
    }
}

fn fd(raw: u64) -> Result<i32> {
    let f = raw as i32;
    if f < 0 { Err(errno::EBADF) } else { Ok(f) }
}

/// A little-endian word of up to 8 bytes.
fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(w)
}
