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

pub mod bisect;
mod by_hand;
pub mod confirm;
pub mod history;
mod look;
pub mod seal;
pub mod select;
pub mod sides;
pub mod slot;
pub(crate) mod stages;
mod types;

pub use self::by_hand::{LaneBisectOptions, start_bisect};
pub use self::look::{LaneStatus, StageLook, status, wait};
use self::stages::{
    baseline_of, current_stage, ensure_submitted, finished, persist, plan_confirmation,
    schedule_follow_up, seal_now, settings_of,
};

use std::path::{Path, PathBuf};
use std::time::Duration;

use benchops::manifest::{self, Lane, LoadedManifest};
use benchops::plan::Plan;
use benchops::{LaneName, Sha256Digest};

use crate::backend::{Backend, LocalOptions, SchedulerOptions, SlurmOptions};
use crate::bench::{self, BenchError};
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

pub(crate) fn load_manifest(path: &Path) -> Result<(LoadedManifest, String), LaneError> {
    let text = benchops::fsio::read_input_text(path, benchops::fsio::DEFAULT_MAX_INPUT_BYTES)
        .map_err(|source| LaneError::ReadManifest {
            path: path.to_path_buf(),
            source,
        })?;
    let m = manifest::from_toml(&text, &path.display().to_string())?;
    // A lane run refuses a manifest whose slots cannot be told, as
    // `check-manifest` does.
    let issues = manifest::schedule_issues(&m.manifest);
    if !issues.is_empty() {
        return Err(manifest::ManifestError::Invalid {
            source_name: path.display().to_string(),
            issues,
        }
        .into());
    }
    Ok((m, text))
}

pub(crate) fn find_lane<'a>(
    m: &'a LoadedManifest,
    path: &Path,
    lane: &str,
) -> Result<&'a Lane, LaneError> {
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
pub(crate) fn load_suite(
    m: &LoadedManifest,
    path: &Path,
) -> Result<Vec<(String, Plan)>, LaneError> {
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

/// The execution's lock, and a hold on the state directory that keeps
/// `gc` from deciding while it is held ([`crate::state::StateUse`]): whoever
/// persists a stage's benchmarks does so before `lane.json` names them.
struct LaneLock {
    _lane: nix::fcntl::Flock<std::fs::File>,
    _state: crate::state::StateUse,
}

fn lock(state: &StateDir, id: &str) -> Result<LaneLock, LaneError> {
    let held = crate::state::StateUse::hold(state)?;
    lock_execution(state, id).map(|l| LaneLock {
        _lane: l,
        _state: held,
    })
}

fn lock_execution(
    state: &StateDir,
    id: &str,
) -> Result<nix::fcntl::Flock<std::fs::File>, LaneError> {
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

pub(super) fn save(state: &StateDir, exec: &LaneExecution) -> Result<(), LaneError> {
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
    let slot = slot::choose(
        &lane,
        opts.slot.as_deref(),
        opts.unscheduled.as_deref(),
        opts.now,
    )?;
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
        opts.unscheduled.as_deref(),
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
            interleave: None,
        };
        if let Some(sel) = select::select(plan, |c| lane.covers(c.as_str()), spec, name)? {
            measuring.push(persist(state, name, &sel)?);
        }
    }
    let baseline_commit = view
        .baseline
        .as_ref()
        .map(|b| b.record.record().subject.commit.clone());
    let anchors: Vec<&str> = view.anchors.iter().map(|a| a.commit.as_str()).collect();
    let confirm = confirm::choose_mode(
        &lane,
        &subject_dir,
        baseline_commit.as_deref(),
        &anchors,
        &commit,
    );
    if let Some(why) = &confirm.fallback_reason {
        notes.push(format!("confirming against the stored baseline: {why}"));
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
        confirm: Some(confirm),
        ab: None,
        bisect: None,
        anchors: view.anchors.clone(),
        kind: ExecutionKind::LaneRun,
        unscheduled: opts.unscheduled.clone(),
        skipped: opts.skipped.clone(),
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

#[expect(
    clippy::too_many_arguments,
    reason = "every input that makes an execution its own is named, and a struct would only rename them"
)]
fn execution_id(
    lane: &LaneName,
    slot: &str,
    unscheduled: Option<&str>,
    repository: &str,
    commit: &str,
    manifest: &Sha256Digest,
    suite: &[(String, Plan)],
    backend: &LaneBackend,
) -> String {
    let mut v = serde_json::json!({
        "schema": "benchops-lane-id/v1",
        "lane": lane.as_str(),
        "slot": slot,
        "repository": repository,
        "commit": commit,
        "manifest": manifest.to_string(),
        "suite": suite.iter().map(|(n, p)| serde_json::json!([n, p.intent().digest.to_string()])).collect::<Vec<_>>(),
        "backend": serde_json::to_value(backend).unwrap_or_default(),
    });
    // A scheduled run's id is as it always was.
    if let (Some(why), Some(obj)) = (unscheduled, v.as_object_mut()) {
        obj.insert("unscheduled".into(), serde_json::json!(why));
    }
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
            Phase::Sealed | Phase::Finished => {
                let sealed = exec.sealed.as_ref().and_then(read_sealed);
                return Ok(Progress {
                    execution: exec,
                    resumed: false,
                    notes,
                    processes,
                    sealed,
                });
            }
            Phase::Bisecting if exec.bisect.as_ref().is_some_and(|b| b.current.is_none()) => {
                let settings = settings_of(state, &exec)?;
                let mut done = true;
                if let Some(mut b) = exec.bisect.take() {
                    bisect::plan_next(state, &exec, &settings, &mut b)?;
                    if !b.done {
                        notes.push(bisect::describe(&b));
                    }
                    done = b.done;
                    exec.bisect = Some(b);
                }
                if done && exec.kind == ExecutionKind::Bisect {
                    exec.phase = Phase::Finished;
                } else if done {
                    seal_now(state, &mut exec, scheduler, &mut notes)?;
                }
                save(state, &exec)?;
            }
            Phase::Measuring | Phase::Confirming | Phase::Bisecting => {
                let stage = current_stage(&exec);
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
                        let planned = plan_confirmation(state, &exec, &done)?;
                        if let (Some(why), Some(c)) = (&planned.fallback, exec.confirm.as_mut()) {
                            notes.push(format!("confirming against the stored baseline: {why}"));
                            c.mode = benchops::record::ConfirmModeKind::StoredBaseline;
                            c.fallback_reason = Some(why.clone());
                        }
                        let (confirming, ab) = (planned.stage, planned.ab);
                        let cases = confirming.iter().map(|s| s.cases.len()).sum::<usize>();
                        notes.push(match (&ab, cases) {
                            (_, 0) => "measured: nothing to re-run".to_owned(),
                            (Some(ab), _) => format!(
                                "measured: re-measuring {cases} case(s) on the baseline commit {} and this commit, interleaved",
                                &ab.baseline_commit[..12.min(ab.baseline_commit.len())]
                            ),
                            (None, _) => format!("measured: re-running {cases} case(s) to confirm"),
                        });
                        exec.confirming = Some(confirming.clone());
                        exec.ab = ab;
                        // An empty confirming stage is finished at once.
                        exec.phase = Phase::Confirming;
                        save(state, &exec)?;
                    }
                    Phase::Confirming => {
                        let begun = match exec.ab {
                            Some(_) => {
                                let settings = settings_of(state, &exec)?;
                                let measured = finished(state, &exec.measuring, scheduler)?;
                                let baseline = baseline_of(state, &exec)?;
                                let keys = seal::decide_keys(
                                    state,
                                    &exec,
                                    &settings,
                                    baseline.as_ref(),
                                    &measured,
                                    &done,
                                );
                                let (m, _) = load_manifest(
                                    &lane_dir(state, &exec.id).join("manifest.toml"),
                                )?;
                                let lane =
                                    find_lane(&m, Path::new("manifest.toml"), exec.lane.as_str())?;
                                let begun = bisect::begin(&exec, lane, &keys);
                                if let (Err(why), true) = (
                                    &begun,
                                    keys.iter().any(|k| {
                                        k.verdict
                                            == benchops::record::KeyVerdict::ConfirmedRegression
                                    }),
                                ) {
                                    notes.push(format!("no bisection: {why}"));
                                }
                                begun.ok()
                            }
                            None => None,
                        };
                        match begun {
                            Some(b) => {
                                notes.push(format!(
                                    "confirmed a regression of {} {}: bisecting the {} commit(s) since the baseline commit",
                                    b.case,
                                    b.metric,
                                    b.commits.len() - 1
                                ));
                                exec.bisect = Some(b);
                                exec.phase = Phase::Bisecting;
                            }
                            None => {
                                seal_now(state, &mut exec, scheduler, &mut notes)?;
                            }
                        }
                        save(state, &exec)?;
                    }
                    _ => {
                        let settings = settings_of(state, &exec)?;
                        if let Some(b) = exec.bisect.as_mut() {
                            bisect::finish_step(state, &settings, b, &done);
                        }
                        save(state, &exec)?;
                    }
                }
            }
        }
    }
}
