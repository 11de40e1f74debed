//! Golden plan digests: the children and digests of fixed intents, pinned.
//!
//! Planning may get faster (precomputed fragments, parallel hashing), but
//! the bytes it hashes must never change: a benchmark planned by one
//! release is the same benchmark in the next. Each intent's child count,
//! benchmark digest, first and last child digests, and a sha256 over every
//! child digest in order are pinned in `tests/fixtures/golden/plans.json`,
//! which was written once by the planner these replaced and is never
//! regenerated to make a change pass. Every child's fast bytes are also
//! checked against the generic canonical form of its configuration.

use std::path::{Path, PathBuf};

use benchops::Sha256Digest;
use benchops::intent::from_toml;
use benchops::jcs::canonical_bytes;
use benchops::plan::plan;
use serde_json::{Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const INTENTS: [&str; 5] = [
    "examples/bench.toml",
    "examples/lane/bench.toml",
    "tests/fixtures/plans/mixed.toml",
    "tests/fixtures/plans/lookalike.toml",
    "tests/fixtures/plans/grid.toml",
];

fn summary(rel: &str) -> Value {
    let path = root().join(rel);
    let text = std::fs::read_to_string(&path).expect("fixture intent");
    let p = plan(from_toml(&text, rel).expect("valid intent")).expect("plans");
    let digests = p.child_digests();
    assert_eq!(digests.len() as u64, p.len());
    let mut all = String::new();
    for d in &digests {
        all.push_str(&d.to_string());
        all.push('\n');
    }
    json!({
        "intent": rel,
        "children": p.len(),
        "benchmark": p.benchmark_digest(&digests).to_string(),
        "first": digests.iter().take(3).map(ToString::to_string).collect::<Vec<_>>(),
        "last": digests.last().map(ToString::to_string),
        "all": Sha256Digest::of(all.as_bytes()).to_string(),
    })
}

#[test]
fn plan_digests_match_the_golden_vectors() {
    let golden_path: &Path = &root().join("tests/fixtures/golden/plans.json");
    let got: Vec<Value> = INTENTS.iter().map(|i| summary(i)).collect();
    let want: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(golden_path).expect("tests/fixtures/golden/plans.json"),
    )
    .expect("golden JSON");
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w, "plan of {} changed", w["intent"]);
    }
}

#[test]
fn every_child_of_the_golden_intents_is_its_canonical_configuration() {
    for rel in INTENTS {
        let text = std::fs::read_to_string(root().join(rel)).expect("fixture intent");
        let p = plan(from_toml(&text, rel).expect("valid")).expect("plans");
        let digests = p.child_digests();
        let step = (p.len() / 200).max(1);
        for i in (0..p.len()).step_by(step as usize) {
            let config = p.child(i).expect("exists");
            let generic = canonical_bytes(&serde_json::to_value(&config).expect("serializes"));
            assert_eq!(
                p.child_bytes(i).expect("exists"),
                generic,
                "{rel} child {i}"
            );
            assert_eq!(
                digests[i as usize],
                Sha256Digest::of(&generic),
                "{rel} child {i}"
            );
            assert_eq!(p.child_digest(i), Some(digests[i as usize]));
        }
    }
}
