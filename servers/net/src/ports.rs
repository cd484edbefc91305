//! Which ports are taken: the cradle's table, because smoltcp keeps none
//! (a socket names its own port, and two listeners on one port would both
//! listen). A port is held by the user sockets bound to it and by the
//! connections the stack still winds down after their sockets were closed
//! ("orphans"). A bind finds it free when nobody holds it, or when only
//! orphans do and the binder set `SO_REUSEADDR` (the classic reason for
//! the option: restart a server while its old connections linger).
//!
//! Ephemeral ports are handed out round-robin from a range
//! ([`DEFAULT_EPHEMERAL`] or a socket's own, `IP_LOCAL_PORT_RANGE`).

use alloc::collections::BTreeMap;
use protocols::unix::Errno;
use protocols::unix::errno::EADDRINUSE;

/// Linux's and IANA's dynamic range.
pub const DEFAULT_EPHEMERAL: (u16, u16) = (49152, 65535);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Proto {
    Tcp,
    Udp,
    Icmp,
}

#[derive(Default, Clone, Copy)]
struct Holders {
    users: u32,
    orphans: u32,
}

#[derive(Default)]
pub struct Ports {
    held: BTreeMap<(Proto, u16), Holders>,
    cursor: u32,
}

impl Ports {
    /// Take `port` for a user socket.
    pub fn hold(&mut self, proto: Proto, port: u16, reuse: bool) -> Result<(), Errno> {
        let h = self.held.entry((proto, port)).or_default();
        if h.users > 0 || (h.orphans > 0 && !reuse) {
            return Err(EADDRINUSE);
        }
        h.users += 1;
        Ok(())
    }

    /// A free port from `range` (inclusive), taken for a user socket.
    pub fn ephemeral(&mut self, proto: Proto, range: (u16, u16)) -> Option<u16> {
        let (lo, hi) = range;
        let size = hi as u32 - lo as u32 + 1;
        for i in 0..size {
            let port = (lo as u32 + (self.cursor + i) % size) as u16;
            let free = self.held.get(&(proto, port)).is_none_or(|h| h.users == 0 && h.orphans == 0);
            if free {
                self.cursor = self.cursor.wrapping_add(i + 1);
                self.held.entry((proto, port)).or_default().users += 1;
                return Some(port);
            }
        }
        None
    }

    fn change(&mut self, proto: Proto, port: u16, f: impl FnOnce(&mut Holders)) {
        if let Some(h) = self.held.get_mut(&(proto, port)) {
            f(h);
            if h.users == 0 && h.orphans == 0 {
                self.held.remove(&(proto, port));
            }
        }
    }

    pub fn release(&mut self, proto: Proto, port: u16) {
        self.change(proto, port, |h| h.users = h.users.saturating_sub(1));
    }

    /// A user socket's connection lives on after its close.
    pub fn orphan(&mut self, proto: Proto, port: u16) {
        self.change(proto, port, |h| {
            h.users = h.users.saturating_sub(1);
            h.orphans += 1;
        });
    }

    pub fn orphan_gone(&mut self, proto: Proto, port: u16) {
        self.change(proto, port, |h| h.orphans = h.orphans.saturating_sub(1));
    }

    /// Ports held (for the statistics: 0 when every socket is gone).
    pub fn count(&self) -> usize {
        self.held.len()
    }
}
