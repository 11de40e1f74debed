//! Looking at a lane execution without moving it (`lane status`, the
//! progress bar), and waiting for one to seal (`lane run --wait`).

use std::path::PathBuf;
use std::process::Child;
use std::time::Duration;

use benchops::Sha256Digest;
use serde::Serialize;

use super::stages::current_stage;
use super::{LaneError, LaneExecution, Progress, advance, load};
use crate::backend::SchedulerOptions;
use crate::bench::{self, BenchError};
use crate::state::StateDir;

/// One look at a lane execution, for `lane status` and the progress bar.
#[derive(Debug, Clone, Serialize)]
pub struct LaneStatus {
    /// The execution.
    pub execution: LaneExecution,
    /// The current stage's benchmarks with their class counts.
    pub stage: Vec<StageLook>,
}

/// One benchmark of the current stage.
#[derive(Debug, Clone, Serialize)]
pub struct StageLook {
    /// The benchmark.
    pub benchmark: Sha256Digest,
    /// Whether it was submitted.
    pub submitted: bool,
    /// Its class counts, when submitted.
    pub counts: Option<benchops::record::RunCounts>,
    /// Whether it is finished.
    pub terminal: bool,
}

/// Where a lane execution is (read-only): `benchops-exec lane status`.
pub fn status(
    state: &StateDir,
    id: &str,
    scheduler: &SchedulerOptions,
) -> Result<LaneStatus, LaneError> {
    let exec = load(state, id)?;
    let stage = current_stage(&exec);
    let mut looks = Vec::new();
    for s in &stage {
        match bench::refresh(state, &s.benchmark, scheduler) {
            Ok(st) => looks.push(StageLook {
                benchmark: s.benchmark,
                submitted: true,
                counts: Some(st.counts),
                terminal: st.terminal,
            }),
            Err(BenchError::NotSubmitted(_)) => looks.push(StageLook {
                benchmark: s.benchmark,
                submitted: false,
                counts: None,
                terminal: false,
            }),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(LaneStatus {
        execution: exec,
        stage: looks,
    })
}

/// How often `wait` checks whether the local workers it reaps have exited.
const POLL_WORKERS: Duration = Duration::from_millis(20);

/// Advances until sealed, reaping local workers: `lane run --wait`. While
/// workers run it advances at the pace of [`crate::watch::Pace`], at once
/// when they have all exited, and every `poll` otherwise. `on_look` sees
/// every look.
pub fn wait(
    state: &StateDir,
    id: &str,
    scheduler: &SchedulerOptions,
    exe: Option<PathBuf>,
    mut processes: Vec<Child>,
    poll: Duration,
    mut on_look: impl FnMut(&LaneStatus),
) -> Result<Progress, LaneError> {
    let mut notes = Vec::new();
    let mut pace = crate::watch::Pace::default();
    loop {
        processes.retain_mut(|p| !matches!(p.try_wait(), Ok(Some(_))));
        // While local workers run, look only at the pace of a look, so
        // that this process stays idle while children are measured.
        if !pace.due(!processes.is_empty(), poll) {
            std::thread::sleep(POLL_WORKERS.min(poll));
            continue;
        }
        let started = std::time::Instant::now();
        let mut p = advance(state, id, scheduler, exe.clone(), false)?;
        processes.append(&mut p.processes);
        // What is still running shows in the progress bar, not as notes.
        notes.extend(
            p.notes
                .drain(..)
                .filter(|n| !n.contains("not finished yet")),
        );
        if p.execution.phase.is_final() {
            for mut c in processes {
                let _ = c.wait();
            }
            p.notes = notes;
            return Ok(p);
        }
        if let Ok(s) = status(state, id, scheduler) {
            on_look(&s);
        }
        pace.looked(started);
        std::thread::sleep(POLL_WORKERS.min(poll));
    }
}
