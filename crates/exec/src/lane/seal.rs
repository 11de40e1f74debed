//! The verdicts of a lane run and its `benchmark-result/v2` record: the
//! first look at every compared case and metric, the cases to re-run, and
//! the record built from the measuring and confirming stages.

use std::collections::{BTreeMap, BTreeSet};

use benchops::analysis::Analysis;
use benchops::compare::{self, FirstLook, Reruns, Settings};
use benchops::record::{
    BaselineProposal, BaselineRef, BisectionRecord, Case, CaseCounts, Comparison, ConfirmationRole,
    DecidedBy, DriftReport, Environment, Executor, KeyComparison, KeyVerdict, Outcome,
    PublicationPlan, RESULT_SCHEMA_V2, RESULT_SCHEMA_V3, ResultRecord, RunCounts, Subject,
};
use benchops::{CaseId, Sha256Digest};

use crate::bench::Status;
use crate::result;
use crate::state::StateDir;

use super::{LaneError, LaneExecution};

/// One finished stage benchmark: its digest, last look and analysis.
#[derive(Debug, Clone)]
pub struct StageResult {
    /// The benchmark.
    pub digest: Sha256Digest,
    /// The cases it was planned for; other points of its plan are not read.
    pub cases: Vec<String>,
    /// Its terminal status.
    pub status: Status,
    /// Its analysis.
    pub analysis: Analysis,
}

/// Non-null samples per case and metric of a record.
fn samples_of(cases: &[Case]) -> BTreeMap<(CaseId, String), Vec<f64>> {
    let mut out = BTreeMap::new();
    for c in cases {
        for m in &c.metrics {
            let v: Vec<f64> = m.samples.iter().flatten().map(|f| f.get()).collect();
            out.insert((c.id.clone(), m.name.clone()), v);
        }
    }
    out
}

/// The cases of stage benchmarks that they were planned for, in stage
/// order.
pub fn measured_cases(measured: &[StageResult]) -> Vec<Case> {
    measured
        .iter()
        .flat_map(|s| {
            result::cases_of(&s.analysis)
                .into_iter()
                .filter(|c| s.cases.iter().any(|k| k == c.id.as_str()))
        })
        .collect()
}

/// The first look at every compared key of the passing cases. Keys
/// without baseline samples are not compared.
pub fn first_looks(
    settings: &Settings,
    cases: &[Case],
    baseline: Option<&ResultRecord>,
    drifting: &BTreeSet<(CaseId, String)>,
) -> Vec<FirstLook> {
    let Some(baseline) = baseline else {
        return Vec::new();
    };
    let base = samples_of(&baseline.cases);
    let mut looks = Vec::new();
    for c in cases.iter().filter(|c| c.outcome == Outcome::Pass) {
        for m in &c.metrics {
            if !settings.compares(&m.name) {
                continue;
            }
            let key = (c.id.clone(), m.name.clone());
            let Some(b) = base.get(&key).filter(|b| !b.is_empty()) else {
                continue;
            };
            let cand: Vec<f64> = m.samples.iter().flatten().map(|f| f.get()).collect();
            if cand.is_empty() {
                continue;
            }
            if let Ok(look) = compare::first_look(
                settings,
                &c.id,
                &m.name,
                m.direction,
                drifting.contains(&key),
                b,
                &cand,
            ) {
                looks.push(look);
            }
        }
    }
    looks
}

/// Refuses a lane whose comparison names a metric that none of the
/// measured cases reports (with a non-null sample): such a lane compares
/// nothing, sees no drift and would propose its baseline. Cases that
/// reported nothing at all (every run failed) are not evidence either way;
/// when no case reported anything there is nothing to check.
pub fn check_compared_metrics(
    settings: &Settings,
    lane: &str,
    cases: &[Case],
) -> Result<(), LaneError> {
    let reported: BTreeSet<&str> = cases
        .iter()
        .flat_map(|c| &c.metrics)
        .filter(|m| m.samples.iter().any(Option::is_some))
        .map(|m| m.name.as_str())
        .collect();
    if reported.is_empty() {
        return Ok(());
    }
    let missing = settings.unreported_metrics(&reported);
    if missing.is_empty() {
        return Ok(());
    }
    Err(LaneError::UnreportedMetric {
        lane: lane.to_owned(),
        missing: missing.into_iter().map(str::to_owned).collect(),
        reported: reported.into_iter().map(str::to_owned).collect(),
    })
}

/// The cases some key of which asks for a re-run.
pub fn cases_to_rerun(looks: &[FirstLook]) -> BTreeSet<CaseId> {
    looks
        .iter()
        .filter(|l| l.needs_confirmation())
        .map(|l| l.case.clone())
        .collect()
}

fn pct(v: f64) -> String {
    format!("{:+.1}%", v * 100.0)
}

/// The one-line summary of a confirmed regression.
fn summary(k: &KeyComparison, baseline_slot: &str) -> String {
    if let Some(ab) = &k.same_session {
        let e = &ab.effect;
        let n = |side| {
            ab.runs
                .iter()
                .filter(|r| r.side == side && r.value.is_some())
                .count()
        };
        return format!(
            "{} {} ({:.0}% interval {} to {}) measured in this run: the baseline commit {} ({} runs) against this commit ({} runs), interleaved; band ±{:.1}% from this run's samples",
            k.metric,
            pct(e.estimate.get()),
            e.level.get() * 100.0,
            pct(e.low.get()),
            pct(e.high.get()),
            &ab.baseline_commit[..ab.baseline_commit.len().min(12)],
            n(benchops::record::RunSide::A),
            n(benchops::record::RunSide::B),
            ab.band.relative.get() * 100.0
        );
    }
    let pooled = k.confirmation.as_ref().map(|c| &c.pooled);
    let mut s = format!(
        "{} {} ({:.0}% interval {} to {}) against the baseline of {baseline_slot}",
        k.metric,
        pct(k.initial.estimate.get()),
        k.initial.level.get() * 100.0,
        pct(k.initial.low.get()),
        pct(k.initial.high.get()),
    );
    if let (Some(p), Some(c)) = (pooled, &k.confirmation) {
        s.push_str(&format!(
            "; confirmed by {} re-runs: pooled {} ({:.0}% interval {} to {}), band ±{:.1}%",
            c.samples.len(),
            pct(p.estimate.get()),
            p.level.get() * 100.0,
            pct(p.low.get()),
            pct(p.high.get()),
            k.band.relative.get() * 100.0
        ));
    }
    s
}

/// What a bisection named, appended to its key's drift summary.
fn culprit_text(b: &BisectionRecord) -> String {
    let steps = b.steps.len();
    match &b.culprit {
        Some(c) => format!("; culprit commit {c}, named by bisection in {steps} step(s)"),
        None => format!(
            "; the culprit is one of the commits after {} up to {} ({})",
            b.good,
            b.bad,
            b.reason.as_deref().unwrap_or("the bisection stopped")
        ),
    }
}

/// Whether a key lets its record become the baseline: within the band or
/// improved; or inconclusive on a key that is not drifting in history. A
/// drifting key must be cleared first, and a suspect that was not
/// confirmed marks a run too noisy to compare later runs with.
fn proposable(k: &KeyComparison) -> bool {
    k.verdict.clears()
        || (k.verdict == KeyVerdict::Inconclusive && !k.drifting_in_history)
        || anchored(k)
}

/// A key drifting in history that this run measured against its own
/// anchor (the commit its drift was confirmed against) in the same
/// session: whatever its verdict, it never holds the lane's baseline, since
/// its side A does not move with it. No key can keep the others from a new
/// baseline.
fn anchored(k: &KeyComparison) -> bool {
    k.drifting_in_history && k.decided_by == Some(DecidedBy::SameSession)
}

/// The execution's identity in a record: the measuring benchmark's digest
/// when there is one, else the digest of the canonical list of them.
fn benchmark_digest(measured: &[StageResult]) -> Sha256Digest {
    match measured {
        [one] => one.digest,
        many => {
            let v = serde_json::json!({
                "schema": "benchops-suite/v1",
                "benchmarks": many.iter().map(|s| s.digest.to_string()).collect::<Vec<_>>(),
            });
            Sha256Digest::of(&benchops::jcs::canonical_bytes(&v))
        }
    }
}

/// The verdict on every compared key of a lane execution from its
/// finished measuring and confirming stages, in the execution's mode.
pub fn decide_keys(
    state: &StateDir,
    exec: &LaneExecution,
    settings: &Settings,
    baseline: Option<&ResultRecord>,
    measured: &[StageResult],
    confirmed: &[StageResult],
) -> Vec<KeyComparison> {
    let drifting: BTreeSet<(CaseId, String)> = exec
        .drifting
        .iter()
        .map(|k| (k.case.clone(), k.metric.clone()))
        .collect();
    let cases = measured_cases(measured);
    let looks = first_looks(settings, &cases, baseline, &drifting);
    let v3 = exec.confirm.is_some();
    if let Some(ab) = &exec.ab {
        let planned = exec.confirming.clone().unwrap_or_default();
        let runs = super::confirm::ab_runs(state, confirmed, &planned);
        return looks
            .into_iter()
            .map(|look| {
                if super::confirm::role_of(&look) == ConfirmationRole::None {
                    let mut k = compare::decide(settings, look, None);
                    k.decided_by = Some(DecidedBy::FirstLook);
                    return k;
                }
                let side_a =
                    super::confirm::side_a_of(exec, &look.case, &look.metric, &ab.baseline_commit)
                        .to_owned();
                let key = (
                    look.case.to_string(),
                    look.metric.clone(),
                    Some(side_a.clone()),
                );
                // Stages planned before side A was named per key read alike.
                let legacy = (key.0.clone(), key.1.clone(), None);
                let found = runs.get(&key).or_else(|| runs.get(&legacy));
                super::confirm::decide_ab(settings, look, found, ab, &side_a, &exec.commit)
            })
            .collect();
    }
    // The re-runs: per case, their samples and run counts.
    let mut rerun_cases: BTreeMap<CaseId, Case> = BTreeMap::new();
    for c in measured_cases(confirmed) {
        rerun_cases.insert(c.id.clone(), c);
    }
    looks
        .into_iter()
        .map(|look| {
            let reruns = look.needs_confirmation().then(|| {
                rerun_cases.get(&look.case).map(|c| Reruns {
                    samples: c
                        .metrics
                        .iter()
                        .find(|m| m.name == look.metric)
                        .map(|m| m.samples.iter().flatten().map(|f| f.get()).collect())
                        .unwrap_or_default(),
                    runs: c.runs,
                })
            });
            let mut k = compare::decide(settings, look, reruns.flatten());
            if v3 {
                k.decided_by = Some(if k.confirmation.is_some() {
                    DecidedBy::StoredBaseline
                } else {
                    DecidedBy::FirstLook
                });
            }
            k
        })
        .collect()
}

/// Builds the record of a lane execution from its finished stages and its
/// bisection, if one ran.
pub fn build(
    state: &StateDir,
    exec: &LaneExecution,
    settings: &Settings,
    baseline: Option<&ResultRecord>,
    measured: &[StageResult],
    confirmed: &[StageResult],
    bisection: Option<BisectionRecord>,
) -> ResultRecord {
    let mut cases = measured_cases(measured);
    let keys = decide_keys(state, exec, settings, baseline, measured, confirmed);
    let regressing: BTreeSet<&CaseId> = keys
        .iter()
        .filter(|k| k.verdict == KeyVerdict::ConfirmedRegression)
        .map(|k| &k.case)
        .collect();
    for c in &mut cases {
        if regressing.contains(&c.id) {
            c.outcome = Outcome::Drift;
        }
    }
    let baseline_slot = baseline.map(|b| b.slot.clone()).unwrap_or_default();
    let drift_reports: Vec<DriftReport> = keys
        .iter()
        .filter(|k| k.verdict == KeyVerdict::ConfirmedRegression)
        .map(|k| DriftReport {
            case: k.case.clone(),
            metric: k.metric.clone(),
            summary: summary(k, &baseline_slot)
                + &bisection
                    .as_ref()
                    .filter(|b| b.case == k.case && b.metric == k.metric)
                    .map(culprit_text)
                    .unwrap_or_default(),
        })
        .collect();
    let mut by_case: BTreeMap<&CaseId, Vec<KeyVerdict>> = BTreeMap::new();
    for k in &keys {
        by_case.entry(&k.case).or_default().push(k.verdict);
    }
    let cleared: Vec<CaseId> = cases
        .iter()
        .filter(|c| c.outcome == Outcome::Pass)
        .filter(|c| {
            by_case
                .get(&c.id)
                .is_some_and(|v| !v.is_empty() && v.iter().all(|v| v.clears()))
        })
        .map(|c| c.id.clone())
        .collect();
    // Run counts: the measuring stages (the record's cases). The re-runs
    // are counted in each key's confirmation.
    let mut runs = RunCounts::default();
    for c in &cases {
        runs.add(&c.runs);
    }
    let case_counts = CaseCounts::of(&cases);
    // A case in drift only by anchored keys does not hold the baseline.
    let new_drift = keys
        .iter()
        .any(|k| k.verdict == KeyVerdict::ConfirmedRegression && !anchored(k));
    let all_clean =
        runs.succeeded > 0 && runs.succeeded == runs.total && case_counts.error == 0 && !new_drift;
    let proposal = match baseline {
        None if all_clean => Some("first clean run of the lane: no baseline yet".to_owned()),
        Some(_) if all_clean && keys.iter().all(proposable) => Some(
            "clean run: every child run succeeded, no new drift is confirmed or unresolved (a key drifting in history is measured against its own anchor), and no suspect went unconfirmed"
                .to_owned(),
        ),
        _ => None,
    };
    // Times and executor over every stage.
    let mut start: Option<String> = None;
    let mut end: Option<String> = None;
    let mut job_ids = Vec::new();
    let mut executor = None;
    for s in measured.iter().chain(confirmed) {
        let (a, b) = result::time_span(state, &s.digest, &s.status);
        if start
            .as_ref()
            .is_none_or(|x| benchops::time::order_key(&a) < benchops::time::order_key(x))
        {
            start = Some(a);
        }
        if end
            .as_ref()
            .is_none_or(|x| benchops::time::order_key(&b) > benchops::time::order_key(x))
        {
            end = Some(b);
        }
        let latest = state.submissions(&s.digest).ok().and_then(|mut v| v.pop());
        match crate::backend::executor(latest.as_ref()) {
            Executor::Slurm {
                cluster,
                job_ids: ids,
            } => {
                job_ids.extend(ids);
                executor = Some(Executor::Slurm {
                    cluster,
                    job_ids: Vec::new(),
                });
            }
            local => {
                executor.get_or_insert(local);
            }
        }
    }
    let executor = match executor {
        Some(Executor::Slurm { cluster, .. }) => Executor::Slurm { cluster, job_ids },
        Some(e) => e,
        None => crate::backend::executor(None),
    };
    let started_at = start.unwrap_or_else(|| exec.created_at.clone());
    let finished_at = end.unwrap_or_else(|| started_at.clone());
    ResultRecord {
        schema: if exec.confirm.is_some() {
            RESULT_SCHEMA_V3
        } else {
            RESULT_SCHEMA_V2
        }
        .into(),
        lane: exec.lane.clone(),
        slot: exec.slot.clone(),
        subject: Subject {
            repository: exec.repository.clone(),
            commit: exec.commit.clone(),
        },
        manifest_digest: exec.manifest_digest,
        benchmark_digest: benchmark_digest(measured),
        environment: Environment::from_facts(crate::state::machine_facts()),
        executor,
        started_at,
        finished_at,
        runs,
        cases,
        case_counts,
        baseline: exec.baseline.as_ref().map(|b| BaselineRef {
            record: b.record,
            lane: b.lane.clone(),
            slot: b.slot.clone(),
        }),
        publication: PublicationPlan {
            drift_reports,
            cleared,
            baseline_proposal: proposal.map(|reason| BaselineProposal {
                lane: exec.lane.clone(),
                reason,
            }),
        },
        comparison: Some(Comparison {
            policy: settings.policy(),
            no_baseline_reason: exec.no_baseline_reason.clone(),
            environment_differs: baseline.is_some_and(|b| {
                b.environment.fingerprint
                    != Environment::from_facts(crate::state::machine_facts()).fingerprint
            }),
            keys,
            confirm: exec.confirm.clone(),
            bisection,
        }),
        unscheduled: exec.unscheduled.clone().filter(|_| exec.confirm.is_some()),
        skipped: exec.skipped.clone().filter(|_| exec.confirm.is_some()),
    }
}
