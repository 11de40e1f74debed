//! Culprit bisection as the policies run it, through the real
//! `benchops::bisect` planner: each step is a session of its own that
//! measures the midpoint interleaved with both bounds, `confirm_runs`
//! samples each, and decides from two comparisons (the midpoint against
//! the good bound, the bad bound against the midpoint); a step that does
//! not decide is measured again in a new session while the budget lasts.
//! Also the range experiment: ranges of N commits with one culprit, scored
//! on whether the culprit is named exactly and in how many steps.

use anyhow::{Context, Result};
use benchops::bisect::{Bisection, Outcome, StepFinding};
use benchops::compare::Settings;
use benchops::mann_whitney::mann_whitney;
use benchops::names::CaseId;
use benchops::record::{ConfirmationRole, Direction, KeyVerdict};
use benchops::same_session::decide;

use super::corpus::{Noise, Session, draw};
use super::rng::{Rng, derive};

/// How a step compares two commits measured side by side.
#[derive(Debug, Clone, Copy)]
pub(crate) enum StepRule<'a> {
    /// `same_session::decide` as a suspect regression: worse is a
    /// confirmed regression (the interval at `confirm_level` wholly above
    /// the band), anything else is not worse; `StepFinding::from_verdicts`
    /// decides the step.
    Benchops(&'a Settings),
    /// Pinpoint-style: worse when the two-sided Mann-Whitney p-value is at
    /// most `alpha` and the later commit's median is higher; not worse
    /// otherwise. No band.
    Pinpoint(f64),
}

/// The steps a bisection of `len` commits may take: ⌈log2 N⌉ + 2, N =
/// `len − 1` the commits that can be the culprit.
pub(crate) fn budget(len: usize) -> usize {
    Bisection::steps_needed(len) + 2
}

fn median(v: &[f64]) -> f64 {
    benchops::stats::median(v).unwrap_or(f64::NAN)
}

/// The verdict on `b` against `a` in one step.
fn pair(rule: StepRule<'_>, case: &CaseId, stage: &str, a: &[f64], b: &[f64]) -> KeyVerdict {
    match rule {
        StepRule::Benchops(settings) => decide(
            settings,
            case,
            "wall_s",
            Direction::LowerIsBetter,
            ConfirmationRole::SuspectRegression,
            a,
            b,
            stage,
        )
        .map_or(KeyVerdict::Inconclusive, |d| d.verdict),
        StepRule::Pinpoint(alpha) => {
            let different = mann_whitney(b, a).is_some_and(|t| t.p_two_sided <= alpha);
            if different && median(b) > median(a) {
                KeyVerdict::ConfirmedRegression
            } else {
                KeyVerdict::WithinBand
            }
        }
    }
}

/// A bisection's result.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub(crate) outcome: Outcome,
    pub(crate) steps: usize,
}

/// Bisects a range of `len` commits (index 0 good, `len − 1` bad):
/// `sample(step, role, index)` gives the samples of commit `index` in step
/// `step` (`role` 0 the good bound, 1 the midpoint, 2 the bad bound).
pub(crate) fn run(
    rule: StepRule<'_>,
    case: &CaseId,
    label: &str,
    len: usize,
    mut sample: impl FnMut(usize, usize, usize) -> Vec<f64>,
) -> Run {
    let mut b = Bisection::new(len, budget(len));
    while let Some(mid) = b.next() {
        let step = b.steps().len();
        let (good, bad) = match b.outcome() {
            Outcome::Range { good, bad, .. } => (good, bad),
            Outcome::Culprit(_) => break,
        };
        let g = sample(step, 0, good);
        let m = sample(step, 1, mid);
        let d = sample(step, 2, bad);
        let stage = |what: &str| format!("bisect/{label}/{step}/{what}");
        let finding = StepFinding::from_verdicts(
            pair(rule, case, &stage("mid-good"), &g, &m),
            pair(rule, case, &stage("bad-mid"), &m, &d),
        );
        b.record(mid, finding);
    }
    Run {
        steps: b.steps().len(),
        outcome: b.outcome(),
    }
}

/// What a bisection named, against the truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Named {
    /// The culprit, exactly.
    Exact,
    /// One commit, not the culprit.
    WrongCommit,
    /// A range that holds the culprit.
    RangeWith,
    /// A range that does not hold it.
    RangeWithout,
}

impl Named {
    pub(crate) const ALL: [Named; 4] = [
        Named::Exact,
        Named::WrongCommit,
        Named::RangeWith,
        Named::RangeWithout,
    ];

    /// Scores `outcome` when the culprit is at index `culprit` (`None`:
    /// no single culprit in the range, so any commit named is wrong).
    pub(crate) fn of(outcome: &Outcome, culprit: Option<usize>) -> Named {
        match (outcome, culprit) {
            (Outcome::Culprit(i), Some(c)) if *i == c => Named::Exact,
            (Outcome::Culprit(_), _) => Named::WrongCommit,
            (Outcome::Range { good, bad, .. }, Some(c)) if *good < c && c <= *bad => {
                Named::RangeWith
            }
            (Outcome::Range { .. }, _) => Named::RangeWithout,
        }
    }
}

/// Range sizes of the experiment: N commits that can be the culprit.
pub(crate) const RANGES: [usize; 4] = [2, 8, 16, 64];
/// Culprit step sizes of the experiment.
pub(crate) const SIZES: [f64; 2] = [0.10, 0.20];

/// One condition of the experiment: noise inside a session and the
/// session's shift (which multiplies all three commits of a step alike).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Condition {
    pub(crate) noise: Noise,
    pub(crate) cv: f64,
    pub(crate) session: Session,
}

/// The experiment's conditions: normal noise at every CV (none to 10%),
/// every other kind at 3%, each in sessions that shift with CV 3%.
pub(crate) fn conditions() -> Vec<Condition> {
    let s = Session::Shift(0.03);
    let mut out: Vec<Condition> = super::corpus::CVS
        .iter()
        .map(|&cv| Condition {
            noise: Noise::Normal,
            cv,
            session: s,
        })
        .collect();
    out.extend(
        Noise::ALL
            .iter()
            .filter(|n| **n != Noise::Normal)
            .map(|&noise| Condition {
                noise,
                cv: 0.03,
                session: s,
            }),
    );
    out
}

/// One trial's score.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TrialScore {
    pub(crate) condition: usize,
    pub(crate) range: usize,
    pub(crate) size: usize,
    pub(crate) named: Named,
    pub(crate) steps: usize,
}

/// Runs every rule over `reps` trials of every range and size in condition
/// `ci` of [`conditions`]; the scores by rule.
pub(crate) fn experiment(
    rules: &[StepRule<'_>],
    ci: usize,
    reps: usize,
    k: usize,
    seed: u64,
) -> Result<Vec<Vec<TrialScore>>> {
    let case = CaseId::new("bisect.trial").context("case id")?;
    let c = conditions()[ci];
    let mut out = vec![Vec::new(); rules.len()];
    for (ri, &n) in RANGES.iter().enumerate() {
        for (si, &size) in SIZES.iter().enumerate() {
            for rep in 0..reps {
                let tseed = derive(seed, &[ci as u64, ri as u64, si as u64, rep as u64]);
                let culprit = 1 + Rng::new(tseed).below(n);
                let level = |i: usize| if i >= culprit { 1.0 + size } else { 1.0 };
                for (k_rule, rule) in rules.iter().enumerate() {
                    let r = run(
                        *rule,
                        &case,
                        &format!("t{tseed}"),
                        n + 1,
                        |step, role, i| {
                            let sf = c.session.factor(derive(tseed, &[step as u64]), step, 0.0);
                            draw(
                                derive(tseed, &[step as u64, role as u64 + 1]),
                                level(i),
                                sf,
                                c.noise,
                                c.cv,
                                k,
                            )
                        },
                    );
                    out[k_rule].push(TrialScore {
                        condition: ci,
                        range: ri,
                        size: si,
                        named: Named::of(&r.outcome, Some(culprit)),
                        steps: r.steps,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// The experiment's scores of one rule within the target conditions (CV
/// inside the session at most 3%): exact, and over all trials.
pub(crate) fn exact_in_target(scores: &[TrialScore]) -> (usize, usize) {
    let conds = conditions();
    let pool: Vec<&TrialScore> = scores
        .iter()
        .filter(|t| conds[t.condition].cv <= 0.03 + 1e-12)
        .collect();
    (
        pool.iter().filter(|t| t.named == Named::Exact).count(),
        pool.len(),
    )
}

fn pct(num: usize, den: usize) -> String {
    if den == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * num as f64 / den as f64)
    }
}

/// The experiment's tables: by range size within the target conditions,
/// and the exact share by condition.
pub(crate) fn report(rules: &[(String, Vec<TrialScore>)]) -> String {
    let conds = conditions();
    let mut s = format!(
        "{:<22}{:>5}{:>7}{:>9}{:>9}{:>9}{:>9}{:>8}{:>7}{:>8}\n",
        "rule", "N", "size", "exact", "wrong", "range+", "range-", "steps", "max", "budget"
    );
    for (label, scores) in rules {
        for (ri, &n) in RANGES.iter().enumerate() {
            for (si, &size) in SIZES.iter().enumerate() {
                let pool: Vec<&TrialScore> = scores
                    .iter()
                    .filter(|t| {
                        t.range == ri && t.size == si && conds[t.condition].cv <= 0.03 + 1e-12
                    })
                    .collect();
                let count = |k: Named| pool.iter().filter(|t| t.named == k).count();
                let steps: usize = pool.iter().map(|t| t.steps).sum();
                s += &format!(
                    "{:<22}{:>5}{:>7}{:>9}{:>9}{:>9}{:>9}{:>8}{:>7}{:>8}\n",
                    label,
                    n,
                    format!("+{:.0}%", size * 100.0),
                    pct(count(Named::Exact), pool.len()),
                    pct(count(Named::WrongCommit), pool.len()),
                    pct(count(Named::RangeWith), pool.len()),
                    pct(count(Named::RangeWithout), pool.len()),
                    if pool.is_empty() {
                        "-".into()
                    } else {
                        format!("{:.2}", steps as f64 / pool.len() as f64)
                    },
                    pool.iter().map(|t| t.steps).max().unwrap_or(0),
                    budget(n + 1),
                );
            }
        }
    }
    s += &format!("\n{:<22}{:<18}", "rule", "exact by cell");
    for &n in &RANGES {
        s += &format!("{:>8}", format!("N={n}"));
    }
    s += &format!("{:>8}\n", "all");
    for (label, scores) in rules {
        for (ci, c) in conds.iter().enumerate() {
            let name = format!("{} {}", c.noise.name(), super::report::cv_name(c.cv));
            s += &format!("{label:<22}{name:<18}");
            for ri in (0..RANGES.len()).map(Some).chain([None]) {
                let pool: Vec<&TrialScore> = scores
                    .iter()
                    .filter(|t| t.condition == ci && ri.is_none_or(|r| t.range == r))
                    .collect();
                let exact = pool.iter().filter(|t| t.named == Named::Exact).count();
                s += &format!("{:>8}", pct(exact, pool.len()));
            }
            s += "\n";
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bisects 16 commits with a +20% culprit; `cv` is the noise inside a
    /// session, and each step's session is 5% slow or fast.
    fn bisect(rule: StepRule<'_>, culprit: usize, cv: f64) -> Run {
        let case = CaseId::new("t").expect("case");
        run(rule, &case, "x", 17, |step, role, i| {
            let level = if i >= culprit { 1.2 } else { 1.0 };
            let session = if step % 2 == 0 { 1.05 } else { 0.95 };
            draw(
                derive(9, &[culprit as u64, step as u64, role as u64]),
                level,
                session,
                Noise::Normal,
                cv,
                10,
            )
        })
    }

    #[test]
    fn a_clear_culprit_is_found_in_log2_steps_by_every_rule() {
        let s = Settings::default();
        for rule in [StepRule::Benchops(&s), StepRule::Pinpoint(0.01)] {
            for culprit in [1, 5, 16] {
                // No noise inside a session: every comparison is exact.
                let r = bisect(rule, culprit, 0.0);
                assert_eq!(r.outcome, Outcome::Culprit(culprit), "{rule:?}");
                assert_eq!(r.steps, 4);
                assert_eq!(Named::of(&r.outcome, Some(culprit)), Named::Exact);
            }
        }
    }

    #[test]
    fn undecided_steps_are_measured_again_within_the_budget() {
        let s = Settings::default();
        // Heavy noise inside the session: some steps do not decide, and are
        // measured again in a new session.
        let runs: Vec<(usize, Run)> = (1..=16)
            .map(|c| (c, bisect(StepRule::Benchops(&s), c, 0.05)))
            .collect();
        for (culprit, r) in &runs {
            assert!(r.steps <= budget(17), "{r:?}");
            assert_ne!(
                Named::of(&r.outcome, Some(*culprit)),
                Named::WrongCommit,
                "{r:?}"
            );
        }
        // Some culprit was named exactly only thanks to a step measured
        // again: more steps than ⌈log2 16⌉ = 4.
        assert!(
            runs.iter()
                .any(|(c, r)| r.steps > 4 && r.outcome == Outcome::Culprit(*c)),
            "{runs:?}"
        );
    }

    #[test]
    fn outcomes_are_scored_against_the_truth() {
        let range = |good, bad| Outcome::Range {
            good,
            bad,
            reason: String::new(),
        };
        assert_eq!(Named::of(&Outcome::Culprit(3), Some(4)), Named::WrongCommit);
        assert_eq!(Named::of(&Outcome::Culprit(3), None), Named::WrongCommit);
        assert_eq!(Named::of(&range(2, 4), Some(4)), Named::RangeWith);
        assert_eq!(Named::of(&range(4, 8), Some(4)), Named::RangeWithout);
        assert_eq!(Named::of(&range(0, 8), None), Named::RangeWithout);
        assert_eq!(budget(65), 8);
        assert_eq!(budget(3), 3);
    }
}
