//! Block devices from a UNIX program: `/dev/vda` (the virtio-blk driver,
//! `cargo xtask test` attaches a fresh disk image to the boots that run
//! these tests). Data integrity (patterned blocks written and read back in
//! several request sizes; the host then checks the same pattern in the
//! image file), the refusals of `protocols::unix::block` (partial blocks,
//! unaligned offsets, past the end, too long, a buffer in unmapped
//! memory), several clients at once, and a client killed mid-request.
//!
//! Layout of the disk: the first `DISK_PATTERN_BYTES` hold the pattern the
//! host checks (written by `patterned_blocks_round_trip` and left there);
//! the other tests use the blocks after it.

use crate::ensure;
use crate::raw;
use crate::util::*;
use abi::test_protocol::{DISK_PATTERN_BYTES, disk_pattern_byte};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::block::{BLOCK_BYTES, MAX_TRANSFER_BYTES};
use protocols::unix::errno::*;
use protocols::unix::mode::{S_IFBLK, S_IFMT};
use protocols::unix::open_flags::*;
use protocols::unix::signal::SIGKILL;
use runtime::unix::{self, Fd, SEEK_CUR, SEEK_END, SEEK_SET};

const DISK: &str = "/dev/vda";
const KIB: usize = 1024;
/// Where the tests other than the pattern's may write.
const SCRATCH_START: u64 = DISK_PATTERN_BYTES;

fn open_disk(flags: u64) -> Result<(Fd, u64), alloc::string::String> {
    let fd = unix::open(DISK, flags, 0).ctx("open /dev/vda (does the boot attach a disk?)")?;
    let size = unix::fstat(fd).ctx("fstat /dev/vda")?.size_bytes;
    ensure!(
        size >= SCRATCH_START + 4 * MAX_TRANSFER_BYTES,
        "the disk is too small for the tests: {size} bytes"
    );
    Ok((fd, size))
}

fn pattern(offset: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| disk_pattern_byte(offset + i)).collect()
}

fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

pub fn vda_is_a_block_device() -> TestResult {
    let st = unix::stat(DISK).ctx("stat /dev/vda")?;
    ensure!(st.mode & S_IFMT == S_IFBLK, "stat mode {:o}, expected a block device", st.mode);
    ensure!(st.mode & 0o777 == 0o660, "permissions {:o}", st.mode & 0o777);
    let (fd, size) = open_disk(O_RDONLY)?;
    let fst = unix::fstat(fd).ctx("fstat")?;
    ensure!(fst.mode & S_IFMT == S_IFBLK, "fstat mode {:o}", fst.mode);
    ensure!(size.is_multiple_of(BLOCK_BYTES), "size {size} is not whole blocks");
    ensure!(unix::lseek(fd, 0, SEEK_END).ctx("lseek to the end")? == size, "SEEK_END is the device's size");
    let mut buf = vec![0u8; 4 * KIB];
    ensure!(unix::read(fd, &mut buf).ctx("read at the end")? == 0, "a read at the end is end of file");
    unix::close(fd).ctx("close")
}

/// The pattern over the first `DISK_PATTERN_BYTES`, written 64 KiB per
/// `write` (each one request) and read back whole, then in pieces of
/// other sizes; `fsync` in between. Left on the disk for the host.
pub fn patterned_blocks_round_trip() -> TestResult {
    let (fd, _) = open_disk(O_RDWR)?;
    let chunk = 64 * KIB;
    for offset in (0..DISK_PATTERN_BYTES).step_by(chunk) {
        let n = unix::write(fd, &pattern(offset, chunk)).ctx("write 64 KiB")?;
        ensure!(n == chunk, "wrote {n} of {chunk} bytes");
    }
    unix::fsync(fd).ctx("fsync")?;
    ensure!(unix::lseek(fd, 0, SEEK_CUR).ctx("lseek")? == DISK_PATTERN_BYTES, "the offset advanced");
    let want = pattern(0, DISK_PATTERN_BYTES as usize);
    unix::lseek(fd, 0, SEEK_SET).ctx("lseek 0")?;
    let mut all = vec![0u8; DISK_PATTERN_BYTES as usize];
    ensure!(unix::read(fd, &mut all).ctx("read 1 MiB")? == all.len(), "a 1 MiB read is one whole request");
    if let Some(i) = first_difference(&all, &want) {
        return Err(format!("byte {i} read back as {:#x}, written {:#x}", all[i], want[i]));
    }
    for piece in [BLOCK_BYTES as usize, 4 * KIB, 32 * KIB + 512] {
        unix::lseek(fd, 0, SEEK_SET).ctx("lseek 0")?;
        let mut offset = 0;
        let mut buf = vec![0u8; piece];
        while offset + piece <= want.len() {
            ensure!(unix::read(fd, &mut buf).ctx("read")? == piece, "short read of {piece} bytes");
            if let Some(i) = first_difference(&buf, &want[offset..offset + piece]) {
                return Err(format!("{piece}-byte reads: byte {} differs", offset + i));
            }
            offset += piece;
        }
    }
    unix::close(fd).ctx("close")
}

/// Bad transfers are refused whole with `EINVAL`, and nothing moves.
pub fn bad_transfers_are_refused_whole() -> TestResult {
    let (fd, size) = open_disk(O_RDWR)?;
    let block = BLOCK_BYTES as usize;
    let at = SCRATCH_START as i64;
    unix::lseek(fd, at, SEEK_SET).ctx("lseek")?;
    let mut buf = vec![0u8; 4 * KIB];
    expect_errno(unix::write(fd, &buf[..100]), EINVAL, "a 100-byte write")?;
    expect_errno(unix::read(fd, &mut buf[..block + 1]), EINVAL, "a 513-byte read")?;
    ensure!(unix::lseek(fd, 0, SEEK_CUR).ctx("lseek")? == at as u64, "a refused request moved the offset");
    unix::lseek(fd, at + 100, SEEK_SET).ctx("lseek to an unaligned offset")?;
    expect_errno(unix::read(fd, &mut buf[..block]), EINVAL, "a read at an unaligned offset")?;
    expect_errno(unix::write(fd, &buf[..block]), EINVAL, "a write at an unaligned offset")?;
    let too_long = vec![0u8; MAX_TRANSFER_BYTES as usize + block];
    unix::lseek(fd, at, SEEK_SET).ctx("lseek")?;
    expect_errno(unix::write(fd, &too_long), EINVAL, "a write longer than MAX_TRANSFER_BYTES")?;
    // The last block holds a known value; a write that runs past the end
    // must leave it alone.
    let last = (size - BLOCK_BYTES) as i64;
    unix::lseek(fd, last, SEEK_SET).ctx("lseek to the last block")?;
    ensure!(unix::write(fd, &vec![0x11u8; block]).ctx("write the last block")? == block, "short write");
    unix::lseek(fd, last, SEEK_SET).ctx("lseek")?;
    expect_errno(unix::write(fd, &vec![0x22u8; 2 * block]), EINVAL, "a write past the end")?;
    unix::lseek(fd, last, SEEK_SET).ctx("lseek")?;
    let mut got = vec![0u8; block];
    ensure!(unix::read(fd, &mut got).ctx("read the last block")? == block, "short read");
    ensure!(got.iter().all(|&b| b == 0x11), "a refused write changed the last block");
    unix::lseek(fd, last, SEEK_SET).ctx("lseek")?;
    expect_errno(unix::read(fd, &mut vec![0u8; 2 * block]), EINVAL, "a read past the end")?;
    unix::lseek(fd, size as i64, SEEK_SET).ctx("lseek to the end")?;
    expect_errno(unix::write(fd, &got), EINVAL, "a write at the end")?;
    unix::close(fd).ctx("close")
}

/// A write that runs past the end writes nothing at all (not even the
/// blocks before the end).
pub fn past_the_end_writes_nothing() -> TestResult {
    let (fd, size) = open_disk(O_RDWR)?;
    let block = BLOCK_BYTES as usize;
    let start = (size - 2 * BLOCK_BYTES) as i64;
    unix::lseek(fd, start, SEEK_SET).ctx("lseek")?;
    ensure!(
        unix::write(fd, &vec![0x33u8; 2 * block]).ctx("write the last two blocks")? == 2 * block,
        "short"
    );
    unix::lseek(fd, start, SEEK_SET).ctx("lseek")?;
    expect_errno(unix::write(fd, &vec![0x44u8; 3 * block]), EINVAL, "a write one block past the end")?;
    unix::lseek(fd, start, SEEK_SET).ctx("lseek")?;
    let mut got = vec![0u8; 2 * block];
    ensure!(unix::read(fd, &mut got).ctx("read")? == 2 * block, "short read");
    ensure!(got.iter().all(|&b| b == 0x33), "a refused write changed the blocks before the end");
    unix::close(fd).ctx("close")
}

/// A buffer in memory the process does not have: `EFAULT`, and the
/// driver goes on. (The runtime touches a UNIX program's buffers before a
/// call so that their pages arrive; the child turns that off, as a C
/// program's `read` would not touch them.)
pub fn unmapped_buffer_is_efault() -> TestResult {
    in_child(|| {
        let (fd, _) = open_disk(O_RDWR)?;
        unix::lseek(fd, SCRATCH_START as i64, SEEK_SET).ctx("lseek")?;
        runtime::sys::set_touch_buffers(false);
        let read = unix::read(fd, raw::unmapped_buffer(64 * KIB));
        unix::lseek(fd, SCRATCH_START as i64, SEEK_SET).ctx("lseek")?;
        let write = unix::write(fd, raw::unmapped_buffer(64 * KIB));
        runtime::sys::set_touch_buffers(true);
        expect_errno(read, EFAULT, "a read into unmapped memory")?;
        expect_errno(write, EFAULT, "a write from unmapped memory")?;
        let mut buf = vec![0u8; 4 * KIB];
        unix::lseek(fd, SCRATCH_START as i64, SEEK_SET).ctx("lseek")?;
        ensure!(unix::read(fd, &mut buf).ctx("a read afterwards")? == buf.len(), "short read");
        unix::close(fd).ctx("close")
    })
}

/// Several processes reading and writing their own regions at once (the
/// driver keeps several requests in flight): every region reads back as
/// its writer wrote it.
pub fn clients_at_once() -> TestResult {
    const CLIENTS: u64 = 4;
    const PASSES: u64 = 8;
    let region = 4 * 64 * KIB as u64;
    let mut pids = Vec::new();
    for c in 0..CLIENTS {
        let pid = spawn(move || {
            let run = || -> TestResult {
                let (fd, _) = open_disk(O_RDWR)?;
                let base = SCRATCH_START + MAX_TRANSFER_BYTES + c * region;
                for pass in 0..PASSES {
                    let fill = (c * 16 + pass) as u8;
                    unix::lseek(fd, base as i64, SEEK_SET).ctx("lseek")?;
                    for _ in 0..4 {
                        unix::write(fd, &vec![fill; 64 * KIB]).ctx("write")?;
                    }
                    unix::lseek(fd, base as i64, SEEK_SET).ctx("lseek")?;
                    let mut got = vec![0u8; region as usize];
                    ensure!(unix::read(fd, &mut got).ctx("read")? == got.len(), "short read");
                    ensure!(got.iter().all(|&b| b == fill), "client {c} pass {pass}: its region changed");
                }
                unix::close(fd).ctx("close")
            };
            match run() {
                Ok(()) => 0,
                Err(why) => {
                    runtime::println!("utest: blk client {c}: {why}");
                    1
                }
            }
        })?;
        pids.push(pid);
    }
    for pid in pids {
        expect_exit(pid, 0)?;
    }
    Ok(())
}

/// A client killed while its requests are in flight (a loop of 1 MiB
/// reads and writes, killed at some point): the driver drops its
/// requests and serves the next client.
pub fn client_killed_mid_request_leaves_the_driver_working() -> TestResult {
    let base = SCRATCH_START + 3 * MAX_TRANSFER_BYTES;
    for round in 0..4u64 {
        let pid = spawn(move || {
            let Ok((fd, _)) = open_disk(O_RDWR) else { return 1 };
            let mut buf = vec![round as u8; MAX_TRANSFER_BYTES as usize];
            loop {
                let _ = unix::lseek(fd, base as i64, SEEK_SET);
                let _ = unix::write(fd, &buf);
                let _ = unix::lseek(fd, base as i64, SEEK_SET);
                let _ = unix::read(fd, &mut buf);
            }
        })?;
        unix::sleep_ns((5 + 7 * round) * 1_000_000);
        unix::kill(pid as i64, SIGKILL).ctx("kill the client")?;
        expect_signal(pid, SIGKILL)?;
    }
    let (fd, _) = open_disk(O_RDWR)?;
    unix::lseek(fd, base as i64, SEEK_SET).ctx("lseek")?;
    ensure!(
        unix::write(fd, &vec![0x5au8; 64 * KIB]).ctx("write after the kills")? == 64 * KIB,
        "short write"
    );
    unix::lseek(fd, base as i64, SEEK_SET).ctx("lseek")?;
    let mut got = vec![0u8; 64 * KIB];
    ensure!(unix::read(fd, &mut got).ctx("read after the kills")? == got.len(), "short read");
    ensure!(got.iter().all(|&b| b == 0x5a), "the data written after the kills did not come back");
    unix::close(fd).ctx("close")
}

/// `/dev/zero` fills a whole buffer with zeros in one `read`.
pub fn zero_device_reads_zeros() -> TestResult {
    let fd = unix::open("/dev/zero", O_RDONLY, 0).ctx("open /dev/zero")?;
    let mut buf = vec![7u8; 32 * KIB];
    ensure!(unix::read(fd, &mut buf).ctx("read")? == buf.len(), "a 32 KiB read of /dev/zero is whole");
    ensure!(buf.iter().all(|&b| b == 0), "/dev/zero gave something else than zeros");
    unix::close(fd).ctx("close")
}

/// `block::OP_PWRITEV` (branch `lat`: the disk file system sends a level
/// of its write order in one call, one device notification): sent to the
/// driver directly on a handle of `/dev/vda`, every write lands where its
/// header says and the reply counts the data bytes; a call with any bad
/// part, a count out of range, or headers that do not add up to word 3
/// is refused whole with `EINVAL` and writes nothing; a closed handle is
/// `EBADF`.
pub fn pwritev_writes_every_part_or_none() -> TestResult {
    use protocols::unix::block::{MAX_WRITEV, OP_PWRITEV};
    let (fd, size) = open_disk(O_RDWR)?;
    let info = crate::ramdisk::fd_info(fd)?;
    let link = runtime::msg::open_link(abi::Pid(info.manager_pid), runtime::msg::Queue(info.manager_queue))
        .map_err(|e| format!("link to the driver: {}", e.name()))?;
    let base = SCRATCH_START + 2 * MAX_TRANSFER_BYTES;
    let region = 16 * KIB;
    let read_region = |fd: Fd| -> Result<Vec<u8>, alloc::string::String> {
        unix::lseek(fd, base as i64, SEEK_SET).ctx("lseek")?;
        let mut got = vec![0u8; region];
        ensure!(unix::read(fd, &mut got).ctx("read the region")? == region, "short read");
        Ok(got)
    };
    unix::lseek(fd, base as i64, SEEK_SET).ctx("lseek")?;
    ensure!(unix::write(fd, &vec![0u8; region]).ctx("zero the region")? == region, "short write");
    // (offset from base, bytes, fill)
    let call = |parts: &[(u64, usize, u8)], count: u64, data_bytes: u64, handle: u64| {
        let mut send = Vec::new();
        for &(at, len, _) in parts {
            send.extend_from_slice(&(base + at).to_le_bytes());
            send.extend_from_slice(&(len as u64).to_le_bytes());
        }
        for &(_, len, fill) in parts {
            send.extend(core::iter::repeat_n(fill, len));
        }
        let asked = runtime::msg::call(link, &[OP_PWRITEV, handle, count, data_bytes], &send, &mut []);
        match asked {
            Ok((w, _)) => protocols::unix::result(w[0]),
            Err(_) => Err(EIO),
        }
    };
    let good = [(0, 1024, 0xa1), (8 * KIB as u64, 512, 0xb2), (4 * KIB as u64, 2048, 0xc3)];
    let n = call(&good, 3, 3584, info.handle);
    ensure!(n == Ok(3584), "a good PWRITEV answered {n:?}, expected the 3584 data bytes");
    let mut want = vec![0u8; region];
    for &(at, len, fill) in &good {
        want[at as usize..at as usize + len].fill(fill);
    }
    let got = read_region(fd)?;
    if let Some(i) = first_difference(&got, &want) {
        return Err(format!(
            "byte {i} of the region is {:#x} after PWRITEV, expected {:#x}",
            got[i], want[i]
        ));
    }
    // Each bad call carries a good first part (0xee over the region's
    // start), which must not be written either.
    let first = (0u64, 1024usize, 0xeeu8);
    let end = size - base; // the device's end, from base
    // (what, parts, count, data bytes)
    type Bad = (&'static str, Vec<(u64, usize, u8)>, u64, u64);
    let bad: [Bad; 7] = [
        ("a count of 0", vec![first], 0, 1024),
        (
            "a count above MAX_WRITEV",
            vec![first; MAX_WRITEV + 1],
            MAX_WRITEV as u64 + 1,
            1024 * (MAX_WRITEV as u64 + 1),
        ),
        ("data bytes that are not the parts' sum", vec![first, (2048, 512, 1)], 2, 2048),
        ("an unaligned part", vec![first, (2048 + 100, 512, 2)], 2, 1536),
        ("a part of a partial block", vec![first, (2048, 100, 3)], 2, 1124),
        ("a part of nothing", vec![first, (2048, 0, 4)], 2, 1024),
        ("a part past the device's end", vec![first, (end - 512, 1024, 5)], 2, 2048),
    ];
    for (what, parts, count, data_bytes) in bad {
        let r = call(&parts, count, data_bytes, info.handle);
        ensure!(r == Err(EINVAL), "PWRITEV with {what}: {r:?}, expected EINVAL");
    }
    let r = call(&[first], 1, 1024, info.handle ^ 0x5a5a_0000);
    ensure!(r == Err(EBADF), "PWRITEV on a handle that is not open: {r:?}, expected EBADF");
    let got = read_region(fd)?;
    if let Some(i) = first_difference(&got, &want) {
        return Err(format!("a refused PWRITEV wrote byte {i} of the region ({:#x})", got[i]));
    }
    let _ = runtime::msg::close_link(link);
    unix::close(fd).ctx("close")
}

/// The virtqueue's indices are free-running `u16`s: a driver that adds
/// several requests and notifies once (`block::OP_PWRITEV`) must notify
/// when its batch crosses index 65,536 too. The vendored crate compared
/// `avail_idx >= avail_event + 1` (third_party/README.md): a batch of
/// eight from index 65,530, with the device idle and waiting at 65,530,
/// gave `2 >= 65,531`, no notification, and the call never returned.
/// This sends one-block writes until the driver's count of completed
/// requests (`OP_DEVICE_TIMES`, from its start: the queue's index, give
/// or take the mounted file system's own requests meanwhile) is 65,530
/// modulo 65,536, then batches of eight across the wrap, and reads back
/// the last batch's bytes.
pub fn queue_indices_wrap() -> TestResult {
    use protocols::unix::block::{OP_DEVICE_TIMES, OP_PWRITEV};
    const PARTS: u64 = 8;
    const PART_BYTES: usize = BLOCK_BYTES as usize;
    const WRAP: u64 = 1 << 16;
    /// Where the crossing batch starts (its last part is index 1).
    const CROSS_AT: u64 = WRAP - 6;
    let (fd, _) = open_disk(O_RDWR)?;
    let info = crate::ramdisk::fd_info(fd)?;
    let link = runtime::msg::open_link(abi::Pid(info.manager_pid), runtime::msg::Queue(info.manager_queue))
        .map_err(|e| format!("link to the driver: {}", e.name()))?;
    let base = SCRATCH_START + 2 * MAX_TRANSFER_BYTES;
    let completions = || {
        runtime::msg::call(link, &[OP_DEVICE_TIMES, 0, 0, 0], &[], &mut [])
            .map(|(w, _)| w[0])
            .map_err(|e| format!("OP_DEVICE_TIMES: {}", e.name()))
    };
    let mut send = Vec::new();
    let mut batch = |parts: u64, fill: u8| -> TestResult {
        send.clear();
        for i in 0..parts {
            send.extend_from_slice(&(base + i * PART_BYTES as u64).to_le_bytes());
            send.extend_from_slice(&(PART_BYTES as u64).to_le_bytes());
        }
        for i in 0..parts {
            send.extend(core::iter::repeat_n(fill.wrapping_add(i as u8), PART_BYTES));
        }
        let data_bytes = parts * PART_BYTES as u64;
        let asked = runtime::msg::call(link, &[OP_PWRITEV, info.handle, parts, data_bytes], &send, &mut []);
        let n = asked.map_err(|e| format!("PWRITEV: {}", e.name()))?.0[0];
        ensure!(protocols::unix::result(n) == Ok(data_bytes), "a PWRITEV of {parts} answered {n:#x}");
        Ok(())
    };
    let mut fill = 0u8;
    // Up to the crossing point: batches of eight, then single writes; the
    // count asked again for the last stretch, in case other requests came.
    for slack in [4 * PARTS, 0] {
        let mut to_go = ((CROSS_AT + WRAP - completions()? % WRAP) % WRAP).saturating_sub(slack);
        while to_go > 0 {
            let parts = if to_go >= PARTS { PARTS } else { 1 };
            batch(parts, fill)?;
            fill = fill.wrapping_add(1);
            to_go -= parts;
        }
    }
    let before = completions()?;
    for _ in 0..4 {
        batch(PARTS, fill)?;
        fill = fill.wrapping_add(1);
    }
    let after = completions()?;
    let last = fill.wrapping_sub(1);
    let mut back = vec![0u8; PARTS as usize * PART_BYTES];
    unix::lseek(fd, base as i64, SEEK_SET).ctx("lseek")?;
    ensure!(unix::read(fd, &mut back).ctx("read back")? == back.len(), "short read back");
    let _ = runtime::msg::close_link(link);
    for (i, part) in back.chunks(PART_BYTES).enumerate() {
        let want = last.wrapping_add(i as u8);
        ensure!(part.iter().all(|&b| b == want), "part {i} of the last batch does not read back ({want:#x})");
    }
    ensure!(
        after >= before + 4 * PARTS && after / WRAP > before / WRAP,
        "the batches did not cross the wrap: completions {before} then {after}"
    );
    unix::close(fd).ctx("close")
}

/// `block::OP_DEVICE_TIMES` counts every device request and interrupt: a
/// one-block write and an `fsync` (a flush) add at least two completions
/// and one interrupt, and the device's ticks grow (other clients of the
/// disk, the mounted file system, may add more meanwhile).
pub fn device_times_count_each_request() -> TestResult {
    use protocols::unix::block::OP_DEVICE_TIMES;
    let (fd, _) = open_disk(O_RDWR)?;
    let info = crate::ramdisk::fd_info(fd)?;
    let link = runtime::msg::open_link(abi::Pid(info.manager_pid), runtime::msg::Queue(info.manager_queue))
        .map_err(|e| format!("link to the driver: {}", e.name()))?;
    let times = || {
        runtime::msg::call(link, &[OP_DEVICE_TIMES, 0, 0, 0], &[], &mut [])
            .map(|(w, _)| w)
            .map_err(|e| format!("OP_DEVICE_TIMES: {}", e.name()))
    };
    let before = times()?;
    unix::lseek(fd, (SCRATCH_START + 2 * MAX_TRANSFER_BYTES) as i64, SEEK_SET).ctx("lseek")?;
    ensure!(
        unix::write(fd, &[0x5au8; BLOCK_BYTES as usize]).ctx("write a block")? == BLOCK_BYTES as usize,
        "short"
    );
    unix::fsync(fd).ctx("fsync")?;
    let after = times()?;
    let _ = runtime::msg::close_link(link);
    ensure!(
        after[0] >= before[0] + 2,
        "completions {} -> {}: the write and the flush not both counted",
        before[0],
        after[0]
    );
    ensure!(after[2] > before[2], "interrupts {} -> {}", before[2], after[2]);
    ensure!(after[1] > before[1], "device ticks {} -> {} over two requests", before[1], after[1]);
    ensure!(after[3] >= before[3], "delivery ticks went back: {} -> {}", before[3], after[3]);
    unix::close(fd).ctx("close")
}
