//! The mount table (issue 12): which manager serves each part of the name
//! space. Every path the monitor sends a manager goes through
//! [`Monitor::route`]: the mount whose point is the longest prefix of the
//! path (at a `/`) serves it, with the path made relative to that point
//! and put under the mount's own root inside its manager. `mount`,
//! `sync`, the table itself (`OP_MOUNTS`) and the disk managers' counters
//! (`OP_FS_STATS`) are here too.
//!
//! At start the table holds one mount: the memory file system at `/`.
//! `OP_MOUNT` adds an ext2 volume on a block device, served by an
//! `ext2fs` manager the monitor starts (with a handle at the block driver
//! for the manager and one for each of its I/O workers). A mount on `/`
//! puts the disk at the root; memfs's `/dev` (the device entries) and
//! `/tmp` stay at `/dev` and `/tmp`.
//!
//! What it is not: the permission checks (`names`, before routing) nor
//! the managers' requests themselves.
//!
//! Invariants: the table always has a mount at `/`, first; a mount point
//! is never removed or renamed (`EBUSY`), and nothing is renamed between
//! mounts (`EXDEV`). A disk manager that ends takes its mount away (its
//! names then fall to the mount below, and its clients get `EIO`), except
//! one the monitor ended because its block driver was given up (issue
//! 16): that mount stays, failing with `EIO`, until a driver is started
//! again and the volume is mounted again (`block_driver_ended`,
//! `remount_pending`).
//!
//! A block driver that ends and is restarted loses nothing (issue 16):
//! its volumes' managers keep running with their caches, and when init
//! says the new driver is ready the monitor opens the device again and
//! gives the managers the new handles (`ext2fs::OP_DEVICE`); each sends
//! again what failed (servers/ext2fs/src/disk.rs). An ext2 mount whose
//! device handles name an ended driver is one waiting for its driver.

use crate::state::{Answer, Monitor, err};
use crate::tables::Mount;
use abi::Pid;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::{Errno, Stat, device, errno, ext2fs, fs, io, mode, open_flags};
use runtime::msg::{self, Queue};

/// Handles at a block driver: (driver, its queue, handle).
type DeviceHandles = Vec<(Pid, u32, u64)>;

/// An ext2 manager started on a block device, mounted and ready.
struct DiskManager {
    pid: Pid,
    queue: u32,
    device_handles: Vec<(Pid, u32, u64)>,
}

/// `abs` is `point` or below it.
fn is_under(abs: &str, point: &str) -> bool {
    point == "/" || abs == point || (abs.starts_with(point) && abs.as_bytes().get(point.len()) == Some(&b'/'))
}

impl Monitor {
    /// The mount serving `abs` and `abs` as a path inside its manager.
    pub fn route(&self, abs: &str) -> (usize, String) {
        let (i, m) = self
            .mounts
            .iter()
            .enumerate()
            .filter(|(_, m)| is_under(abs, &m.point))
            .max_by_key(|(_, m)| m.point.len())
            .expect("a mount at /");
        let rest = if m.point == "/" { abs } else { &abs[m.point.len()..] };
        let inner = match (m.inner.as_str(), rest) {
            (inner, "") => String::from(inner),
            ("/", rest) => String::from(rest),
            (inner, rest) => format!("{inner}{rest}"),
        };
        (i, inner)
    }

    /// The mount serving `abs`, as [`Monitor::route`] finds it.
    pub fn mount_of(&self, abs: &str) -> usize {
        self.mounts
            .iter()
            .enumerate()
            .filter(|(_, m)| is_under(abs, &m.point))
            .max_by_key(|(_, m)| m.point.len())
            .map(|(i, _)| i)
            .expect("a mount at /")
    }

    /// `abs` as a path inside the manager of mount `i`, as
    /// [`Monitor::route`] makes it, appended to `out` (no string of its
    /// own: an open passed on builds its request in one vector).
    pub fn push_inner(&self, i: usize, abs: &str, out: &mut Vec<u8>) {
        let m = &self.mounts[i];
        let rest = if m.point == "/" { abs } else { &abs[m.point.len()..] };
        match (m.inner.as_str(), rest) {
            (inner, "") => out.extend_from_slice(inner.as_bytes()),
            ("/", rest) => out.extend_from_slice(rest.as_bytes()),
            (inner, rest) => {
                out.extend_from_slice(inner.as_bytes());
                out.extend_from_slice(rest.as_bytes());
            }
        }
    }

    /// A call to the manager of `abs`, with the path inside it as the
    /// request's data.
    pub fn path_call(
        &mut self,
        abs: &str,
        req: [u64; 4],
        reply: &mut [u8],
    ) -> Result<([u64; 4], usize), Errno> {
        let (i, inner) = self.route(abs);
        let link = self.mounts[i].link;
        self.call(link, req, inner.as_bytes(), reply)
    }

    /// A call on a handle of the manager of mount `i`.
    pub fn mount_call(
        &mut self,
        i: usize,
        req: [u64; 4],
        reply: &mut [u8],
    ) -> Result<([u64; 4], usize), Errno> {
        let link = self.mounts[i].link;
        self.call(link, req, &[], reply)
    }

    /// `abs` is a mount point (other than `/`): it cannot be removed or
    /// renamed.
    pub fn is_mount_point(&self, abs: &str) -> bool {
        abs != "/" && self.mounts.iter().any(|m| m.point == abs)
    }

    /// The memory file system serves `abs` (per-file managers and device
    /// entries are its alone).
    pub fn is_memfs(&self, i: usize) -> bool {
        self.mounts[i].manager == self.fs.0
    }

    /// `OP_MOUNT`: data = source NUL target NUL options.
    pub fn mount(&mut self, me: u64, data: &[u8]) -> Result<u64, Errno> {
        if self.procs[&me].uid != 0 {
            return Err(errno::EPERM);
        }
        let mut parts = data.split(|&b| b == 0);
        let (Some(source), Some(target)) = (parts.next(), parts.next()) else { return Err(errno::EINVAL) };
        let options = core::str::from_utf8(parts.next().unwrap_or(b"")).map_err(|_| errno::EINVAL)?;
        let (source, target) = (self.abs_path(me, source)?, self.abs_path(me, target)?);
        if target.contains(char::is_whitespace) || options.contains(char::is_whitespace) {
            return Err(errno::EINVAL);
        }
        let root_is_disk = self.mounts[0].manager != self.fs.0;
        if self.is_mount_point(&target) || (target == "/" && root_is_disk) {
            return Err(errno::EBUSY);
        }
        let dev = self.block_device(&source)?;
        // The directory must be there, or be makeable (made once the
        // volume is mounted: a refused mount leaves no trace).
        let make_point = target != "/" && self.mount_point_missing(&target)?;
        let started = self.start_disk_manager(&dev, &target, options)?;
        let made = if make_point {
            self.path_call(&target, [fs::OP_MKDIR, 0o755, 0, fs::owner_word(0, 0)], &mut []).map(|_| ())
        } else {
            Ok(())
        };
        let manager_link = match made.and_then(|()| self.link(started.pid, started.queue)) {
            Ok(l) => l,
            Err(e) => {
                let _ = runtime::sys::kill(started.pid);
                self.close_device_handles(&started.device_handles);
                return Err(e);
            }
        };
        let (pid, queue, device_handles) = (started.pid, started.queue, started.device_handles);
        let disk = Mount {
            point: target.clone(),
            source,
            fstype: "ext2",
            options: String::from(if options.is_empty() { "rw" } else { options }),
            manager: pid,
            queue,
            link: manager_link,
            inner: String::from("/"),
            device_handles,
            remount: false,
        };
        if target == "/" {
            // The disk is the root; memfs keeps /dev and /tmp.
            let memfs = self.mounts.remove(0);
            for dir in ["/dev", "/tmp"] {
                self.mounts.push(Mount {
                    point: String::from(dir),
                    source: String::from("memfs"),
                    fstype: "memfs",
                    options: String::from("rw"),
                    manager: memfs.manager,
                    queue: memfs.queue,
                    link: memfs.link,
                    inner: String::from(dir),
                    device_handles: Vec::new(),
                    remount: false,
                });
            }
            self.mounts.insert(0, disk);
        } else {
            self.mounts.push(disk);
        }
        self.forget_lookups();
        Ok(0)
    }

    /// The block device entry at `source` (freshly looked up).
    fn block_device(&mut self, source: &str) -> Result<Stat, Errno> {
        self.forget_lookups();
        let (dev, rest) = self.lookup(source).map_err(|(e, _)| e)?;
        if !mode::is_blk(dev.mode) || rest.as_deref() != Some("") {
            return Err(errno::EINVAL); // Linux says ENOTBLK
        }
        Ok(dev)
    }

    /// Open the block device `dev` once for an ext2 manager and once for
    /// each of its I/O workers (`O_RDONLY` with `ro`), start `ext2fs` on
    /// them for `target` and wait until it has mounted the volume. On any
    /// failure the handles are closed and the manager's errno returned.
    fn start_disk_manager(&mut self, dev: &Stat, target: &str, options: &str) -> Result<DiskManager, Errno> {
        let driver = Pid(dev.device_pid);
        let (handles, device_bytes) = self.open_device_handles(dev, options)?;
        let mut args = format!(
            "{} {} {} {device_bytes} {target} {}",
            self.me.0,
            driver.0,
            dev.device_queue,
            if options.is_empty() { "-" } else { options }
        );
        for (_, _, h) in &handles {
            args.push_str(&format!(" {h}"));
        }
        match self.start_helper("ext2fs", &args, ext2fs::READY) {
            Ok((pid, queue, 0, _)) => Ok(DiskManager { pid, queue, device_handles: handles }),
            // The manager refused the volume (and ended): say why.
            Ok((_, _, code, _)) => {
                self.close_device_handles(&handles);
                Err(Errno(code))
            }
            Err(e) => {
                self.close_device_handles(&handles);
                Err(e)
            }
        }
    }

    /// Open the block device `dev` once for an ext2 manager and once for
    /// each of its I/O workers (`O_RDONLY` with `ro`); with the device's
    /// size. On a failure the handles opened are closed.
    fn open_device_handles(&mut self, dev: &Stat, options: &str) -> Result<(DeviceHandles, u64), Errno> {
        let read_only = options.split(',').any(|o| o == "ro");
        let flags = if read_only { open_flags::O_RDONLY } else { open_flags::O_RDWR };
        let driver = Pid(dev.device_pid);
        let link = self.link(driver, dev.device_queue)?;
        let mut handles = Vec::new();
        let mut device_bytes = 0;
        let opened: Result<(), Errno> = (|| {
            for _ in 0..=ext2fs::WORKERS {
                let (w, _) = self.call(link, [device::OP_OPEN, flags, dev.ino, 0], &[], &mut [])?;
                handles.push((driver, dev.device_queue, w[0]));
            }
            let mut st = [0u8; Stat::BYTES];
            self.call(link, [io::OP_FSTAT, handles[0].2, 0, 0], &[], &mut st)?;
            device_bytes = Stat::decode(&st).ok_or(errno::EIO)?.size_bytes;
            Ok(())
        })();
        match opened {
            Ok(()) => Ok((handles, device_bytes)),
            Err(e) => {
                self.close_device_handles(&handles);
                Err(e)
            }
        }
    }

    /// Close handles at block drivers (those of a dead driver fail: they
    /// died with it).
    fn close_device_handles(&mut self, handles: &[(Pid, u32, u64)]) {
        for &(driver, queue, h) in handles {
            if let Ok(l) = self.link(driver, queue) {
                let _ = self.call(l, [io::OP_CLOSE, h, 0, 0], &[], &mut []);
            }
        }
    }

    /// Is the directory a mount goes on missing (to be made, mode 0755,
    /// root's), with its parent there? `Ok(false)`: it is there.
    fn mount_point_missing(&mut self, target: &str) -> Result<bool, Errno> {
        match self.lookup(target) {
            Ok((st, None)) if mode::is_dir(st.mode) => Ok(false),
            Ok(_) => Err(errno::ENOTDIR),
            Err((errno::ENOENT, Some(_))) => Ok(true),
            Err((e, _)) => Err(e),
        }
    }

    /// A disk manager ended: its mount goes (and the driver handles it
    /// held). Returns whether `kpid` was one.
    pub fn mount_manager_ended(&mut self, kpid: Pid) -> bool {
        let Some(i) = self.mounts.iter().position(|m| m.manager == kpid) else { return false };
        if self.mounts[i].remount {
            // Ended by `block_driver_ended`: the entry stays (its names
            // must not fall to the mount below, where a write would land
            // in memory) until `remount_pending` replaces its manager;
            // the link stays open meanwhile, so that its number cannot
            // name another process while the entry holds it.
            return true;
        }
        let gone = self.mounts.remove(i);
        if i == 0 {
            // The root's manager died: names fall back to memfs.
            let (pid, link) = self.fs;
            self.mounts.retain(|m| m.manager != pid);
            self.mounts.insert(
                0,
                Mount {
                    point: String::from("/"),
                    source: String::from("memfs"),
                    fstype: "memfs",
                    options: String::from("rw"),
                    manager: pid,
                    queue: fs::QUEUE,
                    link,
                    inner: String::from("/"),
                    device_handles: Vec::new(),
                    remount: false,
                },
            );
        }
        self.close_device_handles(&gone.device_handles);
        self.drop_link(kpid);
        self.forget_lookups();
        runtime::println!("monitor: the manager of {} ended; it is no longer mounted", gone.point);
        true
    }

    /// A block driver ended (init's `OP_SERVER_ENDED`; issue 16). When
    /// init will start it again (`for_good` false) its volumes' managers
    /// are left as they are: they keep their caches (unwritten changes
    /// included), serve what the cache holds, hold what needs the device
    /// and get the new driver at [`Monitor::remount_pending`]. When init
    /// has given it up, every volume waiting for a driver that is not
    /// back is dropped as before: its manager is ended (what it had not
    /// written is lost, as in a power cut: fs-ext2's write order keeps the
    /// volume sound, and `fsync`ed data is on the disk), calls under the
    /// mount point get `EIO` (the entry keeps the dead manager's link so
    /// that names do not fall to the mount below), and the volume is
    /// mounted afresh if a driver for its device is started again. A
    /// volume at `/` is left as it was (its programs page from it).
    pub fn block_driver_ended(&mut self, driver: Pid, for_good: bool) {
        for i in 0..self.mounts.len() {
            let m = &self.mounts[i];
            if m.fstype != "ext2" || m.remount {
                continue;
            }
            if !for_good {
                if m.device_handles.iter().any(|(d, ..)| *d == driver) {
                    runtime::println!(
                        "monitor: the block driver of {} ended; its manager keeps its cache and waits for the driver to be back",
                        m.point
                    );
                }
                continue;
            }
            // Given up: every mount still waiting for a driver, unless its
            // device entry names a driver that runs (another one).
            if !self.is_waiting_for_driver(i) || self.device_is_back(i) {
                continue;
            }
            let m = &self.mounts[i];
            if m.point == "/" {
                runtime::println!(
                    "monitor: the block driver of / was given up; the root volume stays as it is"
                );
                continue;
            }
            self.give_up_manager(i);
        }
    }

    /// Mount `i` is an ext2 volume whose manager holds handles at a
    /// driver that has ended.
    fn is_waiting_for_driver(&self, i: usize) -> bool {
        let m = &self.mounts[i];
        m.fstype == "ext2"
            && !m.remount
            && m.device_handles.first().is_some_and(|&(driver, queue, _)| !is_alive(driver, queue))
    }

    /// The device entry of mount `i` names a driver that runs.
    fn device_is_back(&mut self, i: usize) -> bool {
        let source = self.mounts[i].source.clone();
        self.block_device(&source).is_ok_and(|dev| is_alive(Pid(dev.device_pid), dev.device_queue))
    }

    /// End the manager of mount `i` (its driver is not coming back, or
    /// the manager would not take the new one): the mount stays, failing
    /// with `EIO`, and is mounted afresh when a driver is ready.
    fn give_up_manager(&mut self, i: usize) {
        let m = &mut self.mounts[i];
        runtime::println!(
            "monitor: the block driver of {} is not back; its manager is ended (what it had not written is lost) and {} is mounted again from {} when a driver is",
            m.point,
            m.point,
            m.source
        );
        m.remount = true;
        let handles = core::mem::take(&mut m.device_handles);
        let manager = m.manager;
        let _ = runtime::sys::kill(manager);
        self.close_device_handles(&handles);
    }

    /// Give the manager of mount `i` handles at the driver its device
    /// entry now names (`ext2fs::OP_DEVICE`). `Err((true, e))`: the
    /// manager refused them or is gone; `Err((false, e))`: the device
    /// cannot be opened (yet).
    fn reattach(&mut self, i: usize) -> Result<(), (bool, Errno)> {
        let (source, options, link) =
            (self.mounts[i].source.clone(), self.mounts[i].options.clone(), self.mounts[i].link);
        let dev = self.block_device(&source).map_err(|e| (false, e))?;
        let (handles, device_bytes) = self.open_device_handles(&dev, &options).map_err(|e| (false, e))?;
        let mut data = Vec::with_capacity(handles.len() * 8);
        for (_, _, h) in &handles {
            data.extend_from_slice(&h.to_le_bytes());
        }
        let req = [ext2fs::OP_DEVICE, dev.device_pid, dev.device_queue as u64, device_bytes];
        match self.call(link, req, &data, &mut []) {
            Ok(_) => {
                self.mounts[i].device_handles = handles;
                Ok(())
            }
            Err(e) => {
                self.close_device_handles(&handles);
                Err((true, e))
            }
        }
    }

    /// A driver init restarted is ready (`OP_SERVER_STARTED`): every
    /// manager waiting for its driver gets handles at the new one
    /// ([`Monitor::reattach`]; one whose device cannot be opened yet, as
    /// when another driver was restarted, keeps waiting), and every
    /// volume [`Monitor::give_up_manager`] dropped is mounted again, from
    /// its device entry, at its point, with its options.
    pub fn remount_pending(&mut self) {
        for i in 0..self.mounts.len() {
            if self.is_waiting_for_driver(i) {
                let (point, source) = (self.mounts[i].point.clone(), self.mounts[i].source.clone());
                match self.reattach(i) {
                    Ok(()) => runtime::println!(
                        "monitor: {point}: its manager has the restarted driver of {source}; nothing was lost"
                    ),
                    Err((false, e)) => {
                        runtime::println!("monitor: {point}: {source} cannot be opened yet: {}", e.name())
                    }
                    Err((true, e)) => {
                        runtime::println!(
                            "monitor: {point}: the manager refused the new driver: {}",
                            e.name()
                        );
                        self.give_up_manager(i);
                    }
                }
            }
            if !self.mounts[i].remount {
                continue;
            }
            let (source, point, options) =
                (self.mounts[i].source.clone(), self.mounts[i].point.clone(), self.mounts[i].options.clone());
            let started =
                self.block_device(&source).and_then(|dev| self.start_disk_manager(&dev, &point, &options));
            let started = started.and_then(|d| match self.link(d.pid, d.queue) {
                Ok(link) => Ok((d, link)),
                Err(e) => {
                    let _ = runtime::sys::kill(d.pid);
                    self.close_device_handles(&d.device_handles);
                    Err(e)
                }
            });
            match started {
                Ok((d, link)) => {
                    let old = self.mounts[i].manager;
                    let m = &mut self.mounts[i];
                    (m.manager, m.queue, m.link, m.device_handles, m.remount) =
                        (d.pid, d.queue, link, d.device_handles, false);
                    self.drop_link(old);
                    runtime::println!("monitor: {point} mounted again from {source}");
                }
                Err(e) => runtime::println!("monitor: {point} is not mounted again yet: {}", e.name()),
            }
        }
        self.forget_lookups();
    }

    /// `OP_MOUNTS`: `source target type options` lines.
    pub fn mounts_text(&self) -> Answer {
        let mut text = String::new();
        for m in &self.mounts {
            text.push_str(&format!("{} {} {} {}\n", m.source, m.point, m.fstype, m.options));
        }
        Answer::WordsData([0; 4], text.into_bytes())
    }

    /// `OP_SYNC`: every disk file system to its disk; `last`: init's
    /// sync before the power goes, which marks each volume clean.
    pub fn sync(&mut self, last: bool) -> Result<u64, Errno> {
        let mut first_error = None;
        let word = if last { fs::SYNC_FINAL } else { 0 };
        for i in 0..self.mounts.len() {
            if self.mounts[i].fstype == "memfs" {
                continue;
            }
            if let Err(e) = self.mount_call(i, [fs::OP_SYNC, word, 0, 0], &mut []) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(0), Err)
    }

    /// `OP_FS_STATS`: each disk manager's counters, `point:name=value`.
    pub fn fs_stats(&mut self) -> Answer {
        let mut text = String::new();
        let mut buf = alloc::vec![0u8; abi::msg::MAX_DATA_BYTES as usize];
        for i in 0..self.mounts.len() {
            if self.mounts[i].fstype == "memfs" {
                continue;
            }
            let Ok((_, len)) = self.mount_call(i, [fs::OP_STATS_TEXT, 0, 0, 0], &mut buf) else { continue };
            let point = self.mounts[i].point.clone();
            for line in String::from_utf8_lossy(&buf[..len.min(buf.len())]).lines() {
                text.push_str(&format!("{point}:{line}\n"));
            }
        }
        if text.len() > abi::msg::MAX_DATA_BYTES as usize {
            return err(errno::ERANGE);
        }
        Answer::WordsData([0; 4], text.into_bytes())
    }
}

/// A process serves `queue` (a link to it can be opened).
fn is_alive(pid: Pid, queue: u32) -> bool {
    match msg::open_link(pid, Queue(queue)) {
        Ok(l) => {
            let _ = msg::close_link(l);
            true
        }
        Err(_) => false,
    }
}
