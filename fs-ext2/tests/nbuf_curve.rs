//! Seed 004's experiment in virtual time, on the host: benchmark B's job
//! (`bench/src/b.rs`: twenty sources of 2 to 28 KiB read in 512-byte
//! reads with CPU work per block, a 36,432-byte `a.out` written in
//! proportion) run on [`Fs`] over a disk whose transfers take time
//! ([`TimedDisk`]: one transfer at a time, a fixed cost each), with
//! `nbuf` = 1 … 12 from a cold cache.
//!
//! It checks the shape of V1's curve as behaviour of the cache, not as a
//! timing of this machine: the clock is a counter the model advances (CPU
//! work per block, a cost per request, the disk's time per transfer), so
//! the result is the same on any host, however loaded. The shape checked:
//! more buffers never slower, one and two buffers each well above the next
//! count (V1: 3.215 s, 1.309 s, 1.004 s), and the gains falling off by
//! five or six buffers (V1: 734 ms, 724 ms). V1's one buffer was 2.46x
//! two; here it is about 1.3x (`docs/filesystem.md` says why).
//! `cargo test -p fs-ext2 --test nbuf_curve -- --nocapture` prints the
//! table `docs/filesystem.md` quotes.
//!
//! Skips, saying so, when e2fsprogs (`mke2fs`) is not installed.

use fs_ext2::device::{BlockDevice, MemDisk, Transfer};
use fs_ext2::{CacheStats, Errno, Fs, MountOptions, ROOT_INO};
use std::cell::Cell;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Command;
use std::rc::Rc;

/// B's sources (`bench::b::SOURCES`): name and size in bytes.
const SOURCES: [(&str, usize); 20] = [
    ("u0.s", 28_160),
    ("u1.s", 14_336),
    ("u2.s", 19_968),
    ("u3.s", 6_144),
    ("u4.s", 11_264),
    ("u5.s", 8_704),
    ("u6.s", 13_824),
    ("u7.s", 9_728),
    ("u8.s", 16_896),
    ("u9.s", 4_096),
    ("ua.s", 7_680),
    ("ub.s", 2_560),
    ("uc.s", 10_752),
    ("ud.s", 3_584),
    ("ue.s", 5_632),
    ("uf.s", 12_800),
    ("ug.s", 2_048),
    ("uh.s", 4_608),
    ("ui.s", 3_072),
    ("ux.s", 18_944),
];
const OUTPUT_BYTES: usize = 36_432;
/// `bench::b::READ_BYTES`: one file-system block per `read` and `write`.
const READ_BYTES: usize = 1024;

/// The model's costs, in microseconds of virtual time.
#[derive(Clone, Copy)]
struct Costs {
    /// The job's CPU work on one 512-byte block.
    cpu_per_block_us: u64,
    /// One request's round trip to the file server (a `read`, a `write`).
    request_us: u64,
    /// One disk transfer: its fixed cost, and per KiB moved.
    transfer_us: u64,
    transfer_per_kib_us: u64,
}

/// A disk whose transfers finish in virtual time, one at a time in the
/// order submitted (a single arm, as V1's RK05).
struct TimedDisk {
    inner: MemDisk,
    now_us: Rc<Cell<u64>>,
    free_at_us: u64,
    finish_us: VecDeque<u64>,
    costs: Costs,
    /// Time spent waiting for the disk.
    stalled_us: u64,
}

impl BlockDevice for TimedDisk {
    fn sectors(&self) -> u64 {
        self.inner.sectors()
    }

    fn submit(&mut self, transfer: Transfer) {
        let start = self.free_at_us.max(self.now_us.get());
        let kib = transfer.bytes().div_ceil(1024) as u64;
        if std::env::var_os("NBUF_TRACE").is_some() {
            eprintln!("T {:?} {} {}", transfer.direction, transfer.first_sector / 2, kib);
        }
        self.free_at_us = start + self.costs.transfer_us + kib * self.costs.transfer_per_kib_us;
        self.finish_us.push_back(self.free_at_us);
        self.inner.submit(transfer);
    }

    fn complete(&mut self) -> Option<(Transfer, Result<(), Errno>)> {
        let at = self.finish_us.pop_front()?;
        self.stalled_us += at.saturating_sub(self.now_us.get());
        self.now_us.set(self.now_us.get().max(at));
        self.inner.complete()
    }

    fn poll(&mut self) -> Option<(Transfer, Result<(), Errno>)> {
        if *self.finish_us.front()? <= self.now_us.get() {
            self.finish_us.pop_front();
            return self.inner.complete();
        }
        None
    }

    fn flush(&mut self) -> Result<(), Errno> {
        self.inner.flush()
    }
}

fn mke2fs() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join("mke2fs"))
        .find(|p| p.is_file());
    if found.is_none() {
        eprintln!("SKIPPED: mke2fs is not installed; `cargo xtask test` installs e2fsprogs");
    }
    found
}

/// B's image as xtask makes it: 64 MiB, 1 KiB blocks, the sources in `b/`.
fn b_image(mke2fs: &PathBuf) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("fs-ext2-nbuf-curve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("tree/b")).unwrap();
    for (index, (name, size)) in SOURCES.iter().enumerate() {
        let bytes: Vec<u8> = (0..*size).map(|o| b' ' + ((o * 7 + index * 13) % 94) as u8).collect();
        std::fs::write(dir.join("tree/b").join(name), bytes).unwrap();
    }
    let img = dir.join("b.img");
    let out = Command::new(mke2fs)
        .args(["-q", "-F", "-t", "ext2", "-b", "1024", "-d"])
        .arg(dir.join("tree"))
        .arg(&img)
        .arg("65536k")
        .output()
        .unwrap();
    assert!(out.status.success(), "mke2fs: {}", String::from_utf8_lossy(&out.stderr));
    let image = std::fs::read(&img).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    image
}

/// One cold job with `nbuf` buffers: (virtual µs, the cache's counters).
fn job(image: &[u8], nbuf: usize, costs: Costs) -> (u64, u64, CacheStats) {
    let now = Rc::new(Cell::new(0u64));
    let disk = TimedDisk {
        inner: MemDisk::new(image.to_vec()),
        now_us: now.clone(),
        free_at_us: 0,
        finish_us: VecDeque::new(),
        costs,
        stalled_us: 0,
    };
    let mut fs = match Fs::mount(disk, MountOptions { nbuf, ..MountOptions::default() }) {
        Ok(fs) => fs,
        Err((e, _)) => panic!("mount: {e}"),
    };
    let start_stats = fs.cache_stats();
    now.set(0);
    fs.device_mut().stalled_us = 0;
    // Each request costs its round trip; the server reaps finished
    // transfers between requests, as servers/ext2fs does.
    let request = |fs: &mut Fs<TimedDisk>| {
        now.set(now.get() + costs.request_us);
        fs.reap().unwrap();
    };
    let b = fs.lookup(ROOT_INO, b"b").unwrap();
    request(&mut fs);
    let out = fs.create(b, b"a.out", 0o644, 0, 0).unwrap();
    fs.open_inode(out).unwrap();
    request(&mut fs);
    let total: usize = SOURCES.iter().map(|s| s.1).sum();
    let (mut read_total, mut written) = (0usize, 0usize);
    let mut block = [0u8; READ_BYTES];
    for (name, size) in SOURCES {
        let ino = fs.lookup(b, name.as_bytes()).unwrap();
        fs.open_inode(ino).unwrap();
        request(&mut fs);
        let mut offset = 0u64;
        loop {
            let got = fs.read(ino, offset, &mut block).unwrap();
            request(&mut fs);
            if got == 0 {
                break;
            }
            now.set(now.get() + costs.cpu_per_block_us * (got as u64).div_ceil(512));
            offset += got as u64;
            read_total += got;
            let due = OUTPUT_BYTES * read_total / total;
            while written + READ_BYTES <= due {
                assert_eq!(fs.write(out, written as u64, &[0x5a; READ_BYTES]).unwrap(), READ_BYTES);
                request(&mut fs);
                written += READ_BYTES;
            }
        }
        assert_eq!(offset as usize, size);
        fs.close_inode(ino).unwrap();
        request(&mut fs);
    }
    let tail = OUTPUT_BYTES - written;
    assert_eq!(fs.write(out, written as u64, &vec![0x5a; tail]).unwrap(), tail);
    request(&mut fs);
    fs.close_inode(out).unwrap();
    request(&mut fs);
    let elapsed = now.get();
    let stalled = fs.device().stalled_us;
    let mut stats = fs.cache_stats();
    stats.hits -= start_stats.hits;
    stats.misses -= start_stats.misses;
    stats.blocks_read -= start_stats.blocks_read;
    stats.read_transfers -= start_stats.read_transfers;
    stats.waits -= start_stats.waits;
    fs.unmount().unwrap();
    (elapsed, stalled, stats)
}

/// Costs in the proportions measured on Ridgeback under QEMU
/// (`docs/filesystem.md`, "Benchmarks"): a disk transfer about three
/// times the CPU work on one 512-byte block (`bench::b::CPU_PASSES_PER_BLOCK`).
const RIDGEBACK_COSTS: Costs =
    Costs { cpu_per_block_us: 100, request_us: 30, transfer_us: 300, transfer_per_kib_us: 4 };

#[test]
fn one_buffer_is_more_than_twice_as_slow_as_two_and_gains_fall_off_by_six() {
    let Some(mke2fs) = mke2fs() else { return };
    let image = b_image(&mke2fs);
    let mut rows = Vec::new();
    let only: Option<usize> = std::env::var("NBUF_ONLY").ok().and_then(|v| v.parse().ok());
    for nbuf in [1usize, 2, 3, 4, 5, 6, 8, 12].into_iter().filter(|n| only.is_none_or(|o| o == *n)) {
        let mut costs = RIDGEBACK_COSTS;
        if let Some(cpu) = std::env::var("NBUF_CPU").ok().and_then(|v| v.parse().ok()) {
            costs.cpu_per_block_us = cpu;
        }
        let (us, stalled, s) = job(&image, nbuf, costs);
        println!(
            "nbuf={nbuf:>2}  {:>7.1} ms (waiting {:>6.1} ms)  misses {:>5}  hits {:>5}  reads {:>4} ({} blocks)  waits {:>4}",
            us as f64 / 1000.0,
            stalled as f64 / 1000.0,
            s.misses,
            s.hits,
            s.read_transfers,
            s.blocks_read,
            s.waits
        );
        rows.push((nbuf, us));
    }
    let at = |n: usize| rows.iter().find(|r| r.0 == n).unwrap().1 as f64;
    for pair in rows.windows(2) {
        assert!(pair[1].1 as f64 <= pair[0].1 as f64 * 1.02, "more buffers, slower: {pair:?}");
    }
    // What V1's curve shows and this cache reproduces: one buffer
    // clearly the slowest (V1: 2.46x two; here the disk has no rotation to
    // miss, docs/filesystem.md says why less), and the gains falling off
    // by five and six buffers (V1: 1.06x, 1.01x).
    assert!(at(1) > 1.2 * at(2), "nbuf=1 {} ms is not well above nbuf=2 {} ms", at(1) / 1e3, at(2) / 1e3);
    assert!(at(2) > 1.2 * at(3), "nbuf=2 {} ms is not well above nbuf=3 {} ms", at(2) / 1e3, at(3) / 1e3);
    let gain_5_6 = at(5) / at(6);
    assert!(gain_5_6 < 1.10, "nbuf 5 -> 6 still gains {gain_5_6:.2}x");
}
