//! What a sweep did ([`SweepReport`]), the health it computed from
//! history (with the run durations and their trend that the health issue
//! and `benchops-publish health` show), and the one human summary both
//! modes print.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use benchops::manifest::Manifest;
use benchops::receipt::{BaselineChange, PersistedRecord};
use benchops::reconcile::Note;
use benchops::record::CaseCounts;
use benchops::time::{Utc, order_key};
use benchops::watchdog::{
    DEFAULT_GRACE_MINUTES, DEFAULT_LOOKBACK_HOURS, LaneWatch, SlotClass, SlotMeta, WatchSettings,
};
use benchops::{LaneName, SealedRecord, Sha256Digest};
use jiff::Timestamp;
use serde::Serialize;

use super::handoff::HandoffReport;
use super::ports::{Applied, ForeignIssue, HandoffRefReport, PhaseToken, RefOutcome};
use crate::text::{escape_text, shown_path};
use crate::verify::issue_line;

// ---------------------------------------------------------------------------
// Run durations (the health issue and `benchops-publish health`)

/// Durations shown per lane (the latest).
pub const DURATION_POINTS: usize = 20;

/// One run's duration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DurationPoint {
    /// The slot.
    pub slot: String,
    /// `finished_at − started_at`, seconds; `None` when a time is unreadable.
    pub seconds: Option<f64>,
}

fn seconds(r: &SealedRecord) -> Option<f64> {
    let s: Timestamp = r.record().started_at.parse().ok()?;
    let f: Timestamp = r.record().finished_at.parse().ok()?;
    Some((f - s).as_secs_f64())
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The latest [`DURATION_POINTS`] run durations of `lane` among `records`
/// (sorted by slot), oldest first.
pub fn durations_of<R: Borrow<SealedRecord>>(records: &[R], lane: &str) -> Vec<DurationPoint> {
    let mine: Vec<&SealedRecord> = records
        .iter()
        .map(Borrow::borrow)
        .filter(|r| r.record().lane.as_str() == lane)
        .collect();
    mine.iter()
        .rev()
        .take(DURATION_POINTS)
        .rev()
        .map(|r| DurationPoint {
            slot: r.record().slot.clone(),
            seconds: seconds(r),
        })
        .collect()
}

/// `rising`, `falling` or `flat`: the median of the newer half of the
/// durations against the older half (±10 %); `None` under four points.
pub fn trend(points: &[DurationPoint]) -> Option<String> {
    let values: Vec<f64> = points.iter().filter_map(|p| p.seconds).collect();
    if values.len() < 4 {
        return None;
    }
    let half = values.len() / 2;
    let old = median(&mut values[..half].to_vec())?;
    let new = median(&mut values[values.len() - half..].to_vec())?;
    Some(
        if new > old * 1.1 {
            "rising"
        } else if new < old * 0.9 {
            "falling"
        } else {
            "flat"
        }
        .to_owned(),
    )
}

// ---------------------------------------------------------------------------
// The report

/// The latest record of a lane, as the health table shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatestRecord {
    /// Its slot.
    pub slot: String,
    /// Its digest.
    pub digest: Sha256Digest,
    /// Its path on the branch.
    pub path: String,
    /// Its case counts.
    pub counts: CaseCounts,
}

/// One row of the health table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneHealth {
    /// The lane.
    pub lane: LaneName,
    /// Whether the manifest declares it.
    pub in_manifest: bool,
    /// Its latest record in history (None: no record yet).
    pub latest: Option<LatestRecord>,
}

/// The missed-run watchdog over history: the slots of the last
/// [`DEFAULT_LOOKBACK_HOURS`] before `now`, with the default grace period,
/// from the records' metadata. Empty when `now` is not a time.
pub fn watchdog(
    manifest: &Manifest,
    records: &[(String, SealedRecord)],
    now: &str,
) -> Vec<LaneWatch> {
    let Ok(now) = now.parse::<Timestamp>() else {
        return Vec::new();
    };
    let metas: Vec<SlotMeta> = records
        .iter()
        .filter_map(|(_, s)| SlotMeta::of(s.record(), &s.digest().to_string()))
        .collect();
    let settings = WatchSettings {
        now,
        since: now - jiff::SignedDuration::from_hours(i64::from(DEFAULT_LOOKBACK_HOURS)),
        grace_minutes: DEFAULT_GRACE_MINUTES,
    };
    benchops::watchdog::watch(manifest, &metas, &settings)
}

/// The latest record of every lane, from the records in memory: the
/// greatest slot (as an instant), then `finished_at`, then digest. Manifest
/// lanes come first, in manifest order, then lanes only history knows.
pub fn health(manifest: &Manifest, records: &[(String, SealedRecord)]) -> Vec<LaneHealth> {
    let mut latest: BTreeMap<LaneName, (&str, &SealedRecord)> = BTreeMap::new();
    type Key<'a> = ((Option<Utc>, &'a str), (Option<Utc>, &'a str), Sha256Digest);
    fn key(s: &SealedRecord) -> Key<'_> {
        let r = s.record();
        (order_key(&r.slot), order_key(&r.finished_at), s.digest())
    }
    for (path, s) in records {
        let lane = &s.record().lane;
        let newer = latest.get(lane).is_none_or(|(_, cur)| key(s) > key(cur));
        if newer {
            latest.insert(lane.clone(), (path.as_str(), s));
        }
    }
    let declared: BTreeSet<&LaneName> = manifest.lanes.iter().map(|l| &l.name).collect();
    let row = |lane: &LaneName, in_manifest: bool| LaneHealth {
        lane: lane.clone(),
        in_manifest,
        latest: latest.get(lane).map(|(path, s)| LatestRecord {
            slot: s.record().slot.clone(),
            digest: s.digest(),
            path: (*path).to_owned(),
            counts: s.record().case_counts,
        }),
    };
    let mut rows: Vec<LaneHealth> = manifest.lanes.iter().map(|l| row(&l.name, true)).collect();
    rows.extend(
        latest
            .keys()
            .filter(|l| !declared.contains(l))
            .map(|l| row(l, false)),
    );
    rows
}

/// Request totals of a sweep (zeros in local mode).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestSummary {
    /// Requests sent.
    pub requests: u64,
    /// Retries among them.
    pub retries: u64,
    /// Request body bytes.
    pub bytes_sent: u64,
    /// Response body bytes.
    pub bytes_received: u64,
    /// Time spent waiting, in all.
    pub waited_ms: u64,
    /// Of which retry backoff.
    pub retry_waited_ms: u64,
    /// Of which pacing.
    pub pacing_waited_ms: u64,
    /// The last rate-limit remaining seen (None: none seen).
    pub rate_limit_remaining: Option<u64>,
}

/// Where a sweep's time went, phase by phase, in seconds on one monotonic
/// clock (`std::time::Instant`). The phases run one after the other; setup
/// before them (a lock, opening the store) is not counted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseSeconds {
    /// Validating the handoff directory (and quarantining).
    pub validate: f64,
    /// The store's handoffs, the persist (commit and ref), and the consumed
    /// store handoffs.
    pub persist: f64,
    /// Reading all of history back at the new tip, every record verified.
    pub read_history: f64,
    /// Moving consumed directory handoffs, and the reconcile against the
    /// issues (listing, planning, writing).
    pub reconcile: f64,
    /// The watchdog and the per-lane health of the report.
    pub report: f64,
}

impl PhaseSeconds {
    /// The sum of the phases.
    pub fn total(&self) -> f64 {
        self.validate + self.persist + self.read_history + self.reconcile + self.report
    }
}

/// Everything a sweep did, in either mode.
#[derive(Debug, Clone, Default)]
pub struct SweepReport {
    /// What was swept: the sweep directory, or `OWNER/NAME`.
    pub target: String,
    /// Where the history is.
    pub history: String,
    /// Where the issues are.
    pub issues: String,
    /// The handoff directory, if one was swept.
    pub handoff: Option<PathBuf>,
    /// Its quarantine directory.
    pub quarantine: Option<PathBuf>,
    /// When the sweep started.
    pub started_at: String,
    /// The receipt's `finished_at` (taken when the persist began).
    pub finished_at: String,
    /// Every handoff of the directory, in file-name order.
    pub handoffs: Vec<HandoffReport>,
    /// Every handoff ref, in name order (GitHub mode, with refs swept).
    pub handoff_refs: Vec<HandoffRefReport>,
    /// Directory handoffs whose record is in history, moved to
    /// `.persisted/` (or left, with why).
    pub consumed: Vec<super::Consumed>,
    /// What the sweep cleaned up before it began (a lock or a half-built
    /// repository that a killed sweep left).
    pub setup_notes: Vec<String>,
    /// Why the history index was rebuilt or not used, when it was.
    pub index_note: Option<String>,
    /// Every valid record given to the persist (new or already present).
    pub persisted: Vec<PersistedRecord>,
    /// Baseline pointers that moved.
    pub baseline_changes: Vec<BaselineChange>,
    /// The commit this sweep landed (None: nothing new).
    pub commit: Option<String>,
    /// The branch tip after the persist (None: no branch).
    pub tip: Option<String>,
    /// The receipt's path when a commit was made.
    pub receipt_path: Option<String>,
    /// The committed (or, when nothing was new, computed) receipt's bytes.
    pub receipt: Vec<u8>,
    /// How many times the commit was built (from 1).
    pub persist_attempts: u32,
    /// How many records history holds (the reconcile's input).
    pub history_records: usize,
    /// Labels the tracker created.
    pub labels_created: Vec<String>,
    /// Issue writes, in order.
    pub applied: Vec<Applied>,
    /// Planned actions not applied because of `max_actions`.
    pub pending_actions: usize,
    /// Whether this sweep created the issue store (the local ledger).
    pub issues_created: bool,
    /// How many times the plan was recomputed because the issues changed
    /// under the sweep.
    pub replans: u32,
    /// The reconcile's notes (of the last plan computed).
    pub notes: Vec<Note>,
    /// Drift look-alikes benchops did not open: left alone.
    pub foreign_issues: Vec<ForeignIssue>,
    /// The latest record of every lane (manifest lanes first).
    pub health: Vec<LaneHealth>,
    /// The missed-run watchdog over the default lookback, per manifest lane
    /// ([`watchdog`]).
    pub watchdog: Vec<LaneWatch>,
    /// The phase tokens, in order (GitHub mode).
    pub tokens: Vec<PhaseToken>,
    /// Request totals.
    pub requests: RequestSummary,
    /// Where the time went.
    pub seconds: PhaseSeconds,
}

impl SweepReport {
    /// Handoffs that were quarantined: invalid files copied to the
    /// quarantine directory, and invalid handoff refs left in place.
    pub fn quarantined(&self) -> usize {
        self.handoffs
            .iter()
            .filter(|h| !h.valid() && h.quarantined.is_some())
            .count()
            + self.handoff_refs.iter().filter(|h| !h.valid()).count()
    }

    /// Invalid handoff files that could not be quarantined (their problem
    /// `quarantine-failed` says why): left in place, never persisted.
    pub fn invalid_left(&self) -> usize {
        self.handoffs
            .iter()
            .filter(|h| !h.valid() && h.quarantined.is_none())
            .count()
    }

    /// Consumed handoff refs that are still there: the next sweep takes
    /// care of them.
    pub fn refs_left(&self) -> usize {
        self.handoff_refs
            .iter()
            .filter(|h| h.valid() && !h.outcome.is_gone())
            .count()
    }

    /// Records newly written to history.
    pub fn new_records(&self) -> usize {
        self.persisted.iter().filter(|p| !p.already_present).count()
    }

    /// Records that were already in history.
    pub fn already_present(&self) -> usize {
        self.persisted.iter().filter(|p| p.already_present).count()
    }

    fn count(&self, f: impl Fn(&Applied) -> bool) -> usize {
        self.applied.iter().filter(|a| f(a)).count()
    }

    /// Issues opened.
    pub fn opened(&self) -> usize {
        self.count(|a| matches!(a, Applied::Opened { .. }))
    }

    /// Evidence comments posted.
    pub fn commented(&self) -> usize {
        self.count(|a| matches!(a, Applied::Commented { .. }))
    }

    /// Issues closed (completed; duplicates not counted).
    pub fn closed(&self) -> usize {
        self.count(|a| matches!(a, Applied::Closed { .. }))
    }

    /// Issues reopened.
    pub fn reopened(&self) -> usize {
        self.count(|a| matches!(a, Applied::Reopened { .. }))
    }
}

/// One line per lane: its slot counts and what needs a person.
pub fn watch_line(w: &LaneWatch) -> String {
    if let Some(p) = &w.problem {
        return format!("{:<16} cannot be watched: {p}", w.lane);
    }
    let c = &w.counts;
    let mut line = format!(
        "{:<16} {} on time, {} late, {} missed, {} failed, {} pending",
        w.lane, c.on_time, c.late, c.missed, c.failed, c.pending
    );
    if w.consecutive_missed > 0 {
        let _ = write!(line, "; the last {} in a row missed", w.consecutive_missed);
    }
    if let Some(last) = w.slots.iter().rev().find(|x| x.class == SlotClass::Missed) {
        let _ = write!(line, "; latest missed {}", last.slot);
    }
    if c.skipped > 0 {
        let _ = write!(
            line,
            "; {} skipped on purpose by the execution host (catch_up)",
            c.skipped
        );
    }
    if w.unscheduled_records > 0 {
        let _ = write!(
            line,
            "; {} unscheduled record(s), at instants the cron does not fire at (credited to no slot)",
            w.unscheduled_records
        );
    }
    line
}

fn short(d: &Sha256Digest) -> String {
    d.hex().chars().take(12).collect()
}

fn short_commit(c: &str) -> &str {
    c.get(..12).unwrap_or(c)
}

/// One line for a reconcile note.
/// The most characters of one summary line that carries text from records
/// or issues (drift keys hold case ids and metric names).
const TERMINAL_LINE_CHARS: usize = 400;

/// A summary line that carries text from records or issues, made safe for a
/// terminal: control characters, escapes and invisible characters shown
/// escaped (so no name can forge a line or recolour the screen), and at
/// most [`TERMINAL_LINE_CHARS`] characters.
fn terminal_text(text: &str) -> String {
    let escaped = escape_text(text);
    if escaped.chars().count() <= TERMINAL_LINE_CHARS {
        return escaped;
    }
    let cut: String = escaped.chars().take(TERMINAL_LINE_CHARS).collect();
    format!("{cut}… ({} characters)", escaped.chars().count())
}

/// One note as the summary prints it (raw: the summary escapes it).
pub fn render_note(n: &Note) -> String {
    match n {
        Note::Accepted {
            key,
            issue,
            suppressed,
        } => format!(
            "accepted: #{issue} ({key}) carries the accepted label; {} new evidence record(s) not announced",
            suppressed.len()
        ),
        Note::ClosedByHuman { key, issue } => format!(
            "closed by a person: #{issue} ({key}) still reproduces; benchops leaves it closed (reopen it to hand it back)"
        ),
        Note::HeldOpenByHuman { key, issue } => format!(
            "held open by a person: #{issue} ({key}) is cleared but was reopened by hand; benchops will not close it again for this evidence"
        ),
        Note::Uncovered { key, issue } => format!(
            "uncovered: {} ({key}): no lane covers the case any more; it stays open until a person closes or accepts it",
            issue.map_or_else(|| "new issue".to_owned(), |i| format!("#{i}"))
        ),
        Note::Duplicates {
            key,
            canonical,
            others,
        } => format!(
            "duplicates: {key} is tracked by #{canonical}; also carried by {}",
            others
                .iter()
                .map(|o| format!("#{o}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Note::UnknownKey { key, issue } => format!(
            "unknown key: #{issue} names {key}, which no record in history reports; left alone"
        ),
    }
}

fn ref_outcome_text(o: &RefOutcome) -> String {
    match o {
        RefOutcome::Deleted => "deleted (its record is in history)".to_owned(),
        RefOutcome::AlreadyGone => "already gone (its record is in history)".to_owned(),
        RefOutcome::Moved { to } => format!(
            "LEFT: it now points at {}, which the next sweep reads",
            short_commit(to)
        ),
        RefOutcome::NotInHistory => "LEFT: its record is not in history".to_owned(),
        RefOutcome::DeleteFailed { error } => format!(
            "LEFT: deleting failed ({error}); its record is in history, the next sweep deletes it"
        ),
        RefOutcome::Quarantined => "quarantined".to_owned(),
    }
}

/// The human summary of a sweep, the same in both modes (sections with
/// nothing to say are left out).
pub fn render_summary(r: &SweepReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "sweep {}: started {}, contents phase finished {}",
        r.target, r.started_at, r.finished_at
    );
    for n in &r.setup_notes {
        let _ = writeln!(s, "setup: {n}");
    }
    if let Some(n) = &r.index_note {
        let _ = writeln!(s, "history: {n}");
    }

    // Validate.
    if let Some(dir) = &r.handoff {
        let bad = r.handoffs.iter().filter(|h| !h.valid()).count();
        let left = r.invalid_left();
        let left_text = if left > 0 {
            format!(", {left} invalid left in place (quarantine failed)")
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "validate: {} handoff(s) in {}: {} valid, {} quarantined{left_text}",
            r.handoffs.len(),
            shown_path(dir),
            r.handoffs.len() - bad,
            bad - left
        );
    }
    for h in r.handoffs.iter().filter(|h| !h.valid()) {
        if let Some(q) = &h.quarantined {
            let copy = q
                .copy
                .as_ref()
                .map_or_else(|| "(unreadable, not copied)".to_owned(), |c| shown_path(c));
            let _ = writeln!(
                s,
                "  QUARANTINED {} -> {} (why: {}); NOT persisted; source left in place, remove it once investigated",
                shown_path(&h.source),
                copy,
                shown_path(&q.why)
            );
        }
        for i in &h.issues {
            let _ = writeln!(s, "    {}", escape_text(&issue_line(i)));
        }
    }
    if !r.handoff_refs.is_empty() {
        let bad = r.handoff_refs.iter().filter(|h| !h.valid()).count();
        let _ = writeln!(
            s,
            "validate: {} handoff ref(s) under refs/heads/benchmark-result/: {} valid, {} quarantined",
            r.handoff_refs.len(),
            r.handoff_refs.len() - bad,
            bad
        );
    }
    for h in r.handoff_refs.iter().filter(|h| !h.valid()) {
        let _ = writeln!(
            s,
            "  QUARANTINED {} (commit {}): left in place, NOT persisted and NOT deleted; delete the ref once investigated",
            h.name,
            short_commit(&h.commit)
        );
        for i in &h.issues {
            let _ = writeln!(s, "    {}", escape_text(&issue_line(i)));
        }
    }

    // Persist.
    let _ = writeln!(
        s,
        "persist: {} new record(s), {} already present; history {}",
        r.new_records(),
        r.already_present(),
        r.history
    );
    let receipt = r
        .receipt_path
        .as_ref()
        .map_or_else(String::new, |p| format!(", receipt {p}"));
    match (&r.commit, &r.tip) {
        (Some(c), _) => {
            let _ = writeln!(
                s,
                "  commit {} (attempt {}){receipt}",
                short_commit(c),
                r.persist_attempts,
            );
        }
        (None, Some(t)) => {
            let _ = writeln!(s, "  nothing new: no commit, tip stays {}", short_commit(t));
        }
        (None, None) => {
            let _ = writeln!(s, "  nothing new: no commit; the branch does not exist yet");
        }
    }
    for b in &r.baseline_changes {
        let from = b.from.as_ref().map_or_else(|| "none".to_owned(), short);
        let _ = writeln!(s, "  baseline {}: {} -> {}", b.lane, from, short(&b.to));
    }
    for c in &r.consumed {
        let _ = match &c.outcome {
            super::ConsumeOutcome::Moved | super::ConsumeOutcome::AlreadyThere => writeln!(
                s,
                "  handoff {}: moved to {} (its record is in history)",
                shown_path(&c.source),
                shown_path(&c.to)
            ),
            super::ConsumeOutcome::Left(why) => writeln!(
                s,
                "  handoff {}: LEFT in place ({}); its record is in history",
                shown_path(&c.source),
                escape_text(why)
            ),
        };
    }
    for h in r.handoff_refs.iter().filter(|h| h.valid()) {
        let _ = writeln!(
            s,
            "  handoff ref {}: {}",
            h.name,
            ref_outcome_text(&h.outcome)
        );
    }

    // Reconcile.
    let _ = writeln!(
        s,
        "reconcile: {} record(s) in history; issues {}{}",
        r.history_records,
        r.issues,
        if r.issues_created { " (created)" } else { "" }
    );
    let others = r.applied.len() - r.opened() - r.commented() - r.closed() - r.reopened();
    let _ = writeln!(
        s,
        "  issues: opened {}, commented {}, closed {}, reopened {}; other writes {} (labels, bodies, closing comments, duplicates)",
        r.opened(),
        r.commented(),
        r.closed(),
        r.reopened(),
        others
    );
    for name in &r.labels_created {
        let _ = writeln!(s, "  label {name}: created");
    }
    for a in &r.applied {
        let _ = writeln!(s, "  {}", terminal_text(&a.to_string()));
    }
    if r.pending_actions > 0 {
        let _ = writeln!(
            s,
            "  STOPPED after {} action(s) (max_actions); {} pending, the next sweep applies them",
            r.applied.len(),
            r.pending_actions
        );
    }
    if r.replans > 0 {
        let _ = writeln!(
            s,
            "  the issues changed under the sweep; plan recomputed {} time(s)",
            r.replans
        );
    }
    for n in &r.notes {
        let _ = writeln!(s, "  note: {}", terminal_text(&render_note(n)));
    }
    for f in &r.foreign_issues {
        let _ = writeln!(s, "  note: {}", terminal_text(&f.to_string()));
    }

    // Health.
    let _ = writeln!(s, "health (latest record per lane)");
    let _ = writeln!(
        s,
        "  {:<16} {:<24} {:<12} {:>5} {:>5} {:>5} {:>7}",
        "LANE", "SLOT", "RECORD", "PASS", "DRIFT", "ERROR", "SKIPPED"
    );
    for h in &r.health {
        let lane = if h.in_manifest {
            h.lane.to_string()
        } else {
            format!("{} (not in manifest)", h.lane)
        };
        match &h.latest {
            Some(l) => {
                let _ = writeln!(
                    s,
                    "  {:<16} {:<24} {:<12} {:>5} {:>5} {:>5} {:>7}",
                    lane,
                    l.slot,
                    short(&l.digest),
                    l.counts.pass,
                    l.counts.drift,
                    l.counts.error,
                    l.counts.skipped
                );
            }
            None => {
                let _ = writeln!(s, "  {lane:<16} no record yet");
            }
        }
    }
    let _ = writeln!(
        s,
        "watchdog (slots of the last {DEFAULT_LOOKBACK_HOURS} h; grace {DEFAULT_GRACE_MINUTES} min)"
    );
    for w in &r.watchdog {
        let _ = writeln!(s, "  {}", terminal_text(&watch_line(w)));
    }

    // Credentials and traffic.
    for t in &r.tokens {
        let _ = writeln!(
            s,
            "token: {} phase, {}",
            t.phase,
            if t.revoked { "revoked" } else { "NOT revoked" }
        );
    }
    let q = &r.requests;
    let _ = writeln!(
        s,
        "requests: {} ({} retries), {} B sent, {} B received, waits {} ms (retry {} ms, pacing {} ms), rate limit remaining {}",
        q.requests,
        q.retries,
        q.bytes_sent,
        q.bytes_received,
        q.waited_ms,
        q.retry_waited_ms,
        q.pacing_waited_ms,
        q.rate_limit_remaining
            .map_or_else(|| "unknown".to_owned(), |n| n.to_string())
    );
    let t = &r.seconds;
    let _ = writeln!(
        s,
        "took {:.2} s: validate {:.2} s, persist {:.2} s, read history {:.2} s ({} records), reconcile {:.2} s, report {:.2} s",
        t.total(),
        t.validate,
        t.persist,
        t.read_history,
        r.history_records,
        t.reconcile,
        t.report
    );
    s
}

#[cfg(test)]
mod tests {
    use benchops::manifest::{Labels, Manifest};
    use benchops_testkit::records::{draft, seal, with_lane_slot};
    use serde_json::json;

    use super::*;

    #[test]
    fn notes_print_record_text_escaped_and_bounded() {
        let key = benchops::reconcile::DriftKey {
            case: benchops::CaseId::new("parse/small").expect("case id"),
            metric: "wall_s\n  #1 closed (completed)\n\u{1b}[31mRED \u{202e}evil".to_owned(),
        };
        let mut r = SweepReport::default();
        r.notes.push(Note::Uncovered {
            key: key.clone(),
            issue: Some(4),
        });
        let printed = render_summary(&r);
        let note = printed
            .lines()
            .find(|l| l.contains("uncovered"))
            .expect("the note is printed");
        assert!(note.contains("wall_s\\n  #1 closed"), "{note}");
        assert!(
            !printed
                .lines()
                .any(|l| l.trim_start().starts_with("#1 closed")),
            "{printed}"
        );
        assert!(
            !printed.contains('\u{1b}') && !printed.contains('\u{202e}'),
            "{printed}"
        );

        let long = "m".repeat(5_000);
        let line = terminal_text(&long);
        assert_eq!(line, format!("{}… (5000 characters)", "m".repeat(400)));
    }

    fn record(slot: &str, finished_at: &str) -> SealedRecord {
        let mut v = with_lane_slot(draft(), "nightly", slot);
        v["finished_at"] = json!(finished_at);
        seal(&v)
    }

    #[test]
    fn health_takes_one_slot_instant_written_two_ways_as_one() {
        // The same slot, written with and without milliseconds: the record
        // that finished later is the latest, whatever the spelling.
        let later = record("2026-12-01T01:00:00.000Z", "2026-12-01T03:00:00Z");
        let earlier = record("2026-12-01T01:00:00Z", "2026-12-01T02:00:00Z");
        let manifest = Manifest {
            schema: "schedule-manifest/v1".into(),
            suite: None,
            build: None,
            gc: None,
            repository: None,
            labels: Labels::default(),
            signing: None,
            lanes: vec![],
        };
        for records in [
            vec![
                ("a".to_owned(), later.clone()),
                ("b".to_owned(), earlier.clone()),
            ],
            vec![
                ("b".to_owned(), earlier.clone()),
                ("a".to_owned(), later.clone()),
            ],
        ] {
            let rows = health(&manifest, &records);
            let latest = rows[0].latest.as_ref().expect("a record");
            assert_eq!(latest.digest, later.digest());
            assert_eq!(latest.path, "a");
        }
    }
}
