//! Culprit bisection in a lane run: after a regression is confirmed in the
//! same session, the first-parent range from the baseline commit to the
//! candidate is bisected before the record is sealed, so that the record,
//! and the issue opened from it, name the culprit commit.
//!
//! The planner is [`benchops::bisect`]; this module persists it. The
//! lane execution holds the range, the steps measured and the step being
//! measured (`lane.json`), and every step is a stage of its own: the good
//! bound, the midpoint and the bad bound of the key it follows, each
//! exported fresh, measured interleaved in randomised blocks. A step is
//! planned only when the previous one is recorded, so a resumed execution
//! replays the recorded steps and goes on where it stopped, and no stage is
//! submitted twice. A midpoint that cannot be exported is a step of its own
//! (`build_failed`), never a measurement. The budget is the lane's: a
//! number of steps, and wall time from the first step.

use benchops::CaseId;
use benchops::bisect::{Bisection, Outcome, Step, StepFinding};
use benchops::compare::Settings;
use benchops::manifest::Lane;
use benchops::record::{
    BisectionRecord, BisectionStep, ConfirmationRole, KeyComparison, KeyVerdict, RunSide,
    StepFindingKind,
};

use super::seal::StageResult;
use super::sides::{Interleave, SideSubject};
use super::types::{BisectState, CurrentStep, LaneExecution};
use super::{LaneError, select};
use crate::state::{StateDir, now_rfc3339};
use crate::subject::{self, Subjects};

/// The key a bisection follows: the new confirmed same-session regression
/// with the largest effect. A key already drifting in history was bisected
/// when its drift was confirmed, and is not bisected again.
fn lead(keys: &[KeyComparison]) -> Option<&KeyComparison> {
    keys.iter()
        .filter(|k| k.verdict == KeyVerdict::ConfirmedRegression && !k.drifting_in_history)
        .filter_map(|k| {
            k.same_session
                .as_ref()
                .map(|s| (k, s.effect.estimate.get()))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k)
}

/// The bisection of this run's confirmed regression, when one is due: the
/// lane bisects, a same-session key confirmed a regression, and the range
/// can be read. `Err` carries why none runs, for the notes.
pub(super) fn begin(
    exec: &LaneExecution,
    lane: &Lane,
    keys: &[KeyComparison],
) -> Result<BisectState, String> {
    if !lane.bisects() {
        return Err("the lane does not bisect (`[lanes.bisect] enabled = false`)".into());
    }
    let Some(k) = lead(keys) else {
        return Err("no new regression was confirmed in the same session".into());
    };
    let ab = exec
        .ab
        .as_ref()
        .ok_or_else(|| "no same-session sides were measured".to_owned())?;
    let good = k
        .same_session
        .as_ref()
        .map_or(ab.baseline_commit.as_str(), |s| s.baseline_commit.as_str());
    let commits = subject::first_parent_range(&exec.subject_dir, good, &exec.commit)
        .map_err(|e| format!("the range cannot be bisected: {e}"))?;
    Ok(BisectState {
        case: k.case.to_string(),
        metric: k.metric.clone(),
        budget_steps: lane.bisect_steps(commits.len()) as u64,
        budget_seconds: lane.bisect_seconds(),
        commits,
        started_at: now_rfc3339(),
        steps: Vec::new(),
        current: None,
        stages: Vec::new(),
        stopped: None,
        done: false,
    })
}

fn core_step(s: &BisectionStep) -> Step {
    Step {
        index: s.index as usize,
        finding: match s.finding {
            StepFindingKind::Good => StepFinding::Good,
            StepFindingKind::Bad => StepFinding::Bad,
            StepFindingKind::Undecided => StepFinding::Undecided(s.reason.clone()),
            StepFindingKind::BuildFailed => StepFinding::BuildFailed(s.reason.clone()),
        },
    }
}

fn planner(b: &BisectState) -> Bisection {
    let steps: Vec<Step> = b.steps.iter().map(core_step).collect();
    Bisection::with_steps(b.commits.len(), b.budget_steps as usize, &steps)
}

/// The bounds a planner stands at.
fn bounds(p: &Bisection) -> (usize, usize) {
    match p.outcome() {
        Outcome::Culprit(bad) => (bad - 1, bad),
        Outcome::Range { good, bad, .. } => (good, bad),
    }
}

fn elapsed_s(since: &str) -> u64 {
    let now = jiff::Timestamp::now();
    since
        .parse::<jiff::Timestamp>()
        .ok()
        .map_or(0, |t| now.duration_since(t).as_secs().max(0) as u64)
}

/// Plans the next step of `b` (its stage persisted in `b.current`), or
/// finishes it when the planner is done or the wall-time budget is spent.
/// A midpoint that cannot be exported is recorded as `build_failed` and
/// the next one is planned.
pub(super) fn plan_next(
    state: &StateDir,
    exec: &LaneExecution,
    settings: &Settings,
    b: &mut BisectState,
) -> Result<(), LaneError> {
    loop {
        let p = planner(b);
        let Some(mid) = p.next() else {
            b.done = true;
            return Ok(());
        };
        let spent = elapsed_s(&b.started_at);
        if !b.steps.is_empty() && spent >= b.budget_seconds {
            b.stopped = Some(format!(
                "the wall-time budget of {} s ran out after {} step(s)",
                b.budget_seconds,
                b.steps.len()
            ));
            b.done = true;
            return Ok(());
        }
        let (good, bad) = bounds(&p);
        let subjects = Subjects::new(state);
        let tree = |i: usize| subjects.materialise(&exec.subject_dir, &b.commits[i]);
        let build = super::stages::build_of(state, exec)?;
        let built = |dir: &std::path::Path, commit: &str| match &build {
            None => Ok(None),
            Some(b) => subjects
                .build(dir, commit, b)
                .map(|o| (!o.ok).then_some(o.summary)),
        };
        let (tg, tm, tb) = match (tree(good), tree(mid), tree(bad)) {
            (Ok(g), Ok(m), Ok(x)) => {
                let failed =
                    built(&m, &b.commits[mid]).map_err(|e| LaneError::Subject(e.to_string()))?;
                if let Some(why) = failed {
                    b.steps.push(BisectionStep {
                        index: mid as u64,
                        commit: b.commits[mid].clone(),
                        finding: StepFindingKind::BuildFailed,
                        reason: format!("the midpoint did not build: {why}"),
                        runs: Vec::new(),
                    });
                    continue;
                }
                for (dir, i) in [(&g, good), (&x, bad)] {
                    if let Some(why) =
                        built(dir, &b.commits[i]).map_err(|e| LaneError::Subject(e.to_string()))?
                    {
                        return Err(LaneError::Subject(format!(
                            "a bound of the bisection, {}, did not build: {why}",
                            b.commits[i]
                        )));
                    }
                }
                (g, m, x)
            }
            (_, Err(e), _) => {
                b.steps.push(BisectionStep {
                    index: mid as u64,
                    commit: b.commits[mid].clone(),
                    finding: StepFindingKind::BuildFailed,
                    reason: format!("the midpoint could not be exported: {e}"),
                    runs: Vec::new(),
                });
                continue;
            }
            (Err(e), _, _) | (_, _, Err(e)) => {
                return Err(LaneError::Subject(format!(
                    "a bound of the bisection could not be exported: {e}"
                )));
            }
        };
        let n = b.steps.len() + 1;
        let interleave = Interleave::new(
            vec![
                SideSubject {
                    side: RunSide::Good,
                    dir: tg.display().to_string(),
                    commit: b.commits[good].clone(),
                },
                SideSubject {
                    side: RunSide::Mid,
                    dir: tm.display().to_string(),
                    commit: b.commits[mid].clone(),
                },
                SideSubject {
                    side: RunSide::Bad,
                    dir: tb.display().to_string(),
                    commit: b.commits[bad].clone(),
                },
            ],
            settings.confirm_runs,
            0,
            super::confirm::seed_of(&exec.id, &format!("bisect-{n}")),
        );
        let stage_name = format!("bisect-{n}");
        let case = CaseId::new(b.case.clone()).map_err(|e| LaneError::Subject(e.to_string()))?;
        let mut stage = Vec::new();
        for s in &exec.measuring {
            if !s.cases.contains(&b.case) {
                continue;
            }
            let (_, plan) = state.load_plan(&s.benchmark)?;
            let spec = select::StageSpec {
                lane_run: &exec.id,
                stage: &stage_name,
                repetitions: None,
                subject: None,
                interleave: Some(&interleave),
            };
            if let Some(sel) = select::select(&plan, |c| *c == case, spec, &s.intent)? {
                stage.push(super::stages::persist(state, &s.intent, &sel)?);
            }
        }
        let _ = subjects.prune(
            subject::DEFAULT_KEEP,
            &[&b.commits[good], &b.commits[mid], &b.commits[bad]],
        );
        b.current = Some(CurrentStep {
            index: mid as u64,
            good: good as u64,
            bad: bad as u64,
            stage,
        });
        return Ok(());
    }
}

/// Records the finished step `b.current` from its stage's runs.
pub(super) fn finish_step(
    state: &StateDir,
    settings: &Settings,
    b: &mut BisectState,
    done: &[StageResult],
) {
    let Some(cur) = b.current.take() else {
        return;
    };
    let runs = super::confirm::ab_runs(state, done, &cur.stage);
    b.stages.extend(cur.stage.iter().cloned());
    let key = runs.get(&(b.case.clone(), b.metric.clone(), None));
    let n = b.steps.len() + 1;
    let step = match (key, CaseId::new(b.case.clone())) {
        (Some(k), Ok(case)) => {
            let verdict = |a: RunSide, x: RunSide, what: &str| {
                benchops::same_session::decide(
                    settings,
                    &case,
                    &b.metric,
                    k.direction,
                    ConfirmationRole::SuspectRegression,
                    &k.values(a),
                    &k.values(x),
                    &format!("bisect-{n}/{what}"),
                )
            };
            let mid_good = verdict(RunSide::Good, RunSide::Mid, "mid-good");
            let bad_mid = verdict(RunSide::Mid, RunSide::Bad, "bad-mid");
            let v = |d: &Result<benchops::same_session::AbDecision, _>| {
                d.as_ref().map_or(KeyVerdict::Inconclusive, |d| d.verdict)
            };
            let finding = StepFinding::from_verdicts(v(&mid_good), v(&bad_mid));
            let why = |d: &Result<
                benchops::same_session::AbDecision,
                benchops::compare::NotComparable,
            >| match d {
                Ok(d) => d.reason.clone(),
                Err(e) => format!("not comparable: {}", e.0),
            };
            let (kind, reason) = match finding {
                StepFinding::Good => (
                    StepFindingKind::Good,
                    format!(
                        "the midpoint is not worse than the good bound, and the bad bound is worse than it ({})",
                        why(&bad_mid)
                    ),
                ),
                StepFinding::Bad => (
                    StepFindingKind::Bad,
                    format!(
                        "the midpoint is worse than the good bound ({}), and the bad bound is not worse than it",
                        why(&mid_good)
                    ),
                ),
                StepFinding::Undecided(why) => (StepFindingKind::Undecided, why),
                StepFinding::BuildFailed(why) => (StepFindingKind::BuildFailed, why),
            };
            BisectionStep {
                index: cur.index,
                commit: b.commits[cur.index as usize].clone(),
                finding: kind,
                reason,
                runs: k.runs.clone(),
            }
        }
        _ => BisectionStep {
            index: cur.index,
            commit: b.commits[cur.index as usize].clone(),
            finding: StepFindingKind::Undecided,
            reason: format!(
                "no run of the step reported {} for {}",
                benchops::excerpt::quote(&b.metric),
                benchops::excerpt::quote(&b.case)
            ),
            runs: Vec::new(),
        },
    };
    b.steps.push(step);
}

/// The record of a finished bisection.
pub fn record(b: &BisectState) -> Result<BisectionRecord, LaneError> {
    let p = planner(b);
    let (culprit, good, bad, reason) = match p.outcome() {
        Outcome::Culprit(i) => (Some(b.commits[i].clone()), i - 1, i, None),
        Outcome::Range { good, bad, reason } => {
            (None, good, bad, Some(b.stopped.clone().unwrap_or(reason)))
        }
    };
    Ok(BisectionRecord {
        case: CaseId::new(b.case.clone()).map_err(|e| LaneError::Subject(e.to_string()))?,
        metric: b.metric.clone(),
        commits: b.commits.clone(),
        budget_steps: b.budget_steps,
        budget_seconds: b.budget_seconds,
        steps: b.steps.clone(),
        culprit,
        good: b.commits[good].clone(),
        bad: b.commits[bad].clone(),
        reason,
    })
}

/// A digest-free label of the step's stage, for notes.
pub fn describe(b: &BisectState) -> String {
    let p = planner(b);
    let (good, bad) = bounds(&p);
    let short = |c: &str| c.chars().take(12).collect::<String>();
    format!(
        "bisecting {} commit(s) between {} and {}: step {} of at most {}",
        bad - good,
        short(&b.commits[good]),
        short(&b.commits[bad]),
        b.steps.len() + usize::from(b.current.is_some()),
        b.budget_steps
    )
}
