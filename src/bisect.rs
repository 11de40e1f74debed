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
//! against `M` ([`crate::same_session::decide`]). Only a confirmed
//! regression counts as worse:
//!
//! - `M` confirmed worse than good, and bad not confirmed worse than `M`:
//!   `M` is bad. The confirmed regression of `M` against the good bound
//!   proves that a commit of (good, `M`] made it worse.
//! - `M` not confirmed worse than good, and bad confirmed worse than `M`:
//!   `M` is good, by the same proof for (`M`, bad].
//! - Both halves worse (a change spread over several commits) or neither
//!   (noise, or a change the session did not reproduce): the step does not
//!   decide, and says which.
//!
//! A step that does not decide moves no bound: it is recorded with its
//! reason, counts against the budget, and the same midpoint is measured
//! again in a new session. A midpoint whose build fails is skipped: the
//! next step takes the untested commit nearest the middle, and a culprit
//! next to a commit that could not be built is named only as a range.
//!
//! The bisection names one commit only when decided steps narrowed the
//! range to it, and never guesses (contract 15). When its budget of steps
//! runs out first, or every commit between the bounds fails to build, it
//! names the smallest range it proved and why (for a budget that ran out
//! on an undecided step, that step's reason).

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
    /// The finding from whether each half of a step is confirmed worse:
    /// the midpoint against the good bound, and the bad bound against the
    /// midpoint. Exactly one half worse decides; both or neither does not.
    pub fn from_worse(mid_worse_than_good: bool, bad_worse_than_mid: bool) -> StepFinding {
        match (mid_worse_than_good, bad_worse_than_mid) {
            (true, false) => StepFinding::Bad,
            (false, true) => StepFinding::Good,
            (true, true) => StepFinding::Undecided(
                "both halves are confirmed worse: the change is spread over several commits"
                    .into(),
            ),
            (false, false) => StepFinding::Undecided(
                "neither half is confirmed worse: noise, or the change did not reproduce in this session"
                    .into(),
            ),
        }
    }

    /// The finding from the two same-session verdicts of a step (the
    /// midpoint against the good bound, the bad bound against the
    /// midpoint): [`from_worse`](Self::from_worse), where only
    /// `ConfirmedRegression` is worse and every other verdict is not.
    pub fn from_verdicts(mid_vs_good: KeyVerdict, bad_vs_mid: KeyVerdict) -> StepFinding {
        let worse = |v: KeyVerdict| v == KeyVerdict::ConfirmedRegression;
        StepFinding::from_worse(worse(mid_vs_good), worse(bad_vs_mid))
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
    /// One commit: decided steps narrowed the range until the last good
    /// and the first bad are neighbours.
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
        }
    }

    /// Replays recorded steps (a resumed bisection): the same state as
    /// recording them one by one.
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
    /// After a step that did not decide, the same midpoint again (to be
    /// measured in a new session).
    pub fn next(&self) -> Option<usize> {
        if self.bad - self.good <= 1 || self.steps.len() >= self.budget {
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

    /// Records what a step at `index` found. Every step counts against
    /// the budget; only a decided one inside the bounds moves a bound.
    pub fn record(&mut self, index: usize, finding: StepFinding) {
        match &finding {
            StepFinding::Good if index > self.good && index < self.bad => self.good = index,
            StepFinding::Bad if index > self.good && index < self.bad => self.bad = index,
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
        let reason = if (self.good + 1..self.bad).all(|i| !self.untested(i)) {
            "every commit between the bounds failed to build".to_owned()
        } else if self.steps.len() >= self.budget {
            let mut why = format!("the budget of {} step(s) ran out", self.budget);
            if let Some(Step {
                index,
                finding: StepFinding::Undecided(reason),
            }) = self.steps.last()
            {
                why += &format!("; the last step, at commit {index}, did not decide: {reason}");
            }
            why
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

    /// Runs a bisection where commit `culprit` introduced the change; the
    /// midpoints in `broken` do not build, and the steps whose number (from
    /// 0) is in `noisy` do not decide.
    fn run_with(
        len: usize,
        budget: usize,
        culprit: usize,
        broken: &[usize],
        noisy: &[usize],
    ) -> Bisection {
        let mut b = Bisection::new(len, budget);
        while let Some(i) = b.next() {
            let f = if broken.contains(&i) {
                StepFinding::BuildFailed("exit 1".into())
            } else if noisy.contains(&b.steps().len()) {
                StepFinding::from_worse(false, false)
            } else {
                StepFinding::from_worse(i >= culprit, i < culprit)
            };
            b.record(i, f);
        }
        b
    }

    fn run(len: usize, budget: usize, culprit: usize, broken: &[usize]) -> (Outcome, usize) {
        let b = run_with(len, budget, culprit, broken, &[]);
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
    fn an_undecided_step_is_measured_again_and_the_culprit_found() {
        // The first step at the midpoint 4 of 0..=8 does not decide: the
        // same midpoint is measured again, and the bisection goes on.
        let mut b = Bisection::new(9, 5);
        assert_eq!(b.next(), Some(4));
        b.record(4, StepFinding::from_worse(false, false));
        assert_eq!(b.next(), Some(4));
        b.record(4, StepFinding::from_worse(true, false));
        while let Some(i) = b.next() {
            b.record(i, StepFinding::from_worse(i >= 3, i < 3));
        }
        assert_eq!(b.outcome(), Outcome::Culprit(3));
        assert_eq!(b.steps().len(), 4);
        assert!(matches!(b.steps()[0].finding, StepFinding::Undecided(_)));

        // Two undecided steps anywhere fit in a budget of ⌈log2 N⌉ + 2, on
        // every range of 2..=65 commits and every culprit.
        for len in 2..=65 {
            let budget = Bisection::steps_needed(len) + 2;
            for culprit in 1..len {
                for noisy in [[0, 1], [0, 2], [1, 3]] {
                    let b = run_with(len, budget, culprit, &[], &noisy);
                    assert_eq!(
                        b.outcome(),
                        Outcome::Culprit(culprit),
                        "len {len} {noisy:?}"
                    );
                    assert!(b.steps().len() <= budget);
                }
            }
        }
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
        // A broken commit is never measured twice, even after an undecided
        // step next to it.
        let b = run_with(9, 16, 6, &[4], &[1]);
        assert_eq!(b.outcome(), Outcome::Culprit(6));
        assert_eq!(b.steps().iter().filter(|s| s.index == 4).count(), 1);
    }

    #[test]
    fn a_budget_that_runs_out_gives_the_smallest_range() {
        let (o, steps) = run(65, 3, 37, &[]);
        assert_eq!(steps, 3);
        match o {
            Outcome::Range { good, bad, reason } => {
                assert!(good < 37 && 37 <= bad && bad - good == 8, "{good}..{bad}");
                assert!(reason.contains("budget"), "{reason}");
                assert!(!reason.contains("did not decide"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn undecided_steps_count_against_the_budget_and_say_why() {
        // One decided step (0..=16 → 8 good), then only undecided ones.
        let b = run_with(17, 4, 12, &[], &[1, 2, 3]);
        assert_eq!(b.next(), None);
        assert_eq!(b.steps().len(), 4);
        assert!(b.steps()[1..].iter().all(|s| s.index == 12));
        match b.outcome() {
            Outcome::Range {
                good: 8,
                bad: 16,
                reason,
            } => {
                assert!(reason.contains("budget of 4 step(s) ran out"), "{reason}");
                assert!(reason.contains("at commit 12, did not decide"), "{reason}");
                assert!(reason.contains("neither half"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // No step at all decides: nothing is named.
        let b = run_with(9, 3, 5, &[], &[0, 1, 2]);
        assert!(matches!(
            b.outcome(),
            Outcome::Range {
                good: 0,
                bad: 8,
                ..
            }
        ));
    }

    #[test]
    fn replaying_the_recorded_steps_resumes_to_the_same_state() {
        let full = run_with(33, 9, 21, &[16], &[0, 3]);
        assert_eq!(full.outcome(), Outcome::Culprit(21));
        // Killed after any step, the replay of the steps so far is the
        // state the bisection had then, and asks for the same commit next.
        let mut live = Bisection::new(33, 9);
        for (k, s) in full.steps().iter().enumerate() {
            let replayed = Bisection::with_steps(33, 9, &full.steps()[..k]);
            assert_eq!(replayed, live, "after {k} steps");
            assert_eq!(replayed.next(), Some(s.index));
            live.record(s.index, s.finding.clone());
        }
        assert_eq!(Bisection::with_steps(33, 9, full.steps()), full);
    }

    #[test]
    fn only_confirmed_regressions_count_as_worse() {
        use KeyVerdict::*;
        for other in [WithinBand, Inconclusive, NotConfirmed, ConfirmedImprovement] {
            assert_eq!(
                StepFinding::from_verdicts(ConfirmedRegression, other),
                StepFinding::Bad,
                "{other:?}"
            );
            assert_eq!(
                StepFinding::from_verdicts(other, ConfirmedRegression),
                StepFinding::Good,
                "{other:?}"
            );
            match StepFinding::from_verdicts(other, Inconclusive) {
                StepFinding::Undecided(why) => assert!(why.contains("neither"), "{why}"),
                f => panic!("{other:?}: {f:?}"),
            }
        }
        match StepFinding::from_verdicts(ConfirmedRegression, ConfirmedRegression) {
            StepFinding::Undecided(why) => assert!(why.contains("both"), "{why}"),
            f => panic!("{f:?}"),
        }
    }
}
