//! The read-only endpoints: liveness, readiness, metrics and the status
//! page.
//!
//! - `GET /healthz`: 200 while the process serves requests.
//! - `GET /readyz`: 200 only when the configuration is loaded, the App key
//!   file is still readable by its owner alone (by anyone in a local
//!   trial), and the database takes a write; otherwise 503 naming what failed (no secret, no path content).
//! - `GET /metrics`: Prometheus text ([`crate::telemetry`]).
//! - `GET /status`, `GET /status.json`: the status page and its data
//!   (the page with a `Content-Security-Policy` that loads nothing from
//!   elsewhere and lets no other page frame it; every answer of the server
//!   carries `X-Content-Type-Options: nosniff`)
//!   ([`crate::status`]), built from the publisher's history reader over
//!   the configured local `benchmark-history` repository and the facts the
//!   webhooks recorded. Built on a blocking thread: it runs `git`. The
//!   built status is cached ([`StatusCache`]): one build at a time, and a
//!   request reuses the last one while the history tip and the recorded
//!   facts are unchanged and it is under a minute old, so reloading the
//!   page cannot make the server read history again and again.

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use benchops_history::{HistoryError, LocalHistory};
use rusqlite::params;

use crate::AppState;
use crate::status::{self, IssueDecision, StatusError, StatusInputs, WorkflowRunFact};
use crate::store::StoreError;

/// `GET /healthz`.
pub async fn healthz() -> &'static str {
    "ok\n"
}

/// `GET /readyz`.
pub async fn readyz(State(app): State<Arc<AppState>>) -> Response {
    let mut failed = Vec::new();
    match std::fs::metadata(&app.config.private_key_file) {
        Ok(m) if m.permissions().mode() & 0o077 == 0 => {
            if std::fs::File::open(&app.config.private_key_file).is_err() {
                failed.push("app key not readable");
            }
        }
        Ok(_) if app.config.local_trial => {}
        Ok(_) => failed.push("app key readable by others"),
        Err(_) => failed.push("app key missing"),
    }
    if app
        .store
        .probe(&jiff::Timestamp::now().to_string())
        .is_err()
    {
        failed.push("database not writable");
    }
    if failed.is_empty() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        tracing::warn!(failed = ?failed, "not ready");
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {}\n", failed.join("; ")),
        )
            .into_response()
    }
}

/// `GET /metrics`.
pub async fn metrics(State(app): State<Arc<AppState>>) -> Response {
    app.metrics
        .set_queue_depth(app.queue.max_capacity() - app.queue.capacity());
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.metrics.encode(),
    )
        .into_response()
}

/// How many recorded issue decisions and workflow runs the page reads.
const FACTS: usize = 200;

/// Why the status could not be built: logged, and the page answers 500
/// without saying more.
#[derive(Debug, thiserror::Error)]
enum PageError {
    /// The recorded facts could not be read.
    #[error(transparent)]
    Facts(StoreError),
    /// What the cache key needs from the database could not be read.
    #[error(transparent)]
    Key(StoreError),
    /// The configured history is not a git repository.
    #[error("history {} is not a git repository", .0.display())]
    NotARepository(PathBuf),
    /// The history repository could not be opened.
    #[error("history {}: {source}", path.display())]
    History {
        /// The configured repository.
        path: PathBuf,
        /// Why.
        #[source]
        source: HistoryError,
    },
    /// The history's tip could not be read.
    #[error("history tip: {0}")]
    Tip(#[source] HistoryError),
    /// The status could not be collected from the history and the facts.
    #[error(transparent)]
    Collect(#[from] StatusError),
    /// The blocking task that builds it panicked or was cancelled.
    #[error("the status task failed")]
    Task(#[source] tokio::task::JoinError),
}

fn facts(app: &AppState) -> Result<(Vec<IssueDecision>, Vec<WorkflowRunFact>), PageError> {
    app.store
        .read(|c| {
            let mut s = c.prepare(
                "SELECT repository, issue, action, label, actor, actor_is_app, at, title, drift_key,
                        author
                 FROM issue_events ORDER BY seq DESC LIMIT ?1",
            )?;
            // A marker counts only in an issue this App's bot opened (when
            // its login is known yet; intake kept markers of bots only).
            let bot = app.bot_login.get().cloned();
            let decisions = s
                .query_map(params![FACTS as i64], |r| {
                    Ok(IssueDecision {
                        repository: r.get(0)?,
                        issue: r.get::<_, i64>(1)? as u64,
                        action: r.get(2)?,
                        label: r.get(3)?,
                        actor: r.get(4)?,
                        actor_is_app: r.get(5)?,
                        at: r.get(6)?,
                        title: r.get(7)?,
                        drift_key: r.get::<_, Option<String>>(8)?.filter(|_| {
                            let author: Option<String> = r.get(9).ok().flatten();
                            bot.is_none() || author == bot
                        }),
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            let mut s = c.prepare(
                "SELECT repository, workflow_path, run_id, run_attempt, event, conclusion, at
                 FROM workflow_runs ORDER BY at DESC LIMIT ?1",
            )?;
            let runs = s
                .query_map(params![FACTS as i64], |r| {
                    Ok(WorkflowRunFact {
                        repository: r.get(0)?,
                        workflow_path: r.get(1)?,
                        run_id: r.get::<_, i64>(2)? as u64,
                        run_attempt: r.get::<_, i64>(3)? as u64,
                        event: r.get(4)?,
                        conclusion: r.get(5)?,
                        at: r.get(6)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok((decisions, runs))
        })
        .map_err(PageError::Facts)
}

/// How long a built status is reused while nothing it depends on changed
/// (the ages it shows are at most this stale).
pub const STATUS_MAX_AGE: Duration = Duration::from_secs(60);

/// What a built status depends on: the history tip and the facts recorded.
type StatusKey = (Option<String>, i64, i64, String);

/// The last built status, behind a lock that also makes builds one at a
/// time.
#[derive(Debug, Default)]
pub struct StatusCache {
    last: tokio::sync::Mutex<Option<(StatusKey, Instant, Arc<status::Status>)>>,
}

fn open_history(app: &AppState) -> Result<Option<LocalHistory>, PageError> {
    match &app.config.history {
        Some(path) if path.join("HEAD").exists() || path.join(".git").exists() => {
            LocalHistory::open(path)
                .map(Some)
                .map_err(|source| PageError::History {
                    path: path.clone(),
                    source,
                })
        }
        Some(path) => Err(PageError::NotARepository(path.clone())),
        None => Ok(None),
    }
}

fn status_key(app: &AppState) -> Result<StatusKey, PageError> {
    let tip = match open_history(app)? {
        Some(h) => h.tip().map_err(PageError::Tip)?,
        None => None,
    };
    let (events, runs, last_run) = app
        .store
        .read(|c| {
            c.query_row(
                "SELECT (SELECT ifnull(max(seq), 0) FROM issue_events),
                        (SELECT count(*) FROM workflow_runs),
                        (SELECT ifnull(max(at), '') FROM workflow_runs)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
        })
        .map_err(PageError::Key)?;
    Ok((tip, events, runs, last_run))
}

fn build_status(app: &AppState) -> Result<status::Status, PageError> {
    let (decisions, runs) = facts(app)?;
    let history = open_history(app)?;
    let inputs = StatusInputs {
        history: history.as_ref(),
        manifest: None,
        decisions: &decisions,
        workflow_runs: &runs,
        now: jiff::Timestamp::now(),
        recent_records: 20,
        trend_points: 30,
    };
    Ok(status::collect(&inputs)?)
}

async fn status_of(app: Arc<AppState>) -> Result<Arc<status::Status>, Response> {
    let mut last = app.status_cache.last.lock().await;
    let a = app.clone();
    let key = match tokio::task::spawn_blocking(move || status_key(&a)).await {
        Ok(Ok(k)) => k,
        Ok(Err(e)) => return Err(unavailable(&e)),
        Err(e) => return Err(unavailable(&PageError::Task(e))),
    };
    if let Some((k, at, s)) = last.as_ref()
        && *k == key
        && at.elapsed() < STATUS_MAX_AGE
    {
        return Ok(s.clone());
    }
    let a = app.clone();
    match tokio::task::spawn_blocking(move || build_status(&a)).await {
        Ok(Ok(s)) => {
            let s = Arc::new(s);
            *last = Some((key, Instant::now(), s.clone()));
            Ok(s)
        }
        Ok(Err(e)) => Err(unavailable(&e)),
        Err(e) => Err(unavailable(&PageError::Task(e))),
    }
}

fn unavailable(e: &PageError) -> Response {
    tracing::error!(error = %e, "status page");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        "status unavailable: see the server log\n",
    )
        .into_response()
}

/// `GET /status`.
pub async fn status_html(State(app): State<Arc<AppState>>) -> Response {
    match status_of(app).await {
        Ok(s) => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (
                    header::CONTENT_SECURITY_POLICY,
                    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'",
                ),
            ],
            status::render_html(&s),
        )
            .into_response(),
        Err(r) => r,
    }
}

/// `GET /status.json`.
pub async fn status_json(State(app): State<Arc<AppState>>) -> Response {
    match status_of(app).await {
        Ok(s) => axum::Json(&*s).into_response(),
        Err(r) => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_status_failure_is_logged_and_never_shown() {
        let e = PageError::NotARepository("/srv/history".into());
        assert_eq!(
            e.to_string(),
            "history /srv/history is not a git repository"
        );
        let r = unavailable(&e);
        assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(r.into_body(), 1024)
            .await
            .expect("body");
        assert_eq!(&body[..], b"status unavailable: see the server log\n");
    }
}
