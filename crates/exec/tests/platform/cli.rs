//! `benchops-exec platform` from the real binary: the fake-provider triage
//! and fleet scenarios with their oracles; skip-only runs (no token, no
//! `gh`, no adapter binary, a family the fake provider lacks) that exit 3
//! with a reason on every row; configuration errors that exit 2 naming the
//! file; and results written for every run under a unique run id.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/platform")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn platform(dir: &Path, args: &[&str]) -> Output {
    platform_env(dir, args, &[])
}

/// `platform` with `env` set for it.
fn platform_env(dir: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_benchops-exec"));
    c.arg("platform")
        .arg("--spec")
        .arg(examples().join("scenarios.toml"))
        .arg("--semantics")
        .arg(examples().join("semantics.toml"))
        .arg("--results")
        .arg(dir.join("results"))
        .arg("--workdir")
        .arg(dir.join("work"))
        .args(args)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GITHUB_API_URL");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("platform runs")
}

/// The rows of every results file in `dir/results`, file by file.
fn results(dir: &Path) -> Vec<Vec<Value>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("results"))
        .expect("results dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .expect("jsonl")
                .lines()
                .map(|l| serde_json::from_str(l).expect("a JSON row"))
                .collect()
        })
        .collect()
}

fn ops(rows: &[Value]) -> Vec<&str> {
    rows.iter()
        .map(|r| r["operation"].as_str().expect("operation"))
        .collect()
}

#[test]
fn fake_triage_runs_the_declared_operations_and_its_oracle_passes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let o = platform(
        tmp.path(),
        &[
            "--driver",
            "fake-provider",
            "--scenario",
            "branch_triage_n8",
            "--runs",
            "2",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let all = results(tmp.path());
    assert_eq!(all.len(), 1);
    let rows = &all[0];
    assert_eq!(rows.len(), 12, "6 operations x 2 runs");
    assert_eq!(
        ops(&rows[..6]),
        [
            "triage.seed",
            "triage.review",
            "triage.plan",
            "triage.apply",
            "triage.oracle",
            "triage.total"
        ]
    );
    let oracle = &rows[4]["oracle"];
    for k in [
        "action_plan_correct",
        "merge_order_correct",
        "final_survivors_correct",
        "conflict_count_correct",
    ] {
        assert_eq!(oracle[k], true, "{k}: {oracle}");
    }
    assert_eq!(rows[4]["conflict_detected_count"], 2);
    assert_eq!(
        rows[3]["final_survivors"],
        serde_json::json!(["triage-conflicting-3", "triage-conflicting-7"])
    );
    for r in rows {
        assert_eq!(r["skipped"], false);
        assert_eq!(r["returncode"], 0);
        assert_eq!(
            r["semantic_contract_match"], false,
            "a fake provider executes no hosted workflow"
        );
        assert!(r["estimated_tokens_total"].is_null(), "unmeasured is null");
        assert!(
            r["token_fields_note"]
                .as_str()
                .is_some_and(|n| n.contains("fake-provider"))
        );
        assert!(r["elapsed_ms"].as_f64().is_some_and(|x| x >= 0.0));
    }
    assert_eq!(rows[6]["run"], 1);
    let md = std::fs::read_dir(tmp.path().join("results"))
        .expect("dir")
        .map(|e| e.expect("e").path())
        .find(|p| p.extension().is_some_and(|e| e == "md"))
        .expect("a summary");
    let md = std::fs::read_to_string(md).expect("md");
    assert!(md.contains("| `triage.oracle` |"), "{md}");
}

#[test]
fn fake_fleet_observes_its_survivors_and_separates_setup_from_workflow() {
    let tmp = tempfile::tempdir().expect("tmp");
    let o = platform(
        tmp.path(),
        &[
            "--driver",
            "fake-provider",
            "--scenario",
            "branch_fleet_n10",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let rows = &results(tmp.path())[0];
    assert_eq!(
        ops(rows),
        [
            "fleet.seed",
            "fleet.classify",
            "fleet.plan",
            "fleet.apply",
            "fleet.sync",
            "fleet.oracle",
            "fleet.total"
        ]
    );
    assert_eq!(rows[3]["branches_merged"], 7);
    assert_eq!(rows[4]["final_survivors"].as_array().map(Vec::len), Some(3));
    assert_eq!(rows[5]["oracle"]["final_survivors_correct"], true);
    assert_eq!(rows[5]["oracle"]["conflict_detected_count"], 3);
    let total = &rows[6];
    assert_eq!(total["returncode"], 0);
    assert!(total["workflow_elapsed_ms"].is_number());
    assert_eq!(total["setup_operations"], serde_json::json!(["fleet.seed"]));
}

fn assert_all_skipped(o: &Output, dir: &Path, reason: &str, count: usize) {
    assert_eq!(
        o.status.code(),
        Some(3),
        "every row skipped exits 3: {}",
        text(&o.stderr)
    );
    assert!(
        text(&o.stderr).contains(&format!("[skip] every row was skipped: {reason}")),
        "{}",
        text(&o.stderr)
    );
    let all = results(dir);
    let rows = all
        .last()
        .expect("results are written even when nothing ran");
    assert_eq!(rows.len(), count);
    for r in rows {
        assert_eq!(r["skipped"], true, "{r}");
        assert_eq!(r["skip_reason"], reason);
        assert!(r["returncode"].is_null(), "a skip has no return code: {r}");
        assert_eq!(r["semantic_contract_match"], false);
        if r["operation"]
            .as_str()
            .is_some_and(|op| op.ends_with(".settle"))
        {
            assert!(r["settle_elapsed_ms"].is_null());
            assert_eq!(r["poll_quantization_ms"], 2000.0);
        }
    }
}

#[test]
fn without_credentials_binaries_or_a_family_every_row_skips_with_its_reason() {
    let tmp = tempfile::tempdir().expect("tmp");
    let o = platform(
        tmp.path(),
        &[
            "--driver",
            "harness-api",
            "--scenario",
            "pr_single_anatomy",
            "--repo",
            "octo/bench",
        ],
    );
    assert_all_skipped(&o, tmp.path(), "github_token_missing:GITHUB_TOKEN", 9);

    // No gh on PATH for the CLI driver.
    let tmp = tempfile::tempdir().expect("tmp");
    let empty = tempfile::tempdir().expect("empty PATH dir");
    let o = platform_env(
        tmp.path(),
        &["--driver", "cli", "--scenario", "pr_single_anatomy"],
        &[
            ("PATH", empty.path().as_os_str()),
            ("GITHUB_TOKEN", std::ffi::OsStr::new("t")),
        ],
    );
    assert_all_skipped(&o, tmp.path(), "gh_cli_missing", 9);

    // check-instant cannot be executed by the CLI driver.
    let tmp = tempfile::tempdir().expect("tmp");
    let o = platform(
        tmp.path(),
        &[
            "--driver",
            "cli",
            "--scenario",
            "pr_single_anatomy",
            "--protection-variant",
            "check-instant",
        ],
    );
    assert_all_skipped(
        &o,
        tmp.path(),
        "protection_variant_requires_api_driver:check-instant",
        9,
    );

    // An adapter whose binary is missing.
    let tmp = tempfile::tempdir().expect("tmp");
    let o = platform(
        tmp.path(),
        &[
            "--platform",
            "oak",
            "--driver",
            "cli",
            "--scenario",
            "pr_single_anatomy",
        ],
    );
    assert_all_skipped(&o, tmp.path(), "oak_cli_missing:oak", 9);

    // A family the fake provider does not implement: no process, no network.
    let tmp = tempfile::tempdir().expect("tmp");
    let o = platform(
        tmp.path(),
        &[
            "--driver",
            "fake-provider",
            "--scenario",
            "integration_race_n3",
        ],
    );
    assert_all_skipped(
        &o,
        tmp.path(),
        "fake_provider_has_no_integration_race_scenario",
        12,
    );
}

#[test]
fn configuration_errors_exit_2_and_name_the_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let o = platform(tmp.path(), &["--scenario", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr)
            .contains("scenarios.toml: no scenario \"nope\"; it has: platform_capability_probe"),
        "{}",
        text(&o.stderr)
    );
    let o = platform(tmp.path(), &["--protection-variant", "strict"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("protection variant \"strict\" is not declared"));
    let o = platform(tmp.path(), &["--platform", "gitlab"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("platform \"gitlab\" is not configured"));

    let bad = tmp.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[[scenarios]]\nname = \"x\"\noperations = [\"a\", \"a\"]\n",
    )
    .expect("w");
    let o = Command::new(env!("CARGO_BIN_EXE_benchops-exec"))
        .arg("platform")
        .arg("--spec")
        .arg(&bad)
        .arg("--semantics")
        .arg(examples().join("semantics.toml"))
        .arg("--results")
        .arg(tmp.path().join("r"))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("bad.toml: `scenarios[0].operations[1]`: \"a\" is declared twice"),
        "{err}"
    );
    assert!(
        !tmp.path().join("r").exists(),
        "nothing is written for a bad input"
    );
}

#[test]
fn two_runs_in_the_same_second_keep_both_results() {
    let tmp = tempfile::tempdir().expect("tmp");
    for _ in 0..2 {
        let o = platform(
            tmp.path(),
            &[
                "--driver",
                "fake-provider",
                "--scenario",
                "branch_triage_n4",
            ],
        );
        // branch_triage_n4 is not in the spec: a configuration error.
        assert_eq!(o.status.code(), Some(2));
    }
    for _ in 0..2 {
        let o = platform(
            tmp.path(),
            &[
                "--driver",
                "fake-provider",
                "--scenario",
                "branch_triage_n8",
            ],
        );
        assert_eq!(o.status.code(), Some(0));
    }
    let all = results(tmp.path());
    assert_eq!(all.len(), 2, "one file per run id");
    assert_ne!(all[0][0]["run_id"], all[1][0]["run_id"]);
    assert!(
        all.iter().all(|rows| rows
            .iter()
            .all(|r| r["measurement_lock_wait_ms"].is_number())),
        "the lock wait is reported"
    );
}

/// `platform` with its own spec and semantics files.
fn platform_with(dir: &Path, spec: &str, semantics: &str, args: &[&str]) -> Output {
    let spec_file = dir.join("spec.toml");
    let semantics_file = dir.join("semantics.toml");
    std::fs::write(&spec_file, spec).expect("spec");
    std::fs::write(&semantics_file, semantics).expect("semantics");
    Command::new(env!("CARGO_BIN_EXE_benchops-exec"))
        .arg("platform")
        .arg("--spec")
        .arg(&spec_file)
        .arg("--semantics")
        .arg(&semantics_file)
        .arg("--results")
        .arg(dir.join("results"))
        .arg("--workdir")
        .arg(dir.join("work"))
        .args(args)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GITHUB_API_URL")
        .output()
        .expect("platform runs")
}

const FLEETS: &str = r#"
[[scenarios]]
name = "branch_fleet_n10"
operations = ["fleet.seed", "fleet.classify", "fleet.plan", "fleet.apply", "fleet.sync", "fleet.oracle", "fleet.total"]

[[scenarios]]
name = "branch_fleet_n15"
operations = ["fleet.seed", "fleet.classify", "fleet.plan", "fleet.apply", "fleet.sync", "fleet.oracle", "fleet.total"]

[[scenarios]]
name = "branch_fleet_n35"
operations = ["fleet.seed", "fleet.classify", "fleet.plan", "fleet.apply", "fleet.sync", "fleet.oracle", "fleet.total"]
"#;

const SLOW_DECLARED: &str = r#"
schema_version = 1
protection_variants = ["protection-none", "check-instant", "check-required-slow"]
implemented = ["protection-none", "check-instant"]
classes = ["integration-default"]
[platforms.github]
semantics_version = "v1"
class = "integration-default"
"#;

#[test]
fn the_fake_provider_skips_every_platform_row_under_an_unimplemented_variant() {
    let tmp = tempfile::tempdir().expect("tmp");
    let o = platform_with(
        tmp.path(),
        FLEETS,
        SLOW_DECLARED,
        &[
            "--driver",
            "fake-provider",
            "--scenario",
            "branch_fleet_n10",
            "--protection-variant",
            "check-required-slow",
        ],
    );
    let reason = "protection_variant_not_implemented:check-required-slow";
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains(&format!("[skip] every row was skipped: {reason}")),
        "{}",
        text(&o.stderr)
    );
    let rows = &results(tmp.path())[0];
    assert_eq!(
        ops(rows),
        [
            "fleet.seed",
            "fleet.classify",
            "fleet.plan",
            "fleet.apply",
            "fleet.sync",
            "fleet.oracle",
            "fleet.total"
        ]
    );
    for r in rows {
        assert_eq!(r["skipped"], true, "{r}");
        assert_eq!(r["skip_reason"], reason);
        assert!(r["returncode"].is_null());
        assert_eq!(r["elapsed_ms"], 0.0);
        assert_eq!(r["semantic_contract_match"], false);
        assert_eq!(r["protection_variant"], "check-required-slow");
        assert!(
            r.get("oracle").is_none() && r.get("branch_count").is_none(),
            "{r}"
        );
    }
}

#[test]
fn fake_fleet_platform_rows_carry_the_seed_fields_and_round_conflicts_like_the_seed() {
    for (scenario, conflicts, merged) in [("branch_fleet_n15", 4, 11), ("branch_fleet_n35", 10, 25)]
    {
        let tmp = tempfile::tempdir().expect("tmp");
        let o = platform_with(
            tmp.path(),
            FLEETS,
            SLOW_DECLARED,
            &["--driver", "fake-provider", "--scenario", scenario],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let rows = &results(tmp.path())[0];
        let seed = &rows[0];
        let kinds = seed["seeded_branch_classes"].as_array().expect("classes");
        assert_eq!(
            kinds.iter().filter(|k| *k == "conflicting").count(),
            conflicts,
            "{scenario}"
        );
        assert_eq!(rows[3]["branches_merged"], merged, "{scenario}");
        assert_eq!(rows[5]["oracle"]["conflict_detected_count"], conflicts);
        for r in rows {
            assert_eq!(r["profile"], "platform", "{r}");
            assert_eq!(r["benchmark_track"], "platform-hosted", "{r}");
        }
        let total = &rows[6];
        assert_eq!(
            total["workflow_operations"],
            serde_json::json!([
                "fleet.classify",
                "fleet.plan",
                "fleet.apply",
                "fleet.sync",
                "fleet.oracle"
            ])
        );
        assert_eq!(total["workflow_returncode"], 0);
        assert_eq!(total["workflow_failure_count"], 0);
        assert_eq!(total["workflow_skip_count"], 0);
        assert_eq!(
            total["workflow_tool_call_count"], 0,
            "the fake provider makes no tool call: a measured zero"
        );
        assert_eq!(
            total["summarized_operations"],
            serde_json::json!([
                "fleet.seed",
                "fleet.classify",
                "fleet.plan",
                "fleet.apply",
                "fleet.sync",
                "fleet.oracle"
            ])
        );
    }
}
