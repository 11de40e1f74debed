//! RFC 8785 test vectors (tests/fixtures/jcs): every case, the digests of
//! the expected bytes, and the number serialization table of Appendix B.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use benchops::jcs::{canonical_bytes, canonicalize, check_canonical, parse};
use benchops::{Finite, Sha256Digest};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jcs")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("fixture {} unreadable: {e}", path.display()))
}

fn read_text(path: &Path) -> String {
    String::from_utf8(read(path)).expect("fixture is UTF-8")
}

/// Names of every `cases/<name>.input.json`, sorted.
fn case_names() -> Vec<String> {
    let dir = fixtures().join("cases");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("cases directory lists")
        .map(|e| {
            e.expect("directory entry")
                .file_name()
                .into_string()
                .expect("UTF-8 file name")
        })
        .filter_map(|n| n.strip_suffix(".input.json").map(str::to_owned))
        .collect();
    names.sort();
    names
}

fn input(name: &str) -> Vec<u8> {
    read(&fixtures().join(format!("cases/{name}.input.json")))
}

fn expected(name: &str) -> Vec<u8> {
    read(&fixtures().join(format!("cases/{name}.expected.json")))
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Non-comment, non-empty lines split at the tab.
fn tsv_rows(path: &Path) -> Vec<(String, String)> {
    read_text(path)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (a, b) = l
                .split_once('\t')
                .unwrap_or_else(|| panic!("row {l:?} has no tab"));
            (a.to_owned(), b.to_owned())
        })
        .collect()
}

#[test]
fn every_case_has_input_and_expected_files() {
    let names = case_names();
    assert_eq!(
        names,
        [
            "arrays",
            "french",
            "rfc8785_primitives",
            "rfc8785_sorting",
            "simpleString",
            "structures",
            "unicode",
            "values",
            "weird",
        ],
        "the README lists these nine cases"
    );
    for name in &names {
        let e = expected(name);
        assert!(!e.is_empty(), "{name}: expected file is empty");
        assert_ne!(e.last(), Some(&b'\n'), "{name}: no trailing newline");
    }
}

#[test]
fn canonicalize_matches_expected_bytes() {
    for name in case_names() {
        let got = canonicalize(&input(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = expected(&name);
        assert!(
            got == want,
            "{name}: canonical bytes differ\n got: {}\nwant: {}",
            show(&got),
            show(&want)
        );
    }
}

#[test]
fn expected_files_are_fixed_points_and_pass_check_canonical() {
    for name in case_names() {
        let want = expected(&name);
        let again = canonicalize(&want).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            again == want,
            "{name}: expected bytes are not a fixed point"
        );
        let value = parse(&want).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_canonical(&want, &value)
            .unwrap_or_else(|e| panic!("{name}: expected bytes rejected: {e}"));
    }
}

#[test]
fn check_canonical_rejects_non_canonical_inputs() {
    let mut rejected = 0;
    for name in case_names() {
        let raw = input(&name);
        if raw == expected(&name) {
            continue;
        }
        let value = parse(&raw).unwrap_or_else(|e| panic!("{name}: {e}"));
        let err = check_canonical(&raw, &value)
            .expect_err("an input that differs from its canonical form is rejected");
        assert!(
            err.offset <= raw.len(),
            "{name}: offset {} past the end",
            err.offset
        );
        rejected += 1;
    }
    assert!(
        rejected >= 8,
        "most published inputs are not canonical; only {rejected} were"
    );
}

#[test]
fn digests_tsv_matches_expected_bytes() {
    let rows = tsv_rows(&fixtures().join("digests.tsv"));
    let listed: BTreeSet<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    let cases: BTreeSet<String> = case_names().into_iter().collect();
    assert_eq!(
        listed,
        cases.iter().map(String::as_str).collect::<BTreeSet<_>>(),
        "digests.tsv lists exactly the cases"
    );
    for (name, digest) in &rows {
        let want: Sha256Digest = digest
            .parse()
            .unwrap_or_else(|e| panic!("{name}: bad digest {digest:?}: {e}"));
        assert_eq!(
            Sha256Digest::of(&expected(name)),
            want,
            "{name}: expected file"
        );
        let canonical = canonicalize(&input(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(Sha256Digest::of(&canonical), want, "{name}: canonical form");
        assert_eq!(want.to_string(), *digest, "{name}: digest round-trips");
    }
}

#[test]
fn number_table_serializes_as_ecmascript() {
    let rows = tsv_rows(&fixtures().join("numbers.tsv"));
    assert_eq!(rows.len(), 26, "RFC 8785 Appendix B has 26 rows");
    let mut errors = 0;
    for (hex, want) in &rows {
        let bits = u64::from_str_radix(hex, 16).unwrap_or_else(|e| panic!("{hex}: {e}"));
        let f = f64::from_bits(bits);
        if want == "ERROR" {
            errors += 1;
            assert!(!f.is_finite(), "{hex}: ERROR row must be NaN or infinite");
            assert!(Finite::new(f).is_err(), "{hex}: Finite accepts {f}");
            assert!(
                serde_json::Number::from_f64(f).is_none(),
                "{hex}: serde_json made a number of {f}"
            );
            assert_eq!(
                serde_json::Value::from(f),
                serde_json::Value::Null,
                "{hex}: a non-finite f64 is not a JSON number"
            );
            continue;
        }
        assert!(f.is_finite(), "{hex}: row with a serialization is finite");
        let got = canonical_bytes(&serde_json::Value::from(f));
        assert_eq!(show(&got), *want, "{hex} ({f:e})");
        // The typed path (Finite) writes the same text.
        let finite = Finite::new(f).unwrap_or_else(|e| panic!("{hex}: {e}"));
        let typed = benchops::jcs::to_canonical_vec(&finite).expect("finite serializes");
        assert_eq!(show(&typed), *want, "{hex} via Finite");
        // The expected text parses back to the same double (or to 0 for -0).
        let back = parse(want.as_bytes())
            .unwrap_or_else(|e| panic!("{hex}: {e}"))
            .as_f64()
            .expect("a number");
        assert_eq!(back, f + 0.0, "{hex}: {want} round-trips");
    }
    assert_eq!(errors, 2, "the NaN and Infinity rows");
}
