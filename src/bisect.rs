//! Culprit bisection, pure: which commit to measure next, what a step's
//! measurements say, and what the bisection proved.
//!
//! The range is the first-parent chain from the last commit known good
//! (the baseline commit, index 0) to the first known bad (the candidate,
//! the last index). A merge commit on that chain is one step: what it
//! brought in is not bisected further, and a culprit that is a merge is
//! named as the merge.
//!
//! Each step measures a midpoint `M` interleaved with both bounds in the
//! same session and compares `M` against the good bound and the bad bound
//! against `M` ([`crate::same_session::decide`]):
//!
//! - `M` confirmed worse than good, and bad not worse than `M`: `M` is bad;
//! - `M` not worse than good, and bad confirmed worse than `M`: `M` is
//!   good;
//! - anything else does not decide (noise, or a change split over several
//!   commits), and the step says so.
//!
//! A midpoint whose build fails is skipped: the next step takes the
//! untested commit nearest the middle, and a culprit next to a commit that
//! could not be built is named only as a range. The bisection names one
//! commit only when every step decided (contract 15); it stops at the first
//! step that does not decide, or when its budget of steps runs out, and
//! then names the smallest range it proved.

use crate::record::KeyVerdict;

/// What one step found about its midpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepFinding {
    /// The midpoint measures like the good bound: the culprit is after it.
    Good,
    /// The midpoint measures like the bad bound: the culprit is it or
    /// before it.
    Bad,
    /// The measurements do not decide; why.
    Undecided(String),
    /// The midpoint could not be built; the build's reason.
    BuildFailed(String),
}

impl StepFinding {
    /// The finding from the two same-session verdicts of a step: the
    /// midpoint against the good bound, and the bad bound against the
    /// midpoint.
    pub fn from_verdicts(mid_vs_good: KeyVerdict, bad_vs_mid: KeyVerdict) -> StepFinding {
        use KeyVerdict::ConfirmedRegression;
        let not_worse = |v: KeyVerdict| v.clears();
        match (mid_vs_good, bad_vs_mid) {
            (ConfirmedRegression, v) if not_worse(v) => StepFinding::Bad,
            (v, ConfirmedRegression) if not_worse(v) => StepFinding::Good,
            (ConfirmedRegression, ConfirmedRegression) => StepFinding::Undecided(
                "both halves are worse: the change is spread over several commits".into(),
            ),
            (a, b) => StepFinding::Undecided(format!(
                "the midpoint against the good bound was {}, the bad bound against the midpoint {}",
                verdict_text(a),
                verdict_text(b)
            )),
        }
    }
}

fn verdict_text(v: KeyVerdict) -> &'static str {
    match v {
        KeyVerdict::WithinBand => "within the band",
        KeyVerdict::Inconclusive => "inconclusive",
        KeyVerdict::NotConfirmed => "not confirmed",
        KeyVerdict::ConfirmedRegression => "a confirmed regression",
        KeyVerdict::ConfirmedImprovement => "a confirmed improvement",
    }
}

/// One step: the midpoint's index in the range and what it found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Index of the measured commit in the range.
    pub index: usize,
    /// What it found.
    pub finding: StepFinding,
}

/// Why a bisection stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// One commit: the last good and first bad are neighbours, and every
    /// step decided.
    Culprit(usize),
    /// The smallest range proved (`good`, `bad`]: the culprit is one of the
    /// commits after `good` up to `bad`; why it stopped there.
    Range {
        /// Index of the last commit proved good.
        good: usize,
        /// Index of the first commit proved bad.
        bad: usize,
        /// Why the bisection stopped before one commit.
        reason: String,
    },
}

/// A bisection over `len` commits of a first-parent range, index 0 good and
/// `len - 1` bad, with a budget of steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bisection {
    len: usize,
    budget: usize,
    good: usize,
    bad: usize,
    steps: Vec<Step>,
    stopped: Option<String>,
}

impl Bisection {
    /// A bisection of a range of `len` commits (at least 2: the good bound
    /// and the bad bound) with at most `budget` steps.
    pub fn new(len: usize, budget: usize) -> Bisection {
        let len = len.max(2);
        Bisection {
            len,
            budget,
            good: 0,
            bad: len - 1,
            steps: Vec::new(),
            stopped: None,
        }
    }

    /// Replays recorded steps (a resumed bisection).
    pub fn with_steps(len: usize, budget: usize, steps: &[Step]) -> Bisection {
        let mut b = Bisection::new(len, budget);
        for s in steps {
            b.record(s.index, s.finding.clone());
        }
        b
    }

    /// The steps so far.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The steps a range of `len` commits needs when every step decides:
    /// ⌈log2(len − 1)⌉.
    pub fn steps_needed(len: usize) -> usize {
        let commits = len.saturating_sub(1).max(1);
        (usize::BITS - (commits - 1).leading_zeros()) as usize
    }

    fn untested(&self, i: usize) -> bool {
        !self
            .steps
            .iter()
            .any(|s| s.index == i && matches!(s.finding, StepFinding::BuildFailed(_)))
    }

    /// The index to measure next, or `None` when the bisection is over.
    pub fn next(&self) -> Option<usize> {
        if self.stopped.is_some() || self.bad - self.good <= 1 || self.steps.len() >= self.budget {
            return None;
        }
        let mid = self.good + (self.bad - self.good) / 2;
        // The untested commit nearest the middle, preferring the later one
        // on a tie (it halves the range towards the bad bound).
        (1..self.bad - self.good)
            .flat_map(|d| [mid + d / 2, mid.wrapping_sub(d.div_ceil(2))])
            .chain([mid])
            .filter(|&i| i > self.good && i < self.bad)
            .find(|&i| self.untested(i))
            .or_else(|| ((self.good + 1)..self.bad).find(|&i| self.untested(i)))
    }

    /// Records what a step at `index` found.
    pub fn record(&mut self, index: usize, finding: StepFinding) {
        match &finding {
            StepFinding::Good if index > self.good && index < self.bad => self.good = index,
            StepFinding::Bad if index > self.good && index < self.bad => self.bad = index,
            StepFinding::Undecided(why) => {
                self.stopped = Some(format!("step at commit {index} did not decide: {why}"));
            }
            _ => {}
        }
        self.steps.push(Step { index, finding });
    }

    /// What the bisection proved so far (final once [`next`](Self::next)
    /// is `None`).
    pub fn outcome(&self) -> Outcome {
        if self.bad - self.good == 1 {
            return Outcome::Culprit(self.bad);
        }
        let reason = if let Some(why) = &self.stopped {
            why.clone()
        } else if (self.good + 1..self.bad).all(|i| !self.untested(i)) {
            "every commit between the bounds failed to build".to_owned()
        } else if self.steps.len() >= self.budget {
            format!("the budget of {} step(s) ran out", self.budget)
        } else {
            "the bisection has not finished".to_owned()
        };
        Outcome::Range {
            good: self.good,
            bad: self.bad,
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a bisection where commit `culprit` introduced the change.
    fn run(len: usize, budget: usize, culprit: usize, broken: &[usize]) -> (Outcome, usize) {
        let mut b = Bisection::new(len, budget);
        while let Some(i) = b.next() {
            let f = if broken.contains(&i) {
                StepFinding::BuildFailed("exit 1".into())
            } else if i >= culprit {
                StepFinding::Bad
            } else {
                StepFinding::Good
            };
            b.record(i, f);
        }
        (b.outcome(), b.steps().len())
    }

    #[test]
    fn every_culprit_is_found_in_log2_steps() {
        for len in 2..=65 {
            for culprit in 1..len {
                let (o, steps) = run(len, 64, culprit, &[]);
                assert_eq!(o, Outcome::Culprit(culprit), "len {len}");
                assert!(steps <= Bisection::steps_needed(len), "len {len}: {steps}");
            }
        }
        assert_eq!(Bisection::steps_needed(65), 6);
        assert_eq!(Bisection::steps_needed(2), 0);
    }

    #[test]
    fn a_build_failure_is_skipped_and_never_named() {
        // The midpoint of 0..=8 is 4; it cannot be built.
        let (o, _) = run(9, 16, 6, &[4]);
        assert_eq!(o, Outcome::Culprit(6));
        // The culprit's predecessor cannot be built: only a range.
        let (o, _) = run(9, 16, 6, &[5]);
        assert!(
            matches!(
                o,
                Outcome::Range {
                    good: 4,
                    bad: 6,
                    ..
                }
            ),
            "{o:?}"
        );
        // Nothing between the bounds builds.
        let (o, _) = run(4, 16, 2, &[1, 2]);
        match o {
            Outcome::Range {
                good: 0,
                bad: 3,
                reason,
            } => assert!(reason.contains("build")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_budget_that_runs_out_gives_the_smallest_range() {
        let (o, steps) = run(65, 3, 37, &[]);
        assert_eq!(steps, 3);
        match o {
            Outcome::Range { good, bad, reason } => {
                assert!(good < 37 && 37 <= bad && bad - good == 8, "{good}..{bad}");
                assert!(reason.contains("budget"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_undecided_step_stops_with_its_reason() {
        let mut b = Bisection::new(9, 16);
        let first = b.next().expect("a step");
        b.record(first, StepFinding::Undecided("noise".into()));
        assert_eq!(b.next(), None);
        match b.outcome() {
            Outcome::Range {
                good: 0,
                bad: 8,
                reason,
            } => assert!(reason.contains("noise")),
            other => panic!("{other:?}"),
        }
        // Replaying the recorded steps resumes to the same place.
        assert_eq!(Bisection::with_steps(9, 16, b.steps()), b);
    }

    #[test]
    fn findings_come_from_both_comparisons() {
        use KeyVerdict::*;
        assert_eq!(
            StepFinding::from_verdicts(ConfirmedRegression, WithinBand),
            StepFinding::Bad
        );
        assert_eq!(
            StepFinding::from_verdicts(WithinBand, ConfirmedRegression),
            StepFinding::Good
        );
        assert_eq!(
            StepFinding::from_verdicts(ConfirmedImprovement, ConfirmedRegression),
            StepFinding::Good
        );
        for (a, b) in [
            (ConfirmedRegression, ConfirmedRegression),
            (Inconclusive, ConfirmedRegression),
            (WithinBand, WithinBand),
            (NotConfirmed, Inconclusive),
        ] {
            assert!(
                matches!(StepFinding::from_verdicts(a, b), StepFinding::Undecided(_)),
                "{a:?} {b:?}"
            );
        }
    }
}
