//! The local backend: every child starts at once as a detached
//! `benchops-exec child` process in its own process group, which takes
//! concurrency slot `index % slots` with `flock` before it runs. There is no
//! dispatcher: nothing but the files and the processes holds state.
//!
//! The evidence is the wrapper's pid and start time (`/proc/PID/stat`
//! field 22), which together tell a live wrapper from a reused pid.
//! Cancelling sends `SIGTERM` to the process groups of running commands and
//! to wrappers still waiting for a slot.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use benchops::Sha256Digest;
use benchops::classify::BackendEvidence;

use super::{BackendError, Job, Launched, record_cancel};
use crate::child;
use crate::procfs;
use crate::state::{self, BackendHandles, LocalHandle, StateDir, StateError, Submission};

/// Options of a local launch.
#[derive(Debug, Clone)]
pub struct LocalOptions {
    /// Concurrency slots (children running at once).
    pub slots: u32,
    /// Path of the `benchops-exec` binary that runs children; the current
    /// executable when `None`.
    pub exe: Option<PathBuf>,
}

impl Default for LocalOptions {
    fn default() -> Self {
        LocalOptions {
            slots: 1,
            exe: None,
        }
    }
}

/// How often a waiting caller looks again: local children are files on
/// this machine, cheap to read.
const POLL: Duration = Duration::from_millis(100);

/// Starts every child of `job` as a detached wrapper process, then writes
/// the submission record with one handle per child.
pub(super) fn launch(job: &Job<'_>, opts: &LocalOptions) -> Result<Launched, BackendError> {
    let state = job.state;
    let digest = job.digest;
    let attempt = job.attempt;
    let exe = match &opts.exe {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(BackendError::CurrentExe)?,
    };
    let slots = opts.slots.max(1);
    let root = fs::canonicalize(state.root()).unwrap_or_else(|_| state.root().to_path_buf());
    let mut handles = Vec::new();
    let mut processes = Vec::new();
    let count = job.plan.len();
    for index in 0..count {
        let dir = state.attempt_dir(&digest, index, attempt, 0);
        fs::create_dir_all(&dir).map_err(|source| StateError::CreateDir {
            path: dir.clone(),
            source,
        })?;
        let log = fs::File::create(dir.join("wrapper.log"))
            .map_err(|source| BackendError::Spawn { index, source })?;
        let mut cmd = Command::new(&exe);
        cmd.arg("child")
            .arg("--state")
            .arg(&root)
            .arg("--benchmark")
            .arg(digest.hex())
            .arg("--index")
            .arg(index.to_string())
            .arg("--attempt")
            .arg(attempt.to_string())
            .arg("--slots")
            .arg(slots.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        for var in child::env_remove_publication_credentials() {
            cmd.env_remove(var);
        }
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let proc = cmd
            .spawn()
            .map_err(|source| BackendError::Spawn { index, source })?;
        let pid = proc.id();
        handles.push(LocalHandle {
            index,
            pid,
            start_ticks: procfs::start_ticks(pid).unwrap_or(0),
        });
        processes.push(proc);
    }
    let submission = job.record(
        count,
        BackendHandles::Local {
            host: state::host_name(),
            slots,
            handles,
        },
    )?;
    Ok(Launched {
        submission,
        processes,
        note: format!("submitted {count} children (attempt {attempt}) to the local backend"),
        poll: POLL,
    })
}

/// The evidence of child `index` of a local submission.
pub(super) fn evidence(
    state: &StateDir,
    digest: &Sha256Digest,
    sub: &Submission,
    handles: &[LocalHandle],
    index: u64,
    started: bool,
) -> BackendEvidence {
    let cancelled = state.is_cancelled(digest, sub.attempt);
    wrapper_evidence(handles, index, cancelled, started)
}

/// What the wrapper process of child `index` says.
fn wrapper_evidence(
    handles: &[LocalHandle],
    index: u64,
    cancelled: bool,
    started: bool,
) -> BackendEvidence {
    match handles.iter().find(|h| h.index == index) {
        Some(h) if procfs::is_alive(h.pid, h.start_ticks) => {
            if started {
                BackendEvidence::Running
            } else {
                BackendEvidence::Pending("waiting for a concurrency slot".into())
            }
        }
        Some(h) if cancelled && !started => {
            BackendEvidence::FinishedFailed(format!("wrapper pid {} ended", h.pid))
        }
        Some(h) => BackendEvidence::Gone(format!("wrapper pid {} is no longer running", h.pid)),
        None => BackendEvidence::Gone("the submission has no process for this child".into()),
    }
}

/// Records the cancellation first, so that a wrapper that takes its slot
/// from now on sees it and does not start; then sends `SIGTERM` to the
/// process groups of running commands and to wrappers still waiting.
pub(super) fn cancel(
    state: &StateDir,
    digest: &Sha256Digest,
    sub: &Submission,
    handles: &[LocalHandle],
) -> Result<Vec<String>, BackendError> {
    record_cancel(state, digest, sub, "signal live local wrappers")?;
    let mut actions = Vec::new();
    for h in handles {
        if !procfs::is_alive(h.pid, h.start_ticks) {
            continue;
        }
        let groups = procfs::child_groups(h.pid);
        let started = state
            .attempt_dir(digest, h.index, sub.attempt, 0)
            .join("started.json")
            .exists();
        if started && !groups.is_empty() {
            for g in groups {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(g as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
                actions.push(format!("child {}: SIGTERM to process group {g}", h.index));
            }
        } else if !started {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(h.pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            actions.push(format!(
                "child {}: SIGTERM to waiting wrapper {}",
                h.index, h.pid
            ));
        }
    }
    Ok(actions)
}
