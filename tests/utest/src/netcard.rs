//! The network card's driver serves only the process init named (issue
//! 16): `eth::OP_ATTACH` from anyone else is `EPERM`, at every moment.
//!
//! What is checked: a UNIX process, root's or uid 1000's, that finds the
//! driver (init's status names its pid) and opens a link to its queue
//! itself, past the device entry's mode, is refused, and a forged
//! `eth::OP_SET_CLIENT` naming itself changes nothing; after the driver
//! is killed and started again by init, a uid 1000 process that attaches
//! to the new instance as soon as init reports it running is refused
//! too (the window before the network server attaches again).
//!
//! What it is not: a test of the network server's re-attach, which the
//! network boot of `cargo xtask test` checks end to end (`relinks 1`).
//! Nothing here is timed: every refusal must hold whenever it is tried.

use crate::ensure;
use crate::util::*;
use alloc::format;
use alloc::string::String;
use protocols::init::state;
use protocols::net::eth;
use protocols::unix::Errno;
use protocols::unix::errno::EPERM;
use runtime::msg::{self, Queue};
use runtime::unix;

/// Polls of init's status (50 ms apart) before a restart counts as never
/// coming: 60 s, far beyond the back-off's 0.1 s (as restart.rs).
const STATUS_POLLS: u32 = 1200;
/// Attaches tried against the restarted driver.
const TRIES_AFTER_RESTART: u32 = 50;
/// The driver's program name in the init file.
const DRIVER: &str = "virtio-net";

/// The driver's pid from init's status, when it runs.
fn driver_pid() -> Result<Option<u64>, String> {
    let s = unix::server_status(DRIVER).map_err(|e| format!("service status {DRIVER}: {}", e.name()))?;
    Ok((s[0] == state::RUNNING && s[1] != 0).then_some(s[1]))
}

/// Ask the driver `pid` to attach this process: its answer (as
/// `unix::result`), or why the call itself failed.
fn try_attach(pid: u64) -> Result<Result<u64, Errno>, String> {
    let link = msg::open_link(abi::Pid(pid), Queue(eth::QUEUE))
        .map_err(|e| format!("open a link to the driver's queue: {}", e.name()))?;
    // Frames would go to this process's queue 0; they must never come.
    let answer = msg::call(link, &[eth::OP_ATTACH, 0, 0, 0], &[], &mut []);
    let _ = msg::close_link(link);
    let (w, _) = answer.map_err(|e| format!("OP_ATTACH: {}", e.name()))?;
    Ok(protocols::unix::result(w[0]))
}

fn expect_refused(pid: u64, who: &str) -> TestResult {
    expect_errno(try_attach(pid)?, EPERM, &format!("{who}: OP_ATTACH"))
}

fn become_user() -> TestResult {
    unix::setuid_gid(Some(1000), Some(1000)).ctx("setuid 1000")?;
    ensure!(unix::getuid() == 1000, "uid {} after setuid 1000", unix::getuid());
    Ok(())
}

/// Root's process and a user's are both refused; a forged naming of the
/// client from either is ignored.
pub fn only_the_network_server_may_attach() -> TestResult {
    let pid = driver_pid()?.ok_or("virtio-net is not running (the unix boots have a card)")?;
    expect_refused(pid, "root's process")?;
    in_child(|| {
        become_user()?;
        expect_refused(pid, "uid 1000")?;
        // Only init may name the client; a user's naming of itself is
        // dropped by the driver (one-way: no answer to check but the next
        // attach's).
        let me = runtime::sys::getpid().0;
        let link = msg::open_link(abi::Pid(pid), Queue(eth::QUEUE))
            .map_err(|e| format!("open a link to the driver's queue: {}", e.name()))?;
        let sent = msg::send(link, &[eth::OP_SET_CLIENT, me, 0, 0]);
        let _ = msg::close_link(link);
        sent.map_err(|e| format!("send OP_SET_CLIENT: {}", e.name()))?;
        expect_refused(pid, "uid 1000 after naming itself the client")
    })?;
    ensure!(driver_pid()? == Some(pid), "the driver did not live through the refusals");
    Ok(())
}

/// The driver killed and started again by init: a user who attaches to
/// the new instance as soon as init reports it is refused every time.
pub fn a_restarted_driver_refuses_users() -> TestResult {
    let old = driver_pid()?.ok_or("virtio-net is not running (the unix boots have a card)")?;
    let user = spawn(move || {
        let run = || -> TestResult {
            become_user()?;
            let mut new = None;
            let back = poll_until(STATUS_POLLS, 50, || {
                new = driver_pid()?.filter(|&p| p != old);
                Ok(new.is_some())
            })?;
            let new = new.filter(|_| back).ok_or("virtio-net was not started again")?;
            for i in 0..TRIES_AFTER_RESTART {
                expect_refused(new, &format!("uid 1000, try {i} on the restarted driver"))?;
            }
            Ok(())
        };
        match run() {
            Ok(()) => 0,
            Err(why) => {
                runtime::println!("netcard: {why}");
                1
            }
        }
    })?;
    unix::server_kill(DRIVER).ctx(&format!("service kill {DRIVER}"))?;
    let ended = wait_for(user)?;
    ensure!(
        ended.exit_code() == Some(0),
        "the user's attaches to the restarted driver: {}",
        describe(&ended)
    );
    Ok(())
}
