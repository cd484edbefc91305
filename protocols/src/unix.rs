//! The UNIX personality's protocols (Ridge OS §3, §8): the user monitor,
//! the object managers reached through file descriptors, the directory
//! manager, the virtual-memory manager and the console device manager.
//!
//! # Conventions
//! Every request is a `call`. Word 0 of the request is the operation; word
//! 0 of the reply is the result: a non-negative value, or a negated POSIX
//! error number ([`errno`]), read with [`result`]. Paths and other byte
//! strings travel as the call's data (at most one page).
//!
//! # Who talks to whom
//! - A UNIX process calls the **monitor** (bootstrap connection
//!   [`abi::bootstrap::MONITOR`], queue [`monitor::QUEUE`]) for process
//!   calls and to open, close and duplicate descriptors. The monitor checks
//!   permissions and keeps the descriptor tables.
//! - For `read`, `write`, `lseek`, `fstat` and `readdir` the process calls
//!   the object's **manager** directly ([`io`]), with the handle the monitor
//!   gave it (Ridge §3: after `open` the monitor is bypassed).
//! - The monitor calls the **directory manager** ([`fs`]), the **VM manager**
//!   ([`vm`]) and device managers; managers never call the monitor, except
//!   the console manager's one-way `send` of [`monitor::OP_SIGNAL_GROUP`].

/// Longest path the UNIX personality accepts, in bytes (POSIX `PATH_MAX`,
/// as on Linux).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest single name in a path, in bytes (POSIX `NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;

/// A POSIX error number, as a manager replies it and a UNIX program sees
/// it: the one error type of the UNIX personality, on both sides of every
/// protocol here. The values are Linux's on x86-64 ([`errno`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Errno(pub u64);

impl Errno {
    /// The wire value (positive; replies carry it negated, see [`result`]).
    pub const fn code(self) -> u64 {
        self.0
    }

    /// The usual short name with a few words of meaning, for messages.
    pub fn name(self) -> &'static str {
        errno::name(self)
    }
}

impl core::fmt::Display for Errno {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// POSIX error numbers (the values Linux uses on x86-64).
pub mod errno {
    use super::Errno;

    pub const EPERM: Errno = Errno(1);
    pub const ENOENT: Errno = Errno(2);
    pub const ESRCH: Errno = Errno(3);
    pub const EINTR: Errno = Errno(4);
    pub const EIO: Errno = Errno(5);
    pub const E2BIG: Errno = Errno(7);
    pub const ENOEXEC: Errno = Errno(8);
    pub const EBADF: Errno = Errno(9);
    pub const ECHILD: Errno = Errno(10);
    pub const EAGAIN: Errno = Errno(11);
    pub const ENOMEM: Errno = Errno(12);
    pub const EACCES: Errno = Errno(13);
    pub const EFAULT: Errno = Errno(14);
    pub const EBUSY: Errno = Errno(16);
    pub const EEXIST: Errno = Errno(17);
    pub const EXDEV: Errno = Errno(18);
    pub const ENODEV: Errno = Errno(19);
    pub const ENOTDIR: Errno = Errno(20);
    pub const EISDIR: Errno = Errno(21);
    pub const EINVAL: Errno = Errno(22);
    pub const ENFILE: Errno = Errno(23);
    pub const EMFILE: Errno = Errno(24);
    pub const ENOTTY: Errno = Errno(25);
    pub const EFBIG: Errno = Errno(27);
    pub const ENOSPC: Errno = Errno(28);
    pub const ESPIPE: Errno = Errno(29);
    pub const EROFS: Errno = Errno(30);
    pub const EMLINK: Errno = Errno(31);
    pub const EPIPE: Errno = Errno(32);
    pub const ERANGE: Errno = Errno(34);
    pub const ENAMETOOLONG: Errno = Errno(36);
    pub const ENOSYS: Errno = Errno(38);
    pub const ENOTEMPTY: Errno = Errno(39);
    // Sockets (Linux's numbers, as the other values here are).
    pub const ENOTSOCK: Errno = Errno(88);
    pub const EDESTADDRREQ: Errno = Errno(89);
    /// Not for programs (Linux's in-kernel `ERESTART`): a disk manager's
    /// answer to a monitor call that arrives while the volume's block
    /// driver is being restarted (issue 16; servers/ext2fs/src/disk.rs).
    /// Nothing was done; the monitor passes it on, and the runtime's
    /// monitor call sends the request again after a pause
    /// (`runtime::unix`, `RESTART_RETRY_NS`).
    pub const ERESTART: Errno = Errno(85);
    pub const EMSGSIZE: Errno = Errno(90);
    pub const ENOPROTOOPT: Errno = Errno(92);
    pub const EPROTONOSUPPORT: Errno = Errno(93);
    pub const EOPNOTSUPP: Errno = Errno(95);
    pub const EAFNOSUPPORT: Errno = Errno(97);
    pub const EADDRINUSE: Errno = Errno(98);
    pub const EADDRNOTAVAIL: Errno = Errno(99);
    pub const ENETUNREACH: Errno = Errno(101);
    pub const ECONNABORTED: Errno = Errno(103);
    pub const ECONNRESET: Errno = Errno(104);
    pub const ENOBUFS: Errno = Errno(105);
    pub const EISCONN: Errno = Errno(106);
    pub const ENOTCONN: Errno = Errno(107);
    pub const ETIMEDOUT: Errno = Errno(110);
    pub const ECONNREFUSED: Errno = Errno(111);
    pub const EHOSTUNREACH: Errno = Errno(113);
    pub const EALREADY: Errno = Errno(114);
    pub const EINPROGRESS: Errno = Errno(115);

    /// The usual short name of an error number, for messages.
    pub fn name(e: Errno) -> &'static str {
        match e {
            EPERM => "EPERM (operation not permitted)",
            ENOENT => "ENOENT (no such file or directory)",
            ESRCH => "ESRCH (no such process)",
            EINTR => "EINTR (interrupted)",
            EIO => "EIO (input/output error)",
            E2BIG => "E2BIG (argument list too long)",
            ENOEXEC => "ENOEXEC (not an executable)",
            EBADF => "EBADF (bad file descriptor)",
            ECHILD => "ECHILD (no child processes)",
            EAGAIN => "EAGAIN (try again)",
            ENOMEM => "ENOMEM (out of memory)",
            EACCES => "EACCES (permission denied)",
            EFAULT => "EFAULT (bad address)",
            EBUSY => "EBUSY (busy)",
            EEXIST => "EEXIST (file exists)",
            EXDEV => "EXDEV (cross-device link)",
            ENODEV => "ENODEV (no such device)",
            ENOTDIR => "ENOTDIR (not a directory)",
            EISDIR => "EISDIR (is a directory)",
            EINVAL => "EINVAL (invalid argument)",
            ENFILE => "ENFILE (too many open files in system)",
            EMFILE => "EMFILE (too many open files)",
            ENOTTY => "ENOTTY (not a terminal)",
            EFBIG => "EFBIG (file too large)",
            ENOSPC => "ENOSPC (no space left)",
            ESPIPE => "ESPIPE (illegal seek)",
            EROFS => "EROFS (read-only file system)",
            EMLINK => "EMLINK (too many links)",
            EPIPE => "EPIPE (broken pipe)",
            ERANGE => "ERANGE (result too large)",
            ENAMETOOLONG => "ENAMETOOLONG (file name too long)",
            ENOSYS => "ENOSYS (function not implemented)",
            ENOTEMPTY => "ENOTEMPTY (directory not empty)",
            ENOTSOCK => "ENOTSOCK (not a socket)",
            EDESTADDRREQ => "EDESTADDRREQ (destination address required)",
            ERESTART => "ERESTART (a device is being restarted: try again)",
            EMSGSIZE => "EMSGSIZE (message too long)",
            ENOPROTOOPT => "ENOPROTOOPT (protocol not available)",
            EPROTONOSUPPORT => "EPROTONOSUPPORT (protocol not supported)",
            EOPNOTSUPP => "EOPNOTSUPP (operation not supported)",
            EAFNOSUPPORT => "EAFNOSUPPORT (address family not supported)",
            EADDRINUSE => "EADDRINUSE (address already in use)",
            EADDRNOTAVAIL => "EADDRNOTAVAIL (cannot assign requested address)",
            ENETUNREACH => "ENETUNREACH (network is unreachable)",
            ECONNABORTED => "ECONNABORTED (connection aborted)",
            ECONNRESET => "ECONNRESET (connection reset by peer)",
            ENOBUFS => "ENOBUFS (no buffer space available)",
            EISCONN => "EISCONN (already connected)",
            ENOTCONN => "ENOTCONN (not connected)",
            ETIMEDOUT => "ETIMEDOUT (connection timed out)",
            ECONNREFUSED => "ECONNREFUSED (connection refused)",
            EHOSTUNREACH => "EHOSTUNREACH (no route to host)",
            EALREADY => "EALREADY (operation already in progress)",
            EINPROGRESS => "EINPROGRESS (operation in progress)",
            _ => "unknown error",
        }
    }
}

/// Word 0 of a reply: `Ok(value)` or `Err(errno)`.
pub fn result(word0: u64) -> Result<u64, Errno> {
    let signed = word0 as i64;
    if signed < 0 { Err(Errno(signed.unsigned_abs())) } else { Ok(word0) }
}

/// Word 0 of a reply from a result.
pub fn encode_result(r: Result<u64, Errno>) -> u64 {
    match r {
        Ok(v) => v,
        Err(e) => (e.0 as i64).wrapping_neg() as u64,
    }
}

/// UNIX process ids. They are folded from kernel pids, so `getpid` stays a
/// kernel call (Ridge Table 2) and every server agrees on them without
/// asking the monitor: `unix = (generation - 1) * MAX_PROCESSES + slot + 1`
/// (init, slot 0 of the first generation, is pid 1).
pub mod pid {
    /// The kernel's process-table size.
    pub const SLOTS: u64 = abi::PROCESS_SLOTS as u64;

    pub fn from_kernel(p: abi::Pid) -> u64 {
        (p.generation() as u64).saturating_sub(1) * SLOTS + p.slot() as u64 + 1
    }

    /// The kernel pid for a UNIX pid; `None` for 0 and for numbers too large.
    pub fn to_kernel(unix: u64) -> Option<abi::Pid> {
        let n = unix.checked_sub(1)?;
        let generation = u32::try_from(n / SLOTS + 1).ok()?;
        Some(abi::Pid::new((n % SLOTS) as u32, generation))
    }
}

/// `wait` status words, encoded as POSIX `<sys/wait.h>` expects.
pub mod wait_status {
    pub fn exited(code: u32) -> u64 {
        ((code & 0xff) << 8) as u64
    }
    pub fn signaled(signal: u64) -> u64 {
        signal & 0x7f
    }
    /// `Some(code)` if the process exited.
    pub fn exit_code(status: u64) -> Option<u32> {
        (status & 0x7f == 0).then_some(((status >> 8) & 0xff) as u32)
    }
    /// `Some(signal)` if a signal ended the process.
    pub fn term_signal(status: u64) -> Option<u64> {
        (status & 0x7f != 0).then_some(status & 0x7f)
    }
    /// `WNOHANG`.
    pub const NO_HANG: u64 = 1;
}

/// Signal numbers (Linux x86-64 values). Only default actions and "ignore"
/// exist: enough for ^C and for a parent to learn how a child ended.
pub mod signal {
    pub const SIGHUP: u64 = 1;
    pub const SIGINT: u64 = 2;
    pub const SIGQUIT: u64 = 3;
    pub const SIGILL: u64 = 4;
    pub const SIGFPE: u64 = 8;
    pub const SIGKILL: u64 = 9;
    pub const SIGUSR1: u64 = 10;
    pub const SIGSEGV: u64 = 11;
    pub const SIGUSR2: u64 = 12;
    pub const SIGPIPE: u64 = 13;
    pub const SIGALRM: u64 = 14;
    pub const SIGTERM: u64 = 15;
    /// Sent by the monitor to a parent whose child ended, only if the
    /// parent catches it (the default action, ignore, needs nothing).
    pub const SIGCHLD: u64 = 17;
    /// A read of the controlling terminal from a background process
    /// group (POSIX.1-2017 XBD 11.1.4), sent by the console manager to
    /// the reader's group. POSIX's default action is to stop the group;
    /// Ridgeback has no stopped processes, so the default action here
    /// ends nobody: the read itself waits, taking no line, until its group
    /// is the foreground again (docs/reliability.md, "The console and job
    /// control"). Caught: the read fails with `EINTR`; ignored, or the
    /// group orphaned: `EIO` and no signal.
    pub const SIGTTIN: u64 = 21;
    /// A write to the controlling terminal from a background group with
    /// `TOSTOP` set (Linux's number); Ridgeback has no `TOSTOP`, so it is
    /// never sent by the system. Its default action ends nobody either.
    pub const SIGTTOU: u64 = 22;
    /// Highest signal number accepted.
    pub const MAX: u64 = 31;

    /// The signals above by name (without `SIG`), in number order, as
    /// `kill -l` lists them.
    pub const NAMES: [(&str, u64); 12] = [
        ("HUP", SIGHUP),
        ("INT", SIGINT),
        ("QUIT", SIGQUIT),
        ("ILL", SIGILL),
        ("FPE", SIGFPE),
        ("KILL", SIGKILL),
        ("USR1", SIGUSR1),
        ("SEGV", SIGSEGV),
        ("USR2", SIGUSR2),
        ("PIPE", SIGPIPE),
        ("ALRM", SIGALRM),
        ("TERM", SIGTERM),
    ];

    /// The number of a signal named `KILL` or `SIGKILL` (upper case).
    pub fn from_name(name: &str) -> Option<u64> {
        let name = name.strip_prefix("SIG").unwrap_or(name);
        NAMES.iter().find(|(n, _)| *n == name).map(|&(_, number)| number)
    }
}

/// `open` flags (Linux values).
pub mod open_flags {
    pub const O_RDONLY: u64 = 0;
    pub const O_WRONLY: u64 = 1;
    pub const O_RDWR: u64 = 2;
    pub const O_ACCMODE: u64 = 3;
    pub const O_CREAT: u64 = 0o100;
    pub const O_EXCL: u64 = 0o200;
    pub const O_TRUNC: u64 = 0o1000;
    pub const O_APPEND: u64 = 0o2000;
    pub const O_DIRECTORY: u64 = 0o200000;

    pub fn readable(flags: u64) -> bool {
        flags & O_ACCMODE != O_WRONLY
    }
    pub fn writable(flags: u64) -> bool {
        flags & O_ACCMODE != O_RDONLY
    }
}

/// File types and permission bits of [`Stat::mode`] (POSIX values).
pub mod mode {
    pub const S_IFMT: u32 = 0o170000;
    pub const S_IFREG: u32 = 0o100000;
    pub const S_IFDIR: u32 = 0o040000;
    pub const S_IFCHR: u32 = 0o020000;
    pub const S_IFBLK: u32 = 0o060000;
    pub const S_IFIFO: u32 = 0o010000;
    /// A socket: a descriptor whose manager is the network server
    /// (`crate::net`); it names no file.
    pub const S_IFSOCK: u32 = 0o140000;
    pub const PERMISSIONS: u32 = 0o7777;
    /// Set-user-ID on execution: `exec` of the file runs it with the
    /// file owner's uid as the effective one, the caller's kept as the
    /// real one (`monitor::OP_GETUID` word 2). `/bin/su` has it.
    pub const S_ISUID: u32 = 0o4000;

    pub fn is_dir(m: u32) -> bool {
        m & S_IFMT == S_IFDIR
    }
    pub fn is_reg(m: u32) -> bool {
        m & S_IFMT == S_IFREG
    }
    pub fn is_chr(m: u32) -> bool {
        m & S_IFMT == S_IFCHR
    }
    pub fn is_blk(m: u32) -> bool {
        m & S_IFMT == S_IFBLK
    }
    pub fn is_fifo(m: u32) -> bool {
        m & S_IFMT == S_IFIFO
    }
    pub fn is_sock(m: u32) -> bool {
        m & S_IFMT == S_IFSOCK
    }
    /// A device entry: a character or a block device.
    pub fn is_device(m: u32) -> bool {
        is_chr(m) || is_blk(m)
    }

    /// The classic `ls -l` string, e.g. `drwxr-xr-x`.
    pub fn to_text(m: u32) -> [u8; 10] {
        let mut t = *b"----------";
        t[0] = match m & S_IFMT {
            S_IFDIR => b'd',
            S_IFCHR => b'c',
            S_IFBLK => b'b',
            S_IFIFO => b'p',
            _ => b'-',
        };
        let letters = *b"rwxrwxrwx";
        for (i, letter) in letters.iter().enumerate() {
            if m & (0o400 >> i) != 0 {
                t[1 + i] = *letter;
            }
        }
        t
    }

    /// May a process with `uid`/`gid` access a file of `file_mode`,
    /// `file_uid`, `file_gid` for `want` (a mask of 4 = read, 2 = write,
    /// 1 = execute/search)? Root may do anything except execute a file with
    /// no execute bit at all (POSIX).
    pub fn permits(file_mode: u32, file_uid: u32, file_gid: u32, uid: u32, gid: u32, want: u32) -> bool {
        if uid == 0 {
            return want & 1 == 0 || file_mode & 0o111 != 0 || is_dir(file_mode);
        }
        let bits = if uid == file_uid {
            (file_mode >> 6) & 7
        } else if gid == file_gid {
            (file_mode >> 3) & 7
        } else {
            file_mode & 7
        };
        bits & want == want
    }
}

/// What `stat` and `fstat` return, as bytes in a reply's data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub ino: u64,
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub size_bytes: u64,
    pub mtime_ns: u64,
    /// For a device entry (`S_IFCHR`): the device manager's kernel pid and
    /// queue (Ridge §3: a directory entry for a device names its manager).
    pub device_pid: u64,
    pub device_queue: u32,
}

impl Stat {
    pub const BYTES: usize = 56;

    pub fn encode(&self) -> [u8; Stat::BYTES] {
        let mut b = [0u8; Stat::BYTES];
        b[0..8].copy_from_slice(&self.ino.to_le_bytes());
        b[8..12].copy_from_slice(&self.mode.to_le_bytes());
        b[12..16].copy_from_slice(&self.nlink.to_le_bytes());
        b[16..20].copy_from_slice(&self.uid.to_le_bytes());
        b[20..24].copy_from_slice(&self.gid.to_le_bytes());
        b[24..32].copy_from_slice(&self.size_bytes.to_le_bytes());
        b[32..40].copy_from_slice(&self.mtime_ns.to_le_bytes());
        b[40..48].copy_from_slice(&self.device_pid.to_le_bytes());
        b[48..52].copy_from_slice(&self.device_queue.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Option<Stat> {
        if b.len() < Stat::BYTES {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
        Some(Stat {
            ino: u64_at(0),
            mode: u32_at(8),
            nlink: u32_at(12),
            uid: u32_at(16),
            gid: u32_at(20),
            size_bytes: u64_at(24),
            mtime_ns: u64_at(32),
            device_pid: u64_at(40),
            device_queue: u32_at(48),
        })
    }
}

/// The block of bytes the monitor places in a new image's argument page:
/// a header, then `argc` arguments and `envc` environment strings, each
/// ending in NUL. A process started by the kernel's `spawn` instead gets
/// plain whitespace-separated text (no header).
pub mod exec_args {
    /// The header's first four bytes.
    pub const MAGIC: [u8; 4] = *b"RBUX";
    /// Header: magic, argc (u32 LE), envc (u32 LE), uid (u32), gid (u32).
    pub const HEADER_BYTES: usize = 20;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Header {
        pub argc: u32,
        pub envc: u32,
        pub uid: u32,
        pub gid: u32,
    }

    pub fn encode_header(h: Header) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..4].copy_from_slice(&MAGIC);
        b[4..8].copy_from_slice(&h.argc.to_le_bytes());
        b[8..12].copy_from_slice(&h.envc.to_le_bytes());
        b[12..16].copy_from_slice(&h.uid.to_le_bytes());
        b[16..20].copy_from_slice(&h.gid.to_le_bytes());
        b
    }

    /// The header and the strings after it, or `None` when `bytes` is not
    /// an exec block.
    pub fn decode(bytes: &[u8]) -> Option<(Header, &[u8])> {
        if bytes.len() < HEADER_BYTES || bytes[0..4] != MAGIC {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        Some((
            Header { argc: u32_at(4), envc: u32_at(8), uid: u32_at(12), gid: u32_at(16) },
            &bytes[HEADER_BYTES..],
        ))
    }
}

/// The user monitor (servers/monitor): the UNIX system-call interface.
/// Reply word 0 is the result unless an operation says otherwise.
pub mod monitor {
    /// The monitor's request queue.
    pub const QUEUE: u32 = 0;
    /// Word 0 of the monitor's "ready" message to its starter.
    pub const READY: u64 = 0x004d_4f4e_4954;
    /// The monitor's second queue, where a helper server it starts (a
    /// [`super::pipe`] or [`super::filemgr`] manager) sends its `READY`
    /// message.
    pub const START_QUEUE: u32 = 1;
    /// Descriptors per process: fds are `0..MAX_FDS`. The monitor keeps
    /// tables this long and answers `EBADF`/`EMFILE` beyond them; the
    /// runtime's descriptor cache has one entry per fd.
    pub const MAX_FDS: usize = 64;

    /// `fork()`. Reply to the parent: word 0 = child pid. The child starts
    /// as if its own call had returned with word 0 = 0.
    pub const OP_FORK: u64 = 1;
    /// `execve()`. Data: the path, NUL, then `argc` (word 1) arguments and
    /// `envc` (word 2) environment strings, each ending in NUL. No reply
    /// on success: the process is running the new image.
    pub const OP_EXEC: u64 = 2;
    /// `waitpid(word 1 = pid or u64::MAX for any, word 2 = options)`.
    /// Reply: word 0 = pid (0 with `NO_HANG` and nothing ended), word 1 =
    /// status, word 2 = the child's CPU time in ns.
    pub const OP_WAIT: u64 = 3;
    /// `getppid()`.
    pub const OP_GETPPID: u64 = 4;
    /// `kill(word 1 = pid, word 2 = signal)`; pid 0 or negative (as i64)
    /// names a process group.
    pub const OP_KILL: u64 = 5;
    /// `open(data = path, word 1 = flags, word 2 = mode)`. Reply: word 0 =
    /// fd, words 1–3 = the descriptor's manager as in `OP_FD_INFO`.
    ///
    ///
    /// Word 3, when not 0, is 1 + a descriptor the process closed since its
    /// last call: the monitor closes it first, whatever the open's outcome,
    /// as if it had been an `OP_CLOSE` just before (a regular file's
    /// `close` rides on the next open: docs/filesystem.md, "R2 on disk:
    /// creat+close again"); one not open is passed over.
    pub const OP_OPEN: u64 = 6;
    /// `close(word 1 = fd)`.
    pub const OP_CLOSE: u64 = 7;
    /// `dup(word 1 = fd)` → lowest free fd.
    pub const OP_DUP: u64 = 8;
    /// `dup2(word 1 = old, word 2 = new)` → new.
    pub const OP_DUP2: u64 = 9;
    /// `pipe()`. Reply: word 0 = read fd, word 1 = write fd.
    pub const OP_PIPE: u64 = 10;
    /// Where a descriptor's requests go. Reply: word 0 = 0, words 1–3 =
    /// a [`super::FdInfo`].
    pub const OP_FD_INFO: u64 = 11;
    /// `stat(data = path)`. Reply data: a [`super::Stat`].
    pub const OP_STAT: u64 = 12;
    pub const OP_UNLINK: u64 = 13;
    /// `mkdir(data = path, word 1 = mode)`.
    pub const OP_MKDIR: u64 = 14;
    pub const OP_RMDIR: u64 = 15;
    /// `rename(data = old NUL new)`.
    pub const OP_RENAME: u64 = 16;
    pub const OP_CHDIR: u64 = 17;
    /// `getcwd()`. Reply data: the path.
    pub const OP_GETCWD: u64 = 18;
    /// Reply: word 0 = (effective) uid, word 1 = gid, word 2 = real uid
    /// (differs in a set-user-ID program, [`super::mode::S_ISUID`]).
    pub const OP_GETUID: u64 = 19;
    /// `setuid(word 1)`, `setgid(word 2)` (u64::MAX = unchanged); root only.
    pub const OP_SETUID: u64 = 20;
    /// `times()`. Reply: word 0 = own CPU ns, word 1 = reaped children's
    /// CPU ns, word 2 = ns since boot.
    pub const OP_TIMES: u64 = 21;
    /// The process table entry at index word 1 (for `ps`). Reply: word 0 =
    /// next index to ask for (0 = end), data: a [`super::ProcInfo`].
    pub const OP_PS: u64 = 22;
    /// `setpgid(word 1 = pid or 0, word 2 = pgid or 0)`.
    pub const OP_SETPGID: u64 = 23;
    /// `getpgrp()`.
    pub const OP_GETPGRP: u64 = 24;
    /// Ignore (word 2 = 1) or take the default action for (0) signal
    /// word 1. Reply: word 0 = previous setting.
    pub const OP_SIGNAL_IGNORE: u64 = 25;
    /// `chmod(data = path, word 1 = mode)`.
    pub const OP_CHMOD: u64 = 26;
    /// `chown(data = path, word 1 = uid, word 2 = gid)`.
    pub const OP_CHOWN: u64 = 27;
    /// Init only: start the UNIX process `data` (path NUL args NULs, word 1
    /// = argc) as uid 0 with fds 0–2 on the console. Reply: word 0 = pid.
    pub const OP_START: u64 = 30;
    /// A one-way `send` (not a call) from the console manager: signal
    /// word 2 to process group word 1 (^C). Accepted only from the console
    /// manager the monitor was started with.
    pub const OP_SIGNAL_GROUP: u64 = 31;
    /// Statistics. Reply words: requests served, forks, execs, open-file
    /// descriptions in use.
    pub const OP_STATS: u64 = 32;
    /// Set a run-time limit: data = `name=value` (the `pipe.*` names of
    /// [`super::pipe::limits`]). Root only (`EPERM` for anyone else);
    /// `EINVAL` for an unknown name or a value that does not parse or is
    /// out of range. Takes effect at once: pipe managers running now are
    /// told, new ones are started with it.
    pub const OP_SET_LIMIT: u64 = 40;
    /// Read the run-time limits, to anyone. Reply data: `name=value`
    /// lines, one per limit, then the loan accounting (`pipe.loan_granted`,
    /// `pipe.loan_refused`).
    pub const OP_LIMITS: u64 = 41;
    /// A one-way `send` from a pipe manager the monitor started: word 1 =
    /// loan budget wanted (bytes, 0: none), word 2 = loan budget given
    /// back (bytes). The monitor answers a want with a
    /// [`super::pipe::OP_GRANT`] message, never with a reply.
    pub const OP_PIPE_LOAN: u64 = 42;
    /// `mount`, from init or root only (`EPERM` for anyone else): data =
    /// source NUL target NUL options. The source is a block device entry
    /// (`/dev/vda`) holding an ext2 file system; options are
    /// comma-separated (`ro`, `sync`, `nbuf=N`), may be empty. The target
    /// is a directory (made if it is missing and its parent exists), or
    /// `/`: the disk becomes the root, and the memory file system's `/dev`
    /// and `/tmp` stay mounted at `/dev` and `/tmp`. The monitor opens the
    /// device, starts an [`super::ext2fs`] manager on it and waits until
    /// it has mounted (or refused: its errno, `EINVAL` for a disk that is
    /// not ext2). `EBUSY`: something is mounted there already.
    pub const OP_MOUNT: u64 = 43;
    /// The mount table, to anyone. Reply data: one line per mount,
    /// `source target type options`, `/` first.
    pub const OP_MOUNTS: u64 = 44;
    /// `sync()`: every mounted disk file system writes what it holds and
    /// flushes its device (`fs::OP_SYNC` to each manager). Reply: word 0
    /// = 0, or the first error. Word 1 = [`SYNC_FINAL`] from init only,
    /// before the power goes: each disk manager also marks its volume
    /// clean (`fs::SYNC_FINAL`); from anyone else it is an ordinary sync.
    pub const OP_SYNC: u64 = 45;
    /// Word 1 of [`OP_SYNC`] and of `fs::OP_SYNC`: the last sync before
    /// the power goes (issue 16, docs/filesystem.md).
    pub const SYNC_FINAL: u64 = 1;
    /// The disk file systems' counters, to anyone (for `kinfo`). Reply
    /// data: `name=value` lines from each manager's `fs::OP_STATS_TEXT`,
    /// each name prefixed with the mount point and `:`.
    pub const OP_FS_STATS: u64 = 46;
    /// Catch (word 2 = 1) or take the default action for (0) signal word
    /// 1: a caught signal is not acted on but recorded as pending, for the
    /// process to collect with [`OP_SIGNAL_PENDING`] (the shell's `trap`).
    /// Catching clears ignoring and the reverse; `exec` resets caught
    /// signals to the default (POSIX). Reply: word 0 = previous setting.
    pub const OP_SIGNAL_CATCH: u64 = 60;
    /// The caller's pending caught signals (bit n: signal n), cleared.
    pub const OP_SIGNAL_PENDING: u64 = 61;
    /// `umask(word 1)`: the file-creation mask applied to `open` and
    /// `mkdir` modes; word 2 = 1 only reads it. Reply: word 0 = previous
    /// mask. Inherited by `fork` and kept by `exec`.
    pub const OP_UMASK: u64 = 62;
    /// Replace the caller's whole set of caught signals with word 1 (bit
    /// n: signal n; SIGKILL's bit is ignored; caught signals stop being
    /// ignored) and take its pending set, in one call: the Linux server
    /// (servers/linux) keeps the monitor's set equal to the signals its
    /// program handles or blocks, which changes around every
    /// `sigsuspend`. Reply: word 0 = the previous caught set, word 1 = the
    /// pending signals (cleared).
    pub const OP_SIGNAL_CATCH_SET: u64 = 63;
    /// The caller's pending caught signals (bit n: signal n), cleared, as
    /// [`OP_SIGNAL_PENDING`]; but when none is pending the reply is kept
    /// until one is (a signal from another process, ^C, SIGCHLD). How the
    /// Linux server waits in `sigsuspend` and `pause` with one message.
    pub const OP_SIGNAL_WAIT: u64 = 64;
    /// Root only (`EPERM` for anyone else): ask init to end the supervised
    /// server or driver named by the data, as a fault would (`kill -9` of
    /// a server; init restarts it if its line says `restart`). Forwarded
    /// to init as a one-way message ([`crate::init::OP_KILL`]): word 0 = 0
    /// means asked, not done; [`crate::init::OP_STATUS`] tells what became
    /// of it.
    pub const OP_SERVER_KILL: u64 = 70;
    /// Root only: ask init to start the boot-image program named by the
    /// data as a supervised driver ([`crate::init::OP_START`]).
    pub const OP_SERVER_START: u64 = 71;
    /// Where the supervisor (init) takes [`crate::init::OP_STATUS`]
    /// calls, to anyone. Reply: word 1 = init's kernel pid, word 2 = its
    /// queue ([`crate::init::QUEUE`]).
    pub const OP_SUPERVISOR: u64 = 72;
    /// A one-way `send` from init only: the server or driver with kernel
    /// pid word 1 has ended (init may start it again under a new pid). The
    /// monitor closes its links to it and forgets the cached lookups of
    /// the device entries that named it.
    pub const OP_SERVER_ENDED: u64 = 73;
    /// Word 2 of [`OP_SERVER_ENDED`]: init will not start it again (its
    /// line does not say `restart`, it exited with status 0, or init gave
    /// it up). 0: a new instance may follow ([`OP_SERVER_STARTED`] for a driver,
    /// [`OP_SLOT_SERVER_STARTED`] for a server of a bootstrap slot).
    pub const ENDED_FOR_GOOD: u64 = 1;
    /// A one-way `send` from init only: the server of bootstrap slot word
    /// 1 (`abi::bootstrap`) was started again, as kernel pid word 2 with
    /// queue word 3. The monitor takes the slot for the UNIX processes it
    /// makes from then on; for the terminal (`TTY`) it registers with the
    /// new manager, moves the open-file descriptions that named the old
    /// one to new handles there, remakes `/dev/console` and `/dev/tty`,
    /// gives the session's process group the terminal again and answers
    /// the [`OP_FD_RELINK`] calls waiting for it (docs/reliability.md,
    /// "The console and the terminal").
    pub const OP_SLOT_SERVER_STARTED: u64 = 76;
    /// After a call on descriptor word 1 failed because its manager (kernel
    /// pid word 2) has ended: where its requests go now. Reply as
    /// [`OP_FD_INFO`]. The terminal's manager is restarted by init, so the
    /// reply waits until the description names the new one (or init gives
    /// it up: `EIO`); for any other ended manager, or when the description
    /// no longer names word 2, the answer is at once (`EIO` when it still
    /// names the ended one: a driver's handles die with it).
    pub const OP_FD_RELINK: u64 = 77;
    /// A one-way `send` from init only: a driver init restarted is ready
    /// (kernel pid word 1) and its device entry names it. The monitor
    /// mounts again what it had to drop when the driver's last instance
    /// ended (docs/reliability.md, "Restarting dead servers and drivers").
    pub const OP_SERVER_STARTED: u64 = 74;
    /// `getrlimit(word 1)`: word 1 = a [`super::rlimit`] resource. Reply:
    /// word 1 = soft limit, word 2 = hard limit ([`super::rlimit::INFINITY`]
    /// for none). `EINVAL` for an unknown resource.
    pub const OP_GETRLIMIT: u64 = 80;
    /// `setrlimit`: word 1 = resource, word 2 = soft, word 3 = hard.
    /// `EINVAL` when soft > hard or the resource is unknown (or, for
    /// `RLIMIT_NOFILE`, above [`MAX_FDS`]); `EPERM` when a non-root
    /// process raises its hard limit. Inherited by `fork`, kept by `exec`.
    pub const OP_SETRLIMIT: u64 = 81;
    /// `setsid()`: the caller leads a new session and a new process group
    /// (both its pid) and has no controlling terminal, so it may no longer
    /// set the console's foreground group. `EPERM` when it already leads a
    /// process group (POSIX). Reply: word 0 = the session id.
    pub const OP_SETSID: u64 = 85;
    /// `tcsetpgrp(word 1 = fd, word 2 = pgid)`: make `pgid` the foreground
    /// group of the terminal open on `fd` (the group ^C signals). POSIX's
    /// rules: `EBADF` for a descriptor not open; `ENOTTY` when it is not
    /// the console or the console is not the caller's controlling terminal
    /// (a session of its own, `OP_SETSID`); `EPERM` when `pgid` is no
    /// process group of the caller's session. Only the monitor sets the
    /// console's group (`io::OP_FOREGROUND` from anyone else is `EPERM`).
    pub const OP_TCSETPGRP: u64 = 86;
    /// Set the caller's kernel scheduling priority to word 1 (0..=
    /// `abi::MAX_PRIORITY`; `EINVAL` above). Root only (`EPERM` for anyone
    /// else): a process may lower its own priority, and raise it back up
    /// to where it started, with the kernel's `set_priority`; above that
    /// it needs root, as Linux's `nice` (docs/reliability.md, "Users and
    /// limits").
    pub const OP_SET_PRIORITY: u64 = 87;
    /// A one-way `send` from the console manager only: who is reading?
    /// Word 1 = the reader's kernel pid (the sender the kernel stamped on
    /// its `io::OP_READ`), word 2 = the manager's token for that read. The
    /// monitor answers with a call of [`super::tty::OP_READER`] (it calls
    /// the manager, never the other way, so neither can wait on the
    /// other): the reader's process group and [`reader`] flags. Job
    /// control at the console (POSIX.1-2017 XBD 11.1.4;
    /// docs/reliability.md, "The console and job control").
    pub const OP_TTY_READER: u64 = 120;
    /// `ioctl(fd, TIOCSTI)` for a string: word 1 = fd (the console), data
    /// = bytes handed to the terminal's line discipline as if typed
    /// (echoed, edited, ^C signals). Root only (`EPERM`; Linux asks
    /// `CAP_SYS_ADMIN`); `ENOTTY` when `fd` is not the console or it is
    /// not the caller's controlling terminal; `EBADF` for a closed fd.
    /// For tests of the terminal (tests/utest/src/jobs.rs). Reply: the
    /// bytes taken.
    pub const OP_TTY_TYPE: u64 = 121;
    /// From a disk's manager only: a process's `open` the monitor passed
    /// on to it ([`super::fs::OP_OPEN_FORWARDED`]) could not be done
    /// there, and the process's call comes back with it (`forward_wait`)
    /// for the monitor to open the usual way and answer. Word 1 = the
    /// manager's errno, data = the forwarded request's data unchanged.
    pub const OP_OPEN_DECLINED: u64 = 122;

    /// The flags of a [`super::tty::OP_READER`] answer (word 3).
    pub mod reader {
        /// The reader is no UNIX process, or its session's controlling
        /// terminal is not the console (`setsid`): its read gets `EIO`.
        pub const NO_TERMINAL: u64 = 1;
        /// It ignores `SIGTTIN` (POSIX: a background read gets `EIO`).
        pub const TTIN_IGNORED: u64 = 2;
        /// It catches `SIGTTIN` (a background read gets the signal and
        /// `EINTR`).
        pub const TTIN_CAUGHT: u64 = 4;
        /// Its process group is orphaned (no member has a parent in
        /// another group of the same session): `EIO`, no signal (POSIX).
        pub const ORPHANED: u64 = 8;
    }
}

/// Resource limits (`getrlimit`/`setrlimit`, the shell's `ulimit`), kept
/// by the monitor for each process (docs/reliability.md, "Users and
/// limits"). The resource numbers are Linux's. Root starts with none;
/// when a root process takes a non-root uid (`setuid`: `login`, `su`)
/// each limit becomes the smaller of its own and the user default below,
/// as `pam_limits` applies `limits.conf` at login.
pub mod rlimit {
    /// Heap bytes (`sbrk`/`brk`; `ulimit -d`).
    pub const RLIMIT_DATA: u64 = 2;
    /// Live processes of the caller's uid (`fork` gets `EAGAIN`; `ulimit -u`).
    pub const RLIMIT_NPROC: u64 = 6;
    /// Descriptors: new ones are below it (`open`, `dup`, `pipe` get
    /// `EMFILE`; `ulimit -n`).
    pub const RLIMIT_NOFILE: u64 = 7;
    /// Address space bytes: bounds the heap as `RLIMIT_DATA` does, and a
    /// program file larger than it cannot be `exec`ed (`ENOMEM`;
    /// `ulimit -v`).
    pub const RLIMIT_AS: u64 = 9;
    /// Every resource the monitor keeps, in number order.
    pub const RESOURCES: [u64; 4] = [RLIMIT_DATA, RLIMIT_NPROC, RLIMIT_NOFILE, RLIMIT_AS];
    /// No limit (`RLIM_INFINITY`).
    pub const INFINITY: u64 = u64::MAX;
    /// A user's processes at most, by default.
    pub const USER_MAX_PROCESSES: u64 = 64;
    /// A user's process's heap at most, by default: 256 MiB.
    pub const USER_DATA_BYTES: u64 = 256 << 20;
    /// A user's process's address space, by default: no limit.
    pub const USER_AS_BYTES: u64 = INFINITY;
    /// The heap limit (the smaller of the `RLIMIT_DATA` and `RLIMIT_AS`
    /// soft limits) rides in the exec block as one more string after the
    /// environment, `RIDGEBACK_HEAP_LIMIT=<bytes>`, which readers of argv
    /// and the environment do not see: the runtime's `sbrk` checks it
    /// with no message to the monitor.
    pub const EXEC_HEAP_LIMIT_PREFIX: &str = "RIDGEBACK_HEAP_LIMIT=";

    /// The user default of `resource` (`INFINITY` for root's).
    pub const fn user_default(resource: u64) -> u64 {
        match resource {
            RLIMIT_DATA => USER_DATA_BYTES,
            RLIMIT_NPROC => USER_MAX_PROCESSES,
            RLIMIT_AS => USER_AS_BYTES,
            _ => INFINITY,
        }
    }
}

/// Where a descriptor's requests go, in words 1–3 of the monitor's
/// `OP_OPEN` and `OP_FD_INFO` replies: word 1 = the manager's kernel pid,
/// word 2 = its queue | file type (`S_IFMT` bits) << 32 | open flags << 48,
/// word 3 = the handle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FdInfo {
    pub manager_pid: u64,
    pub manager_queue: u32,
    pub file_type: u32,
    pub flags: u32,
    pub handle: u64,
}

impl FdInfo {
    pub fn encode(&self) -> [u64; 3] {
        let word2 = self.manager_queue as u64
            | ((self.file_type as u64 >> 12) & 0xf) << 32
            | (self.flags as u64 & 0xffff) << 48;
        [self.manager_pid, word2, self.handle]
    }
    pub fn decode(w: [u64; 3]) -> FdInfo {
        FdInfo {
            manager_pid: w[0],
            manager_queue: w[1] as u32,
            file_type: (((w[1] >> 32) & 0xf) as u32) << 12,
            flags: ((w[1] >> 48) & 0xffff) as u32,
            handle: w[2],
        }
    }
}

/// Bytes of a process name as the monitor keeps it and `OP_PS` returns it
/// (NUL-padded; a longer program name is cut).
pub const PROCESS_NAME_BYTES: usize = 32;

/// One process, as `OP_PS` returns it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: u64,
    pub ppid: u64,
    pub pgid: u64,
    pub uid: u32,
    /// b'R' running or ready, b'Z' ended but not waited for.
    pub state: u8,
    pub cpu_ns: u64,
    pub name: [u8; PROCESS_NAME_BYTES],
}

impl ProcInfo {
    pub const BYTES: usize = 40 + PROCESS_NAME_BYTES;

    pub fn encode(&self) -> [u8; ProcInfo::BYTES] {
        let mut b = [0u8; ProcInfo::BYTES];
        b[0..8].copy_from_slice(&self.pid.to_le_bytes());
        b[8..16].copy_from_slice(&self.ppid.to_le_bytes());
        b[16..24].copy_from_slice(&self.pgid.to_le_bytes());
        b[24..28].copy_from_slice(&self.uid.to_le_bytes());
        b[28] = self.state;
        b[32..40].copy_from_slice(&self.cpu_ns.to_le_bytes());
        b[40..Self::BYTES].copy_from_slice(&self.name);
        b
    }

    pub fn decode(b: &[u8]) -> Option<ProcInfo> {
        if b.len() < ProcInfo::BYTES {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        let mut name = [0u8; PROCESS_NAME_BYTES];
        name.copy_from_slice(&b[40..Self::BYTES]);
        Some(ProcInfo {
            pid: u64_at(0),
            ppid: u64_at(8),
            pgid: u64_at(16),
            uid: u32::from_le_bytes(b[24..28].try_into().unwrap_or([0; 4])),
            state: b[28],
            cpu_ns: u64_at(32),
            name,
        })
    }

    pub fn name(&self) -> &str {
        let len = self.name.iter().position(|&c| c == 0).unwrap_or(self.name.len());
        core::str::from_utf8(&self.name[..len]).unwrap_or("?")
    }
}

/// Requests every object manager serves on an open handle (files,
/// directories, pipes, the console, /dev/null). Clients call the manager
/// directly; handles come from the monitor. A handle is a sparse number
/// (slot and a random check), so a process cannot guess another's.
pub mod io {
    /// Word 1 = handle, word 2 = most bytes wanted; the caller lends its
    /// whole buffer as the call's receive buffer (any length up to
    /// `abi::lease::MAX_LEASE_BYTES`). Reply: word 0 = bytes read (0 at end
    /// of file). The bytes are in the caller's buffer from its start
    /// either way the manager chose: in the reply's data (at most
    /// `abi::msg::MAX_DATA_BYTES`; terminals, pipes, and memfs for short
    /// reads), or written through the lease (`lease_write`, memfs and the
    /// file managers for longer ones: one copy, straight from the file's
    /// pages). A manager may return fewer bytes than asked (a pipe or
    /// terminal returns what it has); a regular file's manager returns
    /// fewer only at the end of the file. A pipe or terminal with nothing
    /// to read keeps the call until it has.
    pub const OP_READ: u64 = 1;
    /// Longest `OP_READ` memfs and the file managers answer with the bytes
    /// in the reply message; longer ones go through the lease (below this
    /// a second copy of a few bytes costs less than a kernel entry).
    pub const INLINE_READ_MAX_BYTES: usize = 1024;
    /// Word 1 = handle, word 2 = the length (0: the data in the message is
    /// all of it); the caller lends the bytes as the call's send buffer.
    /// When they fit a message (`abi::msg::MAX_DATA_BYTES`) they also
    /// arrive as its data; a longer write's bytes are read through the
    /// lease (`lease_read`) by managers that take them (memfs and the file
    /// managers: straight into the file's pages, all or nothing: a lease
    /// that fails half-way, `EFAULT`, leaves the file as it was). Reply:
    /// word 0 = bytes written. Terminals and pipes take one message's data
    /// per call; the runtime sends them no more.
    pub const OP_WRITE: u64 = 2;
    /// Word 1 = handle, word 2 = offset (i64), word 3 = whence
    /// ([`SEEK_SET`], [`SEEK_CUR`] or [`SEEK_END`]). Reply: word 0 = new
    /// offset.
    pub const OP_SEEK: u64 = 3;
    /// `OP_SEEK` whence: from the start (POSIX `SEEK_SET`).
    pub const SEEK_SET: u64 = 0;
    /// `OP_SEEK` whence: from the current offset (POSIX `SEEK_CUR`).
    pub const SEEK_CUR: u64 = 1;
    /// `OP_SEEK` whence: from the end of the file (POSIX `SEEK_END`).
    pub const SEEK_END: u64 = 2;
    /// Word 1 = handle. Reply data: a [`super::Stat`].
    pub const OP_FSTAT: u64 = 4;
    /// Word 1 = handle of a directory, word 2 = entry index. Reply: word 0
    /// = 1 and data = a [`super::DirEntry`], or 0 past the last entry.
    pub const OP_READDIR: u64 = 5;
    /// From the monitor only, when the last descriptor of the open object
    /// is closed: word 1 = handle.
    pub const OP_CLOSE: u64 = 6;
    /// Console only: set (word 2 = 1, word 3 = group) or get (word 2 = 0)
    /// the foreground process group. Setting it is the monitor's alone
    /// (`EPERM` for anyone else): a process asks the monitor
    /// (`monitor::OP_TCSETPGRP`), which checks its session.
    pub const OP_FOREGROUND: u64 = 7;
    /// Regular files only, from a file manager writing back: set the
    /// file's length to word 2 (cut, or grow with zeros).
    pub const OP_TRUNCATE: u64 = 8;
    /// Word 1 = handle: data written so far reaches stable storage (a
    /// block device flushes its write cache; a disk file system writes
    /// the file and then flushes the device). Word 2 = [`FSYNC_DATA`] for
    /// `fdatasync` (a manager may do more than asked, never less). Reply:
    /// word 0 = 0.
    pub const OP_FSYNC: u64 = 9;
    /// `OP_FSYNC` word 2: `fdatasync`.
    pub const FSYNC_DATA: u64 = 1;
    /// Pipes and terminals: readiness for `poll`, never waiting. Word 1 =
    /// handle, word 2 = the events asked (`POLLIN`, `POLLOUT`: the bits of
    /// `crate::net`, POSIX's). Reply: word 0 = the events true now, with
    /// `POLLHUP` (a pipe's read end whose writers are gone) and
    /// `POLLERR` (a pipe's write end whose readers are gone) whether
    /// asked or not. Other managers answer `ENOSYS`: the runtime then
    /// takes the object as always ready (a regular file).
    pub const OP_POLL: u64 = 10;
    /// POSIX `pread`: [`OP_READ`] at an offset, word 3 = the offset in
    /// bytes; the handle's own offset is neither used nor moved, so one
    /// call does what [`OP_SEEK`] and [`OP_READ`] did in two. Block
    /// drivers (`drivers/virtio-blk`) answer it, for the disk file
    /// system's I/O workers, `ext2fs` for regular files (word 1 of its
    /// reply: the file's change generation, [`super::read_window`]) and
    /// memfs for its files and devices; the pipe server answers `ESPIPE`
    /// (POSIX: a pipe has no offset); other managers answer `ENOSYS` (the
    /// runtime then moves the offset and puts it back). An offset past
    /// `i64::MAX`: `EINVAL`.
    pub const OP_PREAD: u64 = 11;
    /// POSIX `pwrite`: [`OP_WRITE`] at word 3's offset (word 2 the length,
    /// the bytes in the message or lent as for `OP_WRITE`), the handle's
    /// offset neither used nor moved. On an `O_APPEND` handle the bytes
    /// go at the end of the file, as Linux's `pwrite(2)` does (POSIX
    /// says at the offset). Who answers it: as [`OP_PREAD`].
    pub const OP_PWRITE: u64 = 12;
    /// A read window's slot ([`read_window`]): word 1 = handle (a regular
    /// file open for reading), word 2 = the address of the page at which
    /// the caller has made this manager the pager of one page of its own
    /// (`abi::Call::SetPager`), or 0 when it already maps this manager's
    /// page for it. The manager maps (shared, writable) the page it keeps
    /// for the caller's process there and answers word 0 = the slot
    /// index in it; from then on the handle's offset is the slot's offset
    /// word, for every request on the handle from anyone. `ENOSYS`: a
    /// manager without read windows (or with them turned off); `EBUSY`:
    /// the handle's slot is another process's; `ENOSPC`: no page or slot
    /// left. Each of these means the caller uses plain [`OP_READ`].
    pub const OP_READ_WINDOW_SLOT: u64 = 13;
}

/// Read windows (`ext2fs`, docs/filesystem.md "R2 on disk: a read window
/// in the reader"): a process reading a disk file in order fetches a
/// window of it with one [`io::OP_PREAD`] into its own memory and serves
/// the reads that follow from there, with no call, while the file has not
/// changed. The manager shares one page per client process with it; each
/// of the process's windowed handles has a slot of two `u64` words in it:
/// - the handle's offset ([`offset_word`]): read and written by the
///   client (the reads it serves itself) and by the manager (every
///   `OP_READ`, `OP_WRITE`, `OP_SEEK` on the handle, from any process),
///   which clamps what it reads there to `0..=i64::MAX`;
/// - the file's change generation ([`generation_word`]): written by the
///   manager only, before it answers any request that changed the file's
///   data or size (a write, a truncate, an open with `O_TRUNC`), by
///   anyone. An `OP_PREAD` reply's word 1 is the generation its bytes
///   belong to; a window whose generation differs from the slot's is
///   stale. A client that writes here misleads only itself. Never 0: a
///   dead manager's page reads as zeros (the kernel zeroes a dead
///   pager's pages in `abi::layout::USER_READ_WINDOW_PAGES_BASE`'s area,
///   each page from its last word down, so a slot's generation is 0
///   before its offset changes), and a window is never served against 0.
pub mod read_window {
    /// Slots in one page: 16 bytes each.
    pub const SLOTS: usize = abi::layout::PAGE_SIZE as usize / 16;
    /// Byte offset in the page of slot `slot`'s offset word.
    pub const fn offset_word(slot: usize) -> usize {
        16 * slot
    }
    /// Byte offset in the page of slot `slot`'s generation word.
    pub const fn generation_word(slot: usize) -> usize {
        16 * slot + 8
    }
    /// Set in a slot's offset word while the manager serves a `read`,
    /// `write` or `lseek` on the handle (it takes the word with an atomic
    /// OR of this bit and stores the new offset after, which clears it):
    /// the offset is the manager's meanwhile, and a reader that finds the
    /// bit makes a plain call, which waits behind that request. Offsets
    /// never reach it (`0..=i64::MAX`). POSIX XSH 2.9.7 (reads and writes
    /// of a regular file atomic with respect to each other); Linux's
    /// `f_pos_lock` is the same idea.
    pub const OFFSET_BUSY: u64 = 1 << 63;
    /// The boot option that turns read windows off (`ext2.readwin=off`)
    /// or on (`on`, the default).
    pub const BOOT_OPTION: &str = "ext2.readwin";
}

/// One directory entry in an `OP_READDIR` reply's data: ino (u64 LE),
/// mode (u32 LE), then the name.
pub struct DirEntry;

impl DirEntry {
    pub const HEADER_BYTES: usize = 12;
    pub fn encode(ino: u64, mode: u32, name: &[u8], out: &mut [u8]) -> usize {
        let n = name.len().min(out.len().saturating_sub(Self::HEADER_BYTES));
        out[0..8].copy_from_slice(&ino.to_le_bytes());
        out[8..12].copy_from_slice(&mode.to_le_bytes());
        out[12..12 + n].copy_from_slice(&name[..n]);
        12 + n
    }
    /// (ino, mode, name).
    pub fn decode(b: &[u8]) -> Option<(u64, u32, &[u8])> {
        if b.len() < Self::HEADER_BYTES {
            return None;
        }
        let ino = u64::from_le_bytes(b[0..8].try_into().ok()?);
        let mode = u32::from_le_bytes(b[8..12].try_into().ok()?);
        Some((ino, mode, &b[12..]))
    }
}

/// The directory manager and memory file system (servers/memfs), called
/// by the monitor only. Paths are absolute and normalised by the monitor.
/// It also serves [`io`] requests on the handles it gives out.
pub mod fs {
    /// The directory manager's queue.
    pub const QUEUE: u32 = 0;
    pub const READY: u64 = 0x0046_5352_4459;
    /// The most file data the directory manager holds (less when memory
    /// is short), and so the largest file a [`super::filemgr`] takes: it
    /// could not write a larger one back.
    pub const CAPACITY_BYTES: u64 = 256 << 20;

    /// `data = path`. Reply: data = [`super::Stat`] of the object; or, when
    /// a device entry is met before the path ends, word 0 = `DEVICE`, data
    /// = the device's Stat followed by the rest of the path. ENOENT with
    /// word 1 = 1 when the parent directory exists (for `O_CREAT`), and
    /// then data = the parent's Stat.
    pub const OP_LOOKUP: u64 = 32;
    /// `data = path, word 1 = open flags, word 2 = mode (for creation),
    /// word 3 = the owner of a created file ([`owner_word`])`. Reply: word
    /// 0 = handle, data = the Stat.
    pub const OP_OPEN: u64 = 33;
    /// `data = path, word 1 = mode, word 3 = the owner ([`owner_word`])`.
    pub const OP_MKDIR: u64 = 34;
    pub const OP_UNLINK: u64 = 35;
    pub const OP_RMDIR: u64 = 36;
    /// `data = old NUL new`.
    pub const OP_RENAME: u64 = 37;
    /// Make a device entry: `data = path, word 1 = device pid, word 2 =
    /// device queue, word 3 = mode` (permission bits, and `S_IFBLK` for a
    /// block device; any other file type makes a character device).
    pub const OP_MKDEV: u64 = 38;
    /// `data = path, word 1 = mode`.
    pub const OP_CHMOD: u64 = 39;
    /// `data = path, word 1 = uid, word 2 = gid`.
    pub const OP_CHOWN: u64 = 40;
    /// Statistics, to anyone. Reply words: files, directories, bytes
    /// stored, handles open.
    pub const OP_STATS: u64 = 41;
    /// Reply word 0 of `OP_LOOKUP` for a path that crosses a device entry.
    pub const DEVICE: u64 = 1 << 62;

    /// Word 3 of `OP_OPEN` and `OP_MKDIR`: the owner of what is created,
    /// `uid << 32 | gid`.
    pub fn owner_word(uid: u32, gid: u32) -> u64 {
        (uid as u64) << 32 | gid as u64
    }

    /// (uid, gid) from an [`owner_word`].
    pub fn owner_of(word: u64) -> (u32, u32) {
        ((word >> 32) as u32, word as u32)
    }
    /// From memfs's starter only, once: word 1 = the monitor's kernel pid.
    /// Afterwards the fs operations other than `OP_LOOKUP`, `io::OP_CLOSE`
    /// and `device::OP_OPEN` are accepted from the starter and the monitor.
    pub const OP_SET_MONITOR: u64 = 43;
    /// The queue on which memfs serves [`super::io`] requests: the same
    /// queue (the `fs` operation numbers start at 32, above every `io`
    /// one), so one `reply_wait` serves both. The replies to `OP_OPEN` and
    /// to memfs's `device::OP_OPEN` carry it in word 1.
    pub const IO_QUEUE: u32 = QUEUE;
    /// Everything the file system holds goes to its disk, then a device
    /// flush (`sync`). A manager with no disk (memfs) answers `ENOSYS`,
    /// which the monitor passes over. Word 1 = [`SYNC_FINAL`] (from the
    /// monitor, for init's sync before the power goes): an ext2 manager
    /// then also marks its volume clean (`s_state`), as an unmount does.
    pub const OP_SYNC: u64 = 44;
    pub const SYNC_FINAL: u64 = super::monitor::SYNC_FINAL;
    /// Counters as text, to anyone: reply data = `name=value` lines (a
    /// disk file system's buffer cache: hits, misses, read-ahead hits,
    /// write-behind transfers, …). memfs answers `ENOSYS`.
    pub const OP_STATS_TEXT: u64 = 45;
    /// A process's `open(O_CREAT)` of a new name, passed on by the monitor
    /// with `forward_wait` (docs/filesystem.md, "R2 on disk: one round
    /// trip"): the manager answers the process itself as the monitor's
    /// `monitor::OP_OPEN` would (word 0 = fd, words 1–3 = the
    /// [`super::FdInfo`]). Words as [`OP_OPEN`] (the flags with `O_EXCL`),
    /// data = a [`Forwarded`] header, the path inside the volume, NUL, the
    /// process's absolute path, and optionally NUL and handles at this
    /// manager to close first, before anything can fail
    /// ([`Forwarded::parts`]). The handle is the monitor's choice (bit
    /// [`FORWARDED_HANDLE_BIT`] set), so that the monitor records the
    /// descriptor before the manager opens it. On any error the manager
    /// passes the call back (`monitor::OP_OPEN_DECLINED`) and the monitor
    /// opens the usual way: a forwarded open answers the same as the
    /// monitor's own.
    pub const OP_OPEN_FORWARDED: u64 = 46;
    /// Set in every handle the monitor chooses for [`OP_OPEN_FORWARDED`];
    /// a manager's own handles never have it.
    pub const FORWARDED_HANDLE_BIT: u64 = 1 << 63;

    /// The head of [`OP_OPEN_FORWARDED`]'s data: six little-endian words.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Forwarded {
        /// The descriptor the monitor gave the open.
        pub fd: u64,
        /// The handle the manager keeps it under.
        pub handle: u64,
        /// The process's pid (the monitor's UNIX pid).
        pub pid: u64,
        /// The process's own open flags (the request's word 1 has `O_EXCL`).
        pub flags: u64,
        /// The monitor's request queue, where a declined open goes back.
        pub monitor_queue: u64,
        /// The mode of a file made, the process's umask applied (the
        /// request's word 2), for the monitor's open of a declined one.
        pub create_mode: u64,
    }

    impl Forwarded {
        pub const BYTES: usize = 48;

        pub fn encode(&self) -> [u8; Self::BYTES] {
            let mut b = [0u8; Self::BYTES];
            let words = [self.fd, self.handle, self.pid, self.flags, self.monitor_queue, self.create_mode];
            for (i, w) in words.iter().enumerate() {
                b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
            }
            b
        }

        /// The rest of the data after the head, in its parts: the path
        /// inside the volume, the process's absolute path, and the handles
        /// at this manager to close first (u64 LE, after a second NUL;
        /// empty when none: a descriptor the process closed that rode on
        /// its open, `monitor::OP_OPEN`). `None` when the handles'
        /// bytes are not whole words.
        #[inline]
        pub fn parts(rest: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
            let (inner, after) = match rest.iter().position(|&b| b == 0) {
                Some(nul) => (&rest[..nul], &rest[nul + 1..]),
                None => (rest, &[][..]),
            };
            let (abs, closes) = match after.iter().position(|&b| b == 0) {
                Some(nul) => (&after[..nul], &after[nul + 1..]),
                None => (after, &[][..]),
            };
            (closes.len() % 8 == 0).then_some((inner, abs, closes))
        }

        /// The handles of [`Forwarded::parts`]'s third part.
        #[inline]
        pub fn handles(closes: &[u8]) -> impl Iterator<Item = u64> + '_ {
            closes.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])))
        }

        /// The header and the rest of the data; `None` when too short.
        pub fn decode(data: &[u8]) -> Option<(Forwarded, &[u8])> {
            let head = data.get(..Self::BYTES)?;
            let w = |i: usize| u64::from_le_bytes(head[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
            let f = Forwarded {
                fd: w(0),
                handle: w(1),
                pid: w(2),
                flags: w(3),
                monitor_queue: w(4),
                create_mode: w(5),
            };
            Some((f, &data[Self::BYTES..]))
        }
    }
}

/// The disk file system's manager (servers/ext2fs): Ridge's directory
/// manager, volume manager and file-data service of one mounted ext2
/// volume, in one process (`docs/filesystem.md` says why one). The monitor
/// starts it for `monitor::OP_MOUNT` with the arguments `MONITOR_PID
/// DRIVER_PID DRIVER_QUEUE DEVICE_BYTES OPTIONS HANDLE…` (decimal; the
/// handles are opens of the block device the monitor made for it, the
/// first for its own requests and one per I/O worker; `OPTIONS` is the
/// mount's, `-` for none). It answers the monitor on its queue 1
/// (`monitor::START_QUEUE`) with `[READY, queue, 0 or errno, 0]` and,
/// when the mount was refused, ends.
///
/// It serves [`fs`] (from the monitor only, paths inside the volume,
/// absolute) and [`io`] requests on one queue, as memfs does; `io` READ
/// and WRITE take the caller's lent buffer (`io::OP_READ`, `io::OP_WRITE`).
pub mod ext2fs {
    pub const QUEUE: u32 = 0;
    pub const READY: u64 = 0x0045_5854_3246;
    /// I/O workers (`ext2io`) per mounted volume: the most transfers in
    /// flight at the driver at once. Each worker makes synchronous calls
    /// to the driver; several workers keep several requests in flight.
    pub const WORKERS: usize = 4;
    /// Most bytes one worker moves in one transfer (the cache's largest,
    /// 64 pages: `fs_ext2::cache::MAX_WRITE_OUT_PAGES`, the write-out of
    /// `fsync` and `sync`); larger transfers the manager makes itself.
    pub const WORKER_TRANSFER_BYTES: usize = 64 * abi::layout::PAGE_SIZE as usize;
    /// A worker's call to its manager (on [`QUEUE`]): "here is the end of
    /// my last transfer, give me the next". Word 1 = the finished
    /// transfer's tag (0 at the worker's start), word 2 = its result
    /// (`encode_result`: bytes moved, or an errno), word 3 = 0. Send
    /// buffer: a finished read's bytes (lent; the manager reads them
    /// with `lease_read`); receive buffer: the next write's bytes (lent;
    /// the manager fills it with `lease_write`). Reply: word 0 =
    /// [`WORK_READ`] or [`WORK_WRITE`], word 1 = first sector, word 2 =
    /// bytes, word 3 = tag.
    pub const OP_WORK: u64 = 120;
    pub const WORK_READ: u64 = 1;
    pub const WORK_WRITE: u64 = 2;
    /// Word 0 of a [`OP_WORK`] reply that tells the worker to end.
    pub const WORK_EXIT: u64 = 3;
    /// Word 0 of a [`OP_WORK`] reply after the block driver was restarted
    /// (issue 16): word 1 = the new driver's kernel pid, word 2 = its
    /// queue, word 3 = the worker's handle there. The worker links to it,
    /// forgets its old link and offset, and calls [`OP_WORK`] again
    /// (tag 0: no transfer).
    pub const WORK_RELINK: u64 = 4;
    /// Word 0 of a [`OP_WORK`] reply naming several writes at once (branch
    /// `lat`: a level of the write order in one driver call and one
    /// device notification): word 1 = how many (2 to
    /// [`block::MAX_WRITEV`]), word 2 = their data bytes, word 3 = the
    /// tag of the first. The receive buffer holds what
    /// [`block::OP_PWRITEV`] sends: the headers, then the data. The
    /// worker's next [`OP_WORK`] names that tag, with the total bytes or
    /// an errno for all of them.
    pub const WORK_WRITEV: u64 = 5;
    /// From the monitor only (issue 16, docs/reliability.md): the volume's
    /// block driver ended and init started it again. Word 1 = the new
    /// driver's kernel pid, word 2 = its queue, word 3 = the device's
    /// bytes (as at mount: another size is `EINVAL`); data = handles at
    /// the new driver, 8 bytes little-endian each, the manager's first
    /// then one per worker (as the mount's arguments). The manager keeps
    /// its cache, moves to the new driver and sends again what failed
    /// when the old one died, in the order it was first sent. Reply:
    /// word 0 = 0 or an errno. Answered at once, even while the manager
    /// waits for the device (the monitor must not wait for it).
    pub const OP_DEVICE: u64 = 121;
}

/// The device-open request every device manager serves (the console
/// manager, /dev/null in memfs): `data = the rest of the path after the
/// device entry, word 1 = open flags`. Reply: word 0 = handle.
pub mod device {
    /// From the monitor: word 1 = open flags, word 2 = the device entry's
    /// inode (a manager serving several entries, as memfs does `/dev/null`
    /// and `/dev/zero`, tells them apart by it), data = the rest of the
    /// path after the entry. Reply: word 0 = the handle; word 2 =
    /// `mode::S_IFSOCK` when the handle is a socket (the network server,
    /// `crate::net`), which becomes the descriptor's file type.
    pub const OP_OPEN: u64 = 64;
}

/// Block devices (drivers/virtio-blk, drivers/ramdisk): device managers
/// whose device entries (`/dev/vda`, `/dev/ram0`, mode `S_IFBLK`) serve
/// [`device::OP_OPEN`] and the [`io`] requests READ, WRITE, SEEK, FSTAT,
/// FSYNC and CLOSE on whole blocks, with no cache (seed 000's "block mode,
/// unbuffered"):
/// - `io::OP_READ`: word 1 = handle, word 2 = bytes. The bytes go into the
///   call's receive buffer, which the driver writes through the lease
///   (`lease_write`), at the handle's offset, which advances. Reply: word
///   0 = bytes (0 at the end of the device).
/// - `io::OP_WRITE`: word 1 = handle, word 2 = bytes; the bytes are the
///   call's send buffer, read through the lease. Reply: word 0 = bytes.
/// - A length or offset that is not a whole number of blocks, a transfer
///   longer than [`block::MAX_TRANSFER_BYTES`], or one that runs past the
///   end of the device, is refused whole with `EINVAL` (nothing moves).
/// - `io::OP_FSTAT`: mode `S_IFBLK | 0o660`, size = the device's bytes.
pub mod block {
    /// The unit of every transfer.
    pub const BLOCK_BYTES: u64 = 512;
    /// Most bytes one READ or WRITE moves (one request at the device).
    pub const MAX_TRANSFER_BYTES: u64 = 1024 * 1024;
    /// The request queue of every block driver.
    pub const QUEUE: u32 = 0;
    /// Word 0 of a driver's ready message to its starter (init): word 1 =
    /// the queue, word 2 = the device's bytes (0: no device found; the
    /// driver then ends and no entry is made).
    pub const READY: u64 = 0x0042_4c4b_5244;
    /// Statistics, to anyone (for `kinfo`). Reply words: requests served,
    /// bytes read, bytes written, [`MODE_VIRTIO`]/[`MODE_RAMDRIVER`]/
    /// [`MODE_PDDRIVER`]; data: the device's name.
    pub const OP_STATS: u64 = 90;
    /// The RAM disk in `ramdriver` mode: word 1 = a handle, word 2 = the
    /// page-aligned start of the caller's window for it. Reply: word 0 =
    /// the disk's bytes, word 1 = this handle's slot in the lock page
    /// ([`ram_lock`]), word 2 = 1 if the handle may write. The caller then
    /// makes the driver the pager of a window of `PAGE_SIZE + bytes` at
    /// that start (`set_pager` on itself), unless it already has: page 0
    /// of the window is the lock page, the disk follows; the driver maps
    /// each page shared on first touch (writable only in a window named
    /// by a handle that may write), and the caller copies in its own
    /// context under the lock. A slot belongs to the first process that
    /// maps the handle; another process (a forked child sharing the
    /// handle) gets `EBUSY` and uses READ and WRITE. `ENODEV` in
    /// `pddriver` mode; `ENOSPC` when every slot is taken.
    pub const OP_MAP: u64 = 91;
    /// The RAM disk in `ramdriver` mode: a mapping client that found the
    /// lock of [`ram_lock`] taken, and spun for a while, sleeps here (a
    /// call the driver keeps; the futex idea with the driver as the wait
    /// queue). Word 1 = the caller's slot, word 2 = [`ram_lock::WAIT_READ`]
    /// (the caller holds nothing) or [`ram_lock::WAIT_WRITE`] (the caller
    /// holds nothing, or already holds the writer word and waits for the
    /// readers to go). The driver answers when the lock is the caller's:
    /// for `WAIT_READ` it has set the caller's reader byte while the writer
    /// word was 0; for `WAIT_WRITE` the writer word is the caller's slot +
    /// 1 and no reader byte is set. Reply word 0 = 0. Errors: `EINVAL` (a
    /// bad slot or mode), `EPERM` (the slot is not the caller's), `EBADF`
    /// (`WAIT_WRITE` on a handle that may not write), `EBUSY` (the slot
    /// already waits), `EBADF` also when the slot's handle is closed while
    /// the call is kept. See [`ram_lock`] for the whole protocol.
    pub const OP_LOCK_WAIT: u64 = 92;
    /// The RAM disk in `ramdriver` mode: a one-way `send` (no words) from
    /// a client that let the lock go while [`ram_lock::WAITERS_OFFSET`]
    /// was not 0: the driver looks at the lock again and answers the
    /// [`OP_LOCK_WAIT`] calls it can.
    pub const OP_LOCK_WAKE: u64 = 93;
    /// Whether the device has a volatile write cache, to anyone (issue 12:
    /// the disk file system then flushes between the levels of its write
    /// order). No words. Reply word 0 = [`WRITE_CACHE_VOLATILE`] or
    /// [`WRITE_CACHE_NONE`]. A driver that does not know this op answers
    /// `ENOSYS`, which a caller takes as [`WRITE_CACHE_NONE`] (the RAM
    /// disk: a completed write is in memory that a power cut takes whole).
    pub const OP_WRITE_CACHE: u64 = 94;
    /// Several positional writes in one call, handed to the device
    /// together with one notification (branch `lat`; Linux's virtio-blk
    /// notifies once per batch too). Word 1 = handle, word 2 = how many
    /// (1 to [`MAX_WRITEV`]), word 3 = their data bytes together (at most
    /// [`MAX_TRANSFER_BYTES`]). Send buffer: one [`WRITEV_HEADER_BYTES`]
    /// header per write (its byte offset on the device, then its bytes,
    /// two little-endian `u64`s), then the writes' data in the same order.
    /// Each write follows `io::OP_PWRITE`'s rules (whole blocks, inside
    /// the device); a call with any write that does not, a count or total
    /// out of range, or headers whose bytes do not add up to word 3 is
    /// refused whole with `EINVAL`, nothing written. Reply: word 0 = the
    /// data bytes, or an errno (`EIO` when the device failed any of them:
    /// which ones reached the disk is then unknown, as for a failed
    /// `OP_PWRITE`). A driver that does not know it answers `ENOSYS`.
    pub const OP_PWRITEV: u64 = 95;
    /// The driver's timing of its device, to anyone (for `kinfo`; branch
    /// `lat`). No words. Reply: word 0 = requests completed since the
    /// driver started, word 1 = their TSC ticks from the device's
    /// notification to the kernel's taking of the interrupt that reported
    /// them (the device's time, QEMU's included), word 2 = the device's
    /// interrupts, word 3 = their ticks from the kernel's taking of each
    /// to the driver's running (the delivery). A driver that does not
    /// time answers `ENOSYS`.
    pub const OP_DEVICE_TIMES: u64 = 96;
    /// The most writes one [`OP_PWRITEV`] carries.
    pub const MAX_WRITEV: usize = 8;
    /// Bytes of one [`OP_PWRITEV`] header.
    pub const WRITEV_HEADER_BYTES: usize = 16;
    /// A completed write may be lost at a power cut until a flush
    /// (virtio-blk with `VIRTIO_BLK_F_FLUSH` negotiated).
    pub const WRITE_CACHE_VOLATILE: u64 = 1;
    /// A completed write is durable.
    pub const WRITE_CACHE_NONE: u64 = 0;
    pub const MODE_VIRTIO: u64 = 1;
    pub const MODE_RAMDRIVER: u64 = 2;
    pub const MODE_PDDRIVER: u64 = 3;

    /// The lock page of a RAM disk in `ramdriver` mode: a readers-writer
    /// lock with one reader flag per open handle (a "big reader" lock:
    /// readers on different CPUs write different bytes, so they do not
    /// contend), owned by the driver, which clears the flags of a handle
    /// that is closed (its process ended) mid-request.
    /// Layout: u32 at [`WRITER_OFFSET`] = slot + 1 of the writer (0: none);
    /// one byte per slot from [`READERS_OFFSET`] = 1 while that slot reads.
    /// Reader: set own byte, then if the writer word is 0 copy, else clear
    /// the byte and wait. Writer: compare-and-swap the writer word from 0
    /// to slot + 1, wait until every reader byte is 0, copy, store 0.
    /// The handle's offset lives in the lock page too, at
    /// [`OFFSETS_OFFSET`] + 8 × slot (u64): the mapping process moves it
    /// in its own context (read, write, seek) and the driver uses the same
    /// word for the handle's READ, WRITE and SEEK, so every descriptor
    /// sharing the handle (dup, fork) sees one offset.
    ///
    /// Waiting (the seed's VMS MUTEX put a waiter to sleep; a spinning
    /// waiter burns the CPU its pre-empted holder needs). A waiter spins
    /// briefly, then sleeps in a call to the driver ([`super::OP_LOCK_WAIT`]),
    /// which keeps the call: the driver is the wait queue, as the kernel is
    /// a futex's, and no new kernel call is needed.
    /// - The driver keeps the number of calls it keeps (and of its own
    ///   READ/WRITE requests waiting for the lock) in the u32 at
    ///   [`WAITERS_OFFSET`]; only the driver writes it.
    /// - On each such call the driver first stores the new count, then
    ///   looks at the lock and takes it *for the caller* if it can (sets
    ///   the reader byte while the writer word is 0; or the writer word
    ///   from 0 to slot + 1, then waits for the readers), answering at
    ///   once when the caller has it.
    /// - A client that lets the lock go stores its release and then loads
    ///   the count; if it is not 0 it sends [`super::OP_LOCK_WAKE`] (a
    ///   reader only when the writer word is set: a reader's release helps
    ///   only a writer waiting for readers to go), unless one is already
    ///   on its way ([`WAKE_SENT_OFFSET`]). All these stores and
    ///   loads are sequentially consistent, so either the driver sees the
    ///   release when it looks, or the releaser sees the count and wakes
    ///   it: no wake-up is lost (the futex argument). A wake that finds
    ///   the driver's queue full is dropped: the queue then holds messages
    ///   the driver handles after the release, and it looks at the lock
    ///   after every message.
    /// - The driver answers kept calls in arrival order: a writer first
    ///   takes the writer word, and while a writer waits (for the word or
    ///   for readers to go) the readers after it wait too, so readers do
    ///   not starve writers; readers behind no writer are all let in.
    /// - A waiter killed while kept: its reply fails (`DeadPeer`) and the
    ///   driver gives back what it took for it; the close of its handle
    ///   (which the monitor sends when it dies) drops its kept call and
    ///   releases its slot, as for a holder killed mid-copy, and the
    ///   driver then answers the waiters that release lets in.
    pub mod ram_lock {
        pub const WRITER_OFFSET: usize = 0;
        /// u32: calls the driver keeps in [`super::OP_LOCK_WAIT`] plus its
        /// own requests waiting for the lock. Written by the driver only.
        pub const WAITERS_OFFSET: usize = 8;
        /// u32: 1 while an [`super::OP_LOCK_WAKE`] is on its way. A
        /// releaser sends one only if it changes this from 0 to 1; the
        /// driver stores 0 before it looks at the lock, after every message.
        /// So the queue holds at most one wake, however many releases come
        /// before the driver runs (each wake would otherwise take a place
        /// in the queue that a waiter's call needs).
        pub const WAKE_SENT_OFFSET: usize = 12;
        /// Word 2 of [`super::OP_LOCK_WAIT`]: wait to read.
        pub const WAIT_READ: u64 = 0;
        /// Word 2 of [`super::OP_LOCK_WAIT`]: wait to write.
        pub const WAIT_WRITE: u64 = 1;
        pub const READERS_OFFSET: usize = 64;
        pub const OFFSETS_OFFSET: usize = 1024;
        /// Three u64 counters the mapping clients add to after each
        /// transfer they make themselves (requests, bytes read, bytes
        /// written), which `OP_STATS` adds to the driver's own: the
        /// driver never sees those transfers. Reported, not trusted.
        pub const STATS_OFFSET: usize = 3072;
        /// Handles that can map the disk at once; later opens use READ
        /// and WRITE through leases (the driver copies).
        pub const SLOTS: usize = 256;
        const _: () = assert!(WAITERS_OFFSET >= WRITER_OFFSET + 4 && WAITERS_OFFSET + 4 <= WAKE_SENT_OFFSET);
        const _: () = assert!(WAKE_SENT_OFFSET + 4 <= READERS_OFFSET);
        const _: () = assert!(READERS_OFFSET + SLOTS <= OFFSETS_OFFSET);
        const _: () = assert!(OFFSETS_OFFSET + 8 * SLOTS <= STATS_OFFSET);
        /// u64: [`LIVE`] while the driver lives, stored before it maps the
        /// page into anyone. When the driver ends the kernel zeroes the
        /// first page of each region it paged in the device-mapping area
        /// (`abi::layout::USER_DEVICE_MAP_BASE`), which is a window's lock
        /// page, from the last word down (`kernel/src/pager.rs`,
        /// `zero_device_lock_pages_of`); this is the last word, so a client
        /// that loads a handle's offset word and then this one, and finds
        /// it `LIVE`, loaded the offset before the zeroing began. Not
        /// `LIVE`: the driver has ended; the client's transfer or seek is
        /// `EIO`, and nothing is copied (branch `drv`).
        pub const LIVE_OFFSET: usize = abi::layout::PAGE_SIZE as usize - 8;
        /// The value of [`LIVE_OFFSET`] while the driver lives.
        pub const LIVE: u64 = 0x4556_494c_4b53_4944; // "DISKLIVE", little-endian
        const _: () = assert!(STATS_OFFSET + 24 <= LIVE_OFFSET);
    }
}

/// The virtual-memory manager (servers/vm), called by the monitor.
pub mod vm {
    pub const QUEUE: u32 = 0;
    pub const READY: u64 = 0x0056_4d52_4459;
    /// Page the new image of process word 1 (kernel pid): word 2 = the
    /// image id from `OP_LOAD_IMAGE` (its segments are paged from the
    /// program file) and the heap region (zero-filled on first touch,
    /// Ridge's `sbrk`). Word 3 = the heap region's bytes (rounded up to a
    /// page; 0 or more than `abi::layout::USER_HEAP_MAX_BYTES`: all of
    /// it): the monitor passes the process's hard heap limit
    /// ([`super::rlimit`]), so a touch past it faults even without the
    /// runtime's `sbrk`. Call it after `proc_image`, before `proc_start`.
    pub const OP_NEW_IMAGE: u64 = 1;
    /// Copy-on-write fork: give child word 2 a copy of parent word 1's
    /// address space and pager regions.
    pub const OP_FORK: u64 = 2;
    /// Statistics. Reply words: page faults served, forks, pages shared
    /// (by forks and by mapping program pages), images held.
    pub const OP_STATS: u64 = 3;
    /// From its starter (init), once: word 1 = the monitor's kernel pid,
    /// the only process whose other requests are obeyed.
    pub const OP_SET_MONITOR: u64 = 4;
    /// Read the loadable parts of a program file, or find them cached:
    /// word 1 = a handle open for reading at the file's manager (the
    /// caller closes it afterwards), word 2 = that manager's kernel pid
    /// (0: the directory manager of the bootstrap connection), word 3 =
    /// its queue; data = the file's [`super::Stat`] (manager, inode,
    /// mtime and size are the cache key). Reply: word 0 = image
    /// id, word 1 = entry point; ENOEXEC for a file that is not a program.
    pub const OP_LOAD_IMAGE: u64 = 5;
    /// Process word 1 (kernel pid) has ended: forget its regions.
    pub const OP_EXIT: u64 = 6;
}

/// The pipe manager (servers/pipe), one process per pipe (Ridge §3). The
/// monitor starts it with the arguments `MONITOR_PID MODE LOAN_MIN`
/// (decimal pid, [`pipe::Mode`] name, bytes); it sends the monitor
/// `READY, queue, read handle, write handle` and then serves [`io`]
/// requests until both ends are closed.
///
/// Reads and writes of any size are ONE call (the runtime's
/// `unix_pipe.rs`): `io::OP_READ` with word 2 = bytes wanted and the
/// caller's buffer lent as the call's receive buffer; `io::OP_WRITE`
/// with word 2 = bytes and the buffer lent as the send buffer (up to one
/// page of it also travels with the message). The manager moves bytes
/// with `lease_read`/`lease_write` through its buffer, or, for a loaned
/// write, straight from the writer's buffer to the reader's with
/// `lease_copy`.
///
/// Messages from the monitor (one-way `send`s on [`QUEUE`], never calls,
/// so neither side ever waits for the other): [`OP_SET_LOAN_MIN`],
/// [`OP_GRANT`], [`OP_RECLAIM`].
pub mod pipe {
    pub const QUEUE: u32 = 0;
    pub const READY: u64 = 0x0050_4950_4500;
    /// The buffer of a `big` or `loan` pipe (Linux holds 64 KiB too).
    pub const CAPACITY_BYTES: usize = 64 * 1024;
    /// The buffer of a `small` pipe (NetBSD's old pipes: one page).
    pub const SMALL_CAPACITY_BYTES: usize = 4 * 1024;
    /// POSIX `PIPE_BUF`: a write of at most this many bytes is never split
    /// or interleaved with other writers' data. One message's data, so
    /// such a write arrives at the pipe manager in one call.
    pub const ATOMIC_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize;
    /// Default of `pipe.loan_min`: shortest write served from the
    /// writer's pages in `loan` mode (the seed's "big enough" transfers).
    pub const DEFAULT_LOAN_MIN_BYTES: u64 = 16 * 1024;
    /// Default of `pipe.loan_cap`: bytes of writes on loan, all pipes
    /// together (the seed's first TODO: a limit on loaned memory).
    pub const DEFAULT_LOAN_CAP_BYTES: u64 = 8 << 20;
    /// Loan budget the monitor grants a pipe manager at a time, at least
    /// (more when one write needs more).
    pub const GRANT_BYTES: u64 = 256 * 1024;

    /// From the monitor: word 1 = the new `pipe.loan_min`.
    pub const OP_SET_LOAN_MIN: u64 = 100;
    /// From the monitor: word 1 = loan budget granted (bytes), added to
    /// what the manager holds.
    pub const OP_GRANT: u64 = 101;
    /// From the monitor: give back the budget not in use now (and the
    /// rest as loans end), with `monitor::OP_PIPE_LOAN`.
    pub const OP_RECLAIM: u64 = 102;

    /// The three designs of seed 002, boot option `pipe=small|big|loan`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Mode {
        /// A 4 KiB buffer, every byte copied in and out (old pipes).
        Small,
        /// A 64 KiB buffer (new pipes).
        Big,
        /// A 64 KiB buffer for small writes; writes of at least
        /// `pipe.loan_min` bytes go straight from the writer's pages to
        /// the reader (new pipes with `uvm_loan`).
        Loan,
    }

    impl Mode {
        pub fn parse(s: &str) -> Option<Mode> {
            match s {
                "small" => Some(Mode::Small),
                "big" => Some(Mode::Big),
                "loan" => Some(Mode::Loan),
                _ => None,
            }
        }

        pub fn name(self) -> &'static str {
            match self {
                Mode::Small => "small",
                Mode::Big => "big",
                Mode::Loan => "loan",
            }
        }

        /// The buffer this design uses.
        pub fn capacity_bytes(self) -> usize {
            match self {
                Mode::Small => SMALL_CAPACITY_BYTES,
                Mode::Big | Mode::Loan => CAPACITY_BYTES,
            }
        }
    }

    /// The run-time limits' names (boot options of the same names, and
    /// `monitor::OP_SET_LIMIT`).
    pub mod limits {
        /// `small`, `big` or `loan` (default): the design of pipes made from now on.
        pub const MODE: &str = "pipe";
        /// Shortest loaned write, bytes (default 16 KiB; at least 1).
        pub const LOAN_MIN: &str = "pipe.loan_min";
        /// Bytes on loan in all pipes together (default 8 MiB; 0: no loans).
        pub const LOAN_CAP: &str = "pipe.loan_cap";
        /// Longest value of `pipe.loan_min` and `pipe.loan_cap`: the
        /// longest lease.
        pub const MAX_BYTES: u64 = abi::lease::MAX_LEASE_BYTES * 64;
    }
}

/// A file manager (servers/filemgr): with the boot option
/// `monitor.files=per-file`, Ridge's arrangement: every regular file that
/// is open has a process of its own whose data space holds the file's
/// contents (Ridge §3), shared by every open of that file. The monitor
/// starts it (argument: the monitor's kernel pid), it sends the monitor
/// `[READY, queue, 0, 0]` on the monitor's queue 1, and the monitor then
/// attaches it to the file and opens handles on it. Clients send it the
/// [`io`] requests READ, WRITE, SEEK, FSTAT on those handles.
pub mod filemgr {
    pub const QUEUE: u32 = 0;
    pub const READY: u64 = 0x0046_4d47_5200;
    /// From the monitor, once: load the file. Word 1 = the directory
    /// manager's kernel pid, word 2 = its queue, word 3 = a handle open at
    /// it for reading and writing (the file manager reads the contents
    /// through it now and writes them back through it at the end).
    /// Reply: word 0 = bytes loaded.
    pub const OP_ATTACH: u64 = 70;
    /// From the monitor: a new open of the file with flags word 1 (with
    /// `O_TRUNC`, the contents go). Reply: word 0 = handle.
    pub const OP_OPEN: u64 = 71;
    /// The monitor's `io::OP_CLOSE` of the last handle gets reply word 1 =
    /// 1: the contents are written back, and the file manager waits, idle,
    /// for another `OP_ATTACH` (it exits when the write-back failed).
    pub const CLOSED_LAST: u64 = 1;
}

/// The console device manager (servers/tty): line discipline in front of
/// the console driver. It serves [`device::OP_OPEN`] and [`io`] requests.
pub mod tty {
    pub const QUEUE: u32 = 0;
    pub const READY: u64 = 0x0054_5459_0000;
    /// From the monitor, once, at its start: word 1 = the monitor's kernel
    /// pid, word 2 = its queue (where ^C is reported).
    pub const OP_SET_MONITOR: u64 = 65;
    /// On the handle in word 1: the next line typed is not echoed (a
    /// password, read by `su` and `login`); echo comes back by itself at
    /// that line's end (NL, CR, ^D or ^C), which echoes as CR NL, so a
    /// program that dies before the line is typed cannot leave the
    /// terminal silent. What `termios` `ECHO` off and back on does for
    /// `getpass(3)`.
    pub const OP_NO_ECHO_LINE: u64 = 66;
    /// A one-way `send` from the terminal manager's starter (init) only:
    /// the console driver was started again, as kernel pid word 1 with
    /// queue word 2. The manager subscribes to its input and writes
    /// through it from then on (output written while no driver answered
    /// is kept up to [`DOWN_OUTPUT_BYTES`], then dropped).
    pub const OP_SET_CONSOLE: u64 = 67;
    /// Most bytes of output the terminal manager keeps while its console
    /// driver is gone, written to the new driver once it subscribes.
    pub const DOWN_OUTPUT_BYTES: usize = 4096;
    /// From the monitor only, its answer to [`super::monitor::OP_TTY_READER`]:
    /// word 1 = the read's token, word 2 = the reader's process group,
    /// word 3 = [`super::monitor::reader`] flags. The manager serves,
    /// refuses or keeps the read it had kept unanswered meanwhile. Reply:
    /// 0, or `ENOENT` when no read waits under that token (it ended).
    pub const OP_READER: u64 = 68;
    /// From the monitor only (`monitor::OP_TTY_TYPE`, root's `TIOCSTI`):
    /// on the handle in word 1, the data as typed input. Reply: the bytes
    /// taken.
    pub const OP_TYPE: u64 = 69;
    /// Most background reads the manager keeps waiting (held for their
    /// group's turn in the foreground); one more gets `EIO`. The rest of
    /// its waiting reads are left to the foreground.
    pub const MAX_HELD_READS: usize = 32;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_word_round_trips() {
        assert_eq!(fs::owner_word(5, 6), 5 << 32 | 6);
        assert_eq!(fs::owner_of(fs::owner_word(1000, u32::MAX)), (1000, u32::MAX));
    }

    #[test]
    fn a_forwarded_header_round_trips_and_a_short_one_is_refused() {
        let f = fs::Forwarded {
            fd: 3,
            handle: fs::FORWARDED_HANDLE_BIT | 7,
            pid: 9,
            flags: 0o1101,
            monitor_queue: 0,
            create_mode: 0o644,
        };
        let mut data = f.encode().to_vec();
        data.extend_from_slice(b"/a\0/disk/a");
        assert_eq!(fs::Forwarded::decode(&data), Some((f, &b"/a\0/disk/a"[..])));
        assert_eq!(fs::Forwarded::decode(&data[..fs::Forwarded::BYTES - 1]), None);
    }
    #[test]
    fn a_forwarded_opens_parts_and_its_riding_handles() {
        type F = fs::Forwarded;
        assert_eq!(F::parts(b"/a\0/disk/a"), Some((&b"/a"[..], &b"/disk/a"[..], &b""[..])));
        let mut rest = b"/a\0/disk/a\0".to_vec();
        rest.extend_from_slice(&7u64.to_le_bytes());
        rest.extend_from_slice(&(fs::FORWARDED_HANDLE_BIT | 1).to_le_bytes());
        let (inner, abs, closes) = F::parts(&rest).unwrap();
        assert_eq!((inner, abs), (&b"/a"[..], &b"/disk/a"[..]));
        assert!(F::handles(closes).eq([7, fs::FORWARDED_HANDLE_BIT | 1]));
        rest.push(0);
        assert_eq!(F::parts(&rest), None, "a ragged tail");
        assert_eq!(F::parts(b"/a"), Some((&b"/a"[..], &b""[..], &b""[..])));
    }

    #[test]
    fn signal_names_are_in_number_order_with_or_without_sig() {
        assert!(signal::NAMES.windows(2).all(|w| w[0].1 < w[1].1));
        assert_eq!(signal::from_name("KILL"), Some(signal::SIGKILL));
        assert_eq!(signal::from_name("SIGFPE"), Some(signal::SIGFPE));
        assert_eq!(signal::from_name("kill"), None);
    }
}
