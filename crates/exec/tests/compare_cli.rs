//! `benchops-exec compare` end to end: a real git subject, the real binary,
//! the local backend. Every verdict asserted is on `work_s`, a metric the
//! subject reports itself: its values are drawn with a fixed seed around
//! the level the commit's `speed.conf` sets, so no verdict depends on how
//! busy the machine is (wall time is never asserted).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const EXE: &str = env!("CARGO_BIN_EXE_benchops-exec");

const INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "widgets"
command = ["sh", "-c", "cd \"$BENCHOPS_SUBJECT_DIR\" && exec sh ./work.sh {size}"]
repetitions = 3
warmup = 1
timeout_s = 30

[metrics]
json_lines = true

[[parameters]]
name = "size"
values = ["small", "large"]
"#;

/// A lane that compares `work_s` only.
const MANIFEST: &str = r#"
schema = "schedule-manifest/v2"
repository = "example/widgets"
suite = ["bench.toml"]

[[lanes]]
name = "nightly"
cron = "0 1 * * *"
timezone = "UTC"
completion_window_minutes = 60
cases = ["*"]
baseline = "last-clean"
[lanes.comparison]
metrics = ["work_s"]
confirm_runs = 6
"#;

/// The level `speed.conf` sets for the size, with 1% noise drawn from a
/// seed made of the benchmark digest, the child index and the size.
const SEEDED_WORK: &str = include_str!("../../../tests/fixtures/subjects/seeded-work.sh");

struct Demo {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

impl Demo {
    fn new() -> Demo {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().to_path_buf();
        std::fs::write(root.join("bench.toml"), INTENT).expect("intent");
        std::fs::write(root.join("schedule.toml"), MANIFEST).expect("manifest");
        let subject = root.join("widgets");
        std::fs::create_dir_all(&subject).expect("subject");
        std::fs::write(subject.join("work.sh"), SEEDED_WORK).expect("work.sh");
        git(&subject, &["init", "--quiet"]);
        Demo { _tmp: tmp, root }
    }

    fn subject(&self) -> PathBuf {
        self.root.join("widgets")
    }

    /// Sets the subject's speed in a commit; returns the commit.
    fn speed(&self, small_ms: u32, large_ms: u32, message: &str) -> String {
        std::fs::write(
            self.subject().join("speed.conf"),
            format!("SMALL_MS={small_ms}\nLARGE_MS={large_ms}\n"),
        )
        .expect("speed.conf");
        self.commit(message)
    }

    fn commit(&self, message: &str) -> String {
        git(&self.subject(), &["add", "-A"]);
        git(&self.subject(), &["commit", "--quiet", "-m", message]);
        git(&self.subject(), &["rev-parse", "HEAD"])
    }

    fn compare(&self, args: &[&str]) -> Output {
        Command::new(EXE)
            .current_dir(&self.root)
            .args(["--state", "state", "compare", "--subject", "widgets"])
            .args(args)
            .output()
            .expect("benchops-exec runs")
    }
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The table row of a case and metric.
fn row<'a>(stdout: &'a str, case: &str, metric: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(&format!("{case} ")) && l.contains(&format!(" {metric} ")))
        .unwrap_or_else(|| panic!("no row for {case} {metric}:\n{stdout}"))
}

#[test]
fn a_slower_candidate_exits_1_says_slower_and_resumes_into_the_json_report() {
    let d = Demo::new();
    let a = d.speed(50, 100, "first");
    let b = d.speed(50, 130, "a slower large path");
    let o = d.compare(&[
        "--intent",
        "bench.toml",
        "--commits",
        "HEAD~1",
        "HEAD",
        "--runs",
        "6",
        "--cases",
        "*large",
        "--slots",
        "2",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        row(&out, "widgets/size=large", "work_s").contains(" slower "),
        "{out}"
    );
    // Medians at four significant digits with a scaled unit (~100 ms, ~130 ms).
    let medians = row(&out, "widgets/size=large", "work_s");
    assert!(
        medians.matches(" ms ").count() == 2
            && !medians.split_whitespace().any(|t| t.starts_with("0.")),
        "{medians}"
    );
    assert!(!out.contains("widgets/size=small"), "--cases: {out}");
    let summary = out.lines().last().expect("a summary line");
    assert!(
        summary.starts_with(&format!(
            "slower: B {} (HEAD) against A {} (HEAD~1)",
            &b[..12],
            &a[..12]
        )),
        "{summary}"
    );

    // The same command again finds the same benchmark, finished: nothing
    // runs twice, and --json reports the same verdict.
    let o = d.compare(&[
        "--color",
        "always",
        "--intent",
        "bench.toml",
        "--commits",
        "HEAD~1",
        "HEAD",
        "--runs",
        "6",
        "--cases",
        "*large",
    ]);
    let (coloured, _) = text(&o);
    assert!(
        coloured.contains("\u{1b}[31mslower:\u{1b}[0m B "),
        "--color always paints the verdict: {coloured}"
    );
    let o = d.compare(&[
        "--color",
        "always",
        "--intent",
        "bench.toml",
        "--commits",
        "HEAD~1",
        "HEAD",
        "--runs",
        "6",
        "--cases",
        "*large",
        "--json",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(err.contains("resuming: sha256:"), "{err}");
    assert!(!out.contains('\u{1b}'), "JSON is never painted: {out}");
    let r: Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(r["schema"], "benchops-compare/v1");
    assert_eq!(r["outcome"], "slower");
    assert_eq!(r["a"]["commit"], a.as_str());
    assert_eq!(r["a"]["rev"], "HEAD~1");
    assert_eq!(r["b"]["commit"], b.as_str());
    assert_eq!(r["runs_per_side"], 6);
    assert_eq!(r["level"], 0.99);
    assert!(r["order_seed"].is_u64() && r["id"].is_string() && r["lane"].is_null());
    assert_eq!(r["benchmarks"].as_array().map(Vec::len), Some(1));
    assert_eq!(r["failed"], serde_json::json!([]));
    assert!(r["tally"]["slower"].as_u64() >= Some(1), "{r}");
    let keys = r["keys"].as_array().expect("keys");
    let k = keys
        .iter()
        .find(|k| k["metric"] == "work_s")
        .expect("work_s");
    assert_eq!(k["case"], "widgets/size=large");
    assert_eq!(k["verdict"], "slower");
    assert_eq!(k["direction"], "lower_is_better");
    assert_eq!(k["unit"], "s");
    assert!(
        k["reason"]
            .as_str()
            .is_some_and(|s| s.starts_with("slower: "))
    );
    assert_eq!(k["a"]["samples"], 6);
    assert_eq!(k["b"]["runs"], 6);
    let median = |side: &str| k[side]["median"].as_f64().expect("median");
    assert!((median("a") - 0.100).abs() < 0.003, "{k}");
    assert!((median("b") - 0.130).abs() < 0.004, "{k}");
    let e = &k["effect"];
    assert!(
        e["low"].as_f64() > Some(0.2) && e["high"].as_f64() < Some(0.4),
        "{e}"
    );
    assert_eq!(e["level"], 0.99);
    assert!(k["band"].as_f64() >= Some(0.03), "{k}");
    assert_eq!(k["nodes"].as_array().map(Vec::len), Some(1));
    // Every measured run, A and B interleaved, in the order they started.
    let runs = k["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 12);
    assert!(
        runs.iter()
            .all(|r| r["value"].is_f64() && r["node"].is_string())
    );
    assert_eq!(runs.iter().filter(|r| r["side"] == "a").count(), 6);
}

#[test]
fn the_same_speed_under_a_lanes_settings_is_not_slower() {
    let d = Demo::new();
    d.speed(50, 100, "first");
    std::fs::write(d.subject().join("NOTES"), "sizes\n").expect("notes");
    d.commit("document the sizes");
    let o = d.compare(&[
        "--manifest",
        "schedule.toml",
        "--lane",
        "nightly",
        "--commits",
        "HEAD~1",
        "HEAD",
        "--slots",
        "2",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    // The lane compares work_s only, 6 runs per side (its confirm_runs).
    assert!(!out.contains(" wall_s "), "{out}");
    for case in ["widgets/size=small", "widgets/size=large"] {
        let r = row(&out, case, "work_s");
        assert!(
            r.contains(" same ") || r.contains(" inconclusive "),
            "{r}\n{out}"
        );
        assert!(r.contains(" 6/6 "), "{r}");
    }
    let summary = out.lines().last().expect("a summary line");
    assert!(summary.starts_with("not slower: "), "{summary}");
    assert!(summary.contains("; 6 run(s) per side"), "{summary}");
}

#[test]
fn unknown_revisions_and_plain_directories_are_refused_with_the_reason() {
    let d = Demo::new();
    d.speed(50, 100, "first");
    let o = d.compare(&[
        "--intent",
        "bench.toml",
        "--commits",
        "HEAD",
        "no-such-branch",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(
        err.contains("--commits: `no-such-branch` does not name a commit"),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");

    let plain = d.root.join("plain");
    std::fs::create_dir_all(&plain).expect("plain dir");
    let o = Command::new(EXE)
        .current_dir(&d.root)
        .args(["--state", "state", "compare", "--intent", "bench.toml"])
        .args(["--subject", "plain", "--commits", "HEAD~1", "HEAD"])
        .output()
        .expect("benchops-exec runs");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(
        err.contains("--subject plain: it is not a git checkout"),
        "{err}"
    );
    // Nothing was planned or exported.
    assert!(!d.root.join("state/subjects").exists());
}

#[test]
fn failed_runs_of_a_side_exit_2_naming_the_case_side_and_stderr() {
    let d = Demo::new();
    d.speed(50, 100, "first");
    std::fs::write(
        d.subject().join("work.sh"),
        "echo 'work.sh: the large path is broken' >&2\nexit 3\n",
    )
    .expect("work.sh");
    let b = d.commit("break it");
    let o = d.compare(&[
        "--intent",
        "bench.toml",
        "--commits",
        "HEAD~1",
        "HEAD",
        "--runs",
        "2",
        "--cases",
        "widgets/size=small",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(
        err.contains(&format!(
            "widgets/size=small on side b ({}): 3 of 3 run(s) did not succeed",
            &b[..12]
        )),
        "{err}"
    );
    assert!(err.contains("| work.sh: the large path is broken"), "{err}");
    assert!(
        row(&out, "widgets/size=small", "work_s").contains(" not_compared "),
        "{out}"
    );
    let summary = out.lines().last().expect("a summary line");
    assert!(summary.starts_with("not compared: "), "{summary}");
}
