//! `benchops-exec seal`, run as the real binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use benchops::Sha256Digest;
use serde_json::Value;

fn example_draft() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/result.draft.json")
}

fn seal(draft: &Path, out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_benchops-exec"))
        .arg("seal")
        .arg(draft)
        .arg("--out")
        .arg(out)
        .output()
        .expect("benchops-exec runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("stderr is UTF-8")
}

/// File names in `dir`, sorted (hidden temporary files included).
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("lists")
        .map(|e| {
            e.expect("entry")
                .file_name()
                .into_string()
                .expect("UTF-8 name")
        })
        .collect();
    names.sort();
    names
}

#[test]
fn seals_into_a_content_addressed_file_that_verifies() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out_dir = tmp.path().join("sealed");
    let out = seal(&example_draft(), &out_dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let names = listing(&out_dir);
    assert_eq!(
        names.len(),
        1,
        "exactly the sealed file, no temporaries: {names:?}"
    );
    let name = &names[0];
    let hex = name.strip_suffix(".json").expect("<hex>.json");
    let bytes = std::fs::read(out_dir.join(name)).expect("reads");
    let digest = Sha256Digest::of(&bytes);
    assert_eq!(hex, digest.hex(), "name is the sha256 of the content");

    let verified = benchops::verify(&bytes, Some(&digest)).expect("sealed file verifies");
    assert_eq!(verified.digest(), digest);
    let text = stdout(&out);
    assert!(text.starts_with(&format!("sealed {digest} -> ")), "{text}");
    assert!(text.contains(name.as_str()), "{text}");
}

#[test]
fn sealing_twice_is_a_no_op() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let first = seal(&example_draft(), tmp.path());
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let names = listing(tmp.path());
    assert_eq!(names.len(), 1, "{names:?}");
    let path = tmp.path().join(&names[0]);
    let before = std::fs::read(&path).expect("reads");
    let modified = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .expect("mtime");

    let second = seal(&example_draft(), tmp.path());
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let text = stdout(&second);
    assert!(text.starts_with("already sealed sha256:"), "{text}");
    assert_eq!(listing(tmp.path()), names, "no new files, no temporaries");
    assert_eq!(std::fs::read(&path).expect("reads"), before);
    assert_eq!(
        std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .expect("mtime"),
        modified,
        "the file was not rewritten"
    );
}

#[test]
fn a_reformatted_draft_seals_to_the_same_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out_dir = tmp.path().join("sealed");
    let first = seal(&example_draft(), &out_dir);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));

    let v: Value = serde_json::from_slice(&std::fs::read(example_draft()).expect("reads"))
        .expect("draft is JSON");
    let compact = tmp.path().join("compact.json");
    std::fs::write(&compact, serde_json::to_vec(&v).expect("serializes")).expect("writes");
    let second = seal(&compact, &out_dir);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert!(
        stdout(&second).starts_with("already sealed"),
        "{}",
        stdout(&second)
    );
    assert_eq!(listing(&out_dir).len(), 1);
}

fn invalid_draft(dir: &Path, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let mut v: Value = serde_json::from_slice(&std::fs::read(example_draft()).expect("reads"))
        .expect("draft is JSON");
    edit(&mut v);
    let p = dir.join("draft.json");
    std::fs::write(&p, serde_json::to_vec_pretty(&v).expect("serializes")).expect("writes");
    p
}

fn assert_nothing_written(out_dir: &Path) {
    if out_dir.exists() {
        assert_eq!(listing(out_dir), Vec::<String>::new(), "nothing written");
    }
}

#[test]
fn an_invalid_draft_is_refused_with_its_issue_and_writes_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");

    // skip_reason emptied: a semantic issue at the member.
    let draft = invalid_draft(tmp.path(), |v| {
        v["cases"][2]["skip_reason"] = Value::Null;
    });
    let out_dir = tmp.path().join("sealed");
    let out = seal(&draft, &out_dir);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains(&draft.display().to_string()), "{err}");
    assert!(
        err.contains("  - semantic at $.cases[2].skip_reason: "),
        "{err}"
    );
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert_nothing_written(&out_dir);

    // skip_reason removed: a schema issue naming the member.
    let draft = invalid_draft(tmp.path(), |v| {
        v["cases"][2]
            .as_object_mut()
            .expect("case is an object")
            .remove("skip_reason");
    });
    let out = seal(&draft, &out_dir);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.starts_with("  - schema at $.cases[2]: "))
        .unwrap_or_else(|| panic!("no schema issue at $.cases[2]:\n{err}"));
    assert!(line.contains("skip_reason"), "{line}");
    assert_nothing_written(&out_dir);
}

#[test]
fn a_missing_draft_is_a_usage_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("nope.json");
    let out_dir = tmp.path().join("sealed");
    let out = seal(&missing, &out_dir);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(&missing.display().to_string()), "{err}");
    assert!(!out_dir.exists(), "no output directory for a failed read");

    let no_out = Command::new(env!("CARGO_BIN_EXE_benchops-exec"))
        .arg("seal")
        .arg(example_draft())
        .output()
        .expect("runs");
    assert_eq!(no_out.status.code(), Some(2), "--out is required");
}

#[test]
fn a_conflicting_file_under_the_sealed_name_is_not_overwritten() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let first = seal(&example_draft(), tmp.path());
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let names = listing(tmp.path());
    let path = tmp.path().join(&names[0]);
    std::fs::write(&path, b"something else").expect("writes");

    let again = seal(&example_draft(), tmp.path());
    assert_eq!(again.status.code(), Some(2), "{}", stdout(&again));
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );
    assert_eq!(std::fs::read(&path).expect("reads"), b"something else");
    assert_eq!(listing(tmp.path()), names, "no temporaries left behind");
}

#[test]
fn an_integer_above_two_to_the_53_is_refused_with_its_path_not_rounded() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out_dir = tmp.path().join("sealed");
    let with_seed = |seed: u64| {
        invalid_draft(tmp.path(), |v| {
            let summary = &mut v["cases"][0]["metrics"][0]["summary"];
            let (low, high) = (summary["min"].clone(), summary["max"].clone());
            summary["ci"] = serde_json::json!({
                "level": 0.95,
                "low": low,
                "high": high,
                "method": "bootstrap-percentile",
                "resamples": 1000,
                "seed": seed,
            });
        })
    };

    let draft = with_seed(9_007_199_254_740_993);
    let text = std::fs::read_to_string(&draft).expect("reads");
    assert!(
        text.contains("9007199254740993"),
        "the draft holds the seed"
    );
    let out = seal(&draft, &out_dir);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("  - lossy-number at $.cases[0].metrics[0].summary.ci.seed: "),
        "{err}"
    );
    assert!(err.contains("9007199254740993"), "{err}");
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert_nothing_written(&out_dir);

    // The same integer spelled as a float is refused too: the check reads
    // the draft's text, not the already rounded double.
    for spelling in [
        "9007199254740993.0",
        "9007199254740993e0",
        "90071992547409930e-1",
    ] {
        let text = std::fs::read_to_string(&draft)
            .expect("reads")
            .replace("9007199254740993", spelling);
        let respelled = tmp.path().join("respelled.json");
        std::fs::write(&respelled, text).expect("writes");
        let out = seal(&respelled, &out_dir);
        assert_eq!(out.status.code(), Some(1), "{spelling}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(
            err.contains("lossy-number at $.cases[0].metrics[0].summary.ci.seed: ")
                && err.contains(spelling),
            "{spelling}: {err}"
        );
        assert_nothing_written(&out_dir);
    }

    // 2^53 itself is exact: sealed with exactly that seed.
    let draft = with_seed(1 << 53);
    let out = seal(&draft, &out_dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let names = listing(&out_dir);
    let bytes = std::fs::read(out_dir.join(&names[0])).expect("reads");
    let text = String::from_utf8(bytes).expect("UTF-8");
    assert!(text.contains("\"seed\":9007199254740992"), "{text}");
}

#[test]
fn a_fifo_given_as_the_draft_is_refused_without_hanging() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fifo = tmp.path().join("draft.json");
    let st = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(st.success());
    let out = tmp.path().join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchops-exec"))
        .arg("seal")
        .arg(&fifo)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("benchops-exec runs");
    let started = std::time::Instant::now();
    while child.try_wait().expect("waits").is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("benchops-exec seal on a FIFO did not finish: it hangs");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().expect("output");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("FIFO"), "{}", stderr(&o));
    assert!(!out.exists() || listing(&out).is_empty());
}
