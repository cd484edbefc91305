//! What the request-path tests (`creat_path.rs`, `write_path.rs`) share:
//! finding e2fsprogs and making a fresh image as `xtask` makes the
//! benchmark's disk (ext2, 1 KiB blocks). Not a test file of its own
//! (`tests/common/mod.rs` is not built as one).

use std::path::PathBuf;
use std::process::Command;

/// An e2fsprogs program on `PATH` or in the sbin directories.
pub fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// A fresh ext2 image of `kib` KiB with 1 KiB blocks, or `None` (the
/// test is skipped) without mke2fs. `tag` names the scratch file.
pub fn fresh_image(tag: &str, kib: u64) -> Option<Vec<u8>> {
    if tool("mke2fs").is_none() {
        eprintln!("SKIPPED: e2fsprogs is not installed; `cargo xtask test` installs it");
        return None;
    }
    made_image(tag, kib, "ext2")
}

/// [`fresh_image`] as `mke2fs -t ext3`: the same with a jbd2 journal in
/// inode 8 (`has_journal`), for the journal's tests.
#[allow(dead_code)] // Not every test crate that includes this module uses it.
pub fn fresh_ext3_image(tag: &str, kib: u64) -> Option<Vec<u8>> {
    made_image(tag, kib, "ext3")
}

/// `mke2fs -t FS_TYPE -b 1024` of `kib` KiB, read back whole; None
/// without e2fsprogs.
fn made_image(tag: &str, kib: u64, fs_type: &str) -> Option<Vec<u8>> {
    let mke2fs = tool("mke2fs")?;
    let img = std::env::temp_dir().join(format!("fs-ext2-{tag}-{}.img", std::process::id()));
    let _ = std::fs::remove_file(&img);
    let out = Command::new(mke2fs)
        .args(["-q", "-F", "-t", fs_type, "-b", "1024"])
        .arg(&img)
        .arg(format!("{kib}k"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&img).unwrap();
    let _ = std::fs::remove_file(&img);
    Some(bytes)
}
