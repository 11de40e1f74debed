//! `benchops-publish watchdog`: the missed-run watchdog
//! ([`benchops::watchdog`]) over a local history, as text, JSON
//! (`watchdog-report/v1`), markdown for `$GITHUB_STEP_SUMMARY`, and
//! GitHub Actions annotations.
//!
//! Metadata only: record paths give each record's lane and slot; only the
//! records whose slot is inside the lookback are read, for their times and
//! counts. Nothing is written, run or evaluated.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use benchops::layout::{RESULTS_DIR, RecordEntry};
use benchops::manifest::Manifest;
use benchops::watchdog::{LaneWatch, SlotClass, SlotMeta, WatchSettings, watch};
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::history::LocalHistory;
use crate::text::{escape_text, markdown_cell as cell};

/// The schema tag of the JSON report.
pub const WATCHDOG_SCHEMA: &str = "watchdog-report/v1";

/// The watchdog's report.
#[derive(Debug, Clone, Serialize)]
pub struct WatchReport {
    /// [`WATCHDOG_SCHEMA`].
    pub schema: &'static str,
    /// When it looked.
    pub now: String,
    /// Slots after this instant were expected.
    pub since: String,
    /// Records read (those inside the lookback).
    pub records_read: usize,
    /// Records that could not be read or parsed, by path, with the reason.
    pub unreadable: Vec<(String, String)>,
    /// Per manifest lane.
    pub lanes: Vec<LaneWatch>,
}

impl WatchReport {
    /// A lane needs a person (a missed or failed slot, a bad schedule), or
    /// a record could not be read.
    pub fn needs_attention(&self) -> bool {
        self.lanes.iter().any(LaneWatch::needs_attention) || !self.unreadable.is_empty()
    }
}

/// Why the watchdog (or `health`) could not look. Printed with its
/// causes ([`crate::text::error_line`]).
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// No history repository.
    #[error("{0}: no history repository here (run a sweep first, or check --local)")]
    NoHistory(PathBuf),
    /// The history could not be read.
    #[error("history {path}")]
    History {
        /// The repository.
        path: PathBuf,
        /// What failed.
        #[source]
        source: crate::history::HistoryError,
    },
    /// A git command `health` runs directly could not be run or read.
    #[error("history {path}: {step}")]
    Git {
        /// The repository.
        path: PathBuf,
        /// The command, or the step of reading its output.
        step: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A git command `health` runs directly failed.
    #[error("history {path}: {step}: {status}")]
    GitFailed {
        /// The repository.
        path: PathBuf,
        /// The command.
        step: &'static str,
        /// How it ended.
        status: std::process::ExitStatus,
    },
    /// The issue ledger `health` reads could not be read.
    #[error(transparent)]
    Ledger(#[from] crate::ledger::LedgerError),
}

/// The error of a history read at `path`.
pub(crate) fn history_error(
    path: &Path,
) -> impl Fn(crate::history::HistoryError) -> WatchError + '_ {
    move |source| WatchError::History {
        path: path.to_path_buf(),
        source,
    }
}

/// Opens an existing repository holding the history branch, without
/// listing its tip (never creates one: a wrong path is
/// [`WatchError::NoHistory`]).
pub(crate) fn open_repo(history: &Path) -> Result<LocalHistory, WatchError> {
    if !(history.join("HEAD").is_file() || history.join(".git").exists()) {
        return Err(WatchError::NoHistory(history.to_path_buf()));
    }
    LocalHistory::open_or_init(history).map_err(history_error(history))
}

/// Records read through the history index when it is fresh at the tip:
/// each lane's oldest record, its newest `recent` and those from `since` on
/// (see [`benchops::history_index`]), so the cost follows the lookback, not
/// the history's age. Each is verified against the digest its name carries
/// and placed at its lane and slot; one that fails is listed as unreadable.
/// `Err(why)` when the index is missing, stale, corrupt or names a record
/// the tree lacks: the caller then reads history in full.
pub(crate) fn indexed_records(
    h: &LocalHistory,
    manifest: &Manifest,
    recent: usize,
    since: Timestamp,
) -> Result<Result<(Vec<benchops::SealedRecord>, Unreadable), String>, WatchError> {
    let needs = benchops::history_index::Needs {
        recent,
        since: benchops::time::Utc::parse(&since.to_string()).ok(),
        drift: false,
    };
    Ok(h.read_indexed(manifest, &needs)
        .map_err(history_error(h.path()))?
        .map(|r| {
            (
                r.records.into_iter().map(|(_, s)| s).collect(),
                r.unreadable,
            )
        }))
}

/// Records that could not be read: (path, why).
pub(crate) type Unreadable = Vec<(String, String)>;

/// Watches the local history at `history` (a `history.git` repository).
pub fn watch_local(
    history: &Path,
    manifest: &Manifest,
    settings: &WatchSettings,
) -> Result<WatchReport, WatchError> {
    let h = open_repo(history)?;
    // Through the index: the lookback, each lane's latest and oldest record.
    if let Ok((records, unreadable)) = indexed_records(&h, manifest, 1, settings.since)? {
        let metas: Vec<SlotMeta> = records
            .iter()
            .filter_map(|s| SlotMeta::of(s.record(), &s.digest().to_string()))
            .collect();
        // Counted as below: the records inside the lookback (the lane's
        // oldest and latest outside it only say where slots start).
        let inside = metas
            .iter()
            .filter(|m| m.slot + SignedDuration::from_secs(1) > settings.since)
            .count();
        return Ok(WatchReport {
            schema: WATCHDOG_SCHEMA,
            now: settings.now.to_string(),
            since: settings.since.to_string(),
            records_read: inside,
            unreadable,
            lanes: watch(manifest, &metas, settings),
        });
    }
    let tip = h.tip_index().map_err(history_error(history))?;
    let err = history_error(history);
    // Lanes' first slots come from paths; records inside the lookback are
    // read for their times and counts.
    let mut before: Vec<SlotMeta> = Vec::new();
    let mut wanted: Vec<(&str, &str, RecordEntry)> = Vec::new();
    let mut firsts: std::collections::BTreeMap<String, Timestamp> = Default::default();
    for (path, blob) in &tip.files {
        if !path.starts_with(RESULTS_DIR) {
            continue;
        }
        let Ok(e) = RecordEntry::parse(path) else {
            continue;
        };
        let Some(slot) = benchops::time::Utc::parse_compact(&e.slot)
            .ok()
            .and_then(|u| u.to_string().parse::<Timestamp>().ok())
        else {
            continue;
        };
        let entry = firsts.entry(e.lane.to_string()).or_insert(slot);
        if slot < *entry {
            *entry = slot;
        }
        // The path's slot has whole seconds; a sub-second slot is just after.
        if slot + SignedDuration::from_secs(1) > settings.since {
            wanted.push((path.as_str(), blob.as_str(), e));
        }
    }
    let blobs: Vec<&str> = wanted.iter().map(|(_, b, _)| *b).collect();
    let bytes = h.read_blobs(&blobs).map_err(err)?;
    let mut metas: Vec<SlotMeta> = Vec::new();
    let mut unreadable = Vec::new();
    for ((path, _, entry), b) in wanted.iter().zip(bytes) {
        // Verified against the digest its name carries, and placed at its
        // own lane and slot, as the sweep reads history.
        match benchops::seal::verify(&b, Some(&entry.digest)) {
            Ok(s) => match entry.misplaced(&s.record().lane, &s.record().slot) {
                Some(why) => unreadable.push(((*path).to_owned(), why)),
                None => match SlotMeta::of(s.record(), &s.digest().to_string()) {
                    Some(m) => metas.push(m),
                    None => unreadable.push(((*path).to_owned(), "slot is not a time".to_owned())),
                },
            },
            Err(e) => unreadable.push(((*path).to_owned(), e.to_string())),
        }
    }
    // A lane whose first record is before the lookback started long ago:
    // stand-ins at those instants keep its earlier slots out of view.
    for (lane, slot) in &firsts {
        if *slot <= settings.since
            && let Ok(name) = benchops::LaneName::new(lane)
        {
            before.push(SlotMeta {
                lane: name,
                slot: *slot,
                finished_at: None,
                runs: Default::default(),
                case_counts: Default::default(),
                digest: String::new(),
                skipped: None,
            });
        }
    }
    let records_read = metas.len();
    metas.extend(before);
    Ok(WatchReport {
        schema: WATCHDOG_SCHEMA,
        now: settings.now.to_string(),
        since: settings.since.to_string(),
        records_read,
        unreadable,
        lanes: watch(manifest, &metas, settings),
    })
}

/// The settings for `now`, a lookback of `hours`, and `grace` minutes.
pub fn settings(now: Timestamp, hours: u32, grace: u32) -> WatchSettings {
    WatchSettings {
        now,
        since: now - SignedDuration::from_hours(i64::from(hours)),
        grace_minutes: grace,
    }
}

/// The report as text for a terminal.
pub fn render_text(r: &WatchReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "watchdog at {} (slots after {})", r.now, r.since);
    for w in &r.lanes {
        let _ = writeln!(s, "  {}", escape_text(&crate::sweep::report::watch_line(w)));
        for slot in w.slots.iter().filter(|x| {
            matches!(
                x.class,
                SlotClass::Missed | SlotClass::Failed | SlotClass::Late | SlotClass::Skipped
            )
        }) {
            let _ = writeln!(
                s,
                "    {} {:<7} {}",
                slot.slot,
                class_name(slot.class),
                escape_text(&slot.reason)
            );
        }
    }
    for (path, why) in &r.unreadable {
        let _ = writeln!(
            s,
            "  unreadable record {}: {}",
            escape_text(path),
            escape_text(why)
        );
    }
    s
}

fn class_name(c: SlotClass) -> &'static str {
    match c {
        SlotClass::OnTime => "on_time",
        SlotClass::Late => "late",
        SlotClass::Missed => "missed",
        SlotClass::Failed => "failed",
        SlotClass::Pending => "pending",
        SlotClass::Skipped => "skipped",
    }
}

/// The report as markdown, for `$GITHUB_STEP_SUMMARY`.
pub fn render_markdown(r: &WatchReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "### Missed-run watchdog\n");
    let _ = writeln!(s, "Slots after {} up to {}.\n", r.since, r.now);
    let _ = writeln!(
        s,
        "| lane | on time | late | missed | failed | pending | missed in a row | last on time |"
    );
    let _ = writeln!(s, "|---|--:|--:|--:|--:|--:|--:|---|");
    for w in &r.lanes {
        let c = &w.counts;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&w.lane),
            c.on_time,
            c.late,
            c.missed,
            c.failed,
            c.pending,
            w.consecutive_missed,
            w.last_on_time.as_deref().unwrap_or("never")
        );
    }
    for w in r.lanes.iter().filter(|w| w.counts.skipped > 0) {
        let _ = writeln!(
            s,
            "\n**{}**: {} slot(s) skipped on purpose by the execution host (the lane's `catch_up`)",
            cell(&w.lane),
            w.counts.skipped
        );
    }
    for w in r.lanes.iter().filter(|w| w.problem.is_some()) {
        let _ = writeln!(
            s,
            "\n**{}** cannot be watched: {}",
            cell(&w.lane),
            cell(w.problem.as_deref().unwrap_or_default())
        );
    }
    s
}

/// Text safe in a workflow command's message or property.
fn command_text(t: &str) -> String {
    t.chars()
        .take(300)
        .collect::<String>()
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// GitHub Actions annotations: `::error` for a lane with missed or failed
/// slots or a bad schedule, `::warning` for one that is only late.
pub fn render_annotations(r: &WatchReport) -> String {
    let mut s = String::new();
    for w in &r.lanes {
        let title = command_text(&format!("benchops watchdog: {}", w.lane));
        if let Some(p) = &w.problem {
            let _ = writeln!(s, "::error title={title}::{}", command_text(p));
        } else if w.needs_attention() {
            let _ = writeln!(
                s,
                "::error title={title}::{} missed and {} failed slot(s); {} missed in a row",
                w.counts.missed, w.counts.failed, w.consecutive_missed
            );
        } else if w.counts.late > 0 {
            let _ = writeln!(s, "::warning title={title}::{} late slot(s)", w.counts.late);
        }
    }
    for (path, _) in &r.unreadable {
        let _ = writeln!(
            s,
            "::warning title=benchops watchdog::unreadable record {}",
            command_text(path)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_history_failure_prints_the_repository_and_every_cause() {
        let e = history_error(Path::new("/h"))(crate::history::HistoryError::Spawn {
            args: "cat-file --batch".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
        let line = "history /h: failed to run `git cat-file --batch`: entity not found";
        assert_eq!(crate::text::error_line(&e), line);
    }
}
