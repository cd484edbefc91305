//! Foreign-process calls (`abi::Call` 80–89), made by the server of a
//! foreign process (crate::foreign): attach, resume, read and write its
//! memory, read its registers, fork it, hand it on.

use super::{args, done};
use crate::state::{Kernel, Next};
use abi::Error;

/// `foreign_attach(pid, queue) -> 0`.
pub fn attach(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, queue, ..] = args(k, caller);
    done(k.foreign_attach(caller, pid, queue))
}

/// `foreign_resume(pid, result, regs_ptr) -> 0`.
pub fn resume(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, result, regs_ptr, ..] = args(k, caller);
    done(k.foreign_resume(caller, pid, result, regs_ptr))
}

/// `foreign_read(pid, addr, buf, len) -> len`.
pub fn read(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, addr, buf, len, ..] = args(k, caller);
    k.foreign_copy(caller, pid, addr, buf, len, false).map(Next::Return)
}

/// `foreign_write(pid, addr, buf, len) -> len`.
pub fn write(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, addr, buf, len, ..] = args(k, caller);
    k.foreign_copy(caller, pid, addr, buf, len, true).map(Next::Return)
}

/// `foreign_regs(pid, regs_ptr) -> 0`.
pub fn regs(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, regs_ptr, ..] = args(k, caller);
    done(k.foreign_regs(caller, pid, regs_ptr))
}

/// `foreign_fork(pid) -> child pid`.
pub fn fork(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, ..] = args(k, caller);
    k.foreign_fork(caller, pid).map(|p| Next::Return(p.0))
}

/// `foreign_give(pid, server_pid, queue) -> 0`.
pub fn give(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, server_pid, queue, ..] = args(k, caller);
    done(k.foreign_give(caller, pid, server_pid, queue))
}

/// `foreign_fpu(pid, buf, write) -> 0`.
pub fn fpu(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, buf, write, ..] = args(k, caller);
    done(k.foreign_fpu(caller, pid, buf, write != 0))
}

/// `foreign_unmap(pid, addr, len) -> pages`.
pub fn unmap(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, addr, len, ..] = args(k, caller);
    k.foreign_unmap(caller, pid, addr, len).map(Next::Return)
}

/// `foreign_protect(pid, addr, len, writable) -> pages`.
pub fn protect(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [pid, addr, len, writable, ..] = args(k, caller);
    k.foreign_protect(caller, pid, addr, len, writable).map(Next::Return)
}
