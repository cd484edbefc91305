//! disktest: workloads on a disk file system whose results the host
//! checks against the image itself (issue 12; `xtask/src/test/disk.rs`).
//! The guest prints what it made; after power-off the host runs `e2fsck
//! -fn` and reads every file back with `debugfs`, comparing sizes and
//! SHA-256 sums with the lines printed here.
//!
//! - `disktest sums DIR`: every file under DIR, read back
//!   (`disktest: file PATH SIZE SHA256`, `disktest: dir PATH`), for an
//!   image the host made with `mke2fs -d`: read byte for byte.
//! - `disktest workload DIR [small]`: create, write, append, truncate (down
//!   and up), rename (in place, across directories, over a file), unlink,
//!   mkdir, rmdir, many small files, one large file, a deep tree; then
//!   `sums` of DIR, and `disktest: gone PATH` for each name removed.
//!   `small` scales it down (for `nbuf=1`).
//! - `disktest cuts DIR`: the power-cut workload: file after file written
//!   and `fsync`'d (`disktest: fsynced PATH SIZE SHA256` once `fsync`
//!   returned), with names made, renamed and removed in between without
//!   any sync. The host kills the machine after some `fsynced` line.
//! - `disktest readwin DIR on|off`: reads in order with and without read
//!   windows (`ext2.readwin=`), and every change that must show in them
//!   (`readwin.rs`); `disktest rwchild PATH` is its client that dies with
//!   windowed descriptors open. `disktest deadwin PATH`: a reader
//!   holding a window when the volume's manager is ended (the disk's
//!   driver killed until init gives it up) gets `EIO`, not the window.
//!   It leaves the volume unmounted: the last command of its boot.
//! - `disktest lostopen DIR`: an open held by the volume's manager when
//!   it is ended, and a descriptor kept across the volume's remount
//!   (`lostopen.rs`, branch `robust`).
//! - `disktest procs`: the kernel's count of live processes
//!   (`disktest: processes N`), so the host can see that a volume's
//!   manager leaves nothing behind when it ends (its I/O workers and its
//!   write-back timer, `servers/ext2fs/src/timer.rs`).
//!
//! Paths printed are absolute (the host strips the mount point). Every line this program prints
//! starts with `disktest: `; a failure prints `disktest: FAIL …` and exits
//! with status 1.

#![no_std]
#![no_main]
// One write over the read-window page, in `readwin` (the scribble test).
#![deny(unsafe_code)]

extern crate alloc;

mod lostopen;
mod readwin;

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::open_flags::{O_APPEND, O_CREAT, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY};
use protocols::unix::{Errno, mode};
use runtime::{println, unix};
use sha2::Digest;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let words: Vec<&str> = args.iter().skip(1).collect();
    let outcome = match words.as_slice() {
        ["sums", dir] => sums(dir),
        ["workload", dir] => workload(dir, 1),
        ["workload", dir, "small"] => workload(dir, 4),
        ["cuts", dir] => cuts(dir),
        ["readwin", dir, "on"] => readwin::readwin(dir, true),
        ["readwin", dir, "off"] => readwin::readwin(dir, false),
        ["rwchild", path] => readwin::rwchild(path),
        ["deadwin", path] => readwin::deadwin(path),
        ["lostopen", dir] => lostopen::lostopen(dir),
        ["procs"] => {
            println!("disktest: processes {}", runtime::sys::info(abi::InfoKey::ProcessCount));
            Ok(())
        }
        _ => Err(String::from(
            "usage: disktest sums DIR | workload DIR [small] | cuts DIR | readwin DIR on|off | deadwin PATH | lostopen DIR | procs",
        )),
    };
    match outcome {
        Ok(()) => {
            println!("disktest: done");
            0
        }
        Err(why) => {
            println!("disktest: FAIL {why}");
            1
        }
    }
}

type Outcome = Result<(), String>;

fn fail(what: &str, path: &str, e: Errno) -> String {
    format!("{what} {path}: {}", e.name())
}

/// The bytes of file number `seed`, `len` long: no two files alike.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn write_file(path: &str, flags: u64, data: &[u8]) -> Outcome {
    let fd = unix::open(path, flags, 0o644).map_err(|e| fail("open", path, e))?;
    let mut done = 0;
    // In pieces of 64 KiB, as a program copying a file would.
    while done < data.len() {
        let end = (done + 64 * 1024).min(data.len());
        match unix::write(fd, &data[done..end]) {
            Ok(0) => return Err(format!("write {path}: nothing written")),
            Ok(n) => done += n,
            Err(e) => return Err(fail("write", path, e)),
        }
    }
    unix::close(fd).map_err(|e| fail("close", path, e))
}

/// (size, SHA-256) of a file, read in 32 KiB pieces.
fn digest(path: &str) -> Result<(u64, String), String> {
    let fd = unix::open(path, O_RDONLY, 0).map_err(|e| fail("open", path, e))?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 32 * 1024];
    let mut size = 0u64;
    loop {
        match unix::read(fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                size += n as u64;
            }
            Err(e) => return Err(fail("read", path, e)),
        }
    }
    let _ = unix::close(fd);
    Ok((size, hex(&h.finalize())))
}

/// `file` and `dir` lines for everything under `root` (relative paths),
/// depth first, names in directory order.
fn sums(root: &str) -> Outcome {
    let mut stack = vec![String::new()];
    while let Some(rel) = stack.pop() {
        let path = if rel.is_empty() { String::from(root) } else { format!("{root}/{rel}") };
        let entries = unix::read_dir(&path).map_err(|e| fail("read_dir", &path, e))?;
        for e in entries.iter().filter(|e| e.name != "." && e.name != "..") {
            let child = if rel.is_empty() { e.name.clone() } else { format!("{rel}/{}", e.name) };
            let full = format!("{root}/{child}");
            if mode::is_dir(e.mode) {
                println!("disktest: dir {full}");
                stack.push(child);
            } else if mode::is_reg(e.mode) {
                let (size, sum) = digest(&full)?;
                println!("disktest: file {full} {size} {sum}");
            }
        }
    }
    Ok(())
}

fn workload(root: &str, divisor: usize) -> Outcome {
    let p = |rel: &str| format!("{root}/{rel}");
    let mkdir = |rel: &str| unix::mkdir(&p(rel), 0o755).map_err(|e| fail("mkdir", rel, e));
    let mut gone: Vec<&str> = Vec::new();
    mkdir("")?;
    // Create, write, append.
    write_file(&p("a"), O_CREAT | O_WRONLY | O_TRUNC, b"hello")?;
    write_file(&p("a"), O_WRONLY | O_APPEND, b", world\n")?;
    // Truncate down, then up (zeros past the old end).
    write_file(&p("t"), O_CREAT | O_WRONLY, &pattern(1, 10_000))?;
    let fd = unix::open(&p("t"), O_RDWR, 0).map_err(|e| fail("open", "t", e))?;
    unix::ftruncate(fd, 3_000).map_err(|e| fail("truncate", "t", e))?;
    unix::ftruncate(fd, 5_000).map_err(|e| fail("truncate", "t", e))?;
    let _ = unix::close(fd);
    // Renames: in place, to another directory, over a file.
    unix::rename(&p("a"), &p("b")).map_err(|e| fail("rename", "a", e))?;
    gone.push("a");
    mkdir("d1")?;
    unix::rename(&p("t"), &p("d1/t")).map_err(|e| fail("rename", "t", e))?;
    gone.push("t");
    write_file(&p("c"), O_CREAT | O_WRONLY, b"to be replaced")?;
    unix::rename(&p("b"), &p("c")).map_err(|e| fail("rename", "b", e))?;
    gone.push("b");
    // Unlink, rmdir.
    write_file(&p("u"), O_CREAT | O_WRONLY, &pattern(2, 4_000))?;
    unix::unlink(&p("u")).map_err(|e| fail("unlink", "u", e))?;
    gone.push("u");
    mkdir("r")?;
    unix::rmdir(&p("r")).map_err(|e| fail("rmdir", "r", e))?;
    gone.push("r");
    // Many small files in one directory.
    mkdir("small")?;
    for i in 0..200 / divisor {
        let len = (i * 37) % 700;
        write_file(&p(&format!("small/f{i:03}")), O_CREAT | O_WRONLY, &pattern(100 + i as u64, len))?;
    }
    for i in (0..200 / divisor).step_by(10) {
        let name = format!("small/f{i:03}");
        unix::unlink(&p(&name)).map_err(|e| fail("unlink", &name, e))?;
    }
    // One large file (single and double indirect blocks with 1 KiB ones).
    write_file(&p("large"), O_CREAT | O_WRONLY, &pattern(3, (2 << 20) / divisor))?;
    // A deep tree.
    let mut deep = String::from("deep");
    mkdir(&deep)?;
    for level in 0..24 / divisor {
        deep.push_str(&format!("/d{level}"));
        mkdir(&deep)?;
    }
    write_file(&p(&format!("{deep}/leaf")), O_CREAT | O_WRONLY, b"at the bottom\n")?;
    creat_rules(root)?;
    closes_ride(root)?;
    open_rules(root)?;
    // The large file to the disk (fsync reaches the device).
    let fd = unix::open(&p("large"), O_RDONLY, 0).map_err(|e| fail("open", "large", e))?;
    unix::fsync(fd).map_err(|e| fail("fsync", "large", e))?;
    let _ = unix::close(fd);
    sums(root)?;
    for name in gone {
        println!("disktest: gone {}", p(name));
    }
    Ok(())
}

/// A regular file's close rides on the process's next open (the runtime
/// defers it, docs/filesystem-history.md "R2 on disk: creat+close again") and
/// reaches the manager there, or before the process's next other call to
/// the monitor: the manager's count of open handles (`open_handles` in
/// `fs_stats`, itself a call to the monitor) shows each.
fn closes_ride(root: &str) -> Outcome {
    let p = |rel: &str| format!("{root}/{rel}");
    let handles = || open_handles(root);
    let creat = O_CREAT | O_WRONLY | O_TRUNC;
    let before = handles()?;
    let a = unix::open(&p("ride_a"), creat, 0o644).map_err(|e| fail("creat", "ride_a", e))?;
    unix::close(a).map_err(|e| fail("close", "ride_a", e))?;
    let b = unix::open(&p("ride_b"), creat, 0o644).map_err(|e| fail("creat", "ride_b", e))?;
    if b != a {
        return Err(format!("the open after a close got fd {b}, not the closed {a}"));
    }
    let open = handles()?;
    if open != before + 1 {
        return Err(format!(
            "after a close and an open the manager holds {open} handles, expected {}",
            before + 1
        ));
    }
    unix::close(b).map_err(|e| fail("close", "ride_b", e))?;
    let open = handles()?;
    if open != before {
        return Err(format!("after the last close the manager holds {open} handles, expected {before}"));
    }
    for name in ["ride_a", "ride_b"] {
        unix::unlink(&p(name)).map_err(|e| fail("unlink", name, e))?;
    }
    Ok(())
}

/// The handles the manager of `root`'s volume holds open (`open_handles`
/// in `fs_stats`, itself a call to the monitor, so a close sent before it
/// has reached the manager).
fn open_handles(root: &str) -> Result<u64, String> {
    let text = unix::fs_stats().map_err(|e| fail("fs_stats", root, e))?;
    text.lines()
        .filter_map(|l| {
            let (point, rest) = l.split_once(':')?;
            Some((point, rest.strip_prefix("open_handles=")?))
        })
        .filter(|(point, _)| *point == "/" || root == *point || root.starts_with(&format!("{point}/")))
        .max_by_key(|(point, _)| point.len())
        .and_then(|(_, n)| n.parse().ok())
        .ok_or_else(|| format!("no open_handles line for {root} in {text:?}"))
}

/// `open` of `path` with `flags` answers `want` (`Ok`: opened, and the
/// first bytes read are `content` when given), twice: the first time with
/// the monitor's lookup cache emptied (`forget`), so that the open goes
/// to the disk's manager before any check (`Monitor::open_then_check`),
/// the second with the name's lookup cached, the usual way.
fn open_answers(path: &str, flags: u64, want: Result<&[u8], Errno>, forget: &dyn Fn()) -> Outcome {
    for pass in ["uncached", "cached"] {
        if pass == "uncached" {
            forget();
        }
        let got = unix::open(path, flags, 0);
        match (got, want) {
            (Ok(fd), Ok(content)) => {
                let mut buf = [0u8; 64];
                let n = if content.is_empty() { 0 } else { unix::read(fd, &mut buf).unwrap_or(0) };
                let _ = unix::close(fd);
                if buf[..n] != *content {
                    return Err(format!("open {path} ({pass}): read {:?}, expected {content:?}", &buf[..n]));
                }
            }
            (Err(e), Err(w)) if e == w => {}
            (Err(e), _) => return Err(format!("open {path} ({pass}): {}, expected {want:?}", e.name())),
            (Ok(fd), Err(w)) => {
                let _ = unix::close(fd);
                return Err(format!("open {path} ({pass}): opened, expected {}", w.name()));
            }
        }
    }
    Ok(())
}

/// `open` of an existing name without `O_CREAT` or `O_TRUNC`, not in the
/// monitor's lookup cache, is made at the disk's manager first and its
/// permissions checked after, on the attributes the open answers: one
/// walk of the path in `ext2fs` where a lookup and then the open made two
/// (docs/filesystem-history.md, "R2 on disk: creat+close, the manager's work").
/// Every answer is the one the lookup-first order gives, uncached and
/// cached: as root a file opens and reads, a missing name is `ENOENT`, a
/// file as a directory `ENOTDIR`, a directory for writing `EISDIR`, `..`
/// across the mount point and the mount point itself resolve; as another
/// user a file without read or write permission is `EACCES`, a name under
/// a directory without search permission `EACCES` (whether it exists or
/// not), a directory for writing `EACCES` (before `EISDIR`). A refused
/// open leaves no handle open at the manager.
fn open_rules(root: &str) -> Outcome {
    use protocols::unix::errno::{EACCES, EISDIR, ENOENT, ENOTDIR};
    let p = |rel: &str| format!("{root}/{rel}");
    // Every change to names or modes empties the monitor's lookup cache,
    // even one refused: an unlink of a name that is not there.
    let forget = || {
        let _ = unix::unlink(&p("o/none"));
    };
    unix::mkdir(&p("o"), 0o755).map_err(|e| fail("mkdir", "o", e))?;
    write_file(&p("o/pub"), O_CREAT | O_WRONLY, b"public")?;
    write_file(&p("o/secret"), O_CREAT | O_WRONLY, b"secret")?;
    unix::chmod(&p("o/secret"), 0o600).map_err(|e| fail("chmod", "o/secret", e))?;
    unix::mkdir(&p("o/closed"), 0o755).map_err(|e| fail("mkdir", "o/closed", e))?;
    write_file(&p("o/closed/inner"), O_CREAT | O_WRONLY, b"inner")?;
    unix::chmod(&p("o/closed"), 0o700).map_err(|e| fail("chmod", "o/closed", e))?;
    let before = open_handles(root)?;
    open_answers(&p("o/pub"), O_RDONLY, Ok(b"public"), &forget)?;
    open_answers(&p("o/secret"), O_RDONLY, Ok(b"secret"), &forget)?;
    open_answers(&p("o/pub"), O_WRONLY, Ok(b""), &forget)?;
    open_answers(&p("o/missing"), O_RDONLY, Err(ENOENT), &forget)?;
    open_answers(&p("o/pub/x"), O_RDONLY, Err(ENOTDIR), &forget)?;
    open_answers(&p("o"), O_WRONLY, Err(EISDIR), &forget)?;
    open_answers(&p("o"), O_RDONLY, Ok(b""), &forget)?;
    // `..` up across the volume's mount point and down again, and the
    // mount point itself (the volume's root directory).
    let mount_point = if root == "/disk" || root.starts_with("/disk/") { "/disk" } else { "/" };
    let up = root.matches('/').count();
    let across = format!("{root}{}{root}/o/pub", "/..".repeat(up));
    open_answers(&across, O_RDONLY, Ok(b"public"), &forget)?;
    open_answers(mount_point, O_RDONLY, Ok(b""), &forget)?;
    let child = unix::fork().map_err(|e| fail("fork", root, e))?;
    if child == 0 {
        let checked =
            unix::setuid_gid(Some(1000), Some(1000)).map_err(|e| fail("setuid", "1000", e)).and_then(|()| {
                open_answers(&p("o/pub"), O_RDONLY, Ok(b"public"), &forget)?;
                open_answers(&p("o/pub"), O_WRONLY, Err(EACCES), &forget)?;
                open_answers(&p("o/pub"), O_RDWR, Err(EACCES), &forget)?;
                open_answers(&p("o/secret"), O_RDONLY, Err(EACCES), &forget)?;
                open_answers(&p("o/closed/inner"), O_RDONLY, Err(EACCES), &forget)?;
                open_answers(&p("o/closed/missing"), O_RDONLY, Err(EACCES), &forget)?;
                open_answers(&p("o/missing"), O_RDONLY, Err(ENOENT), &forget)?;
                open_answers(&p("o/pub/x"), O_RDONLY, Err(ENOTDIR), &forget)?;
                open_answers(&p("o"), O_WRONLY, Err(EACCES), &forget)?;
                open_answers(&p("o"), O_RDONLY, Ok(b""), &forget)
            });
        if let Err(why) = checked {
            println!("disktest: FAIL as uid 1000: {why}");
            unix::exit(1);
        }
        unix::exit(0);
    }
    match unix::waitpid(child as i64, false) {
        Ok(Some((_, status))) if status.exit_code() == Some(0) => {}
        other => return Err(format!("the uid 1000 checks ended {other:?}")),
    }
    let after = open_handles(root)?;
    if after != before {
        return Err(format!("the manager holds {after} handles after the opens, {before} before"));
    }
    Ok(())
}

/// `open(O_CREAT)` of a name the monitor has not looked up goes to the
/// disk's manager in one round trip (`fs::OP_OPEN_FORWARDED`, made with
/// `O_EXCL`); whatever fails there comes back to the monitor and is opened
/// the usual way, so every answer is the usual one: a new file; `creat`
/// of an existing file truncates it; `O_EXCL` of one is `EEXIST`; a name
/// of 256 bytes `ENAMETOOLONG`; a missing directory `ENOENT`; a file as
/// the directory `ENOTDIR`; a directory `EISDIR`. The descriptors work
/// and close, and none is left behind by the refused ones (the next open
/// gets the same lowest fd).
fn creat_rules(root: &str) -> Outcome {
    let p = |rel: &str| format!("{root}/{rel}");
    let expect = |path: &str, flags: u64, want: Errno| -> Outcome {
        match unix::open(path, flags, 0o644) {
            Err(e) if e == want => Ok(()),
            Err(e) => Err(format!("open {path}: {}, expected {}", e.name(), want.name())),
            Ok(fd) => {
                let _ = unix::close(fd);
                Err(format!("open {path}: opened, expected {}", want.name()))
            }
        }
    };
    let creat = O_CREAT | O_WRONLY | O_TRUNC;
    let probe = unix::open(&p("c1"), creat, 0o644).map_err(|e| fail("creat", "c1", e))?;
    unix::write(probe, b"first").map_err(|e| fail("write", "c1", e))?;
    unix::close(probe).map_err(|e| fail("close", "c1", e))?;
    // Made again: truncated, and written anew through the new descriptor.
    write_file(&p("c1"), creat, b"second")?;
    let (size, _) = digest(&p("c1"))?;
    if size != 6 {
        return Err(format!("creat of an existing file left {size} bytes, expected 6"));
    }
    expect(&p("c1"), creat | protocols::unix::open_flags::O_EXCL, protocols::unix::errno::EEXIST)?;
    let long = "n".repeat(256);
    expect(&p(&long), creat, protocols::unix::errno::ENAMETOOLONG)?;
    expect(&p("nowhere/c2"), creat, protocols::unix::errno::ENOENT)?;
    expect(&p("c1/c2"), creat, protocols::unix::errno::ENOTDIR)?;
    expect(&p("d1"), creat, protocols::unix::errno::EISDIR)?;
    // The volume's mount point exists (`mkdir -p /disk/...` walks it):
    // EEXIST, as for any directory, not the manager's EBUSY for its root.
    let mount_point = if root == "/disk" || root.starts_with("/disk/") { "/disk" } else { "/" };
    match unix::mkdir(mount_point, 0o755) {
        Err(e) if e == protocols::unix::errno::EEXIST => {}
        Err(e) => return Err(format!("mkdir {mount_point}: {}, expected EEXIST", e.name())),
        Ok(_) => return Err(format!("mkdir {mount_point}: made, expected EEXIST")),
    }
    // No descriptor was left behind by the refusals.
    let again = unix::open(&p("c3"), creat, 0o644).map_err(|e| fail("creat", "c3", e))?;
    let _ = unix::close(again);
    if again != probe {
        return Err(format!("fd {again} after the refused opens, expected {probe} again"));
    }
    Ok(())
}

/// Files written and fsync'd one after another, names churned between.
fn cuts(root: &str) -> Outcome {
    let p = |rel: &str| format!("{root}/{rel}");
    unix::mkdir(root, 0o755).map_err(|e| fail("mkdir", root, e))?;
    for i in 0..60u64 {
        let name = format!("f{i:02}");
        let data = pattern(1000 + i, 1_000 + (i as usize * 7919) % 40_000);
        let fd =
            unix::open(&p(&name), O_CREAT | O_WRONLY | O_TRUNC, 0o644).map_err(|e| fail("open", &name, e))?;
        let mut done = 0;
        while done < data.len() {
            done += unix::write(fd, &data[done..]).map_err(|e| fail("write", &name, e))?;
        }
        unix::fsync(fd).map_err(|e| fail("fsync", &name, e))?;
        let _ = unix::close(fd);
        println!("disktest: fsynced {} {} {}", p(&name), data.len(), hex(&sha2::Sha256::digest(&data)));
        // Metadata without any sync: a new file, a rename, a removal, a
        // directory made and one removed.
        let scratch = format!("s{i:02}");
        write_file(&p(&scratch), O_CREAT | O_WRONLY, &pattern(5000 + i, 3_000))?;
        if i >= 1 {
            let previous = format!("s{:02}", i - 1);
            unix::rename(&p(&previous), &p(&format!("old{i:02}")))
                .map_err(|e| fail("rename", &previous, e))?;
        }
        if i >= 2 {
            let old = format!("old{:02}", i - 1);
            unix::unlink(&p(&old)).map_err(|e| fail("unlink", &old, e))?;
        }
        unix::mkdir(&p(&format!("dir{i:02}")), 0o755).map_err(|e| fail("mkdir", "dir", e))?;
        if i >= 1 {
            let previous = format!("dir{:02}", i - 1);
            unix::rmdir(&p(&previous)).map_err(|e| fail("rmdir", &previous, e))?;
        }
    }
    Ok(())
}
