//! The local backend: at most `slots` worker processes per attempt
//! (`benchops-exec worker`), each of which claims the next child, runs it
//! in its own process tree (no process per child but the command itself),
//! records its result and claims again until no child is left, then
//! exits. There is no resident controller: nothing but the files and the
//! processes holds state, and a refresh restarts the workers that a queue
//! still needs (see [`Snapshot::resume`]).
//!
//! * **Claims** (`backend/claims.rs`): a worker takes a child by creating
//!   `attempts/<NNNN>/claims/<index>` with one `symlink(2)`, which names it
//!   by pid and start time. Children are claimed in plan order, or in the
//!   order the submission recorded ([`ClaimOrder`]).
//! * **Slots**: a worker first takes one of the attempt's `slots` file
//!   locks (`flock`, without waiting) and exits when none is free, so
//!   however many are started (two refreshes at once), at most `slots` run.
//! * **A worker that dies** (`SIGKILL`) leaves its claim. A later look sees
//!   its pid gone (or reused) and, when the child has no result, a worker
//!   claims it again as `<index>.r1` (then `.r2`, …), whose run directory
//!   is `runs/<index>/<attempt>.r1`: the dead run's files stay as they were.
//!   Before it runs the child again the new worker kills what the dead one
//!   left running (its session). A child with a result is never run again;
//!   a child is claimed again at most [`MAX_RECLAIMS`] times, and a refresh
//!   stops starting workers once [`MAX_WORKERS_PER_SLOT`] per slot (plus
//!   one per reclaim) were started, so that nothing is retried forever.
//! * **Cancelling** records the cancellation first (a worker looks for it
//!   before every claim), then sends `SIGTERM` to the process groups of
//!   the commands that run.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use benchops::Sha256Digest;
use benchops::classify::BackendEvidence;
use benchops::stats::SplitMix64;

use super::claims::{self, AttemptFiles, Claim, Liveness, Owner};
use super::{BackendError, Job, Launched, record_cancel};
use crate::child;
use crate::procfs;
use crate::state::{self, BackendHandles, LocalHandle, StateDir, StateError, Submission};

/// The order in which the workers of a local attempt claim children.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ClaimOrder {
    /// Plan order (index order).
    #[default]
    Plan,
    /// This permutation of the child indices, recorded in the submission.
    Permutation(Vec<u64>),
    /// A permutation drawn from `seed` (a Fisher–Yates shuffle with
    /// [`SplitMix64`]); the permutation is what the submission records.
    Shuffled {
        /// The seed.
        seed: u64,
    },
}

impl ClaimOrder {
    /// The permutation of `0..count` to record, `None` for plan order.
    /// A given permutation must hold every index below `count` once.
    pub fn permutation(&self, count: u64) -> Result<Option<Vec<u64>>, BackendError> {
        match self {
            ClaimOrder::Plan => Ok(None),
            ClaimOrder::Permutation(p) => {
                let mut seen = vec![false; usize::try_from(count).unwrap_or(usize::MAX)];
                let ok = p.len() as u64 == count
                    && p.iter().all(|&i| {
                        usize::try_from(i)
                            .ok()
                            .and_then(|i| seen.get_mut(i))
                            .is_some_and(|s| !std::mem::replace(s, true))
                    });
                if ok {
                    Ok(Some(p.clone()))
                } else {
                    Err(BackendError::Order(format!(
                        "the claim order must hold every child index below {count} exactly once"
                    )))
                }
            }
            ClaimOrder::Shuffled { seed } => {
                let mut rng = SplitMix64::new(*seed);
                let mut p: Vec<u64> = (0..count).collect();
                for i in (1..p.len()).rev() {
                    let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                    p.swap(i, j);
                }
                Ok(Some(p))
            }
        }
    }
}

/// Options of a local launch.
#[derive(Debug, Clone)]
pub struct LocalOptions {
    /// Concurrency slots: workers, so children, running at once.
    pub slots: u32,
    /// Path of the `benchops-exec` binary that the workers run; the
    /// current executable when `None`.
    pub exe: Option<PathBuf>,
    /// The order in which workers claim children.
    pub order: ClaimOrder,
}

impl Default for LocalOptions {
    fn default() -> Self {
        LocalOptions {
            slots: 1,
            exe: None,
            order: ClaimOrder::Plan,
        }
    }
}

/// How often a waiting caller looks at its workers: a look at whether a
/// process it started has exited is one system call.
const POLL: Duration = Duration::from_millis(20);

/// How often a child is claimed again after the worker that held it died
/// without its result: a child that kills its worker every time (or a
/// worker that cannot record it) ends after this many runs instead of
/// being retried forever.
pub const MAX_RECLAIMS: u32 = 3;

/// How many workers an attempt may have been given per slot, besides one
/// for each reclaim, before a refresh stops starting new ones (their logs
/// count them): a worker that dies before it claims anything, every time,
/// ends the attempt instead of being restarted forever.
pub const MAX_WORKERS_PER_SLOT: usize = 4;

/// Workers that a refresh started, kept so that a long-lived process (a
/// `bench run`, a `lane run --wait`) reaps them once they exit.
static STARTED: Mutex<Vec<Child>> = Mutex::new(Vec::new());

fn reap_started() {
    if let Ok(mut started) = STARTED.lock() {
        started.retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_))));
    }
}

/// Starts one worker of attempt `attempt`, its standard error in a new
/// log file.
fn spawn_worker(
    exe: &std::path::Path,
    state: &StateDir,
    digest: &Sha256Digest,
    attempt: u32,
    files: &AttemptFiles,
) -> std::io::Result<Child> {
    let root = std::fs::canonicalize(state.root()).unwrap_or_else(|_| state.root().to_path_buf());
    let log = files.new_log()?;
    let mut cmd = Command::new(exe);
    cmd.arg("--state")
        .arg(&root)
        .arg("worker")
        .arg("--benchmark")
        .arg(digest.hex())
        .arg("--attempt")
        .arg(attempt.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log));
    for var in child::env_remove_publication_credentials() {
        cmd.env_remove(var);
    }
    cmd.spawn()
}

/// Starts `min(slots, children)` workers, then writes the submission record
/// naming them (a worker waits for that record before it claims anything).
pub(super) fn launch(job: &Job<'_>, opts: &LocalOptions) -> Result<Launched, BackendError> {
    let state = job.state;
    let digest = job.digest;
    let attempt = job.attempt;
    let exe = match &opts.exe {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(BackendError::CurrentExe)?,
    };
    let slots = opts.slots.max(1);
    let count = job.plan.len();
    let order = opts.order.permutation(count)?;
    let files = AttemptFiles::new(state.local_attempt_dir(&digest, attempt));
    files.create().map_err(|source| StateError::CreateDir {
        path: files.root().to_path_buf(),
        source,
    })?;
    let mut processes = Vec::new();
    let mut workers = Vec::new();
    for k in 0..u64::from(slots).min(count) {
        let proc = spawn_worker(&exe, state, &digest, attempt, &files)
            .map_err(|source| BackendError::Spawn { index: k, source })?;
        workers.push(LocalHandle {
            pid: proc.id(),
            start_ticks: procfs::start_ticks(proc.id()).unwrap_or(0),
        });
        processes.push(proc);
    }
    let submission = job.record(
        count,
        BackendHandles::Local {
            host: state::host_name(),
            slots,
            exe,
            workers,
            order,
        },
    )?;
    Ok(Launched {
        submission,
        processes,
        note: format!(
            "submitted {count} children (attempt {attempt}) to the local backend: {} worker(s)",
            u64::from(slots).min(count)
        ),
        poll: POLL,
    })
}

/// One look at a local attempt: every child's newest claim, which workers
/// live, and what the look did to serve the queue.
#[derive(Debug)]
pub struct Snapshot {
    claims: std::collections::HashMap<u64, Claim>,
    /// Whether each holder of a claim and each worker lived.
    alive: std::collections::HashMap<LocalHandle, bool>,
    /// Live workers (by the submission's handles and the registry).
    live_workers: usize,
    /// Children without a claim, or whose holder died before their result.
    queued: u64,
    /// Dead holders' claims without a result (by index).
    reclaimable: std::collections::HashSet<u64>,
    cancelled: bool,
    /// Why this look could not serve the queue, if it could not.
    blocked: Option<String>,
    /// Workers this look started.
    started_workers: usize,
}

impl Snapshot {
    /// Reads the claims and the workers of `sub`'s attempt.
    pub fn take(state: &StateDir, digest: &Sha256Digest, sub: &Submission) -> Self {
        reap_started();
        let files = AttemptFiles::new(state.local_attempt_dir(digest, sub.attempt));
        let claims = files.scan();
        let mut alive = Liveness::default();
        let mut workers: Vec<LocalHandle> = files.registered();
        if let BackendHandles::Local { workers: w, .. } = &sub.backend {
            workers.extend(w.iter().copied());
        }
        workers.sort_by_key(|h| (h.pid, h.start_ticks));
        workers.dedup();
        let live_workers = workers.iter().filter(|h| alive.alive(h)).count();
        let mut reclaimable = std::collections::HashSet::new();
        let mut claimed = 0u64;
        let mut seen = std::collections::HashMap::new();
        for h in &workers {
            seen.insert(*h, alive.alive(h));
        }
        for (&index, claim) in &claims {
            if !sub.indices.contains(index) {
                continue;
            }
            claimed += 1;
            if let Owner::Worker(h) = claim.owner {
                seen.insert(h, alive.alive(&h));
            }
            if let Owner::Worker(h) = claim.owner
                && claim.generation < MAX_RECLAIMS
                && !alive.alive(&h)
                && !state
                    .attempt_dir(digest, index, sub.attempt, claim.generation)
                    .join(child::RESULT_FILE)
                    .exists()
            {
                reclaimable.insert(index);
            }
        }
        let total = match &sub.indices {
            state::IndexSet::Range { count } => *count,
            state::IndexSet::List { indices } => indices.len() as u64,
        };
        Snapshot {
            claims,
            alive: seen,
            live_workers,
            queued: total.saturating_sub(claimed) + reclaimable.len() as u64,
            reclaimable,
            cancelled: state.is_cancelled(digest, sub.attempt),
            blocked: None,
            started_workers: 0,
        }
    }

    /// Restarts the workers the queue needs: when children wait for a
    /// worker (unclaimed, or their holder died) and fewer than `slots`
    /// workers live, starts as many as are missing. Nothing is started for
    /// a cancelled attempt, nor on another host than the submission's.
    pub fn resume(&mut self, state: &StateDir, digest: &Sha256Digest, sub: &Submission) {
        let BackendHandles::Local {
            host, slots, exe, ..
        } = &sub.backend
        else {
            return;
        };
        if self.cancelled || self.queued == 0 {
            return;
        }
        let here = state::host_name();
        if *host != here {
            self.blocked = Some(format!(
                "submitted on host {host}, and this look runs on {here}"
            ));
            return;
        }
        let missing = (*slots as usize)
            .saturating_sub(self.live_workers)
            .min(usize::try_from(self.queued).unwrap_or(usize::MAX));
        if missing == 0 {
            return;
        }
        let files = AttemptFiles::new(state.local_attempt_dir(digest, sub.attempt));
        let given = files.logs();
        let reclaims: usize = self.claims.values().map(|c| c.generation as usize).sum();
        if given >= *slots as usize * MAX_WORKERS_PER_SLOT + reclaims {
            self.blocked = Some(format!(
                "{given} workers were started for this attempt, and none is started again (see {})",
                files.root().join("logs").display()
            ));
            return;
        }
        for _ in 0..missing {
            match spawn_worker(exe, state, digest, sub.attempt, &files) {
                Ok(c) => {
                    self.started_workers += 1;
                    if let Ok(mut started) = STARTED.lock() {
                        started.push(c);
                    }
                }
                Err(e) => {
                    self.blocked = Some(format!(
                        "no worker runs, and {} could not be started: {e}",
                        exe.display()
                    ));
                    break;
                }
            }
        }
    }

    /// Whether a worker serves the queue (one lives, or this look started
    /// one).
    fn served(&self) -> bool {
        self.live_workers + self.started_workers > 0
    }

    /// Whether the holder `h` of a claim lived when the look was taken.
    fn alive(&self, h: &LocalHandle) -> bool {
        self.alive.get(h).copied().unwrap_or(false)
    }

    /// The run (claim generation) the backend is at for child `index`.
    pub fn restarts(&self, index: u64) -> u32 {
        self.claims.get(&index).map_or(0, |c| c.generation)
    }

    /// What the backend says about child `index`; `started` is whether its
    /// `started` marker existed when the files were read.
    pub fn evidence(&self, index: u64, started: bool) -> BackendEvidence {
        let waiting = |s: &Self, what: String| {
            if s.served() {
                BackendEvidence::Pending(what)
            } else {
                BackendEvidence::Gone(format!(
                    "{what}, and {}",
                    s.blocked.as_deref().unwrap_or("no worker runs")
                ))
            }
        };
        let Some(claim) = self.claims.get(&index).copied() else {
            return if self.cancelled {
                BackendEvidence::Gone("no worker claimed it before the cancellation".into())
            } else {
                waiting(self, "queued for a worker".into())
            };
        };
        match claim.owner {
            Owner::Done => BackendEvidence::Gone("its worker recorded it as done".into()),
            Owner::Unreadable => {
                BackendEvidence::Unknown("its claim is not a worker's (altered by hand?)".into())
            }
            Owner::Worker(h) if self.alive(&h) => {
                if started {
                    BackendEvidence::Running
                } else {
                    BackendEvidence::Pending(format!("claimed by worker pid {}", h.pid))
                }
            }
            Owner::Worker(h) if self.reclaimable.contains(&index) && !self.cancelled => waiting(
                self,
                format!(
                    "worker pid {} died while it held the child; queued again",
                    h.pid
                ),
            ),
            Owner::Worker(h) => {
                BackendEvidence::Gone(format!("worker pid {} is no longer running", h.pid))
            }
        }
    }
}

/// The live workers of `sub`'s attempt.
fn live_workers(state: &StateDir, digest: &Sha256Digest, sub: &Submission) -> Vec<LocalHandle> {
    let files = AttemptFiles::new(state.local_attempt_dir(digest, sub.attempt));
    let mut workers = files.registered();
    if let BackendHandles::Local { workers: w, .. } = &sub.backend {
        workers.extend(w.iter().copied());
    }
    workers.sort_by_key(|h| (h.pid, h.start_ticks));
    workers.dedup();
    workers.retain(|h| procfs::is_alive(h.pid, h.start_ticks));
    workers
}

/// Records the cancellation first, so that no worker claims another child;
/// then sends `SIGTERM` to the process groups of the commands the live
/// workers run. Each worker records its command's end and exits.
pub(super) fn cancel(
    state: &StateDir,
    digest: &Sha256Digest,
    sub: &Submission,
) -> Result<Vec<String>, BackendError> {
    record_cancel(
        state,
        digest,
        sub,
        "signal the commands of live local workers",
    )?;
    let mut actions = Vec::new();
    for h in live_workers(state, digest, sub) {
        for g in procfs::child_groups(h.pid) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(g as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            actions.push(format!("worker {}: SIGTERM to process group {g}", h.pid));
        }
    }
    Ok(actions)
}

/// A running worker: it holds one slot of its attempt and claims children
/// one after another ([`Worker::claim_next`]).
#[derive(Debug)]
pub struct Worker {
    state: StateDir,
    digest: Sha256Digest,
    attempt: u32,
    files: AttemptFiles,
    me: LocalHandle,
    slot: u32,
    _lock: nix::fcntl::Flock<std::fs::File>,
    order: Vec<u64>,
    next: usize,
    known: std::collections::HashMap<u64, Claim>,
    alive: Liveness,
}

/// A child a worker holds the claim of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claimed {
    /// The child.
    pub index: u64,
    /// Its run number: the claim's generation, whose run directory the
    /// child's files go to.
    pub restart: u32,
}

/// How long a worker waits for its attempt's submission record.
const SUBMISSION_WAIT: Duration = Duration::from_secs(30);

impl Worker {
    /// Becomes a worker of `attempt`: leads a new session (so that what it
    /// leaves behind when it dies can be found), waits for the submission
    /// record, takes a free slot and registers. `Ok(None)` when the
    /// submission never appeared (its launcher died) or every slot is
    /// taken: there is nothing for this process to do.
    pub fn start(
        state: &StateDir,
        digest: &Sha256Digest,
        attempt: u32,
    ) -> Result<Option<Self>, BackendError> {
        let _ = nix::unistd::setsid();
        let Some(sub) = wait_for_submission(state, digest, attempt)? else {
            return Ok(None);
        };
        let BackendHandles::Local { slots, order, .. } = &sub.backend else {
            return Err(BackendError::Order(format!(
                "attempt {attempt} was not submitted to the local backend"
            )));
        };
        let files = AttemptFiles::new(state.local_attempt_dir(digest, attempt));
        let Some((slot, lock)) = take_slot(&files, *slots)? else {
            return Ok(None);
        };
        let pid = std::process::id();
        let me = LocalHandle {
            pid,
            start_ticks: procfs::start_ticks(pid).unwrap_or(0),
        };
        files
            .register(slot, &me)
            .map_err(|source| StateError::CreateDir {
                path: files.root().join("workers"),
                source,
            })?;
        let order = order.clone().unwrap_or_else(|| sub.indices.to_vec());
        let known = files.scan();
        Ok(Some(Worker {
            state: state.clone(),
            digest: *digest,
            attempt,
            files,
            me,
            slot,
            _lock: lock,
            order,
            next: 0,
            known,
            alive: Liveness::default(),
        }))
    }

    /// The next child this worker claims, in the submission's order; `None`
    /// when none is left for it, or the attempt was cancelled.
    ///
    /// A child claimed by a dead worker without a result is claimed again
    /// under the next generation, after the dead worker's leftovers are
    /// killed; a child claimed by a live worker, or done, is passed over.
    pub fn claim_next(&mut self) -> Result<Option<Claimed>, BackendError> {
        while let Some(&index) = self.order.get(self.next) {
            self.next += 1;
            if self.state.is_cancelled(&self.digest, self.attempt) {
                return Ok(None);
            }
            let io = |source| StateError::CreateDir {
                path: self.files.root().join("claims"),
                source,
            };
            let mut claim = self.known.get(&index).copied();
            if claim.is_none() {
                if self.files.try_claim(index, 0, &self.me).map_err(io)? {
                    return Ok(self.won(index, 0));
                }
                claim = self.files.read(index, 0).map(|owner| Claim {
                    generation: 0,
                    owner,
                });
            }
            let Some(Claim { generation, owner }) = claim else {
                continue;
            };
            let Owner::Worker(holder) = owner else {
                continue;
            };
            if holder == self.me || generation >= MAX_RECLAIMS || self.alive.alive(&holder) {
                continue;
            }
            let dir = self
                .state
                .attempt_dir(&self.digest, index, self.attempt, generation);
            if dir.join(child::RESULT_FILE).exists() {
                continue;
            }
            if self
                .files
                .try_claim(index, generation + 1, &self.me)
                .map_err(io)?
            {
                claims::kill_leftovers(&holder);
                return Ok(self.won(index, generation + 1));
            }
        }
        Ok(None)
    }

    /// A claim this worker just won, unless its child has a result already
    /// (a worker that died between recording it and marking it done) or
    /// the attempt was cancelled meanwhile.
    fn won(&mut self, index: u64, restart: u32) -> Option<Claimed> {
        if self.state.is_cancelled(&self.digest, self.attempt) {
            self.next = self.order.len();
            return None;
        }
        Some(Claimed { index, restart })
    }

    /// Whether `c`'s child already has a result (it is then not run again).
    pub fn has_result(&self, c: &Claimed) -> bool {
        self.state
            .attempt_dir(&self.digest, c.index, self.attempt, c.restart)
            .join(child::RESULT_FILE)
            .exists()
    }

    /// Marks `c` done: its result is recorded.
    pub fn done(&self, c: &Claimed) -> Result<(), BackendError> {
        self.files
            .mark_done(c.index, c.restart, &self.me)
            .map_err(|source| {
                StateError::CreateDir {
                    path: self.files.root().join("claims"),
                    source,
                }
                .into()
            })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.files.deregister(self.slot, &self.me);
    }
}

/// Takes the first free slot lock of `slots`, without waiting.
fn take_slot(
    files: &AttemptFiles,
    slots: u32,
) -> Result<Option<(u32, nix::fcntl::Flock<std::fs::File>)>, BackendError> {
    for k in 0..slots.max(1) {
        let path = files.slot_lock(k);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| StateError::CreateDir {
                path: path.clone(),
                source,
            })?;
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Ok(Some((k, lock))),
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => continue,
            Err((_, errno)) => {
                return Err(StateError::CreateDir {
                    path,
                    source: errno.into(),
                }
                .into());
            }
        }
    }
    Ok(None)
}

/// The submission of `attempt`, once it is recorded (within
/// [`SUBMISSION_WAIT`]); `None` when it never is. A worker works only for
/// an attempt whose submission was recorded: if the launcher died between
/// starting workers and recording them, the attempt is invisible to every
/// later look, and running its children would only run them twice when
/// the launch is resumed.
fn wait_for_submission(
    state: &StateDir,
    digest: &Sha256Digest,
    attempt: u32,
) -> Result<Option<Submission>, BackendError> {
    let path = state
        .benchmark_dir(digest)
        .join("submissions")
        .join(format!("{attempt:04}.json"));
    let deadline = std::time::Instant::now() + SUBMISSION_WAIT;
    loop {
        if path.exists() {
            return Ok(Some(state::read_json(&path)?));
        }
        if std::time::Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_orders_are_permutations() {
        assert_eq!(ClaimOrder::Plan.permutation(3).expect("plan"), None);
        let p = ClaimOrder::Permutation(vec![2, 0, 1]);
        assert_eq!(p.permutation(3).expect("valid"), Some(vec![2, 0, 1]));
        for bad in [vec![0, 1], vec![0, 0, 1], vec![0, 1, 3]] {
            assert!(ClaimOrder::Permutation(bad).permutation(3).is_err());
        }
        let s = ClaimOrder::Shuffled { seed: 7 }
            .permutation(50)
            .expect("shuffled")
            .expect("recorded");
        let mut sorted = s.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
        assert_ne!(s, sorted, "a shuffle of 50 moves something");
        assert_eq!(
            ClaimOrder::Shuffled { seed: 7 }
                .permutation(50)
                .expect("again"),
            Some(s),
            "the same seed gives the same order"
        );
    }
}
