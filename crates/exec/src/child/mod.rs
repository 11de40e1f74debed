//! The measuring child wrapper: runs one benchmark command, measures it and
//! records what happened in an attempt directory.
//!
//! This module owns what to run ([`ChildSpec`]), which attempt it is
//! ([`AttemptIdentity`]), the wrapper's errors ([`ChildError`]) and
//! [`run_child`], which ties the parts together:
//!
//! | part | what it owns |
//! |---|---|
//! | `record` | `started.json` and `result.json`: their types, atomic writes and validating reads |
//! | `supervise` | spawning, the process group, the timeout (`SIGTERM`, then `SIGKILL`), reaping, resource usage |
//! | `capture` | the bounded tails of stdout and stderr |
//! | `metrics` | the JSON metric lines on stdout |
//!
//! Every public item of the parts is re-exported here.
//!
//! [`run_child`] writes two files, both atomically (a temporary file in the
//! same directory, renamed into place):
//!
//! * `started.json` ([`ChildStarted`]) *before* the command is spawned, so a
//!   later process can tell an attempt that was started but never finished
//!   (the wrapper died) from one that never started. It names the wrapper by
//!   pid and start time (`/proc/self/stat` field 22), which together survive
//!   pid reuse. It is evidence, not the record: it is not fsynced, so a
//!   power loss may take it (never a half of it).
//! * `result.json` ([`ChildResult`]) after the command was reaped, or after
//!   it failed to spawn: durable before `run_child` returns
//!   ([`benchops::fsio::write_atomic`]: fsync of the file, rename, fsync of
//!   the directory).
//!
//! # Measurement
//!
//! * Wall time comes from one monotonic clock ([`Instant`]): from just
//!   before spawn to the moment the wrapper observes the exit (a dedicated
//!   thread blocked in `waitid(2)`, so there is no polling quantization).
//!   For a timed-out command it includes the termination grace period.
//! * CPU time and peak memory come from `wait4(2)`, which reaps the command
//!   and returns its own resource usage: user and system time and peak
//!   resident set of the command and of the descendants it waited for.
//!   They are the command's own even in a local worker that runs many
//!   commands one after another (`getrusage(RUSAGE_CHILDREN)` would carry
//!   the peak of an earlier, larger command into every later one). Peak RSS
//!   has a floor: Linux carries the high-water mark of the image a child had
//!   before `exec` (a copy of the worker) into the child's usage, so a tiny
//!   command reports about the worker's own resident size. Compare peak RSS
//!   only between runs of the same build. `ru_maxrss` is KiB on Linux and
//!   is converted to bytes. Descendants count only once their own parent
//!   has waited for them.
//!
//! # Process group and timeout
//!
//! The command runs in its own process group. On timeout the whole group
//! gets `SIGTERM`, then `SIGKILL` after [`TERM_GRACE`]. When the command
//! exits on its own, any process it left behind in its group is killed with
//! `SIGKILL`, so nothing outlives the attempt, skews the next measurement,
//! or holds the output pipes open. The group leader is observed with
//! `WNOWAIT` and reaped only after the group is signalled, so the group id
//! cannot have been reused when the signal is sent.
//!
//! # Output
//!
//! Only the last [`TAIL_BYTES`] of stdout and stderr are kept. With
//! [`ChildSpec::json_metrics`], stdout lines are parsed as they stream; see
//! [`Metric`] for the line format. A process that escapes the group (for
//! example with `setsid`) and keeps a pipe open is not waited for beyond
//! [`PIPE_DRAIN_GRACE`]; output it writes later is not captured.
//!
//! # Environment
//!
//! The command inherits the wrapper's environment, plus [`ChildSpec::env`],
//! minus [`ChildSpec::env_remove`] and minus
//! [`env_remove_publication_credentials`]. Removals win over additions, so
//! no publication credential reaches a benchmark.

mod capture;
mod metrics;
mod record;
mod supervise;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use benchops::fsio::WriteError;
use nix::errno::Errno;

pub use capture::TAIL_BYTES;
pub use metrics::{MAX_METRIC_LINE_BYTES, Metric, MetricError};
pub use record::{
    ChildResult, ChildStarted, Exit, RESULT_FILE, RESULT_SCHEMA, STARTED_FILE, STARTED_SCHEMA,
    read_result, read_started,
};
pub use supervise::{PIPE_DRAIN_GRACE, TERM_GRACE};

use crate::state::now_rfc3339;

use capture::Capture;
use record::{Sync, write_json};
use supervise::{Builtins, seconds};

/// The environment variables removed from every child's environment, in
/// addition to [`ChildSpec::env_remove`]: the one list of
/// [`crate::credentials`].
pub fn env_remove_publication_credentials() -> Vec<String> {
    crate::credentials::removed_from_children()
        .map(String::from)
        .collect()
}

/// The prefix of the variables that hold a platform case's subject token
/// (a token for a disposable repository, never a publication credential).
pub const SUBJECT_TOKEN_PREFIX: &str = "BENCHOPS_SUBJECT_TOKEN";

/// The subject-token variables (of `present`) to remove from a child that
/// runs `argv`: every one, except the one a platform case names with
/// `--token-env` (`benchops-exec platform … --token-env NAME`). A token for
/// one platform case therefore never reaches another child.
pub fn subject_token_removals(
    argv: &[String],
    present: impl Iterator<Item = String>,
) -> Vec<String> {
    let is_platform = argv
        .first()
        .and_then(|p| Path::new(p).file_name())
        .is_some_and(|n| n == "benchops-exec")
        && argv.get(1).is_some_and(|a| a == "platform");
    let kept: Option<&str> = if is_platform {
        argv.iter().enumerate().find_map(|(i, a)| {
            a.strip_prefix("--token-env=").or_else(|| {
                (a == "--token-env")
                    .then(|| argv.get(i + 1).map(String::as_str))
                    .flatten()
            })
        })
    } else {
        None
    };
    present
        .filter(|k| k.starts_with(SUBJECT_TOKEN_PREFIX) && Some(k.as_str()) != kept)
        .collect()
}

/// What to run: fully resolved, no placeholders left.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildSpec {
    /// Program and arguments. With [`ChildSpec::shell`], exactly one string:
    /// the script given to `/bin/sh -c`.
    pub argv: Vec<String>,
    /// Run `argv[0]` with `/bin/sh -c`.
    pub shell: bool,
    /// Variables added to the inherited environment.
    pub env: BTreeMap<String, String>,
    /// Variables removed from the child's environment; removal wins over
    /// [`ChildSpec::env`].
    pub env_remove: Vec<String>,
    /// Working directory; the wrapper's own when `None`.
    pub workdir: Option<PathBuf>,
    /// Wall-clock limit; none when `None`.
    pub timeout: Option<Duration>,
    /// Parse stdout lines as JSON metrics (see [`Metric`]).
    pub json_metrics: bool,
}

impl ChildSpec {
    /// Runs `argv` directly, with every other field at its default.
    pub fn command<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            argv: argv.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Runs `script` with `/bin/sh -c`, with every other field at its
    /// default.
    pub fn shell(script: impl Into<String>) -> Self {
        Self {
            argv: vec![script.into()],
            shell: true,
            ..Self::default()
        }
    }
}

/// Which attempt of which benchmark this run is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptIdentity {
    /// The benchmark's content address, `sha256:<hex>`.
    pub benchmark: String,
    /// The index of the run within the benchmark's plan.
    pub index: u64,
    /// The attempt number of that run.
    pub attempt: u32,
    /// The digest of the resolved child command.
    pub child_digest: String,
    /// Which run of the attempt this is: Slurm's `SLURM_RESTART_COUNT`
    /// for a requeued task, 0 for a first run and every local run. It is
    /// written into both records, so that a later look can tell a result
    /// of an earlier run from the current run's.
    pub restart: u32,
}

/// Why the wrapper could not run or record a command. A command that fails,
/// times out or cannot be spawned is not an error: it is a [`ChildResult`].
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    /// The spec cannot describe a command.
    #[error("failed to accept child spec: {0}")]
    InvalidSpec(String),
    /// The attempt directory could not be created.
    #[error("failed to create attempt directory {path}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The wrapper's own start time could not be read.
    #[error("failed to read the wrapper start time from /proc/self/stat: {0}")]
    StartTicks(String),
    /// The host name could not be read.
    #[error("failed to read the host name")]
    Hostname(#[source] Errno),
    /// Resource usage could not be read.
    #[error("failed to read child resource usage")]
    Usage(#[source] Errno),
    /// Waiting for the command failed.
    #[error("failed to wait for child process {pid}")]
    Wait {
        /// The command's process id.
        pid: u32,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A record could not be encoded.
    #[error("failed to encode {path}")]
    Encode {
        /// The file.
        path: PathBuf,
        /// The encoder error.
        #[source]
        source: serde_json::Error,
    },
    /// A record could not be written.
    #[error("failed to write a child record")]
    Write(#[from] WriteError),
    /// A record could not be read.
    #[error("failed to read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A record is malformed.
    #[error("failed to parse {path}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// Runs `spec` once as attempt `id`, recording into `attempt_dir`
/// (created if needed): `started.json` before spawning, `result.json` after.
///
/// Returns the recorded result. A failing, killed, timed-out or unspawnable
/// command is an `Ok` result; `Err` means the wrapper itself could not do or
/// record its work. See the module documentation for how things are
/// measured.
pub fn run_child(
    spec: &ChildSpec,
    id: &AttemptIdentity,
    attempt_dir: &Path,
) -> Result<ChildResult, ChildError> {
    let mut command = supervise::build_command(spec)?;
    std::fs::create_dir_all(attempt_dir).map_err(|source| ChildError::CreateDir {
        path: attempt_dir.to_path_buf(),
        source,
    })?;
    let host = host_name()?;
    let started_at = now_rfc3339();
    let started = ChildStarted {
        schema: STARTED_SCHEMA.to_owned(),
        benchmark: id.benchmark.clone(),
        index: id.index,
        attempt: id.attempt,
        child_digest: id.child_digest.clone(),
        restart: Some(id.restart),
        wrapper_pid: std::process::id(),
        wrapper_start_ticks: own_start_ticks()?,
        host: host.clone(),
        started_at: started_at.clone(),
    };
    write_json(&attempt_dir.join(STARTED_FILE), &started, Sync::No)?;

    let spawned_at = Instant::now();
    let (exit, measured) = match command.spawn() {
        Err(e) => {
            let program = if spec.shell { "/bin/sh" } else { &spec.argv[0] };
            let error = format!("{program}: {e}");
            (Exit::SpawnFailed { error }, None)
        }
        Ok(child) => {
            let run = supervise::supervise(child, spec, spawned_at)?;
            let builtins = Builtins {
                wall_s: seconds(run.wall),
                user_s: seconds(run.usage.user),
                sys_s: seconds(run.usage.sys),
                max_rss_bytes: run.usage.max_rss_bytes,
            };
            (run.exit, Some((builtins, run.stdout, run.stderr)))
        }
    };
    let finished_at = now_rfc3339();
    let (builtins, stdout, stderr) = match measured {
        Some((b, out, err)) => (Some(b), out, err),
        None => (None, Capture::new(false), Capture::new(false)),
    };
    let (metrics, metric_errors) = stdout
        .metrics
        .map(|p| (p.metrics, p.errors))
        .unwrap_or_default();
    let result = ChildResult {
        schema: RESULT_SCHEMA.to_owned(),
        benchmark: id.benchmark.clone(),
        index: id.index,
        attempt: id.attempt,
        child_digest: id.child_digest.clone(),
        restart: Some(id.restart),
        exit,
        started_at,
        finished_at,
        wall_s: builtins.as_ref().map(|b| b.wall_s),
        user_s: builtins.as_ref().map(|b| b.user_s),
        sys_s: builtins.as_ref().map(|b| b.sys_s),
        max_rss_bytes: builtins.as_ref().map(|b| b.max_rss_bytes),
        metrics,
        metric_errors,
        stdout_tail: stdout.tail.into_string(),
        stderr_tail: stderr.tail.into_string(),
        host,
    };
    write_json(&attempt_dir.join(RESULT_FILE), &result, Sync::Yes)?;
    Ok(result)
}

// Clock, host and the wrapper's identity.

fn host_name() -> Result<String, ChildError> {
    crate::state::try_host_name().map_err(ChildError::Hostname)
}

/// Field 22 (`starttime`) of `/proc/self/stat`.
fn own_start_ticks() -> Result<u64, ChildError> {
    let stat = std::fs::read_to_string("/proc/self/stat")
        .map_err(|e| ChildError::StartTicks(e.to_string()))?;
    start_ticks_from_stat(&stat).ok_or_else(|| ChildError::StartTicks("unexpected format".into()))
}

/// Parses field 22 of a `/proc/<pid>/stat` line. The command name (field 2)
/// may hold spaces and parentheses, so fields are counted after its last `)`.
fn start_ticks_from_stat(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // `rest` starts at field 3, so field 22 is the 20th.
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod subject_token_tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn only_the_platform_case_that_names_a_subject_token_keeps_it() {
        let present = || {
            [
                "PATH",
                "BENCHOPS_SUBJECT_TOKEN_A",
                "BENCHOPS_SUBJECT_TOKEN_B",
            ]
            .into_iter()
            .map(String::from)
        };
        let other = subject_token_removals(&argv(&["sh", "-c", "work"]), present());
        assert_eq!(
            other,
            ["BENCHOPS_SUBJECT_TOKEN_A", "BENCHOPS_SUBJECT_TOKEN_B"]
        );
        let a = subject_token_removals(
            &argv(&[
                "/usr/bin/benchops-exec",
                "platform",
                "--token-env",
                "BENCHOPS_SUBJECT_TOKEN_A",
            ]),
            present(),
        );
        assert_eq!(a, ["BENCHOPS_SUBJECT_TOKEN_B"]);
        let b = subject_token_removals(
            &argv(&[
                "benchops-exec",
                "platform",
                "--token-env=BENCHOPS_SUBJECT_TOKEN_B",
            ]),
            present(),
        );
        assert_eq!(b, ["BENCHOPS_SUBJECT_TOKEN_A"]);
        // Not a platform invocation: naming the variable keeps nothing.
        let sneaky = subject_token_removals(
            &argv(&[
                "benchops-exec",
                "seal",
                "--token-env",
                "BENCHOPS_SUBJECT_TOKEN_A",
            ]),
            present(),
        );
        assert_eq!(sneaky.len(), 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_ticks_survive_odd_command_names() {
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(start_ticks_from_stat(stat), Some(987_654));
        assert_eq!(start_ticks_from_stat("42 (x) S 1"), None);
        let own = own_start_ticks().expect("reads /proc/self/stat");
        assert!(own > 0);
    }
}
