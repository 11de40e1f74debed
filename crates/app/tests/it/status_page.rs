//! The status page over a real `benchmark-history` branch: sealed records of
//! two lanes and their baseline pointers written with the history crate
//! into a git repository in a temporary directory, then `collect` and
//! `render_html`.
//!
//! The history: `nightly` (covers every case) has a clean record that
//! becomes its baseline (`parse/large` at 0.25 s), then drift at 0.30 s, a
//! record where `parse/large` was skipped (a gap), and drift at 0.31 s and
//! 0.3105 s; `sentinel` (covers `parse/large`) drifts twice. So
//! `parse/large · wall_s` is open and both lanes still reproduce it.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use benchops::LaneName;
use benchops::manifest::{BaselinePolicy, Manifest};
use benchops::reconcile::{DriftKey, render_title};
use benchops::seal::{SealedRecord, seal_json};
use benchops_app::status::{
    IssueDecision, MAX_DECISIONS, Status, StatusInputs, WorkflowRunFact, collect, escape,
    render_html,
};
use benchops_history::LocalHistory;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------
// Fixtures

/// A directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let p = std::env::temp_dir().join(format!(
            "benchops-status-test.{}.{}.{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).expect("temporary directory");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

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
name = "sentinel"
cron = "0 * * * *"
timezone = "UTC"
completion_window_minutes = 50
cases = ["parse/large"]
baseline = "last-clean"
"#;

/// A drift summary and a metric name no page may show as markup.
const HOSTILE_SUMMARY: &str = r#"wall_s rose <script>alert("s")</script> & 'more'"#;
const HOSTILE_METRIC: &str = r#"<img src=x onerror="alert('m')">&"#;
const HOSTILE_TITLE: &str = r#"<script>alert("t")</script> & 'x'"#;

fn manifest() -> Manifest {
    benchops::manifest::from_toml(MANIFEST, "manifest.toml")
        .expect("manifest")
        .manifest
}

fn draft() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/result.draft.json");
    let bytes = std::fs::read(path).expect("example draft readable");
    serde_json::from_slice(&bytes).expect("example draft is JSON")
}

/// The example draft (`parse/large` drifts on `wall_s`) moved to a lane and
/// slot.
fn base(lane: &str, slot: &str) -> Value {
    let mut v = draft();
    v["lane"] = json!(lane);
    v["slot"] = json!(slot);
    v["started_at"] = json!(slot);
    v["finished_at"] = json!(slot);
    v["baseline"]["lane"] = json!(lane);
    v
}

fn case_mut<'a>(v: &'a mut Value, id: &str) -> &'a mut Value {
    v["cases"]
        .as_array_mut()
        .expect("cases")
        .iter_mut()
        .find(|c| c["id"] == id)
        .expect("case")
}

/// One sample, so the summary is exactly that value.
fn single_sample(metric: &mut Value, value: f64) {
    metric["samples"] = json!([value]);
    metric["summary"] =
        json!({"n": 1, "median": value, "mad": 0.0, "min": value, "max": value, "ci": null});
}

fn seal(v: &Value) -> SealedRecord {
    seal_json(&serde_json::to_vec(v).expect("serializes")).expect("fixture seals")
}

/// `parse/large` drifts with median `wall_s`.
fn drift(lane: &str, slot: &str, wall_s: f64) -> SealedRecord {
    let mut v = base(lane, slot);
    single_sample(&mut case_mut(&mut v, "parse/large")["metrics"][0], wall_s);
    v["publication"]["drift_reports"][0]["summary"] = json!(HOSTILE_SUMMARY);
    seal(&v)
}

/// `parse/small` and `parse/large` pass (`parse/large` at `wall_s`); the
/// record proposes itself as the lane's baseline.
fn clean(lane: &str, slot: &str, wall_s: f64) -> SealedRecord {
    let mut v = base(lane, slot);
    let mut cases: Vec<Value> = v["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| c["id"] == "parse/small" || c["id"] == "parse/large")
        .cloned()
        .collect();
    cases[1]["outcome"] = json!("pass");
    cases[1]["drift"] = Value::Null;
    single_sample(&mut cases[1]["metrics"][0], wall_s);
    v["cases"] = Value::Array(cases);
    v["runs"] = json!({"total": 15, "succeeded": 15, "failed": 0, "incomplete": 0,
        "missing": 0, "stale": 0, "scheduler_inconsistent": 0});
    v["case_counts"] = json!({"total": 2, "pass": 2, "drift": 0, "skipped": 0, "error": 0});
    v["publication"] = json!({
        "drift_reports": [],
        "cleared": ["parse/large", "parse/small"],
        "baseline_proposal": {"lane": lane, "reason": "clean run"}
    });
    seal(&v)
}

/// `parse/large` was skipped (neither reproduces nor clears its drift), and
/// `parse/small` carries a metric with a hostile name.
fn skipped(lane: &str, slot: &str) -> SealedRecord {
    let mut v = base(lane, slot);
    let large = case_mut(&mut v, "parse/large");
    large["outcome"] = json!("skipped");
    large["skip_reason"] = json!("runner busy");
    large["metrics"] = json!([]);
    large["drift"] = Value::Null;
    large["runs"] = json!({"total": 0, "succeeded": 0, "failed": 0, "incomplete": 0,
        "missing": 0, "stale": 0, "scheduler_inconsistent": 0});
    let small = case_mut(&mut v, "parse/small");
    let mut m = small["metrics"][0].clone();
    m["name"] = json!(HOSTILE_METRIC);
    single_sample(&mut m, 1.5);
    small["metrics"].as_array_mut().expect("metrics").push(m);
    v["runs"] = json!({"total": 10, "succeeded": 5, "failed": 5, "incomplete": 0,
        "missing": 0, "stale": 0, "scheduler_inconsistent": 0});
    v["case_counts"] = json!({"total": 4, "pass": 1, "drift": 0, "skipped": 2, "error": 1});
    v["publication"]["drift_reports"] = json!([]);
    seal(&v)
}

fn policies() -> BTreeMap<LaneName, BaselinePolicy> {
    ["nightly", "sentinel"]
        .into_iter()
        .map(|l| (LaneName::new(l).expect("lane"), BaselinePolicy::LastClean))
        .collect()
}

/// A history of two lanes, written in two commits (as two sweeps would).
fn history(dir: &TempDir) -> LocalHistory {
    let h = LocalHistory::open_or_init(dir.0.join("history.git")).expect("history");
    let first = [
        clean("nightly", "2026-11-26T01:00:00Z", 0.25),
        drift("nightly", "2026-11-27T01:00:00Z", 0.30),
        skipped("nightly", "2026-11-28T01:00:00Z"),
    ];
    let second = [
        drift("nightly", "2026-11-29T01:00:00Z", 0.31),
        drift("sentinel", "2026-11-29T02:00:00Z", 0.32),
        drift("nightly", "2026-11-30T01:00:00Z", 0.3105),
        drift("sentinel", "2026-11-30T02:00:00Z", 0.33),
    ];
    for (i, batch) in [&first[..], &second[..]].into_iter().enumerate() {
        let at = format!("2026-11-30T0{}:30:00Z", i + 2);
        common::history::persist(&h, batch, &policies(), &at);
    }
    h
}

fn now() -> jiff::Timestamp {
    "2026-11-30T04:00:00Z".parse().expect("timestamp")
}

fn decision(issue: u64, action: &str, actor: &str, at: &str, title: &str) -> IssueDecision {
    IssueDecision {
        repository: "example/widgets".into(),
        issue,
        action: action.into(),
        label: None,
        actor: actor.into(),
        actor_is_app: false,
        at: at.into(),
        title: title.into(),
        drift_key: None,
    }
}

fn key() -> DriftKey {
    DriftKey::new(
        benchops::names::CaseId::new("parse/large").expect("case"),
        "wall_s",
    )
}

fn decisions() -> Vec<IssueDecision> {
    let mut labeled = decision(
        14,
        "labeled",
        "benchops[bot]",
        "2026-11-30T02:40:00Z",
        &render_title(&key()),
    );
    labeled.actor_is_app = true;
    labeled.label = Some("lane:sentinel".into());
    let mut by_key = decision(
        15,
        "closed",
        "hubot",
        "2026-11-30T01:00:00Z",
        "renamed by someone",
    );
    by_key.drift_key = Some(key().marker_value());
    vec![
        decision(
            12,
            "closed",
            "octocat",
            "2026-11-30T03:00:00Z",
            &render_title(&key()),
        ),
        decision(
            13,
            "closed",
            "mallory",
            "2026-11-30T03:10:00Z",
            HOSTILE_TITLE,
        ),
        labeled,
        by_key,
    ]
}

fn runs() -> Vec<WorkflowRunFact> {
    let run = |id: u64, attempt: u64, conclusion: Option<&str>, at: &str| WorkflowRunFact {
        repository: "example/widgets".into(),
        workflow_path: ".github/workflows/benchops-publish.yml".into(),
        run_id: id,
        run_attempt: attempt,
        event: "schedule".into(),
        conclusion: conclusion.map(str::to_owned),
        at: at.into(),
    };
    vec![
        run(100, 1, Some("failure"), "2026-11-30T02:05:00Z"),
        run(100, 2, Some("success"), "2026-11-30T02:20:00Z"),
        run(101, 1, None, "2026-11-30T03:05:00Z"),
    ]
}

fn inputs<'a>(
    history: Option<&'a LocalHistory>,
    manifest: Option<&'a Manifest>,
    decisions: &'a [IssueDecision],
    runs: &'a [WorkflowRunFact],
) -> StatusInputs<'a> {
    StatusInputs {
        history,
        manifest,
        decisions,
        workflow_runs: runs,
        now: now(),
        recent_records: 5,
        trend_points: 30,
    }
}

/// The `<figure>` of one trend chart.
fn figure<'a>(page: &'a str, lane: &str, case: &str, metric: &str) -> &'a str {
    let caption = format!(
        "<code>{}</code> · <code>{}</code> · <code>{}</code>",
        escape(lane),
        escape(case),
        escape(metric)
    );
    let at = page.find(&caption).expect("the chart's caption");
    let start = page[..at].rfind("<figure>").expect("figure start");
    let end = at + page[at..].find("</figure>").expect("figure end");
    &page[start..end]
}

// ---------------------------------------------------------------------------
// Tests

#[test]
fn lanes_drift_decisions_records_runs_and_trends_from_a_real_history() {
    let dir = TempDir::new();
    let h = history(&dir);
    let m = manifest();
    let (d, r) = (decisions(), runs());
    let status = collect(&inputs(Some(&h), Some(&m), &d, &r)).expect("collects");
    let page = render_html(&status);

    // Lanes, in manifest order, with latest record, age and baseline.
    let lanes: Vec<&str> = status.lanes.items.iter().map(|l| l.lane.as_str()).collect();
    assert_eq!(lanes, ["nightly", "sentinel"]);
    let nightly = &status.lanes.items[0];
    assert_eq!(nightly.records, 5);
    let latest = nightly.latest.as_ref().expect("latest");
    assert_eq!(latest.slot, "2026-11-30T01:00:00Z");
    assert_eq!(latest.age_seconds, Some(3 * 3600));
    assert_eq!(latest.age, "3h 0m");
    let baseline = nightly.baseline.as_ref().expect("nightly has a baseline");
    assert_eq!(baseline.slot, "2026-11-26T01:00:00Z");
    assert_eq!(baseline.policy, "last-clean");
    assert_eq!(status.lanes.items[1].records, 2);
    assert!(status.lanes.items[1].baseline.is_none());
    assert!(page.contains("<code>nightly</code>") && page.contains("<code>sentinel</code>"));
    assert!(page.contains(&format!("<code title=\"{}\">", escape(&latest.digest))));

    // Open drift, as the publisher derives it: both lanes still reproduce.
    assert_eq!(status.drift.items.len(), 1);
    let open = &status.drift.items[0];
    assert_eq!(
        (open.case.as_str(), open.metric.as_str()),
        ("parse/large", "wall_s")
    );
    assert_eq!(open.standing, "reproducing");
    assert_eq!(open.reproducing_lanes, ["nightly", "sentinel"]);
    assert_eq!(open.evidence_records, 5);
    assert_eq!(open.latest.summary, HOSTILE_SUMMARY);
    let section = &page[page.find("<section id=\"drift\">").expect("drift section")..];
    assert!(section.contains("<code>parse/large</code>"));
    assert!(section.contains("reproducing"));

    // Decisions, newest first; the person's close names the lanes.
    let sentences: Vec<&str> = status
        .decisions
        .items
        .iter()
        .map(|d| d.sentence.as_str())
        .collect();
    assert_eq!(
        sentences,
        [
            "issue #13 closed by a person (mallory) at 2026-11-30T03:10:00Z",
            "issue #12 closed by a person (octocat) at 2026-11-30T03:00:00Z while lanes nightly and sentinel still reproduce it",
            "issue #14 labeled lane:sentinel by an app (benchops[bot]) at 2026-11-30T02:40:00Z",
            "issue #15 closed by a person (hubot) at 2026-11-30T01:00:00Z while lanes nightly and sentinel still reproduce it",
        ]
    );
    let flagged: Vec<u64> = status
        .decisions
        .items
        .iter()
        .filter(|d| d.attention)
        .map(|d| d.decision.issue)
        .collect();
    assert_eq!(flagged, [12, 15]);
    assert_eq!(status.decisions.items[0].matched_key, None);
    assert!(page.contains(
        "issue #12 closed by a person (octocat) at 2026-11-30T03:00:00Z while lanes nightly and sentinel still reproduce it"
    ));

    // Recent records, newest first, capped at what was asked.
    assert_eq!(status.recent_records.items.len(), 5);
    assert_eq!(status.recent_records.left_out, 2);
    let first = &status.recent_records.items[0];
    assert_eq!(
        (first.lane.as_str(), first.slot.as_str()),
        ("sentinel", "2026-11-30T02:00:00Z")
    );
    assert_eq!(first.verdict, "1 pass, 1 drift, 1 skipped, 1 error");
    assert!(page.contains("2 more records not shown."));
    assert!(page.contains("<code title=\"example/widgets\">3f1c2a9d8e7b</code>"));

    // Workflow runs: one row per run, its latest attempt, newest first.
    let shown: Vec<(u64, u64, &str)> = status
        .workflow_runs
        .items
        .iter()
        .map(|r| (r.run.run_id, r.run.run_attempt, r.state.as_str()))
        .collect();
    assert_eq!(shown, [(101, 1, "in progress"), (100, 2, "success")]);
    assert!(page.contains("in progress"));

    // The trend of nightly's parse/large: five records, one a gap, the
    // baseline as a dashed line.
    let t = status
        .trends
        .items
        .iter()
        .find(|t| t.lane == "nightly" && t.case == "parse/large" && t.metric == "wall_s")
        .expect("the trend");
    let values: Vec<Option<f64>> = t.points.iter().map(|p| p.value).collect();
    assert_eq!(
        values,
        [Some(0.25), Some(0.30), None, Some(0.31), Some(0.3105)]
    );
    assert_eq!(t.baseline, Some(0.25));
    assert!(t.drifting);
    assert!(status.trends.items[0].drifting, "open drift comes first");
    let fig = figure(&page, "nightly", "parse/large", "wall_s");
    assert_eq!(fig.matches("class=\"pt\"").count(), 4);
    assert_eq!(
        fig.matches("<polyline").count(),
        2,
        "the gap breaks the line"
    );
    assert!(fig.contains("class=\"baseline\"") && fig.contains("stroke-dasharray"));
    assert!(fig.contains("baseline 0.25 s"));
    assert!(fig.contains("4 points, 1 gap, min 0.25 s, max 0.3105 s"));
    assert!(fig.contains("class=\"trend\" viewBox="));
    // The chart is the core's renderer, byte for byte (the one that
    // `benchops-publish history --svg` writes too).
    assert!(fig.contains(&benchops::chart::trend_svg(&t.chart())));
    // Sentinel's trend has no pointer, so its baseline comes from the
    // drift evidence of its records.
    let s = status
        .trends
        .items
        .iter()
        .find(|t| t.lane == "sentinel" && t.case == "parse/large")
        .expect("sentinel's trend");
    assert_eq!(s.baseline, Some(0.25));
    assert_eq!(s.points.len(), 2);

    // Hostile text from records and webhooks is escaped everywhere.
    assert!(!page.to_ascii_lowercase().contains("<script"));
    assert!(!page.contains("<img"));
    assert!(page.contains(&escape(HOSTILE_SUMMARY)));
    assert!(page.contains("&lt;script&gt;alert(&quot;t&quot;)&lt;/script&gt; &amp; &#39;x&#39;"));
    let hostile = status
        .trends
        .items
        .iter()
        .find(|t| t.metric == HOSTILE_METRIC)
        .expect("a trend of the hostile metric");
    assert_eq!(
        hostile.points.iter().filter(|p| p.value.is_some()).count(),
        1
    );
    figure(&page, "nightly", "parse/small", HOSTILE_METRIC);
}

#[test]
fn the_page_is_a_complete_document_without_script_or_external_resources() {
    let dir = TempDir::new();
    let h = history(&dir);
    let m = manifest();
    let status = collect(&inputs(Some(&h), Some(&m), &decisions(), &runs())).expect("collects");
    let page = render_html(&status);
    assert!(page.starts_with("<!doctype html>\n<html lang=\"en\">"));
    assert!(
        page.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
    );
    assert!(page.trim_end().ends_with("</html>"));
    // The charts name the SVG namespace (so a chart saved as a file
    // renders); a namespace is a name, never fetched.
    let lower = page
        .to_ascii_lowercase()
        .replace(r#"xmlns="http://www.w3.org/2000/svg""#, "");
    for banned in [
        "<script", "<link", "<img", "<iframe", "@import", "http:", "https:", "url(",
    ] {
        assert!(!lower.contains(banned), "the page holds {banned}");
    }
    assert_eq!(lower.matches("<style>").count(), 1);
    // Tables scroll inside a wrapper; charts scale with their box.
    assert_eq!(
        page.matches("<div class=\"scroll\"><table>").count(),
        page.matches("<table>").count()
    );
    assert!(page.contains(".scroll{overflow-x:auto"));
    assert!(page.contains("width=\"100%\""));
    assert!(page.contains("svg.trend{display:block;width:100%;height:auto"));
}

#[test]
fn without_a_history_store_the_page_says_history_is_not_configured() {
    let (d, r) = (decisions(), runs());
    let status = collect(&inputs(None, None, &d, &r)).expect("collects");
    assert!(!status.history_configured);
    assert!(status.history.is_none());
    assert!(status.lanes.items.is_empty() && status.trends.items.is_empty());
    // Decisions are still told, without lanes: nothing to match them with.
    let octocat = status
        .decisions
        .items
        .iter()
        .find(|d| d.decision.issue == 12)
        .expect("decision");
    assert_eq!(
        octocat.sentence,
        "issue #12 closed by a person (octocat) at 2026-11-30T03:00:00Z"
    );
    assert!(!octocat.attention);
    let page = render_html(&status);
    assert!(page.contains("History is not configured."));
    assert!(!page.contains("id=\"lanes\"") && !page.contains("id=\"trends\""));
    assert!(!page.contains("No lane has a record yet"));
    assert!(page.contains("in progress"), "runs are still shown");
    let json = serde_json::to_value(&status).expect("JSON");
    assert_eq!(json["history"], Value::Null);
    assert_eq!(json["history_configured"], json!(false));
}

#[test]
fn an_empty_history_is_not_a_missing_one() {
    let dir = TempDir::new();
    let h = LocalHistory::open_or_init(dir.0.join("history.git")).expect("history");
    let m = manifest();
    let status = collect(&inputs(Some(&h), Some(&m), &[], &[])).expect("collects");
    assert!(status.history_configured);
    let summary = status.history.as_ref().expect("history summary");
    assert_eq!((summary.tip.as_deref(), summary.records), (None, 0));
    // Manifest lanes are listed even before their first record.
    assert_eq!(status.lanes.items.len(), 2);
    assert!(status.lanes.items.iter().all(|l| l.latest.is_none()));
    let page = render_html(&status);
    assert!(page.contains("branch does not exist yet"));
    assert!(!page.contains("History is not configured"));
    assert!(page.contains("no record yet"));
    assert!(page.contains("No open drift"));
}

#[test]
fn without_a_manifest_lanes_cover_the_cases_of_their_latest_record() {
    let dir = TempDir::new();
    let h = history(&dir);
    let status = collect(&inputs(Some(&h), None, &decisions(), &[])).expect("collects");
    let json = serde_json::to_value(&status).expect("JSON");
    assert_eq!(json["history"]["coverage"], json!("latest_records"));
    assert_eq!(json["lanes"]["items"][0]["in_manifest"], Value::Null);
    assert_eq!(
        status.drift.items[0].reproducing_lanes,
        ["nightly", "sentinel"]
    );
    assert!(render_html(&status).contains("no schedule manifest given"));
}

#[test]
fn the_json_has_the_documented_top_level_keys() {
    let dir = TempDir::new();
    let h = history(&dir);
    let m = manifest();
    let status: Status =
        collect(&inputs(Some(&h), Some(&m), &decisions(), &runs())).expect("collects");
    let json = serde_json::to_value(&status).expect("JSON");
    let keys: Vec<&str> = json
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    let mut want = [
        "generated_at",
        "history_configured",
        "history",
        "lanes",
        "drift",
        "decisions",
        "recent_records",
        "workflow_runs",
        "trends",
    ];
    want.sort_unstable();
    let mut got = keys.clone();
    got.sort_unstable();
    assert_eq!(got, want);
    assert_eq!(json["generated_at"], json!("2026-11-30T04:00:00Z"));
    for list in [
        "lanes",
        "drift",
        "decisions",
        "recent_records",
        "workflow_runs",
        "trends",
    ] {
        assert!(json[list]["items"].is_array(), "{list}.items");
        assert!(json[list]["left_out"].is_u64(), "{list}.left_out");
    }
    let d = &json["decisions"]["items"][1];
    assert_eq!(d["issue"], json!(12));
    assert_eq!(d["matched_key"], json!("parse/large/wall_s"));
    assert_eq!(d["reproducing_lanes"], json!(["nightly", "sentinel"]));
    // A gap is null, not zero.
    let trend = json["trends"]["items"]
        .as_array()
        .expect("trends")
        .iter()
        .find(|t| t["lane"] == "nightly" && t["case"] == "parse/large")
        .expect("trend");
    assert_eq!(trend["points"][2]["value"], Value::Null);
    assert_eq!(json["history"]["tip"].as_str().map(str::len), Some(40));
}

#[test]
fn long_lists_are_capped_and_say_how_many_were_left_out() {
    let many: Vec<IssueDecision> = (0..MAX_DECISIONS as u64 + 7)
        .map(|i| {
            decision(
                i,
                "reopened",
                "octocat",
                &format!("2026-11-{:02}T00:00:00Z", i % 28 + 1),
                "t",
            )
        })
        .collect();
    let status = collect(&inputs(None, None, &many, &[])).expect("collects");
    assert_eq!(status.decisions.items.len(), MAX_DECISIONS);
    assert_eq!(status.decisions.left_out, 7);
    assert!(render_html(&status).contains("7 more decisions not shown."));
}
