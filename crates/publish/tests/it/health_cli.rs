//! `benchops-publish health` end to end on a local sweep directory built
//! by a real local sweep: the watchdog's view, durations and their trend,
//! the open drift issue of a covered case from the ledger, the baseline's
//! age, the growth figures; the growth trigger on a branch with a file over
//! 10 MB; markdown; exit codes.

use std::path::Path;
use std::process::{Command, Output};

use benchops_publish::local::{LocalSweepOptions, sweep_local};
use benchops_publish::sweep::Clock;
use benchops_testkit::records::{TWO_LANE_MANIFEST, clean, draft, seal, with_lane_slot};
use serde_json::{Value, json};

fn drift_taking(lane: &str, slot: &str, finished: &str) -> benchops::seal::SealedRecord {
    let mut v = with_lane_slot(draft(), lane, slot);
    v["finished_at"] = json!(finished);
    seal(&v)
}

/// `nightly` runs on 26–30 Nov (clean, then drifting with longer and longer
/// runs); `sentinel` never ran.
fn swept(dir: &Path) {
    let sealed = dir.join("sealed");
    std::fs::create_dir_all(&sealed).expect("sealed");
    let records = [
        clean("nightly", "2026-11-26T01:00:00Z"),
        drift_taking("nightly", "2026-11-27T01:00:00Z", "2026-11-27T01:10:00Z"),
        drift_taking("nightly", "2026-11-28T01:00:00Z", "2026-11-28T01:10:00Z"),
        drift_taking("nightly", "2026-11-29T01:00:00Z", "2026-11-29T01:40:00Z"),
        drift_taking("nightly", "2026-11-30T01:00:00Z", "2026-11-30T01:45:00Z"),
    ];
    for r in &records {
        std::fs::write(sealed.join(r.file_name()), r.bytes()).expect("handoff");
    }
    let manifest = dir.join("schedule.toml");
    std::fs::write(&manifest, TWO_LANE_MANIFEST).expect("manifest");
    let mut o = LocalSweepOptions::new(dir, &manifest);
    o.clock = Clock::fixed("2026-11-30T03:00:00.000Z");
    sweep_local(&o).expect("sweep");
}

fn health(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
        .arg("health")
        .arg("--local")
        .arg(dir)
        .arg("--manifest")
        .arg(dir.join("schedule.toml"))
        .args(args)
        .output()
        .expect("runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_lane_with_a_drift_and_slower_runs_and_a_lane_that_never_ran() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(".benchops");
    swept(&dir);
    let out = health(&dir, &["--now", "2026-11-30T06:00:00Z", "--json"]);
    // The sentinel lane never ran: every hourly slot of the lookback is missed.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(r["schema"], "health-report/v2");
    let schema = |name: &str| -> Value {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../schemas")
            .join(name);
        serde_json::from_str(&std::fs::read_to_string(path).expect("schema")).expect("json")
    };
    let registry = jsonschema::Registry::new()
        .add(
            "https://benchops.dev/schemas/watchdog-report.v1.schema.json",
            schema("watchdog-report.v1.schema.json"),
        )
        .expect("uri")
        .prepare()
        .expect("registry");
    let validator = jsonschema::options()
        .with_registry(&registry)
        .build(&schema("health-report.v2.schema.json"))
        .expect("schema compiles");
    let errors: Vec<String> = validator.iter_errors(&r).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(r["issues_read"], true);
    let sentinel = &r["lanes"][0];
    assert_eq!(sentinel["lane"], "sentinel");
    assert!(
        sentinel["watchdog"]["consecutive_missed"]
            .as_u64()
            .expect("n")
            > 50
    );
    let nightly = &r["lanes"][1];
    assert_eq!(nightly["watchdog"]["last_on_time"], "2026-11-30T01:00:00Z");
    assert_eq!(nightly["durations"].as_array().expect("durations").len(), 5);
    assert_eq!(nightly["durations"][4]["seconds"], 2700.0);
    assert_eq!(nightly["duration_trend"], "rising");
    let drift = nightly["open_drift"].as_array().expect("issues read");
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(drift[0]["key"], "parse/large/wall_s");
    assert_eq!(drift[0]["number"], 1);
    // The clean record of the 26th is the baseline: 4 days and 5 hours old.
    assert_eq!(nightly["baseline"]["slot"], "2026-11-26T01:00:00Z");
    assert_eq!(nightly["baseline"]["age_hours"], 101.0);
    let g = &r["growth"];
    assert!(g["packed_bytes"].as_u64().expect("bytes") > 1000, "{g}");
    assert!(
        g["largest_file"][0]
            .as_str()
            .expect("path")
            .starts_with("results/nightly/"),
        "{g}"
    );
    assert_eq!(g["triggered"], false);
    assert_eq!(g["shallow"], false);

    // A shallow clone (what the publication workflow fetches) packs only
    // the tip: the size is reported as a lower bound.
    let shallow = dir.join("shallow.git");
    let url = format!("file://{}", dir.join("history.git").display());
    let o = Command::new("git")
        .args([
            "clone",
            "--quiet",
            "--bare",
            "--depth=1",
            "--branch",
            "benchmark-history",
            &url,
        ])
        .arg(&shallow)
        .output()
        .expect("git clone");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
        .args(["health", "--history"])
        .arg(&shallow)
        .arg("--manifest")
        .arg(dir.join("schedule.toml"))
        .args(["--now", "2026-11-30T06:00:00Z", "--json"])
        .output()
        .expect("runs");
    let s: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(s["growth"]["shallow"], true, "{}", s["growth"]);
    assert!(
        s["growth"]["packed_bytes"].as_u64().expect("bytes")
            <= g["packed_bytes"].as_u64().expect("bytes"),
        "the tip alone packs no larger than the whole branch"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
        .args(["health", "--history"])
        .arg(&shallow)
        .arg("--manifest")
        .arg(dir.join("schedule.toml"))
        .args(["--now", "2026-11-30T06:00:00Z"])
        .output()
        .expect("runs");
    assert!(
        text(&o.stdout).contains("history: at least "),
        "{}",
        text(&o.stdout)
    );

    let md = text(&health(&dir, &["--now", "2026-11-30T06:00:00Z", "--markdown"]).stdout);
    assert!(md.contains("| nightly | 2026-11-30T01:00:00Z | 2026-11-30T01:00:00Z | 0 | 2700 s, rising | #1 parse/large/wall_s | 101 h |"), "{md}");
}

#[test]
fn a_history_without_the_branch_yet_has_no_growth_and_no_git_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(".benchops");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("schedule.toml"), TWO_LANE_MANIFEST).expect("manifest");
    let init = Command::new("git")
        .args(["init", "--quiet", "--bare"])
        .arg(dir.join("history.git"))
        .status()
        .expect("git init");
    assert!(init.success());
    let out = health(&dir, &["--now", "2026-11-30T06:00:00Z", "--json"]);
    let err = text(&out.stderr);
    assert!(!err.contains("pack-objects"), "{err}");
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(r["growth"]["packed_bytes"], 0, "{}", r["growth"]);
    assert!(r["growth"]["largest_file"].is_null());
    assert_eq!(r["growth"]["triggered"], false);
    // The lanes never ran: that is what needs attention, not git.
    assert_eq!(out.status.code(), Some(1), "{err}");
}

#[test]
fn a_file_over_ten_megabytes_reaches_the_growth_trigger() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(".benchops");
    swept(&dir);
    let repo = dir.join("history.git");
    let git = |args: &[&str], input: Option<&[u8]>| -> String {
        use std::io::Write as _;
        let mut c = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("git");
        if let Some(i) = input {
            c.stdin.take().expect("stdin").write_all(i).expect("write");
        } else {
            drop(c.stdin.take());
        }
        let out = c.wait_with_output().expect("git");
        assert!(out.status.success(), "git {args:?}");
        text(&out.stdout).trim().to_owned()
    };
    // A commit on the branch that adds an 11 MB file (as a person could).
    let big = vec![b'x'; 11_000_000];
    let blob = git(&["hash-object", "-w", "--stdin"], Some(&big));
    let tip = git(&["rev-parse", "refs/heads/benchmark-history"], None);
    let base = git(&["rev-parse", &format!("{tip}^{{tree}}")], None);
    let listing = git(&["ls-tree", &base], None);
    let tree = git(
        &["mktree"],
        Some(format!("{listing}\n100644 blob {blob}\tbig.bin\n").as_bytes()),
    );
    let commit = git(&["commit-tree", &tree, "-p", &tip, "-m", "big"], None);
    git(
        &["update-ref", "refs/heads/benchmark-history", &commit, &tip],
        None,
    );
    let out = health(&dir, &["--now", "2026-11-30T06:00:00Z", "--json"]);
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(r["growth"]["triggered"], true, "{}", r["growth"]);
    assert_eq!(r["growth"]["largest_file"][0], "big.bin");
    assert_eq!(r["growth"]["largest_file"][1], 11_000_000);
    let t = text(&health(&dir, &["--now", "2026-11-30T06:00:00Z"]).stdout);
    assert!(t.contains("GROWTH TRIGGER REACHED"), "{t}");
}

/// Commits `bytes` at `path` on the history branch, as a person could.
fn commit_file(repo: &Path, path: &str, bytes: &[u8]) {
    let git = |args: &[&str], input: Option<&[u8]>| -> String {
        use std::io::Write as _;
        let mut c = Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("git");
        let mut stdin = c.stdin.take().expect("stdin");
        if let Some(i) = input {
            stdin.write_all(i).expect("write");
        }
        drop(stdin);
        let out = c.wait_with_output().expect("git");
        assert!(out.status.success(), "git {args:?}");
        text(&out.stdout).trim().to_owned()
    };
    let blob = git(&["hash-object", "-w", "--stdin"], Some(bytes));
    let tip = git(&["rev-parse", "refs/heads/benchmark-history"], None);
    let index = repo.join("scratch-index");
    let env_git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(repo)
            .env("GIT_INDEX_FILE", &index)
            .args(args)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
        text(&out.stdout).trim().to_owned()
    };
    env_git(&["read-tree", &tip]);
    env_git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("100644,{blob},{path}"),
    ]);
    let tree = env_git(&["write-tree"]);
    let commit = git(&["commit-tree", &tree, "-p", &tip, "-m", "hand edit"], None);
    git(
        &["update-ref", "refs/heads/benchmark-history", &commit, &tip],
        None,
    );
}

#[test]
fn an_unreadable_baseline_pointer_is_a_problem_not_an_absent_baseline() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(".benchops");
    swept(&dir);
    commit_file(
        &dir.join("history.git"),
        "baselines/nightly.json",
        b"{\"schema\": 7}",
    );
    let out = health(&dir, &["--now", "2026-11-30T06:00:00Z", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    let nightly = &r["lanes"][1];
    assert_eq!(nightly["baseline"], Value::Null);
    let problem = nightly["baseline_problem"].as_str().expect("a problem");
    assert!(problem.contains("nightly"), "{problem}");
    assert_eq!(r["lanes"][0]["baseline_problem"], Value::Null);
}

#[test]
fn a_ledger_beside_local_is_refused_not_ignored() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // `health` passes --local and --manifest already.
    let o = health(tmp.path(), &["--ledger", "other.json"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("'--local [<DIR>]' cannot be used with '--ledger <FILE>'"),
        "{err}"
    );
}

#[test]
fn records_of_history_that_do_not_verify_are_listed_not_dropped() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(".benchops");
    swept(&dir);
    let repo = dir.join("history.git");
    let listed = Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args([
            "ls-tree",
            "-r",
            "--name-only",
            "benchmark-history",
            "results/",
        ])
        .output()
        .expect("git ls-tree");
    let paths: Vec<String> = text(&listed.stdout)
        .lines()
        .filter(|p| p.ends_with(".json"))
        .map(str::to_owned)
        .collect();
    assert_eq!(paths.len(), 5, "{paths:?}");
    let healthy = health(&dir, &["--now", "2026-11-30T06:00:00Z", "--json"]);
    let r: Value = serde_json::from_slice(&healthy.stdout).expect("json");
    assert_eq!(r["unreadable"], json!([]));

    // One record's bytes truncated, another replaced by a valid record of
    // another slot (which verifies, but not against the digest in its name).
    let last = paths.iter().find(|p| p.contains("20261130")).expect("30th");
    let prior = paths.iter().find(|p| p.contains("20261129")).expect("29th");
    commit_file(&repo, last, b"{\"schema\":\"benchmark-result/v2\"");
    let elsewhere = clean("nightly", "2026-11-20T01:00:00Z");
    commit_file(&repo, prior, elsewhere.bytes());
    // And that record under its own digest, but at a slot not its own.
    let misplaced = format!(
        "results/nightly/2026/11/20261128T020000Z--{}",
        elsewhere.file_name()
    );
    commit_file(&repo, &misplaced, elsewhere.bytes());

    let out = health(&dir, &["--now", "2026-11-30T06:00:00Z", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    let unreadable = r["unreadable"].as_array().expect("unreadable listed");
    assert_eq!(unreadable.len(), 3, "{unreadable:?}");
    let why = |path: &str| -> String {
        unreadable
            .iter()
            .find(|u| u[0] == path)
            .and_then(|u| u[1].as_str())
            .unwrap_or_else(|| panic!("{path} not listed: {unreadable:?}"))
            .to_owned()
    };
    assert!(
        why(last).starts_with("not a valid record: "),
        "{}",
        why(last)
    );
    assert!(
        why(prior).starts_with("not a valid record: "),
        "{}",
        why(prior)
    );
    assert!(why(prior).contains("digest"), "{}", why(prior));
    assert_eq!(
        why(&misplaced),
        "holds a record of lane nightly slot 2026-11-20T01:00:00Z, which belongs elsewhere"
    );
    // The three records left are the lane's figures; none is made up.
    let nightly = &r["lanes"][1];
    assert_eq!(nightly["durations"].as_array().expect("durations").len(), 3);
    assert_eq!(nightly["watchdog"]["last_on_time"], "2026-11-28T01:00:00Z");

    let t = text(&health(&dir, &["--now", "2026-11-30T06:00:00Z"]).stdout);
    assert!(
        t.contains(&format!("unreadable record {last}: not a valid record")),
        "{t}"
    );
    let m = text(&health(&dir, &["--now", "2026-11-30T06:00:00Z", "--markdown"]).stdout);
    assert!(
        m.contains("**3 record(s) of history could not be read**"),
        "{m}"
    );

    // The watchdog reads the lookback's records by the same rule.
    let w = Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
        .arg("watchdog")
        .arg("--local")
        .arg(&dir)
        .arg("--manifest")
        .arg(dir.join("schedule.toml"))
        .args(["--now", "2026-11-30T06:00:00Z", "--json"])
        .output()
        .expect("runs");
    assert_eq!(w.status.code(), Some(1), "{}", text(&w.stderr));
    let w: Value = serde_json::from_slice(&w.stdout).expect("json");
    let listed: Vec<&str> = w["unreadable"]
        .as_array()
        .expect("unreadable")
        .iter()
        .map(|u| u[0].as_str().expect("path"))
        .collect();
    for path in [last.as_str(), prior.as_str(), misplaced.as_str()] {
        assert!(listed.contains(&path), "{path} not in {listed:?}");
    }
}
