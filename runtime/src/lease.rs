//! A server's side of leases in pieces: copy between a caller's lent
//! buffer and several parts of the server's own memory (a file's pages)
//! with as few kernel calls as the parts allow. Parts that follow one
//! another in memory (pages the allocator handed out one after another,
//! as a file written from its start gets them) go in one `lease_read` or
//! `lease_write`, which the kernel checks whole before it moves a byte.
//!
//! What it is not: the lease calls themselves ([`crate::msg::lease_read`],
//! [`crate::msg::lease_write`], one buffer each), nor a promise of one
//! call: parts scattered in memory take one call per run.
//!
//! Invariant: parts are taken in order and placed one after another in
//! the lent buffer from `offset` on; an error stops at the run that
//! failed (runs before it were copied).

use crate::msg::{ReplyHandle, raw};
use abi::{Call, Error, decode_return};

/// One lease call over `len` bytes at `addr` of this process.
fn lease_call(
    call: Call,
    handle: ReplyHandle,
    offset: u64,
    addr: u64,
    len: u64,
    flags: u64,
) -> Result<(), Error> {
    if len == 0 {
        return Ok(());
    }
    let rax = raw(call as u64, [handle.0, offset, addr, len, flags, 0], [0; 4]).rax;
    decode_return(rax).map(|_| ())
}

/// Runs of parts adjacent in memory: (address, length) of each, in order.
fn runs(
    parts: impl Iterator<Item = (u64, u64)>,
    mut each: impl FnMut(u64, u64, u64) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut run: Option<(u64, u64)> = None;
    let mut at = 0u64;
    for (addr, len) in parts {
        if len == 0 {
            continue;
        }
        run = match run {
            Some((start, run_len)) if start + run_len == addr => Some((start, run_len + len)),
            Some((start, run_len)) => {
                each(at, start, run_len)?;
                at += run_len;
                Some((addr, len))
            }
            None => Some((addr, len)),
        };
    }
    if let Some((start, run_len)) = run {
        each(at, start, run_len)?;
    }
    Ok(())
}

/// Copy `parts`, one after another, into the receive buffer lent by call
/// `handle`, from `offset` on.
pub fn write_parts(handle: ReplyHandle, offset: u64, parts: &[&[u8]], flags: u64) -> Result<(), Error> {
    let parts = parts.iter().map(|p| (p.as_ptr() as u64, p.len() as u64));
    runs(parts, |at, addr, len| lease_call(Call::LeaseWrite, handle, offset + at, addr, len, flags))
}

/// Fill `parts`, one after another, from the send buffer lent by call
/// `handle`, from `offset` on. The parts are borrowed exclusively for the
/// call, so the kernel's writes into them alias nothing.
pub fn read_parts(
    handle: ReplyHandle,
    offset: u64,
    parts: &mut [&mut [u8]],
    flags: u64,
) -> Result<(), Error> {
    let parts = parts.iter_mut().map(|p| (p.as_mut_ptr() as u64, p.len() as u64));
    runs(parts, |at, addr, len| lease_call(Call::LeaseRead, handle, offset + at, addr, len, flags))
}
