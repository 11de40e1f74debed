//! The one exponential backoff: every wait between tries (the handoff's
//! retries, `bench status --watch`, the GitHub client's retries) doubles
//! from a first wait up to a cap, then is stretched by a jitter the caller
//! draws. Randomness is injected, so each schedule is testable.

use std::time::Duration;

/// The `n`-th wait (`n` ≥ 1): `first · 2^(n−1)`, at most `cap`. The
/// doubling stops at 2^20, so a large `n` cannot overflow.
pub fn doubled(first: Duration, n: u32, cap: Duration) -> Duration {
    first
        .saturating_mul(1u32 << n.saturating_sub(1).min(20))
        .min(cap)
}

/// `wait` stretched by jitter: `wait · (1 + fraction · unit)`, with `unit`
/// a draw from `[0, 1]` (clamped) and a negative `fraction` taken as 0.
pub fn stretched(wait: Duration, fraction: f64, unit: f64) -> Duration {
    wait + wait.mul_f64(fraction.max(0.0) * unit.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_to_the_cap_and_never_overflow() {
        let s = Duration::from_secs;
        assert_eq!(doubled(s(1), 1, s(10)), s(1));
        assert_eq!(doubled(s(1), 2, s(10)), s(2));
        assert_eq!(doubled(s(1), 4, s(10)), s(8));
        assert_eq!(doubled(s(1), 5, s(10)), s(10));
        assert_eq!(doubled(s(1), u32::MAX, s(10)), s(10));
        assert_eq!(doubled(s(1), 0, s(10)), s(1));
        assert_eq!(doubled(Duration::MAX, 3, Duration::MAX), Duration::MAX);
    }

    #[test]
    fn jitter_stretches_by_at_most_the_fraction() {
        let s = Duration::from_secs;
        assert_eq!(stretched(s(4), 0.25, 0.0), s(4));
        assert_eq!(stretched(s(4), 0.25, 1.0), s(5));
        assert_eq!(stretched(s(4), 0.25, 7.0), s(5));
        assert_eq!(stretched(s(4), -1.0, 1.0), s(4));
    }
}
