//! Waiting on a benchmark: `bench status --watch` refreshes with an
//! exponential backoff until every child is terminal, and `bench run`
//! submits, then waits (reaping local workers, and refreshing at a
//! [`Pace`] that keeps it idle while children are measured) until every
//! child is terminal, then analyzes.
//!
//! Each look is a full [`bench::refresh`] from the state directory and the
//! backend: nothing is remembered between looks but the worker processes
//! to reap. The callers see every intermediate look through a callback, so
//! that printing stays with them.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use benchops::Sha256Digest;
use benchops::analysis::Analysis;
use benchops::stats::SplitMix64;

use crate::backend::{Backend, SchedulerOptions};
use crate::bench::{self, BenchError, Status, Submitted};
use crate::state::StateDir;

/// First delay between looks of `bench status --watch`, in seconds.
pub const FIRST_DELAY_S: f64 = 1.0;
/// Longest delay between looks of `bench status --watch`, in seconds.
pub const MAX_DELAY_S: f64 = 30.0;
/// Largest jitter, as a fraction of the delay.
pub const MAX_JITTER: f64 = 0.25;

/// The delays of `bench status --watch`: from [`FIRST_DELAY_S`], doubling
/// up to [`MAX_DELAY_S`], each stretched by a random jitter of up to
/// [`MAX_JITTER`] so that many watchers do not poll in step.
#[derive(Debug, Clone)]
pub struct Backoff {
    looks: u32,
    rng: SplitMix64,
}

impl Backoff {
    /// A backoff whose jitter is drawn from `seed`.
    pub fn new(seed: u64) -> Self {
        Backoff {
            looks: 0,
            rng: SplitMix64::new(seed),
        }
    }

    /// A backoff seeded from the clock and the process id, so that watchers
    /// started together still spread out.
    pub fn from_clock() -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos().into())
            ^ u64::from(std::process::id());
        Backoff::new(seed)
    }

    /// The next delay.
    pub fn next_delay(&mut self) -> Duration {
        self.looks = self.looks.saturating_add(1);
        let unit = (self.rng.next_u64() % 1000) as f64 / 1000.0;
        let wait = benchops::backoff::doubled(
            Duration::from_secs_f64(FIRST_DELAY_S),
            self.looks,
            Duration::from_secs_f64(MAX_DELAY_S),
        );
        benchops::backoff::stretched(wait, MAX_JITTER, unit)
    }
}

/// Refreshes until every child is terminal, backing off between looks:
/// `bench status --watch`. `on_look` sees every look that is not the last;
/// the last, terminal one is returned.
pub fn until_terminal(
    state: &StateDir,
    digest: &Sha256Digest,
    opts: &SchedulerOptions,
    mut on_look: impl FnMut(&Status),
) -> Result<Status, BenchError> {
    let mut backoff = Backoff::from_clock();
    loop {
        let status = bench::refresh(state, digest, opts)?;
        if status.terminal {
            return Ok(status);
        }
        on_look(&status);
        std::thread::sleep(backoff.next_delay());
    }
}

/// While local workers it started are alive, a waiter looks at the state
/// directory (a full refresh, for the progress bar) at most this often...
pub const LOOK_EVERY: Duration = Duration::from_secs(1);
/// ...and never more often than this many times its own last look took, so
/// that however many children there are, the waiter stays idle at least
/// 90% of the time while children are measured.
pub const LOOK_COST_FACTOR: u32 = 10;

/// When the next look of a waiter is due: at once after the processes it
/// waits for all exited, otherwise [`LOOK_EVERY`] (while they run) or
/// `poll` after the last look, stretched to [`LOOK_COST_FACTOR`] times
/// what that look cost.
#[derive(Debug, Default)]
pub struct Pace {
    last: Option<(Instant, Duration)>,
    had_processes: bool,
}

impl Pace {
    /// Whether a look is due now, given whether processes still run and
    /// the backend's `poll`.
    pub fn due(&mut self, processes_running: bool, poll: Duration) -> bool {
        let ended = self.had_processes && !processes_running;
        self.had_processes = processes_running;
        match self.last {
            None => true,
            Some(_) if ended => true,
            Some((at, cost)) => {
                let every = if processes_running { LOOK_EVERY } else { poll };
                at.elapsed() >= every.max(cost * LOOK_COST_FACTOR)
            }
        }
    }

    /// Records a look that started at `started` and just ended.
    pub fn looked(&mut self, started: Instant) {
        self.last = Some((Instant::now(), started.elapsed()));
    }
}

/// Waits until every child is terminal and every worker in `processes` has
/// exited, reaping them so that they do not linger as zombies. While they
/// run, it only checks every `poll` whether they exited (one system call
/// each) and refreshes at the [`Pace`] of a look; once they all exited it
/// refreshes at once. `on_look` sees every look, the last one included,
/// which is returned.
pub fn wait(
    state: &StateDir,
    digest: &Sha256Digest,
    mut processes: Vec<Child>,
    poll: Duration,
    opts: &SchedulerOptions,
    mut on_look: impl FnMut(&Status),
) -> Result<Status, BenchError> {
    let mut pace = Pace::default();
    loop {
        processes.retain_mut(|p| !matches!(p.try_wait(), Ok(Some(_))));
        if pace.due(!processes.is_empty(), poll) {
            let started = Instant::now();
            let status = bench::refresh(state, digest, opts)?;
            pace.looked(started);
            on_look(&status);
            if status.terminal && processes.is_empty() {
                return Ok(status);
            }
        }
        std::thread::sleep(poll);
    }
}

/// Submits `intent_path` to `backend`, waits until every child is terminal
/// and analyzes the benchmark: `bench run`. `on_submitted` sees the
/// submission before the wait starts, and `on_look` every look of the wait.
pub fn run(
    state: &StateDir,
    intent_path: &Path,
    backend: &Backend,
    opts: &SchedulerOptions,
    on_submitted: impl FnOnce(&Submitted),
    on_look: impl FnMut(&Status),
) -> Result<(Status, Analysis), BenchError> {
    let submitted = bench::submit(state, intent_path, backend)?;
    on_submitted(&submitted);
    let Submitted {
        digest,
        processes,
        poll,
        ..
    } = submitted;
    wait(state, &digest, processes, poll, opts, on_look)?;
    bench::analyze(state, &digest, opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_looks_first_then_when_its_workers_exit() {
        let mut pace = Pace::default();
        let poll = Duration::from_millis(20);
        assert!(pace.due(true, poll), "the first look is at once");
        // A look that cost 10 s is not repeated for 100 s...
        pace.last = Some((Instant::now(), Duration::from_secs(10)));
        assert!(!pace.due(true, poll), "not while workers run");
        // ...except at once when the workers have all exited.
        assert!(pace.due(false, poll), "at once when they have all exited");
        pace.last = Some((Instant::now(), Duration::from_secs(10)));
        assert!(!pace.due(false, poll), "then at the pace again");
    }

    #[test]
    fn backoff_doubles_to_its_cap_with_bounded_jitter() {
        let mut b = Backoff::new(7);
        let mut base = FIRST_DELAY_S;
        for _ in 0..10 {
            let d = b.next_delay().as_secs_f64();
            assert!(
                d >= base && d <= base * (1.0 + MAX_JITTER),
                "{d} for {base}"
            );
            base = (base * 2.0).min(MAX_DELAY_S);
        }
        assert_eq!(base, MAX_DELAY_S);
    }
}
