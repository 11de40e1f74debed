//! A CLI adapter platform from the real binary: a scripted stand-in for
//! another hosting platform's CLI, configured in a semantics config of the
//! test's own. Its operations run as measured commands (tool calls and
//! token estimates from what was typed and read), the operations it lacks
//! are structural rows, its untimed setup and cleanup run around each run,
//! a failure skips the rest, the subject token reaches it under its own
//! name only, and a large race without the opt-in runs none of its
//! commands.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const SCRIPT: &str = r#"#!/bin/sh
echo "$* token=${FORGE_TOKEN:-none} gh=${GH_TOKEN:-none}" >> "$HOME/forge.log"
case "$1" in
  mount) mkdir -p "$3"; [ -f "$HOME/fail-mount" ] && { echo "mount refused" >&2; exit 4; }; exit 0 ;;
  push) echo "pushed $2 to the forge"; exit 0 ;;
  merge) if [ -f "$HOME/fail-merge" ]; then echo "merge conflict" >&2; exit 7; fi; echo merged; exit 0 ;;
  switch) echo "on $2"; exit 0 ;;
  unmount) exit 0 ;;
esac
exit 9
"#;

fn semantics(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("semantics.toml");
    std::fs::write(
        &p,
        r#"
schema_version = 1
protection_variants = ["protection-none", "check-instant"]
implemented = ["protection-none"]
classes = ["integration-default"]

[platforms.github]
semantics_version = "7"
class = "integration-default"

[platforms.forge]
semantics_version = "7"
class = "integration-default"
binary = "forge"
setup = [["forge", "mount", "{repo}", "{workdir}/checkout"]]
cleanup = [["forge", "unmount", "{workdir}/checkout"]]

[platforms.forge.commands]
"branch.publish" = [["forge", "push", "{branch}"]]
"integration.merge.request" = [["forge", "merge"]]
"integration.sync.local" = [["forge", "switch", "main"]]

[platforms.forge.structural]
"integration.open" = "the change request exists once pushed"
"integration.visible.settle" = "push returns once visible"
"integration.mergeable.settle" = "no asynchronous mergeability"
"integration.merged.settle" = "merge is synchronous"
"integration.main.settle" = "merge returns after main moved"
"integration.checks.green.settle" = "no hosted status checks"
"#,
    )
    .expect("semantics");
    p
}

fn run(dir: &Path, switches: &[&str]) -> (Output, Vec<Value>) {
    run_scenario(dir, switches, "pr_single_anatomy", &[])
}

fn run_scenario(
    dir: &Path,
    switches: &[&str],
    scenario: &str,
    extra: &[&str],
) -> (Output, Vec<Value>) {
    for s in switches {
        std::fs::write(dir.join(s), "").expect("switch");
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/platform");
    run_spec(dir, &examples.join("scenarios.toml"), scenario, extra)
}

/// Runs `scenario` of the spec at `spec` on the scripted forge.
fn run_spec(dir: &Path, spec: &Path, scenario: &str, extra: &[&str]) -> (Output, Vec<Value>) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let script = bin.join("forge");
    std::fs::write(&script, SCRIPT).expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new(env!("CARGO_BIN_EXE_benchops-exec"));
    c.arg("platform")
        .arg("--spec")
        .arg(spec)
        .arg("--semantics")
        .arg(semantics(dir))
        .arg("--results")
        .arg(dir.join("results"))
        .arg("--workdir")
        .arg(dir.join("work"))
        .args([
            "--platform",
            "forge",
            "--driver",
            "cli",
            "--scenario",
            scenario,
            "--repo",
            "team/scratch",
            "--token-env",
            "FORGE_TOKEN",
        ])
        .args(extra)
        .env("PATH", path)
        // The adapter's commands get a clean environment: HOME is how the
        // script finds its log and the test's failure switches.
        .env("HOME", dir)
        .env("FORGE_TOKEN", "s3cr3t")
        .env("GH_TOKEN", "must-not-leak");
    let o = c.output().expect("runs");
    let file = std::fs::read_dir(dir.join("results"))
        .expect("results")
        .map(|e| e.expect("e").path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("jsonl");
    let rows = std::fs::read_to_string(file)
        .expect("read")
        .lines()
        .map(|l| serde_json::from_str(l).expect("row"))
        .collect();
    (o, rows)
}

#[test]
fn an_adapter_runs_its_commands_and_reports_what_it_has_no_equivalent_for() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (o, rows) = run(tmp.path(), &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(rows.len(), 9);
    let by = |op: &str| {
        rows.iter()
            .find(|r| r["operation"] == op)
            .expect(op)
            .clone()
    };
    let publish = by("branch.publish");
    assert_eq!(publish["returncode"], 0);
    assert_eq!(publish["tool_call_count"], 1);
    assert!(
        publish["command"][0]
            .as_str()
            .is_some_and(|c| c.starts_with("forge push benchops-platform-")),
        "{publish}"
    );
    assert!(
        publish["estimated_tokens_input"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    assert!(
        publish["estimated_tokens_output"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    assert!(publish["raw_output_bytes"].as_u64().is_some_and(|n| n > 0));
    assert_eq!(publish["semantic_contract_match"], true);
    let open = by("integration.open");
    assert_eq!(open["structural"], true);
    assert_eq!(open["elapsed_ms"], 0.0);
    assert_eq!(open["tool_call_count"], 0);
    assert_eq!(open["command"], serde_json::json!([]));
    assert_eq!(open["note"], "the change request exists once pushed");
    let settle = by("integration.mergeable.settle");
    assert!(
        settle["settle_elapsed_ms"].is_null(),
        "nothing to settle: null, not zero"
    );
    assert_eq!(settle["poll_iterations"], 0);
    let total = by("integration.total");
    assert_eq!(total["tool_call_count"], 3);
    assert!(
        total["estimated_tokens_total"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );

    let log = std::fs::read_to_string(tmp.path().join("forge.log")).expect("log");
    let lines: Vec<&str> = log.lines().collect();
    assert!(
        lines[0].starts_with("mount team/scratch "),
        "setup first: {log}"
    );
    assert!(
        lines.last().is_some_and(|l| l.starts_with("unmount ")),
        "cleanup last: {log}"
    );
    assert!(
        lines.iter().all(|l| l.contains("token=s3cr3t gh=none")),
        "the subject token reaches the adapter under its own name, nothing else does: {log}"
    );
    assert!(
        !std::fs::read_to_string(
            std::fs::read_dir(tmp.path().join("results"))
                .expect("r")
                .map(|e| e.expect("e").path())
                .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .expect("jsonl")
        )
        .expect("read")
        .contains("s3cr3t"),
        "the token is never written"
    );
}

#[test]
fn a_failed_merge_skips_the_rest_and_a_failed_setup_skips_everything() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (o, rows) = run(tmp.path(), &["fail-merge"]);
    assert_eq!(o.status.code(), Some(1), "a failure exits 1");
    let merge = rows
        .iter()
        .find(|r| r["operation"] == "integration.merge.request")
        .expect("merge row");
    assert_eq!(merge["returncode"], 7);
    assert!(
        merge["stderr"]
            .as_str()
            .is_some_and(|e| e.contains("merge conflict"))
    );
    for op in [
        "integration.merged.settle",
        "integration.main.settle",
        "integration.sync.local",
    ] {
        let r = rows.iter().find(|r| r["operation"] == op).expect(op);
        assert_eq!(
            r["skip_reason"], "prior_step_failed:integration.merge.request",
            "{r}"
        );
    }
    let total = rows.last().expect("total");
    assert_eq!(total["operation"], "integration.total");
    assert_eq!(total["returncode"], 1);

    let tmp = tempfile::tempdir().expect("tmp");
    let (o, rows) = run(tmp.path(), &["fail-mount"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        rows.iter()
            .all(|r| r["skip_reason"] == "setup_failed:forge:mount refused"),
        "{rows:?}"
    );
}

#[test]
fn an_adapter_races_branch_after_branch_with_its_own_setup_and_pacing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (o, rows) = run_scenario(
        tmp.path(),
        &[],
        "integration_race_n3",
        &["--ops-per-hour", "36000"],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(rows.len(), 3 * 8 + 4);
    for b in 0..3 {
        let mine: Vec<&Value> = rows.iter().filter(|r| r["race_branch"] == b).collect();
        assert_eq!(mine.len(), 8);
        assert!(mine.iter().all(|r| r["returncode"] == 0), "{mine:#?}");
    }
    let log = std::fs::read_to_string(tmp.path().join("forge.log")).expect("log");
    assert_eq!(
        log.lines().filter(|l| l.starts_with("mount ")).count(),
        3,
        "{log}"
    );
    assert_eq!(
        log.lines().filter(|l| l.starts_with("merge")).count(),
        3,
        "{log}"
    );
    assert_eq!(
        log.lines().filter(|l| l.starts_with("unmount ")).count(),
        3,
        "{log}"
    );
    let pacing = rows
        .iter()
        .find(|r| r["operation"] == "race.pacing.injected")
        .expect("pacing");
    assert!(
        pacing["elapsed_ms"].as_f64().is_some_and(|x| x > 0.0),
        "{pacing}"
    );
    assert!(
        rows.iter()
            .filter(|r| r.get("pacing_injected_ms").is_some())
            .all(|r| r["elapsed_ms"].as_f64() >= r["pacing_injected_ms"].as_f64()),
        "waits are inside the operations"
    );
    let total = rows
        .iter()
        .find(|r| r["operation"] == "race.total")
        .expect("total");
    assert_eq!(total["returncode"], 0);
}

#[test]
fn a_large_adapter_race_is_refused_without_the_opt_in_and_runs_no_command() {
    let tmp = tempfile::tempdir().expect("tmp");
    let spec = tmp.path().join("spec.toml");
    std::fs::write(
        &spec,
        r#"
[[scenarios]]
name = "integration_race_n101"
requires_remote = true
operations = ["branch.publish", "integration.open", "integration.merge.request",
  "race.publish.window", "race.integrate.window", "race.pacing.injected", "race.total"]
"#,
    )
    .expect("spec");
    let (o, rows) = run_spec(tmp.path(), &spec, "integration_race_n101", &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert_eq!(rows.len(), 7, "one skip row per declared operation");
    assert!(
        rows.iter().all(|r| r["skipped"] == true
            && r["skip_reason"]
                == "integration_race_large_live_requires_opt_in:--allow-large-live-run"),
        "{rows:#?}"
    );
    assert!(
        !tmp.path().join("forge.log").exists(),
        "the adapter's CLI never ran"
    );
}
