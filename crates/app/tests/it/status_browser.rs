//! The status page in a real browser: benchops-app serves `GET /status` on
//! a TCP socket over a `benchmark-history` repository of two lanes (one
//! record's drift summary and one metric name are hostile markup) and the
//! facts of two webhooks (a drift issue closed with a hostile title, a
//! publication run), and `tests/browser/status-page.mjs` loads the page in
//! headless Chromium: lanes, open drift, drawn trend charts, the hostile
//! texts shown as text with no script run, no console error, no request to
//! another origin, a 375 px wide screen without sideways scrolling, and
//! full-page screenshots under the target directory.
//!
//! Needs Node.js, `tests/browser/node_modules` and Chromium (`$CHROMIUM`,
//! else `/usr/bin/chromium`), which `bash scripts/test-deps.sh` installs;
//! without them the test fails and says so.

use crate::common;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use benchops::LaneName;
use benchops::manifest::BaselinePolicy;
use benchops::seal::SealedRecord;
use benchops_history::LocalHistory;
use benchops_testkit::records::{draft, seal, with_lane_slot};
use serde_json::{Value, json};

use common::{Options, setup, sign};

/// A drift summary, a metric name and an issue title that would run script
/// if the page passed them through as markup.
const HOSTILE_SUMMARY: &str = "wall_s rose <script>window.__pwned=1</script> & 'more'";
const HOSTILE_METRIC: &str = r#"<img src=x onerror="window.__pwned=2">"#;
const HOSTILE_TITLE: &str = "Drift <img src=//example.invalid/p.png onerror=window.__pwned=3> <svg onload=window.__pwned=4>";

/// How long the browser run may take, all passes together.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

const INSTALL_HINT: &str = "run `bash scripts/test-deps.sh` (it installs Chromium, Node.js and tests/browser/node_modules; CI runs it)";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Fails, naming what is missing, unless Node.js, the script's packages
/// and Chromium are there.
fn require_browser_deps(browser_dir: &Path) {
    let mut missing = Vec::new();
    match Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => missing.push(format!("`node --version` failed ({})", o.status)),
        Err(e) => missing.push(format!("node ({e})")),
    }
    let pkg = browser_dir.join("node_modules/playwright-core/package.json");
    if !pkg.is_file() {
        missing.push("tests/browser/node_modules (playwright-core)".to_owned());
    }
    let chromium = std::env::var_os("CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    if !chromium.is_file() {
        missing.push(format!("Chromium at {}", chromium.display()));
    }
    assert!(
        missing.is_empty(),
        "the browser test cannot run: missing {}; {INSTALL_HINT}",
        missing.join(", ")
    );
}

/// The `parse/large` case of a draft.
fn large(v: &mut Value) -> &mut Value {
    v["cases"]
        .as_array_mut()
        .expect("cases")
        .iter_mut()
        .find(|c| c["id"] == "parse/large")
        .expect("parse/large")
}

/// `parse/large · wall_s` as one sample.
fn set_wall_s(v: &mut Value, wall_s: f64) {
    let m = &mut large(v)["metrics"][0];
    m["samples"] = json!([wall_s]);
    m["summary"] =
        json!({"n": 1, "median": wall_s, "mad": 0.0, "min": wall_s, "max": wall_s, "ci": null});
}

/// The example draft on `lane` at `slot`, `parse/large` drifting at
/// `wall_s` with the hostile summary.
fn drift(lane: &str, slot: &str, wall_s: f64) -> Value {
    let mut v = with_lane_slot(draft(), lane, slot);
    set_wall_s(&mut v, wall_s);
    v["publication"]["drift_reports"][0]["summary"] = json!(HOSTILE_SUMMARY);
    v
}

/// A clean record: `parse/small` and `parse/large` pass (`parse/large` at
/// `wall_s`); it proposes itself as the lane's baseline.
fn clean(lane: &str, slot: &str, wall_s: f64) -> Value {
    let mut v = with_lane_slot(draft(), lane, slot);
    set_wall_s(&mut v, wall_s);
    let l = large(&mut v);
    l["outcome"] = json!("pass");
    l["drift"] = Value::Null;
    let cases: Vec<Value> = v["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| c["id"] == "parse/small" || c["id"] == "parse/large")
        .cloned()
        .collect();
    v["cases"] = Value::Array(cases);
    v["runs"] = json!({"total": 15, "succeeded": 15, "failed": 0, "incomplete": 0,
        "missing": 0, "stale": 0, "scheduler_inconsistent": 0});
    v["case_counts"] = json!({"total": 2, "pass": 2, "drift": 0, "skipped": 0, "error": 0});
    v["publication"] = json!({
        "drift_reports": [],
        "cleared": ["parse/large", "parse/small"],
        "baseline_proposal": {"lane": lane, "reason": "clean run"}
    });
    v
}

/// [`drift`] whose `parse/small` also has a metric with the hostile name.
fn drift_with_hostile_metric(lane: &str, slot: &str, wall_s: f64) -> Value {
    let mut v = drift(lane, slot, wall_s);
    let small = &mut v["cases"][0];
    assert_eq!(small["id"], "parse/small");
    let mut m = small["metrics"][0].clone();
    m["name"] = json!(HOSTILE_METRIC);
    small["metrics"].as_array_mut().expect("metrics").push(m);
    v
}

/// `nightly`: a clean record (its baseline), then three drifting ones;
/// `sentinel`: two drifting records. `parse/large · wall_s` is open drift
/// both lanes reproduce.
fn history(dir: &Path) -> PathBuf {
    let path = dir.join("history.git");
    let h = LocalHistory::open_or_init(&path).expect("history");
    let records: Vec<SealedRecord> = vec![
        seal(&clean("nightly", "2026-11-26T01:00:00Z", 0.25)),
        seal(&drift("nightly", "2026-11-27T01:00:00Z", 0.30)),
        seal(&drift_with_hostile_metric(
            "nightly",
            "2026-11-28T01:00:00Z",
            0.31,
        )),
        seal(&drift("nightly", "2026-11-29T01:00:00Z", 0.3105)),
        seal(&drift("sentinel", "2026-11-29T02:00:00Z", 0.32)),
        seal(&drift("sentinel", "2026-11-30T02:00:00Z", 0.33)),
    ];
    let policies: BTreeMap<LaneName, BaselinePolicy> = ["nightly", "sentinel"]
        .into_iter()
        .map(|l| (LaneName::new(l).expect("lane"), BaselinePolicy::LastClean))
        .collect();
    common::history::persist(&h, &records, &policies, "2026-11-30T03:00:00Z");
    path
}

/// Posts a signed delivery to the running server.
async fn deliver(http: &reqwest::Client, url: &str, event: &str, delivery: &str, body: &Value) {
    let body = serde_json::to_vec(body).expect("json");
    let r = http
        .post(format!("{url}/webhook"))
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header("x-hub-signature-256", sign(&body))
        .body(body)
        .send()
        .await
        .expect("webhook request");
    assert_eq!(
        r.status(),
        202,
        "{event}: {}",
        r.text().await.unwrap_or_default()
    );
}

/// `/status.json` once the worker has recorded both webhook facts.
async fn status_with_facts(http: &reqwest::Client, url: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = http
            .get(format!("{url}/status.json"))
            .send()
            .await
            .expect("status.json");
        assert_eq!(r.status(), 200);
        let j: Value = r.json().await.expect("status.json is JSON");
        let count = |k: &str| j[k]["items"].as_array().map_or(0, Vec::len);
        if count("decisions") == 1 && count("workflow_runs") == 1 {
            return j;
        }
        assert!(
            Instant::now() < deadline,
            "the webhook facts were not recorded: {j}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What the browser script printed and how it ended.
struct Run {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs the script, killed after [`BROWSER_TIMEOUT`].
fn run_script(mut cmd: Command) -> Run {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start node: {e}; {INSTALL_HINT}"));
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for node") {
            break s;
        }
        if start.elapsed() > BROWSER_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = err.join().unwrap_or_default();
            panic!("the browser test took longer than {BROWSER_TIMEOUT:?}; its stderr:\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Run {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        took: start.elapsed(),
    }
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_works_in_headless_chromium() {
    let root = workspace();
    let browser_dir = root.join("tests/browser");
    require_browser_deps(&browser_dir);

    let data = tempfile::tempdir().expect("tempdir");
    let s = setup(&Options {
        history: Some(history(data.path())),
        ..Options::default()
    });
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (state, worker) = benchops_app::build(cfg).expect("build");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(benchops_app::serve_on(
        listener,
        state,
        worker,
        async move {
            let _ = stopped.await;
        },
        Duration::from_secs(5),
    ));

    let http = reqwest::Client::new();
    deliver(
        &http,
        &url,
        "issues",
        "browser-issue",
        &json!({
            "action": "closed",
            "issue": {"number": 12, "title": HOSTILE_TITLE,
                      "labels": [{"name": "benchmark-drift"}],
                      "updated_at": "2026-11-30T03:30:00Z"},
            "repository": {"full_name": "octo/bench"},
            "sender": {"login": "octocat", "type": "User"}
        }),
    )
    .await;
    deliver(
        &http,
        &url,
        "workflow_run",
        "browser-run",
        &json!({
            "action": "completed",
            "workflow_run": {"id": 100, "run_attempt": 1, "path": ".github/workflows/publish.yml",
                             "event": "schedule", "status": "completed", "conclusion": "success",
                             "updated_at": "2026-11-30T03:20:00Z"},
            "repository": {"full_name": "octo/bench"}
        }),
    )
    .await;
    let status = status_with_facts(&http, &url).await;
    let mut lanes: Vec<&str> = status["lanes"]["items"]
        .as_array()
        .expect("lanes")
        .iter()
        .filter_map(|l| l["lane"].as_str())
        .collect();
    lanes.sort_unstable();
    assert_eq!(lanes, ["nightly", "sentinel"], "{status}");

    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-browser");
    let _ = std::fs::remove_dir_all(&out_dir);
    let mut cmd = Command::new("node");
    cmd.current_dir(&browser_dir)
        .arg("status-page.mjs")
        .arg(&url)
        .arg(&out_dir)
        .args(["--lane", "nightly", "--lane", "sentinel"])
        .args(["--drift", "parse/large", "--min-charts", "3"])
        .args(["--text", HOSTILE_SUMMARY, "--text", HOSTILE_METRIC])
        .args(["--text", HOSTILE_TITLE])
        .env("STATUS_PAGE_TIMEOUT_MS", "90000");
    let run = tokio::task::spawn_blocking(move || run_script(cmd))
        .await
        .expect("the browser run");
    let _ = stop.send(());
    server.await.expect("server task").expect("server");

    let line = run.stdout.lines().last().unwrap_or_default();
    let context = format!(
        "exit {} after {:?}\nstdout: {}\nstderr:\n{}",
        run.status, run.took, run.stdout, run.stderr
    );
    if run.status.code() == Some(2) {
        panic!("the browser did not start; {INSTALL_HINT}\n{context}");
    }
    assert!(run.status.success(), "the browser checks failed: {context}");
    let r: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("the script's last line is not JSON ({e}): {context}"));

    assert_eq!(r["ok"], json!(true), "{context}");
    assert_eq!(r["failures"], json!([]), "{context}");
    assert_eq!(r["status"], json!(200));
    assert_eq!(r["title"], json!("benchops status"));
    let mut shown = strings(&r["lanes"]);
    shown.sort_unstable();
    assert_eq!(shown, ["nightly", "sentinel"], "{context}");
    let drift = &r["drift"][0];
    assert_eq!(
        (drift["case"].as_str(), drift["metric"].as_str()),
        (Some("parse/large"), Some("wall_s")),
        "{context}"
    );
    assert_eq!(drift["standing"], json!("reproducing"), "{context}");
    assert_eq!(drift["lanes"], json!("nightly, sentinel"), "{context}");
    assert!(
        drift["latest"]
            .as_str()
            .is_some_and(|t| t.contains(HOSTILE_SUMMARY)),
        "{context}"
    );
    let charts = &r["charts"];
    assert!(charts["count"].as_u64() >= Some(3), "{context}");
    assert!(charts["withPoints"].as_u64() >= Some(3), "{context}");
    assert!(charts["minWidth"].as_f64() > Some(0.0), "{context}");
    assert!(charts["minHeight"].as_f64() > Some(0.0), "{context}");

    // Hostile text is text, and nothing ran, with or without the CSP.
    assert_eq!(r["scriptRan"], json!(false), "{context}");
    assert_eq!(r["noCsp"]["scriptRan"], json!(false), "{context}");
    let texts = r["texts"].as_array().expect("texts");
    assert_eq!(texts.len(), 3);
    assert!(texts.iter().all(|t| t["shown"] == json!(true)), "{context}");
    assert_eq!(r["noCsp"]["textsShown"], json!(3), "{context}");

    for pass in ["desktop", "mobile", "noCsp"] {
        let p = &r[pass];
        assert_eq!(p["status"], json!(200), "{pass}: {context}");
        assert_eq!(p["consoleErrors"], json!([]), "{pass}: {context}");
        assert_eq!(p["pageErrors"], json!([]), "{pass}: {context}");
        assert_eq!(p["foreignRequests"], json!([]), "{pass}: {context}");
    }
    let m = &r["mobile"];
    assert_eq!(m["innerWidth"], json!(375), "{context}");
    assert!(m["scrollWidth"].as_u64() <= Some(375), "{context}");
    assert_eq!(m["outside"], json!([]), "{context}");

    let shots = strings(&r["screenshots"]);
    assert_eq!(shots.len(), 2, "{context}");
    for shot in shots {
        let bytes = std::fs::read(shot).unwrap_or_else(|e| panic!("{shot}: {e}"));
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{shot} is a PNG");
        assert!(bytes.len() > 10_000, "{shot} is a real screenshot");
    }
    eprintln!(
        "status page checked in headless Chromium in {:?}; screenshots in {}\n{line}",
        run.took,
        out_dir.display()
    );
}
