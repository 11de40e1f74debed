//! The problem report of verification: the class of each problem, one
//! problem with its JSON path, and the errors of verifying and sealing.

use std::fmt;

use crate::jcs;
use crate::path::JsonPath;

/// The class of a verification problem. Each class has its own message and
/// lets callers tell tampering apart from a bad draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IssueKind {
    /// Not JSON at all.
    MalformedJson,
    /// JSON, but not the canonical bytes of what it holds.
    NotCanonical,
    /// The bytes do not hash to the expected address.
    DigestMismatch,
    /// A `benchmark-result` version this build does not know.
    UnknownSchemaVersion,
    /// A JSON Schema violation.
    Schema,
    /// A violated semantic invariant (counts, reasons, evidence, plan).
    Semantic,
    /// An object names the same member twice.
    DuplicateMember,
    /// A draft holds an integer that canonical JSON cannot carry exactly
    /// (above 2^53 in magnitude and not a double).
    LossyNumber,
}

impl IssueKind {
    /// A stable short name (`not-canonical`), used in `--json` output.
    pub fn as_str(self) -> &'static str {
        match self {
            IssueKind::MalformedJson => "malformed-json",
            IssueKind::NotCanonical => "not-canonical",
            IssueKind::DigestMismatch => "digest-mismatch",
            IssueKind::UnknownSchemaVersion => "unknown-schema-version",
            IssueKind::Schema => "schema",
            IssueKind::Semantic => "semantic",
            IssueKind::DuplicateMember => "duplicate-member",
            IssueKind::LossyNumber => "lossy-number",
        }
    }
}

impl fmt::Display for IssueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One verification problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyIssue {
    /// Its class.
    pub kind: IssueKind,
    /// Where in the document.
    pub path: JsonPath,
    /// Why.
    pub reason: String,
}

impl fmt::Display for VerifyIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}: {}", self.kind, self.path, self.reason)
    }
}

/// Every problem [`verify`](fn@super::verify) found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} problem(s); first: {}", .issues.len(), .issues.first().map(ToString::to_string).unwrap_or_default())]
pub struct VerifyError {
    /// The problems, in the order they were found (never empty).
    pub issues: Vec<VerifyIssue>,
}

impl VerifyError {
    /// Whether any problem is of class `kind`.
    pub fn has(&self, kind: IssueKind) -> bool {
        self.issues.iter().any(|i| i.kind == kind)
    }
}

/// Why a draft could not be sealed.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// The draft holds a value with no canonical form.
    #[error("failed to canonicalize the draft")]
    Canonicalize(#[from] jcs::SerializeError),
    /// The draft violates the contract.
    #[error("draft is not a valid benchmark-result/v1 record")]
    Invalid(#[from] VerifyError),
    /// The record holds a value canonical JSON cannot carry exactly (an
    /// integer above 2^53).
    #[error("record does not survive canonicalization unchanged at {path}: {reason}")]
    Lossy {
        /// Where the first such value is (`$` when it cannot be told).
        path: JsonPath,
        /// What is wrong with it.
        reason: String,
    },
}
