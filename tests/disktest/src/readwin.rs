//! `disktest readwin DIR on|off`: reads of a disk file in order, with the
//! read windows of `runtime::unix::readwin` (`on`, the default boot) or
//! without (`off`: a boot with `ext2.readwin=off`), return what POSIX
//! says whatever else happens to the file: the bytes written (compared
//! whole); another process's write, append and truncate between two
//! reads; `lseek` (SET, CUR, END) between reads; one offset for a
//! `dup`'d and for a `fork`ed descriptor; a read after the reader's own
//! write; `pread`; `pwrite` (branch `posio`: the bytes seen by the next
//! read through a window, from this descriptor, another process or an
//! `O_APPEND` one, the offset untouched); two processes reading one open file at once (every
//! byte read by one of them only) and a reader beside an appender. With windows on it also checks that they were used (the
//! manager's `readwin_slots`), that a client scribbling over its window
//! page hurts no one else and leaves the manager answering, and that a
//! client that dies with windowed descriptors open gives its slots back.
//!
//! What it is not: a measurement (`cargo xtask bench --only r2disk`).

use super::{Outcome, fail, pattern, write_file};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::open_flags::{O_APPEND, O_CREAT, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY};
use runtime::unix::{self, Fd, SEEK_CUR, SEEK_END, SEEK_SET};

const PIECE: usize = 8192;

fn open(path: &str, flags: u64) -> Result<Fd, String> {
    unix::open(path, flags, 0o644).map_err(|e| fail("open", path, e))
}

/// One `read` of `len` bytes, which must be `want`.
fn read_expect(fd: Fd, len: usize, want: &[u8], what: &str) -> Outcome {
    let mut buf = vec![0u8; len];
    let n = unix::read(fd, &mut buf).map_err(|e| fail("read", what, e))?;
    if buf[..n] != *want {
        let first = buf[..n].iter().zip(want).position(|(a, b)| a != b);
        return Err(format!(
            "{what}: read {n} bytes, expected {} (first difference at {first:?})",
            want.len()
        ));
    }
    Ok(())
}

fn seek_expect(fd: Fd, offset: i64, whence: u64, want: u64, what: &str) -> Outcome {
    match unix::lseek(fd, offset, whence) {
        Ok(at) if at == want => Ok(()),
        Ok(at) => Err(format!("{what}: lseek gave {at}, expected {want}")),
        Err(e) => Err(fail("lseek", what, e)),
    }
}

/// The whole file in reads of `len` bytes.
fn read_whole(path: &str, len: usize) -> Result<Vec<u8>, String> {
    let fd = open(path, O_RDONLY)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; len];
    loop {
        match unix::read(fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return Err(fail("read", path, e)),
        }
    }
    let _ = unix::close(fd);
    Ok(out)
}

/// The manager's count `name` (`kinfo`'s `/disk:readwin_…` lines).
fn disk_count(name: &str) -> Result<u64, String> {
    let text = unix::fs_stats().map_err(|e| fail("fs_stats", name, e))?;
    let key = format!(":{name}=");
    text.lines()
        .find_map(|l| l.split_once(&key).and_then(|(_, v)| v.trim().parse().ok()))
        .ok_or(format!("no {name} in the file systems' counters"))
}

/// Run `child` in a forked process, which exits 0 when it returns Ok
/// (its error printed), 1 otherwise; Ok when it exited 0.
fn in_child(what: &str, child: impl FnOnce() -> Outcome) -> Outcome {
    let pid = unix::fork().map_err(|e| fail("fork", what, e))?;
    if pid == 0 {
        let code = match child() {
            Ok(()) => 0,
            Err(why) => {
                runtime::println!("disktest: FAIL (child) {why}");
                1
            }
        };
        unix::exit(code);
    }
    match unix::waitpid(pid as i64, false) {
        Ok(Some((_, status))) if status.exit_code() == Some(0) => Ok(()),
        Ok(other) => Err(format!("{what}: the child ended {other:?}")),
        Err(e) => Err(fail("waitpid", what, e)),
    }
}

pub fn readwin(root: &str, on: bool) -> Outcome {
    let p = |rel: &str| format!("{root}/{rel}");
    unix::mkdir(root, 0o755).map_err(|e| fail("mkdir", root, e))?;
    let path = p("f");
    let mut data = pattern(77, 300_000);
    write_file(&path, O_CREAT | O_WRONLY, &data)?;

    // Sequential reads of several sizes: the bytes written.
    for len in [PIECE, 3000, 65_535, 65_536, 100_000] {
        if read_whole(&path, len)? != data {
            return Err(format!("{path} read in pieces of {len}: not the bytes written"));
        }
    }
    let fd = open(&path, O_RDONLY)?;
    for i in 0..5000 {
        read_expect(fd, 1, &data[i..i + 1], "one byte at a time")?;
    }
    // Windows in use (on) or never made (off).
    let slots = disk_count("readwin_slots")?;
    match (on, slots) {
        (true, 0) => return Err(String::from("windows on, but the reads made no slot")),
        (false, n) if n != 0 => return Err(format!("windows off, but {n} slots")),
        _ => {}
    }
    let _ = unix::close(fd);

    // Another process's write inside the reader's window.
    let fd = open(&path, O_RDONLY)?;
    read_expect(fd, PIECE, &data[..PIECE], "before the write")?;
    read_expect(fd, PIECE, &data[PIECE..2 * PIECE], "before the write")?;
    in_child("write", || {
        let w = open(&path, O_WRONLY)?;
        seek_expect(w, 20_000, SEEK_SET, 20_000, "the writer")?;
        unix::write(w, b"CHANGED BY ANOTHER PROCESS").map_err(|e| fail("write", "child", e))?;
        let _ = unix::close(w);
        Ok(())
    })?;
    data[20_000..20_026].copy_from_slice(b"CHANGED BY ANOTHER PROCESS");
    read_expect(fd, PIECE, &data[2 * PIECE..3 * PIECE], "after another process's write")?;
    let _ = unix::close(fd);

    // Another process's append and truncate.
    let small = p("small");
    let mut bytes = pattern(78, 10_000);
    write_file(&small, O_CREAT | O_WRONLY, &bytes)?;
    let fd = open(&small, O_RDONLY)?;
    read_expect(fd, 4096, &bytes[..4096], "before the append")?;
    read_expect(fd, 4096, &bytes[4096..8192], "before the append")?;
    let more = pattern(79, 3000);
    in_child("append", || write_file(&small, O_WRONLY | O_APPEND, &more))?;
    bytes.extend_from_slice(&more);
    read_expect(fd, 4096, &bytes[8192..12_288], "after another process's append")?;
    read_expect(fd, 4096, &bytes[12_288..], "the end after the append")?;
    read_expect(fd, 4096, &[], "past the end after the append")?;
    seek_expect(fd, 4096, SEEK_SET, 4096, "back")?;
    read_expect(fd, 4096, &bytes[4096..8192], "before the truncate")?;
    in_child("truncate", || {
        let w = open(&small, O_WRONLY)?;
        unix::ftruncate(w, 6000).map_err(|e| fail("ftruncate", "child", e))?;
        let _ = unix::close(w);
        Ok(())
    })?;
    read_expect(fd, 4096, &[], "after another process's truncate")?;
    seek_expect(fd, 5000, SEEK_SET, 5000, "after the truncate")?;
    read_expect(fd, 4096, &bytes[5000..6000], "the end after the truncate")?;
    let _ = unix::close(fd);

    // lseek between windowed reads.
    let fd = open(&path, O_RDONLY)?;
    read_expect(fd, PIECE, &data[..PIECE], "lseek")?;
    read_expect(fd, PIECE, &data[PIECE..2 * PIECE], "lseek")?;
    seek_expect(fd, 0, SEEK_CUR, 2 * PIECE as u64, "where the reads left it")?;
    seek_expect(fd, 100, SEEK_SET, 100, "SEEK_SET")?;
    read_expect(fd, PIECE, &data[100..100 + PIECE], "after SEEK_SET")?;
    seek_expect(fd, -50, SEEK_CUR, (100 + PIECE - 50) as u64, "SEEK_CUR")?;
    read_expect(fd, 3000, &data[PIECE + 50..PIECE + 3050], "after SEEK_CUR")?;
    let size = data.len();
    seek_expect(fd, -10, SEEK_END, (size - 10) as u64, "SEEK_END")?;
    read_expect(fd, PIECE, &data[size - 10..], "after SEEK_END")?;
    read_expect(fd, PIECE, &[], "at the end")?;
    seek_expect(fd, 5, SEEK_SET, 5, "SEEK_SET again")?;
    read_expect(fd, PIECE, &data[5..5 + PIECE], "after SEEK_SET again")?;
    let _ = unix::close(fd);

    // dup: one offset.
    let fd = open(&path, O_RDONLY)?;
    let fd2 = unix::dup(fd).map_err(|e| fail("dup", &path, e))?;
    read_expect(fd, PIECE, &data[..PIECE], "dup: the first")?;
    read_expect(fd, PIECE, &data[PIECE..2 * PIECE], "dup: the first")?;
    read_expect(fd2, PIECE, &data[2 * PIECE..3 * PIECE], "dup: the second")?;
    read_expect(fd2, PIECE, &data[3 * PIECE..4 * PIECE], "dup: the second")?;
    read_expect(fd, PIECE, &data[4 * PIECE..5 * PIECE], "dup: the first again")?;
    seek_expect(fd2, 0, SEEK_SET, 0, "dup: the second's lseek")?;
    read_expect(fd, PIECE, &data[..PIECE], "dup: the first after the second's lseek")?;
    let _ = unix::close(fd2);
    read_expect(fd, PIECE, &data[PIECE..2 * PIECE], "dup: the first after the second's close")?;
    let _ = unix::close(fd);

    // fork: one offset (the child reads with plain calls).
    let fd = open(&path, O_RDONLY)?;
    read_expect(fd, PIECE, &data[..PIECE], "fork: the parent")?;
    read_expect(fd, PIECE, &data[PIECE..2 * PIECE], "fork: the parent")?;
    in_child("fork", || {
        read_expect(fd, PIECE, &data[2 * PIECE..3 * PIECE], "fork: the child")?;
        read_expect(fd, PIECE, &data[3 * PIECE..4 * PIECE], "fork: the child")?;
        seek_expect(fd, 0, SEEK_CUR, 4 * PIECE as u64, "fork: the child's offset")
    })?;
    read_expect(fd, PIECE, &data[4 * PIECE..5 * PIECE], "fork: the parent after the child")?;
    let _ = unix::close(fd);

    // A read after the reader's own write.
    let fd = open(&path, O_RDWR)?;
    read_expect(fd, PIECE, &data[..PIECE], "own write")?;
    read_expect(fd, PIECE, &data[PIECE..2 * PIECE], "own write")?;
    unix::write(fd, b"OWN").map_err(|e| fail("write", &path, e))?;
    data[2 * PIECE..2 * PIECE + 3].copy_from_slice(b"OWN");
    read_expect(fd, PIECE, &data[2 * PIECE + 3..3 * PIECE + 3], "after the own write")?;
    seek_expect(fd, PIECE as i64, SEEK_SET, PIECE as u64, "own write")?;
    read_expect(fd, PIECE, &data[PIECE..2 * PIECE], "own write, again")?;
    read_expect(fd, PIECE, &data[2 * PIECE..3 * PIECE], "the own write read back")?;
    let _ = unix::close(fd);
    if read_whole(&path, PIECE)? != data {
        return Err(String::from("the file after the writes is not what was written"));
    }

    preads(&path, &data)?;
    pwrites(root)?;
    shared_readers(root)?;
    shared_appends(root)?;
    if on {
        scribble(&path, &data)?;
        dead_client_slots(&path)?;
    }
    let _ = unix::unlink(&small);
    runtime::println!("disktest: readwin passed, windows {}", if on { "on" } else { "off" });
    Ok(())
}

/// `unix::pread` (`io::OP_PREAD`): the bytes at its offset, the
/// descriptor's offset (and so the windowed reads around it) untouched,
/// the end, and bad input.
fn preads(path: &str, data: &[u8]) -> Outcome {
    let fd = open(path, O_RDONLY)?;
    read_expect(fd, PIECE, &data[..PIECE], "before the preads")?;
    read_expect(fd, PIECE, &data[PIECE..2 * PIECE], "before the preads")?;
    let size = data.len();
    for (at, len) in [(0, 100), (5000, PIECE), (70_000, 200_000), (size - 10, PIECE), (size, PIECE)] {
        let mut buf = vec![0u8; len];
        let n = unix::pread(fd, &mut buf, at as u64).map_err(|e| fail("pread", path, e))?;
        let want = &data[at.min(size)..(at + len).min(size)];
        if buf[..n] != *want {
            return Err(format!(
                "pread of {len} at {at}: {n} bytes, not the {} of the file there",
                want.len()
            ));
        }
    }
    seek_expect(fd, 0, SEEK_CUR, 2 * PIECE as u64, "after the preads")?;
    read_expect(fd, PIECE, &data[2 * PIECE..3 * PIECE], "a read after the preads")?;
    let mut buf = [0u8; 16];
    match unix::pread(fd, &mut buf, u64::MAX) {
        Err(e) if e == protocols::unix::errno::EINVAL => {}
        other => return Err(format!("pread at u64::MAX: {other:?}, expected EINVAL")),
    }
    let _ = unix::close(fd);
    match unix::pread(fd, &mut buf, 0) {
        Err(e) if e == protocols::unix::errno::EBADF => {}
        other => return Err(format!("pread of a closed descriptor: {other:?}, expected EBADF")),
    }
    Ok(())
}

/// `unix::pwrite` (`io::OP_PWRITE`): the bytes land at the offset named
/// (at the end on an `O_APPEND` descriptor, Linux's rule) and the next
/// read sees them, also through a read window that already held the old
/// bytes (the manager moves the file's generation before it answers),
/// whether the pwrite came through the reader's own descriptor, another
/// process's descriptor or the appender's; no offset moves; bad input is
/// refused with nothing written.
fn pwrites(root: &str) -> Outcome {
    let path = format!("{root}/pwrite");
    let mut data = pattern(91, 200_000);
    write_file(&path, O_CREAT | O_WRONLY, &data)?;
    let fd = open(&path, O_RDWR)?;
    read_expect(fd, PIECE, &data[..PIECE], "before the pwrites")?;
    // The second read (windows on) fetches a window from PIECE on.
    read_expect(fd, PIECE, &data[PIECE..2 * PIECE], "before the pwrites")?;
    let own = 2 * PIECE + 10;
    let n = unix::pwrite(fd, b"OWN", own as u64).map_err(|e| fail("pwrite", &path, e))?;
    if n != 3 {
        return Err(format!("pwrite of 3 bytes wrote {n}"));
    }
    data[own..own + 3].copy_from_slice(b"OWN");
    seek_expect(fd, 0, SEEK_CUR, 2 * PIECE as u64, "after the own pwrite")?;
    read_expect(fd, PIECE, &data[2 * PIECE..3 * PIECE], "after the own pwrite")?;
    // Another process, through its own descriptor, inside the window.
    let other = 3 * PIECE + 100;
    in_child("another process's pwrite", || {
        let w = open(&path, O_WRONLY)?;
        let n = unix::pwrite(w, b"OTHER", other as u64).map_err(|e| fail("pwrite", &path, e))?;
        let _ = unix::close(w);
        if n == 5 { Ok(()) } else { Err(format!("the child's pwrite wrote {n} of 5")) }
    })?;
    data[other..other + 5].copy_from_slice(b"OTHER");
    read_expect(fd, PIECE, &data[3 * PIECE..4 * PIECE], "after another process's pwrite")?;
    // O_APPEND: at the end, whatever the offset (Linux's pwrite(2)).
    let a = open(&path, O_WRONLY | O_APPEND)?;
    let n = unix::pwrite(a, b"APPENDED", 0).map_err(|e| fail("pwrite O_APPEND", &path, e))?;
    if n != 8 {
        return Err(format!("pwrite O_APPEND wrote {n} of 8"));
    }
    seek_expect(a, 0, SEEK_CUR, 0, "the appender after its pwrite")?;
    let _ = unix::close(a);
    data.extend_from_slice(b"APPENDED");
    // A long one across the window and blocks, through the lease.
    let long = pattern(92, 100_000);
    let at = 50_000;
    let n = unix::pwrite(fd, &long, at as u64).map_err(|e| fail("a long pwrite", &path, e))?;
    if n != long.len() {
        return Err(format!("a long pwrite wrote {n} of {}", long.len()));
    }
    data[at..at + long.len()].copy_from_slice(&long);
    seek_expect(fd, 0, SEEK_CUR, 4 * PIECE as u64, "after the long pwrite")?;
    let mut rest = vec![0u8; data.len() - 4 * PIECE];
    let mut got = 0;
    while got < rest.len() {
        let piece_end = (got + PIECE).min(rest.len());
        match unix::read(fd, &mut rest[got..piece_end]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(fail("read after the pwrites", &path, e)),
        }
    }
    if got != rest.len() || rest[..] != data[4 * PIECE..] {
        let first = rest[..got].iter().zip(&data[4 * PIECE..]).position(|(a, b)| a != b);
        return Err(format!(
            "after the pwrites the rest of the file read {got} bytes of {} (first difference at {first:?})",
            rest.len()
        ));
    }
    // Bad input: nothing written.
    let mut checks: Vec<(&str, Result<usize, protocols::unix::Errno>, protocols::unix::Errno)> = Vec::new();
    checks.push(("pwrite at u64::MAX", unix::pwrite(fd, b"x", u64::MAX), protocols::unix::errno::EINVAL));
    let r = open(&path, O_RDONLY)?;
    checks.push((
        "pwrite of a read-only descriptor",
        unix::pwrite(r, b"x", 0),
        protocols::unix::errno::EBADF,
    ));
    let _ = unix::close(r);
    let _ = unix::close(fd);
    checks.push(("pwrite of a closed descriptor", unix::pwrite(fd, b"x", 0), protocols::unix::errno::EBADF));
    for (what, got, want) in checks {
        match got {
            Err(e) if e == want => {}
            other => return Err(format!("{what}: {other:?}, expected {}", want.name())),
        }
    }
    if read_whole(&path, PIECE)? != data {
        return Err(String::from("the file after the pwrites is not what was written"));
    }
    let _ = unix::unlink(&path);
    Ok(())
}

/// Bytes of the file two processes read at once, per round.
const SHARED_FILE_BYTES: usize = 1 << 20;
/// Rounds of the shared read: a fresh open and fork each. The race it
/// looks for (a read served by the manager while the reader's window
/// moves the offset) needs the two to overlap, which on a loaded host
/// takes many requests; the bound is in bytes (rounds times the file),
/// never in time.
const SHARED_ROUNDS: usize = 6;
/// The parent's windowed reads (many per window: many offset moves
/// while the child's plain reads are in the manager).
const PARENT_PIECE: usize = 1024;
/// The child's plain reads.
const CHILD_PIECE: usize = 4096;
/// Bytes of one record of the shared file: its own index, so that every
/// piece read says where it came from.
const RECORD: usize = 8;

fn record(i: u64) -> [u8; RECORD] {
    (i ^ 0x5a5a_0000_0000_0000).to_le_bytes()
}

/// Which records `piece` holds: (first, count), or why it is not a run
/// of whole consecutive records of the file.
fn records_of(piece: &[u8], records: u64, what: &str) -> Result<(u64, u64), String> {
    if !piece.len().is_multiple_of(RECORD) {
        return Err(format!("{what}: a read of {} bytes, not whole records", piece.len()));
    }
    let first = u64::from_le_bytes(piece[..RECORD].try_into().unwrap_or_default()) ^ 0x5a5a_0000_0000_0000;
    let count = (piece.len() / RECORD) as u64;
    if first.checked_add(count).is_none_or(|end| end > records) {
        return Err(format!("{what}: a piece that starts with record {first:#x}: not in the file"));
    }
    for (k, r) in piece.chunks_exact(RECORD).enumerate() {
        if *r != record(first + k as u64) {
            return Err(format!("{what}: record {} of a piece from record {first} is wrong", k));
        }
    }
    Ok((first, count))
}

/// Read `fd` to its end in pieces of `len`: the runs of records read.
fn read_runs(fd: Fd, len: usize, records: u64, what: &str) -> Result<Vec<(u64, u64)>, String> {
    let mut buf = vec![0u8; len];
    let mut runs = Vec::new();
    loop {
        match unix::read(fd, &mut buf) {
            Ok(0) => return Ok(runs),
            Ok(n) => runs.push(records_of(&buf[..n], records, what)?),
            Err(e) => return Err(fail("read", what, e)),
        }
    }
}

/// Every record of `records` read exactly once by the union of `runs`.
fn exactly_once(runs: &[(u64, u64)], records: u64, what: &str) -> Outcome {
    let mut seen = vec![0u8; records as usize];
    for &(first, count) in runs {
        for i in first..first + count {
            seen[i as usize] = seen[i as usize].saturating_add(1);
        }
    }
    let twice = seen.iter().filter(|&&c| c > 1).count();
    let missing = seen.iter().filter(|&&c| c == 0).count();
    if twice != 0 || missing != 0 {
        let first = seen.iter().position(|&c| c != 1);
        return Err(format!(
            "{what}: {twice} records read more than once, {missing} never (of {records}; the first at record {first:?})"
        ));
    }
    Ok(())
}

/// The runs a child wrote to `path`: (first, count) pairs, u64 LE.
fn runs_from(path: &str) -> Result<Vec<(u64, u64)>, String> {
    let fd = open(path, O_RDONLY)?;
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match unix::read(fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) => return Err(fail("read", path, e)),
        }
    }
    let _ = unix::close(fd);
    let word = |c: &[u8]| u64::from_le_bytes(c.try_into().unwrap_or_default());
    Ok(bytes.chunks_exact(16).map(|c| (word(&c[..8]), word(&c[8..]))).collect())
}

fn runs_bytes(runs: &[(u64, u64)]) -> Vec<u8> {
    runs.iter().flat_map(|&(a, b)| a.to_le_bytes().into_iter().chain(b.to_le_bytes())).collect()
}

/// Wait (by polling the shared offset, a call each) until the forked
/// child has moved it from `from`, or has ended: so that the parent's
/// windowed reads overlap the child's plain ones. Bounded: a child that
/// never reads ends, and then this returns.
fn await_child_start(fd: Fd, pid: u64, from: u64) -> Result<Option<u32>, String> {
    loop {
        match unix::lseek(fd, 0, SEEK_CUR) {
            Ok(at) if at != from => return Ok(None),
            Ok(_) => {}
            Err(e) => return Err(fail("lseek", "shared reads", e)),
        }
        match unix::waitpid(pid as i64, true) {
            Ok(Some((_, status))) => return Ok(Some(status.exit_code().unwrap_or(u32::MAX))),
            Ok(None) => {}
            Err(e) => return Err(fail("waitpid", "shared reads", e)),
        }
    }
}

/// Two processes reading one open file at once to its end, the parent
/// through its window and a forked child with plain calls (one offset,
/// the slot's): every record of the file is read by exactly one of them
/// (POSIX XSH 2.9.7: reads of a regular file are atomic with respect to
/// each other; the manager holds the offset while it serves a request,
/// `fs_ext2::readwin`).
fn shared_readers(root: &str) -> Outcome {
    let path = format!("{root}/shared");
    let records = (SHARED_FILE_BYTES / RECORD) as u64;
    let data: Vec<u8> = (0..records).flat_map(record).collect();
    write_file(&path, O_CREAT | O_WRONLY, &data)?;
    let child_runs = format!("{root}/shared-child");
    // Records each side read after the fork, over all rounds: both
    // nonzero shows the two overlapped (printed, not asserted: how they
    // split depends on the host's speed).
    let (mut by_parent, mut by_child) = (0u64, 0u64);
    for round in 0..SHARED_ROUNDS {
        let what = format!("shared reads, round {round}");
        let fd = open(&path, O_RDONLY)?;
        // Two reads that fill their buffers: the second has a window.
        let mut parent = read_runs_n(fd, PIECE, 2, records, &what)?;
        let pid = unix::fork().map_err(|e| fail("fork", &what, e))?;
        if pid == 0 {
            let code = match read_runs(fd, CHILD_PIECE, records, "the child")
                .and_then(|runs| write_file(&child_runs, O_CREAT | O_WRONLY | O_TRUNC, &runs_bytes(&runs)))
            {
                Ok(()) => 0,
                Err(why) => {
                    runtime::println!("disktest: FAIL (child) {why}");
                    1
                }
            };
            unix::exit(code);
        }
        let ended = await_child_start(fd, pid, 2 * PIECE as u64)?;
        parent.extend(read_runs(fd, PARENT_PIECE, records, &what)?);
        let code = match ended {
            Some(code) => code,
            None => match unix::waitpid(pid as i64, false) {
                Ok(Some((_, status))) => status.exit_code().unwrap_or(u32::MAX),
                other => return Err(format!("{what}: the child ended {other:?}")),
            },
        };
        if code != 0 {
            return Err(format!("{what}: the child exited {code}"));
        }
        let _ = unix::close(fd);
        let mut all = runs_from(&child_runs)?;
        by_child += all.iter().map(|r| r.1).sum::<u64>();
        by_parent += parent.iter().skip(2).map(|r| r.1).sum::<u64>();
        all.extend_from_slice(&parent);
        exactly_once(&all, records, &what)?;
    }
    let _ = unix::unlink(&child_runs);
    let _ = unix::unlink(&path);
    runtime::println!(
        "disktest: shared reads: {SHARED_ROUNDS} rounds, records after the fork: {by_parent} by the windowed parent, {by_child} by the child"
    );
    Ok(())
}

/// `count` reads of `len` bytes that must each fill the buffer.
fn read_runs_n(
    fd: Fd,
    len: usize,
    count: usize,
    records: u64,
    what: &str,
) -> Result<Vec<(u64, u64)>, String> {
    let mut buf = vec![0u8; len];
    let mut runs = Vec::new();
    for _ in 0..count {
        match unix::read(fd, &mut buf) {
            Ok(n) if n == len => runs.push(records_of(&buf, records, what)?),
            Ok(n) => return Err(format!("{what}: a read of {len} gave {n}")),
            Err(e) => return Err(fail("read", what, e)),
        }
    }
    Ok(runs)
}

/// A windowed reader and a forked appender sharing one open file
/// (`O_RDWR | O_APPEND`): each append puts the offset at the new end, so
/// the reader's reads between appends must see whole records in order
/// and never a record twice, and every append lands whole at the end.
fn shared_appends(root: &str) -> Outcome {
    let path = format!("{root}/appended");
    let first = (SHARED_FILE_BYTES / 4 / RECORD) as u64;
    let appends = 256u64;
    let per_append = (CHILD_PIECE / RECORD) as u64;
    let data: Vec<u8> = (0..first).flat_map(record).collect();
    write_file(&path, O_CREAT | O_WRONLY | O_TRUNC, &data)?;
    let total = first + appends * per_append;
    let fd = open(&path, O_RDWR | O_APPEND)?;
    let mut parent = read_runs_n(fd, PIECE, 2, total, "shared appends")?;
    let pid = unix::fork().map_err(|e| fail("fork", "shared appends", e))?;
    if pid == 0 {
        let mut code = 0;
        for a in 0..appends {
            let start = first + a * per_append;
            let bytes: Vec<u8> = (start..start + per_append).flat_map(record).collect();
            match unix::write(fd, &bytes) {
                Ok(n) if n == bytes.len() => {}
                other => {
                    runtime::println!("disktest: FAIL (child) append {a}: {other:?}");
                    code = 1;
                    break;
                }
            }
        }
        unix::exit(code);
    }
    // The reader reads on while the appends go on: what it reads is whole
    // records (each a piece of the file as it was), none twice.
    let ended = await_child_start(fd, pid, 2 * PIECE as u64)?;
    let mut buf = vec![0u8; PARENT_PIECE];
    loop {
        match unix::read(fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => parent.push(records_of(&buf[..n], total, "the reader beside appends")?),
            Err(e) => return Err(fail("read", "shared appends", e)),
        }
    }
    let code = match ended {
        Some(code) => code,
        None => match unix::waitpid(pid as i64, false) {
            Ok(Some((_, status))) => status.exit_code().unwrap_or(u32::MAX),
            other => return Err(format!("shared appends: the child ended {other:?}")),
        },
    };
    if code != 0 {
        return Err(format!("shared appends: the appender exited {code}"));
    }
    let _ = unix::close(fd);
    let mut seen = vec![false; total as usize];
    for &(first, count) in &parent {
        for i in first..first + count {
            if core::mem::replace(&mut seen[i as usize], true) {
                return Err(format!("shared appends: record {i} read twice"));
            }
        }
    }
    let want: Vec<u8> = (0..total).flat_map(record).collect();
    if read_whole(&path, PIECE)? != want {
        return Err(String::from("shared appends: the file is not the records in order"));
    }
    let _ = unix::unlink(&path);
    Ok(())
}

/// A client that writes garbage over its whole window page: its own reads
/// may go wrong (they end, with bytes or an error), the manager answers
/// on, and a new open, another process and a later read get the file.
fn scribble(path: &str, data: &[u8]) -> Outcome {
    let fd = open(path, O_RDONLY)?;
    read_expect(fd, PIECE, &data[..PIECE], "before the scribble")?;
    read_expect(fd, PIECE, &data[PIECE..2 * PIECE], "before the scribble")?;
    let page = abi::layout::USER_READ_WINDOW_PAGES_BASE;
    for (i, junk) in
        (0..abi::layout::PAGE_SIZE / 8).zip([u64::MAX, 1 << 63, 0x1234_5678_9abc_def0, 7].iter().cycle())
    {
        write_word(page + 8 * i, *junk);
    }
    let mut buf = vec![0u8; PIECE];
    for _ in 0..4 {
        // Any outcome but a hang or a crash.
        let _ = unix::read(fd, &mut buf);
        let _ = unix::lseek(fd, 0, SEEK_CUR);
    }
    let _ = unix::close(fd);
    if read_whole(path, PIECE)? != data {
        return Err(String::from("after the scribble, a new open did not read the file"));
    }
    in_child("a reader after the scribble", || {
        if read_whole(path, PIECE)? != data {
            return Err(String::from("another process did not read the file after the scribble"));
        }
        Ok(())
    })?;
    disk_count("readwin_slots").map(|_| ())
}

/// Write `value` at `address` of this process's window page.
#[allow(unsafe_code)]
fn write_word(address: u64, value: u64) {
    // SAFETY: `address` is 8-aligned inside this process's read-window
    // page for /disk's manager (`abi::layout::USER_READ_WINDOW_PAGES_BASE`,
    // the first and only manager this program reads windowed), mapped
    // shared and writable since its first windowed read; nothing of this
    // program's own lives there. What the write does to the runtime's
    // windows and the manager's view of this process's offsets is what
    // the test is about.
    unsafe { core::ptr::write_volatile(address as *mut u64, value) }
}

/// A client killed with windowed descriptors open: the monitor closes
/// them and the manager frees their slots.
fn dead_client_slots(path: &str) -> Outcome {
    let before = disk_count("readwin_slots")?;
    let pid = unix::fork().map_err(|e| fail("fork", "dead client", e))?;
    if pid == 0 {
        let e = unix::execv("/bin/disktest", &["disktest", "rwchild", path]);
        runtime::println!("disktest: FAIL exec: {}", e.name());
        unix::exit(1);
    }
    match unix::waitpid(pid as i64, false) {
        Ok(Some((_, status))) if status.exit_code() == Some(0) => {}
        other => return Err(format!("rwchild ended {other:?}")),
    }
    let after = disk_count("readwin_slots")?;
    if after != before {
        return Err(format!("{before} slots before a client died with windows open, {after} after"));
    }
    Ok(())
}

/// `disktest rwchild PATH`: read PATH in order with two descriptors and
/// exit with both open (after checking that they hold slots).
pub fn rwchild(path: &str) -> Outcome {
    let before = disk_count("readwin_slots")?;
    let mut buf = vec![0u8; PIECE];
    for _ in 0..2 {
        let fd = open(path, O_RDONLY)?;
        for _ in 0..3 {
            unix::read(fd, &mut buf).map_err(|e| fail("read", path, e))?;
        }
    }
    let now = disk_count("readwin_slots")?;
    if now != before + 2 {
        return Err(format!("two windowed descriptors: {before} slots before, {now} after"));
    }
    unix::exit(0)
}

/// Polls of init's status or of the file (50 ms apart) before a step
/// counts as never coming: 60 s, far beyond what each takes.
const DEAD_POLLS: u32 = 1200;

/// `disktest deadwin PATH` (branch `posio`): a reader holds a read window
/// of a disk file when the volume's manager is ended (its driver killed
/// until init gives it up: the monitor then ends the manager,
/// `servers/monitor/src/mounts.rs`, `give_up_manager`). Once a call on
/// the descriptor says the manager is gone, a read inside the window must
/// not return the window's bytes: `EIO`, as every call on the dead
/// manager's handles. (The kernel zeroes a dead pager's read-window
/// pages, and no window is served against generation 0.)
pub fn deadwin(path: &str) -> Outcome {
    use protocols::init::state;
    use protocols::unix::errno::EIO;
    let data = pattern(93, 200_000);
    write_file(path, O_CREAT | O_WRONLY | O_TRUNC, &data)?;
    let fd = open(path, O_RDONLY)?;
    read_expect(fd, PIECE, &data[..PIECE], "before the manager ends")?;
    // The second read fetches a window from PIECE on; the third is served
    // from it.
    read_expect(fd, PIECE, &data[PIECE..2 * PIECE], "before the manager ends")?;
    read_expect(fd, PIECE, &data[2 * PIECE..3 * PIECE], "before the manager ends")?;
    if disk_count("readwin_slots")? == 0 {
        return Err(String::from("deadwin: the reads made no window (is ext2.readwin off?)"));
    }
    // Kill the disk's driver each time init has it running, until init
    // gives it up (`unix_core::restart::INIT_POLICY`'s quick deaths).
    const DRIVER: &str = "virtio-blk";
    let mut given_up = false;
    let mut last = [0u64; 4];
    let mut killed = 0;
    for _ in 0..DEAD_POLLS {
        last = unix::server_status(DRIVER).map_err(|e| fail("service status", DRIVER, e))?;
        if last[0] == state::GAVE_UP {
            given_up = true;
            break;
        }
        // Each instance once: init may not have seen the last kill yet.
        if last[0] == state::RUNNING && last[1] != 0 && last[1] != killed {
            unix::server_kill(DRIVER).map_err(|e| fail("service kill", DRIVER, e))?;
            killed = last[1];
        } else {
            unix::sleep_ns(20_000_000);
        }
    }
    if !given_up {
        return Err(format!("deadwin: init did not give {DRIVER} up: {last:?}"));
    }
    // The manager is ended once a call on the descriptor says so.
    let mut gone = false;
    for _ in 0..DEAD_POLLS {
        match unix::fstat(fd) {
            Err(e) if e == EIO => {
                gone = true;
                break;
            }
            _ => unix::sleep_ns(50_000_000),
        }
    }
    if !gone {
        return Err(String::from("deadwin: fstat never said EIO after the driver was given up"));
    }
    runtime::println!("disktest: deadwin: the manager is gone");
    // Inside the window (it holds PIECE..PIECE + 64 KiB).
    for what in ["the first read after the manager ended", "the second"] {
        let mut buf = vec![0u8; PIECE];
        match unix::read(fd, &mut buf) {
            Err(e) if e == EIO => {}
            Ok(n) => {
                return Err(format!(
                    "deadwin: {what}: {n} bytes{} where the dead manager's call gives EIO",
                    if buf[..n] == data[3 * PIECE..3 * PIECE + n] { ", the window's" } else { "" }
                ));
            }
            Err(e) => return Err(format!("deadwin: {what}: {}, expected EIO", e.name())),
        }
    }
    let _ = unix::close(fd);
    runtime::println!("disktest: deadwin: EIO, not the window's bytes");
    Ok(())
}
