//! Logs and metrics.
//!
//! Logs go through `tracing` to standard error, as text or one JSON object
//! a line. No log line carries a payload, a signature or a token: handlers
//! log the delivery id, the event, the outcome and reason codes only.
//!
//! Metrics are Prometheus text from `prometheus-client`, served at
//! `/metrics`:
//! - `benchops_app_deliveries_total{event,outcome}`; `event` is one of the
//!   handled events or `other`, so a sender cannot grow the label set;
//! - `benchops_app_signature_failures_total`;
//! - `benchops_app_queue_depth` (accepted, not yet processed);
//! - `benchops_app_buffered_body_bytes` (request body bytes reserved in
//!   the budget now, [`crate::server`]);
//! - `benchops_app_token_exchanges_total{kind,reason}`;
//! - `benchops_app_handoffs_total{reason}` (`POST /handoff`: `accepted`,
//!   `already-present`, or why it was refused).

use std::sync::atomic::{AtomicI64, AtomicU64};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::config::LogFormat;
use crate::events::HANDLED_EVENTS;

/// Labels of a delivery.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeliveryLabels {
    /// The event, or `other`.
    pub event: &'static str,
    /// accepted, duplicate, ignored, unauthorized, too_large, bad_request,
    /// busy, timeout, error.
    pub outcome: &'static str,
}

/// Labels of a token decision.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TokenLabels {
    /// `exchange` or `revoke`.
    pub kind: &'static str,
    /// The reason code.
    pub reason: &'static str,
}

/// Labels of a handoff answer.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HandoffLabels {
    /// The status or reason code.
    pub reason: &'static str,
}

/// The server's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    deliveries: Family<DeliveryLabels, Counter>,
    signature_failures: Counter,
    queue_depth: Gauge<i64, AtomicI64>,
    buffered_body_bytes: Gauge<i64, AtomicI64>,
    tokens: Family<TokenLabels, Counter<u64, AtomicU64>>,
    handoffs: Family<HandoffLabels, Counter<u64, AtomicU64>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry with every metric at zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("benchops_app");
        let deliveries = Family::<DeliveryLabels, Counter>::default();
        let signature_failures = Counter::default();
        let queue_depth = Gauge::<i64, AtomicI64>::default();
        let buffered_body_bytes = Gauge::<i64, AtomicI64>::default();
        let tokens = Family::<TokenLabels, Counter>::default();
        let handoffs = Family::<HandoffLabels, Counter>::default();
        registry.register(
            "deliveries",
            "Webhook deliveries by event and outcome",
            deliveries.clone(),
        );
        registry.register(
            "signature_failures",
            "Webhook deliveries refused for a missing or bad signature",
            signature_failures.clone(),
        );
        registry.register(
            "queue_depth",
            "Deliveries accepted and not yet processed",
            queue_depth.clone(),
        );
        registry.register(
            "buffered_body_bytes",
            "Request body bytes reserved in the budget now",
            buffered_body_bytes.clone(),
        );
        registry.register(
            "token_exchanges",
            "Token exchanges and revocations by reason code",
            tokens.clone(),
        );
        registry.register(
            "handoffs",
            "POST /handoff answers by status or reason code",
            handoffs.clone(),
        );
        Metrics {
            registry,
            handoffs,
            deliveries,
            signature_failures,
            queue_depth,
            buffered_body_bytes,
            tokens,
        }
    }

    /// Counts a delivery.
    pub fn delivery(&self, event: &str, outcome: &'static str) {
        let event = HANDLED_EVENTS
            .iter()
            .find(|e| **e == event)
            .copied()
            .unwrap_or("other");
        self.deliveries
            .get_or_create(&DeliveryLabels { event, outcome })
            .inc();
    }

    /// Counts a signature failure.
    pub fn signature_failure(&self) {
        self.signature_failures.inc();
    }

    /// Sets the queue depth.
    pub fn set_queue_depth(&self, depth: usize) {
        self.queue_depth.set(depth as i64);
    }

    /// Sets the request body bytes reserved.
    pub fn set_buffered_body_bytes(&self, bytes: usize) {
        self.buffered_body_bytes.set(bytes as i64);
    }

    /// Counts a token decision.
    pub fn token(&self, kind: &'static str, reason: &'static str) {
        self.tokens
            .get_or_create(&TokenLabels { kind, reason })
            .inc();
    }

    /// Counts a handoff answer.
    pub fn handoff(&self, reason: &'static str) {
        self.handoffs.get_or_create(&HandoffLabels { reason }).inc();
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Installs the global log subscriber (once; later calls do nothing).
/// `RUST_LOG` filters, `info` by default.
pub fn init_logging(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.with_ansi(false).try_init(),
    };
}

/// A bound on how many lines one kind of event may log per second, so that
/// a flood (of bad signatures, say) cannot flood the log or slow the
/// server with writes. What is held back is counted and reported with the
/// next line let through; the metrics still count every event.
#[derive(Debug)]
pub struct LogLimiter {
    per_second: u32,
    state: std::sync::Mutex<LimiterState>,
}

#[derive(Debug)]
struct LimiterState {
    window: std::time::Instant,
    logged: u32,
    held_back: u64,
}

impl LogLimiter {
    /// At most `per_second` lines a second.
    pub fn new(per_second: u32) -> LogLimiter {
        LogLimiter {
            per_second,
            state: std::sync::Mutex::new(LimiterState {
                window: std::time::Instant::now(),
                logged: 0,
                held_back: 0,
            }),
        }
    }

    /// `Some(n)` when this event may be logged, `n` being how many were
    /// held back since the last line; `None` when it is held back.
    pub fn admit(&self) -> Option<u64> {
        self.admit_at(std::time::Instant::now())
    }

    fn admit_at(&self, now: std::time::Instant) -> Option<u64> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if now.duration_since(s.window) >= std::time::Duration::from_secs(1) {
            s.window = now;
            s.logged = 0;
        }
        if s.logged < self.per_second {
            s.logged += 1;
            Some(std::mem::take(&mut s.held_back))
        } else {
            s.held_back += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_events_are_counted_as_other_and_the_text_names_every_metric() {
        let m = Metrics::new();
        m.delivery("push", "accepted");
        m.delivery("an-event-nobody-sends", "ignored");
        m.signature_failure();
        m.set_queue_depth(3);
        m.token("exchange", "granted");
        let text = m.encode();
        assert!(
            text.contains(r#"benchops_app_deliveries_total{event="push",outcome="accepted"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"benchops_app_deliveries_total{event="other",outcome="ignored"} 1"#),
            "{text}"
        );
        assert!(!text.contains("an-event-nobody-sends"));
        assert!(
            text.contains("benchops_app_signature_failures_total 1"),
            "{text}"
        );
        assert!(text.contains("benchops_app_queue_depth 3"), "{text}");
        assert!(
            text.contains(
                r#"benchops_app_token_exchanges_total{kind="exchange",reason="granted"} 1"#
            ),
            "{text}"
        );
    }

    #[test]
    fn the_log_limiter_holds_back_beyond_its_rate_and_reports_how_many() {
        let l = LogLimiter::new(3);
        let t0 = std::time::Instant::now();
        let first: Vec<Option<u64>> = (0..5).map(|_| l.admit_at(t0)).collect();
        assert_eq!(first, vec![Some(0), Some(0), Some(0), None, None]);
        let t1 = t0 + std::time::Duration::from_millis(1500);
        assert_eq!(
            l.admit_at(t1),
            Some(2),
            "the held-back count comes with the next line"
        );
        assert_eq!(l.admit_at(t1), Some(0));
    }
}
