//! One row of `cargo xtask test`'s final table: a step's name, its counts
//! of passed and failed tests, and what went wrong.
//!
//! Invariant: a row that is not ok counts at least one failure (see
//! [`Outcome::step`] and `verdict::judge`), so the final line's "0 failed"
//! and a failing exit status never go together.

use crate::tools::Result;

/// One row of the final table.
pub struct Outcome {
    pub name: String,
    pub passed: u64,
    pub failed: u64,
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
}

impl Outcome {
    pub fn step(name: &str, result: Result<()>) -> Outcome {
        let is_ok = result.is_ok();
        Outcome {
            name: name.to_string(),
            passed: u64::from(is_ok),
            failed: u64::from(!is_ok),
            problems: result.err().into_iter().collect(),
            warnings: Vec::new(),
        }
    }

    pub fn is_ok(&self) -> bool {
        self.failed == 0 && self.problems.is_empty()
    }
}
