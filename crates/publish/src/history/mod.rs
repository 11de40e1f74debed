//! The history branch `benchmark-history`: its layout and contract types
//! (defined once, in the core: [`benchops::layout`], [`benchops::receipt`],
//! [`benchops::baseline`]) and the local store, a real git repository on
//! disk ([`git::LocalHistory`]).
//!
//! The rules of a persist (create-only paths, baseline moves, receipts,
//! compare-and-swap) live in the sweep engine ([`crate::sweep::persist`]),
//! which drives this store through its port; the store never drives the
//! engine (`LocalHistory::persist`, which runs it over this store, is local
//! mode's, in `crate::local`).

pub(crate) mod command;
pub mod git;
pub mod setup;
pub(crate) mod stream;

use std::io;
use std::path::PathBuf;

use benchops::Sha256Digest;
use benchops::seal::VerifyError;

pub use benchops::baseline::{BaselinePointer, lanes_with_proposals, plan_baseline_moves};
pub use benchops::layout::{HISTORY_BRANCH, HISTORY_REF, RecordEntry, baseline_path};
pub use benchops::receipt::{
    BaselineChange, HistoryInfo, PersistedRecord, Receipt, RequestMetrics, SkippedEntry, Stopped,
    SweepInfo, ValidatedEntry, WorkflowRun,
};
pub use git::{LocalHistory, PreparedCommit};

use crate::sweep::AdapterFailure;
pub use crate::sweep::persist::{MAX_ATTEMPTS, ReceiptBuilder};

/// The slot of a record as it appears in history paths: `YYYYMMDDTHHMMSSZ`.
pub fn compact_slot(slot: &str) -> Result<String, HistoryError> {
    Ok(benchops::time::Utc::parse(slot)?.compact())
}

/// The history path of a sealed record (see [`benchops::layout`]).
pub fn record_path(sealed: &benchops::SealedRecord) -> Result<String, HistoryError> {
    let r = sealed.record();
    Ok(benchops::layout::record_path(
        &r.lane,
        &r.slot,
        &sealed.digest(),
    )?)
}

/// Why a history operation failed.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// `git` could not be started or talked to.
    #[error("failed to run `git {args}`")]
    Spawn {
        /// The git arguments.
        args: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A git command failed.
    #[error("`git {args}` failed ({status}): {stderr}")]
    Git {
        /// The git arguments.
        args: String,
        /// The exit status.
        status: String,
        /// What git printed on stderr (trimmed).
        stderr: String,
    },
    /// Git printed something this module cannot read.
    #[error("unexpected output from `git {args}`: {output:?}")]
    UnexpectedOutput {
        /// The git arguments.
        args: String,
        /// The output.
        output: String,
    },
    /// The path exists, is not a git repository and is not an empty
    /// directory that could become one.
    #[error("{} is not a git repository (nor an empty directory to initialise)", path.display())]
    NotARepository {
        /// The path.
        path: PathBuf,
    },
    /// A file-system step failed.
    #[error("failed to {step} {}", path.display())]
    Io {
        /// What was being done.
        step: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A record failed re-verification before being written.
    #[error("record {digest} failed re-verification, nothing was persisted: {source}")]
    InvalidRecord {
        /// The digest the record claimed.
        digest: Sha256Digest,
        /// What verification found.
        #[source]
        source: VerifyError,
    },
    /// A record's slot (or a receipt's time) is not an RFC 3339 UTC
    /// timestamp.
    #[error(transparent)]
    BadTimestamp(#[from] benchops::time::TimeError),
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
    /// A path is not a record path of the layout.
    #[error(transparent)]
    BadPath(#[from] benchops::layout::BadRecordPath),
    /// Nothing at that path on the branch.
    #[error("{path} is not on {HISTORY_BRANCH}")]
    NotFound {
        /// The path.
        path: String,
    },
    /// A stored record does not verify against the digest in its name.
    #[error("{path} on {HISTORY_BRANCH} does not hold a valid record: {source}")]
    CorruptRecord {
        /// The path.
        path: String,
        /// What verification found.
        #[source]
        source: VerifyError,
    },
    /// A stored record is valid but its lane or slot do not match its path.
    #[error("{path} holds a record of lane {lane} slot {slot}, which belongs elsewhere")]
    Misplaced {
        /// The path.
        path: String,
        /// The record's lane.
        lane: String,
        /// The record's slot.
        slot: String,
    },
    /// A receipt does not satisfy `receipt/v1` (or its times are unusable).
    #[error("receipt does not satisfy receipt/v1: {}", reasons.join("; "))]
    InvalidReceipt {
        /// Every violation, with its JSON path.
        reasons: Vec<String>,
    },
    /// A baseline pointer (stored or about to be written) does not satisfy
    /// `baseline-pointer/v1`.
    #[error("baseline pointer of lane {lane} does not satisfy baseline-pointer/v1: {}", reasons.join("; "))]
    InvalidPointer {
        /// The lane.
        lane: String,
        /// Every violation.
        reasons: Vec<String>,
    },
    /// The branch moved between reading the tip and updating the ref; the
    /// update was refused, nothing was overwritten. Retryable.
    #[error("{HISTORY_BRANCH} moved from {} to {} meanwhile; the update was refused (never forced)", show_tip(.expected.as_deref()), show_tip(.actual.as_deref()))]
    RefMoved {
        /// The tip the commit was built on.
        expected: Option<String>,
        /// The tip found afterwards.
        actual: Option<String>,
    },
    /// The ref's lock file stayed in place for the whole wait while the
    /// tip did not move. Retryable: a sweep removes a lock left by a killed
    /// git process before it starts (under its sweep lock).
    #[error(
        "{HISTORY_REF} stayed locked for the whole wait while its tip did not move (git said: {stderr}); the next sweep removes a lock left by a killed git process before it starts, so a rerun clears it; if this repeats, a program other than benchops is writing the repository"
    )]
    RefBusy {
        /// What git said.
        stderr: String,
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
    pub source: HistoryError,
}

impl AdapterFailure for StoreError {
    fn is_retryable(&self) -> bool {
        self.source.is_retryable()
    }
}

fn show_tip(tip: Option<&str>) -> String {
    tip.map_or_else(|| "(absent)".to_owned(), str::to_owned)
}

impl HistoryError {
    /// Whether rebuilding on the current tip and trying again can succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            HistoryError::RefMoved { .. }
                | HistoryError::RefBusy { .. }
                | HistoryError::RetriesExhausted { .. }
                | HistoryError::SweepLocked { .. }
                | HistoryError::Engine {
                    retryable: true,
                    ..
                }
        )
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
            git(HistoryError::RefBusy {
                stderr: "locked".into()
            })
            .is_retryable()
        );
        let conflict = git(HistoryError::Conflict {
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
