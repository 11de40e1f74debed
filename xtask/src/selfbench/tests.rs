//! Tests of `cargo xtask selfbench`'s pure parts: the command line, the
//! next slot, the slots of history paths and of `lane list`, the directory
//! rules, the record check and the figures table (on a real sealed lane
//! record of the `selfbench` lane, `xtask/tests/selfbench-record.json`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::*;

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

fn err(r: Result<impl std::fmt::Debug>) -> String {
    format!("{:#}", r.expect_err("an error"))
}

#[test]
fn parse_args_reads_every_flag() {
    assert_eq!(parse_args(&[]).expect("no arguments"), Options::default());
    let o = parse_args(&args(&[
        "--quick",
        "--fresh",
        "--debug",
        "--fail-on-drift",
        "--help",
    ]))
    .expect("flags");
    assert_eq!(
        o,
        Options {
            quick: true,
            fresh: true,
            debug: true,
            fail_on_drift: true,
            dir: None,
            help: true,
        }
    );
    assert!(parse_args(&args(&["-h"])).expect("-h").help);
}

#[test]
fn parse_args_reads_the_dir_in_both_forms() {
    let o = parse_args(&args(&["--dir", "some/dir", "--quick"])).expect("--dir VALUE");
    assert_eq!(o.dir, Some(PathBuf::from("some/dir")));
    assert!(o.quick);
    let o = parse_args(&args(&["--dir=other dir"])).expect("--dir=VALUE");
    assert_eq!(o.dir, Some(PathBuf::from("other dir")));
}

#[test]
fn parse_args_refuses_a_missing_value_and_unknown_arguments() {
    for bad in [&["--dir"][..], &["--quick", "--dir="]] {
        let e = err(parse_args(&args(bad)));
        assert!(e.starts_with("--dir needs a value\n"), "{bad:?}: {e}");
        assert!(e.contains(USAGE), "{e}");
    }
    for bad in ["--slow", "quick", "--dir2=x", "-q"] {
        let e = err(parse_args(&args(&["--quick", bad])));
        assert!(
            e.starts_with(&format!("unknown argument {bad:?}\n")),
            "{bad}: {e}"
        );
        assert!(e.ends_with(USAGE), "{e}");
    }
}

fn ts(s: &str) -> jiff::Timestamp {
    s.parse().expect("a timestamp")
}

#[test]
fn next_slot_is_now_when_every_known_slot_is_earlier() {
    let now = ts("2026-12-05T19:18:43.75Z");
    assert_eq!(next_slot(now, &[]).expect("slot"), "2026-12-05T19:18:43Z");
    let known = [ts("2026-12-05T19:18:27Z"), ts("2026-12-04T03:00:00Z")];
    assert_eq!(
        next_slot(now, &known).expect("slot"),
        "2026-12-05T19:18:43Z"
    );
}

#[test]
fn next_slot_follows_a_known_slot_at_or_after_now() {
    let now = ts("2026-12-05T19:18:43.25Z");
    // The same second: a second run within one second of the last.
    let known = [ts("2026-12-05T19:18:27Z"), ts("2026-12-05T19:18:43Z")];
    assert_eq!(
        next_slot(now, &known).expect("slot"),
        "2026-12-05T19:18:44Z"
    );
    // A slot in the future (a clock set back): one second after the latest.
    let known = [
        ts("2026-12-05T20:00:00Z"),
        ts("2026-12-05T19:18:50Z"),
        ts("2026-12-01T00:00:00Z"),
    ];
    assert_eq!(
        next_slot(now, &known).expect("slot"),
        "2026-12-05T20:00:01Z"
    );
}

#[test]
fn history_slots_reads_record_paths_only() {
    let hex = "b41209784773f8a6b56864e20644c4ca487310acd65036b2158c4e9687eca24f";
    let listing = format!(
        "results/selfbench/2026/12/20261205T191843Z--{hex}.json\n\
         results/selfbench/2026/11/20261130T030000Z--{hex}.json\n\
         results/selfbench/2026/12/20261205T191843Z--{hex}.json.sig\n\
         results/selfbench/2026/12/20261205T191843Z.json\n\
         results/selfbench/2026/12/20261205T191843Z--.json\n\
         results/selfbench/2026/12/20261205T191843Z--not-hex.json\n\
         results/selfbench/2026/12/2026-12-05T19:18:43Z--{hex}.json\n\
         results/selfbench/README.md\n\
         \n"
    );
    assert_eq!(
        history_slots(&listing),
        [ts("2026-12-05T19:18:43Z"), ts("2026-11-30T03:00:00Z")]
    );
    assert!(history_slots("").is_empty());
}

#[test]
fn parse_lane_list_keeps_the_lanes_executions() {
    // As `benchops-exec lane list` prints them: id prefix, phase (padded),
    // lane, slot, commit.
    let out = "\
e35e41f4b535c66e  sealed      selfbench  slot 2026-12-05T19:18:43Z  57f2c7f1b463
0a1b2c3d4e5f6071  measuring   selfbench-quick  slot 2026-12-05T21:42:25Z  e41a80b15148
fae997f5741bd9b2  confirming  selfbench  slot 2026-12-05T19:18:27Z  57f2c7f1b463

note: something else
";
    let row =
        |id: &str, phase: &str, slot: &str| (id.to_owned(), phase.to_owned(), slot.to_owned());
    assert_eq!(
        parse_lane_list(out, "selfbench"),
        [
            row("e35e41f4b535c66e", "sealed", "2026-12-05T19:18:43Z"),
            row("fae997f5741bd9b2", "confirming", "2026-12-05T19:18:27Z"),
        ]
    );
    assert_eq!(
        parse_lane_list(out, "selfbench-quick"),
        [row("0a1b2c3d4e5f6071", "measuring", "2026-12-05T21:42:25Z")]
    );
    assert!(parse_lane_list(out, "other").is_empty());
    assert!(parse_lane_list("", "selfbench").is_empty());
}

/// A directory of its own under the system's temporary directory, absent.
fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "xtask-selfbench-test-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn marker(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(MARKER)).expect("the marker")
}

#[test]
fn prepare_dir_makes_a_new_or_empty_dir_and_keeps_its_own() {
    let d = temp("new");
    prepare_dir(&d, false, "selfbench", "release").expect("a new dir");
    assert_eq!(marker(&d), "lane=selfbench\nprofile=release\n");
    // Kept: the same lane and profile, its files untouched.
    std::fs::write(d.join("issues.json"), "{}").expect("write");
    prepare_dir(&d, false, "selfbench", "release").expect("the same dir again");
    assert!(d.join("issues.json").exists());
    std::fs::remove_dir_all(&d).expect("clean up");

    let d = temp("empty");
    std::fs::create_dir_all(&d).expect("mkdir");
    prepare_dir(&d, false, "selfbench-quick", "debug").expect("an empty dir");
    assert_eq!(marker(&d), "lane=selfbench-quick\nprofile=debug\n");
    std::fs::remove_dir_all(&d).expect("clean up");
}

#[test]
fn prepare_dir_leaves_a_dir_it_did_not_make_alone() {
    let d = temp("foreign");
    std::fs::create_dir_all(&d).expect("mkdir");
    std::fs::write(d.join("notes.txt"), "mine").expect("write");
    for fresh in [false, true] {
        let e = err(prepare_dir(&d, fresh, "selfbench", "release"));
        assert!(e.contains(&d.display().to_string()), "{e}");
        assert!(
            e.contains("was not made by cargo xtask selfbench (no selfbench.txt)"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("notes.txt")).expect("kept"),
            "mine"
        );
        assert!(!d.join(MARKER).exists());
    }
    std::fs::remove_dir_all(&d).expect("clean up");
}

#[test]
fn prepare_dir_refuses_another_lane_or_profile_unless_fresh() {
    let d = temp("other");
    prepare_dir(&d, false, "selfbench", "debug").expect("a new dir");
    std::fs::write(d.join("issues.json"), "{}").expect("write");
    let e = err(prepare_dir(&d, false, "selfbench", "release"));
    assert!(
        e.contains("holds another selfbench (lane=selfbench, profile=debug)"),
        "{e}"
    );
    let e = err(prepare_dir(&d, false, "selfbench-quick", "debug"));
    assert!(
        e.contains("not lane selfbench-quick with debug binaries"),
        "{e}"
    );
    assert!(d.join("issues.json").exists());
    // --fresh removes a dir it made, whatever it holds, and starts over.
    prepare_dir(&d, true, "selfbench", "release").expect("fresh");
    assert_eq!(marker(&d), "lane=selfbench\nprofile=release\n");
    assert!(!d.join("issues.json").exists());
    std::fs::remove_dir_all(&d).expect("clean up");
}

/// A real sealed `benchmark-result/v2` record of the `selfbench` lane: four
/// passing cases compared with a baseline, every key inconclusive.
fn record() -> Value {
    serde_json::from_str(include_str!("../../tests/selfbench-record.json")).expect("JSON")
}

/// The fields of the table row of `case`.
fn row(table: &str, case: &str) -> Vec<String> {
    table
        .lines()
        .find(|l| l.starts_with(&format!("{case} ")))
        .unwrap_or_else(|| panic!("no row for {case} in\n{table}"))
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[test]
fn render_figures_shows_each_case_against_its_baseline() {
    let t = render_figures(&record(), "hot_wall_s");
    let mut lines = t.lines();
    assert_eq!(
        lines.next(),
        Some(
            "selfbench figures: lane selfbench, slot 2026-12-05T19:18:43Z, subject \
             benchops/benchops@57f2c7f1b463, compared with the baseline 32c17821e48a \
             (slot 2026-12-05T19:18:27Z)"
        )
    );
    let header: Vec<&str> = lines.next().expect("header").split_whitespace().collect();
    assert_eq!(
        header,
        [
            "CASE",
            "OUTCOME",
            "hot_wall_s",
            "ms",
            "95%",
            "CI",
            "N",
            "INPUT",
            "BASE",
            "ms",
            "EFFECT",
            "INTERVAL",
            "VERDICT"
        ]
    );
    assert_eq!(
        row(&t, "selfbench/op=verify"),
        [
            "selfbench/op=verify",
            "pass",
            "28.38",
            "[28.26,",
            "33.69]",
            "10",
            "240/4.5MB",
            "28.64",
            "+0.7%",
            "[-7.7%,",
            "+8.6%]",
            "inconclusive"
        ]
    );
    assert_eq!(
        row(&t, "selfbench/op=plan")[..8],
        [
            "selfbench/op=plan",
            "pass",
            "72.89",
            "[65.44,",
            "115.79]",
            "10",
            "110000/1.4kB",
            "73.25"
        ]
    );
    assert_eq!(row(&t, "selfbench/op=sweep")[8], "-16.3%");
    assert!(t.contains(
        "why:\n  selfbench/op=verify: effect +0.7%, interval [-7.7%, +8.6%] crosses the edge of the band ±5.2%\n"
    ));
    assert!(
        t.ends_with("drift reports: 0, baseline proposal: yes\n"),
        "{t}"
    );
}

#[test]
fn render_figures_uses_the_pooled_figures_of_a_confirmed_key() {
    let mut r = record();
    let keys = r
        .pointer_mut("/comparison/keys")
        .and_then(Value::as_array_mut)
        .expect("keys");
    let sweep = keys
        .iter_mut()
        .find(|k| k["case"] == "selfbench/op=sweep")
        .expect("the sweep key");
    sweep["confirmation"] = json!({
        "alone": {"estimate": 0.40, "high": 0.45, "level": 0.95, "low": 0.35},
        "pooled": {"estimate": 0.30, "high": 0.35, "level": 0.99, "low": 0.25},
    });
    sweep["verdict"] = json!("confirmed_regression");
    sweep["reason"] = json!("confirmed: pooled effect +30.0% [+25.0%, +35.0%] at 99%");
    let case = r
        .get_mut("cases")
        .and_then(Value::as_array_mut)
        .and_then(|c| c.iter_mut().find(|c| c["id"] == "selfbench/op=sweep"))
        .expect("the sweep case");
    case["outcome"] = json!("drift");
    r["publication"]["drift_reports"] =
        json!([{"case": "selfbench/op=sweep", "metric": "hot_wall_s", "summary": "+30%"}]);
    r["publication"]["baseline_proposal"] = Value::Null;

    let t = render_figures(&r, "hot_wall_s");
    let sweep = row(&t, "selfbench/op=sweep");
    assert_eq!(sweep[1], "drift");
    assert_eq!(
        sweep[8..],
        ["+30.0%", "[+25.0%,", "+35.0%]", "confirmed_regression"]
    );
    // The other keys keep their initial figures.
    assert_eq!(row(&t, "selfbench/op=verify")[8], "+0.7%");
    assert!(t.contains("  selfbench/op=sweep: confirmed: pooled effect +30.0%"));
    assert!(
        t.ends_with("drift reports: 1, baseline proposal: no\n"),
        "{t}"
    );
    assert_eq!(drift_reports(&r), 1);
}

#[test]
fn render_figures_without_a_baseline_or_a_metric() {
    let mut r = record();
    r["baseline"] = Value::Null;
    r["comparison"]["keys"] = json!([]);
    let t = render_figures(&r, "hot_wall_s");
    assert!(
        t.lines().next().expect("title").ends_with(", no baseline"),
        "{t}"
    );
    let verify = row(&t, "selfbench/op=verify");
    assert_eq!(verify[7..], ["-", "-", "-", "no", "baseline"]);
    assert!(!t.contains("why:"), "{t}");
    // A metric the record does not have: every figure of it is "-".
    let t = render_figures(&record(), "no_such_s");
    assert_eq!(
        row(&t, "selfbench/op=analyze")[..6],
        ["selfbench/op=analyze", "pass", "-", "-", "-", "200/382.1kB"]
    );
}

fn ctx(dir: &Path) -> Ctx {
    Ctx {
        root: dir.to_path_buf(),
        dir: dir.to_path_buf(),
        exec: dir.join("benchops-exec"),
        publish: dir.join("benchops-publish"),
        manifest: dir.join("schedule.toml"),
        lane: "selfbench",
        scratch: dir.join("scratch"),
    }
}

#[test]
fn check_record_fails_on_cases_that_did_not_measure() {
    let c = ctx(Path::new("state-dir"));
    check_record(&record(), &c).expect("four passing cases");
    let mut r = record();
    let cases = r
        .get_mut("cases")
        .and_then(Value::as_array_mut)
        .expect("cases");
    cases[1]["outcome"] = json!("error");
    cases[1]["error"] = json!("10 of 10 runs failed");
    cases[3]["outcome"] = json!("skipped");
    cases[3]["skip_reason"] = json!("not covered");
    let e = err(check_record(&r, &c));
    assert!(e.starts_with("2 case(s) did not measure:\n"), "{e}");
    assert!(
        e.contains("  selfbench/op=plan: error: \"10 of 10 runs failed\"\n"),
        "{e}"
    );
    assert!(
        e.contains("  selfbench/op=sweep: skipped: \"not covered\"\n"),
        "{e}"
    );
    assert!(
        e.contains("benchops-exec --state state-dir bench status"),
        "{e}"
    );
}

#[test]
fn compared_metric_reads_both_lanes_of_the_committed_manifests() {
    let root = workspace_root().expect("root");
    for f in [FULL, QUICK] {
        let manifest = root.join(f.manifest);
        assert_eq!(
            compared_metric(&manifest, f.lane).expect("the lane's metric"),
            "hot_wall_s"
        );
        let e = err(compared_metric(&manifest, "nightly"));
        assert!(e.ends_with(&format!("{} has no lane nightly", manifest.display())));
    }
}
