//! The one error type of this crate.
//!
//! Every variant names the operation (`get ref`, `create issue`, …) and,
//! when GitHub sent one, the `x-github-request-id`, so a failure can be
//! found in GitHub's logs. Messages read after "failed to …". No variant
//! ever holds a token: request headers are never copied into errors, and
//! GitHub's own messages do not echo credentials.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::auth::Phase;

/// One entry of the `errors` array GitHub sends with a 422.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiErrorDetail {
    /// The resource, such as `Label` or `Issue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The field, such as `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The code, such as `already_exists`, `missing_field` or `custom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// A free-text message, when GitHub gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A failed GitHub operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GitHubError {
    /// 404: the resource does not exist, or the token may not see it.
    #[error("{operation}: not found (404){}", rid(.request_id))]
    NotFound {
        /// The operation, as in `get ref`.
        operation: &'static str,
        /// GitHub's `x-github-request-id`.
        request_id: Option<String>,
    },
    /// 409: the repository state conflicts (an empty repository, say).
    #[error("{operation}: conflict (409): {message}{}", rid(.request_id))]
    Conflict {
        /// The operation.
        operation: &'static str,
        /// GitHub's message.
        message: String,
        /// GitHub's `x-github-request-id`.
        request_id: Option<String>,
    },
    /// 422 "Update is not a fast forward": the ref moved since it was read.
    /// Re-read the ref, rebuild the commit on the new tip and try again.
    #[error("{operation}: the ref moved, the update is not a fast forward (422){}", rid(.request_id))]
    RefMoved {
        /// The operation.
        operation: &'static str,
        /// GitHub's `x-github-request-id`.
        request_id: Option<String>,
    },
    /// Any other 422: validation failed.
    #[error("{operation}: unprocessable (422): {message}{}{}", details(.errors), rid(.request_id))]
    Unprocessable {
        /// The operation.
        operation: &'static str,
        /// GitHub's message.
        message: String,
        /// GitHub's `errors` array.
        errors: Vec<ApiErrorDetail>,
        /// GitHub's `x-github-request-id`.
        request_id: Option<String>,
    },
    /// 401: the credential is missing, wrong, expired or revoked.
    #[error("{operation}: unauthorized (401): {message}{}", rid(.request_id))]
    Unauthorized {
        /// The operation.
        operation: &'static str,
        /// GitHub's message.
        message: String,
        /// GitHub's `x-github-request-id`.
        request_id: Option<String>,
    },
    /// 403 that is not a rate limit: the token lacks a permission.
    #[error("{operation}: forbidden (403): {message}{}", rid(.request_id))]
    Forbidden {
        /// The operation.
        operation: &'static str,
        /// GitHub's message.
        message: String,
        /// GitHub's `x-github-request-id`.
        request_id: Option<String>,
    },
    /// 403 or 429 for a primary or secondary rate limit, after the retry
    /// policy gave up (too many attempts, or a wait longer than it allows).
    #[error(
        "{operation}: rate limited ({status}){}{}: {message}{}",
        after(.retry_after),
        resets(.reset),
        rid(.request_id)
    )]
    RateLimited {
        /// The operation.
        operation: &'static str,
        /// 403 or 429.
        status: u16,
        /// The `retry-after` GitHub asked for.
        retry_after: Option<Duration>,
        /// `x-ratelimit-reset` (Unix seconds), when `x-ratelimit-remaining` was 0.
        reset: Option<u64>,
        /// GitHub's message.
        message: String,
        /// GitHub's `x-github-request-id`.
        request_id: Option<String>,
    },
    /// 5xx, after retries for idempotent operations, at once otherwise.
    #[error("{operation}: GitHub server error ({status}){}", rid(.request_id))]
    Server {
        /// The operation.
        operation: &'static str,
        /// The status code.
        status: u16,
        /// GitHub's `x-github-request-id`.
        request_id: Option<String>,
    },
    /// Another status this crate does not expect.
    #[error("{operation}: unexpected status {status}: {message}{}", rid(.request_id))]
    UnexpectedStatus {
        /// The operation.
        operation: &'static str,
        /// The status code.
        status: u16,
        /// GitHub's message, if any.
        message: String,
        /// GitHub's `x-github-request-id`.
        request_id: Option<String>,
    },
    /// The request did not get a response (connection refused or dropped,
    /// timeout), after retries for idempotent operations.
    #[error("{operation}: could not reach GitHub")]
    Transport {
        /// The operation.
        operation: &'static str,
        /// The transport error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The response body is not the JSON this crate expects.
    #[error("{operation}: unexpected response body{}", rid(.request_id))]
    Decode {
        /// The operation.
        operation: &'static str,
        /// GitHub's `x-github-request-id`.
        request_id: Option<String>,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The response parsed but says something this crate cannot use (a
    /// directory where a file was asked for, a bad base64 payload, a
    /// pagination link to another host, …).
    #[error("{operation}: {reason}{}", rid(.request_id))]
    UnexpectedResponse {
        /// The operation.
        operation: &'static str,
        /// What was wrong.
        reason: String,
        /// GitHub's `x-github-request-id`.
        request_id: Option<String>,
    },
    /// The request could not be built (nothing was sent).
    #[error("{operation}: build the request: {reason}")]
    BuildRequest {
        /// The operation.
        operation: &'static str,
        /// Why.
        reason: String,
    },
    /// An argument was rejected before anything was sent.
    #[error("accept {what} {value:?}: {reason}")]
    InvalidInput {
        /// What the value is (`ref name`, `repository path`, …).
        what: &'static str,
        /// The rejected value.
        value: String,
        /// Why.
        reason: &'static str,
    },
    /// The client holds a token minted for another phase; nothing was sent.
    #[error(
        "{operation}: the client's token is for the {phase} phase, and this needs the {needs} phase"
    )]
    PhaseForbids {
        /// The operation.
        operation: &'static str,
        /// The phase of the client's token.
        phase: Phase,
        /// The phase the operation needs.
        needs: Phase,
    },
    /// The App private key could not be read.
    #[error("read the GitHub App private key (RSA PEM)")]
    InvalidKey {
        /// The key error (it never contains key material).
        #[source]
        source: jsonwebtoken::errors::Error,
    },
    /// The App JWT could not be signed.
    #[error("sign the GitHub App JWT")]
    Jwt {
        /// The signing error.
        #[source]
        source: jsonwebtoken::errors::Error,
    },
    /// The client could not be configured.
    #[error("configure the GitHub client: {reason}")]
    Config {
        /// Why.
        reason: String,
    },
}

impl GitHubError {
    /// GitHub's `x-github-request-id` for the failed request, if any.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            GitHubError::NotFound { request_id, .. }
            | GitHubError::Conflict { request_id, .. }
            | GitHubError::RefMoved { request_id, .. }
            | GitHubError::Unprocessable { request_id, .. }
            | GitHubError::Unauthorized { request_id, .. }
            | GitHubError::Forbidden { request_id, .. }
            | GitHubError::RateLimited { request_id, .. }
            | GitHubError::Server { request_id, .. }
            | GitHubError::UnexpectedStatus { request_id, .. }
            | GitHubError::Decode { request_id, .. }
            | GitHubError::UnexpectedResponse { request_id, .. } => request_id.as_deref(),
            GitHubError::Transport { .. }
            | GitHubError::BuildRequest { .. }
            | GitHubError::InvalidInput { .. }
            | GitHubError::PhaseForbids { .. }
            | GitHubError::InvalidKey { .. }
            | GitHubError::Jwt { .. }
            | GitHubError::Config { .. } => None,
        }
    }

    /// Whether this is a 404.
    pub fn is_not_found(&self) -> bool {
        matches!(self, GitHubError::NotFound { .. })
    }
}

fn rid(id: &Option<String>) -> String {
    id.as_ref()
        .map(|id| format!(" [request id {id}]"))
        .unwrap_or_default()
}

fn after(retry_after: &Option<Duration>) -> String {
    retry_after
        .map(|d| format!(", retry after {} s", d.as_secs()))
        .unwrap_or_default()
}

fn resets(reset: &Option<u64>) -> String {
    reset
        .map(|r| format!(", limit resets at unix {r}"))
        .unwrap_or_default()
}

fn details(errors: &[ApiErrorDetail]) -> String {
    let parts: Vec<String> = errors
        .iter()
        .map(|e| {
            let mut s = String::new();
            for part in [&e.resource, &e.field, &e.code, &e.message]
                .into_iter()
                .flatten()
            {
                if !s.is_empty() {
                    s.push(' ');
                }
                s.push_str(part);
            }
            s
        })
        .filter(|s| !s.is_empty())
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}
