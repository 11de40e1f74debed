//! A stateful GitHub REST API simulator on loopback.
//!
//! [`GitHubSim::start`] binds `127.0.0.1:0` and serves the operations in
//! [`OPERATIONS`] with GitHub's semantics: git objects with real SHA-1 ids,
//! refs with fast-forward enforcement, file writes through the contents
//! API, issues, comments and labels with `Link` pagination, pull requests
//! (mergeability known after a configurable delay, merge commits, required
//! status checks) and commit statuses (both behind the `platform` feature),
//! deployment environments with their branch policies, repository rulesets
//! (enforced on ref updates), App JWTs and installation tokens that enforce
//! their permissions, rate-limit headers, and a scriptable [`FaultPlan`].
//! Tests read the state and the request log through the handle. See `docs/github-simulator.md`.
//!
//! ```no_run
//! # async fn demo() {
//! use benchops_testkit::sim::GitHubSim;
//! let sim = GitHubSim::start().await;
//! sim.create_repo("acme", "bench");
//! let iid = sim.installation_id("acme").expect("installed");
//! let token = sim.mint_token(iid, &[("contents", "write")], None);
//! // point the client at sim.base_url() with `token`
//! # let _ = token;
//! # }
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

mod admin;
pub mod auth;
pub mod clock;
pub mod faults;
pub mod git;
mod handlers;
#[cfg(feature = "platform")]
pub mod merge;
#[cfg(feature = "platform")]
mod pulls;
pub mod routes;
mod server;
mod shapes;
mod state;

pub use admin::EnvironmentSnapshot;
pub use faults::{Fault, FaultPlan, FaultRule, Matcher};
#[cfg(feature = "platform")]
pub use pulls::{CombinedStatus, MergeableDelay, PullSnapshot, StatusSnapshot};
pub use routes::{OPERATIONS, Operation};
pub use state::{AuthKind, LoggedRequest};

use auth::{Access, Permissions};
use git::{Change, Commit, Object, Signature};
use handlers::Shared;
use state::{Actor, App, Installation, Repo, State};

/// The simulated App's id unless configured otherwise.
pub const DEFAULT_APP_ID: u64 = 424_242;
/// The simulated App's slug (its bot is `benchops-test[bot]`).
pub const DEFAULT_APP_SLUG: &str = "benchops-test";

/// How the simulator starts.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The App id JWTs must carry in `iss`.
    pub app_id: u64,
    /// The App slug.
    pub app_slug: String,
    /// Permissions of every installation created by
    /// [`GitHubSim::create_repo`] (default: contents and issues write,
    /// metadata read).
    pub installation_permissions: Permissions,
    /// The primary rate limit per installation (default 5000 per hour).
    pub rate_limit: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            app_id: DEFAULT_APP_ID,
            app_slug: DEFAULT_APP_SLUG.to_owned(),
            installation_permissions: auth::permissions(&[
                ("contents", "write"),
                ("issues", "write"),
                ("metadata", "read"),
            ]),
            rate_limit: 5000,
        }
    }
}

/// A token as the simulator sees it (without its value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    /// Ordinal, from 1.
    pub id: u64,
    /// Installation.
    pub installation_id: u64,
    /// Permission name to `read`/`write`.
    pub permissions: BTreeMap<String, String>,
    /// Repository names the token is limited to, if any.
    pub repositories: Option<Vec<String>>,
    /// Unix seconds.
    pub expires_at: i64,
    /// Revoked with `DELETE /installation/token`.
    pub revoked: bool,
}

/// An issue as the simulator holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueSnapshot {
    /// Issue number.
    pub number: u64,
    /// Title.
    pub title: String,
    /// Body.
    pub body: Option<String>,
    /// `open` or `closed`.
    pub state: String,
    /// `completed`, `not_planned`, `reopened`, ...
    pub state_reason: Option<String>,
    /// Label names.
    pub labels: Vec<String>,
    /// Comment bodies, oldest first.
    pub comments: Vec<String>,
    /// Its author's login (`<slug>[bot]` for issues made with an
    /// installation token).
    pub author: String,
}

/// A comment as the simulator holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentSnapshot {
    /// Its id.
    pub id: u64,
    /// Its author's login (`<slug>[bot]` for comments made with an
    /// installation token).
    pub author: String,
    /// Whether the author is a bot.
    pub bot: bool,
    /// Its body.
    pub body: String,
}

/// Where handoff refs live: the execution environment pushes one sealed
/// record per ref under this prefix.
pub const HANDOFF_REF_PREFIX: &str = "refs/heads/benchmark-result/";

/// A label as the simulator holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelSnapshot {
    /// Name.
    pub name: String,
    /// Six hex digits.
    pub color: String,
    /// Description.
    pub description: Option<String>,
}

/// A running simulator. Dropping it stops the server.
#[derive(Debug)]
pub struct GitHubSim {
    shared: Arc<Shared>,
    addr: SocketAddr,
    config: SimConfig,
    task: JoinHandle<()>,
}

impl Drop for GitHubSim {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl GitHubSim {
    /// Starts a simulator with the default configuration.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start() -> GitHubSim {
        Self::start_with(SimConfig::default()).await
    }

    /// Starts a simulator with `config`.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start_with(config: SimConfig) -> GitHubSim {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port for the GitHub simulator");
        let addr = listener.local_addr().expect("bound socket has an address");
        let salt = format!(
            "{addr}:{:?}",
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)
        );
        let app = App {
            id: config.app_id,
            slug: config.app_slug.clone(),
            client_id: format!("Iv1.sim{:010}", config.app_id),
            bot_user_id: 900_000 + config.app_id % 100_000,
            permissions: config.installation_permissions.clone(),
            created_at: 0,
        };
        let mut st = State::new(app, salt);
        st.app.created_at = st.now();
        st.rate_limit = config.rate_limit;
        let shared = Arc::new(Shared {
            state: Mutex::new(st),
            api: format!("http://{addr}"),
            public_key: auth::test_public_key(),
        });
        let task = tokio::spawn(server::serve(listener, shared.clone()));
        GitHubSim {
            shared,
            addr,
            config,
            task,
        }
    }

    /// Runs `f` on the state, then brings open pull requests up to date
    /// with whatever `f` changed.
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut st = self.shared.lock();
        let out = f(&mut st);
        #[cfg(feature = "platform")]
        st.sync_pulls();
        out
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash: the value for
    /// `GITHUB_API_URL`.
    pub fn base_url(&self) -> String {
        self.shared.api.clone()
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The App id.
    pub fn app_id(&self) -> u64 {
        self.config.app_id
    }

    /// A valid App JWT at the simulator's clock (`iat` 60 s back, `exp`
    /// 9 minutes ahead), signed with the test key.
    pub fn app_jwt(&self) -> String {
        let now = self.now();
        auth::app_jwt(self.config.app_id, now - 60, now + 540)
    }

    // ---- clock -----------------------------------------------------------

    /// The simulator's time, in Unix seconds.
    pub fn now(&self) -> i64 {
        self.with(|st| st.now())
    }

    /// Freezes the clock at a Unix time.
    pub fn set_now(&self, unix: i64) {
        self.with(|st| st.clock = clock::Clock::Fixed(unix));
    }

    /// Moves the clock by `secs` (tokens expire, rate-limit windows reset).
    pub fn advance_clock(&self, secs: i64) {
        self.with(|st| st.clock.advance(secs));
    }

    // ---- repositories and installations ------------------------------------

    /// Creates `owner/name` with one commit on `main` (a README), installing
    /// the App on `owner` if it is not yet. Returns the repository id.
    pub fn create_repo(&self, owner: &str, name: &str) -> u64 {
        let id = self.create_empty_repo(owner, name);
        self.commit_files(
            owner,
            name,
            "main",
            &[("README.md", format!("# {name}\n").as_bytes())],
            "Initial commit\n",
        );
        id
    }

    /// Creates `owner/name` with no commits (git endpoints answer 409
    /// "Git Repository is empty."). Returns the repository id.
    pub fn create_empty_repo(&self, owner: &str, name: &str) -> u64 {
        let perms = self.config.installation_permissions.clone();
        self.with(|st| {
            let now = st.now();
            let installation_id = match st.installation_for_account(owner) {
                Some(i) => i.id,
                None => {
                    let n = st.installations.len() as u64 + 1;
                    let i = Installation {
                        id: 10_000 + n,
                        account: owner.to_owned(),
                        account_id: 20_000 + n,
                        permissions: perms,
                        repository_selection: "all".to_owned(),
                        created_at: now,
                    };
                    st.installations.insert(i.id, i);
                    10_000 + n
                }
            };
            let id = st.next_id();
            st.repos.insert(
                format!("{owner}/{name}").to_ascii_lowercase(),
                Repo {
                    id,
                    owner: owner.to_owned(),
                    name: name.to_owned(),
                    installation_id,
                    default_branch: "main".to_owned(),
                    created_at: now,
                    store: git::ObjectStore::default(),
                    refs: BTreeMap::new(),
                    issues: Vec::new(),
                    labels: Vec::new(),
                    environments: Vec::new(),
                    rulesets: Vec::new(),
                    #[cfg(feature = "platform")]
                    pulls: pulls::RepoPulls::default(),
                },
            );
            id
        })
    }

    /// The installation on `owner`.
    pub fn installation_id(&self, owner: &str) -> Option<u64> {
        self.with(|st| st.installation_for_account(owner).map(|i| i.id))
    }

    /// Replaces an installation's permissions.
    pub fn set_installation_permissions(&self, installation_id: u64, perms: &[(&str, &str)]) {
        let perms = auth::permissions(perms);
        self.with(|st| {
            if let Some(i) = st.installations.get_mut(&installation_id) {
                i.permissions = perms;
            }
        });
    }

    // ---- tokens and rate limits ------------------------------------------------

    /// Mints an installation token directly (no JWT round trip), limited to
    /// `repositories` when given. `metadata: read` is always added.
    pub fn mint_token(
        &self,
        installation_id: u64,
        perms: &[(&str, &str)],
        repositories: Option<&[&str]>,
    ) -> String {
        let mut perms = auth::permissions(perms);
        perms.entry("metadata".to_owned()).or_insert(Access::Read);
        let repos = repositories.map(|r| r.iter().map(|n| n.to_ascii_lowercase()).collect());
        self.with(|st| st.mint_token(installation_id, perms, repos).value.clone())
    }

    /// Every token minted so far (values are not exposed).
    pub fn tokens(&self) -> Vec<TokenInfo> {
        self.with(|st| {
            st.tokens
                .iter()
                .map(|t| TokenInfo {
                    id: t.id,
                    installation_id: t.installation_id,
                    permissions: t
                        .permissions
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_str().to_owned()))
                        .collect(),
                    repositories: t.repositories.clone(),
                    expires_at: t.expires_at,
                    revoked: t.revoked,
                })
                .collect()
        })
    }

    /// Sets the primary rate limit per hour for installations and the App.
    pub fn set_rate_limit(&self, limit: u64) {
        self.with(|st| st.rate_limit = limit);
    }

    /// Sets the most entries and bytes one tree listing returns before it
    /// is cut short with `truncated: true` (GitHub's: 100,000 entries and
    /// 7 MB, the default).
    pub fn set_tree_limits(&self, entries: usize, bytes: usize) {
        self.with(|st| st.tree_limits = (entries, bytes));
    }

    /// Requests counted against an installation's current window.
    pub fn rate_limit_used(&self, installation_id: u64) -> u64 {
        self.with(|st| {
            st.buckets
                .get(&format!("installation:{installation_id}"))
                .map_or(0, |b| b.used)
        })
    }

    // ---- faults and the request log ------------------------------------------

    /// Replaces the fault plan (rule counters start from zero).
    pub fn set_fault_plan(&self, plan: FaultPlan) {
        self.with(|st| {
            st.faults = plan
                .rules
                .into_iter()
                .map(|rule| faults::Armed { rule, seen: 0 })
                .collect();
        });
    }

    /// Adds one rule to the fault plan.
    pub fn push_fault(&self, rule: FaultRule) {
        self.with(|st| st.faults.push(faults::Armed { rule, seen: 0 }));
    }

    /// Removes every fault rule.
    pub fn clear_faults(&self) {
        self.with(|st| st.faults.clear());
    }

    /// The request log, in arrival order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        let mut log = self.with(|st| st.log.clone());
        log.sort_by_key(|e| e.seq);
        log
    }

    /// Empties the request log.
    pub fn clear_requests(&self) {
        self.with(|st| st.log.clear());
    }

    // ---- git state ---------------------------------------------------------------

    /// The commit a ref points to (`heads/x` or `refs/heads/x`).
    pub fn ref_sha(&self, owner: &str, repo: &str, name: &str) -> Option<String> {
        let full = if name.starts_with("refs/") {
            name.to_owned()
        } else {
            format!("refs/{name}")
        };
        self.with(|st| st.repo(owner, repo)?.refs.get(&full).cloned())
    }

    /// A commit object.
    pub fn commit(&self, owner: &str, repo: &str, sha: &str) -> Option<Commit> {
        self.with(|st| st.repo(owner, repo)?.store.commit(sha).cloned())
    }

    /// A file's bytes at a branch, tag, ref or commit.
    pub fn file(&self, owner: &str, repo: &str, commitish: &str, path: &str) -> Option<Vec<u8>> {
        self.with(|st| {
            let r = st.repo(owner, repo)?;
            let c = r.resolve_commitish(commitish)?;
            let tree = &r.store.commit(&c)?.tree;
            let e = r.store.lookup_path(tree, path)?;
            r.store.blob(&e.sha).map(<[u8]>::to_vec)
        })
    }

    /// Every file path (blobs only) at a commit-ish, in git order.
    pub fn file_paths(&self, owner: &str, repo: &str, commitish: &str) -> Vec<String> {
        self.with(|st| {
            let Some(r) = st.repo(owner, repo) else {
                return Vec::new();
            };
            let Some(tree) = r
                .resolve_commitish(commitish)
                .and_then(|c| r.store.commit(&c).map(|c| c.tree.clone()))
            else {
                return Vec::new();
            };
            r.store
                .walk(&tree)
                .into_iter()
                .filter(|(_, e)| e.kind() == git::ObjectKind::Blob)
                .map(|(p, _)| p)
                .collect()
        })
    }

    /// Commits files on top of `branch` (created when missing) directly in
    /// the state, for seeding. Returns the new commit id.
    ///
    /// # Panics
    /// When the repository does not exist or a path is invalid.
    pub fn commit_files(
        &self,
        owner: &str,
        repo: &str,
        branch: &str,
        files: &[(&str, &[u8])],
        message: &str,
    ) -> String {
        self.with(|st| {
            let now = st.now();
            let r = st.repo_mut(owner, repo).expect("repository exists");
            let ref_name = format!("refs/heads/{branch}");
            let parent = r.refs.get(&ref_name).cloned();
            let base = parent
                .as_ref()
                .and_then(|p| r.store.commit(p))
                .map(|c| c.tree.clone());
            let changes: Vec<(String, Change)> = files
                .iter()
                .map(|(path, bytes)| {
                    let sha = r.store.insert_blob(bytes.to_vec());
                    (
                        (*path).to_owned(),
                        Change::Set {
                            mode: "100644".to_owned(),
                            sha,
                        },
                    )
                })
                .collect();
            let tree = git::build_tree(&mut r.store, base.as_deref(), &changes)
                .expect("seed paths are valid");
            let sig = Signature {
                name: "benchops-sim".to_owned(),
                email: "sim@example.invalid".to_owned(),
                time: now,
                offset_minutes: 0,
            };
            let sha = r.store.insert(Object::Commit(Commit {
                tree,
                parents: parent.into_iter().collect(),
                author: sig.clone(),
                committer: sig,
                message: message.to_owned(),
            }));
            r.refs.insert(ref_name, sha.clone());
            sha
        })
    }

    /// Points `ref_name` (`heads/x` or `refs/heads/x`) at a new root commit
    /// (no parent) whose tree holds exactly `files`, creating or
    /// overwriting the ref, as a push by another party with its own
    /// credentials would. Returns the commit id.
    ///
    /// # Panics
    /// When the repository does not exist or a path is invalid.
    pub fn push_ref(
        &self,
        owner: &str,
        repo: &str,
        ref_name: &str,
        files: &[(&str, &[u8])],
        message: &str,
    ) -> String {
        let full = if ref_name.starts_with("refs/") {
            ref_name.to_owned()
        } else {
            format!("refs/{ref_name}")
        };
        self.with(|st| {
            let now = st.now();
            let r = st.repo_mut(owner, repo).expect("repository exists");
            let changes: Vec<(String, Change)> = files
                .iter()
                .map(|(path, bytes)| {
                    let sha = r.store.insert_blob(bytes.to_vec());
                    (
                        (*path).to_owned(),
                        Change::Set {
                            mode: "100644".to_owned(),
                            sha,
                        },
                    )
                })
                .collect();
            let tree = git::build_tree(&mut r.store, None, &changes).expect("seed paths are valid");
            let sig = Signature {
                name: "execution-environment".to_owned(),
                email: "exec@example.invalid".to_owned(),
                time: now,
                offset_minutes: 0,
            };
            let sha = r.store.insert(Object::Commit(Commit {
                tree,
                parents: Vec::new(),
                author: sig.clone(),
                committer: sig,
                message: message.to_owned(),
            }));
            r.refs.insert(full, sha.clone());
            sha
        })
    }

    /// Pushes a handoff ref `refs/heads/benchmark-result/<name>` holding one
    /// file `file_name` (a sealed record is `<hex>.json`) at the root of
    /// its commit, the layout `benchops-github`'s `handoff` module reads.
    /// Returns the commit id.
    pub fn push_handoff_ref(
        &self,
        owner: &str,
        repo: &str,
        name: &str,
        file_name: &str,
        bytes: &[u8],
    ) -> String {
        self.push_ref(
            owner,
            repo,
            &format!("{HANDOFF_REF_PREFIX}{name}"),
            &[(file_name, bytes)],
            &format!("handoff {file_name}\n"),
        )
    }

    /// Deletes a ref (`heads/x` or `refs/heads/x`) directly, as another
    /// party would. Returns whether it existed.
    pub fn delete_ref(&self, owner: &str, repo: &str, name: &str) -> bool {
        let full = if name.starts_with("refs/") {
            name.to_owned()
        } else {
            format!("refs/{name}")
        };
        self.with(|st| {
            st.repo_mut(owner, repo)
                .is_some_and(|r| r.refs.remove(&full).is_some())
        })
    }

    /// Every ref whose full name starts with `prefix` (`refs/heads/`), with
    /// the commit it points to, sorted by name.
    pub fn refs(&self, owner: &str, repo: &str, prefix: &str) -> Vec<(String, String)> {
        self.with(|st| {
            st.repo(owner, repo)
                .map(|r| {
                    r.refs
                        .iter()
                        .filter(|(n, _)| n.starts_with(prefix))
                        .map(|(n, s)| (n.clone(), s.clone()))
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// Moves a ref forward by one commit that changes no file, as another
    /// writer would (what the `ConcurrentRefMove` fault does). Returns the
    /// new tip, or `None` when the ref does not exist.
    pub fn advance_ref(&self, owner: &str, repo: &str, name: &str) -> Option<String> {
        let full = if name.starts_with("refs/") {
            name.to_owned()
        } else {
            format!("refs/{name}")
        };
        self.with(|st| {
            let now = st.now();
            st.repo_mut(owner, repo)?
                .advance_ref(&full, now, "concurrent update (simulator)\n")
        })
    }

    // ---- issues and labels ------------------------------------------------------------

    /// Every issue, by number.
    pub fn issues(&self, owner: &str, repo: &str) -> Vec<IssueSnapshot> {
        self.with(|st| {
            let Some(r) = st.repo(owner, repo) else {
                return Vec::new();
            };
            let mut out: Vec<IssueSnapshot> = r
                .issues
                .iter()
                .map(|i| IssueSnapshot {
                    number: i.number,
                    title: i.title.clone(),
                    body: i.body.clone(),
                    state: if i.open { "open" } else { "closed" }.to_owned(),
                    state_reason: i.state_reason.clone(),
                    labels: i
                        .labels
                        .iter()
                        .filter_map(|id| r.label_by_id(*id).map(|l| l.name.clone()))
                        .collect(),
                    comments: i.comments.iter().map(|c| c.body.clone()).collect(),
                    author: i.user.login.clone(),
                })
                .collect();
            out.sort_by_key(|i| i.number);
            out
        })
    }

    /// Every comment of an issue, oldest first, with its author.
    pub fn comments(&self, owner: &str, repo: &str, number: u64) -> Vec<CommentSnapshot> {
        self.with(|st| {
            st.repo(owner, repo)
                .and_then(|r| r.issues.iter().find(|i| i.number == number))
                .map(|i| {
                    i.comments
                        .iter()
                        .map(|c| CommentSnapshot {
                            id: c.id,
                            author: c.user.login.clone(),
                            bot: c.user.bot,
                            body: c.body.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// Comments on an issue as a person (`login`, a `User`), the way
    /// someone would in the web interface: no token, no request log entry.
    /// Returns the comment id, or `None` when the issue does not exist.
    pub fn comment_as_user(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        login: &str,
        body: &str,
    ) -> Option<u64> {
        self.with(|st| {
            let now = st.now();
            let id = st.next_id();
            let user = Actor {
                login: login.to_owned(),
                id: 50_000 + id,
                bot: false,
            };
            let issue = st
                .repo_mut(owner, repo)?
                .issues
                .iter_mut()
                .find(|i| i.number == number)?;
            issue.comments.push(state::Comment {
                id,
                body: body.to_owned(),
                user,
                created_at: now,
                updated_at: now,
            });
            issue.updated_at = now;
            Some(id)
        })
    }

    /// Opens an issue as a person (`login`, a `User`), the way someone
    /// would in the web interface: no token, no request log entry. Labels
    /// that do not exist are created (grey). Returns the issue number, or
    /// `None` when the repository does not exist.
    pub fn open_issue_as_user(
        &self,
        owner: &str,
        repo: &str,
        login: &str,
        title: &str,
        body: &str,
        labels: &[&str],
    ) -> Option<u64> {
        self.with(|st| {
            let now = st.now();
            let id = st.next_id();
            let ids: Vec<u64> = labels.iter().map(|_| st.next_id()).collect();
            let user = Actor {
                login: login.to_owned(),
                id: 50_000 + id,
                bot: false,
            };
            let r = st.repo_mut(owner, repo)?;
            let labels = labels
                .iter()
                .zip(ids)
                .map(|(name, fresh)| Self::label_id(r, name, fresh))
                .collect();
            let number = r.next_number();
            r.issues.push(state::Issue {
                id,
                number,
                title: title.to_owned(),
                body: Some(body.to_owned()),
                open: true,
                state_reason: None,
                labels,
                user,
                created_at: now,
                updated_at: now,
                closed_at: None,
                closed_by: None,
                comments: Vec::new(),
            });
            Some(number)
        })
    }

    /// Adds a label to an issue as a person would in the web interface
    /// (no token, no request log entry), creating the label (grey) if it
    /// does not exist. Returns whether the issue exists.
    pub fn add_label_as_user(&self, owner: &str, repo: &str, number: u64, label: &str) -> bool {
        self.with(|st| {
            let now = st.now();
            let fresh = st.next_id();
            let Some(r) = st.repo_mut(owner, repo) else {
                return false;
            };
            if !r.issues.iter().any(|i| i.number == number) {
                return false;
            }
            let id = Self::label_id(r, label, fresh);
            let Some(issue) = r.issues.iter_mut().find(|i| i.number == number) else {
                return false;
            };
            if !issue.labels.contains(&id) {
                issue.labels.push(id);
            }
            issue.updated_at = now;
            true
        })
    }

    /// Sets an issue's state (`open` or `closed`) and state reason as a
    /// person would in the web interface (no token, no request log entry).
    /// Returns whether the issue exists.
    pub fn set_issue_state_as_user(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        state: &str,
        reason: Option<&str>,
    ) -> bool {
        self.with(|st| {
            let now = st.now();
            let Some(r) = st.repo_mut(owner, repo) else {
                return false;
            };
            let Some(issue) = r.issues.iter_mut().find(|i| i.number == number) else {
                return false;
            };
            issue.open = state == "open";
            issue.state_reason = reason.map(str::to_owned);
            issue.closed_at = (!issue.open).then_some(now);
            issue.updated_at = now;
            true
        })
    }

    /// Replaces an issue's body as a person editing it in the web interface
    /// would (no token, no request log entry): what an editor saves, line
    /// endings and trailing whitespace included. Returns whether the issue
    /// exists.
    pub fn set_issue_body_as_user(&self, owner: &str, repo: &str, number: u64, body: &str) -> bool {
        self.with(|st| {
            let now = st.now();
            let Some(r) = st.repo_mut(owner, repo) else {
                return false;
            };
            let Some(issue) = r.issues.iter_mut().find(|i| i.number == number) else {
                return false;
            };
            issue.body = Some(body.to_owned());
            issue.updated_at = now;
            true
        })
    }

    /// The id of the label `name`, created (grey) with id `fresh` if
    /// missing.
    fn label_id(r: &mut Repo, name: &str, fresh: u64) -> u64 {
        if let Some(l) = r.label_by_name(name) {
            return l.id;
        }
        r.labels.push(state::Label {
            id: fresh,
            name: name.to_owned(),
            color: "ededed".to_owned(),
            description: None,
            default: false,
        });
        fresh
    }

    /// The login of the App's bot, `<slug>[bot]`: the author of every issue
    /// and comment made with an installation token.
    pub fn bot_login(&self) -> String {
        format!("{}[bot]", self.config.app_slug)
    }

    /// Every label, in creation order.
    pub fn labels(&self, owner: &str, repo: &str) -> Vec<LabelSnapshot> {
        self.with(|st| {
            st.repo(owner, repo)
                .map(|r| {
                    r.labels
                        .iter()
                        .map(|l| LabelSnapshot {
                            name: l.name.clone(),
                            color: l.color.clone(),
                            description: l.description.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
    }
}
