//! The `receipt/v1` contract: what one sweep of the publisher validated,
//! persisted and skipped, where its commit sits, and (for a sweep that
//! failed) where it stopped. Receipts are written create-only on the
//! history branch at [`crate::layout::receipt_path`], addressed by the
//! sha256 of their canonical bytes.

use serde::{Deserialize, Serialize};

use crate::layout::HISTORY_BRANCH;
use crate::schema::{Contract, canonical_contract_bytes};
use crate::{LaneName, Sha256Digest};

/// `receipt.sweep`: when and why the sweep ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepInfo {
    /// RFC 3339 UTC.
    pub started_at: String,
    /// RFC 3339 UTC. Also the date of the history commit.
    pub finished_at: String,
    /// What started the sweep (`local`, `schedule`, ...).
    pub trigger: String,
    /// The GitHub Actions run, or null for local sweeps.
    pub workflow_run: Option<WorkflowRun>,
}

/// The identity of a GitHub Actions run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowRun {
    /// Run id.
    pub id: u64,
    /// Run attempt (from 1).
    pub attempt: u64,
    /// Workflow name or path.
    pub workflow: String,
}

/// One validated handoff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidatedEntry {
    /// Where the handoff came from (file, handoff ref).
    pub source: String,
    /// Digest of its bytes, when they could be read.
    pub digest: Option<Sha256Digest>,
    /// Whether it is a valid sealed record.
    pub valid: bool,
    /// Every problem found.
    pub errors: Vec<String>,
}

/// One record of a persist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersistedRecord {
    /// The record's digest.
    pub digest: Sha256Digest,
    /// Its path on the branch.
    pub path: String,
    /// Whether it was already there with the same bytes (a no-op).
    pub already_present: bool,
}

/// A handoff that was not persisted, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkippedEntry {
    /// Where it came from.
    pub source: String,
    /// Why it was skipped (non-empty).
    pub skip_reason: String,
}

/// A baseline pointer that moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineChange {
    /// The lane.
    pub lane: LaneName,
    /// The record it pointed at before (null: no pointer yet).
    pub from: Option<Sha256Digest>,
    /// The record it points at now.
    pub to: Sha256Digest,
    /// Who moved the pointer by hand, and why (`benchops-publish baseline
    /// set|reset`). Absent for a move the sweep made by the lane's policy,
    /// so those receipts keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<BaselineDecision>,
}

/// `baseline_changes[].decision`: a person's move of a baseline pointer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineDecision {
    /// Who moved it (a login or a git identity).
    pub by: String,
    /// Why.
    pub reason: String,
}

/// `receipt.history`: where the receipt's commit sits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryInfo {
    /// Always [`HISTORY_BRANCH`].
    pub branch: String,
    /// The commit the new commit builds on (null: the branch was created).
    pub parent: Option<String>,
    /// Which attempt this commit is (from 1).
    pub attempts: u32,
}

/// `receipt.requests`: API traffic. All zeros in local mode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestMetrics {
    /// Requests sent.
    pub requests: u64,
    /// Request body bytes.
    pub bytes_sent: u64,
    /// Response body bytes.
    pub bytes_received: u64,
    /// The last rate-limit remaining seen (null: none seen).
    pub rate_limit_remaining: Option<u64>,
    /// Request ids, in order.
    pub request_ids: Vec<String>,
    /// Time spent in pacing waits, never subtracted from anything.
    pub pacing_wait_ms: u64,
}

/// A `receipt/v1` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receipt {
    /// Always `receipt/v1`.
    pub schema: String,
    /// The sweep.
    pub sweep: SweepInfo,
    /// What was validated.
    pub validated: Vec<ValidatedEntry>,
    /// What was persisted (or found already present).
    pub persisted: Vec<PersistedRecord>,
    /// What was skipped, with reasons.
    pub skipped: Vec<SkippedEntry>,
    /// Baseline pointers that moved.
    pub baseline_changes: Vec<BaselineChange>,
    /// Where the commit sits.
    pub history: HistoryInfo,
    /// API traffic.
    pub requests: RequestMetrics,
    /// Where a failed sweep stopped (None: it did not fail before the
    /// receipt was written). Omitted from the JSON when None, so receipts
    /// of sweeps that did not stop keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
}

/// `receipt.stopped`: the phase and step where a failed sweep stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stopped {
    /// `validate`, `persist` or `reconcile`.
    pub phase: String,
    /// The step within the phase.
    pub step: String,
    /// The error, with every cause, on one line.
    pub error: String,
    /// Whether rerunning the same sweep can succeed as is.
    pub retryable: bool,
}

impl Receipt {
    /// The canonical `receipt/v1` bytes, checked against the schema
    /// (every violation, with its JSON path, on failure).
    pub fn canonical_bytes(&self) -> Result<Vec<u8>, Vec<String>> {
        canonical_contract_bytes(self, Contract::ReceiptV1)
    }

    /// This receipt with `stopped` set.
    #[must_use]
    pub fn stopped(mut self, stopped: Stopped) -> Receipt {
        self.stopped = Some(stopped);
        self
    }

    /// The receipt of a sweep that stopped before anything was persisted:
    /// its verdicts, nothing persisted, no baseline change, and `parent`
    /// the tip last seen (if any).
    pub fn unpersisted(
        sweep: SweepInfo,
        validated: Vec<ValidatedEntry>,
        skipped: Vec<SkippedEntry>,
        requests: RequestMetrics,
        parent: Option<String>,
    ) -> Receipt {
        Receipt {
            schema: Contract::ReceiptV1.id().to_owned(),
            sweep,
            validated,
            persisted: Vec::new(),
            skipped,
            baseline_changes: Vec::new(),
            history: HistoryInfo {
                branch: HISTORY_BRANCH.to_owned(),
                parent,
                attempts: 1,
            },
            requests,
            stopped: None,
        }
    }
}
