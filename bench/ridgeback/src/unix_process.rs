//! A UNIX process on Ridgeback as the benchmarks see it: [`Platform`],
//! [`Unix`] (seed 001's Table 2 calls) and [`BlockIo`] (seed 000's block
//! I/O) over `runtime::unix`, one call each: a message to the user
//! monitor or straight to the object's manager, and [`PipeIo`] (seed
//! 002's `bw_pipe`). Shared by `r2bench`, `dbench` and `pbench`, the UNIX
//! programs of the bench image.

use crate::platform::Ridgeback;
use abi::InfoKey;
use alloc::format;
use alloc::string::String;
use bench::b::{self, DiskFs};
use bench::d::{BlockIo, Device};
use bench::p::PipeIo;
use bench::r2::{Errno, Fd, Unix};
use bench::{MAX_COUNTERS, Platform};
use protocols::unix::{errno, mode, open_flags};
use runtime::unix::SEEK_SET;
use runtime::{sys, unix};

/// A UNIX process on Ridgeback, as the benchmarks see it.
pub struct UnixProcess;

impl Platform for UnixProcess {
    fn tsc_hz() -> u64 {
        Ridgeback::tsc_hz()
    }

    /// The UNIX `getpid`: one kernel call, no message (`runtime::unix`).
    fn getpid() -> u64 {
        unix::getpid()
    }

    fn yield_now() {
        sys::yield_now()
    }

    /// Standard output, as any UNIX program writes it (the console
    /// manager); the kernel's console when there is no standard output
    /// (started outside the UNIX system), so that the reason still shows.
    fn write_stdout(bytes: &[u8]) {
        if unix::write(1, bytes).is_err() {
            let _ = sys::debug_write(bytes);
        }
    }

    fn read_counters(values: &mut [u64; MAX_COUNTERS]) -> &'static [&'static str] {
        Ridgeback::read_counters(values)
    }
}

impl Unix for UnixProcess {
    fn create(path: &str) -> Result<Fd, Errno> {
        unix::creat(path, 0o644)
    }

    fn open_read(path: &str) -> Result<Fd, Errno> {
        unix::open(path, open_flags::O_RDONLY, 0)
    }

    fn read(fd: Fd, buffer: &mut [u8]) -> Result<usize, Errno> {
        unix::read(fd, buffer)
    }

    fn write(fd: Fd, bytes: &[u8]) -> Result<usize, Errno> {
        unix::write(fd, bytes)
    }

    fn close(fd: Fd) -> Result<(), Errno> {
        unix::close(fd)
    }

    fn unlink(path: &str) -> Result<(), Errno> {
        unix::unlink(path)
    }

    /// `io::OP_FSYNC` at the file's manager: `ext2fs` writes every dirty
    /// buffer and flushes the device (`docs/filesystem.md`).
    fn fsync(fd: Fd) -> Result<(), Errno> {
        unix::fsync(fd)
    }

    fn sync() -> Result<(), Errno> {
        unix::sync()
    }

    fn pipe() -> Result<(Fd, Fd), Errno> {
        unix::pipe()
    }

    fn fork() -> Result<u64, Errno> {
        unix::fork()
    }

    fn exit(status: i32) -> ! {
        unix::exit(status)
    }

    fn wait(pid: u64) -> Result<Option<i32>, Errno> {
        match unix::waitpid(pid as i64, false) {
            Ok(Some((_, status))) => Ok(status.exit_code().map(|code| code as i32)),
            // Only a WNOHANG wait answers "nothing yet".
            Ok(None) => Err(errno::ECHILD),
            Err(e) => Err(e),
        }
    }

    fn sbrk(increment: isize) -> Result<usize, Errno> {
        unix::sbrk(increment as i64).map(|old| old as usize)
    }
}

/// Block I/O as a UNIX program does it: `open`, then `lseek` and `read`
/// or `write` on the descriptor. Ridgeback's block devices keep no cache,
/// so there is no `O_DIRECT` to ask for: every transfer goes to the driver.
impl BlockIo for UnixProcess {
    fn open_region(device: &Device) -> Result<Fd, Errno> {
        let create = if device.is_file { open_flags::O_CREAT } else { 0 };
        unix::open(device.path, open_flags::O_RDWR | create, 0o644)
    }

    /// A device must not be a regular file, a directory or a pipe: a
    /// missing driver must never be measured as memfs serving a file.
    fn check_kind(fd: Fd, device: &Device) -> Result<(), String> {
        let st = unix::fstat(fd).map_err(|e| format!("fstat: {}", e.name()))?;
        let kind = st.mode & mode::S_IFMT;
        match (device.is_file, kind) {
            (true, mode::S_IFREG) => Ok(()),
            (true, _) => Err(String::from("not a regular file")),
            (false, mode::S_IFREG | mode::S_IFDIR | mode::S_IFIFO) => {
                Err(format!("not a block device (mode {:o})", st.mode))
            }
            (false, _) => Ok(()),
        }
    }

    fn read_at(fd: Fd, buffer: &mut [u8], offset_bytes: u64) -> Result<usize, Errno> {
        unix::lseek(fd, offset_bytes as i64, SEEK_SET)?;
        unix::read(fd, buffer)
    }

    fn write_at(fd: Fd, bytes: &[u8], offset_bytes: u64) -> Result<usize, Errno> {
        unix::lseek(fd, offset_bytes as i64, SEEK_SET)?;
        unix::write(fd, bytes)
    }

    /// The kernel's count for this process (its own time only: the
    /// drivers and servers it calls are other processes).
    fn cpu_time_ns() -> u64 {
        sys::info(InfoKey::CpuTimeNs)
    }
}

/// B's cold cache between jobs of one boot: `ext2fs` has no
/// `drop_caches` request, and its cache is the `nbuf` buffers the boot
/// gave it (at most 12 in B), so reading a 256 KiB file through it after a
/// `sync` leaves none of the job's blocks cached. The first job of a boot
/// is cold by the boot.
impl DiskFs for UnixProcess {
    fn make_cold(dir: &str) -> Result<&'static str, String> {
        unix::sync().map_err(|e| format!("sync: {}", e.name()))?;
        b::read_evict_file::<UnixProcess>(dir)?;
        Ok("sync; read the 256 KiB eviction file")
    }

    fn seek(fd: Fd, offset: u64) -> Result<(), Errno> {
        let offset = i64::try_from(offset).map_err(|_| errno::EINVAL)?;
        unix::lseek(fd, offset, unix::SEEK_SET).map(|_| ())
    }
}

/// Ridgeback cannot pin a process to a CPU: each `pbench` boot has the
/// CPUs its figures' names say, and the kernel places the two ends. No
/// `vmsplice` either: a `write` in `loan` mode is Ridgeback's way.
impl PipeIo for UnixProcess {
    fn place(cpu: Option<usize>) {
        let _ = cpu;
    }
}
