//! The buffer cache: `nbuf` block buffers between the file system and the
//! device (UNIX V1's I/O buffers, seed 004; Ridge's read-ahead and
//! write-behind, seed 001 §8).
//!
//! - **LRU**: a miss takes an empty buffer, else the least recently used
//!   buffer that is not busy; a dirty one is written first (and the next
//!   least recently used is taken if it is clean, so the write goes on
//!   while the miss is served: with two buffers the disk and the program
//!   work in parallel).
//! - **Busy while in flight**: a buffer's memory belongs to the device
//!   from submit to completion ([`crate::device::Transfer`] owns it); a
//!   request for that block waits for the completion, and when every
//!   buffer is busy a miss waits too. With `nbuf = 1` every disk access
//!   therefore waits for the one before it, as in V1.
//! - **Read-ahead**: [`Cache::prefetch`] starts reads of blocks the file
//!   system will want (the next blocks of a file read sequentially, up to
//!   16 pages), grouped into runs of consecutive blocks, one transfer per
//!   run, into at most half the buffers.
//! - **Write-behind**: dirty buffers go out in runs of consecutive blocks
//!   of up to 16 pages per transfer (`MAX_TRANSFER_PAGES`). A cache with
//!   room for at least [`HOLD_MIN_RUNS`] transfers below its background
//!   threshold holds dirty data ([`Cache::write_behind`]): nothing is
//!   written until more than [`DIRTY_BACKGROUND_PERCENT`] of the pool is
//!   dirty (then the oldest runs start, nobody waits), more than
//!   [`DIRTY_LIMIT_PERCENT`] (then the writer waits too), a block has been
//!   dirty [`DIRTY_EXPIRE_MS`] ([`Cache::write_expired`]), a buffer is
//!   needed, or [`Cache::sync`]. A smaller cache (V1's few buffers,
//!   benchmark B) keeps V1's rule: a run starts as soon as it is complete,
//!   and a dirty buffer is written when it is evicted. A block freed while
//!   dirty is not written at all ([`Cache::discard`]).
//! - **Write order**: [`Cache::order`] records that one block's present
//!   contents must be on the disk before another block's next contents.
//!   Before a block is written, the blocks it waits for are written and
//!   their transfers completed. The file system uses this to keep the
//!   disk consistent at every instant (see `docs/filesystem.md`). An order
//!   that would close a cycle is broken by writing the later block now,
//!   before it changes. The cycle check is incremental (`order.rs`: a
//!   topological order kept edge by edge, Pearce and Kelly): an edge that
//!   agrees with it, the common one, walks nothing.
//!
//! What it is not: a file system. It knows block numbers, never what they
//! hold. It is pure logic over [`BlockDevice`]; it never panics on what a
//! device returns.
//!
//! # Invariants
//! - A block is in at most one buffer; `map` holds exactly the buffers
//!   that are not empty.
//! - A buffer in flight has no data (`data == None`); every other buffer
//!   has `block_bytes` of data.
//! - The blocks a block waits for (`order`) never form a cycle; every
//!   block with an edge there is pending (dirty or being written) or is
//!   the `then` of an edge whose `first` is.
//! - `dirty` is the number of buffers in state `Dirty`; each of them has
//!   an entry in `dirty_queue` with its `dirty_seq`.
//! - A write transfer starts only when every block its buffers wait for
//!   is on the disk (clean, or not cached, and not in flight).

mod index;
mod log;
mod order;

use crate::device::{BlockDevice, Direction, SECTOR_BYTES, Transfer};
use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use index::{BlockIndex, LruList};
use order::{Added, Order};

pub use log::{JournalArea, LogStats};
use protocols::unix::Errno;
use protocols::unix::errno::{EINVAL, EIO};

/// Largest read-ahead and write-behind transfer, in pages (Ridge §8:
/// "reads up to sixteen pages ahead", "written to disk in sixteen-page
/// transfers").
pub const MAX_TRANSFER_PAGES: usize = 16;

/// Largest write transfer of a write-out someone waits for (`fsync`,
/// `sync`: [`Cache::write_blocks`], [`Cache::write_all`]), in pages. Ridge's
/// sixteen pages are write-behind's, which overlaps the program; a
/// program waiting in `fsync` for 8 MiB waits for every round trip, and
/// each transfer costs a round through the manager, an I/O worker, the
/// driver and the device (about 170 transfers for 8 MiB of 1 KiB blocks
/// at 16 pages; 40 at 64). Linux merges such a write-out into requests of
/// up to the device's limit (`max_sectors_kb`, 1280 KiB by default, less
/// virtio-blk's segment limit). The I/O workers' buffers hold one
/// (`protocols::unix::ext2fs::WORKER_TRANSFER_BYTES`).
pub const MAX_WRITE_OUT_PAGES: usize = 64;

/// Write-behind starts (the oldest dirty runs, nobody waits) when more
/// than this share of the pool's buffers is dirty. Linux's
/// `dirty_background_ratio` is 10 % of memory; the pool is 1/16 of the
/// memory free at mount (`ext2fs`), so half of it is about 3 % of memory.
pub const DIRTY_BACKGROUND_PERCENT: usize = 50;
/// Above this share dirty, a writer waits for write-behind (Linux's
/// `dirty_ratio`, 20 % of memory): a quarter of the pool stays for clean
/// blocks, and a write is never refused for want of a clean buffer.
pub const DIRTY_LIMIT_PERCENT: usize = 75;
/// A block dirty this long is written ([`Cache::write_expired`], called
/// by the server after its requests). Linux writes data dirty for 30 s
/// (`dirty_expire_centisecs`), looking every 5 s
/// (`dirty_writeback_centisecs`); 5 s here loses less at a power cut.
pub const DIRTY_EXPIRE_MS: u64 = 5000;
/// Expired blocks are looked for at most this often ([`Cache::has_expired`];
/// Linux's `dirty_writeback_centisecs` is 5 s): a pass looks at every
/// expired block, and a chain of waits goes one level per pass.
pub const WRITEBACK_INTERVAL_MS: u64 = 1000;
/// A cache holds dirty data only if its background threshold leaves room
/// for this many whole transfers; a smaller one (V1's `nbuf` of 1 to 12,
/// benchmark B) writes a run as soon as it is complete, as before.
pub const HOLD_MIN_RUNS: usize = 2;
/// The most blocks [`Cache::modify_cached`] takes at once: a lease call's
/// segments (`abi::lease::MAX_SEGMENTS`), what a writer hands it.
pub const MODIFY_RUN_BLOCKS: usize = abi::lease::MAX_SEGMENTS as usize;

/// Most blocks [`Cache::read_cached`] and [`Cache::read_ready`] give at
/// once without allocating: what one lease call moves.
const RUN_ON_STACK: usize = abi::lease::MAX_SEGMENTS as usize;
/// A run this short (an 8 KiB read of 1 KiB blocks, a 64 KiB one of
/// 4 KiB blocks) is listed in a smaller array.
const SHORT_RUN: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Empty,
    Clean,
    Dirty,
    Reading,
    Writing,
}

impl State {
    fn is_busy(self) -> bool {
        matches!(self, State::Reading | State::Writing)
    }

    fn is_pending_write(self) -> bool {
        matches!(self, State::Dirty | State::Writing)
    }
}

#[derive(Debug)]
struct Buf {
    block: u64,
    data: Option<Box<[u8]>>,
    state: State,
    last_use: u64,
    /// Filled by read-ahead and not used since.
    is_read_ahead: bool,
    /// Which `dirty_queue` entry stands for this buffer while it is dirty.
    dirty_seq: u64,
    /// A block just allocated whose write has not completed since
    /// ([`Cache::allocated`]): nothing on the disk points at it yet.
    is_fresh: bool,
}

/// What the cache counts (`kinfo` shows them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Requests for a block found in a buffer.
    pub hits: u64,
    /// Requests that had to take a buffer (and, unless the block is
    /// overwritten whole, read it).
    pub misses: u64,
    /// Hits on a buffer that read-ahead filled.
    pub read_ahead_hits: u64,
    /// Blocks read ahead.
    pub read_ahead_blocks: u64,
    /// Read transfers and the blocks they moved.
    pub read_transfers: u64,
    pub blocks_read: u64,
    /// Write transfers (all), and those started by write-behind before
    /// anyone needed the buffers.
    pub write_transfers: u64,
    pub write_behind_transfers: u64,
    pub blocks_written: u64,
    /// Times the cache waited for the device.
    pub waits: u64,
    /// Device flushes.
    pub flushes: u64,
    /// Of those, flushes between order levels on a device with a volatile
    /// write cache ([`BlockDevice::has_volatile_write_cache`]): a write
    /// whose predecessors completed but were not yet flushed waited for one.
    pub barrier_flushes: u64,
    /// Dirty blocks freed before they were written, and so never written
    /// ([`Cache::discard`]).
    pub discarded_blocks: u64,
    /// Write transfers started because blocks were dirty too long.
    pub expired_transfers: u64,
    /// Blocks the order's cycle checks visited (0 for an edge that agrees
    /// with the order: `order.rs`).
    pub order_visits: u64,
}

/// The buffer cache over a device `D`.
pub struct Cache<D: BlockDevice> {
    dev: D,
    block_bytes: usize,
    sectors_per_block: u64,
    device_blocks: u64,
    max_run_blocks: usize,
    /// [`MAX_WRITE_OUT_PAGES`] in blocks.
    max_out_blocks: usize,
    /// The buffers of the LRU pool (`nbuf`): `bufs[..nbuf]`; the pinned
    /// buffers follow them, never victims.
    nbuf: usize,
    bufs: Vec<Buf>,
    /// Block -> buffer, hashed: a lookup costs the same with 16 buffers
    /// or 100,000.
    map: BlockIndex,
    /// The pool's buffers that hold a block, least recently used first:
    /// the victim is found without a scan of every buffer.
    lru: LruList,
    /// The pool's empty buffers.
    free: Vec<usize>,
    /// Blocks kept in pinned buffers once read ([`Cache::pin`]).
    pinned: BTreeSet<u64>,
    clock: u64,
    /// [`Cache::begin_request`]'s clock: buffers used since are the
    /// request's own, never taken by its read-ahead.
    request_clock: u64,
    /// The clock at the start of the request before (the reads before
    /// this one: only reads call [`Cache::begin_request`]): buffers used
    /// since, by that read, this one or the writes between them, are the
    /// program's working set, which read-ahead leaves alone too
    /// ([`Cache::read_ahead_victim`]).
    prev_request_clock: u64,
    in_flight: BTreeMap<u64, Vec<usize>>,
    next_tag: u64,
    /// Which blocks' contents must be on the disk before which blocks'
    /// (edges dropped exactly when a write completes, so a block dirtied
    /// again later is not waited for by mistake; a stale wait could close
    /// a cycle), in a topological order kept edge by edge.
    order: Order,
    /// Buffers in state `Dirty` (pool and pinned).
    dirty: usize,
    /// Dirty buffers in the order they became dirty: `(dirty_seq, block,
    /// since_ms)`; an entry whose buffer is no longer dirty with that
    /// `dirty_seq` is stale and skipped.
    dirty_queue: VecDeque<(u64, u64, u64)>,
    next_dirty_seq: u64,
    /// The server's clock, as last told ([`Cache::write_expired`]).
    now_ms: u64,
    /// When [`Cache::write_expired`] last looked (its clock).
    last_writeback_ms: u64,
    stats: CacheStats,
    /// A write failed since the last [`Cache::sync`] (reported there, like
    /// Linux's `AS_EIO`).
    has_write_error: bool,
    /// A write completed since the last device flush.
    has_unflushed_writes: bool,
    /// Transfers finished so far ([`Cache::finished`]), and its value at
    /// the last background pass of write-behind that could start nothing
    /// (`None`: none since something else changed): such a pass is not
    /// tried again until a transfer finishes or a block is discarded.
    finished_transfers: u64,
    idle_pass_at: Option<u64>,
    /// Background passes made (for the tests).
    background_passes: u64,
    /// The device may lose a completed write at a power cut until a flush
    /// ([`BlockDevice::has_volatile_write_cache`], asked once at
    /// [`Cache::new`]): the order then needs a flush between its levels.
    is_volatile: bool,
    /// With `is_volatile`: blocks that waited for a write which completed
    /// since the last flush. Such a block's next write starts only after a
    /// flush ([`Cache::barrier`]); one flush clears them all.
    needs_barrier: BTreeSet<u64>,
    /// With `is_volatile`: blocks whose write completed since the last
    /// flush. A block ordered after one of them ([`Cache::order`]) needs a
    /// flush before its write, though there is no edge left to record.
    unflushed: BTreeSet<u64>,
    /// The journal, when `fsync` commits through one (`log.rs`).
    log: Option<log::Log>,
    log_stats: LogStats,
}

impl<D: BlockDevice> Cache<D> {
    /// A cache of `nbuf` buffers of `block_bytes` (a multiple of the
    /// sector, at most 16 pages) over `dev`; `EINVAL` (and the device
    /// back) for other sizes or no buffers.
    pub fn new(dev: D, block_bytes: usize, nbuf: usize) -> Result<Self, (Errno, D)> {
        let max_bytes = MAX_TRANSFER_PAGES * abi::layout::PAGE_SIZE as usize;
        if nbuf == 0
            || block_bytes == 0
            || !block_bytes.is_multiple_of(SECTOR_BYTES)
            || block_bytes > max_bytes
        {
            return Err((EINVAL, dev));
        }
        let sectors_per_block = (block_bytes / SECTOR_BYTES) as u64;
        let is_volatile = dev.has_volatile_write_cache();
        let bufs = (0..nbuf)
            .map(|_| Buf {
                block: 0,
                data: Some(vec![0u8; block_bytes].into_boxed_slice()),
                state: State::Empty,
                last_use: 0,
                is_read_ahead: false,
                dirty_seq: 0,
                is_fresh: false,
            })
            .collect();
        Ok(Cache {
            device_blocks: dev.sectors() / sectors_per_block,
            dev,
            block_bytes,
            sectors_per_block,
            max_run_blocks: max_bytes / block_bytes,
            max_out_blocks: MAX_WRITE_OUT_PAGES * abi::layout::PAGE_SIZE as usize / block_bytes,
            nbuf,
            bufs,
            pinned: BTreeSet::new(),
            map: BlockIndex::new(nbuf),
            lru: LruList::new(nbuf),
            free: (0..nbuf).rev().collect(),
            clock: 0,
            request_clock: 0,
            prev_request_clock: 0,
            in_flight: BTreeMap::new(),
            next_tag: 1,
            order: Order::with_blocks(nbuf),
            dirty: 0,
            dirty_queue: VecDeque::new(),
            next_dirty_seq: 1,
            now_ms: 0,
            last_writeback_ms: 0,
            stats: CacheStats::default(),
            has_write_error: false,
            has_unflushed_writes: false,
            finished_transfers: 0,
            idle_pass_at: None,
            background_passes: 0,
            is_volatile,
            unflushed: BTreeSet::new(),
            needs_barrier: BTreeSet::new(),
            log: None,
            log_stats: LogStats::default(),
        })
    }

    pub fn block_bytes(&self) -> usize {
        self.block_bytes
    }

    /// The buffers of the LRU pool (pinned ones not counted).
    pub fn nbuf(&self) -> usize {
        self.nbuf
    }

    /// Keeps `block`, once read, in a buffer of its own outside the `nbuf`
    /// pool, never evicted (written like any other: in order, by
    /// write-behind of its neighbours, at `sync`). For the few blocks V1
    /// kept in core rather than in its buffers: the superblock and its
    /// free map (seed 004's `nbuf` counts only the I/O buffers).
    pub fn pin(&mut self, block: u64) {
        self.pinned.insert(block);
    }

    /// Blocks pinned ([`Cache::pin`]) and buffers they hold now.
    pub fn pinned_blocks(&self) -> usize {
        self.pinned.len()
    }

    /// The device's size in blocks of this cache.
    pub fn device_blocks(&self) -> u64 {
        self.device_blocks
    }

    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    pub fn device(&self) -> &D {
        &self.dev
    }

    pub fn device_mut(&mut self) -> &mut D {
        &mut self.dev
    }

    /// Every dirty buffer written, every transfer finished; the device.
    pub fn into_device(mut self) -> Result<D, Errno> {
        self.sync()?;
        Ok(self.dev)
    }

    /// The device back without writing anything: dirty buffers are
    /// dropped, transfers in flight are waited for (for a mount that was
    /// refused after reading only).
    pub fn into_device_unwritten(mut self) -> D {
        while self.dev.complete().is_some() {}
        self.dev
    }

    /// Reads block `block` and gives its bytes to `f`.
    pub fn read<R>(&mut self, block: u64, f: impl FnOnce(&[u8]) -> R) -> Result<R, Errno> {
        let i = self.acquire(block, true)?;
        Ok(f(self.data(i)?))
    }

    /// The buffers of `blocks`, in order, when every one is cached and
    /// ready (waiting for those in flight); `None` when one is not. A wait
    /// for a later block cannot take an earlier one's buffer (waits only
    /// finish transfers), but a failed read forgets its buffer: all are
    /// checked again at the end. Counts nothing.
    fn ready_run(&mut self, blocks: &[u64]) -> Result<Option<Vec<usize>>, Errno> {
        let mut indices = vec![0; blocks.len()];
        Ok(self.ready_run_into(blocks, &mut indices)?.then_some(indices))
    }

    /// [`Cache::ready_run`] into `indices` (as long as `blocks`): true
    /// when every block is there (a reader's array on its stack: a read
    /// allocates nothing).
    fn ready_run_into(&mut self, blocks: &[u64], indices: &mut [usize]) -> Result<bool, Errno> {
        for (slot, &block) in indices.iter_mut().zip(blocks) {
            self.check_block(block)?;
            match self.find_ready(block)? {
                Some(i) => *slot = i,
                None => return Ok(false),
            }
        }
        Ok(indices.iter().zip(blocks).all(|(&i, &b)| {
            self.bufs[i].block == b && matches!(self.bufs[i].state, State::Clean | State::Dirty)
        }))
    }

    /// Gives `f` the bytes of every block of `blocks` at once, in order,
    /// when each is in a buffer (waiting for those in flight, such as a
    /// read-ahead's; each a hit, as [`Cache::read`] counts it); `None`,
    /// with nothing counted, when one is not cached. A reader then copies
    /// a run of blocks in one piece (`Fs::read_into`: one lease call from
    /// the buffers to the caller); on `None` it goes a block at a time, as
    /// before, so the buffers taken and the order of misses are
    /// [`Cache::read`]'s (benchmark B's counts do not change).
    pub fn read_cached<R>(
        &mut self,
        blocks: &[u64],
        f: impl FnOnce(&[&[u8]]) -> R,
    ) -> Result<Option<R>, Errno> {
        if blocks.len() > RUN_ON_STACK {
            let Some(indices) = self.ready_run(blocks)? else { return Ok(None) };
            return self.give_run(&indices, |d| f(d)).map(Some);
        }
        let mut indices = [0usize; RUN_ON_STACK];
        let indices = &mut indices[..blocks.len()];
        if !self.ready_run_into(blocks, indices)? {
            return Ok(None);
        }
        self.give_run(indices, |d| f(d)).map(Some)
    }

    /// [`Cache::read_cached`] when no block of `blocks` needs the device:
    /// each is cached and not in flight, else `None` at once, with
    /// nothing waited for, counted or changed (so the caller can go on as
    /// if it had not asked: `Fs::read_into`'s path for a run read from
    /// the cache, which then needs no read-ahead of its own blocks). An
    /// out-of-range block is `EIO`, as there. At most
    /// [`abi::lease::MAX_SEGMENTS`] blocks (`None` for more).
    pub fn read_ready<R>(
        &mut self,
        blocks: &[u64],
        f: impl FnOnce(&mut [&[u8]]) -> R,
    ) -> Result<Option<R>, Errno> {
        // Arrays on the stack, the smaller when it serves (zeroing 64
        // entries per 8 KiB read showed in the profile).
        if blocks.len() <= SHORT_RUN {
            self.read_ready_n::<SHORT_RUN, R>(blocks, f)
        } else if blocks.len() <= RUN_ON_STACK {
            self.read_ready_n::<RUN_ON_STACK, R>(blocks, f)
        } else {
            Ok(None)
        }
    }

    /// [`Cache::read_ready`] with room for `N` blocks.
    fn read_ready_n<const N: usize, R>(
        &mut self,
        blocks: &[u64],
        f: impl FnOnce(&mut [&[u8]]) -> R,
    ) -> Result<Option<R>, Errno> {
        let mut indices = [0usize; N];
        for (slot, &block) in indices.iter_mut().zip(blocks) {
            self.check_block(block)?;
            match self.map.get(&block) {
                Some(&i) if matches!(self.bufs[i].state, State::Clean | State::Dirty) => *slot = i,
                _ => return Ok(None),
            }
        }
        self.give_run(&indices[..blocks.len()], f).map(Some)
    }

    /// The hits of a run found ready (`indices`, in order), then its bytes
    /// to `f` (in a list it may change: narrow a slice to the part it
    /// wants, without a list of its own).
    fn give_run<R>(&mut self, indices: &[usize], f: impl FnOnce(&mut [&[u8]]) -> R) -> Result<R, Errno> {
        for &i in indices {
            self.stats.hits += 1;
            if self.bufs[i].is_read_ahead {
                self.bufs[i].is_read_ahead = false;
                self.stats.read_ahead_hits += 1;
            }
            self.touch(i);
        }
        if indices.len() <= SHORT_RUN {
            return self.slices_then::<SHORT_RUN, R>(indices, f);
        }
        if indices.len() <= RUN_ON_STACK {
            return self.slices_then::<RUN_ON_STACK, R>(indices, f);
        }
        let mut slices: Vec<&[u8]> = Vec::with_capacity(indices.len());
        for &i in indices {
            slices.push(self.data(i)?);
        }
        Ok(f(&mut slices))
    }

    /// The bytes of buffers `indices` (at most `N`) to `f`, listed on the stack.
    fn slices_then<const N: usize, R>(
        &self,
        indices: &[usize],
        f: impl FnOnce(&mut [&[u8]]) -> R,
    ) -> Result<R, Errno> {
        let mut on_stack: [&[u8]; N] = [&[]; N];
        for (slot, &i) in on_stack.iter_mut().zip(indices) {
            *slot = self.data(i)?;
        }
        Ok(f(&mut on_stack[..indices.len()]))
    }

    /// Gives `f` the bytes of every block of `blocks` at once, in order,
    /// to change, when each is in a buffer (waiting for those in flight;
    /// each a hit), and marks them dirty; `None`, with nothing counted or
    /// changed, when one is not cached (or a block is named twice, or there are more
    /// than [`MODIFY_RUN_BLOCKS`]). A
    /// writer then moves a run of blocks' bytes in one piece
    /// (`Fs::write_from`: one lease call from the caller's buffer into
    /// the buffers), the write side of [`Cache::read_cached`].
    pub fn modify_cached<R>(
        &mut self,
        blocks: &[u64],
        f: impl FnOnce(&mut [&mut [u8]]) -> R,
    ) -> Result<Option<R>, Errno> {
        if blocks.len() > MODIFY_RUN_BLOCKS {
            return Ok(None);
        }
        self.check_thresholds()?;
        let mut indices = [0usize; MODIFY_RUN_BLOCKS];
        let indices = &mut indices[..blocks.len()];
        if !self.ready_run_into(blocks, indices)? {
            return Ok(None);
        }
        // Buffers in index order, to lend each once. On the stack: in
        // `ext2fs` every heap allocation goes through a first-fit free
        // list, whose two walks were a fifth of the manager's time in
        // R2's write row (`cargo xtask profile --r2disk-row write`).
        let mut by_index = [(0usize, 0usize); MODIFY_RUN_BLOCKS];
        let by_index = &mut by_index[..indices.len()];
        for (k, &i) in indices.iter().enumerate() {
            by_index[k] = (i, k);
        }
        by_index.sort_unstable();
        if by_index.windows(2).any(|w| w[0].0 == w[1].0) {
            return Ok(None);
        }
        for &i in indices.iter() {
            self.stats.hits += 1;
            self.bufs[i].is_read_ahead = false;
            self.mark_dirty(i);
            self.touch(i);
        }
        // Each wanted buffer split off the rest in index order: the cost
        // is the run's length, not the pool's (a walk over every buffer
        // up to the highest wanted one cost 16 % of the host's time of
        // R2's write loop with 26,742 buffers, `tests/write_path.rs`).
        let mut slices: [&mut [u8]; MODIFY_RUN_BLOCKS] = core::array::from_fn(|_| Default::default());
        let mut rest: &mut [Buf] = &mut self.bufs;
        let mut base = 0;
        for &(want, k) in by_index.iter() {
            let (buf, tail) = rest[want - base..].split_first_mut().ok_or(EIO)?;
            slices[k] = buf.data.as_deref_mut().ok_or(EIO)?;
            rest = tail;
            base = want + 1;
        }
        let slices = &mut slices[..indices.len()];
        Ok(Some(f(slices)))
    }

    /// Reads block `block`, lets `f` change it, and marks it dirty.
    pub fn modify<R>(&mut self, block: u64, f: impl FnOnce(&mut [u8]) -> R) -> Result<R, Errno> {
        self.check_thresholds()?;
        let i = self.acquire(block, true)?;
        self.mark_dirty(i);
        Ok(f(self.data_mut(i)?))
    }

    /// Gives `f` a buffer for block `block` without reading it (zeros, if
    /// it was not cached): for a block written whole (V1's `dskw`: "don't
    /// have to read block"). Marks it dirty.
    pub fn overwrite<R>(&mut self, block: u64, f: impl FnOnce(&mut [u8]) -> R) -> Result<R, Errno> {
        self.check_thresholds()?;
        let i = self.acquire(block, false)?;
        self.mark_dirty(i);
        Ok(f(self.data_mut(i)?))
    }

    /// A buffer of zeros for `block`, marked dirty, without reading it: a
    /// block just allocated. The same as [`Cache::overwrite`] with a fill
    /// of zeros, but a buffer taken for it is zeroed once, not twice (a
    /// write of 8 KiB of new 1 KiB blocks zeroed 16 KiB).
    pub fn zeroed(&mut self, block: u64) -> Result<(), Errno> {
        self.check_thresholds()?;
        let was_mapped = self.map.get(&block).is_some();
        let i = self.acquire(block, false)?;
        self.mark_dirty(i);
        if was_mapped {
            self.data_mut(i)?.fill(0);
        }
        Ok(())
    }

    /// Before a change: write-behind if a cache that holds dirty data is
    /// past its background threshold (also for writes of part of a block,
    /// which never call [`Cache::write_behind`]). Before, not after, so
    /// that an error leaves nothing changed. Writing other blocks here
    /// keeps every order: a block is written only after what it waits for.
    fn check_thresholds(&mut self) -> Result<(), Errno> {
        if self.dirty > self.background_blocks() && self.holds_dirty() {
            self.write_back_over_threshold()?;
        }
        Ok(())
    }

    /// Buffer `i` (clean or dirty) is about to change.
    fn mark_dirty(&mut self, i: usize) {
        if self.bufs[i].state != State::Dirty {
            self.bufs[i].state = State::Dirty;
            self.dirty += 1;
            let seq = self.next_dirty_seq;
            self.next_dirty_seq += 1;
            self.bufs[i].dirty_seq = seq;
            self.dirty_queue.push_back((seq, self.bufs[i].block, self.now_ms));
            // Stale entries are dropped at the front; one long-dirty block
            // there could let them pile up behind it: compact then.
            if self.dirty_queue.len() > 4 * self.dirty + 64 {
                let (bufs, map) = (&self.bufs, &self.map);
                self.dirty_queue.retain(|&(seq, block, _)| is_dirty_entry(bufs, map, seq, block));
            }
        }
    }

    fn data(&self, i: usize) -> Result<&[u8], Errno> {
        self.bufs[i].data.as_deref().ok_or(EIO)
    }

    fn data_mut(&mut self, i: usize) -> Result<&mut [u8], Errno> {
        self.bufs[i].data.as_deref_mut().ok_or(EIO)
    }

    fn touch(&mut self, i: usize) {
        self.clock += 1;
        self.bufs[i].last_use = self.clock;
        if i < self.nbuf {
            self.lru.touch(i);
        }
    }

    /// Waits for one transfer and puts its buffers back.
    fn wait_one(&mut self) -> Result<(), Errno> {
        self.stats.waits += 1;
        // Nothing in flight means a bookkeeping error, not a reason to hang.
        let (transfer, result) = self.dev.complete().ok_or(EIO)?;
        self.finished(transfer, result)
    }

    /// Puts back the buffers of every transfer the device has already
    /// finished ([`BlockDevice::poll`]), without waiting: a server calls it
    /// between requests, so that buffers whose I/O ended are not kept
    /// busy until the next wait.
    pub fn reap(&mut self) -> Result<(), Errno> {
        while let Some((transfer, result)) = self.dev.poll() {
            self.finished(transfer, result)?;
        }
        Ok(())
    }

    /// A transfer came back from the device: its buffers are the cache's
    /// again, in the state its outcome says.
    fn finished(&mut self, transfer: Transfer, result: Result<(), Errno>) -> Result<(), Errno> {
        if self.log.is_some() && transfer.tag >= 1 << 63 {
            return self.log_finished(transfer, result);
        }
        let indices = self.in_flight.remove(&transfer.tag).ok_or(EIO)?;
        self.finished_transfers += 1;
        if indices.len() != transfer.buffers.len() {
            return Err(EIO);
        }
        let first_block = transfer.first_sector / self.sectors_per_block;
        let blocks = indices.len() as u64;
        for (i, data) in indices.into_iter().zip(transfer.buffers) {
            let buf = &mut self.bufs[i];
            if data.len() != self.block_bytes {
                return Err(EIO);
            }
            buf.data = Some(data);
            match (transfer.direction, result) {
                (Direction::Read, Ok(())) => buf.state = State::Clean,
                (Direction::Read, Err(_)) => {
                    // The block is not known: forget it; whoever waits for
                    // it reads it again and gets the error then.
                    self.forget(i);
                }
                (Direction::Write, outcome) => {
                    // On an error the memory copy stays right and the
                    // disk's is lost: keep going, report it at the next sync.
                    self.has_write_error |= outcome.is_err();
                    self.has_unflushed_writes = true;
                    buf.state = State::Clean;
                    // Its pointer may now reach the disk ([`Cache::allocated`]).
                    buf.is_fresh = false;
                }
            }
        }
        if transfer.direction == Direction::Write {
            self.written(first_block, blocks);
        }
        Ok(())
    }

    /// The write of `count` blocks from `first` (one transfer's run)
    /// completed: what they waited for was on the disk before, and
    /// whatever waited for them may go. One pass per block waiting for
    /// them, not one per edge ([`Order::remove_run`]).
    fn written(&mut self, first: u64, count: u64) {
        if self.is_volatile {
            // Completed is not durable: whoever waited for these blocks
            // waits on for a flush issued after this completion.
            // A waiter that is fresh ([`Cache::allocated`]) is no block's
            // target on the disk yet: it goes in the same level, and the
            // flush before whatever will point at it covers these writes
            // too (they completed before its write started).
            let run = first..first.saturating_add(count);
            self.unflushed.extend(run.clone());
            for block in run.clone() {
                let (order, map, bufs) = (&self.order, &self.map, &self.bufs);
                let waiters: Vec<u64> = order
                    .waiters(block)
                    .filter(|t| !run.contains(t) && !map.get(t).is_some_and(|&i| bufs[i].is_fresh))
                    .collect();
                self.needs_barrier.extend(waiters);
            }
        }
        self.order.remove_run(first, count);
    }

    /// Whether `block`'s next write must wait for a device flush: a block
    /// it waited for completed since the last one, on a device with a
    /// volatile write cache.
    fn needs_barrier(&self, block: u64) -> bool {
        self.is_volatile && self.needs_barrier.contains(&block)
    }

    /// A flush between two levels of the order: every write completed so
    /// far becomes durable, so every block that waited for one may go.
    /// Writes still in flight are not covered (a flush covers what
    /// completed before it), and their waiters are marked when they
    /// complete.
    fn barrier(&mut self) -> Result<(), Errno> {
        self.stats.barrier_flushes += 1;
        self.flush_device()
    }

    /// One device flush, counted: on success nothing written so far waits
    /// for a flush any more. A failed flush leaves the marks: the next
    /// write of such a block tries again, and the error is reported at the
    /// next sync. Both the ordered writes' barriers and the journal's
    /// flushes (`log.rs`) are this.
    fn flush_device(&mut self) -> Result<(), Errno> {
        self.stats.flushes += 1;
        if self.dev.flush().is_err() {
            self.has_write_error = true;
            return Err(EIO);
        }
        self.has_unflushed_writes = false;
        self.needs_barrier.clear();
        self.unflushed.clear();
        Ok(())
    }

    fn is_pending(&self, block: u64) -> bool {
        self.map.get(&block).is_some_and(|&i| self.bufs[i].state.is_pending_write())
    }

    /// A block `block` waits for that is not yet on the disk.
    fn unsatisfied(&mut self, block: u64) -> Option<u64> {
        if !self.order.has_waits(block) {
            return None;
        }
        let found = self.order.waits(block).find(|&b| self.is_pending(b));
        if found.is_none() {
            self.order.remove_waits(block);
        }
        found
    }

    /// The buffer holding `block`, once no I/O is in flight on it.
    fn find_ready(&mut self, block: u64) -> Result<Option<usize>, Errno> {
        loop {
            let Some(&i) = self.map.get(&block) else { return Ok(None) };
            match self.bufs[i].state {
                State::Reading | State::Writing => self.wait_one()?,
                State::Clean | State::Dirty => return Ok(Some(i)),
                State::Empty => {
                    self.map.remove(&block);
                    return Ok(None);
                }
            }
        }
    }

    fn check_block(&self, block: u64) -> Result<(), Errno> {
        if block < self.device_blocks { Ok(()) } else { Err(EIO) }
    }

    fn acquire(&mut self, block: u64, read: bool) -> Result<usize, Errno> {
        self.check_block(block)?;
        if let Some(i) = self.find_ready(block)? {
            self.stats.hits += 1;
            if self.bufs[i].is_read_ahead {
                self.bufs[i].is_read_ahead = false;
                self.stats.read_ahead_hits += 1;
            }
            self.touch(i);
            return Ok(i);
        }
        self.stats.misses += 1;
        let i = if self.pinned.contains(&block) { self.pinned_buffer() } else { self.free_buffer()? };
        self.bufs[i].block = block;
        self.bufs[i].is_read_ahead = false;
        self.map.insert(block, i);
        self.touch(i);
        if read {
            self.start_read(&[i]);
            while self.bufs[i].state == State::Reading {
                self.wait_one()?;
            }
            if self.bufs[i].state == State::Empty {
                return Err(EIO);
            }
        } else {
            self.data_mut(i)?.fill(0);
            self.bufs[i].state = State::Clean;
        }
        Ok(i)
    }

    /// Buffer `i` holds no block any more.
    fn forget(&mut self, i: usize) {
        let buf = &mut self.bufs[i];
        if buf.state != State::Empty {
            let block = buf.block;
            if buf.state == State::Dirty {
                self.dirty -= 1;
            }
            buf.state = State::Empty;
            buf.is_read_ahead = false;
            buf.is_fresh = false;
            self.map.remove(&block);
            if i < self.nbuf {
                self.lru.remove(i);
                self.free.push(i);
            }
        }
    }

    /// An empty pinned buffer (one a failed read left empty), else a new one.
    fn pinned_buffer(&mut self) -> usize {
        if let Some(i) = (self.nbuf..self.bufs.len()).find(|&i| self.bufs[i].state == State::Empty) {
            return i;
        }
        self.bufs.push(Buf {
            block: 0,
            data: Some(vec![0u8; self.block_bytes].into_boxed_slice()),
            state: State::Empty,
            last_use: 0,
            is_read_ahead: false,
            dirty_seq: 0,
            is_fresh: false,
        });
        self.bufs.len() - 1
    }

    /// An empty buffer of the pool, not mapped: evicting the least recently
    /// used one that is not busy (writing it first if dirty), or waiting.
    fn free_buffer(&mut self) -> Result<usize, Errno> {
        let mut has_started_write = false;
        loop {
            if let Some(i) = self.free.pop() {
                return Ok(i);
            }
            // The least recently used buffer not in flight: the walk
            // passes only buffers in flight, a few.
            let mut at = self.lru.oldest();
            let mut lru = None;
            while let Some(i) = at {
                if !self.bufs[i].state.is_busy() {
                    lru = Some(i);
                    break;
                }
                at = self.lru.newer(i);
            }
            match lru {
                None => self.wait_one()?,
                Some(i) if self.bufs[i].state == State::Clean => {
                    self.forget(i);
                    let popped = self.free.pop();
                    debug_assert_eq!(popped, Some(i));
                    return Ok(i);
                }
                Some(i) => {
                    if has_started_write && !self.in_flight.is_empty() {
                        self.wait_one()?;
                    } else {
                        self.write_run(i, false)?;
                        has_started_write = true;
                    }
                }
            }
        }
    }

    fn start_read(&mut self, indices: &[usize]) {
        let mut buffers = Vec::with_capacity(indices.len());
        for &i in indices {
            self.bufs[i].state = State::Reading;
            buffers.push(self.bufs[i].data.take().unwrap_or_else(|| vec![0u8; self.block_bytes].into()));
        }
        let tag = self.next_tag;
        self.next_tag += 1;
        self.in_flight.insert(tag, indices.to_vec());
        self.stats.read_transfers += 1;
        self.stats.blocks_read += indices.len() as u64;
        let first_sector = self.bufs[indices[0]].block * self.sectors_per_block;
        self.dev.submit(Transfer { tag, direction: Direction::Read, first_sector, buffers });
    }

    fn is_dirty_ready(&mut self, block: u64) -> Option<usize> {
        let &i = self.map.get(&block)?;
        (self.bufs[i].state == State::Dirty
            && !self.needs_barrier(block)
            && self.unsatisfied(block).is_none())
        .then_some(i)
    }

    /// Starts writing the dirty buffer `i` together with the dirty blocks
    /// next to it (one transfer of at most `max_run_blocks`), after the
    /// blocks it waits for are on the disk. With `only_if_ready`, starts
    /// nothing (and returns false) rather than wait for those.
    fn write_run(&mut self, i: usize, only_if_ready: bool) -> Result<bool, Errno> {
        self.write_run_of(i, only_if_ready, self.max_run_blocks)
    }

    /// [`Cache::write_run`] with runs of up to `max_blocks`.
    fn write_run_of(&mut self, i: usize, only_if_ready: bool, max_blocks: usize) -> Result<bool, Errno> {
        let block = self.bufs[i].block;
        while let Some(first) = self.unsatisfied(block) {
            if only_if_ready {
                return Ok(false);
            }
            self.write_block_now(first)?;
        }
        if self.bufs[i].state != State::Dirty || self.map.get(&block) != Some(&i) {
            // Written meanwhile (it was next to a block written first).
            return Ok(true);
        }
        if self.needs_barrier(block) {
            // What it waited for completed but may sit in the device's
            // cache. One flush covers every completed write, so a caller
            // that need not wait holds the write while transfers are in
            // flight (their completions join the same flush).
            if only_if_ready && !self.in_flight.is_empty() {
                return Ok(false);
            }
            self.barrier()?;
        }
        if self.log_conflicts(block) {
            // Its home write would be undone by a replay of the log's
            // older copy (`log.rs`): its present contents are logged
            // first (its waits are durable by now).
            self.log_before_home(block)?;
            if self.bufs[i].state != State::Dirty || self.map.get(&block) != Some(&i) {
                return Ok(true);
            }
        }
        let mut start = block;
        while start > 0
            && ((block - start + 1) as usize) < max_blocks
            && self.is_dirty_ready(start - 1).is_some()
            && !self.log_conflicts(start - 1)
        {
            start -= 1;
        }
        let mut indices = Vec::new();
        let mut at = start;
        while indices.len() < max_blocks {
            match self.is_dirty_ready(at) {
                Some(j) if at == block || !self.log_conflicts(at) => indices.push(j),
                _ => break,
            }
            at += 1;
        }
        if self.log.is_some() {
            for b in start..start + indices.len() as u64 {
                self.log_note_home(b);
            }
        }
        if indices.is_empty() {
            return Ok(false);
        }
        let mut buffers = Vec::with_capacity(indices.len());
        for &j in &indices {
            self.bufs[j].state = State::Writing;
            self.dirty -= 1;
            buffers.push(self.bufs[j].data.take().ok_or(EIO)?);
        }
        let tag = self.next_tag;
        self.next_tag += 1;
        self.in_flight.insert(tag, indices.clone());
        self.stats.write_transfers += 1;
        self.stats.blocks_written += indices.len() as u64;
        self.dev.submit(Transfer {
            tag,
            direction: Direction::Write,
            first_sector: start * self.sectors_per_block,
            buffers,
        });
        Ok(true)
    }

    /// Writes `block` (if dirty) and waits until it is on the disk.
    pub fn write_block_now(&mut self, block: u64) -> Result<(), Errno> {
        loop {
            let Some(&i) = self.map.get(&block) else { return Ok(()) };
            match self.bufs[i].state {
                State::Empty | State::Clean | State::Reading => return Ok(()),
                State::Writing => self.wait_one()?,
                State::Dirty => {
                    self.write_run(i, false)?;
                }
            }
        }
    }

    /// Records that the present contents of `first` must be on the disk
    /// before the contents `then` is about to get. Call it right before
    /// changing `then`, with no other cache call between: a write of
    /// `then` meanwhile would carry the old contents and end the wait.
    ///
    /// The cycle check is `order.rs`'s: an edge that agrees with the
    /// topological order kept there (the common one: a new data block
    /// before its indirect block, a bitmap before a new indirect block)
    /// visits no block; one against it visits only the blocks ranked
    /// between its two ends that it reaches.
    pub fn order(&mut self, first: u64, then: u64) -> Result<(), Errno> {
        if first == then {
            return Ok(());
        }
        if !self.is_pending(first) {
            // On the device, but on a volatile cache perhaps not yet
            // durable: `then`'s next write waits for a flush.
            if self.is_volatile && self.unflushed.contains(&first) && !self.is_fresh(then) {
                self.needs_barrier.insert(then);
            }
            return Ok(());
        }
        // A write of `then` in flight carries its present contents; its
        // completion must not take this wait (meant for the next
        // contents) with it.
        self.find_ready(then)?;
        let visited = self.order.visited;
        let added = self.order.add(first, then);
        self.stats.order_visits += self.order.visited - visited;
        if added == Added::Cycle {
            // A cycle: `then`'s present contents are already due before
            // `first`'s. Write them now, before they change; once written
            // `then` waits for nothing and nothing waits for it.
            self.write_block_now(then)?;
            if !self.is_pending(first) {
                return Ok(());
            }
            if self.order.add(first, then) == Added::Cycle {
                return Err(EIO);
            }
        }
        Ok(())
    }

    /// `block` (in the cache, dirty: [`Cache::zeroed`] or
    /// [`Cache::overwrite`] just gave it its first contents) was just
    /// allocated, and every block that will point at it waits for it
    /// ([`Cache::order`]`(block, holder)` before the pointer is set): until
    /// its write completes nothing on the disk reaches it, so what it
    /// waits for need only have *completed* before its write starts, not
    /// be flushed. On a device with a volatile write cache that puts a
    /// chain of new blocks (data, a new indirect block, a new double
    /// indirect block, a new directory block) in one level of the order:
    /// the flush before the first block already on the disk that points
    /// into the chain (an inode's block, an older indirect block) covers
    /// the whole chain, every write of which completed before it was
    /// issued (`docs/filesystem.md`, "The write order"). Without a
    /// volatile cache nothing changes.
    pub fn allocated(&mut self, block: u64) {
        if let Some(&i) = self.map.get(&block)
            && self.bufs[i].state == State::Dirty
        {
            self.bufs[i].is_fresh = true;
        }
    }

    /// Which dirty period `block`'s buffer is in: a number that changes
    /// each time the block becomes dirty after being clean, written or
    /// not cached; `None` unless it is dirty now (not cached, clean, or
    /// in flight). While it stays the same the block has not been written
    /// since, so nothing it got meanwhile is on the disk.
    pub fn dirty_seq(&self, block: u64) -> Option<u64> {
        let &i = self.map.get(&block)?;
        (self.bufs[i].state == State::Dirty).then_some(self.bufs[i].dirty_seq)
    }

    fn is_fresh(&self, block: u64) -> bool {
        self.map.get(&block).is_some_and(|&i| self.bufs[i].is_fresh)
    }

    /// Does `then` already wait for `first`'s present contents (the wait
    /// [`Cache::order`] would record)? Then `order(first, then)` would
    /// change nothing: while `first` is pending, `then` is not written
    /// (so it is not in flight), and the graph of waits has no cycle (so
    /// the search for one would find none). `creat` asks it before
    /// ordering the inode bitmap and the inode's block before the entry's
    /// block, which most creates find already ordered, and skips
    /// `order`'s other steps (`docs/filesystem-history.md`, "The request path").
    pub fn is_ordered(&self, first: u64, then: u64) -> bool {
        self.is_pending(first) && self.order.contains(first, then)
    }

    /// Whether this cache holds dirty data ([`HOLD_MIN_RUNS`]).
    fn holds_dirty(&self) -> bool {
        self.background_blocks() >= HOLD_MIN_RUNS * self.max_run_blocks
    }

    /// Dirty buffers past which write-behind starts.
    fn background_blocks(&self) -> usize {
        self.nbuf * DIRTY_BACKGROUND_PERCENT / 100
    }

    /// Dirty buffers past which a writer waits.
    fn limit_blocks(&self) -> usize {
        self.nbuf * DIRTY_LIMIT_PERCENT / 100
    }

    /// Buffers dirty now (pool and pinned).
    pub fn dirty_blocks(&self) -> usize {
        self.dirty
    }

    /// Write-behind, after `block` was written whole. A cache that holds
    /// dirty data ([`Cache::holds_dirty`]) writes nothing while at most
    /// [`DIRTY_BACKGROUND_PERCENT`] of its pool is dirty; past that it
    /// starts the runs that became dirty first, waiting for nothing; past
    /// [`DIRTY_LIMIT_PERCENT`] the writer waits for them. A smaller cache
    /// keeps V1's rule: if `block` ends a run of dirty blocks as long as a
    /// transfer may be (or half the buffers, when there are few), the
    /// run's write starts now.
    pub fn write_behind(&mut self, block: u64) -> Result<(), Errno> {
        if self.holds_dirty() {
            return self.write_back_over_threshold();
        }
        let threshold = self.max_run_blocks.min((self.nbuf / 2).max(1));
        let mut run = 0;
        let mut at = block;
        while run < threshold {
            match self.map.get(&at) {
                Some(&i) if self.bufs[i].state == State::Dirty => run += 1,
                _ => break,
            }
            if at == 0 {
                break;
            }
            at -= 1;
        }
        if run < threshold {
            return Ok(());
        }
        let Some(&i) = self.map.get(&block) else { return Ok(()) };
        if self.write_run(i, true)? {
            self.stats.write_behind_transfers += 1;
        }
        Ok(())
    }

    /// The thresholds' part of write-behind (see [`Cache::write_behind`]).
    fn write_back_over_threshold(&mut self) -> Result<(), Errno> {
        let background = self.background_blocks();
        if self.dirty <= background {
            return Ok(());
        }
        // A pass looks at up to four transfers' worth of the oldest dirty
        // blocks and, for those that wait, at what they wait for (an
        // indirect block: its 256 data blocks). When their waits are in
        // flight it starts nothing, and the next block dirtied would
        // look at the same blocks again: in R2's copy (16 MiB dirty in a
        // cache of 26 MiB, past its background threshold) that cost
        // about 100,000 host instructions per block written while
        // transfers were in flight (`tests/write_path.rs`). Nothing
        // changes for those blocks until a transfer finishes or a block
        // is discarded; the limit below still makes writers wait.
        if self.idle_pass_at != Some(self.finished_transfers) {
            let started = self.stats.write_transfers;
            self.background_passes += 1;
            self.start_oldest(background)?;
            self.idle_pass_at = (self.stats.write_transfers == started).then_some(self.finished_transfers);
        }
        let limit = self.limit_blocks();
        while self.dirty > limit {
            if self.in_flight.is_empty() {
                // Nothing could start without waiting: the oldest dirty
                // block with what it waits for, waited for.
                let Some(block) = self.oldest_dirty() else { break };
                self.write_block_now(block)?;
            } else {
                self.wait_one()?;
            }
            self.start_oldest(background)?;
        }
        Ok(())
    }

    /// The block dirty longest, stale entries dropped on the way.
    fn oldest_dirty(&mut self) -> Option<u64> {
        while let Some(&(seq, block, _)) = self.dirty_queue.front() {
            if is_dirty_entry(&self.bufs, &self.map, seq, block) {
                return Some(block);
            }
            self.dirty_queue.pop_front();
        }
        None
    }

    /// Starts writing the runs that became dirty first, without waiting,
    /// until at most `keep` buffers are dirty or the entries looked at
    /// (a bounded number: a few transfers' worth) are used up. A block
    /// that waits for others starts those of them that can go.
    fn start_oldest(&mut self, keep: usize) -> Result<(), Errno> {
        self.oldest_dirty();
        let budget = 4 * self.max_run_blocks;
        let mut k = 0;
        while self.dirty > keep && k < self.dirty_queue.len() && k < budget {
            let (seq, block, _) = self.dirty_queue[k];
            k += 1;
            if !is_dirty_entry(&self.bufs, &self.map, seq, block) {
                continue;
            }
            self.start_ready(block)?;
        }
        Ok(())
    }

    /// Starts the write of `block`'s run if it waits for nothing pending,
    /// else of the blocks it waits for (and theirs) that can go now; never
    /// waits. Looks at a bounded number of blocks.
    fn start_ready(&mut self, block: u64) -> Result<bool, Errno> {
        let mut stack = vec![block];
        let mut seen = BTreeSet::new();
        let mut started = false;
        while let Some(b) = stack.pop() {
            if !seen.insert(b) || seen.len() > self.max_run_blocks {
                continue;
            }
            let Some(&i) = self.map.get(&b) else { continue };
            if self.bufs[i].state != State::Dirty {
                continue;
            }
            if self.unsatisfied(b).is_none() {
                if self.write_run(i, true)? {
                    self.stats.write_behind_transfers += 1;
                    started = true;
                }
            } else {
                let firsts: Vec<u64> = self.order.waits(b).filter(|&f| self.is_pending(f)).collect();
                stack.extend(firsts);
            }
        }
        Ok(started)
    }

    /// Whether a block has been dirty [`DIRTY_EXPIRE_MS`] at `now_ms` (the
    /// server's clock; it also dates the blocks dirtied from now on) and
    /// the last pass of [`Cache::write_expired`] was
    /// [`WRITEBACK_INTERVAL_MS`] ago or more.
    pub fn has_expired(&mut self, now_ms: u64) -> bool {
        self.now_ms = self.now_ms.max(now_ms);
        if self.now_ms < self.last_writeback_ms.saturating_add(WRITEBACK_INTERVAL_MS) {
            return false;
        }
        self.oldest_dirty();
        self.dirty_queue
            .front()
            .is_some_and(|&(_, _, since)| since.saturating_add(DIRTY_EXPIRE_MS) <= self.now_ms)
    }

    /// Milliseconds from `now_ms` until [`Cache::write_expired`] next has
    /// work: when the oldest dirty block reaches [`DIRTY_EXPIRE_MS`], but
    /// not sooner than [`WRITEBACK_INTERVAL_MS`] after the last pass (a
    /// block whose waits were not on the disk then goes at the next
    /// one); `None` when nothing is dirty. The server's write-back timer
    /// sleeps this long, so an idle volume's oldest block starts on its
    /// way when it expires, not up to an interval later, and nothing wakes
    /// the manager before a block can have expired.
    pub fn next_expiry_ms(&mut self, now_ms: u64) -> Option<u64> {
        self.oldest_dirty()?;
        let since = self.dirty_queue.front()?.2;
        let next_pass = self.last_writeback_ms.saturating_add(WRITEBACK_INTERVAL_MS);
        let due = since.saturating_add(DIRTY_EXPIRE_MS).max(next_pass);
        Some(due.saturating_sub(now_ms.max(self.now_ms)))
    }

    /// Starts writing the blocks dirty for [`DIRTY_EXPIRE_MS`] or more at
    /// `now_ms` (each after what it waits for: a block whose waits are
    /// not on the disk starts those instead, and goes at a later call),
    /// without waiting for anything: as Linux's periodic write-back, it
    /// bounds what a power cut loses without promising anything (no
    /// device flush). Runs at most once per [`WRITEBACK_INTERVAL_MS`]
    /// (the server calls it after a request when [`Cache::has_expired`]);
    /// the cost of a pass is the number of expired blocks. Returns how many
    /// due blocks it looked at.
    pub fn write_expired(&mut self, now_ms: u64) -> Result<usize, Errno> {
        if !self.has_expired(now_ms) {
            return Ok(0);
        }
        self.last_writeback_ms = self.now_ms;
        let mut due = Vec::new();
        for &(seq, block, since) in &self.dirty_queue {
            if since.saturating_add(DIRTY_EXPIRE_MS) > self.now_ms {
                break;
            }
            if is_dirty_entry(&self.bufs, &self.map, seq, block) {
                due.push(block);
            }
        }
        let transfers = self.stats.write_transfers;
        for &block in &due {
            self.start_ready(block)?;
        }
        self.stats.expired_transfers += self.stats.write_transfers - transfers;
        Ok(due.len())
    }

    /// `block` was freed: its contents will never be read again, so a
    /// dirty buffer for it need not be written. Its waits go (its next
    /// contents are a new allocation's, ordered then), and so does what
    /// waited for it: the file system has already cleared every pointer
    /// to it from the present contents of the blocks that held one
    /// (truncate's order: pointers, then bits), so no block's next write
    /// can point at it; any older write that did found it on the disk
    /// first. A buffer in flight is left to finish.
    pub fn discard(&mut self, block: u64) {
        let Some(&i) = self.map.get(&block) else { return };
        if self.bufs[i].state != State::Dirty {
            return;
        }
        self.order.remove(block);
        self.forget(i);
        self.stats.discarded_blocks += 1;
        // What waited for it may go now.
        self.idle_pass_at = None;
    }

    /// Read-ahead: starts reading those of `blocks` that are not cached,
    /// into buffers that are empty or clean, not used since
    /// [`Cache::begin_request`] and not read ahead and unused yet, at most
    /// half the buffers, one transfer per run of
    /// consecutive blocks. Waits for nothing. `is_speculative`: counted as
    /// read-ahead (blocks not yet asked for).
    pub fn prefetch(&mut self, blocks: &[u64], is_speculative: bool) -> Result<(), Errno> {
        self.prefetch_whole(blocks, is_speculative).map(|_| ())
    }

    /// [`Cache::prefetch`], telling whether every block of `blocks` was
    /// cached already (so nothing changed, and [`Cache::cached`] would
    /// count them all): a reader whose window is all in the cache learns
    /// it from this one pass of lookups rather than two more.
    pub fn prefetch_whole(&mut self, blocks: &[u64], is_speculative: bool) -> Result<bool, Errno> {
        let budget = self.nbuf / 2;
        let mut taken = 0;
        let mut run: Vec<usize> = Vec::new();
        let mut is_whole = true;
        for &block in blocks {
            if taken >= budget {
                is_whole = false;
                break;
            }
            if block >= self.device_blocks || self.map.contains_key(&block) {
                // A block past the device is not cached (`cached` agrees).
                is_whole &= block < self.device_blocks;
                self.flush_run(&mut run);
                continue;
            }
            is_whole = false;
            let victim = self.read_ahead_victim(is_speculative);
            let Some(i) = victim else { break };
            if self.bufs[i].state == State::Clean {
                self.map.remove(&self.bufs[i].block);
            }
            // Continue the run only with the next block number.
            if let Some(&last) = run.last()
                && (self.bufs[last].block + 1 != block || run.len() >= self.max_run_blocks)
            {
                self.flush_run(&mut run);
            }
            self.touch(i);
            let buf = &mut self.bufs[i];
            buf.block = block;
            buf.state = State::Reading; // reserved; start_read sets it again
            buf.is_read_ahead = is_speculative;
            self.map.insert(block, i);
            run.push(i);
            taken += 1;
            if is_speculative {
                self.stats.read_ahead_blocks += 1;
            }
        }
        self.flush_run(&mut run);
        Ok(is_whole)
    }

    /// A buffer for one block of read-ahead, or `None`: an empty one, or
    /// the least recently used clean one that is not read ahead and unused
    /// (it is still to come: taking it would read it twice) and that
    /// nothing used since the request before this one began (that read,
    /// the writes after it, this read), and never the last such spare
    /// buffer. With few buffers a program's working set spans
    /// more than one request (B's assembler reads a source and writes its
    /// token file in turns, each record half a block: the source's block,
    /// the token file's block and their indirect blocks are each used
    /// again a request or two later); a block read ahead into one of
    /// those, or into the only buffer left for the program's next block,
    /// evicted a block in use or was itself evicted before it was read,
    /// and either was read twice (benchmark B in `nbuf_curve.rs`'s model,
    /// transfers a job for nbuf 2 / 3 / 4 / 6 / 12: 1586 / 1321 / 1154 /
    /// 761 / 415 sparing only the request's own buffers; 1457 / 1195 /
    /// 984 / 678 / 386 with both rules). In a large pool the least
    /// recently used buffers are long idle and both rules change nothing.
    ///
    /// Not `is_speculative` (a request's own blocks, read as one transfer
    /// before it copies them): only the request's own buffers are spared,
    /// and the last spare one may go.
    fn read_ahead_victim(&mut self, is_speculative: bool) -> Option<usize> {
        let newest = if is_speculative { self.prev_request_clock } else { self.request_clock };
        let mut spare = None;
        let mut at = self.lru.oldest();
        // The list is in order of use: stop at the last two requests'.
        while let Some(i) = at {
            let b = &self.bufs[i];
            if b.last_use > newest {
                break;
            }
            if b.state == State::Clean && !b.is_read_ahead {
                spare = Some(i);
                break;
            }
            at = self.lru.newer(i);
        }
        // An empty buffer first (no block loses its place), if another
        // spare one stays.
        if self.free.len() >= 2 || (!self.free.is_empty() && (spare.is_some() || !is_speculative)) {
            return self.free.pop();
        }
        let first = spare?;
        if !is_speculative {
            return Some(first);
        }
        if !self.free.is_empty() {
            return self.free.pop();
        }
        // A second spare buffer, newer than the first, must stay.
        let mut at = self.lru.newer(first);
        while let Some(i) = at {
            let b = &self.bufs[i];
            if b.last_use > newest {
                return None;
            }
            if b.state == State::Clean && !b.is_read_ahead {
                return Some(first);
            }
            at = self.lru.newer(i);
        }
        None
    }

    /// A request of the file system starts: read-ahead until the next one
    /// leaves the buffers it uses alone (the block being read, the
    /// indirect block mapping it), and those of the request before
    /// ([`Cache::read_ahead_victim`]), so that with few buffers read-ahead
    /// does not evict what the program needs next.
    pub fn begin_request(&mut self) {
        self.prev_request_clock = self.request_clock;
        self.request_clock = self.clock;
    }

    /// How many of `blocks` are in a buffer (or on their way into one).
    pub fn cached(&self, blocks: &[u64]) -> usize {
        blocks.iter().filter(|b| self.map.contains_key(b)).count()
    }

    fn flush_run(&mut self, run: &mut Vec<usize>) {
        if !run.is_empty() {
            self.start_read(run);
            run.clear();
        }
    }

    /// Writes every dirty buffer (in the order the file system asked for)
    /// and waits until every transfer finished, without a device flush.
    pub fn write_all(&mut self) -> Result<(), Errno> {
        let dirty: Vec<u64> = self.bufs.iter().filter(|b| b.state == State::Dirty).map(|b| b.block).collect();
        self.write_together(dirty)?;
        while !self.in_flight.is_empty() {
            self.wait_one()?;
        }
        Ok(())
    }

    /// Writes those of `blocks` that are dirty (each after the blocks it
    /// waits for, [`Cache::order`]) and waits until they are on the disk,
    /// without a device flush: `fsync` of one file.
    pub fn write_blocks(&mut self, blocks: &[u64]) -> Result<(), Errno> {
        self.write_together(blocks.to_vec())
    }

    /// Writes `targets` and the pending blocks they wait for, as many at
    /// once as the order allows: every block whose waits are on the disk
    /// is submitted (one transfer per run) before the cache waits for any,
    /// and each completion lets the blocks waiting for it go. So the
    /// device sees a chain's levels, not its blocks, one after another: a
    /// `creat` + `fsync` is two round trips (the inode bitmap and the
    /// inode's block together, then the directory block), not one per
    /// block (`fsync_sends_what_it_can_together` counts them).
    fn write_together(&mut self, mut targets: Vec<u64>) -> Result<(), Errno> {
        // Blocks added because a target waits for them, and blocks whose
        // waits have joined the set: once is enough (an indirect block
        // waits for 256 data blocks; looking through them after every
        // completion cost more than the writes, host time). The first
        // pass starts what is ready and adds nothing; from the second on,
        // a target still dirty adds what it waits for that is still
        // dirty (blocks on their way are waited for at the end anyway).
        // So with 8 MiB held dirty, the data blocks an indirect block
        // waits for, started in the first pass, are not added again: B-tree
        // insertions per data block were a fifth of `fsync`'s instructions.
        let mut seen: BTreeSet<u64> = BTreeSet::new();
        let mut expanded: BTreeSet<u64> = BTreeSet::new();
        let mut is_expanding = false;
        loop {
            let mut k = 0;
            let mut is_dirty_left = false;
            while k < targets.len() {
                let block = targets[k];
                k += 1;
                let Some(&i) = self.map.get(&block) else { continue };
                if self.bufs[i].state == State::Dirty {
                    // What it waits for joins the set, to go first.
                    if is_expanding && self.order.has_waits(block) && expanded.insert(block) {
                        let firsts: Vec<u64> = self.order.waits(block).collect();
                        for first in firsts {
                            let is_dirty =
                                self.map.get(&first).is_some_and(|&j| self.bufs[j].state == State::Dirty);
                            if is_dirty && seen.insert(first) {
                                targets.push(first);
                            }
                        }
                    }
                    self.write_run_of(i, true, self.max_out_blocks)?;
                    is_dirty_left |= self.bufs[i].state == State::Dirty;
                }
            }
            // Only the blocks not yet started are looked at again: those
            // in flight are waited for at the end, all at once. (Looking
            // over the whole set after each completion cost, with 8 MiB
            // held dirty and written at `fsync`, 170 completions times
            // 8200 blocks.)
            targets.retain(|b| self.map.get(b).is_some_and(|&i| self.bufs[i].state == State::Dirty));
            if !is_expanding && !targets.is_empty() {
                is_expanding = true;
                continue;
            }
            if targets.is_empty() || !is_dirty_left {
                while !self.in_flight.is_empty() {
                    self.wait_one()?;
                }
                if targets.is_empty() {
                    return Ok(());
                }
                continue;
            }
            if self.in_flight.is_empty() {
                // Nothing could start and nothing is on its way: never
                // with an order free of cycles, but rather than spin, the
                // one-by-one path (which breaks what it finds).
                for &block in &targets {
                    self.write_block_now(block)?;
                }
                continue;
            }
            self.wait_one()?;
        }
    }

    /// A device flush (every completed write durable), unless no write
    /// completed since the last one: an `fsync` with nothing to write
    /// costs no device request. `EIO` if any write failed since the last
    /// sync or flush.
    pub fn flush(&mut self) -> Result<(), Errno> {
        if core::mem::take(&mut self.has_unflushed_writes) {
            self.stats.flushes += 1;
            if let Err(e) = self.dev.flush() {
                self.has_unflushed_writes = true;
                return Err(e);
            }
            self.needs_barrier.clear();
            self.unflushed.clear();
        }
        if core::mem::take(&mut self.has_write_error) { Err(EIO) } else { Ok(()) }
    }

    /// `sync`: everything written and flushed at the device. `EIO` if any
    /// write failed since the last sync.
    pub fn sync(&mut self) -> Result<(), Errno> {
        self.write_all()?;
        self.flush()
    }

    /// Forgets every clean buffer (a cold cache, for measurements).
    pub fn drop_clean(&mut self) -> Result<(), Errno> {
        while !self.in_flight.is_empty() {
            self.wait_one()?;
        }
        for i in 0..self.bufs.len() {
            if self.bufs[i].state == State::Clean {
                self.forget(i);
            }
        }
        Ok(())
    }
}

/// Whether a `dirty_queue` entry still stands for a dirty buffer.
fn is_dirty_entry(bufs: &[Buf], map: &BlockIndex, seq: u64, block: u64) -> bool {
    map.get(&block).is_some_and(|&i| bufs[i].state == State::Dirty && bufs[i].dirty_seq == seq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{CompletionOrder, MemDisk};

    const BS: usize = 1024;

    fn disk(blocks: usize) -> MemDisk {
        let mut bytes = vec![0u8; blocks * BS];
        for (b, chunk) in bytes.chunks_mut(BS).enumerate() {
            chunk[0] = b as u8;
        }
        MemDisk::new(bytes)
    }

    #[test]
    fn hits_misses_and_lru() {
        let mut c = Cache::new(disk(16), BS, 2).unwrap();
        assert_eq!(c.read(3, |b| b[0]).unwrap(), 3);
        assert_eq!(c.read(4, |b| b[0]).unwrap(), 4);
        assert_eq!(c.read(3, |b| b[0]).unwrap(), 3);
        // 5 evicts 4, the least recently used.
        c.read(5, |_| ()).unwrap();
        c.read(3, |_| ()).unwrap();
        let s = c.stats();
        assert_eq!((s.hits, s.misses), (2, 3));
        c.read(4, |_| ()).unwrap();
        assert_eq!(c.stats().misses, 4);
    }

    #[test]
    fn read_cached_gives_a_run_at_once_or_nothing() {
        let mut c = Cache::new(disk(64), BS, 16).unwrap();
        c.read(0, |_| ()).unwrap();
        // Read ahead and still in flight: waited for, then given whole.
        c.prefetch(&[1, 2, 3], true).unwrap();
        let firsts = c.read_cached(&[1, 2, 3, 0], |d| d.iter().map(|b| b[0]).collect::<Vec<_>>()).unwrap();
        assert_eq!(firsts, Some(vec![1, 2, 3, 0]));
        let s = c.stats();
        assert_eq!((s.hits, s.read_ahead_hits, s.misses), (4, 3, 1));
        // One block not cached: nothing given, nothing counted, nothing read.
        assert_eq!(c.read_cached(&[1, 9], |_| ()).unwrap(), None);
        assert_eq!(c.stats(), s);
        // A block past the device is an error, as for `read`.
        assert_eq!(c.read_cached(&[1, 64], |_| ()), Err(EIO));
    }

    #[test]
    fn prefetch_whole_says_whether_everything_was_cached() {
        let mut c = Cache::new(disk(64), BS, 16).unwrap();
        c.read(1, |_| ()).unwrap();
        c.read(2, |_| ()).unwrap();
        let s = c.stats();
        assert_eq!(c.prefetch_whole(&[1, 2], true), Ok(true));
        assert_eq!(c.stats(), s, "a prefetch of cached blocks changes nothing");
        assert_eq!(c.prefetch_whole(&[], true), Ok(true));
        // A block past the device is never cached; a missing one is read.
        assert_eq!(c.prefetch_whole(&[1, 64], true), Ok(false));
        assert_eq!(c.prefetch_whole(&[1, 3], true), Ok(false));
        assert_eq!(c.cached(&[1, 3]), 2);
        assert_eq!(c.prefetch_whole(&[1, 3], true), Ok(true));
    }

    #[test]
    fn read_ready_gives_an_idle_run_or_nothing_and_never_waits() {
        let mut c = Cache::new(disk(64), BS, 16).unwrap();
        c.read(0, |_| ()).unwrap();
        c.read(5, |_| ()).unwrap();
        // In flight: not ready, and nothing waited for, counted or changed.
        c.prefetch(&[1, 2], true).unwrap();
        let s = c.stats();
        assert_eq!(c.read_ready(&[0, 1], |_| ()).unwrap(), None);
        assert_eq!(c.stats(), s);
        // Not cached at all: the same.
        assert_eq!(c.read_ready(&[0, 9], |_| ()).unwrap(), None);
        assert_eq!(c.stats(), s);
        // Cached and idle: given whole, each a hit.
        let firsts = c.read_ready(&[5, 0], |d| d.iter().map(|b| b[0]).collect::<Vec<_>>()).unwrap();
        assert_eq!(firsts, Some(vec![5, 0]));
        assert_eq!(c.stats().hits, s.hits + 2);
        // A block past the device is an error, as for `read`; more blocks
        // than one lease call moves are not taken.
        assert_eq!(c.read_ready(&[0, 64], |_| ()), Err(EIO));
        assert_eq!(c.read_ready(&[0; RUN_ON_STACK + 1], |_| ()).unwrap(), None);
        // A run longer than the stack's still goes through read_cached.
        let long: Vec<u64> = vec![0; RUN_ON_STACK + 1];
        assert_eq!(c.read_cached(&long, |d| d.len()).unwrap(), Some(RUN_ON_STACK + 1));
    }

    #[test]
    fn one_buffer_still_works() {
        let mut c = Cache::new(disk(16), BS, 1).unwrap();
        for round in 0..3u8 {
            for b in 0..16u64 {
                c.modify(b, |d| d[1] = round + b as u8).unwrap();
            }
        }
        c.prefetch(&[1, 2, 3], true).unwrap();
        for b in 0..16u64 {
            assert_eq!(c.read(b, |d| (d[0], d[1])).unwrap(), (b as u8, 2 + b as u8));
        }
        let disk = c.into_device().unwrap();
        assert_eq!(disk.bytes()[5 * BS + 1], 7);
    }

    #[test]
    fn a_buffer_in_flight_is_not_reused_until_it_completes() {
        let mut c = Cache::new(disk(8), BS, 1).unwrap();
        c.overwrite(2, |d| d.fill(9)).unwrap();
        // The one buffer is dirty: reading 3 must write 2 first and wait.
        c.read(3, |_| ()).unwrap();
        assert_eq!(c.device().bytes()[2 * BS], 9);
        assert!(c.stats().waits >= 2);
    }

    #[test]
    fn write_behind_sends_runs_of_consecutive_blocks() {
        let mut c = Cache::new(disk(200), BS, 128).unwrap();
        let run = MAX_TRANSFER_PAGES * abi::layout::PAGE_SIZE as usize / BS;
        for b in 0..run as u64 {
            c.overwrite(b, |d| d.fill(1)).unwrap();
            c.write_behind(b).unwrap();
        }
        let s = c.stats();
        assert_eq!((s.write_transfers, s.write_behind_transfers, s.blocks_written), (1, 1, run as u64));
        c.sync().unwrap();
        assert_eq!(c.stats().write_transfers, 1);
    }

    /// A write-out someone waits for (`fsync`, `sync`) goes in transfers
    /// of up to [`MAX_WRITE_OUT_PAGES`], four times write-behind's: 8 MiB
    /// held dirty and `fsync`'d took 170 transfers, each a round through
    /// the manager, a worker, the driver and the device.
    #[test]
    fn a_write_out_goes_in_transfers_of_up_to_its_own_size() {
        let mut c = Cache::new(disk(2048), BS, 2048).unwrap();
        let out = MAX_WRITE_OUT_PAGES * abi::layout::PAGE_SIZE as usize / BS;
        let run = MAX_TRANSFER_PAGES * abi::layout::PAGE_SIZE as usize / BS;
        assert!(out > run);
        let blocks: Vec<u64> = (0..2 * out as u64 + 1).collect();
        for &b in &blocks {
            c.overwrite(b, |d| d.fill(3)).unwrap();
            c.write_behind(b).unwrap();
        }
        assert_eq!(c.stats().write_transfers, 0, "held dirty");
        c.write_blocks(&blocks).unwrap();
        let s = c.stats();
        assert_eq!((s.write_transfers, s.blocks_written), (3, blocks.len() as u64));
        assert_eq!(c.device().max_in_flight, 3, "submitted together");
        // Write-behind's runs stay Ridge's sixteen pages.
        let more: Vec<u64> = (1000..1000 + 2 * run as u64).collect();
        for &b in &more {
            c.overwrite(b, |d| d.fill(4)).unwrap();
        }
        let i = *c.map.get(&1000).unwrap();
        assert!(c.write_run(i, true).unwrap());
        assert_eq!(c.stats().blocks_written, blocks.len() as u64 + run as u64);
        c.sync().unwrap();
    }

    #[test]
    fn read_ahead_fills_buffers_in_one_transfer_and_counts_its_hits() {
        let mut c = Cache::new(disk(64), BS, 16).unwrap();
        c.read(0, |_| ()).unwrap();
        c.prefetch(&[1, 2, 3, 4, 10, 11], true).unwrap();
        assert_eq!(c.stats().read_transfers, 3);
        for b in [1, 2, 3, 4, 10, 11] {
            assert_eq!(c.read(b, |d| d[0]).unwrap(), b as u8);
        }
        let s = c.stats();
        assert_eq!((s.read_ahead_hits, s.read_ahead_blocks, s.misses), (6, 6, 1));
    }

    #[test]
    fn order_holds_even_when_the_device_reorders() {
        let mut c = Cache::new(disk(32).with_order(CompletionOrder::Lifo).recording(), BS, 8).unwrap();
        // 20 before 5 before 9: written in that order although 5 < 9 < 20.
        c.modify(20, |d| d[1] = 1).unwrap();
        c.order(20, 5).unwrap();
        c.modify(5, |d| d[1] = 1).unwrap();
        c.order(5, 9).unwrap();
        c.modify(9, |d| d[1] = 1).unwrap();
        c.sync().unwrap();
        let log: Vec<u64> = c.device().log.as_ref().unwrap().iter().map(|w| w.first_sector / 2).collect();
        assert_eq!(log, vec![20, 5, 9]);
    }

    #[test]
    fn a_volatile_write_cache_gets_a_flush_between_order_levels_and_only_there() {
        // 20 before 5 before 9, plus 3 and 4 waiting for nothing; then 7
        // ordered after 20 once 20 is written but not yet flushed.
        let run = |volatile: bool| {
            let mut d = disk(32).with_order(CompletionOrder::Lifo).recording();
            if volatile {
                d = d.with_volatile_cache();
            }
            let mut c = Cache::new(d, BS, 8).unwrap();
            for b in [20, 3, 4] {
                c.modify(b, |d| d[1] = 1).unwrap();
            }
            c.order(20, 5).unwrap();
            c.modify(5, |d| d[1] = 1).unwrap();
            c.order(5, 9).unwrap();
            c.modify(9, |d| d[1] = 1).unwrap();
            c.write_blocks(&[20]).unwrap();
            c.order(20, 7).unwrap();
            c.modify(7, |d| d[1] = 1).unwrap();
            c.sync().unwrap();
            let stats = c.stats();
            let disk = c.into_device().unwrap();
            let log: Vec<u64> = disk.log.as_ref().unwrap().iter().map(|w| w.first_sector / 2).collect();
            (log, disk.flush_marks.clone(), stats.barrier_flushes, disk.flushes)
        };
        let (log, marks, barriers, flushes) = run(true);
        // Each block that waited for another is written after a flush that
        // came after that one's write.
        let at = |b: u64| log.iter().position(|&x| x == b).unwrap();
        let flushed_between = |a: u64, b: u64| marks.iter().any(|&m| at(a) < m && m <= at(b));
        assert!(
            flushed_between(20, 5) && flushed_between(5, 9) && flushed_between(20, 7),
            "{log:?} {marks:?}"
        );
        // 20, then 5 and 7 (with 3 and 4) in one level, then 9: two
        // flushes between levels, and sync's own.
        assert_eq!((barriers, flushes), (2, 3), "{log:?} {marks:?}");
        let (_, marks, barriers, flushes) = run(false);
        assert_eq!((barriers, flushes, marks.len()), (0, 1, 1), "only sync's flush");
    }

    #[test]
    fn a_cycle_is_broken_by_writing_the_later_block_first() {
        let mut c = Cache::new(disk(32).recording(), BS, 8).unwrap();
        c.modify(1, |d| d[1] = 1).unwrap();
        c.order(1, 2).unwrap();
        c.modify(2, |d| d[1] = 1).unwrap();
        // 2 waits for 1; now 1's next contents must wait for 2: a cycle.
        c.order(2, 1).unwrap();
        // Broken by writing 1's present contents at once.
        assert_eq!(c.device().log.as_ref().unwrap().len(), 1);
        c.modify(1, |d| d[1] = 2).unwrap();
        c.sync().unwrap();
        let log: Vec<(u64, u8)> =
            c.device().log.as_ref().unwrap().iter().map(|w| (w.first_sector / 2, w.bytes[1])).collect();
        assert_eq!(log, vec![(1, 1), (2, 1), (1, 2)]);
    }

    #[test]
    fn pinned_blocks_live_outside_the_pool_and_are_never_evicted() {
        let mut c = Cache::new(disk(64).recording(), BS, 1).unwrap();
        c.pin(2);
        c.modify(2, |d| d[1] = 7).unwrap();
        for b in 10..20u64 {
            c.read(b, |_| ()).unwrap();
        }
        assert_eq!(c.nbuf(), 1, "the pinned buffer is not counted");
        let misses = c.stats().misses;
        assert_eq!(c.read(2, |d| d[1]).unwrap(), 7);
        assert_eq!(c.stats().misses, misses, "block 2 stayed");
        assert!(c.device().log.as_ref().unwrap().is_empty(), "and was not written to make room");
        c.sync().unwrap();
        assert_eq!(c.device().bytes()[2 * BS + 1], 7, "written at sync");
    }

    #[test]
    fn read_ahead_spares_the_last_two_requests_buffers_unused_read_ahead_and_one_spare_buffer() {
        let mut c = Cache::new(disk(64), BS, 6).unwrap();
        // Three requests: the first reads 1 and 2 (say, a source's block
        // and its indirect block), the second 3 (another file's block),
        // the third 4 and 5; one buffer stays empty.
        c.begin_request();
        c.read(1, |_| ()).unwrap();
        c.read(2, |_| ()).unwrap();
        c.begin_request();
        c.read(3, |_| ()).unwrap();
        c.begin_request();
        c.read(4, |_| ()).unwrap();
        c.read(5, |_| ()).unwrap();
        // A budget of three; spare are the empty buffer and the first
        // request's two, and one of them stays: two blocks read ahead.
        c.prefetch(&[10, 11, 12], true).unwrap();
        assert_eq!(c.cached(&[10, 11, 12]), 2);
        assert_eq!(c.cached(&[3, 4, 5]), 3, "the last two requests' blocks stay");
        assert_eq!(c.cached(&[1, 2]), 1, "one spare buffer stays");
        // A later request's read-ahead does not take 10 and 11, read
        // ahead and not used yet, nor 4 and 5, used again by this
        // request: of 2 and 3, both idle since the request before, it
        // takes one, and not the last.
        c.write_all().unwrap(); // the read-ahead has arrived
        c.begin_request();
        c.read(4, |_| ()).unwrap();
        c.read(5, |_| ()).unwrap();
        let reads = c.stats().read_transfers;
        c.prefetch(&[20, 21], true).unwrap();
        assert_eq!(c.stats().read_transfers, reads + 1);
        assert_eq!(c.cached(&[20, 21]), 1);
        assert_eq!(c.cached(&[10, 11, 4, 5]), 4);
        // A request's own blocks (not speculative) may take the last one.
        c.write_all().unwrap();
        c.prefetch(&[30], false).unwrap();
        assert_eq!(c.cached(&[30]), 1);
        assert_eq!(c.read(10, |d| d[0]).unwrap(), 10);
        assert_eq!(c.read(30, |d| d[0]).unwrap(), 30);
    }

    /// A pool just large enough to hold dirty data: its background
    /// threshold is `HOLD_MIN_RUNS` transfers.
    fn holding_cache(blocks: usize) -> Cache<MemDisk> {
        let run = MAX_TRANSFER_PAGES * abi::layout::PAGE_SIZE as usize / BS;
        let nbuf = HOLD_MIN_RUNS * run * 100 / DIRTY_BACKGROUND_PERCENT;
        let c = Cache::new(disk(blocks).recording(), BS, nbuf).unwrap();
        assert!(c.holds_dirty());
        c
    }

    /// Lets every transfer in flight finish (a server's completions).
    fn settle(c: &mut Cache<MemDisk>) {
        while !c.in_flight.is_empty() {
            c.wait_one().unwrap();
        }
    }

    #[test]
    fn a_large_cache_holds_dirty_data_until_its_background_threshold() {
        let mut c = holding_cache(4096);
        let background = c.background_blocks() as u64;
        for b in 0..background {
            c.overwrite(b, |d| d.fill(1)).unwrap();
            c.write_behind(b).unwrap();
        }
        assert_eq!(c.stats().write_transfers, 0, "nothing written while under the threshold");
        assert_eq!(c.dirty_blocks() as u64, background);
        // One more: the oldest runs start, nobody waits for them.
        c.overwrite(background, |d| d.fill(1)).unwrap();
        c.write_behind(background).unwrap();
        let s = c.stats();
        assert!(s.write_behind_transfers >= 1 && s.waits == 0, "{s:?}");
        assert!(c.dirty_blocks() as u64 <= background);
        // The oldest went first: block 0 is on its way, the newest is not.
        assert!(!matches!(c.bufs[c.map.get(&0).copied().unwrap()].state, State::Dirty));
        assert_eq!(c.bufs[c.map.get(&background).copied().unwrap()].state, State::Dirty);
    }

    /// Past the background threshold, with every dirty block waiting for
    /// a block whose write is in flight, a pass can start nothing: it is
    /// made once, not at every block dirtied after it, until a transfer
    /// finishes; then the waiting blocks go.
    #[test]
    fn a_write_behind_pass_that_can_start_nothing_is_not_repeated_until_a_transfer_finishes() {
        let mut c = holding_cache(4096);
        let background = c.background_blocks() as u64;
        let w = 4000;
        c.overwrite(w, |d| d.fill(7)).unwrap();
        let i = c.map.get(&w).copied().unwrap();
        assert!(c.write_run(i, false).unwrap());
        for b in 0..background + 20 {
            c.order(w, b).unwrap();
            c.overwrite(b, |d| d.fill(1)).unwrap();
            c.write_behind(b).unwrap();
        }
        assert!(c.dirty_blocks() as u64 > background);
        assert!(c.dirty_blocks() <= c.limit_blocks());
        assert_eq!(c.background_passes, 1, "one pass, then none while nothing finished");
        assert_eq!(c.stats().write_transfers, 1, "only the first block's write");
        settle(&mut c);
        c.overwrite(background + 20, |d| d.fill(1)).unwrap();
        c.write_behind(background + 20).unwrap();
        assert_eq!(c.background_passes, 2);
        assert!(c.stats().write_transfers > 1, "the blocks that waited went");
        assert!(c.dirty_blocks() as u64 <= background);
    }

    #[test]
    fn a_cache_full_of_dirty_blocks_makes_writers_wait_never_fail() {
        let mut c = holding_cache(8192);
        let nbuf = c.nbuf() as u64;
        let limit = c.limit_blocks();
        // Ten times the cache, written whole, with one old block modified
        // again and again (never clean for long).
        for b in 0..10 * nbuf {
            c.overwrite(b + 1, |d| d[1..9].copy_from_slice(&b.to_le_bytes())).unwrap();
            c.write_behind(b + 1).unwrap();
            c.modify(0, |d| d[1] = b as u8).unwrap();
            assert!(c.dirty_blocks() <= limit + 1, "{} dirty at block {b}", c.dirty_blocks());
        }
        let disk = c.into_device().unwrap();
        for b in 0..10 * nbuf {
            let at = (b as usize + 1) * BS;
            assert_eq!(disk.bytes()[at + 1..at + 9], b.to_le_bytes(), "block {}", b + 1);
        }
        assert_eq!(disk.bytes()[1], (10 * nbuf - 1) as u8);
    }

    #[test]
    fn blocks_dirty_too_long_are_written_in_order_when_they_expire() {
        let mut c = holding_cache(64);
        assert!(!c.has_expired(1000));
        c.modify(20, |d| d[1] = 1).unwrap();
        c.order(20, 5).unwrap();
        c.modify(5, |d| d[1] = 1).unwrap();
        assert!(!c.has_expired(3000)); // a later request: 9 is dated 3000
        c.modify(9, |d| d[1] = 1).unwrap();
        assert!(!c.has_expired(1000 + DIRTY_EXPIRE_MS - 1));
        assert_eq!(c.write_expired(1000 + DIRTY_EXPIRE_MS - 1).unwrap(), 0);
        assert!(c.device().log.as_ref().unwrap().is_empty());
        // Due: 20 and 5. The first call starts 20 only (5 waits for it)
        // and waits for nothing; the next, once 20 is on the disk, 5.
        assert!(c.has_expired(1000 + DIRTY_EXPIRE_MS));
        let waits = c.stats().waits; // the reads of `modify`
        let t = 1000 + DIRTY_EXPIRE_MS;
        assert_eq!(c.write_expired(t).unwrap(), 2);
        assert_eq!(c.stats().waits, waits);
        assert_eq!(c.stats().write_transfers, 1);
        settle(&mut c);
        // Not again before the interval.
        assert_eq!(c.write_expired(t + WRITEBACK_INTERVAL_MS - 1).unwrap(), 0);
        assert_eq!(c.write_expired(t + WRITEBACK_INTERVAL_MS).unwrap(), 1);
        settle(&mut c);
        let log: Vec<u64> = c.device().log.as_ref().unwrap().iter().map(|w| w.first_sector / 2).collect();
        assert_eq!(log, vec![20, 5], "in the declared order; 9 is younger");
        assert_eq!(c.stats().expired_transfers, 2);
        assert!(!c.has_expired(3000 + DIRTY_EXPIRE_MS - 1));
        assert_eq!(c.write_expired(3000 + DIRTY_EXPIRE_MS).unwrap(), 1);
        settle(&mut c);
        assert_eq!(c.dirty_blocks(), 0);
    }

    /// The write-back timer's deadline follows the oldest dirty block:
    /// none while clean, the block's expiry while it is young, a pass's
    /// interval once a pass has run (and left what could not go yet).
    #[test]
    fn the_next_expiry_follows_the_oldest_dirty_block() {
        let mut c = holding_cache(400);
        assert_eq!(c.next_expiry_ms(0), None, "clean");
        c.has_expired(10_000);
        c.overwrite(7, |d| d.fill(1)).unwrap();
        c.write_behind(7).unwrap();
        assert_eq!(c.next_expiry_ms(10_000), Some(DIRTY_EXPIRE_MS));
        assert_eq!(c.next_expiry_ms(12_000), Some(DIRTY_EXPIRE_MS - 2000));
        c.has_expired(13_000);
        c.overwrite(20, |d| d.fill(1)).unwrap();
        assert_eq!(c.next_expiry_ms(13_000), Some(DIRTY_EXPIRE_MS - 3000), "the oldest counts");
        assert_eq!(c.write_expired(15_000).unwrap(), 1);
        // Block 20 (dirty since 13 s) expires at 18 s; 7 went.
        assert_eq!(c.next_expiry_ms(15_000), Some(3000));
        settle(&mut c);
        assert_eq!(c.write_expired(18_000).unwrap(), 1);
        settle(&mut c);
        assert_eq!(c.next_expiry_ms(18_000), None);
    }

    #[test]
    fn a_dirty_block_freed_is_never_written_and_releases_its_waiters() {
        let mut c = holding_cache(64);
        // 7 (a data block) before 3 (the block pointing at it).
        c.overwrite(7, |d| d[1] = 1).unwrap();
        c.order(7, 3).unwrap();
        c.modify(3, |d| d[1] = 1).unwrap();
        // The pointer is cleared, then 7 freed: 3 need not wait.
        c.modify(3, |d| d[1] = 0).unwrap();
        c.discard(7);
        assert_eq!(c.stats().discarded_blocks, 1);
        assert_eq!(c.dirty_blocks(), 1);
        c.write_block_now(3).unwrap();
        c.sync().unwrap();
        let log: Vec<u64> = c.device().log.as_ref().unwrap().iter().map(|w| w.first_sector / 2).collect();
        assert_eq!(log, vec![3]);
        assert_eq!(c.device().bytes()[7 * BS + 1], 0, "7's freed contents never reached the disk");
        // A clean block is left alone.
        c.read(7, |_| ()).unwrap();
        c.discard(7);
        assert_eq!(c.stats().discarded_blocks, 1);
    }

    #[test]
    fn the_common_edges_of_a_large_write_cost_no_walk() {
        // 8 MiB of 1 KiB blocks held dirty: each data block before its
        // indirect block, the bitmap before each indirect block, each
        // indirect block before the inode's block (as `fs::bmap` orders
        // them). The checks visit two blocks per indirect block and none
        // per data block, however many are dirty.
        let mut c = Cache::new(disk(10_000), BS, 32_768).unwrap();
        let (bitmap, inode_block) = (1u64, 2u64);
        c.modify(bitmap, |d| d[1] = 1).unwrap();
        for ind in 0..32u64 {
            let h = 100 + ind * 257;
            c.overwrite(h, |d| d.fill(0)).unwrap();
            for d in 1..=256u64 {
                c.overwrite(h + d, |b| b[1] = 1).unwrap();
                c.write_behind(h + d).unwrap();
                c.order(bitmap, h).unwrap();
                c.order(h + d, h).unwrap();
                c.modify(h, |b| b[1] = 1).unwrap();
            }
            c.order(h, inode_block).unwrap();
            c.modify(inode_block, |b| b[1] = 1).unwrap();
        }
        let s = c.stats();
        assert_eq!(s.write_transfers, 0, "all held: {s:?}");
        assert!(s.order_visits <= 2 * 32, "{s:?}");
        c.sync().unwrap();
        c.order.check().unwrap();
        assert_eq!(c.order.nodes(), 0);
    }

    #[test]
    fn device_errors_are_eio_and_never_panic() {
        let mut c = Cache::new(disk(4), BS, 2).unwrap();
        assert_eq!(c.read(4, |_| ()), Err(EIO));
        let mut failing = disk(4);
        failing.fail_writes_after = Some(0);
        let mut c = Cache::new(failing, BS, 1).unwrap();
        c.modify(1, |d| d[0] = 1).unwrap();
        assert_eq!(c.sync(), Err(EIO));
        assert_eq!(c.sync(), Ok(()), "reported once");
        assert!(Cache::new(disk(4), 1000, 1).is_err());
        assert!(Cache::new(disk(4), BS, 0).is_err());
    }
}
