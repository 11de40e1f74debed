//! The front layer: one hyper HTTP/1 connection per client, and in front
//! of the axum router, per request: the fault plan, authentication,
//! the primary rate limit, the common response headers and the request
//! log.

use std::fmt;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tower::ServiceExt as _;

use super::auth::verify_app_jwt;
use super::faults::{self, Fault};
use super::handlers::apps::bucket_key;
use super::handlers::{ApiError, Caller, Ctx, Sh, decode_component, router};
use super::routes::{self, Operation};
use super::state::{AuthKind, LoggedRequest};

const DOCS_ROOT: &str = "https://docs.github.com/rest";

/// Accepts connections until the task is aborted; aborting it drops the
/// connection tasks too.
pub(crate) async fn serve(listener: TcpListener, sh: Sh) {
    let app = router(sh.clone());
    let mut conns = JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let sh = sh.clone();
        let app = app.clone();
        conns.spawn(async move {
            let svc = service_fn(move |req| front(sh.clone(), app.clone(), req));
            // A dropped connection ends here with an error; nothing to do.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
        while conns.try_join_next().is_some() {}
    }
}

/// Returned by the service to make hyper close the connection without a
/// response (the `DropConnection` fault).
#[derive(Debug)]
pub(crate) struct Dropped;

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("connection dropped by the fault plan")
    }
}

impl std::error::Error for Dropped {}

/// The outcome of reading the `Authorization` header.
enum Auth {
    Missing,
    Ok(Caller, AuthKind),
    Rejected { message: String, reason: String },
}

fn authenticate(sh: &Sh, header_value: Option<&str>) -> (Option<String>, Auth) {
    let Some(value) = header_value else {
        return (None, Auth::Missing);
    };
    let (scheme, credential) = value.trim().split_once(' ').unwrap_or(("", value));
    let credential = credential.trim();
    let scheme_name = Some(scheme.to_owned());
    let bad = |message: &str, reason: &str| Auth::Rejected {
        message: message.to_owned(),
        reason: reason.to_owned(),
    };
    if !scheme.eq_ignore_ascii_case("bearer") && !scheme.eq_ignore_ascii_case("token") {
        return (scheme_name, bad("Bad credentials", "unknown scheme"));
    }
    let st = sh.lock();
    let now = st.now();
    if credential.starts_with("ghs_") {
        let outcome = match st.token_by_value(credential) {
            None => bad("Bad credentials", "unknown token"),
            Some(t) if t.revoked => bad("Bad credentials", "revoked token"),
            Some(t) if t.expires_at <= now => bad("Bad credentials", "expired token"),
            Some(t) => Auth::Ok(
                Caller::Installation { token_id: t.id },
                AuthKind::InstallationToken {
                    token_id: t.id,
                    installation_id: t.installation_id,
                },
            ),
        };
        return (scheme_name, outcome);
    }
    if credential.matches('.').count() == 2 {
        let outcome = match verify_app_jwt(&sh.public_key, credential, now, st.app.id) {
            Ok(()) => Auth::Ok(Caller::App, AuthKind::AppJwt),
            Err(e) => bad(e.message(), &format!("app JWT: {e:?}")),
        };
        return (scheme_name, outcome);
    }
    (scheme_name, bad("Bad credentials", "unknown credential"))
}

fn request_id(port: u16, seq: u64) -> String {
    format!(
        "{port:04X}:{:04X}:{seq:07X}:{:07X}:{:08X}",
        seq & 0xFFFF,
        seq.wrapping_mul(7919) & 0xFFF_FFFF,
        seq.wrapping_mul(2_654_435_761) & 0xFFFF_FFFF
    )
}

fn fault_response(fault: &Fault, request_id: &str, docs: &'static str) -> Response<Body> {
    match fault {
        Fault::SecondaryRateLimit {
            status,
            retry_after,
        } => {
            let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::FORBIDDEN);
            let mut e = ApiError::new(
                status,
                format!(
                    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID {request_id}."
                ),
                "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
            );
            e.headers.push(("retry-after", retry_after.to_string()));
            e.into_response()
        }
        Fault::Status(code) => {
            let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let message = match status.as_u16() {
                502 => "Server Error",
                503 => "Service Unavailable",
                504 => {
                    "We couldn't respond to your request in time. Sorry about that. Please try resubmitting your request and contact us if the problem persists."
                }
                _ => status.canonical_reason().unwrap_or("Server Error"),
            };
            ApiError::new(status, message, docs).into_response()
        }
        _ => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "Server Error", docs).into_response(),
    }
}

/// `(owner, repo, full ref)` of a `PATCH .../git/refs/{ref}` path.
fn ref_of_path(path: &str) -> Option<(String, String, String)> {
    let rest = path.strip_prefix("/repos/")?;
    let mut parts = rest.splitn(5, '/');
    let owner = decode_component(parts.next()?);
    let repo = decode_component(parts.next()?);
    if parts.next()? != "git" || parts.next()? != "refs" {
        return None;
    }
    let name = decode_component(parts.next()?);
    Some((
        owner,
        repo,
        format!("refs/{}", name.trim_start_matches("refs/")),
    ))
}

fn body_for_log(bytes: &[u8]) -> Option<Value> {
    if bytes.is_empty() {
        return None;
    }
    Some(
        serde_json::from_slice(bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned())),
    )
}

async fn front(sh: Sh, app: Router, req: Request<Incoming>) -> Result<Response<Body>, Dropped> {
    let (mut parts, body) = req.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let method = parts.method.as_str().to_owned();
    let path = parts.uri.path().to_owned();
    let op: Option<&'static Operation> = routes::match_route(&method, &path);
    let docs = op.map_or(DOCS_ROOT, |o| o.docs);
    let auth_header = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);

    let (seq, decision) = {
        let mut st = sh.lock();
        st.seq += 1;
        let seq = st.seq;
        let d = faults::decide(&mut st.faults, &method, &path, op.map(|o| o.id));
        (seq, d)
    };
    let port = sh
        .api
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let rid = request_id(port, seq);
    if !decision.latency.is_zero() {
        tokio::time::sleep(decision.latency).await;
    }

    let (auth_scheme, auth) = authenticate(&sh, auth_header.as_deref());
    let mut entry = LoggedRequest {
        seq,
        request_id: rid.clone(),
        method: method.clone(),
        path: path.clone(),
        query: parts.uri.query().map(str::to_owned),
        route: op.map(|o| o.template),
        operation: op.map(|o| o.id),
        auth_scheme,
        auth: match &auth {
            Auth::Missing => AuthKind::None,
            Auth::Ok(_, kind) => kind.clone(),
            Auth::Rejected { reason, .. } => AuthKind::Rejected {
                reason: reason.clone(),
            },
        },
        status: None,
        body: body_for_log(&bytes),
        faults: decision.fired.clone(),
    };

    if decision.terminal == Some(Fault::DropConnection) {
        sh.lock().log.push(entry);
        return Err(Dropped);
    }

    let caller = match &auth {
        Auth::Ok(c, _) => Some(*c),
        _ => None,
    };
    let mut resp = if let Some(fault) = &decision.terminal {
        fault_response(fault, &rid, docs)
    } else {
        match auth {
            Auth::Missing => {
                ApiError::new(StatusCode::UNAUTHORIZED, "Requires authentication", docs)
                    .into_response()
            }
            Auth::Rejected { message, .. } => {
                ApiError::new(StatusCode::UNAUTHORIZED, message, docs).into_response()
            }
            Auth::Ok(caller, _) => {
                let exhausted = {
                    let mut st = sh.lock();
                    let (key, limit) = bucket_key(&st, Some(caller));
                    let counted = op.is_some_and(|o| o.id != "rate-limit/get");
                    let b = st.bucket(&key, limit);
                    // `/rate_limit` is neither counted nor refused.
                    if counted && b.used >= b.limit {
                        Some(key)
                    } else {
                        if counted {
                            b.used += 1;
                        }
                        None
                    }
                };
                if let Some(key) = exhausted {
                    let who = key.replace("installation:", "installation ID ");
                    ApiError::new(
                        StatusCode::FORBIDDEN,
                        format!("API rate limit exceeded for {who}."),
                        "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
                    )
                    .into_response()
                } else {
                    if decision.ref_move && op.is_some_and(|o| o.id == "git/update-ref") {
                        if let Some((owner, repo, name)) = ref_of_path(&path) {
                            let mut st = sh.lock();
                            let now = st.now();
                            let moved = st.repo_mut(&owner, &repo).and_then(|r| {
                                r.advance_ref(
                                    &name,
                                    now,
                                    "concurrent update (simulator fault plan)\n",
                                )
                            });
                            if let Some(sha) = moved {
                                entry.faults.push(format!("moved {name} to {sha}"));
                            }
                        }
                    }
                    parts.extensions.insert(Ctx { caller, docs });
                    let req = Request::from_parts(parts, Body::from(bytes));
                    match app.oneshot(req).await {
                        Ok(r) => r,
                        Err(never) => match never {},
                    }
                }
            }
        }
    };

    {
        let mut st = sh.lock();
        // A ref this request moved restarts its pull requests' delay now.
        #[cfg(feature = "platform")]
        st.sync_pulls();
        let (key, limit) = bucket_key(&st, caller);
        let b = st.bucket(&key, limit).clone();
        let h = resp.headers_mut();
        let mut put = |name: &'static str, value: String| {
            if let Ok(v) = HeaderValue::from_str(&value) {
                h.insert(name, v);
            }
        };
        put("x-ratelimit-limit", b.limit.to_string());
        put(
            "x-ratelimit-remaining",
            b.limit.saturating_sub(b.used).to_string(),
        );
        put("x-ratelimit-reset", b.reset.to_string());
        put("x-ratelimit-used", b.used.to_string());
        put("x-ratelimit-resource", "core".to_owned());
        put("x-github-request-id", rid);
        put("x-github-api-version-selected", "2022-11-28".to_owned());
        put("x-github-media-type", "github.v3; format=json".to_owned());
        entry.status = Some(resp.status().as_u16());
        st.log.push(entry);
    }
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_paths_parse() {
        assert_eq!(
            ref_of_path("/repos/o/r/git/refs/heads/benchmark-history"),
            Some((
                "o".into(),
                "r".into(),
                "refs/heads/benchmark-history".into()
            ))
        );
        assert_eq!(
            ref_of_path("/repos/o/r/git/refs/heads%2Fx"),
            Some(("o".into(), "r".into(), "refs/heads/x".into()))
        );
        assert_eq!(ref_of_path("/repos/o/r/issues/1"), None);
    }
}
