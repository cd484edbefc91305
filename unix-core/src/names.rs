//! Every name of one file system, and what changed between two listings:
//! the leak checks' way to say which entry a run left behind, not only
//! how many (issue 16: the seed-8 fuzz run's one extra memfs entry could
//! not be named, since the check compared `fs::OP_STATS` counts).
//!
//! [`walk`] lists a tree through a caller-given `list` function (the
//! programs pass one that reads directories through the monitor; the
//! tests pass a table), skipping other file systems' mount points;
//! [`changes`] compares two listings; [`Entry`]'s `Display` is what a
//! failure prints.
//!
//! What it is not: a way to find inodes no name reaches (an unlinked file
//! still open): only the counts see those, and the caller says so when
//! the counts differ but the names do not.
//!
//! Invariants: a listing is sorted by path and names each path once;
//! recursion is bounded ([`MAX_DEPTH`]), so a cycle or a runaway tree
//! gives an error, not a hang.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use protocols::unix::mode;

/// Directories deeper than this below the root are not walked (an error):
/// the fuzzer's deepest paths are 7 levels down, the soak's fewer.
pub const MAX_DEPTH: usize = 64;

/// One name: where, what kind, whose.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub path: String,
    /// The mode's type and permission bits (`protocols::unix::mode`).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

impl Entry {
    /// `d`, `-`, `c`, `b`, `s`, `p` or `?`, as `ls -l` says it.
    pub fn kind(&self) -> char {
        match self.mode & mode::S_IFMT {
            mode::S_IFDIR => 'd',
            mode::S_IFREG => '-',
            mode::S_IFCHR => 'c',
            mode::S_IFBLK => 'b',
            mode::S_IFSOCK => 's',
            mode::S_IFIFO => 'p',
            _ => '?',
        }
    }
}

impl fmt::Display for Entry {
    /// `d 0755 1000:1000 "/tmp/x"` (the path quoted: a fuzzer's names hold
    /// control characters).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:04o} {}:{} {:?}", self.kind(), self.mode & 0o7777, self.uid, self.gid, self.path)
    }
}

/// What one directory holds: (name, mode, uid, gid) of each entry other
/// than `.` and `..` (those are skipped if the lister gives them).
pub type Listing = Vec<(String, u32, u32, u32)>;

/// Every name below `root` (itself not included), sorted by path. `list`
/// reads one directory; directories in `skip` (other file systems' mount
/// points) are listed but not entered. Err: the first directory that
/// could not be read, or one deeper than [`MAX_DEPTH`].
pub fn walk(
    root: &str,
    skip: &[&str],
    list: &mut dyn FnMut(&str) -> Result<Listing, String>,
) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    walk_into(root, skip, list, 0, &mut out)?;
    out.sort();
    Ok(out)
}

fn walk_into(
    dir: &str,
    skip: &[&str],
    list: &mut dyn FnMut(&str) -> Result<Listing, String>,
    depth: usize,
    out: &mut Vec<Entry>,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("{dir}: deeper than {MAX_DEPTH} levels"));
    }
    for (name, m, uid, gid) in list(dir)? {
        if name == "." || name == ".." {
            continue;
        }
        let path = if dir == "/" { format!("/{name}") } else { format!("{dir}/{name}") };
        let is_dir = m & mode::S_IFMT == mode::S_IFDIR;
        if is_dir && !skip.contains(&path.as_str()) {
            walk_into(&path, skip, list, depth + 1, out)?;
        }
        out.push(Entry { path, mode: m, uid, gid });
    }
    Ok(())
}

/// Entries of `after` that `before` does not have, and entries of
/// `before` that `after` does not have (an entry whose mode or owner
/// changed is in both). Both listings sorted, as [`walk`] gives them.
pub fn changes<'a>(before: &'a [Entry], after: &'a [Entry]) -> (Vec<&'a Entry>, Vec<&'a Entry>) {
    let new = after.iter().filter(|e| before.binary_search(e).is_err()).collect();
    let gone = before.iter().filter(|e| after.binary_search(e).is_err()).collect();
    (new, gone)
}

/// The mount points other than `/` in the monitor's `OP_MOUNTS` text
/// (`source target type options` lines): the directories [`walk`] must
/// not enter to list memfs alone.
pub fn mount_points(mounts_text: &str) -> Vec<String> {
    mounts_text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|p| *p != "/")
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;
    use std::collections::BTreeMap;

    const DIR: u32 = mode::S_IFDIR;
    const REG: u32 = mode::S_IFREG;

    /// A tree as a table: directory path -> its listing.
    fn lister<'a>(
        tree: &'a BTreeMap<&'static str, Listing>,
    ) -> impl FnMut(&str) -> Result<Listing, String> + 'a {
        move |dir| tree.get(dir).cloned().ok_or_else(|| format!("{dir}: ENOENT"))
    }

    fn base() -> BTreeMap<&'static str, Listing> {
        let mut t = BTreeMap::new();
        t.insert(
            "/",
            vec![
                (".".to_string(), DIR | 0o755, 0, 0),
                ("tmp".to_string(), DIR | 0o1777, 0, 0),
                ("disk".to_string(), DIR | 0o755, 0, 0),
            ],
        );
        t.insert("/tmp", vec![("..".to_string(), DIR | 0o755, 0, 0), ("a".to_string(), REG | 0o644, 0, 0)]);
        t.insert("/disk", vec![("lost+found".to_string(), DIR | 0o700, 0, 0)]);
        t.insert("/disk/lost+found", vec![]);
        t
    }

    fn paths(entries: &[&Entry]) -> Vec<String> {
        entries.iter().map(|e| e.path.clone()).collect()
    }

    #[test]
    fn walk_lists_every_name_sorted_and_skips_mount_points() {
        let t = base();
        let all = walk("/", &["/disk"], &mut lister(&t)).unwrap();
        let names: Vec<&str> = all.iter().map(|e| e.path.as_str()).collect();
        // `/disk` is named (memfs holds the mount point) but not entered.
        assert_eq!(names, ["/disk", "/tmp", "/tmp/a"]);
        // Without the skip, the disk's directory is reached.
        let all = walk("/", &[], &mut lister(&t)).unwrap();
        assert!(all.iter().any(|e| e.path == "/disk/lost+found"));
    }

    #[test]
    fn a_new_directory_is_named_with_its_kind_and_owner() {
        let mut t = base();
        let before = walk("/", &["/disk"], &mut lister(&t)).unwrap();
        t.get_mut("/tmp").unwrap().push(("x".to_string(), DIR | 0o755, 1000, 1000));
        t.insert("/tmp/x", vec![("\u{1}".to_string(), REG | 0o600, 1000, 1000)]);
        let after = walk("/", &["/disk"], &mut lister(&t)).unwrap();
        let (new, gone) = changes(&before, &after);
        assert_eq!(paths(&new), ["/tmp/x", "/tmp/x/\u{1}"]);
        assert!(gone.is_empty());
        assert_eq!(new[0].to_string(), "d 0755 1000:1000 \"/tmp/x\"");
        assert_eq!(new[1].to_string(), "- 0600 1000:1000 \"/tmp/x/\\u{1}\"");
    }

    #[test]
    fn removed_and_changed_entries_are_named_too() {
        let mut t = base();
        let before = walk("/", &["/disk"], &mut lister(&t)).unwrap();
        // /tmp/a is removed; /tmp changes owner.
        t.insert("/tmp", vec![]);
        t.get_mut("/").unwrap()[1].2 = 1000;
        let after = walk("/", &["/disk"], &mut lister(&t)).unwrap();
        let (new, gone) = changes(&before, &after);
        assert_eq!(paths(&new), ["/tmp"]);
        assert_eq!(paths(&gone), ["/tmp", "/tmp/a"]);
        assert_eq!(changes(&after, &after), (vec![], vec![]));
    }

    #[test]
    fn an_unreadable_directory_or_a_cycle_is_an_error_not_a_hang() {
        let mut t = base();
        t.remove("/tmp");
        assert_eq!(walk("/", &["/disk"], &mut lister(&t)).unwrap_err(), "/tmp: ENOENT");
        // A lister that answers every directory with a subdirectory.
        let mut endless =
            |_: &str| -> Result<Listing, String> { Ok(vec![("d".to_string(), DIR | 0o755, 0, 0)]) };
        let err = walk("/", &[], &mut endless).unwrap_err();
        assert!(err.ends_with(&format!("deeper than {MAX_DEPTH} levels")), "{err}");
    }

    #[test]
    fn kinds() {
        let e = |m| Entry { path: String::new(), mode: m, uid: 0, gid: 0 }.kind();
        assert_eq!(
            [e(DIR), e(REG), e(mode::S_IFCHR), e(mode::S_IFBLK), e(mode::S_IFSOCK), e(mode::S_IFIFO), e(0)],
            ['d', '-', 'c', 'b', 's', 'p', '?']
        );
    }

    #[test]
    fn mount_points_from_the_monitors_table() {
        let text = "memfs / memfs rw\n/dev/vda /disk ext2 rw\n\n/dev/ram0 /mnt/r ext2 ro\n";
        assert_eq!(mount_points(text), ["/disk", "/mnt/r"]);
        assert!(mount_points("").is_empty());
    }
}
