//! `benchops-publish`: thin shim over the `benchops_publish` library. It
//! parses the command line ([`cli`]), calls the library, prints, and maps
//! the outcome to the exit codes of [`benchops_publish::exit`].

// Parsing sealed records and state files is allocation-heavy; mimalloc
// roughly halves the time spent in the allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;

// Everything this binary prints goes through these writers instead of the
// standard macros, which panic when the reader has gone away (`… | head`).
// A closed pipe ends the output quietly, as with Unix tools; the exit code
// stays the command's own. Any other write error is reported on stderr.
macro_rules! print {
    ($($t:tt)*) => { crate::write_stdout(format_args!($($t)*)) };
}
macro_rules! println {
    ($($t:tt)*) => { crate::write_stdout(format_args!("{}\n", format_args!($($t)*))) };
}
macro_rules! eprintln {
    ($($t:tt)*) => { crate::write_stderr(format_args!("{}\n", format_args!($($t)*))) };
}

fn write_stdout(text: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let mut o = std::io::stdout().lock();
    match o.write_fmt(text).and_then(|()| o.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            write_stderr(format_args!(
                "error: failed to write to standard output: {e}\n"
            ));
        }
        _ => {}
    }
}

fn write_stderr(text: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = std::io::stderr().lock().write_fmt(text);
}

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use benchops_publish::exit::{ATTENTION, BUSY, FAILED, OK};
use benchops_publish::sweep::{SweepError, SweepReport, render_summary};
use benchops_publish::text::{error_line, escape_text};
use benchops_publish::{github, health, local, validate, watchdog};
use clap::Parser;

use benchops::watchdog::WatchSettings;
use cli::{Cli, Command, Look};

fn main() -> ExitCode {
    let cli = Cli::parse();
    ExitCode::from(match cli.command {
        Command::Validate {
            paths,
            json,
            max_record_bytes,
            manifest,
        } => run_validate(&paths, json, max_record_bytes, manifest.as_deref()),
        Command::CheckManifest { manifests } => run_check_manifest(&manifests),
        Command::Provision(p) => run_provision(p),
        Command::Health {
            look,
            ledger,
            json,
            markdown,
        } => {
            // With --local the ledger is DIR/issues.json; with --history only
            // the one --ledger names.
            let ledger = match look.history {
                Some(_) => ledger,
                None => Some(look.sweep_dir().join("issues.json")),
            };
            run_health(&look, ledger.as_deref(), json, markdown)
        }
        Command::Watchdog {
            look,
            json,
            markdown,
            annotations,
        } => run_watchdog(&look, json, markdown, annotations),
        Command::Sweep {
            local,
            github,
            repo,
            app_id,
            app_key_file,
            token_service,
            token_audience,
            handoff,
            handoff_refs,
            history_objects,
            manifest,
            receipt_out,
            lock_wait,
            max_record_bytes,
            missed_run_issues,
            health_issue,
        } => {
            let swept = if github {
                let credentials = match (token_service, app_id, app_key_file) {
                    (Some(url), _, _) => Some((0, PathBuf::new(), Some(url))),
                    (None, Some(id), Some(key)) => Some((id, key, None)),
                    _ => None,
                };
                let (Some(repo), Some((app_id, app_key_file, service)), true) =
                    (repo, credentials, handoff.is_some() || handoff_refs)
                else {
                    eprintln!(
                        "error: --github needs --repo OWNER/NAME, either --token-service URL or --app-id N with --app-key-file PEM (or BENCHOPS_APP_KEY_FILE naming the file), and --handoff DIR, --handoff-refs or both"
                    );
                    return ExitCode::from(FAILED);
                };
                let mut opts =
                    github::GitHubSweepOptions::new(repo, app_id, app_key_file, handoff, manifest);
                opts.token_service = service.map(|url| github::TokenServiceOptions {
                    url,
                    audience: token_audience,
                    id_token_request: None,
                });
                opts.handoff_refs = handoff_refs;
                opts.history_objects = history_objects;
                opts.max_record_bytes = max_record_bytes;
                let (trigger, run, server) = github::actions_context_from_env();
                opts.trigger = trigger;
                opts.workflow_run = run;
                opts.history_base_url = github::history_base_url(&server, &opts.repo);
                opts.missed_run_label = missed_run_issues;
                opts.health_issue_label = health_issue;
                github::sweep_github_blocking(&opts)
            } else if let Some(dir) = local {
                let mut opts = local::LocalSweepOptions::new(dir, manifest);
                opts.lock_wait = std::time::Duration::from_secs(lock_wait);
                opts.max_record_bytes = max_record_bytes;
                opts.missed_run_label = missed_run_issues;
                opts.health_issue_label = health_issue;
                match local::sweep_local(&opts) {
                    Err(e) if local::is_locked_out(&e) => {
                        eprintln!("error: {}", error_line(&e));
                        eprintln!(
                            "another sweep holds the lock; run this one again once it has finished"
                        );
                        return ExitCode::from(BUSY);
                    }
                    swept => swept,
                }
            } else {
                eprintln!("error: pass --local [DIR] or --github");
                return ExitCode::from(FAILED);
            };
            finish_sweep(swept, receipt_out.as_deref())
        }
    })
}

fn run_provision(command: cli::ProvisionCommand) -> u8 {
    use benchops_publish::provision::{self, Mode};
    let (mode, a) = match command {
        cli::ProvisionCommand::Verify(a) => (Mode::Verify, a),
        cli::ProvisionCommand::Plan(a) => (Mode::Plan, a),
        cli::ProvisionCommand::Apply(a) => (Mode::Apply, a),
    };
    let mut opts = provision::ProvisionOptions::new(a.repo, a.manifest);
    opts.app_id = a.app_id;
    opts.app_key_file = a.app_key_file;
    if let Some(var) = &a.token_env {
        match std::env::var(var) {
            Ok(t) if !t.trim().is_empty() => {
                opts.owner_token = Some(benchops_github::Token::new(t.trim().to_owned()));
            }
            _ => {
                eprintln!("error: --token-env {var}: the variable is not set or empty");
                return FAILED;
            }
        }
    }
    opts.environment = a.environment;
    opts.workflow_path = a.workflow;
    opts.handoff_refs = a.handoff_refs;
    opts.execution_actors = a.execution_actor;
    opts.handoff_via_app = a.handoff_via_app;
    opts.missed_run_label = (a.missed_run_label != "none").then_some(a.missed_run_label);
    opts.health_label = (a.health_label != "none").then_some(a.health_label);
    let result = provision::blocking(async {
        match mode {
            Mode::Verify => provision::verify(&opts).await,
            Mode::Plan => provision::plan(&opts).await,
            Mode::Apply => provision::apply(&opts).await,
        }
    });
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: provision: {e}");
            return FAILED;
        }
    };
    if a.json {
        if let Err(code) = print_json(&report) {
            return code;
        }
    } else {
        print!("{}", provision::render_text(&report));
    }
    if report.passed { OK } else { ATTENTION }
}

/// The manifest and the watch settings of `look`, or the exit code after
/// saying why not.
fn prepare(look: &Look) -> Result<(benchops::manifest::Manifest, WatchSettings), u8> {
    let now = parse_now(look.now.as_deref())?;
    let manifest = load_manifest(&look.manifest)?;
    Ok((
        manifest,
        watchdog::settings(now, look.lookback_hours, look.grace_minutes),
    ))
}

fn run_watchdog(look: &Look, json: bool, markdown: bool, annotations: bool) -> u8 {
    let (manifest, settings) = match prepare(look) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let report = match watchdog::watch_local(&look.history_repo(), &manifest, &settings) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return FAILED;
        }
    };
    if json {
        if let Err(code) = print_json(&report) {
            return code;
        }
    } else if markdown {
        print!("{}", watchdog::render_markdown(&report));
    } else {
        print!("{}", watchdog::render_text(&report));
        if annotations {
            print!("{}", watchdog::render_annotations(&report));
        }
    }
    if report.needs_attention() {
        ATTENTION
    } else {
        OK
    }
}

/// The schedule manifest, or the exit code after saying why not.
fn load_manifest(path: &Path) -> Result<benchops::manifest::Manifest, u8> {
    benchops_publish::sweep::load_manifest(path).map_err(|e| {
        eprintln!("error: {}: {}", e.step, error_line(&*e.cause));
        FAILED
    })
}

/// Prints `value` as pretty JSON, or the exit code after saying why not.
fn print_json(value: &impl serde::Serialize) -> Result<(), u8> {
    let j = serde_json::to_string_pretty(value).map_err(|e| {
        eprintln!("error: {e}");
        FAILED
    })?;
    println!("{j}");
    Ok(())
}

fn parse_now(now: Option<&str>) -> Result<jiff::Timestamp, u8> {
    match now {
        Some(t) => t.parse::<jiff::Timestamp>().map_err(|e| {
            eprintln!("error: --now {t:?} is not an RFC 3339 time: {e}");
            FAILED
        }),
        None => Ok(jiff::Timestamp::now()),
    }
}

fn run_health(look: &Look, ledger: Option<&Path>, json: bool, markdown: bool) -> u8 {
    let (manifest, settings) = match prepare(look) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let report = match health::health_local(&look.history_repo(), ledger, &manifest, &settings) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return FAILED;
        }
    };
    if json {
        if let Err(code) = print_json(&report) {
            return code;
        }
    } else if markdown {
        print!("{}", health::render_markdown(&report));
    } else {
        print!("{}", health::render_text(&report));
    }
    if report.needs_attention() {
        ATTENTION
    } else {
        OK
    }
}

fn run_check_manifest(paths: &[PathBuf]) -> u8 {
    let mut status = OK;
    for path in paths {
        let shown = escape_text(&path.display().to_string());
        let manifest = match benchops_publish::sweep::load_manifest(path) {
            Ok(m) => m,
            Err(e) => {
                let unreadable =
                    matches!(*e.cause, benchops_publish::sweep::Cause::ReadFile { .. });
                if unreadable {
                    eprintln!("error: {}", error_line(&*e.cause));
                    status = FAILED;
                } else {
                    println!("{shown}: invalid: {}", escape_text(&error_line(&*e.cause)));
                    if status == OK {
                        status = ATTENTION;
                    }
                }
                continue;
            }
        };
        let mut problems = 0;
        for lane in &manifest.lanes {
            if let Err(e) = benchops::schedule::Schedule::parse(&lane.cron, &lane.timezone) {
                println!(
                    "{shown}: lane {}: {}",
                    escape_text(lane.name.as_str()),
                    escape_text(&e.to_string())
                );
                problems += 1;
            }
        }
        // The compared metrics against what the suite's intents can report.
        for line in compared_metric_problems(&manifest, path) {
            println!("{shown}: {}", escape_text(&line));
            problems += 1;
        }
        // The allowed_signers file of [signing] must load as the sweep
        // loads it.
        if let Err(e) = benchops_publish::signatures::SignaturePolicy::load(&manifest, path, || {
            Ok::<_, benchops_publish::signatures::SignersError>(jiff::Timestamp::now())
        }) {
            println!("{shown}: signing: {}", escape_text(&error_line(&e)));
            problems += 1;
        }
        if problems > 0 {
            if status == OK {
                status = ATTENTION;
            }
        } else {
            println!("{shown}: valid, {} lane(s)", manifest.lanes.len());
        }
    }
    status
}

/// One problem per lane that compares a metric its suite's intents can never
/// report. Intents are read relative to the manifest; when one cannot be
/// read, or reads metrics from its output, the names are left for `lane
/// run` to check against what the cases report.
fn compared_metric_problems(manifest: &benchops::manifest::Manifest, path: &Path) -> Vec<String> {
    let Some(suite) = &manifest.suite else {
        return Vec::new();
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let mut intents = Vec::new();
    for name in suite {
        let file = base.join(name);
        let Ok(text) =
            benchops::fsio::read_input_text(&file, benchops::fsio::DEFAULT_MAX_INPUT_BYTES)
        else {
            return Vec::new();
        };
        match benchops::intent::from_toml(&text, name) {
            Ok(loaded) => intents.push(loaded.intent),
            Err(_) => return Vec::new(),
        }
    }
    let intents: Vec<&benchops::intent::Intent> = intents.iter().collect();
    let builtins = benchops::analysis::BUILTIN_METRICS.join(", ");
    manifest
        .lanes
        .iter()
        .filter_map(|lane| {
            let missing = lane.unreportable_metrics(&intents)?;
            (!missing.is_empty()).then(|| {
                let quoted: Vec<String> =
                    missing.iter().map(|m| benchops::excerpt::quote(m)).collect();
                format!(
                    "lane {}: [lanes.comparison] names {} that no intent of the suite reports (without [metrics] json_lines an intent reports only {builtins}); the lane would compare nothing for it",
                    lane.name.as_str(),
                    quoted.join(", ")
                )
            })
        })
        .collect()
}

fn run_validate(
    paths: &[PathBuf],
    json: bool,
    max_record_bytes: u64,
    manifest: Option<&Path>,
) -> u8 {
    let policy = match manifest {
        None => None,
        Some(path) => {
            let m = match load_manifest(path) {
                Ok(m) => m,
                Err(code) => return code,
            };
            match benchops_publish::signatures::SignaturePolicy::load(&m, path, || {
                Ok::<_, benchops_publish::signatures::SignersError>(jiff::Timestamp::now())
            }) {
                Ok(Some(p)) => Some(p),
                Ok(None) => {
                    eprintln!(
                        "note: {} has no [signing] table: signatures are not checked",
                        path.display()
                    );
                    None
                }
                Err(e) => {
                    eprintln!("error: read the allowed signers: {}", error_line(&e));
                    return FAILED;
                }
            }
        }
    };
    let opts = validate::ValidateOptions {
        max_record_bytes,
        signing: policy.as_ref(),
    };
    let verdicts = match validate::validate_paths(paths, &opts) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {}", error_line(&e));
            return FAILED;
        }
    };
    if json {
        match serde_json::to_string_pretty(&verdicts) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("error: failed to render JSON: {e}");
                return FAILED;
            }
        }
    } else {
        print!("{}", validate::render_table(&verdicts));
    }
    if verdicts.iter().all(|v| v.valid) {
        OK
    } else {
        ATTENTION
    }
}

/// Prints a sweep's summary (or its error and receipt) and picks the exit
/// code.
fn finish_sweep(swept: Result<SweepReport, SweepError>, receipt_out: Option<&Path>) -> u8 {
    match swept {
        Ok(report) => {
            print!("{}", render_summary(&report));
            let mut status = OK;
            if report.quarantined() > 0 {
                let place = report.quarantine.as_ref().map_or_else(
                    || "handoff refs left in place".to_owned(),
                    |q| format!("files in {}, handoff refs left in place", q.display()),
                );
                eprintln!(
                    "error: {} handoff(s) quarantined ({place})",
                    report.quarantined()
                );
                status = ATTENTION;
            }
            if report.invalid_left() > 0 {
                // Not quarantined means not done: no copy and no `.why.txt`
                // exist, and the handoff still sits in `sealed/`. The valid
                // handoffs were persisted and reconciled all the same; the
                // sweep reports a failure so that it never looks finished.
                eprintln!(
                    "error: {} invalid handoff(s) could not be quarantined and were left in place (see their quarantine-failed problem); fix the quarantine directory and run the sweep again",
                    report.invalid_left()
                );
                status = FAILED;
            }
            let files_left = report.consumed.iter().filter(|c| !c.is_gone()).count();
            if files_left > 0 {
                eprintln!(
                    "error: {files_left} handoff file(s) whose record is in history could not be moved to .persisted/; the next sweep tries again"
                );
                status = status.max(ATTENTION);
            }
            if report.refs_left() > 0 {
                eprintln!(
                    "error: {} consumed handoff ref(s) could not be deleted; their records are in history and the next sweep deletes them",
                    report.refs_left()
                );
                status = status.max(ATTENTION);
            }
            status
        }
        Err(e) => {
            eprintln!("error: {}", error_line(&e));
            eprintln!(
                "{}",
                if e.is_retryable() {
                    "the sweep can be rerun as is: it converges from what exists"
                } else {
                    "rerunning will not help until the cause above is fixed"
                }
            );
            emit_receipt(e.receipt.as_deref(), receipt_out);
            FAILED
        }
    }
}

/// Writes a stopped sweep's receipt to `out` (atomically), or prints it to
/// stderr as one JSON line.
fn emit_receipt(receipt: Option<&[u8]>, out: Option<&Path>) {
    let Some(bytes) = receipt else {
        return;
    };
    match out {
        Some(path) => match benchops::fsio::write_atomic(path, bytes) {
            Ok(()) => eprintln!("receipt written to {}", path.display()),
            Err(e) => {
                eprintln!("error: failed to write the receipt: {}", error_line(&e));
                eprintln!("{}", String::from_utf8_lossy(bytes));
            }
        },
        None => eprintln!("{}", String::from_utf8_lossy(bytes)),
    }
}
