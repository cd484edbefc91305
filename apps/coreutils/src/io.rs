//! Output, copying and error reports on top of `runtime::unix`.

use alloc::vec;
use alloc::vec::Vec;
use runtime::eprintln;
use runtime::unix::{self, Errno, Fd};

/// Bytes moved per `read`/`write` by the copying utilities: a file's
/// manager moves a whole chunk in one call, straight between the file's
/// pages and this buffer (leases, `docs/unix.md`), so bigger chunks mean
/// fewer round trips; a pipe or terminal takes or gives what it can.
pub const CHUNK_BYTES: usize = 128 * 1024;
const PAGE_BYTES: usize = abi::layout::PAGE_SIZE as usize;

/// The status every utility exits with after an error.
pub const FAILURE: i32 = 1;

/// Report `prog: what: <errno name>` on standard error.
pub fn report(prog: &str, what: &str, e: Errno) {
    eprintln!("{prog}: {what}: {}", e.name());
}

/// Report a failed write to standard output. A closed pipe (EPIPE: the
/// reader has gone, as in `cat f | wc` after `wc` died) is not worth a
/// message; the status still says the output is incomplete.
pub fn report_write(prog: &str, e: Errno) {
    if e != protocols::unix::errno::EPIPE {
        report(prog, "write error", e);
    }
}

/// Report a bad flag and the usage line; returns the status to exit with.
pub fn usage(prog: &str, bad: Option<char>, usage: &str) -> i32 {
    if let Some(c) = bad {
        eprintln!("{prog}: invalid option -- '{c}'");
    }
    eprintln!("usage: {prog} {usage}");
    FAILURE
}

/// The program's arguments after its name.
pub fn operands(args: &runtime::Args) -> Vec<&'static str> {
    args.iter().skip(1).collect()
}

/// A heap buffer of [`CHUNK_BYTES`] whose start is page-aligned.
pub struct ChunkBuf {
    storage: Vec<u8>,
    start: usize,
}

impl ChunkBuf {
    pub fn new() -> ChunkBuf {
        let storage = vec![0u8; CHUNK_BYTES + PAGE_BYTES];
        let start = storage.as_ptr().align_offset(PAGE_BYTES).min(PAGE_BYTES);
        ChunkBuf { storage, start }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + CHUNK_BYTES]
    }
}

impl Default for ChunkBuf {
    fn default() -> Self {
        ChunkBuf::new()
    }
}

/// Which side of a copy failed.
pub enum CopyError {
    Read(Errno),
    Write(Errno),
}

/// Copy everything from `from` to `to`; returns the bytes copied.
pub fn copy_fd(from: Fd, to: Fd, buf: &mut ChunkBuf) -> Result<u64, CopyError> {
    let mut total = 0u64;
    loop {
        let chunk = buf.bytes_mut();
        let n = unix::read(from, chunk).map_err(CopyError::Read)?;
        if n == 0 {
            return Ok(total);
        }
        write_all(to, &chunk[..n]).map_err(CopyError::Write)?;
        total += n as u64;
    }
}

/// Write all of `bytes` (the runtime's `write` stops early only on error;
/// a short count without an error is reported as EIO).
pub fn write_all(fd: Fd, bytes: &[u8]) -> Result<(), Errno> {
    let mut done = 0;
    while done < bytes.len() {
        match unix::write(fd, &bytes[done..])? {
            0 => return Err(protocols::unix::errno::EIO),
            n => done += n,
        }
    }
    Ok(())
}

/// Read `fd` to its end in chunks, handing each to `f`.
pub fn for_each_chunk(fd: Fd, buf: &mut ChunkBuf, mut f: impl FnMut(&[u8])) -> Result<(), Errno> {
    loop {
        let chunk = buf.bytes_mut();
        let n = unix::read(fd, chunk)?;
        if n == 0 {
            return Ok(());
        }
        f(&chunk[..n]);
    }
}

/// Standard output, buffered: written in chunks of at least a page, and
/// at [`Out::flush`].
pub struct Out {
    buf: Vec<u8>,
    /// The first write error; later output is dropped.
    error: Option<Errno>,
}

impl Out {
    pub fn new() -> Out {
        Out { buf: Vec::with_capacity(PAGE_BYTES * 2), error: None }
    }

    pub fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= PAGE_BYTES {
            self.write_out();
        }
    }

    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    pub fn line(&mut self, s: &str) {
        self.bytes(s.as_bytes());
        self.bytes(b"\n");
    }

    fn write_out(&mut self) {
        if self.error.is_none()
            && let Err(e) = write_all(1, &self.buf)
        {
            self.error = Some(e);
        }
        self.buf.clear();
    }

    /// Has a write failed (the rest of the output is being dropped)?
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Write what is buffered; the first error of any write so far.
    pub fn flush(&mut self) -> Result<(), Errno> {
        if !self.buf.is_empty() {
            self.write_out();
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Flush, reporting a failure as `prog: write error: …`; the status to
    /// exit with given the status so far.
    pub fn finish(mut self, prog: &str, status: i32) -> i32 {
        match self.flush() {
            Ok(()) => status,
            Err(e) => {
                report_write(prog, e);
                FAILURE
            }
        }
    }
}

impl Default for Out {
    fn default() -> Self {
        Out::new()
    }
}

impl core::fmt::Write for Out {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.str(s);
        Ok(())
    }
}

/// Open `name` for reading (`-` is standard input, which is not opened
/// again); on failure report `prog: name: <errno>`.
pub fn open_input(prog: &str, name: &str) -> Result<Fd, Errno> {
    if name == "-" {
        return Ok(0);
    }
    unix::open(name, protocols::unix::open_flags::O_RDONLY, 0).inspect_err(|&e| report(prog, name, e))
}

/// Close what [`open_input`] opened (standard input stays open).
pub fn close_input(fd: Fd) {
    if fd != 0 {
        let _ = unix::close(fd);
    }
}

/// Everything `fd` holds until its end.
pub fn read_all(fd: Fd) -> Result<Vec<u8>, Errno> {
    let mut out = Vec::new();
    let mut buf = ChunkBuf::new();
    for_each_chunk(fd, &mut buf, |chunk| out.extend_from_slice(chunk))?;
    Ok(out)
}

/// Lines of a stream, read a chunk at a time, so a program can stop
/// early (`head`, `grep -q`) without waiting for the writer to finish.
pub struct LineReader {
    fd: Fd,
    buf: Vec<u8>,
    start: usize,
    eof: bool,
}

impl LineReader {
    pub fn new(fd: Fd) -> LineReader {
        LineReader { fd, buf: Vec::new(), start: 0, eof: false }
    }

    /// The next line with its `\n` (the last may lack one), or `None` at
    /// the end.
    pub fn next_line(&mut self) -> Result<Option<&[u8]>, Errno> {
        loop {
            if let Some(i) = self.buf[self.start..].iter().position(|&b| b == b'\n') {
                let from = self.start;
                self.start += i + 1;
                return Ok(Some(&self.buf[from..self.start]));
            }
            if self.eof {
                if self.start < self.buf.len() {
                    let from = self.start;
                    self.start = self.buf.len();
                    return Ok(Some(&self.buf[from..]));
                }
                return Ok(None);
            }
            self.buf.drain(..self.start);
            self.start = 0;
            let old = self.buf.len();
            self.buf.resize(old + PAGE_BYTES * 4, 0);
            let n = unix::read(self.fd, &mut self.buf[old..])?;
            self.buf.truncate(old + n);
            if n == 0 {
                self.eof = true;
            }
        }
    }
}

/// Report `prog: message` on standard error.
pub fn complain(prog: &str, message: &str) {
    eprintln!("{prog}: {message}");
}

/// The name GNU's tools give standard input in messages and headers.
pub fn display_name(name: &str) -> &str {
    if name == "-" { "standard input" } else { name }
}

/// Status when the command was found but could not run (POSIX: `env`,
/// `xargs`, the shell).
pub const STATUS_CANNOT_RUN: i32 = 126;
/// Status when the command was not found.
pub const STATUS_NOT_FOUND: i32 = 127;

/// Replace this process by `argv[0]` (searched in `PATH` of `envp`, else
/// `/bin`, when it has no `/`) with environment `envp`; on failure report
/// it and return the status to exit with (126 or 127).
pub fn exec_command(prog: &str, argv: &[&str], envp: &[&str]) -> i32 {
    let name = argv[0];
    let mut failure: Option<Errno> = None;
    if name.contains('/') {
        failure = Some(unix::execve(name, argv, envp));
    } else {
        let path = envp.iter().find_map(|e| e.strip_prefix("PATH=")).unwrap_or("/bin");
        for dir in path.split(':') {
            let dir = if dir.is_empty() { "." } else { dir };
            let full = alloc::format!("{}/{}", dir.trim_end_matches('/'), name);
            let e = unix::execve(&full, argv, envp);
            if e != protocols::unix::errno::ENOENT && e != protocols::unix::errno::ENOTDIR {
                failure.get_or_insert(e);
            }
        }
    }
    match failure {
        Some(e) if e != protocols::unix::errno::ENOENT => {
            report(prog, name, e);
            STATUS_CANNOT_RUN
        }
        _ => {
            eprintln!("{prog}: '{name}': No such file or directory");
            STATUS_NOT_FOUND
        }
    }
}
