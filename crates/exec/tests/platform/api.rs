//! The `harness-api` driver from the real binary against the project's
//! stateful GitHub simulator: the token reaches the driver through the
//! variable `--token-env` names and is never written, and a large live
//! fleet or race is refused with exit 3 before any request.

use std::path::{Path, PathBuf};

use benchops_testkit::GitHubSim;

const SPEC: &str = r#"
[defaults]
settle_interval_s = 1.0
settle_timeout_s = 30.0
command_timeout_s = 10.0

[[scenarios]]
name = "platform_capability_probe"
operations = ["capability.probe"]

[[scenarios]]
name = "integration_race_n5000"
requires_remote = true
operations = ["branch.publish", "integration.open", "integration.visible.settle",
  "integration.mergeable.settle", "integration.merge.request", "integration.merged.settle",
  "integration.main.settle", "race.publish.window", "race.integrate.window",
  "race.pacing.injected", "race.total"]

[[scenarios]]
name = "branch_fleet_n101"
requires_remote = true
operations = ["fleet.seed", "fleet.classify", "fleet.plan", "fleet.apply", "fleet.sync",
  "fleet.oracle", "fleet.total"]
"#;

const SEMANTICS: &str = r#"
schema_version = 1
protection_variants = ["protection-none", "check-instant"]
implemented = ["protection-none", "check-instant"]
classes = ["integration-default"]
[platforms.github]
semantics_version = "2026-12"
class = "integration-default"
"#;

struct Fixture {
    sim: GitHubSim,
    token: String,
    dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let sim = GitHubSim::start().await;
    sim.create_repo("octo", "bench");
    let iid = sim.installation_id("octo").expect("installed");
    let token = sim.mint_token(
        iid,
        &[
            ("contents", "write"),
            ("pull_requests", "write"),
            ("statuses", "write"),
        ],
        Some(&["bench"]),
    );
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("spec.toml"), SPEC).expect("spec");
    std::fs::write(dir.path().join("semantics.toml"), SEMANTICS).expect("semantics");
    Fixture { sim, token, dir }
}

fn exec() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_benchops-exec"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_probes_with_the_token_named_by_token_env() {
    let f = fixture().await;
    let d: &Path = f.dir.path();
    let mut c = std::process::Command::new(exec());
    c.arg("platform")
        .args([
            "--driver",
            "harness-api",
            "--scenario",
            "platform_capability_probe",
        ])
        .args([
            "--repo",
            "octo/bench",
            "--token-env",
            "SUBJECT_TOKEN",
            "--json",
        ])
        .arg("--spec")
        .arg(d.join("spec.toml"))
        .arg("--semantics")
        .arg(d.join("semantics.toml"))
        .arg("--results")
        .arg(d.join("cli-results"))
        .arg("--workdir")
        .arg(d.join("cli-work"))
        .arg("--api-url")
        .arg(f.sim.base_url())
        .env("SUBJECT_TOKEN", &f.token);
    let o = tokio::task::spawn_blocking(move || c.output().expect("runs"))
        .await
        .expect("joined");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(summary["rows"], 1);
    assert_eq!(summary["failed"], 0);
    let jsonl = std::fs::read_to_string(summary["results"].as_str().expect("path")).expect("rows");
    assert!(!jsonl.contains(&f.token), "the token is never written");
    assert!(jsonl.contains("\"token_env\":\"SUBJECT_TOKEN\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_refuses_a_large_live_platform_fleet_with_exit_3_and_no_request() {
    let f = fixture().await;
    f.sim.clear_requests();
    let d: &Path = f.dir.path();
    let mut c = std::process::Command::new(exec());
    c.arg("platform")
        .args(["--driver", "harness-api", "--scenario", "branch_fleet_n101"])
        .args(["--repo", "octo/bench", "--token-env", "SUBJECT_TOKEN"])
        .arg("--spec")
        .arg(d.join("spec.toml"))
        .arg("--semantics")
        .arg(d.join("semantics.toml"))
        .arg("--results")
        .arg(d.join("gate-results"))
        .arg("--workdir")
        .arg(d.join("gate-work"))
        .arg("--api-url")
        .arg(f.sim.base_url())
        .env("SUBJECT_TOKEN", &f.token);
    let o = tokio::task::spawn_blocking(move || c.output().expect("runs"))
        .await
        .expect("joined");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(
            "[skip] every row was skipped: branch_fleet_large_live_requires_opt_in:--allow-large-live-run"
        ),
        "{stderr}"
    );
    assert_eq!(f.sim.requests().len(), 0, "no request reached the platform");
    assert!(f.sim.pulls("octo", "bench").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_refuses_a_live_race_of_5000_with_exit_3_and_no_request() {
    let f = fixture().await;
    f.sim.clear_requests();
    let d: &Path = f.dir.path();
    for opt_in in [
        None,
        Some("--allow-large-live-run"),
        Some("--allow-large-fleet"),
    ] {
        let mut c = std::process::Command::new(exec());
        c.arg("platform")
            .args([
                "--driver",
                "harness-api",
                "--scenario",
                "integration_race_n5000",
            ])
            .args(["--repo", "octo/bench", "--token-env", "SUBJECT_TOKEN"])
            .args(opt_in)
            .arg("--spec")
            .arg(d.join("spec.toml"))
            .arg("--semantics")
            .arg(d.join("semantics.toml"))
            .arg("--results")
            .arg(d.join("race-results"))
            .arg("--workdir")
            .arg(d.join("race-work"))
            .arg("--api-url")
            .arg(f.sim.base_url())
            .env("SUBJECT_TOKEN", &f.token);
        let o = tokio::task::spawn_blocking(move || c.output().expect("runs"))
            .await
            .expect("joined");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{opt_in:?}: {stderr}");
        assert!(
            stderr.contains(
                "[skip] every row was skipped: integration_race_live_ceiling_exceeded:5000>1000"
            ),
            "{opt_in:?}: {stderr}"
        );
    }
    assert_eq!(f.sim.requests().len(), 0, "no request reached the platform");
    assert!(f.sim.pulls("octo", "bench").is_empty());
}
