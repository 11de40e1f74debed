//! `lane schedule --emit slurm` on a real Slurm cluster
//! (`scripts/slurm-up.sh`): a lane due every minute gets a chain of batch
//! jobs that seals the runs of two consecutive slots with nobody there; a
//! second install starts no second chain; a lane whose run fails keeps its
//! chain; `--status` lists the chains and `--stop` ends them, after which
//! a job's own successor call submits nothing.
//!
//! In CI (`CI=true`) a missing cluster fails the test. Elsewhere the test
//! says loudly that it did not run.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{intent, lane_host, slurm_ready};

const EXE: &str = env!("CARGO_BIN_EXE_benchops-exec");

/// `minutely` is due every minute; `broken` too, but covers no case, so
/// each of its lane runs fails.
const MANIFEST: &str = r#"
schema = "schedule-manifest/v3"
repository = "example/widgets"
suite = ["bench.toml"]

[[lanes]]
name = "minutely"
cron = "* * * * *"
timezone = "UTC"
completion_window_minutes = 1
cases = ["*"]
baseline = "last-clean"

[[lanes]]
name = "broken"
cron = "* * * * *"
timezone = "UTC"
completion_window_minutes = 1
cases = ["nosuch"]
baseline = "last-clean"
"#;

/// A host with a subject, a history and the manifest; its chains are
/// stopped when it is dropped, so that a failing test leaves no job
/// behind on the cluster.
struct Host {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Host {
    fn new() -> Host {
        let tmp = lane_host(
            &intent(r#"["small"]"#, 2),
            MANIFEST,
            "SMALL_MS=20\nLARGE_MS=40\n",
        );
        let root = tmp.path().to_path_buf();
        Host { _tmp: tmp, root }
    }

    fn schedule(&self, args: &[&str]) -> Output {
        Command::new(EXE)
            .current_dir(&self.root)
            .args(["--state", "state", "lane", "schedule"])
            .args(["--manifest", "schedule.toml"])
            .args(args)
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN")
            .output()
            .expect("runs")
    }

    fn install(&self, extra: &[&str]) -> Vec<Value> {
        let mut args = vec![
            "--emit",
            "slurm",
            "--history",
            "history.git",
            "--subject",
            "widgets",
            "--out",
            "sealed",
            "--json",
        ];
        args.extend(extra);
        json_lines(&self.schedule(&args))
    }

    /// The lanes and slots of the sealed records.
    fn sealed(&self) -> BTreeSet<(String, String)> {
        let Ok(dir) = std::fs::read_dir(self.root.join("sealed")) else {
            return BTreeSet::new();
        };
        dir.flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| {
                let v: Value = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
                Some((
                    v["lane"].as_str()?.to_owned(),
                    v["slot"].as_str()?.to_owned(),
                ))
            })
            .collect()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.schedule(&["--stop"]);
    }
}

fn json_lines(o: &Output) -> Vec<Value> {
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

fn by_lane<'a>(lines: &'a [Value], lane: &str) -> &'a Value {
    lines
        .iter()
        .find(|v| v["lane"] == lane)
        .unwrap_or_else(|| panic!("no line for lane {lane}: {lines:?}"))
}

/// The ids and states sacct knows for jobs named `name`.
fn sacct(name: &str) -> Vec<(String, String)> {
    let o = Command::new("sacct")
        .args(["-X", "--noheader", "--parsable2", "--format=JobID,State"])
        .arg(format!("--name={name}"))
        .output()
        .expect("sacct runs");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_once('|'))
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect()
}

fn ts(text: &str) -> jiff::Timestamp {
    text.parse().expect("an RFC 3339 slot")
}

#[test]
fn a_chain_seals_consecutive_slots_unattended_survives_a_failed_run_and_stops() {
    if !slurm_ready("THE SLURM CHAIN TEST") {
        return;
    }
    let host = Host::new();

    // Install: one job per lane, held until the lane's next slot.
    let first = host.install(&[]);
    for lane in ["minutely", "broken"] {
        assert_eq!(by_lane(&first, lane)["action"], "submitted", "{first:?}");
    }
    // A second install starts no second chain.
    let again = host.install(&[]);
    for lane in ["minutely", "broken"] {
        let v = by_lane(&again, lane);
        assert_eq!(v["action"], "already-pending", "{again:?}");
        assert_eq!(v["job"], by_lane(&first, lane)["job"]);
    }
    let status = json_lines(&host.schedule(&["--status", "--json"]));
    for lane in ["minutely", "broken"] {
        let jobs = by_lane(&status, lane)["jobs"]
            .as_array()
            .expect("jobs")
            .clone();
        assert_eq!(jobs.len(), 1, "one chain job for {lane}: {status:?}");
    }
    let broken_name = by_lane(&status, "broken")["job_name"]
        .as_str()
        .expect("name")
        .to_owned();
    let minutely_name = by_lane(&status, "minutely")["job_name"]
        .as_str()
        .expect("name")
        .to_owned();

    // Two consecutive slots sealed with nobody there. Under a busy cluster
    // a job may start more than a minute late and skip a slot; the test
    // then waits for the next consecutive pair.
    let deadline = Instant::now() + Duration::from_secs(330);
    let pair = loop {
        let slots: Vec<jiff::Timestamp> = host
            .sealed()
            .into_iter()
            .filter(|(lane, _)| lane == "minutely")
            .map(|(_, s)| ts(&s))
            .collect();
        if let Some(w) = slots
            .windows(2)
            .find(|w| w[1] - w[0] == jiff::SignedDuration::from_secs(60))
        {
            break (w[0], w[1]);
        }
        assert!(
            Instant::now() < deadline,
            "no two consecutive slots sealed in time: {slots:?}; jobs: {:?}",
            sacct(&minutely_name)
        );
        std::thread::sleep(Duration::from_secs(2));
    };
    assert_eq!(pair.0.as_second() % 60, 0, "slots on the minute: {pair:?}");
    assert!(
        !host.sealed().iter().any(|(lane, _)| lane == "broken"),
        "the broken lane seals nothing"
    );

    // The broken lane's runs failed, and its chain went on: a failed job,
    // and a job of the chain still pending or running after it.
    let failed: Vec<_> = sacct(&broken_name)
        .into_iter()
        .filter(|(_, state)| state == "FAILED")
        .collect();
    assert!(!failed.is_empty(), "{:?}", sacct(&broken_name));
    let status = json_lines(&host.schedule(&["--status", "--json"]));
    let live = by_lane(&status, "broken")["jobs"]
        .as_array()
        .expect("jobs")
        .len();
    assert!(live >= 1, "the chain survived its failed run: {status:?}");
    let out = std::fs::read_to_string(
        host.root
            .join("state/chains/broken")
            .join(format!("{}.out", failed[0].0)),
    )
    .expect("the failed job's output");
    assert!(
        out.contains("submitted") && out.contains("covers none of the suite's cases"),
        "{out}"
    );

    // Stop: nothing pending is left, and a job's successor call submits
    // nothing afterwards.
    let stopped = json_lines(&host.schedule(&["--stop", "--json"]));
    for lane in ["minutely", "broken"] {
        assert!(
            by_lane(&stopped, lane)["cancelled"].is_array(),
            "{stopped:?}"
        );
    }
    let status = json_lines(&host.schedule(&["--status", "--json"]));
    for lane in ["minutely", "broken"] {
        let v = by_lane(&status, lane);
        assert_eq!(v["stopped"], true);
        assert!(
            v["jobs"]
                .as_array()
                .expect("jobs")
                .iter()
                .all(|j| j["state"] != "PENDING"),
            "{status:?}"
        );
    }
    let next = host.install(&["--chain-next"]);
    for lane in ["minutely", "broken"] {
        assert_eq!(by_lane(&next, lane)["action"], "stopped", "{next:?}");
    }
    let status = json_lines(&host.schedule(&["--status", "--json"]));
    for lane in ["minutely", "broken"] {
        assert!(
            by_lane(&status, lane)["jobs"]
                .as_array()
                .expect("jobs")
                .iter()
                .all(|j| j["state"] != "PENDING"),
            "{status:?}"
        );
    }
}
