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
//! `io::OP_READ` or `io::OP_WRITE`); repeat.
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
use protocols::unix::{Errno, encode_result, ext2fs, io, result};
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
