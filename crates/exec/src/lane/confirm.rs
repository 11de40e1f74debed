//! Same-session confirmation in a lane run: which mode decides, the
//! interleaved A/B stage, and the verdict of each re-measured key.
//!
//! The stored baseline only chooses what to re-measure (the first look).
//! Each suspect, and each key drifting in history, is then measured again
//! on the baseline commit (side A) and on the candidate (side B), both
//! exported fresh from the subject's repository, interleaved in one stage;
//! [`benchops::same_session::decide`] gives the verdict. A key drifting in
//! history is always asked to clear: the clear also reproduces the drift
//! when B is still above the band, and it measures twice the runs, so that
//! an issue closes within a run or two of its fix.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use benchops::compare::{FirstLook, Settings};
use benchops::manifest::Lane;
use benchops::record::{
    ConfirmMode, ConfirmModeKind, ConfirmationRole, DecidedBy, KeyComparison, KeyVerdict, RunSide,
    SameSession,
};
use benchops::{CaseId, Sha256Digest};

use super::sides::{Interleave, KeyRuns, SideSubject};
use super::types::{AbSides, LaneExecution, StageBenchmark};
use super::{LaneError, select};
use crate::state::StateDir;
use crate::subject::{self, Subjects};

/// The mode a lane run confirms in: what the lane asks for, unless the
/// subject cannot be measured at both commits, in which case the stored
/// baseline decides and the record says why.
pub fn choose_mode(
    lane: &Lane,
    subject_dir: &Path,
    baseline_commit: Option<&str>,
    candidate: &str,
) -> ConfirmMode {
    let requested = lane.confirm_mode();
    let fallback = |reason: String| ConfirmMode {
        mode: ConfirmModeKind::StoredBaseline,
        requested,
        fallback_reason: Some(reason),
    };
    if requested == ConfirmModeKind::StoredBaseline {
        return ConfirmMode {
            mode: requested,
            requested,
            fallback_reason: None,
        };
    }
    if !subject::is_git_checkout(subject_dir) {
        return fallback(format!(
            "the subject {} is not a git checkout, so its baseline commit cannot be measured beside the candidate",
            benchops::terminal::shown_path(subject_dir)
        ));
    }
    if !subject::has_commit(subject_dir, candidate) {
        return fallback(format!(
            "the subject's repository does not hold the candidate commit {candidate}"
        ));
    }
    if let Some(base) = baseline_commit
        && !subject::has_commit(subject_dir, base)
    {
        return fallback(format!(
            "the subject's repository does not hold the baseline commit {base} (fetch it to measure it beside the candidate)"
        ));
    }
    ConfirmMode {
        mode: requested,
        requested,
        fallback_reason: None,
    }
}

/// A seed for `what` of execution `id`, below 2^53 so that the record
/// holds it exactly (canonical JSON numbers are doubles).
pub fn seed_of(id: &str, what: &str) -> u64 {
    let d = Sha256Digest::of(format!("{id}/{what}").as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&d.as_bytes()[..8]);
    u64::from_le_bytes(b) & ((1 << 53) - 1)
}

/// The role a key is re-measured in: a key drifting in history is asked
/// to clear; any other key keeps its first look's role.
pub fn role_of(look: &FirstLook) -> ConfirmationRole {
    if look.drifting_in_history {
        ConfirmationRole::ConfirmClear
    } else {
        look.role
    }
}

/// Plans (and persists) the same-session stage: for each measuring
/// benchmark, the cases with a key to re-measure, on both sides, with the
/// trees materialised. Returns the stage and the sides.
pub(super) fn plan_ab(
    state: &StateDir,
    exec: &LaneExecution,
    settings: &Settings,
    looks: &[FirstLook],
    baseline_commit: &str,
    build: Option<&benchops::manifest::SubjectBuild>,
) -> Result<(Vec<StageBenchmark>, Option<AbSides>), LaneError> {
    let rerun: BTreeSet<CaseId> = looks
        .iter()
        .filter(|l| role_of(l) != ConfirmationRole::None)
        .map(|l| l.case.clone())
        .collect();
    if rerun.is_empty() {
        return Ok((Vec::new(), None));
    }
    let clears = looks
        .iter()
        .any(|l| rerun.contains(&l.case) && role_of(l) == ConfirmationRole::ConfirmClear);
    let subjects = Subjects::new(state);
    let tree = |commit: &str| {
        subjects
            .materialise(&exec.subject_dir, commit)
            .map_err(|e| LaneError::Subject(e.to_string()))
    };
    let a_dir = tree(baseline_commit)?;
    let b_dir = tree(&exec.commit)?;
    if let Some(build) = build {
        for (commit, dir, what) in [
            (baseline_commit, &a_dir, "baseline commit"),
            (exec.commit.as_str(), &b_dir, "candidate"),
        ] {
            let built = subjects
                .build(dir, commit, build)
                .map_err(|e| LaneError::Subject(e.to_string()))?;
            if !built.ok {
                return Err(LaneError::BuildFailed(format!(
                    "the {what} {commit} did not build: {}",
                    built.summary
                )));
            }
        }
    }
    let _ = subjects.prune(
        subject::DEFAULT_KEEP,
        &[baseline_commit, exec.commit.as_str()],
    );
    let order_seed = seed_of(&exec.id, "confirm-ab");
    let rounds = if clears {
        2 * settings.confirm_runs
    } else {
        settings.confirm_runs
    };
    let interleave = |warmup| {
        Interleave::new(
            vec![
                SideSubject {
                    side: RunSide::A,
                    dir: a_dir.display().to_string(),
                    commit: baseline_commit.to_owned(),
                },
                SideSubject {
                    side: RunSide::B,
                    dir: b_dir.display().to_string(),
                    commit: exec.commit.clone(),
                },
            ],
            rounds,
            warmup,
            order_seed,
        )
    };
    let mut out = Vec::new();
    for s in &exec.measuring {
        let (_, plan) = state.load_plan(&s.benchmark)?;
        let i = interleave(plan.intent().intent.warmup.min(1));
        let spec = select::StageSpec {
            lane_run: &exec.id,
            stage: "confirm-ab",
            repetitions: None,
            subject: None,
            interleave: Some(&i),
        };
        if let Some(sel) = select::select(&plan, |c| rerun.contains(c), spec, &s.intent)? {
            out.push(super::stages::persist(state, &s.intent, &sel)?);
        }
    }
    Ok((
        out,
        Some(AbSides {
            baseline_commit: baseline_commit.to_owned(),
            a_dir,
            b_dir,
            order_seed,
        }),
    ))
}

/// The verdict on a key from its same-session runs: the first look's
/// comparison with the A/B verdict, evidence and reason in place of the
/// stored baseline's.
pub fn decide_ab(
    settings: &Settings,
    look: FirstLook,
    runs: Option<&KeyRuns>,
    sides: &AbSides,
    candidate: &str,
) -> KeyComparison {
    let role = role_of(&look);
    let (case, metric, direction) = (look.case.clone(), look.metric.clone(), look.direction);
    let mut k = benchops::compare::decide(settings, look, None);
    k.role = role;
    let Some(runs) = runs else {
        k.verdict = KeyVerdict::Inconclusive;
        k.reason = "inconclusive: the same-session runs of this key are missing".into();
        k.decided_by = Some(DecidedBy::FirstLook);
        return k;
    };
    let a = runs.values(RunSide::A);
    let b = runs.values(RunSide::B);
    match benchops::same_session::decide(
        settings,
        &case,
        &metric,
        direction,
        role,
        &a,
        &b,
        "same-session",
    ) {
        Ok(d) => {
            k.verdict = d.verdict;
            k.reason = d.reason;
            k.decided_by = Some(DecidedBy::SameSession);
            k.same_session = Some(SameSession {
                baseline_commit: sides.baseline_commit.clone(),
                candidate_commit: candidate.to_owned(),
                order_seed: sides.order_seed,
                runs: runs.runs.clone(),
                band: d.band,
                effect: d.effect,
            });
        }
        Err(e) => {
            k.verdict = KeyVerdict::Inconclusive;
            k.reason = format!(
                "inconclusive: side A against side B could not be compared: {}",
                e.0
            );
            k.decided_by = Some(DecidedBy::FirstLook);
        }
    }
    k
}

/// Every key's runs of the finished same-session stage.
pub fn ab_runs(
    state: &StateDir,
    stage: &[super::seal::StageResult],
    planned: &[StageBenchmark],
) -> BTreeMap<(String, String), KeyRuns> {
    let mut out = BTreeMap::new();
    for (s, b) in stage.iter().zip(planned) {
        out.extend(super::sides::read_runs(state, b, &s.status));
    }
    out
}
