//! What the message system moves: a [`Message`] waiting in a queue, the
//! fixed part of one on its way ([`Head`]), and where its data comes from
//! ([`Payload`]). Plain data; the operations are in ipc.rs.

use crate::arch::frames::Frame;
use abi::Pid;
use abi::msg::Kind;

/// Data carried by a message waiting in a queue: one frame the message
/// owns (a reference to it: dropping the message lets it go).
#[derive(Debug)]
pub struct Data {
    pub frame: Frame,
    pub len: u16,
    /// The frame is a page lent copy-on-write by the sender (not a copy).
    pub is_loan: bool,
}

#[derive(Debug)]
pub struct Message {
    pub words: [u64; 4],
    /// Who sent it; for a call, who waits for the reply.
    pub sender: Pid,
    pub kind: Kind,
    pub data: Option<Data>,
    /// A call passed on by `forward_wait`: the server that passed it
    /// (the receiver sees this pid as the sender; the reply still goes to
    /// `sender`). `Pid(0)`: not forwarded.
    pub via: Pid,
}

impl Message {
    /// The pid the receiver is told sent it (`rdx`).
    pub fn reported_sender(&self) -> Pid {
        reported(self.sender, self.via)
    }
}

/// The sender a receiver is told of: the forwarding server, if any.
pub fn reported(sender: Pid, via: Pid) -> Pid {
    if via.0 != 0 { via } else { sender }
}

/// A message's fixed part, on its way to a queue or a receiver.
#[derive(Clone, Copy)]
pub struct Head {
    pub words: [u64; 4],
    pub sender: Pid,
    pub kind: Kind,
}

/// Where the data of a message being delivered comes from.
pub enum Payload {
    None,
    /// A frame owned by the message (see [`Data`]).
    Frame(Data),
    /// Still in the sender's memory: copied once, straight to the receiver,
    /// when the receiver is waiting (or into a frame if it must queue).
    User {
        from: usize,
        addr: u64,
        len: u64,
    },
}
