//! Request metrics, per operation.
//!
//! Every request the client sends is counted under its operation name
//! (`git.update_ref`, `issues.create`, …): requests (retries included),
//! retries, bytes of request and response bodies, every wait the client
//! imposed (retry backoff and pacing, in `waited_ms` and split in
//! `retry_waited_ms` and `pacing_waited_ms`), the last
//! `x-ratelimit-remaining` seen and every `x-github-request-id`. Clones of a
//! client share one recorder; [`GitHubClient::metrics`](crate::GitHubClient::metrics)
//! takes a snapshot. The platform lane and publication receipts read these.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;

/// Counters of one operation (or of all of them, from [`Metrics::total`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OperationMetrics {
    /// Requests sent, retries included.
    pub requests: u64,
    /// Requests that were retries of an earlier attempt.
    pub retries: u64,
    /// Bytes of request bodies sent.
    pub bytes_sent: u64,
    /// Bytes of response bodies received.
    pub bytes_received: u64,
    /// Every wait imposed before a request, in milliseconds (rounded up).
    pub waited_ms: u64,
    /// The part of `waited_ms` spent backing off before retries.
    pub retry_waited_ms: u64,
    /// The part of `waited_ms` spent pacing content-creating requests.
    pub pacing_waited_ms: u64,
    /// The last `x-ratelimit-remaining` seen.
    pub rate_limit_remaining: Option<u64>,
    /// Every `x-github-request-id` seen, in order.
    pub request_ids: Vec<String>,
}

/// A snapshot of a client's metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Metrics {
    /// Counters per operation name.
    pub operations: BTreeMap<String, OperationMetrics>,
    /// The last `x-ratelimit-remaining` seen by any operation.
    pub rate_limit_remaining: Option<u64>,
    /// Every `x-github-request-id` seen by any operation, in order.
    pub request_ids: Vec<String>,
}

impl Metrics {
    /// All operations added up; `rate_limit_remaining` is the last one seen
    /// and request ids are in the order they arrived.
    pub fn total(&self) -> OperationMetrics {
        let mut t = OperationMetrics {
            rate_limit_remaining: self.rate_limit_remaining,
            request_ids: self.request_ids.clone(),
            ..OperationMetrics::default()
        };
        for m in self.operations.values() {
            t.requests += m.requests;
            t.retries += m.retries;
            t.bytes_sent += m.bytes_sent;
            t.bytes_received += m.bytes_received;
            t.waited_ms += m.waited_ms;
            t.retry_waited_ms += m.retry_waited_ms;
            t.pacing_waited_ms += m.pacing_waited_ms;
        }
        t
    }

    /// The counters of one operation, if it sent anything.
    pub fn operation(&self, name: &str) -> Option<&OperationMetrics> {
        self.operations.get(name)
    }
}

/// Which kind of wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    Retry,
    Pacing,
}

/// The shared recorder behind a client.
#[derive(Debug, Default)]
pub(crate) struct Recorder(Mutex<Metrics>);

fn ms_rounded_up(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

impl Recorder {
    fn with<R>(&self, f: impl FnOnce(&mut Metrics) -> R) -> R {
        let mut m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut m)
    }

    pub(crate) fn snapshot(&self) -> Metrics {
        self.with(|m| m.clone())
    }

    pub(crate) fn take(&self) -> Metrics {
        self.with(std::mem::take)
    }

    /// One request went out (`bytes_sent` of body); `response` is what came
    /// back, if anything: body length, rate-limit remaining, request id.
    pub(crate) fn request(
        &self,
        op: &str,
        retry: bool,
        bytes_sent: u64,
        response: Option<(u64, Option<u64>, Option<String>)>,
    ) {
        self.with(|m| {
            let e = m.operations.entry(op.to_owned()).or_default();
            e.requests += 1;
            e.retries += u64::from(retry);
            e.bytes_sent += bytes_sent;
            if let Some((received, remaining, request_id)) = response {
                e.bytes_received += received;
                if let Some(id) = request_id {
                    e.request_ids.push(id.clone());
                    m.request_ids.push(id);
                }
                if remaining.is_some() {
                    e.rate_limit_remaining = remaining;
                    m.rate_limit_remaining = remaining;
                }
            }
        });
    }

    /// A wait the client imposed before a request of `op`.
    pub(crate) fn wait(&self, op: &str, kind: Wait, d: Duration) {
        if d.is_zero() {
            return;
        }
        let ms = ms_rounded_up(d);
        self.with(|m| {
            let e = m.operations.entry(op.to_owned()).or_default();
            e.waited_ms += ms;
            match kind {
                Wait::Retry => e.retry_waited_ms += ms,
                Wait::Pacing => e.pacing_waited_ms += ms,
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_add_up_and_waits_round_up() {
        let r = Recorder::default();
        r.request("a", false, 10, Some((100, Some(4999), Some("ID1".into()))));
        r.request("a", true, 10, None);
        r.request("b", false, 0, Some((5, Some(4998), Some("ID2".into()))));
        r.request("a", false, 0, Some((0, None, Some("ID3".into()))));
        r.wait("a", Wait::Retry, Duration::from_micros(1));
        r.wait("b", Wait::Pacing, Duration::from_secs(2));
        let m = r.snapshot();
        let t = m.total();
        assert_eq!(t.requests, 4);
        assert_eq!(t.retries, 1);
        assert_eq!(t.bytes_sent, 20);
        assert_eq!(t.bytes_received, 105);
        assert_eq!(t.waited_ms, 2001);
        assert_eq!(t.retry_waited_ms, 1);
        assert_eq!(t.pacing_waited_ms, 2000);
        assert_eq!(t.rate_limit_remaining, Some(4998));
        assert_eq!(
            m.operation("a").and_then(|a| a.rate_limit_remaining),
            Some(4999)
        );
        assert_eq!(t.request_ids, ["ID1", "ID2", "ID3"], "in arrival order");
        assert_eq!(
            m.operation("a").map(|a| a.request_ids.clone()),
            Some(vec!["ID1".into(), "ID3".into()])
        );
        assert_eq!(r.take().total().requests, 4);
        assert_eq!(r.snapshot(), Metrics::default());
    }
}
