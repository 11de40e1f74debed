//! Missed-run issues (`sweep --missed-run-issues`), in both modes: one issue
//! per lane opened while the watchdog says its last slots are missed, left
//! alone when nothing changed, closed when the lane's latest slot has a good
//! record again; none without the option.

use crate::sim_client::sim_client;

use std::fs;
use std::path::Path;

use benchops::seal::SealedRecord;
use benchops_github::ManualClock;
use benchops_publish::github::{GitHubSweepOptions, sweep_github};
use benchops_publish::ledger::{Ledger, LedgerState};
use benchops_publish::local::{LocalSweepOptions, sweep_local};
use benchops_publish::sweep::Clock;
use benchops_testkit::GitHubSim;
use benchops_testkit::records::{TWO_LANE_MANIFEST, clean, seal};
use benchops_testkit::sim::auth::TEST_APP_PRIVATE_KEY_PEM;
use serde_json::json;

const LABEL: &str = "benchmark-missed-run";

fn clean_finished(lane: &str, slot: &str, finished: &str) -> SealedRecord {
    let mut v: serde_json::Value = serde_json::from_slice(clean(lane, slot).bytes()).expect("json");
    v["finished_at"] = json!(finished);
    // `seal` re-canonicalizes and re-hashes the edited record.
    seal(&v)
}

/// The hourly sentinel ran at 00:00, 01:00 and 02:00, then nothing; the
/// nightly lane ran at 01:00.
fn first_records() -> Vec<SealedRecord> {
    vec![
        clean_finished("sentinel", "2026-11-30T00:00:00Z", "2026-11-30T00:10:00Z"),
        clean_finished("sentinel", "2026-11-30T01:00:00Z", "2026-11-30T01:10:00Z"),
        clean_finished("sentinel", "2026-11-30T02:00:00Z", "2026-11-30T02:10:00Z"),
        clean_finished("nightly", "2026-11-30T01:00:00Z", "2026-11-30T02:00:00Z"),
    ]
}

fn hand_off(dir: &Path, records: &[SealedRecord]) {
    fs::create_dir_all(dir).expect("dir");
    for r in records {
        fs::write(dir.join(r.file_name()), r.bytes()).expect("handoff");
    }
}

fn local_sweep(dir: &Path, manifest: &Path, now: &str, label: Option<&str>) {
    let mut o = LocalSweepOptions::new(dir, manifest);
    o.clock = Clock::fixed(now);
    o.missed_run_label = label.map(str::to_owned);
    sweep_local(&o).expect("sweep");
}

fn ledger(dir: &Path) -> Ledger {
    Ledger::load(&dir.join("issues.json"))
        .expect("ledger")
        .expect("exists")
        .0
}

#[test]
fn local_mode_opens_keeps_and_closes_one_issue_per_lane() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(".benchops");
    let manifest = tmp.path().join("schedule.toml");
    fs::write(&manifest, TWO_LANE_MANIFEST).expect("manifest");
    hand_off(&dir.join("sealed"), &first_records());
    // 06:00: the sentinel's 03:00 and 04:00 slots are missed (05:00 is
    // still in its grace period, 06:00 pending); nightly is fine.
    local_sweep(&dir, &manifest, "2026-11-30T06:00:00.000Z", Some(LABEL));
    let l = ledger(&dir);
    let missed: Vec<_> = l
        .issues
        .iter()
        .filter(|i| i.labels.iter().any(|x| x == LABEL))
        .collect();
    assert_eq!(missed.len(), 1, "{:#?}", l.issues);
    let issue = missed[0];
    assert_eq!(issue.title, "Missed benchmark runs: lane sentinel");
    assert_eq!(issue.state, LedgerState::Open);
    assert!(
        issue
            .body
            .starts_with("<!-- benchops:missed-run lane=sentinel -->\n"),
        "{}",
        issue.body
    );
    assert!(
        issue.body.contains("missed its last 2 scheduled slot(s)"),
        "{}",
        issue.body
    );
    assert!(
        issue
            .body
            .contains("| 2026-11-30T03:00:00Z | 2026-11-30T03:50:00Z |"),
        "{}",
        issue.body
    );
    let number = issue.number;

    // The same look again: nothing changes.
    let before = fs::read(dir.join("issues.json")).expect("ledger");
    local_sweep(&dir, &manifest, "2026-11-30T06:00:00.000Z", Some(LABEL));
    assert_eq!(fs::read(dir.join("issues.json")).expect("ledger"), before);

    // An hour later a third slot is missed: the body says so, in place.
    local_sweep(&dir, &manifest, "2026-11-30T07:00:00.000Z", Some(LABEL));
    let l = ledger(&dir);
    let issue = l.issue(number).expect("same issue");
    assert!(
        issue.body.contains("missed its last 3 scheduled slot(s)"),
        "{}",
        issue.body
    );
    assert_eq!(
        l.issues
            .iter()
            .filter(|i| i.labels.iter().any(|x| x == LABEL))
            .count(),
        1
    );

    // The 07:00 run arrives on time: the issue closes.
    hand_off(
        &dir.join("sealed"),
        &[clean_finished(
            "sentinel",
            "2026-11-30T07:00:00Z",
            "2026-11-30T07:20:00Z",
        )],
    );
    local_sweep(&dir, &manifest, "2026-11-30T07:30:00.000Z", Some(LABEL));
    let l = ledger(&dir);
    let issue = l.issue(number).expect("same issue");
    assert_eq!(issue.state, LedgerState::Closed);
    assert!(
        issue
            .body
            .contains("on time again: slot 2026-11-30T07:00:00Z"),
        "{}",
        issue.body
    );
}

#[test]
fn without_the_option_no_missed_run_issue_is_opened() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(".benchops");
    let manifest = tmp.path().join("schedule.toml");
    fs::write(&manifest, TWO_LANE_MANIFEST).expect("manifest");
    hand_off(&dir.join("sealed"), &first_records());
    local_sweep(&dir, &manifest, "2026-11-30T06:00:00.000Z", None);
    assert!(
        ledger(&dir)
            .issues
            .iter()
            .all(|i| !i.labels.iter().any(|x| x == LABEL))
    );
}

#[tokio::test]
async fn github_mode_opens_and_closes_it_as_the_apps_bot_with_the_issues_token() {
    let sim = GitHubSim::start().await;
    sim.create_repo("acme", "bench");
    let tmp = tempfile::tempdir().expect("tempdir");
    let handoff = tmp.path().join("sealed");
    let manifest = tmp.path().join("schedule.toml");
    fs::write(&manifest, TWO_LANE_MANIFEST).expect("manifest");
    let key = tmp.path().join("app.pem");
    fs::write(&key, TEST_APP_PRIVATE_KEY_PEM).expect("key");
    let opts = |now: &str| {
        let clock = ManualClock::at_unix(u64::try_from(sim.now()).expect("after 1970"));
        let mut o = GitHubSweepOptions::new(
            "acme/bench",
            sim.app_id(),
            &key,
            Some(handoff.clone()),
            &manifest,
        );
        o.clock = Clock::fixed(now);
        o.missed_run_label = Some(LABEL.to_owned());
        o.client = sim_client(&sim, &clock);
        o
    };
    hand_off(&handoff, &first_records());
    sweep_github(&opts("2026-11-30T06:00:00.000Z"))
        .await
        .expect("sweep");
    let issues = sim.issues("acme", "bench");
    let missed: Vec<_> = issues
        .iter()
        .filter(|i| i.labels.iter().any(|l| l == LABEL))
        .collect();
    assert_eq!(missed.len(), 1, "{issues:#?}");
    assert_eq!(missed[0].author, sim.bot_login());
    assert_eq!(missed[0].state, "open");
    let number = missed[0].number;
    // Every token was revoked after its phase.
    assert!(sim.tokens().iter().all(|t| t.revoked));

    sweep_github(&opts("2026-11-30T06:00:00.000Z"))
        .await
        .expect("sweep");
    assert_eq!(
        sim.issues("acme", "bench")
            .iter()
            .filter(|i| i.labels.iter().any(|l| l == LABEL))
            .count(),
        1,
        "no second issue"
    );

    hand_off(
        &handoff,
        &[clean_finished(
            "sentinel",
            "2026-11-30T07:00:00Z",
            "2026-11-30T07:20:00Z",
        )],
    );
    sweep_github(&opts("2026-11-30T07:30:00.000Z"))
        .await
        .expect("sweep");
    let issue = sim
        .issues("acme", "bench")
        .into_iter()
        .find(|i| i.number == number)
        .expect("issue");
    assert_eq!(issue.state, "closed");
}
