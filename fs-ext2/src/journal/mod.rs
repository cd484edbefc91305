//! ext3/ext4's journal (the jbd2 on-disk format) as this crate reads it:
//! the journal superblock, the descriptor, commit and revoke blocks, and
//! the recovery scan that turns a log into the list of blocks to write
//! home (`recover.rs`).
//!
//! The format is the Linux kernel's `Documentation/filesystems/ext4/journal.rst`
//! and `include/linux/jbd2.h`; the recovery follows `fs/jbd2/recovery.c`
//! (the same file e2fsprogs builds into `e2fsck` and `debugfs`), whose
//! three passes (scan for the end of the log, collect revoke records,
//! replay) are kept. Every field of the journal is big-endian, unlike the
//! rest of ext2.
//!
//! What it is not: I/O. The functions here take the journal's blocks as
//! bytes and give back what to write where; `crate::fs` reads inode 8's
//! blocks, writes the result home and flushes (`fs/journal.rs`). Nor is
//! it every journal: an external journal device, the `CSUM_V2`/`CSUM_V3`
//! checksums (crc32c) and fast commits are refused at mount, never
//! guessed at.
//!
//! Invariants: nothing read from the log is trusted. A journal superblock
//! that is not one, a block size other than the file system's, a log
//! longer than inode 8, an unknown incompatible feature, a descriptor tag
//! naming a block outside the file system, a revoke record running past
//! its block: each is an `Err` with what is wrong, before anything is
//! written. A transaction whose commit block is missing or fails its
//! checksum ends the log (`recovery.c`'s `PASS_SCAN`), as does any block
//! without the magic number or with another sequence number.

#![forbid(unsafe_code)]

pub mod recover;

use alloc::format;
use alloc::string::String;

/// `JBD2_MAGIC_NUMBER`: the first word of every journal metadata block.
pub const MAGIC: u32 = 0xC03B_3998;

/// Block types (`h_blocktype`).
pub mod blocktype {
    pub const DESCRIPTOR: u32 = 1;
    pub const COMMIT: u32 = 2;
    pub const SUPERBLOCK_V1: u32 = 3;
    pub const SUPERBLOCK_V2: u32 = 4;
    pub const REVOKE: u32 = 5;
}

/// Journal feature bits (`JBD2_FEATURE_*`).
pub mod feature {
    /// The commit block carries a crc32 (big-endian, `crc32_be`) of the
    /// transaction's descriptor and data blocks (checksum "v1").
    pub const COMPAT_CHECKSUM: u32 = 0x1;
    pub const INCOMPAT_REVOKE: u32 = 0x1;
    pub const INCOMPAT_64BIT: u32 = 0x2;
    /// The commit block is written without waiting for the blocks before
    /// it: a commit whose checksum fails is the end of the log, not a
    /// corruption (`recovery.c`, `chksum_error`).
    pub const INCOMPAT_ASYNC_COMMIT: u32 = 0x4;
    pub const INCOMPAT_CSUM_V2: u32 = 0x8;
    pub const INCOMPAT_CSUM_V3: u32 = 0x10;
    pub const INCOMPAT_FAST_COMMIT: u32 = 0x20;
    /// What this crate reads (and, for the commit path, writes).
    pub const INCOMPAT_SUPPORTED: u32 = INCOMPAT_REVOKE | INCOMPAT_64BIT | INCOMPAT_ASYNC_COMMIT;
    pub const COMPAT_SUPPORTED: u32 = COMPAT_CHECKSUM;
}

/// Descriptor tag flags (`JBD2_FLAG_*`).
pub mod tag {
    /// The block's first word was the magic number and was zeroed in the
    /// log; put it back at replay.
    pub const ESCAPE: u32 = 1;
    /// No 16-byte UUID follows the tag.
    pub const SAME_UUID: u32 = 2;
    pub const DELETED: u32 = 4;
    pub const LAST_TAG: u32 = 8;
}

/// Commit block checksum type (`JBD2_CRC32_CHKSUM`) and size.
pub const CRC32_CHKSUM: u8 = 1;
pub const CRC32_CHKSUM_SIZE: u8 = 4;

/// Bytes of the block header (magic, type, sequence).
pub const HEADER_BYTES: usize = 12;

/// Journal superblock field offsets (`journal_superblock_t`).
pub mod jsb {
    pub const BLOCKSIZE: usize = 0x0C;
    pub const MAXLEN: usize = 0x10;
    pub const FIRST: usize = 0x14;
    pub const SEQUENCE: usize = 0x18;
    pub const START: usize = 0x1C;
    pub const ERRNO: usize = 0x20;
    pub const FEATURE_COMPAT: usize = 0x24;
    pub const FEATURE_INCOMPAT: usize = 0x28;
    pub const FEATURE_RO_COMPAT: usize = 0x2C;
    pub const NR_USERS: usize = 0x40;
}

/// Commit block field offsets (`struct commit_header`).
pub mod commit {
    pub const CHKSUM_TYPE: usize = 0x0C;
    pub const CHKSUM_SIZE: usize = 0x0D;
    pub const CHKSUM: usize = 0x10;
    pub const COMMIT_SEC: usize = 0x30;
    pub const COMMIT_NSEC: usize = 0x38;
}

pub fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

pub fn put_be32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// A block's header: (type, sequence), or `None` without the magic.
pub fn header(b: &[u8]) -> Option<(u32, u32)> {
    if b.len() < HEADER_BYTES || be32(b, 0) != MAGIC {
        return None;
    }
    Some((be32(b, 4), be32(b, 8)))
}

pub fn put_header(b: &mut [u8], blocktype: u32, sequence: u32) {
    put_be32(b, 0, MAGIC);
    put_be32(b, 4, blocktype);
    put_be32(b, 8, sequence);
}

/// The journal superblock's fields this crate uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalSuperblock {
    pub version: u32,
    pub block_bytes: u32,
    /// Blocks in the journal, the superblock included.
    pub maxlen: u32,
    /// The first block of the log proper (after the superblock).
    pub first: u32,
    /// The sequence number of the first transaction in the log.
    pub sequence: u32,
    /// The block where the log starts; 0: the log is empty.
    pub start: u32,
    pub feature_compat: u32,
    pub feature_incompat: u32,
    pub feature_ro_compat: u32,
}

impl JournalSuperblock {
    /// Parses and checks the journal superblock (the journal's block 0)
    /// against the file system's block size and the number of blocks
    /// inode 8 maps.
    pub fn parse(b: &[u8], fs_block_bytes: usize, mapped_blocks: u64) -> Result<JournalSuperblock, String> {
        let Some((kind, _)) = header(b) else {
            return Err(format!("journal superblock: magic {:#010x}, want {MAGIC:#010x}", be32(b, 0)));
        };
        let version = match kind {
            blocktype::SUPERBLOCK_V1 => 1,
            blocktype::SUPERBLOCK_V2 => 2,
            other => return Err(format!("journal superblock: block type {other}, want 3 or 4")),
        };
        let v2 = version == 2;
        let sb = JournalSuperblock {
            version,
            block_bytes: be32(b, jsb::BLOCKSIZE),
            maxlen: be32(b, jsb::MAXLEN),
            first: be32(b, jsb::FIRST),
            sequence: be32(b, jsb::SEQUENCE),
            start: be32(b, jsb::START),
            feature_compat: if v2 { be32(b, jsb::FEATURE_COMPAT) } else { 0 },
            feature_incompat: if v2 { be32(b, jsb::FEATURE_INCOMPAT) } else { 0 },
            feature_ro_compat: if v2 { be32(b, jsb::FEATURE_RO_COMPAT) } else { 0 },
        };
        if sb.block_bytes as usize != fs_block_bytes {
            return Err(format!(
                "journal block size {} is not the file system's {fs_block_bytes}",
                sb.block_bytes
            ));
        }
        if v2 && be32(b, jsb::NR_USERS) > 1 {
            return Err(format!(
                "journal shared by {} file systems (an external journal)",
                be32(b, jsb::NR_USERS)
            ));
        }
        let unknown = sb.feature_incompat & !feature::INCOMPAT_SUPPORTED;
        if unknown != 0 {
            return Err(format!(
                "journal incompatible features {unknown:#x} (this reads revoke, 64bit and async_commit)"
            ));
        }
        if sb.maxlen < 2 || sb.maxlen as u64 > mapped_blocks {
            return Err(format!("journal of {} blocks in an inode of {mapped_blocks}", sb.maxlen));
        }
        if sb.first == 0 || sb.first >= sb.maxlen {
            return Err(format!("journal's first log block {} outside 1..{}", sb.first, sb.maxlen));
        }
        if sb.start != 0 && (sb.start < sb.first || sb.start >= sb.maxlen) {
            return Err(format!("journal start {} outside {}..{}", sb.start, sb.first, sb.maxlen));
        }
        Ok(sb)
    }

    pub fn has_checksum(&self) -> bool {
        self.feature_compat & feature::COMPAT_CHECKSUM != 0
    }

    pub fn is_async_commit(&self) -> bool {
        self.feature_incompat & feature::INCOMPAT_ASYNC_COMMIT != 0
    }

    pub fn is_64bit(&self) -> bool {
        self.feature_incompat & feature::INCOMPAT_64BIT != 0
    }

    pub fn has_revoke(&self) -> bool {
        self.feature_incompat & feature::INCOMPAT_REVOKE != 0
    }

    /// Bytes of a descriptor tag (`journal_tag_bytes` without the csum
    /// features, which are refused).
    pub fn tag_bytes(&self) -> usize {
        if self.is_64bit() { 12 } else { 8 }
    }

    /// The log block after `at`, wrapping from the end to `first`.
    pub fn next(&self, at: u32) -> u32 {
        if at + 1 >= self.maxlen { self.first } else { at + 1 }
    }
}

/// The kernel's `crc32_be`: CRC-32 with the polynomial 0x04C11DB7, most
/// significant bit first, no inversion inside (the caller seeds it with
/// `!0` and chains it over the transaction's blocks, `recovery.c`'s
/// `calc_chksums`).
///
/// Eight bytes a step through eight tables ("slicing-by-8", Intel's
/// Kounavis and Berry, 2005, here for the MSB-first form Linux's
/// `crc32_be` uses): every commit checksums all of its blocks before the
/// log write is sent (a creat+`fsync` five 1 KiB blocks), and one table
/// lookup per byte, a chain of dependent loads and shifts, cost about
/// 150 µs of that request under TCG (branch `jfast`, "the journal's
/// fsync time"). The tables are `static` so that they are built at
/// compile time and read in place.
pub fn crc32_be(mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let x = crc ^ u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        let y = u32::from_be_bytes([c[4], c[5], c[6], c[7]]);
        crc = CRC_TABLES[7][(x >> 24) as usize]
            ^ CRC_TABLES[6][((x >> 16) & 0xff) as usize]
            ^ CRC_TABLES[5][((x >> 8) & 0xff) as usize]
            ^ CRC_TABLES[4][(x & 0xff) as usize]
            ^ CRC_TABLES[3][(y >> 24) as usize]
            ^ CRC_TABLES[2][((y >> 16) & 0xff) as usize]
            ^ CRC_TABLES[1][((y >> 8) & 0xff) as usize]
            ^ CRC_TABLES[0][(y & 0xff) as usize];
    }
    for &byte in chunks.remainder() {
        crc = (crc << 8) ^ CRC_TABLES[0][((crc >> 24) as u8 ^ byte) as usize];
    }
    crc
}

/// `CRC_TABLES[0][i]`: the CRC register after byte `i` is shifted in from
/// zero; `CRC_TABLES[k][i]`: the same followed by `k` zero bytes.
static CRC_TABLES: [[u32; 256]; 8] = {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = (i as u32) << 24;
        let mut k = 0;
        while k < 8 {
            c = if c & 0x8000_0000 != 0 { (c << 1) ^ 0x04C1_1DB7 } else { c << 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev << 8) ^ t[0][(prev >> 24) as usize];
            i += 1;
        }
        k += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn crc32_be_of_every_length_and_start_is_the_bitwise_ones() {
        // The definition, one bit at a time: the tables and the eight-byte
        // steps must give the same register for any length and alignment
        // (the remainder path included) and any seed.
        fn bitwise(mut crc: u32, data: &[u8]) -> u32 {
            for &b in data {
                crc ^= (b as u32) << 24;
                for _ in 0..8 {
                    crc = if crc & 0x8000_0000 != 0 { (crc << 1) ^ 0x04C1_1DB7 } else { crc << 1 };
                }
            }
            crc
        }
        let data: alloc::vec::Vec<u8> =
            (0..300u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for start in 0..9 {
            for len in 0..(data.len() - start) {
                for seed in [!0u32, 0, 0x1234_5678] {
                    let piece = &data[start..start + len];
                    assert_eq!(crc32_be(seed, piece), bitwise(seed, piece), "start {start} len {len}");
                }
            }
        }
    }

    #[test]
    fn crc32_be_matches_the_kernels_check_value() {
        // CRC-32/MPEG-2 (this polynomial, seed !0, no final xor) of
        // "123456789" is 0x0376E6E7: the catalogue's check value.
        assert_eq!(crc32_be(!0, b"123456789"), 0x0376_E6E7);
        // Chained over pieces it is the same as over the whole.
        assert_eq!(crc32_be(crc32_be(!0, b"1234"), b"56789"), 0x0376_E6E7);
    }

    fn superblock() -> alloc::vec::Vec<u8> {
        let mut b = vec![0u8; 1024];
        put_header(&mut b, blocktype::SUPERBLOCK_V2, 0);
        put_be32(&mut b, jsb::BLOCKSIZE, 1024);
        put_be32(&mut b, jsb::MAXLEN, 1024);
        put_be32(&mut b, jsb::FIRST, 1);
        put_be32(&mut b, jsb::SEQUENCE, 1);
        put_be32(&mut b, jsb::NR_USERS, 1);
        b
    }

    #[test]
    fn a_journal_superblock_is_checked_field_by_field() {
        let b = superblock();
        let sb = JournalSuperblock::parse(&b, 1024, 1024).unwrap();
        assert_eq!((sb.version, sb.maxlen, sb.first, sb.start), (2, 1024, 1, 0));
        assert_eq!(sb.next(1023), 1);
        let broken: [(usize, u32, &str); 7] = [
            (0, 0x1234_5678, "magic"),
            (4, 2, "block type"),
            (jsb::BLOCKSIZE, 4096, "block size"),
            (jsb::MAXLEN, 2048, "journal of"),
            (jsb::FIRST, 0, "first log block"),
            (jsb::START, 5000, "journal start"),
            (jsb::FEATURE_INCOMPAT, feature::INCOMPAT_CSUM_V3, "incompatible features 0x10"),
        ];
        for (at, v, what) in broken {
            let mut b = superblock();
            put_be32(&mut b, at, v);
            let e = JournalSuperblock::parse(&b, 1024, 1024).unwrap_err();
            assert!(e.contains(what), "{at}: {e}");
        }
    }
}
