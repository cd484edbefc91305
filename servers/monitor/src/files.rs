//! Open-file descriptions and descriptor tables. A description is what
//! `open` made at a manager (its handle, where the offset lives); fds of
//! one or several processes (after `dup` and `fork`) refer to it, and the
//! manager hears `io::OP_CLOSE` when the last reference goes.

use alloc::vec::Vec;
use protocols::unix::FdInfo;

/// Most open-file descriptions in the whole system.
pub const MAX_OPEN_FILES: usize = 1024;
/// Descriptors per process (`runtime::unix::MAX_FDS`).
pub const MAX_FDS: usize = 64;

#[derive(Clone, Copy, Debug)]
pub struct OpenFile {
    pub info: FdInfo,
    pub refs: u32,
}

#[derive(Default)]
pub struct OpenFiles {
    slots: Vec<Option<OpenFile>>,
}

impl OpenFiles {
    pub fn add(&mut self, info: FdInfo) -> Option<usize> {
        let file = OpenFile { info, refs: 1 };
        if let Some(i) = self.slots.iter().position(Option::is_none) {
            self.slots[i] = Some(file);
            return Some(i);
        }
        if self.slots.len() >= MAX_OPEN_FILES {
            return None;
        }
        self.slots.push(Some(file));
        Some(self.slots.len() - 1)
    }

    pub fn get(&self, i: usize) -> Option<&OpenFile> {
        self.slots.get(i).and_then(Option::as_ref)
    }

    pub fn retain(&mut self, i: usize) {
        if let Some(Some(f)) = self.slots.get_mut(i) {
            f.refs += 1;
        }
    }

    /// Drop a reference; returns the description when it was the last.
    pub fn release(&mut self, i: usize) -> Option<OpenFile> {
        let f = self.slots.get_mut(i)?.as_mut()?;
        f.refs -= 1;
        if f.refs == 0 { self.slots[i].take() } else { None }
    }

    pub fn in_use(&self) -> u64 {
        self.slots.iter().flatten().count() as u64
    }
}

/// One process's descriptors: fd → open-file index.
#[derive(Clone)]
pub struct FdTable {
    pub fds: [Option<usize>; MAX_FDS],
}

impl FdTable {
    pub const fn new() -> FdTable {
        FdTable { fds: [None; MAX_FDS] }
    }

    pub fn get(&self, fd: u64) -> Option<usize> {
        *self.fds.get(usize::try_from(fd).ok()?)?
    }

    /// The lowest free descriptor at or above `from`.
    pub fn lowest_free(&self, from: usize) -> Option<usize> {
        (from..MAX_FDS).find(|&i| self.fds[i].is_none())
    }
}
