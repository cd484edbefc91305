//! `fs_ext2::service`: the disk file system's requests as `servers/ext2fs`
//! receives them, over a `mke2fs` image in memory. Who may ask what,
//! opens and creations, reads and writes in the message and through the
//! lent buffer, seeks, directory listings, lookups that name the parent,
//! renames, a file unlinked while open, sync; then `e2fsck -fn` on the
//! image. Skips, saying so, without e2fsprogs.

use fs_ext2::device::MemDisk;
use fs_ext2::service::{MESSAGE_DATA_BYTES, Service, VecLent};
use fs_ext2::{Fs, MountOptions};
use protocols::unix::errno::{
    EBADF, EEXIST, EFAULT, EINVAL, EISDIR, ENOENT, ENOSYS, ENOTDIR, ENOTEMPTY, EPERM,
};
use protocols::unix::open_flags::{
    O_APPEND, O_CREAT, O_DIRECTORY, O_EXCL, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY,
};
use protocols::unix::{DirEntry, Errno, Stat, fs, io, mode, result};
use std::path::PathBuf;
use std::process::Command;

const MONITOR: u64 = 0x1_0000_0005;
const STRANGER: u64 = 0x1_0000_0009;

fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// A fresh 4 MiB ext2 image, or `None` (test skipped) without mke2fs.
fn image(tag: &str) -> Option<(Vec<u8>, PathBuf)> {
    let (Some(mke2fs), Some(_)) = (tool("mke2fs"), tool("e2fsck")) else {
        eprintln!("SKIPPED: e2fsprogs is not installed; `cargo xtask test` installs it");
        return None;
    };
    let img = std::env::temp_dir().join(format!("fs-ext2-service-{tag}-{}.img", std::process::id()));
    let _ = std::fs::remove_file(&img);
    let out =
        Command::new(mke2fs).args(["-q", "-F", "-t", "ext2", "-b", "1024"]).arg(&img).arg("4096k").output();
    assert!(out.unwrap().status.success());
    Some((std::fs::read(&img).unwrap(), img))
}

struct Client {
    s: Service<MemDisk>,
    tx: Box<[u8; MESSAGE_DATA_BYTES]>,
}

type Answer = (Result<u64, Errno>, [u64; 4], Vec<u8>);

impl Client {
    fn new(bytes: Vec<u8>, nbuf: usize) -> Client {
        let fs = match Fs::mount(MemDisk::new(bytes), MountOptions { nbuf, ..MountOptions::default() }) {
            Ok(fs) => fs,
            Err((e, _)) => panic!("mount refused: {e}"),
        };
        Client { s: Service::new(fs, MONITOR, 7), tx: Box::new([0; MESSAGE_DATA_BYTES]) }
    }

    fn ask(&mut self, from: u64, m: [u64; 4], data: &[u8], lent: &mut VecLent) -> Answer {
        let (w, len) = self.s.request(from, m, data, 5_000_000_000, &mut self.tx, lent);
        (result(w[0]), w, self.tx[..len].to_vec())
    }

    fn fs(&mut self, m: [u64; 4], data: &[u8]) -> Answer {
        self.ask(MONITOR, m, data, &mut VecLent::new(Vec::new(), 0))
    }

    fn io(&mut self, m: [u64; 4], data: &[u8]) -> Answer {
        self.ask(STRANGER, m, data, &mut VecLent::new(Vec::new(), 0))
    }

    fn open(&mut self, path: &str, flags: u64) -> u64 {
        let (r, w, data) = self.fs([fs::OP_OPEN, flags, 0o644, fs::owner_word(3, 4)], path.as_bytes());
        let h = r.unwrap_or_else(|e| panic!("open {path}: {e}"));
        assert_eq!(w[1], fs::QUEUE as u64);
        assert!(Stat::decode(&data).is_some());
        h
    }

    fn stat(&mut self, path: &str) -> Result<Stat, Errno> {
        let (r, _, data) = self.fs([fs::OP_LOOKUP, 0, 0, 0], path.as_bytes());
        r.map(|_| Stat::decode(&data).unwrap())
    }

    fn read_all(&mut self, h: u64) -> Vec<u8> {
        assert_eq!(self.io([io::OP_SEEK, h, 0, io::SEEK_SET], b"").0, Ok(0));
        let mut lent = VecLent::new(Vec::new(), 1 << 20);
        let (r, _, _) = self.ask(STRANGER, [io::OP_READ, h, 1 << 20, 0], b"", &mut lent);
        lent.receive.truncate(r.unwrap() as usize);
        lent.receive
    }
}

/// A read of cached data is one copy, from the cache's buffers into the
/// lent buffer, one lease call per 64 blocks (`abi::lease::SEGMENTS`);
/// with one buffer it goes a block at a time, and reads the same bytes.
#[test]
fn cached_reads_go_to_the_lent_buffer_in_runs_of_blocks() {
    let Some((bytes, _img)) = image("segments") else { return };
    let data: Vec<u8> = (0..256 * 1024u32).map(|i| (i * 13 % 253) as u8).collect();
    for (nbuf, calls) in [(1024, 4), (1, 256)] {
        let mut c = Client::new(bytes.clone(), nbuf);
        let h = c.open("/f", O_CREAT | O_EXCL | O_RDWR);
        let mut lent = VecLent::new(data.clone(), 0);
        let (r, _, _) =
            c.ask(STRANGER, [io::OP_WRITE, h, data.len() as u64, 0], &data[..MESSAGE_DATA_BYTES], &mut lent);
        assert_eq!(r, Ok(data.len() as u64));
        assert_eq!(c.io([io::OP_SEEK, h, 0, io::SEEK_SET], b"").0, Ok(0));
        let mut lent = VecLent::new(Vec::new(), data.len());
        let (r, _, _) = c.ask(STRANGER, [io::OP_READ, h, data.len() as u64, 0], b"", &mut lent);
        assert_eq!(r, Ok(data.len() as u64), "nbuf {nbuf}");
        assert!(lent.receive == data, "nbuf {nbuf}: the bytes read are the bytes written");
        assert_eq!(lent.write_calls, calls, "nbuf {nbuf}: lease calls for 256 blocks");
        // An offset inside a block: the first and last runs are parts of blocks.
        assert_eq!(c.io([io::OP_SEEK, h, 1000, io::SEEK_SET], b"").0, Ok(1000));
        let mut lent = VecLent::new(Vec::new(), 70_000);
        let (r, _, _) = c.ask(STRANGER, [io::OP_READ, h, 70_000, 0], b"", &mut lent);
        assert_eq!(r, Ok(70_000));
        assert!(lent.receive[..] == data[1000..71_000], "nbuf {nbuf}: a read across blocks");
    }
}

/// A write through a lent buffer goes straight into the cache's blocks:
/// one lease call per run of up to 64 blocks, each filling the blocks'
/// buffers (64 segments), where the server's scratch piece took the bytes
/// first (one segment) and copied them on. With one buffer the blocks of
/// a run cannot all be in buffers at once: the piece, as before. A lent
/// buffer shorter than the write asks for gives `EFAULT` with nothing
/// written and the volume clean.
#[test]
fn writes_come_from_the_lent_buffer_in_runs_of_blocks() {
    let Some((bytes, img)) = image("write-segments") else { return };
    let data: Vec<u8> = (0..256 * 1024u32).map(|i| (i * 31 % 251) as u8).collect();
    for (nbuf, segments) in [(1024, 64), (1, 1)] {
        let mut c = Client::new(bytes.clone(), nbuf);
        let h = c.open("/f", O_CREAT | O_EXCL | O_RDWR);
        let mut lent = VecLent::new(data.clone(), 0);
        let (r, _, _) =
            c.ask(STRANGER, [io::OP_WRITE, h, data.len() as u64, 0], &data[..MESSAGE_DATA_BYTES], &mut lent);
        assert_eq!(r, Ok(data.len() as u64), "nbuf {nbuf}");
        assert_eq!(lent.read_calls, vec![segments; 4], "nbuf {nbuf}: lease calls for 256 blocks");
        // Over what is there, at an offset inside a block: the first and
        // last runs are parts of blocks, kept around the bytes written.
        assert_eq!(c.io([io::OP_SEEK, h, 1000, io::SEEK_SET], b"").0, Ok(1000));
        let patch: Vec<u8> = (0..70_000u32).map(|i| (i % 7) as u8).collect();
        let mut lent = VecLent::new(patch.clone(), 0);
        let (r, _, _) =
            c.ask(STRANGER, [io::OP_WRITE, h, 70_000, 0], &patch[..MESSAGE_DATA_BYTES], &mut lent);
        assert_eq!(r, Ok(70_000));
        let mut want = data.clone();
        want[1000..71_000].copy_from_slice(&patch);
        assert!(c.read_all(h) == want, "nbuf {nbuf}: the file reads back as written");
        // Past the end, from a lent buffer shorter than the write says.
        assert_eq!(c.io([io::OP_SEEK, h, 0, io::SEEK_END], b"").0, Ok(data.len() as u64));
        let mut lent = VecLent::new(vec![9; 10_000], 0);
        let (r, _, _) = c.ask(STRANGER, [io::OP_WRITE, h, 20_000, 0], &[9; MESSAGE_DATA_BYTES], &mut lent);
        assert_eq!(r, Err(EFAULT), "nbuf {nbuf}");
        let (r, _, st) = c.io([io::OP_FSTAT, h, 0, 0], b"");
        assert_eq!(r, Ok(0));
        assert_eq!(Stat::decode(&st).unwrap().size_bytes, data.len() as u64, "nbuf {nbuf}: nothing written");
        assert_eq!(c.fs([io::OP_CLOSE, h, 0, 0], b"").0, Ok(0));
        let disk = c.s.into_fs().unmount().unwrap();
        std::fs::write(&img, disk.bytes()).unwrap();
        let out = Command::new(tool("e2fsck").unwrap()).arg("-fn").arg(&img).output().unwrap();
        assert!(out.status.success(), "nbuf {nbuf}: e2fsck -fn: {}", String::from_utf8_lossy(&out.stdout));
    }
    let _ = std::fs::remove_file(&img);
}

#[test]
fn requests_over_an_image() {
    let Some((bytes, img)) = image("requests") else { return };
    let mut c = Client::new(bytes, 16);
    // Only the monitor changes names; the counters are anyone's.
    assert_eq!(c.io([fs::OP_MKDIR, 0o755, 0, 0], b"/d").0, Err(EPERM));
    assert_eq!(c.io([fs::OP_LOOKUP, 0, 0, 0], b"/").0, Err(EPERM));
    assert_eq!(c.io([fs::OP_STATS_TEXT, 0, 0, 0], b"").0, Ok(0));
    let (r, _, data) = c.fs([fs::OP_MKDIR, 0o750, 0, fs::owner_word(3, 4)], b"/d");
    assert_eq!(r, Ok(0));
    let st = Stat::decode(&data).unwrap();
    assert_eq!((st.mode, st.uid, st.gid), (mode::S_IFDIR | 0o750, 3, 4));
    assert_eq!(c.fs([fs::OP_MKDIR, 0o755, 0, 0], b"/d").0, Err(EEXIST));
    assert_eq!(c.fs([fs::OP_MKDIR, 0o755, 0, 0], b"d").0, Err(EINVAL), "relative");
    // A missing last name: word 1 = 1 and the parent's Stat.
    let (r, w, data) = c.fs([fs::OP_LOOKUP, 0, 0, 0], b"/d/none");
    assert_eq!((r, w[1]), (Err(ENOENT), 1));
    assert_eq!(Stat::decode(&data).unwrap().ino, st.ino);
    let (r, w, _) = c.fs([fs::OP_LOOKUP, 0, 0, 0], b"/none/x");
    assert_eq!((r, w[1]), (Err(ENOENT), 0));

    // Create, write in the message and through the lent buffer, append.
    let h = c.open("/d/f", O_CREAT | O_EXCL | O_RDWR);
    assert_eq!(c.fs([fs::OP_OPEN, O_CREAT | O_EXCL | O_RDWR, 0o644, 0], b"/d/f").0, Err(EEXIST));
    assert_eq!(c.io([io::OP_WRITE, h, 0, 0], b"hello ").0, Ok(6));
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut lent = VecLent::new(big.clone(), 0);
    let (r, _, _) =
        c.ask(STRANGER, [io::OP_WRITE, h, big.len() as u64, 0], &big[..MESSAGE_DATA_BYTES], &mut lent);
    assert_eq!(r, Ok(big.len() as u64));
    let mut want = b"hello ".to_vec();
    want.extend_from_slice(&big);
    assert_eq!(c.read_all(h), want);
    // Short reads come in the reply.
    assert_eq!(c.io([io::OP_SEEK, h, 2, io::SEEK_SET], b"").0, Ok(2));
    let (r, _, data) = c.io([io::OP_READ, h, 4, 0], b"");
    assert_eq!((r, data.as_slice()), (Ok(4), &b"llo "[..]));
    assert_eq!(c.io([io::OP_SEEK, h, 0, io::SEEK_END], b"").0, Ok(want.len() as u64));
    assert_eq!(c.io([io::OP_READ, h, 100, 0], b"").0, Ok(0), "end of file");
    let a = c.open("/d/f", O_WRONLY | O_APPEND);
    assert_eq!(c.io([io::OP_WRITE, a, 0, 0], b"!").0, Ok(1));
    assert_eq!(c.stat("/d/f").unwrap().size_bytes, want.len() as u64 + 1);
    // Truncate through a handle, and O_TRUNC.
    assert_eq!(c.io([io::OP_TRUNCATE, h, 5, 0], b"").0, Ok(0));
    assert_eq!(c.read_all(h), b"hello");
    let ro = c.open("/d/f", O_RDONLY);
    assert_eq!(c.io([io::OP_TRUNCATE, ro, 0, 0], b"").0, Err(EBADF));
    assert_eq!(c.io([io::OP_WRITE, ro, 0, 0], b"x").0, Err(EBADF));
    let t = c.open("/d/f", O_WRONLY | O_TRUNC);
    assert_eq!(c.io([io::OP_READ, t, 10, 0], b"").0, Err(EBADF));
    assert_eq!(c.stat("/d/f").unwrap().size_bytes, 0);
    let (r, _, data) = c.io([io::OP_FSTAT, t, 0, 0], b"");
    assert_eq!(r, Ok(0));
    assert_eq!(Stat::decode(&data).unwrap().mode, mode::S_IFREG | 0o644);

    // Directories: O_DIRECTORY, no writing, entries in order.
    assert_eq!(c.fs([fs::OP_OPEN, O_RDONLY | O_DIRECTORY, 0, 0], b"/d/f").0, Err(ENOTDIR));
    assert_eq!(c.fs([fs::OP_OPEN, O_WRONLY, 0, 0], b"/d").0, Err(EISDIR));
    for i in 0..30 {
        let f = c.open(&format!("/d/n{i}"), O_CREAT | O_WRONLY);
        assert_eq!(c.fs([io::OP_CLOSE, f, 0, 0], b"").0, Ok(0));
    }
    let d = c.open("/d", O_RDONLY | O_DIRECTORY);
    let mut names = Vec::new();
    for i in 0.. {
        let (r, _, data) = c.io([io::OP_READDIR, d, i, 0], b"");
        if r == Ok(0) {
            break;
        }
        let (_, m, name) = DirEntry::decode(&data).unwrap();
        names.push((String::from_utf8(name.to_vec()).unwrap(), m & mode::S_IFMT));
    }
    assert_eq!(names.len(), 33);
    assert_eq!(names[0], (".".into(), mode::S_IFDIR));
    assert!(names.contains(&("f".into(), mode::S_IFREG)));
    let (_, _, again) = c.io([io::OP_READDIR, d, 2, 0], b"");
    assert_eq!(DirEntry::decode(&again).unwrap().2, names[2].0.as_bytes(), "going back restarts");
    assert_eq!(c.io([io::OP_READ, d, 10, 0], b"").0, Err(EISDIR));

    // Rename, rmdir, unlink (an open file lives until its last close).
    assert_eq!(c.fs([fs::OP_MKDIR, 0o755, 0, 0], b"/e").0, Ok(0));
    assert_eq!(c.fs([fs::OP_RENAME, 0, 0, 0], b"/d/f\0/e/g").0, Ok(0));
    assert_eq!(c.stat("/d/f"), Err(ENOENT));
    assert_eq!(c.fs([fs::OP_RENAME, 0, 0, 0], b"/d/f/e/g").0, Err(EINVAL), "no NUL");
    assert_eq!(c.fs([fs::OP_RMDIR, 0, 0, 0], b"/d").0, Err(ENOTEMPTY));
    assert_eq!(c.fs([fs::OP_UNLINK, 0, 0, 0], b"/e/g").0, Ok(0));
    assert_eq!(c.io([io::OP_WRITE, h, 0, 0], b"still here").0, Ok(10));
    for handle in [h, a, ro, t, d] {
        assert_eq!(c.io([io::OP_CLOSE, handle, 0, 0], b"").0, Err(EPERM), "close is the monitor's");
        assert_eq!(c.fs([io::OP_CLOSE, handle, 0, 0], b"").0, Ok(0));
        assert_eq!(c.fs([io::OP_CLOSE, handle, 0, 0], b"").0, Err(EBADF));
    }
    assert_eq!(c.s.open_handles(), 0);
    // chmod, chown (-1 keeps an id), unknown operations, sync.
    let (r, _, data) = c.fs([fs::OP_CHMOD, 0o700, 0, 0], b"/e");
    assert_eq!((r, Stat::decode(&data).unwrap().mode), (Ok(0), mode::S_IFDIR | 0o700));
    let (_, _, data) = c.fs([fs::OP_CHOWN, u64::MAX, 9, 0], b"/e");
    let st = Stat::decode(&data).unwrap();
    assert_eq!((st.uid, st.gid), (0, 9));
    assert_eq!(c.fs([fs::OP_MKDEV, 1, 0, 0o600], b"/e/dev").0, Err(EPERM));
    assert_eq!(c.fs([99, 0, 0, 0], b"").0, Err(ENOSYS));
    assert!(c.io([io::OP_FOREGROUND, 1, 0, 0], b"").0.is_err());
    assert_eq!(c.fs([fs::OP_SYNC, 0, 0, 0], b"").0, Ok(0));
    let (r, _, text) = c.io([fs::OP_STATS_TEXT, 0, 0, 0], b"");
    assert_eq!(r, Ok(0));
    let text = String::from_utf8(text).unwrap();
    for name in ["nbuf=16", "hits=", "misses=", "read_ahead_hits=", "write_behind_transfers=", "flushes="] {
        assert!(text.contains(name), "{name} in {text}");
    }

    // The image, written back, is clean.
    let disk = c.s.into_fs().unmount().unwrap();
    std::fs::write(&img, disk.bytes()).unwrap();
    let out = Command::new(tool("e2fsck").unwrap()).arg("-fn").arg(&img).output().unwrap();
    let _ = std::fs::remove_file(&img);
    assert!(out.status.success(), "e2fsck -fn: {}", String::from_utf8_lossy(&out.stdout));
}

/// `fs::OP_OPEN_FORWARDED` (the monitor's pass-on of a process's
/// `open(O_CREAT)`): answered as the monitor answers `open` (the fd, and
/// the descriptor naming this manager and the monitor's handle), under
/// which the file then reads, writes and closes; every failure is
/// declined (the call goes back to the monitor) with its errno and makes
/// nothing: the name taken, a handle without the monitor's bit or one
/// held already, a short header, a missing directory, and from anyone but
/// the monitor `EPERM`.
#[test]
fn forwarded_opens_answer_as_the_monitor_or_are_declined() {
    let Some((bytes, img)) = image("forwarded") else { return };
    let mut c = Client::new(bytes, 32);
    c.s.set_own_pid(0x2_0000_0007);
    let handle = fs::FORWARDED_HANDLE_BIT | 0x1234 << 32 | 5;
    let request = |handle: u64, inner: &str| {
        let head = fs::Forwarded {
            fd: 3,
            handle,
            pid: 9,
            flags: O_WRONLY | O_CREAT,
            monitor_queue: 0,
            create_mode: 0o600,
        };
        let mut data = head.encode().to_vec();
        data.extend_from_slice(inner.as_bytes());
        data.push(0);
        data.extend_from_slice(format!("/disk{inner}").as_bytes());
        data
    };
    let words = [fs::OP_OPEN_FORWARDED, O_WRONLY | O_CREAT | O_EXCL, 0o600, fs::owner_word(3, 4)];
    let (r, w, _) = c.fs(words, &request(handle, "/f"));
    assert_eq!(r, Ok(3), "word 0 is the process's fd");
    assert_eq!(c.s.take_declined(), None);
    let info = protocols::unix::FdInfo::decode([w[1], w[2], w[3]]);
    assert_eq!(info.manager_pid, 0x2_0000_0007);
    assert_eq!(info.manager_queue, fs::QUEUE);
    assert_eq!(info.file_type, mode::S_IFREG);
    assert_eq!(info.flags as u64, O_WRONLY | O_CREAT, "the process's own flags");
    assert_eq!(info.handle, handle);
    assert_eq!(c.io([io::OP_WRITE, handle, 0, 0], b"made").0, Ok(4));
    let st = c.stat("/f").unwrap();
    assert_eq!((st.size_bytes, st.mode & 0o777, st.uid, st.gid), (4, 0o600, 3, 4));
    // Declined, each with its errno, and nothing made.
    let declined = |c: &mut Client, h: u64, inner: &str, want: Errno| {
        let (r, _, _) = c.fs(words, &request(h, inner));
        assert_eq!(r, Err(want), "{inner}");
        assert_eq!(c.s.take_declined(), Some(want), "{inner}");
        assert_eq!(c.s.take_declined(), None, "taken once");
    };
    declined(&mut c, handle ^ 1, "/f", EEXIST);
    declined(&mut c, handle, "/g", EINVAL); // the handle is held
    declined(&mut c, 0x1234 << 32 | 6, "/g", EINVAL); // not the monitor's kind
    declined(&mut c, handle ^ 2, "/none/g", ENOENT);
    assert_eq!(c.stat("/g").err(), Some(ENOENT), "nothing made by a declined open");
    let (r, _, _) = c.fs(words, &[0u8; 8]);
    assert_eq!((r, c.s.take_declined()), (Err(EINVAL), Some(EINVAL)), "a short header");
    let mut lent = VecLent::new(Vec::new(), 0);
    let (r, _, _) = c.ask(STRANGER, words, &request(handle ^ 3, "/h"), &mut lent);
    assert_eq!(r, Err(EPERM), "only the monitor forwards");
    assert_eq!(c.s.take_declined(), None, "a refused request is no declined open");
    // The monitor's close, as for any handle; then the image is sound.
    assert_eq!(c.fs([io::OP_CLOSE, handle, 0, 0], b"").0, Ok(0));
    assert_eq!(c.io([io::OP_WRITE, handle, 0, 0], b"x").0, Err(EBADF));
    assert_eq!(c.s.open_handles(), 0);
    let disk = c.s.into_fs().unmount().unwrap();
    std::fs::write(&img, disk.bytes()).unwrap();
    let out = Command::new(tool("e2fsck").unwrap()).arg("-fn").arg(&img).output().unwrap();
    let _ = std::fs::remove_file(&img);
    assert!(out.status.success(), "e2fsck: {}", String::from_utf8_lossy(&out.stdout));
}

/// A forwarded open's data may end with handles the process closed (its
/// closes that rode on the open, `monitor::OP_OPEN`): each is closed
/// before the open, also when the open is then declined (the monitor does
/// not send them again), and an unlinked file's inode goes with its last
/// handle; a tail that is not whole handles declines the open and closes
/// nothing.
#[test]
fn closes_riding_on_a_forwarded_open_are_made_first() {
    let Some((bytes, img)) = image("riding") else { return };
    let mut c = Client::new(bytes, 32);
    c.s.set_own_pid(0x2_0000_0007);
    let words = [fs::OP_OPEN_FORWARDED, O_WRONLY | O_CREAT | O_EXCL, 0o600, fs::owner_word(0, 0)];
    let request = |handle: u64, inner: &str, closes: &[u64], tail: &[u8]| {
        let head = fs::Forwarded {
            fd: 3,
            handle,
            pid: 9,
            flags: O_WRONLY | O_CREAT,
            monitor_queue: 0,
            create_mode: 0o600,
        };
        let mut data = head.encode().to_vec();
        data.extend_from_slice(inner.as_bytes());
        data.push(0);
        data.extend_from_slice(format!("/disk{inner}").as_bytes());
        if !closes.is_empty() || !tail.is_empty() {
            data.push(0);
        }
        for h in closes {
            data.extend_from_slice(&h.to_le_bytes());
        }
        data.extend_from_slice(tail);
        data
    };
    let h = |n: u64| fs::FORWARDED_HANDLE_BIT | 0x77 << 32 | n;
    assert_eq!(c.fs(words, &request(h(1), "/a", &[], &[])).0, Ok(3));
    assert_eq!(c.fs(words, &request(h(2), "/b", &[], &[])).0, Ok(3));
    assert_eq!(c.io([io::OP_WRITE, h(2), 0, 0], &[7u8; 3000]).0, Ok(3000));
    assert_eq!(c.s.open_handles(), 2);
    // `b` unlinked while open: its blocks stay until its handle goes.
    assert_eq!(c.fs([fs::OP_UNLINK, 0, 0, 0], b"/b").0, Ok(0));
    let free_before = c.s.fs.statfs().unwrap().free_inodes;
    // Both ride on the next open, which is made under its own handle.
    assert_eq!(c.fs(words, &request(h(3), "/c", &[h(1), h(2)], &[])).0, Ok(3));
    assert_eq!(c.s.take_declined(), None);
    assert_eq!(c.s.open_handles(), 1, "the riding handles are closed");
    assert_eq!(c.io([io::OP_WRITE, h(1), 0, 0], b"x").0, Err(EBADF));
    assert_eq!(c.s.fs.statfs().unwrap().free_inodes, free_before, "b's inode freed, c's taken");
    // Declined (the name exists): the riding handle is closed all the same.
    let (r, _, _) = c.fs(words, &request(h(4), "/a", &[h(3)], &[]));
    assert_eq!((r, c.s.take_declined()), (Err(EEXIST), Some(EEXIST)));
    assert_eq!(c.s.open_handles(), 0, "closed although the open was declined");
    // A handle not held is passed over; a ragged tail declines, closing nothing.
    assert_eq!(c.fs(words, &request(h(5), "/d", &[h(1)], &[])).0, Ok(3));
    let (r, _, _) = c.fs(words, &request(h(6), "/e", &[h(5)], &[1, 2, 3]));
    assert_eq!((r, c.s.take_declined()), (Err(EINVAL), Some(EINVAL)));
    assert_eq!(c.s.open_handles(), 1, "a ragged request closes nothing");
    assert_eq!(c.stat("/e").err(), Some(ENOENT));
    assert_eq!(c.fs([io::OP_CLOSE, h(5), 0, 0], b"").0, Ok(0));
    let disk = c.s.into_fs().unmount().unwrap();
    std::fs::write(&img, disk.bytes()).unwrap();
    let out = Command::new(tool("e2fsck").unwrap()).arg("-fn").arg(&img).output().unwrap();
    let _ = std::fs::remove_file(&img);
    assert!(out.status.success(), "e2fsck: {}", String::from_utf8_lossy(&out.stdout));
}

/// Read windows (`fs_ext2::readwin`): a slot per handle in a page per
/// process; the handle's offset is the slot's (read and moved by
/// `OP_READ`, `OP_WRITE`, `OP_SEEK`, clamped when scribbled); `OP_PREAD`
/// answers the file's generation, which every write, truncate and
/// `O_TRUNC` open moves before it answers; a closed handle's slot goes;
/// turned off, the slot request is `ENOSYS`.
#[test]
fn read_windows_slots_offsets_and_generations() {
    let Some((bytes, _img)) = image("readwin") else { return };
    let mut c = Client::new(bytes.clone(), 64);
    let w = c.open("/f", O_CREAT | O_EXCL | O_RDWR);
    assert_eq!(c.io([io::OP_WRITE, w, 0, 0], b"0123456789").0, Ok(10));
    let r = c.open("/f", O_RDONLY);
    // A slot for the reader; not for a writer-only handle or a directory.
    let (slot, _, _) = c.io([io::OP_READ_WINDOW_SLOT, r, 0x7000_0000, 0], b"");
    let slot = slot.unwrap();
    let (pid, address, page) = c.s.take_map_wanted().expect("the page is to be mapped");
    assert_eq!((pid, address), (STRANGER, 0x7000_0000));
    assert_eq!(c.s.readwin.page_address(STRANGER), Some(page));
    assert_eq!(c.io([io::OP_READ_WINDOW_SLOT, r, 0x7000_0000, 0], b"").0, Ok(slot), "the same slot again");
    assert_eq!(c.io([io::OP_READ_WINDOW_SLOT, r, 0x7000_0001, 0], b"").0, Err(EINVAL), "not a page");
    let wo = c.open("/f", O_WRONLY);
    assert_eq!(c.io([io::OP_READ_WINDOW_SLOT, wo, 0, 0], b"").0, Err(EBADF));
    let d = c.open("/", O_RDONLY | O_DIRECTORY);
    assert_eq!(c.io([io::OP_READ_WINDOW_SLOT, d, 0, 0], b"").0, Err(EINVAL));
    // Another process cannot take the slot.
    let other = c.ask(MONITOR + 1, [io::OP_READ_WINDOW_SLOT, r, 0, 0], b"", &mut VecLent::new(Vec::new(), 0));
    assert_eq!(other.0, Err(protocols::unix::errno::EBUSY));

    // pread: the bytes and the generation, the offset untouched.
    let (n, words, data) = c.io([io::OP_PREAD, r, 4, 2], b"");
    assert_eq!((n, &data[..]), (Ok(4), &b"2345"[..]));
    let g0 = words[1];
    assert_ne!(g0, 0);
    assert_eq!(c.s.readwin.offset(r), Some(0));
    assert_eq!(c.io([io::OP_PREAD, r, 4, u64::MAX], b"").0, Err(EINVAL));
    // The offset is the slot's: moved by a client (as the runtime's
    // windowed reads do), then used and moved by OP_READ.
    c.s.readwin.set_offset(r, 6);
    let (n, _, data) = c.io([io::OP_READ, r, 3, 0], b"");
    assert_eq!((n, &data[..]), (Ok(3), &b"678"[..]));
    assert_eq!(c.s.readwin.offset(r), Some(9));
    assert_eq!(c.io([io::OP_SEEK, r, 0, io::SEEK_CUR], b"").0, Ok(9));
    assert_eq!(c.io([io::OP_SEEK, r, -4i64 as u64, io::SEEK_END], b"").0, Ok(6));
    assert_eq!(c.s.readwin.offset(r), Some(6));
    // A failed lseek puts the offset back too (a word left busy, with
    // `read_window::OFFSET_BUSY`, would read as the largest offset).
    assert_eq!(c.io([io::OP_SEEK, r, -100i64 as u64, io::SEEK_CUR], b"").0, Err(EINVAL));
    assert_eq!(c.io([io::OP_SEEK, r, 0, 99], b"").0, Err(EINVAL));
    assert_eq!(c.s.readwin.offset(r), Some(6));
    // A scribbled offset is clamped: the read finds the end, nothing breaks.
    c.s.readwin.set_offset(r, u64::MAX);
    assert_eq!(c.io([io::OP_READ, r, 3, 0], b"").0, Ok(0));
    assert_eq!(c.io([io::OP_SEEK, r, 0, io::SEEK_CUR], b"").0, Ok(i64::MAX as u64));

    // Every change moves the generation.
    let mut last = g0;
    let mut moved = |c: &mut Client, what: &str| {
        let g = c.io([io::OP_PREAD, r, 1, 0], b"").1[1];
        assert_ne!(g, last, "{what} moves the generation");
        last = g;
    };
    assert_eq!(c.io([io::OP_WRITE, w, 0, 0], b"x").0, Ok(1));
    moved(&mut c, "a write");
    assert_eq!(c.io([io::OP_TRUNCATE, w, 3, 0], b"").0, Ok(0));
    moved(&mut c, "a truncate");
    let t = c.open("/f", O_WRONLY | O_TRUNC);
    moved(&mut c, "an O_TRUNC open");
    let (_, words, _) = c.io([io::OP_PREAD, r, 1, 0], b"");
    let (_, again, _) = c.io([io::OP_PREAD, r, 1, 0], b"");
    assert_eq!(words[1], again[1], "no change, no new generation");
    // Closed: the slot goes, the offset is the handle's own again.
    assert_eq!(c.fs([io::OP_CLOSE, r, 0, 0], b"").0, Ok(0));
    assert_eq!(c.s.readwin.offset(r), None);
    assert_eq!(c.s.readwin.stats().slots, 0);
    for h in [w, wo, d, t] {
        assert_eq!(c.fs([io::OP_CLOSE, h, 0, 0], b"").0, Ok(0));
    }

    // Turned off (`ext2.readwin=off`): ENOSYS, and pread still works.
    let mut c = Client::new(bytes, 64);
    c.s.set_read_windows(false, |_| false);
    let h = c.open("/g", O_CREAT | O_EXCL | O_RDWR);
    assert_eq!(c.io([io::OP_READ_WINDOW_SLOT, h, 0x7000_0000, 0], b"").0, Err(ENOSYS));
    assert!(c.s.take_map_wanted().is_none());
    assert_eq!(c.io([io::OP_WRITE, h, 0, 0], b"abc").0, Ok(3));
    assert_eq!(c.io([io::OP_PREAD, h, 2, 1], b"").2, b"bc".to_vec());
}

/// `io::OP_PWRITE` (branch `posio`): the bytes at the offset named, the
/// handle's offset (its own, or a slot's) neither used nor moved; an
/// `O_APPEND` handle appends (Linux's behaviour); the windows on the
/// file are stale before the reply; a lent buffer longer than a message
/// works; bad input is refused with nothing written.
#[test]
fn pwrite_at_an_offset_moves_nothing_but_the_generation() {
    let Some((bytes, _img)) = image("pwrite") else { return };
    let mut c = Client::new(bytes, 64);
    let w = c.open("/f", O_CREAT | O_EXCL | O_RDWR);
    assert_eq!(c.io([io::OP_WRITE, w, 0, 0], b"0123456789").0, Ok(10));
    assert_eq!(c.io([io::OP_SEEK, w, 2, io::SEEK_SET], b"").0, Ok(2));
    assert_eq!(c.io([io::OP_PWRITE, w, 3, 5], b"abc").0, Ok(3));
    assert_eq!(c.io([io::OP_SEEK, w, 0, io::SEEK_CUR], b"").0, Ok(2), "the handle's offset is not moved");
    assert_eq!(c.io([io::OP_PREAD, w, 10, 0], b"").2, b"01234abc89".to_vec());
    // Past the end: a hole, then the bytes; the size grows.
    assert_eq!(c.io([io::OP_PWRITE, w, 2, 20], b"zz").0, Ok(2));
    let (n, _, data) = c.io([io::OP_PREAD, w, 64, 0], b"");
    assert_eq!(n, Ok(22));
    assert_eq!(&data[10..], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b'z', b'z']);
    // A reader with a slot: its offset word untouched, its generation
    // moved before the reply (a window of the file is stale).
    let r = c.open("/f", O_RDONLY);
    c.io([io::OP_READ_WINDOW_SLOT, r, 0x7000_0000, 0], b"").0.unwrap();
    c.s.readwin.set_offset(r, 7);
    let g0 = c.io([io::OP_PREAD, r, 1, 0], b"").1[1];
    assert_eq!(c.io([io::OP_PWRITE, w, 1, 0], b"X").0, Ok(1));
    let g1 = c.io([io::OP_PREAD, r, 1, 0], b"").1[1];
    assert_ne!(g0, g1, "a pwrite moves the generation");
    assert_eq!(c.s.readwin.offset(r), Some(7), "the reader's offset is not moved");
    // Through a lent buffer (longer than a message).
    let big: Vec<u8> = (0..9000u32).map(|i| (i % 251) as u8).collect();
    let mut lent = VecLent::new(big.clone(), 0);
    let (n, _, _) = c.ask(STRANGER, [io::OP_PWRITE, w, big.len() as u64, 100], b"", &mut lent);
    assert_eq!(n, Ok(9000));
    let mut back = VecLent::new(Vec::new(), 9000);
    let (n, _, _) = c.ask(STRANGER, [io::OP_PREAD, w, 9000, 100], b"", &mut back);
    assert_eq!(n, Ok(9000));
    assert_eq!(back.receive, big);
    assert_eq!(c.io([io::OP_SEEK, w, 0, io::SEEK_CUR], b"").0, Ok(2));
    // O_APPEND: at the end whatever the offset named (Linux's pwrite(2)).
    let a = c.open("/f", O_WRONLY | O_APPEND);
    let end = 9100;
    assert_eq!(c.io([io::OP_PWRITE, a, 4, 0], b"tail").0, Ok(4));
    assert_eq!(c.io([io::OP_PREAD, w, 4, end], b"").2, b"tail".to_vec());
    assert_eq!(c.io([io::OP_PREAD, w, 1, 0], b"").2, b"X".to_vec(), "offset 0 not written");
    assert_eq!(c.io([io::OP_SEEK, a, 0, io::SEEK_CUR], b"").0, Ok(0), "nor the appender's offset moved");
    // Bad input: nothing written.
    assert_eq!(c.io([io::OP_PWRITE, w, 1, u64::MAX], b"q").0, Err(EINVAL));
    assert_eq!(c.io([io::OP_PWRITE, w, 1, i64::MAX as u64 + 1], b"q").0, Err(EINVAL));
    assert_eq!(c.io([io::OP_PWRITE, r, 1, 0], b"q").0, Err(EBADF), "a read-only handle");
    assert_eq!(c.io([io::OP_PWRITE, w ^ (1 << 40), 1, 0], b"q").0, Err(EBADF), "no such handle");
    let d = c.open("/", O_RDONLY | O_DIRECTORY);
    assert_eq!(c.io([io::OP_PWRITE, d, 1, 0], b"q").0, Err(EBADF), "a directory");
    let mut short = VecLent::new(vec![1; 10], 0);
    let (n, _, _) = c.ask(STRANGER, [io::OP_PWRITE, w, 9000, 0], b"", &mut short);
    assert!(n.is_err(), "a lent buffer shorter than asked: {n:?}");
    assert_eq!(c.io([io::OP_PREAD, w, 1, 0], b"").2, b"X".to_vec());
    assert_eq!(c.io([io::OP_SEEK, w, 0, io::SEEK_CUR], b"").0, Ok(2));
    for h in [w, r, a, d] {
        assert_eq!(c.fs([io::OP_CLOSE, h, 0, 0], b"").0, Ok(0));
    }
}
