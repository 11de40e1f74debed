//! The measuring child wrapper: runs one benchmark command, measures it and
//! records what happened in an attempt directory.
//!
//! [`run_child`] writes two files, both atomically
//! ([`benchops::fsio::write_atomic`]):
//!
//! * `started.json` ([`ChildStarted`]) *before* the command is spawned, so a
//!   later process can tell an attempt that was started but never finished
//!   (the wrapper died) from one that never started. It names the wrapper by
//!   pid and start time (`/proc/self/stat` field 22), which together survive
//!   pid reuse.
//! * `result.json` ([`ChildResult`]) after the command was reaped, or after
//!   it failed to spawn.
//!
//! # Measurement
//!
//! * Wall time comes from one monotonic clock ([`Instant`]): from just
//!   before spawn to the moment the wrapper observes the exit (a dedicated
//!   thread blocked in `waitid(2)`, so there is no polling quantization).
//!   For a timed-out command it includes the termination grace period.
//! * CPU time and peak memory come from `getrusage(RUSAGE_CHILDREN)` after
//!   the command is reaped. That counts every child the *calling process*
//!   has reaped, which is exactly the command because the wrapper runs one
//!   child at a time: user and system time are taken as the difference
//!   between a reading just before spawn and one after reaping, so
//!   sequential calls in one process stay correct. `max_rss_bytes` is a
//!   high-water mark that cannot be differenced: it is the largest resident
//!   set of any child reaped so far, which is the command's own as long as
//!   the wrapper process runs nothing else. It has a floor: Linux carries
//!   the high-water mark of the image a child had before `exec` (a copy of
//!   the wrapper) into the child's usage, so a tiny command reports about
//!   the wrapper's own resident size. Compare peak RSS only between runs of
//!   the same build. Concurrent `run_child` calls in
//!   one process therefore see each other's usage; run one attempt per
//!   wrapper process when the numbers matter. `ru_maxrss` is KiB on Linux
//!   and is converted to bytes. Descendants count only once their own
//!   parent has waited for them.
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

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use benchops::Finite;
use benchops::fsio::{self, WriteError};
use nix::errno::Errno;
use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::signal::{Signal, killpg};
use nix::sys::time::TimeVal;
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The `schema` of `started.json`.
pub const STARTED_SCHEMA: &str = "benchops-child-started/v1";
/// The `schema` of `result.json`.
pub const RESULT_SCHEMA: &str = "benchops-child-result/v1";
/// The file written before the command is spawned.
pub const STARTED_FILE: &str = "started.json";
/// The file written after the command finished or failed to spawn.
pub const RESULT_FILE: &str = "result.json";
/// How many trailing bytes of stdout and of stderr are kept.
pub const TAIL_BYTES: usize = 4096;
/// Longest stdout line parsed for a metric; longer lines are reported in
/// [`ChildResult::metric_errors`] and not parsed.
pub const MAX_METRIC_LINE_BYTES: usize = 64 * 1024;
/// Time between `SIGTERM` and `SIGKILL` when a command times out.
pub const TERM_GRACE: Duration = Duration::from_secs(2);
/// How long the wrapper waits, after reaping, for the output pipes to close.
pub const PIPE_DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The names of the builtin metrics, which a command may not report itself.
const BUILTIN_METRICS: [&str; 4] = ["wall_s", "user_s", "sys_s", "max_rss_bytes"];

/// The environment variables removed from every child's environment, in
/// addition to [`ChildSpec::env_remove`]: the credentials that could publish
/// results.
pub fn env_remove_publication_credentials() -> Vec<String> {
    [
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "BENCHOPS_APP_KEY_FILE",
        "BENCHOPS_APP_PRIVATE_KEY",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "ACTIONS_RUNTIME_TOKEN",
    ]
    .into_iter()
    .map(String::from)
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
}

/// The contents of `started.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChildStarted {
    /// Always [`STARTED_SCHEMA`].
    pub schema: String,
    /// See [`AttemptIdentity::benchmark`].
    pub benchmark: String,
    /// See [`AttemptIdentity::index`].
    pub index: u64,
    /// See [`AttemptIdentity::attempt`].
    pub attempt: u32,
    /// See [`AttemptIdentity::child_digest`].
    pub child_digest: String,
    /// The wrapper's process id.
    pub wrapper_pid: u32,
    /// The wrapper's start time in clock ticks since boot (field 22 of
    /// `/proc/self/stat`); with the pid, it identifies the wrapper even
    /// after pid reuse.
    pub wrapper_start_ticks: u64,
    /// The host name.
    pub host: String,
    /// When the attempt started, RFC 3339 UTC with microseconds.
    pub started_at: String,
}

/// How the command ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Exit {
    /// It exited with a status code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// A signal ended it (not one sent by the wrapper's timeout).
    Signaled {
        /// The signal number.
        signal: i32,
        /// The signal name, such as `SIGKILL`.
        name: String,
    },
    /// It ran past [`ChildSpec::timeout`] and the wrapper ended it.
    TimedOut {
        /// The timeout, in seconds.
        after_s: Finite,
        /// The last signal sent to the group: `SIGTERM` (15) if the command
        /// ended within [`TERM_GRACE`], otherwise `SIGKILL` (9).
        signal: i32,
    },
    /// It could not be started (for example, the program does not exist).
    SpawnFailed {
        /// Why.
        error: String,
    },
}

/// One metric reported by the command on stdout.
///
/// With [`ChildSpec::json_metrics`], every stdout line that is a JSON object
/// with a `"metric"` key must be exactly
/// `{"metric": <non-empty name>, "value": <number or null>, "unit": <string>}`.
/// Lines that are not JSON objects, or have no `"metric"` key, are ignored.
/// A line that starts with `{` and mentions `"metric"` but is not valid JSON
/// (for example `NaN`, or a number out of range) is an error, not ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    /// The metric name.
    pub name: String,
    /// The value; `None` (JSON `null`) means "not measured", never zero.
    #[serde(deserialize_with = "Option::deserialize")]
    pub value: Option<Finite>,
    /// The unit.
    pub unit: String,
    /// `true` when larger is better (throughput); the line's optional
    /// `"direction": "higher_is_better"`. Absent means lower is better.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub higher_is_better: bool,
}

/// A stdout line that looked like a metric but was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricError {
    /// The 1-based stdout line number.
    pub line: u64,
    /// Why it was rejected.
    pub reason: String,
}

/// The contents of `result.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChildResult {
    /// Always [`RESULT_SCHEMA`].
    pub schema: String,
    /// See [`AttemptIdentity::benchmark`].
    pub benchmark: String,
    /// See [`AttemptIdentity::index`].
    pub index: u64,
    /// See [`AttemptIdentity::attempt`].
    pub attempt: u32,
    /// See [`AttemptIdentity::child_digest`].
    pub child_digest: String,
    /// How the command ended.
    pub exit: Exit,
    /// When the attempt started (as in `started.json`).
    pub started_at: String,
    /// When the command was reaped (or failed to spawn).
    pub finished_at: String,
    /// Wall time in seconds; `None` only if the spawn failed.
    #[serde(deserialize_with = "Option::deserialize")]
    pub wall_s: Option<Finite>,
    /// User CPU seconds; `None` only if the spawn failed.
    #[serde(deserialize_with = "Option::deserialize")]
    pub user_s: Option<Finite>,
    /// System CPU seconds; `None` only if the spawn failed.
    #[serde(deserialize_with = "Option::deserialize")]
    pub sys_s: Option<Finite>,
    /// Peak resident set in bytes; `None` only if the spawn failed.
    #[serde(deserialize_with = "Option::deserialize")]
    pub max_rss_bytes: Option<u64>,
    /// Metrics the command reported, in output order.
    pub metrics: Vec<Metric>,
    /// Metric lines that were rejected.
    pub metric_errors: Vec<MetricError>,
    /// The last [`TAIL_BYTES`] of stdout (lossy UTF-8, at most that long).
    pub stdout_tail: String,
    /// The last [`TAIL_BYTES`] of stderr (lossy UTF-8, at most that long).
    pub stderr_tail: String,
    /// The host name.
    pub host: String,
}

impl ChildResult {
    /// Whether the command exited with code 0. Anything else, including a
    /// timeout or a spawn failure, is not success.
    pub fn succeeded(&self) -> bool {
        matches!(self.exit, Exit::Exited { code: 0 })
    }

    /// The attempt this result belongs to.
    pub fn identity(&self) -> AttemptIdentity {
        AttemptIdentity {
            benchmark: self.benchmark.clone(),
            index: self.index,
            attempt: self.attempt,
            child_digest: self.child_digest.clone(),
        }
    }
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
    let mut command = build_command(spec)?;
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
        wrapper_pid: std::process::id(),
        wrapper_start_ticks: own_start_ticks()?,
        host: host.clone(),
        started_at: started_at.clone(),
    };
    write_json(&attempt_dir.join(STARTED_FILE), &started)?;

    let usage_before = children_usage()?;
    let spawned_at = Instant::now();
    let (exit, measured) = match command.spawn() {
        Err(e) => {
            let program = if spec.shell { "/bin/sh" } else { &spec.argv[0] };
            let error = format!("{program}: {e}");
            (Exit::SpawnFailed { error }, None)
        }
        Ok(child) => {
            let run = supervise(child, spec, spawned_at)?;
            let usage_after = children_usage()?;
            let builtins = Builtins {
                wall_s: seconds(run.wall),
                user_s: cpu_delta(usage_before.user, usage_after.user),
                sys_s: cpu_delta(usage_before.sys, usage_after.sys),
                max_rss_bytes: usage_after.max_rss_bytes,
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
    write_json(&attempt_dir.join(RESULT_FILE), &result)?;
    Ok(result)
}

/// Reads and validates a `result.json`: the schema string must match, the
/// timestamps must be RFC 3339, and the builtin metrics must be present
/// exactly when the command was spawned.
pub fn read_result(path: &Path) -> Result<ChildResult, ChildError> {
    let result: ChildResult = read_json(path)?;
    let invalid = |reason: String| ChildError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    check_schema(&result.schema, RESULT_SCHEMA).map_err(invalid)?;
    check_timestamp("started_at", &result.started_at).map_err(invalid)?;
    check_timestamp("finished_at", &result.finished_at).map_err(invalid)?;
    let spawned = !matches!(result.exit, Exit::SpawnFailed { .. });
    let present = [
        ("wall_s", result.wall_s.is_some()),
        ("user_s", result.user_s.is_some()),
        ("sys_s", result.sys_s.is_some()),
        ("max_rss_bytes", result.max_rss_bytes.is_some()),
    ];
    for (name, is_present) in present {
        if spawned && !is_present {
            return Err(invalid(format!("{name} is null but the command ran")));
        }
        if !spawned && is_present {
            return Err(invalid(format!(
                "{name} is set but the command failed to spawn"
            )));
        }
    }
    Ok(result)
}

/// Reads and validates a `started.json`: the schema string must match and
/// `started_at` must be RFC 3339.
pub fn read_started(path: &Path) -> Result<ChildStarted, ChildError> {
    let started: ChildStarted = read_json(path)?;
    let invalid = |reason: String| ChildError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    check_schema(&started.schema, STARTED_SCHEMA).map_err(invalid)?;
    check_timestamp("started_at", &started.started_at).map_err(invalid)?;
    Ok(started)
}

// ---------------------------------------------------------------------------
// Spawning and supervising

/// Builds the command: its own process group, stdin null, stdout and stderr
/// piped, environment additions first and removals last.
fn build_command(spec: &ChildSpec) -> Result<Command, ChildError> {
    let mut command = match (spec.shell, spec.argv.as_slice()) {
        (_, []) => return Err(ChildError::InvalidSpec("argv is empty".to_owned())),
        (true, [script]) => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c").arg(script);
            c
        }
        (true, more) => {
            return Err(ChildError::InvalidSpec(format!(
                "a shell command takes exactly one argv string, found {}",
                more.len()
            )));
        }
        (false, [program, args @ ..]) => {
            let mut c = Command::new(program);
            c.args(args);
            c
        }
    };
    command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .envs(&spec.env);
    // `Command` keeps the last operation per variable, so these removals win
    // over the additions above as well as over the inherited environment.
    for name in spec
        .env_remove
        .iter()
        .chain(&env_remove_publication_credentials())
    {
        command.env_remove(name);
    }
    if let Some(dir) = &spec.workdir {
        command.current_dir(dir);
    }
    Ok(command)
}

/// The builtin metrics of a command that ran.
struct Builtins {
    wall_s: Finite,
    user_s: Finite,
    sys_s: Finite,
    max_rss_bytes: u64,
}

/// What a spawned command did.
struct Ran {
    exit: Exit,
    wall: Duration,
    stdout: Capture,
    stderr: Capture,
}

/// Drains the pipes, enforces the timeout, clears the process group and
/// reaps the command.
fn supervise(mut child: Child, spec: &ChildSpec, spawned_at: Instant) -> Result<Ran, ChildError> {
    let pid = child.id();
    // The child leads its own group, so its pid is the group id. Pids fit in
    // an i32 on every Unix (Linux caps them at 2^22).
    let pgid = Pid::from_raw(pid as i32);

    let (done_tx, done_rx) = mpsc::channel();
    let stdout = Arc::new(Mutex::new(Capture::new(spec.json_metrics)));
    let stderr = Arc::new(Mutex::new(Capture::new(false)));
    spawn_reader(child.stdout.take(), Arc::clone(&stdout), done_tx.clone());
    spawn_reader(child.stderr.take(), Arc::clone(&stderr), done_tx);

    let (exit_tx, exit_rx) = mpsc::channel();
    thread::spawn(move || {
        let observed = wait_for_exit(pgid);
        let _ = exit_tx.send((observed, Instant::now()));
    });

    let mut deadline = spec.timeout.map(|t| spawned_at + t);
    let mut sent: Option<Signal> = None;
    let (observed, exited_at) = loop {
        let message = match deadline {
            None => exit_rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(d) => exit_rx.recv_timeout(d.saturating_duration_since(Instant::now())),
        };
        match message {
            Ok(m) => break m,
            Err(RecvTimeoutError::Timeout) if sent.is_none() => {
                signal_group(pgid, Signal::SIGTERM);
                sent = Some(Signal::SIGTERM);
                deadline = Some(Instant::now() + TERM_GRACE);
            }
            Err(RecvTimeoutError::Timeout) => {
                signal_group(pgid, Signal::SIGKILL);
                sent = Some(Signal::SIGKILL);
                deadline = None;
            }
            Err(RecvTimeoutError::Disconnected) => {
                break (Err(Errno::ECHILD), Instant::now());
            }
        }
    };

    // The leader has exited but is not reaped yet, so the group id is still
    // ours: kill whatever the command left behind, then reap it.
    signal_group(pgid, Signal::SIGKILL);
    let status = child
        .wait()
        .map_err(|source| ChildError::Wait { pid, source })?;
    if let Err(errno) = observed {
        return Err(ChildError::Wait {
            pid,
            source: errno.into(),
        });
    }

    let drain_deadline = Instant::now() + PIPE_DRAIN_GRACE;
    for _ in 0..2 {
        let left = drain_deadline.saturating_duration_since(Instant::now());
        if done_rx.recv_timeout(left).is_err() {
            break;
        }
    }

    let exit = match (sent, spec.timeout) {
        (Some(signal), Some(limit)) => Exit::TimedOut {
            after_s: seconds(limit),
            signal: signal as i32,
        },
        _ => classify(status),
    };
    Ok(Ran {
        exit,
        wall: exited_at.saturating_duration_since(spawned_at),
        stdout: take_capture(&stdout),
        stderr: take_capture(&stderr),
    })
}

/// Blocks until process `pid` exits, without reaping it (`WNOWAIT`).
fn wait_for_exit(pid: Pid) -> Result<(), Errno> {
    loop {
        match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
            Ok(_) => return Ok(()),
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Signals every process in the group. Errors are ignored: `ESRCH` means the
/// group is already gone, and the wrapper may always signal its own child's
/// group.
fn signal_group(pgid: Pid, signal: Signal) {
    let _ = killpg(pgid, signal);
}

/// Turns a wait status into an [`Exit`].
fn classify(status: ExitStatus) -> Exit {
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Exited { code },
        (None, Some(signal)) => Exit::Signaled {
            signal,
            name: signal_name(signal),
        },
        // A reaped process has exited or was signalled; if the platform ever
        // reports neither, record it as a failure, never as success.
        (None, None) => Exit::Signaled {
            signal: 0,
            name: format!("unknown wait status {}", status.into_raw()),
        },
    }
}

/// `SIGKILL` for 9, and so on; `signal N` for numbers without a name.
fn signal_name(signal: i32) -> String {
    Signal::try_from(signal).map_or_else(|_| format!("signal {signal}"), |s| s.as_str().to_owned())
}

// ---------------------------------------------------------------------------
// Output capture

/// What has been read from one pipe.
#[derive(Debug)]
struct Capture {
    tail: Tail,
    metrics: Option<MetricParser>,
}

impl Capture {
    fn new(json_metrics: bool) -> Self {
        Self {
            tail: Tail::default(),
            metrics: json_metrics.then(MetricParser::default),
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.tail.push(chunk);
        if let Some(parser) = &mut self.metrics {
            parser.push(chunk);
        }
    }

    /// Ends the last, unterminated line. Idempotent.
    fn finish(&mut self) {
        if let Some(parser) = &mut self.metrics {
            parser.finish();
        }
    }
}

fn lock(capture: &Mutex<Capture>) -> MutexGuard<'_, Capture> {
    capture.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes what was captured so far, even if the reader is still blocked on a
/// pipe held open by a process outside the group.
fn take_capture(capture: &Mutex<Capture>) -> Capture {
    let mut guard = lock(capture);
    let mut taken = std::mem::replace(&mut *guard, Capture::new(false));
    taken.finish();
    taken
}

/// Reads `pipe` to its end into `capture`, then reports on `done`.
fn spawn_reader<R>(pipe: Option<R>, capture: Arc<Mutex<Capture>>, done: mpsc::Sender<()>)
where
    R: Read + Send + 'static,
{
    thread::spawn(move || {
        if let Some(mut pipe) = pipe {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => lock(&capture).push(&buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        lock(&capture).finish();
        let _ = done.send(());
    });
}

/// The last [`TAIL_BYTES`] of a stream, kept in at most twice that memory.
#[derive(Debug, Default)]
struct Tail {
    buf: Vec<u8>,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= TAIL_BYTES {
            self.buf.clear();
            self.buf
                .extend_from_slice(&chunk[chunk.len() - TAIL_BYTES..]);
        } else {
            self.buf.extend_from_slice(chunk);
            if self.buf.len() > 2 * TAIL_BYTES {
                self.buf.drain(..self.buf.len() - TAIL_BYTES);
            }
        }
    }

    /// Lossy UTF-8 of the tail, at most [`TAIL_BYTES`] long. A character cut
    /// by the tail boundary is dropped rather than shown as U+FFFD.
    fn into_string(self) -> String {
        let mut bytes = &self.buf[self.buf.len().saturating_sub(TAIL_BYTES)..];
        let mut skipped = 0;
        while skipped < 3 && bytes.first().is_some_and(|b| b & 0xC0 == 0x80) {
            bytes = &bytes[1..];
            skipped += 1;
        }
        let text = String::from_utf8_lossy(bytes);
        if text.len() <= TAIL_BYTES {
            return text.into_owned();
        }
        // Replacement characters can make the text longer than the bytes.
        let mut start = text.len() - TAIL_BYTES;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        text[start..].to_owned()
    }
}

/// Splits a stream into lines and parses metric lines as they arrive,
/// holding at most one line of [`MAX_METRIC_LINE_BYTES`].
#[derive(Debug, Default)]
struct MetricParser {
    line: Vec<u8>,
    overlong: bool,
    line_no: u64,
    metrics: Vec<Metric>,
    errors: Vec<MetricError>,
}

impl MetricParser {
    fn push(&mut self, mut chunk: &[u8]) {
        while let Some(i) = chunk.iter().position(|&b| b == b'\n') {
            self.extend(&chunk[..i]);
            self.end_line();
            chunk = &chunk[i + 1..];
        }
        self.extend(chunk);
    }

    fn extend(&mut self, part: &[u8]) {
        if self.overlong {
            return;
        }
        if self.line.len() + part.len() > MAX_METRIC_LINE_BYTES {
            self.overlong = true;
            self.line = Vec::new();
        } else {
            self.line.extend_from_slice(part);
        }
    }

    fn end_line(&mut self) {
        self.line_no += 1;
        let outcome = if self.overlong {
            Some(Err(format!(
                "line is longer than {MAX_METRIC_LINE_BYTES} bytes; not parsed"
            )))
        } else {
            parse_metric_line(&self.line)
        };
        match outcome {
            None => {}
            Some(Ok(metric)) => self.metrics.push(metric),
            Some(Err(reason)) => self.errors.push(MetricError {
                line: self.line_no,
                reason,
            }),
        }
        self.line.clear();
        self.overlong = false;
    }

    fn finish(&mut self) {
        if !self.line.is_empty() || self.overlong {
            self.end_line();
        }
    }
}

/// `None` for a line that is not a metric line, otherwise the metric or why
/// it was rejected.
fn parse_metric_line(line: &[u8]) -> Option<Result<Metric, String>> {
    let line = line.trim_ascii();
    if !line.starts_with(b"{") {
        return None;
    }
    let object: serde_json::Map<String, serde_json::Value> = match serde_json::from_slice(line) {
        Ok(object) => object,
        Err(e) if contains(line, b"\"metric\"") => {
            return Some(Err(format!("not valid JSON: {e}")));
        }
        Err(_) => return None,
    };
    let name = object.get("metric")?;
    Some(metric_from_object(name, &object))
}

fn metric_from_object(
    name: &serde_json::Value,
    object: &serde_json::Map<String, serde_json::Value>,
) -> Result<Metric, String> {
    use serde_json::Value;
    let name = match name {
        Value::String(s) if !s.is_empty() => s.clone(),
        _ => return Err("\"metric\" must be a non-empty string".to_owned()),
    };
    if BUILTIN_METRICS.contains(&name.as_str()) {
        return Err(format!(
            "metric name {name:?} is reserved for a builtin metric"
        ));
    }
    // The same limits as the result record's schema, so a metric accepted
    // here can always be sealed.
    if name.len() > 128 {
        return Err("metric name is longer than 128 bytes".to_owned());
    }
    if let Some(Value::String(unit)) = object.get("unit")
        && unit.len() > 32
    {
        return Err("unit is longer than 32 bytes".to_owned());
    }
    if let Some(key) = object
        .keys()
        .find(|k| !matches!(k.as_str(), "metric" | "value" | "unit" | "direction"))
    {
        return Err(format!("unknown key {key:?}"));
    }
    let value = match object.get("value") {
        None => return Err("missing \"value\" (use null for not measured)".to_owned()),
        Some(Value::Null) => None,
        Some(Value::Number(n)) => {
            let v = n
                .as_f64()
                .ok_or_else(|| format!("value {n} is not representable"))?;
            Some(Finite::new(v).map_err(|e| e.to_string())?)
        }
        Some(_) => return Err("\"value\" must be a number or null".to_owned()),
    };
    let unit = match object.get("unit") {
        None => return Err("missing \"unit\"".to_owned()),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("\"unit\" must be a string".to_owned()),
    };
    let higher_is_better = match object.get("direction") {
        None => false,
        Some(Value::String(d)) if d == "lower_is_better" => false,
        Some(Value::String(d)) if d == "higher_is_better" => true,
        Some(_) => {
            return Err(
                "\"direction\" must be \"lower_is_better\" or \"higher_is_better\"".to_owned(),
            );
        }
    };
    Ok(Metric {
        name,
        value,
        unit,
        higher_is_better,
    })
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

// ---------------------------------------------------------------------------
// Clock, host, usage and files

fn now_rfc3339() -> String {
    format!("{:.6}", jiff::Timestamp::now())
}

fn host_name() -> Result<String, ChildError> {
    let name = nix::unistd::gethostname().map_err(ChildError::Hostname)?;
    Ok(name.to_string_lossy().into_owned())
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

/// Resource usage of the reaped children of this process.
struct ChildrenUsage {
    user: TimeVal,
    sys: TimeVal,
    max_rss_bytes: u64,
}

fn children_usage() -> Result<ChildrenUsage, ChildError> {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).map_err(ChildError::Usage)?;
    // ru_maxrss is in KiB on Linux.
    let max_rss_kib = u64::try_from(usage.max_rss()).unwrap_or(0);
    Ok(ChildrenUsage {
        user: usage.user_time(),
        sys: usage.system_time(),
        max_rss_bytes: max_rss_kib.saturating_mul(1024),
    })
}

/// `after - before` in seconds, never negative.
fn cpu_delta(before: TimeVal, after: TimeVal) -> Finite {
    let micros = |t: TimeVal| i128::from(t.tv_sec()) * 1_000_000 + i128::from(t.tv_usec());
    let delta = (micros(after) - micros(before)).max(0);
    Finite::new(delta as f64 / 1e6).unwrap_or(Finite::ZERO)
}

fn seconds(d: Duration) -> Finite {
    // A Duration is always finite; the fallback is unreachable.
    Finite::new(d.as_secs_f64()).unwrap_or(Finite::ZERO)
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), ChildError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|source| ChildError::Encode {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    fsio::write_atomic(path, &bytes)?;
    Ok(())
}

fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, ChildError> {
    let bytes = std::fs::read(path).map_err(|source| ChildError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|e| ChildError::Invalid {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

fn check_schema(found: &str, expected: &str) -> Result<(), String> {
    if found == expected {
        Ok(())
    } else {
        Err(format!("schema is {found:?}, expected {expected:?}"))
    }
}

fn check_timestamp(field: &str, value: &str) -> Result<(), String> {
    value
        .parse::<jiff::Timestamp>()
        .map(|_| ())
        .map_err(|e| format!("{field} {value:?} is not an RFC 3339 timestamp: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8], chunk: usize) -> MetricParser {
        let mut p = MetricParser::default();
        for c in input.chunks(chunk) {
            p.push(c);
        }
        p.finish();
        p
    }

    #[test]
    fn start_ticks_survive_odd_command_names() {
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(start_ticks_from_stat(stat), Some(987_654));
        assert_eq!(start_ticks_from_stat("42 (x) S 1"), None);
        let own = own_start_ticks().expect("reads /proc/self/stat");
        assert!(own > 0);
    }

    #[test]
    fn metric_lines_are_split_across_chunks_and_classified() {
        let input = b"hello\n{\"metric\":\"a\",\"value\":1.5,\"unit\":\"s\"}\r\n\
{\"metric\":\"b\",\"value\":null,\"unit\":\"\"}\n\
{\"metric\":\"c\",\"unit\":\"s\"}\n\
{\"metric\":\"d\",\"value\":1e999,\"unit\":\"s\"}\n\
{\"other\":1}\n\
{\"metric\":\"wall_s\",\"value\":1,\"unit\":\"s\"}\n\
{\"metric\":\"e\",\"value\":2,\"unit\":\"s\",\"extra\":true}\n\
{\"metric\":\"f\",\"value\":3,\"unit\":\"B\"}";
        for chunk in [1, 7, 4096] {
            let p = parse_all(input, chunk);
            let names: Vec<_> = p.metrics.iter().map(|m| m.name.as_str()).collect();
            assert_eq!(names, ["a", "b", "f"], "chunk size {chunk}");
            assert_eq!(p.metrics[1].value, None);
            let lines: Vec<_> = p.errors.iter().map(|e| e.line).collect();
            assert_eq!(lines, [4, 5, 7, 8], "chunk size {chunk}: {:?}", p.errors);
        }
    }

    #[test]
    fn overlong_lines_are_errors_and_parsing_resumes() {
        let mut input = vec![b'x'; MAX_METRIC_LINE_BYTES + 1];
        input.extend_from_slice(b"\n{\"metric\":\"a\",\"value\":1,\"unit\":\"s\"}\n");
        input.extend(std::iter::repeat_n(b'y', MAX_METRIC_LINE_BYTES + 1));
        let p = parse_all(&input, 1000);
        assert_eq!(p.metrics.len(), 1);
        let lines: Vec<_> = p.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [1, 3]);
        let exact = vec![b' '; MAX_METRIC_LINE_BYTES];
        assert!(parse_all(&exact, 999).errors.is_empty());
    }

    #[test]
    fn tail_is_bounded_and_starts_on_a_character() {
        let mut t = Tail::default();
        for _ in 0..3000 {
            t.push("é".as_bytes());
        }
        let s = t.into_string();
        assert!(s.len() <= TAIL_BYTES);
        assert!(s.chars().all(|c| c == 'é'));

        let mut t = Tail::default();
        t.push(&[0xFF; 3 * TAIL_BYTES]);
        let s = t.into_string();
        assert!(s.len() <= TAIL_BYTES && !s.is_empty());
    }

    #[test]
    fn exit_json_shapes() {
        let cases = [
            (Exit::Exited { code: 3 }, r#"{"kind":"exited","code":3}"#),
            (
                Exit::Signaled {
                    signal: 9,
                    name: "SIGKILL".into(),
                },
                r#"{"kind":"signaled","signal":9,"name":"SIGKILL"}"#,
            ),
            (
                Exit::TimedOut {
                    after_s: Finite::new(0.5).expect("finite"),
                    signal: 15,
                },
                r#"{"kind":"timed_out","after_s":0.5,"signal":15}"#,
            ),
            (
                Exit::SpawnFailed { error: "x".into() },
                r#"{"kind":"spawn_failed","error":"x"}"#,
            ),
        ];
        for (exit, json) in cases {
            assert_eq!(serde_json::to_string(&exit).expect("encodes"), json);
            assert_eq!(serde_json::from_str::<Exit>(json).expect("decodes"), exit);
        }
        assert!(serde_json::from_str::<Exit>(r#"{"kind":"exited","code":0,"x":1}"#).is_err());
        assert!(serde_json::from_str::<Metric>(r#"{"name":"a","unit":"s"}"#).is_err());
        assert_eq!(signal_name(9), "SIGKILL");
    }

    #[test]
    fn removals_win_over_additions() {
        let mut spec = ChildSpec::command(["env"]);
        spec.env.insert("GITHUB_TOKEN".into(), "secret".into());
        spec.env.insert("KEEP".into(), "1".into());
        spec.env.insert("DROP".into(), "1".into());
        spec.env_remove.push("DROP".into());
        let command = build_command(&spec).expect("valid spec");
        let envs: BTreeMap<_, _> = command
            .get_envs()
            .map(|(k, v)| (k.to_string_lossy().into_owned(), v.is_some()))
            .collect();
        assert_eq!(envs.get("KEEP"), Some(&true));
        assert_eq!(envs.get("DROP"), Some(&false));
        for name in env_remove_publication_credentials() {
            assert_eq!(envs.get(&name), Some(&false), "{name} is removed");
        }
    }

    #[test]
    fn bad_specs_are_refused() {
        assert!(build_command(&ChildSpec::default()).is_err());
        let mut spec = ChildSpec::shell("true");
        spec.argv.push("extra".into());
        assert!(build_command(&spec).is_err());
    }
}
