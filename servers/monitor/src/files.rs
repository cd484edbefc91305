//! Descriptors: `open`, `close`, `dup`, `pipe` and where a descriptor's
//! requests go (`OP_FD_INFO`). An open goes to the directory manager, to
//! a device's manager, or (per-file mode) to a file manager of the file's
//! own; a pipe gets a pipe manager. This room starts those helper servers
//! and hears of their ends.
//!
//! What it is not: the tables themselves (`tables`), or the checks on
//! names made before an open (`names`). After `open` a process talks to
//! the object's manager directly (Ridge §3); the monitor hears of the
//! descriptor again only at `close`, `dup`, `fork` and exit.
//!
//! Invariants: a manager hears `io::OP_CLOSE` for a description once,
//! when its last descriptor goes ([`Monitor::release`]), or instead finds
//! its handle riding on a forwarded open (`forward_create`). A file manager
//! serves one inode; `file_managers` maps the inode to it until it ends.

use crate::state::{Answer, Monitor, err, kernel_errno};
use abi::Pid;
use abi::msg::Kind;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::monitor::{self, MAX_FDS};
use protocols::unix::{Errno, FdInfo, Stat, device, errno, filemgr, fs, io, mode, open_flags, pipe};
use runtime::msg::{self, Queue};
use runtime::sys;

impl Monitor {
    /// `OP_OPEN`. Reply: the fd and where its requests go.
    ///
    /// The descriptor in word 3 (`monitor::OP_OPEN`: the process's close
    /// of a regular file, which the runtime lets ride on its next open
    /// instead of a call) is closed first, so its number is free for this
    /// open; a description whose last
    /// descriptor went is closed at its manager before the open is made
    /// there, or, when the open is forwarded to the same manager, by that
    /// manager before it opens ([`Monitor::forward_create`]).
    pub fn open(&mut self, me: u64, data: &[u8], flags: u64, create_mode: u32, closing: u64) -> Answer {
        // Kept between calls: no allocation per open in the first-fit heap.
        let mut closed = core::mem::take(&mut self.closing);
        // Word 3: fd + 1 of a close riding on the open (0: none). A
        // descriptor that is not open was closed already: nothing to do
        // (the runtime sends its close again when the open fails).
        let fds = &mut self.procs.get_mut(&me).expect("caller exists").fds;
        if let Some(fd) = closing.checked_sub(1)
            && let Some(i) = fds.get(fd)
        {
            fds.fds[fd as usize] = None;
            closed.extend(self.files.release(i).map(|f| f.info));
        }
        let answer = self.open_path(me, data, flags, create_mode, &mut closed);
        for info in closed.drain(..) {
            self.close_at_manager(info);
        }
        self.closing = closed;
        answer
    }

    /// The rest of [`Monitor::open`]; `closed`: descriptions to close at
    /// their managers, of which a forward takes those of its manager.
    fn open_path(
        &mut self,
        me: u64,
        path: &[u8],
        flags: u64,
        create_mode: u32,
        closed: &mut Vec<FdInfo>,
    ) -> Answer {
        let abs = match self.abs_path(me, path) {
            Ok(a) => a,
            Err(e) => return err(e),
        };
        let fd = match self.free_fd(me, 0) {
            Ok(fd) => fd,
            Err(e) => return err(e),
        };
        // The caller's `umask` (POSIX `open`: mode & ~umask).
        let create_mode = create_mode & !self.procs[&me].umask;
        if let Some(passed_on) = self.forward_create(me, &abs, fd, flags, create_mode, closed) {
            return passed_on;
        }
        // Closed at their managers before the open is made there.
        for info in closed.drain(..) {
            self.close_at_manager(info);
        }
        self.open_at(me, &abs, fd, flags, create_mode)
    }

    /// The rest of [`Monitor::open`]: open `abs` as descriptor `fd` of
    /// `me` and answer with it.
    fn open_at(&mut self, me: u64, abs: &str, fd: usize, flags: u64, create_mode: u32) -> Answer {
        let opened = self
            .open_object(me, abs, flags, create_mode)
            .or_else(|e| self.open_after_restart(me, abs, flags, create_mode, e));
        let info = match opened {
            Ok(i) => i,
            Err(e) => return err(e),
        };
        let Some(i) = self.files.add(info) else {
            self.close_at_manager(info);
            return err(errno::ENFILE);
        };
        self.procs.get_mut(&me).expect("caller exists").fds.fds[fd] = Some(i);
        let [a, b, c] = info.encode();
        Answer::Words([fd as u64, a, b, c])
    }

    /// `O_CREAT` of a name not in the lookup cache: pass the process's
    /// call on to the mount's manager (`forward_wait`,
    /// `fs::OP_OPEN_FORWARDED`), which makes the file (`O_EXCL`) and
    /// answers the process itself, one round trip where the monitor's own
    /// call to the manager made two (docs/filesystem.md, "R2 on disk: one
    /// round trip"; memfs too, unless per-file managers serve its files).
    /// The descriptor is recorded first, under a handle the
    /// monitor chooses, so the tables are right whatever the manager
    /// does: an open that fails there comes back (`OP_OPEN_DECLINED`,
    /// [`Monitor::open_declined`]) and is made the usual way. The checks
    /// are [`Monitor::create_new`]'s; `None` when they or anything else
    /// say the usual way.
    ///
    /// `closed`: descriptions closed by this request; the regular files of
    /// this manager among them ride on the forward (their handles after
    /// the paths, closed there first: no message of their own) and are
    /// taken out.
    fn forward_create(
        &mut self,
        me: u64,
        abs: &str,
        fd: usize,
        flags: u64,
        create_mode: u32,
        closed: &mut Vec<FdInfo>,
    ) -> Option<Answer> {
        if flags & open_flags::O_CREAT == 0 || self.lookups.contains_key(abs) {
            return None;
        }
        let mount = self.mount_of(abs);
        let m = &self.mounts[mount];
        // Per-file mode gives memfs's regular files managers of their own
        // (`fs_open`): the usual way.
        if (self.per_file && self.is_memfs(mount)) || m.remount {
            return None;
        }
        let (manager, link) = (m.manager, m.link);
        let p = &self.procs[&me];
        let (uid, gid) = (p.uid, p.gid);
        if uid != 0 {
            let (parent, _) = unix_core::path::split_last(abs)?;
            match self.lookups.get(parent) {
                Some((st, None)) if mode::is_dir(st.mode) && self.permits(me, st, 3) => {}
                _ => return None,
            }
        }
        let rides = |info: &FdInfo| info.manager_pid == manager.0 && mode::is_reg(info.file_type);
        let riding = closed.iter().filter(|i| rides(i)).count();
        // The path inside the manager is at most the mount's inner root
        // longer than `abs`.
        let most_bytes = fs::Forwarded::BYTES + m.inner.len() + abs.len() + 1 + abs.len() + 1 + 8 * riding;
        if most_bytes > abi::msg::MAX_DATA_BYTES as usize {
            return None;
        }
        // Unique among this monitor's opens (the low half) and not
        // guessable (the high half), as a manager's own handles.
        self.forwarded_opens += 1;
        let check = (sys::rdtsc() ^ self.forwarded_opens.wrapping_mul(0x9e37_79b9_7f4a_7c15)) & 0x7fff_ffff;
        let handle = fs::FORWARDED_HANDLE_BIT | check << 32 | (self.forwarded_opens & 0xffff_ffff);
        let info = FdInfo {
            manager_pid: manager.0,
            manager_queue: fs::QUEUE,
            file_type: mode::S_IFREG,
            flags: flags as u32,
            handle,
        };
        let i = self.files.add(info)?;
        self.procs.get_mut(&me).expect("caller exists").fds.fds[fd] = Some(i);
        let head = fs::Forwarded {
            fd: fd as u64,
            handle,
            pid: me,
            flags,
            monitor_queue: monitor::QUEUE as u64,
            create_mode: (create_mode & 0o7777) as u64,
        };
        let mut data = core::mem::take(&mut self.forward_buf);
        data.clear();
        data.reserve(most_bytes);
        data.extend_from_slice(&head.encode());
        self.push_inner(mount, abs, &mut data);
        data.push(0);
        data.extend_from_slice(abs.as_bytes());
        if riding > 0 {
            data.push(0);
            self.riding.clear();
            closed.retain(|info| {
                if !rides(info) {
                    return true;
                }
                data.extend_from_slice(&info.handle.to_le_bytes());
                self.riding.push(*info);
                false
            });
        }
        let words =
            [fs::OP_OPEN_FORWARDED, flags | open_flags::O_EXCL, head.create_mode, fs::owner_word(uid, gid)];
        self.procs.get_mut(&me).expect("caller exists").forwarded = Some((fd, handle));
        Some(Answer::Forward(link, words, data))
    }

    /// `monitor::OP_OPEN_LOST`: the process's last call, an `open`, failed
    /// in the kernel (`DeadPeer`): passed on to a manager that ended while
    /// it held it, it was never answered, so the process does not know
    /// the descriptor recorded for it. Drop that descriptor, if the last
    /// call was indeed such an open (`forwarded`, taken from the process
    /// by this call) and the descriptor still holds the handle chosen for
    /// it; `EBADF` otherwise (nothing changes). Before (branch `robust`),
    /// the descriptor stayed, naming the dead manager, until the process
    /// ended: its number taken, its description counted, inherited by
    /// every child (`disktest lostopen`). The monitor cannot tell this
    /// itself: a process answered just before the manager died holds its
    /// descriptor, and the answer goes from the manager to the process.
    /// A process that says so wrongly loses a descriptor of its own only.
    pub fn open_lost(&mut self, me: u64, forwarded: Option<(usize, u64)>) -> Result<u64, Errno> {
        let (fd, handle) = forwarded.ok_or(errno::EBADF)?;
        let fds = &self.procs.get(&me).expect("caller exists").fds;
        let i = fds.fds.get(fd).copied().flatten().ok_or(errno::EBADF)?;
        if self.files.get(i).is_none_or(|f| f.info.handle != handle) {
            return Err(errno::EBADF);
        }
        self.procs.get_mut(&me).expect("caller exists").fds.fds[fd] = None;
        self.release(i);
        runtime::println!("monitor: pid {me}: an open lost with its manager; descriptor {fd} dropped");
        Ok(0)
    }

    /// `monitor::OP_OPEN_DECLINED`: a mount's manager (`sender`) could not
    /// make a forwarded open and passed the process's call back: open it
    /// the usual way. Anyone else: `EPERM`.
    pub fn open_declined(&mut self, sender: Pid, data: &[u8]) -> Answer {
        if !self.mounts.iter().any(|m| m.manager == sender) {
            return err(errno::EPERM);
        }
        self.open_not_forwarded(data)
    }

    /// A forwarded open (its request's `data`) that was not made: drop the
    /// descriptor recorded for it (never opened at the manager, so nothing
    /// to close there) and open the usual way. `EBADF` when the descriptor
    /// is no longer that one (its process ended meanwhile).
    pub fn open_not_forwarded(&mut self, data: &[u8]) -> Answer {
        let Some((head, paths)) = fs::Forwarded::decode(data) else { return err(errno::EINVAL) };
        let Some(abs) = fs::Forwarded::parts(paths).and_then(|(_, a, _)| core::str::from_utf8(a).ok()) else {
            return err(errno::EINVAL);
        };
        let abs = String::from(abs);
        let fd = head.fd as usize;
        let recorded = self
            .procs
            .get(&head.pid)
            .and_then(|p| p.fds.fds.get(fd).copied().flatten())
            .filter(|&i| self.files.get(i).is_some_and(|f| f.info.handle == head.handle));
        let Some(i) = recorded else { return err(errno::EBADF) };
        self.procs.get_mut(&head.pid).expect("checked").fds.fds[fd] = None;
        let _ = self.files.release(i);
        self.open_at(head.pid, &abs, fd, head.flags, head.create_mode as u32)
    }

    /// Open `abs` at its manager after the permission checks.
    pub fn open_object(&mut self, me: u64, abs: &str, flags: u64, create_mode: u32) -> Result<FdInfo, Errno> {
        let want = if open_flags::readable(flags) { 4 } else { 0 }
            | if open_flags::writable(flags) || flags & open_flags::O_TRUNC != 0 { 2 } else { 0 };
        let (uid, gid) = (self.procs[&me].uid, self.procs[&me].gid);
        if flags & open_flags::O_CREAT != 0
            && !self.lookups.contains_key(abs)
            && let Some(info) = self.create_new(me, abs, flags, create_mode)
        {
            return Ok(info);
        }
        if let Some(opened) = self.open_then_check(me, abs, flags, create_mode, want) {
            return opened;
        }
        match self.lookup_cached(abs) {
            Ok((st, Some(rest))) => {
                if !self.permits(me, &st, want) {
                    return Err(errno::EACCES);
                }
                let dev = Pid(st.device_pid);
                let l = self.link(dev, st.device_queue)?;
                let (w, _) = self.call(l, [device::OP_OPEN, flags, st.ino, 0], rest.as_bytes(), &mut [])?;
                // A character or a block device: the runtime moves a
                // block device's data in one request (leases); a socket
                // is what the network server says its handle is.
                let file_type = if mode::is_blk(st.mode) {
                    mode::S_IFBLK
                } else if w[2] == mode::S_IFSOCK as u64 {
                    mode::S_IFSOCK
                } else {
                    mode::S_IFCHR
                };
                Ok(FdInfo {
                    manager_pid: dev.0,
                    manager_queue: st.device_queue,
                    file_type,
                    flags: flags as u32,
                    handle: w[0],
                })
            }
            Ok((st, None)) => {
                if flags & open_flags::O_CREAT != 0 && flags & open_flags::O_EXCL != 0 {
                    return Err(errno::EEXIST);
                }
                if !self.permits(me, &st, want) {
                    return Err(errno::EACCES);
                }
                self.fs_open(abs, flags, create_mode, uid, gid)
            }
            Err((errno::ENOENT, Some(parent))) if flags & open_flags::O_CREAT != 0 => {
                if !self.permits(me, &parent, 3) {
                    return Err(errno::EACCES);
                }
                self.fs_open(abs, flags, create_mode, uid, gid)
            }
            Err((e, _)) => Err(e),
        }
    }

    /// An open of a name not in the lookup cache, at a disk's manager
    /// (`ext2fs`), that changes nothing there (no `O_CREAT`, no
    /// `O_TRUNC`): opened first, checked after, so that one path walk in
    /// the manager serves both. The lookup before it walked the same path
    /// in `ext2fs` a second time, for the attributes its answer carries
    /// anyway (`fs::OP_OPEN` replies with the file's `Stat`: mode, owner,
    /// group, all the permission check needs; seed 004's job made 110
    /// transfers more per job with one to four buffers,
    /// `docs/filesystem-history.md`, "the manager's work"). The check is the
    /// lookup path's ([`Monitor::permits`] on the same attributes), made
    /// before the process hears anything; a refused open is closed at
    /// the manager (it held a handle, nothing else) and answered `EACCES`,
    /// as before. Any error at the manager (`ENOENT`, `ENOTDIR`, `EISDIR`,
    /// `ENODEV`, `ERESTART`, …) gives `None`: the usual way (lookup,
    /// checks, open) then answers, so every error is the one it gave
    /// before, in the same order as before (`EACCES` before `EISDIR`).
    /// A name opened is remembered as a lookup is. The request is word for
    /// word the one [`Monitor::fs_open`] sends after a lookup, so an open
    /// answered `ERESTART` while the disk's driver restarts and done
    /// afterwards is the one `ext2fs` replays to either way of asking
    /// again (`servers/ext2fs/src/disk.rs`, `Replay`).
    fn open_then_check(
        &mut self,
        me: u64,
        abs: &str,
        flags: u64,
        create_mode: u32,
        want: u32,
    ) -> Option<Result<FdInfo, Errno>> {
        if flags & (open_flags::O_CREAT | open_flags::O_TRUNC) != 0 || self.lookups.contains_key(abs) {
            return None;
        }
        let mount = self.mount_of(abs);
        if self.is_memfs(mount) || self.mounts[mount].remount {
            return None;
        }
        let (link, manager) = (self.mounts[mount].link, self.mounts[mount].manager);
        let p = &self.procs[&me];
        let owner = fs::owner_word(p.uid, p.gid);
        let mut data = core::mem::take(&mut self.forward_buf);
        data.clear();
        self.push_inner(mount, abs, &mut data);
        let mut reply = [0u8; Stat::BYTES];
        let create_mode = (create_mode & 0o7777) as u64;
        let opened = self.call(link, [fs::OP_OPEN, flags, create_mode, owner], &data, &mut reply);
        self.forward_buf = data;
        let (w, len) = opened.ok()?;
        let st = Stat::decode(&reply[..len.min(Stat::BYTES)]);
        let info = FdInfo {
            manager_pid: manager.0,
            manager_queue: w[1] as u32,
            file_type: st.map_or(0, |st| st.mode & mode::S_IFMT),
            flags: flags as u32,
            handle: w[0],
        };
        // A device entry goes on at its driver (never on a disk: `ext2fs`
        // answers `ENODEV`); no attributes, no check: the usual way.
        let Some(st) = st.filter(|st| !(mode::is_device(st.mode) && st.device_pid != 0)) else {
            self.close_at_manager(info);
            return None;
        };
        if !self.permits(me, &st, want) {
            self.close_at_manager(info);
            return Some(Err(errno::EACCES));
        }
        if self.lookups.len() >= crate::names::LOOKUP_CACHE_ENTRIES {
            self.lookups.clear();
        }
        self.lookups.insert(String::from(abs), (st, None));
        Some(Ok(info))
    }

    /// `O_CREAT` of a name not in the lookup cache: try to make it new at
    /// once (`O_EXCL` at the directory manager), one call instead of a
    /// lookup and an open (issue 11: creat+close in two calls). The
    /// parent's write and search permission comes from the lookup cache
    /// (root needs none). `None`: the name exists, the parent is not
    /// cached, or anything else went wrong; the full path (lookup, checks,
    /// open) then decides, with its own errors, so the answer is the same
    /// either way.
    fn create_new(&mut self, me: u64, abs: &str, flags: u64, create_mode: u32) -> Option<FdInfo> {
        let (uid, gid) = (self.procs[&me].uid, self.procs[&me].gid);
        if uid != 0 {
            let (parent, _) = unix_core::path::split_last(abs)?;
            match self.lookups.get(parent) {
                Some((st, None)) if mode::is_dir(st.mode) => {
                    let st = *st;
                    if !self.permits(me, &st, 3) {
                        return None;
                    }
                }
                _ => return None,
            }
        }
        self.fs_open(abs, flags | open_flags::O_EXCL, create_mode, uid, gid).ok()
    }

    fn fs_open(
        &mut self,
        abs: &str,
        flags: u64,
        create_mode: u32,
        uid: u32,
        gid: u32,
    ) -> Result<FdInfo, Errno> {
        let mut reply = [0u8; Stat::BYTES];
        let owner = fs::owner_word(uid, gid);
        // The mask was applied by the caller (`open`: the process's umask).
        let create_mode = (create_mode & 0o7777) as u64;
        // Per-file mode covers regular files (and files being created);
        // directories stay with the directory manager.
        let regular_or_new = match self.lookups.get(abs) {
            Some((st, _)) => mode::is_reg(st.mode),
            None => true,
        };
        let (mount, inner) = self.route(abs);
        if !self.is_memfs(mount) || self.mounts[mount].inner != "/" {
            // A disk (or memfs's /tmp under a disk root): the mount's
            // manager serves the file's data itself.
            let link = self.mounts[mount].link;
            let (w, _) =
                self.call(link, [fs::OP_OPEN, flags, create_mode, owner], inner.as_bytes(), &mut reply)?;
            let st = Stat::decode(&reply).unwrap_or_default();
            return Ok(FdInfo {
                manager_pid: self.mounts[mount].manager.0,
                manager_queue: w[1] as u32,
                file_type: st.mode & mode::S_IFMT,
                flags: flags as u32,
                handle: w[0],
            });
        }
        if self.per_file && regular_or_new {
            // The file manager needs read and write access for loading and
            // writing back; the caller's own flags were checked above.
            let creating = flags & (open_flags::O_CREAT | open_flags::O_EXCL | open_flags::O_TRUNC);
            let at_fs = creating | open_flags::O_RDWR;
            let (w, _) =
                self.fs_call([fs::OP_OPEN, at_fs, create_mode, owner], abs.as_bytes(), &mut reply)?;
            let st = Stat::decode(&reply).unwrap_or_default();
            if mode::is_reg(st.mode) {
                return self.open_at_file_manager(st.ino, w[0], flags);
            }
            self.fs_call([io::OP_CLOSE, w[0], 0, 0], &[], &mut [])?;
        }
        let (w, _) = self.fs_call([fs::OP_OPEN, flags, create_mode, owner], abs.as_bytes(), &mut reply)?;
        let st = Stat::decode(&reply).unwrap_or_default();
        Ok(FdInfo {
            manager_pid: self.fs.0.0,
            manager_queue: fs::QUEUE,
            file_type: st.mode & mode::S_IFMT,
            flags: flags as u32,
            handle: w[0],
        })
    }

    /// Per-file mode: open inode `ino` (whose directory-manager handle is
    /// `fs_handle`) at its file manager, starting one if it has none.
    fn open_at_file_manager(&mut self, ino: u64, fs_handle: u64, flags: u64) -> Result<FdInfo, Errno> {
        let manager = match self.file_managers.get(&ino) {
            Some(&(pid, _)) => {
                // This open's directory-manager handle is not needed: the
                // manager already holds the file (an O_TRUNC was done there
                // too, and the manager cuts its copy below).
                let _ = self.fs_call([io::OP_CLOSE, fs_handle, 0, 0], &[], &mut []);
                pid
            }
            None => {
                // An idle manager if there is one, else a new process.
                let started = match self.idle_file_managers.pop() {
                    Some(pid) => Ok((pid, filemgr::QUEUE, 0, 0)),
                    None => self.start_helper("filemgr", &decimal(self.me.0), filemgr::READY),
                };
                let (pid, queue, _, _) = match started {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = self.fs_call([io::OP_CLOSE, fs_handle, 0, 0], &[], &mut []);
                        return Err(e);
                    }
                };
                let (fs_pid, _) = self.fs;
                let attached = self.link(pid, queue).and_then(|l| {
                    self.call(l, [filemgr::OP_ATTACH, fs_pid.0, fs::QUEUE as u64, fs_handle], &[], &mut [])
                });
                if let Err(e) = attached {
                    let _ = sys::kill(pid);
                    let _ = self.fs_call([io::OP_CLOSE, fs_handle, 0, 0], &[], &mut []);
                    return Err(e);
                }
                self.file_managers.insert(ino, (pid, fs_handle));
                pid
            }
        };
        let l = self.link(manager, filemgr::QUEUE)?;
        let (w, _) = self.call(l, [filemgr::OP_OPEN, flags, 0, 0], &[], &mut [])?;
        Ok(FdInfo {
            manager_pid: manager.0,
            manager_queue: filemgr::QUEUE,
            file_type: mode::S_IFREG,
            flags: flags as u32,
            handle: w[0],
        })
    }

    /// A file manager ended (died), or wrote its file back at the last
    /// close (`is_idle`: it waits for another file): close its handle at the
    /// directory manager; keep an idle one for the next open, up to
    /// [`IDLE_FILE_MANAGERS`] (others are stopped).
    fn file_manager_gone(&mut self, pid: Pid, is_idle: bool) {
        let Some((&ino, &(_, fs_handle))) = self.file_managers.iter().find(|(_, (p, _))| *p == pid) else {
            return;
        };
        self.file_managers.remove(&ino);
        let _ = self.fs_call([io::OP_CLOSE, fs_handle, 0, 0], &[], &mut []);
        if is_idle && self.idle_file_managers.len() < IDLE_FILE_MANAGERS {
            self.idle_file_managers.push(pid);
            return;
        }
        if is_idle {
            let _ = sys::kill(pid);
        }
        self.drop_link(pid);
    }

    pub fn close_at_manager(&mut self, info: FdInfo) {
        // A disk manager's close is a one-way message: its answer was
        // never used, and the manager takes its queue in order, so a
        // later call (an open, a `sync`) finds the file closed. Three
        // messages per close instead of four, and the process is answered
        // without waiting for the manager (`docs/filesystem.md`, "The
        // request path"). A full queue falls back to the call. (memfs's
        // stays a call: made one way, R2's creat+close on memfs took 800
        // guest instructions more and as many switches, 7.0, on one CPU;
        // docs/filesystem-history.md, "R2 on disk: one round trip".)
        let disk = self
            .mounts
            .iter()
            .find(|m| m.manager.0 == info.manager_pid && m.manager != self.fs.0 && !m.remount);
        if let Some(m) = disk
            && msg::send(m.link, &[io::OP_CLOSE, info.handle, 0, 0]).is_ok()
        {
            return;
        }
        if let Ok(l) = self.link(Pid(info.manager_pid), info.manager_queue) {
            let closed = msg::call(l, &[io::OP_CLOSE, info.handle, 0, 0], &[], &mut []);
            if let Ok((w, _)) = closed
                && w[1] == filemgr::CLOSED_LAST
                && self.file_managers.values().any(|(p, _)| p.0 == info.manager_pid)
            {
                // Written back: it waits for another file. (It exits
                // after a failed write-back.)
                let is_idle = protocols::unix::result(w[0]).is_ok();
                self.file_manager_gone(Pid(info.manager_pid), is_idle);
            }
        }
    }

    /// Drop a descriptor's reference to open file `i`; the last one closes
    /// it at its manager.
    pub fn release(&mut self, i: usize) {
        if let Some(f) = self.files.release(i) {
            self.close_at_manager(f.info);
        }
    }

    pub fn close(&mut self, me: u64, fd: u64) -> Result<u64, Errno> {
        let fds = &mut self.procs.get_mut(&me).expect("caller exists").fds;
        let i = fds.get(fd).ok_or(errno::EBADF)?;
        fds.fds[fd as usize] = None;
        self.release(i);
        Ok(0)
    }

    /// `dup` (`new` = None: the lowest free fd) and `dup2`.
    pub fn dup(&mut self, me: u64, old: u64, new: Option<u64>) -> Result<u64, Errno> {
        let fds = &self.procs[&me].fds;
        let i = fds.get(old).ok_or(errno::EBADF)?;
        let new = match new {
            Some(n) if n as usize >= MAX_FDS => return Err(errno::EBADF),
            Some(n) if n == old => return Ok(n),
            Some(n) => {
                self.fd_allowed(me, n)?;
                n as usize
            }
            None => self.free_fd(me, 0)?,
        };
        let previous = self.procs.get_mut(&me).expect("caller exists").fds.fds[new].replace(i);
        self.files.retain(i);
        if let Some(p) = previous {
            self.release(p);
        }
        Ok(new as u64)
    }

    /// `OP_PIPE`: a new pipe manager, its read end and write end as the
    /// two lowest free fds.
    pub fn pipe(&mut self, me: u64) -> Answer {
        let (rfd, wfd) = match self.free_fd(me, 0).and_then(|r| Ok((r, self.free_fd(me, r + 1)?))) {
            Ok(pair) => pair,
            Err(e) => return err(e),
        };
        let args = self.pipe_manager_args();
        let manager = match self.start_helper("pipe", &args, pipe::READY) {
            Ok(m) => m,
            Err(e) => return err(e),
        };
        self.pipe_managers.push(manager.0);
        let (kpid, queue, read_handle, write_handle) = manager;
        let info = |flags: u64, handle| FdInfo {
            manager_pid: kpid.0,
            manager_queue: queue,
            file_type: mode::S_IFIFO,
            flags: flags as u32,
            handle,
        };
        let (Some(r), Some(w)) = (
            self.files.add(info(open_flags::O_RDONLY, read_handle)),
            self.files.add(info(open_flags::O_WRONLY, write_handle)),
        ) else {
            let _ = sys::kill(kpid);
            return err(errno::ENFILE);
        };
        let fds = &mut self.procs.get_mut(&me).expect("caller exists").fds;
        fds.fds[rfd] = Some(r);
        fds.fds[wfd] = Some(w);
        Answer::Words([rfd as u64, wfd as u64, 0, 0])
    }

    /// `OP_FD_INFO`: where the requests of descriptor `fd` go.
    pub fn fd_info(&self, me: u64, fd: u64) -> Answer {
        match self.procs[&me].fds.get(fd).and_then(|i| self.files.get(i)) {
            Some(f) => {
                let [a, b, c] = f.info.encode();
                Answer::Words([0, a, b, c])
            }
            None => err(errno::EBADF),
        }
    }

    /// Start a helper server (a pipe or file manager) and wait for its
    /// ready message `[ready, queue, a, b]` on [`monitor::START_QUEUE`].
    /// Children's ends are reported on that queue meanwhile, so a helper
    /// that dies before it is ready cannot leave the monitor waiting; the
    /// ends of other children are handled as the main loop handles them
    /// ([`Monitor::child_ended`]), once the helper is ready.
    pub fn start_helper(
        &mut self,
        program: &str,
        args: &str,
        ready: u64,
    ) -> Result<(Pid, u32, u64, u64), Errno> {
        let starts = Queue(monitor::START_QUEUE);
        sys::set_exit_queue(starts.0).map_err(kernel_errno)?;
        let kpid = sys::spawn(program, args);
        let mut other_exits = Vec::new();
        let result = match kpid {
            Err(e) => Err(kernel_errno(e)),
            Ok(kpid) => loop {
                match msg::receive_data(starts, &mut []) {
                    Ok(r) if r.kind == Kind::ChildExit && r.message[0] == kpid.0 => break Err(errno::EAGAIN),
                    Ok(r) if r.kind == Kind::ChildExit => other_exits.push(r.message),
                    Ok(r) if r.sender == kpid && r.message[0] == ready => {
                        break Ok((kpid, r.message[1] as u32, r.message[2], r.message[3]));
                    }
                    Ok(_) => {}
                    Err(_) => break Err(errno::EIO),
                }
            },
        };
        let _ = sys::set_exit_queue(0);
        // A child that ended between the helper's ready message and the
        // line above was reported on the start queue, which nothing reads
        // until the next helper starts: take those reports now, or that
        // child's parent waits for ever (it hung `leak::exited_children_
        // leak_nothing` whenever an exit fell in that window).
        while let Ok(Some(r)) = msg::try_receive(starts, &mut []) {
            if r.kind == Kind::ChildExit {
                other_exits.push(r.message);
            }
        }
        let child_ended = self.child_ended;
        for m in other_exits {
            child_ended(self, Pid(m[0]), m[1], m[2]);
        }
        result
    }

    /// A kernel child ended: if it was a helper (a pipe, file or disk manager),
    /// forget it and say so; a UNIX process is `procs`' business.
    pub fn helper_ended(&mut self, kpid: Pid) -> bool {
        if let Some(i) = self.pipe_managers.iter().position(|&p| p == kpid) {
            self.pipe_managers.swap_remove(i);
            self.pipe_manager_gone(kpid);
            self.drop_link(kpid);
            return true;
        }
        if self.file_managers.values().any(|(p, _)| *p == kpid) {
            self.file_manager_gone(kpid, false);
            return true;
        }
        if let Some(i) = self.idle_file_managers.iter().position(|&p| p == kpid) {
            self.idle_file_managers.swap_remove(i);
            self.drop_link(kpid);
            return true;
        }
        self.mount_manager_ended(kpid)
    }
}

/// File managers kept idle for the next files (per-file mode).
pub const IDLE_FILE_MANAGERS: usize = 4;

/// A helper's argument: the monitor's kernel pid in decimal.
fn decimal(n: u64) -> String {
    let mut digits = Vec::new();
    let mut n = n;
    loop {
        digits.push(b'0' + (n % 10) as u8);
        n /= 10;
        if n == 0 {
            break;
        }
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}
