//! tmsg: the message-system roles the in-QEMU tests start. The test runner
//! passes its own pid; each role links to the runner's queue 0, announces
//! itself with a message ("hello": m0 = HELLO, m1 = the role's queue), and
//! then plays its part.

#![no_std]
#![no_main]

#[path = "../tmsg_words.rs"]
mod tmsg_words;

use abi::msg::Kind;
use abi::{Error, Pid};
use runtime::msg::{self, Link, Page, Queue};
use runtime::{Args, println, sys};
use tmsg_words::HELLO;

runtime::entry!(main);

/// The most data one message carries, as a buffer length.
const MAX_DATA: usize = abi::msg::MAX_DATA_BYTES as usize;

fn main(args: Args) -> i32 {
    let role = args.get(0).unwrap_or("");
    let num = |i: usize| args.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    let parent = Pid(num(1));
    if msg::init_qseg(16, 4, 64, 16).is_err() {
        return 90;
    }
    let Ok(my_queue) = msg::open_queue(32, true) else { return 91 };
    let link = match msg::open_link(parent, Queue(protocols::STARTER_QUEUE)) {
        Ok(l) => l,
        Err(e) => {
            println!("tmsg: cannot link to the runner: {}", e.name());
            return 92;
        }
    };
    if send_retrying(link, &[HELLO, my_queue.0 as u64, 0, 0]).is_err() {
        return 93;
    }
    match role {
        // After a go-ahead, send `n` numbered messages with checkable contents.
        "sender" => {
            let mut go = [0u8; 16];
            if msg::receive_data(my_queue, &mut go).is_err() {
                return 6;
            }
            let tag = num(3);
            for i in 0..num(2) {
                if let Err(e) = send_retrying(link, &[tag, i, !i, tag ^ i]) {
                    println!("tmsg: send {i}: {}", e.name());
                    return 1;
                }
            }
            0
        }
        // Serve calls: reply with each word plus one and the data reversed.
        "echo" => echo(my_queue, num(2)),
        // After a go-ahead, call the `echo` at pid `num(2)`, queue `num(3)`,
        // `num(4)` times, yielding after each call, and check every answer.
        "caller" => {
            let mut go = [0u8; 16];
            if msg::receive_data(my_queue, &mut go).is_err() {
                return 6;
            }
            caller(Pid(num(2)), Queue(num(3) as u32), num(4))
        }
        // Take one call and end without answering it.
        "die-on-call" => {
            let mut buf = [0u8; 16];
            let _ = msg::receive_data(my_queue, &mut buf);
            0
        }
        // Wait for a message for ever (to be killed).
        "receive-forever" => {
            let mut buf = [0u8; 16];
            let _ = msg::receive_data(my_queue, &mut buf);
            3
        }
        // After a go-ahead, lend a page, then overwrite it at once; then send the new
        // contents as a copy.
        "lend-page" => {
            let mut page = Page::zeroed(); // page-aligned, on the stack
            let mut go = [0u8; 16];
            if msg::receive_data(my_queue, &mut go).is_err() {
                return 6;
            }
            page.0.fill(0xaa);
            if msg::send_data(link, &[1, 0, 0, 0], &page.0).is_err() {
                return 4;
            }
            page.0.fill(0xbb);
            if msg::send_data(link, &[2, 0, 0, 0], &page.0[..100]).is_err() {
                return 5;
            }
            0
        }
        // After a go-ahead, lend a page (0xaa), then after a second
        // go-ahead check that it still holds what was lent: the receiver
        // had the kernel write into its copy-on-write copy meanwhile.
        "lend-page-and-check" => {
            let mut page = Page::zeroed(); // page-aligned, on the stack
            let mut go = [0u8; 16];
            if msg::receive_data(my_queue, &mut go).is_err() {
                return 6;
            }
            page.0.fill(0xaa);
            if msg::send_data(link, &[1, 0, 0, 0], &page.0).is_err() {
                return 4;
            }
            if msg::receive_data(my_queue, &mut go).is_err() {
                return 6;
            }
            if page.0.iter().all(|&b| b == 0xaa) { 0 } else { 8 }
        }
        // Wait for a go-ahead, then try to link to the runner's queue `n`
        // and exit with the error code (0 when allowed).
        "try-link-after-go" => {
            let mut buf = [0u8; 16];
            if msg::receive_data(my_queue, &mut buf).is_err() {
                return 6;
            }
            match msg::open_link(parent, Queue(num(2) as u32)) {
                Ok(_) => 0,
                Err(e) => e as i32,
            }
        }
        // Call the runner and wait for ever (to be killed while the call waits).
        "call-runner" => {
            let _ = msg::call(link, &[7, 7, 7, 7], &[], &mut []);
            7
        }
        // Call the runner with [7, 0, 0, 0] and "xyz", which it passes on
        // (`forward_wait`) to a `forward-target`: exit 0 for that server's
        // answer ([the runner's pid, 1, 2, 3] and "cba"), 20 for DeadPeer,
        // 30 for the runner's own answer (m0 = 77), 1 for anything else.
        "call-expect" => {
            let mut got = [0u8; 16];
            match msg::call(link, &[7, 0, 0, 0], b"xyz", &mut got) {
                Ok((w, 3)) if w == [parent.0, 1, 2, 3] && &got[..3] == b"cba" => 0,
                Ok((w, _)) if w[0] == 77 => 30,
                Err(Error::DeadPeer) => 20,
                Ok((w, n)) => {
                    println!("tmsg call-expect: answer {w:?} with {n} bytes");
                    1
                }
                Err(e) => {
                    println!("tmsg call-expect: {}", e.name());
                    1
                }
            }
        }
        // Take one call and answer it with [the sender the kernel reported,
        // m0, m1, data bytes] and the data reversed; then exit 0.
        "forward-target" => {
            let mut buf = [0u8; MAX_DATA];
            let Ok(r) = msg::receive_data(my_queue, &mut buf) else { return 2 };
            if r.kind != Kind::Call {
                return 3;
            }
            let mut out = [0u8; MAX_DATA];
            for i in 0..r.len {
                out[i] = buf[r.len - 1 - i];
            }
            match msg::reply(r.reply, &[r.sender.0, r.message[0], r.message[1], r.len as u64], &out[..r.len])
            {
                Ok(()) => 0,
                Err(_) => 4,
            }
        }
        // After a go-ahead, queue `n` messages to the runner and end (they
        // stay deliverable).
        "send-and-die" => {
            let mut go = [0u8; 16];
            if msg::receive_data(my_queue, &mut go).is_err() {
                return 6;
            }
            for i in 0..num(2) {
                let _ = msg::send(link, &[i, 0, 0, 0]);
            }
            0
        }
        _ => {
            println!("tmsg: unknown role {role:?}");
            100
        }
    }
}

/// Send, waiting while the receiver's queue is full.
fn send_retrying(link: Link, m: &[u64; 4]) -> Result<(), Error> {
    loop {
        match msg::send(link, m) {
            Err(Error::QueueFull) => sys::yield_now(),
            other => return other,
        }
    }
}

fn echo(q: Queue, calls: u64) -> i32 {
    let mut buf = [0u8; MAX_DATA];
    let mut out = [0u8; MAX_DATA];
    let mut reply = None;
    let mut words = [0u64; 4];
    let mut len = 0;
    let mut served = 0;
    loop {
        let r = match msg::reply_wait(reply, &words, &out[..len], q, &mut buf) {
            Ok(r) => r,
            Err(e) => {
                println!("tmsg echo: {}", e.name());
                return 1;
            }
        };
        if r.kind != Kind::Call {
            println!("tmsg echo: got a {:?} message", r.kind);
            return 2;
        }
        words = r.message.map(|w| w.wrapping_add(1));
        len = r.len;
        for i in 0..len {
            out[i] = buf[len - 1 - i];
        }
        reply = Some(r.reply);
        served += 1;
        if served == calls {
            // Answer the last call and stop.
            return match msg::reply(r.reply, &words, &out[..len]) {
                Ok(()) => 0,
                Err(_) => 3,
            };
        }
    }
}

/// `calls` calls to an `echo` server, half with a few bytes of data (the
/// general path) and half without (the fast path); after each, a yield (a
/// trip through the scheduler, which may move this process to another
/// CPU) and [`CHEAP_CALLS_PER_CALL`] `getpid`s (the shortest kernel
/// entries: they take the kernel lock most often for the work done). Exits
/// 0 when every answer was the request plus one and the data reversed,
/// and every `getpid` this process's pid.
fn caller(echo: Pid, queue: Queue, calls: u64) -> i32 {
    let Ok(link) = msg::open_link(echo, queue) else { return 10 };
    let me = sys::getpid();
    let mut reply = [0u8; 8];
    for i in 0..calls {
        let words = [i, !i, echo.0, 7];
        let data = i.to_le_bytes();
        let sent = if i % 2 == 0 { &data[..] } else { &[] };
        match msg::call(link, &words, sent, &mut reply) {
            Ok((got, n)) if got == words.map(|w| w.wrapping_add(1)) && n == sent.len() => {
                if (0..n).any(|j| reply[j] != sent[n - 1 - j]) {
                    println!("tmsg caller: call {i}: the data is not the request reversed");
                    return 12;
                }
            }
            Ok((got, n)) => {
                println!("tmsg caller: call {i}: answer {got:?} with {n} bytes");
                return 11;
            }
            Err(e) => {
                println!("tmsg caller: call {i}: {}", e.name());
                return 13;
            }
        }
        sys::yield_now();
        if (0..CHEAP_CALLS_PER_CALL).any(|_| sys::getpid() != me) {
            println!("tmsg caller: getpid changed");
            return 14;
        }
    }
    0
}

/// Kernel entries that do next to nothing, per call of [`caller`].
const CHEAP_CALLS_PER_CALL: u32 = 96;
