//! A process's queue segment (Ridge OS §5): its links, its queues, and the
//! messages waiting in them, with the maxima the process set in `init_qseg`.
//!
//! The segment is owned by the kernel; user code reaches it only through
//! kernel calls, by small integers (link and queue numbers, like file
//! descriptors). Every table is allocated in full when the segment is made,
//! so later operations never allocate and running out of anything is an
//! error for the caller, never a kernel allocation failure.
//!
//! Invariants:
//! - the capacities of all open queues add up to at most `limits.messages`;
//! - a queue never holds more messages than its capacity;
//! - data pages held by queued messages never exceed `limits.pages`
//!   (the caller accounts pages with `reserve_page`/`release_page`).
//!
//! The message type is generic so that this file knows nothing of frames
//! or processes and can be tested on the host.

extern crate alloc;

use abi::Error;
use abi::msg::{MAX_ALLOWED_SENDERS, MAX_LINKS, MAX_MESSAGES, MAX_PAGES, MAX_QUEUES};
use alloc::collections::VecDeque;
use alloc::vec::Vec;

/// The maxima a process asks for in `init_qseg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub links: u32,
    pub queues: u32,
    pub messages: u32,
    pub pages: u32,
}

impl Limits {
    /// Check requested maxima against the kernel's.
    pub fn new(links: u64, queues: u64, messages: u64, pages: u64) -> Result<Limits, Error> {
        if links > MAX_LINKS || queues > MAX_QUEUES || messages > MAX_MESSAGES || pages > MAX_PAGES {
            return Err(Error::LimitReached);
        }
        Ok(Limits {
            links: links as u32,
            queues: queues as u32,
            messages: messages as u32,
            pages: pages as u32,
        })
    }
}

/// Where a link leads: a receiver (an opaque id, the kernel's pid), its
/// queue, and that queue's generation when the link was opened — so a link
/// to a queue that was closed does not lead to a later queue that reuses
/// the number (which may be private, or meant for someone else).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub receiver: u64,
    pub queue: u32,
    pub generation: u32,
}

pub struct Queue<M> {
    messages: VecDeque<M>,
    capacity: u32,
    is_public: bool,
    allowed: [u64; MAX_ALLOWED_SENDERS],
    allowed_count: usize,
    pub armed: bool,
}

pub struct QueueSegment<M> {
    limits: Limits,
    links: Vec<Option<Link>>,
    queues: Vec<Option<Queue<M>>>,
    /// Per queue number: bumped each time a queue is opened there.
    generations: Vec<u32>,
    messages_reserved: u32,
    pages_in_use: u32,
}

impl<M> QueueSegment<M> {
    /// Make a segment with these maxima; the tables are allocated now.
    pub fn new(limits: Limits) -> Result<QueueSegment<M>, Error> {
        let mut links = Vec::new();
        let mut queues = Vec::new();
        links.try_reserve_exact(limits.links as usize).map_err(|_| Error::OutOfResources)?;
        queues.try_reserve_exact(limits.queues as usize).map_err(|_| Error::OutOfResources)?;
        let mut generations = Vec::new();
        generations.try_reserve_exact(limits.queues as usize).map_err(|_| Error::OutOfResources)?;
        links.resize(limits.links as usize, None);
        queues.resize_with(limits.queues as usize, || None);
        generations.resize(limits.queues as usize, 0);
        Ok(QueueSegment { limits, links, queues, generations, messages_reserved: 0, pages_in_use: 0 })
    }

    #[inline]
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Raise the maxima (Ridge's InitQSeg called again). Shrinking any of
    /// them is refused: open links and queues could lie beyond the new end.
    pub fn grow(&mut self, limits: Limits) -> Result<(), Error> {
        let old = self.limits;
        if limits.links < old.links
            || limits.queues < old.queues
            || limits.messages < old.messages
            || limits.pages < old.pages
        {
            return Err(Error::InvalidArgument);
        }
        self.links
            .try_reserve_exact((limits.links - old.links) as usize)
            .map_err(|_| Error::OutOfResources)?;
        self.queues
            .try_reserve_exact((limits.queues - old.queues) as usize)
            .map_err(|_| Error::OutOfResources)?;
        self.generations
            .try_reserve_exact((limits.queues - old.queues) as usize)
            .map_err(|_| Error::OutOfResources)?;
        self.links.resize(limits.links as usize, None);
        self.queues.resize_with(limits.queues as usize, || None);
        self.generations.resize(limits.queues as usize, 0);
        self.limits = limits;
        Ok(())
    }

    /// A copy for a forked process: the same maxima, the same links, and
    /// the same queues (numbers, capacities, access lists), empty. Messages
    /// stay with the original: each was sent to one process.
    pub fn fork_copy(&self) -> Result<QueueSegment<M>, Error> {
        let mut copy = QueueSegment::new(self.limits)?;
        copy.links.copy_from_slice(&self.links);
        copy.generations.copy_from_slice(&self.generations);
        for (i, q) in self.queues.iter().enumerate() {
            if let Some(q) = q {
                let mut messages = VecDeque::new();
                messages.try_reserve_exact(q.capacity as usize).map_err(|_| Error::OutOfResources)?;
                copy.queues[i] = Some(Queue {
                    messages,
                    capacity: q.capacity,
                    is_public: q.is_public,
                    allowed: q.allowed,
                    allowed_count: q.allowed_count,
                    armed: false,
                });
            }
        }
        copy.messages_reserved = self.messages_reserved;
        Ok(copy)
    }

    /// Open a queue holding up to `capacity` messages.
    pub fn open_queue(&mut self, capacity: u64, is_public: bool) -> Result<u32, Error> {
        if capacity == 0 {
            return Err(Error::InvalidArgument);
        }
        let capacity = u32::try_from(capacity).map_err(|_| Error::LimitReached)?;
        if self.messages_reserved.checked_add(capacity).is_none_or(|t| t > self.limits.messages) {
            return Err(Error::LimitReached);
        }
        let index = self.queues.iter().position(Option::is_none).ok_or(Error::LimitReached)?;
        let mut messages = VecDeque::new();
        messages.try_reserve_exact(capacity as usize).map_err(|_| Error::OutOfResources)?;
        self.queues[index] = Some(Queue {
            messages,
            capacity,
            is_public,
            allowed: [0; MAX_ALLOWED_SENDERS],
            allowed_count: 0,
            armed: false,
        });
        self.messages_reserved += capacity;
        self.generations[index] = self.generations[index].wrapping_add(1);
        Ok(index as u32)
    }

    /// The generation of open queue `q` (see [`Link`]).
    #[inline(always)]
    pub fn generation(&self, q: u64) -> Result<u32, Error> {
        self.queue(q)?;
        Ok(self.generations[q as usize])
    }

    /// Is `q` still the queue a link opened with `generation` points to?
    #[inline]
    pub fn check_generation(&self, q: u64, generation: u32) -> Result<(), Error> {
        if self.generation(q)? == generation { Ok(()) } else { Err(Error::BadQueue) }
    }

    #[inline(always)]
    fn queue(&self, q: u64) -> Result<&Queue<M>, Error> {
        self.queues.get(q as usize).and_then(Option::as_ref).ok_or(Error::BadQueue)
    }

    fn queue_mut(&mut self, q: u64) -> Result<&mut Queue<M>, Error> {
        self.queues.get_mut(q as usize).and_then(Option::as_mut).ok_or(Error::BadQueue)
    }

    /// Close a queue; returns the messages that were waiting in it, for the
    /// caller to dispose of (their data, their blocked callers).
    pub fn close_queue(&mut self, q: u64) -> Result<VecDeque<M>, Error> {
        self.queue(q)?;
        let queue = self.queues[q as usize].take().expect("checked above");
        self.messages_reserved -= queue.capacity;
        Ok(queue.messages)
    }

    /// Let `sender` link to private queue `q`.
    pub fn allow_sender(&mut self, q: u64, sender: u64) -> Result<(), Error> {
        let queue = self.queue_mut(q)?;
        if queue.allowed[..queue.allowed_count].contains(&sender) {
            return Ok(());
        }
        if queue.allowed_count == MAX_ALLOWED_SENDERS {
            return Err(Error::LimitReached);
        }
        queue.allowed[queue.allowed_count] = sender;
        queue.allowed_count += 1;
        Ok(())
    }

    /// May `sender` link to queue `q`? The owner itself always may.
    pub fn may_link(&self, q: u64, sender: u64, is_owner: bool) -> Result<(), Error> {
        let queue = self.queue(q)?;
        if queue.is_public || is_owner || queue.allowed[..queue.allowed_count].contains(&sender) {
            Ok(())
        } else {
            Err(Error::PermissionDenied)
        }
    }

    pub fn open_link(&mut self, link: Link) -> Result<u32, Error> {
        let index = self.links.iter().position(Option::is_none).ok_or(Error::LimitReached)?;
        self.links[index] = Some(link);
        Ok(index as u32)
    }

    pub fn close_link(&mut self, l: u64) -> Result<(), Error> {
        let slot = self.links.get_mut(l as usize).ok_or(Error::BadLink)?;
        slot.take().map(|_| ()).ok_or(Error::BadLink)
    }

    #[inline]
    pub fn link(&self, l: u64) -> Result<Link, Error> {
        self.links.get(l as usize).copied().flatten().ok_or(Error::BadLink)
    }

    /// Append a message; a full queue gives the message back.
    pub fn push(&mut self, q: u64, message: M) -> Result<(), (Error, M)> {
        let queue = match self.queue_mut(q) {
            Ok(queue) => queue,
            Err(e) => return Err((e, message)),
        };
        if queue.messages.len() >= queue.capacity as usize {
            return Err((Error::QueueFull, message));
        }
        queue.messages.push_back(message);
        Ok(())
    }

    /// Put a message back at the head (a receive that could not complete).
    pub fn push_front(&mut self, q: u64, message: M) -> Result<(), (Error, M)> {
        match self.queue_mut(q) {
            Ok(queue) => {
                queue.messages.push_front(message);
                Ok(())
            }
            Err(e) => Err((e, message)),
        }
    }

    pub fn pop(&mut self, q: u64) -> Result<Option<M>, Error> {
        Ok(self.queue_mut(q)?.messages.pop_front())
    }

    pub fn peek(&self, q: u64) -> Result<Option<&M>, Error> {
        Ok(self.queue(q)?.messages.front())
    }

    #[inline]
    pub fn len(&self, q: u64) -> Result<usize, Error> {
        Ok(self.queue(q)?.messages.len())
    }

    pub fn arm(&mut self, q: u64, on: bool) -> Result<(), Error> {
        self.queue_mut(q)?.armed = on;
        Ok(())
    }

    pub fn any_armed(&self) -> bool {
        self.queues.iter().flatten().any(|q| q.armed)
    }

    /// The lowest-numbered armed queue with a message waiting.
    pub fn first_armed_ready(&self) -> Option<u32> {
        self.queues
            .iter()
            .position(|q| q.as_ref().is_some_and(|q| q.armed && !q.messages.is_empty()))
            .map(|i| i as u32)
    }

    pub fn is_armed(&self, q: u64) -> bool {
        self.queue(q).is_ok_and(|q| q.armed)
    }

    /// Take the data-page quota for one page.
    pub fn reserve_page(&mut self) -> Result<(), Error> {
        if self.pages_in_use >= self.limits.pages {
            return Err(Error::QueueFull);
        }
        self.pages_in_use += 1;
        Ok(())
    }

    pub fn release_page(&mut self) {
        self.pages_in_use = self.pages_in_use.saturating_sub(1);
    }

    /// Remove every message for which `drop_it` is true (e.g. those of a
    /// sender that has ended), handing each to `dispose`.
    pub fn remove_messages(&mut self, mut drop_it: impl FnMut(&M) -> bool, mut dispose: impl FnMut(M)) {
        for queue in self.queues.iter_mut().flatten() {
            let mut i = 0;
            while i < queue.messages.len() {
                if drop_it(&queue.messages[i]) {
                    dispose(queue.messages.remove(i).expect("index in range"));
                } else {
                    i += 1;
                }
            }
        }
    }

    /// Empty every queue (the owner has ended), handing each message to `dispose`.
    pub fn drain(&mut self, mut dispose: impl FnMut(M)) {
        for queue in self.queues.iter_mut().flatten() {
            queue.messages.drain(..).for_each(&mut dispose);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(links: u64, queues: u64, messages: u64) -> QueueSegment<u32> {
        QueueSegment::new(Limits::new(links, queues, messages, 2).unwrap()).unwrap()
    }

    #[test]
    fn limits_are_checked() {
        assert_eq!(Limits::new(MAX_LINKS + 1, 1, 1, 1), Err(Error::LimitReached));
        assert!(Limits::new(MAX_LINKS, MAX_QUEUES, MAX_MESSAGES, MAX_PAGES).is_ok());
    }

    #[test]
    fn queues_respect_capacity_and_order() {
        let mut s = seg(1, 2, 3);
        let q = s.open_queue(2, true).unwrap();
        assert_eq!(s.open_queue(2, true), Err(Error::LimitReached), "only 1 message of quota left");
        s.push(q as u64, 1).unwrap();
        s.push(q as u64, 2).unwrap();
        assert_eq!(s.push(q as u64, 3), Err((Error::QueueFull, 3)));
        assert_eq!(s.len(q as u64), Ok(2));
        assert_eq!(s.pop(q as u64), Ok(Some(1)));
        s.push_front(q as u64, 9).unwrap();
        assert_eq!(s.pop(q as u64), Ok(Some(9)));
        assert_eq!(s.pop(q as u64), Ok(Some(2)));
        assert_eq!(s.pop(q as u64), Ok(None));
    }

    #[test]
    fn closing_returns_messages_and_quota() {
        let mut s = seg(1, 1, 4);
        let q = s.open_queue(4, true).unwrap() as u64;
        s.push(q, 7).unwrap();
        let left = s.close_queue(q).unwrap();
        assert_eq!(left.into_iter().collect::<Vec<_>>(), [7]);
        assert_eq!(s.pop(q), Err(Error::BadQueue));
        assert_eq!(s.push(q, 1), Err((Error::BadQueue, 1)));
        assert_eq!(s.open_queue(4, true), Ok(0), "quota and slot are free again");
    }

    #[test]
    fn private_queues_need_permission() {
        let mut s = seg(1, 1, 4);
        let q = s.open_queue(4, false).unwrap() as u64;
        assert_eq!(s.may_link(q, 42, false), Err(Error::PermissionDenied));
        assert_eq!(s.may_link(q, 42, true), Ok(()));
        s.allow_sender(q, 42).unwrap();
        assert_eq!(s.may_link(q, 42, false), Ok(()));
        for sender in 0..MAX_ALLOWED_SENDERS as u64 - 1 {
            s.allow_sender(q, 100 + sender).unwrap();
        }
        assert_eq!(s.allow_sender(q, 999), Err(Error::LimitReached));
    }

    #[test]
    fn links_are_small_integers() {
        let mut s = seg(2, 1, 1);
        let l0 = s.open_link(Link { receiver: 5, queue: 0, generation: 1 }).unwrap();
        let l1 = s.open_link(Link { receiver: 6, queue: 1, generation: 1 }).unwrap();
        assert_eq!((l0, l1), (0, 1));
        assert_eq!(s.open_link(Link { receiver: 7, queue: 0, generation: 1 }), Err(Error::LimitReached));
        s.close_link(0).unwrap();
        assert_eq!(s.close_link(0), Err(Error::BadLink));
        assert_eq!(s.link(0), Err(Error::BadLink));
        assert_eq!(s.link(99), Err(Error::BadLink));
        assert_eq!(s.link(1), Ok(Link { receiver: 6, queue: 1, generation: 1 }));
    }

    #[test]
    fn arming_and_page_quota() {
        let mut s = seg(1, 3, 6);
        let a = s.open_queue(2, true).unwrap() as u64;
        let b = s.open_queue(2, true).unwrap() as u64;
        assert!(!s.any_armed());
        s.arm(b, true).unwrap();
        assert_eq!(s.first_armed_ready(), None);
        s.push(a, 1).unwrap();
        assert_eq!(s.first_armed_ready(), None, "a is not armed");
        s.push(b, 2).unwrap();
        assert_eq!(s.first_armed_ready(), Some(b as u32));
        s.reserve_page().unwrap();
        s.reserve_page().unwrap();
        assert_eq!(s.reserve_page(), Err(Error::QueueFull));
        s.release_page();
        assert!(s.reserve_page().is_ok());
    }

    #[test]
    fn messages_of_a_dead_sender_are_removed() {
        let mut s = seg(1, 2, 8);
        let a = s.open_queue(4, true).unwrap() as u64;
        let b = s.open_queue(4, true).unwrap() as u64;
        for m in [1, 2, 3, 2] {
            s.push(a, m).unwrap();
        }
        s.push(b, 2).unwrap();
        let mut dropped = Vec::new();
        s.remove_messages(|&m| m == 2, |m| dropped.push(m));
        assert_eq!(dropped, [2, 2, 2]);
        assert_eq!(s.pop(a), Ok(Some(1)));
        assert_eq!(s.pop(a), Ok(Some(3)));
        assert_eq!(s.pop(b), Ok(None));
    }

    #[test]
    fn growing_keeps_what_is_open_and_never_shrinks() {
        let mut s = seg(1, 1, 2);
        let q = s.open_queue(2, true).unwrap() as u64;
        s.push(q, 5).unwrap();
        assert_eq!(s.open_queue(1, true), Err(Error::LimitReached));
        s.grow(Limits::new(4, 2, 4, 2).unwrap()).unwrap();
        assert_eq!(s.open_queue(2, true), Ok(1));
        assert_eq!(s.pop(q), Ok(Some(5)));
        assert_eq!(s.grow(Limits::new(1, 2, 4, 2).unwrap()), Err(Error::InvalidArgument));
    }

    #[test]
    fn a_reopened_queue_number_has_a_new_generation() {
        let mut s = seg(1, 1, 4);
        let q = s.open_queue(2, true).unwrap() as u64;
        let g = s.generation(q).unwrap();
        assert_eq!(s.check_generation(q, g), Ok(()));
        s.close_queue(q).unwrap();
        assert_eq!(s.check_generation(q, g), Err(Error::BadQueue));
        assert_eq!(s.open_queue(2, false), Ok(q as u32));
        assert_eq!(s.check_generation(q, g), Err(Error::BadQueue), "old links do not reach the new queue");
        assert_eq!(s.check_generation(q, s.generation(q).unwrap()), Ok(()));
    }

    #[test]
    fn zero_sized_and_huge_queues_are_refused() {
        let mut s = seg(1, 1, 4);
        assert_eq!(s.open_queue(0, true), Err(Error::InvalidArgument));
        assert_eq!(s.open_queue(u64::MAX, true), Err(Error::LimitReached));
    }

    #[test]
    fn fork_copy_keeps_links_and_empty_queues() {
        let mut s: QueueSegment<u32> = QueueSegment::new(Limits::new(4, 2, 8, 1).unwrap()).unwrap();
        let q = s.open_queue(3, false).unwrap();
        s.allow_sender(q as u64, 77).unwrap();
        let l = s.open_link(Link { receiver: 9, queue: 1, generation: 5 }).unwrap();
        s.push(q as u64, 42).map_err(|(e, _)| e).unwrap();
        let c = s.fork_copy().unwrap();
        assert_eq!(c.link(l as u64).unwrap(), s.link(l as u64).unwrap());
        assert_eq!(c.len(q as u64).unwrap(), 0);
        assert_eq!(s.len(q as u64).unwrap(), 1);
        assert_eq!(c.generation(q as u64).unwrap(), s.generation(q as u64).unwrap());
        assert!(c.may_link(q as u64, 77, false).is_ok());
        assert!(c.may_link(q as u64, 78, false).is_err());
    }
}
