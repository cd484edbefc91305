//! Console output: `print!` and `println!` format into a buffer (up to
//! [`BUFFER_BYTES`]) and write it with one request, so lines from
//! different processes stay whole and a long output is one big transfer.
//!
//! The request goes to the console driver named by the process's bootstrap
//! connection `abi::bootstrap::CONSOLE` (a `call`, so output is written
//! before `print!` returns, as UNIX `write` on a terminal). A process with
//! no console (init before it starts one, the driver itself, test
//! programs) writes through the kernel's debug console instead.

use alloc::vec::Vec;
use core::fmt::{self, Write};

/// Most bytes one `print!` gathers before it writes them: a formatted
/// text up to this long is one `write` (one call to the manager of the
/// output, which takes a file's bytes through the lease in one piece),
/// not a call per small chunk.
pub const BUFFER_BYTES: usize = 64 * 1024;

/// What a `print!` has formatted so far: on the stack while it is short,
/// on the heap up to [`BUFFER_BYTES`] (the heap may say no: then what is
/// there is written and formatting goes on).
struct LineBuffer {
    short: [u8; 512],
    len: usize,
    long: Vec<u8>,
    fd: i32,
}

impl LineBuffer {
    fn new(fd: i32) -> LineBuffer {
        LineBuffer { short: [0; 512], len: 0, long: Vec::new(), fd }
    }

    fn flush(&mut self) {
        if !self.long.is_empty() {
            write_fd(self.fd, &self.long);
            self.long.clear();
        } else if self.len > 0 {
            write_fd(self.fd, &self.short[..self.len]);
        }
        self.len = 0;
    }
}

impl Write for LineBuffer {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let bytes = s.as_bytes();
        if self.long.is_empty() && self.len + bytes.len() <= self.short.len() {
            self.short[self.len..self.len + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
            return Ok(());
        }
        if self.long.len() + bytes.len() > BUFFER_BYTES {
            self.flush();
        }
        if self.long.is_empty() {
            let want = (self.len + bytes.len()).min(BUFFER_BYTES);
            if self.long.try_reserve(want).is_err() {
                // No heap: write what there is, and these bytes at once.
                self.flush();
                write_fd(self.fd, bytes);
                return Ok(());
            }
            self.long.extend_from_slice(&self.short[..self.len]);
            self.len = 0;
        }
        if self.long.try_reserve(bytes.len()).is_err() {
            self.flush();
            write_fd(self.fd, bytes);
            return Ok(());
        }
        self.long.extend_from_slice(bytes);
        Ok(())
    }
}

#[doc(hidden)]
pub fn print_fmt(args: fmt::Arguments) {
    let mut buf = LineBuffer::new(1);
    let _ = buf.write_fmt(args);
    buf.flush();
}

#[doc(hidden)]
pub fn eprint_fmt(args: fmt::Arguments) {
    let mut buf = LineBuffer::new(2);
    let _ = buf.write_fmt(args);
    buf.flush();
}

/// Standard output and error of a UNIX process, the console otherwise.
fn write_fd(fd: i32, bytes: &[u8]) {
    if crate::unix::is_unix_process() {
        let _ = crate::unix::write(fd, bytes);
    } else {
        write_console(bytes);
    }
}

#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::io::print_fmt(format_args!($($arg)*)) };
}

/// Formatted output to standard error (the console for non-UNIX processes).
#[macro_export]
macro_rules! eprint {
    ($($arg:tt)*) => { $crate::io::eprint_fmt(format_args!($($arg)*)) };
}

#[macro_export]
macro_rules! eprintln {
    () => { $crate::eprint!("\n") };
    ($($arg:tt)*) => { $crate::io::eprint_fmt(format_args!("{}\n", format_args!($($arg)*))) };
}

#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => { $crate::io::print_fmt(format_args!("{}\n", format_args!($($arg)*))) };
}

use core::sync::atomic::{AtomicU64, Ordering};

/// The link to the console driver: 0 = not looked up yet, 1 = none,
/// else link number + 2.
static CONSOLE_LINK: AtomicU64 = AtomicU64::new(0);

fn console_link() -> Option<crate::msg::Link> {
    match CONSOLE_LINK.load(Ordering::Relaxed) {
        0 => {
            let link = crate::sys::bootstrap(abi::bootstrap::CONSOLE)
                .and_then(|(pid, queue)| crate::msg::open_link(pid, crate::msg::Queue(queue)).ok());
            CONSOLE_LINK.store(link.map_or(1, |l| l.0 as u64 + 2), Ordering::Relaxed);
            link
        }
        1 => None,
        n => Some(crate::msg::Link((n - 2) as u32)),
    }
}

/// Look the console up again (after `sys::set_bootstrap` changed it).
pub fn reset_console() {
    CONSOLE_LINK.store(0, Ordering::Relaxed);
}

/// Write bytes to this process's console.
pub fn write_console(bytes: &[u8]) {
    if let Some(link) = console_link() {
        let request = [protocols::console::OP_WRITE, 0, 0, 0];
        let all_sent = bytes
            .chunks(abi::msg::MAX_DATA_BYTES as usize)
            .all(|chunk| crate::msg::call(link, &request, chunk, &mut []).is_ok());
        if all_sent {
            return;
        }
        // The driver is gone: fall back to the kernel's console for good.
        CONSOLE_LINK.store(1, Ordering::Relaxed);
    }
    let _ = crate::sys::debug_write(bytes);
}
