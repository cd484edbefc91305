//! Users and limits (issue 16): the resource limits the monitor keeps
//! (`protocols::unix::rlimit`) and what a non-root user cannot do, each
//! checked as uid 1000 in a forked child (`util::in_child`, after
//! `setuid`), and the user programs `su` and `login` over the boot
//! image's `/etc/passwd`, `/etc/group` and `/etc/shadow`.
//!
//! What it is not: the file-permission checks (`fs::permissions_as_non_
//! root`, `perm::*`), which were there before.

use crate::util::{
    Context, TestResult, expect_errno, expect_exit, in_child, read_some, read_to_end, spawn, wait_for,
    write_all,
};
use crate::{ensure, util};
use abi::Error;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::errno::{EACCES, EAGAIN, EBADF, EINVAL, EMFILE, ENOMEM, EPERM, EPIPE, ESRCH};
use protocols::unix::open_flags::O_RDONLY;
use protocols::unix::rlimit::{INFINITY, RLIMIT_AS, RLIMIT_DATA, RLIMIT_NOFILE, RLIMIT_NPROC};
use protocols::unix::{mode, monitor::MAX_FDS, pid, signal};
use runtime::msg::{self, Queue};
use runtime::sys;
use runtime::unix::{self, Fd};

/// The boot image's users (etc/passwd): `user` and `guest`.
const USER: u32 = 1000;
const GUEST: u32 = 1001;
const MIB: u64 = 1 << 20;

fn become_user() -> TestResult {
    unix::setuid_gid(Some(USER), Some(USER)).ctx("setuid 1000")?;
    ensure!(unix::getuid() == USER, "uid {} after setuid 1000", unix::getuid());
    Ok(())
}

fn limit(resource: u64) -> Result<(u64, u64), String> {
    unix::getrlimit(resource).ctx(&format!("getrlimit {resource}"))
}

/// Root has no limits but the descriptor table's size; a process that
/// takes a user's uid gets the user defaults; a user may lower a hard
/// limit and never raise it; bad requests are `EINVAL`.
pub fn limits_defaults_and_rules() -> TestResult {
    ensure!(unix::getuid() == 0, "utest runs as root");
    let fds = MAX_FDS as u64;
    for (r, want) in [
        (RLIMIT_NPROC, (INFINITY, INFINITY)),
        (RLIMIT_DATA, (INFINITY, INFINITY)),
        (RLIMIT_AS, (INFINITY, INFINITY)),
    ] {
        ensure!(limit(r)? == want, "root's limit {r} is {:?}", limit(r)?);
    }
    ensure!(limit(RLIMIT_NOFILE)? == (fds, fds), "root's RLIMIT_NOFILE is {:?}", limit(RLIMIT_NOFILE)?);
    in_child(|| {
        become_user()?;
        ensure!(limit(RLIMIT_NPROC)? == (64, 64), "a user's RLIMIT_NPROC is {:?}", limit(RLIMIT_NPROC)?);
        ensure!(
            limit(RLIMIT_DATA)? == (256 * MIB, 256 * MIB),
            "a user's RLIMIT_DATA is {:?}",
            limit(RLIMIT_DATA)?
        );
        ensure!(limit(RLIMIT_AS)? == (INFINITY, INFINITY), "a user's RLIMIT_AS is {:?}", limit(RLIMIT_AS)?);
        ensure!(limit(RLIMIT_NOFILE)? == (fds, fds), "a user's RLIMIT_NOFILE is {:?}", limit(RLIMIT_NOFILE)?);
        expect_errno(unix::setrlimit(RLIMIT_NPROC, 64, 65), EPERM, "raise the hard limit")?;
        expect_errno(unix::setrlimit(RLIMIT_NPROC, 10, 5), EINVAL, "soft above hard")?;
        expect_errno(unix::setrlimit(12345, 1, 1), EINVAL, "an unknown resource")?;
        expect_errno(unix::getrlimit(12345), EINVAL, "getrlimit of an unknown resource")?;
        expect_errno(unix::setrlimit(RLIMIT_NOFILE, 1, fds + 1), EINVAL, "more descriptors than the table")?;
        unix::setrlimit(RLIMIT_NPROC, 10, 64).ctx("lower the soft limit")?;
        unix::setrlimit(RLIMIT_NPROC, 64, 64).ctx("raise the soft limit back up to the hard one")?;
        unix::setrlimit(RLIMIT_NPROC, 20, 30).ctx("lower the hard limit")?;
        expect_errno(unix::setrlimit(RLIMIT_NPROC, 20, 31), EPERM, "raise a lowered hard limit")?;
        ensure!(
            limit(RLIMIT_NPROC)? == (20, 30),
            "RLIMIT_NPROC is {:?} after the refusals",
            limit(RLIMIT_NPROC)?
        );
        // A fork child has the same limits.
        let child = spawn(|| if unix::getrlimit(RLIMIT_NPROC) == Ok((20, 30)) { 0 } else { 1 })?;
        expect_exit(child, 0)
    })?;
    // Root may raise its own limits again.
    in_child(|| {
        unix::setrlimit(RLIMIT_DATA, MIB, MIB).ctx("root lowers its heap limit")?;
        unix::setrlimit(RLIMIT_DATA, INFINITY, INFINITY).ctx("root raises it again")
    })
}

/// `RLIMIT_NPROC` counts the user's live processes: the fork past it is
/// `EAGAIN`, and once a child has ended there is room again.
pub fn nproc_limit_makes_fork_eagain() -> TestResult {
    in_child(|| {
        become_user()?;
        let mine = unix::ps().ctx("ps")?.iter().filter(|p| p.uid == USER && p.state != b'Z').count() as u64;
        unix::setrlimit(RLIMIT_NPROC, mine + 2, mine + 2).ctx("setrlimit RLIMIT_NPROC")?;
        let (r, w) = unix::pipe().ctx("pipe")?;
        let mut children = Vec::new();
        for _ in 0..2 {
            children.push(spawn(move || {
                let _ = unix::close(w);
                let _ = read_some(r, 1);
                0
            })?);
        }
        let third = unix::fork();
        if third == Ok(0) {
            unix::exit(0);
        }
        unix::close(w).ctx("close")?;
        unix::close(r).ctx("close")?;
        for c in &children {
            expect_exit(*c, 0)?;
        }
        if let Ok(pid) = third {
            let _ = wait_for(pid);
        }
        expect_errno(third, EAGAIN, "a fork past RLIMIT_NPROC")?;
        let again = spawn(|| 0)?;
        expect_exit(again, 0)
    })
}

/// `RLIMIT_NOFILE`: descriptors stay below it (`open`, `dup`, `pipe`:
/// `EMFILE`; `dup2` at or past it: `EBADF`), and it holds across `exec`.
pub fn nofile_limit_makes_open_emfile() -> TestResult {
    in_child(|| {
        become_user()?;
        let max: Fd = 6;
        unix::setrlimit(RLIMIT_NOFILE, max as u64, max as u64).ctx("setrlimit RLIMIT_NOFILE")?;
        let mut opened = Vec::new();
        let last = loop {
            match unix::open("/dev/null", O_RDONLY, 0) {
                Ok(fd) => {
                    ensure!(fd < max, "open gave fd {fd} with RLIMIT_NOFILE {max}");
                    opened.push(fd);
                    ensure!(opened.len() <= MAX_FDS, "open never stopped");
                }
                Err(e) => break e,
            }
        };
        ensure!(last == EMFILE, "open past the limit: {}", last.name());
        expect_errno(unix::dup(0), EMFILE, "dup past the limit")?;
        expect_errno(unix::pipe(), EMFILE, "pipe past the limit")?;
        expect_errno(unix::dup2(0, max), EBADF, "dup2 onto the limit")?;
        let fd = opened.pop().ok_or("nothing was opened")?;
        unix::close(fd).ctx("close")?;
        // One free slot: dup works, a pipe (two) does not.
        let d = unix::dup(0).ctx("dup with one slot free")?;
        unix::close(d).ctx("close")?;
        expect_errno(unix::setrlimit(RLIMIT_NOFILE, 7, 7), EPERM, "raise it as a user")?;
        for fd in opened {
            let _ = unix::close(fd);
        }
        // exec keeps it: the program sees it and is held to it.
        let e = unix::execve("/bin/utest", &["utest", "role-limits", "nofile", "6"], &[]);
        Err(format!("exec utest role-limits: {}", e.name()))
    })
}

/// `RLIMIT_DATA` bounds the heap (`sbrk` gets `ENOMEM`, shrinking is
/// always allowed), in this process at once and in the program it execs
/// (the heap limit rides in the exec block).
pub fn data_limit_makes_sbrk_enomem() -> TestResult {
    in_child(|| {
        become_user()?;
        let used = unix::sbrk(0).ctx("sbrk 0")? - abi::layout::USER_HEAP_BASE;
        let cap = (used + MIB).next_multiple_of(abi::layout::PAGE_SIZE);
        unix::setrlimit(RLIMIT_DATA, cap, cap).ctx("setrlimit RLIMIT_DATA")?;
        expect_errno(unix::sbrk(2 * MIB as i64), ENOMEM, "sbrk past RLIMIT_DATA")?;
        let before = unix::sbrk(0).ctx("sbrk 0")?;
        ensure!(before - abi::layout::USER_HEAP_BASE == used, "a refused sbrk moved the break");
        let page = abi::layout::PAGE_SIZE as i64;
        unix::sbrk(page).ctx("sbrk within the limit")?;
        unix::sbrk(-page).ctx("sbrk back down")?;
        expect_errno(unix::setrlimit(RLIMIT_DATA, INFINITY, cap), EINVAL, "soft above hard")?;
        let e = unix::execve("/bin/utest", &["utest", "role-limits", "data", &format!("{cap}")], &[]);
        Err(format!("exec utest role-limits: {}", e.name()))
    })
}

/// `RLIMIT_AS`: a program file larger than it cannot be exec'd
/// (`ENOMEM`, and the caller goes on), and it bounds the heap.
pub fn as_limit_refuses_big_programs() -> TestResult {
    in_child(|| {
        become_user()?;
        let size = unix::stat("/bin/utest").ctx("stat /bin/utest")?.size_bytes;
        unix::setrlimit(RLIMIT_AS, size / 2, size / 2).ctx("setrlimit RLIMIT_AS")?;
        let e = unix::execve("/bin/utest", &["utest", "role-exit", "0"], &[]);
        ensure!(e == ENOMEM, "exec of a program larger than RLIMIT_AS: {}, expected ENOMEM", e.name());
        expect_errno(unix::sbrk(size as i64), ENOMEM, "sbrk past RLIMIT_AS")?;
        Ok(())
    })
}

/// The VM manager pages the heap only up to the hard heap limit the
/// process had at exec: a program that moves no break and touches the
/// heap past that limit ends with SIGSEGV (inside it, the touch works).
pub fn heap_past_the_hard_limit_faults() -> TestResult {
    let child = spawn(|| {
        if become_user().is_err() {
            return 90;
        }
        let cap = 4 * MIB;
        if unix::setrlimit(RLIMIT_DATA, cap, cap).is_err() {
            return 91;
        }
        let e = unix::execve("/bin/utest", &["utest", "role-limits", "touch", &format!("{cap}")], &[]);
        100 + e.0 as i32
    })?;
    util::expect_signal(child, signal::SIGSEGV)
}

/// `utest role-limits nofile N` / `role-limits data BYTES` / `role-limits
/// touch BYTES`: after an exec, the limit is still N (BYTES) and this new
/// program is held to it (`touch`: ends with SIGSEGV, or exits 1).
pub fn role_limits(argv: &[&str]) -> i32 {
    let value = argv.get(3).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    let verdict: TestResult = (|| match argv.get(2).copied() {
        Some("nofile") => {
            ensure!(
                limit(RLIMIT_NOFILE)? == (value, value),
                "RLIMIT_NOFILE after exec: {:?}",
                limit(RLIMIT_NOFILE)?
            );
            loop {
                match unix::open("/dev/null", O_RDONLY, 0) {
                    Ok(fd) => ensure!((fd as u64) < value, "fd {fd} after exec"),
                    Err(e) => {
                        ensure!(e == EMFILE, "open after exec: {}", e.name());
                        return Ok(());
                    }
                }
            }
        }
        Some("data") => {
            ensure!(
                limit(RLIMIT_DATA)? == (value, value),
                "RLIMIT_DATA after exec: {:?}",
                limit(RLIMIT_DATA)?
            );
            expect_errno(unix::sbrk(value as i64), ENOMEM, "sbrk of the whole limit after exec")?;
            unix::sbrk(abi::layout::PAGE_SIZE as i64).ctx("sbrk a page after exec")?;
            Ok(())
        }
        Some("touch") => {
            let inside = abi::layout::USER_HEAP_BASE + value - 8;
            ensure!(crate::raw::touch_heap_word(inside) == 0x5eed, "the last word under the limit");
            let past = abi::layout::USER_HEAP_BASE + value + abi::layout::PAGE_SIZE;
            crate::raw::touch_heap_word(past);
            Err(String::from("a touch past the hard heap limit was served"))
        }
        other => Err(format!("unknown role-limits {other:?}")),
    })();
    match verdict {
        Ok(()) => 0,
        Err(why) => {
            runtime::eprintln!("utest role-limits: {why}");
            1
        }
    }
}

/// A process of another user (guest), in a process group of its own,
/// waiting until the returned descriptor is closed.
///
/// Returns only once the guest has left the caller's group and taken the
/// guest's uid (it says so through a second pipe). Returning at `fork`
/// was a race the `unix smp2` run lost once: a user child that read the
/// guest's group from `ps` before the guest's `setpgid` got the test's own
/// group, and its `kill(-group, SIGKILL)`, meant to be refused, reached
/// itself (POSIX: a group signal goes to every member the sender may
/// signal, the sender included) and ended it with signal 9.
fn guest_process() -> Result<(u64, Fd), String> {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let (ready_r, ready_w) = unix::pipe().ctx("pipe")?;
    let pid = spawn(move || {
        let _ = (unix::close(w), unix::close(ready_r));
        if unix::setpgid(0, 0).is_err() || unix::setuid_gid(Some(GUEST), Some(GUEST)).is_err() {
            return 3;
        }
        if write_all(ready_w, b"g").is_err() {
            return 4;
        }
        let _ = unix::close(ready_w);
        let _ = read_some(r, 1);
        0
    })?;
    let _ = unix::close(ready_w);
    unix::close(r).ctx("close")?;
    let said = read_to_end(ready_r);
    let _ = unix::close(ready_r);
    if !matches!(said.as_deref(), Ok(b"g")) {
        let _ = unix::close(w);
        let status = wait_for(pid)?;
        return Err(format!("the guest did not get ready ({said:?}); it {}", util::describe(&status)));
    }
    Ok((pid, w))
}

/// After the attempts on a [`guest_process`] (`result`): it must have
/// lived through them, and it ends when released, with status 0.
fn end_guest(guest: u64, release: Fd, result: TestResult) -> TestResult {
    let alive = unix::kill(guest as i64, 0);
    let _ = unix::close(release);
    let status = wait_for(guest)?;
    result?;
    alive.ctx("the guest after the attempts")?;
    ensure!(status.exit_code() == Some(0), "the guest {}", util::describe(&status));
    Ok(())
}

/// The kernel pids of the servers every UNIX process is connected to.
fn servers() -> Vec<(&'static str, abi::Pid)> {
    [
        ("monitor", abi::bootstrap::MONITOR),
        ("memfs", abi::bootstrap::FS),
        ("vm", abi::bootstrap::VM),
        ("tty", abi::bootstrap::TTY),
    ]
    .into_iter()
    .filter_map(|(name, i)| sys::bootstrap(i).map(|(p, _)| (name, p)))
    .collect()
}

fn expect_denied<T: core::fmt::Debug>(r: Result<T, Error>, what: &str) -> TestResult {
    match r {
        Err(Error::PermissionDenied) => Ok(()),
        other => Err(format!("{what}: {other:?}, expected PermissionDenied")),
    }
}

/// A user cannot signal or kill another user's process, init, or any
/// server, through the monitor or the kernel; all of them live on.
pub fn non_root_cannot_signal_others_or_servers() -> TestResult {
    let (guest, release) = guest_process()?;
    let guest_k = pid::to_kernel(guest).ok_or("the guest's kernel pid")?;
    let servers = servers();
    ensure!(servers.len() >= 3, "only {} servers found", servers.len());
    let result = in_child(|| {
        become_user()?;
        for sig in [0, signal::SIGTERM, signal::SIGKILL] {
            expect_errno(
                unix::kill(guest as i64, sig),
                EPERM,
                &format!("signal {sig} to another user's process"),
            )?;
            expect_errno(unix::kill(1, sig), EPERM, &format!("signal {sig} to init"))?;
        }
        let group =
            unix::ps().ctx("ps")?.iter().find(|p| p.pid == guest).map(|p| p.pgid).ok_or("guest gone")?;
        // Its own group, not ours: else the SIGKILL below would reach us.
        ensure!(group == guest, "the guest is in group {group}, not its own");
        expect_errno(unix::kill(-(group as i64), signal::SIGKILL), EPERM, "SIGKILL to the guest's group")?;
        expect_denied(sys::kill(guest_k), "the kernel's kill of another user's process")?;
        for (name, k) in &servers {
            expect_denied(sys::kill(*k), &format!("the kernel's kill of {name}"))?;
            expect_errno(
                unix::kill(pid::from_kernel(*k) as i64, signal::SIGKILL),
                ESRCH,
                &format!("kill of {name}"),
            )?;
        }
        Ok(())
    });
    end_guest(guest, release, result)?;
    // The servers still answer.
    unix::stat("/etc/passwd").ctx("stat after the attempts")?;
    Ok(())
}

/// A user cannot copy, page, read, restart or reprioritise another
/// process's memory or execution (kernel calls that take a pid).
pub fn non_root_cannot_touch_another_process() -> TestResult {
    let (guest, release) = guest_process()?;
    let guest_k = pid::to_kernel(guest).ok_or("the guest's kernel pid")?;
    let mut targets = servers();
    targets.push(("another user's process", guest_k));
    let result = in_child(|| {
        become_user()?;
        let me = sys::getpid();
        let heap = abi::layout::USER_HEAP_BASE;
        let page = abi::layout::PAGE_SIZE;
        let mut buf = [0u8; 16];
        for (name, k) in &targets {
            let k = *k;
            expect_denied(sys::space_copy(k, me), &format!("space_copy from {name}"))?;
            expect_denied(sys::space_copy(me, k), &format!("space_copy into {name}"))?;
            expect_denied(sys::set_pager(k, heap, page, me, 0), &format!("set_pager of {name}"))?;
            // Only a region's pager may resolve its faults; an address in
            // no region (a server's heap has no pager) is BadAddress.
            match sys::page_resolve(k, heap, 0, abi::pager::ZERO) {
                Err(Error::PermissionDenied | Error::BadAddress) => {}
                other => return Err(format!("page_resolve in {name}: {other:?}")),
            }
            ensure!(sys::foreign_read(k, heap, &mut buf).is_err(), "foreign_read of {name} succeeded");
            ensure!(sys::foreign_write(k, heap, &buf).is_err(), "foreign_write of {name} succeeded");
            expect_denied(sys::proc_start(k), &format!("proc_start of {name}"))?;
            expect_denied(sys::set_priority(k, abi::MAX_PRIORITY), &format!("set_priority of {name}"))?;
            expect_denied(sys::proc_image(k, 0, &[], &[0; 32]), &format!("proc_image of {name}"))?;
        }
        Ok(())
    });
    end_guest(guest, release, result)
}

/// No UNIX process, a user's least of all, holds a kernel right: the
/// boot image (`MODULES`), other address spaces (`MEMORY`) and devices
/// (`DEVICES`) are closed to it, and a child it spawns gets none either.
pub fn non_root_gets_no_rights() -> TestResult {
    in_child(|| {
        become_user()?;
        let mut buf = [0u8; 64];
        expect_denied(sys::module_read(0, 0, &mut buf), "module_read (MODULES)")?;
        let me = sys::getpid();
        expect_denied(sys::space_copy(me, me), "space_copy (MEMORY)")?;
        expect_denied(sys::io_ports(0x3f8, 8), "io_ports (DEVICES)")?;
        expect_denied(sys::pci_config_read(sys::pci_address(0, 0, 0), 0, 4), "pci_config_read (DEVICES)")?;
        expect_denied(
            sys::dma_alloc(abi::layout::USER_HEAP_BASE + (512 << 20), 4096),
            "dma_alloc (DEVICES)",
        )?;
        expect_errno(unix::setuid_gid(Some(0), None), EPERM, "setuid 0")?;
        expect_errno(unix::setuid_gid(Some(GUEST), None), EPERM, "setuid to another user")?;
        expect_errno(unix::setuid_gid(None, Some(0)), EPERM, "setgid 0")?;
        ensure!(unix::getuid() == USER && unix::getgid() == USER, "ids changed by refused calls");
        Ok(())
    })
}

/// A private queue (`open_queue(.., false)`) takes links only from the
/// processes its owner names: a user's `open_link` to a root process's
/// private queue is refused, to a public one it is not.
pub fn non_root_cannot_open_private_queues() -> TestResult {
    let owner = spawn_holding(|| {
        let (Ok(private), Ok(public)) = (msg::open_queue(4, false), msg::open_queue(4, true)) else {
            return Err(2);
        };
        Ok(alloc::vec![sys::getpid().0, u64::from(private.0), u64::from(public.0)])
    })?;
    let result = match owner.words[..] {
        [k, private, public] => in_child(|| {
            become_user()?;
            expect_denied(
                msg::open_link(abi::Pid(k), Queue(private as u32)),
                "open_link to a private queue",
            )?;
            let l = msg::open_link(abi::Pid(k), Queue(public as u32))
                .map_err(|e| format!("open_link to a public queue: {}", e.name()))?;
            let _ = msg::close_link(l);
            Ok(())
        }),
        _ => Err(format!("the owner said {}", owner.said)),
    };
    owner.release()?;
    result
}

/// A child that works some numbers out (`work`: them, or the child's exit
/// status when it cannot), reports them through a pipe, then waits,
/// holding what it made (queues, kernel children), until
/// [`Held::release`]. Exit status 3: the report could not be written.
fn spawn_holding(work: impl FnOnce() -> Result<Vec<u64>, i32>) -> Result<Held, String> {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let (hold_r, hold_w) = unix::pipe().ctx("pipe")?;
    let child = spawn(move || {
        let _ = unix::close(r);
        let _ = unix::close(hold_w);
        let words = match work() {
            Ok(words) => words,
            Err(status) => return status,
        };
        let text: Vec<String> = words.iter().map(|w| format!("{w}")).collect();
        if write_all(w, text.join(" ").as_bytes()).is_err() {
            return 3;
        }
        let _ = unix::close(w);
        let _ = read_some(hold_r, 1);
        0
    })?;
    let _ = unix::close(w);
    let _ = unix::close(hold_r);
    let said = read_to_end(r).ctx("read the child's report");
    let _ = unix::close(r);
    let words = said
        .as_deref()
        .map(|b| String::from_utf8_lossy(b).split(' ').filter_map(|s| s.parse().ok()).collect())
        .unwrap_or_default();
    Ok(Held { child, words, said: format!("{said:?}"), hold_w })
}

/// A child of [`spawn_holding`], waiting.
struct Held {
    child: u64,
    /// The numbers it reported (none when its report was unreadable).
    words: Vec<u64>,
    /// Its report as read, for messages.
    said: String,
    hold_w: Fd,
}

impl Held {
    /// Let it end; it must exit 0. Once.
    fn release(&self) -> TestResult {
        let _ = unix::close(self.hold_w);
        expect_exit(self.child, 0)
    }
}

/// Runs `argv` as uid `uid` with `input` on standard input; its standard
/// output, standard error and exit status.
fn run_as(uid: u32, argv: &[&str], input: &str) -> Result<(String, String, Option<u32>), String> {
    let (in_r, in_w) = unix::pipe().ctx("pipe")?;
    let (out_r, out_w) = unix::pipe().ctx("pipe")?;
    let (err_r, err_w) = unix::pipe().ctx("pipe")?;
    let argv: Vec<String> = argv.iter().map(|s| String::from(*s)).collect();
    let child = spawn(move || {
        for (from, to) in [(in_r, 0), (out_w, 1), (err_w, 2)] {
            if unix::dup2(from, to).is_err() {
                return 120;
            }
        }
        for fd in [in_r, in_w, out_r, out_w, err_r, err_w] {
            let _ = unix::close(fd);
        }
        if uid != 0 && unix::setuid_gid(Some(uid), Some(uid)).is_err() {
            return 121;
        }
        let args: Vec<&str> = argv.iter().map(String::as_str).collect();
        let e = unix::execve(args[0], &args, &["PATH=/bin"]);
        122 + e.0 as i32
    })?;
    for fd in [in_r, out_w, err_w] {
        let _ = unix::close(fd);
    }
    // A program may end without reading its input (`login` run by a user
    // says "must be run by root" and exits): the write then meets a pipe
    // with no reader. That is the program's answer, told by its output
    // and status, not a failure to test; SIGPIPE would end this test
    // process instead (it did once, by timing), so it is ignored here and
    // EPIPE taken as "not read".
    let was_ignored = unix::signal_ignore(signal::SIGPIPE, true).ctx("ignore SIGPIPE")?;
    let wrote = match write_all(in_w, input.as_bytes()) {
        Err(e) if e == EPIPE => Ok(()),
        other => other,
    };
    unix::signal_ignore(signal::SIGPIPE, was_ignored).ctx("restore SIGPIPE")?;
    let _ = unix::close(in_w);
    let out = read_to_end(out_r);
    let err = read_to_end(err_r);
    let _ = unix::close(out_r);
    let _ = unix::close(err_r);
    let status = wait_for(child)?;
    wrote.ctx("write the input")?;
    let text =
        |r: Result<Vec<u8>, _>| r.map(|b| String::from_utf8_lossy(&b).into_owned()).ctx("read the output");
    Ok((text(out)?, text(err)?, status.exit_code()))
}

/// `/etc/shadow` is root's alone and `/bin/su` is set-user-ID root; `su`
/// asks a user for the target's password and refuses a wrong one with
/// "su: Authentication failure", status 1, running nothing; root needs
/// no password; `-` gives a login shell in the target's home.
pub fn su_checks_the_password() -> TestResult {
    let shadow = unix::stat("/etc/shadow").ctx("stat /etc/shadow")?;
    ensure!(
        shadow.mode & 0o7777 == 0o600 && shadow.uid == 0,
        "/etc/shadow is {:o} owned by {}",
        shadow.mode,
        shadow.uid
    );
    let su = unix::stat("/bin/su").ctx("stat /bin/su")?;
    ensure!(su.mode & 0o7777 == 0o4755 && su.uid == 0, "/bin/su is {:o} owned by {}", su.mode, su.uid);
    in_child(|| {
        become_user()?;
        expect_errno(unix::open("/etc/shadow", O_RDONLY, 0), EACCES, "a user reads /etc/shadow")?;
        Ok(())
    })?;
    let got = run_as(USER, &["/bin/su", "guest", "-c", "id -u; whoami; echo $HOME"], "guest\n")?;
    ensure!(got.0 == "1001\nguest\n/home/guest\n" && got.2 == Some(0), "su guest with its password: {got:?}");
    ensure!(got.1 == "Password: \n", "su's prompt: {:?}", got.1);
    for wrong in ["user\n", "Guest\n", "\n", ""] {
        let got = run_as(USER, &["/bin/su", "guest", "-c", "echo RAN"], wrong)?;
        ensure!(
            got.0.is_empty() && got.1.contains("su: Authentication failure") && got.2 == Some(1),
            "su guest with {wrong:?}: {got:?}"
        );
    }
    // To root, with root's password; a user's own password is not it.
    let got = run_as(USER, &["/bin/su", "-c", "id -u"], "root\n")?;
    ensure!(got.0 == "0\n" && got.2 == Some(0), "su to root: {got:?}");
    let got = run_as(USER, &["/bin/su", "-c", "id -u"], "user\n")?;
    ensure!(got.2 == Some(1) && got.0.is_empty(), "su to root with the user's password: {got:?}");
    // Root needs none, and `-` starts in the home with a fresh environment.
    let got = run_as(0, &["/bin/su", "-", "user", "-c", "id -u; pwd; echo $USER $SHELL $PATH"], "")?;
    ensure!(
        got.0 == "1000\n/home/user\nuser /bin/sh /bin\n" && got.2 == Some(0),
        "su - user as root: {got:?}"
    );
    let got = run_as(USER, &["/bin/su", "nobody-such"], "")?;
    ensure!(got.2 == Some(1) && got.1.contains("does not exist"), "su to an unknown user: {got:?}");
    Ok(())
}

/// `login`: a name and its password start the user's shell in their
/// home, with HOME, USER and SHELL set; a wrong password is "Login
/// incorrect" (three tries, then status 1); only root may run it.
pub fn login_starts_the_users_shell() -> TestResult {
    let script = "user\nuser\nid\npwd\necho $HOME $USER $SHELL\n";
    let got = run_as(0, &["/bin/login"], script)?;
    let want =
        "uid=1000(user) gid=1000(user) groups=1000(user),100(users)\n/home/user\n/home/user user /bin/sh\n";
    ensure!(got.0 == want && got.2 == Some(0), "login as user: {got:?}");
    let got = run_as(0, &["/bin/login", "guest"], "nope\nguest\nbad\nguest\nworse\n")?;
    ensure!(
        got.2 == Some(1) && got.0.is_empty() && got.1.matches("Login incorrect").count() == 3,
        "login with wrong passwords: {got:?}"
    );
    let got = run_as(0, &["/bin/login", "nobody-such"], "x\n")?;
    ensure!(got.2 == Some(1) && got.1.contains("Login incorrect"), "login of an unknown name: {got:?}");
    let got = run_as(USER, &["/bin/login", "guest"], "guest\n")?;
    ensure!(got.2 == Some(1) && got.1.contains("must be run by root"), "login run by a user: {got:?}");
    let st = unix::stat("/home/user").ctx("stat /home/user")?;
    ensure!(mode::is_dir(st.mode) && st.uid == USER, "/home/user is {:o} owned by {}", st.mode, st.uid);
    Ok(())
}

/// The kernel's `spawn` (and `proc_create`) from a user's process makes
/// processes the monitor never sees, so they are charged to the process
/// in the kernel (kernel/src/charges.rs), and so is what they make: at
/// most `abi::MAX_CHARGED_PROCESSES` at once, then `OutOfResources`, and
/// they end with it, so none outlives what `RLIMIT_NPROC` counted (a fork
/// bomb by `spawn` was possible before).
pub fn kernel_children_are_charged_and_end_with_it() -> TestResult {
    let user = spawn_holding(|| {
        if become_user().is_err() {
            return Err(2);
        }
        let mut words: Vec<u64> = Vec::new();
        for _ in 0..abi::MAX_CHARGED_PROCESSES - 1 {
            match sys::spawn("tchild", "sleep-forever") {
                Ok(p) => words.push(p.0),
                Err(_) => break,
            }
        }
        // The last place: a child that tries to spawn one of its own
        // (exit 99 when refused); what it makes is charged here too.
        let grandchild = match sys::spawn("tchild", "grandchild exit 7").and_then(|p| sys::wait(Some(p))) {
            Ok((_, abi::ExitStatus::Exited(code))) => u64::from(code),
            _ => 1000,
        };
        let mut refused = None;
        for _ in 0..4 {
            match sys::spawn("tchild", "sleep-forever") {
                Ok(p) => words.push(p.0),
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            }
        }
        let created = sys::proc_create("charged");
        let head = [refused.map_or(0, |e| e as u64), created.map_or_else(|e| e as u64, |_| 0), grandchild];
        Ok(head.iter().chain(words.iter()).copied().collect())
    })?;
    // The kernel pids spawned, alive while their process lives: the
    // kernel's kill from here (not their parent) is refused, not ESRCH.
    let alive_before: Vec<bool> =
        user.words.iter().skip(3).map(|&k| sys::kill(abi::Pid(k)) == Err(Error::PermissionDenied)).collect();
    user.release()?;
    let words = &user.words;
    ensure!(words.len() >= 3, "the user's process said {}", user.said);
    let spawned = &words[3..];
    ensure!(
        spawned.len() == abi::MAX_CHARGED_PROCESSES,
        "{} spawns succeeded, expected {}",
        spawned.len(),
        abi::MAX_CHARGED_PROCESSES
    );
    ensure!(words[0] == Error::OutOfResources as u64, "the spawn past the limit gave error {}", words[0]);
    ensure!(words[1] == Error::OutOfResources as u64, "proc_create past the limit gave error {}", words[1]);
    ensure!(
        words[2] == 99,
        "a charged child's own spawn past the limit: it exited with {}, not 99",
        words[2]
    );
    ensure!(alive_before.iter().all(|&a| a), "a spawned process was not alive: {alive_before:?}");
    // They end with their process (at once, or at the next kernel exit
    // of a CPU that ran one): none is left.
    let deadline = unix::clock_ns() + 10_000_000_000;
    loop {
        let left: Vec<u64> = spawned
            .iter()
            .copied()
            .filter(|&k| sys::kill(abi::Pid(k)) != Err(Error::NoSuchProcess))
            .collect();
        if left.is_empty() {
            return Ok(());
        }
        if unix::clock_ns() > deadline {
            return Err(format!("{} charged processes outlived their process: {left:x?}", left.len()));
        }
        sys::sleep_ns(1_000_000);
    }
}

/// A user's process cannot raise its kernel priority above where it
/// started, nor start a child above it: lowering and going back up is
/// free, as Linux's `nice` (kernel/src/charges.rs); raising further is
/// root's, through the monitor (`unix::set_priority`).
pub fn non_root_cannot_raise_its_priority() -> TestResult {
    in_child(|| {
        become_user()?;
        let me = sys::getpid();
        let start = sys::info(abi::InfoKey::Priority) as u8;
        ensure!(start < abi::MAX_PRIORITY, "a user's process starts at the top priority {start}");
        expect_denied(sys::set_priority(me, abi::MAX_PRIORITY), "set_priority to MAX_PRIORITY")?;
        expect_denied(sys::set_priority(me, start + 1), "set_priority one above the start")?;
        expect_denied(
            sys::spawn_with_priority("tchild", "exit 0", u64::from(abi::MAX_PRIORITY)),
            "spawn at MAX_PRIORITY",
        )?;
        expect_errno(unix::set_priority(abi::MAX_PRIORITY), EPERM, "the monitor's set_priority as a user")?;
        if start > 0 {
            sys::set_priority(me, start - 1).map_err(|e| format!("lowering: {}", e.name()))?;
            ensure!(sys::info(abi::InfoKey::Priority) == u64::from(start - 1), "lowering did not take");
            sys::set_priority(me, start).map_err(|e| format!("back to the start: {}", e.name()))?;
        }
        ensure!(sys::info(abi::InfoKey::Priority) == u64::from(start), "the priority moved");
        Ok(())
    })?;
    // Root may, through the monitor.
    in_child(|| {
        unix::set_priority(abi::MAX_PRIORITY).ctx("the monitor's set_priority as root")?;
        let now = sys::info(abi::InfoKey::Priority);
        ensure!(now == u64::from(abi::MAX_PRIORITY), "root's raise gave priority {now}");
        Ok(())
    })
}

/// Who may set the console's foreground group (the group ^C signals,
/// whoever owns it): only the monitor at the console manager, and through
/// it only a process whose controlling terminal is the console, to a
/// group of its session (POSIX `tcsetpgrp`). A user's process that holds
/// a console descriptor and left the session (`setsid`) cannot.
pub fn foreground_group_only_from_the_session() -> TestResult {
    let console =
        unix::open("/dev/console", protocols::unix::open_flags::O_RDWR, 0).ctx("open /dev/console")?;
    let before = unix::tcgetpgrp(console).ctx("tcgetpgrp")?;
    let result = in_child(|| {
        become_user()?;
        let me = unix::getpid();
        // In the session: its own group (made here) is fine; no group
        // (a pid that is no process) is not.
        unix::setpgid(0, 0).ctx("setpgid")?;
        unix::tcsetpgrp(console, me).ctx("tcsetpgrp to its own group")?;
        ensure!(unix::tcgetpgrp(console) == Ok(me), "the foreground did not move to its group");
        expect_errno(unix::tcsetpgrp(console, 0x7fff_fff0), EPERM, "tcsetpgrp to no group")?;
        let (pr, pw) = unix::pipe().ctx("pipe")?;
        expect_errno(unix::tcsetpgrp(pr, me), protocols::unix::errno::ENOTTY, "tcsetpgrp on a pipe")?;
        let _ = (unix::close(pr), unix::close(pw));
        expect_errno(unix::tcsetpgrp(60, me), EBADF, "tcsetpgrp on a closed descriptor")?;
        unix::tcsetpgrp(console, before).ctx("tcsetpgrp back")?;
        Ok(())
    });
    let outside = in_child(|| {
        become_user()?;
        let me = unix::getpid();
        ensure!(unix::setsid() == Ok(me), "setsid");
        expect_errno(unix::setsid(), EPERM, "setsid of a session leader")?;
        // Outside the console's session the console is no controlling
        // terminal: neither its own group nor the session's.
        expect_errno(unix::tcsetpgrp(console, me), protocols::unix::errno::ENOTTY, "tcsetpgrp after setsid")?;
        expect_errno(
            unix::tcsetpgrp(console, before),
            protocols::unix::errno::ENOTTY,
            "tcsetpgrp of the old group",
        )?;
        // Nor may it join a group of the console's session.
        expect_errno(unix::setpgid(0, before), EPERM, "setpgid into another session's group")?;
        // The console manager takes the setting from the monitor alone.
        let answer = set_foreground_directly(console, me)?;
        ensure!(answer == Err(EPERM), "a direct io::OP_FOREGROUND set gave {answer:?}");
        Ok(())
    });
    let after = unix::tcgetpgrp(console);
    let _ = unix::tcsetpgrp(console, before);
    let _ = unix::close(console);
    result?;
    outside?;
    ensure!(after == Ok(before), "the foreground group is {after:?}, was {before}");
    Ok(())
}

/// `io::OP_FOREGROUND` set sent straight to the manager of `fd`, as any
/// holder of its handle could: the manager's answer.
fn set_foreground_directly(fd: Fd, pgid: u64) -> Result<Result<u64, protocols::unix::Errno>, String> {
    use protocols::unix::{FdInfo, io, monitor};
    let (mon, q) = sys::bootstrap(abi::bootstrap::MONITOR).ok_or("no monitor")?;
    let link = msg::open_link(mon, Queue(q)).map_err(|e| format!("link to the monitor: {}", e.name()))?;
    let (w, _) = msg::call(link, &[monitor::OP_FD_INFO, fd as u64, 0, 0], &[], &mut [])
        .map_err(|e| format!("OP_FD_INFO: {}", e.name()))?;
    let _ = msg::close_link(link);
    let info = FdInfo::decode([w[1], w[2], w[3]]);
    let link = msg::open_link(abi::Pid(info.manager_pid), Queue(info.manager_queue))
        .map_err(|e| format!("link to the console manager: {}", e.name()))?;
    let (w, _) = msg::call(link, &[io::OP_FOREGROUND, info.handle, 1, pgid], &[], &mut [])
        .map_err(|e| format!("OP_FOREGROUND: {}", e.name()))?;
    let _ = msg::close_link(link);
    Ok(protocols::unix::result(w[0]))
}
