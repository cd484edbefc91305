//! The Linux build: [`Platform`], [`Unix`] and [`BlockIo`] through Linux
//! system calls, and the Linux
//! peers of Ridgeback's round-trip message (seed 001, Table 1; the Linux
//! peers are named in `docs/benchmarks.md` R1): two processes echoing a
//! 32-byte message through a pipe pair, a Unix socket, a futex over
//! shared memory, or `sched_yield` turn-taking.
//!
//! Placement is explicit: a latency figure says whether both ends share
//! one vCPU ([`Placement::SameCpu`], both pinned to CPU 0) or not
//! ([`Placement::CrossCpu`], client on CPU 0, peer on CPU 1), because a
//! cross-vCPU wake-up in an emulated machine costs far more than a switch.
//!
//! Every `unsafe` here is a libc call; each says what it relies on.

use crate::b::DiskFs;
use crate::d::{Access, BlockIo, Device};
use crate::p::PipeIo;
use crate::r2::{Errno, Fd, Unix};
use crate::workloads::{DataRoundTrip, MESSAGE_BYTES, RoundTrip};
use crate::{Platform, now_ticks};
use alloc::string::String;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use libc::c_int;

/// Linux as the benchmarks see it.
pub struct Linux;

/// Length of the TSC calibration: long enough that the two clock reads
/// at each end are noise (well under 0.1 %), short enough to be free.
const TSC_CALIBRATION_NS: u64 = 100_000_000;

/// The calibrated TSC frequency; 0 until the first calibration.
static TSC_HZ: AtomicU64 = AtomicU64::new(0);

impl Platform for Linux {
    fn tsc_hz() -> u64 {
        match TSC_HZ.load(Ordering::Relaxed) {
            0 => {
                let hz = calibrate_tsc_hz();
                TSC_HZ.store(hz, Ordering::Relaxed);
                hz
            }
            hz => hz,
        }
    }

    fn getpid() -> u64 {
        // The raw system call: some C libraries have cached getpid, and the
        // figure is meant to be a kernel entry.
        // SAFETY: getpid takes no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_getpid) as u64 }
    }

    fn yield_now() {
        // SAFETY: sched_yield takes no arguments; its only effect is on
        // scheduling.
        unsafe { libc::sched_yield() };
    }

    fn write_stdout(bytes: &[u8]) {
        write_all(1, bytes);
    }
}

/// The break as this program last set or read it, so that `sbrk` costs
/// one `brk` system call as in glibc and 4.2BSD (musl's `sbrk` makes two:
/// it asks the kernel for the break first). `sbrk(0)` reads it afresh.
static BREAK: AtomicUsize = AtomicUsize::new(0);

/// The longest path [`Unix`] calls take (with its NUL).
const MAX_PATH_BYTES: usize = 256;

/// Runs `call` with `path` as a NUL-terminated C string.
fn with_c_path<T>(path: &str, call: impl FnOnce(*const libc::c_char) -> T) -> Result<T, Errno> {
    let mut buffer = [0u8; MAX_PATH_BYTES];
    if path.len() >= buffer.len() {
        return Err(Errno(libc::ENAMETOOLONG as u64));
    }
    if path.as_bytes().contains(&0) {
        return Err(Errno(libc::EINVAL as u64));
    }
    buffer[..path.len()].copy_from_slice(path.as_bytes());
    Ok(call(buffer.as_ptr().cast()))
}

/// A system call's result: `Err(errno)` when it returned -1.
fn checked(result: isize) -> Result<usize, Errno> {
    if result < 0 { Err(Errno(errno() as u64)) } else { Ok(result as usize) }
}

impl Unix for Linux {
    fn create(path: &str) -> Result<Fd, Errno> {
        // SAFETY: the path is a live NUL-terminated string; the mode is
        // passed as open's third argument, as O_CREAT requires.
        let fd = with_c_path(path, |path| unsafe {
            libc::open(path, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644 as libc::c_uint)
        })?;
        checked(fd as isize).map(|fd| fd as Fd)
    }

    fn open_read(path: &str) -> Result<Fd, Errno> {
        // SAFETY: the path is a live NUL-terminated string.
        let fd = with_c_path(path, |path| unsafe { libc::open(path, libc::O_RDONLY) })?;
        checked(fd as isize).map(|fd| fd as Fd)
    }

    fn read(fd: Fd, buffer: &mut [u8]) -> Result<usize, Errno> {
        loop {
            // SAFETY: `buffer` is a live, writable slice of the length passed.
            match checked(unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) }) {
                Err(e) if e == Errno(libc::EINTR as u64) => continue,
                result => return result,
            }
        }
    }

    fn write(fd: Fd, bytes: &[u8]) -> Result<usize, Errno> {
        loop {
            // SAFETY: `bytes` is a live slice of the length passed.
            match checked(unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) }) {
                Err(e) if e == Errno(libc::EINTR as u64) => continue,
                result => return result,
            }
        }
    }

    fn close(fd: Fd) -> Result<(), Errno> {
        // SAFETY: closing a descriptor; a bad one only gives EBADF.
        checked(unsafe { libc::close(fd) } as isize).map(|_| ())
    }

    fn fsync(fd: Fd) -> Result<(), Errno> {
        // SAFETY: fsync of a descriptor; a bad one only gives EBADF.
        checked(unsafe { libc::fsync(fd) } as isize).map(|_| ())
    }

    fn sync() -> Result<(), Errno> {
        // SAFETY: sync takes no arguments and cannot fail.
        unsafe { libc::sync() };
        Ok(())
    }

    fn unlink(path: &str) -> Result<(), Errno> {
        // SAFETY: the path is a live NUL-terminated string.
        let result = with_c_path(path, |path| unsafe { libc::unlink(path) })?;
        checked(result as isize).map(|_| ())
    }

    fn pipe() -> Result<(Fd, Fd), Errno> {
        let mut fds = [0 as c_int; 2];
        // SAFETY: `fds` has room for the two descriptors pipe writes.
        checked(unsafe { libc::pipe(fds.as_mut_ptr()) } as isize)?;
        Ok((fds[0], fds[1]))
    }

    fn fork() -> Result<u64, Errno> {
        // SAFETY: the benchmark program is single-threaded, so the child is
        // a whole copy; the R2 children only make system calls and leave
        // through `exit` (`_exit`). (The host's unit tests fork from a
        // threaded test runner; their children do the same, which is safe
        // there too: no locks are taken.)
        checked(unsafe { libc::fork() } as isize).map(|pid| pid as u64)
    }

    fn exit(status: i32) -> ! {
        // SAFETY: _exit ends the process at once; nothing is flushed twice.
        unsafe { libc::_exit(status) }
    }

    fn wait(pid: u64) -> Result<Option<i32>, Errno> {
        let mut status: c_int = 0;
        loop {
            // SAFETY: `status` is a live c_int.
            match checked(unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) } as isize) {
                Err(e) if e == Errno(libc::EINTR as u64) => continue,
                Err(e) => return Err(e),
                Ok(_) => break,
            }
        }
        Ok(libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)))
    }

    fn sbrk(increment: isize) -> Result<usize, Errno> {
        // SAFETY: brk(0) only reads the break.
        let ask = || unsafe { libc::syscall(libc::SYS_brk, 0usize) } as usize;
        let current = match BREAK.load(Ordering::Relaxed) {
            _ if increment == 0 => {
                let now = ask();
                BREAK.store(now, Ordering::Relaxed);
                return Ok(now);
            }
            0 => ask(),
            known => known,
        };
        let wanted = current.checked_add_signed(increment).ok_or(Errno(libc::ENOMEM as u64))?;
        // SAFETY: the program moves the break only between its own sbrk
        // calls and puts it back (the R2 row), and allocates nothing from
        // the region in between; the kernel answers the new break, or the
        // old one on failure.
        let now = unsafe { libc::syscall(libc::SYS_brk, wanted) } as usize;
        BREAK.store(now, Ordering::Relaxed);
        if now == wanted { Ok(current) } else { Err(Errno(libc::ENOMEM as u64)) }
    }
}

impl BlockIo for Linux {
    fn open_region(device: &Device) -> Result<Fd, Errno> {
        let mut flags = libc::O_RDWR | libc::O_CLOEXEC;
        if device.access == Access::Direct {
            flags |= libc::O_DIRECT;
        }
        if device.is_file {
            flags |= libc::O_CREAT;
        }
        // SAFETY: the path is a live NUL-terminated string; the mode is
        // open's third argument, which O_CREAT requires.
        let fd = with_c_path(device.path, |path| unsafe { libc::open(path, flags, 0o644 as libc::c_uint) })?;
        checked(fd as isize).map(|fd| fd as Fd)
    }

    fn check_kind(fd: Fd, device: &Device) -> Result<(), String> {
        // SAFETY: all zeros is a valid `stat`, which fstat then fills.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: `st` is a live stat buffer.
        checked(unsafe { libc::fstat(fd, &mut st) } as isize)
            .map_err(|e| alloc::format!("fstat: {}", e.name()))?;
        let kind = st.st_mode & libc::S_IFMT;
        match (device.is_file, kind) {
            (true, libc::S_IFREG) | (false, libc::S_IFBLK) => Ok(()),
            (true, _) => Err("not a regular file".into()),
            (false, _) => Err(alloc::format!("not a block device (mode {:o})", st.st_mode)),
        }
    }

    fn read_at(fd: Fd, buffer: &mut [u8], offset_bytes: u64) -> Result<usize, Errno> {
        loop {
            // SAFETY: `buffer` is a live, writable slice of the length passed.
            let result = unsafe {
                libc::pread(fd, buffer.as_mut_ptr().cast(), buffer.len(), offset_bytes as libc::off_t)
            };
            match checked(result) {
                Err(e) if e == Errno(libc::EINTR as u64) => continue,
                result => return result,
            }
        }
    }

    fn write_at(fd: Fd, bytes: &[u8], offset_bytes: u64) -> Result<usize, Errno> {
        loop {
            // SAFETY: `bytes` is a live slice of the length passed.
            let result =
                unsafe { libc::pwrite(fd, bytes.as_ptr().cast(), bytes.len(), offset_bytes as libc::off_t) };
            match checked(result) {
                Err(e) if e == Errno(libc::EINTR as u64) => continue,
                result => return result,
            }
        }
    }

    fn cpu_time_ns() -> u64 {
        let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `now` is a live timespec; the process CPU-time clock
        // always exists (user and kernel time of this process).
        unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
        now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
    }
}

/// Seed 002's bw_pipe (`crate::p`): pinning, and `vmsplice` for the
/// zero-copy writer.
impl PipeIo for Linux {
    fn place(cpu: Option<usize>) {
        match cpu {
            Some(cpu) => pin_to_cpu(cpu),
            None => unpin(),
        }
    }

    /// The writer's pages go into the pipe by reference (no
    /// `SPLICE_F_GIFT`: they stay the writer's, which must not change
    /// them until the reader has copied them out).
    fn vmsplice(fd: Fd, bytes: &[u8]) -> Result<usize, Errno> {
        let iov = libc::iovec { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() };
        loop {
            // SAFETY: `iov` describes a live slice, which outlives the
            // call; the pipe holds references to its pages afterwards,
            // which the kernel keeps alive however the process changes
            // its mappings (the bw_pipe writer never changes the bytes).
            let result =
                unsafe { libc::syscall(libc::SYS_vmsplice, fd, &iov as *const libc::iovec, 1usize, 0u32) };
            match checked(result as isize) {
                Err(e) if e == Errno(libc::EINTR as u64) => continue,
                result => return result,
            }
        }
    }
}

/// B's cold cache on Linux, as the issue asks: `sync`, then `echo 3 >
/// /proc/sys/vm/drop_caches` (page cache, dentries and inodes).
impl DiskFs for Linux {
    fn make_cold(_dir: &str) -> Result<&'static str, String> {
        Linux::sync().map_err(|e| alloc::format!("sync: {}", e.name()))?;
        let fd = with_c_path("/proc/sys/vm/drop_caches", |path| {
            // SAFETY: the path is a live NUL-terminated string.
            unsafe { libc::open(path, libc::O_WRONLY) }
        })
        .and_then(|fd| checked(fd as isize))
        .map_err(|e| alloc::format!("open /proc/sys/vm/drop_caches: {}", e.name()))?;
        let written = Linux::write(fd as Fd, b"3\n");
        let _ = Linux::close(fd as Fd);
        written.map_err(|e| alloc::format!("write /proc/sys/vm/drop_caches: {}", e.name()))?;
        Ok("sync; echo 3 > /proc/sys/vm/drop_caches")
    }

    fn seek(fd: Fd, offset: u64) -> Result<(), Errno> {
        let offset = libc::off_t::try_from(offset).map_err(|_| Errno(libc::EINVAL as u64))?;
        // SAFETY: lseek takes no pointers; a bad descriptor is an error.
        checked(unsafe { libc::lseek(fd, offset, libc::SEEK_SET) } as isize).map(|_| ())
    }
}

/// `mkdir(path, 0755)`; one that exists already is fine.
pub fn make_dir(path: &str) {
    // SAFETY: the path is a live NUL-terminated string.
    let _ = with_c_path(path, |path| unsafe { libc::mkdir(path, 0o755) });
}

/// Mounts the virtio-blk disk `/dev/vda` at `target` as ext2 (the disk
/// rows of R2 and benchmark B: the same kind of ext2 image on the same
/// kind of disk as Ridgeback's `/disk`), making `target` first. Already
/// mounted (`EBUSY`) is fine.
pub fn mount_disk(target: &str) -> Result<(), String> {
    make_dir(target);
    let fstype = b"ext2\0";
    let source = b"/dev/vda\0";
    let result = with_c_path(target, |path| {
        // SAFETY: every string is NUL-terminated and live; no data.
        unsafe { libc::mount(source.as_ptr().cast(), path, fstype.as_ptr().cast(), 0, core::ptr::null()) }
    })
    .map_err(|e| alloc::format!("mount {target}: {}", e.name()))?;
    match checked(result as isize) {
        Ok(_) => Ok(()),
        Err(e) if e == Errno(libc::EBUSY as u64) => Ok(()),
        Err(e) => Err(alloc::format!("mount -t ext2 /dev/vda {target}: {} (errno {e})", e.name())),
    }
}

/// Lets `write` on a pipe without readers fail with EPIPE instead of
/// killing the program (a failed figure is reported, not fatal).
pub fn ignore_sigpipe() {
    // SAFETY: installs the "ignore" disposition; no handler code runs.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

/// TSC ticks per second, against CLOCK_MONOTONIC over
/// [`TSC_CALIBRATION_NS`]. The TSC is what the samples are timed with
/// (cheap to read on both systems); the monotonic clock only sets its rate.
fn calibrate_tsc_hz() -> u64 {
    let (start_ns, start_ticks) = (monotonic_ns(), now_ticks());
    let mut remaining = libc::timespec { tv_sec: 0, tv_nsec: TSC_CALIBRATION_NS as _ };
    loop {
        let mut left = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: both pointers are to live timespecs on this stack frame.
        if unsafe { libc::nanosleep(&remaining, &mut left) } == 0 {
            break;
        }
        remaining = left; // interrupted by a signal: sleep the rest
    }
    let (end_ns, end_ticks) = (monotonic_ns(), now_ticks());
    (end_ticks.wrapping_sub(start_ticks) as u128 * 1_000_000_000 / (end_ns - start_ns).max(1) as u128) as u64
}

fn monotonic_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a live timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Processors the system has online.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf only reads a configuration value.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize
}

/// Restricts the calling process to `cpu` (children inherit it).
pub fn pin_to_cpu(cpu: usize) {
    set_affinity(&[cpu]);
}

/// Lets the calling process run on every online processor again.
pub fn unpin() {
    let all: [usize; 64] = core::array::from_fn(|i| i);
    set_affinity(&all[..online_cpus().min(64)]);
}

fn set_affinity(cpus: &[usize]) {
    // SAFETY: cpu_set_t is a plain bit array; all zeros is the empty set.
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: CPU_SET writes bit `cpu` of `set`, which is in range:
        // callers pass CPU numbers below 64, cpu_set_t has 1024 bits.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a live cpu_set_t of the size passed; pid 0 is us.
    let result = unsafe { libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set) };
    assert_eq!(result, 0, "sched_setaffinity({cpus:?}) failed");
}

/// Where the two ends of a ping-pong run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Both ends pinned to CPU 0: every round trip is two context switches.
    SameCpu,
    /// Client on CPU 0, peer on CPU 1: every message is a cross-CPU wake-up.
    CrossCpu,
}

impl Placement {
    /// The figure's name suffix: how many vCPUs the two ends use.
    pub fn suffix(self) -> &'static str {
        match self {
            Placement::SameCpu => "1cpu",
            Placement::CrossCpu => "2cpu",
        }
    }

    fn peer_cpu(self) -> usize {
        match self {
            Placement::SameCpu => 0,
            Placement::CrossCpu => 1,
        }
    }
}

/// The echoing peer process. Waiting for it on drop keeps a benchmark
/// from leaving a zombie or a still-running peer behind the next figure.
struct Peer {
    pid: libc::pid_t,
}

impl Peer {
    /// Forks; the child pins itself, closes `close_in_child` (the parent's
    /// ends, so the child sees end-of-file when the parent closes them),
    /// runs `serve` and exits. The parent is pinned to CPU 0 first, so the
    /// client end is where [`Placement`] says.
    fn spawn(placement: Placement, close_in_child: &[c_int], serve: impl FnOnce()) -> Peer {
        pin_to_cpu(0);
        // SAFETY: this program is single-threaded, so the child is a full
        // copy and may do anything; it leaves through _exit only.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            pin_to_cpu(placement.peer_cpu());
            for &fd in close_in_child {
                close(fd);
            }
            serve();
            // SAFETY: _exit ends this process without running the parent's
            // atexit handlers or flushing its (empty) buffers twice.
            unsafe { libc::_exit(0) };
        }
        Peer { pid }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let mut status: c_int = 0;
        // SAFETY: `pid` is our child; `status` is a live c_int.
        unsafe { libc::waitpid(self.pid, &mut status, 0) };
        unpin();
        if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
            crate::harness::comment::<Linux>(format_args!("peer {} ended with status {status:#x}", self.pid));
        }
    }
}

/// Writes all of `bytes`, retrying on partial writes and EINTR.
fn write_all(fd: c_int, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a live slice of the length passed.
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if written < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return false;
        }
        bytes = &bytes[written as usize..];
    }
    true
}

/// Fills `buffer`; false on end-of-file or error.
fn read_exact(fd: c_int, mut buffer: &mut [u8]) -> bool {
    while !buffer.is_empty() {
        // SAFETY: `buffer` is a live, writable slice of the length passed.
        let read = unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
        if read < 0 && errno() == libc::EINTR {
            continue;
        }
        if read <= 0 {
            return false;
        }
        buffer = &mut buffer[read as usize..];
    }
    true
}

fn errno() -> c_int {
    // SAFETY: __errno_location returns this thread's errno slot, always valid.
    unsafe { *libc::__errno_location() }
}

fn close(fd: c_int) {
    // SAFETY: closing a descriptor this process owns.
    unsafe { libc::close(fd) };
}

/// Largest request a descriptor-based peer reads at once (one page, the
/// most a Ridgeback message carries).
pub const MAX_REQUEST_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize;

/// The peer's loop for the descriptor-based channels: read each request of
/// `request_bytes` and send back its first [`MESSAGE_BYTES`] bytes, until
/// the client closes its end.
fn echo_until_end_of_file(input: c_int, output: c_int, request_bytes: usize) {
    let mut request = [0u8; MAX_REQUEST_BYTES];
    while read_exact(input, &mut request[..request_bytes]) && write_all(output, &request[..MESSAGE_BYTES]) {}
}

/// Two pipes, one each way: the classic lmbench `lat_pipe` arrangement.
pub struct PipeChannel {
    to_peer: c_int,
    from_peer: c_int,
    request_bytes: usize,
    _peer: Peer,
}

impl PipeChannel {
    /// 32-byte requests and replies.
    pub fn new(placement: Placement) -> Self {
        PipeChannel::with_request_bytes(placement, MESSAGE_BYTES)
    }

    /// Requests of `request_bytes` (32..=[`MAX_REQUEST_BYTES`]), replies of 32 bytes: the
    /// Linux peer of Ridgeback's SendData round trip.
    pub fn with_request_bytes(placement: Placement, request_bytes: usize) -> Self {
        assert!((MESSAGE_BYTES..=MAX_REQUEST_BYTES).contains(&request_bytes), "request size");
        let (request_read, request_write) = pipe();
        let (reply_read, reply_write) = pipe();
        let peer = Peer::spawn(placement, &[request_write, reply_read], || {
            echo_until_end_of_file(request_read, reply_write, request_bytes)
        });
        close(request_read);
        close(reply_write);
        PipeChannel { to_peer: request_write, from_peer: reply_read, request_bytes, _peer: peer }
    }
}

impl DataRoundTrip for PipeChannel {
    fn round_trip_data(&mut self, request: &[u8], reply: &mut [u8; MESSAGE_BYTES]) {
        assert_eq!(request.len(), self.request_bytes, "the peer reads requests of one size");
        assert!(write_all(self.to_peer, request) && read_exact(self.from_peer, reply), "pipe peer gone");
    }
}

fn pipe() -> (c_int, c_int) {
    let mut fds = [0 as c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe failed");
    (fds[0], fds[1])
}

impl RoundTrip for PipeChannel {
    fn round_trip(&mut self, request: &[u8; MESSAGE_BYTES], reply: &mut [u8; MESSAGE_BYTES]) {
        self.round_trip_data(request, reply);
    }
}

impl Drop for PipeChannel {
    fn drop(&mut self) {
        // The peer sees end-of-file and exits; `_peer` then reaps it.
        close(self.to_peer);
        close(self.from_peer);
    }
}

/// A connected `AF_UNIX` stream socket pair.
pub struct UnixSocketChannel {
    socket: c_int,
    _peer: Peer,
}

impl UnixSocketChannel {
    pub fn new(placement: Placement) -> Self {
        let mut fds = [0 as c_int; 2];
        // SAFETY: `fds` has room for the two descriptors socketpair writes.
        let result = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) };
        assert_eq!(result, 0, "socketpair failed");
        let [client, server] = fds;
        let peer =
            Peer::spawn(placement, &[client], || echo_until_end_of_file(server, server, MESSAGE_BYTES));
        close(server);
        UnixSocketChannel { socket: client, _peer: peer }
    }
}

impl RoundTrip for UnixSocketChannel {
    fn round_trip(&mut self, request: &[u8; MESSAGE_BYTES], reply: &mut [u8; MESSAGE_BYTES]) {
        assert!(write_all(self.socket, request) && read_exact(self.socket, reply), "socket peer gone");
    }
}

impl Drop for UnixSocketChannel {
    fn drop(&mut self) {
        close(self.socket);
    }
}

/// How a [`SharedMemoryChannel`] end waits for the other's turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// FUTEX_WAIT on the state word; the other end FUTEX_WAKEs it. Four
    /// kernel entries per round trip, like Ridge's Send + ReceiveData.
    Futex,
    /// `sched_yield` until the state changes: with both ends on one CPU,
    /// the plain cost of switching between two processes.
    Yield,
}

/// The page both processes share: a state word and one message buffer
/// each way.
#[repr(C)]
struct Slot {
    state: AtomicU32,
    request: UnsafeCell<[u8; MESSAGE_BYTES]>,
    reply: UnsafeCell<[u8; MESSAGE_BYTES]>,
}

/// [`Slot::state`] values. The buffers belong to whoever the state names:
/// the peer reads `request` only in REQUEST, the client reads `reply` only
/// in REPLY; the Release store of the state publishes the buffer written.
const STATE_IDLE: u32 = 0;
const STATE_REQUEST: u32 = 1;
const STATE_REPLY: u32 = 2;
const STATE_STOP: u32 = 3;

/// A message exchange through a shared anonymous page.
pub struct SharedMemoryChannel {
    wait: Wait,
    // Declared before `page`: fields drop in order, so the peer is reaped
    // before the page it reads is unmapped.
    _peer: Peer,
    page: SharedPage,
}

/// One page mapped shared between this process and its forked peer.
struct SharedPage {
    slot: *const Slot,
}

/// The x86-64 page, the same on Linux as on Ridgeback.
const SHARED_PAGE_BYTES: usize = abi::layout::PAGE_SIZE as usize;

impl SharedPage {
    fn new() -> Self {
        // SAFETY: a fresh anonymous mapping; MAP_SHARED so the forked peer
        // sees the same page, not a copy-on-write copy.
        let page = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                SHARED_PAGE_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(page != libc::MAP_FAILED, "mmap failed");
        // A new anonymous page is zero-filled: STATE_IDLE and empty
        // buffers, a valid Slot.
        let page = SharedPage { slot: page as *const Slot };
        debug_assert_eq!(page.slot().state.load(Ordering::Relaxed), STATE_IDLE);
        page
    }

    fn slot(&self) -> &Slot {
        // SAFETY: the mapping is page-aligned, zero-initialised (a valid
        // Slot) and lives until `drop`.
        unsafe { &*self.slot }
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: unmaps the page mapped in `new`; no reference from
        // `slot()` outlives `self`.
        unsafe { libc::munmap(self.slot as *mut libc::c_void, SHARED_PAGE_BYTES) };
    }
}

impl SharedMemoryChannel {
    pub fn new(placement: Placement, wait: Wait) -> Self {
        let page = SharedPage::new();
        let slot = page.slot;
        // SAFETY: the child has its own mapping of the same shared page at
        // the same address (inherited over fork), valid until it exits.
        let peer = Peer::spawn(placement, &[], || serve_slot(unsafe { &*slot }, wait));
        SharedMemoryChannel { wait, _peer: peer, page }
    }
}

/// The peer's loop: echo each request until told to stop.
fn serve_slot(slot: &Slot, wait: Wait) {
    loop {
        if wait_for(slot, wait, STATE_REQUEST) == STATE_STOP {
            return;
        }
        // SAFETY: in STATE_REQUEST the buffers are the peer's (see the
        // state constants); the client touches neither until STATE_REPLY.
        unsafe { *slot.reply.get() = *slot.request.get() };
        slot.state.store(STATE_REPLY, Ordering::Release);
        if wait == Wait::Futex {
            futex_wake(&slot.state);
        }
    }
}

/// Waits until the state is `wanted` or STATE_STOP and returns it.
fn wait_for(slot: &Slot, wait: Wait, wanted: u32) -> u32 {
    loop {
        let state = slot.state.load(Ordering::Acquire);
        if state == wanted || state == STATE_STOP {
            return state;
        }
        match wait {
            Wait::Futex => futex_wait(&slot.state, state),
            Wait::Yield => Linux::yield_now(),
        }
    }
}

/// Sleeps while `word` still holds `expected`. Not FUTEX_PRIVATE: the two
/// processes share the page, so the futex must be keyed by the page, not
/// by the address space.
fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: `word` is a live, aligned u32; a null timeout waits without
    // limit; EAGAIN (the value already changed) and EINTR just return, and
    // the caller checks the state again.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            core::ptr::null::<libc::timespec>(),
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: `word` is a live, aligned u32; waking at most one waiter.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, 1) };
}

impl RoundTrip for SharedMemoryChannel {
    fn round_trip(&mut self, request: &[u8; MESSAGE_BYTES], reply: &mut [u8; MESSAGE_BYTES]) {
        let slot = self.page.slot();
        // SAFETY: outside STATE_REQUEST the buffers are the client's: the
        // peer is waiting for the state to change.
        unsafe { *slot.request.get() = *request };
        slot.state.store(STATE_REQUEST, Ordering::Release);
        if self.wait == Wait::Futex {
            futex_wake(&slot.state);
        }
        assert_eq!(wait_for(slot, self.wait, STATE_REPLY), STATE_REPLY, "shared-memory peer stopped");
        // SAFETY: in STATE_REPLY the buffers are the client's again.
        *reply = unsafe { *slot.reply.get() };
    }
}

impl Drop for SharedMemoryChannel {
    fn drop(&mut self) {
        // Then `_peer` reaps the peer, then `page` is unmapped.
        self.page.slot().state.store(STATE_STOP, Ordering::Release);
        futex_wake(&self.page.slot().state);
    }
}

/// A peer that does nothing but `sched_yield` on CPU 0, where the caller is
/// pinned too, until dropped: the other half of
/// [`crate::workloads::yield_pair`].
pub struct YieldPeer {
    // Declared before `page`, as in SharedMemoryChannel: the peer is
    // reaped before the page it reads is unmapped.
    _peer: Peer,
    page: SharedPage,
}

impl YieldPeer {
    pub fn new() -> Self {
        let page = SharedPage::new();
        let slot = page.slot;
        let peer = Peer::spawn(Placement::SameCpu, &[], || {
            // SAFETY: the child's inherited mapping of the shared page stays
            // valid until it exits.
            let slot = unsafe { &*slot };
            while slot.state.load(Ordering::Acquire) != STATE_STOP {
                Linux::yield_now();
            }
        });
        YieldPeer { _peer: peer, page }
    }
}

impl Default for YieldPeer {
    fn default() -> Self {
        YieldPeer::new()
    }
}

impl Drop for YieldPeer {
    fn drop(&mut self) {
        // Then `_peer` waits for the peer, which sees STOP at its next turn.
        self.page.slot().state.store(STATE_STOP, Ordering::Release);
    }
}

/// Brings the loopback interface up (the guest's `/init` configures no
/// network): `SIOCGIFFLAGS`, then `SIOCSIFFLAGS` with `IFF_UP`. Benchmark N
/// calls it before its figures.
pub fn loopback_up() -> Result<(), Errno> {
    /// `struct ifreq` as far as the flags: the name, then the flags, in a
    /// 40-byte union.
    #[repr(C)]
    struct IfreqFlags {
        name: [u8; 16],
        flags: libc::c_short,
        _rest: [u8; 22],
    }
    let mut req = IfreqFlags { name: [0; 16], flags: 0, _rest: [0; 22] };
    req.name[..2].copy_from_slice(b"lo");
    // SAFETY: a datagram socket for the ioctls; `req` is a live ifreq-sized
    // buffer the two calls read and write.
    unsafe {
        let fd = checked(libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) as isize)? as c_int;
        let got = checked(libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut req as *mut IfreqFlags) as isize);
        let set = got.and_then(|_| {
            req.flags |= libc::IFF_UP as libc::c_short;
            checked(libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &mut req as *mut IfreqFlags) as isize)
        });
        libc::close(fd);
        set.map(|_| ())
    }
}

/// Benchmark N (`crate::n`): TCP over Linux's loopback, and the affinity
/// mask that gives a figure its CPU count.
impl crate::n::NetIo for Linux {
    fn tcp_listen() -> Result<(Fd, u16), Errno> {
        // SAFETY: plain socket calls on a descriptor made here; `addr` and
        // `len` are live and of the sizes passed.
        unsafe {
            let fd = checked(libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) as isize)? as c_int;
            let mut addr: libc::sockaddr_in = core::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
            let size = core::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let bound = checked(libc::bind(fd, &addr as *const _ as *const libc::sockaddr, size) as isize)
                .and_then(|_| checked(libc::listen(fd, 16) as isize));
            let mut len = size;
            let named = bound.and_then(|_| {
                checked(libc::getsockname(fd, &mut addr as *mut _ as *mut libc::sockaddr, &mut len) as isize)
            });
            if let Err(e) = named {
                libc::close(fd);
                return Err(e);
            }
            Ok((fd as Fd, u16::from_be(addr.sin_port)))
        }
    }

    fn tcp_accept(listener: Fd) -> Result<Fd, Errno> {
        // SAFETY: accept with no address wanted (null pointers allowed).
        checked(
            unsafe { libc::accept(listener as c_int, core::ptr::null_mut(), core::ptr::null_mut()) } as isize
        )
        .map(|fd| fd as Fd)
    }

    fn tcp_connect(port: u16) -> Result<Fd, Errno> {
        // SAFETY: as in `tcp_listen`.
        unsafe {
            let fd = checked(libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) as isize)? as c_int;
            let mut addr: libc::sockaddr_in = core::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
            addr.sin_port = port.to_be();
            let size = core::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            if let Err(e) =
                checked(libc::connect(fd, &addr as *const _ as *const libc::sockaddr, size) as isize)
            {
                libc::close(fd);
                return Err(e);
            }
            Ok(fd as Fd)
        }
    }

    fn tcp_nodelay(fd: Fd) -> Result<(), Errno> {
        let on: c_int = 1;
        // SAFETY: `on` is a live int of the size passed.
        checked(unsafe {
            libc::setsockopt(
                fd as c_int,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                &on as *const c_int as *const libc::c_void,
                core::mem::size_of::<c_int>() as libc::socklen_t,
            )
        } as isize)
        .map(|_| ())
    }

    fn limit_cpus(cpus: Option<usize>) {
        match cpus {
            Some(n) => {
                let first: [usize; 64] = core::array::from_fn(|i| i);
                set_affinity(&first[..n.clamp(1, online_cpus().min(64))]);
            }
            None => unpin(),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Seed 001's Table 2 figures ([`crate::r2`]) on the host's Linux, in
    //! a fresh directory: the same code path as the Linux guest's, checks
    //! included.

    use super::*;
    use crate::harness::Config;
    use crate::r2::{BLOCK_BYTES, FILE_BYTES, Session};
    use alloc::format;

    const QUICK: Config = Config { sample_count: 1, min_sample_ns: 1_000_000 };

    /// The tests fork (pipes, jobs, fork figures), and `cargo test` runs
    /// them on threads of one process: a fork copies every descriptor of
    /// every thread, so a child of one test kept another test's pipe
    /// write end open and its reader never saw the end of file (the host
    /// tests hung). Each test holds this while it runs.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn scratch_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("r2-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn file_figures_measure_and_leave_nothing_behind() {
        let _serial = one_at_a_time();
        let dir = scratch_dir("files");
        let mut session = Session::new(dir.to_str().unwrap());
        for figure in ["read", "write", "copy", "creat"] {
            let (unit, measurement) = session.measure::<Linux>(figure, &QUICK).unwrap();
            assert!(measurement.median > 0.0, "{figure}");
            assert_eq!(unit.bytes_per_op(), if figure == "creat" { 0 } else { FILE_BYTES as u64 });
        }
        let copy = std::fs::read(dir.join("r2-copy")).unwrap();
        assert_eq!(copy.len(), FILE_BYTES);
        assert_eq!(copy, std::fs::read(dir.join("r2-file")).unwrap());
        session.clean_up::<Linux>();
        let left: std::vec::Vec<_> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "the creat row's files are removed: {left:?}");
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn read_notices_a_damaged_file() {
        let _serial = one_at_a_time();
        let dir = scratch_dir("damaged");
        let mut session = Session::new(dir.to_str().unwrap());
        session.measure::<Linux>("write", &QUICK).unwrap();
        let path = dir.join("r2-file");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[5 * BLOCK_BYTES] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let error = session.measure::<Linux>("read", &QUICK).unwrap_err();
        assert!(error.contains("block 5 holds block"), "{error}");
        bytes[5 * BLOCK_BYTES] ^= 1;
        bytes.truncate(FILE_BYTES / 2);
        std::fs::write(&path, &bytes).unwrap();
        let error = session.measure::<Linux>("read", &QUICK).unwrap_err();
        assert!(error.contains("has 0 bytes"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Seed 000's program on a file of the host (the guest's tmpfs row,
    /// without O_DIRECT), one job and five, checks included.
    #[test]
    fn d_runs_on_a_file_with_one_job_and_five() {
        let _serial = one_at_a_time();
        use crate::d::{self, Access, Device, MANY_JOBS};
        let dir = scratch_dir("d");
        let path: &'static str = alloc::boxed::Box::leak(dir.join("region").to_str().unwrap().into());
        let device =
            Device { name: "file", path, access: Access::Cached, is_file: true, what: "a test file" };
        for jobs in [1, MANY_JOBS] {
            let (elapsed, cpu) = d::measure::<Linux>(&device, jobs, &QUICK).unwrap();
            let expected_samples = if jobs == 1 { QUICK.sample_count } else { jobs };
            assert_eq!((elapsed.samples().len(), cpu.samples().len()), (expected_samples, expected_samples));
            assert!(elapsed.median > 0.0 && cpu.median > 0.0 && cpu.tsc_hz == 1_000_000_000);
        }
        assert_eq!(std::fs::metadata(path).unwrap().len(), 64 << 10, "the region, and nothing more");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn d_refuses_what_is_not_its_device() {
        let _serial = one_at_a_time();
        use crate::d::{self, Access, Device};
        let dir = scratch_dir("d-refuse");
        let missing: &'static str = alloc::boxed::Box::leak(dir.join("ram9").to_str().unwrap().into());
        let device =
            Device { name: "x", path: missing, access: Access::Direct, is_file: false, what: "no such disk" };
        let error = d::measure::<Linux>(&device, 1, &QUICK).unwrap_err();
        assert!(error.contains("ENOENT") && error.ends_with("no such disk"), "{error}");
        assert!(!dir.join("ram9").exists(), "a missing device is not created");
        // A regular file where a block device is expected.
        std::fs::write(missing, [0u8; 4096]).unwrap();
        let device = Device { access: Access::Cached, ..device };
        let error = d::measure::<Linux>(&device, 1, &QUICK).unwrap_err();
        assert!(error.contains("not a block device"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Seed 002's bw_pipe on the host: plain pipe, overwrite and vmsplice,
    /// on one CPU and (when the host has two) on two, checksums included.
    #[test]
    fn p_pipe_figures_measure_and_check_every_byte() {
        let _serial = one_at_a_time();
        use crate::p::{self, Method, Placement, Variant};
        ignore_sigpipe();
        let cpus = online_cpus();
        let mut placements = alloc::vec![Placement { writer_cpu: Some(0), reader_cpu: Some(0) }];
        if cpus >= 2 {
            placements.push(Placement { writer_cpu: Some(0), reader_cpu: Some(1) });
        }
        for placement in placements {
            for (method, overwrite) in
                [(Method::Write, false), (Method::Write, true), (Method::Vmsplice, false)]
            {
                let variant = Variant { method, overwrite };
                let measurement = p::pipe_figure::<Linux>(variant, placement, &QUICK)
                    .unwrap_or_else(|e| panic!("{variant:?} {placement:?}: {e}"));
                assert!(measurement.median > 0.0);
            }
        }
        assert!(p::copy_figure::<Linux>(true, &QUICK).median > 0.0);
    }

    #[test]
    fn process_figures_measure() {
        let _serial = one_at_a_time();
        let dir = scratch_dir("procs");
        let mut session = Session::new(dir.to_str().unwrap());
        for figure in ["pipe", "getpid", "sbrk", "fork"] {
            let (_, measurement) = session.measure::<Linux>(figure, &QUICK).unwrap();
            assert!(measurement.median > 0.0, "{figure}");
        }
        assert!(session.measure::<Linux>("nope", &QUICK).unwrap_err().contains("unknown figure"));
        std::fs::remove_dir(&dir).unwrap();
    }
}
