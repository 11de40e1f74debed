//! The local history store: the history crate's git repository
//! ([`LocalHistory`], from `benchops-history`) as the sweep engine's
//! [`HistoryStore`](crate::sweep::HistoryStore) port (in `store`), and
//! [`LocalError`], what local mode reports when the store, the sweep lock
//! or a persist rule stops it. The layout and contract types are defined
//! once, in the core ([`benchops::layout`], [`benchops::receipt`],
//! [`benchops::baseline`]); the git plumbing once, in `benchops-history`.
//!
//! The rules of a persist (create-only paths, baseline moves, receipts,
//! compare-and-swap) live in the sweep engine ([`crate::sweep::persist`]),
//! which drives this store through its port; the store never drives the
//! engine (`LocalPersist`, which runs it over this store, is local mode's,
//! in `crate::local`).

mod store;

use std::path::PathBuf;

use benchops::Sha256Digest;
use benchops::seal::VerifyError;

pub use benchops::baseline::{BaselinePointer, lanes_with_proposals, plan_baseline_moves};
pub use benchops::layout::{HISTORY_BRANCH, HISTORY_REF, RecordEntry, baseline_path};
pub use benchops::receipt::{
    BaselineChange, HistoryInfo, PersistedRecord, Receipt, RequestMetrics, SkippedEntry, Stopped,
    SweepInfo, ValidatedEntry, WorkflowRun,
};
pub use benchops_history::{HistoryError, LocalHistory, record_path, setup};

use crate::sweep::AdapterFailure;
pub use crate::sweep::persist::{MAX_ATTEMPTS, ReceiptBuilder};

/// A commit built over a tip but not yet published by moving the ref
/// (`LocalPersist::prepare` in `crate::local`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedCommit {
    /// The tip it was built on (None: the branch did not exist).
    pub parent: Option<String>,
    /// The new commit, or None when nothing was new.
    pub commit: Option<String>,
    /// The new commit's tree, or the parent's tree when nothing was new
    /// (None when there is neither).
    pub tree: Option<String>,
    /// Which attempt built it.
    pub attempt: u32,
    /// Every record, in input order (duplicates removed).
    pub persisted: Vec<PersistedRecord>,
    /// Baseline pointers that move in this commit.
    pub baseline_changes: Vec<BaselineChange>,
    /// The receipt's canonical bytes (written only when `commit` is Some).
    pub receipt: Vec<u8>,
    /// The receipt's path.
    pub receipt_path: String,
}

/// Why local mode's store stopped: the repository itself (git, the
/// layout: [`HistoryError`]), the sweep lock, or a rule of the persist.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// The repository: git failed, or the branch holds what the layout
    /// does not allow.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// A record failed re-verification before being written.
    #[error("record {digest} failed re-verification, nothing was persisted: {source}")]
    InvalidRecord {
        /// The digest the record claimed.
        digest: Sha256Digest,
        /// What verification found.
        #[source]
        source: VerifyError,
    },
    /// The history already holds other bytes at a create-only path. The
    /// persist stopped and wrote nothing.
    #[error(
        "{path} on {HISTORY_BRANCH} already holds other bytes (blob {existing}); history is create-only, nothing was persisted"
    )]
    Conflict {
        /// The path.
        path: String,
        /// The git blob id found there.
        existing: String,
    },
    /// A receipt does not satisfy `receipt/v1` (or its times are unusable).
    #[error("receipt does not satisfy receipt/v1: {}", reasons.join("; "))]
    InvalidReceipt {
        /// Every violation, with its JSON path.
        reasons: Vec<String>,
    },
    /// The sweep engine stopped for a reason this module has no variant for.
    #[error("{step}: {message}")]
    Engine {
        /// The step.
        step: String,
        /// The cause, with its sources, on one line.
        message: String,
        /// Whether a rerun can succeed.
        retryable: bool,
    },
    /// Another sweep holds the sweep directory's lock, and it was not
    /// released within the wait. Nothing was read or written. Retryable.
    #[error(
        "another sweep holds the lock {} (waited {waited_ms} ms{}); nothing was read or written; run again once it has finished",
        lock.display(),
        holder.as_deref().map(|h| format!(", held by {h}")).unwrap_or_default()
    )]
    SweepLocked {
        /// The lock file.
        lock: PathBuf,
        /// How long the sweep waited, in milliseconds.
        waited_ms: u128,
        /// What the lock file says about its holder (`pid N`), if anything.
        holder: Option<String>,
    },
    /// The branch kept moving for [`MAX_ATTEMPTS`] attempts. Nothing was
    /// forced; rerunning converges.
    #[error(
        "{HISTORY_BRANCH} kept moving: gave up after {attempts} attempts (nothing forced; rerun to converge)"
    )]
    RetriesExhausted {
        /// Attempts made.
        attempts: u32,
    },
}

/// The local history store failed, as the sweep reports it: the
/// repository, then what failed.
#[derive(Debug, thiserror::Error)]
#[error("history repository {}", path.display())]
pub struct StoreError {
    /// The repository.
    pub path: PathBuf,
    /// What failed.
    #[source]
    pub source: LocalError,
}

impl AdapterFailure for StoreError {
    fn is_retryable(&self) -> bool {
        self.source.is_retryable()
    }
}

impl StoreError {
    /// A failure of the repository at `path`.
    pub(crate) fn at(path: impl Into<PathBuf>) -> impl Fn(HistoryError) -> StoreError {
        let path = path.into();
        move |source| StoreError {
            path: path.clone(),
            source: LocalError::History(source),
        }
    }
}

impl LocalError {
    /// Whether rebuilding on the current tip and trying again can succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            LocalError::History(e) => e.is_retryable(),
            LocalError::RetriesExhausted { .. } | LocalError::SweepLocked { .. } => true,
            LocalError::Engine { retryable, .. } => *retryable,
            LocalError::InvalidRecord { .. }
            | LocalError::Conflict { .. }
            | LocalError::InvalidReceipt { .. } => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Cause;

    /// A git failure reaches the engine as the store's own error, and
    /// whether a rerun helps comes from what git said.
    #[test]
    fn a_store_failure_is_retryable_as_its_history_error_says() {
        let git = |source| {
            Cause::from(StoreError {
                path: PathBuf::from("history.git"),
                source,
            })
        };
        assert!(
            git(LocalError::History(HistoryError::RefBusy {
                stderr: "locked".into()
            }))
            .is_retryable()
        );
        let conflict = git(LocalError::Conflict {
            path: "results/x".into(),
            existing: "abc".into(),
        });
        assert!(!conflict.is_retryable());
        assert!(
            crate::text::error_line(&conflict).starts_with("history repository history.git: results/x on benchmark-history already holds other bytes"),
            "{conflict}"
        );
    }
}
