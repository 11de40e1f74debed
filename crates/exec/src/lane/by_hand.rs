//! `benchops-exec lane bisect`: a culprit bisection by hand, over any
//! first-parent range of the subject, for one case and metric of a lane.
//!
//! It is a lane execution of its own kind ([`ExecutionKind::Bisect`]):
//! it starts in the `bisecting` phase, runs the same steps as a lane run's
//! bisection ([`super::bisect`]) with the lane's settings, build step and
//! budget, resumes the same way after a kill (running it again with the
//! same inputs resumes it), is driven by `lane advance` or `--wait`, and
//! on Slurm by follow-up jobs. It ends in the `finished` phase with its
//! answer in `lane.json`, and seals no record: it measured no lane run.

use std::path::PathBuf;

use benchops::CaseId;
use benchops::Sha256Digest;
use benchops::record::{ConfirmMode, ConfirmModeKind};

use super::select::{self, StageSpec};
use super::types::{BisectState, ExecutionKind, LANE_SCHEMA, LaneBackend, LaneExecution, Phase};
use super::{
    LaneError, Progress, advance_inner, find_lane, lane_dir, load_manifest, load_suite, lock, save,
    stages,
};
use crate::backend::SchedulerOptions;
use crate::state::{StateDir, StateError, now_rfc3339};
use crate::subject;

/// What `lane bisect` is asked to do.
#[derive(Debug, Clone)]
pub struct LaneBisectOptions {
    /// The schedule manifest.
    pub manifest: PathBuf,
    /// The lane whose settings, build and budget apply.
    pub lane: String,
    /// The subject checkout.
    pub subject_dir: PathBuf,
    /// The last commit known good (any revision git resolves).
    pub good: String,
    /// The first commit known bad.
    pub bad: String,
    /// The case.
    pub case: String,
    /// The metric; the lane's only compared metric, or `wall_s`, when
    /// `None`.
    pub metric: Option<String>,
    /// Most steps; the lane's budget when `None`.
    pub max_steps: Option<u32>,
    /// The backend.
    pub backend: LaneBackend,
    /// The `benchops-exec` binary children and follow-ups run.
    pub exe: Option<PathBuf>,
}

/// The full commit id `rev` names in `dir`, for the flag `flag`.
fn resolve(dir: &std::path::Path, rev: &str, flag: &str) -> Result<String, LaneError> {
    subject::resolve_rev(dir, rev).map_err(|detail| {
        LaneError::Subject(format!(
            "{flag} {}: no such commit in {}{detail} (`git -C {} log --first-parent --oneline` lists the candidates)",
            benchops::excerpt::quote(rev),
            benchops::terminal::shown_path(dir),
            benchops::terminal::shown_path(dir),
        ))
    })
}

/// Starts (or resumes) a bisection by hand and advances it as far as it
/// goes now.
pub fn start_bisect(
    state: &StateDir,
    opts: &LaneBisectOptions,
    scheduler: &SchedulerOptions,
) -> Result<Progress, LaneError> {
    let (m, text) = load_manifest(&opts.manifest)?;
    let lane = find_lane(&m, &opts.manifest, &opts.lane)?.clone();
    let suite = load_suite(&m, &opts.manifest)?;
    if !subject::is_git_checkout(&opts.subject_dir) {
        return Err(LaneError::Subject(format!(
            "--subject {} is not a git checkout: a bisection measures commits of the subject's repository",
            benchops::terminal::shown_path(&opts.subject_dir)
        )));
    }
    let good = resolve(&opts.subject_dir, &opts.good, "--good")?;
    let bad = resolve(&opts.subject_dir, &opts.bad, "--bad")?;
    let commits = subject::first_parent_range(&opts.subject_dir, &good, &bad)
        .map_err(|e| LaneError::Subject(format!("--good and --bad: {e}")))?;
    if commits.len() < 2 {
        return Err(LaneError::Subject(
            "--good and --bad name the same commit: there is nothing to bisect".into(),
        ));
    }
    let case = CaseId::new(opts.case.clone()).map_err(|e| {
        LaneError::Subject(format!(
            "--case {}: {e}",
            benchops::excerpt::quote(&opts.case)
        ))
    })?;
    let known: Vec<String> = suite
        .iter()
        .flat_map(|(_, p)| p.cases().map(|c| c.to_string()).collect::<Vec<_>>())
        .filter(|c| lane.covers(c))
        .collect();
    if !known.contains(&opts.case) {
        return Err(LaneError::Subject(format!(
            "--case {}: lane `{}` covers no such case of the suite (it covers {})",
            benchops::excerpt::quote(&opts.case),
            lane.name,
            known.join(", ")
        )));
    }
    let settings = lane.comparison_settings();
    let metric = opts
        .metric
        .clone()
        .unwrap_or_else(|| match &settings.metrics {
            Some(list) if list.len() == 1 => list[0].clone(),
            _ => "wall_s".to_owned(),
        });
    let budget_steps = opts
        .max_steps
        .map_or_else(|| lane.bisect_steps(commits.len()), |n| n as usize);
    let id = Sha256Digest::of(&benchops::jcs::canonical_bytes(&serde_json::json!({
        "schema": "benchops-lane-bisect/v1",
        "lane": lane.name.as_str(),
        "manifest": m.digest.to_string(),
        "suite": suite.iter().map(|(n, p)| serde_json::json!([n, p.intent().digest.to_string()])).collect::<Vec<_>>(),
        "good": good,
        "bad": bad,
        "case": opts.case,
        "metric": metric,
        "budget_steps": budget_steps,
        "backend": serde_json::to_value(&opts.backend).unwrap_or_default(),
    })))
    .hex();
    let dir = lane_dir(state, &id);
    if dir.join("lane.json").is_file() {
        let mut p = advance_inner(state, &id, scheduler, opts.exe.clone(), false)?;
        p.resumed = true;
        return Ok(p);
    }
    std::fs::create_dir_all(&dir).map_err(|source| StateError::CreateDir {
        path: dir.clone(),
        source,
    })?;
    let guard = lock(state, &id)?;
    benchops::fsio::write_atomic(&dir.join("manifest.toml"), text.as_bytes())
        .map_err(StateError::from)?;
    // The suite's plans of the case, persisted and never submitted: each
    // step derives its interleaved stage from them.
    let mut measuring = Vec::new();
    for (name, plan) in &suite {
        let spec = StageSpec {
            lane_run: &id,
            stage: "bisect-base",
            repetitions: None,
            subject: None,
            interleave: None,
        };
        if let Some(sel) = select::select(plan, |c| *c == case, spec, name)? {
            measuring.push(stages::persist(state, name, &sel)?);
        }
    }
    let subject_dir =
        std::path::absolute(&opts.subject_dir).unwrap_or_else(|_| opts.subject_dir.clone());
    let exec = LaneExecution {
        schema: LANE_SCHEMA.into(),
        id: id.clone(),
        lane: lane.name.clone(),
        slot: "-".into(),
        repository: m.manifest.repository.clone().unwrap_or_else(|| "-".into()),
        commit: bad,
        subject_dir,
        manifest_path: std::path::absolute(&opts.manifest)
            .unwrap_or_else(|_| opts.manifest.clone())
            .display()
            .to_string(),
        manifest_digest: m.digest,
        out: state.root().to_path_buf(),
        backend: opts.backend.clone(),
        history: "-".into(),
        history_tip: None,
        baseline: None,
        no_baseline_reason: Some("a bisection by hand compares no baseline".into()),
        drifting: Vec::new(),
        created_at: now_rfc3339(),
        phase: Phase::Bisecting,
        measuring,
        confirming: None,
        follow_ups: Vec::new(),
        sealed: None,
        sign_key: None,
        confirm: Some(ConfirmMode {
            mode: ConfirmModeKind::SameSession,
            requested: ConfirmModeKind::SameSession,
            fallback_reason: None,
        }),
        ab: None,
        bisect: Some(BisectState {
            case: opts.case.clone(),
            metric,
            budget_steps: budget_steps as u64,
            budget_seconds: lane.bisect_seconds(),
            commits,
            started_at: now_rfc3339(),
            steps: Vec::new(),
            current: None,
            stages: Vec::new(),
            stopped: None,
            done: false,
        }),
        anchors: Vec::new(),
        kind: ExecutionKind::Bisect,
        unscheduled: None,
        skipped: None,
    };
    save(state, &exec)?;
    drop(guard);
    advance_inner(state, &id, scheduler, opts.exe.clone(), false)
}
