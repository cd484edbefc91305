//! ext2io: one I/O worker of a disk file system manager (`ext2fs`). A
//! manager is one process and a `call` to the driver waits for its reply,
//! so a manager alone would have one request at the driver at a time;
//! each worker holds one, and with [`protocols::unix::ext2fs::WORKERS`]
//! workers the manager keeps that many in flight (issue 12: "several
//! requests in flight at the driver").
//!
//! The loop: call the manager (`ext2fs::OP_WORK`) with the outcome of the
//! last transfer (a read's bytes in the lent send buffer); the reply names
//! the next transfer (a write's bytes were put in the lent receive buffer
//! by the manager before it replied); make it with one `io::OP_PREAD` or
//! `io::OP_PWRITE` call to the block driver on the worker's own handle,
//! the offset in the request (a driver that answers those `ENOSYS` gets an
//! `io::OP_SEEK`, when the handle's offset is not already there, and an
//! `io::OP_READ` or `io::OP_WRITE`); repeat. `ext2fs::WORK_WRITEV` names
//! several writes at once (a level of the write order): the receive
//! buffer already holds what `block::OP_PWRITEV` sends, so it goes to the
//! driver as it is, in one call (a driver that answers `ENOSYS` gets one
//! write call each).
//!
//! What it is not: a cache or a scheduler. It moves what it is told, in
//! the order it is told, and keeps nothing between transfers.
//!
//! Invariants: at most [`ext2fs::WORKER_TRANSFER_BYTES`] a transfer (a
//! longer one is answered `EINVAL`, never half done); a transfer the
//! driver cut short is `EIO`. It ends when its manager ends (its call
//! fails) or says `WORK_EXIT`. `WORK_RELINK` moves it to a restarted
//! driver (issue 16): a new link and handle, nothing else kept.
//!
//! Arguments: `MANAGER_PID DRIVER_PID DRIVER_QUEUE HANDLE` (decimal).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use abi::Pid;
use alloc::vec;
use protocols::unix::errno::{EINVAL, EIO, ENOSYS};
use protocols::unix::{Errno, block, encode_result, ext2fs, io, result};
use runtime::msg::{self, Link, Queue};
use runtime::{Args, println};

runtime::entry!(main);

fn main(args: Args) -> i32 {
    let numbers: alloc::vec::Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let [manager, driver, driver_queue, mut handle] = numbers[..] else {
        println!("ext2io: arguments: MANAGER_PID DRIVER_PID DRIVER_QUEUE HANDLE");
        return 2;
    };
    let (Ok(to_manager), Ok(mut to_driver)) = (
        msg::open_link(Pid(manager), Queue(ext2fs::QUEUE)),
        msg::open_link(Pid(driver), Queue(driver_queue as u32)),
    ) else {
        println!("ext2io: cannot reach the manager or the driver");
        return 3;
    };
    let mut inbound = vec![0u8; ext2fs::WORKER_TRANSFER_BYTES];
    let mut outbound = vec![0u8; ext2fs::WORKER_TRANSFER_BYTES];
    let (mut tag, mut outcome, mut out_bytes) = (0u64, 0u64, 0usize);
    // The driver handle's offset, when known (for a driver without
    // `OP_PREAD`).
    let mut position: Option<u64> = None;
    let mut has_pread = true;
    let mut has_writev = true;
    loop {
        let asked =
            msg::call(to_manager, &[ext2fs::OP_WORK, tag, outcome, 0], &outbound[..out_bytes], &mut inbound);
        let Ok((w, _)) = asked else { return 0 };
        let [what, first_sector, bytes, next_tag] = w;
        out_bytes = 0;
        if what == ext2fs::WORK_RELINK {
            // The driver was restarted (issue 16): link to the new one.
            let Ok(l) = msg::open_link(Pid(first_sector), Queue(bytes as u32)) else {
                println!("ext2io: cannot reach the restarted driver");
                return 3;
            };
            let _ = msg::close_link(to_driver);
            (to_driver, handle, position, has_pread) = (l, next_tag, None, true);
            (tag, outcome) = (0, 0);
            continue;
        }
        tag = next_tag;
        if what == ext2fs::WORK_WRITEV {
            // [WORK_WRITEV, count, data bytes, tag of the first].
            let (count, data_bytes) = (first_sector, bytes);
            let mut moved = Err(ENOSYS);
            if has_writev {
                moved = writev(to_driver, handle, count, data_bytes, &inbound);
                has_writev = moved != Err(ENOSYS);
            }
            if moved == Err(ENOSYS) {
                moved = write_each(to_driver, handle, count, &inbound, has_pread, &mut position);
            }
            outcome = encode_result(moved.map(|()| data_bytes));
            continue;
        }
        let Some(offset) = first_sector.checked_mul(protocols::unix::block::BLOCK_BYTES) else {
            outcome = encode_result(Err(EINVAL));
            continue;
        };
        let len = bytes as usize;
        let moved = if len > ext2fs::WORKER_TRANSFER_BYTES {
            Err(EINVAL)
        } else {
            let mut transfer = |positional: bool| {
                let (read, write) =
                    if positional { (io::OP_PREAD, io::OP_PWRITE) } else { (io::OP_READ, io::OP_WRITE) };
                match what {
                    ext2fs::WORK_READ => {
                        let r =
                            driver_call(to_driver, [read, handle, bytes, offset], &[], &mut outbound[..len]);
                        if r.is_ok() {
                            out_bytes = len;
                        }
                        r
                    }
                    ext2fs::WORK_WRITE => {
                        driver_call(to_driver, [write, handle, bytes, offset], &inbound[..len], &mut [])
                    }
                    _ => Err(EINVAL),
                }
            };
            let mut moved = if has_pread { transfer(true) } else { Err(ENOSYS) };
            if moved == Err(ENOSYS) && what != ext2fs::WORK_EXIT {
                has_pread = false;
                moved = seek(to_driver, handle, offset, &mut position).and_then(|()| transfer(false));
                position = moved.map(|()| offset + bytes).ok();
            }
            moved
        };
        if what == ext2fs::WORK_EXIT {
            return 0;
        }
        outcome = encode_result(moved.map(|()| bytes));
    }
}

/// Several writes in one `block::OP_PWRITEV` call: `buffer` holds its
/// headers and data (`ext2fs::WORK_WRITEV`).
fn writev(driver: Link, handle: u64, count: u64, data_bytes: u64, buffer: &[u8]) -> Result<(), Errno> {
    let len = usize::try_from(count)
        .ok()
        .filter(|&c| c <= block::MAX_WRITEV)
        .map(|c| c * block::WRITEV_HEADER_BYTES)
        .and_then(|h| h.checked_add(usize::try_from(data_bytes).ok()?))
        .filter(|&n| n <= buffer.len())
        .ok_or(EINVAL)?;
    let request = [block::OP_PWRITEV, handle, count, data_bytes];
    let (w, _) = msg::call(driver, &request, &buffer[..len], &mut []).map_err(|_| EIO)?;
    // The reply counts data bytes (word 3), not writes (word 2).
    if result(w[0])? == data_bytes { Ok(()) } else { Err(EIO) }
}

/// The writes of a `WORK_WRITEV` one call each, for a driver without
/// `block::OP_PWRITEV` (positional ones, or a seek and a write each).
fn write_each(
    driver: Link,
    handle: u64,
    count: u64,
    buffer: &[u8],
    has_pread: bool,
    position: &mut Option<u64>,
) -> Result<(), Errno> {
    let count = usize::try_from(count).ok().filter(|&c| c <= block::MAX_WRITEV).ok_or(EINVAL)?;
    let header_bytes = count * block::WRITEV_HEADER_BYTES;
    let headers = buffer.get(..header_bytes).ok_or(EINVAL)?;
    let mut at = header_bytes;
    for h in headers.chunks_exact(block::WRITEV_HEADER_BYTES) {
        let word = |i: usize| u64::from_le_bytes(h[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let (offset, bytes) = (word(0), word(1));
        let end = usize::try_from(bytes).ok().and_then(|b| at.checked_add(b)).ok_or(EINVAL)?;
        let data = buffer.get(at..end).ok_or(EINVAL)?;
        at = end;
        if has_pread {
            driver_call(driver, [io::OP_PWRITE, handle, bytes, offset], data, &mut [])?;
        } else {
            seek(driver, handle, offset, position)?;
            let written = driver_call(driver, [io::OP_WRITE, handle, bytes, offset], data, &mut []);
            *position = written.map(|()| offset + bytes).ok();
            written?;
        }
    }
    Ok(())
}

/// Move the handle's offset to `offset` unless it is there already.
fn seek(driver: Link, handle: u64, offset: u64, position: &mut Option<u64>) -> Result<(), Errno> {
    if *position == Some(offset) {
        return Ok(());
    }
    *position = None;
    let (w, _) =
        msg::call(driver, &[io::OP_SEEK, handle, offset, io::SEEK_SET], &[], &mut []).map_err(|_| EIO)?;
    result(w[0])?;
    *position = Some(offset);
    Ok(())
}

/// One READ or WRITE of all of `bytes` (word 2); fewer is `EIO`.
fn driver_call(driver: Link, request: [u64; 4], send: &[u8], receive: &mut [u8]) -> Result<(), Errno> {
    let (w, _) = msg::call(driver, &request, send, receive).map_err(|_| EIO)?;
    if result(w[0])? == request[2] { Ok(()) } else { Err(EIO) }
}
