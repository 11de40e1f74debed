//! Verification of GitHub Actions OIDC ID tokens.
//!
//! A workflow asks GitHub for an ID token (`id-token: write`) and presents
//! it; [`OidcVerifier::verify`] checks it against the issuer's published
//! keys and returns its [`ActionsClaims`]:
//!
//! - The signature is RS256 and nothing else: `none`, `HS*` and every other
//!   algorithm are refused before any key is looked at. The key is chosen
//!   by the header's `kid` among the keys of the issuer's JWKS; header
//!   fields that name other keys or key URLs (`jwk`, `jku`, `x5u`) are
//!   never followed.
//! - Keys come from OpenID discovery: `GET {issuer}/.well-known/openid-configuration`
//!   names the `jwks_uri` (https, or http only when the issuer itself is
//!   http), which holds the keys. RSA signing keys with a `kid` are kept,
//!   by `kid`. The document must name the configured issuer.
//! - An unknown `kid` refetches the JWKS (discovery is done once), at most
//!   once per [`OidcSettings::min_refresh_interval`]; concurrent callers
//!   wait for one refetch and share its outcome. A fetch that fails keeps
//!   the keys already known. Responses are read up to
//!   [`MAX_DOCUMENT_BYTES`], each request within
//!   [`OidcSettings::http_timeout`].
//! - After the signature: `iss` equals the configured issuer exactly, `aud`
//!   (a string or an array) contains the configured audience, and `exp`,
//!   `nbf` and `iat` are checked against the given time with
//!   [`OidcSettings::leeway`] (this module's checks, not the JWT
//!   library's, so each failure has its own [`OidcError::reason_code`]).
//!
//! No error, and nothing this module logs, holds the token. Values taken
//! from the token (`kid`, `alg`, `iss`, `aud`) are clipped in messages.
//!
//! Requests go through octocrab's raw client (the HTTP and TLS stack this
//! crate already uses), unauthenticated, built for each refetch, which is
//! rare.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::header::ACCEPT;
use http_body_util::{BodyExt, Limited};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The issuer of GitHub Actions ID tokens on github.com.
pub const GITHUB_ACTIONS_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// The longest token accepted, in bytes (GitHub's are about 1 KiB).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The largest discovery document or JWKS read, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

/// Where and how tokens are verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcSettings {
    /// The expected `iss`, compared exactly; also the base of discovery.
    /// [`GITHUB_ACTIONS_ISSUER`] on github.com; GitHub Enterprise uses
    /// others.
    pub issuer: String,
    /// The audience that `aud` must contain.
    pub audience: String,
    /// Clock skew allowed on `exp`, `nbf` and `iat` (default 60 s).
    pub leeway: Duration,
    /// An unknown `kid` refetches the JWKS at most once per this interval
    /// (default 60 s).
    pub min_refresh_interval: Duration,
    /// Timeout of each discovery or JWKS request, connection included
    /// (default 10 s).
    pub http_timeout: Duration,
}

impl OidcSettings {
    /// Settings for `issuer` and `audience` with the default leeway,
    /// refresh interval and timeout.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        OidcSettings {
            issuer: issuer.into(),
            audience: audience.into(),
            leeway: Duration::from_secs(60),
            min_refresh_interval: Duration::from_secs(60),
            http_timeout: Duration::from_secs(10),
        }
    }

    /// Settings for github.com's Actions issuer ([`GITHUB_ACTIONS_ISSUER`]).
    pub fn github_actions(audience: impl Into<String>) -> Self {
        OidcSettings::new(GITHUB_ACTIONS_ISSUER, audience)
    }
}

/// The claims of a GitHub Actions ID token that benchops reads.
///
/// Ids (`repository_id`, `run_id`, …) are strings of digits, as GitHub
/// sends them; a number is accepted too. Other claims (`sha`, `ref_type`,
/// `runner_environment`, …) are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct ActionsClaims {
    /// The issuer.
    pub iss: String,
    /// The audiences (a single string in the token becomes one entry).
    #[serde(deserialize_with = "one_or_many")]
    pub aud: Vec<String>,
    /// The subject, such as `repo:octo/bench:ref:refs/heads/main`.
    pub sub: String,
    /// Expiry, Unix seconds.
    pub exp: u64,
    /// Not before, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
    /// Issued at, Unix seconds.
    pub iat: u64,
    /// `owner/name` of the repository the workflow runs in.
    pub repository: String,
    /// The repository's numeric id, as a string.
    #[serde(deserialize_with = "digits")]
    pub repository_id: String,
    /// The owner's login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_owner: Option<String>,
    /// The owner's numeric id, as a string.
    #[serde(
        default,
        deserialize_with = "opt_digits",
        skip_serializing_if = "Option::is_none"
    )]
    pub repository_owner_id: Option<String>,
    /// `owner/repo/path@ref` of the workflow file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_ref: Option<String>,
    /// `owner/repo/path@ref` of the job's workflow (a reusable workflow's
    /// own when the job calls one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_workflow_ref: Option<String>,
    /// The triggering event, such as `push` or `schedule`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_name: Option<String>,
    /// The deployment environment of the job, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// The git ref, such as `refs/heads/main` (`ref` in the token).
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub ref_: Option<String>,
    /// The workflow run's id, as a string.
    #[serde(
        default,
        deserialize_with = "opt_digits",
        skip_serializing_if = "Option::is_none"
    )]
    pub run_id: Option<String>,
    /// The run's attempt number, as a string.
    #[serde(
        default,
        deserialize_with = "opt_digits",
        skip_serializing_if = "Option::is_none"
    )]
    pub run_attempt: Option<String>,
    /// The login that triggered the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// The token's unique id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
}

/// The claims without which a token is refused with
/// [`OidcError::MissingClaim`].
const REQUIRED_CLAIMS: &[&str] = &[
    "iss",
    "aud",
    "sub",
    "exp",
    "iat",
    "repository",
    "repository_id",
];

/// Why a token was refused or could not be checked.
///
/// Messages never hold the token; [`OidcError::reason_code`] is a stable
/// kebab-case code for responses and logs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OidcError {
    /// Not a compact JWS with a JSON header and claims, too long, no `kid`,
    /// or a claim of the wrong type.
    #[error("malformed token: {reason}")]
    Malformed {
        /// What is wrong.
        reason: String,
    },
    /// The header's `alg` is not RS256.
    #[error("unsupported algorithm {alg:?}: only RS256 is accepted")]
    UnsupportedAlgorithm {
        /// The header's `alg`, clipped.
        alg: String,
    },
    /// The `kid` is not in the issuer's JWKS, even after a refetch (or a
    /// refetch was not allowed yet).
    #[error("unknown signing key {kid:?}")]
    UnknownKey {
        /// The header's `kid`, clipped.
        kid: String,
    },
    /// The signature does not verify with the key its `kid` names.
    #[error("the signature does not verify")]
    BadSignature,
    /// `iss` is not the configured issuer.
    #[error("wrong issuer {found:?}, expected {expected:?}")]
    WrongIssuer {
        /// The configured issuer.
        expected: String,
        /// The token's `iss`, clipped.
        found: String,
    },
    /// `aud` does not contain the configured audience.
    #[error("wrong audience {found:?}, expected {expected:?}")]
    WrongAudience {
        /// The configured audience.
        expected: String,
        /// The token's audiences, each clipped.
        found: Vec<String>,
    },
    /// `exp` has passed, beyond the leeway.
    #[error("expired at {exp}, now {now}")]
    Expired {
        /// The token's `exp`.
        exp: u64,
        /// The time of the check.
        now: u64,
    },
    /// `nbf` is still ahead, beyond the leeway.
    #[error("not valid before {nbf}, now {now}")]
    NotYetValid {
        /// The token's `nbf`.
        nbf: u64,
        /// The time of the check.
        now: u64,
    },
    /// `iat` is in the future, beyond the leeway.
    #[error("issued in the future at {iat}, now {now}")]
    IssuedInFuture {
        /// The token's `iat`.
        iat: u64,
        /// The time of the check.
        now: u64,
    },
    /// A required claim is absent or null.
    #[error("the claim {claim:?} is missing")]
    MissingClaim {
        /// The claim's name.
        claim: &'static str,
    },
    /// Discovery or the JWKS could not be fetched or read. The message
    /// holds the reason with its causes on one line.
    #[error(
        "the issuer's keys are unavailable: {}",
        benchops::excerpt::error_chain(&**reason)
    )]
    JwksUnavailable {
        /// What failed (shared by every caller that waited for the same
        /// refetch).
        reason: Arc<JwksError>,
    },
    /// The settings are unusable.
    #[error("OIDC configuration: {reason}")]
    Config {
        /// What is wrong.
        reason: String,
    },
}

impl OidcError {
    /// A stable kebab-case code for the failure, such as `expired` or
    /// `unknown-key`.
    pub fn reason_code(&self) -> &'static str {
        match self {
            OidcError::Malformed { .. } => "malformed-token",
            OidcError::UnsupportedAlgorithm { .. } => "unsupported-algorithm",
            OidcError::UnknownKey { .. } => "unknown-key",
            OidcError::BadSignature => "bad-signature",
            OidcError::WrongIssuer { .. } => "wrong-issuer",
            OidcError::WrongAudience { .. } => "wrong-audience",
            OidcError::Expired { .. } => "expired",
            OidcError::NotYetValid { .. } => "not-yet-valid",
            OidcError::IssuedInFuture { .. } => "issued-in-future",
            OidcError::MissingClaim { .. } => "missing-claim",
            OidcError::JwksUnavailable { .. } => "jwks-unavailable",
            OidcError::Config { .. } => "config",
        }
    }
}

/// Why the issuer's keys could not be fetched or read: discovery, then
/// the JWKS. Each message names the URL, never a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwksError {
    /// The issuer's origin is not a base URI the HTTP client takes.
    #[error("point the HTTP client at the issuer")]
    ClientBase(#[source] octocrab::Error),
    /// The HTTP client could not be built.
    #[error("build the HTTP client")]
    ClientBuild(#[source] octocrab::Error),
    /// The request could not be made up.
    #[error("make up the request GET {url}")]
    Request {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: http::Error,
    },
    /// The request was not answered (connection, TLS).
    #[error("GET {url}")]
    Send {
        /// The URL.
        url: String,
        /// The transport's error.
        #[source]
        source: octocrab::Error,
    },
    /// The answer is not a success.
    #[error("GET {url}: status {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: http::StatusCode,
    },
    /// The body could not be read, or is over [`MAX_DOCUMENT_BYTES`].
    #[error("GET {url}: read the body")]
    Body {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The body is not the JSON document expected.
    #[error("GET {url}: not the expected JSON")]
    Json {
        /// The URL.
        url: String,
        /// serde's reason.
        #[source]
        source: serde_json::Error,
    },
    /// No answer within [`OidcSettings::http_timeout`].
    #[error("GET {url}: no answer within {timeout:?}")]
    Timeout {
        /// The URL.
        url: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The discovery document names another issuer.
    #[error("the discovery document at {url} names the issuer {issuer:?}")]
    OtherIssuer {
        /// The discovery URL.
        url: String,
        /// The issuer it names, clipped.
        issuer: String,
    },
    /// The discovery document names no issuer.
    #[error("the discovery document at {url} has no issuer")]
    NoIssuer {
        /// The discovery URL.
        url: String,
    },
    /// The discovery document names no JWKS.
    #[error("the discovery document at {url} has no jwks_uri")]
    NoJwksUri {
        /// The discovery URL.
        url: String,
    },
    /// The `jwks_uri` does not parse as a URL.
    #[error("the jwks_uri {uri:?} is not a URL")]
    JwksUriSyntax {
        /// The `jwks_uri`, clipped.
        uri: String,
        /// Why.
        #[source]
        source: http::uri::InvalidUri,
    },
    /// The `jwks_uri` is not https (or http when the issuer is).
    #[error("the jwks_uri {uri:?} is not an https URL")]
    JwksUriScheme {
        /// The `jwks_uri`, clipped.
        uri: String,
    },
    /// The JWKS holds no key this module uses.
    #[error("the JWKS at {url} holds no RSA signing key")]
    NoRsaKey {
        /// The JWKS URL.
        url: String,
    },
}

/// Verifies ID tokens of one issuer for one audience; see the module
/// documentation. Cloning shares the key cache.
#[derive(Clone)]
pub struct OidcVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    settings: OidcSettings,
    /// Whether the issuer is http, which allows an http `jwks_uri`.
    issuer_is_http: bool,
    /// The scheme and authority of the issuer, octocrab's base URI.
    origin: http::Uri,
    discovery_url: String,
    /// Read on every verification; never held across an `.await`.
    keys: RwLock<KeySet>,
    /// Held by the one caller that refetches.
    refresh: tokio::sync::Mutex<RefreshState>,
}

#[derive(Default)]
struct KeySet {
    by_kid: HashMap<String, Arc<DecodingKey>>,
    /// Counts finished refetches, so a caller that waited for one knows it
    /// happened.
    generation: u64,
    /// Why the last refetch failed, until one succeeds.
    last_failure: Option<Arc<JwksError>>,
}

#[derive(Default)]
struct RefreshState {
    jwks_uri: Option<String>,
    last_finished: Option<Instant>,
}

impl fmt::Debug for OidcVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys = self
            .inner
            .keys
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .by_kid
            .len();
        f.debug_struct("OidcVerifier")
            .field("settings", &self.inner.settings)
            .field("cached_keys", &keys)
            .finish_non_exhaustive()
    }
}

impl OidcVerifier {
    /// A verifier with an empty key cache: the first verification fetches
    /// the keys. Fails if the issuer is not an absolute http(s) URL
    /// without query or fragment, or the audience is blank.
    pub fn new(settings: OidcSettings) -> Result<Self, OidcError> {
        let config = |reason: String| OidcError::Config { reason };
        let issuer = &settings.issuer;
        let uri: http::Uri = issuer
            .parse()
            .map_err(|e| config(format!("the issuer {issuer:?} is not a URL: {e}")))?;
        let issuer_is_http = match uri.scheme_str() {
            Some("https") => false,
            Some("http") => true,
            _ => return Err(config(format!("the issuer {issuer:?} is not http(s)"))),
        };
        let Some(authority) = uri.authority() else {
            return Err(config(format!("the issuer {issuer:?} has no host")));
        };
        if uri.query().is_some() || issuer.contains('#') {
            return Err(config(format!(
                "the issuer {issuer:?} must not have a query or fragment"
            )));
        }
        if settings.audience.trim().is_empty() {
            return Err(config("the audience is blank".to_owned()));
        }
        let origin = format!("{}://{authority}/", uri.scheme_str().unwrap_or("https"))
            .parse()
            .map_err(|e| config(format!("the issuer's origin is not a URL: {e}")))?;
        let discovery_url = format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        );
        Ok(OidcVerifier {
            inner: Arc::new(Inner {
                settings,
                issuer_is_http,
                origin,
                discovery_url,
                keys: RwLock::new(KeySet::default()),
                refresh: tokio::sync::Mutex::new(RefreshState::default()),
            }),
        })
    }

    /// The settings this verifier was built with.
    pub fn settings(&self) -> &OidcSettings {
        &self.inner.settings
    }

    /// Verifies `jwt` now (the system clock) and returns its claims.
    pub async fn verify(&self, jwt: &str) -> Result<ActionsClaims, OidcError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.verify_at(jwt, now).await
    }

    /// Verifies `jwt` as of `now_unix` (seconds since the epoch) and
    /// returns its claims. The refresh interval runs on the monotonic
    /// clock regardless.
    pub async fn verify_at(&self, jwt: &str, now_unix: u64) -> Result<ActionsClaims, OidcError> {
        let kid = check_header(jwt)?;
        let key = self.key_for(&kid).await?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        validation.leeway = 0;
        let data =
            jsonwebtoken::decode::<Value>(jwt, &key, &validation).map_err(|e| match e.kind() {
                ErrorKind::InvalidSignature => OidcError::BadSignature,
                ErrorKind::InvalidAlgorithm => OidcError::UnsupportedAlgorithm {
                    alg: "not RS256".to_owned(),
                },
                ErrorKind::Base64(_) => malformed("a part is not base64url"),
                ErrorKind::Json(_) | ErrorKind::Utf8(_) => {
                    malformed("the claims are not a JSON object")
                }
                _ => malformed("the token does not decode"),
            })?;
        let claims = claims_from(data.claims)?;
        self.check_claims(&claims, now_unix)?;
        Ok(claims)
    }

    fn check_claims(&self, claims: &ActionsClaims, now: u64) -> Result<(), OidcError> {
        let settings = &self.inner.settings;
        if claims.iss != settings.issuer {
            return Err(OidcError::WrongIssuer {
                expected: settings.issuer.clone(),
                found: clip(&claims.iss),
            });
        }
        if !claims.aud.contains(&settings.audience) {
            return Err(OidcError::WrongAudience {
                expected: settings.audience.clone(),
                found: claims.aud.iter().take(8).map(|a| clip(a)).collect(),
            });
        }
        let leeway = settings.leeway.as_secs();
        if now >= claims.exp.saturating_add(leeway) {
            return Err(OidcError::Expired {
                exp: claims.exp,
                now,
            });
        }
        if let Some(nbf) = claims.nbf {
            if nbf > now.saturating_add(leeway) {
                return Err(OidcError::NotYetValid { nbf, now });
            }
        }
        if claims.iat > now.saturating_add(leeway) {
            return Err(OidcError::IssuedInFuture {
                iat: claims.iat,
                now,
            });
        }
        Ok(())
    }

    /// The key named `kid`: from the cache, or after one refetch that
    /// concurrent callers share, at most once per refresh interval.
    async fn key_for(&self, kid: &str) -> Result<Arc<DecodingKey>, OidcError> {
        let inner = &self.inner;
        let seen = {
            let keys = inner.keys.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(key) = keys.by_kid.get(kid) {
                return Ok(key.clone());
            }
            keys.generation
        };
        let mut refresh = inner.refresh.lock().await;
        {
            let keys = inner.keys.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(key) = keys.by_kid.get(kid) {
                return Ok(key.clone());
            }
            if keys.generation != seen {
                // A refetch finished while this call waited: share its outcome.
                return Err(absent(kid, &keys));
            }
            let recent = refresh
                .last_finished
                .is_some_and(|at| at.elapsed() < inner.settings.min_refresh_interval);
            if recent {
                return Err(absent(kid, &keys));
            }
        }
        // Recorded once the fetch finishes, so a cancelled call does not
        // hold back the next one.
        let fetched = self.fetch_keys(&mut refresh).await;
        refresh.last_finished = Some(Instant::now());
        let mut keys = inner.keys.write().unwrap_or_else(PoisonError::into_inner);
        keys.generation += 1;
        match fetched {
            Ok(by_kid) => {
                keys.by_kid = by_kid;
                keys.last_failure = None;
            }
            Err(e) => keys.last_failure = Some(Arc::new(e)),
        }
        keys.by_kid
            .get(kid)
            .cloned()
            .ok_or_else(|| absent(kid, &keys))
    }

    /// Discovery (until it has succeeded once), then the JWKS.
    async fn fetch_keys(
        &self,
        refresh: &mut RefreshState,
    ) -> Result<HashMap<String, Arc<DecodingKey>>, JwksError> {
        let inner = &self.inner;
        // One deadline decides: each GET is bounded by `http_timeout` as a
        // whole (`get_json`). The client's own timeouts are only a backstop,
        // set past that deadline, so that a stalled answer always reads as
        // "no answer within", never as whichever of two equal timers fired
        // first.
        let backstop = inner.settings.http_timeout.saturating_mul(2);
        let client = octocrab::Octocrab::builder()
            .base_uri(inner.origin.clone())
            .map_err(JwksError::ClientBase)?
            .set_connect_timeout(Some(backstop))
            .set_read_timeout(Some(backstop))
            .set_write_timeout(Some(backstop))
            .build()
            .map_err(JwksError::ClientBuild)?;
        let jwks_uri = match &refresh.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let doc: Discovery = self.get_json(&client, &inner.discovery_url).await?;
                let uri = self.check_discovery(doc)?;
                refresh.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let jwks: Jwks = self.get_json(&client, &jwks_uri).await?;
        let by_kid = rsa_keys(jwks);
        if by_kid.is_empty() {
            return Err(JwksError::NoRsaKey { url: jwks_uri });
        }
        Ok(by_kid)
    }

    /// The `jwks_uri` of a discovery document that names this issuer.
    fn check_discovery(&self, doc: Discovery) -> Result<String, JwksError> {
        let inner = &self.inner;
        let url = || inner.discovery_url.clone();
        match doc.issuer {
            Some(ref issuer) if *issuer == inner.settings.issuer => {}
            Some(issuer) => {
                return Err(JwksError::OtherIssuer {
                    url: url(),
                    issuer: clip(&issuer),
                });
            }
            None => return Err(JwksError::NoIssuer { url: url() }),
        }
        let Some(jwks_uri) = doc.jwks_uri else {
            return Err(JwksError::NoJwksUri { url: url() });
        };
        jwks_uri_allowed(&jwks_uri, inner.issuer_is_http)?;
        Ok(jwks_uri)
    }

    /// GETs `url` within the timeout and reads at most
    /// [`MAX_DOCUMENT_BYTES`] of JSON.
    async fn get_json<T: DeserializeOwned>(
        &self,
        client: &octocrab::Octocrab,
        url: &str,
    ) -> Result<T, JwksError> {
        let request = http::Request::get(url)
            .header(ACCEPT, "application/json")
            .body(String::new())
            .map_err(|source| JwksError::Request {
                url: url.to_owned(),
                source,
            })?;
        let fetch = async {
            let response = client
                .execute(request)
                .await
                .map_err(|source| JwksError::Send {
                    url: url.to_owned(),
                    source,
                })?;
            let (parts, body) = response.into_parts();
            if !parts.status.is_success() {
                return Err(JwksError::Status {
                    url: url.to_owned(),
                    status: parts.status,
                });
            }
            let bytes = Limited::new(body, MAX_DOCUMENT_BYTES)
                .collect()
                .await
                .map_err(|source| JwksError::Body {
                    url: url.to_owned(),
                    source,
                })?
                .to_bytes();
            serde_json::from_slice(&bytes).map_err(|source| JwksError::Json {
                url: url.to_owned(),
                source,
            })
        };
        let timeout = self.inner.settings.http_timeout;
        tokio::time::timeout(timeout, fetch)
            .await
            .map_err(|_| JwksError::Timeout {
                url: url.to_owned(),
                timeout,
            })?
    }
}

/// The error for a `kid` still absent: the last refetch's failure if it
/// failed, else an unknown key.
fn absent(kid: &str, keys: &KeySet) -> OidcError {
    match &keys.last_failure {
        Some(reason) => OidcError::JwksUnavailable {
            reason: reason.clone(),
        },
        None => OidcError::UnknownKey { kid: clip(kid) },
    }
}

/// A JWKS URI must be https, or http when the issuer is.
fn jwks_uri_allowed(jwks_uri: &str, issuer_is_http: bool) -> Result<(), JwksError> {
    let uri: http::Uri = jwks_uri
        .parse()
        .map_err(|source| JwksError::JwksUriSyntax {
            uri: clip(jwks_uri),
            source,
        })?;
    let scheme_ok = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => issuer_is_http,
        _ => false,
    };
    if !scheme_ok || uri.authority().is_none() {
        return Err(JwksError::JwksUriScheme {
            uri: clip(jwks_uri),
        });
    }
    Ok(())
}

#[derive(Deserialize)]
struct Discovery {
    issuer: Option<String>,
    jwks_uri: Option<String>,
}

#[derive(Deserialize)]
struct Jwks {
    keys: Vec<Value>,
}

#[derive(Deserialize)]
struct Jwk {
    kty: String,
    kid: Option<String>,
    #[serde(rename = "use")]
    use_: Option<String>,
    alg: Option<String>,
    n: Option<String>,
    e: Option<String>,
}

/// The RSA signing keys of a JWKS by `kid`; the first of a repeated `kid`
/// wins, and keys of other types, uses or algorithms are skipped.
fn rsa_keys(jwks: Jwks) -> HashMap<String, Arc<DecodingKey>> {
    let mut by_kid = HashMap::new();
    for key in jwks.keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(key) else {
            continue;
        };
        let signing = jwk.kty == "RSA"
            && jwk.use_.as_deref().is_none_or(|u| u == "sig")
            && jwk.alg.as_deref().is_none_or(|a| a == "RS256");
        let (Some(kid), Some(n), Some(e)) = (jwk.kid, jwk.n, jwk.e) else {
            continue;
        };
        if !signing || kid.is_empty() || by_kid.contains_key(&kid) {
            continue;
        }
        if let Ok(key) = DecodingKey::from_rsa_components(&n, &e) {
            by_kid.insert(kid, Arc::new(key));
        }
    }
    by_kid
}

/// The parts of the header this module reads.
#[derive(Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
    crit: Option<Value>,
}

/// Checks the token's shape and header and returns its `kid`.
fn check_header(jwt: &str) -> Result<String, OidcError> {
    if jwt.len() > MAX_TOKEN_BYTES {
        return Err(malformed("longer than the limit"));
    }
    let mut parts = jwt.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed("not three dot-separated parts"));
    };
    let header = URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| malformed("the header is not base64url"))?;
    let header: Header =
        serde_json::from_slice(&header).map_err(|_| malformed("the header is not a JWS header"))?;
    if header.alg != "RS256" {
        return Err(OidcError::UnsupportedAlgorithm {
            alg: clip(&header.alg),
        });
    }
    if header.crit.is_some() {
        return Err(malformed("the header has critical extensions"));
    }
    match header.kid {
        Some(kid) if !kid.is_empty() => Ok(kid),
        _ => Err(malformed("the header has no kid")),
    }
}

/// The claims, once every required one is present.
fn claims_from(claims: Value) -> Result<ActionsClaims, OidcError> {
    let Value::Object(map) = &claims else {
        return Err(malformed("the claims are not a JSON object"));
    };
    for &claim in REQUIRED_CLAIMS {
        if map.get(claim).is_none_or(Value::is_null) {
            return Err(OidcError::MissingClaim { claim });
        }
    }
    serde_json::from_value(claims).map_err(|e| OidcError::Malformed {
        reason: format!("a claim has the wrong type: {e}"),
    })
}

fn malformed(reason: &str) -> OidcError {
    OidcError::Malformed {
        reason: reason.to_owned(),
    }
}

/// At most 100 characters of a value taken from a token or a response.
fn clip(s: &str) -> String {
    const MAX: usize = 100;
    match s.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_owned(),
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}

#[derive(Deserialize)]
#[serde(untagged)]
enum StringOrNumber {
    String(String),
    Number(u64),
}

fn digits<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match StringOrNumber::deserialize(d)? {
        StringOrNumber::String(s) => s,
        StringOrNumber::Number(n) => n.to_string(),
    })
}

fn opt_digits<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<StringOrNumber>::deserialize(d)? {
        None => None,
        Some(StringOrNumber::String(s)) => Some(s),
        Some(StringOrNumber::Number(n)) => Some(n.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jwks_uri_is_https_unless_the_issuer_is_http() {
        assert!(jwks_uri_allowed("https://token.example/jwks", false).is_ok());
        assert!(jwks_uri_allowed("http://token.example/jwks", false).is_err());
        assert!(jwks_uri_allowed("http://127.0.0.1:8080/jwks", true).is_ok());
        assert!(jwks_uri_allowed("https://token.example/jwks", true).is_ok());
        assert!(jwks_uri_allowed("file:///etc/keys", true).is_err());
        assert!(jwks_uri_allowed("/relative/jwks", false).is_err());
    }

    #[test]
    fn settings_are_checked() {
        let ok = OidcVerifier::new(OidcSettings::github_actions("benchops"));
        assert!(ok.is_ok());
        for (issuer, audience) in [
            ("token.actions.githubusercontent.com", "benchops"),
            ("ftp://token.example", "benchops"),
            ("https://token.example?x=1", "benchops"),
            ("https://token.example#x", "benchops"),
            (GITHUB_ACTIONS_ISSUER, " "),
        ] {
            let err = OidcVerifier::new(OidcSettings::new(issuer, audience))
                .expect_err("unusable settings are refused");
            assert_eq!(err.reason_code(), "config", "{issuer} {audience:?}");
        }
    }

    #[test]
    fn clip_keeps_short_values_and_cuts_long_ones() {
        assert_eq!(clip("kid-1"), "kid-1");
        let long = "é".repeat(150);
        let clipped = clip(&long);
        assert_eq!(clipped.chars().count(), 101);
        assert!(clipped.ends_with('…'));
    }

    #[test]
    fn jwks_keeps_rsa_signing_keys_with_a_kid() {
        let n = URL_SAFE_NO_PAD.encode([0xC3u8; 256]);
        let jwks: Jwks = serde_json::from_value(serde_json::json!({"keys": [
            {"kty": "RSA", "kid": "a", "n": n, "e": "AQAB", "use": "sig", "alg": "RS256"},
            {"kty": "RSA", "kid": "b", "n": n, "e": "AQAB"},
            {"kty": "RSA", "kid": "c", "n": n, "e": "AQAB", "use": "enc"},
            {"kty": "RSA", "kid": "d", "n": n, "e": "AQAB", "alg": "RS512"},
            {"kty": "EC", "kid": "e", "crv": "P-256", "x": "AA", "y": "AA"},
            {"kty": "RSA", "n": n, "e": "AQAB"},
            {"kty": "RSA", "kid": "f", "n": "not base64!", "e": "AQAB"},
            "not a key"
        ]}))
        .expect("a JWKS");
        let mut kids: Vec<String> = rsa_keys(jwks).into_keys().collect();
        kids.sort();
        assert_eq!(kids, ["a", "b"]);
    }
}
