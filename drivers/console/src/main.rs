//! console: the serial console driver, a user process (Ridge OS §3: device
//! managers are processes that receive their device's interrupts as
//! messages).
//!
//! It owns COM1's ports and interrupt line and serves one queue, on which
//! both client calls and interrupt messages arrive:
//! - `OP_WRITE`: write the data to the line (polled: the UART's transmit
//!   holding register), reply with the byte count;
//! - `OP_READ`: reply with typed bytes, or keep the call until some arrive;
//! - interrupts: drain the receive buffer, echo, answer a waiting reader,
//!   acknowledge the line.
//!
//! Line editing (backspace, ^C, ^D) belongs to the console device manager
//! of the UNIX personality; this driver moves bytes.
//!
//! Arguments: the pid of the process to tell when it is ready (its queue 0
//! gets a `READY` message).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use abi::msg::Kind;
use abi::{Error, Pid};
use protocols::console::{COM1_IRQ, COM1_PORT, COM1_PORT_COUNT, OP_READ, OP_STATS, OP_WRITE, READY};
use runtime::msg::{self, Queue, ReplyHandle};
use runtime::{Args, sys};

runtime::entry!(main);

const DATA: u16 = COM1_PORT;
const INTERRUPT_ENABLE: u16 = COM1_PORT + 1;
const MODEM_CONTROL: u16 = COM1_PORT + 4;
const LINE_STATUS: u16 = COM1_PORT + 5;
const LINE_STATUS_DATA_READY: u8 = 1;
const LINE_STATUS_THR_EMPTY: u8 = 0x20;

struct Stats {
    writes: u64,
    bytes_written: u64,
    interrupts: u64,
    bytes_read: u64,
}

fn main(args: Args) -> i32 {
    let starter = args.get(0).and_then(|s| s.parse::<u64>().ok()).map(Pid);
    let queue = match set_up() {
        Ok(q) => q,
        Err(e) => {
            sys::debug_write(b"console: cannot take COM1: ").ok();
            sys::debug_write(e.name().as_bytes()).ok();
            sys::debug_write(b"\n").ok();
            return 1;
        }
    };
    if let Some(starter) = starter {
        let ready =
            msg::open_link(starter, Queue(0)).and_then(|l| msg::send(l, &[READY, queue.0 as u64, 0, 0]));
        if ready.is_err() {
            return 2;
        }
    }
    serve(queue)
}

fn set_up() -> Result<Queue, Error> {
    let queue = msg::open_queue(32, true)?;
    sys::io_ports(COM1_PORT, COM1_PORT_COUNT)?;
    sys::claim_irq(COM1_IRQ, queue.0)?;
    // Receive-data interrupts on; OUT2 routes the UART's interrupt to the
    // PC's interrupt controller; DTR and RTS up.
    sys::outb(INTERRUPT_ENABLE, 0x01);
    sys::outb(MODEM_CONTROL, 0x0b);
    Ok(queue)
}

fn write_byte(b: u8) {
    while sys::inb(LINE_STATUS) & LINE_STATUS_THR_EMPTY == 0 {
        core::hint::spin_loop();
    }
    sys::outb(DATA, b);
}

fn write_bytes(bytes: &[u8]) {
    for &b in bytes {
        if b == b'\n' {
            write_byte(b'\r');
        }
        write_byte(b);
    }
}

fn serve(queue: Queue) -> i32 {
    let mut stats = Stats { writes: 0, bytes_written: 0, interrupts: 0, bytes_read: 0 };
    let mut buf = [0u8; 4096];
    let mut typed = [0u8; 256];
    let mut typed_len = 0;
    // A waiting reader: its reply handle and the most bytes it takes.
    let mut reader: Option<(ReplyHandle, usize)> = None;
    loop {
        let r = match msg::receive_data(queue, &mut buf) {
            Ok(r) => r,
            Err(Error::BufferTooSmall) => continue,
            Err(_) => return 3,
        };
        match r.kind {
            Kind::Interrupt => {
                stats.interrupts += 1;
                while sys::inb(LINE_STATUS) & LINE_STATUS_DATA_READY != 0 {
                    let b = sys::inb(DATA);
                    let b = if b == b'\r' { b'\n' } else { b };
                    write_bytes(&[b]);
                    if typed_len < typed.len() {
                        typed[typed_len] = b;
                        typed_len += 1;
                    }
                }
                let _ = sys::ack_irq(COM1_IRQ);
            }
            Kind::Call => match r.message[0] {
                OP_WRITE => {
                    write_bytes(&buf[..r.len]);
                    stats.writes += 1;
                    stats.bytes_written += r.len as u64;
                    let _ = msg::reply(r.reply, &[r.len as u64, 0, 0, 0], &[]);
                }
                OP_READ if reader.is_none() => reader = Some((r.reply, r.message[1] as usize)),
                OP_STATS => {
                    let words = [stats.writes, stats.bytes_written, stats.interrupts, stats.bytes_read];
                    let _ = msg::reply(r.reply, &words, &[]);
                }
                // A second reader, or an unknown operation.
                _ => {
                    let _ = msg::reply(r.reply, &[u64::MAX, 0, 0, 0], &[]);
                }
            },
            _ => {}
        }
        if typed_len > 0
            && let Some((handle, max)) = reader.take()
        {
            let n = typed_len.min(max).min(4096);
            stats.bytes_read += n as u64;
            let _ = msg::reply(handle, &[n as u64, 0, 0, 0], &typed[..n]);
            typed.copy_within(n..typed_len, 0);
            typed_len -= n;
        }
    }
}
