//! The per-key rate limit of `POST /handoff`: one token bucket per signing
//! key, keyed by the key's fingerprint, which the request proved it holds
//! (its signature verifies) before it is counted.
//!
//! A bucket holds at most `burst` requests and refills at
//! `per_minute / 60` a second. The table is bounded: when it reaches
//! [`MAX_KEYS`], buckets that have refilled completely (keys that are
//! quiet) are dropped first, and if none has, the request is refused as if
//! its own bucket were empty, so a flood of fresh keys cannot grow memory.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most keys tracked at once.
pub const MAX_KEYS: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets by key.
#[derive(Debug)]
pub struct KeyLimiter {
    per_second: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl KeyLimiter {
    /// `per_minute` requests a minute on average, `burst` at once.
    pub fn new(per_minute: u32, burst: u32) -> KeyLimiter {
        KeyLimiter {
            per_second: f64::from(per_minute.max(1)) / 60.0,
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn refill(&self, b: Bucket, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        (b.tokens + elapsed * self.per_second).min(self.burst)
    }

    /// Takes one request from `key`'s bucket at `now`, or says how long
    /// until one is available.
    pub fn admit(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !buckets.contains_key(key) && buckets.len() >= MAX_KEYS {
            let burst = self.burst;
            buckets.retain(|_, b| self.refill(*b, now) < burst);
            if buckets.len() >= MAX_KEYS {
                return Err(Duration::from_secs_f64(1.0 / self.per_second));
            }
        }
        let bucket = buckets.entry(key.to_owned()).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        let tokens = self.refill(*bucket, now);
        if tokens >= 1.0 {
            *bucket = Bucket {
                tokens: tokens - 1.0,
                at: now,
            };
            Ok(())
        } else {
            *bucket = Bucket { tokens, at: now };
            Err(Duration::from_secs_f64((1.0 - tokens) / self.per_second))
        }
    }

    /// How many keys are tracked.
    pub fn tracked(&self) -> usize {
        self.buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_refill_rate() {
        let l = KeyLimiter::new(60, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(l.admit("k", t0).is_ok());
        }
        let wait = l.admit("k", t0).expect_err("the burst is spent");
        assert!(
            wait > Duration::from_millis(900) && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        // Another key has its own bucket.
        assert!(l.admit("other", t0).is_ok());
        // One a second comes back.
        assert!(l.admit("k", t0 + Duration::from_millis(1001)).is_ok());
        assert!(l.admit("k", t0 + Duration::from_millis(1002)).is_err());
        // Never more than the burst, however long the pause.
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..3 {
            assert!(l.admit("k", later).is_ok());
        }
        assert!(l.admit("k", later).is_err());
    }

    #[test]
    fn the_table_is_bounded_and_quiet_keys_go_first() {
        let l = KeyLimiter::new(60, 2);
        let t0 = Instant::now();
        for i in 0..MAX_KEYS {
            l.admit(&format!("k{i}"), t0).expect("first request");
        }
        assert_eq!(l.tracked(), MAX_KEYS);
        // Every bucket is still partly spent: a new key is refused.
        assert!(l.admit("fresh", t0).is_err());
        assert_eq!(l.tracked(), MAX_KEYS);
        // Once they have refilled, the quiet keys are dropped to make room.
        let later = t0 + Duration::from_secs(5);
        assert!(l.admit("fresh", later).is_ok());
        assert_eq!(l.tracked(), 1);
    }
}
