//! Settling: polling a condition that a hosted platform makes true
//! asynchronously (a pull request becoming visible, its mergeability being
//! computed), on the run's one clock.
//!
//! The observed settle time can be late by up to one poll interval (plus
//! one poll's own duration): that bound is `poll_quantization_ms`, reported
//! on every settle row and printed on the console. A condition never seen
//! before the timeout has a null `settle_elapsed_ms`; the time spent waiting
//! (`observed_wait_ms`) is always reported.

use std::time::Duration;

use super::clock::RunClock;
use super::row::{Settle, ms};

/// Polls `poll` every `interval_s` until it answers `true` or `timeout_s`
/// has passed; `Err` from a poll counts as "not yet".
pub fn settle(
    clock: &dyn RunClock,
    interval_s: f64,
    timeout_s: f64,
    mut poll: impl FnMut() -> bool,
) -> Settle {
    let start = clock.monotonic();
    let mut polls = 0u32;
    let interval = Duration::from_secs_f64(interval_s.max(0.0));
    let timeout = Duration::from_secs_f64(timeout_s.max(0.0));
    let settled_at = loop {
        polls += 1;
        if poll() {
            break Some(clock.monotonic() - start);
        }
        if clock.monotonic() - start >= timeout {
            break None;
        }
        clock.sleep(interval);
    };
    let waited = clock.monotonic() - start;
    Settle {
        settled: Some(settled_at.is_some()),
        settle_elapsed_ms: settled_at.map(|d| ms(d.as_secs_f64() * 1000.0)),
        observed_wait_ms: ms(waited.as_secs_f64() * 1000.0),
        poll_iterations: polls,
        poll_interval_s: interval_s,
        poll_quantization_ms: ms(interval_s * 1000.0),
    }
}

/// The console line of a settle's resolution bound.
pub fn quantization_line(operation: &str, s: &Settle) -> String {
    format!(
        "[quantization] {operation}: polled every {} s, so its settle time is known to within {} ms",
        s.poll_interval_s, s.poll_quantization_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    #[test]
    fn settles_on_the_third_poll() {
        let c = FakeClock::new();
        let mut n = 0;
        let s = settle(&c, 2.0, 60.0, || {
            n += 1;
            n == 3
        });
        assert_eq!(s.settled, Some(true));
        assert_eq!(s.poll_iterations, 3);
        assert_eq!(s.settle_elapsed_ms, Some(4000.0));
        assert_eq!(s.observed_wait_ms, 4000.0);
        assert_eq!(s.poll_quantization_ms, 2000.0);
    }

    #[test]
    fn a_timeout_has_no_settle_time_but_a_measured_wait() {
        let c = FakeClock::new();
        let s = settle(&c, 1.0, 3.0, || false);
        assert_eq!(s.settled, Some(false));
        assert_eq!(s.settle_elapsed_ms, None);
        assert_eq!(s.poll_iterations, 4);
        assert_eq!(s.observed_wait_ms, 3000.0);
        assert!(quantization_line("x.settle", &s).contains("1000 ms"));
    }
}
