//! Injectable time: a clock for JWT claims, rate-limit resets and pacing
//! windows (the core's [`Clock`], implemented here), and a sleeper for
//! every wait the client imposes.
//!
//! Production code uses [`SystemClock`] and [`TokioSleeper`]. Tests use one
//! [`ManualClock`] as both: sleeping on it advances its time at once and
//! records the wait, so retry and pacing tests run instantly and can assert
//! on every wait.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// A source of time: the core's one definition.
pub use benchops::time::Clock;

/// A way to wait.
pub trait Sleeper: Send + Sync + fmt::Debug {
    /// Waits for `duration`.
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// The real clock: `SystemTime` and a monotonic `Instant` taken at creation.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose monotonic origin is now.
    pub fn new() -> Self {
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

/// The real sleeper: `tokio::time::sleep`.
#[derive(Debug, Default, Clone, Copy)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(tokio::time::sleep(duration))
    }
}

#[derive(Debug)]
struct ManualState {
    wall: SystemTime,
    mono: Duration,
    sleeps: Vec<Duration>,
}

/// A clock that moves only when told, and a sleeper that advances it.
///
/// Clones share the same time. Each `sleep` returns at once after advancing
/// both the wall and the monotonic time by the duration, and is recorded
/// (see [`ManualClock::sleeps`]).
#[derive(Debug, Clone)]
pub struct ManualClock {
    state: Arc<Mutex<ManualState>>,
}

impl ManualClock {
    /// A clock that reads `start` (wall) and zero (monotonic).
    pub fn new(start: SystemTime) -> Self {
        ManualClock {
            state: Arc::new(Mutex::new(ManualState {
                wall: start,
                mono: Duration::ZERO,
                sleeps: Vec::new(),
            })),
        }
    }

    /// A clock that starts at `secs` seconds after the Unix epoch.
    pub fn at_unix(secs: u64) -> Self {
        Self::new(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ManualState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves time forward without recording a sleep.
    pub fn advance(&self, by: Duration) {
        let mut s = self.lock();
        s.wall += by;
        s.mono += by;
    }

    /// Every sleep so far, in order.
    pub fn sleeps(&self) -> Vec<Duration> {
        self.lock().sleeps.clone()
    }

    /// The sum of every sleep so far.
    pub fn slept(&self) -> Duration {
        self.lock().sleeps.iter().sum()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        self.lock().wall
    }

    fn monotonic(&self) -> Duration {
        self.lock().mono
    }
}

impl Sleeper for ManualClock {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        {
            let mut s = self.lock();
            s.wall += duration;
            s.mono += duration;
            s.sleeps.push(duration);
        }
        Box::pin(std::future::ready(()))
    }
}

/// Seconds since the Unix epoch of a wall-clock reading (0 before 1970).
pub(crate) fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
