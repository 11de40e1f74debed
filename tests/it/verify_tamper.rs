//! Tampered and broken variants of the sealed example: each is reported with
//! its own issue kind and the JSON path of the problem.

use std::path::Path;

use benchops::jcs::{self, Hint};
use benchops::seal::{IssueKind, SealedRecord, VerifyError, seal_json, verify};
use benchops::{JsonPath, Sha256Digest};
use serde_json::{Value, json};

fn sealed() -> SealedRecord {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/result.draft.json");
    let draft = std::fs::read(&p).expect("example draft readable");
    seal_json(&draft).expect("the example seals")
}

fn sealed_bytes() -> Vec<u8> {
    sealed().bytes().to_vec()
}

fn sealed_value() -> Value {
    jcs::parse(&sealed_bytes()).expect("sealed bytes parse")
}

/// Replaces the first occurrence of `from` (which must occur) by `to`.
fn replace(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let text = std::str::from_utf8(bytes).expect("sealed bytes are UTF-8");
    assert!(text.contains(from), "{from:?} not found");
    text.replacen(from, to, 1).into_bytes()
}

fn err(bytes: &[u8], expected: Option<&Sha256Digest>) -> VerifyError {
    match verify(bytes, expected) {
        Ok(_) => panic!(
            "accepted tampered bytes: {}",
            String::from_utf8_lossy(bytes)
        ),
        Err(e) => e,
    }
}

/// The issues as (kind, path) pairs, in the order reported.
fn kinds_and_paths(e: &VerifyError) -> Vec<(IssueKind, String)> {
    e.issues
        .iter()
        .map(|i| (i.kind, i.path.to_string()))
        .collect()
}

/// Verifies the canonical bytes of an edited value (no digest check).
fn issues_of_value(v: &Value) -> Vec<(IssueKind, String)> {
    let bytes = jcs::canonical_bytes(v);
    kinds_and_paths(&err(&bytes, None))
}

fn one(kind: IssueKind, path: &str) -> Vec<(IssueKind, String)> {
    vec![(kind, path.to_owned())]
}

#[test]
fn untouched_sealed_bytes_verify() {
    let s = sealed();
    let again = verify(s.bytes(), Some(&s.digest())).expect("sealed bytes verify");
    assert_eq!(again.digest(), s.digest());
}

#[test]
fn a_changed_letter_in_a_string_is_a_digest_mismatch_only() {
    let s = sealed();
    let tampered = replace(s.bytes(), "\"host\":\"bench-01\"", "\"host\":\"bunch-01\"");
    assert_eq!(tampered.len(), s.bytes().len(), "one byte flipped");
    let e = err(&tampered, Some(&s.digest()));
    assert_eq!(kinds_and_paths(&e), one(IssueKind::DigestMismatch, "$"));
    assert!(e.issues[0].reason.contains(&s.digest().to_string()), "{e}");
    // Apart from the address, the tampered document is a valid record.
    let other = verify(&tampered, None).expect("otherwise valid");
    assert_ne!(other.digest(), s.digest());
    assert_eq!(
        other.record().executor,
        benchops::record::Executor::Local {
            host: "bunch-01".into()
        }
    );
}

#[test]
fn a_flipped_byte_that_breaks_json_is_malformed() {
    let s = sealed();
    for (from, to) in [
        ("{\"baseline\"", "[\"baseline\""),
        ("\"lane\":", "\"lane\";"),
    ] {
        let tampered = replace(s.bytes(), from, to);
        let e = err(&tampered, Some(&s.digest()));
        assert_eq!(
            kinds_and_paths(&e),
            one(IssueKind::MalformedJson, "$"),
            "{from} -> {to}"
        );
        assert!(e.issues[0].reason.contains("line 1"), "{e}");
    }
    let e = err(&s.bytes()[..s.bytes().len() - 1], None);
    assert_eq!(kinds_and_paths(&e), one(IssueKind::MalformedJson, "$"));
    let e = err(b"", None);
    assert_eq!(kinds_and_paths(&e), one(IssueKind::MalformedJson, "$"));
}

#[test]
fn reordered_keys_are_not_canonical_at_the_object() {
    let s = sealed();
    let tampered = replace(
        s.bytes(),
        "\"executor\":{\"host\":\"bench-01\",\"kind\":\"local\"}",
        "\"executor\":{\"kind\":\"local\",\"host\":\"bench-01\"}",
    );
    let e = err(&tampered, None);
    assert_eq!(
        kinds_and_paths(&e),
        one(IssueKind::NotCanonical, "$.executor")
    );
    assert!(
        e.issues[0].reason.contains(&Hint::KeyOrder.to_string()),
        "{e}"
    );
    let nc = jcs::check_canonical(&tampered, &jcs::parse(&tampered).expect("parses"))
        .expect_err("not canonical");
    assert_eq!(nc.hint, Hint::KeyOrder);
    assert_eq!(nc.path, JsonPath::root().key("executor"));

    // With the digest given, the mismatch is reported too.
    let e = err(&tampered, Some(&s.digest()));
    assert_eq!(
        kinds_and_paths(&e),
        vec![
            (IssueKind::NotCanonical, "$.executor".to_owned()),
            (IssueKind::DigestMismatch, "$".to_owned()),
        ]
    );
}

#[test]
fn a_non_canonical_number_is_reported_at_that_number() {
    let s = sealed();
    // The first summary of the first metric of the first case: `"n":5}`.
    let tampered = replace(s.bytes(), "\"n\":5}", "\"n\":5.0}");
    let e = err(&tampered, None);
    let path = "$.cases[0].metrics[0].summary.n";
    // `5.0` means 5: the only issue is the spelling, and the remaining
    // checks still run on the normal form.
    assert_eq!(
        kinds_and_paths(&e),
        one(IssueKind::NotCanonical, path),
        "{e:?}"
    );
    let also_unreasoned = replace(
        &tampered,
        "\"skip_reason\":\"no GPU on this runner\"",
        "\"skip_reason\":null",
    );
    assert_eq!(
        kinds_and_paths(&err(&also_unreasoned, None)),
        vec![
            (IssueKind::NotCanonical, path.to_owned()),
            (IssueKind::Semantic, "$.cases[2].skip_reason".to_owned()),
        ]
    );
    assert!(
        e.issues[0].reason.contains(&Hint::Number.to_string()),
        "{e}"
    );
    let nc = jcs::check_canonical(&tampered, &jcs::parse(&tampered).expect("parses"))
        .expect_err("not canonical");
    assert_eq!(nc.hint, Hint::Number);
    assert_eq!(nc.path.to_string(), path);
    assert_eq!(nc.found.get(..2), Some(".0"));

    // A float that is not integral: same kind, same path, and nothing else.
    let path = "$.cases[0].metrics[0].summary.median";
    let tampered = replace(s.bytes(), "\"median\":0.251,", "\"median\":0.2510,");
    let e = err(&tampered, None);
    assert_eq!(kinds_and_paths(&e), one(IssueKind::NotCanonical, path));
    assert!(
        e.issues[0].reason.contains(&Hint::Number.to_string()),
        "{e}"
    );

    // Exponent form of a float.
    let tampered = replace(s.bytes(), "\"median\":0.251,", "\"median\":2.51e-1,");
    let e = err(&tampered, None);
    assert_eq!(kinds_and_paths(&e), one(IssueKind::NotCanonical, path));
}

#[test]
fn whitespace_is_not_canonical() {
    let s = sealed();
    let tampered = replace(
        s.bytes(),
        "\"lane\":\"nightly\",\"manifest",
        "\"lane\": \"nightly\",\"manifest",
    );
    let e = err(&tampered, None);
    assert_eq!(kinds_and_paths(&e), one(IssueKind::NotCanonical, "$.lane"));
    assert!(
        e.issues[0].reason.contains(&Hint::Whitespace.to_string()),
        "{e}"
    );

    let mut trailing = s.bytes().to_vec();
    trailing.push(b'\n');
    let e = err(&trailing, None);
    assert_eq!(kinds_and_paths(&e), one(IssueKind::NotCanonical, "$"));
    assert!(
        e.issues[0]
            .reason
            .contains(&Hint::TrailingBytes.to_string()),
        "{e}"
    );
}

#[test]
fn a_skipped_case_without_reason_is_a_semantic_issue() {
    let mut v = sealed_value();
    assert_eq!(v["cases"][2]["outcome"], "skipped");
    v["cases"][2]["skip_reason"] = Value::Null;
    let bytes = jcs::canonical_bytes(&v);
    jcs::check_canonical(&bytes, &v).expect("re-canonicalized");
    let e = err(&bytes, None);
    assert_eq!(
        kinds_and_paths(&e),
        one(IssueKind::Semantic, "$.cases[2].skip_reason")
    );
    assert!(e.issues[0].reason.contains("skipped"), "{e}");

    v["cases"][2]["skip_reason"] = json!("  ");
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.cases[2].skip_reason")
    );
}

#[test]
fn a_wrong_digest_in_the_file_name_is_a_digest_mismatch() {
    // The publisher reads the expected digest from the file name
    // (`<hex>.json`); here the name holds another valid digest.
    let s = sealed();
    let dir = tempfile::tempdir().expect("tempdir");
    let other = Sha256Digest::of(b"some other record");
    let path = dir.path().join(format!("{}.json", other.hex()));
    std::fs::write(&path, s.bytes()).expect("writes");

    let stem = path
        .file_stem()
        .and_then(|n| n.to_str())
        .expect("UTF-8 file name");
    let named = Sha256Digest::from_hex(stem).expect("name holds a valid digest");
    let bytes = std::fs::read(&path).expect("reads back");
    let e = err(&bytes, Some(&named));
    assert_eq!(kinds_and_paths(&e), one(IssueKind::DigestMismatch, "$"));
    assert!(e.issues[0].reason.contains(&other.to_string()), "{e}");
    assert!(e.issues[0].reason.contains(&s.digest().to_string()), "{e}");

    // Under its own name the same bytes verify.
    verify(&bytes, Some(&s.digest())).expect("right name verifies");
}

#[test]
fn an_unknown_schema_version_is_reported_as_such() {
    let s = sealed();
    let tampered = replace(
        s.bytes(),
        "\"schema\":\"benchmark-result/v1\"",
        "\"schema\":\"benchmark-result/v9\"",
    );
    let e = err(&tampered, None);
    assert_eq!(
        kinds_and_paths(&e),
        one(IssueKind::UnknownSchemaVersion, "$.schema")
    );
    assert!(e.issues[0].reason.contains("v9"), "{e}");

    // Another contract's tag is a schema problem, not a version problem.
    let tampered = replace(
        s.bytes(),
        "\"schema\":\"benchmark-result/v1\"",
        "\"schema\":\"receipt/v1\"",
    );
    let e = err(&tampered, None);
    assert_eq!(kinds_and_paths(&e), one(IssueKind::Schema, "$.schema"));
}

#[test]
fn a_schema_violation_is_reported_at_its_path() {
    let s = sealed();
    let tampered = replace(s.bytes(), "\"outcome\":\"pass\"", "\"outcome\":\"maybe\"");
    let e = err(&tampered, None);
    assert_eq!(
        kinds_and_paths(&e),
        one(IssueKind::Schema, "$.cases[0].outcome")
    );

    // A missing required member is reported at the object that lacks it.
    let mut v = sealed_value();
    v["cases"][2]
        .as_object_mut()
        .expect("case is an object")
        .remove("skip_reason");
    let got = issues_of_value(&v);
    assert_eq!(got, one(IssueKind::Schema, "$.cases[2]"));

    // A non-integer count.
    let mut v = sealed_value();
    v["runs"]["failed"] = json!(5.5);
    assert_eq!(issues_of_value(&v), one(IssueKind::Schema, "$.runs.failed"));
}

#[test]
fn several_problems_are_all_reported() {
    let mut v = sealed_value();
    v["case_counts"]["pass"] = json!(2);
    v["cases"][2]["skip_reason"] = Value::Null;
    let got = issues_of_value(&v);
    assert!(
        got.iter()
            .filter(|(k, _)| *k == IssueKind::Semantic)
            .count()
            >= 2,
        "{got:?}"
    );
    assert!(
        got.contains(&(IssueKind::Semantic, "$.case_counts".into())),
        "{got:?}"
    );
    assert!(
        got.contains(&(IssueKind::Semantic, "$.cases[2].skip_reason".into())),
        "{got:?}"
    );

    // A canonical-form problem and a semantic one together.
    let mut v = sealed_value();
    v["cases"][2]["skip_reason"] = Value::Null;
    let bytes = jcs::canonical_bytes(&v);
    let text = String::from_utf8(bytes).expect("UTF-8");
    let tampered = text.replacen("\"median\":0.251,", "\"median\":0.2510,", 1);
    let e = err(tampered.as_bytes(), Some(&sealed().digest()));
    assert_eq!(
        kinds_and_paths(&e),
        vec![
            (
                IssueKind::NotCanonical,
                "$.cases[0].metrics[0].summary.median".to_owned()
            ),
            (IssueKind::DigestMismatch, "$".to_owned()),
            (IssueKind::Semantic, "$.cases[2].skip_reason".to_owned()),
        ]
    );
}

#[test]
fn case_counts_that_do_not_add_up() {
    let mut v = sealed_value();
    v["case_counts"]["pass"] = json!(2);
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.case_counts")
    );
}

#[test]
fn run_totals_that_do_not_add_up() {
    // Record-level total disagrees with its classes and with the cases.
    let mut v = sealed_value();
    v["runs"]["total"] = json!(21);
    assert_eq!(
        issues_of_value(&v),
        vec![
            (IssueKind::Semantic, "$.runs.total".to_owned()),
            (IssueKind::Semantic, "$.runs".to_owned()),
        ]
    );

    // Record-level counts consistent in themselves but not with the cases.
    let mut v = sealed_value();
    v["runs"]["total"] = json!(21);
    v["runs"]["failed"] = json!(6);
    assert_eq!(issues_of_value(&v), one(IssueKind::Semantic, "$.runs"));

    // A case whose total disagrees with its classes.
    let mut v = sealed_value();
    v["cases"][3]["runs"]["total"] = json!(4);
    v["runs"]["total"] = json!(19);
    assert_eq!(
        issues_of_value(&v),
        vec![
            (IssueKind::Semantic, "$.runs.total".to_owned()),
            (IssueKind::Semantic, "$.cases[3].runs.total".to_owned()),
        ]
    );

    // A skipped case with child runs.
    let mut v = sealed_value();
    v["cases"][2]["runs"]["total"] = json!(1);
    v["cases"][2]["runs"]["missing"] = json!(1);
    v["runs"]["total"] = json!(21);
    v["runs"]["missing"] = json!(1);
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.cases[2].runs.total")
    );
}

#[test]
fn drift_without_evidence() {
    let mut v = sealed_value();
    assert_eq!(v["cases"][1]["outcome"], "drift");
    v["cases"][1]["drift"] = Value::Null;
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.cases[1].drift")
    );

    let mut v = sealed_value();
    v["cases"][1]["drift"]["verdict"] = json!("not_confirmed");
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.cases[1].drift.verdict")
    );

    let mut v = sealed_value();
    v["cases"][1]["drift"]["confirmation_samples"] = json!([]);
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.cases[1].drift.confirmation_samples")
    );

    // A passing case cannot carry a confirmed verdict.
    let mut v = sealed_value();
    v["cases"][0]["drift"]["verdict"] = json!("confirmed");
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.cases[0].drift.verdict")
    );
}

#[test]
fn publication_plan_reporting_a_pass_case() {
    let mut v = sealed_value();
    v["publication"]["drift_reports"]
        .as_array_mut()
        .expect("an array")
        .push(json!({"case": "parse/small", "metric": "wall_s", "summary": "no"}));
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.publication.drift_reports[1].case")
    );

    // A drift case left out of the plan.
    let mut v = sealed_value();
    v["publication"]["drift_reports"] = json!([]);
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.publication.drift_reports")
    );
}

#[test]
fn cleared_listing_a_drift_case() {
    let mut v = sealed_value();
    v["publication"]["cleared"] = json!(["parse/small", "parse/large"]);
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.publication.cleared[1]")
    );

    let mut v = sealed_value();
    v["publication"]["cleared"] = json!(["parse/small", "nowhere"]);
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.publication.cleared[1]")
    );
}

#[test]
fn baseline_proposal_on_a_record_with_drift() {
    let mut v = sealed_value();
    v["publication"]["baseline_proposal"] = json!({"lane": "nightly", "reason": "clean run"});
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.publication.baseline_proposal")
    );

    let mut v = sealed_value();
    v["publication"]["baseline_proposal"] = json!({"lane": "weekly", "reason": "clean run"});
    assert_eq!(
        issues_of_value(&v),
        vec![
            (
                IssueKind::Semantic,
                "$.publication.baseline_proposal.lane".to_owned()
            ),
            (
                IssueKind::Semantic,
                "$.publication.baseline_proposal".to_owned()
            ),
        ]
    );
}

#[test]
fn environment_fingerprint_mismatch() {
    let mut v = sealed_value();
    v["environment"]["facts"]["kernel"] = json!("6.2.0");
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.environment.fingerprint")
    );
}

#[test]
fn summary_median_wrong() {
    let mut v = sealed_value();
    v["cases"][0]["metrics"][0]["summary"]["median"] = json!(0.252);
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.cases[0].metrics[0].summary.median")
    );

    let mut v = sealed_value();
    v["cases"][0]["metrics"][0]["summary"]["n"] = json!(4);
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.cases[0].metrics[0].summary.n")
    );

    let mut v = sealed_value();
    v["cases"][0]["metrics"][1]["summary"] = Value::Null;
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.cases[0].metrics[1].summary")
    );
}

#[test]
fn other_case_invariants() {
    // An error case without detail.
    let mut v = sealed_value();
    v["cases"][3]["error"] = Value::Null;
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.cases[3].error")
    );

    // A skip reason on a passing case.
    let mut v = sealed_value();
    v["cases"][0]["skip_reason"] = json!("why not");
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.cases[0].skip_reason")
    );

    // A duplicated case id.
    let mut v = sealed_value();
    v["cases"][3]["id"] = json!("render/gpu");
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.cases[3].id")
    );

    // Finishing before starting.
    let mut v = sealed_value();
    v["finished_at"] = json!("2026-11-30T00:59:59Z");
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.finished_at")
    );

    // Drift evidence naming a metric the case does not have.
    let mut v = sealed_value();
    v["cases"][0]["drift"]["metric"] = json!("cpu_s");
    assert_eq!(
        issues_of_value(&v),
        one(IssueKind::Semantic, "$.cases[0].drift.metric")
    );
}
