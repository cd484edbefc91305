//! The recovery scan: which committed transactions the log holds and
//! which of their blocks go home, in the order `fs/jbd2/recovery.c`
//! replays them.
//!
//! `recovery.c` reads the log three times (`PASS_SCAN` finds the last
//! committed transaction, `PASS_REVOKE` gathers the revoke records of
//! the committed ones, `PASS_REPLAY` writes each tagged block home unless
//! a revoke record of the same or a later transaction names it). Here one
//! walk gathers the tags and revokes of each transaction, a transaction's
//! go into the result only when its commit block is found (and its
//! checksum holds), and the revokes are applied at the end: the same
//! result with the log read once. Later copies of a block come later in
//! [`Plan::writes`], so writing them in order leaves the last committed
//! copy, as the kernel's replay does.
//!
//! What it is not: I/O, or the log's data. The plan names log blocks by
//! their index in the journal; the caller reads them again to copy them
//! home, so the plan stays small however long the log is.

use super::{HEADER_BYTES, JournalSuperblock, be32, blocktype, commit, crc32_be, header, tag};
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// One block to write home: file-system block `home` gets the journal's
/// block `log_block`, with its first word put back to the magic number if
/// `escaped`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HomeWrite {
    pub home: u64,
    pub log_block: u32,
    pub escaped: bool,
}

/// What the log holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The blocks to write home, in replay order.
    pub writes: Vec<HomeWrite>,
    /// Committed transactions found.
    pub transactions: u32,
    /// The sequence number after the last committed transaction: the
    /// journal superblock's `s_sequence` once the log is emptied.
    pub next_sequence: u32,
    /// Tagged blocks left out because a revoke record covered them.
    pub revoked: u32,
    /// Why the scan stopped (for the server's log).
    pub end: String,
}

/// Scans the log described by `sb`, reading its blocks by index with
/// `read` (index 0 is the journal superblock), and checks every tag
/// against a file system of `fs_blocks` blocks. An `Err` is a log this
/// cannot replay safely (a tag outside the file system, a revoke record
/// past its block, a read error); nothing is to be written then.
pub fn scan(
    sb: &JournalSuperblock,
    fs_blocks: u64,
    mut read: impl FnMut(u32) -> Result<Vec<u8>, String>,
) -> Result<Plan, String> {
    let mut plan = Plan { next_sequence: sb.sequence, ..Plan::default() };
    if sb.start == 0 {
        plan.end = String::from("the log is empty");
        return Ok(plan);
    }
    let bs = sb.block_bytes as usize;
    let tag_bytes = sb.tag_bytes();
    // block -> the latest committed transaction revoking it.
    let mut revoked: BTreeMap<u64, u32> = BTreeMap::new();
    // Everything committed: (transaction, write).
    let mut committed: Vec<(u32, HomeWrite)> = Vec::new();
    // The open transaction's tags and revokes, and its running checksum.
    let mut pending: Vec<HomeWrite> = Vec::new();
    let mut pending_revokes: Vec<u64> = Vec::new();
    let mut crc = !0u32;
    let mut at = sb.start;
    let mut seq = sb.sequence;
    // A valid log visits each block at most once before its sequence
    // numbers stop matching; the bound only keeps a crafted one finite.
    let mut budget = sb.maxlen as u64 * 2;
    loop {
        if budget == 0 {
            plan.end = String::from("the log wraps on itself");
            break;
        }
        budget -= 1;
        let b = read(at)?;
        let Some((kind, block_seq)) = header(&b) else {
            plan.end = format!("no magic number at log block {at}");
            break;
        };
        if block_seq != seq {
            plan.end = format!("log block {at} has sequence {block_seq}, want {seq}");
            break;
        }
        match kind {
            blocktype::DESCRIPTOR => {
                if sb.has_checksum() {
                    crc = crc32_be(crc, &b);
                }
                let mut offset = HEADER_BYTES;
                let mut data_at = at;
                loop {
                    if offset + tag_bytes > bs {
                        return Err(format!("descriptor at log block {at}: tags run past the block"));
                    }
                    let low = be32(&b, offset) as u64;
                    // t_flags is the 16-bit field at tag byte 6.
                    let flags = u16::from_be_bytes([b[offset + 6], b[offset + 7]]) as u32;
                    let high = if sb.is_64bit() { be32(&b, offset + 8) as u64 } else { 0 };
                    let home = high << 32 | low;
                    offset += tag_bytes;
                    if flags & tag::SAME_UUID == 0 {
                        offset += 16;
                    }
                    if home >= fs_blocks || home == 0 {
                        return Err(format!(
                            "descriptor at log block {at}: tag names block {home}, outside 1..{fs_blocks}"
                        ));
                    }
                    data_at = sb.next(data_at);
                    if data_at == sb.start && !pending.is_empty() {
                        return Err(format!("descriptor at log block {at}: more tags than the log holds"));
                    }
                    if sb.has_checksum() {
                        crc = crc32_be(crc, &read(data_at)?);
                    }
                    pending.push(HomeWrite { home, log_block: data_at, escaped: flags & tag::ESCAPE != 0 });
                    if flags & tag::LAST_TAG != 0 {
                        break;
                    }
                }
                at = sb.next(data_at);
            }
            blocktype::COMMIT => {
                if sb.has_checksum() {
                    let found = be32(&b, commit::CHKSUM);
                    let (kind, size) = (b[commit::CHKSUM_TYPE], b[commit::CHKSUM_SIZE]);
                    let good =
                        (kind == super::CRC32_CHKSUM && size == super::CRC32_CHKSUM_SIZE && found == crc)
                            || (kind == 0 && size == 0 && found == 0);
                    if !good {
                        // recovery.c's chksum_error: with async commit the
                        // transaction simply did not commit (its blocks
                        // were torn by a power cut); without, jbd2 calls
                        // it corrupt, and replays up to it just the same.
                        plan.end = format!(
                            "transaction {seq}'s commit block fails its checksum (found {found:#x}, computed {crc:#x}){}",
                            if sb.is_async_commit() { "" } else { ": a corrupt journal" }
                        );
                        break;
                    }
                }
                crc = !0;
                committed.extend(pending.drain(..).map(|w| (seq, w)));
                for block in pending_revokes.drain(..) {
                    let e = revoked.entry(block).or_insert(seq);
                    *e = (*e).max(seq);
                }
                plan.transactions += 1;
                seq = seq.wrapping_add(1);
                plan.next_sequence = seq;
                at = sb.next(at);
            }
            blocktype::REVOKE => {
                let count = be32(&b, HEADER_BYTES) as usize;
                let rec = if sb.is_64bit() { 8 } else { 4 };
                if count < HEADER_BYTES + 4 || count > bs {
                    return Err(format!("revoke block at log block {at}: r_count {count} outside 16..={bs}"));
                }
                let mut offset = HEADER_BYTES + 4;
                while offset + rec <= count {
                    let block = if rec == 8 {
                        (be32(&b, offset) as u64) << 32 | be32(&b, offset + 4) as u64
                    } else {
                        be32(&b, offset) as u64
                    };
                    pending_revokes.push(block);
                    offset += rec;
                }
                at = sb.next(at);
            }
            other => {
                plan.end = format!("log block {at} has block type {other}");
                break;
            }
        }
    }
    for (seq, w) in committed {
        // recovery.c's jbd2_journal_test_revoke: revoked when a revoke
        // record of this or a later transaction names the block.
        if revoked.get(&w.home).is_some_and(|&r| r.wrapping_sub(seq) as i32 >= 0) {
            plan.revoked += 1;
            continue;
        }
        plan.writes.push(w);
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::super::{jsb, put_be32, put_header, tag as flag};
    use super::*;
    use alloc::vec;

    const BS: usize = 1024;

    /// A log of 64 blocks with `blocks` as its blocks 1.. (block 0 the
    /// superblock), starting at block 1 with sequence 7.
    fn journal(blocks: Vec<Vec<u8>>, compat: u32) -> (JournalSuperblock, Vec<Vec<u8>>) {
        let mut sbb = vec![0u8; BS];
        put_header(&mut sbb, blocktype::SUPERBLOCK_V2, 0);
        put_be32(&mut sbb, jsb::BLOCKSIZE, BS as u32);
        put_be32(&mut sbb, jsb::MAXLEN, 64);
        put_be32(&mut sbb, jsb::FIRST, 1);
        put_be32(&mut sbb, jsb::SEQUENCE, 7);
        put_be32(&mut sbb, jsb::START, 1);
        put_be32(&mut sbb, jsb::FEATURE_COMPAT, compat);
        put_be32(&mut sbb, jsb::FEATURE_INCOMPAT, super::super::feature::INCOMPAT_REVOKE);
        let sb = JournalSuperblock::parse(&sbb, BS, 64).unwrap();
        let mut all = vec![sbb];
        all.extend(blocks);
        all.resize(64, vec![0u8; BS]);
        (sb, all)
    }

    fn descriptor(seq: u32, homes: &[(u32, u32)]) -> Vec<u8> {
        let mut b = vec![0u8; BS];
        put_header(&mut b, blocktype::DESCRIPTOR, seq);
        let mut at = HEADER_BYTES;
        for (i, &(home, flags)) in homes.iter().enumerate() {
            put_be32(&mut b, at, home);
            let mut f = flags | if i > 0 { flag::SAME_UUID } else { 0 };
            if i + 1 == homes.len() {
                f |= flag::LAST_TAG;
            }
            b[at + 6..at + 8].copy_from_slice(&(f as u16).to_be_bytes());
            at += 8 + if i == 0 { 16 } else { 0 };
        }
        b
    }

    fn block(seq: u32, kind: u32) -> Vec<u8> {
        let mut b = vec![0u8; BS];
        put_header(&mut b, kind, seq);
        b
    }

    fn run(sb: &JournalSuperblock, all: &[Vec<u8>]) -> Result<Plan, String> {
        scan(sb, 8192, |i| Ok(all[i as usize].clone()))
    }

    #[test]
    fn committed_transactions_replay_and_an_uncommitted_one_does_not() {
        let data = vec![0x55u8; BS];
        let (sb, all) = journal(
            vec![
                descriptor(7, &[(300, 0), (301, flag::ESCAPE)]),
                data.clone(),
                data.clone(),
                block(7, blocktype::COMMIT),
                descriptor(8, &[(302, 0)]),
                data.clone(),
                // no commit for 8
            ],
            0,
        );
        let plan = run(&sb, &all).unwrap();
        assert_eq!(plan.transactions, 1);
        assert_eq!(plan.next_sequence, 8);
        assert_eq!(
            plan.writes,
            vec![
                HomeWrite { home: 300, log_block: 2, escaped: false },
                HomeWrite { home: 301, log_block: 3, escaped: true }
            ]
        );
    }

    #[test]
    fn a_revoke_covers_the_same_and_earlier_transactions_only() {
        let data = vec![1u8; BS];
        let mut revoke = block(8, blocktype::REVOKE);
        put_be32(&mut revoke, HEADER_BYTES, 20);
        put_be32(&mut revoke, 16, 300);
        let (sb, all) = journal(
            vec![
                descriptor(7, &[(300, 0), (301, 0)]),
                data.clone(),
                data.clone(),
                block(7, blocktype::COMMIT),
                revoke,
                block(8, blocktype::COMMIT),
                descriptor(9, &[(300, 0)]),
                data.clone(),
                block(9, blocktype::COMMIT),
            ],
            0,
        );
        let plan = run(&sb, &all).unwrap();
        assert_eq!(plan.transactions, 3);
        assert_eq!(plan.revoked, 1);
        let homes: Vec<(u64, u32)> = plan.writes.iter().map(|w| (w.home, w.log_block)).collect();
        assert_eq!(homes, vec![(301, 3), (300, 8)]);
    }

    #[test]
    fn a_commit_whose_checksum_fails_ends_the_log() {
        let data = vec![9u8; BS];
        let desc = descriptor(7, &[(400, 0)]);
        let mut good = block(7, blocktype::COMMIT);
        good[commit::CHKSUM_TYPE] = super::super::CRC32_CHKSUM;
        good[commit::CHKSUM_SIZE] = super::super::CRC32_CHKSUM_SIZE;
        let crc = crc32_be(crc32_be(!0, &desc), &data);
        put_be32(&mut good, commit::CHKSUM, crc);
        let desc8 = descriptor(8, &[(401, 0)]);
        let mut torn = block(8, blocktype::COMMIT);
        torn[commit::CHKSUM_TYPE] = super::super::CRC32_CHKSUM;
        torn[commit::CHKSUM_SIZE] = super::super::CRC32_CHKSUM_SIZE;
        // The checksum of a data block that never reached the disk.
        put_be32(&mut torn, commit::CHKSUM, crc32_be(crc32_be(!0, &desc8), &[7u8; BS]));
        let (sb, all) = journal(vec![desc, data.clone(), good, desc8, data.clone(), torn], 1);
        let plan = run(&sb, &all).unwrap();
        assert_eq!(plan.transactions, 1, "{}", plan.end);
        assert_eq!(plan.writes.len(), 1);
        assert!(plan.end.contains("fails its checksum"), "{}", plan.end);
    }

    #[test]
    fn bad_logs_are_refused_before_anything_is_written() {
        let data = vec![0u8; BS];
        // A tag outside the file system.
        let (sb, all) =
            journal(vec![descriptor(7, &[(9000, 0)]), data.clone(), block(7, blocktype::COMMIT)], 0);
        assert!(run(&sb, &all).unwrap_err().contains("outside"));
        // Tags that never end (no LAST_TAG): they run past the block.
        let mut d = descriptor(7, &[(300, 0)]);
        d[HEADER_BYTES + 7] &= !(flag::LAST_TAG as u8);
        for at in (HEADER_BYTES + 24..BS - 8).step_by(8) {
            put_be32(&mut d, at, 300);
            d[at + 7] = flag::SAME_UUID as u8;
        }
        let (sb, all) = journal(vec![d], 0);
        assert!(run(&sb, &all).is_err());
        // A revoke record longer than its block.
        let mut r = block(7, blocktype::REVOKE);
        put_be32(&mut r, HEADER_BYTES, 5000);
        let (sb, all) = journal(vec![r], 0);
        assert!(run(&sb, &all).unwrap_err().contains("r_count"));
        // A read error.
        let (sb, _) = journal(vec![], 0);
        assert!(scan(&sb, 8192, |_| Err(String::from("EIO"))).is_err());
    }

    #[test]
    fn an_empty_log_replays_nothing() {
        let (mut sb, all) = journal(vec![], 0);
        sb.start = 0;
        let plan = run(&sb, &all).unwrap();
        assert_eq!((plan.transactions, plan.writes.len(), plan.next_sequence), (0, 0, 7));
    }
}
