//! The R2 disk rows with `fsync` (`bench/src/r2.rs`: `creat`+`fsync`+
//! `close`, and the `write` and `copy` rows' 8 MiB file `fsync`'d before
//! its `close`) through the disk file system's requests, on a `MemDisk`
//! that says it has a volatile write cache, as QEMU's virtio-blk does:
//! which blocks go to the device in which level of the write order (the
//! writes between two flushes), how many transfers, flushes and round
//! trips one `fsync` costs. These are the numbers a change to the write
//! order moves, counted so that they do not depend on the host's speed
//! (`docs/filesystem-history.md`, "R2 on disk: fewer levels per fsync"). Skips,
//! saying so, without e2fsprogs.

mod common;

use fs_ext2::device::MemDisk;
use fs_ext2::service::{MESSAGE_DATA_BYTES, Service, VecLent};
use fs_ext2::{Fs, MountOptions};
use std::collections::BTreeMap;

use protocols::unix::open_flags::{O_CREAT, O_EXCL, O_RDONLY, O_TRUNC, O_WRONLY};
use protocols::unix::{fs, io, result};

const MONITOR: u64 = 0x1_0000_0005;
/// The `creat` row's batch (`bench::r2::CREAT_BATCH`).
const BATCH: u64 = 256;
const BLOCK_BYTES: usize = 1024;
/// The bandwidth rows' file and one write (`bench::r2`).
const FILE_BYTES: usize = 8 << 20;
const WRITE_BYTES: usize = 8 << 10;

/// Where each group's bitmaps and inode table are, read from the image
/// (1 KiB blocks: the superblock in block 1, the descriptors from block 2).
struct Layout {
    block_bitmaps: Vec<u64>,
    inode_bitmaps: Vec<u64>,
    inode_tables: Vec<std::ops::Range<u64>>,
}

impl Layout {
    fn of(image: &[u8]) -> Layout {
        let le32 = |at: usize| u32::from_le_bytes(image[at..at + 4].try_into().unwrap()) as u64;
        let (sb, gd) = (1024, 2048);
        let (blocks, first, per_group) = (le32(sb + 4), le32(sb + 20), le32(sb + 32));
        let inodes_per_group = le32(sb + 40);
        let inode_bytes = u16::from_le_bytes(image[sb + 88..sb + 90].try_into().unwrap()) as u64;
        let table_blocks = inodes_per_group * inode_bytes / BLOCK_BYTES as u64;
        let groups = (blocks - first).div_ceil(per_group) as usize;
        let mut l = Layout { block_bitmaps: Vec::new(), inode_bitmaps: Vec::new(), inode_tables: Vec::new() };
        for g in 0..groups {
            let at = gd + 32 * g;
            l.block_bitmaps.push(le32(at));
            l.inode_bitmaps.push(le32(at + 4));
            l.inode_tables.push(le32(at + 8)..le32(at + 8) + table_blocks);
        }
        l
    }

    /// What block `b` is, in a word: "other" is a data, indirect or
    /// directory block.
    fn name(&self, b: u64) -> &'static str {
        match b {
            1 => "superblock",
            2 => "descriptors",
            _ if self.block_bitmaps.contains(&b) => "block bitmap",
            _ if self.inode_bitmaps.contains(&b) => "inode bitmap",
            _ if self.inode_tables.iter().any(|t| t.contains(&b)) => "inode table",
            _ => "other",
        }
    }
}

struct Bench {
    s: Service<MemDisk>,
    tx: Box<[u8; MESSAGE_DATA_BYTES]>,
    layout: Layout,
    next: u64,
}

/// What one `fsync` sent the device.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Fsync {
    /// Each level: the kinds of block its write transfers carried (one
    /// entry per transfer, blocks counted), in completion order.
    levels: Vec<Vec<(&'static str, usize)>>,
    flushes: u64,
    round_trips: u64,
    transfers: u64,
}

impl Bench {
    fn new(image: Vec<u8>, nbuf: usize) -> Bench {
        let layout = Layout::of(&image);
        let disk = MemDisk::new(image).with_volatile_cache().recording();
        let fs = match Fs::mount(disk, MountOptions { nbuf, ..MountOptions::default() }) {
            Ok(fs) => fs,
            Err((e, _)) => panic!("mount refused: {e}"),
        };
        let mut b =
            Bench { s: Service::new(fs, MONITOR, 7), tx: Box::new([0; MESSAGE_DATA_BYTES]), layout, next: 0 };
        let (w, _) = b.ask([fs::OP_MKDIR, 0o755, 0, 0], b"/r2", &mut VecLent::new(Vec::new(), 0));
        assert_eq!(result(w[0]), Ok(0));
        b.s.fs.sync().unwrap();
        b
    }

    fn ask(&mut self, m: [u64; 4], data: &[u8], lent: &mut VecLent) -> ([u64; 4], usize) {
        self.s.request(MONITOR, m, data, 5_000_000_000, &mut self.tx, lent)
    }

    fn open(&mut self, path: &str, flags: u64) -> u64 {
        let (w, _) =
            self.ask([fs::OP_OPEN, flags, 0o644, 0], path.as_bytes(), &mut VecLent::new(Vec::new(), 0));
        result(w[0]).unwrap_or_else(|e| panic!("open {path}: {e}"))
    }

    fn close(&mut self, h: u64) {
        let (w, _) = self.ask([io::OP_CLOSE, h, 0, 0], &[], &mut VecLent::new(Vec::new(), 0));
        assert_eq!(result(w[0]), Ok(0));
    }

    fn unlink(&mut self, path: &str) {
        let (w, _) = self.ask([fs::OP_UNLINK, 0, 0, 0], path.as_bytes(), &mut VecLent::new(Vec::new(), 0));
        assert_eq!(result(w[0]), Ok(0), "unlink {path}");
    }

    /// `fsync(h)`, and what it sent the device.
    fn fsync(&mut self, h: u64) -> Fsync {
        let d = self.s.fs.device();
        let (log0, marks0, flushes0, trips0, writes0) =
            (d.log.as_ref().unwrap().len(), d.flush_marks.len(), d.flushes, d.round_trips, d.writes);
        let (w, _) = self.ask([io::OP_FSYNC, h, 0, 0], &[], &mut VecLent::new(Vec::new(), 0));
        assert_eq!(result(w[0]), Ok(0), "fsync");
        let d = self.s.fs.device();
        let log = &d.log.as_ref().unwrap()[log0..];
        let marks: Vec<usize> = d.flush_marks[marks0..].iter().map(|m| m - log0).collect();
        // The writes between two flushes, each level's kinds sorted; a
        // flush with nothing written since the last one is an empty level.
        let mut levels = Vec::new();
        let mut from = 0;
        for &m in &marks {
            levels.push(self.kinds(&log[from..m]));
            from = m;
        }
        if from < log.len() {
            levels.push(self.kinds(&log[from..]));
        }
        Fsync {
            levels,
            flushes: d.flushes - flushes0,
            round_trips: d.round_trips - trips0,
            transfers: d.writes - writes0,
        }
    }

    fn kinds(&self, writes: &[fs_ext2::device::WriteRecord]) -> Vec<(&'static str, usize)> {
        let mut level: Vec<(&'static str, usize)> = writes
            .iter()
            .map(|w| (self.layout.name(w.first_sector / 2), w.bytes.len() / BLOCK_BYTES))
            .collect();
        level.sort();
        level
    }

    /// One creat+fsync+close of the next name (the `creat` row with
    /// `fsync`); every [`BATCH`] names the batch is unlinked (untimed in
    /// the benchmark).
    fn creat_fsync_close(&mut self) -> Fsync {
        let path = format!("/r2/r2c{}", self.next);
        self.next += 1;
        let h = self.open(&path, O_WRONLY | O_CREAT | O_TRUNC | O_EXCL);
        let f = self.fsync(h);
        self.close(h);
        if self.next.is_multiple_of(BATCH) {
            for n in self.next - BATCH..self.next {
                self.unlink(&format!("/r2/r2c{n}"));
            }
        }
        f
    }

    /// The `write` row with `fsync`: the previous file unlinked, a new one
    /// of 8 MiB, `fsync`, `close`.
    fn write_fsync(&mut self, path: &str) -> Fsync {
        let h = self.open(path, O_WRONLY | O_CREAT | O_TRUNC);
        for n in 0..FILE_BYTES / WRITE_BYTES {
            let mut lent = VecLent::new(vec![n as u8; WRITE_BYTES], 0);
            let (w, _) = self.ask([io::OP_WRITE, h, WRITE_BYTES as u64, 0], &[], &mut lent);
            assert_eq!(result(w[0]), Ok(WRITE_BYTES as u64));
        }
        let f = self.fsync(h);
        self.close(h);
        f
    }

    /// The `copy` row with `fsync`: `from` read into a new file `to`.
    fn copy_fsync(&mut self, from: &str, to: &str) -> Fsync {
        let src = self.open(from, O_RDONLY);
        let dst = self.open(to, O_WRONLY | O_CREAT | O_TRUNC);
        for _ in 0..FILE_BYTES / WRITE_BYTES {
            let mut lent = VecLent::new(Vec::new(), WRITE_BYTES);
            let (w, _) = self.ask([io::OP_READ, src, WRITE_BYTES as u64, 0], &[], &mut lent);
            assert_eq!(result(w[0]), Ok(WRITE_BYTES as u64));
            let mut lent = VecLent::new(lent.receive, 0);
            let (w, _) = self.ask([io::OP_WRITE, dst, WRITE_BYTES as u64, 0], &[], &mut lent);
            assert_eq!(result(w[0]), Ok(WRITE_BYTES as u64));
        }
        let f = self.fsync(dst);
        self.close(src);
        self.close(dst);
        f
    }
}

/// How often each kind of `fsync` happened, for the report.
fn tally(fsyncs: &[Fsync]) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for f in fsyncs {
        *seen.entry(format!("{f:?}")).or_insert(0) += 1;
    }
    seen
}

/// Blocks in a level: its transfers' blocks added up.
fn blocks(level: &[(&'static str, usize)]) -> usize {
    level.iter().map(|(_, n)| n).sum()
}

/// The `creat` row with `fsync`, two batches after one to warm up (the
/// first batch's unlinks are in the second's first `fsync`s). Each
/// `fsync` of a new empty file sends the inode bitmap and the inode's
/// block in one level, a flush, the directory block, and `fsync`'s own
/// flush: the two levels the promise needs (the entry on the disk only
/// after the inode it names is durable), no more. At the first `fsync`s
/// after a batch's unlinks, what they left goes first.
#[test]
fn creat_and_fsync_of_a_new_file_is_two_levels_and_two_flushes() {
    let Some(image) = common::fresh_image("fsync-creat", 64 * 1024) else { return };
    let mut b = Bench::new(image, 4096);
    for _ in 0..BATCH {
        b.creat_fsync_close();
    }
    let fsyncs: Vec<Fsync> = (0..2 * BATCH).map(|_| b.creat_fsync_close()).collect();
    for (what, n) in tally(&fsyncs) {
        eprintln!("{n:4} x {what}");
    }
    let ops = fsyncs.len() as f64;
    let per_op = |f: fn(&Fsync) -> u64| fsyncs.iter().map(f).sum::<u64>() as f64 / ops;
    let (flushes, round_trips) = (per_op(|f| f.flushes), per_op(|f| f.round_trips));
    eprintln!(
        "per creat+fsync: {flushes:.3} flushes, {round_trips:.3} round trips, {:.3} write transfers, {:.3} levels",
        per_op(|f| f.transfers),
        per_op(|f| f.levels.len() as u64)
    );
    let usual = fsyncs
        .iter()
        .filter(|f| {
            f.flushes == 2
                && f.levels.len() == 2
                && f.levels[0].iter().any(|(k, _)| *k == "inode bitmap")
                && f.levels[0].iter().all(|(k, _)| matches!(*k, "inode bitmap" | "inode table"))
                && f.levels[1] == [("other", 1)]
        })
        .count();
    assert!(usual * 10 >= fsyncs.len() * 9, "{usual} of {} as expected", fsyncs.len());
    assert!(flushes <= 2.05 && round_trips <= 2.05, "{flushes} flushes, {round_trips} round trips");
}

/// The `write` and `copy` rows with `fsync`: a new file of 8 MiB. Its
/// data, the bitmaps and its indirect blocks (new: nothing on the disk
/// points at them yet, `Cache::allocated`) go in one level; then its
/// inode; then its entry: three flushes, where each of the 33 indirect
/// blocks' levels had a flush of its own before (five). From the second
/// pass on, the previous file's unlink and the create's cycle through the
/// inode's block add one level.
#[test]
fn write_and_fsync_of_a_new_8_mib_file_is_three_levels() {
    let Some(image) = common::fresh_image("fsync-write", 64 * 1024) else { return };
    let mut b = Bench::new(image, 26_742);
    let file_blocks = FILE_BYTES / BLOCK_BYTES + 33;
    for pass in 0..3 {
        if pass > 0 {
            b.unlink("/r2/r2file");
        }
        let w = b.write_fsync("/r2/r2file");
        if pass > 0 {
            b.unlink("/r2/r2copy");
        }
        let c = b.copy_fsync("/r2/r2file", "/r2/r2copy");
        for (row, f) in [("write", &w), ("copy", &c)] {
            let shape: Vec<(usize, usize)> = f.levels.iter().map(|l| (l.len(), blocks(l))).collect();
            eprintln!(
                "{row} pass {pass}: levels (transfers, blocks) {shape:?}, {} flushes, {} round trips, {} transfers",
                f.flushes, f.round_trips, f.transfers
            );
            let most = if pass == 0 { 3 } else { 4 };
            assert!(f.flushes <= most, "{row} pass {pass}: {f:?}");
            // Every data and indirect block in one level (with the
            // bitmaps), the inode's block in a later one. From the second
            // pass on the indirect blocks wait for the block bitmap, which
            // waits for the flush after the inode's block written at the
            // cycle: the data alone make the level.
            let level_blocks = if pass == 0 { file_blocks } else { FILE_BYTES / BLOCK_BYTES };
            assert!(f.levels.iter().any(|l| blocks(l) >= level_blocks), "{row} pass {pass}: {shape:?}");
            let last = f.levels.last().unwrap();
            assert!(blocks(last) <= 2, "{row} pass {pass}: {shape:?}");
        }
    }
}

/// With the journal (an ext3 image, `MountOptions::journal`, branch
/// `jbd`): each `fsync` of a new empty file is one write transfer into
/// the log (a descriptor, the inode bitmap, the inode's block, the
/// directory block and whatever else the entry waits for, a commit
/// block) and one flush, where the ordered writes above need two levels
/// and two flushes. The first commit after the log was empty also
/// writes the journal superblock and the superblock's `needs_recovery`
/// (same flush).
#[test]
fn with_the_journal_creat_and_fsync_is_one_write_and_one_flush() {
    let Some(image) = common::fresh_ext3_image("fsync-creat-jbd", 64 * 1024) else { return };
    let mut b = Bench::new(image, 4096);
    assert!(b.s.fs.journal_state().starts_with("on"), "{}", b.s.fs.journal_state());
    for _ in 0..BATCH {
        b.creat_fsync_close();
    }
    let fsyncs: Vec<Fsync> = (0..2 * BATCH).map(|_| b.creat_fsync_close()).collect();
    for (what, n) in tally(&fsyncs) {
        eprintln!("{n:4} x {what}");
    }
    let ops = fsyncs.len() as f64;
    let per_op = |f: fn(&Fsync) -> u64| fsyncs.iter().map(f).sum::<u64>() as f64 / ops;
    let (flushes, round_trips, transfers) =
        (per_op(|f| f.flushes), per_op(|f| f.round_trips), per_op(|f| f.transfers));
    eprintln!(
        "per creat+fsync with the journal: {flushes:.3} flushes, {round_trips:.3} round trips, {transfers:.3} write transfers"
    );
    let one = fsyncs.iter().filter(|f| f.flushes == 1 && f.transfers == 1 && f.round_trips == 1).count();
    assert!(one * 10 >= fsyncs.len() * 9, "{one} of {} were one transfer and one flush", fsyncs.len());
    assert!(flushes <= 1.05 && round_trips <= 1.1, "{flushes} flushes, {round_trips} round trips");
    eprintln!("{:?}", b.s.fs.log_stats());
}

/// The `write` and `copy` rows with `fsync` and the journal: the file's
/// new data, bitmaps and indirect blocks go home in one level (ordered
/// mode: before the commit that makes them reachable), a flush, then the
/// inode's block and the entry in one transaction, a flush: two flushes
/// where the ordered writes need three (first pass), three where they
/// need four (later passes).
#[test]
fn with_the_journal_write_and_fsync_of_8_mib_is_two_flushes() {
    let Some(image) = common::fresh_ext3_image("fsync-write-jbd", 64 * 1024) else { return };
    let mut b = Bench::new(image, 26_742);
    for pass in 0..3 {
        if pass > 0 {
            b.unlink("/r2/r2file");
        }
        let walked = b.s.fs.log_stats().closure_blocks;
        let w = b.write_fsync("/r2/r2file");
        let write_walked = b.s.fs.log_stats().closure_blocks - walked;
        if pass > 0 {
            b.unlink("/r2/r2copy");
        }
        let walked = b.s.fs.log_stats().closure_blocks;
        let c = b.copy_fsync("/r2/r2file", "/r2/r2copy");
        let copy_walked = b.s.fs.log_stats().closure_blocks - walked;
        for (row, f, walked) in [("write", &w, write_walked), ("copy", &c, copy_walked)] {
            // The fresh blocks (the new indirect blocks, and through them
            // the 8,192 data blocks) went home before the commit walked
            // what the targets wait for: the walk meets them clean and
            // takes in only what is still dirty (the inode's block, the
            // entry, bitmaps), where it took in every data block before
            // (8,230 blocks; branch `jfast`).
            assert!(walked <= 64, "{row} pass {pass}: the commit's closure took in {walked} blocks");
            let shape: Vec<(usize, usize)> = f.levels.iter().map(|l| (l.len(), blocks(l))).collect();
            eprintln!(
                "journal {row} pass {pass} (closure {walked} blocks): levels (transfers, blocks) {shape:?}, {} flushes, {} round trips, {} transfers",
                f.flushes, f.round_trips, f.transfers
            );
            // One flush fewer than the ordered writes (3, then 4): from
            // the second pass on, the block bitmap waits for the unlinked
            // file's inode block, logged before (a small transaction of
            // its own, `Cache::log_before_home`).
            let most = if pass == 0 { 2 } else { 3 };
            assert!(f.flushes <= most, "{row} pass {pass}: {f:?}");
        }
    }
    eprintln!("{:?}", b.s.fs.log_stats());
}
