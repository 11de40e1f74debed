//! The history index against a full read of history: random histories,
//! indexed, written out and read back, and the subset of records the index
//! selects decides exactly as all of history does (every drift status and
//! reconcile plan, the watchdog, health, durations and the health issue).

use std::collections::{BTreeMap, HashMap};

use benchops::history_index::{EVIDENCE_PATH, HistoryIndex, Needs, POINTER_PATH, segment_path};
use benchops::manifest::{self, Manifest};
use benchops::reconcile::{
    Action, ActualIssue, HistoryRecord, IssueState, RenderOptions, drift_statuses, reconcile,
};
use benchops::{SealedRecord, Sha256Digest};
use benchops_publish::sweep::{health_issue, index, report};
use benchops_testkit::records;
use serde_json::json;

const MANIFEST: &str = r#"
schema = "schedule-manifest/v1"
repository = "example/widgets"

[labels]
drift = "benchmark-drift"
accepted = "drift-accepted"
lane_prefix = "lane:"

[[lanes]]
name = "sentinel"
cron = "0 * * * *"
timezone = "UTC"
completion_window_minutes = 50
cases = ["parse/large"]
baseline = "last-clean"

[[lanes]]
name = "comprehensive"
cron = "0 * * * *"
timezone = "UTC"
completion_window_minutes = 50
cases = ["*"]
baseline = "last-clean"
"#;

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One record: a drift of `parse/large`, of both cases, or clean, at
/// `hour` hours after the start, finishing `late` minutes after its slot.
fn record(lane: &str, hour: u64, late: u64, kind: u64) -> SealedRecord {
    let t = jiff::Timestamp::from_second(1_767_225_600 + 3600 * hour as i64).expect("time");
    let slot = t.to_string();
    let finished = (t + jiff::SignedDuration::from_mins(late as i64)).to_string();
    let sealed = match kind {
        0 => records::drift(lane, &slot),
        1 => records::drift_both(lane, &slot),
        _ => records::clean(lane, &slot),
    };
    let mut v: serde_json::Value = serde_json::from_slice(sealed.bytes()).expect("json");
    v["finished_at"] = json!(finished);
    v.as_object_mut().expect("object").remove("sealed");
    records::seal(&v)
}

/// A history: long clean stretches, drift episodes, retries of a slot,
/// gaps; both lanes, the sentinel hourly and the comprehensive one less
/// often.
fn history(rng: &mut Rng, hours: u64) -> Vec<SealedRecord> {
    let mut out = Vec::new();
    let mut drifting = false;
    for hour in 0..hours {
        if rng.below(40) == 0 {
            drifting = !drifting;
        }
        if rng.below(25) == 0 {
            continue; // a missed slot
        }
        let kind = if drifting { rng.below(2) } else { 2 + rng.below(4) / 3 };
        let kind = if drifting && rng.below(5) == 0 { 2 } else { kind };
        out.push(record("sentinel", hour, rng.below(30), kind));
        if rng.below(30) == 0 {
            out.push(record("sentinel", hour, 31 + rng.below(20), 2));
        }
        if hour % 3 == 0 {
            let kind = if drifting { rng.below(3) } else { 2 };
            out.push(record("comprehensive", hour, rng.below(40), kind));
        }
    }
    out
}

/// The index of `all`, written out as the persist writes it, read back
/// from those files, and the subset it selects.
fn subset<'a>(
    manifest: &Manifest,
    all: &'a [SealedRecord],
    needs: &Needs,
) -> Vec<&'a SealedRecord> {
    let mut built = HistoryIndex::build(all.iter());
    let files: BTreeMap<String, Vec<u8>> = built.files(Some("parent")).into_iter().collect();
    let (mut index, evidence) =
        HistoryIndex::from_pointer(&files[POINTER_PATH]).expect("pointer reads back");
    assert_eq!(index.built_on(), Some("parent"));
    assert_eq!(index.records(), all.len() as u64);
    if evidence.records > 0 {
        index
            .load_evidence(&evidence, &files[EVIDENCE_PATH])
            .expect("evidence reads back");
    }
    let by_digest: HashMap<Sha256Digest, &SealedRecord> =
        all.iter().map(|s| (s.digest(), s)).collect();
    let mut loaded: HashMap<Sha256Digest, &SealedRecord> = HashMap::new();
    for round in 0.. {
        assert!(round < 1000, "the reads end");
        let reads = index.next_reads(manifest, &|d| loaded.get(d).map(|s| s.record()), needs);
        if reads.is_empty() {
            break;
        }
        for (lane, month) in &reads.segments {
            index
                .load_segment(lane, month, &files[&segment_path(lane, month)])
                .expect("segment reads back");
        }
        for (_, e) in &reads.records {
            let s = by_digest[&e.digest];
            assert_eq!(s.record().slot, e.slot);
            loaded.insert(e.digest, s);
        }
    }
    loaded.into_values().collect()
}

fn issues_from(plan: &[Action], rng: &mut Rng) -> Vec<ActualIssue> {
    let mut out = Vec::new();
    for (n, a) in plan.iter().enumerate() {
        if let Action::Open { title, body, labels, .. } = a {
            // Some open, some closed by a person.
            let state = if rng.below(4) == 0 {
                IssueState::Closed
            } else {
                IssueState::Open
            };
            out.push(ActualIssue::from_body(
                n as u64 + 1,
                title.clone(),
                body.clone(),
                state,
                None,
                labels.clone(),
            ));
        }
    }
    out
}

fn decisions(
    manifest: &Manifest,
    records: &[&SealedRecord],
    issues: &[ActualIssue],
    now: &str,
) -> String {
    let hist: Vec<HistoryRecord<'_>> = records.iter().map(|s| HistoryRecord::from(*s)).collect();
    let opts = RenderOptions::new("https://example.test/history");
    let statuses = drift_statuses(manifest, &hist);
    let plan = reconcile(manifest, &hist, issues, &opts);
    let with_paths: Vec<(String, SealedRecord)> = records
        .iter()
        .map(|s| {
            let r = s.record();
            let p = benchops::layout::record_path(&r.lane, &r.slot, &s.digest()).expect("path");
            (p, (*s).clone())
        })
        .collect();
    let watch = report::watchdog(manifest, &with_paths, now);
    let health = report::health(manifest, &with_paths);
    let mut sorted: Vec<&SealedRecord> = records.to_vec();
    sorted.sort_by(|a, b| {
        (&a.record().slot, &a.record().finished_at).cmp(&(&b.record().slot, &b.record().finished_at))
    });
    let durations: Vec<_> = manifest
        .lanes
        .iter()
        .map(|l| report::durations_of(&sorted, l.name.as_str()))
        .collect();
    let body = health_issue::body(manifest, &watch, &sorted, issues);
    format!("{statuses:#?}\n{plan:#?}\n{watch:#?}\n{health:#?}\n{durations:#?}\n{body}")
}

#[test]
fn the_records_the_index_selects_decide_as_all_of_history() {
    let manifest = manifest::from_toml(MANIFEST, "schedule.toml")
        .expect("manifest")
        .manifest;
    let mut rng = Rng(0x5eed);
    let mut smaller = 0;
    for case in 0..8u64 {
        let hours = 150 + rng.below(500);
        let all = history(&mut rng, hours);
        // The watchdog's clock: shortly after the last slot, or much later.
        let end = 1_767_225_600 + 3600 * (hours as i64 + rng.below(100) as i64);
        let now = jiff::Timestamp::from_second(end).expect("now");
        let needs = index::needs(&now.to_string());
        let chosen = subset(&manifest, &all, &needs);
        if chosen.len() < all.len() {
            smaller += 1;
        }
        let full: Vec<&SealedRecord> = all.iter().collect();
        let now = now.to_string();
        let none = decisions(&manifest, &full, &[], &now);
        assert_eq!(
            none,
            decisions(&manifest, &chosen, &[], &now),
            "case {case}: {} records, {} chosen, no issues",
            all.len(),
            chosen.len()
        );
        let hist: Vec<HistoryRecord<'_>> = full.iter().map(|s| HistoryRecord::from(*s)).collect();
        let opened = reconcile(&manifest, &hist, &[], &RenderOptions::new("https://example.test/history"));
        let issues = issues_from(&opened.actions, &mut rng);
        assert_eq!(
            decisions(&manifest, &full, &issues, &now),
            decisions(&manifest, &chosen, &issues, &now),
            "case {case}: with issues"
        );
    }
    assert!(smaller >= 6, "the index chose fewer records than history holds in {smaller} of 8");
}
