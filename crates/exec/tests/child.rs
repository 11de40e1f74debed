//! The child wrapper against real processes.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use benchops_exec::child::{
    AttemptIdentity, ChildError, ChildResult, ChildSpec, Exit, RESULT_FILE, STARTED_FILE,
    TAIL_BYTES, read_result, read_started, run_child,
};

fn identity() -> AttemptIdentity {
    AttemptIdentity {
        benchmark: format!("sha256:{}", "ab".repeat(32)),
        index: 7,
        attempt: 2,
        child_digest: format!("sha256:{}", "cd".repeat(32)),
        restart: 3,
    }
}

/// Runs `spec` in a fresh attempt directory and checks that the returned
/// result is exactly what `result.json` holds.
fn run(spec: &ChildSpec) -> (tempfile::TempDir, ChildResult) {
    let dir = tempfile::tempdir().expect("temp dir");
    let attempt = dir.path().join("attempt");
    let result = run_child(spec, &identity(), &attempt).expect("wrapper works");
    let stored = read_result(&attempt.join(RESULT_FILE)).expect("result.json valid");
    assert_eq!(stored, result);
    assert_eq!(result.identity(), identity());
    (dir, result)
}

fn sh(script: &str) -> ChildSpec {
    ChildSpec::shell(script)
}

/// Live (non-zombie) processes in process group `pgid`, from /proc.
fn live_group_members(pgid: i32) -> Vec<i32> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_ascii_whitespace().collect();
        // fields[0] is the state (field 3), fields[2] the process group (field 5).
        if fields.get(2) == Some(&pgid.to_string().as_str()) && fields.first() != Some(&"Z") {
            live.push(pid);
        }
    }
    live
}

fn assert_group_gone(pgid: i32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let live = live_group_members(pgid);
        if live.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes {live:?} of group {pgid} survived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_pgid(dir: &Path) -> i32 {
    std::fs::read_to_string(dir.join("attempt").join("pgid"))
        .expect("pgid file")
        .trim()
        .parse()
        .expect("pgid number")
}

#[test]
fn success_has_builtin_metrics() {
    let (_dir, r) = run(&ChildSpec::command(["true"]));
    assert_eq!(r.exit, Exit::Exited { code: 0 });
    assert!(r.succeeded());
    assert!(r.wall_s.expect("wall_s").get() > 0.0);
    assert!(r.user_s.expect("user_s").get() >= 0.0);
    assert!(r.sys_s.expect("sys_s").get() >= 0.0);
    assert!(r.max_rss_bytes.expect("max_rss_bytes") > 0);
    assert_eq!(r.schema, "benchops-child-result/v1");
    assert!(r.started_at.ends_with('Z') && r.finished_at.ends_with('Z'));
    assert!(r.started_at <= r.finished_at);
    assert!(r.metrics.is_empty() && r.metric_errors.is_empty());
}

/// A local worker runs many commands in one process: each one's peak
/// resident set must be its own, not the high-water mark of every command
/// the process ran before (what `getrusage(RUSAGE_CHILDREN)` gives).
#[test]
fn peak_memory_is_each_commands_own_in_a_sequence() {
    // The shell holds 40 MB in a variable.
    let (_d1, big) = run(&sh(
        "x=$(head -c 40000000 /dev/zero | tr '\\0' a); echo ${#x}",
    ));
    assert!(big.succeeded(), "{big:?}");
    assert_eq!(big.stdout_tail.trim(), "40000000");
    let big_rss = big.max_rss_bytes.expect("measured");
    assert!(big_rss >= 40_000_000, "{big_rss}");
    let (_d2, small) = run(&ChildSpec::command(["true"]));
    let small_rss = small.max_rss_bytes.expect("measured");
    assert!(
        small_rss < big_rss / 2,
        "the small command reports {small_rss} bytes after one of {big_rss}"
    );
}

#[test]
fn nonzero_exit_is_not_success() {
    let (_dir, r) = run(&sh("exit 3"));
    assert_eq!(r.exit, Exit::Exited { code: 3 });
    assert!(!r.succeeded());
    let (_dir, r) = run(&ChildSpec::command(["false"]));
    assert_eq!(r.exit, Exit::Exited { code: 1 });
}

#[test]
fn killed_by_a_signal() {
    let (_dir, r) = run(&sh("kill -9 $$"));
    assert_eq!(
        r.exit,
        Exit::Signaled {
            signal: 9,
            name: "SIGKILL".into()
        }
    );
    assert!(!r.succeeded());
    assert!(
        r.wall_s.is_some(),
        "builtins are present when the process ran"
    );
}

#[test]
fn timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().expect("temp dir");
    let attempt = dir.path().join("attempt");
    let mut spec = sh("echo $$ > pgid; sleep 30 & sleep 30");
    spec.workdir = Some(attempt.clone());
    spec.timeout = Some(Duration::from_millis(300));
    std::fs::create_dir_all(&attempt).expect("attempt dir");
    let begun = Instant::now();
    let r = run_child(&spec, &identity(), &attempt).expect("wrapper works");
    assert!(begun.elapsed() < Duration::from_secs(10));
    match r.exit {
        Exit::TimedOut { after_s, signal } => {
            assert!((after_s.get() - 0.3).abs() < 1e-9);
            assert_eq!(signal, 15, "sleep dies on SIGTERM");
        }
        other => panic!("expected timed_out, got {other:?}"),
    }
    assert!(!r.succeeded());
    assert!(r.wall_s.expect("wall_s").get() >= 0.3);
    assert_group_gone(read_pgid(dir.path()));
    assert_eq!(
        read_result(&attempt.join(RESULT_FILE)).expect("valid"),
        r,
        "result.json matches"
    );
}

#[test]
fn timeout_escalates_to_sigkill_when_sigterm_is_ignored() {
    let mut spec = sh("trap '' TERM; sleep 30");
    spec.timeout = Some(Duration::from_millis(200));
    let (_dir, r) = run(&spec);
    assert!(
        matches!(r.exit, Exit::TimedOut { signal: 9, .. }),
        "{:?}",
        r.exit
    );
    assert!(
        r.wall_s.expect("wall_s").get() >= 2.0,
        "grace period honoured"
    );
}

#[test]
fn processes_left_behind_are_killed_and_do_not_hold_the_pipes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let attempt = dir.path().join("attempt");
    std::fs::create_dir_all(&attempt).expect("attempt dir");
    let mut spec = sh("echo $$ > pgid; sleep 30 & echo hi");
    spec.workdir = Some(attempt.clone());
    let begun = Instant::now();
    let r = run_child(&spec, &identity(), &attempt).expect("wrapper works");
    assert!(begun.elapsed() < Duration::from_secs(10));
    assert_eq!(r.exit, Exit::Exited { code: 0 });
    assert_eq!(r.stdout_tail, "hi\n");
    assert_group_gone(read_pgid(dir.path()));
}

#[test]
fn program_not_found_is_a_recorded_spawn_failure() {
    let (dir, r) = run(&ChildSpec::command(["benchops-no-such-program-xyz"]));
    match &r.exit {
        Exit::SpawnFailed { error } => {
            assert!(error.contains("benchops-no-such-program-xyz"), "{error}");
        }
        other => panic!("expected spawn_failed, got {other:?}"),
    }
    assert!(!r.succeeded());
    assert_eq!(
        (r.wall_s, r.user_s, r.sys_s, r.max_rss_bytes),
        (None, None, None, None)
    );
    let json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("attempt").join(RESULT_FILE)).expect("result.json"),
    )
    .expect("json");
    assert_eq!(json["exit"]["kind"], "spawn_failed");
    assert!(json["wall_s"].is_null() && json["max_rss_bytes"].is_null());
    assert!(dir.path().join("attempt").join(STARTED_FILE).exists());
}

#[test]
fn json_metrics_are_parsed_as_they_stream() {
    let script = r#"
printf '%s\n' 'warming up' \
  '{"metric":"ops","value":12.5,"unit":"ops/s"}' \
  '{"metric":"skipped","value":null,"unit":"s"}' \
  '{"metric":"bad","value":"fast","unit":"s"}' \
  '{"metric":"nan","value":NaN,"unit":"s"}' \
  '{"not_a_metric":1}'
printf '{"metric":"big","value":1,"unit":"'
head -c 100000 /dev/zero | tr '\0' x
printf '"}\n'
printf '%s' '{"metric":"last","value":3,"unit":"B"}'
"#;
    let mut spec = sh(script);
    spec.json_metrics = true;
    let (_dir, r) = run(&spec);
    assert!(r.succeeded(), "{r:?}");
    let got: Vec<(&str, Option<f64>, &str)> = r
        .metrics
        .iter()
        .map(|m| (m.name.as_str(), m.value.map(f64::from), m.unit.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("ops", Some(12.5), "ops/s"),
            ("skipped", None, "s"),
            ("last", Some(3.0), "B"),
        ]
    );
    let lines: Vec<u64> = r.metric_errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [4, 5, 7], "{:?}", r.metric_errors);
    assert!(r.metric_errors[2].reason.contains("longer than"));
    let raw = serde_json::to_value(&r).expect("encodes");
    assert!(raw["metrics"][1]["value"].is_null(), "null stays null");
}

#[test]
fn metric_lines_may_say_which_way_is_better() {
    let script = r#"printf '%s\n' \
  '{"metric":"ops","value":5,"unit":"ops/s","direction":"higher_is_better"}' \
  '{"metric":"lat","value":2,"unit":"ms","direction":"lower_is_better"}' \
  '{"metric":"odd","value":1,"unit":"s","direction":"sideways"}'"#;
    let mut spec = sh(script);
    spec.json_metrics = true;
    let (_dir, r) = run(&spec);
    let dirs: Vec<(&str, bool)> = r
        .metrics
        .iter()
        .map(|m| (m.name.as_str(), m.higher_is_better))
        .collect();
    assert_eq!(dirs, [("ops", true), ("lat", false)]);
    assert_eq!(r.metric_errors.len(), 1, "{:?}", r.metric_errors);
    assert!(r.metric_errors[0].reason.contains("direction"));
    // Lower-is-better, the default, is not written, so older results read
    // the same.
    let raw = serde_json::to_value(&r).expect("encodes");
    assert_eq!(raw["metrics"][0]["higher_is_better"], true);
    assert!(raw["metrics"][1].get("higher_is_better").is_none());
}

#[test]
fn metrics_are_not_parsed_unless_asked() {
    let (_dir, r) = run(&sh(r#"echo '{"metric":"ops","value":1,"unit":"s"}'"#));
    assert!(r.metrics.is_empty() && r.metric_errors.is_empty());
}

#[test]
fn output_tails_are_bounded() {
    let (_dir, r) = run(&sh(
        "head -c 1048576 /dev/zero | tr '\\0' a; printf end; echo oops >&2",
    ));
    assert_eq!(r.stdout_tail.len(), TAIL_BYTES);
    assert!(r.stdout_tail.ends_with("aend"));
    assert_eq!(r.stderr_tail, "oops\n");

    let mut spec = sh("head -c 1048576 /dev/zero | tr '\\0' a");
    spec.json_metrics = true;
    let (_dir, r) = run(&spec);
    assert_eq!(r.stdout_tail.len(), TAIL_BYTES);
    assert_eq!(r.metric_errors.len(), 1, "one overlong line");
}

#[test]
fn environment_additions_and_removals() {
    let mut spec = sh(
        r#"printf '%s|%s|%s|%s' "$BENCHOPS_TEST_VAR" "${GITHUB_TOKEN-unset}" "${DROPPED-unset}" "${PATH:+path}""#,
    );
    spec.env.insert("BENCHOPS_TEST_VAR".into(), "hello".into());
    spec.env.insert("GITHUB_TOKEN".into(), "secret".into());
    spec.env.insert("DROPPED".into(), "x".into());
    spec.env_remove.push("DROPPED".into());
    let (_dir, r) = run(&spec);
    assert_eq!(r.stdout_tail, "hello|unset|unset|path");
}

const HELPER_FLAG: &str = "BENCHOPS_CHILD_TEST_HELPER";

/// Runs [`helper_inherited_credentials`] in a copy of this test binary whose
/// own environment holds publication credentials, so the wrapper inherits
/// them without this process mutating its environment.
#[test]
fn inherited_publication_credentials_are_stripped() {
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        .args([
            "--exact",
            "helper_inherited_credentials",
            "--test-threads=1",
        ])
        .env(HELPER_FLAG, "1")
        .env("GITHUB_TOKEN", "inherited-secret")
        .env("GH_TOKEN", "inherited-secret")
        .env("ACTIONS_RUNTIME_TOKEN", "inherited-secret")
        .output()
        .expect("runs helper");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
}

/// Does nothing unless started by [`inherited_publication_credentials_are_stripped`].
#[test]
fn helper_inherited_credentials() {
    if std::env::var_os(HELPER_FLAG).is_none() {
        return;
    }
    assert!(std::env::var_os("GITHUB_TOKEN").is_some(), "precondition");
    let (_dir, r) = run(&sh(
        r#"printf '%s|%s|%s|%s' "${GITHUB_TOKEN-unset}" "${GH_TOKEN-unset}" "${ACTIONS_RUNTIME_TOKEN-unset}" "${BENCHOPS_CHILD_TEST_HELPER-unset}""#,
    ));
    assert_eq!(r.stdout_tail, "unset|unset|unset|1");
}

#[test]
fn started_json_is_written_before_spawning() {
    let dir = tempfile::tempdir().expect("temp dir");
    let attempt = dir.path().join("attempt");
    std::fs::create_dir_all(&attempt).expect("attempt dir");
    let mut spec = sh("test -f started.json && test ! -e result.json");
    spec.workdir = Some(attempt.clone());
    let r = run_child(&spec, &identity(), &attempt).expect("wrapper works");
    assert_eq!(r.exit, Exit::Exited { code: 0 }, "{r:?}");
    let started = read_started(&attempt.join(STARTED_FILE)).expect("valid started.json");
    assert_eq!(started.schema, "benchops-child-started/v1");
    assert_eq!(started.wrapper_pid, std::process::id());
    assert!(started.wrapper_start_ticks > 0);
    assert_eq!(started.started_at, r.started_at);
    assert_eq!(started.host, r.host);
    assert_eq!(
        (
            started.benchmark,
            started.index,
            started.attempt,
            started.child_digest
        ),
        (
            identity().benchmark,
            identity().index,
            identity().attempt,
            identity().child_digest
        )
    );
}

#[test]
fn read_result_rejects_truncated_and_foreign_files() {
    let (dir, _r) = run(&ChildSpec::command(["true"]));
    let path = dir.path().join("attempt").join(RESULT_FILE);
    let bytes = std::fs::read(&path).expect("result.json");

    let truncated = dir.path().join("truncated.json");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).expect("writes");
    let err = read_result(&truncated).expect_err("truncated");
    assert!(matches!(err, ChildError::Invalid { .. }));
    assert!(err.to_string().contains("truncated.json"), "{err}");

    let foreign = dir.path().join("foreign.json");
    let text = String::from_utf8(bytes).expect("utf-8");
    std::fs::write(
        &foreign,
        text.replace("benchops-child-result/v1", "benchops-child-result/v9"),
    )
    .expect("writes");
    let err = read_result(&foreign).expect_err("wrong schema").to_string();
    assert!(
        err.contains("foreign.json") && err.contains("schema"),
        "{err}"
    );

    let missing = dir.path().join("missing.json");
    let err = read_result(&missing).expect_err("missing").to_string();
    assert!(err.contains("missing.json"), "{err}");

    let nulled = dir.path().join("nulled.json");
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("json");
    json["wall_s"] = serde_json::Value::Null;
    std::fs::write(&nulled, json.to_string()).expect("writes");
    let err = read_result(&nulled)
        .expect_err("ran without wall_s")
        .to_string();
    assert!(err.contains("wall_s"), "{err}");
}

#[test]
fn both_records_name_the_run_and_older_records_still_read() {
    let (dir, r) = run(&ChildSpec::command(["true"]));
    let attempt = dir.path().join("attempt");
    assert_eq!(r.restart, Some(identity().restart));
    let started = read_started(&attempt.join(STARTED_FILE)).expect("valid started.json");
    assert_eq!(started.restart, Some(identity().restart));
    let text = std::fs::read_to_string(attempt.join(RESULT_FILE)).expect("result.json");
    let json: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(json["restart"], 3, "{json:#}");
    // A record written before the run was recorded reads back without it.
    for file in [RESULT_FILE, STARTED_FILE] {
        let path = attempt.join(file);
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("reads")).expect("json");
        json.as_object_mut().expect("object").remove("restart");
        std::fs::write(&path, json.to_string()).expect("writes");
    }
    let old = read_result(&attempt.join(RESULT_FILE)).expect("an older result reads");
    assert_eq!(old.restart, None);
    let old = read_started(&attempt.join(STARTED_FILE)).expect("an older marker reads");
    assert_eq!(old.restart, None);
}
