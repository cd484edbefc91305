//! The kernel log on COM1: `kprintln!`.
//!
//! One lock keeps lines from different CPUs whole. The panic path writes
//! without the lock (a CPU that panicked while printing must still report).

use core::fmt::{self, Write};
use spin::Mutex;

static LOG_LOCK: Mutex<()> = Mutex::new(());

struct Serial;

impl Write for Serial {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        crate::arch::serial::write_bytes(s.as_bytes());
        Ok(())
    }
}

pub fn print(args: fmt::Arguments) {
    let _guard = LOG_LOCK.lock();
    let _ = Serial.write_fmt(args);
}

/// Write raw bytes (user output) as one unit.
pub fn write_bytes(bytes: &[u8]) {
    let _guard = LOG_LOCK.lock();
    crate::arch::serial::write_bytes(bytes);
}

/// For the panic path only: no lock.
pub fn print_unlocked(args: fmt::Arguments) {
    let _ = Serial.write_fmt(args);
}

#[macro_export]
macro_rules! kprintln {
    ($($arg:tt)*) => {
        $crate::console::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}
