//! The physical frame allocator: one bit per 4 KiB frame.
//!
//! Invariants:
//! - a frame is free only if it lies inside a usable range of the memory
//!   map and outside every reserved range given at construction;
//! - `free_count` equals the number of zero bits;
//! - freeing a frame that is not allocated is refused (an error, not a
//!   silent corruption), so a double free is caught where it happens.
//!
//! The bitmap storage is lent by the caller, so the allocator itself never
//! allocates (the kernel lends a static array in .bss: it needs the
//! allocator before it has a heap).

// Bytes in a frame: a frame is one page (one definition, in `abi`).
use abi::layout::PAGE_SIZE as FRAME_BYTES;

/// A half-open range of physical addresses, `start..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhysRange {
    pub start: u64,
    pub end: u64,
}

impl PhysRange {
    pub const fn new(start: u64, end: u64) -> PhysRange {
        PhysRange { start, end }
    }
    pub fn overlaps(&self, other: &PhysRange) -> bool {
        self.start < other.end && other.start < self.end
    }
}

/// What went wrong when freeing a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeError {
    /// The address is not 4 KiB aligned.
    Unaligned,
    /// The address is outside the memory the allocator manages.
    OutOfRange,
    /// The frame is already free (a double free).
    NotAllocated,
}

pub struct FrameAllocator<'a> {
    /// Bit set = frame in use (or not RAM). Bit `i` is frame `i`.
    bitmap: &'a mut [u64],
    free_count: usize,
    total_usable: usize,
    /// Word index where the next search starts (first-fit with a moving hint).
    hint_word: usize,
}

impl<'a> FrameAllocator<'a> {
    /// Words of bitmap needed to cover physical addresses below `phys_end`.
    pub const fn bitmap_words_for(phys_end: u64) -> usize {
        let frames = phys_end.div_ceil(FRAME_BYTES) as usize;
        frames.div_ceil(64)
    }

    /// Build an allocator: every frame wholly inside a `usable` range is
    /// free, except those touching a `reserved` range. Frames beyond the
    /// bitmap's reach are ignored.
    pub fn new(bitmap: &'a mut [u64], usable: &[PhysRange], reserved: &[PhysRange]) -> Self {
        bitmap.fill(u64::MAX);
        let mut alloc = FrameAllocator { bitmap, free_count: 0, total_usable: 0, hint_word: 0 };
        let limit = alloc.bitmap.len() as u64 * 64;
        // Free every whole frame of the usable ranges, then take back every
        // frame a reserved range touches: two passes over ranges, not a
        // check of every frame against every reservation (boot time under
        // emulation counts).
        for r in usable {
            for frame in r.start.div_ceil(FRAME_BYTES)..(r.end / FRAME_BYTES).min(limit) {
                if alloc.is_used(frame) {
                    alloc.set(frame, false);
                    alloc.free_count += 1;
                }
            }
        }
        for r in reserved {
            for frame in r.start / FRAME_BYTES..r.end.div_ceil(FRAME_BYTES).min(limit) {
                if !alloc.is_used(frame) {
                    alloc.set(frame, true);
                    alloc.free_count -= 1;
                }
            }
        }
        alloc.total_usable = alloc.free_count;
        alloc
    }

    fn is_used(&self, frame: u64) -> bool {
        self.bitmap[(frame / 64) as usize] & (1 << (frame % 64)) != 0
    }

    fn set(&mut self, frame: u64, used: bool) {
        let word = &mut self.bitmap[(frame / 64) as usize];
        if used {
            *word |= 1 << (frame % 64);
        } else {
            *word &= !(1 << (frame % 64));
        }
    }

    /// Allocate one frame; returns its physical address.
    pub fn alloc(&mut self) -> Option<u64> {
        self.alloc_below(u64::MAX)
    }

    /// Allocate one frame whose address is below `limit` (e.g. 4 GiB for a
    /// page-table root that 32-bit code loads into CR3).
    pub fn alloc_below(&mut self, limit: u64) -> Option<u64> {
        let words = self.bitmap.len();
        for i in 0..words {
            let w = (self.hint_word + i) % words;
            let bits = self.bitmap[w];
            if bits == u64::MAX {
                continue;
            }
            let bit = (!bits).trailing_zeros() as u64;
            let frame = w as u64 * 64 + bit;
            if frame * FRAME_BYTES >= limit {
                // Frames only get larger past this word; restart from 0 once.
                if w < self.hint_word {
                    return None;
                }
                continue;
            }
            self.set(frame, true);
            self.free_count -= 1;
            self.hint_word = w;
            return Some(frame * FRAME_BYTES);
        }
        None
    }

    /// Allocate `count` physically contiguous frames; returns the first
    /// address. Slow (a linear scan): meant for boot-time carving.
    pub fn alloc_contiguous(&mut self, count: usize) -> Option<u64> {
        if count == 0 {
            return None;
        }
        let frames = self.bitmap.len() as u64 * 64;
        let mut run_start = 0;
        let mut run_len = 0;
        for frame in 0..frames {
            if self.is_used(frame) {
                run_len = 0;
                continue;
            }
            if run_len == 0 {
                run_start = frame;
            }
            run_len += 1;
            if run_len == count {
                for f in run_start..run_start + count as u64 {
                    self.set(f, true);
                }
                self.free_count -= count;
                return Some(run_start * FRAME_BYTES);
            }
        }
        None
    }

    /// Return a frame to the pool.
    pub fn free(&mut self, addr: u64) -> Result<(), FreeError> {
        if !addr.is_multiple_of(FRAME_BYTES) {
            return Err(FreeError::Unaligned);
        }
        let frame = addr / FRAME_BYTES;
        if frame >= self.bitmap.len() as u64 * 64 {
            return Err(FreeError::OutOfRange);
        }
        if !self.is_used(frame) {
            return Err(FreeError::NotAllocated);
        }
        self.set(frame, false);
        self.free_count += 1;
        Ok(())
    }

    pub fn free_frames(&self) -> usize {
        self.free_count
    }

    pub fn usable_frames(&self) -> usize {
        self.total_usable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1024 * 1024;

    #[test]
    fn only_usable_unreserved_frames_are_handed_out() {
        let mut bits = [0u64; FrameAllocator::bitmap_words_for(16 * MB)];
        let usable = [PhysRange::new(MB, 4 * MB), PhysRange::new(8 * MB + 100, 9 * MB)];
        let reserved = [PhysRange::new(2 * MB, 3 * MB)];
        let mut a = FrameAllocator::new(&mut bits, &usable, &reserved);
        // 1..2 MiB (256) + 3..4 MiB (256) + the whole frames of 8M+100..9M (255).
        assert_eq!(a.free_frames(), 256 + 256 + 255);
        let mut seen = 0;
        while let Some(f) = a.alloc() {
            assert_eq!(f % FRAME_BYTES, 0);
            let in_usable = (MB..2 * MB).contains(&f)
                || (3 * MB..4 * MB).contains(&f)
                || (8 * MB + FRAME_BYTES..9 * MB).contains(&f);
            assert!(in_usable, "frame {f:#x} outside usable memory");
            seen += 1;
        }
        assert_eq!(seen, 767);
        assert_eq!(a.free_frames(), 0);
    }

    #[test]
    fn double_free_and_bad_addresses_are_refused() {
        let mut bits = [0u64; 4];
        let mut a = FrameAllocator::new(&mut bits, &[PhysRange::new(0, 256 * FRAME_BYTES)], &[]);
        let f = a.alloc().unwrap();
        assert_eq!(a.free(f), Ok(()));
        assert_eq!(a.free(f), Err(FreeError::NotAllocated));
        assert_eq!(a.free(f + 1), Err(FreeError::Unaligned));
        assert_eq!(a.free(1 << 40), Err(FreeError::OutOfRange));
        assert_eq!(a.free_frames(), 256);
    }

    #[test]
    fn alloc_below_respects_the_limit() {
        let mut bits = [0u64; 4];
        let mut a = FrameAllocator::new(&mut bits, &[PhysRange::new(0, 256 * FRAME_BYTES)], &[]);
        // Use up the low frames, then ask below a limit that only they satisfy.
        for _ in 0..10 {
            a.alloc_below(10 * FRAME_BYTES).unwrap();
        }
        assert_eq!(a.alloc_below(10 * FRAME_BYTES), None);
        assert!(a.alloc_below(u64::MAX).unwrap() >= 10 * FRAME_BYTES);
    }

    #[test]
    fn contiguous_runs_skip_holes() {
        let mut bits = [0u64; 4];
        let usable = [PhysRange::new(0, 5 * FRAME_BYTES), PhysRange::new(6 * FRAME_BYTES, 100 * FRAME_BYTES)];
        let mut a = FrameAllocator::new(&mut bits, &usable, &[]);
        let start = a.alloc_contiguous(10).unwrap();
        assert_eq!(start, 6 * FRAME_BYTES);
        assert_eq!(a.free_frames(), 99 - 10);
        assert_eq!(a.alloc_contiguous(1000), None);
    }

    #[test]
    fn freed_frames_are_reused() {
        let mut bits = [0u64; 1];
        let mut a = FrameAllocator::new(&mut bits, &[PhysRange::new(0, 64 * FRAME_BYTES)], &[]);
        let all: [u64; 64] = core::array::from_fn(|_| a.alloc().unwrap());
        assert_eq!(a.alloc(), None);
        a.free(all[17]).unwrap();
        assert_eq!(a.alloc(), Some(all[17]));
    }
}
