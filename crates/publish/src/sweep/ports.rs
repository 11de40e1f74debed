//! The two ports the sweep engine works over, and the values that cross
//! them. The engine owns every rule; an adapter only moves bytes.
//!
//! - [`HistoryStore`]: the `benchmark-history` branch. Implemented by the
//!   local git repository ([`crate::history`]) and by GitHub's git data API
//!   ([`crate::github`]).
//! - [`IssueTracker`]: drift issues. Implemented by the local ledger and by
//!   GitHub issues.
//!
//! Every value that crosses a port is defined here (the tip, handoff refs
//! and what became of them, labels, listings, [`Applied`]); an adapter
//! reports a failure as a [`StepError`] whose cause is its own error
//! ([`AdapterFailure`](super::AdapterFailure)), never an engine variant
//! made for it.
//!
//! Both ports have a `begin`/`end` pair around their phase. Local adapters
//! do nothing there; the GitHub adapters mint the phase's installation
//! token in `begin` and revoke it in `end` (which the engine calls on
//! failure too).

use std::fmt;

use benchops::Sha256Digest;
use benchops::reconcile::{Action, ActualIssue};
use benchops::seal::{SealedRecord, VerifyError};

use serde::Serialize;

use super::error::StepError;
use crate::verify::IssueOut;

/// The tip of the history branch and the blob at every path of its tree,
/// and how git names a blob (both history stores name blobs this way):
/// defined once, in `benchops-history`.
pub use benchops_history::{TipIndex, git_blob_id};

/// What a compare-and-swap advance of the branch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advance {
    /// The branch moved from the tip the commit was built on to the commit
    /// (or already pointed at that very commit).
    Done,
    /// The branch is no longer where the commit was built: nothing was
    /// overwritten; the engine rebuilds on the new tip.
    Moved,
}

/// One label an [`IssueTracker`] makes sure exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelNeed {
    /// The label.
    pub name: String,
    /// Its color (6 hex digits).
    pub color: String,
    /// Its description.
    pub description: String,
}

/// The issues as listed at the start of a plan.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// benchops's issues, with what their markers say.
    pub issues: Vec<ActualIssue>,
    /// Issues that look like drift issues but are not benchops's own.
    pub foreign: Vec<ForeignIssue>,
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
    /// Its record is in history and the ref was already gone.
    AlreadyGone,
    /// Its record is in history, but the ref points at another commit now
    /// (pushed again meanwhile): left for the next sweep to read.
    Moved {
        /// The commit it points at now.
        to: String,
    },
    /// Valid, but its record is not in history: left in place.
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

/// A handoff ref as a store read it: the ref, and its single file (or why
/// its layout is wrong).
#[derive(Debug, Clone)]
pub struct RefHandoff {
    /// The full ref name.
    pub name: String,
    /// The commit it pointed at.
    pub commit: String,
    /// The file name and bytes, or why the layout is wrong.
    pub content: Result<(String, Vec<u8>), String>,
    /// The signature the ref carries beside the record, if any.
    pub signature: Option<Vec<u8>>,
}

/// What applying one [`Action`] did, for the sweep summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// A new issue.
    Opened {
        /// Its number.
        issue: u64,
        /// Its title.
        title: String,
    },
    /// Labels added.
    LabelsAdded {
        /// The issue.
        issue: u64,
        /// The labels.
        labels: Vec<String>,
    },
    /// A comment announcing an evidence record.
    Commented {
        /// The issue.
        issue: u64,
        /// The evidence record.
        record: Sha256Digest,
    },
    /// The closing comment for an epoch.
    ClosingComment {
        /// The issue.
        issue: u64,
        /// The epoch.
        epoch: Sha256Digest,
    },
    /// Body replaced, state unchanged.
    BodyUpdated {
        /// The issue.
        issue: u64,
    },
    /// Closed as completed.
    Closed {
        /// The issue.
        issue: u64,
    },
    /// Reopened.
    Reopened {
        /// The issue.
        issue: u64,
    },
    /// A comment that repeated an earlier one's marker was deleted.
    DeletedDuplicateComment {
        /// The issue.
        issue: u64,
        /// The deleted comment.
        comment_id: u64,
    },
    /// Closed as a duplicate.
    ClosedDuplicate {
        /// The duplicate.
        issue: u64,
        /// The issue that tracks the key.
        canonical: u64,
    },
}

impl fmt::Display for Applied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Applied::Opened { issue, title } => write!(f, "#{issue} opened: {title}"),
            Applied::LabelsAdded { issue, labels } => {
                write!(f, "#{issue} labels added: {}", labels.join(", "))
            }
            Applied::Commented { issue, record } => {
                write!(f, "#{issue} commented: evidence record {record}")
            }
            Applied::ClosingComment { issue, epoch } => {
                write!(f, "#{issue} closing comment (latest evidence {epoch})")
            }
            Applied::BodyUpdated { issue } => write!(f, "#{issue} body updated"),
            Applied::Closed { issue } => write!(f, "#{issue} closed (completed)"),
            Applied::Reopened { issue } => write!(f, "#{issue} reopened"),
            Applied::DeletedDuplicateComment { issue, comment_id } => {
                write!(f, "#{issue} duplicate comment {comment_id} deleted")
            }
            Applied::ClosedDuplicate { issue, canonical } => {
                write!(f, "#{issue} closed as a duplicate of #{canonical}")
            }
        }
    }
}

/// An issue that looks like a drift issue (drift label and a drift marker)
/// but was not opened by benchops: left alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForeignIssue {
    /// Its number.
    pub issue: u64,
    /// Its author, if known.
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

/// One phase token (GitHub mode): minted for a phase, revoked when the
/// phase ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseToken {
    /// The phase (`contents` or `issues`).
    pub phase: String,
    /// When GitHub said it would expire (RFC 3339).
    pub expires_at: String,
    /// Whether the revocation succeeded.
    pub revoked: bool,
}

/// The `benchmark-history` branch.
#[expect(
    async_fn_in_trait,
    reason = "the engine is generic over its ports; no adapter is used across threads"
)]
pub trait HistoryStore {
    /// Where the history is, for the summary (`.benchops/history.git`,
    /// `benchmark-history on acme/widgets`).
    fn describe(&self) -> String;

    /// The git blob id that `bytes` get in this store (SHA-1 or SHA-256,
    /// per the repository's object format). The engine compares ids, not
    /// bytes, for the create-only rule, so no blob is read to check it.
    fn blob_id(&self, bytes: &[u8]) -> String;

    /// Starts the persist phase.
    async fn begin(&mut self) -> Result<(), StepError>;

    /// Handoffs that live in the store itself (GitHub's handoff refs), read
    /// once the phase has begun. None by default.
    async fn handoffs(&mut self) -> Result<Vec<RefHandoff>, StepError> {
        Ok(Vec::new())
    }

    /// The tip and its tree.
    async fn tip(&mut self) -> Result<TipIndex, StepError>;

    /// The tip with the blobs under `dirs` (directory prefixes ending in
    /// `/`, or paths), at least. By default the whole tree; a store that
    /// can list part of a tree cheaply lists only those.
    async fn tip_within(&mut self, dirs: &[String]) -> Result<TipIndex, StepError> {
        let _ = dirs;
        self.tip().await
    }

    /// Adds the blobs under `dirs` to a tip from
    /// [`tip_within`](Self::tip_within). By default nothing: the default
    /// tip holds every blob already.
    async fn widen(&mut self, tip: &mut TipIndex, dirs: &[String]) -> Result<(), StepError> {
        let _ = (tip, dirs);
        Ok(())
    }

    /// The bytes of the blob `blob` at `path` of `tip`.
    async fn read_blob(
        &mut self,
        tip: &TipIndex,
        path: &str,
        blob: &str,
    ) -> Result<Vec<u8>, StepError>;

    /// The bytes of several blobs of `tip`, each given as (path, blob id),
    /// in order. By default one [`read_blob`](Self::read_blob) each; a store
    /// that can batch does so.
    async fn read_blobs(
        &mut self,
        tip: &TipIndex,
        blobs: &[(&str, &str)],
    ) -> Result<Vec<Vec<u8>>, StepError> {
        let mut out = Vec::with_capacity(blobs.len());
        for (path, blob) in blobs {
            out.push(self.read_blob(tip, path, blob).await?);
        }
        Ok(out)
    }

    /// Several records of `tip`, each given as (path, blob id, the digest
    /// its name carries), each verified against that digest, in order. By
    /// default [`read_blobs`](Self::read_blobs) then
    /// [`verify_all`](crate::verify::verify_all); a store that can verify
    /// while it reads does so.
    async fn read_records(
        &mut self,
        tip: &TipIndex,
        records: &[(&str, &str, &Sha256Digest)],
    ) -> Result<Vec<Result<SealedRecord, VerifyError>>, StepError> {
        let wanted: Vec<(&str, &str)> = records.iter().map(|(p, b, _)| (*p, *b)).collect();
        let blobs = self.read_blobs(tip, &wanted).await?;
        let items: Vec<(&[u8], Option<&Sha256Digest>)> = blobs
            .iter()
            .zip(records)
            .map(|(b, (_, _, d))| (b.as_slice(), Some(*d)))
            .collect();
        Ok(crate::verify::verify_all(&items))
    }

    /// Writes a commit with `files` added to (or replacing paths of) the
    /// tip's tree, parented on the tip, dated `date_unix` (seconds, UTC),
    /// and returns its id. The branch does not move.
    async fn commit(
        &mut self,
        tip: &TipIndex,
        files: &[(String, Vec<u8>)],
        message: &str,
        date_unix: i64,
    ) -> Result<String, StepError>;

    /// Moves the branch from `tip` to `commit` as a compare-and-swap (a
    /// missing branch is created only if still missing). Never forces.
    async fn advance(&mut self, tip: &TipIndex, commit: &str) -> Result<Advance, StepError>;

    /// After the persist: consumes the store's own handoffs the engine
    /// names (handoff refs deleted), each as (name, the commit it was read
    /// at, its digest). The engine names only handoffs that passed their
    /// own verification and whose record is now in history; a refused one
    /// is never named, so it stays in place as its own quarantine.
    /// Failures are reported per handoff, never raised.
    async fn consume(&mut self, _handoffs: &[(&str, &str, Sha256Digest)]) -> Vec<HandoffRefReport> {
        Vec::new()
    }

    /// Ends the persist phase (called on failure too).
    async fn end(&mut self) -> Result<(), StepError>;

    /// The phase tokens so far (GitHub mode).
    fn tokens(&self) -> Vec<PhaseToken> {
        Vec::new()
    }
}

/// Drift issues.
#[expect(
    async_fn_in_trait,
    reason = "the engine is generic over its ports; no adapter is used across threads"
)]
pub trait IssueTracker {
    /// Where the issues are, for the summary.
    fn describe(&self) -> String;

    /// Starts the reconcile phase.
    async fn begin(&mut self) -> Result<(), StepError>;

    /// Lists benchops's issues (and reports foreign look-alikes). The
    /// tracker remembers what it listed, so that
    /// [`still_current`](Self::still_current) can tell a change.
    async fn list(&mut self, drift_label: &str) -> Result<Listing, StepError>;

    /// Makes sure the labels exist; returns those it created.
    async fn prepare_labels(&mut self, labels: &[LabelNeed]) -> Result<Vec<String>, StepError>;

    /// Whether what `action` targets is still as listed (or as this sweep
    /// left it). False makes the engine re-plan from a fresh listing.
    async fn still_current(&mut self, action: &Action) -> Result<bool, StepError>;

    /// Applies one action.
    async fn apply(&mut self, action: &Action) -> Result<Applied, StepError>;

    /// Ends the reconcile phase (called on failure too).
    async fn end(&mut self) -> Result<(), StepError>;

    /// Whether this sweep created the issue store (the local ledger file).
    fn created(&self) -> bool {
        false
    }

    /// The phase tokens so far (GitHub mode).
    fn tokens(&self) -> Vec<PhaseToken> {
        Vec::new()
    }
}
