//! Pipes: end-of-file, errors, and megabytes between processes.

use crate::ensure;
use crate::util::*;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::Errno;
use protocols::unix::errno::*;
use protocols::unix::mode::{S_IFIFO, S_IFMT};
use protocols::unix::signal::SIGPIPE;
use runtime::unix::{self, Fd, SEEK_CUR, SEEK_SET};

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

// --- seed 002: the three designs, loans, and their safety ---

/// Byte `pos` of stream `seed`: a function of the position alone, so a
/// reader can check any byte it gets, whatever the read and write sizes.
fn pattern(seed: u64, pos: u64) -> u8 {
    let x = (pos ^ seed.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (x >> 56) as u8 ^ (pos as u8)
}

fn fill_pattern(seed: u64, from: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern(seed, from + i as u64);
    }
}

/// The first position in `got` (at stream offset `from`) that is not
/// stream `seed`'s byte.
fn first_wrong(seed: u64, from: u64, got: &[u8]) -> Option<u64> {
    got.iter().enumerate().find(|&(i, &b)| b != pattern(seed, from + i as u64)).map(|(i, _)| from + i as u64)
}

/// xorshift for sizes.
struct Sizes(u64);

impl Sizes {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// 1 byte to `max` bytes, spread evenly over the powers of two.
    fn size(&mut self, max: usize) -> usize {
        let bits = (usize::BITS - max.leading_zeros()) as u64;
        let top = 1usize << (self.next() % bits);
        (1 + (self.next() as usize) % top).min(max)
    }
}

/// Write `total` bytes of stream `seed` in sizes from 1 byte to `max`
/// (seeded by `sizes`); 0 on success, else a code.
fn write_stream(w: Fd, seed: u64, total: usize, max: usize, sizes: u64) -> i32 {
    let mut buf = vec![0u8; max];
    let mut sizes = Sizes(sizes | 1);
    let mut sent = 0;
    while sent < total {
        let n = sizes.size(max).min(total - sent);
        fill_pattern(seed, sent as u64, &mut buf[..n]);
        match unix::write(w, &buf[..n]) {
            Ok(k) if k == n => sent += n,
            _ => return 1,
        }
    }
    0
}

/// Read to end of file in sizes from 1 byte to `max`, checking every
/// byte against stream `seed`; the bytes read.
fn read_stream(r: Fd, seed: u64, max: usize, sizes: u64) -> Result<usize, String> {
    let mut buf = vec![0u8; max];
    let mut sizes = Sizes(sizes | 1);
    let mut got = 0usize;
    loop {
        let n = sizes.size(max);
        let k = unix::read(r, &mut buf[..n]).ctx("read")?;
        if k == 0 {
            return Ok(got);
        }
        ensure!(k <= n, "a read of {n} returned {k}");
        if let Some(at) = first_wrong(seed, got as u64, &buf[..k]) {
            return Err(format!("byte {at} of the stream is wrong"));
        }
        got += k;
    }
}

/// One writer and one reader process, sizes 1 B to 1 MiB on both sides.
pub fn mixed_sizes_up_to_a_megabyte_arrive_whole() -> TestResult {
    const TOTAL: usize = 6 << 20;
    const MAX: usize = 1 << 20;
    let (r, w) = unix::pipe().ctx("pipe")?;
    let writer = spawn(move || {
        let _ = unix::close(r);
        write_stream(w, 0x11, TOTAL, MAX, 7)
    })?;
    unix::close(w).ctx("close")?;
    let got = read_stream(r, 0x11, MAX, 99);
    unix::close(r).ctx("close")?;
    expect_exit(writer, 0)?;
    let got = got?;
    ensure!(got == TOTAL, "{got} bytes arrived, {TOTAL} were written");
    Ok(())
}

/// Several pipes, each with its own writer and reader process, at once
/// (on every CPU the machine has).
pub fn many_pipe_pairs_at_once() -> TestResult {
    const PAIRS: u64 = 6;
    const TOTAL: usize = 768 * 1024;
    let mut pids = Vec::new();
    for pair in 0..PAIRS {
        let (r, w) = unix::pipe().ctx("pipe")?;
        pids.push(spawn(move || {
            let _ = unix::close(r);
            write_stream(w, pair, TOTAL, 256 * 1024, pair + 3)
        })?);
        pids.push(spawn(move || {
            let _ = unix::close(w);
            match read_stream(r, pair, 200 * 1024, pair + 5) {
                Ok(n) if n == TOTAL => 0,
                _ => 1,
            }
        })?);
        unix::close(r).ctx("close")?;
        unix::close(w).ctx("close")?;
    }
    for pid in pids {
        expect_exit(pid, 0)?;
    }
    Ok(())
}

/// Writes alternate between the buffered path and the loaned one (sizes
/// on both sides of `pipe.loan_min`, in both directions, several times
/// each), with reads smaller and larger than the writes: the stream comes
/// out in order and nothing hangs (the path that hung NetBSD).
pub fn buffered_and_loaned_writes_switch_both_ways() -> TestResult {
    let min = loan_min()?;
    let sizes =
        [1, min - 1, min, 3, min + 1, 4096, 2 * min, min - 1, 10, 64 * 1024, 1, min, 5000, 3 * min + 7];
    let (r, w) = unix::pipe().ctx("pipe")?;
    let total: usize = sizes.iter().sum::<usize>() * 3;
    let writer = spawn(move || {
        let _ = unix::close(r);
        let mut buf = vec![0u8; 4 * min + 64 * 1024];
        let mut sent = 0usize;
        for _ in 0..3 {
            for &n in &sizes {
                fill_pattern(0x22, sent as u64, &mut buf[..n]);
                if unix::write(w, &buf[..n]) != Ok(n) {
                    return 1;
                }
                sent += n;
            }
        }
        0
    })?;
    unix::close(w).ctx("close")?;
    let got = read_stream(r, 0x22, 3 * min, 13);
    unix::close(r).ctx("close")?;
    expect_exit(writer, 0)?;
    ensure!(got? == total, "not every byte arrived");
    Ok(())
}

/// bw_pipe's overwrite variant: right after each `write` returns, the
/// writer scribbles over its buffer and refills it for the next; the
/// reader must see each chunk as it was written.
pub fn overwriting_the_buffer_after_write_changes_nothing_read() -> TestResult {
    const CHUNK: usize = 64 * 1024;
    const CHUNKS: usize = 48;
    let (r, w) = unix::pipe().ctx("pipe")?;
    let writer = spawn(move || {
        let _ = unix::close(r);
        // Page-aligned, as bw_pipe's buffers are, so whole pages may be lent.
        let mut buf = vec![0u8; CHUNK + PAGE_BYTES];
        let off = buf.as_ptr().align_offset(PAGE_BYTES);
        for c in 0..CHUNKS {
            let chunk = &mut buf[off..off + CHUNK];
            fill_pattern(0x33, (c * CHUNK) as u64, chunk);
            if unix::write(w, chunk) != Ok(CHUNK) {
                return 1;
            }
            chunk.fill(0xee);
        }
        0
    })?;
    unix::close(w).ctx("close")?;
    let mut buf = vec![0u8; CHUNK + PAGE_BYTES];
    let off = buf.as_ptr().align_offset(PAGE_BYTES);
    let mut got = 0usize;
    let mut wrong = None;
    loop {
        let n = unix::read(r, &mut buf[off..off + CHUNK]).ctx("read")?;
        if n == 0 {
            break;
        }
        if wrong.is_none() {
            wrong = first_wrong(0x33, got as u64, &buf[off..off + n]);
        }
        got += n;
    }
    unix::close(r).ctx("close")?;
    expect_exit(writer, 0)?;
    ensure!(wrong.is_none(), "byte {} changed after its write returned", wrong.unwrap_or(0));
    ensure!(got == CHUNK * CHUNKS, "{got} bytes arrived");
    Ok(())
}

/// A writer killed while a big write is on loan: the reader gets a prefix
/// of the stream, every byte right, then end of file; never garbage.
pub fn writer_killed_mid_loan_leaves_a_clean_prefix() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let writer = spawn(move || {
        let _ = unix::close(r);
        // Big writes, forever: each one waits on loan until read.
        write_stream(w, 0x44, usize::MAX / 2, 512 * 1024, 3)
    })?;
    unix::close(w).ctx("close")?;
    let mut buf = vec![0u8; 100 * 1024];
    let mut got = 0usize;
    // Read some of it, then kill the writer mid-write.
    while got < 1 << 20 {
        let n = unix::read(r, &mut buf).ctx("read")?;
        ensure!(n > 0, "end of file before the kill");
        if let Some(at) = first_wrong(0x44, got as u64, &buf[..n]) {
            return Err(format!("byte {at} is wrong before the kill"));
        }
        got += n;
    }
    unix::kill(writer as i64, protocols::unix::signal::SIGKILL).ctx("kill the writer")?;
    expect_signal(writer, protocols::unix::signal::SIGKILL)?;
    loop {
        match unix::read(r, &mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if let Some(at) = first_wrong(0x44, got as u64, &buf[..n]) {
                    return Err(format!("byte {at} is wrong after the kill"));
                }
                got += n;
            }
            // An error is allowed (the writer's buffer went); garbage is not.
            Err(_) => break,
        }
    }
    unix::close(r).ctx("close")
}

/// Readers killed while they wait or read: the writer is answered (a
/// short count or `EPIPE` once no reader is left), never left hanging,
/// and a surviving reader still gets only stream bytes, in order.
pub fn readers_killed_mid_transfer() -> TestResult {
    in_child(|| {
        unix::signal_ignore(SIGPIPE, true).ctx("ignore SIGPIPE")?;
        let (r, w) = unix::pipe().ctx("pipe")?;
        let (rep_r, rep_w) = unix::pipe().ctx("report pipe")?;
        let victim = spawn(move || {
            let _ = unix::close(w);
            let mut buf = vec![0u8; 300 * 1024];
            loop {
                let _ = unix::read(r, &mut buf);
            }
        })?;
        let writer = spawn(move || {
            let _ = unix::close(r);
            let code = write_stream(w, 0x55, usize::MAX / 2, 512 * 1024, 9);
            let _ = write_all(rep_w, b"done");
            code
        })?;
        unix::close(w).ctx("close")?;
        unix::close(rep_w).ctx("close")?;
        // Let the victim read a while, then kill it: the writer must
        // notice no reader is left once the parent's read end goes too.
        unix::sleep_ns(200_000_000);
        unix::kill(victim as i64, protocols::unix::signal::SIGKILL).ctx("kill the reader")?;
        expect_signal(victim, protocols::unix::signal::SIGKILL)?;
        let mut b = [0u8; 64 * 1024];
        // The parent reads a little (any bytes, the victim took some).
        let n = unix::read(r, &mut b).ctx("read after the kill")?;
        ensure!(n > 0, "end of file while the writer lives");
        unix::close(r).ctx("close the last read end")?;
        let report = read_to_end(rep_r).ctx("the writer's report")?;
        unix::close(rep_r).ctx("close")?;
        ensure!(report == b"done", "the writer did not finish: {report:?}");
        // It ended with EPIPE (code 1), not by hanging.
        expect_exit(writer, 1)
    })
}

/// POSIX: writes of at most `PIPE_BUF` (4096) bytes from several writers
/// are never interleaved, in every design (the small one's buffer holds
/// exactly one of them).
pub fn pipe_buf_writes_from_several_writers_are_atomic() -> TestResult {
    const WRITERS: u8 = 4;
    const RECORDS: usize = 40;
    const RECORD_BYTES: usize = protocols::unix::pipe::ATOMIC_BYTES;
    let (r, w) = unix::pipe().ctx("pipe")?;
    let mut pids = Vec::new();
    for id in 0..WRITERS {
        pids.push(spawn(move || {
            let _ = unix::close(r);
            let mut record = vec![b'a' + id; RECORD_BYTES];
            for n in 0..RECORDS {
                record[1] = n as u8;
                if unix::write(w, &record) != Ok(RECORD_BYTES) {
                    return 1;
                }
            }
            0
        })?);
    }
    unix::close(w).ctx("close")?;
    // Odd read sizes, so records are read in pieces.
    let mut all = Vec::new();
    let mut buf = vec![0u8; 3001];
    loop {
        let n = unix::read(r, &mut buf).ctx("read")?;
        if n == 0 {
            break;
        }
        all.extend_from_slice(&buf[..n]);
    }
    unix::close(r).ctx("close")?;
    for pid in pids {
        expect_exit(pid, 0)?;
    }
    ensure!(all.len() == WRITERS as usize * RECORDS * RECORD_BYTES, "{} bytes arrived", all.len());
    let mut next = [0usize; WRITERS as usize];
    for (i, rec) in all.chunks(RECORD_BYTES).enumerate() {
        let id = rec[0].wrapping_sub(b'a');
        ensure!(id < WRITERS, "record {i} starts with {:#x}", rec[0]);
        ensure!(rec[2..].iter().all(|&b| b == rec[0]), "record {i} was interleaved with another writer's");
        ensure!(rec[1] as usize == next[id as usize], "writer {id}'s records out of order");
        next[id as usize] += 1;
    }
    Ok(())
}

/// `pipe.loan_cap` reached: with a cap smaller than one write, every
/// loan-sized write falls back to the buffer, and still arrives whole;
/// the monitor counts the refusals. The cap is restored afterwards.
pub fn loan_cap_reached_writes_fall_back_whole() -> TestResult {
    let before = limits()?;
    let cap_before = limit(&before, "pipe.loan_cap")?;
    unix::set_limit("pipe.loan_cap=64K").ctx("set pipe.loan_cap")?;
    let result = (|| {
        let refused_before = limit(&limits()?, "pipe.loan_refused")?;
        let mut pids = Vec::new();
        for pair in 0..3u64 {
            let (r, w) = unix::pipe().ctx("pipe")?;
            pids.push(spawn(move || {
                let _ = unix::close(r);
                write_stream(w, 0x60 + pair, 1 << 20, 256 * 1024, pair + 1)
            })?);
            pids.push(spawn(move || {
                let _ = unix::close(w);
                match read_stream(r, 0x60 + pair, 256 * 1024, pair + 2) {
                    Ok(n) if n == 1 << 20 => 0,
                    _ => 1,
                }
            })?);
            unix::close(r).ctx("close")?;
            unix::close(w).ctx("close")?;
        }
        for pid in pids {
            expect_exit(pid, 0)?;
        }
        let now = limits()?;
        if limit(&now, "pipe")? == 0 {
            // `loan` (value 0 in `limit`'s reading): loans were wanted.
            ensure!(limit(&now, "pipe.loan_refused")? > refused_before, "no loan was refused: {now}");
        }
        ensure!(limit(&now, "pipe.loan_granted")? <= 64 * 1024, "more granted than the cap: {now}");
        Ok(())
    })();
    unix::set_limit(&format!("pipe.loan_cap={cap_before}")).ctx("restore pipe.loan_cap")?;
    result
}

/// Only root sets limits; bad names and values are refused.
pub fn limits_are_root_only_and_checked() -> TestResult {
    expect_errno(unix::set_limit("pipe.loan_min=0"), EINVAL, "loan_min 0")?;
    expect_errno(unix::set_limit("pipe=medium"), EINVAL, "an unknown design")?;
    expect_errno(unix::set_limit("pipe.nothing=1"), EINVAL, "an unknown name")?;
    expect_errno(unix::set_limit("no equals sign"), EINVAL, "no value")?;
    let min = loan_min()?;
    unix::set_limit(&format!("pipe.loan_min={}", min + 1)).ctx("root sets loan_min")?;
    let now = loan_min()?;
    unix::set_limit(&format!("pipe.loan_min={min}")).ctx("restore loan_min")?;
    ensure!(now == min + 1, "loan_min reads {now} after setting {}", min + 1);
    in_child(|| {
        unix::setuid_gid(Some(1000), Some(1000)).ctx("setuid")?;
        expect_errno(unix::set_limit("pipe.loan_min=1"), EPERM, "a user sets loan_min")?;
        expect_errno(unix::set_limit("pipe=small"), EPERM, "a user sets the design")
    })?;
    ensure!(loan_min()? == min, "a user's refused change changed loan_min");
    Ok(())
}

/// The design in force when utest started is the boot option's (`pipe=`,
/// default `loan`), and so is the design now unless `--modes` changed it.
pub fn the_design_is_the_boot_option() -> TestResult {
    let mut buf = [0u8; 1024];
    let n = runtime::sys::kernel_options(&mut buf).map_err(|e| format!("kernel options: {}", e.name()))?;
    let line = core::str::from_utf8(&buf[..n.min(buf.len())]).unwrap_or("");
    let want = protocols::options::lookup(line, "pipe").unwrap_or("loan");
    let at_start = crate::BOOT_DESIGN.load(core::sync::atomic::Ordering::Relaxed);
    ensure!(at_start == design_number(want), "design {at_start} at start, the boot option says {want}");
    if !crate::MODE_OVERRIDE.load(core::sync::atomic::Ordering::Relaxed) {
        ensure!(limit(&limits()?, "pipe")? == design_number(want), "the design changed under the tests");
    }
    Ok(())
}

/// The designs as numbers: loan 0, big 1, small 2, else `u64::MAX`.
pub fn design_number(name: &str) -> u64 {
    match name {
        "loan" => 0,
        "big" => 1,
        "small" => 2,
        _ => u64::MAX,
    }
}

fn limits() -> Result<String, String> {
    unix::limits().ctx("limits")
}

/// A number from the limits text; the design reads as 0 (loan), 1 (big), 2 (small).
fn limit(text: &str, name: &str) -> Result<u64, String> {
    let value = text
        .lines()
        .find_map(|l| l.split_once('=').filter(|(k, _)| *k == name).map(|(_, v)| v))
        .ok_or(format!("no {name} in {text:?}"))?;
    match design_number(value) {
        u64::MAX => value.parse().map_err(|_| format!("{name}={value} is not a number")),
        n => Ok(n),
    }
}

fn loan_min() -> Result<usize, String> {
    limit(&limits()?, "pipe.loan_min").map(|n| n as usize)
}
