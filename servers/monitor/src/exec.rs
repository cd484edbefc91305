//! exec: a program file loaded into a process, with its arguments,
//! environment and ids in the exec block (`protocols::unix::exec_args`),
//! and started. With a VM manager the image is paged in from the file
//! (the manager reads and keeps its loadable parts); without one the
//! kernel loads it from a copy read here, and the last few are kept.
//!
//! What it is not: making the process (`procs::fork`, `sessions`), or
//! checking the path's directories (`names`).
//!
//! Invariants: the file must be a regular file the process may execute.
//! A set-user-ID file (`mode::S_ISUID`) changes the effective uid only
//! once the new image has replaced the old one, so a failed exec leaves
//! the caller as it was.
//! Once the kernel has replaced the image the old program is gone: if the
//! new one cannot be paged, the process is ended.

use crate::state::{Answer, Monitor, err, kernel_errno};
use crate::tables::CachedImage;
use abi::Pid;
use alloc::vec::Vec;
use protocols::unix::{Errno, Stat, errno, exec_args, fs, io, mode, open_flags, vm};
use runtime::msg::Page;
use runtime::sys;
use unix_core::path;

/// The Linux personality server (servers/linux): an executable without
/// Ridgeback's program note (`abi::program_note`) is run by it, as a
/// `binfmt_misc` interpreter runs a foreign binary on Linux: it is exec'd
/// in the program's place with argv = [this, the program's path, the
/// program's argv...], and it starts the program as a foreign process
/// (docs/linux-abi.md).
pub const LINUX_SERVER: &str = "/bin/linux";

/// Program images kept after an exec, so the next exec of the same file
/// does not read it again.
const IMAGE_CACHE_ENTRIES: usize = 8;

impl Monitor {
    /// `OP_EXEC`: no answer on success (the process runs the new image).
    pub fn exec(&mut self, me: u64, w: [u64; 4], data: &[u8]) -> Answer {
        let mut parts = data.split(|&b| b == 0);
        let Some(path_bytes) = parts.next() else { return err(errno::EINVAL) };
        let (argc, envc) = (w[1] as usize, w[2] as usize);
        let strings: Vec<&[u8]> = parts.take(argc + envc).collect();
        if strings.len() != argc + envc {
            return err(errno::EINVAL);
        }
        let abs = match self.abs_path(me, path_bytes) {
            Ok(a) => a,
            Err(e) => return err(e),
        };
        let kpid = self.procs[&me].kpid;
        if kpid == self.starter {
            return err(errno::EPERM);
        }
        match self.exec_into(me, kpid, &abs, &strings, argc) {
            Ok(()) => Answer::Later,
            Err(e) => err(e),
        }
    }

    /// Load `abs` into process `kpid` (UNIX pid `p`) and start it.
    pub fn exec_into(
        &mut self,
        p: u64,
        kpid: Pid,
        abs: &str,
        strings: &[&[u8]],
        argc: usize,
    ) -> Result<(), Errno> {
        let (st, rest) = self.lookup(abs).map_err(|(e, _)| e)?;
        if rest.is_some() || !mode::is_reg(st.mode) || !self.permits(p, &st, 1) {
            return Err(errno::EACCES);
        }
        self.may_exec(p, st.size_bytes)?;
        if abs != LINUX_SERVER && self.is_foreign_program(abs)? {
            let mut with_server: Vec<&[u8]> = Vec::with_capacity(strings.len() + 2);
            with_server.push(LINUX_SERVER.as_bytes());
            with_server.push(abs.as_bytes());
            with_server.extend_from_slice(strings);
            return self.exec_into(p, kpid, LINUX_SERVER, &with_server, argc + 2);
        }
        // A set-user-ID file runs with its owner's uid (the real uid stays).
        let uid = if st.mode & mode::S_ISUID != 0 { st.uid } else { self.procs[&p].uid };
        let gid = self.procs[&p].gid;
        let header = exec_args::Header { argc: argc as u32, envc: (strings.len() - argc) as u32, uid, gid };
        let mut block = exec_args::encode_header(header).to_vec();
        for s in strings {
            block.extend_from_slice(s);
            block.push(0);
        }
        // After the environment, where argv and environ readers do not
        // look: the heap limit for the runtime's sbrk (`limits`).
        if let Some(limit) = self.heap_limit_string(p) {
            block.extend_from_slice(limit.as_bytes());
            block.push(0);
        }
        if block.len() as u64 > abi::layout::MAX_ARGS_BYTES {
            return Err(errno::E2BIG);
        }
        let base = path::split_last(abs).map_or(abs, |(_, n)| n);
        // NUL-terminated within the field.
        let mut name = [0u8; protocols::unix::PROCESS_NAME_BYTES];
        let n = base.len().min(name.len() - 1);
        name[..n].copy_from_slice(&base.as_bytes()[..n]);
        match self.vm {
            // The VM manager pages text and data in from the file.
            Some(vm_link) => {
                let (mount, _) = self.route(abs);
                let (w, _) = self.path_call(abs, [fs::OP_OPEN, open_flags::O_RDONLY, 0, 0], &mut [])?;
                let handle = w[0];
                let (manager, queue) = (self.mounts[mount].manager.0, w[1]);
                let loaded =
                    self.call(vm_link, [vm::OP_LOAD_IMAGE, handle, manager, queue], &st.encode(), &mut []);
                let _ = self.mount_call(mount, [io::OP_CLOSE, handle, 0, 0], &mut []);
                let (w, _) = loaded?;
                let (image, entry) = (w[0], w[1]);
                sys::proc_image(kpid, entry, &block, &name).map_err(kernel_errno)?;
                let heap_bytes = self.heap_region_bytes(p);
                if let Err(e) =
                    self.call(vm_link, [vm::OP_NEW_IMAGE, kpid.0, image, heap_bytes], &[], &mut [])
                {
                    // The old image is gone and the new one has no pager:
                    // the process cannot run.
                    let _ = sys::kill(kpid);
                    return Err(e);
                }
            }
            // No VM manager: the kernel loads the file from this buffer.
            None => {
                let image = self.image(abs, &st)?;
                let bytes = &self.images[image].bytes;
                sys::proc_exec(kpid, bytes, &block, &name).map_err(kernel_errno)?;
            }
        }
        if let Some(proc) = self.procs.get_mut(&p) {
            proc.name = name;
            proc.uid = uid;
            // Caught signals go back to their default action: the new
            // image has no trap to run (POSIX `exec`).
            proc.caught = 0;
            proc.pending = 0;
        }
        sys::proc_start(kpid).map_err(kernel_errno)?;
        self.stats[2] += 1;
        Ok(())
    }

    /// Whether `abs` is an ELF file without Ridgeback's program note (in a
    /// `PT_NOTE` segment within its first page): a Linux program. Anything
    /// that is not ELF is not foreign (the exec fails as before). One
    /// open, one read and one close more per exec.
    fn is_foreign_program(&mut self, abs: &str) -> Result<bool, Errno> {
        let (mount, _) = self.route(abs);
        let (w, _) = self.path_call(abs, [fs::OP_OPEN, open_flags::O_RDONLY, 0, 0], &mut [])?;
        let handle = w[0];
        let mut page = Page::zeroed();
        let page_bytes = page.0.len() as u64;
        let read = self.mount_call(mount, [io::OP_READ, handle, page_bytes, 0], &mut page.0);
        let _ = self.mount_call(mount, [io::OP_CLOSE, handle, 0, 0], &mut []);
        let (w, _) = read?;
        let head = &page.0[..(w[0] as usize).min(page.0.len())];
        Ok(elf_lacks_ridgeback_note(head))
    }

    /// The program file `abs` (whose stat is `st`), from the cache or read
    /// through the directory manager. Returns its cache index.
    fn image(&mut self, abs: &str, st: &Stat) -> Result<usize, Errno> {
        let (mount, _) = self.route(abs);
        let manager = self.mounts[mount].manager.0;
        if let Some(i) = self.images.iter().position(|c| {
            c.manager == manager && c.ino == st.ino && c.mtime_ns == st.mtime_ns && c.size == st.size_bytes
        }) {
            return Ok(i);
        }
        if st.size_bytes > abi::layout::MAX_EXEC_BYTES {
            return Err(errno::ENOMEM);
        }
        let (w, _) = self.path_call(abs, [fs::OP_OPEN, open_flags::O_RDONLY, 0, 0], &mut [])?;
        let handle = w[0];
        let mut bytes = Vec::new();
        if bytes.try_reserve_exact(st.size_bytes as usize).is_err() {
            let _ = self.mount_call(mount, [io::OP_CLOSE, handle, 0, 0], &mut []);
            return Err(errno::ENOMEM);
        }
        let mut page = Page::zeroed();
        let page_bytes = page.0.len() as u64;
        let result = loop {
            match self.mount_call(mount, [io::OP_READ, handle, page_bytes, 0], &mut page.0) {
                // In the reply or through the lease: word 0 counts the bytes.
                Ok((w, _)) if w[0] > 0 => {
                    bytes.extend_from_slice(&page.0[..(w[0] as usize).min(page.0.len())])
                }
                Ok(_) => break Ok(()),
                Err(e) => break Err(e),
            }
            if bytes.len() as u64 > abi::layout::MAX_EXEC_BYTES {
                break Err(errno::ENOMEM);
            }
        };
        let _ = self.mount_call(mount, [io::OP_CLOSE, handle, 0, 0], &mut []);
        result?;
        if self.images.len() == IMAGE_CACHE_ENTRIES {
            self.images.remove(0);
        }
        self.images.push(CachedImage {
            manager,
            ino: st.ino,
            mtime_ns: st.mtime_ns,
            size: st.size_bytes,
            bytes,
        });
        Ok(self.images.len() - 1)
    }
}

/// Whether `head` (the first bytes of a file) is a 64-bit ELF file none of
/// whose `PT_NOTE` segments (those within `head`) holds the Ridgeback note.
fn elf_lacks_ridgeback_note(head: &[u8]) -> bool {
    const PT_NOTE: u32 = 4;
    if head.len() < 64 || &head[..4] != b"\x7fELF" || head[4] != 2 {
        return false;
    }
    let u16_at = |i: usize| u16::from_le_bytes([head[i], head[i + 1]]) as usize;
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&head[i..i + 8]);
        u64::from_le_bytes(b)
    };
    let (phoff, phentsize, phnum) = (u64_at(32) as usize, u16_at(54), u16_at(56));
    for i in 0..phnum {
        let Some(at) = phentsize.checked_mul(i).and_then(|o| o.checked_add(phoff)) else { break };
        if at.saturating_add(56) > head.len() {
            break;
        }
        let kind = u32::from_le_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
        let (offset, size) = (u64_at(at + 8) as usize, u64_at(at + 32) as usize);
        if kind == PT_NOTE
            && let Some(notes) = offset.checked_add(size).and_then(|end| head.get(offset..end))
            && abi::program_note::is_in(notes)
        {
            return false;
        }
    }
    true
}
