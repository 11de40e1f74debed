//! Lane-aware drift issue reconciliation (contract 6, amendment A9), as a pure
//! function: sealed history + schedule manifest + the issues that exist →
//! an ordered list of write [`Action`]s and informational [`Note`]s.
//!
//! Nothing here reads a clock, the network, a file or the environment. Time is
//! not an input at all: records are ordered by their own fields, so the plan
//! is a function of its inputs only.
//!
//! # Drift keys and what history says
//!
//! A drift key is a case id plus a metric, taken from the records'
//! `publication.drift_reports` ([`DriftKey`]). For each key ever reported,
//! [`drift_statuses`] derives:
//!
//! - **evidence**: every record whose drift reports include the key, in record
//!   order (slot, then `finished_at`, then digest: a total order; timestamps
//!   compare as instants, not as text). The last one is the key's **epoch**.
//! - for every manifest lane, whether it **currently covers** the case
//!   ([`Lane::covers`](crate::manifest::Lane::covers)) and, when it does, its
//!   latest record and its **clearing record**: its latest record *after the
//!   epoch* in which the case does not reproduce (the case is in
//!   `publication.cleared`, or its outcome is pass). A record where the case
//!   drifts on another metric, is skipped, errors or is absent does not clear.
//! - the key's [`Standing`]:
//!   - `Cleared`: at least one lane covers the case and *every* covering lane
//!     has a clearing record. A sentinel that covers a subset of cases is not a
//!     covering lane of a comprehensive-only case, so it can never close it.
//!   - `Reproducing`: some covering lane has no clearing record (its latest
//!     record still reports the drift, or it has not run since).
//!   - `Uncovered`: no lane covers the case any more. **Choice:** benchops does
//!     not close on absence of evidence; the issue stays open and its body
//!     says that a person must close it, accept it, or cover the case again.
//!
//! A lane that stops covering the case stops holding the issue open; a lane
//! that starts covering it holds a still-open issue open until it clears.
//!
//! # What an issue carries (hidden markers)
//!
//! | where | marker | meaning |
//! |---|---|---|
//! | body | `<!-- benchops:drift key=<case>/<metric> -->` | the key (metric percent-encoded outside `[A-Za-z0-9._-]`) |
//! | body | `<!-- benchops:state open\|closed epoch=sha256:… -->` | the state benchops last set, and for which epoch |
//! | body | `<!-- benchops:evidence record=sha256:… -->` | evidence announced when the issue was opened |
//! | comment | `<!-- benchops:evidence record=sha256:… -->` | evidence announced by that comment |
//! | comment | `<!-- benchops:closed epoch=sha256:… -->` | the closing comment for that epoch |
//!
//! The state marker is written **in the same request** as every state change
//! benchops makes (open, close, reopen are one create or one update of body
//! and state together). That is how a closed issue tells "benchops closed it"
//! (state marker `closed`) from "a person closed it" (marker `open` or none),
//! and an open issue tells "a person reopened what benchops closed" (marker
//! `closed`) apart, with no dependence on comment order or a crash between two
//! requests. Evidence markers in the body are copied unchanged whenever
//! benchops rewrites it, so what the opening announced stays announced.
//!
//! # The state machine (per key; the canonical issue is the lowest number)
//!
//! "New evidence" is evidence with no marker in the body or any comment.
//! "Labels" means: add the drift label and `lane:<lane>` for each lane of the
//! new evidence, if missing (never removes a label).
//!
//! | actual issue | standing / epoch | actions, in this order |
//! |---|---|---|
//! | none | not `Cleared` | `Open` (body lists and marks all evidence; labels) |
//! | none | `Cleared` | nothing: the drift was sealed and cleared before it was announced; history holds it |
//! | has the `accepted` label (any state) | any | nothing, ever; note `Accepted` with the suppressed evidence |
//! | open, benchops-owned | not `Cleared` | labels, one `Comment` per new evidence, `UpdateBody` if the rendered body differs |
//! | open, benchops-owned | `Cleared` | labels, comments, `Close` (body with marker `closed`), closing `Comment` |
//! | closed by benchops at epoch `e` | epoch ≠ `e`, not `Cleared` | `Reopen` (body with marker `open`), labels, comments |
//! | closed by benchops at epoch `e` | epoch ≠ `e`, `Cleared` | labels, comments, `UpdateBody` (marker `closed` for the new epoch), closing `Comment` |
//! | closed by benchops at epoch `e` | epoch = `e` | labels and comments for late (older) evidence only; the closing `Comment` if a crash lost it. Never reopened without new evidence, even if coverage changed |
//! | closed by a person | any | one `Comment` per new evidence saying the drift reproduced again, that benchops leaves the issue closed, and how to hand it back (reopen) or silence it (accepted label). Never reopened, no labels, no body edit; note `ClosedByHuman` while it still reproduces |
//! | reopened by a person after benchops closed it at epoch `e` | epoch = `e` | labels and comments only; never re-closed for that epoch; note `HeldOpenByHuman` when it would otherwise close |
//! | reopened by a person … | epoch ≠ `e` | as "open, benchops-owned" (the drift returned; the next body write takes it back) |
//!
//! Open issues' bodies are kept current (`UpdateBody`); closed bodies are
//! frozen except when the epoch changes. A person's edit of an open body is
//! overwritten on the next sweep: discussion belongs in comments.
//!
//! Other issues carrying the key (a race between two sweeps) are closed with
//! `CloseDuplicate`, whose body drops the drift marker, unless they are closed
//! already or accepted; note `Duplicates` either way. An issue whose key has no
//! evidence in history is left alone (note `UnknownKey`).
//!
//! Two racing sweeps can also both post the same comment. When benchops's own
//! comments on the canonical issue (unless accepted) carry the same evidence or
//! closed marker more than once, the earliest (lowest comment id) is kept and
//! each later comment whose every marker an earlier kept comment carries is
//! deleted with `DeleteDuplicateComment`, after the key's other actions and
//! before `CloseDuplicate`. Deleting a repeat removes no announcement, so it
//! changes no other action.
//!
//! # Idempotence and retries
//!
//! Every action is one write request and every write is recorded by a marker
//! or a state the next reconcile reads back, so applying a plan and
//! reconciling again yields no actions, and applying any prefix of a plan
//! (a crash) and reconciling again yields the rest of it. Labels precede
//! comments (a comment ends the need to label), and a body that records a
//! state precedes the comment that explains it (the comment is then re-derived
//! from the body's marker). Actions are ordered by key, then as in the table.
//! Adapters should pass only comments benchops itself wrote where the platform
//! can tell, so a copied marker cannot silence an announcement.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

use crate::digest::Sha256Digest;
use crate::manifest::{Labels, Manifest};
use crate::names::{CaseId, LaneName, NameError};
use crate::num::Finite;
use crate::record::{Outcome, ResultRecord};
use crate::seal::SealedRecord;

/// Evidence rows shown in an issue body (the newest ones).
const EVIDENCE_ROWS: usize = 20;
/// Points in the trend chart (the newest ones).
const CHART_POINTS: usize = 30;

// ---------------------------------------------------------------------------
// Keys and markers
// ---------------------------------------------------------------------------

/// The identity of a drift issue: a case and the metric that drifted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DriftKey {
    /// The case.
    pub case: CaseId,
    /// The metric.
    pub metric: String,
}

/// A `key=` marker value that is not `<case>/<encoded metric>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyParseError {
    /// No `/` between case and metric.
    #[error("drift key {0:?} has no `/` between case and metric")]
    NoSeparator(String),
    /// The metric part is empty.
    #[error("drift key {0:?} has an empty metric")]
    EmptyMetric(String),
    /// A `%` not followed by two hex digits, or a byte that must be escaped.
    #[error("drift key {0:?} has a bad escape in its metric")]
    BadEscape(String),
    /// The decoded metric is not UTF-8.
    #[error("drift key {0:?} has a metric that is not UTF-8")]
    NotUtf8(String),
    /// The case part is not a valid case id.
    #[error("drift key has an invalid case")]
    Case(#[from] NameError),
}

impl DriftKey {
    /// A key.
    pub fn new(case: CaseId, metric: impl Into<String>) -> Self {
        Self {
            case,
            metric: metric.into(),
        }
    }

    /// The marker form: `<case>/<metric>`, the metric percent-encoded outside
    /// `[A-Za-z0-9._-]` (so `wall_s` stays `wall_s`, and the last `/`
    /// always separates the two).
    pub fn marker_value(&self) -> String {
        let mut s = format!("{}/", self.case);
        for b in self.metric.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
                s.push(char::from(b));
            } else {
                let _ = write!(s, "%{b:02X}");
            }
        }
        s
    }

    /// Parses [`marker_value`](Self::marker_value) strictly.
    pub fn parse_marker_value(s: &str) -> Result<Self, KeyParseError> {
        let (case, enc) = s
            .rsplit_once('/')
            .ok_or_else(|| KeyParseError::NoSeparator(s.to_owned()))?;
        if enc.is_empty() {
            return Err(KeyParseError::EmptyMetric(s.to_owned()));
        }
        let bad = || KeyParseError::BadEscape(s.to_owned());
        let mut bytes = Vec::with_capacity(enc.len());
        let raw = enc.as_bytes();
        let mut i = 0;
        while i < raw.len() {
            let b = raw[i];
            if b == b'%' {
                let hex = enc.get(i + 1..i + 3).ok_or_else(bad)?;
                if !hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'A'..=b'F')) {
                    return Err(bad());
                }
                bytes.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
                i += 3;
            } else if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
                bytes.push(b);
                i += 1;
            } else {
                return Err(bad());
            }
        }
        let metric = String::from_utf8(bytes).map_err(|_| KeyParseError::NotUtf8(s.to_owned()))?;
        Ok(Self::new(CaseId::new(case)?, metric))
    }
}

impl fmt::Display for DriftKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} · {}", self.case, self.metric)
    }
}

/// The hidden body marker naming the key.
pub fn drift_marker(key: &DriftKey) -> String {
    format!("<!-- benchops:drift key={} -->", key.marker_value())
}

/// The hidden marker that records one announced evidence record.
pub fn evidence_marker(record: &Sha256Digest) -> String {
    format!("<!-- benchops:evidence record={record} -->")
}

/// The hidden marker of the closing comment for an epoch.
pub fn closed_marker(epoch: &Sha256Digest) -> String {
    format!("<!-- benchops:closed epoch={epoch} -->")
}

/// The hidden body marker recording the state benchops last set.
pub fn state_marker(m: &StateMarker) -> String {
    let state = match m.state {
        IssueState::Open => "open",
        IssueState::Closed => "closed",
    };
    format!("<!-- benchops:state {state} epoch={} -->", m.epoch)
}

/// Every `<!-- benchops:<kind> word ... -->` in `text`, as (kind, words).
fn markers(text: &str) -> Vec<(&str, Vec<&str>)> {
    const OPEN: &str = "<!-- benchops:";
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        // From `benchops:`, so the kind keeps its prefix.
        let after = &rest[start + "<!-- ".len()..];
        let Some(end) = after.find("-->") else { break };
        let mut words = after[..end].split_whitespace();
        if let Some(kind) = words.next() {
            out.push((kind, words.collect()));
        }
        rest = &after[end + 3..];
    }
    out
}

/// The value of `name=value` among a marker's words.
fn marker_field<'a>(words: &[&'a str], name: &str) -> Option<&'a str> {
    words.iter().find_map(|w| {
        w.split_once('=')
            .filter(|(k, _)| *k == name)
            .map(|(_, v)| v)
    })
}

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

/// One sealed record of history, with its content address. The caller has
/// verified it (the publisher only reconciles over validated records).
#[derive(Debug, Clone, Copy)]
pub struct HistoryRecord<'a> {
    /// The record's digest.
    pub digest: Sha256Digest,
    /// The record.
    pub record: &'a ResultRecord,
}

impl<'a> From<&'a SealedRecord> for HistoryRecord<'a> {
    fn from(s: &'a SealedRecord) -> Self {
        Self {
            digest: s.digest(),
            record: s.record(),
        }
    }
}

/// Open or closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IssueState {
    /// Open.
    Open,
    /// Closed.
    Closed,
}

/// Who closed a closed issue, as read from its state marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closer {
    /// The body's state marker says benchops closed it.
    Benchops,
    /// Anyone else (the marker says open, or there is none).
    Human,
}

/// The state benchops last set on an issue, and for which epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateMarker {
    /// The state benchops set.
    pub state: IssueState,
    /// The key's latest evidence record at that moment.
    pub epoch: Sha256Digest,
}

/// An issue as it exists (on GitHub or in the local ledger), with what its
/// markers say. Build it with [`ActualIssue::from_body`] and
/// [`ActualIssue::with_comments`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActualIssue {
    /// The issue number.
    pub number: u64,
    /// Its title.
    pub title: String,
    /// Its body.
    pub body: String,
    /// Open or closed.
    pub state: IssueState,
    /// The platform's state reason (`completed`, `not_planned`, ...), if any.
    pub state_reason: Option<String>,
    /// Its label names.
    pub labels: Vec<String>,
    /// The key from the body's drift marker (`None`: not a drift issue, or a
    /// marker that does not parse).
    pub key: Option<DriftKey>,
    /// The body's state marker.
    pub state_marker: Option<StateMarker>,
    /// Evidence records marked in the body (announced by the opening).
    pub body_evidence: BTreeSet<Sha256Digest>,
    /// Evidence records marked in comments.
    pub commented_evidence: BTreeSet<Sha256Digest>,
    /// Epochs that have a closing comment.
    pub closing_comments: BTreeSet<Sha256Digest>,
    /// The comments read, by id, with the markers each carries.
    pub comments: Vec<IssueComment>,
}

/// One comment benchops wrote, as read back: its id and the markers in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueComment {
    /// The platform's comment id (ascending in creation order).
    pub id: u64,
    /// The markers it carries, in text order.
    pub markers: Vec<CommentMarker>,
}

impl ActualIssue {
    /// Reads an issue's body markers. Comments come with
    /// [`with_comments`](Self::with_comments).
    pub fn from_body(
        number: u64,
        title: impl Into<String>,
        body: impl Into<String>,
        state: IssueState,
        state_reason: Option<String>,
        labels: Vec<String>,
    ) -> Self {
        let body = body.into();
        let mut key = None;
        let mut marker = None;
        let mut body_evidence = BTreeSet::new();
        for (kind, words) in markers(&body) {
            match kind {
                "benchops:drift" if key.is_none() => {
                    key = marker_field(&words, "key")
                        .and_then(|v| DriftKey::parse_marker_value(v).ok());
                }
                "benchops:state" if marker.is_none() => {
                    marker = parse_state_marker(&words);
                }
                "benchops:evidence" => {
                    if let Some(d) = marker_field(&words, "record").and_then(|v| v.parse().ok()) {
                        body_evidence.insert(d);
                    }
                }
                _ => {}
            }
        }
        Self {
            number,
            title: title.into(),
            body,
            state,
            state_reason,
            labels,
            key,
            state_marker: marker,
            body_evidence,
            commented_evidence: BTreeSet::new(),
            closing_comments: BTreeSet::new(),
            comments: Vec::new(),
        }
    }

    /// Adds what the issue's comments mark (evidence and closing comments),
    /// each comment given as its id and its text.
    #[must_use]
    pub fn with_comments<I, S>(mut self, comments: I) -> Self
    where
        I: IntoIterator<Item = (u64, S)>,
        S: AsRef<str>,
    {
        for (id, c) in comments {
            let mut found = Vec::new();
            for (kind, words) in markers(c.as_ref()) {
                let digest = |f| marker_field(&words, f).and_then(|v| v.parse().ok());
                match kind {
                    "benchops:evidence" => {
                        if let Some(d) = digest("record") {
                            self.commented_evidence.insert(d);
                            found.push(CommentMarker::Evidence { record: d });
                        }
                    }
                    "benchops:closed" => {
                        if let Some(d) = digest("epoch") {
                            self.closing_comments.insert(d);
                            found.push(CommentMarker::Closed { epoch: d });
                        }
                    }
                    _ => {}
                }
            }
            self.comments.push(IssueComment { id, markers: found });
        }
        self
    }

    /// Comments that repeat what earlier comments already mark: walking the
    /// comments by ascending id, a comment with at least one marker, all of
    /// which an earlier kept comment carries. The earliest of each marker is
    /// kept, and a comment is never a duplicate while it carries a marker
    /// nothing earlier does. Ascending ids, each once.
    pub fn duplicate_comments(&self) -> Vec<u64> {
        let mut by_id: Vec<&IssueComment> = self.comments.iter().collect();
        by_id.sort_by_key(|c| c.id);
        by_id.dedup_by_key(|c| c.id);
        let mut seen: BTreeSet<CommentMarker> = BTreeSet::new();
        let mut out = Vec::new();
        for c in by_id {
            if c.markers.is_empty() {
                continue;
            }
            if c.markers.iter().all(|m| seen.contains(m)) {
                out.push(c.id);
            } else {
                seen.extend(c.markers.iter().copied());
            }
        }
        out
    }

    /// Who closed it; `None` while open.
    pub fn closed_by(&self) -> Option<Closer> {
        match (self.state, self.state_marker) {
            (IssueState::Open, _) => None,
            (
                IssueState::Closed,
                Some(StateMarker {
                    state: IssueState::Closed,
                    ..
                }),
            ) => Some(Closer::Benchops),
            (IssueState::Closed, _) => Some(Closer::Human),
        }
    }

    /// Whether an evidence record is announced (marked in body or comments).
    pub fn announced(&self, record: &Sha256Digest) -> bool {
        self.body_evidence.contains(record) || self.commented_evidence.contains(record)
    }

    fn has_label(&self, name: &str) -> bool {
        self.labels.iter().any(|l| l == name)
    }
}

fn parse_state_marker(words: &[&str]) -> Option<StateMarker> {
    let state = match words.first().copied() {
        Some("open") => IssueState::Open,
        Some("closed") => IssueState::Closed,
        _ => return None,
    };
    let epoch = marker_field(words, "epoch")?.parse().ok()?;
    Some(StateMarker { state, epoch })
}

// ---------------------------------------------------------------------------
// Desired state from history
// ---------------------------------------------------------------------------

/// Where a record sits in history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRef {
    /// Its lane.
    pub lane: LaneName,
    /// Its slot (RFC 3339 UTC).
    pub slot: String,
    /// When it finished (RFC 3339 UTC).
    pub finished_at: String,
    /// Its digest.
    pub digest: Sha256Digest,
}

/// What one record says about the key's case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseStatus {
    /// The record reports this key's drift.
    Reproduces,
    /// The case drifted on another metric (does not clear this key).
    DriftOnOtherMetric(String),
    /// The case passed (or is in `cleared`).
    DoesNotReproduce,
    /// Skipped or error (does not clear).
    NotMeasured(Outcome),
    /// The case is not in the record.
    NotInRecord,
}

/// One evidence record of a key.
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceEntry {
    /// The record.
    pub record: RecordRef,
    /// The drift report's one-line summary.
    pub summary: String,
    /// The record's median of the metric, when measured.
    pub median: Option<Finite>,
    /// The metric's unit, when known.
    pub unit: Option<String>,
    /// The baseline median in the drift evidence, when present.
    pub baseline_median: Option<Finite>,
}

/// One lane's view of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneStatus {
    /// The lane.
    pub lane: LaneName,
    /// Whether the manifest declares the lane.
    pub in_manifest: bool,
    /// Whether the lane currently covers the case.
    pub covers: bool,
    /// The lane's latest record and the case's status in it (covering lanes
    /// only).
    pub latest: Option<(RecordRef, CaseStatus)>,
    /// The lane's latest record after the epoch in which the case does not
    /// reproduce (covering lanes only).
    pub clearing: Option<RecordRef>,
}

/// Whether history says the key should be open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Some covering lane has not cleared the case since the epoch.
    Reproducing {
        /// The covering lanes without a clearing record, in lane order.
        holding: Vec<LaneName>,
    },
    /// Every covering lane has a clearing record after the epoch.
    Cleared {
        /// Each covering lane's clearing record, in lane order.
        clearing: Vec<RecordRef>,
    },
    /// No lane covers the case any more; benchops keeps the issue open.
    Uncovered,
}

/// Everything history and the manifest say about one key.
#[derive(Debug, Clone, PartialEq)]
pub struct DriftStatus {
    /// The key.
    pub key: DriftKey,
    /// The latest evidence record's digest.
    pub epoch: Sha256Digest,
    /// Evidence records in record order (never empty).
    pub evidence: Vec<EvidenceEntry>,
    /// Manifest lanes in manifest order, then lanes with evidence that the
    /// manifest no longer declares, by name.
    pub lanes: Vec<LaneStatus>,
    /// The verdict.
    pub standing: Standing,
}

type TimeKey<'a> = (Option<(i64, u32)>, &'a str);

fn time_key(s: &str) -> TimeKey<'_> {
    (crate::seal::parse_utc(s), s)
}

fn record_ref(h: &HistoryRecord<'_>) -> RecordRef {
    RecordRef {
        lane: h.record.lane.clone(),
        slot: h.record.slot.clone(),
        finished_at: h.record.finished_at.clone(),
        digest: h.digest,
    }
}

/// What `record` says about `key`'s case.
pub fn case_status(record: &ResultRecord, key: &DriftKey) -> CaseStatus {
    let plan = &record.publication;
    if plan
        .drift_reports
        .iter()
        .any(|r| r.case == key.case && r.metric == key.metric)
    {
        return CaseStatus::Reproduces;
    }
    if plan.cleared.contains(&key.case) {
        return CaseStatus::DoesNotReproduce;
    }
    match record.cases.iter().find(|c| c.id == key.case) {
        None => CaseStatus::NotInRecord,
        Some(c) => match c.outcome {
            Outcome::Pass => CaseStatus::DoesNotReproduce,
            Outcome::Drift => match &c.drift {
                Some(d) if d.metric == key.metric => CaseStatus::Reproduces,
                Some(d) => CaseStatus::DriftOnOtherMetric(d.metric.clone()),
                None => CaseStatus::NotMeasured(Outcome::Drift),
            },
            o => CaseStatus::NotMeasured(o),
        },
    }
}

/// The desired state of every key ever reported, in key order. Duplicate
/// records (same digest) count once; input order does not matter.
pub fn drift_statuses(manifest: &Manifest, history: &[HistoryRecord<'_>]) -> Vec<DriftStatus> {
    let mut recs: Vec<&HistoryRecord<'_>> = history.iter().collect();
    recs.sort_by(|a, b| {
        (
            time_key(&a.record.slot),
            time_key(&a.record.finished_at),
            a.digest,
        )
            .cmp(&(
                time_key(&b.record.slot),
                time_key(&b.record.finished_at),
                b.digest,
            ))
    });
    recs.dedup_by_key(|h| h.digest);

    let mut by_lane: BTreeMap<&LaneName, Vec<usize>> = BTreeMap::new();
    let mut evidence: BTreeMap<DriftKey, Vec<(usize, &str)>> = BTreeMap::new();
    for (i, h) in recs.iter().enumerate() {
        by_lane.entry(&h.record.lane).or_default().push(i);
        for rep in &h.record.publication.drift_reports {
            evidence
                .entry(DriftKey::new(rep.case.clone(), rep.metric.clone()))
                .or_default()
                .push((i, rep.summary.as_str()));
        }
    }

    let mut out = Vec::with_capacity(evidence.len());
    for (key, ev) in evidence {
        let Some(&(epoch_idx, _)) = ev.last() else {
            continue;
        };
        let entries: Vec<EvidenceEntry> = ev
            .iter()
            .map(|&(i, summary)| evidence_entry(recs[i], &key, summary))
            .collect();

        let mut lane_names: Vec<(&LaneName, bool, bool)> = manifest
            .lanes
            .iter()
            .map(|l| (&l.name, true, l.covers(key.case.as_str())))
            .collect();
        let extra: BTreeSet<&LaneName> = ev
            .iter()
            .map(|&(i, _)| &recs[i].record.lane)
            .filter(|l| !manifest.lanes.iter().any(|m| &m.name == *l))
            .collect();
        lane_names.extend(extra.into_iter().map(|l| (l, false, false)));

        let mut lanes = Vec::with_capacity(lane_names.len());
        for (lane, in_manifest, covers) in lane_names {
            let idx = by_lane.get(lane).map(Vec::as_slice).unwrap_or_default();
            let (latest, clearing) = if covers {
                let latest = idx
                    .last()
                    .map(|&i| (record_ref(recs[i]), case_status(recs[i].record, &key)));
                let clearing = idx
                    .iter()
                    .rev()
                    .take_while(|&&i| i > epoch_idx)
                    .find(|&&i| case_status(recs[i].record, &key) == CaseStatus::DoesNotReproduce)
                    .map(|&i| record_ref(recs[i]));
                (latest, clearing)
            } else {
                (None, None)
            };
            lanes.push(LaneStatus {
                lane: lane.clone(),
                in_manifest,
                covers,
                latest,
                clearing,
            });
        }

        let covering: Vec<&LaneStatus> = lanes.iter().filter(|l| l.covers).collect();
        let standing = if covering.is_empty() {
            Standing::Uncovered
        } else {
            let holding: Vec<LaneName> = covering
                .iter()
                .filter(|l| l.clearing.is_none())
                .map(|l| l.lane.clone())
                .collect();
            if holding.is_empty() {
                Standing::Cleared {
                    clearing: covering.iter().filter_map(|l| l.clearing.clone()).collect(),
                }
            } else {
                Standing::Reproducing { holding }
            }
        };
        out.push(DriftStatus {
            key,
            epoch: recs[epoch_idx].digest,
            evidence: entries,
            lanes,
            standing,
        });
    }
    out
}

fn evidence_entry(h: &HistoryRecord<'_>, key: &DriftKey, summary: &str) -> EvidenceEntry {
    let case = h.record.cases.iter().find(|c| c.id == key.case);
    let metric = case.and_then(|c| c.metrics.iter().find(|m| m.name == key.metric));
    EvidenceEntry {
        record: record_ref(h),
        summary: summary.to_owned(),
        median: metric.and_then(|m| m.summary.as_ref()).map(|s| s.median),
        unit: metric.map(|m| m.unit.clone()),
        baseline_median: case
            .and_then(|c| c.drift.as_ref())
            .filter(|d| d.metric == key.metric)
            .map(|d| d.baseline.median),
    }
}

// ---------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------

/// What a comment's marker records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommentMarker {
    /// Announces one evidence record.
    Evidence {
        /// The record.
        record: Sha256Digest,
    },
    /// The closing comment for an epoch.
    Closed {
        /// The latest evidence at closing.
        epoch: Sha256Digest,
    },
}

/// One write. Each is exactly one request to the issue tracker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Create an open issue with this body and these labels.
    Open {
        /// The key (in the body's drift marker too).
        key: DriftKey,
        /// Title.
        title: String,
        /// Body.
        body: String,
        /// Labels, sorted.
        labels: Vec<String>,
    },
    /// Add labels (never removes any).
    AddLabels {
        /// The issue.
        issue: u64,
        /// The missing labels, sorted.
        labels: Vec<String>,
    },
    /// Post a comment (its body contains the marker).
    Comment {
        /// The issue.
        issue: u64,
        /// What the comment's marker records.
        marker: CommentMarker,
        /// Comment text.
        body: String,
    },
    /// Replace the body, state unchanged.
    UpdateBody {
        /// The issue.
        issue: u64,
        /// The new body.
        body: String,
    },
    /// Set state closed (reason `completed`) and the body, in one request.
    Close {
        /// The issue.
        issue: u64,
        /// Each covering lane's clearing record.
        clearing: Vec<RecordRef>,
        /// The new body (state marker `closed`; lists the clearing records).
        body: String,
    },
    /// Set state open and the body, in one request.
    Reopen {
        /// The issue.
        issue: u64,
        /// The new body (state marker `open`).
        body: String,
    },
    /// Delete a comment benchops wrote that repeats the marker of an
    /// earlier one (two racing sweeps both posted it).
    DeleteDuplicateComment {
        /// The issue.
        issue: u64,
        /// The comment to delete (never the earliest carrying its marker).
        comment_id: u64,
    },
    /// Set state closed (reason `duplicate`) and a body without the drift
    /// marker, in one request.
    CloseDuplicate {
        /// The duplicate.
        issue: u64,
        /// The issue that tracks the key.
        canonical: u64,
        /// The new body.
        body: String,
    },
}

/// Something a person may want to know; nothing is written for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The issue is accepted: these evidence records were not announced.
    Accepted {
        /// The key.
        key: DriftKey,
        /// The issue.
        issue: u64,
        /// Unannounced evidence, in record order.
        suppressed: Vec<Sha256Digest>,
    },
    /// A person closed the issue and the drift is not cleared; benchops
    /// comments on new evidence but leaves it closed.
    ClosedByHuman {
        /// The key.
        key: DriftKey,
        /// The issue.
        issue: u64,
    },
    /// A person reopened what benchops closed; benchops will not close it
    /// again for the same epoch.
    HeldOpenByHuman {
        /// The key.
        key: DriftKey,
        /// The issue.
        issue: u64,
    },
    /// No lane covers the case; the issue stays open.
    Uncovered {
        /// The key.
        key: DriftKey,
        /// The issue (`None`: opened by this plan).
        issue: Option<u64>,
    },
    /// More than one issue carries the key.
    Duplicates {
        /// The key.
        key: DriftKey,
        /// The issue that tracks it (the lowest number).
        canonical: u64,
        /// The others.
        others: Vec<u64>,
    },
    /// An issue names a key with no evidence in history; left alone.
    UnknownKey {
        /// The key.
        key: DriftKey,
        /// The issue.
        issue: u64,
    },
}

/// The result of [`reconcile`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Writes, in the order to apply them.
    pub actions: Vec<Action>,
    /// Information, in key order.
    pub notes: Vec<Note>,
}

/// How history files are linked from issue text.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// Prefix of links to history files, e.g.
    /// `https://github.com/o/r/blob/benchmark-history`. Empty: relative links.
    pub history_base_url: String,
    /// The path of a record in history.
    pub history_path: fn(&RecordRef) -> String,
}

impl RenderOptions {
    /// Options with [`default_history_path`].
    pub fn new(history_base_url: impl Into<String>) -> Self {
        Self {
            history_base_url: history_base_url.into(),
            history_path: default_history_path,
        }
    }

    fn link(&self, r: &RecordRef) -> String {
        let path = (self.history_path)(r);
        let base = self.history_base_url.trim_end_matches('/');
        if base.is_empty() {
            path
        } else {
            format!("{base}/{path}")
        }
    }
}

/// `results/<lane>/<yyyy>/<mm>/<YYYYMMDDTHHMMSSZ>--<hex>.json`: the layout
/// the history store writes (the slot without separators or fraction, so
/// paths hold no colons).
pub fn default_history_path(r: &RecordRef) -> String {
    let yyyy = r.slot.get(..4).unwrap_or("0000");
    let mm = r.slot.get(5..7).unwrap_or("00");
    format!(
        "results/{}/{yyyy}/{mm}/{}--{}.json",
        r.lane,
        compact_slot(&r.slot),
        r.digest.hex()
    )
}

/// An RFC 3339 UTC slot (`2026-11-30T01:00:00.5Z`) in path form
/// (`20261130T010000Z`).
pub fn compact_slot(slot: &str) -> String {
    let whole = slot.split('.').next().unwrap_or(slot).trim_end_matches('Z');
    let mut out: String = whole.chars().filter(|c| *c != '-' && *c != ':').collect();
    out.push('Z');
    out
}

// ---------------------------------------------------------------------------
// Reconcile
// ---------------------------------------------------------------------------

/// How an existing canonical issue stands.
enum Ownership {
    /// Open and benchops may manage it.
    Open,
    /// Closed by benchops at an epoch.
    Closed(Sha256Digest),
    /// Closed by a person.
    HumanClosed,
    /// Reopened by a person after benchops closed it for this same epoch.
    HeldOpen,
}

/// Computes the writes that bring `issues` in line with `history` under
/// `manifest`. See the module documentation for the state machine.
pub fn reconcile(
    manifest: &Manifest,
    history: &[HistoryRecord<'_>],
    issues: &[ActualIssue],
    options: &RenderOptions,
) -> Plan {
    let statuses: BTreeMap<DriftKey, DriftStatus> = drift_statuses(manifest, history)
        .into_iter()
        .map(|s| (s.key.clone(), s))
        .collect();
    let mut groups: BTreeMap<&DriftKey, Vec<&ActualIssue>> = BTreeMap::new();
    for issue in issues {
        if let Some(key) = &issue.key {
            groups.entry(key).or_default().push(issue);
        }
    }
    for g in groups.values_mut() {
        g.sort_by_key(|i| i.number);
        g.dedup_by_key(|i| i.number);
    }
    let keys: BTreeSet<&DriftKey> = statuses.keys().chain(groups.keys().copied()).collect();

    let mut plan = Plan::default();
    let mut cx = Cx {
        labels: &manifest.labels,
        options,
        plan: &mut plan,
    };
    for key in keys {
        let group = groups.get(key).map(Vec::as_slice).unwrap_or_default();
        let Some(status) = statuses.get(key) else {
            for issue in group {
                cx.plan.notes.push(Note::UnknownKey {
                    key: key.clone(),
                    issue: issue.number,
                });
            }
            continue;
        };
        match group.split_first() {
            None => cx.no_issue(status),
            Some((canonical, others)) => {
                cx.existing(status, canonical);
                cx.duplicate_comments(canonical);
                cx.duplicates(key, canonical.number, others);
            }
        }
    }
    plan
}

struct Cx<'a> {
    labels: &'a Labels,
    options: &'a RenderOptions,
    plan: &'a mut Plan,
}

impl Cx<'_> {
    fn act(&mut self, a: Action) {
        self.plan.actions.push(a);
    }

    fn note(&mut self, n: Note) {
        self.plan.notes.push(n);
    }

    fn lane_label(&self, lane: &LaneName) -> String {
        format!("{}{lane}", self.labels.lane_prefix)
    }

    fn body(&self, s: &DriftStatus, state: IssueState, carried: &BTreeSet<Sha256Digest>) -> String {
        render_issue_body(s, state, carried, self.labels, self.options)
    }

    fn no_issue(&mut self, s: &DriftStatus) {
        if matches!(s.standing, Standing::Cleared { .. }) {
            return;
        }
        let carried: BTreeSet<Sha256Digest> = s.evidence.iter().map(|e| e.record.digest).collect();
        let mut labels: BTreeSet<String> = s
            .evidence
            .iter()
            .map(|e| self.lane_label(&e.record.lane))
            .collect();
        labels.insert(self.labels.drift.clone());
        let body = self.body(s, IssueState::Open, &carried);
        self.act(Action::Open {
            key: s.key.clone(),
            title: render_title(&s.key),
            body,
            labels: labels.into_iter().collect(),
        });
        if s.standing == Standing::Uncovered {
            self.note(Note::Uncovered {
                key: s.key.clone(),
                issue: None,
            });
        }
    }

    fn existing(&mut self, s: &DriftStatus, issue: &ActualIssue) {
        let fresh: Vec<&EvidenceEntry> = s
            .evidence
            .iter()
            .filter(|e| !issue.announced(&e.record.digest))
            .collect();
        if issue.has_label(&self.labels.accepted) {
            if !fresh.is_empty() {
                self.note(Note::Accepted {
                    key: s.key.clone(),
                    issue: issue.number,
                    suppressed: fresh.iter().map(|e| e.record.digest).collect(),
                });
            }
            return;
        }
        let cleared = matches!(s.standing, Standing::Cleared { .. });
        let ownership = match (issue.state, issue.state_marker) {
            (IssueState::Open, Some(m)) if m.state == IssueState::Closed && m.epoch == s.epoch => {
                Ownership::HeldOpen
            }
            (IssueState::Open, _) => Ownership::Open,
            (IssueState::Closed, Some(m)) if m.state == IssueState::Closed => {
                Ownership::Closed(m.epoch)
            }
            (IssueState::Closed, _) => Ownership::HumanClosed,
        };
        let n = issue.number;
        match ownership {
            Ownership::HumanClosed => {
                self.comments(s, n, &fresh, true);
                if !cleared {
                    self.note(Note::ClosedByHuman {
                        key: s.key.clone(),
                        issue: n,
                    });
                }
            }
            Ownership::HeldOpen => {
                self.add_labels(issue, &fresh);
                self.comments(s, n, &fresh, false);
                if cleared {
                    self.note(Note::HeldOpenByHuman {
                        key: s.key.clone(),
                        issue: n,
                    });
                }
            }
            Ownership::Open => {
                self.add_labels(issue, &fresh);
                self.comments(s, n, &fresh, false);
                if let Standing::Cleared { clearing } = &s.standing {
                    let body = self.body(s, IssueState::Closed, &issue.body_evidence);
                    self.act(Action::Close {
                        issue: n,
                        clearing: clearing.clone(),
                        body,
                    });
                    self.closing_comment(s, issue);
                } else {
                    let body = self.body(s, IssueState::Open, &issue.body_evidence);
                    if !same_text(&body, &issue.body) {
                        self.act(Action::UpdateBody { issue: n, body });
                    }
                    self.uncovered_note(s, n);
                }
            }
            Ownership::Closed(epoch) if epoch != s.epoch && !cleared => {
                let body = self.body(s, IssueState::Open, &issue.body_evidence);
                self.act(Action::Reopen { issue: n, body });
                self.add_labels(issue, &fresh);
                self.comments(s, n, &fresh, false);
                self.uncovered_note(s, n);
            }
            Ownership::Closed(epoch) => {
                self.add_labels(issue, &fresh);
                self.comments(s, n, &fresh, false);
                if epoch != s.epoch {
                    let body = self.body(s, IssueState::Closed, &issue.body_evidence);
                    self.act(Action::UpdateBody { issue: n, body });
                }
                if cleared {
                    self.closing_comment(s, issue);
                }
            }
        }
    }

    fn uncovered_note(&mut self, s: &DriftStatus, issue: u64) {
        if s.standing == Standing::Uncovered {
            self.note(Note::Uncovered {
                key: s.key.clone(),
                issue: Some(issue),
            });
        }
    }

    fn add_labels(&mut self, issue: &ActualIssue, fresh: &[&EvidenceEntry]) {
        if fresh.is_empty() {
            return;
        }
        let mut want: BTreeSet<String> = fresh
            .iter()
            .map(|e| self.lane_label(&e.record.lane))
            .collect();
        want.insert(self.labels.drift.clone());
        let missing: Vec<String> = want.into_iter().filter(|l| !issue.has_label(l)).collect();
        if !missing.is_empty() {
            self.act(Action::AddLabels {
                issue: issue.number,
                labels: missing,
            });
        }
    }

    fn comments(
        &mut self,
        s: &DriftStatus,
        issue: u64,
        fresh: &[&EvidenceEntry],
        human_closed: bool,
    ) {
        for e in fresh {
            let body = render_evidence_comment(s, e, human_closed, self.labels, self.options);
            self.act(Action::Comment {
                issue,
                marker: CommentMarker::Evidence {
                    record: e.record.digest,
                },
                body,
            });
        }
    }

    fn closing_comment(&mut self, s: &DriftStatus, issue: &ActualIssue) {
        let Standing::Cleared { clearing } = &s.standing else {
            return;
        };
        if issue.closing_comments.contains(&s.epoch) {
            return;
        }
        let body = render_closing_comment(s, clearing, self.options);
        self.act(Action::Comment {
            issue: issue.number,
            marker: CommentMarker::Closed { epoch: s.epoch },
            body,
        });
    }

    /// Deletes repeated benchops comments on the canonical issue (not on an
    /// accepted one: benchops writes nothing there).
    fn duplicate_comments(&mut self, issue: &ActualIssue) {
        if issue.has_label(&self.labels.accepted) {
            return;
        }
        for comment_id in issue.duplicate_comments() {
            self.act(Action::DeleteDuplicateComment {
                issue: issue.number,
                comment_id,
            });
        }
    }

    fn duplicates(&mut self, key: &DriftKey, canonical: u64, others: &[&ActualIssue]) {
        if others.is_empty() {
            return;
        }
        for d in others {
            if d.state == IssueState::Open && !d.has_label(&self.labels.accepted) {
                self.act(Action::CloseDuplicate {
                    issue: d.number,
                    canonical,
                    body: render_duplicate_body(key, canonical),
                });
            }
        }
        self.note(Note::Duplicates {
            key: key.clone(),
            canonical,
            others: others.iter().map(|d| d.number).collect(),
        });
    }
}

/// Bodies compare without regard to line endings or trailing whitespace
/// (web editors write `\r\n`).
fn same_text(a: &str, b: &str) -> bool {
    a.replace("\r\n", "\n").trim_end() == b.replace("\r\n", "\n").trim_end()
}

// ---------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------

/// Inline code that survives backticks in the text.
fn code(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ");
    if s.contains('`') {
        format!("`` {s} ``")
    } else {
        format!("`{s}`")
    }
}

/// Text safe inside a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace(['\n', '\r'], " ").replace('|', "\\|")
}

/// Text safe inside a Mermaid quoted string.
fn mermaid_str(s: &str) -> String {
    s.replace(['\n', '\r'], " ").replace('"', "'")
}

/// A number as Mermaid's `xychart` grammar reads it: plain decimal, never
/// exponent notation (`Finite`'s display writes `4.2e-7`; Rust's `f64`
/// display writes `0.00000042`, shortest round-trip digits).
fn mermaid_num(v: Finite) -> String {
    v.get().to_string()
}

fn short(d: &Sha256Digest) -> String {
    d.hex().chars().take(12).collect()
}

fn record_link(r: &RecordRef, o: &RenderOptions) -> String {
    format!("[`{}`]({})", short(&r.digest), o.link(r))
}

fn with_unit(v: Finite, unit: Option<&str>) -> String {
    match unit {
        Some(u) if !u.is_empty() => format!("{v} {u}"),
        _ => v.to_string(),
    }
}

fn lane_list(lanes: &[LaneName]) -> String {
    lanes
        .iter()
        .map(|l| code(l.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The issue title.
pub fn render_title(key: &DriftKey) -> String {
    format!(
        "Benchmark drift: {} {}",
        key.case,
        key.metric.replace(['\n', '\r'], " ")
    )
}

fn status_cell(s: &CaseStatus) -> String {
    match s {
        CaseStatus::Reproduces => "yes".into(),
        CaseStatus::DoesNotReproduce => "no".into(),
        CaseStatus::DriftOnOtherMetric(m) => format!("drift on {}", cell(&code(m))),
        CaseStatus::NotMeasured(Outcome::Skipped) => "not measured (skipped)".into(),
        CaseStatus::NotMeasured(Outcome::Error) => "not measured (error)".into(),
        CaseStatus::NotMeasured(_) => "not measured".into(),
        CaseStatus::NotInRecord => "not in record".into(),
    }
}

/// The issue body for `status` in `state`. `carried` are the evidence
/// markers to keep (all evidence when opening; the existing body's markers
/// afterwards). A pure function of its inputs, so snapshots can pin it.
pub fn render_issue_body(
    status: &DriftStatus,
    state: IssueState,
    carried: &BTreeSet<Sha256Digest>,
    labels: &Labels,
    options: &RenderOptions,
) -> String {
    let key = &status.key;
    let mut b = String::new();
    let _ = writeln!(b, "{}", drift_marker(key));
    let _ = writeln!(
        b,
        "{}",
        state_marker(&StateMarker {
            state,
            epoch: status.epoch
        })
    );
    let _ = writeln!(
        b,
        "## Benchmark drift: {} · {}\n",
        code(key.case.as_str()),
        code(&key.metric)
    );

    // Summary.
    let latest = status.evidence.last();
    if let Some(e) = latest {
        let _ = writeln!(
            b,
            "A confirmed drift of {} on case {} was reported by {} sealed record(s). \
             Latest evidence: lane {}, slot {}, record {}: {}\n",
            code(&key.metric),
            code(key.case.as_str()),
            status.evidence.len(),
            code(e.record.lane.as_str()),
            e.record.slot,
            record_link(&e.record, options),
            e.summary.replace(['\n', '\r'], " "),
        );
    }
    let verdict = match (&status.standing, state) {
        (Standing::Cleared { .. }, IssueState::Closed) => {
            "**Closed.** Every lane that currently covers this case has a sealed record after the \
             latest evidence in which the case does not reproduce."
                .to_owned()
        }
        (Standing::Cleared { .. }, IssueState::Open) => {
            "**Open.** Every lane that covers this case has cleared it; benchops closes the issue \
             on its next sweep."
                .to_owned()
        }
        (Standing::Reproducing { holding }, IssueState::Open) => format!(
            "**Open.** Held open by {}: no sealed record of that lane after the latest evidence \
             shows the case without the drift. The issue closes when every lane that covers the \
             case has one.",
            lane_list(holding)
        ),
        (Standing::Reproducing { holding }, IssueState::Closed) => format!(
            "**Closed.** Lanes without a clearing record since the latest evidence: {}.",
            lane_list(holding)
        ),
        (Standing::Uncovered, IssueState::Open) => format!(
            "**Open.** No lane in the schedule manifest covers {} any more, so no lane can clear \
             it. benchops does not close an issue on absence of evidence: close it by hand, add \
             the {} label, or cover the case again.",
            code(key.case.as_str()),
            code(&labels.accepted)
        ),
        (Standing::Uncovered, IssueState::Closed) => {
            "**Closed.** No lane in the schedule manifest covers this case any more.".to_owned()
        }
    };
    let _ = writeln!(b, "{verdict}\n");

    // Lanes.
    let _ = writeln!(b, "### Lanes\n");
    let _ = writeln!(
        b,
        "| lane | covers | latest record | reproduces? | cleared by (after latest evidence) |"
    );
    let _ = writeln!(b, "|---|---|---|---|---|");
    for l in &status.lanes {
        let name = if l.in_manifest {
            code(l.lane.as_str())
        } else {
            format!("{} (not in manifest)", code(l.lane.as_str()))
        };
        let covers = if l.covers { "yes" } else { "no" };
        let (latest, repro) = match (&l.latest, l.covers) {
            (_, false) => ("—".to_owned(), "—".to_owned()),
            (None, true) => ("no record yet".to_owned(), "—".to_owned()),
            (Some((r, st)), true) => (
                format!("{} {}", r.slot, record_link(r, options)),
                status_cell(st),
            ),
        };
        let cleared = match (&l.clearing, l.covers) {
            (_, false) => "—".to_owned(),
            (None, true) => "not yet".to_owned(),
            (Some(r), true) => format!("{} {}", r.slot, record_link(r, options)),
        };
        let _ = writeln!(b, "| {name} | {covers} | {latest} | {repro} | {cleared} |");
    }
    let _ = writeln!(b);

    // Evidence.
    let _ = writeln!(b, "### Evidence\n");
    let skip = status.evidence.len().saturating_sub(EVIDENCE_ROWS);
    if skip > 0 {
        let _ = writeln!(
            b,
            "The {EVIDENCE_ROWS} newest of {} records; {skip} earlier not shown.\n",
            status.evidence.len()
        );
    }
    let _ = writeln!(
        b,
        "| slot | lane | record | median | baseline median | summary |"
    );
    let _ = writeln!(b, "|---|---|---|---|---|---|");
    for e in status.evidence.iter().skip(skip) {
        let unit = e.unit.as_deref();
        let median = e
            .median
            .map_or_else(|| "not measured".to_owned(), |v| with_unit(v, unit));
        let base = e
            .baseline_median
            .map_or_else(|| "—".to_owned(), |v| with_unit(v, unit));
        let _ = writeln!(
            b,
            "| {} | {} | {} | {} | {} | {} |",
            e.record.slot,
            code(e.record.lane.as_str()),
            record_link(&e.record, options),
            cell(&median),
            cell(&base),
            cell(&e.summary)
        );
    }
    let _ = writeln!(b);

    // Trend.
    let _ = writeln!(b, "### Trend\n");
    b.push_str(&render_trend_chart(status));

    for d in carried {
        let _ = writeln!(b, "\n{}", evidence_marker(d));
    }
    b
}

/// The Mermaid `xychart-beta` block of the metric's median over the evidence
/// records (the newest 30), with the baseline median as a
/// second line when every point has one.
pub fn render_trend_chart(status: &DriftStatus) -> String {
    let points: Vec<&EvidenceEntry> = status
        .evidence
        .iter()
        .filter(|e| e.median.is_some())
        .collect();
    let points = &points[points.len().saturating_sub(CHART_POINTS)..];
    if points.is_empty() {
        return "No evidence record has a median for this metric, so there is no chart.\n".into();
    }
    let metric = mermaid_str(&status.key.metric);
    let unit = points
        .iter()
        .find_map(|e| e.unit.clone())
        .unwrap_or_default();
    let x: Vec<String> = points
        .iter()
        .map(|e| {
            let slot = e
                .record
                .slot
                .get(5..16)
                .unwrap_or(&e.record.slot)
                .replace('T', " ");
            format!("\"{} {}\"", mermaid_str(&slot), e.record.lane)
        })
        .collect();
    let ys = |f: &dyn Fn(&EvidenceEntry) -> Option<Finite>| -> Option<String> {
        let v: Option<Vec<String>> = points.iter().map(|e| f(e).map(mermaid_num)).collect();
        v.map(|v| v.join(", "))
    };
    let mut c = String::new();
    let baseline = ys(&|e| e.baseline_median);
    let legend = if baseline.is_some() {
        "First line: median of each evidence record; second line: the baseline median it was compared with."
    } else {
        "Median of each evidence record."
    };
    let _ = writeln!(c, "{legend}\n");
    let _ = writeln!(c, "```mermaid\nxychart-beta");
    let _ = writeln!(c, "    title \"{metric} median per evidence record\"");
    let _ = writeln!(c, "    x-axis [{}]", x.join(", "));
    if unit.is_empty() {
        let _ = writeln!(c, "    y-axis \"{metric}\"");
    } else {
        let _ = writeln!(c, "    y-axis \"{metric} ({})\"", mermaid_str(&unit));
    }
    if let Some(m) = ys(&|e| e.median) {
        let _ = writeln!(c, "    line [{m}]");
    }
    if let Some(bl) = baseline {
        let _ = writeln!(c, "    line [{bl}]");
    }
    let _ = writeln!(c, "```");
    c
}

/// The comment announcing one evidence record. `closed_by_human` selects the
/// text for an issue a person closed (benchops leaves it closed).
pub fn render_evidence_comment(
    status: &DriftStatus,
    evidence: &EvidenceEntry,
    closed_by_human: bool,
    labels: &Labels,
    options: &RenderOptions,
) -> String {
    let r = &evidence.record;
    let mut c = String::new();
    let _ = writeln!(c, "{}", evidence_marker(&r.digest));
    let what = if closed_by_human {
        "The drift reproduced again"
    } else {
        "The drift reproduced"
    };
    let _ = write!(
        c,
        "{what} in lane {}, slot {}, record {}: {}",
        code(r.lane.as_str()),
        r.slot,
        record_link(r, options),
        evidence.summary.replace(['\n', '\r'], " ")
    );
    let unit = evidence.unit.as_deref();
    match (evidence.median, evidence.baseline_median) {
        (Some(m), Some(bl)) => {
            let _ = write!(
                c,
                " (median {}, baseline {})",
                with_unit(m, unit),
                with_unit(bl, unit)
            );
        }
        (Some(m), None) => {
            let _ = write!(c, " (median {})", with_unit(m, unit));
        }
        _ => {}
    }
    let _ = writeln!(c, ".");
    if closed_by_human {
        let _ = writeln!(
            c,
            "\nThis issue was closed by a person, so benchops leaves it closed and will not reopen \
             it; it adds one comment like this per new evidence record of {}. Reopen the issue to \
             have benchops track the drift again, or add the {} label to silence it.",
            code(&status.key.to_string()),
            code(&labels.accepted)
        );
    }
    c
}

/// The closing comment: each covering lane's clearing record.
pub fn render_closing_comment(
    status: &DriftStatus,
    clearing: &[RecordRef],
    options: &RenderOptions,
) -> String {
    let mut c = String::new();
    let _ = writeln!(c, "{}", closed_marker(&status.epoch));
    let latest = status.evidence.last();
    let _ = writeln!(
        c,
        "Closing: every lane that currently covers {} has a sealed record after the latest \
         evidence{} in which the case does not reproduce.\n",
        code(status.key.case.as_str()),
        latest.map_or_else(String::new, |e| format!(
            " (lane {}, slot {}, record {})",
            code(e.record.lane.as_str()),
            e.record.slot,
            record_link(&e.record, options)
        )),
    );
    let _ = writeln!(c, "| lane | slot | clearing record |");
    let _ = writeln!(c, "|---|---|---|");
    for r in clearing {
        let _ = writeln!(
            c,
            "| {} | {} | {} `{}` |",
            code(r.lane.as_str()),
            r.slot,
            record_link(r, options),
            r.digest
        );
    }
    let _ = writeln!(
        c,
        "\nIf the drift is reported again, benchops reopens this issue."
    );
    c
}

/// The body of a duplicate benchops closes. It carries no drift marker, so
/// it no longer belongs to the key.
pub fn render_duplicate_body(key: &DriftKey, canonical: u64) -> String {
    format!(
        "<!-- benchops:duplicate-of issue={canonical} key={} -->\n\
         Duplicate of #{canonical}, which tracks the benchmark drift {}. Two publication sweeps \
         opened an issue for the same drift at the same time; benchops keeps the oldest.\n",
        key.marker_value(),
        code(&key.to_string())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(metric: &str) -> DriftKey {
        DriftKey::new(CaseId::new("parse/size=10").expect("case"), metric)
    }

    #[test]
    fn key_marker_round_trips_awkward_metrics() {
        for m in [
            "wall_s",
            "a/b",
            "p99 latency",
            "x-->y",
            "µs",
            "100%",
            "a=b c",
        ] {
            let k = key(m);
            let v = k.marker_value();
            assert!(!v.contains(' ') && !v.contains("-->"), "{v}");
            assert_eq!(DriftKey::parse_marker_value(&v), Ok(k.clone()), "{m}");
            let issue =
                ActualIssue::from_body(1, "t", drift_marker(&k), IssueState::Open, None, vec![]);
            assert_eq!(issue.key, Some(k));
        }
        assert_eq!(key("wall_s").marker_value(), "parse/size=10/wall_s");
    }

    #[test]
    fn key_marker_rejects_garbage() {
        assert!(matches!(
            DriftKey::parse_marker_value("nocase"),
            Err(KeyParseError::NoSeparator(_))
        ));
        assert!(matches!(
            DriftKey::parse_marker_value("a/"),
            Err(KeyParseError::EmptyMetric(_))
        ));
        assert!(matches!(
            DriftKey::parse_marker_value("a/%zz"),
            Err(KeyParseError::BadEscape(_))
        ));
        assert!(matches!(
            DriftKey::parse_marker_value("a/%2"),
            Err(KeyParseError::BadEscape(_))
        ));
        assert!(matches!(
            DriftKey::parse_marker_value("a/%FF"),
            Err(KeyParseError::NotUtf8(_))
        ));
        assert!(matches!(
            DriftKey::parse_marker_value("a b/m"),
            Err(KeyParseError::Case(_))
        ));
    }

    #[test]
    fn markers_parse_from_body_and_comments() {
        let d1 = Sha256Digest::of(b"1");
        let d2 = Sha256Digest::of(b"2");
        let body = format!(
            "{}\n{}\ntext\n{}",
            drift_marker(&key("wall_s")),
            state_marker(&StateMarker {
                state: IssueState::Closed,
                epoch: d2
            }),
            evidence_marker(&d1)
        );
        let issue = ActualIssue::from_body(7, "t", body, IssueState::Closed, None, vec![])
            .with_comments([
                (1, format!("{}\nhello", evidence_marker(&d2))),
                (2, closed_marker(&d2)),
                (
                    3,
                    "<!-- benchops:evidence record=sha256:nothex -->".to_owned(),
                ),
            ]);
        assert_eq!(issue.key, Some(key("wall_s")));
        assert_eq!(
            issue.state_marker,
            Some(StateMarker {
                state: IssueState::Closed,
                epoch: d2
            })
        );
        assert_eq!(issue.closed_by(), Some(Closer::Benchops));
        assert!(issue.announced(&d1) && issue.announced(&d2));
        assert_eq!(issue.closing_comments, BTreeSet::from([d2]));

        let plain = ActualIssue::from_body(
            8,
            "t",
            drift_marker(&key("m")),
            IssueState::Closed,
            None,
            vec![],
        );
        assert_eq!(plain.closed_by(), Some(Closer::Human));
    }

    #[test]
    fn duplicate_comments_keep_the_earliest_of_each_marker() {
        let d1 = Sha256Digest::of(b"1");
        let d2 = Sha256Digest::of(b"2");
        let issue = ActualIssue::from_body(
            7,
            "t",
            drift_marker(&key("wall_s")),
            IssueState::Open,
            None,
            vec![],
        )
        .with_comments([
            (30, evidence_marker(&d1)),
            (10, evidence_marker(&d1)),
            (20, "no marker".to_owned()),
            (
                40,
                format!("{}{}", evidence_marker(&d1), closed_marker(&d2)),
            ),
            (50, closed_marker(&d2)),
            (60, evidence_marker(&d2)),
        ]);
        // 30 repeats 10; 40 carries a closed marker nothing earlier does, so
        // it stays; 50 repeats 40's closed marker.
        assert_eq!(issue.duplicate_comments(), vec![30, 50]);
    }

    #[test]
    fn time_keys_order_instants_not_text() {
        // As text, "01:00:00.5Z" sorts before "01:00:00Z".
        assert!(time_key("2026-11-30T01:00:00Z") < time_key("2026-11-30T01:00:00.5Z"));
        assert!(time_key("2026-11-30T23:59:59Z") < time_key("2026-12-01T00:00:00Z"));
    }

    #[test]
    fn default_history_path_is_partitioned_by_lane_and_month() {
        let r = RecordRef {
            lane: LaneName::new("comprehensive").expect("lane"),
            slot: "2026-11-30T01:00:00Z".into(),
            finished_at: "2026-11-30T03:00:00Z".into(),
            digest: Sha256Digest::of(b"x"),
        };
        assert_eq!(
            default_history_path(&r),
            format!(
                "results/comprehensive/2026/11/20261130T010000Z--{}.json",
                r.digest.hex()
            )
        );
        let o = RenderOptions::new("https://example.test/blob/benchmark-history/");
        assert!(
            o.link(&r)
                .starts_with("https://example.test/blob/benchmark-history/results/")
        );
    }
}
