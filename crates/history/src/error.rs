//! Why reading or writing the history branch failed: git could not be run
//! or refused, printed something unreadable, or the branch holds something
//! the layout does not allow.

use std::io;
use std::path::PathBuf;

use benchops::layout::{HISTORY_BRANCH, HISTORY_REF};

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
        /// What git printed on stderr (trimmed, at most
        /// [`MAX_STDERR_BYTES`](crate::MAX_STDERR_BYTES) of it).
        stderr: String,
    },
    /// Git printed something this crate cannot read.
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
    /// The path is not a git repository, and is only ever opened, never
    /// initialised ([`LocalHistory::open`](crate::LocalHistory::open)).
    #[error("{} is not a git repository: {reason}", path.display())]
    NoRepository {
        /// The path.
        path: PathBuf,
        /// Why: what git said, or that the path does not exist.
        reason: String,
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
    /// A record's slot is not an RFC 3339 UTC timestamp.
    #[error(transparent)]
    BadTimestamp(#[from] benchops::time::TimeError),
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
        source: benchops::seal::VerifyError,
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
}

fn show_tip(tip: Option<&str>) -> String {
    tip.map_or_else(|| "(absent)".to_owned(), str::to_owned)
}

impl HistoryError {
    /// Whether rebuilding on the current tip and trying again can succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            HistoryError::RefMoved { .. } | HistoryError::RefBusy { .. }
        )
    }
}
