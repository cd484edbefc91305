//! Console output: `print!` and `println!` format into a buffer and write
//! it with one kernel call, so lines from different processes stay whole.

use core::fmt::{self, Write};

struct LineBuffer {
    bytes: [u8; 512],
    len: usize,
}

impl LineBuffer {
    fn flush(&mut self) {
        if self.len > 0 {
            let _ = crate::sys::debug_write(&self.bytes[..self.len]);
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
    let mut buf = LineBuffer { bytes: [0; 512], len: 0 };
    let _ = buf.write_fmt(args);
    buf.flush();
}

#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::io::print_fmt(format_args!($($arg)*)) };
}

#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => { $crate::io::print_fmt(format_args!("{}\n", format_args!($($arg)*))) };
}
