//! A case may be sealed as skipped although its command ran, when every run
//! succeeded and the command measured none of its own metrics (it said
//! why, and the reasons are the case's `skip_reason`): a platform case
//! whose every row was skipped. A skipped case whose command measured
//! something of its own, or whose runs failed, is refused.

use serde_json::{Value, json};

const DRAFT: &[u8] = include_bytes!("../../examples/result.draft.json");

/// The example draft with its first case skipped by its command: `runs`
/// succeeded runs and an own metric with `samples`.
fn draft(samples: Value, runs: u64, failed: u64) -> Vec<u8> {
    let mut d: Value = serde_json::from_slice(DRAFT).expect("draft");
    let old_total = d["cases"][0]["runs"]["total"].as_u64().expect("total");
    let old_ok = d["cases"][0]["runs"]["succeeded"].as_u64().expect("ok");
    let case = &mut d["cases"][0];
    case["outcome"] = json!("skipped");
    case["skip_reason"] = json!("github_token_missing:BENCHOPS_SUBJECT_TOKEN");
    case["drift"] = Value::Null;
    case["runs"]["total"] = json!(runs + failed);
    case["runs"]["succeeded"] = json!(runs);
    case["runs"]["failed"] = json!(failed);
    let n = samples.as_array().map_or(0, Vec::len);
    case["metrics"] = json!([
        {"name": "wall_s", "unit": "s", "direction": "lower_is_better",
         "samples": vec![0.2; n], "summary": {"n": n, "median": 0.2, "mad": 0, "min": 0.2, "max": 0.2, "ci": null}},
        {"name": "branch.publish.ms", "unit": "ms", "direction": "lower_is_better",
         "samples": samples, "summary": null}
    ]);
    // The record's totals follow the case.
    let counts = &mut d["case_counts"];
    counts["pass"] = json!(counts["pass"].as_u64().expect("pass") - 1);
    counts["skipped"] = json!(counts["skipped"].as_u64().expect("skipped") + 1);
    let r = &mut d["runs"];
    r["total"] = json!(r["total"].as_u64().expect("t") - old_total + runs + failed);
    r["succeeded"] = json!(r["succeeded"].as_u64().expect("s") - old_ok + runs);
    r["failed"] = json!(r["failed"].as_u64().expect("f") + failed);
    if let Some(cleared) = d["publication"]["cleared"].as_array_mut() {
        cleared.retain(|c| c != "parse/small");
    }
    serde_json::to_vec(&d).expect("json")
}

fn issues(bytes: &[u8]) -> Vec<String> {
    match benchops::seal::seal_json(bytes) {
        Ok(_) => Vec::new(),
        Err(e) => e.issues.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn a_command_that_measured_nothing_of_its_own_may_skip_its_case() {
    let ok = issues(&draft(json!([null, null]), 2, 0));
    assert!(
        !ok.iter().any(|i| i.contains("runs.total")),
        "a skip by the command is allowed: {ok:#?}"
    );
    let measured = issues(&draft(json!([12.5, null]), 2, 0));
    assert!(
        measured
            .iter()
            .any(|i| i.contains("$.cases[0].runs.total") && i.contains("measured none of its own")),
        "{measured:#?}"
    );
    let failed = issues(&draft(json!([null]), 1, 1));
    assert!(
        failed.iter().any(|i| i.contains("$.cases[0].runs.total")),
        "{failed:#?}"
    );
}
