//! Foreign processes (kernel/src/foreign.rs): the runner serves two copies
//! of `tforeign`, a program that is not a Ridgeback program, and checks
//! that its `syscall`s arrive as messages carrying its registers, that
//! every register but rax (and rcx, r11, as `syscall` defines them) comes
//! back as it was, x87/SSE state included, that Ridgeback kernel-call
//! numbers reach the runner and not the kernel, and that a process that is
//! not its server can neither touch its memory nor resume it; and that
//! its server can take its pages back and make them read-only
//! (`foreign_unmap`, `foreign_protect`: Linux's munmap and mprotect).

use crate::foreign_words::*;
use crate::util::{TestResult, check, expect_status};
use abi::msg::Kind;
use abi::{Call, Error, ExitStatus, Pid};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use runtime::msg::{self, Queue};
use runtime::sys;

/// The bytes of boot module `name`.
pub fn module(name: &str) -> Result<Vec<u8>, String> {
    for index in 0.. {
        let mut got = [0u8; 64];
        let (size, len) =
            sys::module_info(index, &mut got).map_err(|e| format!("no module {name}: {}", e.name()))?;
        if &got[..len] != name.as_bytes() {
            continue;
        }
        let mut bytes = alloc::vec![0u8; size as usize];
        let mut at = 0;
        while at < bytes.len() {
            at += sys::module_read(index, at as u64, &mut bytes[at..]).map_err(|e| e.name())?;
        }
        return Ok(bytes);
    }
    Err(format!("no module {name}"))
}

/// A stopped `tforeign` with `args`, foreign and served by the runner on
/// `queue`.
fn start(elf: &[u8], args: &str, queue: Queue) -> Result<Pid, String> {
    let pid = sys::proc_create("tforeign").map_err(|e| format!("proc_create: {}", e.name()))?;
    let mut name = [0u8; 32];
    name[..8].copy_from_slice(b"tforeign");
    sys::proc_exec(pid, elf, args.as_bytes(), &name).map_err(|e| format!("proc_exec: {}", e.name()))?;
    sys::foreign_attach(pid, queue.0).map_err(|e| format!("foreign_attach: {}", e.name()))?;
    Ok(pid)
}

/// The next foreign call on `queue`: (who, m0..m3).
fn next_call(queue: Queue) -> Result<(Pid, [u64; 4]), String> {
    let r = msg::receive_data(queue, &mut []).map_err(|e| format!("receive: {}", e.name()))?;
    check(r.kind == Kind::Foreign, "the message is a foreign call")?;
    Ok((r.sender, r.message))
}

fn expect_call(queue: Queue, pid: Pid, nr: u64) -> Result<[u64; 4], String> {
    let (who, words) = next_call(queue)?;
    if who != pid || words[0] != nr {
        return Err(format!("expected call {nr} from {:#x}, got {} from {:#x}", pid.0, words[0], who.0));
    }
    Ok(words)
}

fn resume(pid: Pid, result: u64) -> TestResult {
    sys::foreign_resume(pid, result).map_err(|e| format!("foreign_resume: {}", e.name()))
}

pub fn foreign_calls_are_messages() -> TestResult {
    let elf = module("tforeign")?;
    let queue = msg::open_queue(8, false).map_err(|e| e.name())?;
    let result = serve_two(&elf, queue);
    msg::close_queue(queue).map_err(|e| e.name())?;
    result
}

fn serve_two(elf: &[u8], queue: Queue) -> TestResult {
    // Two copies whose xmm0 differs (its argument length): both wait in
    // their first call before either goes on, so they run in turn.
    let (a, b) = (start(elf, "a", queue)?, start(elf, "bbbbbbb", queue)?);
    sys::proc_start(a).map_err(|e| e.name())?;
    sys::proc_start(b).map_err(|e| e.name())?;
    let mut waiting = Vec::new();
    for _ in 0..2 {
        let (who, words) = next_call(queue)?;
        check(words == [NR_ECHO, V_RDI, V_RSI, V_RDX], "m0..m3 are rax, rdi, rsi, rdx")?;
        let regs = sys::foreign_regs(who).map_err(|e| format!("foreign_regs: {}", e.name()))?;
        check(
            (regs.rbx, regs.rbp, regs.r8, regs.r9, regs.r10, regs.r12, regs.r15)
                == (V_RBX, V_RBP, V_R8, V_R9, V_R10, V_R12, V_R15),
            "foreign_regs has every register",
        )?;
        check(regs.rcx == regs.rip, "rcx reads as the return address")?;
        waiting.push(who);
    }
    check(waiting.contains(&a) && waiting.contains(&b), "both copies called")?;
    // One copy resumed at a time, so that the next message on the queue is
    // that copy's (resumed together, on several CPUs either may come first).
    for (pid, args_len) in [(a, 1u64), (b, 7)] {
        resume(pid, ECHO_RESULT)?;
        let words = expect_call(queue, pid, NR_REPORT)?;
        let mut bytes = [0u8; REPORT_WORDS * 8];
        sys::foreign_read(pid, words[1], &mut bytes).map_err(|e| format!("foreign_read: {}", e.name()))?;
        let w: Vec<u64> = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
        let [
            rax,
            rbx,
            rcx,
            rdx,
            rsi,
            rdi,
            rbp,
            r8,
            r9,
            r10,
            r11,
            r12,
            r13,
            r14,
            r15,
            xmm0,
            after,
            flags,
            _rsp,
        ] = w[..]
        else {
            return Err(String::from("report length"));
        };
        check(rax == ECHO_RESULT, "rax holds the server's result")?;
        check(
            [rbx, rdx, rsi, rdi, rbp, r8, r9, r10, r12, r13, r14, r15]
                == [V_RBX, V_RDX, V_RSI, V_RDI, V_RBP, V_R8, V_R9, V_R10, V_R12, V_R13, V_R14, V_R15],
            "every other general register is preserved",
        )?;
        check(rcx == after && r11 == flags, "rcx and r11 hold rip and rflags, as syscall defines")?;
        check(xmm0 == args_len, &format!("xmm0 is preserved per process ({xmm0} for {args_len})"))?;
        // The server writes its memory; the process need not know.
        sys::foreign_write(pid, words[1], &[0x5a; 8]).map_err(|e| format!("foreign_write: {}", e.name()))?;
        let mut back = [0u8; 8];
        sys::foreign_read(pid, words[1], &mut back).map_err(|e| e.name())?;
        check(back == [0x5a; 8], "foreign_write reaches the process's memory")?;
        // Bad input to the server's calls.
        check(sys::foreign_read(pid, 0, &mut back) == Err(Error::BadAddress), "an unmapped address")?;
        let mut big = alloc::vec![0u8; abi::foreign::MAX_COPY_BYTES as usize + 1];
        check(sys::foreign_read(pid, words[1], &mut big) == Err(Error::InvalidArgument), "too long a copy")?;
        let bad_fs = abi::foreign::Regs { fs_base: abi::layout::USER_END, ..Default::default() };
        check(sys::foreign_resume_regs(pid, &bad_fs) == Err(Error::InvalidArgument), "a kernel FS base")?;
        // Another process is not its server.
        expect_status(&format!("foreign-peek {} {}", pid.0, words[1]), ExitStatus::Exited(0))?;
    }
    // A Ridgeback kernel-call number is one more message: the process
    // neither learns its pid, nor exits, nor powers the machine off.
    for pid in [a, b] {
        resume(pid, 0)?;
        expect_call(queue, pid, Call::GetPid as u64)?;
        resume(pid, 0)?;
        let words = expect_call(queue, pid, Call::Exit as u64)?;
        check(words[1] == 77, "exit's argument arrives")?;
        resume(pid, 0)?;
        expect_call(queue, pid, Call::Shutdown as u64)?;
        resume(pid, 0)?;
        expect_call(queue, pid, NR_DONE)?;
        sys::kill(pid).map_err(|e| e.name())?;
        let (_, status) = sys::wait(Some(pid)).map_err(|e| e.name())?;
        check(status == ExitStatus::Killed, "it ends only when killed")?;
        check(sys::foreign_resume(pid, 0) == Err(Error::NoSuchProcess), "a stale pid")?;
    }
    Ok(())
}

/// The runner's calls on a process that is not foreign, or not its child.
pub fn foreign_rights() -> TestResult {
    let me = sys::getpid();
    check(sys::foreign_resume(me, 0) == Err(Error::PermissionDenied), "resume a non-foreign process")?;
    check(sys::foreign_attach(me, 0) == Err(Error::PermissionDenied), "attach oneself")?;
    let elf = module("tforeign")?;
    let queue = msg::open_queue(4, false).map_err(|e| e.name())?;
    let pid = start(&elf, "", queue)?;
    let attached_twice = sys::foreign_attach(pid, queue.0) == Err(Error::InUse);
    let stopped_resume = sys::foreign_resume(pid, 0) == Err(Error::InvalidArgument);
    sys::kill(pid).map_err(|e| e.name())?;
    sys::wait(Some(pid)).map_err(|e| e.name())?;
    msg::close_queue(queue).map_err(|e| e.name())?;
    check(attached_twice, "attaching twice")?;
    check(stopped_resume, "a result for a call never made")
}

/// `foreign_fpu`: the server reads the waiting process's x87/SSE image
/// (xmm0 as `tforeign` set it, MXCSR's default), loads a changed one
/// (the process sees the new xmm0 when it goes on), and a MXCSR with
/// reserved bits is loaded without them (so the kernel's `fxrstor`
/// cannot fault). Only the server may.
pub fn foreign_fpu_state() -> TestResult {
    const XMM0_AT: usize = 160;
    const MXCSR_AT: usize = abi::foreign::FPU_MXCSR_AT;
    let me = sys::getpid();
    check(sys::foreign_fpu(me).err() == Some(Error::PermissionDenied), "the FPU of a non-foreign process")?;
    let elf = module("tforeign")?;
    let queue = msg::open_queue(4, false).map_err(|e| e.name())?;
    let pid = start(&elf, "abc", queue)?;
    let result = fpu_of(pid, queue, XMM0_AT, MXCSR_AT);
    let _ = sys::kill(pid);
    let _ = sys::wait(Some(pid));
    msg::close_queue(queue).map_err(|e| e.name())?;
    result
}

/// `foreign_unmap` and `foreign_protect` on a stopped `tforeign`: a heap
/// page written, taken back, reads as a fresh zero page; bad ranges and
/// callers that are not the server are refused.
pub fn foreign_unmap_and_protect() -> TestResult {
    let elf = module("tforeign")?;
    let queue = msg::open_queue(4, false).map_err(|e| e.name())?;
    let pid = start(&elf, "", queue)?;
    let result = unmap_and_protect(pid);
    sys::kill(pid).map_err(|e| e.name())?;
    sys::wait(Some(pid)).map_err(|e| e.name())?;
    msg::close_queue(queue).map_err(|e| e.name())?;
    result
}

fn fpu_of(pid: Pid, queue: Queue, xmm0_at: usize, mxcsr_at: usize) -> TestResult {
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let mxcsr = |b: &[u8]| u32::from_le_bytes(b[mxcsr_at..mxcsr_at + 4].try_into().unwrap());
    sys::proc_start(pid).map_err(|e| e.name())?;
    expect_call(queue, pid, NR_ECHO)?;
    let image = sys::foreign_fpu(pid).map_err(|e| format!("foreign_fpu: {}", e.name()))?;
    check(word(&image, xmm0_at) == 3, "xmm0 reads as the process set it")?;
    check(mxcsr(&image) == 0x1f80, "MXCSR reads as a new program's")?;
    let mut changed = image;
    changed[xmm0_at..xmm0_at + 8].copy_from_slice(&42u64.to_le_bytes());
    changed[mxcsr_at..mxcsr_at + 4].copy_from_slice(&0xffff_0000u32.to_le_bytes());
    sys::foreign_set_fpu(pid, &changed).map_err(|e| format!("foreign_set_fpu: {}", e.name()))?;
    let back = sys::foreign_fpu(pid).map_err(|e| e.name())?;
    check(mxcsr(&back) & 0xffff_0000 == 0, "reserved MXCSR bits are not loaded")?;
    changed[mxcsr_at..mxcsr_at + 4].copy_from_slice(&0x1f80u32.to_le_bytes());
    sys::foreign_set_fpu(pid, &changed).map_err(|e| e.name())?;
    check(sys::foreign_set_fpu(pid, &changed[..100]) == Err(Error::InvalidArgument), "a short image")?;
    resume(pid, ECHO_RESULT)?;
    let words = expect_call(queue, pid, NR_REPORT)?;
    let mut bytes = [0u8; REPORT_WORDS * 8];
    sys::foreign_read(pid, words[1], &mut bytes).map_err(|e| e.name())?;
    check(word(&bytes, 15 * 8) == 42, "the process goes on with the loaded xmm0")
}

fn unmap_and_protect(pid: Pid) -> TestResult {
    use abi::layout::{PAGE_SIZE, USER_END, USER_HEAP_BASE};
    let page = USER_HEAP_BASE;
    sys::foreign_write(pid, page, &[0xab; 64]).map_err(|e| format!("foreign_write: {}", e.name()))?;
    let mut back = [0u8; 64];
    sys::foreign_read(pid, page, &mut back).map_err(|e| e.name())?;
    check(back == [0xab; 64], "the written page reads back")?;
    check(sys::foreign_unmap(pid, page, 2 * PAGE_SIZE) == Ok(1), "one of the two pages was mapped")?;
    sys::foreign_read(pid, page, &mut back).map_err(|e| e.name())?;
    check(back == [0; 64], "a page taken back comes back zero-filled")?;
    check(sys::foreign_unmap(pid, page + PAGE_SIZE, PAGE_SIZE) == Ok(0), "nothing mapped: nothing taken")?;
    for (addr, len, what) in [
        (page + 1, PAGE_SIZE, "an unaligned address"),
        (page, PAGE_SIZE + 1, "an unaligned length"),
        (page, 0, "an empty range"),
    ] {
        check(sys::foreign_unmap(pid, addr, len) == Err(Error::InvalidArgument), what)?;
        check(sys::foreign_protect(pid, addr, len, false) == Err(Error::InvalidArgument), what)?;
    }
    check(
        sys::foreign_unmap(pid, USER_END - PAGE_SIZE, 2 * PAGE_SIZE) == Err(Error::BadAddress),
        "past the user half",
    )?;
    // Read-only: the untouched page is made first, so both count.
    check(sys::foreign_protect(pid, page, 2 * PAGE_SIZE, false) == Ok(2), "two pages made read-only")?;
    check(sys::foreign_protect(pid, page, 2 * PAGE_SIZE, true) == Ok(2), "and writable again")?;
    check(
        sys::foreign_protect(pid, PAGE_SIZE, PAGE_SIZE, false) == Err(Error::BadAddress),
        "a hole in the range",
    )?;
    let writable_two =
        abi::decode_return(sys::raw(Call::ForeignProtect as u64, pid.0, page, PAGE_SIZE, 2, 0).0);
    check(writable_two == Err(Error::InvalidArgument), "writable must be 0 or 1")?;
    let me = sys::getpid();
    check(
        sys::foreign_unmap(me, page, PAGE_SIZE) == Err(Error::PermissionDenied),
        "unmap a non-foreign process",
    )?;
    check(sys::foreign_protect(me, page, PAGE_SIZE, false) == Err(Error::PermissionDenied), "protect one")
}
