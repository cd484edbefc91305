//! An ext2 file system on a [`BlockDevice`] through the buffer cache:
//! mount (with every check), inodes, and the operations the directory,
//! volume and file-data managers will serve.
//!
//! What it is not: a permission checker (the monitor checks modes and
//! owners, Ridge §3, as for the memory file system) or a server; it sends
//! no message and reads no clock ([`Fs::set_time`]).
//!
//! # Layers (each uses those below it)
//! - `mod.rs` (this file): mounting and its checks, inode read/write, the
//!   counts in the superblock and group descriptors.
//! - `alloc`: block and inode bitmaps (the volume manager's part),
//!   contiguous allocation from a goal.
//! - `bmap`: a file's block map (direct, single, double and triple
//!   indirect), growing it and cutting it.
//! - `dir`: directory blocks: finding, adding and removing entries.
//! - `ops`: the public operations (lookup, create, unlink, rename, mkdir,
//!   rmdir, link, truncate, read, write, stat, chmod, chown, readdir).
//!
//! # Invariants
//! - Every structure read from the disk is checked before use; a bad one
//!   is `EIO` for the operation that met it (and [`Fs::last_damage`]
//!   says what), never a panic. Operations check what they will touch
//!   before they change anything, so a damaged object is not written to.
//! - Mounting a volume read-only never writes, nor does a refused mount.
//!   A read-write mount writes one block, the superblock, to mark the
//!   volume not clean (`s_state`) before any change reaches the disk
//!   (after recounting the free counts, if it was not clean: `state.rs`);
//!   [`Fs::unmount`] marks it clean again.
//! - Changes go to the disk in an order that keeps the file system
//!   consistent at every instant ([`crate::cache::Cache::order`]; the rules
//!   are in `docs/filesystem.md` and at each operation): a block's bitmap
//!   bit before any pointer to it, a block's contents before the pointer,
//!   an inode before the entry naming it, and the reverse on removal.
//! - The free counts of the superblock and group descriptors change with
//!   every bit of the bitmaps.

mod alloc;
mod bmap;
mod dir;
mod journal;
mod ops;
mod state;

pub use dir::DirEntry;
pub use journal::ReplayReport;
pub use ops::{Attr, FsStats, WRITE_SEGMENTS};

use crate::cache::{Cache, CacheStats};
use crate::device::{BlockDevice, Direction, SECTOR_BYTES, Transfer};
use crate::layout::{
    self, GROUP_DESC_BYTES, GroupDesc, Inode, ROOT_INO, SUPERBLOCK_BYTES, SUPERBLOCK_OFFSET, Superblock,
    feature, ftype, le16, le32, put16, put32,
};
use ::alloc::collections::{BTreeMap, BTreeSet};
use ::alloc::format;
use ::alloc::string::String;
use ::alloc::vec;
use ::alloc::vec::Vec;
use protocols::unix::Errno;
use protocols::unix::errno::{EINVAL, EIO, EROFS};

/// Most bytes of metadata kept pinned outside the `nbuf` pool: the
/// superblock, the group descriptors and (as far as this goes) the
/// bitmaps, V1's in-core superblock and free map. 1 MiB holds every bitmap
/// of a volume of 1 KiB blocks up to 4 GiB, of 4 KiB blocks up to 64 GiB.
pub const PINNED_METADATA_BYTES: u64 = 1 << 20;

/// Most inodes whose new directory entries `fsync` keeps track of between
/// two `sync`s (a bound on memory; past it `fsync` is a whole `sync`).
pub const MAX_TRACKED_ENTRIES: usize = 4096;

/// How to mount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MountOptions {
    /// Block buffers in the cache (at least 1).
    pub nbuf: usize,
    /// Refuse every change (`EROFS`).
    pub read_only: bool,
    /// Ridge's rule to the letter: write every metadata change to the
    /// disk at the end of the operation that made it (§9, "flush their
    /// data spaces to disk at the end of each transaction"). Without it
    /// metadata is written in order but later (write-behind, `sync`).
    pub sync_metadata: bool,
    /// Commit `fsync` and `sync` through the volume's journal when it has
    /// one (`has_journal`, ext3): one log write and one flush instead of a
    /// flush per level of the write order (the boot option
    /// `ext2.journal=on|off`; `crate::cache::Cache::commit`). Without a
    /// journal it changes nothing; a volume needing recovery is replayed
    /// either way.
    pub journal: bool,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions { nbuf: 64, read_only: false, sync_metadata: false, journal: true }
    }
}

/// Why a mount was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountError {
    pub errno: Errno,
    pub reason: String,
}

impl core::fmt::Display for MountError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} ({})", self.reason, self.errno.name())
    }
}

fn refuse(errno: Errno, reason: String) -> MountError {
    MountError { errno, reason }
}

/// A mounted ext2 file system.
pub struct Fs<D: BlockDevice> {
    cache: Cache<D>,
    sb: Superblock,
    groups: Vec<GroupDesc>,
    block_bytes: usize,
    /// Block pointers per indirect block.
    ptrs_per_block: u64,
    inode_size: usize,
    inode_table_blocks: u64,
    gdt_blocks: u64,
    /// Where the superblock sits in the cache's blocks.
    sb_block: u64,
    sb_offset: usize,
    has_filetype: bool,
    is_sparse_super: bool,
    is_large_file: bool,
    read_only: bool,
    sync_metadata: bool,
    now_s: u32,
    next_generation: u32,
    /// Open counts: an unlinked inode lives until its last close.
    open: BTreeMap<u32, u32>,
    /// The in-core inodes of open files (V1's `i.*` area, seed 004: "the
    /// block containing The open i-node isn't cached"): a copy of the
    /// inode's first 128 bytes, taken at its first read while open and
    /// kept equal to the cache's by [`Fs::write_inode`] (every change to
    /// an inode goes through it), dropped at the last close. A read or
    /// write of an open file then needs no inode-table buffer, so the
    /// buffers hold data and indirect blocks.
    core_inodes: BTreeMap<u32, Inode>,
    /// Open inodes whose in-core copy is newer than their block: a
    /// `write` changes only the in-core inode (size, times, block
    /// pointers), as V1's did; it reaches its block at the last close,
    /// `fsync`, `sync`, or any other change to the inode.
    dirty_inodes: BTreeSet<u32>,
    /// Directory blocks that got an entry naming an inode since the last
    /// `sync`, with the directory: `fsync` of that inode
    /// writes them too, so that an fsync'd new file has its name after a
    /// power cut. At most [`MAX_TRACKED_ENTRIES`]; past that (`None`),
    /// `fsync` is a whole `sync` until the next one.
    new_entries: Option<BTreeMap<u32, Vec<(u64, u32)>>>,
    /// Entries made while their directory block has not been written
    /// since: (block, offset in it) -> (the inode named, the block's
    /// dirty period then, `Cache::dirty_seq`). An entry whose block is
    /// still in that period never reached the disk, so its removal needs
    /// no order before the inode's link count ([`Fs::entry_never_written`]).
    /// At most [`MAX_TRACKED_ENTRIES`] (stale ones dropped when full).
    unwritten_entries: BTreeMap<(u64, usize), (u32, u64)>,
    /// Blocks due on the disk before the next contents of an inode (kept
    /// in memory while an operation builds them): declared to the cache
    /// when the inode is written into its block, not before, so that a
    /// write of the block meanwhile cannot end the wait early.
    inode_deps: BTreeMap<u32, Vec<u64>>,
    /// Sequential-read detection: (inode, next offset, the logical block
    /// up to which its read-ahead window was last found whole), most
    /// recent last.
    readers: Vec<(u32, u64, u64)>,
    /// `Fs::read_into`'s block map and block list, kept between reads so
    /// that a read from the cache allocates nothing (taken and put back).
    read_scratch: (Vec<u32>, Vec<u64>),
    /// The names of recently scanned directories (`dir::DirNames`): a
    /// `creat` of a new name finds it absent without scanning.
    dir_names: BTreeMap<u32, dir::DirNames>,
    /// Directory -> the parent its `..` was checked to name
    /// (`Fs::lookup`'s loop check), at most [`MAX_KNOWN_PARENTS`];
    /// forgotten when an entry of the directory is changed or removed, or
    /// its inode freed.
    parents: BTreeMap<u32, u32>,
    /// Paths [`Fs::resolve`] walked lately and the inode each named, at
    /// most [`MAX_WALKED_PATHS`], the oldest replaced first (`walked.1`:
    /// the next slot): the monitor's lookup and the open after it, and
    /// every `creat` in one directory, walk the same path. All forgotten
    /// when any entry is removed or pointed elsewhere (`dir::remove_entry`,
    /// `set_entry`) or an inode is freed: only those change what a path
    /// that resolved names (an entry added names nothing that resolved).
    walked: (Vec<(Vec<u8>, u32)>, usize),
    last_damage: Option<String>,
    /// The volume was mounted read-write while marked not clean (a power
    /// cut, a killed manager): its free counts were recounted at mount.
    mounted_unclean: bool,
    /// What the journal replay at this mount did, if the volume was
    /// marked `needs_recovery` (`journal.rs`).
    replayed: Option<ReplayReport>,
    /// Whether `fsync` commits through the journal (`journal.rs`).
    journal_state: String,
}

/// What one pass of [`Fs::mount`] did.
enum Mounted<D: BlockDevice> {
    /// Boxed: one `Fs` on the heap rather than a second one's room in
    /// every frame the result passes through.
    Done(::alloc::boxed::Box<Fs<D>>),
    /// The journal was replayed: mount the device again.
    Replayed(D, ReplayReport),
}

/// Most checked parents kept (`Fs::parents`): a lookup walking a path
/// reads each directory's first block only the first time.
pub(crate) const MAX_KNOWN_PARENTS: usize = 256;

/// Most paths [`Fs::resolve`] remembers (`Fs::walked`), and the longest
/// it remembers: a few directories in use at once, bounded memory.
pub(crate) const MAX_WALKED_PATHS: usize = 8;
pub(crate) const MAX_WALKED_PATH_BYTES: usize = 256;

/// Reads `bytes` at byte `offset` of `dev` directly (before the cache
/// exists: the block size is not known yet).
fn read_raw<D: BlockDevice>(dev: &mut D, offset: usize, bytes: usize) -> Result<Vec<u8>, Errno> {
    let first_sector = (offset / SECTOR_BYTES) as u64;
    let end = (offset + bytes).div_ceil(SECTOR_BYTES) * SECTOR_BYTES;
    let len = end - first_sector as usize * SECTOR_BYTES;
    dev.submit(Transfer {
        tag: 0,
        direction: Direction::Read,
        first_sector,
        buffers: vec![vec![0u8; len].into()],
    });
    let (t, result) = dev.complete().ok_or(EIO)?;
    result?;
    let skip = offset - first_sector as usize * SECTOR_BYTES;
    let buf = t.buffers.into_iter().next().ok_or(EIO)?;
    Ok(buf[skip..skip + bytes].to_vec())
}

impl<D: BlockDevice> Fs<D> {
    /// Checks the superblock and every group descriptor and mounts; a
    /// refusal gives the device back untouched.
    pub fn mount(dev: D, opts: MountOptions) -> Result<Self, (MountError, D)> {
        // A loop, not a recursion: the second mount's `Fs` must not sit
        // on the stack beside the first's (a server's stack is
        // `abi::layout::USER_STACK_BYTES`; the recursion overflowed it).
        let (mut dev, mut replayed, mut may_replay) = (dev, None, true);
        loop {
            match Self::mount_replaying(dev, opts, may_replay)? {
                Mounted::Done(mut fs) => {
                    fs.replayed = replayed;
                    return Ok(*fs);
                }
                Mounted::Replayed(again, report) => {
                    (dev, replayed, may_replay) = (again, Some(report), false);
                }
            }
        }
    }

    /// One pass of [`Fs::mount`]; a volume marked `needs_recovery` has its
    /// journal replayed (`journal.rs`) and its device given back, to be
    /// mounted afresh from what that wrote (the superblock, the group
    /// descriptors and the root may be among the replayed blocks), once:
    /// `may_replay` is false the second time.
    fn mount_replaying(
        mut dev: D,
        opts: MountOptions,
        may_replay: bool,
    ) -> Result<Mounted<D>, (MountError, D)> {
        let sb = match Self::check_superblock(&mut dev) {
            Ok(sb) => sb,
            Err(e) => return Err((e, dev)),
        };
        let block_bytes = sb.block_bytes();
        let cache = match Cache::new(dev, block_bytes, opts.nbuf.max(1)) {
            Ok(c) => c,
            Err((errno, dev)) => {
                return Err((refuse(errno, format!("no cache of {block_bytes}-byte blocks")), dev));
            }
        };
        let sb_block = (SUPERBLOCK_OFFSET / block_bytes) as u64;
        let inode_size = sb.inode_size as usize;
        let ngroups = sb.group_count() as u64;
        let mut fs = Fs {
            cache,
            block_bytes,
            ptrs_per_block: (block_bytes / 4) as u64,
            inode_size,
            inode_table_blocks: (sb.inodes_per_group as u64 * inode_size as u64).div_ceil(block_bytes as u64),
            gdt_blocks: (ngroups * GROUP_DESC_BYTES as u64).div_ceil(block_bytes as u64),
            sb_block,
            sb_offset: SUPERBLOCK_OFFSET % block_bytes,
            has_filetype: sb.feature_incompat & feature::INCOMPAT_FILETYPE != 0,
            is_sparse_super: sb.feature_ro_compat & feature::RO_COMPAT_SPARSE_SUPER != 0,
            is_large_file: sb.feature_ro_compat & feature::RO_COMPAT_LARGE_FILE != 0,
            read_only: opts.read_only || sb.feature_ro_compat & !feature::RO_COMPAT_SUPPORTED != 0,
            sync_metadata: opts.sync_metadata,
            now_s: sb.latest_time_s,
            next_generation: 1,
            open: BTreeMap::new(),
            core_inodes: BTreeMap::new(),
            dirty_inodes: BTreeSet::new(),
            new_entries: Some(BTreeMap::new()),
            unwritten_entries: BTreeMap::new(),
            inode_deps: BTreeMap::new(),
            readers: Vec::new(),
            read_scratch: (Vec::new(), Vec::new()),
            dir_names: BTreeMap::new(),
            parents: BTreeMap::new(),
            walked: (Vec::new(), 0),
            last_damage: None,
            mounted_unclean: false,
            replayed: None,
            journal_state: String::from("off"),
            groups: Vec::new(),
            sb,
        };
        // V1 kept its superblock and free map in core, outside the `nbuf`
        // buffers the seed varies (seed 004); so do these (pinned buffers).
        fs.cache.pin(sb_block);
        for b in 0..fs.gdt_blocks {
            fs.cache.pin(fs.sb.first_data_block as u64 + 1 + b);
        }
        if let Err(e) = fs.check_groups() {
            // The cache has written nothing: mounting only reads.
            return Err((e, fs.cache.into_device_unwritten()));
        }
        let is_flagged = fs.sb.feature_incompat & feature::INCOMPAT_RECOVER != 0;
        // A log holding transactions on a volume not flagged: a power cut
        // kept the journal superblock's `s_start` and lost the
        // superblock's flag, both written before the commit's flush (or
        // Linux left it so). Its committed transactions are replayed all
        // the same, as `e2fsck -y` does ("Superblock needs_recovery flag
        // is clear, but journal has data. Run journal anyway? yes"): a
        // transaction whose commit block is whole and whose checksum holds
        // was written with everything it depends on durable. A journal
        // that cannot be read is only a reason not to use it then.
        let is_log_in_use = !is_flagged
            && !fs.read_only
            && fs.has_journal()
            && fs.load_journal().is_ok_and(|map| map.sb.start != 0);
        if is_flagged || is_log_in_use {
            let why = if fs.read_only {
                Some(refuse(EROFS, String::from("the journal needs recovery: mount read-write to replay it")))
            } else if !may_replay {
                Some(refuse(EIO, String::from("the journal still needs recovery after its replay")))
            } else {
                None
            };
            if let Some(e) = why {
                return Err((e, fs.cache.into_device_unwritten()));
            }
            let report = match fs.replay_journal() {
                Ok(r) => r,
                // Nothing written when the journal could not be read; a
                // write error leaves the flag set (the next mount replays).
                Err(e) => return Err((e, fs.cache.into_device_unwritten())),
            };
            // The replay wrote and flushed everything it changed.
            return Ok(Mounted::Replayed(fs.cache.into_device_unwritten(), report));
        }
        if let Err(e) = fs.check_root() {
            return Err((e, fs.cache.into_device_unwritten()));
        }
        if !fs.read_only
            && let Err(e) = fs.mark_mounted()
        {
            return Err((
                refuse(e, String::from("cannot mark the volume mounted")),
                fs.cache.into_device_unwritten(),
            ));
        }
        if !fs.read_only && opts.journal && fs.has_journal() {
            fs.start_journal();
        }
        Ok(Mounted::Done(::alloc::boxed::Box::new(fs)))
    }

    fn check_superblock(dev: &mut D) -> Result<Superblock, MountError> {
        let device_bytes = dev.sectors().saturating_mul(SECTOR_BYTES as u64);
        if device_bytes < (SUPERBLOCK_OFFSET + SUPERBLOCK_BYTES) as u64 {
            return Err(refuse(EINVAL, format!("device of {device_bytes} bytes is too small for ext2")));
        }
        let raw = read_raw(dev, SUPERBLOCK_OFFSET, SUPERBLOCK_BYTES)
            .map_err(|e| refuse(e, String::from("cannot read the superblock")))?;
        let sb = Superblock::parse(&raw);
        let bad = |what: String| Err(refuse(EINVAL, what));
        if sb.magic != layout::MAGIC {
            return bad(format!("not ext2: magic {:#06x}, want {:#06x}", sb.magic, layout::MAGIC));
        }
        if sb.rev_level > 1 {
            return bad(format!("revision {} (this reads revisions 0 and 1)", sb.rev_level));
        }
        if sb.log_block_size > 2 {
            return bad(format!("block size 1024 << {} (this reads 1, 2 and 4 KiB)", sb.log_block_size));
        }
        let bs = sb.block_bytes() as u64;
        let unsupported = sb.feature_incompat & !feature::INCOMPAT_SUPPORTED;
        if unsupported != 0 {
            return bad(format!(
                "incompatible features {unsupported:#x} (this knows filetype and needs_recovery only)"
            ));
        }
        if sb.feature_incompat & feature::INCOMPAT_RECOVER != 0
            && sb.feature_compat & feature::COMPAT_HAS_JOURNAL == 0
        {
            return bad(String::from("needs_recovery set on a volume without a journal"));
        }
        let isize = sb.inode_size as u64;
        if isize < layout::GOOD_OLD_INODE_SIZE as u64 || !isize.is_power_of_two() || isize > bs {
            return bad(format!("inode size {isize}"));
        }
        if sb.first_data_block != u32::from(bs == 1024) {
            return bad(format!("first data block {} with {bs}-byte blocks", sb.first_data_block));
        }
        if sb.blocks_per_group == 0
            || sb.blocks_per_group as u64 > 8 * bs
            || !sb.blocks_per_group.is_multiple_of(8)
        {
            return bad(format!("{} blocks per group", sb.blocks_per_group));
        }
        if sb.inodes_per_group == 0 || sb.inodes_per_group as u64 > 8 * bs {
            return bad(format!("{} inodes per group", sb.inodes_per_group));
        }
        if sb.blocks_count <= sb.first_data_block + 1 {
            return bad(format!("{} blocks", sb.blocks_count));
        }
        if sb.blocks_count as u64 * bs > device_bytes {
            return bad(format!(
                "{} blocks of {bs} bytes do not fit the device's {device_bytes} bytes",
                sb.blocks_count
            ));
        }
        let table_inodes = sb.group_count() as u64 * sb.inodes_per_group as u64;
        if sb.inodes_count as u64 != table_inodes {
            return bad(format!(
                "inode count {} is not the {table_inodes} of the inode tables",
                sb.inodes_count
            ));
        }
        if sb.first_ino < 3 || sb.first_ino >= sb.inodes_count {
            return bad(format!("first inode {}", sb.first_ino));
        }
        if sb.free_blocks_count > sb.blocks_count || sb.free_inodes_count > sb.inodes_count {
            return bad(String::from("free counts exceed the totals"));
        }
        Ok(sb)
    }

    fn gd_location(&self, group: u32) -> (u64, usize) {
        let byte = group as usize * GROUP_DESC_BYTES;
        (self.sb.first_data_block as u64 + 1 + (byte / self.block_bytes) as u64, byte % self.block_bytes)
    }

    pub(crate) fn group_first_block(&self, group: u32) -> u64 {
        self.sb.first_data_block as u64 + group as u64 * self.sb.blocks_per_group as u64
    }

    pub(crate) fn blocks_in_group(&self, group: u32) -> u64 {
        (self.sb.blocks_count as u64 - self.group_first_block(group)).min(self.sb.blocks_per_group as u64)
    }

    fn check_groups(&mut self) -> Result<(), MountError> {
        let ngroups = self.sb.group_count();
        let gdt_end = self.sb.first_data_block as u64 + 1 + self.gdt_blocks;
        if gdt_end > self.blocks_per_group0_end() {
            return Err(refuse(EINVAL, format!("{ngroups} group descriptors do not fit group 0")));
        }
        let mut groups = Vec::with_capacity(ngroups as usize);
        for g in 0..ngroups {
            let (block, offset) = self.gd_location(g);
            let desc = self
                .cache
                .read(block, |b| GroupDesc::parse(&b[offset..offset + GROUP_DESC_BYTES]))
                .map_err(|e| refuse(e, format!("cannot read group descriptor {g}")))?;
            let first = self.group_first_block(g);
            let last = first + self.blocks_in_group(g) - 1;
            let inside = |b: u64| (first..=last).contains(&b);
            let bad = |what: &str, v: u32| {
                Err(refuse(
                    EINVAL,
                    format!("group {g}: {what} {v} outside the group's blocks {first}..={last}"),
                ))
            };
            if !inside(desc.block_bitmap as u64) {
                return bad("block bitmap", desc.block_bitmap);
            }
            if !inside(desc.inode_bitmap as u64) {
                return bad("inode bitmap", desc.inode_bitmap);
            }
            if !inside(desc.inode_table as u64)
                || !inside(desc.inode_table as u64 + self.inode_table_blocks - 1)
            {
                return bad("inode table", desc.inode_table);
            }
            if desc.free_blocks_count as u64 > self.blocks_in_group(g)
                || desc.free_inodes_count as u32 > self.sb.inodes_per_group
            {
                return Err(refuse(EINVAL, format!("group {g}: free counts exceed the group's size")));
            }
            groups.push(desc);
        }
        self.groups = groups;
        // The bitmaps, as far as PINNED_METADATA_BYTES go (a large volume's
        // later groups' bitmaps go through the pool).
        let budget = PINNED_METADATA_BYTES / self.block_bytes as u64;
        let mut pinned = 1 + self.gdt_blocks;
        for g in 0..self.groups.len() {
            if pinned + 2 > budget {
                break;
            }
            let (bb, ib) = (self.groups[g].block_bitmap as u64, self.groups[g].inode_bitmap as u64);
            self.cache.pin(bb);
            self.cache.pin(ib);
            pinned += 2;
        }
        Ok(())
    }

    fn blocks_per_group0_end(&self) -> u64 {
        self.group_first_block(0) + self.blocks_in_group(0)
    }

    fn check_root(&mut self) -> Result<(), MountError> {
        let root = self
            .read_inode_raw(ROOT_INO)
            .map_err(|e| refuse(e, String::from("cannot read the root inode")))?;
        if !root.is_dir()
            || root.links() < 2
            || root.size() == 0
            || !root.size().is_multiple_of(self.block_bytes as u64)
        {
            return Err(refuse(
                EINVAL,
                format!(
                    "the root inode is not a directory (mode {:#o}, links {}, size {})",
                    root.mode(),
                    root.links(),
                    root.size()
                ),
            ));
        }
        Ok(())
    }

    /// Writes everything, marks the volume clean (a read-write mount) and
    /// gives the device back.
    pub fn unmount(mut self) -> Result<D, Errno> {
        self.flush_inodes()?;
        if !self.read_only {
            self.mark_clean()?;
        }
        // The log emptied (its copies home, `needs_recovery` cleared), then
        // everything home in order: `e2fsck -fn` finds a clean volume.
        // In this order a block changed since it was logged needs no
        // transaction of its own on its way home.
        self.cache.checkpoint()?;
        self.cache.into_device()
    }

    /// The time (seconds since 1970) stamped on changes from now on.
    ///
    /// A time before the volume was last mounted, written or checked (a
    /// clock counting from boot: Ridgeback has no calendar clock yet) is
    /// taken as seconds after that time. Times must not be small numbers:
    /// `e2fsck` reads a deleted inode's small `dtime` as a link of the
    /// orphan list (an inode number), and reports the list corrupt.
    pub fn set_time(&mut self, now_s: u32) {
        let floor = self.sb.latest_time_s;
        let now_s = if now_s < floor { floor.saturating_add(now_s) } else { now_s };
        self.now_s = now_s;
        if self.next_generation == 1 {
            self.next_generation = now_s | 1;
        }
    }

    pub fn block_bytes(&self) -> usize {
        self.block_bytes
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The journal's counts (commits, logged blocks, checkpoints): zeros
    /// while it is not used.
    pub fn log_stats(&self) -> crate::cache::LogStats {
        self.cache.log_stats()
    }

    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    pub fn device(&self) -> &D {
        self.cache.device()
    }

    /// The device, for a server feeding it completions between requests.
    pub fn device_mut(&mut self) -> &mut D {
        self.cache.device_mut()
    }

    /// What the journal replay at this mount did: `None` when the volume
    /// was not marked `needs_recovery`.
    pub fn journal_replayed(&self) -> Option<&ReplayReport> {
        self.replayed.as_ref()
    }

    /// What the last `EIO` for damage found (for a server's log).
    pub fn last_damage(&self) -> Option<&str> {
        self.last_damage.as_deref()
    }

    /// Everything to the disk and a device flush (`sync`).
    pub fn sync(&mut self) -> Result<(), Errno> {
        self.flush_inodes()?;
        if self.cache.has_log() {
            // One transaction of everything dirty (`Cache::commit`).
            let dirty = self.cache.dirty_list();
            self.cache.commit(&dirty, self.now_s)?;
        } else {
            self.cache.sync()?;
        }
        self.new_entries = Some(BTreeMap::new());
        Ok(())
    }

    /// An entry naming `child` went into block `block` of directory `dir`,
    /// at byte `offset` (the block changed already).
    pub(crate) fn note_entry(
        &mut self,
        child: u32,
        dir: u32,
        block: u64,
        offset: usize,
    ) -> Result<(), Errno> {
        self.note_unwritten_entry(child, block, offset);
        let Some(map) = &mut self.new_entries else { return Ok(()) };
        if !map.contains_key(&child) && map.len() >= MAX_TRACKED_ENTRIES {
            self.new_entries = None;
            return Ok(());
        }
        let list = map.entry(child).or_default();
        if !list.contains(&(block, dir)) {
            list.push((block, dir));
        }
        Ok(())
    }

    /// Remembers that the entry at `offset` of `block`, naming `child`,
    /// is in the block's present dirty period ([`Fs::entry_never_written`]).
    fn note_unwritten_entry(&mut self, child: u32, block: u64, offset: usize) {
        let Some(seq) = self.cache.dirty_seq(block) else { return };
        if self.unwritten_entries.len() >= MAX_TRACKED_ENTRIES {
            // Drop those whose block was written since (they can no
            // longer answer yes); if most are still live, forget them all:
            // forgetting only costs an order that was not needed.
            let cache = &self.cache;
            self.unwritten_entries.retain(|&(b, _), &mut (_, s)| cache.dirty_seq(b) == Some(s));
            if self.unwritten_entries.len() >= MAX_TRACKED_ENTRIES / 2 {
                self.unwritten_entries.clear();
            }
        }
        self.unwritten_entries.insert((block, offset), (child, seq));
    }

    /// Whether the entry at `offset` of `block`, naming `child`, was made
    /// since the block was last written (or started to be), so that the
    /// disk's copy of the block has never held it; forgets it either way
    /// (the caller is removing it). Its removal then needs no order before
    /// the inode's link count drops: no entry on the disk goes, and the
    /// count on the disk already counts at least the entries there. This
    /// is what keeps a file created and unlinked between two writes of its
    /// directory block from being written at all: the unlink's order
    /// (entry block -> inode block) against the create's (inode block ->
    /// entry block) was a cycle, broken by writing the inode's block and
    /// with it every block the file had (`docs/filesystem.md`, "The write
    /// order").
    pub(crate) fn entry_never_written(&mut self, child: u32, block: u64, offset: usize) -> bool {
        match self.unwritten_entries.remove(&(block, offset)) {
            Some((named, seq)) => named == child && self.cache.dirty_seq(block) == Some(seq),
            None => false,
        }
    }

    /// Writes every in-core inode newer than its block into the block.
    pub(crate) fn flush_inodes(&mut self) -> Result<(), Errno> {
        while let Some(ino) = self.dirty_inodes.first().copied() {
            self.flush_inode(ino)?;
        }
        Ok(())
    }

    /// Writes inode `ino`'s in-core copy into its block if it is newer.
    pub(crate) fn flush_inode(&mut self, ino: u32) -> Result<(), Errno> {
        if !self.dirty_inodes.contains(&ino) {
            return Ok(());
        }
        match self.core_inodes.get(&ino).cloned() {
            Some(inode) => self.write_inode(ino, &inode),
            None => {
                self.dirty_inodes.remove(&ino);
                Ok(())
            }
        }
    }

    /// A `write`'s change to inode `ino`: kept in core while the file is
    /// open (written by [`Fs::flush_inode`]), else written now.
    pub(crate) fn write_inode_lazy(&mut self, ino: u32, inode: &Inode) -> Result<(), Errno> {
        if self.sync_metadata || !self.core_inodes.contains_key(&ino) {
            return self.write_inode(ino, inode);
        }
        self.update_core_inode(ino, inode);
        self.dirty_inodes.insert(ino);
        Ok(())
    }

    /// `fsync`/`fdatasync` of one file: its in-core inode into its block,
    /// then its dirty data and indirect blocks, its inode block and the
    /// directory blocks that got its name since the last `sync`, each
    /// after what it waits for (the bitmaps, [`Cache::order`]), then a
    /// device flush. Other files' dirty blocks stay in the cache unless
    /// the order needs them first. A file with no block map (a fast
    /// symbolic link), or more new names than tracked, gets a whole `sync`.
    pub fn fsync(&mut self, ino: u32) -> Result<(), Errno> {
        if self.new_entries.is_none() {
            return self.sync();
        }
        let mut blocks = Vec::new();
        let mut todo = vec![ino];
        let mut seen = BTreeSet::new();
        // The file, then each directory that got one of its names (or one
        // of theirs) since the last sync: a new file in a new directory
        // needs the directory's blocks, inode and name too.
        while let Some(at) = todo.pop() {
            if !seen.insert(at) {
                continue;
            }
            self.flush_inode(at)?;
            let inode = self.read_inode_raw(at)?;
            if !(inode.is_reg() || inode.is_dir()) {
                return self.sync();
            }
            blocks.extend(self.file_blocks(&inode)?.into_iter().map(u64::from));
            blocks.push(self.inode_location(at)?.0);
            let entries = self.new_entries.as_ref().and_then(|m| m.get(&at)).cloned().unwrap_or_default();
            for (block, dir) in entries {
                blocks.push(block);
                todo.push(dir);
            }
        }
        // Without a journal: the blocks in order, then a flush; with one:
        // the fresh ones home, the rest in one transaction (`Cache::commit`).
        self.cache.commit(&blocks, self.now_s)?;
        if let Some(map) = &mut self.new_entries {
            map.remove(&ino);
        }
        Ok(())
    }

    /// Starts writing the blocks dirty for `cache::DIRTY_EXPIRE_MS` or
    /// more at `now_ms` (the server's clock, milliseconds), waiting for
    /// nothing, at most once per `cache::WRITEBACK_INTERVAL_MS`
    /// ([`Cache::write_expired`]); how many were due.
    pub fn write_expired(&mut self, now_ms: u64) -> Result<usize, Errno> {
        self.cache.write_expired(now_ms)
    }

    /// Milliseconds from `now_ms` until [`Fs::write_expired`] next has work,
    /// `None` while nothing is dirty ([`Cache::next_expiry_ms`]): how long
    /// the server's write-back timer sleeps.
    pub fn next_expiry_ms(&mut self, now_ms: u64) -> Option<u64> {
        self.cache.next_expiry_ms(now_ms)
    }

    /// Takes back the buffers of transfers the device has finished, without
    /// waiting ([`Cache::reap`]).
    pub fn reap(&mut self) -> Result<(), Errno> {
        self.cache.reap()
    }

    /// Buffers dirty now ([`Cache::dirty_blocks`]).
    pub fn dirty_blocks(&self) -> usize {
        self.cache.dirty_blocks()
    }

    /// Buffers in the cache (`nbuf`).
    pub fn nbuf(&self) -> usize {
        self.cache.nbuf()
    }

    /// Empties the cache of clean blocks (cold-cache measurements).
    pub fn drop_caches(&mut self) -> Result<(), Errno> {
        self.flush_inodes()?;
        self.cache.write_all()?;
        self.cache.drop_clean()
    }

    pub(crate) fn damage(&mut self, what: String) -> Errno {
        self.last_damage = Some(what);
        EIO
    }

    fn check_writable(&self) -> Result<(), Errno> {
        if self.read_only { Err(EROFS) } else { Ok(()) }
    }

    /// End of a transaction (Ridge §9): with `sync_metadata`, every change
    /// goes to the disk now.
    fn end_op(&mut self) -> Result<(), Errno> {
        if self.sync_metadata { self.cache.write_all() } else { Ok(()) }
    }

    /// Block and byte offset of inode `ino` in its inode table.
    pub(crate) fn inode_location(&self, ino: u32) -> Result<(u64, usize), Errno> {
        if ino == 0 || ino > self.sb.inodes_count {
            return Err(EIO);
        }
        let group = ((ino - 1) / self.sb.inodes_per_group) as usize;
        let index = ((ino - 1) % self.sb.inodes_per_group) as u64;
        let byte = index * self.inode_size as u64;
        Ok((
            self.groups[group].inode_table as u64 + byte / self.block_bytes as u64,
            (byte % self.block_bytes as u64) as usize,
        ))
    }

    pub(crate) fn read_inode_raw(&mut self, ino: u32) -> Result<Inode, Errno> {
        let (block, offset) = match self.inode_location(ino) {
            Ok(l) => l,
            Err(e) => {
                self.last_damage =
                    Some(format!("inode number {ino} is outside 1..={}", self.sb.inodes_count));
                return Err(e);
            }
        };
        if let Some(inode) = self.core_inodes.get(&ino) {
            return Ok(inode.clone());
        }
        let inode = self.cache.read(block, |b| Inode::from_bytes(&b[offset..]))?;
        if self.open.contains_key(&ino) {
            self.core_inodes.insert(ino, inode.clone());
        }
        Ok(inode)
    }

    /// Keeps the in-core copy of an open inode equal to what was just
    /// written into its block.
    fn update_core_inode(&mut self, ino: u32, inode: &Inode) {
        if let Some(core) = self.core_inodes.get_mut(&ino) {
            *core = inode.clone();
        }
    }

    /// Block `first` (its present contents) must be on the disk before
    /// the next write of inode `ino`'s contents.
    pub(crate) fn inode_after(&mut self, ino: u32, first: u64) {
        let list = self.inode_deps.entry(ino).or_default();
        if !list.contains(&first) {
            list.push(first);
        }
    }

    /// Declares inode `ino`'s waits (see [`Fs::inode_after`]) right before
    /// its block changes.
    fn declare_inode_deps(&mut self, ino: u32, block: u64) -> Result<(), Errno> {
        for first in self.inode_deps.remove(&ino).unwrap_or_default() {
            self.cache.order(first, block)?;
        }
        Ok(())
    }

    /// Writes an inode's first 128 bytes (what this crate knows), keeping
    /// the rest of a large inode.
    pub(crate) fn write_inode(&mut self, ino: u32, inode: &Inode) -> Result<(), Errno> {
        let (block, offset) = self.inode_location(ino)?;
        self.declare_inode_deps(ino, block)?;
        self.cache
            .modify(block, |b| b[offset..offset + layout::GOOD_OLD_INODE_SIZE].copy_from_slice(&inode.raw))?;
        self.update_core_inode(ino, inode);
        self.dirty_inodes.remove(&ino);
        Ok(())
    }

    /// Writes a newly allocated inode whole: its 128 bytes, the rest
    /// zeroed, and `i_extra_isize` as the superblock wants.
    fn write_new_inode(&mut self, ino: u32, inode: &Inode) -> Result<(), Errno> {
        let (block, offset) = self.inode_location(ino)?;
        let isize = self.inode_size;
        let extra = if isize > layout::GOOD_OLD_INODE_SIZE {
            let want = if self.sb.want_extra_isize != 0 { self.sb.want_extra_isize } else { 32 };
            want.min((isize - layout::GOOD_OLD_INODE_SIZE) as u16)
        } else {
            0
        };
        self.declare_inode_deps(ino, block)?;
        let fill = |b: &mut [u8]| {
            b[offset..offset + isize].fill(0);
            b[offset..offset + layout::GOOD_OLD_INODE_SIZE].copy_from_slice(&inode.raw);
            if isize > layout::GOOD_OLD_INODE_SIZE {
                put16(b, offset + layout::GOOD_OLD_INODE_SIZE, extra);
            }
        };
        if self.cache.cached(&[block]) == 0 && self.only_inode_in_use_of_its_block(ino)? {
            // Not read: every other inode of the block is free, and a free
            // inode's contents mean nothing to ext2 (e2fsck reads an inode
            // only if its bitmap bit is set); zeros, as mke2fs writes a
            // fresh inode table. On a fresh volume this was one device
            // read per inode-table block, 1 in 4 creats with 1 KiB blocks
            // (docs/filesystem-history.md, "R2 on disk: creat+close again").
            self.cache.overwrite(block, |b| {
                b.fill(0);
                fill(b)
            })?;
        } else {
            self.cache.modify(block, fill)?;
        }
        self.update_core_inode(ino, inode);
        Ok(())
    }

    /// Whether `ino` (its bit just set) is the only inode of its inode-table
    /// block whose bit is set in its group's inode bitmap.
    fn only_inode_in_use_of_its_block(&mut self, ino: u32) -> Result<bool, Errno> {
        let per_block = (self.block_bytes / self.inode_size).max(1) as u64;
        let index = ((ino - 1) % self.sb.inodes_per_group) as u64;
        let first = index - index % per_block;
        let last = (first + per_block).min(self.sb.inodes_per_group as u64);
        let bitmap = self.inode_bitmap_of(ino);
        self.cache.read(bitmap, |b| {
            (first..last)
                .all(|i| i == index || b.get((i / 8) as usize).is_some_and(|byte| byte & (1 << (i % 8)) == 0))
        })
    }

    /// Inode `ino` as named by a directory entry or a handle: checked.
    pub(crate) fn inode(&mut self, ino: u32) -> Result<Inode, Errno> {
        let inode = self.read_inode_raw(ino)?;
        let kind = inode.file_type();
        let known = matches!(
            kind,
            ftype::S_IFREG
                | ftype::S_IFDIR
                | ftype::S_IFLNK
                | ftype::S_IFCHR
                | ftype::S_IFBLK
                | ftype::S_IFIFO
                | ftype::S_IFSOCK
        );
        if !known {
            return Err(
                self.damage(format!("inode {ino}: mode {:#o} is no file type (a free inode?)", inode.mode()))
            );
        }
        if inode.links() == 0 && !self.open.contains_key(&ino) {
            return Err(self.damage(format!("inode {ino}: no links (a deleted inode)")));
        }
        if inode.is_dir() && !inode.size().is_multiple_of(self.block_bytes as u64) {
            return Err(self.damage(format!("directory {ino}: size {} is not whole blocks", inode.size())));
        }
        if inode.size() > self.max_file_bytes() {
            return Err(self.damage(format!("inode {ino}: size {} past the largest file", inode.size())));
        }
        Ok(inode)
    }

    /// The largest file the block map reaches.
    pub(crate) fn max_file_bytes(&self) -> u64 {
        let p = self.ptrs_per_block;
        let blocks = layout::N_DIRECT as u64 + p + p * p + p * p * p;
        let by_map = blocks * self.block_bytes as u64;
        // i_blocks counts 512-byte sectors in 32 bits.
        let by_sectors = (u32::MAX as u64) * SECTOR_BYTES as u64;
        by_map.min(by_sectors)
    }

    /// Adds `d_blocks`, `d_inodes` and `d_dirs` to the counts of group
    /// `group` and (but the directories) the superblock's.
    fn adjust_counts(&mut self, group: u32, d_blocks: i32, d_inodes: i32, d_dirs: i32) -> Result<(), Errno> {
        let (block, offset) = self.gd_location(group);
        self.cache.modify(block, |b| {
            for (at, d) in [
                (layout::gd::FREE_BLOCKS_COUNT, d_blocks),
                (layout::gd::FREE_INODES_COUNT, d_inodes),
                (layout::gd::USED_DIRS_COUNT, d_dirs),
            ] {
                if d != 0 {
                    let v = le16(b, offset + at) as i32 + d;
                    put16(b, offset + at, v.clamp(0, u16::MAX as i32) as u16);
                }
            }
        })?;
        let (sb_block, sb_offset) = (self.sb_block, self.sb_offset);
        self.cache.modify(sb_block, |b| {
            for (at, d) in
                [(layout::sb::FREE_BLOCKS_COUNT, d_blocks), (layout::sb::FREE_INODES_COUNT, d_inodes)]
            {
                if d != 0 {
                    let v = le32(b, sb_offset + at) as i64 + d as i64;
                    put32(b, sb_offset + at, v.clamp(0, u32::MAX as i64) as u32);
                }
            }
        })
    }

    fn group_count(&self) -> u32 {
        self.groups.len() as u32
    }
}
