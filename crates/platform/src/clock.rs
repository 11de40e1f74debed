//! The one monotonic clock of a platform run. Every duration in every row
//! (operations, settles, race windows, pacing, lock waits) is read from the
//! same clock, and every pause goes through it, so a test can inject a
//! [`FakeClock`] whose sleeps are instant and whose readings are exact.
//!
//! The clock itself is the core's [`Clock`] (`benchops::time::Clock`, the
//! one definition the GitHub client implements too): its monotonic reading
//! times everything, its wall reading stamps the run id. What the lane adds
//! is a blocking pause on the same clock ([`RunClock`]), since its drivers
//! wait between polls without an async runtime.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

pub use benchops::time::Clock;

/// The run's clock: the core's [`Clock`] and a pause on it.
pub trait RunClock: Clock {
    /// Pauses for `d` (on a fake clock: moves time forward by `d`).
    fn sleep(&self, d: Duration);
    /// Milliseconds of monotonic time since the origin.
    fn now_ms(&self) -> f64 {
        self.monotonic().as_secs_f64() * 1000.0
    }
}

/// The process's clocks: `SystemTime` and a monotonic `Instant` taken at
/// creation.
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
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn monotonic(&self) -> Duration {
        self.origin.elapsed()
    }
}

impl RunClock for SystemClock {
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// A clock that moves only when told to or when something sleeps on it.
/// Its wall time is the Unix epoch plus its monotonic time.
#[derive(Debug, Default)]
pub struct FakeClock {
    at: Mutex<Duration>,
    /// How much each monotonic reading advances time (0: readings are
    /// free).
    tick: Duration,
}

impl FakeClock {
    /// A clock at zero whose readings cost nothing.
    pub fn new() -> FakeClock {
        FakeClock::default()
    }

    /// A clock at zero where every monotonic reading advances time by
    /// `tick`, so that an operation with no sleep still takes a known,
    /// non-zero time.
    pub fn ticking(tick: Duration) -> FakeClock {
        FakeClock {
            at: Mutex::new(Duration::ZERO),
            tick,
        }
    }

    fn at(&self) -> std::sync::MutexGuard<'_, Duration> {
        self.at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Moves the clock forward.
    pub fn advance(&self, d: Duration) {
        *self.at() += d;
    }
}

impl Clock for FakeClock {
    fn now(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + *self.at()
    }

    fn monotonic(&self) -> Duration {
        let mut at = self.at();
        let now = *at;
        *at += self.tick;
        now
    }
}

impl RunClock for FakeClock {
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
        assert_eq!(c.monotonic(), Duration::ZERO);
        c.sleep(Duration::from_millis(1500));
        assert_eq!(c.now_ms(), 1500.0);
        assert_eq!(
            c.now(),
            SystemTime::UNIX_EPOCH + Duration::from_millis(1500),
            "its wall time moves with it"
        );
        let t = FakeClock::ticking(Duration::from_millis(2));
        assert_eq!(t.monotonic(), Duration::ZERO);
        assert_eq!(t.monotonic(), Duration::from_millis(2));
        // A wall reading does not tick.
        assert_eq!(t.now(), t.now());
    }

    #[test]
    fn the_system_clock_is_monotonic() {
        let c = SystemClock::new();
        let a = c.monotonic();
        let b = c.monotonic();
        assert!(b >= a);
    }
}
