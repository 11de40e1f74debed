//! Pull requests and commit statuses: the model behind `pulls/*` and the
//! statuses endpoints, and the handle's accessors and seeding helpers.
//!
//! A pull request follows its branches while it is open: whenever the head
//! or the base branch points somewhere new (through the API or a seeding
//! helper), the simulator notices it at once (`State::sync_pulls`), forgets
//! the mergeability it knew and starts the delay again. Mergeability is
//! reported as `null` until the [`MergeableDelay`] has passed, as GitHub
//! computes it in the background. A pull request whose head or base branch
//! is deleted is closed.

use std::collections::VecDeque;

use super::GitHubSim;
use super::merge::{self, DiffStats};
use super::state::{Actor, Repo, State};

/// How long a pull request's mergeability stays unknown (`null`) after it
/// was opened or its head or base branch last moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeableDelay {
    /// Known on the `n + 1`-th `GET` of the pull request (the first `n`
    /// answer `null`); `Reads(0)` is known at once, the create answer
    /// included. Deterministic whatever the clock does.
    Reads(u64),
    /// Known once this many seconds have passed on the simulator's clock
    /// ([`GitHubSim::advance_clock`]); `Seconds(0)` is known at once.
    Seconds(i64),
}

impl Default for MergeableDelay {
    /// `Reads(1)`: the first `GET` after a change answers `null`, the next
    /// one knows.
    fn default() -> Self {
        MergeableDelay::Reads(1)
    }
}

/// One pull request (head and base are branches of the same repository).
#[derive(Debug, Clone)]
pub(crate) struct PullRequest {
    pub id: u64,
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    pub draft: bool,
    /// Branch names, without `refs/heads/`.
    pub head: String,
    pub base: String,
    /// The branches' tips while open; frozen when closed or merged (the
    /// base's is then its tip before the merge).
    pub head_sha: String,
    pub base_sha: String,
    pub user: Actor,
    pub created_at: i64,
    pub updated_at: i64,
    pub closed_at: Option<i64>,
    pub merged_at: Option<i64>,
    pub merge_commit_sha: Option<String>,
    pub merged_by: Option<Actor>,
    pub open: bool,
    /// When the pull request was opened or its head or base last moved.
    pub moved_at: i64,
    /// `GET`s of the pull request since then.
    pub reads: u64,
    /// Mergeability as last computed; `None` while unknown.
    pub mergeable: Option<bool>,
}

/// One commit status.
#[derive(Debug, Clone)]
pub(crate) struct CommitStatus {
    pub id: u64,
    pub sha: String,
    /// `error`, `failure`, `pending` or `success`.
    pub state: String,
    pub context: String,
    pub description: Option<String>,
    pub target_url: Option<String>,
    pub creator: Actor,
    pub created_at: i64,
}

/// A repository's pull requests, statuses and merge settings.
#[derive(Debug, Clone, Default)]
pub(crate) struct RepoPulls {
    /// By number.
    pub list: Vec<PullRequest>,
    /// In creation order.
    pub statuses: Vec<CommitStatus>,
    /// `(base branch, status context)` pairs a merge requires.
    pub required_checks: Vec<(String, String)>,
    /// Answers for the next merges, first first: `(status, message)`.
    pub merge_failures: VecDeque<(u16, String)>,
}

/// What a pull request reports besides its stored fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PullView {
    pub mergeable: Option<bool>,
    /// `clean`, `dirty`, `blocked` or `unknown`.
    pub mergeable_state: &'static str,
    pub stats: DiffStats,
}

impl Repo {
    pub fn pull_index(&self, number: u64) -> Option<usize> {
        self.pulls.list.iter().position(|p| p.number == number)
    }

    /// The newest status of each context for a commit, newest first.
    /// Contexts compare case-insensitively, as on GitHub.
    pub fn latest_statuses(&self, sha: &str) -> Vec<&CommitStatus> {
        let mut seen = Vec::new();
        let mut out = Vec::new();
        for s in self.pulls.statuses.iter().rev() {
            if s.sha != sha {
                continue;
            }
            let key = s.context.to_ascii_lowercase();
            if !seen.contains(&key) {
                seen.push(key);
                out.push(s);
            }
        }
        out
    }

    /// The first required context of `branch` whose newest status on
    /// `sha` is not `success`.
    pub fn unmet_check(&self, branch: &str, sha: &str) -> Option<String> {
        let latest = self.latest_statuses(sha);
        self.pulls
            .required_checks
            .iter()
            .filter(|(b, _)| b == branch)
            .find(|(_, ctx)| {
                !latest
                    .iter()
                    .any(|s| s.context.eq_ignore_ascii_case(ctx) && s.state == "success")
            })
            .map(|(_, ctx)| ctx.clone())
    }

    /// A pull request's view now. A `GET` (`count_read`) counts towards
    /// [`MergeableDelay::Reads`]; once the delay has passed, mergeability
    /// is computed (and kept until a branch moves).
    pub fn pull_view(
        &mut self,
        idx: usize,
        delay: MergeableDelay,
        now: i64,
        count_read: bool,
    ) -> PullView {
        let p = &self.pulls.list[idx];
        let (base, head, open) = (p.base_sha.clone(), p.head_sha.clone(), p.open);
        let stats = merge::diff_stats(&self.store, &base, &head);
        if !open {
            return PullView {
                mergeable: None,
                mergeable_state: "unknown",
                stats,
            };
        }
        let reads = p.reads;
        let ready = match delay {
            MergeableDelay::Reads(n) => reads >= n,
            MergeableDelay::Seconds(s) => now - p.moved_at >= s,
        };
        if count_read {
            self.pulls.list[idx].reads += 1;
        }
        if !ready {
            return PullView {
                mergeable: None,
                mergeable_state: "unknown",
                stats,
            };
        }
        let known = match self.pulls.list[idx].mergeable {
            Some(m) => m,
            None => {
                let m = merge::merge_commits(&mut self.store, &base, &head).is_ok();
                self.pulls.list[idx].mergeable = Some(m);
                m
            }
        };
        let branch = self.pulls.list[idx].base.clone();
        let mergeable_state = if !known {
            "dirty"
        } else if self.unmet_check(&branch, &head).is_some() {
            "blocked"
        } else {
            "clean"
        };
        PullView {
            mergeable: Some(known),
            mergeable_state,
            stats,
        }
    }
}

/// The combined state of the newest status per context: `failure` if any
/// is `error` or `failure`, else `pending` if there is none or any is
/// `pending`, else `success`.
pub(crate) fn combined_state(latest: &[&CommitStatus]) -> &'static str {
    if latest
        .iter()
        .any(|s| s.state == "failure" || s.state == "error")
    {
        "failure"
    } else if latest.is_empty() || latest.iter().any(|s| s.state == "pending") {
        "pending"
    } else {
        "success"
    }
}

impl State {
    /// Brings every open pull request up to date with its branches: a
    /// moved head or base restarts the mergeability delay, a deleted one
    /// closes the pull request. Called after every request and every
    /// change through the handle.
    pub(crate) fn sync_pulls(&mut self) {
        let now = self.now();
        for r in self.repos.values_mut() {
            for p in r.pulls.list.iter_mut().filter(|p| p.open) {
                let head = r.refs.get(&format!("refs/heads/{}", p.head));
                let base = r.refs.get(&format!("refs/heads/{}", p.base));
                match (head, base) {
                    (Some(h), Some(b)) => {
                        if *h != p.head_sha || *b != p.base_sha {
                            p.head_sha.clone_from(h);
                            p.base_sha.clone_from(b);
                            p.moved_at = now;
                            p.reads = 0;
                            p.mergeable = None;
                            p.updated_at = now;
                        }
                    }
                    _ => {
                        p.open = false;
                        p.closed_at = Some(now);
                        p.updated_at = now;
                    }
                }
            }
        }
    }
}

/// A pull request as the simulator holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullSnapshot {
    /// Number (shared with issues).
    pub number: u64,
    /// Title.
    pub title: String,
    /// `open` or `closed`.
    pub state: String,
    /// Whether it was merged.
    pub merged: bool,
    /// Head branch name.
    pub head_ref: String,
    /// Head commit (the branch tip while open, the merged commit after).
    pub head_sha: String,
    /// Base branch name.
    pub base_ref: String,
    /// Base commit (the branch tip while open, the tip before the merge
    /// after).
    pub base_sha: String,
    /// Mergeability as last computed: `None` until a `GET` after the
    /// delay computed it, and again after a branch moved.
    pub mergeable: Option<bool>,
    /// The merge commit, once merged.
    pub merge_commit_sha: Option<String>,
}

/// One commit status, as the combined status lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusSnapshot {
    /// Context, as sent.
    pub context: String,
    /// `error`, `failure`, `pending` or `success`.
    pub state: String,
    /// Description, if any.
    pub description: Option<String>,
    /// Target URL, if any.
    pub target_url: Option<String>,
}

/// The combined status of a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CombinedStatus {
    /// The commit.
    pub sha: String,
    /// `success`, `pending` or `failure`.
    pub state: String,
    /// The newest status of each context, newest first.
    pub statuses: Vec<StatusSnapshot>,
}

impl GitHubSim {
    /// Sets how long every pull request's mergeability stays `null` after
    /// it was opened or its head or base moved (default
    /// [`MergeableDelay::Reads(1)`](MergeableDelay::Reads)). Applies to
    /// pull requests already open too.
    pub fn set_mergeable_delay(&self, delay: MergeableDelay) {
        self.with(|st| st.mergeable_delay = delay);
    }

    /// Requires a `success` status of `context` on a pull request's head
    /// commit before it can merge into `branch` (a required status check
    /// of a protected branch). Returns whether the repository exists.
    pub fn require_status_check(
        &self,
        owner: &str,
        repo: &str,
        branch: &str,
        context: &str,
    ) -> bool {
        self.with(|st| {
            let Some(r) = st.repo_mut(owner, repo) else {
                return false;
            };
            let pair = (branch.to_owned(), context.to_owned());
            if !r.pulls.required_checks.contains(&pair) {
                r.pulls.required_checks.push(pair);
            }
            true
        })
    }

    /// Makes the next merge request of this repository (one that names an
    /// existing pull request, with a token that may merge) fail with
    /// `status` and `message` and change nothing. Several calls queue up.
    /// Returns whether the repository exists.
    pub fn fail_next_merge(&self, owner: &str, repo: &str, status: u16, message: &str) -> bool {
        self.with(|st| {
            let Some(r) = st.repo_mut(owner, repo) else {
                return false;
            };
            r.pulls
                .merge_failures
                .push_back((status, message.to_owned()));
            true
        })
    }

    /// Every pull request, by number.
    pub fn pulls(&self, owner: &str, repo: &str) -> Vec<PullSnapshot> {
        self.with(|st| {
            st.repo(owner, repo)
                .map(|r| {
                    r.pulls
                        .list
                        .iter()
                        .map(|p| PullSnapshot {
                            number: p.number,
                            title: p.title.clone(),
                            state: if p.open { "open" } else { "closed" }.to_owned(),
                            merged: p.merged_at.is_some(),
                            head_ref: p.head.clone(),
                            head_sha: p.head_sha.clone(),
                            base_ref: p.base.clone(),
                            base_sha: p.base_sha.clone(),
                            mergeable: p.mergeable,
                            merge_commit_sha: p.merge_commit_sha.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// The combined status of a commit-ish (commit id, branch, tag or
    /// ref); `None` when it does not resolve.
    pub fn combined_status(
        &self,
        owner: &str,
        repo: &str,
        commitish: &str,
    ) -> Option<CombinedStatus> {
        self.with(|st| {
            let r = st.repo(owner, repo)?;
            let sha = r.resolve_commitish(commitish)?;
            let latest = r.latest_statuses(&sha);
            Some(CombinedStatus {
                state: combined_state(&latest).to_owned(),
                statuses: latest
                    .iter()
                    .map(|s| StatusSnapshot {
                        context: s.context.clone(),
                        state: s.state.clone(),
                        description: s.description.clone(),
                        target_url: s.target_url.clone(),
                    })
                    .collect(),
                sha,
            })
        })
    }

    /// Posts a commit status as a CI service would (creator `ci-service`,
    /// a `User`), without a token or a log entry. Returns whether the
    /// commit exists.
    ///
    /// # Panics
    /// When `state` is not `error`, `failure`, `pending` or `success`.
    pub fn set_commit_status(
        &self,
        owner: &str,
        repo: &str,
        sha: &str,
        context: &str,
        state: &str,
    ) -> bool {
        assert!(
            ["error", "failure", "pending", "success"].contains(&state),
            "status state {state:?} is not error, failure, pending or success"
        );
        self.with(|st| {
            let now = st.now();
            let id = st.next_id();
            let Some(r) = st.repo_mut(owner, repo) else {
                return false;
            };
            let sha = sha.to_ascii_lowercase();
            if r.store.commit(&sha).is_none() {
                return false;
            }
            r.pulls.statuses.push(CommitStatus {
                id,
                sha,
                state: state.to_owned(),
                context: context.to_owned(),
                description: None,
                target_url: None,
                creator: Actor {
                    login: "ci-service".to_owned(),
                    id: 60_000,
                    bot: false,
                },
                created_at: now,
            });
            true
        })
    }
}
