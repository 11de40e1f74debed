//! Pacing of content-creating requests.
//!
//! GitHub documents a secondary limit of 80 content-generating requests per
//! minute and 500 per hour. [`PacingWindow`] keeps the monotonic times of the
//! requests it granted in the last hour and computes, purely, how long the
//! next one must wait so that both sliding windows stay within their limits.
//! [`Pacer`] wraps it with the injected clock and sleeper; `acquire()` returns
//! the wait it imposed, and the client adds that wait to its metrics
//! (`pacing_waited_ms`), so pacing is reported, never hidden.
//!
//! The client paces every write to a repository (git objects, refs,
//! issues, comments, labels); reads and App token calls are not paced.

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use crate::time::{Clock, Sleeper};

const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

/// Limits of the two sliding windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacingLimits {
    /// Requests in any 60 s window.
    pub per_minute: NonZeroU32,
    /// Requests in any 3600 s window.
    pub per_hour: NonZeroU32,
}

impl Default for PacingLimits {
    /// GitHub's documented limits: 80 per minute, 500 per hour.
    fn default() -> Self {
        PacingLimits {
            per_minute: NonZeroU32::new(80).expect("80 is non-zero"),
            per_hour: NonZeroU32::new(500).expect("500 is non-zero"),
        }
    }
}

/// The requests granted in the last hour, oldest first.
#[derive(Debug, Clone)]
pub struct PacingWindow {
    limits: PacingLimits,
    granted: VecDeque<Duration>,
}

impl PacingWindow {
    /// An empty window.
    pub fn new(limits: PacingLimits) -> Self {
        PacingWindow {
            limits,
            granted: VecDeque::new(),
        }
    }

    /// How long a request at monotonic time `now` must wait so that, once
    /// granted, no 60 s window holds more than `per_minute` and no 3600 s
    /// window more than `per_hour` requests.
    pub fn wait_needed(&self, now: Duration) -> Duration {
        let wait_for = |window: Duration, limit: NonZeroU32| -> Duration {
            let limit = usize::try_from(limit.get()).unwrap_or(usize::MAX);
            let inside: Vec<Duration> = self
                .granted
                .iter()
                .copied()
                .filter(|t| now.saturating_sub(*t) < window)
                .collect();
            if inside.len() < limit {
                return Duration::ZERO;
            }
            // The request fits once all but `limit - 1` of these left the window.
            let must_expire = inside[inside.len() - limit];
            (must_expire + window).saturating_sub(now)
        };
        wait_for(MINUTE, self.limits.per_minute).max(wait_for(HOUR, self.limits.per_hour))
    }

    /// Records a request granted at `at` and forgets those older than an hour.
    pub fn record(&mut self, at: Duration) {
        while self
            .granted
            .front()
            .is_some_and(|t| at.saturating_sub(*t) >= HOUR)
        {
            self.granted.pop_front();
        }
        self.granted.push_back(at);
    }

    /// Requests granted in the last hour as of `now`.
    pub fn in_last_hour(&self, now: Duration) -> usize {
        self.granted
            .iter()
            .filter(|t| now.saturating_sub(**t) < HOUR)
            .count()
    }
}

/// A [`PacingWindow`] with a clock and a sleeper, shared by a client and its
/// clones. Concurrent callers are served one at a time.
#[derive(Debug)]
pub struct Pacer {
    window: tokio::sync::Mutex<PacingWindow>,
    clock: Arc<dyn Clock>,
    sleeper: Arc<dyn Sleeper>,
}

impl Pacer {
    /// A pacer with the given limits, clock and sleeper.
    pub fn new(limits: PacingLimits, clock: Arc<dyn Clock>, sleeper: Arc<dyn Sleeper>) -> Self {
        Pacer {
            window: tokio::sync::Mutex::new(PacingWindow::new(limits)),
            clock,
            sleeper,
        }
    }

    /// Waits until one more content-creating request fits, records it, and
    /// returns how long it waited.
    pub async fn acquire(&self) -> Duration {
        let mut window = self.window.lock().await;
        let mut waited = Duration::ZERO;
        loop {
            let wait = window.wait_needed(self.clock.monotonic());
            if wait.is_zero() {
                break;
            }
            self.sleeper.sleep(wait).await;
            waited += wait;
        }
        window.record(self.clock.monotonic());
        waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::ManualClock;

    fn limits(per_minute: u32, per_hour: u32) -> PacingLimits {
        PacingLimits {
            per_minute: NonZeroU32::new(per_minute).expect("non-zero"),
            per_hour: NonZeroU32::new(per_hour).expect("non-zero"),
        }
    }

    #[test]
    fn minute_window_slides() {
        let mut w = PacingWindow::new(limits(3, 100));
        let s = Duration::from_secs;
        for t in [0, 10, 20] {
            assert_eq!(w.wait_needed(s(t)), Duration::ZERO);
            w.record(s(t));
        }
        // The fourth must wait until the first leaves: 0 + 60.
        assert_eq!(w.wait_needed(s(30)), s(30));
        assert_eq!(w.wait_needed(s(60)), Duration::ZERO);
        w.record(s(60));
        // Now 10, 20, 60 are inside; the next waits for 10 to leave at 70.
        assert_eq!(w.wait_needed(s(61)), s(9));
    }

    #[test]
    fn hour_window_binds_when_the_minute_one_does_not() {
        let mut w = PacingWindow::new(limits(80, 5));
        let s = Duration::from_secs;
        for t in 0..5 {
            w.record(s(t * 100));
        }
        assert_eq!(w.wait_needed(s(500)), s(3100));
        assert_eq!(w.wait_needed(s(3600)), Duration::ZERO);
        assert_eq!(w.in_last_hour(s(3600)), 4);
    }

    #[tokio::test]
    async fn acquire_reports_every_wait_and_keeps_github_limits() {
        let clock = ManualClock::at_unix(1_700_000_000);
        let pacer = Pacer::new(
            PacingLimits::default(),
            Arc::new(clock.clone()),
            Arc::new(clock.clone()),
        );
        let mut total = Duration::ZERO;
        let mut times = Vec::new();
        for _ in 0..600 {
            total += pacer.acquire().await;
            times.push(clock.monotonic());
            clock.advance(Duration::from_millis(100));
        }
        assert_eq!(total, clock.slept(), "every wait is reported");
        assert!(total > Duration::ZERO);
        for (i, t) in times.iter().enumerate() {
            let in_minute = times[..=i]
                .iter()
                .filter(|u| t.saturating_sub(**u) < MINUTE)
                .count();
            let in_hour = times[..=i]
                .iter()
                .filter(|u| t.saturating_sub(**u) < HOUR)
                .count();
            assert!(in_minute <= 80, "request {i}: {in_minute} in a minute");
            assert!(in_hour <= 500, "request {i}: {in_hour} in an hour");
        }
        // The 81st request waited for the first to leave the minute window.
        assert_eq!(times[80], MINUTE);
        // The 501st waited for the first to leave the hour window.
        assert_eq!(times[500], HOUR);
    }
}
