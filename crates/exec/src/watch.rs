//! Waiting on a benchmark: `bench status --watch` refreshes with an
//! exponential backoff until every child is terminal, and `bench run`
//! submits, then refreshes at the backend's pace (reaping local wrappers)
//! until every child is terminal, then analyzes.
//!
//! Each look is a full [`bench::refresh`] from the state directory and the
//! backend: nothing is remembered between looks but the wrapper processes
//! to reap. The callers see every intermediate look through a callback, so
//! that printing stays with them.

use std::path::Path;
use std::process::Child;
use std::time::Duration;

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

/// Refreshes every `poll` until every child is terminal and every wrapper
/// in `processes` has exited, reaping them so that they do not linger as
/// zombies. `on_look` sees every look, the last one included, which is
/// returned.
pub fn wait(
    state: &StateDir,
    digest: &Sha256Digest,
    mut processes: Vec<Child>,
    poll: Duration,
    opts: &SchedulerOptions,
    mut on_look: impl FnMut(&Status),
) -> Result<Status, BenchError> {
    loop {
        processes.retain_mut(|p| !matches!(p.try_wait(), Ok(Some(_))));
        let status = bench::refresh(state, digest, opts)?;
        on_look(&status);
        if status.terminal && processes.is_empty() {
            return Ok(status);
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
