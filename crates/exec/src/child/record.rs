//! The attempt records: `started.json` ([`ChildStarted`]) and `result.json`
//! ([`ChildResult`]), how a command ended ([`Exit`]), their atomic writes
//! (temporary file, fsync, rename) and their validating reads.

use std::path::Path;

use benchops::Finite;
use benchops::fsio;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::metrics::{Metric, MetricError};
use super::{AttemptIdentity, ChildError};

/// The `schema` of `started.json`.
pub const STARTED_SCHEMA: &str = "benchops-child-started/v1";
/// The `schema` of `result.json`.
pub const RESULT_SCHEMA: &str = "benchops-child-result/v1";
/// The file written before the command is spawned.
pub const STARTED_FILE: &str = "started.json";
/// The file written after the command finished or failed to spawn.
pub const RESULT_FILE: &str = "result.json";

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
    /// See [`AttemptIdentity::restart`]; `None` in a file written before
    /// benchops recorded it.
    #[serde(default)]
    pub restart: Option<u32>,
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
    /// It ran past [`ChildSpec::timeout`](super::ChildSpec::timeout) and the wrapper ended it.
    TimedOut {
        /// The timeout, in seconds.
        after_s: Finite,
        /// The last signal sent to the group: `SIGTERM` (15) if the command
        /// ended within [`TERM_GRACE`](super::TERM_GRACE), otherwise `SIGKILL` (9).
        signal: i32,
    },
    /// It could not be started (for example, the program does not exist).
    SpawnFailed {
        /// Why.
        error: String,
    },
}

impl Exit {
    /// How a run ended, for reasons and failure tallies: `exit 1`,
    /// `signal 9 (SIGKILL)`, `timed out after 30 s`, `failed to start: …`.
    pub fn describe(&self) -> String {
        match self {
            Exit::Exited { code } => format!("exit {code}"),
            Exit::Signaled { signal, name } => format!("signal {signal} ({name})"),
            Exit::TimedOut { after_s, .. } => format!("timed out after {after_s} s"),
            Exit::SpawnFailed { error } => format!("failed to start: {error}"),
        }
    }
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
    /// See [`AttemptIdentity::restart`]: which run of the attempt wrote
    /// this result. `None` in a result written before benchops recorded
    /// it; such a result is not trusted once the scheduler reports a
    /// restart (see `docs/classification.md`).
    #[serde(default)]
    pub restart: Option<u32>,
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
    /// The last [`TAIL_BYTES`](super::TAIL_BYTES) of stdout (lossy UTF-8, at most that long).
    pub stdout_tail: String,
    /// The last [`TAIL_BYTES`](super::TAIL_BYTES) of stderr (lossy UTF-8, at most that long).
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
            restart: self.restart.unwrap_or(0),
        }
    }
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

/// Writes `value` as pretty JSON with a trailing newline, atomically.
/// Whether a record must be durable when its write returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sync {
    /// fsync of the file, rename, fsync of the directory
    /// ([`fsio::write_atomic`]).
    Yes,
    /// Temporary file and rename only: readers still see the old file or
    /// the whole new one, but a power loss may take it.
    No,
}

pub(super) fn write_json<T: Serialize>(
    path: &Path,
    value: &T,
    sync: Sync,
) -> Result<(), ChildError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|source| ChildError::Encode {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    match sync {
        Sync::Yes => fsio::write_atomic(path, &bytes)?,
        Sync::No => write_renamed(path, &bytes)?,
    }
    Ok(())
}

/// Writes `bytes` to a temporary file beside `path` and renames it into
/// place, without fsync.
fn write_renamed(path: &Path, bytes: &[u8]) -> Result<(), fsio::WriteError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let io = |step: &'static str, p: &Path| {
        let p = p.to_path_buf();
        move |source| fsio::WriteError::Io {
            step,
            path: p,
            source,
        }
    };
    std::fs::write(&tmp, bytes).map_err(io("write", &tmp))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io("rename into place", path)(e)
    })
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
    }
}
