//! The local backend end to end, each step in its own process, as a user
//! would run it: submit and exit, then status, then analyze.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

const EXE: &str = env!("CARGO_BIN_EXE_benchops-exec");

/// 3 points x 5 repetitions: `ok` always succeeds, `fail` always exits 3,
/// and `mixed` times out on repetition 2 and is SIGKILLed on repetition 4.
const INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "mix"
command = ["sh", "-c", """
case {mode} in
  ok) echo '{"metric": "answer", "value": 42, "unit": "count", "direction": "higher_is_better"}' ;;
  fail) exit 3 ;;
  mixed)
    case "$BENCHOPS_REPETITION" in
      2) sleep 30 ;;
      4) kill -9 $$ ;;
      *) echo '{"metric": "answer", "value": null, "unit": "count"}' ;;
    esac ;;
esac
"""]
repetitions = 5
timeout_s = 1

[[parameters]]
name = "mode"
values = ["ok", "fail", "mixed"]

[metrics]
json_lines = true
"#;

const MANIFEST: &str = r#"
schema = "schedule-manifest/v1"
[[lanes]]
name = "full"
cron = "0 1 * * *"
timezone = "UTC"
completion_window_minutes = 60
cases = ["*"]
baseline = "last-clean"
[[lanes]]
name = "okonly"
cron = "0 * * * *"
timezone = "UTC"
completion_window_minutes = 30
cases = ["mix/mode=ok"]
baseline = "last-clean"
"#;

fn exec(state: &Path, args: &[&str]) -> Output {
    Command::new(EXE)
        .arg("--state")
        .arg(state)
        .args(args)
        .env("GITHUB_TOKEN", "must-not-reach-children")
        .output()
        .expect("benchops-exec runs")
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn setup(intent: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let intent_path = dir.path().join("bench.toml");
    std::fs::write(&intent_path, intent).expect("write intent");
    (dir, state, intent_path)
}

fn submit(state: &Path, intent: &Path, slots: &str) -> String {
    let o = exec(
        state,
        &[
            "bench",
            "submit",
            intent.to_str().expect("utf-8"),
            "--slots",
            slots,
        ],
    );
    stdout(&o).trim().to_owned()
}

fn wait_terminal(state: &Path, digest: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let o = exec(state, &["bench", "status", digest, "--json"]);
        let v: Value = serde_json::from_str(&stdout(&o)).expect("status JSON");
        if v["terminal"] == true {
            return v;
        }
        assert!(Instant::now() < deadline, "not terminal in time: {v}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn submit_exit_status_analyze_from_separate_processes() {
    let (_dir, state, intent) = setup(INTENT);
    let digest = submit(&state, &intent, "3");
    assert!(digest.starts_with("sha256:"), "{digest}");

    let status = wait_terminal(&state, &digest);
    let counts = &status["counts"];
    assert_eq!(counts["total"], 15);
    assert_eq!(counts["succeeded"], 8, "{status:#}");
    assert_eq!(counts["failed"], 7, "{status:#}");
    for class in ["incomplete", "missing", "stale", "scheduler_inconsistent"] {
        assert_eq!(counts[class], 0, "{class}: {status:#}");
    }
    let reasons: Vec<&str> = status["children"]
        .as_array()
        .expect("children")
        .iter()
        .filter(|c| c["class"] == "failed")
        .map(|c| c["reason"].as_str().expect("reason"))
        .collect();
    assert_eq!(
        reasons.iter().filter(|r| **r == "exit 3").count(),
        5,
        "{reasons:?}"
    );
    assert_eq!(
        reasons
            .iter()
            .filter(|r| r.starts_with("timed out after 1 s"))
            .count(),
        1,
        "{reasons:?}"
    );
    assert_eq!(
        reasons
            .iter()
            .filter(|r| **r == "signal 9 (SIGKILL)")
            .count(),
        1,
        "{reasons:?}"
    );

    let a1 = exec(&state, &["bench", "analyze", &digest, "--format", "json"]);
    let a2 = exec(&state, &["bench", "analyze", &digest, "--format", "json"]);
    assert_eq!(a1.stdout, a2.stdout, "analysis must be byte-identical");
    let analysis: Value = serde_json::from_slice(&a1.stdout).expect("analysis JSON");
    assert_eq!(analysis["complete"], true);
    assert_eq!(analysis["runs"]["succeeded"], 8);
    let cases = analysis["cases"].as_array().expect("cases");
    let names: Vec<&str> = cases
        .iter()
        .map(|c| c["case"].as_str().expect("case"))
        .collect();
    assert_eq!(names, ["mix/mode=ok", "mix/mode=fail", "mix/mode=mixed"]);
    // Aggregates come from successes only.
    let metric = |case: &Value, name: &str| {
        case["metrics"]
            .as_array()
            .expect("metrics")
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
    };
    let ok_answer = metric(&cases[0], "answer").expect("answer metric");
    assert_eq!(ok_answer["summary"]["n"], 5);
    assert_eq!(ok_answer["summary"]["median"], 42);
    assert_eq!(ok_answer["direction"], "higher_is_better");
    assert_eq!(
        metric(&cases[0], "wall_s").expect("wall")["direction"],
        "lower_is_better"
    );
    assert!(
        metric(&cases[1], "wall_s").is_none(),
        "a point with no success has no aggregates"
    );
    assert_eq!(cases[1]["runs"]["failed"], 5);
    let mixed_wall = metric(&cases[2], "wall_s").expect("wall");
    assert_eq!(mixed_wall["summary"]["n"], 3);
    // null stays null: the mixed point reported its metric as not measured.
    let mixed_answer = metric(&cases[2], "answer").expect("answer metric");
    assert_eq!(
        mixed_answer["samples"],
        serde_json::json!([null, null, null])
    );
    assert_eq!(mixed_answer["summary"], Value::Null);

    // Sealing: a lane covering every case gets every case, and cases with
    // failures are never a pass.
    let dir = state.parent().expect("state has a parent");
    let manifest = dir.join("schedule.toml");
    std::fs::write(&manifest, MANIFEST).expect("write manifest");
    let out = dir.join("sealed");
    let seal = |lane: &str| -> Value {
        let o = exec(
            &state,
            &[
                "bench",
                "seal",
                &digest,
                "--manifest",
                manifest.to_str().expect("utf-8"),
                "--lane",
                lane,
                "--slot",
                "2026-11-30T01:00:00Z",
                "--repository",
                "example/widgets",
                "--commit",
                "3f1c2a9d8e7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
                "--out",
                out.to_str().expect("utf-8"),
            ],
        );
        let line = stdout(&o);
        let path = line.split(" -> ").nth(1).expect("path").trim().to_owned();
        let bytes = std::fs::read(&path).expect("sealed file");
        benchops::verify(&bytes, None).expect("sealed record verifies");
        serde_json::from_slice(&bytes).expect("json")
    };
    let full = seal("full");
    let outcomes: Vec<(&str, &str)> = full["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().expect("id"),
                c["outcome"].as_str().expect("outcome"),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("mix/mode=ok", "pass"),
            ("mix/mode=fail", "error"),
            ("mix/mode=mixed", "error")
        ]
    );
    assert_eq!(full["cases"][1]["error"]["kind"], "no_successful_runs");
    assert_eq!(full["cases"][2]["error"]["kind"], "partial_failures");
    assert_eq!(full["publication"]["baseline_proposal"], Value::Null);
    assert_eq!(full["runs"]["total"], 15);
    assert_eq!(seal("full"), full, "sealing again gives the same record");
    let okonly = seal("okonly");
    assert_eq!(okonly["cases"].as_array().expect("cases").len(), 1);
    assert_eq!(okonly["publication"]["baseline_proposal"]["lane"], "okonly");
    assert_eq!(
        okonly["publication"]["cleared"],
        serde_json::json!(["mix/mode=ok"])
    );
    // A lane whose time zone cannot be read is refused, as check-manifest
    // refuses it.
    let bad_zone = dir.join("bad-zone.toml");
    std::fs::write(
        &bad_zone,
        MANIFEST.replacen("timezone = \"UTC\"", "timezone = \"Mars/Olympus\"", 1),
    )
    .expect("write");
    let o = exec(
        &state,
        &[
            "bench",
            "seal",
            &digest,
            "--manifest",
            bad_zone.to_str().expect("utf-8"),
            "--lane",
            "full",
            "--slot",
            "2026-11-30T01:00:00Z",
            "--repository",
            "example/widgets",
            "--commit",
            "3f1c2a9d8e7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
            "--out",
            out.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(".timezone") && err.contains("Mars/Olympus"),
        "{err}"
    );
    // A commit prefix or a URL is refused in the flag's own words.
    for (flag, value, says) in [
        ("--commit", "3f1c2a9", "git rev-parse 3f1c2a9"),
        (
            "--repository",
            "https://github.com/example/widgets",
            "owner/name",
        ),
    ] {
        let mut args = vec![
            "bench",
            "seal",
            &digest,
            "--manifest",
            manifest.to_str().expect("utf-8"),
            "--lane",
            "full",
            "--slot",
            "2026-11-30T01:00:00Z",
            "--repository",
            "example/widgets",
            "--commit",
            "3f1c2a9d8e7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
            "--out",
            out.to_str().expect("utf-8"),
        ];
        let at = args.iter().position(|a| *a == flag).expect("flag") + 1;
        args[at] = value;
        let o = exec(&state, &args);
        assert_eq!(o.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(flag) && err.contains(says), "{flag}: {err}");
        assert!(!err.contains("$.subject"), "no JSON path: {err}");
    }

    // Children never saw the publication credential of the submitting shell.
    let result = state_file(&state, &digest, 0, "result.json");
    let r: Value = serde_json::from_str(&result).expect("result JSON");
    assert_eq!(r["exit"]["kind"], "exited");
}

fn state_file(state: &Path, digest: &str, index: u64, name: &str) -> String {
    let hex = digest.trim_start_matches("sha256:");
    std::fs::read_to_string(
        state
            .join("benchmarks")
            .join(hex)
            .join("runs")
            .join(index.to_string())
            .join("1")
            .join(name),
    )
    .expect("state file")
}

fn attempt_dir(state: &Path, digest: &str, index: u64) -> PathBuf {
    let hex = digest.trim_start_matches("sha256:");
    state
        .join("benchmarks")
        .join(hex)
        .join("runs")
        .join(index.to_string())
        .join("1")
}

const QUICK: &str = r#"
schema = "benchmark-intent/v1"
name = "quick"
command = ["sh", "-c", "printf '%s' \"${GITHUB_TOKEN-absent}\""]
repetitions = 4
"#;

#[test]
fn corrupted_state_is_classified_never_crashes() {
    let (_dir, state, intent) = setup(QUICK);
    let digest = submit(&state, &intent, "2");
    let status = wait_terminal(&state, &digest);
    assert_eq!(status["counts"]["succeeded"], 4, "{status:#}");
    let tail: Value =
        serde_json::from_str(&state_file(&state, &digest, 0, "result.json")).expect("json");
    assert_eq!(
        tail["stdout_tail"], "absent",
        "publication credentials must not reach children"
    );

    // 0: truncated result file; 1: result deleted after completion;
    // 2: no evidence at all (never started, wrapper gone).
    let r0 = attempt_dir(&state, &digest, 0).join("result.json");
    let bytes = std::fs::read(&r0).expect("result");
    std::fs::write(&r0, &bytes[..bytes.len() / 2]).expect("truncate");
    std::fs::remove_file(attempt_dir(&state, &digest, 1).join("result.json")).expect("delete");
    std::fs::remove_dir_all(attempt_dir(&state, &digest, 2)).expect("delete");

    let o = exec(&state, &["bench", "status", &digest, "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("status");
    let class = |i: usize| {
        v["children"][i]["class"]
            .as_str()
            .expect("class")
            .to_owned()
    };
    let reason = |i: usize| {
        v["children"][i]["reason"]
            .as_str()
            .expect("reason")
            .to_owned()
    };
    assert_eq!(class(0), "scheduler-inconsistent");
    assert!(reason(0).contains("unreadable"), "{}", reason(0));
    assert_eq!(class(1), "scheduler-inconsistent");
    assert!(reason(1).contains("without a result"), "{}", reason(1));
    assert_eq!(class(2), "missing");
    assert_eq!(class(3), "succeeded");
    // Refresh never rewrites history.
    assert_eq!(
        std::fs::read(&r0).expect("still there").len(),
        bytes.len() / 2
    );

    // The analysis still counts every class and aggregates only the success.
    let a: Value = serde_json::from_slice(
        &exec(&state, &["bench", "analyze", &digest, "--format", "json"]).stdout,
    )
    .expect("analysis");
    assert_eq!(a["runs"]["scheduler_inconsistent"], 2);
    assert_eq!(a["runs"]["missing"], 1);
    assert_eq!(a["cases"][0]["metrics"][0]["summary"]["n"], 1);

    // A corrupt benchmark record is an error naming the file, not a panic.
    let hex = digest.trim_start_matches("sha256:");
    let rec = state.join("benchmarks").join(hex).join("benchmark.json");
    std::fs::write(&rec, b"{").expect("corrupt");
    let o = exec(&state, &["bench", "status", &digest]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("benchmark.json") && err.contains("corrupt"),
        "{err}"
    );
}

#[test]
fn cancel_stops_running_children_and_is_recorded() {
    let intent = r#"
schema = "benchmark-intent/v1"
name = "sleepy"
command = ["sh", "-c", "if [ \"$BENCHOPS_ATTEMPT\" = 1 ]; then sleep 30; fi"]
repetitions = 3
"#;
    let (_dir, state, intent_path) = setup(intent);
    let digest = submit(&state, &intent_path, "1");
    // Wait until one child runs (with one slot, which one goes first is not
    // specified).
    let deadline = Instant::now() + Duration::from_secs(20);
    while !(0..3).any(|i| {
        attempt_dir(&state, &digest, i)
            .join("started.json")
            .exists()
    }) {
        assert!(Instant::now() < deadline, "no child started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = exec(&state, &["bench", "cancel", &digest]);
    stdout(&o);
    let status = wait_terminal(&state, &digest);
    assert_eq!(status["cancelled"], true);
    assert_eq!(status["counts"]["failed"], 3, "{status:#}");
    let reasons: Vec<String> = status["children"]
        .as_array()
        .expect("children")
        .iter()
        .map(|c| c["reason"].as_str().expect("reason").to_owned())
        .collect();
    let running = reasons
        .iter()
        .filter(|r| r.starts_with("cancelled (signal 15"))
        .count();
    let waiting = reasons
        .iter()
        .filter(|r| r.starts_with("cancelled by benchops before it started"))
        .count();
    assert_eq!((running, waiting), (1, 2), "{reasons:?}");
    // The worker saw the cancellation and exited.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ours(&state).is_empty() {
        assert!(Instant::now() < deadline, "{:?}", ours(&state));
        std::thread::sleep(Duration::from_millis(50));
    }

    // A cancellation ends its own attempt only: submitting again runs.
    let again = submit(&state, &intent_path, "3");
    assert_eq!(again, digest, "same intent, same benchmark, new attempt");
    let status = wait_terminal(&state, &digest);
    assert_eq!(status["cancelled"], false, "{status:#}");
    assert_eq!(status["counts"]["succeeded"], 3, "{status:#}");
    assert!(
        status["children"]
            .as_array()
            .expect("children")
            .iter()
            .all(|c| c["attempt"] == 2)
    );
}

#[test]
fn bad_intents_name_the_file_and_key() {
    let (_dir, state, intent) = setup(
        "schema = \"benchmark-intent/v1\"\nname = \"x\"\ncommand = [\"echo\", \"{nope}\"]\nrepetitions = 1\n",
    );
    let o = exec(&state, &["bench", "plan", intent.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bench.toml") && err.contains("$.command[1]") && err.contains("{nope}"),
        "{err}"
    );

    let unwritable = Path::new("/proc/benchops-cannot-write-here");
    let (_d2, _s2, good) = setup(QUICK);
    let o = exec(
        unwritable,
        &["bench", "plan", good.to_str().expect("utf-8")],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("benchops-cannot-write-here"), "{err}");
}

/// The remaining classes, made by hand: a child claimed by a live "worker"
/// (this test process) that started long ago is stale; one that started
/// just now is running; one that nobody claimed is queued.
#[test]
fn incomplete_and_stale_from_live_processes() {
    let intent = r#"
schema = "benchmark-intent/v1"
name = "live"
command = ["true"]
repetitions = 3
timeout_s = 1
"#;
    let (_dir, state, intent_path) = setup(intent);
    let digest = submit(&state, &intent_path, "3");
    wait_terminal(&state, &digest);
    let claims = attempt_files(&state, &digest).join("claims");

    // Hand the claims of 0 and 1 to this (live) test process.
    let me = std::process::id();
    let owner = format!("{me}.{}", start_ticks(me));
    for i in ["0", "1"] {
        std::fs::remove_file(claims.join(i)).expect("claim");
        std::os::unix::fs::symlink(&owner, claims.join(i)).expect("claim");
    }
    // 0: started long ago, no result; 1: started now, no result; 2: nothing.
    for i in 0..3 {
        let _ = std::fs::remove_file(attempt_dir(&state, &digest, i).join("result.json"));
    }
    let started0 = attempt_dir(&state, &digest, 0).join("started.json");
    let mut s0: Value =
        serde_json::from_slice(&std::fs::read(&started0).expect("started")).expect("json");
    s0["started_at"] = "2020-01-01T00:00:00Z".into();
    std::fs::write(&started0, serde_json::to_vec_pretty(&s0).expect("json")).expect("write");
    std::fs::remove_file(attempt_dir(&state, &digest, 2).join("started.json")).expect("delete");
    std::fs::remove_file(claims.join("2")).expect("unclaim");

    let v = status(&state, &digest);
    let class = |i: usize| {
        v["children"][i]["class"]
            .as_str()
            .expect("class")
            .to_owned()
    };
    let reason = |i: usize| {
        v["children"][i]["reason"]
            .as_str()
            .expect("reason")
            .to_owned()
    };
    assert_eq!(class(0), "stale", "{}", reason(0));
    assert!(reason(0).contains("past the 61 s limit"), "{}", reason(0));
    assert_eq!(
        (class(1), reason(1)),
        ("incomplete".to_owned(), "running".to_owned())
    );
    assert_eq!(class(2), "incomplete");
    assert!(reason(2).contains("queued for a worker"), "{}", reason(2));
    assert_eq!(v["terminal"], false);
    // Analysis of an incomplete benchmark says so.
    let a: Value = serde_json::from_slice(
        &exec(&state, &["bench", "analyze", &digest, "--format", "json"]).stdout,
    )
    .expect("analysis");
    assert_eq!(a["complete"], false);
    assert!(
        a["note"]
            .as_str()
            .expect("note")
            .contains("not extrapolated")
    );
}

/// Field 22 of `/proc/PID/stat`.
fn start_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    stat[stat.rfind(')').expect("comm") + 2..]
        .split_whitespace()
        .nth(19)
        .and_then(|t| t.parse().ok())
        .expect("start ticks")
}

/// `attempts/0001/` of a benchmark: its claims and workers.
fn attempt_files(state: &Path, digest: &str) -> PathBuf {
    state
        .join("benchmarks")
        .join(digest.trim_start_matches("sha256:"))
        .join("attempts")
        .join("0001")
}

/// A live process of this test's state directory.
#[derive(Debug)]
struct Ours {
    pid: u32,
    ppid: u32,
    worker: bool,
}

/// The live processes whose command line names `state`: benchops-exec
/// processes of this test, and the children a worker forked and has not
/// yet turned into their command (they carry the worker's command line).
fn ours(state: &Path) -> Vec<Ours> {
    let needle = state.to_string_lossy().into_owned();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if !args.iter().any(|a| a.contains(&needle)) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat[stat.rfind(')').expect("comm") + 2..]
            .split_whitespace()
            .collect();
        if matches!(fields[0], "Z" | "X") {
            continue;
        }
        out.push(Ours {
            pid,
            ppid: fields[1].parse().expect("ppid"),
            worker: args.iter().any(|a| a == "worker"),
        });
    }
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !matches!(
            s[s.rfind(')').expect("comm") + 2..].chars().next(),
            Some('Z' | 'X')
        )
    })
}

/// Contract 16: at most `slots` workers, and no process per child. A run
/// of many trivial children is sampled through /proc: benchops's own
/// processes (the `bench run` and its workers, not the children a worker
/// forked) never exceed slots + 2.
#[test]
fn at_most_slots_workers_and_no_process_per_child() {
    let intent = r#"
schema = "benchmark-intent/v1"
name = "many"
command = ["true"]
repetitions = 300
"#;
    let (_dir, state, intent_path) = setup(intent);
    let mut run = Command::new(EXE)
        .arg("--state")
        .arg(&state)
        .args(["bench", "run", intent_path.to_str().expect("utf-8")])
        .args(["--slots", "2", "--format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("bench run starts");
    let (mut most, mut most_workers, mut samples) = (0usize, 0usize, 0u64);
    let mut worst = String::new();
    while run.try_wait().expect("wait").is_none() {
        let procs = ours(&state);
        // A worker's command line, but forked by a worker: a child that
        // has not yet become its command.
        let named: Vec<u32> = procs.iter().filter(|p| p.worker).map(|p| p.pid).collect();
        let workers: Vec<u32> = procs
            .iter()
            .filter(|p| p.worker && !named.contains(&p.ppid))
            .map(|p| p.pid)
            .collect();
        let own = procs.iter().filter(|p| !workers.contains(&p.ppid)).count();
        if own > most || workers.len() > most_workers {
            worst = format!("{procs:?}");
        }
        most = most.max(own);
        most_workers = most_workers.max(workers.len());
        samples += 1;
    }
    let out = run.wait_with_output().expect("output");
    assert!(out.status.success());
    let analysis: Value = serde_json::from_slice(&out.stdout).expect("analysis");
    assert_eq!(analysis["runs"]["succeeded"], 300, "{analysis:#}");
    assert!(most_workers >= 1, "no worker seen in {samples} samples");
    assert!(
        most_workers <= 2,
        "{most_workers} workers with 2 slots: {worst}"
    );
    assert!(most <= 4, "{most} benchops processes with 2 slots: {worst}");
}

/// A slow child does not hold the other slot: child 0 waits until every
/// other child has run, which only a free worker can do while it runs (a
/// static slot per child would queue half of them behind it until it gives
/// up and exits 7).
#[test]
fn a_slow_child_does_not_block_the_other_slot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marks = dir.path().join("done");
    std::fs::create_dir(&marks).expect("marks");
    let intent = format!(
        r#"
schema = "benchmark-intent/v1"
name = "balance"
command = ["sh", "-c", """
if [ "$BENCHOPS_CHILD_INDEX" = 0 ]; then
  i=0
  while [ "$(ls {m} | wc -l)" -lt 11 ]; do
    i=$((i+1)); [ $i -gt 1200 ] && exit 7; sleep 0.05
  done
else
  touch {m}/$BENCHOPS_CHILD_INDEX
fi
"""]
repetitions = 12
timeout_s = 120
"#,
        m = marks.display()
    );
    let (_d, state, intent_path) = setup(&intent);
    let digest = submit(&state, &intent_path, "2");
    let status = wait_terminal_within(&state, &digest, Duration::from_secs(150));
    assert_eq!(status["counts"]["succeeded"], 12, "{status:#}");
}

fn wait_terminal_within(state: &Path, digest: &str, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let v = status(state, digest);
        if v["terminal"] == true {
            return v;
        }
        assert!(Instant::now() < deadline, "not terminal in time: {v}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Workers claim children in plan order, or in the permutation the
/// submission records.
#[test]
fn workers_follow_plan_order_or_the_recorded_permutation() {
    use benchops_exec::backend::{Backend, ClaimOrder, LocalOptions};
    use benchops_exec::bench::{self, IntentSource};
    use benchops_exec::state::StateDir;

    for order in [
        ClaimOrder::Plan,
        ClaimOrder::Permutation(vec![5, 2, 7, 0, 3, 1, 6, 4]),
        ClaimOrder::Shuffled { seed: 42 },
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("order");
        let intent = format!(
            r#"
schema = "benchmark-intent/v1"
name = "order"
command = ["sh", "-c", "echo $BENCHOPS_CHILD_INDEX >> {}"]
repetitions = 8
"#,
            log.display()
        );
        let state = StateDir::new(dir.path().join("state"));
        let backend = Backend::Local(LocalOptions {
            slots: 1,
            exe: Some(EXE.into()),
            order: order.clone(),
        });
        let submitted = bench::submit_from(
            &state,
            IntentSource::Toml {
                text: &intent,
                label: "order.toml",
            },
            &backend,
        )
        .expect("submits");
        let digest = submitted.digest.to_string();
        let status = wait_terminal(state.root(), &digest);
        assert_eq!(status["counts"]["succeeded"], 8, "{status:#}");
        let ran: Vec<u64> = std::fs::read_to_string(&log)
            .expect("log")
            .lines()
            .map(|l| l.parse().expect("index"))
            .collect();
        let expected = order
            .permutation(8)
            .expect("valid")
            .unwrap_or((0..8).collect());
        assert_eq!(ran, expected, "{order:?}");
        let sub: Value = serde_json::from_slice(
            &std::fs::read(
                state
                    .benchmark_dir(&submitted.digest)
                    .join("submissions/0001.json"),
            )
            .expect("submission"),
        )
        .expect("json");
        match order {
            ClaimOrder::Plan => assert!(sub["backend"].get("order").is_none()),
            _ => assert_eq!(sub["backend"]["order"], serde_json::json!(expected)),
        }
    }
    // An order that is not a permutation is refused before anything runs.
    let dir = tempfile::tempdir().expect("tempdir");
    let err = bench::submit_from(
        &StateDir::new(dir.path().join("state")),
        IntentSource::Toml {
            text: QUICK,
            label: "quick.toml",
        },
        &Backend::Local(LocalOptions {
            slots: 1,
            exe: Some(EXE.into()),
            order: ClaimOrder::Permutation(vec![0, 0, 1, 2]),
        }),
    )
    .expect_err("refused");
    assert!(err.to_string().contains("claim order"), "{err}");
}

/// SIGKILL of a worker in the middle of a child: a later refresh sees its
/// claim held by a dead process and starts a new worker, which kills what
/// the dead one left running and claims the child again (`.r1`). No child
/// with a result runs twice, and none is lost.
#[test]
fn a_killed_worker_is_replaced_and_its_child_run_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().display().to_string();
    let intent = format!(
        r#"
schema = "benchmark-intent/v1"
name = "crash"
command = ["sh", "-c", """
echo $BENCHOPS_CHILD_INDEX >> {d}/ran
if [ "$BENCHOPS_CHILD_INDEX" = 2 ] && [ ! -e {d}/resume ]; then
  echo $$ > {d}/pid2.tmp && mv {d}/pid2.tmp {d}/pid2
  exec sleep 120
fi
"""]
repetitions = 5
timeout_s = 300
"#
    );
    let (_d, state, intent_path) = setup(&intent);
    let digest = submit(&state, &intent_path, "1");
    let pid2 = dir.path().join("pid2");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pid2.exists() {
        assert!(Instant::now() < deadline, "child 2 never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let orphan: u32 = std::fs::read_to_string(&pid2)
        .expect("pid")
        .trim()
        .parse()
        .expect("pid");
    let claim = std::fs::read_link(attempt_files(&state, &digest).join("claims/2")).expect("claim");
    let worker: i32 = claim
        .to_string_lossy()
        .split('.')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("worker pid");
    std::fs::write(dir.path().join("resume"), b"").expect("resume");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(worker),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the worker");
    while alive(worker as u32) {
        std::thread::sleep(Duration::from_millis(10));
    }

    let status = wait_terminal(&state, &digest);
    assert_eq!(status["counts"]["succeeded"], 5, "{status:#}");
    assert_eq!(status["children"][2]["restart"], 1, "{status:#}");
    let mut ran: Vec<u64> = std::fs::read_to_string(dir.path().join("ran"))
        .expect("ran")
        .lines()
        .map(|l| l.parse().expect("index"))
        .collect();
    ran.sort_unstable();
    assert_eq!(
        ran,
        [0, 1, 2, 2, 3, 4],
        "only the interrupted child ran again"
    );
    // The dead run's files stay as evidence; the new run has its own.
    let hex = digest.trim_start_matches("sha256:");
    let runs = state.join("benchmarks").join(hex).join("runs/2");
    assert!(runs.join("1/started.json").exists());
    assert!(!runs.join("1/result.json").exists());
    assert!(runs.join("1.r1/result.json").exists());
    // What the dead worker left running was killed before the rerun.
    assert!(!alive(orphan), "the orphaned command {orphan} still runs");
    // Nothing is left running once the queue is empty.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ours(&state).is_empty() {
        assert!(Instant::now() < deadline, "{:?}", ours(&state));
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn status(state: &Path, digest: &str) -> Value {
    serde_json::from_str(&stdout(&exec(
        state,
        &["bench", "status", digest, "--json"],
    )))
    .expect("status JSON")
}

/// `bench plan --json` is one object with every child digest in index
/// order: the ones the state directory stores in `children.sha256`, and
/// what the Python package's `plan()` returns.
#[test]
fn plan_json_lists_the_stored_child_digests() {
    let (_dir, state, intent) = setup(QUICK);
    let o = exec(
        &state,
        &["bench", "plan", intent.to_str().expect("utf-8"), "--json"],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(o.stdout.iter().filter(|b| **b == b'\n').count(), 1);
    let digest = v["benchmark"].as_str().expect("benchmark");
    assert_eq!(v["child_count"], 4);
    assert_eq!(v["case_count"], 1);
    assert_eq!(v["intent_source"], "bench.toml");
    assert_eq!(v["cases"], serde_json::json!(["quick"]));
    let stored = std::fs::read_to_string(
        state
            .join("benchmarks")
            .join(digest.trim_start_matches("sha256:"))
            .join("children.sha256"),
    )
    .expect("children.sha256");
    let listed: Vec<String> = v["children"]
        .as_array()
        .expect("children")
        .iter()
        .map(|c| {
            c.as_str()
                .expect("digest")
                .trim_start_matches("sha256:")
                .to_owned()
        })
        .collect();
    assert_eq!(
        listed,
        stored.lines().map(str::to_owned).collect::<Vec<_>>()
    );
    // The plain form prints the same digest; --children and --json exclude
    // each other.
    let plain = exec(&state, &["bench", "plan", intent.to_str().expect("utf-8")]);
    assert_eq!(String::from_utf8_lossy(&plain.stdout).trim(), digest);
    let both = exec(
        &state,
        &[
            "bench",
            "plan",
            intent.to_str().expect("utf-8"),
            "--json",
            "--children",
        ],
    );
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn text_from_children_reaches_the_terminal_escaped() {
    // A metric name and unit with a bidirectional override and a zero-width
    // space, and a failing case: none of it may reach the terminal as is.
    let intent = r#"
schema = "benchmark-intent/v1"
name = "hostile"
command = ["sh", "-c", "if [ {mode} = bad ]; then echo 'boom' >&2; exit 3; fi; printf '{\"metric\": \"t\\u202eX\", \"value\": 1, \"unit\": \"s\\u200b\"}\\n'"]
repetitions = 2
timeout_s = 30

[metrics]
json_lines = true

[[parameters]]
name = "mode"
values = ["ok", "bad"]
"#;
    let (_dir, state, intent) = setup(intent);
    let digest = submit(&state, &intent, "2");
    wait_terminal(&state, &digest);
    for args in [
        vec!["bench", "analyze", digest.as_str()],
        vec!["bench", "status", digest.as_str()],
    ] {
        let o = exec(&state, &args);
        let text = String::from_utf8_lossy(&o.stdout);
        for bad in ['\u{202e}', '\u{200b}', '\u{1b}'] {
            assert!(!text.contains(bad), "{args:?} printed {bad:?}: {text}");
        }
        if args[1] == "analyze" {
            // The name, and the unit after each value (not a unit this
            // build scales: `s` with a zero-width space is not seconds).
            assert!(
                text.contains("t\\u{202e}X  ") && text.contains("1.000 s\\u{200b}"),
                "{text}"
            );
        }
    }
}

/// A child that kills its worker every time is not retried forever: after
/// its last reclaim it ends `scheduler-inconsistent`, and the other
/// children still run.
#[test]
fn a_child_that_kills_its_worker_every_time_ends() {
    let intent = r#"
schema = "benchmark-intent/v1"
name = "killer"
command = ["sh", "-c", "if [ \"$BENCHOPS_CHILD_INDEX\" = 0 ]; then kill -9 $PPID; sleep 5; fi"]
repetitions = 3
"#;
    let (_dir, state, intent_path) = setup(intent);
    let digest = submit(&state, &intent_path, "1");
    let status = wait_terminal(&state, &digest);
    let child = &status["children"][0];
    assert_eq!(child["class"], "scheduler-inconsistent", "{status:#}");
    assert_eq!(child["restart"], 3, "claimed again three times: {status:#}");
    assert!(
        child["reason"]
            .as_str()
            .expect("reason")
            .contains("ended without a result"),
        "{status:#}"
    );
    assert_eq!(status["counts"]["succeeded"], 2, "{status:#}");
}

#[test]
fn a_run_in_which_children_failed_does_not_exit_0_and_names_the_cases() {
    let intent = r#"
schema = "benchmark-intent/v1"
name = "half"
command = ["sh", "-c", "if [ {mode} = bad ]; then echo 'cannot open ./speed.conf' >&2; exit 2; fi"]
repetitions = 2
timeout_s = 30

[[parameters]]
name = "mode"
values = ["ok", "bad"]
"#;
    let (_dir, state, intent) = setup(intent);
    let o = exec(
        &state,
        &[
            "bench",
            "run",
            intent.to_str().expect("utf-8"),
            "--slots",
            "2",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: 2 child run(s) of 1 case(s) did not succeed")
            && err.contains("half/mode=bad: 2 of 2 run(s) did not succeed; first: failed")
            && err.contains("    | cannot open ./speed.conf")
            && !err.contains("mode=ok:"),
        "{err}"
    );
    // The analysis is still printed.
    assert!(String::from_utf8_lossy(&o.stdout).contains("half/mode=ok"));

    // Every run succeeded: exit 0 and no summary.
    let (_dir, state, intent) = setup(&intent_text_all_ok());
    let o = exec(
        &state,
        &[
            "bench",
            "run",
            intent.to_str().expect("utf-8"),
            "--slots",
            "2",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!String::from_utf8_lossy(&o.stderr).contains("did not succeed"));
}

fn intent_text_all_ok() -> String {
    r#"
schema = "benchmark-intent/v1"
name = "fine"
command = ["true"]
repetitions = 2
timeout_s = 30
"#
    .to_owned()
}

#[test]
fn an_id_that_names_no_benchmark_says_why_where_and_what_lists_them() {
    let dir = tempfile::tempdir().expect("tmp");
    let state = dir.path().join("state");
    std::fs::create_dir_all(state.join("benchmarks")).expect("state");
    for (id, why) in [
        ("3f1c2a9", "at least 8 hex digits"),
        ("widgets!", "a commit id is not one"),
        ("a964e405", "no benchmark digest starts with it"),
    ] {
        let o = exec(&state, &["bench", "status", id]);
        assert_eq!(o.status.code(), Some(2), "{id}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(id) && err.contains(why), "{id}: {err}");
        assert!(
            err.contains("bench list") && err.contains(&state.display().to_string()),
            "{err}"
        );
    }
}

#[test]
fn bench_submit_with_wait_points_to_bench_run_and_starts_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let state = dir.path().join("state");
    let intent = dir.path().join("bench.toml");
    std::fs::write(&intent, QUICK).expect("intent");
    let o = exec(
        &state,
        &["bench", "submit", &intent.display().to_string(), "--wait"],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bench run") && !err.contains("-- --wait"),
        "{err}"
    );
    assert!(!state.join("benchmarks").exists(), "nothing was planned");
}

#[test]
fn ctrl_c_in_bench_run_ends_the_wait_not_the_work_and_says_how_to_resume() {
    let dir = tempfile::tempdir().expect("tmp");
    let state = dir.path().join("state");
    let intent = dir.path().join("slow.toml");
    std::fs::write(
        &intent,
        "schema = \"benchmark-intent/v1\"\nname = \"slow\"\ncommand = [\"sleep\", \"0.3\"]\nrepetitions = 4\n",
    )
    .expect("intent");
    let child = Command::new(EXE)
        .arg("--state")
        .arg(&state)
        .args(["bench", "run", &intent.display().to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Interrupt once the benchmark is submitted (the waiting has begun).
    let deadline = Instant::now() + Duration::from_secs(60);
    let submitted = || {
        std::fs::read_dir(state.join("benchmarks"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().join("submissions/0001.json").is_file())
    };
    while !submitted() {
        assert!(Instant::now() < deadline, "never submitted");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let o = child.wait_with_output().expect("wait");
    assert_eq!(o.status.code(), Some(130));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("interrupted: the children keep running") && err.contains("bench status"),
        "{err}"
    );
    // The work went on: every child finishes and succeeds.
    let digest = std::fs::read_dir(state.join("benchmarks"))
        .expect("benchmarks")
        .flatten()
        .next()
        .expect("one benchmark")
        .file_name()
        .to_string_lossy()
        .into_owned();
    let s = wait_terminal(&state, &digest);
    assert_eq!(s["counts"]["succeeded"], 4, "{s}");
}

#[test]
fn metric_lines_that_do_not_parse_are_shown_by_status_and_analyze() {
    let dir = tempfile::tempdir().expect("tmp");
    let state = dir.path().join("state");
    let intent = dir.path().join("m.toml");
    std::fs::write(
        &intent,
        "schema = \"benchmark-intent/v1\"\nname = \"m\"\ncommand = [\"sh\", \"-c\", \"echo '{\\\"metric\\\": \\\"ok_s\\\", \\\"value\\\": 1, \\\"unit\\\": \\\"s\\\"}'; echo '{\\\"metric\\\": \\\"bad_s\\\", \\\"value\\\": \\\"fast\\\", \\\"unit\\\": \\\"s\\\"}'\"]\nrepetitions = 2\n[metrics]\njson_lines = true\n",
    )
    .expect("intent");
    let o = exec(&state, &["bench", "run", &intent.display().to_string()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let digest = std::fs::read_dir(state.join("benchmarks"))
        .expect("benchmarks")
        .flatten()
        .next()
        .expect("one")
        .file_name()
        .to_string_lossy()
        .into_owned();
    let s = exec(&state, &["bench", "status", &digest]);
    let shown = String::from_utf8_lossy(&s.stdout);
    assert!(
        shown.contains("2 metric line(s) did not parse") && shown.contains("stdout line 2"),
        "{shown}"
    );
    let a = exec(&state, &["bench", "analyze", &digest]);
    let err = String::from_utf8_lossy(&a.stderr);
    assert!(err.contains("did not parse"), "{err}");
    assert!(String::from_utf8_lossy(&a.stdout).contains("ok_s"));
}

#[test]
fn bench_list_shows_the_newest_first_with_its_state_and_json() {
    let dir = tempfile::tempdir().expect("tmp");
    let state = dir.path().join("state");
    let first = dir.path().join("first.toml");
    let second = dir.path().join("second.toml");
    std::fs::write(&first, QUICK).expect("intent");
    std::fs::write(
        &second,
        QUICK.replace("name = \"quick\"", "name = \"later\""),
    )
    .expect("intent");
    let o = exec(&state, &["bench", "run", &first.display().to_string()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::thread::sleep(Duration::from_millis(20));
    let o = exec(&state, &["bench", "plan", &second.display().to_string()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = stdout(&exec(&state, &["bench", "list"]));
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("BENCHMARK") && lines.len() == 3,
        "{text}"
    );
    assert!(
        lines[1].contains("planned") && lines[1].contains("second.toml"),
        "{text}"
    );
    assert!(
        lines[2].contains("finished") && lines[2].contains("first.toml"),
        "{text}"
    );
    let rows: Value =
        serde_json::from_str(&stdout(&exec(&state, &["bench", "list", "--json"]))).expect("json");
    assert_eq!(rows[0]["state"], "planned");
    assert_eq!(rows[1]["state"], "finished");
    assert_eq!(rows[1]["attempts"], 1);
    assert_eq!(rows[1]["with_result"], rows[1]["children"]);
    let lanes: Value =
        serde_json::from_str(&stdout(&exec(&state, &["lane", "list", "--json"]))).expect("json");
    assert_eq!(lanes, serde_json::json!([]));
}
