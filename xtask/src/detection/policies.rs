//! The policies under test, each run over one series of the corpus: the
//! benchops lane comparison in its two modes through the real API
//! (stored-baseline: `compare::first_look` and `compare::decide` with
//! re-runs in the same session; same-session: the first look chooses what
//! to re-measure, `same_session::decide` compares the baseline commit and
//! the candidate measured side by side, and a new issue is bisected with
//! `benchops::bisect`), a Pinpoint-style A/B policy, and
//! re-implementations of four peers' published alarm rules on the series
//! of run medians. None of the peers' code is used or copied.

use std::cell::RefCell;
use std::collections::HashMap;

use anyhow::{Context, Result};
use benchops::changepoint::{Config, Spread, change_points};
use benchops::compare::{FirstLook, Reruns, Settings, decide, first_look};
use benchops::mann_whitney::mann_whitney;
use benchops::names::CaseId;
use benchops::record::{ConfirmationRole, Direction, KeyVerdict, RunCounts};
use benchops::same_session;

use super::bisection::{self, Named, StepRule};
use super::corpus::{COMMITS_PER_RUN, Series};

/// Conbench: runs of history in the lookback distribution (at most).
pub(crate) const CONBENCH_LOOKBACK: usize = 100;
/// Conbench needs at least this many earlier runs to make a call.
pub(crate) const CONBENCH_MIN_HISTORY: usize = 2;
/// Perfherder's back and fore windows (runs).
pub(crate) const PERFHERDER_WINDOW: usize = 12;
/// Perfherder's smallest relative change of the means that alerts.
pub(crate) const PERFHERDER_MIN_CHANGE: f64 = 0.02;
/// Otava's sliding window.
pub(crate) const OTAVA_WINDOW: usize = 50;
/// Two change points this close (in runs) are the same point seen again.
pub(crate) const OTAVA_SAME_POINT: usize = 2;
/// Pinpoint's significance level ("low threshold") for a difference.
pub(crate) const PINPOINT_ALPHA: f64 = 0.01;

/// How benchops compares a run with its baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Today's rule: the stored baseline's samples (from an earlier
    /// session) against this run's, suspects re-run in this session.
    Stored,
    /// The stored baseline chooses suspects and drifting keys; the baseline
    /// commit and the candidate are measured again, interleaved, in this
    /// session, and `same_session::decide` gives the verdict.
    SameSession(SsRule),
}

/// The lane-side choices of the same-session mode: what the exec does
/// around `same_session::decide`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SsRule {
    /// A key's baseline moves only on a clearing verdict of that key
    /// (`within_band`, `confirmed_improvement`), not on an inconclusive
    /// one.
    pub(crate) last_clean: bool,
    /// Samples per side of a drifting key's comparison (the clear), in
    /// multiples of `confirm_runs`.
    pub(crate) clear_factor: usize,
    /// The clear reads the upper end of the interval at `2·level − 1`,
    /// a one-sided bound at `level`, instead of the two-sided interval at
    /// `level` (a change `same_session::decide` would need; measured by
    /// `--sweep`).
    pub(crate) one_sided_clear: bool,
}

impl SsRule {
    /// The rule the benchmark measures as "same-session": per key, last
    /// clean; a drifting key measured with three times `confirm_runs` per
    /// side; the core's clear.
    pub(crate) const LANE: SsRule = SsRule {
        last_clean: true,
        clear_factor: 3,
        one_sided_clear: false,
    };
    /// The same comparison with today's lane choices: the baseline also
    /// moves on an inconclusive look at a key that is not drifting, and a
    /// clear measures `confirm_runs` per side.
    pub(crate) const PLAIN: SsRule = SsRule {
        last_clean: false,
        clear_factor: 1,
        one_sided_clear: false,
    };
}

impl Mode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Stored => "stored",
            Mode::SameSession(_) => "same-session",
        }
    }

    pub(crate) fn is_same_session(self) -> bool {
        matches!(self, Mode::SameSession(_))
    }
}

/// A policy and its parameter.
#[derive(Debug, Clone)]
pub(crate) enum Policy {
    /// benchops with these settings in this mode; `id` names the settings
    /// (first looks with the same settings are computed once per series).
    Benchops {
        id: usize,
        name: String,
        settings: Box<Settings>,
        mode: Mode,
    },
    /// Pinpoint-style: a Mann-Whitney first look against the stored
    /// baseline chooses suspects; the baseline commit and the candidate are
    /// measured interleaved (`confirm_runs` each) and compared with
    /// Mann-Whitney at `alpha`, no band; a new issue is bisected the same
    /// way.
    Pinpoint { alpha: f64, confirm_runs: u32 },
    /// github-action-benchmark: alarm when this run's value over the
    /// previous run's exceeds the ratio.
    Gab(f64),
    /// Conbench lookback z-score: alarm when z ≥ the threshold.
    Conbench(f64),
    /// Perfherder: alarm when Welch's t > the threshold and the change is
    /// at least 2%.
    Perfherder(f64),
    /// Otava e-divisive, online: alarm on a new increasing change point at
    /// this `max_p`.
    Otava(f64),
}

impl Policy {
    pub(crate) fn label(&self) -> String {
        match self {
            Policy::Benchops { name, .. } => name.clone(),
            Policy::Pinpoint { alpha, .. } => format!("pinpoint p<={alpha}"),
            Policy::Gab(r) => format!("gab>{:.0}%", r * 100.0),
            Policy::Conbench(z) => format!("conbench z>={z}"),
            Policy::Perfherder(t) => format!("perfherder t>{t}"),
            Policy::Otava(p) => format!("otava p<={p}"),
        }
    }

    /// How an alarm's position relates to when it is raised.
    pub(crate) fn timing(&self) -> Timing {
        match self {
            Policy::Benchops { .. }
            | Policy::Pinpoint { .. }
            | Policy::Gab(_)
            | Policy::Conbench(_) => Timing::Online,
            Policy::Perfherder(_) => Timing::Retrospective,
            Policy::Otava(_) => Timing::OnlineWithPosition,
        }
    }
}

/// When a policy's alarm is known and where it points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timing {
    /// Raised at the run it is about.
    Online,
    /// Names a past run, using runs after it (scored on the run it names).
    Retrospective,
    /// Raised at a run, naming an earlier change point (scored on when it
    /// is raised, and the point it names must be at or near the change).
    OnlineWithPosition,
}

/// An alarm: the run at which it is raised, and the run it points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Alarm {
    pub(crate) at: usize,
    pub(crate) pos: usize,
}

/// Extra measurement a policy spent, in samples, and the builds it needed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cost {
    /// Samples of the candidate beyond its first look: the stored mode's
    /// re-runs, or side B of a same-session comparison.
    pub(crate) b_side: usize,
    /// Samples of the baseline commit (side A).
    pub(crate) a_side: usize,
    /// Samples of bisection steps (three commits per step).
    pub(crate) bisect: usize,
    /// Builds of a baseline commit for side A: one per baseline commit
    /// re-measured (a commit built once is kept for later comparisons).
    pub(crate) ab_builds: usize,
    /// Builds of bisection midpoints (one per step).
    pub(crate) bisect_builds: usize,
}

impl Cost {
    pub(crate) fn samples(&self) -> usize {
        self.b_side + self.a_side + self.bisect
    }

    pub(crate) fn add(&mut self, o: &Cost) {
        self.b_side += o.b_side;
        self.a_side += o.a_side;
        self.bisect += o.bisect;
        self.ab_builds += o.ab_builds;
        self.bisect_builds += o.bisect_builds;
    }
}

/// A bisection started when an issue opened.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaneBisection {
    /// The run whose confirmed regression opened the issue.
    pub(crate) at: usize,
    /// Commits that can be the culprit.
    pub(crate) commits: usize,
    /// Whether exactly one culprit lies in the range.
    pub(crate) single_culprit: bool,
    pub(crate) named: Named,
    pub(crate) steps: usize,
}

/// What a policy did over one series.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// Alarms, by the run they are raised at.
    pub(crate) alarms: Vec<Alarm>,
    /// Runs where an issue opened, and where it closed.
    pub(crate) opens: Vec<usize>,
    pub(crate) closes: Vec<usize>,
    /// Issues opened while one was open (0 by construction of every rule).
    pub(crate) duplicates: usize,
    /// Runs with a confirmation (re-runs or a same-session comparison).
    pub(crate) confirmations: usize,
    pub(crate) cost: Cost,
    /// Verdict counts (benchops and Pinpoint), in [`VERDICTS`] order.
    pub(crate) verdicts: [usize; 5],
    /// One letter per run (benchops and Pinpoint): `-` no baseline, `.`
    /// within band, `?` inconclusive, `n` not confirmed, `R` confirmed
    /// regression, `I` confirmed improvement.
    pub(crate) trace: String,
    pub(crate) bisections: Vec<LaneBisection>,
}

/// The benchops verdicts, in the order of [`Outcome::verdicts`].
pub(crate) const VERDICTS: [KeyVerdict; 5] = [
    KeyVerdict::WithinBand,
    KeyVerdict::Inconclusive,
    KeyVerdict::NotConfirmed,
    KeyVerdict::ConfirmedRegression,
    KeyVerdict::ConfirmedImprovement,
];

/// First looks of one series, by settings, baseline run, run and whether
/// the key drifts: the stored and same-session modes share them while
/// their baselines agree.
type LookCache = HashMap<(usize, usize, usize, bool), Option<FirstLook>>;

/// One series as the policies see it: the first-look samples of each run
/// and their medians.
#[derive(Debug)]
pub(crate) struct Observed<'a> {
    pub(crate) series: &'a Series,
    pub(crate) index: usize,
    pub(crate) batches: Vec<Vec<f64>>,
    pub(crate) medians: Vec<f64>,
    looks: RefCell<LookCache>,
}

impl<'a> Observed<'a> {
    pub(crate) fn new(series: &'a Series, index: usize, n: usize) -> Self {
        let batches: Vec<Vec<f64>> = (0..series.runs).map(|t| series.samples(t, n)).collect();
        let medians = batches.iter().map(|b| median(b)).collect();
        Observed {
            series,
            index,
            batches,
            medians,
            looks: RefCell::new(HashMap::new()),
        }
    }

    fn case(&self) -> Result<CaseId> {
        CaseId::new(format!("corpus.s{}", self.index)).context("case id")
    }

    /// The first look at run `t` against the baseline run `b`.
    fn look(
        &self,
        id: usize,
        settings: &Settings,
        case: &CaseId,
        b: usize,
        t: usize,
        drifting: bool,
    ) -> Option<FirstLook> {
        let key = (id, b, t, drifting);
        if let Some(l) = self.looks.borrow().get(&key) {
            return l.clone();
        }
        let l = first_look(
            settings,
            case,
            "wall_s",
            Direction::LowerIsBetter,
            drifting,
            &self.batches[b],
            &self.batches[t],
        )
        .ok();
        self.looks.borrow_mut().insert(key, l.clone());
        l
    }
}

fn median(v: &[f64]) -> f64 {
    benchops::stats::median(v).unwrap_or(f64::NAN)
}

/// Runs `policy` over one series.
pub(crate) fn run(policy: &Policy, obs: &Observed<'_>) -> Result<Outcome> {
    let alarms = match policy {
        Policy::Benchops {
            id, settings, mode, ..
        } => return benchops(*id, settings, *mode, obs),
        Policy::Pinpoint {
            alpha,
            confirm_runs,
        } => return pinpoint(*alpha, *confirm_runs as usize, obs),
        Policy::Gab(ratio) => gab(&obs.medians, *ratio),
        Policy::Conbench(z) => conbench(&obs.medians, *z),
        Policy::Perfherder(t) => perfherder(&obs.medians, *t),
        Policy::Otava(p) => otava(&obs.medians, *p)?,
    };
    Ok(simple_lifecycle(alarms, obs.series.runs))
}

/// Whether a run's verdict lets the key's baseline move to it: the lane's
/// `last-clean` rule (`within_band`, `confirmed_improvement`, or
/// `inconclusive` on a key that is not drifting), applied to each key on
/// its own, so that no key's drift holds another key's baseline.
fn baseline_moves(verdict: KeyVerdict, drifting: bool) -> bool {
    verdict.clears() || (verdict == KeyVerdict::Inconclusive && !drifting)
}

impl Outcome {
    fn record(&mut self, t: usize, verdict: KeyVerdict) {
        if let Some(i) = VERDICTS.iter().position(|v| *v == verdict) {
            self.verdicts[i] += 1;
            self.trace.push(['.', '?', 'n', 'R', 'I'][i]);
        }
        if verdict == KeyVerdict::ConfirmedRegression {
            self.alarms.push(Alarm { at: t, pos: t });
        }
    }
}

/// Bisects the commits between the baseline run `b` and run `t` when an
/// issue opens at `t`; each step is a session of its own.
fn lane_bisect(
    rule: StepRule<'_>,
    obs: &Observed<'_>,
    case: &CaseId,
    b: usize,
    t: usize,
    k: usize,
    out: &mut Outcome,
) {
    let s = obs.series;
    let first = Series::commit_of(b);
    let len = (t - b) * COMMITS_PER_RUN + 1;
    let in_range: Vec<usize> = s
        .culprits()
        .into_iter()
        .filter(|&c| c > first && c <= Series::commit_of(t))
        .map(|c| c - first)
        .collect();
    let culprit = (in_range.len() == 1).then(|| in_range[0]);
    let r = bisection::run(rule, case, &format!("lane{t}"), len, |step, role, i| {
        s.bisect_samples(t, step, role, first + i, k)
    });
    out.cost.bisect += 3 * k * r.steps;
    out.cost.bisect_builds += r.steps;
    out.bisections.push(LaneBisection {
        at: t,
        commits: len - 1,
        single_culprit: culprit.is_some(),
        named: Named::of(&r.outcome, culprit),
        steps: r.steps,
    });
}

/// The benchops lane over one series. The baseline is the last run whose
/// verdict lets it move ([`baseline_moves`]); an issue is open from a
/// confirmed regression to a clearing verdict, and a key with an open issue
/// is looked at as drifting.
fn benchops(id: usize, settings: &Settings, mode: Mode, obs: &Observed<'_>) -> Result<Outcome> {
    let case = obs.case()?;
    let k = settings.confirm_runs as usize;
    let mut out = Outcome::default();
    let mut baseline: Option<usize> = None;
    let mut built: Option<usize> = None;
    let mut open = false;
    for t in 0..obs.series.runs {
        let Some(b) = baseline else {
            baseline = Some(t);
            out.trace.push('-');
            continue;
        };
        let drifting = open;
        let verdict = match obs.look(id, settings, &case, b, t, drifting) {
            // Never with positive samples; counted as no verdict.
            None => KeyVerdict::Inconclusive,
            Some(look) => match mode {
                Mode::Stored => {
                    let reruns = look.needs_confirmation().then(|| {
                        out.confirmations += 1;
                        out.cost.b_side += k;
                        Reruns {
                            samples: obs.series.reruns(t, k),
                            runs: RunCounts::default(),
                        }
                    });
                    decide(settings, look, reruns).verdict
                }
                Mode::SameSession(rule) => {
                    // A drifting key is always asked to clear: the clear
                    // also reproduces the drift when B is still above the
                    // band.
                    let role = if drifting {
                        ConfirmationRole::ConfirmClear
                    } else {
                        look.role
                    };
                    if role == ConfirmationRole::None {
                        decide(settings, look, None).verdict
                    } else {
                        let k = if drifting { k * rule.clear_factor } else { k };
                        out.confirmations += 1;
                        out.cost.a_side += k;
                        out.cost.b_side += k;
                        if built != Some(b) {
                            built = Some(b);
                            out.cost.ab_builds += 1;
                        }
                        let a = obs.series.side_a(t, Series::commit_of(b), k);
                        let bb = obs.series.side_b(t, k);
                        let one_sided;
                        let settings = if drifting && rule.one_sided_clear {
                            let mut s = settings.clone();
                            s.level = 2.0 * s.level - 1.0;
                            one_sided = s;
                            &one_sided
                        } else {
                            settings
                        };
                        same_session::decide(
                            settings,
                            &case,
                            "wall_s",
                            Direction::LowerIsBetter,
                            role,
                            &a,
                            &bb,
                            "same-session",
                        )
                        .map_or(KeyVerdict::Inconclusive, |d| d.verdict)
                    }
                }
            },
        };
        out.record(t, verdict);
        if verdict == KeyVerdict::ConfirmedRegression && !open {
            open = true;
            out.opens.push(t);
            if mode.is_same_session() {
                lane_bisect(StepRule::Benchops(settings), obs, &case, b, t, k, &mut out);
            }
        }
        if verdict.clears() && open {
            open = false;
            out.closes.push(t);
        }
        let moves = match mode {
            Mode::SameSession(SsRule {
                last_clean: true, ..
            }) => verdict.clears(),
            _ => baseline_moves(verdict, drifting),
        };
        if moves {
            baseline = Some(t);
        }
    }
    Ok(out)
}

/// The Pinpoint-style lane over one series: a run whose samples differ
/// from the stored baseline's (two-sided Mann-Whitney p ≤ `alpha`), and
/// every run while an issue is open, is measured again next to the
/// baseline commit in its session; B worse than A at p ≤ `alpha` is a
/// regression (an issue opens and is bisected), anything else is clean
/// (an open issue closes and the baseline moves).
fn pinpoint(alpha: f64, k: usize, obs: &Observed<'_>) -> Result<Outcome> {
    let case = obs.case()?;
    let mut out = Outcome::default();
    let mut baseline: Option<usize> = None;
    let mut built: Option<usize> = None;
    let mut open = false;
    for t in 0..obs.series.runs {
        let Some(b) = baseline else {
            baseline = Some(t);
            out.trace.push('-');
            continue;
        };
        let suspect = open
            || mann_whitney(&obs.batches[t], &obs.batches[b])
                .is_some_and(|m| m.p_two_sided <= alpha);
        let verdict = if suspect {
            out.confirmations += 1;
            out.cost.a_side += k;
            out.cost.b_side += k;
            if built != Some(b) {
                built = Some(b);
                out.cost.ab_builds += 1;
            }
            let a = obs.series.side_a(t, Series::commit_of(b), k);
            let bb = obs.series.side_b(t, k);
            match mann_whitney(&bb, &a) {
                Some(m) if m.p_two_sided <= alpha && median(&bb) > median(&a) => {
                    KeyVerdict::ConfirmedRegression
                }
                Some(m) if m.p_two_sided <= alpha => KeyVerdict::ConfirmedImprovement,
                _ => KeyVerdict::WithinBand,
            }
        } else {
            KeyVerdict::WithinBand
        };
        out.record(t, verdict);
        if verdict == KeyVerdict::ConfirmedRegression {
            if !open {
                open = true;
                out.opens.push(t);
                lane_bisect(StepRule::Pinpoint(alpha), obs, &case, b, t, k, &mut out);
            }
        } else {
            if open {
                open = false;
                out.closes.push(t);
            }
            baseline = Some(t);
        }
    }
    Ok(out)
}

/// The simplest lifecycle for a peer: an issue opens on an alarm and
/// closes at the first later run without one.
fn simple_lifecycle(mut alarms: Vec<Alarm>, runs: usize) -> Outcome {
    alarms.sort_by_key(|a| (a.at, a.pos));
    let mut alarm_at = vec![false; runs];
    for a in &alarms {
        if a.at < runs {
            alarm_at[a.at] = true;
        }
    }
    let mut out = Outcome::default();
    let mut open = false;
    for (t, &alarmed) in alarm_at.iter().enumerate() {
        match (alarmed, open) {
            (true, false) => {
                open = true;
                out.opens.push(t);
            }
            (false, true) => {
                open = false;
                out.closes.push(t);
            }
            _ => {}
        }
    }
    out.alarms = alarms;
    out
}

/// github-action-benchmark: this run's value against the previous run's.
fn gab(v: &[f64], ratio: f64) -> Vec<Alarm> {
    (1..v.len())
        .filter(|&t| v[t] / v[t - 1] > ratio)
        .map(|t| Alarm { at: t, pos: t })
        .collect()
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let ss: f64 = v.iter().map(|x| (x - mean) * (x - mean)).sum();
    (mean, if v.len() > 1 { ss / (n - 1.0) } else { 0.0 })
}

/// Conbench lookback z-score: this run's value against the mean and
/// standard deviation of up to [`CONBENCH_LOOKBACK`] earlier runs.
fn conbench(v: &[f64], threshold: f64) -> Vec<Alarm> {
    (CONBENCH_MIN_HISTORY..v.len())
        .filter(|&t| {
            let window = &v[t.saturating_sub(CONBENCH_LOOKBACK)..t];
            let (mean, var) = mean_var(window);
            let d = v[t] - mean;
            let z = if var > 0.0 {
                d / var.sqrt()
            } else if d > 0.0 {
                f64::INFINITY
            } else {
                0.0
            };
            z >= threshold
        })
        .map(|t| Alarm { at: t, pos: t })
        .collect()
}

/// Perfherder: Welch's t of the 12 runs from each point on against the 12
/// before it; among consecutive points over the threshold (with a change
/// of the means of at least 2%), the one with the largest t alerts. The
/// alert is known once the fore window is complete, 11 runs later.
fn perfherder(v: &[f64], threshold: f64) -> Vec<Alarm> {
    let w = PERFHERDER_WINDOW;
    let mut alarms = Vec::new();
    let mut best: Option<(usize, f64)> = None;
    let mut flush = |best: &mut Option<(usize, f64)>| {
        if let Some((i, _)) = best.take() {
            alarms.push(Alarm {
                at: i + w - 1,
                pos: i,
            });
        }
    };
    for i in w..=v.len().saturating_sub(w) {
        let (mb, vb) = mean_var(&v[i - w..i]);
        let (mf, vf) = mean_var(&v[i..i + w]);
        let se = (vb / w as f64 + vf / w as f64).sqrt();
        let d = mf - mb;
        let t = if se > 0.0 {
            d / se
        } else if d > 0.0 {
            f64::INFINITY
        } else {
            0.0
        };
        let change = if mb != 0.0 { d / mb } else { 0.0 };
        if t > threshold && change >= PERFHERDER_MIN_CHANGE {
            if best.is_none_or(|(_, bt)| t > bt) {
                best = Some((i, t));
            }
        } else {
            flush(&mut best);
        }
    }
    flush(&mut best);
    alarms
}

/// Otava, online: at every run, the change points of the medians so far
/// (e-divisive, t-test, window 50, population spread as Otava computes it);
/// an increasing point not within two runs of one already alarmed on
/// raises an alarm at this run.
fn otava(v: &[f64], max_p: f64) -> Result<Vec<Alarm>> {
    let config = Config {
        window: OTAVA_WINDOW,
        max_p,
        min_magnitude: 0.0,
        spread: Spread::Population,
    };
    let mut known: Vec<usize> = Vec::new();
    let mut alarms = Vec::new();
    for t in 2..v.len() {
        let points = change_points(&v[..=t], &config).context("change points")?;
        for p in points {
            let worse = p.test.mean_after > p.test.mean_before;
            if worse
                && !known
                    .iter()
                    .any(|&k| k.abs_diff(p.index) <= OTAVA_SAME_POINT)
            {
                known.push(p.index);
                alarms.push(Alarm {
                    at: t,
                    pos: p.index,
                });
            }
        }
    }
    Ok(alarms)
}

#[cfg(test)]
mod tests {
    use super::super::corpus::{Family, Noise, SHAPE, Session};
    use super::*;

    fn series(family: Family, cv: f64, runs: usize, seed: u64) -> Series {
        let mut s = Series::new(family, Noise::Normal, cv, Session::Shift(0.03), SHAPE, seed);
        s.runs = runs;
        s
    }

    fn run_mode(s: &Series, mode: Mode) -> Outcome {
        let obs = Observed::new(s, 0, 10);
        run(
            &Policy::Benchops {
                id: 0,
                name: "b".into(),
                settings: Box::new(Settings::default()),
                mode,
            },
            &obs,
        )
        .expect("runs")
    }

    #[test]
    fn the_lane_rule_moves_on_an_inconclusive_look_only_when_not_drifting() {
        assert!(baseline_moves(KeyVerdict::WithinBand, true));
        assert!(baseline_moves(KeyVerdict::ConfirmedImprovement, false));
        assert!(baseline_moves(KeyVerdict::Inconclusive, false));
        assert!(!baseline_moves(KeyVerdict::Inconclusive, true));
        assert!(!baseline_moves(KeyVerdict::NotConfirmed, false));
        assert!(!baseline_moves(KeyVerdict::ConfirmedRegression, false));
    }

    #[test]
    fn reruns_confirm_a_session_shift_and_a_same_session_comparison_cancels_it() {
        // No noise inside a session: every sample of a session is its factor.
        let s = series(Family::AA, 0.0, 25, 1);
        let stored = run_mode(&s, Mode::Stored);
        assert!(!stored.alarms.is_empty(), "{}", stored.trace);
        let same = run_mode(&s, Mode::SameSession(SsRule::LANE));
        assert!(same.alarms.is_empty(), "{}", same.trace);
        // Both sides were measured for every re-measured key.
        assert_eq!(same.cost.a_side, same.cost.b_side);
        assert!(same.cost.ab_builds >= 1 && same.cost.ab_builds <= same.confirmations);
    }

    #[test]
    fn a_confirmed_step_opens_one_issue_and_its_culprit_is_bisected() {
        let s = series(Family::Step(0.2), 0.005, SHAPE.onset + 2, 2);
        let out = run_mode(&s, Mode::SameSession(SsRule::LANE));
        assert_eq!(out.opens, vec![SHAPE.onset], "{}", out.trace);
        assert_eq!(out.bisections.len(), 1);
        let b = out.bisections[0];
        assert!(b.single_culprit);
        assert_eq!(b.named, Named::Exact);
        assert_eq!(b.at, SHAPE.onset);
        // Whole lane runs of commits: from the baseline run to this one.
        assert!(b.commits >= COMMITS_PER_RUN);
        assert_eq!(b.commits / COMMITS_PER_RUN * COMMITS_PER_RUN, b.commits);
        assert_eq!(out.cost.bisect, 3 * 10 * b.steps);
    }
}
