//! Device calls (`abi::Call` 48–53, Ridge OS §3): interrupt lines, I/O
//! ports and bootstrap connections.

use super::{args, done};
use crate::state::{Kernel, Next};
use abi::Error;

/// `claim_irq(irq, queue) -> 0`.
pub fn claim_irq(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [irq, queue, ..] = args(k, caller);
    done(k.claim_irq(caller, irq, queue))
}

/// `ack_irq(irq) -> 0`.
pub fn ack_irq(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [irq, ..] = args(k, caller);
    done(k.ack_irq(caller, irq))
}

/// `release_irq(irq) -> 0`.
pub fn release_irq(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [irq, ..] = args(k, caller);
    done(k.release_irq(caller, irq))
}

/// `io_ports(base, count) -> 0`.
pub fn io_ports(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [base, count, ..] = args(k, caller);
    done(k.io_ports(caller, base, count))
}

/// `set_bootstrap(index, pid, queue) -> 0`.
pub fn set_bootstrap(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [index, pid, queue, ..] = args(k, caller);
    done(k.set_bootstrap(caller, index, pid, queue))
}

/// `get_bootstrap(index) -> (pid, queue)`.
pub fn get_bootstrap(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [index, ..] = args(k, caller);
    let (pid, queue) = k.get_bootstrap(caller, index)?;
    k.proc_mut(caller).frame.set_second_result(queue.into());
    Ok(Next::Return(pid))
}
