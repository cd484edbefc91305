//! The COM1 16550 UART, polled, used for the kernel log.
//!
//! Output only: the user-level console driver (message-system issue) takes
//! the line over for input.

use super::cpu::{inb, outb};

const COM1: u16 = 0x3f8;

pub fn init() {
    // SAFETY: COM1 is the kernel's log device; this is the standard 16550
    // set-up: 115200 baud (divisor 1), 8N1, FIFOs on, interrupts off.
    unsafe {
        outb(COM1 + 1, 0x00);
        outb(COM1 + 3, 0x80);
        outb(COM1, 0x01);
        outb(COM1 + 1, 0x00);
        outb(COM1 + 3, 0x03);
        outb(COM1 + 2, 0xC7);
        outb(COM1 + 4, 0x03);
    }
}

pub fn write_bytes(bytes: &[u8]) {
    for &b in bytes {
        if b == b'\n' {
            put(b'\r');
        }
        put(b);
    }
}

fn put(b: u8) {
    // SAFETY: polling the line-status register and writing the data
    // register of COM1, which the kernel owns for output.
    unsafe {
        while inb(COM1 + 5) & 0x20 == 0 {
            core::hint::spin_loop();
        }
        outb(COM1, b);
    }
}

/// Leave QEMU through isa-debug-exit (no effect on machines without it).
pub fn qemu_exit(code: u32) {
    // SAFETY: port 0xf4 is QEMU's isa-debug-exit device; writing it ends
    // the emulator. On other machines the port is unused.
    unsafe { super::cpu::outb(abi::qemu_exit::PORT, code as u8) }
}
