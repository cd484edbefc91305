//! dd: copy a file in blocks (`dd [if=FILE] [of=FILE] [bs=N] [count=N]
//! [skip=N] [seek=N] [conv=notrunc] [status=none|noxfer]`), as GNU dd
//! does, and report on standard error what was copied: `N+M records in`,
//! `N+M records out` and `B bytes (…) copied, S s, R MB/s`.
//!
//! Each block is one `read` of `bs` bytes and, as it came, one `write`:
//! a short read (a pipe, a terminal, the end of a file) is a partial
//! record, copied as it is. So with a block device (`/dev/ram0`,
//! `/dev/vda`) each `read` and `write` is one transfer of `bs` bytes.
//! Operands, numbers and the summary are in `coreutils::dd` (host-tested).
//!
//! The output is created if missing (mode 0644) and, as in GNU dd, cut at
//! `seek` blocks unless `conv=notrunc` (only a regular file is cut). An
//! error names the program and the file, prints the summary of what was
//! copied so far, and the exit status is 1.
//!
//! Not here: `/dev/zero` (the system has no such device yet: use a file).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use coreutils::dd::{self, Operands, Status, Tally};
use coreutils::io;
use protocols::unix::{Errno, errno, mode, open_flags};
use runtime::eprintln;
use runtime::unix::{self, Fd, SEEK_CUR};

runtime::entry!(main);

/// Mode of an output file dd creates (GNU: 0666 less the umask).
const CREATE_MODE: u32 = 0o644;

fn main(args: runtime::Args) -> i32 {
    let words = io::operands(&args);
    let operands = match dd::parse_operands(&words) {
        Ok(operands) => operands,
        Err(e) => {
            eprintln!("dd: {e}");
            return io::FAILURE;
        }
    };
    match Copy::open(&operands) {
        Ok(mut copy) => copy.run(&operands),
        Err(()) => io::FAILURE,
    }
}

/// One side of the copy.
struct End {
    fd: Fd,
    /// As messages name it: the path, or `standard input`/`standard output`.
    name: String,
    is_named: bool,
}

impl End {
    fn close(&self) -> Result<(), Errno> {
        if self.is_named { unix::close(self.fd) } else { Ok(()) }
    }
}

struct Copy {
    input: End,
    output: End,
    buffer: Vec<u8>,
    tally: Tally,
}

impl Copy {
    /// Opens both ends and prepares the output as GNU dd does; errors are
    /// reported here.
    fn open(operands: &Operands) -> Result<Copy, ()> {
        let Ok(block_bytes) = usize::try_from(operands.block_bytes) else {
            eprintln!("dd: invalid number: '{}'", operands.block_bytes);
            return Err(());
        };
        let mut buffer = Vec::new();
        if buffer.try_reserve_exact(block_bytes).is_err() {
            eprintln!(
                "dd: memory exhausted by input buffer of size {block_bytes} bytes ({})",
                dd::human_size(operands.block_bytes, 1024)
            );
            return Err(());
        }
        buffer.resize(block_bytes, 0);
        let input = match operands.input {
            None => End { fd: 0, name: "standard input".into(), is_named: false },
            Some(path) => match unix::open(path, open_flags::O_RDONLY, 0) {
                Ok(fd) => End { fd, name: path.into(), is_named: true },
                Err(e) => {
                    eprintln!("dd: failed to open '{path}': {}", e.name());
                    return Err(());
                }
            },
        };
        let output = match operands.output {
            None => End { fd: 1, name: "standard output".into(), is_named: false },
            Some(path) => match open_output(path, operands) {
                Ok(fd) => End { fd, name: path.into(), is_named: true },
                Err(e) => {
                    eprintln!("dd: failed to open '{path}': {}", e.name());
                    let _ = input.close();
                    return Err(());
                }
            },
        };
        let copy = Copy { input, output, buffer, tally: Tally::default() };
        match copy.position(operands) {
            Ok(()) => Ok(copy),
            Err(()) => {
                let _ = copy.input.close();
                let _ = copy.output.close();
                Err(())
            }
        }
    }

    /// `seek=` (the output is cut there first, unless `conv=notrunc`) and
    /// `skip=`.
    fn position(&self, operands: &Operands) -> Result<(), ()> {
        let bytes = |blocks: u64| blocks.checked_mul(operands.block_bytes).filter(|&b| b <= i64::MAX as u64);
        if operands.seek_blocks > 0 {
            let Some(offset) = bytes(operands.seek_blocks) else {
                eprintln!("dd: offset too large: cannot seek to block {}", operands.seek_blocks);
                return Err(());
            };
            if !operands.is_notrunc
                && let Err(e) = unix::ftruncate(self.output.fd, offset)
                && unix::fstat(self.output.fd).is_ok_and(|st| mode::is_reg(st.mode) || mode::is_dir(st.mode))
            {
                // As GNU dd: only a file that can be cut is an error.
                eprintln!(
                    "dd: failed to truncate to {offset} bytes in output file '{}': {}",
                    self.output.name,
                    e.name()
                );
                return Err(());
            }
            if let Err(e) = unix::lseek(self.output.fd, offset as i64, SEEK_CUR) {
                eprintln!("dd: '{}': cannot seek: {}", self.output.name, e.name());
                return Err(());
            }
        }
        if operands.skip_blocks > 0 {
            let Some(offset) = bytes(operands.skip_blocks) else {
                eprintln!("dd: offset too large: cannot skip to block {}", operands.skip_blocks);
                return Err(());
            };
            match unix::lseek(self.input.fd, offset as i64, SEEK_CUR) {
                Ok(position) => {
                    // Past the end of a file: GNU dd warns and copies nothing.
                    if unix::fstat(self.input.fd)
                        .is_ok_and(|st| mode::is_reg(st.mode) && st.size_bytes < position)
                    {
                        eprintln!("dd: {}: cannot skip to specified offset", self.input.name);
                    }
                }
                // A pipe or a terminal: read the blocks and drop them.
                Err(e) if e == errno::ESPIPE => return self.skip_by_reading(operands),
                Err(e) => {
                    eprintln!("dd: '{}': cannot skip: {}", self.input.name, e.name());
                    return Err(());
                }
            }
        }
        Ok(())
    }

    fn skip_by_reading(&self, operands: &Operands) -> Result<(), ()> {
        let mut scratch = alloc::vec![0u8; self.buffer.len()];
        for _ in 0..operands.skip_blocks {
            match unix::read(self.input.fd, &mut scratch) {
                Ok(0) => {
                    eprintln!("dd: {}: cannot skip to specified offset", self.input.name);
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    eprintln!("dd: '{}': cannot skip: {}", self.input.name, e.name());
                    return Err(());
                }
            }
        }
        Ok(())
    }

    /// The copy loop, the summary and the exit status.
    fn run(&mut self, operands: &Operands) -> i32 {
        let block_bytes = operands.block_bytes;
        let mut status = 0;
        let started_ns = unix::clock_ns();
        while operands.count_blocks.is_none_or(|count| self.tally.records_in.total() < count) {
            let read = match unix::read(self.input.fd, &mut self.buffer) {
                Ok(0) => break,
                Ok(read) => read,
                Err(e) => {
                    eprintln!("dd: error reading '{}': {}", self.input.name, e.name());
                    status = io::FAILURE;
                    break;
                }
            };
            self.tally.records_in.add(read as u64, block_bytes);
            let (written, error) = write_block(self.output.fd, &self.buffer[..read]);
            self.tally.bytes_out += written as u64;
            if let Some(e) = error {
                eprintln!("dd: error writing '{}': {}", self.output.name, e.name());
                status = io::FAILURE;
                break;
            }
            self.tally.records_out.add(written as u64, block_bytes);
        }
        let elapsed_ns = unix::clock_ns().saturating_sub(started_ns);
        let _ = self.input.close();
        if let Err(e) = self.output.close() {
            eprintln!("dd: closing output file '{}': {}", self.output.name, e.name());
            status = io::FAILURE;
        }
        if operands.status != Status::None {
            runtime::eprint!("{}", dd::summary(&self.tally, elapsed_ns, operands.status));
        }
        status
    }
}

/// Opens `of=`: created if missing; a regular file is emptied when
/// nothing before its start is kept (no `seek=`, no `conv=notrunc`). A
/// device is never opened with `O_TRUNC`, which means nothing for it.
fn open_output(path: &str, operands: &Operands) -> Result<Fd, Errno> {
    let mut flags = open_flags::O_WRONLY | open_flags::O_CREAT;
    let is_regular = unix::stat(path).is_ok_and(|st| mode::is_reg(st.mode));
    if is_regular && operands.seek_blocks == 0 && !operands.is_notrunc {
        flags |= open_flags::O_TRUNC;
    }
    unix::open(path, flags, CREATE_MODE)
}

/// Writes all of `bytes` (as GNU dd's `iwrite`, trying again after a
/// short write); returns how many were written and the error that
/// stopped it, if any. A write of nothing is a full device (`ENOSPC`).
fn write_block(fd: Fd, bytes: &[u8]) -> (usize, Option<Errno>) {
    let mut written = 0;
    while written < bytes.len() {
        match unix::write(fd, &bytes[written..]) {
            Ok(0) => return (written, Some(errno::ENOSPC)),
            Ok(n) => written += n,
            Err(e) => return (written, Some(e)),
        }
    }
    (written, None)
}
