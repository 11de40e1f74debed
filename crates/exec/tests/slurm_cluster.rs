//! Acceptance on a real Slurm cluster (`scripts/slurm-up.sh`): submit and
//! exit, observe from new processes until terminal, analyze; plus an
//! inconsistent child (result deleted after completion) and a missing one (a
//! job id Slurm never knew); classes right after `bench cancel`; and
//! completed tasks requeued and rerun, looked at back to back.
//!
//! In CI (`CI=true`) a missing cluster fails the test. Elsewhere the test
//! says loudly that it did not run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::slurm_ready;

const EXE: &str = env!("CARGO_BIN_EXE_benchops-exec");

fn exec(state: &Path, args: &[&str]) -> Output {
    Command::new(EXE)
        .arg("--state")
        .arg(state)
        .args(args)
        .env("GITHUB_TOKEN", "must-not-reach-jobs")
        .output()
        .expect("benchops-exec runs")
}

fn ok_stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn status(state: &Path, digest: &str) -> Value {
    serde_json::from_str(&ok_stdout(&exec(
        state,
        &["bench", "status", digest, "--json"],
    )))
    .expect("status JSON")
}

/// 3 points x 4 repetitions: `ok` succeeds; `fail` exits 3; `slow` runs
/// into the 1-minute limit on repetition 0, sleeps until cancelled on
/// repetition 1, and succeeds on 2 and 3.
const INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "acc"
command = ["sh", "-c", """
case {mode} in
  ok) echo '{"metric": "answer", "value": 1, "unit": "count"}' ;;
  fail) exit 3 ;;
  slow)
    case "$BENCHOPS_REPETITION" in
      0|1) sleep 600 ;;
      *) echo "$GITHUB_TOKEN" | grep -q . && exit 9; true ;;
    esac ;;
esac
"""]
repetitions = 4

[[parameters]]
name = "mode"
values = ["ok", "fail", "slow"]

[resources]
cpus = 1
time_s = 60
"#;

fn hex(digest: &str) -> &str {
    digest.trim_start_matches("sha256:")
}

#[test]
fn multi_run_benchmark_on_a_real_cluster() {
    if !slurm_ready("THE SLURM ACCEPTANCE TEST") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let intent = dir.path().join("acc.toml");
    std::fs::write(&intent, INTENT).expect("intent");

    // 1. Submit, then exit.
    let t0 = Instant::now();
    let o = exec(
        &state,
        &[
            "bench",
            "submit",
            intent.to_str().expect("utf-8"),
            "--backend",
            "slurm",
        ],
    );
    let digest = ok_stdout(&o).trim().to_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("1 sbatch call"), "{err}");
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "submit returns at once"
    );
    let sub: Value = serde_json::from_slice(
        &std::fs::read(
            state
                .join("benchmarks")
                .join(hex(&digest))
                .join("submissions/0001.json"),
        )
        .expect("submission"),
    )
    .expect("json");
    let job = sub["backend"]["chunks"][0]["job_id"]
        .as_str()
        .expect("job id")
        .to_owned();

    // Cancel the task of repetition 1 of `slow` (child 9) once it runs.
    let deadline = Instant::now() + Duration::from_secs(180);
    let task9 = format!("{job}_9");
    loop {
        let s = status(&state, &digest);
        let evidence = s["children"][9]["evidence"]["backend"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        if evidence == "running" {
            let out = Command::new("scancel")
                .arg(&task9)
                .output()
                .expect("scancel");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            break;
        }
        assert!(Instant::now() < deadline, "task 9 never ran: {s:#}");
        std::thread::sleep(Duration::from_secs(1));
    }

    // 2. From new processes, status until terminal.
    let deadline = Instant::now() + Duration::from_secs(300);
    let final_status = loop {
        let s = status(&state, &digest);
        if s["terminal"] == true {
            break s;
        }
        assert!(Instant::now() < deadline, "not terminal in time: {s:#}");
        std::thread::sleep(Duration::from_secs(2));
    };
    let c = &final_status["counts"];
    assert_eq!(
        (
            c["total"].as_u64(),
            c["succeeded"].as_u64(),
            c["failed"].as_u64()
        ),
        (Some(12), Some(6), Some(6)),
        "{final_status:#}"
    );
    let reason = |i: usize| {
        final_status["children"][i]["reason"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    assert!(reason(4).contains("exit 3"), "{}", reason(4));
    assert!(reason(8).contains("TIMEOUT"), "{}", reason(8));
    assert!(reason(9).contains("CANCELLED"), "{}", reason(9));

    // 3. Analyze: aggregates from the successes only.
    let a: Value = serde_json::from_slice(
        &exec(&state, &["bench", "analyze", &digest, "--format", "json"]).stdout,
    )
    .expect("analysis");
    assert_eq!(a["complete"], true);
    assert_eq!(a["runs"]["succeeded"], 6);
    assert_eq!(a["cases"][0]["metrics"][0]["summary"]["n"], 4);
    assert_eq!(a["cases"][1]["metrics"], serde_json::json!([]));
    assert_eq!(a["cases"][2]["metrics"][0]["summary"]["n"], 2);
    let fail_reasons = a["failure_reasons"].as_object().expect("reasons");
    assert_eq!(
        fail_reasons.values().filter_map(Value::as_u64).sum::<u64>(),
        6,
        "{fail_reasons:?}"
    );

    // Inconsistent: the scheduler says COMPLETED but the result file is gone
    // (child 0 ended well over the 30 s grace ago: the timeout took a minute).
    let r0 = state
        .join("benchmarks")
        .join(hex(&digest))
        .join("runs/0/1/result.json");
    std::fs::remove_file(&r0).expect("delete result");
    let s = status(&state, &digest);
    assert_eq!(
        s["children"][0]["class"], "scheduler-inconsistent",
        "{:#}",
        s["children"][0]
    );

    // Missing: a submission naming a job id Slurm never knew, long ago.
    let fake = serde_json::json!({
        "schema": "benchops-submission/v1",
        "benchmark": digest,
        "attempt": 2,
        "submitted_at": "2026-01-01T00:00:00Z",
        "indices": {"kind": "list", "indices": [1]},
        "backend": {"kind": "slurm", "cluster": "benchops", "chunks": [{"job_id": "99999999", "first_index": 1, "tasks": 1}]},
    });
    let subs: PathBuf = state
        .join("benchmarks")
        .join(hex(&digest))
        .join("submissions/0002.json");
    std::fs::write(&subs, serde_json::to_vec_pretty(&fake).expect("json")).expect("write");
    let s = status(&state, &digest);
    assert_eq!(
        s["children"][1]["class"], "missing",
        "{:#}",
        s["children"][1]
    );
    assert_eq!(s["children"][2]["class"], "succeeded");
}

/// 40 short tasks, two at a time, so that most are still pending when the
/// benchmark is cancelled.
const CANCEL_INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "cancel-window"
command = ["sh", "-c", "sleep 0.3"]
repetitions = 40

[slurm]
throttle = 2
"#;

#[test]
fn classes_do_not_flip_right_after_bench_cancel() {
    if !slurm_ready("THE SLURM ACCEPTANCE TEST") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let intent = dir.path().join("cancel.toml");
    std::fs::write(&intent, CANCEL_INTENT).expect("intent");
    let o = exec(
        &state,
        &[
            "bench",
            "submit",
            intent.to_str().expect("utf-8"),
            "--backend",
            "slurm",
        ],
    );
    let digest = ok_stdout(&o).trim().to_owned();
    // Wait until a few tasks have ended, then cancel.
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let s = status(&state, &digest);
        if s["counts"]["succeeded"].as_u64().unwrap_or(0) >= 3 {
            break;
        }
        assert!(Instant::now() < deadline, "no task ended in time: {s:#}");
        std::thread::sleep(Duration::from_millis(300));
    }
    ok_stdout(&exec(&state, &["bench", "cancel", &digest]));
    // Look right away and for a while: a class, once terminal, never
    // changes, and nothing is scheduler-inconsistent.
    let mut seen: Vec<Option<String>> = vec![None; 40];
    let until = Instant::now() + Duration::from_secs(20);
    let mut last = Value::Null;
    while Instant::now() < until {
        let s = status(&state, &digest);
        for (i, c) in s["children"]
            .as_array()
            .expect("children")
            .iter()
            .enumerate()
        {
            let class = c["class"].as_str().unwrap_or("").to_owned();
            assert_ne!(class, "scheduler-inconsistent", "{c:#}");
            if class == "incomplete" {
                continue;
            }
            match &seen[i] {
                Some(before) => assert_eq!(before, &class, "child {i} changed: {c:#}"),
                None => seen[i] = Some(class),
            }
        }
        last = s;
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(last["terminal"], true, "{last:#}");
    let children = last["children"].as_array().expect("children");
    let never_started = children
        .iter()
        .filter(|c| c["evidence"]["started"] == false)
        .count();
    assert!(never_started > 0, "{last:#}");
    for c in children {
        if c["evidence"]["started"] == false {
            assert_eq!(c["class"], "failed", "{c:#}");
            assert!(
                c["reason"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("cancelled by benchops before it started"),
                "{c:#}"
            );
        } else if c["evidence"]["result"] == "exit 0" {
            assert_eq!(c["class"], "succeeded", "{c:#}");
        }
    }
}

/// 10 tasks that succeed on their first run and exit 3 when Slurm runs
/// them again (`SLURM_RESTART_COUNT` > 0).
const REQUEUE_INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "requeue-window"
command = ["sh", "-c", "test \"${SLURM_RESTART_COUNT:-0}\" = 0 || exit 3"]
repetitions = 10
"#;

/// Runs `scontrol` with `args` and asserts that it succeeded.
fn scontrol(args: &[&str]) {
    let out = Command::new("scontrol")
        .args(args)
        .output()
        .expect("scontrol runs");
    assert!(
        out.status.success(),
        "scontrol {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_requeued_tasks_first_result_never_counts_for_its_rerun() {
    if !slurm_ready("THE SLURM ACCEPTANCE TEST") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let intent = dir.path().join("requeue.toml");
    std::fs::write(&intent, REQUEUE_INTENT).expect("intent");
    let o = exec(
        &state,
        &[
            "bench",
            "submit",
            intent.to_str().expect("utf-8"),
            "--backend",
            "slurm",
        ],
    );
    let digest = ok_stdout(&o).trim().to_owned();
    let sub: Value = serde_json::from_slice(
        &std::fs::read(
            state
                .join("benchmarks")
                .join(hex(&digest))
                .join("submissions/0001.json"),
        )
        .expect("submission"),
    )
    .expect("json");
    let job = sub["backend"]["chunks"][0]["job_id"]
        .as_str()
        .expect("job id")
        .to_owned();

    // 1. The first run of every task succeeds.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let s = status(&state, &digest);
        if s["terminal"] == true {
            assert_eq!(s["counts"]["succeeded"], 10, "{s:#}");
            break;
        }
        assert!(Instant::now() < deadline, "first runs not done: {s:#}");
        std::thread::sleep(Duration::from_millis(300));
    }

    // 2. Requeue every task. Slurm holds them for a while (BeginTime);
    // the first looks see them waiting again.
    scontrol(&["requeue", &format!("{job}_[0-9]")]);
    let mut looks = 0u32;
    let mut window = 0u32;
    let mut seen_stale = false;
    let mut look = |s: &Value| {
        looks += 1;
        for c in s["children"].as_array().expect("children") {
            assert_ne!(
                c["class"], "succeeded",
                "look {looks}: a requeued task counted as a success: {c:#}"
            );
            seen_stale |= c["class"] == "stale";
            // What the issue saw: restart 0's files while Slurm runs the task again.
            if c["restart"] == 0 && c["evidence"]["backend"] == "running" {
                window += 1;
            }
        }
    };
    for _ in 0..5 {
        look(&status(&state, &digest));
    }
    // 3. Let them run again now, and look back to back until the end.
    scontrol(&["update", &format!("JobId={job}"), "StartTime=now"]);
    let deadline = Instant::now() + Duration::from_secs(45);
    let last = loop {
        let s = status(&state, &digest);
        look(&s);
        if s["terminal"] == true {
            break s;
        }
        assert!(Instant::now() < deadline, "reruns not done: {s:#}");
    };
    eprintln!(
        "requeue window: {looks} looks, {window} child look(s) with restart 0's files while Slurm ran the task again"
    );
    assert!(seen_stale, "no look saw a requeued task waiting again");
    assert_eq!(last["counts"]["failed"], 10, "{last:#}");
    for c in last["children"].as_array().expect("children") {
        assert_eq!(c["restart"], 1, "{c:#}");
        assert!(
            c["reason"].as_str().unwrap_or("").starts_with("exit 3"),
            "{c:#}"
        );
    }
}
