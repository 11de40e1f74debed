//! Classification of child runs from evidence. Pure: the caller gathers the
//! evidence (files the run wrote, what the backend says, the clock) and this
//! module decides, always giving the reason and the evidence that decided.
//!
//! | files | backend | class |
//! |---|---|---|
//! | a newer attempt exists | any | `stale` (superseded) |
//! | of an earlier run than the backend's (a requeue) | pending or running, a result | `stale` |
//! | of an earlier run than the backend's (a requeue) | any other | as if there were no files |
//! | result unreadable | any | `scheduler-inconsistent` |
//! | none, not started, benchops cancelled the attempt | any | `failed` (cancelled by benchops before it started) |
//! | any | unanswered | `incomplete` (the answer this run depends on is missing or partial) |
//! | result, or started | only a folded range row in an end state | `incomplete` (until accounting lists the task on its own) |
//! | none, not started | only a folded range row in an end state | `failed` |
//! | result | pending | `stale` (requeued: the result is from an earlier run) |
//! | result | running | `incomplete` (the task has not ended; the result may be from an earlier run) |
//! | result exit 0 | finished in a failure state | `scheduler-inconsistent` |
//! | result exit 0 | finished ok, gone, unknown | `succeeded` |
//! | result not exit 0 | not pending or running | `failed` |
//! | none | pending | `incomplete` |
//! | started | running, past the running limit | `stale` |
//! | any | running | `incomplete` |
//! | none | finished ok, within grace | `incomplete` (waiting for the result file) |
//! | none | finished ok, after grace | `scheduler-inconsistent` |
//! | none | finished in a failure state | `failed` |
//! | started, no result | gone | `scheduler-inconsistent` |
//! | nothing | gone | `missing` |
//! | none | unknown | `incomplete` (the backend has nothing decisive yet) |

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::record::RunCounts;

/// The six classes of a child run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunClass {
    /// Exit 0 with a valid result, and no contrary scheduler evidence.
    Succeeded,
    /// Non-zero exit, signal, timeout, cancellation or a scheduler failure
    /// state.
    Failed,
    /// Pending or running.
    Incomplete,
    /// No evidence it ever started, and not pending.
    Missing,
    /// A superseded attempt, or running past the policy limit.
    Stale,
    /// The evidence sources disagree.
    SchedulerInconsistent,
}

impl RunClass {
    /// Every class, in display order.
    pub const ALL: [RunClass; 6] = [
        RunClass::Succeeded,
        RunClass::Failed,
        RunClass::Incomplete,
        RunClass::Missing,
        RunClass::Stale,
        RunClass::SchedulerInconsistent,
    ];

    /// The stable name (`scheduler-inconsistent`).
    pub fn as_str(self) -> &'static str {
        match self {
            RunClass::Succeeded => "succeeded",
            RunClass::Failed => "failed",
            RunClass::Incomplete => "incomplete",
            RunClass::Missing => "missing",
            RunClass::Stale => "stale",
            RunClass::SchedulerInconsistent => "scheduler-inconsistent",
        }
    }

    /// Whether the run can still change class without a new attempt.
    pub fn is_terminal(self) -> bool {
        !matches!(self, RunClass::Incomplete)
    }
}

impl fmt::Display for RunClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the run's own result file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultEvidence {
    /// No result file.
    Absent,
    /// A result file that cannot be read or validated.
    Unreadable(String),
    /// A valid result: exit 0.
    Ok,
    /// A valid result: anything else, described (`exit 3`, `signal 9
    /// (SIGKILL)`, `timed out after 2 s`, `cancelled`).
    Failed(String),
}

/// What the backend says about the run.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendEvidence {
    /// Waiting to start (Slurm PENDING, or a local child waiting for a slot).
    Pending(String),
    /// Running (Slurm RUNNING or COMPLETING, or a live local process).
    Running,
    /// Finished successfully as far as the backend knows (Slurm COMPLETED).
    /// `seconds_ago` is how long ago, when known.
    FinishedOk {
        /// Seconds since the end, when known.
        seconds_ago: Option<f64>,
    },
    /// Finished in a failure state (`TIMEOUT`, `OUT_OF_MEMORY`, `CANCELLED by 0`, ...).
    FinishedFailed(String),
    /// The backend does not know the run (process gone, job purged or never
    /// known), after the backend's own grace period.
    Gone(String),
    /// The backend says nothing decisive yet: not yet visible, accounting
    /// lag, a state this build does not interpret, or no snapshot.
    Unknown(String),
    /// The part of the backend's answer that this run depends on is missing
    /// or partial: a scheduler tool failed, timed out or printed a line that
    /// could not be parsed. Nothing is concluded from such a look, not even
    /// from a result file (the task may have been requeued since).
    Unanswered(String),
    /// Only a folded range row (`59_[4-99] CANCELLED`) speaks for the task,
    /// in an end state. Such a row may still cover tasks that ran and ended
    /// on their own right after a cancellation, so it never overrides the
    /// run's own evidence.
    FoldedEnd(String),
}

/// All the evidence about one attempt of one child.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// Whether a `started` marker exists.
    pub started: bool,
    /// Seconds since the run started, when known (for the running limit).
    pub running_for_s: Option<f64>,
    /// The result file.
    pub result: ResultEvidence,
    /// The backend's view.
    pub backend: BackendEvidence,
    /// A newer attempt of the same child, if any.
    pub superseded_by: Option<u32>,
    /// Whether benchops recorded the cancellation of this attempt (its own
    /// record, independent of what the backend can say).
    pub cancelled: bool,
    /// Which run of the attempt the files are from: its restart number
    /// (Slurm's `SLURM_RESTART_COUNT`, 0 for a first run and every local
    /// run). `None` for a result written before benchops recorded it.
    pub files_restart: Option<u32>,
    /// How often the backend says it restarted the task (Slurm requeues),
    /// so the run it describes; `None` when it does not say.
    pub backend_restarts: Option<u32>,
}

impl Evidence {
    /// Why the run files are from an earlier run than the one the backend
    /// describes, if they are: a requeue started the task again after
    /// they were written. A result without its run number counts as such
    /// once the backend reports a restart.
    pub fn earlier_run(&self) -> Option<String> {
        let now = self.backend_restarts?;
        let has_files = self.started || self.result != ResultEvidence::Absent;
        match self.files_restart {
            Some(r) if r < now => Some(format!(
                "the run files are from restart {r}, and the scheduler has restarted the task {now} time(s)"
            )),
            None if now > 0 && has_files => Some(format!(
                "the result names no restart, and the scheduler has restarted the task {now} time(s)"
            )),
            _ => None,
        }
    }
}

/// Thresholds of the classification.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// How long after the backend reports success a missing result file is
    /// still awaited (shared file systems lag).
    pub result_grace_s: f64,
    /// A run that has been running longer than this is stale (its timeout
    /// plus a margin); `None` disables the check.
    pub running_limit_s: Option<f64>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            result_grace_s: 30.0,
            running_limit_s: None,
        }
    }
}

/// A decision with its reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classified {
    /// The class.
    pub class: RunClass,
    /// Why, in one line.
    pub reason: String,
}

/// Classifies one attempt.
pub fn classify(e: &Evidence, policy: &Policy) -> Classified {
    use BackendEvidence as B;
    use ResultEvidence as R;
    let c = |class, reason: String| Classified { class, reason };
    if let Some(n) = e.superseded_by {
        return c(RunClass::Stale, format!("superseded by attempt {n}"));
    }
    // Files of an earlier run of a requeued task are never evidence for
    // the current run: while the task waits or runs again a result of
    // theirs is stale; otherwise the current run is decided as if it had
    // left no files (yet).
    if let Some(why) = e.earlier_run() {
        let active = matches!(e.backend, B::Pending(_) | B::Running);
        let result = match &e.result {
            R::Absent => None,
            R::Ok => Some("exit 0".to_owned()),
            R::Failed(w) => Some(w.clone()),
            R::Unreadable(w) => Some(format!("unreadable: {w}")),
        };
        if let (true, Some(result)) = (active, &result) {
            let backend = match &e.backend {
                B::Pending(w) => format!("pending: {w}"),
                _ => "running".to_owned(),
            };
            return c(
                RunClass::Stale,
                format!(
                    "the result ({result}) is from an earlier run: {why}; the task is {backend} again"
                ),
            );
        }
        let current = Evidence {
            started: false,
            running_for_s: None,
            result: R::Absent,
            files_restart: e.backend_restarts,
            ..e.clone()
        };
        let decided = classify(&current, policy);
        return c(
            decided.class,
            format!(
                "{} ({why}; they are not evidence for this run)",
                decided.reason
            ),
        );
    }
    match (&e.result, &e.backend) {
        (R::Unreadable(why), _) => c(
            RunClass::SchedulerInconsistent,
            format!("result file is unreadable: {why}"),
        ),
        // A wrapper that sees the cancellation record never starts its
        // command: benchops's own record decides, whatever the backend can
        // say (accounting may be down).
        (R::Absent, backend) if e.cancelled && !e.started => c(
            RunClass::Failed,
            match backend {
                B::FinishedFailed(state) | B::FoldedEnd(state) => {
                    format!("cancelled by benchops before it started ({state})")
                }
                _ => "cancelled by benchops before it started".into(),
            },
        ),
        (R::Absent, B::Unanswered(why)) => {
            c(RunClass::Incomplete, format!("no result yet, and {why}"))
        }
        (R::Ok | R::Failed(_), B::Unanswered(why)) => c(
            RunClass::Incomplete,
            format!(
                "result says {}, but {why}",
                match &e.result {
                    R::Failed(w) => w.as_str(),
                    _ => "exit 0",
                }
            ),
        ),
        (R::Ok | R::Failed(_), B::FoldedEnd(row)) => c(
            RunClass::Incomplete,
            format!(
                "result says {}, but {row}; waiting for accounting to list the task on its own",
                match &e.result {
                    R::Failed(w) => w.as_str(),
                    _ => "exit 0",
                }
            ),
        ),
        (R::Absent, B::FoldedEnd(row)) if e.started => c(
            RunClass::Incomplete,
            format!(
                "started, no result, and {row}; waiting for accounting to list the task on its own"
            ),
        ),
        (R::Absent, B::FoldedEnd(row)) => c(RunClass::Failed, format!("never started; {row}")),
        // Only a requeue makes a task with a result pending again: the
        // result belongs to a run the scheduler has superseded.
        (R::Ok | R::Failed(_), B::Pending(why)) => c(
            RunClass::Stale,
            format!("the result is from an earlier run; the task was requeued ({why})"),
        ),
        // A task still running has not ended: its result may be the
        // current run's, written just before the end, or an earlier run's
        // that a requeue's new run has not replaced yet. Only the end
        // decides.
        (R::Ok | R::Failed(_), B::Running) => c(
            RunClass::Incomplete,
            format!(
                "result says {}, but the backend still lists the task as running; waiting for it to end",
                match &e.result {
                    R::Failed(w) => w.as_str(),
                    _ => "exit 0",
                }
            ),
        ),
        (R::Ok, B::FinishedFailed(state)) => c(
            RunClass::SchedulerInconsistent,
            format!("result says exit 0 but the backend says {state}"),
        ),
        (R::Ok, _) => c(RunClass::Succeeded, "exit 0".into()),
        // Keep the scheduler's word too: a script ended by SIGTERM is a
        // timeout or a cancellation only the scheduler can tell apart.
        (R::Failed(why), B::FinishedFailed(state)) => {
            c(RunClass::Failed, format!("{why}; backend: {state}"))
        }
        (R::Failed(why), _) => c(RunClass::Failed, why.clone()),
        (R::Absent, B::Pending(why)) => c(RunClass::Incomplete, format!("pending: {why}")),
        (R::Absent, B::Running) => match (e.started, e.running_for_s, policy.running_limit_s) {
            (true, Some(t), Some(limit)) if t > limit => c(
                RunClass::Stale,
                format!("running for {t:.0} s, past the {limit:.0} s limit"),
            ),
            _ => c(RunClass::Incomplete, "running".into()),
        },
        (R::Absent, B::FinishedOk { seconds_ago }) => match seconds_ago {
            Some(s) if *s <= policy.result_grace_s => c(
                RunClass::Incomplete,
                format!("backend reports success {s:.0} s ago; waiting for the result file"),
            ),
            _ => c(
                RunClass::SchedulerInconsistent,
                "backend reports success but no result file exists".into(),
            ),
        },
        (R::Absent, B::FinishedFailed(state)) => c(RunClass::Failed, state.clone()),
        (R::Absent, B::Gone(why)) if e.started => c(
            RunClass::SchedulerInconsistent,
            format!("started, but ended without a result ({why})"),
        ),
        (R::Absent, B::Gone(why)) => c(
            RunClass::Missing,
            format!("no evidence it ever started ({why})"),
        ),
        (R::Absent, B::Unknown(why)) => c(
            RunClass::Incomplete,
            format!("no result yet and the backend could not be asked: {why}"),
        ),
    }
}

/// Adds one class to a set of counts.
pub fn count(counts: &mut RunCounts, class: RunClass) {
    counts.total += 1;
    match class {
        RunClass::Succeeded => counts.succeeded += 1,
        RunClass::Failed => counts.failed += 1,
        RunClass::Incomplete => counts.incomplete += 1,
        RunClass::Missing => counts.missing += 1,
        RunClass::Stale => counts.stale += 1,
        RunClass::SchedulerInconsistent => counts.scheduler_inconsistent += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BackendEvidence as B;
    use ResultEvidence as R;

    fn ev(started: bool, result: R, backend: B) -> Evidence {
        Evidence {
            started,
            running_for_s: Some(10.0),
            result,
            backend,
            superseded_by: None,
            cancelled: false,
            files_restart: Some(0),
            backend_restarts: None,
        }
    }

    #[test]
    fn every_row_of_the_table() {
        let p = Policy {
            result_grace_s: 30.0,
            running_limit_s: Some(5.0),
        };
        let cases = [
            (
                ev(true, R::Ok, B::Gone("pid gone".into())),
                RunClass::Succeeded,
            ),
            (
                ev(
                    true,
                    R::Ok,
                    B::FinishedOk {
                        seconds_ago: Some(1.0),
                    },
                ),
                RunClass::Succeeded,
            ),
            (
                ev(true, R::Ok, B::FinishedFailed("TIMEOUT".into())),
                RunClass::SchedulerInconsistent,
            ),
            (
                ev(true, R::Ok, B::Pending("Priority".into())),
                RunClass::Stale,
            ),
            (
                ev(true, R::Failed("exit 3".into()), B::Gone("x".into())),
                RunClass::Failed,
            ),
            (
                ev(true, R::Unreadable("truncated".into()), B::Gone("x".into())),
                RunClass::SchedulerInconsistent,
            ),
            (
                ev(false, R::Absent, B::Pending("Resources".into())),
                RunClass::Incomplete,
            ),
            (ev(true, R::Absent, B::Running), RunClass::Stale),
            (
                ev(
                    false,
                    R::Absent,
                    B::FinishedOk {
                        seconds_ago: Some(3.0),
                    },
                ),
                RunClass::Incomplete,
            ),
            (
                ev(
                    false,
                    R::Absent,
                    B::FinishedOk {
                        seconds_ago: Some(300.0),
                    },
                ),
                RunClass::SchedulerInconsistent,
            ),
            (
                ev(false, R::Absent, B::FinishedOk { seconds_ago: None }),
                RunClass::SchedulerInconsistent,
            ),
            (
                ev(true, R::Absent, B::FinishedFailed("OUT_OF_MEMORY".into())),
                RunClass::Failed,
            ),
            (
                ev(true, R::Absent, B::Gone("pid gone".into())),
                RunClass::SchedulerInconsistent,
            ),
            (
                ev(false, R::Absent, B::Gone("unknown job".into())),
                RunClass::Missing,
            ),
            (
                ev(false, R::Absent, B::Unknown("squeue failed".into())),
                RunClass::Incomplete,
            ),
        ];
        for (e, want) in cases {
            assert_eq!(classify(&e, &p).class, want, "{e:?}");
        }
        let mut e = ev(true, R::Ok, B::Gone("x".into()));
        e.superseded_by = Some(2);
        assert_eq!(classify(&e, &p).class, RunClass::Stale);
        let unanswered = B::Unanswered("squeue did not answer".into());
        for result in [R::Ok, R::Failed("exit 3".into()), R::Absent] {
            let e = ev(true, result, unanswered.clone());
            assert_eq!(classify(&e, &p).class, RunClass::Incomplete, "{e:?}");
        }
        let folded = B::FoldedEnd("the folded accounting row 7_[0-9] says CANCELLED".into());
        for (started, result, want) in [
            (true, R::Ok, RunClass::Incomplete),
            (true, R::Failed("exit 3".into()), RunClass::Incomplete),
            (true, R::Absent, RunClass::Incomplete),
            (false, R::Absent, RunClass::Failed),
        ] {
            let e = ev(started, result, folded.clone());
            assert_eq!(classify(&e, &p).class, want, "{e:?}");
        }
        let mut running = ev(true, R::Absent, B::Running);
        running.running_for_s = Some(1.0);
        assert_eq!(classify(&running, &p).class, RunClass::Incomplete);
    }

    #[test]
    fn a_result_is_not_trusted_while_the_task_still_runs() {
        let p = Policy::default();
        for result in [R::Ok, R::Failed("exit 3".into())] {
            let got = classify(&ev(true, result, B::Running), &p);
            assert_eq!(got.class, RunClass::Incomplete, "{got:?}");
            assert!(
                got.reason.contains("still lists the task as running"),
                "{got:?}"
            );
        }
    }

    #[test]
    fn files_of_an_earlier_run_of_a_requeued_task_are_never_evidence() {
        let p = Policy::default();
        let earlier = |result: R, backend: B| {
            let mut e = ev(true, result, backend);
            e.files_restart = Some(0);
            e.backend_restarts = Some(1);
            classify(&e, &p)
        };
        // Waiting or running again: a result of the earlier run is stale,
        // whatever it says; without one the task is simply not done.
        for backend in [B::Pending("BeginTime".into()), B::Running] {
            for result in [R::Ok, R::Failed("exit 3".into()), R::Unreadable("x".into())] {
                let got = earlier(result, backend.clone());
                assert_eq!(got.class, RunClass::Stale, "{got:?}");
                assert!(got.reason.contains("from an earlier run"), "{got:?}");
                assert!(got.reason.contains("restarted the task 1 time"), "{got:?}");
            }
            let got = earlier(R::Absent, backend.clone());
            assert_eq!(got.class, RunClass::Incomplete, "{got:?}");
        }
        // Ended: the current run is decided without the earlier files, so
        // an exit 0 of restart 0 never makes restart 1 a success.
        let cases = [
            (
                B::FinishedOk {
                    seconds_ago: Some(1.0),
                },
                RunClass::Incomplete,
            ),
            (
                B::FinishedOk {
                    seconds_ago: Some(300.0),
                },
                RunClass::SchedulerInconsistent,
            ),
            (
                B::FinishedFailed("7_3 (exit 1) FAILED".into()),
                RunClass::Failed,
            ),
            (B::Gone("purged".into()), RunClass::Missing),
            (B::Unknown("accounting lag".into()), RunClass::Incomplete),
        ];
        for (backend, want) in cases {
            let got = earlier(R::Ok, backend);
            assert_eq!(got.class, want, "{got:?}");
            assert!(got.reason.contains("not evidence for this run"), "{got:?}");
        }
        // A started marker of the earlier run proves nothing either.
        let mut e = ev(true, R::Absent, B::Running);
        e.running_for_s = Some(1e9);
        e.backend_restarts = Some(2);
        e.files_restart = Some(1);
        assert_eq!(
            classify(
                &e,
                &Policy {
                    running_limit_s: Some(5.0),
                    ..p
                }
            )
            .class,
            RunClass::Incomplete
        );
        // Files of the run the backend describes decide as usual.
        let mut e = ev(
            true,
            R::Failed("exit 3".into()),
            B::FinishedFailed("x".into()),
        );
        e.files_restart = Some(1);
        e.backend_restarts = Some(1);
        assert_eq!(classify(&e, &p).class, RunClass::Failed);
        e.result = R::Ok;
        e.backend = B::FinishedOk {
            seconds_ago: Some(1.0),
        };
        assert_eq!(classify(&e, &p).class, RunClass::Succeeded);
    }

    #[test]
    fn a_result_without_a_restart_number_is_judged_conservatively() {
        let p = Policy::default();
        let ok = B::FinishedOk {
            seconds_ago: Some(300.0),
        };
        let mut e = ev(true, R::Ok, ok);
        e.files_restart = None;
        // Older results name no restart: trusted while the scheduler
        // reports none, or says nothing of restarts (the local backend).
        for restarts in [None, Some(0)] {
            e.backend_restarts = restarts;
            assert_eq!(classify(&e, &p).class, RunClass::Succeeded, "{restarts:?}");
        }
        e.backend_restarts = Some(1);
        let got = classify(&e, &p);
        assert_eq!(got.class, RunClass::SchedulerInconsistent, "{got:?}");
        assert!(got.reason.contains("names no restart"), "{got:?}");
        e.backend = B::Running;
        assert_eq!(classify(&e, &p).class, RunClass::Stale);
    }

    #[test]
    fn benchops_own_cancellation_decides_a_run_that_never_started() {
        let p = Policy::default();
        for backend in [
            B::Unanswered("sacct failed".into()),
            B::Unknown("not yet visible".into()),
            B::Gone("unknown to the scheduler".into()),
            B::Pending("Priority".into()),
        ] {
            let mut e = ev(false, R::Absent, backend);
            e.cancelled = true;
            let got = classify(&e, &p);
            assert_eq!(got.class, RunClass::Failed, "{e:?}");
            assert_eq!(got.reason, "cancelled by benchops before it started");
        }
        let mut e = ev(
            false,
            R::Absent,
            B::FinishedFailed("7_3 CANCELLED by 0".into()),
        );
        e.cancelled = true;
        assert_eq!(
            classify(&e, &p).reason,
            "cancelled by benchops before it started (7_3 CANCELLED by 0)"
        );
        // A run that started is decided by its own evidence.
        let mut e = ev(true, R::Absent, B::Unanswered("sacct failed".into()));
        e.cancelled = true;
        assert_eq!(classify(&e, &p).class, RunClass::Incomplete);
    }
}
