//! Restarting dead drivers (docs/reliability.md, "Restarting dead servers
//! and drivers"): init supervises the drivers whose init-file line says
//! `restart`, and `unix::server_kill` (root only, through the monitor)
//! has init end one as a fault would.
//!
//! What is checked: a reader looping on `/dev/ram0` or `/dev/vda` when its
//! driver is killed gets `EIO` (never a hang), and a fresh `open` of the
//! same name reaches the new instance (init made the entry again, the
//! monitor looked it up again): the RAM disk comes back empty (its disk
//! was its memory), the virtio disk with the data written before; a
//! driver that faults at once on every start is given up after the
//! back-off and the system lives; only root may ask, bad names are
//! refused, and a server whose line does not say `restart` is not ended.
//!
//! Each test waits for asynchronous events (a restart) by polling init's
//! status with a generous bound that only keeps a broken system from
//! hanging the run; nothing is timed.

use crate::ensure;
use crate::util::*;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use protocols::init::state;
use protocols::unix::errno::{EINVAL, EIO, ENOENT, EPERM};
use protocols::unix::open_flags::{O_RDONLY, O_RDWR};
use runtime::unix::{self, Fd, SEEK_END, SEEK_SET};

/// Bytes of each read of the reader that loops (whole blocks).
const READ_BYTES: usize = 64 * 1024;
/// Bytes of the pattern written and read back around a restart.
const PATTERN_BYTES: usize = 128 * 1024;
/// Polls of init's status (50 ms apart) before a restart counts as never
/// coming: 60 s, far beyond the back-off's 0.1 s.
const STATUS_POLLS: u32 = 1200;

fn status(name: &str) -> Result<[u64; 4], String> {
    unix::server_status(name).map_err(|e| format!("service status {name}: {}", e.name()))
}

/// Wait until init reports `name` running as a pid other than `old`.
fn wait_restarted(name: &str, old: u64) -> Result<[u64; 4], String> {
    let mut last = [0; 4];
    let back = poll_until(STATUS_POLLS, 50, || {
        last = status(name)?;
        Ok(last[0] == state::RUNNING && last[1] != 0 && last[1] != old)
    })?;
    ensure!(back, "{name} was not started again: init says {last:?}");
    Ok(last)
}

fn pattern(seed: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; PATTERN_BYTES];
    Stream::new(seed).fill(&mut bytes);
    bytes
}

fn write_at(device: &str, offset: u64, bytes: &[u8]) -> TestResult {
    let fd = unix::open(device, O_RDWR, 0).ctx(&format!("open {device}"))?;
    let done = unix::lseek(fd, offset as i64, SEEK_SET)
        .and_then(|_| write_all(fd, bytes))
        .ctx(&format!("write {device} at {offset}"));
    let _ = unix::close(fd);
    done
}

fn read_at(device: &str, offset: u64, len: usize) -> Result<Vec<u8>, String> {
    let fd = unix::open(device, O_RDONLY, 0).ctx(&format!("open {device}"))?;
    let mut buf = vec![0u8; len];
    let done = unix::lseek(fd, offset as i64, SEEK_SET).ctx("lseek").and_then(|_| read_exact(fd, &mut buf));
    let _ = unix::close(fd);
    done.map(|()| buf)
}

/// The device's size in bytes.
fn size_of(device: &str) -> Result<u64, String> {
    let fd = unix::open(device, O_RDONLY, 0).ctx(&format!("open {device}"))?;
    let size = unix::lseek(fd, 0, SEEK_END).ctx("lseek to the end");
    let _ = unix::close(fd);
    size
}

/// The reader's loop: reads `device` from the start until an error; exit
/// 0 for `EIO`, 2 for any other error, 3 if the reads never failed.
fn read_until_error(device: &str, started: Fd) -> i32 {
    let Ok(fd) = unix::open(device, O_RDONLY, 0) else { return 4 };
    let mut buf = vec![0u8; READ_BYTES];
    let mut told = false;
    // Bounded only so that a driver that is never killed cannot keep this
    // child forever; the parent kills the driver after the first read.
    for _ in 0..10_000_000u64 {
        let result = match unix::read(fd, &mut buf) {
            Ok(0) => unix::lseek(fd, 0, SEEK_SET).map(|_| 0),
            other => other,
        };
        match result {
            Ok(_) if !told => {
                told = unix::write(started, b"r").is_ok();
            }
            Ok(_) => {}
            Err(EIO) => return 0,
            Err(_) => return 2,
        }
    }
    3
}

/// Kill `driver` (init's name for the driver of `device`) while a child
/// loops reading `device`: the child must get `EIO`, and init must start
/// the driver again. Returns init's status of the new instance.
fn kill_under_a_reader(device: &'static str, driver: &str) -> Result<[u64; 4], String> {
    let before = status(driver)?;
    ensure!(before[0] == state::RUNNING, "{driver} is not running before the test: {before:?}");
    let (r, w) = unix::pipe().ctx("pipe")?;
    let reader = spawn(move || {
        let _ = unix::close(r);
        read_until_error(device, w)
    })?;
    let _ = unix::close(w);
    let mut one = [0u8; 1];
    let started = unix::read(r, &mut one);
    let _ = unix::close(r);
    if started != Ok(1) {
        let _ = unix::kill(reader as i64, protocols::unix::signal::SIGKILL);
        let _ = wait_for(reader);
        return Err(format!("the reader of {device} did not read once: {started:?}"));
    }
    unix::server_kill(driver).ctx(&format!("service kill {driver}"))?;
    let ended = wait_for(reader)?;
    ensure!(
        ended.exit_code() == Some(0),
        "the reader of {device} did not end with EIO when {driver} was killed: {} (2: another error, 3: no error)",
        describe(&ended)
    );
    let after = wait_restarted(driver, before[1])?;
    ensure!(after[2] > before[2], "{driver}'s restarts did not grow: {before:?} then {after:?}");
    Ok(after)
}

/// `/dev/ram0`'s driver killed under a reader (in PDDRIVER mode): `EIO`
/// for the reader; a new open reaches the new driver, whose disk is new
/// (zeros where the old one had data) and keeps what is written to it.
pub fn ramdisk_killed_under_a_reader_comes_back_empty() -> TestResult {
    const DEVICE: &str = "/dev/ram0";
    let offset = size_of(DEVICE)? / 2;
    let before = pattern(0x5eed_0001);
    write_at(DEVICE, offset, &before)?;
    ensure!(
        read_at(DEVICE, offset, PATTERN_BYTES)? == before,
        "the pattern did not read back before the kill"
    );
    // The reader asks for PDDRIVER mode (a call per read, as every other
    // driver's clients make): a RAMDRIVER-mode client copies from the
    // driver's memory mapped into its own space, with no call in flight
    // to fail; `ramdisk_killed_under_a_mapping_fails_it` covers it.
    kill_under_a_reader("/dev/ram0/pddriver", "ramdisk")?;
    let got = read_at(DEVICE, offset, PATTERN_BYTES)?;
    ensure!(got.iter().all(|&b| b == 0), "the restarted RAM disk is not empty where the old one had data");
    let after = pattern(0x5eed_0002);
    write_at(DEVICE, offset, &after)?;
    ensure!(read_at(DEVICE, offset, PATTERN_BYTES)? == after, "the restarted RAM disk did not keep a write");
    Ok(())
}

/// Bytes the mapping client of [`ramdisk_killed_under_a_mapping_fails_it`]
/// reads before the kill, each page of them mapped from the driver.
const MAPPED_BYTES: u64 = 16 << 20;

/// The mapping client's checks after the kill, each `EIO` (exit 0);
/// otherwise the exit code names the first that was not.
fn mapped_client_after_the_kill(fd: Fd, offset: u64) -> i32 {
    let mut block = vec![0u8; 4096];
    // Where it read before: its pages are still mapped, with the dead
    // driver's data.
    match unix::read(fd, &mut block) {
        Err(EIO) => {}
        Ok(_) => return 4,
        Err(_) => return 5,
    }
    match unix::write(fd, &block) {
        Err(EIO) => {}
        Ok(_) => return 6,
        Err(_) => return 7,
    }
    match unix::lseek(fd, offset as i64, SEEK_SET) {
        Err(EIO) => {}
        Ok(_) => return 8,
        Err(_) => return 9,
    }
    0
}

/// `/dev/ram0`'s driver killed while a client has its disk mapped
/// (RAMDRIVER mode, where the client copies from the driver's pages
/// mapped in its own space, with no call to fail). The client read
/// [`MAPPED_BYTES`] (so those pages are mapped) and waits; the driver is
/// killed and restarted; then the client's read where it read, a write,
/// and a seek must each be `EIO`: not the dead driver's data, not a
/// `SIGSEGV`, as for every call to a dead driver (docs/devices.md, "A
/// window outlives its driver"). Its mapped pages of the dead driver's
/// disk stay allocated while it lives (they are mapped in it) and are
/// freed when it ends: the free memory grows by at least
/// [`MAPPED_BYTES`] then. Before branch `drv` the read gave the old
/// data (exit 4).
pub fn ramdisk_killed_under_a_mapping_fails_it() -> TestResult {
    const DEVICE: &str = "/dev/ram0/ramdriver";
    let offset = size_of(DEVICE)? / 4;
    let (ready_r, ready_w) = unix::pipe().ctx("pipe")?;
    let (go_r, go_w) = unix::pipe().ctx("pipe")?;
    let client = spawn(move || {
        let _ = unix::close(ready_r);
        let _ = unix::close(go_w);
        let Ok(fd) = unix::open(DEVICE, O_RDWR, 0) else { return 1 };
        let data = pattern(0x5eed_0006);
        if unix::lseek(fd, offset as i64, SEEK_SET).is_err() || write_all(fd, &data).is_err() {
            return 2;
        }
        let mut buf = vec![0u8; READ_BYTES];
        let _ = unix::lseek(fd, offset as i64, SEEK_SET);
        for _ in 0..MAPPED_BYTES / READ_BYTES as u64 {
            if read_exact(fd, &mut buf).is_err() {
                return 3;
            }
        }
        let _ = unix::lseek(fd, offset as i64, SEEK_SET);
        if write_all(ready_w, b"r").is_err() {
            return 10;
        }
        let mut one = [0u8; 1];
        let _ = unix::read(go_r, &mut one);
        mapped_client_after_the_kill(fd, offset)
    })?;
    let _ = unix::close(ready_w);
    let _ = unix::close(go_r);
    let result = (|| -> TestResult {
        let mut one = [0u8; 1];
        let ready = unix::read(ready_r, &mut one);
        ensure!(ready == Ok(1), "the mapping client did not get ready: {ready:?}");
        let before = status("ramdisk")?;
        ensure!(before[0] == state::RUNNING, "ramdisk is not running before the test: {before:?}");
        unix::server_kill("ramdisk").ctx("service kill ramdisk")?;
        wait_restarted("ramdisk", before[1])?;
        Ok(())
    })();
    let held = settled_free_memory(None);
    let _ = write_all(go_w, b"k");
    let _ = unix::close(go_w);
    let _ = unix::close(ready_r);
    let ended = wait_for(client)?;
    result?;
    ensure!(
        ended.exit_code() == Some(0),
        "the mapping client after its driver was killed: {} (4: the read gave the dead driver's data; 6: the write went through; 8: the seek did)",
        describe(&ended)
    );
    let freed = settled_free_memory(None).saturating_sub(held);
    ensure!(
        freed >= MAPPED_BYTES,
        "{freed} bytes came back when the client ended; it held at least {MAPPED_BYTES} of the dead driver's disk"
    );
    Ok(())
}

/// `/dev/vda`'s driver killed under a reader: `EIO` for the reader; a new
/// open reaches the new driver and reads what was written before the kill
/// (the data is on the disk, not in the driver).
pub fn vda_killed_under_a_reader_keeps_its_data() -> TestResult {
    const DEVICE: &str = "/dev/vda";
    // Near the end of the disk, clear of the pattern `blk::` leaves at
    // its start for the host to check.
    let offset = size_of(DEVICE)? - 2 * PATTERN_BYTES as u64;
    let before = pattern(0x5eed_0003);
    write_at(DEVICE, offset, &before)?;
    kill_under_a_reader(DEVICE, "virtio-blk")?;
    ensure!(
        read_at(DEVICE, offset, PATTERN_BYTES)? == before,
        "the data written before the kill did not read back"
    );
    let after = pattern(0x5eed_0004);
    write_at(DEVICE, offset, &after)?;
    ensure!(
        read_at(DEVICE, offset, PATTERN_BYTES)? == after,
        "a write to the restarted driver did not read back"
    );
    Ok(())
}

/// A driver that faults at once on every start (`tests/crashdrv`): init
/// backs off and gives it up after its quick deaths in a row
/// (`unix_core::restart::INIT_POLICY`: 6, so five restarts), and the system goes on (the RAM disk still serves).
pub fn a_driver_that_dies_at_once_is_given_up() -> TestResult {
    unix::server_start("crashdrv").ctx("service start crashdrv")?;
    let mut last = [0; 4];
    let given_up = poll_until(STATUS_POLLS, 50, || {
        last = match unix::server_status("crashdrv") {
            // Init has not read the request yet.
            Err(ENOENT) => return Ok(false),
            other => other.ctx("service status crashdrv")?,
        };
        Ok(last[0] == state::GAVE_UP)
    })?;
    ensure!(given_up, "init did not give crashdrv up: {last:?}");
    let policy = unix_core::restart::INIT_POLICY.max_quick_deaths;
    ensure!(
        last[1] == 0 && last[3] == u64::from(policy) && last[2] == u64::from(policy) - 1,
        "given up with pid {:#x}, {} restarts, {} quick deaths; expected none, {} and {policy}",
        last[1],
        last[2],
        last[3],
        policy - 1
    );
    let data = pattern(0x5eed_0005);
    write_at("/dev/ram0", 0, &data[..4096])?;
    ensure!(read_at("/dev/ram0", 0, 4096)? == data[..4096], "the RAM disk does not serve after the give-up");
    Ok(())
}

/// Only root may ask; bad names are refused; a server whose line does not
/// say `restart` (memfs) is not ended; an unknown name has no status.
pub fn only_root_may_end_a_server_and_stateful_ones_stay() -> TestResult {
    expect_errno(unix::server_kill(""), EINVAL, "service kill with an empty name")?;
    let long: String = "x".repeat(protocols::unix::PROCESS_NAME_BYTES + 1);
    expect_errno(unix::server_kill(&long), EINVAL, "service kill with a too long name")?;
    expect_errno(unix::server_status("no-such-server"), ENOENT, "status of an unknown name")?;
    in_child(|| {
        unix::setuid_gid(Some(1000), Some(1000)).ctx("setuid 1000")?;
        expect_errno(unix::server_kill("ramdisk"), EPERM, "service kill as uid 1000")?;
        expect_errno(unix::server_start("crashdrv"), EPERM, "service start as uid 1000")?;
        // Anyone may ask how a server is.
        ensure!(status("ramdisk")?[0] == state::RUNNING, "ramdisk's status, asked as uid 1000");
        Ok(())
    })?;
    let before = status("memfs")?;
    unix::server_kill("memfs").ctx("service kill memfs")?;
    // init reads its queue in order: the kill request (sent by the monitor
    // before it answered) is handled before this status call is.
    let after = status("memfs")?;
    ensure!(
        after[0] == state::RUNNING && after[1] == before[1],
        "memfs was ended: {before:?} then {after:?}"
    );
    let d = scratch("only_root_may_end_a_server")?;
    make_file(&format!("{d}/f"), b"still here", 0o644)?;
    ensure!(file_contents(&format!("{d}/f"))? == b"still here", "memfs does not serve");
    Ok(())
}
