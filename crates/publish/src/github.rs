//! `benchops-publish sweep --github`: the sweep engine over GitHub, with
//! one short-lived installation token per phase. Every rule is the
//! engine's ([`crate::sweep`]); this module only builds the client, mints
//! and revokes tokens, and moves bytes.
//!
//! - [`GitHubStore`] ([`HistoryStore`]) works in the **contents phase**: a
//!   token limited to the repository with `contents: write`, minted in
//!   `begin` (App JWT → the repository's installation → token) and revoked
//!   in `end`, also on failure. The tip is read with three requests (ref,
//!   commit, recursive tree; a truncated listing stops the sweep), a commit
//!   is one tree with inline contents over the tip's tree plus one commit,
//!   and the branch moves with `update_ref` (`force: false`, the client
//!   cannot say anything else) or `create_ref` on a first commit. A lost
//!   race (`RefMoved`, or "Reference already exists") is
//!   [`Advance::Moved`]. Its second source of handoffs is the handoff refs
//!   (`refs/heads/benchmark-result/*`, each a commit whose tree holds one
//!   `<hex>.json`), read at the commit they were listed at; once their
//!   records are in history, each is deleted if it still points at that
//!   commit (a ref that moved is left for the next sweep).
//! - [`GitHubTracker`] ([`IssueTracker`](crate::sweep::IssueTracker)) works in the **issues phase**
//!   (token minted in `begin`, revoked in `end`). It lists the issues
//!   carrying the drift label, in every state, and their comments. An
//!   issue counts as benchops's only when the App's bot opened it
//!   ([`is_benchops_issue`]); a comment's markers count only when the bot
//!   wrote it ([`is_benchops_comment`]). Before each action on an existing
//!   issue it reads that issue again; if its state, labels or body differ
//!   from what the listing (and this sweep's own writes) left, the engine
//!   re-plans.
//!
//! Actions: `AddLabels` adds (never replaces) labels; `Close` sends
//! `state_reason: completed`, `CloseDuplicate` `duplicate` and `Reopen`
//! `reopened`, in the same request as the body and state;
//! `DeleteDuplicateComment` deletes the later copy (a 404 counts as done).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use benchops::Sha256Digest;
use benchops::layout::HISTORY_BRANCH;
use benchops::receipt::{RequestMetrics, WorkflowRun};
use benchops::reconcile::RenderOptions;
use benchops_github::{
    AppClient, AppId, AppKey, Clock as ApiClock, GitHubClient, GitHubError, GitSha, HandoffContent,
    InstallationId, PacingLimits, Phase as TokenPhase, RefDeletion, RefName, Repo, RetryPolicy,
    Sleeper, TREE_REQUEST_BUDGET, Token, TokenService, TreeFile,
};
use benchops_history::ObjectStore;

use crate::signatures::SignaturePolicy;
use crate::sweep::handoff::QUARANTINE_DIR;
use crate::sweep::{
    self, AdapterFailure, Advance, Cause, Clock, HandoffRefReport, HistoryStore, Inputs, Phase,
    PhaseToken, Progress, RefHandoff, RefOutcome, RequestSummary, StepError, SweepError,
    SweepReport, TipIndex, at,
};

/// How the sweep's GitHub client is built. Everything is optional; the
/// defaults are those of [`GitHubClient::builder`] (`GITHUB_API_URL` or
/// `https://api.github.com`, the system clock, real sleeps, the default
/// retry policy and pacing).
#[derive(Debug, Clone, Default)]
pub struct ClientSettings {
    /// The API base URL; `None`: `GITHUB_API_URL`, else api.github.com.
    pub api_url: Option<String>,
    /// The client's clock (JWT claims, rate-limit resets, pacing windows).
    pub clock: Option<Arc<dyn ApiClock>>,
    /// The client's sleeper (retry backoff, pacing).
    pub sleeper: Option<Arc<dyn Sleeper>>,
    /// The retry policy.
    pub retry_policy: Option<RetryPolicy>,
    /// The pacing of content-creating requests.
    pub pacing: Option<PacingLimits>,
    /// Per-request timeout.
    pub timeout: Option<Duration>,
    /// Seed of the retry jitter.
    pub jitter_seed: Option<u64>,
}

/// The largest App key file read (64 KiB; a PEM key is a few KiB).
const MAX_KEY_BYTES: u64 = 64 * 1024;

/// What [`sweep_github`] works on.
#[derive(Debug, Clone)]
pub struct GitHubSweepOptions {
    /// `OWNER/NAME`.
    pub repo: String,
    /// The GitHub App's id.
    pub app_id: u64,
    /// The App's private key (PEM, as GitHub hands it out).
    pub app_key_file: PathBuf,
    /// The directory of sealed handoffs (`*.json`), if any.
    pub handoff: Option<PathBuf>,
    /// The largest handoff file read from that directory, in bytes.
    pub max_record_bytes: u64,
    /// Whether to read handoff refs (`refs/heads/benchmark-result/*`) too.
    /// At least one source must be given.
    pub handoff_refs: bool,
    /// A git repository holding objects of `benchmark-history` (a clone or
    /// a `git fetch` of the branch): history's blobs found there are read
    /// locally, each checked against its id, and only the others with one
    /// request each. Without it, reading history back costs one request
    /// per record, and a history of thousands of records outruns an
    /// installation's hourly rate limit.
    pub history_objects: Option<PathBuf>,
    /// The schedule manifest (`schedule-manifest/v1`, TOML).
    pub manifest: PathBuf,
    /// The wall clock of the receipt (`started_at`, `finished_at`).
    pub clock: Clock,
    /// The receipt's `sweep.trigger` (`schedule`, `workflow_dispatch`,
    /// `manual`, ...).
    pub trigger: String,
    /// The GitHub Actions run, when the sweep runs in one.
    pub workflow_run: Option<WorkflowRun>,
    /// Prefix of links to history files in issue text.
    pub history_base_url: String,
    /// Apply at most this many reconcile actions (crash drills and tests).
    pub max_actions: Option<usize>,
    /// How the client is built.
    pub client: ClientSettings,
    /// Get the phase tokens from benchops-app's OIDC exchange instead of
    /// the App key (`app_id` and `app_key_file` are then unused).
    pub token_service: Option<TokenServiceOptions>,
    /// Keep one missed-run issue per lane with this label (`None`: off).
    pub missed_run_label: Option<String>,
    /// Keep the repository's health issue with this label
    /// ([`crate::sweep::health_issue`]); `None`: none.
    pub health_issue_label: Option<String>,
}

/// Where phase tokens come from when no App key is held.
#[derive(Debug, Clone)]
pub struct TokenServiceOptions {
    /// The benchops-app base URL.
    pub url: String,
    /// The audience of the Actions ID token.
    pub audience: String,
    /// Where ID tokens come from; `None`: the job's environment
    /// (`ACTIONS_ID_TOKEN_REQUEST_URL`, `ACTIONS_ID_TOKEN_REQUEST_TOKEN`).
    pub id_token_request: Option<benchops_github::IdTokenRequest>,
}

/// A repository and where its installation tokens come from: what every
/// GitHub-mode command needs (the sweep's options carry the same fields;
/// [`GitHubSweepOptions::access`]).
#[derive(Debug, Clone)]
pub struct GitHubAccess {
    /// `OWNER/NAME`.
    pub repo: String,
    /// The GitHub App's id (unused with a token service).
    pub app_id: u64,
    /// The App's private key (PEM; unused with a token service).
    pub app_key_file: PathBuf,
    /// Get the phase tokens from benchops-app's OIDC exchange instead of
    /// the App key.
    pub token_service: Option<TokenServiceOptions>,
    /// How the client is built.
    pub client: ClientSettings,
}

impl GitHubSweepOptions {
    /// Options with the system clock, trigger `manual`, no workflow run,
    /// links to `https://github.com/<repo>/blob/benchmark-history` and the
    /// default client. `handoff` is the handoff directory; handoff refs are
    /// off (set [`handoff_refs`](Self::handoff_refs)).
    pub fn new(
        repo: impl Into<String>,
        app_id: u64,
        app_key_file: impl Into<PathBuf>,
        handoff: Option<PathBuf>,
        manifest: impl Into<PathBuf>,
    ) -> Self {
        let repo = repo.into();
        GitHubSweepOptions {
            history_base_url: history_base_url("https://github.com", &repo),
            repo,
            app_id,
            app_key_file: app_key_file.into(),
            handoff,
            max_record_bytes: benchops::fsio::DEFAULT_MAX_RECORD_BYTES,
            handoff_refs: false,
            history_objects: None,
            manifest: manifest.into(),
            clock: Clock::system(),
            trigger: "manual".to_owned(),
            workflow_run: None,
            max_actions: None,
            client: ClientSettings::default(),
            token_service: None,
            missed_run_label: None,
            health_issue_label: None,
        }
    }

    /// The repository and the credentials these options name.
    pub fn access(&self) -> GitHubAccess {
        GitHubAccess {
            repo: self.repo.clone(),
            app_id: self.app_id,
            app_key_file: self.app_key_file.clone(),
            token_service: self.token_service.clone(),
            client: self.client.clone(),
        }
    }

    /// `<handoff>/quarantine`, when there is a handoff directory.
    pub fn quarantine_dir(&self) -> Option<PathBuf> {
        self.handoff.as_ref().map(|h| h.join(QUARANTINE_DIR))
    }
}

/// `<server>/<repo>/blob/benchmark-history`.
pub fn history_base_url(server: &str, repo: &str) -> String {
    format!(
        "{}/{repo}/blob/{HISTORY_BRANCH}",
        server.trim_end_matches('/')
    )
}

/// What GitHub Actions says about the current run, from its environment:
/// the trigger (`GITHUB_EVENT_NAME`, else `manual`), the run
/// (`GITHUB_RUN_ID`, `GITHUB_RUN_ATTEMPT`, `GITHUB_WORKFLOW`) and the
/// server (`GITHUB_SERVER_URL`, else `https://github.com`).
pub fn actions_context_from_env() -> (String, Option<WorkflowRun>, String) {
    let var = |k: &str| {
        std::env::var(k)
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let trigger = var("GITHUB_EVENT_NAME").unwrap_or_else(|| "manual".to_owned());
    let run = match (
        var("GITHUB_RUN_ID").and_then(|v| v.parse().ok()),
        var("GITHUB_RUN_ATTEMPT").and_then(|v| v.parse().ok()),
    ) {
        (Some(id), attempt) => Some(WorkflowRun {
            id,
            attempt: attempt.unwrap_or(1),
            workflow: var("GITHUB_WORKFLOW").unwrap_or_default(),
        }),
        (None, _) => None,
    };
    let server = var("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".to_owned());
    (trigger, run, server)
}

/// Whether a comment is benchops's own, so that its markers are read: its
/// author is the App's bot (`bot_login`, `<slug>[bot]`) and its body
/// carries a benchops marker (`<!-- benchops:`). A comment by anyone else,
/// or whose author GitHub does not report, never counts.
pub fn is_benchops_comment(body: &str, author: Option<&str>, bot_login: &str) -> bool {
    author == Some(bot_login) && body.contains("<!-- benchops:")
}

/// Whether an issue is benchops's own, so that it is reconciled: the App's
/// bot opened it. An issue by anyone else, or whose author GitHub does not
/// report, never counts, whatever its body quotes.
pub fn is_benchops_issue(author: Option<&str>, bot_login: &str) -> bool {
    author == Some(bot_login)
}

// ---------------------------------------------------------------------------
// Errors, as they cross the ports

/// Whether a rerun can succeed after GitHub refused or failed a request
/// (after the client's own retries): not when GitHub's validation failed
/// or the credentials cannot do it, since the same request fails the same
/// way again.
impl AdapterFailure for GitHubError {
    fn is_retryable(&self) -> bool {
        !matches!(
            self,
            GitHubError::Forbidden { .. }
                // GitHub's validation failed (a body over its size limit, a
                // bad label): the same request fails the same way on a rerun.
                | GitHubError::Unprocessable { .. }
                | GitHubError::InvalidInput { .. }
                | GitHubError::InvalidKey { .. }
                | GitHubError::PhaseForbids { .. }
                | GitHubError::Config { .. }
                | GitHubError::BuildRequest { .. }
        )
    }
}

/// GitHub truncated the recursive tree listing, so the absence of a path
/// cannot be trusted. Not retryable: the tree stays as large.
#[derive(Debug, thiserror::Error)]
#[error("the tree {tree} of benchmark-history is too large to list in one request (truncated)")]
pub struct TreeTruncated {
    /// The tree id.
    pub tree: String,
}

impl AdapterFailure for TreeTruncated {
    fn is_retryable(&self) -> bool {
        false
    }
}

// ---------------------------------------------------------------------------
// Shared setup

/// Where the phase tokens come from.
#[derive(Debug)]
enum Minter {
    /// The App key: JWT, installation lookup, token.
    App(AppClient),
    /// benchops-app's OIDC exchange; the tokens held, by phase, for
    /// revocation through the service.
    Service {
        service: TokenService,
        held: RefCell<Vec<(TokenPhase, Token)>>,
        bot_login: RefCell<Option<String>>,
    },
}

/// What both GitHub ports share: the repository, the client and the way
/// tokens are minted.
#[derive(Debug)]
struct Shared {
    repo: Repo,
    client: GitHubClient,
    minter: Minter,
    installation: Cell<Option<InstallationId>>,
}

impl Shared {
    fn app(&self) -> Result<&AppClient, StepError> {
        match &self.minter {
            Minter::App(app) => Ok(app),
            Minter::Service { .. } => Err(StepError::new(
                "use the App key",
                Cause::Config {
                    reason: "no App key in token-service mode".to_owned(),
                },
            )),
        }
    }

    /// The App's bot login: from the token service when it said, else
    /// `GET /app` with the App key.
    async fn bot_login(&self) -> Result<String, StepError> {
        match &self.minter {
            Minter::App(app) => Ok(app
                .get_app()
                .await
                .map_err(at("look up the App's slug"))?
                .bot_login()),
            Minter::Service { bot_login, .. } => bot_login.borrow().clone().ok_or_else(|| {
                StepError::new(
                    "learn the App's bot login",
                    Cause::Config {
                        reason: "the token service did not say which bot the App acts as"
                            .to_owned(),
                    },
                )
            }),
        }
    }

    async fn installation(&self) -> Result<InstallationId, StepError> {
        if let Some(i) = self.installation.get() {
            return Ok(i);
        }
        let i = self
            .app()?
            .repo_installation(&self.repo)
            .await
            .map_err(at("look up the App's installation"))?
            .id;
        self.installation.set(Some(i));
        Ok(i)
    }

    /// Mints a token for `phase`, limited to the repository, and a client
    /// holding it.
    async fn phase_client(
        &self,
        phase: TokenPhase,
        tokens: &mut Vec<PhaseToken>,
    ) -> Result<GitHubClient, StepError> {
        let token = match &self.minter {
            Minter::App(app) => {
                let installation = self.installation().await?;
                app.create_installation_token(installation, phase, std::slice::from_ref(&self.repo))
                    .await
                    .map_err(at(format!("mint the {phase}-phase token")))?
            }
            Minter::Service {
                service,
                held,
                bot_login,
            } => {
                let what = format!("get the {phase}-phase token from {}", service.url());
                let id_token = service
                    .actions_id_token()
                    .await
                    .map_err(|e| service_error(&what, e))?;
                let (token, bot) = service
                    .exchange(&id_token, phase)
                    .await
                    .map_err(|e| service_error(&what, e))?;
                held.borrow_mut().push((phase, token.token.clone()));
                if bot.is_some() {
                    *bot_login.borrow_mut() = bot;
                }
                token
            }
        };
        tokens.push(PhaseToken {
            phase: phase.to_string(),
            expires_at: token.expires_at.to_string(),
            revoked: false,
        });
        Ok(self.client.with_installation_token(&token))
    }
}

/// A token-service failure as a step error (its message holds no token).
fn service_error(what: &str, e: benchops_github::TokenServiceError) -> StepError {
    StepError::new(
        what.to_owned(),
        Cause::Config {
            reason: e.to_string(),
        },
    )
}

/// Revokes the token `gh` holds (at GitHub, or through the token service
/// that minted it) and marks it revoked in `tokens`.
async fn revoke(
    shared: &Shared,
    gh: Option<GitHubClient>,
    tokens: &mut [PhaseToken],
) -> Result<(), StepError> {
    let Some(gh) = gh else {
        return Ok(());
    };
    let phase = gh.phase();
    let what = format!(
        "revoke the {}-phase token",
        phase.map_or_else(|| "?".to_owned(), |p| p.to_string())
    );
    match &shared.minter {
        Minter::App(_) => gh.revoke_token().await.map_err(at(what))?,
        Minter::Service { service, held, .. } => {
            let token = {
                let mut held = held.borrow_mut();
                let i = held.iter().rposition(|(p, _)| Some(*p) == phase);
                i.map(|i| held.remove(i).1)
            };
            if let Some(token) = token {
                service
                    .revoke(&token)
                    .await
                    .map_err(|e| service_error(&what, e))?;
            }
        }
    }
    if let Some(t) = tokens
        .iter_mut()
        .rev()
        .find(|t| phase.is_some_and(|p| p.to_string() == t.phase))
    {
        t.revoked = true;
    }
    Ok(())
}

fn not_begun() -> StepError {
    StepError::new(
        "use the phase token",
        Cause::Config {
            reason: "the phase has not begun (no token)".to_owned(),
        },
    )
}

// ---------------------------------------------------------------------------
// History store

/// The `benchmark-history` branch of a GitHub repository, through the git
/// data API, with the contents-phase token.
#[derive(Debug)]
pub struct GitHubStore {
    shared: Rc<Shared>,
    branch: RefName,
    handoff_refs: bool,
    history_objects: Option<PathBuf>,
    gh: Option<GitHubClient>,
    tokens: Vec<PhaseToken>,
    /// Tree levels read so far, by id (a tree's content never changes).
    levels: std::collections::HashMap<String, Vec<benchops_github::git::TreeEntry>>,
}

impl GitHubStore {
    fn gh(&self) -> Result<&GitHubClient, StepError> {
        self.gh.as_ref().ok_or_else(not_begun)
    }

    /// The entries at the root of `tree` (one request, once per tree).
    async fn level(
        &mut self,
        tree: &str,
    ) -> Result<Vec<benchops_github::git::TreeEntry>, StepError> {
        if let Some(l) = self.levels.get(tree) {
            return Ok(l.clone());
        }
        let sha = GitSha::new(tree).map_err(at("read a tree id"))?;
        let listing = self
            .gh()?
            .get_tree(&self.shared.repo, &sha)
            .await
            .map_err(at("list a tree level"))?;
        if listing.truncated {
            return Err(StepError::new(
                "list a tree level",
                TreeTruncated {
                    tree: tree.to_owned(),
                },
            ));
        }
        self.levels.insert(tree.to_owned(), listing.tree.clone());
        Ok(listing.tree)
    }

    /// The blobs under `dir` (a directory ending in `/`, or a path) of the
    /// tree `root`, walking the levels on its path and listing the last
    /// one recursively: a few requests, whatever the rest of the tree holds.
    async fn list_dir(
        &mut self,
        root: &str,
        dir: &str,
    ) -> Result<BTreeMap<String, String>, StepError> {
        let parts: Vec<&str> = dir.trim_end_matches('/').split('/').collect();
        let (walk, leaf) = if dir.ends_with('/') {
            (&parts[..], None)
        } else {
            (&parts[..parts.len() - 1], parts.last().copied())
        };
        let mut sha = root.to_owned();
        for part in walk {
            let level = self.level(&sha).await?;
            match level.iter().find(|e| e.path == *part && e.kind == "tree") {
                Some(e) => sha = e.sha.as_str().to_owned(),
                None => return Ok(BTreeMap::new()),
            }
        }
        let mut out = BTreeMap::new();
        match leaf {
            Some(name) => {
                let level = self.level(&sha).await?;
                if let Some(e) = level.iter().find(|e| e.path == name && e.kind == "blob") {
                    out.insert(dir.to_owned(), e.sha.as_str().to_owned());
                }
            }
            None => {
                let id = GitSha::new(&sha).map_err(at("read a tree id"))?;
                for (path, blob) in self.list_recursive(&id, &format!("list {dir}")).await? {
                    out.insert(format!("{dir}{path}"), blob);
                }
            }
        }
        Ok(out)
    }

    /// Every blob of `tree`, by path from its root, listed through the API
    /// (level by level where GitHub truncates); a level too large to list
    /// stops `step`.
    async fn list_recursive(
        &self,
        tree: &GitSha,
        step: &str,
    ) -> Result<BTreeMap<String, String>, StepError> {
        let listed = self
            .gh()?
            .list_tree_files(&self.shared.repo, tree)
            .await
            .map_err(at(step.to_owned()))?;
        let (entries, _requests) = listed.map_err(|level| {
            StepError::new(
                step.to_owned(),
                TreeTruncated {
                    tree: level.as_str().to_owned(),
                },
            )
        })?;
        Ok(entries
            .into_iter()
            .filter(|e| e.kind == "blob")
            .map(|e| (e.path, e.sha.as_str().to_owned()))
            .collect())
    }

    /// The branch's tip commit, or None when the branch does not exist.
    async fn read_tip(&self) -> Result<Option<(GitSha, benchops_github::Commit)>, StepError> {
        let gh = self.gh()?;
        let repo = &self.shared.repo;
        let tip = match gh.get_ref(repo, &self.branch).await {
            Ok(r) => r.object.sha,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(StepError::new("read the history branch", e)),
        };
        let commit = gh
            .get_commit(repo, &tip)
            .await
            .map_err(at("read the tip commit"))?;
        Ok(Some((tip, commit)))
    }

    /// The tree of `commit` (one request).
    async fn commit_tree(&self, commit: &str) -> Result<GitSha, StepError> {
        let sha = GitSha::new(commit).map_err(at("read the tip commit id"))?;
        let c = self
            .gh()?
            .get_commit(&self.shared.repo, &sha)
            .await
            .map_err(at("read the tip commit"))?;
        Ok(c.tree.sha)
    }
}

/// The tip at `tip`, whose commit is `commit`, with no file listed yet.
fn tip_index(tip: &GitSha, commit: &benchops_github::Commit) -> TipIndex {
    TipIndex {
        commit: Some(tip.as_str().to_owned()),
        tree: Some(commit.tree.sha.as_str().to_owned()),
        parent: commit.parents.first().map(|p| p.sha.as_str().to_owned()),
        ..TipIndex::default()
    }
}

fn utf8(path: &str, bytes: &[u8]) -> Result<String, StepError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| {
        StepError::new(
            format!("prepare {path}"),
            Cause::Config {
                reason: format!("{path} is not UTF-8 text"),
            },
        )
    })
}

impl GitHubStore {
    /// The blobs of `tree` listed from the local object store, when one is
    /// given and holds the tree (`None` otherwise: the API lists it).
    fn local_tree_files(
        &self,
        tree: &str,
        dirs: &[&str],
    ) -> Result<Option<BTreeMap<String, String>>, StepError> {
        let Some(dir) = &self.history_objects else {
            return Ok(None);
        };
        // A partial clone does not fetch what it lacks: the API reads it.
        ObjectStore::new(dir, false)
            .list_tree_within(tree, dirs)
            .map_err(|e| {
                StepError::new(
                    format!("list the tip's tree in {}", dir.display()),
                    Cause::Config {
                        reason: e.to_string(),
                    },
                )
            })
    }
}

impl HistoryStore for GitHubStore {
    fn describe(&self) -> String {
        format!("{HISTORY_BRANCH} on {}", self.shared.repo)
    }

    fn blob_id(&self, bytes: &[u8]) -> String {
        // GitHub repositories use the SHA-1 object format.
        sweep::ports::git_blob_id(bytes, false)
    }

    async fn begin(&mut self) -> Result<(), StepError> {
        let gh = self
            .shared
            .phase_client(TokenPhase::Contents, &mut self.tokens)
            .await?;
        self.gh = Some(gh);
        Ok(())
    }

    async fn handoffs(&mut self) -> Result<Vec<RefHandoff>, StepError> {
        if !self.handoff_refs {
            return Ok(Vec::new());
        }
        let repo = self.shared.repo.clone();
        let gh = self.gh()?.clone();
        let listed = gh
            .list_handoff_refs(&repo)
            .await
            .map_err(at("list handoff refs"))?;
        let mut out = Vec::with_capacity(listed.len());
        for r in listed {
            let content = gh
                .read_handoff(&repo, &r)
                .await
                .map_err(at(format!("read handoff ref {}", r.name)))?;
            let (content, signature) = match content {
                HandoffContent::Invalid { reason } => (Err(reason), None),
                HandoffContent::Sealed(f) => (Ok((f.file_name, f.bytes)), f.signature),
            };
            out.push(RefHandoff {
                name: r.name.clone(),
                commit: r.sha.as_str().to_owned(),
                content,
                signature,
            });
        }
        Ok(out)
    }

    async fn tip(&mut self) -> Result<TipIndex, StepError> {
        let Some((tip, commit)) = self.read_tip().await? else {
            return Ok(TipIndex::default());
        };
        let mut index = tip_index(&tip, &commit);
        let tree = &commit.tree.sha;
        index.files = match self.local_tree_files(tree.as_str(), &[])? {
            Some(files) => files,
            None => self.list_recursive(tree, "list the tip's tree").await?,
        };
        Ok(index)
    }

    async fn tip_within(&mut self, dirs: &[String]) -> Result<TipIndex, StepError> {
        let Some((tip, commit)) = self.read_tip().await? else {
            return Ok(TipIndex {
                scope: Some(dirs.iter().cloned().collect()),
                ..TipIndex::default()
            });
        };
        let mut index = tip_index(&tip, &commit);
        index.scope = Some(std::collections::BTreeSet::new());
        self.widen(&mut index, dirs).await?;
        Ok(index)
    }

    async fn widen(&mut self, tip: &mut TipIndex, dirs: &[String]) -> Result<(), StepError> {
        let missing: Vec<String> = tip.uncovered(dirs).into_iter().cloned().collect();
        if missing.is_empty() || tip.scope.is_none() {
            return Ok(());
        }
        let Some(commit) = tip.commit.clone() else {
            tip.scope
                .get_or_insert_with(Default::default)
                .extend(missing);
            return Ok(());
        };
        let tree = match tip.tree.as_ref().or(tip.base_tree.as_ref()) {
            Some(t) => t.clone(),
            None => {
                let t = self.commit_tree(&commit).await?.as_str().to_owned();
                tip.tree = Some(t.clone());
                t
            }
        };
        let wanted: Vec<&str> = missing.iter().map(String::as_str).collect();
        let local = self.local_tree_files(&tree, &wanted)?;
        // Paths this process wrote over a base tree are in `files` already.
        let mut add = |files: BTreeMap<String, String>| {
            for (path, blob) in files {
                tip.files.entry(path).or_insert(blob);
            }
        };
        match local {
            Some(files) => add(files),
            None => {
                for d in &missing {
                    add(self.list_dir(&tree, d).await?);
                }
            }
        }
        tip.scope
            .get_or_insert_with(Default::default)
            .extend(missing);
        Ok(())
    }

    async fn read_blob(
        &mut self,
        _tip: &TipIndex,
        path: &str,
        blob: &str,
    ) -> Result<Vec<u8>, StepError> {
        let step = format!("read {path}");
        let sha = GitSha::new(blob).map_err(at(step.clone()))?;
        let b = self
            .gh()?
            .get_blob(&self.shared.repo, &sha)
            .await
            .map_err(at(step))?;
        Ok(b.bytes)
    }

    async fn read_blobs(
        &mut self,
        tip: &TipIndex,
        blobs: &[(&str, &str)],
    ) -> Result<Vec<Vec<u8>>, StepError> {
        let local = match &self.history_objects {
            Some(dir) => {
                // A partial clone does not fetch what it lacks: the API
                // reads it. GitHub repositories use the SHA-1 object format.
                let oids: Vec<&str> = blobs.iter().map(|(_, b)| *b).collect();
                ObjectStore::new(dir, false)
                    .read_present(&oids)
                    .map_err(|e| {
                        StepError::new(
                            format!("read history's objects in {}", dir.display()),
                            Cause::Config {
                                reason: e.to_string(),
                            },
                        )
                    })?
            }
            None => vec![None; blobs.len()],
        };
        let mut out = Vec::with_capacity(blobs.len());
        for ((path, blob), found) in blobs.iter().zip(local) {
            match found {
                Some(bytes) => out.push(bytes),
                None => out.push(self.read_blob(tip, path, blob).await?),
            }
        }
        Ok(out)
    }

    async fn commit(
        &mut self,
        tip: &TipIndex,
        files: &[(String, Vec<u8>)],
        message: &str,
        _date_unix: i64,
    ) -> Result<String, StepError> {
        let gh = self.gh()?;
        let repo = &self.shared.repo;
        let mut tree_files = Vec::with_capacity(files.len());
        for (path, bytes) in files {
            tree_files.push(TreeFile {
                path: path.clone(),
                content: utf8(path, bytes)?,
            });
        }
        // A tip this sweep committed itself carries no tree id: read it, so
        // the new commit is built over the tip's whole tree.
        let base = match (&tip.tree, &tip.commit) {
            (Some(t), _) => Some(GitSha::new(t).map_err(at("read the tip's tree id"))?),
            (None, Some(c)) => Some(self.commit_tree(c).await?),
            (None, None) => None,
        };
        let (tree, _requests) = gh
            .create_tree_batched(repo, base.as_ref(), &tree_files, TREE_REQUEST_BUDGET)
            .await
            .map_err(at("create the tree"))?;
        let parents = match &tip.commit {
            Some(c) => vec![GitSha::new(c).map_err(at("read the tip commit id"))?],
            None => Vec::new(),
        };
        let commit = gh
            .create_commit(repo, message, &tree.sha, &parents)
            .await
            .map_err(at("create the commit"))?;
        Ok(commit.sha.as_str().to_owned())
    }

    async fn advance(&mut self, tip: &TipIndex, commit: &str) -> Result<Advance, StepError> {
        let gh = self.gh()?;
        let repo = &self.shared.repo;
        let sha = GitSha::new(commit).map_err(at("read the new commit id"))?;
        let moved = match &tip.commit {
            None => gh.create_ref(repo, &self.branch, &sha).await.map(|_| ()),
            Some(_) => gh.update_ref(repo, &self.branch, &sha).await.map(|_| ()),
        };
        match moved {
            Ok(()) => Ok(Advance::Done),
            Err(GitHubError::RefMoved { .. }) => Ok(Advance::Moved),
            Err(GitHubError::Unprocessable { message, .. })
                if tip.commit.is_none() && message.contains("already exists") =>
            {
                Ok(Advance::Moved)
            }
            Err(e) => {
                let step = if tip.commit.is_none() {
                    "create the history branch"
                } else {
                    "update the history branch"
                };
                Err(StepError::new(step, e))
            }
        }
    }

    async fn consume(&mut self, handoffs: &[(&str, &str, Sha256Digest)]) -> Vec<HandoffRefReport> {
        let Some(gh) = self.gh.clone() else {
            return Vec::new();
        };
        let repo = self.shared.repo.clone();
        let mut out = Vec::new();
        for (name, commit, digest) in handoffs {
            let outcome = delete_one(&gh, &repo, name, commit).await;
            out.push(HandoffRefReport {
                name: (*name).to_owned(),
                commit: (*commit).to_owned(),
                file: None,
                digest: Some(*digest),
                issues: Vec::new(),
                outcome,
            });
        }
        out
    }

    async fn end(&mut self) -> Result<(), StepError> {
        revoke(&self.shared, self.gh.take(), &mut self.tokens).await
    }

    fn tokens(&self) -> Vec<PhaseToken> {
        self.tokens.clone()
    }
}

async fn delete_one(gh: &GitHubClient, repo: &Repo, name: &str, commit: &str) -> RefOutcome {
    let failed = |e: GitHubError| RefOutcome::DeleteFailed {
        error: e.to_string(),
    };
    let name = match RefName::new(name) {
        Ok(n) => n,
        Err(e) => return failed(e),
    };
    match gh.get_ref(repo, &name).await {
        Err(e) if e.is_not_found() => return RefOutcome::AlreadyGone,
        Err(e) => return failed(e),
        Ok(now) if now.object.sha.as_str() != commit => {
            return RefOutcome::Moved {
                to: now.object.sha.as_str().to_owned(),
            };
        }
        Ok(_) => {}
    }
    match gh.delete_ref(repo, &name).await {
        Ok(RefDeletion::Deleted) => RefOutcome::Deleted,
        Ok(RefDeletion::AlreadyGone) => RefOutcome::AlreadyGone,
        Err(e) => failed(e),
    }
}

mod tracker;
pub use tracker::GitHubTracker;

// ---------------------------------------------------------------------------
// The sweep

fn setup_error(e: StepError) -> SweepError {
    SweepError::new(Phase::Setup, e, &Progress::default())
}

/// A GitHub client built as `s` says.
pub(crate) fn build_client_with(s: &ClientSettings) -> Result<GitHubClient, StepError> {
    let mut b = GitHubClient::builder();
    if let Some(u) = &s.api_url {
        b = b.base_url(u.clone());
    }
    if let Some(c) = &s.clock {
        b = b.clock(c.clone());
    }
    if let Some(sl) = &s.sleeper {
        b = b.sleeper(sl.clone());
    }
    if let Some(r) = &s.retry_policy {
        b = b.retry_policy(r.clone());
    }
    if let Some(p) = &s.pacing {
        b = b.pacing_limits(*p);
    }
    if let Some(t) = s.timeout {
        b = b.timeout(t);
    }
    if let Some(seed) = s.jitter_seed {
        b = b.jitter_seed(seed);
    }
    b.build().map_err(at("build the GitHub client"))
}

/// The repository's client and token minter (App key or token service),
/// shared by both phases' ports.
fn connect(access: &GitHubAccess) -> Result<(Rc<Shared>, GitHubClient), StepError> {
    let repo = Repo::parse(&access.repo).map_err(at("parse --repo"))?;
    let client = build_client_with(&access.client)?;
    let minter = match &access.token_service {
        Some(ts) => Minter::Service {
            service: {
                let s = TokenService::new(ts.url.clone(), ts.audience.clone());
                match &ts.id_token_request {
                    Some(r) => s.with_id_token_request(r.clone()),
                    None => s,
                }
            },
            held: RefCell::new(Vec::new()),
            bot_login: RefCell::new(None),
        },
        None => {
            let pem = benchops::fsio::read_input_file(&access.app_key_file, MAX_KEY_BYTES)
                .map_err(|source| {
                    StepError::new(
                        "read the App key",
                        Cause::ReadFile {
                            what: "App private key file",
                            path: access.app_key_file.clone(),
                            source,
                        },
                    )
                })?;
            let key = AppKey::from_pem(AppId::new(access.app_id), &pem)
                .map_err(at("read the App key"))?;
            Minter::App(client.app(key))
        }
    };
    let shared = Rc::new(Shared {
        repo,
        client: client.clone(),
        minter,
        installation: Cell::new(None),
    });
    Ok((shared, client))
}

/// `benchmark-history` of `access.repo` as a [`HistoryStore`] with no
/// handoffs of its own, for the commands that read or move one file there
/// (`baseline --github`). Its phase is the contents phase: the caller
/// calls `begin` (which mints the token) and `end` (which revokes it).
pub fn contents_store(access: &GitHubAccess) -> Result<GitHubStore, StepError> {
    let (shared, _) = connect(access)?;
    Ok(GitHubStore {
        shared,
        branch: RefName::branch(HISTORY_BRANCH).map_err(at("name the history branch"))?,
        handoff_refs: false,
        history_objects: None,
        gh: None,
        tokens: Vec::new(),
        levels: Default::default(),
    })
}

/// Runs a GitHub sweep: the engine ([`crate::sweep`]) over
/// [`GitHubStore`] and [`GitHubTracker`]. See the module documentation.
pub async fn sweep_github(opts: &GitHubSweepOptions) -> Result<SweepReport, SweepError> {
    let repo = Repo::parse(&opts.repo)
        .map_err(at("parse --repo"))
        .map_err(setup_error)?;
    let branch = RefName::branch(HISTORY_BRANCH)
        .map_err(at("name the history branch"))
        .map_err(setup_error)?;
    let manifest = sweep::load_manifest(&opts.manifest).map_err(setup_error)?;
    match &opts.handoff {
        Some(dir) if !dir.is_dir() => {
            return Err(setup_error(StepError::new(
                "open the handoff directory",
                Cause::Config {
                    reason: format!(
                        "handoff directory {} does not exist or is not a directory",
                        dir.display()
                    ),
                },
            )));
        }
        None if !opts.handoff_refs => {
            return Err(setup_error(StepError::new(
                "choose the handoff sources",
                Cause::Config {
                    reason: "no handoff source: give a handoff directory, handoff refs, or both"
                        .to_owned(),
                },
            )));
        }
        _ => {}
    }
    let (shared, client) = connect(&opts.access()).map_err(setup_error)?;
    let mut store = GitHubStore {
        shared: shared.clone(),
        branch,
        handoff_refs: opts.handoff_refs,
        history_objects: opts.history_objects.clone(),
        gh: None,
        tokens: Vec::new(),
        levels: Default::default(),
    };
    let mut tracker = GitHubTracker::new(shared);
    let metrics_client = client.clone();
    let summary_client = client;
    let signing = SignaturePolicy::load(&manifest, &opts.manifest, || {
        sweep::clock_instant(&opts.clock)
    })
    .map_err(setup_error)?;
    let inputs = Inputs {
        missed_run_label: opts.missed_run_label.clone(),
        health_issue_label: opts.health_issue_label.clone(),
        signing,
        target: format!("(github) {repo}"),
        manifest,
        clock: opts.clock.clone(),
        trigger: opts.trigger.clone(),
        workflow_run: opts.workflow_run.clone(),
        max_record_bytes: opts.max_record_bytes,
        handoff_dir: opts
            .handoff
            .as_ref()
            .map(|d| (d.clone(), d.join(QUARANTINE_DIR))),
        source_base: opts.handoff.clone(),
        max_actions: opts.max_actions,
        render: RenderOptions::new(opts.history_base_url.clone()),
        requests: Arc::new(move || {
            let t = metrics_client.metrics().total();
            Some(RequestMetrics {
                requests: t.requests,
                bytes_sent: t.bytes_sent,
                bytes_received: t.bytes_received,
                rate_limit_remaining: t.rate_limit_remaining,
                request_ids: t.request_ids,
                pacing_wait_ms: t.pacing_waited_ms,
            })
        }),
        request_summary: Arc::new(move || {
            let t = summary_client.metrics().total();
            RequestSummary {
                requests: t.requests,
                retries: t.retries,
                bytes_sent: t.bytes_sent,
                bytes_received: t.bytes_received,
                waited_ms: t.waited_ms,
                retry_waited_ms: t.retry_waited_ms,
                pacing_waited_ms: t.pacing_waited_ms,
                rate_limit_remaining: t.rate_limit_remaining,
            }
        }),
    };
    sweep::run(&inputs, &mut store, &mut tracker).await
}

/// Runs [`sweep_github`] on a new single-threaded Tokio runtime (what the
/// CLI calls). Do not call it from inside a runtime.
pub fn sweep_github_blocking(opts: &GitHubSweepOptions) -> Result<SweepReport, SweepError> {
    sweep::block_on(sweep_github(opts)).map_err(setup_error)?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal of GitHub's validation fails the same way on a rerun.
    #[test]
    fn a_github_validation_failure_is_not_retryable() {
        let unprocessable = Cause::from(GitHubError::Unprocessable {
            operation: "issues/create",
            message: "Validation Failed".into(),
            errors: Vec::new(),
            request_id: None,
        });
        assert!(!unprocessable.is_retryable());
        assert!(!Cause::from(TreeTruncated { tree: "t".into() }).is_retryable());
    }
}
