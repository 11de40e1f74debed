//! The index of history kept on the `benchmark-history` branch beside the
//! records, so that a sweep reads what its decisions need and not all of
//! history: per lane and month, each record's slot, `finished_at` and
//! digest; and every record that reported a drift, with its keys.
//!
//! # On the branch
//!
//! | path | content |
//! |---|---|
//! | `index/index.json` | the pointer: the commit the index was built on, the record count, and each part's sha256 and count |
//! | `index/evidence.jsonl` | one line per record with drift reports, in record order: lane, slot, `finished_at`, digest, keys |
//! | `index/lanes/<lane>/<yyyy>/<mm>.jsonl` | one line per record of the lane whose slot falls in that month (UTC), in record order |
//!
//! Every part is checked against the sha256 the pointer gives it, and its
//! lines against their place (lane, month, order, count) when read. The
//! pointer names the commit it was built on (`built_on`): the index is
//! fresh at a tip whose parent is that commit, because the sweep writes
//! the pointer in the commit that adds its records. Any other commit
//! (another tool, an older benchops) makes it stale. A missing, stale or
//! corrupt index is rebuilt from the records and never trusted over them.
//!
//! # What a sweep reads
//!
//! [`HistoryIndex::next_reads`] says which parts and records to read next,
//! until nothing is missing. What it asks for is a **sufficient subset**:
//! every rule that decides from history (the reconcile's plan, the
//! watchdog, health and the health issue) decides the same over it as over
//! all of history. It holds
//!
//! - every evidence record (a drift key's whole story is in its issue);
//! - each lane's newest `recent` records (the latest record, the trend's
//!   window [`crate::reconcile::TREND_RECORDS`], the duration points);
//! - each lane's records from the watchdog's `since` on, and its oldest
//!   record (where the watchdog starts expecting slots);
//! - for each drift key and each lane that covers its case, the lane's
//!   records after the key's epoch, newest first, down to the one that
//!   clears it: the key's open episode.
//!
//! The subset is a suffix of each lane's records plus evidence, so record
//! order, and every position compared with an epoch, is as in full history.
//! The differential test in `crates/publish/tests/it/history_index.rs`
//! holds this: random histories, every decision compared.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::digest::Sha256Digest;
use crate::manifest::Manifest;
use crate::names::LaneName;
use crate::reconcile::{CaseStatus, DriftKey, case_status};
use crate::record::ResultRecord;
use crate::seal::SealedRecord;
use crate::time::{Utc, order_key};

/// The pointer's path on the branch.
pub const POINTER_PATH: &str = "index/index.json";
/// The evidence part's path on the branch.
pub const EVIDENCE_PATH: &str = "index/evidence.jsonl";
/// The directory of the index.
pub const INDEX_DIR: &str = "index/";
/// The pointer's schema id.
pub const SCHEMA: &str = "history-index/v1";

/// The path of a lane's month part: `index/lanes/<lane>/<yyyy>/<mm>.jsonl`.
pub fn segment_path(lane: &LaneName, month: &str) -> String {
    format!("index/lanes/{lane}/{month}.jsonl")
}

/// The month (`yyyy/mm`, UTC) a slot belongs to; `None` when the slot does
/// not parse (a sealed record's slot always does).
pub fn month_of(slot: &str) -> Option<String> {
    Utc::parse(slot).ok().map(|t| t.year_month())
}

fn is_month(m: &str) -> bool {
    let b = m.as_bytes();
    b.len() == 7
        && b[4] == b'/'
        && b[..4].iter().chain(&b[5..]).all(u8::is_ascii_digit)
        && (1..=12).contains(&m[5..].parse::<u8>().unwrap_or(0))
}

/// One record of a lane's month part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexEntry {
    /// The record's digest.
    pub digest: Sha256Digest,
    /// Its `finished_at`.
    pub finished_at: String,
    /// Its slot.
    pub slot: String,
}

/// One record with drift reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriftEntry {
    /// The record's digest.
    pub digest: Sha256Digest,
    /// Its `finished_at`.
    pub finished_at: String,
    /// The keys its drift reports name, in report order.
    pub keys: Vec<DriftKey>,
    /// Its lane.
    pub lane: LaneName,
    /// Its slot.
    pub slot: String,
}

/// A part's count and sha256, as the pointer gives them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// Its lines.
    pub records: u64,
    /// The sha256 of its bytes.
    pub sha256: Sha256Digest,
}

/// A month part, as the pointer gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentInfo {
    /// The lane.
    pub lane: LaneName,
    /// The month, `yyyy/mm`.
    pub month: String,
    /// Its lines.
    pub records: u64,
    /// The sha256 of its bytes.
    pub sha256: Sha256Digest,
}

/// `index/index.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pointer {
    /// The commit the index was built on (`None`: the first commit).
    pub built_on: Option<String>,
    /// The evidence part.
    pub evidence: Part,
    /// Records in all.
    pub records: u64,
    /// [`SCHEMA`].
    pub schema: String,
    /// Every month part, by lane then month.
    pub segments: Vec<SegmentInfo>,
}

/// Why an index part cannot be used (the sweep then rebuilds the index).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct IndexError {
    /// The part.
    pub path: String,
    /// What is wrong with it.
    pub reason: String,
}

fn bad(path: &str, reason: impl Into<String>) -> IndexError {
    IndexError {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// A record's place in record order: slot, then `finished_at` (each as an
/// instant), then digest; the order the reconcile sorts history in.
pub type OrderKey<'a> = ((Option<Utc>, &'a str), (Option<Utc>, &'a str), Sha256Digest);

/// The [`OrderKey`] of a record's fields.
pub fn order_of<'a>(slot: &'a str, finished_at: &'a str, digest: Sha256Digest) -> OrderKey<'a> {
    (order_key(slot), order_key(finished_at), digest)
}

impl IndexEntry {
    fn order(&self) -> OrderKey<'_> {
        order_of(&self.slot, &self.finished_at, self.digest)
    }
}

impl DriftEntry {
    fn order(&self) -> OrderKey<'_> {
        order_of(&self.slot, &self.finished_at, self.digest)
    }
}

#[derive(Debug, Clone)]
struct Segment {
    info: Part,
    /// `None` until read.
    entries: Option<Vec<IndexEntry>>,
    dirty: bool,
}

/// The index in memory: the pointer's parts, the month parts read so far,
/// and the evidence.
#[derive(Debug, Clone, Default)]
pub struct HistoryIndex {
    built_on: Option<String>,
    lanes: BTreeMap<LaneName, BTreeMap<String, Segment>>,
    drift: Vec<DriftEntry>,
    drift_dirty: bool,
    /// The evidence part as the pointer gave it (or as last written).
    evidence: Option<Part>,
    records: u64,
}

/// What to read next: month parts, and records (lane, entry).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reads {
    /// Month parts: (lane, month).
    pub segments: Vec<(LaneName, String)>,
    /// Records, each with its lane.
    pub records: Vec<(LaneName, IndexEntry)>,
}

impl Reads {
    /// Nothing left to read.
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty() && self.records.is_empty()
    }
}

/// What a sweep's rules need of each lane besides evidence and episodes.
#[derive(Debug, Clone, Copy)]
pub struct Needs {
    /// Each lane's newest records: at least this many.
    pub recent: usize,
    /// Each lane's records with a slot at or after this instant.
    pub since: Option<Utc>,
    /// Whether the drift keys' evidence and open episodes are needed (the
    /// reconcile); health and the watchdog do without.
    pub drift: bool,
}

fn jsonl<T: Serialize>(items: &[T]) -> Vec<u8> {
    let mut out = Vec::new();
    for i in items {
        // The index types serialize infallibly (strings and digests).
        if let Ok(line) = serde_json::to_vec(i) {
            out.extend_from_slice(&line);
            out.push(b'\n');
        }
    }
    out
}

fn parse_jsonl<T: for<'de> Deserialize<'de>>(
    path: &str,
    bytes: &[u8],
) -> Result<Vec<T>, IndexError> {
    let text = std::str::from_utf8(bytes).map_err(|_| bad(path, "not UTF-8"))?;
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| bad(path, format!("line {}: {e}", i + 1)))
        })
        .collect()
}

fn check_sha(path: &str, part: &Part, bytes: &[u8]) -> Result<(), IndexError> {
    let got = Sha256Digest::of(bytes);
    if got != part.sha256 {
        return Err(bad(
            path,
            format!("its sha256 is {got}, the pointer says {}", part.sha256),
        ));
    }
    Ok(())
}

fn check_order<'a, T: 'a>(
    path: &str,
    items: &'a [T],
    key: impl Fn(&'a T) -> OrderKey<'a>,
) -> Result<(), IndexError> {
    for (i, w) in items.windows(2).enumerate() {
        if key(&w[0]) >= key(&w[1]) {
            return Err(bad(
                path,
                format!("line {} is not after line {}", i + 2, i + 1),
            ));
        }
    }
    Ok(())
}

impl HistoryIndex {
    /// An empty index (no history yet).
    pub fn empty() -> Self {
        Self::default()
    }

    /// The index of `records` (all of history), built from the records.
    pub fn build<'a>(records: impl IntoIterator<Item = &'a SealedRecord>) -> Self {
        let mut idx = Self::empty();
        idx.extend(records);
        idx
    }

    /// Reads the pointer; the parts are read later ([`load_evidence`],
    /// [`load_segment`]).
    ///
    /// [`load_evidence`]: Self::load_evidence
    /// [`load_segment`]: Self::load_segment
    pub fn from_pointer(bytes: &[u8]) -> Result<(Self, Part), IndexError> {
        let p: Pointer = serde_json::from_slice(bytes)
            .map_err(|e| bad(POINTER_PATH, format!("not an index pointer: {e}")))?;
        if p.schema != SCHEMA {
            return Err(bad(
                POINTER_PATH,
                format!("schema {:?}, not {SCHEMA}", p.schema),
            ));
        }
        let mut idx = Self {
            built_on: p.built_on,
            records: p.records,
            evidence: Some(p.evidence.clone()),
            ..Self::default()
        };
        let mut sum = 0u64;
        for s in p.segments {
            if !is_month(&s.month) {
                return Err(bad(POINTER_PATH, format!("{:?} is not a month", s.month)));
            }
            sum = sum.saturating_add(s.records);
            let seg = Segment {
                info: Part {
                    records: s.records,
                    sha256: s.sha256,
                },
                entries: None,
                dirty: false,
            };
            if idx
                .lanes
                .entry(s.lane)
                .or_default()
                .insert(s.month, seg)
                .is_some()
            {
                return Err(bad(POINTER_PATH, "a month part is listed twice"));
            }
        }
        if sum != p.records {
            return Err(bad(
                POINTER_PATH,
                format!("its parts hold {sum} records, it says {}", p.records),
            ));
        }
        Ok((idx, p.evidence))
    }

    /// Reads the evidence part, checked against the pointer's `part`.
    pub fn load_evidence(&mut self, part: &Part, bytes: &[u8]) -> Result<(), IndexError> {
        check_sha(EVIDENCE_PATH, part, bytes)?;
        let drift: Vec<DriftEntry> = parse_jsonl(EVIDENCE_PATH, bytes)?;
        if drift.len() as u64 != part.records {
            return Err(bad(EVIDENCE_PATH, "its line count is not the pointer's"));
        }
        check_order(EVIDENCE_PATH, &drift, DriftEntry::order)?;
        if drift.iter().any(|d| d.keys.is_empty()) {
            return Err(bad(EVIDENCE_PATH, "a line names no drift key"));
        }
        self.drift = drift;
        Ok(())
    }

    /// Reads a lane's month part, checked against the pointer.
    pub fn load_segment(
        &mut self,
        lane: &LaneName,
        month: &str,
        bytes: &[u8],
    ) -> Result<(), IndexError> {
        let path = segment_path(lane, month);
        let seg = self
            .lanes
            .get_mut(lane)
            .and_then(|m| m.get_mut(month))
            .ok_or_else(|| bad(&path, "the pointer lists no such part"))?;
        check_sha(&path, &seg.info, bytes)?;
        let entries: Vec<IndexEntry> = parse_jsonl(&path, bytes)?;
        if entries.len() as u64 != seg.info.records {
            return Err(bad(&path, "its line count is not the pointer's"));
        }
        if let Some(e) = entries
            .iter()
            .find(|e| month_of(&e.slot).as_deref() != Some(month))
        {
            return Err(bad(&path, format!("slot {} is not in {month}", e.slot)));
        }
        check_order(&path, &entries, IndexEntry::order)?;
        seg.entries = Some(entries);
        Ok(())
    }

    /// The commit this index was built on.
    pub fn built_on(&self) -> Option<&str> {
        self.built_on.as_deref()
    }

    /// Why the index is stale at a tip whose first parent is `parent`, or
    /// `None` when it is fresh there: the sweep writes the pointer in the
    /// commit that adds its records, so a fresh index was built on the
    /// tip's parent, and any other commit is one the sweep did not make.
    pub fn stale_at(&self, parent: Option<&str>) -> Option<String> {
        (self.built_on() != parent).then(|| {
            format!(
                "stale: built on {}, but the tip's parent is {} (a commit the sweep did not make)",
                self.built_on().unwrap_or("no commit"),
                parent.unwrap_or("no commit")
            )
        })
    }

    /// Records in history, as the index counts them.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The month parts not read yet among those `records` fall in (the
    /// ones [`add`](Self::add) needs).
    pub fn unread_for<'a>(
        &self,
        records: impl IntoIterator<Item = &'a SealedRecord>,
    ) -> Vec<(LaneName, String)> {
        let mut out = BTreeSet::new();
        for s in records {
            let r = s.record();
            if let Some(month) = month_of(&r.slot)
                && let Some(seg) = self.lanes.get(&r.lane).and_then(|m| m.get(&month))
                && seg.entries.is_none()
            {
                out.insert((r.lane.clone(), month));
            }
        }
        out.into_iter().collect()
    }

    /// Adds records new to history. Each one's month part must have been
    /// read ([`unread_for`](Self::unread_for)). A record already indexed is
    /// not added twice.
    pub fn add<'a>(&mut self, records: impl IntoIterator<Item = &'a SealedRecord>) {
        let mut touched = BTreeSet::new();
        for s in records {
            touched.extend(self.insert(s, true));
        }
        self.sort(&touched);
    }

    /// Adds records of history read back to rebuild the index, in chunks
    /// of any size: each is assumed not indexed yet (history holds each
    /// record once).
    pub fn extend<'a>(&mut self, records: impl IntoIterator<Item = &'a SealedRecord>) {
        let mut touched = BTreeSet::new();
        for s in records {
            touched.extend(self.insert(s, false));
        }
        self.sort(&touched);
    }

    fn insert(&mut self, s: &SealedRecord, check: bool) -> Option<(LaneName, String)> {
        let r = s.record();
        let month = month_of(&r.slot)?;
        let seg = self
            .lanes
            .entry(r.lane.clone())
            .or_default()
            .entry(month.clone())
            .or_insert_with(|| Segment {
                info: Part {
                    records: 0,
                    sha256: Sha256Digest::of(b""),
                },
                entries: Some(Vec::new()),
                dirty: true,
            });
        let entries = seg.entries.as_mut()?;
        let digest = s.digest();
        if check && entries.iter().any(|e| e.digest == digest) {
            return None;
        }
        entries.push(IndexEntry {
            digest,
            finished_at: r.finished_at.clone(),
            slot: r.slot.clone(),
        });
        seg.info.records += 1;
        seg.dirty = true;
        self.records += 1;
        let keys: Vec<DriftKey> = r
            .publication
            .drift_reports
            .iter()
            .map(|d| DriftKey::new(d.case.clone(), d.metric.clone()))
            .collect();
        if !keys.is_empty() {
            self.drift.push(DriftEntry {
                digest,
                finished_at: r.finished_at.clone(),
                keys,
                lane: r.lane.clone(),
                slot: r.slot.clone(),
            });
            self.drift_dirty = true;
        }
        Some((r.lane.clone(), month))
    }

    fn sort(&mut self, touched: &BTreeSet<(LaneName, String)>) {
        for (lane, month) in touched {
            if let Some(e) = self
                .lanes
                .get_mut(lane)
                .and_then(|m| m.get_mut(month))
                .and_then(|s| s.entries.as_mut())
            {
                e.sort_by(|a, b| a.order().cmp(&b.order()));
            }
        }
        if self.drift_dirty {
            self.drift.sort_by(|a, b| a.order().cmp(&b.order()));
        }
    }

    /// The files to write in a commit on `parent`: the pointer, and every
    /// part that changed (all of them for a rebuilt index).
    pub fn files(&mut self, parent: Option<&str>) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut segments = Vec::new();
        for (lane, months) in &mut self.lanes {
            for (month, seg) in months.iter_mut() {
                if seg.dirty
                    && let Some(entries) = &seg.entries
                {
                    let bytes = jsonl(entries);
                    seg.info = Part {
                        records: entries.len() as u64,
                        sha256: Sha256Digest::of(&bytes),
                    };
                    out.push((segment_path(lane, month), bytes));
                }
                segments.push(SegmentInfo {
                    lane: lane.clone(),
                    month: month.clone(),
                    records: seg.info.records,
                    sha256: seg.info.sha256,
                });
            }
        }
        let evidence_part = match (&self.evidence, self.drift_dirty) {
            (Some(part), false) => part.clone(),
            _ => {
                let evidence = jsonl(&self.drift);
                let part = Part {
                    records: self.drift.len() as u64,
                    sha256: Sha256Digest::of(&evidence),
                };
                out.push((EVIDENCE_PATH.to_owned(), evidence));
                part
            }
        };
        self.evidence = Some(evidence_part.clone());
        let pointer = Pointer {
            built_on: parent.map(str::to_owned),
            evidence: evidence_part,
            records: self.records,
            schema: SCHEMA.to_owned(),
            segments,
        };
        let mut bytes = serde_json::to_vec_pretty(&pointer).unwrap_or_default();
        bytes.push(b'\n');
        out.push((POINTER_PATH.to_owned(), bytes));
        out
    }

    /// Marks every part as written (after [`files`](Self::files) landed).
    pub fn written(&mut self, parent: Option<&str>) {
        self.built_on = parent.map(str::to_owned);
        for seg in self.lanes.values_mut().flat_map(BTreeMap::values_mut) {
            seg.dirty = false;
        }
        self.drift_dirty = false;
    }

    /// Every lane the index knows.
    pub fn lanes(&self) -> impl Iterator<Item = &LaneName> {
        self.lanes.keys()
    }

    /// Every record with drift reports, in record order.
    pub fn evidence(&self) -> &[DriftEntry] {
        &self.drift
    }

    /// The lane's newest records from the month parts read so far, newest
    /// first, as long as they are contiguous from the newest month; and
    /// the next older month not read, if any.
    fn suffix(&self, lane: &LaneName) -> (Vec<&IndexEntry>, Option<&String>) {
        let mut out = Vec::new();
        let Some(months) = self.lanes.get(lane) else {
            return (out, None);
        };
        for (month, seg) in months.iter().rev() {
            match &seg.entries {
                Some(e) => out.extend(e.iter().rev()),
                None => return (out, Some(month)),
            }
        }
        (out, None)
    }

    /// What to read next so that the records read form the sufficient
    /// subset (see the module documentation). `loaded` answers with a
    /// record already read. Empty: the subset is complete.
    pub fn next_reads<'r>(
        &self,
        manifest: &Manifest,
        loaded: &dyn Fn(&Sha256Digest) -> Option<&'r ResultRecord>,
        needs: &Needs,
    ) -> Reads {
        let mut segments: BTreeSet<(LaneName, String)> = BTreeSet::new();
        let mut records: BTreeMap<Sha256Digest, (LaneName, IndexEntry)> = BTreeMap::new();
        let mut want = |lane: &LaneName, e: &IndexEntry| {
            if loaded(&e.digest).is_none() {
                records
                    .entry(e.digest)
                    .or_insert_with(|| (lane.clone(), e.clone()));
            }
        };
        for d in self.drift.iter().filter(|_| needs.drift) {
            want(
                &d.lane,
                &IndexEntry {
                    digest: d.digest,
                    finished_at: d.finished_at.clone(),
                    slot: d.slot.clone(),
                },
            );
        }
        for (lane, months) in &self.lanes {
            let (suffix, older) = self.suffix(lane);
            for e in suffix.iter().take(needs.recent) {
                want(lane, e);
            }
            let mut more = suffix.len() < needs.recent;
            if let Some(since) = needs.since {
                let mut reached = false;
                for e in &suffix {
                    if order_key(&e.slot).0.is_some_and(|t| t < since) {
                        reached = true;
                        break;
                    }
                    want(lane, e);
                }
                more |= !reached;
            }
            if more && let Some(m) = older {
                segments.insert((lane.clone(), m.clone()));
            }
            // The lane's oldest record.
            if let Some((month, seg)) = months.iter().next() {
                match seg.entries.as_ref().and_then(|e| e.first()) {
                    Some(e) => want(lane, e),
                    None if seg.entries.is_none() => {
                        segments.insert((lane.clone(), month.clone()));
                    }
                    None => {}
                }
            }
        }
        // Each key's open episode in each lane covering its case.
        let mut epochs: BTreeMap<&DriftKey, &DriftEntry> = BTreeMap::new();
        for d in self.drift.iter().filter(|_| needs.drift) {
            for k in &d.keys {
                epochs.insert(k, d);
            }
        }
        for (key, epoch) in epochs {
            let epoch = epoch.order();
            for lane in manifest
                .lanes
                .iter()
                .filter(|l| l.covers(key.case.as_str()))
            {
                let (suffix, older) = self.suffix(&lane.name);
                let mut unread = 0usize;
                let budget = needs.recent.max(1);
                let mut resolved = false;
                for e in &suffix {
                    if e.order() <= epoch {
                        resolved = true;
                        break;
                    }
                    match loaded(&e.digest) {
                        Some(r) if case_status(r, key) == CaseStatus::DoesNotReproduce => {
                            resolved = true;
                            break;
                        }
                        Some(_) => {}
                        None => {
                            want(&lane.name, e);
                            unread += 1;
                            if unread >= budget {
                                resolved = true;
                                break;
                            }
                        }
                    }
                }
                if !resolved && let Some(m) = older {
                    segments.insert((lane.name.clone(), m.clone()));
                }
            }
        }
        Reads {
            segments: segments.into_iter().collect(),
            records: records.into_values().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(slot: &str, n: u8) -> IndexEntry {
        IndexEntry {
            digest: Sha256Digest::from_bytes([n; 32]),
            finished_at: slot.to_owned(),
            slot: slot.to_owned(),
        }
    }

    #[test]
    fn a_pointer_round_trips_and_its_parts_are_checked() {
        let lane = LaneName::new("nightly").expect("lane");
        let mut idx = HistoryIndex::empty();
        let seg = vec![
            entry("2026-11-01T00:00:00Z", 1),
            entry("2026-11-02T00:00:00Z", 2),
        ];
        idx.lanes.entry(lane.clone()).or_default().insert(
            "2026/11".into(),
            Segment {
                info: Part {
                    records: 0,
                    sha256: Sha256Digest::of(b""),
                },
                entries: Some(seg),
                dirty: true,
            },
        );
        idx.records = 2;
        let files = idx.files(Some("abc"));
        let pointer = &files
            .iter()
            .find(|(p, _)| p == POINTER_PATH)
            .expect("pointer")
            .1;
        let part = &files
            .iter()
            .find(|(p, _)| p == "index/lanes/nightly/2026/11.jsonl")
            .expect("segment")
            .1;
        let (mut back, _) = HistoryIndex::from_pointer(pointer).expect("pointer reads");
        assert_eq!(back.built_on(), Some("abc"));
        assert_eq!(back.records(), 2);
        back.load_segment(&lane, "2026/11", part)
            .expect("segment reads");
        // A changed byte, a line out of order, a slot of another month.
        let mut changed = part.clone();
        changed[20] ^= 1;
        let err = back
            .load_segment(&lane, "2026/11", &changed)
            .expect_err("sha");
        assert!(err.reason.contains("sha256"), "{err}");
        let (mut back, _) = HistoryIndex::from_pointer(pointer).expect("pointer reads");
        assert!(back.load_segment(&lane, "2026/12", part).is_err());
        assert!(HistoryIndex::from_pointer(b"{}").is_err());
    }
}
