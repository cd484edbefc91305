//! tchild: the program the in-QEMU tests start, in many roles chosen by its
//! first argument. Each role either ends in a way the test runner checks
//! (an exit code, a fault) or checks something itself and exits 0 on success
//! and 1 on failure, printing what went wrong.

#![no_std]
#![no_main]

extern crate alloc;

use abi::layout::{MAX_ARGS_BYTES, PAGE_SIZE, USER_ARGS_ADDR, USER_END, USER_STACK_TOP};
use abi::{Call, Error, InfoKey, Pid};
use core::arch::asm;
use runtime::msg;
use runtime::{Args, println, sys};

#[path = "../args_digest.rs"]
mod args_digest;
#[path = "../server_deaths.rs"]
mod server_deaths;

runtime::entry!(main);

/// A page, as a buffer length.
const PAGE_BYTES: usize = PAGE_SIZE as usize;
/// The most data one message carries, as a buffer length.
const MAX_DATA: usize = abi::msg::MAX_DATA_BYTES as usize;

fn main(args: Args) -> i32 {
    let role = args.get(0).unwrap_or("");
    let arg = |i: usize| args.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    match role {
        "exit" => arg(1) as i32,
        // The digest of the argument bytes, so the runner checks them all.
        "args" => args_digest::fnv1a_32(args.as_str().as_bytes()) as i32,
        "fault-page" => {
            // SAFETY: deliberately writes to an unmapped address: the test
            // expects the kernel to end this process with a page fault.
            unsafe { (0xdead_0000 as *mut u64).write_volatile(1) };
            2
        }
        "fault-kernel-read" => {
            // SAFETY: deliberately reads kernel memory from user mode.
            let v = unsafe { (0xffff_ffff_8010_0000u64 as *const u64).read_volatile() };
            v as i32
        }
        "fault-write-text" => {
            // SAFETY: deliberately writes to this program's read-only code.
            unsafe { (main as *const () as *mut u8).write_volatile(0) };
            2
        }
        "fault-privileged" => {
            // SAFETY: deliberately executes a privileged instruction.
            unsafe { asm!("hlt") };
            2
        }
        "fault-port" => {
            // SAFETY: deliberately touches an I/O port without permission.
            unsafe { asm!("in al, dx", in("dx") 0x3f8u16, out("al") _) };
            2
        }
        "fault-divide" => {
            let (n, d) = (arg(1), 0u64);
            let q: u64;
            // SAFETY: deliberately divides by zero.
            unsafe { asm!("div {d}", d = in(reg) d, inout("rax") n => q, inout("rdx") 0u64 => _) };
            q as i32
        }
        "fault-invalid-opcode" => {
            // SAFETY: deliberately executes an undefined instruction.
            unsafe { asm!("ud2") };
            2
        }
        "fault-sse" => {
            // SSE is off for user programs (its state is not saved on
            // context switch), so this must fault, not corrupt others.
            // SAFETY: deliberately executes an SSE instruction.
            unsafe { asm!("xorps xmm0, xmm0") };
            2
        }
        "stack-overflow" => {
            // Push until the stack runs into its guard page. (A recursive
            // Rust function could be turned into a loop by the optimiser.)
            // SAFETY: deliberately overflows the stack; the kernel ends the
            // process at the guard page.
            unsafe { asm!("2:", "push rax", "jmp 2b", options(noreturn)) }
        }
        "spin" => loop {
            core::hint::spin_loop();
        },
        "sleep-forever" => loop {
            sys::sleep_ns(1_000_000_000);
        },
        "cpu-report" => cpu_report(),
        "cpus-seen" => cpus_seen(arg(1)),
        "affinity-rules" => affinity_rules(),
        "work" => work(arg(1)),
        "kill-parent" => match sys::getppid().map(sys::kill) {
            Some(Err(Error::PermissionDenied)) => 0,
            other => {
                println!("tchild: killing the parent gave {other:?}, expected PermissionDenied");
                1
            }
        },
        "ppid" => sys::getppid().map_or(0, |p| p.slot() as i32 + 1),
        "bad-pointers" => bad_pointers(),
        "orphan-maker" => {
            // Start a grandchild that outlives us; it must be cleaned up.
            let _ = sys::spawn("tchild", "sleep-ms 30");
            0
        }
        "sleep-ms" => {
            sys::sleep_ns(arg(1) * 1_000_000);
            0
        }
        "claim-irq" => match msg::open_queue(1, true).and_then(|q| sys::claim_irq(arg(1), q.0)) {
            Ok(()) => 0,
            Err(e) => e as i32,
        },
        "io-ports" => match sys::io_ports(arg(1) as u16, 8) {
            Ok(()) => 0,
            Err(e) => e as i32,
        },
        // Start a grandchild in the role given by the rest of the
        // arguments and exit with its exit code.
        "grandchild" => {
            let rest = args.as_str().split_once(' ').map_or("", |(_, r)| r);
            match sys::spawn("tchild", rest).and_then(|p| sys::wait(Some(p))) {
                Ok((_, abi::ExitStatus::Exited(code))) => code as i32,
                _ => 99,
            }
        }
        "uart-irq" => uart_irq(),
        "fuzz" => fuzz(arg(1), arg(2)),
        "fuzz-blocking" => fuzz_blocking(arg(1), arg(2)),
        "fuzz-helper" => fuzz_helper(arg(1), arg(2), Pid(arg(3)), arg(4)),
        "paged" => paged(Pid(arg(1))),
        "rw-dead-pager" => match rw_dead_pager() {
            Ok(()) => 0,
            Err(why) => {
                println!("tchild rw-dead-pager: {why}");
                1
            }
        },
        "rw-share-pager" => rw_share_pager(Pid(arg(1)), arg(2)),
        "pager-rights" => match pager_rights_checks() {
            Ok(()) => 0,
            Err(why) => {
                println!("tchild pager-rights: {why}");
                1
            }
        },
        "foreign-peek" => foreign_peek(Pid(arg(1)), arg(2)),
        "paged-refused" => paged_refused(Pid(arg(1)), protocols::pager::OP_REGISTER_REFUSE),
        "paged-stalled" => paged_refused(Pid(arg(1)), protocols::pager::OP_REGISTER_STALL),
        // Clients of servers that the runner kills under them.
        "call-loop" => call_loop(&args),
        "call-once" => call_once(&args),
        "lease-call" => lease_call(&args),
        "lease-call-wrapping" => lease_call_wrapping(&args),
        "device-calls-refused" => device_calls_refused(),
        "device-calls" => match device_calls() {
            Ok(()) => 0,
            Err(why) => {
                println!("tchild device-calls: {why}");
                1
            }
        },
        // Exits with the vector its first MSI-X route got (at least
        // 0x40), or 1 after printing what was wrong.
        "msix-calls" => match msix_calls() {
            Ok(vector) => vector as i32,
            Err(why) => {
                println!("tchild msix-calls: {why}");
                1
            }
        },
        "pci-claim" => match sys::pci_claim(sys::pci_address(0, arg(1) as u8, 0)) {
            Ok(()) => 0,
            Err(e) => e as i32,
        },
        // A driver that turns bus mastering on and then ends (`exit` or
        // `fault`); the runner checks that the kernel turned it off.
        "bus-master" => match bus_master(arg(1) as u8, arg(2) as u8) {
            Ok(()) if args.get(3) == Some("fault") => {
                // SAFETY: deliberately writes to an unmapped address: the
                // runner expects a driver that dies by a fault.
                unsafe { (0xdead_0000 as *mut u64).write_volatile(1) };
                2
            }
            Ok(()) => 0,
            Err(why) => {
                println!("tchild bus-master: {why}");
                1
            }
        },
        "read-expect" => read_expect(&args),
        "heap-touch" => heap_touch(),
        "proc-memory" => proc_memory_counts(arg(1)),
        "shutdown" => match sys::shutdown(0) {
            Err(Error::PermissionDenied) => 0,
            other => {
                println!("tchild: shutdown by a non-init process gave {other:?}");
                1
            }
        },
        _ => {
            println!("tchild: unknown role {role:?}");
            100
        }
    }
}

/// Spin for `ms` milliseconds of TSC time and report the CPUs seen as a
/// bit mask in the exit code.
/// Spin for ever (until the parent kills us), telling the parent's queue 0
/// each CPU we run on the first time we run there: one message per CPU,
/// word 0 its index.
/// The CPUs this process ran on over `rounds` readings, with a yield or a
/// short sleep between them (so it is dispatched anew each time), as a
/// bit mask in the exit code (`affinity_pins_a_process`).
fn cpus_seen(rounds: u64) -> i32 {
    let mut seen = 0u64;
    for i in 0..rounds {
        seen |= 1 << sys::info(InfoKey::CurrentCpu);
        if i % 16 == 0 { sys::sleep_ns(100_000) } else { sys::yield_now() }
    }
    seen as i32
}

/// `set_affinity` without rights: this process may pin itself (and is
/// then on that CPU), not its parent; a CPU past the last is refused.
fn affinity_rules() -> i32 {
    let cpus = sys::info(InfoKey::CpusOnline);
    let Some(parent) = sys::getppid() else { return 90 };
    if sys::set_affinity(parent, Some(0)) != Err(Error::PermissionDenied) {
        println!("tchild affinity-rules: pinning the parent was not refused");
        return 1;
    }
    if sys::set_affinity(Pid(0), Some(cpus)) != Err(Error::InvalidArgument) {
        println!("tchild affinity-rules: CPU {cpus} of {cpus} was not refused");
        return 2;
    }
    let last = cpus - 1;
    if sys::set_affinity(Pid(0), Some(last)) != Ok(()) {
        println!("tchild affinity-rules: could not pin itself");
        return 3;
    }
    for _ in 0..100 {
        sys::yield_now();
        if sys::info(InfoKey::CurrentCpu) != last {
            println!("tchild affinity-rules: ran off its CPU {last}");
            return 4;
        }
    }
    match sys::set_affinity(Pid(0), None) {
        Ok(()) => 0,
        Err(_) => 5,
    }
}

fn cpu_report() -> i32 {
    let Some(parent) = sys::getppid() else { return 90 };
    let Ok(to_parent) = msg::open_link(parent, msg::Queue(protocols::STARTER_QUEUE)) else { return 91 };
    let mut seen = 0u64;
    loop {
        let cpu = sys::info(InfoKey::CurrentCpu);
        if seen & (1 << cpu) != 0 {
            continue;
        }
        seen |= 1 << cpu;
        loop {
            match msg::send(to_parent, &[cpu, 0, 0, 0]) {
                Ok(()) => break,
                Err(Error::QueueFull) => sys::yield_now(),
                Err(_) => return 92,
            }
        }
    }
}

/// Compute something that takes a while and whose result is known: the
/// sum of 0..n, folded into 16 bits.
fn work(n: u64) -> i32 {
    let mut sum = 0u64;
    for i in 0..n {
        sum = sum.wrapping_add(core::hint::black_box(i));
    }
    (sum % 65_521) as i32
}

/// Every kernel call that takes a pointer, with pointers that must be
/// refused. Exits 0 when every call gave the right error.
fn bad_pointers() -> i32 {
    let mut failures = 0;
    let mut expect = |what: &str, got: Result<u64, Error>, want: Error| {
        if got != Err(want) {
            println!("tchild: {what}: got {got:?}, expected {want:?}");
            failures += 1;
        }
    };
    let call = |c: Call, a0: u64, a1: u64, a2: u64, a3: u64, a4: u64| {
        abi::decode_return(sys::raw(c as u64, a0, a1, a2, a3, a4).0)
    };
    let kernel = 0xffff_ffff_8010_0000u64;
    let unmapped = 0x0000_4000_0000_0000u64;
    let name = "tchild";
    let np = name.as_ptr() as u64;
    let bad = [
        ("null", 0u64, 16u64),
        ("kernel", kernel, 16),
        ("unmapped", unmapped, 16),
        ("wrapping", u64::MAX - 4, 16),
        ("straddling the user end", USER_END - 8, 16),
        ("past the stack", USER_STACK_TOP - 8, 64),
    ];
    for (what, p, n) in bad {
        expect(what, call(Call::DebugWrite, p, n, 0, 0, 0), Error::BadAddress);
        expect(what, call(Call::Spawn, p, n, 0, 0, abi::PRIORITY_INHERIT), Error::BadAddress);
        expect(
            what,
            call(Call::Spawn, np, name.len() as u64, p, n, abi::PRIORITY_INHERIT),
            Error::BadAddress,
        );
        expect(what, call(Call::KernelOptions, p, n, 0, 0, 0), Error::BadAddress);
        expect(what, call(Call::Counters, p, n / 8, 0, 0, 0), Error::BadAddress);
    }
    // Writes to read-only user memory: the argument page and our own code.
    expect("read-only args page", call(Call::KernelOptions, USER_ARGS_ADDR, 16, 0, 0, 0), Error::BadAddress);
    let text = bad_pointers as *const () as u64;
    expect("read-only text", call(Call::Counters, text, 2, 0, 0, 0), Error::BadAddress);
    // Sizes and numbers out of range.
    expect("huge debug write", call(Call::DebugWrite, np, 1 << 40, 0, 0, 0), Error::InvalidArgument);
    expect(
        "empty program name",
        call(Call::Spawn, np, 0, 0, 0, abi::PRIORITY_INHERIT),
        Error::InvalidArgument,
    );
    expect(
        "long program name",
        call(Call::Spawn, np, 65, 0, 0, abi::PRIORITY_INHERIT),
        Error::InvalidArgument,
    );
    expect("bad priority", call(Call::Spawn, np, name.len() as u64, 0, 0, 32), Error::InvalidArgument);
    expect(
        "huge args",
        call(Call::Spawn, np, name.len() as u64, np, MAX_ARGS_BYTES + 1, abi::PRIORITY_INHERIT),
        Error::InvalidArgument,
    );
    expect(
        "no such program",
        call(Call::Spawn, "nope".as_ptr() as u64, 4, 0, 0, abi::PRIORITY_INHERIT),
        Error::NoSuchProgram,
    );
    expect("bad info key", call(Call::Info, 9999, 0, 0, 0, 0), Error::InvalidArgument);
    for n in [23u64, 30, 60, 62, 63, 71, 100, 0x1_0000_0000, u64::MAX] {
        expect("bad call number", call_raw(n), Error::NoSuchCall);
    }
    expect("kill pid 0", call(Call::Kill, 0, 0, 0, 0, 0), Error::NoSuchProcess);
    expect("kill a stale pid", call(Call::Kill, Pid::new(1, 0xffff).0, 0, 0, 0, 0), Error::NoSuchProcess);
    expect("kill a huge slot", call(Call::Kill, Pid::new(100_000, 1).0, 0, 0, 0, 0), Error::NoSuchProcess);
    expect("wait with no children", call(Call::Wait, abi::ANY_CHILD, 0, 0, 0, 0), Error::NoChildren);
    // A short buffer truncates kernel_options but reports the full length.
    let mut two = [0u8; 2];
    let full = sys::kernel_options(&mut [0u8; 1024]).unwrap_or(0);
    match sys::kernel_options(&mut two) {
        Ok(n) if n == full => {}
        other => {
            println!("tchild: short kernel_options buffer gave {other:?}, expected Ok({full})");
            failures += 1;
        }
    }
    // The process is still healthy after all that.
    if sys::getpid().0 == 0 {
        failures += 1;
    }
    failures
}

/// Take COM1, make it raise a transmit-empty interrupt, and check that the
/// interrupt arrives as a message naming the line.
fn uart_irq() -> i32 {
    let Ok(q) = msg::open_queue(4, true) else { return 1 };
    if sys::io_ports(0x3f8, 8).is_err() {
        return 2;
    }
    if let Err(e) = sys::claim_irq(4, q.0) {
        println!("tchild: claim_irq: {}", e.name());
        return 3;
    }
    // OUT2 on; then enable the transmit-holding-register-empty interrupt,
    // which the idle UART raises at once.
    sys::outb(0x3f8 + 4, 0x08);
    sys::outb(0x3f8 + 1, 0x02);
    let r = match msg::receive_data(q, &mut []) {
        Ok(r) => r,
        Err(_) => return 4,
    };
    let _ = sys::inb(0x3f8 + 2); // reading IIR clears the THRE interrupt
    sys::outb(0x3f8 + 1, 0x00);
    if r.kind != abi::msg::Kind::Interrupt || r.sender.0 != 0 {
        return 5;
    }
    let line = r.message[0];
    if sys::ack_irq(4).is_err() || sys::release_irq(4).is_err() {
        return 6;
    }
    if sys::ack_irq(4) != Err(Error::PermissionDenied) {
        return 7;
    }
    // The exit code carries the line so the runner can check it.
    100 + line as i32
}

const ZERO_REGION: u64 = 0x1000_0000;
const TEMPLATE_REGION: u64 = 0x2000_0000;
const REFUSED_REGION: u64 = 0x3000_0000;

/// Register a region with the pager and hand it over.
fn register(
    link: msg::Link,
    pager: Pid,
    op: u64,
    start: u64,
    pages: u64,
    data: &[u8],
) -> Result<u64, alloc::string::String> {
    use alloc::format;
    let len = pages * PAGE_SIZE;
    let (reply, _) = msg::call(link, &[op, start, len, 0], data, &mut [])
        .map_err(|e| format!("register: {}", e.name()))?;
    if reply[0] != 0 {
        return Err(format!("the pager refused to register {start:#x}"));
    }
    sys::set_pager(sys::getpid(), start, len, pager, protocols::pager::QUEUE)
        .map_err(|e| format!("set_pager {start:#x}: {}", e.name()))?;
    Ok(reply[1])
}

/// Touch pages served by the pager: zero-filled ones and copy-on-write
/// copies of a template, checking what each holds.
fn paged(pager: Pid) -> i32 {
    match paged_checks(pager) {
        Ok(()) => 0,
        Err(why) => {
            println!("tchild paged: {why}");
            1
        }
    }
}

fn paged_checks(pager: Pid) -> Result<(), alloc::string::String> {
    use alloc::format;
    use protocols::pager::*;
    let link = msg::open_link(pager, msg::Queue(QUEUE)).map_err(|e| format!("link: {}", e.name()))?;
    register(link, pager, OP_REGISTER_ZERO, ZERO_REGION, 4, &[])?;
    let zero = ZERO_REGION as *mut u64;
    // SAFETY: the region is this process's, served by the pager; each
    // access faults a page in.
    let (first, second) = unsafe {
        let first = zero.read_volatile();
        zero.add(600).write_volatile(0x1234);
        (first, zero.add(600).read_volatile())
    };
    if first != 0 || second != 0x1234 {
        return Err(format!("zero region read {first:#x}, then {second:#x}"));
    }
    let template = [0x5au8; PAGE_BYTES];
    let t = register(link, pager, OP_REGISTER_TEMPLATE, TEMPLATE_REGION, 2, &template)?;
    let shared = TEMPLATE_REGION as *mut u8;
    // SAFETY: as above; the first write copies the shared page.
    let (seen, mine, other) = unsafe {
        let seen = shared.add(100).read_volatile();
        shared.add(100).write_volatile(0x11);
        (seen, shared.add(100).read_volatile(), shared.add(PAGE_BYTES + 100).read_volatile())
    };
    if seen != 0x5a || mine != 0x11 || other != 0x5a {
        return Err(format!(
            "template region: saw {seen:#x}, wrote and read {mine:#x}, next page {other:#x}"
        ));
    }
    let (reply, _) = msg::call(link, &[OP_CHECK_TEMPLATE, t, 0, 0], &[], &mut []).map_err(|e| e.name())?;
    if reply[0] != 0 {
        return Err(format!("{} bytes of the pager's template changed by our write", reply[0]));
    }
    // Only the pager may resolve faults in its regions.
    if sys::page_resolve(sys::getpid(), ZERO_REGION, 0, abi::pager::ZERO) != Err(Error::PermissionDenied) {
        return Err("a process resolved its own paged region".into());
    }
    Ok(())
}

/// Register a region that the pager refuses (or never answers) and touch it.
fn paged_refused(pager: Pid, op: u64) -> i32 {
    let Ok(link) = msg::open_link(pager, msg::Queue(protocols::pager::QUEUE)) else { return 1 };
    if let Err(why) = register(link, pager, op, REFUSED_REGION, 1, &[]) {
        println!("tchild: {why}");
        return 2;
    }
    // SAFETY: the pager refuses this page: the kernel ends the process.
    unsafe { (REFUSED_REGION as *const u8).read_volatile() as i32 }
}

fn pager_rights_checks() -> Result<(), alloc::string::String> {
    use alloc::format;
    // Our own queue 0, for being our own pager below.
    msg::open_queue(1, true).map_err(|e| format!("open_queue: {}", e.name()))?;
    let me = sys::getpid();
    let e = |r: Result<(), Error>, want: Error, what: &str| -> Result<(), alloc::string::String> {
        if r == Err(want) { Ok(()) } else { Err(format!("{what}: got {r:?}, expected {want:?}")) }
    };
    e(sys::set_pager(me, 0x5000_0001, PAGE_SIZE, me, 0), Error::InvalidArgument, "unaligned region")?;
    e(sys::set_pager(me, 0x5000_0000, 0, me, 0), Error::InvalidArgument, "empty region")?;
    e(sys::set_pager(me, 0x5000_0000, PAGE_SIZE, Pid(4242), 0), Error::NoSuchProcess, "no such pager")?;
    e(sys::set_pager(me, 0x5000_0000, PAGE_SIZE, me, 7), Error::BadQueue, "a pager queue that is not open")?;
    let text = pager_rights_checks as *const () as u64 & !(PAGE_SIZE - 1);
    e(sys::set_pager(me, text, PAGE_SIZE, me, 0), Error::InvalidArgument, "a region over mapped pages")?;
    e(sys::set_pager(Pid(4242), 0x5000_0000, PAGE_SIZE, me, 0), Error::NoSuchProcess, "a region of nobody")?;
    e(
        sys::page_resolve(me, 0x5000_0000, 0, abi::pager::ZERO),
        Error::BadAddress,
        "resolve outside any region",
    )?;
    // We are our own pager for one page: resolve it, then read it.
    sys::set_pager(me, 0x5000_0000, PAGE_SIZE, me, 0).map_err(|e| e.name())?;
    e(sys::page_resolve(me, 0x5000_0000, 0, 999), Error::InvalidArgument, "unknown flags")?;
    sys::page_resolve(me, 0x5000_0000, 0, abi::pager::ZERO).map_err(|e| e.name())?;
    // SAFETY: the page was just mapped (zero-filled, read-only).
    let v = unsafe { (0x5000_0000 as *const u64).read_volatile() };
    if v != 0 {
        return Err("a page resolved in advance is not there".into());
    }
    e(sys::set_pager(me, 0x5000_0000, PAGE_SIZE, me, 0), Error::InvalidArgument, "overlapping regions")
}

/// Make `count` kernel calls with random arguments (seeded, so a failure
/// repeats): every call number the kernel has, plus unknown ones, with
/// values chosen to hit edges — zero, small numbers, all ones, addresses in
/// our own memory, in the kernel, unmapped, just below the user end. Calls
/// that would end us or block for ever are left out; ReceiveData is always
/// non-blocking. The kernel must answer every one; we exit 0.
fn fuzz(count: u64, seed: u64) -> i32 {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut buffer = [0u8; 8192];
    let own = buffer.as_mut_ptr() as u64;
    let edges = [
        0,
        1,
        2,
        PAGE_SIZE,
        u64::MAX,
        u64::MAX - 1,
        u32::MAX as u64,
        own,
        own + 4093,
        0xffff_ffff_8010_0000,
        0x0000_4000_0000_0000,
        abi::layout::USER_END - 1,
        abi::layout::USER_ARGS_ADDR,
        main as *const () as u64,
    ];
    let skip = [
        Call::Exit,
        Call::Sleep,
        Call::WaitArmed,
        Call::Call,
        Call::ReplyWait,
        Call::DebugWrite,
        Call::Shutdown,
        Call::Kill,
        Call::Wait,
    ];
    for _ in 0..count {
        let number = next() % 64;
        if Call::from_raw(number).is_some_and(|c| skip.contains(&c)) {
            continue;
        }
        let mut arg = || {
            let r = next();
            if r % 3 == 0 { edges[(r / 3) as usize % edges.len()] } else { r % 64 }
        };
        let mut args = [arg(), arg(), arg(), arg(), arg(), arg()];
        if number == Call::ReceiveData as u64 {
            args[3] = abi::msg::NONBLOCKING;
        }
        let words = [next(), next(), next(), next()];
        let r = msg::raw(number, args, words);
        // Whatever the answer, it must be a value or a known error.
        if (r.rax as i64) < 0 && Error::from_raw(r.rax.wrapping_neg()).is_none() {
            println!("tchild fuzz: call {number} {args:?} returned {:#x}", r.rax);
            return 1;
        }
    }
    0
}

/// The blocking calls the plain fuzzer leaves out (`Sleep`, `Wait`,
/// `Kill`, `WaitArmed`, `Call`, `ReplyWait`, and `ReceiveData` that
/// waits), from helper processes that are killed (issue 16): `rounds`
/// times, start a `fuzz-helper` that makes random calls of every kind
/// but `Exit`, `Shutdown` and `DebugWrite` (with a link to our queue, so
/// that its `Call`s reach a process that answers some and its sends a
/// queue that fills), let it run for a millisecond, answer the calls it
/// left on our queue (their callers may be dead by then: stale reply
/// handles), kill it and wait for it. Each helper must end by exiting
/// 0 or by a kill (ours, or its own `Kill` of itself); a fault or any
/// other exit fails the role. Prints the rounds and the calls answered.
fn fuzz_blocking(rounds: u64, seed: u64) -> i32 {
    let Ok(queue) = msg::open_queue(16, true) else { return 90 };
    let me = sys::getpid();
    let mut buf = [0u8; MAX_DATA];
    let (mut answered, mut killed) = (0u64, 0u64);
    for round in 0..rounds {
        let helper_seed = seed ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let args = alloc::format!("fuzz-helper 64 {helper_seed} {} {}", me.0, queue.0);
        let helper = match sys::spawn("tchild", &args) {
            Ok(p) => p,
            Err(e) => {
                println!("tchild fuzz-blocking: cannot start a helper: {}", e.name());
                return 2;
            }
        };
        sys::sleep_ns(1_000_000);
        // Answer what arrived; a reply to a caller that is gone, or a
        // stale handle, must be refused, not crash anyone.
        while let Ok(Some(r)) = msg::try_receive(queue, &mut buf) {
            if r.kind == abi::msg::Kind::Call {
                let _ = msg::reply(r.reply, &[round, 0, 0, 0], &buf[..r.len.min(16)]);
                answered += 1;
            }
        }
        if sys::kill(helper).is_ok() {
            killed += 1;
        }
        match sys::wait(Some(helper)) {
            Ok((_, abi::ExitStatus::Exited(0) | abi::ExitStatus::Killed)) => {}
            other => {
                println!("tchild fuzz-blocking: helper {args:?} ended {other:?}");
                return 1;
            }
        }
    }
    println!(
        "tchild fuzz-blocking: {rounds} helpers, {killed} killed mid-run, {answered} of their calls answered"
    );
    0
}

/// One helper of [`fuzz_blocking`]: `calls` random kernel calls, blocking
/// ones included, with a link to `parent`'s `queue` and a queue of our
/// own among the small numbers the arguments pick from. `Sleep` is cut
/// to under 2 ms (a timeout, not a hang); everything else may block for
/// ever, and then the parent kills us.
fn fuzz_helper(calls: u64, seed: u64, parent: Pid, queue: u64) -> i32 {
    let _ = msg::open_queue(4, true);
    let _ = msg::open_link(parent, msg::Queue(queue as u32));
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut buffer = [0u8; 8192];
    let own = buffer.as_mut_ptr() as u64;
    let edges = [0, 1, 2, PAGE_SIZE, u64::MAX, own, own + 4093, 0xffff_ffff_8010_0000, parent.0];
    let never = [Call::Exit, Call::Shutdown, Call::DebugWrite];
    for _ in 0..calls {
        let number = next() % 72;
        if Call::from_raw(number).is_some_and(|c| never.contains(&c)) {
            continue;
        }
        let mut arg = || {
            let r = next();
            if r % 3 == 0 { edges[(r / 3) as usize % edges.len()] } else { r % 4 }
        };
        let mut args = [arg(), arg(), arg(), arg(), arg(), arg()];
        if number == Call::Sleep as u64 {
            args[0] %= 2_000_000;
        }
        let words = [next(), next(), next(), next()];
        let r = msg::raw(number, args, words);
        if (r.rax as i64) < 0 && Error::from_raw(r.rax.wrapping_neg()).is_none() {
            println!("tchild fuzz-helper: call {number} {args:?} returned {:#x}", r.rax);
            return 1;
        }
    }
    0
}

// ---- clients of servers that die (issue 5) ----

/// Argument `i` as a number (0 when missing or not a number).
fn num(args: &Args, i: usize) -> u64 {
    args.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
}

/// The server named by arguments 1 (its kernel pid) and 2 (its queue).
fn server_link(args: &Args) -> Result<msg::Link, Error> {
    msg::open_link(Pid(num(args, 1)), msg::Queue(num(args, 2) as u32))
}

/// `call-loop SERVER QUEUE OP WORD1 WORD2 [DATA]`: call the server with
/// `[OP, WORD1, WORD2, 0]` and the text DATA, over and over, until a call
/// fails. After the first answer (or a first failure) it tells its parent
/// (`server_deaths::LOOPING`), which then kills the server. Exits 0 only
/// when the calls ended with `DeadPeer` after at least one answer: the
/// server's death reached this client as an error, not a hang.
fn call_loop(args: &Args) -> i32 {
    use server_deaths::LOOPING;
    let Some(parent) = sys::getppid() else { return 90 };
    let Ok(to_parent) = msg::open_link(parent, msg::Queue(protocols::STARTER_QUEUE)) else { return 91 };
    let tell_parent = |looping: u64| msg::send(to_parent, &[LOOPING, looping, 0, 0]).is_ok();
    let link = match server_link(args) {
        Ok(l) => l,
        Err(e) => {
            println!("tchild call-loop: no link to the server: {}", e.name());
            tell_parent(0);
            return 2;
        }
    };
    let request = [num(args, 3), num(args, 4), num(args, 5), 0];
    let data = args.get(6).unwrap_or("").as_bytes();
    let mut reply = [0u8; MAX_DATA];
    let mut answers = 0u64;
    loop {
        match msg::call(link, &request, data, &mut reply) {
            Ok((words, _)) => {
                if let Err(e) = protocols::unix::result(words[0]) {
                    println!(
                        "tchild call-loop: answer {} is {}",
                        answers + 1,
                        protocols::unix::errno::name(e)
                    );
                    if answers == 0 {
                        tell_parent(0);
                    }
                    return 3;
                }
                answers += 1;
                if answers == 1 && !tell_parent(1) {
                    return 92;
                }
            }
            Err(Error::DeadPeer) if answers > 0 => return 0,
            Err(e) => {
                println!("tchild call-loop: call {} failed with {}", answers + 1, e.name());
                if answers == 0 {
                    tell_parent(0);
                }
                return 4;
            }
        }
    }
}

/// `call-once SERVER QUEUE OP WORD1 WORD2 DATA_BYTES`: one call that the
/// server keeps (a read of an empty pipe, a write to a full one, a read of
/// a terminal nobody types at), with DATA_BYTES bytes of data. Exits 0 when
/// the call failed with `DeadPeer`: the server died while holding it.
fn call_once(args: &Args) -> i32 {
    let Ok(link) = server_link(args) else { return 2 };
    let data = [0x5au8; MAX_DATA];
    let len = (num(args, 6) as usize).min(data.len());
    let mut reply = [0u8; MAX_DATA];
    match msg::call(link, &[num(args, 3), num(args, 4), num(args, 5), 0], &data[..len], &mut reply) {
        Err(Error::DeadPeer) => 0,
        Ok((words, n)) => {
            println!("tchild call-once: answered with {words:?} and {n} bytes, expected DeadPeer");
            1
        }
        Err(e) => {
            println!("tchild call-once: failed with {}, expected DeadPeer", e.name());
            3
        }
    }
}

/// `read-expect SERVER QUEUE HANDLE TEXT`: one `io::OP_READ` of HANDLE,
/// which must return exactly TEXT. Exits 0 if it did.
fn read_expect(args: &Args) -> i32 {
    let Ok(link) = server_link(args) else { return 2 };
    let want = args.get(4).unwrap_or("").as_bytes();
    let mut reply = [0u8; MAX_DATA];
    match msg::call(
        link,
        &[protocols::unix::io::OP_READ, num(args, 3), abi::msg::MAX_DATA_BYTES, 0],
        &[],
        &mut reply,
    ) {
        // The bytes came in the reply or through the lease on `reply`.
        Ok((words, _)) if words[0] == want.len() as u64 && reply.get(..want.len()) == Some(want) => 0,
        Ok((words, n)) => {
            println!("tchild read-expect: read gave {words:?} and {n} bytes, expected {} bytes", want.len());
            1
        }
        Err(e) => {
            println!("tchild read-expect: read failed with {}", e.name());
            3
        }
    }
}

/// `heap-touch`: a process whose heap the runner has the VM manager page.
/// It says hello with its queue, and after a go-ahead takes two heap pages
/// with `sbrk` and touches the first (served by vm); it tells its parent,
/// and after a second go-ahead touches the second. The runner kills vm
/// while that fault waits, so this process must end with a page fault
/// there; exit 0 means the touch returned. Nothing here allocates: the
/// heap's pages must be untouched until vm pages the region.
fn heap_touch() -> i32 {
    use abi::layout::PAGE_SIZE;
    use server_deaths::{HEAP_HELLO, HEAP_TOUCHED};
    let Some(parent) = sys::getppid() else { return 90 };
    let Ok(queue) = msg::open_queue(2, true) else { return 91 };
    let Ok(to_parent) = msg::open_link(parent, msg::Queue(protocols::STARTER_QUEUE)) else { return 92 };
    if msg::send(to_parent, &[HEAP_HELLO, queue.0 as u64, 0, 0]).is_err() {
        return 93;
    }
    if msg::receive_data(queue, &mut []).is_err() {
        return 94;
    }
    let Ok(first) = runtime::unix::sbrk(2 * PAGE_SIZE as i64) else { return 95 };
    let first = first as *mut u64;
    // SAFETY: sbrk gave this process these two pages of its heap region;
    // nothing else in it uses them (this role allocates nothing). The
    // first touch of each is a fault that its pager answers.
    let seen = unsafe {
        first.write_volatile(0x1234);
        first.read_volatile()
    };
    if seen != 0x1234 {
        return 96;
    }
    if msg::send(to_parent, &[HEAP_TOUCHED, 0, 0, 0]).is_err() {
        return 97;
    }
    if msg::receive_data(queue, &mut []).is_err() {
        return 98;
    }
    // SAFETY: as above, the second page.
    unsafe { first.add(PAGE_SIZE as usize / 8).write_volatile(1) };
    0
}

/// `proc-memory N`: `proc_memory` on our own slot before and after we
/// touch N pages at the top of our heap region (zero-filled by the kernel
/// on first touch for a process init spawns; far above anything the
/// allocator reaches): the heap and private counts must grow by exactly
/// N, and the name and pid be ours. Also its refusals: a slot past the
/// table, a buffer in the kernel or in our code. Exit 0, or a code that
/// says which check failed.
fn proc_memory_counts(n: u64) -> i32 {
    use abi::layout::{USER_HEAP_BASE, USER_HEAP_MAX_BYTES};
    use abi::proc_memory as pm;
    let me = sys::getpid();
    let slot = me.slot() as u64;
    let word = |r: &[u8; pm::RECORD_BYTES], i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&r[i * 8..i * 8 + 8]);
        u64::from_le_bytes(w)
    };
    let Ok(Some((pid, before))) = sys::proc_memory(slot) else { return 10 };
    if pid != me {
        return 11;
    }
    let top = USER_HEAP_BASE + USER_HEAP_MAX_BYTES;
    for i in 1..=n {
        // SAFETY: a page of our heap region that nothing else uses (the
        // allocator grows from its bottom, and a test child's heap stays
        // far below its top); the kernel maps it zero-filled on first touch.
        unsafe { ((top - i * PAGE_SIZE) as *mut u8).write_volatile(1) };
    }
    let Ok(Some((_, after))) = sys::proc_memory(slot) else { return 12 };
    if word(&after, pm::HEAP) != word(&before, pm::HEAP) + n {
        println!(
            "tchild: proc_memory heap pages {} then {}, touched {n}",
            word(&before, pm::HEAP),
            word(&after, pm::HEAP)
        );
        return 13;
    }
    if word(&after, pm::PRIVATE) != word(&before, pm::PRIVATE) + n {
        return 14;
    }
    if !after[pm::WORDS * 8..].starts_with(b"tchild\0") {
        return 15;
    }
    let call =
        |a0: u64, a1: u64, a2: u64| abi::decode_return(sys::raw(Call::ProcMemory as u64, a0, a1, a2, 0, 0).0);
    let mut record = [0u8; pm::RECORD_BYTES];
    let buf = record.as_mut_ptr() as u64;
    if call(abi::PROCESS_SLOTS as u64, buf, pm::RECORD_BYTES as u64) != Err(Error::InvalidArgument) {
        return 16;
    }
    if call(slot, 0xffff_ffff_8010_0000, pm::RECORD_BYTES as u64) != Err(Error::BadAddress) {
        return 17;
    }
    let text = proc_memory_counts as *const () as u64;
    if call(slot, text, pm::RECORD_BYTES as u64) != Err(Error::BadAddress) {
        return 18;
    }
    0
}

fn call_raw(n: u64) -> Result<u64, Error> {
    abi::decode_return(sys::raw(n, 0, 0, 0, 0, 0).0)
}

/// Lease test pattern: byte `i` of a lent send buffer.
fn lease_pattern(i: usize) -> u8 {
    (i * 7 + i / 251) as u8
}

/// `lease-call SERVER QUEUE SEND_BYTES RECV_BYTES [same|any]`: one call
/// lending a patterned send buffer and a receive buffer, both starting at
/// a page boundary; the server (the runner) checks what it reads and
/// writes `!pattern` (or, with `same`, the pattern itself: another
/// caller's send buffer moved by `lease_copy`) into the receive buffer,
/// and answers with word 0 = bytes it wrote. Exits 0 when the receive
/// buffer holds exactly that.
fn lease_call(args: &Args) -> i32 {
    let Ok(link) = server_link(args) else { return 2 };
    let (send_len, recv_len) = (num(args, 3) as usize, num(args, 4) as usize);
    let is_same = args.as_str().split_whitespace().nth(5) == Some("same");
    // `any`: the server writes what it likes (the lease fuzzer); only an
    // answer is expected.
    let is_any = args.as_str().split_whitespace().nth(5) == Some("any");
    let page = PAGE_SIZE as usize;
    let mut send_store = alloc::vec![0u8; send_len + page];
    let mut recv_store = alloc::vec![0u8; recv_len + page];
    let aligned = |p: *const u8| (page - p as usize % page) % page;
    let (s0, r0) = (aligned(send_store.as_ptr()), aligned(recv_store.as_ptr()));
    let send = &mut send_store[s0..s0 + send_len];
    send.iter_mut().enumerate().for_each(|(i, b)| *b = lease_pattern(i));
    let recv = &mut recv_store[r0..r0 + recv_len];
    match msg::call(link, &[1, 0, 0, 0], send, recv) {
        Ok(_) if is_any => 0,
        Ok((words, _)) => {
            let written = words[0] as usize;
            let want = |i: usize| if is_same { lease_pattern(i) } else { !lease_pattern(i) };
            let ok = recv[..written].iter().enumerate().all(|(i, &b)| b == want(i))
                && recv[written..].iter().all(|&b| b == 0);
            // The send buffer is ours again and unchanged, lent or not.
            let kept = send.iter().enumerate().all(|(i, &b)| b == lease_pattern(i));
            send.fill(0xee); // a write after the call never reaches the other side
            if ok && kept {
                0
            } else {
                println!("tchild lease-call: the buffers do not hold what they should ({ok}, {kept})");
                1
            }
        }
        Err(e) => {
            println!("tchild lease-call: {}", e.name());
            3
        }
    }
}

/// Bytes a `lease-call-wrapping` caller keeps in its data segment, which
/// a lease must never reach.
static KEPT: [core::sync::atomic::AtomicU8; 64] = [const { core::sync::atomic::AtomicU8::new(0) }; 64];

/// `lease-call-wrapping SERVER QUEUE`: one call lending a send and a
/// receive buffer of `MAX_LEASE_BYTES` whose ends wrap past 2^64, placed
/// so that offset `word 1` of either, wrapped, is [`KEPT`] (a writable
/// page of this process). The server must be refused both; exits 0 when
/// the call is answered and `KEPT` is still zeros.
fn lease_call_wrapping(args: &Args) -> i32 {
    let Ok(link) = server_link(args) else { return 2 };
    let kept = KEPT.as_ptr() as u64;
    let offset = 8 << 20; // past `kept`, within a lease's length
    if kept >= offset {
        println!("tchild lease-call-wrapping: its data lies at {kept:#x}, too high for the lease to wrap");
        return 4;
    }
    let buf = kept.wrapping_sub(offset);
    let len = abi::lease::MAX_LEASE_BYTES;
    let raw = msg::raw(Call::Call as u64, [link.0 as u64, buf, len, buf, len, 0], [1, offset, 0, 0]);
    if abi::decode_return(raw.rax).is_err() {
        println!("tchild lease-call-wrapping: the call failed: {:#x}", raw.rax);
        return 3;
    }
    if KEPT.iter().any(|b| b.load(core::sync::atomic::Ordering::Relaxed) != 0) {
        println!("tchild lease-call-wrapping: a lease reached memory it did not lend");
        return 1;
    }
    0
}

/// Every device call refused to a process without `rights::DEVICES`.
fn device_calls_refused() -> i32 {
    let base = abi::layout::USER_DEVICE_MAP_BASE;
    let host_bridge = sys::pci_address(0, 0, 0);
    let results = [
        ("pci_config_read", sys::pci_config_read(host_bridge, 0, 4).map(|_| ())),
        ("pci_config_write", sys::pci_config_write(host_bridge, 4, 2, 0)),
        ("pci_claim", sys::pci_claim(host_bridge)),
        ("map_mmio", sys::map_mmio(host_bridge, 0, base).map(|_| ())),
        ("dma_alloc", sys::dma_alloc(base, PAGE_SIZE).map(|_| ())),
        ("msix_route", sys::msix_route(host_bridge, 0, 0).map(|_| ())),
        ("msix_release", sys::msix_release(host_bridge, 0)),
    ];
    let mut failed = 0;
    for (what, r) in results {
        if r != Err(Error::PermissionDenied) {
            println!("tchild: {what} without the right gave {r:?}");
            failed = 1;
        }
    }
    failed
}

fn check(ok: bool, what: &str) -> Result<(), alloc::string::String> {
    if ok { Ok(()) } else { Err(alloc::format!("not so: {what}")) }
}

/// The device calls of a driver (`rights::DEVICES`): PCI configuration
/// space, claims, BARs, DMA memory, each bad argument refused by name.
fn device_calls() -> Result<(), alloc::string::String> {
    use alloc::format;
    let e = |r: Result<u64, Error>, want: Error, what: &str| -> Result<(), alloc::string::String> {
        if r == Err(want) { Ok(()) } else { Err(format!("{what}: got {r:?}, expected {want:?}")) }
    };
    let host_bridge = sys::pci_address(0, 0, 0);
    let id = sys::pci_config_read(host_bridge, 0, 4).map_err(|e| format!("read 0:0.0: {}", e.name()))?;
    check(id & 0xffff != 0xffff, "a host bridge answers at 0:0.0")?;
    let half = sys::pci_config_read(host_bridge, 0, 2).map_err(|e| e.name())?;
    check(half == id & 0xffff, "a 2-byte read is the low half of the dword")?;
    let empty = sys::pci_config_read(sys::pci_address(0, 31, 7), 0, 4).map_err(|e| e.name())?;
    check(empty == u32::MAX, "an empty slot reads all ones")?;
    let r = |off: u16, w: u8| sys::pci_config_read(host_bridge, off, w).map(u64::from);
    e(r(1, 2), Error::InvalidArgument, "a misaligned read")?;
    e(r(0, 3), Error::InvalidArgument, "a 3-byte read")?;
    e(r(256, 4), Error::InvalidArgument, "a read past the configuration space")?;
    let raw = abi::decode_return(sys::raw(abi::Call::PciConfigRead as u64, 1 << 16, 0, 4, 0, 0).0);
    e(raw, Error::InvalidArgument, "an address past bus 255")?;
    let w = |off: u16, v: u32| sys::pci_config_write(host_bridge, off, 4, v).map(|()| 0);
    e(w(0x04, 0), Error::PermissionDenied, "a write to a function not claimed")?;
    e(sys::pci_claim(sys::pci_address(0, 31, 7)).map(|()| 0), Error::NoSuchDevice, "claim of an empty slot")?;
    sys::pci_claim(host_bridge).map_err(|e| format!("claim the host bridge: {}", e.name()))?;
    e(w(0x10, 0), Error::PermissionDenied, "a write to a BAR")?;
    e(w(0x30, 0), Error::PermissionDenied, "a write to the expansion ROM BAR")?;
    e(w(0x00, 0), Error::PermissionDenied, "a write to the ids")?;
    let base = abi::layout::USER_DEVICE_MAP_BASE;
    e(sys::map_mmio(host_bridge, 0, base), Error::InvalidArgument, "a BAR the host bridge does not have")?;
    e(sys::map_mmio(host_bridge, 6, base), Error::InvalidArgument, "BAR 6")?;
    // Another driver cannot take a function this one holds; it can once
    // the holder has ended.
    let other = sys::spawn_with_rights("tchild", "pci-claim 0", abi::PRIORITY_INHERIT, abi::rights::DEVICES)
        .map_err(|e| format!("spawn: {}", e.name()))?;
    let (_, status) = sys::wait(Some(other)).map_err(|e| e.name())?;
    check(status == abi::ExitStatus::Exited(Error::InUse as u32), "a second driver of the same function")?;
    // DMA memory: contiguous, zeroed, below 4 GiB, where it was asked.
    e(sys::dma_alloc(base, 0), Error::InvalidArgument, "no DMA bytes")?;
    e(sys::dma_alloc(base, 100), Error::InvalidArgument, "a part of a page")?;
    e(sys::dma_alloc(base + 1, PAGE_SIZE), Error::BadAddress, "a misaligned address")?;
    e(sys::dma_alloc(USER_END, PAGE_SIZE), Error::BadAddress, "a kernel address")?;
    e(sys::dma_alloc(base, 1 << 40), Error::InvalidArgument, "more than a DMA region may have")?;
    let len = 4 * abi::layout::PAGE_SIZE;
    let pa = sys::dma_alloc(base, len).map_err(|e| format!("dma_alloc: {}", e.name()))?;
    check(pa != 0 && pa + len <= 1 << 32 && pa % abi::layout::PAGE_SIZE == 0, "DMA memory is below 4 GiB")?;
    // SAFETY: the kernel just mapped `len` writable bytes at `base` for
    // this process alone.
    let memory = unsafe { core::slice::from_raw_parts_mut(base as *mut u8, len as usize) };
    check(memory.iter().all(|&b| b == 0), "DMA memory comes zeroed")?;
    memory.fill(0x5a);
    e(sys::dma_alloc(base, PAGE_SIZE), Error::InvalidArgument, "over memory already mapped")?;
    Ok(())
}

/// A virtio function on bus 0 with an MSI-X capability (the ktest boot
/// attaches a virtio-net card that no driver takes): its address, the
/// capability's offset, the table's entries, BAR and offset there.
fn msix_function() -> Option<(u64, u16, u16, u8, u64)> {
    for device in 0..32u8 {
        let address = sys::pci_address(0, device, 0);
        let read = |offset: u16| sys::pci_config_read(address, offset, 4).unwrap_or(u32::MAX);
        if read(0) & 0xffff != 0x1af4 || read(0x04) & (1 << 20) == 0 {
            continue;
        }
        let mut pointer = (read(0x34) & 0xfc) as u16;
        for _ in 0..48 {
            if pointer < 0x40 {
                break;
            }
            let header = read(pointer);
            if header & 0xff == 0x11 {
                let table = read(pointer + 4);
                let entries = ((header >> 16) & 0x7ff) as u16 + 1;
                return Some((address, pointer, entries, (table & 7) as u8, (table & !7) as u64));
            }
            pointer = ((header >> 8) & 0xfc) as u16;
        }
    }
    None
}

/// MSI-X message control's Enable and Function Mask bits (PCI Local Bus
/// 3.0 §6.8.2.3), in the 16 bits at the capability's offset + 2.
const MSIX_ENABLE: u32 = 1 << 15;
const MSIX_FUNCTION_MASK: u32 = 1 << 14;

/// `msix_route` and `msix_release` on the virtio function
/// ([`msix_function`]): refused before the claim, for a bad queue, entry
/// and release; routed once per entry (the same vector when routed
/// again); MSI-X on with the function unmasked; its control refused to
/// the driver; the table's page left out of the BAR's mapping; a route
/// and release many more times than the pool has vectors, each given the
/// same vector (nothing leaks). Returns entry 0's vector.
fn msix_calls() -> Result<u8, alloc::string::String> {
    use alloc::format;
    let (address, capability, entries, bar, table_offset) =
        msix_function().ok_or("no virtio function with MSI-X on bus 0")?;
    let e = |r: Result<u8, Error>, want: Error, what: &str| -> Result<(), alloc::string::String> {
        if r == Err(want) { Ok(()) } else { Err(format!("{what}: got {r:?}, expected {want:?}")) }
    };
    let queue = msg::open_queue(4, true).map_err(|e| format!("open a queue: {}", e.name()))?;
    e(sys::msix_route(address, 0, queue.0), Error::PermissionDenied, "a route of a function not claimed")?;
    sys::pci_claim(address).map_err(|e| format!("claim: {}", e.name()))?;
    e(sys::msix_route(address, 0, queue.0 + 5), Error::BadQueue, "a route onto an unopened queue")?;
    e(sys::msix_route(address, entries, queue.0), Error::InvalidArgument, "an entry past the table")?;
    let not_routed = sys::msix_release(address, 0).map(|()| 0);
    e(not_routed, Error::InvalidArgument, "a release of an entry not routed")?;
    let control = || sys::pci_config_read(address, capability + 2, 2).unwrap_or(0);
    check(control() & MSIX_ENABLE == 0, "MSI-X is off before a route")?;
    let vector = sys::msix_route(address, 0, queue.0).map_err(|e| format!("route entry 0: {}", e.name()))?;
    check(vector >= 0x40, "the vector is one of the kernel's MSI-X pool")?;
    check(sys::msix_route(address, 0, queue.0) == Ok(vector), "an entry routed again keeps its vector")?;
    let second = sys::msix_route(address, 1, queue.0).map_err(|e| format!("route entry 1: {}", e.name()))?;
    check(second != vector, "two entries get two vectors")?;
    check(
        control() & (MSIX_ENABLE | MSIX_FUNCTION_MASK) == MSIX_ENABLE,
        "MSI-X is on, the function unmasked",
    )?;
    let write = sys::pci_config_write(address, capability + 2, 2, 0).map(|()| 0);
    e(write, Error::PermissionDenied, "a driver's write to MSI-X's message control")?;
    check(control() & MSIX_ENABLE != 0, "MSI-X stays on after the refused write")?;
    // The table's page is not mapped: DMA memory can go there.
    let base = abi::layout::USER_DEVICE_MAP_BASE;
    let len = sys::map_mmio(address, bar, base).map_err(|e| format!("map the table's BAR: {}", e.name()))?;
    check(table_offset < len, "the table lies in its BAR")?;
    let table_page = base + (table_offset & !(PAGE_SIZE - 1));
    sys::dma_alloc(table_page, PAGE_SIZE).map_err(|e| {
        format!("the MSI-X table's page was mapped to the driver (dma_alloc there: {})", e.name())
    })?;
    sys::msix_release(address, 1).map_err(|e| format!("release entry 1: {}", e.name()))?;
    let again = sys::msix_release(address, 1).map(|()| 0);
    e(again, Error::InvalidArgument, "a second release of the same entry")?;
    check(control() & MSIX_ENABLE != 0, "MSI-X stays on while entry 0 is routed")?;
    for round in 0..2 * 32 {
        let got = sys::msix_route(address, 1, queue.0).map_err(|e| format!("route {round}: {}", e.name()))?;
        check(got == second, "a freed vector is given again")?;
        sys::msix_release(address, 1).map_err(|e| format!("release {round}: {}", e.name()))?;
    }
    Ok(vector)
}

/// PCI command register bits (PCI Local Bus 3.0 §6.2.2), as the runner's
/// test reads them.
const PCI_COMMAND: u16 = 0x04;
const PCI_BUS_MASTER: u32 = 1 << 2;
const PCI_INTERRUPT_DISABLE: u32 = 1 << 10;

/// Claim function `device.function` of bus 0, take a page of DMA memory
/// (what the kernel must not free while the device may still write it)
/// and turn bus mastering on, INTx on; check that the function holds it.
fn bus_master(device: u8, function: u8) -> Result<(), alloc::string::String> {
    use alloc::format;
    let address = sys::pci_address(0, device, function);
    sys::pci_claim(address).map_err(|e| format!("claim 0:{device}.{function}: {}", e.name()))?;
    sys::dma_alloc(abi::layout::USER_DEVICE_MAP_BASE, PAGE_SIZE)
        .map_err(|e| format!("dma_alloc: {}", e.name()))?;
    let command = sys::pci_config_read(address, PCI_COMMAND, 2).map_err(|e| e.name())?;
    let on = (command | PCI_BUS_MASTER) & !PCI_INTERRUPT_DISABLE;
    sys::pci_config_write(address, PCI_COMMAND, 2, on).map_err(|e| format!("write command: {}", e.name()))?;
    let now = sys::pci_config_read(address, PCI_COMMAND, 2).map_err(|e| e.name())?;
    check(now & PCI_BUS_MASTER != 0, "bus mastering is on after the driver turned it on")?;
    check(now & PCI_INTERRUPT_DISABLE == 0, "INTx is on after the driver turned it on")
}

/// Not the server of foreign process `pid`: every foreign call on it is
/// refused, and its memory at `addr` stays out of reach.
fn foreign_peek(pid: Pid, addr: u64) -> i32 {
    let mut buf = [0u8; 8];
    let refused = |r: Result<u64, Error>| r == Err(Error::PermissionDenied);
    let checks = [
        ("foreign_read", refused(sys::foreign_read(pid, addr, &mut buf))),
        ("foreign_write", refused(sys::foreign_write(pid, addr, &buf))),
        ("foreign_resume", refused(sys::foreign_resume(pid, 0).map(|()| 0))),
        ("foreign_regs", refused(sys::foreign_regs(pid).map(|_| 0))),
        ("foreign_fork", refused(sys::foreign_fork(pid).map(|p| p.0))),
        ("foreign_attach", refused(sys::foreign_attach(pid, 0).map(|()| 0))),
    ];
    let mut failed = 0;
    for (what, ok) in checks {
        if !ok {
            println!("tchild foreign-peek: {what} on {:#x} was not refused", pid.0);
            failed = 1;
        }
    }
    failed
}

/// `rw-share-pager`'s first message to its parent: word 1 its queue.
const RW_READY: u64 = 0x7277_0001;
/// Where `rw-dead-pager` maps the other pager page: outside the
/// read-window area.
const RW_OTHER_REGION: u64 = 0x5200_0000;
/// The bytes of the two pages the pager shares.
const RW_PATTERN: u8 = 0xa5;

/// A pager sharing two pages of its own, writable in place
/// (`pager::SHARE | SHARED | WRITABLE`, as `ext2fs` shares its read-window
/// slot pages): one for faults in the read-window area, the other for any
/// other address. Runs until it is killed.
fn rw_share_pager(parent: Pid, parent_queue: u64) -> i32 {
    let Ok(queue) = msg::open_queue(8, true) else { return 2 };
    let pages = alloc::vec![RW_PATTERN; 3 * PAGE_BYTES];
    let first = (pages.as_ptr() as u64 + PAGE_SIZE - 1) & !(PAGE_SIZE - 1);
    let Ok(link) = msg::open_link(parent, msg::Queue(parent_queue as u32)) else { return 3 };
    if msg::send(link, &[RW_READY, queue.0 as u64, 0, 0]).is_err() {
        return 4;
    }
    let window_area = abi::layout::USER_READ_WINDOW_PAGES_BASE
        ..abi::layout::USER_READ_WINDOW_PAGES_BASE + abi::layout::USER_READ_WINDOW_PAGES * PAGE_SIZE;
    loop {
        let Ok(r) = msg::receive_data(queue, &mut []) else { continue };
        if r.kind != abi::msg::Kind::PageFault {
            continue;
        }
        let (pid, address) = (Pid(r.message[0]), r.message[1]);
        let src = if window_area.contains(&address) { first } else { first + PAGE_SIZE };
        let flags = abi::pager::SHARE | abi::pager::SHARED | abi::pager::WRITABLE;
        if sys::page_resolve(pid, address, src, flags).is_err() {
            let _ = sys::page_resolve(pid, address, 0, abi::pager::FAIL);
        }
    }
}

/// A dead pager's shared pages in the read-window area read as zeros
/// (`Kernel::zero_read_windows_of`: a dead disk file manager's slots must
/// not look current, docs/filesystem.md "Positional I/O and a dead
/// manager's window"), and stay mapped and writable; a page it shared
/// elsewhere keeps its bytes.
fn rw_dead_pager() -> Result<(), alloc::string::String> {
    use alloc::format;
    let window = abi::layout::USER_READ_WINDOW_PAGES_BASE;
    let queue = msg::open_queue(4, true).map_err(|e| format!("open_queue: {}", e.name()))?;
    let me = sys::getpid();
    let pager = sys::spawn("tchild", &format!("rw-share-pager {} {}", me.0, queue.0))
        .map_err(|e| format!("spawn the pager: {}", e.name()))?;
    let r = msg::receive_data(queue, &mut []).map_err(|e| format!("receive: {}", e.name()))?;
    if r.sender != pager || r.message[0] != RW_READY {
        return Err(format!("not the pager's ready message: {:?}", r.message));
    }
    let pager_queue = r.message[1] as u32;
    for start in [window, RW_OTHER_REGION] {
        sys::set_pager(me, start, PAGE_SIZE, pager, pager_queue)
            .map_err(|e| format!("set_pager {start:#x}: {}", e.name()))?;
    }
    let word = |base: u64, i: usize| {
        // SAFETY: `base` is one of this process's two pager regions of
        // one page, `i` below the page's words; a first touch faults the
        // page in from the pager, which maps its page there.
        unsafe { ((base as *const u64).add(i)).read_volatile() }
    };
    let put = |base: u64, i: usize, v: u64| {
        // SAFETY: as in `word`; the pages are mapped writable.
        unsafe { ((base as *mut u64).add(i)).write_volatile(v) }
    };
    let pattern = u64::from_ne_bytes([RW_PATTERN; 8]);
    if word(window, 0) != pattern || word(RW_OTHER_REGION, 0) != pattern {
        return Err(format!(
            "the shared pages read {:#x} and {:#x}",
            word(window, 0),
            word(RW_OTHER_REGION, 0)
        ));
    }
    put(window, 1, 7);
    put(RW_OTHER_REGION, 1, 9);
    sys::kill(pager).map_err(|e| format!("kill the pager: {}", e.name()))?;
    sys::wait(Some(pager)).map_err(|e| format!("wait for the pager: {}", e.name()))?;
    let words = PAGE_BYTES / 8;
    if let Some(i) = (0..words).find(|&i| word(window, i) != 0) {
        return Err(format!("the dead pager's read-window page: word {i} is {:#x}, not 0", word(window, i)));
    }
    if let Some(i) = (0..words).find(|&i| word(RW_OTHER_REGION, i) != if i == 1 { 9 } else { pattern }) {
        return Err(format!(
            "the dead pager's other page changed: word {i} is {:#x}",
            word(RW_OTHER_REGION, i)
        ));
    }
    // Still mapped and writable: no fault, and a write reads back.
    put(window, 3, 11);
    if word(window, 3) != 11 {
        return Err(alloc::string::String::from("a write to the zeroed page did not read back"));
    }
    Ok(())
}
