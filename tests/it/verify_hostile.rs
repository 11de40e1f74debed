//! Hostile and oversized records: verification keeps its peak memory within
//! a small multiple of the input, never echoes a large value whole, and
//! names what is wrong precisely (duplicate members, unknown versions, the
//! path of a value the typed decoder refuses).
//!
//! Peak memory is measured in a child process: the test binary runs itself
//! on one input (`verify_in_a_child_process` below, selected by an
//! environment variable) and reports its own `VmHWM` from
//! `/proc/self/status` after verifying.

use std::path::{Path, PathBuf};
use std::process::Command;

use benchops::jcs;
use benchops::record::{Outcome, ResultRecord};
use benchops::seal::{IssueKind, SealedRecord, VerifyError, seal, seal_json, verify};
use benchops::{Finite, Sha256Digest};
use serde_json::{Value, json};

/// Set in the child to the file it verifies.
const INPUT_VAR: &str = "BENCHOPS_VERIFY_MEMORY_INPUT";
/// Set in the child to the digest the file must have, if any.
const DIGEST_VAR: &str = "BENCHOPS_VERIFY_MEMORY_DIGEST";

/// Every input is about this large.
const INPUT_BYTES: usize = 20 << 20;
/// The bound: peak resident memory at most this many times the input...
const FACTOR: u64 = 8;
/// ...plus this much for the program itself (code, schemas, allocator).
const ALLOWANCE_KIB: u64 = 16 << 10;

fn example() -> SealedRecord {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/result.draft.json");
    seal_json(&std::fs::read(p).expect("example draft readable")).expect("the example seals")
}

fn example_value() -> Value {
    jcs::parse(example().bytes()).expect("sealed bytes parse")
}

fn err(bytes: &[u8]) -> VerifyError {
    match verify(bytes, None) {
        Ok(_) => panic!(
            "accepted: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
        ),
        Err(e) => e,
    }
}

/// The child's side: verify one file and print the outcome and the peak.
/// Run directly (no input named), it checks the example instead, so it is a
/// test in its own right.
#[test]
fn verify_in_a_child_process() {
    let Some(input) = std::env::var_os(INPUT_VAR) else {
        let s = example();
        verify(s.bytes(), Some(&s.digest())).expect("the sealed example verifies");
        return;
    };
    let bytes = std::fs::read(&input).expect("input readable");
    let expected = std::env::var(DIGEST_VAR)
        .ok()
        .map(|hex| Sha256Digest::from_hex(&hex).expect("digest"));
    let outcome = match verify(&bytes, expected.as_ref()) {
        Ok(s) => format!("valid {}", s.digest()),
        Err(e) => {
            let longest = e.issues.iter().map(|i| i.reason.len()).max().unwrap_or(0);
            format!(
                "invalid {} {} {} longest-reason={longest}",
                e.issues[0].kind,
                e.issues[0].path,
                e.issues.len()
            )
        }
    };
    drop(bytes);
    let status = std::fs::read_to_string("/proc/self/status").expect("proc status");
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .expect("VmHWM line")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .to_owned();
    println!("outcome: {outcome}");
    println!("peak-kib: {hwm}");
}

struct Measured {
    outcome: String,
    peak_kib: u64,
}

fn measure(bytes: &[u8], digest: Option<Sha256Digest>) -> Measured {
    let dir = tempfile::tempdir().expect("tempdir");
    let input: PathBuf = dir.path().join("record.json");
    std::fs::write(&input, bytes).expect("writes input");
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args([
        "verify_hostile::verify_in_a_child_process",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(INPUT_VAR, &input)
    .env_remove(DIGEST_VAR);
    if let Some(d) = digest {
        cmd.env(DIGEST_VAR, d.hex());
    }
    let out = cmd.output().expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.split_once(name).map(|(_, rest)| rest))
            .unwrap_or_else(|| panic!("no {name} in child output:\n{stdout}"))
            .trim()
            .to_owned()
    };
    Measured {
        outcome: field("outcome:"),
        peak_kib: field("peak-kib:").parse().expect("a number of KiB"),
    }
}

fn assert_bounded(what: &str, input_len: usize, m: &Measured) {
    let input_kib = (input_len / 1024) as u64;
    let bound = FACTOR * input_kib + ALLOWANCE_KIB;
    eprintln!(
        "{what}: input {input_kib} KiB, peak {} KiB ({:.1}x the input), bound {bound} KiB; {}",
        m.peak_kib,
        m.peak_kib as f64 / input_kib as f64,
        m.outcome
    );
    assert!(
        m.peak_kib <= bound,
        "{what}: peak {} KiB is above {FACTOR} x {input_kib} KiB + {ALLOWANCE_KIB} KiB ({})",
        m.peak_kib,
        m.outcome
    );
}

/// A legal record whose first metric holds enough samples to reach
/// [`INPUT_BYTES`].
fn sample_heavy_record() -> SealedRecord {
    let mut r: ResultRecord = example().record().clone();
    let case = r
        .cases
        .iter_mut()
        .find(|c| c.outcome == Outcome::Pass && !c.metrics.is_empty())
        .expect("a passing case with metrics");
    let metric = &mut case.metrics[0];
    // Wall times in milliseconds' precision (0.237 s), as in the example.
    let n = INPUT_BYTES / 5;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let samples: Vec<f64> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (200 + state % 800) as f64 / 1000.0
        })
        .collect();
    let summary = benchops::stats::Summary::of(&samples).expect("non-empty");
    metric.samples = samples
        .iter()
        .map(|&v| Some(Finite::new(v).expect("finite")))
        .collect();
    let s = metric.summary.as_mut().expect("a summary");
    s.n = summary.n as u64;
    s.median = Finite::new(summary.median).expect("finite");
    s.mad = Finite::new(summary.mad).expect("finite");
    s.min = Finite::new(summary.min).expect("finite");
    s.max = Finite::new(summary.max).expect("finite");
    s.ci = None;
    seal(&r).expect("the sample-heavy record seals")
}

#[test]
fn a_sample_heavy_legal_record_verifies_within_the_memory_bound() {
    let sealed = sample_heavy_record();
    assert!(
        sealed.bytes().len() >= INPUT_BYTES,
        "{}",
        sealed.bytes().len()
    );
    let m = measure(sealed.bytes(), Some(sealed.digest()));
    assert_bounded("sample-heavy record", sealed.bytes().len(), &m);
    assert_eq!(m.outcome, format!("valid {}", sealed.digest()));
}

#[test]
fn a_giant_string_verifies_within_the_memory_bound() {
    // A skipped case's reason of 20 MB is legal.
    let mut v = example_value();
    assert_eq!(v["cases"][2]["outcome"], "skipped");
    v["cases"][2]["skip_reason"] = json!("r".repeat(INPUT_BYTES));
    let bytes = jcs::canonical_bytes(&v);
    let m = measure(&bytes, None);
    assert_bounded("giant string", bytes.len(), &m);
    assert!(m.outcome.starts_with("valid "), "{}", m.outcome);

    // The same string where the schema wants a short lane name: refused,
    // with a short message.
    let mut v = example_value();
    v["lane"] = json!("l".repeat(INPUT_BYTES));
    let bytes = jcs::canonical_bytes(&v);
    let m = measure(&bytes, None);
    assert_bounded("giant lane name", bytes.len(), &m);
    let longest: usize = m
        .outcome
        .rsplit_once("longest-reason=")
        .and_then(|(_, n)| n.parse().ok())
        .expect("longest reason");
    assert!(longest < 300, "a message echoed the value: {}", m.outcome);
    assert!(
        m.outcome.starts_with("invalid schema $.lane "),
        "{}",
        m.outcome
    );
}

/// `[0,0,0,…]` of about [`INPUT_BYTES`].
fn wide_zeros() -> String {
    let mut s = String::with_capacity(INPUT_BYTES + 2);
    s.push('[');
    while s.len() < INPUT_BYTES {
        s.push_str("0,");
    }
    s.push_str("0]");
    s
}

#[test]
fn wide_arrays_are_checked_within_the_memory_bound() {
    // Where a string belongs: refused as too large to check.
    let mut v = example_value();
    v["lane"] = Value::Null;
    let text = String::from_utf8(jcs::canonical_bytes(&v)).expect("UTF-8");
    let bytes = text.replacen("\"lane\":null", &format!("\"lane\":{}", wide_zeros()), 1);
    let m = measure(bytes.as_bytes(), None);
    assert_bounded("wide array as the lane", bytes.len(), &m);
    assert!(
        m.outcome.starts_with("invalid schema $.lane["),
        "{}",
        m.outcome
    );

    // Where the cases belong: every element is checked on its own.
    let bytes = text.replacen("\"lane\":null", "\"lane\":\"nightly\"", 1);
    let i = bytes.find("\"cases\":[").expect("cases") + "\"cases\":".len();
    let j = bytes[i..].find("],\"environment\"").expect("end of cases") + i + 1;
    let bytes = format!("{}{}{}", &bytes[..i], wide_zeros(), &bytes[j..]);
    let m = measure(bytes.as_bytes(), None);
    assert_bounded("wide array as the cases", bytes.len(), &m);
    assert!(
        m.outcome.starts_with("invalid schema $.cases[0] "),
        "{}",
        m.outcome
    );
    assert!(m.outcome.contains(" 101 "), "a bounded list: {}", m.outcome);

    // As the whole document.
    let bytes = wide_zeros();
    let m = measure(bytes.as_bytes(), None);
    assert_bounded("wide array as the document", bytes.len(), &m);
    assert!(m.outcome.starts_with("invalid schema $["), "{}", m.outcome);
}

#[test]
fn deep_nesting_is_refused_within_the_memory_bound() {
    let mut s = "[".repeat(INPUT_BYTES / 2);
    s.push_str(&"]".repeat(INPUT_BYTES / 2));
    let m = measure(s.as_bytes(), None);
    assert_bounded("deep nesting", s.len(), &m);
    assert!(
        m.outcome.starts_with("invalid malformed-json $ "),
        "{}",
        m.outcome
    );
}

#[test]
fn schema_errors_quote_a_prefix_of_a_large_value_and_its_length() {
    let mut v = example_value();
    v["lane"] = json!("a".repeat(200_000));
    let e = err(&jcs::canonical_bytes(&v));
    let lane = e
        .issues
        .iter()
        .find(|i| i.path.to_string() == "$.lane")
        .unwrap_or_else(|| panic!("no issue at $.lane: {e}"));
    assert_eq!(lane.kind, IssueKind::Schema);
    assert!(lane.reason.len() < 200, "{}", lane.reason);
    assert!(
        lane.reason
            .contains(&format!("\"{}…\" (200000 bytes)", "a".repeat(63))),
        "{}",
        lane.reason
    );

    // A semantic issue that names a long drift metric.
    let mut v = example_value();
    let case = v["cases"]
        .as_array_mut()
        .expect("cases")
        .iter_mut()
        .find(|c| c["outcome"] == "drift")
        .expect("a drift case");
    case["drift"]["metric"] = json!("m".repeat(100_000));
    let e = err(&jcs::canonical_bytes(&v));
    for i in &e.issues {
        assert!(
            i.reason.len() < 300,
            "{} at {}: {} bytes",
            i.kind,
            i.path,
            i.reason.len()
        );
    }
    assert!(
        e.issues.iter().any(|i| i.reason.contains("(100000 bytes)")),
        "{e:?}"
    );
}

#[test]
fn an_unknown_version_too_large_for_a_number_is_still_an_unknown_version() {
    let s = example();
    let text = String::from_utf8(s.bytes().to_vec()).expect("UTF-8");
    let tampered = text.replacen(
        "\"schema\":\"benchmark-result/v1\"",
        "\"schema\":\"benchmark-result/v99999999999999999999\"",
        1,
    );
    let e = err(tampered.as_bytes());
    assert_eq!(e.issues.len(), 1, "{e:?}");
    assert_eq!(e.issues[0].kind, IssueKind::UnknownSchemaVersion, "{e}");
    assert_eq!(e.issues[0].path.to_string(), "$.schema");
    assert!(e.issues[0].reason.contains("v99999999999999999999"), "{e}");
}

#[test]
fn a_decode_error_names_the_field_path() {
    // Schema-valid (an integer >= 0) but not a u64.
    let s = example();
    let text = String::from_utf8(s.bytes().to_vec()).expect("UTF-8");
    let from = "\"runs\":{\"failed\":";
    let at = text.find(from).expect("record runs") + from.len();
    let end = at + text[at..].find(',').expect("next member");
    let tampered = format!("{}100000000000000000000{}", &text[..at], &text[end..]);
    let e = err(tampered.as_bytes());
    let paths: Vec<String> = e.issues.iter().map(|i| i.path.to_string()).collect();
    assert!(
        e.issues
            .iter()
            .any(|i| i.kind == IssueKind::Schema && i.path.to_string().ends_with("runs.failed")),
        "{paths:?}: {e}"
    );
    assert!(!paths.contains(&"$".to_owned()), "{paths:?}");
}

#[test]
fn a_duplicate_member_is_named_as_such() {
    let s = example();
    let text = String::from_utf8(s.bytes().to_vec()).expect("UTF-8");
    let tampered = text.replacen(
        "\"executor\":{\"host\":\"bench-01\",",
        "\"executor\":{\"host\":\"bench-01\",\"host\":\"bench-02\",",
        1,
    );
    assert_ne!(tampered, text);
    let e = err(tampered.as_bytes());
    assert_eq!(e.issues[0].kind, IssueKind::DuplicateMember, "{e}");
    assert_eq!(e.issues[0].path.to_string(), "$.executor.host");
    assert!(
        e.issues[0].reason.contains("duplicate member `host`"),
        "{}",
        e.issues[0].reason
    );
    assert!(!e.to_string().contains("escaped"), "{e}");

    // Also when the two are not next to each other, and in a draft.
    let tampered = text.replacen(
        "\"executor\":{\"host\":\"bench-01\",\"kind\":\"local\"}",
        "\"executor\":{\"host\":\"bench-01\",\"kind\":\"local\",\"host\":\"x\"}",
        1,
    );
    assert_ne!(tampered, text);
    let e = err(tampered.as_bytes());
    assert_eq!(e.issues[0].kind, IssueKind::DuplicateMember, "{e}");
    let e = seal_json(tampered.as_bytes()).expect_err("a draft with a duplicate");
    assert_eq!(e.issues[0].kind, IssueKind::DuplicateMember, "{e}");
    assert_eq!(e.issues[0].path.to_string(), "$.executor.host");
}

/// The example with a confidence interval whose seed is `seed`.
fn with_ci_seed(seed: Value) -> Value {
    let mut v = example_value();
    let summary = &mut v["cases"][0]["metrics"][0]["summary"];
    let (low, high) = (summary["min"].clone(), summary["max"].clone());
    summary["ci"] = json!({
        "level": 0.95,
        "low": low,
        "high": high,
        "method": "bootstrap-percentile",
        "resamples": 1000,
        "seed": seed,
    });
    v
}

#[test]
fn a_draft_with_an_integer_above_two_to_the_53_is_refused_with_its_path() {
    let v = with_ci_seed(json!(9_007_199_254_740_993u64));
    let draft = serde_json::to_vec_pretty(&v).expect("serializes");
    let e = seal_json(&draft).expect_err("lossy draft refused");
    assert_eq!(e.issues.len(), 1, "{e:?}");
    assert_eq!(e.issues[0].kind, IssueKind::LossyNumber);
    assert_eq!(
        e.issues[0].path.to_string(),
        "$.cases[0].metrics[0].summary.ci.seed"
    );
    assert!(e.issues[0].reason.contains("9007199254740993"), "{e}");
    assert!(e.issues[0].reason.contains("9007199254740992"), "{e}");

    // 2^53 and 2^54 are doubles: exact, and sealed.
    for exact in [1u64 << 53, 1u64 << 54] {
        let v = with_ci_seed(json!(exact));
        let sealed = seal_json(&serde_json::to_vec(&v).expect("serializes"))
            .expect("an exact integer seals");
        let ci = sealed.record().cases[0].metrics[0]
            .summary
            .as_ref()
            .and_then(|s| s.ci.as_ref())
            .expect("ci");
        assert_eq!(ci.seed, exact);
    }
}

#[test]
fn semantic_problems_are_listed_up_to_a_bound_and_counted() {
    // A small record that breaks one rule a thousand times.
    let mut v = example_value();
    let ids: Vec<Value> = (0..1000).map(|i| json!(format!("ghost/{i:04}"))).collect();
    v["publication"]["cleared"] = Value::Array(ids);
    let e = match seal_json(&serde_json::to_vec(&v).expect("serializes")) {
        Ok(_) => panic!("a record clearing unknown cases is refused"),
        Err(e) => e,
    };
    let semantic: Vec<_> = e
        .issues
        .iter()
        .filter(|i| i.kind == IssueKind::Semantic)
        .collect();
    assert_eq!(
        semantic.len(),
        101,
        "100 listed and one that counts the rest"
    );
    let last = semantic.last().expect("the count");
    assert!(
        last.reason
            .starts_with("only the first 100 of 1000 semantic problems are listed"),
        "{}",
        last.reason
    );
}
