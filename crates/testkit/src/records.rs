//! Sealed `benchmark-result/v1` records for publisher tests, derived from
//! `examples/result.draft.json` (where `parse/large` drifts on `wall_s` and
//! `parse/small` passes).

use benchops::seal::{SealedRecord, seal_json};
use serde_json::{Value, json};

use crate::workspace_root;

/// The example draft as JSON.
pub fn draft() -> Value {
    let bytes = std::fs::read(workspace_root().join("examples/result.draft.json"))
        .expect("example draft readable");
    serde_json::from_slice(&bytes).expect("example draft is JSON")
}

/// The draft moved to another lane and slot (times and baseline follow).
pub fn with_lane_slot(mut v: Value, lane: &str, slot: &str) -> Value {
    v["lane"] = json!(lane);
    v["slot"] = json!(slot);
    v["started_at"] = json!(slot);
    v["finished_at"] = json!(slot);
    v["baseline"]["lane"] = json!(lane);
    v
}

/// Seals a draft that is known to be valid.
pub fn seal(v: &Value) -> SealedRecord {
    seal_json(&serde_json::to_vec(v).expect("serializes")).expect("fixture seals")
}

/// The example: `parse/large` drifts on `wall_s`, `parse/small` passes.
pub fn drift(lane: &str, slot: &str) -> SealedRecord {
    seal(&with_lane_slot(draft(), lane, slot))
}

/// Both `parse/large` and `parse/small` drift on `wall_s`.
pub fn drift_both(lane: &str, slot: &str) -> SealedRecord {
    let mut v = with_lane_slot(draft(), lane, slot);
    let small = &mut v["cases"][0];
    assert_eq!(small["id"], "parse/small");
    small["outcome"] = json!("drift");
    small["drift"]["verdict"] = json!("confirmed");
    v["case_counts"] = json!({"total": 4, "pass": 0, "drift": 2, "skipped": 1, "error": 1});
    v["publication"] = json!({
        "drift_reports": [
            {"case": "parse/large", "metric": "wall_s", "summary": "wall_s median rose from 0.25 to 0.31 (+24%)"},
            {"case": "parse/small", "metric": "wall_s", "summary": "wall_s median rose from 0.22 to 0.25 (+14%)"}
        ],
        "cleared": [],
        "baseline_proposal": null
    });
    seal(&v)
}

/// A clean record: `parse/small` and `parse/large` pass; it proposes itself
/// as the lane's baseline.
pub fn clean(lane: &str, slot: &str) -> SealedRecord {
    let mut v = with_lane_slot(draft(), lane, slot);
    let mut cases: Vec<Value> = v["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| c["id"] == "parse/small" || c["id"] == "parse/large")
        .cloned()
        .collect();
    cases[1]["outcome"] = json!("pass");
    cases[1]["drift"] = Value::Null;
    v["cases"] = Value::Array(cases);
    v["runs"] = json!({"total": 15, "succeeded": 15, "failed": 0, "incomplete": 0,
        "missing": 0, "stale": 0, "scheduler_inconsistent": 0});
    v["case_counts"] = json!({"total": 2, "pass": 2, "drift": 0, "skipped": 0, "error": 0});
    v["publication"] = json!({
        "drift_reports": [],
        "cleared": ["parse/large", "parse/small"],
        "baseline_proposal": {"lane": lane, "reason": "clean run"}
    });
    seal(&v)
}

/// The schedule manifest the publisher tests share: `sentinel` hourly over
/// `parse/large`, `nightly` daily over every case, both `last-clean`.
pub const TWO_LANE_MANIFEST: &str = r#"
schema = "schedule-manifest/v1"

[[lanes]]
name = "sentinel"
cron = "0 * * * *"
timezone = "UTC"
completion_window_minutes = 50
cases = ["parse/large"]
baseline = "last-clean"

[[lanes]]
name = "nightly"
cron = "0 1 * * *"
timezone = "UTC"
completion_window_minutes = 180
cases = ["*"]
baseline = "last-clean"
"#;
