//! `benchops-publish watchdog` end to end on a real local history: the
//! classes of a lane's slots, a lane that never ran, the JSON report
//! against its schema, markdown, annotations and exit codes.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use benchops::LaneName;
use benchops::manifest::BaselinePolicy;
use benchops_publish::history::{LocalHistory, ReceiptBuilder};
use benchops_publish::local::LocalPersist as _;
use benchops_testkit::records::{draft, seal, with_lane_slot};
use serde_json::{Value, json};

const MANIFEST: &str = r#"
schema = "schedule-manifest/v1"

[[lanes]]
name = "nightly"
cron = "0 1 * * *"
timezone = "UTC"
completion_window_minutes = 180
cases = ["*"]
baseline = "last-clean"

[[lanes]]
name = "weekly"
cron = "0 3 * * 1"
timezone = "Asia/Jerusalem"
completion_window_minutes = 60
cases = ["*"]
baseline = "last-clean"
"#;

fn record(lane: &str, slot: &str, finished: &str) -> benchops::seal::SealedRecord {
    let mut v = with_lane_slot(draft(), lane, slot);
    v["finished_at"] = json!(finished);
    seal(&v)
}

fn history(dir: &Path) {
    let h = LocalHistory::open_or_init(dir.join("history.git")).expect("history");
    let records = [
        // Before the lookback: the lane has run for a while.
        record("nightly", "2026-11-20T01:00:00Z", "2026-11-20T02:00:00Z"),
        record("nightly", "2026-11-28T01:00:00Z", "2026-11-28T02:00:00Z"),
        // 29th: missed. 30th: recorded after the window.
        record("nightly", "2026-11-30T01:00:00Z", "2026-11-30T05:30:00Z"),
        record("nightly", "2026-12-01T01:00:00Z", "2026-12-01T03:59:00Z"),
    ];
    let policies: BTreeMap<LaneName, BaselinePolicy> = BTreeMap::from([(
        LaneName::new("nightly").expect("lane"),
        BaselinePolicy::LastClean,
    )]);
    let at = "2026-12-01T05:00:00Z";
    h.persist(&records, &ReceiptBuilder::local(at, at), &policies)
        .expect("persist");
}

fn run(dir: &Path, args: &[&str]) -> Output {
    let manifest = dir.join("schedule.toml");
    std::fs::write(&manifest, MANIFEST).expect("manifest");
    Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
        .arg("watchdog")
        .arg("--local")
        .arg(dir)
        .arg("--manifest")
        .arg(&manifest)
        .args(args)
        .output()
        .expect("runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn the_json_report_classifies_every_slot_and_follows_its_schema() {
    let tmp = tempfile::tempdir().expect("tempdir");
    history(tmp.path());
    // Now: 2 Dec 02:00Z. The 2 Dec slot's window is still open.
    let out = run(
        tmp.path(),
        &[
            "--now",
            "2026-12-02T02:00:00Z",
            "--lookback-hours",
            "96",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../schemas/watchdog-report.v1.schema.json"),
        )
        .expect("schema"),
    )
    .expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&report)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");

    let nightly = &report["lanes"][0];
    let classes: Vec<(&str, &str)> = nightly["slots"]
        .as_array()
        .expect("slots")
        .iter()
        .map(|s| {
            (
                s["slot"].as_str().expect("slot"),
                s["class"].as_str().expect("class"),
            )
        })
        .collect();
    assert_eq!(
        classes,
        vec![
            ("2026-11-29T01:00:00Z", "missed"),
            ("2026-11-30T01:00:00Z", "late"),
            ("2026-12-01T01:00:00Z", "on_time"),
            ("2026-12-02T01:00:00Z", "pending"),
        ]
    );
    assert_eq!(nightly["last_on_time"], "2026-12-01T01:00:00Z");
    assert_eq!(nightly["consecutive_missed"], 0);
    // Only the records inside the lookback were read.
    assert_eq!(report["records_read"], 2);
    // The weekly lane never ran: its one Monday slot in the lookback
    // (30 Nov, 03:00 in Jerusalem = 01:00Z) is missed.
    let weekly = &report["lanes"][1];
    assert_eq!(weekly["counts"]["missed"], 1, "{weekly}");
    assert_eq!(weekly["slots"][0]["slot"], "2026-11-30T01:00:00Z");
}

#[test]
fn markdown_and_annotations_and_a_quiet_exit_when_all_is_well() {
    let tmp = tempfile::tempdir().expect("tempdir");
    history(tmp.path());
    let md = run(
        tmp.path(),
        &[
            "--now",
            "2026-12-02T02:00:00Z",
            "--lookback-hours",
            "96",
            "--markdown",
        ],
    );
    let md_text = text(&md.stdout);
    assert!(
        md_text.contains("| lane | on time | late | missed |"),
        "{md_text}"
    );
    assert!(
        md_text.contains("| nightly | 1 | 1 | 1 | 0 | 1 | 0 | 2026-12-01T01:00:00Z |"),
        "{md_text}"
    );
    let ann = run(
        tmp.path(),
        &[
            "--now",
            "2026-12-02T02:00:00Z",
            "--lookback-hours",
            "96",
            "--annotations",
        ],
    );
    let ann_text = text(&ann.stdout);
    assert!(
        ann_text
            .contains("::error title=benchops watchdog%3A nightly::1 missed and 0 failed slot(s)"),
        "{ann_text}"
    );
    // A lookback that holds only the on-time and the pending slot: exit 0.
    let ok = run(
        tmp.path(),
        &[
            "--now",
            "2026-12-02T02:00:00Z",
            "--lookback-hours",
            "30",
            "--annotations",
        ],
    );
    let ok_text = text(&ok.stdout);
    // The weekly lane has no slot in 30 hours; nightly is on time.
    assert_eq!(ok.status.code(), Some(0), "{ok_text}");
    assert!(!ok_text.contains("::error"), "{ok_text}");
}

#[test]
fn no_history_and_a_bad_now_are_usage_errors() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = run(tmp.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no history repository here"),
        "{}",
        text(&out.stderr)
    );
    history(tmp.path());
    let out = run(tmp.path(), &["--now", "yesterday"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--now"), "{}", text(&out.stderr));
}

#[test]
fn a_fetched_history_branch_in_a_plain_clone_is_read_with_history() {
    let tmp = tempfile::tempdir().expect("tempdir");
    history(tmp.path());
    // As a workflow does with its read-only token.
    let clone = tmp.path().join("fetched");
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).output().expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    };
    git(&["init", "-q", clone.to_str().expect("utf-8")]);
    let source = tmp.path().join("history.git");
    git(&[
        "-C",
        clone.to_str().expect("utf-8"),
        "fetch",
        "-q",
        "--depth=1",
        source.to_str().expect("utf-8"),
        "benchmark-history:benchmark-history",
    ]);
    let manifest = tmp.path().join("schedule.toml");
    std::fs::write(&manifest, MANIFEST).expect("manifest");
    let out = Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
        .args(["watchdog", "--history"])
        .arg(&clone)
        .arg("--manifest")
        .arg(&manifest)
        .args([
            "--now",
            "2026-12-02T02:00:00Z",
            "--lookback-hours",
            "30",
            "--json",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["lanes"][0]["counts"]["on_time"], 1, "{report}");
    assert_eq!(report["records_read"], 1);
}

#[test]
fn check_manifest_names_every_problem_and_its_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let good = tmp.path().join("good.toml");
    std::fs::write(&good, MANIFEST).expect("write");
    let zone = tmp.path().join("zone.toml");
    std::fs::write(&zone, MANIFEST.replace("Asia/Jerusalem", "Mars/Olympus")).expect("write");
    let cron = tmp.path().join("cron.toml");
    std::fs::write(&cron, MANIFEST.replace("0 1 * * *", "0 25 * * *")).expect("write");
    let schema = tmp.path().join("schema.toml");
    std::fs::write(&schema, "schema = 3\n").expect("write");
    let run = |paths: &[&Path]| {
        Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
            .arg("check-manifest")
            .args(paths)
            .output()
            .expect("runs")
    };
    let ok = run(&[&good]);
    assert_eq!(ok.status.code(), Some(0));
    assert!(text(&ok.stdout).contains("valid, 2 lane(s)"));
    let bad = run(&[&good, &zone, &cron, &schema]);
    assert_eq!(bad.status.code(), Some(1));
    let out = text(&bad.stdout);
    assert!(
        out.contains("zone.toml: $.lanes[1].timezone: lane `weekly`: time zone \"Mars/Olympus\""),
        "{out}"
    );
    assert!(
        out.contains("cron.toml: $.lanes[0].cron: lane `nightly`: cron \"0 25 * * *\"")
            && out.contains("the hour field `25` holds 25, outside 0–23"),
        "{out}"
    );
    // A TOML syntax error keeps the parser's diagram, a line each.
    let syntax = tmp.path().join("syntax.toml");
    std::fs::write(&syntax, "schema = \"schedule-manifest/v1\"\nlanes = [\n").expect("write");
    let shown = text(&run(&[&syntax]).stdout);
    assert!(
        shown.contains("syntax.toml: invalid: not valid TOML:\n"),
        "{shown}"
    );
    assert!(shown.lines().count() >= 3 && shown.contains('^'), "{shown}");
    assert!(out.contains("schema.toml: invalid:"), "{out}");
    // Several problems of one file: one line each, never a literal `\n`.
    let two = tmp.path().join("two.toml");
    std::fs::write(
        &two,
        MANIFEST
            .replace(
                "completion_window_minutes = 60",
                "completion_window_minutes = 0",
            )
            .replace("baseline = \"last-clean\"", "baseline = \"sometimes\""),
    )
    .expect("write");
    let o = run(&[&two]);
    let shown = text(&o.stdout);
    assert!(!shown.contains("\\n"), "{shown}");
    assert!(
        shown
            .lines()
            .filter(|l| l.starts_with(&two.display().to_string()))
            .count()
            >= 2,
        "{shown}"
    );
    let missing = run(&[&tmp.path().join("absent.toml")]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("absent.toml"));
}

#[test]
fn check_manifest_names_a_compared_metric_the_suite_cannot_report() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let manifest = |metrics: &str| {
        format!(
            "schema = \"schedule-manifest/v2\"\nrepository = \"example/widgets\"\nsuite = [\"bench.toml\"]\n\n\
             [[lanes]]\nname = \"nightly\"\ncron = \"0 1 * * *\"\ntimezone = \"UTC\"\n\
             completion_window_minutes = 120\ncases = [\"*\"]\nbaseline = \"last-clean\"\n\
             [lanes.comparison]\nmetrics = {metrics}\n"
        )
    };
    let intent = |json_lines: bool| {
        format!(
            "schema = \"benchmark-intent/v1\"\nname = \"w\"\ncommand = [\"true\"]\nrepetitions = 3\n\
             [metrics]\njson_lines = {json_lines}\n"
        )
    };
    let run = |path: &Path| {
        Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
            .arg("check-manifest")
            .arg(path)
            .output()
            .expect("runs")
    };
    let path = tmp.path().join("schedule.toml");
    std::fs::write(tmp.path().join("bench.toml"), intent(false)).expect("intent");

    // Without json_lines the intent reports the built-in metrics only.
    std::fs::write(&path, manifest("[\"tt\", \"wall_s\"]")).expect("manifest");
    let out = run(&path);
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains(
            "lane nightly: [lanes.comparison] names `tt` that no intent of the suite reports"
        ) && shown.contains("wall_s, user_s, sys_s, max_rss_bytes")
            && !shown.contains("valid"),
        "{shown}"
    );
    std::fs::write(&path, manifest("[\"wall_s\"]")).expect("manifest");
    assert_eq!(run(&path).status.code(), Some(0));

    // With json_lines the names are only known from a run: `lane run`
    // checks them then.
    std::fs::write(tmp.path().join("bench.toml"), intent(true)).expect("intent");
    std::fs::write(&path, manifest("[\"tt\"]")).expect("manifest");
    assert_eq!(run(&path).status.code(), Some(0));
}
