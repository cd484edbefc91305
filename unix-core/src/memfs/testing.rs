//! What memfs's tests share: a small tree and ways to fill and read it
//! through the public operations, as a client would.

use alloc::string::String;
use alloc::vec::Vec;

use protocols::unix::Stat;
use protocols::unix::open_flags::{O_CREAT, O_DIRECTORY, O_RDONLY, O_TRUNC, O_WRONLY};

use super::open::Fs;
use super::tree::Lookup;

/// The capacity of the test trees: bytes of data they may hold.
pub(super) const CAP: u64 = 64 * 1024 * 1024;

/// A tree with `/bin` and `/tmp` (mode 1777).
pub(super) fn fs() -> Fs {
    let mut f = Fs::new(42, CAP);
    f.mkdir("/bin", 0o755, 0, 0).unwrap();
    f.mkdir("/tmp", 0o1777, 0, 0).unwrap();
    f
}

/// Make (or empty) file `p`, owned by 1000/100, holding `data`; its inode.
pub(super) fn create(f: &mut Fs, p: &str, data: &[u8]) -> u64 {
    let (h, st) = f.open(p, O_CREAT | O_WRONLY | O_TRUNC, 0o644, 1000, 100).unwrap();
    assert_eq!(f.write(h, data).unwrap(), data.len());
    f.close(h).unwrap();
    st.ino
}

/// Every byte of file `p`, read through a handle.
pub(super) fn read_all(f: &mut Fs, p: &str) -> Vec<u8> {
    let (h, _) = f.open(p, O_RDONLY, 0, 0, 0).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 1000];
    loop {
        let n = f.read(h, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    f.close(h).unwrap();
    out
}

/// The Stat of what `p` names (not crossing a device entry).
pub(super) fn stat(f: &Fs, p: &str) -> Stat {
    match f.lookup(p).unwrap() {
        Lookup::Found(s) => s,
        other => panic!("{other:?}"),
    }
}

/// The names directory `p` lists, `.` and `..` first.
pub(super) fn names(f: &mut Fs, p: &str) -> Vec<String> {
    let (h, _) = f.open(p, O_RDONLY | O_DIRECTORY, 0, 0, 0).unwrap();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(e) = f.readdir(h, i).unwrap() {
        out.push(e.name);
        i += 1;
    }
    f.close(h).unwrap();
    out
}
