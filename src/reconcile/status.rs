//! The desired state of every drift key, derived from sealed history and
//! the lanes that currently cover its case: [`drift_statuses`],
//! [`case_status`] and the [`Standing`] verdict.

use std::collections::{BTreeMap, BTreeSet};

use crate::digest::Sha256Digest;
use crate::manifest::Manifest;
use crate::names::LaneName;
use crate::num::Finite;
use crate::record::{BisectionRecord, Outcome, ResultRecord, SameSession, Subject};
use crate::time::{Utc, order_key};

use super::{DriftKey, HistoryRecord, RecordRef};

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
    /// A v2 record whose comparison of this key neither reproduced nor
    /// cleared it (inconclusive, not confirmed, or not compared); the
    /// string is the verdict's name.
    Inconclusive(String),
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
    /// The record's subject: its repository and commit.
    pub subject: Subject,
    /// v3: side A and side B measured in the record's run, when they
    /// decided this key.
    pub same_session: Option<SameSession>,
    /// v3: the culprit bisection the record's run made of this key, when
    /// it made one.
    pub bisection: Option<BisectionRecord>,
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
    /// Where the key's medians changed in the latest evidence's lane, when
    /// the series shows a change point (advisory: it decides nothing).
    pub change: Option<super::ChangeAnnotation>,
}

/// A timestamp's place in record order: its instant (see
/// [`order_key`]); two spellings of one instant tie.
fn time_key(s: &str) -> (Option<Utc>, &str) {
    order_key(s)
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
    if let Some(cmp) = &record.comparison {
        // v2: only the key's own confirmed verdict clears it.
        return match cmp
            .keys
            .iter()
            .find(|k| k.case == key.case && k.metric == key.metric)
        {
            Some(k) if k.verdict.clears() => CaseStatus::DoesNotReproduce,
            Some(k) => CaseStatus::Inconclusive(
                serde_json::to_value(k.verdict)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            ),
            None => match record.cases.iter().find(|c| c.id == key.case) {
                None => CaseStatus::NotInRecord,
                Some(c) if matches!(c.outcome, Outcome::Skipped | Outcome::Error) => {
                    CaseStatus::NotMeasured(c.outcome)
                }
                Some(_) => CaseStatus::Inconclusive("not compared".into()),
            },
        };
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
        let change = super::latest_change(&recs, &recs[epoch_idx].record.lane, &key, record_ref);
        out.push(DriftStatus {
            change,
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
    let comparison = h.record.comparison.as_ref();
    let compared = comparison.and_then(|c| {
        c.keys
            .iter()
            .find(|k| k.case == key.case && k.metric == key.metric)
    });
    EvidenceEntry {
        subject: h.record.subject.clone(),
        same_session: compared.and_then(|k| k.same_session.clone()),
        bisection: comparison
            .and_then(|c| c.bisection.as_ref())
            .filter(|b| b.case == key.case && b.metric == key.metric)
            .cloned(),
        record: record_ref(h),
        summary: summary.to_owned(),
        median: metric.and_then(|m| m.summary.as_ref()).map(|s| s.median),
        unit: metric.map(|m| m.unit.clone()),
        baseline_median: case
            .and_then(|c| c.drift.as_ref())
            .filter(|d| d.metric == key.metric)
            .map(|d| d.baseline.median)
            // v2: the key's comparison holds the baseline median.
            .or_else(|| compared.map(|k| k.baseline_median)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_keys_order_instants_not_text() {
        // As text, "01:00:00.5Z" sorts before "01:00:00Z".
        assert!(time_key("2026-11-30T01:00:00Z") < time_key("2026-11-30T01:00:00.5Z"));
        assert!(time_key("2026-11-30T23:59:59Z") < time_key("2026-12-01T00:00:00Z"));
        // One instant written two ways ties, so the digest decides.
        assert_eq!(
            time_key("2026-11-30T01:00:00Z"),
            time_key("2026-11-30T01:00:00.000Z")
        );
    }
}
