//! `benchops-exec gc`: keeps the state directory small. It removes sealed
//! lane executions older than the policy together with the benchmarks only
//! they use, benchmarks no lane execution uses that nobody touched for as
//! long, materialised subject trees nobody used for as long, and it says
//! what it removed and what it kept, and why ([`collect`]).
//!
//! # What is kept
//!
//! * every **unsealed** lane execution (measuring, confirming, bisecting),
//!   the benchmarks it names and the subject trees it measures;
//! * the **newest** execution of each lane (by `created_at`; one for the
//!   lane's scheduled runs, one for its `--unscheduled` runs and one for its
//!   bisections by hand), so that `lane due` always sees the lane's latest
//!   slot as run;
//! * a benchmark with a **running child**: a live local worker registered
//!   in `attempts/<NNNN>/workers/` (pid and start time,
//!   `backend/claims.rs`), or a Slurm attempt, not cancelled, with a
//!   child that has no `result.json` yet;
//! * anything **younger** than `keep_days`: an execution by the time
//!   `lane.json` was last written (its seal), a benchmark no execution
//!   names by the newest file in it, a subject tree by its last-used stamp;
//! * every benchmark a kept execution names;
//! * the subject trees [`crate::subject::Subjects::removable`] keeps (the most recently
//!   used, [`subject::DEFAULT_KEEP`], as every lane run prunes: one rule);
//! * a lane directory without `lane.json` (a start cut short) younger than
//!   a day and than `keep_days`; an execution whose `lane.json` cannot be
//!   read.
//!
//! With `max_bytes`, after the age rule, the oldest items kept only for
//! their age go too, until the state directory fits. When what must be
//! kept does not fit, the report says so ([`GcReport::over_budget`]); that
//! is a note, not an error.
//!
//! # Safe beside a lane run, and under `SIGKILL`
//!
//! A lane run attaches to benchmarks in one place: under its execution's
//! lock (`lanes/<id>/.lock`), `lane run` and `lane advance` persist a
//! stage's benchmarks, then save `lane.json` naming them, then submit
//! them. Between the first and the second step a new benchmark is named by
//! no execution. So every holder of an execution's lock, and `bench
//! submit`/`bench run`/`compare` while they plan and submit, also hold
//! `<state>/gc.lock` **shared** ([`crate::state::StateUse`]); `gc` decides and moves
//! under it **exclusive**. While `gc` decides, no lane run is between
//! persisting a benchmark and naming it, and none is submitting: every
//! benchmark a lane run uses is named by its `lane.json`, which `gc` reads.
//! Lane runs do not wait for each other on it (it is shared), only for a
//! `gc` that is deciding (a fraction of a second for thousands of files).
//!
//! Removal moves first and deletes after: each item is renamed into
//! `<state>/.gc/` (one `rename(2)`, all or nothing) while the exclusive
//! lock is held, and the trash is deleted after it is released. An
//! execution is moved before its benchmarks. `gc` killed at any point
//! leaves each item either in place or in the trash; the next `gc`
//! finishes the trash first, and benchmarks whose execution was already
//! moved are then named by none and go by the rule for those.
//!
//! Deciding reads only `lane.json` files, submission records and
//! directory metadata: sizes come from a metadata walk, never from reading
//! a large file.
//!
//! Not covered by the lock: `bench status` restarting a dead worker of an
//! unfinished benchmark that no execution names, while `gc` removes it for
//! its age (it has to be untouched for `keep_days` first); and `lane run`
//! resuming, by the same inputs, an old sealed execution that `gc` is
//! removing (it fails once; run again, it starts afresh).

mod decide;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use self::decide::{Ctx, Unit, decide, walk};
use crate::state::{StateDir, StateError};
use crate::subject;

pub use self::decide::UNFINISHED_GRACE;

/// The trash directory: items moved there are deleted next.
pub const TRASH_DIR: &str = ".gc";
/// `--keep-days` when none is given.
pub const DEFAULT_KEEP_DAYS: u32 = benchops::manifest::DEFAULT_GC_KEEP_DAYS;

/// What to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Policy {
    /// Items younger than this many days are kept.
    pub keep_days: u32,
    /// After the age rule, remove the oldest removable items until the
    /// state directory holds at most this many bytes.
    pub max_bytes: Option<u64>,
}

impl Policy {
    /// The policy of a manifest's `[gc]` table.
    pub fn from_manifest(gc: &benchops::manifest::GcPolicy) -> Policy {
        Policy {
            keep_days: gc.keep_days(),
            max_bytes: gc.max_bytes(),
        }
    }

    fn keep(&self) -> Duration {
        Duration::from_secs(u64::from(self.keep_days) * 24 * 3600)
    }
}

/// Why `gc` could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// The state directory's lock, or a file in it.
    #[error(transparent)]
    State(#[from] StateError),
    /// A file-system call failed.
    #[error("failed to {what} {path}")]
    Io {
        /// What it was doing.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// What an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `lanes/<id>/`.
    LaneExecution,
    /// `benchmarks/<hex>/`, with its attempts and runs.
    Benchmark,
    /// `subjects/<commit>/` and its builds.
    SubjectTree,
    /// An entry of `.gc/` an earlier, interrupted `gc` left.
    Trash,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::LaneExecution => "lane execution",
            Kind::Benchmark => "benchmark",
            Kind::SubjectTree => "subject tree",
            Kind::Trash => "trash",
        })
    }
}

/// Why an item was removed or kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Removed: sealed, not the newest of its lane, older than the policy.
    Expired,
    /// Removed: a benchmark of a removed execution.
    OfRemoved,
    /// Removed: a benchmark no execution names, untouched for longer than
    /// the policy.
    Unreferenced,
    /// Removed: a subject tree not used for longer than the policy and
    /// beyond the most recently used.
    Unused,
    /// Removed: a lane directory without `lane.json`, older than a day.
    Unfinished,
    /// Removed: the oldest removable, to fit `max_bytes`.
    OverBudget,
    /// Removed: left in the trash by an interrupted `gc`.
    Trash,
    /// Kept: the execution is not sealed (or uses it).
    Unsealed,
    /// Kept: the newest execution of its lane (or a benchmark of it).
    Newest,
    /// Kept: younger than the policy.
    Young,
    /// Kept: a kept execution names it.
    UsedByKept,
    /// Kept: a child of it is running.
    Running,
    /// Kept: its lock is held.
    Busy,
    /// Kept: among the most recently used subject trees.
    RecentlyUsed,
    /// Kept: its `lane.json` cannot be read; a person should look.
    Unreadable,
}

impl Reason {
    fn text(self, policy: &Policy) -> String {
        let days = policy.keep_days;
        match self {
            Reason::Expired => format!("sealed, not its lane's newest, older than {days} day(s)"),
            Reason::OfRemoved => "a benchmark of the removed execution".into(),
            Reason::Unreferenced => {
                format!("named by no lane execution and untouched for more than {days} day(s)")
            }
            Reason::Unused => format!(
                "not used for more than {days} day(s) and not among the {} most recently used",
                subject::DEFAULT_KEEP
            ),
            Reason::Unfinished => "a lane start cut short (no lane.json) over a day ago".into(),
            Reason::OverBudget => "among the oldest removable, to fit --max-bytes".into(),
            Reason::Trash => "left half-removed by an interrupted gc".into(),
            Reason::Unsealed => "not sealed yet".into(),
            Reason::Newest => "the newest execution of its lane".into(),
            Reason::Young => format!("younger than {days} day(s)"),
            Reason::UsedByKept => "named by a kept lane execution".into(),
            Reason::Running => "a child of it is running".into(),
            Reason::Busy => "its lock is held by a lane run".into(),
            Reason::RecentlyUsed => format!(
                "among the {} most recently used subject trees",
                subject::DEFAULT_KEEP
            ),
            Reason::Unreadable => {
                "a lane.json that cannot be read is here (it, or what it may name); look at it"
                    .into()
            }
        }
    }
}

/// One item removed or kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// What it is.
    pub kind: Kind,
    /// Its id: execution id, benchmark digest, commit, or trash name.
    pub id: String,
    /// The lane, for an execution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    /// Disk usage in bytes (allocated blocks).
    pub bytes: u64,
    /// Files (every entry that is not a directory).
    pub files: u64,
    /// Why.
    pub reason: Reason,
    /// The reason in words.
    pub why: String,
    /// The execution it belongs to or is used by, when that is the reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<String>,
}

/// Bytes and files of the state directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Disk usage in bytes.
    pub bytes: u64,
    /// Files.
    pub files: u64,
}

/// What must be kept does not fit in `max_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OverBudget {
    /// The limit.
    pub max_bytes: u64,
    /// What the state directory holds after this `gc`.
    pub bytes: u64,
}

/// What `gc` did (or, with `dry_run`, would do).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GcReport {
    /// Whether nothing was removed on purpose.
    pub dry_run: bool,
    /// The policy applied.
    pub policy: Policy,
    /// The state directory before.
    pub before: Usage,
    /// The state directory after (with `dry_run`: as it would be).
    pub after: Usage,
    /// What was removed, in order.
    pub removed: Vec<Item>,
    /// What was kept.
    pub kept: Vec<Item>,
    /// Set when what must be kept does not fit in `max_bytes`.
    pub over_budget: Option<OverBudget>,
}

/// Deletes what is in the trash; returns what it deleted.
fn empty_trash(state: &StateDir, dry_run: bool, policy: &Policy) -> Vec<Item> {
    let trash = state.root().join(TRASH_DIR);
    let mut out = Vec::new();
    for e in fs::read_dir(&trash).into_iter().flatten().flatten() {
        let (usage, _) = walk(&e.path());
        if !dry_run {
            // Another gc may be emptying it too: what is gone is gone.
            let _ = fs::remove_dir_all(e.path()).or_else(|_| fs::remove_file(e.path()));
        }
        out.push(Item {
            kind: Kind::Trash,
            id: e.file_name().to_string_lossy().into_owned(),
            lane: None,
            bytes: usage.bytes,
            files: usage.files,
            reason: Reason::Trash,
            why: Reason::Trash.text(policy),
            execution: None,
        });
    }
    out
}

/// Moves `path` into the trash (one rename).
fn to_trash(state: &StateDir, kind: Kind, path: &Path, n: usize) -> Result<(), GcError> {
    let trash = state.root().join(TRASH_DIR);
    fs::create_dir_all(&trash).map_err(|source| GcError::Io {
        what: "create",
        path: trash.clone(),
        source,
    })?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let kind = match kind {
        Kind::LaneExecution => "lane",
        Kind::Benchmark => "benchmark",
        Kind::SubjectTree => "subject",
        Kind::Trash => "trash",
    };
    let dest = trash.join(format!("{kind}-{name}-{}-{n}", std::process::id()));
    match fs::rename(path, &dest) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(GcError::Io {
            what: "move into the trash",
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Removes what `policy` lets go from `state` (see the module doc), or with
/// `dry_run` only says what it would remove. `now` is the clock the ages
/// are measured on.
pub fn collect(
    state: &StateDir,
    policy: &Policy,
    now: SystemTime,
    dry_run: bool,
) -> Result<GcReport, GcError> {
    let mut report = GcReport {
        dry_run,
        policy: *policy,
        before: Usage::default(),
        after: Usage::default(),
        removed: Vec::new(),
        kept: Vec::new(),
        over_budget: None,
    };
    if !state.root().is_dir() {
        return Ok(report);
    }
    // An interrupted gc's trash is finished first.
    report.removed = empty_trash(state, dry_run, policy);
    let trash_usage = report.removed.iter().fold(Usage::default(), |u, i| Usage {
        bytes: u.bytes + i.bytes,
        files: u.files + i.files,
    });
    // Deciding and moving happen under the exclusive lock; a dry run
    // changes nothing and takes none.
    let lock = if dry_run {
        None
    } else {
        Some(crate::state::lock_use(
            state,
            nix::fcntl::FlockArg::LockExclusiveNonblock,
            "lane runs",
        )?)
    };
    let (whole, _) = walk(state.root());
    report.before = Usage {
        bytes: whole.bytes + if dry_run { 0 } else { trash_usage.bytes },
        files: whole.files + if dry_run { 0 } else { trash_usage.files },
    };
    let ctx = Ctx { state, policy, now };
    let mut d = decide(&ctx);
    let mut after = Usage {
        bytes: whole
            .bytes
            .saturating_sub(if dry_run { trash_usage.bytes } else { 0 }),
        files: whole
            .files
            .saturating_sub(if dry_run { trash_usage.files } else { 0 }),
    };
    let mut chosen: Vec<Unit> = std::mem::take(&mut d.expired);
    let sub = |after: &mut Usage, u: Usage| {
        after.bytes = after.bytes.saturating_sub(u.bytes);
        after.files = after.files.saturating_sub(u.files);
    };
    for u in &chosen {
        sub(&mut after, u.usage());
    }
    d.young.sort_by_key(|u| u.used);
    let mut young = d.young.into_iter();
    if let Some(max) = policy.max_bytes {
        while after.bytes > max {
            let Some(mut u) = young.next() else {
                break;
            };
            u.set_reason(Reason::OverBudget, policy);
            sub(&mut after, u.usage());
            chosen.push(u);
        }
    }
    report.kept = d.kept;
    report.kept.extend(young.flat_map(|u| u.kept(policy)));
    let mut moved = 0usize;
    for unit in chosen {
        // An execution's lock: never removed under a lane run's feet.
        let guard = match (&unit.lock, dry_run) {
            (Some(lock), false) => match File::open(lock)
                .map(|f| nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock))
            {
                Ok(Ok(g)) => Some(g),
                Ok(Err(_)) => {
                    let back = unit.usage();
                    after.bytes += back.bytes;
                    after.files += back.files;
                    let mut unit = unit;
                    unit.set_reason(Reason::Busy, policy);
                    report.kept.extend(unit.kept(policy));
                    continue;
                }
                // No lock file: nobody ever locked it.
                Err(_) => None,
            },
            _ => None,
        };
        if !dry_run {
            for (item, path) in unit.items.iter().zip(&unit.paths) {
                to_trash(state, item.kind, path, moved)?;
                moved += 1;
            }
            // A tree's builds go with it.
            for path in unit.paths.iter().skip(unit.items.len()) {
                to_trash(state, Kind::SubjectTree, path, moved)?;
                moved += 1;
            }
        }
        drop(guard);
        report.removed.extend(unit.items);
    }
    drop(lock);
    if !dry_run {
        empty_trash(state, false, policy);
    }
    if let Some(max) = policy.max_bytes
        && after.bytes > max
    {
        report.over_budget = Some(OverBudget {
            max_bytes: max,
            bytes: after.bytes,
        });
    }
    report.after = after;
    report
        .kept
        .sort_by(|a, b| (a.kind, &a.id).cmp(&(b.kind, &b.id)));
    Ok(report)
}

/// `lane due --run` after its lanes had their turn: [`collect`] with the
/// manifest's `[gc]` policy, when it has one and `run` is set. What it
/// removed is one line on standard error; a failure is a note and changes
/// nothing else.
pub fn after_lane_due(state: &StateDir, manifest: &benchops::manifest::Manifest, run: bool) {
    let Some(gc) = manifest.gc.as_ref().filter(|_| run) else {
        return;
    };
    let policy = Policy::from_manifest(gc);
    match collect(state, &policy, SystemTime::now(), false) {
        Ok(r) => {
            crate::print::info(format_args!("gc: {}\n", summary(&r)));
            if let Some(o) = r.over_budget {
                crate::print::note(format_args!("gc: {}\n", over_budget_text(&o)));
            }
        }
        Err(e) => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text.push_str(&format!(": {s}"));
                source = s.source();
            }
            crate::print::note(format_args!(
                "gc: {text} (lane due's lanes are not affected)\n"
            ));
        }
    }
}

/// One line: what was removed and what the state directory holds now.
pub fn summary(r: &GcReport) -> String {
    let freed = r.removed.iter().map(|i| i.bytes).sum::<u64>();
    format!(
        "{} {} item(s), {}; kept {}; the state directory {} {} in {} file(s)",
        if r.dry_run { "would remove" } else { "removed" },
        r.removed.len(),
        bytes(freed),
        r.kept.len(),
        if r.dry_run { "would hold" } else { "holds" },
        bytes(r.after.bytes),
        r.after.files,
    )
}

/// What cannot fit, in words.
pub fn over_budget_text(o: &OverBudget) -> String {
    format!(
        "the state directory holds {} after removing everything removable, more than --max-bytes {}: the rest must be kept (unsealed or newest executions, running children, trees in use)",
        bytes(o.bytes),
        bytes(o.max_bytes)
    )
}

/// A size as people read it ([`benchops::units`]).
pub fn bytes(n: u64) -> String {
    benchops::units::quantity(Some(n as f64), "B")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::claims::AttemptFiles;
    use crate::state::{StateUse, USE_LOCK_FILE};
    use benchops::Sha256Digest;
    use std::collections::BTreeMap;

    fn policy(days: u32, max: Option<u64>) -> Policy {
        Policy {
            keep_days: days,
            max_bytes: max,
        }
    }

    #[test]
    fn a_shared_hold_keeps_gc_out_and_lets_other_holders_in() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let state = StateDir::new(tmp.path());
        let a = StateUse::hold(&state).expect("first hold");
        let b = StateUse::hold(&state).expect("holds are shared");
        let file = File::open(tmp.path().join(USE_LOCK_FILE)).expect("lock file");
        assert!(
            nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).is_err(),
            "gc cannot take it exclusive while a lane run holds it"
        );
        drop((a, b));
        let file = File::open(tmp.path().join(USE_LOCK_FILE)).expect("lock file");
        assert!(nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).is_ok());
    }

    #[test]
    fn an_interrupted_gcs_trash_is_finished_and_a_missing_state_is_empty() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let none = StateDir::new(tmp.path().join("none"));
        let r = collect(&none, &policy(0, None), SystemTime::now(), false).expect("gc");
        assert!(r.removed.is_empty() && r.kept.is_empty());
        assert!(!tmp.path().join("none").exists(), "gc creates no state");
        let state = StateDir::new(tmp.path());
        let half = tmp.path().join(TRASH_DIR).join("benchmark-ab-1-0/runs/0");
        fs::create_dir_all(&half).expect("trash");
        fs::write(half.join("result.json"), b"{}").expect("file");
        let dry = collect(&state, &policy(30, None), SystemTime::now(), true).expect("dry");
        assert_eq!(dry.removed.len(), 1);
        assert!(half.exists(), "a dry run removes nothing");
        let r = collect(&state, &policy(30, None), SystemTime::now(), false).expect("gc");
        assert_eq!(r.removed[0].kind, Kind::Trash);
        assert_eq!(r.removed[0].reason, Reason::Trash);
        assert_eq!(r.removed[0].files, 1);
        assert!(!tmp.path().join(TRASH_DIR).join("benchmark-ab-1-0").exists());
    }

    #[test]
    fn an_unreferenced_benchmark_goes_by_its_newest_file_and_a_running_one_stays() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let state = StateDir::new(tmp.path());
        let old = Sha256Digest::of(b"old");
        let young = Sha256Digest::of(b"young");
        let live = Sha256Digest::of(b"live");
        for d in [old, young, live] {
            fs::create_dir_all(state.benchmark_dir(&d)).expect("dir");
            fs::write(state.benchmark_dir(&d).join("benchmark.json"), b"{}").expect("file");
        }
        // A live worker (this process) registered in an attempt of `live`.
        let files = AttemptFiles::new(state.local_attempt_dir(&live, 1));
        files.create().expect("attempt dirs");
        let me = crate::procfs::stat(std::process::id())
            .map(|s| crate::state::LocalHandle {
                pid: std::process::id(),
                start_ticks: s.start_ticks,
            })
            .expect("own stat");
        files.register(0, &me).expect("register");
        // Ten days later, with a five-day policy: `young` was touched
        // since; `old` and `live` were not.
        let later = SystemTime::now() + Duration::from_secs(10 * 24 * 3600);
        let touch = state.benchmark_dir(&young).join("runs");
        fs::create_dir_all(&touch).expect("dir");
        File::open(&touch)
            .and_then(|f| f.set_modified(later))
            .expect("touch");
        let r = collect(&state, &policy(5, None), later, false).expect("gc");
        let removed: Vec<&str> = r.removed.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(removed, [old.hex()], "{r:#?}");
        assert_eq!(r.removed[0].reason, Reason::Unreferenced);
        let kept: BTreeMap<String, Reason> =
            r.kept.iter().map(|i| (i.id.clone(), i.reason)).collect();
        assert_eq!(kept.get(&young.hex()), Some(&Reason::Young));
        assert_eq!(kept.get(&live.hex()), Some(&Reason::Running));
        assert!(!state.benchmark_dir(&old).exists());
        assert!(state.benchmark_dir(&live).exists());
        // With a size limit, the young one goes too, oldest first; the
        // running one never does, and the report says it cannot fit.
        let r = collect(&state, &policy(5, Some(1)), later, false).expect("gc");
        assert_eq!(r.removed.len(), 1);
        assert_eq!(r.removed[0].id, young.hex());
        assert_eq!(r.removed[0].reason, Reason::OverBudget);
        assert!(r.over_budget.is_some(), "{r:#?}");
        assert!(state.benchmark_dir(&live).exists());
    }

    #[test]
    fn a_lane_json_that_cannot_be_read_keeps_it_and_every_unnamed_benchmark() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let state = StateDir::new(tmp.path());
        let id = "ab".repeat(32);
        let dir = tmp.path().join("lanes").join(&id);
        fs::create_dir_all(&dir).expect("dir");
        fs::write(dir.join("lane.json"), b"{ cut short").expect("file");
        let orphan = Sha256Digest::of(b"orphan");
        fs::create_dir_all(state.benchmark_dir(&orphan)).expect("dir");
        let later = SystemTime::now() + Duration::from_secs(100 * 24 * 3600);
        let r = collect(&state, &policy(0, Some(0)), later, false).expect("gc");
        assert!(r.removed.is_empty(), "{r:#?}");
        let kept: Vec<(Kind, Reason)> = r.kept.iter().map(|i| (i.kind, i.reason)).collect();
        assert_eq!(
            kept,
            [
                (Kind::LaneExecution, Reason::Unreadable),
                (Kind::Benchmark, Reason::Unreadable)
            ]
        );
        assert!(dir.join("lane.json").exists() && state.benchmark_dir(&orphan).exists());
    }
}
