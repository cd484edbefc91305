//! The R1 round trips (seed 001, Table 1) over Ridgeback's message system:
//! a client (the measuring process) and an echo server, a copy of this
//! program started at a higher priority than the client, as in the seed.
//!
//! Setting up (the same handshake as the in-QEMU tests' `tmsg`): the
//! client opens its queue and starts the server with its pid and queue
//! number; the server opens its own queue, links to the client's and says
//! hello with its queue number; the client links back. Stopping: the
//! client sends [`STOP`] and waits for the server to exit with 0, so a
//! server that failed along the way fails the figure.
//!
//! The three servers, one per way of doing a round trip:
//! - [`Server::Call`]: `reply_wait` answers each call and waits for the
//!   next in one kernel entry; the client's `call` is the other entry: 2
//!   kernel entries per round trip.
//! - [`Server::Send`]: `receive_data` then `send` back; the client does the
//!   same the other way round: 4 entries (Ridge's Table 1 round trip).
//! - [`Server::Data`]: as `Send`, but the request carries up to a page of
//!   data (`send_data`), received into a page-aligned buffer; the reply's
//!   first word echoes the data's first 8 bytes, its second the length.

use abi::msg::{Kind, Message};
use abi::{Error, ExitStatus, InfoKey, Pid};
use alloc::format;
use bench::workloads::{DataRoundTrip, MESSAGE_BYTES, RoundTrip};
use runtime::msg::{self, Link, Page, Queue};
use runtime::sys;

/// m0 of the server's first message.
const HELLO: u64 = 0x0048_454c_4c4f;
/// m0 of the message that ends a server.
const STOP: u64 = 0x5354_4f50;
/// How far above the client the server runs (seed 001: "a higher-priority
/// server").
const SERVER_PRIORITY_ABOVE_CLIENT: u64 = 2;
/// What the queue segment of either end needs: a few links and queues,
/// room for the messages in flight (one at a time, plus the hello and the
/// stop) and one page of data.
const QSEG_NEEDED: [u64; 4] = [4, 2, 16, 4];

/// Grows the queue segment the runtime made at start (`abi::msg::DEFAULT_*`)
/// to [`QSEG_NEEDED`] where it is smaller (`init_qseg` never shrinks).
fn ensure_queue_segment() -> Result<(), Error> {
    let defaults = [
        abi::msg::DEFAULT_LINKS,
        abi::msg::DEFAULT_QUEUES,
        abi::msg::DEFAULT_MESSAGES,
        abi::msg::DEFAULT_PAGES,
    ];
    let [links, queues, messages, pages] = core::array::from_fn(|i| QSEG_NEEDED[i].max(defaults[i]));
    msg::init_qseg(links, queues, messages, pages)
}
/// Capacity of each end's queue.
const QUEUE_MESSAGES: u64 = 8;

/// Which server a figure talks to; the word after `helper` on the
/// server's argument line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server {
    Call,
    Send,
    Data,
}

impl Server {
    pub fn role(self) -> &'static str {
        match self {
            Server::Call => "call-server",
            Server::Send => "send-server",
            Server::Data => "data-server",
        }
    }

    pub fn from_role(role: &str) -> Option<Server> {
        [Server::Call, Server::Send, Server::Data].into_iter().find(|s| s.role() == role)
    }
}

/// The client's end: a link to a running server, and the client's queue
/// where `Send`/`Data` replies arrive.
pub struct Connection {
    server: Server,
    pid: Pid,
    link: Link,
    queue: Queue,
}

/// The client's queue, opened once per process.
pub fn client_queue() -> Result<Queue, Error> {
    ensure_queue_segment()?;
    msg::open_queue(QUEUE_MESSAGES, true)
}

impl Connection {
    /// Starts `server` (a copy of `program`) above the caller's priority
    /// and links to it.
    pub fn start(program: &str, server: Server, queue: Queue) -> Result<Connection, &'static str> {
        let args = format!("{} {} {} {}", crate::HELPER, server.role(), sys::getpid().0, queue.0);
        let priority = sys::info(InfoKey::Priority) + SERVER_PRIORITY_ABOVE_CLIENT;
        let pid = sys::spawn_with_priority(program, &args, priority).map_err(|e| e.name())?;
        let hello = msg::receive_data(queue, &mut []).map_err(|e| e.name())?;
        if hello.sender != pid || hello.message[0] != HELLO {
            return Err("the first message is not the server's hello");
        }
        let link = msg::open_link(pid, Queue(hello.message[1] as u32)).map_err(|e| e.name())?;
        Ok(Connection { server, pid, link, queue })
    }

    /// Stops the server and checks that it ended well.
    pub fn stop(self) -> Result<(), &'static str> {
        let stop: Message = [STOP, 0, 0, 0];
        match self.server {
            Server::Call => msg::call(self.link, &stop, &[], &mut []).map(|_| ()),
            Server::Send | Server::Data => msg::send(self.link, &stop),
        }
        .map_err(|e| e.name())?;
        match sys::wait(Some(self.pid)) {
            Ok((_, ExitStatus::Exited(0))) => Ok(()),
            Ok(_) => Err("the server did not exit with 0"),
            Err(e) => Err(e.name()),
        }
    }
}

fn to_words(bytes: &[u8; MESSAGE_BYTES]) -> Message {
    core::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes")))
}

fn to_bytes(words: &Message, bytes: &mut [u8; MESSAGE_BYTES]) {
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
}

/// The 32-byte round trip: `Call` for a call server, `Send` then
/// `ReceiveData` for a send server. Inlined into the benchmark loop: the
/// figure is the kernel's round trip, not a function call around it.
impl RoundTrip for Connection {
    #[inline]
    fn round_trip(&mut self, request: &[u8; MESSAGE_BYTES], reply: &mut [u8; MESSAGE_BYTES]) {
        let words = to_words(request);
        let answer = match self.server {
            Server::Call => msg::call(self.link, &words, &[], &mut []).map(|(answer, _)| answer),
            Server::Send | Server::Data => msg::send(self.link, &words)
                .and_then(|()| msg::receive_data(self.queue, &mut []))
                .map(|received| received.message),
        };
        // The workload checks the echo; an error gives a reply it rejects.
        to_bytes(&answer.unwrap_or([u64::MAX; 4]), reply);
    }
}

/// `SendData` with `request` as the data, then `ReceiveData` for the reply.
/// Whether the data is copied or lent depends on the buffer alone: one
/// whole page-aligned page is lent copy-on-write, anything else copied.
impl DataRoundTrip for Connection {
    fn round_trip_data(&mut self, request: &[u8], reply: &mut [u8; MESSAGE_BYTES]) {
        let words = [0, request.len() as u64, 0, 0];
        let answer = msg::send_data(self.link, &words, request)
            .and_then(|()| msg::receive_data(self.queue, &mut []))
            .map(|received| received.message)
            .ok()
            // The server reports the length it received in the second word.
            .filter(|answer| answer[1] == request.len() as u64);
        to_bytes(&answer.unwrap_or([u64::MAX; 4]), reply);
    }
}

/// The server's side, from its argument line (`client_pid client_queue`).
/// Returns the exit status.
pub fn serve(server: Server, client: Pid, client_queue: Queue, page: &mut Page) -> i32 {
    let setup = ensure_queue_segment()
        .and_then(|()| msg::open_queue(QUEUE_MESSAGES, true))
        .and_then(|queue| msg::open_link(client, client_queue).map(|link| (queue, link)))
        .and_then(|(queue, link)| msg::send(link, &[HELLO, queue.0 as u64, 0, 0]).map(|()| (queue, link)));
    let (queue, link) = match setup {
        Ok(ends) => ends,
        Err(e) => {
            bench::harness::comment::<crate::Ridgeback>(format_args!(
                "{}: set-up: {}",
                server.role(),
                e.name()
            ));
            return 1;
        }
    };
    let result = match server {
        Server::Call => serve_calls(queue),
        Server::Send => serve_sends(queue, link),
        Server::Data => serve_data(queue, link, page),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            bench::harness::comment::<crate::Ridgeback>(format_args!("{}: {}", server.role(), e.name()));
            2
        }
    }
}

/// `reply_wait` echoing each call's words, until [`STOP`].
fn serve_calls(queue: Queue) -> Result<(), Error> {
    let mut pending = None;
    let mut words: Message = [0; 4];
    loop {
        let received = msg::reply_wait(pending, &words, &[], queue, &mut [])?;
        if received.kind != Kind::Call {
            return Err(Error::InvalidArgument);
        }
        words = received.message;
        if words[0] == STOP {
            return msg::reply(received.reply, &words, &[]);
        }
        pending = Some(received.reply);
    }
}

/// `receive_data` then `send` of the same words, until [`STOP`].
fn serve_sends(queue: Queue, link: Link) -> Result<(), Error> {
    loop {
        let received = msg::receive_data(queue, &mut [])?;
        if received.message[0] == STOP {
            return Ok(());
        }
        msg::send(link, &received.message)?;
    }
}

/// `receive_data` into a page-aligned page (so a lent page can be mapped
/// rather than copied), then `send` back the data's first 8 bytes and
/// its length, until [`STOP`].
fn serve_data(queue: Queue, link: Link, page: &mut Page) -> Result<(), Error> {
    loop {
        let received = msg::receive_data(queue, &mut page.0)?;
        if received.kind == Kind::Short && received.message[0] == STOP {
            return Ok(());
        }
        let first = u64::from_le_bytes(page.0[..8].try_into().expect("8 bytes"));
        msg::send(link, &[first, received.len as u64, 0, 0])?;
    }
}
