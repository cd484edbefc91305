//! The message system (Ridge OS §5) and the synchronous call its authors
//! planned (§5 "Message System Performance", §8 "Futures").
//!
//! Layers, bottom up:
//! - [`Message`]: what waits in a queue: 32 bytes, the sender, a kind, and
//!   optionally one frame of data (copied, or lent copy-on-write);
//! - [`ReplyTable`]: a server's one-shot reply handles for calls it has
//!   received and not yet answered;
//! - delivery ([`Kernel::deliver`]): straight into a receiver blocked on that
//!   queue — its saved registers and its buffer, no queueing ("a single
//!   entry into the kernel performs a Send, context switch, and a
//!   ReceiveData") — or else onto the queue, waking an `arm`ed waiter;
//! - the calls themselves, at the bottom of this file.
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
//! when it has answered every call it holds. A low-priority client therefore cannot make a
//! high-priority server do work ahead of medium-priority processes, and a
//! high-priority client's request is not stuck behind them either.
//!
//! Dead peers: a send on a link to an ended process fails with `DeadPeer`;
//! when a process ends, callers blocked on it get `DeadPeer`, the messages
//! waiting in its queues are dropped (their data freed, their callers
//! answered with `DeadPeer`), and the *calls* it made that still wait in
//! other processes' queues are dropped too (nobody waits for their
//! answers). Its plain messages stay queued: `send` told the sender they
//! were sent, so they are delivered, as data written to a UNIX pipe is
//! still read after the writer exits.

use crate::memory;
use crate::process::{Blocked, State};
use crate::sched::Kernel;
use crate::usermem::UserSlice;
use abi::layout::PAGE_SIZE;
use abi::msg::{Kind, MAX_DATA_BYTES, NO_REPLY};
use abi::{Counter, Error, Pid};
use alloc::vec::Vec;
use kernel_core::qseg::{Limits, Link, QueueSegment};

/// Data carried by a message waiting in a queue: one frame the message
/// holds a reference to.
#[derive(Debug)]
pub struct Data {
    pub frame: u64,
    pub len: u16,
    /// The frame is a page lent copy-on-write by the sender (not a copy).
    pub is_loan: bool,
}

#[derive(Debug)]
pub struct Message {
    pub words: [u64; 4],
    pub sender: Pid,
    pub kind: Kind,
    pub data: Option<Data>,
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

/// A server's outstanding calls. Handle = index | generation << 32; each
/// use bumps the generation, so a handle works once and a forged or stale
/// one is refused.
///
/// Entry 0 lives in the table itself (in the process slot) and the others
/// on the heap: a server answering one call at a time never reaches the
/// heap, which under QEMU is one page fewer to walk after each CR3 write.
pub struct ReplyTable {
    first: ReplyEntry,
    /// Entries 1, 2, …
    rest: Vec<ReplyEntry>,
    /// Entries with a caller: `is_empty` without a scan.
    outstanding: usize,
}

#[derive(Clone, Copy)]
struct ReplyEntry {
    caller: Option<Pid>,
    generation: u32,
}

const FRESH_ENTRY: ReplyEntry = ReplyEntry { caller: None, generation: 1 };

impl ReplyTable {
    pub const fn new() -> ReplyTable {
        ReplyTable { first: FRESH_ENTRY, rest: Vec::new(), outstanding: 0 }
    }

    #[inline(always)]
    fn entry_mut(&mut self, index: usize) -> Option<&mut ReplyEntry> {
        if index == 0 { Some(&mut self.first) } else { self.rest.get_mut(index - 1) }
    }

    fn entries_mut(&mut self) -> impl Iterator<Item = &mut ReplyEntry> {
        core::iter::once(&mut self.first).chain(self.rest.iter_mut())
    }

    pub(crate) fn insert(&mut self, caller: Pid, limit: usize) -> Result<u64, Error> {
        if let Some(handle) = self.insert_in_place(caller) {
            return Ok(handle);
        }
        if 1 + self.rest.len() >= limit {
            return Err(Error::LimitReached);
        }
        self.rest.try_reserve(1).map_err(|_| Error::OutOfResources)?;
        self.rest.push(FRESH_ENTRY);
        self.insert_in_place(caller).ok_or(Error::LimitReached)
    }

    /// [`ReplyTable::insert`] without growing the table: `None` when no
    /// slot is free (the caller then takes the general path, which grows
    /// it up to its limit).
    #[inline(always)]
    pub(crate) fn insert_in_place(&mut self, caller: Pid) -> Option<u64> {
        // The lowest free entry; entry 0 first, without a scan (the steady
        // state of a server answering one call at a time).
        let index = if self.first.caller.is_none() {
            0
        } else {
            1 + self.rest.iter().position(|e| e.caller.is_none())?
        };
        let entry = self.entry_mut(index)?;
        entry.caller = Some(caller);
        let generation = entry.generation;
        self.outstanding += 1;
        Some(index as u64 | (generation as u64) << 32)
    }

    #[inline(always)]
    pub(crate) fn peek(&self, handle: u64) -> Result<Pid, Error> {
        let index = (handle & 0xffff_ffff) as usize;
        let entry = if index == 0 { Some(&self.first) } else { self.rest.get(index - 1) };
        match entry {
            Some(&ReplyEntry { caller: Some(caller), generation }) if generation as u64 == handle >> 32 => {
                Ok(caller)
            }
            _ => Err(Error::BadReplyHandle),
        }
    }

    pub(crate) fn take(&mut self, handle: u64) -> Result<Pid, Error> {
        let caller = self.peek(handle)?;
        self.use_up(handle);
        Ok(caller)
    }

    /// Drop every handle of calls from `caller` (it will never read the answer).
    pub(crate) fn forget_caller(&mut self, caller: Pid) {
        let mut dropped = 0;
        for e in self.entries_mut() {
            if e.caller == Some(caller) {
                e.caller = None;
                e.generation = e.generation.wrapping_add(1).max(1);
                dropped += 1;
            }
        }
        self.outstanding -= dropped;
    }

    /// Use up a handle that [`ReplyTable::peek`] accepted.
    #[inline(always)]
    pub(crate) fn use_up(&mut self, handle: u64) {
        if let Some(entry) = self.entry_mut((handle & 0xffff_ffff) as usize)
            && entry.caller.take().is_some()
        {
            entry.generation = entry.generation.wrapping_add(1).max(1);
            self.outstanding -= 1;
        }
    }

    /// No call is waiting for an answer.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.outstanding == 0
    }

    pub fn clear(&mut self) {
        *self = ReplyTable::new();
    }
}

impl Default for ReplyTable {
    fn default() -> Self {
        ReplyTable::new()
    }
}

/// Copy `len` bytes from one process's memory to another's, page piece by
/// page piece, between physical frames: one copy, no bounce buffer.
fn copy_user_to_user(
    k: &mut Kernel,
    from: usize,
    src: u64,
    to: usize,
    dst: u64,
    len: u64,
) -> Result<(), Error> {
    let src_slice = UserSlice::new(src, len)?;
    let dst_slice = UserSlice::new(dst, len)?;
    src_slice.check(k.procs[from].space.as_ref().ok_or(Error::DeadPeer)?, false)?;
    dst_slice.prepare_write(k.procs[to].space.as_mut().ok_or(Error::DeadPeer)?)?;
    let src_space = k.procs[from].space.as_ref().ok_or(Error::DeadPeer)?;
    let dst_space = k.procs[to].space.as_ref().ok_or(Error::DeadPeer)?;
    let mut done = 0;
    while done < len {
        let (s, d) = (src + done, dst + done);
        let (spa, _) = src_space.translate(s).ok_or(Error::BadAddress)?;
        let (dpa, _) = dst_space.translate(d).ok_or(Error::BadAddress)?;
        let n = (PAGE_SIZE - s % PAGE_SIZE).min(PAGE_SIZE - d % PAGE_SIZE).min(len - done);
        crate::arch::paging::copy_between_frames(
            spa & !(PAGE_SIZE - 1),
            (s % PAGE_SIZE) as usize,
            dpa & !(PAGE_SIZE - 1),
            (d % PAGE_SIZE) as usize,
            n as usize,
        );
        done += n;
    }
    Ok(())
}

impl Kernel {
    fn qseg(&mut self, slot: usize) -> Result<&mut QueueSegment<Message>, Error> {
        self.procs[slot].qseg.as_mut().ok_or(Error::NoQueueSegment)
    }

    /// Drop a message that will not be delivered: free its data and answer
    /// its caller, if it was a call.
    fn dispose(&mut self, m: Message) {
        if let Some(d) = m.data {
            memory::frame_unref(d.frame);
        }
        if m.kind == Kind::Call {
            self.fail_caller(m.sender, Error::DeadPeer);
        }
    }

    /// Wake `caller` (if it still waits in a call) with an error.
    fn fail_caller(&mut self, caller: Pid, e: Error) {
        if let Some(c) = self.slot_of(caller)
            && matches!(self.procs[c].state, State::Blocked(Blocked::Call { .. }))
        {
            self.procs[c].set_return(Err(e));
            self.make_ready(c);
        }
    }

    /// Turn a `User` payload into a frame so the message can wait in a queue.
    fn materialize(&mut self, payload: Payload) -> Result<Option<Data>, Error> {
        match payload {
            Payload::None => Ok(None),
            Payload::Frame(d) => Ok(Some(d)),
            Payload::User { from, addr, len } => {
                let frame = memory::alloc_frame().ok_or(Error::OutOfResources)?;
                let space = self.procs[from].space.as_ref().ok_or(Error::DeadPeer)?;
                let mut chunk = [0u8; 256];
                let src = UserSlice::new(addr, len)?;
                let mut done = 0;
                while done < len {
                    let n = (len - done).min(chunk.len() as u64) as usize;
                    if let Err(e) = src.read_at(space, done, &mut chunk[..n]) {
                        memory::free_frame(frame);
                        return Err(e);
                    }
                    crate::arch::paging::copy_to_frame(frame, done as usize, &chunk[..n]);
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
        let Head { words, sender, kind } = head;
        self.count(Counter::Messages);
        if self.procs[to].qseg.is_none() {
            if let Payload::Frame(d) = payload {
                memory::frame_unref(d.frame);
            }
            return Err(Error::BadQueue);
        }
        // The receiver waits on this very queue: hand the message over.
        if let State::Blocked(Blocked::Receive { queue: q, buf, buf_len, .. }) = self.procs[to].state
            && q == queue
        {
            // Straight into its registers (and its buffer: one copy), when
            // the data is still in the sender's memory and fits.
            let payload = match payload {
                Payload::None => {
                    self.finish_receive(to, words, sender, kind, 0, local)?;
                    self.count(Counter::DirectHandoffs);
                    return Ok(());
                }
                Payload::User { from, addr, len } if len <= buf_len => {
                    // A bad source buffer is the sender's error.
                    let src = UserSlice::new(addr, len)?;
                    src.check(self.procs[from].space.as_ref().ok_or(Error::DeadPeer)?, false)?;
                    if copy_user_to_user(self, from, addr, to, buf, len).is_ok() {
                        self.add(Counter::BytesCopied, len);
                        self.finish_receive(to, words, sender, kind, len, local)?;
                        self.count(Counter::DirectHandoffs);
                        return Ok(());
                    }
                    // The receiver's buffer is bad: it learns so below.
                    Payload::User { from, addr, len }
                }
                other => other,
            };
            // Otherwise (a lent page, data that does not fit, a bad receive
            // buffer) the message waits at the head of the queue and the
            // receive is completed from there: mapped or copied out, or
            // answered with the error that keeps it queued.
            let data = self.materialize(payload)?;
            self.enqueue(to, queue, Message { words, sender, kind, data }, local)?;
            self.receive_now(to, queue as u64, buf, buf_len);
            if !matches!(self.procs[to].state, State::Blocked(_)) {
                if (self.procs[to].frame.rax as i64) >= 0 {
                    self.count(Counter::DirectHandoffs);
                }
                self.wake(to, local);
            }
            return Ok(());
        }
        let data = self.materialize(payload)?;
        self.enqueue(to, queue, Message { words, sender, kind, data }, local)
    }

    /// Put a message on a queue, charging the receiver's page quota for its
    /// data, and wake the receiver if it waits on its armed queues.
    fn enqueue(&mut self, to: usize, queue: u32, m: Message, local: bool) -> Result<(), Error> {
        let qseg = self.procs[to].qseg.as_mut().ok_or(Error::BadQueue)?;
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
        if self.procs[to].state == State::Blocked(Blocked::WaitArmed) && qseg.is_armed(queue as u64) {
            self.procs[to].set_return(Ok(queue as u64));
            self.wake(to, local);
        }
        Ok(())
    }

    /// Free a refused message's data; its sender learns from the error.
    fn dispose_without_reply(&mut self, m: Message) {
        if let Some(d) = m.data {
            memory::frame_unref(d.frame);
        }
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
        sender: Pid,
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
        let generation = self.procs[slot].qseg.as_ref().and_then(|q| q.generation(queue).ok()).unwrap_or(0);
        State::Blocked(Blocked::Receive { queue: queue as u32, generation, buf, buf_len })
    }

    /// Give `to` a reply handle for a call from `caller`, and `to` takes on
    /// the caller's priority while it serves the call.
    fn accept_call(&mut self, to: usize, caller: Pid) -> Result<u64, Error> {
        let limit = self.procs[to].qseg.as_ref().map_or(0, |q| q.limits().messages as usize);
        let handle = self.procs[to].replies.insert(caller, limit.max(1))?;
        if let Some(c) = self.slot_of(caller) {
            self.procs[to].priority = self.procs[c].priority;
        }
        Ok(handle)
    }

    /// Write a received message into `to`'s saved registers.
    fn write_received(&mut self, to: usize, words: [u64; 4], sender: Pid, kind: Kind, len: u64, handle: u64) {
        let f = &mut self.procs[to].frame;
        f.rax = len;
        f.rdx = sender.0;
        f.rsi = kind as u64;
        f.r10 = handle;
        [f.r12, f.r13, f.r14, f.r15] = words;
    }

    /// Complete a receive in `to`'s saved registers (allocating a reply
    /// handle for a call).
    fn set_received(
        &mut self,
        to: usize,
        words: [u64; 4],
        sender: Pid,
        kind: Kind,
        len: u64,
    ) -> Result<(), Error> {
        let handle = if kind == Kind::Call { self.accept_call(to, sender)? } else { 0 };
        self.write_received(to, words, sender, kind, len, handle);
        Ok(())
    }

    /// Try to receive from `queue` into process `slot` now. On success its
    /// registers hold the result and its state is unchanged (the caller
    /// decides); with an empty queue it is left `Blocked(Receive)`.
    fn receive_now(&mut self, slot: usize, queue: u64, buf: u64, buf_len: u64) {
        let result = self.try_receive(slot, queue, buf, buf_len);
        match result {
            Ok(true) => {
                if matches!(self.procs[slot].state, State::Blocked(_)) {
                    self.procs[slot].state = State::Ready; // caller makes it runnable
                }
            }
            Ok(false) => self.procs[slot].state = self.receiving(slot, queue, buf, buf_len),
            Err(e) => {
                self.procs[slot].set_return(Err(e));
                if matches!(self.procs[slot].state, State::Blocked(_)) {
                    self.procs[slot].state = State::Ready;
                }
            }
        }
    }

    /// Take the first message of `queue` into process `slot`'s registers
    /// and buffer. Ok(false): the queue is empty. A message that does not
    /// fit stays at the head of the queue.
    fn try_receive(&mut self, slot: usize, queue: u64, buf: u64, buf_len: u64) -> Result<bool, Error> {
        let qseg = self.qseg(slot)?;
        let Some(m) = qseg.pop(queue)? else { return Ok(false) };
        let need = m.data.as_ref().map_or(0, |d| d.len as u64);
        let put_back = |k: &mut Kernel, m: Message, e: Error| {
            let q = k.procs[slot].qseg.as_mut().expect("checked");
            let _ = q.push_front(queue, m);
            k.procs[slot].frame.rdx = need;
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
            0
        };
        if let Some(d) = &m.data {
            let space = self.procs[slot].space.as_mut().expect("live process");
            let whole_page = d.is_loan && d.len as u64 == PAGE_SIZE && buf.is_multiple_of(PAGE_SIZE);
            let copied = UserSlice::new(buf, d.len as u64).and_then(|dst| {
                if whole_page {
                    dst.check(space, true)?;
                    space.map_loaned(buf, d.frame).map_err(Error::from)
                } else {
                    let mut bytes = [0u8; MAX_DATA_BYTES as usize];
                    crate::arch::paging::copy_from_frame(d.frame, 0, &mut bytes[..d.len as usize]);
                    dst.write(space, &bytes[..d.len as usize])
                }
            });
            if let Err(e) = copied {
                if m.kind == Kind::Call {
                    let _ = self.procs[slot].replies.take(handle);
                    self.procs[slot].priority = self.procs[slot].base_priority;
                }
                return put_back(self, m, e);
            }
            if whole_page {
                self.count(Counter::PagesLoaned);
            } else {
                self.add(Counter::BytesCopied, d.len as u64);
                memory::frame_unref(d.frame);
            }
            self.qseg(slot)?.release_page();
        }
        self.write_received(slot, m.words, m.sender, m.kind, need, handle);
        Ok(true)
    }

    /// A process ended: answer everyone who depended on it, drop its
    /// messages everywhere, and free its queue segment.
    pub fn ipc_cleanup(&mut self, slot: usize, pid: Pid) {
        // Callers blocked on it.
        for c in 0..self.procs.len() {
            if let State::Blocked(Blocked::Call { server, .. }) = self.procs[c].state
                && server == pid
            {
                self.procs[c].set_return(Err(Error::DeadPeer));
                self.make_ready(c);
            }
        }
        self.procs[slot].replies.clear();
        if let Some(mut qseg) = self.procs[slot].qseg.take() {
            // No allocation on this path: a process must always be able to end.
            qseg.drain(|m| self.dispose(m));
        }
        // Calls it made that still wait elsewhere.
        for r in 0..self.procs.len() {
            if let Some(mut qseg) = self.procs[r].qseg.take() {
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
                self.procs[r].qseg = Some(qseg);
            }
        }
    }

    // ---- the kernel calls ----

    pub fn sys_init_qseg(&mut self, slot: usize, a: [u64; 4]) -> Result<u64, Error> {
        let limits = Limits::new(a[0], a[1], a[2], a[3])?;
        if let Some(qseg) = self.procs[slot].qseg.as_mut() {
            return qseg.grow(limits).map(|_| 0);
        }
        let qseg = QueueSegment::new(limits)?;
        self.procs[slot].forget_link();
        self.procs[slot].qseg = Some(qseg);
        Ok(0)
    }

    pub fn sys_open_queue(&mut self, slot: usize, capacity: u64, access: u64) -> Result<u64, Error> {
        let is_public = match access {
            abi::msg::ACCESS_PUBLIC => true,
            abi::msg::ACCESS_PRIVATE => false,
            _ => return Err(Error::InvalidArgument),
        };
        self.qseg(slot)?.open_queue(capacity, is_public).map(u64::from)
    }

    pub fn sys_close_queue(&mut self, slot: usize, queue: u64) -> Result<u64, Error> {
        let waiting = self.qseg(slot)?.close_queue(queue)?;
        for m in waiting {
            if m.data.is_some() {
                self.qseg(slot)?.release_page();
            }
            self.dispose(m);
        }
        Ok(0)
    }

    pub fn sys_allow_sender(&mut self, slot: usize, queue: u64, pid: u64) -> Result<u64, Error> {
        self.qseg(slot)?.allow_sender(queue, pid).map(|_| 0)
    }

    pub fn sys_open_link(&mut self, slot: usize, receiver: u64, queue: u64) -> Result<u64, Error> {
        self.qseg(slot)?;
        let me = self.pid_of(slot);
        let r = self.slot_of(Pid(receiver)).ok_or(Error::NoSuchProcess)?;
        if self.procs[r].state == State::Zombie {
            return Err(Error::DeadPeer);
        }
        let rq = self.procs[r].qseg.as_ref().ok_or(Error::NoQueueSegment)?;
        rq.may_link(queue, me.0, r == slot)?;
        let generation = rq.generation(queue)?;
        let queue = u32::try_from(queue).map_err(|_| Error::BadQueue)?;
        self.qseg(slot)?.open_link(Link { receiver, queue, generation }).map(u64::from)
    }

    pub fn sys_close_link(&mut self, slot: usize, link: u64) -> Result<u64, Error> {
        self.procs[slot].forget_link();
        self.qseg(slot)?.close_link(link).map(|_| 0)
    }

    /// Resolve a link to the receiving process's slot and queue.
    fn target(&mut self, slot: usize, link: u64) -> Result<(usize, u32), Error> {
        let link = self.qseg(slot)?.link(link)?;
        let r = self.slot_of(Pid(link.receiver)).ok_or(Error::DeadPeer)?;
        if self.procs[r].state == State::Zombie {
            return Err(Error::DeadPeer);
        }
        let rq = self.procs[r].qseg.as_ref().ok_or(Error::BadQueue)?;
        rq.check_generation(link.queue as u64, link.generation)?;
        Ok((r, link.queue))
    }

    pub fn sys_send(&mut self, slot: usize, link: u64, words: [u64; 4]) -> Result<u64, Error> {
        let (r, queue) = self.target(slot, link)?;
        let me = self.pid_of(slot);
        self.deliver(r, queue, Head { words, sender: me, kind: Kind::Short }, Payload::None, false).map(|_| 0)
    }

    pub fn sys_send_data(
        &mut self,
        slot: usize,
        link: u64,
        addr: u64,
        len: u64,
        words: [u64; 4],
    ) -> Result<u64, Error> {
        if len > MAX_DATA_BYTES {
            return Err(Error::InvalidArgument);
        }
        let (r, queue) = self.target(slot, link)?;
        let me = self.pid_of(slot);
        let space = self.procs[slot].space.as_mut().expect("live process");
        UserSlice::new(addr, len)?.check(space, false)?;
        let payload = if len == PAGE_SIZE && addr.is_multiple_of(PAGE_SIZE) {
            // One whole aligned page: lend it copy-on-write (Ridge: +20 %
            // file system throughput from copying the page-table entry).
            let frame = space.loan_page(addr).ok_or(Error::BadAddress)?;
            Payload::Frame(Data { frame, len: len as u16, is_loan: true })
        } else {
            Payload::User { from: slot, addr, len }
        };
        self.deliver(r, queue, Head { words, sender: me, kind: Kind::Data }, payload, false).map(|_| 0)
    }

    /// `receive_data`: returns None when the process blocked.
    pub fn sys_receive(
        &mut self,
        slot: usize,
        queue: u64,
        buf: u64,
        buf_len: u64,
        flags: u64,
    ) -> Option<Result<u64, Error>> {
        if flags & !abi::msg::NONBLOCKING != 0 {
            return Some(Err(Error::InvalidArgument));
        }
        match self.try_receive(slot, queue, buf, buf_len) {
            Ok(true) => {
                // A slot came free: an interrupt that found the queue full
                // can be queued now.
                self.redeliver_pending_irqs(slot, queue);
                None // registers already hold the result
            }
            Ok(false) if flags & abi::msg::NONBLOCKING != 0 => Some(Err(Error::WouldBlock)),
            Ok(false) => {
                self.procs[slot].state = self.receiving(slot, queue, buf, buf_len);
                None
            }
            Err(e) => Some(Err(e)),
        }
    }

    pub fn sys_test(&mut self, slot: usize, queue: u64) -> Result<u64, Error> {
        self.qseg(slot)?.len(queue).map(|n| n as u64)
    }

    pub fn sys_arm(&mut self, slot: usize, queue: u64, on: u64) -> Result<u64, Error> {
        if on > 1 {
            return Err(Error::InvalidArgument);
        }
        self.qseg(slot)?.arm(queue, on == 1).map(|_| 0)
    }

    /// `wait_armed`: None when the process blocked.
    pub fn sys_wait_armed(&mut self, slot: usize) -> Option<Result<u64, Error>> {
        let qseg = match self.qseg(slot) {
            Ok(q) => q,
            Err(e) => return Some(Err(e)),
        };
        if !qseg.any_armed() {
            return Some(Err(Error::NothingArmed));
        }
        if let Some(q) = qseg.first_armed_ready() {
            return Some(Ok(q as u64));
        }
        self.procs[slot].state = State::Blocked(Blocked::WaitArmed);
        None
    }

    /// `call`: send and block for the reply. None when the process blocked
    /// (always, unless the send failed).
    pub fn sys_call(&mut self, slot: usize, a: [u64; 5], words: [u64; 4]) -> Option<Result<u64, Error>> {
        let [link, send_buf, send_len, recv_buf, recv_len] = a;
        if send_len > MAX_DATA_BYTES {
            return Some(Err(Error::InvalidArgument));
        }
        let (r, queue) = match self.target(slot, link) {
            Ok(t) => t,
            Err(e) => return Some(Err(e)),
        };
        if r == slot {
            return Some(Err(Error::InvalidArgument)); // a call to oneself would never be answered
        }
        let me = self.pid_of(slot);
        let server = self.pid_of(r);
        // Block first, so a direct handoff that wakes the server finds the
        // caller already waiting for its reply.
        self.procs[slot].state = State::Blocked(Blocked::Call { server, buf: recv_buf, buf_len: recv_len });
        let payload = if send_len == 0 {
            Payload::None
        } else {
            Payload::User { from: slot, addr: send_buf, len: send_len }
        };
        match self.deliver(r, queue, Head { words, sender: me, kind: Kind::Call }, payload, true) {
            Ok(()) => None,
            Err(e) => {
                self.procs[slot].state = State::Running { cpu: crate::arch::percpu::current_cpu() };
                Some(Err(e))
            }
        }
    }

    /// Answer a call. The handle is used up only when the reply is sent
    /// (a bad reply buffer leaves it valid for a retry).
    fn reply(
        &mut self,
        slot: usize,
        handle: u64,
        buf: u64,
        len: u64,
        words: [u64; 4],
        local: bool,
    ) -> Result<u64, Error> {
        if len > MAX_DATA_BYTES {
            return Err(Error::InvalidArgument);
        }
        let caller = self.procs[slot].replies.peek(handle)?;
        let space = self.procs[slot].space.as_ref().expect("live process");
        UserSlice::new(buf, len)?.check(space, false)?;
        self.procs[slot].replies.take(handle)?;
        if self.procs[slot].replies.is_empty() {
            self.procs[slot].priority = self.procs[slot].base_priority;
        }
        self.count(Counter::Messages);
        let me = self.pid_of(slot);
        let Some(c) = self.slot_of(caller) else { return Err(Error::DeadPeer) };
        let State::Blocked(Blocked::Call { server, buf: cbuf, buf_len: clen }) = self.procs[c].state else {
            return Err(Error::DeadPeer);
        };
        if server != me {
            return Err(Error::DeadPeer);
        }
        let result = if len > clen {
            self.procs[c].frame.rdx = len;
            Err(Error::BufferTooSmall)
        } else if len == 0 {
            Ok(0) // a short reply: nothing to copy, no page tables to walk
        } else {
            copy_user_to_user(self, slot, buf, c, cbuf, len).map(|_| len)
        };
        if result.is_ok() {
            self.add(Counter::BytesCopied, len);
        }
        let f = &mut self.procs[c].frame;
        [f.r12, f.r13, f.r14, f.r15] = words;
        self.procs[c].set_return(result);
        self.wake(c, local);
        Ok(0)
    }

    pub fn sys_reply(
        &mut self,
        slot: usize,
        handle: u64,
        buf: u64,
        len: u64,
        words: [u64; 4],
    ) -> Result<u64, Error> {
        self.reply(slot, handle, buf, len, words, false)
    }

    /// `reply_wait`: reply (unless NO_REPLY), then receive. None when the
    /// process blocked or its registers already hold the received message.
    pub fn sys_reply_wait(
        &mut self,
        slot: usize,
        a: [u64; 6],
        words: [u64; 4],
    ) -> Option<Result<u64, Error>> {
        let [handle, buf, len, queue, recv_buf, recv_len] = a;
        // The caller is made ready on this CPU without an interrupt, on the
        // bet that this server blocks in the receive below and the caller
        // runs here next.
        let caller = self.procs[slot].replies.peek(handle).ok().and_then(|p| self.slot_of(p));
        if handle != NO_REPLY
            && let Err(e) = self.reply(slot, handle, buf, len, words, true)
        {
            // A dead caller is no reason not to go on serving.
            if e != Error::DeadPeer {
                return Some(Err(e));
            }
        }
        let received = self.sys_receive(slot, queue, recv_buf, recv_len, 0);
        // The bet lost (a message was waiting, so the server goes on): find
        // the caller a CPU now, or it waits for the server to block or for
        // a timer tick while another CPU idles.
        if received.is_some()
            && let Some(c) = caller
            && self.procs[c].state == State::Ready
        {
            self.kick_for(self.procs[c].priority);
        }
        received
    }
}
