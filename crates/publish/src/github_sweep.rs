//! `benchops-publish sweep --github`: the publisher's sweep against a GitHub
//! repository, with one short-lived installation token per phase.
//!
//! The phases are those of the local sweep ([`crate::sweep`]); only the
//! history store and the issue tracker differ.
//!
//! 1. **Validate** every handoff with the core verifier, the digest taken
//!    from the file name. Handoffs come from two sources, either or both:
//!    - the handoff directory (`--handoff DIR`, `*.json` as
//!      `benchops-exec bench seal` writes them), validated before any token
//!      is minted. Invalid ones are copied to `<DIR>/quarantine/` with a
//!      `.why.txt` (the local sweep's code) and never persisted; their
//!      source file is left in place;
//!    - handoff refs (`--handoff-refs`): every `refs/heads/benchmark-result/*`
//!      in the repository, which the execution environment pushes with its
//!      own credentials. They are read in the contents phase (its token's
//!      `contents: write` includes read), each at the commit it was listed
//!      at, with the layout of [`benchops_github::handoff`]: the commit's
//!      tree holds exactly one file, `<hex>.json`, at its root. An invalid
//!      handoff ref (wrong layout, or a record that does not verify) is
//!      **left in place** as its own quarantine and reported (summary,
//!      receipt, [`RefOutcome::Quarantined`]); it is never persisted and
//!      never deleted.
//! 2. **Persist**, with a **contents-phase** installation token minted just
//!    in time (App JWT → the repository's installation → a token limited to
//!    the repository with `contents: write`), revoked when the phase ends,
//!    also when it fails. One tree with inline contents is built over the
//!    current tip of `benchmark-history`: the new records at
//!    [`record_path`], the receipt at `receipts/<yyyy>/<mm>/<hex>.json` and
//!    the baseline pointers the manifest's `last-clean` lanes allow (the
//!    rules of [`crate::history`]). Then one commit, and the ref moves with
//!    `force: false` (the client cannot express anything else).
//!    - The create-only rules are checked against the tip every attempt
//!      builds on: the tip's tree is listed with `get_tree_recursive`
//!      (a truncated listing stops the sweep), and every record path that
//!      already exists is read with `get_file` and compared byte for byte.
//!      Same bytes: a no-op. Other bytes: [`Cause::Conflict`], which stops
//!      the sweep before anything is written and is not retryable.
//!    - A lost race (`RefMoved`, or "Reference already exists" when the
//!      branch was created meanwhile) re-reads the tip, re-checks and
//!      rebuilds, at most [`MAX_ATTEMPTS`] builds in all.
//!    - A missing branch is created with `create_ref` on a first commit.
//!    - Nothing new (every record present, no pointer moves): a receipt-only
//!      commit when the sweep saw at least one handoff (valid, already
//!      present or invalid), so every such sweep leaves its receipt; no
//!      commit when it saw none (nothing to record; an idle scheduled run
//!      does not grow the branch).
//!    - **Consumed handoff refs are deleted after the ref update
//!      succeeded** (or after finding every record already present), and
//!      only valid refs whose record is now in history: each is read again
//!      and deleted only if it still points at the commit that was read
//!      (a ref that moved is left for the next sweep; GitHub has no
//!      compare-and-swap on deletion, so a push between that read and the
//!      delete is the one window left). A ref already gone counts as
//!      deleted. A deletion that fails is reported
//!      ([`RefOutcome::DeleteFailed`]) and does not stop the sweep: its
//!      record is safe in history, and the next sweep finds it present (a
//!      no-op) and deletes the ref. A crash between the persist and the
//!      deletions converges the same way.
//!    - Reading history needs `contents: read`, which the issues-phase token
//!      does not have. So the history the reconcile works on is read at the
//!      end of this phase, at the tip the persist produced: every
//!      `results/` path of the tree, each record re-verified against the
//!      digest in its name and placed by lane and slot (records this sweep
//!      just wrote or compared are not read again).
//! 3. **Reconcile**, with an **issues-phase** token (minted, then revoked,
//!    also on failure). Issues carrying the manifest's drift label are
//!    listed in every state; for each issue with a drift marker its comments
//!    are listed. The plan is [`benchops::reconcile::reconcile`] over all of
//!    history; when it has actions, labels are ensured first (the drift and
//!    accepted labels, a lane label per manifest lane, and every label an
//!    action sets), then the actions are applied in order, one request each.
//!
//! # Which comments count
//!
//! A comment is benchops's own, and its markers are read, only when both
//! hold: its author is the App's bot, `<app-slug>[bot]` (the slug comes
//! from `GET /app` with the App JWT at the start of the reconcile), and its
//! body carries a benchops marker (`<!-- benchops:evidence ... -->` or
//! `<!-- benchops:closed ... -->`). A marker a person pasted (or a comment
//! whose author GitHub does not report) is ignored, so it can neither
//! silence an announcement nor stand in for a closing comment. See
//! [`is_benchops_comment`].
//!
//! # Which issues count
//!
//! Likewise, an issue is benchops's only when the App's bot opened it
//! ([`is_benchops_issue`]). An issue whose body carries a drift marker but
//! whose author is anyone else (a person who copied a benchops issue, or
//! an author GitHub does not report) is not read, not planned for and
//! never written to: benchops opens its own issue for the key, and the
//! report lists the other one ([`GitHubSweepReport::foreign_issues`]).
//!
//! # How actions are written
//!
//! `AddLabels` uses `POST …/issues/{n}/labels`, which adds to the issue's
//! labels: a label a person set after the sweep listed the issues (the
//! accepted label, say) is never dropped. `Close` sends `state_reason:
//! completed`, `CloseDuplicate` `duplicate` and `Reopen` `reopened`, each
//! in the same request as the body and state. `DeleteDuplicateComment`
//! (two racing sweeps both posted the same marker; the earliest comment is
//! kept) uses `DELETE …/issues/comments/{id}`, where a 404 means a racing
//! sweep deleted it already and counts as done.
//!
//! # Crashes and retries
//!
//! The ref update is the only visible step of the persist: a crash before
//! it leaves unreachable objects and the branch as it was; a crash after it
//! leaves a branch a rerun finds complete (no new commit). Every reconcile
//! action is one request whose effect the next plan reads back (markers in
//! bodies and comments, states, labels), so a crash between two actions is
//! healed by the next sweep, which recomputes the plan from what exists and
//! applies only the rest: no duplicate issue or comment survives (two
//! sweeps racing may both post one; the next sweep deletes the later copy).
//! Issue and comment creation are never retried blindly by the client.
//!
//! A failed sweep returns a [`GitHubSweepError`] naming the phase and the
//! step where it stopped, with what had been done ([`Progress`]) and, once
//! the sweep got past setup, a receipt whose `stopped` says the same
//! ([`GitHubSweepError::receipt`]; a failed persist commits nothing, so the
//! CLI writes it to `--receipt-out` or stderr); rerunning
//! the same sweep converges unless [`GitHubSweepError::is_retryable`] says
//! otherwise (a create-only conflict, a bad key, a bad manifest).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use benchops::manifest::{self, BaselinePolicy, Manifest, ManifestError};
use benchops::reconcile::{
    self, Action, ActualIssue, CommentMarker, HistoryRecord, Note, RenderOptions,
};
use benchops::schema::Contract;
use benchops::seal::{SealedRecord, verify};
use benchops::{LaneName, Sha256Digest, jcs};
use benchops_github::{
    AppClient, AppId, AppKey, Clock as ApiClock, GitHubClient, GitHubError, GitSha, HandoffContent,
    InstallationId, IssueState as ApiIssueState, IssueUpdate, LabelOutcome, LabelSpec, Metrics,
    NewIssue, PacingLimits, Phase, RefDeletion, RefName, Repo, RetryPolicy, Sleeper, StateFilter,
    StateReason, TreeEntry, TreeFile,
};
use serde::Serialize;

use crate::history::{
    BaselineChange, BaselinePointer, HISTORY_BRANCH, HistoryError, HistoryInfo, PersistedRecord,
    Receipt, ReceiptBuilder, RecordEntry, RequestMetrics, SkippedEntry, Stopped, SweepInfo,
    ValidatedEntry, WorkflowRun, baseline_path, compact_slot, lanes_with_proposals,
    plan_baseline_moves, record_path,
};
use crate::ledger::Applied;
use crate::sweep::{
    self, Clock, HandoffReport, LocalSweepOptions, QUARANTINE_DIR, SweepError, render_note,
};
use crate::validate::{IssueOut, digest_from_file_name};

/// How many times the persist builds its commit (each time on a freshly
/// read tip) before it gives up with [`Cause::RetriesExhausted`].
pub const MAX_ATTEMPTS: u32 = crate::history::MAX_ATTEMPTS;

/// The label colors benchops gives labels it creates.
const DRIFT_COLOR: &str = "B60205";
const ACCEPTED_COLOR: &str = "0E8A16";
const LANE_COLOR: &str = "1D76DB";
const OTHER_COLOR: &str = "BFD4F2";

// ---------------------------------------------------------------------------
// Options

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
    /// Whether to read handoff refs (`refs/heads/benchmark-result/*`) too.
    /// At least one source must be given.
    pub handoff_refs: bool,
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
            handoff_refs: false,
            manifest: manifest.into(),
            clock: Clock::system(),
            trigger: "manual".to_owned(),
            workflow_run: None,
            client: ClientSettings::default(),
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

// ---------------------------------------------------------------------------
// Report, progress, errors

/// A phase of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SweepPhase {
    /// Reading options, the manifest and the key; building the client.
    Setup,
    /// Validating handoffs.
    Validate,
    /// Persisting to `benchmark-history` (contents-phase token).
    Persist,
    /// Reconciling drift issues (issues-phase token).
    Reconcile,
}

impl fmt::Display for SweepPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SweepPhase::Setup => "setup",
            SweepPhase::Validate => "validate",
            SweepPhase::Persist => "persist",
            SweepPhase::Reconcile => "reconcile",
        })
    }
}

/// One phase token: minted for a phase, revoked when the phase ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseToken {
    /// The phase.
    pub phase: Phase,
    /// When GitHub said it would expire (RFC 3339).
    pub expires_at: String,
    /// Whether the revocation succeeded.
    pub revoked: bool,
}

/// What a sweep had done when it stopped (also kept on success).
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Handoffs validated (valid or not), from the directory and from refs.
    pub validated: usize,
    /// Handoffs quarantined (invalid handoff refs included: left in place).
    pub quarantined: usize,
    /// Valid handoff refs read (each is deleted once its record is in
    /// history; invalid ones count as quarantined).
    pub handoff_refs: usize,
    /// Consumed handoff refs deleted (or found already gone).
    pub refs_deleted: usize,
    /// Whether the persist finished (its commit landed, or nothing was new).
    pub persisted: bool,
    /// The commit the persist landed, if any.
    pub commit: Option<String>,
    /// Reconcile actions applied, in order.
    pub applied: Vec<Applied>,
    /// Actions the plan held when the sweep stopped, applied or not.
    pub planned: usize,
    /// Tokens minted so far.
    pub tokens: Vec<PhaseToken>,
}

/// Why a GitHub sweep stopped.
#[derive(Debug, thiserror::Error)]
pub enum Cause {
    /// An option is unusable.
    #[error("{reason}")]
    Config {
        /// Why.
        reason: String,
    },
    /// The App key file cannot be read.
    #[error("failed to read the App private key file {}", path.display())]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The manifest file cannot be read.
    #[error("failed to read schedule manifest {}", path.display())]
    ManifestRead {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The manifest is invalid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// Listing handoffs or quarantining one failed.
    #[error(transparent)]
    Local(#[from] SweepError),
    /// A history path or timestamp is unusable.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// GitHub refused or failed a request (after the client's retries).
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    /// The branch holds other bytes at a create-only path. Nothing was
    /// written; not retryable until a person looks.
    #[error(
        "{path} on {HISTORY_BRANCH} already holds other bytes (blob {blob}); history is create-only, nothing was persisted"
    )]
    Conflict {
        /// The path.
        path: String,
        /// The git blob id found there.
        blob: String,
    },
    /// The branch kept moving.
    #[error(
        "{HISTORY_BRANCH} kept moving: gave up after {attempts} attempts (nothing forced; rerun to converge)"
    )]
    RetriesExhausted {
        /// Builds made.
        attempts: u32,
    },
    /// GitHub truncated the recursive tree listing, so absence of a path
    /// cannot be trusted.
    #[error("the tree {tree} of {HISTORY_BRANCH} is too large to list in one request (truncated)")]
    TreeTruncated {
        /// The tree id.
        tree: String,
    },
    /// A file on the branch is not what its path says.
    #[error("{path} on {HISTORY_BRANCH}: {reason}")]
    CorruptHistory {
        /// The path.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A document benchops built does not satisfy its schema.
    #[error("{what} does not satisfy its schema: {}", reasons.join("; "))]
    InvalidDocument {
        /// Which document.
        what: String,
        /// Every violation.
        reasons: Vec<String>,
    },
}

/// A GitHub sweep that stopped: the phase, the step, what was done.
#[derive(Debug, thiserror::Error)]
#[error("GitHub sweep stopped in the {phase} phase at {step} ({})", progress_line(.progress))]
pub struct GitHubSweepError {
    /// The phase.
    pub phase: SweepPhase,
    /// The step within the phase (`update ref`, `apply action 3 of 5`).
    pub step: String,
    /// What had been done.
    pub progress: Box<Progress>,
    /// Why.
    #[source]
    pub cause: Box<Cause>,
    /// The sweep's receipt with `stopped` set (canonical `receipt/v1`
    /// bytes), once the sweep got past setup and the directory's
    /// validation. A failed persist commits nothing, so this is the only
    /// copy; after a failed reconcile it is the committed receipt (if any)
    /// plus `stopped`. The CLI writes it to `--receipt-out` (or stderr).
    pub receipt: Option<Vec<u8>>,
}

fn progress_line(p: &Progress) -> String {
    let persist = match (&p.commit, p.persisted) {
        (Some(c), _) => format!("history commit {} landed", short_commit(c)),
        (None, true) => "history already complete".to_owned(),
        (None, false) => "nothing persisted".to_owned(),
    };
    let refs = if p.handoff_refs > 0 {
        format!(
            ", {} of {} consumed handoff ref(s) deleted",
            p.refs_deleted, p.handoff_refs
        )
    } else {
        String::new()
    };
    format!(
        "{} handoff(s) validated, {persist}{refs}, {} of {} reconcile action(s) applied; rerun to converge",
        p.validated,
        p.applied.len(),
        p.planned
    )
}

impl GitHubSweepError {
    /// Attaches `receipt` with `stopped` set from this error (its phase,
    /// step, cause and retryability) and the request metrics so far.
    fn with_receipt(mut self, mut receipt: Receipt, requests: RequestMetrics) -> Self {
        let phase = match self.phase {
            SweepPhase::Validate => "validate",
            SweepPhase::Setup | SweepPhase::Persist => "persist",
            SweepPhase::Reconcile => "reconcile",
        };
        receipt.requests = requests;
        self.receipt = receipt
            .with_stop(Stopped {
                phase: phase.to_owned(),
                step: self.step.clone(),
                error: sweep::error_line(self.cause.as_ref()),
                retryable: self.is_retryable(),
            })
            .ok();
        self
    }

    /// Whether rerunning the same sweep can succeed without a person
    /// changing anything: false for a create-only conflict, corrupt history,
    /// bad options, key or manifest, and for GitHub refusing for lack of
    /// permission.
    pub fn is_retryable(&self) -> bool {
        match self.cause.as_ref() {
            Cause::GitHub(e) => !matches!(
                e,
                GitHubError::Forbidden { .. }
                    | GitHubError::InvalidInput { .. }
                    | GitHubError::InvalidKey { .. }
                    | GitHubError::PhaseForbids { .. }
                    | GitHubError::Config { .. }
                    | GitHubError::BuildRequest { .. }
            ),
            Cause::RetriesExhausted { .. } => true,
            Cause::Local(_) => true,
            Cause::Config { .. }
            | Cause::KeyFile { .. }
            | Cause::ManifestRead { .. }
            | Cause::Manifest(_)
            | Cause::History(_)
            | Cause::Conflict { .. }
            | Cause::TreeTruncated { .. }
            | Cause::CorruptHistory { .. }
            | Cause::InvalidDocument { .. } => false,
        }
    }
}

/// What became of one handoff ref.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RefOutcome {
    /// Invalid: left in place as its own quarantine (never persisted, never
    /// deleted). A person removes it once investigated.
    Quarantined,
    /// Its record is in history and the ref was deleted.
    Deleted,
    /// Its record is in history and the ref was already gone (deleted by
    /// an earlier attempt or by someone else).
    AlreadyGone,
    /// Its record is in history, but the ref points at another commit now
    /// (pushed again meanwhile): left for the next sweep to read.
    Moved {
        /// The commit it points at now.
        to: String,
    },
    /// Valid, but its record is not in history (the persist did not take
    /// it): left in place.
    NotInHistory,
    /// Its record is in history; deleting the ref failed. Left in place;
    /// the next sweep finds the record present and deletes the ref.
    DeleteFailed {
        /// The error.
        error: String,
    },
}

impl RefOutcome {
    /// Whether the ref is gone (deleted now or before).
    pub fn is_gone(&self) -> bool {
        matches!(self, RefOutcome::Deleted | RefOutcome::AlreadyGone)
    }
}

/// One handoff ref: where it pointed, what it held, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffRefReport {
    /// The full ref name, `refs/heads/benchmark-result/…`.
    pub name: String,
    /// The commit it pointed at when read.
    pub commit: String,
    /// The sealed file's name (`<hex>.json`), when the layout was right.
    pub file: Option<String>,
    /// The digest of the file's bytes, when they were read.
    pub digest: Option<Sha256Digest>,
    /// Every problem found (empty: valid).
    pub issues: Vec<IssueOut>,
    /// What became of the ref.
    pub outcome: RefOutcome,
}

impl HandoffRefReport {
    /// Whether the handoff is a valid sealed record in the right layout.
    pub fn valid(&self) -> bool {
        self.issues.is_empty()
    }

    /// How the receipt names it: `<ref>@<commit>`.
    pub fn source(&self) -> String {
        format!("{}@{}", self.name, self.commit)
    }
}

/// Everything a GitHub sweep did.
#[derive(Debug, Clone)]
pub struct GitHubSweepReport {
    /// `OWNER/NAME`.
    pub repo: String,
    /// The handoff directory, if one was swept.
    pub handoff: Option<PathBuf>,
    /// Its quarantine directory.
    pub quarantine: Option<PathBuf>,
    /// When the sweep started.
    pub started_at: String,
    /// The receipt's `finished_at` (taken when the persist began building).
    pub finished_at: String,
    /// Every handoff of the directory, in file-name order.
    pub handoffs: Vec<HandoffReport>,
    /// Every handoff ref, in name order (empty unless refs were swept).
    pub handoff_refs: Vec<HandoffRefReport>,
    /// Every valid record given to the persist (new or already present).
    pub persisted: Vec<PersistedRecord>,
    /// Baseline pointers that moved.
    pub baseline_changes: Vec<BaselineChange>,
    /// The commit this sweep landed (None: nothing new).
    pub commit: Option<String>,
    /// The branch tip after the persist (None: no branch).
    pub tip: Option<String>,
    /// The receipt's path when a commit was made.
    pub receipt_path: Option<String>,
    /// How many times the commit was built (from 1; 0 when nothing new).
    pub persist_attempts: u32,
    /// How many records history holds (the reconcile's input).
    pub history_records: usize,
    /// The App's bot (`<slug>[bot]`): only its marker comments count.
    pub bot_login: String,
    /// Labels ensured before the actions (empty when there was nothing to do).
    pub labels: Vec<(String, LabelOutcome)>,
    /// Issue writes, in order.
    pub applied: Vec<Applied>,
    /// The reconcile's notes.
    pub notes: Vec<Note>,
    /// Issues with the drift label and a drift marker that the App's bot
    /// did not open: ignored (see [`is_benchops_issue`]).
    pub foreign_issues: Vec<ForeignIssue>,
    /// The phase tokens, in order.
    pub tokens: Vec<PhaseToken>,
    /// Request metrics of the whole sweep.
    pub metrics: Metrics,
}

impl GitHubSweepReport {
    /// Handoffs that were quarantined: invalid files copied to the
    /// quarantine directory, and invalid handoff refs left in place.
    pub fn quarantined(&self) -> usize {
        self.handoffs.iter().filter(|h| !h.valid()).count()
            + self.handoff_refs.iter().filter(|h| !h.valid()).count()
    }

    /// Consumed handoff refs that are still there (a failed deletion, a
    /// ref that moved): the next sweep takes care of them.
    pub fn refs_left(&self) -> usize {
        self.handoff_refs
            .iter()
            .filter(|h| h.valid() && !h.outcome.is_gone())
            .count()
    }

    /// Records newly written to history.
    pub fn new_records(&self) -> usize {
        self.persisted.iter().filter(|p| !p.already_present).count()
    }

    /// Records that were already in history.
    pub fn already_present(&self) -> usize {
        self.persisted.iter().filter(|p| p.already_present).count()
    }
}

// ---------------------------------------------------------------------------
// Internal failure plumbing

/// A failure inside a phase: the step and the cause (and the phase, when
/// it is not the one the caller runs: reading handoff refs validates inside
/// the contents phase).
#[derive(Debug)]
struct Failure {
    step: String,
    cause: Box<Cause>,
    phase: Option<SweepPhase>,
}

impl Failure {
    fn new(step: impl Into<String>, cause: impl Into<Cause>) -> Self {
        Failure {
            step: step.into(),
            cause: Box::new(cause.into()),
            phase: None,
        }
    }

    fn in_phase(mut self, phase: SweepPhase) -> Self {
        self.phase = Some(phase);
        self
    }

    fn into_error(self, phase: SweepPhase, progress: &Progress) -> GitHubSweepError {
        GitHubSweepError {
            phase: self.phase.unwrap_or(phase),
            step: self.step,
            progress: Box::new(progress.clone()),
            cause: self.cause,
            receipt: None,
        }
    }
}

fn at(step: impl Into<String>) -> impl FnOnce(GitHubError) -> Failure {
    let step = step.into();
    move |e| Failure::new(step, e)
}

// ---------------------------------------------------------------------------
// The sweep

/// Runs [`sweep_github`] on a new single-threaded Tokio runtime (what the
/// CLI calls). Do not call it from inside a runtime.
pub fn sweep_github_blocking(
    opts: &GitHubSweepOptions,
) -> Result<GitHubSweepReport, GitHubSweepError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| GitHubSweepError {
            phase: SweepPhase::Setup,
            step: "start the async runtime".to_owned(),
            progress: Box::default(),
            cause: Box::new(Cause::Config {
                reason: format!("failed to start a Tokio runtime: {e}"),
            }),
            receipt: None,
        })?;
    rt.block_on(sweep_github(opts))
}

/// Runs a GitHub sweep: validate, persist (contents-phase token), reconcile
/// (issues-phase token), report. See the module documentation.
pub async fn sweep_github(
    opts: &GitHubSweepOptions,
) -> Result<GitHubSweepReport, GitHubSweepError> {
    let mut progress = Progress::default();
    let started_at = opts.clock.now();

    // Setup.
    let setup = |f: Failure| f.into_error(SweepPhase::Setup, &Progress::default());
    let cx = Setup::new(opts).map_err(setup)?;

    // 1. Validate the directory's handoffs (handoff refs are read and
    // validated in the contents phase: reading them needs its token).
    let (handoffs, valid) =
        validate(opts).map_err(|f| f.into_error(SweepPhase::Validate, &Progress::default()))?;
    progress.validated = handoffs.len();
    progress.quarantined = handoffs.iter().filter(|h| !h.valid()).count();

    // 2. Persist, with the contents-phase token.
    let finished_at = opts.clock.now();
    let mut builder = ReceiptBuilder {
        sweep: SweepInfo {
            started_at: started_at.clone(),
            finished_at: finished_at.clone(),
            trigger: opts.trigger.clone(),
            workflow_run: opts.workflow_run.clone(),
        },
        validated: Vec::new(),
        skipped: Vec::new(),
        requests: RequestMetrics::default(),
        record_receipt: false,
    };
    if let Some(dir) = &opts.handoff {
        for h in &handoffs {
            let source = sweep::relative(&h.source, dir);
            builder.validated.push(ValidatedEntry {
                source: source.clone(),
                digest: h.digest,
                valid: h.valid(),
                errors: h.issues.iter().map(sweep::issue_line).collect(),
            });
            if let Some(q) = &h.quarantined {
                let to = sweep::relative(q.copy.as_ref().unwrap_or(&q.why), dir);
                builder.skipped.push(SkippedEntry {
                    source,
                    skip_reason: format!("invalid handoff, quarantined to {to}"),
                });
            }
        }
    }
    // A failed persist commits nothing: its receipt goes with the error
    // (the one that landed, when the failure came after the ref update).
    let mut landed_receipt: Option<Receipt> = None;
    let persist_err = |f: Failure, p: &Progress, b: &ReceiptBuilder, landed: Option<Receipt>| {
        f.into_error(SweepPhase::Persist, p).with_receipt(
            landed.unwrap_or_else(|| Receipt::unpersisted(b, None)),
            cx.request_metrics(),
        )
    };
    let installation = match cx.app.repo_installation(&cx.repo).await {
        Ok(i) => i,
        Err(e) => {
            let f = at("look up the App's installation")(e);
            return Err(persist_err(f, &progress, &builder, None));
        }
    };
    let contents = match cx
        .phase_client(installation.id, Phase::Contents, &mut progress)
        .await
    {
        Ok(c) => c,
        Err(f) => return Err(persist_err(f, &progress, &builder, None)),
    };
    let persisted = contents_phase(
        &cx,
        &contents,
        &valid,
        &mut builder,
        &mut progress,
        &mut landed_receipt,
    )
    .await;
    let persisted = match cx.end_phase(&contents, persisted, &mut progress).await {
        Ok(p) => p,
        Err(f) => return Err(persist_err(f, &progress, &builder, landed_receipt)),
    };

    // 3. Reconcile, with the issues-phase token. The App's slug names the
    // bot whose comments are benchops's own.
    let rec_err = |f: Failure, p: &Progress| {
        f.into_error(SweepPhase::Reconcile, p)
            .with_receipt(persisted.receipt.clone(), cx.request_metrics())
    };
    let app = cx
        .app
        .get_app()
        .await
        .map_err(at("look up the App's slug"))
        .map_err(|f| rec_err(f, &progress))?;
    let bot_login = app.bot_login();
    let issues = cx
        .phase_client(installation.id, Phase::Issues, &mut progress)
        .await
        .map_err(|f| rec_err(f, &progress))?;
    let outcome =
        apply_reconcile(&cx, &issues, &persisted.history, &bot_login, &mut progress).await;
    let outcome = cx
        .end_phase(&issues, outcome, &mut progress)
        .await
        .map_err(|f| rec_err(f, &progress))?;

    Ok(GitHubSweepReport {
        repo: cx.repo.to_string(),
        handoff: opts.handoff.clone(),
        quarantine: opts.quarantine_dir(),
        started_at,
        finished_at,
        handoffs,
        handoff_refs: persisted.handoff_refs,
        persisted: persisted.persisted,
        baseline_changes: persisted.baseline_changes,
        commit: progress.commit.clone(),
        tip: persisted.tip.map(|t| t.as_str().to_owned()),
        receipt_path: persisted.receipt_path,
        persist_attempts: persisted.attempts,
        history_records: persisted.history.len(),
        bot_login,
        labels: outcome.labels,
        applied: progress.applied.clone(),
        notes: outcome.notes,
        foreign_issues: outcome.foreign,
        tokens: progress.tokens.clone(),
        metrics: cx.client.metrics(),
    })
}

/// What the phases share.
struct Setup {
    repo: Repo,
    branch: RefName,
    handoff_refs: bool,
    manifest: Manifest,
    client: GitHubClient,
    app: AppClient,
    history_base_url: String,
}

impl Setup {
    fn new(opts: &GitHubSweepOptions) -> Result<Setup, Failure> {
        let repo = Repo::parse(&opts.repo).map_err(at("parse --repo"))?;
        let branch = RefName::branch(HISTORY_BRANCH).map_err(at("name the history branch"))?;
        let text = std::fs::read_to_string(&opts.manifest).map_err(|source| {
            Failure::new(
                "read the manifest",
                Cause::ManifestRead {
                    path: opts.manifest.clone(),
                    source,
                },
            )
        })?;
        let manifest = manifest::from_toml(&text, &opts.manifest.display().to_string())
            .map_err(|e| Failure::new("load the manifest", e))?
            .manifest;
        match &opts.handoff {
            Some(dir) if !dir.is_dir() => {
                return Err(Failure::new(
                    "open the handoff directory",
                    Cause::Config {
                        reason: format!(
                            "handoff directory {} does not exist or is not a directory",
                            dir.display()
                        ),
                    },
                ));
            }
            None if !opts.handoff_refs => {
                return Err(Failure::new(
                    "choose the handoff sources",
                    Cause::Config {
                        reason:
                            "no handoff source: give a handoff directory, handoff refs, or both"
                                .to_owned(),
                    },
                ));
            }
            _ => {}
        }
        let pem = std::fs::read(&opts.app_key_file).map_err(|source| {
            Failure::new(
                "read the App key",
                Cause::KeyFile {
                    path: opts.app_key_file.clone(),
                    source,
                },
            )
        })?;
        let key =
            AppKey::from_pem(AppId::new(opts.app_id), &pem).map_err(at("read the App key"))?;
        let s = &opts.client;
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
        let client = b.build().map_err(at("build the GitHub client"))?;
        let app = client.app(key);
        Ok(Setup {
            repo,
            branch,
            handoff_refs: opts.handoff_refs,
            manifest,
            client,
            app,
            history_base_url: opts.history_base_url.clone(),
        })
    }

    /// Mints a token for `phase`, limited to the repository, and a client
    /// holding it.
    async fn phase_client(
        &self,
        installation: InstallationId,
        phase: Phase,
        progress: &mut Progress,
    ) -> Result<GitHubClient, Failure> {
        let token = self
            .app
            .create_installation_token(installation, phase, std::slice::from_ref(&self.repo))
            .await
            .map_err(at(format!("mint the {phase}-phase token")))?;
        progress.tokens.push(PhaseToken {
            phase,
            expires_at: token.expires_at.to_string(),
            revoked: false,
        });
        Ok(self.client.with_installation_token(&token))
    }

    /// Revokes the phase's token whatever the phase's result; the phase's
    /// own failure wins over a failed revocation.
    async fn end_phase<T>(
        &self,
        gh: &GitHubClient,
        result: Result<T, Failure>,
        progress: &mut Progress,
    ) -> Result<T, Failure> {
        let phase = gh.phase();
        let revoked = gh.revoke_token().await;
        if revoked.is_ok()
            && let Some(t) = progress
                .tokens
                .iter_mut()
                .rev()
                .find(|t| Some(t.phase) == phase)
        {
            t.revoked = true;
        }
        let value = result?;
        revoked.map_err(at(format!(
            "revoke the {}-phase token",
            phase.map_or_else(|| "?".to_owned(), |p| p.to_string())
        )))?;
        Ok(value)
    }

    /// The request metrics so far, as a receipt records them.
    fn request_metrics(&self) -> RequestMetrics {
        let t = self.client.metrics().total();
        RequestMetrics {
            requests: t.requests,
            bytes_sent: t.bytes_sent,
            bytes_received: t.bytes_received,
            rate_limit_remaining: t.rate_limit_remaining,
            request_ids: t.request_ids,
            pacing_wait_ms: t.pacing_waited_ms,
        }
    }
}

// ---------------------------------------------------------------------------
// 1. Validate

fn validate(opts: &GitHubSweepOptions) -> Result<(Vec<HandoffReport>, Vec<SealedRecord>), Failure> {
    let mut handoffs = Vec::new();
    let mut valid = Vec::new();
    let Some(dir) = &opts.handoff else {
        return Ok((handoffs, valid));
    };
    // The local sweep quarantines into `<dir>/quarantine`; the handoff
    // directory plays `<dir>` here.
    let local = LocalSweepOptions::new(dir, &opts.manifest);
    for path in sweep::list_handoffs(dir).map_err(|e| Failure::new("list handoffs", e))? {
        let (mut report, sealed, bytes) = sweep::validate_handoff(&path);
        match sealed {
            Some(s) => valid.push(s),
            None => {
                report.quarantined = Some(
                    sweep::quarantine(&local, &report, bytes.as_deref())
                        .map_err(|e| Failure::new(format!("quarantine {}", path.display()), e))?,
                );
            }
        }
        handoffs.push(report);
    }
    Ok((handoffs, valid))
}

// ---------------------------------------------------------------------------
// 2. Persist

/// A record to persist, with its path and chronological slot key.
struct Planned {
    sealed: SealedRecord,
    path: String,
    slot: SlotKey,
}

/// A slot as (`YYYYMMDDTHHMMSSZ`, nanoseconds): chronological order.
type SlotKey = (String, u32);

fn slot_key(slot: &str) -> Option<SlotKey> {
    let compact = compact_slot(slot).ok()?;
    let frac = slot.get(19..slot.len().checked_sub(1)?)?;
    let nanos = match frac.strip_prefix('.') {
        None if frac.is_empty() => 0,
        None => return None,
        Some(d) => format!("{d:0<9}").parse().ok()?,
    };
    Some((compact, nanos))
}

/// Orders records as the local sweep does (slot, then digest), drops
/// duplicates and computes their paths.
fn plan_records(valid: &[SealedRecord]) -> Result<Vec<Planned>, Failure> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(valid.len());
    for s in valid {
        if !seen.insert(s.digest()) {
            continue;
        }
        let path = record_path(s).map_err(|e| Failure::new("compute record paths", e))?;
        let slot = slot_key(&s.record().slot).ok_or_else(|| {
            Failure::new(
                "compute record paths",
                HistoryError::BadTimestamp {
                    what: "slot",
                    value: s.record().slot.clone(),
                },
            )
        })?;
        out.push(Planned {
            sealed: s.clone(),
            path,
            slot,
        });
    }
    out.sort_by(|a, b| {
        (&a.slot, &a.sealed.record().slot, a.sealed.digest()).cmp(&(
            &b.slot,
            &b.sealed.record().slot,
            b.sealed.digest(),
        ))
    });
    Ok(out)
}

/// What the persist did, and the history it left.
struct Persisted {
    handoff_refs: Vec<HandoffRefReport>,
    tip: Option<GitSha>,
    attempts: u32,
    persisted: Vec<PersistedRecord>,
    baseline_changes: Vec<BaselineChange>,
    receipt_path: Option<String>,
    /// The receipt (committed when `receipt_path` is Some).
    receipt: Receipt,
    history: Vec<SealedRecord>,
}

/// The tip and what its tree holds.
struct TipState {
    tip: Option<GitSha>,
    tree: Option<GitSha>,
    files: BTreeMap<String, TreeEntry>,
}

async fn read_tip(cx: &Setup, gh: &GitHubClient) -> Result<TipState, Failure> {
    let tip = match gh.get_ref(&cx.repo, &cx.branch).await {
        Ok(r) => Some(r.object.sha),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(Failure::new("read the history branch", e)),
    };
    let Some(tip) = tip else {
        return Ok(TipState {
            tip: None,
            tree: None,
            files: BTreeMap::new(),
        });
    };
    let commit = gh
        .get_commit(&cx.repo, &tip)
        .await
        .map_err(at("read the tip commit"))?;
    let tree = gh
        .get_tree_recursive(&cx.repo, &commit.tree.sha)
        .await
        .map_err(at("list the tip's tree"))?;
    if tree.truncated {
        return Err(Failure::new(
            "list the tip's tree",
            Cause::TreeTruncated {
                tree: tree.sha.as_str().to_owned(),
            },
        ));
    }
    let files = tree
        .tree
        .into_iter()
        .filter(|e| e.kind == "blob")
        .map(|e| (e.path.clone(), e))
        .collect();
    Ok(TipState {
        tip: Some(tip),
        tree: Some(commit.tree.sha),
        files,
    })
}

fn canonical<T: Serialize>(doc: &T, contract: Contract, what: &str) -> Result<Vec<u8>, Failure> {
    let invalid = |reasons| {
        Failure::new(
            format!("build the {what}"),
            Cause::InvalidDocument {
                what: what.to_owned(),
                reasons,
            },
        )
    };
    let value = serde_json::to_value(doc).map_err(|e| invalid(vec![e.to_string()]))?;
    contract.validate(&value).map_err(|v| {
        invalid(
            v.iter()
                .map(|v| format!("{}: {}", v.path, v.reason))
                .collect(),
        )
    })?;
    Ok(jcs::canonical_bytes(&value))
}

fn utf8(path: &str, bytes: &[u8]) -> Result<String, Failure> {
    String::from_utf8(bytes.to_vec()).map_err(|_| {
        Failure::new(
            format!("prepare {path}"),
            Cause::Config {
                reason: format!("{path} is not UTF-8 text"),
            },
        )
    })
}

async fn read_pointer(
    cx: &Setup,
    gh: &GitHubClient,
    state: &TipState,
    lane: &LaneName,
) -> Result<Option<BaselinePointer>, Failure> {
    let path = baseline_path(lane);
    let (Some(tip), true) = (&state.tip, state.files.contains_key(&path)) else {
        return Ok(None);
    };
    let f = gh
        .get_file(&cx.repo, &path, tip.as_str())
        .await
        .map_err(at(format!("read {path}")))?;
    let corrupt = |reason: String| {
        Failure::new(
            format!("read {path}"),
            Cause::CorruptHistory {
                path: path.clone(),
                reason,
            },
        )
    };
    let value = jcs::parse(&f.bytes).map_err(|e| corrupt(e.to_string()))?;
    Contract::BaselinePointerV1.validate(&value).map_err(|v| {
        corrupt(
            v.iter()
                .map(|v| format!("{}: {}", v.path, v.reason))
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    let pointer: BaselinePointer =
        serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))?;
    if pointer.lane != *lane {
        return Err(corrupt(format!("names lane {}", pointer.lane)));
    }
    Ok(Some(pointer))
}

/// The contents phase: read and validate the handoff refs (when asked),
/// persist, delete the consumed handoff refs, then read all of history at
/// the tip the persist left (the issues-phase token cannot read contents).
async fn contents_phase(
    cx: &Setup,
    gh: &GitHubClient,
    dir_valid: &[SealedRecord],
    builder: &mut ReceiptBuilder,
    progress: &mut Progress,
    landed_receipt: &mut Option<Receipt>,
) -> Result<Persisted, Failure> {
    let mut refs = if cx.handoff_refs {
        read_handoff_refs(cx, gh).await?
    } else {
        Vec::new()
    };
    progress.handoff_refs = refs.iter().filter(|r| r.report.valid()).count();
    progress.validated += refs.len();
    progress.quarantined += refs.iter().filter(|r| !r.report.valid()).count();
    for r in &refs {
        builder.validated.push(ValidatedEntry {
            source: r.report.source(),
            digest: r.report.digest,
            valid: r.report.valid(),
            errors: r.report.issues.iter().map(sweep::issue_line).collect(),
        });
        if !r.report.valid() {
            builder.skipped.push(SkippedEntry {
                source: r.report.source(),
                skip_reason: "invalid handoff ref, left in place (never deleted by the sweep)"
                    .to_owned(),
            });
        }
    }
    let mut valid = dir_valid.to_vec();
    valid.extend(refs.iter().filter_map(|r| r.sealed.clone()));
    let planned = plan_records(&valid)?;

    // Every handoff seen is recorded, even when no record is new.
    builder.record_receipt = !builder.validated.is_empty();
    let landed = persist(cx, gh, &planned, builder).await?;
    *landed_receipt = Some(landed.receipt.clone());
    progress.persisted = true;
    progress.commit = landed.commit.as_ref().map(|c| c.as_str().to_owned());
    delete_consumed_refs(cx, gh, &mut refs, &landed.persisted, progress).await;
    let history = read_history(cx, gh, landed.tip.as_ref(), &landed.paths, &landed.known).await?;
    Ok(Persisted {
        handoff_refs: refs.into_iter().map(|r| r.report).collect(),
        tip: landed.tip,
        attempts: landed.attempts,
        persisted: landed.persisted,
        baseline_changes: landed.baseline_changes,
        receipt_path: landed.receipt_path,
        receipt: landed.receipt,
        history,
    })
}

/// A handoff ref as read: its report and, when valid, its record.
struct RefHandoff {
    report: HandoffRefReport,
    sealed: Option<SealedRecord>,
}

/// Lists `refs/heads/benchmark-result/*` and reads and verifies each, the
/// digest taken from the file name. A failure to talk to GitHub stops the
/// sweep (in the validate phase); a ref that is not a valid handoff is
/// reported and kept.
async fn read_handoff_refs(cx: &Setup, gh: &GitHubClient) -> Result<Vec<RefHandoff>, Failure> {
    let validate = |f: Failure| f.in_phase(SweepPhase::Validate);
    let listed = gh
        .list_handoff_refs(&cx.repo)
        .await
        .map_err(|e| validate(Failure::new("list handoff refs", e)))?;
    let mut out = Vec::with_capacity(listed.len());
    for r in listed {
        let content = gh
            .read_handoff(&cx.repo, &r)
            .await
            .map_err(|e| validate(Failure::new(format!("read handoff ref {}", r.name), e)))?;
        let mut report = HandoffRefReport {
            name: r.name.clone(),
            commit: r.sha.as_str().to_owned(),
            file: None,
            digest: None,
            issues: Vec::new(),
            outcome: RefOutcome::Quarantined,
        };
        let sealed = match content {
            HandoffContent::Invalid { reason } => {
                report.issues.push(IssueOut {
                    kind: "handoff-layout".to_owned(),
                    path: "$".to_owned(),
                    reason,
                });
                None
            }
            HandoffContent::Sealed(f) => {
                report.digest = Some(Sha256Digest::of(&f.bytes));
                let named = digest_from_file_name(Path::new(&f.file_name));
                report.file = Some(f.file_name);
                match named {
                    Some(Ok(named)) => match verify(&f.bytes, Some(&named)) {
                        Ok(s) => Some(s),
                        Err(e) => {
                            report.issues.extend(e.issues.iter().map(IssueOut::from));
                            None
                        }
                    },
                    _ => {
                        report.issues.push(IssueOut {
                            kind: "digest-mismatch".to_owned(),
                            path: "$".to_owned(),
                            reason: "the file name holds no valid digest".to_owned(),
                        });
                        None
                    }
                }
            }
        };
        if sealed.is_some() {
            // Decided after the persist.
            report.outcome = RefOutcome::NotInHistory;
        }
        out.push(RefHandoff { report, sealed });
    }
    Ok(out)
}

/// After the persist: deletes every valid handoff ref whose record is now
/// in history, if it still points at the commit that was read. Failures are
/// reported per ref and do not stop the sweep (the next sweep finds the
/// record present and deletes the ref).
async fn delete_consumed_refs(
    cx: &Setup,
    gh: &GitHubClient,
    refs: &mut [RefHandoff],
    persisted: &[PersistedRecord],
    progress: &mut Progress,
) {
    let in_history: BTreeSet<Sha256Digest> = persisted.iter().map(|p| p.digest).collect();
    for r in refs.iter_mut() {
        let Some(sealed) = &r.sealed else {
            continue;
        };
        if !in_history.contains(&sealed.digest()) {
            continue;
        }
        r.report.outcome = delete_one(cx, gh, &r.report).await;
        if r.report.outcome.is_gone() {
            progress.refs_deleted += 1;
        }
    }
}

async fn delete_one(cx: &Setup, gh: &GitHubClient, report: &HandoffRefReport) -> RefOutcome {
    let failed = |e: GitHubError| RefOutcome::DeleteFailed {
        error: e.to_string(),
    };
    let name = match RefName::new(&report.name) {
        Ok(n) => n,
        Err(e) => return failed(e),
    };
    match gh.get_ref(&cx.repo, &name).await {
        Err(e) if e.is_not_found() => return RefOutcome::AlreadyGone,
        Err(e) => return failed(e),
        Ok(now) if now.object.sha.as_str() != report.commit => {
            return RefOutcome::Moved {
                to: now.object.sha.as_str().to_owned(),
            };
        }
        Ok(_) => {}
    }
    match gh.delete_ref(&cx.repo, &name).await {
        Ok(RefDeletion::Deleted) => RefOutcome::Deleted,
        Ok(RefDeletion::AlreadyGone) => RefOutcome::AlreadyGone,
        Err(e) => failed(e),
    }
}

/// What the persist left on the branch, before history is read.
struct Landed {
    commit: Option<GitSha>,
    tip: Option<GitSha>,
    attempts: u32,
    persisted: Vec<PersistedRecord>,
    baseline_changes: Vec<BaselineChange>,
    receipt_path: Option<String>,
    /// The receipt (committed when `receipt_path` is Some).
    receipt: Receipt,
    /// Every file path at the tip.
    paths: BTreeSet<String>,
    /// Records whose bytes this sweep wrote or compared, by path.
    known: BTreeMap<String, SealedRecord>,
}

/// Builds one commit over the current tip and moves the branch to it, at
/// most [`MAX_ATTEMPTS`] times.
async fn persist(
    cx: &Setup,
    gh: &GitHubClient,
    planned: &[Planned],
    builder: &ReceiptBuilder,
) -> Result<Landed, Failure> {
    let policies: BTreeMap<LaneName, BaselinePolicy> = cx
        .manifest
        .lanes
        .iter()
        .map(|l| (l.name.clone(), l.baseline))
        .collect();
    for attempt in 1..=MAX_ATTEMPTS {
        let state = read_tip(cx, gh).await?;

        // Create-only: what the tip holds at each record path.
        let mut persisted = Vec::with_capacity(planned.len());
        let mut files: Vec<TreeFile> = Vec::new();
        for p in planned {
            let already_present = match (state.files.get(&p.path), &state.tip) {
                (Some(entry), Some(tip)) => {
                    let f = gh
                        .get_file(&cx.repo, &p.path, tip.as_str())
                        .await
                        .map_err(at(format!("read {}", p.path)))?;
                    if f.bytes != p.sealed.bytes() {
                        return Err(Failure::new(
                            format!("check {}", p.path),
                            Cause::Conflict {
                                path: p.path.clone(),
                                blob: entry.sha.as_str().to_owned(),
                            },
                        ));
                    }
                    true
                }
                _ => false,
            };
            if !already_present {
                files.push(TreeFile {
                    path: p.path.clone(),
                    content: utf8(&p.path, p.sealed.bytes())?,
                });
            }
            persisted.push(PersistedRecord {
                digest: p.sealed.digest(),
                path: p.path.clone(),
                already_present,
            });
        }

        // Baseline pointers of last-clean lanes, in record order, by the
        // same rule as the local history.
        let mut on_branch = BTreeMap::new();
        for lane in lanes_with_proposals(planned.iter().map(|p| &p.sealed), &policies) {
            let at_tip = read_pointer(cx, gh, &state, &lane).await?;
            on_branch.insert(lane, at_tip);
        }
        let moved = plan_baseline_moves(
            planned.iter().map(|p| (&p.sealed, p.path.as_str())),
            &policies,
            &on_branch,
        );
        let mut baseline_changes = Vec::new();
        for (lane, (from, pointer)) in &moved {
            let path = baseline_path(lane);
            let bytes = canonical(
                pointer,
                Contract::BaselinePointerV1,
                &format!("baseline pointer of lane {lane}"),
            )?;
            files.push(TreeFile {
                content: utf8(&path, &bytes)?,
                path,
            });
            baseline_changes.push(BaselineChange {
                lane: lane.clone(),
                from: *from,
                to: pointer.record,
            });
        }

        let known: BTreeMap<String, SealedRecord> = planned
            .iter()
            .map(|p| (p.path.clone(), p.sealed.clone()))
            .collect();

        // The receipt, with the request metrics so far.
        let receipt = Receipt {
            schema: Contract::ReceiptV1.id().to_owned(),
            sweep: builder.sweep.clone(),
            validated: builder.validated.clone(),
            persisted: persisted.clone(),
            skipped: builder.skipped.clone(),
            baseline_changes: baseline_changes.clone(),
            history: HistoryInfo {
                branch: HISTORY_BRANCH.to_owned(),
                parent: state.tip.as_ref().map(|t| t.as_str().to_owned()),
                attempts: attempt,
            },
            requests: cx.request_metrics(),
            stopped: None,
        };
        let receipt_bytes = canonical(&receipt, Contract::ReceiptV1, "receipt")?;
        let started = compact_slot(&builder.sweep.started_at)
            .map_err(|e| Failure::new("build the receipt", e))?;
        let receipt_path = format!(
            "receipts/{}/{}/{}.json",
            &started[0..4],
            &started[4..6],
            Sha256Digest::of(&receipt_bytes).hex()
        );
        // Nothing new and nothing to record (or that receipt is already
        // there): no commit.
        let mut receipt_present = false;
        if !files.is_empty() || builder.record_receipt {
            if let (Some(entry), Some(tip)) = (state.files.get(&receipt_path), &state.tip) {
                let f = gh
                    .get_file(&cx.repo, &receipt_path, tip.as_str())
                    .await
                    .map_err(at(format!("read {receipt_path}")))?;
                if f.bytes != receipt_bytes {
                    return Err(Failure::new(
                        format!("check {receipt_path}"),
                        Cause::Conflict {
                            path: receipt_path,
                            blob: entry.sha.as_str().to_owned(),
                        },
                    ));
                }
                receipt_present = true;
            }
        }
        if files.is_empty() && (!builder.record_receipt || receipt_present) {
            return Ok(Landed {
                commit: None,
                paths: state.files.into_keys().collect(),
                tip: state.tip,
                attempts: 0,
                persisted,
                baseline_changes,
                receipt_path: None,
                receipt,
                known,
            });
        }
        files.push(TreeFile {
            path: receipt_path.clone(),
            content: utf8(&receipt_path, &receipt_bytes)?,
        });

        // One tree, one commit, one ref move (never forced).
        let tree = gh
            .create_tree(&cx.repo, state.tree.as_ref(), &files)
            .await
            .map_err(at("create the tree"))?;
        let new_count = persisted.iter().filter(|p| !p.already_present).count();
        let message = format!(
            "benchops: persist {new_count} record(s), {} already present, {} baseline change(s)\n\nreceipt: {receipt_path}\n",
            persisted.len() - new_count,
            baseline_changes.len()
        );
        let parents: Vec<GitSha> = state.tip.iter().cloned().collect();
        let commit = gh
            .create_commit(&cx.repo, &message, &tree.sha, &parents)
            .await
            .map_err(at("create the commit"))?;
        let moved_ref = match &state.tip {
            None => gh
                .create_ref(&cx.repo, &cx.branch, &commit.sha)
                .await
                .map(|_| ()),
            Some(_) => gh
                .update_ref(&cx.repo, &cx.branch, &commit.sha)
                .await
                .map(|_| ()),
        };
        match moved_ref {
            Ok(()) => {}
            Err(GitHubError::RefMoved { .. }) => continue,
            Err(GitHubError::Unprocessable { message, .. })
                if state.tip.is_none() && message.contains("already exists") =>
            {
                continue;
            }
            Err(e) => {
                let step = if state.tip.is_none() {
                    "create the history branch"
                } else {
                    "update the history branch"
                };
                return Err(Failure::new(step, e));
            }
        }

        let mut paths: BTreeSet<String> = state.files.into_keys().collect();
        paths.extend(files.iter().map(|f| f.path.clone()));
        return Ok(Landed {
            commit: Some(commit.sha.clone()),
            tip: Some(commit.sha),
            attempts: attempt,
            persisted,
            baseline_changes,
            receipt_path: Some(receipt_path),
            receipt,
            paths,
            known,
        });
    }
    Err(Failure::new(
        "update the history branch",
        Cause::RetriesExhausted {
            attempts: MAX_ATTEMPTS,
        },
    ))
}

/// Every record under `results/` at the tip, re-verified against the
/// digest in its name and placed by lane and slot. Records in `known` (this
/// sweep's, written or compared byte for byte) are not read again.
async fn read_history(
    cx: &Setup,
    gh: &GitHubClient,
    tip: Option<&GitSha>,
    paths: &BTreeSet<String>,
    known: &BTreeMap<String, SealedRecord>,
) -> Result<Vec<SealedRecord>, Failure> {
    let Some(tip) = tip else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for path in paths.iter().filter(|p| p.starts_with("results/")) {
        let Ok(entry) = RecordEntry::parse(path) else {
            continue;
        };
        if let Some(s) = known.get(path) {
            out.push(s.clone());
            continue;
        }
        let f = gh
            .get_file(&cx.repo, path, tip.as_str())
            .await
            .map_err(at(format!("read {path}")))?;
        let corrupt = |reason: String| {
            Failure::new(
                format!("read {path}"),
                Cause::CorruptHistory {
                    path: path.clone(),
                    reason,
                },
            )
        };
        let sealed = verify(&f.bytes, Some(&entry.digest)).map_err(|e| corrupt(e.to_string()))?;
        let r = sealed.record();
        let placed =
            r.lane == entry.lane && compact_slot(&r.slot).ok().as_ref() == Some(&entry.slot);
        if !placed {
            return Err(corrupt(format!(
                "holds a record of lane {} slot {}, which belongs elsewhere",
                r.lane, r.slot
            )));
        }
        out.push(sealed);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// 3. Reconcile

/// Whether a comment is benchops's own, so that its markers are read: its
/// author is the App's bot (`bot_login`, `<slug>[bot]`) and its body
/// carries a benchops marker (`<!-- benchops:`). A comment by anyone else,
/// or whose author GitHub does not report, never counts, whatever it
/// quotes.
pub fn is_benchops_comment(body: &str, author: Option<&str>, bot_login: &str) -> bool {
    author == Some(bot_login) && body.contains("<!-- benchops:")
}

/// Whether an issue is benchops's own, so that it is reconciled: the App's
/// bot (`bot_login`, `<slug>[bot]`) opened it. An issue by anyone else, or
/// whose author GitHub does not report, never counts, whatever its body
/// quotes.
pub fn is_benchops_issue(author: Option<&str>, bot_login: &str) -> bool {
    author == Some(bot_login)
}

/// An issue that looks like a drift issue (drift label and a drift marker)
/// but was not opened by the App's bot: benchops leaves it alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForeignIssue {
    /// Its number.
    pub issue: u64,
    /// Its author, if GitHub reported one.
    pub author: Option<String>,
    /// The key its drift marker names, if it parses.
    pub key: Option<String>,
}

impl fmt::Display for ForeignIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#{} carries a benchops drift marker{} but was opened by {}, not benchops: ignored (benchops tracks the drift in its own issue)",
            self.issue,
            self.key
                .as_ref()
                .map_or_else(String::new, |k| format!(" ({k})")),
            self.author.as_deref().unwrap_or("an unknown author")
        )
    }
}

struct ReconcileOutcome {
    labels: Vec<(String, LabelOutcome)>,
    notes: Vec<Note>,
    foreign: Vec<ForeignIssue>,
}

fn label_specs(manifest: &Manifest, actions: &[Action]) -> Vec<LabelSpec> {
    let l = &manifest.labels;
    let mut names: BTreeSet<String> = BTreeSet::new();
    names.insert(l.drift.clone());
    names.insert(l.accepted.clone());
    for lane in &manifest.lanes {
        names.insert(format!("{}{}", l.lane_prefix, lane.name));
    }
    for a in actions {
        if let Action::Open { labels, .. } | Action::AddLabels { labels, .. } = a {
            names.extend(labels.iter().cloned());
        }
    }
    names
        .into_iter()
        .map(|name| {
            let (color, description) = if name == l.drift {
                (
                    DRIFT_COLOR,
                    "A benchmark drift confirmed by benchops".to_owned(),
                )
            } else if name == l.accepted {
                (
                    ACCEPTED_COLOR,
                    "Accepted by a person: benchops stops commenting and reopening".to_owned(),
                )
            } else if let Some(lane) = name.strip_prefix(l.lane_prefix.as_str()) {
                (LANE_COLOR, format!("Drift seen by the {lane} lane"))
            } else {
                (OTHER_COLOR, "Set by benchops".to_owned())
            };
            LabelSpec {
                name,
                color: color.to_owned(),
                description: Some(description),
            }
        })
        .collect()
}

fn describe(a: &Action) -> String {
    match a {
        Action::Open { key, .. } => format!("open an issue for {key}"),
        Action::AddLabels { issue, .. } => format!("add labels to #{issue}"),
        Action::Comment { issue, .. } => format!("comment on #{issue}"),
        Action::UpdateBody { issue, .. } => format!("update the body of #{issue}"),
        Action::Close { issue, .. } => format!("close #{issue}"),
        Action::Reopen { issue, .. } => format!("reopen #{issue}"),
        Action::DeleteDuplicateComment { issue, comment_id } => {
            format!("delete duplicate comment {comment_id} on #{issue}")
        }
        Action::CloseDuplicate { issue, .. } => format!("close duplicate #{issue}"),
    }
}

async fn apply_reconcile(
    cx: &Setup,
    gh: &GitHubClient,
    history: &[SealedRecord],
    bot_login: &str,
    progress: &mut Progress,
) -> Result<ReconcileOutcome, Failure> {
    let labels = &cx.manifest.labels;
    let listed = gh
        .list_issues(&cx.repo, StateFilter::All, &[labels.drift.as_str()])
        .await
        .map_err(at("list drift issues"))?;
    let mut actual = Vec::with_capacity(listed.len());
    let mut foreign = Vec::new();
    let mut label_sets: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for i in listed {
        let author = i.author().map(str::to_owned);
        let has_marker = i
            .body
            .as_deref()
            .is_some_and(|b| b.contains("<!-- benchops:drift"));
        let names: Vec<String> = i.labels.iter().map(|l| l.name.clone()).collect();
        let state = match i.state {
            ApiIssueState::Open => reconcile::IssueState::Open,
            ApiIssueState::Closed => reconcile::IssueState::Closed,
        };
        let mut issue = ActualIssue::from_body(
            i.number,
            i.title,
            i.body.unwrap_or_default(),
            state,
            None,
            names.clone(),
        );
        if has_marker && !is_benchops_issue(author.as_deref(), bot_login) {
            foreign.push(ForeignIssue {
                issue: i.number,
                author,
                key: issue.key.as_ref().map(ToString::to_string),
            });
            continue;
        }
        label_sets.insert(i.number, names);
        if issue.key.is_some() {
            let comments = gh
                .list_comments(&cx.repo, i.number)
                .await
                .map_err(at(format!("list the comments of #{}", i.number)))?;
            issue = issue.with_comments(
                comments
                    .iter()
                    .filter(|c| is_benchops_comment(&c.body, c.author(), bot_login))
                    .map(|c| (c.id, c.body.as_str())),
            );
        }
        actual.push(issue);
    }
    let hist: Vec<HistoryRecord<'_>> = history.iter().map(HistoryRecord::from).collect();
    let render = RenderOptions::new(cx.history_base_url.clone());
    let plan = reconcile::reconcile(&cx.manifest, &hist, &actual, &render);
    progress.planned = plan.actions.len();
    let mut out = ReconcileOutcome {
        labels: Vec::new(),
        notes: plan.notes,
        foreign,
    };
    if plan.actions.is_empty() {
        return Ok(out);
    }
    out.labels = gh
        .ensure_labels(&cx.repo, &label_specs(&cx.manifest, &plan.actions))
        .await
        .map_err(at("ensure labels"))?;
    let total = plan.actions.len();
    for (n, action) in plan.actions.iter().enumerate() {
        let step = format!("apply action {} of {total} ({})", n + 1, describe(action));
        let applied = apply(cx, gh, action, &mut label_sets)
            .await
            .map_err(at(step))?;
        progress.applied.push(applied);
    }
    Ok(out)
}

/// One action, one request.
async fn apply(
    cx: &Setup,
    gh: &GitHubClient,
    action: &Action,
    label_sets: &mut BTreeMap<u64, Vec<String>>,
) -> Result<Applied, GitHubError> {
    let repo = &cx.repo;
    let set = |body: &str, state: Option<(ApiIssueState, StateReason)>| IssueUpdate {
        body: Some(body.to_owned()),
        state: state.map(|s| s.0),
        state_reason: state.map(|s| s.1),
        ..IssueUpdate::default()
    };
    Ok(match action {
        Action::Open {
            title,
            body,
            labels,
            ..
        } => {
            let issue = gh
                .create_issue(
                    repo,
                    &NewIssue {
                        title: title.clone(),
                        body: body.clone(),
                        labels: labels.clone(),
                    },
                )
                .await?;
            label_sets.insert(
                issue.number,
                issue.labels.iter().map(|l| l.name.clone()).collect(),
            );
            Applied::Opened {
                issue: issue.number,
                title: title.clone(),
            }
        }
        Action::AddLabels { issue, labels } => {
            // Adds to the issue's labels (never a replacement): a label a
            // person set since the listing stays.
            let known = label_sets.get(issue).cloned().unwrap_or_default();
            let added: Vec<String> = labels
                .iter()
                .filter(|l| !known.contains(l))
                .cloned()
                .collect();
            let now = gh.add_labels(repo, *issue, labels).await?;
            label_sets.insert(*issue, now.into_iter().map(|l| l.name).collect());
            Applied::LabelsAdded {
                issue: *issue,
                labels: added,
            }
        }
        Action::Comment {
            issue,
            marker,
            body,
        } => {
            gh.create_comment(repo, *issue, body).await?;
            match marker {
                CommentMarker::Evidence { record } => Applied::Commented {
                    issue: *issue,
                    record: *record,
                },
                CommentMarker::Closed { epoch } => Applied::ClosingComment {
                    issue: *issue,
                    epoch: *epoch,
                },
            }
        }
        Action::UpdateBody { issue, body } => {
            gh.update_issue(repo, *issue, &set(body, None)).await?;
            Applied::BodyUpdated { issue: *issue }
        }
        Action::Close { issue, body, .. } => {
            let closed = (ApiIssueState::Closed, StateReason::Completed);
            gh.update_issue(repo, *issue, &set(body, Some(closed)))
                .await?;
            Applied::Closed { issue: *issue }
        }
        Action::Reopen { issue, body } => {
            let open = (ApiIssueState::Open, StateReason::Reopened);
            gh.update_issue(repo, *issue, &set(body, Some(open)))
                .await?;
            Applied::Reopened { issue: *issue }
        }
        Action::DeleteDuplicateComment { issue, comment_id } => {
            // 404 (gone already: a racing sweep deleted it) is success.
            gh.delete_comment(repo, *comment_id).await?;
            Applied::DeletedDuplicateComment {
                issue: *issue,
                comment_id: *comment_id,
            }
        }
        Action::CloseDuplicate {
            issue,
            canonical,
            body,
        } => {
            let closed = (ApiIssueState::Closed, StateReason::Duplicate);
            gh.update_issue(repo, *issue, &set(body, Some(closed)))
                .await?;
            Applied::ClosedDuplicate {
                issue: *issue,
                canonical: *canonical,
            }
        }
    })
}

// ---------------------------------------------------------------------------
// Rendering

fn short(d: &Sha256Digest) -> String {
    d.hex().chars().take(12).collect()
}

fn short_commit(c: &str) -> &str {
    c.get(..12).unwrap_or(c)
}

/// The human summary of a GitHub sweep.
pub fn render_summary(r: &GitHubSweepReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "sweep (github) {}: started {}, contents phase finished {}",
        r.repo, r.started_at, r.finished_at
    );
    if let Some(dir) = &r.handoff {
        let bad = r.handoffs.iter().filter(|h| !h.valid()).count();
        let _ = writeln!(
            s,
            "validate: {} handoff(s) in {}: {} valid, {} quarantined",
            r.handoffs.len(),
            dir.display(),
            r.handoffs.len() - bad,
            bad
        );
    }
    for h in r.handoffs.iter().filter(|h| !h.valid()) {
        if let Some(q) = &h.quarantined {
            let copy = q.copy.as_ref().map_or_else(
                || "(unreadable, not copied)".to_owned(),
                |c| c.display().to_string(),
            );
            let _ = writeln!(
                s,
                "  QUARANTINED {} -> {} (why: {}); NOT persisted; source left in place, remove it once investigated",
                h.source.display(),
                copy,
                q.why.display()
            );
        }
        for i in &h.issues {
            let _ = writeln!(s, "    {}", sweep::issue_line(i));
        }
    }
    if !r.handoff_refs.is_empty() || r.handoff.is_none() {
        let bad = r.handoff_refs.iter().filter(|h| !h.valid()).count();
        let _ = writeln!(
            s,
            "validate: {} handoff ref(s) under refs/heads/benchmark-result/: {} valid, {} quarantined",
            r.handoff_refs.len(),
            r.handoff_refs.len() - bad,
            bad
        );
    }
    for h in r.handoff_refs.iter().filter(|h| !h.valid()) {
        let _ = writeln!(
            s,
            "  QUARANTINED {} (commit {}): left in place, NOT persisted and NOT deleted; delete the ref once investigated",
            h.name,
            short_commit(&h.commit)
        );
        for i in &h.issues {
            let _ = writeln!(s, "    {}", sweep::issue_line(i));
        }
    }
    let _ = writeln!(
        s,
        "persist: {} new record(s), {} already present; {} on {}",
        r.new_records(),
        r.already_present(),
        HISTORY_BRANCH,
        r.repo
    );
    let nothing_new = r.new_records() == 0 && r.baseline_changes.is_empty();
    match (&r.commit, &r.tip) {
        (Some(c), _) => {
            let _ = writeln!(
                s,
                "  {}commit {} (attempt {}){}",
                if nothing_new {
                    "nothing new: receipt-only "
                } else {
                    ""
                },
                short_commit(c),
                r.persist_attempts,
                r.receipt_path
                    .as_ref()
                    .map_or_else(String::new, |p| format!(", receipt {p}"))
            );
        }
        (None, Some(t)) => {
            let _ = writeln!(
                s,
                "  nothing new: no commit (no handoff, nothing to record), tip stays {}",
                short_commit(t)
            );
        }
        (None, None) => {
            let _ = writeln!(
                s,
                "  nothing new: no commit (no handoff, nothing to record); the branch does not exist yet"
            );
        }
    }
    for b in &r.baseline_changes {
        let from = b.from.as_ref().map_or_else(|| "none".to_owned(), short);
        let _ = writeln!(s, "  baseline {}: {} -> {}", b.lane, from, short(&b.to));
    }
    for h in r.handoff_refs.iter().filter(|h| h.valid()) {
        let what = match &h.outcome {
            RefOutcome::Deleted => "deleted (its record is in history)".to_owned(),
            RefOutcome::AlreadyGone => "already gone (its record is in history)".to_owned(),
            RefOutcome::Moved { to } => format!(
                "LEFT: it now points at {}, which the next sweep reads",
                short_commit(to)
            ),
            RefOutcome::NotInHistory => "LEFT: its record is not in history".to_owned(),
            RefOutcome::DeleteFailed { error } => format!(
                "LEFT: deleting failed ({error}); its record is in history, the next sweep deletes it"
            ),
            RefOutcome::Quarantined => "quarantined".to_owned(),
        };
        let _ = writeln!(s, "  handoff ref {}: {what}", h.name);
    }
    let _ = writeln!(
        s,
        "reconcile: {} record(s) in history; {} issue write(s)",
        r.history_records,
        r.applied.len()
    );
    for (name, outcome) in &r.labels {
        if *outcome != LabelOutcome::Existed {
            let _ = writeln!(s, "  label {name}: created");
        }
    }
    for a in &r.applied {
        let _ = writeln!(s, "  {a}");
    }
    for n in &r.notes {
        let _ = writeln!(s, "  note: {}", render_note(n));
    }
    for f in &r.foreign_issues {
        let _ = writeln!(s, "  note: {f}");
    }
    for t in &r.tokens {
        let _ = writeln!(
            s,
            "token: {} phase, {}",
            t.phase,
            if t.revoked { "revoked" } else { "NOT revoked" }
        );
    }
    let total = r.metrics.total();
    let _ = writeln!(
        s,
        "requests: {} ({} retries), {} B sent, {} B received, waits {} ms (retry {} ms, pacing {} ms), rate limit remaining {}",
        total.requests,
        total.retries,
        total.bytes_sent,
        total.bytes_received,
        total.waited_ms,
        total.retry_waited_ms,
        total.pacing_waited_ms,
        total
            .rate_limit_remaining
            .map_or_else(|| "unknown".to_owned(), |n| n.to_string())
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_keys_order_chronologically() {
        let a = slot_key("2026-11-30T01:00:00Z").expect("valid");
        let b = slot_key("2026-11-30T01:00:00.5Z").expect("valid");
        let c = slot_key("2026-11-30T01:00:01Z").expect("valid");
        assert!(a < b && b < c);
        assert_eq!(a, ("20261130T010000Z".to_owned(), 0));
        assert_eq!(b.1, 500_000_000);
        assert_eq!(slot_key("2026-11-30T01:00:00"), None);
        assert_eq!(slot_key("2026-11-30T01:00:00,5Z"), None);
    }

    #[test]
    fn comment_rule() {
        let m = "<!-- benchops:evidence record=sha256:x -->";
        assert!(is_benchops_comment(m, Some("app[bot]"), "app[bot]"));
        assert!(!is_benchops_comment(m, Some("someone"), "app[bot]"));
        assert!(!is_benchops_comment(m, Some("other[bot]"), "app[bot]"));
        assert!(!is_benchops_comment(m, None, "app[bot]"));
        assert!(!is_benchops_comment("plain", Some("app[bot]"), "app[bot]"));
    }
}
