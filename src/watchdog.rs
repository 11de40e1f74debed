//! The missed-run watchdog: which of a lane's expected slots have a record,
//! from the manifest and the records' metadata alone.
//!
//! For each lane, the slots its cron fires at ([`crate::schedule`]) in the
//! lookback are expected, from the lane's first record on (slots before a
//! lane ever ran are not counted against it; a lane with no record at all
//! is expected over the whole lookback). Each expected slot is one of:
//!
//! | class | when |
//! |---|---|
//! | `on_time` | a record for the slot finished within the completion window |
//! | `late` | a record finished after the window, or none yet but the grace period after the window has not run out |
//! | `missed` | no record, and the window and the grace period are over |
//! | `failed` | a record is there but every case errored, or fewer than half of its runs succeeded |
//! | `pending` | no record yet, and the window is still open |
//! | `skipped` | no record, and a later record of the lane says its execution host skipped the slot on purpose (`skipped` of a v3 record: the lane's `catch_up`) |
//!
//! It reads only a record's lane, slot, times and counts ([`SlotMeta`]),
//! never its cases; it runs, evaluates and changes nothing. A record whose
//! slot is not one the cron fires at is counted as `unscheduled` (a manual
//! run), never as filling a slot.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::manifest::Manifest;
use crate::names::LaneName;
use crate::record::{CaseCounts, ResultRecord, RunCounts};
use crate::schedule::Schedule;

/// The grace period after a lane's completion window when none is given.
pub const DEFAULT_GRACE_MINUTES: u32 = 60;
/// How far back slots are expected when no lookback is given.
pub const DEFAULT_LOOKBACK_HOURS: u32 = 72;

/// What the watchdog reads of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotMeta {
    /// The record's lane.
    pub lane: LaneName,
    /// Its slot.
    pub slot: Timestamp,
    /// When it finished (`None`: not a readable time).
    pub finished_at: Option<Timestamp>,
    /// Its run counts.
    pub runs: RunCounts,
    /// Its case counts.
    pub case_counts: CaseCounts,
    /// Its digest, `sha256:<hex>`.
    pub digest: String,
    /// The slots its execution host skipped on purpose before it, if any.
    pub skipped: Option<SkippedRange>,
}

/// What a record says its host skipped: every slot from `first` to `last`
/// without a record of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRange {
    /// The first skipped slot.
    pub first: Timestamp,
    /// The last skipped slot.
    pub last: Timestamp,
    /// The lane's `catch_up` that skipped them.
    pub catch_up: crate::manifest::CatchUp,
}

impl SlotMeta {
    /// The metadata of `record`; `None` when its slot is not a time.
    pub fn of(record: &ResultRecord, digest: &str) -> Option<SlotMeta> {
        Some(SlotMeta {
            lane: record.lane.clone(),
            slot: record.slot.parse().ok()?,
            finished_at: record.finished_at.parse().ok(),
            runs: record.runs,
            case_counts: record.case_counts,
            digest: digest.to_owned(),
            skipped: record.skipped.as_ref().and_then(|k| {
                Some(SkippedRange {
                    first: k.first.parse().ok()?,
                    last: k.last.parse().ok()?,
                    catch_up: crate::manifest::CatchUp::from_word(&k.catch_up)?,
                })
            }),
        })
    }

    /// Why this record counts as a failed run, if it does.
    pub fn failure(&self) -> Option<String> {
        let c = &self.case_counts;
        if c.total > 0 && c.error == c.total {
            return Some(format!("all {} cases errored", c.total));
        }
        let r = &self.runs;
        if r.total == 0 {
            return Some("no run was recorded".to_owned());
        }
        if r.succeeded.saturating_mul(2) < r.total {
            return Some(format!("{} of {} runs succeeded", r.succeeded, r.total));
        }
        None
    }
}

/// The class of an expected slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotClass {
    /// Recorded within the window.
    OnTime,
    /// Recorded after the window, or overdue within the grace period.
    Late,
    /// No record, window and grace over.
    Missed,
    /// Recorded, but the run failed.
    Failed,
    /// No record yet; the window is open.
    Pending,
    /// No record, and a later record of the lane says its execution host
    /// skipped the slot on purpose (the lane's `catch_up`).
    Skipped,
}

/// One expected slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlotReport {
    /// The slot, RFC 3339 UTC.
    pub slot: String,
    /// Its class.
    pub class: SlotClass,
    /// Why, in a few words.
    pub reason: String,
    /// The record that filled it, `sha256:<hex>`.
    pub record: Option<String>,
    /// The end of its completion window.
    pub due_by: String,
}

/// How many slots are in each class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ClassCounts {
    /// `on_time`.
    pub on_time: u64,
    /// `late`.
    pub late: u64,
    /// `missed`.
    pub missed: u64,
    /// `failed`.
    pub failed: u64,
    /// `pending`.
    pub pending: u64,
    /// `skipped`.
    pub skipped: u64,
}

/// One lane's slots over the lookback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaneWatch {
    /// The lane.
    pub lane: String,
    /// Its cron expression.
    pub cron: String,
    /// Its time zone.
    pub timezone: String,
    /// Its completion window, minutes.
    pub completion_window_minutes: u32,
    /// The grace period after the window, minutes.
    pub grace_minutes: u32,
    /// Slots after this instant are expected.
    pub expected_after: String,
    /// Every expected slot, oldest first.
    pub slots: Vec<SlotReport>,
    /// Counts by class.
    pub counts: ClassCounts,
    /// Missed slots in a row at the end (pending and overdue slots skipped).
    pub consecutive_missed: u64,
    /// The latest `on_time` slot.
    pub last_on_time: Option<String>,
    /// The latest slot whose record did not fail.
    pub last_success: Option<String>,
    /// Records of this lane at instants the cron does not fire at.
    pub unscheduled_records: u64,
    /// Why the lane could not be watched (a bad cron or zone), if so.
    pub problem: Option<String>,
}

impl LaneWatch {
    /// The lane needs a person: a missed or failed slot, or a problem.
    pub fn needs_attention(&self) -> bool {
        self.counts.missed > 0 || self.counts.failed > 0 || self.problem.is_some()
    }
}

/// The watchdog's inputs besides the manifest and the records.
#[derive(Debug, Clone, Copy)]
pub struct WatchSettings {
    /// Now.
    pub now: Timestamp,
    /// Slots after this instant are expected.
    pub since: Timestamp,
    /// The grace period after each completion window, minutes.
    pub grace_minutes: u32,
}

fn minutes(m: u32) -> SignedDuration {
    SignedDuration::from_mins(i64::from(m))
}

/// Watches every lane of `manifest` over `records` (any order; records of
/// other lanes are ignored).
pub fn watch(manifest: &Manifest, records: &[SlotMeta], s: &WatchSettings) -> Vec<LaneWatch> {
    let mut by_lane: BTreeMap<&LaneName, Vec<&SlotMeta>> = BTreeMap::new();
    for r in records {
        by_lane.entry(&r.lane).or_default().push(r);
    }
    manifest
        .lanes
        .iter()
        .map(|lane| {
            let mine = by_lane.get(&lane.name).cloned().unwrap_or_default();
            watch_lane(lane, &mine, s)
        })
        .collect()
}

fn watch_lane(lane: &crate::manifest::Lane, records: &[&SlotMeta], s: &WatchSettings) -> LaneWatch {
    let first = records.iter().map(|r| r.slot).min();
    // Expected from the lane's first record on (half-open: the first
    // record's own slot is included), and never before `since`.
    let after = match first {
        Some(f) if f > s.since => f - SignedDuration::from_nanos(1),
        _ => s.since,
    };
    let mut w = LaneWatch {
        lane: lane.name.to_string(),
        cron: lane.cron.clone(),
        timezone: lane.timezone.clone(),
        completion_window_minutes: lane.completion_window_minutes,
        grace_minutes: s.grace_minutes,
        expected_after: after.to_string(),
        slots: Vec::new(),
        counts: ClassCounts::default(),
        consecutive_missed: 0,
        last_on_time: None,
        last_success: None,
        unscheduled_records: 0,
        problem: None,
    };
    let slots = match Schedule::parse(&lane.cron, &lane.timezone)
        .and_then(|sch| sch.slots_between(after, s.now))
    {
        Ok(v) => v,
        Err(e) => {
            w.problem = Some(e.to_string());
            return w;
        }
    };
    let mut at_slot: BTreeMap<Timestamp, Vec<&SlotMeta>> = BTreeMap::new();
    for r in records {
        at_slot.entry(r.slot).or_default().push(r);
    }
    let expected: std::collections::BTreeSet<Timestamp> = slots.iter().copied().collect();
    w.unscheduled_records = records
        .iter()
        .filter(|r| !expected.contains(&r.slot) && r.slot > after && r.slot <= s.now)
        .count() as u64;
    let window = minutes(lane.completion_window_minutes);
    let grace = minutes(s.grace_minutes);
    for slot in slots {
        let due = slot + window;
        let skipped_by = records.iter().filter(|r| r.slot > slot).find(|r| {
            r.skipped
                .as_ref()
                .is_some_and(|k| k.first <= slot && slot <= k.last)
        });
        let report = classify(
            slot,
            due,
            grace,
            at_slot.get(&slot),
            skipped_by.copied(),
            s.now,
        );
        match report.class {
            SlotClass::OnTime => {
                w.counts.on_time += 1;
                w.last_on_time = Some(report.slot.clone());
            }
            SlotClass::Late => w.counts.late += 1,
            SlotClass::Missed => w.counts.missed += 1,
            SlotClass::Failed => w.counts.failed += 1,
            SlotClass::Pending => w.counts.pending += 1,
            SlotClass::Skipped => w.counts.skipped += 1,
        }
        if report.record.is_some() && report.class != SlotClass::Failed {
            w.last_success = Some(report.slot.clone());
        }
        w.slots.push(report);
    }
    w.consecutive_missed = w
        .slots
        .iter()
        .rev()
        .skip_while(|r| {
            r.class == SlotClass::Pending || (r.class == SlotClass::Late && r.record.is_none())
        })
        .take_while(|r| r.class == SlotClass::Missed)
        .count() as u64;
    w
}

fn late_by(t: Timestamp, due: Timestamp) -> String {
    let m = (t - due).as_secs().max(0) / 60;
    format!("{m} min after the window")
}

fn classify(
    slot: Timestamp,
    due: Timestamp,
    grace: SignedDuration,
    records: Option<&Vec<&SlotMeta>>,
    skipped_by: Option<&SlotMeta>,
    now: Timestamp,
) -> SlotReport {
    let report = |class, reason: String, record: Option<&SlotMeta>| SlotReport {
        slot: slot.to_string(),
        class,
        reason,
        record: record.map(|r| r.digest.clone()),
        due_by: due.to_string(),
    };
    let records = records.map(Vec::as_slice).unwrap_or_default();
    // A good record wins over a failed one; among good ones, the earliest.
    let good = records
        .iter()
        .filter(|r| r.failure().is_none())
        .min_by_key(|r| (r.finished_at.is_none(), r.finished_at, r.digest.clone()));
    if let Some(r) = good {
        return match r.finished_at {
            Some(f) if f <= due => report(SlotClass::OnTime, "recorded in time".into(), Some(r)),
            Some(f) => report(
                SlotClass::Late,
                format!("recorded {}", late_by(f, due)),
                Some(r),
            ),
            None => report(
                SlotClass::Late,
                "recorded; finish time unreadable".into(),
                Some(r),
            ),
        };
    }
    if let Some(r) = records.first() {
        let why = r.failure().unwrap_or_default();
        return report(SlotClass::Failed, why, Some(r));
    }
    if let Some(r) = skipped_by {
        let catch_up = r.skipped.as_ref().map_or("", |k| k.catch_up.as_str());
        return report(
            SlotClass::Skipped,
            format!(
                "skipped on purpose by the execution host (catch_up = {catch_up}), as the run of {} records",
                r.slot
            ),
            None,
        );
    }
    if now <= due {
        report(SlotClass::Pending, "window still open".into(), None)
    } else if now <= due + grace {
        report(
            SlotClass::Late,
            format!("no record yet, {}", late_by(now, due)),
            None,
        )
    } else {
        report(SlotClass::Missed, "no record".into(), None)
    }
}

/// The hidden marker of a lane's missed-run issue, on a line of its own.
pub fn missed_run_marker(lane: &str) -> String {
    format!("<!-- benchops:missed-run lane={lane} -->")
}

/// The lane whose missed-run marker stands on a line of `body`, if any.
pub fn missed_run_lane(body: &str) -> Option<&str> {
    body.lines().find_map(|l| {
        crate::reconcile::marker_text(l)
            .strip_prefix("<!-- benchops:missed-run lane=")?
            .strip_suffix(" -->")
            .filter(|lane| LaneName::new(*lane).is_ok())
    })
}

fn missed_run_body(w: &LaneWatch) -> String {
    use crate::reconcile::{Place, inert};
    let missed: Vec<&SlotReport> = w
        .slots
        .iter()
        .filter(|s| s.class == SlotClass::Missed)
        .collect();
    let mut body = format!(
        "{}\nLane {} has missed its last {} scheduled slot(s): no record arrived within the completion window ({} min) and the grace period ({} min).\n\n| slot | due by |\n|---|---|\n",
        missed_run_marker(&w.lane),
        inert(&w.lane, Place::Code, 100),
        w.consecutive_missed,
        w.completion_window_minutes,
        w.grace_minutes
    );
    // The latest 20 of the run of misses, oldest first.
    let shown = usize::try_from(w.consecutive_missed)
        .unwrap_or(usize::MAX)
        .min(20);
    for s in missed.iter().rev().take(shown).rev() {
        body.push_str(&format!("| {} | {} |\n", s.slot, s.due_by));
    }
    body.push_str(&format!(
        "\nLast on time: {}. Last success: {}.\n\nbenchops never re-runs a missed slot. This issue closes itself when the lane is on time again; see the runbook `runbooks/missed-run.md`.\n",
        w.last_on_time.as_deref().unwrap_or("never"),
        w.last_success.as_deref().unwrap_or("never"),
    ));
    body
}

/// The lane's latest decided slot (pending and not-yet-missed ones
/// skipped) has a record that did not fail.
fn on_time_again(w: &LaneWatch) -> bool {
    w.slots
        .iter()
        .rev()
        .find(|r| {
            !(r.class == SlotClass::Pending || (r.class == SlotClass::Late && r.record.is_none()))
        })
        .is_some_and(|r| {
            matches!(r.class, SlotClass::OnTime | SlotClass::Late) && r.record.is_some()
        })
}

/// The missed-run issue actions for `watches` against the issues that
/// carry `label` (`issues`: benchops's own, any state): a lane whose last
/// slots are missed gets one open issue (opened, or its body brought up to
/// date); a lane whose latest closed slot has a record again has its open
/// issue closed. A lane that cannot be watched is left alone.
pub fn plan_missed_runs(
    watches: &[LaneWatch],
    issues: &[crate::reconcile::ActualIssue],
    label: &str,
) -> Vec<crate::reconcile::Action> {
    use crate::reconcile::{Action, IssueState};
    let mut out = Vec::new();
    for w in watches.iter().filter(|w| w.problem.is_none()) {
        let open = issues
            .iter()
            .filter(|i| i.state == IssueState::Open && i.labels.iter().any(|l| l == label))
            .filter(|i| missed_run_lane(&i.body) == Some(w.lane.as_str()))
            .min_by_key(|i| i.number);
        let body = missed_run_body(w);
        match (w.consecutive_missed > 0, open) {
            (true, None) => out.push(Action::OpenNotice {
                title: format!(
                    "Missed benchmark runs: lane {}",
                    crate::reconcile::inert(&w.lane, crate::reconcile::Place::Plain, 100)
                ),
                body,
                labels: vec![label.to_owned()],
            }),
            (true, Some(i)) if i.body.trim_end() != body.trim_end() => {
                out.push(Action::UpdateBody {
                    issue: i.number,
                    body,
                });
            }
            (false, Some(i)) if on_time_again(w) => {
                let closed = format!(
                    "{}\nLane {} is on time again: slot {} has its record.\n",
                    missed_run_marker(&w.lane),
                    crate::reconcile::inert(&w.lane, crate::reconcile::Place::Code, 100),
                    w.last_success.as_deref().unwrap_or_default()
                );
                out.push(Action::Close {
                    issue: i.number,
                    clearing: Vec::new(),
                    body: closed,
                });
            }
            _ => {}
        }
    }
    out
}
