//! The message system (Ridge OS §5) and the synchronous call its authors
//! planned (§5 "Message System Performance", §8 "Futures").
//!
//! Layers, bottom up:
//! - [`Message`] (message.rs): what waits in a queue: 32 bytes, the
//!   sender, a kind, and optionally one frame of data (copied, or lent
//!   copy-on-write);
//! - `ReplyTable` (reply_table.rs): a server's one-shot reply handles for
//!   calls it has received and not yet answered;
//! - delivery ([`Kernel::deliver`]): straight into a receiver blocked on that
//!   queue — its saved registers and its buffer, no queueing ("a single
//!   entry into the kernel performs a Send, context switch, and a
//!   ReceiveData") — or else onto the queue, waking an `arm`ed waiter;
//! - the operations behind the message calls, at the bottom of this file,
//!   with typed arguments (syscall/message.rs decodes the registers).
//!
//! Scheduling falls out of the ready lists: a receiver made ready at a
//! higher priority than the sender preempts it on the way out of the same
//! kernel entry (Ridge's rule for Send); a caller blocks in `call`, so the
//! server it woke runs next on this CPU whenever its priority is at least
//! the caller's. Wakeups on the call path are *local*: they do not send an
//! inter-processor interrupt, because this CPU is about to run the woken
//! process itself.
//!
//! Priority inversion: while a server works on a call it runs at the
//! caller's priority (QNX's rule), set when it receives the call (the most
//! recently received call's, when it holds several) and reset to its own
//! when it has answered every call it holds, when it blocks for its next
//! message, and when the message it takes is not a call: a call it keeps
//! for later (a lock waiter, a read of an empty pipe) is not work in
//! progress, and a server that kept a low-priority call must not answer
//! the next message at that priority. A low-priority client therefore
//! cannot make a high-priority server do work ahead of medium-priority
//! processes, and a high-priority client's request is not stuck behind
//! them either.
//!
//! Leases (Hubris's leases, MINIX 3's grants): a call lends the server its
//! send buffer to read and its receive buffer to write, of any length up
//! to `abi::lease::MAX_LEASE_BYTES`, until the reply; the server moves data
//! with `lease_read`/`lease_write`, one copy straight between the two
//! address spaces, at any offset. The reply handle is the key: once it is
//! used (or the caller has gone) the lease is gone with it.
//!
//! Dead peers: a send on a link to an ended process fails with `DeadPeer`;
//! when a process ends, callers blocked on it get `DeadPeer`, the messages
//! waiting in its queues are dropped (their data freed, their callers
//! answered with `DeadPeer`), and the *calls* it made that still wait in
//! other processes' queues are dropped too (nobody waits for their
//! answers). Its plain messages stay queued: `send` told the sender they
//! were sent, so they are delivered, as data written to a UNIX pipe is
//! still read after the writer exits.

use crate::arch::frames::Frame;
use crate::arch::paging::CopyMode;
use crate::arch::regs::{CallArgs, Received, ReplyWaitArgs};
use crate::message::{Data, Head, Message, Payload, reported};
use crate::process::{Blocked, State};
use crate::state::Kernel;
use crate::usermem::{self, Blame, ListSide, Segments, UserSlice};
use abi::layout::PAGE_SIZE;
use abi::lease::{self, MAX_LEASE_BYTES};
use abi::msg::{Kind, MAX_DATA_BYTES, NO_RECEIVE, NO_REPLY};
use abi::{Counter, Error, Pid};
use kernel_core::qseg::{Limits, Link, QueueSegment};

impl Kernel {
    fn qseg(&mut self, slot: usize) -> Result<&mut QueueSegment<Message>, Error> {
        self.proc_mut(slot).qseg.as_mut().ok_or(Error::NoQueueSegment)
    }

    /// Drop a message that will not be delivered: free its data and answer
    /// its caller, if it was a call.
    fn dispose(&mut self, m: Message) {
        if m.kind == Kind::Call {
            self.fail_caller(m.sender, Error::DeadPeer);
        }
    }

    /// Wake `caller` (if it still waits in a call) with an error.
    fn fail_caller(&mut self, caller: Pid, e: Error) {
        if let Some(c) = self.slot_of(caller)
            && matches!(self.proc(c).state, State::Blocked(Blocked::Call { .. }))
        {
            self.proc_mut(c).set_return(Err(e));
            self.make_ready(c);
        }
    }

    /// Turn a `User` payload into a frame so the message can wait in a queue.
    fn materialize(&mut self, payload: Payload) -> Result<Option<Data>, Error> {
        match payload {
            Payload::None => Ok(None),
            Payload::Frame(d) => Ok(Some(d)),
            Payload::User { from, addr, len } => {
                let mut frame = Frame::alloc().ok_or(Error::OutOfResources)?;
                let space = self.proc(from).space.as_ref().ok_or(Error::DeadPeer)?;
                let mut chunk = [0u8; 256];
                let src = UserSlice::new(addr, len)?;
                let mut done = 0;
                while done < len {
                    let n = (len - done).min(chunk.len() as u64) as usize;
                    src.read_at(space, done, &mut chunk[..n])?;
                    frame.write(done as usize, &chunk[..n]);
                    done += n as u64;
                }
                self.add(Counter::BytesCopied, len);
                Ok(Some(Data { frame, len: len as u16, is_loan: false }))
            }
        }
    }

    /// Deliver a message to queue `queue` of the process in slot `to`.
    /// `local` wakeups do not interrupt another CPU (see the module doc).
    pub fn deliver(
        &mut self,
        to: usize,
        queue: u32,
        head: Head,
        payload: Payload,
        local: bool,
    ) -> Result<(), Error> {
        self.deliver_via(to, queue, head, Pid(0), payload, local)
    }

    /// [`Kernel::deliver`], for a call passed on by server `via`
    /// (`forward_wait`; `Pid(0)`: none), which the receiver is told of as
    /// the sender.
    fn deliver_via(
        &mut self,
        to: usize,
        queue: u32,
        head: Head,
        via: Pid,
        payload: Payload,
        local: bool,
    ) -> Result<(), Error> {
        let Head { words, sender, kind } = head;
        self.count(Counter::Messages);
        if self.proc(to).qseg.is_none() {
            return Err(Error::BadQueue); // a lent frame goes with the payload
        }
        // The receiver waits on this very queue: hand the message over.
        if let State::Blocked(Blocked::Receive { queue: q, buf, buf_len, .. }) = self.proc(to).state
            && q == queue
        {
            // Straight into its registers (and its buffer: one copy), when
            // the data is still in the sender's memory and fits.
            let payload = match payload {
                Payload::None => {
                    self.finish_receive(to, words, (sender, via), kind, 0, local)?;
                    self.count(Counter::DirectHandoffs);
                    return Ok(());
                }
                Payload::User { from, addr, len } if len <= buf_len => {
                    // The copy checks both buffers once, source first
                    // (`usermem::copy_between_blaming`): a bad source
                    // buffer is the sender's error; a bad receive buffer
                    // the receiver learns of below.
                    match self.copy_between_processes_blaming(from, addr, to, buf, len) {
                        Ok(()) => {
                            self.add(Counter::BytesCopied, len);
                            self.finish_receive(to, words, (sender, via), kind, len, local)?;
                            self.count(Counter::DirectHandoffs);
                            return Ok(());
                        }
                        Err((e, Blame::Source)) => return Err(e),
                        Err((_, Blame::Destination)) => Payload::User { from, addr, len },
                    }
                }
                other => other,
            };
            // Otherwise (a lent page, data that does not fit, a bad receive
            // buffer) the message waits at the head of the queue and the
            // receive is completed from there: mapped or copied out, or
            // answered with the error that keeps it queued.
            let data = self.materialize(payload)?;
            self.enqueue(to, queue, Message { words, sender, kind, data, via }, local)?;
            let is_received = self.receive_now(to, queue as u64, buf, buf_len);
            if !matches!(self.proc(to).state, State::Blocked(_)) {
                if is_received {
                    self.count(Counter::DirectHandoffs);
                }
                self.wake(to, local);
            }
            return Ok(());
        }
        let data = self.materialize(payload)?;
        self.enqueue(to, queue, Message { words, sender, kind, data, via }, local)
    }

    /// Put a message on a queue, charging the receiver's page quota for its
    /// data, and wake the receiver if it waits on its armed queues.
    fn enqueue(&mut self, to: usize, queue: u32, m: Message, local: bool) -> Result<(), Error> {
        let is_waiting_armed = self.proc(to).state == State::Blocked(Blocked::WaitArmed);
        let qseg = self.proc_mut(to).qseg.as_mut().ok_or(Error::BadQueue)?;
        let has_data = m.data.is_some();
        if has_data && let Err(e) = qseg.reserve_page() {
            self.dispose_without_reply(m);
            return Err(e);
        }
        if let Err((e, m)) = qseg.push(queue as u64, m) {
            if has_data {
                qseg.release_page();
            }
            self.dispose_without_reply(m);
            return Err(e);
        }
        if is_waiting_armed && qseg.is_armed(queue as u64) {
            self.proc_mut(to).set_return(Ok(queue as u64));
            self.wake(to, local);
        }
        Ok(())
    }

    /// Free a refused message's data; its sender learns from the error.
    fn dispose_without_reply(&mut self, m: Message) {
        drop(m);
    }

    /// Make a process ready; `local` wakeups leave other CPUs alone (see
    /// the module doc).
    fn wake(&mut self, slot: usize, local: bool) {
        if local {
            self.make_ready_local(slot);
        } else {
            self.make_ready(slot);
        }
    }

    /// Complete a receive in `to`'s registers and make it ready.
    fn finish_receive(
        &mut self,
        to: usize,
        words: [u64; 4],
        sender: (Pid, Pid),
        kind: Kind,
        len: u64,
        local: bool,
    ) -> Result<(), Error> {
        self.set_received(to, words, sender, kind, len)?;
        self.wake(to, local);
        Ok(())
    }

    /// The state of `slot` blocking to receive on its open queue `queue`.
    fn receiving(&self, slot: usize, queue: u64, buf: u64, buf_len: u64) -> State {
        let generation = self.proc(slot).qseg.as_ref().and_then(|q| q.generation(queue).ok()).unwrap_or(0);
        State::Blocked(Blocked::Receive { queue: queue as u32, generation, buf, buf_len })
    }

    /// Give `to` a reply handle for a call from `caller`, and `to` takes on
    /// the caller's priority while it serves the call.
    fn accept_call(&mut self, to: usize, caller: Pid) -> Result<u64, Error> {
        let limit = self.proc(to).qseg.as_ref().map_or(0, |q| q.limits().messages as usize);
        let handle = self.proc_mut(to).replies.insert(caller, limit.max(1))?;
        if let Some(c) = self.slot_of(caller) {
            self.proc_mut(to).priority = self.proc(c).priority;
        }
        Ok(handle)
    }

    /// `to` takes a message that is not a call: it works for no caller, so
    /// at its own priority. Returns 0 (the reply handle of a non-call).
    fn own_priority(&mut self, to: usize) -> u64 {
        let p = self.proc_mut(to);
        p.priority = p.base_priority;
        0
    }

    /// Write a received message into `to`'s saved registers.
    fn write_received(&mut self, to: usize, words: [u64; 4], sender: Pid, kind: Kind, len: u64, handle: u64) {
        let received = Received { len_bytes: len, sender, kind, reply_handle: handle, message: words };
        self.proc_mut(to).frame.set_received(received);
    }

    /// Complete a receive in `to`'s saved registers (allocating a reply
    /// handle for a call). `(sender, via)`: who sent it and who passed it
    /// on ([`Message::via`]).
    fn set_received(
        &mut self,
        to: usize,
        words: [u64; 4],
        (sender, via): (Pid, Pid),
        kind: Kind,
        len: u64,
    ) -> Result<(), Error> {
        let handle = if kind == Kind::Call { self.accept_call(to, sender)? } else { self.own_priority(to) };
        self.write_received(to, words, reported(sender, via), kind, len, handle);
        Ok(())
    }

    /// Try to receive from `queue` into process `slot` now. When a message
    /// was taken (true) or the receive failed, its registers hold the
    /// result and it is no longer blocked (the caller makes it runnable);
    /// with an empty queue it is left `Blocked(Receive)`.
    fn receive_now(&mut self, slot: usize, queue: u64, buf: u64, buf_len: u64) -> bool {
        let result = self.try_receive(slot, queue, buf, buf_len);
        match result {
            Ok(true) => {
                if matches!(self.proc(slot).state, State::Blocked(_)) {
                    self.proc_mut(slot).state = State::Ready; // caller makes it runnable
                }
                true
            }
            Ok(false) => {
                self.proc_mut(slot).state = self.receiving(slot, queue, buf, buf_len);
                false
            }
            Err(e) => {
                self.proc_mut(slot).set_return(Err(e));
                if matches!(self.proc(slot).state, State::Blocked(_)) {
                    self.proc_mut(slot).state = State::Ready;
                }
                false
            }
        }
    }

    /// Take the first message of `queue` into process `slot`'s registers
    /// and buffer. Ok(false): the queue is empty. A message that does not
    /// fit stays at the head of the queue.
    fn try_receive(&mut self, slot: usize, queue: u64, buf: u64, buf_len: u64) -> Result<bool, Error> {
        let qseg = self.qseg(slot)?;
        let Some(mut m) = qseg.pop(queue)? else { return Ok(false) };
        let need = m.data.as_ref().map_or(0, |d| d.len as u64);
        let put_back = |k: &mut Kernel, m: Message, e: Error| {
            let q = k.proc_mut(slot).qseg.as_mut().expect("checked");
            let _ = q.push_front(queue, m);
            k.proc_mut(slot).frame.set_second_result(need);
            Err(e)
        };
        if need > buf_len {
            return put_back(self, m, Error::BufferTooSmall);
        }
        let handle = if m.kind == Kind::Call {
            match self.accept_call(slot, m.sender) {
                Ok(h) => h,
                Err(e) => return put_back(self, m, e), // no room for a handle: the call waits
            }
        } else {
            self.own_priority(slot)
        };
        if let Some(d) = m.data.take() {
            let space = self.space_mut(slot);
            let whole_page = d.is_loan && d.len as u64 == PAGE_SIZE && buf.is_multiple_of(PAGE_SIZE);
            let len = d.len;
            // The outcome, and the data if the message keeps it.
            let (copied, kept) = match UserSlice::new(buf, len as u64) {
                Err(e) => (Err(e), Some(d)),
                Ok(dst) if whole_page => match dst.check(space, true) {
                    Err(e) => (Err(e), Some(d)),
                    // The lent frame moves from the message to the
                    // receiver's table (no second reference).
                    Ok(()) => match space.map_loaned(buf, d.frame) {
                        Ok(()) => (Ok(()), None),
                        Err((e, frame)) => (Err(Error::from(e)), Some(Data { frame, ..d })),
                    },
                },
                Ok(dst) => {
                    let mut bytes = [0u8; MAX_DATA_BYTES as usize];
                    d.frame.read(0, &mut bytes[..len as usize]);
                    (dst.write(space, &bytes[..len as usize]), Some(d))
                }
            };
            if let Err(e) = copied {
                m.data = kept;
                if m.kind == Kind::Call {
                    let p = self.proc_mut(slot);
                    let _ = p.replies.take(handle);
                    p.priority = p.base_priority;
                }
                return put_back(self, m, e);
            }
            drop(kept);
            if whole_page {
                self.count(Counter::PagesLoaned);
            } else {
                self.add(Counter::BytesCopied, len as u64);
            }
            self.qseg(slot)?.release_page();
        }
        self.write_received(slot, m.words, m.reported_sender(), m.kind, need, handle);
        Ok(true)
    }

    /// A process ended: answer everyone who depended on it, drop its
    /// messages everywhere, and free its queue segment.
    pub fn ipc_cleanup(&mut self, slot: usize, pid: Pid) {
        // Callers blocked on it.
        for c in 0..self.slots().end {
            if let State::Blocked(Blocked::Call { server, .. }) = self.proc(c).state
                && server == pid
            {
                self.proc_mut(c).set_return(Err(Error::DeadPeer));
                self.make_ready(c);
            }
        }
        self.proc_mut(slot).replies.clear();
        if let Some(mut qseg) = self.proc_mut(slot).qseg.take() {
            // No allocation on this path: a process must always be able to end.
            qseg.drain(|m| self.dispose(m));
        }
        // Calls it made that still wait elsewhere.
        for r in 0..self.slots().end {
            // Or that a server took and keeps (a read of an empty pipe, a
            // poll with no deadline): its reply-table entry, which counts
            // against the server's limit (`accept_call`), is freed with its
            // caller, as its leases are; the handle still answers
            // `DeadPeer`. Kept, a server that parks calls took no more
            // calls once enough of its callers had died in them (sfuzz
            // seed 7: `socket()` failed with EIO; utest
            // net::polls_of_dead_callers_leave_room).
            self.proc_mut(r).replies.caller_died(pid);
            if let Some(mut qseg) = self.proc_mut(r).qseg.take() {
                let mut pages = 0;
                qseg.remove_messages(
                    |m| m.sender == pid && m.kind == Kind::Call,
                    |m| {
                        pages += m.data.is_some() as u32;
                        self.dispose_without_reply(m);
                    },
                );
                for _ in 0..pages {
                    qseg.release_page();
                }
                self.proc_mut(r).qseg = Some(qseg);
            }
        }
    }

    // ---- the operations behind the message calls (syscall/message.rs) ----

    pub fn init_qseg(&mut self, slot: usize, limits: Limits) -> Result<(), Error> {
        if let Some(qseg) = self.proc_mut(slot).qseg.as_mut() {
            return qseg.grow(limits);
        }
        let qseg = QueueSegment::new(limits)?;
        let p = self.proc_mut(slot);
        p.forget_link();
        p.qseg = Some(qseg);
        Ok(())
    }

    pub fn open_queue(&mut self, slot: usize, capacity: u64, is_public: bool) -> Result<u32, Error> {
        self.qseg(slot)?.open_queue(capacity, is_public)
    }

    pub fn close_queue(&mut self, slot: usize, queue: u64) -> Result<(), Error> {
        let waiting = self.qseg(slot)?.close_queue(queue)?;
        for m in waiting {
            if m.data.is_some() {
                self.qseg(slot)?.release_page();
            }
            self.dispose(m);
        }
        Ok(())
    }

    pub fn allow_sender(&mut self, slot: usize, queue: u64, sender: u64) -> Result<(), Error> {
        self.qseg(slot)?.allow_sender(queue, sender)
    }

    pub fn open_link(&mut self, slot: usize, receiver: Pid, queue: u64) -> Result<u32, Error> {
        self.qseg(slot)?;
        let me = self.pid_of(slot);
        let r = self.slot_of(receiver).ok_or(Error::NoSuchProcess)?;
        if self.proc(r).state == State::Zombie {
            return Err(Error::DeadPeer);
        }
        let rq = self.proc(r).qseg.as_ref().ok_or(Error::NoQueueSegment)?;
        rq.may_link(queue, me.0, r == slot)?;
        let generation = rq.generation(queue)?;
        let queue = u32::try_from(queue).map_err(|_| Error::BadQueue)?;
        self.qseg(slot)?.open_link(Link { receiver: receiver.0, queue, generation })
    }

    pub fn close_link(&mut self, slot: usize, link: u64) -> Result<(), Error> {
        self.proc_mut(slot).forget_link();
        self.qseg(slot)?.close_link(link)
    }

    /// Resolve a link to the receiving process's slot and queue.
    fn target(&mut self, slot: usize, link: u64) -> Result<(usize, u32), Error> {
        let link = self.qseg(slot)?.link(link)?;
        let r = self.slot_of(Pid(link.receiver)).ok_or(Error::DeadPeer)?;
        if self.proc(r).state == State::Zombie {
            return Err(Error::DeadPeer);
        }
        let rq = self.proc(r).qseg.as_ref().ok_or(Error::BadQueue)?;
        rq.check_generation(link.queue as u64, link.generation)?;
        Ok((r, link.queue))
    }

    #[inline(always)]
    pub fn send(&mut self, slot: usize, link: u64, words: [u64; 4]) -> Result<(), Error> {
        let (r, queue) = self.target(slot, link)?;
        let me = self.pid_of(slot);
        self.deliver(r, queue, Head { words, sender: me, kind: Kind::Short }, Payload::None, false)
    }

    pub fn send_data(
        &mut self,
        slot: usize,
        link: u64,
        addr: u64,
        len: u64,
        words: [u64; 4],
    ) -> Result<(), Error> {
        if len > MAX_DATA_BYTES {
            return Err(Error::InvalidArgument);
        }
        let (r, queue) = self.target(slot, link)?;
        let me = self.pid_of(slot);
        let payload = if len == PAGE_SIZE && addr.is_multiple_of(PAGE_SIZE) {
            // One whole aligned page: lend it copy-on-write (Ridge: +20 %
            // file system throughput from copying the page-table entry).
            let space = self.space_mut(slot);
            UserSlice::new(addr, len)?.check(space, false)?;
            let frame = space.loan_page(addr).ok_or(Error::BadAddress)?;
            Payload::Frame(Data { frame, len: len as u16, is_loan: true })
        } else {
            // Checked where it is read, as a call's data is: by the
            // direct handoff's copy (a bad range is the sender's error,
            // `Blame::Source`) or by `materialize`'s reads, each before
            // anything changes; a check here would be a third walk.
            Payload::User { from: slot, addr, len }
        };
        self.deliver(r, queue, Head { words, sender: me, kind: Kind::Data }, payload, false)
    }

    /// `receive_data`: take the first message of `queue`, or block for one
    /// (or fail with `WouldBlock` when `is_nonblocking`).
    #[inline(always)]
    pub fn receive(
        &mut self,
        slot: usize,
        queue: u64,
        buf: u64,
        buf_len: u64,
        is_nonblocking: bool,
    ) -> Result<Receive, Error> {
        if self.try_receive(slot, queue, buf, buf_len)? {
            return Ok(Receive::Taken);
        }
        if is_nonblocking {
            return Err(Error::WouldBlock);
        }
        let state = self.receiving(slot, queue, buf, buf_len);
        let p = self.proc_mut(slot);
        p.state = state;
        // Waiting for work is not working for a caller (see the module doc).
        p.priority = p.base_priority;
        Ok(Receive::Blocked)
    }

    /// Messages waiting in `queue`.
    pub fn queue_len(&mut self, slot: usize, queue: u64) -> Result<usize, Error> {
        self.qseg(slot)?.len(queue)
    }

    pub fn arm(&mut self, slot: usize, queue: u64, is_on: bool) -> Result<(), Error> {
        self.qseg(slot)?.arm(queue, is_on)
    }

    /// `wait_armed`: an armed queue with messages (Some), or block (None).
    pub fn wait_armed(&mut self, slot: usize) -> Result<Option<u32>, Error> {
        let qseg = self.qseg(slot)?;
        if !qseg.any_armed() {
            return Err(Error::NothingArmed);
        }
        if let Some(q) = qseg.first_armed_ready() {
            return Ok(Some(q));
        }
        let p = self.proc_mut(slot);
        p.state = State::Blocked(Blocked::WaitArmed);
        p.priority = p.base_priority;
        Ok(None)
    }

    /// `call`: send, and block for the reply (Ok: the caller is blocked).
    pub fn call(&mut self, slot: usize, args: CallArgs, words: [u64; 4]) -> Result<(), Error> {
        let CallArgs { link, send_buf, send_len, recv_buf, recv_len } = args;
        if send_len > MAX_LEASE_BYTES || recv_len > MAX_LEASE_BYTES {
            return Err(Error::InvalidArgument);
        }
        let (r, queue) = self.target(slot, link)?;
        if r == slot {
            return Err(Error::InvalidArgument); // a call to oneself would never be answered
        }
        let me = self.pid_of(slot);
        let server = self.pid_of(r);
        // Block first, so a direct handoff that wakes the server finds the
        // caller already waiting for its reply.
        self.proc_mut(slot).state =
            State::Blocked(Blocked::Call { server, buf: recv_buf, buf_len: recv_len });
        // A send buffer longer than a message is only lent, not sent.
        let payload = if send_len == 0 || send_len > MAX_DATA_BYTES {
            Payload::None
        } else {
            Payload::User { from: slot, addr: send_buf, len: send_len }
        };
        let delivered = self.deliver(r, queue, Head { words, sender: me, kind: Kind::Call }, payload, true);
        if delivered.is_err() {
            self.proc_mut(slot).state = State::Running { cpu: crate::arch::percpu::current_cpu() };
        }
        delivered
    }

    /// Answer a call. The handle is used up only when the reply is sent
    /// (a bad reply buffer leaves it valid for a retry).
    pub fn reply(
        &mut self,
        slot: usize,
        handle: u64,
        buf: u64,
        len: u64,
        words: [u64; 4],
        local: bool,
    ) -> Result<(), Error> {
        if len > MAX_DATA_BYTES {
            return Err(Error::InvalidArgument);
        }
        let caller = self.proc(slot).replies.peek(handle)?;
        UserSlice::new(buf, len)?.check(self.space(slot), false)?;
        let p = self.proc_mut(slot);
        p.replies.take(handle)?;
        if p.replies.is_empty() {
            p.priority = p.base_priority;
        }
        self.count(Counter::Messages);
        let me = self.pid_of(slot);
        let Some(c) = self.slot_of(caller) else { return Err(Error::DeadPeer) };
        let State::Blocked(Blocked::Call { server, buf: cbuf, buf_len: clen }) = self.proc(c).state else {
            return Err(Error::DeadPeer);
        };
        if server != me {
            return Err(Error::DeadPeer);
        }
        let result = if len > clen {
            self.proc_mut(c).frame.set_second_result(len);
            Err(Error::BufferTooSmall)
        } else if len == 0 {
            Ok(0) // a short reply: nothing to copy, no page tables to walk
        } else {
            self.copy_between_processes(slot, buf, c, cbuf, len).map(|_| len)
        };
        if result.is_ok() {
            self.add(Counter::BytesCopied, len);
        }
        let frame = &mut self.proc_mut(c).frame;
        frame.set_message(words);
        frame.set_result(result);
        self.wake(c, local);
        Ok(())
    }

    /// `reply_wait`: reply (unless `NO_REPLY`), then receive.
    pub fn reply_wait(
        &mut self,
        slot: usize,
        args: ReplyWaitArgs,
        words: [u64; 4],
    ) -> Result<Receive, Error> {
        let ReplyWaitArgs { handle, reply_buf, reply_len, queue, recv_buf, recv_len } = args;
        // The caller is made ready on this CPU without an interrupt, on the
        // bet that this server blocks in the receive below and the caller
        // runs here next.
        let caller = self.proc(slot).replies.peek(handle).ok().and_then(|p| self.slot_of(p));
        if handle != NO_REPLY
            && let Err(e) = self.reply(slot, handle, reply_buf, reply_len, words, true)
        {
            // A dead caller is no reason not to go on serving.
            if e != Error::DeadPeer {
                return Err(e);
            }
        }
        let received = self.receive(slot, queue, recv_buf, recv_len, false);
        // The bet lost (a message was waiting, so the server goes on): find
        // the caller a CPU now, or it waits for the server to block or for
        // a timer tick while another CPU idles.
        if received != Ok(Receive::Blocked)
            && let Some(c) = caller
            && self.proc(c).state == State::Ready
        {
            match self.proc(c).pinned_cpu {
                // A caller pinned to a CPU (`set_affinity`) can run only there.
                Some(cpu) => self.kick_pinned(cpu, self.proc(c).priority),
                None => self.kick_for(self.proc(c).priority),
            }
        }
        received
    }

    /// `forward_wait`: pass the call held under `handle` on to the queue of
    /// `link`, as a call with this server's `words` and `len` bytes at
    /// `buf`; its caller now waits for that server's reply (and lends it
    /// its buffers), and this server's handle is used up. Then receive, as
    /// `reply_wait`. Every error of the forward leaves the handle held and
    /// the caller waiting on this server, and returns without receiving:
    /// `InvalidArgument` (`len` past a message's data; a link to this
    /// server or to the caller itself), `BadReplyHandle` (not a call this
    /// server holds: never given, used up, forged, `NO_REPLY`), `DeadPeer`
    /// (the caller ended; or the server of `link`), the link's and the
    /// delivery's errors as `call`'s. The receiver is told of this server
    /// as the sender (`rdx`), so it knows who passed the call on. With
    /// queue `NO_RECEIVE` only the forward is made (`None`).
    pub fn forward_wait(
        &mut self,
        slot: usize,
        args: ReplyWaitArgs,
        words: [u64; 4],
    ) -> Result<Option<Receive>, Error> {
        // The link rides in the high half of the queue argument: the call
        // needs seven arguments and a kernel call has six registers.
        let ReplyWaitArgs { handle, reply_buf, reply_len, queue: packed, recv_buf, recv_len } = args;
        let (queue, link) = (packed & 0xffff_ffff, packed >> 32);
        self.forward(slot, handle, link, reply_buf, reply_len, words)?;
        if queue == NO_RECEIVE as u64 {
            return Ok(None);
        }
        self.receive(slot, queue, recv_buf, recv_len, false).map(Some)
    }

    /// The forward of [`Kernel::forward_wait`].
    fn forward(
        &mut self,
        slot: usize,
        handle: u64,
        link: u64,
        buf: u64,
        len: u64,
        words: [u64; 4],
    ) -> Result<(), Error> {
        if len > MAX_DATA_BYTES {
            return Err(Error::InvalidArgument);
        }
        let caller = self.proc(slot).replies.peek(handle)?;
        let me = self.pid_of(slot);
        let c = self.slot_of(caller).ok_or(Error::DeadPeer)?;
        let waiting = self.proc(c).state;
        let State::Blocked(Blocked::Call { server, buf: cbuf, buf_len: clen }) = waiting else {
            return Err(Error::DeadPeer);
        };
        if server != me {
            return Err(Error::DeadPeer);
        }
        let (r, queue) = self.target(slot, link)?;
        if r == slot || r == c {
            // Passed to itself it would hold it again; to its caller, the
            // caller would wait for itself.
            return Err(Error::InvalidArgument);
        }
        let to = self.pid_of(r);
        // The caller waits on the new server first, so a direct handoff
        // finds it waiting, as in `call`.
        self.proc_mut(c).state = State::Blocked(Blocked::Call { server: to, buf: cbuf, buf_len: clen });
        let payload = if len == 0 { Payload::None } else { Payload::User { from: slot, addr: buf, len } };
        let head = Head { words, sender: caller, kind: Kind::Call };
        if let Err(e) = self.deliver_via(r, queue, head, me, payload, true) {
            self.proc_mut(c).state = waiting;
            return Err(e);
        }
        let p = self.proc_mut(slot);
        p.replies.take(handle)?;
        if p.replies.is_empty() {
            p.priority = p.base_priority;
        }
        Ok(())
    }

    /// The buffer lent by the call `handle` that the server in `slot`
    /// holds: (the caller's slot, address, length); its receive buffer
    /// when `is_write`, else its send buffer. `BadAddress` when the
    /// caller's buffer wraps or leaves the user half.
    fn lent_buffer(&self, slot: usize, handle: u64, is_write: bool) -> Result<(usize, u64, u64), Error> {
        let caller = self.proc(slot).replies.peek(handle)?;
        let c = self.slot_of(caller).ok_or(Error::DeadPeer)?;
        let State::Blocked(Blocked::Call { server, buf: recv_buf, buf_len: recv_len }) = self.proc(c).state
        else {
            return Err(Error::DeadPeer);
        };
        if server != self.pid_of(slot) {
            return Err(Error::DeadPeer);
        }
        let (buf, len) = if is_write {
            (recv_buf, recv_len)
        } else {
            let a = self.proc(c).frame.as_call_args();
            (a.send_buf, a.send_len)
        };
        // `call` does not look at the buffers it lends; a lease does, before
        // adding an offset to one: a buffer that wraps past 2^64 (or leaves
        // the user half) lends nothing, or an offset into it would wrap
        // round to the caller's memory outside it.
        UserSlice::new(buf, len)?;
        Ok((c, buf, len))
    }

    /// `lease_read` (`is_write` false) and `lease_write`: copy between the
    /// server's `buf` and the lent buffer of the call `handle` at `offset`.
    #[allow(clippy::too_many_arguments)]
    pub fn lease_copy(
        &mut self,
        slot: usize,
        handle: u64,
        offset: u64,
        buf: u64,
        len: u64,
        flags: u64,
        is_write: bool,
    ) -> Result<u64, Error> {
        if flags == lease::SEGMENTS {
            return self.lease_segments(slot, handle, offset, buf, len, is_write);
        }
        let how = CopyHow::from_flags(flags, len)?;
        let (c, lent, lent_len) = self.lent_buffer(slot, handle, is_write)?;
        if offset.checked_add(len).is_none_or(|end| end > lent_len) {
            return Err(Error::InvalidArgument);
        }
        let (from, src, to, dst) =
            if is_write { (slot, buf, c, lent + offset) } else { (c, lent + offset, slot, buf) };
        self.move_bytes(from, src, to, dst, len, how)
    }

    /// `lease_read`/`lease_write` with [`lease::SEGMENTS`]: the server's
    /// side is the `count` segments (address, length) listed at `list`,
    /// the lent side one range from `offset`. Every segment and the lent
    /// range are checked before the first byte moves, so bad input changes
    /// nothing.
    fn lease_segments(
        &mut self,
        slot: usize,
        handle: u64,
        offset: u64,
        list: u64,
        count: u64,
        is_write: bool,
    ) -> Result<u64, Error> {
        const SEGMENT_BYTES: usize = 16;
        if count > lease::MAX_SEGMENTS {
            return Err(Error::InvalidArgument);
        }
        // A short list (an 8 KiB read of 1 KiB blocks: 8) in a short array:
        // zeroing the whole 1 KiB one showed in the read row's profile.
        const SHORT: usize = 16;
        let mut short = [0u8; SHORT * SEGMENT_BYTES];
        let mut long;
        let raw: &mut [u8] = if count as usize <= SHORT {
            &mut short[..count as usize * SEGMENT_BYTES]
        } else {
            long = [0u8; lease::MAX_SEGMENTS as usize * SEGMENT_BYTES];
            &mut long[..count as usize * SEGMENT_BYTES]
        };
        {
            let space = self.proc(slot).space.as_ref().ok_or(Error::DeadPeer)?;
            UserSlice::new(list, raw.len() as u64)?.read(space, raw)?;
        }
        let segment = |i: usize| {
            let word = |w: usize| {
                let at = i * SEGMENT_BYTES + w * 8;
                u64::from_le_bytes(raw[at..at + 8].try_into().expect("8 bytes"))
            };
            (word(0), word(1))
        };
        let (c, lent, lent_len) = self.lent_buffer(slot, handle, is_write)?;
        if offset > lent_len || c == slot {
            // Past the lease; or a process's own call (two_procs_mut
            // wants two processes).
            return Err(Error::InvalidArgument);
        }
        // The one copy (`usermem::copy_segments`): the server's segments
        // checked, each page once for a run of segments in it (a cache's
        // 1 KiB blocks lie several to a page), their sum against the
        // lease, the lent range checked, the written side's copy-on-write
        // pages made its own only when there is one, then one pass looking
        // each page of either side up once: per segment, `move_bytes`
        // walked both tables five times.
        let segments = (0..count as usize).map(segment);
        let (from, to, side) =
            if is_write { (slot, c, ListSide::Source) } else { (c, slot, ListSide::Destination) };
        let (src_proc, dst_proc) = self.two_procs_mut(from, to);
        let src_space = src_proc.space.as_ref().ok_or(Error::DeadPeer)?;
        let dst_space = dst_proc.space.as_mut().ok_or(Error::DeadPeer)?;
        let s = Segments { segments, side, range: lent + offset };
        let total = usermem::copy_segments(src_space, dst_space, s, lent_len - offset, CopyMode::Bulk)?;
        self.add(Counter::BytesCopied, total);
        Ok(total)
    }

    /// `lease_copy`: from the send buffer lent by call `src_handle` to the
    /// receive buffer lent by call `dst_handle`, both held by `slot`.
    #[allow(clippy::too_many_arguments)]
    pub fn lease_transfer(
        &mut self,
        slot: usize,
        src_handle: u64,
        src_offset: u64,
        dst_handle: u64,
        dst_offset: u64,
        len: u64,
        flags: u64,
    ) -> Result<u64, Error> {
        let how = CopyHow::from_flags(flags, len)?;
        let (from, src, src_len) = self.lent_buffer(slot, src_handle, false)?;
        let (to, dst, dst_len) = self.lent_buffer(slot, dst_handle, true)?;
        if from == to {
            return Err(Error::InvalidArgument); // one caller's own buffers: not a transfer
        }
        let fits = |offset: u64, lent_len: u64| offset.checked_add(len).is_some_and(|end| end <= lent_len);
        if !fits(src_offset, src_len) || !fits(dst_offset, dst_len) {
            return Err(Error::InvalidArgument);
        }
        self.move_bytes(from, src + src_offset, to, dst + dst_offset, len, how)
    }

    /// Move `len` bytes from `src` in process `from` to `dst` in `to`
    /// (different processes), all or nothing, as `how` says; count them.
    fn move_bytes(
        &mut self,
        from: usize,
        src: u64,
        to: usize,
        dst: u64,
        len: u64,
        how: CopyHow,
    ) -> Result<u64, Error> {
        if len == 0 {
            return Ok(0);
        }
        let (from, to) = self.two_procs_mut(from, to);
        let src_space = from.space.as_mut().ok_or(Error::DeadPeer)?;
        let dst_space = to.space.as_mut().ok_or(Error::DeadPeer)?;
        let (copied, lent_pages) = match how {
            CopyHow::Copy(mode) => {
                let one =
                    Segments { segments: core::iter::once((src, len)), side: ListSide::Source, range: dst };
                (usermem::copy_segments(src_space, dst_space, one, len, mode)?, 0)
            }
            CopyHow::MayLend => usermem::lend_between(src_space, src, dst_space, dst, len)?,
        };
        self.add(Counter::BytesCopied, copied);
        self.add(Counter::PagesLoaned, lent_pages);
        Ok(len)
    }

    /// [`Kernel::copy_between_processes`], telling whose memory refused
    /// the copy (a process without an address space: `DeadPeer`, its side).
    fn copy_between_processes_blaming(
        &mut self,
        from: usize,
        src: u64,
        to: usize,
        dst: u64,
        len: u64,
    ) -> Result<(), (Error, Blame)> {
        let (from, to) = self.two_procs_mut(from, to);
        let src_space = from.space.as_ref().ok_or((Error::DeadPeer, Blame::Source))?;
        let dst_space = to.space.as_mut().ok_or((Error::DeadPeer, Blame::Destination))?;
        usermem::copy_between_blaming(src_space, src, dst_space, dst, len)
    }

    /// Copy `len` bytes from one process's memory to another's.
    fn copy_between_processes(
        &mut self,
        from: usize,
        src: u64,
        to: usize,
        dst: u64,
        len: u64,
    ) -> Result<(), Error> {
        let (from, to) = self.two_procs_mut(from, to);
        let src_space = from.space.as_ref().ok_or(Error::DeadPeer)?;
        let dst_space = to.space.as_mut().ok_or(Error::DeadPeer)?;
        usermem::copy_between(src_space, src, dst_space, dst, len)
    }
}

/// How a lease moves its bytes (`abi::lease` flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CopyHow {
    /// Copied, in bulk or a byte at a time (PDDRIVER's).
    Copy(CopyMode),
    /// Whole pages lent copy-on-write where they line up.
    MayLend,
}

impl CopyHow {
    fn from_flags(flags: u64, len: u64) -> Result<CopyHow, Error> {
        match flags {
            0 => Ok(CopyHow::Copy(CopyMode::Bulk)),
            lease::BYTE_AT_A_TIME => Ok(CopyHow::Copy(CopyMode::ByteAtATime)),
            lease::MAY_LOAN if len >= lease::LOAN_MIN_BYTES => Ok(CopyHow::MayLend),
            lease::MAY_LOAN => Ok(CopyHow::Copy(CopyMode::Bulk)),
            _ => Err(Error::InvalidArgument),
        }
    }
}

/// How a receive ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Receive {
    /// A message was taken: the receiver's registers hold it.
    Taken,
    /// The queue was empty: the receiver is blocked on it.
    Blocked,
}
