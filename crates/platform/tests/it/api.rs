//! The platform lane's `harness-api` driver against the project's stateful
//! GitHub simulator (pull requests with a mergeability computed after a
//! delay, merges, commit statuses, contents writes, refs), through the
//! library with an injected clock whose sleeps are instant (the binary's
//! runs against the simulator are exec's: `crates/exec/tests/platform/`):
//!
//! - the pull-request anatomy, with every row's requests and settle fields;
//! - a delayed mergeable, a settle timeout, a failed merge whose later
//!   steps are skipped, and `check-instant` against a required status;
//! - a race paced by the budget on the injected clock;
//! - the gate on large live fleets and races: refused, no request at all;
//! - a second run on the same repository, and the cleanup.

use std::time::Duration;

use benchops_platform::clock::FakeClock;
use benchops_platform::row::Row;
use benchops_platform::{self as platform, Driver, Env, PlatformOptions, PlatformReport, Verdict};
use benchops_testkit::GitHubSim;
use benchops_testkit::sim::MergeableDelay;

const SPEC: &str = r#"
[defaults]
settle_interval_s = 1.0
settle_timeout_s = 30.0
command_timeout_s = 10.0

[[scenarios]]
name = "platform_capability_probe"
operations = ["capability.probe"]

[[scenarios]]
name = "pr_single_anatomy"
requires_remote = true
operations = ["branch.publish", "integration.open", "integration.visible.settle",
  "integration.mergeable.settle", "integration.merge.request", "integration.merged.settle",
  "integration.main.settle", "integration.sync.local", "integration.total"]

[[scenarios]]
name = "impatient_anatomy"
requires_remote = true
poll_interval_s = 1.0
operations = ["branch.publish", "integration.open", "integration.mergeable.settle",
  "integration.merge.request", "integration.total"]

[[scenarios]]
name = "open_only_anatomy"
requires_remote = true
operations = ["branch.publish", "integration.open", "integration.total"]

[[scenarios]]
name = "branch_fleet_n101"
requires_remote = true
operations = ["fleet.seed", "fleet.classify", "fleet.plan", "fleet.apply", "fleet.sync",
  "fleet.oracle", "fleet.total"]

[[scenarios]]
name = "branch_fleet_n5"
requires_remote = true
operations = ["fleet.seed", "fleet.classify", "fleet.plan", "fleet.apply", "fleet.sync",
  "fleet.oracle", "fleet.total"]

[[scenarios]]
name = "integration_race_n3"
requires_remote = true
operations = ["branch.publish", "integration.open", "integration.visible.settle",
  "integration.mergeable.settle", "integration.checks.green.settle", "integration.merge.request",
  "integration.merged.settle", "integration.main.settle",
  "race.publish.window", "race.integrate.window", "race.pacing.injected", "race.total"]

[[scenarios]]
name = "integration_race_n101"
requires_remote = true
operations = ["branch.publish", "integration.open", "integration.visible.settle",
  "integration.mergeable.settle", "integration.checks.green.settle", "integration.merge.request",
  "integration.merged.settle", "integration.main.settle",
  "race.publish.window", "race.integrate.window", "race.pacing.injected", "race.total"]

[[scenarios]]
name = "integration_race_n5000"
requires_remote = true
operations = ["branch.publish", "integration.open", "integration.visible.settle",
  "integration.mergeable.settle", "integration.checks.green.settle", "integration.merge.request",
  "integration.merged.settle", "integration.main.settle",
  "race.publish.window", "race.integrate.window", "race.pacing.injected", "race.total"]
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

fn options(f: &Fixture, scenario: &str, variant: &str) -> PlatformOptions {
    let d = f.dir.path();
    PlatformOptions {
        platform: "github".into(),
        driver: Driver::HarnessApi,
        scenario: scenario.into(),
        protection_variant: variant.into(),
        repo: Some("octo/bench".into()),
        runs: 1,
        token_env: "SUBJECT_TOKEN".into(),
        spec: d.join("spec.toml"),
        semantics: d.join("semantics.toml"),
        results: d.join("results"),
        workdir: d.join("work"),
        api_url: Some(f.sim.base_url()),
        ops_per_hour: 3600.0,
        admitted_output_chars: 20_000,
        lock_wait: Duration::from_secs(5),
        keep_workdirs: false,
        allow_large_live_run: false,
    }
}

/// Runs the lane through the library on a fake clock (off the async
/// runtime: the driver's client is blocking).
async fn run(opts: PlatformOptions, token: &str) -> (PlatformReport, Vec<String>) {
    let token = token.to_owned();
    tokio::task::spawn_blocking(move || {
        let clock = FakeClock::new();
        let var = |k: &str| (k == "SUBJECT_TOKEN").then(|| token.clone());
        let mut lines = Vec::new();
        let mut say = |l: &str| lines.push(l.to_owned());
        let mut env = Env {
            var: &var,
            which: &|_| true,
            clock: &clock,
            say: &mut say,
        };
        let report = platform::run(&opts, &mut env).expect("the run starts");
        (report, lines)
    })
    .await
    .expect("joined")
}

fn row<'a>(rows: &'a [Row], op: &str) -> &'a Row {
    rows.iter()
        .find(|r| r.operation == op)
        .unwrap_or_else(|| panic!("no row {op}"))
}

fn ops(rows: &[Row]) -> Vec<&str> {
    rows.iter().map(|r| r.operation.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anatomy_measures_each_step_and_cleans_up() {
    let f = fixture().await;
    f.sim.set_mergeable_delay(MergeableDelay::Reads(3));
    let (report, lines) = run(
        options(&f, "pr_single_anatomy", "protection-none"),
        &f.token,
    )
    .await;
    let rows = &report.rows;
    assert_eq!(report.verdict, Verdict::Ok, "{rows:#?}");
    assert_eq!(
        ops(rows),
        [
            "branch.publish",
            "integration.open",
            "integration.visible.settle",
            "integration.mergeable.settle",
            "integration.merge.request",
            "integration.merged.settle",
            "integration.main.settle",
            "integration.sync.local",
            "integration.total"
        ]
    );
    for r in rows {
        assert!(!r.skipped && r.returncode == Some(0), "{r:#?}");
        assert!(r.semantic_contract_match, "{}", r.operation);
        assert_eq!(r.tool_call_count, None, "API requests are not tool calls");
        let t = r.tokens.as_ref().expect("token fields");
        assert_eq!(
            t.estimated_tokens_total, None,
            "null, never a fictional count"
        );
        let m = r.api_metrics.as_ref().expect("api metrics");
        assert!(
            m.request_count > 0 && m.request_bytes > 0 && m.response_bytes > 0,
            "{r:#?}"
        );
    }
    let publish = row(rows, "branch.publish");
    let m = publish.api_metrics.as_ref().expect("metrics");
    // create the ref, create the file: no lookup of a file whose path is new.
    assert_eq!(m.request_count, 2, "{m:?}");
    assert_eq!(m.request_ids.len(), 2);
    assert!(
        m.request_ids.iter().all(Option::is_some),
        "request ids are kept"
    );
    assert!(m.rate_limit_remaining.is_some());

    // The mergeability is known on the fourth read of the pull request;
    // the visible settle made the first, so the mergeable settle sees it on
    // its third poll, two intervals after its first, to within one
    // interval.
    let s = row(rows, "integration.mergeable.settle")
        .settle
        .as_ref()
        .expect("settle fields");
    assert_eq!(s.settled, Some(true));
    assert_eq!(s.poll_iterations, 3);
    assert_eq!(s.settle_elapsed_ms, Some(2000.0));
    assert_eq!(s.poll_quantization_ms, 1000.0);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("[quantization] integration.mergeable.settle")),
        "{lines:?}"
    );
    let total = row(rows, "integration.total");
    let sum: f64 = rows[..8].iter().map(|r| r.elapsed_ms).sum();
    assert_eq!(total.elapsed_ms, (sum * 1000.0).round() / 1000.0);
    assert_eq!(
        total.api_metrics.as_ref().map(|m| m.request_count),
        Some(
            rows[..8]
                .iter()
                .map(|r| r.api_metrics.as_ref().map_or(0, |m| m.request_count))
                .sum()
        )
    );

    // The pull request was merged into main, then the branch and the file
    // the merge left on main were cleaned up.
    let pulls = f.sim.pulls("octo", "bench");
    assert_eq!(pulls.len(), 1);
    assert!(pulls[0].merged);
    assert!(
        pulls[0]
            .head_ref
            .contains(&report.run_id.to_ascii_lowercase())
    );
    let refs = f.sim.refs("octo", "bench", "refs/heads/benchops-platform-");
    assert!(
        refs.is_empty(),
        "the disposable branch is deleted: {refs:?}"
    );
    let left: Vec<String> = f
        .sim
        .file_paths("octo", "bench", "main")
        .into_iter()
        .filter(|p| p.starts_with(".benchops-platform/"))
        .collect();
    assert!(
        left.is_empty(),
        "the payload is removed from main: {left:?}"
    );

    // A second run on the same repository works (its payload is its own).
    let (again, _) = run(
        options(&f, "pr_single_anatomy", "protection-none"),
        &f.token,
    )
    .await;
    assert_eq!(again.verdict, Verdict::Ok, "{:#?}", again.rows);
    assert_ne!(again.run_id, report.run_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settle_timeout_and_a_failed_merge_skip_what_follows() {
    let f = fixture().await;
    // Never known within the 30 s timeout at 1 s a poll.
    f.sim.set_mergeable_delay(MergeableDelay::Reads(1000));
    let (report, _) = run(
        options(&f, "pr_single_anatomy", "protection-none"),
        &f.token,
    )
    .await;
    assert_eq!(report.verdict, Verdict::Failed);
    let r = row(&report.rows, "integration.mergeable.settle");
    let s = r.settle.as_ref().expect("settle");
    assert_eq!(s.settled, Some(false));
    assert_eq!(s.settle_elapsed_ms, None, "a timeout has no settle time");
    assert_eq!(s.observed_wait_ms, 30_000.0, "but its wait is measured");
    assert_eq!(r.elapsed_ms, 30_000.0);
    assert!(r.failed());
    for op in [
        "integration.merge.request",
        "integration.merged.settle",
        "integration.main.settle",
        "integration.sync.local",
    ] {
        let x = row(&report.rows, op);
        assert!(x.skipped, "{op}");
        assert_eq!(
            x.skip_reason.as_deref(),
            Some("prior_step_failed:integration.mergeable.settle")
        );
        assert!(!x.semantic_contract_match);
    }
    assert_eq!(row(&report.rows, "integration.total").returncode, Some(1));

    f.sim.set_mergeable_delay(MergeableDelay::Reads(0));
    assert!(
        f.sim
            .fail_next_merge("octo", "bench", 405, "Base branch was modified.")
    );
    let (report, _) = run(
        options(&f, "pr_single_anatomy", "protection-none"),
        &f.token,
    )
    .await;
    assert_eq!(report.verdict, Verdict::Failed);
    let m = row(&report.rows, "integration.merge.request");
    assert!(m.failed());
    assert!(
        m.stderr
            .as_deref()
            .is_some_and(|e| e.contains("HTTP 405: Base branch was modified.")),
        "{m:#?}"
    );
    assert_eq!(
        row(&report.rows, "integration.merged.settle")
            .skip_reason
            .as_deref(),
        Some("prior_step_failed:integration.merge.request")
    );
    // The results were written even so.
    assert!(report.results.is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_instant_posts_the_required_status_before_the_merge() {
    let f = fixture().await;
    f.sim.set_mergeable_delay(MergeableDelay::Reads(0));
    assert!(
        f.sim
            .require_status_check("octo", "bench", "main", "benchops/check-instant")
    );
    // Without the variant the required check is never posted: the merge
    // is refused.
    let (plain, _) = run(
        options(&f, "pr_single_anatomy", "protection-none"),
        &f.token,
    )
    .await;
    assert_eq!(plain.verdict, Verdict::Failed);
    assert!(row(&plain.rows, "integration.merge.request").failed());

    let (report, _) = run(options(&f, "pr_single_anatomy", "check-instant"), &f.token).await;
    assert_eq!(report.verdict, Verdict::Ok, "{:#?}", report.rows);
    let names = ops(&report.rows);
    let green = names
        .iter()
        .position(|o| *o == "integration.checks.green.settle")
        .expect("inserted");
    assert_eq!(
        names[green + 1],
        "integration.merge.request",
        "right before the merge"
    );
    let g = &report.rows[green];
    assert!(g.extra.contains_key("status_post_elapsed_ms"));
    assert_eq!(g.extra["status_context"], "benchops/check-instant");
    assert_eq!(g.settle.as_ref().and_then(|s| s.settled), Some(true));
    assert!(g.semantic_contract_match);
    assert_eq!(
        g.meta.platform_comparison_key.as_deref(),
        Some("2026-12:integration-default:check-instant")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_race_is_paced_on_the_injected_clock_and_reports_its_windows() {
    let f = fixture().await;
    f.sim.set_mergeable_delay(MergeableDelay::Reads(1));
    let (report, _) = run(
        options(&f, "integration_race_n3", "protection-none"),
        &f.token,
    )
    .await;
    let rows = &report.rows;
    assert_eq!(report.verdict, Verdict::Ok, "{rows:#?}");
    assert_eq!(rows.len(), 3 * 8 + 4);
    for b in 0..3u32 {
        assert_eq!(
            rows.iter().filter(|r| r.race_branch == Some(b)).count(),
            8,
            "one row per operation per branch"
        );
    }
    // One content operation a second: the budget's waits are inside the
    // operations they delayed, reported on them and in the total, never
    // subtracted.
    let pacing = row(rows, "race.pacing.injected");
    assert!(pacing.elapsed_ms > 0.0, "{pacing:#?}");
    let on_rows: f64 = rows
        .iter()
        .filter_map(|r| r.extra.get("pacing_injected_ms").and_then(|v| v.as_f64()))
        .sum();
    assert!(
        (on_rows - pacing.elapsed_ms).abs() < 1e-6,
        "{on_rows} vs {}",
        pacing.elapsed_ms
    );
    let publish = rows
        .iter()
        .find(|r| r.operation == "branch.publish" && r.extra.contains_key("pacing_injected_ms"))
        .expect("a paced publish");
    assert!(publish.elapsed_ms >= publish.extra["pacing_injected_ms"].as_f64().unwrap_or(0.0));
    // protection-none: the declared checks step is structural.
    assert!(row(rows, "integration.checks.green.settle").structural);
    let w = row(rows, "race.integrate.window");
    assert_eq!(w.returncode, Some(0));
    assert!(w.elapsed_ms > 0.0);
    let total = row(rows, "race.total");
    assert!(total.elapsed_ms >= w.elapsed_ms);
    let branch_ops: Vec<&str> = rows
        .iter()
        .filter(|r| r.race_branch.is_some())
        .map(|r| r.operation.as_str())
        .collect();
    assert_eq!(branch_ops.len(), 24);
    assert_eq!(
        total.extra["summarized_operations"],
        serde_json::json!(branch_ops),
        "race.total lists what it summarizes, branch by branch"
    );
    assert_eq!(
        f.sim
            .pulls("octo", "bench")
            .iter()
            .filter(|p| p.merged)
            .count(),
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_race_where_no_branch_ran_exits_as_all_skipped() {
    let f = fixture().await;
    // The token cannot even read main: every branch's setup fails.
    let iid = f.sim.installation_id("octo").expect("installed");
    let useless = f
        .sim
        .mint_token(iid, &[("issues", "read")], Some(&["other"]));
    let (report, _) = run(
        options(&f, "integration_race_n3", "protection-none"),
        &useless,
    )
    .await;
    assert_eq!(report.verdict, Verdict::AllSkipped, "{:#?}", report.rows);
    let w = row(&report.rows, "race.publish.window");
    assert!(w.skipped);
    assert_eq!(
        row(&report.rows, "race.total").skip_reason.as_deref(),
        Some("race_no_branch_ran")
    );
    assert!(
        report.rows[0]
            .skip_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("setup_failed:")),
        "{:?}",
        report.rows[0].skip_reason
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_over_the_api_merges_the_clean_branches_and_observes_the_conflicts() {
    let f = fixture().await;
    f.sim.set_mergeable_delay(MergeableDelay::Reads(2));
    let (report, _) = run(options(&f, "branch_fleet_n5", "protection-none"), &f.token).await;
    let rows = &report.rows;
    assert_eq!(report.verdict, Verdict::Ok, "{rows:#?}");
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
    let classify = row(rows, "fleet.classify");
    let s = classify.settle.as_ref().expect("a settle");
    assert!(
        s.poll_iterations >= 2,
        "mergeability was computed later: {s:?}"
    );
    assert_eq!(row(rows, "fleet.apply").extra["branches_merged"], 3);
    let oracle = &row(rows, "fleet.oracle").extra["oracle"];
    for k in [
        "action_plan_correct",
        "merge_order_correct",
        "final_survivors_correct",
        "conflict_count_correct",
    ] {
        assert_eq!(oracle[k], true, "{k}: {oracle}");
    }
    assert_eq!(oracle["conflict_detected_count"], 2);
    assert_eq!(
        row(rows, "fleet.sync").extra["final_survivors"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "the two conflicts, observed open"
    );
    let pulls = f.sim.pulls("octo", "bench");
    assert_eq!(pulls.iter().filter(|p| p.merged).count(), 3);
    assert!(
        f.sim.refs("octo", "bench", "refs/heads/fleet-").is_empty(),
        "the fleet's branches are deleted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_live_platform_fleet_is_refused_without_the_opt_in_and_makes_no_request() {
    let f = fixture().await;
    f.sim.clear_requests();
    let (report, lines) = run(
        options(&f, "branch_fleet_n101", "protection-none"),
        &f.token,
    )
    .await;
    assert_eq!(report.verdict, Verdict::AllSkipped, "{:#?}", report.rows);
    let reason = "branch_fleet_large_live_requires_opt_in:--allow-large-live-run";
    assert_eq!(report.rows.len(), 7);
    for r in &report.rows {
        assert!(r.skipped, "{r:#?}");
        assert_eq!(r.skip_reason.as_deref(), Some(reason));
        assert_eq!(r.returncode, None);
        assert_eq!(r.elapsed_ms, 0.0);
        assert!(r.api_metrics.is_none() && r.command.is_empty());
        assert!(!r.semantic_contract_match);
    }
    assert!(
        lines
            .iter()
            .any(|l| l == &format!("[skip] every row was skipped: {reason}")),
        "{lines:?}"
    );
    assert!(
        f.sim.requests().is_empty(),
        "no request at all: {:?}",
        f.sim.requests().len()
    );
    assert!(f.sim.pulls("octo", "bench").is_empty());

    // Opted in, one invocation still never opens more than 1000.
    let mut opts = options(&f, "branch_fleet_n101", "protection-none");
    opts.allow_large_live_run = true;
    opts.runs = 10;
    let (report, _) = run(opts, &f.token).await;
    assert_eq!(report.verdict, Verdict::AllSkipped);
    assert_eq!(report.rows.len(), 70);
    assert!(report.rows.iter().all(|r| r.skipped
        && r.skip_reason.as_deref() == Some("branch_fleet_live_ceiling_exceeded:1010>1000")));
    assert!(f.sim.requests().is_empty());

    // Opted in and under the ceiling, it runs.
    f.sim.set_mergeable_delay(MergeableDelay::Reads(0));
    let mut opts = options(&f, "branch_fleet_n101", "protection-none");
    opts.allow_large_live_run = true;
    let (report, _) = run(opts, &f.token).await;
    assert_eq!(report.verdict, Verdict::Ok, "{:#?}", report.rows);
    assert_eq!(f.sim.pulls("octo", "bench").len(), 101);
    assert_eq!(
        row(&report.rows, "fleet.oracle").extra["oracle"]["conflict_detected_count"],
        30
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_platform_fleet_total_reports_its_workflow_like_the_seed() {
    let f = fixture().await;
    f.sim.set_mergeable_delay(MergeableDelay::Reads(0));
    let (report, _) = run(options(&f, "branch_fleet_n5", "protection-none"), &f.token).await;
    assert_eq!(report.verdict, Verdict::Ok, "{:#?}", report.rows);
    let t = &row(&report.rows, "fleet.total").extra;
    assert_eq!(
        t["workflow_operations"],
        serde_json::json!([
            "fleet.classify",
            "fleet.plan",
            "fleet.apply",
            "fleet.sync",
            "fleet.oracle"
        ])
    );
    assert_eq!(t["workflow_returncode"], 0);
    assert_eq!(t["workflow_failure_count"], 0);
    assert_eq!(t["workflow_skip_count"], 0);
    assert!(
        t["workflow_tool_call_count"].is_null(),
        "API requests are not tool calls: null, not 0"
    );
    assert_eq!(t["setup_operations"], serde_json::json!(["fleet.seed"]));

    // The first merge fails: the workflow failed, and what followed it was
    // skipped.
    assert!(
        f.sim
            .fail_next_merge("octo", "bench", 405, "Base branch was modified.")
    );
    let (report, _) = run(options(&f, "branch_fleet_n5", "protection-none"), &f.token).await;
    assert_eq!(report.verdict, Verdict::Failed);
    let total = row(&report.rows, "fleet.total");
    assert_eq!(total.returncode, Some(1));
    assert_eq!(total.extra["workflow_returncode"], 1);
    assert_eq!(total.extra["workflow_failure_count"], 1);
    assert_eq!(total.extra["workflow_skip_count"], 2, "sync and oracle");
    for r in &report.rows {
        assert_eq!(r.meta.profile, "platform");
        assert_eq!(r.meta.benchmark_track, "platform-hosted");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_instant_settles_green_inside_the_platform_total_without_a_merge_request() {
    let f = fixture().await;
    f.sim.set_mergeable_delay(MergeableDelay::Reads(0));
    let (report, _) = run(options(&f, "open_only_anatomy", "check-instant"), &f.token).await;
    let rows = &report.rows;
    assert_eq!(report.verdict, Verdict::Ok, "{rows:#?}");
    assert_eq!(
        ops(rows),
        [
            "branch.publish",
            "integration.open",
            "integration.checks.green.settle",
            "integration.total"
        ],
        "the inserted settle comes before the total, never after it"
    );
    let total = row(rows, "integration.total");
    assert_eq!(
        total.extra["summarized_operations"],
        serde_json::json!([
            "branch.publish",
            "integration.open",
            "integration.checks.green.settle"
        ])
    );
    let parts = &rows[..3];
    let sum: f64 = parts.iter().map(|r| r.elapsed_ms).sum();
    assert_eq!(total.elapsed_ms, (sum * 1000.0).round() / 1000.0);
    assert_eq!(
        total.api_metrics.as_ref().map(|m| m.request_count),
        Some(
            parts
                .iter()
                .map(|r| r.api_metrics.as_ref().map_or(0, |m| m.request_count))
                .sum()
        )
    );
    let green = row(rows, "integration.checks.green.settle");
    assert_eq!(green.settle.as_ref().and_then(|s| s.settled), Some(true));
    assert_eq!(
        total.extra["poll_iterations_total"],
        green.settle.as_ref().map_or(0, |s| s.poll_iterations)
    );
}

/// The simulator's operation id of each request in `ids`.
fn logged(f: &Fixture, ids: &[Option<String>]) -> Vec<&'static str> {
    let log = f.sim.requests();
    ids.iter()
        .map(|id| {
            let id = id.as_deref().expect("a request id");
            let e = log
                .iter()
                .find(|e| e.request_id == id)
                .expect("the request is logged");
            e.operation.unwrap_or("unmatched")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_platform_publish_creates_its_file_without_looking_it_up_first() {
    let f = fixture().await;
    f.sim.set_mergeable_delay(MergeableDelay::Reads(0));
    f.sim.clear_requests();
    let (report, _) = run(
        options(&f, "pr_single_anatomy", "protection-none"),
        &f.token,
    )
    .await;
    assert_eq!(report.verdict, Verdict::Ok, "{:#?}", report.rows);
    let m = row(&report.rows, "branch.publish")
        .api_metrics
        .clone()
        .expect("metrics");
    assert_eq!(m.request_count, 2, "{m:?}");
    assert_eq!(
        logged(&f, &m.request_ids),
        ["git/create-ref", "repos/create-or-update-file-contents"],
        "the timed publish is exactly the ref and the file"
    );
    // Only the untimed cleanup looks a file up (to delete it with its sha).
    let gets: Vec<u64> = f
        .sim
        .requests()
        .iter()
        .filter(|e| e.operation == Some("repos/get-content"))
        .map(|e| e.seq)
        .collect();
    let last_measured = f
        .sim
        .requests()
        .iter()
        .filter(|e| {
            report.rows.iter().any(|r| {
                r.api_metrics.as_ref().is_some_and(|m| {
                    m.request_ids
                        .iter()
                        .any(|id| id.as_deref() == Some(e.request_id.as_str()))
                })
            })
        })
        .map(|e| e.seq)
        .max()
        .expect("measured requests");
    assert!(
        gets.iter().all(|s| *s > last_measured),
        "no contents lookup among the measured requests: {gets:?} vs {last_measured}"
    );

    // A fleet seeds its files the same way: one write per file.
    f.sim.clear_requests();
    let (fleet, _) = run(options(&f, "branch_fleet_n5", "protection-none"), &f.token).await;
    assert_eq!(fleet.verdict, Verdict::Ok, "{:#?}", fleet.rows);
    let seed = row(&fleet.rows, "fleet.seed")
        .api_metrics
        .clone()
        .expect("metrics");
    // main's sha, then per branch a ref, a file and a pull request, then
    // main's side of the two conflicts.
    assert_eq!(seed.request_count, 1 + 5 * 3 + 2, "{seed:?}");
    assert!(
        !logged(&f, &seed.request_ids).contains(&"repos/get-content"),
        "{:?}",
        logged(&f, &seed.request_ids)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_live_race_is_refused_without_the_opt_in_and_makes_no_request() {
    let f = fixture().await;
    f.sim.clear_requests();
    let (report, lines) = run(
        options(&f, "integration_race_n101", "protection-none"),
        &f.token,
    )
    .await;
    assert_eq!(report.verdict, Verdict::AllSkipped, "{:#?}", report.rows);
    let reason = "integration_race_large_live_requires_opt_in:--allow-large-live-run";
    assert_eq!(report.rows.len(), 12, "one skip row per declared operation");
    for r in &report.rows {
        assert!(r.skipped, "{r:#?}");
        assert_eq!(r.skip_reason.as_deref(), Some(reason));
        assert_eq!(r.returncode, None);
        assert!(r.api_metrics.is_none() && r.command.is_empty());
    }
    assert!(
        lines
            .iter()
            .any(|l| l == &format!("[skip] every row was skipped: {reason}")),
        "{lines:?}"
    );
    assert!(f.sim.requests().is_empty(), "no request at all");
    assert!(f.sim.pulls("octo", "bench").is_empty());

    // integration_race_n5000 would open 5000 pull requests: past the
    // ceiling, opted in or not.
    for opted_in in [false, true] {
        let mut opts = options(&f, "integration_race_n5000", "protection-none");
        opts.allow_large_live_run = opted_in;
        let (report, _) = run(opts, &f.token).await;
        assert_eq!(report.verdict, Verdict::AllSkipped);
        assert!(report.rows.iter().all(|r| r.skipped
            && r.skip_reason.as_deref()
                == Some("integration_race_live_ceiling_exceeded:5000>1000")));
    }
    // Opted in, the ceiling counts every run.
    let mut opts = options(&f, "integration_race_n101", "protection-none");
    opts.allow_large_live_run = true;
    opts.runs = 10;
    let (report, _) = run(opts, &f.token).await;
    assert_eq!(report.rows.len(), 120);
    assert!(report.rows.iter().all(|r| r.skipped
        && r.skip_reason.as_deref() == Some("integration_race_live_ceiling_exceeded:1010>1000")));
    assert!(f.sim.requests().is_empty(), "still no request");

    // Opted in and under the ceiling, it races.
    f.sim.set_mergeable_delay(MergeableDelay::Reads(0));
    let mut opts = options(&f, "integration_race_n101", "protection-none");
    opts.allow_large_live_run = true;
    let (report, _) = run(opts, &f.token).await;
    assert_eq!(report.verdict, Verdict::Ok, "{:#?}", report.rows);
    assert_eq!(
        f.sim
            .pulls("octo", "bench")
            .iter()
            .filter(|p| p.merged)
            .count(),
        101
    );
}
