//! The R2 `creat` row's path through the disk file system's requests
//! (`bench/src/r2.rs`, `creat_figure`): `creat` of a name never used
//! before (`fs::OP_OPEN` with `O_WRONLY|O_CREAT|O_TRUNC|O_EXCL`, as the
//! monitor sends it) and `close` (`io::OP_CLOSE`), the names removed in
//! batches of 256 between, over a `mke2fs` image like the benchmark's
//! (1 KiB blocks). What one creat+close asks of the cache and the device
//! is counted, so that a change on the path shows in numbers that do not
//! depend on the host's speed. Skips, saying so, without e2fsprogs.

use fs_ext2::device::MemDisk;
use fs_ext2::service::{MESSAGE_DATA_BYTES, Service, VecLent};
use fs_ext2::{CacheStats, Fs, MountOptions};
use protocols::unix::open_flags::{O_CREAT, O_EXCL, O_TRUNC, O_WRONLY};
use protocols::unix::{fs, io, result};
use std::path::PathBuf;
use std::process::Command;

const MONITOR: u64 = 0x1_0000_0005;
/// The `creat` row's batch (`bench::r2::CREAT_BATCH`).
const BATCH: u64 = 256;

fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// A fresh ext2 image of `kib` KiB with 1 KiB blocks, as `xtask` makes
/// the benchmark's disk, or `None` (test skipped) without mke2fs.
fn image(tag: &str, kib: u64) -> Option<Vec<u8>> {
    let Some(mke2fs) = tool("mke2fs") else {
        eprintln!("SKIPPED: e2fsprogs is not installed; `cargo xtask test` installs it");
        return None;
    };
    let img = std::env::temp_dir().join(format!("fs-ext2-creat-{tag}-{}.img", std::process::id()));
    let _ = std::fs::remove_file(&img);
    let out = Command::new(mke2fs)
        .args(["-q", "-F", "-t", "ext2", "-b", "1024"])
        .arg(&img)
        .arg(format!("{kib}k"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&img).unwrap();
    let _ = std::fs::remove_file(&img);
    Some(bytes)
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

/// What `ops` creat+closes asked of the cache and the device, per op.
#[derive(Debug)]
struct PerOp {
    lookups: f64,
    waits: f64,
    write_transfers: f64,
    round_trips: f64,
}

/// Runs `batches` batches after one to warm up; counts only creat+close.
fn measure(bench: &mut Bench, batches: u64) -> PerOp {
    for _ in 0..BATCH {
        bench.creat_close();
    }
    bench.unlink_batch();
    let mut lookups = 0;
    let mut waits = 0;
    let mut writes = 0;
    let mut trips = 0;
    let start = std::time::Instant::now();
    for _ in 0..batches {
        let (c0, w0, r0) = bench.stats();
        for _ in 0..BATCH {
            bench.creat_close();
        }
        let (c1, w1, r1) = bench.stats();
        lookups += c1.hits + c1.misses - c0.hits - c0.misses;
        waits += c1.waits - c0.waits;
        writes += w1 - w0;
        trips += r1 - r0;
        bench.unlink_batch();
    }
    let ops = (batches * BATCH) as f64;
    eprintln!(
        "host time per creat+close (with the unlinks): {:?}",
        start.elapsed() / (batches * BATCH) as u32
    );
    PerOp {
        lookups: lookups as f64 / ops,
        waits: waits as f64 / ops,
        write_transfers: writes as f64 / ops,
        round_trips: trips as f64 / ops,
    }
}

#[test]
fn creat_close_costs_no_device_wait_and_few_lookups() {
    let Some(bytes) = image("counts", 64 * 1024) else { return };
    let mut bench = Bench::new(bytes, 4096);
    let per_op = measure(&mut bench, 4);
    eprintln!("per creat+close: {per_op:?}");
}
