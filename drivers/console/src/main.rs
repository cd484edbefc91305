//! console: the serial console driver, a user process (Ridge OS §3: device
//! managers are processes that receive their device's interrupts as
//! messages).
//!
//! It owns COM1's ports and interrupt line and serves one queue, on which
//! both client calls and interrupt messages arrive:
//! - `OP_WRITE`: write the data to the line (polled: the UART's transmit
//!   holding register), reply with the byte count;
//! - `OP_READ`: reply with typed bytes, or keep the call until some arrive;
//! - `OP_SUBSCRIBE`: from then on hand every typed byte to the caller (the
//!   console device manager) instead: no echo, no `OP_READ`;
//! - `OP_SET_INPUT_OWNER`, a one-way message from the starter (init)
//!   only: the one process that may subscribe or read (the terminal
//!   manager init started). Anyone else gets `NOT_THE_OWNER`, whether the
//!   manager runs or is being restarted (docs/reliability.md, "Console
//!   input goes only to the terminal manager");
//! - interrupts: drain the receive buffer; then either echo and answer a
//!   waiting reader, or send the bytes to the subscriber; acknowledge the
//!   line.
//!
//! Line editing (backspace, ^C, ^D) belongs to the console device manager
//! of the UNIX personality; this driver moves bytes.
//!
//! Input for the subscriber travels as one-way `send`s (never `call`: the
//! driver must not wait on its client), 16 bytes a message. When a send
//! fails the bytes are dropped and counted: a full queue loses input as a
//! UART overrun would; a subscriber that has ended is forgotten, and the
//! driver goes back to echoing and buffering until the owner subscribes.
//!
//! Restarts (docs/reliability.md, "The console and the terminal"): init
//! starts the driver again when it ends (`etc/inittab`: `restart`). The
//! kernel frees COM1's ports and interrupt line with the dead process, so
//! the new one takes them as at boot; the console device manager, told
//! by init (`tty::OP_SET_CONSOLE`), subscribes to it. Nothing of the old
//! driver's state is kept: bytes typed while no driver ran wait in the
//! UART and QEMU's serial back end.
//!
//! Arguments: the pid of the process to tell when it is ready (its queue 0
//! gets a `READY` message).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use abi::msg::Kind;
use abi::{Error, Pid};
use protocols::console::{
    COM1_IRQ, COM1_PORT, COM1_PORT_COUNT, INPUT, INPUT_BYTES_PER_MESSAGE, NOT_THE_OWNER, OP_INPUT_STATS,
    OP_READ, OP_SET_INPUT_OWNER, OP_STATS, OP_SUBSCRIBE, OP_WRITE, READY, REFUSED,
};
use runtime::msg::{self, Link, Queue, ReplyHandle};
use runtime::{Args, sys};

runtime::entry!(main);

const DATA: u16 = COM1_PORT;
const INTERRUPT_ENABLE: u16 = COM1_PORT + 1;
const MODEM_CONTROL: u16 = COM1_PORT + 4;
const LINE_STATUS: u16 = COM1_PORT + 5;
const LINE_STATUS_DATA_READY: u8 = 1;
const LINE_STATUS_THR_EMPTY: u8 = 0x20;
/// Most data bytes one message carries: the largest write request, and
/// the most one read answers.
const MAX_DATA_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize;

struct Stats {
    writes: u64,
    bytes_written: u64,
    interrupts: u64,
    /// Bytes handed to readers or sent to the subscriber.
    bytes_read: u64,
    bytes_sent: u64,
    bytes_dropped: u64,
}

/// The process all typed input goes to (`OP_SUBSCRIBE`).
#[derive(Clone, Copy)]
struct Subscriber {
    pid: Pid,
    queue: u32,
    link: Link,
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
        let ready = msg::open_link(starter, Queue(protocols::STARTER_QUEUE))
            .and_then(|l| msg::send(l, &[READY, queue.0 as u64, 0, 0]));
        if ready.is_err() {
            return 2;
        }
    }
    serve(queue, starter)
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

/// Write bytes, turning a bare NL into CR NL (a NL already preceded by
/// CR, as the console device manager's output processing sends it, stays).
fn write_bytes(bytes: &[u8]) {
    let mut after_cr = false;
    for &b in bytes {
        if b == b'\n' && !after_cr {
            write_byte(b'\r');
        }
        write_byte(b);
        after_cr = b == b'\r';
    }
}

/// Send typed bytes to the subscriber, `INPUT_BYTES_PER_MESSAGE` a message.
/// Returns false when the subscriber has ended (or closed its queue).
fn forward(sub: &Subscriber, bytes: &[u8], stats: &mut Stats) -> bool {
    let mut alive = true;
    for chunk in bytes.chunks(INPUT_BYTES_PER_MESSAGE) {
        let mut packed = [0u8; INPUT_BYTES_PER_MESSAGE];
        packed[..chunk.len()].copy_from_slice(chunk);
        let word = |i: usize| u64::from_le_bytes(packed[i..i + 8].try_into().unwrap_or([0; 8]));
        let message = [INPUT, chunk.len() as u64, word(0), word(8)];
        // Once the subscriber is known to be gone, the rest is dropped too.
        let sent = if alive { msg::send(sub.link, &message) } else { Err(Error::DeadPeer) };
        match sent {
            Ok(()) => {
                stats.bytes_sent += chunk.len() as u64;
                stats.bytes_read += chunk.len() as u64;
            }
            Err(e) => {
                stats.bytes_dropped += chunk.len() as u64;
                if matches!(e, Error::DeadPeer | Error::BadQueue | Error::BadLink | Error::NoSuchProcess) {
                    alive = false;
                }
            }
        }
    }
    alive
}

/// `OP_SUBSCRIBE` from `caller` (the input's owner) with its `queue`: the
/// new subscriber, or `None` when another live process holds the input.
fn subscribe(current: Option<Subscriber>, caller: Pid, queue: u32) -> Option<Subscriber> {
    if let Some(old) = current
        && old.pid != caller
    {
        // The owner (checked by the caller) takes over only from a
        // subscriber that has ended, or that init named before it.
        if let Ok(probe) = msg::open_link(old.pid, Queue(old.queue)) {
            let _ = msg::close_link(probe);
            return None;
        }
    }
    let link = msg::open_link(caller, Queue(queue)).ok()?;
    if let Some(old) = current {
        let _ = msg::close_link(old.link);
    }
    Some(Subscriber { pid: caller, queue, link })
}

fn serve(queue: Queue, starter: Option<Pid>) -> i32 {
    let mut stats =
        Stats { writes: 0, bytes_written: 0, interrupts: 0, bytes_read: 0, bytes_sent: 0, bytes_dropped: 0 };
    let mut buf = [0u8; MAX_DATA_BYTES];
    let mut typed = [0u8; 256];
    let mut typed_len = 0;
    // A waiting reader: its reply handle, the most bytes it takes, and
    // who it is.
    let mut reader: Option<(ReplyHandle, usize, Pid)> = None;
    let mut subscriber: Option<Subscriber> = None;
    // The process init named as the terminal manager: the only one that
    // may take typed input (`OP_SET_INPUT_OWNER`). None until init names
    // one, so nobody may before.
    let mut owner: Option<Pid> = None;
    loop {
        let r = match msg::receive_data(queue, &mut buf) {
            Ok(r) => r,
            Err(Error::BufferTooSmall) => continue,
            Err(_) => return 3,
        };
        match r.kind {
            Kind::Interrupt => {
                stats.interrupts += 1;
                match subscriber {
                    Some(sub) => {
                        let mut batch = [0u8; 64];
                        let mut n = 0;
                        let mut alive = true;
                        while sys::inb(LINE_STATUS) & LINE_STATUS_DATA_READY != 0 {
                            batch[n] = sys::inb(DATA);
                            n += 1;
                            if n == batch.len() {
                                alive &= forward(&sub, &batch[..n], &mut stats);
                                n = 0;
                            }
                        }
                        alive &= forward(&sub, &batch[..n], &mut stats);
                        if !alive {
                            let _ = msg::close_link(sub.link);
                            subscriber = None;
                        }
                    }
                    None => {
                        while sys::inb(LINE_STATUS) & LINE_STATUS_DATA_READY != 0 {
                            let b = sys::inb(DATA);
                            let b = if b == b'\r' { b'\n' } else { b };
                            write_bytes(&[b]);
                            if typed_len < typed.len() {
                                typed[typed_len] = b;
                                typed_len += 1;
                            }
                        }
                    }
                }
                let _ = sys::ack_irq(COM1_IRQ);
            }
            Kind::Short if Some(r.sender) == starter && r.message[0] == OP_SET_INPUT_OWNER => {
                owner = Some(Pid(r.message[1]));
                // A subscriber that is not the new owner (the manager that
                // ended) gives the input up; it waits in `typed` for the
                // owner's subscription.
                if let Some(sub) = subscriber
                    && Some(sub.pid) != owner
                {
                    let _ = msg::close_link(sub.link);
                    subscriber = None;
                }
                if let Some((handle, _, by)) = reader
                    && Some(by) != owner
                {
                    let _ = msg::reply(handle, &[NOT_THE_OWNER, 0, 0, 0], &[]);
                    reader = None;
                }
            }
            Kind::Call
                if matches!(r.message[0], OP_SUBSCRIBE | OP_READ)
                    && (owner.is_none() || owner != Some(r.sender)) =>
            {
                let _ = msg::reply(r.reply, &[NOT_THE_OWNER, 0, 0, 0], &[]);
            }
            Kind::Call => match r.message[0] {
                OP_WRITE => {
                    write_bytes(&buf[..r.len]);
                    stats.writes += 1;
                    stats.bytes_written += r.len as u64;
                    let _ = msg::reply(r.reply, &[r.len as u64, 0, 0, 0], &[]);
                }
                OP_READ if reader.is_none() && subscriber.is_none() => {
                    reader = Some((r.reply, r.message[1] as usize, r.sender))
                }
                OP_STATS => {
                    let words = [stats.writes, stats.bytes_written, stats.interrupts, stats.bytes_read];
                    let _ = msg::reply(r.reply, &words, &[]);
                }
                OP_INPUT_STATS => {
                    let (pid, queue) = subscriber.map_or((0, 0), |s| (s.pid.0, s.queue as u64));
                    let _ = msg::reply(r.reply, &[stats.bytes_sent, stats.bytes_dropped, pid, queue], &[]);
                }
                OP_SUBSCRIBE => match subscribe(subscriber, r.sender, r.message[1] as u32) {
                    Some(sub) => {
                        subscriber = Some(sub);
                        let _ = msg::reply(r.reply, &[0, 0, 0, 0], &[]);
                        // Input no longer comes to readers.
                        if let Some((handle, _, _)) = reader.take() {
                            let _ = msg::reply(handle, &[REFUSED, 0, 0, 0], &[]);
                        }
                        // Bytes typed before anyone subscribed are the
                        // subscriber's too.
                        if typed_len > 0 && !forward(&sub, &typed[..typed_len], &mut stats) {
                            let _ = msg::close_link(sub.link);
                            subscriber = None;
                        }
                        typed_len = 0;
                    }
                    None => {
                        let _ = msg::reply(r.reply, &[REFUSED, 0, 0, 0], &[]);
                    }
                },
                // A second reader, a reader while the input is subscribed,
                // or an unknown operation.
                _ => {
                    let _ = msg::reply(r.reply, &[REFUSED, 0, 0, 0], &[]);
                }
            },
            _ => {}
        }
        if typed_len > 0
            && let Some((handle, max, _)) = reader.take()
        {
            let n = typed_len.min(max).min(MAX_DATA_BYTES);
            stats.bytes_read += n as u64;
            let _ = msg::reply(handle, &[n as u64, 0, 0, 0], &typed[..n]);
            typed.copy_within(n..typed_len, 0);
            typed_len -= n;
        }
    }
}
