//! What the virtio drivers (`drivers/virtio-blk`, `drivers/virtio-net`)
//! share: the `virtio_drivers::Hal` over the kernel's device calls
//! ([`hal`]: DMA memory, mapped BARs, bounce buffers) and finding and
//! starting a virtio PCI function ([`pci`]: configuration space through
//! the kernel, BARs, bus mastering, the interrupt line).
//!
//! What it is not: a device driver; each driver makes its device on the
//! transport [`pci::find`] returns and serves its own protocol.
//!
//! Needs `abi::rights::DEVICES` at run time (docs/devices.md).

#![no_std]
#![deny(unsafe_code)]

extern crate alloc;

#[allow(unsafe_code)]
pub mod hal;
pub mod pci;
