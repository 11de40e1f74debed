//! `benchops-exec lane`: a lane run. It measures every case the lane covers,
//! compares each with the lane's baseline from history, re-runs suspects
//! (and drifting keys that look cleared) within the same execution, and
//! seals a `benchmark-result/v2` record. It makes no GitHub call and holds
//! no token.
//!
//! A lane execution is a state machine persisted in
//! `<state>/lanes/<id>/lane.json`: `measuring`, then `confirming` (only when
//! something must be re-run), then `sealed`. [`advance`] moves it forward
//! from any fresh process and is idempotent: every step is either a
//! create-only write, a write that replaces `lane.json` atomically after
//! the step it records, or a submission that is made only when the stage's
//! benchmark has none. On Slurm, each stage's arrays are followed by a
//! dependency job (`--dependency=afterany:<arrays>`) that runs `lane
//! advance --follow-up`, so a lane completes with nobody waiting.

pub mod history;
pub mod seal;
pub mod select;
pub mod slot;
mod types;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use benchops::compare::Settings;
use benchops::manifest::{self, Lane, LoadedManifest};
use benchops::plan::Plan;
use benchops::{LaneName, Sha256Digest};
use serde::Serialize;

use crate::backend::{Backend, LocalOptions, SchedulerOptions, SlurmOptions};
use crate::bench::{self, BenchError};
use crate::seal::{SealOutcome, write_sealed};
use crate::state::{StateDir, StateError, now_rfc3339, read_json};

use self::history::HistorySource;
use self::seal::StageResult;
use self::select::StageSpec;

pub use self::types::*;

fn lanes_dir(state: &StateDir) -> PathBuf {
    state.root().join("lanes")
}

/// The directory of one lane execution.
pub fn lane_dir(state: &StateDir, id: &str) -> PathBuf {
    lanes_dir(state).join(id)
}

fn load_manifest(path: &Path) -> Result<(LoadedManifest, String), LaneError> {
    let text = benchops::fsio::read_input_text(path, benchops::fsio::DEFAULT_MAX_INPUT_BYTES)
        .map_err(|source| LaneError::ReadManifest {
            path: path.to_path_buf(),
            source,
        })?;
    let m = manifest::from_toml(&text, &path.display().to_string())?;
    Ok((m, text))
}

fn find_lane<'a>(m: &'a LoadedManifest, path: &Path, lane: &str) -> Result<&'a Lane, LaneError> {
    m.manifest
        .lanes
        .iter()
        .find(|l| l.name.as_str() == lane)
        .ok_or_else(|| LaneError::UnknownLane {
            manifest: path.to_path_buf(),
            lane: lane.to_owned(),
            known: m
                .manifest
                .lanes
                .iter()
                .map(|l| l.name.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The suite's intents, planned in full, with their names as the manifest
/// gives them.
fn load_suite(m: &LoadedManifest, path: &Path) -> Result<Vec<(String, Plan)>, LaneError> {
    let suite = m
        .manifest
        .suite
        .as_ref()
        .ok_or_else(|| LaneError::NoSuite(path.to_path_buf()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for (index, name) in suite.iter().enumerate() {
        let file = base.join(name);
        let fail = |reason: String| LaneError::Intent {
            manifest: path.to_path_buf(),
            index,
            intent: file.clone(),
            reason,
        };
        let (plan, _, _) = bench::plan_file(&file).map_err(|e| match e {
            BenchError::ReadIntent { source, .. } => fail(source.to_string()),
            other => fail(bench::error_chain(&other)),
        })?;
        out.push((name.clone(), plan));
    }
    Ok(out)
}

fn subject_commit(opts: &LaneRunOptions) -> Result<String, LaneError> {
    let commit = match &opts.commit {
        Some(c) => c.clone(),
        None => {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(&opts.subject_dir)
                .args(["rev-parse", "HEAD"])
                .output()
                .map_err(|e| {
                    LaneError::Subject(format!("failed to run git for the subject commit: {e}"))
                })?;
            if !out.status.success() {
                return Err(LaneError::Subject(format!(
                    "{} is not a git checkout with a commit; give --commit",
                    opts.subject_dir.display()
                )));
            }
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        }
    };
    let ok = (commit.len() == 40 || commit.len() == 64)
        && commit
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !ok {
        return Err(LaneError::Subject(format!(
            "subject commit {commit:?} must be 40 or 64 lowercase hex digits"
        )));
    }
    Ok(commit)
}

fn lock(state: &StateDir, id: &str) -> Result<nix::fcntl::Flock<std::fs::File>, LaneError> {
    let dir = lane_dir(state, id);
    let path = dir.join(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| StateError::Read {
            path: path.clone(),
            source,
        })?;
    // Wait a little: a follow-up job and a person may advance at once.
    let mut file = file;
    for _ in 0..600 {
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(l) => return Ok(l),
            Err((f, _)) => {
                file = f;
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    Err(LaneError::Busy(id.to_owned()))
}

fn save(state: &StateDir, exec: &LaneExecution) -> Result<(), LaneError> {
    let path = lane_dir(state, &exec.id).join("lane.json");
    benchops::fsio::write_atomic(&path, &crate::state::pretty(exec)).map_err(StateError::from)?;
    Ok(())
}

/// Loads a lane execution by id or unique hex prefix (at least 8 digits).
pub fn load(state: &StateDir, id: &str) -> Result<LaneExecution, LaneError> {
    let full = resolve(state, id)?;
    Ok(read_json(&lane_dir(state, &full).join("lane.json"))?)
}

/// The full id of a lane execution from a unique prefix.
pub fn resolve(state: &StateDir, id: &str) -> Result<String, LaneError> {
    let id = id.trim();
    if id.len() < 8 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(LaneError::NotFound(id.to_owned()));
    }
    let matches: Vec<String> = list_ids(state)
        .into_iter()
        .filter(|x| x.starts_with(&id.to_ascii_lowercase()))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(LaneError::NotFound(id.to_owned())),
        _ => Err(LaneError::Ambiguous(id.to_owned())),
    }
}

fn list_ids(state: &StateDir) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(lanes_dir(state))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.len() == 64 && n.bytes().all(|b| b.is_ascii_hexdigit()))
        .filter(|n| lanes_dir(state).join(n).join("lane.json").is_file())
        .collect();
    ids.sort();
    ids
}

/// Every lane execution in the state directory, oldest id order.
pub fn list(state: &StateDir) -> Vec<LaneExecution> {
    list_ids(state)
        .iter()
        .filter_map(|id| read_json(&lane_dir(state, id).join("lane.json")).ok())
        .collect()
}

fn backend_of(b: &LaneBackend, scheduler: &SchedulerOptions, exe: Option<PathBuf>) -> Backend {
    match b {
        LaneBackend::Local { slots } => Backend::Local(LocalOptions {
            slots: *slots,
            exe,
            ..LocalOptions::default()
        }),
        LaneBackend::Slurm {
            partition,
            account,
            throttle,
        } => Backend::Slurm(SlurmOptions {
            partition: partition.clone(),
            account: account.clone(),
            throttle: *throttle,
            exe,
            scheduler: *scheduler,
            ..SlurmOptions::default()
        }),
    }
}

/// Starts a lane run (`benchops-exec lane run`): reads the manifest, the
/// suite and history, persists the execution, and submits the measuring
/// stage. Running it again with the same inputs resumes the same execution.
pub fn start(
    state: &StateDir,
    opts: &LaneRunOptions,
    scheduler: &SchedulerOptions,
) -> Result<Progress, LaneError> {
    // A key that cannot sign is refused before anything is measured; the
    // execution remembers its absolute path, for follow-ups that run
    // elsewhere.
    let sign_key = match &opts.sign_key {
        Some(key) => {
            crate::signing::Signer::load(key)?;
            Some(
                std::path::absolute(key).map_err(|source| crate::signing::SigningError::Read {
                    path: key.clone(),
                    source,
                })?,
            )
        }
        None => None,
    };
    let (m, text) = load_manifest(&opts.manifest)?;
    let lane = find_lane(&m, &opts.manifest, &opts.lane)?.clone();
    let suite = load_suite(&m, &opts.manifest)?;
    let covered: usize = suite
        .iter()
        .map(|(_, p)| p.cases().filter(|c| lane.covers(c.as_str())).count())
        .sum();
    if covered == 0 {
        return Err(LaneError::NothingCovered(opts.lane.clone()));
    }
    let slot = match &opts.slot {
        Some(s) => {
            benchops::time::Utc::parse(s).map_err(|e| {
                LaneError::Slot(format!(
                    "--slot {s:?} is not an RFC 3339 UTC instant: {}",
                    e.reason
                ))
            })?;
            s.clone()
        }
        None => slot::latest_slot(lane.name.as_str(), &lane.cron, &lane.timezone, opts.now)
            .map_err(|e| LaneError::Slot(e.to_string()))?,
    };
    let repository = opts
        .repository
        .clone()
        .or_else(|| m.manifest.repository.clone())
        .ok_or_else(|| {
            LaneError::Subject(
                "the subject repository is unknown: give --repository or `repository` in the manifest"
                    .into(),
            )
        })?;
    let commit = subject_commit(opts)?;
    let source = HistorySource::parse(&opts.history);
    let id = execution_id(
        &lane.name,
        &slot,
        &repository,
        &commit,
        &m.digest,
        &suite,
        &opts.backend,
    );
    let dir = lane_dir(state, &id);
    if dir.join("lane.json").is_file() {
        let mut p = advance_inner(state, &id, scheduler, opts.exe.clone(), false)?;
        p.resumed = true;
        if sign_key.is_some() && sign_key != p.execution.sign_key {
            p.notes.push(format!(
                "this execution signs with the key it was started with ({}), not with this run's --sign-key",
                p.execution
                    .sign_key
                    .as_ref()
                    .map_or("none".to_owned(), |k| k.display().to_string())
            ));
        }
        return Ok(p);
    }
    let view = history::read(
        &source,
        &lanes_dir(state).join("history-cache"),
        &lane.name,
        &m.manifest,
    )?;
    std::fs::create_dir_all(&dir).map_err(|source| StateError::CreateDir {
        path: dir.clone(),
        source,
    })?;
    let _guard = lock(state, &id)?;
    benchops::fsio::write_atomic(&dir.join("manifest.toml"), text.as_bytes())
        .map_err(StateError::from)?;
    let mut notes = Vec::new();
    if !view.skipped.is_empty() {
        notes.push(format!(
            "{} record(s) in history failed verification and were left out of the drift state",
            view.skipped.len()
        ));
    }
    let (baseline, no_baseline_reason) = match &view.baseline {
        Some(b) => {
            benchops::fsio::write_atomic(&dir.join("baseline.json"), b.record.bytes())
                .map_err(StateError::from)?;
            (
                Some(LaneBaseline {
                    record: b.record.digest(),
                    lane: b.pointer.lane.clone(),
                    slot: b.pointer.slot.clone(),
                    path: b.pointer.path.clone(),
                }),
                None,
            )
        }
        None => (
            None,
            Some(match &view.tip {
                None => format!(
                    "history {} has no {} branch yet: the lane's first run",
                    source.display(),
                    benchops::layout::HISTORY_BRANCH
                ),
                Some(_) => format!("lane {} has no baseline pointer in history yet", lane.name),
            }),
        ),
    };
    let subject_dir =
        std::path::absolute(&opts.subject_dir).unwrap_or_else(|_| opts.subject_dir.clone());
    let subject_dir_text = subject_dir.display().to_string();
    let mut measuring = Vec::new();
    for (name, plan) in &suite {
        let spec = StageSpec {
            lane_run: &id,
            stage: "measure",
            repetitions: None,
            subject: Some((&subject_dir_text, &commit)),
        };
        if let Some(sel) = select::select(plan, |c| lane.covers(c.as_str()), spec, name)? {
            measuring.push(persist(state, name, &sel)?);
        }
    }
    let manifest_path = std::path::absolute(&opts.manifest)
        .unwrap_or_else(|_| opts.manifest.clone())
        .display()
        .to_string();
    let exec = LaneExecution {
        schema: LANE_SCHEMA.into(),
        id: id.clone(),
        lane: lane.name.clone(),
        slot,
        repository,
        commit,
        subject_dir,
        manifest_path,
        manifest_digest: m.digest,
        out: std::path::absolute(&opts.out).unwrap_or_else(|_| opts.out.clone()),
        backend: opts.backend.clone(),
        history: source.display(),
        history_tip: view.tip.clone(),
        baseline,
        no_baseline_reason,
        drifting: view.drifting.clone(),
        created_at: now_rfc3339(),
        phase: Phase::Measuring,
        measuring,
        confirming: None,
        follow_ups: Vec::new(),
        sealed: None,
        sign_key,
    };
    save(state, &exec)?;
    drop(_guard);
    let mut p = advance_inner(state, &id, scheduler, opts.exe.clone(), false)?;
    p.notes.splice(0..0, notes);
    Ok(p)
}

/// The sealed record of `s`, from its file or, once a local sweep moved
/// it, from `.persisted/` beside it.
pub fn read_sealed(s: &SealedRef) -> Option<benchops::seal::SealedRecord> {
    let moved = s
        .path
        .parent()
        .map(|d| d.join(".persisted"))
        .zip(s.path.file_name())
        .map(|(d, n)| d.join(n));
    [Some(s.path.clone()), moved]
        .into_iter()
        .flatten()
        .find_map(|p| {
            let bytes = benchops::fsio::read_record_file(
                &p,
                benchops::fsio::DEFAULT_MAX_RECORD_BYTES,
                benchops::fsio::Symlinks::Refuse,
            )
            .ok()?;
            benchops::seal::verify(&bytes, Some(&s.digest)).ok()
        })
}

fn persist(
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
    })
}

fn execution_id(
    lane: &LaneName,
    slot: &str,
    repository: &str,
    commit: &str,
    manifest: &Sha256Digest,
    suite: &[(String, Plan)],
    backend: &LaneBackend,
) -> String {
    let v = serde_json::json!({
        "schema": "benchops-lane-id/v1",
        "lane": lane.as_str(),
        "slot": slot,
        "repository": repository,
        "commit": commit,
        "manifest": manifest.to_string(),
        "suite": suite.iter().map(|(n, p)| serde_json::json!([n, p.intent().digest.to_string()])).collect::<Vec<_>>(),
        "backend": serde_json::to_value(backend).unwrap_or_default(),
    });
    Sha256Digest::of(&benchops::jcs::canonical_bytes(&v)).hex()
}

/// Moves a lane execution forward as far as it can go now
/// (`benchops-exec lane advance`). Idempotent: it never submits a stage
/// benchmark that already has a submission, and never re-runs a child that
/// has a result. `follow_up` says the caller is a Slurm follow-up job, which
/// schedules the next one when the stage it waited for is not yet finished.
pub fn advance(
    state: &StateDir,
    id: &str,
    scheduler: &SchedulerOptions,
    exe: Option<PathBuf>,
    follow_up: bool,
) -> Result<Progress, LaneError> {
    let id = resolve(state, id)?;
    advance_inner(state, &id, scheduler, exe, follow_up)
}

fn advance_inner(
    state: &StateDir,
    id: &str,
    scheduler: &SchedulerOptions,
    exe: Option<PathBuf>,
    follow_up: bool,
) -> Result<Progress, LaneError> {
    let _guard = lock(state, id)?;
    let mut exec: LaneExecution = read_json(&lane_dir(state, id).join("lane.json"))?;
    let backend = backend_of(&exec.backend, scheduler, exe.clone());
    let mut notes = Vec::new();
    let mut processes = Vec::new();
    loop {
        match exec.phase {
            Phase::Sealed => {
                let sealed = exec.sealed.as_ref().and_then(read_sealed);
                return Ok(Progress {
                    execution: exec,
                    resumed: false,
                    notes,
                    processes,
                    sealed,
                });
            }
            Phase::Measuring | Phase::Confirming => {
                let stage = match exec.phase {
                    Phase::Measuring => exec.measuring.clone(),
                    _ => exec.confirming.clone().unwrap_or_default(),
                };
                let (submitted, newly) =
                    ensure_submitted(state, &stage, &backend, &mut notes, &mut processes)?;
                let mut done = Vec::new();
                let mut waiting = 0u64;
                for s in &stage {
                    let (status, analysis) = bench::analyze(state, &s.benchmark, scheduler)?;
                    if !status.terminal {
                        waiting += status.counts.incomplete;
                    }
                    done.push(StageResult {
                        digest: s.benchmark,
                        cases: s.cases.clone(),
                        status,
                        analysis,
                    });
                }
                if waiting > 0 {
                    notes.push(format!(
                        "{}: {waiting} child run(s) not finished yet",
                        exec.phase
                    ));
                    if let Backend::Slurm(o) = &backend {
                        let ids: Vec<String> = submitted
                            .iter()
                            .flat_map(crate::slurm::array_job_ids)
                            .collect();
                        // A stage just submitted gets its dependency job; a
                        // follow-up that woke too early (accounting lag)
                        // schedules the next one a little later.
                        if newly && !ids.is_empty() {
                            schedule_follow_up(state, &mut exec, o, &ids, None, &mut notes)?;
                        } else if follow_up {
                            schedule_follow_up(
                                state,
                                &mut exec,
                                o,
                                &[],
                                Some(FOLLOW_UP_RETRY_S),
                                &mut notes,
                            )?;
                        }
                    }
                    return Ok(Progress {
                        execution: exec,
                        resumed: false,
                        notes,
                        processes,
                        sealed: None,
                    });
                }
                match exec.phase {
                    Phase::Measuring => {
                        let confirming = plan_confirmation(state, &exec, &done)?;
                        notes.push(if confirming.is_empty() {
                            "measured: nothing to re-run".to_owned()
                        } else {
                            format!(
                                "measured: re-running {} case(s) to confirm",
                                confirming.iter().map(|s| s.cases.len()).sum::<usize>()
                            )
                        });
                        exec.confirming = Some(confirming.clone());
                        // An empty confirming stage is finished at once.
                        exec.phase = Phase::Confirming;
                        save(state, &exec)?;
                    }
                    _ => {
                        let measured = finished(state, &exec.measuring, scheduler)?;
                        let outcome = seal_execution(state, &exec, &measured, &done)?;
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
                            path: outcome.path.clone(),
                        });
                        exec.phase = Phase::Sealed;
                        save(state, &exec)?;
                    }
                }
            }
        }
    }
}

/// Submits every benchmark of `stage` that has no submission yet; returns
/// the submissions of the stage (new and old), and whether any is new.
fn ensure_submitted(
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

fn schedule_follow_up(
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
fn settings_of(state: &StateDir, exec: &LaneExecution) -> Result<Settings, LaneError> {
    let path = lane_dir(state, &exec.id).join("manifest.toml");
    let (m, _) = load_manifest(&path)?;
    Ok(find_lane(&m, &path, exec.lane.as_str())?.comparison_settings())
}

fn baseline_of(
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

fn finished(
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

/// Plans (and persists) the confirmation benchmarks: for each measuring
/// benchmark, the cases with a key to re-run, `confirm_runs` times.
fn plan_confirmation(
    state: &StateDir,
    exec: &LaneExecution,
    measured: &[StageResult],
) -> Result<Vec<StageBenchmark>, LaneError> {
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
    let rerun = seal::cases_to_rerun(&looks);
    let mut out = Vec::new();
    if rerun.is_empty() {
        return Ok(out);
    }
    for s in &exec.measuring {
        let (_, plan) = state.load_plan(&s.benchmark)?;
        let dir = exec.subject_dir.display().to_string();
        let spec = StageSpec {
            lane_run: &exec.id,
            stage: "confirm",
            repetitions: Some(settings.confirm_runs),
            subject: Some((&dir, &exec.commit)),
        };
        if let Some(sel) = select::select(&plan, |c| rerun.contains(c), spec, &s.intent)? {
            out.push(persist(state, &s.intent, &sel)?);
        }
    }
    Ok(out)
}

fn seal_execution(
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
    let record = seal::build(
        state,
        exec,
        &settings,
        baseline.as_ref(),
        measured,
        confirmed,
    );
    let sealed = benchops::seal::seal(&record)?;
    let signer = match &exec.sign_key {
        Some(key) => Some(crate::signing::Signer::load(key)?),
        None => None,
    };
    Ok(write_sealed(&sealed, &exec.out, signer.as_ref())?)
}

/// One look at a lane execution, for `lane status` and the progress bar.
#[derive(Debug, Clone, Serialize)]
pub struct LaneStatus {
    /// The execution.
    pub execution: LaneExecution,
    /// The current stage's benchmarks with their class counts.
    pub stage: Vec<StageLook>,
}

/// One benchmark of the current stage.
#[derive(Debug, Clone, Serialize)]
pub struct StageLook {
    /// The benchmark.
    pub benchmark: Sha256Digest,
    /// Whether it was submitted.
    pub submitted: bool,
    /// Its class counts, when submitted.
    pub counts: Option<benchops::record::RunCounts>,
    /// Whether it is finished.
    pub terminal: bool,
}

/// Where a lane execution is (read-only): `benchops-exec lane status`.
pub fn status(
    state: &StateDir,
    id: &str,
    scheduler: &SchedulerOptions,
) -> Result<LaneStatus, LaneError> {
    let exec = load(state, id)?;
    let stage = match exec.phase {
        Phase::Measuring => exec.measuring.clone(),
        Phase::Confirming => exec.confirming.clone().unwrap_or_default(),
        Phase::Sealed => Vec::new(),
    };
    let mut looks = Vec::new();
    for s in &stage {
        match bench::refresh(state, &s.benchmark, scheduler) {
            Ok(st) => looks.push(StageLook {
                benchmark: s.benchmark,
                submitted: true,
                counts: Some(st.counts),
                terminal: st.terminal,
            }),
            Err(BenchError::NotSubmitted(_)) => looks.push(StageLook {
                benchmark: s.benchmark,
                submitted: false,
                counts: None,
                terminal: false,
            }),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(LaneStatus {
        execution: exec,
        stage: looks,
    })
}

/// How often `wait` checks whether the local workers it reaps have exited.
const POLL_WORKERS: Duration = Duration::from_millis(20);

/// Advances until sealed, reaping local workers: `lane run --wait`. While
/// workers run it advances at the pace of [`crate::watch::Pace`], at once
/// when they have all exited, and every `poll` otherwise. `on_look` sees
/// every look.
pub fn wait(
    state: &StateDir,
    id: &str,
    scheduler: &SchedulerOptions,
    exe: Option<PathBuf>,
    mut processes: Vec<Child>,
    poll: Duration,
    mut on_look: impl FnMut(&LaneStatus),
) -> Result<Progress, LaneError> {
    let mut notes = Vec::new();
    let mut pace = crate::watch::Pace::default();
    loop {
        processes.retain_mut(|p| !matches!(p.try_wait(), Ok(Some(_))));
        // While local workers run, look only at the pace of a look, so
        // that this process stays idle while children are measured.
        if !pace.due(!processes.is_empty(), poll) {
            std::thread::sleep(POLL_WORKERS.min(poll));
            continue;
        }
        let started = std::time::Instant::now();
        let mut p = advance(state, id, scheduler, exe.clone(), false)?;
        processes.append(&mut p.processes);
        // What is still running shows in the progress bar, not as notes.
        notes.extend(
            p.notes
                .drain(..)
                .filter(|n| !n.contains("not finished yet")),
        );
        if p.execution.phase == Phase::Sealed {
            for mut c in processes {
                let _ = c.wait();
            }
            p.notes = notes;
            return Ok(p);
        }
        if let Ok(s) = status(state, id, scheduler) {
            on_look(&s);
        }
        pace.looked(started);
        std::thread::sleep(POLL_WORKERS.min(poll));
    }
}
