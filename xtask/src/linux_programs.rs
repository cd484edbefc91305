//! Linux programs in the boot image (issue 14): `--add PATH` copies host
//! files into the image's `/bin` (each a Multiboot module, which memfs
//! puts in `/bin` under its file name), and `--with-busybox` adds Debian's
//! `busybox-static` as `/bin/busybox`, fetched with `apt-get download` as
//! the benchmark's Linux guest fetches it (linux_guest.rs) and kept in
//! `target/linux-programs/`. Ridgeback's monitor runs any executable
//! without its program note through the Linux server (docs/linux-abi.md).
//!
//! What it is not: a package manager. Files are copied as they are.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::linux_guest::{BUSYBOX_PACKAGE, find_file, run_checked};
use crate::tools::Result;

/// The extra modules `--with-busybox` and `--add` (`add`) ask for,
/// checked: each names an existing file whose name no program of the image
/// (`taken`) already has. (Plain arguments rather than `run::RunOptions`,
/// so that this module does not import the one that calls it.)
pub fn extra_modules(
    with_busybox: bool,
    add: &[PathBuf],
    target_dir: &Path,
    taken: &[PathBuf],
) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = Vec::new();
    if with_busybox {
        out.push(busybox(&target_dir.join("linux-programs"))?);
    }
    for path in add {
        if !path.is_file() {
            return Err(format!("--add {}: no such file", path.display()));
        }
        out.push(fs::canonicalize(path).map_err(|e| format!("--add {}: {e}", path.display()))?);
    }
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for (i, path) in out.iter().enumerate() {
        let n = name(path);
        if taken.iter().chain(&out[..i]).any(|t| name(t) == n) {
            return Err(format!("--add {}: the image already has a program named {n}", path.display()));
        }
    }
    Ok(out)
}

/// Debian's static busybox, fetched once into `cache_dir`.
pub fn busybox(cache_dir: &Path) -> Result<PathBuf> {
    let binary = cache_dir.join("busybox/bin/busybox");
    if binary.is_file() {
        return Ok(binary);
    }
    let debs = cache_dir.join("debs");
    fs::create_dir_all(&debs).map_err(|e| format!("creating {}: {e}", debs.display()))?;
    let download =
        run_checked(Command::new("apt-get").arg("download").arg(BUSYBOX_PACKAGE).current_dir(&debs));
    if download.is_err() {
        // A fresh machine's apt knows no packages until its lists are fetched.
        run_checked(Command::new("apt-get").arg("update"))?;
        run_checked(Command::new("apt-get").arg("download").arg(BUSYBOX_PACKAGE).current_dir(&debs))?;
    }
    let deb = find_file(&debs, |n| n.starts_with(&format!("{BUSYBOX_PACKAGE}_")) && n.ends_with(".deb"))?
        .ok_or_else(|| format!("apt-get download {BUSYBOX_PACKAGE} left no .deb in {}", debs.display()))?;
    run_checked(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(cache_dir.join("busybox")))?;
    if !binary.is_file() {
        return Err(format!("{BUSYBOX_PACKAGE} has no bin/busybox"));
    }
    Ok(binary)
}
