//! The journal replay at mount against e2fsprogs' (issue 12, branch
//! `jbd`): `debugfs -w` writes transactions into an ext3 image's journal
//! (`jo`/`jw`/`jc`, e2fsprogs ≥ 1.43), `e2fsck -fy` on one copy replays
//! them (the kernel's `recovery.c`, built into e2fsck), `Fs::mount` on
//! another; both must give the same bytes in every block but the two
//! superblocks (the file system's and the journal's, whose fields are
//! compared one by one). Journals this crate cannot read are refused at
//! mount with nothing written.
//!
//! Each test skips, saying so, when e2fsprogs is not installed.

mod common;

use fs_ext2::device::MemDisk;
use fs_ext2::journal::{self, jsb};
use fs_ext2::{Fs, MountOptions};
use protocols::unix::errno::{EINVAL, EROFS};
use std::path::{Path, PathBuf};
use std::process::Command;

const BS: usize = 1024;

struct Tools {
    mke2fs: PathBuf,
    e2fsck: PathBuf,
    debugfs: PathBuf,
}

fn tools() -> Option<Tools> {
    match (common::tool("mke2fs"), common::tool("e2fsck"), common::tool("debugfs")) {
        (Some(mke2fs), Some(e2fsck), Some(debugfs)) => Some(Tools { mke2fs, e2fsck, debugfs }),
        _ => {
            eprintln!("SKIPPED: e2fsprogs is not installed; `cargo xtask test` installs it");
            None
        }
    }
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fs-ext2-journal-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn debugfs(t: &Tools, img: &Path, request: &str) -> String {
    run(Command::new(&t.debugfs).arg("-R").arg(request).arg(img))
}

/// An 8 MiB ext3 image of 1 KiB blocks holding `/f` (3 KiB of a
/// pattern), and the blocks of `/f`.
fn ext3_image(t: &Tools, dir: &Path) -> (PathBuf, Vec<u64>) {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let pattern: Vec<u8> = (0..3 * BS).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(src.join("f"), &pattern).unwrap();
    let img = dir.join("a.img");
    let out = Command::new(&t.mke2fs)
        .args(["-q", "-F", "-t", "ext3", "-b", "1024", "-d"])
        .arg(&src)
        .arg(&img)
        .arg("8M")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let blocks: Vec<u64> =
        debugfs(t, &img, "blocks /f").split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert_eq!(blocks.len(), 3, "blocks of /f");
    (img, blocks)
}

/// Runs `debugfs -w` with `requests`, one per line.
fn debugfs_w(t: &Tools, img: &Path, dir: &Path, requests: &[String]) {
    let cmds = dir.join("cmds");
    std::fs::write(&cmds, requests.join("\n") + "\n").unwrap();
    let out = run(Command::new(&t.debugfs).arg("-w").arg("-f").arg(&cmds).arg(img));
    assert!(!out.to_lowercase().contains("error"), "debugfs: {out}");
}

/// Block contents for a transaction: `n` blocks, each starting with
/// `first_word` (big-endian) then a pattern of `seed`.
fn blocks_file(dir: &Path, name: &str, n: usize, first_word: Option<u32>, seed: u8) -> PathBuf {
    let mut bytes = Vec::new();
    for k in 0..n {
        let mut b: Vec<u8> = (0..BS).map(|i| (i as u8).wrapping_mul(seed).wrapping_add(k as u8)).collect();
        if let Some(w) = first_word {
            b[..4].copy_from_slice(&w.to_be_bytes());
        }
        bytes.extend(b);
    }
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Writes three transactions into the journal of `img`: the first
/// rewrites `/f`'s first block, and blocks 3000 and 3001 (3001's first
/// word the journal's magic number: escaped in the log), the second
/// revokes 3000, the third writes 3002. With `checksum`, the journal has
/// the v1 transaction checksum (`jo -c`) and there is no revoke: debugfs
/// 1.47's revoke-only transaction carries a checksum that its own e2fsck
/// calls corrupt ("Journal transaction 2 was corrupt, replay was
/// aborted"; this crate's replay stops there too).
fn write_transactions(t: &Tools, img: &Path, dir: &Path, f_block: u64, checksum: bool) {
    let a = blocks_file(dir, "a", 2, None, 3);
    let esc = blocks_file(dir, "esc", 1, Some(journal::MAGIC), 5);
    let c = blocks_file(dir, "c", 1, None, 11);
    // A file of three blocks for one `jw`: a, a, esc.
    let mut t1 = std::fs::read(&a).unwrap();
    t1.extend(std::fs::read(&esc).unwrap());
    let t1p = dir.join("t1");
    std::fs::write(&t1p, t1).unwrap();
    debugfs_w(
        t,
        img,
        dir,
        &[
            String::from(if checksum { "jo -c" } else { "jo" }),
            format!("jw -b {f_block},3000,3001 {}", t1p.display()),
            String::from(if checksum { "" } else { "jw -r 3000" }),
            format!("jw -b 3002 {}", c.display()),
            String::from("jc"),
        ],
    );
    let dump = debugfs(t, img, "logdump");
    assert_eq!(dump.contains("revoke table"), !checksum, "{dump}");
}

fn superblock_features(img: &[u8]) -> (u32, u32) {
    let le = |at: usize| u32::from_le_bytes(img[1024 + at..1024 + at + 4].try_into().unwrap());
    (le(92), le(96))
}

const INCOMPAT_RECOVER: u32 = 4;

/// The journal's superblock block on the image (`bmap <8> 0`).
fn journal_sb_block(t: &Tools, img: &Path) -> usize {
    debugfs(t, img, "bmap <8> 0").split_whitespace().filter_map(|w| w.parse().ok()).next_back().unwrap()
}

fn be32_at(img: &[u8], block: usize, at: usize) -> u32 {
    journal::be32(&img[block * BS..(block + 1) * BS], at)
}

fn replay_both_ways(checksum: bool) {
    let Some(t) = tools() else { return };
    let dir = scratch(if checksum { "csum" } else { "plain" });
    let (img, f_blocks) = ext3_image(&t, &dir);
    write_transactions(&t, &img, &dir, f_blocks[0], checksum);
    let before = std::fs::read(&img).unwrap();
    assert_ne!(superblock_features(&before).1 & INCOMPAT_RECOVER, 0, "debugfs left needs_recovery set");
    let jsb_block = journal_sb_block(&t, &img);

    // e2fsck's replay.
    let theirs_path = dir.join("theirs.img");
    std::fs::copy(&img, &theirs_path).unwrap();
    let out = run(Command::new(&t.e2fsck).arg("-fy").arg(&theirs_path));
    assert!(out.contains("recovering journal"), "{out}");
    let theirs = std::fs::read(&theirs_path).unwrap();

    // Ours.
    let fs = match Fs::mount(MemDisk::new(before.clone()), MountOptions::default()) {
        Ok(fs) => fs,
        Err((e, _)) => panic!("mount refused: {e}"),
    };
    let report = fs.journal_replayed().cloned().expect("a replay");
    let want = if checksum { (2, 4, 0) } else { (3, 3, 1) };
    assert_eq!((report.transactions, report.blocks, report.revoked), want, "{report:?}");
    let ours = fs.unmount().unwrap().into_bytes();

    // Every block but the two superblocks: the same bytes.
    let differ: Vec<usize> = (0..ours.len() / BS)
        .filter(|&b| b != 1 && b != jsb_block)
        .filter(|&b| ours[b * BS..(b + 1) * BS] != theirs[b * BS..(b + 1) * BS])
        .collect();
    assert!(differ.is_empty(), "blocks that differ from e2fsck's replay: {differ:?}");
    // The replay wrote what the transactions held: /f's first block is
    // new, 3000 kept its zeros (revoked), 3001 has its magic back.
    assert_ne!(ours[f_blocks[0] as usize * BS..][..BS], before[f_blocks[0] as usize * BS..][..BS]);
    assert_eq!(
        ours[3000 * BS..3001 * BS].iter().all(|&b| b == 0),
        !checksum,
        "block 3000: revoked unless checksummed"
    );
    assert_eq!(be32_at(&ours, 3001, 0), journal::MAGIC, "the escaped block lost its magic");
    assert_ne!(ours[3002 * BS..3003 * BS], before[3002 * BS..3003 * BS]);
    // The journal's superblock: emptied, at the same next sequence.
    for (what, at) in [("s_start", jsb::START), ("s_sequence", jsb::SEQUENCE)] {
        assert_eq!(be32_at(&ours, jsb_block, at), be32_at(&theirs, jsb_block, at), "{what}");
    }
    assert_eq!(be32_at(&ours, jsb_block, jsb::START), 0);
    assert_eq!(superblock_features(&ours).1 & INCOMPAT_RECOVER, 0, "needs_recovery still set");
    assert_eq!(superblock_features(&ours), superblock_features(&theirs));

    // e2fsck finds nothing on ours, and the file reads back as replayed.
    let ours_path = dir.join("ours.img");
    std::fs::write(&ours_path, &ours).unwrap();
    let out = Command::new(&t.e2fsck).arg("-fn").arg(&ours_path).output().unwrap();
    assert!(out.status.success(), "e2fsck -fn: {}", String::from_utf8_lossy(&out.stdout));
    let mut fs = match Fs::mount(MemDisk::new(ours.clone()), MountOptions::default()) {
        Ok(fs) => fs,
        Err((e, _)) => panic!("second mount refused: {e}"),
    };
    assert!(fs.journal_replayed().is_none(), "replayed twice");
    let ino = fs.lookup(fs_ext2::ROOT_INO, b"f").unwrap();
    let mut buf = vec![0u8; BS];
    let n = fs.read(ino, 0, &mut buf).unwrap();
    assert_eq!(&buf[..n], &ours[f_blocks[0] as usize * BS..][..BS]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn replay_matches_e2fsck_byte_for_byte() {
    replay_both_ways(false);
}

#[test]
fn replay_with_transaction_checksums_matches_e2fsck() {
    replay_both_ways(true);
}

/// A journal needing recovery, its image and the journal superblock's
/// block, for the refusal tests.
fn dirty_journal(t: &Tools, tag: &str) -> (PathBuf, Vec<u8>, usize) {
    let dir = scratch(tag);
    let (img, f_blocks) = ext3_image(t, &dir);
    write_transactions(t, &img, &dir, f_blocks[0], false);
    let bytes = std::fs::read(&img).unwrap();
    let jsb_block = journal_sb_block(t, &img);
    (dir, bytes, jsb_block)
}

fn refused(image: Vec<u8>, opts: MountOptions) -> (protocols::unix::Errno, String) {
    match Fs::mount(MemDisk::new(image.clone()), opts) {
        Ok(_) => panic!("mounted a volume it should refuse"),
        Err((e, dev)) => {
            assert!(dev.bytes() == image.as_slice(), "a refused mount wrote to the image ({})", e.reason);
            (e.errno, e.reason)
        }
    }
}

#[test]
fn journals_it_cannot_read_are_refused_and_nothing_is_written() {
    let Some(t) = tools() else { return };
    let (dir, image, jsb_block) = dirty_journal(&t, "bad");
    let put = |img: &mut Vec<u8>, block: usize, at: usize, v: u32| {
        img[block * BS + at..block * BS + at + 4].copy_from_slice(&v.to_be_bytes())
    };
    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
    let mut img = image.clone();
    put(&mut img, jsb_block, 0, 0x1234_5678);
    cases.push(("bad magic", img, "magic"));
    let mut img = image.clone();
    put(&mut img, jsb_block, jsb::FEATURE_INCOMPAT, journal::feature::INCOMPAT_CSUM_V3);
    cases.push(("unknown incompat feature", img, "incompatible features"));
    let mut img = image.clone();
    put(&mut img, jsb_block, jsb::MAXLEN, 1 << 20);
    cases.push(("log longer than inode 8", img, "journal of"));
    let mut img = image.clone();
    put(&mut img, jsb_block, jsb::BLOCKSIZE, 4096);
    cases.push(("another block size", img, "block size"));
    // The first transaction's descriptor is the log's first block (right
    // after the superblock): its first tag names a block past the volume.
    let mut img = image.clone();
    put(&mut img, jsb_block + 1, 12, 9_000_000);
    cases.push(("tag outside the volume", img, "outside"));
    // Inode 8's first block pointer (inode 8 is the 8th of group 0's
    // table, 256-byte inodes) past the volume.
    let table = {
        let gd = &image[2 * BS..];
        u32::from_le_bytes(gd[8..12].try_into().unwrap()) as usize
    };
    let isize = u16::from_le_bytes(image[1024 + 88..1024 + 90].try_into().unwrap()) as usize;
    let mut img = image.clone();
    let at = table * BS + 7 * isize + 40;
    img[at..at + 4].copy_from_slice(&9_000_000u32.to_le_bytes());
    cases.push(("journal inode pointer outside the volume", img, "journal inode"));
    for (what, img, want) in cases {
        let (errno, reason) = refused(img, MountOptions::default());
        assert_eq!(errno, EINVAL, "{what}: {reason}");
        assert!(reason.contains(want), "{what}: {reason}");
    }
    // A read-only mount does not replay (it would have to write).
    let (errno, reason) = refused(image.clone(), MountOptions { read_only: true, ..MountOptions::default() });
    assert_eq!(errno, EROFS, "{reason}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ext2_has_no_journal_and_ext3_has_one() {
    let Some(t) = tools() else { return };
    let Some(ext2) = common::fresh_image("nojournal", 2048) else { return };
    let fs = Fs::mount(MemDisk::new(ext2), MountOptions::default()).map_err(|(e, _)| e).unwrap();
    assert!(!fs.has_journal());
    let dir = scratch("clean");
    let (img, _) = ext3_image(&t, &dir);
    let fs = Fs::mount(MemDisk::new(std::fs::read(&img).unwrap()), MountOptions::default())
        .map_err(|(e, _)| e)
        .unwrap();
    assert!(fs.has_journal());
    assert!(fs.journal_replayed().is_none(), "a clean ext3 volume needs no replay");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An ext3 image with the journal's log empty, on a recording volatile
/// disk, mounted with the journal on (`on`) or off.
fn mount_ext3(t: &Tools, tag: &str, on: bool) -> (PathBuf, Vec<u8>, Fs<MemDisk>) {
    let dir = scratch(tag);
    let (img, _) = ext3_image(t, &dir);
    let original = std::fs::read(&img).unwrap();
    let disk = MemDisk::new(original.clone()).with_volatile_cache().recording();
    let fs =
        Fs::mount(disk, MountOptions { journal: on, ..MountOptions::default() }).map_err(|(e, _)| e).unwrap();
    (dir, original, fs)
}

/// The cut image after write `cut` of the log, keeping only flushed
/// writes (the strictest cut on a volatile cache).
fn cut_flushed(original: &[u8], disk: &MemDisk, cut: usize) -> Vec<u8> {
    fs_ext2::device::power_cut_image(original, disk.log.as_ref().unwrap(), &disk.flush_marks, cut, |_| false)
}

#[test]
fn creat_and_fsync_is_one_log_write_and_one_flush() {
    let Some(t) = tools() else { return };
    let (dir, original, mut fs) = mount_ext3(&t, "creat", true);
    assert!(fs.journal_state().starts_with("on"), "{}", fs.journal_state());
    fs.set_time(1_700_000_000);
    let mut per_fsync = Vec::new();
    for k in 0..20 {
        let name = format!("file-{k}");
        let ino = fs.create(fs_ext2::ROOT_INO, name.as_bytes(), 0o644, 0, 0).unwrap();
        let (w, f) = (fs.device().writes, fs.device().flushes);
        fs.fsync(ino).unwrap();
        per_fsync.push((fs.device().writes - w, fs.device().flushes - f));
    }
    // The first commit also writes the journal superblock (s_start) and
    // the superblock (needs_recovery): three transfers, one flush.
    assert_eq!(per_fsync[0], (3, 1), "{per_fsync:?}");
    for &(w, f) in &per_fsync[1..] {
        assert_eq!((w, f), (1, 1), "{per_fsync:?}");
    }
    // A power cut right after the last fsync: only what was flushed.
    let n = fs.device().log.as_ref().unwrap().len();
    let cut = cut_flushed(&original, fs.device(), n);
    let ours = match Fs::mount(MemDisk::new(cut.clone()), MountOptions::default()) {
        Ok(fs) => fs,
        Err((e, _)) => panic!("mount of the cut image refused: {e}"),
    };
    let report = ours.journal_replayed().cloned().expect("a replay");
    assert_eq!(report.transactions, 20, "{report:?}");
    let mut ours = ours;
    for k in 0..20 {
        ours.lookup(fs_ext2::ROOT_INO, format!("file-{k}").as_bytes()).unwrap();
    }
    let replayed = ours.unmount().unwrap().into_bytes();
    let p = dir.join("replayed.img");
    std::fs::write(&p, &replayed).unwrap();
    let out = Command::new(&t.e2fsck).arg("-fn").arg(&p).output().unwrap();
    assert!(out.status.success(), "e2fsck -fn after our replay:\n{}", String::from_utf8_lossy(&out.stdout));
    // e2fsck's replay of the same cut finds every name too.
    let p = dir.join("theirs.img");
    std::fs::write(&p, &cut).unwrap();
    let out = run(Command::new(&t.e2fsck).arg("-fy").arg(&p));
    assert!(out.contains("recovering journal"), "{out}");
    let ls = debugfs(&t, &p, "ls -l /");
    for k in 0..20 {
        assert!(ls.contains(&format!("file-{k}")), "e2fsck's replay lost file-{k}:\n{ls}");
    }
    // A clean unmount leaves nothing to replay.
    let clean = fs.unmount().unwrap().into_bytes();
    assert_eq!(superblock_features(&clean).1 & INCOMPAT_RECOVER, 0);
    let p = dir.join("clean.img");
    std::fs::write(&p, &clean).unwrap();
    let out = Command::new(&t.e2fsck).arg("-fn").arg(&p).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ordered mode: a file's new data are durable before the commit that
/// makes them reachable. A file of 200 KiB (new data, an indirect block)
/// and then a small one are written and `fsync`'d on the volatile
/// model; at every write of the run, 32 seeds each, the cut image is
/// replayed and each file that has its name and size has its data, never
/// the zeros its blocks held before. (With the flush before the log write
/// left out, the log can survive a cut that loses the data: this fails.)
#[test]
fn a_file_named_after_a_cut_has_its_data() {
    let Some(t) = tools() else { return };
    let (dir, original, mut fs) = mount_ext3(&t, "ordered", true);
    fs.set_time(1_700_000_000);
    let big: Vec<u8> = (0..200 << 10).map(|i: usize| (i % 253) as u8 | 1).collect();
    let small = b"small and fsync'd".to_vec();
    let start = fs.device().log.as_ref().unwrap().len();
    for (name, data) in [("big", &big), ("small", &small)] {
        let ino = fs.create(fs_ext2::ROOT_INO, name.as_bytes(), 0o644, 0, 0).unwrap();
        fs.open_inode(ino).unwrap();
        for (k, chunk) in data.chunks(8192).enumerate() {
            assert_eq!(fs.write(ino, (k * 8192) as u64, chunk).unwrap(), chunk.len());
        }
        fs.fsync(ino).unwrap();
        fs.close_inode(ino).unwrap();
    }
    let end = fs.device().log.as_ref().unwrap().len();
    let disk = fs.unmount().unwrap();
    let log = disk.log.clone().unwrap();
    let mut named = 0;
    for cut in start..=end {
        for seed in 0..32u64 {
            let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ cut as u64 | 1;
            // The cut falls before a flush issued right after write
            // `cut` (the model would count that flush in otherwise).
            let marks: Vec<usize> = disk.flush_marks.iter().copied().filter(|&m| m != cut).collect();
            let image = fs_ext2::device::power_cut_image(&original, &log, &marks, cut, |_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x & 1 == 1
            });
            let mut fs = Fs::mount(MemDisk::new(image), MountOptions::default()).map_err(|(e, _)| e).unwrap();
            for (name, data) in [("big", &big), ("small", &small)] {
                let Ok(ino) = fs.lookup(fs_ext2::ROOT_INO, name.as_bytes()) else { continue };
                let size = fs.stat(ino).unwrap().size_bytes as usize;
                let mut buf = vec![0u8; size];
                let n = fs.read(ino, 0, &mut buf).unwrap();
                assert_eq!(n, size);
                assert!(
                    buf == data[..size],
                    "cut after write {cut} (seed {seed}): /{name} of {size} bytes lost data"
                );
                named += (size > 0) as usize;
            }
        }
    }
    assert!(named > 0, "no cut kept a file with data");
    let _ = std::fs::remove_dir_all(&dir);
}
