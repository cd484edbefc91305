//! Device calls (`abi::Call` 48–53 and 64–70, Ridge OS §3): interrupt
//! lines, I/O ports, bootstrap connections, PCI functions, device memory
//! and DMA memory.

use super::{args, done};
use crate::state::{Kernel, Next};
use abi::Error;

/// `claim_irq(irq, queue, flags) -> 0`.
pub fn claim_irq(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [irq, queue, flags, ..] = args(k, caller);
    done(k.claim_irq(caller, irq, queue, flags))
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

/// `pci_config_read(address, offset, width) -> value`.
pub fn pci_config_read(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [address, offset, width, ..] = args(k, caller);
    k.pci_config_read(caller, address, offset, width).map(Next::Return)
}

/// `pci_config_write(address, offset, width, value) -> 0`.
pub fn pci_config_write(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [address, offset, width, value, ..] = args(k, caller);
    done(k.pci_config_write(caller, address, offset, width, value))
}

/// `pci_claim(address) -> 0`.
pub fn pci_claim(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [address, ..] = args(k, caller);
    done(k.pci_claim(caller, address))
}

/// `map_mmio(address, bar, va) -> len`.
pub fn map_mmio(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [address, bar, va, ..] = args(k, caller);
    k.map_mmio(caller, address, bar, va).map(Next::Return)
}

/// `dma_alloc(va, len) -> physical address`.
pub fn dma_alloc(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [va, len, ..] = args(k, caller);
    k.dma_alloc(caller, va, len).map(Next::Return)
}

/// `msix_route(address, entry, queue) -> vector`.
pub fn msix_route(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [address, entry, queue, ..] = args(k, caller);
    k.msix_route(caller, address, entry, queue).map(|v| Next::Return(v.into()))
}

/// `msix_release(address, entry) -> 0`.
pub fn msix_release(k: &mut Kernel, caller: usize) -> Result<Next, Error> {
    let [address, entry, ..] = args(k, caller);
    done(k.msix_release(caller, address, entry))
}
