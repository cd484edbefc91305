//! The name space: paths made absolute, lookups at the directory manager
//! and their cache, the permission checks on names (search, a writable
//! parent, the sticky bit, owners), and the calls that read or change
//! names: stat, unlink, mkdir, rmdir, rename, chdir, getcwd, chmod, chown.
//!
//! What it is not: opening what a name names (`files`) or running it
//! (`exec`).
//!
//! Invariants: the lookup cache holds only the attributes the permission
//! checks need (never sizes or times), and every call that changes names,
//! modes or owners empties it before it looks anything up
//! ([`Monitor::forget_lookups`]).

use crate::state::{Answer, Monitor, err, text};
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::{self as ux, Errno, Stat, errno, fs, mode};
use runtime::msg;
use unix_core::path;

/// Paths whose lookup the monitor remembers for `open`.
pub const LOOKUP_CACHE_ENTRIES: usize = 128;

impl Monitor {
    /// Look `abs` up: Ok((stat, rest of path after a device entry)).
    pub fn lookup(&mut self, abs: &str) -> Result<(Stat, Option<String>), (Errno, Option<Stat>)> {
        let mut reply = alloc::vec![0u8; abi::msg::MAX_DATA_BYTES as usize];
        let (mount, inner) = self.route(abs);
        let link = self.mounts[mount].link;
        let (w, len) = msg::call(link, &[fs::OP_LOOKUP, 0, 0, 0], inner.as_bytes(), &mut reply)
            .map_err(|_| (errno::EIO, None))?;
        match ux::result(w[0]) {
            Ok(v) => {
                let stat = Stat::decode(&reply[..len]).ok_or((errno::EIO, None))?;
                // A path that crosses a device entry, or ends at one, goes
                // on at the device's manager (Ridge §3).
                let is_device = mode::is_device(stat.mode) && stat.device_pid != 0;
                let rest = (v & fs::DEVICE != 0 || is_device)
                    .then(|| String::from_utf8_lossy(&reply[Stat::BYTES.min(len)..len]).into_owned());
                Ok((stat, rest))
            }
            Err(e) => {
                let parent = (w[1] == 1).then(|| Stat::decode(&reply[..len])).flatten();
                Err((e, parent))
            }
        }
    }

    /// [`Monitor::lookup`], answered from the cache when it can be (for
    /// `open`); a successful lookup is remembered.
    pub fn lookup_cached(&mut self, abs: &str) -> Result<(Stat, Option<String>), (Errno, Option<Stat>)> {
        match self.lookups.get(abs) {
            Some(hit) => Ok(hit.clone()),
            None => {
                let found = self.lookup(abs);
                if let Ok(hit) = &found {
                    if self.lookups.len() >= LOOKUP_CACHE_ENTRIES {
                        self.lookups.clear();
                    }
                    self.lookups.insert(String::from(abs), hit.clone());
                }
                found
            }
        }
    }

    /// Empty the lookup cache: names, modes or owners are about to change.
    pub fn forget_lookups(&mut self) {
        self.lookups.clear();
    }

    /// `data` as an absolute, normalised path, after checking that `me`
    /// may search every directory on the way to its last name (POSIX:
    /// execute permission on each directory of a path prefix).
    pub fn abs_path(&mut self, me: u64, data: &[u8]) -> Result<String, Errno> {
        let p = text(data)?;
        let abs = path::normalize(&self.procs[&me].cwd, p).map_err(|e| match e {
            path::PathError::Empty => errno::ENOENT,
            path::PathError::TooLong | path::PathError::NameTooLong => errno::ENAMETOOLONG,
        })?;
        if self.procs[&me].uid != 0 {
            self.check_search(me, &abs)?;
        }
        Ok(abs)
    }

    /// Search permission on `/` and every directory above the last name of
    /// `abs`. Directory attributes come from the lookup cache (emptied by
    /// every mode or owner change), so a deep path costs one lookup per
    /// directory once.
    fn check_search(&mut self, me: u64, abs: &str) -> Result<(), Errno> {
        let Some((parent, _)) = path::split_last(abs) else { return Ok(()) };
        let mut prefix = String::from("/");
        let mut names = path::components(parent).peekable();
        loop {
            let st = match self.lookups.get(&prefix) {
                Some((st, None)) => *st,
                _ => match self.lookup(&prefix) {
                    Ok((st, None)) => {
                        if self.lookups.len() >= LOOKUP_CACHE_ENTRIES {
                            self.lookups.clear();
                        }
                        self.lookups.insert(prefix.clone(), (st, None));
                        st
                    }
                    // A device entry or a missing directory: the request
                    // itself reports it.
                    _ => return Ok(()),
                },
            };
            if !mode::is_dir(st.mode) {
                return Err(errno::ENOTDIR);
            }
            if !self.permits(me, &st, 1) {
                return Err(errno::EACCES);
            }
            let Some(name) = names.next() else { return Ok(()) };
            if prefix.len() > 1 {
                prefix.push('/');
            }
            prefix.push_str(name);
        }
    }

    /// May `me` access a file with attributes `st` for `want` (a mask of
    /// 4 = read, 2 = write, 1 = execute/search)?
    pub fn permits(&self, me: u64, st: &Stat, want: u32) -> bool {
        let p = &self.procs[&me];
        mode::permits(st.mode, st.uid, st.gid, p.uid, p.gid, want)
    }

    /// May `me` add or remove names in the parent directory of `abs`?
    fn check_parent_writable(&mut self, me: u64, abs: &str) -> Result<Stat, Errno> {
        let (parent, _) = path::split_last(abs).ok_or(errno::EBUSY)?;
        let parent = String::from(parent);
        let (st, _) = self.lookup(&parent).map_err(|(e, _)| e)?;
        if !mode::is_dir(st.mode) {
            return Err(errno::ENOTDIR);
        }
        if !self.permits(me, &st, 3) {
            return Err(errno::EACCES);
        }
        Ok(st)
    }

    /// The sticky bit on `dir` (/tmp): the name `abs` in it may be removed
    /// or replaced only by its file's owner, the directory's owner or root.
    fn check_sticky(&mut self, me: u64, dir: &Stat, abs: &str) -> Result<(), Errno> {
        let uid = self.procs[&me].uid;
        if dir.mode & 0o1000 == 0 || uid == 0 || uid == dir.uid {
            return Ok(());
        }
        match self.lookup(abs) {
            Ok((st, _)) if st.uid != uid => Err(errno::EPERM),
            _ => Ok(()),
        }
    }

    /// `OP_STAT`.
    pub fn stat(&mut self, me: u64, data: &[u8]) -> Answer {
        match self.abs_path(me, data).map_err(|e| (e, None)).and_then(|p| self.lookup(&p)) {
            Ok((st, _)) => Answer::WordsData([0; 4], st.encode().to_vec()),
            Err((e, _)) => err(e),
        }
    }

    pub fn unlink(&mut self, me: u64, data: &[u8]) -> Result<u64, Errno> {
        self.forget_lookups();
        let abs = self.abs_path(me, data)?;
        let dir = self.check_parent_writable(me, &abs)?;
        self.check_sticky(me, &dir, &abs)?;
        if self.is_mount_point(&abs) {
            return Err(errno::EBUSY);
        }
        self.path_call(&abs, [fs::OP_UNLINK, 0, 0, 0], &mut []).map(|_| 0)
    }

    pub fn mkdir(&mut self, me: u64, data: &[u8], mode_bits: u32) -> Result<u64, Errno> {
        self.forget_lookups();
        let abs = self.abs_path(me, data)?;
        // `/` and a mount point are directories that exist (POSIX mkdir:
        // EEXIST, before any permission check, as on Linux), although the
        // volume's manager sees them as its root, which has no parent:
        // `mkdir -p /disk` must find /disk there, not fail with EBUSY.
        if abs == "/" || self.is_mount_point(&abs) {
            return Err(errno::EEXIST);
        }
        self.check_parent_writable(me, &abs)?;
        let p = &self.procs[&me];
        let owner = fs::owner_word(p.uid, p.gid);
        let m = (mode_bits & 0o7777 & !p.umask) as u64;
        self.path_call(&abs, [fs::OP_MKDIR, m, 0, owner], &mut []).map(|_| 0)
    }

    pub fn rmdir(&mut self, me: u64, data: &[u8]) -> Result<u64, Errno> {
        self.forget_lookups();
        let abs = self.abs_path(me, data)?;
        // As for unlink: in a sticky directory (/tmp) only the owner of
        // the directory being removed, of its parent, or root.
        let dir = self.check_parent_writable(me, &abs)?;
        self.check_sticky(me, &dir, &abs)?;
        if self.is_mount_point(&abs) {
            return Err(errno::EBUSY);
        }
        self.path_call(&abs, [fs::OP_RMDIR, 0, 0, 0], &mut []).map(|_| 0)
    }

    pub fn rename(&mut self, me: u64, data: &[u8]) -> Result<u64, Errno> {
        self.forget_lookups();
        let mut parts = data.splitn(2, |&b| b == 0);
        let (Some(old), Some(new)) = (parts.next(), parts.next()) else { return Err(errno::EINVAL) };
        let (old, new) = (self.abs_path(me, old)?, self.abs_path(me, new)?);
        let old_dir = self.check_parent_writable(me, &old)?;
        let new_dir = self.check_parent_writable(me, &new)?;
        // The sticky bit (/tmp): a name there is removed or replaced only
        // by its file's owner, the directory's owner or root.
        self.check_sticky(me, &old_dir, &old)?;
        self.check_sticky(me, &new_dir, &new)?;
        if self.is_mount_point(&old) || self.is_mount_point(&new) {
            return Err(errno::EBUSY);
        }
        // Both names must be one manager's, under one mount (POSIX: EXDEV
        // for a rename between file systems).
        let ((old_mount, old_inner), (new_mount, new_inner)) = (self.route(&old), self.route(&new));
        if old_mount != new_mount {
            return Err(errno::EXDEV);
        }
        let mut both = Vec::with_capacity(old_inner.len() + new_inner.len() + 1);
        both.extend_from_slice(old_inner.as_bytes());
        both.push(0);
        both.extend_from_slice(new_inner.as_bytes());
        let link = self.mounts[old_mount].link;
        self.call(link, [fs::OP_RENAME, 0, 0, 0], &both, &mut []).map(|_| 0)
    }

    pub fn chdir(&mut self, me: u64, data: &[u8]) -> Result<u64, Errno> {
        let abs = self.abs_path(me, data)?;
        let (st, rest) = self.lookup(&abs).map_err(|(e, _)| e)?;
        if rest.is_some() || !mode::is_dir(st.mode) {
            return Err(errno::ENOTDIR);
        }
        if !self.permits(me, &st, 1) {
            return Err(errno::EACCES);
        }
        self.procs.get_mut(&me).expect("caller exists").cwd = abs;
        Ok(0)
    }

    /// `OP_GETCWD`: the path as the reply's data.
    pub fn getcwd(&self, me: u64) -> Answer {
        Answer::WordsData([0; 4], self.procs[&me].cwd.as_bytes().to_vec())
    }

    /// `chmod`: the file's owner or root only.
    pub fn chmod(&mut self, me: u64, data: &[u8], mode_bits: u64) -> Result<u64, Errno> {
        self.forget_lookups();
        let abs = self.abs_path(me, data)?;
        let (st, _) = self.lookup(&abs).map_err(|(e, _)| e)?;
        let uid = self.procs[&me].uid;
        if uid != 0 && uid != st.uid {
            return Err(errno::EPERM);
        }
        self.path_call(&abs, [fs::OP_CHMOD, mode_bits & 0o7777, 0, 0], &mut []).map(|_| 0)
    }

    /// `chown`: root only.
    pub fn chown(&mut self, me: u64, data: &[u8], uid: u64, gid: u64) -> Result<u64, Errno> {
        self.forget_lookups();
        let abs = self.abs_path(me, data)?;
        if self.procs[&me].uid != 0 {
            return Err(errno::EPERM);
        }
        self.path_call(&abs, [fs::OP_CHOWN, uid, gid, 0], &mut []).map(|_| 0)
    }
}
