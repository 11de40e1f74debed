//! The verdict of `compare` on each case and metric, and its report: B
//! against A by [`benchops::same_session::decide`] at `confirm_level`, in
//! the role of the point estimate's sign, mapped to `slower`, `faster`,
//! `same`, `inconclusive` or `not_compared`; the failed runs per case and
//! side; and the [`Outcome`] that decides the exit code.

use std::collections::{BTreeMap, BTreeSet};

use benchops::CaseId;
use benchops::compare::{Position, Settings, position};
use benchops::record::{ConfirmationRole, Direction, KeyVerdict, RunSide, SideRun};
use serde::Serialize;

use super::{CompareError, Planned, SCHEMA, STAGE, SideCommit, io_path};
use crate::bench::Status;
use crate::lane::StageBenchmark;
use crate::lane::sides::{self, KeyRuns};
use crate::state::StateDir;

/// The verdict on one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is worse than A beyond the band (a confirmed regression).
    Slower,
    /// B is better than A beyond the band (a confirmed improvement).
    Faster,
    /// The interval lies inside the band.
    Same,
    /// The interval crosses an edge of the band.
    Inconclusive,
    /// A side has no sample, or a relative effect is undefined.
    NotCompared,
}

impl Verdict {
    /// The name printed and in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Slower => "slower",
            Verdict::Faster => "faster",
            Verdict::Same => "same",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotCompared => "not_compared",
        }
    }
}

/// One side of a key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideStats {
    /// The median of its samples; null without samples.
    pub median: Option<f64>,
    /// Its samples (non-null values).
    pub samples: u64,
    /// Its measured runs (a failed run, or one that did not report the
    /// metric, is a run without a sample).
    pub runs: u64,
}

/// The effect of B against A, positive worse.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effect {
    /// The point estimate (0.3 is 30% worse).
    pub estimate: f64,
    /// The interval's lower bound.
    pub low: f64,
    /// Its upper bound.
    pub high: f64,
    /// Its level (`confirm_level`).
    pub level: f64,
    /// The two-sided Mann-Whitney U p-value, when both sides have enough
    /// samples.
    pub p_value: Option<f64>,
}

/// The comparison of one case and metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyResult {
    /// The case (escaped).
    pub case: String,
    /// The metric (escaped).
    pub metric: String,
    /// Which way is better.
    pub direction: Direction,
    /// The metric's unit (escaped), as the runs reported it.
    pub unit: String,
    /// The verdict.
    pub verdict: Verdict,
    /// One line saying why.
    pub reason: String,
    /// Side A.
    pub a: SideStats,
    /// Side B.
    pub b: SideStats,
    /// The effect; null when not compared.
    pub effect: Option<Effect>,
    /// The band's relative half-width; null when not compared.
    pub band: Option<f64>,
    /// The hosts the runs ran on (escaped), sorted.
    pub nodes: Vec<String>,
    /// Every measured run, in the order they started.
    pub runs: Vec<Run>,
}

/// One measured run of a key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// `a` or `b`.
    pub side: &'static str,
    /// The host (escaped).
    pub node: String,
    /// The value; null when the run failed or did not report it.
    pub value: Option<f64>,
}

/// A case whose runs on one side did not all succeed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailedSide {
    /// The case (escaped).
    pub case: String,
    /// `a` or `b`.
    pub side: &'static str,
    /// That side's commit.
    pub commit: String,
    /// Its runs (warm-ups included) that did not succeed.
    pub failed: u64,
    /// Its runs in all.
    pub total: u64,
    /// The first such run's class and reason (escaped).
    pub first: String,
    /// The first lines of that run's standard error (escaped).
    pub stderr: Vec<String>,
}

/// How many keys got each verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// `slower`.
    pub slower: u64,
    /// `faster`.
    pub faster: u64,
    /// `same`.
    pub same: u64,
    /// `inconclusive`.
    pub inconclusive: u64,
    /// `not_compared`.
    pub not_compared: u64,
}

/// What the comparison says as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every key was compared, and B is slower on at least one.
    Slower,
    /// Every key was compared, and B is slower on none.
    NotSlower,
    /// A run did not succeed, or a key could not be compared (or there was
    /// no key): the comparison was not made.
    NotCompared,
}

/// The comparison's report: `compare --json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// The comparison's id.
    pub id: String,
    /// The subject, as shown.
    pub subject: String,
    /// The lane whose settings it used, if any.
    pub lane: Option<String>,
    /// Side A: the baseline.
    pub a: SideCommit,
    /// Side B: the candidate.
    pub b: SideCommit,
    /// Measured rounds per side.
    pub runs_per_side: u32,
    /// The seed of the interleaved order.
    pub order_seed: u64,
    /// The level of every interval.
    pub level: f64,
    /// The benchmarks measured (`sha256:…`).
    pub benchmarks: Vec<String>,
    /// Every case and compared metric, cases in plan order.
    pub keys: Vec<KeyResult>,
    /// The cases whose runs did not all succeed, per side.
    pub failed: Vec<FailedSide>,
    /// Verdicts counted.
    pub tally: Tally,
    /// The outcome.
    pub outcome: Outcome,
}

fn fmt_pct(v: f64) -> String {
    format!("{:+.1}%", v * 100.0)
}

/// The verdict on one key from its runs.
pub fn decide_key(settings: &Settings, case: &str, metric: &str, runs: &KeyRuns) -> KeyResult {
    let a = runs.values(RunSide::A);
    let b = runs.values(RunSide::B);
    let count = |side| runs.runs.iter().filter(|r| r.side == side).count() as u64;
    let stats = |v: &[f64], side| SideStats {
        median: benchops::stats::median(v),
        samples: v.len() as u64,
        runs: count(side),
    };
    let nodes: BTreeSet<String> = runs
        .runs
        .iter()
        .map(|r| benchops::terminal::escape_bounded(&r.node, 100))
        .collect();
    let mut k = KeyResult {
        case: benchops::terminal::escape(case),
        metric: benchops::terminal::escape(metric),
        direction: runs.direction,
        unit: benchops::terminal::escape(&runs.unit),
        verdict: Verdict::NotCompared,
        reason: String::new(),
        a: stats(&a, RunSide::A),
        b: stats(&b, RunSide::B),
        effect: None,
        band: None,
        nodes: nodes.into_iter().collect(),
        runs: runs.runs.iter().map(run_of).collect(),
    };
    let id = match CaseId::new(case) {
        Ok(id) => id,
        Err(e) => {
            k.reason = format!("not compared: {e}");
            return k;
        }
    };
    let decide = |role| {
        benchops::same_session::decide(settings, &id, metric, runs.direction, role, &a, &b, STAGE)
    };
    let d = match decide(ConfirmationRole::SuspectRegression) {
        Ok(d) if d.effect.estimate.get() < 0.0 => decide(ConfirmationRole::SuspectImprovement),
        other => other,
    };
    let d = match d {
        Ok(d) => d,
        Err(e) => {
            k.reason = format!("not compared: {}", e.0);
            return k;
        }
    };
    let half = d.band.relative.get();
    let e = &d.effect;
    let text = format!(
        "B against A {} [{}, {}] at {:.0}% ({} and {} samples)",
        fmt_pct(e.estimate.get()),
        fmt_pct(e.low.get()),
        fmt_pct(e.high.get()),
        e.level.get() * 100.0,
        a.len(),
        b.len()
    );
    let band = format!("±{:.1}%", half * 100.0);
    (k.verdict, k.reason) = match d.verdict {
        KeyVerdict::ConfirmedRegression => (
            Verdict::Slower,
            format!("slower: {text} lies above the band {band}"),
        ),
        KeyVerdict::ConfirmedImprovement => (
            Verdict::Faster,
            format!("faster: {text} lies below the band {band}"),
        ),
        _ if position(e, half) == Position::Inside => (
            Verdict::Same,
            format!("same: {text} lies inside the band {band}"),
        ),
        _ => (
            Verdict::Inconclusive,
            format!(
                "inconclusive: {text} crosses an edge of the band {band}; more runs (--runs) may decide"
            ),
        ),
    };
    k.effect = Some(Effect {
        estimate: e.estimate.get(),
        low: e.low.get(),
        high: e.high.get(),
        level: e.level.get(),
        p_value: e.p_value.map(|p| p.get()),
    });
    k.band = Some(half);
    k
}

fn run_of(r: &SideRun) -> Run {
    Run {
        side: r.side.as_str(),
        node: benchops::terminal::escape_bounded(&r.node, 100),
        value: r.value.map(|v| v.get()),
    }
}

/// The cases of `stage` (observed as `status`) whose runs on a side did not
/// all succeed, per case and side, in plan order.
fn failed_sides(
    state: &StateDir,
    planned: &Planned,
    stage: &StageBenchmark,
    status: &Status,
) -> Vec<FailedSide> {
    let by_planned: BTreeMap<String, (&str, RunSide)> = stage
        .runs
        .iter()
        .filter_map(|r| {
            let (_, side) = sides::parse_token(&r.token)?;
            Some((
                benchops::terminal::escape(&r.planned),
                (r.case.as_str(), side),
            ))
        })
        .collect();
    let mut out: Vec<FailedSide> = Vec::new();
    for f in crate::failures::of_status(state, status) {
        let Some(&(case, side)) = by_planned.get(&f.case) else {
            continue;
        };
        let case = benchops::terminal::escape(case);
        match out
            .iter_mut()
            .find(|o| o.case == case && o.side == side.as_str())
        {
            Some(o) => {
                o.failed += f.failed;
                o.total += f.total;
            }
            None => out.push(FailedSide {
                case,
                side: side.as_str(),
                commit: match side {
                    RunSide::A => planned.a.commit.clone(),
                    _ => planned.b.commit.clone(),
                },
                failed: f.failed,
                total: f.total,
                first: f.first,
                stderr: f.stderr,
            }),
        }
    }
    // A side's runs that all succeeded still count in its total.
    for o in &mut out {
        o.total = stage
            .runs
            .iter()
            .filter(|r| {
                benchops::terminal::escape(&r.case) == o.case
                    && sides::parse_token(&r.token).is_some_and(|(_, s)| s.as_str() == o.side)
            })
            .count() as u64;
    }
    out
}

/// The report from the finished benchmarks (`statuses` in the order of
/// `planned.stages`).
pub fn report(
    state: &StateDir,
    planned: &Planned,
    statuses: &[Status],
) -> Result<Report, CompareError> {
    let settings = &planned.settings;
    let mut keys = Vec::new();
    let mut failed = Vec::new();
    let mut reported: BTreeSet<String> = BTreeSet::new();
    for (stage, status) in planned.stages.iter().zip(statuses) {
        let runs = sides::read_runs(state, stage, status);
        reported.extend(runs.keys().map(|(_, m)| m.clone()));
        for case in &stage.cases {
            for ((c, metric), r) in &runs {
                if c == case && settings.compares(metric) {
                    keys.push(decide_key(settings, case, metric, r));
                }
            }
        }
        failed.extend(failed_sides(state, planned, stage, status));
    }
    if let Some(lane) = &planned.lane
        && !reported.is_empty()
    {
        let names: BTreeSet<&str> = reported.iter().map(String::as_str).collect();
        let missing = settings.unreported_metrics(&names);
        if !missing.is_empty() {
            let quote = |l: &mut dyn Iterator<Item = &str>| {
                l.map(benchops::excerpt::quote)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(CompareError::UnreportedMetric {
                lane: lane.clone(),
                missing: quote(&mut missing.iter().copied()),
                reported: quote(&mut names.iter().copied()),
            });
        }
    }
    let mut tally = Tally::default();
    for k in &keys {
        *match k.verdict {
            Verdict::Slower => &mut tally.slower,
            Verdict::Faster => &mut tally.faster,
            Verdict::Same => &mut tally.same,
            Verdict::Inconclusive => &mut tally.inconclusive,
            Verdict::NotCompared => &mut tally.not_compared,
        } += 1;
    }
    let outcome = if !failed.is_empty() || tally.not_compared > 0 || keys.is_empty() {
        Outcome::NotCompared
    } else if tally.slower > 0 {
        Outcome::Slower
    } else {
        Outcome::NotSlower
    };
    Ok(Report {
        schema: SCHEMA,
        id: planned.id.clone(),
        subject: io_path(&planned.subject),
        lane: planned.lane.clone(),
        a: planned.a.clone(),
        b: planned.b.clone(),
        runs_per_side: planned.runs,
        order_seed: planned.seed,
        level: settings.confirm_level,
        benchmarks: planned
            .stages
            .iter()
            .map(|s| s.benchmark.to_string())
            .collect(),
        keys,
        failed,
        tally,
        outcome,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchops::num::Finite;

    fn runs(a: &[f64], b: &[f64]) -> KeyRuns {
        let run = |side, v: f64| SideRun {
            side,
            node: "n1".into(),
            value: Finite::new(v).ok(),
        };
        KeyRuns {
            direction: Direction::LowerIsBetter,
            unit: "s".into(),
            runs: a
                .iter()
                .map(|&v| run(RunSide::A, v))
                .chain(b.iter().map(|&v| run(RunSide::B, v)))
                .collect(),
        }
    }

    fn around(level: f64) -> Vec<f64> {
        (0..10)
            .map(|i| level * (1.0 + 0.002 * (i as f64 - 4.5)))
            .collect()
    }

    #[test]
    fn each_verdict_follows_the_interval_and_the_band() {
        let s = Settings::default();
        let v = |b: f64| {
            decide_key(
                &s,
                "w/size=large",
                "wall_s",
                &runs(&around(1.0), &around(b)),
            )
        };
        let slower = v(1.3);
        assert_eq!(slower.verdict, Verdict::Slower, "{}", slower.reason);
        assert!(slower.effect.as_ref().is_some_and(|e| e.low > 0.03));
        assert_eq!(v(0.7).verdict, Verdict::Faster);
        let same = v(1.001);
        assert_eq!(same.verdict, Verdict::Same, "{}", same.reason);
        assert_eq!(same.band, Some(0.03));
        assert_eq!((same.a.samples, same.b.runs), (10, 10));
        assert_eq!(same.nodes, ["n1"]);
        // An effect at the band's edge is neither.
        assert_eq!(v(1.03).verdict, Verdict::Inconclusive);
        // A side without samples is not compared, and says why.
        let none = decide_key(&s, "w/size=large", "wall_s", &runs(&around(1.0), &[]));
        assert_eq!(none.verdict, Verdict::NotCompared);
        assert!(none.reason.contains("side B"), "{}", none.reason);
    }
}
