//! The `cli` driver on GitHub from the real binary, with real `git` and a
//! scripted `gh` that keeps its pull requests beside a local bare
//! repository (the remote): the anatomy's commands are timed and counted
//! (settle polls are tool calls), mergeability is unknown on the first
//! look, the merge lands on the remote's main, a failed merge skips the
//! rest, and the cleanup removes the branch and the payload from main.
//! `gh` gets the subject token as `GH_TOKEN` and nothing else of it.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const GH: &str = r#"#!/bin/sh
# A stand-in for gh: state under $HOME (prs/<n> holds the head branch).
echo "gh $* GH_TOKEN=${GH_TOKEN:-none} OTHER=${SUBJECT_TOKEN:-none}" >> "$HOME/gh.log"
remote="$HOME/remote.git"
case "$1 $2" in
  "auth status") echo "Logged in"; exit 0 ;;
  "repo clone") git clone -q "$remote" "$4"; exit $? ;;
  "pr create")
    mkdir -p "$HOME/prs"; n=$(( $(ls "$HOME/prs" | wc -l) + 1 ))
    head=""; while [ $# -gt 0 ]; do [ "$1" = "--head" ] && head="$2"; shift; done
    echo "$head" > "$HOME/prs/$n"; echo "https://github.com/octo/bench/pull/$n"; exit 0 ;;
  "pr view")
    n="$3"; field=""; while [ $# -gt 0 ]; do [ "$1" = "--json" ] && field="$2"; shift; done
    [ -f "$HOME/prs/$n" ] || { echo "no pull request $n" >&2; exit 1; }
    case "$field" in
      state) if [ -f "$HOME/prs/$n.merged" ]; then echo MERGED; else echo OPEN; fi ;;
      mergeable)
        c=$(cat "$HOME/prs/$n.looks" 2>/dev/null || echo 0); echo $((c + 1)) > "$HOME/prs/$n.looks"
        if [ "$c" -lt 2 ]; then echo UNKNOWN; else echo MERGEABLE; fi ;;
    esac; exit 0 ;;
  "pr merge")
    n="$3"; [ -f "$HOME/fail-merge" ] && { echo "merge refused: base branch policy" >&2; exit 1; }
    head=$(cat "$HOME/prs/$n"); tmp="$HOME/merge-$n"; rm -rf "$tmp"
    git clone -q "$remote" "$tmp" && cd "$tmp" && git merge -q --no-ff "origin/$head" -m "Merge $n" \
      && git push -q origin main && touch "$HOME/prs/$n.merged"; exit $? ;;
esac
echo "unsupported: $*" >&2; exit 2
"#;

fn setup(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let gh = bin.join("gh");
    std::fs::write(&gh, GH).expect("gh");
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let git = |args: &[&str], cwd: &Path| {
        let o = Command::new("git")
            .args(args)
            .current_dir(cwd)
            .env("HOME", dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .output()
            .expect("git");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    git(&["init", "-q", "--bare", "-b", "main", "remote.git"], dir);
    let seed = dir.join("seed");
    git(
        &[
            "clone",
            "-q",
            dir.join("remote.git").to_str().expect("utf-8"),
            "seed",
        ],
        dir,
    );
    std::fs::write(seed.join("README"), "disposable\n").expect("readme");
    git(&["add", "README"], &seed);
    git(&["commit", "-q", "-m", "first"], &seed);
    git(&["push", "-q", "origin", "HEAD:main"], &seed);
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn run(dir: &Path, path: &str, scenario: &str) -> (Output, Vec<Value>) {
    run_with(dir, path, scenario, &[])
}

fn run_with(dir: &Path, path: &str, scenario: &str, extra: &[&str]) -> (Output, Vec<Value>) {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/platform");
    let spec = dir.join("spec.toml");
    let text = std::fs::read_to_string(examples.join("scenarios.toml"))
        .expect("spec")
        .replace("settle_interval_s = 2.0", "settle_interval_s = 0.05")
        .replace("settle_timeout_s = 300.0", "settle_timeout_s = 5.0");
    std::fs::write(&spec, text).expect("spec");
    let results = dir.join(format!("results-{scenario}"));
    let o = Command::new(env!("CARGO_BIN_EXE_benchops-exec"))
        .arg("platform")
        .arg("--spec")
        .arg(&spec)
        .arg("--semantics")
        .arg(examples.join("semantics.toml"))
        .arg("--results")
        .arg(&results)
        .arg("--workdir")
        .arg(dir.join("work"))
        .args([
            "--driver",
            "cli",
            "--scenario",
            scenario,
            "--repo",
            "octo/bench",
        ])
        .args(["--token-env", "SUBJECT_TOKEN"])
        .args(extra)
        .env("PATH", path)
        .env("HOME", dir)
        .env("SUBJECT_TOKEN", "subject-secret")
        .env_remove("GITHUB_TOKEN")
        .output()
        .expect("runs");
    let file = std::fs::read_dir(&results)
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

fn remote_files(dir: &Path) -> String {
    let o = Command::new("git")
        .args(["ls-tree", "-r", "--name-only", "main"])
        .current_dir(dir.join("remote.git"))
        .output()
        .expect("git");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn gh_and_git_measure_the_anatomy_and_clean_up() {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = setup(tmp.path());
    let (o, rows) = run(tmp.path(), &path, "pr_single_anatomy");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{rows:#?}",
        String::from_utf8_lossy(&o.stderr)
    );
    let by = |op: &str| {
        rows.iter()
            .find(|r| r["operation"] == op)
            .expect(op)
            .clone()
    };
    let publish = by("branch.publish");
    assert_eq!(publish["tool_call_count"], 1);
    assert!(
        publish["command"][0]
            .as_str()
            .is_some_and(|c| c.starts_with("git push -q -u origin benchops-platform-"))
    );
    assert!(
        publish["estimated_tokens_input"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    let open = by("integration.open");
    assert!(
        open["command"][0]
            .as_str()
            .is_some_and(|c| c.starts_with("gh pr create --repo octo/bench"))
    );
    // Mergeability is unknown on the first two looks: three polls, each a
    // tool call, with its quantization.
    let m = by("integration.mergeable.settle");
    assert_eq!(m["poll_iterations"], 3);
    assert_eq!(m["tool_call_count"], 3);
    assert_eq!(m["poll_quantization_ms"], 50.0);
    assert!(m["settle_elapsed_ms"].as_f64().is_some_and(|x| x >= 100.0));
    assert!(m["estimated_tokens_output"].as_u64().is_some_and(|n| n > 0));
    assert_eq!(by("integration.merged.settle")["settled"], true);
    assert_eq!(by("integration.main.settle")["settled"], true);
    assert_eq!(by("integration.sync.local")["returncode"], 0);
    let total = by("integration.total");
    assert_eq!(total["returncode"], 0);
    assert!(total["tool_call_count"].as_u64().is_some_and(|n| n >= 8));
    for r in &rows {
        assert_eq!(r["semantic_contract_match"], true, "{r}");
    }
    // Merged, then cleaned up: no payload left on main, no branch left.
    let log = std::fs::read_to_string(tmp.path().join("gh.log")).expect("log");
    assert!(
        log.contains("gh pr merge 1 --repo octo/bench --merge"),
        "{log}"
    );
    assert!(
        log.lines()
            .all(|l| l.ends_with("GH_TOKEN=subject-secret OTHER=none")),
        "gh gets the token as GH_TOKEN only: {log}"
    );
    assert!(
        !remote_files(tmp.path()).contains(".benchops-platform/"),
        "{}",
        remote_files(tmp.path())
    );
    let branches = Command::new("git")
        .args(["branch", "--list", "benchops-platform-*"])
        .current_dir(tmp.path().join("remote.git"))
        .output()
        .expect("git");
    assert!(
        branches.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&branches.stdout)
    );

    // The run's clones are removed (no --keep-workdirs).
    let left: Vec<_> = std::fs::read_dir(tmp.path().join("work/runs"))
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");

    // The probe.
    let (o, rows) = run(tmp.path(), &path, "platform_capability_probe");
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(rows[0]["command"][0], "gh auth status");
}

#[test]
fn a_refused_merge_skips_what_follows() {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = setup(tmp.path());
    std::fs::write(tmp.path().join("fail-merge"), "").expect("switch");
    let (o, rows) = run(tmp.path(), &path, "pr_single_anatomy");
    assert_eq!(o.status.code(), Some(1));
    let merge = rows
        .iter()
        .find(|r| r["operation"] == "integration.merge.request")
        .expect("merge");
    assert_eq!(merge["returncode"], 1);
    assert!(
        merge["stderr"]
            .as_str()
            .is_some_and(|e| e.contains("merge refused"))
    );
    for op in [
        "integration.merged.settle",
        "integration.main.settle",
        "integration.sync.local",
    ] {
        let r = rows.iter().find(|r| r["operation"] == op).expect(op);
        assert_eq!(r["skipped"], true);
        assert_eq!(
            r["skip_reason"],
            "prior_step_failed:integration.merge.request"
        );
    }
}

#[test]
fn a_cli_race_paces_inside_its_timed_operations() {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = setup(tmp.path());
    // Two content operations a second: most pushes, pull requests and
    // merges wait, inside the row they delay.
    let (o, rows) = run_with(
        tmp.path(),
        &path,
        "integration_race_n3",
        &["--ops-per-hour", "7200"],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{rows:#?}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(rows.len(), 3 * 8 + 4);
    let paced: Vec<&Value> = rows
        .iter()
        .filter(|r| r.get("pacing_injected_ms").is_some())
        .collect();
    assert!(paced.len() >= 4, "{paced:#?}");
    for r in &paced {
        let waited = r["pacing_injected_ms"].as_f64().expect("ms");
        assert!(
            r["elapsed_ms"].as_f64().expect("ms") >= waited,
            "the wait is inside the operation's time: {r}"
        );
    }
    let injected: f64 = paced
        .iter()
        .map(|r| r["pacing_injected_ms"].as_f64().unwrap_or(0.0))
        .sum();
    let pacing = rows
        .iter()
        .find(|r| r["operation"] == "race.pacing.injected")
        .expect("pacing");
    assert!(
        (pacing["elapsed_ms"].as_f64().expect("ms") - injected).abs() < 0.01,
        "{pacing}"
    );
    let window = rows
        .iter()
        .find(|r| r["operation"] == "race.integrate.window")
        .expect("window");
    assert_eq!(window["returncode"], 0, "{window}");
    let merged = std::fs::read_dir(tmp.path().join("prs"))
        .expect("prs")
        .filter(|e| {
            e.as_ref()
                .expect("e")
                .path()
                .extension()
                .is_some_and(|x| x == "merged")
        })
        .count();
    assert_eq!(merged, 3);
}
