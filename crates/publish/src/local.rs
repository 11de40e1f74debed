//! `benchops-publish sweep --local <DIR>`: the sweep engine over the local
//! ports, with no GitHub at all. The operations spec is
//! `docs/cli/sweep-local.md`.
//!
//! | path under `DIR` (default `.benchops/`) | what | port |
//! |---|---|---|
//! | `sealed/*.json` | sealed handoffs (`<hex>.json`) | the engine's handoff directory |
//! | `history.git` | bare git repository, branch `benchmark-history` | [`LocalHistory`] ([`HistoryStore`](crate::sweep::HistoryStore)) |
//! | `issues.json` | the issue ledger (`benchops-issue-ledger/v1`) | [`LedgerTracker`] ([`IssueTracker`]) |
//! | `quarantine/` | copies of invalid handoffs, each with a `.why.txt` | the engine |
//!
//! The ledger tracker writes the whole file atomically after each action,
//! and says an action's target changed when the file's bytes differ from
//! what it last read or wrote (a person or another sweep edited it).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use benchops::reconcile::{Action, RenderOptions};

use crate::history::LocalHistory;
use crate::ledger::{Applied, Ledger, LedgerError};
use crate::sweep::{
    self, Cause, Clock, Inputs, IssueTracker, LabelNeed, Listing, Phase, Progress, RequestSummary,
    StepError, SweepError, SweepReport,
};

/// Where sealed handoffs are read from, under the sweep directory.
pub const SEALED_DIR: &str = "sealed";
/// The history repository, under the sweep directory.
pub const HISTORY_DIR: &str = "history.git";
/// The issue ledger, under the sweep directory.
pub const LEDGER_FILE: &str = "issues.json";
/// Where invalid handoffs are copied, under the sweep directory.
pub const QUARANTINE_DIR: &str = "quarantine";

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

/// The local ledger as an [`IssueTracker`].
#[derive(Debug)]
pub struct LedgerTracker {
    path: PathBuf,
    ledger: Ledger,
    /// The bytes last read or written.
    last: Vec<u8>,
    created: bool,
    after_write: Option<AfterWrite>,
    writes: usize,
}

impl LedgerTracker {
    /// A tracker over the ledger file at `path` (created on first listing
    /// when missing).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        LedgerTracker {
            path: path.into(),
            ledger: Ledger::empty(),
            last: Vec::new(),
            created: false,
            after_write: None,
            writes: 0,
        }
    }

    /// Runs `hook` after each write.
    #[must_use]
    pub fn with_after_write(mut self, hook: Option<AfterWrite>) -> Self {
        self.after_write = hook;
        self
    }
}

impl IssueTracker for LedgerTracker {
    fn describe(&self) -> String {
        format!("ledger {}", self.path.display())
    }

    async fn begin(&mut self) -> Result<(), StepError> {
        Ok(())
    }

    async fn list(&mut self, _drift_label: &str) -> Result<Listing, StepError> {
        let at = |e: LedgerError| StepError::new("read the issue ledger", e);
        let (ledger, bytes) = match Ledger::load(&self.path).map_err(at)? {
            Some(found) => found,
            None => {
                let empty = Ledger::empty();
                let bytes = empty.write(&self.path).map_err(at)?;
                self.created = true;
                (empty, bytes)
            }
        };
        self.ledger = ledger;
        self.last = bytes;
        Ok(Listing {
            issues: self.ledger.actual_issues(),
            foreign: Vec::new(),
        })
    }

    async fn prepare_labels(&mut self, _labels: &[LabelNeed]) -> Result<Vec<String>, StepError> {
        // The ledger stores label names on issues; there is nothing to
        // create.
        Ok(Vec::new())
    }

    async fn still_current(&mut self, _action: &Action) -> Result<bool, StepError> {
        let now = std::fs::read(&self.path).map_err(|source| {
            StepError::new(
                "read the issue ledger",
                LedgerError::Read {
                    path: self.path.clone(),
                    source,
                },
            )
        })?;
        Ok(now == self.last)
    }

    async fn apply(&mut self, action: &Action) -> Result<Applied, StepError> {
        let at = |e: LedgerError| StepError::new("write the issue ledger", e);
        let applied = self.ledger.apply(action, &self.path).map_err(at)?;
        self.last = self.ledger.write(&self.path).map_err(at)?;
        self.writes += 1;
        if let Some(hook) = &self.after_write {
            (hook.0)(&self.path, self.writes);
        }
        Ok(applied)
    }

    async fn end(&mut self) -> Result<(), StepError> {
        Ok(())
    }

    fn created(&self) -> bool {
        self.created
    }
}

/// Runs a local sweep: the engine ([`crate::sweep`]) over the git
/// repository `DIR/history.git` and the ledger `DIR/issues.json`.
pub fn sweep_local(opts: &LocalSweepOptions) -> Result<SweepReport, SweepError> {
    let setup = |e: StepError| SweepError::new(Phase::Setup, e, &Progress::default());
    if !opts.dir.is_dir() {
        return Err(setup(StepError::new(
            "open the sweep directory",
            Cause::Config {
                reason: format!(
                    "sweep directory {} does not exist or is not a directory",
                    opts.dir.display()
                ),
            },
        )));
    }
    let manifest = sweep::load_manifest(&opts.manifest).map_err(setup)?;
    let history_path = opts.history_path();
    let mut store = LocalHistory::open_or_init(&history_path).map_err(|source| {
        setup(StepError::new(
            "open the history repository",
            Cause::Git {
                path: history_path.clone(),
                source,
            },
        ))
    })?;
    let mut tracker =
        LedgerTracker::new(opts.ledger_path()).with_after_write(opts.after_ledger_write.clone());
    let inputs = Inputs {
        target: format!("(local) {}", opts.dir.display()),
        manifest,
        clock: opts.clock.clone(),
        trigger: "local".to_owned(),
        workflow_run: None,
        handoff_dir: Some((opts.sealed_dir(), opts.quarantine_dir())),
        source_base: Some(opts.dir.clone()),
        max_actions: opts.max_actions,
        render: RenderOptions::new(opts.history_base_url.clone()),
        requests: Arc::new(|| None),
        request_summary: Arc::new(RequestSummary::default),
    };
    sweep::ready(sweep::run(&inputs, &mut store, &mut tracker))
}
