//! The initramfs writer: a newc cpio archive built in memory.
//!
//! What it is: [`CpioWriter`], which lays out directories, files, symbolic
//! links and character devices in the format Linux unpacks as an
//! initramfs. What it is not: a reader (the tests below carry one, to
//! check the layout), nor a compressor (Linux accepts the archive as is).
//!
//! Invariants: every entry gets an inode of its own and the fixed owner
//! root and mtime 0, so the same entries give the same bytes; headers and
//! data start on 4-byte boundaries; the archive ends with the trailer.

/// A newc ("new ASCII", magic 070701) cpio archive, the format Linux
/// unpacks as an initramfs (Documentation/driver-api/early-userspace/
/// buffer-format.rst). Entries must come after their parent directory.
pub struct CpioWriter {
    bytes: Vec<u8>,
    next_inode: u32,
}

const CPIO_MODE_DIRECTORY: u32 = 0o040000;
const CPIO_MODE_FILE: u32 = 0o100000;
const CPIO_MODE_SYMLINK: u32 = 0o120000;
const CPIO_MODE_CHAR_DEVICE: u32 = 0o020000;
const CPIO_TRAILER: &str = "TRAILER!!!";

impl CpioWriter {
    pub fn new() -> Self {
        CpioWriter { bytes: Vec::new(), next_inode: 1 }
    }

    pub fn directory(&mut self, path: &str, permissions: u32) {
        self.entry(path, CPIO_MODE_DIRECTORY | permissions, 2, (0, 0), &[]);
    }

    pub fn file(&mut self, path: &str, permissions: u32, data: &[u8]) {
        self.entry(path, CPIO_MODE_FILE | permissions, 1, (0, 0), data);
    }

    /// A symbolic link's data is its target.
    pub fn symlink(&mut self, path: &str, target: &str) {
        self.entry(path, CPIO_MODE_SYMLINK | 0o777, 1, (0, 0), target.as_bytes());
    }

    pub fn char_device(&mut self, path: &str, permissions: u32, major: u32, minor: u32) {
        self.entry(path, CPIO_MODE_CHAR_DEVICE | permissions, 1, (major, minor), &[]);
    }

    /// Header (110 bytes), name with NUL, padding to 4 bytes, data, padding.
    fn entry(&mut self, path: &str, mode: u32, link_count: u32, rdev: (u32, u32), data: &[u8]) {
        // Every entry gets its own inode: equal inodes would make the
        // kernel treat entries as hard links of one another.
        let inode = if path == CPIO_TRAILER { 0 } else { self.next_inode };
        self.next_inode += 1;
        let name_len_bytes = path.len() as u32 + 1;
        let fields: [u32; 13] = [
            inode,
            mode,
            0, // uid: root
            0, // gid: root
            link_count,
            0, // mtime: fixed, so the archive is reproducible
            data.len() as u32,
            0, // devmajor
            0, // devminor
            rdev.0,
            rdev.1,
            name_len_bytes,
            0, // check: only used by the "070702" CRC format
        ];
        self.bytes.extend_from_slice(b"070701");
        for field in fields {
            self.bytes.extend_from_slice(format!("{field:08x}").as_bytes());
        }
        self.bytes.extend_from_slice(path.as_bytes());
        self.bytes.push(0);
        self.pad_to_4();
        self.bytes.extend_from_slice(data);
        self.pad_to_4();
    }

    fn pad_to_4(&mut self) {
        while !self.bytes.len().is_multiple_of(4) {
            self.bytes.push(0);
        }
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.entry(CPIO_TRAILER, 0, 1, (0, 0), &[]);
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// One parsed cpio entry: (name, mode, rdev, data).
    type Entry = (String, u32, (u32, u32), Vec<u8>);

    /// Reads a newc archive back, checking magic and alignment on the way.
    fn parse_cpio(mut bytes: &[u8]) -> Vec<Entry> {
        let total = bytes.len();
        let mut entries = Vec::new();
        loop {
            assert_eq!((total - bytes.len()) % 4, 0, "header not 4-byte aligned");
            assert_eq!(&bytes[..6], b"070701");
            let field = |i: usize| {
                u32::from_str_radix(std::str::from_utf8(&bytes[6 + 8 * i..14 + 8 * i]).unwrap(), 16).unwrap()
            };
            let (mode, file_size, rdev, name_size) =
                (field(1), field(6) as usize, (field(9), field(10)), field(11) as usize);
            let name = std::str::from_utf8(&bytes[110..110 + name_size - 1]).unwrap().to_string();
            assert_eq!(bytes[110 + name_size - 1], 0, "name not NUL-terminated");
            let data_start = (110 + name_size).next_multiple_of(4);
            let data = bytes[data_start..data_start + file_size].to_vec();
            bytes = &bytes[(data_start + file_size).next_multiple_of(4)..];
            if name == CPIO_TRAILER {
                assert!(bytes.is_empty(), "bytes after the trailer");
                return entries;
            }
            entries.push((name, mode, rdev, data));
        }
    }

    #[test]
    fn cpio_round_trips_every_entry_kind() {
        let mut cpio = CpioWriter::new();
        cpio.directory("bin", 0o755);
        cpio.file("bin/busybox", 0o755, b"abcde"); // odd length: needs padding
        cpio.symlink("bin/sh", "busybox");
        cpio.char_device("dev/console", 0o600, 5, 1);
        cpio.file("empty", 0o644, b"");
        let entries = parse_cpio(&cpio.finish());
        let expected: Vec<Entry> = vec![
            ("bin".into(), 0o040755, (0, 0), vec![]),
            ("bin/busybox".into(), 0o100755, (0, 0), b"abcde".to_vec()),
            ("bin/sh".into(), 0o120777, (0, 0), b"busybox".to_vec()),
            ("dev/console".into(), 0o020600, (5, 1), vec![]),
            ("empty".into(), 0o100644, (0, 0), vec![]),
        ];
        assert_eq!(entries, expected);
    }

    #[test]
    fn cpio_gives_every_entry_its_own_inode() {
        let mut cpio = CpioWriter::new();
        cpio.file("a", 0o644, b"1");
        cpio.file("b", 0o644, b"2");
        let bytes = cpio.finish();
        let inode = |offset: usize| &bytes[offset + 6..offset + 14];
        let second = (110 + 2usize).next_multiple_of(4) + 4;
        assert_ne!(inode(0), inode(second));
    }

    /// The system's `cpio` (if installed) must list what we wrote.
    #[test]
    fn cpio_is_readable_by_gnu_cpio_when_installed() {
        let mut cpio = CpioWriter::new();
        cpio.directory("d", 0o755);
        cpio.file("d/f", 0o644, b"hello");
        cpio.symlink("d/l", "f");
        let archive = cpio.finish();
        let child = Command::new("cpio")
            .arg("-t")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let Ok(mut child) = child else {
            eprintln!("cpio not installed; skipping");
            return;
        };
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&archive).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success());
        assert_eq!(String::from_utf8(output.stdout).unwrap(), "d\nd/f\nd/l\n");
    }
}
