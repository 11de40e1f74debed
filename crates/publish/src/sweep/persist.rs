//! The persist: one commit over the tip of `benchmark-history` holding the
//! new records, the baseline pointers that move and the receipt, moved in
//! by compare-and-swap and rebuilt on the new tip when another writer won.
//!
//! [`plan_commit`] is a pure function of the tip's index, the records, the
//! pointers at the tip, the receipt's draft and the lane policies. The
//! create-only rule compares git blob ids, so checking a path that already
//! exists reads nothing:
//!
//! - a record already at its path with the same blob id is a no-op
//!   (`already_present`); another blob there stops the persist with
//!   [`Cause::Conflict`] before anything is written;
//! - a commit is made only when a record or a baseline pointer is new, and
//!   the receipt rides in it. An all-no-op persist writes nothing, whatever
//!   handoffs the sweep saw: a rerun that changes nothing leaves the branch
//!   as it was;
//! - the commit is dated by the receipt's `sweep.finished_at` and its
//!   message is derived from the content, so a rerun with the same inputs
//!   builds the same tree.
//!
//! [`persist`] runs the plan against a [`HistoryStore`], re-verifying every
//! record it is about to write just before the first write, at most
//! [`MAX_ATTEMPTS`] builds in all. Each build lists only the directories it
//! looks at ([`HistoryStore::tip_within`]) and adds the history index of
//! the tip with the new records to the commit ([`with_index`]).

use std::collections::{BTreeMap, BTreeSet};

use benchops::baseline::{BaselinePointer, lanes_with_proposals, plan_baseline_moves};
use benchops::history_index::{HistoryIndex, INDEX_DIR};
use benchops::layout::{self, HISTORY_BRANCH};
use benchops::manifest::BaselinePolicy;
use benchops::receipt::{
    BaselineChange, HistoryInfo, PersistedRecord, Receipt, RequestMetrics, SkippedEntry, SweepInfo,
    ValidatedEntry,
};
use benchops::schema::Contract;
use benchops::seal::verify;
use benchops::time::Utc;
use benchops::{LaneName, SealedRecord, Sha256Digest};

use super::error::{Cause, StepError, at};
use super::index::{self, month_dir};
use super::ports::{Advance, HistoryStore, TipIndex};

/// How many times a persist builds its commit (on a fresh tip each time)
/// before it gives up with [`Cause::RetriesExhausted`].
pub const MAX_ATTEMPTS: u32 = 5;

/// What the caller knows about the sweep; the persist adds what it
/// persisted, the baseline changes and the history position.
///
/// Every record given to the persist whose digest no `validated` entry
/// names gets an entry with source `<hex>.json`, `valid: true` (it was
/// re-verified).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptBuilder {
    /// The sweep.
    pub sweep: SweepInfo,
    /// Validation verdicts from the sweep's validate phase, in order.
    pub validated: Vec<ValidatedEntry>,
    /// Handoffs not persisted, with reasons.
    pub skipped: Vec<SkippedEntry>,
    /// API traffic (zeros for local).
    pub requests: RequestMetrics,
}

impl ReceiptBuilder {
    /// A sweep with `trigger`, no workflow run and zero requests.
    pub fn new(
        started_at: impl Into<String>,
        finished_at: impl Into<String>,
        trigger: impl Into<String>,
    ) -> Self {
        ReceiptBuilder {
            sweep: SweepInfo {
                started_at: started_at.into(),
                finished_at: finished_at.into(),
                trigger: trigger.into(),
                workflow_run: None,
            },
            validated: Vec::new(),
            skipped: Vec::new(),
            requests: RequestMetrics::default(),
        }
    }

    /// A local sweep: trigger `local`.
    pub fn local(started_at: impl Into<String>, finished_at: impl Into<String>) -> Self {
        Self::new(started_at, finished_at, "local")
    }

    /// The receipt of a sweep that stopped before anything was persisted.
    pub fn unpersisted(&self, parent: Option<String>) -> Receipt {
        Receipt::unpersisted(
            self.sweep.clone(),
            self.validated.clone(),
            self.skipped.clone(),
            self.requests.clone(),
            parent,
        )
    }
}

/// A record with its history path.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The record.
    pub sealed: SealedRecord,
    /// Its path on the branch.
    pub path: String,
    /// Its accepted signature, persisted as `<path>.sig`.
    pub signature: Option<Vec<u8>>,
}

/// Removes duplicates (same digest, first kept) and computes each record's
/// path; the order is kept.
pub fn plan_records(records: &[SealedRecord]) -> Result<Vec<Planned>, StepError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(records.len());
    for s in records {
        if !seen.insert(s.digest()) {
            continue;
        }
        let r = s.record();
        let path = layout::record_path(&r.lane, &r.slot, &s.digest())
            .map_err(at(format!("compute the history path of {}", s.file_name())))?;
        out.push(Planned {
            sealed: s.clone(),
            path,
            signature: None,
        });
    }
    Ok(out)
}

/// Sorts records chronologically: slot (as an instant), then digest.
pub fn sort_chronologically(records: &mut [SealedRecord]) {
    fn key(s: &SealedRecord) -> ((Option<Utc>, &str), Sha256Digest) {
        (benchops::time::order_key(&s.record().slot), s.digest())
    }
    records.sort_by(|a, b| key(a).cmp(&key(b)));
}

/// The commit a persist makes on one tip (or that nothing is new).
#[derive(Debug, Clone)]
pub struct CommitPlan {
    /// Files to add to the tip's tree (empty: no commit).
    pub files: Vec<(String, Vec<u8>)>,
    /// Every record, in input order.
    pub persisted: Vec<PersistedRecord>,
    /// Baseline pointers that move.
    pub baseline_changes: Vec<BaselineChange>,
    /// The receipt.
    pub receipt: Receipt,
    /// Its canonical bytes.
    pub receipt_bytes: Vec<u8>,
    /// Its path.
    pub receipt_path: String,
    /// The commit message.
    pub message: String,
    /// The commit date (the receipt's `finished_at`), seconds since the
    /// Unix epoch.
    pub date_unix: i64,
}

fn invalid(what: &str, reasons: Vec<String>) -> StepError {
    StepError::new(
        format!("build the {what}"),
        Cause::InvalidDocument {
            what: what.to_owned(),
            reasons,
        },
    )
}

/// Plans the commit over `tip`. Pure; see the module documentation.
pub fn plan_commit(
    tip: &TipIndex,
    blob_id: &dyn Fn(&[u8]) -> String,
    records: &[Planned],
    pointers: &BTreeMap<LaneName, Option<BaselinePointer>>,
    builder: &ReceiptBuilder,
    policies: &BTreeMap<LaneName, BaselinePolicy>,
    attempt: u32,
) -> Result<CommitPlan, StepError> {
    Utc::parse(&builder.sweep.started_at).map_err(at("read sweep.started_at"))?;
    let finished = Utc::parse(&builder.sweep.finished_at).map_err(at("read sweep.finished_at"))?;

    // 1. Create-only: what the tip holds at each record path.
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut persisted = Vec::with_capacity(records.len());
    for p in records {
        let already_present = match tip.files.get(&p.path) {
            None => false,
            Some(existing) => {
                if *existing != blob_id(p.sealed.bytes()) {
                    return Err(StepError::new(
                        format!("check {}", p.path),
                        Cause::Conflict {
                            path: p.path.clone(),
                            blob: existing.clone(),
                        },
                    ));
                }
                true
            }
        };
        if !already_present {
            files.push((p.path.clone(), p.sealed.bytes().to_vec()));
        }
        // Create-only too: a signature already there (even another valid
        // one, by another key) stays as it is.
        if let Some(sig) = &p.signature {
            let sig_path = format!("{}{}", p.path, benchops::provenance::SIG_SUFFIX);
            if !tip.files.contains_key(&sig_path) {
                files.push((sig_path, sig.clone()));
            }
        }
        persisted.push(PersistedRecord {
            digest: p.sealed.digest(),
            path: p.path.clone(),
            already_present,
        });
    }

    // 2. Baseline pointers of last-clean lanes, in record order.
    let moved = plan_baseline_moves(
        records.iter().map(|p| (&p.sealed, p.path.as_str())),
        policies,
        pointers,
    );
    let mut baseline_changes = Vec::new();
    for (lane, (from, pointer)) in &moved {
        let bytes = pointer
            .canonical_bytes()
            .map_err(|r| invalid(&format!("baseline pointer of lane {lane}"), r))?;
        files.push((layout::baseline_path(lane), bytes));
        baseline_changes.push(BaselineChange {
            lane: lane.clone(),
            from: *from,
            to: pointer.record,
            decision: None,
        });
    }

    // 3. The receipt.
    let mut validated = builder.validated.clone();
    let named: BTreeSet<Sha256Digest> = validated.iter().filter_map(|v| v.digest).collect();
    for p in records {
        if !named.contains(&p.sealed.digest()) {
            validated.push(ValidatedEntry {
                source: p.sealed.file_name(),
                digest: Some(p.sealed.digest()),
                valid: true,
                errors: Vec::new(),
            });
        }
    }
    let receipt = Receipt {
        schema: Contract::ReceiptV1.id().to_owned(),
        sweep: builder.sweep.clone(),
        validated,
        persisted: persisted.clone(),
        skipped: builder.skipped.clone(),
        baseline_changes: baseline_changes.clone(),
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

    let new_count = persisted.iter().filter(|p| !p.already_present).count();
    let message = format!(
        "benchops: persist {new_count} record(s), {} already present, {} baseline change(s)\n\nreceipt: {receipt_path}\n",
        persisted.len() - new_count,
        baseline_changes.len()
    );
    let mut plan = CommitPlan {
        files: Vec::new(),
        persisted,
        baseline_changes,
        receipt,
        receipt_bytes,
        receipt_path,
        message,
        date_unix: finished.unix_seconds(),
    };
    if files.is_empty() {
        // Nothing new: no commit, and no receipt alone.
        return Ok(plan);
    }
    if let Some(existing) = tip.files.get(&plan.receipt_path) {
        if *existing != blob_id(&plan.receipt_bytes) {
            return Err(StepError::new(
                format!("check {}", plan.receipt_path),
                Cause::Conflict {
                    path: plan.receipt_path.clone(),
                    blob: existing.clone(),
                },
            ));
        }
    } else {
        files.push((plan.receipt_path.clone(), plan.receipt_bytes.clone()));
    }
    plan.files = files;
    Ok(plan)
}

/// What a persist left on the branch.
#[derive(Debug, Clone)]
pub struct Landed {
    /// The commit this persist made, or None when nothing was new.
    pub commit: Option<String>,
    /// The tip the last build was made on (or the unchanged tip).
    pub parent: Option<String>,
    /// The branch after the persist: its commit and every path.
    pub tip: TipIndex,
    /// Builds made (from 1).
    pub attempts: u32,
    /// Every record, in input order (duplicates removed).
    pub persisted: Vec<PersistedRecord>,
    /// Baseline pointers that moved.
    pub baseline_changes: Vec<BaselineChange>,
    /// The receipt (committed when `receipt_path` is Some).
    pub receipt: Receipt,
    /// Its canonical bytes.
    pub receipt_bytes: Vec<u8>,
    /// The receipt's path when this persist wrote it.
    pub receipt_path: Option<String>,
    /// Records whose bytes this persist wrote or matched, by path (the
    /// read-back does not read them again).
    pub known: BTreeMap<String, SealedRecord>,
    /// The history index at the tip after the persist.
    pub index: HistoryIndex,
    /// Why the index was rebuilt, when it was.
    pub index_note: Option<String>,
}

/// The directories of the tip a persist of `records` looks at: the
/// records' months, the baseline pointers, the receipt's month and the
/// index.
fn persist_dirs(records: &[Planned], builder: &ReceiptBuilder) -> Vec<String> {
    let mut dirs: BTreeSet<String> = records.iter().map(|p| month_dir(&p.path)).collect();
    dirs.insert("baselines/".to_owned());
    dirs.insert(INDEX_DIR.to_owned());
    if let Ok(t) = Utc::parse(&builder.sweep.started_at) {
        dirs.insert(format!("receipts/{}/", t.year_month()));
    }
    dirs.into_iter().collect()
}

/// Reads the pointers at `tip` of the lanes that need them.
pub async fn pointers_at<S: HistoryStore>(
    store: &mut S,
    tip: &TipIndex,
    lanes: &BTreeSet<LaneName>,
) -> Result<BTreeMap<LaneName, Option<BaselinePointer>>, StepError> {
    let mut out = BTreeMap::new();
    for lane in lanes {
        let path = layout::baseline_path(lane);
        let pointer = match tip.files.get(&path) {
            None => None,
            Some(blob) => {
                let blob = blob.clone();
                let bytes = store.read_blob(tip, &path, &blob).await?;
                let p = BaselinePointer::from_bytes(&bytes, lane).map_err(|reasons| {
                    StepError::new(
                        format!("read {path}"),
                        Cause::CorruptHistory {
                            path: path.clone(),
                            reason: format!(
                                "not a valid baseline-pointer/v1: {}",
                                reasons.join("; ")
                            ),
                        },
                    )
                })?;
                Some(p)
            }
        };
        out.insert(lane.clone(), pointer);
    }
    Ok(out)
}

/// The files of a commit that writes `plan` over `tip`: the plan's, and
/// the history index of the tip (opened, or rebuilt when it must be) with
/// the records the commit adds, so the index lands in the same commit as
/// its records. Returns the files, the index after the commit, and why it
/// was rebuilt.
pub async fn with_index<S: HistoryStore>(
    store: &mut S,
    tip: &mut TipIndex,
    planned: &[Planned],
    plan: &CommitPlan,
) -> Result<(Vec<(String, Vec<u8>)>, HistoryIndex, Option<String>), StepError> {
    let opened = index::open(store, tip).await?;
    let (mut idx, mut note) = (opened.index, opened.rebuilt);
    let writing: BTreeSet<&str> = plan.files.iter().map(|(p, _)| p.as_str()).collect();
    let new: Vec<&SealedRecord> = planned
        .iter()
        .filter(|p| writing.contains(p.path.as_str()))
        .map(|p| &p.sealed)
        .collect();
    let unread = idx.unread_for(new.iter().copied());
    if let Err(why) = index::load_segments(store, tip, &mut idx, &unread).await? {
        idx = index::rebuild(store, tip).await?;
        note = Some(format!(
            "history index rebuilt from {} record(s): {why}",
            idx.records()
        ));
    }
    idx.add(new);
    let mut files = plan.files.clone();
    files.extend(idx.files(tip.commit.as_deref()));
    Ok((files, idx, note))
}

/// Persists `records` (in the given order, duplicates dropped) in one
/// commit; see the module documentation. `requests` gives the request
/// metrics so far, which each attempt's receipt records.
pub async fn persist<S: HistoryStore>(
    store: &mut S,
    records: &[SealedRecord],
    signatures: &BTreeMap<Sha256Digest, Vec<u8>>,
    builder: &ReceiptBuilder,
    policies: &BTreeMap<LaneName, BaselinePolicy>,
    requests: &dyn Fn() -> Option<RequestMetrics>,
) -> Result<Landed, StepError> {
    let mut planned = plan_records(records)?;
    for p in &mut planned {
        p.signature = signatures.get(&p.sealed.digest()).cloned();
    }
    let lanes = lanes_with_proposals(planned.iter().map(|p| &p.sealed), policies);
    let known: BTreeMap<String, SealedRecord> = planned
        .iter()
        .map(|p| (p.path.clone(), p.sealed.clone()))
        .collect();
    let mut reverified: BTreeSet<Sha256Digest> = BTreeSet::new();
    let dirs = persist_dirs(&planned, builder);
    for attempt in 1..=MAX_ATTEMPTS {
        let mut tip = store.tip_within(&dirs).await?;
        let pointers = pointers_at(store, &tip, &lanes).await?;
        let mut b = builder.clone();
        if let Some(r) = requests() {
            b.requests = r;
        }
        let plan = {
            let id = |bytes: &[u8]| store.blob_id(bytes);
            plan_commit(&tip, &id, &planned, &pointers, &b, policies, attempt)?
        };
        if plan.files.is_empty() {
            let opened = index::open(store, &mut tip).await?;
            return Ok(Landed {
                commit: None,
                parent: tip.commit.clone(),
                tip,
                attempts: attempt,
                persisted: plan.persisted,
                baseline_changes: plan.baseline_changes,
                receipt: plan.receipt,
                receipt_bytes: plan.receipt_bytes,
                receipt_path: None,
                known,
                index: opened.index,
                index_note: opened.rebuilt,
            });
        }
        // Every record about to be written is verified again, from its
        // bytes, just before the first write.
        for p in &planned {
            let digest = p.sealed.digest();
            let writing = plan.files.iter().any(|(path, _)| *path == p.path);
            if writing && reverified.insert(digest) {
                verify(p.sealed.bytes(), Some(&digest)).map_err(|source| {
                    StepError::new(
                        format!("re-verify {}", p.path),
                        Cause::InvalidRecord { digest, source },
                    )
                })?;
            }
        }
        let (files, mut idx, index_note) = with_index(store, &mut tip, &planned, &plan).await?;
        let commit = store
            .commit(&tip, &files, &plan.message, plan.date_unix)
            .await?;
        match store.advance(&tip, &commit).await? {
            Advance::Moved => continue,
            Advance::Done => {}
        }
        idx.written(tip.commit.as_deref());
        let mut after = tip.clone();
        after.parent = tip.commit.clone();
        after.commit = Some(commit.clone());
        after.base_tree = tip.tree.clone().or(tip.base_tree.clone());
        after.tree = None;
        for (path, bytes) in &files {
            after.files.insert(path.clone(), store.blob_id(bytes));
        }
        return Ok(Landed {
            commit: Some(commit),
            parent: tip.commit.clone(),
            tip: after,
            attempts: attempt,
            persisted: plan.persisted,
            baseline_changes: plan.baseline_changes,
            receipt: plan.receipt,
            receipt_bytes: plan.receipt_bytes,
            receipt_path: Some(plan.receipt_path),
            known,
            index: idx,
            index_note,
        });
    }
    Err(StepError::new(
        "update the history branch",
        Cause::RetriesExhausted {
            attempts: MAX_ATTEMPTS,
        },
    ))
}
