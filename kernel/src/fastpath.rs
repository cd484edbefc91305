//! The fast path of the synchronous call (seL4's "fastpath"): `call` and
//! `reply_wait` with short messages, when the peer is already waiting,
//! switch straight from one process's registers to the other's.
//!
//! It does exactly what the general path (`syscall::dispatch`, `ipc`,
//! `Kernel::resume`) would do in that case, minus the generic work: no
//! decoding into a `Payload`, no trip through the ready lists, no frame
//! copied (the caller's registers are already in its slot of the process
//! table, see arch/trap.rs; the four message words go from slot to slot).
//! Anything unusual — data to copy, a peer not waiting, a peer pinned to
//! another CPU, a process of higher priority ready, a pending kill, an
//! error to report — returns
//! `None` before changing anything, and the general path handles the call
//! from the start, so the two can never disagree about an error.
//!
//! All of it is inlined into `trap::syscall_handler` (one prologue, no
//! calls, nothing spilled): it is most of what a round trip costs.

use crate::arch::regs::{Received, ReplyWaitArgs};
use crate::arch::trap::TrapFrame;
use crate::process::{Blocked, State};
use crate::state::Kernel;
use abi::msg::Kind;
use abi::{Call, Pid};
use kernel_core::limits::{MAX_CPUS, MAX_PROCESSES};

impl Kernel {
    /// Try the fast path for the kernel call of the process running on
    /// `cpu` (its registers are in its slot). `Some`: done, and these are
    /// the registers to leave through.
    #[inline(always)]
    pub fn fastpath(&mut self, cpu: usize) -> Option<*mut TrapFrame> {
        // Both are always in range (per-CPU indices, and the table slot of
        // the running process); the masks only spare the bounds checks.
        // `cpu` itself stays unmasked (the same value): it is also stored
        // in the process's state, and keeping one register for both saves
        // a move on every call.
        let me = self.cpu(cpu % MAX_CPUS).current? % MAX_PROCESSES;
        let number = self.proc(me).frame.call_number();
        if number == Call::Call as u64 {
            self.fast_call(cpu, me)
        } else if number == Call::ReplyWait as u64 {
            self.fast_reply_wait(cpu, me)
        } else {
            None
        }
    }

    /// Nothing may stop `from` being switched away from now, and the
    /// general path would also pick the process about to run at
    /// `to_priority`: nothing ready at that priority or above (it would be
    /// queued behind those).
    #[inline(always)]
    fn may_switch_from(&self, from: usize, to_priority: u8) -> bool {
        !self.proc(from).kill_requested && self.ready().highest_priority().is_none_or(|h| h < to_priority)
    }

    /// `call(link, 0-byte request)` to a server blocked receiving on that
    /// queue, at a priority no lower than the caller's.
    #[inline(always)]
    fn fast_call(&mut self, cpu: usize, me: usize) -> Option<*mut TrapFrame> {
        let p = self.proc(me);
        // Each argument is read where it is used, as the original
        // hand-written path did: reading them all up front costs loads on
        // every declined call.
        if p.frame.as_call_args().send_len != 0 {
            return None;
        }
        // The segment is still checked: `exec` drops it (and the new
        // program's first `init_qseg` the cached link).
        let qseg = p.qseg.as_ref()?;
        let number = p.frame.as_call_args().link;
        let link = if p.link_cache.0 == number {
            p.link_cache.1
        } else {
            let link = qseg.link(number).ok()?;
            self.proc_mut(me).link_cache = (number, link);
            link
        };
        let p = self.proc(me);
        let server_pid = Pid(link.receiver);
        let server = server_pid.slot() as usize;
        let s = self.try_proc(server)?;
        // A stale pid, or a slot that is not blocked receiving on the
        // link's queue (a free slot, or the caller itself, never is).
        let State::Blocked(Blocked::Receive { queue, generation, .. }) = s.state else { return None };
        // The queue's generation was recorded when the server blocked on
        // it, and a blocked owner cannot close or reopen it: comparing it
        // is `check_generation` without the look-up.
        if s.generation != server_pid.generation()
            || queue != link.queue
            || generation != link.generation
            || s.priority < p.priority
            || !s.may_run_on(cpu)
            || !self.may_switch_from(me, p.priority)
        {
            return None;
        }
        let caller = self.pid_of(me);
        let handle = self.proc_mut(server).replies.insert_in_place(caller)?;
        // Committed: the caller waits for its reply.
        let p = self.proc_mut(me);
        let priority = p.priority;
        let args = p.frame.as_call_args();
        p.state =
            State::Blocked(Blocked::Call { server: server_pid, buf: args.recv_buf, buf_len: args.recv_len });
        let words = p.frame.message();
        // The server runs at the caller's priority (see ipc.rs).
        let s = self.proc_mut(server);
        s.priority = priority;
        s.frame.set_received(Received {
            len_bytes: 0,
            sender: caller,
            kind: Kind::Call,
            reply_handle: handle,
            message: words,
        });
        // One increment for the kernel call, the message, the direct
        // handoff and the context switch (see `Kernel::counter_values`).
        self.count_fast_call();
        Some(self.switch_to(cpu, me, server))
    }

    /// `reply_wait(handle, 0-byte reply, queue)` whose caller waits and
    /// whose queue is empty: the server blocks and the caller runs.
    #[inline(always)]
    fn fast_reply_wait(&mut self, cpu: usize, me: usize) -> Option<*mut TrapFrame> {
        let p = self.proc(me);
        // As in `fast_call`, each argument is read where it is used.
        let ReplyWaitArgs { handle, queue, reply_len, .. } = p.frame.as_reply_wait_args();
        // `NO_REPLY` (no answer to send) is refused by `peek` below: its
        // index is never one of the table's.
        if reply_len != 0 {
            return None;
        }
        let qseg = p.qseg.as_ref()?;
        if qseg.len(queue) != Ok(0) {
            return None;
        }
        let generation = qseg.generation(queue).ok()?;
        let caller_pid = p.replies.peek(handle).ok()?;
        let caller = caller_pid.slot() as usize;
        let c = self.try_proc(caller)?;
        // A stale pid, or a process not waiting in a call to this one.
        let State::Blocked(Blocked::Call { server, .. }) = c.state else { return None };
        if c.generation != caller_pid.generation()
            || server != self.pid_of(me)
            || !c.may_run_on(cpu)
            || !self.may_switch_from(me, c.priority)
        {
            return None;
        }
        // Committed: the call is answered and the server waits for the next.
        let p = self.proc_mut(me);
        p.replies.use_up(handle);
        // It blocks for its next message: its own priority (ipc.rs).
        p.priority = p.base_priority;
        let ReplyWaitArgs { recv_buf, recv_len, .. } = p.frame.as_reply_wait_args();
        p.state = State::Blocked(Blocked::Receive {
            queue: queue as u32,
            generation,
            buf: recv_buf,
            buf_len: recv_len,
        });
        let words = p.frame.message();
        let f = &mut self.proc_mut(caller).frame;
        f.set_result(Ok(0));
        f.set_message(words);
        // The kernel call, the message and the context switch.
        self.count_fast_reply_wait();
        Some(self.switch_to(cpu, me, caller))
    }
}
