//! The Slurm backend against a scripted scheduler: `sbatch`, `squeue`,
//! `sacct`, `scontrol` and `scancel` are shell scripts put first on `PATH`,
//! which answer from files the test writes (and may run a task "during" a
//! call). The array tasks themselves are real: the batch script that
//! `bench submit` wrote is run with `SLURM_ARRAY_TASK_ID`, so the run files
//! are the wrapper's own.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

const EXE: &str = env!("CARGO_BIN_EXE_benchops-exec");
const JOB: &str = "4242";

const INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "scripted"
command = ["true"]
repetitions = 3
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
"#;

/// The reply of one scripted tool: run `hook` (shell) first, then print
/// `out` and `err`, exit `rc`.
const TOOL: &str = r#"#!/bin/sh
d='@DIR@'
n='@NAME@'
echo "$*" >> "$d/$n.calls"
[ -f "$d/$n.hook" ] && sh "$d/$n.hook" >/dev/null 2>&1
[ -f "$d/$n.out" ] && cat "$d/$n.out"
[ -f "$d/$n.err" ] && cat "$d/$n.err" >&2
exit "$(cat "$d/$n.rc" 2>/dev/null || echo 0)"
"#;

struct Cluster {
    _dir: tempfile::TempDir,
    answers: PathBuf,
    path: String,
    state: PathBuf,
    digest: String,
}

impl Cluster {
    /// Writes the scripted tools and submits a benchmark of 3 children as
    /// array job 4242.
    fn new() -> Cluster {
        Cluster::with_intent(INTENT)
    }

    /// [`Cluster::new`], submitting `intent` instead.
    fn with_intent(intent_text: &str) -> Cluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let answers = dir.path().join("answers");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&answers).expect("answers dir");
        std::fs::create_dir_all(&bin).expect("bin dir");
        for name in ["squeue", "sacct", "scontrol", "scancel", "sbatch"] {
            let mut script = TOOL
                .replace("@DIR@", &answers.display().to_string())
                .replace("@NAME@", name);
            if name == "sbatch" {
                // Keep the batch script, so that the test can run its tasks.
                script =
                    script.replacen("echo \"$*\"", "cp \"$2\" \"$d/batch.sh\"; echo \"$*\"", 1);
            }
            let path = bin.join(name);
            std::fs::write(&path, script).expect("tool");
            let mut perm = std::fs::metadata(&path).expect("meta").permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
            std::fs::set_permissions(&path, perm).expect("chmod");
        }
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let state = dir.path().join("state");
        let intent = dir.path().join("scripted.toml");
        std::fs::write(&intent, intent_text).expect("intent");
        std::fs::write(dir.path().join("manifest.toml"), MANIFEST).expect("manifest");
        let mut c = Cluster {
            _dir: dir,
            answers,
            path,
            state,
            digest: String::new(),
        };
        c.answer("sbatch", &format!("{JOB}\n"), "", 0);
        let o = c.exec(&[
            "bench",
            "submit",
            intent.to_str().expect("utf-8"),
            "--backend",
            "slurm",
        ]);
        c.digest = ok_stdout(&o).trim().to_owned();
        c
    }

    fn exec(&self, args: &[&str]) -> Output {
        self.exec_env(args, &[])
    }

    fn exec_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(EXE);
        cmd.arg("--state")
            .arg(&self.state)
            .args(args)
            .env("PATH", &self.path)
            .env_remove("BENCHOPS_SCHEDULER_TIMEOUT");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("benchops-exec runs")
    }

    /// Scripts the next answers of `tool`.
    fn answer(&self, tool: &str, out: &str, err: &str, rc: i32) {
        let f = |ext: &str| self.answers.join(format!("{tool}.{ext}"));
        std::fs::write(f("out"), out).expect("out");
        std::fs::write(f("err"), err).expect("err");
        std::fs::write(f("rc"), rc.to_string()).expect("rc");
    }

    /// Shell run by `tool` before it answers.
    fn hook(&self, tool: &str, script: Option<&str>) {
        let p = self.answers.join(format!("{tool}.hook"));
        match script {
            Some(s) => std::fs::write(p, s).expect("hook"),
            None => {
                let _ = std::fs::remove_file(p);
            }
        }
    }

    /// The shell command that runs array task `task` as Slurm would.
    fn task_command(&self, task: u64) -> String {
        format!(
            "SLURM_ARRAY_TASK_ID={task} sh '{}'",
            self.answers.join("batch.sh").display()
        )
    }

    /// Runs array task `task` to its end.
    fn run_task(&self, task: u64) {
        let o = Command::new("sh")
            .arg("-c")
            .arg(self.task_command(task))
            .output()
            .expect("task runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }

    /// Runs array task `task` to its end as Slurm's requeue `restart`
    /// would; returns the wrapper's exit code.
    fn rerun_task(&self, task: u64, restart: u32) -> Option<i32> {
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "SLURM_RESTART_COUNT={restart} {}",
                self.task_command(task)
            ))
            .output()
            .expect("task runs")
            .status
            .code()
    }

    fn run_dir(&self, index: u64) -> PathBuf {
        self.state
            .join("benchmarks")
            .join(self.digest.trim_start_matches("sha256:"))
            .join("runs")
            .join(index.to_string())
            .join("1")
    }

    /// The run directory of requeue `restart` of attempt 1 of child `index`.
    fn rerun_dir(&self, index: u64, restart: u32) -> PathBuf {
        self.run_dir(index).with_file_name(format!("1.r{restart}"))
    }

    /// Makes the submission old, past the visibility grace.
    fn age_submission(&self) {
        let p = self
            .state
            .join("benchmarks")
            .join(self.digest.trim_start_matches("sha256:"))
            .join("submissions/0001.json");
        let mut v: Value =
            serde_json::from_slice(&std::fs::read(&p).expect("submission")).expect("json");
        v["submitted_at"] = "2026-01-01T00:00:00Z".into();
        std::fs::write(&p, serde_json::to_vec_pretty(&v).expect("json")).expect("write");
    }

    fn name(&self) -> String {
        format!(
            "benchops-{}",
            &self.digest.trim_start_matches("sha256:")[..12]
        )
    }

    fn squeue_row(&self, task: u64, state: &str, reason: &str) -> String {
        format!(
            "{JOB}_{task}|{JOB}|{JOB}|{task}|{state}|{reason}|{}\n",
            self.name()
        )
    }

    fn sacct_row(&self, id: &str, state: &str, code: &str, end: &str) -> String {
        format!(
            "{JOB}_{id}|{JOB}|{state}|{code}|{end}|{end}|00:00:01|node01|None|{}\n",
            self.name()
        )
    }

    /// One accounting record of one run of task `task`.
    fn sacct_run(&self, task: u64, state: &str, code: &str, start: &str, end: &str) -> String {
        format!(
            "{JOB}_{task}|{JOB}|{state}|{code}|{start}|{end}|00:00:01|node01|None|{}\n",
            self.name()
        )
    }

    fn status(&self) -> Value {
        self.status_env(&[])
    }

    fn status_env(&self, env: &[(&str, &str)]) -> Value {
        let o = self.exec_env(&["bench", "status", &self.digest, "--json"], env);
        serde_json::from_str(&ok_stdout(&o)).expect("status JSON")
    }
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

fn class(s: &Value, i: usize) -> &str {
    s["children"][i]["class"].as_str().unwrap_or("")
}

fn reason(s: &Value, i: usize) -> &str {
    s["children"][i]["reason"].as_str().unwrap_or("")
}

const END: &str = "2026-11-30T12:00:00";

#[test]
fn a_result_written_while_squeue_answers_is_not_stale() {
    let c = Cluster::new();
    // The task runs and ends during the squeue call, whose answer lags: it
    // still says pending.
    c.hook("squeue", Some(&c.task_command(0)));
    c.answer("squeue", &c.squeue_row(0, "PENDING", "Priority"), "", 0);
    c.answer("sacct", "", "", 0);
    let s = c.status();
    assert!(c.run_dir(0).join("result.json").exists(), "the task ran");
    assert_eq!(class(&s, 0), "incomplete", "{:#}", s["children"][0]);
    assert!(reason(&s, 0).contains("pending"), "{}", reason(&s, 0));
    // A result that existed before the scheduler said pending is from an
    // earlier run: the task was requeued.
    c.hook("squeue", None);
    let s = c.status();
    assert_eq!(class(&s, 0), "stale", "{:#}", s["children"][0]);
    assert_eq!(s["terminal"], false);
}

#[test]
fn a_task_that_ends_during_the_look_is_read_again_not_called_missing() {
    let c = Cluster::new();
    c.age_submission();
    // The task runs and ends during the squeue call, and neither tool
    // lists it: the files, read again after the look, decide.
    c.hook("squeue", Some(&c.task_command(0)));
    c.answer("squeue", "", "", 0);
    c.answer("sacct", "", "", 0);
    let s = c.status();
    assert_eq!(class(&s, 0), "succeeded", "{:#}", s["children"][0]);
    assert_eq!(class(&s, 1), "missing", "{:#}", s["children"][1]);
}

/// Every task has run and ended with exit 0, and accounting says so.
fn all_ran(c: &Cluster) {
    for t in 0..3 {
        c.run_task(t);
    }
    let rows: String = (0..3)
        .map(|t| c.sacct_row(&t.to_string(), "COMPLETED", "0:0", END))
        .collect();
    c.answer("sacct", &rows, "", 0);
    c.answer("squeue", "", "", 0);
    let s = c.status();
    assert_eq!(s["counts"]["succeeded"], 3, "{s:#}");
    assert_eq!(s["terminal"], true);
    assert_eq!(s["scheduler"]["complete"], true);
}

/// Asserts that no child is decided and nothing treats the benchmark as
/// finished: status, analyze and seal.
fn nothing_is_finished(c: &Cluster, s: &Value, needle: &[&str]) {
    assert_eq!(s["terminal"], false, "{s:#}");
    assert_eq!(s["counts"]["incomplete"], 3, "{s:#}");
    assert_eq!(s["scheduler"]["complete"], false, "{s:#}");
    for i in 0..3 {
        for n in needle {
            assert!(reason(s, i).contains(n), "{n:?} not in {:?}", reason(s, i));
        }
        assert!(!reason(s, i).contains("accounting lag"), "{}", reason(s, i));
    }
    let table = ok_stdout(&c.exec(&["bench", "status", &c.digest]));
    assert!(table.contains("incomplete answer"), "{table}");
    let a: Value = serde_json::from_str(&ok_stdout(
        &c.exec(&["bench", "analyze", &c.digest, "--format", "json"]),
    ))
    .expect("analysis");
    assert_eq!(a["complete"], false, "{a:#}");
    let dir = c.state.parent().expect("parent");
    let o = c.exec(&[
        "bench",
        "seal",
        &c.digest,
        "--manifest",
        dir.join("manifest.toml").to_str().expect("utf-8"),
        "--lane",
        "full",
        "--slot",
        "2026-11-30T01:00:00Z",
        "--repository",
        "example/widgets",
        "--commit",
        "3f1c2a9d8e7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
        "--out",
        dir.join("sealed").to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not finished"), "{err}");
}

#[test]
fn a_failed_squeue_decides_nothing() {
    let c = Cluster::new();
    all_ran(&c);
    // A requeued task would show only in squeue: without its answer an old
    // exit-0 result proves nothing.
    c.answer(
        "squeue",
        "",
        "slurm_load_jobs error: Unable to contact slurm controller (connect failure)",
        1,
    );
    let s = c.status();
    nothing_is_finished(
        &c,
        &s,
        &["squeue failed", "Unable to contact slurm controller"],
    );
    // Accounting still calls a task running: the reason names the tool
    // that failed, not accounting lag.
    std::fs::remove_file(c.run_dir(0).join("result.json")).expect("rm");
    c.answer(
        "sacct",
        &c.sacct_row("0", "RUNNING", "0:0", "Unknown"),
        "",
        0,
    );
    let s = c.status();
    assert_eq!(class(&s, 0), "incomplete", "{:#}", s["children"][0]);
    let r = reason(&s, 0);
    assert!(
        r.contains("squeue failed") && !r.contains("accounting lag"),
        "{r}"
    );
}

#[test]
fn an_unparsable_squeue_line_is_not_a_complete_answer() {
    let c = Cluster::new();
    all_ran(&c);
    c.answer("squeue", "slurm_load_jobs: partial reply\n", "", 0);
    let s = c.status();
    nothing_is_finished(&c, &s, &["unparsable squeue line 1", "partial reply"]);
}

#[test]
fn a_failed_sacct_decides_nothing_it_would_have_decided() {
    let c = Cluster::new();
    all_ran(&c);
    c.answer("sacct", "", "sacct: error: slurmdbd: Connection refused", 1);
    let s = c.status();
    nothing_is_finished(&c, &s, &["sacct failed", "Connection refused"]);
}

#[test]
fn an_unparsable_sacct_line_is_not_a_complete_answer() {
    let c = Cluster::new();
    all_ran(&c);
    c.age_submission();
    // Task 0 was killed (started, no result); task 1 never ran.
    std::fs::remove_file(c.run_dir(0).join("result.json")).expect("rm");
    std::fs::remove_dir_all(c.run_dir(1)).expect("rm");
    c.answer("sacct", "partial answer, slurmdbd busy\n", "", 0);
    let s = c.status();
    for i in 0..2 {
        assert_eq!(class(&s, i), "incomplete", "{:#}", s["children"][i]);
        assert!(
            reason(&s, i).contains("unparsable sacct line 1"),
            "{}",
            reason(&s, i)
        );
    }
    nothing_is_finished(&c, &s, &["unparsable sacct line 1"]);
}

#[test]
fn both_tools_failing_are_both_named() {
    let c = Cluster::new();
    all_ran(&c);
    c.answer("squeue", "", "squeue: error: Socket timed out", 1);
    c.answer("sacct", "", "sacct: error: slurmdbd: Connection refused", 1);
    let s = c.status();
    nothing_is_finished(
        &c,
        &s,
        &[
            "squeue failed",
            "Socket timed out",
            "sacct failed",
            "Connection refused",
        ],
    );
}

#[test]
fn a_tool_that_hangs_is_killed_at_the_timeout() {
    let c = Cluster::new();
    all_ran(&c);
    let pidfile = c.answers.join("sleep.pid");
    c.hook(
        "sacct",
        Some(&format!(
            "sleep 60 & echo $! > '{}'; wait",
            pidfile.display()
        )),
    );
    let t0 = Instant::now();
    let o = c.exec(&[
        "--scheduler-timeout",
        "1",
        "bench",
        "status",
        &c.digest,
        "--json",
    ]);
    let s: Value = serde_json::from_str(&ok_stdout(&o)).expect("status JSON");
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "the call was not cut off"
    );
    assert!(
        reason(&s, 0).contains("sacct timed out after 1 s"),
        "{}",
        reason(&s, 0)
    );
    assert_eq!(s["counts"]["incomplete"], 3, "{s:#}");
    // The tool's whole process group was killed.
    let pid = std::fs::read_to_string(&pidfile).expect("pid");
    let proc = PathBuf::from(format!("/proc/{}/stat", pid.trim()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&proc).is_ok_and(|s| !s.contains(") Z ")) {
        assert!(Instant::now() < deadline, "sleep {} survived", pid.trim());
        std::thread::sleep(Duration::from_millis(20));
    }
    // The environment sets the same bound.
    let s = c.status_env(&[("BENCHOPS_SCHEDULER_TIMEOUT", "0.5")]);
    assert!(
        reason(&s, 1).contains("sacct timed out after 0.5 s"),
        "{}",
        reason(&s, 1)
    );
    let bad = c.exec(&["--scheduler-timeout", "0", "bench", "list"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn benchops_own_cancellation_decides_tasks_that_never_started() {
    let c = Cluster::new();
    c.run_task(0);
    c.answer("scancel", "", "", 0);
    ok_stdout(&c.exec(&["bench", "cancel", &c.digest]));
    c.answer("squeue", "", "", 0);
    c.answer("sacct", "", "sacct: error: slurmdbd: Connection refused", 1);
    let s = c.status();
    for i in 1..3 {
        assert_eq!(class(&s, i), "failed", "{:#}", s["children"][i]);
        assert_eq!(reason(&s, i), "cancelled by benchops before it started");
    }
    // The task that ran is decided by its own evidence.
    assert_eq!(class(&s, 0), "incomplete", "{:#}", s["children"][0]);
    assert_eq!(s["terminal"], false);
}

#[test]
fn a_folded_range_row_never_overrides_a_tasks_own_evidence() {
    let c = Cluster::new();
    c.age_submission();
    // Task 0 ended with exit 0, task 1 was killed while running, task 2
    // never started; right after someone cancelled the array, accounting
    // shows only the folded row.
    c.run_task(0);
    c.run_task(1);
    std::fs::remove_file(c.run_dir(1).join("result.json")).expect("rm");
    c.answer("squeue", "", "", 0);
    c.answer(
        "sacct",
        &c.sacct_row("[0-2]", "CANCELLED by 1000", "0:0", END),
        "",
        0,
    );
    let s = c.status();
    assert_eq!(class(&s, 0), "incomplete", "{:#}", s["children"][0]);
    assert_eq!(class(&s, 1), "incomplete", "{:#}", s["children"][1]);
    assert!(
        reason(&s, 0).contains("waiting for accounting to list the task on its own"),
        "{}",
        reason(&s, 0)
    );
    assert_eq!(class(&s, 2), "failed", "{:#}", s["children"][2]);
    assert!(
        reason(&s, 2).contains("folded accounting row 4242_[0-2] says CANCELLED by 1000"),
        "{}",
        reason(&s, 2)
    );
    assert_eq!(s["terminal"], false);
    // Once accounting lists the tasks that ran on their own, they decide.
    let rows = [
        c.sacct_row("0", "COMPLETED", "0:0", END),
        c.sacct_row("1", "CANCELLED by 1000", "0:15", END),
        c.sacct_row("[2-2]", "CANCELLED by 1000", "0:0", END),
    ]
    .concat();
    c.answer("sacct", &rows, "", 0);
    let s = c.status();
    let classes: Vec<&str> = (0..3).map(|i| class(&s, i)).collect();
    assert_eq!(classes, ["succeeded", "failed", "failed"], "{s:#}");
    assert_eq!(s["terminal"], true);
}

#[test]
fn rows_of_a_reused_job_id_are_not_the_benchmarks_evidence() {
    let c = Cluster::new();
    c.age_submission();
    c.answer(
        "squeue",
        &format!("{JOB}_0|{JOB}|{JOB}|0|RUNNING|None|someone-else\n"),
        "",
        0,
    );
    c.answer(
        "sacct",
        &format!("{JOB}_1|4250|FAILED|1:0|{END}|{END}|00:00:01|node01|None|someone-else\n"),
        "",
        0,
    );
    let s = c.status();
    for i in 0..2 {
        assert_eq!(class(&s, i), "missing", "{:#}", s["children"][i]);
        assert!(
            reason(&s, i).contains("now belongs to another job, named \"someone-else\""),
            "{}",
            reason(&s, i)
        );
    }
    assert!(!reason(&s, 2).contains("another job"), "{}", reason(&s, 2));
    // squeue and sacct are asked for the job name.
    let calls = std::fs::read_to_string(c.answers.join("squeue.calls")).expect("calls");
    assert!(calls.contains("%j"), "{calls}");
    let calls = std::fs::read_to_string(c.answers.join("sacct.calls")).expect("calls");
    assert!(calls.contains("JobName"), "{calls}");
}

#[test]
fn a_task_without_any_record_points_to_the_runbook() {
    let c = Cluster::new();
    c.age_submission();
    c.answer("squeue", "", "", 0);
    c.answer("sacct", "", "", 0);
    let s = c.status();
    assert_eq!(class(&s, 0), "missing", "{:#}", s["children"][0]);
    let r = reason(&s, 0);
    assert!(
        r.contains("Slurm keeps no record of a pending task that was cancelled on its own"),
        "{r}"
    );
    assert!(r.contains("runbooks/slurm.md"), "{r}");
}

#[test]
fn sacct_end_times_are_read_in_the_local_time_zone() {
    let c = Cluster::new();
    c.answer("squeue", "", "", 0);
    // sacct prints local times without an offset; 5 s ago in New York.
    let hook = format!(
        "printf '%s' \"{JOB}_0|{JOB}|COMPLETED|0:0|$(TZ=America/New_York date -d '-5 sec' +%Y-%m-%dT%H:%M:%S)|$(TZ=America/New_York date -d '-5 sec' +%Y-%m-%dT%H:%M:%S)|00:00:01|node01|None|{}\" > '{}'",
        c.name(),
        c.answers.join("sacct.out").display()
    );
    c.hook("sacct", Some(&hook));
    c.answer("sacct", "", "", 0);
    let s = c.status_env(&[("TZ", "America/New_York")]);
    assert_eq!(class(&s, 0), "incomplete", "{:#}", s["children"][0]);
    assert!(
        reason(&s, 0).contains("waiting for the result file"),
        "{}",
        reason(&s, 0)
    );
    // Read in another zone, the same end is hours old.
    let s = c.status_env(&[("TZ", "UTC")]);
    assert_eq!(
        class(&s, 0),
        "scheduler-inconsistent",
        "{:#}",
        s["children"][0]
    );
}

#[test]
fn decided_children_do_not_make_a_look_with_an_incomplete_answer_terminal() {
    let c = Cluster::new();
    all_ran(&c);
    let rows: String = (0..3)
        .map(|t| c.sacct_row(&t.to_string(), "COMPLETED", "0:0", END))
        .collect();
    c.answer(
        "sacct",
        &format!("{rows}partial answer, slurmdbd busy\n"),
        "",
        0,
    );
    let s = c.status();
    assert_eq!(s["counts"]["succeeded"], 3, "{s:#}");
    assert_eq!(s["scheduler"]["complete"], false, "{s:#}");
    assert_eq!(s["terminal"], false, "{s:#}");
    let a: Value = serde_json::from_str(&ok_stdout(
        &c.exec(&["bench", "analyze", &c.digest, "--format", "json"]),
    ))
    .expect("analysis");
    assert_eq!(a["complete"], false, "{a:#}");
}

#[test]
fn a_task_squeue_lists_in_a_state_this_build_does_not_know_keeps_the_benchmark_active() {
    let c = Cluster::new();
    all_ran(&c);
    for state in ["CONFIGURING", "STOPPED", "SPECIAL_EXIT"] {
        let rows: String = (0..3).map(|t| c.squeue_row(t, state, "None")).collect();
        c.answer("squeue", &rows, "", 0);
        let s = c.status();
        assert_eq!(s["terminal"], false, "{state}: {s:#}");
        assert_eq!(s["counts"]["succeeded"], 0, "{state}: {s:#}");
        assert!(reason(&s, 0).contains(state), "{}", reason(&s, 0));
    }
}

#[test]
fn an_accounting_state_this_build_does_not_know_is_no_verdict() {
    let c = Cluster::new();
    all_ran(&c);
    let rows: String = (0..3)
        .map(|t| c.sacct_row(&t.to_string(), "REVOKED", "0:0", END))
        .collect();
    c.answer("sacct", &rows, "", 0);
    // Not a failure state: the tasks' own result files decide.
    let s = c.status();
    assert_eq!(s["counts"]["succeeded"], 3, "{s:#}");
    assert_eq!(s["counts"]["failed"], 0, "{s:#}");
}

#[test]
fn a_noisy_failing_tool_gives_every_child_a_short_reason() {
    let c = Cluster::new();
    all_ran(&c);
    // 70 KB of errors, and thousands of unparsable lines.
    c.answer("squeue", "", &"squeue: error: noise\n".repeat(3_500), 1);
    let garbage = "garbage line without fields\n".repeat(5_000);
    c.answer("sacct", &garbage, "", 0);
    let s = c.status();
    assert_eq!(
        s["terminal"], false,
        "complete: {}",
        s["scheduler"]["complete"]
    );
    for i in 0..3 {
        let r = reason(&s, i);
        assert!(r.len() < 2_500, "{} bytes: {}", r.len(), &r[..300]);
        assert!(r.contains("squeue") && r.contains("more problem"), "{r}");
    }
    let errors = s["scheduler"]["errors"].as_array().expect("errors");
    assert!(errors.len() <= 8, "{}", errors.len());
}

/// Succeeds on its first run, exits 3 when Slurm runs it again.
const REQUEUE_INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "requeued"
command = ["sh", "-c", "test \"${SLURM_RESTART_COUNT:-0}\" = 0 || exit 3"]
repetitions = 3
"#;

const FIRST_START: &str = "2026-11-30T11:59:00";
const FIRST_END: &str = "2026-11-30T11:59:01";
const RERUN_START: &str = "2026-11-30T12:01:00";

/// Every task ran once and succeeded, then tasks 0 and 1 were requeued:
/// accounting has turned their first records into REQUEUED.
fn requeued_after_success() -> Cluster {
    let c = Cluster::with_intent(REQUEUE_INTENT);
    for t in 0..3 {
        c.run_task(t);
    }
    let rows: String = (0..3)
        .map(|t| c.sacct_run(t, "COMPLETED", "0:0", FIRST_START, FIRST_END))
        .collect();
    c.answer("sacct", &rows, "", 0);
    c.answer("squeue", "", "", 0);
    let s = c.status();
    assert_eq!(s["counts"]["succeeded"], 3, "{s:#}");
    c
}

fn first_records(c: &Cluster, requeued: &[u64]) -> String {
    (0..3)
        .map(|t| {
            let state = if requeued.contains(&t) {
                "REQUEUED"
            } else {
                "COMPLETED"
            };
            c.sacct_run(t, state, "0:0", FIRST_START, FIRST_END)
        })
        .collect()
}

#[test]
fn a_requeued_tasks_earlier_result_is_never_its_success() {
    let c = requeued_after_success();
    let never_succeeded = |s: &Value| {
        for i in 0..2 {
            assert_ne!(class(s, i), "succeeded", "{:#}", s["children"][i]);
        }
        assert_eq!(s["terminal"], false, "{s:#}");
    };
    // Waiting again (BeginTime): the first run's exit 0 is stale.
    let waiting: String = (0..2)
        .map(|t| c.squeue_row(t, "PENDING", "BeginTime"))
        .collect();
    c.answer("squeue", &waiting, "", 0);
    c.answer("sacct", &first_records(&c, &[0, 1]), "", 0);
    let s = c.status();
    never_succeeded(&s);
    assert_eq!(class(&s, 0), "stale", "{:#}", s["children"][0]);
    assert_eq!(class(&s, 2), "succeeded", "{:#}", s["children"][2]);
    // Running again before the new run wrote anything (its directory does
    // not exist yet): what the first look of the real cluster called a
    // success. Accounting may not list the new run yet (as on the real
    // cluster) or already list it; either way the files are restart 0's.
    let running: String = (0..2).map(|t| c.squeue_row(t, "RUNNING", "None")).collect();
    c.answer("squeue", &running, "", 0);
    let with_new_record = format!(
        "{}{}",
        first_records(&c, &[0, 1]),
        c.sacct_run(1, "RUNNING", "0:0", RERUN_START, "Unknown")
    );
    for sacct in [first_records(&c, &[0, 1]), with_new_record] {
        c.answer("sacct", &sacct, "", 0);
        let s = c.status();
        never_succeeded(&s);
        for i in 0..2 {
            assert_eq!(class(&s, i), "stale", "{:#}", s["children"][i]);
            let r = reason(&s, i);
            assert!(
                r.contains("the result (exit 0) is from an earlier run"),
                "{r}"
            );
            assert!(r.contains("restarted the task 1 time(s)"), "{r}");
            assert_eq!(s["children"][i]["restart"], 0);
        }
    }
    // Without accounting nothing is known of restarts, and a result of a
    // task squeue lists as running is still no verdict.
    c.answer("sacct", "", "sacct: error: slurmdbd: Connection refused", 1);
    let s = c.status();
    never_succeeded(&s);
    for i in 0..2 {
        assert_eq!(class(&s, i), "incomplete", "{:#}", s["children"][i]);
        assert!(
            reason(&s, i).contains("still lists the task as running"),
            "{}",
            reason(&s, i)
        );
    }
    // Task 0's new run wrote its result while squeue still lists it.
    assert_eq!(c.rerun_task(0, 1), Some(1), "the rerun exits 3");
    c.answer("sacct", &first_records(&c, &[0, 1]), "", 0);
    let s = c.status();
    never_succeeded(&s);
    assert_eq!(class(&s, 0), "incomplete", "{:#}", s["children"][0]);
    assert_eq!(s["children"][0]["restart"], 1);
    // Both reruns ended; task 1's files are not visible yet: its end
    // state decides, not restart 0's exit 0.
    c.answer("squeue", "", "", 0);
    let ended = format!(
        "{}{}{}",
        first_records(&c, &[0, 1]),
        c.sacct_run(0, "FAILED", "1:0", RERUN_START, END),
        c.sacct_run(1, "FAILED", "1:0", RERUN_START, END),
    );
    c.answer("sacct", &ended, "", 0);
    let s = c.status();
    for i in 0..2 {
        assert_eq!(class(&s, i), "failed", "{:#}", s["children"][i]);
        assert_eq!(s["children"][i]["restart"], 1);
    }
    assert_eq!(reason(&s, 0), "exit 3; backend: 4242_0 (exit 1) FAILED");
    assert_eq!(reason(&s, 1), "4242_1 (exit 1) FAILED");
    assert_eq!(s["terminal"], true, "{s:#}");
    // Once task 1's files are there, they decide, with the same class.
    assert_eq!(c.rerun_task(1, 1), Some(1));
    let s = c.status();
    assert_eq!(reason(&s, 1), "exit 3; backend: 4242_1 (exit 1) FAILED");
    let counts = &s["counts"];
    assert_eq!(
        (counts["succeeded"].as_u64(), counts["failed"].as_u64()),
        (Some(1), Some(2)),
        "{s:#}"
    );
    // The analysis takes only the run that decided: one success.
    let a: Value = serde_json::from_str(&ok_stdout(
        &c.exec(&["bench", "analyze", &c.digest, "--format", "json"]),
    ))
    .expect("analysis");
    assert_eq!(a["runs"]["succeeded"], 1, "{a:#}");
    assert_eq!(a["complete"], true, "{a:#}");
}

#[test]
fn a_result_that_names_no_restart_is_not_trusted_once_the_task_was_requeued() {
    let c = requeued_after_success();
    // A result written before results named their run: trusted while
    // accounting knows a single run.
    let result = c.run_dir(0).join("result.json");
    let mut json: Value =
        serde_json::from_slice(&std::fs::read(&result).expect("result")).expect("json");
    json.as_object_mut().expect("object").remove("restart");
    std::fs::write(&result, json.to_string()).expect("write");
    let s = c.status();
    assert_eq!(class(&s, 0), "succeeded", "{:#}", s["children"][0]);
    // After a requeue whose run accounting reports COMPLETED, long ago,
    // with nothing of that run on disk: no result for it.
    let rerun_ok = format!(
        "{}{}",
        first_records(&c, &[0]),
        c.sacct_run(0, "COMPLETED", "0:0", RERUN_START, END)
    );
    c.answer("sacct", &rerun_ok, "", 0);
    let s = c.status();
    assert_eq!(
        class(&s, 0),
        "scheduler-inconsistent",
        "{:#}",
        s["children"][0]
    );
    assert_eq!(
        reason(&s, 0),
        "backend reports success but no result file exists"
    );
    // The same older result in the new run's directory is not trusted
    // either: it does not say which run wrote it.
    let r1 = c.rerun_dir(0, 1);
    std::fs::create_dir_all(&r1).expect("mkdir");
    std::fs::write(r1.join("result.json"), json.to_string()).expect("write");
    let s = c.status();
    assert_eq!(
        class(&s, 0),
        "scheduler-inconsistent",
        "{:#}",
        s["children"][0]
    );
    assert!(
        reason(&s, 0).contains("the result names no restart"),
        "{}",
        reason(&s, 0)
    );
    // A result that names another run than its directory's is not this
    // run's.
    json["restart"] = 0.into();
    std::fs::write(r1.join("result.json"), json.to_string()).expect("write");
    let s = c.status();
    assert_eq!(
        class(&s, 0),
        "scheduler-inconsistent",
        "{:#}",
        s["children"][0]
    );
    assert!(
        reason(&s, 0).contains("result names restart 0, but lies in the directory of restart 1"),
        "{}",
        reason(&s, 0)
    );
}
