//! The persist engine ([`crate::sweep::persist`]) over the local store, as
//! methods [`LocalPersist`] gives [`LocalHistory`]: [`LocalPersist::persist`]
//! runs it to the end, [`LocalPersist::prepare`] builds its commit without
//! moving the branch (for crash drills, with [`LocalPersist::publish`]).
//! The engine's step errors come back as [`LocalError`]s. They live here,
//! in local mode, and not in the store: the store is an adapter the engine
//! drives, never the other way round. Tests and benches use them to seed a
//! history; the sweep itself runs the whole engine.

use std::collections::BTreeMap;

use benchops::LaneName;
use benchops::manifest::BaselinePolicy;
use benchops::receipt::{BaselineChange, PersistedRecord};
use benchops::seal::{SealedRecord, verify};

use crate::history::{LocalError, LocalHistory, PreparedCommit, StoreError};
use crate::sweep::persist::{self, ReceiptBuilder};
use crate::sweep::{Cause, StepError};
use crate::text::error_line;

/// What [`LocalPersist::persist`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistOutcome {
    /// The commit now at the tip, or None when nothing was new (no commit).
    pub commit: Option<String>,
    /// The tip the commit was built on (or the unchanged tip).
    pub parent: Option<String>,
    /// The branch's tree after the persist (None: no branch).
    pub tree: Option<String>,
    /// How many times the commit was built (from 1).
    pub attempts: u32,
    /// Every record, in input order (duplicates removed).
    pub persisted: Vec<PersistedRecord>,
    /// Baseline pointers that moved.
    pub baseline_changes: Vec<BaselineChange>,
    /// The receipt's canonical bytes.
    pub receipt: Vec<u8>,
    /// The receipt's path when it was written (None: nothing was new).
    pub receipt_path: Option<String>,
}

/// The persist engine over a local history repository.
pub trait LocalPersist {
    /// Persists `records` in one commit on `benchmark-history`, with the
    /// receipt and any baseline pointer change, by the sweep engine's rules
    /// ([`crate::sweep::persist`]) over this store. `policies` maps each lane to its
    /// manifest baseline policy. Retries a lost race on the new tip, up to
    /// [`MAX_ATTEMPTS`](persist::MAX_ATTEMPTS) builds in all; never forces.
    fn persist(
        &self,
        records: &[SealedRecord],
        receipt: &ReceiptBuilder,
        policies: &BTreeMap<LaneName, BaselinePolicy>,
    ) -> Result<PersistOutcome, LocalError>;

    /// Builds the commit [`persist`](Self::persist) would make on the
    /// current tip (as attempt 1) without moving the branch. Its objects are
    /// unreachable until [`publish`](Self::publish) succeeds, so dropping it
    /// is exactly a crash before the ref update.
    fn prepare(
        &self,
        records: &[SealedRecord],
        receipt: &ReceiptBuilder,
        policies: &BTreeMap<LaneName, BaselinePolicy>,
    ) -> Result<PreparedCommit, LocalError>;

    /// Moves the branch from the prepared commit's parent to the prepared
    /// commit, as a compare-and-swap ([`LocalHistory::advance`]). A
    /// prepared commit with nothing new is a no-op.
    fn publish(&self, prepared: &PreparedCommit) -> Result<(), LocalError>;
}

impl LocalPersist for LocalHistory {
    fn persist(
        &self,
        records: &[SealedRecord],
        receipt: &ReceiptBuilder,
        policies: &BTreeMap<LaneName, BaselinePolicy>,
    ) -> Result<PersistOutcome, LocalError> {
        let mut store = self.clone();
        let landed = pollster::block_on(persist::persist(
            &mut store,
            records,
            &BTreeMap::new(),
            receipt,
            policies,
            &|| None,
        ))
        .map_err(from_step)?;
        let tree = match &landed.tip.commit {
            Some(c) => Some(self.tree_of(c)?),
            None => None,
        };
        Ok(PersistOutcome {
            commit: landed.commit,
            parent: landed.parent,
            tree,
            attempts: landed.attempts,
            persisted: landed.persisted,
            baseline_changes: landed.baseline_changes,
            receipt: landed.receipt_bytes,
            receipt_path: landed.receipt_path,
        })
    }

    fn prepare(
        &self,
        records: &[SealedRecord],
        receipt: &ReceiptBuilder,
        policies: &BTreeMap<LaneName, BaselinePolicy>,
    ) -> Result<PreparedCommit, LocalError> {
        let planned = persist::plan_records(records).map_err(from_step)?;
        for p in &planned {
            let digest = p.sealed.digest();
            verify(p.sealed.bytes(), Some(&digest))
                .map_err(|source| LocalError::InvalidRecord { digest, source })?;
        }
        let mut tip = self.tip_index()?;
        let lanes =
            benchops::baseline::lanes_with_proposals(planned.iter().map(|p| &p.sealed), policies);
        let mut store = self.clone();
        let pointers = pollster::block_on(persist::pointers_at(&mut store, &tip, &lanes))
            .map_err(from_step)?;
        let id = |b: &[u8]| self.blob_id_of(b);
        let plan = persist::plan_commit(&tip, &id, &planned, &pointers, receipt, policies, 1)
            .map_err(from_step)?;
        let parent_tree = match &tip.commit {
            Some(c) => Some(self.tree_of(c)?),
            None => None,
        };
        let (commit, tree) = if plan.files.is_empty() {
            (None, parent_tree)
        } else {
            let (files, _, _) =
                pollster::block_on(persist::with_index(&mut store, &mut tip, &planned, &plan))
                    .map_err(from_step)?;
            let (c, t) = self.write_commit(&tip, &files, &plan.message, plan.date_unix)?;
            (Some(c), Some(t))
        };
        Ok(PreparedCommit {
            parent: tip.commit,
            commit,
            tree,
            attempt: 1,
            persisted: plan.persisted,
            baseline_changes: plan.baseline_changes,
            receipt: plan.receipt_bytes,
            receipt_path: plan.receipt_path,
        })
    }

    fn publish(&self, prepared: &PreparedCommit) -> Result<(), LocalError> {
        let Some(new) = prepared.commit.as_deref() else {
            return Ok(());
        };
        Ok(self.advance(prepared.parent.as_deref(), new)?)
    }
}

/// A local error from a sweep engine step of the local store.
fn from_step(e: StepError) -> LocalError {
    let cause = match *e.cause {
        Cause::Adapter(a) => match a.downcast::<StoreError>() {
            Ok(store) => return store.source,
            Err(a) => Cause::Adapter(a),
        },
        cause => cause,
    };
    match cause {
        Cause::Conflict { path, blob } => LocalError::Conflict {
            path,
            existing: blob,
        },
        Cause::RetriesExhausted { attempts } => LocalError::RetriesExhausted { attempts },
        Cause::InvalidRecord { digest, source } => LocalError::InvalidRecord { digest, source },
        Cause::Time(t) => LocalError::InvalidReceipt {
            reasons: vec![format!("{}: {t}", e.step)],
        },
        Cause::InvalidDocument { what, reasons } if what == "receipt" => {
            LocalError::InvalidReceipt { reasons }
        }
        cause => LocalError::Engine {
            step: e.step,
            retryable: cause.is_retryable(),
            message: error_line(&cause),
        },
    }
}
