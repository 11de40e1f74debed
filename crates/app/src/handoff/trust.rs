//! What `POST /handoff` trusts, read from the repository itself: the
//! schedule manifest at `[handoff] manifest` on `policy.default_branch`,
//! its `[signing]` table, and the `allowed_signers` file that table names
//! (relative to the manifest). The same two files the sweep reads from its
//! checkout of the default branch, so the App and the sweep accept the
//! same signatures.
//!
//! Both are read with a contents-phase installation token for that one
//! repository, minted on first use and reused until
//! [`TOKEN_REUSE_MARGIN`] before it expires. What was read is reused for
//! `[handoff] trust_ttl_seconds`: a line removed from `allowed_signers`
//! stops being honoured here at most that long after it lands on the
//! default branch (the sweep checks again in any case).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use benchops::manifest::Signing;
use benchops::provenance::{AllowedSigners, MAX_ALLOWED_SIGNERS_BYTES};
use benchops_github::{GitHubClient, GitHubError, InstallationId, InstallationToken, Phase, Repo};
use tokio::sync::Mutex;

use crate::AppState;

/// A cached installation token is not used when it expires sooner than
/// this.
pub const TOKEN_REUSE_MARGIN: Duration = Duration::from_secs(10 * 60);

/// The repository's trust, as read from its default branch.
#[derive(Debug)]
pub struct Trust {
    /// The manifest's `[signing]` table (`None`: the manifest has none,
    /// and no signature can be accepted).
    pub signing: Option<Signing>,
    /// The parsed `allowed_signers` (empty without `[signing]`).
    pub signers: AllowedSigners,
    /// Where the signers were read, `<branch>:<path>`, for messages.
    pub source: String,
    /// The manifest's lanes: a record of any other lane would only be
    /// quarantined by the sweep.
    pub lanes: Vec<String>,
}

/// Why the trust could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The App is not installed on the repository.
    #[error("the App is not installed on {0}")]
    NotInstalled(String),
    /// GitHub failed or refused.
    #[error("GitHub: {0}")]
    GitHub(#[from] GitHubError),
    /// The repository's files are missing or invalid: an operator fixes
    /// the default branch.
    #[error("{0}")]
    Config(String),
}

/// Installation tokens and trust, by repository (lower-cased name).
#[derive(Debug)]
pub struct TrustCache {
    ttl: Duration,
    tokens: Mutex<HashMap<String, InstallationToken>>,
    trust: Mutex<HashMap<String, (Instant, Arc<Trust>)>>,
}

impl TrustCache {
    /// A cache that reuses what it read for `ttl`.
    pub fn new(ttl: Duration) -> TrustCache {
        TrustCache {
            ttl,
            tokens: Mutex::new(HashMap::new()),
            trust: Mutex::new(HashMap::new()),
        }
    }

    /// A client with a contents-phase token for `repo` alone.
    pub async fn client(&self, app: &AppState, repo: &Repo) -> Result<GitHubClient, TrustError> {
        let key = repo.to_string().to_ascii_lowercase();
        let mut tokens = self.tokens.lock().await;
        let fresh_until = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::try_from(TOKEN_REUSE_MARGIN).unwrap_or_default())
            .unwrap_or(jiff::Timestamp::MAX);
        if let Some(t) = tokens.get(&key) {
            if t.expires_at > fresh_until {
                return Ok(app.github.with_installation_token(t));
            }
        }
        let installation = match app.store.installation_of(&repo.to_string()) {
            Ok(Some(id)) => InstallationId::new(id),
            _ => match app.app_client.repo_installation(repo).await {
                Ok(i) => i.id,
                Err(e) if e.is_not_found() => {
                    return Err(TrustError::NotInstalled(repo.to_string()));
                }
                Err(e) => return Err(e.into()),
            },
        };
        let minted = app
            .app_client
            .create_installation_token(installation, Phase::Contents, std::slice::from_ref(repo))
            .await?;
        let client = app.github.with_installation_token(&minted);
        tokens.insert(key, minted);
        Ok(client)
    }

    /// The trust of `repo`, from the cache or read afresh with `gh`.
    pub async fn trust(
        &self,
        app: &AppState,
        gh: &GitHubClient,
        repo: &Repo,
        manifest_path: &str,
    ) -> Result<Arc<Trust>, TrustError> {
        let key = repo.to_string().to_ascii_lowercase();
        let mut cache = self.trust.lock().await;
        if let Some((at, t)) = cache.get(&key) {
            if at.elapsed() < self.ttl {
                return Ok(t.clone());
            }
        }
        let branch = &app.config.policy.default_branch;
        let t = Arc::new(read(gh, repo, branch, manifest_path).await?);
        cache.insert(key, (Instant::now(), t.clone()));
        Ok(t)
    }
}

async fn file(
    gh: &GitHubClient,
    repo: &Repo,
    branch: &str,
    path: &str,
) -> Result<Vec<u8>, TrustError> {
    match gh.get_file(repo, path, branch).await {
        Ok(f) => Ok(f.bytes),
        Err(e) if e.is_not_found() => Err(TrustError::Config(format!(
            "{repo}: {branch}:{path} does not exist"
        ))),
        Err(e @ GitHubError::UnexpectedResponse { .. }) => Err(TrustError::Config(format!(
            "{repo}: {branch}:{path} cannot be read as a file: {e}"
        ))),
        Err(e) => Err(e.into()),
    }
}

/// Reads the manifest and, when it has `[signing]`, the allowed signers.
async fn read(
    gh: &GitHubClient,
    repo: &Repo,
    branch: &str,
    manifest_path: &str,
) -> Result<Trust, TrustError> {
    let source = format!("{branch}:{manifest_path}");
    let bytes = file(gh, repo, branch, manifest_path).await?;
    let text = String::from_utf8(bytes)
        .map_err(|_| TrustError::Config(format!("{repo}: {source} is not UTF-8")))?;
    let loaded = benchops::manifest::from_toml(&text, &format!("{repo}: {source}"))
        .map_err(|e| TrustError::Config(e.to_string()))?;
    let manifest = loaded.manifest;
    let lanes: Vec<String> = manifest
        .lanes
        .iter()
        .map(|l| l.name.as_str().to_owned())
        .collect();
    if let Some(named) = &manifest.repository {
        if !named.eq_ignore_ascii_case(&repo.to_string()) {
            return Err(TrustError::Config(format!(
                "{repo}: {source} names the repository {named}, not this one"
            )));
        }
    }
    let Some(signing) = manifest.signing else {
        return Ok(Trust {
            signing: None,
            signers: AllowedSigners::default(),
            source,
            lanes,
        });
    };
    // The manifest's schema keeps the path relative and free of `..`.
    let path = match manifest_path.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/{}", signing.allowed_signers),
        None => signing.allowed_signers.clone(),
    };
    let source = format!("{branch}:{path}");
    let bytes = file(gh, repo, branch, &path).await?;
    if bytes.len() as u64 > MAX_ALLOWED_SIGNERS_BYTES {
        return Err(TrustError::Config(format!(
            "{repo}: {source} is more than {MAX_ALLOWED_SIGNERS_BYTES} bytes"
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| TrustError::Config(format!("{repo}: {source} is not UTF-8")))?;
    let signers = AllowedSigners::parse(&text)
        .map_err(|e| TrustError::Config(format!("{repo}: {source}: {e}")))?;
    Ok(Trust {
        signing: Some(signing),
        signers,
        source,
        lanes,
    })
}
