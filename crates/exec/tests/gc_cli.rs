//! `benchops-exec gc` end to end, on state directories made by real lane
//! runs: exactly what is removed and kept by age and by size, a dry run
//! that removes nothing, the newest execution of each lane and an unsealed
//! one surviving, `gc` run again and again while a lane run goes on (which
//! still seals with its benchmarks intact), a `gc` killed half-way finished
//! by the next one, and `lane due --run` applying the manifest's `[gc]`.
//! Ages are set on the files (`lane.json`'s modification time), never
//! waited for.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use serde_json::Value;

mod common;
use common::{intent, lane_host, text};

const EXE: &str = env!("CARGO_BIN_EXE_benchops-exec");

/// `nightly` at 01:00 UTC and `strict` at 02:00 UTC, both confirming
/// against the stored baseline (no subject trees).
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
confirm = "stored-baseline"
[lanes.comparison]
metrics = ["work_s"]
"#;

const DAY: Duration = Duration::from_secs(24 * 3600);

struct Host {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Host {
    fn new(manifest: &str, reps: u32) -> Host {
        let suite = intent(r#"["small", "large"]"#, reps);
        let tmp = lane_host(&suite, manifest, "SMALL_MS=5\nLARGE_MS=10\n");
        let root = tmp.path().to_path_buf();
        Host { _tmp: tmp, root }
    }

    fn exec(&self, args: &[&str]) -> Command {
        let mut c = Command::new(EXE);
        c.current_dir(&self.root)
            .args(["--state", "state"])
            .args(args)
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN");
        c
    }

    fn due_args(lane: &str, now: &str, wait: bool) -> Vec<String> {
        let mut v: Vec<String> = [
            "lane",
            "due",
            "--manifest",
            "schedule.toml",
            "--lane",
            lane,
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
        ]
        .map(str::to_owned)
        .to_vec();
        if wait {
            v.push("--wait".into());
        }
        v
    }

    /// `lane due --run` for one lane's slot; `wait`: until it is sealed.
    fn due(&self, lane: &str, now: &str, wait: bool) -> Output {
        let args = Self::due_args(lane, now, wait);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = self.exec(&args).output().expect("runs");
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        o
    }

    fn executions(&self) -> Vec<Value> {
        let o = self
            .exec(&["lane", "list", "--json"])
            .output()
            .expect("runs");
        assert!(o.status.success(), "{o:?}");
        serde_json::from_slice::<Value>(&o.stdout)
            .expect("json")
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The `lane.json` of the execution of `lane` whose slot is `slot`.
    fn execution(&self, lane: &str, slot: &str) -> Value {
        let listed = self
            .executions()
            .into_iter()
            .find(|e| e["lane"] == lane && e["slot"] == slot)
            .unwrap_or_else(|| panic!("no execution of {lane} at {slot}"));
        self.lane_json(listed["id"].as_str().expect("id"))
    }

    fn lane_json(&self, id: &str) -> Value {
        let p = self.root.join("state/lanes").join(id).join("lane.json");
        serde_json::from_slice(&std::fs::read(p).expect("lane.json")).expect("json")
    }

    /// Makes the execution look sealed `days` ago (its `lane.json`).
    fn age(&self, id: &str, days: u32) {
        let p = self.root.join("state/lanes").join(id).join("lane.json");
        set_mtime(&p, SystemTime::now() - DAY * days);
    }

    fn gc(&self, args: &[&str]) -> (Output, Value) {
        let mut all = vec!["gc", "--json"];
        all.extend_from_slice(args);
        let o = self.exec(&all).output().expect("runs");
        let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        (o, v)
    }

    fn benchmarks(&self) -> BTreeSet<String> {
        std::fs::read_dir(self.root.join("state/benchmarks"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }

    fn lanes(&self) -> BTreeSet<String> {
        std::fs::read_dir(self.root.join("state/lanes"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.len() == 64)
            .collect()
    }

    /// Every file under the state directory, for "nothing changed".
    fn files(&self) -> BTreeSet<PathBuf> {
        let mut out = BTreeSet::new();
        let mut stack = vec![self.root.join("state")];
        while let Some(p) = stack.pop() {
            if p.is_dir() && !p.is_symlink() {
                stack.extend(
                    std::fs::read_dir(&p)
                        .expect("dir")
                        .flatten()
                        .map(|e| e.path()),
                );
            } else {
                out.insert(p);
            }
        }
        out
    }
}

fn set_mtime(p: &Path, t: SystemTime) {
    std::fs::File::open(p)
        .and_then(|f| f.set_modified(t))
        .expect("set mtime");
}

/// Every file and directory under `p` last modified at `t`.
fn age_tree(p: &Path, t: SystemTime) {
    let mut stack = vec![p.to_path_buf()];
    while let Some(p) = stack.pop() {
        if p.is_symlink() {
            continue;
        }
        if p.is_dir() {
            stack.extend(
                std::fs::read_dir(&p)
                    .expect("dir")
                    .flatten()
                    .map(|e| e.path()),
            );
        }
        set_mtime(&p, t);
    }
}

/// The benchmark digests (hex) an execution names.
fn named(exec: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for stage in ["measuring", "confirming"] {
        for s in exec[stage].as_array().into_iter().flatten() {
            let d = s["benchmark"].as_str().expect("digest");
            out.insert(d.strip_prefix("sha256:").unwrap_or(d).to_owned());
        }
    }
    out
}

fn items<'a>(report: &'a Value, list: &str, kind: &str) -> Vec<(&'a str, &'a str)> {
    report[list]
        .as_array()
        .expect("list")
        .iter()
        .filter(|i| i["kind"] == kind)
        .map(|i| {
            (
                i["id"].as_str().expect("id"),
                i["reason"].as_str().expect("reason"),
            )
        })
        .collect()
}

#[test]
fn gc_removes_exactly_what_the_policy_lets_go_and_keeps_the_newest_and_the_unsealed() {
    let h = Host::new(MANIFEST, 2);
    // nightly: three sealed runs. strict: an old run left unsealed (its
    // lane.json says measuring: nobody advanced it) and a newer sealed one.
    for day in ["01", "02", "03"] {
        h.due("nightly", &format!("2026-12-{day}T01:01:00Z"), true);
    }
    h.due("strict", "2026-12-01T02:01:00Z", false);
    h.due("strict", "2026-12-02T02:01:00Z", true);
    let n1 = h.execution("nightly", "2026-12-01T01:00:00Z");
    let n2 = h.execution("nightly", "2026-12-02T01:00:00Z");
    let n3 = h.execution("nightly", "2026-12-03T01:00:00Z");
    let s1 = h.execution("strict", "2026-12-01T02:00:00Z");
    let s2 = h.execution("strict", "2026-12-02T02:00:00Z");
    let id = |e: &Value| e["id"].as_str().expect("id").to_owned();
    assert_eq!(h.lane_json(&id(&s1))["phase"], "measuring");
    // Sealed (or started) 40 days ago, but n2 10 days ago.
    for e in [&n1, &n2, &n3, &s1, &s2] {
        h.age(&id(e), 40);
    }
    h.age(&id(&n2), 10);
    let before_files = h.files();
    let before_benchmarks = h.benchmarks();

    // A dry run says what would go and removes nothing.
    let (o, dry) = h.gc(&["--keep-days", "30", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(dry["dry_run"], true);
    assert_eq!(
        items(&dry, "removed", "lane_execution"),
        [(id(&n1).as_str(), "expired")]
    );
    assert_eq!(h.files(), before_files, "a dry run removes nothing");

    let (o, r) = h.gc(&["--keep-days", "30"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        items(&r, "removed", "lane_execution"),
        [(id(&n1).as_str(), "expired")]
    );
    let removed_benchmarks: BTreeSet<String> = items(&r, "removed", "benchmark")
        .into_iter()
        .map(|(d, why)| {
            assert_eq!(why, "of_removed");
            d.to_owned()
        })
        .collect();
    assert_eq!(removed_benchmarks, named(&n1));
    let kept: BTreeSet<(String, String)> = items(&r, "kept", "lane_execution")
        .into_iter()
        .map(|(i, w)| (i.to_owned(), w.to_owned()))
        .collect();
    let expect: BTreeSet<(String, String)> = [
        (id(&n2), "young"),
        (id(&n3), "newest"),
        (id(&s1), "unsealed"),
        (id(&s2), "newest"),
    ]
    .into_iter()
    .map(|(i, w)| (i, w.to_owned()))
    .collect();
    assert_eq!(kept, expect);
    assert_eq!(
        h.lanes(),
        [&n2, &n3, &s1, &s2].into_iter().map(id).collect(),
        "exactly n1 went"
    );
    let left = h.benchmarks();
    assert_eq!(
        left,
        before_benchmarks
            .difference(&removed_benchmarks)
            .cloned()
            .collect(),
        "exactly n1's benchmarks went"
    );
    for e in [&n2, &n3, &s1, &s2] {
        assert!(
            named(e).is_subset(&left),
            "a kept execution keeps its benchmarks"
        );
    }
    assert!(
        r["after"]["bytes"].as_u64() < r["before"]["bytes"].as_u64(),
        "{r}"
    );
    assert!(
        !h.root
            .join("state/.gc")
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some())
    );
    // `lane due` still sees every lane's latest slot as run.
    let o = h
        .exec(&[
            "lane",
            "due",
            "--manifest",
            "schedule.toml",
            "--now",
            "2026-12-03T01:30:00Z",
            "--json",
        ])
        .output()
        .expect("runs");
    assert!(text(&o).contains("\"state\":\"sealed\""), "{}", text(&o));

    // Over a size limit the young one goes too; the rest must be kept,
    // which is said, with exit 1.
    let (o, r) = h.gc(&["--keep-days", "30", "--max-bytes", "1K"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(
        items(&r, "removed", "lane_execution"),
        [(id(&n2).as_str(), "over_budget")]
    );
    assert_eq!(r["over_budget"]["max_bytes"], 1024);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("must be kept"),
        "{}",
        text(&o)
    );
    assert_eq!(
        h.lanes(),
        [&n3, &s1, &s2].into_iter().map(id).collect(),
        "newest and unsealed survive any size limit"
    );

    // Text output names each item, its size and why; a bad size names the
    // flag.
    let o = h.exec(&["gc", "--dry-run"]).output().expect("runs");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains(&format!("kept lane execution {} (lane strict)", id(&s1)))
            && t.contains("not sealed yet"),
        "{t}"
    );
    let o = h.exec(&["gc", "--max-bytes", "2X"]).output().expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("--max-bytes") && text(&o).contains("K, M, G or T"),
        "{}",
        text(&o)
    );
    // Credentials are refused, as by the lane commands.
    let o = h
        .exec(&["gc", "--dry-run"])
        .env("GITHUB_TOKEN", "x")
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("GITHUB_TOKEN"), "{}", text(&o));
}

#[test]
fn gc_over_and_over_beside_a_lane_run_never_takes_what_it_uses() {
    let h = Host::new(MANIFEST, 6);
    h.due("nightly", "2026-12-01T01:01:00Z", true);
    let old = h.execution("nightly", "2026-12-01T01:00:00Z");
    // A lane run that takes a while, started in the background.
    let args = Host::due_args("nightly", "2026-12-02T01:01:00Z", true);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut lane = h.exec(&args).spawn().expect("lane run starts");
    // gc with nothing kept for its age, again and again until the lane
    // run is over.
    let mut runs = 0;
    let status = loop {
        let (o, r) = h.gc(&["--keep-days", "0"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(r.is_object(), "{}", text(&o));
        runs += 1;
        if let Some(s) = lane.try_wait().expect("wait") {
            break s;
        }
    };
    assert!(status.success(), "the lane run sealed: {status:?}");
    let (o, _) = h.gc(&["--keep-days", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(runs >= 2, "gc ran during the lane run ({runs})");
    let new = h.execution("nightly", "2026-12-02T01:00:00Z");
    assert_eq!(new["phase"], "sealed");
    // The older sealed one went; the new one and every benchmark it names
    // are whole: each child has its result.
    let id = new["id"].as_str().expect("id");
    assert_eq!(h.lanes(), [id.to_owned()].into());
    assert!(!h.lanes().contains(old["id"].as_str().expect("id")));
    let benches = named(&new);
    assert!(!benches.is_empty());
    assert_eq!(h.benchmarks(), benches);
    for b in &benches {
        let status = h.exec(&["bench", "status", b]).output().expect("runs");
        assert!(status.status.success(), "{}", text(&status));
        assert!(
            text(&status).contains("failed 0, incomplete 0, missing 0"),
            "{}",
            text(&status)
        );
    }
}

#[test]
fn a_gc_killed_half_way_is_finished_by_the_next() {
    let h = Host::new(MANIFEST, 2);
    h.due("nightly", "2026-12-01T01:01:00Z", true);
    h.due("nightly", "2026-12-02T01:01:00Z", true);
    let old = h.execution("nightly", "2026-12-01T01:00:00Z");
    let id = old["id"].as_str().expect("id");
    // What a gc killed after its first move leaves: the execution in the
    // trash, its benchmarks in place and named by nobody.
    let trash = h.root.join("state/.gc");
    std::fs::create_dir_all(&trash).expect("trash");
    std::fs::rename(
        h.root.join("state/lanes").join(id),
        trash.join(format!("lane-{id}-1-0")),
    )
    .expect("move");
    for b in named(&old) {
        age_tree(
            &h.root.join("state/benchmarks").join(b),
            SystemTime::now() - DAY * 40,
        );
    }
    let (o, r) = h.gc(&["--keep-days", "30"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(items(&r, "removed", "trash").len(), 1, "{r}");
    let orphans: BTreeSet<String> = items(&r, "removed", "benchmark")
        .into_iter()
        .map(|(d, why)| {
            assert_eq!(why, "unreferenced");
            d.to_owned()
        })
        .collect();
    assert_eq!(orphans, named(&old));
    assert!(trash.read_dir().expect("trash").next().is_none());
    let new = h.execution("nightly", "2026-12-02T01:00:00Z");
    assert_eq!(h.benchmarks(), named(&new));
}

#[test]
fn lane_due_run_applies_the_manifests_gc_policy_after_its_lanes() {
    let manifest = MANIFEST.replace(
        "suite = [\"bench.toml\"]\n",
        "suite = [\"bench.toml\"]\n\n[gc]\nkeep_days = 30\n",
    );
    let h = Host::new(&manifest, 2);
    h.due("nightly", "2026-12-01T01:01:00Z", true);
    let first = h.execution("nightly", "2026-12-01T01:00:00Z");
    let first_id = first["id"].as_str().expect("id").to_owned();
    h.age(&first_id, 40);
    let o = h.due("nightly", "2026-12-02T01:01:00Z", true);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("gc: removed"), "{err}");
    let second = h.execution("nightly", "2026-12-02T01:00:00Z");
    assert_eq!(second["phase"], "sealed");
    assert_eq!(
        h.lanes(),
        [second["id"].as_str().expect("id").to_owned()].into(),
        "the first run, 40 days old and no longer the newest, went"
    );
    // Without --run nothing is collected.
    let o = h
        .exec(&[
            "lane",
            "due",
            "--manifest",
            "schedule.toml",
            "--now",
            "2026-12-02T01:30:00Z",
        ])
        .output()
        .expect("runs");
    assert!(!text(&o).contains("gc:"), "{}", text(&o));
}
