//! The one monotonic clock of a platform run. Every duration in every row
//! (operations, settles, race windows, pacing, lock waits) is read from the
//! same [`Clock`], and every pause goes through it, so a test can inject a
//! [`FakeClock`] whose sleeps are instant and whose readings are exact.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A monotonic clock that can also pause.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Time since the clock's origin.
    fn now(&self) -> Duration;
    /// Pauses for `d` (on a fake clock: moves time forward by `d`).
    fn sleep(&self, d: Duration);
    /// Milliseconds since the origin.
    fn now_ms(&self) -> f64 {
        self.now().as_secs_f64() * 1000.0
    }
}

/// The process's monotonic clock (`Instant`).
#[derive(Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    pub fn new() -> SystemClock {
        SystemClock {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// A clock that moves only when told to or when something sleeps on it.
#[derive(Debug, Default)]
pub struct FakeClock {
    at: Mutex<Duration>,
    /// How much each reading advances time (0: readings are free).
    tick: Duration,
}

impl FakeClock {
    /// A clock at zero whose readings cost nothing.
    pub fn new() -> FakeClock {
        FakeClock::default()
    }

    /// A clock at zero where every reading advances time by `tick`, so that
    /// an operation with no sleep still takes a known, non-zero time.
    pub fn ticking(tick: Duration) -> FakeClock {
        FakeClock {
            at: Mutex::new(Duration::ZERO),
            tick,
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, d: Duration) {
        let mut at = self
            .at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *at += d;
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Duration {
        let mut at = self
            .at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = *at;
        *at += self.tick;
        now
    }

    fn sleep(&self, d: Duration) {
        self.advance(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fake_clock_moves_on_sleep_and_on_readings_when_ticking() {
        let c = FakeClock::new();
        assert_eq!(c.now(), Duration::ZERO);
        c.sleep(Duration::from_millis(1500));
        assert_eq!(c.now_ms(), 1500.0);
        let t = FakeClock::ticking(Duration::from_millis(2));
        assert_eq!(t.now(), Duration::ZERO);
        assert_eq!(t.now(), Duration::from_millis(2));
    }

    #[test]
    fn the_system_clock_is_monotonic() {
        let c = SystemClock::new();
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
    }
}
