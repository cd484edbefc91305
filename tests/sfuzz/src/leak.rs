//! The final leak check (`sfuzz::nothing_left_over`): what the run must
//! leave as it found it — the UNIX processes, the monitor's open-file
//! descriptions, memfs's handles, the network server's sockets, memfs's
//! files and directories ([`Counts`]) — and, since the seed-8 run of
//! 2026-11-25 found one memfs entry more than before and could not say
//! which, every memfs name with its kind and owner ([`memfs_names`]), so
//! that a failure names what was left (`unix_core::names`).
//!
//! What it is not: a check of the disk's names (`/disk` is ext2fs's, and
//! the fuzzer's file there is removed by name) or of inodes no name
//! reaches (only the counts see those; the failure says so).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::errno;
use runtime::msg::{self, Queue};
use runtime::sys;
use runtime::unix::{self, socket};
use unix_core::names::{self, Entry, Listing};

/// (UNIX processes, the monitor's open-file descriptions, memfs's
/// handles, the network server's sockets, memfs's files and directories).
pub type Counts = (usize, u64, u64, u64, u64);

/// The [`Counts`] once they equal `target` (pipe managers and killed
/// children end asynchronously, later on a loaded host; a TCP socket
/// winds down through its closing states), or, without a target, once
/// they have not changed for 2 s; at most a minute.
pub fn settled_counts(target: Option<Counts>) -> Counts {
    let counts = || {
        let procs = unix::ps().map_or(0, |p| p.len());
        let stats = |slot: u64, op: u64| {
            let (pid, queue) = sys::bootstrap(slot)?;
            let link = msg::open_link(pid, Queue(queue)).ok()?;
            let r = msg::call(link, &[op, 0, 0, 0], &[], &mut []).ok();
            let _ = msg::close_link(link);
            r.map(|(w, _)| w)
        };
        let descriptions =
            stats(abi::bootstrap::MONITOR, protocols::unix::monitor::OP_STATS).map_or(0, |w| w[3]);
        let memfs = stats(abi::bootstrap::FS, protocols::unix::fs::OP_STATS).unwrap_or_default();
        let sockets = socket::net_stats().map_or(u64::MAX, |(w, _)| w[0]);
        (procs, descriptions, memfs[3], sockets, memfs[0] + memfs[1])
    };
    let mut last = counts();
    let mut same = 0;
    for _ in 0..600 {
        if Some(last) == target || (target.is_none() && same >= 20) {
            break;
        }
        unix::sleep_ns(100_000_000);
        let now = counts();
        same = if now == last { same + 1 } else { 0 };
        last = now;
    }
    last
}

/// Remove `path` and everything below it (at most 64 levels: the fuzzer's
/// deepest paths stay far above that).
pub fn remove_tree(path: &str, depth: u32) -> Result<(), String> {
    use protocols::unix::mode::{S_IFDIR, S_IFMT};
    let entries = unix::read_dir(path).map_err(|e| format!("{path}: {}", errno::name(e)))?;
    for e in entries.iter().filter(|e| e.name != "." && e.name != "..") {
        let child = format!("{path}/{}", e.name);
        if e.mode & S_IFMT == S_IFDIR {
            if depth >= 64 {
                return Err(format!("{child}: deeper than 64 levels"));
            }
            remove_tree(&child, depth + 1)?;
        } else {
            unix::unlink(&child).map_err(|err| format!("{child}: {}", errno::name(err)))?;
        }
    }
    unix::rmdir(path).map_err(|e| format!("{path}: {}", errno::name(e)))
}

/// Every name memfs holds (other file systems' mount points named, not
/// entered), as root sees them; sorted by path.
pub fn memfs_names() -> Result<Vec<Entry>, String> {
    let mounts = unix::mounts().map_err(|e| format!("the mount table: {}", errno::name(e)))?;
    let points = names::mount_points(&mounts);
    let skip: Vec<&str> = points.iter().map(String::as_str).collect();
    let mut list = |dir: &str| -> Result<Listing, String> {
        let entries = unix::read_dir(dir).map_err(|e| format!("{dir}: {}", errno::name(e)))?;
        let mut out = Vec::with_capacity(entries.len());
        for e in entries.into_iter().filter(|e| e.name != "." && e.name != "..") {
            let path = if dir == "/" { format!("/{}", e.name) } else { format!("{dir}/{}", e.name) };
            // An entry removed between the listing and its stat (a pipe
            // manager's late exit) is not a leak: it is simply not there.
            match unix::stat(&path) {
                Ok(st) => out.push((e.name, st.mode, st.uid, st.gid)),
                Err(errno::ENOENT) => {}
                Err(err) => return Err(format!("{path}: {}", errno::name(err))),
            }
        }
        Ok(out)
    };
    names::walk("/", &skip, &mut list)
}

/// What the final check found: Ok, or the failure's text — the counts
/// before and after, and the names new and gone.
pub fn compare(before: (Counts, &[Entry]), after: (Counts, &[Entry])) -> Result<(), String> {
    let (new, gone) = names::changes(before.1, after.1);
    if before.0 == after.0 && new.is_empty() && gone.is_empty() {
        return Ok(());
    }
    let mut why = format!(
        "(processes, open-file descriptions, memfs handles, sockets, memfs files and directories) {:?} before, {:?} after",
        before.0, after.0
    );
    for e in &new {
        why.push_str(&format!("\n  memfs name left over: {e}"));
    }
    for e in &gone {
        why.push_str(&format!("\n  memfs name gone: {e}"));
    }
    if new.is_empty() && gone.is_empty() && before.0.4 != after.0.4 {
        why.push_str("\n  memfs's names are as before: the difference is an inode no name reaches (unlinked and still held, or lost by memfs)");
    }
    Err(why)
}
