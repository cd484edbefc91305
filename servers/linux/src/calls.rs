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
use crate::start::{CLOCK_TICKS_PER_S, Program};
use abi::Pid;
use abi::layout::{PAGE_SIZE, USER_HEAP_BASE, USER_HEAP_MAX_BYTES};
use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::{Errno, Stat, errno, mode};
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
}

/// Bytes below the interrupted stack pointer a signal frame leaves alone
/// (the System V red zone).
const RED_ZONE_BYTES: u64 = 128;
/// `struct ucontext` (x86-64): flags, link, stack (24 bytes), the
/// machine context (`struct sigcontext`, 256 bytes), the signal mask.
const UCONTEXT_BYTES: u64 = 8 + 8 + 24 + 256 + 8;
/// Where the machine context starts in the `ucontext`.
const MCONTEXT_AT: usize = 40;
/// The restorer's address, the `ucontext`, the `siginfo` (128 bytes).
const SIGFRAME_BYTES: u64 = 8 + UCONTEXT_BYTES + 128;
/// `struct sigcontext`'s first words, in order (the rest, fpstate and
/// the reserved words, stay 0: no FP state is saved, docs/linux-abi.md).
const SIGCONTEXT_REGS: [&str; 18] = [
    "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rdi", "rsi", "rbp", "rbx", "rdx", "rax", "rcx",
    "rsp", "rip", "eflags",
];

fn sigcontext_words(r: &abi::foreign::Regs) -> [u64; 18] {
    [
        r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rdi, r.rsi, r.rbp, r.rbx, r.rdx, r.rax,
        r.rcx, r.rsp, r.rip, r.rflags,
    ]
}

/// The one symbolic link there is: the program's own file.
const SELF_EXE: &str = "/proc/self/exe";
/// `openat`'s "relative to the working directory".
const AT_FDCWD: i64 = -100;
const AT_REMOVEDIR: u64 = 0x200;
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

type Result<T> = core::result::Result<T, Errno>;

pub struct Linux {
    pid: Pid,
    /// The program's file (what `/proc/self/exe` names).
    exe: alloc::string::String,
    /// This server's queue for the program's calls (a forked copy's too).
    queue: u32,
    brk: u64,
    /// The mmap region's addresses and shared file mappings.
    vm: crate::vmem::Space,
    /// `getdents64`'s position in each open directory.
    dir_index: BTreeMap<i32, u64>,
    /// Signal actions set (kept, not yet delivered: docs/linux-abi.md).
    sigactions: BTreeMap<u64, [u8; 32]>,
    umask: u64,
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
            sigactions: BTreeMap::new(),
            umask: 0o022,
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
                self.dir_index.remove(&(a0 as i32));
                unix::close(fd(a0)?).map(|()| 0)
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
                    unix::stat(&at_path(a0, &path)?)?
                };
                self.put_stat(a2, &st)
            }
            nr::LSEEK => unix::lseek(fd(a0)?, a1 as i64, a2),
            nr::PREAD64 => {
                let [offset, ..] = self.more_args()?;
                let f = fd(a0)?;
                let was = unix::lseek(f, 0, unix::SEEK_CUR)?;
                unix::lseek(f, offset as i64, unix::SEEK_SET)?;
                let r = self.read(a0, a1, a2);
                unix::lseek(f, was as i64, unix::SEEK_SET)?;
                r
            }
            nr::READV | nr::WRITEV => self.vectored(number == nr::WRITEV, a0, a1, a2),
            nr::ACCESS => unix::stat(&mem::read_path(pid, a0)?).map(|_| 0),
            nr::FACCESSAT | nr::FACCESSAT2 => unix::stat(&at_path(a0, &mem::read_path(pid, a1)?)?).map(|_| 0),
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
            nr::RT_SIGACTION => self.sigaction(a0, a1, a2),
            nr::RT_SIGPROCMASK => {
                if a2 != 0 {
                    mem::write(pid, a2, &[0u8; 8])?;
                }
                Ok(0)
            }
            nr::SIGALTSTACK => {
                if a1 != 0 {
                    // ss_sp, ss_flags = SS_DISABLE (2), ss_size.
                    let mut old = [0u8; 24];
                    old[8..12].copy_from_slice(&2u32.to_le_bytes());
                    mem::write(pid, a1, &old)?;
                }
                Ok(0)
            }
            nr::IOCTL => self.ioctl(a0, a1, a2),
            nr::DUP => unix::dup(fd(a0)?).map(|f| f as u64),
            nr::DUP2 => unix::dup2(fd(a0)?, fd(a1)?).map(|f| f as u64),
            nr::DUP3 => {
                if a0 == a1 {
                    return Err(errno::EINVAL);
                }
                unix::dup2(fd(a0)?, fd(a1)?).map(|f| f as u64)
            }
            nr::PIPE | nr::PIPE2 => {
                let (r, w) = unix::pipe()?;
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
                F_DUPFD | F_DUPFD_CLOEXEC => self.dup_from(fd(a0)?, a2),
                F_GETFD | F_SETFD | F_SETFL => unix::fstat(fd(a0)?).map(|_| 0),
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
                unix::kill(target, a1).map(|()| 0)
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
            nr::CHDIR => unix::chdir(&mem::read_path(pid, a0)?).map(|()| 0),
            nr::MKDIR => {
                unix::mkdir(&mem::read_path(pid, a0)?, (a1 as u32) & !(self.umask as u32)).map(|()| 0)
            }
            nr::MKDIRAT => {
                unix::mkdir(&at_path(a0, &mem::read_path(pid, a1)?)?, (a2 as u32) & !(self.umask as u32))
                    .map(|()| 0)
            }
            nr::RMDIR => unix::rmdir(&mem::read_path(pid, a0)?).map(|()| 0),
            nr::UNLINK => unix::unlink(&mem::read_path(pid, a0)?).map(|()| 0),
            nr::UNLINKAT => {
                let path = at_path(a0, &mem::read_path(pid, a1)?)?;
                if a2 & AT_REMOVEDIR != 0 { unix::rmdir(&path) } else { unix::unlink(&path) }.map(|()| 0)
            }
            nr::RENAME => unix::rename(&mem::read_path(pid, a0)?, &mem::read_path(pid, a1)?).map(|()| 0),
            nr::RENAMEAT | nr::RENAMEAT2 => {
                let [new_path, ..] = self.more_args()?;
                let old = at_path(a0, &mem::read_path(pid, a1)?)?;
                let new = at_path(a2, &mem::read_path(pid, new_path)?)?;
                unix::rename(&old, &new).map(|()| 0)
            }
            nr::CHMOD => unix::chmod(&mem::read_path(pid, a0)?, a1 as u32).map(|()| 0),
            nr::FCHMODAT => unix::chmod(&at_path(a0, &mem::read_path(pid, a1)?)?, a2 as u32).map(|()| 0),
            // No symbolic links but /proc/self/exe (busybox runs its
            // applets through it): every other path names no link.
            nr::READLINK => self.readlink(&mem::read_path(pid, a0)?, a1, a2),
            nr::READLINKAT => {
                let [len, ..] = self.more_args()?;
                self.readlink(&at_path(a0, &mem::read_path(pid, a1)?)?, a2, len)
            }
            nr::UMASK => Ok(core::mem::replace(&mut self.umask, a0 & 0o777)),
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
            nr::NANOSLEEP => self.sleep(a0),
            nr::CLOCK_NANOSLEEP => {
                // Relative sleeps only (flags in a1; TIMER_ABSTIME = 1).
                if a1 & 1 != 0 {
                    return Err(errno::EINVAL);
                }
                self.sleep(a2)
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
                match unix::waitpid(a0 as i32 as i64, options & WNOHANG != 0)? {
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

    /// A signal the program sends itself (`kill(getpid())`, `raise`):
    /// its handler runs on a Linux signal frame (`rt_sigframe`: the
    /// restorer's address, a `ucontext` holding every register, a
    /// `siginfo`), and `rt_sigreturn` puts the registers back. With no
    /// handler, the default: ignored for SIGCHLD, SIGURG and SIGWINCH,
    /// else the monitor ends the process, as for a signal from outside.
    fn raise(&mut self, sig: u64) -> Result<u64> {
        const SIG_IGN: u64 = 1;
        const SA_RESTORER: u64 = 0x0400_0000;
        if sig == 0 {
            return Ok(0);
        }
        if sig > 64 {
            return Err(errno::EINVAL);
        }
        let action = self.sigactions.get(&sig).copied().unwrap_or([0; 32]);
        let word = |i: usize| u64::from_le_bytes(action[i * 8..i * 8 + 8].try_into().unwrap_or_default());
        let (handler, flags, restorer) = (word(0), word(1), word(2));
        if handler == SIG_IGN {
            return Ok(0);
        }
        if handler == 0 || flags & SA_RESTORER == 0 {
            if matches!(sig, 17 | 23 | 28) {
                return Ok(0);
            }
            return unix::kill(unix::getpid() as i64, sig).map(|()| 0);
        }
        let mut regs = sys::foreign_regs(self.pid).map_err(|_| errno::EIO)?;
        regs.rax = 0; // kill's own result, when the handler returns
        let frame = ((regs.rsp.wrapping_sub(RED_ZONE_BYTES + SIGFRAME_BYTES)) & !15).wrapping_sub(8);
        let uc = frame + 8;
        let info = uc + UCONTEXT_BYTES;
        let mut bytes = vec![0u8; SIGFRAME_BYTES as usize];
        bytes[..8].copy_from_slice(&restorer.to_le_bytes());
        let m = &mut bytes[8 + MCONTEXT_AT..8 + MCONTEXT_AT + 8 * SIGCONTEXT_REGS.len()];
        for (i, v) in sigcontext_words(&regs).iter().enumerate() {
            m[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        let si = (8 + UCONTEXT_BYTES) as usize;
        bytes[si..si + 4].copy_from_slice(&(sig as u32).to_le_bytes());
        bytes[si + 8..si + 12].copy_from_slice(&(-6i32).to_le_bytes()); // SI_TKILL
        bytes[si + 16..si + 20].copy_from_slice(&(unix::getpid() as u32).to_le_bytes());
        bytes[si + 20..si + 24].copy_from_slice(&unix::getuid().to_le_bytes());
        mem::write(self.pid, frame, &bytes)?;
        let mut run = regs;
        run.rip = handler;
        run.rsp = frame;
        run.rdi = sig;
        run.rsi = info;
        run.rdx = uc;
        run.rax = 0;
        run.rflags &= !0x400; // DF clear on entry, as the ABI wants
        sys::foreign_resume_regs(self.pid, &run).map_err(|_| errno::EFAULT)?;
        Err(ALREADY_RESUMED)
    }

    /// `rt_sigreturn`: the registers saved in the `ucontext` at the stack
    /// pointer (the handler's `ret` popped the restorer's address).
    fn sigreturn(&mut self) -> Result<u64> {
        let regs = sys::foreign_regs(self.pid).map_err(|_| errno::EIO)?;
        let raw = mem::read(self.pid, regs.rsp + MCONTEXT_AT as u64, 8 * SIGCONTEXT_REGS.len())?;
        let w: Vec<u64> =
            raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())).collect();
        let get = |name: &str| SIGCONTEXT_REGS.iter().position(|&n| n == name).map_or(0, |i| w[i]);
        let back = abi::foreign::Regs {
            r8: get("r8"),
            r9: get("r9"),
            r10: get("r10"),
            r11: get("r11"),
            r12: get("r12"),
            r13: get("r13"),
            r14: get("r14"),
            r15: get("r15"),
            rdi: get("rdi"),
            rsi: get("rsi"),
            rbp: get("rbp"),
            rbx: get("rbx"),
            rdx: get("rdx"),
            rax: get("rax"),
            rcx: get("rcx"),
            rsp: get("rsp"),
            rip: get("rip"),
            rflags: get("eflags"),
            fs_base: regs.fs_base,
        };
        // A frame that cannot be restored ends the program, as on Linux
        // (SIGSEGV): the kernel refuses only a bad FS base, kept here.
        if sys::foreign_resume_regs(self.pid, &back).is_err() {
            let _ = sys::kill(self.pid);
        }
        Err(ALREADY_RESUMED)
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

    /// `readv` and `writev`: one transfer per iovec entry, stopping at the
    /// first short one.
    fn vectored(&mut self, is_write: bool, f: u64, iov: u64, count: u64) -> Result<u64> {
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
            let r = if is_write { self.write(f, base, len) } else { self.read(f, base, len) };
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
        let path = at_path(dir, &mem::read_path(self.pid, path)?)?;
        // O_CLOEXEC, O_NOCTTY, O_NONBLOCK, O_LARGEFILE: nothing to do
        // here; the rest are Ridgeback's own values (protocols::unix).
        let flags = flags & 0o3_003_303;
        let f = unix::open(&path, flags & !0o2_000_000, (mode & !self.umask) as u32)?;
        self.dir_index.remove(&f);
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

    fn sigaction(&mut self, sig: u64, act: u64, old: u64) -> Result<u64> {
        // Linux reads the new action before it checks the signal.
        let new = if act != 0 { Some(mem::read(self.pid, act, 32)?) } else { None };
        if sig == 0 || sig > 64 || (new.is_some() && (sig == 9 || sig == 19)) {
            return Err(errno::EINVAL);
        }
        if old != 0 {
            let prev = self.sigactions.get(&sig).copied().unwrap_or([0; 32]);
            mem::write(self.pid, old, &prev)?;
        }
        if let Some(new) = new {
            let mut a = [0u8; 32];
            a.copy_from_slice(&new);
            self.sigactions.insert(sig, a);
        }
        Ok(0)
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

    fn sleep(&self, ts: u64) -> Result<u64> {
        let b = mem::read(self.pid, ts, 16)?;
        let s = u64::from_le_bytes(b[..8].try_into().unwrap_or_default());
        let ns = u64::from_le_bytes(b[8..].try_into().unwrap_or_default());
        if ns >= 1_000_000_000 || (s as i64) < 0 {
            return Err(errno::EINVAL);
        }
        unix::sleep_ns(s.saturating_mul(1_000_000_000).saturating_add(ns));
        Ok(0)
    }
}

/// Marks a call already answered with `foreign_resume_regs`.
const ALREADY_RESUMED: Errno = Errno(u64::MAX);
/// Marks the new server after `fork`: nothing to answer.
const FORKED_CHILD: Errno = Errno(u64::MAX - 1);

/// A Linux descriptor argument as a Ridgeback one.
fn fd(raw: u64) -> Result<i32> {
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

/// `path` relative to directory descriptor `dir` (only AT_FDCWD, or an
/// absolute path: descriptors of directories carry no path here).
fn at_path(dir: u64, path: &str) -> Result<alloc::string::String> {
    if path.is_empty() {
        return Err(errno::ENOENT);
    }
    if path.starts_with('/') || dir as i32 as i64 == AT_FDCWD {
        return Ok(alloc::string::String::from(path));
    }
    Err(errno::ENOSYS)
}

/// The clock `id` in nanoseconds: CLOCK_REALTIME (0) is seconds since the
/// epoch (`unix::time`), the others time since boot.
fn clock_ns(id: u64) -> u64 {
    let since_boot = unix::clock_ns();
    if id == 0 { unix::time().saturating_mul(1_000_000_000) + since_boot % 1_000_000_000 } else { since_boot }
}

const _: () = assert!(CLOCK_TICKS_PER_S > 0);
