//! Starting a Linux program: its ELF file read through the UNIX calls,
//! loaded by the kernel (`proc_exec`) into a stopped child made foreign
//! (`foreign_attach`), and the Linux start-up stack written at the top of
//! its stack (System V x86-64 ABI §3.4.1; Linux `fs/binfmt_elf.c`,
//! `create_elf_tables`): argc, argv pointers, NULL, envp pointers, NULL,
//! the auxiliary vector, then the strings and AT_RANDOM's 16 bytes.

use crate::mem;
use abi::Pid;
use abi::foreign::Regs;
use abi::layout::{PAGE_SIZE, USER_STACK_TOP};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use runtime::{sys, unix};

/// Auxiliary-vector keys (Linux `include/uapi/linux/auxvec.h`).
const AT_NULL: u64 = 0;
const AT_PHDR: u64 = 3;
const AT_PHENT: u64 = 4;
const AT_PHNUM: u64 = 5;
const AT_PAGESZ: u64 = 6;
const AT_BASE: u64 = 7;
const AT_FLAGS: u64 = 8;
const AT_ENTRY: u64 = 9;
const AT_UID: u64 = 11;
const AT_EUID: u64 = 12;
const AT_GID: u64 = 13;
const AT_EGID: u64 = 14;
const AT_HWCAP: u64 = 16;
const AT_CLKTCK: u64 = 17;
const AT_SECURE: u64 = 23;
const AT_RANDOM: u64 = 25;
const AT_EXECFN: u64 = 31;
/// Clock ticks per second Linux programs are told (`sysconf(_SC_CLK_TCK)`).
pub const CLOCK_TICKS_PER_S: u64 = 100;

const ET_EXEC: u16 = 2;
const EM_X86_64: u16 = 62;
const PT_LOAD: u32 = 1;
const PT_INTERP: u32 = 3;
const PT_PHDR: u32 = 6;

/// A started program.
pub struct Program {
    pub pid: Pid,
    /// Where its `brk` starts: the end of its highest loaded segment.
    pub image_end: u64,
}

/// What the start-up stack needs from the ELF header.
struct Elf {
    entry: u64,
    phdr: u64,
    phent: u64,
    phnum: u64,
    image_end: u64,
}

fn parse(file: &[u8]) -> Result<Elf, String> {
    let u16_at = |i: usize| file.get(i..i + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |i: usize| file.get(i..i + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()));
    let u64_at = |i: usize| file.get(i..i + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap()));
    if file.len() < 64 || &file[..4] != b"\x7fELF" || file[4] != 2 || file[5] != 1 {
        return Err(String::from("not a 64-bit little-endian ELF file"));
    }
    let bad = || String::from("truncated ELF header");
    let (kind, machine) = (u16_at(16).ok_or_else(bad)?, u16_at(18).ok_or_else(bad)?);
    if machine != EM_X86_64 {
        return Err(String::from("not an x86-64 program"));
    }
    if kind != ET_EXEC {
        return Err(String::from(
            "not a static executable (ET_EXEC); static-pie and shared objects are not supported",
        ));
    }
    let entry = u64_at(24).ok_or_else(bad)?;
    let phoff = u64_at(32).ok_or_else(bad)?;
    let phent = u16_at(54).ok_or_else(bad)? as u64;
    let phnum = u16_at(56).ok_or_else(bad)? as u64;
    let (mut phdr, mut image_end) = (None, 0u64);
    for i in 0..phnum {
        let at = (phoff + i * phent) as usize;
        let kind = u32_at(at).ok_or_else(bad)?;
        let offset = u64_at(at + 8).ok_or_else(bad)?;
        let vaddr = u64_at(at + 16).ok_or_else(bad)?;
        let mem_bytes = u64_at(at + 40).ok_or_else(bad)?;
        match kind {
            PT_INTERP => {
                return Err(String::from("dynamically linked (PT_INTERP): only static programs run"));
            }
            PT_PHDR => phdr = Some(vaddr),
            PT_LOAD => {
                image_end = image_end.max(vaddr.saturating_add(mem_bytes));
                let file_bytes = u64_at(at + 32).ok_or_else(bad)?;
                if phdr.is_none() && offset <= phoff && phoff + phnum * phent <= offset + file_bytes {
                    phdr = Some(vaddr + (phoff - offset));
                }
            }
            _ => {}
        }
    }
    Ok(Elf { entry, phdr: phdr.unwrap_or(0), phent, phnum, image_end })
}

/// Read `path`, start it as a foreign child served on `queue` with
/// `argv` and `env`.
pub fn load(path: &str, argv: &[String], env: &[String], queue: u32) -> Result<Program, String> {
    let file = read_file(path).map_err(|e| format!("cannot read: errno {}", e.code()))?;
    let elf = parse(&file)?;
    let pid = sys::proc_create("linux-program").map_err(|e| format!("proc_create: {}", e.name()))?;
    let mut name = [0u8; 32];
    let base = path.rsplit('/').next().unwrap_or(path).as_bytes();
    let n = base.len().min(31);
    name[..n].copy_from_slice(&base[..n]);
    sys::proc_exec(pid, &file, &[], &name)
        .map_err(|e| format!("the kernel refused the image: {}", e.name()))?;
    drop(file);
    sys::foreign_attach(pid, queue).map_err(|e| format!("foreign_attach: {}", e.name()))?;
    let sp =
        build_stack(pid, &elf, path, argv, env).map_err(|e| format!("start-up stack: errno {}", e.code()))?;
    let regs = Regs { rip: elf.entry, rsp: sp, rflags: 0x202, ..Regs::default() };
    sys::foreign_resume_regs(pid, &regs).map_err(|e| format!("foreign_resume: {}", e.name()))?;
    Ok(Program { pid, image_end: elf.image_end })
}

fn read_file(path: &str) -> Result<Vec<u8>, protocols::unix::Errno> {
    let fd = unix::open(path, protocols::unix::open_flags::O_RDONLY, 0)?;
    let mut out = Vec::new();
    let mut buf = alloc::vec![0u8; 64 * 1024];
    let result = loop {
        match unix::read(fd, &mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => break Err(e),
        }
    };
    let _ = unix::close(fd);
    result.map(|()| out)
}

/// Write the start-up stack below `USER_STACK_TOP`; returns the stack
/// pointer (at argc, 16-byte aligned).
fn build_stack(
    pid: Pid,
    elf: &Elf,
    path: &str,
    argv: &[String],
    env: &[String],
) -> Result<u64, protocols::unix::Errno> {
    // Strings first, from the top down: the path (AT_EXECFN), argv, env,
    // then 16 bytes for AT_RANDOM.
    let mut strings: Vec<u8> = Vec::new();
    let mut offsets = Vec::new();
    for s in
        core::iter::once(path).chain(argv.iter().map(String::as_str)).chain(env.iter().map(String::as_str))
    {
        offsets.push(strings.len() as u64);
        strings.extend_from_slice(s.as_bytes());
        strings.push(0);
    }
    let random_at = strings.len() as u64;
    let seed = runtime::clock::Clock::new().now_ns() ^ (pid.0 << 17);
    let mut x = seed | 1;
    for _ in 0..16 {
        // xorshift64: AT_RANDOM seeds the program's stack protector; it
        // need not be cryptographic here (docs/linux-abi.md).
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        strings.push(x as u8);
    }
    let strings_at = (USER_STACK_TOP - strings.len() as u64 - 64) & !15;
    mem::write(pid, strings_at, &strings)?;
    let addr = |i: usize| strings_at + offsets[i];
    let uid = unix::getuid() as u64;
    let gid = unix::getgid() as u64;
    let auxv = [
        (AT_PHDR, elf.phdr),
        (AT_PHENT, elf.phent),
        (AT_PHNUM, elf.phnum),
        (AT_PAGESZ, PAGE_SIZE),
        (AT_BASE, 0),
        (AT_FLAGS, 0),
        (AT_ENTRY, elf.entry),
        (AT_UID, uid),
        (AT_EUID, uid),
        (AT_GID, gid),
        (AT_EGID, gid),
        (AT_HWCAP, 0),
        (AT_CLKTCK, CLOCK_TICKS_PER_S),
        (AT_SECURE, 0),
        (AT_RANDOM, strings_at + random_at),
        (AT_EXECFN, addr(0)),
        (AT_NULL, 0),
    ];
    let mut words: Vec<u64> = Vec::new();
    words.push(argv.len() as u64);
    words.extend((0..argv.len()).map(|i| addr(1 + i)));
    words.push(0);
    words.extend((0..env.len()).map(|i| addr(1 + argv.len() + i)));
    words.push(0);
    for (k, v) in auxv {
        words.push(k);
        words.push(v);
    }
    let sp = (strings_at - words.len() as u64 * 8) & !15;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem::write(pid, sp, &bytes)?;
    Ok(sp)
}
