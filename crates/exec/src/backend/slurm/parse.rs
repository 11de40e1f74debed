//! Parsers for what Slurm's tools print, and the normalization of job
//! states. Pure functions over text, pinned by golden tests on captured real
//! output (`tests/fixtures/slurm/`).

use std::fmt;

/// A normalized Slurm job state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlurmState {
    /// Waiting for resources or priority.
    Pending,
    /// Running.
    Running,
    /// Finishing (epilog, cleanup).
    Completing,
    /// Finished with exit 0.
    Completed,
    /// Non-zero exit or launch failure.
    Failed,
    /// Killed at its time limit.
    Timeout,
    /// Cancelled, with the uid that cancelled it when Slurm says (`by 0`).
    Cancelled {
        /// The `by N` suffix, if any.
        by: Option<String>,
    },
    /// Killed by the memory limit.
    OutOfMemory,
    /// Its node failed.
    NodeFail,
    /// Preempted.
    Preempted,
    /// Requeued (will run again).
    Requeued,
    /// The node failed to boot.
    BootFail,
    /// Missed its deadline.
    Deadline,
    /// Suspended.
    Suspended,
    /// A state this build does not know, kept verbatim.
    Other(String),
}

impl SlurmState {
    /// Parses a state as `squeue %T`, `sacct State` or `scontrol JobState`
    /// print it (`CANCELLED by 0`, `CANCELLED+`, `COMPLETED`).
    pub fn parse(text: &str) -> SlurmState {
        let text = text.trim();
        let (word, rest) = match text.split_once(' ') {
            Some((w, r)) => (w, Some(r.trim())),
            None => (text, None),
        };
        let word = word.trim_end_matches('+');
        match word {
            "PENDING" | "PD" => SlurmState::Pending,
            "RUNNING" | "R" => SlurmState::Running,
            "COMPLETING" | "CG" => SlurmState::Completing,
            "COMPLETED" | "CD" => SlurmState::Completed,
            "FAILED" | "F" => SlurmState::Failed,
            "TIMEOUT" | "TO" => SlurmState::Timeout,
            "CANCELLED" | "CA" => SlurmState::Cancelled {
                by: rest
                    .and_then(|r| r.strip_prefix("by "))
                    .map(|s| s.trim().to_owned()),
            },
            "OUT_OF_MEMORY" | "OOM" => SlurmState::OutOfMemory,
            "NODE_FAIL" | "NF" => SlurmState::NodeFail,
            "PREEMPTED" | "PR" => SlurmState::Preempted,
            "REQUEUED" | "RQ" | "REQUEUE_FED" | "REQUEUE_HOLD" => SlurmState::Requeued,
            "BOOT_FAIL" | "BF" => SlurmState::BootFail,
            "DEADLINE" | "DL" => SlurmState::Deadline,
            "SUSPENDED" | "S" => SlurmState::Suspended,
            other => SlurmState::Other(other.to_owned()),
        }
    }

    /// Whether the job will not change state any more (as far as Slurm
    /// knows; a requeue starts a new run).
    pub fn is_terminal(&self) -> bool {
        // A state this build does not know is no verdict either.
        !matches!(
            self,
            SlurmState::Pending
                | SlurmState::Running
                | SlurmState::Completing
                | SlurmState::Requeued
                | SlurmState::Suspended
                | SlurmState::Other(_)
        )
    }
}

impl fmt::Display for SlurmState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SlurmState::Pending => f.write_str("PENDING"),
            SlurmState::Running => f.write_str("RUNNING"),
            SlurmState::Completing => f.write_str("COMPLETING"),
            SlurmState::Completed => f.write_str("COMPLETED"),
            SlurmState::Failed => f.write_str("FAILED"),
            SlurmState::Timeout => f.write_str("TIMEOUT"),
            SlurmState::Cancelled { by: Some(by) } => write!(f, "CANCELLED by {by}"),
            SlurmState::Cancelled { by: None } => f.write_str("CANCELLED"),
            SlurmState::OutOfMemory => f.write_str("OUT_OF_MEMORY"),
            SlurmState::NodeFail => f.write_str("NODE_FAIL"),
            SlurmState::Preempted => f.write_str("PREEMPTED"),
            SlurmState::Requeued => f.write_str("REQUEUED"),
            SlurmState::BootFail => f.write_str("BOOT_FAIL"),
            SlurmState::Deadline => f.write_str("DEADLINE"),
            SlurmState::Suspended => f.write_str("SUSPENDED"),
            SlurmState::Other(s) => f.write_str(s),
        }
    }
}

/// Which array tasks a row covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tasks {
    /// One task.
    One(u64),
    /// Several tasks, e.g. the pending range `[3-9%2]` or `[1,4-6]`.
    Many(Vec<u64>),
    /// Not an array job.
    NotArray,
}

impl Tasks {
    /// Whether task `t` is covered.
    pub fn contains(&self, t: u64) -> bool {
        match self {
            Tasks::One(x) => *x == t,
            Tasks::Many(v) => v.contains(&t),
            Tasks::NotArray => false,
        }
    }
}

/// Splits a job id as Slurm prints it (`123`, `123_4`, `123_[0-4%2]`,
/// `123_[1,3-5]`, `123.batch`) into the array job id and the tasks. Step
/// suffixes (`.batch`, `.0`) are returned separately.
/// The most tasks one folded id (`J_[0-999,2000-2999]`) may stand for, all
/// its ranges together; a longer one is an unparsable line.
pub const MAX_FOLDED_TASKS: u64 = 1_000_001;

pub fn split_job_id(text: &str) -> Option<(String, Tasks, Option<String>)> {
    let (id, step) = match text.split_once('.') {
        Some((i, s)) => (i, Some(s.to_owned())),
        None => (text, None),
    };
    let (job, tasks) = match id.split_once('_') {
        None => (id, Tasks::NotArray),
        Some((job, t)) => {
            if let Some(inner) = t.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
                let inner = inner.split('%').next().unwrap_or("");
                let mut all = Vec::new();
                for part in inner.split(',') {
                    match part.split_once('-') {
                        Some((a, b)) => {
                            let (a, b) = (a.parse::<u64>().ok()?, b.parse::<u64>().ok()?);
                            // One range, and all of them together, hold at
                            // most MAX_FOLDED_TASKS: a hostile row cannot
                            // make the look allocate without bound.
                            if b < a || b - a >= MAX_FOLDED_TASKS {
                                return None;
                            }
                            if all.len() as u64 + (b - a + 1) > MAX_FOLDED_TASKS {
                                return None;
                            }
                            all.extend(a..=b);
                        }
                        None if all.len() as u64 >= MAX_FOLDED_TASKS => return None,
                        None => all.push(part.parse().ok()?),
                    }
                }
                (job, Tasks::Many(all))
            } else {
                (job, Tasks::One(t.parse().ok()?))
            }
        }
    };
    if job.is_empty() || !job.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((job.to_owned(), tasks, step))
}

/// One row of `squeue -h -r -o '%i|%A|%F|%K|%T|%r|%j'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqueueRow {
    /// Array job id (`%F`).
    pub array_job_id: String,
    /// Array task id (`%K`), `None` for a non-array job.
    pub task: Option<u64>,
    /// The task's own job id (`%A`).
    pub job_id: String,
    /// State (`%T`).
    pub state: SlurmState,
    /// Reason (`%r`), e.g. `Priority`, `launch_failed_requeued_held`.
    pub reason: String,
    /// Job name (`%j`); `None` in output of the older six-field format.
    pub name: Option<String>,
}

/// The squeue output format these parsers expect: printed id, job id, array
/// job id, array task id (`N/A` outside arrays), state, reason, and last the
/// job name (which may itself contain `|`).
pub const SQUEUE_FORMAT: &str = "%i|%A|%F|%K|%T|%r|%j";

/// A line that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unparsable {tool} line {line}: {text:?}")]
pub struct ParseLineError {
    /// Which tool printed it.
    pub tool: &'static str,
    /// 1-based line number.
    pub line: usize,
    /// The line, cut to [`MAX_LINE_ECHO`] characters.
    pub text: String,
}

/// How much of an unparsable line an error repeats.
pub const MAX_LINE_ECHO: usize = 120;

fn line_error(tool: &'static str, n: usize, line: &str) -> ParseLineError {
    let mut text: String = line.chars().take(MAX_LINE_ECHO).collect();
    if text.len() < line.len() {
        text.push_str(&format!("… ({} bytes)", line.len()));
    }
    ParseLineError {
        tool,
        line: n + 1,
        text,
    }
}

/// Parses squeue output in [`SQUEUE_FORMAT`] (or the older format without
/// the name), failing at the first unparsable line.
pub fn parse_squeue(text: &str) -> Result<Vec<SqueueRow>, ParseLineError> {
    let (rows, mut errors) = squeue_rows(text);
    match errors.is_empty() {
        true => Ok(rows),
        false => Err(errors.swap_remove(0)),
    }
}

/// Parses squeue output line by line: the rows that parse, and every line
/// that does not.
pub fn squeue_rows(text: &str) -> (Vec<SqueueRow>, Vec<ParseLineError>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match squeue_row(line) {
            Some(row) => out.push(row),
            None => errors.push(line_error("squeue", n, line)),
        }
    }
    (out, errors)
}

fn squeue_row(line: &str) -> Option<SqueueRow> {
    let f: Vec<&str> = line.split('|').collect();
    if f.len() < 6 {
        return None;
    }
    let task = match f[3] {
        "N/A" => None,
        t => Some(t.parse().ok()?),
    };
    let (array_job_id, job_id) = (f[2], f[1]);
    if [array_job_id, job_id]
        .iter()
        .any(|id| id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    Some(SqueueRow {
        array_job_id: array_job_id.to_owned(),
        task,
        job_id: job_id.to_owned(),
        state: SlurmState::parse(f[4]),
        reason: f[5].to_owned(),
        name: (f.len() > 6).then(|| f[6..].join("|")),
    })
}

/// The sacct fields these parsers expect, in order; the job name comes last
/// because it may itself contain `|`.
pub const SACCT_FORMAT: &str =
    "JobID,JobIDRaw,State,ExitCode,Start,End,Elapsed,NodeList,Reason,JobName";

/// One row of `sacct -n --parsable2 --format=` [`SACCT_FORMAT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SacctRow {
    /// The job id as printed (`59_3`, `59_[4-99]`).
    pub id: String,
    /// Array job id.
    pub array_job_id: String,
    /// The tasks this row covers.
    pub tasks: Tasks,
    /// Step suffix, if any (`batch`).
    pub step: Option<String>,
    /// `JobIDRaw`.
    pub job_id_raw: String,
    /// State.
    pub state: SlurmState,
    /// Exit code of the script; `None` when Slurm recorded none.
    pub exit_code: Option<i32>,
    /// Signal that ended it (0 if none); `None` when Slurm recorded none.
    pub signal: Option<i32>,
    /// Start time as printed (`Unknown`/`None` when not started).
    pub start: String,
    /// End time as printed.
    pub end: String,
    /// Reason (`None`, `JobHeldUser`, ...).
    pub reason: String,
    /// Job name; `None` in output of the older format without it (and for
    /// steps, which sacct prints with the step name).
    pub name: Option<String>,
    /// How often the job was restarted (requeued), when the source says:
    /// `scontrol`'s `Restarts`. sacct has no such field; with `-D` it lists
    /// one record per run instead.
    pub restarts: Option<u32>,
}

/// Parses sacct `--parsable2` output in [`SACCT_FORMAT`] (or the older
/// format without the name), failing at the first unparsable line.
pub fn parse_sacct(text: &str) -> Result<Vec<SacctRow>, ParseLineError> {
    let (rows, mut errors) = sacct_rows(text);
    match errors.is_empty() {
        true => Ok(rows),
        false => Err(errors.swap_remove(0)),
    }
}

/// Parses sacct output line by line: the rows that parse, and every line
/// that does not.
pub fn sacct_rows(text: &str) -> (Vec<SacctRow>, Vec<ParseLineError>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match sacct_row(line) {
            Some(row) => out.push(row),
            None => errors.push(line_error("sacct", n, line)),
        }
    }
    (out, errors)
}

fn sacct_row(line: &str) -> Option<SacctRow> {
    let f: Vec<&str> = line.split('|').collect();
    if f.len() < 9 {
        return None;
    }
    let (array_job_id, tasks, step) = split_job_id(f[0])?;
    // Steps of a job lost to a node failure record no exit code at all:
    // that is "not recorded", not 0.
    let (code, signal) = if f[3].is_empty() {
        (None, None)
    } else {
        let (c, s) = f[3].split_once(':')?;
        (Some(c.parse().ok()?), Some(s.parse().ok()?))
    };
    Some(SacctRow {
        id: f[0].to_owned(),
        array_job_id,
        tasks,
        name: (f.len() > 9 && step.is_none()).then(|| f[9..].join("|")),
        step,
        job_id_raw: f[1].to_owned(),
        state: SlurmState::parse(f[2]),
        exit_code: code,
        signal,
        start: f[4].to_owned(),
        end: f[5].to_owned(),
        reason: f[8].to_owned(),
        restarts: None,
    })
}

/// The fields of one `scontrol -o show job` line.
pub fn parse_scontrol_oneliner(line: &str) -> Vec<(String, String)> {
    // Values may contain spaces only in a few fields (Command, WorkDir,
    // Reason...); split on ` Key=` boundaries: a space followed by a token
    // of [A-Za-z:/] and `=`.
    let mut out = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim().to_owned();
        let after = &rest[eq + 1..];
        let mut end = after.len();
        let bytes = after.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b' ' {
                let tail = &after[i + 1..];
                let k_len = tail
                    .bytes()
                    .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b':' | b'/' | b'_'))
                    .count();
                if k_len > 0 && tail.as_bytes().get(k_len) == Some(&b'=') {
                    end = i;
                    break;
                }
            }
            i += 1;
        }
        out.push((key, after[..end].to_owned()));
        rest = after[end..].trim_start();
    }
    out
}

/// Turns `scontrol -o show job` lines (one per array task) into rows shaped
/// like sacct's, for clusters without accounting.
/// [`scontrol_rows`], and a problem (naming scontrol) for every non-empty
/// line that holds no job record: such an answer is not complete.
pub fn scontrol_rows_checked(text: &str) -> (Vec<SacctRow>, Vec<String>) {
    let rows = scontrol_rows(text);
    let errors = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| {
            let f = parse_scontrol_oneliner(l);
            !f.iter().any(|(k, _)| k == "JobId") || !f.iter().any(|(k, _)| k == "JobState")
        })
        .map(|l| {
            let cut: String = l.chars().take(120).collect();
            format!("scontrol printed a line that is not a job record: {cut:?}")
        })
        .collect();
    (rows, errors)
}

pub fn scontrol_rows(text: &str) -> Vec<SacctRow> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f = parse_scontrol_oneliner(line);
        let get = |k: &str| f.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.clone());
        let Some(job_id) = get("JobId") else { continue };
        let array = get("ArrayJobId").unwrap_or_else(|| job_id.clone());
        let (id, tasks) = match get("ArrayTaskId") {
            Some(t) => {
                let t = if t.bytes().all(|b| b.is_ascii_digit()) {
                    t
                } else {
                    format!("[{t}]")
                };
                let id = format!("{array}_{t}");
                match split_job_id(&id) {
                    Some((_, tasks, _)) => (id, tasks),
                    None => continue,
                }
            }
            None => (job_id.clone(), Tasks::NotArray),
        };
        let (code, signal) = get("ExitCode")
            .and_then(|e| {
                let (c, s) = e.split_once(':')?;
                Some((c.parse().ok(), s.parse().ok()))
            })
            .unwrap_or((None, None));
        out.push(SacctRow {
            id,
            name: get("JobName"),
            array_job_id: array,
            tasks,
            step: None,
            job_id_raw: job_id,
            state: SlurmState::parse(&get("JobState").unwrap_or_default()),
            exit_code: code,
            signal,
            start: get("StartTime").unwrap_or_default(),
            end: get("EndTime").unwrap_or_default(),
            reason: get("Reason").unwrap_or_default(),
            restarts: get("Restarts").and_then(|r| r.parse().ok()),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_normalize() {
        assert_eq!(
            SlurmState::parse("CANCELLED by 0"),
            SlurmState::Cancelled {
                by: Some("0".into())
            }
        );
        assert_eq!(
            SlurmState::parse("CANCELLED+"),
            SlurmState::Cancelled { by: None }
        );
        assert_eq!(SlurmState::parse("OUT_OF_MEMORY"), SlurmState::OutOfMemory);
        assert_eq!(
            SlurmState::parse("WEIRD"),
            SlurmState::Other("WEIRD".into())
        );
        assert!(!SlurmState::Pending.is_terminal());
        assert!(SlurmState::Timeout.is_terminal());
    }

    #[test]
    fn job_ids_split() {
        assert_eq!(
            split_job_id("123_4"),
            Some(("123".into(), Tasks::One(4), None))
        );
        assert_eq!(
            split_job_id("123_[0-2,5%2]"),
            Some(("123".into(), Tasks::Many(vec![0, 1, 2, 5]), None))
        );
        assert_eq!(
            split_job_id("77.batch"),
            Some(("77".into(), Tasks::NotArray, Some("batch".into())))
        );
        assert_eq!(split_job_id("x_1"), None);
        assert_eq!(split_job_id("1_[5-2]"), None);
    }

    #[test]
    fn scontrol_fields_split_on_keys() {
        let f = parse_scontrol_oneliner(
            "JobId=5 ArrayJobId=5 ArrayTaskId=0 JobState=FAILED Reason=NonZeroExitCode Dependency=(null) ExitCode=3:0 Command=/bin/sh -c x WorkDir=/tmp",
        );
        let get = |k: &str| f.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.as_str());
        assert_eq!(get("JobState"), Some("FAILED"));
        assert_eq!(get("ExitCode"), Some("3:0"));
        assert_eq!(get("Command"), Some("/bin/sh -c x"));
        assert_eq!(get("WorkDir"), Some("/tmp"));
    }
}
