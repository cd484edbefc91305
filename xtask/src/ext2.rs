//! ext2 images on the host, with e2fsprogs (issue 12): the default disk
//! of `cargo xtask run` (an empty ext2 volume made on first use and kept,
//! mounted at `/disk`), the root volume of `root=disk` (the boot image's
//! programs and `etc/` files copied in with `mke2fs -d`), and the checks
//! the tests make on images Ridgeback wrote (`e2fsck -fn`, `debugfs`).
//!
//! What it is not: an ext2 implementation (that is `fs-ext2`, in the
//! guest); everything here runs the host's `mke2fs`, `e2fsck` and
//! `debugfs`, installed by [`tools::ensure_e2fsprogs`] when missing.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use crate::tools::{self, Result};

/// Size of the default disk image (sparse: only written blocks cost).
pub const DEFAULT_DISK_BYTES: u64 = 64 << 20;
/// The default disk image of `run`, under cargo's target directory.
pub const DEFAULT_DISK_PATH: &str = "disk/ext2.img";
/// The root volume of `root=disk`, and the directory it is made from.
const ROOT_DISK_PATH: &str = "disk/root.img";
const ROOT_TREE_PATH: &str = "disk/root-tree";
/// Room beyond the programs in the root volume.
const ROOT_SPARE_BYTES: u64 = 48 << 20;

/// An e2fsprogs program (`mke2fs`, `e2fsck`, `debugfs`), installed first
/// when missing; found on `PATH` or in `/usr/sbin`, `/sbin`.
pub fn program(name: &str) -> Result<PathBuf> {
    tools::ensure_e2fsprogs()?;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .ok_or(format!("{name} not found although e2fsprogs is installed"))
}

/// `mke2fs -t ext2` of `size_bytes` at `path` (made anew), filled from
/// `from` when given (`-d`), every file owned by root.
pub fn make_image(path: &Path, size_bytes: u64, from: Option<&Path>) -> Result<()> {
    make_image_of("ext2", path, size_bytes, from, false)
}

/// [`make_image`] as `mke2fs -t ext3`: the same volume with a jbd2
/// journal in inode 8 (`has_journal`; 4 MiB for 64 MiB), which `ext2fs`
/// commits `fsync` through (boot option `ext2.journal`, docs/filesystem.md,
/// "The journal (jbd2)").
///
/// The image file is written whole (zeros, then `mke2fs -E nodiscard`)
/// rather than left sparse: the log's blocks are written in turn, each
/// for the first time until the log wraps, and in a hole of the host's
/// file each such write allocates a block that the guest's flush then
/// waits for the host file system to commit (a flush took 3 to 7 ms
/// after a log write, 2 after the ordered writes, at load 5). A disk
/// has no holes.
pub fn make_image_with_journal(path: &Path, size_bytes: u64, from: Option<&Path>) -> Result<()> {
    make_image_of("ext3", path, size_bytes, from, true)
}

/// [`make_image`] written whole, as [`make_image_with_journal`] is: the
/// benchmarks' ext2 volumes (B's, and Linux's peer of R2 on disk), so
/// that no system's writes fall into a hole of the host's file that the
/// other system's do not (a first write into a hole makes the host
/// allocate, and the next flush wait for the host's commit).
pub fn make_whole_image(path: &Path, size_bytes: u64, from: Option<&Path>) -> Result<()> {
    make_image_of("ext2", path, size_bytes, from, true)
}

fn make_image_of(
    fs_type: &str,
    path: &Path,
    size_bytes: u64,
    from: Option<&Path>,
    whole: bool,
) -> Result<()> {
    let mke2fs = program("mke2fs")?;
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let _ = fs::remove_file(path);
    let mut extended = String::from("root_owner=0:0");
    if whole {
        let zeros = vec![0u8; 1 << 20];
        let mut file =
            fs::File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let mut left = size_bytes;
        while left > 0 {
            let n = left.min(zeros.len() as u64) as usize;
            std::io::Write::write_all(&mut file, &zeros[..n])
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            left -= n as u64;
        }
        extended.push_str(",nodiscard,lazy_itable_init=1,lazy_journal_init=1");
    }
    let mut command = Command::new(mke2fs);
    command.args(["-q", "-F", "-t", fs_type, "-b", "1024", "-E", &extended]);
    if let Some(dir) = from {
        command.arg("-d").arg(dir);
    }
    command.arg(path).arg(format!("{}k", size_bytes / 1024));
    let out = command.output().map_err(|e| format!("cannot run mke2fs: {e}"))?;
    if !out.status.success() {
        return Err(format!("mke2fs {}: {}", path.display(), String::from_utf8_lossy(&out.stderr)));
    }
    Ok(())
}

/// The default disk: an empty ext2 volume made on first use and kept
/// between boots (a file written in one boot is there in the next).
pub fn default_image(target_dir: &Path) -> Result<PathBuf> {
    let path = target_dir.join(DEFAULT_DISK_PATH);
    if !path.exists() {
        eprintln!("xtask: making the disk {} (ext2, {} MiB)", path.display(), DEFAULT_DISK_BYTES >> 20);
        make_image(&path, DEFAULT_DISK_BYTES, None)?;
    }
    Ok(path)
}

/// The root volume of `root=disk`: `/bin` (every program of the boot
/// image), `/etc` (its `etc.*` files), and empty `/dev`, `/tmp`, `/home`,
/// `/root`, `/disk`. Made again when a boot-image file is newer than it,
/// else kept (with whatever the last boots wrote).
pub fn root_image(target_dir: &Path, modules: &[PathBuf]) -> Result<PathBuf> {
    let image = target_dir.join(ROOT_DISK_PATH);
    let stamp = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH);
    let image_time = fs::metadata(&image).and_then(|m| m.modified()).ok();
    if image_time.is_some_and(|t| modules.iter().all(|m| stamp(m) <= t)) {
        return Ok(image);
    }
    let tree = target_dir.join(ROOT_TREE_PATH);
    let _ = fs::remove_dir_all(&tree);
    let mut bytes = 0;
    for dir in ["bin", "etc", "dev", "tmp", "home", "root", "disk"] {
        fs::create_dir_all(tree.join(dir)).map_err(|e| format!("cannot make {}: {e}", tree.display()))?;
    }
    for module in modules {
        let Some(name) = module.file_name().and_then(|n| n.to_str()) else { continue };
        // /etc/shadow is root's alone, as memfs makes it
        // (`unix_core::memfs::SECRET_ETC_FILES`).
        let (dest, mode) = match name.strip_prefix("etc.") {
            Some("shadow") => (tree.join("etc").join("shadow"), 0o600),
            Some(rest) => (tree.join("etc").join(rest), 0o644),
            // Set-user-ID root, as memfs makes it (`SET_USER_ID_PROGRAMS`).
            None if name == "su" => (tree.join("bin").join(name), 0o4755),
            None => (tree.join("bin").join(name), 0o755),
        };
        bytes += fs::copy(module, &dest).map_err(|e| format!("cannot copy {}: {e}", module.display()))?;
        set_mode(&dest, mode)?;
    }
    set_mode(&tree.join("tmp"), 0o1777)?;
    set_mode(&tree.join("root"), 0o700)?;
    eprintln!("xtask: making the root disk {} from the boot image (mke2fs -d)", image.display());
    make_image(&image, (bytes + ROOT_SPARE_BYTES).next_multiple_of(1 << 20), Some(&tree))?;
    Ok(image)
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot chmod {}: {e}", path.display()))
}

/// `e2fsck -fn IMAGE`: `Ok` when clean, else its report.
pub fn check(image: &Path) -> Result<()> {
    let out = Command::new(program("e2fsck")?)
        .arg("-fn")
        .arg(image)
        .output()
        .map_err(|e| format!("cannot run e2fsck: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "e2fsck -fn {} is not clean:\n{}{}",
        image.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// `e2fsck -fn IMAGE`'s complaints that could lose a file: everything but
/// what a power cut may leave behind without losing anything (counts,
/// blocks and inodes marked in use that nothing uses, inodes no entry
/// names yet, link counts too high, sizes and block counts behind the
/// block map, a moved directory's `..`, a directory moved between parents
/// named by both for a moment, an inode in use with its bit clear that no
/// entry names; docs/filesystem.md, "The write order"). The same rule as
/// `fs-ext2`'s power-cut test.
pub fn harmful_complaints(image: &Path) -> Result<Vec<String>> {
    let out = Command::new(program("e2fsck")?)
        .arg("-fn")
        .arg(image)
        .output()
        .map_err(|e| format!("cannot run e2fsck: {e}"))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let unattached = unattached_inodes(&text);
    Ok(text.lines().filter(|l| !is_harmless(l.trim(), &unattached)).map(String::from).collect())
}

/// The inodes e2fsck calls unattached (in use, named by no entry).
fn unattached_inodes(text: &str) -> Vec<u64> {
    text.lines()
        .filter(|l| l.trim().starts_with("Unattached"))
        .filter_map(|l| l.split(|c: char| !c.is_ascii_digit()).find(|s| !s.is_empty())?.parse().ok())
        .collect()
}

/// Every `+N` / `+(A--B)` of a bitmap line is one of `inodes`.
fn only_these_set(l: &str, inodes: &[u64]) -> bool {
    l.split_whitespace().filter(|t| t.starts_with('+')).all(|t| {
        let n: Vec<u64> = t
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse().ok())
            .collect();
        match n[..] {
            [a] => inodes.contains(&a),
            [a, b] => (a..=b).all(|x| inodes.contains(&x)),
            _ => false,
        }
    })
}

fn is_harmless(l: &str, unattached: &[u64]) -> bool {
    let numbers = |l: &str| -> Vec<u64> {
        l.split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse().ok())
            .collect()
    };
    l.is_empty()
        || l.starts_with("Pass ")
        || l.contains("count wrong")
        || l.starts_with("Fix? no")
        || l.starts_with("Clear? no")
        || l.starts_with("Connect to /lost+found? no")
        || l.starts_with("Unattached")
        || l.starts_with("Unconnected directory inode")
        || l.contains("WARNING: Filesystem still has errors")
        || l.contains("files (")
        || l.starts_with("e2fsck ")
        || l.starts_with("Padding at end")
        || (l.starts_with("Inode ") && (l.contains(", i_blocks is ") || l.contains(", i_size is ")))
        || (l.starts_with("Inode bitmap differences:") && only_these_set(l, unattached))
        || (l.starts_with("Block bitmap differences:") && !l.contains('+'))
        || (l.starts_with("Inode ") && l.contains("ref count is") && {
            let n = numbers(l);
            n.len() >= 3 && n[1] > n[2]
        })
        || (l.starts_with("'..' in") && l.contains("should be"))
        || (l.starts_with("Entry '") && l.contains("is a link to directory"))
}

/// A file's bytes in an image, read by `debugfs -R 'cat PATH'`.
pub fn cat(image: &Path, path: &str) -> Result<Vec<u8>> {
    let out = Command::new(program("debugfs")?)
        .arg("-R")
        .arg(format!("cat {path}"))
        .arg(image)
        .output()
        .map_err(|e| format!("cannot run debugfs: {e}"))?;
    let errors = String::from_utf8_lossy(&out.stderr);
    if errors.lines().any(|l| l.contains("File not found") || l.contains("not found by ext2_lookup")) {
        return Err(format!("debugfs: {path} is not in {}", image.display()));
    }
    Ok(out.stdout)
}

/// The SHA-256 of `bytes`, in hex (as `sha256sum` prints it).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harmless_complaints_are_the_lossless_ones() {
        for l in [
            "Free blocks count wrong for group #0 (7, counted=8).",
            "Block bitmap differences:  -(1234--1240)",
            "Inode 12 ref count is 2, should be 1.  Fix? no",
            "Unattached inode 14",
            "Pass 1: Checking inodes, blocks, and sizes",
            "Inode bitmap differences:  +14 -20",
            "Entry 'sub' in /dir (2049) is a link to directory /moved (2050).",
        ] {
            assert!(is_harmless(l, &[14]), "{l}");
        }
        assert_eq!(unattached_inodes("Unattached zero-length inode 35.  Clear? no\nPass 5"), vec![35]);
        for l in [
            "Block bitmap differences:  +1234",
            "Inode 12 ref count is 1, should be 2.  Fix? no",
            "Entry 'f' in / (2) has deleted/unused inode 13.  Clear? no",
            "Inode 13 has illegal block(s).  Clear? no",
            "Inode bitmap differences:  +15",
            "Inode bitmap differences:  +(14--15)",
        ] {
            assert!(!is_harmless(l, &[14]), "{l}");
        }
    }

    #[test]
    fn sha256_matches_the_known_value() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
