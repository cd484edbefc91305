//! `disktest readwin DIR on|off`: reads of a disk file in order, with the
//! read windows of `runtime::unix::readwin` (`on`, the default boot) or
//! without (`off`: a boot with `ext2.readwin=off`), return what POSIX
//! says whatever else happens to the file: the bytes written (compared
//! whole); another process's write, append and truncate between two
//! reads; `lseek` (SET, CUR, END) between reads; one offset for a
//! `dup`'d and for a `fork`ed descriptor; a read after the reader's own
//! write. With windows on it also checks that they were used (the
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
use protocols::unix::open_flags::{O_APPEND, O_CREAT, O_RDONLY, O_RDWR, O_WRONLY};
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

    if on {
        scribble(&path, &data)?;
        dead_client_slots(&path)?;
    }
    let _ = unix::unlink(&small);
    runtime::println!("disktest: readwin passed, windows {}", if on { "on" } else { "off" });
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
