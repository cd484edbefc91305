//! testrunner: boots as init in the test image (`init=testrunner`), runs
//! every in-QEMU system test, prints one line per test over the serial line
//! (`abi::test_protocol`), and powers off with status 0 only when all
//! passed. `cargo xtask test` reads the lines and QEMU's exit status.
//!
//! Each test starts `tchild` in some role and checks how it ended, or
//! checks the kernel's answers directly; the tests near the end start real
//! servers from the boot image (memfs, a file manager, a pipe manager, vm,
//! the tty) and kill them under their clients. After the tests that break
//! things, the kernel must still start programs and must have got back
//! every page it handed out.

#![no_std]
#![no_main]

extern crate alloc;

use abi::msg::Kind;
use abi::test_protocol::{FAIL, OK, START, SUMMARY};
use abi::{Error, ExitStatus, InfoKey, Pid, vector};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use runtime::msg::{self, Page, Queue};
use runtime::{Args, println, sys};

#[path = "../server_deaths.rs"]
mod server_deaths;

runtime::entry!(main);

type TestResult = Result<(), String>;
type Test = (&'static str, fn() -> TestResult);

const TESTS: &[Test] = &[
    ("exit_status_reaches_parent", exit_status_reaches_parent),
    ("arguments_reach_child", arguments_reach_child),
    ("wait_for_a_specific_child", wait_for_a_specific_child),
    ("wait_errors", wait_errors),
    ("user_page_fault_kills_process", user_page_fault),
    ("kernel_memory_is_out_of_reach", kernel_memory_is_out_of_reach),
    ("code_is_read_only", code_is_read_only),
    ("privileged_instruction_kills_process", privileged_instruction),
    ("port_io_kills_process", port_io),
    ("divide_by_zero_kills_process", divide_by_zero),
    ("invalid_opcode_kills_process", invalid_opcode),
    ("sse_is_refused", sse_is_refused),
    ("stack_overflow_hits_guard_page", stack_overflow),
    ("bad_pointers_to_every_call", bad_pointers),
    ("kill_rules", kill_rules),
    ("kill_running_sleeping_and_ready", kill_running_sleeping_and_ready),
    ("stale_pid_never_reaches_new_process", stale_pid),
    ("time_slicing_lets_others_run", time_slicing),
    ("more_processes_than_cpus", more_processes_than_cpus),
    ("work_runs_on_every_cpu", work_runs_on_every_cpu),
    ("orphans_are_cleaned_up", orphans_are_cleaned_up),
    ("sleep_lasts_at_least_the_request", sleep_lasts),
    ("only_init_may_power_off", only_init_may_power_off),
    ("getpid_and_getppid", getpid_and_getppid),
    ("messages_arrive_in_order_with_contents", messages_in_order),
    ("many_senders_on_all_cpus_exactly_once_in_order", message_stress),
    ("call_reply_round_trips_with_data", call_round_trips),
    ("message_errors_are_named", message_errors),
    ("private_queues_need_permission", private_queues),
    ("arm_and_wait_on_several_queues", arm_and_wait),
    ("dead_peers_give_errors_and_drop_messages", dead_peers),
    ("send_data_page_is_copy_on_write", copy_on_write),
    ("kill_a_process_blocked_in_receive", kill_blocked_receiver),
    ("closing_a_queue_returns_its_page_quota", close_queue_returns_quota),
    ("a_bad_receive_buffer_is_reported_not_hung", bad_receive_buffer_reported),
    ("interrupt_lines_and_ports_are_exclusive", device_claim_rules),
    ("interrupts_arrive_as_messages", interrupts_as_messages),
    ("console_driver_serves_programs", console_driver),
    ("pager_serves_zero_and_copy_on_write_pages", pager_serves),
    ("pager_refusing_or_dying_ends_the_faulter", pager_refuses_and_dies),
    ("pager_rights", pager_rights),
    ("file_manager_then_memfs_killed_under_their_clients", file_manager_then_memfs_killed),
    ("pipe_killed_under_a_blocked_reader", pipe_killed_under_a_blocked_reader),
    ("pipe_killed_under_a_blocked_writer", pipe_killed_under_a_blocked_writer),
    ("reader_killed_in_a_pipe_read_leaves_the_pipe_serving", reader_killed_leaves_the_pipe_serving),
    ("vm_killed_under_a_heap_fault_ends_the_faulter", vm_killed_under_a_heap_fault),
    ("heap_of_a_dead_pager_is_not_zero_filled", heap_of_a_dead_pager),
    ("tty_killed_under_a_blocked_reader", tty_killed_under_a_blocked_reader),
    ("random_kernel_calls_get_answers", random_kernel_calls),
    ("kernel_healthy_and_no_memory_leaked", kernel_healthy),
];

static mut FREE_AT_START: u64 = 0;

fn main(_args: Args) -> i32 {
    // The runner's own queue segment, made before the baseline is taken:
    // queue 0 receives every tmsg child's messages and servers' READY;
    // queue 1 the READY of pipe and file managers (`protocols::unix::pipe`).
    let queues = msg::init_qseg(64, 8, 256, 64)
        .and_then(|_| msg::open_queue(16, true))
        .and_then(|q0| Ok((q0, msg::open_queue(4, true)?)));
    match queues {
        Ok((MAIN_QUEUE, MANAGER_QUEUE)) => {}
        Ok(_) => println!("testrunner: queues are not numbered 0 and 1"),
        Err(e) => println!("testrunner: cannot set up messages: {}", e.name()),
    }
    // The heap's pages arrive on first touch: touch the first stretch now,
    // so the runner's own later allocations do not read as a leak.
    let warm = alloc::vec![1u8; 1024 * 1024];
    drop(core::hint::black_box(warm));
    let free_at_start = settled_free_memory();
    // SAFETY: single-threaded program; written once before any test reads it.
    unsafe { FREE_AT_START = free_at_start };
    println!("testrunner: {} CPUs online, {} tests", sys::info(InfoKey::CpusOnline), TESTS.len());
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in TESTS {
        println!("{START}{name}");
        match test() {
            Ok(()) => {
                passed += 1;
                println!("{OK}{name}");
            }
            Err(why) => {
                failed += 1;
                println!("{FAIL}{name}: {why}");
            }
        }
    }
    println!("{SUMMARY}{passed} passed, {failed} failed");
    let _ = sys::shutdown(if failed == 0 { 0 } else { 1 });
    1
}

/// Start tchild with `args` and wait for it.
fn run(args: &str) -> Result<ExitStatus, String> {
    let pid = sys::spawn("tchild", args).map_err(|e| format!("spawn tchild {args}: {}", e.name()))?;
    let (got, status) = sys::wait(Some(pid)).map_err(|e| format!("wait: {}", e.name()))?;
    if got != pid {
        return Err(format!("wait returned {:#x}, expected {:#x}", got.0, pid.0));
    }
    Ok(status)
}

fn expect_status(args: &str, want: ExitStatus) -> TestResult {
    let got = run(args)?;
    if got == want { Ok(()) } else { Err(format!("tchild {args}: ended {got:?}, expected {want:?}")) }
}

fn expect_fault(args: &str, want_vector: u8) -> Result<u64, String> {
    match run(args)? {
        ExitStatus::Fault { vector, address } if vector == want_vector => Ok(address),
        other => Err(format!("tchild {args}: ended {other:?}, expected fault vector {want_vector}")),
    }
}

fn check(cond: bool, what: &str) -> TestResult {
    if cond { Ok(()) } else { Err(String::from(what)) }
}

fn exit_status_reaches_parent() -> TestResult {
    expect_status("exit 0", ExitStatus::Exited(0))?;
    expect_status("exit 42", ExitStatus::Exited(42))?;
    expect_status("exit 4000000000", ExitStatus::Exited(4_000_000_000))
}

fn arguments_reach_child() -> TestResult {
    let args = "args with several words";
    expect_status(args, ExitStatus::Exited(args.len() as u32))
}

fn wait_for_a_specific_child() -> TestResult {
    let slow = sys::spawn("tchild", "sleep-ms 30").map_err(|e| e.name())?;
    let fast = sys::spawn("tchild", "exit 7").map_err(|e| e.name())?;
    let (pid, status) = sys::wait(Some(slow)).map_err(|e| e.name())?;
    check(pid == slow && status == ExitStatus::Exited(0), "waiting for the slow child")?;
    let (pid, status) = sys::wait(None).map_err(|e| e.name())?;
    check(pid == fast && status == ExitStatus::Exited(7), "the fast child stays a zombie until waited for")
}

fn wait_errors() -> TestResult {
    check(sys::wait(None) == Err(Error::NoChildren), "wait with no children")?;
    check(sys::wait(Some(sys::getpid())) == Err(Error::NoChildren), "waiting for oneself")?;
    check(sys::wait(Some(Pid(12345))) == Err(Error::NoChildren), "waiting for a stranger")
}

fn user_page_fault() -> TestResult {
    let address = expect_fault("fault-page", vector::PAGE_FAULT)?;
    check(address == 0xdead_0000, "the fault reports the faulting address")
}

fn kernel_memory_is_out_of_reach() -> TestResult {
    expect_fault("fault-kernel-read", vector::PAGE_FAULT).map(|_| ())
}

fn code_is_read_only() -> TestResult {
    expect_fault("fault-write-text", vector::PAGE_FAULT).map(|_| ())
}

fn privileged_instruction() -> TestResult {
    expect_fault("fault-privileged", vector::GENERAL_PROTECTION).map(|_| ())
}

fn port_io() -> TestResult {
    expect_fault("fault-port", vector::GENERAL_PROTECTION).map(|_| ())
}

fn divide_by_zero() -> TestResult {
    expect_fault("fault-divide 7", vector::DIVIDE_ERROR).map(|_| ())
}

fn invalid_opcode() -> TestResult {
    expect_fault("fault-invalid-opcode", vector::INVALID_OPCODE).map(|_| ())
}

fn sse_is_refused() -> TestResult {
    expect_fault("fault-sse", vector::INVALID_OPCODE).map(|_| ())
}

fn stack_overflow() -> TestResult {
    use abi::layout::{PAGE_SIZE, USER_STACK_BYTES, USER_STACK_TOP};
    let address = expect_fault("stack-overflow", vector::PAGE_FAULT)?;
    let guard = USER_STACK_TOP - USER_STACK_BYTES - PAGE_SIZE..USER_STACK_TOP - USER_STACK_BYTES;
    check(guard.contains(&address), "the fault is in the guard page below the stack")
}

fn bad_pointers() -> TestResult {
    expect_status("bad-pointers", ExitStatus::Exited(0))
}

fn kill_rules() -> TestResult {
    expect_status("kill-parent", ExitStatus::Exited(0))?;
    check(sys::kill(Pid(0)) == Err(Error::NoSuchProcess), "kill pid 0")
}

fn kill_running_sleeping_and_ready() -> TestResult {
    // More spinners than CPUs: some run, some wait on the ready list.
    let cpus = sys::info(InfoKey::CpusOnline) as usize;
    let mut pids = Vec::new();
    for _ in 0..cpus + 2 {
        pids.push(sys::spawn("tchild", "spin").map_err(|e| e.name())?);
    }
    pids.push(sys::spawn("tchild", "sleep-forever").map_err(|e| e.name())?);
    sys::sleep_ns(20_000_000);
    for &pid in &pids {
        sys::kill(pid).map_err(|e| format!("kill {:#x}: {}", pid.0, e.name()))?;
    }
    for &pid in &pids {
        let (_, status) = sys::wait(Some(pid)).map_err(|e| e.name())?;
        check(status == ExitStatus::Killed, "a killed child ends as Killed")?;
    }
    Ok(())
}

fn stale_pid() -> TestResult {
    let first = sys::spawn("tchild", "exit 0").map_err(|e| e.name())?;
    sys::wait(Some(first)).map_err(|e| e.name())?;
    let second = sys::spawn("tchild", "sleep-ms 20").map_err(|e| e.name())?;
    check(first != second, "a new process gets a new pid")?;
    check(sys::kill(first) == Err(Error::NoSuchProcess), "the reaped pid is stale")?;
    check(sys::wait(Some(first)) == Err(Error::NoChildren), "waiting on the stale pid")?;
    let (_, status) = sys::wait(Some(second)).map_err(|e| e.name())?;
    check(status == ExitStatus::Exited(0), "the stale pid did not reach the new process")
}

fn time_slicing() -> TestResult {
    // Fill every CPU with spinners of our priority, then a short job must
    // still get its turn.
    let cpus = sys::info(InfoKey::CpusOnline) as usize;
    let mut spinners = Vec::new();
    for _ in 0..cpus {
        spinners.push(sys::spawn("tchild", "spin").map_err(|e| e.name())?);
    }
    let result = expect_status("work 100000", ExitStatus::Exited(work_result(100_000)));
    for &pid in &spinners {
        let _ = sys::kill(pid);
        let _ = sys::wait(Some(pid));
    }
    result
}

fn work_result(n: u64) -> u32 {
    ((n * (n - 1) / 2) % 65_521) as u32
}

fn more_processes_than_cpus() -> TestResult {
    let cpus = sys::info(InfoKey::CpusOnline) as usize;
    let count = 3 * cpus + 2;
    let mut pids = Vec::new();
    for i in 0..count {
        let n = 20_000 + i as u64 * 1000;
        pids.push((sys::spawn("tchild", &format!("work {n}")).map_err(|e| e.name())?, n));
    }
    for (pid, n) in pids {
        let (_, status) = sys::wait(Some(pid)).map_err(|e| e.name())?;
        if status != ExitStatus::Exited(work_result(n)) {
            return Err(format!("worker {n} ended {status:?}"));
        }
    }
    Ok(())
}

fn work_runs_on_every_cpu() -> TestResult {
    let cpus = sys::info(InfoKey::CpusOnline) as u32;
    let mut pids = Vec::new();
    for _ in 0..cpus {
        pids.push(sys::spawn("tchild", "cpu-mask 100").map_err(|e| e.name())?);
    }
    let mut seen = 0u32;
    for pid in pids {
        match sys::wait(Some(pid)).map_err(|e| e.name())? {
            (_, ExitStatus::Exited(mask)) => seen |= mask,
            (_, other) => return Err(format!("cpu-mask ended {other:?}")),
        }
    }
    let all = if cpus >= 32 { u32::MAX } else { (1 << cpus) - 1 };
    if seen == all { Ok(()) } else { Err(format!("work ran on CPUs {seen:#b}, expected {all:#b}")) }
}

fn orphans_are_cleaned_up() -> TestResult {
    let before = sys::info(InfoKey::ProcessCount);
    expect_status("orphan-maker", ExitStatus::Exited(0))?;
    // The grandchild sleeps 30 ms and then must disappear without anyone
    // waiting for it.
    sys::sleep_ns(100_000_000);
    let after = sys::info(InfoKey::ProcessCount);
    if after == before { Ok(()) } else { Err(format!("{before} processes before, {after} after")) }
}

fn sleep_lasts() -> TestResult {
    let start = sys::info(InfoKey::UptimeNs);
    sys::sleep_ns(25_000_000);
    let slept = sys::info(InfoKey::UptimeNs) - start;
    check(slept >= 25_000_000, "sleep returned early")
}

fn only_init_may_power_off() -> TestResult {
    expect_status("shutdown", ExitStatus::Exited(0))
}

fn getpid_and_getppid() -> TestResult {
    let me = sys::getpid();
    check(me.0 != 0, "getpid")?;
    check(sys::getppid().is_none(), "init has no parent")?;
    expect_status("ppid", ExitStatus::Exited(me.slot() + 1))
}

/// Free memory once every ended process's pages are back.
fn settled_free_memory() -> u64 {
    // Address spaces of ended processes are freed when no CPU has them
    // loaded any more; a short sleep lets every CPU pass through the kernel.
    sys::sleep_ns(30_000_000);
    sys::info(InfoKey::FreeMemoryBytes)
}

fn kernel_healthy() -> TestResult {
    expect_status("exit 3", ExitStatus::Exited(3))?;
    let shared = sys::info(InfoKey::SharedFrames);
    check(shared == 0, &format!("{shared} frames still shared after every lender ended"))?;
    let now = settled_free_memory();
    // SAFETY: single-threaded; written once at start.
    let start = unsafe { FREE_AT_START };
    if now == start { Ok(()) } else { Err(format!("{start} bytes free at start, {now} now: pages leaked")) }
}

// ---- the message system ----

const MAIN_QUEUE: Queue = Queue(0);
const HELLO: u64 = 0x0048_454c_4c4f;

/// Start a tmsg role and wait for its hello; returns its pid and a link to
/// its queue.
fn start_tmsg(role: &str, extra: &str, priority: u64) -> Result<(Pid, msg::Link), String> {
    let args = format!("{role} {} {extra}", sys::getpid().0);
    let pid =
        sys::spawn_with_priority("tmsg", &args, priority).map_err(|e| format!("spawn tmsg: {}", e.name()))?;
    let mut buf = [0u8; 16];
    let r = msg::receive_data(MAIN_QUEUE, &mut buf).map_err(|e| format!("receive hello: {}", e.name()))?;
    if r.sender != pid || r.message[0] != HELLO {
        return Err(format!("expected hello from {:#x}, got {:?} from {:#x}", pid.0, r.message, r.sender.0));
    }
    let link = msg::open_link(pid, Queue(r.message[1] as u32)).map_err(|e| format!("link: {}", e.name()))?;
    Ok((pid, link))
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

fn messages_in_order() -> TestResult {
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

fn message_stress() -> TestResult {
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

fn call_round_trips() -> TestResult {
    let calls = 300u64;
    let (pid, link) = start_tmsg("echo", &format!("{calls}"), abi::DEFAULT_PRIORITY as u64 + 2)?;
    let mut data = [0u8; 4096];
    let mut reply = [0u8; 4096];
    let entries_before = counter(abi::Counter::KernelCalls);
    for i in 0..calls {
        let len = (i as usize * 131) % 4097;
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

fn message_errors() -> TestResult {
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
        msg::send_data(own, &[0; 4], &[0u8; 4097][..]).map(|_| ()),
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

fn private_queues() -> TestResult {
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

fn arm_and_wait() -> TestResult {
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

fn dead_peers() -> TestResult {
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

fn copy_on_write() -> TestResult {
    let mut page = Page::zeroed(); // page-aligned, on the stack
    let loaned_before = counter(abi::Counter::PagesLoaned);
    let (pid, link) = start_tmsg("lend-page", "", abi::PRIORITY_INHERIT)?;
    msg::send(link, &[0; 4]).map_err(|e| e.name())?;
    expect_exit(pid, 0)?;
    let r = msg::receive_data(MAIN_QUEUE, &mut page.0).map_err(|e| e.name())?;
    check(r.message[0] == 1 && r.len == 4096, "the lent page arrives")?;
    check(page.0.iter().all(|&b| b == 0xaa), "the receiver sees the page as it was when sent")?;
    check(counter(abi::Counter::PagesLoaned) > loaned_before, "the page moved by mapping, not copying")?;
    let cow_before = counter(abi::Counter::CowCopies);
    page.0[0] = 1;
    check(page.0[0] == 1 && page.0[1] == 0xaa, "writing to the received page")?;
    check(counter(abi::Counter::CowCopies) >= cow_before, "copy-on-write resolved")?;
    let mut small = [0u8; 100];
    let r = msg::receive_data(MAIN_QUEUE, &mut small).map_err(|e| e.name())?;
    check(r.message[0] == 2 && r.len == 100 && small.iter().all(|&b| b == 0xbb), "the later copy")?;
    msg::close_link(link).map_err(|e| e.name().into())
}

fn kill_blocked_receiver() -> TestResult {
    let (pid, link) = start_tmsg("receive-forever", "", abi::PRIORITY_INHERIT)?;
    sys::sleep_ns(10_000_000);
    sys::kill(pid).map_err(|e| e.name())?;
    let (_, status) = sys::wait(Some(pid)).map_err(|e| e.name())?;
    check(status == ExitStatus::Killed, "killed while receiving")?;
    check(msg::send(link, &[0; 4]) == Err(Error::DeadPeer), "its queue is gone")?;
    msg::close_link(link).map_err(|e| e.name().into())
}

// ---- devices ----

fn device_claim_rules() -> TestResult {
    let e = |r: Result<(), Error>, want: Error, what: &str| -> TestResult {
        if r == Err(want) { Ok(()) } else { Err(format!("{what}: got {r:?}, expected {want:?}")) }
    };
    e(sys::claim_irq(0, 0), Error::InvalidArgument, "the timer's line")?;
    e(sys::claim_irq(99, 0), Error::InvalidArgument, "a line beyond the I/O APIC")?;
    e(sys::claim_irq(5, 7), Error::BadQueue, "a line onto an unopened queue")?;
    e(sys::ack_irq(5), Error::PermissionDenied, "ack of an unclaimed line")?;
    e(sys::io_ports(0xf4, 1), Error::PermissionDenied, "the kernel's exit port")?;
    e(sys::io_ports(0x20, 2), Error::PermissionDenied, "the interrupt controller")?;
    e(sys::io_ports(0x2f8, 0), Error::InvalidArgument, "no ports")?;
    let r = abi::decode_return(sys::raw(abi::Call::IoPorts as u64, 0xffff, 2, 0, 0, 0).0);
    check(r == Err(Error::InvalidArgument), "ports past 0xffff")?;
    // A line and ports held by us are refused to a child.
    sys::claim_irq(5, 0).map_err(|e| format!("claim line 5: {}", e.name()))?;
    sys::io_ports(0x2f8, 8).map_err(|e| format!("COM2 ports: {}", e.name()))?;
    expect_status("claim-irq 5", ExitStatus::Exited(Error::InUse as u32))?;
    expect_status("io-ports 760", ExitStatus::Exited(Error::InUse as u32))?;
    // Released, the line is the child's.
    sys::release_irq(5).map_err(|e| e.name())?;
    expect_status("claim-irq 5", ExitStatus::Exited(0))?;
    // Its owner ended, so the line is free again.
    sys::claim_irq(5, 0).map_err(|e| format!("reclaim line 5: {}", e.name()))?;
    sys::release_irq(5).map_err(|e| e.name())?;
    // Grandchildren of init are not drivers.
    expect_status("grandchild claim-irq 6", ExitStatus::Exited(Error::PermissionDenied as u32))
}

fn interrupts_as_messages() -> TestResult {
    // COM1's line is 4 unless the firmware says otherwise.
    expect_status("uart-irq", ExitStatus::Exited(104))
}

fn console_driver() -> TestResult {
    let me = sys::getpid();
    let driver = sys::spawn_with_priority("console", &format!("{}", me.0), abi::MAX_PRIORITY as u64 - 1)
        .map_err(|e| format!("spawn console: {}", e.name()))?;
    let r = msg::receive_data(MAIN_QUEUE, &mut []).map_err(|e| e.name())?;
    check(r.sender == driver && r.message[0] == protocols::console::READY, "the driver says it is ready")?;
    let link = msg::open_link(driver, Queue(r.message[1] as u32)).map_err(|e| e.name())?;
    let text = b"console driver test line\n";
    let (reply, _) = msg::call(link, &[protocols::console::OP_WRITE, 0, 0, 0], text, &mut [])
        .map_err(|e| format!("write: {}", e.name()))?;
    check(reply[0] == text.len() as u64, "the write is acknowledged with its length")?;
    let stats =
        |link| msg::call(link, &[protocols::console::OP_STATS, 0, 0, 0], &[], &mut []).map(|(w, _)| w);
    let before = stats(link).map_err(|e| e.name())?;
    // A program whose console is the driver prints through it.
    sys::set_bootstrap(abi::bootstrap::CONSOLE, driver, r.message[1] as u32).map_err(|e| e.name())?;
    let result = run_printing_child();
    sys::set_bootstrap(abi::bootstrap::CONSOLE, Pid(0), 0).map_err(|e| e.name())?;
    result?;
    let after = stats(link).map_err(|e| e.name())?;
    check(after[0] > before[0] && after[1] > before[1], "the child's output went through the driver")?;
    sys::kill(driver).map_err(|e| e.name())?;
    let (_, status) = sys::wait(Some(driver)).map_err(|e| e.name())?;
    check(status == ExitStatus::Killed, "the driver ends when killed")?;
    msg::close_link(link).map_err(|e| e.name())?;
    // Its line was released with it.
    expect_status("uart-irq", ExitStatus::Exited(104))
}

fn run_printing_child() -> TestResult {
    let pid = sys::spawn("hello", "").map_err(|e| e.name())?;
    let (_, status) = sys::wait(Some(pid)).map_err(|e| e.name())?;
    check(status == ExitStatus::Exited(0), "hello ran with the console driver")
}

// ---- pagers ----

fn start_pager() -> Result<Pid, String> {
    let me = sys::getpid();
    let pager = sys::spawn_with_priority("pager", &format!("{}", me.0), abi::DEFAULT_PRIORITY as u64 + 1)
        .map_err(|e| format!("spawn pager: {}", e.name()))?;
    let r = msg::receive_data(MAIN_QUEUE, &mut []).map_err(|e| e.name())?;
    check(r.sender == pager && r.message[0] == protocols::pager::READY, "the pager says it is ready")?;
    Ok(pager)
}

fn stop_pager(pager: Pid) -> TestResult {
    sys::kill(pager).map_err(|e| e.name())?;
    sys::wait(Some(pager)).map_err(|e| e.name())?;
    Ok(())
}

fn pager_serves() -> TestResult {
    let pager = start_pager()?;
    let result = expect_status(&format!("paged {}", pager.0), ExitStatus::Exited(0));
    stop_pager(pager)?;
    result
}

fn pager_refuses_and_dies() -> TestResult {
    let pager = start_pager()?;
    let refused = run(&format!("paged-refused {}", pager.0));
    let want = ExitStatus::Fault { vector: vector::PAGE_FAULT, address: 0x3000_0000 };
    // The child registers a region the pager never answers faults in and
    // touches it; once it waits in that fault (no sleep: until_blocked),
    // the pager dies under it, and the child must end too.
    let mut s = Started::new();
    s.hold_cpus()?;
    let stalled = s.spawn("tchild", &format!("paged-stalled {}", pager.0), subject_priority(), 0)?;
    s.until_blocked()?;
    stop_pager(pager)?;
    let status = s.wait(stalled)?;
    s.stop_hogs()?;
    check(refused? == want, "a refused fault ends the process with a page fault")?;
    check(status == want, "a process waiting on a pager that died ends with a page fault")
}

fn pager_rights() -> TestResult {
    // In a child, so the pages it maps do not stay with the runner.
    expect_status("pager-rights", ExitStatus::Exited(0))
}

/// Regression: close_queue dropped data messages without giving their
/// pages back to the quota, so a process ran out after enough closes.
fn close_queue_returns_quota() -> TestResult {
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
fn bad_receive_buffer_reported() -> TestResult {
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

/// Random arguments to every kernel call, from several processes at once
/// (several seeds, so on several CPUs): each must get an answer, and the
/// kernel must stay up (the next tests and the leak check run after).
fn random_kernel_calls() -> TestResult {
    let mut pids = Vec::new();
    for seed in 1..=4u64 {
        pids.push(sys::spawn("tchild", &format!("fuzz 8000 {}", seed * 0x9e37_79b9)).map_err(|e| e.name())?);
    }
    for pid in pids {
        let (_, status) = sys::wait(Some(pid)).map_err(|e| e.name())?;
        check(status == ExitStatus::Exited(0), &format!("fuzzer {:#x} ended {status:?}", pid.0))?;
    }
    Ok(())
}

// ---- servers killed under their clients ----
//
// Issue 5: "a crashing or killed server must not take the system down: its
// clients get errors" (Ridge: "failures are reported in messages back to
// the requesters"). Each test starts the real server program from the boot
// image as init or the monitor would, gives it clients in tchild roles,
// kills it under them, and checks that each client's call ended with
// DeadPeer (the client says so in its exit status) instead of hanging.
// The final leak check runs after these.

/// The runner's queue for pipe and file managers' READY (their starter,
/// the monitor, takes them on its queue 1).
const MANAGER_QUEUE: Queue = Queue(1);

/// One above the runner: processes that spin to hold CPUs (see
/// [`Started::until_blocked`]).
fn hog_priority() -> u64 {
    sys::info(InfoKey::Priority) + 1
}

/// Two above the runner: the servers and clients of a test that must be
/// seen blocked before the server is killed.
fn subject_priority() -> u64 {
    sys::info(InfoKey::Priority) + 2
}

/// One below the runner: clients that call in a loop, so the runner runs
/// as soon as their message arrives.
fn looper_priority() -> u64 {
    sys::info(InfoKey::Priority).saturating_sub(1)
}

/// Processes and links a test made. Whatever is left when the test ends,
/// passed or failed, is killed, waited for and closed: a failing test
/// leaves nothing running, and the final leak check sees every page back.
struct Started {
    pids: Vec<Pid>,
    hogs: Vec<Pid>,
    links: Vec<msg::Link>,
}

impl Started {
    fn new() -> Started {
        Started { pids: Vec::new(), hogs: Vec::new(), links: Vec::new() }
    }

    fn spawn(&mut self, name: &str, args: &str, priority: u64, rights: u64) -> Result<Pid, String> {
        let pid = sys::spawn_with_rights(name, args, priority, rights)
            .map_err(|e| format!("spawn {name} {args}: {}", e.name()))?;
        self.pids.push(pid);
        Ok(pid)
    }

    fn link(&mut self, pid: Pid, queue: u64) -> Result<msg::Link, String> {
        let link = msg::open_link(pid, Queue(queue as u32))
            .map_err(|e| format!("link to {:#x} queue {queue}: {}", pid.0, e.name()))?;
        self.links.push(link);
        Ok(link)
    }

    fn wait(&mut self, pid: Pid) -> Result<ExitStatus, String> {
        let (_, status) = sys::wait(Some(pid)).map_err(|e| format!("wait for {:#x}: {}", pid.0, e.name()))?;
        self.pids.retain(|&p| p != pid);
        Ok(status)
    }

    /// Kill `pid` and check that it ended as killed (not before, by itself).
    fn kill(&mut self, pid: Pid, what: &str) -> TestResult {
        sys::kill(pid).map_err(|e| format!("kill {what}: {}", e.name()))?;
        self.expect(pid, what, ExitStatus::Killed)
    }

    fn expect(&mut self, pid: Pid, what: &str, want: ExitStatus) -> TestResult {
        let got = self.wait(pid)?;
        if got == want { Ok(()) } else { Err(format!("{what} ended {got:?}, expected {want:?}")) }
    }

    /// Start hogs: processes that spin one priority above the runner, on
    /// every CPU but one. Started before the test's server and clients
    /// (at [`subject_priority`]) get going, they keep every process below
    /// the runner's priority (such as a server set to priority 0) off the
    /// CPUs while the runner or a hog is ready.
    fn hold_cpus(&mut self) -> TestResult {
        let cpus = sys::info(InfoKey::CpusOnline) as usize;
        while self.hogs.len() + 1 < cpus {
            let hog = sys::spawn_with_priority("tchild", "spin", hog_priority())
                .map_err(|e| format!("spawn a hog: {}", e.name()))?;
            self.hogs.push(hog);
        }
        Ok(())
    }

    /// Come back only when every process of the test above the runner's
    /// priority (the server and its clients) is blocked or ended, with no
    /// timeout. The scheduler is strictly by priority: when the runner runs
    /// again after its `yield`, nothing above its priority was ready, and
    /// every other CPU runs a hog, so no process of the test is ready or
    /// running.
    fn until_blocked(&mut self) -> TestResult {
        self.hold_cpus()?;
        sys::yield_now();
        Ok(())
    }

    fn stop_hogs(&mut self) -> TestResult {
        while let Some(hog) = self.hogs.pop() {
            self.pids.push(hog);
            self.kill(hog, "a hog")?;
        }
        Ok(())
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        for &link in &self.links {
            let _ = msg::close_link(link);
        }
        for &pid in self.hogs.iter().chain(self.pids.iter()).rev() {
            let _ = sys::kill(pid);
            let _ = sys::wait(Some(pid));
        }
    }
}

/// The next message on `queue`: it must come from `from` with word 0
/// `word0`.
fn receive_from(queue: Queue, from: Pid, word0: u64, what: &str) -> Result<abi::msg::Message, String> {
    let r = msg::receive_data(queue, &mut []).map_err(|e| format!("receive {what}: {}", e.name()))?;
    if r.sender != from || r.message[0] != word0 {
        return Err(format!(
            "expected {what} from {:#x}, got {:x?} from {:#x}",
            from.0, r.message, r.sender.0
        ));
    }
    Ok(r.message)
}

/// A call the server must answer with a result (`protocols::unix::result`
/// of word 0) that is not an error.
fn server_call(
    link: msg::Link,
    words: [u64; 4],
    data: &[u8],
    reply: &mut [u8],
    what: &str,
) -> Result<([u64; 4], usize), String> {
    let (w, n) = msg::call(link, &words, data, reply).map_err(|e| format!("{what}: {}", e.name()))?;
    protocols::unix::result(w[0]).map_err(|e| format!("{what}: {}", protocols::unix::errno::name(e)))?;
    Ok((w, n))
}

/// Wait for each `call-loop` client's message that it is calling in a loop.
fn wait_looping(clients: &[Pid]) -> TestResult {
    for _ in clients {
        let r = msg::receive_data(MAIN_QUEUE, &mut []).map_err(|e| e.name())?;
        if !clients.contains(&r.sender) || r.message[0] != server_deaths::LOOPING {
            return Err(format!("expected a client's LOOPING, got {:x?} from {:#x}", r.message, r.sender.0));
        }
        if r.message[1] != 1 {
            return Err(format!("client {:#x} was never served", r.sender.0));
        }
    }
    Ok(())
}

/// A Stat in a reply's data.
fn stat_of(data: &[u8], what: &str) -> Result<protocols::unix::Stat, String> {
    protocols::unix::Stat::decode(data).ok_or_else(|| format!("{what}: no Stat in the reply"))
}

/// One memfs for two tests (copying the boot image into it is the slow
/// part): first a file manager is killed under its reader, then memfs
/// under its own.
fn file_manager_then_memfs_killed() -> TestResult {
    let mut s = Started::new();
    let memfs = start_memfs(&mut s)?;
    file_manager_killed_under_a_read_loop(&mut s, memfs)?;
    memfs_killed_under_loops(&mut s, memfs)
}

/// memfs started as init starts it, and a link to its queue.
#[derive(Clone, Copy)]
struct Memfs {
    pid: Pid,
    queue: u64,
    link: msg::Link,
}

/// Start memfs as init does (the starter's pid as argument, the right to
/// read the boot image) and take its READY.
fn start_memfs(s: &mut Started) -> Result<Memfs, String> {
    use protocols::unix::fs;
    let me = sys::getpid();
    let pid = s.spawn("memfs", &format!("{}", me.0), abi::PRIORITY_INHERIT, abi::rights::MODULES)?;
    let ready = receive_from(MAIN_QUEUE, pid, fs::READY, "memfs's READY")?;
    let link = s.link(pid, ready[1])?;
    Ok(Memfs { pid, queue: ready[1], link })
}

/// A file manager (Ridge's process per open file) killed while a client
/// reads the file in a loop: the reads end with DeadPeer, and the
/// directory manager it loaded the file from is unharmed.
fn file_manager_killed_under_a_read_loop(s: &mut Started, memfs: Memfs) -> TestResult {
    use protocols::unix::{filemgr, fs, io, open_flags};
    let mut page = Page::zeroed();
    let path = "/tmp/file-manager-killed";
    let text = b"a file whose manager is killed under its reader\n";
    let create = [fs::OP_OPEN, open_flags::O_CREAT | open_flags::O_RDWR, 0o644, 0];
    let (w, _) = server_call(memfs.link, create, path.as_bytes(), &mut page.0, "create")?;
    let fs_handle = w[0];
    let (w, _) = server_call(memfs.link, [io::OP_WRITE, fs_handle, 0, 0], text, &mut [], "write")?;
    check(w[0] == text.len() as u64, "memfs took the whole write")?;
    // Started as the monitor starts it; the runner is its monitor.
    let me = sys::getpid();
    let manager = s.spawn("filemgr", &format!("{}", me.0), abi::PRIORITY_INHERIT, 0)?;
    let ready = receive_from(MANAGER_QUEUE, manager, filemgr::READY, "the file manager's READY")?;
    let queue = ready[1];
    let link = s.link(manager, queue)?;
    let attach = [filemgr::OP_ATTACH, memfs.pid.0, memfs.queue, fs_handle];
    let (w, _) = server_call(link, attach, &[], &mut [], "attach")?;
    check(w[0] == text.len() as u64, "the file manager loaded the whole file")?;
    let (w, _) = server_call(link, [filemgr::OP_OPEN, open_flags::O_RDONLY, 0, 0], &[], &mut [], "open")?;
    let reads = format!("call-loop {} {queue} {} {} 4096", manager.0, io::OP_READ, w[0]);
    let reads = s.spawn("tchild", &reads, looper_priority(), 0)?;
    wait_looping(&[reads])?;
    s.kill(manager, "the file manager")?;
    s.expect(reads, "the file manager's read loop", ExitStatus::Exited(0))?;
    let (_, n) = server_call(memfs.link, [fs::OP_LOOKUP, 0, 0, 0], path.as_bytes(), &mut page.0, "lookup")?;
    let stat = stat_of(&page.0[..n], "lookup")?;
    check(stat.size_bytes == text.len() as u64, "memfs still serves the file as written")?;
    server_call(memfs.link, [io::OP_CLOSE, fs_handle, 0, 0], &[], &mut [], "close at memfs").map(|_| ())
}

/// memfs killed while one client looks a path up in a loop and another
/// reads a file in a loop: both calls end with DeadPeer.
fn memfs_killed_under_loops(s: &mut Started, memfs: Memfs) -> TestResult {
    use protocols::unix::{fs, io, mode, open_flags};
    let mut page = Page::zeroed();
    let path = "/etc/inittab";
    let (_, n) = server_call(memfs.link, [fs::OP_LOOKUP, 0, 0, 0], path.as_bytes(), &mut page.0, "lookup")?;
    let stat = stat_of(&page.0[..n], "lookup")?;
    check(mode::is_reg(stat.mode) && stat.size_bytes > 0, "memfs has the boot image's /etc/inittab")?;
    let open = [fs::OP_OPEN, open_flags::O_RDONLY, 0, 0];
    let (w, _) = server_call(memfs.link, open, path.as_bytes(), &mut page.0, "open")?;
    let (pid, queue) = (memfs.pid.0, memfs.queue);
    let lookups = format!("call-loop {pid} {queue} {} 0 0 {path}", fs::OP_LOOKUP);
    let lookups = s.spawn("tchild", &lookups, looper_priority(), 0)?;
    let reads = format!("call-loop {pid} {queue} {} {} 4096", io::OP_READ, w[0]);
    let reads = s.spawn("tchild", &reads, looper_priority(), 0)?;
    wait_looping(&[lookups, reads])?;
    s.kill(memfs.pid, "memfs")?;
    s.expect(lookups, "the lookup loop", ExitStatus::Exited(0))?;
    s.expect(reads, "the read loop", ExitStatus::Exited(0))?;
    let later = msg::call(memfs.link, &[fs::OP_LOOKUP, 0, 0, 0], path.as_bytes(), &mut page.0);
    check(later.map(|_| ()) == Err(Error::DeadPeer), "a later call to the dead memfs")
}

/// A pipe manager under test: pid, queue, the handles of its two ends and
/// a link to it.
struct PipeUnderTest {
    pid: Pid,
    queue: u64,
    read: u64,
    write: u64,
    link: msg::Link,
}

impl PipeUnderTest {
    /// Start one as the monitor does (the runner's pid as argument: the
    /// runner is its monitor, the only one that may close its ends) and
    /// take its READY from queue 1.
    fn start(s: &mut Started) -> Result<PipeUnderTest, String> {
        use protocols::unix::pipe;
        let me = sys::getpid();
        let pid = s.spawn("pipe", &format!("{}", me.0), subject_priority(), 0)?;
        let ready = receive_from(MANAGER_QUEUE, pid, pipe::READY, "the pipe manager's READY")?;
        let link = s.link(pid, ready[1])?;
        Ok(PipeUnderTest { pid, queue: ready[1], read: ready[2], write: ready[3], link })
    }

    /// tchild's arguments for one call of `op` on `handle` with
    /// `data_bytes` of data, which the pipe keeps.
    fn call_once(&self, op: u64, handle: u64, data_bytes: usize) -> String {
        format!("call-once {} {} {op} {handle} 4096 {data_bytes}", self.pid.0, self.queue)
    }

    /// Bytes in the pipe's buffer.
    fn buffered(&self) -> Result<u64, String> {
        let mut buf = [0u8; 128];
        let fstat = [protocols::unix::io::OP_FSTAT, self.read, 0, 0];
        let (_, n) = server_call(self.link, fstat, &[], &mut buf, "fstat of the pipe")?;
        Ok(stat_of(&buf[..n], "fstat of the pipe")?.size_bytes)
    }

    fn write(&self, data: &[u8]) -> TestResult {
        let write = [protocols::unix::io::OP_WRITE, self.write, 0, 0];
        let (w, _) = server_call(self.link, write, data, &mut [], "write")?;
        check(w[0] == data.len() as u64, "the pipe took the whole write")
    }
}

fn pipe_killed_under_a_blocked_reader() -> TestResult {
    use protocols::unix::io;
    let mut s = Started::new();
    let pipe = PipeUnderTest::start(&mut s)?;
    s.hold_cpus()?;
    let reader = s.spawn("tchild", &pipe.call_once(io::OP_READ, pipe.read, 0), subject_priority(), 0)?;
    s.until_blocked()?;
    // The reader waits in its read of the empty pipe, kept by the manager.
    s.kill(pipe.pid, "the pipe manager")?;
    s.expect(reader, "the reader", ExitStatus::Exited(0))?;
    s.stop_hogs()
}

fn pipe_killed_under_a_blocked_writer() -> TestResult {
    use protocols::unix::{io, pipe};
    let mut s = Started::new();
    let pipe = PipeUnderTest::start(&mut s)?;
    let chunk = [0x77u8; 4096];
    for _ in 0..pipe::CAPACITY_BYTES / chunk.len() {
        pipe.write(&chunk)?;
    }
    check(pipe.buffered()? == pipe::CAPACITY_BYTES as u64, "the pipe is full")?;
    s.hold_cpus()?;
    let writer = s.spawn("tchild", &pipe.call_once(io::OP_WRITE, pipe.write, 4096), subject_priority(), 0)?;
    s.until_blocked()?;
    // The writer waits in its write to the full pipe, kept by the manager.
    s.kill(pipe.pid, "the pipe manager")?;
    s.expect(writer, "the writer", ExitStatus::Exited(0))?;
    s.stop_hogs()
}

/// The other way round: a client killed while its read waits in the pipe
/// manager does not disturb the manager. The bytes written next are not
/// lost to the dead reader; the next reader gets them, and the manager
/// ends normally when both ends are closed.
fn reader_killed_leaves_the_pipe_serving() -> TestResult {
    use protocols::unix::io;
    let mut s = Started::new();
    let pipe = PipeUnderTest::start(&mut s)?;
    s.hold_cpus()?;
    let reader = s.spawn("tchild", &pipe.call_once(io::OP_READ, pipe.read, 0), subject_priority(), 0)?;
    s.until_blocked()?;
    s.kill(reader, "the blocked reader")?;
    s.stop_hogs()?;
    let text = "written-after-the-reader-died";
    pipe.write(text.as_bytes())?;
    let kept = pipe.buffered()? == text.len() as u64;
    check(kept, "the bytes stayed in the pipe, not given to the dead reader")?;
    let next = format!("read-expect {} {} {} {text}", pipe.pid.0, pipe.queue, pipe.read);
    let next = s.spawn("tchild", &next, abi::PRIORITY_INHERIT, 0)?;
    s.expect(next, "the next reader", ExitStatus::Exited(0))?;
    for end in [pipe.read, pipe.write] {
        server_call(pipe.link, [io::OP_CLOSE, end, 0, 0], &[], &mut [], "close an end")?;
    }
    s.expect(pipe.pid, "the pipe manager with both ends closed", ExitStatus::Exited(0))
}

/// The VM manager killed while a process waits on it for a heap page: the
/// kernel ends the process with a page fault there, at once, instead of
/// leaving it waiting for ever. The runner gives the process's heap
/// region to vm with `set_pager`, as `vm::OP_NEW_IMAGE` does for a new
/// UNIX image (which also pages the program's segments from a file and so
/// needs memfs), and checks with `vm::OP_STATS` that vm serves it.
fn vm_killed_under_a_heap_fault() -> TestResult {
    use abi::layout::{PAGE_SIZE, USER_HEAP_BASE, USER_HEAP_MAX_BYTES};
    use protocols::unix::vm;
    use server_deaths::{HEAP_HELLO, HEAP_TOUCHED};
    let mut s = Started::new();
    let me = sys::getpid();
    let manager = s.spawn("vm", &format!("{}", me.0), subject_priority(), abi::rights::MEMORY)?;
    let ready = receive_from(MAIN_QUEUE, manager, vm::READY, "vm's READY")?;
    let vm_link = s.link(manager, ready[1])?;
    let child = s.spawn("tchild", "heap-touch", subject_priority(), 0)?;
    let hello = receive_from(MAIN_QUEUE, child, HEAP_HELLO, "heap-touch's hello")?;
    let go = s.link(child, hello[1])?;
    // Faults in the child's heap region go to vm.
    sys::set_pager(child, USER_HEAP_BASE, USER_HEAP_MAX_BYTES, manager, ready[1] as u32)
        .map_err(|e| format!("set_pager: {}", e.name()))?;
    let faults = |what| server_call(vm_link, [vm::OP_STATS, 0, 0, 0], &[], &mut [], what).map(|(w, _)| w[0]);
    let before = faults("vm stats")?;
    msg::send(go, &[0; 4]).map_err(|e| e.name())?;
    receive_from(MAIN_QUEUE, child, HEAP_TOUCHED, "heap-touch's first page")?;
    check(faults("vm stats")? == before + 1, "vm served the first heap page")?;
    // From now on vm runs only on a CPU that nothing above priority 0
    // wants, and the runner and the hogs leave none: the fault on the
    // second page stays queued at vm until vm is killed.
    s.hold_cpus()?;
    sys::set_priority(manager, 0).map_err(|e| e.name())?;
    msg::send(go, &[0; 4]).map_err(|e| e.name())?;
    s.until_blocked()?;
    s.kill(manager, "vm")?;
    let want = ExitStatus::Fault { vector: vector::PAGE_FAULT, address: USER_HEAP_BASE + PAGE_SIZE };
    s.expect(child, "the process waiting for a heap page", want)?;
    s.stop_hogs()
}

/// Regression: a heap region given to a pager that has since died used to
/// fall back to the kernel's zero-fill default, so the process went on as
/// if nothing had happened. The region stays the dead pager's: the next
/// fault there ends the process.
fn heap_of_a_dead_pager() -> TestResult {
    use abi::layout::{PAGE_SIZE, USER_HEAP_BASE, USER_HEAP_MAX_BYTES};
    use protocols::unix::vm;
    use server_deaths::{HEAP_HELLO, HEAP_TOUCHED};
    let mut s = Started::new();
    let me = sys::getpid();
    let manager = s.spawn("vm", &format!("{}", me.0), subject_priority(), abi::rights::MEMORY)?;
    let ready = receive_from(MAIN_QUEUE, manager, vm::READY, "vm's READY")?;
    let child = s.spawn("tchild", "heap-touch", subject_priority(), 0)?;
    let hello = receive_from(MAIN_QUEUE, child, HEAP_HELLO, "heap-touch's hello")?;
    let go = s.link(child, hello[1])?;
    sys::set_pager(child, USER_HEAP_BASE, USER_HEAP_MAX_BYTES, manager, ready[1] as u32)
        .map_err(|e| format!("set_pager: {}", e.name()))?;
    msg::send(go, &[0; 4]).map_err(|e| e.name())?;
    receive_from(MAIN_QUEUE, child, HEAP_TOUCHED, "heap-touch's first page")?;
    s.kill(manager, "vm")?;
    msg::send(go, &[0; 4]).map_err(|e| e.name())?;
    let want = ExitStatus::Fault { vector: vector::PAGE_FAULT, address: USER_HEAP_BASE + PAGE_SIZE };
    s.expect(child, "the process touching its heap after its pager died", want)
}

/// The console device manager killed while a reader waits for a line
/// nobody types: the read ends with DeadPeer. Before that, the tty's own
/// server, the console driver, is killed: the tty survives it and answers
/// writes with EIO.
fn tty_killed_under_a_blocked_reader() -> TestResult {
    use protocols::unix::{device, errno, io, open_flags, tty};
    let mut s = Started::new();
    let me = sys::getpid();
    let driver = s.spawn("console", &format!("{}", me.0), abi::MAX_PRIORITY as u64 - 1, 0)?;
    let ready = receive_from(MAIN_QUEUE, driver, protocols::console::READY, "the console driver's READY")?;
    // The tty finds its driver in its bootstrap CONSOLE connection.
    sys::set_bootstrap(abi::bootstrap::CONSOLE, driver, ready[1] as u32).map_err(|e| e.name())?;
    let manager = s.spawn("tty", &format!("{}", me.0), subject_priority(), 0);
    sys::set_bootstrap(abi::bootstrap::CONSOLE, Pid(0), 0).map_err(|e| e.name())?;
    let manager = manager?;
    let ready = receive_from(MAIN_QUEUE, manager, tty::READY, "the tty's READY")?;
    let queue = ready[1];
    let link = s.link(manager, queue)?;
    let (w, _) = server_call(link, [device::OP_OPEN, open_flags::O_RDWR, 0, 0], &[], &mut [], "open")?;
    let handle = w[0];
    let text = b"tty test line\n";
    let (w, _) = server_call(link, [io::OP_WRITE, handle, 0, 0], text, &mut [], "write")?;
    check(w[0] == text.len() as u64, "the tty wrote the line")?;
    s.kill(driver, "the console driver")?;
    let (w, _) = msg::call(link, &[io::OP_WRITE, handle, 0, 0], text, &mut []).map_err(|e| e.name())?;
    check(protocols::unix::result(w[0]) == Err(errno::EIO), "a write with the driver dead gets EIO")?;
    let reader = format!("call-once {} {queue} {} {handle} 4096 0", manager.0, io::OP_READ);
    s.hold_cpus()?;
    let reader = s.spawn("tchild", &reader, subject_priority(), 0)?;
    s.until_blocked()?;
    s.kill(manager, "the tty")?;
    s.expect(reader, "the reader", ExitStatus::Exited(0))?;
    s.stop_hogs()
}
