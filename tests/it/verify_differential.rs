//! The one-pass verifier (`benchops::onepass`) against the reference:
//! RFC 8785 canonical form (`jcs::check_canonical`), the JSON Schema of the
//! record's version validated by `jsonschema` over the whole document, the
//! typed decoder and the semantic checks. Over a corpus of valid records
//! and thousands of near-valid mutants of them, both must give the same
//! verdict, the same record when they accept, and `verify` must report
//! exactly what the reporting path reports (ADR 0007).

use benchops::jcs;
use benchops::record::ResultRecord;
use benchops::schema::Contract;
use benchops::seal::{semantic_issues, verify, verify_owned, verify_reported};
use benchops::stats::SplitMix64;
use serde_json::{Value, json};

/// The record the reference accepts, or `None`.
fn reference(bytes: &[u8]) -> Option<ResultRecord> {
    let value = jcs::parse(bytes).ok()?;
    jcs::check_canonical(bytes, &value).ok()?;
    let contract = match value.get("schema").and_then(Value::as_str) {
        Some("benchmark-result/v1") => Contract::BenchmarkResultV1,
        Some("benchmark-result/v2") => Contract::BenchmarkResultV2,
        Some("benchmark-result/v3") => Contract::BenchmarkResultV3,
        _ => return None,
    };
    contract.validate(&value).ok()?;
    let record: ResultRecord = serde_json::from_value(value).ok()?;
    semantic_issues(&record).is_empty().then_some(record)
}

/// The record the one pass accepts (with the semantic checks `verify`
/// applies after it), or `None`.
fn one_pass(bytes: &[u8]) -> Option<ResultRecord> {
    benchops::onepass::decode(bytes).filter(|r| semantic_issues(r).is_empty())
}

#[derive(Debug, Default)]
struct Tally {
    accepted: usize,
    refused: usize,
}

/// Checks one input; panics with the input on any disagreement.
fn agree(bytes: &[u8], what: &str, tally: &mut Tally) {
    let fast = one_pass(bytes);
    let slow = reference(bytes);
    let shown = || String::from_utf8_lossy(&bytes[..bytes.len().min(400)]).into_owned();
    assert_eq!(
        fast.is_some(),
        slow.is_some(),
        "{what}: the one pass says {}, the reference says {}\n{}",
        verdict(fast.is_some()),
        verdict(slow.is_some()),
        shown()
    );
    assert_eq!(fast, slow, "{what}: the records differ\n{}", shown());
    // `verify` reports exactly what the reporting path reports.
    assert_eq!(
        verify(bytes, None),
        verify_reported(bytes, None),
        "{what}: verify and verify_reported differ\n{}",
        shown()
    );
    // `verify_owned` (how history is read back) is `verify` on a buffer it
    // may keep.
    assert_eq!(
        verify_owned(bytes.to_vec(), None),
        verify(bytes, None),
        "{what}: verify_owned and verify differ\n{}",
        shown()
    );
    if fast.is_some() {
        tally.accepted += 1;
    } else {
        tally.refused += 1;
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "valid" } else { "invalid" }
}

fn seeds() -> Vec<(&'static str, Value)> {
    let read = |text: &str| -> Value { serde_json::from_str(text).expect("seed is JSON") };
    let v1 = read(include_str!("../../examples/result.draft.json"));
    let v2 = read(include_str!("../../examples/result-v2.draft.json"));
    let v3 = read(include_str!("../../examples/result-v3.draft.json"));
    // A v3 record that fell back to the stored baseline: no same-session
    // evidence, no bisection (both members absent).
    let mut v3_fallback = v3.clone();
    v3_fallback["comparison"]["confirm"] = json!({
        "mode": "stored-baseline",
        "requested": "same-session",
        "fallback_reason": "the baseline commit is not in the subject's checkout"
    });
    let comparison = v3_fallback["comparison"].as_object_mut().expect("object");
    comparison.remove("bisection");
    let large_key = &mut comparison["keys"][1];
    large_key["decided_by"] = json!("stored_baseline");
    large_key
        .as_object_mut()
        .expect("object")
        .remove("same_session");
    // A v3 bisection that proved a range and named no culprit.
    let mut v3_range = v3.clone();
    let bisection = &mut v3_range["comparison"]["bisection"];
    bisection["culprit"] = Value::Null;
    bisection["good"] = bisection["commits"][0].clone();
    bisection["reason"] = json!("step at commit 2 did not decide: noise");
    bisection["steps"][0]["finding"] = json!("undecided");
    bisection["steps"]
        .as_array_mut()
        .expect("steps")
        .truncate(1);
    // A v3 record of an unscheduled run.
    let mut v3_unscheduled = v3.clone();
    v3_unscheduled["unscheduled"] = json!("checking a hotfix by hand");
    // A v3 record of a run that `lane due` started after passing over
    // two slots by the lane's catch-up policy.
    let mut v3_skipped = v3.clone();
    let slot: jiff::Timestamp = v3["slot"].as_str().expect("slot").parse().expect("instant");
    v3_skipped["skipped"] = json!({
        "catch_up": "latest",
        "count": 2,
        "first": (slot - jiff::SignedDuration::from_hours(48)).to_string(),
        "last": (slot - jiff::SignedDuration::from_hours(24)).to_string(),
    });
    let large = read(include_str!("../fixtures/records/large.draft.json"));
    // A v1 record run on Slurm, with no baseline and nothing proposed.
    let mut slurm = v1.clone();
    slurm["executor"] = json!({"kind": "slurm", "cluster": "hpc", "job_ids": ["1777", "1778"]});
    // A v1 record whose only case failed: nothing measured, nothing proposed.
    let mut failed = v1.clone();
    failed["cases"] = json!([failed["cases"][3].clone()]);
    failed["runs"] = failed["cases"][0]["runs"].clone();
    failed["case_counts"] = json!({"total": 1, "pass": 0, "drift": 0, "skipped": 0, "error": 1});
    failed["publication"] = json!({"drift_reports": [], "cleared": [], "baseline_proposal": null});
    let seeds = vec![
        ("v1 example", v1),
        ("v2 example", v2),
        ("v3 example", v3),
        ("v3 stored-baseline fallback", v3_fallback),
        ("v3 bisection without a culprit", v3_range),
        ("v3 unscheduled", v3_unscheduled),
        ("v3 skipped", v3_skipped),
        ("large v1", large),
        ("v1 on slurm", slurm),
        ("v1 with one failed case", failed),
    ];
    for (name, v) in &seeds {
        let bytes = jcs::canonical_bytes(v);
        assert!(reference(&bytes).is_some(), "seed {name} is valid");
    }
    seeds
}

#[test]
fn the_seeds_are_accepted_by_both() {
    let mut tally = Tally::default();
    for (name, v) in seeds() {
        agree(&jcs::canonical_bytes(&v), name, &mut tally);
    }
    assert_eq!(tally.refused, 0);
}

// ---- mutations of the document ------------------------------------------

/// Every place in `v`, as JSON pointers.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                pointers(
                    c,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                pointers(c, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

fn pick<'a, T>(rng: &mut SplitMix64, items: &'a [T]) -> &'a T {
    &items[(rng.next_u64() % items.len() as u64) as usize]
}

/// Values at the edges of what the schemas and types allow.
fn edge_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(-1),
        json!(0.5),
        json!(1.0e21),
        json!(1.0e-7),
        json!(2.5e-300),
        json!(1.7976931348623157e308),
        json!(9007199254740992u64),
        json!(9007199254740994u64),
        json!(4294967295u64),
        json!(4294967296u64),
        json!(0.9999999999999999),
        json!(1.0000000000000002),
        json!(0.30000000000000004),
        json!(""),
        json!("x"),
        json!("a..b"),
        json!(".hidden"),
        json!("a/b"),
        json!("owner/name"),
        json!("owner/na/me"),
        json!("p=1,q=2+3"),
        json!("with space"),
        json!("tab\there"),
        json!("\u{1}control"),
        json!("quote\"and\\backslash"),
        json!("caf\u{e9}"),
        json!("\u{2028}\u{7f}"),
        json!("\u{1F600}"),
        json!("x".repeat(32)),
        json!("x".repeat(33)),
        json!("x".repeat(64)),
        json!("x".repeat(65)),
        json!("\u{e9}".repeat(128)),
        json!("\u{e9}".repeat(129)),
        json!("x".repeat(200)),
        json!("x".repeat(201)),
        json!("1234"),
        json!("12a4"),
        json!("2026-11-30T01:00:00Z"),
        json!("2026-11-30T01:00:00.123456789Z"),
        json!("2026-11-30T01:00:00.1234567890Z"),
        json!("2026-11-30T01:00:00.Z"),
        json!("2026-11-30 01:00:00Z"),
        json!("2026-11-30T01:00:00+00:00"),
        json!("2026-13-40T25:61:61Z"),
        json!(format!("sha256:{}", "a".repeat(64))),
        json!(format!("sha256:{}", "A".repeat(64))),
        json!(format!("sha256:{}", "a".repeat(63))),
        json!(format!("sha1:{}", "a".repeat(64))),
        json!("a".repeat(40)),
        json!("a".repeat(41)),
        json!("b".repeat(64)),
        json!("pass"),
        json!("drift"),
        json!("skipped"),
        json!("error"),
        json!("lower_is_better"),
        json!("higher_is_better"),
        json!("confirmed"),
        json!("not_confirmed"),
        json!("within_band"),
        json!("confirmed_regression"),
        json!("suspect_regression"),
        json!("confirm_clear"),
        json!("local"),
        json!("slurm"),
        json!("benchmark-result/v1"),
        json!("benchmark-result/v2"),
        json!("benchmark-result/v3"),
        json!("benchmark-result/v4"),
        json!("same-session"),
        json!("stored-baseline"),
        json!("first_look"),
        json!("stored_baseline"),
        json!("same_session"),
        json!("a"),
        json!("b"),
        json!("good"),
        json!("mid"),
        json!("bad"),
        json!("undecided"),
        json!("build_failed"),
        json!("57fb74194eeeafe994b9eaff7ed5e48f00b50c51"),
        json!("x".repeat(255)),
        json!("x".repeat(256)),
        json!([]),
        json!([1]),
        json!(["1"]),
        json!([null]),
        json!({}),
        json!({"a": "b"}),
    ]
}

/// A string like `s` but slightly different.
fn nudge_string(rng: &mut SplitMix64, s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    match rng.next_u64() % 6 {
        0 => chars.push(*pick(rng, &['x', '.', '/', '\n', '\u{e9}', 'Z', '0'])),
        1 if !chars.is_empty() => {
            chars.pop();
        }
        2 if !chars.is_empty() => {
            let i = (rng.next_u64() % chars.len() as u64) as usize;
            chars[i] = chars[i].to_ascii_uppercase();
        }
        3 if !chars.is_empty() => {
            let i = (rng.next_u64() % chars.len() as u64) as usize;
            chars[i] = *pick(rng, &['a', 'f', 'g', '0', '9', '-', '_', '.', '\u{0}']);
        }
        4 => chars.insert(0, *pick(rng, &['.', '-', '_', 'a', '/'])),
        _ => chars.extend(['.', '.']),
    }
    chars.into_iter().collect()
}

/// A number like `n` but slightly different.
fn nudge_number(rng: &mut SplitMix64, n: f64) -> Value {
    let v = match rng.next_u64() % 7 {
        0 => n + 1.0,
        1 => n - 1.0,
        2 => -n,
        3 => n * 1.5,
        4 => f64::from_bits(n.to_bits().wrapping_add(1)),
        5 => n.floor() + 0.5,
        _ => 0.0,
    };
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

fn mutate(rng: &mut SplitMix64, doc: &mut Value, edges: &[Value]) {
    let mut all = Vec::new();
    pointers(doc, String::new(), &mut all);
    let at = pick(rng, &all).clone();
    let Some(node) = doc.pointer_mut(&at) else {
        return;
    };
    match rng.next_u64() % 5 {
        // Another value from the edges.
        0 | 1 => *node = pick(rng, edges).clone(),
        // A nudge of what is there.
        2 => match node {
            Value::String(s) => *s = nudge_string(rng, s),
            Value::Number(n) => *node = nudge_number(rng, n.as_f64().unwrap_or(0.0)),
            Value::Bool(b) => *b = !*b,
            Value::Null => *node = pick(rng, edges).clone(),
            Value::Array(a) => {
                if a.is_empty() {
                    a.push(json!(1));
                } else {
                    let i = (rng.next_u64() % a.len() as u64) as usize;
                    a.remove(i);
                }
            }
            Value::Object(m) => {
                let keys: Vec<String> = m.keys().cloned().collect();
                if let Some(k) = keys.get((rng.next_u64() % keys.len().max(1) as u64) as usize) {
                    m.remove(k);
                }
            }
        },
        // Structure: a member more, an element twice.
        3 => match node {
            Value::Object(m) => {
                let name = pick(
                    rng,
                    &[
                        "aaa",
                        "zzz",
                        "comparison",
                        "drift",
                        "confirm",
                        "bisection",
                        "decided_by",
                        "same_session",
                        "\u{1F600}",
                        "\u{FB01}",
                    ],
                );
                m.insert((*name).to_owned(), pick(rng, edges).clone());
            }
            Value::Array(a) if !a.is_empty() => {
                let first = a[0].clone();
                a.push(first);
            }
            _ => *node = Value::Null,
        },
        // A free-text change that keeps the record valid where the field
        // is free (summaries, messages, units, hosts).
        _ => {
            if let Value::String(s) = node {
                let more: &[&str] = &[" more", "\u{e9}", "\u{1F600}", "\"", "\\", "\u{1}", "\t"];
                s.push_str(pick::<&str>(rng, more));
            }
        }
    }
}

#[test]
fn mutants_of_the_document_get_the_same_verdict() {
    let edges = edge_values();
    let mut rng = SplitMix64::new(0x0b5e_55ed);
    let mut tally = Tally::default();
    let per_seed: usize = std::env::var("BENCHOPS_DIFFERENTIAL_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    for (name, seed) in seeds() {
        // The large record costs the reference most; fewer of it.
        let n = if name == "large v1" {
            per_seed / 8
        } else {
            per_seed
        };
        for k in 0..n {
            let mut doc = seed.clone();
            for _ in 0..=(rng.next_u64() % 3) {
                mutate(&mut rng, &mut doc, &edges);
            }
            let bytes = jcs::canonical_bytes(&doc);
            agree(&bytes, &format!("{name}, mutant {k}"), &mut tally);
        }
    }
    // Both verdicts must be well represented, or the test shows nothing.
    assert!(tally.accepted >= 100, "{tally:?}");
    assert!(tally.refused >= 500, "{tally:?}");
    eprintln!("document mutants: {tally:?}");
}

/// Every JSON pointer of `v` with array indices written `*`: the place in
/// the schema a value sits at.
fn schema_place(pointer: &str) -> String {
    pointer
        .split('/')
        .map(|p| {
            if p.bytes().all(|b| b.is_ascii_digit()) && !p.is_empty() {
                "*"
            } else {
                p
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// One change at every place of the schema that `seed` fills: each edge
/// value of the same JSON type (and `null` and one of another type) in
/// place of a leaf, each member of an object removed, an unknown member
/// added, an array emptied and its first element doubled. `within` keeps
/// the places it accepts (every place: `|_| true`).
fn exhaustive(name: &str, seed: &Value, within: fn(&str) -> bool, tally: &mut Tally) {
    let edges = edge_values();
    let mut all = Vec::new();
    pointers(seed, String::new(), &mut all);
    let mut seen = std::collections::BTreeSet::new();
    all.retain(|p| within(p) && seen.insert(schema_place(p)));
    let same_type = |a: &Value, b: &Value| {
        std::mem::discriminant(a) == std::mem::discriminant(b) || (a.is_number() && b.is_number())
    };
    for at in &all {
        let node = seed.pointer(at).expect("pointer of the seed");
        let mut variants: Vec<Value> = Vec::new();
        match node {
            Value::Object(m) => {
                for k in m.keys() {
                    let mut smaller = m.clone();
                    smaller.remove(k);
                    variants.push(Value::Object(smaller));
                }
                let mut larger = m.clone();
                larger.insert("zzz".into(), json!(1));
                variants.push(Value::Object(larger));
                variants.push(Value::Null);
            }
            Value::Array(a) => {
                variants.push(json!([]));
                if let Some(first) = a.first() {
                    let mut doubled = a.clone();
                    doubled.push(first.clone());
                    variants.push(Value::Array(doubled));
                    variants.push(first.clone());
                }
                variants.push(Value::Null);
            }
            leaf => {
                variants.extend(edges.iter().filter(|e| same_type(leaf, e)).cloned());
                variants.push(Value::Null);
                variants.push(if leaf.is_string() {
                    json!(1)
                } else {
                    json!("1")
                });
            }
        }
        for (k, variant) in variants.into_iter().enumerate() {
            let mut doc = seed.clone();
            *doc.pointer_mut(at).expect("pointer of the seed") = variant;
            agree(
                &jcs::canonical_bytes(&doc),
                &format!("{name}: {at}, variant {k}"),
                tally,
            );
        }
    }
}

#[test]
fn every_single_change_to_the_v1_example_gets_the_same_verdict() {
    let mut tally = Tally::default();
    for (name, seed) in seeds() {
        if name.starts_with("v1") {
            exhaustive(name, &seed, |_| true, &mut tally);
        }
    }
    assert!(tally.accepted >= 100 && tally.refused >= 1000, "{tally:?}");
    eprintln!("single changes (v1): {tally:?}");
}

#[test]
fn every_single_change_to_the_v2_example_gets_the_same_verdict() {
    let mut tally = Tally::default();
    let (name, seed) = seeds()
        .into_iter()
        .find(|(n, _)| *n == "v2 example")
        .expect("the v2 seed");
    exhaustive(name, &seed, |_| true, &mut tally);
    assert!(tally.accepted >= 100 && tally.refused >= 1000, "{tally:?}");
    eprintln!("single changes (v2): {tally:?}");
}

/// The v3 seeds share every place outside `comparison` with the v2 seed,
/// which the test above changes one at a time. Here: for the v3 example,
/// the root's members, the schema tag and every place of the comparison;
/// for the other v3 seeds, the places where they differ from it.
#[test]
fn every_single_change_to_the_v3_examples_gets_the_same_verdict() {
    let mut tally = Tally::default();
    for (name, seed) in seeds() {
        let within: fn(&str) -> bool = match name {
            "v3 example" => |p| p.is_empty() || p == "/schema" || p.starts_with("/comparison"),
            _ if name.starts_with("v3") => |p| {
                p == "/comparison"
                    || p == "/unscheduled"
                    || p.starts_with("/skipped")
                    || p.starts_with("/comparison/confirm")
                    || p.starts_with("/comparison/bisection")
                    || p.starts_with("/comparison/keys/1/decided_by")
            },
            _ => continue,
        };
        exhaustive(name, &seed, within, &mut tally);
    }
    assert!(tally.accepted >= 100 && tally.refused >= 1000, "{tally:?}");
    eprintln!("single changes (v3): {tally:?}");
}

// ---- mutations of the bytes ---------------------------------------------

/// Spellings that break canonical form without changing what is meant, or
/// break the text outright.
fn mutate_bytes(rng: &mut SplitMix64, canonical: &[u8]) -> Vec<u8> {
    let mut b = canonical.to_vec();
    let at = |rng: &mut SplitMix64, b: &[u8]| (rng.next_u64() % b.len() as u64) as usize;
    let positions = |b: &[u8], pred: &dyn Fn(&[u8], usize) -> bool| -> Vec<usize> {
        (0..b.len()).filter(|&i| pred(b, i)).collect()
    };
    match rng.next_u64() % 12 {
        0 => {
            let i = at(rng, &b);
            b.insert(i, *pick(rng, b" \n\t\r"));
        }
        1 => b.push(b'\n'),
        2 => {
            let i = at(rng, &b);
            b.truncate(i);
        }
        3 => {
            let i = at(rng, &b);
            b[i] = (rng.next_u64() & 0xff) as u8;
        }
        // A number spelled another way: `5` as `5.0`, `5e0` or `5E0`.
        4 | 5 => {
            let ends = positions(&b, &|b, i| {
                b[i].is_ascii_digit() && matches!(b.get(i + 1), Some(b',' | b']' | b'}'))
            });
            if let Some(&i) = ends.get((rng.next_u64() % ends.len().max(1) as u64) as usize) {
                let spellings: &[&[u8]] = &[b".0", b"e0", b"E0", b"0", b"e+0"];
                let extra = pick::<&[u8]>(rng, spellings);
                for (k, c) in extra.iter().enumerate() {
                    b.insert(i + 1 + k, *c);
                }
            }
        }
        // A character inside a string escaped when it need not be.
        6 | 7 => {
            let letters = positions(&b, &|b, i| {
                b[i].is_ascii_lowercase() && i > 0 && b[i - 1].is_ascii_lowercase()
            });
            if let Some(&i) = letters.get((rng.next_u64() % letters.len().max(1) as u64) as usize) {
                let esc = format!("\\u{:04x}", b[i]);
                let esc = if rng.next_u64() % 2 == 0 {
                    esc.to_uppercase().replace("\\U", "\\u")
                } else {
                    esc
                };
                b.splice(i..=i, esc.into_bytes());
            }
        }
        // `\/` for `/`.
        8 => {
            let slashes = positions(&b, &|b, i| b[i] == b'/');
            if let Some(&i) = slashes.first() {
                b.insert(i, b'\\');
            }
        }
        // A leading zero or a plus sign.
        9 => {
            let starts = positions(&b, &|b, i| {
                b[i].is_ascii_digit() && i > 0 && matches!(b[i - 1], b':' | b',' | b'[')
            });
            if let Some(&i) = starts.get((rng.next_u64() % starts.len().max(1) as u64) as usize) {
                b.insert(i, *pick(rng, b"0+-"));
            }
        }
        // A member moved out of order: `schema` first.
        10 => {
            let text = String::from_utf8_lossy(&b).into_owned();
            for tag in [
                ",\"schema\":\"benchmark-result/v1\"",
                ",\"schema\":\"benchmark-result/v2\"",
                ",\"schema\":\"benchmark-result/v3\"",
            ] {
                if let Some(i) = text.find(tag) {
                    let mut moved = String::from("{");
                    moved.push_str(&tag[1..]);
                    moved.push(',');
                    moved.push_str(&text[1..i]);
                    moved.push_str(&text[i + tag.len()..]);
                    b = moved.into_bytes();
                }
            }
        }
        // The same member twice.
        _ => {
            let text = String::from_utf8_lossy(&b).into_owned();
            if let Some(i) = text.find(",\"lane\":") {
                let end = text[i + 1..].find(',').map_or(text.len(), |e| i + 1 + e);
                let member = text[i..end].to_owned();
                let mut doubled = text.clone();
                doubled.insert_str(end, &member);
                b = doubled.into_bytes();
            }
        }
    }
    b
}

#[test]
fn mutants_of_the_bytes_get_the_same_verdict() {
    let mut rng = SplitMix64::new(0xc0ff_ee00);
    let mut tally = Tally::default();
    for (name, seed) in seeds() {
        let canonical = jcs::canonical_bytes(&seed);
        let n = if name == "large v1" { 40 } else { 300 };
        for k in 0..n {
            let bytes = mutate_bytes(&mut rng, &canonical);
            agree(&bytes, &format!("{name}, byte mutant {k}"), &mut tally);
        }
    }
    assert!(tally.refused >= 1000, "{tally:?}");
    eprintln!("byte mutants: {tally:?}");
}

#[test]
fn facts_sort_by_utf16_code_units_not_by_bytes() {
    let mut tally = Tally::default();
    let mut v: Value =
        serde_json::from_str(include_str!("../../examples/result.draft.json")).expect("example");
    let mut facts = serde_json::Map::new();
    // U+FB01 sorts before U+1F600 by bytes and after it by UTF-16 units.
    facts.insert("\u{FB01}".into(), json!("ligature"));
    facts.insert("\u{1F600}".into(), json!("face"));
    facts.insert("os".into(), json!("linux"));
    v["environment"]["facts"] = Value::Object(facts.clone());
    let facts_map = facts
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("string").to_owned()))
        .collect();
    v["environment"]["fingerprint"] =
        json!(benchops::record::fingerprint_of(&facts_map).to_string());
    let canonical = jcs::canonical_bytes(&v);
    agree(&canonical, "facts in canonical order", &mut tally);
    assert_eq!(tally.accepted, 1);
    // serde_json writes the members sorted by bytes: not canonical.
    let by_bytes = serde_json::to_vec(&v).expect("serializes");
    assert_ne!(by_bytes, canonical);
    agree(&by_bytes, "facts sorted by bytes", &mut tally);
    assert_eq!(tally.refused, 1);
}
