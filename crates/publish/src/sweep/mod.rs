//! The sweep engine: one implementation of every rule of a publisher sweep,
//! over two ports ([`ports::HistoryStore`], [`ports::IssueTracker`]). The
//! local mode ([`crate::local`]) and the GitHub mode ([`crate::github`])
//! only build the ports and the inputs; nothing here asks which mode runs.
//!
//! # Phases
//!
//! 1. **Validate** the handoff directory's `*.json`, each against the
//!    digest its name claims ([`handoff`]). Invalid ones are quarantined
//!    and never persisted. Handoffs that live in the store itself (GitHub's
//!    handoff refs) are read and checked by the same rule once the persist
//!    phase began.
//! 2. **Persist** ([`persist`]): records sorted chronologically (slot as an
//!    instant, then digest), one commit over the tip with the records, the
//!    baseline pointers the lane policies allow and the receipt; every
//!    record re-verified just before the first write; the branch moved by
//!    compare-and-swap, rebuilt on a moved tip. Nothing new (every record
//!    present, no pointer moving) writes nothing. Then the store's own
//!    consumed handoffs are removed, and the records the rules need are
//!    read back at the tip the persist left, each checked against its path
//!    ([`index`]: the history index, kept in the persist's commit, names
//!    them). The handoff directory's files whose record is in history are
//!    moved to `.persisted/` ([`consume`]).
//! 3. **Reconcile** those records against the issues with
//!    [`benchops::reconcile::reconcile`], one action at a time (they decide
//!    as all of history would, see [`benchops::history_index`]). Before each
//!    action the tracker says whether its target is still as listed; if a
//!    person or another sweep changed it, the plan is recomputed from a
//!    fresh listing (at most [`MAX_REPLANS`] times).
//! 4. **Report**: health per lane from the records in memory, and a
//!    [`SweepReport`] rendered by [`render_summary`].
//!
//! A sweep that fails after setup returns a [`SweepError`] whose receipt
//! says the phase and step where it stopped and whether a rerun helps.

pub mod baseline;
pub mod consume;
pub mod error;
pub mod handoff;
pub mod health_issue;
pub mod index;
pub mod persist;
pub mod ports;
pub mod report;
pub mod stop;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use benchops::fsio;
use benchops::manifest::{self, BaselinePolicy, Manifest};
use benchops::receipt::{
    Receipt, RequestMetrics, SkippedEntry, Stopped, ValidatedEntry, WorkflowRun,
};
use benchops::reconcile::{Action, HistoryRecord, Note, RenderOptions, reconcile};
use benchops::{LaneName, SealedRecord, Sha256Digest};

use crate::text::error_line;

pub use consume::{ConsumeOutcome, Consumed};
pub use error::{AdapterCause, AdapterFailure, Cause, StepError, at};
pub use handoff::{HandoffReport, Quarantined};
pub use persist::{MAX_ATTEMPTS, ReceiptBuilder};
pub use ports::{
    Advance, Applied, ForeignIssue, HandoffRefReport, HistoryStore, IssueTracker, LabelNeed,
    Listing, PhaseToken, RefHandoff, RefOutcome, TipIndex,
};
pub use report::{
    LaneHealth, LatestRecord, PhaseSeconds, RequestSummary, SweepReport, render_note,
    render_summary,
};
pub use stop::{Phase, Progress, SweepError};

use crate::verify::issue_line;

/// How many times the reconcile recomputes its plan because the issues
/// changed under it before giving up with [`Cause::IssuesBusy`].
pub const MAX_REPLANS: u32 = 5;

// ---------------------------------------------------------------------------
// Clock

/// The wall clock, injectable for tests: a function returning an RFC 3339
/// UTC timestamp (`2026-11-30T02:00:05.250Z`).
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> String + Send + Sync>);

impl Clock {
    /// The system clock, in milliseconds.
    pub fn system() -> Self {
        Clock(Arc::new(|| benchops::time::Utc::millis(SystemTime::now())))
    }

    /// A clock that always says `now`.
    pub fn fixed(now: impl Into<String>) -> Self {
        let now = now.into();
        Clock(Arc::new(move || now.clone()))
    }

    /// A clock from any function.
    pub fn from_fn(f: impl Fn() -> String + Send + Sync + 'static) -> Self {
        Clock(Arc::new(f))
    }

    /// The current time.
    pub fn now(&self) -> String {
        (self.0)()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Clock(..)")
    }
}

/// Reads and validates the schedule manifest (the setup step both modes
/// share).
pub fn load_manifest(path: &Path) -> Result<Manifest, StepError> {
    let text = fsio::read_input_text(path, fsio::DEFAULT_MAX_INPUT_BYTES).map_err(|source| {
        StepError::new(
            "read the manifest",
            Cause::ReadFile {
                what: "schedule manifest",
                path: path.to_path_buf(),
                source,
            },
        )
    })?;
    Ok(manifest::from_toml(&text, &path.display().to_string())
        .map_err(at("load the manifest"))?
        .manifest)
}

// ---------------------------------------------------------------------------
// Inputs

/// What the engine runs on, besides its two ports.
#[derive(Clone)]
pub struct Inputs {
    /// What is swept, for the summary.
    pub target: String,
    /// The schedule manifest.
    pub manifest: Manifest,
    /// The wall clock of the receipt.
    pub clock: Clock,
    /// The receipt's `sweep.trigger`.
    pub trigger: String,
    /// The GitHub Actions run, when the sweep runs in one.
    pub workflow_run: Option<WorkflowRun>,
    /// The handoff directory and its quarantine directory, if any.
    pub handoff_dir: Option<(PathBuf, PathBuf)>,
    /// The largest handoff file read from the directory, in bytes.
    pub max_record_bytes: u64,
    /// How receipts name directory handoffs: relative to this directory.
    pub source_base: Option<PathBuf>,
    /// Apply at most this many reconcile actions, then stop as if the
    /// process died (crash drills and tests). None: all of them.
    pub max_actions: Option<usize>,
    /// How issue text links history files.
    pub render: RenderOptions,
    /// Keep one missed-run issue per lane with this label (opened while the
    /// lane's last slots are missed, closed when it is on time again);
    /// `None`: no missed-run issues.
    pub missed_run_label: Option<String>,
    /// Keep the repository's one health issue with this label, its body
    /// the lanes' health table, edited in place; `None`: no health issue.
    pub health_issue_label: Option<String>,
    /// The manifest's signature policy (`[signing]`), loaded; `None`:
    /// signatures are neither checked nor persisted.
    pub signing: Option<crate::signatures::SignaturePolicy>,
    /// The request metrics so far (None: this mode makes no requests).
    pub requests: Arc<dyn Fn() -> Option<RequestMetrics> + Send + Sync>,
    /// The request totals for the report.
    pub request_summary: Arc<dyn Fn() -> RequestSummary + Send + Sync>,
}

impl fmt::Debug for Inputs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inputs")
            .field("target", &self.target)
            .field("trigger", &self.trigger)
            .field("handoff_dir", &self.handoff_dir)
            .field("max_actions", &self.max_actions)
            .finish_non_exhaustive()
    }
}

// ---------------------------------------------------------------------------
// The sweep

fn with_stop(receipt: Receipt, phase: Phase, err: &SweepError) -> Option<Vec<u8>> {
    receipt
        .stopped(Stopped {
            phase: phase.to_string(),
            step: err.step.clone(),
            error: error_line(err.cause.as_ref()),
            retryable: err.is_retryable(),
        })
        .canonical_bytes()
        .ok()
}

/// Runs a sweep over `store` and `tracker`. See the module documentation.
pub async fn run<S: HistoryStore, T: IssueTracker>(
    inputs: &Inputs,
    store: &mut S,
    tracker: &mut T,
) -> Result<SweepReport, SweepError> {
    let mut progress = Progress::default();
    let mut seconds = PhaseSeconds::default();
    let mut phase = Instant::now();
    let mut lap = |into: &mut f64| {
        *into = phase.elapsed().as_secs_f64();
        phase = Instant::now();
    };
    let started_at = inputs.clock.now();
    let manifest = &inputs.manifest;

    // 1. Validate the directory's handoffs.
    let (handoffs, mut valid, signatures) = match &inputs.handoff_dir {
        Some((dir, quarantine)) => handoff::validate_dir(
            dir,
            quarantine,
            inputs.max_record_bytes,
            inputs.signing.as_ref(),
        )
        .map_err(|e| SweepError::new(Phase::Validate, e, &progress))?,
        None => (Vec::new(), Vec::new(), handoff::Signatures::new()),
    };
    progress.validated = handoffs.len();
    progress.quarantined = handoffs.iter().filter(|h| !h.valid()).count();
    lap(&mut seconds.validate);

    let finished_at = inputs.clock.now();
    let mut builder = ReceiptBuilder::new(&started_at, &finished_at, &inputs.trigger);
    builder.sweep.workflow_run = inputs.workflow_run.clone();
    for h in &handoffs {
        let source = match &inputs.source_base {
            Some(base) => handoff::relative(&h.source, base),
            None => h.source.to_string_lossy().into_owned(),
        };
        builder.validated.push(ValidatedEntry {
            source: source.clone(),
            digest: h.digest,
            valid: h.valid(),
            errors: h.issues.iter().map(issue_line).collect(),
        });
        if let Some(q) = &h.quarantined {
            let copy = q.copy.as_ref().unwrap_or(&q.why);
            let to = match &inputs.source_base {
                Some(base) => handoff::relative(copy, base),
                None => copy.to_string_lossy().into_owned(),
            };
            builder.skipped.push(SkippedEntry {
                source,
                skip_reason: format!("invalid handoff, quarantined to {to}"),
            });
        }
    }

    // 2. Persist.
    let persist_fail =
        |phase: Phase, e: StepError, p: &Progress, b: &ReceiptBuilder, landed: Option<Receipt>| {
            let mut err = SweepError::new(phase, e, p);
            let mut receipt = landed.unwrap_or_else(|| b.unpersisted(None));
            if let Some(r) = (inputs.requests)() {
                receipt.requests = r;
            }
            err.receipt = with_stop(receipt, phase, &err);
            err
        };
    if let Err(e) = store.begin().await {
        progress.tokens = store.tokens();
        return Err(persist_fail(Phase::Persist, e, &progress, &builder, None));
    }
    progress.tokens = store.tokens();
    let persisted = persist_phase(
        inputs,
        store,
        &mut builder,
        &mut valid,
        &signatures,
        &mut progress,
        &mut seconds,
    )
    .await;
    let ended = store.end().await;
    progress.tokens = store.tokens();
    let (refs, landed, history) = match (persisted, ended) {
        (Ok(done), Ok(())) => done,
        (Err((phase, e, landed)), _) => {
            return Err(persist_fail(phase, e, &progress, &builder, landed));
        }
        (Ok((_, landed, _)), Err(e)) => {
            return Err(persist_fail(
                Phase::Persist,
                e,
                &progress,
                &builder,
                Some(landed.receipt),
            ));
        }
    };

    // The persist phase timed its read-back of history itself.
    lap(&mut seconds.persist);
    seconds.persist -= seconds.read_history;

    // Consumed directory handoffs: their records are in history now.
    let consumed = match &inputs.handoff_dir {
        Some((dir, _)) => {
            let in_history: BTreeSet<_> = landed.persisted.iter().map(|p| p.digest).collect();
            consume::consume_dir(dir, &handoffs, &in_history)
        }
        None => Vec::new(),
    };

    // 3. Reconcile over all of history.
    let rec_fail = |e: StepError, p: &Progress| {
        let mut err = SweepError::new(Phase::Reconcile, e, p);
        let mut receipt = landed.receipt.clone();
        if let Some(r) = (inputs.requests)() {
            receipt.requests = r;
        }
        err.receipt = with_stop(receipt, Phase::Reconcile, &err);
        err
    };
    let tokens_before = progress.tokens.clone();
    let issue_tokens = |t: &T, p: &mut Progress| {
        p.tokens = tokens_before.clone();
        p.tokens.extend(t.tokens());
    };
    if let Err(e) = tracker.begin().await {
        issue_tokens(tracker, &mut progress);
        return Err(rec_fail(e, &progress));
    }
    issue_tokens(tracker, &mut progress);
    let records: Vec<&SealedRecord> = history.iter().map(|(_, s)| s).collect();
    let outcome = reconcile_phase(inputs, tracker, &records, &mut progress).await;
    let ended = tracker.end().await;
    issue_tokens(tracker, &mut progress);
    let outcome = match (outcome, ended) {
        (Ok(o), Ok(())) => o,
        (Err(e), _) | (Ok(_), Err(e)) => return Err(rec_fail(e, &progress)),
    };

    lap(&mut seconds.reconcile);

    // 4. Report.
    let watchdog = report::watchdog(manifest, &history, &finished_at);
    let health = report::health(manifest, &history);
    lap(&mut seconds.report);
    Ok(SweepReport {
        target: inputs.target.clone(),
        history: store.describe(),
        issues: tracker.describe(),
        handoff: inputs.handoff_dir.as_ref().map(|(d, _)| d.clone()),
        quarantine: inputs.handoff_dir.as_ref().map(|(_, q)| q.clone()),
        started_at,
        finished_at,
        handoffs,
        handoff_refs: refs,
        consumed,
        setup_notes: Vec::new(),
        persisted: landed.persisted,
        baseline_changes: landed.baseline_changes,
        commit: landed.commit,
        tip: landed.tip.commit.clone(),
        receipt_path: landed.receipt_path,
        receipt: landed.receipt_bytes,
        persist_attempts: landed.attempts,
        history_records: usize::try_from(landed.index.records()).unwrap_or(usize::MAX),
        index_note: landed.index_note.clone(),
        labels_created: outcome.labels_created,
        applied: progress.applied.clone(),
        pending_actions: outcome.pending,
        issues_created: tracker.created(),
        replans: outcome.replans,
        notes: outcome.notes,
        foreign_issues: outcome.foreign,
        health,
        watchdog,
        tokens: progress.tokens.clone(),
        requests: (inputs.request_summary)(),
        seconds,
    })
}

type PersistDone = (
    Vec<HandoffRefReport>,
    persist::Landed,
    Vec<(String, SealedRecord)>,
);

/// The persist phase: the store's own handoffs, the persist, the consumed
/// handoffs, and the read-back of history. On failure, the receipt that
/// landed (if the failure came after the ref moved).
async fn persist_phase<S: HistoryStore>(
    inputs: &Inputs,
    store: &mut S,
    builder: &mut ReceiptBuilder,
    valid: &mut Vec<SealedRecord>,
    signatures: &handoff::Signatures,
    progress: &mut Progress,
    seconds: &mut PhaseSeconds,
) -> Result<PersistDone, (Phase, StepError, Option<Receipt>)> {
    // Reading the store's own handoffs is part of validating them.
    let fail = |e| (Phase::Persist, e, None);
    let mut refs = Vec::new();
    let listed = store
        .handoffs()
        .await
        .map_err(|e| (Phase::Validate, e, None))?;
    let mut signatures = signatures.clone();
    for mut r in listed {
        let signature = r.signature.take();
        let (mut report, mut sealed) = handoff::check_ref(r);
        if let (Some(policy), Some(s)) = (&inputs.signing, &sealed) {
            match crate::signatures::check_signature(policy, s, Ok(signature)) {
                Ok(Some(sig)) => {
                    signatures.insert(s.digest(), sig);
                }
                Ok(None) => {}
                Err(issue) => {
                    report.issues.push(issue);
                    report.outcome = RefOutcome::Quarantined;
                    sealed = None;
                }
            }
        }
        builder.validated.push(ValidatedEntry {
            source: report.source(),
            digest: report.digest,
            valid: report.valid(),
            errors: report.issues.iter().map(issue_line).collect(),
        });
        if !report.valid() {
            builder.skipped.push(SkippedEntry {
                source: report.source(),
                skip_reason: "invalid handoff ref, left in place (never deleted by the sweep)"
                    .to_owned(),
            });
        }
        valid.extend(sealed);
        refs.push(report);
    }
    progress.handoff_refs = refs.iter().filter(|r| r.valid()).count();
    progress.validated += refs.len();
    progress.quarantined += refs.iter().filter(|r| !r.valid()).count();

    persist::sort_chronologically(valid);
    let policies: BTreeMap<LaneName, BaselinePolicy> = inputs
        .manifest
        .lanes
        .iter()
        .map(|l| (l.name.clone(), l.baseline))
        .collect();
    let requests = inputs.requests.clone();
    let landed = persist::persist(store, valid, &signatures, builder, &policies, &move || {
        requests()
    })
    .await
    .map_err(fail)?;
    progress.persisted = true;
    progress.commit = landed.commit.clone();

    // Consumed store handoffs: only refs whose own verification passed
    // (a refused ref is never deleted, even when its bytes are a record in
    // history) and whose record is in history.
    let in_history: BTreeSet<_> = landed.persisted.iter().map(|p| p.digest).collect();
    let consumable =
        |r: &HandoffRefReport| r.valid() && r.digest.is_some_and(|d| in_history.contains(&d));
    let asked: Vec<(&str, &str, Sha256Digest)> = refs
        .iter()
        .filter(|r| consumable(r))
        .filter_map(|r| Some((r.name.as_str(), r.commit.as_str(), r.digest?)))
        .collect();
    let consumed = store.consume(&asked).await;
    for c in consumed {
        if let Some(r) = refs
            .iter_mut()
            .find(|r| r.name == c.name && r.commit == c.commit && consumable(r))
        {
            r.outcome = c.outcome;
        }
    }
    progress.refs_deleted = refs.iter().filter(|r| r.outcome.is_gone()).count();

    // Read back, at the tip the persist left, the records the rules need.
    let reading = Instant::now();
    let needs = index::needs(&builder.sweep.finished_at);
    let mut landed = landed;
    let stop = |e, landed: &persist::Landed| (Phase::Persist, e, Some(landed.receipt.clone()));
    let needed = match index::read_needed(
        store,
        &mut landed.tip,
        &mut landed.index,
        &landed.known,
        &inputs.manifest,
        &needs,
    )
    .await
    {
        Ok(n) => n,
        Err(e) => return Err(stop(e, &landed)),
    };
    let history = needed.records;
    if let Some(why) = needed.wrong {
        // Commit the rebuilt index so the next sweep does not trust the
        // wrong one.
        let date = benchops::time::Utc::parse(&builder.sweep.finished_at)
            .map(|t| t.unix_seconds())
            .unwrap_or_default();
        let repaired = match index::repair(store, &mut landed.tip, &mut landed.index, date).await {
            Ok(r) => r,
            Err(e) => return Err(stop(e, &landed)),
        };
        landed.index_note = Some(match repaired {
            Some(c) => format!("{why}; the rebuilt index was committed as {c}"),
            None => format!("{why}; the branch moved, so the next sweep rebuilds it again"),
        });
    }
    seconds.read_history = reading.elapsed().as_secs_f64();
    Ok((refs, landed, history))
}

struct ReconcileOutcome {
    labels_created: Vec<String>,
    pending: usize,
    replans: u32,
    notes: Vec<Note>,
    foreign: Vec<ForeignIssue>,
}

/// The label colors benchops gives labels it creates.
const DRIFT_COLOR: &str = "B60205";
const ACCEPTED_COLOR: &str = "0E8A16";
const LANE_COLOR: &str = "1D76DB";
const OTHER_COLOR: &str = "BFD4F2";

/// The labels a plan needs: the drift and accepted labels, a lane label per
/// manifest lane, and every label an action sets.
pub fn label_needs(manifest: &Manifest, actions: &[Action]) -> Vec<LabelNeed> {
    let l = &manifest.labels;
    let mut names: BTreeSet<String> = BTreeSet::new();
    names.insert(l.drift.clone());
    names.insert(l.accepted.clone());
    for lane in &manifest.lanes {
        names.insert(format!("{}{}", l.lane_prefix, lane.name));
    }
    for a in actions {
        if let Action::Open { labels, .. }
        | Action::OpenNotice { labels, .. }
        | Action::AddLabels { labels, .. } = a
        {
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
            LabelNeed {
                name,
                color: color.to_owned(),
                description,
            }
        })
        .collect()
}

/// What an action does, for error steps.
pub fn describe(a: &Action) -> String {
    match a {
        Action::Open { key, .. } => format!("open an issue for {key}"),
        Action::OpenNotice { title, .. } => format!("open an issue: {title}"),
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

/// Plans and applies the reconcile, one action at a time; re-plans when
/// the tracker says an action's target changed under the sweep.
async fn reconcile_phase<T: IssueTracker>(
    inputs: &Inputs,
    tracker: &mut T,
    records: &[&SealedRecord],
    progress: &mut Progress,
) -> Result<ReconcileOutcome, StepError> {
    let hist: Vec<HistoryRecord<'_>> = records.iter().map(|s| HistoryRecord::from(*s)).collect();
    let manifest = &inputs.manifest;
    let mut out = ReconcileOutcome {
        labels_created: Vec::new(),
        pending: 0,
        replans: 0,
        notes: Vec::new(),
        foreign: Vec::new(),
    };
    let mut labels_ready = false;
    'plan: loop {
        let listing = tracker.list(&manifest.labels.drift).await?;
        let plan = reconcile(manifest, &hist, &listing.issues, &inputs.render);
        out.notes = plan.notes;
        out.foreign = listing.foreign;
        progress.planned = progress.applied.len() + plan.actions.len();
        if !plan.actions.is_empty() && !labels_ready {
            let created = tracker
                .prepare_labels(&label_needs(manifest, &plan.actions))
                .await?;
            out.labels_created.extend(created);
            labels_ready = true;
        }
        let total = plan.actions.len();
        for (i, action) in plan.actions.iter().enumerate() {
            if inputs
                .max_actions
                .is_some_and(|max| progress.applied.len() >= max)
            {
                out.pending = total - i;
                break 'plan;
            }
            if !tracker.still_current(action).await? {
                out.replans += 1;
                if out.replans > MAX_REPLANS {
                    return Err(StepError::new(
                        "re-plan the reconcile",
                        Cause::IssuesBusy {
                            replans: out.replans - 1,
                        },
                    ));
                }
                continue 'plan;
            }
            let step = format!("apply action {} of {total} ({})", i + 1, describe(action));
            let applied = tracker.apply(action).await.map_err(|e| StepError {
                step,
                cause: e.cause,
            })?;
            progress.applied.push(applied);
        }
        break;
    }
    let notices = inputs.missed_run_label.is_some() || inputs.health_issue_label.is_some();
    if notices
        && out.pending == 0
        && let Some(watches) = watch_now(inputs, records)
    {
        if let Some(label) = &inputs.missed_run_label {
            missed_runs(inputs, tracker, &watches, label, progress).await?;
        }
        if let Some(label) = &inputs.health_issue_label {
            keep_health_issue(inputs, tracker, &watches, records, label, progress).await?;
        }
    }
    Ok(out)
}

/// The color of the missed-run label.
const MISSED_RUN_COLOR: &str = "fbca04";

/// The missed-run label, as the sweep creates it.
pub fn missed_run_label_need(label: &str) -> LabelNeed {
    LabelNeed {
        name: label.to_owned(),
        color: MISSED_RUN_COLOR.to_owned(),
        description: "A benchmark lane missed its scheduled runs".to_owned(),
    }
}

/// One missed-run issue per lane ([`benchops::watchdog::plan_missed_runs`])
/// from the watchdog over the records in memory, after the drift issues.
/// An action whose issue changed under the sweep is left for the next one.
async fn missed_runs<T: IssueTracker>(
    inputs: &Inputs,
    tracker: &mut T,
    watches: &[benchops::watchdog::LaneWatch],
    label: &str,
    progress: &mut Progress,
) -> Result<(), StepError> {
    let listing = tracker.list(label).await?;
    let actions = benchops::watchdog::plan_missed_runs(watches, &listing.issues, label);
    apply_notices(
        inputs,
        tracker,
        &actions,
        missed_run_label_need(label),
        "missed-run",
        progress,
    )
    .await
}

/// The health issue label, as the sweep creates it.
pub fn health_label_need(label: &str) -> LabelNeed {
    LabelNeed {
        name: label.to_owned(),
        color: "5319e7".to_owned(),
        description: "The benchmark lanes' health, kept up to date by benchops".to_owned(),
    }
}

/// The repository's health issue ([`health_issue`]), after the missed-run
/// issues.
async fn keep_health_issue<T: IssueTracker>(
    inputs: &Inputs,
    tracker: &mut T,
    watches: &[benchops::watchdog::LaneWatch],
    records: &[&SealedRecord],
    label: &str,
    progress: &mut Progress,
) -> Result<(), StepError> {
    let mut sorted: Vec<&SealedRecord> = records.to_vec();
    sorted.sort_by(|a, b| {
        (&a.record().slot, &a.record().finished_at)
            .cmp(&(&b.record().slot, &b.record().finished_at))
    });
    let drift = tracker.list(&inputs.manifest.labels.drift).await?;
    let body = health_issue::body(&inputs.manifest, watches, &sorted, &drift.issues);
    let listing = tracker.list(label).await?;
    let actions: Vec<Action> = health_issue::plan(&listing.issues, label, body)
        .into_iter()
        .collect();
    apply_notices(
        inputs,
        tracker,
        &actions,
        health_label_need(label),
        "health-issue",
        progress,
    )
    .await
}

/// The watchdog over the records in memory, as of the sweep's clock (the
/// default lookback and grace); `None` when the clock does not parse.
fn watch_now(
    inputs: &Inputs,
    records: &[&SealedRecord],
) -> Option<Vec<benchops::watchdog::LaneWatch>> {
    let now = inputs.clock.now().parse::<jiff::Timestamp>().ok()?;
    let metas: Vec<benchops::watchdog::SlotMeta> = records
        .iter()
        .filter_map(|s| benchops::watchdog::SlotMeta::of(s.record(), &s.digest().to_string()))
        .collect();
    let settings = benchops::watchdog::WatchSettings {
        now,
        since: now
            - jiff::SignedDuration::from_hours(i64::from(
                benchops::watchdog::DEFAULT_LOOKBACK_HOURS,
            )),
        grace_minutes: benchops::watchdog::DEFAULT_GRACE_MINUTES,
    };
    Some(benchops::watchdog::watch(
        &inputs.manifest,
        &metas,
        &settings,
    ))
}

/// Applies notice actions (missed-run, health): creates their label first,
/// skips an action whose issue changed under the sweep (the next sweep
/// re-plans), and stops at `max_actions`.
async fn apply_notices<T: IssueTracker>(
    inputs: &Inputs,
    tracker: &mut T,
    actions: &[Action],
    label: LabelNeed,
    what: &str,
    progress: &mut Progress,
) -> Result<(), StepError> {
    if actions.is_empty() {
        return Ok(());
    }
    tracker.prepare_labels(&[label]).await?;
    progress.planned += actions.len();
    for action in actions {
        if inputs
            .max_actions
            .is_some_and(|max| progress.applied.len() >= max)
        {
            break;
        }
        if !tracker.still_current(action).await? {
            continue;
        }
        let step = format!("apply the {what} action ({})", describe(action));
        let applied = tracker.apply(action).await.map_err(|e| StepError {
            step,
            cause: e.cause,
        })?;
        progress.applied.push(applied);
    }
    Ok(())
}

/// The clock's current instant, or why it does not parse.
pub fn clock_instant(clock: &Clock) -> Result<jiff::Timestamp, StepError> {
    let now = clock.now();
    now.parse::<jiff::Timestamp>().map_err(|e| {
        StepError::new(
            "read the clock",
            Cause::Config {
                reason: format!("the clock says {now:?}, not an RFC 3339 instant: {e}"),
            },
        )
    })
}

/// Runs a future to completion on a fresh single-threaded Tokio runtime
/// (what the CLI and the blocking wrappers use). Do not call it from inside
/// a runtime.
pub fn block_on<F: Future>(f: F) -> Result<F::Output, StepError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            StepError::new(
                "start the async runtime",
                Cause::Config {
                    reason: format!("failed to start a Tokio runtime: {e}"),
                },
            )
        })?;
    Ok(rt.block_on(f))
}
