//! Calls to Slurm's command-line tools, each bounded: a call that runs
//! longer than its timeout is killed with its whole process group, and a
//! call that prints more than [`MAX_STDOUT`] bytes is refused. Either is an
//! error that names the tool, never a silent empty answer.

use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::SlurmError;
use crate::child;

/// The default bound of one scheduler call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);

/// The most a tool may print on standard output (64 MiB: about a million
/// task rows).
pub const MAX_STDOUT: u64 = 64 << 20;

/// How long a killed tool is given to be reaped.
const REAP_WAIT: Duration = Duration::from_secs(5);

/// The most of a tool's standard error that is kept (the rest is read and
/// dropped).
const MAX_STDERR: u64 = 64 << 10;

/// How the scheduler tools are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerOptions {
    /// The bound of each call (`--scheduler-timeout`).
    pub timeout: Duration,
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        SchedulerOptions {
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// What a tool printed, and how it ended.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    /// Standard output.
    pub stdout: String,
    /// Standard error, trimmed.
    pub stderr: String,
    /// How it ended.
    pub status: ExitStatus,
}

struct Captured {
    bytes: Vec<u8>,
    overflow: bool,
}

fn read_bounded(mut r: impl Read, limit: u64) -> Captured {
    let mut bytes = Vec::new();
    let _ = r.by_ref().take(limit).read_to_end(&mut bytes);
    // Drain the rest so that the tool never blocks on a full pipe.
    let rest = std::io::copy(&mut r, &mut std::io::sink()).unwrap_or(0);
    Captured {
        bytes,
        overflow: rest > 0,
    }
}

fn kill_group(group: u32) {
    if let Ok(id) = i32::try_from(group) {
        let _ = killpg(Pid::from_raw(id), Signal::SIGKILL);
    }
}

/// Runs `program` with `args`, without publication credentials in its
/// environment, in a process group of its own, for at most `opts.timeout`.
pub fn run(
    program: &str,
    args: &[String],
    opts: &SchedulerOptions,
) -> Result<ToolOutput, SlurmError> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for var in child::env_remove_publication_credentials() {
        cmd.env_remove(var);
    }
    let started = Instant::now();
    let deadline = started + opts.timeout;
    let mut proc = cmd.spawn().map_err(|source| SlurmError::Start {
        tool: program.into(),
        source,
    })?;
    let (tx_out, rx_out) = mpsc::channel();
    let (tx_err, rx_err) = mpsc::channel();
    if let Some(out) = proc.stdout.take() {
        std::thread::spawn(move || tx_out.send(read_bounded(out, MAX_STDOUT)));
    }
    if let Some(err) = proc.stderr.take() {
        std::thread::spawn(move || tx_err.send(read_bounded(err, MAX_STDERR)));
    }
    let timed_out = || SlurmError::TimedOut {
        tool: program.into(),
        after: opts.timeout,
    };
    // A thread waits for the exit, so the answer is taken the moment the
    // tool ends rather than at the next poll (polling with a growing pause
    // added up to 20 ms to every call).
    let group = proc.id();
    let (tx_exit, rx_exit) = mpsc::channel();
    std::thread::spawn(move || tx_exit.send(proc.wait()));
    let status = match rx_exit.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(Ok(status)) => status,
        Ok(Err(source)) => {
            kill_group(group);
            return Err(SlurmError::Start {
                tool: program.into(),
                source,
            });
        }
        Err(_) => {
            // Still running (not reaped: the group id is still its own).
            // Killed, then reaped by the waiter before the error returns,
            // so a caller that looks at the scheduler next sees what the
            // tool did, not what it is still doing.
            kill_group(group);
            let _ = rx_exit.recv_timeout(REAP_WAIT);
            return Err(timed_out());
        }
    };
    // The tool has exited; anything it left behind that still holds its
    // output open is bounded by the same deadline.
    let collect = |rx: &mpsc::Receiver<Captured>| {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(c) => Ok(c),
            Err(mpsc::RecvTimeoutError::Disconnected) => Ok(Captured {
                bytes: Vec::new(),
                overflow: false,
            }),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                kill_group(group);
                Err(timed_out())
            }
        }
    };
    let out = collect(&rx_out)?;
    let err = collect(&rx_err)?;
    if out.overflow {
        return Err(SlurmError::TooLarge {
            tool: program.into(),
            limit: MAX_STDOUT,
        });
    }
    Ok(ToolOutput {
        stdout: String::from_utf8_lossy(&out.bytes).into_owned(),
        stderr: String::from_utf8_lossy(&err.bytes).trim().to_owned(),
        status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(ms: u64) -> SchedulerOptions {
        SchedulerOptions {
            timeout: Duration::from_millis(ms),
        }
    }

    #[test]
    fn a_tool_that_answers_in_time_is_read_whole() {
        let out = run(
            "sh",
            &["-c".into(), "echo a; echo b >&2; exit 3".into()],
            &opts(10_000),
        )
        .expect("runs");
        assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("a\n", "b"));
        assert_eq!(out.status.code(), Some(3));
    }

    #[test]
    fn a_tool_that_hangs_is_killed_with_its_group() {
        let dir = tempfile::tempdir().expect("temp dir");
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 60 & echo $! > {}; wait", pidfile.display());
        let err = run("sh", &["-c".into(), script], &opts(300)).expect_err("times out");
        assert!(
            err.to_string().contains("sh timed out after 0.3 s"),
            "{err}"
        );
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .expect("pid written")
            .trim()
            .parse()
            .expect("pid");
        // The grandchild got SIGKILL with the group; wait for it to be reaped.
        let gone = (0..200).any(|_| {
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| !s.contains(") Z "));
            if alive {
                std::thread::sleep(Duration::from_millis(10));
            }
            !alive
        });
        assert!(gone, "the tool's child {pid} survived the timeout");
    }
}
