//! History → [`Status`]: one read of the branch at its tip (records verified
//! against the digests in their paths, baseline pointers against their
//! schema), then lanes, open drift, issue decisions, recent records,
//! workflow runs and trends, all derived from the records in memory.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use benchops::LaneName;
use benchops::baseline::BaselinePointer;
use benchops::layout::{RESULTS_DIR, RecordEntry};
use benchops::manifest::{BaselinePolicy, Lane, Manifest};
use benchops::reconcile::{
    DriftKey, DriftStatus, HistoryRecord, Standing, drift_statuses, render_title,
};
use benchops::record::{Direction, ResultRecord};
use benchops::seal::SealedRecord;
use benchops::time::order_key;
use benchops_history::{HistoryError, LocalHistory};

use super::{
    BaselineRow, Coverage, DecisionRow, DriftRow, Evidence, HistorySummary, IssueDecision, LaneRow,
    LatestRecord, Listed, MAX_DECISIONS, MAX_DRIFT, MAX_LANES, MAX_PROBLEMS, MAX_RECENT_RECORDS,
    MAX_RECORDS, MAX_TEXT_CHARS, MAX_TREND_POINTS, MAX_TRENDS, MAX_WORKFLOW_RUNS, RecordRow,
    RunRow, Status, StatusError, StatusInputs, Trend, TrendPoint, WorkflowRunFact,
};

/// The prefix of baseline pointer paths.
const BASELINES_DIR: &str = "baselines/";

/// `text` cut to at most `max` characters, a cut one ending in `…`.
pub(super) fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// An RFC 3339 timestamp, when it is one.
fn timestamp(s: &str) -> Option<jiff::Timestamp> {
    s.parse().ok()
}

/// An age for people: `45s`, `12m`, `3h 12m`, `2d 4h`; `in the future` when
/// negative.
pub(super) fn human_age(seconds: i64) -> String {
    if seconds < 0 {
        return "in the future".to_owned();
    }
    let (d, h, m) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
    );
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m")
    } else {
        format!("{seconds}s")
    }
}

/// Record order, as the publisher orders history: slot as an instant, then
/// `finished_at`, then digest.
fn record_order(s: &SealedRecord) -> impl Ord + '_ {
    let r = s.record();
    (order_key(&r.slot), order_key(&r.finished_at), s.digest())
}

/// What one read of the branch found.
struct Loaded {
    tip: Option<String>,
    /// Verified records in record order, each digest once.
    records: Vec<SealedRecord>,
    not_read: usize,
    baselines: BTreeMap<LaneName, BaselinePointer>,
    problems: Vec<String>,
}

/// Reads every record (the newest [`MAX_RECORDS`] by path slot) and every
/// baseline pointer at the branch tip: one listing, then the records with
/// one `git cat-file --batch`, verified while git reads (the history
/// crate's one reader), and the pointers with another.
fn load(history: &LocalHistory) -> Result<Loaded, HistoryError> {
    let tip = history.tip_index()?;
    let mut entries: Vec<(RecordEntry, &str)> = Vec::new();
    let mut pointers: Vec<(LaneName, &str, &str)> = Vec::new();
    for (path, blob) in &tip.files {
        if path.starts_with(RESULTS_DIR) {
            if let Ok(e) = RecordEntry::parse(path) {
                entries.push((e, blob.as_str()));
            }
        } else if let Some(lane) = path
            .strip_prefix(BASELINES_DIR)
            .and_then(|f| f.strip_suffix(".json"))
            .and_then(|l| LaneName::new(l).ok())
        {
            pointers.push((lane, path.as_str(), blob.as_str()));
        }
    }
    entries.sort_by(|a, b| (&a.0.slot, &a.0.path).cmp(&(&b.0.slot, &b.0.path)));
    let not_read = entries.len().saturating_sub(MAX_RECORDS);
    let entries = entries.split_off(not_read);

    let mut problems = Vec::new();
    let mut records = Vec::with_capacity(entries.len());
    let items: Vec<_> = entries
        .iter()
        .map(|(e, blob)| (*blob, Some(&e.digest)))
        .collect();
    for ((entry, _), verdict) in entries.iter().zip(history.read_verified(&items)?) {
        match verdict {
            Ok(s) if entry.places(&s.record().lane, &s.record().slot) => records.push(s),
            Ok(s) => problems.push(format!(
                "{}: holds a record of lane {} slot {}, which belongs elsewhere",
                entry.path,
                s.record().lane,
                clip(&s.record().slot, 64)
            )),
            Err(e) => problems.push(format!(
                "{}: does not hold a valid record: {}",
                entry.path,
                clip(&e.to_string(), 200)
            )),
        }
    }
    records.sort_by(|a, b| record_order(a).cmp(&record_order(b)));
    records.dedup_by_key(|s| s.digest());

    let mut baselines = BTreeMap::new();
    let oids: Vec<&str> = pointers.iter().map(|(_, _, b)| *b).collect();
    let blobs = history.read_blobs(&oids)?;
    for ((lane, path, _), bytes) in pointers.into_iter().zip(blobs) {
        match BaselinePointer::from_bytes(&bytes, &lane) {
            Ok(p) => {
                baselines.insert(lane, p);
            }
            Err(reasons) => problems.push(format!(
                "{path}: not a valid baseline pointer: {}",
                clip(&reasons.join("; "), 200)
            )),
        }
    }
    Ok(Loaded {
        tip: tip.commit,
        records,
        not_read,
        baselines,
        problems,
    })
}

/// The latest record of every lane (records are in record order).
fn latest_per_lane(records: &[SealedRecord]) -> BTreeMap<&LaneName, &SealedRecord> {
    let mut latest = BTreeMap::new();
    for s in records {
        latest.insert(&s.record().lane, s);
    }
    latest
}

/// Without a manifest: each lane that has records covers the cases of its
/// latest record.
fn inferred_manifest(records: &[SealedRecord]) -> Manifest {
    let lanes = latest_per_lane(records)
        .into_iter()
        .map(|(lane, s)| Lane {
            name: lane.clone(),
            cron: String::new(),
            timezone: String::new(),
            completion_window_minutes: 0,
            cases: s
                .record()
                .cases
                .iter()
                .map(|c| c.id.as_str().to_owned())
                .collect(),
            baseline: BaselinePolicy::Pinned,
            comparison: None,
            confirm: None,
            bisect: None,
            catch_up: None,
        })
        .collect();
    Manifest {
        schema: "schedule-manifest/v1".to_owned(),
        repository: None,
        labels: Default::default(),
        signing: None,
        lanes,
        suite: None,
        build: None,
        gc: None,
    }
}

fn standing_name(s: &Standing) -> &'static str {
    match s {
        Standing::Reproducing { .. } => "reproducing",
        Standing::Cleared { .. } => "cleared",
        Standing::Uncovered => "uncovered",
    }
}

fn holding(s: &Standing) -> Vec<String> {
    match s {
        Standing::Reproducing { holding } => holding.iter().map(ToString::to_string).collect(),
        Standing::Cleared { .. } | Standing::Uncovered => Vec::new(),
    }
}

fn case_counts_text(r: &ResultRecord) -> String {
    let c = r.case_counts;
    format!(
        "{} pass, {} drift, {} skipped, {} error",
        c.pass, c.drift, c.skipped, c.error
    )
}

pub(super) fn collect(inputs: &StatusInputs<'_>) -> Result<Status, StatusError> {
    let generated_at = inputs.now.to_string();
    let decisions_told = |statuses: &[DriftStatus]| decision_rows(inputs.decisions, statuses);
    let Some(history) = inputs.history else {
        return Ok(Status {
            generated_at,
            history_configured: false,
            history: None,
            lanes: Listed::empty(),
            drift: Listed::empty(),
            decisions: decisions_told(&[]),
            recent_records: Listed::empty(),
            workflow_runs: run_rows(inputs.workflow_runs),
            trends: Listed::empty(),
        });
    };
    let loaded = load(history)?;
    let inferred;
    let (manifest, coverage) = match inputs.manifest {
        Some(m) => (m, Coverage::Manifest),
        None => {
            inferred = inferred_manifest(&loaded.records);
            (&inferred, Coverage::LatestRecords)
        }
    };
    let hist: Vec<HistoryRecord<'_>> = loaded.records.iter().map(HistoryRecord::from).collect();
    let statuses = drift_statuses(manifest, &hist);

    let lane_order = lane_order(inputs.manifest, &loaded.records);
    let lanes = lane_rows(inputs, &loaded, &lane_order);
    let drift: Vec<DriftRow> = statuses
        .iter()
        .filter(|s| !matches!(s.standing, Standing::Cleared { .. }))
        .filter_map(drift_row)
        .collect();
    let trends = trends(inputs, &loaded, &lane_order, &drift);
    let recent_n = inputs.recent_records.min(MAX_RECENT_RECORDS);
    let recent: Vec<RecordRow> = loaded
        .records
        .iter()
        .rev()
        .take(recent_n)
        .map(record_row)
        .collect();

    Ok(Status {
        generated_at,
        history_configured: true,
        history: Some(HistorySummary {
            tip: loaded.tip.clone(),
            records: loaded.records.len(),
            records_not_read: loaded.not_read,
            coverage,
            unreadable: Listed::capped(loaded.problems.clone(), MAX_PROBLEMS),
        }),
        lanes: Listed::capped(lanes, MAX_LANES),
        drift: Listed::capped(drift, MAX_DRIFT),
        decisions: decisions_told(&statuses),
        recent_records: Listed {
            left_out: loaded.records.len() - recent.len(),
            items: recent,
        },
        workflow_runs: run_rows(inputs.workflow_runs),
        trends: Listed::capped(trends, MAX_TRENDS),
    })
}

/// Manifest lanes in manifest order, then lanes only history knows, by
/// name.
fn lane_order(manifest: Option<&Manifest>, records: &[SealedRecord]) -> Vec<(LaneName, bool)> {
    let declared: Vec<&LaneName> = manifest
        .map(|m| m.lanes.iter().map(|l| &l.name).collect())
        .unwrap_or_default();
    let seen: BTreeSet<&LaneName> = records.iter().map(|s| &s.record().lane).collect();
    let mut out: Vec<(LaneName, bool)> = declared.iter().map(|l| ((*l).clone(), true)).collect();
    out.extend(
        seen.into_iter()
            .filter(|l| !declared.contains(l))
            .map(|l| (l.clone(), false)),
    );
    out
}

fn lane_rows(
    inputs: &StatusInputs<'_>,
    loaded: &Loaded,
    order: &[(LaneName, bool)],
) -> Vec<LaneRow> {
    let latest = latest_per_lane(&loaded.records);
    let mut counts: BTreeMap<&LaneName, usize> = BTreeMap::new();
    for s in &loaded.records {
        *counts.entry(&s.record().lane).or_default() += 1;
    }
    order
        .iter()
        .map(|(lane, in_manifest)| LaneRow {
            lane: lane.to_string(),
            in_manifest: inputs.manifest.map(|_| *in_manifest),
            records: counts.get(lane).copied().unwrap_or(0),
            latest: latest.get(lane).map(|s| {
                let r = s.record();
                let age_seconds = timestamp(&r.finished_at)
                    .or_else(|| timestamp(&r.slot))
                    .map(|t| inputs.now.duration_since(t).as_secs());
                LatestRecord {
                    slot: r.slot.clone(),
                    digest: s.digest().to_string(),
                    finished_at: r.finished_at.clone(),
                    age_seconds,
                    age: age_seconds.map_or_else(|| "unknown".to_owned(), human_age),
                    commit: r.subject.commit.clone(),
                    counts: r.case_counts,
                }
            }),
            baseline: loaded.baselines.get(lane).map(|p| BaselineRow {
                record: p.record.to_string(),
                slot: p.slot.clone(),
                policy: match p.policy {
                    BaselinePolicy::Pinned => "pinned",
                    BaselinePolicy::LastClean => "last-clean",
                }
                .to_owned(),
            }),
        })
        .collect()
}

fn drift_row(s: &DriftStatus) -> Option<DriftRow> {
    let first = s.evidence.first()?;
    let last = s.evidence.last()?;
    Some(DriftRow {
        key: s.key.marker_value(),
        case: s.key.case.to_string(),
        metric: clip(&s.key.metric, MAX_TEXT_CHARS),
        title: render_title(&s.key),
        standing: standing_name(&s.standing).to_owned(),
        reproducing_lanes: holding(&s.standing),
        evidence_records: s.evidence.len(),
        first_slot: first.record.slot.clone(),
        latest: Evidence {
            lane: last.record.lane.to_string(),
            slot: last.record.slot.clone(),
            digest: last.record.digest.to_string(),
            summary: clip(&last.summary, MAX_TEXT_CHARS),
        },
    })
}

fn record_row(s: &SealedRecord) -> RecordRow {
    let r = s.record();
    RecordRow {
        lane: r.lane.to_string(),
        slot: r.slot.clone(),
        digest: s.digest().to_string(),
        repository: clip(&r.subject.repository, MAX_TEXT_CHARS),
        commit: r.subject.commit.clone(),
        counts: r.case_counts,
        drift_reports: r.publication.drift_reports.len(),
        verdict: case_counts_text(r),
    }
}

// ---------------------------------------------------------------------------
// Issue decisions

/// A title as compared: zero-width spaces (which benchops inserts to keep
/// text inert) dropped, whitespace collapsed.
fn normalized_title(t: &str) -> String {
    t.replace('\u{200B}', "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The drift key a decision is about: the key the caller read from the
/// issue body, else the key whose rendered title the issue carries.
fn match_decision<'s>(
    d: &IssueDecision,
    by_key: &BTreeMap<&DriftKey, &'s DriftStatus>,
    by_title: &BTreeMap<String, &'s DriftStatus>,
) -> Option<&'s DriftStatus> {
    if let Some(k) = d
        .drift_key
        .as_deref()
        .and_then(|k| DriftKey::parse_marker_value(k).ok())
        && let Some(s) = by_key.get(&k)
    {
        return Some(s);
    }
    by_title.get(&normalized_title(&d.title)).copied()
}

/// `lane a`, `lanes a and b`, `lanes a, b and c`.
fn lanes_phrase(lanes: &[String]) -> String {
    match lanes {
        [] => "no lane".to_owned(),
        [one] => format!("lane {one}"),
        [init @ .., last] => format!("lanes {} and {last}", init.join(", ")),
    }
}

fn sentence(d: &IssueDecision, status: Option<&DriftStatus>) -> String {
    let who = if d.actor_is_app {
        format!("an app ({})", clip(&d.actor, 100))
    } else {
        format!("a person ({})", clip(&d.actor, 100))
    };
    let label = d.label.as_deref().map(|l| clip(l, 100));
    let what = match (d.action.as_str(), label) {
        ("labeled", Some(l)) => format!("labeled {l}"),
        ("unlabeled", Some(l)) => format!("unlabeled {l}"),
        (a, _) => clip(a, 40),
    };
    let mut s = format!("issue #{} {what} by {who} at {}", d.issue, clip(&d.at, 40));
    if d.action == "closed"
        && let Some(st) = status
    {
        match &st.standing {
            Standing::Reproducing { holding } => {
                let lanes: Vec<String> = holding.iter().map(ToString::to_string).collect();
                let verb = if lanes.len() == 1 {
                    "reproduces"
                } else {
                    "reproduce"
                };
                s.push_str(&format!(" while {} still {verb} it", lanes_phrase(&lanes)));
            }
            Standing::Uncovered => s.push_str(
                " while no lane covers its case any more (history can neither confirm nor clear it)",
            ),
            Standing::Cleared { .. } => s.push_str("; history shows it cleared"),
        }
    }
    s
}

fn clipped_decision(d: &IssueDecision) -> IssueDecision {
    IssueDecision {
        repository: clip(&d.repository, MAX_TEXT_CHARS),
        issue: d.issue,
        action: clip(&d.action, 40),
        label: d.label.as_deref().map(|l| clip(l, MAX_TEXT_CHARS)),
        actor: clip(&d.actor, MAX_TEXT_CHARS),
        actor_is_app: d.actor_is_app,
        at: clip(&d.at, 40),
        title: clip(&d.title, MAX_TEXT_CHARS),
        drift_key: d.drift_key.as_deref().map(|k| clip(k, MAX_TEXT_CHARS)),
    }
}

fn decision_rows(decisions: &[IssueDecision], statuses: &[DriftStatus]) -> Listed<DecisionRow> {
    let by_key: BTreeMap<&DriftKey, &DriftStatus> = statuses.iter().map(|s| (&s.key, s)).collect();
    let by_title: BTreeMap<String, &DriftStatus> = statuses
        .iter()
        .map(|s| (normalized_title(&render_title(&s.key)), s))
        .collect();
    let mut sorted: Vec<&IssueDecision> = decisions.iter().collect();
    // Newest first; a time that does not parse goes last.
    sorted.sort_by_key(|d| Reverse(timestamp(&d.at)));
    let left_out = sorted.len().saturating_sub(MAX_DECISIONS);
    sorted.truncate(MAX_DECISIONS);
    let items = sorted
        .into_iter()
        .map(|d| {
            let status = match_decision(d, &by_key, &by_title);
            let reproducing_lanes = status.map(|s| holding(&s.standing)).unwrap_or_default();
            DecisionRow {
                decision: clipped_decision(d),
                matched_key: status.map(|s| s.key.marker_value()),
                standing: status.map(|s| standing_name(&s.standing).to_owned()),
                attention: d.action == "closed" && !d.actor_is_app && !reproducing_lanes.is_empty(),
                reproducing_lanes,
                sentence: sentence(d, status),
            }
        })
        .collect();
    Listed { items, left_out }
}

// ---------------------------------------------------------------------------
// Workflow runs

/// One row per run (its latest attempt), newest first.
fn run_rows(runs: &[WorkflowRunFact]) -> Listed<RunRow> {
    let mut latest: BTreeMap<(&str, &str, u64), &WorkflowRunFact> = BTreeMap::new();
    for r in runs {
        let k = (r.repository.as_str(), r.workflow_path.as_str(), r.run_id);
        let newer = latest.get(&k).is_none_or(|cur| {
            (r.run_attempt, timestamp(&r.at)) >= (cur.run_attempt, timestamp(&cur.at))
        });
        if newer {
            latest.insert(k, r);
        }
    }
    let mut rows: Vec<&WorkflowRunFact> = latest.into_values().collect();
    rows.sort_by_key(|r| (Reverse(timestamp(&r.at)), Reverse(r.run_id)));
    let rows = rows
        .into_iter()
        .map(|r| RunRow {
            state: r
                .conclusion
                .as_deref()
                .map_or_else(|| "in progress".to_owned(), |c| clip(c, 40)),
            run: WorkflowRunFact {
                repository: clip(&r.repository, MAX_TEXT_CHARS),
                workflow_path: clip(&r.workflow_path, MAX_TEXT_CHARS),
                event: clip(&r.event, 40),
                conclusion: r.conclusion.as_deref().map(|c| clip(c, 40)),
                at: clip(&r.at, 40),
                ..r.clone()
            },
        })
        .collect();
    Listed::capped(rows, MAX_WORKFLOW_RUNS)
}

// ---------------------------------------------------------------------------
// Trends

/// The record's median of `metric` of `case`, when measured (the one
/// value every trend plots).
use benchops::chart::median;

/// The baseline median a record compared `case`/`metric` against, when it
/// says (v2: the key's comparison; v1: the case's drift evidence).
fn compared_baseline(r: &ResultRecord, case: &str, metric: &str) -> Option<f64> {
    if let Some(k) = r.comparison.as_ref().and_then(|c| {
        c.keys
            .iter()
            .find(|k| k.case.as_str() == case && k.metric == metric)
    }) {
        return Some(k.baseline_median.get());
    }
    r.cases
        .iter()
        .find(|c| c.id.as_str() == case)?
        .drift
        .as_ref()
        .filter(|d| d.metric == metric)
        .map(|d| d.baseline.median.get())
}

fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::LowerIsBetter => "lower_is_better",
        Direction::HigherIsBetter => "higher_is_better",
    }
}

fn trends(
    inputs: &StatusInputs<'_>,
    loaded: &Loaded,
    order: &[(LaneName, bool)],
    drift: &[DriftRow],
) -> Vec<Trend> {
    let points = inputs.trend_points.min(MAX_TREND_POINTS);
    if points == 0 {
        return Vec::new();
    }
    let by_digest: BTreeMap<_, &SealedRecord> =
        loaded.records.iter().map(|s| (s.digest(), s)).collect();
    let mut out = Vec::new();
    for (lane, _) in order {
        let lane_recs: Vec<&ResultRecord> = loaded
            .records
            .iter()
            .map(SealedRecord::record)
            .filter(|r| &r.lane == lane)
            .collect();
        let last = &lane_recs[lane_recs.len().saturating_sub(points)..];
        // Every case and metric measured in the window, with its latest unit
        // and direction.
        let mut keys: BTreeMap<(&str, &str), (&str, Direction)> = BTreeMap::new();
        for r in last {
            for c in &r.cases {
                for m in &c.metrics {
                    keys.insert(
                        (c.id.as_str(), m.name.as_str()),
                        (m.unit.as_str(), m.direction),
                    );
                }
            }
        }
        let pointer = loaded
            .baselines
            .get(lane)
            .and_then(|p| by_digest.get(&p.record));
        for ((case, metric), (unit, direction)) in keys {
            let series: Vec<TrendPoint> = last
                .iter()
                .map(|r| TrendPoint {
                    slot: r.slot.clone(),
                    value: median(r, case, metric),
                })
                .collect();
            if series.iter().all(|p| p.value.is_none()) {
                continue;
            }
            let baseline = pointer
                .and_then(|s| median(s.record(), case, metric))
                .or_else(|| {
                    last.iter()
                        .rev()
                        .find_map(|r| compared_baseline(r, case, metric))
                });
            let drifting = drift.iter().any(|d| {
                d.case == case
                    && d.metric == metric
                    && (d.standing == "uncovered"
                        || d.reproducing_lanes.iter().any(|l| l == lane.as_str()))
            });
            out.push(Trend {
                lane: lane.to_string(),
                case: case.to_owned(),
                metric: clip(metric, MAX_TEXT_CHARS),
                unit: clip(unit, 40),
                direction: direction_name(direction).to_owned(),
                drifting,
                baseline,
                points: series,
            });
        }
    }
    // Open drift first; otherwise lane, case and metric order stay.
    out.sort_by_key(|t| !t.drifting);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_people_write_them() {
        assert_eq!(human_age(5), "5s");
        assert_eq!(human_age(125), "2m");
        assert_eq!(human_age(3 * 3600 + 12 * 60), "3h 12m");
        assert_eq!(human_age(2 * 86_400 + 4 * 3600 + 5), "2d 4h");
        assert_eq!(human_age(-1), "in the future");
    }

    #[test]
    fn lane_lists_read_as_prose() {
        let l = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(lanes_phrase(&l(&["a"])), "lane a");
        assert_eq!(lanes_phrase(&l(&["a", "b"])), "lanes a and b");
        assert_eq!(lanes_phrase(&l(&["a", "b", "c"])), "lanes a, b and c");
    }

    #[test]
    fn titles_compare_without_zero_width_spaces() {
        assert_eq!(
            normalized_title(" Benchmark drift:  a/b \u{200B}x "),
            "Benchmark drift: a/b x"
        );
    }

    #[test]
    fn clipping_counts_characters() {
        assert_eq!(clip("héllo", 5), "héllo");
        assert_eq!(clip("héllo!", 5), "héll…");
    }
}
