//! `benchops-exec lane due` end to end, on a fixed clock (`--now`): what is
//! due, `--run` starting a lane run and driving it to its sealed record on
//! later calls, two callers racing on one slot, exit codes, and the
//! refusals (credentials, a bad cron named with its lane).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

mod common;
use common::{intent, lane_host, text};

const EXE: &str = env!("CARGO_BIN_EXE_benchops-exec");

/// `nightly` at 01:00 UTC, 60 minutes to complete; `strict` at 02:00 UTC
/// and never late.
const MANIFEST: &str = r#"
schema = "schedule-manifest/v3"
repository = "example/widgets"
suite = ["bench.toml"]

[[lanes]]
name = "nightly"
cron = "0 1 * * *"
timezone = "UTC"
completion_window_minutes = 60
cases = ["*"]
baseline = "last-clean"
confirm = "stored-baseline"
[lanes.comparison]
metrics = ["work_s"]

[[lanes]]
name = "strict"
cron = "0 2 * * *"
timezone = "UTC"
completion_window_minutes = 60
cases = ["*"]
baseline = "last-clean"
catch_up = "none"
"#;

struct Host {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Host {
    fn new(manifest: &str) -> Host {
        let tmp = lane_host(
            &intent(r#"["small"]"#, 2),
            manifest,
            "SMALL_MS=20\nLARGE_MS=40\n",
        );
        let root = tmp.path().to_path_buf();
        Host { _tmp: tmp, root }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(EXE);
        c.current_dir(&self.root)
            .args([
                "--state",
                "state",
                "lane",
                "due",
                "--manifest",
                "schedule.toml",
            ])
            .args(args)
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN");
        c
    }

    fn due(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("runs")
    }

    fn run_at(&self, now: &str) -> Output {
        self.due(&[
            "--now",
            now,
            "--run",
            "--history",
            "history.git",
            "--subject",
            "widgets",
            "--out",
            "sealed",
            "--json",
        ])
    }

    fn executions(&self) -> Vec<Value> {
        let out = Command::new(EXE)
            .current_dir(&self.root)
            .args(["--state", "state", "lane", "list", "--json"])
            .output()
            .expect("runs");
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice::<Value>(&out.stdout)
            .expect("json")
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

fn lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per lane"))
        .collect()
}

#[test]
fn a_due_lane_is_started_then_driven_to_its_sealed_record_by_later_calls() {
    let h = Host::new(MANIFEST);
    // 01:10: nightly's slot is due; strict's latest slot (02:00 the day
    // before) has passed its window.
    let o = h.due(&["--now", "2026-12-04T01:10:00Z"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("nightly")
            && t.contains("2026-12-04T01:00:00Z")
            && t.contains("due (window closes 2026-12-04T02:00:00Z)"),
        "{t}"
    );
    assert!(
        t.contains("window passed at 2026-12-03T03:00:00Z: missed"),
        "{t}"
    );
    assert!(h.executions().is_empty(), "looking starts nothing");

    let o = h.run_at("2026-12-04T01:10:00Z");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let first = lines(&o);
    assert_eq!(first[0]["lane"], "nightly");
    assert_eq!(first[0]["state"], "started");
    let id = first[0]["id"].as_str().expect("an id").to_owned();

    // Later calls move the execution on until it is sealed; none starts
    // a second execution for the slot.
    let mut sealed = false;
    for _ in 0..600 {
        let o = h.run_at("2026-12-04T01:20:00Z");
        let now = lines(&o);
        assert_eq!(now[0]["id"], id.as_str(), "{}", text(&o));
        if now[0]["state"] == "sealed" {
            sealed = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(sealed, "the lane run was sealed by later calls");
    assert_eq!(h.executions().len(), 1);
    let records: Vec<_> = std::fs::read_dir(h.root.join("sealed"))
        .expect("sealed")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(records.len(), 1, "one sealed record for the slot");

    // Nothing is due once it is sealed: exit 4.
    let o = h.run_at("2026-12-04T01:30:00Z");
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert_eq!(lines(&o)[0]["state"], "sealed");
}

#[test]
fn two_callers_racing_on_one_slot_start_it_once() {
    let h = Host::new(MANIFEST);
    let args = [
        "--now",
        "2026-12-04T01:05:00Z",
        "--run",
        "--history",
        "history.git",
        "--subject",
        "widgets",
        "--out",
        "sealed",
        "--lane",
        "nightly",
        "--json",
    ];
    let spawn = || {
        h.command(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts")
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (
        a.wait_with_output().expect("first ends"),
        b.wait_with_output().expect("second ends"),
    );
    assert_eq!(a.status.code(), Some(0), "{}", text(&a));
    assert_eq!(b.status.code(), Some(0), "{}", text(&b));
    let execs = h.executions();
    assert_eq!(execs.len(), 1, "one execution for the slot: {execs:?}");
    // One started it; the other, after the lock, found it running (or
    // resumed the same execution): the same id either way.
    let (la, lb) = (lines(&a), lines(&b));
    assert_eq!(la[0]["id"], lb[0]["id"]);
    let states = [la[0]["state"].clone(), lb[0]["state"].clone()];
    assert!(states.iter().any(|s| s == "started"), "{states:?}");
}

#[test]
fn a_late_strict_lane_is_skipped_on_purpose_and_nothing_due_exits_4() {
    let h = Host::new(MANIFEST);
    // 02:30: strict's slot is 30 minutes late, and catch_up = none.
    let o = h.due(&[
        "--now",
        "2026-12-04T02:30:00Z",
        "--lane",
        "strict",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let l = lines(&o);
    assert_eq!(l[0]["state"], "skipped-late");
    assert_eq!(l[0]["late_minutes"], 30);
    assert_eq!(l[0]["catch_up"], "none");
}

#[test]
fn refusals_name_what_to_fix() {
    let h = Host::new(&MANIFEST.replace("cron = \"0 2 * * *\"", "cron = \"0 26 * * *\""));
    let o = h.due(&["--now", "2026-12-04T01:10:00Z"]);
    assert_eq!(o.status.code(), Some(2));
    let t = text(&o);
    assert!(t.contains("lane `strict`") && t.contains("hour"), "{t}");

    let h = Host::new(MANIFEST);
    let o = h.due(&["--lane", "weekly"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains(
            "--lane weekly: the manifest declares no such lane (it declares: nightly, strict)"
        ),
        "{}",
        text(&o)
    );

    let o = h
        .command(&["--now", "2026-12-04T01:10:00Z"])
        .env("GITHUB_TOKEN", "ghs_not_for_execution")
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    let t = text(&o);
    assert!(
        t.contains("GITHUB_TOKEN") && !t.contains("ghs_not_for_execution"),
        "{t}"
    );

    let o = h.due(&["--run", "--now", "2026-12-04T01:10:00Z"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--history"), "{}", text(&o));
}

#[test]
fn run_and_wait_seals_the_slot_in_one_call_as_a_timer_at_the_slot_needs() {
    let h = Host::new(MANIFEST);
    let o = h.due(&[
        "--now",
        "2026-12-04T01:01:00Z",
        "--lane",
        "nightly",
        "--run",
        "--wait",
        "--history",
        "history.git",
        "--subject",
        "widgets",
        "--out",
        "sealed",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(lines(&o)[0]["state"], "sealed");
    let execs = h.executions();
    assert_eq!(execs.len(), 1);
    assert_eq!(execs[0]["phase"], "sealed", "{execs:?}");
}

#[test]
fn a_lane_that_cannot_start_does_not_keep_the_others_from_starting() {
    // `broken` covers no case of the suite, so its lane run cannot start.
    let manifest = MANIFEST.replace(
        "[[lanes]]\nname = \"strict\"",
        "[[lanes]]\nname = \"broken\"\ncron = \"0 1 * * *\"\ntimezone = \"UTC\"\ncompletion_window_minutes = 60\ncases = [\"gadgets/*\"]\nbaseline = \"last-clean\"\n\n[[lanes]]\nname = \"strict\"",
    );
    let h = Host::new(&manifest);
    let o = h.run_at("2026-12-04T01:05:00Z");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let l = lines(&o);
    assert_eq!(l[0]["lane"], "nightly");
    assert_eq!(l[0]["state"], "started", "{l:?}");
    assert_eq!(l[1]["lane"], "broken");
    assert_eq!(l[1]["state"], "failed");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("lane `broken`, slot 2026-12-04T01:00:00Z: "),
        "{err}"
    );
    assert_eq!(h.executions().len(), 1);
}

#[test]
fn a_caller_that_waits_on_its_lane_run_does_not_hold_the_lock_meanwhile() {
    // A timer per lane calls `lane due --run --wait`: while one lane's run
    // goes on, another lane's timer must get the lock. The children here
    // wait for a gate file, so the run goes on until the test opens it.
    let h = Host::new(MANIFEST);
    let gate = h.root.join("gate");
    std::fs::write(
        h.root.join("bench.toml"),
        intent(r#"["small"]"#, 2).replace(
            "\"cd \\\"$BENCHOPS_SUBJECT_DIR\\\"",
            &format!(
                "\"while [ ! -e {} ]; do sleep 0.05; done; cd \\\"$BENCHOPS_SUBJECT_DIR\\\"",
                gate.display()
            ),
        ),
    )
    .expect("intent");
    assert!(
        std::fs::read_to_string(h.root.join("bench.toml"))
            .expect("intent")
            .contains("gate"),
        "the gate is in the command"
    );
    let mut waiting = h
        .command(&[
            "--now",
            "2026-12-04T01:01:00Z",
            "--lane",
            "nightly",
            "--run",
            "--wait",
            "--history",
            "history.git",
            "--subject",
            "widgets",
            "--out",
            "sealed",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    // The lock becomes free while that call still waits on its run.
    let lock = h.root.join("state/due.lock");
    let mut free = false;
    for _ in 0..600 {
        let started = !h.executions().is_empty();
        let took = started
            && Command::new("flock")
                .args(["-n"])
                .arg(&lock)
                .arg("true")
                .status()
                .is_ok_and(|s| s.success());
        if took {
            free = true;
            break;
        }
        assert!(
            waiting.try_wait().expect("try_wait").is_none(),
            "the waiting call ended before the gate opened"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        free,
        "the lock stayed held while `--wait` waited on the lane run"
    );
    assert!(
        waiting.try_wait().expect("try_wait").is_none(),
        "still waiting on its run"
    );
    std::fs::write(&gate, "").expect("open the gate");
    let o = waiting.wait_with_output().expect("ends");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(lines(&o)[0]["state"], "sealed", "{}", text(&o));
}

#[test]
fn a_run_after_slots_passed_over_records_them_as_skipped_for_the_watchdog() {
    let h = Host::new(MANIFEST);
    let run = |now: &str| {
        let o = h.due(&[
            "--now",
            now,
            "--lane",
            "nightly",
            "--run",
            "--wait",
            "--history",
            "history.git",
            "--subject",
            "widgets",
            "--out",
            "sealed",
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        lines(&o).remove(0)
    };
    // The first run: nothing was passed over since a previous run.
    let first = run("2026-12-01T01:05:00Z");
    assert_eq!(first["state"], "sealed");
    assert!(first.get("skipped").is_none(), "{first}");
    // Off on the 2nd and 3rd; back on the 4th.
    let o = h.due(&[
        "--now",
        "2026-12-04T01:05:00Z",
        "--lane",
        "nightly",
        "--json",
    ]);
    let looked = lines(&o).remove(0);
    assert_eq!(looked["missed_before"], 2, "{looked}");
    assert_eq!(
        looked["skipped"],
        serde_json::json!({
            "catch_up": "latest",
            "count": 2,
            "first": "2026-12-02T01:00:00Z",
            "last": "2026-12-03T01:00:00Z",
        })
    );
    let back = run("2026-12-04T01:05:00Z");
    assert_eq!(back["state"], "sealed");
    // The record of the 4th says which slots its host skipped, and why.
    let records: Vec<Value> = std::fs::read_dir(h.root.join("sealed"))
        .expect("sealed")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| serde_json::from_slice(&std::fs::read(e.path()).expect("read")).expect("json"))
        .collect();
    let of_the_4th = records
        .iter()
        .find(|r| r["slot"] == "2026-12-04T01:00:00Z")
        .expect("the record of the 4th");
    assert_eq!(of_the_4th["skipped"], looked["skipped"]);
    let of_the_1st = records
        .iter()
        .find(|r| r["slot"] == "2026-12-01T01:00:00Z")
        .expect("the record of the 1st");
    assert!(of_the_1st.get("skipped").is_none());
}
