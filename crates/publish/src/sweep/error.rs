//! The sweep's one error model for a failed step: a [`StepError`] says the
//! step and the [`Cause`] (the engine adds the phase and what it had done:
//! [`SweepError`](super::SweepError)). Whether a rerun can succeed as is
//! comes from the cause, and for wrapped errors from the inner error itself.
//!
//! The engine's own causes are variants of [`Cause`]. An adapter's failure
//! crosses its port as one boxed [`AdapterCause`]: the engine shows it, with
//! its causes, and asks the adapter's error ([`AdapterFailure`]) whether a
//! rerun can succeed. The engine knows no adapter's error type.

use std::fmt;
use std::path::PathBuf;

use benchops::manifest::ManifestError;
use benchops::time::TimeError;
use benchops::{Sha256Digest, VerifyError};

use crate::signatures::SignersError;
use crate::text::shown_path;

/// Why a sweep stopped. Each leaf error is defined once, here or in the
/// module that produces it.
#[derive(Debug, thiserror::Error)]
pub enum Cause {
    /// An option is unusable.
    #[error("{reason}")]
    Config {
        /// Why.
        reason: String,
    },
    /// A file the sweep needs cannot be read (the manifest, the App key).
    #[error("failed to read {what} {}", shown_path(path))]
    ReadFile {
        /// What the file is.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The manifest is invalid (the message names the file).
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The manifest's `allowed_signers` file cannot be used (the message
    /// names the file).
    #[error(transparent)]
    Signers(#[from] SignersError),
    /// The handoff directory cannot be listed.
    #[error("failed to list handoffs in {}", shown_path(path))]
    ListHandoffs {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// An invalid handoff could not be quarantined.
    #[error("failed to quarantine {} to {}", shown_path(handoff), shown_path(path))]
    Quarantine {
        /// The handoff.
        handoff: PathBuf,
        /// The quarantine file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: benchops::fsio::WriteError,
    },
    /// A timestamp (a slot, the sweep's start or finish) is unusable.
    #[error(transparent)]
    Time(#[from] TimeError),
    /// A record failed re-verification just before being written.
    #[error("record {digest} failed re-verification just before the write, nothing was persisted")]
    InvalidRecord {
        /// The digest the record claimed.
        digest: Sha256Digest,
        /// What verification found.
        #[source]
        source: VerifyError,
    },
    /// The branch holds other bytes at a create-only path. Nothing was
    /// written; not retryable until a person looks.
    #[error(
        "{path} on benchmark-history already holds other bytes (blob {blob}); history is create-only, nothing was persisted"
    )]
    Conflict {
        /// The path.
        path: String,
        /// The git blob id found there.
        blob: String,
    },
    /// The branch kept moving.
    #[error(
        "benchmark-history kept moving: gave up after {attempts} attempts (nothing forced; rerun to converge)"
    )]
    RetriesExhausted {
        /// Builds made.
        attempts: u32,
    },
    /// A file on the branch is not what its path says.
    #[error("{path} on benchmark-history: {reason}")]
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
    /// The issues kept changing under the sweep.
    #[error(
        "the issues changed under the sweep {replans} times (another sweep or a person is editing them); the actions applied so far are kept, rerun to converge"
    )]
    IssuesBusy {
        /// Plans recomputed.
        replans: u32,
    },
    /// An adapter failed (the local git repository or ledger, GitHub): its
    /// own error, which says whether a rerun can succeed.
    #[error(transparent)]
    Adapter(AdapterCause),
}

/// An adapter's own error, as it crosses a port: any error that can tell
/// whether rerunning the same sweep can succeed without a person changing
/// anything. Every such error converts into a [`Cause`], so an adapter
/// reports it with [`StepError::new`] or [`at`].
pub trait AdapterFailure: std::error::Error + Send + Sync + 'static {
    /// Whether rerunning the same sweep can succeed as is.
    fn is_retryable(&self) -> bool;
}

/// An adapter's failure, boxed: shown as the adapter's error (its causes
/// follow as sources), retryable as that error said.
#[derive(Debug)]
pub struct AdapterCause {
    error: Box<dyn std::error::Error + Send + Sync>,
    retryable: bool,
}

impl AdapterCause {
    /// Boxes `error`, asking it once whether a rerun can succeed.
    pub fn new(error: impl AdapterFailure) -> Self {
        AdapterCause {
            retryable: error.is_retryable(),
            error: Box::new(error),
        }
    }

    /// Whether rerunning the same sweep can succeed as is.
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }

    /// The adapter's error, if it is an `E` (for a caller that knows the
    /// adapter, such as the CLI telling a held sweep lock apart).
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.error.downcast_ref()
    }

    /// The adapter's error itself, if it is an `E`; else the cause as it was.
    pub fn downcast<E: std::error::Error + 'static>(self) -> Result<E, AdapterCause> {
        let retryable = self.retryable;
        match self.error.downcast::<E>() {
            Ok(e) => Ok(*e),
            Err(error) => Err(AdapterCause { error, retryable }),
        }
    }
}

impl fmt::Display for AdapterCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for AdapterCause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

impl<E: AdapterFailure> From<E> for Cause {
    fn from(e: E) -> Self {
        Cause::Adapter(AdapterCause::new(e))
    }
}

impl Cause {
    /// Whether rerunning the same sweep can succeed without a person
    /// changing anything. Wrapped errors decide for themselves.
    pub fn is_retryable(&self) -> bool {
        match self {
            Cause::Adapter(a) => a.is_retryable(),
            Cause::ListHandoffs { source, .. } | Cause::ReadFile { source, .. } => {
                io_retryable(source)
            }
            Cause::Quarantine { source, .. } => match source {
                benchops::fsio::WriteError::Io { source, .. } => io_retryable(source),
                _ => false,
            },
            Cause::RetriesExhausted { .. } | Cause::IssuesBusy { .. } => true,
            Cause::Config { .. }
            | Cause::Manifest(_)
            | Cause::Signers(_)
            | Cause::Time(_)
            | Cause::InvalidRecord { .. }
            | Cause::Conflict { .. }
            | Cause::CorruptHistory { .. }
            | Cause::InvalidDocument { .. } => false,
        }
    }
}

/// Transient OS conditions (interrupted, would block, timed out) may pass;
/// a missing file or a permission problem needs a person.
fn io_retryable(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::Interrupted | K::WouldBlock | K::TimedOut | K::ResourceBusy
    )
}

/// A failure inside a phase, as a port or a phase step reports it: the step
/// and the cause. The engine adds the phase and the progress.
#[derive(Debug)]
pub struct StepError {
    /// The step (`read the tip`, `apply action 3 of 5 (close #4)`).
    pub step: String,
    /// Why.
    pub cause: Box<Cause>,
}

impl StepError {
    /// A failure at `step`.
    pub fn new(step: impl Into<String>, cause: impl Into<Cause>) -> Self {
        StepError {
            step: step.into(),
            cause: Box::new(cause.into()),
        }
    }
}

/// The signing policy's `allowed_signers` file could not be loaded: the
/// step that reads it.
impl From<SignersError> for StepError {
    fn from(e: SignersError) -> Self {
        StepError::new("read the allowed signers", e)
    }
}

/// `map_err(at("step"))`: wraps any cause with its step.
pub fn at<E: Into<Cause>>(step: impl Into<String>) -> impl FnOnce(E) -> StepError {
    let step = step.into();
    move |e| StepError::new(step, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(kind: std::io::ErrorKind) -> std::io::Error {
        std::io::Error::new(kind, "test")
    }

    /// A hostile handoff name reaches the terminal escaped.
    #[test]
    fn a_quarantine_error_prints_names_escaped() {
        let e = Cause::Quarantine {
            handoff: PathBuf::from("sealed/\u{1b}[2Jx\n.json"),
            path: PathBuf::from("quarantine/\u{1b}[2Jx\n.json"),
            source: benchops::fsio::WriteError::Conflict {
                path: PathBuf::from("quarantine/x.json"),
            },
        };
        let shown = e.to_string();
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\n'),
            "{shown:?}"
        );
        assert!(shown.contains("sealed/\\u{1b}[2Jx\\n.json"), "{shown}");
    }

    /// An adapter's failure, as its own test error, wrapped once more.
    #[derive(Debug, thiserror::Error)]
    #[error("adapter step")]
    struct TestFailure {
        retryable: bool,
        #[source]
        source: std::io::Error,
    }

    impl AdapterFailure for TestFailure {
        fn is_retryable(&self) -> bool {
            self.retryable
        }
    }

    /// Retryability comes from the inner error, not from the variant.
    #[test]
    fn retryability_follows_the_inner_error() {
        let adapter = |retryable| {
            Cause::from(TestFailure {
                retryable,
                source: io(std::io::ErrorKind::Other),
            })
        };
        assert!(adapter(true).is_retryable());
        let refused = adapter(false);
        assert!(!refused.is_retryable());
        let list = |kind| Cause::ListHandoffs {
            path: PathBuf::from("sealed"),
            source: io(kind),
        };
        assert!(!list(std::io::ErrorKind::PermissionDenied).is_retryable());
        assert!(list(std::io::ErrorKind::Interrupted).is_retryable());
        assert!(Cause::IssuesBusy { replans: 5 }.is_retryable());
        assert!(
            !Cause::Conflict {
                path: "p".into(),
                blob: "b".into()
            }
            .is_retryable()
        );
    }

    /// An adapter's failure shows as the adapter's error and its causes, as
    /// if the engine had no box around it.
    #[test]
    fn an_adapter_cause_shows_the_adapter_error_and_its_sources() {
        let cause = Cause::from(TestFailure {
            retryable: false,
            source: std::io::Error::other("disk on fire"),
        });
        assert_eq!(
            crate::text::error_line(&cause),
            "adapter step: disk on fire"
        );
        let Cause::Adapter(a) = &cause else {
            panic!("an adapter cause: {cause:?}");
        };
        assert!(a.downcast_ref::<TestFailure>().is_some());
        assert!(a.downcast_ref::<std::io::Error>().is_none());
    }
}
