//! `benchmark-result/v2`, the record of a lane run: golden bytes of a real
//! lane record (`examples/result-v2.draft.json`), the semantic rules that
//! tie verdicts, drift reports and clears together, both versions read by
//! one verifier, and what v2 verdicts mean for the drift lifecycle.

use std::path::PathBuf;

use benchops::jcs;
use benchops::manifest;
use benchops::reconcile::{
    CaseStatus, DriftKey, HistoryRecord, Standing, case_status, drift_statuses,
};
use benchops::seal::{IssueKind, SealedRecord, seal_json, verify};
use benchops::{CaseId, Sha256Digest};
use serde_json::{Value, json};

fn read(rel: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{} unreadable: {e}", p.display()))
}

fn golden() -> SealedRecord {
    let bytes = read("tests/fixtures/golden/result-v2.sealed.json");
    let digest: Sha256Digest = String::from_utf8(read("tests/fixtures/golden/result-v2.sha256"))
        .expect("UTF-8")
        .trim_end()
        .parse()
        .expect("digest");
    verify(&bytes, Some(&digest)).expect("the v2 golden record verifies")
}

fn value() -> Value {
    jcs::parse(golden().bytes()).expect("parses")
}

/// The semantic and schema problems of an edited record, as (kind, path).
fn problems(v: &Value) -> Vec<(IssueKind, String)> {
    match verify(&jcs::canonical_bytes(v), None) {
        Ok(_) => Vec::new(),
        Err(e) => e
            .issues
            .iter()
            .map(|i| (i.kind, i.path.to_string()))
            .collect(),
    }
}

fn large_key(v: &mut Value) -> &mut Value {
    v["comparison"]["keys"]
        .as_array_mut()
        .expect("keys")
        .iter_mut()
        .find(|k| k["case"] == "widgets/size=large")
        .expect("large key")
}

#[test]
fn sealing_the_v2_example_reproduces_the_golden_bytes() {
    let g = golden();
    let sealed = seal_json(&read("examples/result-v2.draft.json")).expect("the v2 example seals");
    assert_eq!(sealed.bytes(), g.bytes(), "sealed v2 bytes changed");
    assert_eq!(sealed.digest(), g.digest());
    // The typed record writes the same bytes again.
    let typed = benchops::seal::seal(g.record()).expect("typed record seals");
    assert_eq!(typed.bytes(), g.bytes());
    assert!(g.record().is_v2());
}

#[test]
fn one_verifier_reads_both_versions() {
    let v1 = read("tests/fixtures/golden/result.sealed.json");
    let r1 = verify(&v1, None).expect("v1 still verifies");
    assert!(!r1.record().is_v2());
    assert!(r1.record().comparison.is_none());
    assert!(golden().record().comparison.is_some());
    // v3 is named as unknown, not as a schema violation.
    let mut v = value();
    v["schema"] = json!("benchmark-result/v3");
    assert_eq!(
        problems(&v),
        [(IssueKind::UnknownSchemaVersion, "$.schema".to_owned())]
    );
}

#[test]
fn a_comparison_belongs_to_v2_and_v2_needs_one() {
    let mut v = value();
    v["schema"] = json!("benchmark-result/v1");
    let p = problems(&v);
    assert!(
        p.iter()
            .any(|(k, path)| *k == IssueKind::Schema && path == "$"),
        "v1 with a comparison: {p:?}"
    );
    let mut v = value();
    v.as_object_mut().expect("object").remove("comparison");
    let p = problems(&v);
    assert!(
        p.iter().any(|(k, _)| *k == IssueKind::Schema),
        "v2 without one: {p:?}"
    );
}

#[test]
fn verdicts_reports_and_clears_must_agree() {
    // A confirmed regression without its drift report.
    let mut v = value();
    v["publication"]["drift_reports"] = json!([]);
    let p = problems(&v);
    assert!(
        p.contains(&(IssueKind::Semantic, "$.comparison.keys[1].verdict".into())),
        "{p:?}"
    );
    // A drift report whose key is only inconclusive.
    let mut v = value();
    large_key(&mut v)["verdict"] = json!("inconclusive");
    let p = problems(&v);
    assert!(
        p.contains(&(IssueKind::Semantic, "$.comparison.keys[1].verdict".into())),
        "{p:?}"
    );
    // A confirmed verdict with no re-run samples.
    let mut v = value();
    large_key(&mut v)["confirmation"]["samples"] = json!([]);
    let p = problems(&v);
    assert!(
        p.contains(&(
            IssueKind::Semantic,
            "$.comparison.keys[1].confirmation".into()
        )),
        "{p:?}"
    );
    // A case cleared while one of its keys is inconclusive.
    let mut v = value();
    v["publication"]["cleared"] = json!(["widgets/size=small"]);
    let p = problems(&v);
    assert!(
        p.contains(&(IssueKind::Semantic, "$.publication.cleared[0]".into())),
        "{p:?}"
    );
    // v1-style drift evidence in a v2 case.
    let mut v = value();
    v["cases"][1]["drift"] = json!({
        "metric": "wall_s",
        "baseline": {"record": format!("sha256:{}", "0".repeat(64)), "median": 1},
        "initial_samples": [1], "confirmation_samples": [1],
        "test": "t", "threshold": 0.1, "statistic": 1, "verdict": "confirmed"
    });
    let p = problems(&v);
    assert!(
        p.contains(&(IssueKind::Semantic, "$.cases[1].drift".into())),
        "{p:?}"
    );
    // A drifting case whose keys confirm nothing.
    let mut v = value();
    v["cases"][0]["outcome"] = json!("drift");
    v["case_counts"]["drift"] = json!(2);
    v["case_counts"]["pass"] = json!(0);
    let p = problems(&v);
    assert!(
        p.contains(&(IssueKind::Semantic, "$.cases[0].outcome".into())),
        "{p:?}"
    );
}

const MANIFEST: &str = r#"
schema = "schedule-manifest/v2"
suite = ["bench.toml"]
[[lanes]]
name = "comprehensive"
cron = "0 1 * * *"
timezone = "UTC"
completion_window_minutes = 180
cases = ["*"]
baseline = "last-clean"
"#;

/// A later record of the same lane in which the large key has `verdict`.
fn later(verdict: &str, slot: &str) -> SealedRecord {
    let mut v = value();
    v["slot"] = json!(slot);
    v["started_at"] = json!(slot);
    v["finished_at"] = json!(slot);
    v["publication"]["drift_reports"] = json!([]);
    v["cases"][1]["outcome"] = json!("pass");
    v["case_counts"]["drift"] = json!(0);
    v["case_counts"]["pass"] = json!(2);
    let k = large_key(&mut v);
    k["verdict"] = json!(verdict);
    k["role"] = json!("confirm_clear");
    k["drifting_in_history"] = json!(true);
    if verdict == "within_band" {
        v["publication"]["cleared"] = json!([]);
    }
    verify(&jcs::canonical_bytes(&v), None).expect("the later record verifies")
}

#[test]
fn an_inconclusive_key_neither_reproduces_nor_clears_and_within_band_clears() {
    let m = manifest::from_toml(MANIFEST, "m.toml").expect("manifest");
    let key = DriftKey::new(CaseId::new("widgets/size=large").expect("id"), "wall_s");
    let g = golden();
    assert_eq!(case_status(g.record(), &key), CaseStatus::Reproduces);
    let unsure = later("inconclusive", "2026-12-02T00:00:00Z");
    assert_eq!(
        case_status(unsure.record(), &key),
        CaseStatus::Inconclusive("inconclusive".into())
    );
    let not_confirmed_small =
        DriftKey::new(CaseId::new("widgets/size=small").expect("id"), "wall_s");
    assert!(matches!(
        case_status(unsure.record(), &not_confirmed_small),
        CaseStatus::Inconclusive(_)
    ));
    let history = |records: &[&SealedRecord]| -> Standing {
        let h: Vec<HistoryRecord<'_>> = records
            .iter()
            .map(|r| HistoryRecord {
                digest: r.digest(),
                record: r.record(),
            })
            .collect();
        let s = drift_statuses(&m.manifest, &h);
        s.into_iter()
            .find(|s| s.key == key)
            .expect("the key has a status")
            .standing
    };
    assert!(matches!(
        history(&[&g, &unsure]),
        Standing::Reproducing { .. }
    ));
    let clear = later("within_band", "2026-12-03T00:00:00Z");
    assert_eq!(
        case_status(clear.record(), &key),
        CaseStatus::DoesNotReproduce
    );
    assert!(matches!(
        history(&[&g, &unsure, &clear]),
        Standing::Cleared { .. }
    ));
}
