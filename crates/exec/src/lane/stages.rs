//! The stages of a lane execution: planning, persisting and submitting
//! their benchmarks, the Slurm follow-up that advances them, reading them
//! once finished, and sealing the record from them.

use std::collections::BTreeSet;
use std::process::Child;

use benchops::compare::Settings;

use super::seal::StageResult;
use super::select::{self, StageSpec};
use super::types::AbSides;
use super::{
    LaneError, LaneExecution, Phase, SealedRef, StageBenchmark, bisect, confirm, find_lane,
    lane_dir, load_manifest, save, seal,
};
use crate::backend::{Backend, SchedulerOptions, SlurmOptions};
use crate::bench;
use crate::seal::{SealOutcome, write_sealed};
use crate::state::{StateDir, StateError, now_rfc3339};

/// Submits every benchmark of `stage` that has no submission yet; returns
/// the submissions of the stage (new and old), and whether any is new.
pub(super) fn ensure_submitted(
    state: &StateDir,
    stage: &[StageBenchmark],
    backend: &Backend,
    notes: &mut Vec<String>,
    processes: &mut Vec<Child>,
) -> Result<(Vec<crate::state::Submission>, bool), LaneError> {
    let mut subs = Vec::new();
    let mut newly = false;
    for s in stage {
        let existing = state.submissions(&s.benchmark)?;
        if let Some(last) = existing.last() {
            subs.push(last.clone());
            continue;
        }
        let (_, plan) = state.load_plan(&s.benchmark)?;
        let submitted = bench::submit_planned(state, s.benchmark, &plan, backend)?;
        newly = true;
        notes.push(format!("submitted {}: {}", s.intent, submitted.note));
        processes.extend(submitted.processes);
        if let Some(last) = state.submissions(&s.benchmark)?.pop() {
            subs.push(last);
        }
    }
    Ok((subs, newly))
}

pub(super) fn schedule_follow_up(
    state: &StateDir,
    exec: &mut LaneExecution,
    o: &SlurmOptions,
    after: &[String],
    begin_after_s: Option<u64>,
    notes: &mut Vec<String>,
) -> Result<(), LaneError> {
    let root = std::path::absolute(state.root()).unwrap_or_else(|_| state.root().to_path_buf());
    let args = vec![
        "--state".to_owned(),
        root.display().to_string(),
        "lane".to_owned(),
        "advance".to_owned(),
        exec.id.clone(),
        "--follow-up".to_owned(),
    ];
    let name = format!("benchops-lane-{}", &exec.id[..12]);
    let job = crate::slurm::submit_follow_up(
        &lane_dir(state, &exec.id).join("slurm"),
        &name,
        &args,
        after,
        begin_after_s,
        o,
    )?;
    notes.push(match begin_after_s {
        Some(s) => format!("scheduled follow-up job {job} in {s} s"),
        None => format!(
            "scheduled follow-up job {job} after array job(s) {}",
            after.join(", ")
        ),
    });
    exec.follow_ups.push(job);
    save(state, exec)
}

/// The comparison settings of the execution's lane, from its manifest copy.
pub(super) fn settings_of(state: &StateDir, exec: &LaneExecution) -> Result<Settings, LaneError> {
    let path = lane_dir(state, &exec.id).join("manifest.toml");
    let (m, _) = load_manifest(&path)?;
    Ok(find_lane(&m, &path, exec.lane.as_str())?.comparison_settings())
}

pub(super) fn baseline_of(
    state: &StateDir,
    exec: &LaneExecution,
) -> Result<Option<benchops::record::ResultRecord>, LaneError> {
    let Some(b) = &exec.baseline else {
        return Ok(None);
    };
    let path = lane_dir(state, &exec.id).join("baseline.json");
    let bytes = benchops::fsio::read_record_file(
        &path,
        benchops::fsio::DEFAULT_MAX_RECORD_BYTES,
        benchops::fsio::Symlinks::Refuse,
    )
    .map_err(|e| StateError::Corrupt {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    let sealed =
        benchops::seal::verify(&bytes, Some(&b.record)).map_err(|e| StateError::Corrupt {
            path,
            reason: e.to_string(),
        })?;
    Ok(Some(sealed.record().clone()))
}

pub(super) fn finished(
    state: &StateDir,
    stage: &[StageBenchmark],
    scheduler: &SchedulerOptions,
) -> Result<Vec<StageResult>, LaneError> {
    stage
        .iter()
        .map(|s| {
            let (status, analysis) = bench::analyze(state, &s.benchmark, scheduler)?;
            Ok(StageResult {
                digest: s.benchmark,
                cases: s.cases.clone(),
                status,
                analysis,
            })
        })
        .collect()
}

/// Plans (and persists) the confirmation benchmarks: in the same-session
/// mode the interleaved A/B stage ([`confirm::plan_ab`]); otherwise, for
/// each measuring benchmark, the cases with a key to re-run,
/// `confirm_runs` times.
pub(super) fn plan_confirmation(
    state: &StateDir,
    exec: &LaneExecution,
    measured: &[StageResult],
) -> Result<Confirming, LaneError> {
    let settings = settings_of(state, exec)?;
    let baseline = baseline_of(state, exec)?;
    let drifting: BTreeSet<(benchops::CaseId, String)> = exec
        .drifting
        .iter()
        .map(|k| (k.case.clone(), k.metric.clone()))
        .collect();
    let cases = seal::measured_cases(measured);
    seal::check_compared_metrics(&settings, exec.lane.as_str(), &cases)?;
    let looks = seal::first_looks(&settings, &cases, baseline.as_ref(), &drifting);
    let same_session = exec
        .confirm
        .as_ref()
        .is_some_and(|c| c.mode == benchops::record::ConfirmModeKind::SameSession);
    let mut fallback = None;
    if let (true, Some(b)) = (same_session, &baseline) {
        let build = build_of(state, exec)?;
        match confirm::plan_ab(
            state,
            exec,
            &settings,
            &looks,
            &b.subject.commit,
            build.as_ref(),
        ) {
            Ok((stage, ab)) => {
                return Ok(Confirming {
                    stage,
                    ab,
                    fallback: None,
                });
            }
            // A side that does not build is never measured: this run
            // confirms against the stored baseline, and says why.
            Err(LaneError::BuildFailed(why)) => fallback = Some(why),
            Err(e) => return Err(e),
        }
    }
    let rerun = seal::cases_to_rerun(&looks);
    let mut out = Vec::new();
    if rerun.is_empty() {
        return Ok(Confirming {
            stage: out,
            ab: None,
            fallback,
        });
    }
    for s in &exec.measuring {
        let (_, plan) = state.load_plan(&s.benchmark)?;
        let dir = exec.subject_dir.display().to_string();
        let spec = StageSpec {
            lane_run: &exec.id,
            stage: "confirm",
            repetitions: Some(settings.confirm_runs),
            subject: Some((&dir, &exec.commit)),
            interleave: None,
        };
        if let Some(sel) = select::select(&plan, |c| rerun.contains(c), spec, &s.intent)? {
            out.push(persist(state, &s.intent, &sel)?);
        }
    }
    Ok(Confirming {
        stage: out,
        ab: None,
        fallback,
    })
}

/// The confirming stage as planned.
pub(super) struct Confirming {
    /// Its benchmarks (none: nothing to re-measure).
    pub stage: Vec<StageBenchmark>,
    /// The same-session sides, when it measures both.
    pub ab: Option<AbSides>,
    /// Why it confirms against the stored baseline although the run is
    /// same-session (a side that does not build).
    pub fallback: Option<String>,
}

/// The subject's build step, from the execution's manifest copy.
pub(crate) fn build_of(
    state: &StateDir,
    exec: &LaneExecution,
) -> Result<Option<benchops::manifest::SubjectBuild>, LaneError> {
    let path = lane_dir(state, &exec.id).join("manifest.toml");
    let (m, _) = load_manifest(&path)?;
    Ok(m.manifest.build.clone())
}

pub(super) fn seal_execution(
    state: &StateDir,
    exec: &LaneExecution,
    measured: &[StageResult],
    confirmed: &[StageResult],
) -> Result<SealOutcome, LaneError> {
    let settings = settings_of(state, exec)?;
    seal::check_compared_metrics(
        &settings,
        exec.lane.as_str(),
        &seal::measured_cases(measured),
    )?;
    let baseline = baseline_of(state, exec)?;
    let bisection = exec.bisect.as_ref().map(bisect::record).transpose()?;
    let record = seal::build(
        state,
        exec,
        &settings,
        baseline.as_ref(),
        measured,
        confirmed,
        bisection,
    );
    let sealed = benchops::seal::seal(&record)?;
    let signer = match &exec.sign_key {
        Some(key) => Some(crate::signing::Signer::load(key)?),
        None => None,
    };
    Ok(write_sealed(&sealed, &exec.out, signer.as_ref())?)
}

/// The benchmarks of the stage the execution is in.
pub(super) fn current_stage(exec: &LaneExecution) -> Vec<StageBenchmark> {
    match exec.phase {
        Phase::Measuring => exec.measuring.clone(),
        Phase::Confirming => exec.confirming.clone().unwrap_or_default(),
        Phase::Bisecting => exec
            .bisect
            .as_ref()
            .and_then(|b| b.current.as_ref())
            .map(|c| c.stage.clone())
            .unwrap_or_default(),
        Phase::Sealed | Phase::Finished => Vec::new(),
    }
}

/// Seals the execution from its finished stages and its bisection, notes
/// where the record (and its signature) went, and moves it to `sealed`
/// (the caller saves it).
pub(super) fn seal_now(
    state: &StateDir,
    exec: &mut LaneExecution,
    scheduler: &SchedulerOptions,
    notes: &mut Vec<String>,
) -> Result<(), LaneError> {
    let measured = finished(state, &exec.measuring, scheduler)?;
    let confirmed = finished(
        state,
        &exec.confirming.clone().unwrap_or_default(),
        scheduler,
    )?;
    let outcome = seal_execution(state, exec, &measured, &confirmed)?;
    notes.push(format!(
        "sealed {} ({})",
        outcome.path.display(),
        outcome.digest
    ));
    if let Some(sig) = &outcome.signature {
        notes.push(format!("signed {}", sig.display()));
    }
    exec.sealed = Some(SealedRef {
        digest: outcome.digest,
        path: outcome.path,
    });
    exec.phase = Phase::Sealed;
    Ok(())
}

pub(crate) fn persist(
    state: &StateDir,
    name: &str,
    sel: &select::Selection,
) -> Result<StageBenchmark, LaneError> {
    let digests = sel.plan.child_digests();
    let digest = sel.plan.benchmark_digest(&digests);
    state.persist_plan(&sel.plan, &digests, &digest, name, &now_rfc3339())?;
    Ok(StageBenchmark {
        intent: name.to_owned(),
        benchmark: digest,
        children: sel.plan.len(),
        cases: sel.cases.clone(),
        runs: sel.runs.clone(),
        baseline_commit: None,
    })
}
