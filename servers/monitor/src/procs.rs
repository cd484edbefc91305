//! The UNIX process table's entries.

use crate::files::FdTable;
use abi::Pid;
use alloc::string::String;
use runtime::msg::ReplyHandle;

pub struct Proc {
    pub kpid: Pid,
    pub ppid: u64,
    pub pgid: u64,
    pub uid: u32,
    pub gid: u32,
    pub cwd: String,
    pub fds: FdTable,
    /// Bit n set: signal n is ignored.
    pub ignored: u64,
    /// Ended: (wait status, CPU ns), until the parent waits.
    pub zombie: Option<(u64, u64)>,
    /// A `wait` not answered yet: its reply handle and target (-1 = any).
    pub waiting: Option<(ReplyHandle, i64)>,
    pub children_cpu_ns: u64,
    /// The signal that made the kernel end it, for the wait status.
    pub signal_sent: Option<u64>,
    pub name: [u8; 32],
    /// Its parent ended and init adopted it: nobody waits for it.
    pub orphaned: bool,
}

impl Proc {
    /// A root process with no descriptors (init, and sessions init starts).
    pub fn init(kpid: Pid) -> Proc {
        let pid = protocols::unix::pid::from_kernel(kpid);
        let mut name = [0u8; 32];
        name[..4].copy_from_slice(b"init");
        Proc {
            kpid,
            ppid: 0,
            pgid: pid,
            uid: 0,
            gid: 0,
            cwd: String::from("/"),
            fds: FdTable::new(),
            ignored: 0,
            zombie: None,
            waiting: None,
            children_cpu_ns: 0,
            signal_sent: None,
            name,
            orphaned: false,
        }
    }

    /// The child's entry after `fork`: the same ids, directory, process
    /// group, descriptors (the caller adds the references) and ignored
    /// signals (POSIX).
    pub fn forked(&self, kpid: Pid, parent: u64) -> Proc {
        Proc {
            kpid,
            ppid: parent,
            pgid: self.pgid,
            uid: self.uid,
            gid: self.gid,
            cwd: self.cwd.clone(),
            fds: self.fds.clone(),
            ignored: self.ignored,
            zombie: None,
            waiting: None,
            children_cpu_ns: 0,
            signal_sent: None,
            name: self.name,
            orphaned: false,
        }
    }
}
