//! A lane with platform cases, end to end with the real binaries: each case
//! is `benchops-exec platform … --metrics`, so its rows become the case's
//! metrics; a case whose every row was skipped is sealed as skipped, with
//! the reason; the subject token of one platform case reaches no other
//! child; and the sealed `benchmark-result/v3` record is valid and is
//! persisted by the sweep.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::binaries::{PUBLISH, exec_bin, ok};

const MANIFEST: &str = r#"
schema = "schedule-manifest/v2"
repository = "example/widgets"
suite = ["triage.toml", "hosted.toml", "leak.toml"]

[[lanes]]
name = "platform"
cron = "0 2 * * *"
timezone = "UTC"
completion_window_minutes = 120
cases = ["*"]
baseline = "last-clean"
[lanes.comparison]
metrics = ["triage.total.ms"]
relative_threshold = 0.5
min_absolute = 5.0
confirm_runs = 3
"#;

fn intent(name: &str, args: &str) -> String {
    format!(
        r#"
schema = "benchmark-intent/v1"
name = "{name}"
command = ["benchops-exec", "platform", {args}, "--metrics",
  "--spec", "{{spec}}", "--semantics", "{{semantics}}",
  "--results", "{{results}}", "--workdir", "{{work}}"]
repetitions = 2
timeout_s = 60
[metrics]
json_lines = true
"#
    )
}

fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .expect("git");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `lane run --wait` of the `platform` lane at `slot`, with `benchops-exec`
/// on `PATH` and `env` added; what it printed.
fn lane_run(root: &Path, subject: &Path, slot: &str, env: &[(&str, &str)]) -> String {
    let pub_dir = root.join("pub");
    let path = format!(
        "{}:{}",
        exec_bin().parent().expect("dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new(exec_bin());
    c.arg("--state")
        .arg(&pub_dir)
        .args([
            "lane", "run", "--lane", "platform", "--slot", slot, "--wait",
        ])
        .arg("--manifest")
        .arg(root.join("schedule.toml"))
        .arg("--history")
        .arg(pub_dir.join("history.git"))
        .arg("--subject")
        .arg(subject)
        .arg("--out")
        .arg(pub_dir.join("sealed"))
        .env("PATH", path)
        .env_remove("BENCHOPS_SUBJECT_TOKEN_HOSTED")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN");
    for (k, v) in env {
        c.env(k, v);
    }
    ok(&c.output().expect("lane run"))
}

#[test]
fn a_lane_with_platform_cases_seals_their_rows_and_skips_with_reasons() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/platform");
    let fill = |text: String| {
        text.replace(
            "{spec}",
            &examples.join("scenarios.toml").display().to_string(),
        )
        .replace(
            "{semantics}",
            &examples.join("semantics.toml").display().to_string(),
        )
        .replace(
            "{results}",
            &root.join("platform-results").display().to_string(),
        )
        .replace("{work}", &root.join("platform-work").display().to_string())
    };
    std::fs::write(root.join("schedule.toml"), MANIFEST).expect("manifest");
    std::fs::write(
        root.join("triage.toml"),
        fill(intent(
            "triage",
            r#""--driver", "fake-provider", "--scenario", "branch_triage_n8""#,
        )),
    )
    .expect("triage");
    std::fs::write(
        root.join("hosted.toml"),
        fill(intent(
            "hosted",
            r#""--driver", "harness-api", "--scenario", "pr_single_anatomy", "--repo", "example/scratch", "--token-env", "BENCHOPS_SUBJECT_TOKEN_HOSTED""#,
        )),
    )
    .expect("hosted");
    // A plain case that reports how much of the other case's token it sees.
    std::fs::write(
        root.join("leak.toml"),
        r#"
schema = "benchmark-intent/v1"
name = "leak"
command = ["sh", "-c", "echo \"{\\\"metric\\\": \\\"token_chars\\\", \\\"value\\\": ${#BENCHOPS_SUBJECT_TOKEN_TRIAGE}, \\\"unit\\\": \\\"chars\\\"}\""]
repetitions = 2
[metrics]
json_lines = true
"#,
    )
    .expect("leak");
    let subject = root.join("subject");
    std::fs::create_dir_all(&subject).expect("subject");
    git(&subject, &["init", "-q"]);
    std::fs::write(subject.join("README"), "x\n").expect("readme");
    git(&subject, &["add", "-A"]);
    git(&subject, &["commit", "-q", "-m", "first"]);
    let pub_dir = root.join("pub");
    std::fs::create_dir_all(&pub_dir).expect("pub");
    ok(&Command::new(PUBLISH)
        .args(["sweep", "--local"])
        .arg(&pub_dir)
        .arg("--manifest")
        .arg(root.join("schedule.toml"))
        .output()
        .expect("sweep"));

    let out = lane_run(
        root,
        &subject,
        "2026-12-01T02:00:00Z",
        &[("BENCHOPS_SUBJECT_TOKEN_TRIAGE", "a-subject-token")],
    );
    let digest = out
        .lines()
        .find_map(|l| l.strip_prefix("sealed sha256:"))
        .and_then(|l| l.split(':').next())
        .expect("a sealed record line");
    let file = pub_dir.join("sealed").join(format!("{digest}.json"));
    let bytes = std::fs::read(&file).expect("record");
    benchops::seal::verify(&bytes, None).expect("the record is valid");
    let record: Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(record["schema"], "benchmark-result/v3");
    let case = |id: &str| {
        record["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no case {id}: {record}"))
            .clone()
    };

    // The triage scenario's rows are the case's metrics.
    let triage = case("triage");
    assert_eq!(triage["outcome"], "pass", "{triage}");
    let names: Vec<&str> = triage["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .map(|m| m["name"].as_str().expect("name"))
        .collect();
    for m in ["triage.seed.ms", "triage.oracle.ms", "triage.total.ms"] {
        assert!(names.contains(&m), "{m} in {names:?}");
    }
    let oracle = triage["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|m| m["name"] == "triage.oracle.ms")
        .expect("oracle metric");
    assert_eq!(oracle["samples"].as_array().map(Vec::len), Some(2));

    // Every row of the hosted case skipped (no token): a skipped case, with
    // the reason, its metrics null, never zero.
    let hosted = case("hosted");
    assert_eq!(hosted["outcome"], "skipped", "{hosted}");
    assert_eq!(
        hosted["skip_reason"],
        "github_token_missing:BENCHOPS_SUBJECT_TOKEN_HOSTED"
    );
    let publish = hosted["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|m| m["name"] == "branch.publish.ms")
        .expect("publish metric");
    assert!(
        publish["samples"]
            .as_array()
            .expect("samples")
            .iter()
            .all(Value::is_null)
    );
    assert!(publish["summary"].is_null());

    // The triage case's token variable reached no other child.
    let leak = case("leak");
    let chars = leak["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|m| m["name"] == "token_chars")
        .expect("token_chars");
    let seen: Vec<f64> = chars["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|v| v.as_f64().expect("measured"))
        .collect();
    assert_eq!(seen, [0.0, 0.0], "{chars}");
    assert_eq!(record["case_counts"]["skipped"], 1);

    // The sweep accepts and persists it.
    let report = ok(&Command::new(PUBLISH)
        .args(["sweep", "--local"])
        .arg(&pub_dir)
        .arg("--manifest")
        .arg(root.join("schedule.toml"))
        .output()
        .expect("sweep"));
    assert!(report.contains("persist: 1 new record(s)"), "{report}");

    // The next day's run compares the platform case's metric with the
    // baseline the first run set, like any other case.
    let out = lane_run(root, &subject, "2026-12-02T02:00:00Z", &[]);
    let digest = out
        .lines()
        .find_map(|l| l.strip_prefix("sealed sha256:"))
        .and_then(|l| l.split(':').next())
        .expect("a sealed record line");
    let second: Value = serde_json::from_slice(
        &std::fs::read(pub_dir.join("sealed").join(format!("{digest}.json"))).expect("record"),
    )
    .expect("json");
    assert_eq!(
        second["baseline"]["slot"], "2026-12-01T02:00:00Z",
        "{}",
        second["baseline"]
    );
    let keys = second["comparison"]["keys"].as_array().expect("keys");
    let key = keys
        .iter()
        .find(|k| k["case"] == "triage" && k["metric"] == "triage.total.ms")
        .unwrap_or_else(|| panic!("the platform metric is compared: {keys:#?}"));
    assert!(key["initial"].is_object(), "{key}");
}
