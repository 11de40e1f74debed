//! The GitHub layer of benchops: the only crate that talks to GitHub.
//!
//! It is the only crate allowed to depend on octocrab or jsonwebtoken
//! (ARCHITECTURE.md, "Invariants"). `benchops-exec` never links it.
//!
//! - [`GitHubClient`]: a REST client over octocrab's raw requests with this
//!   crate's own request and response types. The base URL is explicit or
//!   comes from `GITHUB_API_URL` ([`api_url_from_env`]).
//! - Typed operations: git refs, trees with inline content, commits and a
//!   ref update that cannot force, file contents and recursive trees
//!   ([`git`]); handoff refs `refs/heads/benchmark-result/*`, their
//!   layout and their idempotent deletion ([`handoff`]); issues, comments
//!   (with their author) and labels ([`issues`]).
//! - Repository settings ([`admin`]): the repository's default branch,
//!   deployment environments and their branch policies, rulesets; read by
//!   `provision verify`, created by `provision apply` with an owner's token.
//! - App authentication ([`app`]): the RS256 App JWT ([`JwtClaims`],
//!   [`AppKey`]), the installation of a repository, installation tokens
//!   scoped to one [`Phase`], revocation, and `GET /app` for the App's slug
//!   (its bot is `<slug>[bot]`).
//! - GitHub Actions OIDC ([`oidc`]): an [`OidcVerifier`] checks an ID
//!   token's RS256 signature against the issuer's JWKS (discovered, cached,
//!   refreshed at a bounded rate on an unknown `kid`), its issuer, audience
//!   and lifetime, and returns the [`ActionsClaims`] benchops-app's policy
//!   decides on. [`token_service`] is the publisher's client for that
//!   exchange: one phase-scoped installation token per request, handed back
//!   for revocation.
//! - [`Token`]: every credential, never shown by `Debug` or `Display`.
//! - Failures are [`GitHubError`] variants (404, 409, 422 `RefMoved`, 401,
//!   403, rate limits, 5xx, transport), each with GitHub's request id.
//! - Retries follow [`retry::decide`] (rate limits always, 5xx and
//!   transport errors for idempotent operations only); content-creating
//!   requests are paced at 80 per minute and 500 per hour ([`pacing`]).
//!   Every wait goes through the injected [`Sleeper`] and is added to the
//!   [`Metrics`], with request counts, bytes, the last rate-limit remaining
//!   and request ids, per operation.
//!
//! ```no_run
//! # async fn f() -> Result<(), benchops_github::GitHubError> {
//! use benchops_github::{AppId, AppKey, GitHubClient, Phase, RefName, Repo, TreeFile};
//!
//! let client = GitHubClient::builder().build()?; // GITHUB_API_URL or api.github.com
//! let repo = Repo::parse("octo/bench")?;
//! let pem = std::fs::read("app-key.pem").expect("the App's private key");
//! let app = client.app(AppKey::from_pem(AppId::new(1), &pem)?);
//! let installation = app.repo_installation(&repo).await?;
//! let token = app
//!     .create_installation_token(installation.id, Phase::Contents, &[repo.clone()])
//!     .await?;
//! let gh = client.with_installation_token(&token);
//! let branch = RefName::branch("benchmark-history")?;
//! let tip = gh.get_ref(&repo, &branch).await?.object.sha;
//! let base = gh.get_commit(&repo, &tip).await?.tree.sha;
//! let files = [TreeFile { path: "records/x.json".into(), content: "{}".into() }];
//! let tree = gh.create_tree(&repo, Some(&base), &files).await?;
//! let commit = gh.create_commit(&repo, "record x", &tree.sha, &[tip]).await?;
//! gh.update_ref(&repo, &branch, &commit.sha).await?; // RefMoved: re-read and retry
//! gh.revoke_token().await?;
//! # Ok(()) }
//! ```

pub mod admin;
pub mod app;
mod auth;
mod client;
mod error;
pub mod git;
pub mod handoff;
pub mod issues;
mod metrics;
mod names;
pub mod oidc;
pub mod pacing;
pub mod retry;
mod time;
mod token;
pub mod token_service;

pub use admin::{
    BranchPolicy, BypassActor, DeploymentBranchPolicy, Environment, EnvironmentSettings,
    NewRuleset, RefNameCondition, Repository, Rule, Ruleset, RulesetConditions, RulesetSummary,
};
pub use app::{App, AppClient, Installation, InstallationId, InstallationToken};
pub use auth::{AppId, AppKey, JwtClaims, PermissionLevel, Phase};
pub use client::{
    API_VERSION, DEFAULT_API_URL, GitHubClient, GitHubClientBuilder, MAX_PAGES, MEDIA_TYPE,
    api_url_from_env,
};
pub use error::{ApiErrorDetail, GitHubError};
pub use git::{
    Blob, Commit, FileContents, GitRef, RefDeletion, TREE_REQUEST_BUDGET, Tree, TreeEntry, TreeFile,
};
pub use handoff::{HANDOFF_REF_PREFIX, HandoffContent, HandoffFile, HandoffRef};
pub use issues::{
    Comment, CommentDeletion, Issue, IssueLabel, IssueState, IssueUpdate, Label, LabelOutcome,
    LabelSpec, NewIssue, StateFilter, StateReason, User,
};
pub use metrics::{Metrics, OperationMetrics};
pub use names::{GitSha, RefName, Repo};
pub use oidc::{ActionsClaims, GITHUB_ACTIONS_ISSUER, OidcError, OidcSettings, OidcVerifier};
pub use pacing::PacingLimits;
pub use retry::RetryPolicy;
pub use time::{Clock, ManualClock, Sleeper, SystemClock, TokioSleeper};
pub use token::Token;
pub use token_service::{IdTokenRequest, TokenService, TokenServiceError};
