//! A baseline pointer moved by a person (`benchops-publish baseline set`
//! and `reset`), by the rules the persist obeys ([`super::persist`]): one
//! commit over the tip of `benchmark-history` holding the new
//! `baselines/<lane>.json` and a `receipt/v1` whose `baseline_changes[]`
//! entry says who moved the pointer and why
//! ([`BaselineDecision`]); the branch is moved by compare-and-swap (never
//! forced), and the commit is rebuilt on the new tip when another writer
//! won, at most [`MAX_ATTEMPTS`] builds in all. The new pointer names the
//! record it replaces (`previous`), as the sweep's pointers do. A pointer
//! that already names the record is left alone: no commit.

use std::collections::BTreeSet;

use benchops::baseline::BaselinePointer;
use benchops::layout::{self, HISTORY_BRANCH};
use benchops::manifest::BaselinePolicy;
use benchops::receipt::{BaselineChange, BaselineDecision, HistoryInfo, Receipt};
use benchops::schema::Contract;
use benchops::time::Utc;
use benchops::{LaneName, SealedRecord, Sha256Digest};

use super::error::{Cause, StepError, at};
use super::persist::{MAX_ATTEMPTS, ReceiptBuilder, pointers_at};
use super::ports::{Advance, HistoryStore};

/// The move a person asked for.
#[derive(Debug, Clone)]
pub struct BaselineMove {
    /// The lane.
    pub lane: LaneName,
    /// The record the pointer is to name, which is on the branch.
    pub record: SealedRecord,
    /// Its path on the branch.
    pub path: String,
    /// The lane's policy in the manifest (written into the pointer).
    pub policy: BaselinePolicy,
    /// Who and why.
    pub decision: BaselineDecision,
}

/// What the move left on the branch.
#[derive(Debug, Clone)]
pub struct BaselineMoved {
    /// The pointer the branch held before (None: none).
    pub before: Option<BaselinePointer>,
    /// The pointer now.
    pub pointer: BaselinePointer,
    /// The commit made (None: the pointer already named the record).
    pub commit: Option<String>,
    /// The tip it was built on.
    pub parent: Option<String>,
    /// The receipt's path, when a commit was made.
    pub receipt_path: Option<String>,
}

/// Moves `m.lane`'s pointer to `m.record`; see the module documentation.
/// The builder gives the receipt's `sweep` (trigger `baseline`).
pub async fn move_baseline<S: HistoryStore>(
    store: &mut S,
    m: &BaselineMove,
    builder: &ReceiptBuilder,
) -> Result<BaselineMoved, StepError> {
    let finished = Utc::parse(&builder.sweep.finished_at).map_err(at("read sweep.finished_at"))?;
    let digest = m.record.digest();
    let lanes = BTreeSet::from([m.lane.clone()]);
    for attempt in 1..=MAX_ATTEMPTS {
        let mut tip = store.tip().await?;
        // The record must be on this very tip, at its path, with its bytes.
        match tip.files.get(&m.path) {
            Some(blob) if *blob == store.blob_id(m.record.bytes()) => {}
            _ => {
                return Err(StepError::new(
                    format!("check {}", m.path),
                    Cause::Config {
                        reason: format!("record {digest} is not on {HISTORY_BRANCH} at {}", m.path),
                    },
                ));
            }
        }
        let before = pointers_at(store, &tip, &lanes)
            .await?
            .remove(&m.lane)
            .flatten();
        let pointer = BaselinePointer {
            schema: Contract::BaselinePointerV1.id().to_owned(),
            lane: m.lane.clone(),
            record: digest,
            path: m.path.clone(),
            slot: m.record.record().slot.clone(),
            policy: m.policy,
            previous: before.as_ref().map(|p| p.record),
        };
        if before.as_ref().is_some_and(|b| b.record == digest) {
            return Ok(BaselineMoved {
                pointer: before.clone().unwrap_or(pointer),
                before,
                commit: None,
                parent: tip.commit.clone(),
                receipt_path: None,
            });
        }
        let invalid = |what: &str, reasons: Vec<String>| {
            StepError::new(
                format!("build the {what}"),
                Cause::InvalidDocument {
                    what: what.to_owned(),
                    reasons,
                },
            )
        };
        let pointer_bytes = pointer
            .canonical_bytes()
            .map_err(|r| invalid("baseline pointer", r))?;
        let receipt = Receipt {
            schema: Contract::ReceiptV1.id().to_owned(),
            sweep: builder.sweep.clone(),
            validated: Vec::new(),
            persisted: Vec::new(),
            skipped: Vec::new(),
            baseline_changes: vec![BaselineChange {
                lane: m.lane.clone(),
                from: before.as_ref().map(|p| p.record),
                to: digest,
                decision: Some(m.decision.clone()),
            }],
            history: HistoryInfo {
                branch: HISTORY_BRANCH.to_owned(),
                parent: tip.commit.clone(),
                attempts: attempt,
            },
            requests: builder.requests.clone(),
            stopped: None,
        };
        let receipt_bytes = receipt
            .canonical_bytes()
            .map_err(|r| invalid("receipt", r))?;
        let receipt_path =
            layout::receipt_path(&builder.sweep.started_at, &Sha256Digest::of(&receipt_bytes))
                .map_err(at("read sweep.started_at"))?;
        let message = format!(
            "benchops: baseline {} set to {digest} by hand\n\nreceipt: {receipt_path}\n",
            m.lane
        );
        let mut files = vec![
            (layout::baseline_path(&m.lane), pointer_bytes),
            (receipt_path.clone(), receipt_bytes),
        ];
        // The history index stays fresh across a commit that adds no record.
        files.extend(super::index::carried(store, &mut tip).await?);
        let commit = store
            .commit(&tip, &files, &message, finished.unix_seconds())
            .await?;
        match store.advance(&tip, &commit).await? {
            Advance::Moved => continue,
            Advance::Done => {}
        }
        return Ok(BaselineMoved {
            before,
            pointer,
            commit: Some(commit),
            parent: tip.commit.clone(),
            receipt_path: Some(receipt_path),
        });
    }
    Err(StepError::new(
        "update the history branch",
        Cause::RetriesExhausted {
            attempts: MAX_ATTEMPTS,
        },
    ))
}
