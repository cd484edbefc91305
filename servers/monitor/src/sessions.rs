//! Init's sessions: `OP_START` starts a program as a root process whose
//! descriptors 0–2 are the console, in a process group of its own that is
//! the console's foreground. The first start makes the console's device
//! entries (`/dev/console`, `/dev/tty`) at the directory manager.
//!
//! What it is not: `fork` (`procs`), or loading the program (`exec`,
//! which a start uses once the process exists).
//!
//! Invariants: only the starter (init) may start a session; anyone else
//! gets `ENOSYS`, as for an unknown call.

use crate::state::{Answer, Monitor, err, kernel_errno, ok};
use crate::tables::Proc;
use abi::Pid;
use alloc::vec::Vec;
use protocols::unix::{errno, fs, io, open_flags, pid};
use runtime::sys;

impl Monitor {
    /// Init's request: start `data` (path NUL args) as a root process whose
    /// descriptors 0–2 are the console.
    pub fn start(&mut self, sender: Pid, me: u64, argc: u64, data: &[u8]) -> Answer {
        // Making the device entries changes names.
        self.forget_lookups();
        if sender != self.starter {
            return err(errno::ENOSYS);
        }
        if !self.devices_made {
            self.make_devices();
        }
        let mut parts = data.split(|&b| b == 0);
        let Some(path_bytes) = parts.next() else { return err(errno::EINVAL) };
        let strings: Vec<&[u8]> = parts.take(argc as usize).collect();
        let abs = match self.abs_path(me, path_bytes) {
            Ok(a) => a,
            Err(e) => return err(e),
        };
        let kpid = match sys::proc_create("unix") {
            Ok(k) => k,
            Err(e) => return err(kernel_errno(e)),
        };
        let p = pid::from_kernel(kpid);
        let mut proc = Proc::init(kpid);
        proc.ppid = me;
        proc.pgid = p;
        self.procs.insert(p, proc);
        // The group given the terminal again after its manager restarts.
        self.terminal.session_pgid = p;
        self.terminal.foreground = p;
        // Standard input, output and error: the console, if there is one.
        let console = self.open_object(p, "/dev/console", open_flags::O_RDWR, 0);
        if let Err(e) = console {
            runtime::println!("monitor: no console for {abs}: {}", errno::name(e));
        }
        if let Ok(info) = console {
            if let Some(i) = self.files.add(info) {
                self.files.retain(i);
                self.files.retain(i);
                let fds = &mut self.procs.get_mut(&p).expect("just added").fds;
                fds.fds[0] = Some(i);
                fds.fds[1] = Some(i);
                fds.fds[2] = Some(i);
            }
            if let Some((tp, tq)) = self.tty
                && let Ok(l) = self.link(tp, tq)
            {
                let _ = self.call(l, [io::OP_FOREGROUND, info.handle, 1, p], &[], &mut []);
            }
        }
        match self.exec_into(p, kpid, &abs, &strings, strings.len()) {
            Ok(()) => ok(p),
            Err(e) => {
                let _ = sys::kill(kpid);
                err(e)
            }
        }
    }

    fn make_devices(&mut self) {
        self.devices_made = true;
        if let Some((tp, tq)) = self.tty {
            for name in ["/dev/console", "/dev/tty"] {
                if let Err(e) = self.fs_call([fs::OP_MKDEV, tp.0, tq as u64, 0o620], name.as_bytes(), &mut [])
                {
                    runtime::println!("monitor: cannot make {name}: {}", errno::name(e));
                }
            }
        }
    }
}
