//! The message system: order and contents under stress from every CPU,
//! call and reply with data, the errors each call names, private queues,
//! arming several queues, dead peers, pages lent copy-on-write, and the
//! regressions found there. The peers are `tmsg` roles, which say hello on
//! the runner's queue 0 before they start.

use crate::tmsg_words::HELLO;
use crate::util::{MAIN_QUEUE, MAX_DATA, TestResult, check};
use abi::msg::Kind;
use abi::{Error, ExitStatus, InfoKey, Pid};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use runtime::msg::{self, Page, Queue, ReplyHandle};
use runtime::sys;

/// Start a tmsg role and wait for its hello; returns its pid and a link to
/// its queue.
fn start_tmsg(role: &str, extra: &str, priority: u64) -> Result<(Pid, msg::Link), String> {
    start_tmsg_with_queue(role, extra, priority).map(|(pid, link, _)| (pid, link))
}

/// [`start_tmsg`], also giving the role's queue (for other roles to link to).
fn start_tmsg_with_queue(role: &str, extra: &str, priority: u64) -> Result<(Pid, msg::Link, Queue), String> {
    let args = format!("{role} {} {extra}", sys::getpid().0);
    let pid =
        sys::spawn_with_priority("tmsg", &args, priority).map_err(|e| format!("spawn tmsg: {}", e.name()))?;
    let mut buf = [0u8; 16];
    let r = msg::receive_data(MAIN_QUEUE, &mut buf).map_err(|e| format!("receive hello: {}", e.name()))?;
    if r.sender != pid || r.message[0] != HELLO {
        return Err(format!("expected hello from {:#x}, got {:?} from {:#x}", pid.0, r.message, r.sender.0));
    }
    let queue = Queue(r.message[1] as u32);
    let link = msg::open_link(pid, queue).map_err(|e| format!("link: {}", e.name()))?;
    Ok((pid, link, queue))
}

fn expect_exit(pid: Pid, code: u32) -> TestResult {
    let (_, status) = sys::wait(Some(pid)).map_err(|e| e.name())?;
    if status == ExitStatus::Exited(code) {
        Ok(())
    } else {
        Err(format!("{:#x} ended {status:?}, expected Exited({code})", pid.0))
    }
}

fn counter(c: abi::Counter) -> u64 {
    let mut all = [0u64; abi::COUNTER_COUNT];
    let _ = sys::counters(&mut all);
    all[c as usize]
}

pub fn messages_in_order() -> TestResult {
    let tag = 0x7a67;
    let (pid, link) = start_tmsg("sender", &format!("200 {tag}"), abi::PRIORITY_INHERIT)?;
    msg::send(link, &[0; 4]).map_err(|e| e.name())?;
    let mut buf = [0u8; 16];
    for i in 0..200u64 {
        let r = msg::receive_data(MAIN_QUEUE, &mut buf).map_err(|e| e.name())?;
        let want = [tag, i, !i, tag ^ i];
        if r.sender != pid || r.message != want || r.kind != Kind::Short || r.len != 0 {
            return Err(format!("message {i}: got {:?} from {:#x}", r.message, r.sender.0));
        }
    }
    expect_exit(pid, 0)?;
    msg::close_link(link).map_err(|e| e.name().into())
}

pub fn message_stress() -> TestResult {
    let cpus = sys::info(InfoKey::CpusOnline);
    let senders = 2 * cpus + 2;
    let per_sender = 300u64;
    let mut pids = Vec::new();
    let mut links = Vec::new();
    for tag in 0..senders {
        // Each sender starts and says hello before the next starts; then
        // all of them are told to go at once, and send on every CPU.
        let (pid, link) = start_tmsg("sender", &format!("{per_sender} {tag}"), abi::PRIORITY_INHERIT)?;
        pids.push(pid);
        links.push(link);
    }
    for &link in &links {
        msg::send(link, &[0; 4]).map_err(|e| e.name())?;
    }
    let mut next = alloc::vec![0u64; senders as usize];
    let mut buf = [0u8; 16];
    for _ in 0..senders * per_sender {
        let r = msg::receive_data(MAIN_QUEUE, &mut buf).map_err(|e| e.name())?;
        let [tag, i, not_i, check] = r.message;
        let Some(expected) = next.get_mut(tag as usize) else { return Err(format!("bad tag {tag}")) };
        if pids[tag as usize] != r.sender || i != *expected || not_i != !i || check != tag ^ i {
            return Err(format!("sender {tag}: got {:?}, expected sequence {}", r.message, *expected));
        }
        *expected += 1;
    }
    check(msg::test(MAIN_QUEUE) == Ok(0), "no extra messages")?;
    for pid in pids {
        expect_exit(pid, 0)?;
    }
    for link in links {
        msg::close_link(link).map_err(|e| e.name())?;
    }
    Ok(())
}

/// Regression: the kernel lock taken from every CPU at once, for long. It
/// was a ticket lock, which hands the lock to the next CPU in line even
/// while the host has that virtual CPU stopped; with more vCPUs than free
/// host cores (4 CPUs on a 2-core host) the handoffs outlasted the 10 ms
/// tick and the system all but stopped (state.rs, `KERNEL`). Here one
/// caller–echo pair per CPU, plus one, make calls with and without data,
/// and after each call a yield and a burst of `getpid`s (tmsg `caller`),
/// so every CPU enters the kernel all the time and processes move between
/// CPUs. With the ticket lock, at 4 CPUs on an otherwise idle 2-core
/// host, this test did not end in 400 s (the boot's timeout is 300 s);
/// with the test-and-set lock it takes about 2.5 s there (1 s at 2 CPUs,
/// 0.5 s at 1). It asserts no time, only that every answer is right and
/// every process ends cleanly: the boot's timeout is what catches it.
pub fn calls_and_yields_on_every_cpu_at_once() -> TestResult {
    let cpus = sys::info(InfoKey::CpusOnline);
    let pairs = cpus + 1;
    let calls = CALLS_PER_CALLER;
    let mut echoes = Vec::new();
    let mut callers = Vec::new();
    for _ in 0..pairs {
        let (echo, link, queue) = start_tmsg_with_queue("echo", &format!("{calls}"), abi::PRIORITY_INHERIT)?;
        msg::close_link(link).map_err(|e| e.name())?;
        echoes.push(echo);
        let (caller, go) =
            start_tmsg("caller", &format!("{} {} {calls}", echo.0, queue.0), abi::PRIORITY_INHERIT)?;
        callers.push((caller, go));
    }
    for &(_, go) in &callers {
        msg::send(go, &[0; 4]).map_err(|e| e.name())?;
    }
    let mut outcome = Ok(());
    for (caller, go) in callers {
        outcome = outcome.and(expect_exit(caller, 0));
        msg::close_link(go).map_err(|e| e.name())?;
    }
    if outcome.is_err() {
        // A caller that stopped early leaves its echo waiting for calls.
        for &echo in &echoes {
            let _ = sys::kill(echo);
            let _ = sys::wait(Some(echo));
        }
        return outcome;
    }
    for echo in echoes {
        expect_exit(echo, 0)?;
    }
    Ok(())
}

/// Calls each caller of [`calls_and_yields_on_every_cpu_at_once`] makes.
const CALLS_PER_CALLER: u64 = 5000;

pub fn call_round_trips() -> TestResult {
    let calls = 300u64;
    let (pid, link) = start_tmsg("echo", &format!("{calls}"), abi::DEFAULT_PRIORITY as u64 + 2)?;
    let mut data = [0u8; MAX_DATA];
    let mut reply = [0u8; MAX_DATA];
    let entries_before = counter(abi::Counter::KernelCalls);
    for i in 0..calls {
        let len = (i as usize * 131) % (MAX_DATA + 1);
        for (j, b) in data[..len].iter_mut().enumerate() {
            *b = (j as u64 ^ i) as u8;
        }
        let words = [i, i * 3, u64::MAX - i, 7];
        let (got, n) = msg::call(link, &words, &data[..len], &mut reply)
            .map_err(|e| format!("call {i}: {}", e.name()))?;
        if got != words.map(|w| w.wrapping_add(1)) || n != len {
            return Err(format!("call {i}: reply {got:?} with {n} bytes"));
        }
        if (0..len).any(|j| reply[j] != data[len - 1 - j]) {
            return Err(format!("call {i}: reply data is not the request reversed"));
        }
    }
    let entries = counter(abi::Counter::KernelCalls) - entries_before;
    expect_exit(pid, 0)?;
    // Two kernel entries per round trip: the call, and the server's
    // reply_wait. Besides those: the server's first receive and last reply,
    // its exit, and our reading of the counter.
    if entries > 2 * calls + 4 {
        return Err(format!("{entries} kernel entries for {calls} round trips"));
    }
    Ok(())
}

pub fn message_errors() -> TestResult {
    let me = sys::getpid();
    let e = |r: Result<(), Error>, want: Error, what: &str| -> TestResult {
        if r == Err(want) { Ok(()) } else { Err(format!("{what}: got {r:?}, expected {want:?}")) }
    };
    e(msg::init_qseg(1, 1, 1, 1), Error::InvalidArgument, "init_qseg that would shrink the segment")?;
    e(
        msg::init_qseg(abi::msg::MAX_LINKS + 1, 8, 256, 64),
        Error::LimitReached,
        "init_qseg beyond the kernel's limits",
    )?;
    e(msg::send(msg::Link(999), &[0; 4]), Error::BadLink, "send on a bad link")?;
    e(msg::close_link(msg::Link(40)), Error::BadLink, "close an unopened link")?;
    e(msg::test(Queue(7)).map(|_| ()), Error::BadQueue, "test an unopened queue")?;
    e(msg::receive_data(Queue(99), &mut [0; 4]).map(|_| ()), Error::BadQueue, "receive on a bad queue")?;
    e(msg::open_queue(0, true).map(|_| ()), Error::InvalidArgument, "zero-sized queue")?;
    e(msg::open_queue(100_000, true).map(|_| ()), Error::LimitReached, "queue beyond the message quota")?;
    e(msg::open_link(Pid(12345), MAIN_QUEUE).map(|_| ()), Error::NoSuchProcess, "link to nobody")?;
    e(msg::open_link(me, Queue(5)).map(|_| ()), Error::BadQueue, "link to an unopened queue")?;
    // A link to ourselves: calls to oneself are refused (never answered).
    let q = msg::open_queue(4, false).map_err(|e| e.name())?;
    let own = msg::open_link(me, q).map_err(|e| e.name())?;
    e(msg::call(own, &[0; 4], &[], &mut []).map(|_| ()), Error::InvalidArgument, "call to oneself")?;
    e(
        msg::send_data(own, &[0; 4], &[0u8; MAX_DATA + 1][..]).map(|_| ()),
        Error::InvalidArgument,
        "data over a page",
    )?;
    let bad = unsafe_slice(0xdead_0000, 64);
    e(msg::send_data(own, &[0; 4], bad), Error::BadAddress, "data from a bad address")?;
    // A message with data that does not fit stays queued.
    msg::send_data(own, &[9, 0, 0, 0], &[1u8; 100]).map_err(|e| e.name())?;
    let mut small = [0u8; 10];
    let r = msg::receive_data(q, &mut small);
    check(r == Err(Error::BufferTooSmall), "receive into a small buffer")?;
    check(msg::test(q) == Ok(1), "the message stayed queued")?;
    let bad_buf = unsafe_slice_mut(0xdead_0000, 200);
    check(msg::receive_data(q, bad_buf).map(|_| ()) == Err(Error::BadAddress), "receive into a bad buffer")?;
    let mut big = [0u8; 200];
    let r = msg::receive_data(q, &mut big).map_err(|e| e.name())?;
    check(
        r.len == 100 && r.kind == Kind::Data && r.message[0] == 9 && big[..100].iter().all(|&b| b == 1),
        "data arrives",
    )?;
    // A full queue refuses and loses nothing.
    for i in 0..4 {
        msg::send(own, &[i, 0, 0, 0]).map_err(|e| e.name())?;
    }
    e(msg::send(own, &[4, 0, 0, 0]), Error::QueueFull, "send to a full queue")?;
    for i in 0..4 {
        let r = msg::try_receive(q, &mut []).map_err(|e| e.name())?;
        check(r.is_some_and(|r| r.message[0] == i), "queued messages survive a full queue")?;
    }
    check(msg::try_receive(q, &mut []) == Ok(None), "empty queue does not block with NONBLOCKING")?;
    // Forged reply handles.
    e(msg::reply(msg::ReplyHandle(0), &[0; 4], &[]), Error::BadReplyHandle, "reply with a forged handle")?;
    e(
        msg::reply(msg::ReplyHandle(7 | 5 << 32), &[0; 4], &[]),
        Error::BadReplyHandle,
        "reply with a made-up handle",
    )?;
    let r = msg::raw(abi::Call::ReceiveData as u64, [q.0 as u64, 0, 0, 0xff, 0, 0], [0; 4]);
    check(abi::decode_return(r.rax) == Err(Error::InvalidArgument), "unknown receive flags")?;
    msg::close_link(own).map_err(|e| e.name())?;
    e(msg::send(own, &[0; 4]), Error::BadLink, "send on a closed link")?;
    // A link to a queue that was closed does not reach a new queue that
    // got the same number.
    let stale = msg::open_link(me, q).map_err(|e| e.name())?;
    msg::close_queue(q).map_err(|e| e.name())?;
    e(msg::send(stale, &[0; 4]), Error::BadQueue, "send to a closed queue")?;
    let reopened = msg::open_queue(4, false).map_err(|e| e.name())?;
    check(reopened == q, "the queue number is reused")?;
    e(msg::send(stale, &[0; 4]), Error::BadQueue, "send through a link to the old queue")?;
    msg::close_link(stale).map_err(|e| e.name())?;
    msg::close_queue(q).map_err(|e| e.name())?;
    e(msg::close_queue(q), Error::BadQueue, "close a closed queue")
}

/// A slice at an address this process does not map, to test that the
/// kernel refuses it. Never read or written by this program.
fn unsafe_slice(addr: u64, len: usize) -> &'static [u8] {
    // SAFETY: the slice is only passed to the kernel, which checks it; this
    // program never dereferences it.
    unsafe { core::slice::from_raw_parts(addr as *const u8, len) }
}

fn unsafe_slice_mut(addr: u64, len: usize) -> &'static mut [u8] {
    // SAFETY: as in unsafe_slice.
    unsafe { core::slice::from_raw_parts_mut(addr as *mut u8, len) }
}

pub fn private_queues() -> TestResult {
    let private = msg::open_queue(2, false).map_err(|e| e.name())?;
    let extra = format!("{}", private.0);
    let (pid, link) = start_tmsg("try-link-after-go", &extra, abi::PRIORITY_INHERIT)?;
    msg::send(link, &[0; 4]).map_err(|e| e.name())?;
    expect_exit(pid, Error::PermissionDenied as u32)?;
    let (pid, link) = start_tmsg("try-link-after-go", &extra, abi::PRIORITY_INHERIT)?;
    msg::allow_sender(private, pid).map_err(|e| e.name())?;
    msg::send(link, &[0; 4]).map_err(|e| e.name())?;
    expect_exit(pid, 0)?;
    msg::close_queue(private).map_err(|e| e.name().into())
}

pub fn arm_and_wait() -> TestResult {
    let me = sys::getpid();
    let a = msg::open_queue(2, false).map_err(|e| e.name())?;
    let b = msg::open_queue(2, false).map_err(|e| e.name())?;
    check(msg::wait_armed() == Err(Error::NothingArmed), "wait with nothing armed")?;
    let to_b = msg::open_link(me, b).map_err(|e| e.name())?;
    msg::arm(a, true).map_err(|e| e.name())?;
    msg::arm(b, true).map_err(|e| e.name())?;
    msg::send(to_b, &[5, 0, 0, 0]).map_err(|e| e.name())?;
    check(msg::wait_armed() == Ok(b), "wait names the queue with a message")?;
    check(msg::test(a) == Ok(0) && msg::test(b) == Ok(1), "test counts per queue")?;
    let r = msg::receive_data(b, &mut []).map_err(|e| e.name())?;
    check(r.message[0] == 5 && r.sender == me, "the armed message")?;
    msg::close_link(to_b).map_err(|e| e.name())?;
    msg::close_queue(a).map_err(|e| e.name())?;
    msg::close_queue(b).map_err(|e| e.name().into())
}

pub fn dead_peers() -> TestResult {
    // Plain messages of a sender that has ended stay deliverable (they
    // were sent); sends and calls to it fail.
    let (pid, link) = start_tmsg("send-and-die", "5", abi::PRIORITY_INHERIT)?;
    msg::send(link, &[0; 4]).map_err(|e| e.name())?;
    expect_exit(pid, 0)?;
    for i in 0..5 {
        let r = msg::receive_data(MAIN_QUEUE, &mut []).map_err(|e| e.name())?;
        check(r.sender == pid && r.message[0] == i, "a dead sender's message")?;
    }
    check(msg::send(link, &[0; 4]) == Err(Error::DeadPeer), "send to a dead process")?;
    check(
        msg::call(link, &[0; 4], &[], &mut []).map(|_| ()) == Err(Error::DeadPeer),
        "call to a dead process",
    )?;
    msg::close_link(link).map_err(|e| e.name())?;
    // A server that ends while a call waits on it answers with DeadPeer.
    let (pid, link) = start_tmsg("die-on-call", "", abi::PRIORITY_INHERIT)?;
    let r = msg::call(link, &[1, 2, 3, 4], &[], &mut []);
    check(r.map(|_| ()) == Err(Error::DeadPeer), "caller of a server that died")?;
    expect_exit(pid, 0)?;
    msg::close_link(link).map_err(|e| e.name())?;
    // A call whose caller is killed before it is received is dropped.
    let (pid, link) = start_tmsg("call-runner", "", abi::PRIORITY_INHERIT)?;
    while msg::test(MAIN_QUEUE).map_err(|e| e.name())? == 0 {
        sys::sleep_ns(1_000_000);
    }
    sys::kill(pid).map_err(|e| e.name())?;
    let (_, status) = sys::wait(Some(pid)).map_err(|e| e.name())?;
    check(status == ExitStatus::Killed, "the caller was killed")?;
    check(msg::test(MAIN_QUEUE) == Ok(0), "the dead caller's call was dropped")?;
    msg::close_link(link).map_err(|e| e.name().into())
}

/// `forward_wait`: a server passes a call it holds on to another, which
/// answers the caller directly and sees the forwarder as the sender; the
/// handle is used up (a second forward or a reply of it is
/// `BadReplyHandle`). Every refused forward (a handle never given or
/// `NO_REPLY`, too much data, a link to the forwarder itself or to the
/// caller, a dead server, a dead caller) receives nothing, and leaves the
/// call with the forwarder, who can still answer it; a forward with
/// `NO_RECEIVE` receives nothing either; a server that dies holding a
/// forwarded call fails the caller with `DeadPeer`.
pub fn forward_passes_a_call_on() -> TestResult {
    let e = |r: Result<msg::Received, Error>, want: Error, what: &str| -> TestResult {
        match r {
            Err(got) if got == want => Ok(()),
            other => Err(format!("{what}: got {:?}, expected {want:?}", other.map(|r| r.message))),
        }
    };
    // A queue of the runner's own, holding one message, for the receive
    // half: a forward that succeeded takes it at once, a refused one
    // leaves it there.
    let spare = msg::open_queue(4, false).map_err(|e| e.name())?;
    let me = sys::getpid();
    let to_self = msg::open_link(me, spare).map_err(|e| e.name())?;
    msg::send(to_self, &[5, 0, 0, 0]).map_err(|e| e.name())?;
    let mut buf = [0u8; 16];
    let take_call = || -> Result<msg::Received, String> {
        let mut b = [0u8; 16];
        let r = msg::receive_data(MAIN_QUEUE, &mut b).map_err(|e| e.name())?;
        if r.kind != Kind::Call || r.message[0] != 7 {
            return Err(format!("expected the caller's call, got {:?} {:?}", r.kind, r.message));
        }
        Ok(r)
    };

    // Passed on and answered by the target.
    let (target, target_link) = start_tmsg("forward-target", "", abi::PRIORITY_INHERIT)?;
    let (caller, caller_link) = start_tmsg("call-expect", "", abi::PRIORITY_INHERIT)?;
    let call = take_call()?;
    let h = call.reply;
    e(
        msg::forward_wait(ReplyHandle(h.0 ^ (1 << 40)), target_link, &[1, 2, 3, 0], b"abc", spare, &mut buf),
        Error::BadReplyHandle,
        "a handle never given",
    )?;
    e(
        msg::forward_wait(
            ReplyHandle(abi::msg::NO_REPLY),
            target_link,
            &[1, 2, 3, 0],
            b"abc",
            spare,
            &mut buf,
        ),
        Error::BadReplyHandle,
        "NO_REPLY",
    )?;
    let too_long = [0u8; MAX_DATA + 1];
    e(
        msg::forward_wait(h, target_link, &[1, 2, 3, 0], &too_long, spare, &mut buf),
        Error::InvalidArgument,
        "more than a message's data",
    )?;
    e(
        msg::forward_wait(h, to_self, &[1, 2, 3, 0], b"abc", spare, &mut buf),
        Error::InvalidArgument,
        "a link to the forwarder itself",
    )?;
    e(
        msg::forward_wait(h, caller_link, &[1, 2, 3, 0], b"abc", spare, &mut buf),
        Error::InvalidArgument,
        "a link to the caller",
    )?;
    check(msg::test(spare) == Ok(1), "a refused forward receives nothing")?;
    let r =
        msg::forward_wait(h, target_link, &[1, 2, 3, 0], b"abc", spare, &mut buf).map_err(|e| e.name())?;
    check(r.message[0] == 5, "the forward then receives, as reply_wait")?;
    expect_exit(caller, 0)?; // the target's answer: [me, 1, 2, 3] and "cba"
    expect_exit(target, 0)?;
    check(
        msg::reply(h, &[77, 0, 0, 0], &[]) == Err(Error::BadReplyHandle),
        "the handle is used up by the forward",
    )?;
    msg::send(to_self, &[5, 0, 0, 0]).map_err(|e| e.name())?;
    e(
        msg::forward_wait(h, target_link, &[1, 2, 3, 0], b"abc", spare, &mut buf),
        Error::BadReplyHandle,
        "a call passed on twice",
    )?;
    msg::close_link(target_link).map_err(|e| e.name())?;
    msg::close_link(caller_link).map_err(|e| e.name())?;

    // A dead target: refused, and the forwarder still answers the caller.
    let (target, target_link) = start_tmsg("receive-forever", "", abi::PRIORITY_INHERIT)?;
    sys::kill(target).map_err(|e| e.name())?;
    sys::wait(Some(target)).map_err(|e| e.name())?;
    let (caller, caller_link) = start_tmsg("call-expect", "", abi::PRIORITY_INHERIT)?;
    let call = take_call()?;
    e(
        msg::forward_wait(call.reply, target_link, &[1, 2, 3, 0], b"abc", spare, &mut buf),
        Error::DeadPeer,
        "a dead target",
    )?;
    check(msg::test(spare) == Ok(1), "a forward to a dead target receives nothing")?;
    msg::reply(call.reply, &[77, 0, 0, 0], &[]).map_err(|e| e.name())?;
    expect_exit(caller, 30)?;
    msg::close_link(target_link).map_err(|e| e.name())?;
    msg::close_link(caller_link).map_err(|e| e.name())?;

    // A target that takes the call and dies: the caller gets DeadPeer.
    // (Forwarded without a receive: `NO_RECEIVE`.)
    let (target, target_link) = start_tmsg("die-on-call", "", abi::PRIORITY_INHERIT)?;
    let (caller, caller_link) = start_tmsg("call-expect", "", abi::PRIORITY_INHERIT)?;
    let call = take_call()?;
    msg::forward(call.reply, target_link, &[1, 2, 3, 0], b"abc").map_err(|e| e.name())?;
    check(msg::test(spare) == Ok(1), "a forward with NO_RECEIVE receives nothing")?;
    expect_exit(target, 0)?;
    expect_exit(caller, 20)?;
    msg::close_link(caller_link).map_err(|e| e.name())?;

    // A dead caller: refused.
    let (caller, caller_link) = start_tmsg("call-runner", "", abi::PRIORITY_INHERIT)?;
    let call = take_call()?;
    sys::kill(caller).map_err(|e| e.name())?;
    sys::wait(Some(caller)).map_err(|e| e.name())?;
    let (target, target_link2) = start_tmsg("forward-target", "", abi::PRIORITY_INHERIT)?;
    let dead = msg::forward_wait(call.reply, target_link2, &[1, 2, 3, 0], b"abc", spare, &mut buf);
    check(
        matches!(dead, Err(Error::DeadPeer | Error::BadReplyHandle)),
        "a forward of a dead caller's call is refused",
    )?;
    check(msg::test(spare) == Ok(1), "a forward of a dead caller's call receives nothing")?;
    sys::kill(target).map_err(|e| e.name())?;
    sys::wait(Some(target)).map_err(|e| e.name())?;
    for l in [target_link, target_link2, caller_link, to_self] {
        msg::close_link(l).map_err(|e| e.name())?;
    }
    msg::close_queue(spare).map_err(|e| e.name().into())
}

pub fn copy_on_write() -> TestResult {
    let mut page = Page::zeroed(); // page-aligned, on the stack
    let loaned_before = counter(abi::Counter::PagesLoaned);
    let (pid, link) = start_tmsg("lend-page", "", abi::PRIORITY_INHERIT)?;
    msg::send(link, &[0; 4]).map_err(|e| e.name())?;
    expect_exit(pid, 0)?;
    let r = msg::receive_data(MAIN_QUEUE, &mut page.0).map_err(|e| e.name())?;
    check(r.message[0] == 1 && r.len == page.0.len(), "the lent page arrives")?;
    check(page.0.iter().all(|&b| b == 0xaa), "the receiver sees the page as it was when sent")?;
    check(counter(abi::Counter::PagesLoaned) > loaned_before, "the page moved by mapping, not copying")?;
    let cow_before = counter(abi::Counter::CowCopies);
    page.0[0] = 1;
    check(page.0[0] == 1 && page.0[1] == 0xaa, "writing to the received page")?;
    // The counter only grows, so `>=` could not fail: the one write to the
    // lent page is exactly one copy-on-write break (nothing else runs in
    // the test image meanwhile).
    let cow_after = counter(abi::Counter::CowCopies);
    check(
        cow_after == cow_before + 1,
        &format!("one copy-on-write break for one write (counter {cow_before} -> {cow_after})"),
    )?;
    let mut small = [0u8; 100];
    let r = msg::receive_data(MAIN_QUEUE, &mut small).map_err(|e| e.name())?;
    check(r.message[0] == 2 && r.len == 100 && small.iter().all(|&b| b == 0xbb), "the later copy")?;
    msg::close_link(link).map_err(|e| e.name().into())
}

/// A page this process holds copy-on-write only since a loan (the runner
/// never forks, so before it nothing here was copy-on-write), written by
/// the kernel (a queued message received into it, `UserSlice::write`):
/// the page is made this process's own first, so the lender's page keeps
/// what was lent. A kernel that skipped the copy-on-write break would
/// write into the shared frame and the lender would exit with 8.
pub fn kernel_write_breaks_a_lent_page() -> TestResult {
    let mut page = Page::zeroed(); // page-aligned, on the stack
    let (pid, link) = start_tmsg("lend-page-and-check", "", abi::PRIORITY_INHERIT)?;
    msg::send(link, &[0; 4]).map_err(|e| e.name())?;
    let r = msg::receive_data(MAIN_QUEUE, &mut page.0).map_err(|e| e.name())?;
    check(r.message[0] == 1 && r.len == page.0.len(), "the lent page arrives")?;
    check(page.0.iter().all(|&b| b == 0xaa), "the lent page holds what was sent")?;
    // Queued on a queue of our own, so that the receive below copies it
    // out of the message's frame into the lent page.
    let q = msg::open_queue(1, false).map_err(|e| e.name())?;
    let self_link = msg::open_link(sys::getpid(), q).map_err(|e| e.name())?;
    msg::send_data(self_link, &[3, 0, 0, 0], &[0xcc; 100]).map_err(|e| e.name())?;
    let r = msg::receive_data(q, &mut page.0[..100]).map_err(|e| e.name())?;
    check(r.message[0] == 3 && r.len == 100, "the queued message arrives")?;
    check(page.0[..100].iter().all(|&b| b == 0xcc), "the kernel wrote the message into the lent page")?;
    check(page.0[100..].iter().all(|&b| b == 0xaa), "the rest of the page is as lent")?;
    msg::send(link, &[0; 4]).map_err(|e| e.name())?;
    match sys::wait(Some(pid)).map_err(|e| e.name())? {
        (_, ExitStatus::Exited(0)) => {}
        (_, ExitStatus::Exited(8)) => return Err("the kernel's write reached the lender's page".into()),
        (_, other) => return Err(format!("the lender ended with {other:?}")),
    }
    msg::close_link(self_link).map_err(|e| e.name())?;
    msg::close_queue(q).map_err(|e| e.name())?;
    msg::close_link(link).map_err(|e| e.name().into())
}

pub fn kill_blocked_receiver() -> TestResult {
    let (pid, link) = start_tmsg("receive-forever", "", abi::PRIORITY_INHERIT)?;
    sys::sleep_ns(10_000_000);
    sys::kill(pid).map_err(|e| e.name())?;
    let (_, status) = sys::wait(Some(pid)).map_err(|e| e.name())?;
    check(status == ExitStatus::Killed, "killed while receiving")?;
    check(msg::send(link, &[0; 4]) == Err(Error::DeadPeer), "its queue is gone")?;
    msg::close_link(link).map_err(|e| e.name().into())
}

/// Regression: close_queue dropped data messages without giving their
/// pages back to the quota, so a process ran out after enough closes.
pub fn close_queue_returns_quota() -> TestResult {
    let me = sys::getpid();
    for round in 0..100 {
        let q = msg::open_queue(1, false).map_err(|e| e.name())?;
        let link = msg::open_link(me, q).map_err(|e| e.name())?;
        msg::send_data(link, &[round, 0, 0, 0], &[7u8; 10])
            .map_err(|e| format!("round {round}: send_data: {}", e.name()))?;
        msg::close_link(link).map_err(|e| e.name())?;
        msg::close_queue(q).map_err(|e| e.name())?;
    }
    Ok(())
}

/// Regression: a receiver blocked with a bad buffer stayed blocked when a
/// copied message could not be placed there. Whether the message arrives
/// before or after we block, we must get BadAddress and the message must
/// stay queued.
pub fn bad_receive_buffer_reported() -> TestResult {
    let mut page = Page::zeroed();
    let (pid, link) = start_tmsg("lend-page", "", abi::PRIORITY_INHERIT)?;
    msg::send(link, &[0; 4]).map_err(|e| e.name())?;
    msg::receive_data(MAIN_QUEUE, &mut page.0).map_err(|e| e.name())?;
    let bad = unsafe_slice_mut(0xdead_0000, 200);
    check(msg::receive_data(MAIN_QUEUE, bad).map(|_| ()) == Err(Error::BadAddress), "bad buffer reported")?;
    let mut good = [0u8; 200];
    let r = msg::receive_data(MAIN_QUEUE, &mut good).map_err(|e| e.name())?;
    check(r.message[0] == 2 && r.len == 100, "the message stayed queued")?;
    expect_exit(pid, 0)?;
    msg::close_link(link).map_err(|e| e.name().into())
}

/// Regression: an empty buffer names no memory, whatever its address (an
/// empty Rust slice's pointer is dangling). A kernel that looked at the
/// page under an empty range refused `receive_data(q, &mut [])` with
/// BadAddress and the whole system hung at boot.
pub fn empty_buffers_need_no_memory() -> TestResult {
    const UNMAPPED: u64 = 0xdead_0123;
    let me = sys::getpid();
    let q = msg::open_queue(2, false).map_err(|e| e.name())?;
    let link = msg::open_link(me, q).map_err(|e| e.name())?;
    let send = msg::raw(abi::Call::SendData as u64, [link.0 as u64, UNMAPPED, 0, 0, 0, 0], [1, 2, 3, 4]);
    check(send.rax == 0, "send_data of 0 bytes from an unmapped address")?;
    let receive = msg::raw(abi::Call::ReceiveData as u64, [q.0 as u64, UNMAPPED, 0, 0, 0, 0], [0; 4]);
    check(
        receive.rax == 0 && receive.words == [1, 2, 3, 4],
        "receive_data into 0 bytes at an unmapped address",
    )?;
    let write = sys::raw(abi::Call::DebugWrite as u64, UNMAPPED, 0, 0, 0, 0);
    check(write.0 == 0, "debug_write of 0 bytes from an unmapped address")?;
    msg::close_link(link).map_err(|e| e.name())?;
    msg::close_queue(q).map_err(|e| e.name().into())
}

/// Byte `i` of tchild's lent send buffer (`lease-call`).
fn lease_pattern(i: usize) -> u8 {
    (i * 7 + i / 251) as u8
}

/// Leases: a call lends its send buffer to read and its receive buffer to
/// write, of any length, until the reply; at any offset, in pieces, one
/// byte at a time or in bulk; out of bounds, bad local memory, bad flags,
/// after the reply and after the caller's death, an error names it.
pub fn leases_lend_call_buffers() -> TestResult {
    let me = sys::getpid();
    let e = |r: Result<usize, Error>, want: Error, what: &str| -> TestResult {
        if r == Err(want) { Ok(()) } else { Err(format!("{what}: got {r:?}, expected {want:?}")) }
    };
    for (send_len, recv_len) in [(10_000usize, 20_000usize), (100, 3 * MAX_DATA + 5), (0, 64 * 1024)] {
        let child = sys::spawn("tchild", &format!("lease-call {} 0 {send_len} {recv_len}", me.0))
            .map_err(|e| e.name())?;
        let mut first = alloc::vec![0u8; MAX_DATA];
        let r = msg::receive_data(MAIN_QUEUE, &mut first).map_err(|e| e.name())?;
        check(r.kind == Kind::Call && r.sender == child, "the lending call arrives")?;
        let sent_with_message = if send_len <= MAX_DATA { send_len } else { 0 };
        check(r.len == sent_with_message, "only a send buffer that fits a message travels with it")?;
        let h = r.reply;
        // The whole send buffer, in three uneven pieces.
        let mut got = alloc::vec![0u8; send_len];
        let cuts = [0, send_len / 3, (send_len / 3 + 1).min(send_len), send_len];
        for w in cuts.windows(2) {
            let n = msg::lease_read(h, w[0] as u64, &mut got[w[0]..w[1]], 0).map_err(|e| e.name())?;
            check(n == w[1] - w[0], "a lease read moves what it was asked")?;
        }
        check(
            got.iter().enumerate().all(|(i, &b)| b == lease_pattern(i)),
            "the send buffer reads back whole",
        )?;
        let mut one = [0u8; 11];
        e(msg::lease_read(h, send_len as u64, &mut one, 0), Error::InvalidArgument, "a read past the lease")?;
        e(msg::lease_read(h, u64::MAX, &mut one, 0), Error::InvalidArgument, "an offset that wraps")?;
        e(msg::lease_read(h, 0, &mut one[..0], 7), Error::InvalidArgument, "unknown flags")?;
        let raw = msg::raw(abi::Call::LeaseWrite as u64, [h.0, 0, 0x10, 1, 0, 0], [0; 4]).rax;
        e(
            abi::decode_return(raw).map(|n| n as usize),
            Error::BadAddress,
            "a lease write from unmapped memory",
        )?;
        // Fill the receive buffer but its last three bytes, the first half
        // one byte at a time (the PDDRIVER way), the rest in bulk.
        let written = recv_len - 3;
        let data: Vec<u8> = (0..written).map(|i| !lease_pattern(i)).collect();
        let half = written / 2;
        msg::lease_write(h, 0, &data[..half], abi::lease::BYTE_AT_A_TIME).map_err(|e| e.name())?;
        msg::lease_write(h, half as u64, &data[half..], 0).map_err(|e| e.name())?;
        e(
            msg::lease_write(h, recv_len as u64 - 2, &data[..3], 0),
            Error::InvalidArgument,
            "a write past the lease",
        )?;
        msg::reply(h, &[written as u64, 0, 0, 0], &[]).map_err(|e| e.name())?;
        e(msg::lease_read(h, 0, &mut one[..1], 0), Error::BadReplyHandle, "a lease after the reply")?;
        let (_, status) = sys::wait(Some(child)).map_err(|e| e.name())?;
        check(status == ExitStatus::Exited(0), "the caller finds in its buffer what the server wrote")?;
    }
    // A caller killed mid-call takes its leases with it.
    let child = sys::spawn("tchild", &format!("lease-call {} 0 8192 8192", me.0)).map_err(|e| e.name())?;
    let r = msg::receive_data(MAIN_QUEUE, &mut []).map_err(|e| e.name())?;
    sys::kill(child).map_err(|e| e.name())?;
    sys::wait(Some(child)).map_err(|e| e.name())?;
    let mut one = [0u8; 1];
    let after_death = msg::lease_read(r.reply, 0, &mut one, 0);
    check(
        matches!(after_death, Err(Error::DeadPeer | Error::BadReplyHandle)),
        "a lease of a killed caller is refused",
    )?;
    // A call may not lend more than the limit.
    let big = abi::lease::MAX_LEASE_BYTES + 1;
    let link = msg::open_link(me, MAIN_QUEUE).map_err(|e| e.name())?;
    let raw = msg::raw(abi::Call::Call as u64, [link.0 as u64, 0, 0, 0x1000, big, 0], [0; 4]).rax;
    msg::close_link(link).map_err(|e| e.name())?;
    check(abi::decode_return(raw) == Err(Error::InvalidArgument), "a lease over the limit is refused")
}

/// Leases in segments (`abi::lease::SEGMENTS`, a disk cache's blocks):
/// the lent buffer read into several buffers and filled from several, in
/// one call each; too many segments, a list or a segment in unmapped
/// memory, segments running past the lease and another flag with it are
/// refused, and a refused call moves nothing.
pub fn leases_in_segments() -> TestResult {
    let me = sys::getpid();
    let e = |r: Result<usize, Error>, want: Error, what: &str| -> TestResult {
        if r == Err(want) { Ok(()) } else { Err(format!("{what}: got {r:?}, expected {want:?}")) }
    };
    let (send_len, recv_len) = (10_000usize, 20_000usize);
    let child = sys::spawn("tchild", &format!("lease-call {} 0 {send_len} {recv_len}", me.0))
        .map_err(|e| e.name())?;
    let r = msg::receive_data(MAIN_QUEUE, &mut []).map_err(|e| e.name())?;
    check(r.kind == Kind::Call && r.sender == child, "the lending call arrives")?;
    let h = r.reply;
    // The send buffer into three uneven buffers, in one call.
    let (mut a, mut b, mut c) = (alloc::vec![0u8; 1024], alloc::vec![0u8; 3333], alloc::vec![0u8; 5643]);
    let n =
        msg::lease_read_segments(h, 0, &mut [&mut a[..], &mut b[..], &mut c[..]]).map_err(|e| e.name())?;
    check(n == send_len, "a segmented lease read moves every segment's bytes")?;
    let got: Vec<u8> = [a, b, c].concat();
    check(
        got.iter().enumerate().all(|(i, &x)| x == lease_pattern(i)),
        "the segments hold the send buffer in order",
    )?;
    // The receive buffer but its last three bytes, from 1 KiB blocks and a tail.
    let written = recv_len - 3;
    let data: Vec<u8> = (0..written).map(|i| !lease_pattern(i)).collect();
    let segments: Vec<&[u8]> = data.chunks(1024).collect();
    let n = msg::lease_write_segments(h, 0, &segments).map_err(|e| e.name())?;
    check(n == written, "a segmented lease write moves every segment's bytes")?;
    // Refused, each with zeros that would show in the caller's buffer.
    let zeros = alloc::vec![0u8; 2048];
    let many: Vec<&[u8]> = (0..abi::lease::MAX_SEGMENTS + 1).map(|_| &zeros[..1]).collect();
    e(msg::lease_write_segments(h, 0, &many), Error::InvalidArgument, "more segments than MAX_SEGMENTS")?;
    let past = [&zeros[..100], &data[..]];
    e(msg::lease_write_segments(h, 0, &past), Error::InvalidArgument, "segments past the lease")?;
    let mut list = [zeros.as_ptr() as u64, 100, 0x10, 100];
    let raw = |list: u64, count: u64, flags: u64| {
        let args = [h.0, 0, list, count, flags, 0];
        abi::decode_return(msg::raw(abi::Call::LeaseWrite as u64, args, [0; 4]).rax).map(|n| n as usize)
    };
    e(raw(list.as_ptr() as u64, 2, abi::lease::SEGMENTS), Error::BadAddress, "a segment in unmapped memory")?;
    e(raw(0x10, 1, abi::lease::SEGMENTS), Error::BadAddress, "a list in unmapped memory")?;
    list[3] = u64::MAX;
    e(raw(list.as_ptr() as u64, 2, abi::lease::SEGMENTS), Error::BadAddress, "a segment that wraps")?;
    let flags = abi::lease::SEGMENTS | abi::lease::MAY_LOAN;
    e(raw(list.as_ptr() as u64, 1, flags), Error::InvalidArgument, "segments with another flag")?;
    let mut one = [0u8; 1];
    e(
        msg::lease_read_segments(h, send_len as u64, &mut [&mut one[..]]),
        Error::InvalidArgument,
        "a read past the lease",
    )?;
    msg::reply(h, &[written as u64, 0, 0, 0], &[]).map_err(|e| e.name())?;
    let (_, status) = sys::wait(Some(child)).map_err(|e| e.name())?;
    check(
        status == ExitStatus::Exited(0),
        "the caller's buffer holds the segments' bytes and nothing refused",
    )
}

/// `lease_copy`: one caller's send buffer straight into another's receive
/// buffer, in bulk and with whole pages lent copy-on-write (`MAY_LOAN`);
/// bad offsets, one caller's own buffers and bad flags are refused.
pub fn leases_between_two_callers() -> TestResult {
    let me = sys::getpid();
    let len = 64 * 1024usize;
    let writer =
        sys::spawn("tchild", &format!("lease-call {} 0 {len} 0 same", me.0)).map_err(|e| e.name())?;
    let reader =
        sys::spawn("tchild", &format!("lease-call {} 0 0 {len} same", me.0)).map_err(|e| e.name())?;
    let mut scratch = alloc::vec![0u8; MAX_DATA];
    let a = msg::receive_data(MAIN_QUEUE, &mut scratch).map_err(|e| e.name())?;
    let b = msg::receive_data(MAIN_QUEUE, &mut scratch).map_err(|e| e.name())?;
    let (w, r) = if a.sender == writer { (a.reply, b.reply) } else { (b.reply, a.reply) };
    let e = |got: Result<usize, Error>, want: Error, what: &str| -> TestResult {
        if got == Err(want) { Ok(()) } else { Err(format!("{what}: got {got:?}, expected {want:?}")) }
    };
    let loaned = || {
        let mut c = [0u64; abi::COUNTER_COUNT];
        sys::counters(&mut c).map(|_| c[abi::Counter::PagesLoaned as usize])
    };
    let before = loaned().map_err(|e| e.name())?;
    e(msg::lease_copy(w, 0, w, 0, 1, 0), Error::InvalidArgument, "one caller's own buffers")?;
    e(msg::lease_copy(r, 0, r, 0, 1, 0), Error::InvalidArgument, "a reader's empty send buffer")?;
    e(msg::lease_copy(w, len as u64 - 1, r, 0, 2, 0), Error::InvalidArgument, "past the source")?;
    e(msg::lease_copy(w, 0, r, len as u64 - 1, 2, 0), Error::InvalidArgument, "past the destination")?;
    let both = abi::lease::BYTE_AT_A_TIME | abi::lease::MAY_LOAN;
    e(msg::lease_copy(w, 0, r, 0, 1, both), Error::InvalidArgument, "two ways at once")?;
    e(msg::lease_copy(ReplyHandle(0x7777_0003), 0, r, 0, 1, 0), Error::BadReplyHandle, "a forged handle")?;
    msg::lease_copy(w, 0, r, 0, 100, 0).map_err(|e| format!("bulk: {}", e.name()))?;
    msg::lease_copy(w, 100, r, 100, len as u64 - 100, abi::lease::MAY_LOAN)
        .map_err(|e| format!("lent: {}", e.name()))?;
    let lent = loaned().map_err(|e| e.name())? - before;
    check(lent >= 14, "whole pages that line up are lent, not copied")?;
    msg::reply(r, &[len as u64, 0, 0, 0], &[]).map_err(|e| e.name())?;
    msg::reply(w, &[0; 4], &[]).map_err(|e| e.name())?;
    for child in [writer, reader] {
        let (_, status) = sys::wait(Some(child)).map_err(|e| e.name())?;
        check(status == ExitStatus::Exited(0), "both callers find their buffers as they should be")?;
    }
    Ok(())
}

/// A server runs at a caller's priority only while it works on that call:
/// a call it keeps for later lends it nothing once it takes another
/// message. Regression: a RAM disk driver holding lock waiters' calls
/// answered their wake-up message at the waiters' low priority.
pub fn a_kept_call_lends_no_priority() -> TestResult {
    let me = sys::getpid();
    let base = sys::info(InfoKey::Priority);
    let low = base - 2;
    let caller = sys::spawn_with_priority("tchild", &format!("lease-call {} 0 0 0", me.0), low)
        .map_err(|e| e.name())?;
    let call = msg::receive_data(MAIN_QUEUE, &mut []).map_err(|e| e.name())?;
    check(call.kind == Kind::Call, "the low-priority call arrives")?;
    check(sys::info(InfoKey::Priority) == low, "the runner serves the call at its caller's priority")?;
    // Keep the call; take a plain message (tmsg's hello).
    let (sender, link) = start_tmsg("receive-forever", "", base)?;
    check(sys::info(InfoKey::Priority) == base, "a plain message is served at the runner's own priority")?;
    msg::reply(call.reply, &[0; 4], &[]).map_err(|e| e.name())?;
    let (_, status) = sys::wait(Some(caller)).map_err(|e| e.name())?;
    check(status == ExitStatus::Exited(0), "the kept call is answered")?;
    msg::close_link(link).map_err(|e| e.name())?;
    sys::kill(sender).map_err(|e| e.name())?;
    sys::wait(Some(sender)).map_err(|e| e.name())?;
    Ok(())
}

/// `page_owners` (call 90): a page of ours has one owner; lent in a
/// message (a page-aligned page sent to our own queue) it has two until
/// the message is taken; bad ranges are refused. The network server uses
/// it before it reuses a receive ring it lent (docs/network.md).
pub fn page_owners_counts_every_sharer() -> TestResult {
    let ps = abi::layout::PAGE_SIZE;
    let mut page = Page::zeroed();
    page.0[0] = 1;
    let at = page.0.as_ptr() as u64;
    check(sys::page_owners(at, ps) == Ok(1), "a private page has one owner")?;
    let me = sys::getpid();
    let link = msg::open_link(me, MAIN_QUEUE).map_err(|e| format!("link to ourselves: {}", e.name()))?;
    msg::send_data(link, &[7, 0, 0, 0], &page.0).map_err(|e| e.name())?;
    let lent = sys::page_owners(at, ps);
    check(lent == Ok(2), &format!("lent in a message, the page has two owners (got {lent:?})"))?;
    // Taken into a buffer that is not page-aligned: copied, so the
    // message's owner goes with it.
    let mut copy = alloc::vec![0u8; ps as usize + 1];
    let r = msg::receive_data(MAIN_QUEUE, &mut copy[1..]).map_err(|e| e.name())?;
    check(r.message[0] == 7 && copy[1] == 1, "the lent page arrives")?;
    let back = sys::page_owners(at, ps);
    check(back == Ok(1), &format!("taken, the message gives its owner back (got {back:?})"))?;
    check(sys::page_owners(at + 1, ps) == Err(Error::InvalidArgument), "an unaligned address")?;
    check(sys::page_owners(at, 0) == Err(Error::InvalidArgument), "an empty range")?;
    check(sys::page_owners(at, ps + 1) == Err(Error::InvalidArgument), "a length not in pages")?;
    check(sys::page_owners(abi::layout::PAGE_SIZE, ps) == Err(Error::BadAddress), "an unmapped page")?;
    check(
        sys::page_owners(0xffff_ffff_8010_0000, ps) == Err(Error::BadAddress),
        "a kernel address is not the caller's",
    )?;
    msg::close_link(link).map_err(|e| e.name().into())
}
