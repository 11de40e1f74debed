//! The backend seam: where the children of a submission run, what a later
//! process learns about them, and how they are stopped.
//!
//! | operation | what it does |
//! |---|---|
//! | [`Backend::launch`] | starts the children (Slurm arrays) or the workers (local) of one claimed attempt and writes its submission record |
//! | [`locate`] | where the files of a child's observed run are (the newest requeue's on Slurm) |
//! | [`observe`] | takes ONE snapshot of backend evidence for a refresh, whatever the number of children; locally, it restarts the workers a queue still needs |
//! | [`Observation::backend`] | answers, from that snapshot, what the backend says about a child |
//! | [`Observation::restarts`] | answers how often the backend restarted (requeued) a child's task |
//! | [`cancel`] | records the cancellation of an attempt, then stops what still runs |
//! | [`executor`] | names the executor of the latest submission in a sealed record |
//! | [`Task::resolve`] | tells a wrapper process which child it runs |
//! | [`local::Worker`] | a local worker: a slot, then claims in order until none is left |
//!
//! This module is the only place that tells the local backend from Slurm:
//! a launch dispatches on [`Backend`], and everything after it on the
//! [`BackendHandles`] its submission recorded. The rest of the crate goes
//! through the functions above and never names a backend. No backend
//! holds state in memory: all it needs later is in the submission record.

pub(crate) mod claims;
pub mod local;
pub mod slurm;

use std::path::PathBuf;
use std::time::Duration;

use benchops::Sha256Digest;
use benchops::classify::BackendEvidence;
use benchops::plan::Plan;
use benchops::record::Executor;

use crate::state::{
    self, BackendHandles, CANCEL_SCHEMA, Cancellation, IndexSet, SUBMISSION_SCHEMA, SlurmChunk,
    StateDir, StateError, Submission,
};

pub use local::{ClaimOrder, LocalOptions};
pub use slurm::{SchedulerOptions, SlurmOptions};

/// Where a submission runs, with the options of its launch.
#[derive(Debug, Clone)]
pub enum Backend {
    /// Local worker processes, at most `slots` at once.
    Local(LocalOptions),
    /// Slurm job arrays, one `sbatch` call per chunk.
    Slurm(SlurmOptions),
}

/// One planned benchmark and one claimed attempt: what a backend launches.
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    /// The state directory.
    pub state: &'a StateDir,
    /// The benchmark.
    pub digest: Sha256Digest,
    /// Its plan.
    pub plan: &'a Plan,
    /// The attempt number, already claimed.
    pub attempt: u32,
}

impl Job<'_> {
    /// Writes the submission record of this attempt, covering children
    /// `0..count`.
    fn record(&self, count: u64, backend: BackendHandles) -> Result<Submission, StateError> {
        let submission = Submission {
            schema: SUBMISSION_SCHEMA.into(),
            benchmark: self.digest,
            attempt: self.attempt,
            submitted_at: state::now_rfc3339(),
            indices: IndexSet::Range { count },
            backend,
        };
        self.state.write_submission(&submission)?;
        Ok(submission)
    }
}

/// What a launch started.
#[derive(Debug)]
pub struct Launched {
    /// The submission record written for the attempt.
    pub submission: Submission,
    /// The local worker processes, so that a waiting caller can reap them;
    /// empty for Slurm.
    pub processes: Vec<std::process::Child>,
    /// One line for humans: what was submitted, and where.
    pub note: String,
    /// How often a waiting caller should look again.
    pub poll: Duration,
}

/// Why a backend could not launch, observe or stop children.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// State could not be read or written.
    #[error(transparent)]
    State(#[from] StateError),
    /// A local worker (or wrapper) process could not be started.
    #[error("failed to start local worker {index}")]
    Spawn {
        /// The worker's number.
        index: u64,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The claim order is not a permutation of the children.
    #[error("invalid claim order: {0}")]
    Order(String),
    /// The current executable could not be found (to start workers).
    #[error("failed to locate the benchops-exec executable")]
    CurrentExe(#[source] std::io::Error),
    /// The scheduler refused or could not be reached.
    #[error("scheduler error: {0}")]
    Scheduler(String),
    /// A Slurm array task without its task id in the environment.
    #[error("--slurm needs SLURM_ARRAY_TASK_ID in the environment")]
    NoSlurmTask,
}

impl Backend {
    /// Starts every child of `job` and writes its submission record.
    ///
    /// Returns once the children are handed over: local workers are
    /// detached processes and Slurm arrays are queued, so the caller may
    /// exit at once. When Slurm accepts some chunks and then refuses one,
    /// the accepted arrays run regardless: they are recorded, and the error
    /// says how many children they cover.
    pub fn launch(&self, job: &Job<'_>) -> Result<Launched, BackendError> {
        match self {
            Backend::Local(opts) => local::launch(job, opts),
            Backend::Slurm(opts) => slurm::launch(job, opts),
        }
    }
}

/// One look at every backend that a benchmark's submissions went to: the
/// backend evidence of one refresh, taken once and then asked per child.
///
/// A refresh reads the run files of every child first and takes this look
/// after: a result that already existed while the scheduler still said
/// pending is then truly from an earlier run.
#[derive(Debug)]
pub struct Observation {
    now: jiff::Timestamp,
    /// The scheduler snapshot when any submission went to Slurm: one
    /// `squeue` and one `sacct` call for all of their array jobs.
    pub slurm: Option<slurm::Snapshot>,
    /// The claims and workers of each local submission, by attempt.
    local: std::collections::BTreeMap<u32, local::Snapshot>,
}

/// The run directory observed for child `index` of submission `sub`, and
/// its run number: the newest requeue's on Slurm, the newest reclaim's
/// locally (most children have only the first, which one `stat` tells).
pub fn locate(
    state: &StateDir,
    digest: &Sha256Digest,
    sub: &Submission,
    index: u64,
) -> (PathBuf, u32) {
    match &sub.backend {
        BackendHandles::Local { .. }
            if !state.attempt_dir(digest, index, sub.attempt, 1).exists() =>
        {
            (state.attempt_dir(digest, index, sub.attempt, 0), 0)
        }
        _ => state.latest_attempt_dir(digest, index, sub.attempt),
    }
}

/// Takes the one snapshot of a refresh, covering every submission in
/// `subs` of benchmark `digest`; the scheduler calls are bounded by `opts`.
/// Local evidence is the claims of the attempt and whether their workers
/// live (`/proc`); for the newest local submission the look also restarts
/// the workers its queue still needs ([`local::Snapshot::resume`]): that is
/// how a local run goes on after a worker died, without a resident
/// controller.
pub fn observe(
    state: &StateDir,
    digest: &Sha256Digest,
    subs: &[Submission],
    opts: &SchedulerOptions,
) -> Observation {
    let chunks: Vec<SlurmChunk> = subs
        .iter()
        .flat_map(|s| match &s.backend {
            BackendHandles::Slurm { chunks, .. } => chunks.as_slice(),
            BackendHandles::Local { .. } => &[],
        })
        .cloned()
        .collect();
    let slurm = (!chunks.is_empty()).then(|| slurm::Snapshot::take(&chunks, opts));
    let mut local = std::collections::BTreeMap::new();
    for sub in subs {
        if matches!(sub.backend, BackendHandles::Local { .. }) {
            local.insert(sub.attempt, local::Snapshot::take(state, digest, sub));
        }
    }
    if let Some(newest) = subs.last()
        && let Some(snap) = local.get_mut(&newest.attempt)
    {
        snap.resume(state, digest, newest);
    }
    Observation {
        now: jiff::Timestamp::now(),
        slurm,
        local,
    }
}

impl Observation {
    /// The time the snapshot stands for: when it was complete.
    pub fn now(&self) -> jiff::Timestamp {
        self.now
    }

    /// What the backend says about child `index` of submission `sub`;
    /// `started` is whether its `started` marker existed when the files
    /// were read.
    pub fn backend(&self, sub: &Submission, index: u64, started: bool) -> BackendEvidence {
        match &sub.backend {
            BackendHandles::Local { .. } => match self.local.get(&sub.attempt) {
                Some(snap) => snap.evidence(index, started),
                None => BackendEvidence::Unknown("no look at the local workers".into()),
            },
            BackendHandles::Slurm { chunks, .. } => {
                slurm::evidence(self.slurm.as_ref(), sub, chunks, index, self.now)
            }
        }
    }

    /// How often the backend restarted the task of child `index` of
    /// submission `sub`, so which run its evidence describes: the run
    /// files of an earlier run are no evidence for it. Locally, the
    /// generation of the child's newest claim (a reclaim after its worker
    /// died); on Slurm, what accounting says (`None` when it says nothing,
    /// see [`slurm::Snapshot::restarts`]).
    pub fn restarts(&self, sub: &Submission, index: u64) -> Option<u32> {
        match &sub.backend {
            BackendHandles::Local { .. } => Some(
                self.local
                    .get(&sub.attempt)
                    .map_or(0, |snap| snap.restarts(index)),
            ),
            BackendHandles::Slurm { chunks, .. } => self
                .slurm
                .as_ref()
                .and_then(|snap| snap.restarts(chunks, index, sub)),
        }
    }
}

/// Cancels submission `sub`: records the cancellation of its attempt first
/// (so that children that have not started yet will not start), then stops
/// what still runs. Returns what was signalled, for the record.
pub fn cancel(
    state: &StateDir,
    digest: &Sha256Digest,
    sub: &Submission,
    opts: &SchedulerOptions,
) -> Result<Vec<String>, BackendError> {
    match &sub.backend {
        BackendHandles::Local { .. } => local::cancel(state, digest, sub),
        BackendHandles::Slurm { chunks, .. } => slurm::cancel(state, digest, sub, chunks, opts),
    }
}

/// The executor of a sealed record: the backend of the latest submission,
/// or this host when there is none.
pub fn executor(latest: Option<&Submission>) -> Executor {
    match latest.map(|s| &s.backend) {
        Some(BackendHandles::Slurm { cluster, chunks }) => Executor::Slurm {
            cluster: cluster.clone(),
            job_ids: chunks.iter().map(|c| c.job_id.clone()).collect(),
        },
        Some(BackendHandles::Local { host, .. }) => Executor::Local { host: host.clone() },
        None => Executor::Local {
            host: state::host_name(),
        },
    }
}

/// Which child a wrapper process runs, as its backend launched it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// One child named on the command line (`child --index`), run once
    /// outside any worker, for debugging.
    Local {
        /// The child index.
        index: u64,
    },
    /// A Slurm array task: child `first_index + $SLURM_ARRAY_TASK_ID`, run
    /// `$SLURM_RESTART_COUNT` (a fresh directory per requeue).
    Slurm {
        /// The child index of array task 0.
        first_index: u64,
    },
}

impl Task {
    /// The child index and the restart (requeue) number.
    pub fn resolve(self) -> Result<(u64, u32), BackendError> {
        match self {
            Task::Local { index } => Ok((index, 0)),
            Task::Slurm { first_index } => slurm::task_from_env()
                .map(|(task, restart)| (first_index + task, restart))
                .ok_or(BackendError::NoSlurmTask),
        }
    }
}

/// Writes the cancellation record of `sub`'s attempt, naming what will be
/// signalled (create-only: a second cancel keeps the first record).
fn record_cancel(
    state: &StateDir,
    digest: &Sha256Digest,
    sub: &Submission,
    what: &str,
) -> Result<(), StateError> {
    let record = Cancellation {
        schema: CANCEL_SCHEMA.into(),
        requested_at: state::now_rfc3339(),
        actions: vec![what.into()],
    };
    state.write_cancel(digest, sub.attempt, &record)
}
