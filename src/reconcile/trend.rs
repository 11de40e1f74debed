//! The change-point view of a drift key over history: e-divisive means
//! ([`crate::changepoint`]) over one lane's series of the key's medians,
//! annotating where a change began (the slots and commits on either side).
//! Pure and advisory: it is shown in issue bodies and health, and it never
//! opens or closes anything by itself.

use crate::changepoint::{self, Config};
use crate::names::LaneName;

use super::{DriftKey, HistoryRecord, RecordRef};

/// Where the series of a key's medians in one lane changed.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeAnnotation {
    /// The lane whose series changed.
    pub lane: LaneName,
    /// The last record before the change, and its subject commit.
    pub before: (RecordRef, String),
    /// The first record after the change, and its subject commit.
    pub after: (RecordRef, String),
    /// Mean of the medians before the change.
    pub mean_before: f64,
    /// Mean of the medians from the change on (to the next change).
    pub mean_after: f64,
    /// The t-test's two-sided p-value.
    pub p: f64,
    /// Points in the series.
    pub points: usize,
}

impl ChangeAnnotation {
    /// The relative change of the mean (0.3 is 30% more).
    pub fn relative(&self) -> Option<f64> {
        (self.mean_before != 0.0)
            .then(|| (self.mean_after - self.mean_before) / self.mean_before.abs())
    }
}

/// How many of a lane's newest records the change-point view looks at:
/// the series is bounded, so its cost and the history a sweep must read
/// follow the lane's recent activity, not the history's age.
pub const TREND_RECORDS: usize = 200;

/// The latest change point of `key` in `lane`, over the lane's newest
/// [`TREND_RECORDS`] of `records` (in record order) that carry a median of
/// the key, with [`Config::default`] (window 50, p ≤ 0.001). `None` when
/// the series is too short or shows none.
pub fn latest_change(
    records: &[&HistoryRecord<'_>],
    lane: &LaneName,
    key: &DriftKey,
    to_ref: impl Fn(&HistoryRecord<'_>) -> RecordRef,
) -> Option<ChangeAnnotation> {
    let mine: Vec<&&HistoryRecord<'_>> =
        records.iter().filter(|h| &h.record.lane == lane).collect();
    let mut points = Vec::new();
    for h in &mine[mine.len().saturating_sub(TREND_RECORDS)..] {
        let median = h
            .record
            .cases
            .iter()
            .find(|c| c.id == key.case)
            .and_then(|c| c.metrics.iter().find(|m| m.name == key.metric))
            .and_then(|m| m.summary.as_ref())
            .map(|s| s.median.get());
        if let Some(m) = median {
            points.push((**h, m));
        }
    }
    if points.len() < 4 {
        return None;
    }
    let series: Vec<f64> = points.iter().map(|(_, m)| *m).collect();
    let found = changepoint::change_points(&series, &Config::default()).ok()?;
    let cp = found.last()?;
    let (b, a) = (
        points.get(cp.index.checked_sub(1)?)?.0,
        points.get(cp.index)?.0,
    );
    Some(ChangeAnnotation {
        lane: lane.clone(),
        before: (to_ref(b), b.record.subject.commit.clone()),
        after: (to_ref(a), a.record.subject.commit.clone()),
        mean_before: cp.test.mean_before,
        mean_after: cp.test.mean_after,
        p: cp.test.p,
        points: series.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::CaseId;
    use crate::record::ResultRecord;

    fn record(slot: &str, commit: &str, median: f64) -> ResultRecord {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/golden/result-v2.sealed.json"
        ))
        .expect("golden v2 record");
        let mut v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        v["slot"] = slot.into();
        v["subject"]["commit"] = commit.into();
        v["cases"][1]["metrics"][0]["summary"]["median"] = median.into();
        serde_json::from_value(v).expect("record")
    }

    #[test]
    fn a_step_in_the_medians_is_placed_between_two_slots_and_commits() {
        let mut recs = Vec::new();
        for i in 0..30u32 {
            let level = if i < 18 { 1.0 } else { 1.3 };
            let wobble = f64::from(i % 3) * 0.005;
            recs.push(record(
                &format!("2026-10-{:02}T00:00:00Z", i + 1),
                &format!("{:040x}", i),
                level + wobble,
            ));
        }
        let digests: Vec<_> = (0..recs.len())
            .map(|i| crate::Sha256Digest::of(&i.to_be_bytes()))
            .collect();
        let hist: Vec<HistoryRecord<'_>> = recs
            .iter()
            .zip(&digests)
            .map(|(r, d)| HistoryRecord {
                digest: *d,
                record: r,
            })
            .collect();
        let refs: Vec<&HistoryRecord<'_>> = hist.iter().collect();
        let key = DriftKey::new(
            CaseId::new(recs[0].cases[1].id.as_str()).expect("id"),
            recs[0].cases[1].metrics[0].name.clone(),
        );
        let to_ref = |h: &HistoryRecord<'_>| RecordRef {
            lane: h.record.lane.clone(),
            slot: h.record.slot.clone(),
            finished_at: h.record.finished_at.clone(),
            digest: h.digest,
        };
        let c = latest_change(&refs, &recs[0].lane, &key, to_ref).expect("a change point");
        assert_eq!(c.before.0.slot, "2026-10-18T00:00:00Z");
        assert_eq!(c.after.0.slot, "2026-10-19T00:00:00Z");
        assert_eq!(c.after.1, format!("{:040x}", 18));
        assert!((c.relative().expect("relative") - 0.3).abs() < 0.02);
        // A flat series shows none, and a short one is not looked at.
        let flat: Vec<&HistoryRecord<'_>> = hist[..18].iter().collect();
        assert!(latest_change(&flat, &recs[0].lane, &key, to_ref).is_none());
        assert!(latest_change(&refs[..3], &recs[0].lane, &key, to_ref).is_none());
    }
}
