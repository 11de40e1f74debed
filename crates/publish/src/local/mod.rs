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
//! | `sealed/.persisted/` | handoffs whose record is in history, moved out of `sealed/` | the engine ([`crate::sweep::consume`]) |
//! | `.sweep.lock` | the sweep lock (`flock`, with one on `DIR`), holding the holder's pid; never deleted | [`sweep_local`] |
//!
//! At most one sweep runs per directory: [`sweep_local`] takes an
//! exclusive `flock` on `DIR/.sweep.lock` and on `DIR` itself
//! ([`take_sweep_lock`]) before it touches anything, and waits for them at
//! most [`LocalSweepOptions::lock_wait`]; then it stops with
//! [`LocalError::SweepLocked`] (retryable, see [`is_locked_out`]). A
//! symbolic link at `.sweep.lock`, `quarantine` or `sealed/.persisted` is
//! refused in setup: the sweep never writes through a link.
//! Under the lock nothing else of benchops writes the directory, so a ref
//! lock file in `history.git`, or a half-built repository beside it, was
//! left by a killed process: it is removed, and the summary says so.
//!
//! The ledger tracker writes the whole file atomically after each action,
//! and says an action's target changed when the file's bytes differ from
//! what it last read or wrote (a person or another sweep edited it).

mod persist;

pub use persist::{LocalPersist, PersistOutcome};

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Read as _;
use std::os::unix::fs::{FileExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use benchops::reconcile::{Action, RenderOptions};

use crate::history::{HistoryError, LocalError, LocalHistory, StoreError, setup};
use crate::ledger::{Ledger, LedgerError};
use crate::signatures::SignaturePolicy;
use crate::sweep::{
    self, Applied, Cause, Clock, Inputs, IssueTracker, LabelNeed, Listing, Phase, Progress,
    RequestSummary, StepError, SweepError, SweepReport,
};

/// Where sealed handoffs are read from, under the sweep directory.
pub const SEALED_DIR: &str = "sealed";
/// The history repository, under the sweep directory.
pub const HISTORY_DIR: &str = "history.git";
/// The issue ledger, under the sweep directory.
pub const LEDGER_FILE: &str = "issues.json";
/// Where invalid handoffs are copied, under the sweep directory.
pub use crate::sweep::handoff::QUARANTINE_DIR;
/// The sweep lock file, under the sweep directory.
pub const LOCK_FILE: &str = ".sweep.lock";
/// How long a sweep waits for another one to release the sweep lock, by
/// default.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(60);

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
    /// The largest handoff file read from `sealed/`, in bytes.
    pub max_record_bytes: u64,
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
    /// How long to wait for another sweep of the directory to release the
    /// sweep lock before stopping with [`LocalError::SweepLocked`]
    /// (zero: do not wait).
    pub lock_wait: Duration,
    /// Told once when the sweep lock is busy, before the wait (the CLI
    /// prints it on standard error).
    pub lock_notice: fn(&str),
    /// Keep one missed-run issue per lane with this label (`None`: off).
    pub missed_run_label: Option<String>,
    /// Keep the repository's health issue with this label
    /// ([`crate::sweep::health_issue`]); `None`: none.
    pub health_issue_label: Option<String>,
}

impl LocalSweepOptions {
    /// Options with the system clock, no action limit and relative links.
    pub fn new(dir: impl Into<PathBuf>, manifest: impl Into<PathBuf>) -> Self {
        LocalSweepOptions {
            dir: dir.into(),
            manifest: manifest.into(),
            max_record_bytes: benchops::fsio::DEFAULT_MAX_RECORD_BYTES,
            clock: Clock::system(),
            max_actions: None,
            history_base_url: String::new(),
            after_ledger_write: None,
            lock_wait: DEFAULT_LOCK_WAIT,
            lock_notice: |_| {},
            missed_run_label: None,
            health_issue_label: None,
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

    /// `DIR/.sweep.lock`.
    pub fn lock_path(&self) -> PathBuf {
        self.dir.join(LOCK_FILE)
    }
}

/// Whether a sweep stopped because another sweep of the directory held
/// the sweep lock throughout the wait (nothing was read or written; the
/// CLI exits with [`crate::exit::BUSY`]).
pub fn is_locked_out(e: &SweepError) -> bool {
    match e.cause.as_ref() {
        Cause::Adapter(a) => a
            .downcast_ref::<StoreError>()
            .is_some_and(|s| matches!(s.source, LocalError::SweepLocked { .. })),
        _ => false,
    }
}

/// Takes the exclusive sweep lock at `path`, waiting at most `wait`; then
/// records this process's pid in the file (for the message another sweep
/// prints). The lock is released when the returned value is dropped, or
/// when the process dies.
///
/// Two `flock`s make the lock, both taken without blocking and retried
/// until `wait` is over: one on the lock file and one on the directory
/// holding it. The directory's lock keeps a second sweep out even when
/// someone deletes the lock file under a running sweep (the second sweep
/// would lock a new file). The lock file is opened without following a
/// symbolic link (a link is refused, and so is anything but a regular
/// file), and once it is locked the path must still name the locked file
/// (same device and inode); if it does not (it was deleted or replaced
/// meanwhile), the lock is let go and taken again. The file is truncated
/// only once both locks are held.
///
/// When the lock is busy, `waiting` is told once, before the wait, what is
/// awaited and for how long (the CLI prints it: a wait of up to a minute
/// must not look like a hang).
pub fn take_sweep_lock(
    path: &Path,
    wait: Duration,
    waiting: &mut dyn FnMut(&str),
) -> Result<SweepLock, LocalError> {
    let io_err = |step, source| {
        LocalError::History(HistoryError::Io {
            step,
            path: path.to_path_buf(),
            source,
        })
    };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let start = Instant::now();
    let mut told = false;
    loop {
        let file = open_lock_file(path).map_err(|e| io_err("open the sweep lock", e))?;
        let dir = File::open(&parent).map_err(|e| {
            LocalError::History(HistoryError::Io {
                step: "open the sweep directory",
                path: parent.clone(),
                source: e,
            })
        })?;
        let busy = |f: &File| {
            let waited = start.elapsed();
            (waited >= wait).then(|| LocalError::SweepLocked {
                lock: path.to_path_buf(),
                waited_ms: waited.as_millis(),
                holder: holder_of(f),
            })
        };
        let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((f, Errno::EWOULDBLOCK | Errno::EINTR)) => {
                if let Some(e) = busy(&f) {
                    return Err(e);
                }
                if !told {
                    told = true;
                    waiting(&format!(
                        "waiting up to {:.0} s for the sweep lock {} ({}): another sweep of this directory is running",
                        wait.as_secs_f64(),
                        path.display(),
                        holder_of(&f).map_or_else(
                            || "holder unknown".to_owned(),
                            |h| format!("held by {h}")
                        )
                    ));
                }
                pause(start, wait);
                continue;
            }
            Err((_, errno)) => return Err(io_err("lock", std::io::Error::from(errno))),
        };
        if !names_same_file(path, &file).map_err(|e| io_err("look at the sweep lock", e))? {
            // Deleted or replaced since it was opened: lock what the path
            // names now.
            if let Some(e) = busy(&file) {
                return Err(e);
            }
            continue;
        }
        let dir = match Flock::lock(dir, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((_, Errno::EWOULDBLOCK | Errno::EINTR)) => {
                // Another sweep holds the directory; its lock file was
                // deleted (the file locked here is new).
                if let Some(e) = busy(&file) {
                    return Err(e);
                }
                drop(file);
                pause(start, wait);
                continue;
            }
            Err((_, errno)) => return Err(io_err("lock", std::io::Error::from(errno))),
        };
        let pid = format!("pid {}\n", std::process::id());
        file.set_len(0)
            .and_then(|()| file.write_all_at(pid.as_bytes(), 0))
            .map_err(|e| io_err("write the sweep lock", e))?;
        return Ok(SweepLock {
            _file: file,
            _dir: dir,
        });
    }
}

/// The sweep lock, held until dropped.
#[derive(Debug)]
pub struct SweepLock {
    _file: Flock<File>,
    _dir: Flock<File>,
}

/// Sleeps a little before the next try, never past the end of the wait.
fn pause(start: Instant, wait: Duration) {
    let left = wait.saturating_sub(start.elapsed());
    std::thread::sleep(left.min(Duration::from_millis(20)));
}

/// Opens (creating it if missing) the lock file at `path` for reading and
/// writing, never through a symbolic link and never blocking; refuses
/// anything but a regular file.
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(nix::libc::ELOOP) {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "it is a symbolic link; the sweep lock is never followed through a link \
                     (remove the link; the sweep creates the file)",
                )
            } else {
                e
            }
        })?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "it is not a regular file",
        ));
    }
    Ok(file)
}

/// Whether `path` still names the file `f` has open (same device and
/// inode, the path itself, not a link's target).
fn names_same_file(path: &Path, f: &File) -> std::io::Result<bool> {
    let open = f.metadata()?;
    match std::fs::symlink_metadata(path) {
        Ok(now) => Ok(now.dev() == open.dev() && now.ino() == open.ino()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// What a lock file says about its holder: a short, printable prefix.
fn holder_of(f: &File) -> Option<String> {
    let mut text = String::new();
    let _ = f.take(64).read_to_string(&mut text);
    let text: String = text.trim().chars().filter(|c| !c.is_control()).collect();
    (!text.is_empty()).then_some(text)
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
        let now = benchops::fsio::read_input_file(&self.path, crate::ledger::MAX_LEDGER_BYTES)
            .map_err(|source| {
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

/// Refuses a symbolic link at any of `paths` (directories the sweep
/// writes into): nothing is written through a link.
fn refuse_links(paths: &[PathBuf]) -> Result<(), StepError> {
    for p in paths {
        if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(StepError::new(
                "check the sweep directory",
                Cause::Config {
                    reason: format!(
                        "{} is a symbolic link; the sweep never writes through a link (replace it with a directory, or remove it)",
                        crate::text::shown_path(p)
                    ),
                },
            ));
        }
    }
    Ok(())
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
    let history_path = opts.history_path();
    let git_err = |step: &str| {
        let history_path = history_path.clone();
        let step = step.to_owned();
        move |source: LocalError| {
            setup(StepError::new(
                step,
                StoreError {
                    path: history_path,
                    source,
                },
            ))
        }
    };
    // Held until this function returns (or the process dies).
    let _lock = take_sweep_lock(&opts.lock_path(), opts.lock_wait, &mut |m| {
        (opts.lock_notice)(m)
    })
    .map_err(git_err("take the sweep lock"))?;
    refuse_links(&[
        opts.quarantine_dir(),
        opts.sealed_dir().join(sweep::consume::PERSISTED_DIR),
    ])
    .map_err(setup)?;
    let manifest = sweep::load_manifest(&opts.manifest).map_err(setup)?;
    let mut setup_notes = Vec::new();
    for p in setup::remove_init_leftovers(&history_path)
        .map_err(|e| git_err("remove a half-built history repository")(e.into()))?
    {
        setup_notes.push(format!(
            "removed {}, a history repository a killed sweep was building",
            p.display()
        ));
    }
    let mut store = LocalHistory::open_or_init(&history_path)
        .map_err(|e| git_err("open the history repository")(e.into()))?;
    for p in store
        .remove_stale_ref_locks()
        .map_err(|e| git_err("remove a stale ref lock")(e.into()))?
    {
        setup_notes.push(format!(
            "removed the stale ref lock {} (a git process was killed inside a ref update; no other sweep holds the directory)",
            p.display()
        ));
    }
    let mut tracker =
        LedgerTracker::new(opts.ledger_path()).with_after_write(opts.after_ledger_write.clone());
    let signing = SignaturePolicy::load(&manifest, &opts.manifest, || {
        sweep::clock_instant(&opts.clock)
    })
    .map_err(setup)?;
    let inputs = Inputs {
        missed_run_label: opts.missed_run_label.clone(),
        health_issue_label: opts.health_issue_label.clone(),
        signing,
        target: format!("(local) {}", opts.dir.display()),
        manifest,
        clock: opts.clock.clone(),
        trigger: "local".to_owned(),
        workflow_run: None,
        handoff_dir: Some((opts.sealed_dir(), opts.quarantine_dir())),
        max_record_bytes: opts.max_record_bytes,
        source_base: Some(opts.dir.clone()),
        max_actions: opts.max_actions,
        render: RenderOptions::new(opts.history_base_url.clone()),
        requests: Arc::new(|| None),
        request_summary: Arc::new(RequestSummary::default),
    };
    let mut report = pollster::block_on(sweep::run(&inputs, &mut store, &mut tracker))?;
    report.setup_notes = setup_notes;
    Ok(report)
}
