//! `benchops-exec bench`: plan, submit, refresh, analyze and cancel
//! benchmarks. Every command works from a fresh process: all it needs is in
//! the state directory and in what the backend reports.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use benchops::Sha256Digest;
use benchops::analysis::{self, Analysis, MetricValue, RunInput};
use benchops::classify::{
    self, BackendEvidence, Classified, Evidence, Policy, ResultEvidence, RunClass,
};
use benchops::intent::{self, IntentError};
use benchops::num::Finite;
use benchops::plan::{self, Plan};
use benchops::record::{Direction, RunCounts};
use serde::Serialize;

use crate::child::{self, AttemptIdentity, ChildSpec, Exit};
use crate::procfs;
use crate::state::{
    BackendHandles, BenchmarkRecord, CANCEL_SCHEMA, Cancellation, IndexSet, LocalHandle,
    SUBMISSION_SCHEMA, StateDir, StateError, Submission,
};

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
    /// A wrapper process could not be started.
    #[error("failed to start the wrapper for child {index}")]
    Spawn {
        /// The child.
        index: u64,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The current executable could not be found (to start wrappers).
    #[error("failed to locate the benchops-exec executable")]
    CurrentExe(#[source] std::io::Error),
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
    /// The scheduler refused or could not be reached.
    #[error("scheduler error: {0}")]
    Scheduler(String),
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

/// Loads an intent file and plans it (no state is written).
pub fn plan_file(path: &Path) -> Result<(Plan, Vec<Sha256Digest>, Sha256Digest), BenchError> {
    let text = fs::read_to_string(path).map_err(|source| BenchError::ReadIntent {
        path: path.to_path_buf(),
        source,
    })?;
    let loaded = intent::from_toml(&text, &path.display().to_string())?;
    let plan = plan::plan(loaded)?;
    let digests = plan.child_digests();
    let digest = plan.benchmark_digest(&digests);
    Ok((plan, digests, digest))
}

/// Plans an intent file and persists the benchmark record (idempotent).
pub fn plan(state: &StateDir, intent_path: &Path) -> Result<Planned, BenchError> {
    let (plan, digests, digest) = plan_file(intent_path)?;
    let name = intent_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let record = state.persist_plan(
        &plan,
        &digests,
        &digest,
        &name.unwrap_or_default(),
        &now_rfc3339(),
    )?;
    Ok(Planned {
        digest,
        record,
        plan,
    })
}

/// Options of a local submission.
#[derive(Debug, Clone)]
pub struct LocalOptions {
    /// Concurrency slots (children running at once).
    pub slots: u32,
    /// Path of the `benchops-exec` binary that runs children; the current
    /// executable when `None`.
    pub exe: Option<PathBuf>,
}

impl Default for LocalOptions {
    fn default() -> Self {
        LocalOptions {
            slots: 1,
            exe: None,
        }
    }
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
    /// The wrapper processes, so a waiting caller can reap them.
    pub processes: Vec<std::process::Child>,
}

/// Plans `intent_path` and starts every child as a detached local process.
///
/// There is no dispatcher: each wrapper starts at once in its own process
/// group, takes concurrency slot `index % slots` with `flock` (blocking), and
/// then runs its child. Nothing but the files and the processes holds state,
/// so the caller may exit immediately.
pub fn submit_local(
    state: &StateDir,
    intent_path: &Path,
    opts: &LocalOptions,
) -> Result<Submitted, BenchError> {
    let planned = plan(state, intent_path)?;
    let digest = planned.digest;
    let attempt = state.claim_attempt(&digest)?;
    let exe = match &opts.exe {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(BenchError::CurrentExe)?,
    };
    let slots = opts.slots.max(1);
    let root = fs::canonicalize(state.root()).unwrap_or_else(|_| state.root().to_path_buf());
    let mut handles = Vec::new();
    let mut processes = Vec::new();
    let count = planned.plan.len();
    for index in 0..count {
        let dir = state.attempt_dir(&digest, index, attempt);
        fs::create_dir_all(&dir).map_err(|source| StateError::CreateDir {
            path: dir.clone(),
            source,
        })?;
        let log = fs::File::create(dir.join("wrapper.log"))
            .map_err(|source| BenchError::Spawn { index, source })?;
        let mut cmd = Command::new(&exe);
        cmd.arg("child")
            .arg("--state")
            .arg(&root)
            .arg("--benchmark")
            .arg(digest.hex())
            .arg("--index")
            .arg(index.to_string())
            .arg("--attempt")
            .arg(attempt.to_string())
            .arg("--slots")
            .arg(slots.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        for var in child::env_remove_publication_credentials() {
            cmd.env_remove(var);
        }
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let proc = cmd
            .spawn()
            .map_err(|source| BenchError::Spawn { index, source })?;
        let pid = proc.id();
        handles.push(LocalHandle {
            index,
            pid,
            start_ticks: procfs::start_ticks(pid).unwrap_or(0),
        });
        processes.push(proc);
    }
    let submission = Submission {
        schema: SUBMISSION_SCHEMA.into(),
        benchmark: digest,
        attempt,
        submitted_at: now_rfc3339(),
        indices: IndexSet::Range { count },
        backend: BackendHandles::Local {
            host: host_name(),
            slots,
            handles,
        },
    };
    state.write_submission(&submission)?;
    Ok(Submitted {
        digest,
        attempt,
        children: count,
        processes,
    })
}

/// Runs child `index` of a benchmark as attempt `attempt`: the entry point of
/// `benchops-exec child`. With `slots`, first takes the local concurrency
/// slot `index % slots`.
pub fn run_child_entry(
    state: &StateDir,
    digest: &Sha256Digest,
    index: u64,
    attempt: u32,
    slots: Option<u32>,
    restart: u32,
) -> Result<Option<child::ChildResult>, BenchError> {
    let (_, plan) = state.load_plan(digest)?;
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
    let _slot = match slots {
        Some(n) => Some(lock_slot(state, digest, index % u64::from(n.max(1)))?),
        None => None,
    };
    if state.is_cancelled(digest, attempt) {
        return Ok(None);
    }
    // Tell the command which run it is; these do not enter the child digest.
    let mut env = config.env.clone();
    env.insert("BENCHOPS_BENCHMARK".into(), digest.to_string());
    env.insert("BENCHOPS_CHILD_INDEX".into(), index.to_string());
    env.insert("BENCHOPS_CASE".into(), config.case.to_string());
    env.insert("BENCHOPS_REPETITION".into(), config.repetition.to_string());
    env.insert("BENCHOPS_WARMUP".into(), config.warmup.to_string());
    env.insert("BENCHOPS_ATTEMPT".into(), attempt.to_string());
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
    };
    let dir = crate::slurm::attempt_dir(state, digest, index, attempt, restart);
    Ok(Some(child::run_child(&spec, &id, &dir)?))
}

fn lock_slot(
    state: &StateDir,
    digest: &Sha256Digest,
    slot: u64,
) -> Result<nix::fcntl::Flock<fs::File>, BenchError> {
    let dir = state.benchmark_dir(digest).join("slots");
    fs::create_dir_all(&dir).map_err(|source| StateError::CreateDir {
        path: dir.clone(),
        source,
    })?;
    let path = dir.join(format!("{slot}.lock"));
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| BenchError::Lock {
            path: path.clone(),
            source,
        })?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).map_err(|(_, errno)| {
        BenchError::Lock {
            path,
            source: errno.into(),
        }
    })
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
    pub scheduler: Option<crate::slurm::Snapshot>,
}

/// Observes every child of a benchmark from the files and the backend.
/// Read-only: refresh never writes to the state directory.
pub fn refresh(state: &StateDir, digest: &Sha256Digest) -> Result<Status, BenchError> {
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
    let now = jiff::Timestamp::now();
    // One scheduler snapshot covering every Slurm submission: a fixed number
    // of scheduler calls however many children there are.
    let slurm_chunks: Vec<crate::state::SlurmChunk> = subs
        .iter()
        .filter_map(|s| match &s.backend {
            BackendHandles::Slurm { chunks, .. } => Some(chunks.clone()),
            BackendHandles::Local { .. } => None,
        })
        .flatten()
        .collect();
    let snapshot = (!slurm_chunks.is_empty()).then(|| crate::slurm::Snapshot::take(&slurm_chunks));
    let mut counts = RunCounts::default();
    let mut active = 0u64;
    let mut children = Vec::with_capacity(plan.len() as usize);
    for index in 0..plan.len() {
        let Some(sub) = subs.iter().rev().find(|s| s.indices.contains(index)) else {
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
        let (dir, restart) = match &sub.backend {
            BackendHandles::Slurm { .. } => {
                crate::slurm::latest_attempt_dir(state, digest, index, sub.attempt)
            }
            BackendHandles::Local { .. } => (state.attempt_dir(digest, index, sub.attempt), 0),
        };
        let started_exists = dir.join("started.json").exists();
        let sub_cancelled = state.is_cancelled(digest, sub.attempt);
        let backend = match &sub.backend {
            BackendHandles::Local { handles, .. } => {
                local_backend(handles, index, sub_cancelled, started_exists)
            }
            BackendHandles::Slurm { chunks, .. } => match &snapshot {
                Some(snap) => snap.evidence(chunks, index, restart, now, sub),
                None => BackendEvidence::Unknown("no scheduler snapshot".into()),
            },
        };
        let (evidence, out) = gather(&dir, sub, index, digest, sub_cancelled, now, backend);
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
    let terminal = counts.incomplete == 0 && active == 0;
    Ok(Status {
        benchmark: *digest,
        cancelled,
        counts,
        terminal,
        children,
        scheduler: snapshot,
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

/// Describes how a run ended, for reasons and failure tallies.
pub fn describe_exit(exit: &Exit) -> String {
    match exit {
        Exit::Exited { code } => format!("exit {code}"),
        Exit::Signaled { signal, name } => format!("signal {signal} ({name})"),
        Exit::TimedOut { after_s, .. } => format!("timed out after {after_s} s"),
        Exit::SpawnFailed { error } => format!("failed to start: {error}"),
    }
}

fn local_backend(
    handles: &[LocalHandle],
    index: u64,
    cancelled: bool,
    started: bool,
) -> BackendEvidence {
    match handles.iter().find(|h| h.index == index) {
        Some(h) if procfs::is_alive(h.pid, h.start_ticks) => {
            if started {
                BackendEvidence::Running
            } else {
                BackendEvidence::Pending("waiting for a concurrency slot".into())
            }
        }
        Some(h) if cancelled && !started => BackendEvidence::FinishedFailed(format!(
            "cancelled before it started (wrapper pid {} ended)",
            h.pid
        )),
        Some(h) => BackendEvidence::Gone(format!("wrapper pid {} is no longer running", h.pid)),
        None => BackendEvidence::Gone("the submission has no process for this child".into()),
    }
}

fn gather(
    dir: &Path,
    sub: &Submission,
    index: u64,
    digest: &Sha256Digest,
    cancelled: bool,
    now: jiff::Timestamp,
    backend: BackendEvidence,
) -> (Evidence, EvidenceOut) {
    // A started marker that exists but cannot be read still proves a start.
    let started_path = dir.join("started.json");
    let started_marker = started_path.exists();
    let started = child::read_started(&started_path).ok();
    let running_for_s = started
        .as_ref()
        .and_then(|s| s.started_at.parse::<jiff::Timestamp>().ok())
        .map(|t| now.duration_since(t).as_secs_f64());
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
        Ok(r) if r.succeeded() => ResultEvidence::Ok,
        Ok(r) => {
            let what = describe_exit(&r.exit);
            let cancelled_run = cancelled && matches!(r.exit, Exit::Signaled { .. });
            ResultEvidence::Failed(if cancelled_run {
                format!("cancelled ({what})")
            } else {
                what
            })
        }
    };
    let out = EvidenceOut {
        started: started_marker,
        result: match &result {
            ResultEvidence::Absent => "absent".into(),
            ResultEvidence::Unreadable(w) => format!("unreadable: {w}"),
            ResultEvidence::Ok => "exit 0".into(),
            ResultEvidence::Failed(w) => w.clone(),
        },
        backend: match &backend {
            BackendEvidence::Pending(w) => format!("pending: {w}"),
            BackendEvidence::Running => "running".into(),
            BackendEvidence::FinishedOk { .. } => "finished".into(),
            BackendEvidence::FinishedFailed(w) => w.clone(),
            BackendEvidence::Gone(w) | BackendEvidence::Unknown(w) => w.clone(),
        },
    };
    (
        Evidence {
            started: started_marker,
            running_for_s,
            result,
            backend,
            superseded_by: None,
        },
        out,
    )
}

/// Refreshes and analyzes a benchmark.
pub fn analyze(state: &StateDir, digest: &Sha256Digest) -> Result<(Status, Analysis), BenchError> {
    let status = refresh(state, digest)?;
    let (rec, _) = state.load_plan(digest)?;
    let mut runs = Vec::with_capacity(status.children.len());
    for c in &status.children {
        let metrics = if c.classified.class == RunClass::Succeeded {
            let dir = crate::slurm::attempt_dir(state, digest, c.index, c.attempt, c.restart);
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
    let analysis = analysis::analyze(*digest, &cases, &runs);
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

/// Cancels a benchmark: records the cancellation first (so wrappers that
/// have not started yet will not start), then stops running commands
/// (SIGTERM to their process group) and waiting wrappers.
pub fn cancel(state: &StateDir, digest: &Sha256Digest) -> Result<Cancelled, BenchError> {
    state.load_record(digest)?;
    let subs = state.submissions(digest)?;
    let Some(latest) = subs.last() else {
        return Err(BenchError::NotSubmitted(*digest));
    };
    let mut actions = Vec::new();
    if let BackendHandles::Slurm { .. } = &latest.backend {
        let record = Cancellation {
            schema: CANCEL_SCHEMA.into(),
            requested_at: now_rfc3339(),
            actions: vec!["scancel the array jobs".into()],
        };
        state.write_cancel(digest, latest.attempt, &record)?;
        actions.extend(crate::slurm::cancel(latest)?);
    }
    if let BackendHandles::Local { handles, .. } = &latest.backend {
        // Record first, so that a wrapper that takes its slot from now on
        // sees the cancellation and does not start.
        let placeholder = Cancellation {
            schema: CANCEL_SCHEMA.into(),
            requested_at: now_rfc3339(),
            actions: vec!["signal live local wrappers".into()],
        };
        state.write_cancel(digest, latest.attempt, &placeholder)?;
        for h in handles {
            if !procfs::is_alive(h.pid, h.start_ticks) {
                continue;
            }
            let groups = procfs::child_groups(h.pid);
            let started = state
                .attempt_dir(digest, h.index, latest.attempt)
                .join("started.json")
                .exists();
            if started && !groups.is_empty() {
                for g in groups {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(g as i32),
                        nix::sys::signal::Signal::SIGTERM,
                    );
                    actions.push(format!("child {}: SIGTERM to process group {g}", h.index));
                }
            } else if !started {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(h.pid as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
                actions.push(format!(
                    "child {}: SIGTERM to waiting wrapper {}",
                    h.index, h.pid
                ));
            }
        }
    }
    Ok(Cancelled {
        benchmark: *digest,
        actions,
    })
}

/// RFC 3339 UTC now, with microseconds.
pub fn now_rfc3339() -> String {
    let ts = jiff::Timestamp::now();
    format!("{ts:.6}")
}

/// The host name, or `unknown`.
pub fn host_name() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "unknown".into())
}

/// Renders an error with its sources.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
