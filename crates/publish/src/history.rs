//! The local history store: a real git repository on disk whose
//! `benchmark-history` branch holds sealed records, receipts and per-lane
//! baseline pointers, written with the same create-only rules as the GitHub
//! history.
//!
//! Everything goes through the `git` CLI with plumbing commands only; the
//! work tree and the repository's own index are never touched (a non-bare
//! repository works, but should not have `benchmark-history` checked out).
//!
//! # Layout
//!
//! | path | content |
//! |---|---|
//! | `results/<lane>/<yyyy>/<mm>/<slot>--<hex>.json` | a sealed `benchmark-result/v1` record; `<hex>` is the sha256 of its bytes |
//! | `receipts/<yyyy>/<mm>/<hex>.json` | a canonical `receipt/v1`; `<hex>` is its own sha256, `<yyyy>/<mm>` come from `sweep.started_at` |
//! | `baselines/<lane>.json` | the lane's canonical `baseline-pointer/v1` |
//!
//! `<slot>` is the record's `slot` (`2026-11-30T01:00:00Z`) written as
//! `YYYYMMDDTHHMMSSZ` (`20261130T010000Z`), and `<yyyy>/<mm>` are its year
//! and month. A sub-second part of the slot is dropped from the path (the
//! `<hex>` keeps paths unique); ordering always uses the full slot.
//!
//! # Persisting
//!
//! [`LocalHistory::persist`] re-verifies every record, then builds ONE commit
//! over the current tip of `benchmark-history`: blobs with
//! `git hash-object -w --stdin`, a tree through a temporary index
//! (`GIT_INDEX_FILE`, `git read-tree`, `git update-index --index-info`,
//! `git write-tree`), and `git commit-tree -p <tip>`. The branch then moves
//! with `git update-ref <ref> <new> <old>`: the old value makes it a
//! compare-and-swap, so a ref that moved meanwhile is never overwritten
//! (nothing ever forces). A lost race rebuilds the commit on the new tip, at
//! most [`MAX_ATTEMPTS`] times in all.
//!
//! - A record already at its path with the same bytes is a no-op
//!   (`already_present`); other bytes at that path stop the persist with
//!   [`HistoryError::Conflict`] before anything is built.
//! - A commit is made when a record or a baseline pointer is new, and the
//!   receipt rides in it. With [`ReceiptBuilder::record_receipt`] (the
//!   sweeps set it when they saw at least one handoff) an all-no-op persist
//!   still commits its receipt alone (a receipt-only commit); without it an
//!   all-no-op persist writes nothing (its receipt is still returned). A
//!   sweep with no handoffs has nothing to record and makes no commit.
//! - Commits are deterministic: fixed author and committer
//!   (`benchops-publish`), dates from the receipt's `sweep.finished_at`, and
//!   a message derived from the content. Because the ref update is the only
//!   visible step, a crash at any earlier point leaves the branch as it was
//!   and a rerun with the same inputs builds the same tree (and commit).
//!
//! # Baseline pointers
//!
//! A record's `publication.baseline_proposal` moves `baselines/<lane>.json`
//! only when the lane's policy (from the schedule manifest, passed in) is
//! `last-clean`, and only when the record's slot is strictly newer than the
//! pointer's. Records are considered in the order given, as if persisted
//! one by one; the pointer that lands records as `previous` the record it
//! replaces on the branch. Pinned lanes, and lanes the policy map does not
//! name, never move automatically.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use benchops::manifest::BaselinePolicy;
use benchops::schema::Contract;
use benchops::seal::{SealedRecord, VerifyError, verify};
use benchops::{LaneName, Sha256Digest, jcs};
use serde::{Deserialize, Serialize};

/// The history branch name.
pub const HISTORY_BRANCH: &str = "benchmark-history";
/// The history branch's full ref.
pub const HISTORY_REF: &str = "refs/heads/benchmark-history";
/// How many times a persist builds its commit (on a fresh tip each time)
/// before it gives up with [`HistoryError::RetriesExhausted`].
pub const MAX_ATTEMPTS: u32 = 5;
/// How many times one ref update waits for another writer's ref lock
/// (20 ms apart) while the tip has not moved. Git itself already waits up to
/// `core.filesRefLockTimeout` (100 ms by default) per try.
const LOCK_WAITS: u32 = 50;

const AUTHOR_NAME: &str = "benchops-publish";
const AUTHOR_EMAIL: &str = "benchops-publish@localhost";
const REFLOG_MESSAGE: &str = "benchops-publish: persist";

/// Variables that would point git at another repository, index or object
/// store; they are removed from every git call.
const GIT_ENV_OVERRIDES: [&str; 9] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_QUARANTINE_PATH",
];

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
    #[error("{what} {value:?} is not an RFC 3339 UTC timestamp (YYYY-MM-DDTHH:MM:SS[.f]Z)")]
    BadTimestamp {
        /// Which field.
        what: &'static str,
        /// The text.
        value: String,
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
    /// A path is not a record path of the layout.
    #[error("{path} is not a history record path (results/<lane>/<yyyy>/<mm>/<slot>--<hex>.json)")]
    BadPath {
        /// The path.
        path: String,
    },
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
    /// A receipt does not satisfy `receipt/v1`.
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
    /// Another writer kept the ref locked. Retryable.
    #[error("{HISTORY_REF} stayed locked by another writer: {stderr}")]
    RefBusy {
        /// What git said.
        stderr: String,
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
        )
    }
}

// ---------------------------------------------------------------------------
// Timestamps and paths

/// An RFC 3339 UTC timestamp, ordered chronologically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Utc {
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nanos: u32,
}

impl Utc {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z` strictly.
    fn parse(s: &str) -> Option<Utc> {
        let b = s.as_bytes();
        if b.len() < 20 || b.last() != Some(&b'Z') {
            return None;
        }
        let num = |from: usize, to: usize| -> Option<u32> {
            let part = s.get(from..to)?;
            if part.bytes().all(|c| c.is_ascii_digit()) {
                part.parse().ok()
            } else {
                None
            }
        };
        let seps = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
        if seps.iter().any(|&(i, c)| b[i] != c) {
            return None;
        }
        let t = Utc {
            year: num(0, 4)?,
            month: num(5, 7)?,
            day: num(8, 10)?,
            hour: num(11, 13)?,
            minute: num(14, 16)?,
            second: num(17, 19)?,
            nanos: match s.get(19..s.len() - 1)? {
                "" => 0,
                frac => {
                    let digits = frac.strip_prefix('.')?;
                    if digits.is_empty()
                        || digits.len() > 9
                        || !digits.bytes().all(|c| c.is_ascii_digit())
                    {
                        return None;
                    }
                    format!("{digits:0<9}").parse().ok()?
                }
            },
        };
        let valid = (1..=12).contains(&t.month)
            && (1..=31).contains(&t.day)
            && t.hour <= 23
            && t.minute <= 59
            && t.second <= 60;
        valid.then_some(t)
    }

    /// `YYYYMMDDTHHMMSSZ`.
    fn compact(&self) -> String {
        format!(
            "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// `YYYY/MM`.
    fn year_month(&self) -> String {
        format!("{:04}/{:02}", self.year, self.month)
    }

    /// Seconds since the Unix epoch (sub-seconds dropped).
    fn unix_seconds(&self) -> i64 {
        // Howard Hinnant's days_from_civil.
        let (m, d) = (i64::from(self.month), i64::from(self.day));
        let y = i64::from(self.year) - i64::from(m <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        days * 86_400
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second)
    }
}

fn parse_time(what: &'static str, value: &str) -> Result<Utc, HistoryError> {
    Utc::parse(value).ok_or_else(|| HistoryError::BadTimestamp {
        what,
        value: value.to_owned(),
    })
}

/// The slot of a record as it appears in history paths: `YYYYMMDDTHHMMSSZ`.
pub fn compact_slot(slot: &str) -> Result<String, HistoryError> {
    Ok(parse_time("slot", slot)?.compact())
}

/// The history path of a sealed record:
/// `results/<lane>/<yyyy>/<mm>/<YYYYMMDDTHHMMSSZ>--<hex>.json`.
/// The layout is defined once, in the core
/// ([`benchops::reconcile::default_history_path`], which issue links use);
/// this checks the slot first.
pub fn record_path(sealed: &SealedRecord) -> Result<String, HistoryError> {
    let r = sealed.record();
    parse_time("slot", &r.slot)?;
    Ok(benchops::reconcile::default_history_path(
        &benchops::reconcile::RecordRef {
            lane: r.lane.clone(),
            slot: r.slot.clone(),
            finished_at: r.finished_at.clone(),
            digest: sealed.digest(),
        },
    ))
}

/// The last-clean lanes for which some record proposes a baseline: the
/// lanes whose current pointer [`plan_baseline_moves`] needs.
pub fn lanes_with_proposals<'a>(
    records: impl IntoIterator<Item = &'a SealedRecord>,
    policies: &BTreeMap<LaneName, BaselinePolicy>,
) -> BTreeSet<LaneName> {
    records
        .into_iter()
        .filter_map(|s| s.record().publication.baseline_proposal.as_ref())
        .map(|p| &p.lane)
        .filter(|lane| policies.get(*lane) == Some(&BaselinePolicy::LastClean))
        .cloned()
        .collect()
}

/// Which baseline pointers move, and from what. Records are taken in the
/// given order, each with its history path. A record's proposal moves its
/// lane's pointer only when the lane's policy is `last-clean` and the
/// record's slot is strictly newer than the pointer's (the one on the branch,
/// from `on_branch`, or one an earlier record of this batch set). `previous`
/// is always the pointer on the branch. Pure: both sweeps (local and GitHub)
/// use it, so their pointers move by the same rule.
pub fn plan_baseline_moves<'a>(
    records: impl IntoIterator<Item = (&'a SealedRecord, &'a str)>,
    policies: &BTreeMap<LaneName, BaselinePolicy>,
    on_branch: &BTreeMap<LaneName, Option<BaselinePointer>>,
) -> BTreeMap<LaneName, (Option<Sha256Digest>, BaselinePointer)> {
    let mut moved: BTreeMap<LaneName, (Option<Sha256Digest>, BaselinePointer)> = BTreeMap::new();
    for (sealed, path) in records {
        let r = sealed.record();
        let Some(proposal) = &r.publication.baseline_proposal else {
            continue;
        };
        let lane = &proposal.lane;
        if policies.get(lane) != Some(&BaselinePolicy::LastClean) {
            continue;
        }
        let Some(slot) = Utc::parse(&r.slot) else {
            continue;
        };
        let current = on_branch.get(lane).cloned().flatten();
        let latest = moved
            .get(lane)
            .map(|(_, p)| p.clone())
            .or_else(|| current.clone());
        let newer = match &latest {
            None => true,
            Some(p) => Utc::parse(&p.slot).is_none_or(|s| slot > s),
        };
        if !newer {
            continue;
        }
        let pointer = BaselinePointer {
            schema: Contract::BaselinePointerV1.id().to_owned(),
            lane: lane.clone(),
            record: sealed.digest(),
            path: path.to_owned(),
            slot: r.slot.clone(),
            policy: BaselinePolicy::LastClean,
            previous: current.as_ref().map(|p| p.record),
        };
        moved.insert(lane.clone(), (current.map(|p| p.record), pointer));
    }
    moved
}

/// The history path of a lane's baseline pointer: `baselines/<lane>.json`.
pub fn baseline_path(lane: &LaneName) -> String {
    format!("baselines/{lane}.json")
}

/// A record in history, as read from its path alone.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RecordEntry {
    /// The path on the branch.
    pub path: String,
    /// The lane (from the path).
    pub lane: LaneName,
    /// The slot as `YYYYMMDDTHHMMSSZ` (from the path).
    pub slot: String,
    /// The digest in the file name.
    pub digest: Sha256Digest,
}

impl RecordEntry {
    /// Parses `results/<lane>/<yyyy>/<mm>/<slot>--<hex>.json`, checking that
    /// the year and month directories match the slot.
    pub fn parse(path: &str) -> Result<RecordEntry, HistoryError> {
        let bad = || HistoryError::BadPath {
            path: path.to_owned(),
        };
        let parts: Vec<&str> = path.split('/').collect();
        let [root, lane, yyyy, mm, file] = parts.as_slice() else {
            return Err(bad());
        };
        if *root != "results" {
            return Err(bad());
        }
        let lane = LaneName::new(*lane).map_err(|_| bad())?;
        let stem = file.strip_suffix(".json").ok_or_else(bad)?;
        let (slot, hex) = stem.split_once("--").ok_or_else(bad)?;
        let digest = Sha256Digest::from_hex(hex).map_err(|_| bad())?;
        // YYYYMMDDTHHMMSSZ: rebuild the RFC 3339 form and parse it strictly.
        if slot.len() != 16 || !slot.is_ascii() {
            return Err(bad());
        }
        let rfc = format!(
            "{}-{}-{}T{}:{}:{}Z",
            &slot[0..4],
            &slot[4..6],
            &slot[6..8],
            &slot[9..11],
            &slot[11..13],
            &slot[13..15]
        );
        let t = Utc::parse(&rfc).ok_or_else(bad)?;
        if t.compact() != slot || t.year_month() != format!("{yyyy}/{mm}") {
            return Err(bad());
        }
        Ok(RecordEntry {
            path: path.to_owned(),
            lane,
            slot: slot.to_owned(),
            digest,
        })
    }
}

// ---------------------------------------------------------------------------
// Contract documents

/// A `baseline-pointer/v1` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselinePointer {
    /// Always `baseline-pointer/v1`.
    pub schema: String,
    /// The lane.
    pub lane: LaneName,
    /// The baseline record.
    pub record: Sha256Digest,
    /// Its path on the branch.
    pub path: String,
    /// Its slot (RFC 3339, as in the record).
    pub slot: String,
    /// The policy under which the pointer was written.
    pub policy: BaselinePolicy,
    /// The record this pointer replaced, if any.
    pub previous: Option<Sha256Digest>,
}

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
    /// This receipt with `stopped` set, as canonical `receipt/v1` bytes.
    pub fn with_stop(mut self, stopped: Stopped) -> Result<Vec<u8>, HistoryError> {
        self.stopped = Some(stopped);
        canonical_checked(&self, Contract::ReceiptV1)
            .map_err(|reasons| HistoryError::InvalidReceipt { reasons })
    }

    /// The receipt of a sweep that stopped before anything was persisted:
    /// the builder's verdicts, nothing persisted, no baseline change, and
    /// `parent` the tip last seen (if any).
    pub fn unpersisted(builder: &ReceiptBuilder, parent: Option<String>) -> Receipt {
        Receipt {
            schema: Contract::ReceiptV1.id().to_owned(),
            sweep: builder.sweep.clone(),
            validated: builder.validated.clone(),
            persisted: Vec::new(),
            skipped: builder.skipped.clone(),
            baseline_changes: Vec::new(),
            history: HistoryInfo {
                branch: HISTORY_BRANCH.to_owned(),
                parent,
                attempts: 1,
            },
            requests: builder.requests.clone(),
            stopped: None,
        }
    }
}

/// What the caller knows about the sweep; [`LocalHistory::persist`] adds
/// what it persisted, the baseline changes and the history position.
///
/// Every record given to `persist` whose digest no `validated` entry names
/// gets an entry with source `<hex>.json`, `valid: true` (it was re-verified).
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
    /// Commit the receipt even when no record or baseline pointer is new
    /// (a receipt-only commit). Sweeps set it when they saw at least one
    /// handoff (valid, already present or invalid), so every such sweep
    /// leaves its receipt; a sweep with no handoffs has nothing to record
    /// and leaves it false (no commit per idle scheduled run). Still
    /// create-only: a receipt already at its path with the same bytes is a
    /// no-op.
    pub record_receipt: bool,
}

impl ReceiptBuilder {
    /// A local sweep: trigger `local`, no workflow run, zero requests.
    pub fn local(started_at: impl Into<String>, finished_at: impl Into<String>) -> Self {
        ReceiptBuilder {
            sweep: SweepInfo {
                started_at: started_at.into(),
                finished_at: finished_at.into(),
                trigger: "local".to_owned(),
                workflow_run: None,
            },
            validated: Vec::new(),
            skipped: Vec::new(),
            requests: RequestMetrics::default(),
            record_receipt: false,
        }
    }
}

fn violations(v: &[benchops::schema::SchemaViolation]) -> Vec<String> {
    v.iter()
        .map(|v| format!("{}: {}", v.path, v.reason))
        .collect()
}

fn canonical_checked<T: Serialize>(doc: &T, contract: Contract) -> Result<Vec<u8>, Vec<String>> {
    let value = serde_json::to_value(doc).map_err(|e| vec![e.to_string()])?;
    contract.validate(&value).map_err(|v| violations(&v))?;
    Ok(jcs::canonical_bytes(&value))
}

// ---------------------------------------------------------------------------
// The store

/// A git repository holding the `benchmark-history` branch.
#[derive(Debug, Clone)]
pub struct LocalHistory {
    path: PathBuf,
    git_dir: PathBuf,
}

/// A commit built over a tip but not yet published by moving the ref.
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

/// What [`LocalHistory::persist`] did.
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

struct Verified {
    sealed: SealedRecord,
    path: String,
}

static SCRATCH_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary index file, removed on drop.
struct ScratchIndex(PathBuf);

impl ScratchIndex {
    fn new() -> Self {
        let n = SCRATCH_COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        ScratchIndex(std::env::temp_dir().join(format!(
            "benchops-history-index.{}.{n}.{nanos}",
            std::process::id()
        )))
    }
}

impl Drop for ScratchIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension("lock"));
    }
}

fn args_text(args: &[&str]) -> String {
    args.join(" ")
}

fn utf8_line(args: &[&str], out: &[u8]) -> Result<String, HistoryError> {
    let s = std::str::from_utf8(out).map_err(|_| HistoryError::UnexpectedOutput {
        args: args_text(args),
        output: String::from_utf8_lossy(out).into_owned(),
    })?;
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(HistoryError::UnexpectedOutput {
            args: args_text(args),
            output: s.to_owned(),
        });
    }
    Ok(s.to_owned())
}

impl LocalHistory {
    /// Opens the git repository at `path` (bare, or a work tree whose `.git`
    /// is at `path`), or initialises a bare one there when `path` does not
    /// exist or is an empty directory. A new repository's `HEAD` names
    /// `benchmark-history`; an existing repository's `HEAD` is left alone.
    /// Discovery never walks above `path`, so a directory inside some other
    /// repository is not mistaken for one.
    pub fn open_or_init(path: impl AsRef<Path>) -> Result<LocalHistory, HistoryError> {
        let path = path.as_ref().to_path_buf();
        let io_err = |step, source| HistoryError::Io {
            step,
            path: path.clone(),
            source,
        };
        let fresh = match std::fs::metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => true,
            Err(e) => return Err(io_err("inspect", e)),
            Ok(m) if m.is_dir() => std::fs::read_dir(&path)
                .map_err(|e| io_err("list", e))?
                .next()
                .is_none(),
            Ok(_) => {
                return Err(HistoryError::NotARepository { path });
            }
        };
        if fresh {
            let init_branch = format!("init.defaultBranch={HISTORY_BRANCH}");
            let mut c = bare_git();
            c.args(["-c", &init_branch, "init", "--bare", "--quiet"])
                .arg(&path);
            run_checked(c, &["init", "--bare"], None)?;
        }
        let canonical = std::fs::canonicalize(&path).map_err(|e| io_err("resolve", e))?;
        let mut c = bare_git();
        c.current_dir(&canonical)
            .args(["rev-parse", "--absolute-git-dir"]);
        if let Some(parent) = canonical.parent() {
            c.env("GIT_CEILING_DIRECTORIES", parent);
        }
        let out = run(c, &["rev-parse", "--absolute-git-dir"], None)?;
        if !out.status.success() {
            return Err(HistoryError::NotARepository { path });
        }
        let dir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if dir.is_empty() {
            return Err(HistoryError::NotARepository { path });
        }
        Ok(LocalHistory {
            path,
            git_dir: PathBuf::from(dir),
        })
    }

    /// The path the store was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The repository's git directory (absolute).
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    fn cmd(&self) -> Command {
        let mut c = bare_git();
        c.arg("--git-dir").arg(&self.git_dir);
        c.arg("--literal-pathspecs");
        c
    }

    fn git(&self, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, HistoryError> {
        let mut c = self.cmd();
        c.args(args);
        run_checked(c, args, input)
    }

    /// The commit at the tip of `benchmark-history`, if the branch exists.
    pub fn tip(&self) -> Result<Option<String>, HistoryError> {
        let args = [
            "for-each-ref",
            "--format=%(objectname) %(refname)",
            HISTORY_REF,
        ];
        let out = self.git(&args, None)?;
        let text = String::from_utf8_lossy(&out);
        Ok(text.lines().find_map(|l| {
            let (oid, name) = l.split_once(' ')?;
            (name == HISTORY_REF).then(|| oid.to_owned())
        }))
    }

    /// The tree of the branch's tip, if the branch exists.
    pub fn tip_tree(&self) -> Result<Option<String>, HistoryError> {
        match self.tip()? {
            Some(tip) => self.tree_of(&tip).map(Some),
            None => Ok(None),
        }
    }

    fn tree_of(&self, commit: &str) -> Result<String, HistoryError> {
        let rev = format!("{commit}^{{tree}}");
        let args = ["rev-parse", "--verify", rev.as_str()];
        let out = self.git(&args, None)?;
        utf8_line(&args, &out)
    }

    /// Blob ids at `paths` (or under the directory prefixes) in `commit`.
    fn blobs(
        &self,
        commit: &str,
        paths: &[&str],
    ) -> Result<BTreeMap<String, String>, HistoryError> {
        let mut args = vec!["ls-tree", "-r", "-z", "--full-tree", commit, "--"];
        args.extend_from_slice(paths);
        let out = self.git(&args, None)?;
        let mut map = BTreeMap::new();
        for entry in out.split(|&b| b == 0).filter(|e| !e.is_empty()) {
            let text = std::str::from_utf8(entry).map_err(|_| HistoryError::UnexpectedOutput {
                args: args_text(&args),
                output: String::from_utf8_lossy(entry).into_owned(),
            })?;
            let parsed = text.split_once('\t').and_then(|(meta, path)| {
                let mut m = meta.split(' ');
                let (_mode, kind, oid) = (m.next()?, m.next()?, m.next()?);
                Some((kind, oid, path))
            });
            match parsed {
                Some(("blob", oid, path)) => {
                    map.insert(path.to_owned(), oid.to_owned());
                }
                Some(_) => {}
                None => {
                    return Err(HistoryError::UnexpectedOutput {
                        args: args_text(&args),
                        output: text.to_owned(),
                    });
                }
            }
        }
        Ok(map)
    }

    fn blob(&self, oid: &str) -> Result<Vec<u8>, HistoryError> {
        self.git(&["cat-file", "blob", oid], None)
    }

    fn write_blob(&self, bytes: &[u8]) -> Result<String, HistoryError> {
        let args = ["hash-object", "-w", "--stdin"];
        let out = self.git(&args, Some(bytes))?;
        utf8_line(&args, &out)
    }

    fn read_at_tip(&self, path: &str) -> Result<Vec<u8>, HistoryError> {
        let not_found = || HistoryError::NotFound {
            path: path.to_owned(),
        };
        let tip = self.tip()?.ok_or_else(not_found)?;
        let blobs = self.blobs(&tip, &[path])?;
        let oid = blobs.get(path).ok_or_else(not_found)?;
        self.blob(oid)
    }

    // -- reading ------------------------------------------------------------

    /// Every record on the branch (of one lane, or all), from the paths
    /// alone, sorted by path. Files under `results/` that do not follow the
    /// layout are not records and are left out.
    pub fn list_records(&self, lane: Option<&LaneName>) -> Result<Vec<RecordEntry>, HistoryError> {
        let Some(tip) = self.tip()? else {
            return Ok(Vec::new());
        };
        let prefix = match lane {
            Some(l) => format!("results/{l}/"),
            None => "results/".to_owned(),
        };
        let blobs = self.blobs(&tip, &[prefix.as_str()])?;
        Ok(blobs
            .keys()
            .filter_map(|p| RecordEntry::parse(p).ok())
            .collect())
    }

    /// Reads the record at `path` and re-verifies it against the digest in
    /// its name; its lane and slot must match the path.
    pub fn read_record(&self, path: &str) -> Result<SealedRecord, HistoryError> {
        let entry = RecordEntry::parse(path)?;
        let bytes = self.read_at_tip(path)?;
        let sealed =
            verify(&bytes, Some(&entry.digest)).map_err(|source| HistoryError::CorruptRecord {
                path: path.to_owned(),
                source,
            })?;
        let r = sealed.record();
        let placed =
            r.lane == entry.lane && Utc::parse(&r.slot).is_some_and(|t| t.compact() == entry.slot);
        if !placed {
            return Err(HistoryError::Misplaced {
                path: path.to_owned(),
                lane: r.lane.to_string(),
                slot: r.slot.clone(),
            });
        }
        Ok(sealed)
    }

    /// The latest record of every lane: the greatest slot; records sharing
    /// the latest path slot are read and ordered by full slot, then
    /// `finished_at`, then digest.
    pub fn latest_per_lane(&self) -> Result<BTreeMap<LaneName, RecordEntry>, HistoryError> {
        let mut by_lane: BTreeMap<LaneName, Vec<RecordEntry>> = BTreeMap::new();
        for e in self.list_records(None)? {
            let v = by_lane.entry(e.lane.clone()).or_default();
            match v.first().map(|f| e.slot.cmp(&f.slot)) {
                Some(std::cmp::Ordering::Less) => {}
                Some(std::cmp::Ordering::Equal) => v.push(e),
                _ => *v = vec![e],
            }
        }
        let mut out = BTreeMap::new();
        for (lane, mut tied) in by_lane {
            let latest = if tied.len() == 1 {
                tied.pop()
            } else {
                let mut keyed = Vec::with_capacity(tied.len());
                for e in tied {
                    let s = self.read_record(&e.path)?;
                    let r = s.record();
                    let key = (Utc::parse(&r.slot), Utc::parse(&r.finished_at), e.digest);
                    keyed.push((key, e));
                }
                keyed
                    .into_iter()
                    .max_by(|a, b| a.0.cmp(&b.0))
                    .map(|(_, e)| e)
            };
            if let Some(e) = latest {
                out.insert(lane, e);
            }
        }
        Ok(out)
    }

    /// The lane's baseline pointer, validated against its schema.
    pub fn baseline(&self, lane: &LaneName) -> Result<Option<BaselinePointer>, HistoryError> {
        match self.tip()? {
            Some(tip) => self.baseline_at(&tip, lane),
            None => Ok(None),
        }
    }

    fn baseline_at(
        &self,
        commit: &str,
        lane: &LaneName,
    ) -> Result<Option<BaselinePointer>, HistoryError> {
        let path = baseline_path(lane);
        let blobs = self.blobs(commit, &[path.as_str()])?;
        let Some(oid) = blobs.get(&path) else {
            return Ok(None);
        };
        let bytes = self.blob(oid)?;
        let invalid = |reasons| HistoryError::InvalidPointer {
            lane: lane.to_string(),
            reasons,
        };
        let value = jcs::parse(&bytes).map_err(|e| invalid(vec![e.to_string()]))?;
        Contract::BaselinePointerV1
            .validate(&value)
            .map_err(|v| invalid(violations(&v)))?;
        let pointer: BaselinePointer =
            serde_json::from_value(value).map_err(|e| invalid(vec![e.to_string()]))?;
        if pointer.lane != *lane {
            return Err(invalid(vec![format!(
                "$.lane: {path} names lane {}",
                pointer.lane
            )]));
        }
        Ok(Some(pointer))
    }

    // -- writing ------------------------------------------------------------

    /// Persists `records` in one commit on `benchmark-history`, with the
    /// receipt and any baseline pointer change (see the module docs for the
    /// rules). `policies` maps each lane to its manifest baseline policy.
    ///
    /// Retries a lost race on the new tip, up to [`MAX_ATTEMPTS`] builds in
    /// all; never forces.
    pub fn persist(
        &self,
        records: &[SealedRecord],
        receipt: &ReceiptBuilder,
        policies: &BTreeMap<LaneName, BaselinePolicy>,
    ) -> Result<PersistOutcome, HistoryError> {
        let verified = reverify(records)?;
        for attempt in 1..=MAX_ATTEMPTS {
            let tip = self.tip()?;
            let prepared = self.prepare_at(tip, &verified, receipt, policies, attempt)?;
            if prepared.commit.is_some() {
                match self.publish(&prepared) {
                    Ok(()) => {}
                    Err(e) if e.is_retryable() => continue,
                    Err(e) => return Err(e),
                }
            }
            let written = prepared.commit.is_some();
            return Ok(PersistOutcome {
                commit: prepared.commit,
                parent: prepared.parent,
                tree: prepared.tree,
                attempts: attempt,
                persisted: prepared.persisted,
                baseline_changes: prepared.baseline_changes,
                receipt: prepared.receipt,
                receipt_path: written.then_some(prepared.receipt_path),
            });
        }
        Err(HistoryError::RetriesExhausted {
            attempts: MAX_ATTEMPTS,
        })
    }

    /// Builds the commit [`persist`](Self::persist) would make on the
    /// current tip (as attempt 1) without moving the branch. Its objects are
    /// unreachable until [`publish`](Self::publish) succeeds, so dropping it
    /// is exactly a crash before the ref update.
    pub fn prepare(
        &self,
        records: &[SealedRecord],
        receipt: &ReceiptBuilder,
        policies: &BTreeMap<LaneName, BaselinePolicy>,
    ) -> Result<PreparedCommit, HistoryError> {
        let verified = reverify(records)?;
        let tip = self.tip()?;
        self.prepare_at(tip, &verified, receipt, policies, 1)
    }

    /// Moves the branch from the prepared commit's parent to the prepared
    /// commit, as a compare-and-swap (`git update-ref <ref> <new> <old>`;
    /// a missing branch is "old" all zeros, so it must still be missing).
    ///
    /// Errors: [`HistoryError::RefMoved`] when the branch is no longer at
    /// the parent (nothing is overwritten), [`HistoryError::RefBusy`] when
    /// another writer held the ref lock throughout. A prepared commit with
    /// nothing new is a no-op.
    pub fn publish(&self, prepared: &PreparedCommit) -> Result<(), HistoryError> {
        let Some(new) = prepared.commit.as_deref() else {
            return Ok(());
        };
        let zero = "0".repeat(new.len());
        let old = prepared.parent.as_deref().unwrap_or(zero.as_str());
        let mut waits = 0;
        loop {
            let args = ["update-ref", "-m", REFLOG_MESSAGE, HISTORY_REF, new, old];
            let mut c = self.cmd();
            c.args(args);
            let out = run(c, &args, None)?;
            if out.status.success() {
                return Ok(());
            }
            let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            let now = self.tip()?;
            if now.as_deref() == Some(new) {
                // Someone published the identical commit: converged.
                return Ok(());
            }
            if now != prepared.parent {
                return Err(HistoryError::RefMoved {
                    expected: prepared.parent.clone(),
                    actual: now,
                });
            }
            let locked = stderr.contains("Unable to create") || stderr.contains("File exists");
            if !locked {
                return Err(HistoryError::Git {
                    args: args_text(&args),
                    status: out.status.to_string(),
                    stderr,
                });
            }
            waits += 1;
            if waits >= LOCK_WAITS {
                return Err(HistoryError::RefBusy { stderr });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn prepare_at(
        &self,
        tip: Option<String>,
        verified: &[Verified],
        builder: &ReceiptBuilder,
        policies: &BTreeMap<LaneName, BaselinePolicy>,
        attempt: u32,
    ) -> Result<PreparedCommit, HistoryError> {
        // 1. What the tip already holds at the record paths.
        let record_paths: Vec<&str> = verified.iter().map(|v| v.path.as_str()).collect();
        let existing = match (&tip, record_paths.is_empty()) {
            (Some(t), false) => self.blobs(t, &record_paths)?,
            _ => BTreeMap::new(),
        };
        let mut persisted = Vec::with_capacity(verified.len());
        let mut new_files: Vec<(String, Vec<u8>)> = Vec::new();
        for v in verified {
            let already_present = match existing.get(&v.path) {
                None => false,
                Some(oid) => {
                    if self.blob(oid)? != v.sealed.bytes() {
                        return Err(HistoryError::Conflict {
                            path: v.path.clone(),
                            existing: oid.clone(),
                        });
                    }
                    true
                }
            };
            if !already_present {
                new_files.push((v.path.clone(), v.sealed.bytes().to_vec()));
            }
            persisted.push(PersistedRecord {
                digest: v.sealed.digest(),
                path: v.path.clone(),
                already_present,
            });
        }

        // 2. Baseline pointers of last-clean lanes, in input order.
        let mut on_branch = BTreeMap::new();
        for lane in lanes_with_proposals(verified.iter().map(|v| &v.sealed), policies) {
            let at_tip = match &tip {
                Some(t) => self.baseline_at(t, &lane)?,
                None => None,
            };
            on_branch.insert(lane, at_tip);
        }
        let moved = plan_baseline_moves(
            verified.iter().map(|v| (&v.sealed, v.path.as_str())),
            policies,
            &on_branch,
        );
        let mut baseline_changes = Vec::new();
        for (lane, (from, pointer)) in &moved {
            let bytes =
                canonical_checked(pointer, Contract::BaselinePointerV1).map_err(|reasons| {
                    HistoryError::InvalidPointer {
                        lane: lane.to_string(),
                        reasons,
                    }
                })?;
            new_files.push((baseline_path(lane), bytes));
            baseline_changes.push(BaselineChange {
                lane: lane.clone(),
                from: *from,
                to: pointer.record,
            });
        }

        // 3. The receipt.
        let mut validated = builder.validated.clone();
        let named: BTreeSet<Sha256Digest> = validated.iter().filter_map(|v| v.digest).collect();
        for v in verified {
            if !named.contains(&v.sealed.digest()) {
                validated.push(ValidatedEntry {
                    source: v.sealed.file_name(),
                    digest: Some(v.sealed.digest()),
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
                parent: tip.clone(),
                attempts: attempt,
            },
            requests: builder.requests.clone(),
            stopped: None,
        };
        let receipt_bytes = canonical_checked(&receipt, Contract::ReceiptV1)
            .map_err(|reasons| HistoryError::InvalidReceipt { reasons })?;
        let started = parse_time("sweep.started_at", &builder.sweep.started_at)?;
        let finished = parse_time("sweep.finished_at", &builder.sweep.finished_at)?;
        let receipt_path = format!(
            "receipts/{}/{}.json",
            started.year_month(),
            Sha256Digest::of(&receipt_bytes).hex()
        );

        let parent_tree = match &tip {
            Some(t) => Some(self.tree_of(t)?),
            None => None,
        };
        let unchanged = |commit| PreparedCommit {
            parent: tip.clone(),
            commit,
            tree: parent_tree.clone(),
            attempt,
            persisted: persisted.clone(),
            baseline_changes: baseline_changes.clone(),
            receipt: receipt_bytes.clone(),
            receipt_path: receipt_path.clone(),
        };
        if new_files.is_empty() && !builder.record_receipt {
            return Ok(unchanged(None));
        }
        if let Some(t) = &tip
            && let Some(oid) = self.blobs(t, &[receipt_path.as_str()])?.get(&receipt_path)
        {
            if self.blob(oid)? != receipt_bytes {
                return Err(HistoryError::Conflict {
                    path: receipt_path,
                    existing: oid.clone(),
                });
            }
            if new_files.is_empty() {
                // A receipt-only commit whose receipt is already there.
                return Ok(unchanged(None));
            }
        }
        new_files.push((receipt_path.clone(), receipt_bytes.clone()));

        // 4. Objects: blobs, a tree through a scratch index, the commit.
        let mut index_info = String::new();
        for (path, bytes) in &new_files {
            let oid = self.write_blob(bytes)?;
            index_info.push_str(&format!("100644 {oid}\t{path}\n"));
        }
        let scratch = ScratchIndex::new();
        let with_index = |args: &[&str], input: Option<&[u8]>| {
            let mut c = self.cmd();
            c.env("GIT_INDEX_FILE", &scratch.0).args(args);
            run_checked(c, args, input)
        };
        match &tip {
            Some(t) => with_index(&["read-tree", t.as_str()], None)?,
            None => with_index(&["read-tree", "--empty"], None)?,
        };
        with_index(
            &["update-index", "--index-info"],
            Some(index_info.as_bytes()),
        )?;
        let write_tree = ["write-tree"];
        let tree = utf8_line(&write_tree, &with_index(&write_tree, None)?)?;
        drop(scratch);

        let new_count = persisted.iter().filter(|p| !p.already_present).count();
        let message = format!(
            "benchops: persist {new_count} record(s), {} already present, {} baseline change(s)\n\nreceipt: {receipt_path}\n",
            persisted.len() - new_count,
            baseline_changes.len()
        );
        let date = format!("{} +0000", finished.unix_seconds());
        let mut args = vec!["commit-tree", "--no-gpg-sign", "-m", message.as_str()];
        if let Some(t) = &tip {
            args.extend(["-p", t.as_str()]);
        }
        args.push(tree.as_str());
        let mut c = self.cmd();
        c.args(&args)
            .env("GIT_AUTHOR_NAME", AUTHOR_NAME)
            .env("GIT_AUTHOR_EMAIL", AUTHOR_EMAIL)
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_NAME", AUTHOR_NAME)
            .env("GIT_COMMITTER_EMAIL", AUTHOR_EMAIL)
            .env("GIT_COMMITTER_DATE", &date);
        let commit = utf8_line(&args, &run_checked(c, &args, None)?)?;

        let mut prepared = unchanged(Some(commit));
        prepared.tree = Some(tree);
        Ok(prepared)
    }
}

/// Re-verifies every record against its own digest and computes its path;
/// duplicates (same digest) are kept once, in first-seen order.
fn reverify(records: &[SealedRecord]) -> Result<Vec<Verified>, HistoryError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(records.len());
    for r in records {
        let digest = r.digest();
        if !seen.insert(digest) {
            continue;
        }
        let sealed = verify(r.bytes(), Some(&digest))
            .map_err(|source| HistoryError::InvalidRecord { digest, source })?;
        // The path also checks the slot.
        let path = record_path(&sealed)?;
        out.push(Verified { sealed, path });
    }
    Ok(out)
}

/// `git` with no inherited repository overrides.
fn bare_git() -> Command {
    let mut c = Command::new("git");
    for v in GIT_ENV_OVERRIDES {
        c.env_remove(v);
    }
    c.env("GIT_TERMINAL_PROMPT", "0");
    c
}

fn run(mut c: Command, args: &[&str], input: Option<&[u8]>) -> Result<Output, HistoryError> {
    let spawn_err = |source| HistoryError::Spawn {
        args: args_text(args),
        source,
    };
    c.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().map_err(spawn_err)?;
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        // git reads all of its input before writing much output, so writing
        // first cannot deadlock. A broken pipe means git stopped early; its
        // exit status says why.
        match stdin.write_all(bytes) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
            Err(e) => return Err(spawn_err(e)),
        }
    }
    child.wait_with_output().map_err(spawn_err)
}

fn run_checked(c: Command, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, HistoryError> {
    let out = run(c, args, input)?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(HistoryError::Git {
            args: args_text(args),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

impl fmt::Display for RecordEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_strictly_and_order_chronologically() {
        let a = Utc::parse("2026-11-30T01:00:00Z").expect("parses");
        let b = Utc::parse("2026-11-30T01:00:00.5Z").expect("parses");
        assert!(a < b, "a fraction is later, unlike in byte order");
        assert_eq!(a.compact(), "20261130T010000Z");
        assert_eq!(a.year_month(), "2026/11");
        assert_eq!(
            Utc::parse("1970-01-01T00:00:00Z").map(|t| t.unix_seconds()),
            Some(0)
        );
        assert_eq!(
            Utc::parse("2000-03-01T00:00:01Z").map(|t| t.unix_seconds()),
            Some(951_868_801)
        );
        for bad in [
            "2026-11-30T01:00:00",
            "2026-11-30 01:00:00Z",
            "2026-13-30T01:00:00Z",
            "2026-11-30T01:00:00.Z",
            "2026-11-30T01:00:00.1234567890Z",
            "2026-11-30T01:00:00+00:00",
            "2026-1-30T01:00:00ZZ",
        ] {
            assert_eq!(Utc::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn record_paths_round_trip_and_reject_strangers() {
        let hex = "ab".repeat(32);
        let p = format!("results/nightly/2026/11/20261130T010000Z--{hex}.json");
        let e = RecordEntry::parse(&p).expect("parses");
        assert_eq!(e.lane.as_str(), "nightly");
        assert_eq!(e.slot, "20261130T010000Z");
        assert_eq!(e.digest.hex(), hex);
        for bad in [
            format!("results/nightly/2026/12/20261130T010000Z--{hex}.json"),
            format!("results/nightly/2026/11/20261130T010000Z-{hex}.json"),
            format!("results/nightly/2026/11/{hex}.json"),
            format!("receipts/2026/11/20261130T010000Z--{hex}.json"),
            format!("results/../2026/11/20261130T010000Z--{hex}.json"),
            "results/nightly/2026/11/20261130T010000Z--abc.json".to_owned(),
        ] {
            assert!(RecordEntry::parse(&bad).is_err(), "{bad}");
        }
    }
}
