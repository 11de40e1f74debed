//! The command line of `benchops-app`: its arguments, each command as a
//! library function, and the error that carries its exit code
//! ([`CliError::exit_code`]), so that `main` only parses, runs and exits.
//!
//! - `serve --config FILE`: validates the configuration, opens the
//!   database, listens, and runs until SIGTERM or SIGINT (then drains the
//!   queue). Prints `listening on ADDR` on standard error once bound.
//! - `check-config --config FILE`: validates the configuration, looks at
//!   the database without writing anything (not even creating it), prints
//!   a summary without secrets, and exits.
//!
//! Exit status ([`exit`]): 0 done, 2 bad configuration or usage, 1 any
//! other failure.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::store::Found;

/// The exit codes of `benchops-app`, one named constant per meaning.
pub mod exit {
    /// Done.
    pub const OK: u8 = 0;
    /// A failure other than the configuration: the database, the runtime,
    /// the listening address, the server.
    pub const FAILED: u8 = 1;
    /// Bad configuration or bad usage.
    pub const USAGE: u8 = 2;
}

/// The command line's definition, for the shell completions and man pages
/// a release ships (`cargo xtask dist-docs`).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[derive(Debug, Parser)]
#[command(
    name = "benchops-app",
    version,
    about = "The benchops GitHub App backend: webhooks, phase-scoped token exchange, status page",
    after_help = "Examples:\n  benchops-app check-config --config examples/app/local/config.toml\n  benchops-app serve --config /etc/benchops-app/config.toml   # needs a deployed host; runs until stopped\n\nSee docs/cli/benchops-app.md for the configuration keys and runbooks/app.md for deployment."
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

/// Why a command failed; each knows its exit code.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The configuration is invalid or unreadable.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The database could not be looked at.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The server's state could not be built.
    #[error(transparent)]
    Build(#[from] crate::BuildError),
    /// The listening address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The server stopped with an error.
    #[error(transparent)]
    Serve(std::io::Error),
}

impl CliError {
    /// The exit code of this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Config(_) => exit::USAGE,
            _ => exit::FAILED,
        }
    }
}

fn say(line: &str) {
    // A closed standard error is no reason to panic.
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Parses `args`, runs the command and returns its exit code; errors are
/// printed on standard error as `benchops-app: <error>`.
pub fn main_with_args<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            return code;
        }
    };
    let done = match cli.command {
        Command::CheckConfig { config } => check_config(&config),
        Command::Serve {
            config,
            drain_seconds,
        } => serve(&config, Duration::from_secs(drain_seconds)),
    };
    match done {
        Ok(()) => exit::OK,
        Err(e) => {
            say(&format!("benchops-app: {e}"));
            e.exit_code()
        }
    }
}

/// `check-config`: validates the configuration and prints its summary
/// (no secret), looking at the database without writing anything.
pub fn check_config(config: &std::path::Path) -> Result<(), CliError> {
    let cfg = crate::config::load(config)?;
    let database = cfg.database();
    let known = crate::store::schema_known();
    let db = match crate::store::inspect(&cfg.data_dir)? {
        Found::NoDirectory => format!(
            "{} (not created yet: the data directory does not exist; serve creates both, schema {known})",
            database.display(),
        ),
        Found::NoDatabase => format!(
            "{} (not created yet: serve creates it, schema {known})",
            database.display(),
        ),
        Found::Database { schema } if schema < known => format!(
            "{} (schema {schema}; serve migrates it to {known})",
            database.display(),
        ),
        Found::Database { schema } => format!("{} (schema {schema})", database.display()),
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
                    crate::config::LOCAL_TRIAL
                } else {
                    "off"
                },
            );
    Ok(())
}

/// `serve`: runs the server until SIGTERM or SIGINT, then drains the queue
/// for at most `drain`.
pub fn serve(config: &std::path::Path, drain: Duration) -> Result<(), CliError> {
    let cfg = crate::config::load(config)?;
    crate::telemetry::init_logging(cfg.log_format);
    if cfg.local_trial {
        tracing::warn!("local trial {}", crate::config::LOCAL_TRIAL);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    runtime.block_on(async move {
        let listen = cfg.listen;
        let (state, worker) = crate::build(cfg)?;
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|source| CliError::Listen {
                addr: listen,
                source,
            })?;
        let addr = listener.local_addr().map_or(listen, |a| a);
        say(&format!("listening on {addr}"));
        tracing::info!(%addr, "listening");
        crate::serve_on(listener, state, worker, crate::shutdown_signal(), drain)
            .await
            .map_err(CliError::Serve)
    })
}
