//! `benchops-exec bench` and `benchops-exec child`: plan, submit, run one
//! child, refresh, analyze, cancel and list benchmarks. Every command works
//! from a fresh process: all it needs is in the state directory and in what
//! the backend reports, which this module reaches only through
//! [`crate::backend`].

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use benchops::Sha256Digest;
use benchops::analysis::{self, Analysis, MetricValue, RunInput};
use benchops::classify::{
    self, BackendEvidence, Classified, Evidence, Policy, ResultEvidence, RunClass,
};
use benchops::fsio;
use benchops::intent::{self, IntentError};
use benchops::num::Finite;
use benchops::plan::{self, Plan};
use benchops::record::{Direction, RunCounts};
use serde::Serialize;

use crate::backend::{self, Backend, BackendError, Job, SchedulerOptions, Task};
use crate::child::{self, AttemptIdentity, ChildSpec, Exit};
use crate::state::{BenchmarkRecord, StateDir, StateError, Submission};

pub use crate::backend::LocalOptions;
pub use crate::state::{host_name, now_rfc3339};

/// Errors of the bench commands.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The intent file could not be read.
    #[error("failed to read intent {path}")]
    ReadIntent {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The intent is invalid.
    #[error(transparent)]
    Intent(#[from] IntentError),
    /// The plan is too large.
    #[error(transparent)]
    Plan(#[from] plan::PlanTooLarge),
    /// State could not be read or written.
    #[error(transparent)]
    State(#[from] StateError),
    /// The backend could not launch, observe or stop children.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The child wrapper failed.
    #[error(transparent)]
    Child(#[from] child::ChildError),
    /// The child index is outside the plan.
    #[error("child index {index} is outside the plan of {count} children")]
    NoSuchChild {
        /// The index.
        index: u64,
        /// The plan size.
        count: u64,
    },
    /// The stored child digest differs from the re-planned one.
    #[error(
        "child {index}: stored digest {stored} differs from the re-planned {planned}; the state directory was altered"
    )]
    DigestMismatch {
        /// The child.
        index: u64,
        /// What `children.sha256` says.
        stored: Sha256Digest,
        /// What planning gives.
        planned: Sha256Digest,
    },
    /// Nothing was submitted for this benchmark.
    #[error("benchmark {0} has no submission")]
    NotSubmitted(Sha256Digest),
    /// A lock file could not be used.
    #[error("failed to lock concurrency slot {path}")]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// A planned and persisted benchmark.
#[derive(Debug, Clone)]
pub struct Planned {
    /// Its digest.
    pub digest: Sha256Digest,
    /// The persisted record.
    pub record: BenchmarkRecord,
    /// The plan.
    pub plan: Plan,
}

/// Where an intent comes from. Every form plans the same way: equivalent
/// intents give the same children and digests, whichever form they took.
#[derive(Debug, Clone, Copy)]
pub enum IntentSource<'a> {
    /// A TOML file, read with the input bound.
    File(&'a Path),
    /// TOML text; `label` names it in errors and in the benchmark record.
    Toml {
        /// The text.
        text: &'a str,
        /// What errors call it.
        label: &'a str,
    },
    /// The intent's JSON data model (a Python dict, for one).
    Json {
        /// The value.
        value: &'a serde_json::Value,
        /// What errors call it.
        label: &'a str,
    },
}

impl IntentSource<'_> {
    /// The name the benchmark record keeps: the file name, or the label.
    pub fn name(&self) -> String {
        match self {
            IntentSource::File(p) => p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            IntentSource::Toml { label, .. } | IntentSource::Json { label, .. } => {
                (*label).to_owned()
            }
        }
    }
}

/// Loads an intent file and plans it (no state is written).
pub fn plan_file(path: &Path) -> Result<(Plan, Vec<Sha256Digest>, Sha256Digest), BenchError> {
    plan_source(IntentSource::File(path))
}

/// Loads an intent from any [`IntentSource`] and plans it (no state is
/// written).
pub fn plan_source(
    source: IntentSource<'_>,
) -> Result<(Plan, Vec<Sha256Digest>, Sha256Digest), BenchError> {
    let loaded = match source {
        IntentSource::File(path) => {
            let text =
                fsio::read_input_text(path, fsio::DEFAULT_MAX_INPUT_BYTES).map_err(|source| {
                    BenchError::ReadIntent {
                        path: path.to_path_buf(),
                        source,
                    }
                })?;
            intent::from_toml(&text, &path.display().to_string())?
        }
        IntentSource::Toml { text, label } => intent::from_toml(text, label)?,
        IntentSource::Json { value, label } => intent::from_json_value(value, label)?,
    };
    let plan = plan::plan(loaded)?;
    let digests = plan.child_digests();
    let digest = plan.benchmark_digest(&digests);
    Ok((plan, digests, digest))
}

/// Plans an intent file and persists the benchmark record (idempotent).
pub fn plan(state: &StateDir, intent_path: &Path) -> Result<Planned, BenchError> {
    plan_from(state, IntentSource::File(intent_path))
}

/// Plans an intent from any [`IntentSource`] and persists the benchmark
/// record (idempotent).
pub fn plan_from(state: &StateDir, source: IntentSource<'_>) -> Result<Planned, BenchError> {
    let (plan, digests, digest) = plan_source(source)?;
    let record = state.persist_plan(&plan, &digests, &digest, &source.name(), &now_rfc3339())?;
    Ok(Planned {
        digest,
        record,
        plan,
    })
}

/// What a submission did.
#[derive(Debug)]
pub struct Submitted {
    /// The benchmark.
    pub digest: Sha256Digest,
    /// The attempt number.
    pub attempt: u32,
    /// Number of children started.
    pub children: u64,
    /// The worker processes, so a waiting caller can reap them (local
    /// backend only).
    pub processes: Vec<std::process::Child>,
    /// One line for humans: what was submitted, and where.
    pub note: String,
    /// How often a waiting caller should look again.
    pub poll: Duration,
}

/// Plans `intent_path`, claims the next attempt and launches every child on
/// `backend`, then returns at once: `benchops-exec bench submit`.
///
/// Locally at most `slots` workers start; each claims the next child, runs
/// it and claims again until none is left. On Slurm each chunk is one job
/// array. Nothing but the files and the backend holds state, so the caller
/// may exit immediately.
pub fn submit(
    state: &StateDir,
    intent_path: &Path,
    backend: &Backend,
) -> Result<Submitted, BenchError> {
    submit_from(state, IntentSource::File(intent_path), backend)
}

/// [`submit`] for an intent from any [`IntentSource`].
pub fn submit_from(
    state: &StateDir,
    source: IntentSource<'_>,
    backend: &Backend,
) -> Result<Submitted, BenchError> {
    // `gc` does not decide between planning and submitting (the benchmark
    // may be an old one this submission reuses).
    let _held = crate::state::StateUse::hold(state)?;
    let planned = plan_from(state, source)?;
    submit_planned(state, planned.digest, &planned.plan, backend)
}

/// Claims the next attempt of an already persisted benchmark and launches
/// every child on `backend`, then returns at once.
pub fn submit_planned(
    state: &StateDir,
    digest: Sha256Digest,
    plan: &Plan,
    backend: &Backend,
) -> Result<Submitted, BenchError> {
    let attempt = state.claim_attempt(&digest)?;
    let job = Job {
        state,
        digest,
        plan,
        attempt,
    };
    let launched = backend.launch(&job)?;
    Ok(Submitted {
        digest,
        attempt,
        children: plan.len(),
        processes: launched.processes,
        note: launched.note,
        poll: launched.poll,
    })
}

/// What `benchops-exec child` did.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRun {
    /// The child index the task resolved to.
    pub index: u64,
    /// The recorded result; `None` when the attempt was cancelled before
    /// the child started.
    pub result: Option<child::ChildResult>,
}

/// Runs the child that `task` names as attempt `attempt`:
/// `benchops-exec child` (a Slurm array task, or one child by hand).
pub fn run_task(
    state: &StateDir,
    digest: &Sha256Digest,
    attempt: u32,
    task: Task,
) -> Result<TaskRun, BenchError> {
    let (index, restart) = task.resolve()?;
    let result = run_child_entry(state, digest, index, attempt, restart)?;
    Ok(TaskRun { index, result })
}

/// Runs child `index` of a benchmark as attempt `attempt`, run `restart`:
/// the entry point of `benchops-exec child`. `None` when the attempt was
/// cancelled.
pub fn run_child_entry(
    state: &StateDir,
    digest: &Sha256Digest,
    index: u64,
    attempt: u32,
    restart: u32,
) -> Result<Option<child::ChildResult>, BenchError> {
    let (_, plan) = state.load_plan(digest)?;
    if state.is_cancelled(digest, attempt) {
        return Ok(None);
    }
    run_planned_child(state, digest, &plan, index, attempt, restart).map(Some)
}

/// Runs child `index` of `plan` as attempt `attempt`, run `restart`, in
/// this process (see [`child::run_child`]), after checking its digest
/// against `children.sha256`.
pub fn run_planned_child(
    state: &StateDir,
    digest: &Sha256Digest,
    plan: &Plan,
    index: u64,
    attempt: u32,
    restart: u32,
) -> Result<child::ChildResult, BenchError> {
    let config = plan.child(index).ok_or(BenchError::NoSuchChild {
        index,
        count: plan.len(),
    })?;
    let planned = plan.child_digest(index).ok_or(BenchError::NoSuchChild {
        index,
        count: plan.len(),
    })?;
    let stored = state.stored_child_digest(digest, index)?;
    if stored != planned {
        return Err(BenchError::DigestMismatch {
            index,
            stored,
            planned,
        });
    }
    // Tell the command which run it is; these do not enter the child digest.
    let mut env = config.env.clone();
    env.insert("BENCHOPS_BENCHMARK".into(), digest.to_string());
    env.insert("BENCHOPS_CHILD_INDEX".into(), index.to_string());
    env.insert("BENCHOPS_CASE".into(), config.case.to_string());
    env.insert("BENCHOPS_REPETITION".into(), config.repetition.to_string());
    env.insert("BENCHOPS_WARMUP".into(), config.warmup.to_string());
    env.insert("BENCHOPS_ATTEMPT".into(), attempt.to_string());
    // A run of an interleaved stage measures its own side's subject.
    let side = crate::subject::side_env(&config.point, &config.env);
    env.extend(side);
    let spec = ChildSpec {
        argv: config.argv.clone(),
        shell: config.shell,
        env,
        env_remove: Vec::new(),
        workdir: config.workdir.as_ref().map(PathBuf::from),
        timeout: config
            .timeout_s
            .and_then(|t| Duration::try_from_secs_f64(t).ok()),
        json_metrics: config.json_metrics,
    };
    let id = AttemptIdentity {
        benchmark: digest.to_string(),
        index,
        attempt,
        child_digest: planned.to_string(),
        restart,
    };
    let dir = state.attempt_dir(digest, index, attempt, restart);
    Ok(child::run_child(&spec, &id, &dir)?)
}

/// What one local worker did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerRun {
    /// Children it ran.
    pub ran: u64,
    /// Of those, children whose command did not succeed.
    pub failed: u64,
}

/// The body of `benchops-exec worker`: becomes a worker of attempt
/// `attempt` (see [`backend::local::Worker`]), then claims and runs
/// children one after another, each in this process's own process tree,
/// until none is left for it. Re-plans the benchmark once.
pub fn run_worker(
    state: &StateDir,
    digest: &Sha256Digest,
    attempt: u32,
) -> Result<WorkerRun, BenchError> {
    let mut run = WorkerRun::default();
    let Some(mut worker) = backend::local::Worker::start(state, digest, attempt)? else {
        return Ok(run);
    };
    let (_, plan) = state.load_plan(digest)?;
    while let Some(claimed) = worker.claim_next()? {
        if !worker.has_result(&claimed) {
            let result = run_planned_child(
                state,
                digest,
                &plan,
                claimed.index,
                attempt,
                claimed.restart,
            )?;
            run.ran += 1;
            if !result.succeeded() {
                run.failed += 1;
            }
        }
        worker.done(&claimed)?;
    }
    Ok(run)
}

/// The classification of one child, with the evidence that decided it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChildStatus {
    /// Child index.
    pub index: u64,
    /// Its case.
    pub case: String,
    /// Whether it is a warm-up run.
    pub warmup: bool,
    /// The attempt observed (the latest covering this child).
    pub attempt: u32,
    /// The Slurm requeue observed (0 for the first run, and for local runs).
    pub restart: u32,
    /// The class and reason.
    #[serde(flatten)]
    pub classified: Classified,
    /// The raw evidence, for humans and `--json`.
    pub evidence: EvidenceOut,
}

/// Raw evidence as printed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceOut {
    /// `started.json` exists.
    pub started: bool,
    /// What `result.json` says (`absent`, `exit 0`, `exit 3`, `unreadable: ...`).
    pub result: String,
    /// What the backend says.
    pub backend: String,
}

/// A refresh of every child.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    /// The benchmark.
    pub benchmark: Sha256Digest,
    /// Whether a cancellation was recorded.
    pub cancelled: bool,
    /// Counts over every child (warm-ups included).
    pub counts: RunCounts,
    /// Whether every child is in a terminal class and the backend runs
    /// nothing of it any more (a requeued task with a stale result is not
    /// terminal).
    pub terminal: bool,
    /// Every child.
    pub children: Vec<ChildStatus>,
    /// The raw scheduler evidence (Slurm only): the calls made, their wall
    /// time, and what squeue and sacct printed.
    pub scheduler: Option<backend::slurm::Snapshot>,
}

/// Observes every child of a benchmark from the files and the backend,
/// with the scheduler calls bounded by `opts`. Refresh writes no record;
/// for a local submission whose queue has children left and fewer live
/// workers than slots (a worker was killed), it starts the missing
/// workers (see [`backend::observe`]).
///
/// The run files of every child are read first and the backend is asked
/// after, so that a result the backend could not have seen (a task that
/// ended between the two) never meets an older "pending": a result that
/// existed while the scheduler still said pending is truly from an earlier
/// run.
pub fn refresh(
    state: &StateDir,
    digest: &Sha256Digest,
    opts: &SchedulerOptions,
) -> Result<Status, BenchError> {
    let (_, plan) = state.load_plan(digest)?;
    let subs = state.submissions(digest)?;
    if subs.is_empty() {
        return Err(BenchError::NotSubmitted(*digest));
    }
    let latest_attempt = subs.iter().map(|s| s.attempt).max().unwrap_or(0);
    let cancelled = state.is_cancelled(digest, latest_attempt);
    let timeout = plan.intent().intent.timeout_s;
    let policy = Policy {
        result_grace_s: 30.0,
        running_limit_s: timeout.map(|t| t + 60.0),
    };
    // 1. The files, child by child. One scan of `runs/` says which children
    // have a run directory at all: one that has none (a task still pending
    // on Slurm) has no files to read, and costs no further system call.
    let with_dirs = run_dirs(state, digest);
    let cancelled_by_attempt: BTreeMap<u32, bool> = subs
        .iter()
        .map(|s| (s.attempt, state.is_cancelled(digest, s.attempt)))
        .collect();
    let mut files = Vec::with_capacity(plan.len() as usize);
    for index in 0..plan.len() {
        files.push(
            subs.iter()
                .rev()
                .find(|s| s.indices.contains(index))
                .map(|sub| {
                    let sub_cancelled = cancelled_by_attempt
                        .get(&sub.attempt)
                        .copied()
                        .unwrap_or(false);
                    if with_dirs.as_ref().is_some_and(|d| !d.contains(&index)) {
                        let dir = state.attempt_dir(digest, index, sub.attempt, 0);
                        return (sub, 0, dir, RunFiles::none(sub_cancelled));
                    }
                    let (dir, restart) = backend::locate(state, digest, sub, index);
                    let read = read_files(&dir, restart, sub, index, digest, sub_cancelled);
                    (sub, restart, dir, read)
                }),
        );
    }
    // 2. One backend snapshot covering every submission: a fixed number of
    // scheduler calls however many children there are.
    let observation = backend::observe(state, digest, &subs, opts);
    let now = observation.now();
    // 3. Classify.
    let mut counts = RunCounts::default();
    let mut active = 0u64;
    let mut children = Vec::with_capacity(plan.len() as usize);
    for (index, found) in (0..plan.len()).zip(files) {
        let Some((sub, mut restart, mut dir, read)) = found else {
            // Never submitted: no evidence at all.
            let classified = Classified {
                class: RunClass::Missing,
                reason: "no submission covers this child".into(),
            };
            classify::count(&mut counts, classified.class);
            children.push(status_row(
                &plan,
                index,
                0,
                0,
                classified,
                EvidenceOut {
                    started: false,
                    result: "absent".into(),
                    backend: "not submitted".into(),
                },
            ));
            continue;
        };
        let backend = observation.backend(sub, index, read.started);
        let restarts = observation.restarts(sub, index);
        let ended = matches!(
            backend,
            BackendEvidence::Gone(_)
                | BackendEvidence::FinishedOk { .. }
                | BackendEvidence::FinishedFailed(_)
        );
        // A run that ended between the two reads is seen by the backend as
        // ended: its files, read again now, are newer than that answer and
        // may hold the result. The same holds for the files of a requeued
        // task's newest run, which the first read predates. (Never for
        // pending or running: that is the order that makes a requeue's
        // stale result detectable.)
        let read = match restarts {
            Some(n) if ended && n > restart => {
                restart = n;
                dir = state.attempt_dir(digest, index, sub.attempt, n);
                read_files(&dir, restart, sub, index, digest, read.cancelled)
            }
            _ if ended && read.result == ResultEvidence::Absent => {
                read_files(&dir, restart, sub, index, digest, read.cancelled)
            }
            _ => read,
        };
        let (evidence, out) = read.with_backend(now, backend, restarts);
        let classified = classify::classify(&evidence, &policy);
        // A stale result of a requeued task is not the end: the scheduler
        // will run it again.
        if matches!(
            evidence.backend,
            BackendEvidence::Pending(_) | BackendEvidence::Running
        ) {
            active += 1;
        }
        classify::count(&mut counts, classified.class);
        children.push(status_row(
            &plan,
            index,
            sub.attempt,
            restart,
            classified,
            out,
        ));
    }
    // An incomplete scheduler answer decides nothing about the benchmark
    // as a whole either: no look from it is terminal.
    let answered = observation.slurm.as_ref().is_none_or(|s| s.complete);
    let terminal = counts.incomplete == 0 && active == 0 && answered;
    Ok(Status {
        benchmark: *digest,
        cancelled,
        counts,
        terminal,
        children,
        scheduler: observation.slurm,
    })
}

fn status_row(
    plan: &Plan,
    index: u64,
    attempt: u32,
    restart: u32,
    classified: Classified,
    evidence: EvidenceOut,
) -> ChildStatus {
    let config = plan.child(index);
    ChildStatus {
        index,
        case: config
            .as_ref()
            .map(|c| c.case.to_string())
            .unwrap_or_default(),
        warmup: config.is_some_and(|c| c.warmup),
        attempt,
        restart,
        classified,
        evidence,
    }
}

/// What a child's run files said when they were read.
struct RunFiles {
    started: bool,
    started_at: Option<jiff::Timestamp>,
    result: ResultEvidence,
    cancelled: bool,
    /// The run the files are from (see [`Evidence::files_restart`]).
    restart: Option<u32>,
}

/// The children that have a directory under `runs/` (`None` when it cannot
/// be listed: then every child is looked at).
fn run_dirs(state: &StateDir, digest: &Sha256Digest) -> Option<std::collections::HashSet<u64>> {
    let rd = fs::read_dir(state.benchmark_dir(digest).join("runs")).ok()?;
    let mut out = std::collections::HashSet::new();
    for e in rd {
        let e = e.ok()?;
        if let Some(i) = e.file_name().to_str().and_then(|n| n.parse::<u64>().ok()) {
            out.insert(i);
        }
    }
    Some(out)
}

impl RunFiles {
    /// A child with no run directory: nothing started, no result.
    fn none(cancelled: bool) -> Self {
        RunFiles {
            started: false,
            started_at: None,
            result: ResultEvidence::Absent,
            cancelled,
            restart: Some(0),
        }
    }
}

/// Reads the run files in `dir`, the directory of run `restart`.
fn read_files(
    dir: &Path,
    restart: u32,
    sub: &Submission,
    index: u64,
    digest: &Sha256Digest,
    cancelled: bool,
) -> RunFiles {
    // A started marker that exists but cannot be read still proves a start.
    let started_path = dir.join("started.json");
    let started = started_path.exists();
    let started_at = child::read_started(&started_path)
        .ok()
        .and_then(|s| s.started_at.parse::<jiff::Timestamp>().ok());
    // The run the files are from: the result's own word when there is a
    // result (none in one written before it was recorded), else the
    // directory's.
    let mut files_restart = Some(restart);
    let result = match child::read_result(&dir.join("result.json")) {
        Err(child::ChildError::Read { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            ResultEvidence::Absent
        }
        Err(e) => ResultEvidence::Unreadable(error_chain(&e)),
        Ok(r)
            if r.benchmark != digest.to_string()
                || r.index != index
                || r.attempt != sub.attempt =>
        {
            ResultEvidence::Unreadable("result belongs to another child or attempt".into())
        }
        Ok(r) if r.restart.is_some_and(|n| n != restart) => ResultEvidence::Unreadable(format!(
            "result names restart {}, but lies in the directory of restart {restart}",
            r.restart.unwrap_or_default()
        )),
        Ok(r) => {
            files_restart = r.restart;
            if r.succeeded() {
                ResultEvidence::Ok
            } else {
                let what = Exit::describe(&r.exit);
                let cancelled_run = cancelled && matches!(r.exit, Exit::Signaled { .. });
                ResultEvidence::Failed(if cancelled_run {
                    format!("cancelled ({what})")
                } else {
                    what
                })
            }
        }
    };
    RunFiles {
        started,
        started_at,
        result,
        cancelled,
        restart: files_restart,
    }
}

impl RunFiles {
    fn with_backend(
        self,
        now: jiff::Timestamp,
        backend: BackendEvidence,
        backend_restarts: Option<u32>,
    ) -> (Evidence, EvidenceOut) {
        let out = EvidenceOut {
            started: self.started,
            result: match &self.result {
                ResultEvidence::Absent => "absent".into(),
                ResultEvidence::Unreadable(w) => format!("unreadable: {w}"),
                ResultEvidence::Ok => "exit 0".into(),
                ResultEvidence::Failed(w) => w.clone(),
            },
            backend: match &backend {
                BackendEvidence::Pending(w) => format!("pending: {w}"),
                BackendEvidence::Running => "running".into(),
                BackendEvidence::FinishedOk { .. } => "finished".into(),
                BackendEvidence::FinishedFailed(w)
                | BackendEvidence::FoldedEnd(w)
                | BackendEvidence::Gone(w)
                | BackendEvidence::Unknown(w)
                | BackendEvidence::Unanswered(w) => w.clone(),
            },
        };
        (
            Evidence {
                started: self.started,
                running_for_s: self.started_at.map(|t| now.duration_since(t).as_secs_f64()),
                result: self.result,
                backend,
                superseded_by: None,
                cancelled: self.cancelled,
                files_restart: self.restart,
                backend_restarts,
            },
            out,
        )
    }
}

/// Refreshes and analyzes a benchmark.
pub fn analyze(
    state: &StateDir,
    digest: &Sha256Digest,
    opts: &SchedulerOptions,
) -> Result<(Status, Analysis), BenchError> {
    let status = refresh(state, digest, opts)?;
    let (rec, _) = state.load_plan(digest)?;
    let mut runs = Vec::with_capacity(status.children.len());
    for c in &status.children {
        let metrics = if c.classified.class == RunClass::Succeeded {
            let dir = state.attempt_dir(digest, c.index, c.attempt, c.restart);
            child::read_result(&dir.join("result.json"))
                .map(|r| metric_values(&r))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        runs.push(RunInput {
            index: c.index,
            case: benchops::CaseId::new(c.case.clone()).map_err(|e| StateError::Corrupt {
                path: state.benchmark_dir(digest).join("benchmark.json"),
                reason: e.to_string(),
            })?,
            warmup: c.warmup,
            classified: c.classified.clone(),
            metrics,
        });
    }
    let cases: Vec<benchops::CaseId> = rec
        .cases
        .iter()
        .filter_map(|c| benchops::CaseId::new(c.clone()).ok())
        .collect();
    let mut analysis = analysis::analyze(*digest, &cases, &runs);
    // Complete only when the benchmark is finished: not while the backend
    // still runs a task, nor from an incomplete scheduler answer.
    analysis.complete &= status.terminal;
    Ok((status, analysis))
}

/// The metrics of one result: the four builtins, then what the command
/// reported.
pub fn metric_values(r: &child::ChildResult) -> Vec<MetricValue> {
    let lower = Direction::LowerIsBetter;
    let mv = |name: &str, unit: &str, value: Option<Finite>| MetricValue {
        name: name.into(),
        unit: unit.into(),
        direction: lower,
        value,
        reason: None,
    };
    let mut out = vec![
        mv("wall_s", "s", r.wall_s),
        mv("user_s", "s", r.user_s),
        mv("sys_s", "s", r.sys_s),
        mv(
            "max_rss_bytes",
            "bytes",
            r.max_rss_bytes.and_then(|b| Finite::new(b as f64).ok()),
        ),
    ];
    let mut seen = BTreeMap::new();
    for m in &r.metrics {
        // A metric reported twice keeps its last value.
        seen.insert(m.name.clone(), m);
    }
    for (name, m) in seen {
        if !out.iter().any(|x| x.name == name) {
            let mut v = mv(&name, &m.unit, m.value);
            v.reason = m.reason.clone();
            if m.higher_is_better {
                v.direction = Direction::HigherIsBetter;
            }
            out.push(v);
        }
    }
    out
}

/// What `cancel` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cancelled {
    /// The benchmark.
    pub benchmark: Sha256Digest,
    /// Signals sent, for the record.
    pub actions: Vec<String>,
}

/// Cancels the latest submission of a benchmark: records the cancellation
/// first (so children that have not started yet will not start), then
/// stops what still runs (locally, `SIGTERM` to the process groups of the
/// commands the workers run; on Slurm, one `scancel`).
pub fn cancel(
    state: &StateDir,
    digest: &Sha256Digest,
    opts: &SchedulerOptions,
) -> Result<Cancelled, BenchError> {
    state.load_record(digest)?;
    let subs = state.submissions(digest)?;
    let Some(latest) = subs.last() else {
        return Err(BenchError::NotSubmitted(*digest));
    };
    let actions = backend::cancel(state, digest, latest, opts)?;
    Ok(Cancelled {
        benchmark: *digest,
        actions,
    })
}

/// One benchmark of the state directory, as `bench list` shows it.
#[derive(Debug)]
pub struct Listed {
    /// The benchmark.
    pub digest: Sha256Digest,
    /// Its record, or why it could not be read.
    pub record: Result<BenchmarkRecord, StateError>,
}

/// The benchmarks of the state directory, newest first (by when they were
/// planned; unreadable ones last, in digest order).
pub fn list(state: &StateDir) -> Vec<Listed> {
    let mut out: Vec<Listed> = state
        .list()
        .into_iter()
        .map(|digest| Listed {
            digest,
            record: state.load_record(&digest),
        })
        .collect();
    fn key(l: &Listed) -> Option<(Option<benchops::time::Utc>, &str)> {
        l.record
            .as_ref()
            .ok()
            .map(|r| benchops::time::order_key(&r.created_at))
    }
    out.sort_by(|a, b| key(b).cmp(&key(a)).then(a.digest.cmp(&b.digest)));
    out
}

/// One benchmark as `bench list` shows it, from its files alone.
#[derive(Debug, Clone, Serialize)]
pub struct ListRow {
    /// The benchmark.
    pub digest: String,
    /// When it was planned; `None` when its record cannot be read.
    pub created_at: Option<String>,
    /// Its intent file, as given.
    pub intent: Option<String>,
    /// Its children.
    pub children: Option<u64>,
    /// Attempts submitted.
    pub attempts: u64,
    /// Children with a result file (of any attempt).
    pub with_result: u64,
    /// `planned`, `submitted`, `finished` (every child has a result), or
    /// `unreadable: …`.
    pub state: String,
}

/// The row of `l`: its record, attempts and result files, no backend call.
pub fn list_row(state: &StateDir, l: &Listed) -> ListRow {
    let attempts = state.submissions(&l.digest).map_or(0, |s| s.len() as u64);
    let runs = state.benchmark_dir(&l.digest).join("runs");
    let with_result = fs::read_dir(&runs)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|child| {
            fs::read_dir(child.path())
                .into_iter()
                .flatten()
                .flatten()
                .any(|a| a.path().join("result.json").is_file())
        })
        .count() as u64;
    match &l.record {
        Ok(r) => ListRow {
            digest: l.digest.to_string(),
            created_at: Some(r.created_at.clone()),
            intent: Some(r.intent_source.clone()),
            children: Some(r.child_count),
            attempts,
            with_result,
            state: if attempts == 0 {
                "planned"
            } else if with_result >= r.child_count {
                "finished"
            } else {
                "submitted"
            }
            .to_owned(),
        },
        Err(e) => ListRow {
            digest: l.digest.to_string(),
            created_at: None,
            intent: None,
            children: None,
            attempts,
            with_result,
            state: format!("unreadable: {e}"),
        },
    }
}

/// Renders an error with its sources (the core's one rendering).
pub use benchops::excerpt::error_chain;
