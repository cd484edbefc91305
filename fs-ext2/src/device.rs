//! The block device under the buffer cache: whole 512-byte sectors, moved
//! in transfers that may finish later than they start.
//!
//! The interface is split in two halves, [`BlockDevice::submit`] and
//! [`BlockDevice::complete`], because the buffer cache keeps a buffer busy
//! while its I/O is in flight (V1's rule, seed 004: "having any in-flight
//! I/O blocks any disk I/O" when there is one buffer) and lets other work
//! go on meanwhile. A transfer owns its buffers until the device hands it
//! back, so no buffer can be read or changed while the device uses it.
//!
//! What it is not: a driver. The file-data server implements this trait
//! with messages to `drivers/virtio-blk` (`protocols::unix::block`); the
//! host tests use [`MemDisk`].
//!
//! # Invariants
//! - Every buffer of a transfer is a whole number of sectors; the buffers
//!   of one transfer are consecutive on the device, in order.
//! - [`BlockDevice::complete`] returns each submitted transfer exactly
//!   once, with its buffers in the order they were submitted.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use protocols::unix::Errno;
use protocols::unix::errno::EIO;

/// The device's unit (`protocols::unix::block::BLOCK_BYTES`).
pub const SECTOR_BYTES: usize = protocols::unix::block::BLOCK_BYTES as usize;

/// Which way a transfer moves data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Read,
    Write,
}

/// One request to the device: consecutive sectors from `first_sector`,
/// gathered from (or scattered into) `buffers`.
#[derive(Debug)]
pub struct Transfer {
    /// Chosen by the submitter, returned unchanged.
    pub tag: u64,
    pub direction: Direction,
    pub first_sector: u64,
    pub buffers: Vec<Box<[u8]>>,
}

impl Transfer {
    pub fn bytes(&self) -> usize {
        self.buffers.iter().map(|b| b.len()).sum()
    }
}

/// A device of 512-byte sectors.
pub trait BlockDevice {
    /// The device's size in sectors.
    fn sectors(&self) -> u64;
    /// Starts a transfer. The device owns it until [`Self::complete`]
    /// returns it; errors (a range past the end, a device error) come back
    /// with it there.
    fn submit(&mut self, transfer: Transfer);
    /// Waits for one submitted transfer to finish and returns it with its
    /// outcome; `None` when none is in flight.
    fn complete(&mut self) -> Option<(Transfer, Result<(), Errno>)>;
    /// A transfer that has already finished, without waiting; `None` when
    /// none has (or the device cannot tell without waiting).
    fn poll(&mut self) -> Option<(Transfer, Result<(), Errno>)> {
        None
    }
    /// Makes every completed write durable (a virtio flush).
    fn flush(&mut self) -> Result<(), Errno>;
    /// Whether a completed write may still be lost at a power cut until
    /// the next [`Self::flush`] (a volatile write cache: virtio-blk with
    /// `VIRTIO_BLK_F_FLUSH` in write-back mode, a SATA disk with its cache
    /// on). The buffer cache then flushes between the levels of its write
    /// order (`docs/filesystem.md`, "The write order"). Asked once, when
    /// the cache is made.
    fn has_volatile_write_cache(&self) -> bool {
        false
    }
    /// Time stamp counter ticks spent waiting in [`Self::complete`] and
    /// in [`Self::flush`], for the server's counters (where the time of
    /// an `fsync` goes); zeros where nobody measures.
    fn wait_ticks(&self) -> [u64; 2] {
        [0, 0]
    }
}

/// The boot option `blk.wcache` (docs/kernel-options.md): whether the disk
/// file system treats its device as having a volatile write cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteCacheOption {
    /// As the driver says (`block::OP_WRITE_CACHE`): the default.
    Auto,
    /// Volatile, whatever the driver says: flushes between order levels.
    On,
    /// Durable once completed (a disk with power-loss protection): no
    /// flushes but `fsync`'s and `sync`'s.
    Off,
}

impl WriteCacheOption {
    /// The option's value (`auto`, `on`, `off`); `None` for anything else.
    pub fn parse(text: &str) -> Option<WriteCacheOption> {
        match text {
            "auto" => Some(WriteCacheOption::Auto),
            "on" => Some(WriteCacheOption::On),
            "off" => Some(WriteCacheOption::Off),
            _ => None,
        }
    }

    /// Whether the cache is volatile, given what the driver said.
    pub fn is_volatile(self, driver_says: bool) -> bool {
        match self {
            WriteCacheOption::Auto => driver_says,
            WriteCacheOption::On => true,
            WriteCacheOption::Off => false,
        }
    }
}

/// In what order a [`MemDisk`] finishes the transfers in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionOrder {
    /// First submitted, first finished.
    Fifo,
    /// Last submitted, first finished: the most reordering a device may do,
    /// so tests see that the cache never relies on submission order.
    Lifo,
}

/// One write as it reached a [`MemDisk`]: for replaying a prefix of the
/// history (a power cut after that write).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRecord {
    pub first_sector: u64,
    pub bytes: Vec<u8>,
}

/// A disk in memory, for tests and tools: transfers finish when
/// [`BlockDevice::complete`] is called (in [`CompletionOrder`]), and the
/// writes that reached it can be recorded.
#[derive(Debug)]
pub struct MemDisk {
    bytes: Vec<u8>,
    pending: VecDeque<Transfer>,
    order: CompletionOrder,
    /// Every completed write, in completion order, when recording.
    pub log: Option<Vec<WriteRecord>>,
    /// Counts, for tests: transfers read, transfers written, flushes.
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    /// Round trips: the times the disk was waited for after something
    /// new was submitted (a chain of writes each waiting for the one
    /// before counts one per write; writes submitted together, one), and
    /// the most transfers it held at once. What an `fsync` costs on a
    /// device whose every request takes the same time.
    pub round_trips: u64,
    pub max_in_flight: usize,
    submitted_since_wait: bool,
    /// Fail every write from this count of completed writes on (a dying
    /// disk), for tests.
    pub fail_writes_after: Option<u64>,
    /// When recording: the length of `log` at each flush. The writes
    /// before the last mark at or below a cut are durable; on a volatile
    /// cache the later ones may each be lost ([`power_cut_image`]).
    pub flush_marks: Vec<usize>,
    /// Reported by [`BlockDevice::has_volatile_write_cache`].
    volatile: bool,
}

impl MemDisk {
    /// A disk holding `bytes` (a whole number of sectors; a partial last
    /// sector is cut off).
    pub fn new(mut bytes: Vec<u8>) -> MemDisk {
        bytes.truncate(bytes.len() / SECTOR_BYTES * SECTOR_BYTES);
        MemDisk {
            bytes,
            pending: VecDeque::new(),
            order: CompletionOrder::Fifo,
            log: None,
            reads: 0,
            writes: 0,
            flushes: 0,
            round_trips: 0,
            max_in_flight: 0,
            submitted_since_wait: false,
            fail_writes_after: None,
            flush_marks: Vec::new(),
            volatile: false,
        }
    }

    pub fn with_order(mut self, order: CompletionOrder) -> MemDisk {
        self.order = order;
        self
    }

    /// A disk that says it has a volatile write cache: a completed write
    /// is durable only after the next flush (the power-cut model is
    /// [`power_cut_image`] over the recorded log).
    pub fn with_volatile_cache(mut self) -> MemDisk {
        self.volatile = true;
        self
    }

    pub fn recording(mut self) -> MemDisk {
        self.log = Some(Vec::new());
        self
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    fn finish(&mut self, transfer: &mut Transfer) -> Result<(), Errno> {
        let start =
            usize::try_from(transfer.first_sector).map_err(|_| EIO)?.checked_mul(SECTOR_BYTES).ok_or(EIO)?;
        let end = start.checked_add(transfer.bytes()).ok_or(EIO)?;
        if end > self.bytes.len() || transfer.buffers.iter().any(|b| b.len() % SECTOR_BYTES != 0) {
            return Err(EIO);
        }
        match transfer.direction {
            Direction::Read => {
                self.reads += 1;
                let mut at = start;
                for buffer in &mut transfer.buffers {
                    buffer.copy_from_slice(&self.bytes[at..at + buffer.len()]);
                    at += buffer.len();
                }
            }
            Direction::Write => {
                if self.fail_writes_after.is_some_and(|limit| self.writes >= limit) {
                    return Err(EIO);
                }
                self.writes += 1;
                let mut at = start;
                for buffer in &transfer.buffers {
                    self.bytes[at..at + buffer.len()].copy_from_slice(buffer);
                    at += buffer.len();
                }
                if let Some(log) = &mut self.log {
                    log.push(WriteRecord {
                        first_sector: transfer.first_sector,
                        bytes: self.bytes[start..end].to_vec(),
                    });
                }
            }
        }
        Ok(())
    }
}

impl BlockDevice for MemDisk {
    fn sectors(&self) -> u64 {
        (self.bytes.len() / SECTOR_BYTES) as u64
    }

    fn submit(&mut self, transfer: Transfer) {
        self.pending.push_back(transfer);
        self.max_in_flight = self.max_in_flight.max(self.pending.len());
        self.submitted_since_wait = true;
    }

    fn complete(&mut self) -> Option<(Transfer, Result<(), Errno>)> {
        if core::mem::take(&mut self.submitted_since_wait) && !self.pending.is_empty() {
            self.round_trips += 1;
        }
        let mut transfer = match self.order {
            CompletionOrder::Fifo => self.pending.pop_front()?,
            CompletionOrder::Lifo => self.pending.pop_back()?,
        };
        let result = self.finish(&mut transfer);
        Some((transfer, result))
    }

    fn flush(&mut self) -> Result<(), Errno> {
        self.flushes += 1;
        if let Some(log) = &self.log {
            self.flush_marks.push(log.len());
        }
        Ok(())
    }

    fn has_volatile_write_cache(&self) -> bool {
        self.volatile
    }
}

/// The disk after a power cut that came after the first `cut` writes of
/// `log` completed, on a device with a volatile write cache: every write
/// before the last flush (`flush_marks`, [`MemDisk::flush_marks`]) at or
/// below `cut` is kept, and of the completed writes after it those for
/// which `keep(index)` says so (in completion order, over `original`).
pub fn power_cut_image(
    original: &[u8],
    log: &[WriteRecord],
    flush_marks: &[usize],
    cut: usize,
    mut keep: impl FnMut(usize) -> bool,
) -> Vec<u8> {
    let cut = cut.min(log.len());
    let durable = flush_marks.iter().copied().filter(|&m| m <= cut).max().unwrap_or(0);
    let mut image = original.to_vec();
    for (k, w) in log[..cut].iter().enumerate() {
        if k < durable || keep(k) {
            let at = w.first_sector as usize * SECTOR_BYTES;
            if let Some(target) = image.get_mut(at..at + w.bytes.len()) {
                target.copy_from_slice(&w.bytes);
            }
        }
    }
    image
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn transfer(direction: Direction, first_sector: u64, fill: u8, sectors: usize) -> Transfer {
        Transfer { tag: 7, direction, first_sector, buffers: vec![vec![fill; sectors * SECTOR_BYTES].into()] }
    }

    #[test]
    fn writes_land_at_completion_in_the_chosen_order() {
        let mut disk = MemDisk::new(vec![0; 8 * SECTOR_BYTES]).with_order(CompletionOrder::Lifo).recording();
        disk.submit(transfer(Direction::Write, 1, 0xaa, 1));
        disk.submit(transfer(Direction::Write, 1, 0xbb, 1));
        assert_eq!(disk.bytes()[SECTOR_BYTES], 0, "nothing lands before completion");
        let (first, result) = disk.complete().unwrap();
        assert!(result.is_ok());
        assert_eq!(first.buffers[0][0], 0xbb, "last in, first out");
        assert!(disk.complete().unwrap().1.is_ok());
        assert_eq!(disk.bytes()[SECTOR_BYTES], 0xaa);
        assert_eq!(disk.log.as_ref().unwrap().len(), 2);
        assert!(disk.complete().is_none());
    }

    #[test]
    fn a_power_cut_keeps_flushed_writes_and_the_chosen_unflushed_ones() {
        let mut disk = MemDisk::new(vec![0; 4 * SECTOR_BYTES]).with_volatile_cache().recording();
        assert!(disk.has_volatile_write_cache());
        for (sector, fill) in [(0, 1), (1, 2)] {
            disk.submit(transfer(Direction::Write, sector, fill, 1));
            disk.complete().unwrap().1.unwrap();
        }
        disk.flush().unwrap();
        for (sector, fill) in [(2, 3), (3, 4)] {
            disk.submit(transfer(Direction::Write, sector, fill, 1));
            disk.complete().unwrap().1.unwrap();
        }
        let log = disk.log.clone().unwrap();
        assert_eq!(disk.flush_marks, [2]);
        let original = vec![0; 4 * SECTOR_BYTES];
        // Only the write with index 3 of the unflushed ones survives.
        let image = power_cut_image(&original, &log, &disk.flush_marks, 4, |k| k == 3);
        let firsts: Vec<u8> = image.chunks(SECTOR_BYTES).map(|s| s[0]).collect();
        assert_eq!(firsts, [1, 2, 0, 4]);
        // A cut before the flush keeps only what `keep` says; one at the
        // flush keeps everything before it.
        let image = power_cut_image(&original, &log, &disk.flush_marks, 1, |_| false);
        assert!(image.iter().all(|&b| b == 0));
        let image = power_cut_image(&original, &log, &disk.flush_marks, 2, |_| false);
        let firsts: Vec<u8> = image.chunks(SECTOR_BYTES).map(|s| s[0]).collect();
        assert_eq!(firsts, [1, 2, 0, 0]);
        assert!(!MemDisk::new(original).has_volatile_write_cache());
    }

    #[test]
    fn the_write_cache_option_parses_its_three_values_and_nothing_else() {
        assert_eq!(WriteCacheOption::parse("auto"), Some(WriteCacheOption::Auto));
        assert!(WriteCacheOption::parse("on").unwrap().is_volatile(false));
        assert!(!WriteCacheOption::parse("off").unwrap().is_volatile(true));
        assert!(WriteCacheOption::Auto.is_volatile(true) && !WriteCacheOption::Auto.is_volatile(false));
        for bad in ["", "yes", "ON", "auto ", "1"] {
            assert_eq!(WriteCacheOption::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_transfer_past_the_end_fails_whole() {
        let mut disk = MemDisk::new(vec![0; 4 * SECTOR_BYTES]);
        disk.submit(transfer(Direction::Write, 3, 1, 2));
        let (_, result) = disk.complete().unwrap();
        assert_eq!(result, Err(EIO));
        assert!(disk.bytes().iter().all(|&b| b == 0));
    }

    #[test]
    fn reads_scatter_into_every_buffer() {
        let mut bytes = vec![0; 4 * SECTOR_BYTES];
        bytes[2 * SECTOR_BYTES] = 5;
        let mut disk = MemDisk::new(bytes);
        let mut t = transfer(Direction::Read, 1, 0, 1);
        t.buffers.push(vec![0; SECTOR_BYTES].into());
        disk.submit(t);
        let (t, result) = disk.complete().unwrap();
        assert!(result.is_ok());
        assert_eq!(t.buffers[1][0], 5);
    }
}
