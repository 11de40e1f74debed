//! The benchops GitHub App backend.
//!
//! [`router`] serves:
//! - `POST /webhook`: signed deliveries, verified before anything is parsed,
//!   deduped on the delivery id, acknowledged, then worked off through a
//!   bounded queue ([`webhook`], [`events`], [`worker`]);
//! - `POST /token`, `POST /token/revoke`: the Actions OIDC exchange for an
//!   installation token scoped to one repository and one phase, and its
//!   revocation ([`token`], [`policy`]);
//! - `GET /healthz`, `GET /readyz`, `GET /metrics` ([`pages`]);
//! - `GET /status`, `GET /status.json` ([`status`]);
//! - `POST /handoff`: a signed sealed record from an execution host with no
//!   GitHub credential, written as a handoff ref ([`handoff`]; on with a
//!   `[handoff]` table).
//!
//! State is one SQLite file ([`store`]); configuration is one TOML file
//! plus environment variables ([`config`]). [`serve_on`] runs the whole
//! server until SIGTERM or SIGINT, then drains the queue; [`server`] bounds
//! what a peer can hold: the time to send headers and a body, and the body
//! bytes in memory.
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! let config = benchops_app::config::load(std::path::Path::new("app.toml"))?;
//! let (state, worker) = benchops_app::build(config)?;
//! let app = benchops_app::router(state.clone());
//! # let _ = (app, worker); Ok(()) }
//! ```

pub mod cli;
pub mod config;
pub mod events;
pub mod handoff;
pub mod intake;
pub mod pages;
pub mod policy;
pub mod server;
pub mod status;
pub mod store;
pub mod telemetry;
pub mod token;
pub mod webhook;
pub mod worker;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use benchops_github::oidc::{OidcSettings, OidcVerifier};
use benchops_github::{AppClient, AppId, AppKey, GitHubClient};
use tokio::sync::{OnceCell, mpsc};

use crate::config::Config;
use crate::events::RouteRules;
use crate::store::Store;
use crate::telemetry::Metrics;
use crate::worker::Worker;

/// At most this many "webhook refused" lines a second, and as many lines of
/// token and handoff refusals that are not stored; the rest are counted
/// (`held_back` on the next line, and in the metrics).
pub const REFUSALS_LOGGED_PER_SECOND: u32 = 10;

/// The drift label when the configuration names none.
pub const DEFAULT_DRIFT_LABEL: &str = "benchmark-drift";

/// Everything a request handler shares.
#[derive(Debug)]
pub struct AppState {
    /// The validated configuration.
    pub config: Config,
    /// The database.
    pub store: Store,
    /// The group-commit writer of deliveries.
    pub intake: intake::Intake,
    /// The metrics.
    pub metrics: Arc<Metrics>,
    /// The queue to the worker.
    pub queue: mpsc::Sender<i64>,
    /// How deliveries are routed.
    pub rules: RouteRules,
    /// The OIDC verifier.
    pub oidc: OidcVerifier,
    /// The GitHub client (no credential).
    pub github: GitHubClient,
    /// The client authenticated as the App.
    pub app_client: AppClient,
    /// The App's bot login, once known.
    pub bot_login: Arc<OnceCell<String>>,
    /// The last status page built.
    pub status_cache: pages::StatusCache,
    /// The bound on "webhook refused" log lines.
    pub refusal_log: telemetry::LogLimiter,
    /// The bound on the log lines of token and handoff refusals that are
    /// not stored (callers who proved nothing).
    pub unproven_log: telemetry::LogLimiter,
    /// `POST /handoff`, when configured.
    pub handoffs: Option<handoff::Handoffs>,
    /// The request body bytes held at once.
    pub bodies: server::BodyBudget,
}

/// Why the server could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The database.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// The App key or the GitHub client.
    #[error("GitHub client: {0}")]
    GitHub(#[from] benchops_github::GitHubError),
    /// The OIDC settings.
    #[error("OIDC: {0}")]
    Oidc(#[from] benchops_github::oidc::OidcError),
    /// The intake writer thread.
    #[error("start the intake writer: {0}")]
    Thread(#[from] std::io::Error),
    /// The App key file.
    #[error("{path}: {reason}")]
    Key {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
}

/// Opens the database and builds the shared state and the worker (not
/// started: run [`Worker::run`] with the receiver it holds).
pub fn build(config: Config) -> Result<(Arc<AppState>, WorkerHandle), BuildError> {
    let store = Store::open(&config.data_dir)?;
    let pem =
        benchops::fsio::read_input_file(&config.private_key_file, 64 * 1024).map_err(|e| {
            BuildError::Key {
                path: config.private_key_file.clone(),
                reason: e.to_string(),
            }
        })?;
    let key = AppKey::from_pem(AppId::new(config.app_id), &pem)?;
    let mut builder = GitHubClient::builder();
    if let Some(url) = &config.github_api_url {
        builder = builder.base_url(url.clone());
    }
    let github = builder.timeout(Duration::from_secs(20)).build()?;
    let app_client = github.app(key);
    let mut settings = OidcSettings::new(config.oidc.issuer.clone(), config.oidc.audience.clone());
    settings.leeway = config.leeway();
    let oidc = OidcVerifier::new(settings)?;
    let metrics = Arc::new(Metrics::new());
    let (tx, rx) = mpsc::channel(config.queue_capacity);
    let bot_login = Arc::new(OnceCell::new());
    let rules = RouteRules {
        drift_label: DEFAULT_DRIFT_LABEL.to_owned(),
        history_ref: benchops::layout::HISTORY_REF.to_owned(),
        workflow_path: config.policy.workflow_path.clone(),
    };
    let worker = Worker {
        store: store.clone(),
        metrics: metrics.clone(),
        github: github.clone(),
        app_client: app_client.clone(),
        bot_login: bot_login.clone(),
    };
    let intake = intake::Intake::start(store.clone())?;
    let handoffs = config.handoff.clone().map(handoff::Handoffs::new);
    let state = Arc::new(AppState {
        handoffs,
        bodies: server::BodyBudget::new(config.max_buffered_body_bytes),
        config,
        intake,
        store,
        metrics,
        queue: tx,
        rules,
        oidc,
        github,
        app_client,
        bot_login,
        status_cache: pages::StatusCache::default(),
        refusal_log: telemetry::LogLimiter::new(REFUSALS_LOGGED_PER_SECOND),
        unproven_log: telemetry::LogLimiter::new(REFUSALS_LOGGED_PER_SECOND),
    });
    Ok((
        state,
        WorkerHandle {
            worker,
            rx,
            housekeeping: worker::HOUSEKEEPING_EVERY,
        },
    ))
}

/// The worker and its end of the queue.
#[derive(Debug)]
pub struct WorkerHandle {
    worker: Worker,
    rx: mpsc::Receiver<i64>,
    housekeeping: Duration,
}

impl WorkerHandle {
    /// How often the worker prunes delivery ids and retries failed items
    /// ([`worker::HOUSEKEEPING_EVERY`] unless set).
    pub fn housekeeping_every(mut self, every: Duration) -> WorkerHandle {
        self.housekeeping = every;
        self
    }

    /// Runs the worker until every sender is gone and the queue is empty.
    pub async fn run(self) {
        self.worker.run(self.rx, self.housekeeping).await
    }
}

/// The HTTP routes. Every endpoint that reads a body reads it through
/// [`server::read_body`] (its limit, the body budget, the body timeout);
/// every answer carries [`server::security_headers`].
pub fn router(state: Arc<AppState>) -> Router {
    use server::Endpoint;
    let max_body = state.config.max_body_bytes;
    let max_handoff = state
        .config
        .handoff
        .as_ref()
        .map_or(config::DEFAULT_HANDOFF_BODY_BYTES, |h| h.max_body_bytes);
    let body = |endpoint: Endpoint| {
        axum::middleware::from_fn_with_state((state.clone(), endpoint), server::read_body)
    };
    Router::new()
        .route(
            "/webhook",
            post(webhook::receive)
                .layer(DefaultBodyLimit::max(max_body))
                .layer(body(Endpoint::Webhook)),
        )
        .route(
            "/token",
            post(token::exchange)
                .layer(DefaultBodyLimit::max(token::MAX_TOKEN_REQUEST_BYTES))
                .layer(body(Endpoint::Token)),
        )
        .route(
            "/token/revoke",
            post(token::revoke).layer(body(Endpoint::Revoke)),
        )
        .route(
            "/handoff",
            post(handoff::receive)
                .layer(DefaultBodyLimit::max(max_handoff))
                .layer(body(Endpoint::Handoff)),
        )
        .route("/healthz", get(pages::healthz))
        .route("/readyz", get(pages::readyz))
        .route("/metrics", get(pages::metrics))
        .route("/status", get(pages::status_html))
        .route("/status.json", get(pages::status_json))
        .layer(axum::middleware::map_response(server::security_headers))
        .with_state(state)
}

/// Runs the server on `listener` ([`server::serve`]) until `shutdown`
/// resolves, then stops taking requests, drains the queue (at most `drain`
/// long) and returns.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    worker: WorkerHandle,
    shutdown: impl Future<Output = ()> + Send + 'static,
    drain: Duration,
) -> std::io::Result<()> {
    let worker = tokio::spawn(worker.run());
    let header_timeout = state.config.header_timeout;
    let app = router(state);
    server::serve(listener, app, header_timeout, shutdown).await?;
    // The router (and with it every queue sender) is gone: the worker
    // finishes what was queued and stops.
    if tokio::time::timeout(drain, worker).await.is_err() {
        tracing::warn!(
            "the queue did not drain in {drain:?}; what is left stays in the inbox for the next start"
        );
    }
    Ok(())
}

/// Resolves on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let term = async {
        match signal(SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    tracing::info!("shutting down: draining the queue");
}
