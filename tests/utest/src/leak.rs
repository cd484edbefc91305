//! "Killing a user program never leaks server resources" (issue 5):
//! children that hold open files, pipes (one blocked mid-write in its pipe
//! manager), memory, grandchildren and a pending `wait` are killed; after
//! they are reaped the monitor's open-file descriptions, memfs's handles
//! and the kernel's free memory must be what they were.

use crate::ensure;
use crate::util::*;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use protocols::unix::open_flags::*;
use protocols::unix::signal::SIGKILL;
use runtime::unix::{self, Fd};

/// What a child does once set up: block until killed, or exit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Then {
    Block,
    Exit,
}

/// One child's work: set up, write one byte to `ready`, then `then`.
type Role = fn(path: &str, ctl: Fd, ready: Fd, then: Then) -> i32;

const ROLES: [Role; 6] =
    [files_and_memory, pipes_and_grandchild, blocked_in_pipe_write, waiter, exec_holder, spinner];

/// Report ready and drop the ready pipe (so that the parent sees end of
/// file rather than waiting forever if another child fails to set up).
fn ready_and_close(ready: Fd) -> bool {
    let ok = write_all(ready, b"r").is_ok();
    let _ = unix::close(ready);
    ok
}

fn finish(ctl: Fd, ready: Fd, then: Then) -> i32 {
    if !ready_and_close(ready) {
        return 90;
    }
    if then == Then::Exit {
        return 0;
    }
    let mut b = [0u8; 1];
    let _ = unix::read(ctl, &mut b);
    91
}

fn files_and_memory(path: &str, ctl: Fd, ready: Fd, then: Then) -> i32 {
    let chunk = vec![0x5au8; 64 * 1024];
    for n in 0..3 {
        let flags = if n == 2 { O_WRONLY | O_CREAT | O_APPEND } else { O_RDWR | O_CREAT };
        let Ok(fd) = unix::open(&format!("{path}-{n}"), flags, 0o644) else { return 10 };
        if write_all(fd, &chunk).is_err() {
            return 11;
        }
        if n == 0 && unix::dup(fd).is_err() {
            return 12;
        }
    }
    if unix::open("/dev/null", O_RDWR, 0).is_err() {
        return 13;
    }
    let mut memory = vec![0u8; 2 << 20];
    for page in memory.chunks_mut(PAGE_BYTES) {
        page[0] = 1;
    }
    let code = finish(ctl, ready, then);
    core::hint::black_box(&memory);
    code
}

fn pipes_and_grandchild(_path: &str, ctl: Fd, ready: Fd, then: Then) -> i32 {
    let mut ends = Vec::new();
    for _ in 0..3 {
        match unix::pipe() {
            Ok(p) => ends.push(p),
            Err(_) => return 20,
        }
    }
    if write_all(ends[0].1, &vec![7u8; 32 * 1024]).is_err() {
        return 21;
    }
    let grandchild = spawn(move || {
        let _ = unix::close(ready);
        if then == Then::Exit {
            return 0;
        }
        let mut b = [0u8; 1];
        let _ = unix::read(ctl, &mut b);
        0
    });
    if grandchild.is_err() {
        return 22;
    }
    finish(ctl, ready, then)
}

fn blocked_in_pipe_write(_path: &str, ctl: Fd, ready: Fd, then: Then) -> i32 {
    let Ok((_r, w)) = unix::pipe() else { return 30 };
    if !ready_and_close(ready) {
        return 31;
    }
    if then == Then::Exit {
        return 0;
    }
    // More than the pipe holds, with nobody reading: the write waits in
    // the pipe manager until this process is killed.
    let _ = write_all(w, &vec![1u8; 256 * 1024]);
    let mut b = [0u8; 1];
    let _ = unix::read(ctl, &mut b);
    32
}

fn spinner(path: &str, _ctl: Fd, ready: Fd, then: Then) -> i32 {
    let Ok(fd) = unix::open(&format!("{path}-spin"), O_RDWR | O_CREAT, 0o644) else { return 40 };
    if write_all(fd, b"spinning").is_err() || !ready_and_close(ready) {
        return 41;
    }
    if then == Then::Exit {
        return 0;
    }
    let mut x = 0u64;
    loop {
        x = core::hint::black_box(x.wrapping_add(1));
    }
}

fn waiter(path: &str, ctl: Fd, ready: Fd, then: Then) -> i32 {
    let file = format!("{path}-gc");
    let grandchild = spawn(move || {
        let _ = unix::close(ready);
        if unix::open(&file, O_RDWR | O_CREAT, 0o644).is_err() {
            return 1;
        }
        if then == Then::Exit {
            return 0;
        }
        let mut b = [0u8; 1];
        let _ = unix::read(ctl, &mut b);
        0
    });
    let Ok(grandchild) = grandchild else { return 50 };
    if !ready_and_close(ready) {
        return 51;
    }
    // Killed while its wait is pending at the monitor.
    match unix::waitpid(grandchild as i64, false) {
        Ok(_) if then == Then::Exit => 0,
        _ => 52,
    }
}

fn exec_holder(_path: &str, ctl: Fd, ready: Fd, then: Then) -> i32 {
    let (ctl, ready) = (format!("{ctl}"), format!("{ready}"));
    let mode = if then == Then::Exit { "exit" } else { "block" };
    let e = unix::execve("/bin/utest", &["utest", "role-hold", &ready, &ctl, mode], &[]);
    60 + e.0 as i32
}

/// `utest role-hold READY CTL block|exit`: an exec'd program holding the
/// inherited descriptors and a new file.
pub fn role_hold(argv: &[&str]) -> i32 {
    let fd = |i: usize| argv.get(i).and_then(|s| s.parse::<Fd>().ok()).unwrap_or(-1);
    let (ready, ctl) = (fd(2), fd(3));
    let then = if argv.get(4) == Some(&"exit") { Then::Exit } else { Then::Block };
    if unix::open("/dev/null", O_RDONLY, 0).is_err() {
        return 70;
    }
    let memory = vec![9u8; 1 << 20];
    let code = finish(ctl, ready, then);
    core::hint::black_box(&memory);
    code
}

/// One round: start every role in a new process group, wait until all are
/// set up, then kill the group (or let them exit) and reap them.
fn round(dir: &str, round: u32, then: Then) -> TestResult {
    let (ctl_r, ctl_w) = unix::pipe().ctx("pipe")?;
    let mut kids = Vec::new();
    let mut leader = 0;
    let mut result = Ok(());
    // One child at a time, each set up before the next starts: on one CPU
    // the spinner would otherwise share it with every later setup.
    for (i, role) in ROLES.iter().enumerate() {
        let path = format!("{dir}/r{round}-c{i}");
        let group = leader;
        let (ready_r, ready_w) = match unix::pipe() {
            Ok(p) => p,
            Err(e) => {
                result = Err(format!("pipe: {}", e.name()));
                break;
            }
        };
        let spawned = spawn(move || {
            // Join the group before making grandchildren, so that
            // kill(-group) reaches them.
            if unix::setpgid(0, group).is_err() {
                return 80;
            }
            let _ = unix::close(ready_r);
            let _ = unix::close(ctl_w);
            role(&path, ctl_r, ready_w, then)
        });
        let _ = unix::close(ready_w);
        if let Ok(pid) = spawned {
            if leader == 0 {
                leader = pid;
            }
            // Also from here, so the group exists before the next fork.
            let _ = unix::setpgid(pid, leader);
            kids.push(pid);
            let mut ready = [0u8; 1];
            result = read_exact(ready_r, &mut ready).map_err(|e| format!("child {i} did not get ready: {e}"));
        } else if let Err(e) = spawned {
            result = Err(e);
        }
        let _ = unix::close(ready_r);
        if result.is_err() {
            break;
        }
    }
    // (leader 0: no child was made; kill(0) would be this process's group.)
    if leader != 0 && (then == Then::Block || result.is_err()) {
        let killed = unix::kill(-(leader as i64), SIGKILL).ctx("kill(-group, SIGKILL)");
        if result.is_ok() {
            result = killed;
        }
    }
    let setup_failed = result.is_err();
    for (i, pid) in kids.into_iter().enumerate() {
        let status = wait_for(pid);
        if setup_failed {
            // Say how each child ended: the one that did not get ready
            // exited with a code naming the step that failed.
            if let (Err(why), Ok(st)) = (&mut result, &status) {
                why.push_str(&format!("; child {i} {}", describe(st)));
            }
        } else if result.is_ok() {
            result = match (then, status) {
                (_, Err(e)) => Err(e),
                (Then::Block, Ok(st)) if st.signal() == Some(SIGKILL) => Ok(()),
                (Then::Exit, Ok(st)) if st.exit_code() == Some(0) => Ok(()),
                (_, Ok(st)) => Err(format!("child {pid} {}", describe(&st))),
            };
        }
    }
    for fd in [ctl_r, ctl_w] {
        let _ = unix::close(fd);
    }
    result?;
    // The files the round made go, so memfs's counts can be compared.
    for entry in unix::read_dir(dir).ctx("read_dir")? {
        if entry.name.starts_with(&format!("r{round}-")) {
            unix::unlink(&format!("{dir}/{}", entry.name)).ctx("unlink")?;
        }
    }
    Ok(())
}

/// Grandchildren end after their parents were reaped (they are init's):
/// wait until the monitor has closed their descriptors.
fn settled_descriptions(target: u64) -> Result<u64, String> {
    let mut now = open_descriptions()?;
    poll_until(1000, 5, || {
        now = open_descriptions()?;
        Ok(now == target)
    })?;
    Ok(now)
}

/// Rounds whose memory is compared, after the warm-up round.
const MEASURED_ROUNDS: u32 = 3;

fn leak_test(name: &str, then: Then) -> TestResult {
    let dir = scratch(name)?;
    let files = open_descriptions()?;
    // A first round lets the servers' heaps and this process's grow to
    // what a round needs; memory is compared from then on.
    round(&dir, 0, then)?;
    let warm = settled_descriptions(files)?;
    ensure!(warm == files, "warm-up round: {files} open-file descriptions before, {warm} after");
    let mut free = settled_free_memory(None);
    let mut lost_kib = Vec::new();
    for n in 1..=MEASURED_ROUNDS {
        round(&dir, n, then)?;
        // Descriptions are exact: every one the children held is closed.
        let now = settled_descriptions(files)?;
        ensure!(
            now == files,
            "round {n}: {files} open-file descriptions before, {now} after the children were reaped"
        );
        let after = settled_free_memory(Some(free));
        lost_kib.push((free as i64 - after as i64) / 1024);
        free = after;
    }
    // Memory: what a killed program held (its pages, its pipe managers,
    // the pages servers kept for it) is lost again in every round, while
    // a server's heap may take a page now and then and keep it for reuse.
    // So a leak is memory lost in every round.
    ensure!(
        lost_kib.iter().any(|&k| k <= 0),
        "memory was lost in every round: {lost_kib:?} KiB (a leak of about {} KiB per round)",
        lost_kib.iter().min().copied().unwrap_or(0)
    );
    Ok(())
}

pub fn killed_children_leak_nothing() -> TestResult {
    leak_test("killed_children_leak_nothing", Then::Block)
}

pub fn exited_children_leak_nothing() -> TestResult {
    leak_test("exited_children_leak_nothing", Then::Exit)
}

/// memfs's own count of open handles, files and bytes after a round of
/// killed children.
pub fn memfs_handles_come_back_after_kills() -> TestResult {
    let dir = scratch("memfs_handles_come_back_after_kills")?;
    let before = memfs_stats()?;
    let files = open_descriptions()?;
    round(&dir, 0, Then::Block)?;
    settled_descriptions(files)?;
    let mut after = memfs_stats()?;
    poll_until(200, 5, || {
        after = memfs_stats()?;
        Ok(after == before)
    })?;
    ensure!(
        after == before,
        "memfs (files, directories, bytes, handles) {before:?} before, {after:?} after the killed children"
    );
    Ok(())
}

/// The descriptor table and the monitor's count agree.
pub fn monitor_counts_descriptions() -> TestResult {
    let before = open_descriptions()?;
    let d = scratch("monitor_counts_descriptions")?;
    let fd = unix::open(&format!("{d}/f"), O_RDWR | O_CREAT, 0o644).ctx("open")?;
    let one = open_descriptions()?;
    let copy = unix::dup(fd).ctx("dup")?;
    let still_one = open_descriptions()?;
    let (r, w) = unix::pipe().ctx("pipe")?;
    let three = open_descriptions()?;
    for f in [fd, copy, r, w] {
        unix::close(f).ctx("close")?;
    }
    let after = open_descriptions()?;
    let got = [one, still_one, three, after];
    let want = [before + 1, before + 1, before + 3, before];
    ensure!(got == want, "descriptions in use {got:?}, expected {want:?} (open, dup, pipe, all closed)");
    let stats = monitor_stats()?;
    ensure!(stats[0] > 0 && stats[1] > 0 && stats[2] > 0, "monitor requests/forks/execs {stats:?}");
    Ok(())
}
