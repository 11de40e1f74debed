//! Lane runs end to end in local mode, every step a separate process of the
//! real binaries: `benchops-exec lane run` measures a demo subject (a git
//! repository whose speed each commit sets), compares it with the lane's
//! baseline from the local history, confirms, and seals; `benchops-publish
//! sweep --local` persists the record and reconciles the issue ledger.
//!
//! Every test that asserts a verdict measures `work_s`, a metric the subject
//! reports itself: its values are drawn with a fixed seed around the level
//! the subject's commit sets, so the verdict does not depend on how busy
//! the machine is. One smoke test runs the demo's own timed workload and
//! asserts only that the lane runs, seals and publishes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::binaries::{PUBLISH, exec_bin, ok};

const MANIFEST: &str = r#"
schema = "schedule-manifest/v2"
repository = "example/widgets"
suite = ["bench.toml"]

[[lanes]]
name = "sentinel"
cron = "0 * * * *"
timezone = "UTC"
completion_window_minutes = 50
cases = ["widgets/size=small"]
baseline = "last-clean"
[lanes.comparison]
metrics = ["work_s"]
relative_threshold = 0.08
min_absolute = 0.001
confirm_runs = 8

[[lanes]]
name = "comprehensive"
cron = "0 1 * * *"
timezone = "UTC"
completion_window_minutes = 180
cases = ["*"]
baseline = "last-clean"
[lanes.comparison]
metrics = ["work_s"]
relative_threshold = 0.08
min_absolute = 0.001
confirm_runs = 8
"#;

const INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "widgets"
command = ["sh", "-c", "cd \"$BENCHOPS_SUBJECT_DIR\" && exec sh ./work.sh {size}"]
repetitions = 8
warmup = 1
timeout_s = 30

[metrics]
json_lines = true

[[parameters]]
name = "size"
values = ["small", "large"]
"#;

/// The demo's workload: a timed wait, measured by the script itself.
const TIMED_WORK: &str = include_str!("../../../../examples/lane/subject/work.sh");

/// The test workload: the level `speed.conf` sets for the size, with 1%
/// noise drawn from a seed, so every child reports its own value, the same
/// on every machine (`tests/fixtures/subjects/seeded-work.sh`).
const SEEDED_WORK: &str = include_str!("../../../../tests/fixtures/subjects/seeded-work.sh");

struct Demo {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Demo {
    /// A demo whose subject reports seeded values: for verdicts.
    fn new() -> Demo {
        Demo::with_work(SEEDED_WORK)
    }

    /// A demo whose subject times a real wait: for the smoke test.
    fn timed() -> Demo {
        Demo::with_work(TIMED_WORK)
    }

    fn with_work(work: &str) -> Demo {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().to_path_buf();
        std::fs::write(root.join("schedule.toml"), MANIFEST).expect("manifest");
        std::fs::write(root.join("bench.toml"), INTENT).expect("intent");
        let subject = root.join("widgets");
        std::fs::create_dir_all(&subject).expect("subject");
        std::fs::write(subject.join("work.sh"), work).expect("work.sh");
        git(&subject, &["init", "--quiet"]);
        std::fs::create_dir_all(root.join("pub")).expect("pub");
        Demo { _tmp: tmp, root }
    }

    fn subject(&self) -> PathBuf {
        self.root.join("widgets")
    }

    fn pub_dir(&self) -> PathBuf {
        self.root.join("pub")
    }

    /// Sets the subject's speed in a commit; returns the commit.
    fn commit(&self, small_ms: u32, large_ms: u32, message: &str) -> String {
        std::fs::write(
            self.subject().join("speed.conf"),
            format!("SMALL_MS={small_ms}\nLARGE_MS={large_ms}\n"),
        )
        .expect("speed.conf");
        self.commit_all(message)
    }

    /// A commit that changes no speed; returns the commit.
    fn note(&self, message: &str) -> String {
        let path = self.subject().join("NOTES");
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        text.push_str(message);
        text.push('\n');
        std::fs::write(&path, text).expect("NOTES");
        self.commit_all(message)
    }

    /// Commits everything as it is; returns the commit.
    fn commit_all(&self, message: &str) -> String {
        git(&self.subject(), &["add", "-A"]);
        git(&self.subject(), &["commit", "--quiet", "-m", message]);
        git_head(&self.subject())
    }

    fn exec(&self, args: &[&str]) -> Output {
        Command::new(exec_bin())
            .arg("--state")
            .arg(self.pub_dir())
            .args(args)
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN")
            .output()
            .expect("benchops-exec runs")
    }

    fn lane_args(&self, lane: &str, slot: &str) -> Vec<String> {
        [
            "lane",
            "run",
            "--manifest",
            &self.root.join("schedule.toml").display().to_string(),
            "--lane",
            lane,
            "--history",
            &self.pub_dir().join("history.git").display().to_string(),
            "--subject",
            &self.subject().display().to_string(),
            "--slot",
            slot,
            "--out",
            &self.pub_dir().join("sealed").display().to_string(),
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    }

    /// `lane run --wait`; returns what it printed.
    fn lane_run(&self, lane: &str, slot: &str) -> String {
        let mut args = self.lane_args(lane, slot);
        args.push("--wait".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(&self.exec(&args))
    }

    fn sweep(&self) -> String {
        let o = Command::new(PUBLISH)
            .args(["sweep", "--local"])
            .arg(self.pub_dir())
            .arg("--manifest")
            .arg(self.root.join("schedule.toml"))
            .output()
            .expect("benchops-publish runs");
        ok(&o)
    }

    fn ledger(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.pub_dir().join("issues.json")).expect("ledger"))
            .expect("ledger JSON")
    }

    /// The last sealed record the lane run printed the digest of.
    fn record(&self, out: &str) -> Value {
        let digest = out
            .lines()
            .find_map(|l| l.strip_prefix("sealed sha256:"))
            .and_then(|l| l.split(':').next())
            .expect("a sealed record line");
        let name = format!("{digest}.json");
        let sealed = self.pub_dir().join("sealed");
        let path = [sealed.join(&name), sealed.join(".persisted").join(&name)]
            .into_iter()
            .find(|p| p.is_file())
            .expect("the sealed file");
        serde_json::from_slice(&std::fs::read(path).expect("record")).expect("record JSON")
    }
}

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
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
        .status()
        .expect("git runs");
    assert!(st.success(), "git {args:?}");
}

fn git_head(dir: &Path) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "HEAD"])
        .output()
        .expect("git rev-parse");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The comparison entry of `case` in `rec`.
fn key_of(rec: &Value, case: &str) -> Value {
    rec["comparison"]["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .find(|k| k["case"] == case && k["metric"] == "work_s")
        .cloned()
        .expect("the key of the case")
}

fn verdict(record: &Value, case: &str) -> String {
    record["comparison"]["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .find(|k| k["case"] == case && k["metric"] == "work_s")
        .map(|k| k["verdict"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_else(|| "not compared".into())
}

fn issues(ledger: &Value) -> Vec<(String, String)> {
    ledger["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .map(|i| {
            (
                i["title"].as_str().unwrap_or_default().to_owned(),
                i["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_regression_is_confirmed_published_held_by_the_full_lane_and_closed_by_its_fix() {
    let d = Demo::new();
    d.sweep(); // the history repository exists before the first lane run

    // 1. First runs: no baseline, so each lane proposes one.
    d.commit(50, 100, "first");
    let out = d.lane_run("comprehensive", "2026-11-01T01:00:00Z");
    let first = d.record(&out);
    assert_eq!(first["schema"], "benchmark-result/v3");
    assert_eq!(first["comparison"]["confirm"]["mode"], "same-session");
    assert!(first["baseline"].is_null());
    assert!(
        first["comparison"]["no_baseline_reason"]
            .as_str()
            .is_some_and(|r| r.contains("first run")),
        "{}",
        first["comparison"]
    );
    assert!(first["publication"]["baseline_proposal"].is_object());
    d.lane_run("sentinel", "2026-11-01T01:00:00Z");
    d.sweep();

    // 2. Three commits land, the second slows the large case by 30%:
    //    confirmed in the same session, bisected to the culprit, sealed,
    //    announced with the culprit named.
    let baseline_commit = git_head(&d.subject());
    d.note("document the sizes");
    let culprit = d.commit(50, 130, "slower large");
    d.note("tidy the notes");
    let out = d.lane_run("comprehensive", "2026-11-02T01:00:00Z");
    let rec = d.record(&out);
    assert_eq!(
        verdict(&rec, "widgets/size=large"),
        "confirmed_regression",
        "{out}"
    );
    let key = key_of(&rec, "widgets/size=large");
    assert_eq!(key["role"], "suspect_regression");
    assert_eq!(key["decided_by"], "same_session", "{key}");
    assert!(key["confirmation"].is_null(), "{key}");
    let ab = &key["same_session"];
    assert_eq!(ab["baseline_commit"], baseline_commit.as_str());
    let side = |s: &str| {
        ab["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .filter(|r| r["side"] == s && r["value"].is_number() && r["node"].is_string())
            .count()
    };
    assert_eq!((side("a"), side("b")), (8, 8), "{ab}");
    assert!(ab["effect"]["estimate"].as_f64().expect("estimate") > 0.15);
    let b = &rec["comparison"]["bisection"];
    assert_eq!(b["culprit"], culprit.as_str(), "{b}");
    assert_eq!(b["commits"].as_array().map(Vec::len), Some(4), "{b}");
    assert_eq!(b["steps"].as_array().map(Vec::len), Some(2), "{b}");
    assert!(out.contains(&format!("culprit commit {culprit}")), "{out}");
    assert!(rec["publication"]["baseline_proposal"].is_null());
    assert_eq!(rec["baseline"]["slot"], "2026-11-01T01:00:00Z");
    let report = d.sweep();
    assert!(report.contains("opened 1"), "{report}");
    assert_eq!(
        issues(&d.ledger()),
        vec![(
            "Benchmark drift: widgets/size=large work_s".to_owned(),
            "open".to_owned()
        )]
    );
    let body = d.ledger()["issues"][0]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        body.contains(&culprit),
        "the issue names the culprit: {body}"
    );

    // 3. The fix, seen by the sentinel alone, cannot close it: the sentinel
    //    does not cover the large case.
    d.commit(50, 100, "fast again");
    d.lane_run("sentinel", "2026-11-02T02:00:00Z");
    let report = d.sweep();
    assert!(report.contains("closed 0"), "{report}");
    assert_eq!(issues(&d.ledger())[0].1, "open");

    // 4. The comprehensive lane re-runs the drifting case and confirms the
    //    clear; the issue closes.
    let out = d.lane_run("comprehensive", "2026-11-03T01:00:00Z");
    let rec = d.record(&out);
    let key = key_of(&rec, "widgets/size=large");
    assert_eq!(key["drifting_in_history"], true);
    assert_eq!(key["role"], "confirm_clear", "{key}");
    assert_eq!(key["verdict"], "within_band", "{key}");
    assert_eq!(key["decided_by"], "same_session", "{key}");
    // A clear measures twice the runs on each side.
    assert_eq!(
        key["same_session"]["runs"].as_array().map(Vec::len),
        Some(32),
        "{key}"
    );
    let report = d.sweep();
    assert!(report.contains("closed 1"), "{report}");
    assert_eq!(issues(&d.ledger())[0].1, "closed");

    // 5. A 1% wobble inside the band opens nothing.
    d.commit(50, 101, "one percent");
    let out = d.lane_run("comprehensive", "2026-11-04T01:00:00Z");
    let rec = d.record(&out);
    assert!(
        rec["publication"]["drift_reports"]
            .as_array()
            .is_some_and(Vec::is_empty),
        "{out}"
    );
    let v = verdict(&rec, "widgets/size=large");
    assert!(
        !v.starts_with("confirmed"),
        "a 1% wobble must not be confirmed: {v}"
    );
    let report = d.sweep();
    assert!(
        report.contains("opened 0") && report.contains("reopened 0"),
        "{report}"
    );
    assert_eq!(issues(&d.ledger()).len(), 1);
}

/// Every child directory of a benchmark that holds a result.
fn results(pub_dir: &Path, benchmark: &str) -> usize {
    let hex = benchmark.trim_start_matches("sha256:");
    let mut n = 0;
    let mut stack = vec![pub_dir.join("benchmarks").join(hex)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "result.json") {
                n += 1;
            }
        }
    }
    n
}

/// The lane execution of `slot`.
fn lane_json(d: &Demo, slot: &str) -> Option<Value> {
    let lanes = d.pub_dir().join("lanes");
    std::fs::read_dir(&lanes)
        .ok()?
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("lane.json")).ok())
        .filter_map(|b| serde_json::from_slice::<Value>(&b).ok())
        .find(|v| v["slot"] == slot)
}

fn kill_group(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

const SLOT: &str = "2026-11-02T01:00:00Z";

#[test]
fn a_lane_killed_while_measuring_confirming_and_bisecting_resumes_and_reruns_nothing() {
    let d = Demo::new();
    d.sweep();
    d.commit(50, 100, "first");
    d.lane_run("comprehensive", "2026-11-01T01:00:00Z");
    d.sweep();
    d.note("document the sizes");
    d.note("more notes");
    let culprit = d.commit(50, 130, "slower large");
    d.note("tidy the notes");

    let spawn_driver = || {
        let mut args = d.lane_args("comprehensive", SLOT);
        args.push("--wait".into());
        Command::new(exec_bin())
            .arg("--state")
            .arg(d.pub_dir())
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn")
    };
    // Kill the driver while it measures.
    let mut driver = spawn_driver();
    let deadline = Instant::now() + Duration::from_secs(120);
    while lane_json(&d, SLOT).is_none() {
        assert!(Instant::now() < deadline, "the lane never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    kill_group(&mut driver);
    let l = lane_json(&d, SLOT).expect("lane");
    assert_eq!(l["phase"], "measuring", "killed while measuring");
    let id = l["id"].as_str().expect("id").to_owned();

    // `lane run` again resumes the same execution; kill it once it is
    // confirming.
    let mut driver = spawn_driver();
    while lane_json(&d, SLOT).expect("lane")["phase"] == "measuring" {
        assert!(Instant::now() < deadline, "measuring never finished");
        std::thread::sleep(Duration::from_millis(10));
    }
    kill_group(&mut driver);
    let l = lane_json(&d, SLOT).expect("lane");
    assert_eq!(l["id"], id.as_str(), "the same execution resumed");
    assert_eq!(l["phase"], "confirming", "a 30% slowdown is re-run: {l}");

    // Again, killed once it bisects, in the middle of a step.
    let mut driver = spawn_driver();
    while lane_json(&d, SLOT).expect("lane")["phase"] == "confirming" {
        assert!(Instant::now() < deadline, "confirming never finished");
        std::thread::sleep(Duration::from_millis(10));
    }
    kill_group(&mut driver);
    let l = lane_json(&d, SLOT).expect("lane");
    assert_eq!(
        l["phase"], "bisecting",
        "a confirmed regression is bisected: {l}"
    );

    // Fresh `lane advance` processes finish it.
    loop {
        let out = ok(&d.exec(&["lane", "advance", &id]));
        if out.contains(" sealed") {
            break;
        }
        assert!(Instant::now() < deadline, "bisecting never finished: {out}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Advancing a sealed execution again changes nothing.
    let again = ok(&d.exec(&["lane", "advance", &id]));
    assert!(again.contains(" sealed"), "{again}");

    assert!(
        again.contains(&format!("culprit commit {culprit}")),
        "{again}"
    );

    // Every stage benchmark was submitted once, and each child ran once.
    let l = lane_json(&d, SLOT).expect("lane");
    assert!(
        l["bisect"]["stages"]
            .as_array()
            .is_some_and(|s| s.len() >= 2),
        "{l}"
    );
    for stage in ["measuring", "confirming", "bisecting"] {
        let list = match stage {
            "bisecting" => &l["bisect"]["stages"],
            _ => &l[stage],
        };
        for b in list.as_array().expect("stage") {
            let digest = b["benchmark"].as_str().expect("digest");
            let hex = digest.trim_start_matches("sha256:");
            let subs =
                std::fs::read_dir(d.pub_dir().join("benchmarks").join(hex).join("submissions"))
                    .map(|r| {
                        r.flatten()
                            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                            .count()
                    })
                    .unwrap_or(0);
            assert_eq!(subs, 1, "{stage} benchmark {digest} was submitted once");
            assert_eq!(
                results(&d.pub_dir(), digest) as u64,
                b["children"].as_u64().expect("children"),
                "{stage}: one result per child, none re-run"
            );
        }
    }
}

#[test]
fn bad_input_is_refused_with_the_file_and_the_reason_and_nothing_half_done() {
    let d = Demo::new();
    d.sweep();
    d.commit(50, 100, "first");
    let run = |extra_env: &[(&str, &str)], args: Vec<String>| -> Output {
        let mut c = Command::new(exec_bin());
        c.arg("--state").arg(d.pub_dir()).args(&args);
        c.env_remove("GITHUB_TOKEN").env_remove("GH_TOKEN");
        for (k, v) in extra_env {
            c.env(k, v);
        }
        c.output().expect("runs")
    };
    let refused = |o: &Output, needles: &[&str]| {
        assert_eq!(o.status.code(), Some(2), "{o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        for n in needles {
            assert!(err.contains(n), "{n:?} not in {err}");
        }
        assert!(
            !d.pub_dir().join("lanes").exists()
                || std::fs::read_dir(d.pub_dir().join("lanes"))
                    .expect("lanes")
                    .flatten()
                    .all(|e| !e.path().join("lane.json").exists()),
            "nothing was started"
        );
        assert!(!d.pub_dir().join("sealed").exists(), "nothing was sealed");
    };
    let slot = "2026-11-01T01:00:00Z";

    // Publication credentials in the environment.
    for var in [
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "BENCHOPS_APP_KEY_FILE",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "ACTIONS_RUNTIME_TOKEN",
    ] {
        let o = run(&[(var, "secret-value")], d.lane_args("comprehensive", slot));
        refused(&o, &["refusing to run", var]);
        assert!(!String::from_utf8_lossy(&o.stderr).contains("secret-value"));
    }
    // An unknown lane.
    let o = run(&[], d.lane_args("nightly", slot));
    refused(
        &o,
        &[
            "schedule.toml",
            "lane `nightly` is not declared",
            "sentinel, comprehensive",
        ],
    );
    // History that cannot be read: missing, then not a repository.
    let mut args = d.lane_args("comprehensive", slot);
    let h = args
        .iter()
        .position(|a| a == "--history")
        .expect("--history")
        + 1;
    args[h] = d.root.join("nowhere.git").display().to_string();
    refused(&run(&[], args.clone()), &["nowhere.git", "does not exist"]);
    std::fs::create_dir_all(d.root.join("plain")).expect("dir");
    args[h] = d.root.join("plain").display().to_string();
    refused(&run(&[], args), &["plain", "not a git repository"]);
    // A manifest naming a missing intent.
    let m = d.root.join("missing.toml");
    std::fs::write(
        &m,
        MANIFEST.replace("suite = [\"bench.toml\"]", "suite = [\"gone.toml\"]"),
    )
    .expect("manifest");
    let mut args = d.lane_args("comprehensive", slot);
    let i = args
        .iter()
        .position(|a| a == "--manifest")
        .expect("--manifest")
        + 1;
    args[i] = m.display().to_string();
    refused(
        &run(&[], args.clone()),
        &["missing.toml", "$.suite[0]", "gone.toml"],
    );
    // A v1 manifest has no suite.
    std::fs::write(
        &m,
        MANIFEST
            .replace("schedule-manifest/v2", "schedule-manifest/v1")
            .replace("suite = [\"bench.toml\"]\n", "")
            .replace("[lanes.comparison]\nmetrics = [\"work_s\"]\nrelative_threshold = 0.08\nmin_absolute = 0.001\nconfirm_runs = 8\n", ""),
    )
    .expect("manifest");
    refused(&run(&[], args), &["missing.toml", "$.suite"]);
}

fn cluster_ready() -> bool {
    let ok = Command::new("scontrol")
        .arg("ping")
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("UP"));
    if !ok {
        let msg = "Slurm is not running here: start it with scripts/slurm-up.sh";
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg} (required in CI)");
        }
        eprintln!("\n!!! SLURM LANE TEST DID NOT RUN: {msg} !!!\n");
    }
    ok
}

/// Starts a lane run on Slurm and returns at once; then only reads
/// `lane.json` until the follow-up jobs have sealed it.
fn slurm_lane(d: &Demo, slot: &str) -> Value {
    let mut args = d.lane_args("comprehensive", slot);
    args.extend(["--backend".to_owned(), "slurm".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = Instant::now();
    let out = d.exec(&args);
    let printed = ok(&out);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "lane run returns once submitted"
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        stderr.contains("scheduled follow-up job"),
        "a dependency job follows the array: {stderr}"
    );
    let deadline = Instant::now() + Duration::from_secs(420);
    loop {
        let l = lane_json(d, slot).expect("lane");
        if l["phase"] == "sealed" {
            return l;
        }
        assert!(
            Instant::now() < deadline,
            "the lane did not seal unattended: {l:#}\n{printed}\n{stderr}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn sealed_record(l: &Value) -> Value {
    let path = PathBuf::from(l["sealed"]["path"].as_str().expect("sealed path"));
    serde_json::from_slice(&std::fs::read(path).expect("sealed file")).expect("record JSON")
}

#[test]
fn on_slurm_a_lane_measures_confirms_and_seals_with_nobody_waiting() {
    if !cluster_ready() {
        return;
    }
    let d = Demo::new();
    d.sweep();
    d.commit(50, 100, "first");
    let first = slurm_lane(&d, "2026-11-01T01:00:00Z");
    let rec = sealed_record(&first);
    assert_eq!(rec["executor"]["kind"], "slurm", "{}", rec["executor"]);
    assert!(rec["publication"]["baseline_proposal"].is_object());
    d.sweep();

    // Eight commits, the fourth 30% slower, in the metric the subject
    // reports: the verdict does not depend on Slurm's scheduling or the
    // machine's load.
    for n in 1..=3 {
        d.note(&format!("note {n}"));
    }
    let culprit = d.commit(50, 130, "slower large");
    for n in 4..=7 {
        d.note(&format!("note {n}"));
    }
    let l = slurm_lane(&d, "2026-11-02T01:00:00Z");
    // A follow-up after the measuring array, the A/B array and each
    // bisection step's array (more only when accounting lagged).
    assert!(
        l["follow_ups"].as_array().is_some_and(|f| f.len() >= 5),
        "{l:#}"
    );
    assert!(l["confirming"].as_array().is_some_and(|c| !c.is_empty()));
    let rec = sealed_record(&l);
    assert_eq!(
        verdict(&rec, "widgets/size=large"),
        "confirmed_regression",
        "{rec:#}"
    );
    assert_eq!(rec["executor"]["kind"], "slurm");
    let b = &rec["comparison"]["bisection"];
    assert_eq!(b["culprit"], culprit.as_str(), "{b:#}");
    assert!(b["steps"].as_array().is_some_and(|s| s.len() >= 3), "{b:#}");
    // Every run of both sides names the node it ran on.
    let key = key_of(&rec, "widgets/size=large");
    assert!(
        key["same_session"]["runs"]
            .as_array()
            .is_some_and(|r| !r.is_empty()
                && r.iter()
                    .all(|r| r["node"].as_str().is_some_and(|n| !n.is_empty()))),
        "{key:#}"
    );
    let report = d.sweep();
    assert!(report.contains("opened 1"), "{report}");
}

#[test]
fn smoke_the_timed_demo_workload_runs_seals_and_publishes() {
    // Wall time decides nothing here: on a loaded machine the timed wait
    // may read slower or faster, so only the pipeline is checked.
    let d = Demo::timed();
    d.sweep();
    d.commit(50, 100, "first");
    let out = d.lane_run("comprehensive", "2026-11-01T01:00:00Z");
    let first = d.record(&out);
    assert_eq!(first["schema"], "benchmark-result/v3");
    assert_eq!(first["runs"]["succeeded"], first["runs"]["total"], "{out}");
    let report = d.sweep();
    assert!(report.contains("persist: 1 new record(s)"), "{report}");

    d.commit(50, 130, "slower large");
    let out = d.lane_run("comprehensive", "2026-11-02T01:00:00Z");
    let second = d.record(&out);
    assert_eq!(second["baseline"]["slot"], "2026-11-01T01:00:00Z");
    assert!(
        verdict(&second, "widgets/size=large") != "not compared",
        "the large case was compared: {out}"
    );
    let report = d.sweep();
    assert!(report.contains("persist: 1 new record(s)"), "{report}");
}

#[test]
fn a_lane_comparing_a_metric_no_case_reports_refuses_to_seal() {
    let d = Demo::new();
    std::fs::write(
        d.root.join("schedule.toml"),
        MANIFEST.replace("metrics = [\"work_s\"]", "metrics = [\"work\"]"),
    )
    .expect("manifest");
    d.sweep();
    d.commit(50, 100, "first");
    let mut args = d.lane_args("comprehensive", "2026-11-01T01:00:00Z");
    args.push("--wait".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = d.exec(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("compares metric `work` that no case reports")
            && err.contains("`work_s`")
            && err.contains("[lanes.comparison]"),
        "{err}"
    );
    let sealed = d.pub_dir().join("sealed");
    assert!(
        !sealed.exists()
            || std::fs::read_dir(&sealed)
                .expect("sealed")
                .flatten()
                .all(|e| e.path().extension().is_none_or(|x| x != "json")),
        "nothing was sealed"
    );
}

#[test]
fn a_lane_run_whose_children_all_failed_seals_the_errors_and_does_not_exit_0() {
    let d = Demo::new();
    d.sweep();
    d.commit(50, 100, "first");
    git(&d.subject(), &["rm", "--quiet", "speed.conf"]);
    git(&d.subject(), &["commit", "--quiet", "-m", "lose the speed"]);
    let mut args = d.lane_args("comprehensive", "2026-11-01T01:00:00Z");
    args.push("--wait".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = d.exec(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for case in ["widgets/size=small", "widgets/size=large"] {
        assert!(
            err.contains(&format!(
                "{case}: 9 of 9 run(s) did not succeed; first: failed"
            )),
            "{case}: {err}"
        );
    }
    assert!(err.contains("speed.conf"), "the child's own words: {err}");
    // The record is sealed, with the errors in it and no baseline proposal.
    let rec = d.record(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(rec["runs"]["succeeded"], 0);
    assert!(rec["publication"]["baseline_proposal"].is_null());
    // The same outcome as JSON, from a later process: `lane advance --json`
    // of the sealed execution names each failed case and does not exit 0.
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let id = stdout
        .lines()
        .last()
        .expect("the id line")
        .trim()
        .to_owned();
    let o = d.exec(&["lane", "advance", &id, "--json"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["execution"]["phase"], "sealed");
    let failures = v["failures"].as_array().expect("failures");
    let cases: Vec<&str> = failures.iter().filter_map(|f| f["case"].as_str()).collect();
    assert_eq!(cases, ["widgets/size=small", "widgets/size=large"]);
    assert_eq!(
        (
            failures[0]["failed"].as_u64(),
            failures[0]["total"].as_u64()
        ),
        (Some(9), Some(9))
    );
    assert!(
        failures[0]["stderr"].to_string().contains("speed.conf"),
        "{}",
        failures[0]
    );
}

#[test]
fn a_subject_that_is_not_a_git_checkout_falls_back_to_the_stored_baseline_and_says_why() {
    let d = Demo::new();
    d.sweep();
    d.commit(50, 100, "first");
    d.lane_run("comprehensive", "2026-11-01T01:00:00Z");
    d.sweep();
    // The subject becomes a plain directory, slower: its commit is given.
    std::fs::remove_dir_all(d.subject().join(".git")).expect("un-git");
    std::fs::write(
        d.subject().join("speed.conf"),
        "SMALL_MS=50\nLARGE_MS=130\n",
    )
    .expect("speed.conf");
    let mut args = d.lane_args("comprehensive", "2026-11-02T01:00:00Z");
    args.extend(["--commit".into(), "c".repeat(40), "--wait".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ok(&d.exec(&args));
    assert!(
        out.contains("confirmation: stored-baseline (asked for same-session"),
        "{out}"
    );
    let rec = d.record(&out);
    let confirm = &rec["comparison"]["confirm"];
    assert_eq!(confirm["mode"], "stored-baseline", "{confirm}");
    assert_eq!(confirm["requested"], "same-session", "{confirm}");
    assert!(
        confirm["fallback_reason"]
            .as_str()
            .is_some_and(|r| r.contains("not a git checkout")),
        "{confirm}"
    );
    let key = key_of(&rec, "widgets/size=large");
    assert_eq!(key["verdict"], "confirmed_regression", "{key}");
    assert_eq!(key["decided_by"], "stored_baseline", "{key}");
    assert!(key["same_session"].is_null(), "{key}");
    assert!(rec["comparison"]["bisection"].is_null());
}

#[test]
fn a_bisection_over_a_merge_whose_budget_runs_out_names_the_smallest_range() {
    let d = Demo::new();
    let v3 = MANIFEST.replace("schedule-manifest/v2", "schedule-manifest/v3")
        + "\n[lanes.bisect]\nmax_steps = 1\n";
    std::fs::write(d.root.join("schedule.toml"), v3).expect("manifest");
    d.sweep();
    d.commit(50, 100, "first");
    d.lane_run("comprehensive", "2026-11-01T01:00:00Z");
    d.sweep();
    // A topic branch merged with a merge commit, then the slowdown, then
    // a note: the first-parent range holds the merge as one commit.
    git(&d.subject(), &["checkout", "--quiet", "-b", "topic"]);
    for n in 1..=2 {
        std::fs::write(d.subject().join("TOPIC"), format!("{n}\n")).expect("TOPIC");
        d.commit_all(&format!("topic {n}"));
    }
    git(&d.subject(), &["checkout", "--quiet", "-"]);
    d.note("main 1");
    git(
        &d.subject(),
        &["merge", "--quiet", "--no-ff", "-m", "merge topic", "topic"],
    );
    let merge = git_head(&d.subject());
    let culprit = d.commit(50, 130, "slower large");
    d.note("main 2");
    let out = d.lane_run("comprehensive", "2026-11-02T01:00:00Z");
    let rec = d.record(&out);
    let b = &rec["comparison"]["bisection"];
    let commits: Vec<&str> = b["commits"]
        .as_array()
        .expect("commits")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(commits.len(), 5, "first parents only: {b:#}");
    assert!(commits.contains(&merge.as_str()) && commits.contains(&culprit.as_str()));
    assert_eq!(b["budget_steps"], 1);
    assert_eq!(b["steps"].as_array().map(Vec::len), Some(1), "{b:#}");
    assert!(b["culprit"].is_null(), "{b:#}");
    assert!(
        b["reason"].as_str().is_some_and(|r| r.contains("budget")),
        "{b:#}"
    );
    // The range it proved holds the culprit.
    let at = |c: &Value| commits.iter().position(|x| Some(*x) == c.as_str());
    let (good, bad, truth) = (
        at(&b["good"]).expect("good"),
        at(&b["bad"]).expect("bad"),
        commits.iter().position(|c| *c == culprit).expect("culprit"),
    );
    assert!(good < truth && truth <= bad, "{good} < {truth} <= {bad}");
    assert!(out.contains("culprit not named"), "{out}");
}

#[test]
fn a_midpoint_that_does_not_build_is_its_own_outcome_and_never_a_measurement() {
    let d = Demo::new();
    let v3 = MANIFEST.replace("schedule-manifest/v2", "schedule-manifest/v3")
        + "\n[build]\ncommand = [\"sh\", \"-c\", \"echo building; test ! -f BROKEN || { echo BROKEN is here >&2; exit 3; }\"]\ntimeout_s = 60\n";
    std::fs::write(d.root.join("schedule.toml"), v3).expect("manifest");
    d.sweep();
    d.commit(50, 100, "first");
    d.lane_run("comprehensive", "2026-11-01T01:00:00Z");
    d.sweep();
    let c1 = d.note("note 1");
    std::fs::write(d.subject().join("BROKEN"), "").expect("BROKEN");
    let broken = d.commit_all("break the build");
    std::fs::remove_file(d.subject().join("BROKEN")).expect("unbreak");
    let culprit = d.commit(50, 130, "slower large, and the build mended");
    d.note("note 2");
    let out = d.lane_run("comprehensive", "2026-11-02T01:00:00Z");
    let rec = d.record(&out);
    assert_eq!(
        rec["comparison"]["confirm"]["mode"], "same-session",
        "{out}"
    );
    let b = &rec["comparison"]["bisection"];
    let steps = b["steps"].as_array().expect("steps");
    let failed: Vec<&Value> = steps
        .iter()
        .filter(|s| s["finding"] == "build_failed")
        .collect();
    assert!(!failed.is_empty(), "{b:#}");
    for s in &failed {
        assert_eq!(s["commit"], broken.as_str(), "{s}");
        assert!(s["runs"].as_array().is_some_and(Vec::is_empty), "{s}");
        let why = s["reason"].as_str().unwrap_or_default();
        assert!(
            why.contains("did not build")
                && why.contains("exit 3")
                && why.contains("BROKEN is here"),
            "{why}"
        );
    }
    // The culprit sits next to a commit that does not build: a range.
    assert!(b["culprit"].is_null(), "{b:#}");
    assert_eq!(b["good"], c1.as_str(), "{b:#}");
    assert_eq!(b["bad"], culprit.as_str(), "{b:#}");
    assert!(
        b["reason"].as_str().is_some_and(|r| r.contains("build")),
        "{b:#}"
    );
    // Each commit was built once, and its outcome kept.
    let kept = std::fs::read_dir(d.pub_dir().join("subjects"))
        .expect("subjects")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".build-"))
        .count();
    assert_eq!(
        kept, 5,
        "base, note 1, the broken commit, the culprit and note 2"
    );
}

#[test]
fn a_key_that_stays_regressed_is_measured_against_its_anchor_and_holds_no_other_key_hostage() {
    let d = Demo::new();
    d.sweep();
    let base = d.commit(50, 100, "first");
    d.lane_run("comprehensive", "2026-11-01T01:00:00Z");
    d.sweep();
    // The large case regresses, and is never fixed.
    d.commit(50, 130, "slower large");
    d.lane_run("comprehensive", "2026-11-02T01:00:00Z");
    let report = d.sweep();
    assert!(report.contains("opened 1"), "{report}");

    // A commit that changes nothing: the large case still reproduces
    // against its anchor, and the lane's baseline moves on all the same.
    let quiet = d.note("nothing changes");
    let out = d.lane_run("comprehensive", "2026-11-03T01:00:00Z");
    let rec = d.record(&out);
    let large = key_of(&rec, "widgets/size=large");
    assert_eq!(large["drifting_in_history"], true, "{large}");
    assert_eq!(large["verdict"], "confirmed_regression", "{large}");
    assert_eq!(
        large["same_session"]["baseline_commit"],
        base.as_str(),
        "{large}"
    );
    assert!(
        rec["publication"]["baseline_proposal"].is_object(),
        "a drifting key measured against its anchor does not hold the baseline: {out}"
    );
    assert!(
        rec["comparison"]["bisection"].is_null(),
        "not bisected again"
    );
    let report = d.sweep();
    assert!(report.contains("baseline comprehensive:"), "{report}");
    assert_eq!(issues(&d.ledger())[0].1, "open");

    // The small case regresses: confirmed against the new baseline, and
    // bisected from it; the large case keeps its anchor.
    let small_culprit = d.commit(65, 130, "slower small");
    let out = d.lane_run("comprehensive", "2026-11-04T01:00:00Z");
    let rec = d.record(&out);
    assert_eq!(rec["baseline"]["slot"], "2026-11-03T01:00:00Z");
    let small = key_of(&rec, "widgets/size=small");
    assert_eq!(small["verdict"], "confirmed_regression", "{small}");
    assert_eq!(
        small["same_session"]["baseline_commit"],
        quiet.as_str(),
        "{small}"
    );
    let large = key_of(&rec, "widgets/size=large");
    assert_eq!(
        large["same_session"]["baseline_commit"],
        base.as_str(),
        "{large}"
    );
    let b = &rec["comparison"]["bisection"];
    assert_eq!(b["commits"][0], quiet.as_str(), "{b:#}");
    assert_eq!(b["culprit"], small_culprit.as_str(), "{b:#}");

    // The large case's fix clears it against its anchor.
    d.commit(65, 100, "fast large again");
    let out = d.lane_run("comprehensive", "2026-11-05T01:00:00Z");
    let rec = d.record(&out);
    let large = key_of(&rec, "widgets/size=large");
    assert_eq!(large["verdict"], "within_band", "{large}");
    assert_eq!(
        large["same_session"]["baseline_commit"],
        base.as_str(),
        "{large}"
    );
}

#[test]
fn lane_bisect_by_hand_names_the_culprit_resumes_and_refuses_a_bad_range() {
    let d = Demo::new();
    let good = d.commit(50, 100, "first");
    for n in 1..=2 {
        d.note(&format!("note {n}"));
    }
    let culprit = d.commit(50, 130, "slower large");
    for n in 3..=5 {
        d.note(&format!("note {n}"));
    }
    let manifest = d.root.join("schedule.toml").display().to_string();
    let subject = d.subject().display().to_string();
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "lane",
            "bisect",
            "--manifest",
            &manifest,
            "--lane",
            "comprehensive",
            "--subject",
            &subject,
            "--case",
            "widgets/size=large",
            "--slots",
            "2",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        a
    };
    let run = |extra: &[&str]| {
        let a = args(extra);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        d.exec(&a)
    };
    let o = run(&["--good", &good, "--bad", "HEAD", "--wait"]);
    let out = ok(&o);
    assert!(out.contains(&format!("culprit commit {culprit}")), "{out}");
    assert!(out.contains("finished"), "{out}");
    // Again: the same bisection, resumed and already finished; nothing
    // is measured twice. Its answer as JSON.
    let o = run(&["--good", &good, "--bad", "HEAD", "--wait", "--json"]);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(stderr.contains("resumed"), "{stderr}");
    let b: Value = serde_json::from_str(&ok(&o)).expect("json");
    assert_eq!(b["culprit"], culprit.as_str(), "{b:#}");
    assert_eq!(b["commits"].as_array().map(Vec::len), Some(7), "{b:#}");
    let stages = std::fs::read_dir(d.pub_dir().join("benchmarks"))
        .expect("benchmarks")
        .flatten()
        .filter(|e| e.path().join("submissions").is_dir())
        .count();
    assert_eq!(
        stages,
        b["steps"].as_array().map(Vec::len).unwrap_or(0),
        "one submitted stage per step"
    );
    // Bad input: a revision that does not exist, and bounds the wrong way.
    let o = run(&["--good", "no-such-rev", "--bad", "HEAD"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--good") && err.contains("no-such-rev"),
        "{err}"
    );
    let o = run(&["--good", "HEAD", "--bad", &good]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--good and --bad") && err.contains("ancestor"),
        "{err}"
    );
}

#[test]
fn a_slot_the_cron_never_gives_is_refused_unless_the_run_is_recorded_as_unscheduled() {
    let d = Demo::new();
    d.sweep();
    d.commit(50, 100, "first");
    // Yesterday at 00:30 UTC: the comprehensive lane fires at 01:00.
    let yesterday = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(24);
    let day = yesterday.to_string()[..10].to_owned();
    let slot = format!("{day}T00:30:00Z");
    let mut args = d.lane_args("comprehensive", &slot);
    args.push("--wait".into());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = d.exec(&a);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("is not a firing of the lane's cron")
            && err.contains(&format!("{day}T01:00:00Z"))
            && err.contains("--unscheduled"),
        "{err}"
    );
    assert!(!d.pub_dir().join("lanes").exists(), "nothing was started");
    // On purpose, with a reason: recorded, and the watchdog lists it.
    args.extend(["--unscheduled".into(), "checking a hotfix by hand".into()]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ok(&d.exec(&a));
    let rec = d.record(&out);
    assert_eq!(rec["unscheduled"], "checking a hotfix by hand");
    assert_eq!(rec["slot"], slot.as_str());
    let report = d.sweep();
    assert!(
        report.contains("1 unscheduled record(s)"),
        "the watchdog shows it: {report}"
    );
}
