//! The lane execution's persisted form (`lane.json`) and the values the
//! lane commands take and return.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Child;

use benchops::manifest::ManifestError;
use benchops::reconcile::DriftKey;
use benchops::{LaneName, Sha256Digest};
use serde::{Deserialize, Serialize};

use crate::bench::BenchError;
use crate::seal::SealFileError;
use crate::state::StateError;

use super::history::HistoryReadError;
use super::select::SelectError;

/// Schema of `lane.json`.
pub const LANE_SCHEMA: &str = "benchops-lane/v1";

/// How long a Slurm follow-up that found its stage unfinished (accounting
/// lagging behind the arrays) waits before the next one starts, in seconds.
pub const FOLLOW_UP_RETRY_S: u64 = 10;

/// Where a lane execution is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The lane's cases are being measured.
    Measuring,
    /// Suspects (and drifting keys) are being re-run.
    Confirming,
    /// A confirmed regression's culprit is being bisected.
    Bisecting,
    /// The record is sealed.
    Sealed,
    /// A bisection by hand (`lane bisect`) has its answer; it seals
    /// nothing.
    Finished,
}

impl Phase {
    /// Whether the execution is over: sealed, or a bisection by hand
    /// finished.
    pub fn is_final(self) -> bool {
        matches!(self, Phase::Sealed | Phase::Finished)
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Phase::Measuring => "measuring",
            Phase::Confirming => "confirming",
            Phase::Bisecting => "bisecting",
            Phase::Sealed => "sealed",
            Phase::Finished => "finished",
        })
    }
}

/// One benchmark of a stage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageBenchmark {
    /// The suite intent it derives from, as the manifest names it.
    pub intent: String,
    /// Its digest in the state directory.
    pub benchmark: Sha256Digest,
    /// How many children it has.
    pub children: u64,
    /// The cases it was planned for (its plan may hold more points of
    /// their grid; only these are read).
    pub cases: Vec<String>,
    /// An interleaved stage's runs: which planned case measures which case
    /// asked for, on which side.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<InterleavedRun>,
    /// A same-session stage's side A commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_commit: Option<String>,
}

/// The commit a drifting key's drift was confirmed against: its side A
/// while it drifts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyAnchor {
    /// The case.
    pub case: benchops::CaseId,
    /// The metric.
    pub metric: String,
    /// The commit.
    pub commit: String,
}

/// One planned case of an interleaved stage: one run of one side of a case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterleavedRun {
    /// The planned case id (the case, with its run token).
    pub planned: String,
    /// The case it measures.
    pub case: String,
    /// The run token: round and side (`003-b`).
    pub token: String,
}

/// The backend a lane execution runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LaneBackend {
    /// Detached local processes.
    Local {
        /// Concurrency slots.
        slots: u32,
    },
    /// Slurm job arrays.
    Slurm {
        /// `--partition`.
        partition: Option<String>,
        /// `--account`.
        account: Option<String>,
        /// Array throttle.
        throttle: Option<u32>,
    },
}

/// The baseline a lane execution compares with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaneBaseline {
    /// The record's digest (its bytes are in `baseline.json`).
    pub record: Sha256Digest,
    /// Its lane.
    pub lane: LaneName,
    /// Its slot.
    pub slot: String,
    /// Its path on the history branch.
    pub path: String,
}

/// A persisted lane execution: `lane.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaneExecution {
    /// Always [`LANE_SCHEMA`].
    pub schema: String,
    /// The execution id (hex sha256 of what it runs).
    pub id: String,
    /// The lane.
    pub lane: LaneName,
    /// The slot it fills.
    pub slot: String,
    /// The subject repository.
    pub repository: String,
    /// The subject commit.
    pub commit: String,
    /// The subject checkout (exported to the children).
    pub subject_dir: PathBuf,
    /// The manifest file it was started with.
    pub manifest_path: String,
    /// The manifest's digest (a copy is in `manifest.toml`).
    pub manifest_digest: Sha256Digest,
    /// Where the sealed record goes.
    pub out: PathBuf,
    /// The backend.
    pub backend: LaneBackend,
    /// The history it read, as given.
    pub history: String,
    /// The history branch tip it read.
    pub history_tip: Option<String>,
    /// The baseline, when the lane has one.
    pub baseline: Option<LaneBaseline>,
    /// Why there is no baseline, when there is none.
    pub no_baseline_reason: Option<String>,
    /// Keys history holds as drifting for this lane.
    pub drifting: Vec<DriftKey>,
    /// When it started.
    pub created_at: String,
    /// Where it is.
    pub phase: Phase,
    /// The measuring stage.
    pub measuring: Vec<StageBenchmark>,
    /// The confirming stage, once decided (empty: nothing to re-run).
    pub confirming: Option<Vec<StageBenchmark>>,
    /// Slurm follow-up jobs submitted, in order.
    pub follow_ups: Vec<String>,
    /// The sealed record, once sealed.
    pub sealed: Option<SealedRef>,
    /// The key file that signs the record (the file, never the key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign_key: Option<PathBuf>,
    /// How suspects and clears are confirmed, decided at the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<benchops::record::ConfirmMode>,
    /// The same-session sides, once the confirming stage is planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<AbSides>,
    /// The culprit bisection, once started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bisect: Option<BisectState>,
    /// Each drifting key's side A: the commit its drift was confirmed
    /// against, from history.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<KeyAnchor>,
    /// What the execution is: a lane run, or a bisection by hand.
    #[serde(default, skip_serializing_if = "ExecutionKind::is_lane_run")]
    pub kind: ExecutionKind,
    /// Why this run fills no slot of the lane's cron, when it was started
    /// with `--unscheduled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unscheduled: Option<String>,
}

/// What a lane execution is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionKind {
    /// A lane run (`lane run`): it seals a record.
    #[default]
    LaneRun,
    /// A bisection by hand (`lane bisect`): it finishes with its answer
    /// and seals nothing.
    Bisect,
}

impl ExecutionKind {
    fn is_lane_run(&self) -> bool {
        *self == ExecutionKind::LaneRun
    }
}

/// The two sides of a same-session confirmation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AbSides {
    /// The baseline commit (side A).
    pub baseline_commit: String,
    /// Its materialised tree.
    pub a_dir: PathBuf,
    /// The candidate's materialised tree (side B).
    pub b_dir: PathBuf,
    /// The seed of the interleaved order.
    pub order_seed: u64,
}

/// A bisection in progress: the range, its budget, the steps so far and
/// the step being measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BisectState {
    /// The case of the key it follows.
    pub case: String,
    /// Its metric.
    pub metric: String,
    /// The first-parent range, good bound first.
    pub commits: Vec<String>,
    /// The budget of steps.
    pub budget_steps: u64,
    /// The budget of wall time, in seconds.
    pub budget_seconds: u64,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// The steps measured, in order.
    pub steps: Vec<benchops::record::BisectionStep>,
    /// The step being measured: its midpoint and its stage.
    pub current: Option<CurrentStep>,
    /// The stage benchmarks of the steps measured, in order.
    #[serde(default)]
    pub stages: Vec<StageBenchmark>,
    /// Why it stopped before its planner finished (the wall-time budget),
    /// once it did.
    pub stopped: Option<String>,
    /// Whether it is finished.
    pub done: bool,
}

/// The bisection step being measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurrentStep {
    /// The midpoint's index in the range.
    pub index: u64,
    /// The bounds it is measured against.
    pub good: u64,
    /// The bad bound.
    pub bad: u64,
    /// Its stage benchmarks.
    pub stage: Vec<StageBenchmark>,
}

/// Where the sealed record is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SealedRef {
    /// Its digest.
    pub digest: Sha256Digest,
    /// Its file.
    pub path: PathBuf,
}

/// Errors of the lane commands.
#[derive(Debug, thiserror::Error)]
pub enum LaneError {
    /// Publication credentials are in the environment.
    #[error(
        "refusing to run: publication credentials are in the environment ({}); benchops-exec holds no GitHub credentials, so unset them for this command",
        .0.join(", ")
    )]
    Credentials(Vec<String>),
    /// The manifest could not be read.
    #[error("failed to read manifest {path}")]
    ReadManifest {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The manifest is invalid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The manifest names no suite.
    #[error(
        "manifest {0}: $.suite: a lane run needs the suite of benchmark intents (schedule-manifest/v2 `suite = [\"bench.toml\"]`)"
    )]
    NoSuite(PathBuf),
    /// The lane is not in the manifest.
    #[error("manifest {manifest}: $.lanes: lane `{lane}` is not declared (lanes: {known})")]
    UnknownLane {
        /// The manifest.
        manifest: PathBuf,
        /// The lane asked for.
        lane: String,
        /// The lanes declared.
        known: String,
    },
    /// A suite intent could not be loaded.
    #[error("manifest {manifest}: $.suite[{index}]: intent {intent}: {reason}")]
    Intent {
        /// The manifest.
        manifest: PathBuf,
        /// Its position in the suite.
        index: usize,
        /// The file.
        intent: PathBuf,
        /// Why.
        reason: String,
    },
    /// The lane compares a metric that none of its measured cases reports:
    /// it would compare nothing, so nothing is sealed.
    #[error(
        "lane `{lane}` compares {} that no case reports (the cases report {}): with it the lane would see no drift, so no record is sealed; fix the names in the lane's `[lanes.comparison]` `metrics` or `per_metric` in the manifest",
        names(.missing),
        names(.reported)
    )]
    UnreportedMetric {
        /// The lane.
        lane: String,
        /// The compared metrics no case reports.
        missing: Vec<String>,
        /// The metrics the cases report.
        reported: Vec<String>,
    },
    /// The lane covers no case of the suite.
    #[error("lane `{0}` covers none of the suite's cases (see its `cases` in the manifest)")]
    NothingCovered(String),
    /// History could not be read.
    #[error(transparent)]
    History(#[from] HistoryReadError),
    /// The slot could not be computed or is invalid.
    #[error("{0}")]
    Slot(String),
    /// The subject could not be named.
    #[error("{0}")]
    Subject(String),
    /// A side of a same-session confirmation did not build.
    #[error("{0}")]
    BuildFailed(String),
    /// A selection failed.
    #[error(transparent)]
    Select(#[from] SelectError),
    /// Benchmarks could not be planned, submitted or observed.
    #[error(transparent)]
    Bench(#[from] BenchError),
    /// State could not be read or written.
    #[error(transparent)]
    State(#[from] StateError),
    /// The record could not be sealed (a defect, reported rather than hidden).
    #[error("failed to seal the lane record")]
    Seal(#[from] benchops::seal::SealError),
    /// The sealed record could not be written.
    #[error(transparent)]
    Write(#[from] SealFileError),
    /// The signing key cannot be used.
    #[error(transparent)]
    SignKey(#[from] crate::signing::SigningError),
    /// No lane execution has this id.
    #[error("no lane execution {0} in the state directory (see `lane list`)")]
    NotFound(String),
    /// The prefix names several executions.
    #[error("lane id prefix {0} is ambiguous")]
    Ambiguous(String),
    /// Another process holds the execution's lock.
    #[error("another process is advancing lane execution {0}; try again")]
    Busy(String),
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] crate::backend::BackendError),
}

/// Refuses when any publication credential
/// ([`crate::credentials::PUBLICATION_CREDENTIALS`]) is set in `vars`:
/// they have no business on the execution side.
pub fn refuse_credentials(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<(), LaneError> {
    let found: BTreeSet<String> = vars
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| crate::credentials::PUBLICATION_CREDENTIALS.contains(&k.as_str()))
        .collect();
    if found.is_empty() {
        Ok(())
    } else {
        Err(LaneError::Credentials(found.into_iter().collect()))
    }
}

/// What `lane run` is asked to do.
#[derive(Debug, Clone)]
pub struct LaneRunOptions {
    /// The schedule manifest (schedule-manifest/v2 with a suite).
    pub manifest: PathBuf,
    /// The lane.
    pub lane: String,
    /// The history: a local repository or a git URL.
    pub history: String,
    /// The slot; the lane's latest cron slot when `None`.
    pub slot: Option<String>,
    /// The subject repository; the manifest's when `None`.
    pub repository: Option<String>,
    /// The subject commit; `git rev-parse HEAD` in `subject_dir` when `None`.
    pub commit: Option<String>,
    /// Where the subject's checkout is (for the commit).
    pub subject_dir: PathBuf,
    /// Directory for the sealed record.
    pub out: PathBuf,
    /// The backend.
    pub backend: LaneBackend,
    /// The `benchops-exec` binary children and follow-ups run (the current
    /// one when `None`).
    pub exe: Option<PathBuf>,
    /// Now, for the default slot and the slot check.
    pub now: jiff::Timestamp,
    /// Why this run fills no slot of the lane's cron (`--unscheduled`): the
    /// slot is then not checked against the cron (and defaults to now), and
    /// the record says why.
    pub unscheduled: Option<String>,
    /// The key file that signs the sealed record, if any.
    pub sign_key: Option<PathBuf>,
}

/// What `lane run` or `lane advance` did.
#[derive(Debug)]
pub struct Progress {
    /// The execution, as persisted.
    pub execution: LaneExecution,
    /// Whether `lane run` found the execution already started.
    pub resumed: bool,
    /// What happened, for humans.
    pub notes: Vec<String>,
    /// Local wrapper processes started by this call, to reap.
    pub processes: Vec<Child>,
    /// The sealed record, once sealed (when its file can still be read:
    /// a sweep moves handoffs it persisted to `.persisted/`).
    pub sealed: Option<benchops::seal::SealedRecord>,
}

/// The cases of every benchmark a lane execution measured (its measuring
/// and confirming stages) whose runs did not all succeed.
pub fn failures_of(
    state: &crate::state::StateDir,
    scheduler: &crate::backend::SchedulerOptions,
    exec: &LaneExecution,
) -> Result<Vec<crate::failures::FailedCase>, BenchError> {
    let mut failed = Vec::new();
    for s in exec
        .measuring
        .iter()
        .chain(exec.confirming.iter().flatten())
    {
        let status = crate::bench::refresh(state, &s.benchmark, scheduler)?;
        failed.extend(crate::failures::of_status(state, &status));
    }
    Ok(failed)
}

/// A `lane run` or `lane advance` step as JSON, the one shape that
/// `--json` prints and the Python package reads: the execution, whether it
/// was resumed, the notes, the sealed record once sealed (digest and
/// canonical text), and the cases whose runs did not all succeed.
pub fn progress_json(p: &Progress, failures: &[crate::failures::FailedCase]) -> String {
    serde_json::json!({
        "execution": p.execution,
        "resumed": p.resumed,
        "notes": p.notes,
        "sealed": p.sealed.as_ref().map(|s| serde_json::json!({
            "digest": s.digest().to_string(),
            "record": String::from_utf8_lossy(s.bytes()),
        })),
        "failures": failures,
    })
    .to_string()
}

/// Metric names for a message, each quoted and escaped: `metric "a"`,
/// `metrics "a", "b"`, `no metric` for none.
fn names(list: &[String]) -> String {
    let shown: Vec<String> = list.iter().map(|m| benchops::excerpt::quote(m)).collect();
    match shown.len() {
        0 => "no metric".to_owned(),
        1 => format!("metric {}", shown[0]),
        _ => format!("metrics {}", shown.join(", ")),
    }
}
