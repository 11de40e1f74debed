//! `benchops-app`: the GitHub App backend.
//!
//! - `serve --config FILE`: validates the configuration, opens the
//!   database, listens, and runs until SIGTERM or SIGINT (then drains the
//!   queue). Prints `listening on ADDR` on standard error once bound.
//! - `check-config --config FILE`: validates the configuration, looks at
//!   the database without writing anything (not even creating it), prints
//!   a summary without secrets, and exits.
//!
//! Exit status: 0 done, 2 bad configuration or usage, 1 any other failure.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use benchops_app::store::Found;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "benchops-app",
    version,
    about = "The benchops GitHub App backend: webhooks, phase-scoped token exchange, status page",
    after_help = "Examples:\n  benchops-app check-config --config /etc/benchops-app/config.toml\n  benchops-app serve --config /etc/benchops-app/config.toml\n\nSee docs/cli/benchops-app.md for the configuration keys and runbooks/app.md for deployment."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs the server until SIGTERM or SIGINT.
    Serve {
        /// The configuration file (TOML).
        #[arg(long, value_name = "FILE", env = "BENCHOPS_APP_CONFIG")]
        config: PathBuf,
        /// How long the queue may take to drain at shutdown, in seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 30)]
        drain_seconds: u64,
    },
    /// Validates the configuration and looks at the database (writing nothing), then exits.
    CheckConfig {
        /// The configuration file (TOML).
        #[arg(long, value_name = "FILE", env = "BENCHOPS_APP_CONFIG")]
        config: PathBuf,
    },
}

fn say(line: &str) {
    // A closed standard error is no reason to panic.
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Command::CheckConfig { config } => {
            let cfg = match benchops_app::config::load(&config) {
                Ok(c) => c,
                Err(e) => {
                    say(&format!("benchops-app: {e}"));
                    return ExitCode::from(2);
                }
            };
            // Looking never writes: the database is inspected, not opened.
            let database = cfg.database();
            let db = match benchops_app::store::inspect(&cfg.data_dir) {
                Ok(Found::NoDirectory) => format!(
                    "{} (not created yet: the data directory does not exist; serve creates both, schema {})",
                    database.display(),
                    benchops_app::store::schema_known()
                ),
                Ok(Found::NoDatabase) => format!(
                    "{} (not created yet: serve creates it, schema {})",
                    database.display(),
                    benchops_app::store::schema_known()
                ),
                Ok(Found::Database { schema }) if schema < benchops_app::store::schema_known() => {
                    format!(
                        "{} (schema {schema}; serve migrates it to {})",
                        database.display(),
                        benchops_app::store::schema_known()
                    )
                }
                Ok(Found::Database { schema }) => {
                    format!("{} (schema {schema})", database.display())
                }
                Err(e) => {
                    say(&format!("benchops-app: {e}"));
                    return ExitCode::from(1);
                }
            };
            let _ = writeln!(
                std::io::stdout(),
                "configuration {} is valid\n  app id: {}\n  listen: {}\n  database: {db}\n  webhook secrets: {}\n  oidc: issuer {} audience {}\n  repositories: {}\n  workflow: {} on {} for {}\n  environment: {}\n  history: {}\n  handoff: {}\n  limits: headers within {} s, bodies within {} s, at most {} body bytes in memory\n  local trial: {}",
                cfg.path.display(),
                cfg.app_id,
                cfg.listen,
                cfg.webhook_secrets.len(),
                cfg.oidc.issuer,
                cfg.oidc.audience,
                cfg.policy
                    .repositories
                    .iter()
                    .map(|r| format!("{} ({})", r.name, r.id))
                    .collect::<Vec<_>>()
                    .join(", "),
                cfg.policy.workflow_path,
                cfg.policy.default_branch,
                cfg.policy.events.join(", "),
                cfg.policy.environment.as_deref().unwrap_or("(none)"),
                cfg.history
                    .as_ref()
                    .map_or("(not configured)".to_owned(), |p| p.display().to_string()),
                cfg.handoff.as_ref().map_or("off (no [handoff] table)".to_owned(), |h| format!(
                    "POST /handoff on: trust from {} on {}, at most {} bytes, {} a minute per key (burst {}), trust reused {} s",
                    h.manifest,
                    cfg.policy.default_branch,
                    h.max_body_bytes,
                    h.per_key_per_minute,
                    h.burst,
                    h.trust_ttl_seconds
                )),
                cfg.header_timeout.as_secs(),
                cfg.body_timeout.as_secs(),
                cfg.max_buffered_body_bytes,
                if cfg.local_trial {
                    benchops_app::config::LOCAL_TRIAL
                } else {
                    "off"
                },
            );
            ExitCode::SUCCESS
        }
        Command::Serve {
            config,
            drain_seconds,
        } => {
            let cfg = match benchops_app::config::load(&config) {
                Ok(c) => c,
                Err(e) => {
                    say(&format!("benchops-app: {e}"));
                    return ExitCode::from(2);
                }
            };
            benchops_app::telemetry::init_logging(cfg.log_format);
            if cfg.local_trial {
                tracing::warn!("local trial {}", benchops_app::config::LOCAL_TRIAL);
            }
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    say(&format!("benchops-app: cannot start the runtime: {e}"));
                    return ExitCode::from(1);
                }
            };
            runtime.block_on(async move {
                let listen = cfg.listen;
                let (state, worker) = match benchops_app::build(cfg) {
                    Ok(x) => x,
                    Err(e) => {
                        say(&format!("benchops-app: {e}"));
                        return ExitCode::from(1);
                    }
                };
                let listener = match tokio::net::TcpListener::bind(listen).await {
                    Ok(l) => l,
                    Err(e) => {
                        say(&format!("benchops-app: cannot listen on {listen}: {e}"));
                        return ExitCode::from(1);
                    }
                };
                let addr = listener.local_addr().map_or(listen, |a| a);
                say(&format!("listening on {addr}"));
                tracing::info!(%addr, "listening");
                match benchops_app::serve_on(
                    listener,
                    state,
                    worker,
                    benchops_app::shutdown_signal(),
                    Duration::from_secs(drain_seconds),
                )
                .await
                {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        say(&format!("benchops-app: {e}"));
                        ExitCode::from(1)
                    }
                }
            })
        }
    }
}
