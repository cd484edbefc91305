//! A driver's device memory, and the `virtio_drivers::Hal` over it: the
//! only module of the virtio drivers with `unsafe`.
//!
//! - **Addresses**: everything the driver maps lives in the device-mapping
//!   region (`abi::layout::USER_DEVICE_MAP_BASE`), handed out by a bump
//!   allocator of virtual addresses, page by page; nothing is unmapped
//!   before the process ends (the kernel frees DMA memory with the address
//!   space), so the allocator never reuses an address.
//! - **DMA memory** (`sys::dma_alloc`): physically contiguous, so a
//!   virtual address inside a region translates to a physical one by an
//!   offset. The virtqueues (`Hal::dma_alloc`) and the driver's data
//!   buffers ([`dma_buffer`]) are DMA regions.
//! - **MMIO** (`Hal::mmio_phys_to_virt`): the crate asks for a physical
//!   range inside one of the device's memory BARs, which [`map_bar`]
//!   mapped (`sys::map_mmio`, uncached) before the crate started; the
//!   range is translated.
//! - **Sharing** (`Hal::share`): a buffer inside a DMA region is given to
//!   the device where it is. Anything else the crate hands over (a request
//!   header or status byte on the heap, an indirect descriptor table) is
//!   small and is *bounced*: copied into a slot of a DMA bounce pool, and
//!   copied back at `unshare` when the device wrote it. The driver's data
//!   buffers are always DMA memory, so data is never bounced.
//!
//! What it is not: a general allocator. `Hal::dma_dealloc` keeps the memory
//! (the virtqueues live as long as the driver).
//!
//! Invariants: the regions never overlap (bump allocation); a bounce slot
//! is in use from `share` to the matching `unshare`; no lock is held while
//! the crate runs (the `Hal` functions take [`MEMORY`] briefly each).

use abi::Error;
use abi::layout::{PAGE_SIZE, USER_DEVICE_MAP_BASE, USER_DEVICE_MAP_BYTES};
use alloc::vec::Vec;
use core::ptr::NonNull;
use runtime::sys;
use spin::Mutex;
use virtio_drivers::{BufferDirection, Hal, PhysAddr};

/// Bytes of one bounce slot: the crate bounces only small things —
/// virtio-blk's request headers (16 bytes), status bytes (1) and indirect
/// descriptor tables (16 bytes per descriptor, 3 per request); virtio-net
/// hands over only its DMA frame buffers.
const BOUNCE_SLOT_BYTES: usize = 256;
/// Bounce slots: each virtio-blk request in flight holds three (its
/// indirect table, header and status), and its queue holds at most 16.
const BOUNCE_SLOTS: usize = 64;

/// One memory BAR of the device, mapped.
#[derive(Clone, Copy, Debug)]
struct Bar {
    phys: u64,
    len_bytes: u64,
    /// Where its first page is mapped.
    va: u64,
}

/// A physically contiguous region mapped at `va`.
#[derive(Clone, Copy, Debug)]
struct Region {
    va: u64,
    phys: u64,
    len_bytes: u64,
}

impl Region {
    fn phys_of(&self, va: u64, len: u64) -> Option<u64> {
        (va >= self.va && va.checked_add(len)? <= self.va + self.len_bytes)
            .then(|| self.phys + (va - self.va))
    }
}

struct Bounce {
    region: Region,
    /// The buffer each slot stands for (address, length), while in use.
    slots: [Option<(usize, usize)>; BOUNCE_SLOTS],
}

struct Memory {
    next_va: u64,
    dma: Vec<Region>,
    /// The claimed function's memory BARs.
    bars: Vec<Bar>,
    bounce: Option<Bounce>,
}

static MEMORY: Mutex<Memory> =
    Mutex::new(Memory { next_va: USER_DEVICE_MAP_BASE, dma: Vec::new(), bars: Vec::new(), bounce: None });

fn round_up_to_page(n: u64) -> u64 {
    n.div_ceil(PAGE_SIZE) * PAGE_SIZE
}

/// `len_bytes` of fresh virtual addresses in the device-mapping region.
fn take_va(m: &mut Memory, len_bytes: u64) -> Result<u64, Error> {
    let va = m.next_va;
    let end = va.checked_add(round_up_to_page(len_bytes)).ok_or(Error::OutOfResources)?;
    if end > USER_DEVICE_MAP_BASE + USER_DEVICE_MAP_BYTES {
        return Err(Error::OutOfResources);
    }
    m.next_va = end;
    Ok(va)
}

fn alloc_region(m: &mut Memory, len_bytes: u64) -> Result<Region, Error> {
    let len_bytes = round_up_to_page(len_bytes.max(1));
    let va = take_va(m, len_bytes)?;
    let phys = sys::dma_alloc(va, len_bytes)?;
    let region = Region { va, phys, len_bytes };
    m.dma.push(region);
    Ok(region)
}

/// Map memory BAR `index` (at `phys`, as configuration space says) of the
/// claimed function `pci_address`; returns its length in bytes (the
/// kernel sizes BARs: it refuses BAR writes to drivers).
pub fn map_bar(pci_address: u64, index: u8, phys: u64) -> Result<u64, Error> {
    let mut m = MEMORY.lock();
    let va = m.next_va;
    // The kernel maps from the page holding the BAR's start.
    let len_bytes = sys::map_mmio(pci_address, index, va)?;
    let mapped_bytes = (phys % PAGE_SIZE + len_bytes).max(1);
    take_va(&mut m, mapped_bytes)?;
    m.bars.push(Bar { phys, len_bytes, va });
    Ok(len_bytes)
}

/// A data buffer of `len_bytes` (whole pages) in DMA memory, owned by the
/// caller for the rest of the process's life.
pub fn dma_buffer(len_bytes: usize) -> Result<&'static mut [u8], Error> {
    let region = alloc_region(&mut MEMORY.lock(), len_bytes as u64)?;
    // SAFETY: the region was just mapped (`dma_alloc`: zeroed, writable,
    // this process's only mapping of it), it is never unmapped while the
    // process lives, and no other Rust object refers to it: the bump
    // allocator never hands its addresses out again.
    Ok(unsafe { core::slice::from_raw_parts_mut(region.va as *mut u8, len_bytes) })
}

/// The `virtio_drivers::Hal` of this driver.
pub struct RidgebackHal;

// SAFETY: `dma_alloc` returns zeroed, physically contiguous memory mapped at
// the returned address and never used for anything else; `share` returns a
// physical address the device may use for exactly the buffer's bytes (the
// buffer itself when it is DMA memory, else a bounce slot holding its copy),
// and `unshare` copies a bounce slot back before freeing it.
unsafe impl Hal for RidgebackHal {
    fn dma_alloc(pages: usize, _direction: BufferDirection) -> (PhysAddr, NonNull<u8>) {
        let mut m = MEMORY.lock();
        match alloc_region(&mut m, pages as u64 * PAGE_SIZE) {
            Ok(r) => (r.phys, NonNull::new(r.va as *mut u8).unwrap_or(NonNull::dangling())),
            // The crate reads a physical address of 0 as failure.
            Err(_) => (0, NonNull::dangling()),
        }
    }

    unsafe fn dma_dealloc(_paddr: PhysAddr, _vaddr: NonNull<u8>, _pages: usize) -> i32 {
        // Kept: only the virtqueues are allocated this way, and they live
        // as long as the driver; the kernel frees them with the process.
        0
    }

    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, size: usize) -> NonNull<u8> {
        let m = MEMORY.lock();
        let Some(bar) = m.bars.iter().find(|b| {
            paddr >= b.phys && paddr.saturating_add(size as u64) <= b.phys.saturating_add(b.len_bytes)
        }) else {
            panic!("virtio driver: the device asked for MMIO at {paddr:#x} outside its BARs");
        };
        let va = bar.va + bar.phys % PAGE_SIZE + (paddr - bar.phys);
        NonNull::new(va as *mut u8).expect("mapped above 0")
    }

    unsafe fn share(buffer: NonNull<[u8]>, direction: BufferDirection) -> PhysAddr {
        let va = buffer.as_ptr() as *mut u8 as u64;
        let len = buffer.len();
        let mut m = MEMORY.lock();
        if let Some(phys) = m.dma.iter().find_map(|r| r.phys_of(va, len as u64)) {
            return phys;
        }
        assert!(len <= BOUNCE_SLOT_BYTES, "virtio driver: a {len}-byte buffer outside DMA memory");
        if m.bounce.is_none() {
            let region = alloc_region(&mut m, (BOUNCE_SLOTS * BOUNCE_SLOT_BYTES) as u64)
                .expect("virtio driver: no bounce pool");
            m.bounce = Some(Bounce { region, slots: [None; BOUNCE_SLOTS] });
        }
        let bounce = m.bounce.as_mut().expect("made above");
        let slot =
            bounce.slots.iter().position(Option::is_none).expect("virtio driver: bounce slots exhausted");
        bounce.slots[slot] = Some((va as usize, len));
        let slot_va = bounce.region.va + (slot * BOUNCE_SLOT_BYTES) as u64;
        if direction != BufferDirection::DeviceToDriver {
            // SAFETY: the crate guarantees `buffer` is valid for reads of
            // `len` bytes until `unshare`; the slot is `BOUNCE_SLOT_BYTES`
            // ≥ `len` of mapped DMA memory, free until now, so the two do
            // not overlap.
            unsafe { core::ptr::copy_nonoverlapping(va as *const u8, slot_va as *mut u8, len) };
        }
        bounce.region.phys + (slot * BOUNCE_SLOT_BYTES) as u64
    }

    unsafe fn unshare(paddr: PhysAddr, buffer: NonNull<[u8]>, direction: BufferDirection) {
        let mut m = MEMORY.lock();
        let Some(bounce) = m.bounce.as_mut() else { return };
        let pool = bounce.region;
        if paddr < pool.phys || paddr >= pool.phys + pool.len_bytes {
            return; // shared in place
        }
        let slot = ((paddr - pool.phys) as usize) / BOUNCE_SLOT_BYTES;
        let Some((va, len)) = bounce.slots[slot].take() else { return };
        if direction != BufferDirection::DriverToDevice {
            let len = len.min(buffer.len());
            let slot_va = pool.va + (slot * BOUNCE_SLOT_BYTES) as u64;
            // SAFETY: `buffer` is the buffer `share` bounced into this slot
            // (the crate passes the same one back), valid for writes now
            // that the device is done with it; the slot holds `len` bytes.
            unsafe { core::ptr::copy_nonoverlapping(slot_va as *const u8, va as *mut u8, len) };
        }
    }
}
