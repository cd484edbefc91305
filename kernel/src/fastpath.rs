//! The fast path of the synchronous call (seL4's "fastpath"): `call` and
//! `reply_wait` with short messages, when the peer is already waiting,
//! switch straight from one process's registers to the other's.
//!
//! It does exactly what the general path (`syscall::dispatch`, `ipc`,
//! `Kernel::resume`) would do in that case, minus the generic work: no
//! decoding into a `Payload`, no trip through the ready lists, one frame
//! saved and one loaded. Anything unusual — data to copy, a peer not
//! waiting, a process of higher priority ready, a pending kill, an error
//! to report — returns false and the general path handles the call from
//! the start, so the two can never disagree about an error.

use crate::arch::trap::TrapFrame;
use crate::process::{Blocked, State};
use crate::sched::Kernel;
use abi::msg::{Kind, NO_REPLY};
use abi::{Call, Counter, Pid};

impl Kernel {
    /// Try the fast path for the kernel call in `frame` (from the process
    /// running on `cpu`). True: done, and `frame` holds the next process.
    #[inline(always)]
    pub fn fastpath(&mut self, cpu: usize, frame: &mut TrapFrame) -> bool {
        if frame.rax == Call::Call as u64 {
            self.fast_call(cpu, frame)
        } else if frame.rax == Call::ReplyWait as u64 {
            self.fast_reply_wait(cpu, frame)
        } else {
            false
        }
    }

    /// Nothing may stop `from` being switched away from `cpu` now, and the
    /// general path would also pick the process about to run at
    /// `to_priority`: nothing ready at that priority or above (it would be
    /// queued behind those).
    fn may_switch_from(&self, cpu: usize, from: usize, to_priority: u8) -> bool {
        !self.procs[from].kill_requested
            && self.ready.highest_priority().is_none_or(|h| h < to_priority)
            && self.cpus[cpu].current == Some(from)
    }

    /// `call(link, 0-byte request)` to a server blocked receiving on that
    /// queue, at a priority no lower than the caller's.
    #[inline(never)]
    fn fast_call(&mut self, cpu: usize, frame: &mut TrapFrame) -> bool {
        let (link, send_len, recv_buf, recv_len) = (frame.rdi, frame.rdx, frame.r10, frame.r8);
        if send_len != 0 {
            return false;
        }
        let Some(me) = self.cpus[cpu].current else { return false };
        let Some(link) = self.procs[me].qseg.as_ref().and_then(|q| q.link(link).ok()) else { return false };
        let Some(server) = self.slot_of(Pid(link.receiver)) else { return false };
        let State::Blocked(Blocked::Receive { queue, .. }) = self.procs[server].state else { return false };
        let caller_priority = self.procs[me].priority;
        let generation_ok = self.procs[server]
            .qseg
            .as_ref()
            .is_some_and(|q| q.check_generation(queue as u64, link.generation).is_ok());
        if queue != link.queue
            || server == me
            || !generation_ok
            || self.procs[server].priority < caller_priority
            || !self.may_switch_from(cpu, me, caller_priority)
        {
            return false;
        }
        let caller = self.pid_of(me);
        let limit = self.procs[server].qseg.as_ref().map_or(1, |q| (q.limits().messages as usize).max(1));
        let Ok(handle) = self.procs[server].replies.insert(caller, limit) else { return false };
        // Committed: the caller waits for its reply.
        let words = [frame.r12, frame.r13, frame.r14, frame.r15];
        let server_pid = self.pid_of(server);
        self.procs[me].frame = *frame;
        self.procs[me].state =
            State::Blocked(Blocked::Call { server: server_pid, buf: recv_buf, buf_len: recv_len });
        // The server runs at the caller's priority (see ipc.rs).
        let s = &mut self.procs[server];
        s.priority = caller_priority;
        let f = &mut s.frame;
        f.rax = 0;
        f.rdx = caller.0;
        f.rsi = Kind::Call as u64;
        f.r10 = handle;
        [f.r12, f.r13, f.r14, f.r15] = words;
        self.count(Counter::Messages);
        self.count(Counter::DirectHandoffs);
        self.switch_to(cpu, me, server, frame);
        true
    }

    /// `reply_wait(handle, 0-byte reply, queue)` whose caller waits and
    /// whose queue is empty: the server blocks and the caller runs.
    #[inline(never)]
    fn fast_reply_wait(&mut self, cpu: usize, frame: &mut TrapFrame) -> bool {
        let (handle, reply_len, queue, recv_buf, recv_len) =
            (frame.rdi, frame.rdx, frame.r10, frame.r8, frame.r9);
        if handle == NO_REPLY || reply_len != 0 {
            return false;
        }
        let Some(me) = self.cpus[cpu].current else { return false };
        let queue_empty = self.procs[me].qseg.as_ref().is_some_and(|q| q.len(queue) == Ok(0));
        let Ok(caller_pid) = self.procs[me].replies.peek(handle) else { return false };
        let Some(caller) = self.slot_of(caller_pid) else { return false };
        let me_pid = self.pid_of(me);
        let waits = matches!(self.procs[caller].state,
            State::Blocked(Blocked::Call { server, .. }) if server == me_pid);
        let caller_priority = self.procs[caller].priority;
        if !queue_empty || !waits || !self.may_switch_from(cpu, me, caller_priority) {
            return false;
        }
        // Committed: the call is answered and the server waits for the next.
        let _ = self.procs[me].replies.take(handle);
        if self.procs[me].replies.is_empty() {
            self.procs[me].priority = self.procs[me].base_priority;
        }
        let words = [frame.r12, frame.r13, frame.r14, frame.r15];
        self.procs[me].frame = *frame;
        self.procs[me].state =
            State::Blocked(Blocked::Receive { queue: queue as u32, buf: recv_buf, buf_len: recv_len });
        let f = &mut self.procs[caller].frame;
        f.rax = 0;
        [f.r12, f.r13, f.r14, f.r15] = words;
        self.count(Counter::Messages);
        self.switch_to(cpu, me, caller, frame);
        true
    }
}
