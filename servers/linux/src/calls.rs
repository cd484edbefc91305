//! The Linux system calls, each carried out with the runtime's UNIX calls
//! (the monitor, the file managers, pipes) or answered here (memory,
//! ids, time). Numbers and layouts are Linux x86-64's
//! (`arch/x86/entry/syscalls/syscall_64.tbl`, `struct stat`, `iovec`,
//! `linux_dirent64`, `utsname`). A result is the value, or the negated
//! errno; Ridgeback's errno numbers are Linux's (protocols::unix).
//!
//! Memory: `brk` grows from the start of the heap region
//! (`abi::layout::USER_HEAP_BASE`), and `mmap` takes fresh pages from the
//! upper half of that region (`vmem`: addresses `munmap` gave back are
//! used again); the kernel fills each page with zeros on first touch,
//! takes pages back at `munmap` and makes them read-only at `mprotect`;
//! see docs/linux-abi.md.

use crate::mem;
use crate::signals::Signals;
use crate::start::{CLOCK_TICKS_PER_S, Program};
use abi::Pid;
use abi::layout::{PAGE_SIZE, USER_HEAP_BASE, USER_HEAP_MAX_BYTES};
use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;
use protocols::net::POLLIN;
use protocols::unix::{Errno, Stat, errno, mode};
use runtime::unix::socket::PollFd;
use runtime::{sys, unix};

/// Linux call numbers (x86-64).
mod nr {
    pub const READ: u64 = 0;
    pub const WRITE: u64 = 1;
    pub const OPEN: u64 = 2;
    pub const CLOSE: u64 = 3;
    pub const STAT: u64 = 4;
    pub const FSTAT: u64 = 5;
    pub const LSTAT: u64 = 6;
    pub const LSEEK: u64 = 8;
    pub const MMAP: u64 = 9;
    pub const MPROTECT: u64 = 10;
    pub const MUNMAP: u64 = 11;
    pub const BRK: u64 = 12;
    pub const RT_SIGACTION: u64 = 13;
    pub const RT_SIGPROCMASK: u64 = 14;
    pub const IOCTL: u64 = 16;
    pub const PREAD64: u64 = 17;
    pub const PWRITE64: u64 = 18;
    pub const READV: u64 = 19;
    pub const WRITEV: u64 = 20;
    pub const ACCESS: u64 = 21;
    pub const MSYNC: u64 = 26;
    pub const MADVISE: u64 = 28;
    pub const DUP: u64 = 32;
    pub const DUP2: u64 = 33;
    pub const NANOSLEEP: u64 = 35;
    pub const GETPID: u64 = 39;
    pub const EXIT: u64 = 60;
    pub const KILL: u64 = 62;
    pub const UNAME: u64 = 63;
    pub const FCNTL: u64 = 72;
    pub const GETCWD: u64 = 79;
    pub const CHDIR: u64 = 80;
    pub const RENAME: u64 = 82;
    pub const MKDIR: u64 = 83;
    pub const RMDIR: u64 = 84;
    pub const UNLINK: u64 = 87;
    pub const READLINK: u64 = 89;
    pub const CHMOD: u64 = 90;
    pub const UMASK: u64 = 95;
    pub const GETTIMEOFDAY: u64 = 96;
    pub const SYSINFO: u64 = 99;
    pub const GETUID: u64 = 102;
    pub const GETGID: u64 = 104;
    pub const GETEUID: u64 = 107;
    pub const GETEGID: u64 = 108;
    pub const SETPGID: u64 = 109;
    pub const GETPPID: u64 = 110;
    pub const GETPGRP: u64 = 111;
    pub const SETSID: u64 = 112;
    pub const GETPGID: u64 = 121;
    pub const SIGALTSTACK: u64 = 131;
    pub const ARCH_PRCTL: u64 = 158;
    pub const GETTID: u64 = 186;
    pub const GETDENTS64: u64 = 217;
    pub const SET_TID_ADDRESS: u64 = 218;
    pub const CLOCK_GETTIME: u64 = 228;
    pub const CLOCK_NANOSLEEP: u64 = 230;
    pub const EXIT_GROUP: u64 = 231;
    pub const OPENAT: u64 = 257;
    pub const MKDIRAT: u64 = 258;
    pub const NEWFSTATAT: u64 = 262;
    pub const UNLINKAT: u64 = 263;
    pub const RENAMEAT: u64 = 264;
    pub const READLINKAT: u64 = 267;
    pub const FCHMODAT: u64 = 268;
    pub const FACCESSAT: u64 = 269;
    pub const DUP3: u64 = 292;
    pub const PIPE2: u64 = 293;
    pub const PREADV: u64 = 295;
    pub const PWRITEV: u64 = 296;
    pub const PRLIMIT64: u64 = 302;
    pub const GETRANDOM: u64 = 318;
    pub const PIPE: u64 = 22;
    pub const RENAMEAT2: u64 = 316;
    pub const FACCESSAT2: u64 = 439;
    pub const RSEQ: u64 = 334;
    pub const CLONE: u64 = 56;
    pub const FORK: u64 = 57;
    pub const VFORK: u64 = 58;
    pub const EXECVE: u64 = 59;
    pub const WAIT4: u64 = 61;
    pub const TIME: u64 = 201;
    pub const PRCTL: u64 = 157;
    pub const SET_ROBUST_LIST: u64 = 273;
    pub const SENDFILE: u64 = 40;
    pub const RT_SIGRETURN: u64 = 15;
    pub const TKILL: u64 = 200;
    pub const TGKILL: u64 = 234;
    pub const RT_SIGPENDING: u64 = 127;
    pub const RT_SIGSUSPEND: u64 = 130;
    pub const PAUSE: u64 = 34;
    pub const ALARM: u64 = 37;
    pub const GETITIMER: u64 = 36;
    pub const SETITIMER: u64 = 38;
    pub const POLL: u64 = 7;
    pub const PPOLL: u64 = 271;
    pub const STATX: u64 = 332;
    pub const FCHDIR: u64 = 81;
    pub const LINK: u64 = 86;
    pub const SYMLINK: u64 = 88;
    pub const LINKAT: u64 = 265;
    pub const SYMLINKAT: u64 = 266;
    pub const UTIMENSAT: u64 = 280;
    pub const CHOWN: u64 = 92;
    pub const LCHOWN: u64 = 94;
    pub const FCHOWNAT: u64 = 260;
}

/// The one symbolic link there is: the program's own file.
const SELF_EXE: &str = "/proc/self/exe";
/// `openat`'s "relative to the working directory".
const AT_REMOVEDIR: u64 = 0x200;
/// `openat`'s "relative to the working directory".
pub const AT_FDCWD: i64 = -100;
/// `AT_EMPTY_PATH`: the descriptor itself.
pub const AT_EMPTY_PATH: u64 = 0x1000;
/// `O_CLOEXEC` and `FD_CLOEXEC`.
pub const O_CLOEXEC: u64 = 0o2_000_000;
pub const FD_CLOEXEC: u64 = 1;
/// Clocks `clock_nanosleep` takes, and its absolute-time flag.
const CLOCK_MONOTONIC: u64 = 1;
const CLOCK_BOOTTIME: u64 = 7;
const TIMER_ABSTIME: u64 = 1;
const ARCH_SET_FS: u64 = 0x1002;
const ARCH_GET_FS: u64 = 0x1003;
const MAP_FIXED: u64 = 0x10;
/// `mmap`'s sharing type (the low bits of flags).
const MAP_TYPE: u64 = 0x0f;
const MAP_SHARED: u64 = 0x01;
const MAP_SHARED_VALIDATE: u64 = 0x03;
const MAP_ANONYMOUS: u64 = 0x20;
const F_DUPFD: u64 = 0;
const F_GETFD: u64 = 1;
const F_SETFD: u64 = 2;
const F_GETFL: u64 = 3;
const F_SETFL: u64 = 4;
const F_DUPFD_CLOEXEC: u64 = 1030;
const TCGETS: u64 = 0x5401;
const TCSETS: u64 = 0x5402;
const TCSETSW: u64 = 0x5403;
const TCSETSF: u64 = 0x5404;
const TIOCGPGRP: u64 = 0x540f;
const TIOCSPGRP: u64 = 0x5410;
const TIOCGWINSZ: u64 = 0x5413;
/// Linux `struct stat` (x86-64), `struct termios` (kernel's, 36 bytes
/// of fields), `struct winsize`.
const STAT_BYTES: usize = 144;
const TERMIOS_BYTES: usize = 36;
/// `brk` gets the lower half of the heap region, `mmap` the upper.
const BRK_LIMIT: u64 = USER_HEAP_BASE + USER_HEAP_MAX_BYTES / 2;
const MMAP_END: u64 = USER_HEAP_BASE + USER_HEAP_MAX_BYTES;
/// Most iovec entries one `readv`/`writev` takes (Linux's UIO_MAXIOV).
const IOV_MAX: u64 = 1024;

pub(crate) type Result<T> = core::result::Result<T, Errno>;

pub struct Linux {
    pub(crate) pid: Pid,
    /// The program's file (what `/proc/self/exe` names).
    exe: alloc::string::String,
    /// This server's queue for the program's calls (a forked copy's too).
    queue: u32,
    brk: u64,
    /// The mmap region's addresses and shared file mappings.
    vm: crate::vmem::Space,
    /// `getdents64`'s position in each open directory.
    pub(crate) dir_index: BTreeMap<i32, u64>,
    /// The path each descriptor was opened on (fscalls.rs: `dirfd`s).
    pub(crate) paths: BTreeMap<i32, alloc::string::String>,
    /// Descriptors marked close-on-exec.
    pub(crate) cloexec: alloc::collections::BTreeSet<i32>,
    /// The working directory, once asked of the monitor (None after
    /// `chdir` until it is needed again).
    pub(crate) cwd: Option<alloc::string::String>,
    /// The program's signals (actions, mask, pending, alternate stack).
    pub(crate) sig: Signals,
    /// Signals the program sent itself, not yet delivered (their
    /// `siginfo` names it as the sender).
    pub(crate) raised_by_self: u64,
    /// `LINUX_TRACE=1` in the environment: one line per call (strace's
    /// view, for finding what a program needs).
    trace: bool,
}

impl Linux {
    pub fn new(program: Program, exe: &str, queue: u32) -> Linux {
        let _ = program.image_end;
        Linux {
            pid: program.pid,
            exe: alloc::string::String::from(exe),
            queue,
            brk: USER_HEAP_BASE,
            vm: crate::vmem::Space::new(BRK_LIMIT, MMAP_END),
            dir_index: BTreeMap::new(),
            paths: BTreeMap::new(),
            cloexec: alloc::collections::BTreeSet::new(),
            cwd: None,
            sig: Signals::new(),
            raised_by_self: 0,
            trace: unix::getenv("LINUX_TRACE") == Some("1"),
        }
    }

    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Carry out the call whose rax, rdi, rsi, rdx are `w`, and resume
    /// the program with its result (`exit` and `exit_group` end this
    /// process, and the program with it).
    pub fn call(&mut self, w: [u64; 4]) {
        let answer = self.dispatch(w);
        if self.trace {
            crate::log!(
                "[{}] {}({:#x}, {:#x}, {:#x}) = {:?}",
                unix::getpid(),
                w[0],
                w[1],
                w[2],
                w[3],
                answer
            );
        }
        let result = match answer {
            Ok(v) => v,
            Err(ALREADY_RESUMED) => return,
            // The new server after a fork: its program (the copy) is
            // already running; the original's answer is the parent's.
            Err(FORKED_CHILD) => return,
            Err(e) => (e.code() as i64).wrapping_neg() as u64,
        };
        // Signals that are due run now, on the way back (Linux delivers
        // on the return to user mode): the handler's frame holds the
        // call's result.
        // A write that found no reader has just sent SIGPIPE to this
        // process (the runtime's `write`): Linux delivers it before the
        // write returns, so look at once.
        self.sig.collect(answer == Err(errno::EPIPE));
        if self.sig.needs_program() {
            if let Ok(mut regs) = sys::foreign_regs(self.pid) {
                regs.rax = result;
                let restartable = answer == Err(errno::EINTR) && restartable(w[0]);
                self.resume_regs(regs, restartable.then_some(w[0]));
            }
            return;
        }
        if sys::foreign_resume(self.pid, result).is_err() {
            // The program is gone (killed): its end arrives as a message.
        }
    }

    /// The fourth to sixth arguments (r10, r8, r9), for the calls that
    /// have them: one more kernel call.
    fn more_args(&self) -> Result<[u64; 3]> {
        let r = sys::foreign_regs(self.pid).map_err(|_| errno::EIO)?;
        Ok([r.r10, r.r8, r.r9])
    }

    fn dispatch(&mut self, w: [u64; 4]) -> Result<u64> {
        let [number, a0, a1, a2] = w;
        let pid = self.pid;
        match number {
            nr::READ => self.read(a0, a1, a2),
            nr::WRITE => self.write(a0, a1, a2),
            nr::OPEN => self.open(AT_FDCWD as u64, a0, a1, a2),
            nr::OPENAT => {
                let [mode, ..] = self.more_args()?;
                self.open(a0, a1, a2, mode)
            }
            nr::CLOSE => {
                unix::close(fd(a0)?)?;
                self.closed(a0 as i32);
                Ok(0)
            }
            nr::STAT | nr::LSTAT => {
                let st = unix::stat(&mem::read_path(pid, a0)?)?;
                self.put_stat(a1, &st)
            }
            nr::FSTAT => {
                let st = unix::fstat(fd(a0)?)?;
                self.put_stat(a1, &st)
            }
            nr::NEWFSTATAT => {
                let [flags, ..] = self.more_args()?;
                let path = mem::read_path(pid, a1)?;
                // AT_EMPTY_PATH (0x1000): the descriptor itself.
                let st = if path.is_empty() && flags & 0x1000 != 0 {
                    unix::fstat(fd(a0)?)?
                } else {
                    unix::stat(&self.at_path(a0, &path)?)?
                };
                self.put_stat(a2, &st)
            }
            nr::LSEEK => unix::lseek(fd(a0)?, a1 as i64, a2),
            // One `pread`/`pwrite` of the runtime each: the descriptor's
            // offset is never moved, not even for a moment a process
            // sharing it could see (docs/filesystem.md, "Positional I/O
            // and a dead manager's window"); a pipe is `ESPIPE`, an offset
            // that is negative as Linux's `loff_t` `EINVAL`.
            nr::PREAD64 => {
                let [offset, ..] = self.more_args()?;
                self.pread(a0, a1, a2, offset)
            }
            nr::PWRITE64 => {
                let [offset, ..] = self.more_args()?;
                self.pwrite(a0, a1, a2, offset)
            }
            nr::READV | nr::WRITEV => self.vectored(number == nr::WRITEV, a0, a1, a2),
            // x86-64 passes the whole offset in `pos_l` (r10); `pos_h` is
            // for 32-bit callers and shifts out (Linux's `pos_from_hilo`).
            nr::PREADV | nr::PWRITEV => {
                let [offset, ..] = self.more_args()?;
                self.vectored_at(number == nr::PWRITEV, a0, a1, a2, Some(offset))
            }
            nr::ACCESS => unix::stat(&mem::read_path(pid, a0)?).map(|_| 0),
            nr::FACCESSAT | nr::FACCESSAT2 => {
                unix::stat(&self.at_path(a0, &mem::read_path(pid, a1)?)?).map(|_| 0)
            }
            nr::BRK => Ok(self.brk(a0)),
            nr::MMAP => {
                let [flags, file, offset] = self.more_args()?;
                self.mmap(a0, a1, flags, file, offset)
            }
            nr::MUNMAP => self.vm.unmap(pid, a0, a1),
            nr::MPROTECT => self.vm.protect(pid, a0, a1, a2),
            nr::MSYNC => self.vm.sync(pid, a0, a1, a2),
            // Advice only: nothing to do (MADV_DONTNEED's zeroing is not
            // done: docs/linux-abi.md).
            nr::MADVISE => Ok(0),
            nr::RT_SIGACTION => {
                let [size, ..] = self.more_args()?;
                if size != 8 {
                    return Err(errno::EINVAL);
                }
                self.rt_sigaction(a0, a1, a2)
            }
            nr::RT_SIGPROCMASK => {
                let [size, ..] = self.more_args()?;
                self.rt_sigprocmask(a0, a1, a2, size)
            }
            nr::RT_SIGPENDING => self.rt_sigpending(a0, a1),
            nr::RT_SIGSUSPEND => self.sigsuspend(Some((a0, a1))),
            nr::PAUSE => self.sigsuspend(None),
            nr::ALARM => self.alarm(a0),
            nr::GETITIMER => self.itimer(a0, None, a1),
            nr::SETITIMER => self.itimer(a0, Some(a1), a2),
            nr::SIGALTSTACK => self.sigaltstack(a0, a1),
            nr::IOCTL => self.ioctl(a0, a1, a2),
            nr::DUP => {
                let new = unix::dup(fd(a0)?)?;
                self.duplicated(a0 as i32, new, false);
                Ok(new as u64)
            }
            nr::DUP2 | nr::DUP3 => {
                if number == nr::DUP3 && (a0 == a1 || a2 & !O_CLOEXEC != 0) {
                    return Err(errno::EINVAL);
                }
                let new = unix::dup2(fd(a0)?, fd(a1)?)?;
                if new != a0 as i32 {
                    self.duplicated(a0 as i32, new, a2 & O_CLOEXEC != 0 && number == nr::DUP3);
                }
                Ok(new as u64)
            }
            nr::PIPE | nr::PIPE2 => {
                let (r, w) = unix::pipe()?;
                let cloexec = number == nr::PIPE2 && a1 & O_CLOEXEC != 0;
                self.set_cloexec(r, cloexec);
                self.set_cloexec(w, cloexec);
                let mut b = [0u8; 8];
                b[..4].copy_from_slice(&r.to_le_bytes());
                b[4..].copy_from_slice(&w.to_le_bytes());
                if let Err(e) = mem::write(pid, a0, &b) {
                    let _ = unix::close(r);
                    let _ = unix::close(w);
                    return Err(e);
                }
                Ok(0)
            }
            // O_NONBLOCK on a socket is the network server's to keep.
            nr::FCNTL if a1 == F_SETFL && crate::net::is_socket(a0) => crate::net::set_status_flags(a0, a2),
            nr::FCNTL if a1 == F_GETFL && crate::net::is_socket(a0) => crate::net::status_flags(a0),
            nr::FCNTL => match a1 {
                F_DUPFD | F_DUPFD_CLOEXEC => {
                    let new = self.dup_from(fd(a0)?, a2)?;
                    self.duplicated(a0 as i32, new as i32, a1 == F_DUPFD_CLOEXEC);
                    Ok(new)
                }
                F_GETFD => {
                    unix::fstat(fd(a0)?)?;
                    Ok(if self.cloexec.contains(&(a0 as i32)) { FD_CLOEXEC } else { 0 })
                }
                F_SETFD => {
                    unix::fstat(fd(a0)?)?;
                    self.set_cloexec(a0 as i32, a2 & FD_CLOEXEC != 0);
                    Ok(0)
                }
                F_SETFL => unix::fstat(fd(a0)?).map(|_| 0),
                F_GETFL => unix::fstat(fd(a0)?).map(|_| 2),
                _ => Err(errno::EINVAL),
            },
            nr::GETPID | nr::GETTID | nr::SET_TID_ADDRESS => Ok(unix::getpid()),
            nr::GETPPID => Ok(unix::getppid()),
            nr::GETUID | nr::GETEUID => Ok(unix::getuid() as u64),
            nr::GETGID | nr::GETEGID => Ok(unix::getgid() as u64),
            nr::GETPGRP => unix::getpgrp(),
            nr::GETPGID => {
                if a0 != 0 && a0 != unix::getpid() {
                    return Err(errno::ESRCH);
                }
                unix::getpgrp()
            }
            nr::SETPGID => unix::setpgid(a0, a1).map(|()| 0),
            nr::SETSID => Err(errno::EPERM),
            nr::EXIT | nr::EXIT_GROUP => {
                // Shared file mappings reach their files, as Linux's page
                // cache would write them back.
                self.vm.sync_all(pid);
                unix::exit((a0 & 0xff) as i32)
            }
            nr::KILL => {
                let target = a0 as i32 as i64;
                if target == unix::getpid() as i64 {
                    return self.raise(a1);
                }
                unix::kill(target, a1).map(|()| 0)?;
                // kill(0) and kill(-pgrp) may include this process: the
                // monitor made it pending here, and Linux delivers it
                // before the call returns.
                if target <= 0 {
                    self.sig.collect(true);
                }
                Ok(0)
            }
            // One thread per process: its tid is its pid.
            nr::TKILL if a0 == unix::getpid() => self.raise(a1),
            nr::TGKILL if a1 == unix::getpid() => self.raise(a2),
            nr::TKILL | nr::TGKILL => Err(errno::ESRCH),
            nr::RT_SIGRETURN => self.sigreturn(),
            nr::UNAME => self.uname(a0),
            nr::GETCWD => {
                let mut cwd = unix::getcwd()?.into_bytes();
                cwd.push(0);
                if cwd.len() as u64 > a1 {
                    return Err(errno::ERANGE);
                }
                mem::write(pid, a0, &cwd)?;
                Ok(cwd.len() as u64)
            }
            nr::CHDIR => {
                unix::chdir(&mem::read_path(pid, a0)?)?;
                self.cwd = None;
                Ok(0)
            }
            nr::FCHDIR => self.fchdir(a0),
            nr::CHOWN | nr::LCHOWN => {
                let path = mem::read_path(pid, a0)?;
                chown(&path, a1, a2)
            }
            nr::FCHOWNAT => {
                let [group, flags, _] = self.more_args()?;
                let path = mem::read_path(pid, a1)?;
                let path = if path.is_empty() && flags & AT_EMPTY_PATH != 0 {
                    self.paths.get(&fd(a0)?).cloned().ok_or(errno::EBADF)?
                } else {
                    self.at_path(a0, &path)?
                };
                chown(&path, a2, group)
            }
            nr::POLL => {
                self.poll(a0, a1, (a2 as i32 >= 0).then(|| (a2 as i32 as u64).saturating_mul(1_000_000)))
            }
            nr::PPOLL => {
                let [sigmask, size, ..] = self.more_args()?;
                self.ppoll(a0, a1, a2, sigmask, size)
            }
            nr::STATX => {
                let [_mask, buf, ..] = self.more_args()?;
                self.statx(a0, a1, a2, buf)
            }
            // No file system here keeps symbolic or hard links: Linux's
            // answer on such a file system (vfat) is EPERM.
            nr::SYMLINK | nr::SYMLINKAT | nr::LINK | nr::LINKAT => Err(errno::EPERM),
            // Nor can a file's times be set (there is no such request):
            // EPERM, after the checks Linux makes first.
            nr::UTIMENSAT => {
                if a1 != 0 {
                    let path = self.at_path(a0, &mem::read_path(pid, a1)?)?;
                    unix::stat(&path)?;
                } else {
                    unix::fstat(fd(a0)?)?;
                }
                Err(errno::EPERM)
            }
            nr::MKDIR => unix::mkdir(&mem::read_path(pid, a0)?, (a1 as u32) & 0o7777).map(|()| 0),
            nr::MKDIRAT => {
                unix::mkdir(&self.at_path(a0, &mem::read_path(pid, a1)?)?, (a2 as u32) & 0o7777).map(|()| 0)
            }
            nr::RMDIR => unix::rmdir(&mem::read_path(pid, a0)?).map(|()| 0),
            nr::UNLINK => unix::unlink(&mem::read_path(pid, a0)?).map(|()| 0),
            nr::UNLINKAT => {
                let path = self.at_path(a0, &mem::read_path(pid, a1)?)?;
                if a2 & AT_REMOVEDIR != 0 { unix::rmdir(&path) } else { unix::unlink(&path) }.map(|()| 0)
            }
            nr::RENAME => unix::rename(&mem::read_path(pid, a0)?, &mem::read_path(pid, a1)?).map(|()| 0),
            nr::RENAMEAT | nr::RENAMEAT2 => {
                let [new_path, ..] = self.more_args()?;
                let old = self.at_path(a0, &mem::read_path(pid, a1)?)?;
                let new = self.at_path(a2, &mem::read_path(pid, new_path)?)?;
                unix::rename(&old, &new).map(|()| 0)
            }
            nr::CHMOD => unix::chmod(&mem::read_path(pid, a0)?, a1 as u32).map(|()| 0),
            nr::FCHMODAT => unix::chmod(&self.at_path(a0, &mem::read_path(pid, a1)?)?, a2 as u32).map(|()| 0),
            // No symbolic links but /proc/self/exe (busybox runs its
            // applets through it): every other path names no link.
            nr::READLINK => self.readlink(&mem::read_path(pid, a0)?, a1, a2),
            nr::READLINKAT => {
                let [len, ..] = self.more_args()?;
                let path = self.at_path(a0, &mem::read_path(pid, a1)?)?;
                self.readlink(&path, a2, len)
            }
            // The monitor applies it to every open and mkdir (and keeps
            // it across exec, as Linux does).
            nr::UMASK => Ok(unix::umask(Some((a0 & 0o777) as u32)) as u64),
            nr::GETDENTS64 => self.getdents64(a0, a1, a2),
            nr::ARCH_PRCTL => self.arch_prctl(a0, a1),
            nr::CLOCK_GETTIME => {
                let ns = clock_ns(a0);
                let mut b = [0u8; 16];
                b[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
                b[8..].copy_from_slice(&(ns % 1_000_000_000).to_le_bytes());
                mem::write(pid, a1, &b)?;
                Ok(0)
            }
            nr::GETTIMEOFDAY => {
                if a0 != 0 {
                    let ns = clock_ns(0);
                    let mut b = [0u8; 16];
                    b[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
                    b[8..].copy_from_slice(&((ns % 1_000_000_000) / 1000).to_le_bytes());
                    mem::write(pid, a0, &b)?;
                }
                Ok(0)
            }
            nr::NANOSLEEP => self.sleep(CLOCK_MONOTONIC, false, a0, a1),
            nr::CLOCK_NANOSLEEP => {
                let [rem, ..] = self.more_args()?;
                // Other flag bits are ignored, as Linux ignores them.
                if a0 > CLOCK_BOOTTIME {
                    return Err(errno::EINVAL);
                }
                self.sleep(a0, a1 & TIMER_ABSTIME != 0, a2, rem)
            }
            nr::SYSINFO => {
                let mut b = [0u8; 112];
                b[..8].copy_from_slice(&(unix::clock_ns() / 1_000_000_000).to_le_bytes());
                b[32..40].copy_from_slice(&(512u64 << 20).to_le_bytes());
                b[104..108].copy_from_slice(&1u32.to_le_bytes());
                mem::write(pid, a0, &b)?;
                Ok(0)
            }
            nr::PRLIMIT64 => {
                let [old, ..] = self.more_args()?;
                if old != 0 {
                    // RLIM_INFINITY for both limits, except the stack.
                    let v = if a1 == 3 { abi::layout::USER_STACK_BYTES } else { u64::MAX };
                    let mut b = [0u8; 16];
                    b[..8].copy_from_slice(&v.to_le_bytes());
                    b[8..].copy_from_slice(&v.to_le_bytes());
                    mem::write(pid, old, &b)?;
                }
                Ok(0)
            }
            nr::GETRANDOM => {
                let len = a1.min(256) as usize;
                let mut x = clock_ns(1) | 1;
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                mem::write(pid, a0, &bytes)?;
                Ok(len as u64)
            }
            // rseq: glibc registers it and goes on without it.
            nr::RSEQ => Err(errno::ENOSYS),
            // One thread per process: no robust futex list to keep.
            nr::SET_ROBUST_LIST => Ok(0),
            // No process attributes (PR_SET_NAME...): glibc goes on.
            nr::PRCTL => Err(errno::EINVAL),
            nr::TIME => {
                let t = unix::time();
                if a0 != 0 {
                    mem::write(pid, a0, &t.to_le_bytes())?;
                }
                Ok(t)
            }
            nr::SENDFILE => {
                // sendfile(out, in, offset, count): from the current
                // position only (an offset pointer: EINVAL, and programs
                // fall back to read and write).
                let [count, ..] = self.more_args()?;
                if a2 != 0 {
                    return Err(errno::EINVAL);
                }
                let mut data = vec![0u8; (count as usize).min(mem::MAX_TRANSFER_BYTES)];
                let n = unix::read(fd(a1)?, &mut data)?;
                unix::write(fd(a0)?, &data[..n]).map(|n| n as u64)
            }
            nr::FORK | nr::VFORK => self.fork(),
            nr::CLONE => {
                // Fork semantics only: a new thread (CLONE_VM) is not
                // supported. The exit signal is in the low byte.
                const CLONE_VM: u64 = 0x100;
                const CLONE_THREAD: u64 = 0x10000;
                if a0 & (CLONE_VM | CLONE_THREAD) != 0 && a0 & 0x4000 == 0 {
                    return Err(errno::ENOSYS);
                }
                self.fork()
            }
            nr::EXECVE => self.execve(a0, a1, a2),
            nr::WAIT4 => {
                let [options, ..] = self.more_args()?;
                const WNOHANG: u64 = 1;
                // pid_t is 32 bits: -1 arrives as 0xffff_ffff.
                let target = a0 as i32 as i64;
                let done = if options & WNOHANG != 0 || !self.sig.interruptible() {
                    unix::waitpid(target, options & WNOHANG != 0)?
                } else {
                    // In rounds, so that a signal can interrupt it.
                    self.block_on(None, |_| unix::waitpid(target, true))?
                };
                match done {
                    None => Ok(0),
                    Some((child, status)) => {
                        if a1 != 0 {
                            mem::write(pid, a1, &(status.raw as u32).to_le_bytes())?;
                        }
                        Ok(child)
                    }
                }
            }
            // Sockets, poll, CPU affinity: net.rs.
            n if crate::net::handles(n) => crate::net::call(pid, n, a0, a1, a2),
            _ => {
                crate::log!("unsupported call {number} (ENOSYS)");
                Err(errno::ENOSYS)
            }
        }
    }

    /// `fork`: the program's copy (`foreign_fork`), this server's copy
    /// (the UNIX `fork`, through the monitor), and the first handed to the
    /// second (`foreign_give`). The copy returns 0, the original the
    /// child's pid.
    fn fork(&mut self) -> Result<u64> {
        let copy = sys::foreign_fork(self.pid).map_err(|_| errno::EAGAIN)?;
        match unix::fork() {
            Ok(0) => {
                // The new server: it serves the copy, and hears of its end.
                self.pid = copy;
                self.sig.forked();
                self.raised_by_self = 0;
                let _ = sys::set_exit_queue(self.queue);
                Err(FORKED_CHILD)
            }
            Ok(child) => {
                let twin = protocols::unix::pid::to_kernel(child).ok_or(errno::EAGAIN)?;
                if let Err(e) = sys::foreign_give(copy, twin, self.queue) {
                    crate::log!("fork: foreign_give: {}", e.name());
                    let _ = sys::kill(copy);
                    let _ = unix::kill(child as i64, 9);
                    return Err(errno::EAGAIN);
                }
                // The copy is the twin's child now: it ends with the twin.
                Ok(child)
            }
            Err(e) => {
                let _ = sys::kill(copy);
                Err(e)
            }
        }
    }

    /// `execve`: read the path, argv and envp, then this server execs the
    /// new program in its place (the monitor runs a Linux program through
    /// a new Linux server). The old program ends first: a failed exec
    /// ends the process with 127, as a shell does for a missing command.
    fn execve(&mut self, path: u64, argv: u64, envp: u64) -> Result<u64> {
        let mut path = mem::read_path(self.pid, path)?;
        if path == SELF_EXE {
            path = self.exe.clone();
        }
        let argv = self.string_array(argv)?;
        let envp = self.string_array(envp)?;
        let st = unix::stat(&path)?;
        if !mode::is_reg(st.mode) {
            return Err(errno::EACCES);
        }
        let _ = sys::kill(self.pid);
        let argv: Vec<&str> = argv.iter().map(alloc::string::String::as_str).collect();
        let envp: Vec<&str> = envp.iter().map(alloc::string::String::as_str).collect();
        self.close_on_exec();
        let e = unix::execve(&path, &argv, &envp);
        crate::log!("execve {path}: errno {}", e.code());
        unix::exit(127)
    }

    /// A NULL-terminated array of string pointers (argv, envp).
    fn string_array(&self, at: u64) -> Result<Vec<alloc::string::String>> {
        const MAX_STRINGS: u64 = 1024;
        let mut out = Vec::new();
        if at == 0 {
            return Ok(out);
        }
        for i in 0..MAX_STRINGS {
            let p = mem::read(self.pid, at.checked_add(i * 8).ok_or(errno::EFAULT)?, 8)?;
            let p = u64::from_le_bytes(p[..8].try_into().map_err(|_| errno::EFAULT)?);
            if p == 0 {
                return Ok(out);
            }
            out.push(mem::read_path(self.pid, p)?);
        }
        Err(errno::E2BIG)
    }

    fn readlink(&self, path: &str, buf: u64, len: u64) -> Result<u64> {
        if path != SELF_EXE {
            return unix::stat(path).and(Err(errno::EINVAL));
        }
        let n = self.exe.len().min(len as usize);
        mem::write(self.pid, buf, &self.exe.as_bytes()[..n])?;
        Ok(n as u64)
    }

    fn read(&mut self, f: u64, buf: u64, len: u64) -> Result<u64> {
        let f = fd(f)?;
        let len = (len as usize).min(mem::MAX_TRANSFER_BYTES);
        check_range(buf, len as u64)?;
        if self.sig.interruptible() && len > 0 {
            // A pipe or terminal may keep a read waiting: wait here, in
            // rounds a signal can interrupt, until it has something
            // (a file is always ready, and costs no message).
            self.block_on(None, |_| {
                let mut p = [PollFd { fd: f, events: POLLIN, revents: 0 }];
                unix::poll(&mut p, Some(0))?;
                Ok((p[0].revents != 0).then_some(()))
            })?;
        }
        let mut data = vec![0u8; len];
        let n = unix::read(f, &mut data)?;
        mem::write(self.pid, buf, &data[..n])?;
        Ok(n as u64)
    }

    fn write(&mut self, f: u64, buf: u64, len: u64) -> Result<u64> {
        let f = fd(f)?;
        let len = (len as usize).min(mem::MAX_TRANSFER_BYTES);
        check_range(buf, len as u64)?;
        let data = mem::read(self.pid, buf, len)?;
        unix::write(f, &data).map(|n| n as u64)
    }

    /// `pread64`: `unix::pread` into a buffer of the server's, then copied
    /// to the program's.
    fn pread(&mut self, f: u64, buf: u64, len: u64, offset: u64) -> Result<u64> {
        // Linux's order (`ksys_pread64`): the offset before the descriptor.
        if offset > i64::MAX as u64 {
            return Err(errno::EINVAL);
        }
        let f = fd(f)?;
        let len = (len as usize).min(mem::MAX_TRANSFER_BYTES);
        check_range(buf, len as u64)?;
        let mut data = vec![0u8; len];
        let n = unix::pread(f, &mut data, offset)?;
        mem::write(self.pid, buf, &data[..n])?;
        Ok(n as u64)
    }

    /// `pwrite64`: the program's bytes, then `unix::pwrite`.
    fn pwrite(&mut self, f: u64, buf: u64, len: u64, offset: u64) -> Result<u64> {
        if offset > i64::MAX as u64 {
            return Err(errno::EINVAL);
        }
        let f = fd(f)?;
        let len = (len as usize).min(mem::MAX_TRANSFER_BYTES);
        check_range(buf, len as u64)?;
        let data = mem::read(self.pid, buf, len)?;
        unix::pwrite(f, &data, offset).map(|n| n as u64)
    }

    /// `readv` and `writev`: one transfer per iovec entry, stopping at the
    /// first short one.
    fn vectored(&mut self, is_write: bool, f: u64, iov: u64, count: u64) -> Result<u64> {
        self.vectored_at(is_write, f, iov, count, None)
    }

    /// `readv`/`writev` (`at` None), or `preadv`/`pwritev` at `at`: each
    /// entry a `pread`/`pwrite` at the offset plus what the entries before
    /// it moved, the descriptor's offset untouched.
    fn vectored_at(&mut self, is_write: bool, f: u64, iov: u64, count: u64, at: Option<u64>) -> Result<u64> {
        if let Some(offset) = at {
            // Linux's order (`do_preadv`): the offset, the descriptor, a
            // descriptor without one (`ESPIPE`), then the vector. An empty
            // transfer checks the last two and moves nothing.
            if offset > i64::MAX as u64 {
                return Err(errno::EINVAL);
            }
            let f = fd(f)?;
            if is_write {
                unix::pwrite(f, &[], offset)?
            } else {
                unix::pread(f, &mut [], offset)?
            };
        }
        if count > IOV_MAX {
            return Err(errno::EINVAL);
        }
        let raw = mem::read(self.pid, iov, (count * 16) as usize)?;
        let mut total = 0u64;
        for entry in raw.chunks_exact(16) {
            let base = u64::from_le_bytes(entry[..8].try_into().unwrap_or_default());
            let len = u64::from_le_bytes(entry[8..].try_into().unwrap_or_default());
            if len == 0 {
                continue;
            }
            let r = match (is_write, at) {
                (true, None) => self.write(f, base, len),
                (false, None) => self.read(f, base, len),
                (true, Some(offset)) => self.pwrite(f, base, len, offset.saturating_add(total)),
                (false, Some(offset)) => self.pread(f, base, len, offset.saturating_add(total)),
            };
            match r {
                Ok(n) => {
                    total += n;
                    if n < len {
                        break;
                    }
                }
                Err(e) if total == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(total)
    }

    fn open(&mut self, dir: u64, path: u64, flags: u64, mode: u64) -> Result<u64> {
        let path = self.at_path(dir, &mem::read_path(self.pid, path)?)?;
        // O_CLOEXEC is kept here (fscalls.rs); O_NOCTTY, O_NONBLOCK,
        // O_LARGEFILE: nothing to do; the rest are Ridgeback's own values
        // (protocols::unix).
        let ridgeback_flags = flags & 0o3_003_303 & !O_CLOEXEC;
        let f = unix::open(&path, ridgeback_flags, (mode & 0o7777) as u32)?;
        self.dir_index.remove(&f);
        let full = self.absolute(&path)?;
        self.opened(f, full, flags);
        Ok(f as u64)
    }

    fn dup_from(&mut self, f: i32, lowest: u64) -> Result<u64> {
        // The lowest free descriptor at or above `lowest`.
        let mut taken = Vec::new();
        let result = loop {
            match unix::dup(f) {
                Ok(d) if (d as u64) < lowest => taken.push(d),
                Ok(d) => break Ok(d as u64),
                Err(e) => break Err(e),
            }
        };
        for d in taken {
            let _ = unix::close(d);
        }
        result
    }

    fn put_stat(&self, addr: u64, st: &Stat) -> Result<u64> {
        let mut b = [0u8; STAT_BYTES];
        let put =
            |b: &mut [u8; STAT_BYTES], at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        put(&mut b, 0, 1);
        put(&mut b, 8, st.ino);
        put(&mut b, 16, st.nlink as u64);
        b[24..28].copy_from_slice(&st.mode.to_le_bytes());
        b[28..32].copy_from_slice(&st.uid.to_le_bytes());
        b[32..36].copy_from_slice(&st.gid.to_le_bytes());
        put(&mut b, 48, st.size_bytes);
        put(&mut b, 56, PAGE_SIZE);
        put(&mut b, 64, st.size_bytes.div_ceil(512));
        for at in [72, 88, 104] {
            put(&mut b, at, st.mtime_ns / 1_000_000_000);
            put(&mut b, at + 8, st.mtime_ns % 1_000_000_000);
        }
        mem::write(self.pid, addr, &b)?;
        Ok(0)
    }

    fn brk(&mut self, want: u64) -> u64 {
        if (USER_HEAP_BASE..=BRK_LIMIT).contains(&want) {
            // Shrinking gives the whole pages above the new break back to
            // the system; grown again, they come back zero-filled, as on
            // Linux.
            let (keep, had) = (want.next_multiple_of(PAGE_SIZE), self.brk.next_multiple_of(PAGE_SIZE));
            if keep < had {
                let _ = sys::foreign_unmap(self.pid, keep, had - keep);
            }
            self.brk = want;
        }
        self.brk
    }

    fn mmap(&mut self, addr: u64, len: u64, flags: u64, file: u64, offset: u64) -> Result<u64> {
        if len == 0 || !offset.is_multiple_of(PAGE_SIZE) {
            return Err(errno::EINVAL);
        }
        let len = len.checked_next_multiple_of(PAGE_SIZE).ok_or(errno::ENOMEM)?;
        let at = if flags & MAP_FIXED != 0 {
            // Only inside the region this server hands out, zeroed again.
            if !addr.is_multiple_of(PAGE_SIZE) || addr < BRK_LIMIT || addr.saturating_add(len) > MMAP_END {
                return Err(errno::EINVAL);
            }
            // What was there goes (its pages back to the system: they
            // come back zero-filled when touched).
            self.vm.unmap(self.pid, addr, len)?;
            self.vm.claim(addr, len);
            addr
        } else {
            self.vm.take(len)?
        };
        if flags & MAP_ANONYMOUS == 0 {
            // A copy of the file's bytes; a MAP_SHARED one goes back to
            // the file at msync, munmap and exit (vmem.rs).
            let f = fd(file)?;
            let was = unix::lseek(f, 0, unix::SEEK_CUR)?;
            unix::lseek(f, offset as i64, unix::SEEK_SET)?;
            let mut buf = vec![0u8; 64 * 1024];
            let mut done = 0u64;
            let result = loop {
                if done >= len {
                    break Ok(());
                }
                let want = ((len - done) as usize).min(buf.len());
                match unix::read(f, &mut buf[..want]) {
                    Ok(0) => break Ok(()),
                    Ok(n) => {
                        if let Err(e) = mem::write(self.pid, at + done, &buf[..n]) {
                            break Err(e);
                        }
                        done += n as u64;
                    }
                    Err(e) => break Err(e),
                }
            };
            let _ = unix::lseek(f, was as i64, unix::SEEK_SET);
            result?;
            if flags & MAP_TYPE == MAP_SHARED || flags & MAP_TYPE == MAP_SHARED_VALIDATE {
                self.vm.add_shared(at, len, f, offset)?;
            }
        }
        Ok(at)
    }

    fn ioctl(&mut self, f: u64, request: u64, arg: u64) -> Result<u64> {
        let st = unix::fstat(fd(f)?)?;
        let is_tty = st.mode & mode::S_IFMT == mode::S_IFCHR;
        if !is_tty {
            return Err(errno::ENOTTY);
        }
        match request {
            TIOCGWINSZ => {
                let mut b = [0u8; 8];
                b[..2].copy_from_slice(&24u16.to_le_bytes());
                b[2..4].copy_from_slice(&80u16.to_le_bytes());
                mem::write(self.pid, arg, &b)?;
                Ok(0)
            }
            TCGETS => {
                // ICRNL; OPOST|ONLCR; B38400|CS8|CREAD; ISIG|ICANON|ECHO|ECHOE|ECHOK|IEXTEN.
                let mut t = [0u8; TERMIOS_BYTES];
                t[0..4].copy_from_slice(&0o400u32.to_le_bytes());
                t[4..8].copy_from_slice(&0o5u32.to_le_bytes());
                t[8..12].copy_from_slice(&0o277u32.to_le_bytes());
                t[12..16].copy_from_slice(&0o105073u32.to_le_bytes());
                mem::write(self.pid, arg, &t)?;
                Ok(0)
            }
            TCSETS | TCSETSW | TCSETSF => mem::read(self.pid, arg, TERMIOS_BYTES).map(|_| 0),
            TIOCGPGRP => {
                let g = unix::getpgrp()?;
                mem::write(self.pid, arg, &(g as u32).to_le_bytes())?;
                Ok(0)
            }
            TIOCSPGRP => {
                let g = mem::read(self.pid, arg, 4)?;
                unix::tcsetpgrp(fd(f)?, u32::from_le_bytes([g[0], g[1], g[2], g[3]]) as u64).map(|()| 0)
            }
            _ => Err(errno::EINVAL),
        }
    }

    fn uname(&self, addr: u64) -> Result<u64> {
        let mut b = [0u8; 65 * 6];
        for (i, s) in
            ["Linux", "ridgeback", "6.1.0-ridgeback", "#1 Ridgeback", "x86_64", "(none)"].iter().enumerate()
        {
            b[i * 65..i * 65 + s.len()].copy_from_slice(s.as_bytes());
        }
        mem::write(self.pid, addr, &b)?;
        Ok(0)
    }

    fn getdents64(&mut self, f: u64, buf: u64, len: u64) -> Result<u64> {
        let f = fd(f)?;
        let len = (len as usize).min(64 * 1024);
        let mut out = Vec::new();
        let mut index = *self.dir_index.get(&f).unwrap_or(&0);
        while let Some(e) = unix::readdir(f, index)? {
            let reclen = (19 + e.name.len() + 1).next_multiple_of(8);
            if out.len() + reclen > len {
                if out.is_empty() {
                    return Err(errno::EINVAL);
                }
                break;
            }
            let dtype: u8 = match e.mode & mode::S_IFMT {
                mode::S_IFDIR => 4,
                mode::S_IFCHR => 2,
                mode::S_IFBLK => 6,
                mode::S_IFIFO => 1,
                mode::S_IFSOCK => 12,
                _ => 8,
            };
            let start = out.len();
            out.resize(start + reclen, 0);
            out[start..start + 8].copy_from_slice(&e.ino.max(1).to_le_bytes());
            out[start + 8..start + 16].copy_from_slice(&(index + 1).to_le_bytes());
            out[start + 16..start + 18].copy_from_slice(&(reclen as u16).to_le_bytes());
            out[start + 18] = dtype;
            out[start + 19..start + 19 + e.name.len()].copy_from_slice(e.name.as_bytes());
            index += 1;
        }
        mem::write(self.pid, buf, &out)?;
        self.dir_index.insert(f, index);
        Ok(out.len() as u64)
    }

    fn arch_prctl(&mut self, code: u64, addr: u64) -> Result<u64> {
        match code {
            ARCH_SET_FS => {
                if addr >= abi::layout::USER_END {
                    return Err(errno::EPERM);
                }
                let mut regs = sys::foreign_regs(self.pid).map_err(|_| errno::EIO)?;
                regs.fs_base = addr;
                // The whole register set goes back: the call's result
                // (0) in rax, rcx and r11 as `syscall` left them.
                regs.rax = 0;
                sys::foreign_resume_regs(self.pid, &regs).map_err(|_| errno::EIO)?;
                Err(ALREADY_RESUMED)
            }
            ARCH_GET_FS => {
                let regs = sys::foreign_regs(self.pid).map_err(|_| errno::EIO)?;
                mem::write(self.pid, addr, &regs.fs_base.to_le_bytes())?;
                Ok(0)
            }
            _ => Err(errno::EINVAL),
        }
    }

    /// `nanosleep` and `clock_nanosleep`: until the time `ts` names on
    /// `clock` (absolute or from now), or a signal that needs the program
    /// (EINTR, the time left written to `rem` for a relative sleep).
    fn sleep(&mut self, clock: u64, absolute: bool, ts: u64, rem: u64) -> Result<u64> {
        let b = mem::read(self.pid, ts, 16)?;
        let s = u64::from_le_bytes(b[..8].try_into().unwrap_or_default());
        let ns = u64::from_le_bytes(b[8..].try_into().unwrap_or_default());
        if ns >= 1_000_000_000 || (s as i64) < 0 {
            return Err(errno::EINVAL);
        }
        let want_ns = s.saturating_mul(1_000_000_000).saturating_add(ns);
        let now = self.sig.now_ns();
        let length_ns = if absolute { want_ns.saturating_sub(clock_ns(clock)) } else { want_ns };
        if !self.sig.interruptible() {
            unix::sleep_ns(length_ns);
            return Ok(0);
        }
        let deadline = now.saturating_add(length_ns);
        match self.block_on(Some(deadline), |_| Ok(None::<()>)) {
            Err(e) if e == errno::EINTR && !absolute && rem != 0 => {
                let left = deadline.saturating_sub(self.sig.now_ns());
                let mut r = [0u8; 16];
                r[..8].copy_from_slice(&(left / 1_000_000_000).to_le_bytes());
                r[8..].copy_from_slice(&(left % 1_000_000_000).to_le_bytes());
                mem::write(self.pid, rem, &r)?;
                Err(e)
            }
            r => r.map(|_| 0),
        }
    }
}

/// Marks a call already answered with `foreign_resume_regs`.
pub(crate) const ALREADY_RESUMED: Errno = Errno(u64::MAX);
/// Marks the new server after `fork`: nothing to answer.
const FORKED_CHILD: Errno = Errno(u64::MAX - 1);

/// Calls Linux restarts after a `SA_RESTART` handler when a signal
/// interrupted them (signal(7), "Interruption of system calls").
fn restartable(number: u64) -> bool {
    matches!(
        number,
        nr::READ | nr::READV | nr::WRITE | nr::WRITEV | nr::PREAD64 | nr::WAIT4 | nr::OPEN | nr::OPENAT
    )
}

/// A Linux descriptor argument as a Ridgeback one.
pub(crate) fn fd(raw: u64) -> Result<i32> {
    // An `int`: only the low 32 bits are the argument.
    let f = raw as i32;
    if f < 0 { Err(errno::EBADF) } else { Ok(f) }
}

/// A buffer the program names must lie in the user half.
fn check_range(addr: u64, len: u64) -> Result<()> {
    match addr.checked_add(len) {
        Some(end) if end <= abi::layout::USER_END => Ok(()),
        _ => Err(errno::EFAULT),
    }
}

/// `chown(path, owner, group)`: −1 (as a 32-bit id) keeps that id.
fn chown(path: &str, owner: u64, group: u64) -> Result<u64> {
    let (owner, group) = (owner as u32, group as u32);
    let (mut uid, mut gid) = (owner, group);
    if owner == u32::MAX || group == u32::MAX {
        let st = unix::stat(path)?;
        if owner == u32::MAX {
            uid = st.uid;
        }
        if group == u32::MAX {
            gid = st.gid;
        }
    }
    unix::chown(path, uid, gid).map(|()| 0)
}

/// The clock `id` in nanoseconds: CLOCK_REALTIME (0) is seconds since the
/// epoch (`unix::time`), the others time since boot.
fn clock_ns(id: u64) -> u64 {
    let since_boot = unix::clock_ns();
    if id == 0 { unix::time().saturating_mul(1_000_000_000) + since_boot % 1_000_000_000 } else { since_boot }
}

const _: () = assert!(CLOCK_TICKS_PER_S > 0);
