//! The fault plan: scripted failures a test arms before (or during) a run.
//!
//! A [`FaultRule`] says *which* requests it matches (every request, one
//! operation, or a method and path), *which* of those matches it fires on
//! (the `nth`, for `times` consecutive matches) and *what* happens
//! ([`Fault`]). Requests are counted from 1, per rule, in arrival order.
//! Several rules may fire on one request: latencies add up, a concurrent
//! ref move happens before the request is handled, and the first
//! terminal fault (an error status, a secondary rate limit or a dropped
//! connection) replaces the response.

use std::time::Duration;

/// What a fired rule does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this status (a 5xx, usually) and a JSON error body.
    Status(u16),
    /// A secondary rate limit: `status` (403 or 429) with `retry-after`
    /// and GitHub's documented message.
    SecondaryRateLimit {
        /// 403 or 429.
        status: u16,
        /// Seconds in the `retry-after` header.
        retry_after: u64,
    },
    /// Wait this long before handling the request (the request then
    /// proceeds normally unless another fault replaces it).
    Latency(Duration),
    /// Close the connection without writing any response.
    DropConnection,
    /// Before handling a `PATCH .../git/refs/{ref}`, advance that ref to a
    /// new commit on top of its tip, as another writer would; the request's
    /// update is then no longer a fast forward. No effect on other requests.
    ConcurrentRefMove,
}

impl Fault {
    /// True when the fault replaces the response.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Fault::Status(_) | Fault::SecondaryRateLimit { .. } | Fault::DropConnection
        )
    }
}

/// Which requests a rule looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matcher {
    /// Every request.
    Any,
    /// Requests routed to this OpenAPI operation id (`git/update-ref`).
    Operation(String),
    /// Requests with this method and exactly this path (no query).
    Path {
        /// HTTP method, upper case.
        method: String,
        /// Request path, e.g. `/repos/o/r/issues`.
        path: String,
    },
}

/// One scripted fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRule {
    /// Which requests count.
    pub matcher: Matcher,
    /// The first matching request (1-based) the rule fires on.
    pub nth: u64,
    /// How many consecutive matching requests it fires on (`u64::MAX`:
    /// forever).
    pub times: u64,
    /// What happens.
    pub fault: Fault,
}

impl FaultRule {
    /// Fires on the `n`-th request the simulator receives (1-based).
    pub fn nth_request(n: u64, fault: Fault) -> Self {
        FaultRule {
            matcher: Matcher::Any,
            nth: n,
            times: 1,
            fault,
        }
    }

    /// Fires on the first request routed to `operation_id` (see
    /// [`crate::sim::OPERATIONS`]); change with [`FaultRule::nth`].
    pub fn on_operation(operation_id: &str, fault: Fault) -> Self {
        FaultRule {
            matcher: Matcher::Operation(operation_id.to_owned()),
            nth: 1,
            times: 1,
            fault,
        }
    }

    /// Fires on the first request with this method and path.
    pub fn on_path(method: &str, path: &str, fault: Fault) -> Self {
        FaultRule {
            matcher: Matcher::Path {
                method: method.to_ascii_uppercase(),
                path: path.to_owned(),
            },
            nth: 1,
            times: 1,
            fault,
        }
    }

    /// Fires on every request.
    pub fn always(fault: Fault) -> Self {
        FaultRule {
            matcher: Matcher::Any,
            nth: 1,
            times: u64::MAX,
            fault,
        }
    }

    /// Starts firing at the `n`-th matching request (1-based).
    #[must_use]
    pub fn nth(mut self, n: u64) -> Self {
        self.nth = n.max(1);
        self
    }

    /// Fires on `k` consecutive matching requests.
    #[must_use]
    pub fn times(mut self, k: u64) -> Self {
        self.times = k;
        self
    }

    /// Fires on every matching request from the `nth` on.
    #[must_use]
    pub fn forever(mut self) -> Self {
        self.times = u64::MAX;
        self
    }

    fn matches(&self, method: &str, path: &str, operation: Option<&str>) -> bool {
        match &self.matcher {
            Matcher::Any => true,
            Matcher::Operation(op) => operation == Some(op.as_str()),
            Matcher::Path { method: m, path: p } => m == method && p == path,
        }
    }
}

/// A list of rules, built fluently.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// The rules, in the order they were added.
    pub rules: Vec<FaultRule>,
}

impl FaultPlan {
    /// An empty plan.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a rule.
    #[must_use]
    pub fn rule(mut self, rule: FaultRule) -> Self {
        self.rules.push(rule);
        self
    }
}

/// A rule with its match counter.
#[derive(Debug, Clone)]
pub(crate) struct Armed {
    pub rule: FaultRule,
    pub seen: u64,
}

/// What the armed rules decided for one request.
#[derive(Debug, Default, Clone)]
pub(crate) struct Decision {
    pub latency: Duration,
    pub terminal: Option<Fault>,
    pub ref_move: bool,
    pub fired: Vec<String>,
}

/// Counts the request against every rule and collects what fires.
pub(crate) fn decide(
    armed: &mut [Armed],
    method: &str,
    path: &str,
    operation: Option<&str>,
) -> Decision {
    let mut d = Decision::default();
    for a in armed.iter_mut() {
        if !a.rule.matches(method, path, operation) {
            continue;
        }
        a.seen += 1;
        let start = a.rule.nth;
        if a.seen < start || a.seen - start >= a.rule.times {
            continue;
        }
        match &a.rule.fault {
            Fault::Latency(dur) => d.latency += *dur,
            Fault::ConcurrentRefMove => d.ref_move = true,
            f => {
                if d.terminal.is_none() {
                    d.terminal = Some(f.clone());
                }
            }
        }
        d.fired.push(format!("{:?}", a.rule.fault));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(rules: Vec<FaultRule>) -> Vec<Armed> {
        rules
            .into_iter()
            .map(|rule| Armed { rule, seen: 0 })
            .collect()
    }

    #[test]
    fn nth_and_times_select_the_matching_requests() {
        let mut armed = arm(vec![
            FaultRule::on_operation("issues/create", Fault::Status(502))
                .nth(2)
                .times(2),
        ]);
        let fired: Vec<bool> = (0..5)
            .map(|_| {
                decide(&mut armed, "POST", "/x", Some("issues/create"))
                    .terminal
                    .is_some()
            })
            .collect();
        assert_eq!(fired, [false, true, true, false, false]);
        // Other operations are not counted.
        assert!(
            decide(&mut armed, "GET", "/x", Some("issues/get"))
                .terminal
                .is_none()
        );
    }

    #[test]
    fn latencies_add_and_the_first_terminal_fault_wins() {
        let mut armed = arm(vec![
            FaultRule::always(Fault::Latency(Duration::from_millis(5))),
            FaultRule::nth_request(1, Fault::Status(503)),
            FaultRule::nth_request(1, Fault::DropConnection),
            FaultRule::always(Fault::Latency(Duration::from_millis(7))),
        ]);
        let d = decide(&mut armed, "GET", "/", None);
        assert_eq!(d.latency, Duration::from_millis(12));
        assert_eq!(d.terminal, Some(Fault::Status(503)));
        assert_eq!(d.fired.len(), 4);
        let d = decide(&mut armed, "GET", "/", None);
        assert_eq!(d.terminal, None);
    }
}
