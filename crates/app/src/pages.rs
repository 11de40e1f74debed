//! The read-only endpoints: liveness, readiness, metrics and the status
//! page.
//!
//! - `GET /healthz`: 200 while the process serves requests.
//! - `GET /readyz`: 200 only when the configuration is loaded, the App key
//!   file is still readable by its owner alone, and the database takes a
//!   write; otherwise 503 naming what failed (no secret, no path content).
//! - `GET /metrics`: Prometheus text ([`crate::telemetry`]).
//! - `GET /status`, `GET /status.json`: the status page and its data
//!   ([`crate::status`]), built from the publisher's history reader over
//!   the configured local `benchmark-history` repository and the facts the
//!   webhooks recorded. Built on a blocking thread: it runs `git`.

use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use rusqlite::params;

use crate::AppState;
use crate::status::{self, IssueDecision, StatusInputs, WorkflowRunFact};

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

fn facts(app: &AppState) -> Result<(Vec<IssueDecision>, Vec<WorkflowRunFact>), String> {
    app.store
        .read(|c| {
            let mut s = c.prepare(
                "SELECT repository, issue, action, label, actor, actor_is_app, at, title, drift_key
                 FROM issue_events ORDER BY seq DESC LIMIT ?1",
            )?;
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
                        drift_key: r.get(8)?,
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
        .map_err(|e| e.to_string())
}

fn build_status(app: &AppState) -> Result<status::Status, String> {
    let (decisions, runs) = facts(app)?;
    let history = match &app.config.history {
        Some(path) if path.join("HEAD").exists() || path.join(".git").exists() => Some(
            benchops_publish::history::LocalHistory::open_or_init(path)
                .map_err(|e| format!("history {}: {e}", path.display()))?,
        ),
        Some(path) => {
            return Err(format!(
                "history {} is not a git repository",
                path.display()
            ));
        }
        None => None,
    };
    let inputs = StatusInputs {
        history: history.as_ref(),
        manifest: None,
        decisions: &decisions,
        workflow_runs: &runs,
        now: jiff::Timestamp::now(),
        recent_records: 20,
        trend_points: 30,
    };
    status::collect(&inputs).map_err(|e| e.to_string())
}

async fn status_of(app: Arc<AppState>) -> Result<status::Status, Response> {
    match tokio::task::spawn_blocking(move || build_status(&app)).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "status page");
            Err((
                StatusCode::INTERNAL_SERVER_ERROR,
                "status unavailable: see the server log\n",
            )
                .into_response())
        }
        Err(_) => Err((StatusCode::INTERNAL_SERVER_ERROR, "status unavailable\n").into_response()),
    }
}

/// `GET /status`.
pub async fn status_html(State(app): State<Arc<AppState>>) -> Response {
    match status_of(app).await {
        Ok(s) => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (
                    header::CONTENT_SECURITY_POLICY,
                    "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
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
        Ok(s) => axum::Json(s).into_response(),
        Err(r) => r,
    }
}
