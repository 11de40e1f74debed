//! The state directory: everything a later, fresh process needs to observe a
//! benchmark. A new attempt or a cancellation is a new file, never an edit.
//!
//! ```text
//! <state>/benchmarks/<hex>/benchmark.json           the record: canonical intent, counts, cases
//! <state>/benchmarks/<hex>/children.sha256          child digests, one fixed-width line per index
//! <state>/benchmarks/<hex>/submissions/<NNNN>.claim claims attempt NNNN before anything starts
//! <state>/benchmarks/<hex>/submissions/<NNNN>.json  the submission record of attempt NNNN
//! <state>/benchmarks/<hex>/runs/<index>/<attempt>/  started.json, result.json (with output tails)
//! <state>/benchmarks/<hex>/runs/<index>/<attempt>.r<N>/  the same, for Slurm requeue N or local reclaim N
//! <state>/benchmarks/<hex>/cancel-<NNNN>.json       the cancellation of attempt NNNN, if any
//! <state>/benchmarks/<hex>/attempts/<NNNN>/         local workers: claims/, workers/, slots/, logs/
//! <state>/benchmarks/<hex>/slurm/                   batch scripts and Slurm output files
//! ```
//!
//! The benchmark record, child digests, claims, submissions and
//! cancellations are create-only. A run's `started.json` and `result.json`
//! are written by the one process that owns the run directory (a local
//! worker holding the child's claim, or a Slurm task), each atomically
//! (temporary file, rename; `result.json` with fsyncs).

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

use benchops::Sha256Digest;
use benchops::fsio::{self, Created};
use benchops::intent::{self, LoadedIntent};
use benchops::plan::{self, Plan};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Schema id of the benchmark record.
pub const RECORD_SCHEMA: &str = "benchops-benchmark-record/v1";
/// Schema id of a submission record.
pub const SUBMISSION_SCHEMA: &str = "benchops-submission/v1";
/// Schema id of a cancellation record.
pub const CANCEL_SCHEMA: &str = "benchops-cancel/v1";

/// Errors reading or writing state.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// A file could not be read.
    #[error("failed to read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not what it should be.
    #[error("state file {path} is corrupt: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A directory could not be created (an unwritable state directory).
    #[error("failed to create {path}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A write failed.
    #[error(transparent)]
    Write(#[from] fsio::WriteError),
    /// No benchmark with that digest (or prefix) exists.
    #[error(
        "no benchmark {id} in the state directory {dir}: {why}; `benchops-exec --state {dir} bench list` lists the benchmarks there"
    )]
    UnknownBenchmark {
        /// The id as given.
        id: String,
        /// The state directory.
        dir: String,
        /// Why it names none.
        why: String,
    },
    /// A digest prefix matches several benchmarks.
    #[error("benchmark prefix {0} is ambiguous")]
    Ambiguous(String),
    /// The state directory's lock was held for too long.
    #[error(
        "the state directory's lock {path} was held for {waited_s} s by {by}; nothing was changed: try again later"
    )]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// How long it waited.
        waited_s: u64,
        /// Who holds it.
        by: &'static str,
    },
}

/// The state directory's lock file (`gc.lock`): held shared by lane runs
/// and submitters while they create and name benchmarks ([`StateUse`]),
/// exclusive by `benchops-exec gc` while it decides what to remove
/// ([`crate::gc`]).
pub const USE_LOCK_FILE: &str = "gc.lock";

/// How long a lane run waits for a `gc` that is deciding, and `gc` for
/// the lane runs to let go.
pub const USE_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// A hold on the state directory by a lane run or a submitter:
/// [`USE_LOCK_FILE`] shared, so that `gc` does not decide while a
/// benchmark just created is named by nothing yet. Released when dropped
/// or when the process dies.
#[derive(Debug)]
pub struct StateUse {
    _lock: nix::fcntl::Flock<fs::File>,
}

impl StateUse {
    /// Takes the lock shared, waiting at most [`USE_LOCK_WAIT`] for a
    /// `gc` that is deciding.
    pub fn hold(state: &StateDir) -> Result<StateUse, StateError> {
        lock_use(state, nix::fcntl::FlockArg::LockSharedNonblock, "a gc")
            .map(|l| StateUse { _lock: l })
    }
}

/// Takes [`USE_LOCK_FILE`] as `how`, waiting at most [`USE_LOCK_WAIT`];
/// `by` names who holds it otherwise, for the error.
pub fn lock_use(
    state: &StateDir,
    how: nix::fcntl::FlockArg,
    by: &'static str,
) -> Result<nix::fcntl::Flock<fs::File>, StateError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = state.root().join(USE_LOCK_FILE);
    state.mkdir(state.root())?;
    let start = std::time::Instant::now();
    loop {
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|source| StateError::Read {
                path: path.clone(),
                source,
            })?;
        match nix::fcntl::Flock::lock(file, how) {
            Ok(l) => return Ok(l),
            Err((_, nix::errno::Errno::EWOULDBLOCK | nix::errno::Errno::EINTR)) => {
                if start.elapsed() >= USE_LOCK_WAIT {
                    return Err(StateError::Busy {
                        path,
                        waited_s: USE_LOCK_WAIT.as_secs(),
                        by,
                    });
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err((_, errno)) => {
                return Err(StateError::Read {
                    path,
                    source: errno.into(),
                });
            }
        }
    }
}

/// The immutable benchmark record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchmarkRecord {
    /// Always [`RECORD_SCHEMA`].
    pub schema: String,
    /// The benchmark digest.
    pub digest: Sha256Digest,
    /// The intent's digest.
    pub intent_digest: Sha256Digest,
    /// The canonical intent.
    pub intent: Value,
    /// Where the intent came from (a file name, for humans).
    pub intent_source: String,
    /// Number of children.
    pub child_count: u64,
    /// Runs per parameter point.
    pub runs_per_point: u64,
    /// Case ids in expansion order.
    pub cases: Vec<String>,
    /// When it was planned (RFC 3339 UTC).
    pub created_at: String,
}

/// A submission attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Submission {
    /// Always [`SUBMISSION_SCHEMA`].
    pub schema: String,
    /// The benchmark.
    pub benchmark: Sha256Digest,
    /// Attempt number, from 1.
    pub attempt: u32,
    /// When it was submitted (RFC 3339 UTC).
    pub submitted_at: String,
    /// The child indices this attempt covers.
    pub indices: IndexSet,
    /// Backend handles.
    pub backend: BackendHandles,
}

/// A set of child indices, stored compactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum IndexSet {
    /// `0..count`.
    Range {
        /// Exclusive end.
        count: u64,
    },
    /// An explicit list.
    List {
        /// The indices.
        indices: Vec<u64>,
    },
}

impl IndexSet {
    /// Whether `i` is in the set.
    pub fn contains(&self, i: u64) -> bool {
        match self {
            IndexSet::Range { count } => i < *count,
            IndexSet::List { indices } => indices.contains(&i),
        }
    }

    /// The indices in order.
    pub fn to_vec(&self) -> Vec<u64> {
        match self {
            IndexSet::Range { count } => (0..*count).collect(),
            IndexSet::List { indices } => indices.clone(),
        }
    }
}

/// A local worker process: enough to tell a live process from pid reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalHandle {
    /// The worker's pid.
    pub pid: u32,
    /// The worker's start time in clock ticks since boot (`/proc/PID/stat`
    /// field 22).
    pub start_ticks: u64,
}

/// How a submission reached its backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum BackendHandles {
    /// Local worker processes: at most `slots` at once, each claiming the
    /// next child of `order` until none is left.
    Local {
        /// Host they run on.
        host: String,
        /// Concurrency slots: how many workers (so children) run at once.
        slots: u32,
        /// The program the workers run (`benchops-exec worker`); a refresh
        /// that restarts a missing worker starts this one.
        exe: PathBuf,
        /// The workers the launch started. Workers started later by a
        /// refresh name themselves in `attempts/<NNNN>/workers/`.
        workers: Vec<LocalHandle>,
        /// The order in which workers claim children, a permutation of the
        /// submission's indices; the indices' own (plan) order when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        order: Option<Vec<u64>>,
    },
    /// Slurm job arrays.
    Slurm {
        /// Cluster name.
        cluster: String,
        /// One array job per chunk.
        chunks: Vec<SlurmChunk>,
    },
}

/// One Slurm array job: task `t` runs child `first_index + t`... via `indices[t]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmChunk {
    /// The array job id (`JobIDRaw` of the array).
    pub job_id: String,
    /// Child index of array task 0; task `t` is child `first_index + t`.
    pub first_index: u64,
    /// Number of tasks.
    pub tasks: u64,
}

/// The cancellation record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cancellation {
    /// Always [`CANCEL_SCHEMA`].
    pub schema: String,
    /// When it was requested.
    pub requested_at: String,
    /// What was signalled, for the record.
    pub actions: Vec<String>,
}

/// A state directory.
#[derive(Debug, Clone)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// Opens (without creating) a state directory.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of one benchmark.
    pub fn benchmark_dir(&self, digest: &Sha256Digest) -> PathBuf {
        self.root.join("benchmarks").join(digest.hex())
    }

    /// The directory of one run of an attempt of one child:
    /// `runs/<index>/<attempt>` for the first run (`restart` 0, and every
    /// local run), `runs/<index>/<attempt>.r<restart>` for Slurm requeue
    /// `restart`. Each requeue gets its own directory, so an older run's
    /// files are never overwritten and stay visible as superseded evidence.
    pub fn attempt_dir(
        &self,
        digest: &Sha256Digest,
        index: u64,
        attempt: u32,
        restart: u32,
    ) -> PathBuf {
        let runs = self
            .benchmark_dir(digest)
            .join("runs")
            .join(index.to_string());
        if restart == 0 {
            runs.join(attempt.to_string())
        } else {
            runs.join(format!("{attempt}.r{restart}"))
        }
    }

    /// The newest run directory of an attempt that exists, and its restart
    /// number (0 when there is none beyond the first run).
    pub fn latest_attempt_dir(
        &self,
        digest: &Sha256Digest,
        index: u64,
        attempt: u32,
    ) -> (PathBuf, u32) {
        let base = self.attempt_dir(digest, index, attempt, 0);
        let mut best = (base.clone(), 0);
        if let Some(parent) = base.parent()
            && let Ok(rd) = fs::read_dir(parent)
        {
            let prefix = format!("{attempt}.r");
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(n) = name
                    .strip_prefix(&prefix)
                    .and_then(|n| n.parse::<u32>().ok())
                    && n > best.1
                {
                    best = (e.path(), n);
                }
            }
        }
        best
    }

    /// Resolves a full digest or a unique hex prefix (at least 8 digits).
    pub fn resolve(&self, text: &str) -> Result<Sha256Digest, StateError> {
        if let Ok(d) = text.parse::<Sha256Digest>() {
            return Ok(d);
        }
        let hex = text.strip_prefix("sha256:").unwrap_or(text);
        if let Ok(d) = Sha256Digest::from_hex(hex) {
            return Ok(d);
        }
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.unknown(
                text,
                "an id is the benchmark's sha256 digest, or a prefix of at least 8 of its hex digits (a commit id is not one)",
            ));
        }
        if hex.len() < 8 {
            return Err(self.unknown(text, "a prefix needs at least 8 hex digits"));
        }
        let dir = self.root.join("benchmarks");
        let mut found = Vec::new();
        if let Ok(rd) = fs::read_dir(&dir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with(hex) {
                    found.push(name);
                }
            }
        }
        match found.as_slice() {
            [one] => Sha256Digest::from_hex(one)
                .map_err(|_| self.unknown(text, "its directory name is not a digest")),
            [] => Err(self.unknown(text, "no benchmark digest starts with it")),
            _ => Err(StateError::Ambiguous(text.to_owned())),
        }
    }

    /// The error for an id that names no benchmark here.
    fn unknown(&self, id: &str, why: &str) -> StateError {
        StateError::UnknownBenchmark {
            id: benchops::terminal::escape_bounded(id, 100),
            dir: benchops::terminal::shown_path(&self.root),
            why: why.to_owned(),
        }
    }

    fn mkdir(&self, p: &Path) -> Result<(), StateError> {
        fs::create_dir_all(p).map_err(|source| StateError::CreateDir {
            path: p.to_path_buf(),
            source,
        })
    }

    /// Persists a plan: `benchmark.json` and `children.sha256`, create-only.
    /// Planning the same intent again is a no-op.
    pub fn persist_plan(
        &self,
        plan: &Plan,
        digests: &[Sha256Digest],
        digest: &Sha256Digest,
        intent_source: &str,
        now: &str,
    ) -> Result<BenchmarkRecord, StateError> {
        let dir = self.benchmark_dir(digest);
        self.mkdir(&dir)?;
        let mut lines = Vec::with_capacity(digests.len() * 65);
        for d in digests {
            lines.extend_from_slice(d.hex().as_bytes());
            lines.push(b'\n');
        }
        fsio::write_create_only(&dir.join("children.sha256"), &lines)?;
        let record = BenchmarkRecord {
            schema: RECORD_SCHEMA.into(),
            digest: *digest,
            intent_digest: plan.intent().digest,
            intent: plan.intent().canonical.clone(),
            intent_source: intent_source.to_owned(),
            child_count: plan.len(),
            runs_per_point: plan.runs_per_point(),
            cases: plan.cases().map(ToString::to_string).collect(),
            created_at: now.to_owned(),
        };
        let path = dir.join("benchmark.json");
        match fs::read(&path) {
            // Already planned: keep the first record (its created_at wins).
            Ok(_) => self.load_record(digest),
            Err(_) => {
                let bytes = pretty(&record);
                match fsio::write_create_only(&path, &bytes) {
                    Ok(Created::New | Created::AlreadyPresent) => Ok(record),
                    Err(fsio::WriteError::Conflict { .. }) => self.load_record(digest),
                    Err(e) => Err(e.into()),
                }
            }
        }
    }

    /// Loads the benchmark record.
    pub fn load_record(&self, digest: &Sha256Digest) -> Result<BenchmarkRecord, StateError> {
        let path = self.benchmark_dir(digest).join("benchmark.json");
        if !path.exists() {
            return Err(self.unknown(&digest.to_string(), "it was never planned here"));
        }
        let rec: BenchmarkRecord = read_json(&path)?;
        if rec.schema != RECORD_SCHEMA || rec.digest != *digest {
            return Err(StateError::Corrupt {
                path,
                reason: "schema or digest does not match the directory".into(),
            });
        }
        Ok(rec)
    }

    /// Re-plans a benchmark from its record and checks the plan against the
    /// stored digests.
    pub fn load_plan(&self, digest: &Sha256Digest) -> Result<(BenchmarkRecord, Plan), StateError> {
        let rec = self.load_record(digest)?;
        let path = self.benchmark_dir(digest).join("benchmark.json");
        let corrupt = |reason: String| StateError::Corrupt {
            path: path.clone(),
            reason,
        };
        let loaded: LoadedIntent = intent::from_json_value(&rec.intent, &rec.intent_source)
            .map_err(|e| corrupt(e.to_string()))?;
        let plan = plan::plan(loaded).map_err(|e| corrupt(e.to_string()))?;
        if plan.len() != rec.child_count {
            return Err(corrupt(
                "child count differs from the re-planned intent".into(),
            ));
        }
        Ok((rec, plan))
    }

    /// Reads the stored digest of child `index` (one seek, no full read).
    pub fn stored_child_digest(
        &self,
        digest: &Sha256Digest,
        index: u64,
    ) -> Result<Sha256Digest, StateError> {
        let path = self.benchmark_dir(digest).join("children.sha256");
        let mut f = fs::File::open(&path).map_err(|source| StateError::Read {
            path: path.clone(),
            source,
        })?;
        let mut line = [0u8; 65];
        f.seek(SeekFrom::Start(index * 65))
            .and_then(|_| f.read_exact(&mut line))
            .map_err(|source| StateError::Read {
                path: path.clone(),
                source,
            })?;
        let hex = std::str::from_utf8(&line[..64]).unwrap_or("");
        Sha256Digest::from_hex(hex).map_err(|e| StateError::Corrupt {
            path,
            reason: format!("line {index}: {e}"),
        })
    }

    /// Writes submission `attempt` create-only.
    pub fn write_submission(&self, s: &Submission) -> Result<PathBuf, StateError> {
        let dir = self.benchmark_dir(&s.benchmark).join("submissions");
        self.mkdir(&dir)?;
        let path = dir.join(format!("{:04}.json", s.attempt));
        fsio::write_create_only(&path, &pretty(s))?;
        Ok(path)
    }

    /// All submissions, oldest first.
    pub fn submissions(&self, digest: &Sha256Digest) -> Result<Vec<Submission>, StateError> {
        let dir = self.benchmark_dir(digest).join("submissions");
        let mut out = Vec::new();
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(source) => return Err(StateError::Read { path: dir, source }),
        };
        let mut paths: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        for p in paths {
            out.push(read_json(&p)?);
        }
        Ok(out)
    }

    /// Claims the next free attempt number by creating
    /// `submissions/<NNNN>.claim` with `create_new`, before anything is
    /// started. Two submitters never get the same number, and a submitter
    /// that dies before writing its submission record still leaves its
    /// number taken.
    pub fn claim_attempt(&self, digest: &Sha256Digest) -> Result<u32, StateError> {
        let dir = self.benchmark_dir(digest).join("submissions");
        self.mkdir(&dir)?;
        let mut highest = 0u32;
        let rd = fs::read_dir(&dir).map_err(|source| StateError::Read {
            path: dir.clone(),
            source,
        })?;
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(n) = name.split('.').next().and_then(|n| n.parse::<u32>().ok()) {
                highest = highest.max(n);
            }
        }
        let mut n = highest + 1;
        loop {
            let path = dir.join(format!("{n:04}.claim"));
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(_) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
                Err(source) => return Err(StateError::CreateDir { path, source }),
            }
        }
    }

    /// Records the cancellation of one attempt (create-only; a second cancel
    /// keeps the first). A later attempt is not affected.
    pub fn write_cancel(
        &self,
        digest: &Sha256Digest,
        attempt: u32,
        c: &Cancellation,
    ) -> Result<(), StateError> {
        let path = self
            .benchmark_dir(digest)
            .join(format!("cancel-{attempt:04}.json"));
        match fsio::write_create_only(&path, &pretty(c)) {
            Ok(_) | Err(fsio::WriteError::Conflict { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The directory of one local attempt's workers:
    /// `attempts/<NNNN>/` (see [`crate::backend::local`]).
    pub fn local_attempt_dir(&self, digest: &Sha256Digest, attempt: u32) -> PathBuf {
        self.benchmark_dir(digest)
            .join("attempts")
            .join(format!("{attempt:04}"))
    }

    /// Whether attempt `attempt` was cancelled.
    pub fn is_cancelled(&self, digest: &Sha256Digest, attempt: u32) -> bool {
        self.benchmark_dir(digest)
            .join(format!("cancel-{attempt:04}.json"))
            .exists()
    }

    /// Lists benchmark digests in the state directory.
    pub fn list(&self) -> Vec<Sha256Digest> {
        let mut out: Vec<Sha256Digest> = fs::read_dir(self.root.join("benchmarks"))
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| Sha256Digest::from_hex(&e.file_name().to_string_lossy()).ok())
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }
}

/// Pretty JSON with a trailing newline, for human-readable state files.
pub fn pretty<T: Serialize>(v: &T) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).unwrap_or_default();
    b.push(b'\n');
    b
}

/// Reads and parses a JSON state file, naming the file on error.
pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, StateError> {
    let bytes = fs::read(path).map_err(|source| StateError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|e| StateError::Corrupt {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// RFC 3339 UTC now, with microseconds: the time stamp of every state
/// record.
pub fn now_rfc3339() -> String {
    let ts = jiff::Timestamp::now();
    format!("{ts:.6}")
}

/// The host name, or `unknown` where a record can do without it.
pub fn host_name() -> String {
    try_host_name().unwrap_or_else(|_| "unknown".into())
}

/// The host name (lossy UTF-8), or why it could not be read: where the
/// host is evidence (a child's `started.json`), an error rather than a
/// stand-in.
pub fn try_host_name() -> Result<String, nix::errno::Errno> {
    Ok(nix::unistd::gethostname()?.to_string_lossy().into_owned())
}

/// Reads `BTreeMap` facts about the machine for environment fingerprints.
pub fn machine_facts() -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    f.insert("os".into(), std::env::consts::OS.into());
    f.insert("arch".into(), std::env::consts::ARCH.into());
    f.insert(
        "cpus".into(),
        std::thread::available_parallelism()
            .map(|n| n.get().to_string())
            .unwrap_or_default(),
    );
    if let Ok(info) = fs::read_to_string("/proc/cpuinfo")
        && let Some(model) = info.lines().find_map(|l| l.strip_prefix("model name"))
    {
        f.insert(
            "cpu_model".into(),
            model.trim_start_matches([' ', '\t', ':']).trim().into(),
        );
    }
    if let Ok(k) = fs::read_to_string("/proc/sys/kernel/osrelease") {
        f.insert("kernel".into(), k.trim().into());
    }
    if let Ok(m) = fs::read_to_string("/proc/meminfo")
        && let Some(total) = m.lines().find_map(|l| l.strip_prefix("MemTotal:"))
    {
        f.insert("mem_total".into(), total.trim().into());
    }
    f
}
