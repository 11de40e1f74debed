//! `benchops-publish validate`, run as the real binary, plus the library's
//! per-file verdicts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use benchops::Sha256Digest;
use benchops::seal::{SealedRecord, seal_json};
use benchops_publish::validate::validate_file;
use serde_json::Value;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sealed() -> SealedRecord {
    let p = workspace_root().join("examples/result.draft.json");
    let draft = std::fs::read(&p).expect("example draft readable");
    seal_json(&draft).expect("the example seals")
}

/// The sealed example with two object members swapped (not canonical).
fn reordered(s: &SealedRecord) -> Vec<u8> {
    let text = std::str::from_utf8(s.bytes()).expect("UTF-8");
    let from = "\"executor\":{\"host\":\"bench-01\",\"kind\":\"local\"}";
    assert!(text.contains(from), "example has a local executor");
    text.replacen(
        from,
        "\"executor\":{\"kind\":\"local\",\"host\":\"bench-01\"}",
        1,
    )
    .into_bytes()
}

fn run(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
        .args(args)
        .output()
        .expect("benchops-publish runs")
}

fn validate(args: &[&Path], json: bool) -> Output {
    let mut a: Vec<&std::ffi::OsStr> = vec!["validate".as_ref()];
    if json {
        a.push("--json".as_ref());
    }
    a.extend(args.iter().map(|p| p.as_os_str()));
    run(&a)
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("stderr is UTF-8")
}

/// A tempdir holding the sealed example as `<hex>.json`.
fn dir_with_valid() -> (tempfile::TempDir, SealedRecord) {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sealed();
    std::fs::write(dir.path().join(s.file_name()), s.bytes()).expect("writes");
    (dir, s)
}

#[test]
fn a_valid_sealed_file_passes() {
    let (dir, s) = dir_with_valid();
    let out = validate(&[dir.path()], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let line = text
        .lines()
        .find(|l| l.contains(&s.file_name()))
        .unwrap_or_else(|| panic!("no row for the file:\n{text}"));
    assert!(line.contains("  valid  "), "{line}");
    assert!(line.contains(&s.digest().to_string()), "{line}");
    assert!(!text.contains("INVALID"), "{text}");
    assert!(text.contains("1 file(s): 1 valid, 0 invalid"), "{text}");
}

#[test]
fn a_tampered_file_fails_with_kind_and_path() {
    let (dir, s) = dir_with_valid();
    let bad = dir.path().join("tampered.json");
    std::fs::write(&bad, reordered(&s)).expect("writes");
    let out = validate(&[dir.path()], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let line = text
        .lines()
        .find(|l| l.contains("tampered.json"))
        .unwrap_or_else(|| panic!("no row for the tampered file:\n{text}"));
    assert!(line.contains("INVALID"), "{line}");
    assert!(line.contains("not-canonical: $.executor:"), "{line}");
    assert!(text.contains("2 file(s): 1 valid, 1 invalid"), "{text}");

    // Named files work too, and the valid one alone still passes.
    let out = validate(&[&dir.path().join(s.file_name())], false);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let out = validate(&[&bad], false);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
}

#[test]
fn json_output_lists_per_file_verdicts() {
    let (dir, s) = dir_with_valid();
    std::fs::write(dir.path().join("tampered.json"), reordered(&s)).expect("writes");
    let out = validate(&[dir.path()], true);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    let verdicts = doc.as_array().expect("an array of verdicts");
    assert_eq!(verdicts.len(), 2, "{doc:#}");
    let by_name = |name: &str| {
        verdicts
            .iter()
            .find(|v| v["path"].as_str().is_some_and(|p| p.ends_with(name)))
            .unwrap_or_else(|| panic!("no verdict for {name}: {doc:#}"))
    };

    let good = by_name(&s.file_name());
    assert_eq!(good["valid"], true);
    assert_eq!(good["digest"], s.digest().to_string());
    assert_eq!(good["named_digest"], s.digest().to_string());
    assert_eq!(good["issues"], Value::Array(vec![]));

    let bad = by_name("tampered.json");
    assert_eq!(bad["valid"], false);
    assert_eq!(bad["named_digest"], Value::Null);
    let issues = bad["issues"].as_array().expect("issues");
    assert_eq!(issues.len(), 1, "{bad:#}");
    assert_eq!(issues[0]["kind"], "not-canonical");
    assert_eq!(issues[0]["path"], "$.executor");
    assert!(issues[0]["reason"].as_str().is_some_and(|r| !r.is_empty()));
}

#[test]
fn a_missing_path_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-such-dir");
    let out = validate(&[&missing], false);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(&missing.display().to_string()), "{err}");
    assert!(err.starts_with("error:"), "{err}");
    assert!(out.stdout.is_empty(), "no table on a usage error");
}

#[test]
fn a_directory_without_records_is_not_all_valid() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = validate(&[dir.path()], false);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no *.json files"), "{}", stderr(&out));
}

#[test]
fn no_arguments_is_a_usage_error() {
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = run(&["validate".as_ref()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("<PATHS>"), "{}", stderr(&out));
}

#[test]
fn a_wrong_digest_in_the_file_name_is_a_digest_mismatch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sealed();
    let other = Sha256Digest::of(b"another record");
    let path = dir.path().join(format!("{}.json", other.hex()));
    std::fs::write(&path, s.bytes()).expect("writes");

    let v = validate_file(&path);
    assert!(!v.valid);
    assert_eq!(v.digest, Some(s.digest().to_string()));
    assert_eq!(v.named_digest, Some(other.to_string()));
    let kinds: Vec<(&str, &str)> = v
        .issues
        .iter()
        .map(|i| (i.kind.as_str(), i.path.as_str()))
        .collect();
    assert_eq!(kinds, [("digest-mismatch", "$")], "{v:?}");

    // The `<anything>--<hex>.json` form claims a digest too.
    let prefixed = dir.path().join(format!("nightly--{}.json", other.hex()));
    std::fs::write(&prefixed, s.bytes()).expect("writes");
    let v = validate_file(&prefixed);
    assert!(!v.valid);
    assert!(
        v.issues.iter().any(|i| i.kind == "digest-mismatch"),
        "{v:?}"
    );

    // An uppercase hex name is not a valid digest, and says so.
    let upper = dir
        .path()
        .join(format!("{}.json", s.digest().hex().to_uppercase()));
    std::fs::write(&upper, s.bytes()).expect("writes");
    let v = validate_file(&upper);
    assert!(!v.valid);
    assert_eq!(v.issues.len(), 1, "{v:?}");
    assert_eq!(v.issues[0].kind, "digest-mismatch");

    // Under its own name it is valid.
    let right = dir.path().join(s.file_name());
    std::fs::write(&right, s.bytes()).expect("writes");
    let v = validate_file(&right);
    assert!(v.valid, "{v:?}");

    // And the CLI reports the mismatch.
    let out = validate(&[&path], false);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("digest-mismatch: $:"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_file_that_is_not_json_is_malformed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let odd = dir.path().join("odd.json");
    std::fs::write(&odd, b"not json").expect("writes");
    let v = validate_file(&odd);
    assert!(!v.valid);
    assert_eq!(v.issues.len(), 1);
    assert_eq!(v.issues[0].kind, "malformed-json");
    assert_eq!(v.issues[0].path, "$");
}
