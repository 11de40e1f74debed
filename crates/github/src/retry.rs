//! When to retry a failed request, and how long to wait first.
//!
//! [`decide`] is a pure function of the policy, the attempt number, whether
//! the operation is idempotent, what went wrong, the wall clock and a jitter
//! draw; the client's request loop calls it after every failure and sleeps
//! through the injected [`Sleeper`](crate::Sleeper), adding the wait to its
//! metrics. The rules, in order:
//!
//! 1. A rate limit (403/429 recognised as one) is retried for every
//!    operation, POSTs included: GitHub rejected the request without
//!    acting on it.
//!    - `retry-after` present (a secondary limit): wait exactly that long.
//!    - else `x-ratelimit-remaining: 0` with `x-ratelimit-reset`: wait until
//!      the reset, plus one second for clock granularity.
//!    - else: wait at least [`RetryPolicy::rate_limit_min_wait`] (60 s),
//!      doubling with each attempt, plus jitter.
//! 2. A 5xx or a transport error (no response) is retried only for
//!    idempotent operations (GET, the never-forcing ref update, issue
//!    updates that set absolute values, PUT, DELETE), with exponential
//!    backoff from [`RetryPolicy::server_base_wait`] plus jitter. A POST that
//!    creates something may have taken effect, so it is never retried
//!    automatically: the caller re-checks (a marker search) and decides.
//! 3. Everything else (401, 403 without a rate limit, 404, 409, 422) is
//!    final.
//!
//! A wait longer than [`RetryPolicy::max_wait`], or a failure on the last
//! allowed attempt, gives up and returns the error (for rate limits with
//! `retry_after` and `reset`, so the caller can reschedule).

use std::time::Duration;

/// Whether repeating an operation can change the outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idempotency {
    /// Repeating it is harmless (GET, PUT, DELETE, the ref update, PATCH
    /// with absolute values).
    Idempotent,
    /// Repeating it may create a second object (POST).
    NotIdempotent,
}

/// What went wrong with one attempt, as far as retrying is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A primary or secondary rate limit (403 or 429).
    RateLimited {
        /// `retry-after`, in seconds.
        retry_after: Option<Duration>,
        /// `x-ratelimit-remaining`.
        remaining: Option<u64>,
        /// `x-ratelimit-reset`, Unix seconds.
        reset: Option<u64>,
    },
    /// A 5xx status.
    Server {
        /// The status code.
        status: u16,
    },
    /// No response at all (connection refused or reset, timeout).
    Transport,
    /// Any other failure: never retried.
    Final,
}

/// The retry policy's knobs.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The least wait after a rate limit that gave neither `retry-after` nor
    /// an exhausted primary limit.
    pub rate_limit_min_wait: Duration,
    /// The first backoff after a 5xx or a transport error.
    pub server_base_wait: Duration,
    /// The longest backoff after a 5xx or a transport error.
    pub server_max_wait: Duration,
    /// The longest single wait; a longer one gives up instead.
    pub max_wait: Duration,
    /// Jitter added to backoffs, as a fraction of the backoff (0.25: up to
    /// 25% more).
    pub jitter_fraction: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            rate_limit_min_wait: Duration::from_secs(60),
            server_base_wait: Duration::from_secs(1),
            server_max_wait: Duration::from_secs(30),
            max_wait: Duration::from_secs(15 * 60),
            jitter_fraction: 0.25,
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    /// Wait this long, then try again.
    RetryAfter(Duration),
    /// Return the error.
    GiveUp,
}

/// Decides whether to retry after attempt number `attempt` (1-based) failed.
///
/// `now_unix` is the wall clock in Unix seconds (for `x-ratelimit-reset`);
/// `jitter_unit` is a draw from `[0, 1)`.
pub fn decide(
    policy: &RetryPolicy,
    attempt: u32,
    idempotency: Idempotency,
    failure: &Failure,
    now_unix: u64,
    jitter_unit: f64,
) -> RetryDecision {
    if attempt >= policy.max_attempts {
        return RetryDecision::GiveUp;
    }
    let jitter = |d: Duration| benchops::backoff::stretched(d, policy.jitter_fraction, jitter_unit);
    let doubled = |base: Duration| benchops::backoff::doubled(base, attempt, Duration::MAX);
    let wait = match failure {
        Failure::RateLimited {
            retry_after: Some(after),
            ..
        } => *after,
        Failure::RateLimited {
            remaining: Some(0),
            reset: Some(reset),
            ..
        } => Duration::from_secs(reset.saturating_sub(now_unix) + 1),
        Failure::RateLimited { .. } => {
            jitter(doubled(policy.rate_limit_min_wait)).max(policy.rate_limit_min_wait)
        }
        Failure::Server { .. } | Failure::Transport => match idempotency {
            Idempotency::NotIdempotent => return RetryDecision::GiveUp,
            Idempotency::Idempotent => {
                jitter(doubled(policy.server_base_wait).min(policy.server_max_wait))
            }
        },
        Failure::Final => return RetryDecision::GiveUp,
    };
    if wait > policy.max_wait {
        RetryDecision::GiveUp
    } else {
        RetryDecision::RetryAfter(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Idempotency::{Idempotent, NotIdempotent};
    use RetryDecision::{GiveUp, RetryAfter};

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn limited(after: Option<u64>, remaining: Option<u64>, reset: Option<u64>) -> Failure {
        Failure::RateLimited {
            retry_after: after.map(secs),
            remaining,
            reset,
        }
    }

    #[test]
    fn secondary_limit_honours_retry_after_exactly_even_for_posts() {
        let p = RetryPolicy::default();
        let f = limited(Some(7), Some(4000), Some(2_000_000_000));
        assert_eq!(
            decide(&p, 1, NotIdempotent, &f, 1_000, 0.9),
            RetryAfter(secs(7))
        );
        assert_eq!(
            decide(&p, 3, Idempotent, &f, 1_000, 0.0),
            RetryAfter(secs(7))
        );
    }

    #[test]
    fn exhausted_primary_limit_waits_for_the_reset() {
        let p = RetryPolicy::default();
        let f = limited(None, Some(0), Some(1_120));
        assert_eq!(
            decide(&p, 1, NotIdempotent, &f, 1_000, 0.5),
            RetryAfter(secs(121))
        );
        // A reset already in the past still waits a second.
        assert_eq!(
            decide(&p, 1, Idempotent, &f, 5_000, 0.5),
            RetryAfter(secs(1))
        );
        // A reset beyond max_wait gives up (the error carries the reset).
        let far = limited(None, Some(0), Some(1_000 + 3_600));
        assert_eq!(decide(&p, 1, Idempotent, &far, 1_000, 0.5), GiveUp);
    }

    #[test]
    fn other_rate_limits_wait_at_least_a_minute_with_backoff_and_jitter() {
        let p = RetryPolicy::default();
        let f = limited(None, Some(17), Some(9_999));
        assert_eq!(decide(&p, 1, Idempotent, &f, 0, 0.0), RetryAfter(secs(60)));
        assert_eq!(decide(&p, 2, Idempotent, &f, 0, 0.0), RetryAfter(secs(120)));
        assert_eq!(decide(&p, 3, Idempotent, &f, 0, 0.0), RetryAfter(secs(240)));
        assert_eq!(
            decide(&p, 1, Idempotent, &f, 0, 0.5),
            RetryAfter(Duration::from_millis(67_500))
        );
        let no_headers = limited(None, None, None);
        for attempt in 1..p.max_attempts {
            for unit in [0.0, 0.3, 0.999] {
                let decision = decide(&p, attempt, NotIdempotent, &no_headers, 0, unit);
                assert!(
                    matches!(decision, RetryAfter(d) if d >= secs(60)),
                    "attempt {attempt}: {decision:?}"
                );
            }
        }
    }

    #[test]
    fn server_errors_and_transport_retry_only_idempotent_operations() {
        let p = RetryPolicy::default();
        for f in [Failure::Server { status: 502 }, Failure::Transport] {
            assert_eq!(decide(&p, 1, NotIdempotent, &f, 0, 0.0), GiveUp);
            assert_eq!(decide(&p, 1, Idempotent, &f, 0, 0.0), RetryAfter(secs(1)));
            assert_eq!(decide(&p, 2, Idempotent, &f, 0, 0.0), RetryAfter(secs(2)));
            assert_eq!(decide(&p, 4, Idempotent, &f, 0, 0.0), RetryAfter(secs(8)));
        }
        let long = RetryPolicy {
            max_attempts: 50,
            ..RetryPolicy::default()
        };
        assert_eq!(
            decide(&long, 30, Idempotent, &Failure::Transport, 0, 0.0),
            RetryAfter(secs(30)),
            "backoff is capped"
        );
    }

    #[test]
    fn final_failures_and_the_last_attempt_give_up() {
        let p = RetryPolicy::default();
        assert_eq!(decide(&p, 1, Idempotent, &Failure::Final, 0, 0.0), GiveUp);
        let f = limited(Some(1), None, None);
        assert_eq!(decide(&p, p.max_attempts, Idempotent, &f, 0, 0.0), GiveUp);
        assert_eq!(
            decide(&p, p.max_attempts, Idempotent, &Failure::Transport, 0, 0.0),
            GiveUp
        );
    }
}
