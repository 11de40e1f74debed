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

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use benchops::Sha256Digest;
use benchops::classify::BackendEvidence;
use serde::Serialize;

use super::{BackendError, ChildEvidence, Job, Launched, record_cancel};
use crate::child;
use crate::state::{BackendHandles, SlurmChunk, StateDir, StateError, Submission};
use parse::{SACCT_FORMAT, SQUEUE_FORMAT, SacctRow, SlurmState, SqueueRow, Tasks};

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
    /// sbatch printed something that is not a job id.
    #[error("sbatch printed {0:?}, not a job id")]
    BadJobId(String),
}

/// Runs a Slurm tool and returns its stdout.
fn tool(program: &str, args: &[String]) -> Result<(String, String, bool), SlurmError> {
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null());
    for var in child::env_remove_publication_credentials() {
        cmd.env_remove(var);
    }
    let out = cmd.output().map_err(|source| SlurmError::Start {
        tool: program.into(),
        source,
    })?;
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        out.status.success(),
    ))
}

fn tool_ok(program: &str, args: &[String]) -> Result<String, SlurmError> {
    let (stdout, stderr, ok) = tool(program, args)?;
    if !ok {
        return Err(SlurmError::Failed {
            tool: program.into(),
            status: "non-zero exit".into(),
            stderr,
        });
    }
    Ok(stdout)
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
        None => max_array_size().unwrap_or(1001),
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
        directive(format!("--job-name=benchops-{}", &digest.hex()[..12]));
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
        let job_id = match tool_ok("sbatch", &["--parsable".into(), path.display().to_string()]) {
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

fn max_array_size() -> Option<u64> {
    let out = tool_ok("scontrol", &["show".into(), "config".into()]).ok()?;
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
    /// Problems talking to the scheduler.
    pub errors: Vec<String>,
    #[serde(skip)]
    squeue: Vec<SqueueRow>,
    #[serde(skip)]
    sacct: Vec<SacctRow>,
    /// Whether squeue could be asked at all.
    #[serde(skip)]
    squeue_ok: bool,
}

impl Snapshot {
    /// Asks squeue once and sacct once (or scontrol once per array job
    /// when accounting is disabled).
    pub fn take(chunks: &[SlurmChunk]) -> Snapshot {
        let started = Instant::now();
        let mut snap = Snapshot::default();
        let ids: Vec<&str> = chunks.iter().map(|c| c.job_id.as_str()).collect();
        let idlist = ids.join(",");
        snap.calls += 1;
        match tool(
            "squeue",
            &[
                "-h".into(),
                "-r".into(),
                "-j".into(),
                idlist.clone(),
                "-o".into(),
                SQUEUE_FORMAT.into(),
            ],
        ) {
            Ok((out, _, true)) => {
                snap.squeue_ok = true;
                match parse::parse_squeue(&out) {
                    Ok(rows) => snap.squeue = rows,
                    Err(e) => snap.errors.push(e.to_string()),
                }
                snap.squeue_raw = out;
            }
            // squeue exits 1 when every listed job has left its memory.
            Ok((out, err, false)) if err.contains("Invalid job id") => {
                snap.squeue_ok = true;
                snap.squeue_raw = out;
            }
            Ok((_, err, false)) => snap.errors.push(format!("squeue: {err}")),
            Err(e) => snap.errors.push(e.to_string()),
        }
        snap.calls += 1;
        let sacct_args: Vec<String> = vec![
            "-X".into(),
            "-n".into(),
            "--parsable2".into(),
            "-j".into(),
            idlist,
            format!("--format={SACCT_FORMAT}"),
        ];
        match tool("sacct", &sacct_args) {
            Ok((out, _, true)) => {
                snap.accounting_source = "sacct".into();
                match parse::parse_sacct(&out) {
                    Ok(rows) => snap.sacct = rows,
                    Err(e) => snap.errors.push(e.to_string()),
                }
                snap.accounting_raw = out;
            }
            Ok((_, err, false)) if err.contains("accounting storage is disabled") => {
                snap.accounting_source = "scontrol".into();
                for id in &ids {
                    snap.calls += 1;
                    match tool(
                        "scontrol",
                        &["-o".into(), "show".into(), "job".into(), (*id).to_owned()],
                    ) {
                        Ok((out, _, true)) => {
                            snap.sacct.extend(parse::scontrol_rows(&out));
                            snap.accounting_raw.push_str(&out);
                        }
                        Ok((_, err, false)) => snap.errors.push(format!("scontrol: {err}")),
                        Err(e) => snap.errors.push(e.to_string()),
                    }
                }
            }
            Ok((_, err, false)) => {
                snap.accounting_source = "none".into();
                snap.errors.push(format!("sacct: {err}"));
            }
            Err(e) => {
                snap.accounting_source = "none".into();
                snap.errors.push(e.to_string());
            }
        }
        snap.seconds = started.elapsed().as_secs_f64();
        snap
    }

    /// Builds a snapshot from captured text (for tests and replays).
    pub fn from_text(squeue: &str, sacct: &str) -> Result<Snapshot, parse::ParseLineError> {
        Ok(Snapshot {
            squeue: parse::parse_squeue(squeue)?,
            sacct: parse::parse_sacct(sacct)?,
            squeue_ok: true,
            squeue_raw: squeue.into(),
            accounting_raw: sacct.into(),
            accounting_source: "sacct".into(),
            ..Snapshot::default()
        })
    }

    /// The backend evidence for child `index` of a submission.
    pub fn evidence(
        &self,
        chunks: &[SlurmChunk],
        index: u64,
        restart: u32,
        now: jiff::Timestamp,
        sub: &Submission,
    ) -> BackendEvidence {
        let Some(chunk) = chunks
            .iter()
            .find(|c| index >= c.first_index && index < c.first_index + c.tasks)
        else {
            return BackendEvidence::Gone("no array job covers this child".into());
        };
        let task = index - chunk.first_index;
        let label = format!("{}_{task}", chunk.job_id);
        let squeue_row = self
            .squeue
            .iter()
            .find(|r| r.array_job_id == chunk.job_id && r.task == Some(task));
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
                SlurmState::Other(s) => {
                    return BackendEvidence::Unknown(format!(
                        "{label}: squeue reports state {s}, which this build does not interpret"
                    ));
                }
                // squeue shows a just-ended task briefly; accounting, read
                // below, has its end time and exit code.
                _ => {}
            }
        }
        // Prefer a row for this very task over a range row.
        let row = self
            .sacct
            .iter()
            .filter(|r| {
                r.array_job_id == chunk.job_id && r.step.is_none() && r.tasks.contains(task)
            })
            .min_by_key(|r| !matches!(r.tasks, Tasks::One(_)));
        if let Some(r) = row {
            let code = match (r.exit_code, r.signal) {
                (Some(c), Some(sig)) if sig != 0 => format!(" (exit {c}:{sig})"),
                (Some(c), _) if c != 0 => format!(" (exit {c})"),
                (None, _) => " (no exit code recorded)".to_owned(),
                _ => String::new(),
            };
            return match &r.state {
                // Accounting lags behind squeue: a task squeue no longer
                // lists may still look active here.
                SlurmState::Pending
                | SlurmState::Running
                | SlurmState::Completing
                | SlurmState::Requeued
                | SlurmState::Suspended => BackendEvidence::Unknown(format!(
                    "{label}: squeue no longer lists it and accounting still says {} (accounting lag)",
                    r.state
                )),
                other => accounting_state(other, &format!("{label}{code}"), Some(&r.end), now),
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
        let _ = restart;
        if !self.squeue_ok || self.accounting_source == "none" {
            // Silence from a tool that did not answer is no evidence.
            return BackendEvidence::Unknown(format!(
                "{label}: the scheduler could not be fully asked: {}",
                self.errors.join("; ")
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
            BackendEvidence::Gone(format!("{label} is unknown to squeue and accounting"))
        }
    }
}

fn accounting_state(
    state: &SlurmState,
    label: &str,
    end: Option<&str>,
    now: jiff::Timestamp,
) -> BackendEvidence {
    match state {
        SlurmState::Completed => BackendEvidence::FinishedOk {
            seconds_ago: end.and_then(|e| seconds_since(e, now)),
        },
        other => BackendEvidence::FinishedFailed(format!("{label} {other}")),
    }
}

/// Seconds since a Slurm local timestamp (`2026-11-30T12:00:00`).
fn seconds_since(text: &str, now: jiff::Timestamp) -> Option<f64> {
    let dt: jiff::civil::DateTime = text.parse().ok()?;
    let ts = jiff::tz::TimeZone::system()
        .to_ambiguous_zoned_datetime(dt)
        .compatible()
        .ok()?
        .timestamp();
    Some(now.duration_since(ts).as_secs_f64())
}

/// The evidence of child `index` of a Slurm submission: its newest requeue
/// directory, and what the scheduler snapshot says about its task.
pub(super) fn evidence(
    snapshot: Option<&Snapshot>,
    state: &StateDir,
    digest: &Sha256Digest,
    sub: &Submission,
    chunks: &[SlurmChunk],
    index: u64,
    now: jiff::Timestamp,
) -> ChildEvidence {
    let (dir, restart) = state.latest_attempt_dir(digest, index, sub.attempt);
    let backend = match snapshot {
        Some(snap) => snap.evidence(chunks, index, restart, now, sub),
        None => BackendEvidence::Unknown("no scheduler snapshot".into()),
    };
    ChildEvidence {
        dir,
        restart,
        backend,
    }
}

/// Records the cancellation, then cancels every array job of the
/// submission with one scancel call.
pub(super) fn cancel(
    state: &StateDir,
    digest: &Sha256Digest,
    sub: &Submission,
    chunks: &[SlurmChunk],
) -> Result<Vec<String>, BackendError> {
    record_cancel(state, digest, sub, "scancel the array jobs")?;
    let ids: Vec<String> = chunks.iter().map(|c| c.job_id.clone()).collect();
    tool_ok("scancel", &ids).map_err(|e| BackendError::Scheduler(e.to_string()))?;
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
