//! What a test that kills a server under its clients stands on: the
//! processes and links it made ([`Started`], cleaned up whatever the
//! outcome), and the priorities that let the runner see its subjects
//! blocked without a timeout ([`Started::until_blocked`]).
//!
//! Invariant: the scheduler is strictly by priority, so with a hog one
//! above the runner on every other CPU, nothing below the runner runs
//! while the runner or a hog is ready.

use crate::util::TestResult;
use abi::{ExitStatus, InfoKey, Pid};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use runtime::msg::{self, Queue};
use runtime::sys;

/// One above the runner: processes that spin to hold CPUs (see
/// [`Started::until_blocked`]).
fn hog_priority() -> u64 {
    sys::info(InfoKey::Priority) + 1
}

/// Two above the runner: the servers and clients of a test that must be
/// seen blocked before the server is killed.
pub fn subject_priority() -> u64 {
    sys::info(InfoKey::Priority) + 2
}

/// One below the runner: clients that call in a loop, so the runner runs
/// as soon as their message arrives.
pub fn looper_priority() -> u64 {
    sys::info(InfoKey::Priority).saturating_sub(1)
}

/// Processes and links a test made. Whatever is left when the test ends,
/// passed or failed, is killed, waited for and closed: a failing test
/// leaves nothing running, and the final leak check sees every page back.
pub struct Started {
    pids: Vec<Pid>,
    hogs: Vec<Pid>,
    links: Vec<msg::Link>,
}

impl Started {
    pub fn new() -> Started {
        Started { pids: Vec::new(), hogs: Vec::new(), links: Vec::new() }
    }

    pub fn spawn(&mut self, name: &str, args: &str, priority: u64, rights: u64) -> Result<Pid, String> {
        let pid = sys::spawn_with_rights(name, args, priority, rights)
            .map_err(|e| format!("spawn {name} {args}: {}", e.name()))?;
        self.pids.push(pid);
        Ok(pid)
    }

    pub fn link(&mut self, pid: Pid, queue: u64) -> Result<msg::Link, String> {
        let link = msg::open_link(pid, Queue(queue as u32))
            .map_err(|e| format!("link to {:#x} queue {queue}: {}", pid.0, e.name()))?;
        self.links.push(link);
        Ok(link)
    }

    pub fn wait(&mut self, pid: Pid) -> Result<ExitStatus, String> {
        let (_, status) = sys::wait(Some(pid)).map_err(|e| format!("wait for {:#x}: {}", pid.0, e.name()))?;
        self.pids.retain(|&p| p != pid);
        Ok(status)
    }

    /// Kill `pid` and check that it ended as killed (not before, by itself).
    pub fn kill(&mut self, pid: Pid, what: &str) -> TestResult {
        sys::kill(pid).map_err(|e| format!("kill {what}: {}", e.name()))?;
        self.expect(pid, what, ExitStatus::Killed)
    }

    pub fn expect(&mut self, pid: Pid, what: &str, want: ExitStatus) -> TestResult {
        let got = self.wait(pid)?;
        if got == want { Ok(()) } else { Err(format!("{what} ended {got:?}, expected {want:?}")) }
    }

    /// Start hogs: processes that spin one priority above the runner, on
    /// every CPU but one. Started before the test's server and clients
    /// (at [`subject_priority`]) get going, they keep every process below
    /// the runner's priority (such as a server set to priority 0) off the
    /// CPUs while the runner or a hog is ready.
    pub fn hold_cpus(&mut self) -> TestResult {
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
    pub fn until_blocked(&mut self) -> TestResult {
        self.hold_cpus()?;
        sys::yield_now();
        Ok(())
    }

    pub fn stop_hogs(&mut self) -> TestResult {
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
