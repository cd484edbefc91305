//! Pipes: end-of-file, errors, and megabytes between processes.

use crate::ensure;
use crate::util::*;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::Errno;
use protocols::unix::errno::*;
use protocols::unix::mode::{S_IFIFO, S_IFMT};
use protocols::unix::signal::SIGPIPE;
use runtime::unix::{self, SEEK_CUR, SEEK_SET};

pub fn data_and_end_of_file() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    ensure!(r != w && r >= 0 && w >= 0, "pipe returned {r}, {w}");
    write_all(w, b"first").ctx("write")?;
    write_all(w, b" second").ctx("write")?;
    let mut buf = [0u8; 64];
    let n = unix::read(r, &mut buf).ctx("read")?;
    ensure!(n > 0 && buf[..n] == b"first second"[..n], "read {:?}", &buf[..n]);
    let mut got = buf[..n].to_vec();
    while got.len() < 12 {
        let n = unix::read(r, &mut buf).ctx("read")?;
        ensure!(n > 0, "end of file before the data");
        got.extend_from_slice(&buf[..n]);
    }
    ensure!(got == b"first second", "read {got:?}");
    // A read does not wait for the buffer to fill: it returns what there is.
    write_all(w, b"abc").ctx("write")?;
    let n = unix::read(r, &mut buf).ctx("read")?;
    ensure!(&buf[..n] == b"abc", "a short read returned {:?}", &buf[..n]);
    // With the write end closed, the rest and then end of file.
    write_all(w, b"tail").ctx("write")?;
    unix::close(w).ctx("close the write end")?;
    ensure!(read_to_end(r).ctx("read to end")? == b"tail", "data written before the close");
    ensure!(unix::read(r, &mut buf).ctx("read after end")? == 0, "end of file repeats");
    unix::close(r).ctx("close")
}

pub fn end_of_file_needs_every_writer_closed() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let w2 = unix::dup(w).ctx("dup")?;
    let child = spawn(move || {
        let _ = unix::close(r);
        let _ = write_all(w2, b"from the child");
        0
    })?;
    expect_exit(child, 0)?;
    unix::close(w2).ctx("close")?;
    // One writer (w) is still open here: the data, then a read would wait.
    let mut buf = [0u8; 64];
    let n = unix::read(r, &mut buf).ctx("read")?;
    ensure!(&buf[..n] == b"from the child", "read {:?}", &buf[..n]);
    unix::close(w).ctx("close")?;
    ensure!(unix::read(r, &mut buf).ctx("read")? == 0, "end of file once every writer closed");
    unix::close(r).ctx("close")
}

pub fn pipe_errors() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let result = (|| {
        expect_errno(unix::lseek(r, 0, SEEK_SET), ESPIPE, "lseek on the read end")?;
        expect_errno(unix::lseek(w, 0, SEEK_CUR), ESPIPE, "lseek on the write end")?;
        expect_errno(unix::write(r, b"x"), EBADF, "write on the read end")?;
        let mut buf = [0u8; 4];
        expect_errno(unix::read(w, &mut buf), EBADF, "read on the write end")?;
        expect_errno(unix::readdir(r, 0), ENOTDIR, "readdir on a pipe")?;
        let st = unix::fstat(r).ctx("fstat")?;
        ensure!(st.mode & S_IFMT == S_IFIFO, "fstat mode {:o}", st.mode);
        write_all(w, b"12345").ctx("write")?;
        let st = unix::fstat(r).ctx("fstat")?;
        ensure!(st.size_bytes == 5, "fstat size of a pipe holding 5 bytes: {}", st.size_bytes);
        Ok(())
    })();
    unix::close(r).ctx("close")?;
    unix::close(w).ctx("close")?;
    result
}

pub fn epipe_without_a_reader() -> TestResult {
    in_child(|| {
        unix::signal_ignore(SIGPIPE, true).ctx("ignore SIGPIPE")?;
        let (r, w) = unix::pipe().ctx("pipe")?;
        write_all(w, b"before").ctx("write with a reader")?;
        unix::close(r).ctx("close the read end")?;
        expect_errno(unix::write(w, b"after"), EPIPE, "write with no reader")?;
        // Also when the reader was another process that ended.
        let (r2, w2) = unix::pipe().ctx("pipe")?;
        let reader = spawn(move || {
            let mut b = [0u8; 1];
            let _ = unix::read(r2, &mut b);
            0
        })?;
        unix::close(r2).ctx("close")?;
        write_all(w2, b"x").ctx("write")?;
        expect_exit(reader, 0)?;
        expect_errno(unix::write(w2, b"y"), EPIPE, "write after the reader exited")?;
        unix::close(w).ctx("close")?;
        unix::close(w2).ctx("close")
    })
}

/// A writer blocked on a full pipe wakes with `EPIPE` (or a short count)
/// when the reader goes.
pub fn blocked_writer_wakes_when_the_reader_goes() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let (rep_r, rep_w) = unix::pipe().ctx("pipe")?;
    let writer = spawn(move || {
        let _ = unix::signal_ignore(SIGPIPE, true);
        let _ = unix::close(r);
        let big = vec![1u8; 256 * 1024];
        let mut written = 0usize;
        let outcome = loop {
            match unix::write(w, &big) {
                Ok(n) => written += n,
                Err(e) => break e.0,
            }
        };
        let _ = write_all(rep_w, format!("{written} {outcome}").as_bytes());
        0
    })?;
    unix::close(w).ctx("close")?;
    unix::close(rep_w).ctx("close")?;
    // Read a little so the writer is surely mid-way, then go.
    let mut buf = [0u8; 1000];
    read_exact(r, &mut buf)?;
    unix::close(r).ctx("close the read end")?;
    let report = read_to_end(rep_r).ctx("read the report")?;
    unix::close(rep_r).ctx("close")?;
    expect_exit(writer, 0)?;
    let text = alloc::string::String::from_utf8_lossy(&report).into_owned();
    let outcome = text.split(' ').nth(1).and_then(|s| s.parse::<u64>().ok().map(Errno));
    ensure!(outcome == Some(EPIPE), "the writer ended with {text:?}, expected EPIPE ({EPIPE})");
    Ok(())
}

const MEGABYTES_BYTES: usize = 4 << 20;

/// Writer → relay → this process: 4 MiB of a pseudo-random stream through
/// two pipes, compared byte for byte and by checksum. The relay reads in
/// odd sizes, so pipe reads of every length are exercised.
pub fn megabytes_between_processes() -> TestResult {
    let (r1, w1) = unix::pipe().ctx("pipe 1")?;
    let (r2, w2) = unix::pipe().ctx("pipe 2")?;
    let writer = spawn(move || {
        for fd in [r1, r2, w2] {
            let _ = unix::close(fd);
        }
        let mut stream = Stream::new(0x5eed);
        let mut chunk = vec![0u8; 8192];
        let mut sent = 0;
        while sent < MEGABYTES_BYTES {
            let n = chunk.len().min(MEGABYTES_BYTES - sent);
            stream.fill(&mut chunk[..n]);
            if write_all(w1, &chunk[..n]).is_err() {
                return 1;
            }
            sent += n;
        }
        0
    })?;
    let relay = spawn(move || {
        for fd in [w1, r2] {
            let _ = unix::close(fd);
        }
        let mut buf = vec![0u8; 3001];
        loop {
            match unix::read(r1, &mut buf) {
                Ok(0) => return 0,
                Ok(n) => {
                    if write_all(w2, &buf[..n]).is_err() {
                        return 2;
                    }
                }
                Err(_) => return 3,
            }
        }
    })?;
    for fd in [r1, w1, w2] {
        unix::close(fd).ctx("close")?;
    }
    let mut expected = Stream::new(0x5eed);
    let (mut sum_got, mut sum_want) = (Fnv::new(), Fnv::new());
    let mut want = vec![0u8; MESSAGE_DATA_BYTES];
    let mut buf = vec![0u8; MESSAGE_DATA_BYTES];
    let mut total = 0usize;
    let mut mismatch: Option<usize> = None;
    let mut error = None;
    loop {
        let n = match unix::read(r2, &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                error = Some(e);
                break;
            }
        };
        // The expected stream is regenerated a block at a time (the same
        // words as the writer's, whose chunks are multiples of 8 bytes).
        let got = &buf[..n];
        sum_got.add(got);
        for (i, &b) in got.iter().enumerate() {
            let at = total + i;
            if at.is_multiple_of(want.len()) {
                expected.fill(&mut want);
            }
            if mismatch.is_none() && want[at % want.len()] != b {
                mismatch = Some(at);
            }
            sum_want.add(&want[at % want.len()..at % want.len() + 1]);
        }
        total += n;
    }
    unix::close(r2).ctx("close")?;
    let (w_status, r_status) = (wait_for(writer)?, wait_for(relay)?);
    if let Some(e) = error {
        return Err(format!("read: {}", e.name()));
    }
    ensure!(w_status.exit_code() == Some(0), "the writer {}", describe(&w_status));
    ensure!(r_status.exit_code() == Some(0), "the relay {}", describe(&r_status));
    ensure!(total == MEGABYTES_BYTES, "{total} bytes arrived, {MEGABYTES_BYTES} were sent");
    ensure!(mismatch.is_none(), "the data differs first at byte {}", mismatch.unwrap_or(0));
    ensure!(sum_got.0 == sum_want.0, "checksum {:#x}, expected {:#x}", sum_got.0, sum_want.0);
    Ok(())
}

/// Several writers of records no longer than `PIPE_BUF`: every record
/// arrives whole (POSIX: such writes are atomic).
pub fn small_writes_are_atomic() -> TestResult {
    const WRITERS: u8 = 4;
    const RECORDS: usize = 150;
    const RECORD_BYTES: usize = 100;
    let (r, w) = unix::pipe().ctx("pipe")?;
    let mut pids = Vec::new();
    for id in 0..WRITERS {
        let pid = spawn(move || {
            let _ = unix::close(r);
            let mut record = [b'a' + id; RECORD_BYTES];
            for n in 0..RECORDS {
                record[1] = (n % 250) as u8;
                if write_all(w, &record).is_err() {
                    return 1;
                }
            }
            0
        })?;
        pids.push(pid);
    }
    unix::close(w).ctx("close")?;
    let all = read_to_end(r).ctx("read")?;
    unix::close(r).ctx("close")?;
    for pid in pids {
        expect_exit(pid, 0)?;
    }
    let want = WRITERS as usize * RECORDS * RECORD_BYTES;
    ensure!(all.len() == want, "{} bytes arrived, expected {want}", all.len());
    let mut next = [0usize; WRITERS as usize];
    for (i, rec) in all.chunks(RECORD_BYTES).enumerate() {
        let id = rec[0].wrapping_sub(b'a');
        ensure!(id < WRITERS, "record {i} starts with {:#x}", rec[0]);
        let whole = rec[2..].iter().all(|&b| b == rec[0]);
        ensure!(whole, "record {i} from writer {id} was interleaved with another");
        let n = next[id as usize];
        ensure!(rec[1] as usize == n % 250, "writer {id}'s records out of order at {n}");
        next[id as usize] += 1;
    }
    Ok(())
}

/// A reader of a pipe whose only writer is killed gets the data written
/// before, then end of file.
pub fn reader_sees_end_of_file_when_the_writer_dies() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let writer = spawn(move || {
        let _ = unix::close(r);
        let _ = write_all(w, b"last words");
        // Blocks forever holding the write end, until killed.
        let (r2, _w2) = match unix::pipe() {
            Ok(p) => p,
            Err(_) => return 1,
        };
        let mut b = [0u8; 1];
        let _ = unix::read(r2, &mut b);
        0
    })?;
    unix::close(w).ctx("close")?;
    let mut buf = [0u8; 10];
    read_exact(r, &mut buf)?;
    ensure!(&buf == b"last words", "read {buf:?}");
    unix::kill(writer as i64, protocols::unix::signal::SIGKILL).ctx("kill the writer")?;
    expect_signal(writer, protocols::unix::signal::SIGKILL)?;
    let mut b = [0u8; 4];
    let n = unix::read(r, &mut b).ctx("read after the writer died")?;
    ensure!(n == 0, "read {n} bytes after the only writer died");
    unix::close(r).ctx("close")
}
