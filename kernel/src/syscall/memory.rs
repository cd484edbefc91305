//! Memory calls (`abi::Call` 54–56, 90): user-level pagers (Ridge OS §3's
//! virtual-memory manager), address-space copies for `fork`, and how
//! many owners the caller's frames have (`page_owners`).

use super::{args, done};
use crate::pager::Resolved;
use crate::state::{Kernel, Next};
use abi::{Error, ExitStatus, vector};

/// `set_pager(pid, start, len, pager, queue) -> 0`.
pub fn set_pager(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, start, len, pager, queue, _] = args(k, caller);
    done(k.set_pager(caller, pid, start, len, pager, queue))
}

/// `page_resolve(pid, addr, src, flags) -> 0`.
pub fn page_resolve(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, addr, src, flags, ..] = args(k, caller);
    if let Resolved::Failed { slot, address } = k.page_resolve(caller, pid, addr, src, flags)? {
        k.finish(slot, ExitStatus::Fault { vector: vector::PAGE_FAULT, address });
    }
    Ok(Next::Return(0))
}

/// `space_copy(src_pid, dst_pid) -> pages shared`.
pub fn space_copy(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [src, dst, ..] = args(k, caller);
    k.space_copy(caller, src, dst).map(Next::Return)
}

/// `page_owners(addr, len) -> the most owners of any frame in the range`.
pub fn page_owners(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [addr, len, ..] = args(k, caller);
    let page = abi::layout::PAGE_SIZE;
    if len == 0 || !addr.is_multiple_of(page) || !len.is_multiple_of(page) {
        return Err(Error::InvalidArgument);
    }
    crate::usermem::UserSlice::new(addr, len)?;
    let table = k.space(caller).table();
    let mut most = 0u64;
    for i in 0..len / page {
        let owners = table.owners_at(addr + i * page).ok_or(Error::BadAddress)?;
        most = most.max(owners as u64);
    }
    Ok(Next::Return(most))
}
