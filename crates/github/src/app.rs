//! GitHub App endpoints: the App client, the repository's installation,
//! installation tokens scoped to one phase, and their revocation.
//!
//! An [`AppClient`] sends every request with a fresh App JWT, signed with
//! the injected clock (the claims are in [`JwtClaims`]).
//!
//! An installation token is minted for one [`Phase`] and a list of
//! repositories: `contents: write` to persist records, then `issues: write`
//! to announce them, each with `metadata: read`. No other permission set can
//! be asked for. [`GitHubClient::revoke_token`] revokes a token when its
//! phase is over.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use http::Method;
use serde::{Deserialize, Serialize};

pub use crate::auth::{
    AppId, AppKey, JWT_BACKDATE, JWT_LIFETIME, JwtClaims, PermissionLevel, Phase,
};
use crate::client::{GitHubClient, Op};
use crate::error::GitHubError;
use crate::metrics::Metrics;
use crate::names::Repo;
use crate::retry::Idempotency;
use crate::token::Token;

const GET_INSTALLATION: Op = Op::read("apps.get_repo_installation", "get repository installation");
const GET_APP: Op = Op::read("apps.get_authenticated", "get the authenticated app");
const CREATE_TOKEN: Op = Op {
    key: "apps.create_installation_token",
    what: "create installation token",
    idempotency: Idempotency::NotIdempotent,
    paced: false,
    needs: None,
};
const REVOKE_TOKEN: Op = Op {
    key: "apps.revoke_installation_token",
    what: "revoke installation token",
    idempotency: Idempotency::Idempotent,
    paced: false,
    needs: None,
};

/// An installation's numeric id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InstallationId(u64);

impl InstallationId {
    /// Wraps an installation id.
    pub const fn new(id: u64) -> Self {
        InstallationId(id)
    }

    /// The number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for InstallationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The body of `POST /app/installations/{id}/access_tokens`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccessTokenRequest {
    repositories: Vec<String>,
    permissions: BTreeMap<&'static str, PermissionLevel>,
}

impl AccessTokenRequest {
    /// Asks for `phase`'s permissions on `repositories` (at least one).
    pub fn new(phase: Phase, repositories: &[Repo]) -> Result<Self, GitHubError> {
        if repositories.is_empty() {
            return Err(GitHubError::InvalidInput {
                what: "repository list",
                value: String::new(),
                reason: "must name at least one repository (an empty list means all of them)",
            });
        }
        Ok(AccessTokenRequest {
            repositories: repositories.iter().map(|r| r.name().to_owned()).collect(),
            permissions: phase.permissions(),
        })
    }
}

#[derive(Debug, Deserialize)]
struct AccessTokenResponse {
    token: Token,
    expires_at: String,
    #[serde(default)]
    permissions: BTreeMap<String, String>,
    #[serde(default)]
    repositories: Vec<RepoName>,
}

#[derive(Debug, Deserialize)]
struct RepoName {
    name: String,
}

/// An installation access token and what GitHub says it may do.
#[derive(Debug, Clone)]
pub struct InstallationToken {
    /// The secret.
    pub token: Token,
    /// When it expires (GitHub: one hour after minting).
    pub expires_at: jiff::Timestamp,
    /// The permissions GitHub granted, as it reports them.
    pub permissions: BTreeMap<String, String>,
    /// The phase it was minted for.
    pub phase: Phase,
    /// The repositories it covers, as GitHub reports them.
    pub repositories: Vec<String>,
}

/// The account an installation belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// The user or organization login.
    pub login: String,
}

/// A GitHub App installation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installation {
    /// Its id.
    pub id: InstallationId,
    /// The App's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_id: Option<AppId>,
    /// The account it is installed on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<Account>,
    /// `all` or `selected`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_selection: Option<String>,
    /// The permissions the installation grants the App.
    #[serde(default)]
    pub permissions: BTreeMap<String, String>,
}

/// The GitHub App itself, as `GET /app` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct App {
    /// Its id.
    pub id: AppId,
    /// Its slug: the bot that acts for it is `<slug>[bot]`.
    pub slug: String,
    /// Its display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl App {
    /// The login of the App's bot user, `<slug>[bot]`: the author GitHub
    /// reports for issues and comments created with an installation token.
    pub fn bot_login(&self) -> String {
        format!("{}[bot]", self.slug)
    }
}

/// A client authenticated as the GitHub App (see [`GitHubClient::app`]).
#[derive(Debug, Clone)]
pub struct AppClient {
    client: GitHubClient,
    key: Arc<AppKey>,
}

impl AppClient {
    pub(crate) fn new(client: GitHubClient, key: Arc<AppKey>) -> Self {
        AppClient { client, key }
    }

    /// `GET /app`: the App this client authenticates as (its slug names
    /// its bot, [`App::bot_login`]).
    pub async fn get_app(&self) -> Result<App, GitHubError> {
        self.client
            .send(&GET_APP, Method::GET, "/app", None::<&()>)
            .await?
            .json(&GET_APP)
    }

    /// `GET /repos/{owner}/{repo}/installation`: the App's installation on
    /// a repository.
    pub async fn repo_installation(&self, repo: &Repo) -> Result<Installation, GitHubError> {
        let path = format!("{}/installation", repo.api_path());
        self.client
            .send(&GET_INSTALLATION, Method::GET, &path, None::<&()>)
            .await?
            .json(&GET_INSTALLATION)
    }

    /// `POST /app/installations/{id}/access_tokens` with the permissions of
    /// `phase` and the names of `repositories`. Not retried after a 5xx.
    pub async fn create_installation_token(
        &self,
        installation: InstallationId,
        phase: Phase,
        repositories: &[Repo],
    ) -> Result<InstallationToken, GitHubError> {
        let body = AccessTokenRequest::new(phase, repositories)?;
        let path = format!("/app/installations/{installation}/access_tokens");
        let reply = self
            .client
            .send(&CREATE_TOKEN, Method::POST, &path, Some(&body))
            .await?;
        let r: AccessTokenResponse = reply.json(&CREATE_TOKEN)?;
        let expires_at = r.expires_at.parse::<jiff::Timestamp>().map_err(|e| {
            reply.unexpected(
                &CREATE_TOKEN,
                format!("expires_at {:?} is not a timestamp: {e}", r.expires_at),
            )
        })?;
        Ok(InstallationToken {
            token: r.token,
            expires_at,
            permissions: r.permissions,
            phase,
            repositories: r.repositories.into_iter().map(|r| r.name).collect(),
        })
    }

    /// A snapshot of the request metrics (shared with the client this was
    /// made from).
    pub fn metrics(&self) -> Metrics {
        self.client.metrics()
    }

    /// Signs an App JWT with the client's clock (for callers that need
    /// one outside this client, such as the app backend's own checks).
    pub fn jwt(&self) -> Result<Token, GitHubError> {
        self.key.jwt(self.client.clock().now())
    }
}

impl GitHubClient {
    /// The same client authenticated by an installation token. Writes that
    /// need the other phase fail with [`GitHubError::PhaseForbids`] before
    /// anything is sent: a contents-phase client cannot write issues, an
    /// issues-phase client cannot write git data.
    pub fn with_installation_token(&self, token: &InstallationToken) -> GitHubClient {
        self.with_phase_token(token.token.clone(), token.phase)
    }

    /// The same client authenticated as the GitHub App (a JWT signed for
    /// each request), for the `/app` endpoints and installation lookup.
    pub fn app(&self, key: AppKey) -> AppClient {
        let key = Arc::new(key);
        AppClient::new(self.with_app_key(key.clone()), key)
    }

    /// `DELETE /installation/token`: revokes the token this client holds.
    /// Afterwards every request with it gets 401.
    pub async fn revoke_token(&self) -> Result<(), GitHubError> {
        self.send(
            &REVOKE_TOKEN,
            Method::DELETE,
            "/installation/token",
            None::<&()>,
        )
        .await
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_ask_for_one_write_permission_and_metadata_read() {
        let body = AccessTokenRequest::new(Phase::Contents, &[Repo::parse("o/r").expect("valid")])
            .expect("valid");
        assert_eq!(
            serde_json::to_value(&body).expect("serializes"),
            serde_json::json!({"repositories": ["r"], "permissions": {"contents": "write", "metadata": "read"}})
        );
        assert_eq!(
            serde_json::to_value(Phase::Issues.permissions()).expect("serializes"),
            serde_json::json!({"issues": "write", "metadata": "read"})
        );
        assert!(AccessTokenRequest::new(Phase::Issues, &[]).is_err());
    }

    #[test]
    fn the_app_names_its_bot() {
        let app: App = serde_json::from_str(
            r#"{"id": 7, "slug": "benchops", "node_id": "x", "name": "benchops", "owner": null}"#,
        )
        .expect("parses");
        assert_eq!(app.bot_login(), "benchops[bot]");
        assert_eq!(app.id, AppId::new(7));
    }
}
