//! Job control at the console (issue 16; POSIX.1-2017 XBD 11.1.4,
//! "Terminal Access Control"; docs/reliability.md, "The console and job
//! control"): only the foreground process group reads typed lines; a
//! background reader gets `SIGTTIN` and waits, or `EINTR`, or `EIO`; and
//! only the terminal manager init named takes the console driver's input.
//!
//! Lines are "typed" with root's `TIOCSTI` (`monitor::OP_TTY_TYPE`): the
//! bytes enter the terminal's line discipline exactly as keys from the
//! serial line do, so these tests need no person at the console. Each test
//! makes its own group the console's foreground first and gives the
//! foreground back at its end.
//!
//! Ordering without timing: a background reader is known to be held when
//! the `SIGTTIN` its read caused has reached a member of its group that
//! catches it (the group's leader here), because the terminal manager
//! decides a read's fate and signals in one step. Every wait is a blocking
//! read of a pipe or a `wait` for a child.
//!
//! What it is not: a test of ^C (the terminal-restart step of `cargo xtask
//! test` types at the real serial line) or of stopped jobs (there are
//! none: `SIGTTIN`'s default action ends nobody, the read waits instead).

use crate::ensure;
use crate::util::{
    Context, TestResult, expect_errno, expect_exit, in_child, poll_until, read_to_end, spawn, write_all,
};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use protocols::console;
use protocols::unix::errno::{EBADF, EINTR, EIO, ENOTTY, EPERM};
use protocols::unix::open_flags::O_RDWR;
use protocols::unix::{Errno, FdInfo, monitor, signal};
use runtime::msg::{self, Queue};
use runtime::sys;
use runtime::unix::{self, Fd};

/// The boot image's test user (etc/passwd).
const USER: u32 = 1000;
const TTIN: u64 = 1 << signal::SIGTTIN;

fn become_user() -> TestResult {
    unix::setuid_gid(Some(USER), Some(USER)).ctx("setuid 1000")?;
    ensure!(unix::getuid() == USER, "uid {} after setuid 1000", unix::getuid());
    Ok(())
}

/// Root's `TIOCSTI`: `bytes` typed into the terminal open on `fd`.
fn type_into(fd: Fd, bytes: &[u8]) -> Result<u64, Errno> {
    let (mon, q) = sys::bootstrap(abi::bootstrap::MONITOR).ok_or(EIO)?;
    let link = msg::open_link(mon, Queue(q)).map_err(|_| EIO)?;
    let answer = msg::call(link, &[monitor::OP_TTY_TYPE, fd as u64, 0, 0], bytes, &mut []);
    let _ = msg::close_link(link);
    match answer {
        Ok((w, _)) => protocols::unix::result(w[0]),
        Err(_) => Err(EIO),
    }
}

/// Read one line from `fd` (the terminal answers one line per read).
fn read_line(fd: Fd) -> Result<Vec<u8>, Errno> {
    let mut buf = [0u8; 128];
    let n = unix::read(fd, &mut buf)?;
    Ok(buf[..n].to_vec())
}

/// The console open read-write, with this process's group as its
/// foreground; returns it and the foreground to give back.
fn console_in_front() -> Result<(Fd, u64), String> {
    let console = unix::open("/dev/console", O_RDWR, 0).ctx("open /dev/console")?;
    let before = unix::tcgetpgrp(console).ctx("tcgetpgrp")?;
    let mine = unix::getpgrp().ctx("getpgrp")?;
    unix::tcsetpgrp(console, mine).ctx("tcsetpgrp to the test's group")?;
    Ok((console, before))
}

fn give_back(console: Fd, before: u64) {
    let _ = unix::tcsetpgrp(console, before);
    let _ = unix::close(console);
}

/// A background group of two: a leader that catches `SIGTTIN` and says
/// when it arrives, and a reader (uid 1000 if `as_user`) that reads one
/// line of the console and writes what it got to `result`.
struct Held {
    leader: u64,
    reader: u64,
    result: Fd,
}

/// Start a [`Held`] group and return once its reader's read is held at the
/// terminal manager (the leader has seen the `SIGTTIN`).
fn start_held_reader(console: Fd, as_user: bool) -> Result<Held, String> {
    let (ready_r, ready_w) = unix::pipe().ctx("pipe")?;
    let (result_r, result_w) = unix::pipe().ctx("pipe")?;
    let leader = spawn(move || {
        let _ = (unix::close(ready_r), unix::close(result_r), unix::close(result_w));
        if unix::setpgid(0, 0).is_err() || unix::signal_catch(signal::SIGTTIN, true).is_err() {
            return 11;
        }
        if as_user && become_user().is_err() {
            return 12;
        }
        if write_all(ready_w, b"c").is_err() {
            return 13;
        }
        match unix::signal_wait() {
            Ok(bits) if bits & TTIN != 0 => {}
            _ => return 14,
        }
        if write_all(ready_w, b"s").is_err() {
            return 15;
        }
        0
    })?;
    let _ = unix::setpgid(leader, leader);
    let mut byte = [0u8; 1];
    let said = unix::read(ready_r, &mut byte);
    ensure!(said == Ok(1) && byte[0] == b'c', "the group's leader did not start ({said:?})");
    let reader = spawn(move || {
        let _ = (unix::close(ready_r), unix::close(ready_w), unix::close(result_r));
        if unix::setpgid(0, leader).is_err() {
            return 11;
        }
        if as_user && become_user().is_err() {
            return 12;
        }
        let got = match read_line(console) {
            Ok(line) => line,
            Err(e) => format!("error {}", e.name()).into_bytes(),
        };
        if write_all(result_w, &got).is_err() {
            return 13;
        }
        0
    })?;
    let _ = unix::setpgid(reader, leader);
    let _ = (unix::close(ready_w), unix::close(result_w));
    let said = unix::read(ready_r, &mut byte);
    let _ = unix::close(ready_r);
    let held = Held { leader, reader, result: result_r };
    if said != Ok(1) || byte[0] != b's' {
        let _ = end_held(&held);
        return Err(format!("the background read never sent SIGTTIN to its group ({said:?})"));
    }
    Ok(held)
}

/// Kill what is left of a [`Held`] group and reap it.
fn end_held(h: &Held) -> TestResult {
    let _ = unix::kill(h.reader as i64, signal::SIGKILL);
    let _ = unix::kill(h.leader as i64, signal::SIGKILL);
    let _ = unix::close(h.result);
    let _ = unix::waitpid(h.reader as i64, false);
    let _ = unix::waitpid(h.leader as i64, false);
    Ok(())
}

/// The foreground reads every line typed, in order, while a background
/// group's reader waits; once its group is given the terminal, the held
/// read takes the next line, and only that one. With `password`, the
/// foreground reads as `su` does (the line not echoed), and the
/// background reader is a user's.
fn foreground_gets_every_line(password: bool) -> TestResult {
    let (console, before) = console_in_front()?;
    let held = match start_held_reader(console, password) {
        Ok(h) => h,
        Err(e) => {
            give_back(console, before);
            return Err(e);
        }
    };
    let result = (|| -> TestResult {
        if password {
            unix::tty_no_echo_line(console).ctx("no-echo line")?;
            ensure!(type_into(console, b"s3cret\n") == Ok(7), "TIOCSTI of the password");
            let got = read_line(console).ctx("read the password")?;
            ensure!(got == b"s3cret\n", "the foreground read {:?}", String::from_utf8_lossy(&got));
        }
        for line in [&b"one\n"[..], b"two\n"] {
            ensure!(type_into(console, line) == Ok(line.len() as u64), "TIOCSTI");
            let got = read_line(console).ctx("foreground read")?;
            ensure!(got == line, "the foreground read {:?}", String::from_utf8_lossy(&got));
        }
        // Typed ahead, several lines at once: still all the foreground's.
        type_into(console, b"a\nb\nc\n").ctx("TIOCSTI of three lines")?;
        for line in [&b"a\n"[..], b"b\n", b"c\n"] {
            let got = read_line(console).ctx("foreground read")?;
            ensure!(got == line, "the foreground read {:?}", String::from_utf8_lossy(&got));
        }
        // `fg`: the background group gets the terminal, and its held read
        // the next line typed.
        unix::tcsetpgrp(console, held.leader).ctx("tcsetpgrp to the background group")?;
        type_into(console, b"for-b\n").ctx("TIOCSTI")?;
        let got = read_to_end(held.result).ctx("the background reader's report")?;
        ensure!(
            got == b"for-b\n",
            "the background reader read {:?}, not the line typed once it was in the foreground",
            String::from_utf8_lossy(&got)
        );
        expect_exit(held.reader, 0)?;
        expect_exit(held.leader, 0)
    })();
    if result.is_err() {
        let _ = end_held(&held);
    } else {
        let _ = unix::close(held.result);
    }
    give_back(console, before);
    result
}

/// A background process reading the console takes no line: the
/// foreground gets every line, the reader waits (`SIGTTIN` to its group)
/// until its group is the foreground.
pub fn background_read_takes_no_line() -> TestResult {
    foreground_gets_every_line(false)
}

/// `su`'s password prompt cannot be stolen: a user's background process
/// already waiting on the console gets nothing of the line typed at the
/// no-echo prompt.
pub fn password_line_cannot_be_stolen() -> TestResult {
    foreground_gets_every_line(true)
}

/// A background reader that catches `SIGTTIN` gets the signal and `EINTR`;
/// one that ignores it gets `EIO` (POSIX); neither takes a line.
pub fn background_read_sigttin_caught_or_ignored() -> TestResult {
    let (console, before) = console_in_front()?;
    let caught = in_child(|| {
        unix::setpgid(0, 0).ctx("setpgid")?;
        unix::signal_catch(signal::SIGTTIN, true).ctx("catch SIGTTIN")?;
        expect_errno(read_line(console), EINTR, "a background read catching SIGTTIN")?;
        ensure!(unix::signal_pending() & TTIN != 0, "no SIGTTIN pending after the background read");
        Ok(())
    });
    let ignored = in_child(|| {
        unix::setpgid(0, 0).ctx("setpgid")?;
        unix::signal_ignore(signal::SIGTTIN, true).ctx("ignore SIGTTIN")?;
        expect_errno(read_line(console), EIO, "a background read ignoring SIGTTIN")
    });
    // The foreground still reads what is typed next.
    let foreground = (|| -> TestResult {
        type_into(console, b"mine\n").ctx("TIOCSTI")?;
        let got = read_line(console).ctx("foreground read")?;
        ensure!(got == b"mine\n", "the foreground read {:?}", String::from_utf8_lossy(&got));
        Ok(())
    })();
    give_back(console, before);
    caught?;
    ignored?;
    foreground
}

/// A read of the console by a process whose controlling terminal it is
/// not (a session of its own, `setsid`) or from an orphaned background
/// group gets `EIO` at once.
pub fn no_terminal_or_orphaned_group_gets_eio() -> TestResult {
    let (console, before) = console_in_front()?;
    let no_terminal = in_child(|| {
        unix::setsid().ctx("setsid")?;
        expect_errno(read_line(console), EIO, "a read from another session")
    });
    // The orphan: its parent leaves, so no member of its group has a
    // parent in another group of the session.
    let orphaned = (|| -> TestResult {
        let (r, w) = unix::pipe().ctx("pipe")?;
        let parent = spawn(move || {
            let _ = unix::close(r);
            if unix::setpgid(0, 0).is_err() {
                return 11;
            }
            let me = unix::getpid();
            let child = spawn(move || {
                let adopted = poll_until(3000, 10, || Ok(unix::getppid() != me));
                let said = match adopted {
                    Ok(true) => match read_line(console) {
                        Err(e) => e.name().to_string(),
                        Ok(line) => format!("read {:?}", String::from_utf8_lossy(&line)),
                    },
                    _ => String::from("never adopted"),
                };
                let _ = write_all(w, said.as_bytes());
                0
            });
            if child.is_err() { 12 } else { 0 }
        })?;
        let _ = unix::close(w);
        expect_exit(parent, 0)?;
        let said = read_to_end(r).ctx("the orphan's report")?;
        let _ = unix::close(r);
        ensure!(
            said == EIO.name().as_bytes(),
            "the orphaned group's read: {}",
            String::from_utf8_lossy(&said)
        );
        Ok(())
    })();
    give_back(console, before);
    no_terminal?;
    orphaned
}

/// Only root types into the terminal (`TIOCSTI`), and only into its
/// controlling terminal: bad requests get clear errors.
pub fn typing_is_root_only() -> TestResult {
    let (console, before) = console_in_front()?;
    let (r, w) = unix::pipe().ctx("pipe")?;
    let checks = (|| -> TestResult {
        expect_errno(type_into(r, b"x"), ENOTTY, "TIOCSTI on a pipe")?;
        expect_errno(type_into(60, b"x"), EBADF, "TIOCSTI on a closed descriptor")?;
        ensure!(type_into(console, b"") == Ok(0), "TIOCSTI of nothing");
        in_child(|| {
            become_user()?;
            expect_errno(type_into(console, b"rm -rf /\n"), EPERM, "TIOCSTI by a user")
        })?;
        in_child(|| {
            unix::setsid().ctx("setsid")?;
            expect_errno(type_into(console, b"x"), ENOTTY, "TIOCSTI outside the console's session")
        })
    })();
    let _ = (unix::close(r), unix::close(w));
    give_back(console, before);
    checks
}

/// The console driver gives its typed input to the terminal manager init
/// named and to nobody else: a user's `OP_SUBSCRIBE` or `OP_READ` while the
/// terminal manager runs is refused with `NOT_THE_OWNER`, and so is root's
/// (the terminal-restart step checks the same while it is down).
pub fn console_input_only_to_the_tty() -> TestResult {
    let console_fd = unix::open("/dev/console", O_RDWR, 0).ctx("open /dev/console")?;
    let tty = manager_of(console_fd);
    let _ = unix::close(console_fd);
    let tty = tty?;
    let (driver, driver_queue) = sys::bootstrap(abi::bootstrap::CONSOLE).ok_or("no console driver")?;
    let try_to_take = move || -> TestResult {
        let queue = msg::open_queue(4, true).map_err(|e| format!("open a queue: {}", e.name()))?;
        let link = msg::open_link(driver, Queue(driver_queue))
            .map_err(|e| format!("link to the console driver: {}", e.name()))?;
        let sub = msg::call(link, &[console::OP_SUBSCRIBE, queue.0 as u64, 0, 0], &[], &mut []);
        let read = msg::call(link, &[console::OP_READ, 16, 0, 0], &[], &mut []);
        let _ = msg::close_link(link);
        let _ = msg::close_queue(queue);
        for (what, answer) in [("OP_SUBSCRIBE", sub), ("OP_READ", read)] {
            match answer {
                Ok((w, _)) if w[0] == console::NOT_THE_OWNER => {}
                Ok((w, _)) => return Err(format!("the console driver answered {what} with {:#x}", w[0])),
                Err(e) => return Err(format!("{what}: {}", e.name())),
            }
        }
        Ok(())
    };
    in_child(|| {
        become_user()?;
        try_to_take()
    })?;
    try_to_take()?;
    // The input still goes to the terminal manager.
    let link = msg::open_link(driver, Queue(driver_queue)).map_err(|e| format!("link: {}", e.name()))?;
    let stats = msg::call(link, &[console::OP_INPUT_STATS, 0, 0, 0], &[], &mut []);
    let _ = msg::close_link(link);
    let (w, _) = stats.map_err(|e| format!("OP_INPUT_STATS: {}", e.name()))?;
    ensure!(w[2] == tty, "the console's input goes to {:#x}, not the terminal manager {tty:#x}", w[2]);
    Ok(())
}

/// The kernel pid of the manager serving descriptor `fd`.
fn manager_of(fd: Fd) -> Result<u64, String> {
    let (mon, q) = sys::bootstrap(abi::bootstrap::MONITOR).ok_or("no monitor")?;
    let link = msg::open_link(mon, Queue(q)).map_err(|e| format!("link to the monitor: {}", e.name()))?;
    let answer = msg::call(link, &[monitor::OP_FD_INFO, fd as u64, 0, 0], &[], &mut []);
    let _ = msg::close_link(link);
    let (w, _) = answer.map_err(|e| format!("OP_FD_INFO: {}", e.name()))?;
    protocols::unix::result(w[0]).ctx("OP_FD_INFO")?;
    Ok(FdInfo::decode([w[1], w[2], w[3]]).manager_pid)
}
