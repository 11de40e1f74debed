//! Spawning and supervising one command: its own process group, stdin
//! closed, the environment with publication credentials removed, the
//! timeout (`SIGTERM` to the group, then `SIGKILL` after [`TERM_GRACE`]),
//! clearing the group when the command ends, reaping, and the resource
//! usage of the reaped command (from `wait4(2)`, so that it is this
//! command's own even in a worker that runs many commands one after
//! another).

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use benchops::Finite;
use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;

use super::capture::{Capture, spawn_reader, take_capture};
use super::record::Exit;
use super::{ChildError, ChildSpec, env_remove_publication_credentials};

/// Time between `SIGTERM` and `SIGKILL` when a command times out.
pub const TERM_GRACE: Duration = Duration::from_secs(2);
/// How long the wrapper waits, after reaping, for the output pipes to close.
pub const PIPE_DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Builds the command: its own process group, stdin null, stdout and stderr
/// piped, environment additions first and removals last.
pub(super) fn build_command(spec: &ChildSpec) -> Result<Command, ChildError> {
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
    let subject_tokens = super::subject_token_removals(
        &spec.argv,
        std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()),
    );
    for name in spec
        .env_remove
        .iter()
        .chain(&env_remove_publication_credentials())
        .chain(&subject_tokens)
    {
        command.env_remove(name);
    }
    if let Some(dir) = &spec.workdir {
        command.current_dir(dir);
    }
    Ok(command)
}

/// The builtin metrics of a command that ran.
pub(super) struct Builtins {
    /// Wall time.
    pub(super) wall_s: Finite,
    /// User CPU time.
    pub(super) user_s: Finite,
    /// System CPU time.
    pub(super) sys_s: Finite,
    /// Peak resident set.
    pub(super) max_rss_bytes: u64,
}

/// What a spawned command did.
pub(super) struct Ran {
    /// How it ended.
    pub(super) exit: Exit,
    /// Wall time from just before spawn to the observed exit.
    pub(super) wall: Duration,
    /// What stdout held.
    pub(super) stdout: Capture,
    /// What stderr held.
    pub(super) stderr: Capture,
    /// The resource usage of the reaped command.
    pub(super) usage: Usage,
}

/// Drains the pipes, enforces the timeout, clears the process group and
/// reaps the command.
pub(super) fn supervise(
    mut child: Child,
    spec: &ChildSpec,
    spawned_at: Instant,
) -> Result<Ran, ChildError> {
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
    drop(child.stdin.take());
    let (status, usage) = reap(pgid).map_err(|source| ChildError::Wait { pid, source })?;
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
        usage,
    })
}

/// Reaps process `pid` with `wait4(2)`: its wait status and the resource
/// usage of it and of the descendants it waited for, nothing else. Unlike
/// `getrusage(RUSAGE_CHILDREN)`, whose peak resident set is a high-water
/// mark over every child the caller ever reaped, this is one command's own.
#[expect(
    unsafe_code,
    reason = "wait4(2) is the one call that returns the resource usage of one reaped child, and neither std nor nix wraps it"
)]
fn reap(pid: Pid) -> std::io::Result<(ExitStatus, Usage)> {
    let mut status: libc::c_int = 0;
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    loop {
        // SAFETY: `status` and `usage` are live, writable and of the types
        // wait4 writes; `pid` is our own unreaped child.
        let reaped = unsafe { libc::wait4(pid.as_raw(), &mut status, 0, usage.as_mut_ptr()) };
        if reaped == pid.as_raw() {
            // SAFETY: wait4 filled it, and an all-zero rusage (plain
            // integers) is a valid value in any case.
            let usage = unsafe { usage.assume_init() };
            return Ok((ExitStatus::from_raw(status), Usage::from_rusage(&usage)));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
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
pub(super) fn signal_name(signal: i32) -> String {
    Signal::try_from(signal).map_or_else(|_| format!("signal {signal}"), |s| s.as_str().to_owned())
}

/// The resource usage of one reaped command.
#[derive(Debug, Clone, Copy)]
pub(super) struct Usage {
    /// User CPU time.
    pub(super) user: Duration,
    /// System CPU time.
    pub(super) sys: Duration,
    /// Its peak resident set (and that of the descendants it waited for).
    pub(super) max_rss_bytes: u64,
}

impl Usage {
    fn from_rusage(r: &libc::rusage) -> Self {
        let time = |t: libc::timeval| {
            Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
                + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
        };
        // ru_maxrss is in KiB on Linux.
        let max_rss_kib = u64::try_from(r.ru_maxrss).unwrap_or(0);
        Usage {
            user: time(r.ru_utime),
            sys: time(r.ru_stime),
            max_rss_bytes: max_rss_kib.saturating_mul(1024),
        }
    }
}

/// A duration in seconds.
pub(super) fn seconds(d: Duration) -> Finite {
    // A Duration is always finite; the fallback is unreachable.
    Finite::new(d.as_secs_f64()).unwrap_or(Finite::ZERO)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn signal_names() {
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
