//! The commands of `benchops-publish`: parse the command line
//! ([`crate::cli`]), call the library, print what it returns, and end with
//! an exit code of [`crate::exit`]. The binary's `main` is one call to
//! [`main_with_args`].
//!
//! A command that finished returns its exit code (`OK`, or `ATTENTION`
//! when a person should look). One that could not do what was asked
//! returns a [`CommandError`], which says what to print on standard error
//! and carries its own exit code ([`CommandError::exit_code`]).
//!
//! Everything is printed through [`out`] and [`note`], never the standard
//! macros, which panic when the reader has gone away (`… | head`): a closed
//! standard output ends the output quietly, as with Unix tools, and the
//! exit code stays the command's own.

mod baseline;
mod check;
mod read;
mod series;
mod sweep;

use std::fmt::Display;
use std::io::{self, Write as _};
use std::path::Path;

use benchops::manifest::Manifest;
use benchops::watchdog::WatchSettings;

use crate::cli::{Cli, Command, Look, ProvisionCommand};
use crate::exit::{ATTENTION, BUSY, FAILED, OK};
use crate::provision::ProvisionError;
use crate::signatures::SignersError;
use crate::sweep::{StepError, SweepError};
use crate::text::error_line;
use crate::validate::InputError;
use crate::watchdog::WatchError;
use crate::{health, watchdog};

pub use baseline::BaselineError;
pub use read::{ReadError, find_record};
pub use sweep::{ReceiptOutcome, Stopped};

/// The repository and credentials `--github` names (the sweep's and the
/// baseline commands' options alike), or None when one is missing:
/// `--token-service URL`, else `--app-id` with `--app-key-file`.
fn github_access(auth: crate::cli::GitHubAuth) -> Option<crate::github::GitHubAccess> {
    let (app_id, app_key_file, token_service) =
        match (auth.token_service, auth.app_id, auth.app_key_file) {
            (Some(url), _, _) => (
                0,
                std::path::PathBuf::new(),
                Some(crate::github::TokenServiceOptions {
                    url,
                    audience: auth.token_audience,
                    id_token_request: None,
                }),
            ),
            (None, Some(id), Some(key)) => (id, key, None),
            _ => return None,
        };
    Some(crate::github::GitHubAccess {
        repo: auth.repo?,
        app_id,
        app_key_file,
        token_service,
        client: crate::github::ClientSettings::default(),
    })
}

/// Runs `benchops-publish` with `args` (the program name first) and returns
/// its exit code: what the binary's `main` does, callable from elsewhere.
pub fn main_with_args<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let config = match benchops_cli::ProjectConfig::from_env() {
        Ok(c) => c,
        Err(e) => {
            note(format_args!(
                "{} {e}\n",
                benchops_cli::output::error_prefix()
            ));
            return FAILED;
        }
    };
    let cli = match benchops_cli::parse::<Cli, _, _>(args, config.as_ref()) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout and are not errors.
            let _ = e.print();
            return if e.use_stderr() { FAILED } else { OK };
        }
    };
    cli.output.apply();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            note(benchops_cli::output::paint_error_prefix(&e.report()));
            e.exit_code()
        }
    }
}

/// Runs one parsed command: its exit code, or why it could not run.
pub fn run(cli: Cli) -> Result<u8, CommandError> {
    match cli.command {
        Command::Validate {
            paths,
            json,
            verbose,
            max_record_bytes,
            manifest,
        } => check::validate(&paths, json, verbose, max_record_bytes, manifest.as_deref()),
        Command::CheckManifest { manifests } => Ok(check::check_manifests(&manifests)),
        Command::Provision(p) => provision(p),
        Command::Health {
            look,
            ledger,
            json,
            markdown,
            full,
        } => {
            // With --local the ledger is DIR/issues.json; with --history only
            // the one --ledger names.
            let ledger = match look.history {
                Some(_) => ledger,
                None => Some(look.sweep_dir().join("issues.json")),
            };
            health(&look, ledger.as_deref(), json, markdown, full)
        }
        Command::Watchdog {
            look,
            json,
            markdown,
            annotations,
        } => watchdog(&look, json, markdown, annotations),
        Command::Sweep(args) => sweep::sweep(args),
        Command::Show {
            record,
            place,
            json,
        } => read::show(&record, &place, json),
        Command::History {
            place,
            lane,
            case,
            metric,
            limit,
            csv,
            json,
            svg,
        } => series::history(
            &place,
            &lane,
            case.as_deref(),
            metric.as_deref(),
            limit,
            csv,
            json,
            svg.as_deref(),
        ),
        Command::Baseline(command) => baseline::baseline(command),
    }
}

/// Why a command could not do what was asked. Its message is what follows
/// `error: ` on standard error ([`report`](Self::report) adds what else a
/// stopped sweep prints), and it carries the exit code the command ends
/// with ([`exit_code`](Self::exit_code)).
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// `sweep --github` without a repository, a credential or a handoff
    /// source.
    #[error(
        "--github needs --repo OWNER/NAME, either --token-service URL or --app-id N with --app-key-file PEM (or BENCHOPS_APP_KEY_FILE naming the file), and --handoff DIR, --handoff-refs or both"
    )]
    GitHubOptions,
    /// `--github` (other than the sweep's) without a repository or a
    /// credential.
    #[error(
        "--github needs --repo OWNER/NAME and either --token-service URL or --app-id N with --app-key-file PEM (or BENCHOPS_APP_KEY_FILE naming the file)"
    )]
    GitHubCredentials,
    /// `sweep` in neither mode.
    #[error("pass --local [DIR] or --github")]
    NoMode,
    /// `provision --token-env VAR` names a variable that is unset or empty.
    #[error("--token-env {var}: the variable is not set or empty")]
    TokenEnv {
        /// The variable.
        var: String,
    },
    /// `provision` could not run at all.
    #[error("provision: {}", error_line(.0))]
    Provision(ProvisionError),
    /// `--now` is not an RFC 3339 time.
    #[error("--now {text:?} is not an RFC 3339 time: {error}")]
    Now {
        /// What was given.
        text: String,
        /// Why it does not parse.
        error: jiff::Error,
    },
    /// The schedule manifest cannot be read or is invalid: the step and
    /// the cause.
    #[error("{}: {}", .0.step, error_line(&*.0.cause))]
    Manifest(StepError),
    /// `validate --manifest`: the `allowed_signers` file of its `[signing]`
    /// table cannot be used.
    #[error("read the allowed signers: {}", error_line(.0))]
    Signers(SignersError),
    /// `validate`: a path given cannot be used.
    #[error("{}", error_line(.0))]
    Input(InputError),
    /// `watchdog` or `health` could not look at the history.
    #[error("{}", error_line(.0))]
    Watch(WatchError),
    /// A report could not be rendered as JSON.
    #[error("{0}")]
    Json(serde_json::Error),
    /// `validate --json`: the verdicts could not be rendered.
    #[error("failed to render JSON: {0}")]
    ValidateJson(serde_json::Error),
    /// The sweep stopped: the phase, the step and why, with what became of
    /// its receipt.
    #[error("{}", error_line(&.0.error))]
    SweepStopped(Box<Stopped>),
    /// `show`, `history` or `baseline` could not read what was asked.
    #[error("{0}")]
    Read(#[from] ReadError),
    /// `baseline set` or `reset` refused or stopped.
    #[error("{0}")]
    Baseline(#[from] BaselineError),
    /// `sweep --local`: another sweep of the directory held the sweep lock
    /// for the whole wait; nothing was read or written.
    #[error("{}", error_line(.0))]
    SweepBusy(SweepError),
}

impl CommandError {
    /// The exit code the command ends with: [`BUSY`] when another sweep
    /// held the lock, [`FAILED`] for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::SweepBusy(_) => BUSY,
            CommandError::Baseline(BaselineError::Local(e)) if e.is_retryable() => BUSY,
            _ => FAILED,
        }
    }

    /// Everything the command prints on standard error: `error: ` and the
    /// message, then for a sweep whether a rerun helps and its receipt.
    pub fn report(&self) -> String {
        let mut s = format!("error: {self}\n");
        match self {
            CommandError::SweepBusy(_) => {
                s.push_str(
                    "another sweep holds the lock; run this one again once it has finished\n",
                );
            }
            CommandError::SweepStopped(stopped) => {
                let Stopped { error, receipt } = stopped.as_ref();
                s.push_str(if error.is_retryable() {
                    "the sweep can be rerun as is: it converges from what exists\n"
                } else {
                    "rerunning will not help until the cause above is fixed\n"
                });
                s.push_str(&receipt.report());
            }
            _ => {}
        }
        s
    }
}

// ---------------------------------------------------------------------------
// Output

/// Writes `text` to standard output. A reader that has gone away ends the
/// output quietly (the exit code stays the command's own); any other write
/// error is reported on standard error.
pub fn out(text: impl Display) {
    let mut o = benchops_cli::output::stdout().lock();
    match write!(o, "{text}").and_then(|()| o.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            note(format_args!(
                "error: failed to write to standard output: {e}\n"
            ));
        }
        _ => {}
    }
}

/// Writes `text` to standard error, always (errors and warnings); a
/// closed standard error is not worth failing for.
pub fn note(text: impl Display) {
    let _ = write!(benchops_cli::output::stderr().lock(), "{text}");
}

/// Writes a note on what happens (a wait, a step) to standard error,
/// unless `--quiet`.
pub fn info(text: impl Display) {
    if !benchops_cli::output::quiet() {
        note(text);
    }
}

/// Prints `value` as pretty JSON and a newline.
fn print_json(value: &impl serde::Serialize) -> Result<(), CommandError> {
    let j = serde_json::to_string_pretty(value).map_err(CommandError::Json)?;
    out(format_args!("{j}\n"));
    Ok(())
}

/// `ATTENTION` when a person should look, else `OK`.
fn attention_if(needs: bool) -> u8 {
    if needs { ATTENTION } else { OK }
}

// ---------------------------------------------------------------------------
// watchdog, health, provision

/// The schedule manifest at `path`.
fn load_manifest(path: &Path) -> Result<Manifest, CommandError> {
    crate::sweep::load_manifest(path).map_err(CommandError::Manifest)
}

/// The instant of `--now`, or now.
fn parse_now(now: Option<&str>) -> Result<jiff::Timestamp, CommandError> {
    match now {
        Some(t) => t.parse().map_err(|error| CommandError::Now {
            text: t.to_owned(),
            error,
        }),
        None => Ok(jiff::Timestamp::now()),
    }
}

/// The manifest and the watch settings of `look`.
fn prepare(look: &Look) -> Result<(Manifest, WatchSettings), CommandError> {
    let now = parse_now(look.now.as_deref())?;
    let manifest = load_manifest(&look.manifest)?;
    Ok((
        manifest,
        watchdog::settings(now, look.lookback_hours, look.grace_minutes),
    ))
}

/// `benchops-publish watchdog`.
fn watchdog(
    look: &Look,
    json: bool,
    markdown: bool,
    annotations: bool,
) -> Result<u8, CommandError> {
    let (manifest, settings) = prepare(look)?;
    let report = watchdog::watch_local(&look.history_repo(), &manifest, &settings)
        .map_err(CommandError::Watch)?;
    if json {
        print_json(&report)?;
    } else if markdown {
        out(watchdog::render_markdown(&report));
    } else {
        out(watchdog::render_text(&report));
        if annotations {
            out(watchdog::render_annotations(&report));
        }
    }
    Ok(attention_if(report.needs_attention()))
}

/// `benchops-publish health`, with the drift issues of `ledger` when given.
fn health(
    look: &Look,
    ledger: Option<&Path>,
    json: bool,
    markdown: bool,
    full: bool,
) -> Result<u8, CommandError> {
    let (manifest, settings) = prepare(look)?;
    let report = health::health_local(&look.history_repo(), ledger, &manifest, &settings, full)
        .map_err(CommandError::Watch)?;
    if json {
        print_json(&report)?;
    } else if markdown {
        out(health::render_markdown(&report));
    } else {
        out(health::render_text(&report));
    }
    Ok(attention_if(report.needs_attention()))
}

/// `benchops-publish provision verify|plan|apply`.
fn provision(command: ProvisionCommand) -> Result<u8, CommandError> {
    use crate::provision::{self, Mode};
    let (mode, a) = match command {
        ProvisionCommand::Verify(a) => (Mode::Verify, a),
        ProvisionCommand::Plan(a) => (Mode::Plan, a),
        ProvisionCommand::Apply(a) => (Mode::Apply, a),
    };
    let mut opts = provision::ProvisionOptions::new(a.repo, a.manifest);
    opts.app_id = a.app_id;
    opts.app_key_file = a.app_key_file;
    if let Some(var) = a.token_env {
        match std::env::var(&var) {
            Ok(t) if !t.trim().is_empty() => {
                opts.owner_token = Some(benchops_github::Token::new(t.trim().to_owned()));
            }
            _ => return Err(CommandError::TokenEnv { var }),
        }
    }
    opts.environment = a.environment;
    opts.workflow_path = a.workflow;
    opts.handoff_refs = a.handoff_refs;
    opts.execution_actors = a.execution_actor;
    opts.handoff_via_app = a.handoff_via_app;
    opts.missed_run_label = (a.missed_run_label != "none").then_some(a.missed_run_label);
    opts.health_label = (a.health_label != "none").then_some(a.health_label);
    let report = provision::blocking(async {
        match mode {
            Mode::Verify => provision::verify(&opts).await,
            Mode::Plan => provision::plan(&opts).await,
            Mode::Apply => provision::apply(&opts).await,
        }
    })
    .map_err(CommandError::Provision)?;
    if a.json {
        print_json(&report)?;
    } else {
        out(provision::render_text(&report));
    }
    Ok(attention_if(!report.passed))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::sweep::{Cause, Phase, Progress};

    fn stopped(retryable: bool) -> SweepError {
        let cause = if retryable {
            Cause::IssuesBusy { replans: 5 }
        } else {
            Cause::Config {
                reason: "bad".to_owned(),
            }
        };
        SweepError::new(
            Phase::Persist,
            StepError::new("write the commit", cause),
            &Progress::default(),
        )
    }

    /// Only a held sweep lock exits 3; every other error exits 2.
    #[test]
    fn each_error_carries_its_exit_code() {
        assert_eq!(CommandError::SweepBusy(stopped(true)).exit_code(), BUSY);
        for e in [
            CommandError::GitHubOptions,
            CommandError::NoMode,
            CommandError::TokenEnv { var: "T".into() },
            CommandError::SweepStopped(Box::new(Stopped {
                error: stopped(true),
                receipt: ReceiptOutcome::None,
            })),
        ] {
            assert_eq!(e.exit_code(), FAILED, "{e}");
        }
    }

    /// A stopped sweep says whether a rerun helps, then where its receipt
    /// went, each on its own line after the error.
    #[test]
    fn a_stopped_sweep_reports_the_rerun_hint_then_its_receipt() {
        let report = |retryable, receipt| {
            CommandError::SweepStopped(Box::new(Stopped {
                error: stopped(retryable),
                receipt,
            }))
            .report()
        };
        let r = report(false, ReceiptOutcome::Printed(b"{\"x\":1}".to_vec()));
        let lines: Vec<&str> = r.lines().collect();
        assert!(
            lines[0].starts_with("error: sweep stopped in the persist phase at write the commit")
        );
        assert_eq!(
            lines[1],
            "rerunning will not help until the cause above is fixed"
        );
        assert_eq!(lines[2], "{\"x\":1}");
        assert_eq!(lines.len(), 3);
        let r = report(true, ReceiptOutcome::Written(PathBuf::from("r.json")));
        assert!(r.ends_with(
            "the sweep can be rerun as is: it converges from what exists\nreceipt written to r.json\n"
        ));
        let busy = CommandError::SweepBusy(stopped(true)).report();
        assert!(busy.ends_with(
            "\nanother sweep holds the lock; run this one again once it has finished\n"
        ));
    }

    /// Help and version exit 0; a usage error exits 2.
    #[test]
    fn parse_errors_exit_2_and_help_exits_0() {
        assert_eq!(main_with_args(["benchops-publish", "--version"]), OK);
        assert_eq!(
            main_with_args(["benchops-publish", "no-such-command"]),
            FAILED
        );
    }
}
