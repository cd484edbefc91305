//! Files, directories and descriptors: every name-space and descriptor
//! call with its success and error paths, on the memory file system.

use crate::ensure;
use crate::util::*;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::errno::*;
use protocols::unix::mode::{self, S_IFCHR, S_IFDIR, S_IFIFO, S_IFMT, S_IFREG};
use protocols::unix::open_flags::*;
use runtime::unix::{self, MAX_FDS, SEEK_CUR, SEEK_END, SEEK_SET};

pub fn create_write_read() -> TestResult {
    let d = scratch("create_write_read")?;
    let path = format!("{d}/f");
    let fd = unix::open(&path, O_RDWR | O_CREAT | O_EXCL, 0o644).ctx("open O_CREAT|O_EXCL")?;
    ensure!(fd >= 3, "a new descriptor {fd} collides with standard input, output or error");
    ensure!(unix::write(fd, b"hello, world").ctx("write")? == 12, "short write");
    ensure!(unix::lseek(fd, 0, SEEK_SET).ctx("lseek")? == 0, "lseek to 0");
    let mut buf = [0u8; 64];
    let n = unix::read(fd, &mut buf).ctx("read")?;
    ensure!(&buf[..n] == b"hello, world", "read back {:?}", &buf[..n]);
    ensure!(unix::read(fd, &mut buf).ctx("read at end")? == 0, "read at end of file must return 0");
    ensure!(unix::write(fd, b"").ctx("empty write")? == 0, "an empty write writes nothing");
    unix::close(fd).ctx("close")?;
    ensure!(file_contents(&path)? == b"hello, world", "contents after reopening");
    // creat() on an existing file truncates it.
    let fd = unix::creat(&path, 0o644).ctx("creat existing")?;
    unix::close(fd).ctx("close")?;
    ensure!(unix::stat(&path).ctx("stat")?.size_bytes == 0, "creat must truncate");
    Ok(())
}

pub fn open_errors() -> TestResult {
    let d = scratch("open_errors")?;
    let file = format!("{d}/file");
    make_file(&file, b"x", 0o644)?;
    let missing = format!("{d}/missing");
    expect_errno(unix::open(&missing, O_RDONLY, 0), ENOENT, "open a missing file")?;
    expect_errno(
        unix::open(&format!("{d}/nodir/f"), O_RDWR | O_CREAT, 0o644),
        ENOENT,
        "O_CREAT in a missing dir",
    )?;
    expect_errno(unix::open("", O_RDONLY, 0), ENOENT, "open the empty path")?;
    expect_errno(unix::open(&file, O_RDWR | O_CREAT | O_EXCL, 0o644), EEXIST, "O_CREAT|O_EXCL on a file")?;
    expect_errno(
        unix::open(&d, O_RDONLY | O_CREAT | O_EXCL, 0o644),
        EEXIST,
        "O_CREAT|O_EXCL on a directory",
    )?;
    expect_errno(unix::open(&format!("{file}/x"), O_RDONLY, 0), ENOTDIR, "a file as a directory")?;
    expect_errno(unix::open(&format!("{file}/x"), O_RDWR | O_CREAT, 0o644), ENOTDIR, "O_CREAT below a file")?;
    expect_errno(unix::open(&file, O_RDONLY | O_DIRECTORY, 0), ENOTDIR, "O_DIRECTORY on a file")?;
    expect_errno(unix::open(&d, O_WRONLY, 0), EISDIR, "a directory for writing")?;
    expect_errno(unix::open(&d, O_RDWR, 0), EISDIR, "a directory for reading and writing")?;
    expect_errno(unix::open(&file, O_ACCMODE, 0), EINVAL, "access mode 3")?;
    ensure!(unix::stat(&missing).is_err(), "a failed open must not create the file");
    // A directory opens for reading.
    let fd = unix::open(&d, O_RDONLY | O_DIRECTORY, 0).ctx("open a directory")?;
    let mut buf = [0u8; 8];
    expect_errno(unix::read(fd, &mut buf), EISDIR, "read() on a directory")?;
    unix::close(fd).ctx("close")
}

pub fn bad_descriptors() -> TestResult {
    let d = scratch("bad_descriptors")?;
    let path = format!("{d}/f");
    make_file(&path, b"data", 0o644)?;
    let mut buf = [0u8; 8];
    let unused = 50;
    expect_errno(unix::read(unused, &mut buf), EBADF, "read an unused fd")?;
    expect_errno(unix::write(unused, b"x"), EBADF, "write an unused fd")?;
    expect_errno(unix::write(unused, b""), EBADF, "an empty write to an unused fd")?;
    expect_errno(unix::close(unused), EBADF, "close an unused fd")?;
    expect_errno(unix::fstat(unused), EBADF, "fstat an unused fd")?;
    expect_errno(unix::lseek(unused, 0, SEEK_SET), EBADF, "lseek an unused fd")?;
    expect_errno(unix::dup(unused), EBADF, "dup an unused fd")?;
    expect_errno(unix::dup2(unused, 40), EBADF, "dup2 from an unused fd")?;
    expect_errno(unix::read(-1, &mut buf), EBADF, "read fd -1")?;
    expect_errno(unix::close(-1), EBADF, "close fd -1")?;
    expect_errno(unix::read(MAX_FDS as i32, &mut buf), EBADF, "read fd 64")?;
    expect_errno(unix::dup2(0, MAX_FDS as i32), EBADF, "dup2 to fd 64")?;
    let ro = unix::open(&path, O_RDONLY, 0).ctx("open read-only")?;
    expect_errno(unix::write(ro, b"x"), EBADF, "write a read-only fd")?;
    let wo = unix::open(&path, O_WRONLY, 0).ctx("open write-only")?;
    expect_errno(unix::read(wo, &mut buf), EBADF, "read a write-only fd")?;
    unix::close(wo).ctx("close")?;
    unix::close(ro).ctx("close")?;
    expect_errno(unix::close(ro), EBADF, "close twice")?;
    expect_errno(unix::read(ro, &mut buf), EBADF, "read a closed fd")?;
    ensure!(file_contents(&path)? == b"data", "the refused write changed the file");
    Ok(())
}

pub fn emfile_at_64_descriptors() -> TestResult {
    in_child(|| {
        let mut opened = Vec::new();
        let last_error = loop {
            match unix::open("/dev/null", O_RDWR, 0) {
                Ok(fd) => opened.push(fd),
                Err(e) => break e,
            }
            ensure!(opened.len() <= MAX_FDS, "more than {MAX_FDS} descriptors opened");
        };
        ensure!(
            last_error == EMFILE,
            "open number {} gave {}, expected EMFILE after {MAX_FDS} descriptors",
            opened.len() + 1,
            last_error.name()
        );
        for fd in 0..MAX_FDS as i32 {
            ensure!(unix::fstat(fd).is_ok(), "fd {fd} is not open although open() said the table is full");
        }
        expect_errno(unix::dup(0), EMFILE, "dup with a full table")?;
        expect_errno(unix::pipe(), EMFILE, "pipe with a full table")?;
        expect_errno(unix::open("/dev/null", O_RDONLY, 0), EMFILE, "open again")?;
        // One free slot: open works again, a pipe (two fds) still does not.
        let last = *opened.last().ok_or("no descriptor opened")?;
        unix::close(last).ctx("close")?;
        expect_errno(unix::pipe(), EMFILE, "pipe with one free slot")?;
        let fd = unix::open("/dev/null", O_RDONLY, 0).ctx("open into the freed slot")?;
        ensure!(fd == last, "open returned {fd}, not the lowest free descriptor {last}");
        for fd in opened {
            unix::close(fd).ctx("close")?;
        }
        let (r, w) = unix::pipe().ctx("pipe after closing")?;
        unix::close(r).ctx("close")?;
        unix::close(w).ctx("close")
    })
}

pub fn dup_shares_the_offset() -> TestResult {
    let d = scratch("dup_shares_the_offset")?;
    let path = format!("{d}/f");
    make_file(&path, b"abcdefghij", 0o644)?;
    let fd = unix::open(&path, O_RDWR, 0).ctx("open")?;
    let copy = unix::dup(fd).ctx("dup")?;
    ensure!(copy > fd, "dup returned {copy}, not a new lowest free descriptor");
    let mut buf = [0u8; 3];
    read_exact(fd, &mut buf)?;
    ensure!(&buf == b"abc", "first read {buf:?}");
    read_exact(copy, &mut buf)?;
    ensure!(&buf == b"def", "the dup must continue at the shared offset, read {buf:?}");
    ensure!(unix::lseek(fd, 0, SEEK_CUR).ctx("lseek")? == 6, "the original's offset");
    // dup2 onto an open descriptor closes what was there first.
    let other = format!("{d}/other");
    make_file(&other, b"OTHER", 0o644)?;
    let target = unix::open(&other, O_RDONLY, 0).ctx("open other")?;
    ensure!(unix::dup2(fd, target).ctx("dup2 onto an open fd")? == target, "dup2 returns the new fd");
    read_exact(target, &mut buf)?;
    ensure!(&buf == b"ghi", "after dup2 the target reads the original's file at its offset, got {buf:?}");
    ensure!(unix::dup2(fd, fd).ctx("dup2 onto itself")? == fd, "dup2(fd, fd) returns fd");
    // Closing one copy leaves the others working.
    unix::close(fd).ctx("close")?;
    let n = unix::read(copy, &mut buf).ctx("read the dup after closing the original")?;
    ensure!(n == 1 && buf[0] == b'j', "read {n} bytes {:?}", &buf[..n]);
    unix::close(copy).ctx("close")?;
    unix::close(target).ctx("close")
}

pub fn fork_shares_the_offset() -> TestResult {
    let d = scratch("fork_shares_the_offset")?;
    let path = format!("{d}/f");
    make_file(&path, b"0123456789", 0o644)?;
    let fd = unix::open(&path, O_RDONLY, 0).ctx("open")?;
    let child = spawn(move || {
        let mut buf = [0u8; 4];
        match read_exact(fd, &mut buf) {
            Ok(()) if &buf == b"0123" => 0,
            _ => 1,
        }
    })?;
    expect_exit(child, 0)?;
    let mut buf = [0u8; 3];
    read_exact(fd, &mut buf)?;
    ensure!(&buf == b"456", "after the child read 4 bytes the parent read {buf:?}");
    unix::close(fd).ctx("close")
}

/// A regular file's close reaches the monitor with the process's next
/// open (the runtime's deferred close, docs/filesystem-history.md "R2 on disk:
/// creat+close again"), or before any other call: to the process it is
/// closed at once; its number is the next open's (the lowest free, also
/// when that open is a forwarded one the manager declines); a `dup` or a
/// child forked after it finds it closed; closing it again is `EBADF`.
pub fn a_close_rides_on_the_next_open() -> TestResult {
    let d = scratch("a_close_rides_on_the_next_open")?;
    let (a, b, c) = (format!("{d}/a"), format!("{d}/b"), format!("{d}/c"));
    let fd = unix::creat(&a, 0o644).ctx("creat a")?;
    unix::close(fd).ctx("close a")?;
    let next = unix::creat(&b, 0o644).ctx("creat b")?;
    ensure!(next == fd, "the open after a close got {next}, not the closed (lowest free) {fd}");
    unix::close(next).ctx("close b")?;
    expect_errno(unix::fstat(next), EBADF, "fstat after close")?;
    expect_errno(unix::close(next), EBADF, "close twice")?;
    let dup = unix::dup(0).ctx("dup after a close")?;
    ensure!(dup == fd, "dup after a close got {dup}, not the closed {fd}");
    unix::close(dup).ctx("close the dup")?;
    // Closed, then a fork: the child has no such descriptor.
    let fd = unix::open(&a, O_RDONLY, 0).ctx("open a")?;
    unix::close(fd).ctx("close a")?;
    let child = spawn(move || match unix::fstat(fd) {
        Err(e) if e == EBADF => 0,
        _ => 1,
    })?;
    expect_exit(child, 0)?;
    // Riding on a forwarded open that the manager declines (`b` exists and
    // the monitor has not looked it up): closed all the same.
    let fd = unix::creat(&c, 0o644).ctx("creat c")?;
    unix::close(fd).ctx("close c")?;
    expect_errno(unix::open(&b, O_WRONLY | O_CREAT | O_EXCL, 0o644), EEXIST, "O_EXCL of b")?;
    let dup = unix::dup(0).ctx("dup after a declined open")?;
    ensure!(dup == fd, "dup after the declined open got {dup}, not the closed {fd}");
    unix::close(dup).ctx("close the dup")?;
    // A descriptor seen closed, then made by `dup`, is open.
    let mut buf = [0u8; 1];
    expect_errno(unix::read(fd, &mut buf), EBADF, "read a closed fd")?;
    let dup = unix::dup(0).ctx("dup into it")?;
    ensure!(dup == fd && unix::fstat(dup).is_ok(), "fd {dup} made by dup is not open");
    unix::close(dup).ctx("close the dup")?;
    expect_errno(unix::open(&format!("{a}\0{b}"), O_RDONLY, 0), EINVAL, "a path with a NUL")?;
    Ok(())
}

pub fn lseek_whence_and_holes() -> TestResult {
    let d = scratch("lseek_whence_and_holes")?;
    let path = format!("{d}/f");
    let fd = unix::open(&path, O_RDWR | O_CREAT, 0o644).ctx("open")?;
    write_all(fd, b"0123456789").ctx("write")?;
    ensure!(unix::lseek(fd, 0, SEEK_CUR).ctx("SEEK_CUR 0")? == 10, "offset after writing 10 bytes");
    ensure!(unix::lseek(fd, 2, SEEK_SET).ctx("SEEK_SET")? == 2, "SEEK_SET 2");
    ensure!(unix::lseek(fd, 3, SEEK_CUR).ctx("SEEK_CUR")? == 5, "SEEK_CUR +3");
    ensure!(unix::lseek(fd, -1, SEEK_CUR).ctx("SEEK_CUR -1")? == 4, "SEEK_CUR -1");
    ensure!(unix::lseek(fd, -2, SEEK_END).ctx("SEEK_END")? == 8, "SEEK_END -2");
    let mut buf = [0u8; 2];
    read_exact(fd, &mut buf)?;
    ensure!(&buf == b"89", "read at SEEK_END -2 gave {buf:?}");
    expect_errno(unix::lseek(fd, -11, SEEK_END), EINVAL, "a seek before the start")?;
    expect_errno(unix::lseek(fd, 0, 7), EINVAL, "whence 7")?;
    ensure!(unix::lseek(fd, 0, SEEK_CUR).ctx("SEEK_CUR")? == 10, "a failed seek moved the offset");
    // Past the end: a write there leaves a hole that reads as zeros.
    ensure!(unix::lseek(fd, 10_000, SEEK_SET).ctx("seek past the end")? == 10_000, "seek past the end");
    ensure!(unix::stat(&path).ctx("stat")?.size_bytes == 10, "seeking must not change the size");
    write_all(fd, b"end").ctx("write past the end")?;
    ensure!(unix::fstat(fd).ctx("fstat")?.size_bytes == 10_003, "size after writing past the end");
    let all = file_contents(&path)?;
    ensure!(all.len() == 10_003, "read {} bytes", all.len());
    ensure!(&all[..10] == b"0123456789" && &all[10_000..] == b"end", "data around the hole");
    ensure!(all[10..10_000].iter().all(|&b| b == 0), "the hole must read as zeros");
    unix::close(fd).ctx("close")
}

pub fn o_append_writes_at_the_end() -> TestResult {
    let d = scratch("o_append_writes_at_the_end")?;
    let path = format!("{d}/f");
    make_file(&path, b"start.", 0o644)?;
    let a = unix::open(&path, O_WRONLY | O_APPEND, 0).ctx("open O_APPEND")?;
    let b = unix::open(&path, O_WRONLY | O_APPEND, 0).ctx("open O_APPEND again")?;
    unix::lseek(a, 0, SEEK_SET).ctx("lseek")?;
    write_all(a, b"one.").ctx("write a")?;
    write_all(b, b"two.").ctx("write b")?;
    write_all(a, b"three.").ctx("write a")?;
    ensure!(unix::lseek(a, 0, SEEK_CUR).ctx("lseek")? == 20, "the offset after an append is the end");
    unix::close(a).ctx("close")?;
    unix::close(b).ctx("close")?;
    let got = file_contents(&path)?;
    ensure!(got == b"start.one.two.three.", "contents {:?}", String::from_utf8_lossy(&got));
    Ok(())
}

pub fn o_trunc_empties_the_file() -> TestResult {
    let d = scratch("o_trunc_empties_the_file")?;
    let path = format!("{d}/f");
    make_file(&path, &vec![7u8; 10_000], 0o644)?;
    // Without O_TRUNC the data stays.
    let fd = unix::open(&path, O_WRONLY, 0).ctx("open")?;
    write_all(fd, b"xy").ctx("write")?;
    unix::close(fd).ctx("close")?;
    ensure!(unix::stat(&path).ctx("stat")?.size_bytes == 10_000, "a plain open+write must not truncate");
    let fd = unix::open(&path, O_RDWR | O_TRUNC, 0).ctx("open O_TRUNC")?;
    ensure!(unix::fstat(fd).ctx("fstat")?.size_bytes == 0, "fstat size after O_TRUNC");
    write_all(fd, b"new").ctx("write")?;
    unix::close(fd).ctx("close")?;
    ensure!(file_contents(&path)? == b"new", "contents after O_TRUNC and a write");
    Ok(())
}

pub fn unlinked_open_file_stays_readable() -> TestResult {
    let d = scratch("unlinked_open_file_stays_readable")?;
    let path = format!("{d}/f");
    let mut data = vec![0u8; 20_000];
    Stream::new(3).fill(&mut data);
    make_file(&path, &data, 0o644)?;
    let fd = unix::open(&path, O_RDWR, 0).ctx("open")?;
    unix::unlink(&path).ctx("unlink")?;
    expect_errno(unix::stat(&path), ENOENT, "stat after unlink")?;
    expect_errno(unix::open(&path, O_RDONLY, 0), ENOENT, "open after unlink")?;
    expect_errno(unix::unlink(&path), ENOENT, "unlink twice")?;
    ensure!(!unix::read_dir(&d).ctx("read_dir")?.iter().any(|e| e.name == "f"), "the name is still listed");
    let st = unix::fstat(fd).ctx("fstat of the unlinked file")?;
    ensure!(st.nlink == 0, "an unlinked file has {} links", st.nlink);
    ensure!(st.size_bytes == data.len() as u64, "size {}", st.size_bytes);
    let got = read_to_end(fd).ctx("read the unlinked file")?;
    ensure!(got == data, "the unlinked file's data changed ({} bytes read)", got.len());
    write_all(fd, b"more").ctx("write the unlinked file")?;
    unix::lseek(fd, -4, SEEK_END).ctx("lseek")?;
    let mut buf = [0u8; 4];
    read_exact(fd, &mut buf)?;
    ensure!(&buf == b"more", "read back {buf:?}");
    // A new file of the same name is a different file.
    make_file(&path, b"new", 0o644)?;
    ensure!(unix::stat(&path).ctx("stat")?.ino != st.ino, "the new file reuses the open file's inode");
    unix::close(fd).ctx("close")
}

pub fn rename_files() -> TestResult {
    let d = scratch("rename_files")?;
    let (a, b, c) = (format!("{d}/a"), format!("{d}/b"), format!("{d}/c"));
    make_file(&a, b"A", 0o644)?;
    let ino = unix::stat(&a).ctx("stat")?.ino;
    unix::rename(&a, &b).ctx("rename a b")?;
    expect_errno(unix::stat(&a), ENOENT, "the old name after rename")?;
    let st = unix::stat(&b).ctx("stat b")?;
    ensure!(st.ino == ino && file_contents(&b)? == b"A", "rename must move the same file");
    // Onto an existing file: replaced.
    make_file(&c, b"C", 0o644)?;
    unix::rename(&b, &c).ctx("rename onto an existing file")?;
    ensure!(file_contents(&c)? == b"A", "the target must be replaced");
    expect_errno(unix::stat(&b), ENOENT, "the source after replacing")?;
    // Into another directory, with a relative path.
    unix::mkdir(&format!("{d}/sub"), 0o755).ctx("mkdir")?;
    unix::rename(&c, &format!("{d}/sub/moved")).ctx("rename into a directory")?;
    ensure!(file_contents(&format!("{d}/sub/moved"))? == b"A", "moved file");
    // Renaming to itself is allowed and changes nothing.
    let moved = format!("{d}/sub/moved");
    unix::rename(&moved, &moved).ctx("rename onto itself")?;
    ensure!(file_contents(&moved)? == b"A", "rename onto itself");
    expect_errno(unix::rename(&format!("{d}/nothing"), &a), ENOENT, "rename a missing file")?;
    expect_errno(unix::rename(&moved, &format!("{d}/nodir/x")), ENOENT, "rename into a missing dir")?;
    expect_errno(unix::rename(&moved, &format!("{d}/sub")), EISDIR, "a file onto a directory")?;
    make_file(&a, b"A", 0o644)?;
    expect_errno(unix::rename(&format!("{d}/sub"), &a), ENOTDIR, "a directory onto a file")?;
    expect_errno(
        unix::rename(&format!("{d}/sub"), &format!("{d}/sub/deeper")),
        EINVAL,
        "a directory into itself",
    )?;
    Ok(())
}

pub fn rename_directories() -> TestResult {
    let d = scratch("rename_directories")?;
    let (d1, d2) = (format!("{d}/d1"), format!("{d}/d2"));
    unix::mkdir(&d1, 0o755).ctx("mkdir d1")?;
    unix::mkdir(&format!("{d1}/inner"), 0o755).ctx("mkdir d1/inner")?;
    make_file(&format!("{d1}/inner/f"), b"deep", 0o644)?;
    unix::rename(&d1, &d2).ctx("rename d1 d2")?;
    expect_errno(unix::stat(&d1), ENOENT, "the old directory name")?;
    ensure!(file_contents(&format!("{d2}/inner/f"))? == b"deep", "contents under the new name");
    // An open descriptor on a file inside keeps working.
    let fd = unix::open(&format!("{d2}/inner/f"), O_RDONLY, 0).ctx("open")?;
    unix::rename(&d2, &d1).ctx("rename back")?;
    ensure!(read_to_end(fd).ctx("read after the directory moved")? == b"deep", "open file after a rename");
    unix::close(fd).ctx("close")?;
    expect_errno(unix::rename(&d1, &format!("{d1}/inner/x")), EINVAL, "a directory into itself")?;
    // Onto an empty directory: replaced; onto a non-empty one: refused.
    let empty = format!("{d}/empty");
    unix::mkdir(&empty, 0o755).ctx("mkdir empty")?;
    unix::rename(&format!("{d1}/inner"), &empty).ctx("rename onto an empty directory")?;
    ensure!(file_contents(&format!("{empty}/f"))? == b"deep", "moved over an empty directory");
    let full = format!("{d}/full");
    unix::mkdir(&full, 0o755).ctx("mkdir full")?;
    make_file(&format!("{full}/x"), b"", 0o644)?;
    expect_errno(unix::rename(&empty, &full), ENOTEMPTY, "onto a non-empty directory")?;
    // `..` of a moved directory is its new parent.
    unix::rename(&empty, &format!("{full}/moved")).ctx("rename into a subdirectory")?;
    let up = unix::stat(&format!("{full}/moved/..")).ctx("stat moved/..")?;
    ensure!(up.ino == unix::stat(&full).ctx("stat full")?.ino, "`..` after the move");
    Ok(())
}

pub fn mkdir_rmdir() -> TestResult {
    let d = scratch("mkdir_rmdir")?;
    let sub = format!("{d}/sub");
    unix::mkdir(&sub, 0o750).ctx("mkdir")?;
    let st = unix::stat(&sub).ctx("stat")?;
    ensure!(st.mode == S_IFDIR | 0o750, "mode {:o}, expected {:o}", st.mode, S_IFDIR | 0o750);
    expect_errno(unix::mkdir(&sub, 0o755), EEXIST, "mkdir twice")?;
    expect_errno(unix::mkdir(&format!("{d}/no/sub"), 0o755), ENOENT, "mkdir in a missing dir")?;
    let file = format!("{d}/file");
    make_file(&file, b"", 0o644)?;
    expect_errno(unix::mkdir(&file, 0o755), EEXIST, "mkdir over a file")?;
    expect_errno(unix::mkdir(&format!("{file}/sub"), 0o755), ENOTDIR, "mkdir below a file")?;
    make_file(&format!("{sub}/x"), b"", 0o644)?;
    expect_errno(unix::rmdir(&sub), ENOTEMPTY, "rmdir a non-empty directory")?;
    expect_errno(unix::rmdir(&file), ENOTDIR, "rmdir a file")?;
    expect_errno(unix::unlink(&sub), EISDIR, "unlink a directory")?;
    expect_errno(unix::rmdir(&format!("{d}/missing")), ENOENT, "rmdir a missing directory")?;
    expect_errno(unix::rmdir("/"), EBUSY, "rmdir /")?;
    expect_errno(unix::mkdir("/", 0o755), EEXIST, "mkdir /")?;
    expect_errno(unix::mkdir("/tmp/../", 0o755), EEXIST, "mkdir / by another name")?;
    unix::unlink(&format!("{sub}/x")).ctx("unlink")?;
    unix::rmdir(&sub).ctx("rmdir")?;
    expect_errno(unix::stat(&sub), ENOENT, "stat after rmdir")?;
    Ok(())
}

pub fn readdir_lists_entries() -> TestResult {
    let d = scratch("readdir_lists_entries")?;
    let names = ["alpha", "beta", "gamma with space"];
    for n in names {
        make_file(&format!("{d}/{n}"), n.as_bytes(), 0o644)?;
    }
    unix::mkdir(&format!("{d}/dir"), 0o755).ctx("mkdir")?;
    let entries = unix::read_dir(&d).ctx("read_dir")?;
    let mut listed: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    listed.sort_unstable();
    ensure!(listed == [".", "..", "alpha", "beta", "dir", "gamma with space"], "listed {listed:?}");
    for e in &entries {
        let path = format!("{d}/{}", e.name);
        let st = unix::stat(&path).ctx(&format!("stat {path}"))?;
        ensure!(e.ino == st.ino, "{}: readdir ino {} but stat ino {}", e.name, e.ino, st.ino);
        ensure!(
            e.mode & S_IFMT == st.mode & S_IFMT,
            "{}: readdir type {:o}, stat {:o}",
            e.name,
            e.mode,
            st.mode
        );
    }
    let fd = unix::open(&d, O_RDONLY | O_DIRECTORY, 0).ctx("open dir")?;
    ensure!(
        unix::readdir(fd, entries.len() as u64).ctx("readdir past the end")?.is_none(),
        "entry past the end"
    );
    ensure!(unix::readdir(fd, 1000).ctx("readdir far past the end")?.is_none(), "entry far past the end");
    unix::close(fd).ctx("close")?;
    let file = unix::open(&format!("{d}/alpha"), O_RDONLY, 0).ctx("open file")?;
    expect_errno(unix::readdir(file, 0), ENOTDIR, "readdir on a file")?;
    unix::close(file).ctx("close")?;
    // An empty directory has `.` and `..` only.
    let empty = unix::read_dir(&format!("{d}/dir")).ctx("read_dir empty")?;
    ensure!(empty.len() == 2, "an empty directory lists {} entries", empty.len());
    expect_errno(unix::read_dir(&format!("{d}/alpha")), ENOTDIR, "read_dir of a file")?;
    expect_errno(unix::read_dir(&format!("{d}/none")), ENOENT, "read_dir of a missing dir")?;
    Ok(())
}

pub fn stat_and_fstat_fields() -> TestResult {
    let d = scratch("stat_and_fstat_fields")?;
    let path = format!("{d}/f");
    // File times are calendar time (issue 15): the CMOS clock's reading
    // at boot plus uptime, so no earlier than that reading.
    let boot_realtime_ns = runtime::sys::info(abi::InfoKey::BootRealtimeNs);
    let before = unix::clock_realtime_ns();
    ensure!(before >= boot_realtime_ns, "the calendar time {before} is before the boot's {boot_realtime_ns}");
    let fd = unix::open(&path, O_RDWR | O_CREAT, 0o640).ctx("open")?;
    write_all(fd, &[1u8; 5000]).ctx("write")?;
    let st = unix::stat(&path).ctx("stat")?;
    let fst = unix::fstat(fd).ctx("fstat")?;
    ensure!(st == fst, "stat {st:?} and fstat {fst:?} differ");
    ensure!(st.mode == S_IFREG | 0o640, "mode {:o}", st.mode);
    ensure!(st.size_bytes == 5000, "size {}", st.size_bytes);
    ensure!(st.nlink == 1, "nlink {}", st.nlink);
    ensure!(st.uid == 0 && st.gid == 0, "owner {}:{} for a file root created", st.uid, st.gid);
    ensure!(st.ino != 0, "inode 0");
    ensure!(
        st.mtime_ns >= before && st.mtime_ns <= unix::clock_realtime_ns(),
        "mtime {} outside the write's time",
        st.mtime_ns
    );
    unix::sleep_ns(2_000_000);
    write_all(fd, b"x").ctx("write")?;
    let later = unix::fstat(fd).ctx("fstat")?;
    ensure!(later.mtime_ns > st.mtime_ns, "a write must advance the mtime");
    ensure!(later.ino == st.ino && later.size_bytes == 5001, "after a write: {later:?}");
    unix::close(fd).ctx("close")?;
    // The umask (022) applies to creation modes.
    let wide = format!("{d}/wide");
    make_file(&wide, b"", 0o666)?;
    ensure!(unix::stat(&wide).ctx("stat")?.mode == S_IFREG | 0o644, "0666 with umask 022");
    let dir = unix::stat(&d).ctx("stat dir")?;
    ensure!(dir.mode == S_IFDIR | 0o755, "directory mode {:o}", dir.mode);
    let dot = unix::stat(&format!("{d}/.")).ctx("stat dir/.")?;
    ensure!(dot.ino == dir.ino, "`.` is the directory itself");
    let null = unix::stat("/dev/null").ctx("stat /dev/null")?;
    ensure!(null.mode & S_IFMT == S_IFCHR, "/dev/null mode {:o}", null.mode);
    let me = unix::stat("/bin/utest").ctx("stat /bin/utest")?;
    ensure!(me.mode == S_IFREG | 0o755 && me.size_bytes > 0, "/bin/utest: {me:?}");
    let root = unix::stat("/").ctx("stat /")?;
    let root_up = unix::stat("/..").ctx("stat /..")?;
    ensure!(mode::is_dir(root.mode) && root.ino == root_up.ino, "`/..` is `/`");
    expect_errno(unix::stat(&format!("{d}/missing")), ENOENT, "stat a missing file")?;
    expect_errno(unix::stat(&format!("{path}/x")), ENOTDIR, "stat below a file")?;
    expect_errno(unix::stat(""), ENOENT, "stat the empty path")?;
    Ok(())
}

pub fn chdir_and_getcwd() -> TestResult {
    let d = scratch("chdir_and_getcwd")?;
    let start = unix::getcwd().ctx("getcwd")?;
    let r = (|| {
        unix::mkdir(&format!("{d}/sub"), 0o755).ctx("mkdir")?;
        unix::chdir(&d).ctx("chdir")?;
        ensure!(unix::getcwd().ctx("getcwd")? == d, "getcwd after chdir");
        make_file("rel", b"relative", 0o644)?;
        ensure!(file_contents(&format!("{d}/rel"))? == b"relative", "a relative creat");
        unix::chdir("sub").ctx("chdir relative")?;
        ensure!(unix::getcwd().ctx("getcwd")? == format!("{d}/sub"), "getcwd after a relative chdir");
        ensure!(file_contents("../rel")? == b"relative", "a path with ..");
        unix::chdir("../sub/./..").ctx("chdir with . and ..")?;
        ensure!(unix::getcwd().ctx("getcwd")? == d, "getcwd after chdir ../sub/./..");
        expect_errno(unix::chdir("missing"), ENOENT, "chdir to a missing directory")?;
        expect_errno(unix::chdir("rel"), ENOTDIR, "chdir to a file")?;
        ensure!(unix::getcwd().ctx("getcwd")? == d, "a failed chdir moved");
        // A forked child starts in the parent's directory; its chdir is its own.
        let child = spawn(|| {
            let ok =
                unix::getcwd().is_ok_and(|c| c.ends_with("chdir_and_getcwd")) && unix::chdir("/").is_ok();
            if ok { 0 } else { 1 }
        })?;
        expect_exit(child, 0)?;
        ensure!(unix::getcwd().ctx("getcwd")? == d, "the child's chdir moved the parent");
        Ok(())
    })();
    unix::chdir(&start).ctx("chdir back")?;
    r
}

pub fn chmod_and_chown() -> TestResult {
    let d = scratch("chmod_and_chown")?;
    let path = format!("{d}/f");
    make_file(&path, b"", 0o644)?;
    unix::chmod(&path, 0o600).ctx("chmod")?;
    ensure!(unix::stat(&path).ctx("stat")?.mode == S_IFREG | 0o600, "mode after chmod 600");
    unix::chmod(&path, 0o4755).ctx("chmod with set-user-id")?;
    ensure!(unix::stat(&path).ctx("stat")?.mode == S_IFREG | 0o4755, "mode after chmod 4755");
    unix::chown(&path, 1000, 100).ctx("chown")?;
    let st = unix::stat(&path).ctx("stat")?;
    ensure!(st.uid == 1000 && st.gid == 100, "owner {}:{} after chown 1000:100", st.uid, st.gid);
    unix::chmod(&d, 0o700).ctx("chmod a directory")?;
    ensure!(unix::stat(&d).ctx("stat")?.mode == S_IFDIR | 0o700, "directory mode after chmod 700");
    expect_errno(unix::chmod(&format!("{d}/missing"), 0o644), ENOENT, "chmod a missing file")?;
    expect_errno(unix::chown(&format!("{d}/missing"), 1, 1), ENOENT, "chown a missing file")?;
    Ok(())
}

/// Checks made as uid 1000 (in a child, after `setuid`).
pub fn permissions_as_non_root() -> TestResult {
    let d = scratch("permissions_as_non_root")?;
    let secret = format!("{d}/secret");
    let public = format!("{d}/public");
    let script = format!("{d}/prog");
    make_file(&secret, b"secret", 0o600)?;
    make_file(&public, b"public", 0o644)?;
    make_file(&script, b"not run", 0o700)?;
    let locked = format!("{d}/locked");
    unix::mkdir(&locked, 0o755).ctx("mkdir")?;
    make_file(&format!("{locked}/inside"), b"in", 0o644)?;
    // A file the user owns, in a directory root owns, in sticky /tmp.
    let user_tmp = format!("/tmp/utest-user.{}", unix::getpid());
    in_child(|| {
        unix::setuid_gid(Some(1000), Some(1000)).ctx("setuid 1000")?;
        ensure!(
            unix::getuid() == 1000 && unix::getgid() == 1000,
            "ids {}:{}",
            unix::getuid(),
            unix::getgid()
        );
        expect_errno(unix::open(&secret, O_RDONLY, 0), EACCES, "read a 0600 root file")?;
        expect_errno(unix::open(&public, O_WRONLY, 0), EACCES, "write a 0644 root file")?;
        expect_errno(unix::open(&public, O_RDONLY | O_TRUNC, 0), EACCES, "O_TRUNC a 0644 root file")?;
        let fd = unix::open(&public, O_RDONLY, 0).ctx("read a 0644 root file")?;
        unix::close(fd).ctx("close")?;
        expect_errno(unix::creat(&format!("{locked}/new"), 0o644), EACCES, "creat in a 0755 root dir")?;
        expect_errno(unix::mkdir(&format!("{locked}/new"), 0o755), EACCES, "mkdir in a 0755 root dir")?;
        expect_errno(unix::unlink(&format!("{locked}/inside")), EACCES, "unlink in a 0755 root dir")?;
        expect_errno(
            unix::rename(&format!("{locked}/inside"), &format!("{locked}/x")),
            EACCES,
            "rename there",
        )?;
        expect_errno(unix::chmod(&public, 0o666), EPERM, "chmod a root file")?;
        expect_errno(unix::chown(&public, 1000, 1000), EPERM, "chown as non-root")?;
        expect_errno(unix::setuid_gid(Some(0), None), EPERM, "setuid back to root")?;
        expect_errno(
            unix::kill(crate::util::RUNNER_PID.load(core::sync::atomic::Ordering::Relaxed) as i64, 0),
            EPERM,
            "signal a root process",
        )?;
        let e = unix::execve(&script, &["prog"], &[]);
        ensure!(e == EACCES, "exec a 0700 root file: {}, expected EACCES", e.name());
        ensure!(file_contents(&public)? == b"public", "a refused open changed the file");
        // What the user owns, the user may do.
        unix::mkdir(&user_tmp, 0o700).ctx("mkdir in sticky /tmp")?;
        let mine = format!("{user_tmp}/mine");
        make_file(&mine, b"mine", 0o600)?;
        let st = unix::stat(&mine).ctx("stat")?;
        ensure!(st.uid == 1000 && st.gid == 1000, "a file the user made is owned by {}:{}", st.uid, st.gid);
        unix::chmod(&mine, 0o644).ctx("chmod own file")?;
        unix::unlink(&mine).ctx("unlink own file")?;
        unix::rmdir(&user_tmp).ctx("rmdir own directory")?;
        Ok(())
    })?;
    // Root may still read the 0600 file and remove what the user left.
    ensure!(file_contents(&secret)? == b"secret", "root reads a 0600 file");
    if unix::stat(&user_tmp).is_ok() {
        remove_tree(&user_tmp)?;
    }
    Ok(())
}

/// The sticky bit of /tmp: another user's file there cannot be removed,
/// nor another user's empty directory, whatever its mode (sfuzz's worker,
/// uid 1000, could remove its run's directory, root's and mode 0777:
/// `rmdir` did not look at the sticky bit).
pub fn sticky_tmp_protects_other_users_files() -> TestResult {
    let path = format!("/tmp/utest-sticky.{}", unix::getpid());
    make_file(&path, b"root's", 0o666)?;
    let dir = format!("{path}.d");
    unix::mkdir(&dir, 0o777).ctx("mkdir")?;
    unix::chmod(&dir, 0o777).ctx("chmod")?;
    let r = in_child(|| {
        unix::setuid_gid(Some(1000), Some(1000)).ctx("setuid")?;
        expect_errno(unix::unlink(&path), EPERM, "unlink root's file in /tmp")?;
        expect_errno(unix::rename(&path, &format!("{path}.moved")), EPERM, "rename root's file in /tmp")?;
        // Writing it is a matter of its mode (0644 after the umask): refused.
        expect_errno(unix::open(&path, O_WRONLY, 0), EACCES, "write root's 0644 file")?;
        expect_errno(unix::rmdir(&dir), EPERM, "rmdir root's empty 0777 directory in /tmp")?;
        Ok(())
    });
    let removed = unix::unlink(&path).ctx("unlink as root");
    let dir_removed = unix::rmdir(&dir).ctx("rmdir as root");
    r?;
    removed?;
    dir_removed
}

/// Search permission: a user may not reach names below a directory it
/// cannot search (POSIX `EACCES` for any path component).
pub fn search_permission_on_directories() -> TestResult {
    let d = scratch("search_permission_on_directories")?;
    let closed = format!("{d}/closed");
    unix::mkdir(&closed, 0o700).ctx("mkdir")?;
    let inside = format!("{closed}/f");
    make_file(&inside, b"x", 0o644)?;
    in_child(|| {
        unix::setuid_gid(Some(1000), Some(1000)).ctx("setuid")?;
        expect_errno(unix::chdir(&closed), EACCES, "chdir into a 0700 root dir")?;
        expect_errno(unix::read_dir(&closed), EACCES, "list a 0700 root dir")?;
        expect_errno(unix::open(&inside, O_RDONLY, 0), EACCES, "open a 0644 file in a 0700 root dir")?;
        expect_errno(unix::stat(&inside), EACCES, "stat a file in a 0700 root dir")?;
        Ok(())
    })
}

pub fn dev_null() -> TestResult {
    let fd = unix::open("/dev/null", O_RDWR, 0).ctx("open /dev/null")?;
    ensure!(unix::write(fd, &vec![9u8; 10_000]).ctx("write")? == 10_000, "/dev/null takes every byte");
    let mut buf = [0u8; 16];
    ensure!(unix::read(fd, &mut buf).ctx("read")? == 0, "/dev/null reads as end of file");
    let st = unix::fstat(fd).ctx("fstat")?;
    ensure!(st.mode & S_IFMT == S_IFCHR, "fstat mode {:o}", st.mode);
    unix::close(fd).ctx("close")?;
    expect_errno(unix::open("/dev/null/x", O_RDONLY, 0), ENOTDIR, "a name below /dev/null")
}

pub fn standard_descriptors_are_open() -> TestResult {
    for fd in 0..3 {
        let st = unix::fstat(fd).ctx(&format!("fstat {fd}"))?;
        let t = st.mode & S_IFMT;
        ensure!(t == S_IFCHR || t == S_IFREG || t == S_IFIFO, "fd {fd} has type {:o}", t);
    }
    Ok(())
}
