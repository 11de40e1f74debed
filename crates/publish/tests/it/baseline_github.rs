//! `benchops-publish baseline show|set|reset --github` end to end against
//! the GitHub simulator (`benchops-testkit`) over loopback HTTP: a move is
//! one commit holding the pointer and a receipt naming who and why, on top
//! of the old tip (never forced), made with one contents-phase token that
//! is revoked and never touches issues; a branch moved between the read and
//! the write is rebuilt on the new tip; a wrong lane, an unknown digest or a
//! missing reason writes nothing.

use crate::sim_client::sim_client;

use std::fs;
use std::path::PathBuf;

use benchops::seal::SealedRecord;
use benchops_github::ManualClock;
use benchops_publish::github::{GitHubSweepOptions, sweep_github};
use benchops_publish::sweep::Clock;
use benchops_testkit::GitHubSim;
use benchops_testkit::records::{TWO_LANE_MANIFEST, clean};
use benchops_testkit::sim::auth::TEST_APP_PRIVATE_KEY_PEM;
use benchops_testkit::sim::{AuthKind, Fault, FaultPlan, FaultRule};
use serde_json::{Value, json};

const OWNER: &str = "acme";
const NAME: &str = "bench";
const BRANCH: &str = "heads/benchmark-history";

struct Env {
    sim: GitHubSim,
    _tmp: tempfile::TempDir,
    manifest: PathBuf,
    key: PathBuf,
    /// Two clean nightly records (the pointer names the newer) and a
    /// sentinel one, swept into history.
    older: SealedRecord,
    newer: SealedRecord,
    sentinel: SealedRecord,
}

async fn env() -> Env {
    let sim = GitHubSim::start().await;
    sim.create_repo(OWNER, NAME);
    let tmp = tempfile::tempdir().expect("tempdir");
    let handoff = tmp.path().join("sealed");
    fs::create_dir_all(&handoff).expect("handoff dir");
    let manifest = tmp.path().join("schedule.toml");
    fs::write(&manifest, TWO_LANE_MANIFEST).expect("manifest written");
    let key = tmp.path().join("app.pem");
    fs::write(&key, TEST_APP_PRIVATE_KEY_PEM).expect("key written");
    let older = clean("nightly", "2026-12-01T01:00:00Z");
    let newer = clean("nightly", "2026-12-02T01:00:00Z");
    let sentinel = clean("sentinel", "2026-12-02T02:00:00Z");
    for r in [&older, &newer, &sentinel] {
        fs::write(handoff.join(r.file_name()), r.bytes()).expect("handoff");
    }
    let clock = ManualClock::at_unix(u64::try_from(sim.now()).expect("after 1970"));
    let mut o = GitHubSweepOptions::new(
        format!("{OWNER}/{NAME}"),
        sim.app_id(),
        &key,
        Some(handoff.clone()),
        &manifest,
    );
    o.clock = Clock::fixed("2026-12-02T03:00:00.000Z");
    o.client = sim_client(&sim, &clock);
    if let Err(e) = sweep_github(&o).await {
        panic!("the seeding sweep failed: {e}: {}", e.cause);
    }
    Env {
        sim,
        _tmp: tmp,
        manifest,
        key,
        older,
        newer,
        sentinel,
    }
}

impl Env {
    fn tip(&self) -> String {
        self.sim.ref_sha(OWNER, NAME, BRANCH).expect("the branch")
    }

    fn file(&self, path: &str) -> Option<Vec<u8>> {
        self.sim.file(OWNER, NAME, "benchmark-history", path)
    }

    fn pointer(&self) -> Value {
        serde_json::from_slice(&self.file("baselines/nightly.json").expect("pointer"))
            .expect("JSON")
    }

    /// Whether `old` is `new` or one of its first-parent ancestors.
    fn is_ancestor(&self, old: &str, new: &str) -> bool {
        let mut at = Some(new.to_owned());
        while let Some(c) = at {
            if c == old {
                return true;
            }
            at = self
                .sim
                .commit(OWNER, NAME, &c)
                .expect("commit exists")
                .parents
                .first()
                .cloned();
        }
        false
    }

    /// Runs `benchops-publish baseline <args> --github …` against the
    /// simulator.
    async fn cli(&self, args: &[&str]) -> std::process::Output {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_benchops-publish"));
        c.arg("baseline")
            .args(args)
            .args(["--github", "--repo", &format!("{OWNER}/{NAME}")])
            .args(["--app-id", &self.sim.app_id().to_string()])
            .env("GITHUB_API_URL", self.sim.base_url())
            .env("BENCHOPS_APP_KEY_FILE", &self.key)
            .env("GITHUB_ACTOR", "octocat")
            .env_remove("GITHUB_RUN_ID");
        tokio::task::spawn_blocking(move || c.output().expect("the binary runs"))
            .await
            .expect("joins")
    }

    fn manifest(&self) -> String {
        self.manifest.display().to_string()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_moves_the_pointer_in_one_commit_with_a_receipt_on_top_of_the_old_tip_with_the_contents_token()
 {
    let e = env().await;
    assert_eq!(e.pointer()["record"], json!(e.newer.digest().to_string()));
    let before = e.tip();
    let tokens_before = e.sim.tokens().len();
    let older = e.older.digest().to_string();
    let out = e
        .cli(&[
            "set",
            "--lane",
            "nightly",
            "--record",
            &older["sha256:".len().."sha256:".len() + 12],
            "--reason",
            "drift #12 accepted",
            "--manifest",
            &e.manifest(),
        ])
        .await;
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains(&format!(
            "baseline moved from {} to {older}",
            e.newer.digest()
        )),
        "{}",
        text(&out.stdout)
    );
    // One commit on top of the old tip: the pointer and the receipt.
    let after = e.tip();
    assert_ne!(after, before);
    let commit = e.sim.commit(OWNER, NAME, &after).expect("tip");
    assert_eq!(commit.parents, std::slice::from_ref(&before));
    assert!(e.is_ancestor(&before, &after));
    let p = e.pointer();
    assert_eq!(p["record"], json!(older));
    assert_eq!(p["previous"], json!(e.newer.digest().to_string()));
    let receipts: Vec<Value> = e
        .sim
        .file_paths(OWNER, NAME, "benchmark-history")
        .iter()
        .filter(|p| p.starts_with("receipts/"))
        .map(|p| serde_json::from_slice(&e.file(p).expect("receipt")).expect("JSON"))
        .filter(|r: &Value| r["sweep"]["trigger"] == "baseline")
        .collect();
    assert_eq!(receipts.len(), 1, "{receipts:?}");
    let change = &receipts[0]["baseline_changes"][0];
    assert_eq!(change["lane"], "nightly");
    assert_eq!(change["from"], json!(e.newer.digest().to_string()));
    assert_eq!(change["to"], json!(older));
    assert_eq!(change["decision"]["by"], "octocat");
    assert_eq!(change["decision"]["reason"], "drift #12 accepted");
    assert_eq!(receipts[0]["history"]["parent"], json!(before));
    // One new token: contents write, no issues permission, revoked; it
    // made every installation request of the move.
    let tokens = e.sim.tokens();
    let new: Vec<_> = tokens[tokens_before..].to_vec();
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(
        new[0].permissions.get("contents").map(String::as_str),
        Some("write")
    );
    assert!(!new[0].permissions.contains_key("issues"), "{new:?}");
    assert!(new[0].revoked);
    let ops: Vec<&str> = e
        .sim
        .requests()
        .into_iter()
        .filter(|r| {
            matches!(r.auth, AuthKind::InstallationToken { token_id, .. } if token_id == new[0].id)
        })
        .filter_map(|r| r.operation)
        .collect();
    assert!(ops.contains(&"git/update-ref"), "{ops:?}");
    assert!(!ops.iter().any(|o| o.starts_with("issues/")), "{ops:?}");

    // show reads it back through the API; set again writes nothing.
    let show = e.cli(&["show", "--lane", "nightly", "--json"]).await;
    assert!(show.status.success(), "{}", text(&show.stderr));
    let shown: Value = serde_json::from_slice(&show.stdout).expect("JSON");
    assert_eq!(shown["record"], json!(older));
    let again = e
        .cli(&[
            "set",
            "--lane",
            "nightly",
            "--record",
            &older,
            "--reason",
            "again",
            "--manifest",
            &e.manifest(),
        ])
        .await;
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(text(&again.stdout).contains("nothing written"));
    assert_eq!(e.tip(), after);

    // reset points back at the newest fit record.
    let reset = e
        .cli(&[
            "reset",
            "--lane",
            "nightly",
            "--reason",
            "back to current",
            "--manifest",
            &e.manifest(),
        ])
        .await;
    assert!(reset.status.success(), "{}", text(&reset.stderr));
    assert_eq!(e.pointer()["record"], json!(e.newer.digest().to_string()));
    assert!(e.is_ancestor(&after, &e.tip()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_moved_between_the_read_and_the_write_is_rebuilt_on_the_new_tip() {
    let e = env().await;
    let before = e.tip();
    e.sim
        .set_fault_plan(FaultPlan::new().rule(FaultRule::on_operation(
            "git/update-ref",
            Fault::ConcurrentRefMove,
        )));
    let older = e.older.digest().to_string();
    let out = e
        .cli(&[
            "set",
            "--lane",
            "nightly",
            "--record",
            &older,
            "--reason",
            "drift #12 accepted",
            "--manifest",
            &e.manifest(),
        ])
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let updates: Vec<Option<u16>> = e
        .sim
        .requests()
        .iter()
        .filter(|r| r.operation == Some("git/update-ref"))
        .map(|r| r.status)
        .collect();
    // The seeding sweep created the branch; the move lost once, then won.
    assert_eq!(updates, [Some(422), Some(200)]);
    let after = e.tip();
    let parent = e.sim.commit(OWNER, NAME, &after).expect("tip").parents[0].clone();
    assert_ne!(parent, before, "rebuilt on the other writer's commit");
    let other = e.sim.commit(OWNER, NAME, &parent).expect("other");
    assert!(
        other.author.name.contains("concurrent"),
        "{:?}",
        other.author
    );
    assert!(e.is_ancestor(&before, &after));
    assert_eq!(e.pointer()["record"], json!(older));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_lane_an_unknown_digest_or_no_reason_writes_nothing() {
    let e = env().await;
    let before = e.tip();
    let pointer = e.file("baselines/nightly.json");
    let m = e.manifest();
    let sentinel = e.sentinel.digest().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "set",
                "--lane",
                "nightly",
                "--record",
                &sentinel,
                "--reason",
                "r",
                "--manifest",
                &m,
            ],
            "is a record of lane sentinel, not of --lane nightly",
        ),
        (
            vec![
                "set",
                "--lane",
                "nightly",
                "--record",
                "00000000",
                "--reason",
                "r",
                "--manifest",
                &m,
            ],
            "--record 00000000: no record in benchmark-history on acme/bench",
        ),
        (
            vec![
                "set",
                "--lane",
                "weekly",
                "--record",
                &sentinel,
                "--reason",
                "r",
                "--manifest",
                &m,
            ],
            "--lane weekly: not a lane of --manifest",
        ),
        (
            vec![
                "set",
                "--lane",
                "nightly",
                "--record",
                &sentinel,
                "--manifest",
                &m,
            ],
            "--reason is required",
        ),
    ];
    for (args, want) in cases {
        let out = e.cli(&args).await;
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stdout)
        );
        assert!(
            text(&out.stderr).contains(want),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(e.tip(), before, "{args:?}");
        assert_eq!(e.file("baselines/nightly.json"), pointer, "{args:?}");
    }
    // Every token minted was revoked.
    assert!(e.sim.tokens().iter().all(|t| t.revoked));
}
