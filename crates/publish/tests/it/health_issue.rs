//! The health issue (`sweep --health-issue`): one issue per repository,
//! found by its marker, whose body is every lane's health table with the
//! open drift issues of the cases it covers; opened once, edited in place
//! when the table changes, left alone when it does not, never a second one.

use crate::sim_client::sim_client;

use std::fs;
use std::path::Path;

use benchops::seal::SealedRecord;
use benchops_publish::ledger::{Ledger, LedgerState};
use benchops_publish::local::{LocalSweepOptions, sweep_local};
use benchops_publish::sweep::Clock;
use benchops_publish::sweep::health_issue::{DEFAULT_HEALTH_LABEL, HEALTH_MARKER};
use benchops_testkit::records::{TWO_LANE_MANIFEST, clean, drift};

fn hand_off(dir: &Path, records: &[SealedRecord]) {
    fs::create_dir_all(dir).expect("dir");
    for r in records {
        fs::write(dir.join(r.file_name()), r.bytes()).expect("handoff");
    }
}

fn sweep(dir: &Path, manifest: &Path, now: &str, health: bool) {
    let mut o = LocalSweepOptions::new(dir, manifest);
    o.clock = Clock::fixed(now);
    o.health_issue_label = health.then(|| DEFAULT_HEALTH_LABEL.to_owned());
    sweep_local(&o).expect("sweep");
}

fn ledger(dir: &Path) -> Ledger {
    Ledger::load(&dir.join("issues.json"))
        .expect("ledger")
        .expect("exists")
        .0
}

fn health_issues(l: &Ledger) -> Vec<&benchops_publish::ledger::LedgerIssue> {
    l.issues
        .iter()
        .filter(|i| i.labels.iter().any(|x| x == DEFAULT_HEALTH_LABEL))
        .collect()
}

#[test]
fn one_health_issue_kept_up_to_date_in_place() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(".benchops");
    let manifest = tmp.path().join("schedule.toml");
    fs::write(&manifest, TWO_LANE_MANIFEST).expect("manifest");
    hand_off(
        &dir.join("sealed"),
        &[
            clean("sentinel", "2026-11-30T00:00:00Z"),
            drift("sentinel", "2026-11-30T01:00:00Z"),
            clean("nightly", "2026-11-30T01:00:00Z"),
        ],
    );
    sweep(&dir, &manifest, "2026-11-30T01:30:00.000Z", true);
    let l = ledger(&dir);
    let drift_issue = l
        .issues
        .iter()
        .find(|i| i.labels.iter().any(|x| x == "benchmark-drift"))
        .expect("the drift of parse/large opened an issue");
    let health = health_issues(&l);
    assert_eq!(health.len(), 1, "{:#?}", l.issues);
    let h = health[0];
    assert_eq!(h.title, "Benchmark health");
    assert_eq!(h.state, LedgerState::Open);
    assert!(h.body.starts_with(HEALTH_MARKER), "{}", h.body);
    // Both lanes cover parse/large: both list the drift issue.
    let n = format!("#{}", drift_issue.number);
    let rows: Vec<&str> = h.body.lines().filter(|l| l.starts_with("| `")).collect();
    assert_eq!(rows.len(), 2, "{}", h.body);
    assert!(rows[0].starts_with("| `sentinel` | ok |"), "{}", rows[0]);
    assert!(rows[0].ends_with(&format!("| {n} |")), "{}", rows[0]);
    assert!(rows[1].starts_with("| `nightly` | ok |"), "{}", rows[1]);
    assert!(rows[1].contains("`2026-11-30T01:00:00Z`"), "{}", rows[1]);
    let number = h.number;

    // Nothing changed: the ledger is not written.
    let before = fs::read(dir.join("issues.json")).expect("ledger");
    sweep(&dir, &manifest, "2026-11-30T01:30:00.000Z", true);
    assert_eq!(fs::read(dir.join("issues.json")).expect("ledger"), before);

    // Hours later the sentinel has missed slots: the same issue says so.
    sweep(&dir, &manifest, "2026-11-30T06:00:00.000Z", true);
    let l = ledger(&dir);
    let health = health_issues(&l);
    assert_eq!(health.len(), 1);
    assert_eq!(health[0].number, number);
    assert!(
        health[0].body.contains("| `sentinel` | missing runs |"),
        "{}",
        health[0].body
    );
}

#[test]
fn without_the_option_there_is_no_health_issue() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(".benchops");
    let manifest = tmp.path().join("schedule.toml");
    fs::write(&manifest, TWO_LANE_MANIFEST).expect("manifest");
    hand_off(
        &dir.join("sealed"),
        &[clean("nightly", "2026-11-30T01:00:00Z")],
    );
    sweep(&dir, &manifest, "2026-11-30T01:30:00.000Z", false);
    let l = Ledger::load(&dir.join("issues.json")).expect("ledger");
    assert!(l.is_none_or(|(l, _)| health_issues(&l).is_empty()));
}

#[tokio::test]
async fn in_github_mode_only_the_apps_own_health_issue_is_edited() {
    use benchops_github::ManualClock;
    use benchops_publish::github::{GitHubSweepOptions, sweep_github};
    use benchops_testkit::GitHubSim;
    use benchops_testkit::sim::auth::TEST_APP_PRIVATE_KEY_PEM;

    let sim = GitHubSim::start().await;
    sim.create_repo("acme", "bench");
    let tmp = tempfile::tempdir().expect("tempdir");
    let handoff = tmp.path().join("sealed");
    let manifest = tmp.path().join("schedule.toml");
    fs::write(&manifest, TWO_LANE_MANIFEST).expect("manifest");
    let key = tmp.path().join("app.pem");
    fs::write(&key, TEST_APP_PRIVATE_KEY_PEM).expect("key");
    // Someone copies the marker into an issue of their own.
    let body = format!("{HEALTH_MARKER}\nmine, do not touch\n");
    let theirs = sim
        .open_issue_as_user(
            "acme",
            "bench",
            "octocat",
            "health",
            &body,
            &[DEFAULT_HEALTH_LABEL],
        )
        .expect("opened");
    hand_off(&handoff, &[clean("nightly", "2026-11-30T01:00:00Z")]);
    let clock = ManualClock::at_unix(u64::try_from(sim.now()).expect("after 1970"));
    let mut o = GitHubSweepOptions::new("acme/bench", sim.app_id(), &key, Some(handoff), &manifest);
    o.clock = Clock::fixed("2026-11-30T01:30:00.000Z");
    o.health_issue_label = Some(DEFAULT_HEALTH_LABEL.to_owned());
    o.client = sim_client(&sim, &clock);
    sweep_github(&o).await.expect("sweep");
    let issues = sim.issues("acme", "bench");
    let mine = issues.iter().find(|i| i.number == theirs).expect("theirs");
    assert_eq!(mine.body.as_deref(), Some(body.as_str()), "untouched");
    let bots: Vec<_> = issues
        .iter()
        .filter(|i| i.author == sim.bot_login())
        .collect();
    assert_eq!(bots.len(), 1, "{issues:#?}");
    assert!(
        bots[0]
            .body
            .as_deref()
            .is_some_and(|b| b.contains("| `nightly` | ok |")),
        "{:?}",
        bots[0].body
    );
}
