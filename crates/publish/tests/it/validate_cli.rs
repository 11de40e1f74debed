//! `benchops-publish validate`, run as the real binary, plus the library's
//! per-file verdicts. Every run of the binary has a deadline, so that a
//! hostile file (a FIFO, a symlink loop) that hangs it fails the test.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Output;

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
    crate::support::run_bounded(args)
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

// ---------------------------------------------------------------------------
// Hostile files: only regular files are read, symlinks met in a walk are not
// followed, sizes are capped, and names cannot forge output.

/// The rows of the table that mention `name`.
fn rows<'t>(text: &'t str, name: &str) -> Vec<&'t str> {
    text.lines().filter(|l| l.contains(name)).collect()
}

/// The one row that mentions `name`.
fn row<'t>(text: &'t str, name: &str) -> &'t str {
    match rows(text, name).as_slice() {
        [one] => one,
        other => panic!("expected one row for {name}, got {other:?}:\n{text}"),
    }
}

#[test]
fn a_fifo_is_reported_by_kind_and_never_hangs() {
    let (dir, s) = dir_with_valid();
    let fifo = dir.path().join("pipe.json");
    crate::support::mkfifo(&fifo);

    // Met while walking a directory.
    let out = validate(&[dir.path()], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let line = row(&text, "pipe.json");
    assert!(line.contains("INVALID"), "{line}");
    assert!(line.contains("unreadable: $:"), "{line}");
    assert!(line.contains("FIFO"), "{line}");
    assert!(row(&text, &s.file_name()).contains("  valid  "), "{text}");
    assert!(text.contains("2 file(s): 1 valid, 1 invalid"), "{text}");

    // Named directly, in both output forms.
    let out = validate(&[&fifo], false);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(row(&stdout(&out), "pipe.json").contains("FIFO"));
    let out = validate(&[&fifo], true);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    assert_eq!(doc[0]["issues"][0]["kind"], "unreadable", "{doc:#}");
    assert!(
        doc[0]["issues"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("FIFO") && r.contains("not a regular file")),
        "{doc:#}"
    );
}

#[test]
fn a_socket_is_reported_by_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = dir.path().join("sock.json");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).expect("binds a socket");
    let out = validate(&[dir.path()], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(row(&text, "sock.json").contains("socket"), "{text}");
}

#[test]
fn a_symlink_to_dev_zero_is_refused_before_any_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zero = dir.path().join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");

    // Met in a walk: a symlink, not followed.
    let out = validate(&[dir.path()], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let line = row(&text, "zero.json");
    assert!(line.contains("symbolic link"), "{line}");
    assert!(line.contains("not followed"), "{line}");

    // Named directly: resolved once, to a device, which is not read.
    let out = validate(&[&zero], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        row(&text, "zero.json").contains("character device"),
        "{text}"
    );
}

#[test]
fn a_file_symlink_is_resolved_when_named_and_reported_when_met_in_a_walk() {
    let (dir, s) = dir_with_valid();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let target = elsewhere.path().join(s.file_name());
    std::fs::write(&target, s.bytes()).expect("writes");
    let link = dir.path().join("latest.json");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");

    let out = validate(&[dir.path()], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let line = row(&text, "latest.json");
    assert!(line.contains("INVALID"), "{line}");
    assert!(line.contains("symbolic link"), "{line}");
    assert!(text.contains("2 file(s): 1 valid, 1 invalid"), "{text}");

    let out = validate(&[&link], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(row(&text, "latest.json").contains("  valid  "), "{text}");
}

/// A tree with one valid record at the top and a tampered one in `sub/`.
fn tree_with_two_records() -> (tempfile::TempDir, SealedRecord) {
    let (dir, s) = dir_with_valid();
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    std::fs::write(dir.path().join("sub/tampered.json"), reordered(&s)).expect("writes");
    (dir, s)
}

fn assert_each_validated_once(dir: &Path, s: &SealedRecord) {
    let out = validate(&[dir], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert_eq!(rows(&text, &s.file_name()).len(), 1, "{text}");
    assert_eq!(rows(&text, "tampered.json").len(), 1, "{text}");
    assert!(text.contains("2 file(s): 1 valid, 1 invalid"), "{text}");
}

#[test]
fn a_directory_symlink_loop_is_not_followed() {
    let (dir, s) = tree_with_two_records();
    std::os::unix::fs::symlink(".", dir.path().join("loop")).expect("symlink");
    assert_each_validated_once(dir.path(), &s);
}

#[test]
fn two_directory_symlink_loops_finish_and_validate_each_file_once() {
    let (dir, s) = tree_with_two_records();
    std::os::unix::fs::symlink(".", dir.path().join("a")).expect("symlink");
    std::os::unix::fs::symlink("..", dir.path().join("sub/up")).expect("symlink");
    std::os::unix::fs::symlink(".", dir.path().join("sub/here")).expect("symlink");
    assert_each_validated_once(dir.path(), &s);
}

#[test]
fn a_record_over_the_size_limit_is_refused_naming_its_size_and_the_limit() {
    let (dir, s) = dir_with_valid();
    let path = dir.path().join(s.file_name());
    let size = s.bytes().len();
    let limit = (size - 1).to_string();
    let out = run(&[
        "validate".as_ref(),
        "--max-record-bytes".as_ref(),
        limit.as_ref(),
        path.as_os_str(),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let line = row(&text, &s.file_name());
    assert!(line.contains("too-large: $:"), "{line}");
    assert!(line.contains(&format!("{size} bytes")), "{line}");
    assert!(line.contains(&format!("limit of {limit} bytes")), "{line}");

    let exact = size.to_string();
    let out = run(&[
        "validate".as_ref(),
        "--max-record-bytes".as_ref(),
        exact.as_ref(),
        path.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    let out = run(&[
        "validate".as_ref(),
        "--max-record-bytes".as_ref(),
        "0".as_ref(),
        path.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2), "a zero limit is a usage error");
}

#[test]
fn the_default_size_limit_is_8_mib() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The documented default: 8 MiB.
    let limit: u64 = 8 * 1024 * 1024;
    let big = dir.path().join("big.json");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(limit + 1))
        .expect("a sparse file");
    let out = validate(&[&big], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let line = row(&text, "big.json");
    assert!(line.contains("too-large"), "{line}");
    assert!(line.contains(&format!("{} bytes", limit + 1)), "{line}");
    assert!(line.contains(&format!("limit of {limit} bytes")), "{line}");
}

#[test]
fn a_file_name_with_newlines_cannot_forge_a_table_line() {
    let (dir, s) = dir_with_valid();
    let forged = format!("x\nforged.json  valid    {}\ny.json", s.digest());
    std::fs::write(dir.path().join(&forged), b"not json").expect("writes");
    let out = validate(&[dir.path()], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        !text.lines().any(|l| l.starts_with("forged.json")),
        "a forged line:\n{text}"
    );
    assert_eq!(text.lines().count(), 4, "header, two rows, total:\n{text}");
    assert!(row(&text, "x\\nforged.json").contains("INVALID"), "{text}");

    // In JSON the name is exact.
    let out = validate(&[dir.path()], true);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    let names: Vec<&str> = doc
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|v| v["path"].as_str())
        .collect();
    assert!(names.iter().any(|n| n.ends_with(&forged)), "{doc:#}");
}

#[test]
fn a_non_utf8_file_name_is_escaped_in_the_table_and_lossless_in_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sealed();
    let mut name = b"caf\xe9--".to_vec();
    name.extend_from_slice(s.file_name().as_bytes());
    let path = dir.path().join(std::ffi::OsStr::from_bytes(&name));
    std::fs::write(&path, s.bytes()).expect("writes");

    let out = validate(&[dir.path()], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(row(&text, "caf\\xe9--").contains("  valid  "), "{text}");

    let out = validate(&[dir.path()], true);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    let v = &doc[0];
    assert_eq!(v["valid"], true, "{doc:#}");
    let text = v["path"].as_str().expect("a text path");
    assert!(
        text.ends_with(&format!("caf\u{FFFD}--{}", s.file_name())),
        "{doc:#}"
    );
    let hex = v["path_hex"].as_str().expect("the exact bytes in hex");
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect();
    assert_eq!(bytes, path.as_os_str().as_bytes());

    // A UTF-8 name has no hex form: its text is exact.
    let (dir, _) = dir_with_valid();
    let out = validate(&[dir.path()], true);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    assert!(doc[0].get("path_hex").is_none(), "{doc:#}");
}

#[test]
fn a_long_path_is_cut_in_the_table() {
    let (dir, s) = dir_with_valid();
    let mut deep = dir.path().to_path_buf();
    for i in 0..6 {
        deep.push(format!("{i}{}", "d".repeat(100)));
    }
    std::fs::create_dir_all(&deep).expect("mkdir");
    std::fs::write(deep.join(s.file_name()), s.bytes()).expect("writes");
    let out = validate(&[&deep], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let line = row(&text, &s.file_name());
    assert!(line.contains('…'), "{line}");
    assert!(line.chars().count() < 300, "{} chars: {line}", line.len());
}

#[test]
fn a_subdirectory_that_cannot_be_listed_is_one_unreadable_verdict_and_the_walk_goes_on() {
    let (dir, s) = dir_with_valid();
    // A chain of directories deeper than a path may be long: listing its
    // bottom fails with "File name too long" (the tests run as root, so
    // permissions cannot be used to refuse a listing). Built relative to
    // each directory's descriptor, as no path can name the bottom.
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::{Mode, mkdirat};
    let mut fd: std::os::fd::OwnedFd = std::fs::File::open(dir.path()).expect("opens").into();
    for _ in 0..1500 {
        mkdirat(&fd, "dd", Mode::S_IRWXU).expect("mkdirat");
        fd = openat(
            &fd,
            "dd",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY,
            Mode::empty(),
        )
        .expect("openat");
    }
    drop(fd);
    let out = validate(&[dir.path()], false);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(row(&text, &s.file_name()).contains("valid"), "{text}");
    let bad: Vec<&str> = text.lines().filter(|l| l.contains("unreadable")).collect();
    assert_eq!(bad.len(), 1, "{text}");
    assert!(
        bad[0].contains("failed to list the directory"),
        "{}",
        bad[0]
    );
}

#[test]
fn unrelated_json_gets_one_line_and_its_problems_only_with_verbose() {
    let (dir, _) = dir_with_valid();
    std::fs::write(dir.path().join("package.json"), "{\"name\": \"x\"}\n").expect("write");
    std::fs::write(
        dir.path().join("other.json"),
        "{\"schema\": \"something-else/v1\"}\n",
    )
    .expect("write");
    let o = validate(&[dir.path()], false);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        rows(&text, "package.json").len(),
        1,
        "one line for a file that is not a record: {text}"
    );
    assert!(
        row(&text, "package.json").contains("not a benchops record (no schema tag)"),
        "{text}"
    );
    assert!(
        row(&text, "other.json").contains("its schema tag is `something-else/v1`"),
        "{text}"
    );
    assert_eq!(
        text.lines().count(),
        5,
        "header, three files, summary: {text}"
    );
    let verbose = run(&[
        std::ffi::OsStr::new("validate"),
        std::ffi::OsStr::new("--verbose"),
        dir.path().join("package.json").as_os_str(),
    ]);
    assert!(
        stdout(&verbose).contains("is a required property"),
        "{}",
        stdout(&verbose)
    );
}
