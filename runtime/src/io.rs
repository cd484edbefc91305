//! Console output: `print!` and `println!` format into a buffer and write
//! it with one request, so lines from different processes stay whole.
//!
//! The request goes to the console driver named by the process's bootstrap
//! connection `abi::bootstrap::CONSOLE` (a `call`, so output is written
//! before `print!` returns, as UNIX `write` on a terminal). A process with
//! no console (init before it starts one, the driver itself, test
//! programs) writes through the kernel's debug console instead.

use core::fmt::{self, Write};

struct LineBuffer {
    bytes: [u8; 512],
    len: usize,
    fd: i32,
}

impl LineBuffer {
    fn flush(&mut self) {
        if self.len > 0 {
            write_fd(self.fd, &self.bytes[..self.len]);
            self.len = 0;
        }
    }
}

impl Write for LineBuffer {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for chunk in s.as_bytes().chunks(self.bytes.len()) {
            if self.len + chunk.len() > self.bytes.len() {
                self.flush();
            }
            self.bytes[self.len..self.len + chunk.len()].copy_from_slice(chunk);
            self.len += chunk.len();
        }
        Ok(())
    }
}

#[doc(hidden)]
pub fn print_fmt(args: fmt::Arguments) {
    let mut buf = LineBuffer { bytes: [0; 512], len: 0, fd: 1 };
    let _ = buf.write_fmt(args);
    buf.flush();
}

#[doc(hidden)]
pub fn eprint_fmt(args: fmt::Arguments) {
    let mut buf = LineBuffer { bytes: [0; 512], len: 0, fd: 2 };
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
