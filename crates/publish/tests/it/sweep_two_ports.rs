//! One scenario suite, run through both ports of the sweep engine: the
//! local git repository with the issue ledger, and the GitHub simulator.
//! Each scenario asserts that the two modes leave the same history files
//! (same paths, same bytes, hence the same blob ids), the same receipts
//! apart from run identity, request metrics and commit ids, and the same
//! issues, comments and labels. Regression tests of the defects the two
//! former sweeps had are here too, each run in both modes.

use crate::sim_client::sim_client;

use std::collections::BTreeMap;
use std::fs;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use benchops::reconcile::{closed_marker, evidence_marker};
use benchops::seal::SealedRecord;
use benchops_github::ManualClock;
use benchops_publish::github::{GitHubSweepOptions, sweep_github};
use benchops_publish::history::LocalHistory;
use benchops_publish::ledger::Ledger;
use benchops_publish::local::{LocalSweepOptions, sweep_local};
use benchops_publish::sweep::{Clock, Phase, SweepError, SweepReport};
use benchops_testkit::GitHubSim;
use benchops_testkit::records::{clean, draft, drift, drift_both, seal, with_lane_slot};
use benchops_testkit::sim::auth::TEST_APP_PRIVATE_KEY_PEM;
use serde_json::{Value, json};

const OWNER: &str = "acme";
const NAME: &str = "bench";
const BASE_URL: &str = "https://github.example/acme/bench/blob/benchmark-history";

const MANIFEST: &str = r#"
schema = "schedule-manifest/v1"

[[lanes]]
name = "sentinel"
cron = "0 * * * *"
timezone = "UTC"
completion_window_minutes = 50
cases = ["parse/large"]
baseline = "pinned"

[[lanes]]
name = "nightly"
cron = "0 1 * * *"
timezone = "UTC"
completion_window_minutes = 180
cases = ["*"]
baseline = "last-clean"
"#;

/// An issue as compared: number, title, body, state, state reason, sorted
/// labels, comment bodies.
type IssueView = (
    u64,
    String,
    String,
    String,
    Option<String>,
    Vec<String>,
    Vec<String>,
);

/// What a scenario compares across the modes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    /// Every history file but receipts: path → bytes.
    files: BTreeMap<String, Vec<u8>>,
    /// Receipts with run identity, request metrics and commit ids removed.
    receipts: Vec<Value>,
    /// Issues: number, title, body, state, state reason, sorted labels,
    /// comment bodies.
    issues: Vec<IssueView>,
}

fn normalize_receipt(bytes: &[u8]) -> Value {
    let mut v: Value = serde_json::from_slice(bytes).expect("receipt is JSON");
    let o = v.as_object_mut().expect("object");
    o.remove("requests");
    o["sweep"].as_object_mut().expect("sweep").remove("trigger");
    o["sweep"]
        .as_object_mut()
        .expect("sweep")
        .remove("workflow_run");
    o["history"]
        .as_object_mut()
        .expect("history")
        .remove("parent");
    // Directory handoffs are named relative to the handoff directory in
    // GitHub mode and to the sweep directory in local mode.
    for e in o["validated"].as_array_mut().expect("validated") {
        if let Some(s) = e["source"].as_str() {
            let s = s.trim_start_matches("sealed/").to_owned();
            e["source"] = Value::String(s);
        }
    }
    for e in o["skipped"].as_array_mut().expect("skipped") {
        for k in ["source", "skip_reason"] {
            if let Some(s) = e[k].as_str() {
                let s = s.replace("sealed/", "").replace("quarantine/", "q/");
                e[k] = Value::String(s);
            }
        }
    }
    v
}

/// The two modes behind one interface.
enum Mode {
    Local {
        _tmp: tempfile::TempDir,
        dir: PathBuf,
        manifest: PathBuf,
    },
    GitHub {
        sim: GitHubSim,
        _tmp: tempfile::TempDir,
        handoff: PathBuf,
        manifest: PathBuf,
        key: PathBuf,
    },
}

impl Mode {
    fn local() -> Mode {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join(".benchops");
        fs::create_dir_all(dir.join("sealed")).expect("sealed dir");
        let manifest = tmp.path().join("schedule.toml");
        fs::write(&manifest, MANIFEST).expect("manifest");
        Mode::Local {
            _tmp: tmp,
            dir,
            manifest,
        }
    }

    async fn github() -> Mode {
        let sim = GitHubSim::start().await;
        sim.create_repo(OWNER, NAME);
        let tmp = tempfile::tempdir().expect("tempdir");
        let handoff = tmp.path().join("sealed");
        fs::create_dir_all(&handoff).expect("handoff dir");
        let manifest = tmp.path().join("schedule.toml");
        fs::write(&manifest, MANIFEST).expect("manifest");
        let key = tmp.path().join("app.pem");
        fs::write(&key, TEST_APP_PRIVATE_KEY_PEM).expect("key");
        Mode::GitHub {
            sim,
            _tmp: tmp,
            handoff,
            manifest,
            key,
        }
    }

    async fn both() -> [Mode; 2] {
        [Mode::local(), Mode::github().await]
    }

    fn name(&self) -> &'static str {
        match self {
            Mode::Local { .. } => "local",
            Mode::GitHub { .. } => "github",
        }
    }

    fn handoff_dir(&self) -> PathBuf {
        match self {
            Mode::Local { dir, .. } => dir.join("sealed"),
            Mode::GitHub { handoff, .. } => handoff.clone(),
        }
    }

    fn hand_off(&self, records: &[&SealedRecord]) {
        for r in records {
            fs::write(self.handoff_dir().join(r.file_name()), r.bytes()).expect("handoff");
        }
    }

    fn clear_handoffs(&self) {
        for e in fs::read_dir(self.handoff_dir()).expect("lists").flatten() {
            if e.path().is_file() {
                fs::remove_file(e.path()).expect("removes");
            }
        }
    }

    async fn try_sweep_with(
        &self,
        clock: Clock,
        max_actions: Option<usize>,
    ) -> Result<SweepReport, SweepError> {
        match self {
            Mode::Local { dir, manifest, .. } => {
                let mut o = LocalSweepOptions::new(dir, manifest);
                o.clock = clock;
                o.max_actions = max_actions;
                o.history_base_url = BASE_URL.to_owned();
                sweep_local(&o)
            }
            Mode::GitHub {
                sim,
                handoff,
                manifest,
                key,
                ..
            } => {
                let start = u64::try_from(sim.now()).expect("after 1970");
                let api_clock = ManualClock::at_unix(start);
                let mut o = GitHubSweepOptions::new(
                    format!("{OWNER}/{NAME}"),
                    sim.app_id(),
                    key,
                    Some(handoff.clone()),
                    manifest,
                );
                o.clock = clock;
                o.max_actions = max_actions;
                o.trigger = "schedule".to_owned();
                o.history_base_url = BASE_URL.to_owned();
                o.client = sim_client(sim, &api_clock);
                sweep_github(&o).await
            }
        }
    }

    async fn sweep_at(&self, now: &str) -> SweepReport {
        match self.try_sweep_with(Clock::fixed(now), None).await {
            Ok(r) => r,
            Err(e) => panic!(
                "{} sweep failed: {}",
                self.name(),
                benchops_publish::text::error_line(&e)
            ),
        }
    }

    /// Every history file at the tip: path → bytes.
    fn history_files(&self) -> BTreeMap<String, Vec<u8>> {
        match self {
            Mode::Local { dir, .. } => {
                let h = LocalHistory::open_or_init(dir.join("history.git")).expect("opens");
                let tip = h.tip_index().expect("tip");
                let oids: Vec<&str> = tip.files.values().map(String::as_str).collect();
                let blobs = h.read_blobs(&oids).expect("reads");
                tip.files.keys().cloned().zip(blobs).collect()
            }
            Mode::GitHub { sim, .. } => sim
                .file_paths(OWNER, NAME, "benchmark-history")
                .into_iter()
                .map(|p| {
                    let b = sim
                        .file(OWNER, NAME, "benchmark-history", &p)
                        .expect("file");
                    (p, b)
                })
                .collect(),
        }
    }

    fn state(&self) -> State {
        let all = self.history_files();
        let mut receipts: Vec<Value> = all
            .iter()
            .filter(|(p, _)| p.starts_with("receipts/"))
            .map(|(_, b)| normalize_receipt(b))
            .collect();
        receipts.sort_by_key(|v| v.to_string());
        let files = all
            .into_iter()
            .filter(|(p, _)| !p.starts_with("receipts/"))
            .collect();
        let issues = match self {
            Mode::Local { dir, .. } => {
                let bytes = fs::read(dir.join("issues.json")).unwrap_or_default();
                if bytes.is_empty() {
                    Vec::new()
                } else {
                    let l = Ledger::from_bytes(&bytes, &dir.join("issues.json")).expect("ledger");
                    l.issues
                        .iter()
                        .map(|i| {
                            let mut labels = i.labels.clone();
                            labels.sort();
                            (
                                i.number,
                                i.title.clone(),
                                i.body.clone(),
                                format!("{:?}", i.state).to_lowercase(),
                                i.state_reason.clone(),
                                labels,
                                i.comments.iter().map(|c| c.body.clone()).collect(),
                            )
                        })
                        .collect()
                }
            }
            Mode::GitHub { sim, .. } => sim
                .issues(OWNER, NAME)
                .into_iter()
                .map(|i| {
                    let mut labels = i.labels;
                    labels.sort();
                    (
                        i.number,
                        i.title,
                        i.body.unwrap_or_default(),
                        i.state,
                        i.state_reason,
                        labels,
                        i.comments,
                    )
                })
                .collect(),
        };
        State {
            files,
            receipts,
            issues,
        }
    }
}

/// Runs `scenario` in both modes and asserts they agree; returns the state.
async fn agree<F, Fut>(scenario: F) -> State
where
    F: Fn(&'static Mode) -> Fut,
    Fut: Future<Output = ()>,
{
    let [local, github] = Mode::both().await;
    let local: &'static Mode = Box::leak(Box::new(local));
    let github: &'static Mode = Box::leak(Box::new(github));
    scenario(local).await;
    scenario(github).await;
    let (mut a, mut b) = (local.state(), github.state());
    // The index pointer names the commit it was built on, which differs
    // between the two stores; everything else in it agrees.
    for s in [&mut a, &mut b] {
        if let Some(bytes) = s.files.get_mut(benchops::history_index::POINTER_PATH) {
            let mut v: Value = serde_json::from_slice(bytes).expect("pointer");
            v["built_on"] = Value::Null;
            *bytes = serde_json::to_vec(&v).expect("json");
        }
    }
    assert_eq!(
        a.files.keys().collect::<Vec<_>>(),
        b.files.keys().collect::<Vec<_>>()
    );
    assert_eq!(a.files, b.files, "same history bytes");
    assert_eq!(a.receipts, b.receipts, "same receipts");
    assert_eq!(a.issues, b.issues, "same issues, comments and labels");
    a
}

// ---------------------------------------------------------------------------
// Scenarios

#[tokio::test]
async fn drift_then_a_sentinel_pass_then_a_clean_full_run_agree_in_both_modes() {
    let s = agree(|m| async move {
        m.hand_off(&[&drift_both("nightly", "2026-12-01T01:00:00Z")]);
        let r = m.sweep_at("2026-12-01T04:00:00.000Z").await;
        assert_eq!(r.opened(), 2, "{}", m.name());
        m.clear_handoffs();
        // The sentinel clears only what it covers; the other drift stays.
        m.hand_off(&[&clean("sentinel", "2026-12-01T05:00:00Z")]);
        m.sweep_at("2026-12-01T06:00:00.000Z").await;
        m.clear_handoffs();
        m.hand_off(&[&clean("nightly", "2026-12-02T01:00:00Z")]);
        let r = m.sweep_at("2026-12-02T04:00:00.000Z").await;
        assert_eq!(r.closed(), 2, "{}: {:?}", m.name(), r.applied);
        // A rerun changes nothing.
        let again = m.sweep_at("2026-12-02T05:00:00.000Z").await;
        assert!(again.applied.is_empty(), "{}", m.name());
    })
    .await;
    assert_eq!(s.issues.len(), 2);
    assert!(s.issues.iter().all(|i| i.3 == "closed"));
    assert!(s.files.contains_key("baselines/nightly.json"));
}

#[tokio::test]
async fn a_tampered_handoff_is_quarantined_the_same_way_in_both_modes() {
    agree(|m| async move {
        let good = drift("nightly", "2026-12-01T01:00:00Z");
        m.hand_off(&[&good]);
        let bad = clean("nightly", "2026-12-01T02:00:00Z");
        let mut bytes = bad.bytes().to_vec();
        bytes[10] ^= 1;
        fs::write(m.handoff_dir().join(bad.file_name()), bytes).expect("tampered");
        let r = m.sweep_at("2026-12-01T04:00:00.000Z").await;
        assert_eq!(r.quarantined(), 1, "{}", m.name());
        assert_eq!(r.new_records(), 1, "{}", m.name());
    })
    .await;
}

#[tokio::test]
async fn a_crash_after_any_reconcile_action_converges_in_both_modes() {
    // The uninterrupted result, per mode.
    let want = agree(|m| async move {
        m.hand_off(&[&drift_both("nightly", "2026-12-01T01:00:00Z")]);
        m.sweep_at("2026-12-01T04:00:00.000Z").await;
    })
    .await;
    let total = want.issues.len() * 2;
    for k in 0..total {
        let got = agree(|m| async move {
            m.hand_off(&[&drift_both("nightly", "2026-12-01T01:00:00Z")]);
            m.try_sweep_with(Clock::fixed("2026-12-01T04:00:00.000Z"), Some(k))
                .await
                .expect("stops after k actions");
            m.sweep_at("2026-12-01T04:00:00.000Z").await;
        })
        .await;
        assert_eq!(got.files, want.files, "k = {k}");
        assert_eq!(got.issues, want.issues, "k = {k}");
    }
}

// ---------------------------------------------------------------------------
// Regressions of the two former sweeps, each in both modes

/// Defect 1: records less than a second apart are ordered as instants
/// (`…00Z` before `…00.5Z`), so the receipt lists them the same way in
/// both modes and the baseline pointer is the later one.
#[tokio::test]
async fn records_less_than_a_second_apart_sort_as_instants_in_both_modes() {
    let s = agree(|m| async move {
        let whole = clean("nightly", "2026-12-01T01:00:00Z");
        let half = clean("nightly", "2026-12-01T01:00:00.5Z");
        m.hand_off(&[&half, &whole]);
        let r = m.sweep_at("2026-12-01T04:00:00.000Z").await;
        let order: Vec<_> = r.persisted.iter().map(|p| p.digest).collect();
        assert_eq!(order, [whole.digest(), half.digest()], "{}", m.name());
        let pointer = &r.baseline_changes[0];
        assert_eq!(pointer.to, half.digest(), "{}", m.name());
    })
    .await;
    let receipt = &s.receipts[0];
    let persisted = receipt["persisted"].as_array().expect("persisted");
    assert_eq!(persisted.len(), 2);
}

/// Defect 3: a bad `finished_at` (or `started_at`) of the sweep stops the
/// persist in both modes, named as what it is, before anything is written.
#[tokio::test]
async fn a_bad_sweep_time_is_named_and_stops_the_persist_in_both_modes() {
    for (bad_at, step) in [(0, "read sweep.started_at"), (1, "read sweep.finished_at")] {
        for m in Mode::both().await {
            m.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
            let calls = Arc::new(AtomicUsize::new(0));
            let c = calls.clone();
            let clock = Clock::from_fn(move || {
                let n = c.fetch_add(1, Ordering::SeqCst);
                if n == bad_at {
                    "2026-12-01 04:00:00".to_owned()
                } else {
                    "2026-12-01T04:00:00.000Z".to_owned()
                }
            });
            let err = m.try_sweep_with(clock, None).await.expect_err("refused");
            assert_eq!(err.phase, Phase::Persist, "{}", m.name());
            assert_eq!(err.step, step, "{}", m.name());
            assert!(!err.is_retryable());
            assert!(
                m.history_files().is_empty(),
                "{}: nothing was written",
                m.name()
            );
        }
    }
}

/// Defect 4: both modes report health per lane, from the same records.
#[tokio::test]
async fn both_modes_report_the_same_health() {
    let mut tables = Vec::new();
    for m in Mode::both().await {
        m.hand_off(&[
            &drift("nightly", "2026-12-01T01:00:00Z"),
            &clean("sentinel", "2026-12-01T05:00:00Z"),
        ]);
        let r = m.sweep_at("2026-12-01T06:00:00.000Z").await;
        let summary = benchops_publish::sweep::render_summary(&r);
        assert!(
            summary.contains("health (latest record per lane)"),
            "{summary}"
        );
        tables.push(r.health);
    }
    assert_eq!(tables[0], tables[1]);
    assert_eq!(tables[0].len(), 2);
    assert!(tables[0].iter().all(|h| h.latest.is_some()));
}

/// Defect 6: an issue closed as `not_planned` was closed by a person, even
/// when the body's state marker still says benchops closed it: new
/// evidence never reopens it, in either mode.
#[tokio::test]
async fn an_issue_closed_as_not_planned_is_never_reopened_in_either_mode() {
    for m in Mode::both().await {
        m.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
        m.sweep_at("2026-12-01T04:00:00.000Z").await;
        m.clear_handoffs();
        m.hand_off(&[
            &clean("nightly", "2026-12-02T01:00:00Z"),
            &clean("sentinel", "2026-12-02T02:00:00Z"),
        ]);
        let r = m.sweep_at("2026-12-02T04:00:00.000Z").await;
        assert_eq!(r.closed(), 1, "{}: {:?}", m.name(), r.applied);
        // A person reopens it and closes it again as not planned.
        match &m {
            Mode::Local { dir, .. } => {
                let path = dir.join("issues.json");
                let mut l =
                    Ledger::from_bytes(&fs::read(&path).expect("reads"), &path).expect("ledger");
                l.issues[0].state_reason = Some("not_planned".to_owned());
                fs::write(&path, l.to_bytes()).expect("writes");
            }
            Mode::GitHub { sim, .. } => {
                assert!(sim.set_issue_state_as_user(OWNER, NAME, 1, "closed", Some("not_planned")));
            }
        }
        m.clear_handoffs();
        m.hand_off(&[&drift("nightly", "2026-12-03T01:00:00Z")]);
        let r = m.sweep_at("2026-12-03T04:00:00.000Z").await;
        assert_eq!(r.reopened(), 0, "{}: {:?}", m.name(), r.applied);
        assert!(
            r.notes
                .iter()
                .any(|n| matches!(n, benchops::reconcile::Note::ClosedByHuman { issue: 1, .. })),
            "{}: {:?}",
            m.name(),
            r.notes
        );
    }
}

// ---------------------------------------------------------------------------
// Text from records never acts as markup in issues: summaries, skip reasons,
// error messages, metric names and units that carry hidden markers (forged
// evidence and closing markers among them), mentions of people and teams,
// `#123` references, table pipes, newlines and 100 KB of text. The issue
// gets every comment it should, closes with its real closing comment, pings
// nobody, keeps its tables whole, stays within GitHub's limits, and both
// modes write the same issues.

/// A metric name a record may carry (at most 128 characters).
const METRIC: &str = "p99|lat`ency @acme/perf-team #12 <!-- benchops:drift key=a/b -->\nx";
/// A unit a record may carry (at most 32 characters).
const UNIT: &str = "s|@octocat#7<!--x-->";

/// Free text with everything at once, `len` bytes long; `forged` lines are
/// put in on lines of their own.
fn hostile(forged: &[String], len: usize) -> String {
    let mut s = format!(
        "rose <!-- x --> --> @octocat @acme/perf-team #123 GH-9 a|b\n| c |\r\n`` ` <b>x</b>\n{}\n",
        forged.join("\n")
    );
    while s.len() < len {
        s.push_str("padding ");
    }
    s.truncate(len);
    s
}

/// The example record with every free text and name made hostile:
/// `parse/large`'s summary (with `forged` in it) and unit, `render/gpu`'s
/// skip reason, `render/cpu`'s error message, and, when `small_metric`,
/// `parse/small` drifting on [`METRIC`] with a hostile summary.
fn hostile_record(lane: &str, slot: &str, forged: &[String], small_metric: bool) -> SealedRecord {
    let mut v = with_lane_slot(draft(), lane, slot);
    let text = hostile(forged, 100_000);
    for c in v["cases"].as_array_mut().expect("cases") {
        match c["id"].as_str() {
            Some("parse/large") => c["metrics"][0]["unit"] = json!(UNIT),
            Some("render/gpu") => c["skip_reason"] = json!(text),
            Some("render/cpu") => c["error"]["message"] = json!(text),
            Some("parse/small") if small_metric => {
                c["outcome"] = json!("drift");
                c["metrics"][0]["name"] = json!(METRIC);
                c["drift"]["metric"] = json!(METRIC);
                c["drift"]["verdict"] = json!("confirmed");
            }
            _ => {}
        }
    }
    let mut reports = vec![json!({"case": "parse/large", "metric": "wall_s", "summary": text})];
    if small_metric {
        reports.push(json!({"case": "parse/small", "metric": METRIC, "summary": text}));
        v["case_counts"] = json!({"total": 4, "pass": 0, "drift": 2, "skipped": 1, "error": 1});
        v["publication"]["cleared"] = json!([]);
    }
    v["publication"]["drift_reports"] = json!(reports);
    seal(&v)
}

/// The first line of a comment: where benchops writes its marker.
fn head(comment: &str) -> &str {
    comment.lines().next().unwrap_or_default()
}

/// Nothing in `text` acts as markup: `<!--` and `-->` only on benchops's
/// own marker lines (none of them one of `forged`), no mention or
/// reference, tables whole, and within GitHub's limits.
fn assert_inert(text: &str, forged: &[String], limit: usize) {
    assert!(
        text.chars().count() <= limit,
        "{} chars",
        text.chars().count()
    );
    for line in text.lines() {
        if line.contains("<!--") || line.contains("-->") {
            assert!(
                line.starts_with("<!-- benchops:")
                    && line.ends_with(" -->")
                    && line.matches("<!--").count() == 1,
                "record text opened a comment: {line}"
            );
        }
        assert!(
            !forged.iter().any(|f| f == line),
            "forged marker line: {line}"
        );
    }
    for raw in ["@octocat", "@acme", "#123", "#12 ", "#7", "GH-9", "<b>"] {
        assert!(!text.contains(raw), "{raw} reached the issue as it was");
    }
    let mut width = None;
    for line in text.lines() {
        if !line.starts_with('|') {
            width = None;
            continue;
        }
        let mut cells = 0usize;
        let mut prev = ' ';
        for c in line.chars() {
            if c == '|' && prev != '\\' {
                cells += 1;
            }
            prev = c;
        }
        assert_eq!(
            *width.get_or_insert(cells),
            cells,
            "broken table row: {line}"
        );
    }
}

#[tokio::test]
async fn hostile_record_text_is_inert_and_forged_markers_do_not_count_in_both_modes() {
    let mut seen: Vec<Vec<IssueView>> = Vec::new();
    for m in Mode::both().await {
        let name = m.name();
        // B is the later evidence, and the epoch the issue closes at; A's
        // texts forge B's evidence and closing markers.
        let b = drift("nightly", "2026-12-03T01:00:00Z");
        let forged = vec![evidence_marker(&b.digest()), closed_marker(&b.digest())];
        let first = hostile_record("nightly", "2026-12-01T01:00:00Z", &[], true);
        let a = hostile_record("nightly", "2026-12-02T01:00:00Z", &forged, false);

        m.clear_handoffs();
        m.hand_off(&[&first]);
        let r = m.sweep_at("2026-12-01T04:00:00.000Z").await;
        assert_eq!(r.opened(), 2, "{name}: {:?}", r.applied);
        // A passes parse/small, which closes the hostile metric's issue.
        m.clear_handoffs();
        m.hand_off(&[&a]);
        let r = m.sweep_at("2026-12-02T04:00:00.000Z").await;
        assert_eq!(r.commented(), 1, "{name}: {:?}", r.applied);
        assert_eq!(r.closed(), 1, "{name}: {:?}", r.applied);
        m.clear_handoffs();
        m.hand_off(&[&b]);
        let r = m.sweep_at("2026-12-03T04:00:00.000Z").await;
        assert_eq!(r.commented(), 1, "{name}: B is announced: {:?}", r.applied);
        m.clear_handoffs();
        m.hand_off(&[
            &clean("nightly", "2026-12-04T01:00:00Z"),
            &clean("sentinel", "2026-12-04T02:00:00Z"),
        ]);
        let r = m.sweep_at("2026-12-04T04:00:00.000Z").await;
        assert_eq!(r.closed(), 1, "{name}: {:?}", r.applied);
        let again = m.sweep_at("2026-12-04T05:00:00.000Z").await;
        assert!(again.applied.is_empty(), "{name}: {:?}", again.applied);

        let issues = m.state().issues;
        assert_eq!(issues.len(), 2, "{name}");
        let (_, _, _, state, _, _, comments) = &issues[0];
        assert_eq!(state, "closed", "{name}");
        let heads: Vec<&str> = comments.iter().map(|c| head(c)).collect();
        assert_eq!(
            heads,
            [
                evidence_marker(&a.digest()),
                evidence_marker(&b.digest()),
                closed_marker(&b.digest()),
            ],
            "{name}: every comment, and the real closing one"
        );
        let (_, title, _, state, _, _, comments) = &issues[1];
        assert!(
            title.starts_with("Benchmark drift: parse/small p99|lat`ency"),
            "{title}"
        );
        assert_eq!(state, "closed", "{name}");
        assert_eq!(comments.len(), 1, "{name}: the closing comment");
        for (_, title, body, _, _, _, comments) in &issues {
            assert_inert(title, &forged, 256);
            assert!(!title.contains(['\n', '\r']), "{title}");
            assert_inert(body, &forged, 65_536);
            assert!(
                body.contains("(truncated from 100000 bytes)"),
                "{name}: {body}"
            );
            for (i, c) in comments.iter().enumerate() {
                // B's own comments carry its markers, rightly, as first line.
                let forged: &[String] = if i == 0 { &forged } else { &[] };
                assert_inert(c, forged, 65_536);
            }
        }
        seen.push(issues);
    }
    assert_eq!(seen[0], seen[1], "both modes write the same issues");
}
