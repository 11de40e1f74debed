//! The HTTP/1.1 server around the router, and what bounds a peer's cost.
//!
//! - **Connections** ([`serve`]): hyper's HTTP/1.1 connection with a timer,
//!   so that `header_timeout` holds: a connection must send a request's
//!   headers within it, from its start or from the end of the previous
//!   answer. A connection that is idle (kept alive with no request) or that
//!   sends half its headers is closed after it.
//! - **Bodies** ([`read_body`], in front of every endpoint that reads a
//!   body): a `Content-Length` above the endpoint's limit is 413 at once,
//!   from the header, without reading; otherwise the body's bytes (its
//!   `Content-Length`, or the endpoint's limit without one) are reserved in
//!   the [`BodyBudget`] before a byte is read, and a request that does not
//!   fit is 503 with `Retry-After`, unread. The body must then arrive
//!   within `body_timeout` (408) and within the limit (413, for a body
//!   without `Content-Length`). The reservation is held until the handler
//!   answers, so at most `max_buffered_body_bytes` of bodies are in memory
//!   however many connections are open. Each of these answers closes the
//!   connection (`Connection: close`), since the body was not read.
//! - **Refusals that ask to be slow** ([`SlowRefusal`]): an answer that
//!   carries one is held back that long after its body's reservation is
//!   given back, so a peer that waits for its answers (a scripted flood of
//!   wrong signatures does) sends one request a connection per delay, and
//!   holds no budget meanwhile. It costs a timer, not a thread.
//! - **Headers** ([`security_headers`]): every answer carries
//!   `X-Content-Type-Options: nosniff`.
//!
//! Each refusal is counted in the endpoint's metric (`too-large`, `busy`,
//! `body-timeout`, `bad-body`) and logged at most
//! [`crate::REFUSALS_LOGGED_PER_SECOND`] lines a second.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::AppState;

/// The request body bytes held at once, over every request.
#[derive(Debug)]
pub struct BodyBudget {
    bytes: Arc<Semaphore>,
    total: usize,
}

/// Bytes of the budget, held until dropped.
#[derive(Debug)]
pub struct Reservation {
    _permit: OwnedSemaphorePermit,
}

impl BodyBudget {
    /// A budget of `total` bytes (at most [`crate::config::MAX_BUFFERED_BODY_BYTES`]).
    pub fn new(total: usize) -> BodyBudget {
        BodyBudget {
            bytes: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    /// Reserves `n` bytes now, or `None` when they are not free.
    pub fn try_reserve(&self, n: usize) -> Option<Reservation> {
        let n = u32::try_from(n).ok()?;
        self.bytes
            .clone()
            .try_acquire_many_owned(n)
            .ok()
            .map(|p| Reservation { _permit: p })
    }

    /// The bytes reserved now.
    pub fn reserved(&self) -> usize {
        self.total - self.bytes.available_permits()
    }
}

/// The endpoint a body is read for: its limit and how its refusals are
/// counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /webhook`.
    Webhook,
    /// `POST /token`.
    Token,
    /// `POST /token/revoke`.
    Revoke,
    /// `POST /handoff`.
    Handoff,
}

impl Endpoint {
    fn limit(self, app: &AppState) -> usize {
        match self {
            Endpoint::Webhook => app.config.max_body_bytes,
            Endpoint::Token | Endpoint::Revoke => crate::token::MAX_TOKEN_REQUEST_BYTES,
            Endpoint::Handoff => app
                .config
                .handoff
                .as_ref()
                .map_or(crate::config::DEFAULT_HANDOFF_BODY_BYTES, |h| {
                    h.max_body_bytes
                }),
        }
    }

    fn path(self) -> &'static str {
        match self {
            Endpoint::Webhook => "/webhook",
            Endpoint::Token => "/token",
            Endpoint::Revoke => "/token/revoke",
            Endpoint::Handoff => "/handoff",
        }
    }

    fn count(self, app: &AppState, code: &'static str) {
        match self {
            Endpoint::Webhook => app.metrics.delivery("-", webhook_outcome(code)),
            Endpoint::Token => app.metrics.token("exchange", code),
            Endpoint::Revoke => app.metrics.token("revoke", code),
            Endpoint::Handoff => app.metrics.handoff(code),
        }
    }
}

/// The webhook metric's outcome for a body refusal.
fn webhook_outcome(code: &str) -> &'static str {
    match code {
        "too-large" => "too_large",
        "busy" => "busy",
        "body-timeout" => "timeout",
        _ => "bad_request",
    }
}

/// A body refused before its handler ran: `{"reason", "detail"}`, and the
/// connection closed.
fn refuse(
    app: &AppState,
    endpoint: Endpoint,
    status: StatusCode,
    code: &'static str,
    detail: String,
    retry_after: Option<Duration>,
) -> Response {
    endpoint.count(app, code);
    if let Some(held_back) = app.unproven_log.admit() {
        tracing::warn!(
            endpoint = endpoint.path(),
            reason = code,
            held_back,
            "request body refused"
        );
    }
    let mut r = (
        status,
        axum::Json(serde_json::json!({ "reason": code, "detail": detail })),
    )
        .into_response();
    let h = r.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("close"));
    if let Some(wait) = retry_after {
        if let Ok(v) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
            h.insert(header::RETRY_AFTER, v);
        }
    }
    r
}

/// Marks an answer to be held back this long before it is sent, once the
/// request's body is released (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlowRefusal(pub Duration);

/// The middleware that reads a request's body within its limit, the
/// budget and the body timeout, then hands the request on with the whole
/// body.
pub async fn read_body(
    State((app, endpoint)): State<(Arc<AppState>, Endpoint)>,
    req: Request,
    next: Next,
) -> Response {
    let limit = endpoint.limit(&app);
    let (parts, body) = req.into_parts();
    let declared = match parts.headers.get(header::CONTENT_LENGTH) {
        None => None,
        Some(v) => match v.to_str().ok().and_then(|t| t.trim().parse::<u64>().ok()) {
            Some(n) => Some(n),
            None => {
                return refuse(
                    &app,
                    endpoint,
                    StatusCode::BAD_REQUEST,
                    "bad-body",
                    "Content-Length is not a number".into(),
                    None,
                );
            }
        },
    };
    if let Some(n) = declared.filter(|&n| n > limit as u64) {
        return refuse(
            &app,
            endpoint,
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            format!("the body ({n} bytes) is larger than the {limit} bytes this server takes"),
            None,
        );
    }
    // `declared` is at most `limit` here.
    let want = declared.map_or(limit, |n| n as usize);
    let Some(reservation) = app.bodies.try_reserve(want) else {
        return refuse(
            &app,
            endpoint,
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "too many request bodies are being received: retry later".into(),
            Some(app.config.body_timeout),
        );
    };
    app.metrics.set_buffered_body_bytes(app.bodies.reserved());
    let read = tokio::time::timeout(app.config.body_timeout, Limited::new(body, limit).collect());
    let bytes = match read.await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
            drop(reservation);
            app.metrics.set_buffered_body_bytes(app.bodies.reserved());
            return refuse(
                &app,
                endpoint,
                StatusCode::PAYLOAD_TOO_LARGE,
                "too-large",
                format!("the body is larger than the {limit} bytes this server takes"),
                None,
            );
        }
        Ok(Err(_)) => {
            drop(reservation);
            app.metrics.set_buffered_body_bytes(app.bodies.reserved());
            return refuse(
                &app,
                endpoint,
                StatusCode::BAD_REQUEST,
                "bad-body",
                "the body could not be read".into(),
                None,
            );
        }
        Err(_) => {
            drop(reservation);
            app.metrics.set_buffered_body_bytes(app.bodies.reserved());
            return refuse(
                &app,
                endpoint,
                StatusCode::REQUEST_TIMEOUT,
                "body-timeout",
                format!(
                    "the body did not arrive within {} s",
                    app.config.body_timeout.as_secs()
                ),
                None,
            );
        }
    };
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    drop(reservation);
    app.metrics.set_buffered_body_bytes(app.bodies.reserved());
    if let Some(SlowRefusal(delay)) = response.extensions().get::<SlowRefusal>().copied() {
        tokio::time::sleep(delay).await;
    }
    response
}

/// Adds `X-Content-Type-Options: nosniff` to an answer.
pub async fn security_headers(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Serves `app` on `listener`, one HTTP/1.1 connection per task, until
/// `shutdown` resolves; then stops accepting, lets each connection finish
/// the request it is in, and returns once every connection is closed.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Each connection holds a receiver of `stop` (dropped when it ends);
    // `stop.closed()` then waits for the last one.
    let (stop, stopping) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(x) => x,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // Out of file descriptors, say: wait rather than spin.
                    tracing::error!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let mut stopping = stopping.clone();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .keep_alive(true);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                // `stop` changes once, to true.
                _ = stopping.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(stopping);
        });
    }
    drop(listener);
    let _ = stop.send(true);
    drop(stopping);
    stop.closed().await;
    Ok(())
}

/// Errors of one connection, not of the listener.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_gives_back_what_is_dropped_and_refuses_what_does_not_fit() {
        let b = BodyBudget::new(100);
        let a = b.try_reserve(60).expect("fits");
        assert!(b.try_reserve(41).is_none());
        let c = b.try_reserve(40).expect("fits");
        assert_eq!(b.reserved(), 100);
        drop(a);
        assert_eq!(b.reserved(), 40);
        assert!(b.try_reserve(60).is_some());
        drop(c);
        assert!(b.try_reserve(usize::MAX).is_none());
    }
}
