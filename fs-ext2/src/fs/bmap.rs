//! A file's block map: 12 direct pointers in the inode, then a single, a
//! double and a triple indirect block (ext2's `i_block[15]`).
//!
//! Order when the map grows (`bmap_alloc`): the new block's bitmap bit and
//! its contents (zeros for an indirect block, the data for a data block)
//! are due on the disk before the block that will point at it (the inode's
//! table block or the indirect block). When it shrinks (`cut`): the
//! pointers are cleared first, and the bitmap blocks are due after the
//! blocks that held them.

use super::Fs;
use crate::device::{BlockDevice, SECTOR_BYTES};
use crate::layout::{DIND, IND, Inode, N_DIRECT, TIND, le32, put32};
use alloc::format;
use alloc::vec::Vec;
use protocols::unix::Errno;
use protocols::unix::errno::EFBIG;

/// Blocks to free and indirect blocks to clear from an index on, found
/// before anything changes.
#[derive(Default)]
struct Cut {
    free: Vec<u32>,
    clear_from: Vec<(u32, usize)>,
}

impl<D: BlockDevice> Fs<D> {
    /// The path to logical block `lblk`: how many indirections, the slot
    /// in the inode, then the index at each level.
    fn block_path(&self, lblk: u64) -> Result<(usize, [usize; 4]), Errno> {
        let p = self.ptrs_per_block;
        let mut l = lblk;
        if l < N_DIRECT as u64 {
            return Ok((0, [l as usize, 0, 0, 0]));
        }
        l -= N_DIRECT as u64;
        if l < p {
            return Ok((1, [IND, l as usize, 0, 0]));
        }
        l -= p;
        if l < p * p {
            return Ok((2, [DIND, (l / p) as usize, (l % p) as usize, 0]));
        }
        l -= p * p;
        if l < p * p * p {
            return Ok((3, [TIND, (l / (p * p)) as usize, ((l / p) % p) as usize, (l % p) as usize]));
        }
        Err(EFBIG)
    }

    /// The first logical block past `lblk` whose mapping needs an indirect
    /// block that `lblk`'s does not: the end of the direct blocks, of the
    /// single indirect block's, or of the last-level indirect block `lblk`
    /// is in (a read-ahead window stops there: `Fs::read_into`).
    pub(crate) fn map_level_end(&self, lblk: u64) -> u64 {
        let p = self.ptrs_per_block.max(1);
        let direct = N_DIRECT as u64;
        if lblk < direct {
            return direct;
        }
        if lblk < direct + p {
            return direct + p;
        }
        // Double and triple: each last-level indirect block maps `p`
        // blocks from the level's start.
        let base = if lblk < direct + p + p * p { direct + p } else { direct + p + p * p };
        base + ((lblk - base) / p + 1) * p
    }

    /// A block pointer read from the disk must lie in the file system.
    fn check_ptr(&mut self, ptr: u32, what: &str) -> Result<(), Errno> {
        if ptr <= self.sb.first_data_block || ptr >= self.sb.blocks_count {
            return Err(
                self.damage(format!("{what}: block pointer {ptr} outside 1..{}", self.sb.blocks_count))
            );
        }
        Ok(())
    }

    /// The block holding logical block `lblk` of `inode`, or 0 for a hole.
    pub(crate) fn bmap(&mut self, inode: &Inode, lblk: u64) -> Result<u32, Errno> {
        let (depth, path) = self.block_path(lblk)?;
        let mut ptr = inode.block(path[0]);
        for &index in &path[1..=depth] {
            if ptr == 0 {
                return Ok(0);
            }
            self.check_ptr(ptr, "indirect block")?;
            ptr = self.cache.read(ptr as u64, |b| le32(b, index * 4))?;
        }
        if ptr != 0 {
            self.check_ptr(ptr, "data block")?;
        }
        Ok(ptr)
    }

    fn add_sectors(&mut self, inode: &mut Inode, sign: i64) -> Result<(), Errno> {
        let per_block = (self.block_bytes / SECTOR_BYTES) as i64;
        let v = inode.sectors() as i64 + sign * per_block;
        inode.set_sectors(u32::try_from(v.max(0)).map_err(|_| EFBIG)?);
        Ok(())
    }

    /// Makes logical block `lblk` of inode `ino` exist, allocating near
    /// `goal`. A new data block gets its contents from `fill` (after the
    /// blocks `before_data` are on the disk). Returns the block and
    /// whether it is new. The in-memory `inode` changes; the caller writes
    /// it (after this, so that the order declared here holds).
    pub(crate) fn bmap_alloc(
        &mut self,
        ino: u32,
        inode: &mut Inode,
        lblk: u64,
        goal: u64,
        before_data: &[u64],
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Result<(u32, bool), Errno> {
        let (depth, path) = self.block_path(lblk)?;
        let mut holder: Option<u32> = None;
        let mut goal = goal;
        for (level, &slot) in path.iter().enumerate().take(depth + 1) {
            let ptr = match holder {
                None => inode.block(slot),
                Some(h) => self.cache.read(h as u64, |b| le32(b, slot * 4))?,
            };
            let is_leaf = level == depth;
            if ptr != 0 {
                self.check_ptr(ptr, if is_leaf { "data block" } else { "indirect block" })?;
                if is_leaf {
                    return Ok((ptr, false));
                }
                goal = ptr as u64 + 1;
                holder = Some(ptr);
                continue;
            }
            let new = self.alloc_block(goal)?;
            if is_leaf {
                self.cache.overwrite(new as u64, |b| fill(b))?;
                // Fresh before its waits are declared, so that one on a
                // block written but not yet flushed puts no flush before it
                // (`Cache::allocated`); nothing is written in between.
                if !before_data.is_empty() {
                    self.fresh_after_its_bit(new as u64)?;
                }
                for &b in before_data {
                    self.cache.order(b, new as u64)?;
                }
            } else {
                self.cache.overwrite(new as u64, |b| b.fill(0))?;
                self.fresh_after_its_bit(new as u64)?;
            }
            let bitmap = self.block_bitmap_of(new as u64);
            match holder {
                None => {
                    self.inode_after(ino, bitmap);
                    self.inode_after(ino, new as u64);
                    inode.set_block(slot, new);
                }
                Some(h) => {
                    self.cache.order(bitmap, h as u64)?;
                    self.cache.order(new as u64, h as u64)?;
                    self.cache.modify(h as u64, |b| put32(b, slot * 4, new))?;
                }
            }
            self.add_sectors(inode, 1)?;
            if is_leaf {
                return Ok((new, true));
            }
            goal = new as u64 + 1;
            holder = Some(new);
        }
        Err(self.damage(format!("inode {ino}: block map walk ended early")))
    }

    /// Marks `block`, just allocated and given its first contents, fresh
    /// (`Cache::allocated`: what it waits for need only have completed,
    /// not be flushed, before its write) and orders its own bitmap before
    /// it. The order is what makes "fresh" true of a block freed and given
    /// out again: the disk's copy of the block that pointed at it before
    /// (an inode's block, an indirect block of the file it was freed from)
    /// may still point at it until that block's cleared pointer is on the
    /// disk, and its bitmap's write waits for that, behind a flush on a
    /// volatile cache (the free's order: pointers, then bits). So the
    /// block's new contents reach the disk only once nothing old reaches
    /// them, and what they point at is reached only through it.
    fn fresh_after_its_bit(&mut self, block: u64) -> Result<(), Errno> {
        self.cache.allocated(block);
        let bitmap = self.block_bitmap_of(block);
        self.cache.order(bitmap, block)
    }

    /// The block whose pointers map logical block `lblk` of `ino` (`None`:
    /// the inode's direct slots), the slot there, and how many logical
    /// blocks from `lblk` on the same block maps; missing indirect blocks
    /// on the way are allocated near `goal` (zeroed, each after its bitmap
    /// and before the block pointing at it, as in [`Fs::bmap_alloc`]).
    fn leaf_holder(
        &mut self,
        ino: u32,
        inode: &mut Inode,
        lblk: u64,
        goal: u64,
    ) -> Result<(Option<u32>, usize, usize), Errno> {
        let (depth, path) = self.block_path(lblk)?;
        let span = if depth == 0 { N_DIRECT } else { self.ptrs_per_block as usize };
        let mut holder: Option<u32> = None;
        let mut goal = goal;
        for &slot in path.iter().take(depth) {
            let ptr = match holder {
                None => inode.block(slot),
                Some(h) => self.cache.read(h as u64, |b| le32(b, slot * 4))?,
            };
            if ptr != 0 {
                self.check_ptr(ptr, "indirect block")?;
                holder = Some(ptr);
                goal = ptr as u64 + 1;
                continue;
            }
            let new = self.alloc_block(goal)?;
            self.cache.zeroed(new as u64)?;
            // A new indirect block: its data blocks and bitmap go in its
            // level of the write order.
            self.fresh_after_its_bit(new as u64)?;
            self.link_blocks(ino, inode, holder, slot, new, 1)?;
            goal = new as u64 + 1;
            holder = Some(new);
        }
        Ok((holder, path[depth], span - path[depth]))
    }

    /// Points slots `slot..slot + n` of `holder` (or of the inode) at the
    /// new blocks `first..first + n`, whose contents are in the cache:
    /// their bitmap and each of them before the holder (one edge per
    /// block, one for the bitmap), the holder changed once for the run.
    fn link_blocks(
        &mut self,
        ino: u32,
        inode: &mut Inode,
        holder: Option<u32>,
        slot: usize,
        first: u32,
        n: usize,
    ) -> Result<(), Errno> {
        let bitmap = self.block_bitmap_of(first as u64);
        match holder {
            None => {
                self.inode_after(ino, bitmap);
                for k in 0..n {
                    self.inode_after(ino, first as u64 + k as u64);
                    inode.set_block(slot + k, first + k as u32);
                }
            }
            Some(h) => {
                self.cache.order(bitmap, h as u64)?;
                for k in 0..n {
                    self.cache.order(first as u64 + k as u64, h as u64)?;
                }
                self.cache.modify(h as u64, |b| {
                    for k in 0..n {
                        put32(b, (slot + k) * 4, first + k as u32);
                    }
                })?;
            }
        }
        let per_block = (self.block_bytes / SECTOR_BYTES) as u64;
        let v = inode.sectors() as u64 + n as u64 * per_block;
        inode.set_sectors(u32::try_from(v).map_err(|_| EFBIG)?);
        Ok(())
    }

    /// Makes every hole among logical blocks `first..first + map.len()`
    /// of `ino` exist: `map[k]` is logical block `first + k`'s block, or 0
    /// where it is not known; on return each is the block there (found in
    /// the map, or new: zeroed in the cache). New blocks come from the
    /// first free block at or after `goal` in runs that follow each other
    /// ([`Fs::alloc_blocks`]), each run linked into the block map with
    /// one change of its holder ([`Fs::link_blocks`]): the write side of
    /// [`Fs::map_blocks`], for [`Fs::write_from`]. Before, each block
    /// walked the map from the inode and went through the bitmap, the
    /// group descriptor and the superblock by itself (about 10 cache
    /// lookups a block). Returns how many blocks it allocated and how
    /// many of the unknown ones it found already there. On an error the
    /// blocks allocated so far are linked (the inode, which the caller
    /// writes, says so) and the error is returned.
    pub(crate) fn alloc_run(
        &mut self,
        ino: u32,
        inode: &mut Inode,
        first: u64,
        map: &mut [u32],
        goal: u64,
    ) -> Result<(usize, usize), Errno> {
        let (mut allocated, mut found) = (0, 0);
        let mut goal = goal;
        let mut k = 0;
        while k < map.len() {
            if map[k] != 0 {
                goal = map[k] as u64 + 1;
                k += 1;
                continue;
            }
            let (holder, slot, span) = self.leaf_holder(ino, inode, first + k as u64, goal)?;
            let n = span.min(map.len() - k);
            // The pointers there now, of this holder's part of the run.
            let mut there = [0u32; 64];
            let there = &mut there[..n.min(64)];
            match holder {
                None => there.iter_mut().enumerate().for_each(|(j, p)| *p = inode.block(slot + j)),
                Some(h) => self.cache.read(h as u64, |b| {
                    there.iter_mut().enumerate().for_each(|(j, p)| *p = le32(b, (slot + j) * 4))
                })?,
            }
            let n = there.len();
            let mut j = 0;
            while j < n {
                if map[k + j] != 0 || there[j] != 0 {
                    if map[k + j] == 0 {
                        self.check_ptr(there[j], "data block")?;
                        map[k + j] = there[j];
                        found += 1;
                    }
                    goal = map[k + j] as u64 + 1;
                    j += 1;
                    continue;
                }
                // The holes from here on in this holder, taken together.
                let holes = (j..n).take_while(|&x| map[k + x] == 0 && there[x] == 0).count();
                let (new, got) = self.alloc_blocks(goal, holes)?;
                for b in new..new + got as u32 {
                    self.cache.zeroed(b as u64)?;
                }
                self.link_blocks(ino, inode, holder, slot + j, new, got)?;
                for x in 0..got {
                    map[k + j + x] = new + x as u32;
                }
                allocated += got;
                goal = new as u64 + got as u64;
                j += got;
            }
            k += n;
        }
        Ok((allocated, found))
    }

    fn indirect_entries(&mut self, block: u32) -> Result<Vec<u32>, Errno> {
        let p = self.ptrs_per_block as usize;
        self.cache.read(block as u64, |b| (0..p).map(|i| le32(b, i * 4)).collect())
    }

    /// Every block under indirect block `block` (of `level`: 1 = its
    /// entries are data blocks), checked, into `cut.free`.
    fn collect_all(&mut self, block: u32, level: u32, cut: &mut Cut) -> Result<(), Errno> {
        for entry in self.indirect_entries(block)? {
            if entry == 0 {
                continue;
            }
            self.check_ptr(entry, "indirect entry")?;
            if level > 1 {
                self.collect_all(entry, level - 1, cut)?;
            }
            cut.free.push(entry);
        }
        Ok(())
    }

    /// The blocks under `block` (of `level`, mapping logical blocks from
    /// `first`) that lie at or past logical block `keep` (> `first`).
    fn collect_from(
        &mut self,
        block: u32,
        level: u32,
        first: u64,
        keep: u64,
        cut: &mut Cut,
    ) -> Result<(), Errno> {
        let p = self.ptrs_per_block;
        let span = p.pow(level - 1);
        let entries = self.indirect_entries(block)?;
        let rel = keep - first;
        let whole_from = rel.div_ceil(span) as usize;
        if level > 1 && !rel.is_multiple_of(span) {
            let k = (rel / span) as usize;
            if k < entries.len() && entries[k] != 0 {
                self.check_ptr(entries[k], "indirect entry")?;
                self.collect_from(entries[k], level - 1, first + k as u64 * span, keep, cut)?;
            }
        }
        let mut any = false;
        for &entry in entries.iter().skip(whole_from) {
            if entry == 0 {
                continue;
            }
            self.check_ptr(entry, "indirect entry")?;
            if level > 1 {
                self.collect_all(entry, level - 1, cut)?;
            }
            cut.free.push(entry);
            any = true;
        }
        if any {
            cut.clear_from.push((block, whole_from));
        }
        Ok(())
    }

    /// Frees every block of inode `ino` from logical block `keep` on and
    /// writes the inode (whose size the caller set). Everything is found
    /// and checked before anything changes: a damaged map is `EIO` with
    /// nothing written.
    pub(crate) fn cut(&mut self, ino: u32, inode: &mut Inode, keep: u64) -> Result<(), Errno> {
        let (cut, cleared_slots) = self.plan_cut(inode, keep)?;
        self.apply_cut(ino, inode, cut, cleared_slots)
    }

    /// Checks that every block of `inode` from logical block `keep` on can
    /// be freed (every pointer in range), changing nothing: for an
    /// operation that must not start a deletion it cannot finish.
    pub(crate) fn check_cut(&mut self, inode: &Inode, keep: u64) -> Result<(), Errno> {
        self.plan_cut(inode, keep).map(|_| ())
    }

    /// Every block of `inode`'s map: data and indirect blocks, checked
    /// (for `fsync`, which writes them).
    pub(crate) fn file_blocks(&mut self, inode: &Inode) -> Result<Vec<u32>, Errno> {
        Ok(self.plan_cut(inode, 0)?.0.free)
    }

    fn plan_cut(&mut self, inode: &Inode, keep: u64) -> Result<(Cut, Vec<usize>), Errno> {
        let p = self.ptrs_per_block;
        let mut cut = Cut::default();
        let mut cleared_slots = Vec::new();
        for slot in (keep.min(N_DIRECT as u64) as usize)..N_DIRECT {
            let b = inode.block(slot);
            if b != 0 {
                self.check_ptr(b, "direct block")?;
                cut.free.push(b);
                cleared_slots.push(slot);
            }
        }
        let roots = [
            (IND, 1u32, N_DIRECT as u64),
            (DIND, 2, N_DIRECT as u64 + p),
            (TIND, 3, N_DIRECT as u64 + p + p * p),
        ];
        for (slot, level, first) in roots {
            let root = inode.block(slot);
            if root == 0 {
                continue;
            }
            self.check_ptr(root, "indirect root")?;
            if keep <= first {
                self.collect_all(root, level, &mut cut)?;
                cut.free.push(root);
                cleared_slots.push(slot);
            } else if keep < first + p.pow(level) {
                self.collect_from(root, level, first, keep, &mut cut)?;
            }
        }
        Ok((cut, cleared_slots))
    }

    fn apply_cut(
        &mut self,
        ino: u32,
        inode: &mut Inode,
        cut: Cut,
        cleared_slots: Vec<usize>,
    ) -> Result<(), Errno> {
        // Pointers first...
        for &slot in &cleared_slots {
            inode.set_block(slot, 0);
        }
        for &(block, from) in &cut.clear_from {
            self.cache.modify(block as u64, |b| b[from * 4..].fill(0))?;
        }
        for _ in 0..cut.free.len() {
            self.add_sectors(inode, -1)?;
        }
        self.write_inode(ino, inode)?;
        // The freed blocks' dirty contents are no file's now: dropped with
        // their waits before any bitmap is ordered after the inode's block
        // (`Cache::discard`). Ordered first, the inode's block (which waits
        // for the file's indirect blocks, which wait for the bitmap) made
        // a cycle with the bitmap, broken by writing the bitmap and what
        // it waits for: blocks of the very file being deleted.
        for &block in &cut.free {
            self.cache.discard(block as u64);
        }
        // ...then the bits, each bitmap after every block that pointed.
        let (inode_block, _) = self.inode_location(ino)?;
        for &block in &cut.free {
            let bitmap = self.block_bitmap_of(block as u64);
            self.cache.order(inode_block, bitmap)?;
            for &(holder, _) in &cut.clear_from {
                self.cache.order(holder as u64, bitmap)?;
            }
            self.free_block(block)?;
        }
        Ok(())
    }

    /// Releases the extended-attribute block of a deleted inode (one
    /// reference less; freed at none), after the inode's block.
    pub(crate) fn release_xattr(&mut self, ino: u32, inode: &mut Inode) -> Result<(), Errno> {
        let block = inode.file_acl();
        if block == 0 {
            return Ok(());
        }
        self.check_ptr(block, "attribute block")?;
        let header = self.cache.read(block as u64, |b| (le32(b, 0), le32(b, 4)))?;
        if header.0 != 0xEA02_0000 || header.1 == 0 {
            return Err(self.damage(format!("inode {ino}: attribute block {block} has a bad header")));
        }
        inode.set_file_acl(0);
        self.add_sectors(inode, -1)?;
        self.write_inode(ino, inode)?;
        let (inode_block, _) = self.inode_location(ino)?;
        self.cache.order(inode_block, block as u64)?;
        if header.1 > 1 {
            self.cache.modify(block as u64, |b| put32(b, 4, header.1 - 1))
        } else {
            let bitmap = self.block_bitmap_of(block as u64);
            self.cache.order(inode_block, bitmap)?;
            self.free_block(block)
        }
    }

    /// The blocks holding logical blocks `lblks` of `inode` (0 for a
    /// hole), each indirect block read once for the run rather than once
    /// per block: a sequential read of 8 KiB in the double-indirect range
    /// of 1 KiB blocks took 24 cache lookups to map, now 8 or 9 (R2's
    /// `read` row: 165 lookups per 8 KiB read before, in the server's
    /// counters).
    pub(crate) fn map_blocks(
        &mut self,
        inode: &Inode,
        lblks: core::ops::Range<u64>,
    ) -> Result<Vec<u32>, Errno> {
        let mut out = Vec::with_capacity(lblks.end.saturating_sub(lblks.start).min(1 << 16) as usize);
        self.map_blocks_into(inode, lblks, &mut out)?;
        Ok(out)
    }

    /// [`Fs::map_blocks`], appended to `out` (a reader's buffer, kept
    /// between reads so that a read allocates nothing). Each indirect
    /// block is looked up once per run of logical blocks under it, and
    /// only the pointers the run needs are read out of it: copying all of
    /// a 1 KiB block's 256 pointers for each 8 KiB read was the read
    /// row's biggest user-side cost (`cargo xtask profile`, 8 % of
    /// `ext2fs`'s samples; docs/filesystem.md, "R2 on disk").
    pub(crate) fn map_blocks_into(
        &mut self,
        inode: &Inode,
        lblks: core::ops::Range<u64>,
        out: &mut Vec<u32>,
    ) -> Result<(), Errno> {
        // At each upper level (double and triple indirect), the block
        // last read, the first index read from it and the pointers read
        // from there on: every index the range needs under that block at
        // once, so that each upper block is looked up once per call, as
        // before (the cache's hit counts and LRU order, which benchmark
        // B's transfer counts depend on, stay as they were).
        let mut memo: [(u32, usize, Vec<u32>); 3] = Default::default();
        let per_block = self.ptrs_per_block;
        let mut l = lblks.start;
        while l < lblks.end {
            let (depth, path) = self.block_path(l)?;
            if depth == 0 {
                out.push(self.checked_data_ptr(inode.block(path[0]))?);
                l += 1;
                continue;
            }
            // Down to the leaf indirect block through the upper levels.
            let mut ptr = inode.block(path[0]);
            for m in 1..depth {
                if ptr == 0 {
                    break;
                }
                let index = path[m];
                let memo_m = &memo[m - 1];
                let is_memo = memo_m.0 == ptr && (memo_m.1..memo_m.1 + memo_m.2.len()).contains(&index);
                if !is_memo {
                    self.check_ptr(ptr, "indirect block")?;
                    // Logical blocks per entry here, and where `l` is in its entry.
                    let span = per_block.pow((depth - m) as u32);
                    let within: u64 =
                        (m + 1..=depth).map(|k| path[k] as u64 * per_block.pow((depth - k) as u32)).sum();
                    let needed = ((within + (lblks.end - l) - 1) / span + 1).min(per_block - index as u64);
                    let mut ptrs = core::mem::take(&mut memo[m - 1].2);
                    ptrs.clear();
                    self.cache.read(ptr as u64, |b| {
                        ptrs.extend((index..index + needed as usize).map(|k| le32(b, k * 4)));
                    })?;
                    memo[m - 1] = (ptr, index, ptrs);
                }
                ptr = memo[m - 1].2[index - memo[m - 1].1];
            }
            // The logical blocks from `l` that the same leaf maps.
            let index = path[depth];
            let n = (per_block - index as u64).min(lblks.end - l);
            if ptr == 0 {
                out.extend(core::iter::repeat_n(0, n as usize));
            } else {
                self.check_ptr(ptr, "indirect block")?;
                let from = out.len();
                self.cache.read(ptr as u64, |b| {
                    out.extend((index..index + n as usize).map(|k| le32(b, k * 4)));
                })?;
                for &ptr in &out[from..] {
                    self.checked_data_ptr(ptr)?;
                }
            }
            l += n;
        }
        Ok(())
    }

    /// A data block pointer as read (0: a hole), checked.
    fn checked_data_ptr(&mut self, ptr: u32) -> Result<u32, Errno> {
        if ptr != 0 {
            self.check_ptr(ptr, "data block")?;
        }
        Ok(ptr)
    }
}
