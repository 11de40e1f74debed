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
    anchors: &[&str],
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
    if let Some(missing) = anchors
        .iter()
        .find(|a| !subject::has_commit(subject_dir, a))
    {
        return fallback(format!(
            "the subject's repository does not hold {missing}, the commit a drifting key's drift was confirmed against (fetch it to measure it beside the candidate)"
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

/// Side A of a key: the commit its drift was confirmed against when the key
/// is drifting in history (its anchor, so that a baseline that moved on
/// past the regression never clears it), else the lane's baseline commit.
pub fn side_a_of<'a>(
    exec: &'a LaneExecution,
    case: &CaseId,
    metric: &str,
    lane_base: &'a str,
) -> &'a str {
    exec.anchors
        .iter()
        .find(|a| a.case == *case && a.metric == metric)
        .map_or(lane_base, |a| a.commit.as_str())
}

/// Plans (and persists) the same-session stage: for each side A commit
/// (the lane's baseline commit, and each drifting key's anchor) and each
/// measuring benchmark, the cases with a key to re-measure against it, on
/// both sides, with the trees materialised and built. Returns the stage
/// and the sides.
pub(super) fn plan_ab(
    state: &StateDir,
    exec: &LaneExecution,
    settings: &Settings,
    looks: &[FirstLook],
    baseline_commit: &str,
    build: Option<&benchops::manifest::SubjectBuild>,
) -> Result<(Vec<StageBenchmark>, Option<AbSides>), LaneError> {
    // Per side A commit: the cases to re-measure, and whether one clears.
    let mut groups: BTreeMap<&str, (BTreeSet<CaseId>, bool)> = BTreeMap::new();
    for l in looks
        .iter()
        .filter(|l| role_of(l) != ConfirmationRole::None)
    {
        let a = side_a_of(exec, &l.case, &l.metric, baseline_commit);
        let g = groups.entry(a).or_default();
        g.0.insert(l.case.clone());
        g.1 |= role_of(l) == ConfirmationRole::ConfirmClear;
    }
    if groups.is_empty() {
        return Ok((Vec::new(), None));
    }
    let subjects = Subjects::new(state);
    let ready = |commit: &str, what: &str| -> Result<std::path::PathBuf, LaneError> {
        let dir = subjects
            .materialise(&exec.subject_dir, commit)
            .map_err(|e| LaneError::Subject(e.to_string()))?;
        if let Some(build) = build {
            let built = subjects
                .build(&dir, commit, build)
                .map_err(|e| LaneError::Subject(e.to_string()))?;
            if !built.ok {
                return Err(LaneError::BuildFailed(format!(
                    "the {what} {commit} did not build: {}",
                    built.summary
                )));
            }
        }
        Ok(dir)
    };
    let b_dir = ready(&exec.commit, "candidate")?;
    let a_dir = ready(baseline_commit, "baseline commit")?;
    let mut pinned: Vec<&str> = vec![baseline_commit, exec.commit.as_str()];
    pinned.extend(groups.keys().copied());
    let order_seed = seed_of(&exec.id, "confirm-ab");
    let mut out = Vec::new();
    for (a_commit, (cases, clears)) in &groups {
        let dir = if *a_commit == baseline_commit {
            a_dir.clone()
        } else {
            ready(a_commit, "drift's baseline commit")?
        };
        let rounds = if *clears {
            2 * settings.confirm_runs
        } else {
            settings.confirm_runs
        };
        for s in &exec.measuring {
            let (_, plan) = state.load_plan(&s.benchmark)?;
            let i = Interleave::new(
                vec![
                    SideSubject {
                        side: RunSide::A,
                        dir: dir.display().to_string(),
                        commit: (*a_commit).to_owned(),
                    },
                    SideSubject {
                        side: RunSide::B,
                        dir: b_dir.display().to_string(),
                        commit: exec.commit.clone(),
                    },
                ],
                rounds,
                plan.intent().intent.warmup.min(1),
                order_seed,
            );
            let spec = select::StageSpec {
                lane_run: &exec.id,
                stage: "confirm-ab",
                repetitions: None,
                subject: None,
                interleave: Some(&i),
            };
            if let Some(sel) = select::select(&plan, |c| cases.contains(c), spec, &s.intent)? {
                let mut b = super::stages::persist(state, &s.intent, &sel)?;
                b.baseline_commit = Some((*a_commit).to_owned());
                out.push(b);
            }
        }
    }
    let _ = subjects.prune(subject::DEFAULT_KEEP, &pinned);
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
    side_a: &str,
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
                baseline_commit: side_a.to_owned(),
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

/// Every key's runs of the finished same-session stage, by case, metric
/// and side A commit.
pub fn ab_runs(
    state: &StateDir,
    stage: &[super::seal::StageResult],
    planned: &[StageBenchmark],
) -> BTreeMap<(String, String, Option<String>), KeyRuns> {
    let mut out = BTreeMap::new();
    for (s, b) in stage.iter().zip(planned) {
        for ((case, metric), runs) in super::sides::read_runs(state, b, &s.status) {
            out.insert((case, metric, b.baseline_commit.clone()), runs);
        }
    }
    out
}
