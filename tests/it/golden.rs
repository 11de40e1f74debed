//! Golden files: the sealed bytes and digest of `examples/result.draft.json`,
//! and minimal valid/invalid documents for every other contract.

use std::path::{Path, PathBuf};

use benchops::Sha256Digest;
use benchops::schema::{Contract, schema_tag};
use benchops::seal::{seal_json, verify};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> Vec<u8> {
    let p = root().join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("fixture {} unreadable: {e}", p.display()))
}

fn read_json(rel: &str) -> Value {
    serde_json::from_slice(&read(rel)).unwrap_or_else(|e| panic!("{rel} is not JSON: {e}"))
}

fn golden_digest() -> Sha256Digest {
    let text = String::from_utf8(read("tests/fixtures/golden/result.sha256")).expect("UTF-8");
    text.trim_end()
        .parse()
        .unwrap_or_else(|e| panic!("result.sha256 holds {text:?}: {e}"))
}

#[test]
fn sealing_the_example_reproduces_the_golden_bytes() {
    let golden = read("tests/fixtures/golden/result.sealed.json");
    let sealed = seal_json(&read("examples/result.draft.json")).expect("the example seals");
    assert!(
        sealed.bytes() == golden.as_slice(),
        "sealed bytes changed:\n got: {}\nwant: {}",
        String::from_utf8_lossy(sealed.bytes()),
        String::from_utf8_lossy(&golden)
    );
    assert_eq!(sealed.digest(), golden_digest());
    assert_eq!(Sha256Digest::of(&golden), golden_digest());
    assert_eq!(
        sealed.file_name(),
        format!("{}.json", golden_digest().hex())
    );
}

#[test]
fn golden_digest_file_is_exact() {
    let text = String::from_utf8(read("tests/fixtures/golden/result.sha256")).expect("UTF-8");
    assert_eq!(text.trim_end(), golden_digest().to_string());
    assert!(text.starts_with("sha256:"));
    assert_eq!(text.trim_end().len(), "sha256:".len() + 64);
}

#[test]
fn golden_bytes_verify_and_reseal_to_themselves() {
    let golden = read("tests/fixtures/golden/result.sealed.json");
    let digest = golden_digest();
    let verified = verify(&golden, Some(&digest)).expect("golden bytes verify");
    assert_eq!(verified.digest(), digest);
    // Sealing already canonical bytes is a fixed point.
    let again = seal_json(&golden).expect("golden bytes seal");
    assert_eq!(again.bytes(), golden.as_slice());
    // The typed record re-serializes to the same bytes.
    let typed = benchops::seal::seal(verified.record()).expect("typed record seals");
    assert_eq!(typed.bytes(), golden.as_slice());
}

/// The fixture stem of each non-result contract, and the path at which its
/// invalid variant is rejected.
const CONTRACTS: [(Contract, &str, &str); 5] = [
    (
        Contract::BenchmarkIntentV1,
        "benchmark-intent",
        "$.repetitions",
    ),
    (
        Contract::ScheduleManifestV1,
        "schedule-manifest",
        "$.lanes[0].baseline",
    ),
    (Contract::ReceiptV1, "receipt", "$.persisted[0].digest"),
    (Contract::BaselinePointerV1, "baseline-pointer", "$.policy"),
    (
        Contract::ScheduleManifestV2,
        "schedule-manifest-v2",
        "$.lanes[0].comparison.confirm_runs",
    ),
];

fn fixture(stem: &str, variant: &str) -> Value {
    read_json(&format!("tests/fixtures/contracts/{stem}.{variant}.json"))
}

#[test]
fn every_non_result_contract_has_fixtures() {
    for c in Contract::ALL {
        // Result records have golden files of their own (v2: tests/it/lane_records.rs).
        if matches!(c, Contract::BenchmarkResultV1 | Contract::BenchmarkResultV2) {
            continue;
        }
        let (_, stem, _) = CONTRACTS
            .iter()
            .find(|(k, _, _)| *k == c)
            .unwrap_or_else(|| panic!("{} has no fixture entry", c.id()));
        for variant in ["valid", "invalid"] {
            let p: &Path = &root().join(format!("tests/fixtures/contracts/{stem}.{variant}.json"));
            assert!(p.is_file(), "{} missing", p.display());
        }
    }
}

#[test]
fn valid_contract_examples_validate() {
    for (contract, stem, _) in CONTRACTS {
        let doc = fixture(stem, "valid");
        let (name, version) = schema_tag(&doc).expect("carries a schema tag");
        assert_eq!(format!("{name}/v{version}"), contract.id(), "{stem}");
        if let Err(errs) = contract.validate(&doc) {
            panic!("{stem}.valid.json rejected: {errs:?}");
        }
    }
}

#[test]
fn invalid_contract_examples_are_rejected_at_their_path() {
    for (contract, stem, path) in CONTRACTS {
        let doc = fixture(stem, "invalid");
        let errs = contract.validate(&doc).expect_err("invalid variant");
        let paths: Vec<String> = errs.iter().map(|e| e.path.to_string()).collect();
        assert_eq!(paths, [path], "{stem}.invalid.json: {errs:?}");
        assert!(errs.iter().all(|e| !e.reason.is_empty()), "{stem}: reasons");
    }
}

#[test]
fn contracts_reject_unknown_members_and_foreign_schema_tags() {
    for (contract, stem, _) in CONTRACTS {
        let valid = fixture(stem, "valid");

        let mut extra = valid.clone();
        extra
            .as_object_mut()
            .expect("an object")
            .insert("unexpected".into(), Value::Bool(true));
        let errs = contract.validate(&extra).expect_err("unknown member");
        assert!(
            errs.iter().any(|e| e.path.to_string() == "$"),
            "{stem}: unknown member reported at the root: {errs:?}"
        );

        for other in Contract::ALL.into_iter().filter(|o| *o != contract) {
            let mut foreign = valid.clone();
            foreign["schema"] = Value::String(other.id().into());
            let errs = contract.validate(&foreign).expect_err("foreign tag");
            assert!(
                errs.iter().any(|e| e.path.to_string() == "$.schema"),
                "{stem} tagged {}: {errs:?}",
                other.id()
            );
            // And the other contract does not accept this document either.
            assert!(
                other.validate(&foreign).is_err(),
                "{} accepted {stem}.valid.json",
                other.id()
            );
        }
    }
}
