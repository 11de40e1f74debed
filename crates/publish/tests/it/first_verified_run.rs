//! The first verified run (operations F9), end to end on a fresh simulated
//! repository, the real binaries where an operator would run them:
//!
//! 1. `provision apply` (the App's key and an owner's token) creates the
//!    labels, the environment with its default-branch policy and both
//!    rulesets; `provision verify` then passes, and names what it cannot
//!    see without the owner's token.
//! 2. `benchops-exec lane run` measures a demo subject and seals a record
//!    in local mode, signed by the lane's key (`keygen`, `--sign-key`);
//!    the manifest requires the lane to sign.
//! 3. The record and its signature are handed off as a
//!    `benchmark-result/*` ref; an unsigned copy on another ref is
//!    refused and left in place.
//! 4. The sweep runs with one installation token per phase.
//! 5. History holds the record, a receipt and the baseline pointer; the
//!    handoff ref is gone; every token is revoked.
//! 6. The sweep's watchdog and the health issue say the lane is healthy.
//! 7. A day later its slot is missed: the missed-run issue opens and the
//!    health issue says so.
//! 8. The next on-time record closes the missed-run issue.
//!
//! The lane's cron is set to fire at the minute the test starts, so that
//! the lane run is on time by the real clock; the sweeps look at the
//! repository through fixed clocks from there. A lane run cannot be made
//! to happen two days ahead, so step 8's record is the first one re-dated
//! and re-sealed.

use crate::binaries::{PUBLISH, exec_bin};
use crate::sim_client::sim_client;

use std::path::Path;
use std::process::{Command, Output};

use benchops_github::ManualClock;
use benchops_publish::github::{GitHubSweepOptions, sweep_github};
use benchops_publish::sweep::Clock;
use benchops_testkit::GitHubSim;
use benchops_testkit::sim::auth::TEST_APP_PRIVATE_KEY_PEM;
use jiff::{SignedDuration, Timestamp, ToSpan};
use serde_json::{Value, json};

const WORKFLOW: &[u8] = include_bytes!("../../../../workflows/benchmark-publication.yml");
const WORK: &str = include_str!("../../../../examples/lane/subject/work.sh");
const OWNER: &str = "acme";
const REPO: &str = "bench";
const MISSED: &str = "benchmark-missed-run";
const HEALTH: &str = "benchmark-health";

fn manifest(minute: i64, hour: i64) -> String {
    format!(
        r#"
schema = "schedule-manifest/v2"
repository = "acme/bench"
suite = ["bench.toml"]

[signing]
allowed_signers = "allowed_signers"
require = ["nightly"]

[[lanes]]
name = "nightly"
cron = "{minute} {hour} * * *"
timezone = "UTC"
completion_window_minutes = 60
cases = ["*"]
baseline = "last-clean"
[lanes.comparison]
metrics = ["work_s"]
relative_threshold = 0.08
min_absolute = 0.001
confirm_runs = 4
"#
    )
}

const INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "widgets"
command = ["sh", "-c", "cd \"$BENCHOPS_SUBJECT_DIR\" && exec sh ./work.sh {size}"]
repetitions = 4
warmup = 0
timeout_s = 30

[metrics]
json_lines = true

[[parameters]]
name = "size"
values = ["small"]
"#;

fn ok(what: &str, o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{what} failed ({:?}):\n{out}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    ok("git", &o);
}

/// Runs a binary off the async runtime, so that the simulator keeps
/// serving meanwhile.
async fn run(cmd: Command) -> Output {
    let mut cmd = cmd;
    tokio::task::spawn_blocking(move || cmd.output().expect("the binary runs"))
        .await
        .expect("joined")
}

fn provision(sim: &GitHubSim, root: &Path, sub: &str, owner_token: Option<&str>) -> Command {
    let mut c = Command::new(PUBLISH);
    c.args(["provision", sub, "--repo", "acme/bench", "--app-id"])
        .arg(sim.app_id().to_string())
        .arg("--app-key-file")
        .arg(root.join("app.pem"))
        .arg("--manifest")
        .arg(root.join("schedule.toml"))
        .args(["--handoff-refs", "--execution-actor", "DeployKey", "--json"])
        .env("GITHUB_API_URL", sim.base_url())
        .env_remove("BENCHOPS_APP_KEY_FILE");
    if let Some(t) = owner_token {
        c.args(["--token-env", "OWNER_TOKEN"]).env("OWNER_TOKEN", t);
    }
    c
}

fn sweep_opts(sim: &GitHubSim, root: &Path, now: Timestamp) -> GitHubSweepOptions {
    let clock = ManualClock::at_unix(u64::try_from(sim.now()).expect("after 1970"));
    let mut o = GitHubSweepOptions::new(
        "acme/bench",
        sim.app_id(),
        root.join("app.pem"),
        None,
        root.join("schedule.toml"),
    );
    o.handoff_refs = true;
    o.clock = Clock::fixed(now.to_string());
    o.missed_run_label = Some(MISSED.to_owned());
    o.health_issue_label = Some(HEALTH.to_owned());
    o.client = sim_client(sim, &clock);
    o
}

fn issue_with(sim: &GitHubSim, label: &str) -> Vec<benchops_testkit::sim::IssueSnapshot> {
    sim.issues(OWNER, REPO)
        .into_iter()
        .filter(|i| i.labels.iter().any(|l| l == label))
        .collect()
}

/// The health table's row for the lane.
fn health_row(sim: &GitHubSim) -> String {
    let h = issue_with(sim, HEALTH);
    assert_eq!(h.len(), 1, "one health issue: {h:#?}");
    let body = h[0].body.clone().unwrap_or_default();
    body.lines()
        .find(|l| l.starts_with("| `nightly` |"))
        .unwrap_or_else(|| panic!("no nightly row in {body}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_repository_is_provisioned_publishes_and_is_watched() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().to_path_buf();
    std::fs::write(root.join("app.pem"), TEST_APP_PRIVATE_KEY_PEM).expect("key");
    let start = Timestamp::now();
    let slot = start
        .round(
            jiff::TimestampRound::new()
                .smallest(jiff::Unit::Minute)
                .mode(jiff::RoundMode::Trunc),
        )
        .expect("rounds");
    let (minute, hour) = (
        slot.as_second().rem_euclid(3600) / 60,
        slot.as_second().rem_euclid(86_400) / 3600,
    );
    std::fs::write(root.join("schedule.toml"), manifest(minute, hour)).expect("manifest");
    std::fs::write(root.join("bench.toml"), INTENT).expect("intent");

    // A fresh repository: the App installed with its permissions on this
    // repository only, the workflow on the default branch, nothing else.
    let sim = GitHubSim::start().await;
    sim.create_repo(OWNER, REPO);
    let inst = sim.installation_id(OWNER).expect("installed");
    sim.set_installation_permissions(
        inst,
        &[
            ("actions", "read"),
            ("contents", "write"),
            ("issues", "write"),
            ("metadata", "read"),
        ],
    );
    sim.set_repository_selection(inst, "selected");
    sim.commit_files(
        OWNER,
        REPO,
        "main",
        &[(".github/workflows/benchmark-publication.yml", WORKFLOW)],
        "add the publication workflow",
    );
    // An owner's token (what `gh auth token` gives an admin).
    let owner = sim.mint_token(
        inst,
        &[
            ("administration", "write"),
            ("actions", "read"),
            ("contents", "read"),
            ("issues", "write"),
        ],
        Some(&[REPO]),
    );

    // 1. Before: verify fails and names what is missing.
    let before = run(provision(&sim, &root, "verify", Some(&owner))).await;
    assert_eq!(before.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&before.stdout).expect("report JSON");
    let failing: Vec<&str> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    assert_eq!(
        failing,
        [
            "environment",
            "history-ruleset",
            "handoff-ruleset",
            "labels"
        ]
    );
    let applied = run(provision(&sim, &root, "apply", Some(&owner))).await;
    let report: Value = serde_json::from_slice(&applied.stdout).expect("report JSON");
    assert_eq!(applied.status.code(), Some(0), "{report:#}");
    assert_eq!(report["passed"], true);
    let steps: Vec<&str> = report["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["outcome"].as_str().expect("outcome"))
        .collect();
    assert!(steps.iter().all(|s| *s == "done"), "{report:#}");
    let env = sim
        .environment(OWNER, REPO, "benchmark-publication")
        .expect("the environment exists");
    assert_eq!(env.deployment_branch_policy, Some((false, true)));
    assert_eq!(
        env.branch_policies,
        [("main".to_owned(), "branch".to_owned())]
    );
    assert_eq!(sim.rulesets(OWNER, REPO).len(), 2);
    ok(
        "provision verify",
        &run(provision(&sim, &root, "verify", Some(&owner))).await,
    );
    // With the App alone, GitHub hides who may bypass a ruleset: verify
    // says so instead of passing.
    let app_only = run(provision(&sim, &root, "verify", None)).await;
    assert_eq!(app_only.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&app_only.stdout).contains("does not show who may bypass it"),
        "{}",
        String::from_utf8_lossy(&app_only.stdout)
    );

    // 2. A lane run seals and signs a record in local mode, with no GitHub
    //    credential; the repository trusts the execution key for its lane.
    let key = root.join("nightly.key");
    let mut keygen = Command::new(exec_bin());
    keygen.args(["keygen", "--out"]).arg(&key);
    let public = ok("keygen", &run(keygen).await);
    std::fs::write(
        root.join("allowed_signers"),
        format!("nightly {}\n", public.trim()),
    )
    .expect("allowed_signers");
    let subject = root.join("widgets");
    std::fs::create_dir_all(&subject).expect("subject");
    std::fs::write(subject.join("work.sh"), WORK).expect("work.sh");
    std::fs::write(subject.join("speed.conf"), "SMALL_MS=20\nLARGE_MS=40\n").expect("speed");
    git(&subject, &["init", "--quiet"]);
    git(&subject, &["add", "-A"]);
    git(&subject, &["commit", "--quiet", "-m", "first"]);
    let state = root.join("exec");
    std::fs::create_dir_all(&state).expect("state dir");
    let mut init = Command::new(PUBLISH);
    init.args(["sweep", "--local"])
        .arg(&state)
        .arg("--manifest")
        .arg(root.join("schedule.toml"));
    ok("create the local history", &run(init).await);
    let mut lane = Command::new(exec_bin());
    lane.arg("--state")
        .arg(&state)
        .args(["lane", "run", "--manifest"])
        .arg(root.join("schedule.toml"))
        .args(["--lane", "nightly", "--history"])
        .arg(state.join("history.git"))
        .arg("--subject")
        .arg(&subject)
        .args(["--slot", &slot.to_string(), "--out"])
        .arg(state.join("sealed"))
        .arg("--sign-key")
        .arg(&key)
        .arg("--wait")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN");
    let out = ok("lane run", &run(lane).await);
    let digest = out
        .lines()
        .find_map(|l| l.strip_prefix("sealed sha256:"))
        .and_then(|l| l.split(':').next())
        .expect("a sealed record line")
        .to_owned();
    let name = format!("{digest}.json");
    let bytes = std::fs::read(state.join("sealed").join(&name)).expect("the sealed record");
    let sig_name = format!("{name}.sig");
    let sig = std::fs::read(state.join("sealed").join(&sig_name)).expect("the signature");

    // 3. The handoff: the execution identity pushes the record and its
    //    signature as a ref. An unsigned copy on another ref is refused.
    sim.push_ref(
        OWNER,
        REPO,
        &format!("heads/benchmark-result/nightly/{digest}"),
        &[
            (name.as_str(), bytes.as_slice()),
            (sig_name.as_str(), sig.as_slice()),
        ],
        "handoff",
    );
    sim.push_handoff_ref(OWNER, REPO, "nightly/unsigned", &name, &bytes);

    // 4. The sweep, with one token per phase.
    let now = Timestamp::now() + 1.minute();
    let report = sweep_github(&sweep_opts(&sim, &root, now))
        .await
        .expect("the sweep");
    assert_eq!(report.persisted.len(), 1);
    let refused: Vec<_> = report.handoff_refs.iter().filter(|r| !r.valid()).collect();
    assert_eq!(refused.len(), 1, "{:#?}", report.handoff_refs);
    assert!(refused[0].name.ends_with("nightly/unsigned"));
    assert!(
        refused[0]
            .issues
            .iter()
            .any(|i| i.reason.contains("unsigned")),
        "{:#?}",
        refused[0]
    );
    let tokens = sim.tokens();
    let phase_tokens: Vec<_> = tokens.iter().filter(|t| t.permissions.len() == 2).collect();
    assert!(phase_tokens.iter().all(|t| t.revoked), "{tokens:#?}");
    let writes: Vec<String> = phase_tokens
        .iter()
        .map(|t| {
            let w: Vec<&String> = t
                .permissions
                .iter()
                .filter(|(_, v)| *v == "write")
                .map(|(k, _)| k)
                .collect();
            format!("{w:?}")
        })
        .collect();
    assert_eq!(writes, ["[\"contents\"]", "[\"issues\"]"]);

    // 5. History, receipt, baseline; the handoff ref consumed.
    let files = sim.file_paths(OWNER, REPO, "heads/benchmark-history");
    assert!(
        files
            .iter()
            .any(|f| f.starts_with("results/") && f.ends_with(&name)),
        "{files:#?}"
    );
    assert!(
        files.iter().any(|f| f.starts_with("receipts/")),
        "{files:#?}"
    );
    assert!(
        files.iter().any(|f| f == "baselines/nightly.json"),
        "{files:#?}"
    );
    assert!(
        files
            .iter()
            .any(|f| f.starts_with("results/") && f.ends_with(&sig_name)),
        "the signature is kept beside the record: {files:#?}"
    );
    let left: Vec<String> = sim
        .refs(OWNER, REPO, "refs/heads/benchmark-result/")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        left,
        ["refs/heads/benchmark-result/nightly/unsigned"],
        "the refused ref stays"
    );

    // 6. Healthy: on time, no missed-run issue, the health issue says ok.
    let w = &report.watchdog[0];
    assert_eq!(w.lane, "nightly");
    assert_eq!(w.counts.on_time, 1, "{w:#?}");
    assert_eq!(w.consecutive_missed, 0);
    assert!(issue_with(&sim, MISSED).is_empty());
    assert!(
        health_row(&sim).starts_with("| `nightly` | ok |"),
        "{}",
        health_row(&sim)
    );

    // 7. The next day's slot is skipped: two hours after it, it is missed.
    let next_day = slot + SignedDuration::from_hours(24);
    sweep_github(&sweep_opts(
        &sim,
        &root,
        next_day + SignedDuration::from_mins(121),
    ))
    .await
    .expect("the sweep");
    let missed = issue_with(&sim, MISSED);
    assert_eq!(missed.len(), 1, "{missed:#?}");
    assert_eq!(missed[0].state, "open");
    assert_eq!(missed[0].title, "Missed benchmark runs: lane nightly");
    assert!(
        health_row(&sim).starts_with("| `nightly` | missing runs |"),
        "{}",
        health_row(&sim)
    );

    // 8. The day after, an on-time record: the missed-run issue closes.
    let day3 = slot + SignedDuration::from_hours(48);
    let mut v: Value = serde_json::from_slice(&bytes).expect("record JSON");
    v["slot"] = json!(day3.to_string());
    v["started_at"] = json!((day3 + SignedDuration::from_secs(5)).to_string());
    v["finished_at"] = json!((day3 + SignedDuration::from_mins(2)).to_string());
    let redated = benchops_testkit::records::seal(&v);
    let private = benchops::provenance::private_key(&std::fs::read_to_string(&key).expect("key"))
        .expect("the lane's key");
    let redated_sig = benchops::provenance::sign(redated.bytes(), &private).expect("signs");
    let redated_sig_name = format!("{}.sig", redated.file_name());
    sim.push_ref(
        OWNER,
        REPO,
        &format!("heads/benchmark-result/nightly/{}", redated.digest().hex()),
        &[
            (redated.file_name().as_str(), redated.bytes()),
            (redated_sig_name.as_str(), redated_sig.as_bytes()),
        ],
        "handoff",
    );
    sweep_github(&sweep_opts(
        &sim,
        &root,
        day3 + SignedDuration::from_mins(10),
    ))
    .await
    .expect("the sweep");
    let missed = issue_with(&sim, MISSED);
    assert_eq!(missed.len(), 1);
    assert_eq!(missed[0].state, "closed", "{missed:#?}");
    assert!(
        health_row(&sim).starts_with("| `nightly` | on time again, 1 missed |"),
        "{}",
        health_row(&sim)
    );
    assert_eq!(issue_with(&sim, HEALTH).len(), 1, "still one health issue");
}
