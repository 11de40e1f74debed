//! The simulator's state: the App, installations, repositories (objects,
//! refs, issues, labels, environments, rulesets, pull requests and commit
//! statuses), tokens, rate-limit buckets, the fault plan and the request
//! log. Everything sits behind one mutex; no lock is held across an
//! `.await`.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::auth::{Access, Permissions};
use super::clock::Clock;
use super::faults::Armed;
use super::git::{self, Commit, Object, ObjectStore, Signature};
#[cfg(feature = "platform")]
use super::pulls::{MergeableDelay, RepoPulls};

/// The simulated GitHub App.
#[derive(Debug, Clone)]
pub(crate) struct App {
    pub id: u64,
    pub slug: String,
    pub client_id: String,
    pub bot_user_id: u64,
    /// What the App asks installations for (`GET /app` reports it).
    pub permissions: Permissions,
    /// When the simulator started (the App's `created_at`).
    pub created_at: i64,
}

impl App {
    pub fn bot_login(&self) -> String {
        format!("{}[bot]", self.slug)
    }
}

/// An installation of the App on one account.
#[derive(Debug, Clone)]
pub(crate) struct Installation {
    pub id: u64,
    pub account: String,
    pub account_id: u64,
    pub permissions: Permissions,
    /// `all` or `selected`, as the installation reports it.
    pub repository_selection: String,
    pub created_at: i64,
}

/// One label.
#[derive(Debug, Clone)]
pub(crate) struct Label {
    pub id: u64,
    pub name: String,
    pub color: String,
    pub description: Option<String>,
    pub default: bool,
}

/// Who did something (issues, comments).
#[derive(Debug, Clone)]
pub(crate) struct Actor {
    pub login: String,
    pub id: u64,
    pub bot: bool,
}

/// One comment.
#[derive(Debug, Clone)]
pub(crate) struct Comment {
    pub id: u64,
    pub body: String,
    pub user: Actor,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One issue.
#[derive(Debug, Clone)]
pub(crate) struct Issue {
    pub id: u64,
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    pub open: bool,
    pub state_reason: Option<String>,
    /// Label ids, in the order they were set.
    pub labels: Vec<u64>,
    pub user: Actor,
    pub created_at: i64,
    pub updated_at: i64,
    pub closed_at: Option<i64>,
    pub closed_by: Option<Actor>,
    pub comments: Vec<Comment>,
}

/// A deployment branch or tag policy (a name pattern) of an environment.
#[derive(Debug, Clone)]
pub(crate) struct BranchPolicy {
    pub id: u64,
    pub name: String,
    /// `branch` or `tag`.
    pub kind: String,
}

/// A deployment environment.
#[derive(Debug, Clone)]
pub(crate) struct Environment {
    pub id: u64,
    pub name: String,
    pub created_at: i64,
    pub updated_at: i64,
    /// Minutes; 0 when there is no wait timer.
    pub wait_timer: u64,
    pub prevent_self_review: bool,
    /// `(User|Team, id)`.
    pub reviewers: Vec<(String, u64)>,
    /// `(protected_branches, custom_branch_policies)`; `None` lets every
    /// branch deploy.
    pub branch_policy: Option<(bool, bool)>,
    /// Only meaningful while `custom_branch_policies` is true.
    pub branch_policies: Vec<BranchPolicy>,
}

/// Who may bypass a ruleset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BypassActor {
    pub actor_id: Option<u64>,
    /// `Integration`, `RepositoryRole`, `Team`, `User`, ...
    pub actor_type: String,
    /// `always`, `pull_request` or `exempt`.
    pub bypass_mode: String,
}

/// A repository ruleset.
#[derive(Debug, Clone)]
pub(crate) struct Ruleset {
    pub id: u64,
    pub name: String,
    /// `branch`, `tag` or `push`.
    pub target: String,
    /// `active`, `evaluate` or `disabled`.
    pub enforcement: String,
    pub bypass_actors: Vec<BypassActor>,
    /// The `ref_name` condition's include and exclude patterns; `None`
    /// when the ruleset was created without conditions.
    pub ref_name: Option<(Vec<String>, Vec<String>)>,
    /// The rules as sent: objects with a known `type`.
    pub rules: Vec<Value>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One repository.
#[derive(Debug, Clone)]
pub(crate) struct Repo {
    pub id: u64,
    pub owner: String,
    pub name: String,
    pub installation_id: u64,
    pub default_branch: String,
    pub created_at: i64,
    pub store: ObjectStore,
    /// Full ref name (`refs/heads/main`) to commit id.
    pub refs: BTreeMap<String, String>,
    pub issues: Vec<Issue>,
    pub labels: Vec<Label>,
    pub environments: Vec<Environment>,
    /// In creation order.
    pub rulesets: Vec<Ruleset>,
    /// Pull requests, commit statuses and merge settings.
    #[cfg(feature = "platform")]
    pub pulls: RepoPulls,
}

impl Repo {
    /// The next issue or pull request number (they share one sequence, as
    /// on GitHub).
    pub fn next_number(&self) -> u64 {
        let numbers = self.issues.iter().map(|i| i.number);
        #[cfg(feature = "platform")]
        let numbers = numbers.chain(self.pulls.list.iter().map(|p| p.number));
        numbers.max().unwrap_or(0) + 1
    }

    /// The commit a branch (without `refs/heads/`) points at.
    pub fn branch_tip(&self, branch: &str) -> Option<&String> {
        self.refs.get(&format!("refs/heads/{branch}"))
    }

    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    pub fn label_by_name(&self, name: &str) -> Option<&Label> {
        self.labels
            .iter()
            .find(|l| l.name.eq_ignore_ascii_case(name))
    }

    pub fn label_by_id(&self, id: u64) -> Option<&Label> {
        self.labels.iter().find(|l| l.id == id)
    }

    /// Environment names are case-insensitive, as on GitHub.
    pub fn environment(&self, name: &str) -> Option<&Environment> {
        self.environments
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(name))
    }

    pub fn environment_mut(&mut self, name: &str) -> Option<&mut Environment> {
        self.environments
            .iter_mut()
            .find(|e| e.name.eq_ignore_ascii_case(name))
    }

    /// Resolves a commit-ish the way the contents and trees APIs do: a
    /// branch, a tag, a full ref or a commit id.
    pub fn resolve_commitish(&self, name: &str) -> Option<String> {
        let candidates = [
            name.to_owned(),
            format!("refs/{name}"),
            format!("refs/heads/{name}"),
            format!("refs/tags/{name}"),
        ];
        for c in &candidates {
            if let Some(sha) = self.refs.get(c) {
                return Some(sha.clone());
            }
        }
        if git::is_sha(name) && self.store.commit(name).is_some() {
            return Some(name.to_ascii_lowercase());
        }
        None
    }

    /// Adds a commit on top of `ref_name` (full name) that changes nothing
    /// but the history, as another writer racing us would. Returns the new
    /// commit id, or `None` when the ref does not exist.
    pub fn advance_ref(&mut self, ref_name: &str, now: i64, message: &str) -> Option<String> {
        let tip = self.refs.get(ref_name)?.clone();
        let tree = self.store.commit(&tip)?.tree.clone();
        let sig = Signature {
            name: "concurrent-writer".to_owned(),
            email: "concurrent-writer@example.invalid".to_owned(),
            time: now,
            offset_minutes: 0,
        };
        let id = self.store.insert(Object::Commit(Commit {
            tree,
            parents: vec![tip],
            author: sig.clone(),
            committer: sig,
            message: message.to_owned(),
        }));
        self.refs.insert(ref_name.to_owned(), id.clone());
        Some(id)
    }
}

/// An installation access token. The value is kept only to look it up;
/// `Debug` does not show it.
#[derive(Clone)]
pub(crate) struct Token {
    pub id: u64,
    pub value: String,
    pub installation_id: u64,
    pub permissions: Permissions,
    /// Lower-case repository names the token is limited to, if any.
    pub repositories: Option<Vec<String>>,
    pub expires_at: i64,
    pub revoked: bool,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("id", &self.id)
            .field("value", &"ghs_<redacted>")
            .field("installation_id", &self.installation_id)
            .field("permissions", &self.permissions)
            .field("repositories", &self.repositories)
            .field("expires_at", &self.expires_at)
            .field("revoked", &self.revoked)
            .finish()
    }
}

impl Token {
    pub fn allows(&self, perm: &str, need: Access) -> bool {
        if perm == "metadata" && need == Access::Read {
            return true;
        }
        self.permissions.get(perm).is_some_and(|have| *have >= need)
    }
}

/// A primary rate-limit bucket.
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    pub limit: u64,
    pub used: u64,
    pub reset: i64,
}

/// How a request authenticated (never the credential itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthKind {
    /// No `Authorization` header.
    None,
    /// A valid App JWT.
    AppJwt,
    /// An installation token, identified by its ordinal (not its value).
    InstallationToken {
        /// Ordinal of the token in the simulator (1-based).
        token_id: u64,
        /// Its installation.
        installation_id: u64,
    },
    /// A credential that was refused (bad, expired or revoked).
    Rejected {
        /// Why, in a few words.
        reason: String,
    },
}

/// One entry of the request log.
#[derive(Debug, Clone)]
pub struct LoggedRequest {
    /// Arrival order, from 1.
    pub seq: u64,
    /// The `x-github-request-id` sent back.
    pub request_id: String,
    /// HTTP method.
    pub method: String,
    /// Path, as sent (still percent-encoded).
    pub path: String,
    /// Query string, if any.
    pub query: Option<String>,
    /// The OpenAPI path template the request matched.
    pub route: Option<&'static str>,
    /// The OpenAPI operation id the request matched.
    pub operation: Option<&'static str>,
    /// The `Authorization` scheme (`token`, `Bearer`), never the value.
    pub auth_scheme: Option<String>,
    /// How the request authenticated.
    pub auth: AuthKind,
    /// Response status; `None` when the connection was dropped.
    pub status: Option<u16>,
    /// The request body: JSON when it parsed, a string otherwise, `None`
    /// when empty.
    pub body: Option<Value>,
    /// Faults that fired on this request, in rule order.
    pub faults: Vec<String>,
}

/// Everything mutable.
#[derive(Debug)]
pub(crate) struct State {
    pub clock: Clock,
    pub app: App,
    pub installations: BTreeMap<u64, Installation>,
    /// Keyed by lower-case `owner/name`.
    pub repos: BTreeMap<String, Repo>,
    pub tokens: Vec<Token>,
    pub buckets: HashMap<String, Bucket>,
    pub rate_limit: u64,
    /// The most entries and bytes of one tree listing before it is
    /// truncated (GitHub: 100,000 entries, 7 MB).
    pub tree_limits: (usize, usize),
    /// How long pull request mergeability stays unknown.
    #[cfg(feature = "platform")]
    pub mergeable_delay: MergeableDelay,
    pub faults: Vec<Armed>,
    pub log: Vec<LoggedRequest>,
    pub seq: u64,
    next_id: u64,
    salt: String,
}

impl State {
    pub fn new(app: App, salt: String) -> Self {
        State {
            clock: Clock::default(),
            app,
            installations: BTreeMap::new(),
            repos: BTreeMap::new(),
            tokens: Vec::new(),
            buckets: HashMap::new(),
            rate_limit: 5000,
            tree_limits: (100_000, 7_000_000),
            #[cfg(feature = "platform")]
            mergeable_delay: MergeableDelay::default(),
            faults: Vec::new(),
            log: Vec::new(),
            seq: 0,
            next_id: 1000,
            salt,
        }
    }

    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    /// A fresh id for issues, comments, labels, repositories,
    /// environments, branch policies, rulesets, pull requests and commit
    /// statuses.
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub fn repo(&self, owner: &str, name: &str) -> Option<&Repo> {
        self.repos
            .get(&format!("{owner}/{name}").to_ascii_lowercase())
    }

    pub fn repo_mut(&mut self, owner: &str, name: &str) -> Option<&mut Repo> {
        self.repos
            .get_mut(&format!("{owner}/{name}").to_ascii_lowercase())
    }

    pub fn installation_for_account(&self, account: &str) -> Option<&Installation> {
        self.installations
            .values()
            .find(|i| i.account.eq_ignore_ascii_case(account))
    }

    pub fn token_by_value(&self, value: &str) -> Option<&Token> {
        self.tokens.iter().find(|t| t.value == value)
    }

    /// Mints a token; its value is `ghs_` and 36 hex digits derived from a
    /// per-simulator salt and the token's ordinal.
    pub fn mint_token(
        &mut self,
        installation_id: u64,
        permissions: Permissions,
        repositories: Option<Vec<String>>,
    ) -> &Token {
        let id = self.tokens.len() as u64 + 1;
        let digest = Sha256::digest(format!("{}:{id}", self.salt).as_bytes());
        let hex = git::to_hex(&digest);
        let expires_at = self.now() + 3600;
        self.tokens.push(Token {
            id,
            value: format!("ghs_{}", &hex[..36]),
            installation_id,
            permissions,
            repositories,
            expires_at,
            revoked: false,
        });
        let last = self.tokens.len() - 1;
        &self.tokens[last]
    }

    /// The bucket for a key, refilled when its window has passed.
    pub fn bucket(&mut self, key: &str, limit: u64) -> &mut Bucket {
        let now = self.now();
        let b = self.buckets.entry(key.to_owned()).or_insert(Bucket {
            limit,
            used: 0,
            reset: now + 3600,
        });
        if now >= b.reset {
            b.used = 0;
            b.reset = now + 3600;
        }
        b.limit = limit;
        b
    }
}
