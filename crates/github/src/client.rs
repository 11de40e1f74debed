//! The client: configuration, authentication (with reading the App key and
//! signing its JWT), the request loop (pacing, retries, metrics, error
//! mapping) and pagination.
//!
//! Requests go through octocrab's raw interface (`Octocrab::execute`) with
//! this crate's own serde types, so every request and response shape is
//! explicit. octocrab is built without its retry layer (which would retry
//! POSTs and hide waits) and without redirects. Every request carries
//! `Accept: application/vnd.github+json`, `X-GitHub-Api-Version:
//! 2022-11-28` and, when the client holds a credential,
//! `Authorization: Bearer …` (an installation token or a freshly signed App
//! JWT). The header value is marked sensitive.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use benchops::stats::SplitMix64;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::auth::{AppId, AppKey, Phase};
use crate::error::{ApiErrorDetail, GitHubError};
use crate::metrics::{Metrics, Recorder, Wait};
use crate::pacing::{Pacer, PacingLimits};
use crate::retry::{Failure, Idempotency, RetryDecision, RetryPolicy, decide};
use crate::time::{Clock, Sleeper, SystemClock, TokioSleeper, unix_secs};
use crate::token::Token;

/// GitHub's public API, used when neither an explicit URL nor
/// `GITHUB_API_URL` is given.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// The REST API version every request asks for.
pub const API_VERSION: &str = "2022-11-28";
/// The media type every request accepts.
pub const MEDIA_TYPE: &str = "application/vnd.github+json";
/// Pagination stops with an error after this many pages.
pub const MAX_PAGES: usize = 1000;

/// `GITHUB_API_URL` if set and not blank (GitHub Actions sets it, also on
/// GitHub Enterprise Server), else [`DEFAULT_API_URL`].
pub fn api_url_from_env() -> String {
    std::env::var("GITHUB_API_URL")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_API_URL.to_owned())
}

/// Configures a [`GitHubClient`].
#[derive(Debug)]
pub struct GitHubClientBuilder {
    base_url: Option<String>,
    clock: Option<Arc<dyn Clock>>,
    sleeper: Option<Arc<dyn Sleeper>>,
    retry: RetryPolicy,
    pacing: PacingLimits,
    jitter_seed: Option<u64>,
    timeout: Duration,
}

impl GitHubClientBuilder {
    /// The API base URL (`https://api.github.com`, a GHES
    /// `https://host/api/v3`, a test server). Defaults to
    /// [`api_url_from_env`].
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// The clock for JWT claims, rate-limit resets and pacing windows.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The sleeper for retry backoff and pacing.
    pub fn sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = Some(sleeper);
        self
    }

    /// The retry policy (default: [`RetryPolicy::default`]).
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The pacing limits for content-creating requests (default: 80 per
    /// minute, 500 per hour).
    pub fn pacing_limits(mut self, limits: PacingLimits) -> Self {
        self.pacing = limits;
        self
    }

    /// Seeds the jitter draws (default: from the wall clock).
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.jitter_seed = Some(seed);
        self
    }

    /// Connect, read and write timeout of each request (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Builds an unauthenticated client; see [`GitHubClient::with_token`],
    /// [`GitHubClient::with_installation_token`] and [`GitHubClient::app`].
    ///
    /// Call it inside a Tokio runtime: octocrab starts its connection
    /// worker on it.
    pub fn build(self) -> Result<GitHubClient, GitHubError> {
        let base_url = self.base_url.unwrap_or_else(api_url_from_env);
        let base_url = base_url.trim_end_matches('/').to_owned();
        let config = |reason: String| GitHubError::Config { reason };
        let base: http::Uri = base_url
            .parse()
            .map_err(|e| config(format!("the API URL {base_url:?} is not a URI: {e}")))?;
        match (base.scheme_str(), base.authority()) {
            (Some("http" | "https"), Some(_)) => {}
            _ => {
                return Err(config(format!(
                    "the API URL {base_url:?} must be an absolute http(s) URL"
                )));
            }
        }
        if base.query().is_some() {
            return Err(config(format!(
                "the API URL {base_url:?} must not have a query"
            )));
        }
        let octocrab = octocrab::Octocrab::builder()
            .base_uri(base.clone())
            .map_err(|e| config(format!("octocrab rejected the API URL: {e}")))?
            .set_connect_timeout(Some(self.timeout))
            .set_read_timeout(Some(self.timeout))
            .set_write_timeout(Some(self.timeout))
            .build()
            .map_err(|e| config(format!("octocrab could not be built: {e}")))?;
        let clock = self.clock.unwrap_or_else(|| Arc::new(SystemClock::new()));
        let sleeper = self.sleeper.unwrap_or_else(|| Arc::new(TokioSleeper));
        let seed = self.jitter_seed.unwrap_or_else(|| {
            let now = clock
                .now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default();
            u64::try_from(now.as_nanos() & u128::from(u64::MAX)).unwrap_or_default()
        });
        Ok(GitHubClient {
            shared: Arc::new(Shared {
                octocrab,
                base,
                base_url,
                pacer: Pacer::new(self.pacing, clock.clone(), sleeper.clone()),
                clock,
                sleeper,
                retry: self.retry,
                metrics: Recorder::default(),
                rng: Mutex::new(SplitMix64::new(seed)),
            }),
            auth: Auth::None,
        })
    }
}

struct Shared {
    octocrab: octocrab::Octocrab,
    base: http::Uri,
    base_url: String,
    clock: Arc<dyn Clock>,
    sleeper: Arc<dyn Sleeper>,
    retry: RetryPolicy,
    pacer: Pacer,
    metrics: Recorder,
    rng: Mutex<SplitMix64>,
}

// The App key's entry points that report a `GitHubError`; the key itself
// is plain data in `auth`, which depends on nothing else in this crate.
impl AppKey {
    /// Reads the App's private key, PEM (PKCS#1 as GitHub hands it out,
    /// or PKCS#8).
    pub fn from_pem(app_id: AppId, pem: &[u8]) -> Result<Self, GitHubError> {
        AppKey::parse_rsa_pem(app_id, pem).map_err(|source| GitHubError::InvalidKey { source })
    }

    /// Signs an App JWT valid at `now`.
    pub fn jwt(&self, now: SystemTime) -> Result<Token, GitHubError> {
        self.sign(now)
            .map(Token::new)
            .map_err(|source| GitHubError::Jwt { source })
    }
}

/// The credential a client sends.
#[derive(Clone)]
enum Auth {
    None,
    Token { token: Token, phase: Option<Phase> },
    App(Arc<AppKey>),
}

/// A GitHub REST client for one credential.
///
/// Clones, and the clients made by [`with_token`](Self::with_token),
/// [`with_installation_token`](Self::with_installation_token) and
/// [`app`](Self::app), share the connection pool, the pacer and the
/// metrics recorder, so one publication sweep is paced and measured as a
/// whole.
#[derive(Clone)]
pub struct GitHubClient {
    shared: Arc<Shared>,
    auth: Auth,
}

impl fmt::Debug for GitHubClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match &self.auth {
            Auth::None => "none".to_owned(),
            Auth::Token { phase: None, .. } => "token".to_owned(),
            Auth::Token { phase: Some(p), .. } => format!("installation token ({p} phase)"),
            Auth::App(key) => format!("app {}", key.app_id()),
        };
        f.debug_struct("GitHubClient")
            .field("base_url", &self.shared.base_url)
            .field("auth", &auth)
            .finish_non_exhaustive()
    }
}

/// One kind of request: its metrics key, its name in errors, whether it
/// may be retried after a 5xx, whether it is paced, and which token phase
/// it needs (writes only).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Op {
    pub(crate) key: &'static str,
    pub(crate) what: &'static str,
    pub(crate) idempotency: Idempotency,
    pub(crate) paced: bool,
    pub(crate) needs: Option<Phase>,
}

impl Op {
    /// A read: idempotent, not paced, any phase.
    pub(crate) const fn read(key: &'static str, what: &'static str) -> Op {
        Op {
            key,
            what,
            idempotency: Idempotency::Idempotent,
            paced: false,
            needs: None,
        }
    }

    /// A repository-settings write (`administration: write`): paced, and
    /// allowed to a client of any phase (GitHub refuses it to a token
    /// without that permission, which no phase token has).
    pub(crate) const fn admin(
        key: &'static str,
        what: &'static str,
        idempotency: Idempotency,
    ) -> Op {
        Op {
            key,
            what,
            idempotency,
            paced: true,
            needs: None,
        }
    }

    /// A content-creating write needing `phase`.
    pub(crate) const fn write(
        key: &'static str,
        what: &'static str,
        idempotency: Idempotency,
        phase: Phase,
    ) -> Op {
        Op {
            key,
            what,
            idempotency,
            paced: true,
            needs: Some(phase),
        }
    }
}

/// A successful response.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
    pub(crate) request_id: Option<String>,
}

impl Reply {
    pub(crate) fn json<T: DeserializeOwned>(&self, op: &Op) -> Result<T, GitHubError> {
        serde_json::from_slice(&self.body).map_err(|source| GitHubError::Decode {
            operation: op.what,
            request_id: self.request_id.clone(),
            source,
        })
    }

    pub(crate) fn unexpected(&self, op: &Op, reason: impl Into<String>) -> GitHubError {
        GitHubError::UnexpectedResponse {
            operation: op.what,
            reason: reason.into(),
            request_id: self.request_id.clone(),
        }
    }
}

impl GitHubClient {
    /// Starts configuring a client.
    pub fn builder() -> GitHubClientBuilder {
        GitHubClientBuilder {
            base_url: None,
            clock: None,
            sleeper: None,
            retry: RetryPolicy::default(),
            pacing: PacingLimits::default(),
            jitter_seed: None,
            timeout: Duration::from_secs(30),
        }
    }

    /// The API base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.shared.base_url
    }

    /// The same client authenticated by `token`, with no phase restriction
    /// (a token from the environment, say).
    pub fn with_token(&self, token: Token) -> GitHubClient {
        GitHubClient {
            shared: self.shared.clone(),
            auth: Auth::Token { token, phase: None },
        }
    }

    /// The same client holding an installation token minted for `phase`
    /// (see [`with_installation_token`](Self::with_installation_token)).
    pub(crate) fn with_phase_token(&self, token: Token, phase: Phase) -> GitHubClient {
        GitHubClient {
            shared: self.shared.clone(),
            auth: Auth::Token {
                token,
                phase: Some(phase),
            },
        }
    }

    /// The same client authenticated as the GitHub App (see
    /// [`app`](Self::app)).
    pub(crate) fn with_app_key(&self, key: Arc<AppKey>) -> GitHubClient {
        GitHubClient {
            shared: self.shared.clone(),
            auth: Auth::App(key),
        }
    }

    /// The phase of the installation token this client holds, if any.
    pub fn phase(&self) -> Option<Phase> {
        match &self.auth {
            Auth::Token { phase, .. } => *phase,
            Auth::None | Auth::App(_) => None,
        }
    }

    /// A snapshot of the request metrics (shared with clones).
    pub fn metrics(&self) -> Metrics {
        self.shared.metrics.snapshot()
    }

    /// The request metrics so far, resetting them.
    pub fn take_metrics(&self) -> Metrics {
        self.shared.metrics.take()
    }

    pub(crate) fn clock(&self) -> &dyn Clock {
        self.shared.clock.as_ref()
    }

    pub(crate) fn check_phase(&self, op: &Op) -> Result<(), GitHubError> {
        if let (
            Some(needs),
            Auth::Token {
                phase: Some(phase), ..
            },
        ) = (op.needs, &self.auth)
        {
            if needs != *phase {
                return Err(GitHubError::PhaseForbids {
                    operation: op.what,
                    phase: *phase,
                    needs,
                });
            }
        }
        Ok(())
    }

    fn auth_header(&self, op: &Op) -> Result<Option<HeaderValue>, GitHubError> {
        let secret = match &self.auth {
            Auth::None => return Ok(None),
            Auth::Token { token, .. } => token.clone(),
            Auth::App(key) => key.jwt(self.shared.clock.now())?,
        };
        let mut value =
            HeaderValue::from_str(&format!("Bearer {}", secret.expose())).map_err(|_| {
                GitHubError::BuildRequest {
                    operation: op.what,
                    reason: "the credential is not a valid header value".to_owned(),
                }
            })?;
        value.set_sensitive(true);
        Ok(Some(value))
    }

    fn jitter_unit(&self) -> f64 {
        let mut rng = self
            .shared
            .rng
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // 53 random bits, as a float in [0, 1): exact in an f64.
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Sends one operation: paces it if it creates content, retries it as
    /// [`crate::retry`] says, records metrics, and maps a failure status to
    /// a [`GitHubError`]. `path` is a path and query under the base URL.
    pub(crate) async fn send<B: Serialize + ?Sized>(
        &self,
        op: &Op,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<Reply, GitHubError> {
        self.check_phase(op)?;
        let body =
            body.map(serde_json::to_string)
                .transpose()
                .map_err(|e| GitHubError::BuildRequest {
                    operation: op.what,
                    reason: format!("the body does not serialize: {e}"),
                })?;
        let sent = body.as_ref().map_or(0, |b| b.len() as u64);
        let shared = &self.shared;
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            if op.paced {
                let waited = shared.pacer.acquire().await;
                shared.metrics.wait(op.key, Wait::Pacing, waited);
            }
            let mut request = http::Request::builder()
                .method(method.clone())
                .uri(path)
                .header(ACCEPT, MEDIA_TYPE)
                .header("x-github-api-version", API_VERSION);
            if let Some(auth) = self.auth_header(op)? {
                request = request.header(AUTHORIZATION, auth);
            }
            if body.is_some() {
                request = request.header(CONTENT_TYPE, "application/json");
            }
            let request = request
                .body(body.clone().unwrap_or_default())
                .map_err(|e| GitHubError::BuildRequest {
                    operation: op.what,
                    reason: e.to_string(),
                })?;
            let retry = attempt > 1;
            let (failure, error) = match shared.octocrab.execute(request).await {
                Err(e) => {
                    shared.metrics.request(op.key, retry, sent, None);
                    (Failure::Transport, transport(op, e))
                }
                Ok(response) => {
                    let (parts, incoming) = response.into_parts();
                    let request_id = header_str(&parts.headers, "x-github-request-id");
                    let remaining = header_u64(&parts.headers, "x-ratelimit-remaining");
                    match incoming.collect().await {
                        Err(e) => {
                            shared.metrics.request(
                                op.key,
                                retry,
                                sent,
                                Some((0, remaining, request_id)),
                            );
                            (Failure::Transport, transport(op, e))
                        }
                        Ok(collected) => {
                            let bytes = collected.to_bytes().to_vec();
                            shared.metrics.request(
                                op.key,
                                retry,
                                sent,
                                Some((bytes.len() as u64, remaining, request_id.clone())),
                            );
                            if parts.status.is_success() {
                                return Ok(Reply {
                                    headers: parts.headers,
                                    body: bytes,
                                    request_id,
                                });
                            }
                            classify(op, parts.status, &parts.headers, &bytes, request_id)
                        }
                    }
                }
            };
            let now = unix_secs(shared.clock.now());
            match decide(
                &shared.retry,
                attempt,
                op.idempotency,
                &failure,
                now,
                self.jitter_unit(),
            ) {
                RetryDecision::GiveUp => return Err(error),
                RetryDecision::RetryAfter(wait) => {
                    shared.metrics.wait(op.key, Wait::Retry, wait);
                    shared.sleeper.sleep(wait).await;
                }
            }
        }
    }

    /// GETs `first` and every page after it (`Link: rel="next"`), and
    /// concatenates the arrays. A next link must point at the API's own
    /// scheme and host: the credential is never sent anywhere else.
    pub(crate) async fn get_all<T: DeserializeOwned>(
        &self,
        op: &Op,
        first: String,
    ) -> Result<Vec<T>, GitHubError> {
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut next = Some(first);
        while let Some(path) = next.take() {
            let reply = self.send(op, Method::GET, &path, None::<&()>).await?;
            seen.insert(path);
            let page: Vec<T> = reply.json(op)?;
            items.extend(page);
            let Some(link) = reply
                .headers
                .get_all(http::header::LINK)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .find_map(next_link)
            else {
                break;
            };
            let path = self.same_origin_path(&link).ok_or_else(|| {
                reply.unexpected(
                    op,
                    format!("the next page link {link:?} leaves the API host"),
                )
            })?;
            if seen.contains(&path) {
                return Err(reply.unexpected(op, "pagination links back to a page already read"));
            }
            if seen.len() >= MAX_PAGES {
                return Err(reply.unexpected(op, format!("more than {MAX_PAGES} pages")));
            }
            next = Some(path);
        }
        Ok(items)
    }

    /// The path and query of `link` if it is relative or on the API's own
    /// scheme and authority.
    fn same_origin_path(&self, link: &str) -> Option<String> {
        let uri: http::Uri = link.parse().ok()?;
        let pq = uri.path_and_query()?.as_str().to_owned();
        match (uri.scheme(), uri.authority()) {
            (None, None) if pq.starts_with('/') => Some(pq),
            (Some(scheme), Some(authority))
                if Some(scheme) == self.shared.base.scheme()
                    && Some(authority) == self.shared.base.authority() =>
            {
                Some(pq)
            }
            _ => None,
        }
    }
}

fn transport(op: &Op, e: octocrab::Error) -> GitHubError {
    GitHubError::Transport {
        operation: op.what,
        source: Box::new(e),
    }
}

fn header_str(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn header_u64(headers: &HeaderMap, name: &str) -> Option<u64> {
    header_str(headers, name).and_then(|s| s.parse().ok())
}

#[derive(Debug, Default, serde::Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    errors: Vec<serde_json::Value>,
}

/// Maps a failure response to what the retry policy needs and the error
/// the caller gets. A 403 is a rate limit when it has `retry-after`, when
/// `x-ratelimit-remaining` is 0, or when GitHub's message says "rate limit";
/// a 429 always is. A 422 whose message says "not a fast forward" is
/// [`GitHubError::RefMoved`].
fn classify(
    op: &Op,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    request_id: Option<String>,
) -> (Failure, GitHubError) {
    let parsed: ErrorBody = serde_json::from_slice(body).unwrap_or_default();
    let message = parsed
        .message
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("no message").to_owned());
    let errors: Vec<ApiErrorDetail> = parsed
        .errors
        .into_iter()
        .map(|v| match v {
            serde_json::Value::String(s) => ApiErrorDetail {
                message: Some(s),
                ..ApiErrorDetail::default()
            },
            other => serde_json::from_value(other).unwrap_or_default(),
        })
        .collect();
    let operation = op.what;
    let retry_after = header_u64(headers, "retry-after").map(Duration::from_secs);
    let remaining = header_u64(headers, "x-ratelimit-remaining");
    let reset = header_u64(headers, "x-ratelimit-reset");
    let says_rate_limit = message.to_ascii_lowercase().contains("rate limit");
    match status.as_u16() {
        401 => (
            Failure::Final,
            GitHubError::Unauthorized {
                operation,
                message,
                request_id,
            },
        ),
        code @ (403 | 429)
            if code == 429 || retry_after.is_some() || remaining == Some(0) || says_rate_limit =>
        {
            (
                Failure::RateLimited {
                    retry_after,
                    remaining,
                    reset,
                },
                GitHubError::RateLimited {
                    operation,
                    status: code,
                    retry_after,
                    reset: if remaining == Some(0) { reset } else { None },
                    message,
                    request_id,
                },
            )
        }
        403 => (
            Failure::Final,
            GitHubError::Forbidden {
                operation,
                message,
                request_id,
            },
        ),
        404 => (
            Failure::Final,
            GitHubError::NotFound {
                operation,
                request_id,
            },
        ),
        409 => (
            Failure::Final,
            GitHubError::Conflict {
                operation,
                message,
                request_id,
            },
        ),
        422 if message.to_ascii_lowercase().contains("not a fast forward") => (
            Failure::Final,
            GitHubError::RefMoved {
                operation,
                request_id,
            },
        ),
        422 => (
            Failure::Final,
            GitHubError::Unprocessable {
                operation,
                message,
                errors,
                request_id,
            },
        ),
        code @ 500..=599 => (
            Failure::Server { status: code },
            GitHubError::Server {
                operation,
                status: code,
                request_id,
            },
        ),
        code => (
            Failure::Final,
            GitHubError::UnexpectedStatus {
                operation,
                status: code,
                message,
                request_id,
            },
        ),
    }
}

/// The `rel="next"` target of one `Link` header value (RFC 8288), if any.
pub(crate) fn next_link(header: &str) -> Option<String> {
    let mut rest = header;
    loop {
        let start = rest.find('<')?;
        let end = start + rest[start..].find('>')?;
        let target = &rest[start + 1..end];
        let after = &rest[end + 1..];
        // Parameters run until the next link value.
        let params_end = after.find('<').unwrap_or(after.len());
        let params = &after[..params_end];
        let is_next = params.split(';').any(|p| {
            let Some((name, value)) = p.split_once('=') else {
                return false;
            };
            name.trim().eq_ignore_ascii_case("rel")
                && value
                    .trim()
                    .trim_end_matches(',')
                    .trim()
                    .trim_matches('"')
                    .split_ascii_whitespace()
                    .any(|r| r.eq_ignore_ascii_case("next"))
        });
        if is_next {
            return Some(target.to_owned());
        }
        rest = after;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_headers() {
        let h = r#"<https://api.github.com/repositories/1/issues?page=2>; rel="next", <https://api.github.com/repositories/1/issues?page=5>; rel="last""#;
        assert_eq!(
            next_link(h).as_deref(),
            Some("https://api.github.com/repositories/1/issues?page=2")
        );
        let h = r#"<https://x/a?page=1>; rel="prev", <https://x/a?page=3>; rel="next""#;
        assert_eq!(next_link(h).as_deref(), Some("https://x/a?page=3"));
        assert_eq!(next_link(r#"<https://x/a?page=1>; rel="prev""#), None);
        assert_eq!(
            next_link(r#"<https://x/a?page=4>; rel=next"#).as_deref(),
            Some("https://x/a?page=4")
        );
        assert_eq!(
            next_link(r#"<https://x/a?page=4>; title="a"; rel="last next""#).as_deref(),
            Some("https://x/a?page=4")
        );
        assert_eq!(next_link(""), None);
        assert_eq!(next_link("garbage"), None);
    }

    fn op() -> Op {
        Op::read("t.op", "do a thing")
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).expect("valid header"));
        }
        h
    }

    #[test]
    fn classification() {
        let body = br#"{"message":"Update is not a fast forward","documentation_url":"x"}"#;
        let (f, e) = classify(
            &op(),
            StatusCode::UNPROCESSABLE_ENTITY,
            &HeaderMap::new(),
            body,
            Some("R1".into()),
        );
        assert_eq!(f, Failure::Final);
        assert!(matches!(e, GitHubError::RefMoved { .. }), "{e:?}");
        assert_eq!(e.request_id(), Some("R1"));

        let body = br#"{"message":"You have exceeded a secondary rate limit."}"#;
        let (f, e) = classify(&op(), StatusCode::FORBIDDEN, &HeaderMap::new(), body, None);
        assert!(matches!(
            f,
            Failure::RateLimited {
                retry_after: None,
                ..
            }
        ));
        assert!(matches!(e, GitHubError::RateLimited { status: 403, .. }));

        let h = headers(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1700"),
        ]);
        let (f, e) = classify(&op(), StatusCode::FORBIDDEN, &h, b"{}", None);
        assert_eq!(
            f,
            Failure::RateLimited {
                retry_after: None,
                remaining: Some(0),
                reset: Some(1700)
            }
        );
        assert!(matches!(
            e,
            GitHubError::RateLimited {
                reset: Some(1700),
                ..
            }
        ));

        let body = br#"{"message":"Resource not accessible by integration"}"#;
        let h = headers(&[("x-ratelimit-remaining", "4999")]);
        let (f, e) = classify(&op(), StatusCode::FORBIDDEN, &h, body, None);
        assert_eq!(f, Failure::Final);
        assert!(matches!(e, GitHubError::Forbidden { .. }));

        let body = br#"{"message":"Validation Failed","errors":[{"resource":"Label","code":"already_exists","field":"name"},"plain"]}"#;
        let (_, e) = classify(
            &op(),
            StatusCode::UNPROCESSABLE_ENTITY,
            &HeaderMap::new(),
            body,
            None,
        );
        let GitHubError::Unprocessable { errors, .. } = &e else {
            panic!("{e:?}");
        };
        assert_eq!(errors[0].code.as_deref(), Some("already_exists"));
        assert_eq!(errors[1].message.as_deref(), Some("plain"));
        assert_eq!(
            e.to_string(),
            "do a thing: unprocessable (422): Validation Failed (Label name already_exists; plain)"
        );

        let (f, _) = classify(
            &op(),
            StatusCode::BAD_GATEWAY,
            &HeaderMap::new(),
            b"<html>",
            None,
        );
        assert_eq!(f, Failure::Server { status: 502 });
    }
}
