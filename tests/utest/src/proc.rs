//! Processes: fork/exec/wait trees, exit statuses and signals, process
//! groups, orphans, ids, times and the process table.

use crate::ensure;
use crate::util::*;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::Errno;
use protocols::unix::errno::*;
use protocols::unix::signal::*;
use runtime::unix::{self, Fd};

/// A child that blocks reading `fd` until the parent writes a byte (or
/// closes the other end), then exits with `code`.
fn blocked_child(fd: Fd, code: i32) -> Result<u64, String> {
    spawn(move || {
        let mut b = [0u8; 1];
        let _ = unix::read(fd, &mut b);
        code
    })
}

pub fn fork_returns_pids() -> TestResult {
    let me = unix::getpid();
    let parent_of_me = unix::getppid();
    ensure!(parent_of_me != 0 && parent_of_me != me, "getppid {parent_of_me}");
    let (r, w) = unix::pipe().ctx("pipe")?;
    let child = spawn(move || {
        let report = format!("{} {}", unix::getpid(), unix::getppid());
        if write_all(w, report.as_bytes()).is_ok() { 0 } else { 1 }
    })?;
    unix::close(w).ctx("close")?;
    let text = read_to_end(r).ctx("read")?;
    unix::close(r).ctx("close")?;
    expect_exit(child, 0)?;
    let text = String::from_utf8_lossy(&text).into_owned();
    let mut words = text.split(' ').map(|w| w.parse::<u64>().unwrap_or(0));
    let (pid, ppid) = (words.next().unwrap_or(0), words.next().unwrap_or(0));
    ensure!(pid == child, "the child's getpid {pid} differs from fork's {child}");
    ensure!(ppid == me, "the child's getppid {ppid}, expected {me}");
    ensure!(child != me, "fork returned the parent's own pid");
    ensure!(unix::getpid() == me && unix::getppid() == parent_of_me, "the parent's ids changed");
    Ok(())
}

pub fn exit_codes_reach_the_parent() -> TestResult {
    // (code given to exit, status the parent sees): only the low 8 bits.
    for (code, seen) in [(0, 0), (1, 1), (42, 42), (255, 255), (256, 0), (300, 44)] {
        let child = spawn(move || code)?;
        expect_exit(child, seen)?;
    }
    // Returning from main and calling exit() are the same.
    let child = spawn(|| unix::exit(9))?;
    expect_exit(child, 9)
}

pub fn killed_children_report_the_signal() -> TestResult {
    for sig in [SIGTERM, SIGKILL, SIGINT, SIGHUP] {
        let (r, w) = unix::pipe().ctx("pipe")?;
        let child = blocked_child(r, 0)?;
        unix::kill(child as i64, sig).ctx(&format!("kill {child} with {sig}"))?;
        let result = expect_signal(child, sig);
        unix::close(r).ctx("close")?;
        unix::close(w).ctx("close")?;
        result?;
    }
    // A running (not blocked) child too.
    let child = spawn(|| {
        let mut x = 0u64;
        loop {
            x = core::hint::black_box(x.wrapping_add(1));
        }
    })?;
    unix::kill(child as i64, SIGTERM).ctx("kill a spinning child")?;
    expect_signal(child, SIGTERM)
}

pub fn faulting_child_reports_sigsegv() -> TestResult {
    let child = spawn(crate::raw::touch_unmapped_memory)?;
    expect_signal(child, SIGSEGV)
}

pub fn wait_nohang() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let child = blocked_child(r, 5)?;
    let a = unix::waitpid(child as i64, true).ctx("waitpid WNOHANG")?;
    let b = unix::waitpid(-1, true).ctx("waitpid -1 WNOHANG")?;
    write_all(w, b"x").ctx("write")?;
    let result = expect_exit(child, 5);
    unix::close(r).ctx("close")?;
    unix::close(w).ctx("close")?;
    ensure!(a.is_none(), "WNOHANG on a running child returned {a:?}");
    ensure!(b.is_none(), "WNOHANG for any child returned {b:?}");
    result?;
    // An ended child is returned by WNOHANG too.
    let child = spawn(|| 6)?;
    let got = poll_until(2000, 2, || Ok(in_process_table(child)? == Some(b'Z')))?;
    ensure!(got, "the child never showed as ended in ps");
    match unix::waitpid(child as i64, true).ctx("waitpid WNOHANG on an ended child")? {
        Some((pid, st)) if pid == child && st.exit_code() == Some(6) => {}
        other => return Err(format!("WNOHANG on an ended child returned {other:?}")),
    }
    expect_errno(unix::waitpid(-1, true), ECHILD, "WNOHANG with no children")
}

pub fn wait_errors() -> TestResult {
    in_child(|| {
        expect_errno(unix::waitpid(-1, false), ECHILD, "wait with no children")?;
        expect_errno(unix::waitpid(unix::getppid() as i64, false), ECHILD, "wait for the parent")?;
        expect_errno(unix::waitpid(unix::getpid() as i64, false), ECHILD, "wait for oneself")?;
        expect_errno(unix::waitpid(1, false), ECHILD, "wait for init")?;
        let child = spawn(|| 0)?;
        expect_exit(child, 0)?;
        expect_errno(unix::waitpid(child as i64, false), ECHILD, "wait twice for one child")?;
        Ok(())
    })
}

pub fn wait_for_a_specific_child() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let slow = blocked_child(r, 1)?;
    let fast = spawn(|| 2)?;
    let other = spawn(|| 3)?;
    // The ended children must not satisfy a wait for the slow one.
    write_all(w, b"x").ctx("write")?;
    let result = expect_exit(slow, 1);
    unix::close(r).ctx("close")?;
    unix::close(w).ctx("close")?;
    result?;
    let mut rest = Vec::new();
    for _ in 0..2 {
        match unix::waitpid(-1, false).ctx("wait any")? {
            Some((pid, st)) => rest.push((pid, st.exit_code())),
            None => return Err(String::from("wait any returned nothing")),
        }
    }
    rest.sort_unstable();
    let mut want = [(fast, Some(2)), (other, Some(3))];
    want.sort_unstable();
    ensure!(rest == want, "wait any returned {rest:?}, expected {want:?}");
    Ok(())
}

pub fn fork_tree() -> TestResult {
    // Three children, each with two grandchildren; each child exits with
    // the sum of its grandchildren's codes plus its own number.
    let mut kids = Vec::new();
    for i in 1..=3u32 {
        let pid = spawn(move || {
            let mut sum = i as i32;
            let mut grandkids = Vec::new();
            for j in 1..=2u32 {
                match spawn(move || (10 * i + j) as i32) {
                    Ok(p) => grandkids.push(p),
                    Err(_) => return 200,
                }
            }
            for g in grandkids {
                match wait_for(g) {
                    Ok(st) => sum += st.exit_code().map_or(100, |c| c as i32),
                    Err(_) => return 201,
                }
            }
            if unix::waitpid(-1, true).map(|_| ()).err() != Some(ECHILD) {
                return 202;
            }
            sum
        })?;
        kids.push((pid, i));
    }
    for (pid, i) in kids {
        // Grandchildren i1 and i2: codes 10i+1 and 10i+2.
        let want = i + (10 * i + 1) + (10 * i + 2);
        expect_exit(pid, want)?;
    }
    Ok(())
}

pub fn orphans_go_to_init() -> TestResult {
    let (go_r, go_w) = unix::pipe().ctx("pipe")?;
    let (rep_r, rep_w) = unix::pipe().ctx("pipe")?;
    let child = spawn(move || {
        let grandchild = spawn(move || {
            let mut b = [0u8; 1];
            let _ = unix::read(go_r, &mut b);
            let text = format!("{}", unix::getppid());
            let _ = write_all(rep_w, text.as_bytes());
            0
        });
        match grandchild {
            Ok(g) => {
                let text = format!("{g} ");
                let _ = write_all(rep_w, text.as_bytes());
                0
            }
            Err(_) => 1,
        }
    })?;
    unix::close(go_r).ctx("close")?;
    unix::close(rep_w).ctx("close")?;
    let result = (|| {
        expect_exit(child, 0)?;
        // The child is gone: its child is now init's.
        write_all(go_w, b"x").ctx("write")?;
        unix::close(go_w).ctx("close")?;
        let text = read_to_end(rep_r).ctx("read")?;
        let text = String::from_utf8_lossy(&text).into_owned();
        let mut words = text.split_whitespace().map(|w| w.parse::<u64>().unwrap_or(0));
        let (grandchild, ppid) = (words.next().unwrap_or(0), words.next().unwrap_or(0));
        ensure!(grandchild != 0, "no report from the child: {text:?}");
        ensure!(ppid == 1, "the orphan's getppid is {ppid}, expected 1 (init)");
        // When the orphan ends, init reaps it: no zombie stays behind.
        let gone = poll_until(1000, 5, || Ok(in_process_table(grandchild)?.is_none()))?;
        let state = in_process_table(grandchild)?;
        ensure!(
            gone,
            "the ended orphan {grandchild} stays in the process table (state {:?})",
            state.map(char::from)
        );
        Ok(())
    })();
    let _ = unix::close(go_w);
    unix::close(rep_r).ctx("close")?;
    result
}

pub fn process_groups_and_kill_pgid() -> TestResult {
    let my_group = unix::getpgrp().ctx("getpgrp")?;
    ensure!(my_group != 0, "process group 0");
    let (r, w) = unix::pipe().ctx("pipe")?;
    let (ready_r, ready_w) = unix::pipe().ctx("pipe")?;
    // The first child makes itself a group leader and checks it.
    let leader = spawn(move || {
        if unix::setpgid(0, 0).is_err() || unix::getpgrp() != Ok(unix::getpid()) {
            return 1;
        }
        let _ = write_all(ready_w, b"L");
        let mut b = [0u8; 1];
        let _ = unix::read(r, &mut b);
        0
    })?;
    let _ = unix::close(ready_w);
    // The parent sets it too, so the group exists whichever runs first.
    let result = (|| {
        unix::setpgid(leader, leader).ctx("setpgid(leader, leader)")?;
        let mut b = [0u8; 1];
        read_exact(ready_r, &mut b)?;
        let member = blocked_child(r, 0)?;
        unix::setpgid(member, leader).ctx("setpgid(member, leader)")?;
        let table = unix::ps().ctx("ps")?;
        let group_of = |pid: u64| table.iter().find(|p| p.pid == pid).map(|p| p.pgid);
        let ok = group_of(leader) == Some(leader) && group_of(member) == Some(leader);
        ensure!(ok, "ps shows groups {:?} and {:?}, expected {leader}", group_of(leader), group_of(member));
        ensure!(unix::getpgrp().ctx("getpgrp")? == my_group, "the parent's group changed");
        unix::kill(-(leader as i64), SIGTERM).ctx("kill(-pgid, SIGTERM)")?;
        expect_signal(member, SIGTERM)
    })();
    let leader_status = wait_for(leader);
    for fd in [r, w, ready_r] {
        let _ = unix::close(fd);
    }
    result?;
    let l = leader_status?;
    ensure!(l.signal() == Some(SIGTERM), "the leader {}, expected SIGTERM", describe(&l));
    expect_errno(unix::kill(-(leader as i64), SIGTERM), ESRCH, "kill an empty group")?;
    Ok(())
}

/// `kill(-pgid)` reaches every member, none outside.
pub fn kill_pgid_reaches_every_member_only() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let mut members = Vec::new();
    let first = blocked_child(r, 0)?;
    unix::setpgid(first, first).ctx("setpgid first")?;
    members.push(first);
    for _ in 0..3 {
        let pid = blocked_child(r, 0)?;
        unix::setpgid(pid, first).ctx("setpgid member")?;
        members.push(pid);
    }
    let outsider = blocked_child(r, 7)?;
    let killed = unix::kill(-(first as i64), SIGKILL).ctx("kill(-pgid, SIGKILL)");
    let mut result = killed;
    for &m in &members {
        let r = expect_signal(m, SIGKILL);
        if result.is_ok() {
            result = r;
        }
    }
    // The outsider is still alive: it exits normally when released.
    let alive = unix::kill(outsider as i64, 0).ctx("kill(outsider, 0)");
    write_all(w, b"x").ctx("write")?;
    let outsider_result = expect_exit(outsider, 7);
    unix::close(r).ctx("close")?;
    unix::close(w).ctx("close")?;
    result?;
    alive?;
    outsider_result
}

pub fn setpgid_errors() -> TestResult {
    expect_errno(unix::setpgid(1, 1), ESRCH, "setpgid of a process that is not a child")?;
    expect_errno(unix::setpgid(999_999, 0), ESRCH, "setpgid of a missing process")?;
    let child = spawn(|| 0)?;
    expect_exit(child, 0)?;
    expect_errno(unix::setpgid(child, child), ESRCH, "setpgid of a reaped child")
}

pub fn kill_errors() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let child = blocked_child(r, 0)?;
    let result: TestResult = (|| {
        unix::kill(child as i64, 0).ctx("kill(child, 0) on a live child")?;
        expect_errno(unix::kill(child as i64, 99), EINVAL, "signal 99")?;
        expect_errno(unix::kill(child as i64, 32), EINVAL, "signal 32")?;
        Ok(())
    })();
    write_all(w, b"x").ctx("write")?;
    expect_exit(child, 0)?;
    unix::close(r).ctx("close")?;
    unix::close(w).ctx("close")?;
    result?;
    expect_errno(unix::kill(child as i64, 0), ESRCH, "kill(reaped child, 0)")?;
    expect_errno(unix::kill(child as i64, SIGTERM), ESRCH, "kill a reaped child")?;
    expect_errno(unix::kill(999_999, SIGTERM), ESRCH, "kill a pid never used")?;
    Ok(())
}

pub fn signal_ignore() -> TestResult {
    expect_errno(unix::signal_ignore(SIGKILL, true), EINVAL, "ignore SIGKILL")?;
    expect_errno(unix::signal_ignore(0, true), EINVAL, "ignore signal 0")?;
    expect_errno(unix::signal_ignore(32, true), EINVAL, "ignore signal 32")?;
    let (r, w) = unix::pipe().ctx("pipe")?;
    let (ready_r, ready_w) = unix::pipe().ctx("pipe")?;
    let child = spawn(move || {
        let before = unix::signal_ignore(SIGTERM, true);
        let again = unix::signal_ignore(SIGTERM, true);
        if before != Ok(false) || again != Ok(true) {
            return 1;
        }
        let mut b = [0u8; 1];
        loop {
            let _ = write_all(ready_w, b"r");
            if unix::read(r, &mut b) != Ok(1) {
                return 2;
            }
        }
    })?;
    let _ = unix::close(ready_w);
    let result = (|| {
        let mut b = [0u8; 1];
        read_exact(ready_r, &mut b)?;
        unix::kill(child as i64, SIGTERM).ctx("SIGTERM to a child ignoring it")?;
        // Still alive: it answers another round.
        write_all(w, b"x").ctx("write")?;
        read_exact(ready_r, &mut b)?;
        unix::kill(child as i64, SIGINT).ctx("SIGINT")
    })();
    // SIGINT was not ignored: that one ends it.
    let status = wait_for(child)?;
    ensure!(status.signal() == Some(SIGINT), "the child {}, expected SIGINT", describe(&status));
    result?;
    // An ignored signal stays ignored in a forked child; SIGKILL still ends
    // one; restoring the default reports the previous setting.
    let prev = unix::signal_ignore(SIGTERM, true).ctx("ignore SIGTERM here")?;
    let survivor = blocked_child(r, 4);
    let victim = blocked_child(r, 5);
    let restored = unix::signal_ignore(SIGTERM, prev).ctx("restore SIGTERM")?;
    let (survivor, victim) = (survivor?, victim?);
    let result = (|| {
        ensure!(!prev && restored, "signal_ignore returned {prev} then {restored}, expected false then true");
        unix::kill(survivor as i64, SIGTERM).ctx("SIGTERM")?;
        unix::kill(victim as i64, SIGKILL).ctx("SIGKILL")?;
        expect_signal(victim, SIGKILL)?;
        write_all(w, b"x").ctx("write")?;
        expect_exit(survivor, 4)
    })();
    for fd in [r, w, ready_r] {
        let _ = unix::close(fd);
    }
    if result.is_err() {
        let _ = unix::kill(survivor as i64, SIGKILL);
        let _ = unix::kill(victim as i64, SIGKILL);
        let _ = unix::waitpid(survivor as i64, false);
        let _ = unix::waitpid(victim as i64, false);
    }
    result
}

fn burn_cpu(rounds: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..rounds {
        x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

pub fn times_count_reaped_children() -> TestResult {
    let before = unix::times();
    let child = spawn(|| (burn_cpu(3_000_000) & 1) as i32)?;
    let status = wait_for(child)?;
    let after = unix::times();
    ensure!(status.cpu_ns > 0, "wait reported no CPU time for a child that computed");
    let grew = after.children_cpu_ns - before.children_cpu_ns;
    ensure!(
        grew == status.cpu_ns,
        "children's CPU time grew by {grew} ns, the child used {} ns",
        status.cpu_ns
    );
    ensure!(after.uptime_ns > before.uptime_ns, "uptime did not advance");
    ensure!(after.self_cpu_ns >= before.self_cpu_ns && after.self_cpu_ns > 0, "own CPU time");
    Ok(())
}

/// POSIX `tms_cutime`: a child's time includes the children it waited for.
pub fn times_include_waited_for_grandchildren() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let before = unix::times();
    let child = spawn(move || {
        let Ok(grandchild) = spawn(|| (burn_cpu(3_000_000) & 1) as i32) else { return 1 };
        match wait_for(grandchild) {
            Ok(st) => {
                let _ = write_all(w, format!("{}", st.cpu_ns).as_bytes());
                0
            }
            Err(_) => 2,
        }
    })?;
    unix::close(w).ctx("close")?;
    let report = read_to_end(r).ctx("read")?;
    unix::close(r).ctx("close")?;
    let status = wait_for(child)?;
    let after = unix::times();
    let grandchild_ns = parse_u64(&report).ok_or("no report from the child")?;
    let grew = after.children_cpu_ns - before.children_cpu_ns;
    ensure!(
        grew >= grandchild_ns + status.cpu_ns,
        "children's CPU time grew by {grew} ns; the child used {} ns and its waited-for child {grandchild_ns} ns",
        status.cpu_ns
    );
    Ok(())
}

pub fn ps_lists_processes() -> TestResult {
    let me = unix::getpid();
    let table = unix::ps().ctx("ps")?;
    let mine = table.iter().find(|p| p.pid == me).ok_or("ps does not list this process")?;
    ensure!(mine.name() == "utest", "ps names this process {:?}", mine.name());
    ensure!(mine.state == b'R', "this process's state {}", mine.state as char);
    ensure!(mine.ppid == unix::getppid(), "ps ppid {} vs getppid {}", mine.ppid, unix::getppid());
    ensure!(mine.pgid == unix::getpgrp().ctx("getpgrp")?, "ps pgid");
    ensure!(mine.uid == 0, "ps uid {}", mine.uid);
    ensure!(table.iter().any(|p| p.pid == 1), "ps does not list init (pid 1)");
    let mut pids: Vec<u64> = table.iter().map(|p| p.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    ensure!(pids.len() == table.len(), "ps lists a process twice");
    // A child that ended but was not waited for is a zombie.
    let child = spawn(|| 10)?;
    let zombie = poll_until(2000, 2, || Ok(in_process_table(child)? == Some(b'Z')))?;
    let entry = unix::ps().ctx("ps")?.into_iter().find(|p| p.pid == child);
    expect_exit(child, 10)?;
    ensure!(zombie, "the ended child never showed as a zombie (entry {entry:?})");
    ensure!(in_process_table(child)?.is_none(), "the reaped child is still listed");
    Ok(())
}

pub fn ids_of_root() -> TestResult {
    ensure!(
        unix::getuid() == 0 && unix::getgid() == 0,
        "the test runs as {}:{}",
        unix::getuid(),
        unix::getgid()
    );
    in_child(|| {
        unix::setuid_gid(None, Some(50)).ctx("setgid 50")?;
        ensure!(
            unix::getuid() == 0 && unix::getgid() == 50,
            "after setgid: {}:{}",
            unix::getuid(),
            unix::getgid()
        );
        unix::setuid_gid(Some(7), None).ctx("setuid 7")?;
        ensure!(
            unix::getuid() == 7 && unix::getgid() == 50,
            "after setuid: {}:{}",
            unix::getuid(),
            unix::getgid()
        );
        // A forked child keeps the ids.
        let child = spawn(|| if unix::getuid() == 7 && unix::getgid() == 50 { 0 } else { 1 })?;
        expect_exit(child, 0)
    })?;
    ensure!(unix::getuid() == 0, "the child's setuid changed the parent");
    Ok(())
}

pub fn clock_and_sleep() -> TestResult {
    let a = unix::clock_ns();
    let b = unix::clock_ns();
    ensure!(b >= a, "the clock went back");
    unix::sleep_ns(20_000_000);
    let c = unix::clock_ns();
    ensure!(c - b >= 20_000_000, "a 20 ms sleep lasted {} ns", c - b);
    // time() is the calendar clock: the boot's CMOS reading plus uptime.
    let boot_s = runtime::sys::info(abi::InfoKey::BootRealtimeNs) / 1_000_000_000;
    let t = unix::time();
    let d = unix::clock_ns();
    ensure!(
        t >= boot_s + c / 1_000_000_000 && t <= boot_s + d / 1_000_000_000 + 1,
        "time() {t} vs the boot's calendar time {boot_s} and the clock {c}..{d}"
    );
    Ok(())
}

/// QEMU's PC has a CMOS clock, so the kernel must have read one: a
/// calendar time after 2020-01-01 (1 577 836 800 s) and one that
/// advances with the monotonic clock.
pub fn calendar_clock() -> TestResult {
    let boot_ns = runtime::sys::info(abi::InfoKey::BootRealtimeNs);
    ensure!(boot_ns >= 1_577_836_800_000_000_000, "the boot's calendar time {boot_ns} ns is before 2020");
    let a = unix::clock_realtime_ns();
    unix::sleep_ns(10_000_000);
    let b = unix::clock_realtime_ns();
    ensure!(a >= boot_ns && b >= a + 10_000_000, "the calendar clock went {a} -> {b} over a 10 ms sleep");
    Ok(())
}

// --- exec ---

/// The arguments and environment `exec_arguments_and_environment` passes
/// and the `role-args` role checks.
pub const ROLE_ARGV: [&str; 7] = ["utest", "role-args", "two words", "", "  leading", "tab\there", "ünïcödé"];
pub const ROLE_ENV: [&str; 4] = ["UTEST_A=1", "UTEST_B=with space", "EMPTY=", "EQ=a=b"];

pub fn exec_arguments_and_environment() -> TestResult {
    let child = spawn(|| {
        let e = unix::execve("/bin/utest", &ROLE_ARGV, &ROLE_ENV);
        100 + e.0 as i32
    })?;
    let status = wait_for(child)?;
    ensure!(status.exit_code() == Some(0), "the exec'd child {} (see its output above)", describe(&status));
    Ok(())
}

pub fn execv_keeps_the_environment() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let child = spawn(move || {
        let fd = format!("{w}");
        let e = unix::execv("/bin/utest", &["utest", "role-env", &fd]);
        100 + e.0 as i32
    })?;
    unix::close(w).ctx("close")?;
    let got = read_to_end(r).ctx("read")?;
    unix::close(r).ctx("close")?;
    expect_exit(child, 0)?;
    let mut want = Vec::new();
    for e in unix::env() {
        want.extend_from_slice(e.as_bytes());
        want.push(b'\n');
    }
    ensure!(
        got == want,
        "the exec'd program's environment {:?} differs from ours {:?}",
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&want)
    );
    Ok(())
}

pub fn descriptors_and_pid_survive_exec() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let me = unix::getpid();
    let child = spawn(move || {
        // Move the write end to a high descriptor first.
        if unix::dup2(w, 37).is_err() {
            return 98;
        }
        let e = unix::execve("/bin/utest", &["utest", "role-ids", "37"], &[]);
        100 + e.0 as i32
    })?;
    unix::close(w).ctx("close")?;
    let got = read_to_end(r).ctx("read")?;
    unix::close(r).ctx("close")?;
    expect_exit(child, 0)?;
    let text = String::from_utf8_lossy(&got).into_owned();
    let want = format!("pid {child} ppid {me} uid 0 gid 0 name utest");
    ensure!(text == want, "the exec'd program reported {text:?}, expected {want:?}");
    Ok(())
}

pub fn exec_exit_status() -> TestResult {
    let child = spawn(|| {
        let e = unix::execve("/bin/utest", &["utest", "role-exit", "77"], &[]);
        100 + e.0 as i32
    })?;
    expect_exit(child, 77)?;
    // A utility from /bin, found by its full path.
    let child = spawn(|| {
        let e = unix::execve("/bin/false", &["false"], &[]);
        100 + e.0 as i32
    })?;
    expect_exit(child, 1)
}

pub fn exec_errors() -> TestResult {
    let d = scratch("exec_errors")?;
    let text_file = format!("{d}/script");
    make_file(&text_file, b"echo not an ELF file\n", 0o755)?;
    let big = alloc::vec![b'a'; 5000];
    let big = String::from_utf8(big).unwrap_or_default();
    let cases: [(&str, &[&str], Errno, &str); 7] = [
        ("/bin/no-such-program", &["x"], ENOENT, "a missing program"),
        ("/etc/inittab", &["inittab"], EACCES, "a file without execute permission"),
        ("/bin", &["bin"], EACCES, "a directory"),
        (&text_file, &["script"], ENOEXEC, "a text file with execute permission"),
        ("/bin/utest", &["utest", &big], E2BIG, "arguments larger than a page"),
        ("/bin/utest", &["utest", "nul\0inside"], EINVAL, "an argument with a NUL"),
        ("/bin/false/x", &["x"], ENOTDIR, "a path through a file"),
    ];
    in_child(|| {
        for (path, argv, want, what) in cases {
            let e = unix::execve(path, argv, &[]);
            ensure!(e == want, "exec {what}: {}, expected {}", e.name(), name_of(want));
        }
        // After the failures the process still works.
        ensure!(unix::getpid() != 0 && unix::getcwd().is_ok(), "the process after failed execs");
        Ok(())
    })
}

fn name_of(e: Errno) -> &'static str {
    protocols::unix::errno::name(e)
}

// --- roles: what /bin/utest does when a test execs it ---

/// `utest role-…`: run a role; the exit status is its verdict.
pub fn role(argv: &[&str]) -> i32 {
    match argv.get(1).copied() {
        Some("role-args") => {
            let args: Vec<&str> = unix::args().collect();
            let env: Vec<&str> = unix::env().collect();
            let mut ok = true;
            if args != ROLE_ARGV || argv != ROLE_ARGV {
                runtime::eprintln!(
                    "utest role-args: argv {args:?} (main got {argv:?}), expected {ROLE_ARGV:?}"
                );
                ok = false;
            }
            if env != ROLE_ENV {
                runtime::eprintln!("utest role-args: environment {env:?}, expected {ROLE_ENV:?}");
                ok = false;
            }
            if unix::getenv("UTEST_B") != Some("with space") || unix::getenv("EQ") != Some("a=b") {
                runtime::eprintln!("utest role-args: getenv is wrong");
                ok = false;
            }
            if unix::getenv("UTEST").is_some() || unix::getenv("EMPTY") != Some("") {
                runtime::eprintln!("utest role-args: getenv of a prefix or an empty value is wrong");
                ok = false;
            }
            if ok { 0 } else { 1 }
        }
        Some("role-env") => {
            let Some(fd) = argv.get(2).and_then(|s| s.parse::<Fd>().ok()) else { return 2 };
            let mut text = Vec::new();
            for e in unix::env() {
                text.extend_from_slice(e.as_bytes());
                text.push(b'\n');
            }
            if write_all(fd, &text).is_ok() { 0 } else { 1 }
        }
        Some("role-ids") => {
            let Some(fd) = argv.get(2).and_then(|s| s.parse::<Fd>().ok()) else { return 2 };
            let name = unix::ps()
                .ok()
                .and_then(|t| t.into_iter().find(|p| p.pid == unix::getpid()))
                .map(|p| String::from(p.name()))
                .unwrap_or_default();
            let text = format!(
                "pid {} ppid {} uid {} gid {} name {name}",
                unix::getpid(),
                unix::getppid(),
                unix::getuid(),
                unix::getgid()
            );
            if write_all(fd, text.as_bytes()).is_ok() { 0 } else { 1 }
        }
        Some("role-exit") => argv.get(2).and_then(|s| s.parse::<i32>().ok()).unwrap_or(2),
        other => {
            runtime::eprintln!("utest: unknown role {other:?}");
            2
        }
    }
}

/// `tcsetpgrp`: on the terminal (standard input, when it is one) this
/// process's own group is accepted; anything that is not a terminal says
/// `ENOTTY`, a closed descriptor `EBADF`.
pub fn tcsetpgrp() -> TestResult {
    let d = scratch("tcsetpgrp")?;
    let file = unix::creat(&format!("{d}/f"), 0o644).ctx("creat")?;
    let (r, w) = unix::pipe().ctx("pipe")?;
    let me = unix::getpgrp().ctx("getpgrp")?;
    let result = (|| {
        expect_errno(unix::tcsetpgrp(file, me), ENOTTY, "tcsetpgrp on a file")?;
        expect_errno(unix::tcsetpgrp(r, me), ENOTTY, "tcsetpgrp on a pipe")?;
        expect_errno(unix::tcsetpgrp(50, me), EBADF, "tcsetpgrp on a closed descriptor")?;
        let on_terminal = unix::fstat(0).is_ok_and(|s| protocols::unix::mode::is_chr(s.mode));
        if on_terminal {
            unix::tcsetpgrp(0, me).ctx("tcsetpgrp(0, own group) on the terminal")?;
        }
        Ok(())
    })();
    for fd in [file, r, w] {
        unix::close(fd).ctx("close")?;
    }
    result
}
