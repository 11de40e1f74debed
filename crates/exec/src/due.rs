//! `lane due`: which lanes' latest slots need a lane run now, and, with
//! `--run`, starting them, with nobody there.
//!
//! A lane is due when its latest slot (the latest firing of its cron at or
//! before now, in the lane's own time zone: [`benchops::schedule`], the
//! evaluator the watchdog uses) has no lane execution in the state
//! directory yet and its completion window is still open. What happens to
//! a slot that was not run when it came is the lane's `catch_up`
//! ([`CatchUp`]): `latest` runs the newest missed slot inside its window,
//! `none` runs a slot only within [`SLOT_TOLERANCE`] of it and reports a
//! late one as skipped. Earlier slots without an execution are counted as
//! missed and not caught up, so the report says what the watchdog will say.
//!
//! Starting is idempotent: the lane execution's id already makes a second
//! start resume the first, and [`DueLock`] keeps two callers from
//! evaluating and starting at the same time, so `lane due --run` is safe
//! to call every minute. It also moves unsealed executions of the slots it
//! looks at one step on, so that a timer alone drives a local lane run to
//! its sealed record (on Slurm, follow-up jobs do that too).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use benchops::manifest::{CatchUp, Lane};
use benchops::schedule::{SLOT_TOLERANCE, Schedule, ScheduleError};
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::lane::{ExecutionKind, LaneExecution};
use crate::state::StateDir;

/// How far back earlier slots are counted as missed (the watchdog's
/// default lookback).
pub const LOOKBACK: SignedDuration = SignedDuration::from_hours(72);

/// How long `lane due --run` waits for another caller's lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(60);

/// Where a lane's latest slot stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum DueState {
    /// No execution yet, the window is open: a lane run is due.
    Due,
    /// `--run` started (or resumed) its execution.
    Started {
        /// The execution id.
        id: String,
    },
    /// An execution exists and is not sealed yet.
    Running {
        /// The execution id.
        id: String,
        /// Its phase.
        phase: String,
    },
    /// An execution exists and is sealed: nothing to do.
    Sealed {
        /// The execution id.
        id: String,
    },
    /// No execution, and the completion window closed: the slot is
    /// missed, and running it now would not be credited.
    WindowPassed {
        /// When the window closed.
        closed_at: String,
    },
    /// No execution, the slot is late and the lane's catch-up is `none`:
    /// skipped on purpose.
    SkippedLate {
        /// How late the slot is, in minutes.
        late_minutes: i64,
    },
    /// `--run` could not start or move it on (the other lanes still had
    /// their turn).
    Failed {
        /// Why, as the error said it.
        error: String,
    },
}

impl DueState {
    /// The word the text output uses.
    pub fn word(&self) -> &'static str {
        match self {
            DueState::Due => "due",
            DueState::Started { .. } => "started",
            DueState::Running { .. } => "running",
            DueState::Sealed { .. } => "sealed",
            DueState::WindowPassed { .. } => "window passed",
            DueState::SkippedLate { .. } => "skipped (late, catch_up = none)",
            DueState::Failed { .. } => "failed",
        }
    }
}

/// One lane's latest slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaneDue {
    /// The lane.
    pub lane: String,
    /// Its latest slot at or before now (RFC 3339, UTC).
    pub slot: String,
    /// When the slot's completion window closes.
    pub window_closes: String,
    /// The lane's catch-up policy.
    pub catch_up: &'static str,
    /// Earlier slots of the last [`LOOKBACK`] with no execution, after the
    /// lane's first execution (as the watchdog counts): missed, and not
    /// caught up (only the latest slot ever is).
    pub missed_before: usize,
    /// The slots since the lane's previous execution (within
    /// [`LOOKBACK`]) that have none: a lane run started for this slot
    /// records them as skipped on purpose, so that the watchdog reports
    /// them as skipped rather than missed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<benchops::record::SkippedSlots>,
    /// Where the slot stands.
    #[serde(flatten)]
    pub state: DueState,
}

/// Why `lane due` could not evaluate the manifest.
#[derive(Debug, thiserror::Error)]
pub enum DueError {
    /// `--lane` named a lane the manifest does not declare.
    #[error("--lane {lane}: the manifest declares no such lane (it declares: {declared})")]
    UnknownLane {
        /// The name given.
        lane: String,
        /// The declared lanes.
        declared: String,
    },
    /// A lane's cron or time zone is not usable.
    #[error("lane `{lane}`: {source}")]
    Schedule {
        /// The lane.
        lane: String,
        /// Why.
        #[source]
        source: ScheduleError,
    },
    /// The lock of `--run` could not be taken.
    #[error("{}: {reason}", path.display())]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

fn parse_slot(text: &str) -> Option<Timestamp> {
    text.parse().ok()
}

/// The lanes of `lanes` named by `only` (every lane when empty), in the
/// manifest's order; a name the manifest does not declare is an error
/// that lists the declared ones (`lane due` and `lane schedule`).
pub fn select<'a>(lanes: &'a [Lane], only: &[String]) -> Result<Vec<&'a Lane>, DueError> {
    for name in only {
        if !lanes.iter().any(|l| l.name.as_str() == name) {
            return Err(DueError::UnknownLane {
                lane: name.clone(),
                declared: lanes
                    .iter()
                    .map(|l| l.name.as_str().to_owned())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    Ok(lanes
        .iter()
        .filter(|l| only.is_empty() || only.iter().any(|n| n == l.name.as_str()))
        .collect())
}

/// The lanes of `lanes` named by `only` (every lane when empty), each with
/// where its latest slot at `now` stands, given the executions of the
/// state directory.
pub fn evaluate(
    lanes: &[Lane],
    only: &[String],
    now: Timestamp,
    executions: &[LaneExecution],
) -> Result<Vec<LaneDue>, DueError> {
    let mut out = Vec::new();
    for lane in select(lanes, only)? {
        let schedule_err = |source| DueError::Schedule {
            lane: lane.name.as_str().to_owned(),
            source,
        };
        let schedule = Schedule::parse(&lane.cron, &lane.timezone).map_err(schedule_err)?;
        let slot = schedule.latest_at_or_before(now).map_err(schedule_err)?;
        let window = SignedDuration::from_mins(i64::from(lane.completion_window_minutes));
        let closes = slot.checked_add(window).unwrap_or(slot);
        let ran = |at: Timestamp| {
            executions.iter().find(|e| {
                e.kind == ExecutionKind::LaneRun
                    && e.lane.as_str() == lane.name.as_str()
                    && parse_slot(&e.slot) == Some(at)
            })
        };
        // As the watchdog counts: from the lane's first execution on (a
        // lane that never ran, over the whole lookback).
        let run_slots: Vec<Timestamp> = executions
            .iter()
            .filter(|e| e.kind == ExecutionKind::LaneRun && e.lane.as_str() == lane.name.as_str())
            .filter_map(|e| parse_slot(&e.slot))
            .collect();
        let first = run_slots.iter().min().copied();
        let lookback = now.checked_sub(LOOKBACK).unwrap_or(now);
        let from = match first {
            Some(f) if f > lookback => f,
            _ => lookback,
        };
        let earlier = schedule.slots_between(from, slot).map_err(schedule_err)?;
        let missed_before = earlier
            .iter()
            .filter(|t| **t != slot && ran(**t).is_none())
            .count();
        // The slots a run of this slot passes over: after the lane's
        // previous execution, without one of their own.
        let previous = run_slots.iter().filter(|t| **t < slot).max();
        let passed_over: Vec<Timestamp> = match previous {
            Some(p) => earlier
                .iter()
                .copied()
                .filter(|t| t > p && *t != slot && ran(*t).is_none())
                .collect(),
            None => Vec::new(),
        };
        let skipped = match (passed_over.first(), passed_over.last()) {
            (Some(first), Some(last)) => Some(benchops::record::SkippedSlots {
                catch_up: lane.catch_up().as_str().to_owned(),
                count: passed_over.len() as u64,
                first: first.to_string(),
                last: last.to_string(),
            }),
            _ => None,
        };
        let state = match ran(slot) {
            Some(e) if e.phase.is_final() => DueState::Sealed { id: e.id.clone() },
            Some(e) => DueState::Running {
                id: e.id.clone(),
                phase: e.phase.to_string(),
            },
            None if now > closes => DueState::WindowPassed {
                closed_at: closes.to_string(),
            },
            None if lane.catch_up() == CatchUp::None && now > slot + SLOT_TOLERANCE => {
                DueState::SkippedLate {
                    late_minutes: now.duration_since(slot).as_secs() / 60,
                }
            }
            None => DueState::Due,
        };
        out.push(LaneDue {
            lane: lane.name.as_str().to_owned(),
            slot: slot.to_string(),
            window_closes: closes.to_string(),
            catch_up: lane.catch_up().as_str(),
            missed_before,
            skipped,
            state,
        });
    }
    Ok(out)
}

/// The lock `lane due --run` holds while it evaluates and starts:
/// `<state>/due.lock`, an exclusive `flock`, released when dropped or when
/// the process dies.
#[derive(Debug)]
pub struct DueLock {
    _lock: nix::fcntl::Flock<File>,
}

impl DueLock {
    /// The lock file of `state`.
    pub fn path(state: &StateDir) -> PathBuf {
        state.root().join("due.lock")
    }

    /// Takes the lock, waiting at most `wait`; `waiting` is told once,
    /// before a wait, what is awaited.
    pub fn take(
        state: &StateDir,
        wait: Duration,
        waiting: &mut dyn FnMut(&str),
    ) -> Result<DueLock, DueError> {
        std::fs::create_dir_all(state.root()).map_err(|e| DueError::Lock {
            path: state.root().to_path_buf(),
            reason: e.to_string(),
        })?;
        Self::take_at(
            &Self::path(state),
            "another `lane due` of this state directory is starting lanes",
            wait,
            waiting,
        )
    }

    /// Takes the lock file `path`, held by `holder` when busy, waiting at
    /// most `wait`; `waiting` is told once, before a wait, what is awaited.
    pub fn take_at(
        path: &Path,
        holder: &str,
        wait: Duration,
        waiting: &mut dyn FnMut(&str),
    ) -> Result<DueLock, DueError> {
        let err = |reason: String| DueError::Lock {
            path: path.to_path_buf(),
            reason,
        };
        let start = Instant::now();
        let mut told = false;
        loop {
            let file = open_lock(path).map_err(|e| err(e.to_string()))?;
            match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                Ok(lock) => return Ok(DueLock { _lock: lock }),
                Err((_, nix::errno::Errno::EWOULDBLOCK | nix::errno::Errno::EINTR)) => {
                    if start.elapsed() >= wait {
                        return Err(err(format!(
                            "{holder}, and held it for {:.0} s; nothing was started (the next call starts what is still due)",
                            wait.as_secs_f64()
                        )));
                    }
                    if !told {
                        told = true;
                        waiting(&format!(
                            "waiting up to {:.0} s for {}: {holder}",
                            wait.as_secs_f64(),
                            path.display()
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err((_, errno)) => return Err(err(errno.to_string())),
            }
        }
    }
}

fn open_lock(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(name: &str, cron: &str, tz: &str, window: u32, catch_up: Option<CatchUp>) -> Lane {
        let mut v = serde_json::json!({
            "name": name, "cron": cron, "timezone": tz,
            "completion_window_minutes": window, "cases": ["*"], "baseline": "last-clean",
        });
        if let Some(c) = catch_up {
            v["catch_up"] = c.as_str().into();
        }
        serde_json::from_value(v).expect("a lane")
    }

    fn at(s: &str) -> Timestamp {
        s.parse().expect("instant")
    }

    fn state_of(due: &[LaneDue]) -> Vec<(&str, &str, &str)> {
        due.iter()
            .map(|d| (d.lane.as_str(), d.slot.as_str(), d.state.word()))
            .collect()
    }

    #[test]
    fn the_latest_slot_in_the_lanes_own_zone_across_daylight_saving() {
        // 01:00 in Jerusalem: UTC+2 in winter, UTC+3 in summer (the clocks
        // went forward on Friday 27 March 2026 at 02:00).
        let jer = lane("nightly", "0 1 * * *", "Asia/Jerusalem", 180, None);
        // 02:30 in New York does not exist on 8 March 2026 (02:00 -> 03:00):
        // that day's firing moves forward, to 03:30 EDT (07:30Z).
        let ny = lane("east", "30 2 * * *", "America/New_York", 120, None);
        let lanes = [jer, ny];
        for (now, want) in [
            (
                "2026-03-26T23:30:00Z",
                [
                    ("nightly", "2026-03-26T23:00:00Z", "due"),
                    ("east", "2026-03-26T06:30:00Z", "window passed"),
                ],
            ),
            (
                "2026-03-27T22:30:00Z",
                [
                    ("nightly", "2026-03-27T22:00:00Z", "due"),
                    ("east", "2026-03-27T06:30:00Z", "window passed"),
                ],
            ),
            (
                "2026-03-08T07:45:00Z",
                [
                    ("nightly", "2026-03-07T23:00:00Z", "window passed"),
                    ("east", "2026-03-08T07:30:00Z", "due"),
                ],
            ),
        ] {
            let due = evaluate(&lanes, &[], at(now), &[]).expect("evaluates");
            assert_eq!(state_of(&due), want.to_vec(), "at {now}");
        }
    }

    #[test]
    fn a_machine_off_for_three_slots_under_both_catch_up_policies() {
        let latest = lane("latest", "0 1 * * *", "UTC", 180, None);
        let none = lane("strict", "0 1 * * *", "UTC", 180, Some(CatchUp::None));
        // Off from 1 to 4 December: the slots of the 2nd, 3rd and 4th went
        // by unrun; back on at 02:00 on the 4th.
        let now = at("2026-12-04T02:00:00Z");
        let due = evaluate(&[latest, none], &[], now, &[]).expect("evaluates");
        assert_eq!(
            state_of(&due),
            vec![
                ("latest", "2026-12-04T01:00:00Z", "due"),
                (
                    "strict",
                    "2026-12-04T01:00:00Z",
                    "skipped (late, catch_up = none)"
                ),
            ]
        );
        // The earlier slots of the lookback are missed and not caught up.
        assert_eq!((due[0].missed_before, due[1].missed_before), (2, 2));
        assert_eq!(due[1].state, DueState::SkippedLate { late_minutes: 60 });
        // On time (within the tolerance), `none` runs its slot.
        let strict = lane("strict", "0 1 * * *", "UTC", 180, Some(CatchUp::None));
        let due = evaluate(&[strict], &[], at("2026-12-04T01:05:00Z"), &[]).expect("evaluates");
        assert_eq!(due[0].state, DueState::Due);
    }

    #[test]
    fn a_passed_window_is_never_due_and_an_unknown_lane_or_bad_cron_is_named() {
        let l = lane("nightly", "0 1 * * *", "UTC", 30, None);
        let due = evaluate(
            std::slice::from_ref(&l),
            &[],
            at("2026-12-04T01:31:00Z"),
            &[],
        )
        .expect("evaluates");
        assert_eq!(
            due[0].state,
            DueState::WindowPassed {
                closed_at: "2026-12-04T01:30:00Z".into()
            }
        );
        let err = evaluate(
            std::slice::from_ref(&l),
            &["weekly".into()],
            at("2026-12-04T01:31:00Z"),
            &[],
        )
        .expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "--lane weekly: the manifest declares no such lane (it declares: nightly)"
        );
        let bad = lane("broken", "0 25 * * *", "UTC", 30, None);
        let err = evaluate(&[bad], &[], at("2026-12-04T01:31:00Z"), &[]).expect_err("bad cron");
        let text = err.to_string();
        assert!(text.starts_with("lane `broken`: "), "{text}");
        assert!(text.contains("hour"), "{text}");
    }
}
