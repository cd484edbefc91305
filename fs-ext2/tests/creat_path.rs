//! The R2 `creat` row's path through the disk file system's requests
//! (`bench/src/r2.rs`, `creat_figure`): `creat` of a name never used
//! before (`fs::OP_OPEN` with `O_WRONLY|O_CREAT|O_TRUNC|O_EXCL`, as the
//! monitor sends it) and `close` (`io::OP_CLOSE`), the names removed in
//! batches of 256 between, over a `mke2fs` image like the benchmark's
//! (1 KiB blocks). What one creat+close asks of the cache and the device
//! is counted, so that a change on the path shows in numbers that do not
//! depend on the host's speed. Skips, saying so, without e2fsprogs.

mod common;

use fs_ext2::device::MemDisk;
use fs_ext2::service::{MESSAGE_DATA_BYTES, Service, VecLent};
use fs_ext2::{CacheStats, Fs, MountOptions};

use protocols::unix::open_flags::{O_CREAT, O_EXCL, O_TRUNC, O_WRONLY};
use protocols::unix::{fs, io, result};

const MONITOR: u64 = 0x1_0000_0005;
/// The `creat` row's batch (`bench::r2::CREAT_BATCH`).
const BATCH: u64 = 256;

/// A fresh ext2 image of `kib` KiB with 1 KiB blocks, as `xtask` makes
/// the benchmark's disk, or `None` (test skipped) without mke2fs.
fn image(tag: &str, kib: u64) -> Option<Vec<u8>> {
    common::fresh_image(&format!("creat-{tag}"), kib)
}

struct Bench {
    s: Service<MemDisk>,
    tx: Box<[u8; MESSAGE_DATA_BYTES]>,
    next: u64,
}

impl Bench {
    fn new(bytes: Vec<u8>, nbuf: usize) -> Bench {
        let fs = match Fs::mount(MemDisk::new(bytes), MountOptions { nbuf, ..MountOptions::default() }) {
            Ok(fs) => fs,
            Err((e, _)) => panic!("mount refused: {e}"),
        };
        let mut b = Bench { s: Service::new(fs, MONITOR, 7), tx: Box::new([0; MESSAGE_DATA_BYTES]), next: 0 };
        let (w, _) = b.ask([fs::OP_MKDIR, 0o755, 0, 0], b"/r2");
        assert_eq!(result(w[0]), Ok(0));
        b
    }

    fn ask(&mut self, m: [u64; 4], data: &[u8]) -> ([u64; 4], usize) {
        let mut lent = VecLent::new(Vec::new(), 0);
        self.s.request(MONITOR, m, data, 5_000_000_000, &mut self.tx, &mut lent)
    }

    /// One creat+close of the next name; every [`BATCH`] names, the
    /// batch is unlinked (untimed in the benchmark; not counted here).
    fn creat_close(&mut self) {
        let path = format!("/r2/r2c{}", self.next);
        self.next += 1;
        let flags = O_WRONLY | O_CREAT | O_TRUNC | O_EXCL;
        let (w, _) = self.ask([fs::OP_OPEN, flags, 0o644, 0], path.as_bytes());
        let handle = result(w[0]).unwrap_or_else(|e| panic!("creat {path}: {e}"));
        let (w, _) = self.ask([io::OP_CLOSE, handle, 0, 0], &[]);
        assert_eq!(result(w[0]), Ok(0), "close {path}");
    }

    fn unlink_batch(&mut self) {
        for n in self.next - BATCH..self.next {
            let (w, _) = self.ask([fs::OP_UNLINK, 0, 0, 0], format!("/r2/r2c{n}").as_bytes());
            assert_eq!(result(w[0]), Ok(0), "unlink r2c{n}");
        }
    }

    fn stats(&self) -> (CacheStats, u64, u64) {
        let d = self.s.fs.device();
        (self.s.fs.cache_stats(), d.writes, d.round_trips)
    }
}

/// What the creat+closes of [`measure`] asked of the cache and the
/// device, per creat+close.
#[derive(Debug)]
struct PerOp {
    lookups: f64,
    waits: f64,
    writes: f64,
}

/// Runs `batches` batches of [`BATCH`] creat+closes, each batch unlinked
/// after it (the unlinks not counted), after one batch to warm up.
fn measure(bench: &mut Bench, batches: u64) -> PerOp {
    for _ in 0..BATCH {
        bench.creat_close();
    }
    bench.unlink_batch();
    let (mut lookups, mut waits, mut writes) = (0, 0, 0);
    for _ in 0..batches {
        let (c0, w0, _) = bench.stats();
        for _ in 0..BATCH {
            bench.creat_close();
        }
        let (c1, w1, _) = bench.stats();
        lookups += c1.hits + c1.misses - c0.hits - c0.misses;
        waits += c1.waits - c0.waits;
        writes += w1 - w0;
        bench.unlink_batch();
    }
    let ops = (batches * BATCH) as f64;
    PerOp { lookups: lookups as f64 / ops, waits: waits as f64 / ops, writes: writes as f64 / ops }
}

/// A creat+close of a new name costs a few cache lookups whatever the
/// size of its directory: the directory's names are known once it has
/// been scanned (`DirNames`), and the search for room starts where the
/// last one found it. Before, each creat scanned the directory three
/// times (46.5 lookups per creat+close with 256 names; 2000 more names
/// would have added some 90 blocks to each; now 17 and 19). No device request is waited
/// for but at the first creates after a batch's unlinks (the write order
/// then writes a directory block the unlinks left due first).
#[test]
fn creat_close_costs_the_same_few_lookups_in_a_small_and_a_large_directory() {
    let Some(bytes) = image("counts", 64 * 1024) else { return };
    let mut small = Bench::new(bytes.clone(), 4096);
    let in_small = measure(&mut small, 4);
    eprintln!("per creat+close, 256 names at most: {in_small:?}");
    let mut large = Bench::new(bytes, 4096);
    for n in 0..2000 {
        let (w, _) =
            large.ask([fs::OP_OPEN, O_WRONLY | O_CREAT, 0o644, 0], format!("/r2/kept{n}").as_bytes());
        let h = result(w[0]).unwrap();
        large.ask([io::OP_CLOSE, h, 0, 0], &[]);
    }
    let in_large = measure(&mut large, 4);
    eprintln!("per creat+close, 2000 names more: {in_large:?}");
    assert!(in_small.lookups <= 20.0, "{in_small:?}");
    // A few more: the directory's indirect block, the next group's
    // bitmap and descriptor for the inodes (2000 fill the first group).
    assert!(in_large.lookups <= in_small.lookups + 3.0, "{in_large:?} against {in_small:?}");
    for per_op in [&in_small, &in_large] {
        assert!(per_op.waits * BATCH as f64 <= 4.0, "{per_op:?}");
        assert!(per_op.writes * BATCH as f64 <= 4.0, "{per_op:?}");
    }
}

/// The names a directory is known to hold stay exact through every
/// change: after a scan has learnt it, names made and removed by create,
/// link, unlink, rename (into, out of, over) and rmdir, and a directory
/// made on an inode number a removed directory had, are each found or
/// absent as the directory's own listing says.
#[test]
fn a_learnt_directory_answers_as_its_blocks_through_every_change() {
    let Some(bytes) = image("names", 8 * 1024) else { return };
    let mut fs = match Fs::mount(MemDisk::new(bytes), MountOptions { nbuf: 64, ..MountOptions::default() }) {
        Ok(fs) => fs,
        Err((e, _)) => panic!("mount refused: {e}"),
    };
    let root = fs_ext2::ROOT_INO;
    let a = fs.mkdir(root, b"a", 0o755, 0, 0).unwrap();
    let b = fs.mkdir(root, b"b", 0o755, 0, 0).unwrap();
    for n in 0..100 {
        fs.create(a, format!("f{n}").as_bytes(), 0o644, 0, 0).unwrap();
    }
    // Learnt: a lookup of a missing name scans the whole directory.
    assert_eq!(fs.lookup(a, b"missing"), Err(protocols::unix::errno::ENOENT));
    let f0 = fs.lookup(a, b"f0").unwrap();
    fs.unlink(a, b"f1").unwrap();
    fs.link(f0, a, b"hard").unwrap();
    fs.rename(a, b"f2", b, b"moved").unwrap();
    fs.create(b, b"g", 0o644, 0, 0).unwrap();
    fs.rename(b, b"g", a, b"from_b").unwrap();
    fs.rename(a, b"f3", a, b"f4").unwrap(); // over an existing name
    let (again, created) = fs.lookup_or_create(a, b"f1", 0o644, 0, 0).unwrap();
    assert!(created);
    assert_eq!(fs.lookup_or_create(a, b"f1", 0o644, 0, 0).unwrap(), (again, false));
    let sub = fs.mkdir(a, b"sub", 0o755, 0, 0).unwrap();
    fs.create(sub, b"inner", 0o644, 0, 0).unwrap();
    assert_eq!(fs.lookup(sub, b"nope"), Err(protocols::unix::errno::ENOENT));
    fs.unlink(sub, b"inner").unwrap();
    fs.rmdir(a, b"sub").unwrap();
    // The freed inode number is the next directory's: nothing of `sub`'s
    // names may be believed of it.
    let reused = fs.mkdir(a, b"sub2", 0o755, 0, 0).unwrap();
    assert_eq!(reused, sub, "the test wants the inode number reused");
    assert_eq!(fs.lookup(reused, b"inner"), Err(protocols::unix::errno::ENOENT));
    fs.create(reused, b"inner", 0o644, 0, 0).unwrap();
    assert!(fs.lookup(reused, b"inner").is_ok());

    for (dir, gone) in [(a, &[&b"f1"[..], b"f2", b"f3", b"sub"][..]), (b, &[&b"g"[..]][..])] {
        let listed = fs.list_dir(dir).unwrap();
        for e in &listed {
            assert_eq!(fs.lookup(dir, &e.name), Ok(e.ino), "{}", String::from_utf8_lossy(&e.name));
            if e.name != b"." && e.name != b".." {
                assert_eq!(fs.lookup_or_create(dir, &e.name, 0o644, 0, 0), Ok((e.ino, false)));
                assert_eq!(fs.create(dir, &e.name, 0o644, 0, 0), Err(protocols::unix::errno::EEXIST));
            }
        }
        for name in gone.iter().filter(|n| !listed.iter().any(|e| e.name == **n)) {
            assert_eq!(fs.lookup(dir, name), Err(protocols::unix::errno::ENOENT));
        }
    }
    assert!(fs.lookup(a, b"f1").is_ok(), "made again above");
    assert!(fs.lookup(b, b"moved").is_ok() && fs.lookup(a, b"f2").is_err());
    assert!(fs.lookup(a, b"from_b").is_ok() && fs.lookup(a, b"hard") == Ok(f0));
}

/// New files on a fresh volume read no inode-table block: a block whose
/// inodes are all free is written whole (zeros but for the new inode)
/// instead of read first; 200 creat+closes (50 blocks of four 256-byte
/// inodes) read nothing. A block holding an inode in use is read (after a
/// remount, with the cache empty, the next inode shares the last file's
/// block): `e2fsck -fn` would find that file's inode zeroed otherwise.
#[test]
fn new_inodes_in_free_inode_table_blocks_are_not_read() {
    let Some(bytes) = image("fresh-inodes", 8 * 1024) else { return };
    let mut b = Bench::new(bytes, 4096);
    let reads = |b: &Bench| b.s.fs.cache_stats().blocks_read;
    let before = reads(&b);
    for _ in 0..201 {
        b.creat_close();
    }
    assert_eq!(reads(&b) - before, 0, "blocks read for 201 new files");
    let disk = b.s.into_fs().unmount().unwrap();
    let fs = match Fs::mount(disk, MountOptions { nbuf: 4096, ..MountOptions::default() }) {
        Ok(fs) => fs,
        Err((e, _)) => panic!("mount refused: {e}"),
    };
    let mut b = Bench { s: Service::new(fs, MONITOR, 7), tx: Box::new([0; MESSAGE_DATA_BYTES]), next: 201 };
    b.creat_close();
    let disk = b.s.into_fs().unmount().unwrap();
    let img = std::env::temp_dir().join(format!("fs-ext2-fresh-inodes-check-{}.img", std::process::id()));
    std::fs::write(&img, disk.bytes()).unwrap();
    let check =
        std::process::Command::new(common::tool("e2fsck").unwrap()).arg("-fn").arg(&img).output().unwrap();
    let listing = std::process::Command::new(common::tool("debugfs").unwrap())
        .args(["-R", "ls -l /r2"])
        .arg(&img)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&img);
    assert!(check.status.success(), "e2fsck -fn: {}", String::from_utf8_lossy(&check.stdout));
    let text = String::from_utf8_lossy(&listing.stdout);
    assert_eq!(text.matches("r2c").count(), 202, "{text}");
}

/// The search for room in a directory starts at the entry where the last
/// one found room (`dir::DirNames`' `room_offset`), not at its block's
/// first: and a removed entry (unlink, rename out of the directory, rmdir)
/// sends it back to the start, so a new name still takes the first hole
/// big enough, as a search from the first block would. Checked by where
/// the names are listed (a directory lists in block order), with many
/// buffers and with four (the hinted block then leaves the cache and is
/// walked whole again), and by `e2fsck -fn`.
#[test]
fn the_search_for_room_resumes_where_it_stopped_and_starts_over_after_a_removal() {
    let Some(bytes) = image("room", 8 * 1024) else { return };
    let mut listings = Vec::new();
    for nbuf in [64, 4] {
        let mut fs =
            match Fs::mount(MemDisk::new(bytes.clone()), MountOptions { nbuf, ..MountOptions::default() }) {
                Ok(fs) => fs,
                Err((e, _)) => panic!("mount refused: {e}"),
            };
        let root = fs_ext2::ROOT_INO;
        let d = fs.mkdir(root, b"d", 0o755, 0, 0).unwrap();
        for n in 0..100 {
            fs.create(d, format!("n{n:03}").as_bytes(), 0o644, 0, 0).unwrap();
        }
        fs.mkdir(d, b"s000", 0o755, 0, 0).unwrap();
        for n in 100..200 {
            fs.create(d, format!("n{n:03}").as_bytes(), 0o644, 0, 0).unwrap();
        }
        let names = |fs: &mut Fs<MemDisk>| -> Vec<String> {
            fs.list_dir(d).unwrap().into_iter().map(|e| String::from_utf8(e.name).unwrap()).collect()
        };
        let after =
            |list: &[String], name: &str| list.iter().position(|n| n == name).map(|i| list[i - 1].clone());
        // Every name so far went in at the end, in order.
        let list = names(&mut fs);
        assert_eq!(list.len(), 2 + 201);
        assert_eq!(after(&list, "n100").as_deref(), Some("s000"));
        // An unlink's hole is the first room: taken by the next name
        // (in the last block, where the search for room stopped).
        fs.unlink(d, b"n190").unwrap();
        fs.create(d, b"x1", 0o644, 0, 0).unwrap();
        // A rename out of the directory, and an rmdir, the same.
        fs.rename(d, b"n180", root, b"out").unwrap();
        fs.create(d, b"x2", 0o644, 0, 0).unwrap();
        fs.rmdir(d, b"s000").unwrap();
        fs.create(d, b"x3", 0o644, 0, 0).unwrap();
        // No hole left: the next names go at the end again.
        fs.create(d, b"x4", 0o644, 0, 0).unwrap();
        fs.create(d, b"x5", 0o644, 0, 0).unwrap();
        let list = names(&mut fs);
        assert_eq!(after(&list, "x1").as_deref(), Some("n189"), "{list:?}");
        assert_eq!(after(&list, "x2").as_deref(), Some("n179"), "{list:?}");
        assert_eq!(after(&list, "x3").as_deref(), Some("n099"), "{list:?}");
        assert_eq!(after(&list, "x4").as_deref(), Some("n199"), "{list:?}");
        assert_eq!(after(&list, "x5").as_deref(), Some("x4"), "{list:?}");
        for name in &list[2..] {
            assert!(fs.lookup(d, name.as_bytes()).is_ok(), "{name}");
        }
        // A directory of one block, where the search stopped in the block
        // that gets the hole.
        let e = fs.mkdir(root, b"e", 0o755, 0, 0).unwrap();
        for n in 0..10 {
            fs.create(e, format!("n{n:03}").as_bytes(), 0o644, 0, 0).unwrap();
        }
        fs.unlink(e, b"n005").unwrap();
        fs.create(e, b"y", 0o644, 0, 0).unwrap();
        let in_e: Vec<String> =
            fs.list_dir(e).unwrap().into_iter().map(|e| String::from_utf8(e.name).unwrap()).collect();
        assert_eq!(after(&in_e, "y").as_deref(), Some("n004"), "{in_e:?}");
        listings.push(list);
        let disk = fs.unmount().unwrap();
        let img = std::env::temp_dir().join(format!("fs-ext2-room-{nbuf}-{}.img", std::process::id()));
        std::fs::write(&img, disk.bytes()).unwrap();
        let check = std::process::Command::new(common::tool("e2fsck").unwrap())
            .arg("-fn")
            .arg(&img)
            .output()
            .unwrap();
        let _ = std::fs::remove_file(&img);
        assert!(check.status.success(), "e2fsck -fn: {}", String::from_utf8_lossy(&check.stdout));
    }
    assert_eq!(listings[0], listings[1], "the same places with 64 buffers and with 4");
}

/// A path walked lately is answered from memory (`Fs::resolve`), and that
/// memory never outlives a change that could alter the answer: after an
/// unlink, a rename of a directory on the path, a rename over the name,
/// an rmdir and a mkdir of the same name on a new inode, and more paths
/// than it keeps, every path resolves as a fresh walk would (checked
/// against a second mount of the same image after each step, whose
/// memory is empty).
#[test]
fn remembered_paths_resolve_as_a_fresh_walk_through_every_change() {
    let Some(bytes) = image("walks", 8 * 1024) else { return };
    let opts = || MountOptions { nbuf: 64, ..MountOptions::default() };
    let mut fs = match Fs::mount(MemDisk::new(bytes), opts()) {
        Ok(fs) => fs,
        Err((e, _)) => panic!("mount refused: {e}"),
    };
    let root = fs_ext2::ROOT_INO;
    let a = fs.mkdir(root, b"a", 0o755, 0, 0).unwrap();
    let f = fs.create(a, b"f", 0o644, 0, 0).unwrap();
    fs.create(a, b"g", 0o644, 0, 0).unwrap();
    let paths: Vec<String> = ["/a", "/a/f", "/a/g", "/b", "/b/f", "/b/g", "/a/sub", "/a/sub/x", "/a/h"]
        .into_iter()
        .map(String::from)
        .chain((0..12).map(|n| format!("/a/n{n}")))
        .collect();
    // Each step, then every path, twice (the second from memory), against
    // a fresh mount of the same blocks.
    let check = |fs: &mut Fs<MemDisk>, step: &str| {
        fs.sync().unwrap();
        let copy = fs.device().bytes().to_vec();
        let mut fresh = match Fs::mount(MemDisk::new(copy), opts()) {
            Ok(fs) => fs,
            Err((e, _)) => panic!("mount refused: {e}"),
        };
        for _ in 0..2 {
            for p in &paths {
                assert_eq!(fs.resolve(p.as_bytes()), fresh.resolve(p.as_bytes()), "{p} after {step}");
            }
        }
    };
    check(&mut fs, "the start");
    assert_eq!(fs.resolve(b"/a/f"), Ok(f));
    fs.unlink(a, b"f").unwrap();
    check(&mut fs, "unlink");
    fs.create(a, b"f", 0o644, 0, 0).unwrap();
    check(&mut fs, "create");
    fs.rename(root, b"a", root, b"b").unwrap();
    check(&mut fs, "rename of a directory on the path");
    fs.rename(a, b"f", a, b"g").unwrap();
    check(&mut fs, "rename over");
    let sub = fs.mkdir(a, b"sub", 0o755, 0, 0).unwrap();
    fs.create(sub, b"x", 0o644, 0, 0).unwrap();
    check(&mut fs, "mkdir");
    fs.unlink(sub, b"x").unwrap();
    fs.rmdir(a, b"sub").unwrap();
    check(&mut fs, "rmdir");
    fs.mkdir(a, b"sub", 0o755, 0, 0).unwrap();
    fs.create(a, b"h", 0o644, 0, 0).unwrap();
    for n in 0..12 {
        fs.create(a, format!("n{n}").as_bytes(), 0o644, 0, 0).unwrap();
    }
    check(&mut fs, "more paths than are kept");
    fs.rename(root, b"b", root, b"a").unwrap();
    check(&mut fs, "the directory renamed back");
}

/// A file an open makes is answered with the attributes of the inode just
/// written, not read back (`Fs::lookup_or_create_open`): they are the
/// ones a lookup of the file gives (type, mode, owner, group, links,
/// size, time), and the file is held open as any other open holds it: an
/// unlink while it is open leaves it readable through the handle, and
/// its close gives the inode back.
#[test]
fn a_file_an_open_makes_is_answered_and_held_as_one_it_found() {
    use protocols::unix::Stat;
    let Some(bytes) = image("made", 8 * 1024) else { return };
    let mut b = Bench::new(bytes, 64);
    let free = |b: &mut Bench| b.s.fs.statfs().unwrap().free_inodes;
    let before = free(&mut b);
    let flags = O_WRONLY | O_CREAT | O_EXCL;
    let (w, len) = b.ask([fs::OP_OPEN, flags, 0o640, fs::owner_word(1000, 100)], b"/r2/made");
    let handle = result(w[0]).unwrap();
    let made = Stat::decode(&b.tx[..len]).unwrap();
    let (w, len) = b.ask([fs::OP_LOOKUP, 0, 0, 0], b"/r2/made");
    assert_eq!(result(w[0]), Ok(0));
    let looked = Stat::decode(&b.tx[..len]).unwrap();
    assert_eq!(made, looked);
    assert_eq!((made.mode, made.uid, made.gid, made.nlink, made.size_bytes), (0o100640, 1000, 100, 1, 0));
    assert_eq!(free(&mut b), before - 1);
    // Unlinked while open: still there through the handle.
    let (w, _) = b.ask([fs::OP_UNLINK, 0, 0, 0], b"/r2/made");
    assert_eq!(result(w[0]), Ok(0));
    let (w, _) = b.ask([io::OP_WRITE, handle, 0, 0], b"still here");
    assert_eq!(result(w[0]), Ok(10));
    let (w, len) = b.ask([io::OP_FSTAT, handle, 0, 0], &[]);
    assert_eq!(result(w[0]), Ok(0));
    assert_eq!(Stat::decode(&b.tx[..len]).unwrap().size_bytes, 10);
    assert_eq!(free(&mut b), before - 1, "an open file outlives its name");
    let (w, _) = b.ask([io::OP_CLOSE, handle, 0, 0], &[]);
    assert_eq!(result(w[0]), Ok(0));
    assert_eq!(free(&mut b), before, "the last close gives the inode back");
    // Found, not made: `O_EXCL` refuses, a plain `O_CREAT` opens it.
    let (w, _) = b.ask([fs::OP_OPEN, O_WRONLY | O_CREAT, 0o644, 0], b"/r2/kept");
    let h = result(w[0]).unwrap();
    b.ask([io::OP_CLOSE, h, 0, 0], &[]);
    let (w, _) = b.ask([fs::OP_OPEN, flags, 0o644, 0], b"/r2/kept");
    assert_eq!(result(w[0]), Err(protocols::unix::errno::EEXIST));
    let (w, len) = b.ask([fs::OP_OPEN, O_WRONLY | O_CREAT, 0o600, 0], b"/r2/kept");
    let h = result(w[0]).unwrap();
    assert_eq!(Stat::decode(&b.tx[..len]).unwrap().mode, 0o100644, "found: its own mode");
    b.ask([io::OP_CLOSE, h, 0, 0], &[]);
}
