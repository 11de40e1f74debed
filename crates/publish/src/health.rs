//! `benchops-publish health`: per lane, what the watchdog says (last
//! on-time slot, last success, misses in a row), how long its runs take
//! and whether that is rising, the open drift issues of the cases it covers
//! with the change point of each key's series, and its baseline's age; for
//! the branch, the history growth trigger (packed size over 100 MB, or a
//! file over 10 MB). As text, JSON (`health-report/v2`) and markdown.
//!
//! Read-only. Issues come from the local ledger (`DIR/issues.json`) when
//! there is one; with `--history` alone they are not read, and the report
//! says so (`issues_read: false`) instead of showing none.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};

use benchops::LaneName;
use benchops::layout::{RESULTS_DIR, RecordEntry};
use benchops::manifest::Manifest;
use benchops::reconcile::{ActualIssue, HistoryRecord, IssueState, RecordRef, latest_change};
use benchops::seal::SealedRecord;
use benchops::watchdog::{LaneWatch, SlotMeta, WatchSettings, watch};
use jiff::Timestamp;
use serde::Serialize;

use crate::history::LocalHistory;
use crate::ledger::{Ledger, LedgerState};
use crate::sweep::report::{DurationPoint, durations_of, trend};
use crate::text::markdown_cell as cell;
use crate::watchdog::{WatchError, history_error, indexed_records, open_repo};

/// The schema tag of the JSON report.
pub const HEALTH_SCHEMA: &str = "health-report/v2";
/// The packed size of the branch above which history should move (F14).
pub const PACK_LIMIT_BYTES: u64 = 100 * 1000 * 1000;
/// The file size above which history should move (F14).
pub const FILE_LIMIT_BYTES: u64 = 10 * 1000 * 1000;
/// Unreadable records named in the text and markdown reports (the JSON
/// report lists every one).
pub const SHOWN_UNREADABLE: usize = 10;
/// An open drift issue of a case the lane covers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftIssue {
    /// The issue number.
    pub number: u64,
    /// `<case>/<metric>` from its marker.
    pub key: String,
    /// Where the key's series in this lane last changed, if it did.
    pub change_point: Option<String>,
}

/// A lane's baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineAge {
    /// The record, `sha256:<hex>`.
    pub record: String,
    /// Its slot.
    pub slot: String,
    /// Hours from its slot to now.
    pub age_hours: Option<f64>,
}

/// One lane.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaneHealthReport {
    /// The lane.
    pub lane: String,
    /// The watchdog's view.
    pub watchdog: LaneWatch,
    /// The latest runs' durations, oldest first.
    pub durations: Vec<DurationPoint>,
    /// `rising`, `falling` or `flat`: the median of the newer half of
    /// [`Self::durations`] against the older half (±10%); `None` with fewer
    /// than four durations.
    pub duration_trend: Option<String>,
    /// Open drift issues of the cases the lane covers (`None`: issues not
    /// read).
    pub open_drift: Option<Vec<DriftIssue>>,
    /// The baseline pointer, if the lane has one.
    pub baseline: Option<BaselineAge>,
    /// Why the baseline pointer could not be read, if it could not (then
    /// `baseline` is null without meaning "no baseline").
    pub baseline_problem: Option<String>,
}

/// The history growth trigger.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Growth {
    /// The branch's objects packed (`git pack-objects`), bytes.
    pub packed_bytes: u64,
    /// The repository is a shallow clone (`git fetch --depth=1`):
    /// `packed_bytes` covers only the commits it has, a lower bound of the
    /// branch's packed size.
    pub shallow: bool,
    /// The largest file at the tip, and its size in bytes.
    pub largest_file: Option<(String, u64)>,
    /// [`PACK_LIMIT_BYTES`].
    pub pack_limit_bytes: u64,
    /// [`FILE_LIMIT_BYTES`].
    pub file_limit_bytes: u64,
    /// The branch is over the pack limit or holds a file over the file
    /// limit: time to move history (runbook `history-growth.md`).
    pub triggered: bool,
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealthReport {
    /// [`HEALTH_SCHEMA`].
    pub schema: &'static str,
    /// When it looked.
    pub now: String,
    /// Whether issues were read (a ledger was there).
    pub issues_read: bool,
    /// Records at the tip that could not be read, failed verification
    /// against the digest their path names, or sit at a path that is not
    /// theirs: path and reason. They count in no lane's figures, and the
    /// report needs attention while any is listed.
    pub unreadable: Vec<(String, String)>,
    /// Per manifest lane.
    pub lanes: Vec<LaneHealthReport>,
    /// The growth trigger.
    pub growth: Growth,
    /// How history was read: through its index, or all of it, and with
    /// `--full` whether the index agrees with the records.
    pub history_index: IndexState,
}

/// How `health` read history, and what it found of the history index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexState {
    /// `used` (read through a fresh index), `not used` (read all of
    /// history; `detail` says why), `agrees` or `disagrees` (`--full`: all
    /// of history read and the index checked against it).
    pub state: &'static str,
    /// What was read, and why.
    pub detail: String,
}

impl HealthReport {
    /// A lane needs a person (its watchdog, or an unreadable baseline
    /// pointer), a record of history could not be read, or the growth
    /// trigger fired.
    pub fn needs_attention(&self) -> bool {
        self.growth.triggered
            || self.history_index.state == "disagrees"
            || !self.unreadable.is_empty()
            || self
                .lanes
                .iter()
                .any(|l| l.watchdog.needs_attention() || l.baseline_problem.is_some())
    }
}

fn git_err(path: &Path, step: &'static str, source: std::io::Error) -> WatchError {
    WatchError::Git {
        path: path.to_path_buf(),
        step,
        source,
    }
}

fn git_failed(path: &Path, step: &'static str, status: std::process::ExitStatus) -> WatchError {
    WatchError::GitFailed {
        path: path.to_path_buf(),
        step,
        status,
    }
}

/// The packed size of the branch's objects and the largest file at its tip;
/// a repository without the branch yet (before the first sweep) holds none
/// of its objects: 0 bytes, no file.
pub fn growth(history: &Path) -> Result<Growth, WatchError> {
    let branch = benchops::layout::HISTORY_REF;
    let has = Command::new("git")
        .arg("-C")
        .arg(history)
        .args(["rev-parse", "--verify", "--quiet", branch])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| git_err(history, "git rev-parse", e))?;
    match has.code() {
        Some(0) => {}
        // `--verify --quiet`: 1 when the ref does not exist.
        Some(1) => {
            return Ok(Growth {
                packed_bytes: 0,
                shallow: false,
                largest_file: None,
                pack_limit_bytes: PACK_LIMIT_BYTES,
                file_limit_bytes: FILE_LIMIT_BYTES,
                triggered: false,
            });
        }
        _ => return Err(git_failed(history, "git rev-parse", has)),
    }
    let mut child = Command::new("git")
        .arg("-C")
        .arg(history)
        .args(["pack-objects", "--revs", "--stdout", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| git_err(history, "git pack-objects", e))?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write as _;
        let _ = writeln!(stdin, "{branch}");
    }
    let mut packed = 0u64;
    if let Some(mut out) = child.stdout.take() {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match out.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => packed += n as u64,
                Err(e) => return Err(git_err(history, "read the pack", e)),
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| git_err(history, "git pack-objects", e))?;
    if !status.success() {
        return Err(git_failed(history, "git pack-objects", status));
    }
    let tree = Command::new("git")
        .arg("-C")
        .arg(history)
        .args(["ls-tree", "-r", "-l", "-z", "--full-tree", branch])
        .output()
        .map_err(|e| git_err(history, "git ls-tree", e))?;
    if !tree.status.success() {
        return Err(git_failed(history, "git ls-tree", tree.status));
    }
    // `<mode> blob <oid> <size>\t<path>` per entry, NUL-terminated.
    let largest = tree
        .stdout
        .split(|b| *b == 0)
        .filter_map(|entry| {
            let text = std::str::from_utf8(entry).ok()?;
            let (meta, path) = text.split_once('\t')?;
            let size: u64 = meta.split_whitespace().nth(3)?.parse().ok()?;
            Some((path.to_owned(), size))
        })
        .max_by_key(|(p, s)| (*s, std::cmp::Reverse(p.clone())));
    let shallow = Command::new("git")
        .arg("-C")
        .arg(history)
        .args(["rev-parse", "--is-shallow-repository"])
        .output()
        .map_err(|e| git_err(history, "git rev-parse", e))?;
    if !shallow.status.success() {
        return Err(git_failed(history, "git rev-parse", shallow.status));
    }
    let shallow = String::from_utf8_lossy(&shallow.stdout).trim() == "true";
    let triggered =
        packed > PACK_LIMIT_BYTES || largest.as_ref().is_some_and(|(_, s)| *s > FILE_LIMIT_BYTES);
    Ok(Growth {
        packed_bytes: packed,
        shallow,
        largest_file: largest,
        pack_limit_bytes: PACK_LIMIT_BYTES,
        file_limit_bytes: FILE_LIMIT_BYTES,
        triggered,
    })
}

/// The health of every manifest lane over the history at `history`, with
/// the drift issues of `ledger` when given. It reads history through its
/// index when that is fresh (the lookback and each lane's newest and
/// oldest records), else all of it; `full` reads and verifies all of it
/// and checks the index against the records.
pub fn health_local(
    history: &Path,
    ledger: Option<&Path>,
    manifest: &Manifest,
    settings: &WatchSettings,
    full: bool,
) -> Result<HealthReport, WatchError> {
    let h = open_repo(history)?;
    let recent = benchops::reconcile::TREND_RECORDS.max(crate::sweep::report::DURATION_POINTS);
    let indexed = if full {
        Err(String::new())
    } else {
        indexed_records(&h, manifest, recent, settings.since)?
    };
    let (mut records, unreadable, history_index) = match indexed {
        Ok((records, unreadable)) => {
            let detail = format!(
                "read {} record(s) through the history index",
                records.len() + unreadable.len()
            );
            (
                records,
                unreadable,
                IndexState {
                    state: "used",
                    detail,
                },
            )
        }
        Err(why) => {
            let (records, unreadable) = read_all(&h, history)?;
            let state = if full {
                check_index(&h, history, &records)?
            } else {
                IndexState {
                    state: "not used",
                    detail: format!(
                        "read all {} record(s): the history index is {why}",
                        records.len() + unreadable.len()
                    ),
                }
            };
            (records, unreadable, state)
        }
    };
    records.sort_by(|a, b| {
        (&a.record().slot, &a.record().finished_at)
            .cmp(&(&b.record().slot, &b.record().finished_at))
    });
    let metas: Vec<SlotMeta> = records
        .iter()
        .filter_map(|s| SlotMeta::of(s.record(), &s.digest().to_string()))
        .collect();
    let watches = watch(manifest, &metas, settings);
    let issues: Option<Vec<ActualIssue>> = match ledger {
        Some(path) => match Ledger::load(path) {
            Ok(Some((l, _))) => Some(
                l.issues
                    .iter()
                    .filter(|i| i.state == LedgerState::Open)
                    .filter(|i| i.labels.iter().any(|x| x == &manifest.labels.drift))
                    .map(|i| {
                        ActualIssue::from_body(
                            i.number,
                            i.title.clone(),
                            i.body.clone(),
                            IssueState::Open,
                            None,
                            Vec::new(),
                        )
                    })
                    .collect(),
            ),
            Ok(None) => None,
            Err(e) => return Err(WatchError::Ledger(e)),
        },
        None => None,
    };
    let history_records: Vec<HistoryRecord<'_>> = records.iter().map(HistoryRecord::from).collect();
    let refs: Vec<&HistoryRecord<'_>> = history_records.iter().collect();
    let to_ref = |h: &HistoryRecord<'_>| RecordRef {
        lane: h.record.lane.clone(),
        slot: h.record.slot.clone(),
        finished_at: h.record.finished_at.clone(),
        digest: h.digest,
    };
    let mut lanes = Vec::new();
    for (lane, w) in manifest.lanes.iter().zip(watches) {
        let durations = durations_of(&records, lane.name.as_str());
        let (pointer, baseline_problem) = match h.baseline(&lane.name) {
            Ok(p) => (p, None),
            Err(e) => (None, Some(e.to_string())),
        };
        let baseline = pointer.map(|p| BaselineAge {
            record: p.record.to_string(),
            age_hours: p
                .slot
                .parse::<Timestamp>()
                .ok()
                .map(|t| (settings.now - t).as_secs_f64() / 3600.0),
            slot: p.slot,
        });
        let open_drift = issues.as_ref().map(|all| {
            all.iter()
                .filter_map(|i| {
                    let key = i.key.as_ref()?;
                    lane.covers(key.case.as_str()).then(|| DriftIssue {
                        number: i.number,
                        key: key.marker_value(),
                        change_point: change_text(&refs, &lane.name, key, to_ref),
                    })
                })
                .collect()
        });
        lanes.push(LaneHealthReport {
            lane: lane.name.to_string(),
            duration_trend: trend(&durations),
            durations,
            watchdog: w,
            open_drift,
            baseline,
            baseline_problem,
        });
    }
    Ok(HealthReport {
        schema: HEALTH_SCHEMA,
        now: settings.now.to_string(),
        issues_read: issues.is_some(),
        unreadable,
        lanes,
        growth: growth(history)?,
        history_index,
    })
}

/// Whether the index at the tip says what `records` (all of history, read
/// and verified) say: every month part and the evidence byte for byte, and
/// the count. A stale or missing index is reported as such: the next sweep
/// rebuilds it.
fn check_index(
    h: &LocalHistory,
    history: &Path,
    records: &[SealedRecord],
) -> Result<IndexState, WatchError> {
    use benchops::history_index::{HistoryIndex, INDEX_DIR, POINTER_PATH};
    let err = history_error(history);
    let tip = h.tip_index_within(&[INDEX_DIR.to_owned()]).map_err(&err)?;
    let mut built = HistoryIndex::build(records.iter());
    let want = built.files(tip.parent.as_deref());
    let n = records.len();
    if tip.commit.is_none() {
        return Ok(IndexState {
            state: "agrees",
            detail: "no history yet".to_owned(),
        });
    }
    let Some(pointer_blob) = tip.files.get(POINTER_PATH) else {
        return Ok(IndexState {
            state: "disagrees",
            detail: format!(
                "{POINTER_PATH} is missing (the next sweep rebuilds it from the {n} record(s))"
            ),
        });
    };
    let pointer = h
        .read_blobs(&[pointer_blob.as_str()])
        .map_err(&err)?
        .pop()
        .unwrap_or_default();
    let stale = match HistoryIndex::from_pointer(&pointer) {
        Ok((idx, _)) if idx.records() != n as u64 => {
            return Ok(IndexState {
                state: "disagrees",
                detail: format!("it counts {} record(s), history holds {n}", idx.records()),
            });
        }
        Ok((idx, _)) => idx.stale_at(tip.parent.as_deref()).is_some(),
        Err(e) => {
            return Ok(IndexState {
                state: "disagrees",
                detail: format!("corrupt: {e}"),
            });
        }
    };
    for (path, bytes) in want.iter().filter(|(p, _)| p != POINTER_PATH) {
        let same = match tip.files.get(path) {
            Some(blob) => *blob == h.blob_id_of(bytes),
            None => false,
        };
        if !same {
            return Ok(IndexState {
                state: "disagrees",
                detail: format!(
                    "{path} is not what the {n} record(s) give{}",
                    if stale {
                        " (it is stale: the next sweep rebuilds it)"
                    } else {
                        ""
                    }
                ),
            });
        }
    }
    Ok(IndexState {
        state: "agrees",
        detail: format!("read and verified all {n} record(s); the history index agrees with them"),
    })
}

fn change_text(
    refs: &[&HistoryRecord<'_>],
    lane: &LaneName,
    key: &benchops::reconcile::DriftKey,
    to_ref: impl Fn(&HistoryRecord<'_>) -> RecordRef,
) -> Option<String> {
    let c = latest_change(refs, lane, key, to_ref)?;
    let rel = c
        .relative()
        .map(|r| format!(" ({:+.1}%)", r * 100.0))
        .unwrap_or_default();
    Some(format!(
        "changed between {} and {}{rel}, p = {:.1e}",
        c.before.0.slot, c.after.0.slot, c.p
    ))
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The report as markdown, for `$GITHUB_STEP_SUMMARY`.
pub fn render_markdown(r: &HealthReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "### Benchmark lane health\n\nAs of {}.\n", r.now);
    let _ = writeln!(
        s,
        "| lane | last on time | last success | missed in a row | duration (latest, trend) | open drift | baseline age |"
    );
    let _ = writeln!(s, "|---|---|---|--:|---|---|---|");
    for l in &r.lanes {
        let w = &l.watchdog;
        let latest = l
            .durations
            .last()
            .and_then(|d| d.seconds)
            .map_or("n/a".to_owned(), |x| format!("{x:.0} s"));
        let drift = match &l.open_drift {
            None => "not read".to_owned(),
            Some(v) if v.is_empty() => "none".to_owned(),
            Some(v) => v
                .iter()
                .map(|d| format!("#{} {}", d.number, cell(&d.key)))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {}, {} | {} | {} |",
            cell(&l.lane),
            w.last_on_time.as_deref().unwrap_or("never"),
            w.last_success.as_deref().unwrap_or("never"),
            w.consecutive_missed,
            latest,
            l.duration_trend.as_deref().unwrap_or("n/a"),
            drift,
            l.baseline
                .as_ref()
                .and_then(|b| b.age_hours)
                .map_or("none".to_owned(), |h| format!("{:.0} h", h))
        );
    }
    if !r.unreadable.is_empty() {
        let _ = writeln!(
            s,
            "\n**{} record(s) of history could not be read** (see runbook publish-sweep):\n",
            r.unreadable.len()
        );
        for (path, why) in r.unreadable.iter().take(SHOWN_UNREADABLE) {
            let _ = writeln!(s, "- {}: {}", cell(path), cell(why));
        }
        if r.unreadable.len() > SHOWN_UNREADABLE {
            let _ = writeln!(s, "- and {} more", r.unreadable.len() - SHOWN_UNREADABLE);
        }
    }
    let g = &r.growth;
    let _ = writeln!(
        s,
        "\nHistory: {}{} packed (limit {}), largest file {}{}.",
        if g.shallow { "at least " } else { "" },
        mb(g.packed_bytes),
        mb(g.pack_limit_bytes),
        g.largest_file
            .as_ref()
            .map_or("none".to_owned(), |(p, b)| format!(
                "{} ({})",
                cell(p),
                mb(*b)
            )),
        if g.triggered {
            " — **growth trigger reached: move history (runbook history-growth)**"
        } else {
            ""
        }
    );
    s
}

/// The report as text for a terminal.
pub fn render_text(r: &HealthReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "health at {}", r.now);
    for l in &r.lanes {
        let w = &l.watchdog;
        let _ = writeln!(
            s,
            "  {:<16} last on time {}, last success {}, {} missed in a row, duration trend {}, baseline {}",
            crate::text::escape_text(&l.lane),
            w.last_on_time.as_deref().unwrap_or("never"),
            w.last_success.as_deref().unwrap_or("never"),
            w.consecutive_missed,
            l.duration_trend.as_deref().unwrap_or("n/a"),
            l.baseline
                .as_ref()
                .and_then(|b| b.age_hours)
                .map_or("none".to_owned(), |h| format!("{h:.0} h old"))
        );
        match &l.open_drift {
            None => {}
            Some(v) => {
                for d in v {
                    let _ = writeln!(
                        s,
                        "    drift #{} {}{}",
                        d.number,
                        crate::text::escape_text(&d.key),
                        d.change_point
                            .as_deref()
                            .map(|c| format!(": {c}"))
                            .unwrap_or_default()
                    );
                }
            }
        }
    }
    for (path, why) in r.unreadable.iter().take(SHOWN_UNREADABLE) {
        let _ = writeln!(
            s,
            "  unreadable record {}: {}",
            crate::text::escape_text(path),
            crate::text::escape_text(why)
        );
    }
    if r.unreadable.len() > SHOWN_UNREADABLE {
        let _ = writeln!(
            s,
            "  and {} more unreadable records (all of them in --json)",
            r.unreadable.len() - SHOWN_UNREADABLE
        );
    }
    let g = &r.growth;
    let _ = writeln!(
        s,
        "  history: {}{} packed (limit {}), largest file {}{}",
        if g.shallow { "at least " } else { "" },
        mb(g.packed_bytes),
        mb(g.pack_limit_bytes),
        g.largest_file
            .as_ref()
            .map_or("none".to_owned(), |(p, b)| format!(
                "{} ({})",
                crate::text::escape_text(p),
                mb(*b)
            )),
        if g.triggered {
            "; GROWTH TRIGGER REACHED"
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "  history index: {}: {}",
        r.history_index.state,
        crate::text::escape_text(&r.history_index.detail)
    );
    s
}

/// Every record of the history at `history`, with those that cannot be
/// read listed instead (the way without a fresh index).
fn read_all(
    h: &LocalHistory,
    history: &Path,
) -> Result<(Vec<SealedRecord>, crate::watchdog::Unreadable), WatchError> {
    let tip = h.tip_index().map_err(history_error(history))?;
    let err = history_error(history);
    let entries: Vec<(&String, &String, RecordEntry)> = tip
        .files
        .iter()
        .filter(|(p, _)| p.starts_with(RESULTS_DIR))
        .filter_map(|(p, b)| RecordEntry::parse(p).ok().map(|e| (p, b, e)))
        .collect();
    let items: Vec<(&str, Option<&benchops::Sha256Digest>)> = entries
        .iter()
        .map(|(_, b, e)| (b.as_str(), Some(&e.digest)))
        .collect();
    let verdicts = h.read_verified(&items).map_err(err)?;
    drop(items);
    let mut records: Vec<SealedRecord> = Vec::with_capacity(verdicts.len());
    let mut unreadable = Vec::new();
    for ((path, _, entry), verdict) in entries.iter().zip(verdicts) {
        match verdict {
            Ok(s) => match entry.misplaced(&s.record().lane, &s.record().slot) {
                None => records.push(s),
                Some(why) => unreadable.push(((*path).clone(), why)),
            },
            Err(e) => unreadable.push(((*path).clone(), format!("not a valid record: {e}"))),
        }
    }
    Ok((records, unreadable))
}
