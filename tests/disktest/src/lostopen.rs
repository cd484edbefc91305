//! `disktest lostopen DIR` (branch `robust`, docs/reliability.md "The file
//! paths' dead peers"): what a process's descriptors say when the
//! volume's manager ends under them, and after the volume is mounted
//! again by a new manager.
//!
//! 1. **An open lost with its manager.** A child creates file after file
//!    in DIR (`O_CREAT | O_EXCL` of names the monitor never looked up:
//!    each is passed on to `ext2fs`, `fs::OP_OPEN_FORWARDED`, which
//!    answers the child itself), closing each before the next, while the
//!    parent kills the disk's driver until init gives it up and the
//!    monitor ends the manager. A create the manager held then (it waits
//!    for the driver, and with `nbuf=1` nearly every create needs it)
//!    fails in the kernel. The descriptor the monitor recorded for it
//!    before passing it on must be gone: the child's next open gets the
//!    number the lost one had. Before the fix it stayed, naming the dead
//!    manager, until the child ended (its number taken, inherited by
//!    children). Every create before must get the first one's number:
//!    while the driver was down between kills, `ext2fs` answered a
//!    forwarded create `ERESTART` (meant for the monitor's own calls),
//!    the runtime asked again, and each answer left the monitor holding
//!    one more descriptor the child never had (from fd 3 to 63 in one
//!    run). Whether the manager held a create at that instant is
//!    the child's luck; the monitor says when it dropped a lost one
//!    (`monitor: ... lost with its manager`), which the host looks for.
//! 2. **A descriptor across the remount** (the brief's item 4): a file
//!    opened and `fsync`ed before the manager ended gives `EIO` to
//!    `read`, `write`, `pread` and `fstat` after it ended, and again once
//!    `service start virtio-blk` has the volume mounted by a new manager
//!    (never the new manager's bytes, nor another file's); its `close`
//!    succeeds and the monitor's count of open-file descriptions is back
//!    where it was; a fresh open reads the bytes `fsync` kept.
//!
//! It leaves the volume mounted again: other commands may follow.

use super::{Outcome, fail, pattern, write_file};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use protocols::init::state;
use protocols::unix::errno::EIO;
use protocols::unix::open_flags::{O_CREAT, O_EXCL, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY};
use protocols::unix::{self as ux, monitor};
use runtime::msg;
use runtime::unix::{self, Fd};

/// The disk's driver (init's name for it).
const DRIVER: &str = "virtio-blk";
/// Polls of init's state (20 ms apart) before giving up on it: a minute.
const POLLS: u32 = 3000;
/// Creates the child makes at most (it ends at its first failure).
const MOST_CREATES: u64 = 100_000;
/// Bytes of the file kept open across the remount.
const KEPT_BYTES: usize = 20_000;

/// The monitor's count of open-file descriptions (`OP_STATS` word 3).
fn open_descriptions() -> Result<u64, String> {
    let (pid, queue) =
        runtime::sys::bootstrap(abi::bootstrap::MONITOR).ok_or_else(|| String::from("no monitor"))?;
    let link =
        msg::open_link(pid, msg::Queue(queue)).map_err(|e| format!("link to the monitor: {}", e.name()))?;
    let r = msg::call(link, &[monitor::OP_STATS, 0, 0, 0], &[], &mut []);
    let _ = msg::close_link(link);
    let (w, _) = r.map_err(|e| format!("monitor OP_STATS: {}", e.name()))?;
    ux::result(w[0]).map_err(|e| format!("monitor OP_STATS: {}", e.name()))?;
    Ok(w[3])
}

/// Each of `read`, `write`, `pread`, `pwrite` and `fstat` on `fd` must
/// be `EIO`.
fn all_eio(fd: Fd, when: &str) -> Outcome {
    let mut buf = [0u8; 64];
    let results = [
        ("read", unix::read(fd, &mut buf).map(|n| n as u64)),
        ("write", unix::write(fd, b"stale").map(|n| n as u64)),
        ("pread", unix::pread(fd, &mut buf, 0).map(|n| n as u64)),
        ("pwrite", unix::pwrite(fd, b"stale", 0).map(|n| n as u64)),
        ("fstat", unix::fstat(fd).map(|st| st.size_bytes)),
    ];
    for (call, r) in results {
        match r {
            Err(e) if e == EIO => {}
            Err(e) => {
                return Err(format!(
                    "lostopen: {call} of the kept descriptor {when}: {}, expected EIO",
                    e.name()
                ));
            }
            Ok(v) => {
                return Err(format!(
                    "lostopen: {call} of the kept descriptor {when} succeeded ({v}), expected EIO"
                ));
            }
        }
    }
    Ok(())
}

/// Kill the disk's driver each time init has it running, until init
/// gives it up (`unix_core::restart::INIT_POLICY`'s quick deaths); the
/// monitor then ends the volume's manager.
fn kill_driver_for_good() -> Outcome {
    let mut killed = 0;
    let mut last = [0u64; 4];
    for _ in 0..POLLS {
        last = unix::server_status(DRIVER).map_err(|e| fail("service status", DRIVER, e))?;
        if last[0] == state::GAVE_UP {
            return Ok(());
        }
        // Each instance once: init may not have seen the last kill yet.
        if last[0] == state::RUNNING && last[1] != 0 && last[1] != killed {
            unix::server_kill(DRIVER).map_err(|e| fail("service kill", DRIVER, e))?;
            killed = last[1];
        } else {
            unix::sleep_ns(20_000_000);
        }
    }
    Err(format!("lostopen: init did not give {DRIVER} up: {last:?}"))
}

/// The creating child: file after file until one fails, each closed
/// (and the close sent as a call of its own, `getppid` flushing it, so
/// that no close rides on the next open and the runtime's own close
/// after a failed open cannot hide what is checked); then an open of
/// `/dev/null`, whose number must be the one the failed open would have
/// had. Writes `[creates, errno, that number, /dev/null's]` to `report`
/// and exits 0 (or 3: no create failed; 4: a create got another number
/// than the first, `[creates, 0, the first's, its]` written).
fn creator(dir: &str, report: Fd) -> i32 {
    let mut number = u64::MAX;
    for i in 0..MOST_CREATES {
        let path = format!("{dir}/c{i}");
        match unix::open(&path, O_CREAT | O_WRONLY | O_EXCL, 0o644) {
            Ok(fd) => {
                if i == 0 {
                    let _ = unix::write(report, &[0u8; 8]);
                }
                // Each closed before the next: every one gets the first's
                // number, unless the monitor holds descriptors the child
                // never had.
                if i > 0 && fd as u64 != number {
                    let words = [i, 0, number, fd as u64];
                    let bytes: alloc::vec::Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                    let _ = unix::write(report, &bytes);
                    return 4;
                }
                number = fd as u64;
                let _ = unix::close(fd);
                let _ = unix::getppid();
            }
            Err(e) => {
                let probe = unix::open("/dev/null", O_RDONLY, 0).map_or(u64::MAX, |fd| fd as u64);
                let words = [i, e.0, number, probe];
                let bytes: alloc::vec::Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                let _ = unix::write(report, &bytes);
                return 0;
            }
        }
    }
    3
}

fn read_words(fd: Fd, words: &mut [u64]) -> Outcome {
    let mut bytes = vec![0u8; words.len() * 8];
    let mut done = 0;
    while done < bytes.len() {
        match unix::read(fd, &mut bytes[done..]) {
            Ok(0) => return Err(String::from("lostopen: the creating child ended without a report")),
            Ok(n) => done += n,
            Err(e) => return Err(fail("read", "the child's report", e)),
        }
    }
    for (w, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
        *w = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
    }
    Ok(())
}

pub fn lostopen(dir: &str) -> Outcome {
    unix::mkdir(dir, 0o755).map_err(|e| fail("mkdir", dir, e))?;
    let kept_path = format!("{dir}/kept");
    let data = pattern(97, KEPT_BYTES);
    write_file(&kept_path, O_CREAT | O_WRONLY | O_TRUNC, &data)?;
    // Opened without O_CREAT, the name not looked up: the monitor's
    // open-then-check path (`files::open_then_check`).
    let kept = unix::open(&kept_path, O_RDWR, 0).map_err(|e| fail("open", &kept_path, e))?;
    unix::fsync(kept).map_err(|e| fail("fsync", &kept_path, e))?;
    let mut head = [0u8; 100];
    let n = unix::read(kept, &mut head).map_err(|e| fail("read", &kept_path, e))?;
    if head[..n] != data[..100] {
        return Err(String::from("lostopen: the kept file reads other bytes before anything ended"));
    }
    let _ = unix::getppid();
    let baseline = open_descriptions()?;
    // 1. The creating child, started before the driver's first kill.
    let (report_r, report_w) = unix::pipe().map_err(|e| fail("pipe", "", e))?;
    let child = unix::fork().map_err(|e| fail("fork", "", e))?;
    if child == 0 {
        let _ = unix::close(report_r);
        let _ = unix::close(kept);
        unix::exit(creator(dir, report_w));
    }
    let _ = unix::close(report_w);
    let mut started = [0u64; 1];
    read_words(report_r, &mut started)?;
    kill_driver_for_good()?;
    let mut words = [0u64; 4];
    let reported = read_words(report_r, &mut words);
    let _ = unix::close(report_r);
    let status = unix::waitpid(child as i64, false).map_err(|e| fail("waitpid", "the creating child", e))?;
    reported?;
    let [creates, e, number, probe] = words;
    let code = status.and_then(|(_, st)| st.exit_code());
    if code == Some(4) {
        return Err(format!(
            "lostopen: create {creates} got fd {probe} where every earlier one got {number}: the monitor holds descriptors the child never had (creates answered while the driver restarted)"
        ));
    }
    runtime::println!(
        "disktest: lostopen: create {creates} failed: {}; the next open got fd {probe} (the failed one's: {number})",
        ux::Errno(e).name()
    );
    if code != Some(0) {
        return Err(format!("lostopen: the creating child ended with {status:?}"));
    }
    if probe != number {
        return Err(format!(
            "lostopen: after create {creates} failed ({}), the next open got fd {probe}, not {number}: the monitor kept a descriptor the process never had",
            ux::Errno(e).name()
        ));
    }
    // 2. The kept descriptor, its manager ended.
    let mut gone = false;
    for _ in 0..POLLS {
        match unix::fstat(kept) {
            Err(e) if e == EIO => {
                gone = true;
                break;
            }
            _ => unix::sleep_ns(20_000_000),
        }
    }
    if !gone {
        return Err(String::from("lostopen: fstat of the kept descriptor never said EIO"));
    }
    all_eio(kept, "after its manager ended")?;
    // Mounted again by a new manager: `service start` has init start a
    // driver again; the monitor mounts the volume from it.
    unix::server_start(DRIVER).map_err(|e| fail("service start", DRIVER, e))?;
    let mut fresh = None;
    for _ in 0..POLLS {
        if let Ok(fd) = unix::open(&kept_path, O_RDONLY, 0) {
            fresh = Some(fd);
            break;
        }
        unix::sleep_ns(20_000_000);
    }
    let fresh = fresh.ok_or_else(|| String::from("lostopen: the volume was never mounted again"))?;
    all_eio(kept, "after the volume was mounted again")?;
    let mut back = vec![0u8; KEPT_BYTES + 1];
    let mut done = 0;
    loop {
        match unix::read(fresh, &mut back[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) => return Err(fail("read", "the kept file, opened again", e)),
        }
    }
    if back[..done] != data[..] {
        return Err(format!("lostopen: the kept file reads {done} other bytes after the remount"));
    }
    unix::close(kept).map_err(|e| fail("close", "the kept descriptor", e))?;
    unix::close(fresh).map_err(|e| fail("close", "the fresh descriptor", e))?;
    let _ = unix::getppid();
    let after = open_descriptions()?;
    // The kept descriptor was counted in the baseline; the pipe's ends
    // and the child's are gone.
    if after + 1 != baseline {
        return Err(format!(
            "lostopen: the monitor holds {after} open-file descriptions, expected {} (the kept one closed)",
            baseline - 1
        ));
    }
    runtime::println!(
        "disktest: lostopen: every call on the kept descriptor said EIO, before and after the remount"
    );
    Ok(())
}
