//! init's restart policy for the servers and drivers it supervises
//! (MINIX 3's reincarnation server: a dead driver is started again; one
//! that keeps dying is started less and less often, then given up).
//!
//! The rule, per supervised program:
//! - a death after it ran at least [`Policy::quick_run_ns`] is a plain
//!   death: the count of quick deaths starts again from zero and the next
//!   start is [`Policy::first_backoff_ns`] later;
//! - a death sooner than that (or before it was ready) is a quick death:
//!   the back-off doubles with each quick death in a row, up to
//!   [`Policy::max_backoff_ns`], and the [`Policy::max_quick_deaths`]-th
//!   quick death in a row gives the program up for good.
//!
//! What it is not: the supervisor. No clock is read and nothing is
//! started here; init passes in how long the program ran and acts on the
//! [`Decision`].

/// The numbers of the rule (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub first_backoff_ns: u64,
    pub max_backoff_ns: u64,
    pub quick_run_ns: u64,
    pub max_quick_deaths: u32,
}

/// The policy init uses: 0.1 s doubling to 5 s, a run shorter than 2 s is
/// quick, the 6th quick death in a row is the last (after back-offs of
/// 0.1, 0.2, 0.4, 0.8 and 1.6 s: about 3 s of trying).
pub const INIT_POLICY: Policy = Policy {
    first_backoff_ns: 100_000_000,
    max_backoff_ns: 5_000_000_000,
    quick_run_ns: 2_000_000_000,
    max_quick_deaths: 6,
};

/// What to do after a death.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Start it again after this many ns.
    RestartIn(u64),
    /// It died quickly this many times in a row: do not start it again.
    GiveUp(u32),
}

/// One supervised program's count of quick deaths in a row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub quick_deaths: u32,
}

impl Record {
    /// It ended after running `ran_ns` since its start (0 when it ended
    /// before it was ready).
    pub fn died(&mut self, policy: &Policy, ran_ns: u64) -> Decision {
        if ran_ns >= policy.quick_run_ns {
            self.quick_deaths = 0;
            return Decision::RestartIn(policy.first_backoff_ns.min(policy.max_backoff_ns));
        }
        self.quick_deaths = self.quick_deaths.saturating_add(1);
        if self.quick_deaths >= policy.max_quick_deaths {
            return Decision::GiveUp(self.quick_deaths);
        }
        let doublings = (self.quick_deaths - 1).min(63);
        let backoff = 1u64
            .checked_shl(doublings)
            .and_then(|f| policy.first_backoff_ns.checked_mul(f))
            .unwrap_or(u64::MAX);
        Decision::RestartIn(backoff.min(policy.max_backoff_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_long_run_restarts_after_the_first_backoff_and_clears_the_count() {
        let mut r = Record { quick_deaths: 4 };
        assert_eq!(r.died(&INIT_POLICY, 10_000 * MS), Decision::RestartIn(100 * MS));
        assert_eq!(r.quick_deaths, 0);
    }

    #[test]
    fn quick_deaths_double_the_backoff_then_give_up_at_the_sixth() {
        let mut r = Record::default();
        let got: Vec<Decision> = (0..6).map(|_| r.died(&INIT_POLICY, 0)).collect();
        assert_eq!(
            got,
            [
                Decision::RestartIn(100 * MS),
                Decision::RestartIn(200 * MS),
                Decision::RestartIn(400 * MS),
                Decision::RestartIn(800 * MS),
                Decision::RestartIn(1600 * MS),
                Decision::GiveUp(6),
            ]
        );
    }

    #[test]
    fn the_backoff_stops_at_its_cap() {
        let policy = Policy { max_quick_deaths: 100, ..INIT_POLICY };
        let mut r = Record::default();
        let last = (0..99).map(|_| r.died(&policy, MS)).last();
        assert_eq!(last, Some(Decision::RestartIn(5_000 * MS)));
        assert_eq!(r.died(&policy, MS), Decision::GiveUp(100));
    }

    #[test]
    fn a_run_of_exactly_the_quick_limit_is_not_quick() {
        let mut r = Record { quick_deaths: 3 };
        assert_eq!(r.died(&INIT_POLICY, INIT_POLICY.quick_run_ns), Decision::RestartIn(100 * MS));
        let mut r = Record { quick_deaths: 3 };
        assert_eq!(r.died(&INIT_POLICY, INIT_POLICY.quick_run_ns - 1), Decision::RestartIn(800 * MS));
    }
}
