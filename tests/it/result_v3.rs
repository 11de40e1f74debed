//! `benchmark-result/v3`, a lane run confirmed in the same session: golden
//! bytes of `examples/result-v3.draft.json` (a key decided by side A
//! against side B, and a bisection that names a culprit), the schema's
//! required and optional v3 members, and one test per semantic rule of the
//! v3 members (`src/seal/comparison.rs`, ADR 0008).

use std::path::PathBuf;

use benchops::jcs;
use benchops::record::{
    ConfirmMode, ConfirmModeKind, DecidedBy, RESULT_SCHEMA_V2, ResultRecord, SideRun,
};
use benchops::seal::{IssueKind, SealedRecord, seal_json, semantic_issues, verify};
use benchops::{Finite, Sha256Digest};
use serde_json::{Value, json};

fn read(rel: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{} unreadable: {e}", p.display()))
}

fn golden_digest() -> Sha256Digest {
    String::from_utf8(read("tests/fixtures/golden/result-v3.sha256"))
        .expect("UTF-8")
        .trim_end()
        .parse()
        .expect("digest")
}

fn golden() -> SealedRecord {
    let bytes = read("tests/fixtures/golden/result-v3.sealed.json");
    verify(&bytes, Some(&golden_digest())).expect("the v3 golden record verifies")
}

fn value() -> Value {
    jcs::parse(golden().bytes()).expect("parses")
}

fn record() -> ResultRecord {
    golden().record().clone()
}

/// The problems of an edited record, as (kind, path).
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

/// The semantic problems of a typed record, as paths.
fn semantic(r: &ResultRecord) -> Vec<String> {
    semantic_issues(r)
        .iter()
        .map(|i| i.path.to_string())
        .collect()
}

/// Asserts that `v` verifies with exactly one semantic issue, at `path`.
fn only_semantic(v: &Value, path: &str) {
    assert_eq!(
        problems(v),
        [(IssueKind::Semantic, path.to_owned())],
        "expected one semantic issue at {path}"
    );
}

const LARGE: usize = 1;

fn large_key(v: &mut Value) -> &mut Value {
    let k = &mut v["comparison"]["keys"][LARGE];
    assert_eq!(k["case"], "widgets/size=large");
    k
}

fn bisection(v: &mut Value) -> &mut Value {
    &mut v["comparison"]["bisection"]
}

fn commits(v: &Value) -> Vec<String> {
    v["comparison"]["bisection"]["commits"]
        .as_array()
        .expect("commits")
        .iter()
        .map(|c| c.as_str().expect("commit").to_owned())
        .collect()
}

// ---- golden bytes and versions ------------------------------------------

#[test]
fn sealing_the_v3_example_reproduces_the_golden_bytes() {
    let g = golden();
    let sealed = seal_json(&read("examples/result-v3.draft.json")).expect("the v3 example seals");
    assert_eq!(sealed.bytes(), g.bytes(), "sealed v3 bytes changed");
    assert_eq!(sealed.digest(), golden_digest());
    assert_eq!(Sha256Digest::of(g.bytes()), golden_digest());
    // The typed record writes the same bytes again.
    let typed = benchops::seal::seal(g.record()).expect("typed record seals");
    assert_eq!(typed.bytes(), g.bytes());
    assert!(g.record().is_v3() && g.record().is_v2());
    // The one pass proves it; the reporting path is not needed.
    assert_eq!(
        benchops::onepass::decode(g.bytes()).as_ref(),
        Some(g.record())
    );
    let c = g.record().comparison.as_ref().expect("comparison");
    let b = c.bisection.as_ref().expect("a bisection");
    assert_eq!(b.culprit.as_deref(), Some(b.bad.as_str()));
    assert_eq!(
        c.keys[LARGE].decided_by,
        Some(DecidedBy::SameSession),
        "the regression was decided in the same session"
    );
}

#[test]
fn one_verifier_reads_every_version() {
    let v1 = verify(&read("tests/fixtures/golden/result.sealed.json"), None).expect("v1");
    assert!(!v1.record().is_v2());
    let v2 = verify(&read("tests/fixtures/golden/result-v2.sealed.json"), None).expect("v2");
    assert!(v2.record().is_v2() && !v2.record().is_v3());
    assert!(golden().record().is_v3());
    // v4 is named as unknown, not as a schema violation.
    let mut v = value();
    v["schema"] = json!("benchmark-result/v4");
    assert_eq!(
        problems(&v),
        [(IssueKind::UnknownSchemaVersion, "$.schema".to_owned())]
    );
}

// ---- the schema -----------------------------------------------------------

#[test]
fn v3_requires_confirm_and_decided_by_and_v2_refuses_every_v3_member() {
    let mut v = value();
    v["comparison"]
        .as_object_mut()
        .expect("object")
        .remove("confirm");
    assert!(
        problems(&v).contains(&(IssueKind::Schema, "$.comparison".into())),
        "{:?}",
        problems(&v)
    );
    let mut v = value();
    v["comparison"]["keys"][0]
        .as_object_mut()
        .expect("object")
        .remove("decided_by");
    assert!(
        problems(&v).contains(&(IssueKind::Schema, "$.comparison.keys[0]".into())),
        "{:?}",
        problems(&v)
    );
    // The v3 record tagged v2: its new members are unknown there.
    let mut v = value();
    v["schema"] = json!(RESULT_SCHEMA_V2);
    let p = problems(&v);
    for at in [
        "$.comparison",
        "$.comparison.keys[0]",
        "$.comparison.keys[1]",
    ] {
        assert!(p.contains(&(IssueKind::Schema, at.into())), "{at}: {p:?}");
    }
}

#[test]
fn bisection_and_same_session_are_absent_when_none() {
    let mut v = value();
    v["comparison"]
        .as_object_mut()
        .expect("object")
        .remove("bisection");
    assert_eq!(problems(&v), []);
    // A key decided by a stored-baseline run has no same-session evidence.
    let k = large_key(&mut v);
    k.as_object_mut().expect("object").remove("same_session");
    k["decided_by"] = json!("stored_baseline");
    assert_eq!(problems(&v), []);
    // Null is not absence.
    let mut v = value();
    v["comparison"]["bisection"] = Value::Null;
    assert!(
        problems(&v).contains(&(IssueKind::Schema, "$.comparison.bisection".into())),
        "{:?}",
        problems(&v)
    );
}

#[test]
fn commits_nodes_and_sides_have_their_formats() {
    let at_runs = "$.comparison.keys[1].same_session.runs[0]";
    for (edit, path) in [
        (
            json!("57FB74194EEEAFE994B9EAFF7ED5E48F00B50C51"),
            "$.comparison.keys[1].same_session.candidate_commit",
        ),
        (
            json!("57fb741"),
            "$.comparison.keys[1].same_session.candidate_commit",
        ),
    ] {
        let mut v = value();
        large_key(&mut v)["same_session"]["candidate_commit"] = edit;
        assert!(
            problems(&v).contains(&(IssueKind::Schema, path.into())),
            "{:?}",
            problems(&v)
        );
    }
    for node in [json!(""), json!("n".repeat(256))] {
        let mut v = value();
        large_key(&mut v)["same_session"]["runs"][0]["node"] = node;
        assert!(
            problems(&v).contains(&(IssueKind::Schema, format!("{at_runs}.node"))),
            "{:?}",
            problems(&v)
        );
    }
    let mut v = value();
    large_key(&mut v)["same_session"]["runs"][0]["node"] = json!("n".repeat(255));
    assert_eq!(problems(&v), []);
    // A same-session run is side a or b; a bisection run good, mid or bad.
    let mut v = value();
    large_key(&mut v)["same_session"]["runs"][0]["side"] = json!("mid");
    assert!(
        problems(&v).contains(&(IssueKind::Schema, format!("{at_runs}.side"))),
        "{:?}",
        problems(&v)
    );
    let mut v = value();
    bisection(&mut v)["steps"][0]["runs"][0]["side"] = json!("a");
    assert!(
        problems(&v).contains(&(
            IssueKind::Schema,
            "$.comparison.bisection.steps[0].runs[0].side".into()
        )),
        "{:?}",
        problems(&v)
    );
    // A run that failed measured nothing: null, not zero.
    let mut v = value();
    large_key(&mut v)["same_session"]["runs"][0]["value"] = Value::Null;
    assert_eq!(problems(&v), []);
}

// ---- semantic rules: which version carries what ---------------------------

#[test]
fn v2_carries_none_of_the_v3_members() {
    // The schema refuses them in bytes; the typed rule holds for records
    // built in code.
    let mut r = record();
    r.schema = RESULT_SCHEMA_V2.into();
    let p = semantic(&r);
    for at in [
        "$.comparison.confirm",
        "$.comparison.bisection",
        "$.comparison.keys[0].decided_by",
        "$.comparison.keys[1].decided_by",
        "$.comparison.keys[1].same_session",
    ] {
        assert!(p.contains(&at.to_owned()), "{at}: {p:?}");
    }
}

#[test]
fn v3_says_how_it_confirmed_and_what_decided_every_key() {
    let mut r = record();
    let c = r.comparison.as_mut().expect("comparison");
    c.confirm = None;
    c.keys[0].decided_by = None;
    assert_eq!(
        semantic(&r),
        ["$.comparison.confirm", "$.comparison.keys[0].decided_by"]
    );
}

#[test]
fn a_fallback_says_why_and_only_a_fallback() {
    let mut v = value();
    v["comparison"]["confirm"]["fallback_reason"] = json!("not needed");
    only_semantic(&v, "$.comparison.confirm.fallback_reason");
    // Asked for same-session, ran stored-baseline: the record says why, and
    // no key was decided in the same session.
    let mut r = record();
    let c = r.comparison.as_mut().expect("comparison");
    c.confirm = Some(ConfirmMode {
        mode: ConfirmModeKind::StoredBaseline,
        requested: ConfirmModeKind::SameSession,
        fallback_reason: None,
    });
    assert_eq!(
        semantic(&r),
        [
            "$.comparison.confirm.fallback_reason",
            "$.comparison.keys[1].decided_by"
        ]
    );
    let c = r.comparison.as_mut().expect("comparison");
    c.confirm.as_mut().expect("confirm").fallback_reason =
        Some("the subject is not a git checkout".into());
    c.keys[LARGE].decided_by = Some(DecidedBy::StoredBaseline);
    c.keys[LARGE].same_session = None;
    assert_eq!(semantic(&r), Vec::<String>::new());
    benchops::seal::seal(&r).expect("a stored-baseline fallback seals");
}

// ---- semantic rules: same-session evidence --------------------------------

#[test]
fn same_session_evidence_is_there_exactly_when_it_decided() {
    let mut v = value();
    large_key(&mut v)
        .as_object_mut()
        .expect("object")
        .remove("same_session");
    // Without it the confirmation samples still back the verdict, so the
    // only problem is the missing evidence.
    only_semantic(&v, "$.comparison.keys[1].same_session");
    let mut v = value();
    large_key(&mut v)["decided_by"] = json!("stored_baseline");
    only_semantic(&v, "$.comparison.keys[1].same_session");
    let mut v = value();
    large_key(&mut v)["decided_by"] = json!("first_look");
    only_semantic(&v, "$.comparison.keys[1].same_session");
}

#[test]
fn a_same_session_verdict_needs_a_measured_run_on_each_side() {
    for side in ["a", "b"] {
        let mut v = value();
        for run in large_key(&mut v)["same_session"]["runs"]
            .as_array_mut()
            .expect("runs")
        {
            if run["side"] == side {
                run["value"] = Value::Null;
            }
        }
        only_semantic(&v, "$.comparison.keys[1].same_session.runs");
        let mut v = value();
        large_key(&mut v)["same_session"]["runs"]
            .as_array_mut()
            .expect("runs")
            .retain(|r| r["side"] != side);
        only_semantic(&v, "$.comparison.keys[1].same_session.runs");
    }
    // One measured run a side is enough for this rule.
    let mut r = record();
    let s = r.comparison.as_mut().expect("comparison").keys[LARGE]
        .same_session
        .as_mut()
        .expect("same session");
    let one = |side| SideRun {
        side,
        node: "vm".into(),
        value: Some(Finite::new(0.05).expect("finite")),
    };
    s.runs = vec![
        one(benchops::record::RunSide::A),
        one(benchops::record::RunSide::B),
    ];
    assert_eq!(semantic(&r), Vec::<String>::new());
}

#[test]
fn side_b_is_the_subject_commit() {
    let mut v = value();
    large_key(&mut v)["same_session"]["candidate_commit"] = json!("a".repeat(40));
    only_semantic(&v, "$.comparison.keys[1].same_session.candidate_commit");
}

#[test]
fn a_same_session_confirmation_needs_no_stored_baseline_rerun() {
    let mut v = value();
    large_key(&mut v)["confirmation"] = Value::Null;
    assert_eq!(problems(&v), []);
    // Without either, the confirmed verdict has no evidence.
    large_key(&mut v)["decided_by"] = json!("stored_baseline");
    large_key(&mut v)
        .as_object_mut()
        .expect("object")
        .remove("same_session");
    only_semantic(&v, "$.comparison.keys[1].confirmation");
}

// ---- semantic rules: the bisection ----------------------------------------

#[test]
fn a_bisection_range_has_two_bounds_and_ends_at_the_subject() {
    let mut v = value();
    let subject = v["subject"]["commit"].clone();
    bisection(&mut v)["commits"] = json!([subject]);
    // The schema says it first in bytes.
    assert!(
        problems(&v).contains(&(IssueKind::Schema, "$.comparison.bisection.commits".into())),
        "{:?}",
        problems(&v)
    );
    let mut r = record();
    let b = r
        .comparison
        .as_mut()
        .expect("comparison")
        .bisection
        .as_mut()
        .expect("bisection");
    b.commits = vec![r.subject.commit.clone()];
    assert!(
        semantic(&r).contains(&"$.comparison.bisection.commits".to_owned()),
        "{:?}",
        semantic(&r)
    );
    // The range ends elsewhere.
    let mut v = value();
    let mut c = commits(&v);
    c.push("e".repeat(40));
    bisection(&mut v)["commits"] = json!(c);
    only_semantic(&v, "$.comparison.bisection.commits");
}

#[test]
fn the_culprit_is_the_first_bad_commit_of_the_range() {
    let mut v = value();
    bisection(&mut v)["culprit"] = json!("e".repeat(40));
    let p = problems(&v);
    assert_eq!(
        p,
        [
            (IssueKind::Semantic, "$.comparison.bisection.culprit".into()),
            (IssueKind::Semantic, "$.comparison.bisection.culprit".into())
        ],
        "not in the range, and not `bad`"
    );
    let mut v = value();
    let c = commits(&v);
    bisection(&mut v)["culprit"] = json!(c[2]);
    only_semantic(&v, "$.comparison.bisection.culprit");
    // Named only when the bounds are neighbours.
    let mut v = value();
    bisection(&mut v)["good"] = json!(c[1]);
    only_semantic(&v, "$.comparison.bisection.good");
}

#[test]
fn good_precedes_bad_in_the_range() {
    let c = commits(&value());
    let mut v = value();
    bisection(&mut v)["culprit"] = Value::Null;
    bisection(&mut v)["reason"] = json!("the budget of 5 step(s) ran out");
    bisection(&mut v)["good"] = json!(c[4]);
    only_semantic(&v, "$.comparison.bisection.good");
    bisection(&mut v)["good"] = json!(c[3]);
    only_semantic(&v, "$.comparison.bisection.good");
    bisection(&mut v)["good"] = json!("e".repeat(40));
    only_semantic(&v, "$.comparison.bisection.good");
    bisection(&mut v)["good"] = json!(c[0]);
    bisection(&mut v)["bad"] = json!("e".repeat(40));
    only_semantic(&v, "$.comparison.bisection.bad");
    // A range proved without naming one commit is valid.
    bisection(&mut v)["bad"] = json!(c[5]);
    assert_eq!(problems(&v), []);
}

#[test]
fn a_reason_exactly_when_no_culprit() {
    let mut v = value();
    bisection(&mut v)["reason"] = json!("why not");
    only_semantic(&v, "$.comparison.bisection.reason");
    let mut v = value();
    bisection(&mut v)["culprit"] = Value::Null;
    only_semantic(&v, "$.comparison.bisection.reason");
}

#[test]
fn each_step_names_the_commit_at_its_index_inside_the_range() {
    let c = commits(&value());
    for index in [0, 5, 6, 1000] {
        let mut v = value();
        bisection(&mut v)["steps"][0]["index"] = json!(index);
        only_semantic(&v, "$.comparison.bisection.steps[0].index");
    }
    let mut v = value();
    bisection(&mut v)["steps"][0]["commit"] = json!(c[1]);
    only_semantic(&v, "$.comparison.bisection.steps[0].commit");
    // Index and commit moved together: a valid step.
    let mut v = value();
    bisection(&mut v)["steps"][0]["index"] = json!(1);
    bisection(&mut v)["steps"][0]["commit"] = json!(c[1]);
    assert_eq!(problems(&v), []);
}

#[test]
fn a_bisection_keeps_to_its_step_budget() {
    let mut v = value();
    bisection(&mut v)["budget_steps"] = json!(1);
    only_semantic(&v, "$.comparison.bisection.steps");
}

#[test]
fn a_bisection_follows_a_confirmed_regression_of_the_record() {
    let mut v = value();
    bisection(&mut v)["case"] = json!("widgets/size=small");
    only_semantic(&v, "$.comparison.bisection.case");
    let mut v = value();
    bisection(&mut v)["metric"] = json!("user_s");
    only_semantic(&v, "$.comparison.bisection.case");
}
