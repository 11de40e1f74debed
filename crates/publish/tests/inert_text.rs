//! Text from records never acts as markup in issues, in both modes (the
//! local issue ledger and the GitHub simulator): summaries, skip reasons,
//! error messages, metric names and units that carry hidden markers
//! (forged evidence and closing markers among them), mentions of people
//! and teams, `#123` references, table pipes, newlines and 100 KB of text.
//! Each scenario asserts that the issue gets every comment it should,
//! closes with its real closing comment, pings nobody, keeps its tables
//! whole, stays within GitHub's limits, and that both modes write the same
//! issues.

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use benchops::reconcile::{closed_marker, evidence_marker};
use benchops::seal::SealedRecord;
use benchops_github::ManualClock;
use benchops_publish::github::{ClientSettings, GitHubSweepOptions, sweep_github};
use benchops_publish::ledger::Ledger;
use benchops_publish::local::{LocalSweepOptions, sweep_local};
use benchops_publish::sweep::{Clock, SweepReport};
use benchops_testkit::GitHubSim;
use benchops_testkit::records::{clean, draft, drift, seal, with_lane_slot};
use benchops_testkit::sim::auth::TEST_APP_PRIVATE_KEY_PEM;
use serde_json::json;

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

/// One issue as both modes are compared: number, title, body, state,
/// comment bodies.
type IssueView = (u64, String, String, String, Vec<String>);

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

    /// Replaces the handoffs with `records`.
    fn hand_off(&self, records: &[&SealedRecord]) {
        for e in fs::read_dir(self.handoff_dir()).expect("lists").flatten() {
            if e.path().is_file() {
                fs::remove_file(e.path()).expect("removes");
            }
        }
        for r in records {
            fs::write(self.handoff_dir().join(r.file_name()), r.bytes()).expect("handoff");
        }
    }

    async fn sweep_at(&self, now: &str) -> SweepReport {
        let result = match self {
            Mode::Local { dir, manifest, .. } => {
                let mut o = LocalSweepOptions::new(dir, manifest);
                o.clock = Clock::fixed(now);
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
                o.clock = Clock::fixed(now);
                o.trigger = "schedule".to_owned();
                o.history_base_url = BASE_URL.to_owned();
                o.client = ClientSettings {
                    api_url: Some(sim.base_url()),
                    clock: Some(Arc::new(api_clock.clone())),
                    sleeper: Some(Arc::new(api_clock)),
                    timeout: Some(Duration::from_secs(5)),
                    jitter_seed: Some(7),
                    ..ClientSettings::default()
                };
                sweep_github(&o).await
            }
        };
        match result {
            Ok(r) => r,
            Err(e) => panic!(
                "{} sweep failed: {}",
                self.name(),
                benchops_publish::sweep::error_line(&e)
            ),
        }
    }

    fn issues(&self) -> Vec<IssueView> {
        match self {
            Mode::Local { dir, .. } => {
                let path = dir.join("issues.json");
                let l = Ledger::from_bytes(&fs::read(&path).expect("ledger"), &path)
                    .expect("ledger parses");
                l.issues
                    .iter()
                    .map(|i| {
                        (
                            i.number,
                            i.title.clone(),
                            i.body.clone(),
                            format!("{:?}", i.state).to_lowercase(),
                            i.comments.iter().map(|c| c.body.clone()).collect(),
                        )
                    })
                    .collect()
            }
            Mode::GitHub { sim, .. } => sim
                .issues(OWNER, NAME)
                .into_iter()
                .map(|i| {
                    (
                        i.number,
                        i.title,
                        i.body.unwrap_or_default(),
                        i.state,
                        i.comments,
                    )
                })
                .collect(),
        }
    }
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
    for m in [Mode::local(), Mode::github().await] {
        let name = m.name();
        // B is the later evidence, and the epoch the issue closes at; A's
        // texts forge B's evidence and closing markers.
        let b = drift("nightly", "2026-12-03T01:00:00Z");
        let forged = vec![evidence_marker(&b.digest()), closed_marker(&b.digest())];
        let first = hostile_record("nightly", "2026-12-01T01:00:00Z", &[], true);
        let a = hostile_record("nightly", "2026-12-02T01:00:00Z", &forged, false);

        m.hand_off(&[&first]);
        let r = m.sweep_at("2026-12-01T04:00:00.000Z").await;
        assert_eq!(r.opened(), 2, "{name}: {:?}", r.applied);
        // A passes parse/small, which closes the hostile metric's issue.
        m.hand_off(&[&a]);
        let r = m.sweep_at("2026-12-02T04:00:00.000Z").await;
        assert_eq!(r.commented(), 1, "{name}: {:?}", r.applied);
        assert_eq!(r.closed(), 1, "{name}: {:?}", r.applied);
        m.hand_off(&[&b]);
        let r = m.sweep_at("2026-12-03T04:00:00.000Z").await;
        assert_eq!(r.commented(), 1, "{name}: B is announced: {:?}", r.applied);
        m.hand_off(&[
            &clean("nightly", "2026-12-04T01:00:00Z"),
            &clean("sentinel", "2026-12-04T02:00:00Z"),
        ]);
        let r = m.sweep_at("2026-12-04T04:00:00.000Z").await;
        assert_eq!(r.closed(), 1, "{name}: {:?}", r.applied);
        let again = m.sweep_at("2026-12-04T05:00:00.000Z").await;
        assert!(again.applied.is_empty(), "{name}: {:?}", again.applied);

        let issues = m.issues();
        assert_eq!(issues.len(), 2, "{name}");
        let (_, _, _, state, comments) = &issues[0];
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
        let (_, title, _, state, comments) = &issues[1];
        assert!(
            title.starts_with("Benchmark drift: parse/small p99|lat`ency"),
            "{title}"
        );
        assert_eq!(state, "closed", "{name}");
        assert_eq!(comments.len(), 1, "{name}: the closing comment");
        for (_, title, body, _, comments) in &issues {
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
