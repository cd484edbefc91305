//! The disk file system's tests in QEMU (issue 12), each judged on the
//! host from the image itself with e2fsprogs, never from what the guest
//! says alone:
//!
//! 1. **workload**: an image made here with `mke2fs -d` from a tree of
//!    files (empty to 1.2 MB: direct, single and double indirect blocks;
//!    150 files in one directory; a 20-deep tree) is booted as `/disk`;
//!    `disktest sums` reads every file back (sizes and SHA-256 compared
//!    with the tree's), then `disktest workload` (create, write, append,
//!    truncate, rename, unlink, mkdir, rmdir, many small files, one large
//!    file, a deep tree); after power-off `e2fsck -fn` must be clean and
//!    every file the guest listed must read back from the image with
//!    `debugfs` with the guest's size and sum, every removed name gone.
//!    Then `disktest readwin` (read windows: reads in order, and every
//!    change by another process, `lseek`, `dup`, `fork` and the reader's
//!    own write seen; a client scribbling on its window page; a client
//!    dying with windows open).
//!    The disk's interrupts must have come by MSI-X (the driver's
//!    `interrupts by msix` line on the console, branch `msix`).
//! 2. **nbuf=1**: the same workload, scaled down, with one buffer, and
//!    `disktest readwin` with `ext2.readwin=off` (the plain read path),
//!    and `pci.msix=off`: the disk's interrupts by its INTx line.
//! 3. **corrupt**: an image whose superblock claims more inodes than its
//!    tables hold is refused at mount (the refusal is on the console),
//!    the system still answers (`mount` lists no `/disk`, the shell runs),
//!    and the image is not written (byte for byte). A bad `blk.wcache=`
//!    or `ext2.readwin=` boot option is refused the same way.
//! 4. **power cuts**: `disktest cuts` writes and `fsync`s file after file
//!    with names churned in between; QEMU is killed right after the k-th
//!    `fsynced` line (and 0–99 ms more); `e2fsck -fn` may then report only what loses
//!    nothing (`crate::ext2::harmful_complaints`) and every file whose
//!    `fsync` returned must read back intact. A few cut points in CI;
//!    `cargo xtask test --power-cuts N` runs N.
//!
//! 5. **a restarted driver** (issue 16): `disktest cuts` runs on `/disk`
//!    while `service kill virtio-blk` ends the disk's driver; init starts
//!    it again and the monitor drops the volume and mounts it again
//!    (`servers/monitor/src/mounts.rs`, `block_driver_ended`); then a
//!    second `disktest cuts` writes new files. Every file whose `fsync`
//!    returned, before the kill or after, must read back from the image,
//!    and `e2fsck -fn` may report only what a power cut may leave (the
//!    old manager's unwritten changes are lost as in one). Both drivers
//!    took MSI-X, the second the vector the first had (freed, not leaked).
//! 6. **an idle volume writes back**: a file written on `/disk`, then
//!    nothing asked of the volume for twice the dirty expiry
//!    (`fs_ext2::cache::DIRTY_EXPIRE_MS`, 5 s) and more: `kinfo` must
//!    show no dirty block and expired-block transfers, with no `sync` (the
//!    manager's write-back timer, `servers/ext2fs/src/timer.rs`); and
//!    after `service kill virtio-blk` and the driver's return, as many
//!    processes live as before (no timer or worker left over).
//!
//! 7. **a dead manager's read window** (branch `posio`): `disktest
//!    deadwin` reads a file through a window, has the volume's manager
//!    ended (its driver killed until init gives it up), and must then get
//!    `EIO` for a read inside the window, not the bytes it held.
//!
//! What it is not: the file system's host tests (`fs-ext2/tests/`), which
//! drive the same code over an in-memory disk.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::outcome::Outcome;
use crate::batch;
use crate::ext2;
use crate::image::{ImageKind, Workspace};
use crate::qemu::{AccelChoice, DiskChoice};
use crate::run::RunOptions;

/// The guest's program (`tests/disktest`).
pub const PROGRAM: &str = "disktest";
/// Cut points in CI: after these `fsynced` lines.
pub const CI_CUT_POINTS: [usize; 2] = [3, 11];
/// The most `fsynced` lines the cut workload prints (`disktest cuts`).
const CUT_WORKLOAD_FILES: usize = 60;
const IMAGE_BYTES: u64 = 32 << 20;
const LINE_PREFIX: &str = "disktest: ";

/// What the guest listed: files (size, sha256) and removed names, by their
/// path in the guest (`/disk/...`).
#[derive(Debug, Default)]
struct Listing {
    files: BTreeMap<String, (u64, String)>,
    gone: Vec<String>,
    fsynced: BTreeMap<String, (u64, String)>,
    is_done: bool,
    failure: Option<String>,
}

fn parse_listing(output: &str) -> Listing {
    let mut l = Listing::default();
    for line in output.lines() {
        let Some(rest) = line.trim().strip_prefix(LINE_PREFIX) else { continue };
        let words: Vec<&str> = rest.split_whitespace().collect();
        match words.as_slice() {
            ["file", path, size, sum] | ["fsynced", path, size, sum] => {
                let Ok(size) = size.parse() else { continue };
                let map = if words[0] == "file" { &mut l.files } else { &mut l.fsynced };
                map.insert(path.to_string(), (size, sum.to_string()));
            }
            ["gone", path] => l.gone.push(path.to_string()),
            ["done"] => l.is_done = true,
            ["FAIL", ..] => l.failure = Some(rest.to_string()),
            _ => {}
        }
    }
    l
}

/// Where the image is mounted in the guest.
const MOUNT_POINT: &str = "/disk";

/// A guest path as a path in the image.
fn in_image(path: &str) -> &str {
    path.strip_prefix(MOUNT_POINT).unwrap_or(path)
}

/// Every file listed reads back from `image` with its size and sum;
/// every removed name is gone.
fn compare_with_image(
    image: &Path,
    files: &BTreeMap<String, (u64, String)>,
    gone: &[String],
) -> Result<(), String> {
    let mut problems = Vec::new();
    for (path, (size, sum)) in files {
        match ext2::cat(image, in_image(path)) {
            Ok(bytes) if bytes.len() as u64 == *size && ext2::sha256_hex(&bytes) == *sum => {}
            Ok(bytes) => problems.push(format!(
                "{path}: the image holds {} bytes, sha256 {}; the guest wrote {size}, {sum}",
                bytes.len(),
                ext2::sha256_hex(&bytes)
            )),
            Err(e) => problems.push(e),
        }
    }
    for path in gone {
        if ext2::cat(image, in_image(path)).is_ok() {
            problems.push(format!("{path} was removed but is in the image"));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) }
}

/// The tree the host makes and the guest reads back: (path, bytes).
fn host_tree() -> Vec<(String, Vec<u8>)> {
    let bytes = |seed: u64, len: usize| -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 33) as u8
            })
            .collect()
    };
    let mut files = Vec::new();
    for (i, len) in
        [0usize, 1, 1023, 1024, 1025, 12 * 1024, 70_000, 300_000, 1_200_000].into_iter().enumerate()
    {
        files.push((format!("sizes/s{len}"), bytes(i as u64, len)));
    }
    for i in 0..150 {
        files.push((format!("many/m{i:03}"), bytes(1000 + i, (i as usize * 53) % 2000)));
    }
    let mut deep = String::from("deep");
    for level in 0..20 {
        deep.push_str(&format!("/l{level}"));
    }
    files.push((format!("{deep}/bottom"), b"the bottom of the tree\n".to_vec()));
    files
}

fn write_tree(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<(), String> {
    let _ = fs::remove_dir_all(dir);
    for (path, data) in files {
        let full = dir.join("host").join(path);
        fs::create_dir_all(full.parent().expect("a parent"))
            .map_err(|e| format!("{}: {e}", full.display()))?;
        fs::write(&full, data).map_err(|e| format!("{}: {e}", full.display()))?;
    }
    Ok(())
}

struct Boots<'a> {
    workspace: &'a Workspace,
    accel: AccelChoice,
    smp: u32,
    timeout: Duration,
    log_dir: &'a Path,
}

impl Boots<'_> {
    /// A batch boot of `commands` with `image` as the disk; its output.
    fn batch(
        &self,
        name: &str,
        image: &Path,
        cmdline: &str,
        commands: &str,
    ) -> Result<batch::BatchRun, String> {
        let opts = RunOptions {
            smp: self.smp,
            accel: self.accel,
            disk: DiskChoice::Image(image.to_path_buf()),
            cmdline: cmdline.to_string(),
            ..RunOptions::default()
        };
        let config = batch::prepare(self.workspace, &opts, commands, ImageKind::Test)?;
        let run = batch::boot(&config, self.timeout, false)?;
        let log = self.log_dir.join(format!("disk-{name}.log"));
        let _ = fs::write(&log, &run.transcript);
        match run.status {
            Some(0) => Ok(run),
            Some(status) => Err(format!(
                "the session ended with status {status} (log: {})\n{}",
                log.display(),
                tail(&run.output)
            )),
            None => Err(format!("the session did not report its end (log: {})", log.display())),
        }
    }
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// Every disk test: one [`Outcome`] each.
pub fn run(
    workspace: &Workspace,
    accel: AccelChoice,
    smp: u32,
    timeout_s: u64,
    log_dir: &Path,
    power_cuts: Option<usize>,
) -> Vec<Outcome> {
    let boots = Boots { workspace, accel, smp, timeout: Duration::from_secs(timeout_s), log_dir };
    let mut outcomes = vec![
        Outcome::step(
            "disk: a mke2fs -d image read back, then the workload: e2fsck clean, debugfs agrees",
            workload(&boots, ""),
        ),
        Outcome::step(
            "disk: the workload with nbuf=1, ext2.readwin=off and pci.msix=off (the INTx line): e2fsck clean, debugfs agrees",
            workload(&boots, "nbuf=1 ext2.readwin=off pci.msix=off"),
        ),
        Outcome::step("disk: a corrupt image is refused, unwritten, and the system answers", corrupt(&boots)),
        Outcome::step(
            "disk: a bad blk.wcache= boot option refuses the mount with the reason, nothing written",
            bad_write_cache_option(&boots),
        ),
        Outcome::step(
            "disk: a bad ext2.readwin= boot option refuses the mount with the reason, nothing written",
            bad_boot_option(&boots, "readwin", "ext2.readwin"),
        ),
        Outcome::step(
            "disk: a bad ext2.journal= boot option refuses the mount with the reason, nothing written",
            bad_boot_option(&boots, "journal", "ext2.journal"),
        ),
        Outcome::step(
            "disk: virtio-blk killed under writes: the manager keeps its cache, e2fsck clean, every file as written",
            driver_restart(&boots),
        ),
        Outcome::step(
            "disk: an idle volume's dirty blocks are written without sync; a restart leaves no process behind",
            idle_write_back(&boots),
        ),
        Outcome::step(
            "disk: a reader's read window after its manager was ended gives EIO, not its bytes",
            dead_manager_window(&boots),
        ),
    ];
    let cut_points: Vec<usize> = match power_cuts {
        None => CI_CUT_POINTS.to_vec(),
        // Spread over the workload, from the first file to the last.
        Some(n) => (0..n).map(|i| 1 + i * (CUT_WORKLOAD_FILES - 2) / n.max(1)).collect(),
    };
    for &k in &cut_points {
        outcomes.push(Outcome::step(
            &format!("disk: power cut after fsync {k}: nothing lost"),
            power_cut(&boots, k, false),
        ));
    }
    // The same on an ext3 volume whose journal `fsync` commits through
    // (branch `jbd`): the next boot replays it. One cut in CI (the
    // second), each of `--power-cuts N`'s otherwise.
    let journal_cuts = if power_cuts.is_some() { &cut_points[..] } else { &cut_points[1..] };
    for &k in journal_cuts {
        outcomes.push(Outcome::step(
            &format!(
                "disk: power cut after fsync {k} on ext3: the next boot replays the journal, nothing lost"
            ),
            power_cut(&boots, k, true),
        ));
    }
    outcomes
}

/// The vectors (or lines) of the virtio-blk driver's starts in a boot's
/// `transcript`, each checked to be by `path` (`msix` or `line`), and
/// `starts` of them.
fn interrupt_paths(transcript: &str, path: &str, starts: usize) -> Result<Vec<String>, String> {
    const BANNER: &str = "virtio-blk: /dev/vda interrupts by ";
    let found: Vec<&str> = transcript.lines().filter_map(|l| l.trim().strip_prefix(BANNER)).collect();
    if found.len() != starts || !found.iter().all(|f| f.starts_with(path)) {
        return Err(format!(
            "expected {starts} virtio-blk start(s) with interrupts by {path}, the console says {found:?}"
        ));
    }
    Ok(found.iter().map(|f| f.rsplit(' ').next().unwrap_or("").to_string()).collect())
}

/// Test 1 (and 2, with `cmdline` = `nbuf=1`, scaled down).
fn workload(boots: &Boots, cmdline: &str) -> Result<(), String> {
    let small = !cmdline.is_empty();
    let name = if small { "nbuf1" } else { "workload" };
    let image = boots.log_dir.join(format!("disk-{name}.img"));
    let tree = host_tree();
    let from = boots.log_dir.join(format!("disk-{name}-tree"));
    // Read windows (`ext2.readwin`, on by default) in the full boot, the
    // plain path in the small one: `disktest readwin` checks what POSIX
    // asks of reads either way.
    let windows = if cmdline.contains("ext2.readwin=off") { "off" } else { "on" };
    let commands = if small {
        format!("/bin/{PROGRAM} workload /disk/w small && /bin/{PROGRAM} readwin /disk/rw {windows}")
    } else {
        write_tree(&from, &tree)?;
        format!(
            "/bin/{PROGRAM} sums /disk/host && /bin/{PROGRAM} workload /disk/w && /bin/{PROGRAM} readwin /disk/rw {windows}"
        )
    };
    ext2::make_image(&image, IMAGE_BYTES, (!small).then_some(from.as_path()))?;
    let run = boots.batch(name, &image, cmdline, &commands)?;
    // The interrupts took the path the boot asked for (MSI-X by default,
    // docs/devices.md "MSI-X"): the workload passing proves they arrive.
    let path = if cmdline.contains("pci.msix=off") { "line" } else { "msix" };
    interrupt_paths(&run.transcript, path, 1)?;
    let listing = parse_listing(&run.output);
    if let Some(why) = listing.failure {
        return Err(why);
    }
    let passed = format!("{LINE_PREFIX}readwin passed, windows {windows}");
    if !run.output.lines().any(|l| l.trim() == passed) {
        return Err(format!("no `{passed}` line; the output ends:\n{}", tail(&run.output)));
    }
    if !small {
        // The host's tree, read back by the guest byte for byte.
        let mut problems = Vec::new();
        for (path, data) in &tree {
            let want = (data.len() as u64, ext2::sha256_hex(data));
            match listing.files.get(&format!("{MOUNT_POINT}/host/{path}")) {
                Some(got) if *got == want => {}
                Some(got) => {
                    problems.push(format!("host/{path}: the guest read {got:?}, the tree has {want:?}"))
                }
                None => problems.push(format!("host/{path}: not listed by the guest")),
            }
        }
        if !problems.is_empty() {
            return Err(problems.join("\n"));
        }
    }
    ext2::check(&image)?;
    // init's last sync marked the volume clean (`s_state`, issue 16).
    let bytes = fs::read(&image).map_err(|e| format!("{}: {e}", image.display()))?;
    if bytes[1024 + 58] & 1 == 0 {
        return Err("the volume is not marked clean after the session's last sync".to_string());
    }
    // The workload's own listing (the second `sums`, of /disk/w): its
    // files are those not under host/.
    let written: BTreeMap<String, (u64, String)> =
        listing.files.into_iter().filter(|(p, _)| p.starts_with(&format!("{MOUNT_POINT}/w/"))).collect();
    if written.len() < 20 || !listing.is_done {
        return Err(format!(
            "the workload listed {} files; the output ends:\n{}",
            written.len(),
            tail(&run.output)
        ));
    }
    compare_with_image(&image, &written, &listing.gone)
}

/// Test 3: an inode count past the inode tables.
fn corrupt(boots: &Boots) -> Result<(), String> {
    let image = boots.log_dir.join("disk-corrupt.img");
    ext2::make_image(&image, 8 << 20, None)?;
    let mut bytes = fs::read(&image).map_err(|e| format!("{}: {e}", image.display()))?;
    // s_inodes_count, at byte 1024 + 0.
    let count = u32::from_le_bytes(bytes[1024..1028].try_into().expect("4 bytes"));
    bytes[1024..1028].copy_from_slice(&(count + 8).to_le_bytes());
    fs::write(&image, &bytes).map_err(|e| format!("{}: {e}", image.display()))?;
    let run = boots.batch("corrupt", &image, "", "mount; echo the system answers")?;
    if run.output.contains(" /disk ") || !run.output.contains("the system answers") {
        return Err(format!("mount or the shell say otherwise:\n{}", run.output));
    }
    if !run.transcript.contains("not mounted: inode count") {
        return Err(format!("no refusal on the console:\n{}", tail(&run.transcript)));
    }
    let after = fs::read(&image).map_err(|e| format!("{}: {e}", image.display()))?;
    if after != bytes {
        return Err("the refused image was written to".to_string());
    }
    Ok(())
}

/// The boot option `blk.wcache` takes `auto`, `on` or `off`
/// (docs/kernel-options.md); another value refuses the mount, as a bad
/// `nbuf=` does: the reason on the console, no `/disk`, the shell still
/// answers, the image unwritten.
fn bad_write_cache_option(boots: &Boots) -> Result<(), String> {
    bad_boot_option(boots, "wcache", "blk.wcache")
}

/// A bad value of the disk manager's boot option `name` (`maybe`)
/// refuses the mount as [`bad_write_cache_option`] says. `ext2.readwin`
/// takes `on` or `off`.
fn bad_boot_option(boots: &Boots, tag: &str, name: &str) -> Result<(), String> {
    let image = boots.log_dir.join(format!("disk-{tag}.img"));
    ext2::make_image(&image, 8 << 20, None)?;
    let bytes = fs::read(&image).map_err(|e| format!("{}: {e}", image.display()))?;
    let option = format!("{name}=maybe");
    let run = boots.batch(tag, &image, &option, "mount; echo the system answers")?;
    if run.output.contains(" /disk ") || !run.output.contains("the system answers") {
        return Err(format!("mount or the shell say otherwise:\n{}", run.output));
    }
    if !run.transcript.contains(&format!("bad boot option {option}")) {
        return Err(format!("no refusal on the console:\n{}", tail(&run.transcript)));
    }
    let after = fs::read(&image).map_err(|e| format!("{}: {e}", image.display()))?;
    if after != bytes {
        return Err("the refused image was written to".to_string());
    }
    Ok(())
}

/// Test 5 (issue 16): the disk's driver killed while `disktest cuts`
/// writes on `/disk/p` (files `fsync`ed and files not, renames, removals,
/// directories; a second after it starts: wherever the kill falls, what
/// is checked holds). The manager keeps its cache and gets the restarted
/// driver from the monitor (no new mount), and no call fails: descriptor
/// calls wait, the monitor's are sent again (`ERESTART`,
/// servers/ext2fs/src/disk.rs). `disktest cuts /disk/q` then writes its
/// files too, the session syncs and lists every file on `/disk` with its
/// checksum, and after the power-off:
/// - both runs wrote and `fsync`ed all their files;
/// - `e2fsck -fn` is clean, counts included (nothing the old driver's
///   death interrupted was lost: the manager wrote it to the new one);
/// - every file listed reads back from the image as the guest read it,
///   and is the bytes `disktest` wrote (its pattern, by name).
///
/// "Back" is the driver running again (`service kill` returns once init
/// is asked) and then a file written and `fsync`ed.
fn driver_restart(boots: &Boots) -> Result<(), String> {
    let image = boots.log_dir.join("disk-restart.img");
    ext2::make_image(&image, 16 << 20, None)?;
    let commands = format!(
        "/bin/{PROGRAM} cuts /disk/p &\n\
         sleep 1\n\
         service kill virtio-blk\n\
         wait\n\
         n=0; until service status virtio-blk | grep -q 'running pid .* restarts [1-9]'; do n=$((n+1)); [ $n -lt 120 ] || break; sleep 1; done\n\
         n=0; until echo after > /disk/after && sync /disk/after; do n=$((n+1)); [ $n -lt 120 ] || break; sleep 1; done\n\
         /bin/{PROGRAM} cuts /disk/q\n\
         sync\n\
         /bin/{PROGRAM} sums /disk\n"
    );
    let run = boots.batch("restart", &image, "", &commands)?;
    // Both drivers took MSI-X, and the restarted one the vector the dead
    // one had: freed at its death, not leaked (kernel-core/src/msix.rs
    // gives the first free vector).
    let vectors = interrupt_paths(&run.transcript, "msix", 2)?;
    if vectors[0] != vectors[1] {
        return Err(format!(
            "the restarted driver got vector {}, the dead one had {}",
            vectors[1], vectors[0]
        ));
    }
    if !run
        .transcript
        .contains("monitor: /disk: its manager has the restarted driver of /dev/vda; nothing was lost")
    {
        return Err(format!("the manager never got the restarted driver:\n{}", tail(&run.transcript)));
    }
    if run.transcript.contains("mounted again from") || run.transcript.contains("its manager is ended") {
        return Err(format!("the manager was ended and /disk mounted again:\n{}", tail(&run.transcript)));
    }
    let listing = parse_listing(&run.output);
    if let Some(why) = &listing.failure {
        return Err(format!("a call failed across the restart: {why}"));
    }
    for dir in ["/disk/p/", "/disk/q/"] {
        let n = listing.fsynced.keys().filter(|p| p.starts_with(dir)).count();
        if n != CUT_WORKLOAD_FILES {
            return Err(format!(
                "{n} of {CUT_WORKLOAD_FILES} files fsynced in {dir}; the output ends:\n{}",
                tail(&run.output)
            ));
        }
    }
    ext2::check(&image).map_err(|e| format!("after the restart: {e}"))?;
    let listed: BTreeMap<String, (u64, String)> = listing
        .files
        .iter()
        .filter(|(p, _)| p.starts_with("/disk/p/") || p.starts_with("/disk/q/"))
        .map(|(p, v)| (p.clone(), v.clone()))
        .collect();
    if !listing.is_done || listed.len() < CUT_WORKLOAD_FILES {
        return Err(format!("the final listing has {} files:\n{}", listed.len(), tail(&run.output)));
    }
    compare_with_image(&image, &listed, &[])?;
    for (path, (size, sum)) in &listed {
        let name = path.rsplit('/').next().unwrap_or("");
        let Some(want) = cuts_bytes(name) else { return Err(format!("{path}: not a file disktest writes")) };
        if (want.len() as u64, ext2::sha256_hex(&want)) != (*size, sum.clone()) {
            return Err(format!("{path}: {size} bytes, sha256 {sum}: not what disktest wrote"));
        }
    }
    // What was fsynced before and after the kill is what was read back.
    for (path, got) in &listing.fsynced {
        if listing.files.get(path) != Some(got) {
            return Err(format!("{path}: fsynced as {got:?}, listed as {:?}", listing.files.get(path)));
        }
    }
    Ok(())
}

/// The bytes `disktest cuts` writes to the file called `name`
/// (tests/disktest: `f<i>`, `s<i>`, and `old<i>`, the renamed
/// `s<i-1>`); `None` for another name.
fn cuts_bytes(name: &str) -> Option<Vec<u8>> {
    let number = |prefix: &str| name.strip_prefix(prefix)?.parse::<u64>().ok();
    let (seed, len) = if let Some(i) = number("f") {
        (1000 + i, 1_000 + (i as usize * 7919) % 40_000)
    } else if let Some(i) = number("s") {
        (5000 + i, 3_000)
    } else if let Some(i) = number("old") {
        (5000 + i.checked_sub(1)?, 3_000)
    } else {
        return None;
    };
    // tests/disktest's `pattern`.
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    Some(
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect(),
    )
}

/// The value of `kinfo`'s last `/disk:NAME = N` line in `output`.
fn disk_counter(output: &str, name: &str) -> Option<u64> {
    let key = format!("{MOUNT_POINT}:{name} = ");
    output.lines().rev().find_map(|l| l.trim().strip_prefix(key.as_str())?.trim().parse().ok())
}

/// The `disktest procs` counts in `output`, in order.
fn process_counts(output: &str) -> Vec<u64> {
    output
        .lines()
        .filter_map(|l| l.trim().strip_prefix("disktest: processes ")?.trim().parse().ok())
        .collect()
}

/// Test 6: a file written, then 12 s of guest time with no request to the
/// volume (`sleep` and `kinfo` come from memfs): 5 s of expiry, then a
/// pass a second for the blocks that waited for others (data, then the
/// inode, then the entry), with slack. Without the timer nothing would be
/// written until the next request: `kinfo`'s stats request is answered
/// before the pass it triggers, so it would see the blocks dirty.
fn idle_write_back(boots: &Boots) -> Result<(), String> {
    let image = boots.log_dir.join("disk-idle.img");
    ext2::make_image(&image, 8 << 20, None)?;
    let commands = format!(
        "echo idle data > /disk/idle\n\
         sleep 12\n\
         kinfo\n\
         /bin/{PROGRAM} procs\n\
         service kill virtio-blk\n\
         n=0; until service status virtio-blk | grep -q 'running pid .* restarts [1-9]'; do n=$((n+1)); [ $n -lt 120 ] || break; sleep 1; done\n\
         n=0; until echo after > /disk/after && sync /disk/after; do n=$((n+1)); [ $n -lt 120 ] || break; sleep 1; done\n\
         sleep 3\n\
         /bin/{PROGRAM} procs\n"
    );
    let run = boots.batch("idle", &image, "", &commands)?;
    let dirty = disk_counter(&run.output, "dirty_blocks");
    let expired = disk_counter(&run.output, "expired_transfers");
    let written = disk_counter(&run.output, "blocks_written");
    match (dirty, expired, written) {
        (Some(0), Some(e), Some(w)) if e > 0 && w > 0 => {}
        _ => {
            return Err(format!(
                "after 12 idle seconds: dirty_blocks {dirty:?}, expired_transfers {expired:?}, blocks_written {written:?} (want 0, > 0, > 0); the output ends:\n{}",
                tail(&run.output)
            ));
        }
    }
    // The manager keeps its volume across the restart (test 5); either
    // way the driver came back before the second count.
    if !run.transcript.contains("monitor: /disk: its manager has the restarted driver of /dev/vda")
        && !run.transcript.contains("monitor: /disk mounted again from /dev/vda")
    {
        return Err(format!("/disk never got the restarted driver:\n{}", tail(&run.transcript)));
    }
    match process_counts(&run.output)[..] {
        [before, after] if before == after => Ok(()),
        ref counts => Err(format!(
            "live processes before the driver's kill and after the remount: {counts:?} (want two equal counts); the output ends:\n{}",
            tail(&run.output)
        )),
    }
}

/// Test 7 (branch `posio`): `disktest deadwin` holds a read window of a
/// file on `/disk`, kills the disk's driver until init gives it up (the
/// monitor then ends the volume's manager), waits until a call on its
/// descriptor says `EIO`, and reads inside the window: `EIO` again, not
/// the bytes the window held (the kernel zeroes a dead pager's
/// read-window pages; docs/filesystem.md, "Positional I/O and a dead
/// manager's window"). Nothing of the image is checked: what the ended
/// manager had not written is lost, as in a power cut (test 4).
fn dead_manager_window(boots: &Boots) -> Result<(), String> {
    let image = boots.log_dir.join("disk-deadwin.img");
    ext2::make_image(&image, 8 << 20, None)?;
    let run = boots.batch("deadwin", &image, "", &format!("/bin/{PROGRAM} deadwin /disk/deadwin\n"))?;
    let listing = parse_listing(&run.output);
    if let Some(why) = &listing.failure {
        return Err(format!("{why}; the output ends:\n{}", tail(&run.output)));
    }
    if !listing.is_done || !run.output.contains("disktest: deadwin: EIO, not the window's bytes") {
        return Err(format!("disktest deadwin did not finish; the output ends:\n{}", tail(&run.output)));
    }
    if !run.transcript.contains("its manager is ended") {
        return Err(format!("the monitor never ended the manager:\n{}", tail(&run.transcript)));
    }
    Ok(())
}

/// The journal superblock's sequence number (`dumpe2fs -h`).
fn journal_sequence(image: &Path) -> Result<u64, String> {
    let out = std::process::Command::new(ext2::program("dumpe2fs")?)
        .arg("-h")
        .arg(image)
        .output()
        .map_err(|e| format!("cannot run dumpe2fs: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("Journal sequence:"))
        .and_then(|v| u64::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok())
        .ok_or(format!("dumpe2fs -h {}: no journal sequence", image.display()))
}

/// Test 4: kill QEMU right after the `k`-th `fsynced` line. With
/// `journal`, on an ext3 volume (`fsync` commits through its journal,
/// `ext2.journal=on` by default): the cut image is booted again, whose
/// mount replays the journal (said on the console when the cut left it
/// marked `needs_recovery`), and the checks are made on what that boot
/// left.
fn power_cut(boots: &Boots, k: usize, journal: bool) -> Result<(), String> {
    let tag = if journal { "jcut" } else { "cut" };
    let image = boots.log_dir.join(format!("disk-{tag}{k}.img"));
    if journal {
        ext2::make_image_with_journal(&image, 16 << 20, None)?;
    } else {
        ext2::make_image(&image, 16 << 20, None)?;
    }
    let opts = RunOptions {
        smp: boots.smp,
        accel: boots.accel,
        disk: DiskChoice::Image(image.clone()),
        ..RunOptions::default()
    };
    let config =
        batch::prepare(boots.workspace, &opts, &format!("/bin/{PROGRAM} cuts /disk/p"), ImageKind::Test)?;
    let mut command = config.to_command()?;
    command.stdout(Stdio::piped()).stderr(Stdio::null()).stdin(Stdio::null());
    let mut child = command.spawn().map_err(|e| format!("cannot start QEMU: {e}"))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let deadline = Instant::now() + boots.timeout;
    let mut transcript = String::new();
    let mut seen = 0;
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    while seen < k && Instant::now() < deadline {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line).replace('\r', "");
        if text.contains("disktest: fsynced ") {
            seen += 1;
        }
        transcript.push_str(&text);
    }
    // The cut: no shutdown, no sync; a little after the fsync (0 to 99 ms,
    // by the cut point), so that it falls among the unsynced changes that
    // follow it.
    std::thread::sleep(Duration::from_millis((k as u64 * 37) % 100));
    let _ = child.kill();
    let _ = child.wait();
    let _ = fs::write(boots.log_dir.join(format!("disk-{tag}{k}.log")), &transcript);
    if seen < k {
        return Err(format!("only {seen} fsynced lines before the end:\n{}", tail(&transcript)));
    }
    let listing = parse_listing(&transcript);
    if journal {
        let bytes = fs::read(&image).map_err(|e| format!("{}: {e}", image.display()))?;
        // `needs_recovery` (incompatible feature 0x4, s_feature_incompat
        // at byte 96 of the superblock).
        let needs_recovery = bytes[1024 + 96] & 4 != 0;
        let run = boots.batch(&format!("jcut{k}-after"), &image, "", "ls /disk/p")?;
        let replayed = run.transcript.contains("journal replayed");
        if needs_recovery && !replayed {
            return Err(format!(
                "the cut left needs_recovery set but the next boot did not replay:\n{}",
                tail(&run.transcript)
            ));
        }
        if !needs_recovery && journal_sequence(&image)? <= 1 {
            // Not even emptied by a checkpoint since: no transaction was
            // ever written (mke2fs starts the sequence at 1).
            return Err("the journal was never written: the commit path was not used".to_string());
        }
    }
    let harmful = ext2::harmful_complaints(&image)?;
    if !harmful.is_empty() {
        return Err(format!("e2fsck -fn after the cut: {}", harmful.join("\n")));
    }
    compare_with_image(&image, &listing.fsynced, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test 5 alone (slow: `cargo test -p xtask -- --ignored
    /// boot_the_driver_restart_test --nocapture`).
    #[test]
    #[ignore]
    fn boot_the_driver_restart_test() {
        with_boots(|boots, log_dir| {
            driver_restart(boots).unwrap();
            // What e2fsck says, harmless or not, for the record.
            let _ = ext2::check(&log_dir.join("disk-restart.img")).map_err(|e| println!("{e}"));
        });
    }

    /// Test 7 alone (`cargo test -p xtask -- --ignored
    /// boot_the_dead_manager_window_test --nocapture`).
    #[test]
    #[ignore]
    fn boot_the_dead_manager_window_test() {
        with_boots(|boots, _| dead_manager_window(boots).unwrap());
    }

    /// Test 4 on ext3 alone, one cut (`cargo test -p xtask -- --ignored
    /// boot_the_journal_power_cut_test --nocapture`).
    #[test]
    #[ignore]
    fn boot_the_journal_power_cut_test() {
        with_boots(|boots, _| power_cut(boots, CI_CUT_POINTS[1], true).unwrap());
    }

    /// Test 6 alone (`cargo test -p xtask -- --ignored
    /// boot_the_idle_write_back_test --nocapture`).
    #[test]
    #[ignore]
    fn boot_the_idle_write_back_test() {
        with_boots(|boots, _| idle_write_back(boots).unwrap());
    }

    /// Tests 1 and 2 alone (`cargo test -p xtask -- --ignored
    /// boot_the_workload_tests --nocapture`): read windows on, then off.
    #[test]
    #[ignore]
    fn boot_the_workload_tests() {
        with_boots(|boots, _| {
            workload(boots, "").unwrap();
            workload(boots, "nbuf=1 ext2.readwin=off").unwrap();
        });
    }

    /// The boots of a single test run alone: 2 CPUs, 600 s, logs in
    /// `target/ktest`.
    fn with_boots(f: impl FnOnce(&Boots, &Path)) {
        let workspace = Workspace::load().unwrap();
        let log_dir = workspace.target_dir.join("ktest");
        fs::create_dir_all(&log_dir).unwrap();
        let boots = Boots {
            workspace: &workspace,
            accel: AccelChoice::Auto,
            smp: 2,
            timeout: Duration::from_secs(600),
            log_dir: &log_dir,
        };
        f(&boots, &log_dir);
    }

    #[test]
    fn kinfo_counters_and_process_counts_are_parsed() {
        let out = "/disk:dirty_blocks = 7\n/disk:dirty_blocks = 0\r\n/diskx:hits = 3\n\
                   disktest: processes 31\ndisktest: processes 31\n";
        assert_eq!(disk_counter(out, "dirty_blocks"), Some(0));
        assert_eq!(disk_counter(out, "hits"), None);
        assert_eq!(process_counts(out), vec![31, 31]);
    }

    #[test]
    fn cuts_bytes_are_disktests_patterns() {
        // f00 is 1,000 bytes of pattern 1000; old05 is s04's bytes.
        assert_eq!(cuts_bytes("f00").map(|b| b.len()), Some(1_000));
        assert_eq!(cuts_bytes("f01").map(|b| b.len()), Some(1_000 + 7919));
        assert_eq!(cuts_bytes("old05"), cuts_bytes("s04"));
        assert_ne!(cuts_bytes("s04"), cuts_bytes("s05"));
        assert_eq!(cuts_bytes("after"), None);
        assert_eq!(cuts_bytes("old00"), None);
    }

    #[test]
    fn listings_are_parsed_from_the_guest_lines() {
        let out =
            "disktest: file a 5 abc\nnoise\ndisktest: gone b\ndisktest: fsynced f00 7 def\ndisktest: done\n";
        let l = parse_listing(out);
        assert_eq!(l.files.get("a"), Some(&(5, "abc".to_string())));
        assert_eq!(l.fsynced.get("f00"), Some(&(7, "def".to_string())));
        assert_eq!(l.gone, vec!["b".to_string()]);
        assert!(l.is_done && l.failure.is_none());
        assert!(parse_listing("disktest: FAIL write x: EIO").failure.is_some());
    }

    #[test]
    fn the_host_tree_reaches_double_indirect_blocks_and_a_deep_tree() {
        let tree = host_tree();
        assert!(tree.iter().any(|(_, d)| d.len() > (12 + 256) * 1024));
        assert!(tree.iter().any(|(p, _)| p.matches('/').count() > 20));
        assert_eq!(tree.iter().filter(|(p, _)| p.starts_with("many/")).count(), 150);
    }
}
