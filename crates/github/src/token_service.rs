//! The client side of `benchops-app`'s token exchange: a publication job
//! that holds no App key asks the service for one installation token per
//! phase, proving who it is with its GitHub Actions OIDC ID token, and
//! hands each token back for revocation when its phase ends.
//!
//! - [`TokenService::actions_id_token`] asks the Actions runtime for an ID
//!   token (`ACTIONS_ID_TOKEN_REQUEST_URL` with `&audience=…`, bearer
//!   `ACTIONS_ID_TOKEN_REQUEST_TOKEN`; the job needs `id-token: write`).
//!   A fresh one is fetched for every exchange: they live minutes.
//! - [`TokenService::exchange`] posts `{"phase": …}` to `<service>/token`
//!   with the ID token as bearer, and returns an [`InstallationToken`] for
//!   that phase (plus the App's bot login, when the service knows it).
//! - [`TokenService::revoke`] posts to `<service>/token/revoke` with the
//!   installation token as bearer.
//!
//! Requests go through octocrab's raw client (this crate's one HTTP and TLS
//! stack), bounded in time and in the bytes read. No token appears in an
//! error: a refusal carries the service's reason code.

use std::collections::BTreeMap;
use std::time::Duration;

use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http_body_util::{BodyExt as _, Limited};
use serde::Deserialize;

use crate::app::InstallationToken;
use crate::auth::Phase;
use crate::token::Token;

/// The largest answer read from the service or the Actions runtime.
const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// Why a token could not be had or given back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenServiceError {
    /// The service or the runtime could not be reached or answered
    /// something unreadable.
    #[error("{what}: {reason}")]
    Transport {
        /// What was asked.
        what: String,
        /// Why it failed.
        reason: String,
    },
    /// The service refused, with its reason code.
    #[error("{what}: refused with status {status} ({reason})")]
    Refused {
        /// What was asked.
        what: String,
        /// The HTTP status.
        status: u16,
        /// The service's reason code.
        reason: String,
    },
    /// The Actions runtime variables are missing (the job lacks
    /// `permissions: id-token: write`).
    #[error(
        "ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN are not set: the job needs `permissions: id-token: write`"
    )]
    NoActionsRuntime,
}

/// Where the Actions runtime hands out ID tokens: the values of
/// `ACTIONS_ID_TOKEN_REQUEST_URL` and `ACTIONS_ID_TOKEN_REQUEST_TOKEN`.
#[derive(Debug, Clone)]
pub struct IdTokenRequest {
    /// The request URL.
    pub url: String,
    /// The bearer that authorizes the request.
    pub bearer: Token,
}

impl IdTokenRequest {
    /// From the job's environment, when both variables are set.
    pub fn from_env() -> Option<Self> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Some(IdTokenRequest {
            url: var("ACTIONS_ID_TOKEN_REQUEST_URL")?,
            bearer: Token::new(var("ACTIONS_ID_TOKEN_REQUEST_TOKEN")?),
        })
    }
}

/// `benchops-app`'s token exchange.
#[derive(Debug, Clone)]
pub struct TokenService {
    base: String,
    audience: String,
    timeout: Duration,
    id_token_request: Option<IdTokenRequest>,
}

#[derive(Deserialize)]
struct Exchanged {
    token: String,
    expires_at: String,
    phase: Phase,
    #[serde(default)]
    permissions: BTreeMap<String, String>,
    repository: String,
    #[serde(default)]
    bot_login: Option<String>,
}

#[derive(Deserialize)]
struct Refusal {
    reason: Option<String>,
}

#[derive(Deserialize)]
struct IdTokenAnswer {
    value: String,
}

impl TokenService {
    /// The service at `url` (e.g. `https://benchops-app.example.org`),
    /// asking Actions for ID tokens with `audience`.
    pub fn new(url: impl Into<String>, audience: impl Into<String>) -> Self {
        TokenService {
            base: url.into().trim_end_matches('/').to_owned(),
            audience: audience.into(),
            timeout: Duration::from_secs(30),
            id_token_request: None,
        }
    }

    /// Asks this runtime endpoint for ID tokens instead of the one the
    /// environment names.
    pub fn with_id_token_request(mut self, request: IdTokenRequest) -> Self {
        self.id_token_request = Some(request);
        self
    }

    /// The service URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    fn client(&self, url: &str) -> Result<octocrab::Octocrab, TokenServiceError> {
        let uri: http::Uri = url.parse().map_err(|e| TokenServiceError::Transport {
            what: format!("parse {url}"),
            reason: format!("{e}"),
        })?;
        let origin = http::Uri::builder()
            .scheme(uri.scheme_str().unwrap_or("https"))
            .authority(uri.authority().map(|a| a.as_str()).unwrap_or_default())
            .path_and_query("/")
            .build()
            .map_err(|e| TokenServiceError::Transport {
                what: format!("parse {url}"),
                reason: format!("{e}"),
            })?;
        octocrab::Octocrab::builder()
            .base_uri(origin)
            .and_then(|b| {
                b.set_connect_timeout(Some(self.timeout))
                    .set_read_timeout(Some(self.timeout))
                    .set_write_timeout(Some(self.timeout))
                    .build()
            })
            .map_err(|e| TokenServiceError::Transport {
                what: format!("build a client for {url}"),
                reason: format!("{e}"),
            })
    }

    /// Sends one request; the status and at most [`MAX_ANSWER_BYTES`].
    async fn send(
        &self,
        what: &str,
        request: http::Request<String>,
    ) -> Result<(u16, Vec<u8>), TokenServiceError> {
        let url = request.uri().to_string();
        let client = self.client(&url)?;
        let transport = |reason: String| TokenServiceError::Transport {
            what: what.to_owned(),
            reason,
        };
        let fetch = async {
            let response = client
                .execute(request)
                .await
                .map_err(|e| transport(format!("{e}")))?;
            let (parts, body) = response.into_parts();
            let bytes = Limited::new(body, MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|e| transport(format!("reading the answer: {e}")))?
                .to_bytes();
            Ok((parts.status.as_u16(), bytes.to_vec()))
        };
        tokio::time::timeout(self.timeout, fetch)
            .await
            .map_err(|_| transport(format!("no answer within {:?}", self.timeout)))?
    }

    /// An ID token from the Actions runtime, for this service's audience.
    pub async fn actions_id_token(&self) -> Result<Token, TokenServiceError> {
        let Some(IdTokenRequest { url, bearer }) = self
            .id_token_request
            .clone()
            .or_else(IdTokenRequest::from_env)
        else {
            return Err(TokenServiceError::NoActionsRuntime);
        };
        let sep = if url.contains('?') { '&' } else { '?' };
        let full = format!("{url}{sep}audience={}", encode(&self.audience));
        let request = http::Request::get(&full)
            .header(AUTHORIZATION, format!("bearer {}", bearer.expose()))
            .header(ACCEPT, "application/json")
            .body(String::new())
            .map_err(|e| TokenServiceError::Transport {
                what: "ask Actions for an ID token".into(),
                reason: format!("{e}"),
            })?;
        let what = "ask Actions for an ID token";
        let (status, body) = self.send(what, request).await?;
        if status != 200 {
            return Err(TokenServiceError::Refused {
                what: what.into(),
                status,
                reason: "the Actions runtime refused".into(),
            });
        }
        let a: IdTokenAnswer =
            serde_json::from_slice(&body).map_err(|e| TokenServiceError::Transport {
                what: what.into(),
                reason: format!("not the expected JSON: {e}"),
            })?;
        Ok(Token::new(a.value))
    }

    /// Exchanges `id_token` for an installation token for `phase`. Returns
    /// the token and the App's bot login when the service gives it.
    pub async fn exchange(
        &self,
        id_token: &Token,
        phase: Phase,
    ) -> Result<(InstallationToken, Option<String>), TokenServiceError> {
        let what = format!("exchange an ID token for a {phase}-phase token");
        let request = http::Request::post(format!("{}/token", self.base))
            .header(AUTHORIZATION, format!("Bearer {}", id_token.expose()))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(serde_json::json!({ "phase": phase }).to_string())
            .map_err(|e| TokenServiceError::Transport {
                what: what.clone(),
                reason: format!("{e}"),
            })?;
        let (status, body) = self.send(&what, request).await?;
        if status != 200 {
            return Err(refused(what, status, &body));
        }
        let x: Exchanged =
            serde_json::from_slice(&body).map_err(|e| TokenServiceError::Transport {
                what: what.clone(),
                reason: format!("not the expected JSON: {e}"),
            })?;
        if x.phase != phase {
            return Err(TokenServiceError::Transport {
                what,
                reason: format!("the service answered for the {} phase", x.phase),
            });
        }
        let expires_at =
            x.expires_at
                .parse::<jiff::Timestamp>()
                .map_err(|e| TokenServiceError::Transport {
                    what: what.clone(),
                    reason: format!("expires_at is not a timestamp: {e}"),
                })?;
        let name = x
            .repository
            .split_once('/')
            .map_or(x.repository.clone(), |(_, n)| n.to_owned());
        Ok((
            InstallationToken {
                token: Token::new(x.token),
                expires_at,
                permissions: x.permissions,
                phase,
                repositories: vec![name],
            },
            x.bot_login,
        ))
    }

    /// Hands `token` back for revocation.
    pub async fn revoke(&self, token: &Token) -> Result<(), TokenServiceError> {
        let what = "revoke a token through the token service".to_owned();
        let request = http::Request::post(format!("{}/token/revoke", self.base))
            .header(AUTHORIZATION, format!("Bearer {}", token.expose()))
            .header(ACCEPT, "application/json")
            .body(String::new())
            .map_err(|e| TokenServiceError::Transport {
                what: what.clone(),
                reason: format!("{e}"),
            })?;
        let (status, body) = self.send(&what, request).await?;
        if status != 200 {
            return Err(refused(what, status, &body));
        }
        Ok(())
    }
}

fn refused(what: String, status: u16, body: &[u8]) -> TokenServiceError {
    let reason = serde_json::from_slice::<Refusal>(body)
        .ok()
        .and_then(|r| r.reason)
        .filter(|r| r.len() <= 64 && r.bytes().all(|b| b.is_ascii_graphic()))
        .unwrap_or_else(|| "no reason given".into());
    TokenServiceError::Refused {
        what,
        status,
        reason,
    }
}

/// Percent-encodes a query value.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_keep_a_short_reason_code_only() {
        let e = refused("x".into(), 403, br#"{"reason":"event-not-allowed"}"#);
        assert_eq!(
            e.to_string(),
            "x: refused with status 403 (event-not-allowed)"
        );
        let e = refused("x".into(), 502, b"<html>ghs_secret</html>");
        assert!(!e.to_string().contains("ghs_secret"), "{e}");
        assert_eq!(encode("api://a b"), "api%3A%2F%2Fa%20b");
    }
}
