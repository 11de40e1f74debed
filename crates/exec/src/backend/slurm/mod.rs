//! The Slurm backend: the same plan, record and state contracts as the local
//! backend, with Slurm job arrays doing the running and `squeue`/`sacct`
//! (or `scontrol`) as the backend evidence. No resident controller: submit
//! returns after `sbatch`, and a later process takes one snapshot of the
//! scheduler per refresh.
//!
//! # Evidence order and grace
//!
//! Accounting lags: for a few seconds after submission `sacct` knows nothing
//! of an array, running tasks may stay folded in the pending-range row, and
//! the last tasks can be missing right after they end. `squeue` is accurate
//! at once for active tasks. So, per task:
//!
//! 1. an active `squeue` row decides pending or running;
//! 2. otherwise a terminal `sacct` row (or `scontrol` when accounting is
//!    disabled) decides finished-ok or finished-failed;
//! 3. otherwise, within [`VISIBILITY_GRACE_S`] of the submission, the task is
//!    not yet visible: incomplete, never failed or missing;
//! 4. otherwise the scheduler does not know it: gone (missing, or
//!    scheduler-inconsistent when its `started` marker exists).

pub mod parse;
pub mod tools;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use benchops::Sha256Digest;
use benchops::classify::BackendEvidence;
use serde::Serialize;

use super::{BackendError, Job, Launched, record_cancel};
use crate::state::{BackendHandles, SlurmChunk, StateDir, StateError, Submission};
use parse::{SACCT_FORMAT, SQUEUE_FORMAT, SacctRow, SlurmState, SqueueRow, Tasks};
pub use tools::SchedulerOptions;

/// Seconds after submission during which a task unknown to every tool is
/// still taken as "not yet visible" rather than missing.
pub const VISIBILITY_GRACE_S: f64 = 120.0;

/// How often a waiting caller asks the scheduler again, at most.
const POLL: Duration = Duration::from_secs(2);

/// Slurm submission options (command-line values win over the intent's).
#[derive(Debug, Clone, Default)]
pub struct SlurmOptions {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--account`.
    pub account: Option<String>,
    /// The `%throttle` of `--array`.
    pub throttle: Option<u32>,
    /// Largest array per sbatch call; when `None`, 1001 tasks (Slurm's
    /// default `MaxArraySize`) unless `scontrol show config` says more, which
    /// is asked only when the benchmark is larger.
    pub max_array_size: Option<u64>,
    /// The `benchops-exec` binary the tasks run; the current executable when
    /// `None`.
    pub exe: Option<PathBuf>,
    /// How `sbatch` and `scontrol` are called.
    pub scheduler: SchedulerOptions,
}

/// Errors of the Slurm tools.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// A tool could not be started (Slurm not installed?).
    #[error("failed to run {tool}; is Slurm installed and on PATH?")]
    Start {
        /// The tool.
        tool: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A tool exited non-zero.
    #[error("{tool} failed with {status}: {stderr}")]
    Failed {
        /// The tool.
        tool: String,
        /// Its exit status.
        status: String,
        /// Its stderr (trimmed).
        stderr: String,
    },
    /// A tool did not finish within its timeout; it was killed.
    #[error("{tool} timed out after {} s and was killed (--scheduler-timeout)", after.as_secs_f64())]
    TimedOut {
        /// The tool.
        tool: String,
        /// The timeout.
        after: Duration,
    },
    /// A tool printed more than benchops reads.
    #[error("{tool} printed more than {limit} bytes")]
    TooLarge {
        /// The tool.
        tool: String,
        /// The limit.
        limit: u64,
    },
    /// sbatch printed something that is not a job id.
    #[error("sbatch printed {0:?}, not a job id")]
    BadJobId(String),
}

/// Runs a Slurm tool, bounded by `opts`, and returns what it printed.
fn tool(
    program: &str,
    args: &[String],
    opts: &SchedulerOptions,
) -> Result<tools::ToolOutput, SlurmError> {
    tools::run(program, args, opts)
}

/// Runs a Slurm tool, bounded by `opts`, and returns its standard output,
/// or an error naming the tool when it exits non-zero.
pub(crate) fn tool_ok(
    program: &str,
    args: &[String],
    opts: &SchedulerOptions,
) -> Result<String, SlurmError> {
    let out = tool(program, args, opts)?;
    if !out.status.success() {
        return Err(failed(program, &out));
    }
    Ok(out.stdout)
}

fn failed(program: &str, out: &tools::ToolOutput) -> SlurmError {
    SlurmError::Failed {
        tool: program.into(),
        status: out.status.to_string(),
        stderr: out.stderr.clone(),
    }
}

/// Submits every child of `job` as Slurm job arrays, one sbatch call per
/// chunk of at most `MaxArraySize` tasks, and writes the submission record.
/// Returns right after sbatch.
pub(super) fn launch(job: &Job<'_>, opts: &SlurmOptions) -> Result<Launched, BackendError> {
    let state = job.state;
    let digest = job.digest;
    let attempt = job.attempt;
    let intent = &job.plan.intent().intent;
    let count = job.plan.len();
    let exe = match &opts.exe {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(BackendError::CurrentExe)?,
    };
    let max = match opts.max_array_size {
        Some(m) => m.max(1),
        None if count <= 1001 => 1001,
        None => max_array_size(&opts.scheduler).unwrap_or(1001),
    };
    let root = std::fs::canonicalize(state.root()).unwrap_or_else(|_| state.root().to_path_buf());
    let bdir = root.join("benchmarks").join(digest.hex());
    let sdir = bdir.join("slurm");
    std::fs::create_dir_all(&sdir).map_err(|source| StateError::CreateDir {
        path: sdir.clone(),
        source,
    })?;
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let throttle = opts.throttle.or(intent.slurm.throttle);
    let partition = opts
        .partition
        .clone()
        .or_else(|| intent.slurm.partition.clone());
    let account = opts
        .account
        .clone()
        .or_else(|| intent.slurm.account.clone());
    let mut chunks = Vec::new();
    let mut first = 0u64;
    let mut calls = 0u32;
    let mut k = 0u32;
    while first < count {
        let tasks = (count - first).min(max);
        let mut script = String::from("#!/bin/sh\n");
        let mut directive = |s: String| {
            script.push_str("#SBATCH ");
            script.push_str(&s);
            script.push('\n');
        };
        directive(format!("--job-name={}", job_name(&digest)));
        directive(match throttle {
            Some(t) => format!("--array=0-{}%{t}", tasks - 1),
            None => format!("--array=0-{}", tasks - 1),
        });
        directive(format!("--output={}/%A_%a.out", sdir.display()));
        directive(format!("--error={}/%A_%a.err", sdir.display()));
        directive(format!("--chdir={}", cwd.display()));
        if let Some(c) = intent.resources.cpus {
            directive(format!("--cpus-per-task={c}"));
        }
        if let Some(m) = intent.resources.memory_mb {
            directive(format!("--mem={m}M"));
        }
        if let Some(t) = intent.resources.time_s {
            // Slurm limits are whole minutes; round up.
            directive(format!("--time={}", t.div_ceil(60).max(1)));
        }
        if let Some(p) = &partition {
            directive(format!("--partition={p}"));
        }
        if let Some(a) = &account {
            directive(format!("--account={a}"));
        }
        script.push_str(&format!(
            "exec {} --state {} child --benchmark {} --attempt {attempt} --first-index {first} --slurm\n",
            shell_quote(&exe.display().to_string()),
            shell_quote(&root.display().to_string()),
            digest.hex(),
        ));
        let path = sdir.join(format!("attempt-{attempt}-chunk-{k}.sh"));
        benchops::fsio::write_atomic(&path, script.as_bytes()).map_err(StateError::from)?;
        calls += 1;
        let job_id = match tool_ok(
            "sbatch",
            &["--parsable".into(), path.display().to_string()],
            &opts.scheduler,
        ) {
            Ok(out) => {
                let id = out.trim().split(';').next().unwrap_or("").to_owned();
                if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
                    Err(SlurmError::BadJobId(out.trim().to_owned()))
                } else {
                    Ok(id)
                }
            }
            Err(e) => Err(e),
        };
        let job_id = match job_id {
            Ok(id) => id,
            Err(e) => {
                // Arrays already accepted run regardless: record them, so
                // that status, analyze and cancel can see them.
                if !chunks.is_empty() {
                    job.record(first, handles(&chunks))?;
                }
                return Err(BackendError::Scheduler(format!(
                    "{e} (after {} of {count} children were submitted as attempt {attempt})",
                    first
                )));
            }
        };
        chunks.push(SlurmChunk {
            job_id,
            first_index: first,
            tasks,
        });
        first += tasks;
        k += 1;
    }
    let submission = job.record(count, handles(&chunks))?;
    let jobs: Vec<&str> = chunks.iter().map(|c| c.job_id.as_str()).collect();
    Ok(Launched {
        submission,
        processes: Vec::new(),
        note: format!(
            "submitted {count} children (attempt {attempt}) to Slurm as array job(s) {} ({calls} sbatch call(s))",
            jobs.join(", ")
        ),
        poll: POLL,
    })
}

/// A follow-up batch job: a `benchops-exec` command that Slurm starts once
/// every job in `after` has ended, whatever its outcome
/// (`--dependency=afterany:...`), or after `begin_after_s` seconds when
/// `after` is empty. The script, its output and its error go to `dir`.
/// Returns the job id.
pub fn submit_follow_up(
    dir: &std::path::Path,
    name: &str,
    args: &[String],
    after: &[String],
    begin_after_s: Option<u64>,
    opts: &SlurmOptions,
) -> Result<String, BackendError> {
    let exe = match &opts.exe {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(BackendError::CurrentExe)?,
    };
    std::fs::create_dir_all(dir).map_err(|source| StateError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })?;
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut script = String::from("#!/bin/sh\n");
    let mut directive = |s: String| {
        script.push_str("#SBATCH ");
        script.push_str(&s);
        script.push('\n');
    };
    directive(format!("--job-name={name}"));
    directive(format!("--output={}/%j.out", dir.display()));
    directive(format!("--error={}/%j.err", dir.display()));
    directive(format!("--chdir={}", cwd.display()));
    directive("--ntasks=1".into());
    if !after.is_empty() {
        directive(format!("--dependency=afterany:{}", after.join(":")));
    }
    if let Some(s) = begin_after_s {
        directive(format!("--begin=now+{s}"));
    }
    if let Some(p) = &opts.partition {
        directive(format!("--partition={p}"));
    }
    if let Some(a) = &opts.account {
        directive(format!("--account={a}"));
    }
    let mut line = format!("exec {}", shell_quote(&exe.display().to_string()));
    for a in args {
        line.push(' ');
        line.push_str(&shell_quote(a));
    }
    script.push_str(&line);
    script.push('\n');
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let path = dir.join(format!("follow-up-{stamp}.sh"));
    benchops::fsio::write_atomic(&path, script.as_bytes()).map_err(StateError::from)?;
    let out = tool_ok(
        "sbatch",
        &["--parsable".into(), path.display().to_string()],
        &opts.scheduler,
    )
    .map_err(|e| BackendError::Scheduler(e.to_string()))?;
    let id = out.trim().split(';').next().unwrap_or("").to_owned();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BackendError::Scheduler(
            SlurmError::BadJobId(out.trim().to_owned()).to_string(),
        ));
    }
    Ok(id)
}

/// The job ids of a Slurm submission's arrays.
pub fn array_job_ids(sub: &Submission) -> Vec<String> {
    match &sub.backend {
        BackendHandles::Slurm { chunks, .. } => chunks.iter().map(|c| c.job_id.clone()).collect(),
        BackendHandles::Local { .. } => Vec::new(),
    }
}

/// The handles of a Slurm submission: the cluster and its array jobs.
fn handles(chunks: &[SlurmChunk]) -> BackendHandles {
    BackendHandles::Slurm {
        cluster: cluster_name(),
        chunks: chunks.to_vec(),
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The name benchops gives the arrays of a benchmark: `benchops-` and the
/// first 12 hex digits of its digest. Rows of another name are not its
/// evidence (job ids restart when the controller's state is wiped).
pub fn job_name(digest: &Sha256Digest) -> String {
    format!("benchops-{}", &digest.hex()[..12])
}

fn max_array_size(opts: &SchedulerOptions) -> Option<u64> {
    let out = tool_ok("scontrol", &["show".into(), "config".into()], opts).ok()?;
    out.lines()
        .find(|l| l.trim_start().starts_with("MaxArraySize"))
        .and_then(|l| l.split('=').nth(1))
        // Task indices run from 0 to MaxArraySize - 1, so an array may hold
        // MaxArraySize tasks.
        .and_then(|v| v.trim().parse::<u64>().ok())
}

fn cluster_name() -> String {
    std::fs::read_to_string("/etc/slurm/slurm.conf")
        .ok()
        .and_then(|c| {
            c.lines().find_map(|l| {
                let l = l.trim();
                l.strip_prefix("ClusterName=").map(|v| v.trim().to_owned())
            })
        })
        .unwrap_or_else(|| "unknown".into())
}

/// One look at the scheduler, covering every job of a benchmark.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Snapshot {
    /// Scheduler calls made.
    pub calls: u32,
    /// Wall time of those calls, seconds.
    pub seconds: f64,
    /// Raw squeue output.
    pub squeue_raw: String,
    /// Raw sacct (or scontrol) output.
    pub accounting_raw: String,
    /// Which accounting source answered: `sacct`, `scontrol`, or `none`.
    pub accounting_source: String,
    /// Whether every call answered in full: no tool failed or timed out,
    /// and every line parsed.
    pub complete: bool,
    /// Problems talking to the scheduler: failed or timed-out calls and
    /// unparsable lines, each naming its tool.
    pub errors: Vec<String>,
    #[serde(skip)]
    squeue: Vec<SqueueRow>,
    #[serde(skip)]
    sacct: Vec<SacctRow>,
    /// Why squeue's answer is incomplete, if it is.
    #[serde(skip)]
    squeue_problem: Vec<String>,
    /// Why accounting's answer is incomplete, if it is.
    #[serde(skip)]
    accounting_problem: Vec<String>,
    /// The rows by array job and task, built on the first look: each
    /// child's evidence then reads only its own rows, so a refresh grows
    /// linearly with the children, not with children × rows.
    #[serde(skip)]
    index: std::sync::OnceLock<RowIndex>,
}

/// Positions of a snapshot's rows, by what a child looks them up by.
#[derive(Debug, Clone, Default, PartialEq)]
struct RowIndex {
    /// squeue rows with a task, by (array job id, task).
    squeue: std::collections::HashMap<(String, u64), Vec<usize>>,
    /// Accounting rows of one task, by (array job id, task).
    sacct_one: std::collections::HashMap<(String, u64), Vec<usize>>,
    /// Other accounting rows (task ranges, non-array), by array job id.
    sacct_other: std::collections::HashMap<String, Vec<usize>>,
}

impl RowIndex {
    fn build(squeue: &[SqueueRow], sacct: &[SacctRow]) -> RowIndex {
        let mut ix = RowIndex::default();
        for (i, r) in squeue.iter().enumerate() {
            if let Some(t) = r.task {
                ix.squeue
                    .entry((r.array_job_id.clone(), t))
                    .or_default()
                    .push(i);
            }
        }
        for (i, r) in sacct.iter().enumerate() {
            match r.tasks {
                Tasks::One(t) => ix
                    .sacct_one
                    .entry((r.array_job_id.clone(), t))
                    .or_default()
                    .push(i),
                _ => ix
                    .sacct_other
                    .entry(r.array_job_id.clone())
                    .or_default()
                    .push(i),
            }
        }
        ix
    }
}

/// squeue exits 1 with this when no listed job is in the controller's
/// memory any more; so does `scontrol show job` for a purged job. That is
/// an empty answer, not a failure.
fn is_invalid_job_id(out: &tools::ToolOutput) -> bool {
    out.status.code() == Some(1) && out.stderr.contains("Invalid job id")
}

/// The most problems kept per tool answer, and the most characters of each:
/// every child whose class depends on an incomplete answer carries them in
/// its reason, so they must not grow with the tool's output.
const MAX_PROBLEMS: usize = 3;
const MAX_PROBLEM_CHARS: usize = 300;

/// A folded row's id as a reason shows it: at most 64 characters.
fn short_id(id: &str) -> String {
    if id.chars().count() <= 64 {
        id.to_owned()
    } else {
        format!(
            "{}… ({} bytes)",
            id.chars().take(64).collect::<String>(),
            id.len()
        )
    }
}

/// Keeps the first [`MAX_PROBLEMS`] problems, each cut to
/// [`MAX_PROBLEM_CHARS`] characters, and counts the rest.
fn bound_problems(problems: &mut Vec<String>) {
    for p in problems.iter_mut() {
        if p.chars().count() > MAX_PROBLEM_CHARS {
            let total = p.len();
            let cut: String = p.chars().take(MAX_PROBLEM_CHARS).collect();
            *p = format!("{cut}… ({total} bytes)");
        }
    }
    if problems.len() > MAX_PROBLEMS {
        let more = problems.len() - MAX_PROBLEMS;
        problems.truncate(MAX_PROBLEMS);
        problems.push(format!("and {more} more problem(s) like these"));
    }
}

impl Snapshot {
    /// Asks squeue once and sacct once (or scontrol once per array job
    /// when accounting is disabled), each call bounded by `opts`.
    pub fn take(chunks: &[SlurmChunk], opts: &SchedulerOptions) -> Snapshot {
        let started = Instant::now();
        let mut snap = Snapshot::default();
        let ids: Vec<&str> = chunks.iter().map(|c| c.job_id.as_str()).collect();
        let idlist = ids.join(",");
        snap.calls += 1;
        let squeue_args: Vec<String> = vec![
            "-h".into(),
            "-r".into(),
            "-j".into(),
            idlist.clone(),
            "-o".into(),
            SQUEUE_FORMAT.into(),
        ];
        match tool("squeue", &squeue_args, opts) {
            Ok(out) if out.status.success() => {
                let (rows, errors) = parse::squeue_rows(&out.stdout);
                snap.squeue = rows;
                snap.squeue_problem
                    .extend(errors.iter().map(ToString::to_string));
                snap.squeue_raw = out.stdout;
            }
            Ok(out) if is_invalid_job_id(&out) => snap.squeue_raw = out.stdout,
            Ok(out) => snap.squeue_problem.push(failed("squeue", &out).to_string()),
            Err(e) => snap.squeue_problem.push(e.to_string()),
        }
        snap.calls += 1;
        // `-D`: every record of a task, one per run, so that a requeue is
        // seen in accounting too (see `Snapshot::restarts`).
        let sacct_args: Vec<String> = vec![
            "-X".into(),
            "-D".into(),
            "-n".into(),
            "--parsable2".into(),
            "-j".into(),
            idlist,
            format!("--format={SACCT_FORMAT}"),
        ];
        match tool("sacct", &sacct_args, opts) {
            Ok(out) if out.status.success() => {
                snap.accounting_source = "sacct".into();
                let (rows, errors) = parse::sacct_rows(&out.stdout);
                snap.sacct = rows;
                snap.accounting_problem
                    .extend(errors.iter().map(ToString::to_string));
                snap.accounting_raw = out.stdout;
            }
            Ok(out) if out.stderr.contains("accounting storage is disabled") => {
                snap.accounting_source = "scontrol".into();
                for id in &ids {
                    snap.calls += 1;
                    let args = ["-o".into(), "show".into(), "job".into(), (*id).to_owned()];
                    match tool("scontrol", &args, opts) {
                        Ok(out) if out.status.success() => {
                            let (rows, errors) = parse::scontrol_rows_checked(&out.stdout);
                            snap.sacct.extend(rows);
                            snap.accounting_problem.extend(errors);
                            snap.accounting_raw.push_str(&out.stdout);
                        }
                        Ok(out) if is_invalid_job_id(&out) => {}
                        Ok(out) => snap
                            .accounting_problem
                            .push(failed("scontrol", &out).to_string()),
                        Err(e) => snap.accounting_problem.push(e.to_string()),
                    }
                }
            }
            Ok(out) => {
                snap.accounting_source = "none".into();
                snap.accounting_problem
                    .push(failed("sacct", &out).to_string());
            }
            Err(e) => {
                snap.accounting_source = "none".into();
                snap.accounting_problem.push(e.to_string());
            }
        }
        snap.finish();
        snap.seconds = started.elapsed().as_secs_f64();
        snap
    }

    fn finish(&mut self) {
        bound_problems(&mut self.squeue_problem);
        bound_problems(&mut self.accounting_problem);
        self.errors = self
            .squeue_problem
            .iter()
            .chain(&self.accounting_problem)
            .cloned()
            .collect();
        self.complete = self.errors.is_empty();
    }

    /// Builds a snapshot from captured text (for tests and replays); every
    /// line must parse.
    pub fn from_text(squeue: &str, sacct: &str) -> Result<Snapshot, parse::ParseLineError> {
        let mut snap = Snapshot {
            squeue: parse::parse_squeue(squeue)?,
            sacct: parse::parse_sacct(sacct)?,
            squeue_raw: squeue.into(),
            accounting_raw: sacct.into(),
            accounting_source: "sacct".into(),
            ..Snapshot::default()
        };
        snap.finish();
        Ok(snap)
    }

    /// The evidence of a task whose answer is incomplete: `problems`, each
    /// naming its tool. `None` when there are none.
    fn unanswered(label: &str, problems: &[String]) -> Option<BackendEvidence> {
        (!problems.is_empty()).then(|| {
            BackendEvidence::Unanswered(format!(
                "the scheduler's answer about {label} is incomplete: {}",
                problems.join("; ")
            ))
        })
    }

    /// The backend evidence for child `index` of a submission.
    ///
    /// Rows of the submission's job ids under a name other than
    /// [`job_name`] are not the benchmark's: the id was reused.
    /// The evidence describes the task's current run: with several
    /// accounting records (one per run, `sacct -D`), the newest decides.
    pub fn evidence(
        &self,
        chunks: &[SlurmChunk],
        index: u64,
        now: jiff::Timestamp,
        sub: &Submission,
    ) -> BackendEvidence {
        let Some((chunk, task)) = chunk_of(chunks, index) else {
            return BackendEvidence::Gone("no array job covers this child".into());
        };
        let label = format!("{}_{task}", chunk.job_id);
        let name = job_name(&sub.benchmark);
        let ours = |n: &Option<String>| n.as_deref().is_none_or(|n| n == name);
        let mut foreign: Option<String> = None;
        let mut squeue_row = None;
        let ix = self
            .index
            .get_or_init(|| RowIndex::build(&self.squeue, &self.sacct));
        let key = (chunk.job_id.clone(), task);
        for r in ix
            .squeue
            .get(&key)
            .into_iter()
            .flatten()
            .map(|&i| &self.squeue[i])
        {
            if ours(&r.name) {
                squeue_row = Some(r);
                break;
            }
            foreign.get_or_insert_with(|| r.name.clone().unwrap_or_default());
        }
        if let Some(row) = squeue_row {
            match &row.state {
                SlurmState::Pending | SlurmState::Requeued | SlurmState::Suspended => {
                    return BackendEvidence::Pending(format!(
                        "{label} {} ({})",
                        row.state, row.reason
                    ));
                }
                SlurmState::Running | SlurmState::Completing => return BackendEvidence::Running,
                // A state this build does not know is not a verdict.
                // A state this build does not know is not a verdict, and a
                // task squeue still lists is still the scheduler's: pending
                // as far as benchops is concerned.
                SlurmState::Other(s) => {
                    return BackendEvidence::Pending(format!(
                        "{label}: squeue still lists it, in state {s}, which this build does not interpret"
                    ));
                }
                // squeue shows a just-ended task briefly; accounting, read
                // below, has its end time and exit code.
                _ => {}
            }
        }
        // Without squeue's full answer the task may be pending again
        // (requeued): nothing else can be concluded.
        if !self.squeue_problem.is_empty() {
            if let Some(e) = Self::unanswered(&label, &self.errors) {
                return e;
            }
        }
        let mut own_rows = Vec::new();
        let mut folded = None;
        // This task's own rows and the job's range rows, in output order.
        let mut rows: Vec<usize> = ix
            .sacct_one
            .get(&key)
            .into_iter()
            .flatten()
            .chain(ix.sacct_other.get(&chunk.job_id).into_iter().flatten())
            .copied()
            .collect();
        rows.sort_unstable();
        for r in rows
            .into_iter()
            .map(|i| &self.sacct[i])
            .filter(|r| r.step.is_none() && r.tasks.contains(task))
        {
            if !ours(&r.name) {
                foreign.get_or_insert_with(|| r.name.clone().unwrap_or_default());
            } else if matches!(r.tasks, Tasks::One(_)) {
                own_rows.push(r);
            } else {
                folded.get_or_insert(r);
            }
        }
        if let Some(r) = current_record(&own_rows) {
            let code = match (r.exit_code, r.signal) {
                (Some(c), Some(sig)) if sig != 0 => format!(" (exit {c}:{sig})"),
                (Some(c), _) if c != 0 => format!(" (exit {c})"),
                (None, _) => " (no exit code recorded)".to_owned(),
                _ => String::new(),
            };
            return if r.state.is_terminal() {
                accounting_state(&r.state, &format!("{label}{code}"), Some(&r.end), now)
            } else if let SlurmState::Other(s) = &r.state {
                BackendEvidence::Unknown(format!(
                    "{label}: accounting reports state {s}, which this build does not interpret"
                ))
            } else {
                // Accounting lags behind squeue: a task squeue no longer
                // lists may still look active here.
                BackendEvidence::Unknown(format!(
                    "{label}: squeue no longer lists it and accounting still says {} (accounting lag)",
                    r.state
                ))
            };
        }
        if let Some(row) = squeue_row {
            // squeue saw it end, accounting has not caught up yet.
            return match &row.state {
                SlurmState::Completed => BackendEvidence::FinishedOk {
                    seconds_ago: Some(0.0),
                },
                other => BackendEvidence::FinishedFailed(format!("{label} {other}")),
            };
        }
        if let Some(r) = folded {
            // A folded row stands for tasks that never ran on their own;
            // right after a cancellation it may still cover tasks that did.
            return if r.state.is_terminal() {
                BackendEvidence::FoldedEnd(format!(
                    "the folded accounting row {} says {}",
                    short_id(&r.id),
                    r.state
                ))
            } else {
                BackendEvidence::Unknown(format!(
                    "{label}: squeue no longer lists it and the folded accounting row {} still says {} (accounting lag)",
                    short_id(&r.id),
                    r.state
                ))
            };
        }
        if let Some(e) = Self::unanswered(&label, &self.accounting_problem) {
            return e;
        }
        if let Some(other) = foreign {
            return BackendEvidence::Gone(format!(
                "{label}: job id {} now belongs to another job, named {other:?} instead of {name}; \
                 the id was reused (the controller's state was reset?), and the scheduler no longer knows benchops's array",
                chunk.job_id
            ));
        }
        let age = sub
            .submitted_at
            .parse::<jiff::Timestamp>()
            .map(|t| now.duration_since(t).as_secs_f64())
            .unwrap_or(f64::INFINITY);
        if age < VISIBILITY_GRACE_S {
            BackendEvidence::Unknown(format!(
                "{label} not yet visible to squeue or accounting ({age:.0} s after submission)"
            ))
        } else {
            BackendEvidence::Gone(format!(
                "{label} is unknown to squeue and accounting; Slurm keeps no record of a pending \
                 task that was cancelled on its own, nor of jobs purged from accounting \
                 (see runbooks/slurm.md, \"A task left no record\")"
            ))
        }
    }

    /// How often the scheduler has restarted (requeued) child `index` of a
    /// submission, as far as accounting tells: `scontrol`'s `Restarts`, or
    /// with `sacct -D` the number of the task's records before its newest
    /// one, plus one when that newest record is itself `REQUEUED` (its next
    /// run is not recorded yet). `None` when accounting has no record of
    /// the task or its answer is incomplete: then nothing is known of
    /// restarts, and a result is judged without that check.
    pub fn restarts(&self, chunks: &[SlurmChunk], index: u64, sub: &Submission) -> Option<u32> {
        if !self.accounting_problem.is_empty() {
            return None;
        }
        let (chunk, task) = chunk_of(chunks, index)?;
        let name = job_name(&sub.benchmark);
        let ix = self
            .index
            .get_or_init(|| RowIndex::build(&self.squeue, &self.sacct));
        let own: Vec<&SacctRow> = ix
            .sacct_one
            .get(&(chunk.job_id.clone(), task))
            .into_iter()
            .flatten()
            .map(|&i| &self.sacct[i])
            .filter(|r| r.step.is_none() && r.name.as_deref().is_none_or(|n| n == name))
            .collect();
        let current = current_record(&own)?;
        if let Some(n) = current.restarts {
            return Some(n);
        }
        let before = u32::try_from(own.len() - 1).ok()?;
        Some(before + u32::from(current.state == SlurmState::Requeued))
    }
}

/// The chunk that covers child `index`, and its array task.
fn chunk_of(chunks: &[SlurmChunk], index: u64) -> Option<(&SlurmChunk, u64)> {
    chunks
        .iter()
        .find(|c| index >= c.first_index && index < c.first_index + c.tasks)
        .map(|c| (c, index - c.first_index))
}

/// The newest of one task's accounting records (`sacct -D` lists one per
/// run): the latest `Start`, a record that has not started (`Unknown`)
/// being newer than any that has. On a tie, a record that is not
/// `REQUEUED` wins (a `REQUEUED` record always ended a run that another
/// followed), then the later one in the output.
fn current_record<'a>(rows: &[&'a SacctRow]) -> Option<&'a SacctRow> {
    rows.iter()
        .enumerate()
        .max_by_key(|(i, r)| {
            let start = r.start.parse::<jiff::civil::DateTime>().ok();
            (start.is_none(), start, r.state != SlurmState::Requeued, *i)
        })
        .map(|(_, r)| *r)
}

fn accounting_state(
    state: &SlurmState,
    label: &str,
    end: Option<&str>,
    now: jiff::Timestamp,
) -> BackendEvidence {
    match state {
        SlurmState::Completed => BackendEvidence::FinishedOk {
            seconds_ago: end.and_then(|e| seconds_since(e, now, &jiff::tz::TimeZone::system())),
        },
        other => BackendEvidence::FinishedFailed(format!("{label} {other}")),
    }
}

/// Seconds since a Slurm timestamp (`2026-11-30T12:00:00`), which Slurm
/// prints in the local time zone `tz` without an offset. An end in the
/// future (clocks apart) counts as just now.
fn seconds_since(text: &str, now: jiff::Timestamp, tz: &jiff::tz::TimeZone) -> Option<f64> {
    let dt: jiff::civil::DateTime = text.parse().ok()?;
    let ts = tz
        .to_ambiguous_zoned_datetime(dt)
        .compatible()
        .ok()?
        .timestamp();
    Some(now.duration_since(ts).as_secs_f64().max(0.0))
}

/// What the scheduler snapshot says about child `index` of a Slurm
/// submission.
pub(super) fn evidence(
    snapshot: Option<&Snapshot>,
    sub: &Submission,
    chunks: &[SlurmChunk],
    index: u64,
    now: jiff::Timestamp,
) -> BackendEvidence {
    match snapshot {
        Some(snap) => snap.evidence(chunks, index, now, sub),
        None => BackendEvidence::Unknown("no scheduler snapshot".into()),
    }
}

/// Records the cancellation, then cancels every array job of the
/// submission with one scancel call.
pub(super) fn cancel(
    state: &StateDir,
    digest: &Sha256Digest,
    sub: &Submission,
    chunks: &[SlurmChunk],
    opts: &SchedulerOptions,
) -> Result<Vec<String>, BackendError> {
    record_cancel(state, digest, sub, "scancel the array jobs")?;
    let ids: Vec<String> = chunks.iter().map(|c| c.job_id.clone()).collect();
    tool_ok("scancel", &ids, opts).map_err(|e| BackendError::Scheduler(e.to_string()))?;
    Ok(vec![format!("scancel {}", ids.join(" "))])
}

/// Reads the Slurm task identity from the environment of an array task.
pub fn task_from_env() -> Option<(u64, u32)> {
    let task = std::env::var("SLURM_ARRAY_TASK_ID").ok()?.parse().ok()?;
    let restart = std::env::var("SLURM_RESTART_COUNT")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    Some((task, restart))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_times_are_read_in_the_clusters_zone() {
        let tz = jiff::tz::TimeZone::get("America/New_York").expect("tzdata");
        // 07:00:00 in New York in winter is 12:00:00 UTC.
        let now: jiff::Timestamp = "2026-11-30T12:00:05Z".parse().expect("time");
        assert_eq!(seconds_since("2026-11-30T07:00:00", now, &tz), Some(5.0));
        let utc = jiff::tz::TimeZone::UTC;
        assert_eq!(seconds_since("2026-11-30T12:00:00", now, &utc), Some(5.0));
        // An end ahead of this clock is just now, never negative.
        assert_eq!(seconds_since("2026-11-30T12:00:09", now, &utc), Some(0.0));
        assert_eq!(seconds_since("Unknown", now, &utc), None);
    }
}
