//! The platform lane, the library behind `benchops-exec platform` (exec
//! parses the command line and calls [`run`]). It measures a hosted
//! integration workflow end to end, from "a task branch exists locally" to
//! "the change is merged in main and present in the local checkout",
//! including the asynchronous settling a platform imposes (GitHub computes
//! a pull request's mergeability in the background), observed by polling
//! on one monotonic clock.
//!
//! A run reads a scenario spec and a semantics config ([`spec`]), decides
//! whether it can run at all ([`readiness`]: an unimplemented protection
//! variant, a missing token, binary or repository, or a live fleet or race
//! past its gate ([`live`]) turns every operation into a skip row with the
//! exact reason), takes the measurement lock, runs the scenario's declared operations once
//! per run through the chosen driver, and writes every row, whatever
//! happened ([`store`]). Drivers:
//!
//! - `fake-provider`: the deterministic triage ([`triage`]) and fleet
//!   ([`fleet`]) providers and their oracles; any other family is skipped
//!   with a reason and touches no process or network;
//! - `harness-api`: GitHub's REST API through this crate's own small
//!   measuring client ([`api`]; never the publication client, which this
//!   crate does not link);
//! - `cli`: `gh` and `git`, or a configured adapter's commands.
//!
//! Rows, their fields and what may be compared: `docs/platform-lane.md`.

pub mod adapter;
pub mod anatomy;
pub mod api;
pub mod clock;
pub mod command;
pub mod compare;
pub mod fleet;
pub mod fleet_api;
pub mod ghcli;
pub mod live;
pub mod race;
pub mod row;
pub mod runner;
pub mod settle;
pub mod spec;
pub mod store;
pub mod triage;

use std::path::PathBuf;
use std::time::Duration;

use self::clock::RunClock;
use self::row::{Meta, Row};
use self::runner::Ctx;
use self::spec::{Family, Scenario, Semantics, Spec, SpecError};

/// The drivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// GitHub's REST API, measured request by request.
    HarnessApi,
    /// `gh` and `git`, or an adapter's commands.
    Cli,
    /// The in-process triage and fleet providers.
    FakeProvider,
}

impl Driver {
    /// Its name on the command line and in rows.
    pub fn name(self) -> &'static str {
        match self {
            Driver::HarnessApi => "harness-api",
            Driver::Cli => "cli",
            Driver::FakeProvider => "fake-provider",
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct PlatformOptions {
    /// `github` or an adapter named in the semantics config.
    pub platform: String,
    /// The driver.
    pub driver: Driver,
    /// The scenario's name in the spec.
    pub scenario: String,
    /// The protection variant.
    pub protection_variant: String,
    /// `OWNER/NAME` of a disposable repository.
    pub repo: Option<String>,
    /// Runs.
    pub runs: u32,
    /// The NAME of the variable that holds the subject token.
    pub token_env: String,
    /// The scenario spec.
    pub spec: PathBuf,
    /// The semantics config.
    pub semantics: PathBuf,
    /// Where results go.
    pub results: PathBuf,
    /// Where clones and the measurement lock live.
    pub workdir: PathBuf,
    /// The GitHub API base URL (`None`: GitHub's).
    pub api_url: Option<String>,
    /// Race pacing: content operations an hour.
    pub ops_per_hour: f64,
    /// How much of a command's output an agent would read, in characters.
    pub admitted_output_chars: usize,
    /// How long to wait for the measurement lock.
    pub lock_wait: Duration,
    /// Keep the run's clones and scratch files (`WORKDIR/runs/<run id>`)
    /// instead of removing them after the run.
    pub keep_workdirs: bool,
    /// Let a fleet or a race of more than [`live::OPT_IN_ABOVE`] branches
    /// run on a live platform (never past [`live::CEILING`] pull requests).
    pub allow_large_live_run: bool,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every measured row succeeded.
    Ok,
    /// A row failed.
    Failed,
    /// Every row was skipped.
    AllSkipped,
}

/// A finished run.
#[derive(Debug)]
pub struct PlatformReport {
    /// The run id.
    pub run_id: String,
    /// Every row.
    pub rows: Vec<Row>,
    /// The JSONL file.
    pub results: PathBuf,
    /// The markdown summary.
    pub summary: PathBuf,
    /// The verdict.
    pub verdict: Verdict,
}

/// Why a run could not start (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// A spec or config file.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A bad option.
    #[error("{0}")]
    Config(String),
    /// Results could not be written, or the lock not taken.
    #[error(transparent)]
    Store(#[from] store::StoreError),
}

/// What the run can see of its environment (injectable for tests).
pub struct Env<'a> {
    /// Looks up an environment variable.
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// Whether a binary is on the PATH.
    pub which: &'a dyn Fn(&str) -> bool,
    /// The clock.
    pub clock: &'a dyn RunClock,
    /// Console lines (`[run]`, `[quantization]`, `[skip]`).
    pub say: &'a mut dyn FnMut(&str),
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Env")
    }
}

/// Whether `bin` is an executable file on `PATH`.
pub fn on_path(bin: &str) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        std::fs::metadata(dir.join(bin))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Why nothing of this run can be measured, if so: the exact skip reason.
/// In order: an unimplemented protection variant (for every driver, the
/// fake provider included), what the driver and platform need (a family
/// the fake provider has, a binary, a token, a repository), then the gate
/// on live fleets and races ([`live::gate`]). A skip here makes no request and
/// runs no process.
pub fn readiness(
    opts: &PlatformOptions,
    scenario: &Scenario,
    semantics: &Semantics,
    env: &Env<'_>,
) -> Option<String> {
    if !semantics.implemented.contains(&opts.protection_variant) {
        return Some(format!(
            "protection_variant_not_implemented:{}",
            opts.protection_variant
        ));
    }
    let family = Family::of(scenario);
    environment_readiness(opts, scenario, family, semantics, env).or_else(|| {
        if opts.driver == Driver::FakeProvider {
            return None;
        }
        live::gate(family, opts.runs, opts.allow_large_live_run)
    })
}

/// What the driver and the platform need, missing.
fn environment_readiness(
    opts: &PlatformOptions,
    scenario: &Scenario,
    family: Family,
    semantics: &Semantics,
    env: &Env<'_>,
) -> Option<String> {
    if opts.driver == Driver::FakeProvider {
        return match family {
            Family::Triage(_) | Family::Fleet(_) => None,
            other => Some(format!("fake_provider_has_no_{}_scenario", other.name())),
        };
    }
    if opts.platform == "github" {
        if opts.driver == Driver::Cli {
            if opts.protection_variant == "check-instant" {
                return Some("protection_variant_requires_api_driver:check-instant".into());
            }
            for bin in ["gh", "git"] {
                if !(env.which)(bin) {
                    return Some(format!("{bin}_cli_missing"));
                }
            }
        }
        if (env.var)(&opts.token_env).is_none_or(|t| t.trim().is_empty()) {
            return Some(format!("github_token_missing:{}", opts.token_env));
        }
        if scenario.requires_remote && opts.repo.is_none() {
            return Some("github_repo_not_configured".into());
        }
        return None;
    }
    let adapter = semantics.platforms.get(&opts.platform)?;
    if opts.driver == Driver::HarnessApi {
        return Some(format!("{}_harness_api_not_implemented", opts.platform));
    }
    let bin = adapter.binary.as_deref().unwrap_or_default();
    if !(env.which)(bin) {
        return Some(format!("{}_cli_missing:{bin}", opts.platform));
    }
    if scenario.requires_remote && opts.repo.is_none() {
        return Some(format!("{}_remote_missing", opts.platform));
    }
    None
}

fn meta(opts: &PlatformOptions, semantics: &Semantics, run_id: &str) -> Meta {
    let p = semantics.platforms.get(&opts.platform);
    let version = p.and_then(|p| p.semantics_version.clone());
    let class = p.map(|p| p.class.clone());
    Meta {
        run_id: run_id.to_owned(),
        profile: row::PROFILE.to_owned(),
        benchmark_track: row::BENCHMARK_TRACK.to_owned(),
        platform: opts.platform.clone(),
        driver: opts.driver.name().to_owned(),
        platform_comparison_key: class
            .as_deref()
            .and_then(|c| compare::comparison_key(version.as_deref(), c, &opts.protection_variant)),
        platform_semantics_class: class,
        platform_semantics_version: version,
        protection_variant: opts.protection_variant.clone(),
        repo: opts.repo.clone(),
        token_env: opts.token_env.clone(),
        clock: "one monotonic clock for every duration of the run".into(),
        measurement_lock_wait_ms: None,
    }
}

/// Where run `ctx.run` keeps its clones: `WORKDIR/runs/<run id>/r<run>`.
fn run_workdir(opts: &PlatformOptions, ctx: &Ctx<'_>) -> PathBuf {
    opts.workdir
        .join("runs")
        .join(&ctx.meta.run_id)
        .join(format!("r{}", ctx.run))
}

/// One run of the scenario with what the run can do.
fn run_once(
    ctx: &Ctx<'_>,
    opts: &PlatformOptions,
    scenario: &Scenario,
    client: Option<&api::ApiClient>,
    adapter_env: &std::collections::BTreeMap<String, String>,
    semantics: &Semantics,
) -> Vec<Row> {
    let token = adapter_env.get(&opts.token_env).map(String::as_str);
    let ops = &scenario.operations;
    let check_instant = opts.protection_variant == "check-instant";
    let family = Family::of(scenario);
    match (opts.driver, family, client) {
        (Driver::FakeProvider, Family::Triage(n), _) => triage::run(ctx, ops, n),
        (Driver::FakeProvider, Family::Fleet(n), _) => fleet::run(ctx, ops, n),
        (Driver::HarnessApi, Family::Probe, Some(c)) => {
            anatomy::probe(ctx, c, opts.repo.as_deref(), ops)
        }
        (Driver::HarnessApi, Family::Anatomy | Family::Race(_), Some(c)) => {
            let Some(repo) = opts.repo.as_deref() else {
                return ctx.skip_all(ops, "github_repo_not_configured");
            };
            match family {
                Family::Race(n) => {
                    race::run(ctx, c, repo, ops, n, opts.ops_per_hour, check_instant)
                }
                _ => anatomy::run(ctx, c, repo, ops, check_instant),
            }
        }
        (Driver::Cli, Family::Probe, _) if opts.platform == "github" => ghcli::probe(
            ctx,
            ops,
            token.unwrap_or_default(),
            opts.admitted_output_chars,
        ),
        (Driver::Cli, Family::Anatomy | Family::Race(_), _) if opts.platform == "github" => {
            let Some(repo) = opts.repo.as_deref() else {
                return ctx.skip_all(ops, "github_repo_not_configured");
            };
            let workdir = run_workdir(opts, ctx);
            let settings = ghcli::GhSettings {
                repo,
                token: token.unwrap_or_default(),
                api_url: opts.api_url.as_deref(),
                admitted: opts.admitted_output_chars,
            };
            match family {
                Family::Race(n) => ghcli::race(ctx, &settings, ops, &workdir, n, opts.ops_per_hour),
                _ => ghcli::run(ctx, &settings, ops, &workdir),
            }
        }
        (Driver::Cli, Family::Race(n), _) if opts.platform != "github" => {
            let Some(adapter) = semantics.platforms.get(&opts.platform) else {
                return ctx.skip_all(ops, "platform_not_configured");
            };
            let workdir = run_workdir(opts, ctx);
            adapter::race(
                ctx,
                adapter,
                ops,
                &workdir,
                adapter_env,
                opts.admitted_output_chars,
                opts.repo.as_deref().unwrap_or_default(),
                n,
                opts.ops_per_hour,
            )
        }
        (Driver::Cli, Family::Probe | Family::Anatomy, _) if opts.platform != "github" => {
            let Some(adapter) = semantics.platforms.get(&opts.platform) else {
                return ctx.skip_all(ops, "platform_not_configured");
            };
            let workdir = run_workdir(opts, ctx);
            let vars = adapter::Vars {
                repo: opts.repo.clone().unwrap_or_default(),
                branch: anatomy::branch_name(&ctx.meta.run_id, ctx.run, None),
                workdir: workdir.display().to_string(),
            };
            adapter::run(
                ctx,
                adapter,
                ops,
                &workdir,
                adapter_env,
                opts.admitted_output_chars,
                &vars,
            )
        }
        (Driver::HarnessApi, Family::Fleet(n), Some(c)) => match opts.repo.as_deref() {
            Some(repo) => fleet_api::run(ctx, c, repo, ops, n),
            None => ctx.skip_all(ops, "github_repo_not_configured"),
        },
        (Driver::HarnessApi | Driver::Cli, Family::Triage(_), _) => ctx.skip_all(
            ops,
            &format!(
                "branch_triage_real_provider_not_implemented:{}",
                opts.platform
            ),
        ),
        (driver, family, _) => ctx.skip_all(
            ops,
            &format!(
                "{}_not_implemented:{}:{}",
                family.name(),
                opts.platform,
                driver.name()
            ),
        ),
    }
}

/// The metric lines of `rows`, for a platform case in a lane (`--metrics`):
/// per row `<op>.ms` (its duration; null with the skip reason when
/// skipped, 0 for a structural row), for a settle `<op>.settle_ms` (null
/// on a timeout), for an API row `<op>.requests`, for a CLI row
/// `<op>.tool_calls`. A race branch's rows are `<op>.b<k>.…`.
pub fn metric_lines(rows: &[Row]) -> Vec<serde_json::Value> {
    use serde_json::json;
    let mut out = Vec::new();
    for r in rows {
        let base = match r.race_branch {
            Some(b) => format!("{}.b{b}", r.operation),
            None => r.operation.clone(),
        };
        let line = |suffix: &str, value: Option<f64>, unit: &str, reason: Option<&str>| {
            let mut v = json!({"metric": format!("{base}.{suffix}"), "value": value, "unit": unit});
            if let (None, Some(why)) = (value, reason) {
                v["reason"] = json!(why.chars().take(200).collect::<String>());
            }
            v
        };
        let skip = r.skip_reason.as_deref().filter(|_| r.skipped);
        out.push(line("ms", (!r.skipped).then_some(r.elapsed_ms), "ms", skip));
        if let Some(s) = r.settle.as_ref().filter(|_| !r.structural) {
            let why = skip.or(Some("not settled before the timeout"));
            out.push(line("settle_ms", s.settle_elapsed_ms, "ms", why));
        }
        if let Some(m) = &r.api_metrics {
            out.push(line(
                "requests",
                Some(m.request_count as f64),
                "requests",
                None,
            ));
        }
        if r.api_metrics.is_none() && !r.skipped {
            if let Some(n) = r.tool_call_count {
                out.push(line("tool_calls", Some(f64::from(n)), "calls", None));
            }
        }
    }
    out
}

/// The verdict over `rows`.
pub fn verdict(rows: &[Row]) -> Verdict {
    if !rows.is_empty() && rows.iter().all(|r| r.skipped) {
        Verdict::AllSkipped
    } else if rows.iter().any(Row::failed) {
        Verdict::Failed
    } else {
        Verdict::Ok
    }
}

/// Runs the platform lane.
pub fn run(opts: &PlatformOptions, env: &mut Env<'_>) -> Result<PlatformReport, PlatformError> {
    let spec: Spec = spec::load_spec(&opts.spec)?;
    let semantics = spec::load_semantics(&opts.semantics)?;
    let Some(scenario) = spec.scenario(&opts.scenario) else {
        let known: Vec<&str> = spec.scenarios.iter().map(|s| s.name.as_str()).collect();
        return Err(PlatformError::Config(format!(
            "{}: no scenario {:?}; it has: {}",
            opts.spec.display(),
            opts.scenario,
            known.join(", ")
        )));
    };
    if !semantics
        .protection_variants
        .contains(&opts.protection_variant)
    {
        return Err(PlatformError::Config(format!(
            "{}: protection variant {:?} is not declared; it declares: {}",
            opts.semantics.display(),
            opts.protection_variant,
            semantics.protection_variants.join(", ")
        )));
    }
    if !semantics.platforms.contains_key(&opts.platform) {
        return Err(PlatformError::Config(format!(
            "{}: platform {:?} is not configured; it has: {}",
            opts.semantics.display(),
            opts.platform,
            semantics
                .platforms
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if opts.runs == 0 {
        return Err(PlatformError::Config("--runs must be at least 1".into()));
    }
    let settings = spec.settings(scenario);
    let now = jiff::Timestamp::try_from(env.clock.now()).map_err(|e| {
        PlatformError::Config(format!(
            "the clock reads no usable time for the run id: {e}"
        ))
    })?;
    let run_id = store::run_id(now);
    let mut meta = meta(opts, &semantics, &run_id);
    let skip = readiness(opts, scenario, &semantics, env);
    let contract = compare::contract_match(
        &semantics,
        &opts.platform,
        opts.driver.name(),
        &opts.protection_variant,
    );
    let mut skip = skip;
    let client = match (&skip, opts.driver) {
        (None, Driver::HarnessApi) => {
            let token = (env.var)(&opts.token_env).unwrap_or_default();
            let timeout = Duration::from_secs_f64(settings.command_timeout_s);
            match api::ApiClient::new(opts.api_url.as_deref(), token.trim(), timeout) {
                Ok(c) => Some(c),
                Err(e) => {
                    skip = Some(format!("api_client_unavailable:{e}"));
                    None
                }
            }
        }
        _ => None,
    };
    // The subject token reaches an adapter's commands under its own name,
    // and nothing else does.
    let adapter_env: std::collections::BTreeMap<String, String> = (env.var)(&opts.token_env)
        .map(|t| (opts.token_env.clone(), t))
        .into_iter()
        .collect();
    let lock = store::lock(&opts.workdir, env.clock, opts.lock_wait)?;
    meta.measurement_lock_wait_ms = Some(lock.wait_ms);
    let mut rows = Vec::new();
    for run in 0..opts.runs {
        let ctx = Ctx {
            meta: &meta,
            scenario: &scenario.name,
            run,
            settings,
            clock: env.clock,
            contract,
        };
        if let Some(reason) = &skip {
            rows.extend(ctx.skip_all(&scenario.operations, reason));
            continue;
        }
        (env.say)(&format!(
            "[run] {} run={run} platform={} driver={}",
            scenario.name,
            opts.platform,
            opts.driver.name()
        ));
        let got = run_once(
            &ctx,
            opts,
            scenario,
            client.as_ref(),
            &adapter_env,
            &semantics,
        );
        for r in &got {
            if let Some(s) = r
                .settle
                .as_ref()
                .filter(|s| s.poll_interval_s > 0.0 && !r.skipped)
            {
                (env.say)(&settle::quantization_line(&r.operation, s));
            }
        }
        rows.extend(got);
    }
    let scratch = opts.workdir.join("runs").join(&run_id);
    if !opts.keep_workdirs && scratch.exists() {
        if let Err(e) = std::fs::remove_dir_all(&scratch) {
            (env.say)(&format!(
                "[cleanup] could not remove {}: {e}",
                scratch.display()
            ));
        }
    }
    drop(lock);
    let (results, summary) = store::write(&opts.results, &run_id, &rows)?;
    let verdict = verdict(&rows);
    if verdict == Verdict::AllSkipped {
        let reasons: std::collections::BTreeSet<&str> = rows
            .iter()
            .filter_map(|r| r.skip_reason.as_deref())
            .collect();
        (env.say)(&format!(
            "[skip] every row was skipped: {}",
            reasons.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(PlatformReport {
        run_id,
        rows,
        results,
        summary,
        verdict,
    })
}
