//! `benchops-publish sweep --github`: the publisher's sweep against a GitHub
//! repository, with one short-lived installation token per phase.
//!
//! The phases are those of the local sweep ([`crate::sweep`]); only the
//! history store and the issue tracker differ.
//!
//! 1. **Validate** every handoff in the handoff directory (`*.json`, as
//!    `benchops-exec bench seal` writes them) with the core verifier, the
//!    digest taken from the file name. Invalid handoffs are copied to
//!    `<handoff>/quarantine/` with a `.why.txt` (the local sweep's code) and
//!    never persisted; their source file is left in place.
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
//!    - Nothing new (every record present, no pointer moves): no commit and
//!      no receipt.
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
//! A comment is read for markers when its body carries a benchops marker
//! (`<!-- benchops:evidence ... -->` or `<!-- benchops:closed ... -->`).
//! The rule is meant to also require that the comment's author is the
//! App's bot (`<app-slug>[bot]`, as the API reports it), so that a marker a
//! person pasted cannot silence an announcement; the GitHub client's
//! [`benchops_github::Comment`] does not carry the author yet, so today every
//! marker-carrying comment counts. See [`is_benchops_comment`].
//!
//! # Crashes and retries
//!
//! The ref update is the only visible step of the persist: a crash before
//! it leaves unreachable objects and the branch as it was; a crash after it
//! leaves a branch a rerun finds complete (no new commit). Every reconcile
//! action is one request whose effect the next plan reads back (markers in
//! bodies and comments, states, labels), so a crash between two actions is
//! healed by the next sweep, which recomputes the plan from what exists and
//! applies only the rest: no duplicate issue or comment. Issue and comment
//! creation are never retried blindly by the client.
//!
//! A failed sweep returns a [`GitHubSweepError`] naming the phase and the
//! step where it stopped, with what had been done ([`Progress`]); rerunning
//! the same sweep converges unless [`GitHubSweepError::is_retryable`] says
//! otherwise (a create-only conflict, a bad key, a bad manifest).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::path::PathBuf;
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
    AppClient, AppId, AppKey, Clock as ApiClock, GitHubClient, GitHubError, GitSha, InstallationId,
    IssueState as ApiIssueState, IssueUpdate, LabelOutcome, LabelSpec, Metrics, NewIssue,
    PacingLimits, Phase, RefName, Repo, RetryPolicy, Sleeper, StateFilter, TreeEntry, TreeFile,
};
use serde::Serialize;

use crate::history::{
    BaselineChange, BaselinePointer, HISTORY_BRANCH, HistoryError, HistoryInfo, PersistedRecord,
    Receipt, ReceiptBuilder, RecordEntry, RequestMetrics, SkippedEntry, SweepInfo, ValidatedEntry,
    WorkflowRun, baseline_path, compact_slot, record_path,
};
use crate::ledger::Applied;
use crate::sweep::{
    self, Clock, HandoffReport, LocalSweepOptions, QUARANTINE_DIR, SweepError, render_note,
};

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
    /// The directory of sealed handoffs (`*.json`).
    pub handoff: PathBuf,
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
    /// default client.
    pub fn new(
        repo: impl Into<String>,
        app_id: u64,
        app_key_file: impl Into<PathBuf>,
        handoff: impl Into<PathBuf>,
        manifest: impl Into<PathBuf>,
    ) -> Self {
        let repo = repo.into();
        GitHubSweepOptions {
            history_base_url: history_base_url("https://github.com", &repo),
            repo,
            app_id,
            app_key_file: app_key_file.into(),
            handoff: handoff.into(),
            manifest: manifest.into(),
            clock: Clock::system(),
            trigger: "manual".to_owned(),
            workflow_run: None,
            client: ClientSettings::default(),
        }
    }

    /// `<handoff>/quarantine`.
    pub fn quarantine_dir(&self) -> PathBuf {
        self.handoff.join(QUARANTINE_DIR)
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
    /// Handoffs validated (valid or not).
    pub validated: usize,
    /// Handoffs quarantined.
    pub quarantined: usize,
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
}

fn progress_line(p: &Progress) -> String {
    let persist = match (&p.commit, p.persisted) {
        (Some(c), _) => format!("history commit {} landed", short_commit(c)),
        (None, true) => "history already complete".to_owned(),
        (None, false) => "nothing persisted".to_owned(),
    };
    format!(
        "{} handoff(s) validated, {persist}, {} of {} reconcile action(s) applied; rerun to converge",
        p.validated,
        p.applied.len(),
        p.planned
    )
}

impl GitHubSweepError {
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

/// Everything a GitHub sweep did.
#[derive(Debug, Clone)]
pub struct GitHubSweepReport {
    /// `OWNER/NAME`.
    pub repo: String,
    /// The handoff directory.
    pub handoff: PathBuf,
    /// The quarantine directory.
    pub quarantine: PathBuf,
    /// When the sweep started.
    pub started_at: String,
    /// The receipt's `finished_at` (taken when the persist began building).
    pub finished_at: String,
    /// Every handoff, in file-name order.
    pub handoffs: Vec<HandoffReport>,
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
    /// Labels ensured before the actions (empty when there was nothing to do).
    pub labels: Vec<(String, LabelOutcome)>,
    /// Issue writes, in order.
    pub applied: Vec<Applied>,
    /// The reconcile's notes.
    pub notes: Vec<Note>,
    /// The phase tokens, in order.
    pub tokens: Vec<PhaseToken>,
    /// Request metrics of the whole sweep.
    pub metrics: Metrics,
}

impl GitHubSweepReport {
    /// Handoffs that were quarantined.
    pub fn quarantined(&self) -> usize {
        self.handoffs.iter().filter(|h| !h.valid()).count()
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

/// A failure inside a phase: the step and the cause.
#[derive(Debug)]
struct Failure {
    step: String,
    cause: Box<Cause>,
}

impl Failure {
    fn new(step: impl Into<String>, cause: impl Into<Cause>) -> Self {
        Failure {
            step: step.into(),
            cause: Box::new(cause.into()),
        }
    }

    fn into_error(self, phase: SweepPhase, progress: &Progress) -> GitHubSweepError {
        GitHubSweepError {
            phase,
            step: self.step,
            progress: Box::new(progress.clone()),
            cause: self.cause,
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

    // 1. Validate.
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
    };
    for h in &handoffs {
        let source = sweep::relative(&h.source, &opts.handoff);
        builder.validated.push(ValidatedEntry {
            source: source.clone(),
            digest: h.digest,
            valid: h.valid(),
            errors: h.issues.iter().map(sweep::issue_line).collect(),
        });
        if let Some(q) = &h.quarantined {
            let to = sweep::relative(q.copy.as_ref().unwrap_or(&q.why), &opts.handoff);
            builder.skipped.push(SkippedEntry {
                source,
                skip_reason: format!("invalid handoff, quarantined to {to}"),
            });
        }
    }
    let persist_err = |f: Failure, p: &Progress| f.into_error(SweepPhase::Persist, p);
    let planned = plan_records(&valid).map_err(|f| persist_err(f, &progress))?;
    let installation = cx
        .app
        .repo_installation(&cx.repo)
        .await
        .map_err(at("look up the App's installation"))
        .map_err(|f| persist_err(f, &progress))?;
    let contents = cx
        .phase_client(installation.id, Phase::Contents, &mut progress)
        .await
        .map_err(|f| persist_err(f, &progress))?;
    let persisted = contents_phase(&cx, &contents, &planned, &builder, &mut progress).await;
    let persisted = cx
        .end_phase(&contents, persisted, &mut progress)
        .await
        .map_err(|f| persist_err(f, &progress))?;

    // 3. Reconcile, with the issues-phase token.
    let rec_err = |f: Failure, p: &Progress| f.into_error(SweepPhase::Reconcile, p);
    let issues = cx
        .phase_client(installation.id, Phase::Issues, &mut progress)
        .await
        .map_err(|f| rec_err(f, &progress))?;
    let outcome = apply_reconcile(&cx, &issues, &persisted.history, &mut progress).await;
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
        persisted: persisted.persisted,
        baseline_changes: persisted.baseline_changes,
        commit: progress.commit.clone(),
        tip: persisted.tip.map(|t| t.as_str().to_owned()),
        receipt_path: persisted.receipt_path,
        persist_attempts: persisted.attempts,
        history_records: persisted.history.len(),
        labels: outcome.labels,
        applied: progress.applied.clone(),
        notes: outcome.notes,
        tokens: progress.tokens.clone(),
        metrics: cx.client.metrics(),
    })
}

/// What the phases share.
struct Setup {
    repo: Repo,
    branch: RefName,
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
        if !opts.handoff.is_dir() {
            return Err(Failure::new(
                "open the handoff directory",
                Cause::Config {
                    reason: format!(
                        "handoff directory {} does not exist or is not a directory",
                        opts.handoff.display()
                    ),
                },
            ));
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
    // The local sweep quarantines into `<dir>/quarantine`; the handoff
    // directory plays `<dir>` here.
    let local = LocalSweepOptions::new(&opts.handoff, &opts.manifest);
    let mut handoffs = Vec::new();
    let mut valid = Vec::new();
    for path in sweep::list_handoffs(&opts.handoff).map_err(|e| Failure::new("list handoffs", e))? {
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
    tip: Option<GitSha>,
    attempts: u32,
    persisted: Vec<PersistedRecord>,
    baseline_changes: Vec<BaselineChange>,
    receipt_path: Option<String>,
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

/// The contents phase: persist, then read all of history at the tip the
/// persist left (the issues-phase token cannot read contents).
async fn contents_phase(
    cx: &Setup,
    gh: &GitHubClient,
    planned: &[Planned],
    builder: &ReceiptBuilder,
    progress: &mut Progress,
) -> Result<Persisted, Failure> {
    let landed = persist(cx, gh, planned, builder).await?;
    progress.persisted = true;
    progress.commit = landed.commit.as_ref().map(|c| c.as_str().to_owned());
    let history = read_history(cx, gh, landed.tip.as_ref(), &landed.paths, &landed.known).await?;
    Ok(Persisted {
        tip: landed.tip,
        attempts: landed.attempts,
        persisted: landed.persisted,
        baseline_changes: landed.baseline_changes,
        receipt_path: landed.receipt_path,
        history,
    })
}

/// What the persist left on the branch, before history is read.
struct Landed {
    commit: Option<GitSha>,
    tip: Option<GitSha>,
    attempts: u32,
    persisted: Vec<PersistedRecord>,
    baseline_changes: Vec<BaselineChange>,
    receipt_path: Option<String>,
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
    let policies: BTreeMap<&LaneName, BaselinePolicy> = cx
        .manifest
        .lanes
        .iter()
        .map(|l| (&l.name, l.baseline))
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

        // Baseline pointers of last-clean lanes, in record order (the
        // rules of `history`).
        let mut current: BTreeMap<LaneName, Option<BaselinePointer>> = BTreeMap::new();
        let mut moved: BTreeMap<LaneName, (Option<Sha256Digest>, BaselinePointer)> =
            BTreeMap::new();
        for p in planned {
            let r = p.sealed.record();
            let Some(proposal) = &r.publication.baseline_proposal else {
                continue;
            };
            let lane = &proposal.lane;
            if policies.get(lane) != Some(&BaselinePolicy::LastClean) {
                continue;
            }
            if !current.contains_key(lane) {
                let at_tip = read_pointer(cx, gh, &state, lane).await?;
                current.insert(lane.clone(), at_tip);
            }
            let on_branch = current.get(lane).cloned().flatten();
            let latest = moved
                .get(lane)
                .map(|(_, ptr)| ptr.clone())
                .or_else(|| on_branch.clone());
            let newer = match &latest {
                None => true,
                Some(ptr) => slot_key(&ptr.slot).is_none_or(|s| p.slot > s),
            };
            if !newer {
                continue;
            }
            let pointer = BaselinePointer {
                schema: Contract::BaselinePointerV1.id().to_owned(),
                lane: lane.clone(),
                record: p.sealed.digest(),
                path: p.path.clone(),
                slot: r.slot.clone(),
                policy: BaselinePolicy::LastClean,
                previous: on_branch.as_ref().map(|ptr| ptr.record),
            };
            moved.insert(lane.clone(), (on_branch.map(|ptr| ptr.record), pointer));
        }
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
        if files.is_empty() {
            return Ok(Landed {
                commit: None,
                paths: state.files.into_keys().collect(),
                tip: state.tip,
                attempts: 0,
                persisted,
                baseline_changes,
                receipt_path: None,
                known,
            });
        }

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

/// Whether a comment's markers are read. The rule: the body carries a
/// benchops marker (`<!-- benchops:`), and, when the API reports the
/// comment's author, that author is the App's bot login. The client does
/// not report authors yet (`author` is always `None` here), so the second
/// half cannot be checked today.
pub fn is_benchops_comment(body: &str, author: Option<&str>, bot_login: Option<&str>) -> bool {
    let marked = body.contains("<!-- benchops:");
    match (author, bot_login) {
        (Some(a), Some(bot)) => marked && a == bot,
        _ => marked,
    }
}

struct ReconcileOutcome {
    labels: Vec<(String, LabelOutcome)>,
    notes: Vec<Note>,
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
        Action::CloseDuplicate { issue, .. } => format!("close duplicate #{issue}"),
    }
}

async fn apply_reconcile(
    cx: &Setup,
    gh: &GitHubClient,
    history: &[SealedRecord],
    progress: &mut Progress,
) -> Result<ReconcileOutcome, Failure> {
    let labels = &cx.manifest.labels;
    let listed = gh
        .list_issues(&cx.repo, StateFilter::All, &[labels.drift.as_str()])
        .await
        .map_err(at("list drift issues"))?;
    let mut actual = Vec::with_capacity(listed.len());
    let mut label_sets: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for i in listed {
        let names: Vec<String> = i.labels.iter().map(|l| l.name.clone()).collect();
        label_sets.insert(i.number, names.clone());
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
            names,
        );
        if issue.key.is_some() {
            let comments = gh
                .list_comments(&cx.repo, i.number)
                .await
                .map_err(at(format!("list the comments of #{}", i.number)))?;
            issue = issue.with_comments(
                comments
                    .iter()
                    .filter(|c| is_benchops_comment(&c.body, None, None))
                    .map(|c| c.body.as_str()),
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
    let set = |body: &str, state: Option<ApiIssueState>| IssueUpdate {
        body: Some(body.to_owned()),
        state,
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
            let mut all = label_sets.get(issue).cloned().unwrap_or_default();
            let mut added = Vec::new();
            for l in labels {
                if !all.contains(l) {
                    all.push(l.clone());
                    added.push(l.clone());
                }
            }
            let update = IssueUpdate {
                labels: Some(all),
                ..IssueUpdate::default()
            };
            let updated = gh.update_issue(repo, *issue, &update).await?;
            label_sets.insert(
                *issue,
                updated.labels.iter().map(|l| l.name.clone()).collect(),
            );
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
            gh.update_issue(repo, *issue, &set(body, Some(ApiIssueState::Closed)))
                .await?;
            Applied::Closed { issue: *issue }
        }
        Action::Reopen { issue, body } => {
            gh.update_issue(repo, *issue, &set(body, Some(ApiIssueState::Open)))
                .await?;
            Applied::Reopened { issue: *issue }
        }
        Action::CloseDuplicate {
            issue,
            canonical,
            body,
        } => {
            gh.update_issue(repo, *issue, &set(body, Some(ApiIssueState::Closed)))
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
    let _ = writeln!(
        s,
        "validate: {} handoff(s) in {}: {} valid, {} quarantined",
        r.handoffs.len(),
        r.handoff.display(),
        r.handoffs.len() - r.quarantined(),
        r.quarantined()
    );
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
    let _ = writeln!(
        s,
        "persist: {} new record(s), {} already present; {} on {}",
        r.new_records(),
        r.already_present(),
        HISTORY_BRANCH,
        r.repo
    );
    match (&r.commit, &r.tip) {
        (Some(c), _) => {
            let _ = writeln!(
                s,
                "  commit {} (attempt {}){}",
                short_commit(c),
                r.persist_attempts,
                r.receipt_path
                    .as_ref()
                    .map_or_else(String::new, |p| format!(", receipt {p}"))
            );
        }
        (None, Some(t)) => {
            let _ = writeln!(s, "  nothing new: no commit, tip stays {}", short_commit(t));
        }
        (None, None) => {
            let _ = writeln!(s, "  nothing new: the branch does not exist yet");
        }
    }
    for b in &r.baseline_changes {
        let from = b.from.as_ref().map_or_else(|| "none".to_owned(), short);
        let _ = writeln!(s, "  baseline {}: {} -> {}", b.lane, from, short(&b.to));
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
        assert!(is_benchops_comment(m, None, None));
        assert!(is_benchops_comment(m, Some("app[bot]"), Some("app[bot]")));
        assert!(!is_benchops_comment(m, Some("someone"), Some("app[bot]")));
        assert!(!is_benchops_comment(
            "plain",
            Some("app[bot]"),
            Some("app[bot]")
        ));
    }
}
