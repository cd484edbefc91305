//! Positional I/O (`runtime::unix::pread`, `pwrite`; branch `posio`,
//! docs/filesystem.md "Positional I/O and a dead manager's window") on
//! the memory file system: the bytes at the offset named, the
//! descriptor's offset never moved, not even for a moment that a process
//! sharing the open file could see; `ESPIPE` where there is no offset.
//! The disk's side (`ext2fs`, read windows) is `disktest readwin`'s.

use crate::ensure;
use crate::util::*;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::errno::{EBADF, EINVAL, ESPIPE};
use protocols::unix::open_flags::{O_APPEND, O_RDONLY, O_RDWR, O_WRONLY};
use protocols::unix::signal::SIGKILL;
use runtime::unix::{self, SEEK_CUR, SEEK_END, SEEK_SET};

/// The descriptor's offset must be `want`.
fn offset_is(fd: unix::Fd, want: u64, what: &str) -> TestResult {
    let at = unix::lseek(fd, 0, SEEK_CUR).ctx("lseek")?;
    ensure!(at == want, "{what}: the offset is {at}, expected {want}");
    Ok(())
}

/// `pread` and `pwrite` on a memfs file: short (in the message) and long
/// (lent) transfers, past the end (a hole of zeros), `O_APPEND` (at the
/// end, as on Linux), the offset untouched by each, and every error.
pub fn pread_and_pwrite_leave_the_offset() -> TestResult {
    let d = scratch("pread_and_pwrite_leave_the_offset")?;
    let path = format!("{d}/f");
    make_file(&path, b"0123456789", 0o644)?;
    let fd = unix::open(&path, O_RDWR, 0).ctx("open")?;
    let mut buf = [0u8; 3];
    read_exact(fd, &mut buf)?;
    ensure!(unix::pwrite(fd, b"ab", 8).ctx("pwrite")? == 2, "pwrite of 2 bytes wrote fewer");
    offset_is(fd, 3, "after pwrite")?;
    let mut four = [0u8; 4];
    ensure!(unix::pread(fd, &mut four, 5).ctx("pread")? == 4, "pread of 4 bytes read fewer");
    ensure!(&four == b"567a", "pread at 5 read {four:?}");
    offset_is(fd, 3, "after pread")?;
    // Past the end: a hole, then the bytes.
    ensure!(unix::pwrite(fd, b"zz", 20).ctx("pwrite past the end")? == 2, "short pwrite");
    ensure!(unix::lseek(fd, 0, SEEK_END).ctx("lseek end")? == 22, "the size is not 22");
    unix::lseek(fd, 3, SEEK_SET).ctx("lseek back")?;
    let mut all = [0xeeu8; 30];
    ensure!(unix::pread(fd, &mut all, 0).ctx("pread all")? == 22, "pread of the whole file");
    ensure!(&all[..22] == b"01234567ab\0\0\0\0\0\0\0\0\0\0zz", "the file reads {:?}", &all[..22]);
    // Long transfers (through the lease, several calls' worth).
    let mut stream = Stream::new(12);
    let mut big = vec![0u8; 200_000];
    stream.fill(&mut big);
    ensure!(unix::pwrite(fd, &big, 1000).ctx("a long pwrite")? == big.len(), "a long pwrite was short");
    let mut back = vec![0u8; big.len()];
    ensure!(unix::pread(fd, &mut back, 1000).ctx("a long pread")? == big.len(), "a long pread was short");
    ensure!(back == big, "a long pread read other bytes than the long pwrite wrote");
    offset_is(fd, 3, "after the long ones")?;
    read_exact(fd, &mut buf)?;
    ensure!(&buf == b"345", "a read after them read {buf:?}");
    // O_APPEND: the end, whatever the offset (Linux's pwrite(2)).
    let a = unix::open(&path, O_WRONLY | O_APPEND, 0).ctx("open O_APPEND")?;
    ensure!(unix::pwrite(a, b"tail", 0).ctx("pwrite O_APPEND")? == 4, "short append");
    offset_is(a, 0, "the appender after pwrite")?;
    let end = 1000 + big.len() as u64;
    ensure!(unix::pread(fd, &mut four, end).ctx("pread the tail")? == 4 && &four == b"tail", "no tail");
    ensure!(unix::pread(fd, &mut four, 0).ctx("pread the start")? == 4 && &four == b"0123", "start moved");
    ensure!(unix::pread(fd, &mut four, end + 4).ctx("pread at the end")? == 0, "bytes past the end");
    ensure!(unix::pwrite(fd, b"", 5).ctx("an empty pwrite")? == 0, "an empty pwrite wrote");
    // Errors.
    expect_errno(unix::pread(fd, &mut four, i64::MAX as u64 + 1), EINVAL, "pread past i64::MAX")?;
    expect_errno(unix::pwrite(fd, b"x", u64::MAX), EINVAL, "pwrite at u64::MAX")?;
    expect_errno(unix::pread(a, &mut four, 0), EBADF, "pread of a write-only descriptor")?;
    let r = unix::open(&path, O_RDONLY, 0).ctx("open O_RDONLY")?;
    expect_errno(unix::pwrite(r, b"x", 0), EBADF, "pwrite of a read-only descriptor")?;
    for f in [fd, a, r] {
        unix::close(f).ctx("close")?;
    }
    expect_errno(unix::pread(fd, &mut four, 0), EBADF, "pread of a closed descriptor")?;
    expect_errno(unix::pwrite(fd, b"x", 0), EBADF, "pwrite of a closed descriptor")?;
    expect_errno(unix::pread(-1, &mut four, 0), EBADF, "pread of fd -1")?;
    // /dev/null and /dev/zero (memfs's own devices).
    let null = unix::open("/dev/null", O_RDWR, 0).ctx("open /dev/null")?;
    ensure!(unix::pread(null, &mut four, 7).ctx("pread /dev/null")? == 0, "/dev/null gave bytes");
    ensure!(unix::pwrite(null, b"abc", 7).ctx("pwrite /dev/null")? == 3, "/dev/null took fewer");
    unix::close(null).ctx("close /dev/null")?;
    if let Ok(zero) = unix::open("/dev/zero", O_RDONLY, 0) {
        let mut z = [7u8; 5];
        ensure!(unix::pread(zero, &mut z, 9).ctx("pread /dev/zero")? == 5 && z == [0; 5], "/dev/zero: {z:?}");
        unix::close(zero).ctx("close /dev/zero")?;
    }
    Ok(())
}

/// A pipe has no offset: `pread` and `pwrite` on either end are `ESPIPE`
/// (POSIX), empty ones too, and the pipe still carries its bytes.
pub fn pipes_are_espipe() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let mut buf = [0u8; 4];
    for (fd, end) in [(r, "read end"), (w, "write end")] {
        expect_errno(unix::pread(fd, &mut buf, 0), ESPIPE, &format!("pread of the {end}"))?;
        expect_errno(unix::pread(fd, &mut [], 0), ESPIPE, &format!("an empty pread of the {end}"))?;
        expect_errno(unix::pwrite(fd, b"ab", 0), ESPIPE, &format!("pwrite of the {end}"))?;
        expect_errno(unix::pwrite(fd, b"", 0), ESPIPE, &format!("an empty pwrite of the {end}"))?;
    }
    write_all(w, b"pipe").ctx("write")?;
    read_exact(r, &mut buf)?;
    ensure!(&buf == b"pipe", "the pipe carried {buf:?}");
    unix::close(r).ctx("close")?;
    unix::close(w).ctx("close")
}

/// Records in the shared-offset test's file: 8 bytes each, each holding
/// its own number.
const RECORDS: u64 = 4096;
/// `pread`s and `pwrite`s the child makes at most (it is killed when the
/// parent has read the file; this bounds it if the parent fails first).
const CHILD_ROUNDS: u64 = 1_000_000;

/// A forked child sharing the open file (one offset, POSIX `fork`) makes
/// `pread`s and `pwrite`s while the parent reads the file in order with
/// plain `read`s of one record: the parent must read every record once,
/// in order, and end at the end. With `pread` done as `lseek`, `read`,
/// `lseek` (the runtime's fallback before memfs answered `OP_PREAD`), a
/// parent read between the child's calls starts from the child's offset
/// or has its move undone by the child's last `lseek`, and reads a
/// record twice or skips one.
pub fn a_forked_preader_never_moves_the_shared_offset() -> TestResult {
    let d = scratch("a_forked_preader_never_moves_the_shared_offset")?;
    let path = format!("{d}/records");
    let bytes: Vec<u8> = (0..RECORDS).flat_map(u64::to_le_bytes).collect();
    make_file(&path, &bytes, 0o644)?;
    let fd = unix::open(&path, O_RDWR, 0).ctx("open")?;
    let (ready_r, ready_w) = unix::pipe().ctx("pipe")?;
    let child = spawn(move || {
        let _ = unix::close(ready_r);
        let mut said = false;
        for round in 0..CHILD_ROUNDS {
            let k = (round * 7919) % RECORDS;
            let mut rec = [0u8; 8];
            match unix::pread(fd, &mut rec, k * 8) {
                Ok(8) if u64::from_le_bytes(rec) == k => {}
                _ => return 2,
            }
            // The same bytes back: the file does not change.
            if unix::pwrite(fd, &rec, k * 8) != Ok(8) {
                return 3;
            }
            if !said {
                // Started: the parent begins reading now, so the two
                // overlap.
                said = true;
                if write_all(ready_w, b"go").is_err() {
                    return 4;
                }
                let _ = unix::close(ready_w);
            }
        }
        0
    })?;
    let _ = unix::close(ready_w);
    let mut go = [0u8; 2];
    let started = read_exact(ready_r, &mut go);
    let _ = unix::close(ready_r);
    let outcome = started.and_then(|()| {
        for want in 0..RECORDS {
            let mut rec = [0u8; 8];
            let n = unix::read(fd, &mut rec).ctx("read")?;
            ensure!(n == 8, "record {want}: read {n} bytes");
            let got = u64::from_le_bytes(rec);
            ensure!(got == want, "read record {got} where record {want} was next: the shared offset moved");
        }
        let mut one = [0u8; 1];
        ensure!(unix::read(fd, &mut one).ctx("read at the end")? == 0, "bytes past the last record");
        Ok(())
    });
    // Still making its calls (or done, or failed): its status says which.
    let _ = unix::kill(child as i64, SIGKILL);
    let status = wait_for(child)?;
    outcome?;
    match status.exit_code() {
        None | Some(0) => {}
        Some(2) => return Err(String::from("the child's pread read a wrong record")),
        Some(code) => return Err(format!("the child failed ({code})")),
    }
    offset_is(fd, RECORDS * 8, "after both")?;
    unix::close(fd).ctx("close")
}

/// A terminal and a socket have no offset either: `pread` and `pwrite`
/// are `ESPIPE` (POSIX; Linux checks it before the length, so an empty
/// one is `ESPIPE` too), and nothing of a refused `pwrite` reaches
/// the terminal (branch `robust`). A socket is refused by the runtime
/// (`positional_entry`); a terminal's server answers `OP_PREAD` with
/// `ENOSYS` and the runtime's `lseek` then says `ESPIPE`, which an empty
/// buffer never reached before: it read 0 bytes.
pub fn ttys_and_sockets_are_espipe() -> TestResult {
    use runtime::unix::socket::{self, AF_INET, SOCK_DGRAM};
    let console = unix::open("/dev/console", O_RDWR, 0).ctx("open /dev/console")?;
    let udp = socket::socket(AF_INET, SOCK_DGRAM, 0).ctx("socket")?;
    let mut buf = [0u8; 4];
    let mut outcome = Ok(());
    for (fd, what) in [(console, "the console"), (udp, "a socket")] {
        let checked = expect_errno(unix::pread(fd, &mut buf, 0), ESPIPE, &format!("pread of {what}"))
            .and_then(|()| {
                expect_errno(unix::pread(fd, &mut [], 0), ESPIPE, &format!("an empty pread of {what}"))
            })
            .and_then(|()| expect_errno(unix::pwrite(fd, b"ab", 0), ESPIPE, &format!("pwrite of {what}")))
            .and_then(|()| {
                expect_errno(unix::pwrite(fd, b"", 0), ESPIPE, &format!("an empty pwrite of {what}"))
            });
        outcome = outcome.and(checked);
    }
    let _ = unix::close(udp);
    let _ = unix::close(console);
    outcome
}
