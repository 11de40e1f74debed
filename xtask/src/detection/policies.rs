//! The policies under test, each run over one series of the corpus: the
//! benchops lane comparison (first look, in-run confirmation, last-clean
//! baseline, open/close rule) through the real `benchops::compare` API, and
//! re-implementations of four peers' published alarm rules on the series
//! of run medians. None of the peers' code is used or copied.

use anyhow::{Context, Result};
use benchops::changepoint::{Config, Spread, change_points};
use benchops::compare::{Reruns, Settings, decide, first_look};
use benchops::names::CaseId;
use benchops::record::{Direction, KeyVerdict, RunCounts};

use super::corpus::Series;

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

/// A policy and its parameter.
#[derive(Debug, Clone)]
pub(crate) enum Policy {
    /// benchops with these settings.
    Benchops(Box<Settings>),
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
            Policy::Benchops(_) => "benchops".into(),
            Policy::Gab(r) => format!("gab>{:.0}%", r * 100.0),
            Policy::Conbench(z) => format!("conbench z>={z}"),
            Policy::Perfherder(t) => format!("perfherder t>{t}"),
            Policy::Otava(p) => format!("otava p<={p}"),
        }
    }

    /// How an alarm's position relates to when it is raised.
    pub(crate) fn timing(&self) -> Timing {
        match self {
            Policy::Benchops(_) | Policy::Gab(_) | Policy::Conbench(_) => Timing::Online,
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

/// What a policy did over one series.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// Alarms, by the run they are raised at.
    pub(crate) alarms: Vec<Alarm>,
    /// Runs where an issue opened, and where it closed.
    pub(crate) opens: Vec<usize>,
    pub(crate) closes: Vec<usize>,
    /// Issues opened while one was open (0 by construction of both rules).
    pub(crate) duplicates: usize,
    /// Confirmation re-runs, and the samples they drew.
    pub(crate) confirmations: usize,
    pub(crate) extra_samples: usize,
    /// Verdict counts (benchops only), in [`VERDICTS`] order.
    pub(crate) verdicts: [usize; 5],
    /// One letter per run (benchops only): `-` no baseline, `.` within
    /// band, `?` inconclusive, `n` not confirmed, `R` confirmed regression,
    /// `I` confirmed improvement.
    pub(crate) trace: String,
}

/// The benchops verdicts, in the order of [`Outcome::verdicts`].
pub(crate) const VERDICTS: [KeyVerdict; 5] = [
    KeyVerdict::WithinBand,
    KeyVerdict::Inconclusive,
    KeyVerdict::NotConfirmed,
    KeyVerdict::ConfirmedRegression,
    KeyVerdict::ConfirmedImprovement,
];

/// One series as the policies see it: the first-look samples of each run
/// and their medians.
#[derive(Debug)]
pub(crate) struct Observed<'a> {
    pub(crate) series: &'a Series,
    pub(crate) index: usize,
    pub(crate) batches: Vec<Vec<f64>>,
    pub(crate) medians: Vec<f64>,
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
        }
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let k = s.len();
    if k == 0 {
        f64::NAN
    } else if k % 2 == 1 {
        s[k / 2]
    } else {
        (s[k / 2 - 1] + s[k / 2]) / 2.0
    }
}

/// Runs `policy` over one series.
pub(crate) fn run(policy: &Policy, obs: &Observed<'_>) -> Result<Outcome> {
    let alarms = match policy {
        Policy::Benchops(settings) => return benchops(settings, obs),
        Policy::Gab(ratio) => gab(&obs.medians, *ratio),
        Policy::Conbench(z) => conbench(&obs.medians, *z),
        Policy::Perfherder(t) => perfherder(&obs.medians, *t),
        Policy::Otava(p) => otava(&obs.medians, *p)?,
    };
    Ok(simple_lifecycle(alarms, obs.series.runs))
}

/// The benchops lane over one series: the baseline is the last clean run,
/// an issue is open from a confirmed regression to a clearing verdict, and
/// a key with an open issue is looked at as drifting.
fn benchops(settings: &Settings, obs: &Observed<'_>) -> Result<Outcome> {
    let case = CaseId::new(format!("corpus.s{}", obs.index)).context("case id")?;
    let mut out = Outcome::default();
    let mut baseline: Option<&[f64]> = None;
    let mut open = false;
    for (t, candidate) in obs.batches.iter().enumerate() {
        let Some(base) = baseline else {
            baseline = Some(candidate);
            out.trace.push('-');
            continue;
        };
        let look = first_look(
            settings,
            &case,
            "wall_s",
            Direction::LowerIsBetter,
            open,
            base,
            candidate,
        );
        let verdict = match look {
            // Never with positive samples; counted as no verdict.
            Err(_) => KeyVerdict::Inconclusive,
            Ok(look) => {
                let reruns = if look.needs_confirmation() {
                    let k = settings.confirm_runs as usize;
                    out.confirmations += 1;
                    out.extra_samples += k;
                    Some(Reruns {
                        samples: obs.series.reruns(t, k),
                        runs: RunCounts::default(),
                    })
                } else {
                    None
                };
                decide(settings, look, reruns).verdict
            }
        };
        if let Some(i) = VERDICTS.iter().position(|v| *v == verdict) {
            out.verdicts[i] += 1;
            out.trace.push(['.', '?', 'n', 'R', 'I'][i]);
        }
        if verdict == KeyVerdict::ConfirmedRegression {
            out.alarms.push(Alarm { at: t, pos: t });
            if open {
                // The issue is updated, not opened again.
            } else {
                open = true;
                out.opens.push(t);
            }
        }
        if verdict.clears() {
            if open {
                open = false;
                out.closes.push(t);
            }
            baseline = Some(candidate);
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
