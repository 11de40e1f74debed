//! `benchops-publish show`, `history` and `baseline show|set|reset` end to
//! end on a real local history built by the sweep's persist: records shown
//! by file and by digest prefix, each lookup error, the CSV and JSON
//! shapes, the SVG byte for byte against the status page's renderer, and a
//! baseline move that never forces the branch and leaves a receipt.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use benchops::LaneName;
use benchops::chart::{Chart, TrendPoint, trend_svg};
use benchops::manifest::BaselinePolicy;
use benchops::seal::SealedRecord;
use benchops_publish::history::{LocalHistory, ReceiptBuilder};
use benchops_publish::local::LocalPersist as _;
use benchops_testkit::records::{clean, drift};
use serde_json::Value;

use crate::binaries::{PUBLISH, ok};

/// Three nightly records (clean, drifting, clean) and one sentinel record,
/// persisted into DIR/history.git as a sweep does; the manifest beside it.
fn history(dir: &Path) -> Vec<SealedRecord> {
    let h = LocalHistory::open_or_init(dir.join("history.git")).expect("history");
    let records = vec![
        clean("nightly", "2026-11-28T01:00:00Z"),
        drift("nightly", "2026-11-29T01:00:00Z"),
        clean("nightly", "2026-11-30T01:00:00Z"),
        clean("sentinel", "2026-11-30T02:00:00Z"),
    ];
    // Pinned: the persist moves no pointer by itself.
    let policies: BTreeMap<LaneName, BaselinePolicy> = BTreeMap::new();
    let at = "2026-12-01T05:00:00Z";
    h.persist(&records, &ReceiptBuilder::local(at, at), &policies)
        .expect("persist");
    std::fs::write(
        dir.join("schedule.toml"),
        benchops_testkit::records::TWO_LANE_MANIFEST,
    )
    .expect("manifest");
    records
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(PUBLISH)
        .current_dir(dir)
        .env_remove("GITHUB_ACTOR")
        .args(args)
        .output()
        .expect("runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit 2 and the one error line.
fn refused(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    let e = stderr(o);
    assert!(e.starts_with("error: "), "{e}");
    e
}

fn tip(dir: &Path) -> String {
    let o = Command::new("git")
        .args([
            "-C",
            "history.git",
            "rev-parse",
            "refs/heads/benchmark-history",
        ])
        .current_dir(dir)
        .output()
        .expect("git");
    String::from_utf8_lossy(&o.stdout).trim().to_owned()
}

#[test]
fn show_prints_a_record_by_file_or_digest_prefix_and_its_canonical_json() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let records = history(dir);
    let d = &records[1];
    let prefix = &d.digest().hex()[..10];
    let text = ok(&run(dir, &["show", prefix, "--local", "."]));
    for want in [
        d.digest().to_string().as_str(),
        "lane      nightly",
        "2026-11-29T01:00:00Z",
        "parse/large",
        "wall_s",
        "0.3105 s",
        "drift parse/large wall_s: wall_s median rose",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    // The same record from a file gives the same text.
    let file = dir.join(d.file_name());
    std::fs::write(&file, d.bytes()).expect("file");
    let from_file = ok(&run(dir, &["show", file.to_str().expect("utf-8")]));
    assert_eq!(from_file, text);
    // --json: the sealed bytes themselves.
    let json = ok(&run(dir, &["show", prefix, "--local", ".", "--json"]));
    assert_eq!(json.trim_end().as_bytes(), d.bytes());
}

#[test]
fn show_refuses_unknown_ambiguous_and_short_digests_and_missing_history() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let records = history(dir);
    let unknown = refused(&run(dir, &["show", "0000000000", "--local", "."]));
    assert!(
        unknown.contains("RECORD 0000000000: no record in"),
        "{unknown}"
    );
    // A prefix every record starts with is ambiguous; find one shared by two.
    let hexes: Vec<String> = records.iter().map(|r| r.digest().hex()).collect();
    let mut shared = None;
    'outer: for n in (1..=3).rev() {
        for a in &hexes {
            if hexes.iter().filter(|b| b.starts_with(&a[..n])).count() > 1 {
                shared = Some(a[..n].to_owned());
                break 'outer;
            }
        }
    }
    let short = refused(&run(dir, &["show", "abc", "--local", "."]));
    assert!(short.contains("at least 4 hex digits"), "{short}");
    if let Some(p) = shared.filter(|p| p.len() >= 4) {
        let amb = refused(&run(dir, &["show", &p, "--local", "."]));
        assert!(amb.contains("give more digits"), "{amb}");
    }
    let none = refused(&run(dir, &["show", "abcd", "--local", "elsewhere"]));
    assert!(
        none.contains("--local elsewhere/history.git: no history repository there"),
        "{none}"
    );
    let not = refused(&run(dir, &["show", "no-such-file.json"]));
    assert!(not.contains("no such file, and not a digest"), "{not}");
}

#[test]
fn an_ambiguous_prefix_is_refused_with_its_candidates() {
    // Enough records that two digests share their first 4 hex digits is
    // not guaranteed; the lookup itself is tested on made-up entries.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    history(dir);
    let h = LocalHistory::open(dir.join("history.git")).expect("open");
    let mut entries = h.list_records(None).expect("list");
    let mut twin = entries[0].clone();
    let mut hex = twin.digest.hex();
    hex.replace_range(
        60..,
        if hex.ends_with("0000") {
            "1111"
        } else {
            "0000"
        },
    );
    twin.digest = benchops::Sha256Digest::from_hex(&hex).expect("hex");
    twin.path.push('x');
    entries.push(twin);
    let prefix = &entries[0].digest.hex()[..8];
    let e = benchops_publish::commands::find_record(&entries, prefix, "RECORD", Path::new("h"))
        .expect_err("ambiguous");
    let msg = e.to_string();
    assert!(msg.contains("2 records' digests start with it"), "{msg}");
    assert!(msg.contains("give more digits"), "{msg}");
}

#[test]
fn history_exports_csv_json_and_the_status_page_svg() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    history(dir);
    let args = [
        "history",
        "--local",
        ".",
        "--lane",
        "nightly",
        "--case",
        "parse/large",
        "--metric",
        "wall_s",
    ];
    let table = ok(&run(dir, &args));
    assert!(table.contains("lane nightly: 3 record(s)"), "{table}");
    assert!(
        table.contains("parse/large wall_s (lower is better)"),
        "{table}"
    );

    let mut csv_args = args.to_vec();
    csv_args.push("--csv");
    let csv = ok(&run(dir, &csv_args));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "lane,case,metric,unit,slot,commit,record,value");
    assert_eq!(lines.len(), 4, "{csv}");
    assert!(lines[1].starts_with("nightly,parse/large,wall_s,s,2026-11-28T01:00:00Z,"));
    assert!(lines[2].ends_with(",0.3105"), "{csv}");

    let mut json_args = args.to_vec();
    json_args.push("--json");
    let json: Value = serde_json::from_str(&ok(&run(dir, &json_args))).expect("json");
    assert_eq!(json["lane"], "nightly");
    assert_eq!(json["records"], 3);
    let series = json["series"].as_array().expect("series");
    assert_eq!(series.len(), 1);
    let s = &series[0];
    assert_eq!(
        (s["case"].as_str(), s["metric"].as_str()),
        (Some("parse/large"), Some("wall_s"))
    );
    assert_eq!(s["unit"], "s");
    let points = s["points"].as_array().expect("points");
    assert_eq!(points.len(), 3);
    assert_eq!(points[1]["value"], 0.3105);
    for key in ["slot", "commit", "record", "value"] {
        assert!(points[0].get(key).is_some(), "point lacks {key}");
    }

    // --svg: the very bytes the status page's renderer draws.
    let mut svg_args = args.to_vec();
    svg_args.extend(["--svg", "wall.svg"]);
    ok(&run(dir, &svg_args));
    let written = std::fs::read_to_string(dir.join("wall.svg")).expect("svg written");
    let tp: Vec<TrendPoint> = points
        .iter()
        .map(|p| TrendPoint {
            slot: p["slot"].as_str().expect("slot").to_owned(),
            value: p["value"].as_f64(),
        })
        .collect();
    let expected = trend_svg(&Chart {
        lane: "nightly",
        case: "parse/large",
        metric: "wall_s",
        unit: "s",
        baseline: s["baseline"].as_f64(),
        points: &tp,
    });
    assert_eq!(written, format!("{expected}\n"));
    assert!(written.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));

    // More than one series cannot be one chart; unknown keys are named.
    let many = refused(&run(
        dir,
        &[
            "history", "--local", ".", "--lane", "nightly", "--svg", "x.svg",
        ],
    ));
    assert!(many.contains("--svg draws one series"), "{many}");
    let case = refused(&run(
        dir,
        &[
            "history", "--local", ".", "--lane", "nightly", "--case", "nope",
        ],
    ));
    assert!(
        case.contains("--case nope: not measured in lane nightly"),
        "{case}"
    );
    let lane = refused(&run(dir, &["history", "--local", ".", "--lane", "weekly"]));
    assert!(
        lane.contains("--lane weekly: no record of this lane"),
        "{lane}"
    );
}

#[test]
fn baseline_set_fast_forwards_the_branch_and_writes_a_receipt() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let records = history(dir);
    let before = tip(dir);
    let target = &records[2];
    let prefix = &target.digest().hex()[..12];
    let base = [
        "baseline",
        "set",
        "--local",
        ".",
        "--lane",
        "nightly",
        "--manifest",
        "schedule.toml",
    ];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        run(dir, &a)
    };
    // Refusals first: nothing moves.
    let e = refused(&with(&["--record", prefix]));
    assert!(e.contains("--reason is required"), "{e}");
    let e = refused(&with(&[
        "--record", "00000000", "--reason", "r", "--actor", "a",
    ]));
    assert!(e.contains("--record 00000000: no record in"), "{e}");
    let other = &records[3].digest().hex()[..12];
    let e = refused(&with(&["--record", other, "--reason", "r", "--actor", "a"]));
    assert!(
        e.contains("is a record of lane sentinel, not of --lane nightly"),
        "{e}"
    );
    assert_eq!(tip(dir), before, "a refusal writes nothing");

    let out = ok(&with(&[
        "--record",
        prefix,
        "--reason",
        "drift #12 accepted",
        "--actor",
        "octocat",
    ]));
    assert!(out.contains("baseline moved from none to"), "{out}");
    let after = tip(dir);
    assert_ne!(after, before);
    // Never forced: the old tip is an ancestor of the new one.
    let anc = Command::new("git")
        .args([
            "-C",
            "history.git",
            "merge-base",
            "--is-ancestor",
            &before,
            &after,
        ])
        .current_dir(dir)
        .status()
        .expect("git");
    assert!(anc.success(), "the branch was not fast-forwarded");

    // The pointer, and the receipt with who and why.
    let h = LocalHistory::open(dir.join("history.git")).expect("open");
    let lane = LaneName::new("nightly").expect("lane");
    let p = h.baseline(&lane).expect("read").expect("a pointer");
    assert_eq!(p.record, target.digest());
    assert_eq!(p.previous, None);
    let idx = h.tip_index().expect("tip");
    let receipts: Vec<&String> = idx
        .files
        .keys()
        .filter(|k| k.starts_with("receipts/"))
        .collect();
    let mut found = false;
    for path in receipts {
        let blob = &idx.files[path];
        let bytes = h.read_blobs(&[blob.as_str()]).expect("blob").remove(0);
        let r: Value = serde_json::from_slice(&bytes).expect("receipt");
        if r["sweep"]["trigger"] == "baseline" {
            let c = &r["baseline_changes"][0];
            assert_eq!(c["decision"]["by"], "octocat");
            assert_eq!(c["decision"]["reason"], "drift #12 accepted");
            assert_eq!(c["to"], target.digest().to_string());
            assert_eq!(r["history"]["parent"], before.as_str());
            found = true;
        }
    }
    assert!(found, "the move's receipt is on the branch");

    // Again: nothing to do. Then reset moves to the newest fit record,
    // naming the previous one.
    let again = ok(&with(&[
        "--record", prefix, "--reason", "again", "--actor", "a",
    ]));
    assert!(again.contains("already points at"), "{again}");
    assert_eq!(tip(dir), after);
    let shown = ok(&run(
        dir,
        &[
            "baseline", "show", "--local", ".", "--lane", "nightly", "--json",
        ],
    ));
    let v: Value = serde_json::from_str(&shown).expect("json");
    assert_eq!(v["record"], target.digest().to_string());
}

#[test]
fn baseline_reset_picks_the_newest_fit_record_and_names_the_previous() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let records = history(dir);
    let set = |args: &[&str]| {
        let mut a = vec![
            "baseline",
            "--local",
            ".",
            "--lane",
            "nightly",
            "--manifest",
            "schedule.toml",
            "--actor",
            "octocat",
        ];
        a.splice(1..1, args.iter().copied());
        run(dir, &a)
    };
    let first = records[0].digest().hex();
    ok(&set(&["set", "--record", &first[..8], "--reason", "first"]));
    let e = refused(&set(&["reset"]));
    assert!(e.contains("--reason is required"), "{e}");
    ok(&set(&["reset", "--reason", "accepted"]));
    let h = LocalHistory::open(dir.join("history.git")).expect("open");
    let p = h
        .baseline(&LaneName::new("nightly").expect("lane"))
        .expect("read")
        .expect("pointer");
    assert_eq!(p.record, records[2].digest(), "the newest clean record");
    assert_eq!(p.previous, Some(records[0].digest()));
    // A lane the manifest does not declare is refused.
    let e = refused(&run(
        dir,
        &[
            "baseline",
            "reset",
            "--local",
            ".",
            "--lane",
            "weekly",
            "--manifest",
            "schedule.toml",
            "--reason",
            "r",
            "--actor",
            "a",
        ],
    ));
    assert!(e.contains("--lane weekly: not a lane of --manifest"), "{e}");
}
