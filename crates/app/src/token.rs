//! `POST /token` (the OIDC exchange) and `POST /token/revoke`.
//!
//! Exchange: the publication job sends its Actions OIDC ID token as
//! `Authorization: Bearer <jwt>` and `{"phase": "contents" | "issues"}`.
//! The token is verified against the issuer's JWKS
//! ([`benchops_github::oidc::OidcVerifier`]), the claims pass the policy
//! ([`crate::policy`]), and an installation token is minted for that one
//! repository with only that phase's permissions. The answer carries the
//! token, its expiry, the phase, the permissions GitHub granted, a
//! `token_ref` (12 hex digits of its SHA-256) that names it in logs, and
//! the App's bot login (`<slug>[bot]`, the author of benchops's issues).
//!
//! Revoke: `Authorization: Bearer <installation token>` revokes a token
//! minted here (`DELETE /installation/token` with it). The server knows a
//! token only by the SHA-256 of it; a token it did not mint gets 403.
//!
//! Every decision is counted in the metrics with its reason code and
//! logged. The decision log ([`crate::store::Decision`]) keeps the
//! decisions about a caller who proved something: an exchange whose ID
//! token verified and names a served repository (granted or denied), and a
//! revocation of a token minted here. A refusal of anyone else (no or a bad
//! token, a bad body, a verified token of a repository not served, a
//! revocation of a token not minted here) is counted, its log line bounded
//! to [`crate::REFUSALS_LOGGED_PER_SECOND`] a second, and not stored, so
//! that requests anyone can send cannot grow the database. Denials are
//! 403 with `{"reason": "<code>"}` and nothing more; no token is ever
//! logged.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use benchops_github::oidc::ActionsClaims;
use benchops_github::{InstallationId, Phase, Repo, Token};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use crate::AppState;
use crate::policy;
use crate::store::{Decision, Minted};

/// The largest token-request body read (a limit of the configuration's
/// body budget, so it lives there).
pub use crate::config::MAX_TOKEN_REQUEST_BYTES;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenRequest {
    phase: String,
}

fn reason(status: StatusCode, code: &'static str) -> Response {
    (status, axum::Json(serde_json::json!({ "reason": code }))).into_response()
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let t = v
        .strip_prefix("Bearer ")
        .or_else(|| v.strip_prefix("bearer "))?;
    let t = t.trim();
    (!t.is_empty() && t.len() <= 16 * 1024).then_some(t)
}

/// SHA-256 of a token: how the server knows a token it minted.
pub fn handle_of(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The public 12-hex-digit reference of a token.
pub fn token_ref(handle: &[u8; 32]) -> String {
    handle[..6].iter().map(|b| format!("{b:02x}")).collect()
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

fn decision(kind: &str, claims: Option<&ActionsClaims>, phase: Option<&str>) -> Decision {
    Decision {
        at: now(),
        kind: kind.to_owned(),
        phase: phase.map(str::to_owned),
        repository: claims.map(|c| c.repository.clone()),
        workflow_ref: claims.and_then(|c| c.job_workflow_ref.clone().or(c.workflow_ref.clone())),
        event_name: claims.and_then(|c| c.event_name.clone()),
        run_id: claims.and_then(|c| c.run_id.clone()),
        subject: claims.map(|c| c.sub.clone()),
        ..Decision::default()
    }
}

impl AppState {
    /// A refusal of a caller who proved nothing: counted, logged within the
    /// bound, not stored.
    fn refuse_unproven(&self, d: Decision, code: &'static str) {
        self.metrics.token(
            if d.kind == "revoke" {
                "revoke"
            } else {
                "exchange"
            },
            code,
        );
        if let Some(held_back) = self.unproven_log.admit() {
            tracing::info!(
                kind = %d.kind,
                granted = false,
                reason = code,
                repository = d.repository.as_deref().unwrap_or("-"),
                phase = d.phase.as_deref().unwrap_or("-"),
                held_back,
                "token decision"
            );
        }
    }

    /// A decision about a caller who proved something: counted, logged and
    /// stored in the decision log.
    fn decide(&self, mut d: Decision, granted: bool, code: &'static str) {
        d.granted = granted;
        d.reason = code.to_owned();
        self.metrics.token(
            if d.kind == "revoke" {
                "revoke"
            } else {
                "exchange"
            },
            code,
        );
        tracing::info!(
            kind = %d.kind,
            granted,
            reason = code,
            repository = d.repository.as_deref().unwrap_or("-"),
            phase = d.phase.as_deref().unwrap_or("-"),
            run_id = d.run_id.as_deref().unwrap_or("-"),
            token_ref = d.token_ref.as_deref().unwrap_or("-"),
            "token decision"
        );
        if let Err(e) = self.store.log_decision(&d) {
            tracing::error!(error = %e, "could not write the decision log");
        }
    }
}

/// `POST /token`.
pub async fn exchange(
    State(app): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(jwt) = bearer(&headers) else {
        app.refuse_unproven(decision("exchange", None, None), "missing-token");
        return reason(StatusCode::UNAUTHORIZED, "missing-token");
    };
    let phase = match serde_json::from_slice::<TokenRequest>(&body) {
        Ok(r) => r.phase,
        Err(_) => {
            app.refuse_unproven(decision("exchange", None, None), "bad-request");
            return reason(StatusCode::BAD_REQUEST, "bad-request");
        }
    };
    let phase = match phase.as_str() {
        "contents" => Phase::Contents,
        "issues" => Phase::Issues,
        _ => {
            app.refuse_unproven(decision("exchange", None, None), "unknown-phase");
            return reason(StatusCode::BAD_REQUEST, "unknown-phase");
        }
    };
    let phase_name = phase.to_string();
    let claims = match app.oidc.verify(jwt).await {
        Ok(c) => c,
        Err(e) => {
            let code = e.reason_code();
            app.refuse_unproven(decision("exchange", None, Some(&phase_name)), code);
            let status = if code == "jwks-unavailable" {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::FORBIDDEN
            };
            return reason(status, code);
        }
    };
    let d = decision("exchange", Some(&claims), Some(&phase_name));
    let allowed = match policy::check(&app.config.policy, &claims) {
        Ok(r) => r.clone(),
        // Any repository's workflow can get a verified token: one not
        // served proves nothing here.
        Err(denial @ policy::Denial::RepositoryNotAllowed) => {
            app.refuse_unproven(d, denial.code());
            return reason(StatusCode::FORBIDDEN, denial.code());
        }
        Err(denial) => {
            app.decide(d, false, denial.code());
            return reason(StatusCode::FORBIDDEN, denial.code());
        }
    };
    let Ok(repo) = Repo::parse(&allowed.name) else {
        app.decide(d, false, "config");
        return reason(StatusCode::INTERNAL_SERVER_ERROR, "config");
    };
    let installation = match app.store.installation_of(&allowed.name) {
        Ok(Some(id)) => InstallationId::new(id),
        _ => match app.app_client.repo_installation(&repo).await {
            Ok(i) => i.id,
            Err(e) if e.is_not_found() => {
                app.decide(d, false, "not-installed");
                return reason(StatusCode::FORBIDDEN, "not-installed");
            }
            Err(e) => {
                tracing::warn!(error = %e, "installation lookup failed");
                app.decide(d, false, "github-error");
                return reason(StatusCode::BAD_GATEWAY, "github-error");
            }
        },
    };
    let minted = match app
        .app_client
        .create_installation_token(installation, phase, std::slice::from_ref(&repo))
        .await
    {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(error = %e, "minting failed");
            app.decide(d, false, "github-error");
            return reason(StatusCode::BAD_GATEWAY, "github-error");
        }
    };
    let handle = handle_of(minted.token.expose());
    let tref = token_ref(&handle);
    let record = Minted {
        token_ref: tref.clone(),
        repository: allowed.name.clone(),
        phase: phase_name.clone(),
        installation_id: installation.get(),
        expires_at: minted.expires_at.to_string(),
        revoked_at: None,
    };
    if let Err(e) = app.store.record_minted(&handle, &record, &now()) {
        // A token the server cannot revoke later is not handed out.
        tracing::error!(error = %e, "could not record the minted token; revoking it");
        let _ = app
            .github
            .with_installation_token(&minted)
            .revoke_token()
            .await;
        app.decide(d, false, "store-error");
        return reason(StatusCode::SERVICE_UNAVAILABLE, "store-error");
    }
    let mut d = d;
    d.token_ref = Some(tref.clone());
    app.decide(d, true, "granted");
    // The App's bot login tells the publisher which issues are its own.
    let bot_login = app
        .bot_login
        .get_or_try_init(|| async { app.app_client.get_app().await.map(|a| a.bot_login()) })
        .await
        .ok()
        .cloned();
    (
        StatusCode::OK,
        axum::Json(serde_json::json!({
            "token": minted.token.expose(),
            "expires_at": minted.expires_at.to_string(),
            "phase": phase_name,
            "repository": allowed.name,
            "permissions": minted.permissions,
            "token_ref": tref,
            "bot_login": bot_login,
        })),
    )
        .into_response()
}

/// `POST /token/revoke`.
pub async fn revoke(State(app): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let Some(token) = bearer(&headers) else {
        app.refuse_unproven(decision("revoke", None, None), "missing-token");
        return reason(StatusCode::UNAUTHORIZED, "missing-token");
    };
    let handle = handle_of(token);
    let minted = match app.store.minted(&handle) {
        Ok(Some(m)) => m,
        Ok(None) => {
            app.refuse_unproven(decision("revoke", None, None), "not-minted-here");
            return reason(StatusCode::FORBIDDEN, "not-minted-here");
        }
        Err(e) => {
            tracing::error!(error = %e, "could not read minted tokens");
            return reason(StatusCode::SERVICE_UNAVAILABLE, "store-error");
        }
    };
    let mut d = decision("revoke", None, Some(&minted.phase));
    d.repository = Some(minted.repository.clone());
    d.token_ref = Some(minted.token_ref.clone());
    if minted.revoked_at.is_some() {
        app.decide(d, true, "already-revoked");
        return (
            StatusCode::OK,
            axum::Json(serde_json::json!({"revoked": true, "token_ref": minted.token_ref})),
        )
            .into_response();
    }
    match app
        .github
        .with_token(Token::new(token))
        .revoke_token()
        .await
    {
        Ok(()) => {}
        // Already dead at GitHub (expired or revoked elsewhere): done.
        Err(benchops_github::GitHubError::Unauthorized { .. }) => {}
        Err(e) => {
            tracing::warn!(error = %e, token_ref = %minted.token_ref, "revocation failed");
            app.decide(d, false, "github-error");
            return reason(StatusCode::BAD_GATEWAY, "github-error");
        }
    }
    if let Err(e) = app.store.mark_revoked(&handle, &now()) {
        tracing::error!(error = %e, "could not record the revocation");
    }
    app.decide(d, true, "revoked");
    (
        StatusCode::OK,
        axum::Json(serde_json::json!({"revoked": true, "token_ref": minted.token_ref})),
    )
        .into_response()
}
