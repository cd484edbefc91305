//! The shell's background jobs: which processes each holds, when it is
//! done, and the lines `jobs` and the done reports print.
//!
//! What it is not: job control. There is no `fg`, `bg` or stopping; a job
//! runs until its processes end.
//!
//! # Invariants
//! - A job is done when every one of its processes has been reaped; its
//!   outcome is its last process's.
//! - Numbers are the highest in use plus one.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::status::{Outcome, signal_description};

/// One background job: a pipeline's processes, all in one process group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The `%n` number, from 1.
    pub id: u32,
    pub pgid: u64,
    /// Processes not yet reaped.
    pub running: Vec<u64>,
    /// The last process of the pipeline, whose outcome is the job's.
    pub last_pid: u64,
    pub outcome: Option<Outcome>,
    pub text: String,
}

impl Job {
    pub fn is_done(&self) -> bool {
        self.running.is_empty()
    }
}

/// The shell's background jobs. Numbers are the highest in use plus one,
/// as in other shells, so they restart at 1 once every job is reported.
#[derive(Clone, Debug, Default)]
pub struct Jobs {
    jobs: Vec<Job>,
}

impl Jobs {
    /// Record a job of processes `pids` (pipeline order, not empty) in
    /// group `pgid`; returns its number.
    pub fn add(&mut self, pgid: u64, pids: &[u64], text: &str) -> u32 {
        let id = self.jobs.iter().map(|j| j.id).max().unwrap_or(0) + 1;
        let last_pid = pids.last().copied().unwrap_or(pgid);
        self.jobs.push(Job {
            id,
            pgid,
            running: pids.to_vec(),
            last_pid,
            outcome: None,
            text: text.to_string(),
        });
        id
    }

    /// A reaped child: if it belongs to a job, mark it ended and return
    /// true.
    pub fn child_ended(&mut self, pid: u64, outcome: Outcome) -> bool {
        for job in &mut self.jobs {
            if let Some(i) = job.running.iter().position(|&p| p == pid) {
                job.running.swap_remove(i);
                if pid == job.last_pid {
                    job.outcome = Some(outcome);
                }
                return true;
            }
        }
        false
    }

    /// Remove the jobs whose processes have all ended, in number order.
    pub fn take_done(&mut self) -> Vec<Job> {
        let (done, running): (Vec<Job>, Vec<Job>) =
            core::mem::take(&mut self.jobs).into_iter().partition(Job::is_done);
        self.jobs = running;
        done
    }

    pub fn iter(&self) -> impl Iterator<Item = &Job> {
        self.jobs.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Is `pid` one of the jobs' processes still running?
    pub fn owns(&self, pid: u64) -> bool {
        self.jobs.iter().any(|j| j.running.contains(&pid))
    }
}

/// The report of a finished job, e.g. `[1] Done  sleep 1` or
/// `[2] Exit 3  false`.
pub fn format_job_done(job: &Job) -> String {
    let state = match job.outcome {
        None | Some(Outcome::Exited(0)) => "Done".to_string(),
        Some(Outcome::Exited(code)) => format!("Exit {code}"),
        Some(Outcome::Signaled(sig)) => signal_description(sig),
    };
    format!("[{}] {}  {}", job.id, state, job.text)
}

/// The `jobs` builtin's line for a job.
pub fn format_job(job: &Job) -> String {
    if job.is_done() {
        return format_job_done(job);
    }
    format!("[{}] Running  {}", job.id, job.text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_table() {
        let mut jobs = Jobs::default();
        assert!(jobs.is_empty());
        let a = jobs.add(10, &[10, 11], "a | b");
        let b = jobs.add(20, &[20], "sleep 5");
        assert_eq!((a, b), (1, 2));
        assert!(jobs.owns(11));
        assert!(!jobs.child_ended(99, Outcome::Exited(0)));
        // The first process ending does not end the job; the last one's
        // outcome is the job's.
        assert!(jobs.child_ended(11, Outcome::Exited(4)));
        assert!(jobs.take_done().is_empty());
        assert!(jobs.child_ended(10, Outcome::Signaled(13)));
        let done = jobs.take_done();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].outcome, Some(Outcome::Exited(4)));
        assert_eq!(format_job_done(&done[0]), "[1] Exit 4  a | b");
        // Numbers: highest in use plus one.
        assert_eq!(jobs.add(30, &[30], "x"), 3);
        assert_eq!(format_job(jobs.iter().next().unwrap()), "[2] Running  sleep 5");
        jobs.child_ended(20, Outcome::Exited(0));
        jobs.child_ended(30, Outcome::Signaled(9));
        let done = jobs.take_done();
        assert_eq!(format_job_done(&done[0]), "[2] Done  sleep 5");
        assert_eq!(format_job_done(&done[1]), "[3] Killed  x");
        assert!(jobs.is_empty());
        assert_eq!(jobs.add(40, &[40], "y"), 1);
    }
}
