//! `benchops-publish provision` against the GitHub simulator, through the
//! binary: a misprovisioned repository fails verify with each wrong thing
//! named; plan lists what apply would do and what needs an owner; apply
//! with the App alone creates only the labels and leaves the rest as
//! manual steps; nothing that exists is changed; bad usage exits 2.

use std::path::Path;
use std::process::{Command, Output};

use benchops_testkit::GitHubSim;
use benchops_testkit::records::TWO_LANE_MANIFEST;
use benchops_testkit::sim::auth::TEST_APP_PRIVATE_KEY_PEM;
use serde_json::{Value, json};

const PUBLISH: &str = env!("CARGO_BIN_EXE_benchops-publish");
const WORKFLOW: &str = include_str!("../../../../workflows/benchmark-publication.yml");

async fn run(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("the binary runs"))
        .await
        .expect("joined")
}

fn provision(sim: &GitHubSim, root: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(PUBLISH);
    c.arg("provision")
        .args(args)
        .args(["--repo", "acme/bench", "--manifest"])
        .arg(root.join("schedule.toml"))
        .env("GITHUB_API_URL", sim.base_url())
        .env_remove("BENCHOPS_APP_KEY_FILE");
    c
}

fn with_app(mut c: Command, sim: &GitHubSim, root: &Path) -> Command {
    c.arg("--app-id")
        .arg(sim.app_id().to_string())
        .arg("--app-key-file")
        .arg(root.join("app.pem"));
    c
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}):\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

/// A repository set up wrongly in every way provision checks.
async fn misprovisioned() -> (GitHubSim, tempfile::TempDir, String) {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::write(tmp.path().join("app.pem"), TEST_APP_PRIVATE_KEY_PEM).expect("key");
    std::fs::write(tmp.path().join("schedule.toml"), TWO_LANE_MANIFEST).expect("manifest");
    let sim = GitHubSim::start().await;
    sim.create_repo("acme", "bench");
    let inst = sim.installation_id("acme").expect("installed");
    sim.set_installation_permissions(
        inst,
        &[
            ("actions", "read"),
            ("administration", "write"),
            ("contents", "write"),
            ("issues", "write"),
            ("metadata", "read"),
        ],
    );
    sim.set_repository_selection(inst, "all");
    sim.put_environment("acme", "bench", "benchmark-publication", None, &[]);
    sim.insert_ruleset(
        "acme",
        "bench",
        json!({
            "name": "history",
            "target": "branch",
            "enforcement": "active",
            "bypass_actors": [
                {"actor_id": sim.app_id(), "actor_type": "Integration", "bypass_mode": "always"},
                {"actor_id": 5, "actor_type": "RepositoryRole", "bypass_mode": "always"}
            ],
            "conditions": {"ref_name": {"include": ["refs/heads/benchmark-history"], "exclude": []}},
            "rules": [{"type": "deletion"}, {"type": "non_fast_forward"}, {"type": "update"}]
        }),
    );
    let pushy = WORKFLOW.replacen(
        "  workflow_dispatch:\n",
        "  push:\n  workflow_dispatch:\n",
        1,
    );
    sim.commit_files(
        "acme",
        "bench",
        "main",
        &[(
            ".github/workflows/benchmark-publication.yml",
            pushy.as_bytes(),
        )],
        "workflow",
    );
    let owner = sim.mint_token(
        inst,
        &[
            ("administration", "write"),
            ("actions", "read"),
            ("contents", "read"),
            ("issues", "write"),
        ],
        Some(&["bench"]),
    );
    (sim, tmp, owner)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_names_every_wrong_thing_and_apply_changes_nothing_that_exists() {
    let (sim, tmp, owner) = misprovisioned().await;
    let root = tmp.path();
    let mut verify = with_app(provision(&sim, root, &["verify", "--json"]), &sim, root);
    verify.args(["--token-env", "OWNER"]).env("OWNER", &owner);
    let o = run(verify).await;
    assert_eq!(o.status.code(), Some(1));
    let r = json_of(&o);
    assert_eq!(r["schema"], "provision-report/v1");
    assert_eq!(r["passed"], false);
    let expect = [
        (
            "app-installation",
            "administration: write is granted and must not be",
        ),
        ("app-repository-access", "covers all repositories"),
        ("environment", "allows every branch"),
        ("history-ruleset", "also lets RepositoryRole 5 bypass it"),
        ("handoff-ruleset", "not needed"),
        ("labels", "\"benchmark-drift\" is missing"),
        ("workflow", "triggered by push"),
    ];
    for (id, says) in expect {
        let c = check(&r, id);
        assert!(
            c["detail"].as_str().expect("detail").contains(says),
            "{id}: {c:#}"
        );
        assert_eq!(c["passed"], id == "handoff-ruleset", "{id}: {c:#}");
    }
    // The report validates against its schema.
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../schemas/provision-report.v1.schema.json"
        ))
        .expect("schema"),
    )
    .expect("schema JSON");
    let v = jsonschema::validator_for(&schema).expect("compiles");
    let errors: Vec<String> = v.iter_errors(&r).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");

    // Text: one line per check and the count.
    let o = run(with_app(provision(&sim, root, &["verify"]), &sim, root)).await;
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("FAIL  app-installation"), "{text}");
    assert!(text.contains("by hand: "), "{text}");
    assert!(
        text.contains("of 7 checks passed: not ready to publish"),
        "{text}"
    );

    // An existing environment is never changed: fixing it is manual.
    let manual: Vec<String> = r["manual"]
        .as_array()
        .expect("manual")
        .iter()
        .map(|m| m.as_str().expect("text").to_owned())
        .collect();
    assert!(
        manual
            .iter()
            .any(|m| m.starts_with("environment: ") && m.contains("Selected branches")),
        "{manual:#?}"
    );

    // Plan with the App alone, the environment gone: labels it can
    // create, the environment only an owner can.
    assert!(sim.delete_environment("acme", "bench", "benchmark-publication"));
    let o = run(with_app(
        provision(&sim, root, &["plan", "--json"]),
        &sim,
        root,
    ))
    .await;
    assert_eq!(o.status.code(), Some(1));
    let r = json_of(&o);
    let steps = r["steps"].as_array().expect("steps");
    assert!(steps.iter().any(|s| s["step"] == "create_label"
        && s["outcome"] == "would_do"
        && s["credential"] == "App issues token"));
    assert!(
        steps
            .iter()
            .any(|s| s["step"] == "put_environment" && s["outcome"] == "needs_owner")
    );
    let labels_before = sim.labels("acme", "bench").len();
    assert_eq!(labels_before, 0, "plan writes nothing");

    // Apply with the App alone: the labels are created, the rest is left
    // for an owner; the existing ruleset and environment are untouched.
    let rulesets_before = sim.rulesets("acme", "bench");
    let o = run(with_app(
        provision(&sim, root, &["apply", "--json"]),
        &sim,
        root,
    ))
    .await;
    assert_eq!(o.status.code(), Some(1));
    let r = json_of(&o);
    assert_eq!(check(&r, "labels")["passed"], true, "{r:#}");
    assert!(!r["manual"].as_array().expect("manual").is_empty());
    let names: Vec<String> = sim
        .labels("acme", "bench")
        .into_iter()
        .map(|l| l.name)
        .collect();
    for want in [
        "benchmark-drift",
        "drift-accepted",
        "lane:nightly",
        "lane:sentinel",
        "benchmark-missed-run",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    assert_eq!(sim.rulesets("acme", "bench"), rulesets_before);
    assert!(
        sim.environment("acme", "bench", "benchmark-publication")
            .is_none(),
        "creating the environment needs an owner token: apply did not"
    );
    // Every token it minted was revoked.
    assert!(
        sim.tokens()
            .iter()
            .filter(|t| t.permissions.len() > 1 && !t.permissions.contains_key("administration"))
            .all(|t| t.revoked)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_usage_exits_2_with_the_reason() {
    let (sim, tmp, owner) = misprovisioned().await;
    let root = tmp.path();
    // A repository that cannot be read, with an owner token: 2, not a
    // checklist of unreadable parts.
    let mut c = Command::new(PUBLISH);
    c.args(["provision", "verify", "--repo", "acme/absent", "--manifest"])
        .arg(root.join("schedule.toml"))
        .args(["--token-env", "OWNER"])
        .env("OWNER", &owner)
        .env("GITHUB_API_URL", sim.base_url())
        .env_remove("BENCHOPS_APP_KEY_FILE");
    let o = run(c).await;
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("acme/absent cannot be read"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // No credential at all.
    let o = run(provision(&sim, root, &["verify"])).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--token-env"));
    // A token variable that is not set.
    let mut c = provision(&sim, root, &["verify", "--token-env", "NOT_SET_ANYWHERE"]);
    c.env_remove("NOT_SET_ANYWHERE");
    let o = run(c).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("NOT_SET_ANYWHERE"));
    // A bad execution actor.
    let o = run(with_app(
        provision(
            &sim,
            root,
            &["verify", "--handoff-refs", "--execution-actor", "Robot:1"],
        ),
        &sim,
        root,
    ))
    .await;
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("must be one of"));
    // A manifest that does not load.
    std::fs::write(root.join("schedule.toml"), "schema = 1\n").expect("bad manifest");
    let o = run(with_app(provision(&sim, root, &["verify"]), &sim, root)).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("schedule.toml"));
    // A repository the App is not installed on, with no owner token.
    std::fs::write(root.join("schedule.toml"), TWO_LANE_MANIFEST).expect("manifest");
    let mut c = with_app(provision(&sim, root, &["verify"]), &sim, root);
    let args: Vec<String> = c
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut c2 = Command::new(PUBLISH);
    c2.args(args.iter().map(|a| {
        if a == "acme/bench" {
            "other/repo"
        } else {
            a.as_str()
        }
    }))
    .env("GITHUB_API_URL", sim.base_url())
    .env_remove("BENCHOPS_APP_KEY_FILE");
    c = c2;
    let o = run(c).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("other/repo"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
