//! The GitHub sweep end to end against the real GitHub simulator
//! (`benchops-testkit`) over loopback HTTP: persistence on
//! `benchmark-history` with the sealed bytes, one drift issue, one token
//! per phase (both revoked, the contents token never touching issues),
//! idempotent reruns, a crash after every request converging to the
//! uninterrupted result, a lost race on the ref, rate limits and 5xx, a
//! create-only conflict, the lane-aware lifecycle, and the CLI; handoff
//! refs (persisted, then deleted; invalid ones left in place; a crash at
//! every request converging); comment authorship (a person's copy of
//! a benchops marker does not count); and human decisions (a label a person
//! adds mid-sweep survives benchops adding labels, closes carry their state
//! reason, an issue a person opened with a copied drift marker is left
//! alone).
//!
//! The client's clock is a `ManualClock` that is also its sleeper, so
//! retry and pacing waits are instant and recorded.

use crate::sim_client::sim_client;

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use benchops::reconcile::{drift_marker, evidence_marker};
use benchops::seal::SealedRecord;
use benchops_github::{GitHubClient, GitSha, ManualClock, Repo, Token};
use benchops_publish::github::{GitHubSweepOptions, sweep_github};
use benchops_publish::history::record_path;
use benchops_publish::sweep::Applied;
use benchops_publish::sweep::Clock;
use benchops_publish::sweep::{
    Cause, Phase as SweepPhase, RefOutcome, SweepError as GitHubSweepError,
    SweepReport as GitHubSweepReport, render_summary,
};
use benchops_testkit::GitHubSim;
use benchops_testkit::records::{clean, drift, drift_both};
use benchops_testkit::sim::auth::TEST_APP_PRIVATE_KEY_PEM;
use benchops_testkit::sim::{AuthKind, Fault, FaultPlan, FaultRule};
use serde_json::{Value, json};

const OWNER: &str = "acme";
const NAME: &str = "bench";
const BRANCH: &str = "heads/benchmark-history";
const HANDOFF_REFS: &str = "refs/heads/benchmark-result/";

// ---------------------------------------------------------------------------
// Fixtures (the records of tests/sweep_local.rs)

const MANIFEST: &str = benchops_testkit::records::TWO_LANE_MANIFEST;

const LANES_MANIFEST: &str = r#"
schema = "schedule-manifest/v1"

[[lanes]]
name = "sentinel"
cron = "0 * * * *"
timezone = "UTC"
completion_window_minutes = 50
cases = ["parse/large"]
baseline = "pinned"

[[lanes]]
name = "comprehensive"
cron = "0 1 * * *"
timezone = "UTC"
completion_window_minutes = 180
cases = ["*"]
baseline = "last-clean"
"#;

// ---------------------------------------------------------------------------
// Environment

struct Env {
    sim: GitHubSim,
    _tmp: tempfile::TempDir,
    handoff: PathBuf,
    manifest: PathBuf,
    key: PathBuf,
}

async fn env_with(manifest: &str) -> Env {
    let sim = GitHubSim::start().await;
    sim.create_repo(OWNER, NAME);
    let tmp = tempfile::tempdir().expect("tempdir");
    let handoff = tmp.path().join("sealed");
    fs::create_dir_all(&handoff).expect("handoff dir");
    let manifest_path = tmp.path().join("schedule.toml");
    fs::write(&manifest_path, manifest).expect("manifest written");
    let key = tmp.path().join("app.pem");
    fs::write(&key, TEST_APP_PRIVATE_KEY_PEM).expect("key written");
    Env {
        sim,
        _tmp: tmp,
        handoff,
        manifest: manifest_path,
        key,
    }
}

async fn env() -> Env {
    env_with(MANIFEST).await
}

/// An issue as compared: number, title, body, state, sorted labels,
/// comment bodies.
type IssueView = (
    u64,
    String,
    Option<String>,
    String,
    Vec<String>,
    Vec<String>,
);

/// The repository as a comparison sees it: subtree ids of the records and
/// baseline pointers, how many receipts and commits; issues and comments;
/// labels.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Normalized {
    results_tree: Option<String>,
    baselines_tree: Option<String>,
    receipts: usize,
    commits: usize,
    issues: Vec<IssueView>,
    labels: Vec<(String, String)>,
}

impl Normalized {
    /// Every commit carries one receipt, and a crash after the ref update
    /// can leave one commit more than an uninterrupted run: this checks one
    /// receipt per commit and drops both counts, leaving records, baseline
    /// pointers, issues, comments and labels to compare.
    fn settled(mut self) -> Normalized {
        assert_eq!(self.receipts, self.commits, "one receipt per commit");
        self.receipts = 0;
        self.commits = 0;
        self
    }
}

impl Env {
    fn hand_off(&self, records: &[&SealedRecord]) {
        for r in records {
            fs::write(self.handoff.join(r.file_name()), r.bytes()).expect("handoff");
        }
    }

    /// Pushes each record as a handoff ref named after its digest, the way
    /// the execution environment does.
    fn push_refs(&self, records: &[&SealedRecord]) {
        for r in records {
            self.sim.push_handoff_ref(
                OWNER,
                NAME,
                &format!("nightly-{}", &r.digest().hex()[..12]),
                &r.file_name(),
                r.bytes(),
            );
        }
    }

    /// The handoff refs left, by name.
    fn handoff_refs(&self) -> Vec<String> {
        self.sim
            .refs(OWNER, NAME, HANDOFF_REFS)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    }

    /// Options with a fresh manual clock started at the simulator's time.
    fn opts(&self) -> (GitHubSweepOptions, ManualClock) {
        self.opts_with(true, false)
    }

    /// Options reading handoff refs only.
    fn opts_refs(&self) -> GitHubSweepOptions {
        self.opts_with(false, true).0
    }

    fn opts_with(&self, dir: bool, refs: bool) -> (GitHubSweepOptions, ManualClock) {
        let start = u64::try_from(self.sim.now()).expect("after 1970");
        let clock = ManualClock::at_unix(start);
        let mut o = GitHubSweepOptions::new(
            format!("{OWNER}/{NAME}"),
            self.sim.app_id(),
            &self.key,
            dir.then(|| self.handoff.clone()),
            &self.manifest,
        );
        o.handoff_refs = refs;
        o.clock = Clock::fixed("2026-12-02T00:00:00.000Z");
        o.trigger = "schedule".to_owned();
        o.history_base_url = "https://github.example/acme/bench/blob/benchmark-history".to_owned();
        o.client = sim_client(&self.sim, &clock);
        (o, clock)
    }

    async fn try_sweep(&self) -> Result<GitHubSweepReport, GitHubSweepError> {
        sweep_github(&self.opts().0).await
    }

    async fn sweep(&self) -> GitHubSweepReport {
        match self.try_sweep().await {
            Ok(r) => r,
            Err(e) => panic!("sweep failed: {e}: {}", e.cause),
        }
    }

    async fn try_sweep_refs(&self) -> Result<GitHubSweepReport, GitHubSweepError> {
        sweep_github(&self.opts_refs()).await
    }

    async fn sweep_refs(&self) -> GitHubSweepReport {
        match self.try_sweep_refs().await {
            Ok(r) => r,
            Err(e) => panic!("sweep failed: {e}: {}", e.cause),
        }
    }

    fn tip(&self) -> Option<String> {
        self.sim.ref_sha(OWNER, NAME, BRANCH)
    }

    fn file(&self, path: &str) -> Option<Vec<u8>> {
        self.sim.file(OWNER, NAME, "benchmark-history", path)
    }

    fn paths(&self) -> Vec<String> {
        self.sim.file_paths(OWNER, NAME, "benchmark-history")
    }

    async fn normalized(&self) -> Normalized {
        let (mut results_tree, mut baselines_tree, mut commits) = (None, None, 0);
        if let Some(tip) = self.tip() {
            let iid = self.sim.installation_id(OWNER).expect("installed");
            let token = self.sim.mint_token(iid, &[("contents", "read")], None);
            let client = GitHubClient::builder()
                .base_url(self.sim.base_url())
                .build()
                .expect("client")
                .with_token(Token::new(token));
            let repo = Repo::new(OWNER, NAME).expect("repo");
            let tree = client
                .get_tree_recursive(&repo, &GitSha::new(&tip).expect("sha"))
                .await
                .expect("tree lists");
            for e in tree.tree {
                match e.path.as_str() {
                    "results" => results_tree = Some(e.sha.as_str().to_owned()),
                    "baselines" => baselines_tree = Some(e.sha.as_str().to_owned()),
                    _ => {}
                }
            }
            let mut at = Some(tip);
            while let Some(c) = at {
                commits += 1;
                at = self
                    .sim
                    .commit(OWNER, NAME, &c)
                    .expect("commit exists")
                    .parents
                    .first()
                    .cloned();
            }
        }
        let mut labels: Vec<(String, String)> = self
            .sim
            .labels(OWNER, NAME)
            .into_iter()
            .map(|l| (l.name, l.color))
            .collect();
        labels.sort();
        Normalized {
            results_tree,
            baselines_tree,
            receipts: self
                .paths()
                .iter()
                .filter(|p| p.starts_with("receipts/"))
                .count(),
            commits,
            issues: self
                .sim
                .issues(OWNER, NAME)
                .into_iter()
                .map(|i| {
                    let mut l = i.labels;
                    l.sort();
                    (i.number, i.title, i.body, i.state, l, i.comments)
                })
                .collect(),
            labels,
        }
    }
}

fn token_ids(sim: &GitHubSim) -> (Vec<u64>, Vec<u64>) {
    let tokens = sim.tokens();
    let with = |perm: &str| -> Vec<u64> {
        tokens
            .iter()
            .filter(|t| t.permissions.get(perm).map(String::as_str) == Some("write"))
            .map(|t| t.id)
            .collect()
    };
    (with("contents"), with("issues"))
}

fn ops_by_token(sim: &GitHubSim, token: u64) -> Vec<&'static str> {
    sim.requests()
        .into_iter()
        .filter(
            |r| matches!(r.auth, AuthKind::InstallationToken { token_id, .. } if token_id == token),
        )
        .filter_map(|r| r.operation)
        .collect()
}

// ---------------------------------------------------------------------------
// 1 and 2: a full sweep, then a rerun

#[tokio::test]
async fn a_full_sweep_persists_sealed_bytes_opens_one_issue_and_uses_one_token_per_phase() {
    let e = env().await;
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    e.hand_off(&[&r1]);
    // A tampered handoff: quarantined, never persisted.
    let victim = clean("nightly", "2026-12-01T03:00:00Z");
    let mut bad = victim.bytes().to_vec();
    let i = bad.len() / 2;
    bad[i] = if bad[i] == b'1' { b'2' } else { b'1' };
    fs::write(e.handoff.join(victim.file_name()), &bad).expect("tampered handoff");

    let report = e.sweep().await;
    assert_eq!(report.quarantined(), 1);
    assert_eq!((report.new_records(), report.already_present()), (1, 0));
    assert_eq!(report.persist_attempts, 1);
    let q = e.handoff.join("quarantine");
    assert!(q.join(victim.file_name()).is_file());
    assert!(q.join(format!("{}.why.txt", victim.file_name())).is_file());

    // History: the sealed bytes at the record path; a receipt; nothing of
    // the tampered handoff.
    let path = record_path(&r1).expect("path");
    assert_eq!(e.file(&path).as_deref(), Some(r1.bytes()));
    let paths = e.paths();
    assert!(!paths.iter().any(|p| p.contains(&victim.digest().hex())));
    let receipts: Vec<&String> = paths
        .iter()
        .filter(|p| p.starts_with("receipts/2026/12/"))
        .collect();
    assert_eq!(receipts.len(), 1, "{paths:?}");
    assert_eq!(report.receipt_path.as_ref(), Some(receipts[0]));
    let receipt: Value =
        serde_json::from_slice(&e.file(receipts[0]).expect("receipt")).expect("receipt JSON");
    assert_eq!(receipt["sweep"]["trigger"], "schedule");
    assert_eq!(receipt["persisted"][0]["path"], json!(path));
    assert_eq!(receipt["skipped"].as_array().map(Vec::len), Some(1));
    // The receipt's metrics cover every request sent before it was built:
    // those before the tree that carries it.
    let before_tree = e
        .sim
        .requests()
        .iter()
        .take_while(|r| r.operation != Some("git/create-tree"))
        .count();
    assert_eq!(receipt["requests"]["requests"], json!(before_tree));
    assert_eq!(
        receipt["requests"]["request_ids"].as_array().map(Vec::len),
        Some(before_tree)
    );
    assert!(receipt["requests"]["rate_limit_remaining"].is_u64());
    assert_eq!(
        receipt["history"]["parent"],
        Value::Null,
        "the branch was created"
    );
    assert!(
        e.sim.ref_sha(OWNER, NAME, "heads/main").is_some(),
        "main untouched"
    );

    // One drift issue with labels.
    let issues = e.sim.issues(OWNER, NAME);
    assert_eq!(issues.len(), 1);
    let issue = &issues[0];
    assert_eq!(issue.state, "open");
    assert!(issue.labels.contains(&"benchmark-drift".to_owned()));
    assert!(issue.labels.contains(&"lane:nightly".to_owned()));
    let body = issue.body.as_deref().expect("body");
    let key = benchops::reconcile::DriftKey::new(
        benchops::CaseId::new("parse/large").expect("case"),
        "wall_s",
    );
    assert!(body.contains(&drift_marker(&key)));
    assert!(
        body.contains("https://github.example/acme/bench/blob/benchmark-history/results/nightly/")
    );
    assert!(
        issue.comments.is_empty(),
        "the opening announces the evidence"
    );
    let label_names: Vec<String> = e
        .sim
        .labels(OWNER, NAME)
        .into_iter()
        .map(|l| l.name)
        .collect();
    for l in [
        "benchmark-drift",
        "drift-accepted",
        "lane:nightly",
        "lane:sentinel",
    ] {
        assert!(label_names.contains(&l.to_owned()), "{label_names:?}");
    }

    // Tokens: one per phase, both revoked; the contents token never touched
    // issues, and the issues token never wrote git data.
    let (contents, issues_tok) = token_ids(&e.sim);
    assert_eq!(
        (contents.len(), issues_tok.len()),
        (1, 1),
        "{:?}",
        e.sim.tokens()
    );
    assert_eq!(e.sim.tokens().len(), 2);
    assert!(e.sim.tokens().iter().all(|t| t.revoked));
    assert!(
        e.sim
            .tokens()
            .iter()
            .all(|t| t.repositories == Some(vec![NAME.to_owned()]))
    );
    let c_ops = ops_by_token(&e.sim, contents[0]);
    assert!(c_ops.contains(&"git/update-ref") || c_ops.contains(&"git/create-ref"));
    assert!(
        c_ops.iter().all(|op| !op.starts_with("issues/")),
        "contents token used for {c_ops:?}"
    );
    let i_ops = ops_by_token(&e.sim, issues_tok[0]);
    assert!(i_ops.contains(&"issues/create"));
    assert!(
        i_ops
            .iter()
            .all(|op| !op.starts_with("git/") && !op.starts_with("repos/")),
        "{i_ops:?}"
    );
    assert_eq!(c_ops.last(), Some(&"apps/revoke-installation-access-token"));
    assert_eq!(i_ops.last(), Some(&"apps/revoke-installation-access-token"));
    assert!(report.tokens.iter().all(|t| t.revoked));
    // Only the expected 404s: the missing branch, missing labels.
    for r in e.sim.requests() {
        let ok = r.status.is_some_and(|s| s < 400)
            || (r.status == Some(404)
                && matches!(r.operation, Some("git/get-ref" | "issues/get-label")));
        assert!(ok, "{} {} -> {:?}", r.method, r.path, r.status);
    }

    let summary = render_summary(&report);
    assert!(summary.contains("1 new record(s)"), "{summary}");
    assert!(summary.contains("QUARANTINED"), "{summary}");
    assert!(
        summary.contains("token: contents phase, revoked"),
        "{summary}"
    );

    // 2. A rerun (another time; the valid handoff was consumed, the
    // quarantined one is still there) has nothing new: no commit, no issue,
    // no comment.
    let tip = e.tip();
    let before = e.sim.issues(OWNER, NAME);
    e.sim.clear_requests();
    let again = e.sweep().await;
    assert_eq!((again.new_records(), again.already_present()), (0, 0));
    assert_eq!(again.quarantined(), 1);
    assert!(again.applied.is_empty(), "{:?}", again.applied);
    assert_eq!(again.commit, None, "no receipt-only commit");
    assert_eq!(e.tip(), tip);
    let receipt: Value = serde_json::from_slice(&again.receipt).expect("receipt JSON");
    assert_eq!(receipt["history"]["parent"].as_str(), tip.as_deref());
    assert_eq!(e.sim.issues(OWNER, NAME), before);
    let writes: Vec<&str> = e
        .sim
        .requests()
        .iter()
        .filter_map(|r| r.operation)
        .filter(|op| op.starts_with("issues/create") || *op == "issues/update")
        .collect();
    assert!(writes.is_empty(), "{writes:?}");
    assert!(e.sim.tokens().iter().all(|t| t.revoked));
}

// ---------------------------------------------------------------------------
// 3. Crash after any request

/// A repository after a first sweep (`n1`: one open issue), with the
/// second sweep's handoffs in place: new nightly evidence on both cases (a
/// comment and a body update on #1, a new issue for parse/small), a clean
/// sentinel record (a baseline pointer) and sentinel evidence (a lane
/// label and a comment on #1).
async fn crash_env() -> Env {
    let e = env().await;
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    e.sweep().await;
    e.hand_off(&[
        &drift_both("nightly", "2026-12-02T01:00:00Z"),
        &clean("sentinel", "2026-12-02T02:00:00Z"),
        &drift("sentinel", "2026-12-02T03:00:00Z"),
    ]);
    e
}

#[tokio::test]
async fn a_crash_after_any_request_converges_to_the_uninterrupted_result() {
    let reference = crash_env().await;
    reference.sim.clear_requests();
    let report = reference.sweep().await;
    let total = reference.sim.requests().len();
    let want = reference.normalized().await;
    assert!(report.applied.len() >= 4, "{:?}", report.applied);
    assert_eq!(want.issues.len(), 2);
    assert!(want.baselines_tree.is_some());
    assert_eq!((want.receipts, want.commits), (2, 2));

    let started = std::time::Instant::now();
    let mut phases = std::collections::BTreeSet::new();
    for k in 1..total {
        let e = crash_env().await;
        e.sim.set_fault_plan(
            FaultPlan::new()
                .rule(FaultRule::nth_request(k as u64 + 1, Fault::DropConnection).forever()),
        );
        let err = e
            .try_sweep()
            .await
            .expect_err("every request after the k-th is dropped");
        assert!(err.is_retryable(), "k = {k}: {err}");
        assert!(err.to_string().contains("rerun to converge"), "{err}");
        if err.phase == SweepPhase::Reconcile {
            assert!(
                err.progress.persisted && err.progress.commit.is_some(),
                "{err}"
            );
        }
        phases.insert(format!("{:?}", err.phase));
        e.sim.clear_faults();
        let rerun = e.sweep().await;
        let got = e.normalized().await;
        // Receipts carry each run's times; records, pointers, issues and
        // comments are the same.
        assert!(got.receipts <= want.receipts + 1, "k = {k}: {got:?}");
        assert_eq!(
            got.settled(),
            want.clone().settled(),
            "k = {k}: stopped with {err}; rerun {rerun:?}"
        );
        // And a third sweep has nothing left to do but record its receipt.
        let third = e.sweep().await;
        assert!(
            third.new_records() == 0
                && third.baseline_changes.is_empty()
                && third.applied.is_empty(),
            "k = {k}"
        );
    }
    assert!(
        phases.contains("Persist") && phases.contains("Reconcile"),
        "{phases:?}"
    );
    eprintln!(
        "crash loop: {} crash points in {:?}",
        total - 1,
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------
// 4. Races and faults

#[tokio::test]
async fn a_ref_moved_under_the_sweep_is_retried_on_the_new_tip() {
    let e = env().await;
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    e.hand_off(&[&r1]);
    e.sweep().await;
    let r2 = clean("nightly", "2026-12-02T01:00:00Z");
    e.hand_off(&[&r2]);
    e.sim
        .set_fault_plan(FaultPlan::new().rule(FaultRule::on_operation(
            "git/update-ref",
            Fault::ConcurrentRefMove,
        )));
    let report = e.sweep().await;
    assert_eq!(report.persist_attempts, 2);
    let tip = e.tip().expect("branch");
    assert_eq!(report.commit.as_deref(), Some(tip.as_str()));
    let parent = e.sim.commit(OWNER, NAME, &tip).expect("tip").parents[0].clone();
    let moved = e.sim.commit(OWNER, NAME, &parent).expect("parent");
    assert!(
        moved.author.name.contains("concurrent"),
        "{:?}",
        moved.author
    );
    assert_eq!(
        e.file(&record_path(&r2).expect("path")).as_deref(),
        Some(r2.bytes())
    );
    assert_eq!(
        e.file(&record_path(&r1).expect("path")).as_deref(),
        Some(r1.bytes())
    );
    let updates: Vec<Option<u16>> = e
        .sim
        .requests()
        .iter()
        .filter(|r| r.operation == Some("git/update-ref"))
        .map(|r| r.status)
        .collect();
    assert_eq!(updates, [Some(422), Some(200)]);
    let baseline: Value =
        serde_json::from_slice(&e.file("baselines/nightly.json").expect("pointer")).expect("JSON");
    assert_eq!(baseline["record"], json!(r2.digest().to_string()));
}

#[tokio::test]
async fn a_secondary_rate_limit_is_waited_out_and_a_5xx_on_a_get_is_retried() {
    let e = env().await;
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    e.sim.set_fault_plan(
        FaultPlan::new()
            .rule(FaultRule::on_operation(
                "git/get-ref",
                Fault::SecondaryRateLimit {
                    status: 403,
                    retry_after: 7,
                },
            ))
            .rule(FaultRule::on_operation(
                "issues/list-for-repo",
                Fault::Status(502),
            )),
    );
    let (opts, clock) = e.opts();
    let report = sweep_github(&opts).await.expect("the sweep converges");
    assert!(
        clock.sleeps().contains(&Duration::from_secs(7)),
        "{:?}",
        clock.sleeps()
    );
    let total = &report.requests;
    assert!(
        total.retries >= 2 && total.retry_waited_ms >= 7000,
        "{total:?}"
    );
    let statuses = |op: &str| -> Vec<Option<u16>> {
        e.sim
            .requests()
            .iter()
            .filter(|r| r.operation == Some(op))
            .map(|r| r.status)
            .collect()
    };
    assert_eq!(statuses("git/get-ref")[..2], [Some(403), Some(404)]);
    assert_eq!(statuses("issues/list-for-repo"), [Some(502), Some(200)]);
    assert_eq!(e.sim.issues(OWNER, NAME).len(), 1);
}

#[tokio::test]
async fn other_bytes_at_a_record_path_stop_the_sweep_before_anything_is_written() {
    let e = env().await;
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    let path = record_path(&r1).expect("path");
    e.sim.commit_files(
        OWNER,
        NAME,
        "benchmark-history",
        &[(path.as_str(), b"{\"not\":\"the record\"}")],
        "someone else\n",
    );
    let tip = e.tip();
    e.hand_off(&[&r1]);
    let err = e.try_sweep().await.expect_err("a create-only conflict");
    assert_eq!(err.phase, SweepPhase::Persist);
    assert!(
        matches!(err.cause.as_ref(), Cause::Conflict { path: p, .. } if *p == path),
        "{err}"
    );
    assert!(!err.is_retryable());
    assert!(err.to_string().contains("nothing persisted"), "{err}");
    assert_eq!(e.tip(), tip, "nothing was written");
    assert!(e.sim.issues(OWNER, NAME).is_empty());
    let tokens = e.sim.tokens();
    assert_eq!(tokens.len(), 1, "no issues-phase token");
    assert!(tokens[0].revoked, "revoked on failure too");
}

#[tokio::test]
async fn two_sweeps_racing_on_the_same_handoffs_converge() {
    let reference = crash_env().await;
    reference.sweep().await;
    let want = reference.normalized().await;

    let e = crash_env().await;
    let (a, b) = tokio::join!(e.try_sweep(), e.try_sweep());
    // The ref race is retried inside each sweep; an issue both open is a
    // duplicate the next sweep closes.
    assert!(a.is_ok() || b.is_ok(), "{a:?} {b:?}");
    e.sweep().await;
    let got = e.normalized().await;
    assert_eq!(got.receipts, got.commits, "one receipt per commit");
    assert_eq!(
        (&got.results_tree, &got.baselines_tree, &got.labels),
        (&want.results_tree, &want.baselines_tree, &want.labels)
    );
    // One open issue per key, with the same body, evidence and comments as
    // the uninterrupted run; an issue both sweeps opened is closed as a
    // duplicate by the next sweep. GitHub has no compare-and-swap on issues,
    // so two sweeps that plan from the same state can both post one comment;
    // the next sweep deletes the later copy, so the comments are the same
    // list, in the same order, with no duplicate.
    for w in &want.issues {
        let same: Vec<&IssueView> = got.issues.iter().filter(|g| g.1 == w.1).collect();
        let tracking: Vec<&&IssueView> = same.iter().filter(|g| g.3 == "open").collect();
        assert_eq!(tracking.len(), 1, "{:#?}", got.issues);
        assert_eq!((&tracking[0].2, &tracking[0].4), (&w.2, &w.4));
        assert_eq!(tracking[0].5, w.5, "comments as a list");
        let unique: std::collections::BTreeSet<&String> = tracking[0].5.iter().collect();
        assert_eq!(unique.len(), tracking[0].5.len(), "no duplicate comment");
    }
    let again = e.sweep().await;
    assert!(again.applied.is_empty() && again.new_records() == 0);
}

// ---------------------------------------------------------------------------
// 5. Lane-aware lifecycle

#[tokio::test]
async fn lanes_a_sentinel_pass_keeps_a_comprehensive_drift_open_both_lanes_close_it() {
    let e = env_with(LANES_MANIFEST).await;
    let c1 = drift("comprehensive", "2026-12-01T01:00:00Z");
    e.hand_off(&[&c1]);
    let r = e.sweep().await;
    assert_eq!(r.applied.len(), 1, "{:?}", r.applied);
    let issues = e.sim.issues(OWNER, NAME);
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].state, "open");
    assert!(issues[0].labels.contains(&"lane:comprehensive".to_owned()));

    // The sentinel covers parse/large and clears it: not enough.
    let s2 = clean("sentinel", "2026-12-01T02:00:00Z");
    e.hand_off(&[&s2]);
    let r = e.sweep().await;
    assert!(
        r.baseline_changes.is_empty(),
        "the sentinel's baseline is pinned"
    );
    let issues = e.sim.issues(OWNER, NAME);
    assert_eq!(issues[0].state, "open", "{:?}", r.applied);
    assert!(issues[0].comments.is_empty());

    // The comprehensive lane clears it too: closed, with a comment listing
    // both clearing records.
    let c3 = clean("comprehensive", "2026-12-02T01:00:00Z");
    e.hand_off(&[&c3]);
    let r = e.sweep().await;
    assert_eq!(r.baseline_changes.len(), 1);
    let issues = e.sim.issues(OWNER, NAME);
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].state, "closed", "{:?}", r.applied);
    assert_eq!(issues[0].state_reason.as_deref(), Some("completed"));
    assert_eq!(issues[0].comments.len(), 1);
    let closing = &issues[0].comments[0];
    assert!(closing.contains("<!-- benchops:closed epoch="));
    for rec in [&s2, &c3] {
        assert!(closing.contains(&rec.digest().to_string()), "{closing}");
    }
    // Stays closed (the rerun has nothing new to write).
    let r = e.sweep().await;
    assert!(
        r.applied.is_empty() && r.new_records() == 0 && r.baseline_changes.is_empty(),
        "{:?}",
        r.applied
    );
}

// ---------------------------------------------------------------------------
// 6. Handoff refs

#[tokio::test]
async fn handoff_refs_are_persisted_then_deleted_and_invalid_ones_stay_reported() {
    let e = env().await;
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    let r2 = clean("sentinel", "2026-12-01T02:00:00Z");
    e.push_refs(&[&r1, &r2]);
    // A tampered record under its original name: fails verification.
    let victim = clean("nightly", "2026-12-01T03:00:00Z");
    let mut bad = victim.bytes().to_vec();
    let i = bad.len() / 2;
    bad[i] = if bad[i] == b'1' { b'2' } else { b'1' };
    e.sim
        .push_handoff_ref(OWNER, NAME, "tampered", &victim.file_name(), &bad);
    // The right record in the wrong layout: two files.
    let stray = drift("sentinel", "2026-12-01T04:00:00Z");
    e.sim.push_ref(
        OWNER,
        NAME,
        &format!("{HANDOFF_REFS}two-files"),
        &[
            (stray.file_name().as_str(), stray.bytes()),
            ("README.md", b"notes"),
        ],
        "two files\n",
    );
    let invalid = [
        format!("{HANDOFF_REFS}tampered"),
        format!("{HANDOFF_REFS}two-files"),
    ];
    let before: Vec<(String, String)> = e.sim.refs(OWNER, NAME, HANDOFF_REFS);
    assert_eq!(before.len(), 4);

    let report = e.sweep_refs().await;
    assert_eq!(report.handoff, None);
    assert_eq!((report.new_records(), report.already_present()), (2, 0));
    assert_eq!(report.quarantined(), 2);
    assert_eq!(report.refs_left(), 0);
    for r in [&r1, &r2] {
        let path = record_path(r).expect("path");
        assert_eq!(e.file(&path).as_deref(), Some(r.bytes()), "{path}");
    }
    let paths = e.paths();
    for r in [&victim, &stray] {
        assert!(
            !paths.iter().any(|p| p.contains(&r.digest().hex())),
            "{paths:?}"
        );
    }
    // Only the consumed refs are gone; the invalid ones stay as they were.
    assert_eq!(e.handoff_refs(), invalid);
    for (name, sha) in &before {
        if invalid.contains(name) {
            assert_eq!(
                e.sim.ref_sha(OWNER, NAME, name).as_deref(),
                Some(sha.as_str())
            );
        }
    }
    assert_eq!(report.handoff_refs.len(), 4);
    for h in &report.handoff_refs {
        if invalid.contains(&h.name) {
            assert!(!h.valid(), "{h:?}");
            assert_eq!(h.outcome, RefOutcome::Quarantined);
        } else {
            assert!(h.valid(), "{h:?}");
            assert_eq!(h.outcome, RefOutcome::Deleted);
        }
    }
    let find = |suffix: &str| {
        report
            .handoff_refs
            .iter()
            .find(|h| h.name.ends_with(suffix))
            .expect("reported")
    };
    let two = find("two-files");
    assert_eq!(two.issues[0].kind, "handoff-layout");
    assert!(
        two.issues[0].reason.contains("exactly one file"),
        "{:?}",
        two.issues
    );
    let tampered = find("tampered");
    assert_eq!(tampered.file.as_deref(), Some(victim.file_name().as_str()));
    assert!(!tampered.issues.is_empty());

    // The receipt names every ref at its commit, and skips the invalid ones.
    let receipt_path = report.receipt_path.as_ref().expect("a receipt");
    let receipt: Value =
        serde_json::from_slice(&e.file(receipt_path).expect("receipt")).expect("receipt JSON");
    let sources: Vec<&str> = receipt["validated"]
        .as_array()
        .expect("validated")
        .iter()
        .map(|v| v["source"].as_str().expect("source"))
        .collect();
    assert_eq!(sources.len(), 4);
    for (name, sha) in &before {
        assert!(
            sources.contains(&format!("{name}@{sha}").as_str()),
            "{sources:?}"
        );
    }
    let skipped = receipt["skipped"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 2);
    assert!(
        skipped[0]["skip_reason"]
            .as_str()
            .is_some_and(|r| r.contains("left in place"))
    );

    // The contents token deleted the refs, after the branch moved; the
    // issues token never touched git data.
    let (contents, issues_tok) = token_ids(&e.sim);
    let c_ops = ops_by_token(&e.sim, contents[0]);
    let moved = c_ops
        .iter()
        .position(|op| *op == "git/create-ref")
        .expect("the branch was created");
    let deletes: Vec<usize> = c_ops
        .iter()
        .enumerate()
        .filter(|(_, op)| **op == "git/delete-ref")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(deletes.len(), 2, "{c_ops:?}");
    assert!(deletes.iter().all(|d| *d > moved), "{c_ops:?}");
    assert!(c_ops.contains(&"git/list-matching-refs"));
    let i_ops = ops_by_token(&e.sim, issues_tok[0]);
    assert!(i_ops.iter().all(|op| !op.starts_with("git/")), "{i_ops:?}");
    assert_eq!(e.sim.issues(OWNER, NAME).len(), 1, "r1 drifts");

    let summary = render_summary(&report);
    assert!(
        summary.contains(&format!("QUARANTINED {HANDOFF_REFS}tampered")),
        "{summary}"
    );
    assert!(summary.contains("NOT deleted"), "{summary}");
    assert!(
        summary.contains("deleted (its record is in history)"),
        "{summary}"
    );

    // A rerun: nothing new, nothing deleted, the invalid refs still there.
    let tip = e.tip();
    e.sim.clear_requests();
    let again = e.sweep_refs().await;
    assert_eq!(again.commit, None, "nothing new: no commit");
    assert_eq!(again.new_records(), 0);
    assert_eq!(again.quarantined(), 2);
    assert!(again.applied.is_empty());
    assert_eq!(e.tip(), tip);
    assert_eq!(e.handoff_refs(), invalid);
    assert!(
        !e.sim
            .requests()
            .iter()
            .any(|r| r.operation == Some("git/delete-ref")),
        "an invalid ref is never deleted"
    );

    // A record handed off both as a file and as a ref is persisted once,
    // and its ref is deleted.
    let r3 = drift("nightly", "2026-12-02T01:00:00Z");
    e.hand_off(&[&r3]);
    e.push_refs(&[&r3]);
    let (both, _) = e.opts_with(true, true);
    let report = sweep_github(&both).await.expect("sweep");
    assert_eq!((report.new_records(), report.already_present()), (1, 0));
    assert_eq!(report.handoffs.len(), 1);
    assert_eq!(e.handoff_refs(), invalid);
}

/// A ref whose file is named for another digest fails its own
/// verification, so it is quarantined and never deleted, even when its
/// bytes are a record that is in history (persisted from another ref in
/// the same sweep, or already there on the next).
#[tokio::test]
async fn a_ref_named_for_another_digest_is_never_deleted_even_when_its_bytes_are_in_history() {
    let e = env().await;
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    let other = clean("nightly", "2026-12-01T03:00:00Z");
    e.push_refs(&[&r1]);
    e.sim
        .push_handoff_ref(OWNER, NAME, "misnamed", &other.file_name(), r1.bytes());
    let misnamed = format!("{HANDOFF_REFS}misnamed");
    let sha = e.sim.ref_sha(OWNER, NAME, &misnamed).expect("pushed");

    for round in ["the sweep that persists the record", "a rerun"] {
        e.sim.clear_requests();
        let report = e.sweep_refs().await;
        let h = report
            .handoff_refs
            .iter()
            .find(|h| h.name == misnamed)
            .expect("reported");
        assert!(!h.valid(), "{round}: {h:?}");
        assert_eq!(h.digest, Some(r1.digest()), "{round}: the bytes are r1's");
        assert_eq!(h.outcome, RefOutcome::Quarantined, "{round}: {h:?}");
        assert_eq!(report.quarantined(), 1, "{round}");
        assert_eq!(e.handoff_refs(), std::slice::from_ref(&misnamed), "{round}");
        assert_eq!(
            e.sim.ref_sha(OWNER, NAME, &misnamed).as_deref(),
            Some(sha.as_str()),
            "{round}"
        );
        let deletes = e
            .sim
            .requests()
            .iter()
            .filter(|r| r.operation == Some("git/delete-ref"))
            .count();
        let expected = usize::from(round.starts_with("the sweep"));
        assert_eq!(deletes, expected, "{round}: only r1's own ref is deleted");
    }
    let path = record_path(&r1).expect("path");
    assert_eq!(e.file(&path).as_deref(), Some(r1.bytes()));
}

#[tokio::test]
async fn a_ref_pushed_again_before_its_deletion_is_left_for_the_next_sweep() {
    let e = env().await;
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    let r2 = clean("nightly", "2026-12-02T01:00:00Z");
    e.push_refs(&[&r1, &r2]);
    let name1 = format!("{HANDOFF_REFS}nightly-{}", &r1.digest().hex()[..12]);
    let name2 = format!("{HANDOFF_REFS}nightly-{}", &r2.digest().hex()[..12]);
    // The sweep re-reads each consumed ref before deleting it. The first
    // of these re-reads (the second get-ref of the sweep; the first reads
    // the history branch) is held up for a second, long enough for the
    // test to push r1's ref again with another record and to delete r2's
    // ref as someone else would, once the branch has moved.
    e.sim.set_fault_plan(FaultPlan::new().rule(
        FaultRule::on_operation("git/get-ref", Fault::Latency(Duration::from_secs(1))).nth(2),
    ));
    let other = clean("sentinel", "2026-12-03T01:00:00Z");
    let pushed = async {
        while e.tip().is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let to = e.sim.push_handoff_ref(
            OWNER,
            NAME,
            &name1[HANDOFF_REFS.len()..],
            &other.file_name(),
            other.bytes(),
        );
        e.sim.delete_ref(OWNER, NAME, &name2);
        to
    };
    let (report, moved_to) = tokio::join!(e.sweep_refs(), pushed);
    let h1 = report
        .handoff_refs
        .iter()
        .find(|h| h.name == name1)
        .expect("reported");
    assert_eq!(
        h1.outcome,
        RefOutcome::Moved {
            to: moved_to.clone()
        }
    );
    let h2 = report
        .handoff_refs
        .iter()
        .find(|h| h.name == name2)
        .expect("reported");
    assert_eq!(h2.outcome, RefOutcome::AlreadyGone);
    assert_eq!(report.refs_left(), 1);
    assert_eq!(
        e.sim.ref_sha(OWNER, NAME, &name1).as_deref(),
        Some(moved_to.as_str()),
        "a ref pushed again is not deleted"
    );
    assert!(render_summary(&report).contains("LEFT: it now points at"));
    // The next sweep reads the new record and deletes the ref.
    e.sim.clear_faults();
    let next = e.sweep_refs().await;
    assert_eq!((next.new_records(), next.already_present()), (1, 0));
    assert_eq!(
        e.file(&record_path(&other).expect("path")).as_deref(),
        Some(other.bytes())
    );
    assert!(e.handoff_refs().is_empty());
}

/// A repository after a first sweep from handoff refs (one open issue),
/// with the second sweep's handoff refs pushed (new nightly evidence on
/// both cases, a clean sentinel record, sentinel evidence) and one invalid
/// handoff ref.
async fn crash_env_refs() -> Env {
    let e = env().await;
    e.push_refs(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    e.sweep_refs().await;
    e.push_refs(&[
        &drift_both("nightly", "2026-12-02T01:00:00Z"),
        &clean("sentinel", "2026-12-02T02:00:00Z"),
        &drift("sentinel", "2026-12-02T03:00:00Z"),
    ]);
    e.sim.push_ref(
        OWNER,
        NAME,
        &format!("{HANDOFF_REFS}broken"),
        &[("notes.txt", b"not a record")],
        "broken\n",
    );
    e
}

#[tokio::test]
async fn a_crash_after_any_request_of_a_handoff_ref_sweep_converges() {
    let reference = crash_env_refs().await;
    reference.sim.clear_requests();
    let report = reference.sweep_refs().await;
    let total = reference.sim.requests().len();
    let want = reference.normalized().await;
    let want_refs = reference.handoff_refs();
    assert_eq!(want_refs, [format!("{HANDOFF_REFS}broken")]);
    assert_eq!(report.new_records(), 3);
    assert_eq!(
        report
            .handoff_refs
            .iter()
            .filter(|h| h.outcome == RefOutcome::Deleted)
            .count(),
        3
    );
    assert_eq!(want.issues.len(), 2);
    assert_eq!((want.receipts, want.commits), (2, 2));

    let started = std::time::Instant::now();
    let mut phases = std::collections::BTreeSet::new();
    for k in 1..total {
        let e = crash_env_refs().await;
        e.sim.set_fault_plan(
            FaultPlan::new()
                .rule(FaultRule::nth_request(k as u64 + 1, Fault::DropConnection).forever()),
        );
        let err = e
            .try_sweep_refs()
            .await
            .expect_err("every request after the k-th is dropped");
        assert!(err.is_retryable(), "k = {k}: {err}");
        assert!(err.to_string().contains("rerun to converge"), "{err}");
        phases.insert(format!("{:?}", err.phase));
        e.sim.clear_faults();
        let rerun = e.sweep_refs().await;
        let got = e.normalized().await;
        assert!(got.receipts <= want.receipts + 1, "k = {k}: {got:?}");
        assert_eq!(
            got.settled(),
            want.clone().settled(),
            "k = {k}: stopped with {err}; rerun {rerun:?}"
        );
        assert_eq!(e.handoff_refs(), want_refs, "k = {k}: stopped with {err}");
        let third = e.sweep_refs().await;
        assert!(
            third.new_records() == 0
                && third.baseline_changes.is_empty()
                && third.applied.is_empty()
                && third.refs_left() == 0,
            "k = {k}"
        );
        assert_eq!(e.handoff_refs(), want_refs);
    }
    assert!(
        phases.contains("Validate") && phases.contains("Persist") && phases.contains("Reconcile"),
        "{phases:?}"
    );
    eprintln!(
        "handoff-ref crash loop: {} crash points in {:?}",
        total - 1,
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------
// 7. Comment authorship

#[tokio::test]
async fn a_person_pasting_an_evidence_marker_does_not_suppress_the_announcement() {
    let e = env().await;
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    let first = e.sweep().await;
    assert!(render_summary(&first).contains("issues of"));
    let issue = e.sim.issues(OWNER, NAME)[0].number;

    // New evidence is coming; a person quotes its marker first (copied
    // from somewhere) in a comment of their own.
    let r2 = drift("nightly", "2026-12-02T01:00:00Z");
    let pasted = format!(
        "Looks like the same drift as before:\n{}\n",
        evidence_marker(&r2.digest())
    );
    e.sim
        .comment_as_user(OWNER, NAME, issue, "octocat", &pasted)
        .expect("commented");
    e.hand_off(&[&r2]);
    let report = e.sweep().await;
    let commented = report
        .applied
        .iter()
        .filter(|a| matches!(a, Applied::Commented { .. }))
        .count();
    assert_eq!(commented, 1, "{:?}", report.applied);
    let comments = e.sim.comments(OWNER, NAME, issue);
    assert_eq!(comments.len(), 2, "{comments:?}");
    assert_eq!(
        (comments[0].author.as_str(), comments[0].bot),
        ("octocat", false)
    );
    assert_eq!(comments[1].author, e.sim.bot_login());
    assert!(comments[1].body.contains(&evidence_marker(&r2.digest())));

    // The bot's own comment does count: a rerun posts nothing more.
    let again = e.sweep().await;
    assert!(again.applied.is_empty(), "{:?}", again.applied);
    assert_eq!(e.sim.comments(OWNER, NAME, issue).len(), 2);
}

// ---------------------------------------------------------------------------
// 8. Human decisions are never fought

fn parse_large_key() -> benchops::reconcile::DriftKey {
    benchops::reconcile::DriftKey::new(
        benchops::CaseId::new("parse/large").expect("case"),
        "wall_s",
    )
}

#[tokio::test]
async fn a_label_a_person_adds_while_the_sweep_runs_is_seen_before_the_write_and_the_plan_is_redone()
 {
    let e = env().await;
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    e.sweep().await;
    let issue = e.sim.issues(OWNER, NAME)[0].number;

    // The sentinel lane sees the drift too: the plan adds `lane:sentinel`.
    // A person accepts the drift after the sweep listed the issues and
    // before it adds the label: the comment listing is slowed down, and
    // the label is set as soon as the issue listing has answered.
    e.hand_off(&[&drift("sentinel", "2026-12-02T03:00:00Z")]);
    e.sim.clear_requests();
    e.sim
        .set_fault_plan(FaultPlan::new().rule(FaultRule::on_operation(
            "issues/list-comments",
            Fault::Latency(Duration::from_secs(2)),
        )));
    let person = async {
        loop {
            let listed = e
                .sim
                .requests()
                .iter()
                .any(|r| r.operation == Some("issues/list-for-repo") && r.status == Some(200));
            if listed {
                assert!(
                    e.sim
                        .add_label_as_user(OWNER, NAME, issue, "drift-accepted")
                );
                // The last request the sweep had started by then.
                return e.sim.requests().iter().map(|r| r.seq).max();
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    };
    let (report, labelled_after) = tokio::join!(e.sweep(), person);
    // The issue changed under the sweep: before its first write it read the
    // issue again, saw the accepted label and re-planned; an accepted issue
    // gets no more writes, so nothing was added and nothing was replaced.
    assert!(report.replans >= 1, "{}", render_summary(&report));
    assert!(report.applied.is_empty(), "{:?}", report.applied);
    assert!(labelled_after.is_some());
    let labels = &e.sim.issues(OWNER, NAME)[0].labels;
    for l in ["benchmark-drift", "lane:nightly", "drift-accepted"] {
        assert!(labels.contains(&l.to_owned()), "{l} missing: {labels:?}");
    }
    let log = e.sim.requests();
    assert!(
        log.iter().all(|r| r.operation != Some("issues/add-labels")),
        "no label was added over the person's decision"
    );
    assert!(
        log.iter()
            .filter(|r| r.operation == Some("issues/update"))
            .all(|r| r.body.as_ref().is_none_or(|b| b.get("labels").is_none())),
        "no request replaced the label set"
    );
    assert!(
        log.iter().any(|r| r.operation == Some("issues/get")),
        "the issue was read again before the write"
    );
    // The accepted label keeps silencing the issue.
    e.sim.clear_faults();
    let again = e.sweep().await;
    assert!(again.applied.is_empty(), "{:?}", again.applied);
}

#[tokio::test]
async fn close_and_close_duplicate_send_their_state_reasons() {
    let e = env().await;
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    e.sweep().await;
    // A second benchops issue for the same key (as a lost race between two
    // sweeps leaves one), opened by the App's bot.
    let first = e.sim.issues(OWNER, NAME).remove(0);
    let iid = e.sim.installation_id(OWNER).expect("installed");
    let token = e.sim.mint_token(iid, &[("issues", "write")], None);
    let bot = GitHubClient::builder()
        .base_url(e.sim.base_url())
        .build()
        .expect("client")
        .with_token(Token::new(token));
    let repo = Repo::new(OWNER, NAME).expect("repo");
    let dup = bot
        .create_issue(
            &repo,
            &benchops_github::NewIssue {
                title: first.title.clone(),
                body: first.body.clone().expect("body"),
                labels: first.labels.clone(),
            },
        )
        .await
        .expect("duplicate opened");

    // Both lanes clear the drift: the canonical issue closes as completed,
    // the duplicate as a duplicate.
    e.hand_off(&[
        &clean("nightly", "2026-12-02T01:00:00Z"),
        &clean("sentinel", "2026-12-02T02:00:00Z"),
    ]);
    e.sim.clear_requests();
    let report = e.sweep().await;
    assert!(
        report.applied.contains(&Applied::Closed {
            issue: first.number
        }) && report.applied.contains(&Applied::ClosedDuplicate {
            issue: dup.number,
            canonical: first.number
        }),
        "{:?}",
        report.applied
    );
    let issues = e.sim.issues(OWNER, NAME);
    let reasons: Vec<(&str, Option<&str>)> = issues
        .iter()
        .map(|i| (i.state.as_str(), i.state_reason.as_deref()))
        .collect();
    assert_eq!(
        reasons,
        [("closed", Some("completed")), ("closed", Some("duplicate"))]
    );
    // Sent explicitly, not left to the platform's default.
    let sent: Vec<Value> = e
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.operation == Some("issues/update"))
        .filter_map(|r| r.body)
        .filter(|b| b.get("state").is_some())
        .map(|b| json!([b["state"], b["state_reason"]]))
        .collect();
    assert_eq!(sent.len(), 2, "one closing update per issue: {sent:?}");
    assert!(sent.contains(&json!(["closed", "completed"])), "{sent:?}");
    assert!(sent.contains(&json!(["closed", "duplicate"])), "{sent:?}");
}

#[tokio::test]
async fn a_comment_two_sweeps_both_posted_is_deleted_keeping_the_earliest() {
    let e = env().await;
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    e.sweep().await;
    e.hand_off(&[&drift("nightly", "2026-12-02T01:00:00Z")]);
    e.sweep().await;
    let issue = e.sim.issues(OWNER, NAME).remove(0);
    let before = e.sim.comments(OWNER, NAME, issue.number);
    assert_eq!(before.len(), 1, "{before:?}");
    let first = &before[0];
    assert!(first.bot);

    // The comment a racing sweep posted too, by the App's bot; and a person
    // quoting it, which is not benchops's and stays.
    let iid = e.sim.installation_id(OWNER).expect("installed");
    let token = e.sim.mint_token(iid, &[("issues", "write")], None);
    let bot = GitHubClient::builder()
        .base_url(e.sim.base_url())
        .build()
        .expect("client")
        .with_token(Token::new(token));
    let repo = Repo::new(OWNER, NAME).expect("repo");
    let copy = bot
        .create_comment(&repo, issue.number, &first.body)
        .await
        .expect("duplicate posted");
    let quoted = e
        .sim
        .comment_as_user(OWNER, NAME, issue.number, "someone", &first.body)
        .expect("person comments");
    assert!(first.id < copy.id);

    e.sim.clear_requests();
    let report = e.sweep().await;
    assert_eq!(
        report.applied,
        [Applied::DeletedDuplicateComment {
            issue: issue.number,
            comment_id: copy.id
        }]
    );
    let deletes: Vec<Option<u16>> = e
        .sim
        .requests()
        .iter()
        .filter(|r| r.operation == Some("issues/delete-comment"))
        .map(|r| r.status)
        .collect();
    assert_eq!(deletes, [Some(204)]);
    let ids: Vec<u64> = e
        .sim
        .comments(OWNER, NAME, issue.number)
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, [first.id, quoted]);
    let again = e.sweep().await;
    assert!(again.applied.is_empty(), "{:?}", again.applied);
}

#[tokio::test]
async fn an_issue_a_person_opened_with_a_copied_drift_marker_is_left_alone() {
    let e = env().await;
    let body = format!(
        "Same as the benchops issue, copied:\n{}\n",
        drift_marker(&parse_large_key())
    );
    let theirs = e
        .sim
        .open_issue_as_user(
            OWNER,
            NAME,
            "octocat",
            "parse/large is slow",
            &body,
            &["benchmark-drift"],
        )
        .expect("opened");
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    let report = e.sweep().await;

    // benchops opened its own issue; the person's is untouched.
    let opened: Vec<u64> = report
        .applied
        .iter()
        .filter_map(|a| match a {
            Applied::Opened { issue, .. } => Some(*issue),
            _ => None,
        })
        .collect();
    assert_eq!(opened.len(), 1, "{:?}", report.applied);
    assert_ne!(opened[0], theirs);
    assert!(
        report
            .applied
            .iter()
            .all(|a| !format!("{a:?}").contains(&format!("issue: {theirs},"))),
        "{:?}",
        report.applied
    );
    let issues = e.sim.issues(OWNER, NAME);
    let person = issues.iter().find(|i| i.number == theirs).expect("theirs");
    assert_eq!(
        (
            person.author.as_str(),
            person.state.as_str(),
            person.body.as_deref(),
            &person.labels,
            person.comments.len()
        ),
        (
            "octocat",
            "open",
            Some(body.as_str()),
            &vec!["benchmark-drift".to_owned()],
            0
        )
    );
    let ours = issues.iter().find(|i| i.number == opened[0]).expect("ours");
    assert_eq!(ours.author, e.sim.bot_login());
    // No write touched the person's issue, and its comments were not read.
    let prefix = format!("/repos/{OWNER}/{NAME}/issues/{theirs}");
    assert!(
        e.sim
            .requests()
            .iter()
            .all(|r| !r.path.starts_with(&prefix)),
        "a request touched #{theirs}"
    );
    // Reported as a note.
    assert_eq!(report.foreign_issues.len(), 1);
    assert_eq!(report.foreign_issues[0].issue, theirs);
    assert_eq!(report.foreign_issues[0].author.as_deref(), Some("octocat"));
    assert_eq!(
        report.foreign_issues[0].key.as_deref(),
        Some(parse_large_key().to_string().as_str())
    );
    let summary = render_summary(&report);
    assert!(
        summary.contains(&format!("note: #{theirs} carries a benchops drift marker")),
        "{summary}"
    );
    // Nothing to do on a rerun: no duplicate closed, nothing reopened.
    let again = e.sweep().await;
    assert!(again.applied.is_empty(), "{:?}", again.applied);
    assert_eq!(again.foreign_issues, report.foreign_issues);
}

// ---------------------------------------------------------------------------
// The CLI

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_github_mode_sweeps_and_a_bad_invocation_is_a_usage_error() {
    let e = env().await;
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    let base = e.sim.base_url();
    let (handoff, manifest, key) = (e.handoff.clone(), e.manifest.clone(), e.key.clone());
    let run = move |args: Vec<String>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_benchops-publish"));
        c.args(args)
            .env("GITHUB_API_URL", &base)
            .env("BENCHOPS_APP_KEY_FILE", &key)
            .env("GITHUB_EVENT_NAME", "schedule");
        for v in [
            "GITHUB_RUN_ID",
            "GITHUB_RUN_ATTEMPT",
            "GITHUB_WORKFLOW",
            "GITHUB_SERVER_URL",
        ] {
            c.env_remove(v);
        }
        c.output().expect("the binary runs")
    };
    let app_id = e.sim.app_id().to_string();
    let args = vec![
        "sweep".to_owned(),
        "--github".to_owned(),
        "--repo".to_owned(),
        format!("{OWNER}/{NAME}"),
        "--app-id".to_owned(),
        app_id,
        "--handoff".to_owned(),
        handoff.display().to_string(),
        "--manifest".to_owned(),
        manifest.display().to_string(),
    ];
    let out = {
        let run = run.clone();
        let args = args.clone();
        tokio::task::spawn_blocking(move || run(args))
            .await
            .expect("joins")
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("sweep (github) acme/bench"), "{stdout}");
    assert!(stdout.contains("#1 opened"), "{stdout}");
    assert_eq!(e.sim.issues(OWNER, NAME).len(), 1);
    assert!(e.sim.tokens().iter().all(|t| t.revoked));

    // Handoff refs only: the record is persisted and its ref deleted.
    let r2 = drift("nightly", "2026-12-02T01:00:00Z");
    e.push_refs(&[&r2]);
    let refs_only: Vec<String> = args
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 6 && *i != 7)
        .map(|(_, a)| a.clone())
        .chain(["--handoff-refs".to_owned()])
        .collect();
    let out = {
        let run = run.clone();
        tokio::task::spawn_blocking(move || run(refs_only))
            .await
            .expect("joins")
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 handoff ref(s)"), "{stdout}");
    assert!(e.handoff_refs().is_empty(), "{stdout}");
    assert_eq!(
        e.file(&record_path(&r2).expect("path")).as_deref(),
        Some(r2.bytes())
    );

    // --github and --local together, --github without --repo, --github
    // without any handoff source, --handoff-refs without --github: exit 2.
    let mut both = args.clone();
    both.push("--local".to_owned());
    let no_repo: Vec<String> = args
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 2 && *i != 3)
        .map(|(_, a)| a.clone())
        .collect();
    let no_source: Vec<String> = args
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 6 && *i != 7)
        .map(|(_, a)| a.clone())
        .collect();
    let refs_local: Vec<String> = [
        "sweep",
        "--local",
        "--handoff-refs",
        "--manifest",
        "schedule.toml",
    ]
    .map(str::to_owned)
    .to_vec();
    for bad in [both, no_repo, no_source, refs_local] {
        let run = run.clone();
        let out = tokio::task::spawn_blocking(move || run(bad))
            .await
            .expect("joins");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

// ---------------------------------------------------------------------------
// Receipts: every sweep that saw a handoff, and where a failed one stopped

#[tokio::test]
async fn a_sweep_with_no_handoffs_makes_no_commit() {
    let e = env().await;
    let idle = e.sweep().await;
    assert!(idle.handoffs.is_empty());
    assert_eq!(
        (idle.commit.clone(), idle.receipt_path.clone()),
        (None, None)
    );
    assert_eq!(e.tip(), None, "no branch, nothing to record");

    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    e.hand_off(&[&r1]);
    let first = e.sweep().await;
    let tip = e.tip();
    assert_eq!(first.commit, tip);
    assert!(
        !e.handoff.join(r1.file_name()).exists(),
        "handoff consumed (moved to .persisted/)"
    );
    for _ in 0..2 {
        e.sim.clear_requests();
        let idle = e.sweep().await;
        assert_eq!(
            (idle.commit.clone(), idle.receipt_path.clone()),
            (None, None)
        );
        assert!(idle.applied.is_empty(), "{:?}", idle.applied);
        assert_eq!(e.tip(), tip, "the branch does not move");
        let writes: Vec<&str> = e
            .sim
            .requests()
            .iter()
            .filter_map(|r| r.operation)
            .filter(|op| op.starts_with("git/create") || *op == "git/update-ref")
            .collect();
        assert!(writes.is_empty(), "{writes:?}");
    }
    let n = e.normalized().await;
    assert_eq!((n.receipts, n.commits), (1, 1));
}

/// Runs the CLI against the simulator with `--handoff` and `extra`.
async fn cli_sweep(e: &Env, extra: Vec<String>) -> std::process::Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_benchops-publish"));
    c.args(["sweep", "--github", "--repo", &format!("{OWNER}/{NAME}")])
        .args(["--app-id", &e.sim.app_id().to_string()])
        .arg("--handoff")
        .arg(&e.handoff)
        .arg("--manifest")
        .arg(&e.manifest)
        .args(extra)
        .env("GITHUB_API_URL", e.sim.base_url())
        .env("BENCHOPS_APP_KEY_FILE", &e.key)
        .env("GITHUB_EVENT_NAME", "schedule");
    for v in [
        "GITHUB_RUN_ID",
        "GITHUB_RUN_ATTEMPT",
        "GITHUB_WORKFLOW",
        "GITHUB_SERVER_URL",
    ] {
        c.env_remove(v);
    }
    tokio::task::spawn_blocking(move || c.output().expect("the binary runs"))
        .await
        .expect("joins")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_reconcile_writes_a_receipt_that_says_where_it_stopped() {
    let e = env().await;
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    e.hand_off(&[&r1]);
    // Opening the issue fails (issue creation is never retried blindly):
    // the reconcile dies after the persist landed.
    e.sim.set_fault_plan(
        FaultPlan::new()
            .rule(FaultRule::on_operation("issues/create", Fault::Status(502)).forever()),
    );
    let out_file = e.handoff.parent().expect("tmp").join("receipt.json");
    let out = cli_sweep(
        &e,
        vec!["--receipt-out".to_owned(), out_file.display().to_string()],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("reconcile phase"), "{stderr}");
    let receipt: Value =
        serde_json::from_slice(&fs::read(&out_file).expect("a receipt file")).expect("JSON");
    benchops::schema::Contract::ReceiptV1
        .validate(&receipt)
        .expect("a valid receipt/v1");
    assert_eq!(receipt["stopped"]["phase"], "reconcile", "{receipt}");
    assert_eq!(receipt["stopped"]["retryable"], true, "{receipt}");
    assert!(
        receipt["stopped"]["step"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{receipt}"
    );
    // The persist landed: the record is in history, with its own receipt
    // (without `stopped`); the file is that receipt plus where it stopped.
    assert_eq!(
        e.file(&record_path(&r1).expect("path")).as_deref(),
        Some(r1.bytes())
    );
    assert_eq!(receipt["persisted"][0]["already_present"], false);
    let n = e.normalized().await;
    assert_eq!((n.receipts, n.commits), (1, 1));
    assert!(e.sim.issues(OWNER, NAME).is_empty());

    // Without --receipt-out it is printed to stderr as one JSON line after
    // the error.
    let out = cli_sweep(&e, Vec::new()).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let printed: Value =
        serde_json::from_str(stderr.lines().last().expect("a line")).expect("one JSON line");
    assert_eq!(printed["stopped"]["phase"], "reconcile");
    assert_eq!(printed["stopped"]["retryable"], true);

    // Once the fault is gone a rerun converges: one issue.
    e.sim.clear_faults();
    let done = e.sweep().await;
    assert_eq!(done.new_records(), 0);
    assert_eq!(e.sim.issues(OWNER, NAME).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_only_conflict_writes_a_persist_receipt_that_is_not_retryable() {
    let e = env().await;
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    let path = record_path(&r1).expect("path");
    e.sim.commit_files(
        OWNER,
        NAME,
        "benchmark-history",
        &[(path.as_str(), b"{\"not\":\"the record\"}")],
        "someone else\n",
    );
    let tip = e.tip();
    e.hand_off(&[&r1]);

    // The library: the error carries the receipt.
    let err = e.try_sweep().await.expect_err("a create-only conflict");
    let receipt: Value =
        serde_json::from_slice(err.receipt.as_deref().expect("a receipt")).expect("JSON");
    assert_eq!(receipt["stopped"]["phase"], "persist");
    assert_eq!(receipt["stopped"]["retryable"], false);
    assert_eq!(receipt["stopped"]["step"], format!("check {path}"));
    assert_eq!(receipt["persisted"], json!([]), "nothing persisted");
    assert_eq!(receipt["validated"][0]["valid"], true);

    // The CLI: written to --receipt-out, never committed.
    let out_file = e.handoff.parent().expect("tmp").join("receipt.json");
    let out = cli_sweep(
        &e,
        vec!["--receipt-out".to_owned(), out_file.display().to_string()],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let written: Value =
        serde_json::from_slice(&fs::read(&out_file).expect("a receipt file")).expect("JSON");
    benchops::schema::Contract::ReceiptV1
        .validate(&written)
        .expect("a valid receipt/v1");
    assert_eq!(written["stopped"]["phase"], "persist", "{written}");
    assert_eq!(written["stopped"]["retryable"], false, "{written}");
    assert!(
        written["stopped"]["error"]
            .as_str()
            .is_some_and(|m| m.contains("create-only")),
        "{written}"
    );
    assert_eq!(e.tip(), tip, "nothing was written");
    assert_eq!(e.normalized().await.receipts, 0);
}

/// A thousand records in one sweep: every file goes in one commit, built
/// by create-tree requests that each stay under the client's body budget
/// (one request carrying them all was over 2 MB, which the simulator, like
/// the proxies in front of GitHub, refuses with 413).
#[tokio::test]
async fn a_thousand_records_in_one_sweep_land_in_one_commit_through_bounded_tree_requests() {
    let e = env().await;
    let start = jiff::Timestamp::from_second(1_704_070_800).expect("2024-01-01T01:00Z");
    let records: Vec<SealedRecord> = (0..1000)
        .map(|d| {
            let t = start
                .checked_add(jiff::SignedDuration::from_hours(24 * d))
                .expect("in range");
            clean("nightly", &t.to_string())
        })
        .collect();
    e.hand_off(&records.iter().collect::<Vec<_>>());
    let report = e.sweep().await;
    assert_eq!((report.new_records(), report.quarantined()), (1000, 0));

    let requests = e.sim.requests();
    let trees: Vec<usize> = requests
        .iter()
        .filter(|r| r.operation == Some("git/create-tree"))
        .map(|r| {
            assert_eq!(r.status, Some(201), "a create-tree request failed");
            serde_json::to_vec(r.body.as_ref().expect("a body")).map_or(0, |b| b.len())
        })
        .collect();
    assert!(
        trees.len() > 1,
        "one create-tree request carried {trees:?} bytes"
    );
    let budget = benchops_github::TREE_REQUEST_BUDGET;
    for size in &trees {
        // The budget counts the entries; the envelope adds the base tree.
        assert!(*size <= budget + 100, "a create-tree body of {size} bytes");
    }
    let commits = requests
        .iter()
        .filter(|r| r.operation == Some("git/create-commit"))
        .count();
    assert_eq!(commits, 1, "one commit for the whole sweep");
    for r in records.iter().step_by(97).chain(records.last()) {
        let path = record_path(r).expect("path");
        assert_eq!(e.file(&path).as_deref(), Some(r.bytes()), "{path}");
    }
    let receipts = e
        .paths()
        .iter()
        .filter(|p| p.starts_with("receipts/"))
        .count();
    assert_eq!(receipts, 1);
    // Rerunning finds every record in history and writes nothing.
    e.hand_off(&records.iter().collect::<Vec<_>>());
    let again = e.sweep().await;
    assert_eq!((again.new_records(), again.already_present()), (0, 1000));
}

/// With `history_objects`, records already in a local repository's object
/// store are read from it, and only the others cost a request; the result
/// is the sweep without it. A directory that is no repository stops the
/// sweep naming it.
#[tokio::test]
async fn history_read_from_a_local_object_store_costs_a_request_only_per_record_it_lacks() {
    let e = env().await;
    let day = |d: i64| {
        let t = jiff::Timestamp::from_second(1_704_070_800 + d * 86_400).expect("instant");
        clean("nightly", &t.to_string())
    };
    let old: Vec<SealedRecord> = (0..300).map(day).collect();
    e.hand_off(&old.iter().collect::<Vec<_>>());
    e.sweep().await;

    // A local object store with 250 of the 300 records.
    let objects = e._tmp.path().join("objects.git");
    let git = |args: &[&str], input: Option<&[u8]>| {
        use std::io::Write as _;
        let mut c = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&objects)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("git runs");
        if let Some(bytes) = input {
            c.stdin
                .take()
                .expect("stdin")
                .write_all(bytes)
                .expect("writes");
        }
        drop(c.stdin.take());
        let out = c.wait_with_output().expect("git ends");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    git(&["init", "--bare", "-q"], None);
    for r in &old[..250] {
        git(&["hash-object", "-w", "--stdin"], Some(r.bytes()));
    }
    let blob_gets = |sim: &GitHubSim| {
        sim.requests()
            .iter()
            .filter(|r| r.operation == Some("git/get-blob"))
            .count()
    };

    e.hand_off(&[&day(300)]);
    e.sim.clear_requests();
    let (mut o, _clock) = e.opts();
    o.history_objects = Some(objects.clone());
    let with_store = sweep_github(&o).await.expect("sweeps");
    assert_eq!(with_store.new_records(), 1);
    let local_gets = blob_gets(&e.sim);

    e.hand_off(&[&day(301)]);
    e.sim.clear_requests();
    let without = e.sweep().await;
    assert_eq!(without.new_records(), 1);
    let api_gets = blob_gets(&e.sim);
    // The history index names what the sweep needs: the newest 200
    // records (the trend's window) and the oldest, not all 301.
    assert!(
        (200..301).contains(&api_gets),
        "{api_gets} blob requests without the store"
    );
    // With the store, 150 of those 200 records were read from it: only the
    // 50 it lacks, and the index's own files, cost a request.
    assert_eq!(
        api_gets - local_gets,
        150,
        "{local_gets} with the store, {api_gets} without"
    );
    assert_eq!(with_store.history_records + 1, without.history_records);

    let (mut o, _clock) = e.opts();
    o.history_objects = Some(e._tmp.path().join("no-such-repository"));
    e.hand_off(&[&day(302)]);
    let err = sweep_github(&o).await.expect_err("not a repository");
    assert!(err.to_string().contains("no-such-repository"), "{err}");
}

/// GitHub cuts a recursive tree listing short past 100,000 entries or
/// 7 MB; the simulator does too (here past 40 entries). The sweep then
/// lists the tree level by level and still sees every record; with a local
/// object store holding the tip's tree it lists none through the API. A
/// single level too large to list stops the sweep naming the tree.
#[tokio::test]
async fn a_truncated_tree_listing_is_walked_level_by_level_and_a_level_too_large_stops() {
    let e = env().await;
    let day = |d: i64| {
        let t = jiff::Timestamp::from_second(1_704_070_800 + d * 86_400).expect("instant");
        clean("nightly", &t.to_string())
    };
    let old: Vec<SealedRecord> = (0..90).map(day).collect();
    e.hand_off(&old.iter().collect::<Vec<_>>());
    e.sweep().await;

    e.sim.set_tree_limits(40, 7_000_000);
    let tree_gets = |sim: &GitHubSim| {
        sim.requests()
            .iter()
            .filter(|r| r.operation == Some("git/get-tree"))
            .count()
    };
    e.hand_off(&[&day(90)]);
    e.sim.clear_requests();
    let report = e.sweep().await;
    assert_eq!((report.new_records(), report.history_records), (1, 91));
    assert!(tree_gets(&e.sim) > 2, "the tree was walked level by level");
    // Every record of history was read (none taken for new).
    let blob_gets = e
        .sim
        .requests()
        .iter()
        .filter(|r| r.operation == Some("git/get-blob"))
        .count();
    assert!(blob_gets >= 90, "{blob_gets} records read");

    // A local store holding the tip's objects lists the tree itself.
    let objects = e._tmp.path().join("objects.git");
    let out = std::process::Command::new("git")
        .args(["init", "--bare", "-q"])
        .arg(&objects)
        .status()
        .expect("git runs");
    assert!(out.success());
    // Every file at the tip, committed alike, gives the tip's tree id.
    let files: Vec<(String, Vec<u8>)> = e
        .paths()
        .into_iter()
        .map(|p| {
            let b = e.file(&p).expect("a file");
            (p, b)
        })
        .collect();
    let local = benchops_publish::history::LocalHistory::open_or_init(&objects).expect("opens");
    let (_, tree) = local
        .write_commit(&Default::default(), &files, "copy\n", 1_796_004_005)
        .expect("copies");
    e.hand_off(&[&day(91)]);
    e.sim.clear_requests();
    let (mut o, _clock) = e.opts();
    o.history_objects = Some(objects.clone());
    let report = sweep_github(&o).await.expect("sweeps");
    assert_eq!(report.history_records, 92);
    assert_eq!(tree_gets(&e.sim), 0, "the local store listed tree {tree}");

    // One level with more entries than the limit cannot be listed.
    e.sim.set_tree_limits(5, 7_000_000);
    e.hand_off(&[&day(92)]);
    let err = e.try_sweep().await.expect_err("a level too large");
    assert!(
        err.cause.to_string().contains("truncated") || err.to_string().contains("truncated"),
        "{err}: {}",
        err.cause
    );
}

#[tokio::test]
async fn an_issue_body_saved_with_other_whitespace_keeps_its_key() {
    // What the web editor and the API hand back: CRLF line endings, trailing
    // spaces or tabs, a final newline or none.
    let variants: [(&str, &str, bool); 4] = [
        ("\r\n", "", true),
        ("\n", "  ", false),
        ("\r\n", "\t", false),
        ("\n", " \t", true),
    ];
    for (eol, tail, last) in variants {
        let e = env().await;
        e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
        assert_eq!(e.sweep().await.opened(), 1);
        let edit = |e: &Env| {
            let issue = e.sim.issues(OWNER, NAME).remove(0);
            let body = issue.body.expect("body");
            let mut saved = body
                .lines()
                .map(|l| format!("{l}{tail}"))
                .collect::<Vec<_>>()
                .join(eol);
            if last {
                saved.push_str(eol);
            }
            assert!(
                e.sim
                    .set_issue_body_as_user(OWNER, NAME, issue.number, &saved)
            );
        };
        edit(&e);
        e.hand_off(&[&drift("nightly", "2026-12-02T01:00:00Z")]);
        let report = e.sweep().await;
        assert_eq!(report.opened(), 0, "{eol:?} {tail:?}: {:?}", report.applied);
        assert_eq!(e.sim.issues(OWNER, NAME).len(), 1, "{eol:?} {tail:?}");

        edit(&e);
        e.hand_off(&[
            &clean("sentinel", "2026-12-02T02:00:00Z"),
            &clean("nightly", "2026-12-03T01:00:00Z"),
        ]);
        assert_eq!(e.sweep().await.closed(), 1, "{eol:?} {tail:?}");
        let issues = e.sim.issues(OWNER, NAME);
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].state, "closed");
    }
}

/// An index on the branch that names a record the tree lacks is caught
/// when read; the rebuilt index is committed over the whole tree (no
/// record is lost from the tip), and the next sweep trusts it again.
#[tokio::test]
async fn a_wrong_history_index_is_committed_again_over_the_whole_tree() {
    use benchops::history_index::HistoryIndex;

    let e = env().await;
    let one = drift("nightly", "2026-11-01T01:00:00Z");
    let two = clean("nightly", "2026-11-02T01:00:00Z");
    e.hand_off(&[&one, &two]);
    e.sweep().await;
    // A commit on the tip with an index built on it (so fresh) that names
    // a drift record history does not hold.
    let tip = e.tip().expect("a tip");
    let ghost = drift("sentinel", "2026-11-03T01:00:00Z");
    let mut wrong = HistoryIndex::build([&one, &two, &ghost]);
    let files = wrong.files(Some(tip.as_str()));
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    e.sim
        .commit_files(OWNER, NAME, "benchmark-history", &refs, "a wrong index");

    let three = clean("nightly", "2026-11-04T01:00:00Z");
    e.hand_off(&[&three]);
    let r = e.sweep().await;
    let note = r.index_note.clone().expect("a note");
    assert!(
        note.contains("disagreed") && note.contains("committed as"),
        "{note}"
    );
    let paths = e.paths();
    for rec in [&one, &two, &three] {
        let path = record_path(rec).expect("path");
        assert!(paths.contains(&path), "{path} is still on the branch");
    }
    let next = clean("nightly", "2026-11-05T01:00:00Z");
    e.hand_off(&[&next]);
    let r = e.sweep().await;
    assert_eq!(r.index_note, None, "the repaired index is trusted");
    assert_eq!(r.history_records, 4);
}
