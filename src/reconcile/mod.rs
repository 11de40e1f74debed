//! Lane-aware drift issue reconciliation (contract 6, amendment A9), as a pure
//! function: sealed history + schedule manifest + the issues that exist →
//! an ordered list of write [`Action`]s and informational [`Note`]s.
//!
//! Nothing here reads a clock, the network, a file or the environment. Time is
//! not an input at all: records are ordered by their own fields, so the plan
//! is a function of its inputs only.
//!
//! The code is in five parts, each re-exported here: `markers` writes the
//! hidden markers and reads an issue's body and comments back
//! ([`ActualIssue`]); `status` derives each key's desired state from history
//! ([`drift_statuses`]); `plan` computes the writes ([`reconcile`]);
//! `render` writes titles, bodies and comments ([`render_issue_body`]), with
//! `culprit` for the v3 parts (the culprit commit, the same-session
//! verdict); and
//! `inert` makes the text records contribute to them inert ([`inert`]).
//!
//! # Drift keys and what history says
//!
//! A drift key is a case id plus a metric, taken from the records'
//! `publication.drift_reports` ([`DriftKey`]). For each key ever reported,
//! [`drift_statuses`] derives:
//!
//! - **evidence**: every record whose drift reports include the key, in record
//!   order (slot, then `finished_at`, then digest: a total order; timestamps
//!   compare as instants, not as text). The last one is the key's **epoch**.
//! - for every manifest lane, whether it **currently covers** the case
//!   ([`Lane::covers`](crate::manifest::Lane::covers)) and, when it does, its
//!   latest record and its **clearing record**: its latest record *after the
//!   epoch* in which the case does not reproduce (the case is in
//!   `publication.cleared`, or its outcome is pass). A record where the case
//!   drifts on another metric, is skipped, errors or is absent does not clear.
//! - the key's [`Standing`]:
//!   - `Cleared`: at least one lane covers the case and *every* covering lane
//!     has a clearing record. A sentinel that covers a subset of cases is not a
//!     covering lane of a comprehensive-only case, so it can never close it.
//!   - `Reproducing`: some covering lane has no clearing record (its latest
//!     record still reports the drift, or it has not run since).
//!   - `Uncovered`: no lane covers the case any more. **Choice:** benchops does
//!     not close on absence of evidence; the issue stays open and its body
//!     says that a person must close it, accept it, or cover the case again.
//!
//! A lane that stops covering the case stops holding the issue open; a lane
//! that starts covering it holds a still-open issue open until it clears.
//!
//! # What an issue carries (hidden markers)
//!
//! | where | marker | meaning |
//! |---|---|---|
//! | body | `<!-- benchops:drift key=<case>/<metric> -->` | the key (metric percent-encoded outside `[A-Za-z0-9._-]`) |
//! | body | `<!-- benchops:state open\|closed epoch=sha256:… -->` | the state benchops last set, and for which epoch |
//! | body | `<!-- benchops:evidence record=sha256:… -->` | evidence announced when the issue was opened |
//! | comment | `<!-- benchops:evidence record=sha256:… -->` | evidence announced by that comment |
//! | comment | `<!-- benchops:closed epoch=sha256:… -->` | the closing comment for that epoch |
//!
//! Each marker is a line of its own, and is read back only from where
//! benchops writes it: the drift and state markers from the leading block
//! of the body (its first lines, all marker lines), the body's evidence
//! markers from its trailing block (its last non-blank lines, all marker
//! lines), a comment's markers from its leading block, each in the exact
//! form benchops writes. A marker inside copied text is never read, and the
//! text a record contributes is made inert besides ([`inert`]): it holds no
//! `<!--` at all.
//!
//! The state marker is written **in the same request** as every state change
//! benchops makes (open, close, reopen are one create or one update of body
//! and state together). That is how a closed issue tells "benchops closed it"
//! (state marker `closed`) from "a person closed it" (marker `open` or none),
//! and an open issue tells "a person reopened what benchops closed" (marker
//! `closed`) apart, with no dependence on comment order or a crash between two
//! requests. Evidence markers in the body are copied unchanged whenever
//! benchops rewrites it, so what the opening announced stays announced.
//!
//! # The state machine (per key; the canonical issue is the lowest number)
//!
//! "New evidence" is evidence with no marker in the body or any comment.
//! "Labels" means: add the drift label and `lane:<lane>` for each lane of the
//! new evidence, if missing (never removes a label).
//!
//! | actual issue | standing / epoch | actions, in this order |
//! |---|---|---|
//! | none | not `Cleared` | `Open` (body lists and marks all evidence; labels) |
//! | none | `Cleared` | nothing: the drift was sealed and cleared before it was announced; history holds it |
//! | has the `accepted` label (any state) | any | nothing, ever; note `Accepted` with the suppressed evidence |
//! | open, benchops-owned | not `Cleared` | labels, one `Comment` per new evidence, `UpdateBody` if the rendered body differs |
//! | open, benchops-owned | `Cleared` | labels, comments, `Close` (body with marker `closed`), closing `Comment` |
//! | closed by benchops at epoch `e` | epoch ≠ `e`, not `Cleared` | `Reopen` (body with marker `open`), labels, comments |
//! | closed by benchops at epoch `e` | epoch ≠ `e`, `Cleared` | labels, comments, `UpdateBody` (marker `closed` for the new epoch), closing `Comment` |
//! | closed by benchops at epoch `e` | epoch = `e` | labels and comments for late (older) evidence only; the closing `Comment` if a crash lost it. Never reopened without new evidence, even if coverage changed |
//! | closed by a person | any | one `Comment` per new evidence saying the drift reproduced again, that benchops leaves the issue closed, and how to hand it back (reopen) or silence it (accepted label). Never reopened, no labels, no body edit; note `ClosedByHuman` while it still reproduces |
//! | reopened by a person after benchops closed it at epoch `e` | epoch = `e` | labels and comments only; never re-closed for that epoch; note `HeldOpenByHuman` when it would otherwise close |
//! | reopened by a person … | epoch ≠ `e` | as "open, benchops-owned" (the drift returned; the next body write takes it back) |
//!
//! Open issues' bodies are kept current (`UpdateBody`); closed bodies are
//! frozen except when the epoch changes. A person's edit of an open body is
//! overwritten on the next sweep: discussion belongs in comments.
//!
//! Other issues carrying the key (a race between two sweeps) are closed with
//! `CloseDuplicate`, whose body drops the drift marker, unless they are closed
//! already or accepted; note `Duplicates` either way. An issue whose key has no
//! evidence in history is left alone (note `UnknownKey`).
//!
//! Two racing sweeps can also both post the same comment. When benchops's own
//! comments on the canonical issue (unless accepted) carry the same evidence or
//! closed marker more than once, the earliest (lowest comment id) is kept and
//! each later comment whose every marker an earlier kept comment carries is
//! deleted with `DeleteDuplicateComment`, after the key's other actions and
//! before `CloseDuplicate`. Deleting a repeat removes no announcement, so it
//! changes no other action.
//!
//! # Idempotence and retries
//!
//! Every action is one write request and every write is recorded by a marker
//! or a state the next reconcile reads back, so applying a plan and
//! reconciling again yields no actions, and applying any prefix of a plan
//! (a crash) and reconciling again yields the rest of it. Labels precede
//! comments (a comment ends the need to label), and a body that records a
//! state precedes the comment that explains it (the comment is then re-derived
//! from the body's marker). Actions are ordered by key, then as in the table.
//! Adapters should pass only comments benchops itself wrote where the platform
//! can tell, so a copied marker cannot silence an announcement.

use std::fmt;

use crate::digest::Sha256Digest;
use crate::names::{CaseId, LaneName};
use crate::record::ResultRecord;
use crate::seal::SealedRecord;

mod culprit;
mod inert;
mod markers;
mod plan;
mod render;
mod status;
mod trend;

pub use inert::{BREAK, NAME_CHARS, Place, TEXT_CHARS, inert};
pub use markers::{
    ActualIssue, Closer, CommentMarker, IssueComment, KeyParseError, StateMarker, closed_marker,
    drift_marker, evidence_marker, marker_text, quoted_drift_key, state_marker,
};
pub use plan::{Action, Note, Plan, reconcile};
pub use render::{
    RenderOptions, compact_slot, default_history_path, render_closing_comment,
    render_duplicate_body, render_evidence_comment, render_issue_body, render_title,
    render_trend_chart,
};
pub use status::{
    CaseStatus, DriftStatus, EvidenceEntry, LaneStatus, Standing, case_status, drift_statuses,
};
pub use trend::{ChangeAnnotation, TREND_RECORDS, latest_change};

/// The identity of a drift issue: a case and the metric that drifted.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct DriftKey {
    /// The case.
    pub case: CaseId,
    /// The metric.
    pub metric: String,
}

impl DriftKey {
    /// A key.
    pub fn new(case: CaseId, metric: impl Into<String>) -> Self {
        Self {
            case,
            metric: metric.into(),
        }
    }
}

impl fmt::Display for DriftKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} · {}", self.case, self.metric)
    }
}

/// One sealed record of history, with its content address. The caller has
/// verified it (the publisher only reconciles over validated records).
#[derive(Debug, Clone, Copy)]
pub struct HistoryRecord<'a> {
    /// The record's digest.
    pub digest: Sha256Digest,
    /// The record.
    pub record: &'a ResultRecord,
}

impl<'a> From<&'a SealedRecord> for HistoryRecord<'a> {
    fn from(s: &'a SealedRecord) -> Self {
        Self {
            digest: s.digest(),
            record: s.record(),
        }
    }
}

/// Open or closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IssueState {
    /// Open.
    Open,
    /// Closed.
    Closed,
}

/// Where a record sits in history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRef {
    /// Its lane.
    pub lane: LaneName,
    /// Its slot (RFC 3339 UTC).
    pub slot: String,
    /// When it finished (RFC 3339 UTC).
    pub finished_at: String,
    /// Its digest.
    pub digest: Sha256Digest,
}
