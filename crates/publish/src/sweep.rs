//! `benchops-publish sweep --local <DIR>`: the publisher's sweep in local
//! mode, end to end, with no GitHub. The operations spec is
//! `docs/cli/sweep-local.md`.
//!
//! # Layout under `DIR` (default `.benchops/`)
//!
//! | path | what | who writes it |
//! |---|---|---|
//! | `sealed/*.json` | sealed handoffs (`<hex>.json`) | `benchops-exec bench seal --out DIR/sealed` |
//! | `history.git` | bare git repository, branch `benchmark-history` | [`LocalHistory`] |
//! | `issues.json` | the issue ledger (`benchops-issue-ledger/v1`) | [`Ledger`] |
//! | `quarantine/` | copies of invalid handoffs, each with a `.why.txt` | this module |
//!
//! # Phases
//!
//! 1. **Validate** every handoff with [`benchops::verify`], the digest taken
//!    from the file name. Invalid ones are copied (create-only) to
//!    `quarantine/` with a `.why.txt` holding every problem; their source
//!    file is left in place and they are never persisted.
//! 2. **Persist** the valid records with [`LocalHistory::persist`]: one
//!    commit with the receipt (trigger `local`) and the baseline pointers
//!    the manifest's lane policies allow. A sweep that saw at least one
//!    handoff (valid, already present or invalid) always commits its
//!    receipt, alone when no record is new (a receipt-only commit); a sweep
//!    with no handoffs has nothing to record and makes no commit (so an
//!    idle scheduled run does not grow the branch).
//! 3. **Reconcile** every record in history (not only this sweep's) against
//!    the ledger with [`benchops::reconcile::reconcile`], applying the plan
//!    one action at a time with an atomic write of the whole ledger after
//!    each, so a crash between two actions converges on the next sweep.
//!    Before each action the file is compared with what the sweep last read
//!    or wrote; if a person (or another sweep) changed it, the plan is
//!    recomputed from the new file (at most [`MAX_REPLANS`] times).
//! 4. **Report**: a [`SweepReport`], rendered by [`render_summary`].
//!
//! A sweep that fails in the persist or reconcile phase returns a
//! [`SweepFailure`] carrying a receipt whose `stopped` says where it
//! stopped and whether a rerun can succeed as is. A failed persist commits
//! nothing, so that receipt exists only there (the CLI writes it to
//! `--receipt-out`, or prints it on stderr).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use benchops::fsio::{self, Created, WriteError};
use benchops::manifest::{self, BaselinePolicy, Manifest, ManifestError};
use benchops::reconcile::{HistoryRecord, Note, RenderOptions, reconcile};
use benchops::record::CaseCounts;
use benchops::seal::{IssueKind, SealedRecord, verify};
use benchops::{LaneName, Sha256Digest};

use crate::history::{
    BaselineChange, HistoryError, LocalHistory, PersistedRecord, Receipt, ReceiptBuilder,
    SkippedEntry, Stopped, ValidatedEntry, compact_slot,
};
use crate::ledger::{Applied, Ledger, LedgerError};
use crate::validate::{IssueOut, digest_from_file_name};

/// Where sealed handoffs are read from, under the sweep directory.
pub const SEALED_DIR: &str = "sealed";
/// The history repository, under the sweep directory.
pub const HISTORY_DIR: &str = "history.git";
/// The issue ledger, under the sweep directory.
pub const LEDGER_FILE: &str = "issues.json";
/// Where invalid handoffs are copied, under the sweep directory.
pub const QUARANTINE_DIR: &str = "quarantine";
/// How many times the reconcile recomputes its plan because the ledger
/// changed under it before giving up with [`SweepError::LedgerBusy`].
pub const MAX_REPLANS: u32 = 5;

// ---------------------------------------------------------------------------
// Clock

/// The wall clock, injectable for tests: a function returning an RFC 3339
/// UTC timestamp (`2026-11-30T02:00:05.250Z`).
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> String + Send + Sync>);

impl Clock {
    /// The system clock, in milliseconds.
    pub fn system() -> Self {
        Clock(Arc::new(|| rfc3339_utc(SystemTime::now())))
    }

    /// A clock that always says `now`.
    pub fn fixed(now: impl Into<String>) -> Self {
        let now = now.into();
        Clock(Arc::new(move || now.clone()))
    }

    /// A clock from any function.
    pub fn from_fn(f: impl Fn() -> String + Send + Sync + 'static) -> Self {
        Clock(Arc::new(f))
    }

    /// The current time.
    pub fn now(&self) -> String {
        (self.0)()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Clock(..)")
    }
}

/// `t` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (times before 1970 print as 1970).
pub fn rfc3339_utc(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

// ---------------------------------------------------------------------------
// Options, report, errors

/// What [`sweep_local`] works on.
#[derive(Debug, Clone)]
pub struct LocalSweepOptions {
    /// The sweep directory (`.benchops/`).
    pub dir: PathBuf,
    /// The schedule manifest (`schedule-manifest/v1`, TOML).
    pub manifest: PathBuf,
    /// The wall clock (the receipt's `started_at` and `finished_at`).
    pub clock: Clock,
    /// Apply at most this many reconcile actions, then stop as if the
    /// process died (crash drills and tests). `None`: all of them.
    pub max_actions: Option<usize>,
    /// Prefix of links to history files in issue text; empty: the path on
    /// the `benchmark-history` branch.
    pub history_base_url: String,
    /// Called after each ledger write of the reconcile with the ledger path
    /// and the number of actions applied so far (tests use it to edit the
    /// file under the sweep). `None` in normal use.
    pub after_ledger_write: Option<AfterWrite>,
}

/// The function inside an [`AfterWrite`]: ledger path, actions applied.
pub type AfterWriteFn = dyn Fn(&Path, usize) + Send + Sync;

/// A hook run after each ledger write; see
/// [`LocalSweepOptions::after_ledger_write`].
#[derive(Clone)]
pub struct AfterWrite(pub Arc<AfterWriteFn>);

impl fmt::Debug for AfterWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AfterWrite(..)")
    }
}

impl LocalSweepOptions {
    /// Options with the system clock, no action limit and relative links.
    pub fn new(dir: impl Into<PathBuf>, manifest: impl Into<PathBuf>) -> Self {
        LocalSweepOptions {
            dir: dir.into(),
            manifest: manifest.into(),
            clock: Clock::system(),
            max_actions: None,
            history_base_url: String::new(),
            after_ledger_write: None,
        }
    }

    /// `DIR/sealed`.
    pub fn sealed_dir(&self) -> PathBuf {
        self.dir.join(SEALED_DIR)
    }

    /// `DIR/history.git`.
    pub fn history_path(&self) -> PathBuf {
        self.dir.join(HISTORY_DIR)
    }

    /// `DIR/issues.json`.
    pub fn ledger_path(&self) -> PathBuf {
        self.dir.join(LEDGER_FILE)
    }

    /// `DIR/quarantine`.
    pub fn quarantine_dir(&self) -> PathBuf {
        self.dir.join(QUARANTINE_DIR)
    }
}

/// Where an invalid handoff went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    /// The copy (None: the handoff could not be read, so there is nothing
    /// to copy).
    pub copy: Option<PathBuf>,
    /// The `.why.txt` next to it.
    pub why: PathBuf,
}

/// The validation verdict on one handoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffReport {
    /// The handoff file (left in place).
    pub source: PathBuf,
    /// The digest of its bytes, when they could be read.
    pub digest: Option<Sha256Digest>,
    /// The digest its name claims.
    pub named_digest: Option<Sha256Digest>,
    /// Every problem found (empty: valid).
    pub issues: Vec<IssueOut>,
    /// Where it was quarantined (invalid handoffs only).
    pub quarantined: Option<Quarantined>,
}

impl HandoffReport {
    /// Whether the handoff is a valid sealed record.
    pub fn valid(&self) -> bool {
        self.issues.is_empty()
    }
}

/// The latest record of a lane, as the health table shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatestRecord {
    /// Its slot.
    pub slot: String,
    /// Its digest.
    pub digest: Sha256Digest,
    /// Its path on the branch.
    pub path: String,
    /// Its case counts.
    pub counts: CaseCounts,
}

/// One row of the health table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneHealth {
    /// The lane.
    pub lane: LaneName,
    /// Whether the manifest declares it.
    pub in_manifest: bool,
    /// Its latest record in history (None: no record yet).
    pub latest: Option<LatestRecord>,
}

/// Everything a local sweep did.
#[derive(Debug, Clone)]
pub struct SweepReport {
    /// The sweep directory.
    pub dir: PathBuf,
    /// The history repository.
    pub history: PathBuf,
    /// The issue ledger.
    pub ledger: PathBuf,
    /// The quarantine directory.
    pub quarantine: PathBuf,
    /// When the sweep started.
    pub started_at: String,
    /// When the contents phase finished (the receipt's `finished_at`).
    pub finished_at: String,
    /// Every handoff, in file-name order.
    pub handoffs: Vec<HandoffReport>,
    /// Every valid record given to the persist (new or already present).
    pub persisted: Vec<PersistedRecord>,
    /// Baseline pointers that moved.
    pub baseline_changes: Vec<BaselineChange>,
    /// The commit this sweep made (None: nothing new).
    pub commit: Option<String>,
    /// The branch tip after the persist (None: no branch yet).
    pub tip: Option<String>,
    /// The receipt's path when a commit was made.
    pub receipt_path: Option<String>,
    /// How many records history holds (the reconcile's input).
    pub history_records: usize,
    /// Ledger writes, in order.
    pub applied: Vec<Applied>,
    /// Planned actions not applied because of `max_actions`.
    pub pending_actions: usize,
    /// Whether this sweep created the ledger file.
    pub ledger_created: bool,
    /// How many times the plan was recomputed because the ledger changed
    /// under the sweep.
    pub replans: u32,
    /// The reconcile's notes (of the last plan computed).
    pub notes: Vec<Note>,
    /// The latest record of every lane (manifest lanes first).
    pub health: Vec<LaneHealth>,
}

impl SweepReport {
    /// Handoffs that were quarantined.
    pub fn quarantined(&self) -> usize {
        self.handoffs.iter().filter(|h| !h.valid()).count()
    }

    /// Records newly written to history.
    pub fn new_records(&self) -> usize {
        self.persisted.iter().filter(|p| !p.already_present).count()
    }

    /// Records that were already in history.
    pub fn already_present(&self) -> usize {
        self.persisted.iter().filter(|p| p.already_present).count()
    }

    fn count(&self, f: impl Fn(&Applied) -> bool) -> usize {
        self.applied.iter().filter(|a| f(a)).count()
    }

    /// Issues opened.
    pub fn opened(&self) -> usize {
        self.count(|a| matches!(a, Applied::Opened { .. }))
    }

    /// Evidence comments posted.
    pub fn commented(&self) -> usize {
        self.count(|a| matches!(a, Applied::Commented { .. }))
    }

    /// Issues closed (completed; duplicates not counted).
    pub fn closed(&self) -> usize {
        self.count(|a| matches!(a, Applied::Closed { .. }))
    }

    /// Issues reopened.
    pub fn reopened(&self) -> usize {
        self.count(|a| matches!(a, Applied::Reopened { .. }))
    }
}

/// Why a local sweep stopped. Every variant names the file concerned.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The sweep directory is missing.
    #[error("sweep directory {} does not exist or is not a directory", path.display())]
    NoDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// The manifest file cannot be read.
    #[error("failed to read schedule manifest {}", path.display())]
    ManifestRead {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The manifest is invalid (the message names the file).
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The handoff directory cannot be listed.
    #[error("failed to list handoffs in {}", path.display())]
    ListHandoffs {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// An invalid handoff could not be quarantined.
    #[error("failed to quarantine {} to {}", handoff.display(), path.display())]
    Quarantine {
        /// The handoff.
        handoff: PathBuf,
        /// The quarantine file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: WriteError,
    },
    /// The history repository failed (a create-only conflict stops here).
    #[error("history repository {}", path.display())]
    History {
        /// The repository.
        path: PathBuf,
        /// What failed.
        #[source]
        source: HistoryError,
    },
    /// The ledger cannot be read, parsed or written.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The ledger kept changing under the sweep.
    #[error(
        "issue ledger {} changed under the sweep {replans} times (another sweep or a person is editing it); the actions applied so far are kept, rerun to converge",
        path.display()
    )]
    LedgerBusy {
        /// The ledger.
        path: PathBuf,
        /// Plans recomputed.
        replans: u32,
    },
}

impl SweepError {
    /// Whether rerunning the same sweep can succeed without a person
    /// changing anything: false for a bad manifest, a create-only conflict
    /// or corrupt history, and an unreadable or invalid ledger.
    pub fn is_retryable(&self) -> bool {
        match self {
            SweepError::History { source, .. } => source.is_retryable(),
            SweepError::LedgerBusy { .. }
            | SweepError::ListHandoffs { .. }
            | SweepError::Quarantine { .. } => true,
            SweepError::NoDirectory { .. }
            | SweepError::ManifestRead { .. }
            | SweepError::Manifest(_)
            | SweepError::Ledger(_) => false,
        }
    }
}

/// A local sweep that stopped: the error and, once the validate phase has
/// finished, the sweep's receipt with `stopped` set (canonical
/// `receipt/v1` bytes). When the persist failed that receipt was not
/// committed; when the reconcile failed it is the committed receipt (if
/// any) plus `stopped`.
#[derive(Debug)]
pub struct SweepFailure {
    /// What stopped the sweep.
    pub error: Box<SweepError>,
    /// The receipt saying where it stopped (None: it stopped before the
    /// validate phase finished).
    pub receipt: Option<Vec<u8>>,
}

impl fmt::Display for SweepFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for SweepFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(self.error.as_ref())
    }
}

impl SweepFailure {
    /// Whether rerunning the same sweep can succeed as is.
    pub fn is_retryable(&self) -> bool {
        self.error.is_retryable()
    }
}

impl<E: Into<SweepError>> From<E> for SweepFailure {
    fn from(e: E) -> Self {
        SweepFailure {
            error: Box::new(e.into()),
            receipt: None,
        }
    }
}

/// The error and every cause, on one line.
pub(crate) fn error_line(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

/// `receipt` with `stopped` set from the error; None when even that receipt
/// cannot be built (the error itself still stops the sweep).
fn stopped_receipt(
    receipt: Receipt,
    phase: &str,
    step: &str,
    error: &SweepError,
) -> Option<Vec<u8>> {
    receipt
        .with_stop(Stopped {
            phase: phase.to_owned(),
            step: step.to_owned(),
            error: error_line(error),
            retryable: error.is_retryable(),
        })
        .ok()
}

// ---------------------------------------------------------------------------
// The sweep

/// Runs a local sweep: validate, persist, reconcile, report. See the module
/// documentation.
pub fn sweep_local(opts: &LocalSweepOptions) -> Result<SweepReport, SweepFailure> {
    let started_at = opts.clock.now();
    if !opts.dir.is_dir() {
        return Err(SweepError::NoDirectory {
            path: opts.dir.clone(),
        }
        .into());
    }
    let text =
        std::fs::read_to_string(&opts.manifest).map_err(|source| SweepError::ManifestRead {
            path: opts.manifest.clone(),
            source,
        })?;
    let manifest = manifest::from_toml(&text, &opts.manifest.display().to_string())?.manifest;

    // 1. Validate.
    let mut handoffs = Vec::new();
    let mut valid: Vec<SealedRecord> = Vec::new();
    for path in list_handoffs(&opts.sealed_dir())? {
        let (mut report, sealed, bytes) = validate_handoff(&path);
        match sealed {
            Some(s) => valid.push(s),
            None => report.quarantined = Some(quarantine(opts, &report, bytes.as_deref())?),
        }
        handoffs.push(report);
    }

    // 2. Persist.
    valid.sort_by(|a, b| {
        let key = |s: &SealedRecord| {
            let r = s.record();
            (compact_slot(&r.slot).ok(), r.slot.clone(), s.digest())
        };
        key(a).cmp(&key(b))
    });
    let history_path = opts.history_path();
    let hist_err = |source| SweepError::History {
        path: history_path.clone(),
        source,
    };
    let finished_at = opts.clock.now();
    let mut builder = ReceiptBuilder::local(started_at.clone(), finished_at.clone());
    for h in &handoffs {
        let source = relative(&h.source, &opts.dir);
        builder.validated.push(ValidatedEntry {
            source: source.clone(),
            digest: h.digest,
            valid: h.valid(),
            errors: h.issues.iter().map(issue_line).collect(),
        });
        if let Some(q) = &h.quarantined {
            let to = relative(q.copy.as_ref().unwrap_or(&q.why), &opts.dir);
            builder.skipped.push(SkippedEntry {
                source,
                skip_reason: format!("invalid handoff, quarantined to {to}"),
            });
        }
    }
    // Every handoff seen is recorded, even when no record is new.
    builder.record_receipt = !handoffs.is_empty();
    let policies: BTreeMap<LaneName, BaselinePolicy> = manifest
        .lanes
        .iter()
        .map(|l| (l.name.clone(), l.baseline))
        .collect();
    let mut tip_seen = None;
    let persisted = LocalHistory::open_or_init(&history_path)
        .map_err(|e| ("open the history repository", e))
        .and_then(|history| {
            tip_seen = history.tip().ok().flatten();
            let outcome = history
                .persist(&valid, &builder, &policies)
                .map_err(|e| ("persist to benchmark-history", e))?;
            Ok((history, outcome))
        });
    let (history, outcome) = match persisted {
        Ok(done) => done,
        Err((step, e)) => {
            let error = hist_err(e);
            let receipt = stopped_receipt(
                Receipt::unpersisted(&builder, tip_seen),
                "persist",
                step,
                &error,
            );
            return Err(SweepFailure {
                error: Box::new(error),
                receipt,
            });
        }
    };
    let tip = outcome.commit.clone().or_else(|| outcome.parent.clone());

    // 3. Reconcile over all of history; 4. health.
    let reconciled = (|| -> Result<_, (&'static str, SweepError)> {
        let read = |e| ("read history", hist_err(e));
        let entries = history.list_records(None).map_err(read)?;
        let mut records = Vec::with_capacity(entries.len());
        for e in &entries {
            records.push(history.read_record(&e.path).map_err(read)?);
        }
        let applied =
            apply_reconcile(opts, &manifest, &records).map_err(|e| ("apply the reconcile", e))?;
        let latest = history.latest_per_lane().map_err(read)?;
        Ok((records, applied, latest))
    })();
    let (records, applied, latest) = match reconciled {
        Ok(done) => done,
        Err((step, error)) => {
            let receipt = serde_json::from_slice::<Receipt>(&outcome.receipt)
                .ok()
                .and_then(|r| stopped_receipt(r, "reconcile", step, &error));
            return Err(SweepFailure {
                error: Box::new(error),
                receipt,
            });
        }
    };
    let health = health(&manifest, &latest, &records);

    Ok(SweepReport {
        dir: opts.dir.clone(),
        history: history_path.clone(),
        ledger: opts.ledger_path(),
        quarantine: opts.quarantine_dir(),
        started_at,
        finished_at,
        handoffs,
        persisted: outcome.persisted,
        baseline_changes: outcome.baseline_changes,
        commit: outcome.commit,
        tip,
        receipt_path: outcome.receipt_path,
        history_records: records.len(),
        applied: applied.applied,
        pending_actions: applied.pending,
        ledger_created: applied.created,
        replans: applied.replans,
        notes: applied.notes,
        health,
    })
}

pub(crate) fn list_handoffs(dir: &Path) -> Result<Vec<PathBuf>, SweepError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(SweepError::ListHandoffs {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|source| SweepError::ListHandoffs {
            path: dir.to_path_buf(),
            source,
        })?;
        let p = entry.path();
        if p.extension().is_some_and(|e| e == "json") && !p.is_dir() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

fn issue(kind: impl Into<String>, path: &str, reason: impl Into<String>) -> IssueOut {
    IssueOut {
        kind: kind.into(),
        path: path.to_owned(),
        reason: reason.into(),
    }
}

pub(crate) fn issue_line(i: &IssueOut) -> String {
    format!("{}: {}: {}", i.kind, i.path, i.reason)
}

/// Verifies one handoff against the digest its name claims. A handoff whose
/// name claims no digest is invalid: its content address cannot be checked.
pub(crate) fn validate_handoff(
    path: &Path,
) -> (HandoffReport, Option<SealedRecord>, Option<Vec<u8>>) {
    let mut report = HandoffReport {
        source: path.to_path_buf(),
        digest: None,
        named_digest: None,
        issues: Vec::new(),
        quarantined: None,
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            report.issues.push(issue("unreadable", "$", e.to_string()));
            return (report, None, None);
        }
    };
    report.digest = Some(Sha256Digest::of(&bytes));
    let mismatch = IssueKind::DigestMismatch.to_string();
    let expected = match digest_from_file_name(path) {
        Some(Ok(d)) => {
            report.named_digest = Some(d);
            Some(d)
        }
        Some(Err(reason)) => {
            report.issues.push(issue(
                mismatch,
                "$",
                format!("file name does not hold a valid digest: {reason}"),
            ));
            None
        }
        None => {
            report.issues.push(issue(
                mismatch,
                "$",
                "file name claims no digest: a handoff must be named <hex>.json (as `bench seal` writes it) or <anything>--<hex>.json",
            ));
            None
        }
    };
    match verify(&bytes, expected.as_ref()) {
        Ok(s) if report.issues.is_empty() => (report, Some(s), Some(bytes)),
        Ok(_) => (report, None, Some(bytes)),
        Err(e) => {
            report.issues.extend(e.issues.iter().map(IssueOut::from));
            (report, None, Some(bytes))
        }
    }
}

/// Copies an invalid handoff to the quarantine (create-only; a different
/// file already quarantined under the same name keeps its place and this
/// one gets `<stem>.<hex>.json`) and writes the `.why.txt` next to it.
pub(crate) fn quarantine(
    opts: &LocalSweepOptions,
    h: &HandoffReport,
    bytes: Option<&[u8]>,
) -> Result<Quarantined, SweepError> {
    let qdir = opts.quarantine_dir();
    let name = h.source.file_name().map_or_else(
        || "handoff.json".to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    let q_err = |path: &Path, source| SweepError::Quarantine {
        handoff: h.source.clone(),
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(&qdir).map_err(|source| {
        q_err(
            &qdir,
            WriteError::Io {
                step: "create",
                path: qdir.clone(),
                source,
            },
        )
    })?;
    let copy = match (bytes, h.digest) {
        (Some(bytes), Some(digest)) => {
            let first = qdir.join(&name);
            match fsio::write_create_only(&first, bytes) {
                Ok(Created::New | Created::AlreadyPresent) => Some(first),
                Err(WriteError::Conflict { .. }) => {
                    let stem = name.strip_suffix(".json").unwrap_or(&name);
                    let alt = qdir.join(format!("{stem}.{}.json", digest.hex()));
                    fsio::write_create_only(&alt, bytes).map_err(|e| q_err(&alt, e))?;
                    Some(alt)
                }
                Err(e) => return Err(q_err(&first, e)),
            }
        }
        _ => None,
    };
    let copy_name = copy
        .as_ref()
        .and_then(|c| c.file_name())
        .map_or_else(|| name.clone(), |n| n.to_string_lossy().into_owned());
    let why = qdir.join(format!("{copy_name}.why.txt"));
    let text = why_text(h, copy.is_some());
    let same = std::fs::read(&why).is_ok_and(|b| b == text.as_bytes());
    if !same {
        fsio::write_atomic(&why, text.as_bytes()).map_err(|e| q_err(&why, e))?;
    }
    Ok(Quarantined { copy, why })
}

fn why_text(h: &HandoffReport, copied: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "benchops-publish sweep quarantined this handoff: it is NOT a valid sealed record and was NOT persisted."
    );
    let _ = writeln!(s, "source: {}", h.source.display());
    let _ = writeln!(
        s,
        "The source file was left in place. Every sweep checks it again and exits 1 while it is there: \
         fix what produced it and remove it (the sealed record of a rerun gets a new name)."
    );
    if !copied {
        let _ = writeln!(s, "The file could not be read, so no copy is kept here.");
    }
    let show = |d: &Option<Sha256Digest>| d.map_or_else(|| "none".to_owned(), |d| d.to_string());
    let _ = writeln!(s, "digest of the bytes: {}", show(&h.digest));
    let _ = writeln!(s, "digest the file name claims: {}", show(&h.named_digest));
    let _ = writeln!(s, "problems:");
    for i in &h.issues {
        let _ = writeln!(s, "- {}", issue_line(i));
    }
    s
}

pub(crate) fn relative(p: &Path, base: &Path) -> String {
    p.strip_prefix(base)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

struct ReconcileOutcome {
    applied: Vec<Applied>,
    pending: usize,
    created: bool,
    replans: u32,
    notes: Vec<Note>,
}

/// Plans and applies the reconcile, one action and one atomic ledger write
/// at a time; re-plans when the file changed under the sweep.
fn apply_reconcile(
    opts: &LocalSweepOptions,
    manifest: &Manifest,
    records: &[SealedRecord],
) -> Result<ReconcileOutcome, SweepError> {
    let path = opts.ledger_path();
    let hist: Vec<HistoryRecord<'_>> = records.iter().map(HistoryRecord::from).collect();
    let render = RenderOptions::new(opts.history_base_url.clone());
    let mut out = ReconcileOutcome {
        applied: Vec::new(),
        pending: 0,
        created: false,
        replans: 0,
        notes: Vec::new(),
    };
    'plan: loop {
        let (mut ledger, mut last) = match Ledger::load(&path)? {
            Some(found) => found,
            None => {
                let empty = Ledger::empty();
                let bytes = empty.write(&path)?;
                out.created = true;
                (empty, bytes)
            }
        };
        let plan = reconcile(manifest, &hist, &ledger.actual_issues(), &render);
        out.notes = plan.notes;
        for (i, action) in plan.actions.iter().enumerate() {
            if opts.max_actions.is_some_and(|max| out.applied.len() >= max) {
                out.pending = plan.actions.len() - i;
                break 'plan;
            }
            let now = std::fs::read(&path).map_err(|source| LedgerError::Read {
                path: path.clone(),
                source,
            })?;
            if now != last {
                out.replans += 1;
                if out.replans > MAX_REPLANS {
                    return Err(SweepError::LedgerBusy {
                        path,
                        replans: out.replans - 1,
                    });
                }
                continue 'plan;
            }
            let applied = ledger.apply(action, &path)?;
            last = ledger.write(&path)?;
            out.applied.push(applied);
            if let Some(hook) = &opts.after_ledger_write {
                (hook.0)(&path, out.applied.len());
            }
        }
        break;
    }
    Ok(out)
}

fn health(
    manifest: &Manifest,
    latest: &BTreeMap<LaneName, crate::history::RecordEntry>,
    records: &[SealedRecord],
) -> Vec<LaneHealth> {
    let by_digest: BTreeMap<Sha256Digest, &SealedRecord> =
        records.iter().map(|r| (r.digest(), r)).collect();
    let declared: BTreeSet<&LaneName> = manifest.lanes.iter().map(|l| &l.name).collect();
    let row = |lane: &LaneName, in_manifest: bool| LaneHealth {
        lane: lane.clone(),
        in_manifest,
        latest: latest.get(lane).and_then(|e| {
            by_digest.get(&e.digest).map(|s| LatestRecord {
                slot: s.record().slot.clone(),
                digest: e.digest,
                path: e.path.clone(),
                counts: s.record().case_counts,
            })
        }),
    };
    let mut rows: Vec<LaneHealth> = manifest.lanes.iter().map(|l| row(&l.name, true)).collect();
    rows.extend(
        latest
            .keys()
            .filter(|l| !declared.contains(l))
            .map(|l| row(l, false)),
    );
    rows
}

// ---------------------------------------------------------------------------
// Rendering

fn short(d: &Sha256Digest) -> String {
    d.hex().chars().take(12).collect()
}

fn short_commit(c: &str) -> &str {
    c.get(..12).unwrap_or(c)
}

/// One line for a reconcile note.
pub fn render_note(n: &Note) -> String {
    match n {
        Note::Accepted {
            key,
            issue,
            suppressed,
        } => format!(
            "accepted: #{issue} ({key}) carries the accepted label; {} new evidence record(s) not announced",
            suppressed.len()
        ),
        Note::ClosedByHuman { key, issue } => format!(
            "closed by a person: #{issue} ({key}) still reproduces; benchops leaves it closed (reopen it to hand it back)"
        ),
        Note::HeldOpenByHuman { key, issue } => format!(
            "held open by a person: #{issue} ({key}) is cleared but was reopened by hand; benchops will not close it again for this evidence"
        ),
        Note::Uncovered { key, issue } => format!(
            "uncovered: {} ({key}): no lane covers the case any more; it stays open until a person closes or accepts it",
            issue.map_or_else(|| "new issue".to_owned(), |i| format!("#{i}"))
        ),
        Note::Duplicates {
            key,
            canonical,
            others,
        } => format!(
            "duplicates: {key} is tracked by #{canonical}; also carried by {}",
            others
                .iter()
                .map(|o| format!("#{o}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Note::UnknownKey { key, issue } => format!(
            "unknown key: #{issue} names {key}, which no record in history reports; left alone"
        ),
    }
}

/// The human summary a sweep prints.
pub fn render_summary(r: &SweepReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "sweep (local) {}: started {}, contents phase finished {}",
        r.dir.display(),
        r.started_at,
        r.finished_at
    );

    // Validate.
    let _ = writeln!(
        s,
        "validate: {} handoff(s) in {}: {} valid, {} quarantined",
        r.handoffs.len(),
        r.dir.join(SEALED_DIR).display(),
        r.handoffs.len() - r.quarantined(),
        r.quarantined()
    );
    for h in r.handoffs.iter().filter(|h| !h.valid()) {
        if let Some(q) = &h.quarantined {
            let copy = q.copy.as_ref().map_or_else(
                || "(unreadable, not copied)".to_owned(),
                |c| c.display().to_string(),
            );
            let _ = writeln!(
                s,
                "  QUARANTINED {} -> {} (why: {}); NOT persisted; source left in place, remove it once investigated",
                h.source.display(),
                copy,
                q.why.display()
            );
        }
        for i in &h.issues {
            let _ = writeln!(s, "    {}", issue_line(i));
        }
    }

    // Persist.
    let _ = writeln!(
        s,
        "persist: {} new record(s), {} already present; history {} (branch benchmark-history)",
        r.new_records(),
        r.already_present(),
        r.history.display()
    );
    let nothing_new = r.new_records() == 0 && r.baseline_changes.is_empty();
    match (&r.commit, &r.tip) {
        (Some(c), _) if nothing_new => {
            let _ = writeln!(
                s,
                "  nothing new: receipt-only commit {}{}",
                short_commit(c),
                r.receipt_path
                    .as_ref()
                    .map_or_else(String::new, |p| format!(", receipt {p}"))
            );
        }
        (Some(c), _) => {
            let _ = writeln!(
                s,
                "  commit {}{}",
                short_commit(c),
                r.receipt_path
                    .as_ref()
                    .map_or_else(String::new, |p| format!(", receipt {p}"))
            );
        }
        (None, Some(t)) => {
            let _ = writeln!(
                s,
                "  nothing new: no commit (no handoff, nothing to record), tip stays {}",
                short_commit(t)
            );
        }
        (None, None) => {
            let _ = writeln!(
                s,
                "  nothing new: no commit (no handoff, nothing to record); the branch does not exist yet"
            );
        }
    }
    for b in &r.baseline_changes {
        let from = b.from.as_ref().map_or_else(|| "none".to_owned(), short);
        let _ = writeln!(s, "  baseline {}: {} -> {}", b.lane, from, short(&b.to));
    }

    // Reconcile.
    let _ = writeln!(
        s,
        "reconcile: {} record(s) in history; ledger {}{}",
        r.history_records,
        r.ledger.display(),
        if r.ledger_created { " (created)" } else { "" }
    );
    let others = r.applied.len() - r.opened() - r.commented() - r.closed() - r.reopened();
    let _ = writeln!(
        s,
        "  issues: opened {}, commented {}, closed {}, reopened {}; other writes {} (labels, bodies, closing comments, duplicates)",
        r.opened(),
        r.commented(),
        r.closed(),
        r.reopened(),
        others
    );
    for a in &r.applied {
        let _ = writeln!(s, "  {a}");
    }
    if r.pending_actions > 0 {
        let _ = writeln!(
            s,
            "  STOPPED after {} action(s) (max_actions); {} pending, the next sweep applies them",
            r.applied.len(),
            r.pending_actions
        );
    }
    if r.replans > 0 {
        let _ = writeln!(
            s,
            "  the ledger changed under the sweep; plan recomputed {} time(s)",
            r.replans
        );
    }
    for n in &r.notes {
        let _ = writeln!(s, "  note: {}", render_note(n));
    }

    // Health.
    let _ = writeln!(s, "health (latest record per lane)");
    let _ = writeln!(
        s,
        "  {:<16} {:<24} {:<12} {:>5} {:>5} {:>5} {:>7}",
        "LANE", "SLOT", "RECORD", "PASS", "DRIFT", "ERROR", "SKIPPED"
    );
    for h in &r.health {
        let lane = if h.in_manifest {
            h.lane.to_string()
        } else {
            format!("{} (not in manifest)", h.lane)
        };
        match &h.latest {
            Some(l) => {
                let _ = writeln!(
                    s,
                    "  {:<16} {:<24} {:<12} {:>5} {:>5} {:>5} {:>7}",
                    lane,
                    l.slot,
                    short(&l.digest),
                    l.counts.pass,
                    l.counts.drift,
                    l.counts.error,
                    l.counts.skipped
                );
            }
            None => {
                let _ = writeln!(s, "  {lane:<16} no record yet");
            }
        }
    }
    let _ = writeln!(
        s,
        "  (missed scheduled runs are not checked here: the watchdog comes in a later version)"
    );
    s
}
